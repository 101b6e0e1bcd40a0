"""The lean decoder (specx/decoder) on tiny random models of each family, saved as safetensors folders:
equal to transformers' own model within float noise, and bit-identical rows whatever the batch or threads."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from conftest import word_tokenizer
from specx.decoder import config as configs
from specx.decoder.lm import LeanLM, load
from specx.decoder.model import ContextFull, Decoder

VOCAB, SEQ = 96, 40
FAMILIES = ["llama", "llama3-rope", "mistral", "qwen2", "qwen2-tied", "qwen3", "gemma3"]


def hf_config(family: str):
    """A tiny config of the family with its particular features switched on (biases, q/k norms, windows…)."""
    from transformers import Gemma3TextConfig, LlamaConfig, MistralConfig, Qwen2Config, Qwen3Config

    common = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=3, num_attention_heads=4,
                  num_key_value_heads=2, max_position_embeddings=128, rms_norm_eps=1e-5, eos_token_id=1,
                  bos_token_id=0, pad_token_id=0, tie_word_embeddings=False)
    if family == "llama3-rope":
        return LlamaConfig(**common, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                   "high_freq_factor": 4.0, "original_max_position_embeddings": 64})
    if family == "gemma3":
        return Gemma3TextConfig(**{**common, "num_hidden_layers": 4}, head_dim=32, query_pre_attn_scalar=24,
                                sliding_window=6, rope_scaling={"rope_type": "linear", "factor": 2.0},
                                layer_types=["sliding_attention", "full_attention", "sliding_attention",
                                             "sliding_attention"])
    if family == "qwen2-tied":
        return Qwen2Config(**{**common, "tie_word_embeddings": True})
    cls = {"llama": LlamaConfig, "mistral": MistralConfig, "qwen2": Qwen2Config, "qwen3": Qwen3Config}[family]
    extra = {"mistral": {"sliding_window": 6}, "qwen3": {"head_dim": 32}}.get(family, {})
    return cls(**common, **extra)


def hf_model(family: str, seed: int = 0):
    """A float32 transformers model with weights large enough for sharp attention and logits (random norms,
    which Gemma initialises to zero)."""
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(hf_config(family), dtype=torch.float32).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(torch.randn_like(p) * 0.3 + (0.0 if family == "gemma3" else 1.0))
            elif p.dim() == 2:
                p.normal_(0.0, 1.5 / p.shape[1] ** 0.5)
            else:
                p.normal_(0.0, 0.3)
    return model


def save(model, folder):
    """The model as a Hugging Face folder: config, safetensors weights, tokenizer."""
    model.save_pretrained(folder, safe_serialization=True)
    word_tokenizer(VOCAB).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module", params=FAMILIES)
def pair(request, tmp_path_factory):
    """(transformers model, LeanLM loaded from its saved folder, the family)."""
    model = hf_model(request.param)
    folder = save(model, tmp_path_factory.mktemp(request.param))
    return model, load(folder), request.param


def ids(seed: int = 0, n: int = SEQ) -> list[int]:
    return torch.randint(2, VOCAB, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def reference(model, tokens: list[int]) -> torch.Tensor:
    with torch.inference_mode():
        return model(torch.tensor([tokens])).logits[0]


def near(got: torch.Tensor, want: torch.Tensor):
    torch.testing.assert_close(got, want, rtol=0, atol=5e-5 * float(want.abs().max()))


def test_prefill_matches_transformers(pair):
    """One forward over a whole sequence: every position's logits within float noise of transformers'."""
    model, lm, _ = pair
    lm.reset()
    near(lm.forward(ids()), reference(model, ids()))


def test_cached_decode_and_crop_match_transformers(pair):
    """Prefill, then decode token by token, then crop back and feed chunks again: every position matches
    transformers' forward over the whole sequence (sliding windows and the cache included)."""
    model, lm, _ = pair
    tokens, want = ids(1), reference(model, ids(1))
    lm.reset()
    got = [lm.forward(tokens[:20])] + [lm.forward([t]) for t in tokens[20:]]
    near(torch.cat(got), want)
    lm.crop(25)
    assert lm.cached == 25
    near(torch.cat([lm.forward(tokens[i:i + 5]) for i in range(25, SEQ, 5)]), want[25:])


