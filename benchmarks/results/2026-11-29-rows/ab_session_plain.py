"""The drafting step as the policy measures it, before this session's two changes and after them, each on its own
loaded default pair (its own carried costs, as one session of answers): before, the drafter's catching up on
tokens it had not seen counted as drafting steps and a kept step moved by 15% a measure; after, the catching up
after plain rounds is left out (Draft.read_s; after copies it stays in) and a step kept long gives way at once
(CostModel._fold_step). Plain decoding as the
yardstick, chains, rotating per prompt.

    python ab_session_plain.py REPEATS PER_CATEGORY OUT.json"""
import os, sys, json, statistics, tempfile
os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp(prefix="specx-rows-"))
from pathlib import Path
import specx
from specx.bench import suite
from specx.engine import loop
from specx.policy import costmodel
F = Path("~/.cache/specx-fixture-models").expanduser()
reps, per = (int(a) for a in sys.argv[1:3])
prompts = suite.calibration(suite.load(str(Path(specx.__file__).parent / "bench" / "prompts.toml")), per)
target, drafter = str(F / "qwen2.5-coder-1.5b.gguf"), f"{F / 'qwen2.5-coder-0.5b.gguf'}+ngram"
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # benchmarks/: trees.py's answer loop
from trees import run_one

learn, fold = loop.Generation._learn, costmodel.CostModel._fold_step


def counted(self, draft, accepted, draft_s, verify_s, nodes):
    return learn(self, draft, accepted, draft_s + (draft.read_s if self.quiet else 0.0), verify_s, nodes)


def ema(self, step):
    d = self.knobs.decay
    self.draft_step_s = step if self.draft_step_s is None else d * self.draft_step_s + (1 - d) * step
    self.step_at = self.clock


CONFIGS = [("plain", specx.load(target, "none"), None), ("before", specx.load(target, drafter), (counted, ema)),
           ("after", specx.load(target, drafter), (learn, fold))]
out = []
for rep in range(reps):
    for i, p in enumerate(prompts):
        shift = (rep * len(prompts) + i) % len(CONFIGS)
        for name, m, how in CONFIGS[shift:] + CONFIGS[:shift]:
            if how:
                loop.Generation._learn, costmodel.CostModel._fold_step = how
            s = run_one(m, p.text, 128, 0, "auto")
            out.append({"name": name, "cat": p.category, "rep": rep, "prompt": i, **s})
            r = s["rounds"]; n = len(r)
            print(f"{rep} {p.category:<14} {name:<6} {len(s['tokens']) / s['decode_s']:6.2f} tok/s, rounds {n}, "
                  f"acc/round {sum(x[1] for x in r) / n:.2f}, drafted/round {sum(x[0] for x in r) / n:.2f}, "
                  f"plain rounds {sum(1 for x in r if not x[0])}", flush=True)
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
    rs = [x for o in out if o["name"] == name for x in o["rounds"]]
    print(name, f"accepted/round {sum(x[1] for x in rs) / len(rs):.2f}, drafted/round {sum(x[0] for x in rs) / len(rs):.2f}, "
          f"plain rounds {sum(1 for x in rs if not x[0]) / len(rs):.2f}")
