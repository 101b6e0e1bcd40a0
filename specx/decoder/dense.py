"""The lean decoder on dense PyTorch weights on one device (a GPU in bfloat16/float16; the CPU in float32 for
the tests): the same families and arithmetic as model.py, in shapes that never change from call to call, so
that a forward can be captured once in a CUDA graph and replayed (graphs.py).

Static shapes: the KV cache (layers, 2, kv_heads, capacity, head_dim) is allocated once and zeroed (attention
reads masked slots too: they must hold finite numbers); the cache length is a device tensor, new keys and values
go in with one index_copy_, and attention runs over the first `span` slots (a power of two, graphs.span) with
an additive mask built on the device from the length, the rotary positions, the tree mask and the sliding
window. Matrices are fused as model.py fuses them (QKV with its bias, gate/up). Norms, rotary and softmax run in
float32 as transformers runs them, the residual stream in the weights' dtype.

A decode step is bound by kernel launches, not by weight reads (issue 38), so a layer launches few kernels:
what depends only on the call (rotary tables at the positions, masks) is made once per forward, q and k are
normalised and rotated together (adjacent in the QKV output), and biases live in the weights' dtype."""
from __future__ import annotations

from collections.abc import Collection, Sequence

import torch

from ..gpu.blocks import FORMATS
from ..gpu.qmatmul import BlockMatrix
from .config import DecoderConfig
from .dense_weights import DenseLayer, DenseWeights
from .model import DEFAULT_CONTEXT, ContextFull, rotary_tables

# A device cache is allocated and zeroed at once (unlike the CPU decoder's untouched pages): the default context
# is smaller there. An 8B Llama's cache costs 128 KiB a position in bfloat16, 1 GiB at this length.
DEVICE_CONTEXT = 8_192


