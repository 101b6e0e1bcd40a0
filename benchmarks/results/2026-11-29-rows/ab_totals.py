"""Whether a forward's whole time should follow the fitted rows too: verify_time(n) for n >= 2 taken as plain
decoding's measured time plus the fitted prices of rows 1..n-1 ("smooth"), against the measured times
interpolated as costmodel.py keeps them ("raw", the row prices fitted in both); the default pair's chains, plain
decoding as the yardstick, rotating per prompt.

    python ab_totals.py REPEATS PER_CATEGORY OUT.json"""
import os, sys, json, statistics, tempfile
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

raw = costmodel.CostModel.verify_time


def smooth(self, n):
    if n == 1 or 1 not in self.verify_s or len(self.verify_s) < 2:
        return raw(self, n)
    key = (self.clock, len(self.verify_s), self.verify_s[1])
    cache = self.__dict__.get("_smooth")
    if cache is None or cache[0] != key or len(cache[1]) < n:
        prices = self.row_prices(max(n, 17))
        totals = [self.verify_s[1]]
        for p in prices:
            totals.append(totals[-1] + p)
        cache = (key, totals)
        self.__dict__["_smooth"] = cache
    return cache[1][n - 1]


CONFIGS = [("plain", plain, None), ("raw", pair, raw), ("smooth", pair, smooth)]
out = []
for rep in range(reps):
    for i, p in enumerate(prompts):
        shift = (rep * len(prompts) + i) % len(CONFIGS)
        for name, m, law in CONFIGS[shift:] + CONFIGS[:shift]:
            if law:
                costmodel.CostModel.verify_time = law
            s = run_one(m, p.text, 128, 0, "auto")
            out.append({"name": name, "cat": p.category, "rep": rep, "prompt": i, **s})
            r = s["rounds"]; n = len(r)
            print(f"{rep} {p.category:<14} {name:<7} {len(s['tokens']) / s['decode_s']:6.2f} tok/s, rounds {n}, "
                  f"acc/round {sum(x[1] for x in r) / n:.2f}, drafted/round {sum(x[0] for x in r) / n:.2f}", flush=True)
json.dump(out, open(sys.argv[3], "w"))
speed = {(o["name"], o["rep"], o["prompt"]): len(o["tokens"]) / o["decode_s"] for o in out}
same = sum(o["tokens"] == next(q["tokens"] for q in out if q["name"] == "plain" and q["rep"] == o["rep"]
                               and q["prompt"] == o["prompt"]) for o in out if o["name"] != "plain")
print(f"outputs equal to plain decoding: {same}/{sum(o['name'] != 'plain' for o in out)}")
for cat in sorted({p.category for p in prompts}) + ["all"]:
    r = {f"{a}/{b}": [speed[(a, rep, i)] / speed[(b, rep, i)] for rep in range(reps) for i, p in enumerate(prompts)
                      if cat == "all" or p.category == cat] for a, b in (("raw", "plain"), ("smooth", "plain"), ("smooth", "raw"))}
    print(cat, {k: (round(statistics.median(v), 3), round(statistics.geometric_mean(v), 3)) for k, v in r.items()})
for name in ("raw", "smooth"):
    rs = [x for o in out if o["name"] == name for x in o["rounds"]]
    print(name, f"accepted/round {sum(x[1] for x in rs) / len(rs):.2f}, drafted/round {sum(x[0] for x in rs) / len(rs):.2f}")
