"""Real models (slow): with fp16 / int8 / int4 target weights, speculation still equals that target's own
greedy decoding (transformers' generate on the same packed model), and the defaults pack the drafter."""
from __future__ import annotations

import pytest
import torch

from conftest import fixture_model
from specx.models import resolve as models
from specx import load as prepare, stream
from specx.api import prompt_ids
from specx.engine.types import Round
from test_real_models import PROMPTS, check_equal_or_near_tie

pytestmark = pytest.mark.slow
NEW_TOKENS = 32   # rounds of k = 4 at every acceptance; CI's time goes mostly to transformers' generate here


@pytest.fixture(autouse=True, scope="module")
def fresh_models():
    models._LOADED.clear()   # the float32 pair of test_real_models is not needed here
    yield
    models._LOADED.clear()


@pytest.mark.parametrize("quant", ["fp16", "int8", "int4"])
def test_quantized_target_speculation_equals_its_own_generate(quant):
    pair = prepare(str(fixture_model("qwen2.5-coder-1.5b")), str(fixture_model("qwen2.5-coder-0.5b")), k=4,
                   dtype="float32", quant=quant)
    assert pair.target.weights == quant and pair.drafter.lm.weights == "int8dyn"
    model, tok = pair.target.model, pair.target.tokenizer
    report = []
    for name in ("code", "edit"):
        ids = prompt_ids(tok, PROMPTS[name])
        with torch.inference_mode():
            out = model.generate(torch.tensor([ids]), max_new_tokens=NEW_TOKENS, do_sample=False,
                                 temperature=None, top_p=None, top_k=None)
        new = out[0, len(ids):].tolist()
        reference = new[:next((i for i, t in enumerate(new) if t in pair.target.eos_ids), len(new))]
        gen = stream(pair, PROMPTS[name], max_tokens=NEW_TOKENS, draft_policy="fixed")
        got = [t for e in gen if isinstance(e, Round) for t in e.token_ids]
        assert gen.stats.accepted > 0
        check_equal_or_near_tie(model, name, ids, reference, got, report)
    print(f"{quant}: near-ties:", report or "none")
    models._LOADED.clear()
