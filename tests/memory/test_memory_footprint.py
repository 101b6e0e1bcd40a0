"""Footprints from configs alone (meta device): exact parameter counts, tied weights once, MoE experts apart."""
from __future__ import annotations

import pytest

from specx.memory.footprint import FOUR_BIT, Group, bnb_scheme, plain
from specx.memory.shapes import shape_of


def llama_config(tied: bool, layers: int = 2):
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=96, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                       num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=tied)


def moe_config(kind: str):
    """Tiny random configs of the MoE families transformers 5 implements with fused experts."""
    import transformers as tf

    common = dict(vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                  tie_word_embeddings=False)
    if kind == "mixtral":
        return tf.MixtralConfig(intermediate_size=64, num_local_experts=4, num_experts_per_tok=2, **common)
    if kind == "qwen2_moe":
        return tf.Qwen2MoeConfig(intermediate_size=64, moe_intermediate_size=32, shared_expert_intermediate_size=64,
                                 num_experts=4, num_experts_per_tok=2, decoder_sparse_step=1, **common)
    if kind == "qwen3_moe":
        return tf.Qwen3MoeConfig(intermediate_size=64, moe_intermediate_size=32, num_experts=4,
                                 num_experts_per_tok=2, decoder_sparse_step=1, head_dim=8, **common)
    return tf.OlmoeConfig(intermediate_size=32, num_experts=4, num_experts_per_tok=2, **common)


def real_params(config) -> set[str]:
    from transformers import AutoModelForCausalLM

    return {n for n, _ in AutoModelForCausalLM.from_config(config).named_parameters()}


@pytest.mark.parametrize("tied", [False, True])
def test_parameter_counts_match_the_real_model_and_tied_weights_count_once(tied):
    from transformers import AutoModelForCausalLM

    config = llama_config(tied)
    shape = shape_of(config)
    assert shape.params == sum(p.numel() for p in AutoModelForCausalLM.from_config(config).parameters())
    assert shape.tied == tied
    assert [g.kind for g in shape.groups] == ["embed", "other", "layer", "layer", "head", "norm"]


@pytest.mark.parametrize("kind", ["mixtral", "qwen2_moe", "qwen3_moe", "olmoe"])
def test_moe_experts_are_groups_of_their_own_and_parts_cover_every_parameter_once(kind):
    config = moe_config(kind)
    shape = shape_of(config)
    experts = [g for g in shape.groups if g.kind == "experts"]
    assert len(experts) == 2 and shape.experts == 4 and shape.experts_per_token == 2
    assert all(g.params > 0 and g.linear_params == 0 for g in experts)  # fused 3-D tensors, not nn.Linear
    parts = [p for g in shape.groups for p in g.parts]
    for name in real_params(config):
        owners = [p for p in parts if name.startswith(p + ".")]
        assert len(owners) == 1, (name, owners)


def test_kv_bytes_per_token_is_layers_heads_dim_two_dtype():
    shape = shape_of(llama_config(False, layers=3))
    assert shape.kv_bytes_per_token("bfloat16") == 3 * 2 * (64 // 4) * 2 * 2
    assert shape.kv_bytes_per_token("float32") == 2 * shape.kv_bytes_per_token("bfloat16")


def test_scheme_prices():
    g = Group("l", "layer", params=1000 + 64 * 64, linear_params=64 * 64, linear_rows=64)
    assert plain("float32").group_bytes(g) == 4 * g.params
    assert bnb_scheme("int8", "bfloat16").group_bytes(g) == 64 * 64 + 64 * 4 + 1000 * 2
    assert bnb_scheme("nf4", "bfloat16").group_bytes(g) == int(64 * 64 * FOUR_BIT + 1000 * 2)
    assert 0.515 < FOUR_BIT < 0.517   # 4 bits + 8-bit absmax per 64 + fp32 per 256 blocks


@pytest.mark.slow
def test_gguf_config_matches_the_converted_copy():
    """The cheap header mapping gives the same shape as transformers' own GGUF config."""
    from conftest import fixture_model
    from specx.memory.shapes import gguf_config

    path = fixture_model("smollm2-135m")
    mine = gguf_config(path)
    from transformers import AutoConfig

    theirs = AutoConfig.from_pretrained(path.parent, gguf_file=path.name)
    for key in ("hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                "intermediate_size", "vocab_size", "max_position_embeddings", "tie_word_embeddings"):
        assert getattr(mine, key) == getattr(theirs, key), key
