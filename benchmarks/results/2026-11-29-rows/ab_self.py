"""ab.py's comparison for self-speculation: the fixture SmolLM2 with its default drafter (`auto`: self + copies)
and the fixture 1.5B with `--drafter self`, each under the old row prices and the new, against plain decoding;
the shape searched to the end on a warm-up answer first (as self_spec.py does), the three rotating per prompt.

    python ab_self.py NAME DRAFTER REPEATS PER_CATEGORY OUT.json"""
import os, sys, json, statistics, tempfile
os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp(prefix="specx-rows-"))
from pathlib import Path
import specx
from specx.bench import suite
from specx.policy import costmodel
from specx.drafters.self import search_fully
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # benchmarks/
from self_spec import run, self_drafter
from specx.api import prompt_ids
F = Path("~/.cache/specx-fixture-models").expanduser()
name, drafter, reps, per, dest = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
prompts = suite.calibration(suite.load(str(Path(specx.__file__).parent / "bench" / "prompts.toml")), per)
plain, spec = specx.load(str(F / f"{name}.gguf"), "none"), specx.load(str(F / f"{name}.gguf"), drafter)
fitted = costmodel.CostModel.row_prices


def adjacent(self, n):
    times = [self.verify_time(m) for m in range(1, n + 2)]
    return tuple(None if a is None or b is None else max(b - a, 0.0) for a, b in zip(times, times[1:]))


run(spec, prompts[0].text, 128)
warm = prompt_ids(spec.target.tokenizer, prompts[0].text) + run(plain, prompts[0].text, 128)[0]
print(search_fully(self_drafter(spec), warm), flush=True)
CONFIGS = [("plain", plain, None), ("old", spec, adjacent), ("new", spec, fitted)]
out = []
for rep in range(reps):
    for i, p in enumerate(prompts):
        shift = (rep * len(prompts) + i) % len(CONFIGS)
        for label, m, law in CONFIGS[shift:] + CONFIGS[:shift]:
            if law:
                costmodel.CostModel.row_prices = law
            tokens, stats = run(m, p.text, 128)
            out.append({"name": label, "cat": p.category, "rep": rep, "prompt": i, "tokens": tokens,
                        "tok_s": len(tokens) / stats.decode_s, "rounds": stats.rounds, "accepted": stats.accepted,
                        "drafted": stats.drafted})
            print(rep, p.category, label, round(out[-1]["tok_s"], 2), stats.rounds, stats.drafted, stats.accepted,
                  flush=True)
json.dump(out, open(dest, "w"))
speed = {(o["name"], o["rep"], o["prompt"]): o["tok_s"] for o in out}
same = sum(o["tokens"] == next(q["tokens"] for q in out if q["name"] == "plain" and q["rep"] == o["rep"]
                               and q["prompt"] == o["prompt"]) for o in out if o["name"] != "plain")
print(f"outputs equal to plain decoding: {same}/{sum(o['name'] != 'plain' for o in out)}")
for cat in sorted({p.category for p in prompts}) + ["all"]:
    r = {f"{a}/{b}": [speed[(a, rep, i)] / speed[(b, rep, i)] for rep in range(reps) for i, p in enumerate(prompts)
                      if cat == "all" or p.category == cat] for a, b in (("old", "plain"), ("new", "plain"), ("new", "old"))}
    print(cat, {k: (round(statistics.median(v), 3), round(statistics.geometric_mean(v), 3)) for k, v in r.items()})
for label in ("old", "new"):
    d = [o for o in out if o["name"] == label]
    print(label, "accepted per round", round(sum(o["accepted"] for o in d) / sum(o["rounds"] for o in d), 3),
          "drafted per round", round(sum(o["drafted"] for o in d) / sum(o["rounds"] for o in d), 3))
