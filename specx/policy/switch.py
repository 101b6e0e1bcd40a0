"""Turning speculation off where it does not pay, probing it again, and timing plain decoding again.

Shared by `auto` (auto.py) and a tuned policy auto chose (guarded.py): while off, every round is plain
and drafting is tried again after `gap` plain rounds (the gap doubles after each probe that does not
pay); while drafting, plain decoding is timed again once its time is old and drafting does not lead it
by far, since drafting is judged against plain decoding and a shared CPU's speed moves within an
answer (benchmarks/results/2026-11-25-guard, 2026-11-25-refresh).
"""
from __future__ import annotations

from .base import Policy
from .knobs import AutoKnobs


class Switched(Policy):
    adaptive = True

    def __init__(self, k: int, cost=None):
        super().__init__(k, cost)
        self.off = False            # speculation is off: plain rounds until the next probe
        self.plain_rounds = 0       # plain rounds since it went off or the last probe
        self.gap = self.knobs.probe_gap
        self.probing = False        # the next drafting rounds decide whether it comes back on
        self.gained = 0.0           # tokens the drafting rounds gave, decayed
        self.spent = 0.0            # the seconds those rounds took, decayed
        self.refreshing = False     # this round is plain, to time plain decoding again
        self.tried = 0              # drafting rounds since speculation went on or a probe began

    @property
    def knobs(self) -> AutoKnobs:
        return self.cost.knobs

    def _refresh(self) -> bool:
        """While drafting: one plain round, once plain decoding's time is refresh_rounds old and
        drafting's measured rate leads it by less than refresh_gain."""
        plain = self.cost.verify_s.get(1)
        self.refreshing = bool(plain and self.spent > 0 and self.cost.age(1) >= self.knobs.refresh_rounds
                               and self.gained / self.spent < self.knobs.refresh_gain / plain)
        return self.refreshing

    def _waiting(self) -> bool:
        """While off: one more plain round; False once `gap` have passed, and a probe begins (what
        the drafting rounds gave is measured afresh)."""
        self.plain_rounds += 1
        if self.plain_rounds < self.gap:
            return True
        self.plain_rounds, self.probing = 0, True
        self.tried, self.gained, self.spent = 0, 0.0, 0.0
        return False

    def _measure(self, tokens: int, seconds: float) -> None:
        """One drafting round's tokens and seconds, into the decayed sums."""
        decay = self.knobs.decay
        self.gained, self.spent = self.gained * decay + tokens, self.spent * decay + seconds

    def _go_off(self, why: str) -> None:
        self.off, self.plain_rounds = True, 0
        self.notice = f"speculation off: {why}; trying again in {self.gap} tokens"

    def _back_on(self, why: str) -> None:
        self.off, self.gap = False, self.knobs.probe_gap
        self.notice = f"speculation on again: {why}"

    def _wait_longer(self) -> None:
        self.gap = min(self.gap * 2, self.knobs.probe_gap_max)
