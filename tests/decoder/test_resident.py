"""Layer matrices copied from the file's map into huge-page memory (decoder/resident.py): the same bytes, the
same logits bit for bit, a tied output layer still the embedding, and only read-only maps released."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from test_decoder import ids
from test_decoder_gguf import gguf_model, write_gguf
from specx.cpu import packing, quant, quant_ref
from specx.cpu.qweight import QWeight
from specx.decoder import linear, resident
from specx.decoder.lm import load, read


@pytest.mark.parametrize("setting, given", [("always [madvise] never", True), ("[always] madvise never", True),
                                            ("always madvise [never]", False), ("", False)])
def test_huge_pages_are_wanted_only_where_the_kernel_offers_them(setting, given):
    """The sysfs setting's bracketed choice decides: always or madvise give huge pages on request."""
    assert resident.offered(setting) is given


@pytest.mark.parametrize("family", ["qwen2", "qwen2-tied"])
def test_copied_weights_hold_the_files_bytes_and_compute_the_same_logits(tmp_path, monkeypatch, family):
    """Every matrix after copy_in has the mapped matrix's bytes at another address; a tied output layer is still
    the embedding; prefill and cached decode give bit-identical logits with the copy and with the map."""
    path = write_gguf(gguf_model(family), family, tmp_path / f"{family}.gguf")
    mapped = read(path).weights
    copied = resident.copy_in(read(path).weights)
    pairs = list(zip(mapped.matrices(), copied.matrices()))
    assert len(pairs) == len(mapped.matrices()) == len(copied.matrices())
    for a, b in pairs:
        assert np.array_equal(a.data, b.data) and a.data.ctypes.data != b.data.ctypes.data
    assert (copied.output is copied.embed) == (family == "qwen2-tied")
    tokens = ids(9)
    monkeypatch.setenv(resident.ENV, "map")
    lm_map = load(path)
    monkeypatch.setattr(resident, "wanted", lambda: True)
    lm_moving = load(path)
    assert "2 MiB pages" in lm_moving.kernels and "2 MiB pages" not in lm_map.kernels
    moved = lm_moving.model.weights
    assert all(m.data.flags.writeable for m in moved.matrices() if m is not moved.embed or moved.output is moved.embed)
    got = [torch.cat([lm.forward(tokens[:20])] + [lm.forward([t]) for t in tokens[20:]]) for lm in (lm_map, lm_moving)]
    assert torch.equal(got[0], got[1])


def test_the_switch_keeps_the_map(monkeypatch):
    """SPECX_WEIGHTS=map: no copy, whatever the kernel offers."""
    monkeypatch.setenv(resident.ENV, "map")
    assert not resident.wanted()


def test_a_packing_build_gets_the_copy_without_huge_pages_and_the_map_switch_still_wins(monkeypatch):
    """Where no huge pages are offered, a kernel build that packs matrices still gets the copy (its packed kernels
    gain more than the copy costs), a build that does not pack reads the map; SPECX_WEIGHTS=map reads it always."""
    monkeypatch.setattr(resident, "wanted", lambda: False)
    monkeypatch.delenv(resident.ENV, raising=False)
    assert resident.copies(True) and not resident.copies(False)
    assert "2 MiB pages" not in resident.describe() and "copied from the file's map" in resident.describe()
    monkeypatch.setenv(resident.ENV, "map")
    assert not resident.copies(True)
    monkeypatch.setattr(resident, "wanted", lambda: True)
    assert "2 MiB pages" in resident.describe()


@pytest.mark.skipif(not quant.available() or not packing.builds(quant._default()),
                    reason="no build with packed kernels here")
def test_without_huge_pages_a_q8_model_is_still_packed(tmp_path, monkeypatch):
    """The lean decoder in q8 with a packing build and no huge pages offered: its Q4_K layers are packed (the
    kernels sentence says so, and that they were copied from the map) and its logits are the map's."""
    from test_dense_blocks import block_gguf

    path = block_gguf(tmp_path / "q.gguf", types=("Q4_K", "Q6_K"))
    monkeypatch.setenv(resident.ENV, "map")
    lm_map = load(path, mode="q8")
    monkeypatch.delenv(resident.ENV)
    monkeypatch.setattr(resident, "wanted", lambda: False)
    lm = load(path, mode="q8")
    assert "packed 16 rows" in lm.kernels and "copied from the file's map" in lm.kernels
    assert "packed" not in lm_map.kernels
    tokens = ids(9)
    got = [torch.cat([m.forward(tokens[:5])] + [m.forward([t]) for t in tokens[5:]]) for m in (lm_map, lm)]
    assert torch.equal(got[0], got[1])