def test_rows_are_bit_identical_across_batch_sizes_and_threads(pair):
    """A position's logits are the same bits decoded alone or verified among k = 2..16 tokens after the same
    cache, on 1 or 2 threads: what makes speculation lossless."""
    _, lm, _ = pair
    tokens = ids(2)
    lm.reset()
    lm.forward(tokens[:20])
    alone = torch.cat([lm.forward([t]) for t in tokens[20:36]])
    threads = torch.get_num_threads()
    try:
        for n_threads in (1, 2):
            torch.set_num_threads(n_threads)
            for k in range(2, 17):
                lm.crop(20)
                got = torch.cat([lm.forward(tokens[i:min(i + k, 36)]) for i in range(20, 36, k)])
                assert torch.equal(got, alone), (n_threads, k)
    finally:
        torch.set_num_threads(threads)


def test_last_only_is_the_last_row(pair):
    _, lm, _ = pair
    lm.reset()
    every = lm.forward(ids(3))
    lm.reset()
    assert torch.equal(lm.forward(ids(3), last_only=True), every[-1:])


def test_a_token_tree_row_equals_its_branch_decoded_as_a_line(pair):
    """forward's tree hook: siblings b and c after a (c sees a, not b; b and c share a position) give c
    the bits of feeding a, c in a line."""
    _, lm, _ = pair
    prefix, (a, b, c) = ids(4, 12), ids(5, 3)
    mask = torch.tensor([[0, 0, 0], [1, 0, 0], [1, 0, 0]], dtype=torch.bool)
    lm.reset()
    lm.forward(prefix)
    tree = lm.model.forward(lm.cache, [a, b, c], positions=torch.tensor([12, 13, 13]), mask=mask)
    lm.crop(12)
    line = lm.forward([a, c])
    assert torch.equal(tree[2], line[1]) and torch.equal(tree[0], line[0])


def test_skipping_a_layer_equals_a_model_without_it(pair):
    """forward's skip hook: leaving layer 1 out gives the bits of a decoder built without layer 1."""
    _, lm, family = pair
    c, w = lm.model.config, lm.model.weights
    keep = [0] + list(range(2, c.num_hidden_layers))
    sliding = tuple(c.sliding_layers[i] for i in keep) if c.sliding_layers else ()
    short = Decoder(dataclasses.replace(c, num_hidden_layers=len(keep), sliding_layers=sliding),
                    dataclasses.replace(w, layers=[w.layers[i] for i in keep]), lm.model.context)
    lm.reset()
    skipped = lm.model.forward(lm.cache, ids(6), skip={1})
    assert torch.equal(skipped, short.forward(short.new_cache(), ids(6)))


def test_a_full_cache_refuses_more_tokens(pair):
    _, lm, _ = pair
    small = dataclasses.replace(lm, model=Decoder(lm.model.config, lm.model.weights, context=30))
    small.forward(ids(7, 28))
    with pytest.raises(ContextFull):   # the cache has 32 slots (blocks of 16); the context is 30 positions
        small.forward(ids(8, 3))
    assert small.cached == 28 and small.max_context == 30


def test_lean_lm_has_what_the_engine_reads(pair):
    """The attributes runtime/lm.LM offers; fresh() shares the weights with an empty cache of its own."""
    _, lm, _ = pair
    lm.reset()
    lm.forward(ids(9, 5))
    other = lm.fresh()
    assert other.model is lm.model and other.cached == 0 and lm.cached == 5
    assert lm.vocab_size == VOCAB and lm.eos_ids == {1} and lm.device.type == "cpu"
    assert lm.n_params > 0 and lm.weights == "F32" and "lean decoder" in lm.kernels
    assert lm.max_context == 128 and lm.model.config.vocab_size == VOCAB


