"""The evidence of acceptance the cost model keeps: how a drafter's confidence maps to the chance its token is
accepted (Calibration, frozen as Chances for a round's stops), and the acceptance by draft position of
one source of drafts (Track). Pure bookkeeping: no timing, no torch."""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from .knobs import KNOBS, AutoKnobs

CERTAIN = 0.999       # no measured rate counts as certain: one rejection must still move it


@dataclass
class Calibration:
    """How often the target accepts a token the model drafter gave confidence c, learned per bin of
    c; with no evidence, c itself (a drafter's confidence is a cautious estimate of its acceptance:
    benchmarks/results/2026-11-23-survival)."""

    judged: dict[int, float] = field(default_factory=dict)
    passed: dict[int, float] = field(default_factory=dict)
    knobs: AutoKnobs = field(default=KNOBS, repr=False, compare=False)

    def add(self, confidences: tuple[float, ...], accepted: int) -> None:
        """The judged tokens of a round (drafts 1..accepted+1 at most) and how many were accepted."""
        for i, c in enumerate(confidences):
            b = bisect.bisect_right(self.knobs.confidence_bins, c)
            self.judged[b] = self.judged.get(b, 0.0) + 1
            self.passed[b] = self.passed.get(b, 0.0) + (1 if i < accepted else 0)

    def acceptance(self, c: float) -> float:
        b = bisect.bisect_right(self.knobs.confidence_bins, c)
        return _calibrated(self.passed.get(b, 0.0), self.judged.get(b, 0.0), self.knobs.calibration_prior, c)

    def table(self) -> "Chances":
        """The same estimate as plain numbers, fixed for one draft (what a model drafter is told)."""
        bins = self.knobs.confidence_bins
        return Chances(bins, tuple(self.passed.get(b, 0.0) for b in range(len(bins) + 1)),
                       tuple(self.judged.get(b, 0.0) for b in range(len(bins) + 1)), self.knobs.calibration_prior)


@dataclass(frozen=True)
class Chances:
    """A calibration as plain numbers: per confidence bin the judged tokens and those accepted."""

    bins: tuple[float, ...]
    passed: tuple[float, ...]
    judged: tuple[float, ...]
    prior: float

    def acceptance(self, c: float) -> float:
        b = bisect.bisect_right(self.bins, c)
        return _calibrated(self.passed[b], self.judged[b], self.prior, c)


def _calibrated(passed: float, judged: float, prior: float, c: float) -> float:
    """A bin's acceptance: its judged tokens plus `prior` pseudo-tokens accepted at the confidence itself."""
    return min((passed + prior * c) / (judged + prior), CERTAIN)


@dataclass
class Track:
    """What one kind of draft has shown: decayed counts of accepted tokens, failed rounds, and per
    position j the rounds that judged draft j (`reached`) and accepted it (`passed`)."""

    accepted: float = 0.0
    rejected: float = 0.0
    reached: dict[int, float] = field(default_factory=dict)
    passed: dict[int, float] = field(default_factory=dict)
    tries: int = 0            # rounds that drafted from this source (not decayed)
    prior: float = KNOBS.prior_accept

    def decay(self, weight: float) -> None:
        """Older rounds keep `weight` at each new one (AutoKnobs.decay)."""
        self.accepted, self.rejected = self.accepted * weight, self.rejected * weight
        for counts in (self.reached, self.passed):
            for j in counts:
                counts[j] *= weight

    def add(self, drafted: int, accepted: int) -> None:
        self.tries += 1
        self.accepted += accepted
        self.rejected += 1 if accepted < drafted else 0
        for j in range(1, min(drafted, accepted + 1) + 1):
            self.reached[j] = self.reached.get(j, 0.0) + 1
            if j <= accepted:
                self.passed[j] = self.passed.get(j, 0.0) + 1

    @property
    def acceptance(self) -> float:
        """Probability that the next drafted token is accepted, given the previous ones were."""
        return (self.accepted + self.prior) / (self.accepted + self.rejected + 1)

    def hazards(self, k: int, shrink: float) -> list[float]:
        """h_1 … h_k: each position's measured rate, shrunk towards the one before it by `shrink`
        pseudo-rounds (AutoKnobs.shrink)."""
        out, prior = [], self.acceptance
        for j in range(1, k + 1):
            prior = (self.passed.get(j, 0.0) + shrink * prior) / (self.reached.get(j, 0.0) + shrink)
            out.append(min(prior, CERTAIN))
        return out
