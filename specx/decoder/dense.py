"""The lean decoder on dense PyTorch weights on one device (a GPU in bfloat16/float16; the CPU in float32 for
the tests): the same families and arithmetic as model.py, in shapes that never change from call to call, so
that a forward can be captured once in a CUDA graph and replayed (graphs.py).

Static shapes: the KV cache (layers, kv_heads, capacity, head_dim) is allocated once and zeroed (attention
reads masked slots too: they must hold finite numbers); the cache length is a device tensor, new keys go in
with index_copy_, and attention runs over the first `span` slots (a power of two, graphs.span) with a mask
built on the device from the length, the rotary positions, the tree mask and the sliding window. Matrices are
fused as model.py fuses them (QKV, gate/up). Norms, rotary and softmax run in float32 as transformers runs them,
the residual stream in the weights' dtype."""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import torch

from .config import DecoderConfig
from .model import DEFAULT_CONTEXT, ContextFull, rotary_tables
from .weights import Weights

# A device cache is allocated and zeroed at once (unlike the CPU decoder's untouched pages): the default context
# is smaller there. An 8B Llama's cache costs 128 KiB a position in bfloat16, 1 GiB at this length.
DEVICE_CONTEXT = 8_192


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

    def matrices(self) -> list[torch.Tensor]:
        mats = [self.embed] + [m for l in self.layers for m in (l.qkv, l.o, l.gate_up, l.down)]
        return mats + ([self.output] if self.output is not self.embed else [])

    @property
    def nbytes(self) -> int:
        return sum(m.numel() * m.element_size() for m in self.matrices())


def from_weights(w: Weights, dtype: torch.dtype, device) -> DenseWeights:
    """Each QWeight dequantized once (cpu/qweight.dequantize; F16/BF16 rows read as they are) to `dtype` on
    `device`; norms and biases stay float32 there."""
    def mat(group) -> torch.Tensor:
        return torch.cat([_dense(q, dtype, device) for q in group]) if len(group) > 1 else _dense(group[0], dtype,
                                                                                                   device)

    def vec(t):
        return None if t is None else t.to(device=device, dtype=torch.float32)

    layers = [DenseLayer(vec(l.attn_norm), mat(l.qkv), vec(l.qkv_bias), mat(l.o), vec(l.o_bias), vec(l.ffn_norm),
                         mat(l.gate_up), mat(l.down), vec(l.q_norm), vec(l.k_norm), vec(l.post_attn_norm),
                         vec(l.post_ffn_norm)) for l in w.layers]
    embed = _dense(w.embed, dtype, device)
    output = embed if w.output is w.embed else _dense(w.output, dtype, device)
    return DenseWeights(embed, layers, vec(w.norm), output)


def _dense(q, dtype: torch.dtype, device) -> torch.Tensor:
    import numpy as np

    from ..cpu.qweight import BLOCKS, dequantize

    raw = {BLOCKS["BF16"][0]: torch.bfloat16, BLOCKS["F16"][0]: torch.float16}.get(q.type)
    if raw is not None:   # no float32 copy of a half-precision file on the host
        t = torch.from_numpy(np.ascontiguousarray(q.data).view(np.int16)).view(raw).view(q.rows, q.cols)
        return t.to(device=device).to(dtype)
    return torch.from_numpy(dequantize(q)).to(device=device, dtype=dtype)


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
        return torch.zeros(q + 2 * kv, device=device) if c.family == "qwen2" else None

    layers = [DenseLayer(ones(h), mat(q + 2 * kv, h), bias(), mat(h, q), None, ones(h), mat(2 * inter, h),
                         mat(h, inter), ones(c.head_dim) if c.qk_norm else None,
                         ones(c.head_dim) if c.qk_norm else None, ones(h) if c.sandwich_norms else None,
                         ones(h) if c.sandwich_norms else None) for _ in range(c.num_hidden_layers)]
    embed = mat(c.vocab_size, h)
    return DenseWeights(embed, layers, ones(h), embed if c.tie_word_embeddings else mat(c.vocab_size, h))


class DenseCache:
    """Keys and values (layers, kv_heads, capacity, head_dim), zeroed once; `length` filled slots (host side)."""

    def __init__(self, decoder: "DenseDecoder", capacity: int):
        c = decoder.config
        shape = (c.num_hidden_layers, c.num_key_value_heads, capacity, c.head_dim)
        self.k = torch.zeros(shape, dtype=decoder.dtype, device=decoder.device)
        self.v = torch.zeros(shape, dtype=decoder.dtype, device=decoder.device)
        self.capacity, self.length = capacity, 0

    def crop(self, length: int) -> None:
        """Forget slots from `length` on (nothing is copied)."""
        self.length = max(0, min(self.length, length))


