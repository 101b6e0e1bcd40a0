import time, statistics as st, torch
from specx.runtime import qlinear
torch.manual_seed(0)
shapes=[(896,4864),(4864,896),(896,896),(896,128),(896,151936)]
def tm(f,x,n=30):
  ts=[]
  for _ in range(n):
    t=time.perf_counter(); f(x); ts.append(time.perf_counter()-t)
  return st.median(ts)*1e3
with torch.inference_mode():
 for i,o in shapes:
  lin=torch.nn.Linear(i,o,bias=False); lin.weight.data.normal_(0,0.02)
  row=[]
  for name,cls in (('dyn8',qlinear.DynInt8Linear),('fp16',qlinear.Fp16Linear),('int8',qlinear.Int8Linear),('int4',qlinear.Int4Linear)):
    try: L=cls(lin)
    except Exception as e: row.append(f'{name}: n/a'); continue
    row.append(f'{name} {tm(L,torch.randn(1,i)):.3f}/{tm(L,torch.randn(8,i)):.3f}')
  print((i,o), ' | '.join(row))
