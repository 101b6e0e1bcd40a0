"""CostModel's prices for token trees (issue 36): a tree round learnt by its rows and nodes, a drafter forward of r
rows, each further verify row's price, and how wide a tree may be for about a chain's verify. A mixin of CostModel:
it reads its measured times (`verify_s`, `verify_n`, `draft_rows_s`, `draft_step_s`) and its `verify_time`, `pace`."""
from __future__ import annotations

import math

from .fits import between as _between, ema as _ema, slope as _slope

TREE_SLACK = 0.10     # a token tree may cost this much more to verify than the chain it extends (tree_nodes)


class TreePrices:
    """CostModel's tree half."""

    def observe_tree(self, r) -> None:
        """Fold in a token tree's round (policy.base.TreeRound): its verify time is that of a forward of
        nodes + 1 rows (the mask changes what rows see, not what they cost); the drafter's forwards are
        timed by their rows (a level's forward of one row is a drafting step); acceptance is learnt as
        the chain of the tree's depth, which accepted as many tokens."""
        self._tick(r.nodes + 1, r.verify_s)
        for rows, seconds in r.levels:
            old = self.draft_rows_s.get(rows)
            self.draft_rows_s[rows] = seconds if old is None else _ema(old, seconds, self.knobs.decay)
            if rows == 1:
                self.draft_step_s = seconds if self.draft_step_s is None else _ema(self.draft_step_s, seconds,
                                                                                   self.knobs.decay)
        self._learn(r.source, r.depth, r.accepted)

    def draft_time(self, rows: int) -> float | None:
        """Seconds for a model drafter's forward of `rows` tokens while it grows a token tree: measured, else
        as verify_time interpolates; a size beyond what is measured, with one size measured, the drafting
        step's (flat: the first tree round measures it); None before any drafting step is measured."""
        times = dict(self.draft_rows_s)
        if 1 not in times and self.draft_step_s is not None:
            times[1] = self.draft_step_s
        if rows in times:
            return times[rows]
        return _between(times, rows, sorted(times)) or (max(times.values()) if times else None)

    def tree_costs(self, nodes: int, k_max: int | None = None
                   ) -> tuple[tuple[float | None, ...], tuple[float | None, ...]] | None:
        """What growing a token tree of up to `nodes` nodes costs, in plain decoding's tokens at drafting's pace
        (pace over drafts of up to k_max tokens, by default `nodes`: what a node must be accepted with the chance
        of to pay for itself): a drafter forward of r rows, r = 1..nodes (draft_time), and the n-th node's
        verify row, n = 1..nodes (a forward of n + 1 tokens against one of n: row_prices). None until plain
        decoding is measured. The survival floors price a chain this way, so a tree of one row a level stops
        where the chain does."""
        plain = self.verify_s.get(1)
        if not plain:
            return None
        unit = plain / self.pace(nodes if k_max is None else k_max)   # seconds a chance of 1 must pay for
        levels = tuple(None if (t := self.draft_time(r)) is None else t / unit for r in range(1, nodes + 1))
        rows = tuple(None if p is None else p / unit for p in self.row_prices(nodes))
        return levels, rows

    def row_prices(self, n: int) -> tuple[float | None, ...]:
        """Seconds the j-th verify row adds, j = 1..n: a forward of j + 1 tokens against one of j. Not the
        difference of those two measured times: each is kept from its own last measures, and on a shared CPU
        one slow measure priced the row into its size at 3-4× its cost and the next one below zero
        (benchmarks/results/2026-11-29-rows). The price is the slope of a line fitted, by least squares,
        through the measured forwards within fits.ROW_WINDOW of the row, each weighted by the measures behind
        its time (verify_n; one that came from disk or was refreshed after long unmeasured counts as one);
        through the two nearest where the window holds fewer than two; never below zero. Beyond the longest
        measured forward L the price falls as L / j (verify_time's logarithmic growth). None until two
        sizes are measured."""
        known = sorted(self.verify_s)
        if len(known) < 2:
            return (None,) * n
        points = [(m, self.verify_s[m], self.verify_n.get(m, 1.0)) for m in known]
        longest = known[-1]
        inside = [_slope(points, known, j + 0.5) for j in range(1, min(n, longest - 1) + 1)]
        if n < longest:
            return tuple(inside)
        return (*inside, *(inside[-1] * longest / j for j in range(longest, n + 1)))   # inside[-1]: row L-1

    def tree_nodes(self, k: int, most: int) -> int:
        """How many nodes a token tree drafted k deep may hold: the most (≤ `most`) whose verify forward
        costs at most TREE_SLACK more than the chain of k would (measured or interpolated, verify_time);
        2k (≤ `most`) until two sizes are measured. A wider verify that costs little more checks more
        guesses for the same forward (issue 36)."""
        chain = self.verify_time(k + 1)
        if chain is None:
            return min(2 * k, most)
        fits = [n for n in range(k, most + 1) if (self.verify_time(n + 1) or math.inf) <= chain * (1 + TREE_SLACK)]
        return max(fits, default=k)
