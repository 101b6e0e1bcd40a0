"""A/B of the stale-verify-time pricing (commit 09e263d, since reverted) against the pricing before, fp16 target
weights: python stale_ab.py 3 (needs that commit: it toggles costmodel.STALE_AGE)."""
import os, sys, time, tomllib, statistics as st
from specx.runtime import api, costmodel
M=os.path.expanduser('~/.cache/specx-fixture-models'); T=f'{M}/qwen2.5-coder-1.5b.gguf'; D=f'{M}/qwen2.5-coder-0.5b.gguf'
prompts={p['category']:p['text'] for p in tomllib.load(open('/tmp/out-r1/heldout.toml','rb'))['prompt']}
jobs=[('summarisation',D+'+ngram'),('code','ngram'),('chat','ngram')]
pairs={d: api.prepare(T, d, k=16, quant='fp16') for _,d in jobs}; none=api.prepare(T,'none',k=0,quant='fp16')
SH=costmodel.STALE_AGE; res={}
for r in range(int(sys.argv[1])):
  for cat,d in jobs:
    order=['new','old','none'] if r%2==0 else ['none','old','new']
    for v in order:
      costmodel.STALE_AGE = 10**9 if v=='old' else SH
      t=time.perf_counter()
      for _ in api.stream(none if v=='none' else pairs[d], prompts[cat], max_tokens=64): pass
      res.setdefault((cat,v),[]).append(time.perf_counter()-t)
      print(cat, d[-12:], v, r, round(res[(cat,v)][-1],2), flush=True)
for cat,_ in jobs:
  b=res[(cat,'none')]
  print(cat, {v: round(st.median(x/y for x,y in zip(b,res[(cat,v)])),3) for v in ('new','old')})
