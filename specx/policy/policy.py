"""Draft-length policies: how many tokens to draft next round, from what the last rounds showed."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .costmodel import COPIES, DECAY, MODEL, WEAK_PRIOR, CostModel

POLICIES = ("auto", "fixed", "heuristic", "confidence")
HEURISTIC_CAP = 64   # the same bound as -k
WARMUP_ROUNDS = 1    # auto, nothing measured yet (a pair's first answer): rounds that draft WARMUP_K (after the
                     # loop's plain first round, which measured plain decoding)
WARMUP_K = 4         # a first draft of 16 that fails costs ~4 plain tokens on a CPU; the cost model
                     # lengthens drafts at once where the first ones are accepted
PROBE_GAP = 8        # auto: plain rounds before drafting is tried again; doubles after a failed probe
PROBE_GAP_MAX = 128
MIN_JUDGED = 8       # auto: model-drafted tokens judged before drafting may first go off
AUTO_K_MAX = 16      # auto: the most it drafts when the user (or tune) did not set k
DEFAULT_K = 4        # the k of the other policies when it was not set (`specx run`'s -k default)
GUARD_ROUNDS = 6     # a tuned policy auto chose (guard): drafting rounds it judges its speed over
GUARD_SLACK = 0.05   # ... and how far below plain decoding's speed they may fall before it stops
REFRESH_ROUNDS = 8   # auto, guard: while drafting, plain decoding is timed again once its time is this old
REFRESH_GAIN = 1.5   # ... unless drafting's measured rate leads it by this much (a shared CPU's plain
                     # step moved between ~103 and ~68 ms within one answer, fbgemm fp16)


def draft_cap(k: int, policy: str, chosen: bool) -> int:
    """The k a run uses: `auto` picks 0..k each round from measured costs, so unless the user or
    `specx tune` chose k it may draft up to AUTO_K_MAX. Where verifying many tokens costs little more
    than one (float32 on the CPU: 17 tokens ≈ 2.2× one) and the drafter agrees for long runs (code,
    copied text), rounds of 9–16 accepted tokens pay; where they do not, the cost model stays short."""
    return max(k, AUTO_K_MAX) if policy == "auto" and k > 0 and not chosen else k


def explore_cap(source: str) -> int:
    """A first copy, with no evidence yet, drafts twice as far as its match goes back (a match of 8+
    tokens: 16; of 3: 6; a resumed copy: WARMUP_K). Tried and dropped: only as far as the match. In
    prose that saved one failed 3-token forward per answer (rowgemm fp16, chat: 3/1 instead of 6/1
    accepted), but on the held-out rewrite a 3-token first copy accepted whole let the next kind of
    copy draft 16 from a fresh match (2 accepted): 13 rounds instead of 10, 5.5–6.1 s instead of 5.0–5.1."""
    return 2 * int(source[5:]) if source.startswith("match") and source[5:].isdigit() else WARMUP_K


@dataclass
class DraftPolicy:
    """`fixed` keeps k; `heuristic` is +2 after a fully accepted round, −1 otherwise (as transformers
    does, never below 1); `confidence` drafts up to k but the drafter stops once its top probability
    falls below `threshold` (SpecDec++, transformers' assistant_confidence_threshold); `auto` drafts
    with the confidence stop and decides each round from measured costs (costmodel.py) whether
    drafting pays: if so the model drafter drafts up to k and stops where the rest of its draft would
    likely be wasted (`min_survival`), and `trim` sends the target only the prefix worth verifying;
    if not, k = 0 decodes plainly, and drafting is probed again after PROBE_GAP plain rounds (the gap
    doubles after each probe that does not pay, up to PROBE_GAP_MAX). Drafting first goes off once MIN_JUDGED
    drafted tokens were judged, and a probe waits for a round in which the model drafts. Copies from
    the context (n-gram drafter, a hybrid's copies) cost nothing to propose: `trim` cuts each to the
    length that pays for its kind of evidence, down to nothing (a fresh two-token match in prose);
    the first copy of a run, with no evidence at all, goes twice as far as its match (explore_cap).

    `guard`: a fixed, heuristic or confidence policy that `auto` took from `specx tune` keeps its
    own k while its drafting rounds keep up with plain decoding, and goes off, probed again as auto
    is, where they fall behind (a tune picks the best rate over a calibration set; a text where the
    drafter agrees less must not pay for it)."""

    name: str = "fixed"
    k_max: int = 4
    threshold: float = 0.4
    current: int = 0
    cost: CostModel = field(default_factory=CostModel)
    notice: str = ""            # set when auto turns drafting off or on; the loop reports and clears it
    off: bool = False
    rounds: int = 0
    warmups: int = 0            # warm-up drafts asked for (auto, before a drafting step was measured)
    plain_rounds: int = 0
    gap: int = PROBE_GAP
    probing: bool = False
    judged: int = 0             # model-drafted tokens judged
    full: dict = field(default_factory=dict)   # kind of copy → length of its last copy, if accepted whole
    guard: bool = False         # a tuned policy that auto chose: off where its rounds lose (_guard_k)
    gained: float = 0.0         # tokens the drafting rounds gave, decayed (auto, guard)
    spent: float = 0.0          # the seconds those rounds took, decayed
    refreshing: bool = False    # this round is plain, to time plain decoding again (_refresh)
    tried: int = 0              # guard: drafting rounds since it went on or began a probe
    asked: bool = False         # guard: this round drafts

    def __post_init__(self):
        if self.name not in POLICIES:
            raise ValueError(f"unknown draft policy {self.name!r}")
        self.guard = self.guard and self.name != "auto"   # auto has its own switch; callers need not check
        self.current = max(1, self.k_max) if self.name == "heuristic" else self.k_max

    @property
    def min_confidence(self) -> float | None:
        """The drafter's stop threshold (confidence and auto; drafters without scores ignore it)."""
        return self.threshold if self.name in ("confidence", "auto") else None

    @property
    def min_survival(self) -> Callable[[tuple[float, ...]], float | None] | None:
        """`auto`: the model drafter also stops once the chance that all its tokens so far are
        accepted (the product of its confidences) falls below what a further token costs, its drafting
        step and its share of the verify forward, in plain tokens (CostModel.survival_floor):
        that token would more likely be paid for than used. The drafter's confidence
        is a cautious estimate (greedy, fixture Qwen 0.5B for 1.5B, 64-token answers: tokens it gave
        0.4–0.6 were accepted 56–74% of the time, 0.6–0.8: 63–91%), so drafts end early rather
        than late; position-wise rates (the cost model) held code drafts at 5 where 16 were accepted."""
        return self.cost.survival_floor if self.name == "auto" else None

    @property
    def calibrate(self):
        """`auto`: the chance that a drafted token of confidence c is accepted, as measured so far in
        this run and the pair's earlier answers (the fixture drafter is under-confident: with raw
        confidences the survival stop held fp16 math drafts at 4 while every 4 was accepted)."""
        return self.cost.calibration.acceptance if self.name == "auto" else None

    @property
    def copy_k(self) -> int:
        """How far a copy from the context may go this round: `auto` cuts copies itself (`trim`), so
        up to k_max even while the model drafter is off or held short; other policies: this round's k
        (none while the guard holds speculation off). None in a round that times plain decoding."""
        if self.refreshing:
            return 0
        if self.name == "auto":
            return self.k_max
        return 0 if self.guard and not self.asked else self.current

    def next_k(self) -> int:
        """How many tokens to draft this round (the loop still clamps to the budget and context)."""
        self.refreshing = False
        if self.name == "auto" and self.k_max:
            self.current = self._auto_k()
        elif self.guard:
            return self._guard_k()
        return self.current

    def trim(self, draft):
        """`auto`: a copied draft cut to the length its evidence has earned; a model's draft cut to
        the prefix worth verifying (`CostModel.worth_verifying`, from its confidences), down to
        nothing: its tokens are made already, but each costs the target more to check."""
        if self.name != "auto" or not draft.tokens:
            return draft
        if not draft.lookup:
            keep = self.cost.worth_verifying(draft.confidences)
        elif not self.cost.track(COPIES).tries and draft.source not in WEAK_PRIOR:   # the first copy:
            keep = explore_cap(draft.source)                                          # no evidence yet
        else:
            keep = self._grow(self.cost.best_k(len(draft.tokens), source=draft.source), draft.source)
        return draft if keep is None or keep >= len(draft.tokens) else _cut(draft, keep)

    def _grow(self, best: int | None, source: str) -> int | None:
        """Where copying pays and the last copy of this kind was accepted whole, copy at least twice
        as far: a cost model that has seen position 6 rejected once keeps copies at 5 while every
        copy of 5 is accepted (it never sees position 6 again). Doubling risks at most the tokens
        the last round won."""
        return max(best, 2 * self.full[source]) if best and source in self.full else best

    def update(self, drafted: int, accepted: int, draft_s: float = 0.0, verify_s: float = 0.0,
               source: str = MODEL, made: int | None = None, confidences: tuple[float, ...] = ()) -> None:
        """Learn from the round that just ended; `source` says where its draft came from, `made`
        how many tokens the model drafter produced (more than `drafted` where `trim` cut them) and
        `confidences` its probability of each."""
        self.rounds += 1
        made = drafted if made is None else made
        if self.name == "auto":
            self.cost.observe(drafted, accepted, draft_s, verify_s, source, made)
            self.cost.calibration.add(confidences[:min(drafted, accepted + 1)], accepted)
            if drafted and source != MODEL:
                if accepted == drafted:
                    self.full[source] = drafted
                else:
                    self.full.pop(source, None)
            if source == MODEL:
                self.judged += min(drafted, accepted + 1) if drafted else made
            if self.probing and made and source == MODEL:
                self._probed()
            if drafted or (made and source == MODEL):
                self._measure(accepted + 1, draft_s + verify_s)
        if self.guard:
            self.cost.observe(drafted, accepted, draft_s, verify_s, source, made)   # plain decoding's time
            if self.asked:
                self._judge(accepted + 1, draft_s + verify_s)
        if self.name != "heuristic" or drafted == 0:
            return
        self.current = self.current + 2 if accepted == drafted else max(1, self.current - 1)
        self.current = min(self.current, HEURISTIC_CAP)

    def _auto_k(self) -> int:
        if self.warmups < WARMUP_ROUNDS and self.cost.draft_step_s is None:   # nothing measured yet
            self.warmups += 1
            return min(self.k_max, WARMUP_K)
        if self.cost.verify_time(1) is None:
            return 0                      # one plain round measures what drafting must beat
        if self.off:
            if self.probing:
                return self.k_max         # until the drafter proposes something
            return 0 if self._waiting() else self.k_max   # the probe; update() turns drafting back on if it pays
        if self._refresh():
            return 0
        if self.cost.best_k(self.k_max) == 0 and self.judged >= MIN_JUDGED:   # enough evidence to give up
            self.off, self.plain_rounds = True, 0
            self.notice = f"speculation off: {self.cost.explain(0)}; trying again in {self.gap} tokens"
            return 0
        return self.k_max                 # drafting pays: the drafter's own stops end each draft

    def _guard_k(self) -> int:
        """`guard`: the tuned policy's own k, or 0 while off; after `gap` plain rounds a probe of
        GUARD_ROUNDS drafting rounds measured afresh (_judge)."""
        self.asked = not (self.off and not self.probing and self._waiting())
        self.asked = self.asked and (self.off or not self._refresh())
        return self.current if self.asked else 0

    def _refresh(self) -> bool:
        """While drafting: one plain round, once plain decoding's time is REFRESH_ROUNDS rounds old
        and drafting's measured rate leads it by less than REFRESH_GAIN. Drafting is judged against
        plain decoding, and a shared CPU's speed moves: priced at averages of 134 ms for one token and
        130 and 129 ms for two and three, short copies looked free where they took 155–179 ms
        against plain steps of 138–150 (fbgemm fp16, one answer)."""
        plain = self.cost.verify_s.get(1)
        self.refreshing = bool(plain and self.spent > 0 and self.cost.age(1) >= REFRESH_ROUNDS
                               and self.gained / self.spent < REFRESH_GAIN / plain)
        return self.refreshing

    def _waiting(self) -> bool:
        """While off: one more plain round; False once `gap` have passed, and a probe begins (the
        guard's measures start afresh)."""
        self.plain_rounds += 1
        if self.plain_rounds < self.gap:
            return True
        self.plain_rounds, self.probing = 0, True
        self.tried, self.gained, self.spent = 0, 0.0, 0.0
        return False

    def _judge(self, tokens: int, seconds: float) -> None:
        """`guard`: one drafting round's tokens and seconds; once GUARD_ROUNDS are in, off if their
        decayed rate is over GUARD_SLACK below plain decoding's, on again after a probe that keeps up."""
        self.asked = False
        self._measure(tokens, seconds)
        self.tried += 1
        plain = self.cost.verify_s.get(1)
        if not plain or self.tried < GUARD_ROUNDS or self.spent <= 0:
            return
        rate, plain_rate = self.gained / self.spent, 1 / plain
        said = (f"the tuned {self._describe()} gave {rate:.1f} tok/s over its last drafting rounds, "
                f"plain decoding {plain_rate:.1f}")
        if self.probing:
            self.probing = False
            if rate >= plain_rate:
                self.off, self.gap = False, PROBE_GAP
                self.notice = f"speculation on again: {said}"
            else:
                self.gap = min(self.gap * 2, PROBE_GAP_MAX)
        elif not self.off and rate < (1 - GUARD_SLACK) * plain_rate:
            self.off, self.plain_rounds = True, 0
            self.notice = f"speculation off: {said}; trying again in {self.gap} tokens"

    def _measure(self, tokens: int, seconds: float) -> None:
        """One drafting round's tokens and seconds, into the decayed sums."""
        self.gained, self.spent = self.gained * DECAY + tokens, self.spent * DECAY + seconds

    def _describe(self) -> str:
        policy = f"confidence {self.threshold:g}" if self.name == "confidence" else self.name
        return f"k={self.k_max} {policy}"

    def _probed(self) -> None:
        """A probe round drafted: on again if drafting now pays, else wait twice as long."""
        self.probing = False
        best = self.cost.best_k(self.k_max)
        if best:
            self.off, self.gap = False, PROBE_GAP
            self.notice = f"speculation on again: {self.cost.explain(best)}"
        else:
            self.gap = min(self.gap * 2, PROBE_GAP_MAX)


def _cut(draft, keep: int):
    """The first `keep` tokens of a draft (a model's probabilities and confidences too)."""
    probs = draft.probs[:keep] if draft.probs is not None and keep else None
    return replace(draft, tokens=draft.tokens[:keep], probs=probs, confidences=draft.confidences[:keep])
