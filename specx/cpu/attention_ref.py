"""PyTorch references for attention.c's kernels (attention.py): the same math in float32, not row-exact. The
tests hold the kernels to them, and attention.py runs them where no C compiler is available. `layer` is an
attention.Attention: its cache in attention.c's layout (keys in blocks of slots, transposed)."""
from __future__ import annotations

import torch


def reference_rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def reference_residual_norm(x, a, post, w, eps):
    x += a if post is None else reference_rmsnorm(a, post, eps)
    return reference_rmsnorm(x, w, eps)


def reference_glu(gu: torch.Tensor, act: str) -> torch.Tensor:
    gate, up = gu.chunk(2, dim=-1)
    f = torch.nn.functional
    return (f.silu(gate) if act == "silu" else f.gelu(gate, approximate="tanh")) * up


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, adjacent: bool) -> torch.Tensor:
    """x (T, heads, d) rotated by cos, sin (T, d/2), in pairs (2i, 2i+1) or (i, i + d/2)."""
    if adjacent:
        a, b = x[..., 0::2], x[..., 1::2]
    else:
        a, b = x.chunk(2, dim=-1)
    cos, sin = cos[:, None], sin[:, None]
    one, two = a * cos - b * sin, b * cos + a * sin
    return torch.stack((one, two), -1).flatten(-2) if adjacent else torch.cat((one, two), -1)


def reference_attention(layer, qkv: torch.Tensor, start: int, positions: torch.Tensor,
                        mask: torch.Tensor | None = None) -> torch.Tensor:
    kv_heads, capacity, d = layer.v.shape
    rows, end = qkv.shape[0], start + qkv.shape[0]
    if end > capacity or int(positions.max()) >= layer.cos.shape[0]:
        raise ValueError(f"slots {start}..{end} or positions outside the cache or rotary tables")
    q, k, v = qkv.view(rows, -1, d).split([layer.heads, kv_heads, kv_heads], dim=1)
    if layer.q_norm is not None:
        q, k = reference_rmsnorm(q, layer.q_norm, layer.eps), reference_rmsnorm(k, layer.k_norm, layer.eps)
    mine = positions[positions.shape[0] - rows:]                                       # the rows' own positions
    cos, sin = layer.cos[mine], layer.sin[mine]
    q, k = rotate(q, cos, sin, layer.adjacent), rotate(k, cos, sin, layer.adjacent)
    slots, block = torch.arange(start, end), layer.k.shape[3]   # keys in blocks of `block` slots (attention.py)
    layer.k.permute(0, 1, 3, 2)[:, slots // block, slots % block] = k.transpose(0, 1)
    layer.v[:, start:end] = v.transpose(0, 1)
    seen = visible(rows, start, layer.window, mask, positions)                        # (T, end)
    group = layer.heads // kv_heads
    key_rows = layer.k.permute(0, 1, 3, 2).reshape(kv_heads, -1, d)[:, :end].repeat_interleave(group, dim=0)
    values = layer.v[:, :end].repeat_interleave(group, dim=0)
    scores = torch.einsum("thd,hjd->htj", q, key_rows) * layer.scale
    probs = scores.masked_fill(~seen, float("-inf")).softmax(-1)
    return torch.einsum("htj,hjd->thd", probs, values).reshape(rows, -1)


def visible(rows: int, start: int, window: int, mask: torch.Tensor | None, positions: torch.Tensor) -> torch.Tensor:
    """(rows, start + rows) bool: which cache slots each new row sees. A mask (rows, past + rows) and positions
    (past + rows,) cover the last `past` cached slots and the rows (attention's); cached slot j < start - past
    holds position j."""
    past = positions.shape[0] - rows
    key_pos = torch.cat([torch.arange(start - past), positions])
    me, u = torch.arange(rows)[:, None], torch.arange(rows)
    seen = torch.ones(rows, start + rows, dtype=torch.bool)
    if mask is None:
        seen[:, start:] = u <= me
    else:
        seen[:, start - past:] = mask.bool()
        seen[:, start:] = (seen[:, start:] & (u < me)) | (u == me)
    if window > 0:
        seen &= key_pos > positions[past:, None] - window
    return seen
