"""What a round costs and yields, from measurements: the `auto` draft policy picks k with it (SmartSpec).

Tokens per round with k drafts: the target's own token plus the drafts accepted before the first
rejection, E(k) = 1 + Σ_{j≤k} Π_{i≤j} h_i, where h_j is the chance that draft j is accepted once the
j−1 before it were. h_j is measured per position (a drafter that copies its input is often wrong on
the first token and then right for many: no single rate describes it) and shrunk towards h_{j−1}
where a position has little evidence; with none at all every h_j is the pooled rate a and
E(k) = (1 − a^(k+1)) / (1 − a), the geometric law. Cost: k drafter steps plus one target forward of
k+1 tokens. The best k maximises E(k) / cost(k); k = 0 (plain decoding, one token per forward of 1)
wins when drafting costs more than it saves. All inputs are measured during the run and decay so the
model follows the text (code that copies its input, then free prose).
"""
from __future__ import annotations

from dataclasses import dataclass, field

DECAY = 0.85          # weight kept by older rounds at each new one
PRIOR_ACCEPT = 0.5    # a constant prior worth one round: half a draft accepted, half rejected
SHRINK = 1.0          # pseudo-rounds of the previous position's rate in each position's estimate


@dataclass
class CostModel:
    verify_s: dict[int, float] = field(default_factory=dict)   # tokens per target forward → seconds
    draft_step_s: float | None = None                           # seconds per drafted token
    accepted: float = 0.0     # decayed drafted tokens accepted
    rejected: float = 0.0     # decayed rounds that ended in a rejection
    moe: bool = False          # a mixture-of-experts target: the explanation says why verifying costs more
    reached: dict[int, float] = field(default_factory=dict)   # position j → rounds that judged draft j
    passed: dict[int, float] = field(default_factory=dict)    # position j → rounds that accepted it

    def observe(self, drafted: int, accepted: int, draft_s: float, verify_s: float, lookup: bool = False) -> None:
        """Fold in one round: drafted tokens, how many were accepted, and the two timings. A copied
        round (`lookup`) tells the verify cost only: it says nothing of the model drafter's acceptance."""
        n = drafted + 1
        self.verify_s[n] = verify_s if n not in self.verify_s else _ema(self.verify_s[n], verify_s)
        if lookup:
            return
        self.accepted, self.rejected = self.accepted * DECAY, self.rejected * DECAY   # every round, plain
        for counts in (self.reached, self.passed):                                   # ones too: the text
            for j in counts:                                                          # moves on
                counts[j] *= DECAY
        if drafted:
            step = draft_s / drafted
            self.draft_step_s = step if self.draft_step_s is None else _ema(self.draft_step_s, step)
            self.accepted += accepted
            self.rejected += 1 if accepted < drafted else 0
            for j in range(1, min(drafted, accepted + 1) + 1):
                self.reached[j] = self.reached.get(j, 0.0) + 1
                if j <= accepted:
                    self.passed[j] = self.passed.get(j, 0.0) + 1

    @property
    def acceptance(self) -> float:
        """Probability that the next drafted token is accepted, given the previous ones were."""
        return (self.accepted + PRIOR_ACCEPT) / (self.accepted + self.rejected + 1)

    def hazards(self, k: int) -> list[float]:
        """h_1 … h_k: each position's measured rate, shrunk towards the one before it."""
        out, prior = [], self.acceptance
        for j in range(1, k + 1):
            prior = (self.passed.get(j, 0.0) + SHRINK * prior) / (self.reached.get(j, 0.0) + SHRINK)
            out.append(min(prior, 0.999))
        return out

    def expected_tokens(self, k: int) -> float:
        total, survive = 1.0, 1.0
        for h in self.hazards(k):
            survive *= h
            total += survive
        return total

    def verify_time(self, n: int) -> float | None:
        """Seconds for a target forward of n tokens: measured, else interpolated linearly."""
        if n in self.verify_s:
            return self.verify_s[n]
        known = sorted(self.verify_s)
        if len(known) < 2:
            return None
        lower = max((m for m in known if m < n), default=known[0])
        upper = min((m for m in known if m > n), default=known[-1])
        if lower == upper:   # extrapolate from the two nearest points
            lower, upper = (known[-2], known[-1]) if n > known[-1] else (known[0], known[1])
        slope = (self.verify_s[upper] - self.verify_s[lower]) / (upper - lower)
        return max(self.verify_s[lower] + slope * (n - lower), 1e-9)

    def rate(self, k: int) -> float | None:
        """Expected tokens per second when drafting k (k = 0: plain decoding)."""
        verify = self.verify_time(k + 1)
        if verify is None or (k and self.draft_step_s is None):
            return None
        return self.expected_tokens(k) / (verify + k * (self.draft_step_s or 0.0))

    def best_k(self, k_max: int, k_min: int = 0) -> int | None:
        """The k in k_min..k_max with the highest expected rate; None until plain and drafting are measured."""
        rates = {k: self.rate(k) for k in range(k_max + 1)}
        if rates[0] is None or all(r is None for k, r in rates.items() if k):
            return None
        return max((k for k, r in rates.items() if r is not None and k >= k_min), key=lambda k: (rates[k], -k))

    def explain(self, k: int) -> str:
        """One sentence: the measured costs behind choosing k."""
        plain = self.verify_time(1) or 0.0
        if k == 0:
            moe = ("; on a mixture-of-experts target a forward of k+1 tokens reads the union of their experts"
                   if self.moe else "")
            return (f"drafting does not pay here: acceptance {self.acceptance:.0%}, a drafted token costs "
                    f"{1e3 * (self.draft_step_s or 0):.0f} ms and plain decoding {1e3 * plain:.0f} ms per token{moe}")
        return (f"k={k}: acceptance {self.acceptance:.0%}, expected {self.expected_tokens(k):.1f} tokens per "
                f"{1e3 * ((self.verify_time(k + 1) or 0) + k * (self.draft_step_s or 0)):.0f} ms round "
                f"vs {1e3 * plain:.0f} ms per plain token")


def _ema(old: float, new: float) -> float:
    return DECAY * old + (1 - DECAY) * new