def plain_and_ngram(lm, max_tokens: int = 24) -> tuple[list[int], list[int]]:
    """Greedy tokens the engine (engine/loop.Generation) gives on a fresh handle of `lm` for a repetitive
    prompt: plain decoding, and n-gram speculation with k = 4."""
    from specx.drafters.model import NoDrafter
    from specx.drafters.ngram import NgramDrafter
    from specx.engine.loop import Generation
    from specx.engine.types import Round, Sampling

    prompt = [0] + ids(10, 8) * 2

    def tokens(drafter, k):
        events = Generation(lm.fresh(), drafter, prompt, k=k, max_tokens=max_tokens, sampling=Sampling())
        return [t for e in events if isinstance(e, Round) for t in e.token_ids]

    return tokens(NoDrafter(), 0), tokens(NgramDrafter(), 4)


def test_lean_lm_runs_the_speculative_engine_losslessly(pair):
    """The engine (engine/loop.Generation) on a LeanLM: n-gram speculation gives plain decoding's tokens."""
    plain, speculated = plain_and_ngram(pair[1])
    assert len(plain) > 0 and speculated == plain


# ---- configs ----------------------------------------------------------------------------------------

def test_llama3_rope_factors_match_transformers():
    """Our llama3 frequency divisors reproduce transformers' scaled inverse frequencies."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    hf = hf_config("llama3-rope")
    c = configs.from_hf(hf)
    inv_hf, _ = ROPE_INIT_FUNCTIONS["llama3"](hf, None)
    plain = 1.0 / (c.rope.theta ** (torch.arange(0, c.head_dim, 2).double() / c.head_dim))
    torch.testing.assert_close(plain / torch.tensor(c.rope.factors, dtype=torch.float64), inv_hf.double(), rtol=1e-6,
                               atol=0)
    assert len(set(c.rope.factors)) > 2   # some kept, some slowed, some blended


def test_unknown_architectures_are_refused_with_a_clear_error():
    from transformers import GPT2Config

    with pytest.raises(configs.UnsupportedArchitecture, match="gpt2"):
        configs.from_hf(GPT2Config())
    with pytest.raises(configs.UnsupportedArchitecture, match="falcon"):
        configs.from_gguf({"general.architecture": "falcon"}, {})
    meta = {"general.architecture": "llama", "llama.rope.scaling.type": "yarn", "llama.embedding_length": 64,
            "llama.attention.head_count": 4, "llama.block_count": 2, "llama.feed_forward_length": 128,
            "llama.attention.layer_norm_rms_epsilon": 1e-5, "llama.context_length": 64}
    shapes = {"token_embd.weight": (64, VOCAB)}
    assert configs.from_gguf({**meta, "llama.rope.scaling.type": "none"}, shapes).rope_adjacent
    with pytest.raises(configs.UnsupportedArchitecture, match="yarn"):
        configs.from_gguf(meta, shapes)


def test_lean_lm_is_a_drop_in_for_the_engines_lm():
    """Every public attribute and method of runtime/lm.LM exists on LeanLM."""
    from specx.models.lm import LM

    public = {n for n in dir(LM) if not n.startswith("_")} | {f.name for f in dataclasses.fields(LM)}
    assert public - set(dir(LeanLM)) - {f.name for f in dataclasses.fields(LeanLM)} == set()


def test_a_trimmed_output_layer_scores_the_kept_rows(tmp_path):
    """load(draft_vocab=N) (VocabTrim, for drafters): logits of the kept ids only, as the full layer gives them."""
    folder = save(hf_model("qwen2-tied"), tmp_path / "m")
    full, trimmed = load(folder), load(folder, draft_vocab=40)
    keep = trimmed.keep_ids
    assert trimmed.vocab_size == VOCAB and len(keep) < VOCAB and "VocabTrim" in trimmed.kernels
    near(trimmed.forward(ids(12)), full.forward(ids(12))[:, keep])


def test_without_the_compiled_kernels_the_references_still_decode(tmp_path, monkeypatch):
    """No C compiler: the decoder runs attention.py's PyTorch references (not row-exact), within float noise."""
    from specx.cpu import attention

    model = hf_model("gemma3")
    lm = load(save(model, tmp_path / "m"))
    monkeypatch.setitem(attention._state, "lib", None)
    near(torch.cat([lm.forward(ids(13)[:30])] + [lm.forward([t]) for t in ids(13)[30:]]), reference(model, ids(13)))
