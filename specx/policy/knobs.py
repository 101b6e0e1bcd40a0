"""What steers `auto`, and the guard on a tuned policy it chose: every number in one frozen dataclass.

Each field is a rule's number and its reason; the measurements that chose them live with their
results (benchmarks/results/, cited in the module that applies the rule). A test that needs other
numbers builds `AutoKnobs(...)` and hands it to a CostModel; the policies read their cost model's.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class AutoKnobs:
    # --- the policy: when to draft at all (auto.py, guarded.py, switch.py)
    k_max: int = 16               # the most auto drafts when k was not chosen: where verifying many tokens costs
    #                               little more than one and copies run long, rounds of 9-16 accepted tokens pay
    warmup_rounds: int = 1        # with nothing measured, rounds that draft only warmup_k (after the plain first)
    warmup_k: int = 4             # a failed first draft of 16 costs ~4 plain tokens on a CPU; drafts lengthen
    #                               at once where the first ones are accepted
    probe_gap: int = 8            # plain rounds after drafting went off before it is tried again ...
    probe_gap_max: int = 128      # ... the gap doubling after each probe that does not pay, up to this
    min_judged: int = 8           # model-drafted tokens judged before drafting may first go off (not on noise)
    refresh_rounds: int = 8       # while drafting, plain decoding is timed again once its time is this many rounds
    #                               old (a time carried from an earlier answer counts as this old) ...
    refresh_gain: float = 1.5     # ... unless drafting's measured rate leads it by this factor: a shared CPU's
    #                               speed moves within an answer, and drafting is judged against plain decoding
    stale_rounds: int = 256       # a forward size's time not measured again for this many rounds (about two
    #                               answers of plain decoding) is dropped and interpolated from fresher sizes
    guard_rounds: int = 6         # the guard judges a tuned policy's speed over this many drafting rounds ...
    guard_slack: float = 0.05     # ... and turns it off where they fall this far below plain decoding's
    # --- the cost model (costmodel.py)
    decay: float = 0.85           # weight an older round keeps at each new one: follow the text and the machine
    prior_accept: float = 0.5     # a model drafter's prior, worth one round: half a draft accepted
    copy_prior: float = 0.3       # a copy's prior: in prose a 3-token match or a resumed copy is mostly rejected
    weak_priors: tuple[tuple[str, float], ...] = (("match1", 0.15), ("match2", 0.15))   # 1-2-token matches are
    #                               guesses: drafted only where verifying extra tokens is nearly free (a GPU)
    shrink: float = 2.0           # pseudo-rounds of the previous position's rate in each position's estimate
    margin: float = 0.05          # drafting must promise this much more than plain decoding: what the estimate
    #                               leaves out (the drafter's prompt pass, its catch-up steps) is paid anyway
    read_answer: int = 128        # the most new tokens an answer is taken to have when pricing a prompt pass ...
    read_k: int = 4               # ... and the longest draft that pricing considers
    confidence_bins: tuple[float, ...] = (0.4, 0.6, 0.8, 0.9, 0.97)   # a drafter's confidence, binned: the
    #                               acceptance of its tokens is learned per bin (calibration)
    calibration_prior: float = 2.0   # pseudo-tokens, accepted at the confidence itself, in each bin's estimate

    @cached_property
    def weak(self) -> dict[str, float]:
        """Kinds of copy with their own low prior."""
        return dict(self.weak_priors)


KNOBS = AutoKnobs()
