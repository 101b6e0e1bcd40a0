"""Replays accept.py's teacher-forced data with 2026-11-26-self-gate/sim.py's `sim` and `bound`:
a draft token costs c of a target step, byte-proportional, c = (the drafter's layer bytes + the trimmed head's) /
(the target's layer bytes + its full head's); a verify of k drafts costs 1 + 0.08·k. python sim.py [accept.json.gz]"""
import gzip, importlib.util, json, statistics, sys
from pathlib import Path

HERE = Path(__file__).parent
D = json.load(gzip.open(sys.argv[1] if len(sys.argv) > 1 else HERE / "accept.json.gz"))
GATE = json.load(gzip.open(HERE.parent / "2026-11-26-self-gate" / "gate.json.gz"))["rows"]
_spec = importlib.util.spec_from_file_location("gate_sim", HERE.parent / "2026-11-26-self-gate" / "sim.py")
GATE_SIM = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(GATE_SIM)
CATEGORIES = ("code", "chat", "summarisation", "math", "rewrite")


def sim(row, c, cont_if, K=8):
    """Always draft; keep drafting (up to K) while cont_if(position, confidences)."""
    return GATE_SIM.sim({"hits": row["hits"], "dconf": row["conf"], "tconf": None}, c, lambda *_: True, cont_if, K)


bound = GATE_SIM.bound


def med(f, rows):
    return statistics.median(f(r) for r in rows)


def line(name, rows, c):
    alpha = sum(sum(r["hits"]) for r in rows) / sum(len(r["hits"]) for r in rows)
    cats = " | ".join(f"{statistics.mean(sum(r['hits']) / len(r['hits']) for r in rows if r['category'] == k):.2f}"
                      for k in CATEGORIES)
    stop = {th: med(lambda r: sim(r, c, lambda j, dc: dc[j] >= th), rows) for th in (0.5, 0.7, 0.8, 0.9, 0.95)}
    best = max(stop, key=stop.get)
    print(f"| {name} | {alpha:.3f} | {cats} | {c:.3f} | {med(lambda r: bound(r, c), rows):.2f}× | "
          f"{stop[0.9]:.2f}× | {stop[best]:.2f}× (< {best}) |")


B = D["bytes"]
full = B["layers"] + B["head"]
print(f"target layers {B['layers'] / 1e6:.0f} MB, full head {B['head'] / 1e6:.0f} MB, trimmed head {B['trimmed head'] / 1e6:.0f} MB")
print("| drafter | α | " + " | ".join(CATEGORIES) + " | c | bound | stop at conf < 0.9 | best stop |")
print("|---" * (6 + len(CATEGORIES)) + "|")
gate = [{**r, "conf": r["dconf"]} for r in GATE]
c_skip = (B["skip layers"] + B["trimmed head"]) / full
line("skip 7 layers (21 of 28), c from bytes", gate, c_skip)
line("skip 7 layers (21 of 28), c = 0.6 as self-gate", gate, 0.6)
for name in (k for k in D if k != "bytes"):
    line(name, D[name], (B[name] + B["trimmed head"]) / full)
    if name in ("Q3_K", "Q2_K"):   # the skip shape's measured cost exceeded its bytes' by 0.08 (README)
        line(f"{name}, c + 0.08", D[name], (B[name] + B["trimmed head"]) / full + 0.08)
for name in (k for k in D if k != "bytes"):
    full_head = sum(sum(r["hits_full"]) for r in D[name]) / sum(len(r["hits"]) for r in D[name])
    print(f"{name}: α over all ids (untrimmed head) {full_head:.3f}")
