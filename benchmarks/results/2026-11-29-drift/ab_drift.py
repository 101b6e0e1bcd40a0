"""The default pair over a long session, before and after this session's change, each on its own loaded pair (its
own carried costs): before, the model drafter's catching up on tokens it had not seen counted as drafting steps
and a forward size's time stayed until measured again; after, the catching up is left out of the step
(CostModel.observe: after copies it is a round's cost, catchup_s; after plain rounds, the probe's price) and a
size not timed for AutoKnobs.stale_rounds rounds is dropped (CostModel._forget_stale). Plain decoding as the
yardstick, the three rotating per prompt; after each answer the drafting step each pair carries.

    python ab_drift.py REPEATS PER_CATEGORY OUT.json"""
import os, sys, json, statistics, tempfile
os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp(prefix="specx-drift-"))
from pathlib import Path
import specx
from specx.bench import suite
from specx.policy import costmodel
F = Path("~/.cache/specx-fixture-models").expanduser()
reps, per = (int(a) for a in sys.argv[1:3])
prompts = suite.calibration(suite.load(str(Path(specx.__file__).parent / "bench" / "prompts.toml")), per)
target, drafter = str(F / "qwen2.5-coder-1.5b.gguf"), f"{F / 'qwen2.5-coder-0.5b.gguf'}+ngram"
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # benchmarks/: trees.py's answer loop
from trees import run_one

observe, forget = costmodel.CostModel.observe, costmodel.CostModel._forget_stale


def counted(self, drafted, accepted, draft_s, verify_s, source=costmodel.MODEL, made=None, read_s=0.0, resumed=False):
    return observe(self, drafted, accepted, draft_s, verify_s, source, made, 0.0, resumed)


CONFIGS = [("plain", specx.load(target, "none"), None), ("before", specx.load(target, drafter), (counted, lambda self: None)),
           ("after", specx.load(target, drafter), (observe, forget))]
out = []
for rep in range(reps):
    for i, p in enumerate(prompts):
        shift = (rep * len(prompts) + i) % len(CONFIGS)
        for name, m, how in CONFIGS[shift:] + CONFIGS[:shift]:
            if how:
                costmodel.CostModel.observe, costmodel.CostModel._forget_stale = how
            s = run_one(m, p.text, 128, 0, "auto")
            c = m.costs.get(True) if how else None
            step = c.draft_step_s * 1e3 if c is not None and c.draft_step_s else None
            out.append({"name": name, "cat": p.category, "rep": rep, "prompt": i, "step_ms": step, **s})
            r = s["rounds"]; n = len(r)
            print(f"{rep} {p.category:<14} {name:<6} {len(s['tokens']) / s['decode_s']:6.2f} tok/s, rounds {n}, "
                  f"acc/round {sum(x[1] for x in r) / n:.2f}, drafted/round {sum(x[0] for x in r) / n:.2f}, "
                  f"plain rounds {sum(1 for x in r if not x[0])}" + (f", step carried {step:.1f} ms" if step else ""),
                  flush=True)
json.dump(out, open(sys.argv[3], "w"))
speed = {(o["name"], o["rep"], o["prompt"]): len(o["tokens"]) / o["decode_s"] for o in out}
same = sum(o["tokens"] == next(q["tokens"] for q in out if q["name"] == "plain" and q["rep"] == o["rep"]
                               and q["prompt"] == o["prompt"]) for o in out if o["name"] != "plain")
print(f"outputs equal to plain decoding: {same}/{sum(o['name'] != 'plain' for o in out)}")
for cat in sorted({p.category for p in prompts}) + ["all"]:
    r = {f"{a}/{b}": [speed[(a, rep, i)] / speed[(b, rep, i)] for rep in range(reps) for i, p in enumerate(prompts)
                      if cat == "all" or p.category == cat]
         for a, b in (("before", "plain"), ("after", "plain"), ("after", "before"))}
    print(cat, {k: (round(statistics.median(v), 3), round(statistics.geometric_mean(v), 3)) for k, v in r.items()})
for name in ("before", "after"):
    steps = [o["step_ms"] for o in out if o["name"] == name and o["step_ms"]]
    print(f"{name}: step carried, median {statistics.median(steps):.1f} ms, max {max(steps):.1f} ms, "
          f"last {steps[-1]:.1f} ms")
