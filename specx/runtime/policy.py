"""Draft-length policies: how many tokens to draft next round, from what the last rounds showed."""
from __future__ import annotations

from dataclasses import dataclass

POLICIES = ("fixed", "heuristic", "confidence")
HEURISTIC_CAP = 64  # the same bound as -k


@dataclass
class DraftPolicy:
    """`fixed` keeps k; `heuristic` is +2 after a fully accepted round, −1 otherwise (as transformers
    does, never below 1); `confidence` drafts up to k but the drafter stops once its top probability
    falls below `threshold` (SpecDec++, transformers' assistant_confidence_threshold)."""

    name: str = "fixed"
    k_max: int = 4
    threshold: float = 0.4
    current: int = 0

    def __post_init__(self):
        if self.name not in POLICIES:
            raise ValueError(f"unknown draft policy {self.name!r}")
        self.current = max(1, self.k_max) if self.name == "heuristic" else self.k_max

    @property
    def min_confidence(self) -> float | None:
        """The drafter's stop threshold, for the confidence policy only."""
        return self.threshold if self.name == "confidence" else None

    def next_k(self) -> int:
        """How many tokens to draft this round (the loop still clamps to the budget and context)."""
        return self.current

    def update(self, drafted: int, accepted: int) -> None:
        """Learn from the round that just ended."""
        if self.name != "heuristic" or drafted == 0:
            return
        self.current = self.current + 2 if accepted == drafted else max(1, self.current - 1)
        self.current = min(self.current, HEURISTIC_CAP)
