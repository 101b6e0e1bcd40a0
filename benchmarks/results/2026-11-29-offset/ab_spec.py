"""Whole runs under the new kernels against an earlier build's .so (X_OFFSET off), in one process: the default
pair (0.5B drafter + copies, policy auto) loaded twice, one per build (each its own policy state), and plain
decoding of the 1.5B under each build as the yardstick; the four configurations rotating per prompt. The build
is swapped where the decoder and the layer loop look it up (quant._state["lib"]).

    python ab_spec.py OLD.so REPEATS PER_CATEGORY OUT.json"""
import os, sys, json, statistics, tempfile
os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp(prefix="specx-offset-"))
from pathlib import Path
import specx
from specx.bench import suite
from specx.cpu import quant, build
F = Path("~/.cache/specx-fixture-models").expanduser()
old_path, reps, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
new = quant._library()
raw = build.load(old_path)
for n in ("spx_matmul", "spx_dequantize_rows", "spx_stream_sum", "spx_build", "spx_set_xspan", "spx_set_prefetch",
          "spx_set_prefetch_l2", "spx_set_amx", "spx_amx_init", "spx_amx_min_rows"):
    f, g = getattr(new.lib, n), getattr(raw, n); g.argtypes, g.restype = f.argtypes, f.restype
old = quant.Library(new.name, new.vnni, raw, Path(old_path), False, new.vbmi)
pf = new.lib.spx_set_prefetch(0); new.lib.spx_set_prefetch(pf); raw.spx_set_prefetch(pf)
raw.spx_set_prefetch_l2(new.lib.spx_set_prefetch_l2(-1))
xs = new.lib.spx_set_xspan(-1); raw.spx_set_xspan(xs)
print(f"prefetch {pf} B, L2 {raw.spx_set_prefetch_l2(-1)}, xspan {xs}", flush=True)
LIBS = {"old": old, "new": new}
prompts = suite.calibration(suite.load(str(Path(specx.__file__).parent / "bench" / "prompts.toml")), per)
target, drafter = str(F / "qwen2.5-coder-1.5b.gguf"), f"{F / 'qwen2.5-coder-0.5b.gguf'}+ngram"
pairs = {"old": specx.load(target, drafter), "new": specx.load(target, drafter)}
plain = specx.load(target, "none")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # benchmarks/: trees.py's answer loop
from trees import run_one

CONFIGS = [("plain-old", plain, "old"), ("plain-new", plain, "new"), ("pair-old", pairs["old"], "old"),
           ("pair-new", pairs["new"], "new")]
out = []
for rep in range(reps):
    for i, p in enumerate(prompts):
        shift = (rep * len(prompts) + i) % len(CONFIGS)
        for name, m, lib in CONFIGS[shift:] + CONFIGS[:shift]:
            quant._state["lib"] = LIBS[lib]
            s = run_one(m, p.text, 128, 0, "auto")
            out.append({"name": name, "cat": p.category, "rep": rep, "prompt": i, **s})
            r = s["rounds"]; n = len(r)
            print(f"{rep} {p.category:<14} {name:<10} {len(s['tokens']) / s['decode_s']:6.2f} tok/s, rounds {n}, "
                  f"acc/round {sum(x[1] for x in r) / n:.2f}, drafted/round {sum(x[0] for x in r) / n:.2f}, "
                  f"draft ms {1000 * sum(x[2] for x in r) / n:.1f}, verify ms {1000 * sum(x[3] for x in r) / n:.1f}",
                  flush=True)
quant._state["lib"] = new
json.dump(out, open(sys.argv[4], "w"))
speed = {(o["name"], o["rep"], o["prompt"]): len(o["tokens"]) / o["decode_s"] for o in out}
ref = {(o["rep"], o["prompt"]): o["tokens"] for o in out if o["name"] == "plain-new"}
same = sum(o["tokens"] == ref[(o["rep"], o["prompt"])] for o in out)
print(f"outputs equal to plain decoding (new): {same}/{len(out)}")


def ratios(a, b, cat):
    return [speed[(a, rep, i)] / speed[(b, rep, i)] for rep in range(reps) for i, p in enumerate(prompts)
            if cat == "all" or p.category == cat]


def q(xs, f):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(f * len(xs)))]


for cat in sorted({p.category for p in prompts}) + ["all"]:
    row = {}
    for a, b in (("plain-new", "plain-old"), ("pair-new", "pair-old"), ("pair-old", "plain-old"), ("pair-new", "plain-new")):
        rs = ratios(a, b, cat)
        row[f"{a}/{b}"] = f"{statistics.median(rs):.3f} [{q(rs, 0.25):.3f}-{q(rs, 0.75):.3f}]"
    print(cat, row)
for name in ("pair-old", "pair-new"):
    rs = [x for o in out if o["name"] == name for x in o["rounds"]]
    drafted = sum(x[0] for x in rs)
    print(name, f"accepted/round {sum(x[1] for x in rs) / len(rs):.2f}, drafted/round {drafted / len(rs):.2f}, "
          f"draft ms/round {1000 * sum(x[2] for x in rs) / len(rs):.1f}, verify ms/round {1000 * sum(x[3] for x in rs) / len(rs):.1f}")
