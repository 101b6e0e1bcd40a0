"""What read_budget gives a hybrid before each answer (fp16 by default; Q=none for float32), and whether its model sits out.
Usage: SPECX_HOME=/tmp/fresh python budget.py summarisation,chat"""
import os, sys, time, tomllib
from specx.runtime import api
M=os.path.expanduser('~/.cache/specx-fixture-models'); T=f'{M}/qwen2.5-coder-1.5b.gguf'; D=f'{M}/qwen2.5-coder-0.5b.gguf'
prompts={p['category']:p['text'] for p in tomllib.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'data', 'heldout.toml'),'rb'))['prompt']}
hyb=api.prepare(T,D+'+ngram',k=16,quant=os.environ.get('Q','fp16'))
orig=hyb.drafter.sit_out
from specx.runtime import loop
og=loop.Generation._prefill_drafter
def pd(self, seq):
    c=self.policy.cost
    print('  verify_s', {k: round(v*1e3) for k,v in sorted(c.verify_s.items())}, 'step', c.draft_step_s and round(c.draft_step_s*1e3,1),
          'budget (priced before the answer)', self.read_budget, 'rates', [c.rate(k) and round(c.rate(k),2) for k in range(0,5)])
    return og(self, seq)
loop.Generation._prefill_drafter=pd
for cat in sys.argv[1].split(','):
  for r in range(2):
    t=time.perf_counter(); notes=[]
    for ev in api.stream(hyb, prompts[cat], max_tokens=64):
        if getattr(ev,'notice',''): notes.append(ev.notice[:90])
    print(cat, round(time.perf_counter()-t,2), notes, 'read_s', hyb.drafter.model.read_s, 'reading', hyb.drafter.model.reading)
