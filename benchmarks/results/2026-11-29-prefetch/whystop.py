"""Why tree 8 stops its spine sooner than a chain: each tree level's stop decision on code and math prompts."""
import os, tempfile, collections
os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp())
from pathlib import Path
import specx
from specx.bench import suite
from specx.drafters import branching
F = Path("~/.cache/specx-fixture-models").expanduser()
prompts = [p for p in suite.calibration(suite.load(str(Path(specx.__file__).parent / "bench" / "prompts.toml")), 2) if p.category in ("code", "math")]
pair = specx.load(str(F / "qwen2.5-coder-1.5b.gguf"), f"{F / 'qwen2.5-coder-0.5b.gguf'}+ngram")
log = []
orig_pays = branching.pays
def pays(chance, rows, nodes, depth, stops):
    r = orig_pays(chance, rows, nodes, depth, stops)
    forward, row = branching._at(stops.level_costs, rows), branching._at(stops.node_costs, nodes + 1)
    log.append(("pays", depth, rows, nodes, round(chance, 3), None if forward is None else round(forward, 3), None if row is None else round(row, 3), stops.floor(depth), r))
    return r
branching.pays = pays
orig_growing = branching.growing
def growing(kept, stops):
    g = orig_growing(kept, stops)
    log.append(("grow", len(kept), len(g), [round(c[4], 2) for c in kept], stops.min_confidence))
    return g
branching.growing = growing
for tree in (8, 0, 8):
    log.clear()
    for p in prompts:
        for ev in specx.stream(pair, p.text, max_tokens=128, tree=tree):
            pass
    if tree:
        c = collections.Counter()
        for e in log:
            if e[0] == "grow" and e[2] == 0: c["no node grows (min_confidence)"] += 1
            if e[0] == "pays" and not e[-1]: c["pays: no"] += 1
            if e[0] == "pays" and e[-1]: c["pays: yes"] += 1
            if e[0] == "grow": c[f"level width {e[1]}"] += 1
        print("tree", tree, dict(c))
        print([e for e in log if e[0] == "pays" and not e[-1]][:12])
        print([e for e in log if e[0] == "grow"][:12])