class DenseDecoder:
    """A decoder-only transformer on DenseWeights; `forward` as model.Decoder.forward, `step` its static core."""

    def __init__(self, config: DecoderConfig, weights: DenseWeights, context: int | None = None):
        self.config, self.weights = config, weights
        self.device, self.dtype = weights.embed.device, weights.embed.dtype
        default = DEFAULT_CONTEXT if self.device.type == "cpu" else DEVICE_CONTEXT
        self.context = min(context or default, config.max_position_embeddings)
        # Gemma's sqrt(hidden), rounded to the weights' dtype as transformers rounds it
        self.embed_scale = float(torch.tensor(config.embed_scale, dtype=self.dtype))
        ropes = {config.layer_rope(i) for i in range(config.num_hidden_layers)}
        self._tables = {r: tuple(t.to(self.device) for t in rotary_tables(r, config.head_dim, self.context))
                        for r in ropes}

    def new_cache(self) -> DenseCache:
        return DenseCache(self, self.context)

    @torch.inference_mode()
    def forward(self, cache: DenseCache, ids: Sequence[int], positions: torch.Tensor | None = None,
                mask: torch.Tensor | None = None, skip: Collection[int] = (), last_only: bool = False) -> torch.Tensor:
        """Logits (T, vocab) of `ids` appended to the cache, eagerly; the arguments are model.Decoder.forward's."""
        from .graphs import span

        start, rows = cache.length, len(ids)
        check_room(self, cache, rows)
        dev = self.device
        if positions is None:
            positions = torch.arange(start, start + rows)
        logits = self.step(cache, torch.as_tensor(ids, dtype=torch.int64, device=dev), positions.to(dev),
                           torch.tensor([start], device=dev), tree_mask(rows, mask, dev), span(start + rows, cache),
                           skip)
        cache.length = start + rows
        return logits[-1:] if last_only else logits

    def step(self, cache: DenseCache, ids: torch.Tensor, positions: torch.Tensor, start: torch.Tensor,
             tree: torch.Tensor, span: int, skip: Collection[int] = ()) -> torch.Tensor:
        """The static core: every argument a device tensor of a fixed shape (ids, positions (T,) int64, start (1,)
        int64, tree (T, T) bool: which rows of this call each row sees) or a Python constant (span, skip)."""
        c, w = self.config, self.weights
        x = torch.nn.functional.embedding(ids, w.embed)
        if self.embed_scale != 1.0:
            x = x * self.embed_scale
        slots = start + torch.arange(ids.shape[0], device=ids.device)
        masks = {window: visible(start, positions, tree, span, window)
                 for window in {self._window(i) for i in range(c.num_hidden_layers)}}
        for i, lw in enumerate(w.layers):
            if i in skip:
                continue
            h = rmsnorm(x, lw.attn_norm, c.rms_norm_eps)
            a = self._attention(i, lw, h, cache, slots, positions, masks[self._window(i)], span)
            x = x + (a if lw.post_attn_norm is None else rmsnorm(a, lw.post_attn_norm, c.rms_norm_eps))
            h = rmsnorm(x, lw.ffn_norm, c.rms_norm_eps)
            gate, up = torch.nn.functional.linear(h, lw.gate_up).chunk(2, dim=-1)
            m = torch.nn.functional.linear(_act(gate, c.hidden_act) * up, lw.down)
            x = x + (m if lw.post_ffn_norm is None else rmsnorm(m, lw.post_ffn_norm, c.rms_norm_eps))
        return torch.nn.functional.linear(rmsnorm(x, w.norm, c.rms_norm_eps), w.output)

    # what code written for a transformers model reads from `lm.model` (bench/peers.py)
    def parameters(self):
        """Every tensor the decoder holds, once (a tied output layer is the embedding)."""
        w = self.weights
        yield from w.matrices()
        for lw in w.layers:
            yield from (t for t in (lw.attn_norm, lw.qkv_bias, lw.o_bias, lw.ffn_norm, lw.q_norm, lw.k_norm,
                                    lw.post_attn_norm, lw.post_ffn_norm) if t is not None)
        yield w.norm

    def modules(self):
        yield self

    def _window(self, i: int) -> int:
        return (self.config.sliding_window or 0) if self.config.is_sliding(i) else 0

    def _attention(self, i: int, lw: DenseLayer, h: torch.Tensor, cache: DenseCache, slots: torch.Tensor,
                   positions: torch.Tensor, seen: torch.Tensor, span: int) -> torch.Tensor:
        c, rows, d = self.config, h.shape[0], self.config.head_dim
        qkv = torch.nn.functional.linear(h, lw.qkv)
        if lw.qkv_bias is not None:
            qkv = qkv + lw.qkv_bias.to(qkv.dtype)
        q, k, v = qkv.view(rows, -1, d).split([c.num_attention_heads, c.num_key_value_heads,
                                               c.num_key_value_heads], dim=1)
        if lw.q_norm is not None:
            q, k = rmsnorm(q, lw.q_norm, c.rms_norm_eps), rmsnorm(k, lw.k_norm, c.rms_norm_eps)
        cos, sin = (t[positions] for t in self._tables[c.layer_rope(i)])
        q, k = rotate(q, cos, sin, c.rope_adjacent), rotate(k, cos, sin, c.rope_adjacent)
        cache.k[i].index_copy_(1, slots, k.transpose(0, 1))
        cache.v[i].index_copy_(1, slots, v.transpose(0, 1))
        kv_heads, group = c.num_key_value_heads, c.num_attention_heads // c.num_key_value_heads
        # the heads sharing a kv head become rows of one query: (kv_heads, group·T, d) against (kv_heads, span, d)
        q = q.view(rows, kv_heads, group, d).permute(1, 2, 0, 3).reshape(kv_heads, group * rows, d)
        out = torch.nn.functional.scaled_dot_product_attention(
            q[None], cache.k[i, :, :span][None], cache.v[i, :, :span][None], attn_mask=seen.repeat(group, 1),
            scale=c.scale)
        out = out[0].view(kv_heads, group, rows, d).permute(2, 0, 1, 3).reshape(rows, -1)
        out = torch.nn.functional.linear(out, lw.o)
        return out if lw.o_bias is None else out + lw.o_bias.to(out.dtype)


