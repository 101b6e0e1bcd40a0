"""Tokens per second on the replay test's fake clock, per trace: the decisions recorded before this change
(git show HEAD~:tests/data/policy_replay.json > old.json) against the code now.

    python replay_tok_s.py old.json      (from the repository root)"""
import json, sys
sys.path.insert(0, "tests/policy"); sys.path.insert(0, "tests"); sys.path.insert(0, ".")
from replay_traces import RECORD, TRACES, run
old = json.loads(open(sys.argv[1]).read())
tot_o = tot_n = 0
for t in TRACES:
    new = json.loads(json.dumps(run(t)))
    f = lambda ans: sum(r[4] + r[5] for a in ans for r in a["rounds"])
    n = lambda ans: sum(len(a["tokens"]) for a in ans)
    o_s, n_s = f(old[t.name]), f(new)
    tot_o += o_s; tot_n += n_s
    flag = "" if abs(n_s / o_s - 1) < 1e-9 else "  <-- changed"
    print(f"{t.name:42s} {n(old[t.name])/o_s:7.2f} -> {n(new)/n_s:7.2f} tok/s{flag}")
