"""The dense decoder's weights (dense.py): one layer's fused matrices and the model's, made from a file's weights
(dequantized to the device's dtype, or kept in a GGUF's blocks) or at random in a real config's shapes for the
benchmarks, which measure speed on models whose weights cannot travel to the device."""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..gpu.qmatmul import BlockMatrix, dense_matrix, from_file
from .config import DecoderConfig
from .weights import Weights


@dataclass
class DenseLayer:
    attn_norm: torch.Tensor
    qkv: torch.Tensor                 # (q + 2·kv, hidden)
    qkv_bias: torch.Tensor | None
    o: torch.Tensor                   # (hidden, q)
    o_bias: torch.Tensor | None
    ffn_norm: torch.Tensor
    gate_up: torch.Tensor             # (2·intermediate, hidden)
    down: torch.Tensor                # (hidden, intermediate)
    q_norm: torch.Tensor | None = None
    k_norm: torch.Tensor | None = None
    post_attn_norm: torch.Tensor | None = None
    post_ffn_norm: torch.Tensor | None = None


@dataclass
class DenseWeights:
    embed: torch.Tensor               # (vocab, hidden)
    layers: list[DenseLayer]
    norm: torch.Tensor
    output: torch.Tensor              # the embedding itself when tied

    def matrices(self) -> list:
        mats = [self.embed] + [m for l in self.layers for m in (l.qkv, l.o, l.gate_up, l.down)]
        return mats + ([self.output] if self.output is not self.embed else [])

    @property
    def nbytes(self) -> int:
        return sum(m.nbytes if isinstance(m, BlockMatrix) else m.numel() * m.element_size() for m in self.matrices())

    def formats(self) -> set[str]:
        """The file types of the block matrices' parts (those without planes run dense); empty for dense weights."""
        return {f for m in self.matrices() if isinstance(m, BlockMatrix) for f in m.formats()}


def from_weights(w: Weights, dtype: torch.dtype, device, blocks: bool = False) -> DenseWeights:
    """Each QWeight dequantized once (cpu/qweight.dequantize; F16/BF16 rows read as they are) to `dtype` on
    `device`, biases too (the matrix multiply adds them); norms stay float32 there. `blocks`: a GGUF's matrices
    keep their blocks instead, as gpu/blocks.py's planes run by gpu/qmatmul.py (a type without planes dense)."""
    def mat(group):
        if blocks:
            return from_file(group, dtype, device)
        return torch.cat([dense_matrix(q, dtype, device) for q in group]) if len(group) > 1 else \
            dense_matrix(group[0], dtype, device)

    def vec(t, as_dtype=torch.float32):
        return None if t is None else t.to(device=device, dtype=as_dtype)

    layers = [DenseLayer(vec(l.attn_norm), mat(l.qkv), vec(l.qkv_bias, dtype), mat(l.o), vec(l.o_bias, dtype),
                         vec(l.ffn_norm),
                         mat(l.gate_up), mat(l.down), vec(l.q_norm), vec(l.k_norm), vec(l.post_attn_norm),
                         vec(l.post_ffn_norm)) for l in w.layers]
    embed = mat([w.embed])
    output = embed if w.output is w.embed else mat([w.output])
    return DenseWeights(embed, layers, vec(w.norm), output)


def random_weights(c: DecoderConfig, dtype: torch.dtype, device, seed: int = 0) -> DenseWeights:
    """Random weights of the config's shapes made on the device (benchmarks: no file, nothing on the host).
    Scaled like an initialised model (std 1/sqrt(fan in)), norms one: the logits stay finite and varied.
    Qwen2 has a QKV bias (zeros here: it costs what a real one costs)."""
    g = torch.Generator(device=device).manual_seed(seed)

    def mat(rows, cols):
        return (torch.randn(rows, cols, generator=g, device=device, dtype=dtype) * cols ** -0.5).to(dtype)

    def ones(n):
        return torch.ones(n, device=device)

    h, q, kv, inter = c.hidden_size, c.q_size, c.kv_size, c.intermediate_size
    def bias():
        return torch.zeros(q + 2 * kv, device=device, dtype=dtype) if c.family == "qwen2" else None

    layers = [DenseLayer(ones(h), mat(q + 2 * kv, h), bias(), mat(h, q), None, ones(h), mat(2 * inter, h),
                         mat(h, inter), ones(c.head_dim) if c.qk_norm else None,
                         ones(c.head_dim) if c.qk_norm else None, ones(h) if c.sandwich_norms else None,
                         ones(h) if c.sandwich_norms else None) for _ in range(c.num_hidden_layers)]
    embed = mat(c.vocab_size, h)
    return DenseWeights(embed, layers, ones(h), embed if c.tie_word_embeddings else mat(c.vocab_size, h))


def random_block_weights(c: DecoderConfig, types, dtype: torch.dtype, device, seed: int = 0) -> DenseWeights:
    """random_weights in a GGUF's blocks (gpu/blocks.random_planes): `types(role, layer)` names each matrix's
    block type (role "embed", "head", or a layer matrix's transformers name, e.g. "self_attn.v_proj"; layer None
    outside the layers), as a GGUF file type's mixture gives them (memory/gguf_price.tensor_type)."""
    from ..gpu.blocks import random_planes

    g = torch.Generator(device=device).manual_seed(seed)
    h, q, kv, inter = c.hidden_size, c.q_size, c.kv_size, c.intermediate_size

    def mat(parts, layer=None):
        return BlockMatrix([random_planes(types(role, layer), rows, cols, device, g) for role, rows, cols in parts],
                           dtype)

    def ones(n):
        return torch.ones(n, device=device)

    def bias():
        return torch.zeros(q + 2 * kv, device=device, dtype=dtype) if c.family == "qwen2" else None

    layers = [DenseLayer(ones(h), mat((("self_attn.q_proj", q, h), ("self_attn.k_proj", kv, h),
                                       ("self_attn.v_proj", kv, h)), i), bias(),
                         mat((("self_attn.o_proj", h, q),), i), None, ones(h),
                         mat((("mlp.gate_proj", inter, h), ("mlp.up_proj", inter, h)), i),
                         mat((("mlp.down_proj", h, inter),), i), ones(c.head_dim) if c.qk_norm else None,
                         ones(c.head_dim) if c.qk_norm else None, ones(h) if c.sandwich_norms else None,
                         ones(h) if c.sandwich_norms else None) for i in range(c.num_hidden_layers)]
    if c.tie_word_embeddings:
        embed = output = mat((("head", c.vocab_size, h),))
    else:
        embed, output = mat((("embed", c.vocab_size, h),)), mat((("head", c.vocab_size, h),))
    return DenseWeights(embed, layers, ones(h), output)
