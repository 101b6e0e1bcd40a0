"""What a drafter proposes (`Draft`), what the loop asks of it each round (`Ask`), and the drafter that
proposes nothing (`NoDrafter`: plain decoding through the same loop). Every drafter follows NoDrafter's
protocol: prefill, propose (and `instead`, where the policy cut a copy to nothing), commit."""
from __future__ import annotations

from dataclasses import dataclass, field
from threading import Event

import torch

from ..policy.base import NO_STOPS, Stops
from .types import Sampling


@dataclass(frozen=True)
class Draft:
    tokens: list[int]
    probs: torch.Tensor | None  # (k, V_target); None for a deterministic drafter (one-hot q)
    source: str = "model"       # a model's draft, or a free copy from the context and its evidence
                                # ("match3", "match8", "resume", …): the auto policy learns each apart
    confidences: tuple[float, ...] = ()   # a model drafter's probability of each drafted token
    made: int | None = None     # tokens a model drafter produced (the policy may send fewer: Policy.trim)
    parents: tuple[int, ...] | None = None   # a token tree (engine/tree.py): each token's parent; None: a chain
    levels: tuple[tuple[int, float], ...] = ()   # a model drafter's tree: its forwards, (rows, seconds) each
    read_s: float = 0.0         # seconds a model drafter spent reading tokens it had not seen, beyond a step's

    @property
    def lookup(self) -> bool:
        return self.source != "model"

    @property
    def tree(self):
        """The draft as an engine.tree.Tree, or None for a chain."""
        from .tree import Tree

        return None if self.parents is None else Tree(tuple(self.tokens), self.parents)


@dataclass(frozen=True)
class Ask:
    """What the loop asks of a drafter this round: plain data, no callables."""

    k: int                                  # the most tokens a draft may have (a copy from the context)
    sampling: Sampling = field(default_factory=Sampling)
    generator: torch.Generator | None = None
    stop: Event | None = None               # set: end the draft now (Ctrl-C)
    model_k: int | None = None              # the most a model drafter may draft (None: k)
    stops: Stops = NO_STOPS                 # where a model drafter ends its draft early (the policy's numbers)
    tree: int = 0                           # > 0: the draft may be a token tree of at most this many nodes
    eos: frozenset[int] = frozenset()       # tokens that end the answer: a draft stops at one (nothing after it
                                            # is ever kept, engine/loop.py's _finish)

    @property
    def model_limit(self) -> int:
        return self.k if self.model_k is None else min(self.k, self.model_k)


def upto_end(tokens: list[int], eos: frozenset[int]) -> list[int]:
    """`tokens` up to and including the first that ends the answer (the target verifies nothing after it)."""
    return next((tokens[:i + 1] for i, t in enumerate(tokens) if t in eos), tokens)


class NoDrafter:
    """Plain decoding through the same loop: proposes nothing."""

    name = "none"
    max_context = 1 << 62
    forward_s = 0.0   # seconds in model forwards (model drafters)

    def prefill(self, seq: list[int], reuse: int = 0) -> None:
        pass

    def propose(self, seq: list[int], ask: Ask) -> Draft:
        return Draft([], None)

    def instead(self, seq: list[int], ask: Ask) -> Draft | None:
        """Another draft for this round, asked where the policy cut this drafter's copy to nothing
        (a hybrid's model drafts then); None: it has none."""
        return None

    def commit(self, drafted: int, accepted: int) -> None:
        pass

    def commit_tree(self, draft: Draft, path: list[int]) -> None:
        """After a tree draft: the target accepted the nodes `path` (root to leaf). Only drafters that
        propose trees are asked; a chain's commit is `commit`."""
        raise NotImplementedError
