"""The lean decoder: one forward over a KV cache for Llama, Mistral, Qwen2/3 and Gemma 3 (config.py), in the
spirit of gpt-fast's model.py.

Per layer: RMSNorm → fused QKV → attention (q/k norms, rotary, cache write, attention: cpu/attention.c) →
output projection → residual + RMSNorm → fused gate/up → activation → down → residual. The linear layers
run on the weights as the file holds them (linear.py); everything between them runs in attention.c's row-exact
kernels, so the logits of a position are the same bits whether it is computed alone or among up to k others
after the same cache, and whatever the thread count: what makes speculation lossless. The only PyTorch ops
left are element-wise (bias adds, Gemma's embedding scale), exact whatever the shape.

The cache is allocated once for the whole context (untouched pages cost no memory) and crop only sets its
length; the rotary tables are computed once, as transformers computes them."""
from __future__ import annotations

from collections.abc import Collection, Sequence

import torch

from ..cpu import attention, layers
from . import linear
from .config import PROMPT_CHUNK, DecoderConfig, Rope
from ..cpu.qweight import QWeight
from .weights import Weights

# A cache reserves (without touching) context × layers × kv heads × head dim × 8 bytes; Linux refuses one
# reservation larger than RAM + swap (its default overcommit heuristic), which Llama 3's 131,072 positions
# exceed for an 8B model. Longer contexts are asked for explicitly (Decoder(context=…)).
DEFAULT_CONTEXT = 32_768


class ContextFull(ValueError):
    """A forward would write past the end of the cache."""


