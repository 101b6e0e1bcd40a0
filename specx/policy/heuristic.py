"""`heuristic`: k grows after a round accepted whole and shrinks otherwise, as transformers does."""
from __future__ import annotations

from ..state.limits import MAX_K
from .base import Policy


class Heuristic(Policy):
    """+2 after a fully accepted round, −1 otherwise, never below 1 nor above -k's own bound (MAX_K);
    a round that drafted nothing changes nothing."""

    name = "heuristic"

    def __init__(self, k: int, cost=None):
        super().__init__(k, cost)
        self.current = max(1, k)

    def update(self, drafted: int, accepted: int, draft_s: float = 0.0, verify_s: float = 0.0,
               source: str = "model", made: int | None = None, confidences: tuple[float, ...] = (),
               read_s: float = 0.0) -> None:
        if drafted:
            grown = self.current + 2 if accepted == drafted else max(1, self.current - 1)
            self.current = min(grown, MAX_K)
