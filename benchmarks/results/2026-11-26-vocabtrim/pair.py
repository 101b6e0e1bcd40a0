"""Paired speed ratio of two cpu_bars.py configurations (times only): python pair.py bars.json A B"""
import json, sys
from specx.bench.stats import bootstrap_median
d = json.load(open(sys.argv[1])); a, b = sys.argv[2], sys.argv[3]
key = lambda s: (s["category"], s["prompt"], s["rep"])
by = {c: {key(s): s for s in d["samples"] if s["config"] == c} for c in (a, b)}
for tk in ("total_s", "decode_s"):
    rows = []
    for cat in sorted({k[0] for k in by[a]}) + ["overall"]:
        r = [by[b][k][tk] / by[a][k][tk] for k in by[a] if (cat == "overall" or k[0] == cat) and k in by[b]]
        q = bootstrap_median([1 / x for x in r])
        rows.append(f"{cat} {q.median:.3f} [{q.lo:.2f}-{q.hi:.2f}]")
    print(tk, f"{b}/{a} speed:", "; ".join(rows))
