"""The row prices of 2026-11-29 (a local least-squares fit, CostModel.row_prices) against the old ones (the
difference of two adjacent measured verify times), on the default pair (0.5B drafter + copies, auto), chains
and tree 8, with plain decoding as the yardstick: one process, the five configurations rotating per prompt.

    python ab.py REPEATS PER_CATEGORY OUT.json"""
import os, sys, time, json, statistics, tempfile
os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp(prefix="specx-rows-"))
from pathlib import Path
import specx
from specx.bench import suite
from specx.policy import costmodel
F = Path("~/.cache/specx-fixture-models").expanduser()
reps, per = (int(a) for a in sys.argv[1:3])
prompts = suite.calibration(suite.load(str(Path(specx.__file__).parent / "bench" / "prompts.toml")), per)
pair = specx.load(str(F / "qwen2.5-coder-1.5b.gguf"), f"{F / 'qwen2.5-coder-0.5b.gguf'}+ngram")
plain = specx.load(str(F / "qwen2.5-coder-1.5b.gguf"), "none")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # benchmarks/: trees.py's answer loop
from trees import run_one

fitted = costmodel.CostModel.row_prices


def adjacent(self, n):
    """The old law: a row's price is the difference of the two verify times around it."""
    times = [self.verify_time(m) for m in range(1, n + 2)]
    return tuple(None if a is None or b is None else max(b - a, 0.0) for a, b in zip(times, times[1:]))


CONFIGS = [("plain", plain, 0, None), ("chain-old", pair, 0, adjacent), ("chain-new", pair, 0, fitted),
           ("tree8-old", pair, 8, adjacent), ("tree8-new", pair, 8, fitted)]
out = []
for rep in range(reps):
    for i, p in enumerate(prompts):
        shift = (rep * len(prompts) + i) % len(CONFIGS)
        for name, m, tree, law in CONFIGS[shift:] + CONFIGS[:shift]:
            if law:
                costmodel.CostModel.row_prices = law
            s = run_one(m, p.text, 128, tree, "auto")
            out.append({"name": name, "cat": p.category, "rep": rep, "prompt": i, **s})
            r = s["rounds"]; n = len(r)
            print(f"{rep} {p.category:<14} {name:<10} {len(s['tokens']) / s['decode_s']:6.2f} tok/s, rounds {n}, "
                  f"acc/round {sum(x[1] for x in r) / n:.2f}, drafted/round {sum(x[0] for x in r) / n:.2f}, "
                  f"draft ms {1000 * sum(x[2] for x in r) / n:.1f}, verify ms {1000 * sum(x[3] for x in r) / n:.1f}",
                  flush=True)
json.dump(out, open(sys.argv[3], "w"))
speed = {(o["name"], o["rep"], o["prompt"]): len(o["tokens"]) / o["decode_s"] for o in out}
same = sum(o["tokens"] == next(q["tokens"] for q in out if q["name"] == "plain" and q["rep"] == o["rep"]
                               and q["prompt"] == o["prompt"]) for o in out if o["name"] != "plain")
print(f"outputs equal to plain decoding: {same}/{sum(o['name'] != 'plain' for o in out)}")


def ratios(a, b, cat):
    return [speed[(a, rep, i)] / speed[(b, rep, i)] for rep in range(reps) for i, p in enumerate(prompts)
            if cat == "all" or p.category == cat]


for cat in sorted({p.category for p in prompts}) + ["all"]:
    row = {f"{a}/{b}": round(statistics.median(ratios(a, b, cat)), 3)
           for a, b in (("chain-old", "plain"), ("chain-new", "plain"), ("tree8-old", "plain"), ("tree8-new", "plain"),
                        ("chain-new", "chain-old"), ("tree8-new", "tree8-old"), ("tree8-new", "chain-new"))}
    print(cat, row)
for name in ("chain-old", "chain-new", "tree8-old", "tree8-new"):
    rs = [x for o in out if o["name"] == name for x in o["rounds"]]
    print(name, f"accepted/round {sum(x[1] for x in rs) / len(rs):.2f}, drafted/round {sum(x[0] for x in rs) / len(rs):.2f}, "
          f"draft ms/round {1000 * sum(x[2] for x in rs) / len(rs):.1f}, verify ms/round {1000 * sum(x[3] for x in rs) / len(rs):.1f}")
