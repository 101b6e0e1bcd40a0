"""specx.decoder.filerows: an untied embedding read from the file by rows gives the map's rows, keeps serving
a file replaced by rename, refuses one cut in place, and leaves the table's pages out of the process."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from conftest import fixture_model
from test_gguf_file import tiny_gguf
from specx.decoder.gguf_file import open_gguf
from specx.decoder.linear import embed, take_rows
from specx.errors import ModelFileError


@pytest.fixture
def tiny(tmp_path):
    return tiny_gguf(tmp_path / "tiny.gguf")


@pytest.mark.parametrize("name", ["w_q8", "w_q4k", "w_q2k", "w_f32", "w_q3k", "w_iq4xs"])
def test_rows_read_from_the_file_equal_the_maps_rows(tiny, name):
    """Any ids, repeated and unordered: the lookup through FileRows equals the lookup in the mapped table."""
    with open_gguf(tiny) as g:
        w, rows = g.weight(name), g.rows(name)
        ids = [w.rows - 1, 0, w.rows - 1, 0][:max(w.rows, 2) * 2]
        table, at = rows.take(ids)
        assert table.rows == len(set(ids)) and table.data.tobytes() == take_rows(w, sorted(set(ids))).data.tobytes()
        assert torch.equal(embed(table, torch.tensor(at)), embed(w, torch.tensor(ids)))


def test_ids_outside_the_table_are_refused(tiny):
    with open_gguf(tiny) as g:
        rows = g.rows("w_q8")
        with pytest.raises(ValueError, match="token ids"):
            rows.take([3])
        with pytest.raises(ValueError, match="token ids"):
            rows.take([-1])


def test_a_file_replaced_by_rename_keeps_serving_the_opened_rows(tmp_path, tiny):
    """The reads use the descriptor the map was made from: after os.replace they read the old file."""
    with open_gguf(tiny) as g:
        rows, old = g.rows("w_q8"), g.raw("w_q8").tobytes()
    os.replace(tiny_gguf(tmp_path / "new.gguf", seed=1), tiny)
    table, _ = rows.take([0, 1, 2])
    assert table.data.tobytes() == old


def test_a_file_cut_in_place_is_an_error_at_the_next_lookup(tiny):
    """Truncated after loading: a ModelFileError naming the change, never a read of lost bytes."""
    with open_gguf(tiny) as g:
        rows = g.rows("w_q8")
    rows.take([0])
    os.truncate(tiny, tiny.stat().st_size // 2)
    with pytest.raises(ModelFileError, match="changed on disk"):
        rows.take([0])


def present_pages(address: int, nbytes: int) -> set[int]:
    """The pages of this process's address range that are present (/proc/self/pagemap, bit 63)."""
    first, count = address // 4096, -(-(address % 4096 + nbytes) // 4096)
    with open("/proc/self/pagemap", "rb") as f:
        f.seek(first * 8)
        entries = np.frombuffer(f.read(count * 8), dtype="<u8")
    return set(np.nonzero((entries >> np.uint64(63)) & np.uint64(1))[0].tolist())


@pytest.mark.slow
def test_a_forward_leaves_the_untied_tables_pages_out_of_the_process():
    """The fixture 0.5B's 89 MiB table, untied: a forward over 300 distinct tokens maps none of its pages into the
    process (through the map it would fault in a page for each). Compared with the pages present after loading:
    a load may fault in a few pages at the table's ends as it reads its neighbours (the kernel maps pages around a
    fault, and more where the page cache holds large folios)."""
    from specx.decoder import lm

    model = lm.load(fixture_model("qwen2.5-coder-0.5b"), context=512).model
    table = model.weights.embed
    assert model.weights.lookup is not None
    span = (table.data.ctypes.data, table.data.nbytes)
    loaded = present_pages(*span)
    ids = list(range(1000, 151000, 500))
    model.forward(model.new_cache(), ids, last_only=True)
    assert present_pages(*span) - loaded == set()
