"""Draft-length policies: how many tokens to draft next round, from what the last rounds showed."""
from __future__ import annotations

from dataclasses import dataclass, field

from .costmodel import CostModel

POLICIES = ("auto", "fixed", "heuristic", "confidence")
HEURISTIC_CAP = 64   # the same bound as -k
WARMUP_ROUNDS = 2    # auto: rounds that draft k before the cost model decides
PROBE_GAP = 16       # auto: plain rounds before drafting is tried again; doubles after a failed probe
PROBE_GAP_MAX = 128


@dataclass
class DraftPolicy:
    """`fixed` keeps k; `heuristic` is +2 after a fully accepted round, −1 otherwise (as transformers
    does, never below 1); `confidence` drafts up to k but the drafter stops once its top probability
    falls below `threshold` (SpecDec++, transformers' assistant_confidence_threshold); `auto` drafts
    with the confidence stop and picks k in 0..k each round from measured costs (costmodel.py):
    k = 0 decodes plainly, and drafting is probed again after PROBE_GAP plain rounds (the gap doubles
    after each probe that does not pay, up to PROBE_GAP_MAX)."""

    name: str = "fixed"
    k_max: int = 4
    threshold: float = 0.4
    current: int = 0
    cost: CostModel = field(default_factory=CostModel)
    notice: str = ""            # set when auto turns drafting off or on; the loop reports and clears it
    off: bool = False
    rounds: int = 0
    plain_rounds: int = 0
    gap: int = PROBE_GAP

    def __post_init__(self):
        if self.name not in POLICIES:
            raise ValueError(f"unknown draft policy {self.name!r}")
        self.current = max(1, self.k_max) if self.name == "heuristic" else self.k_max

    @property
    def min_confidence(self) -> float | None:
        """The drafter's stop threshold (confidence and auto; drafters without scores ignore it)."""
        return self.threshold if self.name in ("confidence", "auto") else None

    def next_k(self) -> int:
        """How many tokens to draft this round (the loop still clamps to the budget and context)."""
        if self.name == "auto" and self.k_max:
            self.current = self._auto_k()
        return self.current

    def update(self, drafted: int, accepted: int, draft_s: float = 0.0, verify_s: float = 0.0) -> None:
        """Learn from the round that just ended."""
        self.rounds += 1
        if self.name == "auto":
            self.cost.observe(drafted, accepted, draft_s, verify_s)
            best = self.cost.best_k(self.k_max) if self.off and drafted else None
            if best:   # a probe that pays
                self.off, self.gap = False, PROBE_GAP
                self.notice = f"speculation on again: {self.cost.explain(best)}"
        if self.name != "heuristic" or drafted == 0:
            return
        self.current = self.current + 2 if accepted == drafted else max(1, self.current - 1)
        self.current = min(self.current, HEURISTIC_CAP)

    def _auto_k(self) -> int:
        if self.rounds < WARMUP_ROUNDS:
            return self.k_max
        if self.cost.verify_time(1) is None:
            return 0                      # one plain round measures what drafting must beat
        if self.off:
            self.plain_rounds += 1
            if self.plain_rounds < self.gap:
                return 0
            self.plain_rounds, self.gap = 0, min(self.gap * 2, PROBE_GAP_MAX)
            return self.k_max             # the probe; update() turns drafting back on if it pays
        best = self.cost.best_k(self.k_max)
        if best == 0:
            self.off, self.plain_rounds = True, 0
            self.notice = f"speculation off: {self.cost.explain(0)}; trying again in {self.gap} tokens"
        return self.k_max if best is None else best
