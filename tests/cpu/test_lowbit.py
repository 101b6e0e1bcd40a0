"""The Q2_K quantizer of `--drafter self-q2k` and the Q4_0 one of a re-encoded drafter (cpu/lowbit.c) against
their numpy references (cpu/lowbit_ref.py): the same bytes for every row, ordinary or not."""
from __future__ import annotations

import numpy as np
import pytest

from specx.cpu import lowbit
from specx.cpu.lowbit_ref import quantize_q2_k as reference
from specx.cpu.lowbit_ref import quantize_q4_0 as reference_q4_0

needs_c = pytest.mark.skipif(not lowbit.available(), reason="no C compiler: the reference runs instead")


def rows_of_every_kind(rng: np.random.Generator) -> np.ndarray:
    """Gaussian rows of several sizes, and rows that are zero, constant, all negative, all positive, huge
    (ranges that overflow float32 and half scales), tiny (subnormal half scales) or mixed per sub-block."""
    cols = 512
    rows = [rng.standard_normal(cols) * s for s in (0.02, 1.0, 300.0)]
    rows += [np.zeros(cols), np.full(cols, 0.5), np.full(cols, -0.5), -np.abs(rng.standard_normal(cols)),
             np.abs(rng.standard_normal(cols)), rng.uniform(-3.4e38, 3.4e38, cols), rng.standard_normal(cols) * 1e6,
             rng.standard_normal(cols) * 1e-7, rng.standard_normal(cols) * 1e-40]
    mixed = rng.standard_normal(cols) * np.repeat(10.0 ** rng.integers(-30, 30, cols // 16), 16)
    signed_zeros = np.where(rng.random(cols) < 0.5, -0.0, 0.0)
    return np.stack(rows + [mixed, signed_zeros]).astype(np.float32)


@needs_c
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_c_quantizer_writes_the_references_bytes(seed):
    """Bit for bit, whatever the rows hold and however many threads split them."""
    x = rows_of_every_kind(np.random.default_rng(seed))
    want = reference(x)
    for threads in (1, 2):
        assert np.array_equal(lowbit.quantize_q2_k(x, threads), want)


def test_the_reference_decodes_back_to_its_rows_within_a_level():
    """gguf's dequantization of the reference's blocks lies within one level of its sub-block of every value
    (a value is rounded to the nearest of four levels; the 4-bit scale and min move each level by at most
    the half-level the rounding of d and dmin adds)."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    x = (np.random.default_rng(3).standard_normal((8, 1024)) * 0.02).astype(np.float32)
    back = dequantize(reference(x).reshape(8, -1), GGMLQuantizationType.Q2_K).reshape(x.shape)
    sub = x.reshape(-1, 16)
    level = ((sub.max(1) - np.minimum(sub.min(1), 0)) / 3)[:, None]
    assert (np.abs(back.reshape(-1, 16) - sub) <= level).all()


def test_rows_that_are_not_whole_blocks_or_not_finite_are_refused_before_c_runs():
    """A ValueError, never a kernel reading past a row or quantizing a NaN."""
    with pytest.raises(ValueError, match="whole blocks"):
        lowbit.quantize_q2_k(np.zeros((2, 300), dtype=np.float32))
    bad = np.zeros((1, 256), dtype=np.float32)
    bad[0, 7] = np.inf
    with pytest.raises(ValueError, match="not finite"):
        lowbit.quantize_q2_k(bad)


@needs_c
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_c_q4_0_quantizer_writes_the_references_bytes(seed):
    """Bit for bit, whatever the rows hold (zeros of both signs, subnormal and overflowing scales, ties for the
    largest magnitude) and however many threads split them."""
    x = rows_of_every_kind(np.random.default_rng(seed))
    ties = np.tile(np.array([1.0, -1.0] * 16, dtype=np.float32), 16)[None, :]
    x = np.concatenate([x, ties, -ties])
    want = reference_q4_0(x)
    for threads in (1, 2):
        assert np.array_equal(lowbit.quantize_q4_0(x, threads), want)


def test_the_q4_0_reference_is_ggmls_rule_and_decodes_within_a_step():
    """gguf's own Q4_0 quantizer (ggml's rule) writes the same bytes on ordinary rows, and gguf's dequantization
    of them lies within a step (|d|: half of one, but the levels reach 7|d| on the side opposite the largest
    magnitude, which they hold but for d's rounding to fp16) of every value."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize, quantize

    x = (np.random.default_rng(4).standard_normal((8, 1024)) * 0.02).astype(np.float32)
    mine = reference_q4_0(x)
    assert np.array_equal(mine, quantize(x, GGMLQuantizationType.Q4_0).reshape(-1))
    back = dequantize(mine.reshape(8, -1), GGMLQuantizationType.Q4_0).reshape(x.shape)
    step = np.abs(x.reshape(-1, 32)).max(1, keepdims=True) / 8
    error = np.abs(back.reshape(-1, 32) - x.reshape(-1, 32))
    assert (error <= step * 1.001).all() and (error.min(1) <= 8 * step[:, 0] * 2.0 ** -11).all()


def test_q4_0_rows_that_are_not_whole_blocks_are_refused_before_c_runs():
    with pytest.raises(ValueError, match="whole blocks of 32"):
        lowbit.quantize_q4_0(np.zeros((2, 48), dtype=np.float32))
