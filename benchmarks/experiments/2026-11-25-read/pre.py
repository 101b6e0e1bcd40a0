"""Time the hybrid drafter's prompt pass and the answer's prefill/decode split against the n-gram drafter (float32).
Usage: python pre.py rewrite"""
import os, sys, time, tomllib
from specx.runtime import api
from specx.runtime.types import Done
M=os.path.expanduser('~/.cache/specx-fixture-models'); T=f'{M}/qwen2.5-coder-1.5b.gguf'; D=f'{M}/qwen2.5-coder-0.5b.gguf'
prompts={p['category']:p['text'] for p in tomllib.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'data', 'heldout.toml'),'rb'))['prompt']}
hyb=api.prepare(T,D+'+ngram',k=16,quant='none'); ng=api.prepare(T,'ngram',k=16,quant='none')
m=hyb.drafter.model
orig=m.prefill
def pf(seq, reuse=0):
    t=time.perf_counter(); f=m.lm.forward_s; orig(seq, reuse); print(f'  drafter prefill {len(seq)} tok reading={m.reading} {time.perf_counter()-t:.3f}s fwd {m.lm.forward_s-f:.3f} read_s={m.read_s}')
m.prefill=pf
for r in range(3):
  for name,p in (('hyb',hyb),('ng',ng)):
    t=time.perf_counter()
    for ev in api.stream(p, prompts[sys.argv[1]], max_tokens=48):
        if isinstance(ev, Done): s=ev.stats
    print(name, f'total {time.perf_counter()-t:.2f} prefill_s {s.prefill_s:.2f} decode_s {s.decode_s:.2f} first {s.first_token_s:.2f}', flush=True)
