"""The default pair with the fixture 0.5B drafter as shipped (llama.cpp's Q4_K_M, whose 896-wide matrices fall
back to Q5_0) against the same drafter re-quantized by llama.cpp (benchmarks/requant.py) to lower-bit file
types, plain decoding as the yardstick, chains, policy auto, rotating per prompt.

    python ab_drafters.py REPEATS PER_CATEGORY OUT.json DRAFTER.gguf [DRAFTER.gguf ...]"""
import os, sys, json, statistics, tempfile
os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp(prefix="specx-rows-"))
from pathlib import Path
import specx
from specx.bench import suite
F = Path("~/.cache/specx-fixture-models").expanduser()
reps, per, dest, others = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4:]
prompts = suite.calibration(suite.load(str(Path(specx.__file__).parent / "bench" / "prompts.toml")), per)
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # benchmarks/: trees.py's answer loop
from trees import run_one

CONFIGS = [("plain", specx.load(str(F / "qwen2.5-coder-1.5b.gguf"), "none")),
           ("shipped", specx.load(str(F / "qwen2.5-coder-1.5b.gguf"), f"{F / 'qwen2.5-coder-0.5b.gguf'}+ngram"))]
CONFIGS += [(Path(o).stem.rsplit("-", 1)[-1], specx.load(str(F / "qwen2.5-coder-1.5b.gguf"), f"{o}+ngram"))
            for o in others]
out = []
for rep in range(reps):
    for i, p in enumerate(prompts):
        shift = (rep * len(prompts) + i) % len(CONFIGS)
        for name, m in CONFIGS[shift:] + CONFIGS[:shift]:
            s = run_one(m, p.text, 128, 0, "auto")
            out.append({"name": name, "cat": p.category, "rep": rep, "prompt": i, **s})
            r = s["rounds"]; n = len(r)
            print(f"{rep} {p.category:<14} {name:<8} {len(s['tokens']) / s['decode_s']:6.2f} tok/s, rounds {n}, "
                  f"acc/round {sum(x[1] for x in r) / n:.2f}, drafted/round {sum(x[0] for x in r) / n:.2f}", flush=True)
json.dump(out, open(dest, "w"))
speed = {(o["name"], o["rep"], o["prompt"]): len(o["tokens"]) / o["decode_s"] for o in out}
same = sum(o["tokens"] == next(q["tokens"] for q in out if q["name"] == "plain" and q["rep"] == o["rep"]
                               and q["prompt"] == o["prompt"]) for o in out if o["name"] != "plain")
print(f"outputs equal to plain decoding: {same}/{sum(o['name'] != 'plain' for o in out)}")
names = [n for n, _ in CONFIGS[1:]]
for cat in sorted({p.category for p in prompts}) + ["all"]:
    r = {f"{a}/{b}": [speed[(a, rep, i)] / speed[(b, rep, i)] for rep in range(reps) for i, p in enumerate(prompts)
                      if cat == "all" or p.category == cat]
         for a, b in [(n, "plain") for n in names] + [(n, "shipped") for n in names[1:]]}
    print(cat, {k: (round(statistics.median(v), 3), round(statistics.geometric_mean(v), 3)) for k, v in r.items()})
for name in names:
    rs = [x for o in out if o["name"] == name for x in o["rounds"]]
    drafted = [x for x in rs if x[0]]
    print(name, f"accepted/round {sum(x[1] for x in rs) / len(rs):.2f}, drafted/round {sum(x[0] for x in rs) / len(rs):.2f}, "
          f"acceptance {sum(x[1] for x in drafted) / max(1, sum(x[0] for x in drafted)):.3f}, "
          f"draft ms per drafted token {1000 * sum(x[2] for x in drafted) / max(1, sum(x[0] for x in drafted)):.1f}")