def test_writable_sources_are_copied_but_never_released():
    """A matrix in ordinary (writable) memory keeps its bytes after being copied: releasing its pages would zero
    them."""
    rng = np.random.default_rng(0)
    data = rng.integers(0, 255, 34 * 4096, dtype=np.uint8)   # Q8_0: 34 bytes per 32 values
    m = QWeight(8, data, 16, 8192)
    keep = data.copy()
    out = resident.region(m.nbytes)
    resident._copy(resident.Chunk(m.data, out))
    assert np.array_equal(data, keep) and np.array_equal(out, keep)


def test_a_copy_that_fails_leaves_the_map_and_says_nothing_of_huge_pages(tmp_path, monkeypatch):
    """Memory not had for the copy: the run reads through the map, and the kernels line does not claim the copy."""
    path = write_gguf(gguf_model("qwen2"), "qwen2", tmp_path / "q.gguf")
    monkeypatch.setattr(resident, "wanted", lambda: True)

    def fail(weights, output=True, pack=None):
        raise MemoryError

    monkeypatch.setattr(resident, "copy_in", fail)
    lm = load(path)
    assert "2 MiB pages" not in lm.kernels
    assert not any(m.data.flags.writeable for m in lm.model.weights.matrices())


@pytest.mark.parametrize("family", ["qwen2", "qwen2-tied"])
def test_a_drafters_output_layer_stays_in_the_map_and_its_drafts_are_the_same(tmp_path, monkeypatch, family):
    """A drafter with VocabTrim (draft_vocab > 0) scores the rows its DraftHead copied: its layers go to huge
    pages, its untied output layer stays in the file's map (a tied one is the embedding, looked up every token:
    copied), and its logits equal those of the same drafter whose output layer was copied too."""
    path = write_gguf(gguf_model(family), family, tmp_path / f"{family}.gguf")
    monkeypatch.setattr(resident, "wanted", lambda: True)
    tied = family == "qwen2-tied"
    kept = resident.copy_in(read(path).weights, output=False)
    assert kept.output.data.flags.writeable is tied and (kept.embed is kept.output) is tied
    assert all(m.data.flags.writeable for l in kept.layers for m in (*l.qkv, *l.o, *l.gate_up, *l.down))
    drafter = load(path, draft_vocab=64)
    weights = drafter.model.weights
    assert "2 MiB pages" in drafter.kernels and weights.output.data.flags.writeable is tied
    copied = load(path)   # every matrix copied, the output layer included
    tokens = ids(12)
    got = drafter.forward(tokens)
    full = copied.forward(tokens)[:, drafter.head.ids]
    assert torch.equal(got, full)


@pytest.mark.skipif(not quant.available() or not packing.builds(quant._default()),
                    reason="no build with packed kernels here")
def test_the_copy_packs_the_q4_0_q4k_and_q6k_matrices_and_nothing_else(tmp_path):
    """copy_in with a packing build: a layer's or the output layer's Q4_0, Q4_K or Q6_K matrix of whole tiles is packed (its bytes unpack to the source's, its rows read as the source's), one of
    24 rows and the other types are copied as they are."""
    path = write_gguf(gguf_model("qwen2"), "qwen2", tmp_path / "q.gguf")
    weights = read(path).weights
    rng = np.random.default_rng(13)
    q4 = [quant_ref.random_weight(name, rows, 256, rng)
          for name, rows in (("Q4_K", 32), ("Q4_K", 24), ("Q6_K", 32), ("Q4_0", 48))]
    layer = dataclasses.replace(weights.layers[0], gate_up=q4[:2], down=[q4[2]], o=[q4[3]])
    weights = dataclasses.replace(weights, layers=[layer] + weights.layers[1:],
                                  output=quant_ref.random_weight("Q4_K", 64, 256, rng))
    moved = resident.copy_in(weights, pack=quant._default())
    gate, up, down, o = moved.layers[0].gate_up + moved.layers[0].down + moved.layers[0].o
    q40 = "Q4_0" in packing.types(quant._default())
    assert gate.packed and down.packed and o.packed == q40 and not up.packed and moved.output.packed
    assert (gate.name, down.name, o.name, moved.output.name) == ("Q4_K", "Q6_K", "Q4_0", "Q4_K")
    for a, b in ((gate, q4[0]), (down, q4[2]), (o, q4[3]), (moved.output, weights.output)):
        assert np.array_equal(packing.unpack(a).data if a.packed else a.data, b.data)
    ids = [63, 0, 17, 17, 40]
    assert np.array_equal(linear.take_rows(moved.output, ids).data, linear.take_rows(weights.output, ids).data)
    with pytest.raises(IndexError):
        linear.take_rows(moved.output, [64])
    assert np.array_equal(up.data, q4[1].data)
    others = [m for l in moved.layers[1:] for m in (*l.qkv, *l.o, *l.gate_up, *l.down)]
    assert others and not any(m.packed for m in others)
