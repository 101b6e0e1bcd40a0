"""The default pair (0.5B drafter + copies, auto) against plain decoding, alternating, one prompt per category:
per answer its decode tok/s, rounds, accepted and drafted tokens per round, draft and verify ms per round.

    python rounds.py REPEATS OUT.json"""
import os, sys, time, json, statistics, tempfile
os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp(prefix="specx-z4-"))
from pathlib import Path
import specx
from specx.bench import suite
F = Path("~/.cache/specx-fixture-models").expanduser()
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 2
prompts = suite.calibration(suite.load(str(Path(specx.__file__).parent / "bench" / "prompts.toml")), 1)
pair = specx.load(str(F / "qwen2.5-coder-1.5b.gguf"), f"{F / 'qwen2.5-coder-0.5b.gguf'}+ngram")
plain = specx.load(str(F / "qwen2.5-coder-1.5b.gguf"), "none")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # benchmarks/: trees.py's answer loop
from trees import run_one


def one(p, text):
    t0 = time.perf_counter()
    s = run_one(p, text, 128, 0, "auto")   # chains, the auto policy: what `specx run` does
    return {**s, "total_s": time.perf_counter() - t0}


out = []
for rep in range(reps):
    for i, p in enumerate(prompts):
        order = [("default", pair), ("plain", plain)]
        if (rep + i) % 2: order.reverse()
        for name, m in order:
            s = one(m, p.text)
            out.append({"name": name, "cat": p.category, "rep": rep, **s})
            r = s["rounds"]; n = len(r)
            print(f"{rep} {p.category:<14} {name:<8} {len(s['tokens'])/s['decode_s']:6.2f} tok/s dec, total {s['total_s']:.2f}s, rounds {n}, "
                  f"acc/round {sum(x[1] for x in r)/n:.2f}, drafted/round {sum(x[0] for x in r)/n:.2f}, "
                  f"draft ms {1000*sum(x[2] for x in r)/n:.1f}, verify ms {1000*sum(x[3] for x in r)/n:.1f}", flush=True)
json.dump(out, open(sys.argv[2] if len(sys.argv) > 2 else "/tmp/z4/rounds.json", "w"))
for cat in sorted({o["cat"] for o in out}) + ["all"]:
    rs = []
    for rep in range(reps):
        d = [o for o in out if o["rep"] == rep and (cat == "all" or o["cat"] == cat)]
        for o in d:
            if o["name"] == "default":
                q = next(x for x in d if x["name"] == "plain" and x["cat"] == o["cat"])
                rs.append((len(o["tokens"]) / o["decode_s"]) / (len(q["tokens"]) / q["decode_s"]))
    print(cat, "default/plain decode", round(statistics.median(rs), 3), [round(x, 2) for x in rs])
