"""Drafter rows a tree level forwards: this branch's (new nodes only) against what the old re-run would have run
(every node past the shared trunk), on the same trees, the Qwen pair, tree 8, the calibration prompts."""
import sys, time
from pathlib import Path
import specx
from specx.bench import suite
from specx.drafters.model import ModelDrafter
from specx.engine.types import Round

def trunk(parents):
    for i, p in enumerate(parents):
        if p != i - 1:
            return p + 1
    return len(parents)

log = []
orig = ModelDrafter._tree_forward
def spy(self, tokens, parents):
    old = len(tokens) - min(trunk(parents), self.forwarded)
    new = len(tokens) - self.forwarded
    log.append((old, new))
    return orig(self, tokens, parents)
ModelDrafter._tree_forward = spy

F = Path("~/.cache/specx-fixture-models").expanduser()
pair = specx.load(str(F / "qwen2.5-coder-1.5b.gguf"), str(F / "qwen2.5-coder-0.5b.gguf") + "+ngram")
prompts = suite.calibration(suite.load("specx/bench/prompts.toml"), 1)
for p in prompts:
    log.clear(); rounds = 0
    for e in specx.stream(pair, p.text, max_tokens=64, draft_policy="auto", tree=8):
        if isinstance(e, Round) and e.token_ids:
            rounds += 1
    old, new = sum(o for o, _ in log), sum(n for _, n in log)
    print(f"{p.category:<14} rounds {rounds:3d} level forwards {len(log):3d} rows old {old:4d} new {new:4d} "
          f"per round old {old / max(rounds, 1):.2f} new {new / max(rounds, 1):.2f}", flush=True)
