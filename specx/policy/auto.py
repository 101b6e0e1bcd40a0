"""`auto`: whether drafting pays, and how much of each draft, decided from measured costs (costmodel.py).

Each round: while nothing is measured, a short warm-up draft; then one plain round, which times what
drafting must beat; then, where drafting pays, the model drafter drafts up to k and its own stops end
the draft (its confidence, and the chance that all its tokens are accepted against what one more
costs: `stops`), and `trim` sends the target only the prefix worth verifying. Where drafting does not
pay, once enough drafted tokens were judged, k = 0 decodes plainly and drafting is probed again later
(switch.py). Copies from the context cost nothing to propose: `trim` cuts each to the length its kind
of evidence has earned, down to nothing. Every number is an AutoKnobs field (knobs.py).
"""
from __future__ import annotations

from dataclasses import replace

from .base import Stops, TreeRound
from .costmodel import COPIES, MODEL
from .switch import Switched


class Auto(Switched):
    name = "auto"

    def __init__(self, k: int, threshold: float, cost=None):
        super().__init__(k, cost)
        self.threshold = threshold   # the drafter's confidence stop, as `confidence` has it
        self.warmups = 0             # warm-up drafts asked for (before a drafting step was measured)
        self.judged = 0              # model-drafted tokens judged
        self.full: dict[str, int] = {}   # kind of copy → length of its last copy, if accepted whole

    def next_k(self) -> int:
        self.refreshing = False
        if self.k_max:
            self.current = self._decide()
        return self.current

    @property
    def copy_k(self) -> int:
        """Copies are cut by `trim`, so they may go up to k_max even while the model drafter is off or
        held short; none in a round that times plain decoding."""
        return 0 if self.refreshing else self.k_max

    def stops(self, model_k: int, tree: int = 0) -> Stops:
        """The confidence stop, and per draft length m the floor under the chance that all m tokens
        are accepted (CostModel.survival_floor: the drafter's confidence, calibrated, is a cautious
        estimate, so drafts end early rather than late), with the calibration measured so far; for a
        token tree of up to `tree` nodes, what its drafter forwards and verify rows cost (tree_costs)."""
        stops = Stops(self.threshold, self.cost.survival_floors(model_k), self.cost.calibration.table())
        costs = self.cost.tree_costs(tree, model_k) if tree else None   # priced at the chain's pace
        return stops if costs is None else replace(stops, level_costs=costs[0], node_costs=costs[1])

    def trim(self, draft):
        """A model's draft cut to the prefix worth verifying (its tokens are made already, but each
        costs the target more to check); a copy to the length its evidence has earned; the first
        copy of an answer, with no evidence at all, by explore_cap."""
        if not draft.tokens:
            return draft
        if not draft.lookup:
            keep = self.cost.worth_verifying(draft.confidences)
        elif not self.cost.track(COPIES).tries and draft.source not in self.knobs.weak:
            keep = explore_cap(draft.source, self.knobs.warmup_k)
        else:
            keep = self._grow(self.cost.best_k(len(draft.tokens), source=draft.source), draft.source)
        return draft if keep is None or keep >= len(draft.tokens) else cut(draft, keep)

    def update(self, drafted: int, accepted: int, draft_s: float = 0.0, verify_s: float = 0.0,
               source: str = MODEL, made: int | None = None, confidences: tuple[float, ...] = (),
               read_s: float = 0.0) -> None:
        made = drafted if made is None else made
        self.cost.observe(drafted, accepted, draft_s, verify_s, source, made, read_s, resumed=self.off or self.probing)
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

    def update_tree(self, r: TreeRound) -> None:
        """A tree's round: its costs by rows and nodes (CostModel.observe_tree), the calibration from the
        nodes judged, and the switch's bookkeeping as for a chain of its depth."""
        self.cost.observe_tree(r)
        self.cost.calibration.add(r.judged, r.passed)
        if r.source != MODEL:   # a copy's tree accepted as deep as it went: copy further next time (_grow)
            if r.accepted == r.depth:
                self.full[r.source] = r.depth
            else:
                self.full.pop(r.source, None)
        if r.source == MODEL:
            self.judged += min(r.depth, r.accepted + 1)
            if self.probing:
                self._probed()
        self._measure(r.accepted + 1, r.draft_s + r.verify_s)

    def _decide(self) -> int:
        knobs = self.knobs
        if self.warmups < knobs.warmup_rounds and self.cost.draft_step_s is None:   # nothing measured yet
            self.warmups += 1
            return min(self.k_max, knobs.warmup_k)
        if self.cost.verify_time(1) is None:
            return 0                      # one plain round measures what drafting must beat
        if self.off:
            if self.probing:
                return self._longest()    # until the drafter proposes something
            return 0 if self._waiting() else self._longest()   # the probe; update() turns it back on if it pays
        if self._refresh():
            return 0
        if self.cost.best_k(self.k_max) == 0 and self.judged >= knobs.min_judged:   # enough evidence to give up
            self._go_off(self.cost.explain(0))
            return 0
        return self._longest()            # drafting pays: the drafter's own stops end each draft

    def _longest(self) -> int:
        """k_max, or less where no longer draft is worth verifying even if all of it is accepted: the
        drafter stops there rather than make tokens that `trim` cuts (CostModel.longest_worth)."""
        return self.cost.longest_worth(self.k_max)

    def _grow(self, best: int | None, source: str) -> int | None:
        """Where copying pays and the last copy of this kind was accepted whole, copy at least twice
        as far: a cost model that has seen a far position rejected once keeps copies short while every
        shorter one is accepted (it never judges that position again). Doubling risks at most the
        tokens the last round won."""
        return max(best, 2 * self.full[source]) if best and source in self.full else best

    def _probed(self) -> None:
        """A probe round drafted: on again if drafting now pays, else wait twice as long."""
        self.probing = False
        best = self.cost.best_k(self.k_max)
        if best:
            self._back_on(self.cost.explain(best))
        else:
            self._wait_longer()


def explore_cap(source: str, resumed: int) -> int:
    """A first copy, with no evidence yet, drafts twice as far as its match goes back (a match of 8+
    tokens: 16; of 3: 6); a resumed copy `resumed` tokens. Copying only as far as the match lost more
    on edits than it saved in prose (benchmarks/results/2026-11-25-guard)."""
    return 2 * int(source[5:]) if source.startswith("match") and source[5:].isdigit() else resumed


def cut(draft, keep: int):
    """The first `keep` tokens of a draft (a model's probabilities and confidences too)."""
    probs = draft.probs[:keep] if draft.probs is not None and keep else None
    return replace(draft, tokens=draft.tokens[:keep], probs=probs, confidences=draft.confidences[:keep])
