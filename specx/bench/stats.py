"""Medians with percentile-bootstrap confidence intervals: pure functions of lists of numbers."""
from __future__ import annotations

import random
import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Interval:
    """A median and its bootstrap interval at `level` (e.g. 0.9: the 5th and 95th percentiles)."""

    median: float
    lo: float
    hi: float
    n: int

    def as_dict(self, digits: int = 4) -> dict:
        return {"median": round(self.median, digits), "lo": round(self.lo, digits), "hi": round(self.hi, digits),
                "n": self.n}


def percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks; q in [0, 1]."""
    if not sorted_values:
        raise ValueError("percentile of an empty list")
    if not 0 <= q <= 1:
        raise ValueError(f"q must be in [0, 1] (got {q})")
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def bootstrap_median(values: list[float], level: float = 0.9, resamples: int = 2000, seed: int = 0) -> Interval:
    """The median of `values` and a percentile bootstrap interval for it (deterministic for a seed)."""
    if not values:
        raise ValueError("no values to summarise")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1) (got {level})")
    values = [float(v) for v in values]
    rng = random.Random(seed)
    n = len(values)
    medians = sorted(statistics.median(rng.choices(values, k=n)) for _ in range(resamples))
    tail = (1 - level) / 2
    return Interval(statistics.median(values), percentile(medians, tail), percentile(medians, 1 - tail), n)


def paired_ratios(numerators: dict, denominators: dict) -> list[float]:
    """numerator[u] / denominator[u] for every unit u present in both with a positive denominator."""
    return [numerators[u] / denominators[u] for u in numerators if u in denominators and denominators[u] > 0]
