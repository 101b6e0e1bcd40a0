"""How a model drafter grows a token tree (engine/tree.py) level by level: which children a node gets, which
of them stay in the tree, and whether the next level's drafter forward is worth running.

A node branches where the drafter doubts: its most likely token always, the second where the first has less
than BRANCH_BELOW of the mass, the third where the first two together have less. Greedy, the children are
those top tokens (one-hot q); sampling, the first child is drawn from q (its q row kept) and the others are
q's most likely other tokens, one-hot: each sibling's q is what it was drafted from, which is what the
sibling rejection sampling needs to keep the target's law.

Each node carries its chance of being accepted: its parent's times the first child's calibrated confidence
(Stops.chance, learnt from the drafter's first choices) or a sibling's own probability. The expected tokens
a tree wins are the sum of its nodes' chances, so growth follows the policy's Stops as a chain does:
- a level keeps its children best first (at most MAX_WIDTH, and what the tree has room for); the best one
  always (the forward that made it was paid for), any other only where its chance pays for its verify row
  (Stops.node_costs: a wider verify must pay);
- a node is grown further only where the drafter did not doubt it (Stops.min_confidence), and the next
  level's forward runs only where the best such node's chance pays for that forward of its rows and the
  next node's verify row (Stops.level_costs, node_costs; the chain's survival floor for its depth where
  those are not measured): for a chain this is the chain's own stop."""
from __future__ import annotations

import torch

from ..engine.sampling import sample, warp
from ..policy.base import Stops

BRANCH_BELOW = 0.7   # a second (third) child where the first (two) hold less than this of the drafter's mass
MAX_WIDTH = 4        # children kept per level: wider levels spend rows on guesses the drafter rates low
FLOOR = 0.02         # a child whose chance falls below this is not drafted

Child = tuple[float, int, int, "torch.Tensor | None", float]   # (chance, parent node, local id, q row or None, p)


def children(scores: torch.Tensor, parent: int, chance: float, stops: Stops, sampling, generator) -> list[Child]:
    """(V',) scores of a node's next token -> its children, first child first."""
    if sampling.greedy:
        probs = torch.softmax(scores.float(), -1)
        first, q = int(probs.argmax()), None
    else:
        probs = warp(scores[None], sampling.temperature, sampling.top_k, sampling.top_p)[0].cpu()
        first, q = int(sample(probs[None], generator)[0]), probs
    p = float(probs[first])
    out, mass = [(chance * stops.chance(p), parent, first, q, p)], p
    for token in torch.topk(probs, min(3, probs.shape[0])).indices.tolist():
        if len(out) == 3 or mass >= BRANCH_BELOW:
            break
        if token != first:
            p = float(probs[token])
            out.append((chance * p, parent, token, None, p))
            mass += p
    return out


def level(candidates: list[Child], nodes: int, room: int, stops: Stops) -> list[Child]:
    """The children a level keeps, best first: the best one, then each other whose chance pays for its verify
    row (its node number counted from `nodes` already in the tree); at most min(MAX_WIDTH, room)."""
    kept: list[Child] = []
    for c in sorted(candidates, key=lambda c: -c[0]):
        if len(kept) >= min(MAX_WIDTH, room) or c[0] < FLOOR:
            break
        cost = _at(stops.node_costs, nodes + len(kept) + 1)
        if not kept or cost is None or c[0] >= cost:
            kept.append(c)
    return kept


def growing(kept: list[Child], stops: Stops) -> list[int]:
    """Which of a level's kept children (their indices in `kept`) may be grown further: those the drafter
    did not doubt (Stops.min_confidence) whose children could still pass FLOOR."""
    return [i for i, c in enumerate(kept)
            if c[0] >= FLOOR and (stops.min_confidence is None or c[4] >= stops.min_confidence)]


def pays(chance: float, rows: int, nodes: int, depth: int, stops: Stops) -> bool:
    """Whether a drafter forward of `rows` rows is worth running for a node of this chance at this depth,
    the tree holding `nodes` nodes: its chance must cover the forward and the next node's verify row."""
    forward, row = _at(stops.level_costs, rows), _at(stops.node_costs, nodes + 1)
    floor = forward + row if forward is not None and row is not None else stops.floor(depth)
    return floor is None or chance >= floor


def _at(costs: tuple[float | None, ...] | None, n: int) -> float | None:
    """costs[n - 1]; past the end the last one holds; None where there are none."""
    return costs[min(n, len(costs)) - 1] if costs else None
