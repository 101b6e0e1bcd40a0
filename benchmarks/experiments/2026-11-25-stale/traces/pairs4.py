"""Paired traces of auto variants (float32, held-out prompts, 48 tokens): hybrid = auto as shipped; h6/h5 =
confidence stop 0.6/0.5 and no trim of model drafts; h4n = 0.4 without trim; h6t = 0.6 with trim.
Usage: python pairs4.py hybrid,h6,none code,chat,summarisation,math,rewrite 3  (reads /tmp/out-r1/heldout.toml)"""
import os, sys, time, tomllib, statistics as st
from specx.runtime import api
from specx.runtime.policy import DraftPolicy
from specx.runtime import costmodel
M=os.path.expanduser('~/.cache/specx-fixture-models'); T=f'{M}/qwen2.5-coder-1.5b.gguf'; D=f'{M}/qwen2.5-coder-0.5b.gguf'
cfgs=sys.argv[1].split(','); cats=sys.argv[2].split(','); reps=int(sys.argv[3]); verbose=os.environ.get('V')
prompts={p['category']:p['text'] for p in tomllib.load(open('/tmp/out-r1/heldout.toml','rb'))['prompt']}
# config: name -> (drafter, threshold, trim model drafts)
spec={'hybrid':(D+'+ngram',0.4,True),'h6':(D+'+ngram',0.6,False),'h6t':(D+'+ngram',0.6,True),'h4n':(D+'+ngram',0.4,False),'h5':(D+'+ngram',0.5,False),'none':('none',0.4,True)}
pairs={}
for c in cfgs:
    d=spec[c][0]; pairs[c]=next((p for cc,p in pairs.items() if spec[cc][0]==d), None) or api.prepare(T, d, k=0 if c=='none' else 16, quant=os.environ.get('Q','none'))
origw=costmodel.CostModel.worth_verifying; TRIM=[True]
costmodel.CostModel.worth_verifying=lambda self,c: origw(self,c) if TRIM[0] else None
orig=DraftPolicy.update; log=[]
def upd(self, drafted, accepted, draft_s=0.0, verify_s=0.0, source='model', made=None, confidences=()):
    log.append((drafted, accepted, round(draft_s*1e3), round(verify_s*1e3), source, made, self.off))
    return orig(self, drafted, accepted, draft_s, verify_s, source, made, confidences)
DraftPolicy.update=upd
res={}
for r in range(reps):
  for i,cat in enumerate(cats):
    order=cfgs[(r+i)%len(cfgs):]+cfgs[:(r+i)%len(cfgs)]
    for c in order:
      log.clear(); TRIM[0]=spec[c][2]; t=time.perf_counter()
      for ev in api.stream(pairs[c], prompts[cat], max_tokens=int(os.environ.get('N','48')), confidence=spec[c][1]): pass
      tot=time.perf_counter()-t
      res.setdefault((cat,c),[]).append(tot)
      print(f'{cat:14s} {c:7s} rep{r} total {tot:.2f} rounds {len(log)}', flush=True)
      if verbose and c!='none':
        print('   ', ' '.join(f"{d}/{a}{'' if s=='model' else ':'+s}{'@'+str(m) if m not in (None,d) else ''}[{v}{'+'+str(ds) if ds>2 else ''}]{'OFF' if off else ''}" for d,a,ds,v,s,m,off in log))
tot={c:[] for c in cfgs}
for cat in cats:
  base=res[(cat,'none')]
  print(cat, {c: round(st.median(b/x for b,x in zip(base,res[(cat,c)])),3) for c in cfgs})
for c in cfgs:
  print('overall', c, round(st.median(sum(res[(cat,'none')][r] for cat in cats)/sum(res[(cat,c)][r] for cat in cats) for r in range(reps)),3))