def rotary_tables(rope: Rope, head_dim: int, positions: int) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin (positions, head_dim/2) float32, computed as transformers computes them (float32 inv_freq,
    angle = position · inv_freq in float32), so the reference's rounding is ours."""
    inv_freq = 1.0 / (rope.theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    if rope.factors is not None:
        inv_freq = inv_freq / torch.tensor(rope.factors, dtype=torch.float32)
    inv_freq = inv_freq / rope.scale
    angles = torch.arange(positions, dtype=torch.float32)[:, None] * inv_freq[None, :]
    return angles.cos().contiguous(), angles.sin().contiguous()


class Cache:
    """Keys and values of every layer for `capacity` slots, and how many are filled (`length`)."""

    def __init__(self, decoder: "Decoder", capacity: int):
        c = decoder.config
        self.k, self.v = attention.cache_tensors(c.num_key_value_heads, capacity, c.head_dim, c.num_hidden_layers)
        self.capacity, self.length = capacity, 0
        self.layers = [decoder.layer_attention(i, self.k[i], self.v[i]) for i in range(c.num_hidden_layers)]
        self.addresses = [layer.address for layer in self.layers]

    def crop(self, length: int) -> None:
        """Forget slots from `length` on (nothing is copied)."""
        self.length = max(0, min(self.length, length))

    def compact(self, start: int, slots: Sequence[int]) -> None:
        """Move the filled slots `slots` (ascending, from `start` on) to start, start+1, … and forget the rest:
        a verified tree's accepted path, its keys written at the positions it now fills (see compact_slots)."""
        compact_slots(self.k, self.v, self.length, start, slots, attention.KEY_BLOCK)
        self.length = start + len(slots)


def compact_slots(k: torch.Tensor, v: torch.Tensor, length: int, start: int, slots: Sequence[int],
                  block: int) -> None:
    """Copy slots[i] to start + i in every layer: k (layers, kv_heads, capacity/block, head_dim, block),
    v (layers, kv_heads, capacity, head_dim). The slots must be filled (< length), ascending and ≥ start, so a
    slot is read before anything is written over it (the right side is gathered first)."""
    slots = list(slots)
    if any(b <= a for a, b in zip(slots, slots[1:])) or (slots and (slots[0] < start or slots[-1] >= length)):
        raise ValueError(f"slots {slots} are not ascending filled slots from {start} (length {length})")
    moved = [(d, s) for d, s in enumerate(slots, start) if d != s]
    if not moved:
        return
    dst = torch.tensor([d for d, _ in moved])
    src = torch.tensor([s for _, s in moved])
    k[:, :, dst // block, :, dst % block] = k[:, :, src // block, :, src % block]
    v[:, :, dst] = v[:, :, src]


class Decoder:
    """A decoder-only transformer on `weights`; `forward` runs tokens through it on a Cache."""

    def __init__(self, config: DecoderConfig, weights: Weights, context: int | None = None, mode: str = "f32"):
        self.config, self.weights, self.mode = config, weights, mode   # mode: the linear kernels' (linear.matmul)
        self.context = min(context or DEFAULT_CONTEXT, config.max_position_embeddings)
        self.dtype = torch.float32
        ropes = {config.layer_rope(i) for i in range(config.num_hidden_layers)}
        self._tables = {rope: rotary_tables(rope, config.head_dim, self.context) for rope in ropes}
        self._positions = torch.arange(self.context, dtype=torch.int64)
        self._plan = None   # the C layer loop's view of the weights (cpu/layers.Plan), built on first use

    def new_cache(self) -> Cache:
        return Cache(self, -(-self.context // attention.KEY_BLOCK) * attention.KEY_BLOCK)

    def layer_attention(self, i: int, k: torch.Tensor, v: torch.Tensor) -> attention.Attention:
        """Layer i's attention on its cache tensors (attention.cache_tensors)."""
        c, w = self.config, self.weights.layers[i]
        cos, sin = self._tables[c.layer_rope(i)]
        return attention.Attention(k, v, cos, sin, w.q_norm, w.k_norm, c.num_attention_heads, c.rms_norm_eps,
                                   c.scale, (c.sliding_window or 0) if c.is_sliding(i) else 0, c.rope_adjacent)

    @torch.inference_mode()
    def forward(self, cache: Cache, ids: Sequence[int], positions: torch.Tensor | None = None,
                mask: torch.Tensor | None = None, skip: Collection[int] = (), last_only: bool = False,
                mode: str | None = None, head: Sequence[QWeight] | None = None) -> torch.Tensor:
        """Logits (T, vocab) of `ids` appended to the cache (the last row only with `last_only`).

        positions: rotary positions (T,) int64, default the cache slots they fill. mask: (T, T) bool, which
        earlier rows of this call each row sees (a token tree; default all); or (T, m + T) with positions
        (m + T,): a tree whose first nodes are the last m cached slots (at the first m positions), each row
        seeing those the mask names and every slot before them (cpu/attention.attention). skip: layer indices to
        leave out (their cache slots for these ids stay unwritten: crop them before a full forward reads them).
        mode: the linear kernels' activation mode for this call (default the decoder's; a self-draft's "q8").
        head: the output rows to score instead of the whole output layer (a drafter's, vocabtrim.DraftHead)."""
        start, rows, mode = cache.length, len(ids), mode or self.mode
        if start + rows > min(cache.capacity, self.context):
            raise ContextFull(f"{start + rows} positions do not fit a context of {self.context}")
        want = "last" if last_only else "all"
        if rows > PROMPT_CHUNK and positions is None and mask is None:   # a long prompt: a chunk at a time
            starts = range(0, rows, PROMPT_CHUNK)   # with last_only, the earlier chunks' logits go unread
            outs = [self._layers(cache, ids[a:a + PROMPT_CHUNK], None, None, skip,
                                 "none" if last_only and a != starts[-1] else want, mode, head) for a in starts]
            return outs[-1] if last_only else torch.cat(outs)
        return self._layers(cache, ids, positions, mask, skip, want, mode, head)

    def _layers(self, cache: Cache, ids: Sequence[int], positions: torch.Tensor | None, mask: torch.Tensor | None,
                skip: Collection[int], rows_out: str, mode: str, head: Sequence[QWeight] | None) -> torch.Tensor | None:
        """forward's pass through the layers, then the output layer for "all" rows, the "last", or "none" (a long
        prompt's earlier chunks, whose logits nobody reads)."""
        c, w, start, rows = self.config, self.weights, cache.length, len(ids)
        if positions is None:
            positions = self._positions[start:start + rows]
        table, at = w.rows(ids)
        x = linear.embed(table, torch.as_tensor(at, dtype=torch.int64))                              # (T, hidden)
        if c.embed_scale != 1.0:
            x.mul_(c.embed_scale)
        active = [i for i in range(c.num_hidden_layers) if i not in skip]
        norms = [w.layers[i].attn_norm for i in active] + [w.norm]   # the norm in front of each next block
        h = attention.rmsnorm(x, norms[0], c.rms_norm_eps)
        in_c = layers.active()
        if in_c:   # the loop below in one C call (cpu/layers.c): the same kernels in the same order, the same bits
            if self._plan is None or self._plan.weights is not w:
                self._plan = layers.Plan(w, c)
            self._plan.run(cache.addresses, tuple(active), norms, x, h, start, positions, mask, mode)
        for n, i in enumerate(() if in_c else active):   # call by call where it is not built (the references)
            lw = w.layers[i]
            qkv = linear.matmul(h, lw.qkv, mode)                                                        # (T, q+2kv)
            if lw.qkv_bias is not None:
                qkv += lw.qkv_bias
            out = linear.matmul(attention.attention(cache.layers[i], qkv, start, positions, mask), lw.o, mode)
            if lw.o_bias is not None:
                out += lw.o_bias
            h = attention.residual_norm(x, out, lw.post_attn_norm, lw.ffn_norm, c.rms_norm_eps)
            out = linear.matmul(attention.glu(linear.matmul(h, lw.gate_up, mode), c.hidden_act), lw.down, mode)
            h = attention.residual_norm(x, out, lw.post_ffn_norm, norms[n + 1], c.rms_norm_eps)
        cache.length = start + rows
        if rows_out == "none":
            return None
        return linear.matmul(h[-1:] if rows_out == "last" else h, head or [w.output], mode)

    # what code written for a transformers model reads from `lm.model`
    def parameters(self):
        """The float tensors the decoder holds (norms, biases); its matrices are QWeights (weight_bytes)."""
        for lw in self.weights.layers:
            for t in (lw.attn_norm, lw.ffn_norm, lw.qkv_bias, lw.o_bias, lw.q_norm, lw.k_norm, lw.post_attn_norm,
                      lw.post_ffn_norm):
                if t is not None:
                    yield t
        yield self.weights.norm

    def modules(self):
        yield self

    @property
    def weight_bytes(self) -> int:
        return self.weights.nbytes

    @property
    def precision(self) -> str:
        return self.weights.types()
