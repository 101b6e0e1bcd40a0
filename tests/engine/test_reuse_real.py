"""Answers on a loaded pair keep what its caches hold (slow tier, the real Qwen pair: 1.5B target, 0.5B drafter
with copies, auto): the chat template's shared system prompt is not read again, and every answer's tokens are
those of the same answer from empty caches."""
from __future__ import annotations

import pytest

from conftest import fixture_model

pytestmark = pytest.mark.slow

PROMPTS = ("Write a Python function that returns the square of a number.",
           "Name three primary colours, one per line.",
           "Write a Python function that returns the cube of a number.")


def _answer(pair, prompt: str, reuse: bool):
    import specx
    from specx.engine.types import Done, Round

    tokens, stats = [], None
    for event in specx.stream(pair, prompt, max_tokens=24, reuse=reuse):
        if isinstance(event, Round):
            tokens.extend(event.token_ids)
        elif isinstance(event, Done):
            stats = event.stats
    return tokens, stats


def test_answers_keep_the_shared_prefix_and_equal_answers_from_empty_caches():
    import specx
    from specx.api import prompt_ids
    from specx.engine.types import common_prefix

    pair = specx.load(str(fixture_model("qwen2.5-coder-1.5b")), str(fixture_model("qwen2.5-coder-0.5b")) + "+ngram")
    ids = [prompt_ids(pair.target.tokenizer, p) for p in PROMPTS]
    warm = [_answer(pair, p, True) for p in PROMPTS]
    cold = [_answer(pair, p, False) for p in PROMPTS]
    assert [t for t, _ in warm] == [t for t, _ in cold]
    assert [s.reused for _, s in cold] == [0, 0, 0]
    assert warm[0][1].reused == 0
    for before, now, (_, stats) in zip(ids, ids[1:], warm[1:]):
        assert stats.reused == common_prefix(before, now) >= 20   # the system prompt at least
