"""A model drafter's token trees (ModelDrafter's `ask.tree` rounds): grown level by level as branching.py decides,
one drafter forward a level over that level's new nodes, and the accepted path kept behind the context. A mixin of
ModelDrafter: it uses its cache bookkeeping (`held`, `base`, `_splice`, `_unread`, `_logits`, `keep`, `_pad`)."""
from __future__ import annotations

import time

import torch

from ..engine.draft import Ask, Draft
from ..engine.tree import ROOT, Tree, tree_mask, tree_positions
from . import branching


def _one_hot(index: int, width: int) -> torch.Tensor:
    row = torch.zeros(width)
    row[index] = 1.0
    return row


class TreeDrafting:
    """ModelDrafter's tree rounds."""

    def _propose_tree(self, seq: list[int], ask: Ask) -> Draft:
        """A token tree of at most ask.tree nodes, ask.model_limit deep, grown level by level while the
        policy's stops say a level pays (drafters/branching.py): one drafter forward a level, over that level's
        new nodes only, each timed with its rows (Draft.levels); a node that ends the answer (Ask.eos) gets no
        children. A tree that never branched is returned as the chain it is."""
        stops, t = ask.stops, time.perf_counter()
        self._splice(seq)
        unread = self._unread(seq)
        logits, rows = self._logits(unread), len(unread)
        self.base = len(seq) - self.offset
        tokens, parents, qs, confidences, levels = [], [], [], [], []
        frontier, self.forwarded = [(ROOT, logits[0], 1.0)], 0
        for depth in range(1, ask.model_limit + 1):
            candidates = [c for node, scores, chance in frontier
                          for c in branching.children(scores, node, chance, stops, ask.sampling, ask.generator)]
            kept = branching.level(candidates, len(tokens), ask.tree - len(tokens), stops)
            levels.append((rows, time.perf_counter() - t))
            first = len(tokens)
            for _, node, local, q, p in kept:
                tokens.append(local if self.keep is None else int(self.keep[local]))
                parents.append(node)
                qs.append(q if q is not None else _one_hot(local, logits.shape[-1]))
                confidences.append(p)
            grow = [i for i in branching.growing(kept, stops)
                    if tokens[first + i] not in ask.eos]   # a node that ends the answer gets no children
            rows = len(tokens) - self.forwarded
            if (not grow or len(tokens) >= ask.tree or depth == ask.model_limit
                    or (ask.stop is not None and ask.stop.is_set())
                    or not branching.pays(kept[grow[0]][0], rows, len(tokens), depth, stops)):
                break
            t = time.perf_counter()
            scores = self._tree_forward(tokens, parents)
            frontier = [(first + i, scores[i], kept[i][0]) for i in grow]   # this level's nodes: first, first + 1, …
        probs = None if ask.sampling.greedy else self._pad(qs)
        tree = None if parents == list(range(-1, len(tokens) - 1)) else tuple(parents)
        return Draft(tokens, probs, confidences=tuple(confidences), made=len(tokens), parents=tree,
                     levels=tuple(levels))

    def _tree_forward(self, tokens: list[int], parents: list[int]) -> torch.Tensor:
        """Scores (new nodes, V') of the nodes not yet forwarded, in order: only they run, each at
        position base − 1 + its depth, seeing the context and its ancestors among the cached nodes (a mask over
        them, Decoder.forward). Node j's keys sit at cache slot base + j (commit_tree keeps the accepted path's)."""
        tree, old = Tree(tuple(tokens), tuple(parents)), self.forwarded
        mask = tree_mask(tree)[1 + old:, 1:]
        positions = tree_positions(tree, self.base - 1)[1:]
        logits = self.lm.forward(tokens[old:], positions=positions, mask=mask)
        self.held.extend(tokens[old:])
        self.forwarded = len(tokens)
        return logits if self.keep is not None else logits[:, :self.usable_vocab]

    def commit_tree(self, draft: Draft, path: list[int]) -> None:
        """Keep the accepted path's forwarded nodes behind the context (LeanLM.compact), as commit keeps a
        chain's accepted drafts but the last."""
        kept = [n for n in path if n < self.forwarded]
        self.lm.compact(self.base, [self.base + n for n in kept])
        del self.held[self.base:]
        self.held.extend(draft.tokens[n] for n in kept)
