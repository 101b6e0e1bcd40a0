"""Drafter compatibility, checked on tokenizers before any weights are loaded."""
from __future__ import annotations

from ..errors import IncompatibleDrafter


def _vocab(tok) -> list[str]:
    return tok.convert_ids_to_tokens(list(range(len(tok))))


def _special_ids(tok) -> dict[str, int]:
    ids = {name: getattr(tok, f"{name}_token_id", None) for name in ("bos", "eos", "pad", "unk")}
    return {k: v for k, v in ids.items() if v is not None}


def check_drafter(target_tok, draft_tok, target_eos: frozenset[int], draft_eos: frozenset[int]) -> None:
    """Raise IncompatibleDrafter naming the first difference; padding rows past the tokenizers are fine."""
    t_vocab, d_vocab = _vocab(target_tok), _vocab(draft_tok)
    if len(t_vocab) != len(d_vocab):
        raise IncompatibleDrafter(
            f"drafter tokenizer has {len(d_vocab)} tokens, the target's has {len(t_vocab)}")
    for i, (a, b) in enumerate(zip(t_vocab, d_vocab)):
        if a != b:
            raise IncompatibleDrafter(f"token {i} differs: target {a!r}, drafter {b!r}")
    t_special, d_special = _special_ids(target_tok), _special_ids(draft_tok)
    for name in sorted(set(t_special) | set(d_special)):
        if t_special.get(name) != d_special.get(name):
            raise IncompatibleDrafter(
                f"{name} token id differs: target {t_special.get(name)}, drafter {d_special.get(name)}")
    t_added = {int(i): str(t) for i, t in target_tok.added_tokens_decoder.items()}
    d_added = {int(i): str(t) for i, t in draft_tok.added_tokens_decoder.items()}
    if t_added != d_added:
        first = min(set(t_added.items()) ^ set(d_added.items()))
        raise IncompatibleDrafter(f"special token {first[0]} ({first[1]!r}) is not the same in both tokenizers")
    if target_eos != draft_eos:
        raise IncompatibleDrafter(
            f"end-of-sequence ids differ: target {sorted(target_eos)}, drafter {sorted(draft_eos)}")
