"""Row prices replayed from the verify times an engine run fed the cost model (ticks.py -> ticks.json.gz), by two
laws: the difference of the two adjacent sizes' times (the old law: "adjacent") and a weighted least-squares
slope through the sizes within H tokens of the row (the new law, CostModel.row_prices, H = 3.5), with each size's
time kept and aged as costmodel.py keeps it. Each price is shown against the slope of a line through the
whole run's median times of 2-8 tokens ("truth"); row 1 is 1 -> 2 tokens; 8->9 in ms.

    python prices.py ticks.json.gz"""
import gzip, json, math, statistics, collections, sys
log = json.load(gzip.open(sys.argv[1] if len(sys.argv) > 1 else "ticks.json.gz"))
D, REFRESH = 0.85, 8
def wls(pts):
    sw = sum(w for n, t, w in pts)
    if len(pts) < 2 or sw <= 0: return None
    mn = sum(w * n for n, t, w in pts) / sw; mt = sum(w * t for n, t, w in pts) / sw
    sxx = sum(w * (n - mn) ** 2 for n, t, w in pts)
    if sxx <= 0: return None
    b = sum(w * (n - mn) * (t - mt) for n, t, w in pts) / sxx
    return mt - b * mn, b
import collections, statistics
def price(ema, w, j, H):
    c = j + 0.5
    if H == 0:   # adjacent
        return (ema[j + 1] - ema[j]) if j in ema and j + 1 in ema else None
    pts = [(k, ema[k], w[k]) for k in ema if abs(k - c) <= H]
    if len({p[0] for p in pts}) < 2:
        pts = sorted(((k, ema[k], w[k]) for k in ema), key=lambda p: abs(p[0] - c))[:2]
    L = wls(pts)
    return None if L is None else max(L[1], 0.0)
for mode in ("chain", "tree"):
    seq = [(n, v * 1e3) for m, n, v in log if m == mode]
    by = collections.defaultdict(list)
    for n, v in seq: by[n].append(v)
    med = {n: statistics.median(v) for n, v in by.items()}
    truth = wls([(n, med[n], len(by[n])) for n in med if 2 <= n <= 8])[1]
    print(mode, "truth 2..8 slope %.1f; 1->2 %.1f step 8->9 %.1f" % (truth, med[2]-med[1], med.get(9, 0) - med.get(8, 0)))
    ema, at, w, clock = {}, {}, {}, 0
    res = collections.defaultdict(list)
    for i, (n, v) in enumerate(seq):
        clock += 1
        age = clock - at[n] if n in at else REFRESH
        old = D ** max(age, 1)
        ema[n] = v if n not in ema else old * ema[n] + (1 - old) * v
        w[n] = 1 + (old * w[n] if n in w else 0)
        at[n] = clock
        if i < 30 or 1 not in ema or len(ema) < 2: continue
        for H in (0, 3.5):
            for j in range(1, 9):
                p = price(ema, w, j, H)
                if p is None: continue
                key = f"{'adjacent' if H == 0 else f'H={H}'} row{'1' if j == 1 else ('8->9' if j == 8 else '2..7')}"
                res[key].append(p / truth if j < 8 else p)
    for k, r in sorted(res.items()):
        r = sorted(r); q = lambda p: r[int(p * (len(r) - 1))]
        print(f"  {k:16s} n={len(r):4d} median {q(.5):.2f}  5-95% [{q(.05):.2f}, {q(.95):.2f}]" + ("" if "8->9" in k else f" >2x {sum(x > 2 for x in r) / len(r):.0%}  <0.5x {sum(x < .5 for x in r) / len(r):.0%}"))
