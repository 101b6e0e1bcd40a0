"""What a round costs and yields, from measurements: the `auto` draft policy picks k with it (SmartSpec).

Tokens per round with k drafts: the target's own token plus the drafts accepted before the first
rejection, E(k) = 1 + Σ_{j≤k} Π_{i≤j} h_i, where h_j is the chance that draft j is accepted once the
j−1 before it were. h_j is measured per position (a drafter that copies its input is often wrong on
the first token and then right for many: no single rate describes it) and shrunk towards h_{j−1}
where a position has little evidence; with none at all every h_j is the pooled rate a and
E(k) = (1 − a^(k+1)) / (1 − a), the geometric law. Cost: k drafter steps plus one target forward of
k+1 tokens. The best k maximises E(k) / cost(k); k = 0 (plain decoding, one token per forward of 1)
wins when drafting costs more than it saves, and drafting must promise MARGIN more to be chosen.
All inputs are measured during the run and decay so the model follows the text (code that copies its
input, then free prose) and the machine (a shared CPU's speed moves within an answer: a forward's
time keeps weight DECAY^age on its last measure, age in rounds since it). Acceptance is learned per
source: the model drafter's drafts, and copies from the context by their evidence (a copy running
for 8+ tokens, a fresh 3-token match, …).
"""
from __future__ import annotations

import bisect
import copy
import math
from dataclasses import dataclass, field

DECAY = 0.85          # weight kept by older rounds at each new one
PRIOR_ACCEPT = 0.5    # a constant prior worth one round: half a draft accepted, half rejected
SHRINK = 2.0          # pseudo-rounds of the previous position's rate in each position's estimate
MARGIN = 0.05         # drafting must promise this much more than plain decoding: what the estimate
                      # leaves out (the drafter's prompt pass, its catch-up steps) is paid anyway
MODEL = "model"       # the source of a model drafter's drafts; copies name their evidence (ngram)
# Copies from a 1- or 2-token match are guesses: in one trace of the five held-out prompts (float32,
# 48 tokens) 3 of 17 such rounds had their first token accepted. Their prior is low, so they are drafted
# only where verifying extra tokens is nearly free (a GPU), and learned from there.
WEAK_PRIOR = {"match1": 0.15, "match2": 0.15}
COPY_PRIOR = 0.3      # other copies: in prose a copy that ran for 3 tokens, or resumed past an edit, is
                      # mostly rejected at once; one partly accepted copy under the model's 0.5 made
                      # 16-token copies look paying (summarisation trace: resume 16/0, match3 16/0)
COPIES = "copies"     # all copies pooled: a kind of copy not drafted yet borrows what they showed
CARRIED_AGE = 8       # rounds: how old a forward's time carried from an earlier answer (or disk) counts
READ_ANSWER = 128     # the most new tokens an answer is taken to have when pricing a drafter's prompt pass
READ_K = 4            # ... and the longest draft that pricing considers
CONFIDENCE_BINS = (0.4, 0.6, 0.8, 0.9, 0.97)   # the drafter's confidence, binned: acceptance is learned per bin
CALIBRATION_PRIOR = 2.0   # pseudo-tokens, accepted at the confidence itself, in each bin's estimate


@dataclass
class Calibration:
    """How often the target accepts a token the model drafter gave confidence c, learned per bin of
    c; with no evidence, c itself (a cautious estimate: measured on the fixture pair, greedy, tokens
    drafted at 0.4–0.6 were accepted 56–74% of the time, 0.6–0.8: 63–91%)."""

    judged: dict[int, float] = field(default_factory=dict)
    passed: dict[int, float] = field(default_factory=dict)

    def add(self, confidences: tuple[float, ...], accepted: int) -> None:
        """The judged tokens of a round (drafts 1..accepted+1 at most) and how many were accepted."""
        for i, c in enumerate(confidences):
            b = bisect.bisect_right(CONFIDENCE_BINS, c)
            self.judged[b] = self.judged.get(b, 0.0) + 1
            self.passed[b] = self.passed.get(b, 0.0) + (1 if i < accepted else 0)

    def acceptance(self, c: float) -> float:
        b = bisect.bisect_right(CONFIDENCE_BINS, c)
        passed, judged = self.passed.get(b, 0.0), self.judged.get(b, 0.0)
        return min((passed + CALIBRATION_PRIOR * c) / (judged + CALIBRATION_PRIOR), 0.999)


@dataclass
class Track:
    """What one kind of draft has shown: decayed counts of accepted tokens, failed rounds, and per
    position j the rounds that judged draft j (`reached`) and accepted it (`passed`)."""

    accepted: float = 0.0
    rejected: float = 0.0
    reached: dict[int, float] = field(default_factory=dict)
    passed: dict[int, float] = field(default_factory=dict)
    tries: int = 0            # rounds that drafted from this source (not decayed)
    prior: float = PRIOR_ACCEPT

    def decay(self) -> None:
        self.accepted, self.rejected = self.accepted * DECAY, self.rejected * DECAY
        for counts in (self.reached, self.passed):
            for j in counts:
                counts[j] *= DECAY

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

    def hazards(self, k: int) -> list[float]:
        """h_1 … h_k: each position's measured rate, shrunk towards the one before it."""
        out, prior = [], self.acceptance
        for j in range(1, k + 1):
            prior = (self.passed.get(j, 0.0) + SHRINK * prior) / (self.reached.get(j, 0.0) + SHRINK)
            out.append(min(prior, 0.999))
        return out


