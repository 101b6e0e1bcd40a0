"""`confidence`: up to k, but the drafter stops after a token it doubts (SpecDec++)."""
from __future__ import annotations

from .base import Policy, Stops


class Confidence(Policy):
    """Drafts up to k tokens; a model drafter stops after a token whose probability falls below
    `threshold` (transformers' assistant_confidence_threshold). Drafters without scores ignore it."""

    name = "confidence"

    def __init__(self, k: int, threshold: float, cost=None):
        super().__init__(k, cost)
        self.threshold = threshold

    def stops(self, model_k: int, tree: int = 0) -> Stops:
        return Stops(min_confidence=self.threshold)

    def describe(self) -> str:
        return f"confidence {self.threshold:g}"
