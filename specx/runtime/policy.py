"""Draft-length policies: how many tokens to draft next round, from what the last rounds showed."""
from __future__ import annotations

from dataclasses import dataclass, field

from .costmodel import CostModel

POLICIES = ("auto", "fixed", "heuristic", "confidence")
HEURISTIC_CAP = 64   # the same bound as -k
WARMUP_ROUNDS = 2    # auto: rounds that draft k before the cost model decides
PROBE_GAP = 8        # auto: plain rounds before drafting is tried again; doubles after a failed probe
PROBE_GAP_MAX = 128
MIN_JUDGED = 16      # auto: drafted tokens judged (since drafting went on) before it may go off
AUTO_K_MAX = 16      # auto: the most it drafts when the user (or tune) did not set k


def draft_cap(k: int, policy: str, chosen: bool) -> int:
    """The k a run uses: `auto` picks 0..k each round from measured costs, so unless the user or
    `specx tune` chose k it may draft up to AUTO_K_MAX. Where verifying many tokens costs little more
    than one (float32 on the CPU: 17 tokens ≈ 2.2× one) and the drafter agrees for long runs (code,
    copied text), rounds of 9–16 accepted tokens pay; where they do not, the cost model stays short."""
    return max(k, AUTO_K_MAX) if policy == "auto" and k > 0 and not chosen else k


@dataclass
class DraftPolicy:
    """`fixed` keeps k; `heuristic` is +2 after a fully accepted round, −1 otherwise (as transformers
    does, never below 1); `confidence` drafts up to k but the drafter stops once its top probability
    falls below `threshold` (SpecDec++, transformers' assistant_confidence_threshold); `auto` drafts
    with the confidence stop and picks k in 0..k each round from measured costs (costmodel.py):
    k = 0 decodes plainly, and drafting is probed again after PROBE_GAP plain rounds (the gap doubles
    after each probe that does not pay, up to PROBE_GAP_MAX). Drafting only goes off once MIN_JUDGED
    drafted tokens were judged, and a probe waits for a round in which the drafter proposes something
    (the n-gram drafter has nothing to offer until the text repeats)."""

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
    probing: bool = False
    judged: int = 0             # drafted tokens judged since drafting (re)started

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

    def update(self, drafted: int, accepted: int, draft_s: float = 0.0, verify_s: float = 0.0,
               lookup: bool = False) -> None:
        """Learn from the round that just ended (`lookup`: a hybrid drafter copied instead of drafting)."""
        self.rounds += 1
        if self.name == "auto":
            self.cost.observe(drafted, accepted, draft_s, verify_s, lookup)
            self.judged += min(drafted, accepted + 1)
            if self.probing and drafted:
                self._probed()
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
            if self.probing:
                return self.k_max         # until the drafter proposes something
            self.plain_rounds += 1
            if self.plain_rounds < self.gap:
                return 0
            self.plain_rounds, self.probing = 0, True
            return self.k_max             # the probe; update() turns drafting back on if it pays
        best = self.cost.best_k(self.k_max)
        if best == 0 and self.judged < MIN_JUDGED:   # too little evidence to give up yet
            best = self.cost.best_k(self.k_max, k_min=1)
        if best == 0:
            self.off, self.plain_rounds = True, 0
            self.notice = f"speculation off: {self.cost.explain(0)}; trying again in {self.gap} tokens"
        return self.k_max if best is None else best

    def _probed(self) -> None:
        """A probe round drafted: on again if drafting now pays, else wait twice as long."""
        self.probing = False
        best = self.cost.best_k(self.k_max)
        if best:
            self.off, self.gap, self.judged = False, PROBE_GAP, 0
            self.notice = f"speculation on again: {self.cost.explain(best)}"
        else:
            self.gap = min(self.gap * 2, PROBE_GAP_MAX)
