"""The draft policy's interface: what the loop asks it each round, and what a drafter is told as plain data.

Each round the loop asks `next_k` (how far a model drafter may draft) and `copy_k` (how far a copy
from the context may go), hands the drafter `stops(model_k)` in its Ask, sends the target
`trim(draft)`, and reports the round with `update`; a decision the user must hear about waits in
`notice` until the loop takes it. Drafters never call the policy: they get numbers.
"""
from __future__ import annotations

from dataclasses import dataclass

from .acceptance import Chances
from .costmodel import CostModel


@dataclass(frozen=True)
class Stops:
    """Where a model drafter ends its draft early this round: plain numbers, fixed while it drafts."""

    min_confidence: float | None = None   # after a token it gives less than this probability
    floors: tuple[float | None, ...] | None = None   # or once the chance that all its m tokens are accepted
    #   falls below floors[m - 1] (None there: no floor yet; past the end the last one holds); None: never
    calibration: Chances | None = None    # that chance per token from its confidence (None: the confidence)
    # a token tree's growth (drafters/branching.py), in plain decoding's tokens; None: not measured
    level_costs: tuple[float | None, ...] | None = None   # a drafter forward of r rows: level_costs[r - 1]
    node_costs: tuple[float | None, ...] | None = None    # the verify row of the tree's n-th node: node_costs[n - 1]

    @property
    def scored(self) -> bool:
        """Whether the drafter needs each token's probability."""
        return self.min_confidence is not None or self.floors is not None

    def chance(self, confidence: float) -> float:
        """The chance that a token drafted with this confidence is accepted."""
        return confidence if self.calibration is None else self.calibration.acceptance(confidence)

    def floor(self, m: int) -> float | None:
        """The least chance of all being accepted that a draft of m tokens needs to go on."""
        return self.floors[min(m, len(self.floors)) - 1] if self.floors else None


NO_STOPS = Stops()


@dataclass(frozen=True)
class TreeRound:
    """A verified token tree, as the policy learns from it: `nodes` drafted (the verify forward has
    nodes + 1 rows), `depth` levels, `accepted` nodes on the accepted path; `judged`: the model drafter's
    probability of each of its first choices the target judged, of which the first `passed` were accepted
    (engine.tree.judged); `levels`: the drafter's forwards, (rows, seconds) each."""

    nodes: int
    depth: int
    accepted: int
    draft_s: float
    verify_s: float
    source: str = "model"
    judged: tuple[float, ...] = ()
    passed: int = 0
    levels: tuple[tuple[int, float], ...] = ()


class Policy:
    """How many tokens to draft each round, and how much of a draft the target verifies.

    `name` is what the user chose (`fixed`, `heuristic`, `confidence`, `auto`); `k_max` the k it
    runs with; `cost` the measured costs (auto and the guard decide from them; the loop prices a
    drafter's prompt pass with them); `adaptive`: it may turn speculation off, so a model drafter
    may sit an answer out (ModelDrafter.sit_out)."""

    name = "fixed"
    adaptive = False

    def __init__(self, k: int, cost: CostModel | None = None):
        self.k_max = k
        self.current = k            # this round's k
        self.cost = cost if cost is not None else CostModel()
        self.notice = ""            # a decision the user must hear about; the loop takes it (take_notice)

    def next_k(self) -> int:
        """How many tokens a model drafter may draft this round (the loop clamps it to the budget)."""
        return self.current

    @property
    def copy_k(self) -> int:
        """How far a copy from the context may go this round."""
        return self.current

    def stops(self, model_k: int, tree: int = 0) -> Stops:
        """What a model drafter is told about ending its draft of up to model_k tokens (or a tree of up
        to `tree` nodes) early."""
        return NO_STOPS

    def trim(self, draft):
        """The part of a draft the target verifies (all of it, unless the policy prices drafts)."""
        return draft

    def update(self, drafted: int, accepted: int, draft_s: float = 0.0, verify_s: float = 0.0,
               source: str = "model", made: int | None = None, confidences: tuple[float, ...] = (),
               read_s: float = 0.0) -> None:
        """Learn from the round that just ended: `drafted` tokens sent, `accepted` of them, the two
        timings, where the draft came from (`source`), how many tokens the model drafter made
        (`made`: more than `drafted` where `trim` cut them), its probability of each, and what of the
        drafting time it spent reading tokens it had not seen (`read_s`, Draft.read_s)."""

    def update_tree(self, r: TreeRound) -> None:
        """Learn from a token tree's round: as the chain of its depth, unless the policy prices trees."""
        self.update(r.depth, r.accepted, r.draft_s, r.verify_s, r.source, r.depth)

    def describe(self) -> str:
        """The policy in words, as `specx tune` names it."""
        return self.name

    def take_notice(self) -> str:
        notice, self.notice = self.notice, ""
        return notice
