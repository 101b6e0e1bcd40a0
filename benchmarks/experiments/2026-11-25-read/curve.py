"""The target's forward time for 1..65 tokens (Q=none: float32). Usage: python curve.py"""
import os, time, statistics as st, torch
from specx.runtime import api
M=os.path.expanduser('~/.cache/specx-fixture-models'); T=f'{M}/qwen2.5-coder-1.5b.gguf'
p=api.prepare(T,'none',k=0,quant=os.environ.get('Q','none'))
lm=p.target
print(lm.kernels, lm.weights)
ids=list(range(1000,1200))
lm.reset(); lm.forward(ids[:150])
base=lm.cached
sizes=[1,2,4,8,17,25,33,49,65]
res={n:[] for n in sizes}
for r in range(5):
  for n in sizes:
    t=time.perf_counter(); lm.forward(ids[:n]); res[n].append(time.perf_counter()-t); lm.crop(base)
one=st.median(res[1])
for n in sizes: print(n, round(st.median(res[n])*1e3), round(st.median(res[n])/one,2))
