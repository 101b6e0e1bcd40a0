"""Paired A/B: auto's model-draft cap 16 vs 32 (pair.k toggled), float32, with plain decoding.
Usage: python capab.py code,math,chat 3 16,32"""
import os, sys, time, tomllib, statistics as st
from specx.runtime import api
M=os.path.expanduser('~/.cache/specx-fixture-models'); T=f'{M}/qwen2.5-coder-1.5b.gguf'; D=f'{M}/qwen2.5-coder-0.5b.gguf'
cats=sys.argv[1].split(','); reps=int(sys.argv[2]); caps=[int(c) for c in sys.argv[3].split(',')]
prompts={p['category']:p['text'] for p in tomllib.load(open(sys.argv[4] if len(sys.argv)>4 else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'data', 'heldout.toml'),'rb'))['prompt']}
none=api.prepare(T,'none',k=0,quant=os.environ.get('Q','none')); hyb=api.prepare(T,D+'+ngram',k=16,quant=os.environ.get('Q','none'))
variants=['none']+[f'k{c}' for c in caps]
for cat in cats:
    list(api.stream(none, prompts[cat], max_tokens=8)); list(api.stream(hyb, prompts[cat], max_tokens=8))
res={}
for r in range(reps):
  for i,cat in enumerate(cats):
    order=variants[(r+i)%len(variants):]+variants[:(r+i)%len(variants)]
    for v in order:
        if v!='none': hyb.k=int(v[1:])
        t=time.perf_counter(); n=0
        for ev in api.stream(none if v=='none' else hyb, prompts[cat], max_tokens=48):
            n+=len(getattr(ev,'token_ids',()) or ())
        res.setdefault((cat,v),[]).append(time.perf_counter()-t)
        print(cat, v, r, round(res[(cat,v)][-1],2), n, flush=True)
for cat in cats:
    b=res[(cat,'none')]
    print(cat, {v: round(st.median(x/y for x,y in zip(b,res[(cat,v)])),3) for v in variants[1:]},
          {f'{variants[2]}/{variants[1]}': round(st.median(x/y for x,y in zip(res[(cat,variants[1])],res[(cat,variants[2])])),3)} if len(variants)>2 else '')
