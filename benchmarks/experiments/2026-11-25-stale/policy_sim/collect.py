"""Collects what sim.py replays: python collect.py PROMPTS.toml 48 OUT.json (float32 target, plain greedy)."""
# target greedy outputs (fp32 plain) + drafter teacher-forced argmax/confidence per position; costs
import os, sys, time, json, tomllib, statistics as st, torch
from specx.runtime import api
from specx.runtime.types import Round
from specx.runtime.api import prompt_ids
M=os.path.expanduser('~/.cache/specx-fixture-models'); T=f'{M}/qwen2.5-coder-1.5b.gguf'; D=f'{M}/qwen2.5-coder-0.5b.gguf'
src=sys.argv[1]; N=int(sys.argv[2])
ps=tomllib.load(open(src,'rb'))['prompt']
hyb=api.prepare(T, D, k=16, quant='none')
none=api.prepare(T,'none',k=0,quant='none')
tok=none.target.tokenizer; dlm=hyb.drafter.lm
out=[]
for p in ps:
    ids=prompt_ids(tok, p['text']); toks=[]
    for ev in api.stream(none, p['text'], max_tokens=N):
        if isinstance(ev, Round): toks.extend(ev.token_ids)
    dlm.reset()
    with torch.no_grad():
        o=dlm.forward(ids+toks[:-1], last_only=False)
        o=o[0] if o.dim()==3 else o
        lg=o[len(ids)-1:].float()
    pr=torch.softmax(lg,-1); conf,arg=pr.max(-1)
    out.append(dict(name=p.get('name',''), cat=p['category'], out=toks, arg=arg.tolist(), conf=conf.tolist(), prompt=len(ids)))
    m=[a==t for a,t in zip(arg.tolist(),toks)]
    print(p['category'], len(toks), 'match', sum(m)/len(m), flush=True)
json.dump(out, open(sys.argv[3],'w'))
