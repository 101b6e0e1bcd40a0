"""The default pair with the model drafter's catch-up after copies spliced: where a round finds more than W tokens
the drafter has not read (a long copy, accepted), it reads only their last W and its cache skips the rest (its
positions close up over the gap: RoPE sees the skipped text as never written). Against reading them all (today),
W = 8 and 16, each a pair of its own loaded in one process, every bench prompt (2 per category) x repeats,
alternating (order rotated per prompt); decoding speed, drafting and verifying time, outputs checked equal.
Usage: python splice.py [REPEATS [W ...]] (W: 8 16 unless given)"""
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp())

import specx
from specx.bench import suite
from specx.drafters.model import ModelDrafter

F = os.path.expanduser("~/.cache/specx-fixture-models/")
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
WIDTHS = (0, *(int(w) for w in sys.argv[2:])) if len(sys.argv) > 2 else (0, 8, 16)

_unread, _propose = ModelDrafter._unread, ModelDrafter.propose


def unread(self, seq):
    gap = len(seq) - self.offset - len(self.held) - getattr(self, "splice", 0)
    if getattr(self, "proposing", False) and self.splice and self.held and gap > 0 and not (self.reading and gap + self.splice > self.reading):
        self.offset += gap
        self.spliced = getattr(self, "spliced", 0) + gap
    return _unread(self, seq)


def propose(self, seq, ask):
    self.proposing = True
    try:
        return _propose(self, seq, ask)
    finally:
        self.proposing = False


ModelDrafter._unread, ModelDrafter.propose = unread, propose
pairs = {}
for w in WIDTHS:
    pairs[w] = specx.load(F + "qwen2.5-coder-1.5b.gguf", F + "qwen2.5-coder-0.5b.gguf+ngram")
    pairs[w].drafter.model.splice = w
prompts = suite.calibration(suite.bundled(), 2)
res, outs = {}, {}
for rep in range(reps):
    for i, p in enumerate(prompts):
        order = WIDTHS[(i + rep) % len(WIDTHS):] + WIDTHS[:(i + rep) % len(WIDTHS)]
        for w in order:
            text, done = "", None
            for ev in specx.stream(pairs[w], p.text, max_tokens=128):
                text += getattr(ev, "text", "")
                if hasattr(ev, "stats"):
                    done = ev.stats
            res.setdefault((w, p.category), []).append((done.new_tokens / done.decode_s, done.draft_s, done.verify_s,
                                                         done.drafted, done.accepted, done.rounds))
            outs.setdefault(i, set()).add(text)
        print(f"rep {rep} prompt {i} {p.category} done", flush=True)
print("\noutputs equal across widths:", all(len(v) == 1 for v in outs.values()))
print("tokens spliced over:", {w: getattr(pairs[w].drafter.model, "spliced", 0) for w in WIDTHS})
cats = sorted({p.category for p in prompts})
for w in WIDTHS[1:]:
    cells, allr = [], []
    for c in cats:
        r = [b[0] / a[0] for a, b in zip(res[(0, c)], res[(w, c)])]
        allr += r
        cells.append(f"{c} {statistics.median(r):.3f}")
    s = sorted(allr)
    print(f"W={w:2d} decoding speed / reading all: " + ", ".join(cells) +
          f"; overall {statistics.median(s):.3f} [{s[len(s) // 4]:.3f}-{s[3 * len(s) // 4]:.3f}] (n={len(s)})")
for w in WIDTHS:
    v = [x for c in cats for x in res[(w, c)]]
    print(f"W={w:2d}: drafting {sum(x[1] for x in v):.1f} s, verifying {sum(x[2] for x in v):.1f} s, "
          f"{sum(x[5] for x in v)} rounds, {sum(x[3] for x in v)} drafted, {sum(x[4] for x in v)} accepted")
