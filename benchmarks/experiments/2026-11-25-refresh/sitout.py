"""float32 summarisation: the hybrid sitting its model out (default) vs reading 64 prompt tokens vs all of them."""
import os, sys, time, tomllib, statistics as st
from specx.runtime import api
M=os.path.expanduser('~/.cache/specx-fixture-models'); T=f'{M}/qwen2.5-coder-1.5b.gguf'; D=f'{M}/qwen2.5-coder-0.5b.gguf'
cat=sys.argv[1]; reps=int(sys.argv[2])
prompts={p['category']:p['text'] for p in tomllib.load(open('/tmp/out-bars/heldout.toml','rb'))['prompt']}
none=api.prepare(T,'none',k=0); hyb=api.prepare(T,D+'+ngram',k=16)
model=hyb.drafter.model; window=model.window
variants=['none','sitout','window64','whole']
res={}
list(api.stream(none, prompts[cat], max_tokens=8)); list(api.stream(hyb, prompts[cat], max_tokens=8))
for r in range(reps):
    for v in variants[r%4:]+variants[:r%4]:
        model.SIT_OUT = 2 if v=='sitout' else 10**6
        model.window = 0 if v=='whole' else window
        t=time.perf_counter(); notes=[]
        for ev in api.stream(none if v=='none' else hyb, prompts[cat], max_tokens=64):
            if getattr(ev,'notice',''): notes.append(ev.notice[:50])
        res.setdefault(v,[]).append(time.perf_counter()-t)
        print(v, r, round(res[v][-1],2), notes, flush=True)
for v in variants[1:]:
    print(v, 'vs none', round(st.median(b/x for b,x in zip(res['none'],res[v])),3))