def check_room(decoder: DenseDecoder, cache: DenseCache, rows: int) -> None:
    if cache.length + rows > min(cache.capacity, decoder.context):
        raise ContextFull(f"{cache.length + rows} positions do not fit a context of {decoder.context}")


def tree_mask(rows: int, mask: torch.Tensor | None, device) -> torch.Tensor:
    """(T, T) bool: which rows of this call each row sees (model.Decoder.forward's mask: earlier rows it
    names, and itself; default every earlier row)."""
    me = torch.arange(rows, device=device)
    if mask is None:
        return me[None, :] <= me[:, None]
    return (mask.to(device=device, dtype=torch.bool) & (me[None, :] < me[:, None])) | (me[None, :] == me[:, None])


def visible(start: torch.Tensor, positions: torch.Tensor, tree: torch.Tensor, span: int, window: int) -> torch.Tensor:
    """(T, span) bool: which of the first `span` cache slots each new row sees. Slots below `start` hold
    positions 0..start-1; slot start + r holds row r (rotary position positions[r]); later slots are unseen.
    A sliding layer (window > 0) sees only keys at positions > the query's - window (cpu/attention.visible)."""
    rows = positions.shape[0]
    slot = torch.arange(span, device=positions.device)
    rel = slot - start                                                   # the row a new slot holds
    new = (rel >= 0) & (rel < rows)
    r = rel.clamp(0, rows - 1)
    seen = (slot < start)[None, :] | (new[None, :] & tree[:, r])
    if window > 0:
        key_pos = torch.where(new, positions[r], slot)
        seen = seen & (key_pos[None, :] > positions[:, None] - window)
    return seen


def rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm in float32 (as transformers computes it), times the float32 weight, back in x's dtype."""
    f = x.float()
    return (f * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + eps) * w).to(x.dtype)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, adjacent: bool) -> torch.Tensor:
    """x (T, heads, d) rotated in float32 by cos, sin (T, d/2): pairs (2i, 2i+1) or (i, i + d/2)."""
    f = x.float()
    a, b = (f[..., 0::2], f[..., 1::2]) if adjacent else f.chunk(2, dim=-1)
    cos, sin = cos[:, None], sin[:, None]
    one, two = a * cos - b * sin, b * cos + a * sin
    out = torch.stack((one, two), -1).flatten(-2) if adjacent else torch.cat((one, two), -1)
    return out.to(x.dtype)


def _act(gate: torch.Tensor, kind: str) -> torch.Tensor:
    f = torch.nn.functional
    return f.silu(gate) if kind == "silu" else f.gelu(gate, approximate="tanh")
