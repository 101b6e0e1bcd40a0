"""A tuned policy that `auto` chose, run under auto's switch: off where its drafting rounds lose.

`specx tune` picks the best rate over a calibration set; a text where the drafter agrees less must not
pay for it. The tuned policy keeps its own k while its drafting rounds keep up with plain decoding,
judged over guard_rounds drafting rounds, and goes off, probed again as auto is (switch.py), where
they fall more than guard_slack behind (benchmarks/results/2026-11-25-guard).
"""
from __future__ import annotations

from .base import Policy, Stops, TreeRound
from .costmodel import MODEL
from .switch import Switched


class Guarded(Switched):
    def __init__(self, inner: Policy):
        super().__init__(inner.k_max, inner.cost)
        self.inner, self.name = inner, inner.name
        self.asked = False          # this round drafts (the tuned policy's own k)

    def next_k(self) -> int:
        """The tuned policy's own k, or 0 while off or timing plain decoding again."""
        self.refreshing = False
        self.asked = not (self.off and not self.probing and self._waiting())
        self.asked = self.asked and (self.off or not self._refresh())
        return self.inner.next_k() if self.asked else 0

    @property
    def copy_k(self) -> int:
        return self.inner.copy_k if self.asked and not self.refreshing else 0

    def stops(self, model_k: int, tree: int = 0) -> Stops:
        return self.inner.stops(model_k, tree)

    def trim(self, draft):
        return self.inner.trim(draft)

    def update(self, drafted: int, accepted: int, draft_s: float = 0.0, verify_s: float = 0.0,
               source: str = MODEL, made: int | None = None, confidences: tuple[float, ...] = (),
               read_s: float = 0.0) -> None:
        self.cost.observe(drafted, accepted, draft_s, verify_s, source, made, read_s,   # plain decoding's time
                          resumed=self.off or self.probing)
        if self.asked:
            self._judge(accepted + 1, draft_s + verify_s)
        self.inner.update(drafted, accepted, draft_s, verify_s, source, made, confidences)

    def update_tree(self, r: TreeRound) -> None:
        self.cost.observe_tree(r)
        if self.asked:
            self._judge(r.accepted + 1, r.draft_s + r.verify_s)
        self.inner.update_tree(r)

    def describe(self) -> str:
        return self.inner.describe()

    def _judge(self, tokens: int, seconds: float) -> None:
        """One drafting round's tokens and seconds; once guard_rounds are in, off if their decayed
        rate is over guard_slack below plain decoding's, on again after a probe that keeps up."""
        self.asked = False
        self._measure(tokens, seconds)
        self.tried += 1
        plain = self.cost.verify_s.get(1)
        if not plain or self.tried < self.knobs.guard_rounds or self.spent <= 0:
            return
        rate, plain_rate = self.gained / self.spent, 1 / plain
        said = (f"the tuned k={self.k_max} {self.describe()} gave {rate:.1f} tok/s over its last drafting rounds, "
                f"plain decoding {plain_rate:.1f}")
        if self.probing:
            self.probing = False
            if rate >= plain_rate:
                self._back_on(said)
            else:
                self._wait_longer()
        elif not self.off and rate < (1 - self.knobs.guard_slack) * plain_rate:
            self._go_off(said)
