"""The lean decoder on the real fixture GGUFs (slow tier): its greedy tokens are transformers' greedy tokens on
the same file (dequantized to float32), and its rows are bit-identical whatever the batch size."""
from __future__ import annotations

import gc

import pytest
import torch

from conftest import fixture_model
from specx.decoder.lm import load
from specx.api import prompt_ids

pytestmark = pytest.mark.slow

FIXTURES = ["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"]
PROMPTS = [
    "Write a Python function that checks whether a string is a palindrome, with a docstring.",
    "What are three good habits for writing maintainable software? Answer briefly.",
    "Summarise in one sentence: speculative decoding lets a small model propose tokens a large model verifies.",
    "A train travels 120 km in 1.5 hours. What is its average speed in km/h? Show the steps.",
    "Rename the variable `x` to `count`:\ndef tally(items):\n    x = 0\n    for i in items:\n        x += i\n"
    "    return x\n",
]
NEW_TOKENS = 48
NEAR_TIE = 1e-3   # float32 implementations may pick differently only where the top two logits are this close


def reference_model(path):
    """transformers' model of the GGUF, from specx's float32 copy (CI builds it once for other tests)."""
    from transformers import AutoModelForCausalLM

    from specx.models.store import converted_copy

    return AutoModelForCausalLM.from_pretrained(converted_copy(path, "float32"), dtype=torch.float32).eval()


def greedy(lm, prompt: list[int]) -> list[int]:
    lm.reset()
    logits, out = lm.forward(prompt, last_only=True), []
    while len(out) < NEW_TOKENS:
        token = int(logits[-1].argmax())
        if token in lm.eos_ids:
            break
        out.append(token)
        logits = lm.forward([token])
    return out


def relative_gap(model, prefix: list[int]) -> float:
    with torch.inference_mode():
        top = torch.topk(model(torch.tensor([prefix])).logits[0, -1].double(), 2).values
    return float((top[0] - top[1]) / top[0].abs())


@pytest.mark.parametrize("name", FIXTURES)
def test_greedy_tokens_equal_transformers_generate(name):
    """5 prompts × 48 tokens: the tokens equal transformers' generate(do_sample=False) on the file's float32
    model; a first difference is allowed only where the reference's top two logits are within 1e-3 relative."""
    path = fixture_model(name)
    lm = load(path)
    tokenizer, eos = lm.tokenizer, lm.eos_ids
    ours = {p: greedy(lm, prompt_ids(tokenizer, p)) for p in PROMPTS}
    del lm   # the reference's float32 weights take the room
    gc.collect()
    model, failures = reference_model(path), []
    for p, got in ours.items():
        ids = prompt_ids(tokenizer, p)
        with torch.inference_mode():
            gen = model.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS, do_sample=False, temperature=None,
                                 top_p=None, top_k=None)[0, len(ids):].tolist()
        want = next((gen[:i] for i, t in enumerate(gen) if t in eos), gen)
        if got == want:
            continue
        first = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        gap = relative_gap(model, ids + want[:first])
        print(f"{name} {p[:30]!r}: first difference at token {first}, reference top-2 gap {gap:.1e}")
        if gap >= NEAR_TIE:
            failures.append(f"{p[:30]!r}: token {first} differs, reference top-2 gap {gap:.1e}")
    assert not failures, failures


def test_rows_are_bit_identical_on_a_real_model():
    """SmolLM2's GGUF: the logits of 16 positions are the same bits decoded one by one or verified k at a time."""
    lm = load(fixture_model("smollm2-135m"))
    tokens = prompt_ids(lm.tokenizer, PROMPTS[0])[:40]
    lm.forward(tokens[:24])
    alone = torch.cat([lm.forward([t]) for t in tokens[24:40]])
    for k in (2, 3, 5, 8, 16):
        lm.crop(24)
        assert torch.equal(torch.cat([lm.forward(tokens[i:i + k]) for i in range(24, 40, k)]), alone), k
