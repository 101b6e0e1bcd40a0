"""The lean decoder on tiny GGUF files written the way llama.cpp's converter writes them (tensor names, Q/K rows
permuted for llama-arch files, Gemma norms stored as 1 + w; F32, F16, Q8_0 and IQ4_NL tensors): it computes what
transformers computes from the same file, and it refuses a tensor type it has no kernel for, by name."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from test_decoder import VOCAB, hf_model, ids, near, reference
from specx.decoder import config as configs
from specx.cpu.quant_ref import IQ4_VALUES
from specx.decoder.lm import load

GGUF_NAMES = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
              "self_attn.o_proj": "attn_output", "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
              "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
              "input_layernorm": "attn_norm"}
PRE_FFN = {"gemma3": {"post_attention_layernorm": "post_attention_norm", "pre_feedforward_layernorm": "ffn_norm",
                      "post_feedforward_layernorm": "post_ffw_norm"}}
MATRIX_TYPES = ("F32", "F16", "Q8_0")   # cycled through the matrices: a file mixes types, as Q4_K_M files do


def gguf_model(family: str):
    """A transformers model shaped as transformers reads the family's GGUF files back (Gemma 3: head_dim 256,
    its query_pre_attn_scalar default; Qwen3: its head_dim default 128)."""
    from transformers import AutoModelForCausalLM

    model = hf_model(family)
    overrides = {"gemma3": dict(head_dim=256, query_pre_attn_scalar=256, sliding_window=6, rope_scaling=None,
                                layer_types=None, num_hidden_layers=6), "qwen3": dict(head_dim=128)}.get(family)
    if overrides:
        cfg = type(model.config)(**{**model.config.to_dict(), **overrides})
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(torch.randn_like(p) * 0.3 if "norm" in name else torch.randn_like(p) / p.shape[-1] ** 0.5)
    return model


def permute(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's converter reorders each head's q/k rows so its adjacent-pair rotary acts as transformers' halves."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_gguf(model, family: str, path, matrix_types=MATRIX_TYPES):
    import gguf

    c, arch = model.config, {"qwen2-tied": "qwen2"}.get(family, family)
    w = gguf.GGUFWriter(str(path), arch=arch)
    w.add_block_count(c.num_hidden_layers)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    rope = c.rope_parameters["full_attention"] if arch == "gemma3" else c.rope_parameters
    w.add_rope_freq_base(rope["rope_theta"])
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    if head_dim != c.hidden_size // c.num_attention_heads:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    if arch == "gemma3":
        w.add_sliding_window(c.sliding_window)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(["a", "b", "ab"] + [f"w{i}" for i in range(3, VOCAB)])
    w.add_token_types([1] * VOCAB)
    w.add_token_merges(["a b"])
    w.add_eos_token_id(1)
    w.add_bos_token_id(0)
    n = 0
    for name, tensor in model.state_dict().items():
        if name == "lm_head.weight" and c.tie_word_embeddings:
            continue
        data = tensor.float().numpy()
        if arch == "llama" and ("q_proj" in name or "k_proj" in name):
            data = permute(data, c.num_attention_heads if "q_proj" in name else c.num_key_value_heads)
        if arch == "gemma3" and "norm" in name:
            data = data + 1.0
        if data.ndim == 2:
            kind = gguf.GGMLQuantizationType[matrix_types[n % len(matrix_types)]]
            n += 1
            raw = quantize(data, kind)
            w.add_tensor(gguf_name(name, arch), raw, raw_dtype=kind)
        else:
            w.add_tensor(gguf_name(name, arch), data)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def quantize(data: np.ndarray, kind) -> np.ndarray:
    """A matrix as a GGUF of type `kind` holds it: gguf's quantizer; IQ4_NL, which gguf does not quantize, as
    d = (each 32 values' value of largest magnitude) / −127 times the nearest points of the IQ4 grid."""
    import gguf

    if kind == gguf.GGMLQuantizationType.F32:
        return data
    if kind != gguf.GGMLQuantizationType.IQ4_NL:
        return gguf.quants.quantize(data, kind)
    x = data.reshape(-1, 32).astype(np.float32)
    d = (x[np.arange(len(x)), np.abs(x).argmax(axis=1)] / -127).astype(np.float16)
    inv = np.where(d != 0, 1 / np.where(d != 0, d, 1).astype(np.float32), 0)
    q = np.abs(x[..., None] * inv[:, None, None] - IQ4_VALUES).argmin(axis=-1).astype(np.uint8)
    blocks = np.concatenate([d.view(np.uint8).reshape(-1, 2), q[:, :16] | (q[:, 16:] << 4)], axis=1)
    return blocks.reshape(len(data), -1)


def gguf_name(name: str, arch: str) -> str:
    special = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
               "lm_head.weight": "output.weight"}
    if name in special:
        return special[name]
    _, _, i, rest = name.split(".", 3)
    role, _, kind = rest.rpartition(".")
    table = {**GGUF_NAMES, "post_attention_layernorm": "ffn_norm", **PRE_FFN.get(arch, {})}
    return f"blk.{i}.{table[role]}.{kind}"


