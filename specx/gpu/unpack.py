"""A GGUF block type's bytes unpacked on the device, as torch operations (the same readings as cpu/quant_blocks.h):
`UNPACK[type](raw)` takes the blocks as rows of bytes (blocks, block bytes) uint8 and returns, per block, its codes
(values, uint8: the quant bits as stored, Q8_0's shifted by 128 to stay unsigned) and its scales (d; the K-quants'
integer group scales sc, and dmin and m for Q4_K/Q5_K; Q4_1/Q5_1's additive minimum as m; None where a type has
none). blocks.py lays them out as planes."""
from __future__ import annotations

import torch


def _f16(raw: torch.Tensor, at: int) -> torch.Tensor:
    return raw[:, at:at + 2].contiguous().view(torch.float16).view(-1)


def _u32(raw: torch.Tensor, at: int) -> torch.Tensor:
    b = raw[:, at:at + 4].to(torch.int64)
    return b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16) | (b[:, 3] << 24)


def _nibbles(qs: torch.Tensor) -> torch.Tensor:
    """16 bytes → 32 codes: value i the low nibble of byte i, value 16 + i its high nibble."""
    return torch.cat([qs & 15, qs >> 4], -1)


def _five(qs: torch.Tensor, qh: torch.Tensor) -> torch.Tensor:
    """Q5_0/Q5_1: the 32 nibbles with bit i of qh as value i's fifth bit."""
    bits = ((qh[:, None] >> torch.arange(32, device=qs.device)) & 1).to(torch.uint8)
    return _nibbles(qs) | (bits << 4)


def _q4_0(raw):
    return _nibbles(raw[:, 2:18]), _f16(raw, 0), None, None, None


def _q4_1(raw):
    return _nibbles(raw[:, 4:20]), _f16(raw, 0), None, None, _f16(raw, 2)


def _q5_0(raw):
    return _five(raw[:, 6:22], _u32(raw, 2)), _f16(raw, 0), None, None, None


def _q5_1(raw):
    return _five(raw[:, 8:24], _u32(raw, 4)), _f16(raw, 0), None, None, _f16(raw, 2)


def _q8_0(raw):
    return (raw[:, 2:34].view(torch.int8).to(torch.int16) + 128).to(torch.uint8), _f16(raw, 0), None, None, None


def _iq4_xs(raw):
    ib = torch.arange(8, device=raw.device)
    low = (raw[:, 4 + ib // 2] >> (4 * (ib % 2)).to(torch.uint8)) & 15
    high = ((raw[:, 2].to(torch.int32) | (raw[:, 3].to(torch.int32) << 8))[:, None] >> (2 * ib)) & 3
    sc = ((low.to(torch.int32) | (high << 4)) - 32).to(torch.int8)
    qs = raw[:, 8:136].reshape(-1, 8, 16)
    return _nibbles(qs).reshape(-1, 256), _f16(raw, 0), sc, None, None


def _k4_scales(s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Q4_K/Q5_K's 12 scale bytes → 8 six-bit scales and 8 mins (ggml's get_scale_min_k4)."""
    sc = torch.cat([s[:, 0:4] & 63, (s[:, 8:12] & 15) | ((s[:, 0:4] >> 6) << 4)], 1)
    m = torch.cat([s[:, 4:8] & 63, (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)], 1)
    return sc.to(torch.int8), m


def _q4_k(raw):
    sc, m = _k4_scales(raw[:, 4:16])
    qs = raw[:, 16:144].reshape(-1, 4, 1, 32)   # value 32j + p: byte 32·(j/2) + p, nibble j % 2
    return torch.cat([qs & 15, qs >> 4], 2).reshape(-1, 256), _f16(raw, 0), sc, _f16(raw, 2), m


def _q5_k(raw):
    sc, m = _k4_scales(raw[:, 4:16])
    qs = raw[:, 48:176].reshape(-1, 4, 1, 32)
    low = torch.cat([qs & 15, qs >> 4], 2).reshape(-1, 8, 32)
    shifts = torch.arange(8, device=raw.device, dtype=torch.uint8)[None, :, None]
    high = (raw[:, 16:48][:, None, :] >> shifts) & 1               # bit j of qh[p]: value 32j + p
    return (low | (high << 4)).reshape(-1, 256), _f16(raw, 0), sc, _f16(raw, 2), m


def _q6_k(raw):
    ql = raw[:, 0:128].reshape(-1, 2, 2, 32)    # value 128n + 32q + p: ql[64n + 32(q % 2) + p], nibble q / 2
    qh = raw[:, 128:192].reshape(-1, 2, 32)     # ... its top two bits (qh[32n + p] >> 2q) & 3
    low = torch.stack([ql[:, :, 0] & 15, ql[:, :, 1] & 15, ql[:, :, 0] >> 4, ql[:, :, 1] >> 4], 2)
    high = torch.stack([(qh >> (2 * q)) & 3 for q in range(4)], 2)
    return (low | (high << 4)).reshape(-1, 256), _f16(raw, 208), raw[:, 192:208].view(torch.int8), None, None


UNPACK = {"Q4_0": _q4_0, "Q4_1": _q4_1, "Q5_0": _q5_0, "Q5_1": _q5_1, "Q8_0": _q8_0, "IQ4_NL": _q4_0,
           "IQ4_XS": _iq4_xs, "Q4_K": _q4_k, "Q5_K": _q5_k, "Q6_K": _q6_k}
