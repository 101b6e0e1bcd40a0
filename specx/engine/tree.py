"""Token trees: several drafted continuations sharing prefixes, verified in one target forward.

A tree is plain data: its nodes' tokens in slot order and each node's parent (ROOT: the last committed
token, which the verify forward feeds as its row 0; node i is row i + 1). Parents come before their
children, so a node's ancestors sit in earlier rows. The verify forward sees the tree through `mask`
(which earlier rows each row sees: its ancestors) and `positions` (the cache length plus its depth), so
each path's rows are computed as that path alone would be (decoder/model.py: bit for bit on the CPU).

Verification walks from the root. Greedy: the child carrying the target's argmax at the current row is
accepted, and so on down. Sampled: multi-draft rejection sampling over the siblings (SpecInfer; SpecTr's
recursive rejection sampling): each child in turn is accepted with probability min(1, p(x)/q(x)); on a
rejection p becomes norm(max(p − q, 0)) and the next sibling is tried; when none is left the next token
is drawn from p. A deterministic child (a copy, or a model's extra top-k sibling) has a one-hot q. Each
step is the chain's speculative sampling step, which returns exactly the law it is given whatever q is,
so the output follows the target's law exactly. A tree whose nodes each have one child is a chain: its
verification is the chain's (engine/verify.py), coin for coin.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from .sampling import greedy, sample
from .verify import accept_probability, residual

ROOT = -1   # the parent of a first-level node: the last committed token (verify row 0)


@dataclass(frozen=True)
class Tree:
    """Drafted tokens in slot order and each one's parent index (ROOT, or an earlier node)."""

    tokens: tuple[int, ...]
    parents: tuple[int, ...]

    def __post_init__(self):
        if len(self.tokens) != len(self.parents):
            raise ValueError("a tree needs one parent per token")
        if any(not ROOT <= p < i for i, p in enumerate(self.parents)):
            raise ValueError("each node's parent must come before it")

    @classmethod
    def chain(cls, tokens) -> "Tree":
        return cls(tuple(tokens), tuple(range(-1, len(tokens) - 1)))

    @property
    def depths(self) -> list[int]:
        """Each node's depth (a first-level node: 1)."""
        d: list[int] = []
        for p in self.parents:
            d.append(1 if p == ROOT else d[p] + 1)
        return d

    @property
    def depth(self) -> int:
        return max(self.depths, default=0)

    def children(self, node: int) -> list[int]:
        """The children of `node` (ROOT for the first level), in slot order."""
        return [i for i, p in enumerate(self.parents) if p == node]

    def path(self, node: int) -> list[int]:
        """The nodes from the first level down to `node` (inclusive); [] for ROOT."""
        out = []
        while node != ROOT:
            out.append(node)
            node = self.parents[node]
        return out[::-1]

    def is_chain(self) -> bool:
        return all(p == i - 1 for i, p in enumerate(self.parents))


def tree_mask(tree: Tree) -> torch.Tensor:
    """(n+1, n+1) bool over the verify rows (row 0 the root): row r sees itself, the root and its ancestors."""
    n = len(tree.tokens)
    mask = torch.zeros(n + 1, n + 1, dtype=torch.bool)
    mask[:, 0] = True
    for i in range(n):
        mask[i + 1, [a + 1 for a in tree.path(i)]] = True
    return mask


def tree_positions(tree: Tree, start: int) -> torch.Tensor:
    """(n+1,) int64 rotary positions of the verify rows: the root at `start`, a node at start + its depth."""
    return torch.tensor([start] + [start + d for d in tree.depths], dtype=torch.int64)


def verify_tree_greedy(logits: torch.Tensor, tree: Tree) -> tuple[list[int], int]:
    """(n+1, V) target logits over the verify rows -> (the accepted path's nodes, the next token)."""
    choice = greedy(logits).cpu().tolist()
    path, node = [], ROOT
    while True:
        want = choice[node + 1]
        nxt = next((c for c in tree.children(node) if tree.tokens[c] == want), None)
        if nxt is None:
            return path, want
        path.append(nxt)
        node = nxt


def verify_tree_sampled(target_probs: torch.Tensor, tree: Tree, draft_probs: torch.Tensor | None,
                        generator: torch.Generator | None) -> tuple[list[int], int]:
    """(n+1, V) target probabilities, (n, V) draft probabilities (None: every node one-hot) -> (path, next).
    One coin per node, drawn up front in slot order (as the chain draws one per position)."""
    coins = torch.rand(len(tree.tokens), generator=generator, dtype=torch.float64)
    path, node = [], ROOT
    while True:
        p = target_probs[node + 1]
        for child in tree.children(node):
            token = tree.tokens[child]
            q = None if draft_probs is None else draft_probs[child]
            if coins[child] < accept_probability(p, q, token):
                path.append(child)
                node = child
                break
            p = residual(p, q, token)
        else:
            return path, int(sample(p.unsqueeze(0), generator)[0])


def judged(draft, path: list[int]) -> tuple[tuple[float, ...], int]:
    """What a model drafter's tree tells its calibration (the acceptance of the drafter's first choices by
    confidence): the probabilities of the first children (slot order: the drafter's likeliest) down the accepted
    path while it runs through them, then of the next first child if the walk left it, and how many of those
    were accepted; ((), 0) without probabilities. For a chain: its confidences[:accepted + 1] and accepted."""
    if len(draft.confidences) != len(draft.tokens):
        return (), 0
    tree, node, out = draft.tree, ROOT, []
    for step in range(len(path) + 1):
        first = tree.children(node)[:1]
        if not first:
            break
        out.append(draft.confidences[first[0]])
        if step == len(path) or path[step] != first[0]:
            return tuple(out), len(out) - 1
        node = first[0]
    return tuple(out), len(out)


def lead(parents) -> int:
    """How many leading nodes form one chain from the root (an n-gram tree's main copy)."""
    return next((i for i, p in enumerate(parents) if p != i - 1), len(parents))


def cut_lead(draft, keep: int):
    """A deterministic tree draft whose leading chain is cut to its first `keep` nodes; every other node (the
    branches from the root) stays, renumbered."""
    m = lead(draft.parents)
    drop = m - keep
    if drop <= 0:
        return draft
    parents = list(draft.parents[:keep]) + [p if p < m else p - drop for p in draft.parents[m:]]
    return replace(draft, tokens=draft.tokens[:keep] + draft.tokens[m:], parents=tuple(parents))
