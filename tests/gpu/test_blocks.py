"""GGUF blocks as GPU planes (specx/gpu/blocks.py): every bit of the file kept, gguf's float32 values given back
bit for bit (extreme and zero scales included), rows taken alike from every plane, and the device bytes priced."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from specx.cpu.quant_ref import random_weight
from specx.cpu.qweight import BLOCKS, dequantize as gguf_values
from specx.gpu import blocks

TYPES = sorted(blocks.FORMATS)


@pytest.mark.parametrize("extreme", [False, True])
@pytest.mark.parametrize("name", TYPES)
def test_planes_give_ggufs_values_bit_for_bit(name, extreme):
    """repack then dequantize equals the gguf package's float32 values, bit for bit (NaN and inf alike)."""
    q = random_weight(name, 7, 768, np.random.default_rng(hash(name) % 1000), extreme)
    got = blocks.dequantize(blocks.repack(q, "cpu")).numpy()
    assert np.array_equal(got.view(np.uint32), gguf_values(q).view(np.uint32))


@pytest.mark.parametrize("name", TYPES)
def test_codes_round_trip_through_the_planes(name):
    """The lo and hi planes hold each code whole: codes() rebuilds what the block held, for every code value."""
    q = random_weight(name, 3, 256, np.random.default_rng(1), False)
    b = blocks.repack(q, "cpu")
    c = blocks.codes(b)
    assert c.shape == (3, 256) and int(c.max()) < 1 << (4 + b.format.high_bits)
    again = blocks.Blocks(b.type, b.rows, b.cols, blocks._lo(c), blocks._hi(c, b.format.high_bits), b.d, b.sc,
                          b.dmin, b.m)
    assert torch.equal(blocks.codes(again), c)


@pytest.mark.parametrize("name", TYPES)
def test_taken_rows_are_those_rows(name):
    """take(ids) picks the same rows from every plane: an embedding lookup's values are the table's rows."""
    q = random_weight(name, 9, 512, np.random.default_rng(2), False)
    b = blocks.repack(q, "cpu")
    ids = torch.tensor([4, 0, 8, 4])
    assert torch.equal(blocks.dequantize(b.take(ids)), blocks.dequantize(b)[ids])


@pytest.mark.parametrize("name", TYPES)
def test_device_bytes_are_the_planes_bytes(name):
    """device_bytes (the memory plan's price) is what the planes hold; at most 3% over the file's bytes."""
    q = random_weight(name, 4, 1024, np.random.default_rng(3), False)
    b = blocks.repack(q, "cpu")
    assert blocks.device_bytes(name, 4, 1024) == b.nbytes
    assert q.nbytes <= b.nbytes <= 1.03 * q.nbytes


def test_types_and_rows_without_planes_are_said():
    """Q2_K, Q3_K, the float types and rows that are not whole 64-value chunks have no planes (they run dense),
    priced at two bytes a weight; repack refuses them."""
    assert not blocks.supported("Q3_K", 256) and not blocks.supported("F16", 256)
    assert not blocks.supported("Q8_0", 96) and blocks.supported("Q8_0", 128)
    assert blocks.device_bytes("Q2_K", 10, 256) == 2 * 10 * 256
    with pytest.raises(ValueError, match="no GPU planes"):
        blocks.repack(random_weight("Q3_K", 2, 256, np.random.default_rng(4), False), "cpu")
    assert set(blocks.FORMATS) | {"Q2_K", "Q3_K", "F32", "F16", "BF16"} == set(BLOCKS)


@pytest.mark.parametrize("name", TYPES)
def test_a_matrix_repacked_a_slab_of_rows_at_a_time_has_the_same_planes(name, monkeypatch):
    """Slabs of 3 rows (the last one short) assemble every plane as one repack of the whole matrix does."""
    q = random_weight(name, 10, 512, np.random.default_rng(6), True)
    whole = blocks.repack(q, "cpu")
    monkeypatch.setattr(blocks, "REPACK_SLAB", 3 * 512)
    slabs = blocks.repack(q, "cpu")
    assert all(torch.equal(a, b) for a, b in zip(whole.planes(), slabs.planes()))
    assert len(whole.planes()) == len(slabs.planes())
