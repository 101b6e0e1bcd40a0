import os, time, statistics as st, torch
from specx.runtime import api, qlinear
M=os.path.expanduser('~/.cache/specx-fixture-models'); T=f'{M}/qwen2.5-coder-1.5b.gguf'; D=f'{M}/qwen2.5-coder-0.5b.gguf'
p=api.prepare(T,D,k=16,quant='none')
lm=p.drafter.lm; m=lm.model
ids=list(range(1000,1300))
def step():
  lm.reset(); lm.forward(ids[:150], last_only=True); base=lm.cached; ts=[]
  for r in range(21):
    t=time.perf_counter(); lm.forward(ids[:1], last_only=True); ts.append(time.perf_counter()-t); lm.crop(base)
  return round(st.median(ts)*1e3,1)
orig={}
for name in ('down_proj','k_proj','v_proj'):
  pass
print('base', step())
for layer in m.model.layers:
  d=layer.mlp.down_proj; orig[layer]=d
  lin=torch.nn.Linear(d.in_features,d.out_features,bias=False); lin.weight.data=d.dequantized()
  layer.mlp.down_proj=qlinear.Int8Linear(lin)
print('down int8 wo', step())
for layer in m.model.layers:
  d=orig[layer]; lin=torch.nn.Linear(d.in_features,d.out_features,bias=False); lin.weight.data=d.dequantized()
  layer.mlp.down_proj=qlinear.Int4Linear(lin)
print('down int4 wo', step())
for layer in m.model.layers: layer.mlp.down_proj=orig[layer]
print('base again', step())
