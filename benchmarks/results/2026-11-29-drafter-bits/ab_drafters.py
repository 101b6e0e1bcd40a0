"""The default pair with its own 0.5B drafter against the same pair with a lower-bit copy of that drafter, plain
decoding as the yardstick, the three rotating per prompt, each pair carrying its own costs over the session; after
each answer, the drafting step each pair carries.

    python ab_drafters.py REPEATS PER_CATEGORY LOWBIT_DRAFTER.gguf OUT.json"""
import os, sys, json, statistics, tempfile
os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp(prefix="specx-bits-"))
from pathlib import Path
import specx
from specx.bench import suite
F = Path("~/.cache/specx-fixture-models").expanduser()
reps, per = (int(a) for a in sys.argv[1:3])
low = sys.argv[3]
prompts = suite.calibration(suite.load(str(Path(specx.__file__).parent / "bench" / "prompts.toml")), per)
target = str(F / "qwen2.5-coder-1.5b.gguf")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # benchmarks/: trees.py's answer loop
from trees import run_one

CONFIGS = [("plain", specx.load(target, "none")), ("file", specx.load(target, f"{F / 'qwen2.5-coder-0.5b.gguf'}+ngram")),
           ("low", specx.load(target, f"{low}+ngram"))]
out = []
for rep in range(reps):
    for i, p in enumerate(prompts):
        shift = (rep * len(prompts) + i) % len(CONFIGS)
        for name, m in CONFIGS[shift:] + CONFIGS[:shift]:
            s = run_one(m, p.text, 128, 0, "auto")
            c = m.costs.get(True) if name != "plain" else None
            step = c.draft_step_s * 1e3 if c is not None and c.draft_step_s else None
            out.append({"name": name, "cat": p.category, "rep": rep, "prompt": i, "step_ms": step, **s})
            r = s["rounds"]; n = len(r)
            print(f"{rep} {p.category:<14} {name:<6} {len(s['tokens']) / s['decode_s']:6.2f} tok/s, rounds {n}, "
                  f"acc/round {sum(x[1] for x in r) / n:.2f}, drafted/round {sum(x[0] for x in r) / n:.2f}, "
                  f"plain rounds {sum(1 for x in r if not x[0])}" + (f", step carried {step:.1f} ms" if step else ""),
                  flush=True)
json.dump(out, open(sys.argv[4], "w"))
speed = {(o["name"], o["rep"], o["prompt"]): len(o["tokens"]) / o["decode_s"] for o in out}
same = sum(o["tokens"] == next(q["tokens"] for q in out if q["name"] == "plain" and q["rep"] == o["rep"]
                               and q["prompt"] == o["prompt"]) for o in out if o["name"] != "plain")
print(f"outputs equal to plain decoding: {same}/{sum(o['name'] != 'plain' for o in out)}")
for cat in sorted({p.category for p in prompts}) + ["all"]:
    r = {f"{a}/{b}": [speed[(a, rep, i)] / speed[(b, rep, i)] for rep in range(reps) for i, p in enumerate(prompts)
                      if cat == "all" or p.category == cat]
         for a, b in (("file", "plain"), ("low", "plain"), ("low", "file"))}
    print(cat, {k: (round(statistics.median(v), 3), round(statistics.geometric_mean(v), 3)) for k, v in r.items()})
for name in ("file", "low"):
    rs = [x for o in out if o["name"] == name for x in o["rounds"]]
    steps = [o["step_ms"] for o in out if o["name"] == name and o["step_ms"]]
    print(f"{name}: step carried median {statistics.median(steps):.1f} ms; drafted/round "
          f"{sum(x[0] for x in rs) / len(rs):.2f}, accepted/round {sum(x[1] for x in rs) / len(rs):.2f}, "
          f"accepted/drafted {sum(x[1] for x in rs) / max(1, sum(x[0] for x in rs)):.3f}")
