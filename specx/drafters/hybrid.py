"""The hybrid drafter: a model drafter that copies from the context wherever it holds the continuation."""
from __future__ import annotations

from ..engine.draft import Ask, Draft, NoDrafter

from .model import ModelDrafter
from .ngram import NgramDrafter


class HybridDrafter(NoDrafter):
    """A model drafter that copies instead wherever the context already holds the continuation.

    Each round the n-gram lookup goes first: a match of MIN_MATCH tokens or more (a copy it follows
    counts its whole run) or a copy resumed past a replaced token is drafted for free; otherwise, or
    where the policy's trim leaves nothing of it (the loop then asks `instead`), the model drafts
    (shorter matches are common words in prose, which the model guesses better). The model's cache
    catches up on the copied tokens in its next forward (one pass over several tokens; after a long copy only
    its last ModelDrafter.SPLICE tokens, the rest skipped).

    `sit_out` (asked by `--draft-policy auto` before each answer): where the model would see less than
    half of what it has not read (a prompt over twice its CPU window) and reading all of it costs
    more than the policy's budget (ModelDrafter.plan), it sits the answer out and only copies: it
    would draft from a fragment (a long passage's tail, without the instruction before it), which
    lost to copying alone where shorter prompts won (benchmarks/results/2026-11-24-sitout)."""

    MIN_MATCH = 3

    def __init__(self, lookup: NgramDrafter, model: ModelDrafter):
        self.lookup, self.model = lookup, model
        self.name = f"{model.name}+ngram"
        self.max_context = model.max_context
        self.copied = False
        self.copies_only = False   # this answer: the model sits out (sit_out)
        self._sit_out = False

    @property
    def forward_s(self) -> float:
        return self.model.forward_s

    @property
    def lm(self):
        return self.model.lm

    def between(self, seq: list[int]) -> None:
        """The model drafter's work between rounds, if it has any (a self-draft's search)."""
        if hasattr(self.model, "between") and not self.copies_only:
            self.model.between(seq)

    def take_notice(self) -> str:
        """The model drafter's notice, if it has one (a self-draft's search ending)."""
        return getattr(self.model, "take_notice", str)()

    def sit_out(self, seq: list[int], reuse: int = 0, budget: float | None = None) -> str:
        """Whether the model sits the next answer out (see the class; `budget`: the seconds its prompt
        pass may cost); the sentence that says so, or ""."""
        self._sit_out = self.model.plan(seq, reuse, budget)
        return f"drafter: copies only for this answer: {self.model.too_little(seq, reuse)}" if self._sit_out else ""

    def prefill(self, seq: list[int], reuse: int = 0) -> None:
        self.copies_only, self._sit_out = self._sit_out, False
        self.lookup.prefill(seq, reuse)
        if not self.copies_only:
            self.model.prefill(seq, reuse)

    def propose(self, seq: list[int], ask: Ask) -> Draft:
        copy = self.lookup.propose(seq, ask)
        evidence = self.lookup.evidence
        self.copied = bool(copy.tokens) and (evidence == "resume" or evidence >= self.MIN_MATCH)
        if self.copied or self.copies_only:
            return copy
        return self._model_drafts(seq, ask)

    def instead(self, seq: list[int], ask: Ask) -> Draft | None:
        """The policy cut the copy to nothing: the model drafts (unless it sits this answer out)."""
        return None if self.copies_only else self._model_drafts(seq, ask)

    def _model_drafts(self, seq: list[int], ask: Ask) -> Draft:
        self.copied = False
        self.lookup.start = self.lookup.pointer = None   # no copy is being followed
        return self.model.propose(seq, ask)

    def commit_tree(self, draft: Draft, path: list[int]) -> None:
        if self.copied or self.copies_only:
            self.lookup.commit_tree(draft, path)
        else:
            self.model.commit_tree(draft, path)

    def commit(self, drafted: int, accepted: int) -> None:
        self.lookup.commit(drafted, accepted)
        if not self.copied and not self.copies_only:
            self.model.commit(drafted, accepted)
