"""Paired A/B in one process: the refresh change (new) against the old per-size EMA (old: age() = 1)."""
import os, sys, time, tomllib, statistics as st, random
from specx.runtime import api
from specx.runtime.costmodel import CostModel
M=os.path.expanduser('~/.cache/specx-fixture-models'); T=f'{M}/qwen2.5-coder-1.5b.gguf'; D=f'{M}/qwen2.5-coder-0.5b.gguf'
cats=sys.argv[1].split(','); reps=int(sys.argv[2]); heldout=sys.argv[3]
prompts={p['category']:p['text'] for p in tomllib.load(open(heldout,'rb'))['prompt']}
pairs={'none': api.prepare(T,'none',k=0,quant='fp16'), 'hybrid': api.prepare(T,D+'+ngram',k=16,quant='fp16'), 'ngram': api.prepare(T,'ngram',k=16,quant='fp16')}
new_age=CostModel.age
variants=[('none','new'),('hybrid','new'),('hybrid','old'),('ngram','new'),('ngram','old')]
res={}
for _ in range(1):   # warm-up
    for c,v in variants: list(api.stream(pairs[c], prompts[cats[0]], max_tokens=16))
for r in range(reps):
  for i,cat in enumerate(cats):
    order=variants[(r+i)%5:]+variants[:(r+i)%5]
    for c,v in order:
      CostModel.age = new_age if v=='new' else (lambda self, n: 1)
      t=time.perf_counter(); n=0
      for ev in api.stream(pairs[c], prompts[cat], max_tokens=64):
          n+=len(getattr(ev,'tokens',()) or ())
      res.setdefault((cat,c,v),[]).append(time.perf_counter()-t)
  print('rep',r,'done',flush=True)
CostModel.age=new_age
for cat in cats+['overall']:
  def times(c,v): return res[(cat,c,v)] if cat!='overall' else [x for cc in cats for x in res[(cc,c,v)]]
  base=times('none','new')
  row={f'{c}-{v}': round(st.median(b/x for b,x in zip(base,times(c,v))),3) for c,v in variants[1:]}
  row['hybrid new/old']=round(st.median(o/n for o,n in zip(times('hybrid','old'),times('hybrid','new'))),3)
  row['ngram new/old']=round(st.median(o/n for o,n in zip(times('ngram','old'),times('ngram','new'))),3)
  print(f'{cat:14s}', row, flush=True)
