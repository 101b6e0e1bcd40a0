import os, time, statistics as st, torch
from specx.runtime import api
M=os.path.expanduser('~/.cache/specx-fixture-models'); T=f'{M}/qwen2.5-coder-1.5b.gguf'; D=f'{M}/qwen2.5-coder-0.5b.gguf'
p=api.prepare(T,D,k=16,quant='none')
m=p.drafter.lm.model
lins=[(n,mod) for n,mod in m.named_modules() if hasattr(mod,'in_features')]
from collections import defaultdict
tot=defaultdict(list)
x={}
with torch.inference_mode():
  for r in range(9):
    for n,mod in lins:
      key=n.split('.')[-1]
      xi=torch.randn(1,mod.in_features)
      t=time.perf_counter(); mod(xi); tot[(key,r)].append(time.perf_counter()-t)
for key in sorted({k for k,_ in tot}):
  per=[sum(tot[(key,r)]) for r in range(9)]
  print(key, round(st.median(per)*1e3,2),'ms per step')
print('all', round(st.median([sum(sum(tot[(k,r)]) for k in {k for k,_ in tot}) for r in range(9)])*1e3,2))
