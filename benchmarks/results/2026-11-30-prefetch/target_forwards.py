"""The 1.5B target's 1- and 5-token forwards with every call prefetching at each distance (L1; L2 twice as far, or off),
alternating, medians (run 1: 9 repeats of seven ways, (2048|1024|4096|8192|16384, True), (4096, False), (0, False); run 2, this
file: 15 repeats of five)."""
import time, statistics, torch, specx, os
from specx.cpu import quant
F=os.path.expanduser('~/.cache/specx-fixture-models/')
lm=specx.load(F+'qwen2.5-coder-1.5b.gguf','none').target
lib=quant._default()
base=lib.prefetch(2048, True); lib.prefetch(*base)
print('default prefetch', base)
ids=torch.randint(100,20000,(110,),generator=torch.Generator().manual_seed(0)).tolist()
lm.reset(); lm.forward(ids[:100], last_only=True)
ways=[(2048,True),(8192,True),(16384,True),(32768,True),(65536,True)]
res={}
for rep in range(15):
    for w in ways:
        lib.prefetch(*w)
        for n in (1,5):
            lm.crop(100); t=time.perf_counter(); lm.forward(ids[100:100+n]); res.setdefault((w,n),[]).append(time.perf_counter()-t)
lib.prefetch(*base)
for w in ways:
    a=statistics.median(res[(w,1)])*1e3; b=statistics.median(res[(w,5)])*1e3
    print(f"L1 {w[0]:5} L2 {str(w[1]):5}: 1-token {a:5.1f} ms  5-token {b:5.1f} ms  ratio {b/a:.2f}")