class DenseCache:
    """Keys and values `kv` (layers, 2, kv_heads, capacity, head_dim), zeroed once, `k` and `v` its halves
    (one layer's new keys and values are written in one copy); `length` filled slots (host side)."""

    def __init__(self, decoder: "DenseDecoder", capacity: int):
        c = decoder.config
        shape = (c.num_hidden_layers, 2, c.num_key_value_heads, capacity, c.head_dim)
        self.kv = torch.zeros(shape, dtype=decoder.dtype, device=decoder.device)
        self.k, self.v = self.kv[:, 0], self.kv[:, 1]
        self.capacity, self.length = capacity, 0

    def crop(self, length: int) -> None:
        """Forget slots from `length` on (nothing is copied)."""
        self.length = max(0, min(self.length, length))

    def compact(self, start: int, slots) -> None:
        """model.Cache.compact on this layout: slots[i] moves to start + i in every layer, keys and values."""
        slots = list(slots)
        if any(b <= a for a, b in zip(slots, slots[1:])) or (slots and (slots[0] < start or slots[-1] >= self.length)):
            raise ValueError(f"slots {slots} are not ascending filled slots from {start} (length {self.length})")
        moved = [(d, s) for d, s in enumerate(slots, start) if d != s]
        if moved:
            dst = torch.tensor([d for d, _ in moved], device=self.kv.device)
            src = torch.tensor([s for _, s in moved], device=self.kv.device)
            self.kv[:, :, :, dst] = self.kv[:, :, :, src]
        self.length = start + len(slots)


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
        self._tables = {r: rotary_rows(*rotary_tables(r, config.head_dim, self.context), config.rope_adjacent)
                        .to(self.device) for r in ropes}
        # per layer, the q-norm weight on each query head's row and the k-norm weight on each key head's
        heads = (config.num_attention_heads, config.num_key_value_heads)
        self._qk_norms = [None if l.q_norm is None else
                          torch.cat([l.q_norm.expand(heads[0], -1), l.k_norm.expand(heads[1], -1)])
                          for l in weights.layers]

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
        """The static core: every argument a device tensor of a fixed shape (ids, positions (m + T,) int64, start
        (1,) int64, tree (T, m + T) bool: which of the last m cached slots and of this call's rows each row sees,
        the positions theirs; m is 0 but for a tree grown over calls) or a Python constant (span, skip)."""
        c, w = self.config, self.weights
        x = w.embed.embed(ids) if isinstance(w.embed, BlockMatrix) else torch.nn.functional.embedding(ids, w.embed)
        if self.embed_scale != 1.0:
            x = x * self.embed_scale
        slots = start + torch.arange(ids.shape[0], device=ids.device)
        group = c.num_attention_heads // c.num_key_value_heads
        # once per call, not per layer: the rotary rows at the positions and each window's mask
        mine = positions[positions.shape[0] - ids.shape[0]:]
        rotary = {r: t[mine] for r, t in self._tables.items()}
        masks = {window: additive(visible(start, positions, tree, span, window).repeat(group, 1), self.dtype)
                 for window in {self._window(i) for i in range(c.num_hidden_layers)}}
        for i, lw in enumerate(w.layers):
            if i in skip:
                continue
            h = rmsnorm(x, lw.attn_norm, c.rms_norm_eps)
            a = self._attention(i, lw, h, cache, slots, rotary[c.layer_rope(i)], masks[self._window(i)], span)
            x = x + (a if lw.post_attn_norm is None else rmsnorm(a, lw.post_attn_norm, c.rms_norm_eps))
            h = rmsnorm(x, lw.ffn_norm, c.rms_norm_eps)
            gate, up = linear(h, lw.gate_up).chunk(2, dim=-1)   # views
            m = linear(_act(gate, c.hidden_act) * up, lw.down)
            x = x + (m if lw.post_ffn_norm is None else rmsnorm(m, lw.post_ffn_norm, c.rms_norm_eps))
        return linear(rmsnorm(x, w.norm, c.rms_norm_eps), w.output)

    # what code written for a transformers model reads from `lm.model` (bench/peers.py)
    def parameters(self):
        """Every tensor the decoder holds, once (a tied output layer is the embedding); block matrices are not
        tensors: `precision` and `weight_bytes` say what they are (as specx's packed CPU linears do)."""
        w = self.weights
        yield from (m for m in w.matrices() if not isinstance(m, BlockMatrix))
        for lw in w.layers:
            yield from (t for t in (lw.attn_norm, lw.qkv_bias, lw.o_bias, lw.ffn_norm, lw.q_norm, lw.k_norm,
                                    lw.post_attn_norm, lw.post_ffn_norm) if t is not None)
        yield w.norm

    def modules(self):
        yield self

    @property
    def precision(self) -> str:
        """The block matrices' formats ("Q4_K/Q6_K blocks"), "" for dense weights."""
        formats = sorted(t for t in self.weights.formats() if t in FORMATS)
        return f"{'/'.join(formats)} blocks" if formats else ""

    @property
    def weight_bytes(self) -> int:
        """Bytes of the block matrices (their planes and dense parts)."""
        return sum(m.nbytes for m in self.weights.matrices() if isinstance(m, BlockMatrix))

    def _window(self, i: int) -> int:
        return (self.config.sliding_window or 0) if self.config.is_sliding(i) else 0

    def _attention(self, i: int, lw: DenseLayer, h: torch.Tensor, cache: DenseCache, slots: torch.Tensor,
                   rotary: torch.Tensor, mask: torch.Tensor, span: int) -> torch.Tensor:
        """One layer's attention; rotary (T, 2, 1, d) its rope's rows at the positions (rotary_rows), mask
        (group·T, span) additive."""
        c, rows, d = self.config, h.shape[0], self.config.head_dim
        heads, kv_heads = c.num_attention_heads, c.num_key_value_heads
        qkv = linear(h, lw.qkv, lw.qkv_bias).view(rows, -1, d)
        qk = qkv[:, :heads + kv_heads]            # q and k heads, adjacent: normalised and rotated together
        f = qk.float()
        if self._qk_norms[i] is not None:
            f = torch.nn.functional.rms_norm(f, (d,), eps=c.rms_norm_eps) * self._qk_norms[i]
        qk.copy_(rotate(f, rotary[:, 0], rotary[:, 1], c.rope_adjacent))
        # keys then values of this call: (2·kv_heads, T, d) into the layer's (2·kv_heads, capacity, d)
        cache.kv[i].view(2 * kv_heads, -1, d).index_copy_(1, slots, qkv[:, heads:].transpose(0, 1))
        group = heads // kv_heads
        # the heads sharing a kv head become rows of one query: (kv_heads, group·T, d) against (kv_heads, span, d)
        q = qkv[:, :heads].reshape(rows, kv_heads, group, d).permute(1, 2, 0, 3).reshape(kv_heads, group * rows, d)
        out = torch.nn.functional.scaled_dot_product_attention(
            q[None], cache.k[i, :, :span][None], cache.v[i, :, :span][None], attn_mask=mask, scale=c.scale)
        out = out[0].view(kv_heads, group, rows, d).permute(2, 0, 1, 3).reshape(rows, -1)
        return linear(out, lw.o, lw.o_bias)


