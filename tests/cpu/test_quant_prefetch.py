"""How far ahead a call of one row prefetches weights (quant_prefetch.one_row_choice): a hint that never changes a
result, timed once per machine at one row, saved, reused, and set by the environment."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from specx.cpu import quant, quant_prefetch, quant_ref, timed

needs_kernels = pytest.mark.skipif(not quant.available(), reason=f"quant not built here: {quant.why_not()}")


@needs_kernels
def test_one_row_distance_changes_no_result():
    """Calls of one row and of several give the same bits whatever the one-row distance (off, the others', far)."""
    lib = quant._default()
    rng = np.random.default_rng(5)
    group = [quant_ref.random_weight(name, 300, 512, rng) for name in ("Q4_K", "Q6_K", "Q8_0", "F16")]
    xs = [torch.randn(m, 512, generator=torch.Generator().manual_seed(m)) for m in (1, 3)]
    was = lib.prefetch_one(None)
    try:
        outs = []
        for nbytes in (None, 0, 8192, 1 << 20):
            lib.prefetch_one(nbytes)
            outs.append([lib.matmul(x, group, mode) for x in xs for mode in quant.MODES])
    finally:
        lib.prefetch_one(was)
    assert all(torch.equal(a, b) for other in outs[1:] for a, b in zip(outs[0], other))


@needs_kernels
def test_the_setting_reads_back():
    """prefetch_one returns the previous setting; None is "as far as other calls"."""
    lib = quant._default()
    was = lib.prefetch_one(4096)
    try:
        assert lib.prefetch_one(None) == 4096
        assert lib.prefetch_one(16384) is None
        assert lib.prefetch_one(None) == 16384
    finally:
        lib.prefetch_one(was)


def test_the_environment_gives_the_bytes(monkeypatch):
    """SPECX_QUANT_PREFETCH_ONE=N decides without timing; the pick stands for N bytes."""
    monkeypatch.setenv(quant_prefetch.ONE_ROW_ENV, "16384")
    choice = quant_prefetch.one_row_choice(None)
    assert choice.source == quant_prefetch.ONE_ROW_ENV and quant_prefetch.one_row_bytes(choice.pick) == 16384
    assert quant_prefetch.one_row_bytes("as far as other calls") is None


@needs_kernels
def test_prefetching_off_leaves_no_one_row_choice(monkeypatch):
    """With prefetching off (SPECX_QUANT_PREFETCH=0) there is no one-row distance to choose, and nothing is timed."""
    monkeypatch.setenv(quant_prefetch.PREFETCH_ENV, "0")
    monkeypatch.setattr(quant_prefetch, "prefetch_stack", lambda rng: pytest.fail("timed with prefetching off"))
    way, one = quant_prefetch.prefetch_choices(quant._default())
    assert way.pick == "off" and one is None


@needs_kernels
def test_the_one_row_distance_is_timed_at_one_row(tmp_path, monkeypatch):
    """Without the environment, every distance is timed on the prefetch stack at one row only, the pick saved beside
    the build (its sentence saying so) and read back by the next process; the stack is built once for both choices.
    "off" is left out of the ways: where it wins (it did on a CI machine) there is no one-row choice to time."""
    monkeypatch.delenv(quant_prefetch.ONE_ROW_ENV, raising=False)
    monkeypatch.delenv(quant_prefetch.PREFETCH_ENV, raising=False)
    monkeypatch.setattr(quant_prefetch, "PREFETCH_WAYS",
                        {name: way for name, way in quant_prefetch.PREFETCH_WAYS.items() if way[0]})
    monkeypatch.setattr(quant_prefetch, "PREFETCH_LAYERS", 1)
    built, make = [], quant_prefetch.prefetch_stack
    monkeypatch.setattr(quant_prefetch, "prefetch_stack", lambda rng: built.append(1) or make(rng))
    rows = []
    monkeypatch.setattr(timed, "time_options", _recording(timed.time_options, rows))
    lib = dataclasses.replace(quant._default(), path=tmp_path / "quant-test.so")
    was, was_one = lib.prefetch(0, False), lib.prefetch_one(None)
    try:
        way, one = quant_prefetch.prefetch_choices(lib)
        again = quant_prefetch.one_row_choice(lib)
    finally:
        lib.prefetch(*was)
        lib.prefetch_one(was_one)
    assert built == [1] and rows == [timed.ROWS, (1,)]
    assert way.pick in quant_prefetch.PREFETCH_WAYS
    assert one.source == "timed" and one.pick in quant_prefetch.ONE_ROW_WAYS
    assert set(one.ms) == set(quant_prefetch.ONE_ROW_WAYS) and "at 1 row:" in one.sentence()
    assert (again.source, again.pick, again.ms) == ("saved", one.pick, one.ms)


def _recording(time_options, seen: list):
    """time_options, noting the rows each timing runs at (timed.choose passes them all)."""
    def wrapped(what, options, here, workload, rows):
        seen.append(rows)
        return time_options(what, options, here, workload, rows)
    return wrapped
