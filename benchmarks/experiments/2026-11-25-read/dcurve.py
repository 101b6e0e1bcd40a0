"""The int8dyn drafter's forward time for 1..128 tokens (float32 pair). Usage: python dcurve.py"""
import os, time, statistics as st, torch
from specx.runtime import api
M=os.path.expanduser('~/.cache/specx-fixture-models'); T=f'{M}/qwen2.5-coder-1.5b.gguf'; D=f'{M}/qwen2.5-coder-0.5b.gguf'
p=api.prepare(T,D,k=16,quant='none')
lm=p.drafter.lm
print(lm.kernels, lm.weights)
ids=list(range(1000,1300))
lm.reset(); lm.forward(ids[:150], last_only=True)
base=lm.cached
sizes=[1,2,4,8,16,32,64,128]
res={n:[] for n in sizes}
for r in range(5):
  for n in sizes:
    t=time.perf_counter(); lm.forward(ids[:n], last_only=True); res[n].append(time.perf_counter()-t); lm.crop(base)
one=st.median(res[1])
for n in sizes: print(n, round(st.median(res[n])*1e3,1), round(st.median(res[n])/one,2), round(st.median(res[n])*1e3/n,1),'ms/tok')
