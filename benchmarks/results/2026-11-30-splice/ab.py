"""The model drafter's catch-up spliced (ModelDrafter.SPLICE = 8, what specx does) against reading every unread
token (SPLICE set past any answer's length, as before): the default pair loaded twice in one process, every bench
prompt (2 per category) x repeats, the two alternating (order flipped per prompt and repeat); decoding speed
ratio spliced / all, with drafting and verifying time, rounds, drafted and accepted tokens; outputs checked equal.
Usage: python ab.py [REPEATS [CATEGORY]] (CATEGORY: only its prompts; the samples go to ab[-CATEGORY].json)"""
import os
import statistics
import sys
import json
import tempfile

os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp())

import specx
from specx.bench import suite
from specx.cpu import quant

F = os.path.expanduser("~/.cache/specx-fixture-models/")
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
pairs = {name: specx.load(F + "qwen2.5-coder-1.5b.gguf", F + "qwen2.5-coder-0.5b.gguf+ngram") for name in ("splice", "all")}
pairs["all"].drafter.model.SPLICE = 1 << 30
print(quant._default().describe(detail=True), flush=True)
only = sys.argv[2] if len(sys.argv) > 2 else ""
prompts = [p for p in suite.calibration(suite.bundled(), 2) if p.category == only or not only]
res, outs = {}, {}
for rep in range(reps):
    for i, p in enumerate(prompts):
        for name in (("splice", "all") if (i + rep) % 2 == 0 else ("all", "splice")):
            text, done = "", None
            for ev in specx.stream(pairs[name], p.text, max_tokens=128):
                text += getattr(ev, "text", "")
                if hasattr(ev, "stats"):
                    done = ev.stats
            res.setdefault((name, p.category), []).append(
                (done.new_tokens / done.decode_s, done.draft_s, done.verify_s, done.rounds, done.drafted, done.accepted))
            outs.setdefault(i, set()).add(text)
    print(f"rep {rep} done", flush=True)
print("\noutputs equal:", all(len(v) == 1 for v in outs.values()))
with open(f"ab{'-' + only if only else ''}.json", "w") as f:
    json.dump({f"{n} {c}": v for (n, c), v in res.items()}, f)
cats = sorted({p.category for p in prompts})
cells, allr = [], []
for c in cats:
    r = [b[0] / a[0] for a, b in zip(res[("all", c)], res[("splice", c)])]
    allr += r
    cells.append(f"{c} {statistics.median(r):.3f}")
s = sorted(allr)
print("decoding speed spliced / reading all: " + ", ".join(cells) +
      f"; overall {statistics.median(s):.3f} [{s[len(s) // 4]:.3f}-{s[3 * len(s) // 4]:.3f}] (n={len(s)})")
for name in pairs:
    v = [x for c in cats for x in res[(name, c)]]
    print(f"{name:6}: drafting {sum(x[1] for x in v):.1f} s, verifying {sum(x[2] for x in v):.1f} s, "
          f"{sum(x[3] for x in v)} rounds, {sum(x[4] for x in v)} drafted, {sum(x[5] for x in v)} accepted")
