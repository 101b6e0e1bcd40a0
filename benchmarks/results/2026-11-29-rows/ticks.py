"""Every verify time the cost model sees, by forward size: chains then tree 8, code+math+chat prompts."""
import os, tempfile, collections, statistics, sys
os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp())
from pathlib import Path
import specx
from specx.bench import suite
from specx.policy import costmodel
F = Path("~/.cache/specx-fixture-models").expanduser()
prompts = suite.calibration(suite.load(str(Path(specx.__file__).parent / "bench" / "prompts.toml")), 1)
pair = specx.load(str(F / "qwen2.5-coder-1.5b.gguf"), f"{F / 'qwen2.5-coder-0.5b.gguf'}+ngram")
log = []
orig = costmodel.CostModel._tick
def tick(self, n, v):
    log.append((MODE, n, v)); return orig(self, n, v)
costmodel.CostModel._tick = tick
for tree in (0, 8, 0, 8):
    MODE = "tree" if tree else "chain"
    for p in prompts:
        for ev in specx.stream(pair, p.text, max_tokens=128, tree=tree):
            pass
import json; json.dump(log, open(sys.argv[1] if len(sys.argv) > 1 else "ticks.json", "w"))
for mode in ("chain", "tree"):
    by = collections.defaultdict(list)
    for m, n, v in log:
        if m == mode: by[n].append(v * 1e3)
    print(mode, {n: (len(v), round(statistics.median(v), 1), round(min(v), 1)) for n, v in sorted(by.items())})
