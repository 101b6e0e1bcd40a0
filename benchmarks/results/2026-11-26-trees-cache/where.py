"""Where a round's drafting goes, chains vs tree 8: drafter forwards and rows per round, and propose time outside them."""
import time
from pathlib import Path
import specx
from specx.bench import suite
from specx.drafters.model import ModelDrafter
from specx.engine.types import Round

F = Path("~/.cache/specx-fixture-models").expanduser()
pair = specx.load(str(F / "qwen2.5-coder-1.5b.gguf"), str(F / "qwen2.5-coder-0.5b.gguf") + "+ngram")
model = pair.drafter.model
lm = model.lm
stat = {"fwd": 0, "rows": 0, "fwd_s": 0.0, "prop": 0, "prop_s": 0.0}
f0 = lm.forward
def fwd(ids, **kw):
    t = time.perf_counter(); out = f0(ids, **kw)
    stat["fwd"] += 1; stat["rows"] += len(ids); stat["fwd_s"] += time.perf_counter() - t
    return out
lm.forward = fwd
p0 = ModelDrafter.propose
def prop(self, seq, ask):
    t = time.perf_counter(); out = p0(self, seq, ask)
    stat["prop"] += 1; stat["prop_s"] += time.perf_counter() - t
    return out
ModelDrafter.propose = prop
prompts = [p for p in suite.calibration(suite.load("specx/bench/prompts.toml"), 1) if p.category in ("chat", "math")]
for p in prompts:
    for tree in (0, 8):
        for k in stat: stat[k] = 0
        rounds, draft_s = 0, 0.0
        for e in specx.stream(pair, p.text, max_tokens=64, draft_policy="auto", tree=tree):
            if isinstance(e, Round) and e.token_ids:
                rounds += 1; draft_s += e.draft_s
        r = max(rounds, 1)
        print(f"{p.category:<6} tree {tree} rounds {rounds:3d} | per round: draft {1000*draft_s/r:5.1f} ms, proposes {stat['prop']/r:.2f}, "
              f"forwards {stat['fwd']/r:.2f}, rows {stat['rows']/r:.2f}, forward ms {1000*stat['fwd_s']/r:5.1f}, "
              f"propose ms {1000*stat['prop_s']/r:5.1f}", flush=True)
