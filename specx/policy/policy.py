"""Draft policies by name: `make` builds the one an answer runs with; `draft_cap` the k a run uses."""
from __future__ import annotations

from .auto import Auto
from .base import Policy
from .confidence import Confidence
from .costmodel import CostModel
from .fixed import Fixed
from .guarded import Guarded
from .heuristic import Heuristic
from .knobs import KNOBS

POLICIES = ("auto", "fixed", "heuristic", "confidence")
DEFAULT_K = 4                # the k of fixed, heuristic and confidence when it was not set (`specx run`'s -k)
AUTO_K_MAX = KNOBS.k_max     # auto's k when it was not set


def make(name: str, k: int, confidence: float = 0.4, cost: CostModel | None = None, guard: bool = False) -> Policy:
    """The policy `name` drafting up to k tokens a round (`confidence`: the threshold of the
    confidence stop, which auto uses too), deciding from `cost` (measured costs, else none yet).
    `guard`: a tuned policy that auto chose, run under auto's switch (Guarded); auto has its own."""
    if name not in POLICIES:
        raise ValueError(f"unknown draft policy {name!r}")
    if name == "auto":
        return Auto(k, confidence, cost)
    policy = {"fixed": Fixed, "heuristic": Heuristic}[name](k, cost) if name != "confidence" \
        else Confidence(k, confidence, cost)
    return Guarded(policy) if guard else policy


def draft_cap(k: int, policy: str, chosen: bool) -> int:
    """The k a run uses: `auto` picks 0..k each round from measured costs, so unless the user or
    `specx tune` chose k it may draft up to AUTO_K_MAX (where verifying many tokens costs little more
    than one and the drafter agrees for long runs, rounds of 9-16 accepted tokens pay:
    benchmarks/results/2026-11-23-auto16); where they do not, the cost model stays short."""
    return max(k, AUTO_K_MAX) if policy == "auto" and k > 0 and not chosen else k
