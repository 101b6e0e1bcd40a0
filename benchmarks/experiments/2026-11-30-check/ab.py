"""A fresh copy checked against the model drafter's first token (HybridDrafter, what specx does) against copies sent
unchecked (the hybrid's propose before the change, bound to the second pair): the default pair loaded twice in one
process, every bench prompt (2 per category) x repeats, the two alternating (order flipped per prompt and repeat);
decoding speed ratio checked / unchecked, with drafting and verifying time, rounds, drafted and accepted tokens;
outputs checked equal. Both sides stop drafts at the answer's end (Ask.eos).
Usage: python ab.py [REPEATS [CATEGORY]] (CATEGORY: only its prompts; the samples go to ab[-CATEGORY].json)"""
import os
import statistics
import sys
import json
import tempfile
import types

os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp())

import specx
from specx.bench import suite
from specx.cpu import quant


def unchecked(self, seq, ask):   # HybridDrafter.propose before the check
    copy = self.lookup.propose(seq, ask)
    evidence = self.lookup.evidence
    self.copied = bool(copy.tokens) and (evidence == "resume" or evidence >= self.MIN_MATCH)
    if self.copied or self.copies_only:
        return copy
    return self._model_drafts(seq, ask)


F = os.path.expanduser("~/.cache/specx-fixture-models/")
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
A, B = "check", "unchecked"
pairs = {name: specx.load(F + "qwen2.5-coder-1.5b.gguf", F + "qwen2.5-coder-0.5b.gguf+ngram") for name in (A, B)}
pairs[B].drafter.propose = types.MethodType(unchecked, pairs[B].drafter)
print(quant._default().describe(detail=True), flush=True)
only = sys.argv[2] if len(sys.argv) > 2 else ""
prompts = [p for p in suite.calibration(suite.bundled(), 2) if p.category == only or not only]
res, outs = {}, {}
for rep in range(reps):
    for i, p in enumerate(prompts):
        for name in ((A, B) if (i + rep) % 2 == 0 else (B, A)):
            text, done = "", None
            for ev in specx.stream(pairs[name], p.text, max_tokens=128):
                text += getattr(ev, "text", "")
                if hasattr(ev, "stats"):
                    done = ev.stats
            res.setdefault((name, p.category), []).append(
                (done.new_tokens / done.decode_s, done.draft_s, done.verify_s, done.rounds, done.drafted, done.accepted,
                 done.total_s))
            outs.setdefault(i, set()).add(text)
    print(f"rep {rep} done", flush=True)
print("\noutputs equal:", all(len(v) == 1 for v in outs.values()))
with open(f"ab{'-' + only if only else ''}.json", "w") as f:
    json.dump({f"{n} {c}": v for (n, c), v in res.items()}, f)
cats = sorted({p.category for p in prompts})
cells, allr = [], []
for c in cats:
    r = [b[0] / a[0] for a, b in zip(res[(B, c)], res[(A, c)])]
    allr += r
    cells.append(f"{c} {statistics.median(r):.3f}")
s = sorted(allr)
print(f"decoding speed {A} / {B}: " + ", ".join(cells) +
      f"; overall {statistics.median(s):.3f} [{s[len(s) // 4]:.3f}-{s[3 * len(s) // 4]:.3f}] (n={len(s)})")
for name in pairs:
    v = [x for c in cats for x in res[(name, c)]]
    print(f"{name:9}: drafting {sum(x[1] for x in v):.1f} s, verifying {sum(x[2] for x in v):.1f} s, "
          f"{sum(x[3] for x in v)} rounds, {sum(x[4] for x in v)} drafted, {sum(x[5] for x in v)} accepted")