@pytest.mark.parametrize("family", ["llama", "qwen2", "qwen2-tied", "qwen3", "gemma3"])
def test_a_gguf_runs_as_transformers_runs_it(tmp_path, family):
    """The lean decoder on the file equals transformers' model loaded from the same file (dequantized, Q/K
    rows un-permuted, Gemma's 1 + w undone): prefill and cached decode."""
    from transformers import AutoModelForCausalLM

    path = write_gguf(gguf_model(family), family, tmp_path / f"{family}.gguf")
    theirs = AutoModelForCausalLM.from_pretrained(tmp_path, gguf_file=path.name, dtype=torch.float32).eval()
    lm = load(path)
    assert lm.model.config.rope_adjacent == (family == "llama")
    tokens = ids(11)
    want = reference(theirs, tokens)
    got = torch.cat([lm.forward(tokens[:30])] + [lm.forward([t]) for t in tokens[30:]])
    near(got, want)


def test_an_iq4_nl_gguf_runs_on_the_block_kernels_as_transformers_runs_it(tmp_path):
    """IQ4_NL matrices (embedding, layers and head, between F16 ones) run on specx's block kernels as the file
    holds them and give what transformers computes from the same file: prefill and cached decode."""
    from transformers import AutoModelForCausalLM

    path = write_gguf(gguf_model("qwen2"), "qwen2", tmp_path / "iq4.gguf", matrix_types=("IQ4_NL", "F16"))
    theirs = AutoModelForCausalLM.from_pretrained(tmp_path, gguf_file=path.name, dtype=torch.float32).eval()
    lm = load(path)
    assert "IQ4_NL" in lm.kernels and "block kernels" in lm.kernels
    tokens = ids(11)
    want = reference(theirs, tokens)
    got = torch.cat([lm.forward(tokens[:30])] + [lm.forward([t]) for t in tokens[30:]])
    near(got, want)


def test_a_tensor_type_without_a_kernel_is_refused_by_name(tmp_path):
    """An MXFP4 matrix: UnsupportedArchitecture naming the tensor and its type (the caller falls back to
    transformers), before any kernel reads it."""
    import gguf

    model = gguf_model("llama")
    path = write_gguf(model, "llama", tmp_path / "mxfp4.gguf", matrix_types=("F32",))
    data = bytearray(path.read_bytes())
    reader = gguf.GGUFReader(path)
    target = next(t for t in reader.tensors if t.name == "blk.0.ffn_up.weight")
    # rewrite the type of one tensor in place: F32 (4 bytes/value) → MXFP4 (17 bytes/32 values) fits inside
    type_field = target.field.parts[-2]   # [..., type, offset]
    offset = type_field.ctypes.data - reader.data.ctypes.data
    del reader
    data[offset:offset + 4] = int(gguf.GGMLQuantizationType.MXFP4).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(configs.UnsupportedArchitecture, match="blk.0.ffn_up.weight.*MXFP4"):
        load(path)
