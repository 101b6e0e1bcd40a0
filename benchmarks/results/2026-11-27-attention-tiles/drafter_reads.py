"""Where the default pair's drafter spends its time per bench prompt: its prompt read, its catch-up reads of copied
tokens (forwards of more than 2 tokens), its one-token steps."""
import time, tomllib, sys, collections
from pathlib import Path
import specx
from specx.drafters import model as dm
from specx.engine.types import Done, Round
M = Path.home()/".cache/specx-fixture-models"
log = []
orig = dm.ModelDrafter._forward
def fwd(self, ids):
    t = time.perf_counter(); out = orig(self, ids); log.append((len(ids), time.perf_counter() - t)); return out
dm.ModelDrafter._forward = fwd
origp = dm.ModelDrafter.prefill
def pre(self, seq, reuse=0):
    log.append(("prefill",)); return origp(self, seq, reuse)
dm.ModelDrafter.prefill = pre
pair = specx.load(str(M/"qwen2.5-coder-1.5b.gguf"), f"{M}/qwen2.5-coder-0.5b.gguf+ngram")
prompts = tomllib.loads(Path("specx/bench/prompts.toml").read_text())["prompt"]
for p in prompts:
    log.clear()
    for e in specx.stream(pair, p["text"], max_tokens=128, draft_policy="auto"):
        if isinstance(e, Done): st = e.stats
    # split: prefill forward = first forward after 'prefill' marker
    pf = 0.0; big = 0.0; nbig = 0; step = 0.0; nstep = 0; seen = False
    for x in log:
        if x[0] == "prefill": seen = True; continue
        n, s = x
        if seen: pf += s; seen = False; continue
        if n > 2: big += s; nbig += n
        else: step += s; nstep += 1
    print(f"{p['category']:<14} {st.new_tokens:4d} tok total {st.total_s:5.2f} prefill {st.prefill_s:5.2f} (drafter {pf:4.2f}) "
          f"catch-up {big:4.2f} s ({nbig} tok) steps {step:4.2f} s ({nstep}) verify {st.verify_s:4.2f}", flush=True)
