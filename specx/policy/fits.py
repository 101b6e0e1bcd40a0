"""The pure arithmetic behind the cost model (costmodel.py): times of unmeasured forward sizes, a row's
price as a weighted least-squares slope, the tokens a round yields from its hazards, a decayed average."""
from __future__ import annotations

import math
from bisect import bisect_left, bisect_right

ROW_WINDOW = 3.5      # a verify row's price is fitted through the measured forwards within this many tokens of
#                       its middle (CostModel.row_prices): up to 8 sizes, enough to average a shared CPU's noise
#                       out, few enough to follow a kink (a q8 forward of 9+ tokens decodes its weights twice)


def between(times: dict[int, float], n: int, known: list[int]) -> float | None:
    """The time of an unmeasured size n from the measured `times` (sizes `known`, in order): linear between
    the sizes around it, along the logarithm of the size beyond the longest (CostModel.verify_time)."""
    if len(known) < 2:
        return None
    if n > known[-1]:
        short, long = known[-2], known[-1]
        per_log = max(times[long] - times[short], 0.0) / math.log(long / short)
        return times[long] + per_log * math.log(n / long)
    lower = max((m for m in known if m < n), default=known[0])
    upper = min(m for m in known if m > n)
    if lower == upper or lower > n:   # below the shortest measured: along its line to the next
        lower, upper = known[0], known[1]
    slope = (times[upper] - times[lower]) / (upper - lower)
    return max(times[lower] + slope * (n - lower), 1e-9)


def slope(points: list[tuple[int, float, float]], known: list[int], middle: float) -> float:
    """The weighted least-squares slope of the measured (size, time, weight) points within ROW_WINDOW of
    `middle` (`known`: their sizes, in order), or of the two nearest where fewer lie there; not below zero
    (CostModel.row_prices)."""
    near = points[bisect_left(known, middle - ROW_WINDOW):bisect_right(known, middle + ROW_WINDOW)]
    if len(near) < 2:
        near = sorted(points, key=lambda p: abs(p[0] - middle))[:2]
    total = sum_n = sum_t = 0.0
    for m, t, w in near:
        total, sum_n, sum_t = total + w, sum_n + w * m, sum_t + w * t
    mean_n, mean_t = sum_n / total, sum_t / total
    spread = rise = 0.0
    for m, t, w in near:
        spread, rise = spread + w * (m - mean_n) ** 2, rise + w * (m - mean_n) * (t - mean_t)
    return max(rise / spread, 0.0)


def tokens_per_round(hazards: list[float]) -> list[float]:
    """E(m) for m = 0..len(hazards): the target's own token plus the drafts accepted before the first
    rejection, 1 + Σ_{j≤m} Π_{i≤j} h_i."""
    totals, survive = [1.0], 1.0
    for h in hazards:
        survive *= h
        totals.append(totals[-1] + survive)
    return totals


def ema(old: float, new: float, decay: float) -> float:
    return decay * old + (1 - decay) * new
