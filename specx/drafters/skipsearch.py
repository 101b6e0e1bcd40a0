"""Which layers a self-draft leaves out, and in which activation mode it runs: searched on the fly.

SWIFT (arXiv 2410.06916) in miniature: start from a cheap guess (every other layer of the middle half left
out; never the first or last layers, which hold the embedding's and the output layer's interface), then try
one neighbour at a time (one layer more or less left out, or the other activation mode) and keep it where
it raises the expected speedup. A candidate is scored without generating: teacher-forced over the last
context tokens (how often its argmax equals the next token: greedy acceptance per token, `alpha`), at its
measured cost per token relative to the full model (`cost`). Pure logic here; the forwards are
drafters/self.py's."""
from __future__ import annotations

import random
from dataclasses import dataclass, field

MAX_K = 8            # the longest chain the score considers (the engine's policies rarely draft more)
# What verifying one more row costs, as a share of a one-row forward, until the search has measured it on the
# model it drafts for (Search.slope): 0.08–0.16 on the fixture models on a 2-core AVX-512 CPU with the layers on
# 2 MiB pages (benchmarks/results/2026-11-27-five-rows); verify time grows about linearly in the rows.
VERIFY_SLOPE = 0.1
ACTIVATIONS = {"q8": "int8", "f32": "float32"}   # the lean decoder's modes in words (the dense decoder's are dtypes)


@dataclass(frozen=True)
class Shape:
    """How the target drafts for itself: the layers it leaves out and its linear kernels' mode."""

    skip: tuple[int, ...] = ()
    mode: str = "f32"

    def describe(self, layers: int) -> str:
        kept = f"{layers - len(self.skip)} of its {layers} layers"
        left = f" (leaving out {_ranges(self.skip)})" if self.skip else ""
        return kept + left + f", {ACTIVATIONS.get(self.mode, self.mode)} activations"

    def as_dict(self) -> dict:
        return {"skip": list(self.skip), "mode": self.mode}

    @classmethod
    def from_dict(cls, data: dict, layers: int, modes: tuple[str, ...]) -> "Shape":
        """ValueError for a stored shape that does not fit this model (a foreign or hand-edited entry)."""
        skip, mode = data.get("skip"), data.get("mode")
        if not isinstance(skip, list) or not all(isinstance(i, int) and 0 < i < layers - 1 for i in skip):
            raise ValueError(f"skip {skip!r} does not fit {layers} layers")
        if mode not in modes:
            raise ValueError(f"mode {mode!r} is not one of {modes}")
        return cls(tuple(sorted(set(skip))), mode)


def first_guess(layers: int, mode: str = "f32") -> Shape:
    """Every other layer of the middle half left out (a quarter of the layers), in the target's own mode."""
    return Shape(tuple(range(max(1, layers // 4), min(layers - 1, 3 * layers // 4), 2)), mode)


def expected_speedup(alpha: float, cost: float, max_k: int = MAX_K, slope: float = VERIFY_SLOPE) -> tuple[float, int]:
    """(tokens per unit of time against plain decoding, the chain length k >= 1 giving it) for a drafter
    whose tokens the target accepts with probability `alpha` each, a drafted token costing `cost` plain
    steps: a round gives 1 + alpha + … + alpha^k tokens for k·cost + (1 + slope·k) steps. Below 1
    where drafting does not pay (the draft policy then drafts less or not at all); still ordered, so the
    search climbs toward the best shape there too."""
    best = (0.0, 1)
    for k in range(1, max_k + 1):
        tokens = sum(alpha ** i for i in range(k + 1))
        best = max(best, (tokens / (k * cost + 1 + slope * k), k))
    return best


@dataclass
class Search:
    """Hill-climbing over shapes: `next` names the shape to score (the current one first), `record` keeps
    it if it scores better. Done once every neighbour of the current shape scored no better."""

    layers: int
    modes: tuple[str, ...] = ("f32",)   # the target's own mode first
    shape: Shape = None
    seed: int = 0
    score: float | None = None          # the current shape's expected speedup (None: not scored yet)
    alpha: float = 0.0
    cost: float = 1.0
    tried: set = field(default_factory=set)
    scores: dict = field(default_factory=dict)   # each scored shape's (alpha, cost), the last scoring's
    scored: int = 0                     # candidates scored so far
    done: bool = False
    slope: float = VERIFY_SLOPE         # a verified row's cost over a one-row forward: measured by `record`

    def __post_init__(self):
        self.shape = self.shape or first_guess(self.layers, self.modes[0])
        self._queue: list[Shape] = []

    def next(self) -> Shape | None:
        """The next shape to score, or None when the search is done."""
        if self.done:
            return None
        if self.score is None:
            return self.shape
        if not self._queue:
            self._queue = [s for s in self.neighbours(self.shape) if s not in self.tried]
            random.Random(self.seed + self.scored).shuffle(self._queue)
        if not self._queue:
            self.done = True
            return None
        return self._queue.pop()

    def neighbours(self, shape: Shape) -> list[Shape]:
        """One layer (never the first or last) more or less left out, or the other mode."""
        flips = [Shape(tuple(sorted(set(shape.skip) ^ {i})), shape.mode) for i in range(1, self.layers - 1)]
        return flips + [Shape(shape.skip, m) for m in self.modes if m != shape.mode]

    def record(self, shape: Shape, alpha: float, cost: float, slope: float | None = None) -> bool:
        """Keep `shape` where it beats the current one (the current one's score is replaced: a fresh
        measurement of the same shape). A measured `slope` replaces the one held, and the current shape's
        score is recomputed with it, so that both sides of the comparison price verification alike. True
        when the shape changed."""
        self.tried.add(shape)
        self.scored += 1
        self.scores[shape] = (alpha, cost)
        if slope is not None:
            self.slope = slope
            if self.score is not None:
                self.score = expected_speedup(self.alpha, self.cost, slope=slope)[0]
        score = expected_speedup(alpha, cost, slope=self.slope)[0]
        if shape == self.shape or self.score is None or score > self.score:
            changed = shape != self.shape
            self.shape, self.score, self.alpha, self.cost = shape, score, alpha, cost
            if changed:
                self._queue = []
            return changed
        return False

    def explain(self) -> str:
        """The choice in one sentence."""
        k = expected_speedup(self.alpha, self.cost, slope=self.slope)[1]
        state = "searched" if self.done else "searching"
        return (f"self-draft: {self.shape.describe(self.layers)}; teacher-forced acceptance {self.alpha:.2f} per token "
                f"at {self.cost:.2f}× a full step's cost, expected {self.score or 0.0:.2f}× plain decoding at k={k} "
                f"with each verified row costing {self.slope:.2f} of a step "
                f"({state}: {self.scored} shape{'s' * (self.scored != 1)} scored)")


def _ranges(indices: tuple[int, ...]) -> str:
    """(3, 5, 7, 8, 9) → "layers 3, 5, 7–9"."""
    parts, run = [], []
    for i in indices:
        if run and i != run[-1] + 1:
            parts.append(run)
            run = []
        run.append(i)
    parts += [run] if run else []
    words = [str(r[0]) if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in parts]
    return f"layer{'s' * (len(indices) > 1)} {', '.join(words)}"
