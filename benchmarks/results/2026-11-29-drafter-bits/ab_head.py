"""The default pair (drafter layers re-encoded to Q4_0) against the same pair with its drafter's VocabTrim head
re-encoded to Q4_0 too (its static rows; the context's extra rows keep Q8_0), plain decoding as the yardstick,
rotating, each pair carrying its own costs. The second pair keeps 32767 rows instead of 32768 so that it is
loaded apart (specx memoises a drafter per file, mode and rows).

    python ab_head.py REPEATS PER_CATEGORY OUT.json"""
import os, sys, json, statistics, tempfile
os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp(prefix="specx-head-"))
from pathlib import Path
import numpy as np
import specx
from specx.bench import suite
from specx.cpu import lowbit, quant
from specx.cpu.qweight import BLOCKS, QWeight
F = Path("~/.cache/specx-fixture-models").expanduser()
reps, per = (int(a) for a in sys.argv[1:3])
prompts = suite.calibration(suite.load(str(Path(specx.__file__).parent / "bench" / "prompts.toml")), per)
target, drafter = str(F / "qwen2.5-coder-1.5b.gguf"), f"{F / 'qwen2.5-coder-0.5b.gguf'}+ngram"
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # benchmarks/: trees.py's answer loop
from trees import run_one


def q4(m):
    rows = np.arange(m.rows)
    return QWeight(BLOCKS["Q4_0"][0], lowbit.quantize_q4_0(quant.embed(m, rows).numpy()), m.rows, m.cols)


head_pair = specx.load(target, drafter, draft_vocab=32767)
head = head_pair.drafter.model.lm.head
print("head rows", head.static.rows, head.static.name, head.static.nbytes / 1e6, "MB ->", end=" ")
head.static = q4(head.static)
print(head.static.name, head.static.nbytes / 1e6, "MB", flush=True)
CONFIGS = [("plain", specx.load(target, "none")), ("q4", specx.load(target, drafter)), ("q4head", head_pair)]
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
                  f"acc/round {sum(x[1] for x in r) / n:.2f}, drafted/round {sum(x[0] for x in r) / n:.2f}"
                  + (f", step carried {step:.1f} ms" if step else ""), flush=True)
json.dump(out, open(sys.argv[3], "w"))
speed = {(o["name"], o["rep"], o["prompt"]): len(o["tokens"]) / o["decode_s"] for o in out}
same = sum(o["tokens"] == next(q["tokens"] for q in out if q["name"] == "plain" and q["rep"] == o["rep"]
                               and q["prompt"] == o["prompt"]) for o in out if o["name"] != "plain")
print(f"outputs equal to plain decoding: {same}/{sum(o['name'] != 'plain' for o in out)}")
for cat in sorted({p.category for p in prompts}) + ["all"]:
    r = {f"{a}/{b}": [speed[(a, rep, i)] / speed[(b, rep, i)] for rep in range(reps) for i, p in enumerate(prompts)
                      if cat == "all" or p.category == cat]
         for a, b in (("q4", "plain"), ("q4head", "plain"), ("q4head", "q4"))}
    print(cat, {k: (round(statistics.median(v), 3), round(statistics.geometric_mean(v), 3)) for k, v in r.items()})
for name in ("q4", "q4head"):
    rs = [x for o in out if o["name"] == name for x in o["rounds"]]
    steps = [o["step_ms"] for o in out if o["name"] == name and o["step_ms"]]
    print(f"{name}: step carried median {statistics.median(steps):.1f} ms; accepted/drafted "
          f"{sum(x[1] for x in rs) / max(1, sum(x[0] for x in rs)):.3f}")
