"""Offline: chain drafting vs chain + one forked branch, teacher-forced on the target's greedy answers."""
import os, sys, json, time, tomllib, statistics as st, torch
from specx.runtime import api
from specx.runtime.types import Round
M=os.path.expanduser('~/.cache/specx-fixture-models'); T=f'{M}/qwen2.5-coder-1.5b.gguf'; D=f'{M}/qwen2.5-coder-0.5b.gguf'
prompts={p['category']:p['text'] for p in tomllib.load(open('/tmp/out-r1/heldout.toml','rb'))['prompt']}
N=int(os.environ.get('N','64'))
cache='/tmp/d20/answers.json'
data=json.load(open(cache)) if os.path.exists(cache) else {}
if len(data)<len(prompts):
  pair=api.prepare(T,'none',k=0,quant='none')
  for cat,text in prompts.items():
    ids=api.prompt_ids(pair.target.tokenizer,text)
    ans=[t for e in api.stream(pair,text,max_tokens=N) if isinstance(e,Round) for t in e.token_ids]
    data[cat]={'prompt':ids,'answer':ans}; print(cat,len(ids),len(ans),flush=True)
  json.dump(data,open(cache,'w'))
dp=api.prepare(T,D,k=16,quant='none'); dlm=dp.drafter.lm
out={}
for cat,d in data.items():
  dlm.reset(); seq=d['prompt']+d['answer']; P=len(d['prompt'])
  with torch.inference_mode():
    logits=dlm.forward(seq[:-1]).float()
  probs=logits.softmax(-1)[P-1:]            # row j predicts answer[j]
  top=probs.topk(2,-1)
  out[cat]={'ans':d['answer'],'p':top.values.tolist(),'i':top.indices.tolist()}
json.dump(out,open('/tmp/d20/tf.json','w'))
