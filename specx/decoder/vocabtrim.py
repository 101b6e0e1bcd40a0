"""VocabTrim: the drafter scores only the most frequent tokens and the context's; the target still verifies
over all.

A drafter's output layer is a large share of its cost: Qwen2.5-0.5B reads 136M of its 494M weights
in the 151,936-row output layer for every drafted token. Drafting over the first N ids (byte-level
BPE and SentencePiece vocabularies are ordered by merge rank or score, so low ids are the frequent
ones) plus the special tokens cuts that share by the ratio N / V. Output stays exact: a token outside
the kept set can still be produced by the target (as the correction after a rejected draft); the
drafter just never proposes it, and its draft distribution is zero there, which verification handles.

On the lean decoder (DraftHead) the kept set also holds every id of the answer's context (prompt and
tokens so far), added as they appear: what a model writes next is often already in its context (Qwen's
code fence, id 73,594, is outside the first 32,768 ids; drafting without it made code answers slower,
benchmarks/results/2026-11-23-auto16). transformers' drafters (trim_output_layer) keep the first ids only.

It is on by default for lean drafters (model drafters and self-drafts): on the fixtures it made a drafted
token 14–18% cheaper and answers about 2% faster, the target's output unchanged
(benchmarks/results/2026-11-26-vocabtrim). `--draft-vocab 0` keeps every row.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

DEFAULT_KEEP = 32_768          # rows a lean drafter keeps by default: with the context's ids they cover ~97% of
                               # the fixture targets' greedy tokens; drafts 2% faster overall (see below)
MIN_VOCAB_TO_TRIM = 3 * 16_384  # ... from vocabularies this large, keeping at most a third of them (SmolLM2's
                               # 49,152 → 16,384): a smaller share would miss more than the head saves


def choose_keep(requested: int | None, vocab: int, lean: bool = True) -> int:
    """How many rows to keep: the request (0 = all); else, on the lean decoder (which adds the context's ids,
    DraftHead), DEFAULT_KEEP or a third of a smaller vocabulary, none below MIN_VOCAB_TO_TRIM; transformers'
    drafters keep all unless asked."""
    if requested is None:
        return min(DEFAULT_KEEP, vocab // 3) if lean and vocab >= MIN_VOCAB_TO_TRIM else 0
    return 0 if requested <= 0 or requested >= vocab else requested


def keep_ids(tokenizer, usable: int, keep: int) -> torch.Tensor:
    """Sorted ids the drafter may propose: the first `keep` ids plus every special/added token."""
    special = {int(i) for i in getattr(tokenizer, "all_special_ids", []) or []}
    special |= {int(i) for i in getattr(tokenizer, "added_tokens_decoder", {}) or {}}
    ids = set(range(min(keep, usable))) | {i for i in special if i < usable}
    return torch.tensor(sorted(ids), dtype=torch.long)


class DraftHead:
    """A lean drafter's output layer over the ids it may propose: `base` (keep_ids, its rows copied once)
    and the context's other ids (`follow`), their rows taken from the full layer as they appear. `ids[j]`
    is the token of logit column j; the columns only ever grow within an answer (a round's draft
    probabilities keep their meaning), and `restart` sets them back to `base` + a new answer's context."""

    def __init__(self, full, base: torch.Tensor, usable: int):
        from .linear import take_rows

        self.full, self.usable, self.base = full, usable, base
        self.static = take_rows(full, base.tolist())
        self._base_set = frozenset(base.tolist())
        self.restart(())

    def restart(self, context: Sequence[int]) -> None:
        """Forget the previous answer's ids; keep `base` and the ids of `context`."""
        self.extra_ids: list[int] = []
        self.known = set(self._base_set)
        self.extra, self.ids, self.seen = None, self.base, 0
        self.follow(context)

    def follow(self, seq: Sequence[int]) -> None:
        """Add the ids of seq beyond what it has seen (seq[self.seen:]) that it cannot propose yet."""
        new = [t for t in dict.fromkeys(seq[self.seen:]) if 0 <= t < self.usable and t not in self.known]
        self.seen = len(seq)
        if not new:
            return
        from .linear import take_rows

        self.known.update(new)
        self.extra_ids.extend(new)
        self.extra = take_rows(self.full, self.extra_ids)
        self.ids = torch.cat([self.base, torch.tensor(self.extra_ids, dtype=torch.long)])

    def weights(self) -> list:
        """The QWeights whose rows are the logit columns, in order (decoder.forward's `head`)."""
        return [self.static] if self.extra is None else [self.static, self.extra]


def trim_output_layer(model, ids: torch.Tensor) -> None:
    """Replace the model's output layer by one holding only the rows `ids` (before any packing)."""
    head = model.get_output_embeddings()
    trimmed = torch.nn.Linear(head.in_features, len(ids), bias=head.bias is not None,
                              dtype=head.weight.dtype, device=head.weight.device)
    with torch.no_grad():
        trimmed.weight.copy_(head.weight[ids])
        if head.bias is not None:
            trimmed.bias.copy_(head.bias[ids])
    model.config.tie_word_embeddings = False   # the embedding keeps every row; only the head shrinks
    model.set_output_embeddings(trimmed)


def describe(ids: torch.Tensor | None, vocab: int, context: bool = False) -> str:
    if ids is None:
        return ""
    also = " and the context's" if context else ""
    return f"drafts over {len(ids):,} of {vocab:,} tokens{also} (VocabTrim)"


def rows(lm) -> str:
    """The kept rows a drafter starts each answer from, for keys that must not change with the context."""
    head = getattr(lm, "head", None)
    keep = head.base if head is not None else getattr(lm, "keep_ids", None)
    return "all" if keep is None else str(len(keep))