def linear(x: torch.Tensor, w, bias: torch.Tensor | None = None) -> torch.Tensor:
    """x @ wᵀ (+ bias): cuBLAS on a dense matrix, the block kernels on a BlockMatrix."""
    return w.linear(x, bias) if isinstance(w, BlockMatrix) else torch.nn.functional.linear(x, w, bias)


def check_room(decoder: DenseDecoder, cache: DenseCache, rows: int) -> None:
    if cache.length + rows > min(cache.capacity, decoder.context):
        raise ContextFull(f"{cache.length + rows} positions do not fit a context of {decoder.context}")


def tree_mask(rows: int, mask: torch.Tensor | None, device) -> torch.Tensor:
    """(T, m + T) bool: which of the last m cached slots (those the mask names) and of this call's rows each
    row sees (model.Decoder.forward's mask: earlier rows it names, and itself; default every earlier row)."""
    me = torch.arange(rows, device=device)
    if mask is None:
        return me[None, :] <= me[:, None]
    mask = mask.to(device=device, dtype=torch.bool)
    past = mask.shape[1] - rows
    own = (mask[:, past:] & (me[None, :] < me[:, None])) | (me[None, :] == me[:, None])
    return torch.cat([mask[:, :past], own], 1) if past else own


def visible(start: torch.Tensor, positions: torch.Tensor, tree: torch.Tensor, span: int, window: int) -> torch.Tensor:
    """(T, span) bool: which of the first `span` cache slots each new row sees. tree (T, m + T) covers slots
    start - m .. start + T - 1 (the last m cached, then the rows: tree_mask), slot start - m + r at rotary
    position positions[r]; slots before them hold positions 0..start-m-1; later slots are unseen. A sliding
    layer (window > 0) sees only keys at positions > the query's - window (cpu/attention_ref.visible)."""
    columns, past = tree.shape[1], tree.shape[1] - tree.shape[0]
    slot = torch.arange(span, device=positions.device)
    rel = slot - (start - past)                                          # the tree's column a slot is
    covered = (rel >= 0) & (rel < columns)
    r = rel.clamp(0, columns - 1)
    seen = (rel < 0)[None, :] | (covered[None, :] & tree[:, r])
    if window > 0:
        key_pos = torch.where(covered, positions[r], slot)
        seen = seen & (key_pos[None, :] > positions[past:, None] - window)
    return seen


def additive(seen: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A bool mask as the additive one SDPA would make of it on every call (0 seen, -inf not), in `dtype`."""
    return torch.zeros(seen.shape, dtype=dtype, device=seen.device).masked_fill_(~seen, float("-inf"))


def rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm in float32 (as transformers computes it), times the float32 weight, back in x's dtype
    (torch's rms_norm: one fused kernel on CUDA; cpu/attention_ref.reference_rmsnorm is the formula)."""
    return torch.nn.functional.rms_norm(x.float(), w.shape, w, eps).to(x.dtype)


def rotary_rows(cos: torch.Tensor, sin: torch.Tensor, adjacent: bool) -> torch.Tensor:
    """(positions, 2, 1, d): rotary_tables' cos, sin (positions, d/2) spread over the d lanes in the pair layout,
    sin signed for rotate: pairs (2i, 2i+1) or (i, i + d/2) get (cos, cos) and (-sin, sin)."""
    if adjacent:
        cos2, sin2 = cos.repeat_interleave(2, -1), torch.stack((-sin, sin), -1).flatten(-2)
    else:
        cos2, sin2 = torch.cat((cos, cos), -1), torch.cat((-sin, sin), -1)
    return torch.stack((cos2, sin2), 1)[:, :, None]


def rotate(f: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, adjacent: bool) -> torch.Tensor:
    """f (T, heads, d) float32 rotated by rotary_rows' cos, sin (T, 1, d): f·cos + swap(f)·sin, swap exchanging
    the two members of each pair (cpu/attention_ref.rotate is the rotation written out)."""
    swapped = f.unflatten(-1, (-1, 2)).flip(-1).flatten(-2) if adjacent else f.roll(f.shape[-1] // 2, -1)
    return torch.addcmul(f * cos, swapped, sin)


def _act(gate: torch.Tensor, kind: str) -> torch.Tensor:
    f = torch.nn.functional
    return f.silu(gate) if kind == "silu" else f.gelu(gate, approximate="tanh")
