"""Round by round, the default pair on the two rewrite prompts (the second of two runs each: the prompt read already):
drafted, accepted, drafting and verifying ms, which tokens came from the draft (D) or the target (t), the text.
Usage: python trace.py [SPLICE] (SPLICE: ModelDrafter.SPLICE for this run; 0: reading every unread token)"""
import os, sys, time
import specx
from specx.bench import suite
F = os.path.expanduser("~/.cache/specx-fixture-models/")
m = specx.load(F + "qwen2.5-coder-1.5b.gguf", F + "qwen2.5-coder-0.5b.gguf+ngram")
if len(sys.argv) > 1:
    m.drafter.model.SPLICE = int(sys.argv[1]) or 1 << 30
ps = suite.calibration(suite.bundled(), 2)
for i in (8, 9):
    p = ps[i]
    for rep in range(2):
        rows = []
        for ev in specx.stream(m, p.text, max_tokens=128):
            if hasattr(ev, "drafted"):
                rows.append(ev)
            if hasattr(ev, "stats"):
                st = ev.stats
        if rep == 1:
            print(f"prompt {i}: {st.new_tokens} tokens {st.rounds} rounds drafted {st.drafted} accepted {st.accepted} "
                  f"prefill {st.prefill_s:.3f} draft {st.draft_s:.3f} verify {st.verify_s:.3f} decode {st.decode_s:.3f}")
            for r in rows:
                src = "".join("D" if f else "t" for f in r.from_draft)
                print(f"  d{r.drafted:2d} a{r.accepted:2d} tree{r.tree} draft {r.draft_s*1e3:6.1f} verify {r.verify_s*1e3:6.1f} {src:18s} {''.join(r.pieces)!r}")
