"""The n-gram drafter: prompt lookup that follows the copy it makes and repeats the target's edits."""
from __future__ import annotations

from ..engine.draft import Ask, Draft, NoDrafter, upto_end
from ..engine.tree import ROOT

MAX_N = 3   # the longest suffix a lookup matches (`specx export vllm` writes it as prompt_lookup_max)


class NgramDrafter(NoDrafter):
    """Prompt lookup that follows the copy: continue where the last accepted copy left off, else the
    latest earlier occurrence of the longest matching suffix (n = max_n … 2), else of the last token.

    Copying an input with edits (rename a variable, fix a line) replaces a source token now and then;
    after the target's own token the copy resumes one source token further on (the `pointer`), even
    though the new suffix occurs nowhere before, if at least RESUME_RUN tokens of it had matched. The
    replacement is remembered (`edits`: source token → the target's): later copies make the same
    edit, so a renamed variable does not end every copy at its next use; an edit the target does not
    repeat is forgotten. Each draft names its evidence (`source`: the match length, or "resume"),
    which `--draft-policy auto` learns apart. A one-token match is weak evidence, so it drafts at
    most ONE_TOKEN_DRAFT tokens."""

    name = "ngram"
    ONE_TOKEN_DRAFT = 2
    BRANCH = 4   # tokens a tree's other branch copies at most: it differs from the main copy's evidence at once

    def __init__(self, max_n: int = MAX_N):
        self.max_n = max_n
        self.prefill([])

    def prefill(self, seq: list[int], reuse: int = 0) -> None:
        self.index: list[dict[tuple[int, ...], int]] = [{} for _ in range(self.max_n + 1)]
        self.indexed_to = 0   # n-grams ending before this position are indexed
        self.pointer = None   # where the copy being followed resumes
        self.start = None     # where this round's draft was copied from
        self.evidence: str | int = 0   # ... and why: the match length, or "resume" (past a replaced token)
        self.edits: dict[int, int] = {}   # source token → the token the target wrote in its place
        self.guessed: int | None = None   # the source token of an edit this round's resume guessed
        # each n-gram's next tokens, the latest copy of each (a tree's other continuations); built on the first
        # tree asked for, since keeping it costs about 4 µs a token that chains never use
        self.nexts: list[dict[tuple[int, ...], dict[int, int]]] | None = None
        self.branches: list[tuple[int, int, int]] = []   # a tree round's other copies: (first node, start, match)

    def _extend_index(self, seq: list[int]) -> None:
        # Index every n-gram that ends before the last token, so a lookup never finds the suffix itself.
        for end in range(self.indexed_to, len(seq) - 1):
            for n in range(1, self.max_n + 1):
                if end - n + 1 >= 0:
                    self.index[n][tuple(seq[end - n + 1:end + 1])] = end + 1
        if self.nexts is not None:
            self._index_nexts(seq, self.indexed_to)
        self.indexed_to = max(self.indexed_to, len(seq) - 1)

    def _index_nexts(self, seq: list[int], begin: int) -> None:
        """Record each n-gram ending in [begin, len(seq) − 1) with its next token (the latest copy of each)."""
        for end in range(begin, len(seq) - 1):
            for n in range(1, self.max_n + 1):
                if end - n + 1 >= 0:
                    self.nexts[n].setdefault(tuple(seq[end - n + 1:end + 1]), {})[seq[end + 1]] = end + 1

    def _source(self, seq: list[int]) -> tuple[int | None, str | int]:
        """(where to copy from, the evidence: "resume", or how many tokens before the end already
        match those before the source: a copy that has run for 12 tokens is a better bet than a
        fresh 2-token match)."""
        p = self.pointer if self.pointer is not None and 0 < self.pointer < len(seq) else None
        if p is not None and seq[p - 1] == seq[-1]:
            self.edits.pop(seq[-1], None)     # the target kept this token here: no edit to repeat
        run = _run(seq, p, edits=self.edits) if p is not None else 0
        if run:
            return p, run                     # the copy being followed goes on (making the target's edits)
        for n in range(min(self.max_n, len(seq)), 1, -1):
            start = self.index[n].get(tuple(seq[-n:]))
            if start is not None:
                return start, _run(seq, start, edits=self.edits)
        if p is not None and _run(seq, p - 1, len(seq) - 1, self.edits) >= RESUME_RUN:
            self.guessed = seq[p - 1]
            self.edits[self.guessed] = seq[-1]
            return p, "resume"                # the target replaced one token of a long copy: resume after it
        start = self.index[1].get(tuple(seq[-1:])) if seq else None
        return start, 1

    def propose(self, seq: list[int], ask: Ask) -> Draft:
        self._extend_index(seq)
        self.guessed = None
        self.start, self.evidence = self._source(seq)
        if self.start is None:
            return Draft([], None)
        n = min(ask.k, self.ONE_TOKEN_DRAFT) if self.evidence == 1 else ask.k
        copied = upto_end([self.edits.get(t, t) for t in seq[self.start:self.start + n]], ask.eos)
        self.branches = []
        if ask.tree > len(copied) and copied:
            return self._tree(seq, copied, ask)
        return Draft(copied, None, evidence_kind(self.evidence))

    def _tree(self, seq: list[int], main: list[int], ask: Ask) -> Draft:
        """The main copy and, where the context continued the matched suffix differently elsewhere, those
        continuations too (longest match first, the latest of each next token; at most BRANCH tokens each),
        as branches from the root while the tree has room (ask.tree nodes). A copy alone stays a chain."""
        if self.nexts is None:   # the first tree: index what the chains' rounds indexed so far
            self.nexts = [{} for _ in range(self.max_n + 1)]
            self._index_nexts(seq[:self.indexed_to + 1], 0)
        tokens, parents = list(main), list(range(-1, len(main) - 1))
        seen = {main[0]}
        for n in range(min(self.max_n, len(seq)), 0, -1):
            for token, start in sorted(self.nexts[n].get(tuple(seq[-n:]), {}).items(), key=lambda e: -e[1]):
                room = ask.tree - len(tokens)
                if room <= 0:
                    break
                copy = upto_end([self.edits.get(t, t) for t in seq[start:start + min(ask.k, self.BRANCH, room)]],
                                ask.eos)
                if copy[0] in seen:
                    continue
                seen.add(copy[0])
                self.branches.append((len(tokens), start, n))
                parents += [-1] + list(range(len(tokens), len(tokens) + len(copy) - 1))
                tokens += copy
        if not self.branches:
            return Draft(main, None, evidence_kind(self.evidence))
        return Draft(tokens, None, evidence_kind(self.evidence), parents=tuple(parents))

    def commit_tree(self, draft: Draft, path: list[int]) -> None:
        """Follow the copy whose branch the target accepted (the main one where it accepted nothing). The
        branches are told apart by their first nodes, the root's children after the main copy's (the loop
        may have cut the main copy: engine.tree.cut_lead)."""
        roots = draft.tree.children(ROOT)
        ends = roots[1:] + [len(draft.tokens)]
        if path and path[0] != roots[0]:
            b = roots.index(path[0]) - 1
            _, self.start, self.evidence = self.branches[b]
            self.commit(ends[b + 1] - roots[b + 1], len(path))
        else:
            self.commit(ends[0], len(path))

    def commit(self, drafted: int, accepted: int) -> None:
        # The target's own token either continues the copy or replaces source token start+accepted;
        # a resumed copy the target rejected outright was no copy: follow nothing until a match.
        if self.start is not None:
            dropped = self.evidence == "resume" and drafted and not accepted
            self.pointer = None if dropped else self.start + accepted + 1
            if dropped and self.guessed is not None:
                self.edits.pop(self.guessed, None)   # no edit after all: free prose


RUN_CAP = 16      # a match is measured back this far at most
RESUME_RUN = 3    # a copy resumes past a replaced token only if at least this much of it had matched


def _run(seq: list[int], start: int, end: int | None = None, edits: dict[int, int] | None = None) -> int:
    """How many tokens before `start` equal those before `end` (default: the end of seq), i.e. the
    match behind a copy from start; a source token the target edited matches its replacement."""
    end, edits = len(seq) if end is None else end, edits or {}
    run = 0
    while run < RUN_CAP and start - run - 1 >= 0:
        source, copied = seq[start - run - 1], seq[end - run - 1]
        if copied != source and copied != edits.get(source):
            break
        run += 1
    return run


def evidence_kind(evidence: str | int) -> str:
    """The cost model's name for a copy's evidence: "resume", or the match length in buckets 1, 2, 3,
    4 (4–7) and 8 (8 and more), each learned apart."""
    if isinstance(evidence, str):
        return evidence
    return f"match{max(b for b in (1, 2, 3, 4, 8) if evidence >= b)}"
