"""What a round costs and yields, from measurements: the `auto` draft policy picks k with it (SmartSpec).

Tokens per round with k drafts: the target's own token plus the drafts accepted before the first
rejection, E(k) = 1 + Σ_{j≤k} Π_{i≤j} h_i, where h_j is the chance that draft j is accepted once the
j−1 before it were. h_j is measured per position (a drafter that copies its input is often wrong on
the first token and then right for many: no single rate describes it) and shrunk towards h_{j−1}
where a position has little evidence; with none at all every h_j is the pooled rate a and
E(k) = (1 − a^(k+1)) / (1 − a), the geometric law. Cost: k drafter steps plus one target forward of
k+1 tokens. The best k maximises E(k) / cost(k); k = 0 (plain decoding, one token per forward of 1)
wins when drafting costs more than it saves, and drafting must promise a margin more to be chosen.
All inputs are measured during the run and decay so the model follows the text (code that copies its
input, then free prose) and the machine (a shared CPU's speed moves within an answer: a forward's
time keeps weight decay^age on its last measure, age in rounds since it). Acceptance is learned per
source: the model drafter's drafts, and copies from the context by their evidence (a copy running
for 8+ tokens, a fresh 3-token match, …). Its numbers are AutoKnobs (knobs.py).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

from .acceptance import Calibration, Track
from .fits import between as _between, ema as _ema, tokens_per_round as _tokens_per_round
from .knobs import KNOBS, AutoKnobs
from .treecosts import TreePrices

MODEL = "model"       # the source of a model drafter's drafts; copies name their evidence (ngram)
COPIES = "copies"     # all copies pooled: a kind of copy not drafted yet borrows what they showed


@dataclass
class CostModel(TreePrices):
    """Measured costs (shared) and acceptance per source of drafts: the model drafter's own, and for
    copies from the context one track per kind of evidence ("match8", "match3", "resume", …), since
    a copy that has run for 8 tokens and a fresh two-token match are right at very different rates. Copies
    cost nothing to propose; a model's drafted token costs `draft_step_s`. Token trees are priced by
    treecosts.py."""

    verify_s: dict[int, float] = field(default_factory=dict)   # tokens per target forward → seconds
    verify_n: dict[int, float] = field(default_factory=dict)   # … and the measures behind it (decayed; row_prices)
    draft_step_s: float | None = None                           # seconds per token the model drafts
    draft_rows_s: dict[int, float] = field(default_factory=dict)   # a token tree's drafter forward: rows → seconds
    moe: bool = False          # a mixture-of-experts target: the explanation says why verifying costs more
    tracks: dict[str, Track] = field(default_factory=dict)
    calibration: Calibration | None = None   # None: a new one, with these knobs
    clock: int = 0             # rounds observed in this answer
    measured_at: dict[int, int] = field(default_factory=dict)   # forward size → the round it was last timed
    lifetime: int = 0          # rounds observed over this pair's answers (carried; _forget_stale)
    timed: dict[int, int] = field(default_factory=dict)   # forward size → the lifetime round it was last timed
    catchup_s: float | None = None   # seconds a model round spends catching up after copies (this answer; rate)
    quiet: bool = False        # the last round drafted nothing (plain decoding)
    knobs: AutoKnobs = field(default=KNOBS, repr=False, compare=False)

    def __post_init__(self):
        if self.calibration is None:
            self.calibration = Calibration(knobs=self.knobs)

    @classmethod
    def following(cls, previous: "CostModel | None", moe: bool = False) -> "CostModel":
        """The model for a new answer: it keeps what the previous answer on the same pair measured of
        the machine and the drafter (verify costs, the drafting step, the drafter's calibration), so
        it need not spend its first rounds measuring them again, and forgets what it learned of the
        text (acceptance per source of drafts)."""
        if previous is None:
            return cls(moe=moe)
        return cls(verify_s=dict(previous.verify_s), verify_n=dict(previous.verify_n),
                   draft_step_s=previous.draft_step_s, moe=moe,
                   draft_rows_s=dict(previous.draft_rows_s), calibration=copy.deepcopy(previous.calibration),
                   lifetime=previous.lifetime, timed=dict(previous.timed), knobs=previous.knobs)

    def observe(self, drafted: int, accepted: int, draft_s: float, verify_s: float, source: str = MODEL,
                made: int | None = None, read_s: float = 0.0, resumed: bool = False) -> None:
        """Fold in one round: drafted tokens, how many were accepted, the two timings, and where the
        draft came from; `made`: tokens the model drafter produced, when the policy sent fewer; `read_s`:
        the part of the drafting time the model drafter spent catching up on tokens it had not seen.
        Every round ages every track (plain ones too: the text moves on).

        The catching up is not a drafted token's cost: counted in the drafting step, each probe after a
        long stretch of plain rounds (the drafter reads its window of them) raised the step the pair
        carries, until drafting looked dear everywhere (benchmarks/results/2026-11-29-drift). After
        copies a model round pays it again each time: that is `catchup_s`, a round's cost (rate). After
        plain rounds, or in a round that judges whether drafting comes back (`resumed`: off, probing),
        it is the price of trying again, which the probe gap bounds: not folded in."""
        made = drafted if made is None else made
        quiet, self.quiet = self.quiet, not drafted and not made
        self._tick(drafted + 1, verify_s)
        if source == MODEL and made:
            step = max(draft_s - read_s, 0.0) / made
            self.draft_step_s = step if self.draft_step_s is None else _ema(self.draft_step_s, step, self.knobs.decay)
            if not (quiet or resumed):
                self.catchup_s = read_s if self.catchup_s is None else _ema(self.catchup_s, read_s, self.knobs.decay)
            if not drafted:    # a draft not worth verifying: drafting time spent for nothing, as a
                self.track(MODEL).add(made, 0)   # draft whose first token fails
        if drafted:
            self._learn(source, drafted, accepted)

    def _learn(self, source: str, drafted: int, accepted: int) -> None:
        """A draft's acceptance, on its source's track and, for a copy of a kind that is no guess, on all copies'."""
        if source != MODEL and source not in self.knobs.weak:
            self.track(COPIES).add(drafted, accepted)
        self.track(source).add(drafted, accepted)

    def _tick(self, n: int, verify_s: float) -> None:
        """A round's clock tick: the forward of n tokens timed, every track aged (the text moves on)."""
        self.clock += 1
        old = self.knobs.decay ** self.age(n)
        self.verify_n[n] = 1.0 + (old * self.verify_n.get(n, 1.0) if n in self.verify_s else 0.0)
        self.verify_s[n] = verify_s if n not in self.verify_s else old * self.verify_s[n] + (1 - old) * verify_s
        self.measured_at[n] = self.clock
        self.lifetime += 1
        self.timed[n] = self.lifetime
        self._forget_stale()
        for track in self.tracks.values():
            track.decay(self.knobs.decay)

    def _forget_stale(self) -> None:
        """Drop the time of a forward size not timed for AutoKnobs.stale_rounds rounds (over the pair's
        answers; one loaded from disk counts from this process's first round), plain decoding's excepted
        and the freshest other size kept (the longest, among equals): verify_time then interpolates it from
        fresher sizes. A time measured in a slow phase of a shared CPU, at a size drafts then stopped
        reaching because it looked dear, had stayed for a whole session (benchmarks/results/2026-11-29-drift);
        an estimate that is too low is timed again at once, one that is too high never was."""
        limit = self.lifetime - self.knobs.stale_rounds
        sizes = sorted((m for m in self.verify_s if m != 1), key=lambda m: (self.timed.get(m, 0), m))
        for m in sizes[:-1]:
            if self.timed.get(m, 0) < limit:
                del self.verify_s[m]
                self.verify_n.pop(m, None)
                self.measured_at.pop(m, None)
                self.timed.pop(m, None)

    def age(self, n: int) -> int:
        """Rounds since a forward of n tokens was last timed (at least 1); one carried from an earlier
        answer or from disk is as old as a refresh (AutoKnobs.refresh_rounds). A shared CPU's speed
        moves within an answer (benchmarks/results/2026-11-25-guard): a time measured long ago must
        give way to a new one at once, not by 1 − decay a round."""
        if n not in self.measured_at:
            return self.knobs.refresh_rounds
        return max(self.clock - self.measured_at[n], 1)

    def track(self, source: str = MODEL) -> Track:
        if source not in self.tracks:
            prior = self.knobs.prior_accept if source == MODEL else self.knobs.weak.get(source, self.knobs.copy_prior)
            self.tracks[source] = Track(prior=prior)
        return self.tracks[source]

    @property
    def acceptance(self) -> float:
        """The model drafter's acceptance rate (what the policy's sentences report)."""
        return self.track(MODEL).acceptance

    def hazards(self, k: int, source: str = MODEL) -> list[float]:
        """A kind of copy never drafted yet borrows the pooled copies' rates (1–2-token matches keep
        their own low prior): in prose one failed copy speaks for the others, in an edit one success."""
        track = self.track(source)
        if not track.tries and source != MODEL and source not in self.knobs.weak:
            track = self.track(COPIES)
        return track.hazards(k, self.knobs.shrink)

    def expected_tokens(self, k: int, source: str = MODEL) -> float:
        return _tokens_per_round(self.hazards(k, source))[-1]

    def verify_time(self, n: int) -> float | None:
        """Seconds for a target forward of n tokens: measured, else interpolated linearly between the
        sizes measured around it. Beyond the longest measured forward it grows with the logarithm of
        the size, along the two longest measured: on a CPU each extra token costs less than the one
        before, close to a + b·ln n; extrapolating linearly from short forwards holds k short, and
        taking them as flat makes a long copy look free. Plain decoding (n = 1) is what drafting
        must beat: it is only ever measured, since deriving it from longer forwards overstates it
        and makes drafting look paying (benchmarks/results/2026-11-23-sources)."""
        if n in self.verify_s:
            return self.verify_s[n]
        return self._between(n, sorted(self.verify_s))

    def _between(self, n: int, known: list[int]) -> float | None:
        """verify_time of an unmeasured size n, given the measured sizes in order."""
        return None if n == 1 else _between(self.verify_s, n, known)

    def rate(self, k: int, source: str = MODEL) -> float | None:
        """Expected tokens per second when drafting k from `source` (k = 0: plain decoding)."""
        verify = self.verify_time(k + 1)
        step = self.draft_step_s if source == MODEL else 0.0
        if verify is None or (k and step is None):
            return None
        return self.expected_tokens(k, source) / (verify + k * (step or 0.0) + self._catchup(k, source))

    def _catchup(self, k: int, source: str) -> float:
        """What a model round of k > 0 tokens pays to catch up after copies, measured this answer (observe)."""
        return (self.catchup_s or 0.0) if k and source == MODEL else 0.0

    def best_k(self, k_max: int, source: str = MODEL) -> int | None:
        """The k in 0..k_max with the highest expected rate; None until plain and drafting are measured."""
        rates = {k: self.rate(k, source) for k in range(k_max + 1)}
        if rates[0] is None or all(r is None for k, r in rates.items() if k):
            return None
        rates[0] *= 1 + self.knobs.margin
        return max((k for k, r in rates.items() if r is not None), key=lambda k: (rates[k], -k))

    def worth_verifying(self, confidences: tuple[float, ...]) -> int | None:
        """How many of a model draft's tokens to send to the target, its drafting time being spent
        already: the prefix m maximising (1 + expected accepted of m) / verify(m + 1), 0 if plain
        decoding's 1 / verify(1) is better (None until both are measured). Where a forward of 2 tokens
        costs nearly twice one (float32 on a CPU), a lone doubtful draft costs more to check than it
        saves (benchmarks/results/2026-11-24-worth)."""
        verify = [self.verify_time(m + 1) for m in range(len(confidences) + 1)]   # m = 0: plain decoding
        if not confidences or None in verify:
            return None
        tokens = _tokens_per_round([self.calibration.acceptance(c) for c in confidences])
        return max(range(len(tokens)), key=lambda m: (tokens[m] / verify[m], -m))

    def longest_worth(self, k_max: int) -> int:
        """The longest model draft worth verifying were all its tokens accepted: the m in 1..k_max maximising
        (m + 1) / verify_time(m + 1), the shortest of equals (k_max until plain decoding and a longer forward
        are known; whether to draft at all is best_k's call). worth_verifying never keeps more: with chances
        of acceptance that do not rise along a draft, tokens(m) / verify(m + 1) is highest at or before
        this m (a test holds the claim on random drafts and costs); so a drafter that goes further makes
        tokens only to have them cut. On the CPU pair it made 16 tokens to have 6 verified
        (benchmarks/results/2026-11-29-longest)."""
        times = {m: self.verify_time(m + 1) for m in range(k_max + 1)}
        if times[0] is None or all(times[m] is None for m in range(1, k_max + 1)):
            return k_max
        return max((m for m in range(1, k_max + 1) if times[m] is not None),
                   key=lambda m: ((m + 1) / times[m], -m))

    def break_even(self) -> float | None:
        """The chance of being used that a drafted token needs to pay for itself: its drafting step
        over a plain token's time (None until both are measured)."""
        plain = self.verify_s.get(1)
        return None if not plain or self.draft_step_s is None else self.draft_step_s / plain

    def survival_floor(self, m: int) -> float | None:
        """The chance of all being accepted that a model draft of m tokens needs to earn one more:
        that token's drafting step plus what it adds to the verify forward, in plain tokens
        (break_even alone when longer forwards are not measured). The step alone let drafts run far
        past what was accepted; the verify share paid (benchmarks/results/2026-11-24-floor)."""
        return self.survival_floors(m)[-1]

    def survival_floors(self, n: int) -> tuple[float | None, ...]:
        """survival_floor(m) for m = 1..n, the rows priced once (row_prices)."""
        base = self.break_even()
        if base is None:
            return (None,) * n
        plain, pace = self.verify_s[1], self.pace(n)
        prices = self.row_prices(n + 1)[1:]   # draft length m: the row from m + 1 tokens to m + 2
        return tuple(pace * (base if p is None else base + p / plain) for p in prices)

    def pace(self, k_max: int) -> float:
        """What a second of drafting earns, in plain decoding's tokens: the best expected rate of drafts of up
        to k_max tokens (rate) over plain decoding's, at least 1. A further token is worth its time only if it
        earns at that rate, since the time would otherwise start the next round, not a plain step (a long-run
        rate is highest where each round stops once its marginal rate falls below it). Priced against plain
        decoding, the fixture pair's model rounds ran on to 4 tokens at 35 tok/s where rounds of 3 made 41
        (benchmarks/results/2026-11-29-longest, -pace)."""
        plain = self.verify_s.get(1)
        rates = [r for r in (self.rate(k) for k in range(1, max(k_max, 1) + 1)) if r is not None]
        return max(1.0, max(rates) * plain) if plain and rates else 1.0

    def read_budget(self, tokens: int) -> float | None:
        """The seconds a model drafter may spend reading the whole prompt of an answer of up to
        `tokens` new tokens (AutoKnobs.read_answer at most): what drafting is expected to save of
        their plain decoding beyond the margin, at the measured costs and the model drafter's
        acceptance so far (at an answer's start, the prior). None until plain decoding, a 2-token
        forward and a drafting step are measured. Where drafting saves nothing at the prior a drafter
        reads at most its window (benchmarks/results/2026-11-25-read)."""
        plain = self.verify_s.get(1)
        rates = [self.rate(k) for k in range(1, self.knobs.read_k + 1)]
        if not plain or self.verify_time(2) is None or None in rates:
            return None
        saving = max(0.0, 1 - (1 + self.knobs.margin) / plain / max(rates))
        return saving * min(tokens, self.knobs.read_answer) * plain

    def explain(self, k: int) -> str:
        """One sentence: the measured costs behind choosing k."""
        plain = self.verify_time(1) or 0.0
        if k == 0:
            moe = ("; on a mixture-of-experts target a forward of k+1 tokens reads the union of their experts"
                   if self.moe else "")
            return (f"drafting does not pay here: acceptance {self.acceptance:.0%} per drafted token, "
                    f"{self.hazards(1)[0]:.0%} for a round's first, a drafted token costs "
                    f"{1e3 * (self.draft_step_s or 0):.0f} ms and plain decoding {1e3 * plain:.0f} ms per token{moe}")
        return (f"k={k}: acceptance {self.acceptance:.0%}, expected {self.expected_tokens(k):.1f} tokens per "
                f"{1e3 * ((self.verify_time(k + 1) or 0) + k * (self.draft_step_s or 0) + self._catchup(k, MODEL)):.0f}"
                f" ms round "
                f"vs {1e3 * plain:.0f} ms per plain token")

