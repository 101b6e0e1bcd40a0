"""Token trees on the real fixture GGUFs (slow tier): greedy trees give plain decoding's tokens, n-gram trees on
SmolLM2 and model-drafter trees on the Qwen pair (qwen2.5-coder-1.5b target, 0.5b drafter)."""
from __future__ import annotations

import pytest

from conftest import fixture_model

pytestmark = pytest.mark.slow

REPEATS = ("Copy this list exactly, twice: red apple, green pear, blue plum, black cherry, white grape. "
           "red apple, green pear, blue plum,")
SHORT = "Write a Python function that returns the square of a number."
TOKENS = 24


def _run(pair, drafter, prompt: str, tree: int, policy: str = "fixed", k: int = 4):
    """(tokens, rounds) of one greedy answer of TOKENS tokens."""
    from specx.api import prompt_ids
    from specx.engine.loop import Generation
    from specx.engine.types import Round, Sampling
    from specx.policy.policy import make

    ids = prompt_ids(pair.target.tokenizer, prompt)
    rounds = [e for e in Generation(pair.target, drafter, ids, k=k, max_tokens=TOKENS, sampling=Sampling(),
                                    policy=make(policy, k), tree=tree) if isinstance(e, Round)]
    return [t for r in rounds for t in r.token_ids], rounds


def _plain(pair, prompt: str) -> list[int]:
    from specx.engine.draft import NoDrafter

    return _run(pair, NoDrafter(), prompt, 0, k=0)[0]


def test_ngram_trees_equal_plain_decoding_on_smollm2():
    """A prompt that repeats a list: n-gram trees (other continuations of the matched suffix) verify in one
    masked forward and give plain decoding's tokens; some rounds verified a tree."""
    import specx

    pair = specx.load(str(fixture_model("smollm2-135m")), "ngram")
    tokens, rounds = _run(pair, pair.drafter, REPEATS, 8)
    assert tokens == _plain(pair, REPEATS)
    assert any(r.tree for r in rounds)


def test_model_drafter_trees_equal_plain_decoding_on_the_qwen_pair():
    """The 0.5B drafter branches where it doubts (fixed k, no stops), and under auto grows as its stops allow;
    the 1.5B target's greedy tokens are plain decoding's either way; the fixed run verified trees."""
    import specx

    pair = specx.load(str(fixture_model("qwen2.5-coder-1.5b")), str(fixture_model("qwen2.5-coder-0.5b")))
    plain = _plain(pair, SHORT)
    tokens, rounds = _run(pair, pair.drafter, SHORT, 8)
    assert tokens == plain and any(r.tree for r in rounds)
    assert _run(pair, pair.drafter, SHORT, -1, "auto", 16)[0] == plain
