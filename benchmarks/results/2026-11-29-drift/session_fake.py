"""The drafting step a pair carries over a session of 4 answers, on the replay test's fake clock (the real loop,
drafters and policy; tests/policy/replay_traces.py): a drafter step of 20 ms, 4 ms more per further token a
forward reads, text the drafter mostly gets wrong (drafting goes off and is probed after ever longer plain
stretches). `old`: the catching up counted in the step, as before this change.

    python session_fake.py old|new      (from the repository root)"""
import sys
sys.path.insert(0, "tests/policy"); sys.path.insert(0, "tests"); sys.path.insert(0, ".")
from replay_traces import Trace, run
from specx.policy import costmodel as cm
if sys.argv[1] == "old":
    observe = cm.CostModel.observe

    def counted(self, d, a, ds, vs, source=cm.MODEL, made=None, read_s=0.0, resumed=False):
        return observe(self, d, a, ds, vs, source, made, 0.0, resumed)
    cm.CostModel.observe = counted
for text, drafter, wrong, window in [("prose", "hybrid", 0.7, 8), ("prose", "model", 0.7, 8),
                                     ("prose", "hybrid", 0.7, 0), ("phrases", "hybrid", 0.5, 8)]:
    costs = []
    run(Trace("x", text, drafter, "auto", wrong=wrong, window=window, answers=4, max_tokens=128), costs)
    print(f"{sys.argv[1]} {text} {drafter} wrong {wrong} window {window}: step carried after each answer (ms)",
          [round(c.draft_step_s * 1e3, 1) for c in costs])
