"""How a model drafter grows a token tree (engine/tree.py) level by level: which children a node gets, and
the tree-masked forward that scores the next level in one drafter pass.

A node branches where the drafter doubts: its most likely token always, the second where the first has less
than BRANCH_BELOW of the mass, the third where the first two together have less. Greedy, the children are
those top tokens (one-hot q); sampling, the first child is drawn from q (its q row kept) and the others are
q's most likely other tokens, one-hot: each sibling's q is what it was drafted from, which is what the
sibling rejection sampling needs to keep the target's law. Each level keeps the children with the highest
path probability (the product of the drafter's probabilities down to them) while the tree has room."""
from __future__ import annotations

import torch

from ..engine.sampling import sample, warp

BRANCH_BELOW = 0.7   # a second (third) child where the first (two) hold less than this of the drafter's mass
MAX_WIDTH = 4        # children kept per level: wider levels spend rows on guesses the drafter rates low
FLOOR = 0.02         # a child whose path probability falls below this is not drafted


def children(scores: torch.Tensor, weight: float, sampling, generator) -> list[tuple[float, int, torch.Tensor | None, float]]:
    """(V',) scores of a node's next token -> [(path probability, local id, q row or None (one-hot), p)]."""
    if sampling.greedy:
        probs = torch.softmax(scores.float(), -1)
        first, q = int(probs.argmax()), None
    else:
        probs = warp(scores[None], sampling.temperature, sampling.top_k, sampling.top_p)[0].cpu()
        first, q = int(sample(probs[None], generator)[0]), probs
    out = [(weight * float(probs[first]), first, q, float(probs[first]))]
    mass = float(probs[first])
    for token in torch.topk(probs, min(3, probs.shape[0])).indices.tolist():
        if len(out) == 3 or mass >= BRANCH_BELOW:
            break
        if token != first:
            out.append((weight * float(probs[token]), token, None, float(probs[token])))
            mass += float(probs[token])
    return out


def trunk(parents: list[int]) -> int:
    """How many leading nodes form a chain every later node descends from (their keys stay in the cache)."""
    for i, p in enumerate(parents):
        if p != i - 1:
            return p + 1
    return len(parents)
