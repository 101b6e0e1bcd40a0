"""Whole forwards of the default pair's models (the 0.5B drafter re-encoded, 1 and 2 rows; the 1.5B target, 1, 2 and 5 rows) with
every call prefetching 2, 8, 16 or 32 KB ahead into L1 (twice that into L2), alternating, medians of 15."""
import time, statistics, torch, specx, os
from specx.cpu import quant
F=os.path.expanduser('~/.cache/specx-fixture-models/')
pair=specx.load(F+'qwen2.5-coder-1.5b.gguf', F+'qwen2.5-coder-0.5b.gguf+ngram')
t=pair.target; d=pair.drafter.model.lm
lib=quant._default()
ids=torch.randint(100,20000,(120,),generator=torch.Generator().manual_seed(0)).tolist()
if d.head is not None: d.head.restart(ids)
d.reset(); d.forward(ids[:100], last_only=True); t.reset(); t.forward(ids[:100], last_only=True)
res={}
ways=(2048,8192,16384,32768)
for rep in range(15):
    for b in ways:
        lib.prefetch(b, True)
        for name, lm, n in (("drafter 1", d, 1), ("drafter 2", d, 2), ("target 1", t, 1), ("target 2", t, 2), ("target 5", t, 5)):
            lm.crop(100); s=time.perf_counter(); lm.forward(ids[100:100+n], last_only=(lm is d)); res.setdefault((name,b),[]).append(time.perf_counter()-s)
lib.prefetch(2048, True)
for name in ("drafter 1","drafter 2","target 1","target 2","target 5"):
    base=statistics.median(res[(name,2048)])
    print(f"{name:10} " + "  ".join(f"{b}: {statistics.median(res[(name,b)])*1e3:6.2f} ms ({statistics.median(res[(name,b)])/base:.3f})" for b in ways))