@dataclass
class CostModel:
    """Measured costs (shared) and acceptance per source of drafts: the model drafter's own, and for
    copies from the context one track per kind of evidence ("match8", "match3", "resume", …), since
    a copy that has run for 8 tokens and a fresh two-token match are right at very different rates. Copies
    cost nothing to propose; a model's drafted token costs `draft_step_s`."""

    verify_s: dict[int, float] = field(default_factory=dict)   # tokens per target forward → seconds
    draft_step_s: float | None = None                           # seconds per token the model drafts
    moe: bool = False          # a mixture-of-experts target: the explanation says why verifying costs more
    tracks: dict[str, Track] = field(default_factory=dict)
    calibration: Calibration = field(default_factory=Calibration)
    clock: int = 0             # rounds observed in this answer
    measured_at: dict[int, int] = field(default_factory=dict)   # forward size → the round it was last timed

    @classmethod
    def following(cls, previous: "CostModel | None", moe: bool = False) -> "CostModel":
        """The model for a new answer: it keeps what the previous answer on the same pair measured of
        the machine and the drafter (verify costs, the drafting step, the drafter's calibration), so
        it need not spend its first rounds measuring them again, and forgets what it learned of the
        text (acceptance per source of drafts)."""
        if previous is None:
            return cls(moe=moe)
        return cls(verify_s=dict(previous.verify_s), draft_step_s=previous.draft_step_s, moe=moe,
                   calibration=copy.deepcopy(previous.calibration))

    def observe(self, drafted: int, accepted: int, draft_s: float, verify_s: float, source: str = MODEL,
                made: int | None = None) -> None:
        """Fold in one round: drafted tokens, how many were accepted, the two timings, and where the
        draft came from; `made`: tokens the model drafter produced, when the policy sent fewer.
        Every round ages every track (plain ones too: the text moves on)."""
        n = drafted + 1
        made = drafted if made is None else made
        self.clock += 1
        old = DECAY ** self.age(n)
        self.verify_s[n] = verify_s if n not in self.verify_s else old * self.verify_s[n] + (1 - old) * verify_s
        self.measured_at[n] = self.clock
        for track in self.tracks.values():
            track.decay()
        if source == MODEL and made:
            step = draft_s / made
            self.draft_step_s = step if self.draft_step_s is None else _ema(self.draft_step_s, step)
            if not drafted:    # a draft not worth verifying: drafting time spent for nothing, as a
                self.track(MODEL).add(made, 0)   # draft whose first token fails
        if not drafted:
            return
        if source != MODEL and source not in WEAK_PRIOR:
            self.track(COPIES).add(drafted, accepted)
        self.track(source).add(drafted, accepted)

    def age(self, n: int) -> int:
        """Rounds since a forward of n tokens was last timed (at least 1); one carried from an earlier
        answer or from disk counts as CARRIED_AGE rounds old. On a shared CPU the same forward took
        ~68 ms for 33 rounds and ~103 ms for 27 in one answer (fbgemm fp16, AVX-512): a time
        measured long ago must give way to a new one at once, not by 15% a round."""
        if n not in self.measured_at:
            return CARRIED_AGE
        return max(self.clock - self.measured_at[n], 1)

    def track(self, source: str = MODEL) -> Track:
        if source not in self.tracks:
            prior = PRIOR_ACCEPT if source == MODEL else WEAK_PRIOR.get(source, COPY_PRIOR)
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
        if not track.tries and source not in (MODEL, *WEAK_PRIOR):
            track = self.track(COPIES)
        return track.hazards(k)

    def expected_tokens(self, k: int, source: str = MODEL) -> float:
        return _tokens_per_round(self.hazards(k, source))[-1]

    def verify_time(self, n: int) -> float | None:
        """Seconds for a target forward of n tokens: measured, else interpolated linearly between the
        sizes measured around it. Beyond the longest measured forward it grows with the logarithm of
        the size, along the two longest measured (on a CPU each extra token costs less than the one
        before: float32 1→5 tokens +75 ms each, 9→17 +13 ms, close to a + b·ln n; extrapolating
        linearly from short forwards kept k at 1 for whole answers, and taking them as flat made a
        16-token copy look free after 4-token rounds).
        Plain decoding (n = 1) is what drafting must beat: it is only ever measured, since deriving it
        from longer forwards overstates it and makes drafting look paying."""
        if n in self.verify_s:
            return self.verify_s[n]
        known = sorted(self.verify_s)
        if len(known) < 2 or n == 1:
            return None
        if n > known[-1]:
            short, long = known[-2], known[-1]
            per_log = max(self.verify_s[long] - self.verify_s[short], 0.0) / math.log(long / short)
            return self.verify_s[long] + per_log * math.log(n / long)
        lower = max((m for m in known if m < n), default=known[0])
        upper = min(m for m in known if m > n)
        if lower == upper or lower > n:   # below the shortest measured: along its line to the next
            lower, upper = known[0], known[1]
        slope = (self.verify_s[upper] - self.verify_s[lower]) / (upper - lower)
        return max(self.verify_s[lower] + slope * (n - lower), 1e-9)

    def rate(self, k: int, source: str = MODEL) -> float | None:
        """Expected tokens per second when drafting k from `source` (k = 0: plain decoding)."""
        verify = self.verify_time(k + 1)
        step = self.draft_step_s if source == MODEL else 0.0
        if verify is None or (k and step is None):
            return None
        return self.expected_tokens(k, source) / (verify + k * (step or 0.0))

    def best_k(self, k_max: int, source: str = MODEL) -> int | None:
        """The k in 0..k_max with the highest expected rate; None until plain and drafting are measured."""
        rates = {k: self.rate(k, source) for k in range(k_max + 1)}
        if rates[0] is None or all(r is None for k, r in rates.items() if k):
            return None
        rates[0] *= 1 + MARGIN
        return max((k for k, r in rates.items() if r is not None), key=lambda k: (rates[k], -k))

    def worth_verifying(self, confidences: tuple[float, ...]) -> int | None:
        """How many of a model draft's tokens to send to the target, its drafting time being spent
        already: the prefix m maximising (1 + expected accepted of m) / verify(m + 1), 0 if plain
        decoding's 1 / verify(1) is better (None until both are measured). On a CPU a forward of 2
        tokens costs ~1.8× one in float32, so a lone doubtful draft costs more to check than it saves."""
        verify = [self.verify_time(m + 1) for m in range(len(confidences) + 1)]   # m = 0: plain decoding
        if not confidences or None in verify:
            return None
        tokens = _tokens_per_round([self.calibration.acceptance(c) for c in confidences])
        return max(range(len(tokens)), key=lambda m: (tokens[m] / verify[m], -m))

    def break_even(self) -> float | None:
        """The chance of being used that a drafted token needs to pay for itself: its drafting step
        over a plain token's time (None until both are measured)."""
        plain = self.verify_s.get(1)
        return None if not plain or self.draft_step_s is None else self.draft_step_s / plain

    def survival_floor(self, survivals: tuple[float, ...]) -> float | None:
        """The chance of all being accepted that a model draft needs to earn one more token, after
        tokens whose running chances are `survivals`: that token's drafting step plus what it adds to
        the verify forward, in plain tokens (break_even alone when longer forwards are not measured).
        The step alone let an int8dyn drafter draft 16 tokens where 3 were accepted; with the verify
        share (fixture Qwen pair, float32, 48 tokens, 2 paired repeats, outputs unchanged): rewrite
        1.51× → 1.87× plain, math 1.33× → 1.44×, code 1.69× → 1.66×. Pricing the token at the
        round's own rate when that beats plain decoding asked too much: code 1.64× → 1.44×."""
        base = self.break_even()
        m = len(survivals)
        here, longer = self.verify_time(m + 1), self.verify_time(m + 2)
        if base is None or here is None or longer is None:
            return base
        return base + max(longer - here, 0.0) / self.verify_s[1]

    def read_budget(self, tokens: int) -> float | None:
        """The seconds a model drafter may spend reading the whole prompt of an answer of up to
        `tokens` new tokens (READ_ANSWER at most): what drafting is expected to save of their plain
        decoding beyond MARGIN, at the measured costs and the model drafter's acceptance so far (at
        an answer's start, the prior: half its drafts accepted). None until plain decoding, a 2-token
        forward and a drafting step are measured. Float32 fixture pair, AVX-512 (plain step 234 ms,
        2 tokens 259, a drafted token 36, as an earlier process saved them): it saves 12%, so reading
        a 163-token summarisation prompt (0.4 s) fits an answer of 64 tokens; reading it whole ran
        1.09× plain, sitting out 1.03×, reading the last 64 tokens 0.97× (4 paired answers). With
        fp16 target weights (98, 113 and 40 ms) drafting saves nothing at the prior, and a drafter
        reads at most its window."""
        plain = self.verify_s.get(1)
        rates = [self.rate(k) for k in range(1, READ_K + 1)]
        if not plain or self.verify_time(2) is None or None in rates:
            return None
        saving = max(0.0, 1 - (1 + MARGIN) / plain / max(rates))
        return saving * min(tokens, READ_ANSWER) * plain

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
                f"{1e3 * ((self.verify_time(k + 1) or 0) + k * (self.draft_step_s or 0)):.0f} ms round "
                f"vs {1e3 * plain:.0f} ms per plain token")


def _tokens_per_round(hazards: list[float]) -> list[float]:
    """E(m) for m = 0..len(hazards): the target's own token plus the drafts accepted before the first
    rejection, 1 + Σ_{j≤m} Π_{i≤j} h_i."""
    totals, survive = [1.0], 1.0
    for h in hazards:
        survive *= h
        totals.append(totals[-1] + survive)
    return totals


def _ema(old: float, new: float) -> float:
    return DECAY * old + (1 - DECAY) * new
