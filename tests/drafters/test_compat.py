"""Drafter compatibility is decided on tokenizers: near misses are refused, naming the difference."""
from __future__ import annotations

import pytest

from conftest import word_tokenizer
from specx.drafters.compat import check_drafter
from specx.errors import IncompatibleDrafter


def renamed(index: int, new: str, vocab: int = 96):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = {f"w{i}": i for i in range(vocab)}
    words = {(new if i == index else w): i for w, i in words.items()}
    tok = Tokenizer(models.WordLevel(words, unk_token="w0"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="w0", eos_token="w1")


def test_identical_tokenizers_pass():
    """Same ids, same texts, same specials: compatible."""
    check_drafter(word_tokenizer(), word_tokenizer(), frozenset({1}), frozenset({1}))


@pytest.mark.parametrize("drafter, eos, expected", [
    (lambda: renamed(42, "wX"), {1}, "token 42 differs"),
    (lambda: word_tokenizer(vocab=97), {1}, "97 tokens"),
    (lambda: word_tokenizer(eos=2), {2}, "eos token id differs"),
    (lambda: word_tokenizer(), {1, 3}, "end-of-sequence ids differ"),
])
def test_near_miss_tokenizers_are_refused(drafter, eos, expected):
    """One renamed token, one extra token, another EOS token, another EOS set: refused with the reason."""
    with pytest.raises(IncompatibleDrafter, match=expected) as info:
        check_drafter(word_tokenizer(), drafter(), frozenset({1}), frozenset(eos))
    assert info.value.exit_code == 3 and "ngram" in info.value.hint


@pytest.mark.parametrize("draft_quant", ["auto", "int8dyn"])   # specx's decoder; transformers' model (int8dyn)
def test_a_gguf_drafter_of_the_targets_vocabulary_is_given_the_targets_tokenizer(tmp_path, draft_quant):
    """A drafter whose file holds the target's vocabulary builds no tokenizer of its own: it holds the target's (a
    second one cost 70 MiB beside the fixture 1.5B, benchmarks/results/2026-11-29-plan-pair); a drafter of another
    model type, whose files' vocabularies are not known to be one, builds its own."""
    import specx
    from test_decoder_gguf import gguf_model, write_gguf

    for name, family in (("t", "llama"), ("same", "llama"), ("other", "qwen2")):
        write_gguf(gguf_model(family), family, tmp_path / f"{name}.gguf")
    for name, shared in (("same", True), ("other", False)):
        pair = specx.load(str(tmp_path / "t.gguf"), str(tmp_path / f"{name}.gguf"), draft_quant=draft_quant)
        assert ("lean decoder" in pair.drafter.lm.kernels) is (draft_quant == "auto")
        assert (pair.drafter.lm.tokenizer is pair.target.tokenizer) is shared
        assert pair.drafter.lm.tokenizer("ab a b")["input_ids"] == pair.target.tokenizer("ab a b")["input_ids"]
