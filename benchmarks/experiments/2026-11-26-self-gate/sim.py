"""Replays causal self-draft policies on gate.py's teacher-forced data (python sim.py). `sim` and `bound` are
imported by 2026-11-27-lowbit/sim.py too."""
import gzip, json, statistics
from pathlib import Path
SLOPE = 0.08
def sim(row, c, draft_if, cont_if, K=8):
    h, dc, tc, n = row["hits"], row["dconf"], row["tconf"], len(row["hits"])
    i, cost = 0, 0.0   # i: position of the next token to produce (the round's first draft predicts token i)
    while i < n:
        if not draft_if(i, tc, dc):
            cost += 1; i += 1; continue
        k = 0
        while k < K and i + k < n:
            k += 1
            if not cont_if(i + k - 1, dc): break
        # tokens: accepted prefix + 1
        a = 0
        while a < k and h[i + a]: a += 1
        cost += k * c + 1 + SLOPE * k
        i += a + 1
    return n / cost
def bound(row, c, K=16):
    h, n = row["hits"], len(row["hits"])
    best = [0.0] * (n + 1)
    for i in range(n - 1, -1, -1):
        best[i] = 1 + best[i + 1]
        k = 0
        while k < K and i + k < n - 1 and h[i + k]:
            k += 1
            best[i] = min(best[i], k * c + 1 + SLOPE * k + best[i + k + 1])
    return n / best[0]
def main():
    D = json.load(gzip.open(Path(__file__).with_name("gate.json.gz")))
    for c in (0.6, 0.72):
        print(f"--- draft cost {c}")
        rows = D["rows"]
        res = {"bound": [bound(r, c) for r in rows]}
        for th in (0.0, 0.5, 0.7, 0.8, 0.9):
            res[f"conf>{th}"] = [sim(r, c, lambda i, tc, dc: True, lambda j, dc, th=th: dc[j] >= th) for r in rows]
        for tau in (0.5, 0.7, 0.8, 0.9, 0.95):
            for th in (0.7, 0.8, 0.9):
                res[f"t>{tau} conf>{th}"] = [sim(r, c, lambda i, tc, dc, tau=tau: i > 0 and tc[i - 1] >= tau,
                                                   lambda j, dc, th=th: dc[j] >= th) for r in rows]
        # oracle on first token only: draft iff first draft token will be accepted (upper bound of any gate)
        res["gate=oracle conf>0.8"] = [sim(r, c, lambda i, tc, dc, r=r: r["hits"][i], lambda j, dc: dc[j] >= 0.8) for r in rows]
        # gate on the draft's own first confidence (paying its first token): as conf>th
        for k, v in res.items():
            print(f"{k:24s} median {statistics.median(v):.3f} mean {statistics.mean(v):.3f}  " + " ".join(f"{x:.2f}" for x in v))
    # predictor quality
    allh = [(r["tconf"][i - 1], r["dconf"][i], r["hits"][i]) for r in D["rows"] for i in range(1, len(r["hits"]))]
    for lo, hi in ((0, .5), (.5, .8), (.8, .95), (.95, 1.01)):
        sel = [x for x in allh if lo <= x[0] < hi]
        print(f"target conf prev in [{lo},{hi}): n={len(sel)} acc={sum(x[2] for x in sel)/max(len(sel),1):.2f}")
    for lo, hi in ((0, .5), (.5, .8), (.8, .95), (.95, 1.01)):
        sel = [x for x in allh if lo <= x[1] < hi]
        print(f"draft conf in [{lo},{hi}): n={len(sel)} acc={sum(x[2] for x in sel)/max(len(sel),1):.2f}")


if __name__ == "__main__":
    main()
