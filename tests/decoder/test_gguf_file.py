"""specx.decoder.gguf_file: the bounded GGUF reader against the gguf package's reader, bad files,
and a map that outlives the file's replacement."""
from __future__ import annotations

import os
import random
import struct
from pathlib import Path

import numpy as np
import pytest

from conftest import fixture_model
from specx.cpu.qweight import NAMES
from specx.decoder.gguf_file import open_gguf, type_name
from specx.decoder.gguf_strings import Strings
from specx.errors import ModelFileError, ModelUnavailable, SpecxError

FIXTURES = ["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"]


def tiny_gguf(path: Path, seed: int = 0, alignment: int | None = None) -> Path:
    """A small valid GGUF: a value of every metadata type, and tensors of several ggml types and ranks
    (names chosen to occur once in the file, so tests can find their entries)."""
    import gguf
    from gguf import GGMLQuantizationType as T, GGUFValueType as V

    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), arch="llama")
    if alignment:
        w.add_custom_alignment(alignment)
    w.add_string("general.name", "tiny ç")
    for vtype, value in [(V.UINT8, 200), (V.INT8, -5), (V.UINT16, 60000), (V.INT16, -300), (V.UINT32, 4_000_000_000),
                         (V.INT32, -7), (V.FLOAT32, 0.1), (V.UINT64, 2**60), (V.INT64, -(2**40)),
                         (V.FLOAT64, 1e-300), (V.BOOL, True)]:
        w.add_key_value(f"test.{vtype.name.lower()}", value, vtype)
    w.add_key_value("test.bools", [True, False, True], V.ARRAY, sub_type=V.BOOL)
    w.add_array("test.ints", [3, -1, 2**20])
    w.add_array("test.floats", [0.5, -2.25])
    w.add_array("tokenizer.ggml.tokens", ["a", "b", "ç", "<s>", "日本"])
    w.add_array("tokenizer.ggml.merges", ["a b", "ç ç"])
    values = rng.standard_normal((3, 64)).astype(np.float32)
    w.add_tensor("w_f32", rng.standard_normal((4, 32)).astype(np.float32))
    w.add_tensor("w_f16", rng.standard_normal(32).astype(np.float16))
    w.add_tensor("w_bf16", rng.integers(0, 2**16, (2, 32), dtype=np.uint16).view(np.uint8), raw_dtype=T.BF16)
    w.add_tensor("w_q8", gguf.quants.quantize(values, T.Q8_0), raw_dtype=T.Q8_0)
    w.add_tensor("w_q4k", rng.integers(0, 256, (2, 144), dtype=np.uint8), raw_dtype=T.Q4_K)
    q3k = rng.integers(0, 256, (2, 110), dtype=np.uint8)
    q3k[:, 108:] = rng.uniform(-0.01, 0.01, (2, 1)).astype(np.float16).view(np.uint8)   # finite d
    w.add_tensor("w_q3k", q3k, raw_dtype=T.Q3_K)
    q2k = rng.integers(0, 256, (3, 84), dtype=np.uint8)
    q2k[:, 80:] = rng.uniform(-0.01, 0.01, (3, 2)).astype(np.float16).view(np.uint8)   # finite d, dmin
    w.add_tensor("w_q2k", q2k, raw_dtype=T.Q2_K)
    w.add_tensor("w_3d", rng.standard_normal((2, 3, 32)).astype(np.float32))
    iq4nl, iq4xs = rng.integers(0, 256, (3, 2 * 18), dtype=np.uint8), rng.integers(0, 256, (2, 136), dtype=np.uint8)
    iq4nl.reshape(3, 2, 18)[..., :2] = rng.uniform(-0.01, 0.01, (3, 2, 1)).astype(np.float16).view(np.uint8)
    iq4xs[:, :2] = rng.uniform(-0.01, 0.01, (2, 1)).astype(np.float16).view(np.uint8)   # finite d
    w.add_tensor("w_iq4nl", iq4nl, raw_dtype=T.IQ4_NL)
    w.add_tensor("w_iq4xs", iq4xs, raw_dtype=T.IQ4_XS)
    w.add_tensor("w_iq2", rng.integers(0, 256, (1, 74), dtype=np.uint8), raw_dtype=T.IQ2_XS)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def entry(data: bytes, name: str) -> int:
    """Where what follows a key's or a tensor's name starts (the value type, or n_dims)."""
    at = data.index(name.encode() if isinstance(name, str) else name)
    assert data.count(name.encode()) == 1
    return at + len(name.encode())


def put(data: bytes, at: int, fmt: str, value) -> bytes:
    return data[:at] + struct.pack("<" + fmt, value) + data[at + struct.calcsize(fmt):]


def refused(path: Path) -> ModelFileError:
    """Open a bad file: a ModelFileError from a named check (the safety net sets a __cause__)."""
    with pytest.raises(ModelFileError) as e:
        open_gguf(path)
    assert e.value.__cause__ is None, f"caught only by the safety net: {e.value.message}"
    assert path.name in e.value.message and e.value.hint
    return e.value


@pytest.fixture
def tiny(tmp_path) -> Path:
    return tiny_gguf(tmp_path / "tiny.gguf")


def reader_values(reader) -> dict:
    return {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}


def plain(value):
    return value.tolist() if isinstance(value, np.ndarray) else value


# ---- what a good file reads as -------------------------------------------------------------

def test_metadata_and_tensor_table_equal_gguf_readers(tiny):
    """Every key and value, every tensor's type, shape (ne order), offset and size, as GGUFReader
    reads them; each tensor's bytes are the same bytes."""
    import gguf

    reader = gguf.GGUFReader(tiny)
    with open_gguf(tiny) as g:
        assert g.version == 3
        assert {k: plain(v) for k, v in g.meta.items()} == reader_values(reader)
        assert list(g.tensors) == [t.name for t in reader.tensors]
        for t in reader.tensors:
            info = g.tensors[t.name]
            assert (info.type, info.shape, info.offset, info.nbytes) == \
                   (int(t.tensor_type), tuple(int(d) for d in t.shape), t.data_offset, t.n_bytes)
            assert g.raw(t.name).tobytes() == t.data.tobytes()


def test_value_types_are_python_and_numpy_values(tiny):
    """Scalars are Python values, string arrays lists of str, numeric arrays numpy arrays."""
    with open_gguf(tiny) as g:
        assert g.meta["test.bool"] is True and g.meta["test.uint64"] == 2**60 and g.meta["general.name"] == "tiny ç"
        assert g.meta["tokenizer.ggml.tokens"] == ["a", "b", "ç", "<s>", "日本"]
        assert g.meta["test.bools"].dtype == bool and g.meta["test.ints"].dtype == np.int32


def test_weight_is_a_zero_copy_view_with_rows_ne1_and_cols_ne0(tiny):
    """weight() hands out the map's bytes, not a copy, shaped as the kernels take it."""
    with open_gguf(tiny) as g:
        for name in ("w_f32", "w_q8", "w_q4k", "w_q2k", "w_bf16"):
            w, info = g.weight(name), g.tensors[name]
            assert (w.type, w.cols, w.rows) == (info.type, *info.shape)
            assert np.shares_memory(w.data, g.raw(name)) and not w.data.flags.writeable


def test_a_q3k_matrix_is_a_weight_the_kernels_read(tiny):
    """Q3_K (llama.cpp's Q3_K_S/M/L and Q2_K files hold it): weight() hands out the map's bytes as a Q3_K matrix,
    and the kernels' rows of it are gguf's dequantization."""
    import torch

    from specx.cpu import quant
    from specx.cpu.qweight import BLOCKS, dequantize

    with open_gguf(tiny) as g:
        w, info = g.weight("w_q3k"), g.tensors["w_q3k"]
        assert (w.name, w.type, w.cols, w.rows) == ("Q3_K", BLOCKS["Q3_K"][0], *info.shape)
        assert np.shares_memory(w.data, g.raw("w_q3k")) and not w.data.flags.writeable
        assert np.array_equal(dequantize(w), g.array("w_q3k"))
        if quant.available():
            assert np.array_equal(quant.embed(w, torch.tensor([1, 0])).numpy(), g.array("w_q3k")[[1, 0]])


def test_iq4_matrices_open_as_kernel_weights_holding_gguf_values(tiny):
    """IQ4_NL and IQ4_XS matrices (the imatrix 4-bit files) open as kernel weights, zero-copy, shaped as the
    kernels take them, and the kernels' rows are the gguf package's dequantization, bit for bit."""
    from specx.cpu import quant

    with open_gguf(tiny) as g:
        for name, kind, shape in (("w_iq4nl", "IQ4_NL", (64, 3)), ("w_iq4xs", "IQ4_XS", (256, 2))):
            w, info = g.weight(name), g.tensors[name]
            assert (type_name(info.type), w.name, (w.cols, w.rows)) == (kind, kind, shape)
            assert np.shares_memory(w.data, g.raw(name)) and not w.data.flags.writeable
            if quant.available():
                assert np.array_equal(quant.embed(w, np.arange(w.rows)).numpy(), g.array(name))


def test_array_is_float32_in_numpy_order(tiny):
    """array(): plain types converted, blocks dequantized by gguf; shape reversed from ne."""
    import gguf

    reader = {t.name: t for t in gguf.GGUFReader(tiny).tensors}
    with open_gguf(tiny) as g:
        for name in ("w_f32", "w_f16", "w_3d"):
            out = g.array(name)
            assert out.dtype == np.float32 and np.array_equal(out, reader[name].data.astype(np.float32))
        bf16 = reader["w_bf16"].data.reshape(2, 32, 2).view(np.uint16)[..., 0]
        assert np.array_equal(g.array("w_bf16"), (bf16.astype(np.uint32) << 16).view(np.float32))
        q8 = gguf.quants.dequantize(reader["w_q8"].data, gguf.GGMLQuantizationType.Q8_0)
        assert g.array("w_q8").shape == (3, 64) and np.array_equal(g.array("w_q8"), q8)


def test_a_type_without_a_kernel_is_listed_and_named_when_asked_for_a_weight(tiny):
    """IQ2_XS opens (listed, its bytes viewable, dequantizable by gguf); weight() names the type."""
    with open_gguf(tiny) as g:
        assert type_name(g.tensors["w_iq2"].type) == "IQ2_XS" and g.raw("w_iq2").size == 74
        assert g.array("w_iq2").shape == (1, 256)
        with pytest.raises(ModelUnavailable, match="IQ2_XS"):
            g.weight("w_iq2")


def test_a_type_unknown_to_ggml_is_listed_and_refused_when_read(tmp_path, tiny):
    """A type id no table knows: the file opens, the tensor is listed with its id, reading it is
    refused with an error naming it; check_gguf (transformers' path) refuses the file."""
    from specx.models.gguf_check import check_gguf

    data = tiny.read_bytes()
    at = entry(data, "w_iq2") + 4 + 2 * 8  # past n_dims and two dims: the type
    (bad := tmp_path / "newtype.gguf").write_bytes(put(data, at, "I", 99))
    with open_gguf(bad) as g:
        assert g.tensors["w_iq2"].type == 99 and g.tensors["w_iq2"].nbytes >= 74
        for read in (g.raw, g.array, g.weight):
            with pytest.raises(ModelUnavailable, match="type 99"):
                read("w_iq2")
    with pytest.raises(ModelFileError, match="type 99"):
        check_gguf(bad)


def test_alignment_other_than_32_is_honoured(tmp_path):
    """general.alignment moves the data section and every tensor's start."""
    import gguf

    path = tiny_gguf(tmp_path / "a64.gguf", alignment=64)
    with open_gguf(path) as g:
        assert all(info.offset % 64 == 0 for info in g.tensors.values())
        assert [i.offset for i in g.tensors.values()] == [t.data_offset for t in gguf.GGUFReader(path).tensors]


def test_raw_meta_is_the_value_as_stored(tiny):
    with open_gguf(tiny) as g:
        name = "tiny ç".encode()
        assert g.raw_meta("general.name") == struct.pack("<IQ", 8, len(name)) + name


# ---- bad files -----------------------------------------------------------------------------

def test_missing_file_is_unavailable_and_empty_file_is_refused(tmp_path):
    with pytest.raises(ModelUnavailable):
        open_gguf(tmp_path / "nope.gguf")
    (tmp_path / "empty.gguf").write_bytes(b"")
    refused(tmp_path / "empty.gguf")


def bad_headers(data: bytes) -> dict[str, bytes]:
    """One damaged copy of a tiny file per rule."""
    first_key = 24 + 8  # past magic, version, counts, and the key's length
    q8 = entry(data, "w_q8")  # n_dims, ne0, ne1, type, offset
    f32 = entry(data, "w_f32")
    return {
        "bad magic": b"GGML" + data[4:],
        "version 1": put(data, 4, "I", 1),
        "big-endian": data[:4] + struct.pack(">I", 3) + data[8:],
        "huge tensor count": put(data, 8, "Q", 1 << 62),
        "tensor count past the table": put(data, 8, "Q", 100_000),
        "huge key count": put(data, 16, "Q", 1 << 62),
        "huge key length": put(data, 24, "Q", 1 << 62),
        "key length of 70k": put(data, 24, "Q", 70_000),
        "huge string length": put(data, entry(data, "general.name") + 4, "Q", 1 << 62),
        "huge array count": put(data, entry(data, "tokenizer.ggml.tokens") + 8, "Q", 1 << 62),
        "huge numeric array": put(data, entry(data, "test.ints") + 8, "Q", 1 << 61),
        "unknown value type": put(data, entry(data, "test.int8"), "I", 13),
        "unknown array type": put(data, entry(data, "test.ints") + 4, "I", 13),
        "bad utf-8 token": data.replace("日本".encode(), b"\xff\xfe\xfd\xfc\xfb\xfa"),
        "bad utf-8 key": data[:first_key] + b"\xff" + data[first_key + 1:],
        "duplicate key": data.replace(b"test.int16", b"test.int32"),
        "duplicate tensor": data.replace(b"w_f32", b"w_f16"),
        "5 dimensions": put(data, q8, "I", 5),
        "0 dimensions": put(data, q8, "I", 0),
        "empty dimension": put(data, q8 + 4, "Q", 0),
        "huge dimension": put(data, q8 + 12, "Q", 1 << 40),
        "rows not whole blocks": put(data, q8 + 4, "Q", 48),
        "misaligned offset": put(data, q8 + 24, "Q", struct.unpack_from("<Q", data, q8 + 24)[0] + 1),
        "offset past the end": put(data, q8 + 24, "Q", 1 << 40),
        "overlapping tensors": put(data, q8 + 24, "Q", struct.unpack_from("<Q", data, f32 + 24)[0]),
        "tensor data cut": data[:-100],
    }


BAD = ["bad magic", "version 1", "big-endian", "huge tensor count", "tensor count past the table", "huge key count",
       "huge key length", "key length of 70k", "huge string length", "huge array count", "huge numeric array",
       "unknown value type", "unknown array type", "bad utf-8 token", "bad utf-8 key", "duplicate key",
       "duplicate tensor", "5 dimensions", "0 dimensions", "empty dimension", "huge dimension",
       "rows not whole blocks", "misaligned offset", "offset past the end", "overlapping tensors", "tensor data cut"]


@pytest.mark.parametrize("kind", BAD)
def test_each_rule_refuses_a_file_breaking_it(tmp_path, tiny, kind):
    """A file breaking one rule is refused by that rule's check, never by an exception or a loop."""
    (bad := tmp_path / "bad.gguf").write_bytes(bad_headers(tiny.read_bytes())[kind])
    refused(bad)


def small_gguf(path: Path, add) -> Path:
    """A GGUF of one tensor, with what `add(writer)` puts in its metadata."""
    import gguf

    w = gguf.GGUFWriter(str(path), arch="llama")
    add(w)
    w.add_tensor("w", np.ones(32, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize("add", [
    lambda w: w.add_uint32("general.alignment", 3),
    lambda w: w.add_uint32("general.alignment", 0),
    lambda w: w.add_uint64("general.alignment", 32),
], ids=["not a power of two", "zero", "stored as uint64"])
def test_bad_alignment_is_refused(tmp_path, add):
    """general.alignment must be a power of two stored as uint32."""
    refused(small_gguf(tmp_path / "bad.gguf", add))


def test_arrays_nested_too_deep_are_refused(tmp_path):
    from gguf import GGUFValueType as V

    ok = small_gguf(tmp_path / "ok.gguf", lambda w: w.add_key_value("test.nested", [[1, 2], [3]], V.ARRAY))
    with open_gguf(ok) as g:
        assert [a.tolist() for a in g.meta["test.nested"]] == [[1, 2], [3]]
    refused(small_gguf(tmp_path / "deep.gguf", lambda w: w.add_key_value("test.nested", [[[[1]]]], V.ARRAY)))


def test_every_cut_short_of_the_last_tensor_is_refused(tmp_path, tiny):
    """A download cut anywhere before the last tensor's last byte fails to open."""
    data = tiny.read_bytes()
    with open_gguf(tiny) as g:
        end = max(i.offset + i.nbytes for i in g.tensors.values())
    bad = tmp_path / "cut.gguf"
    for cut in sorted({*range(0, 64), *range(64, end, 37), end - 1}):
        bad.write_bytes(data[:cut])
        refused(bad)


def test_fuzzed_files_open_or_raise_model_file_error(tmp_path, tiny):
    """Seeded damage (bytes, 64-bit fields, cuts): each file opens and every tensor reads or raises a
    SpecxError; or it is refused by a named check. Never another exception."""
    data = tiny.read_bytes()
    with open_gguf(tiny) as g:
        header_end = min(i.offset for i in g.tensors.values())
    rng, bad, refusals = random.Random(35), tmp_path / "fuzz.gguf", 0
    for _ in range(300):
        mutant = bytearray(data)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(header_end)
            if rng.random() < 0.5:
                mutant[at] = rng.choice([0, 0xFF, rng.randrange(256)])
            else:
                value = rng.choice([0, 1 << 62, rng.getrandbits(64), rng.randrange(1 << 16)])
                mutant[at:at + 8] = value.to_bytes(8, "little")
        if rng.random() < 0.2:
            mutant = mutant[:rng.randrange(len(mutant))]
        bad.write_bytes(bytes(mutant))
        try:
            g = open_gguf(bad)
        except ModelFileError as e:
            assert e.__cause__ is None, e.message
            refusals += 1
            continue
        with g:
            for name in g.tensors:
                for read in (g.raw, g.array, g.weight):
                    try:
                        read(name)
                    except SpecxError:
                        pass
    assert refusals > 150


# ---- the map and the file on disk ----------------------------------------------------------

def test_a_file_replaced_by_rename_keeps_serving_the_opened_file(tmp_path, tiny):
    """os.replace over a mapped file: old views and new views still read the old file."""
    g = open_gguf(tiny)
    before, old = g.raw("w_f32"), g.raw("w_f32").tobytes()
    os.replace(tiny_gguf(tmp_path / "new.gguf", seed=1), tiny)
    assert g.unchanged()
    assert before.tobytes() == old and g.raw("w_f32").tobytes() == old and g.weight("w_q8").data.size == 3 * 68
    with open_gguf(tiny) as fresh:
        assert fresh.raw("w_f32").tobytes() != old
    g.close()


def test_a_file_changed_in_place_is_noticed_before_a_view_is_handed_out(tmp_path, tiny):
    """Rewritten or cut in place: unchanged() is False and views are refused (no read of a lost page)."""
    g = open_gguf(tiny)
    size = tiny.stat().st_size
    os.truncate(tiny, size // 2)
    assert not g.unchanged()
    with pytest.raises(ModelFileError, match="changed on disk"):
        g.raw("w_f32")
    g.close()


def test_a_second_open_reuses_the_parse_unless_the_header_bytes_changed(tmp_path, tiny, monkeypatch):
    """Opening a file again does not parse it again; the same file rewritten in place (same inode,
    size and mtime) with other metadata is parsed again and reads as it now is."""
    import specx.decoder.gguf_header as gguf_header

    parses = []
    real = gguf_header._parse
    monkeypatch.setattr(gguf_header, "_parse", lambda *a: parses.append(1) or real(*a))
    monkeypatch.setattr(gguf_header, "_parses", type(gguf_header._parses)())
    for _ in range(2):
        with open_gguf(tiny) as g:
            assert g.meta["general.name"] == "tiny ç" and g.meta["tokenizer.ggml.tokens"][4] == "日本"
    assert len(parses) == 1
    st = tiny.stat()
    tiny.write_bytes(tiny.read_bytes().replace("日本".encode(), "中文".encode()))
    os.utime(tiny, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (tiny.stat().st_ino, tiny.stat().st_size, tiny.stat().st_mtime_ns) == (st.st_ino, st.st_size, st.st_mtime_ns)
    with open_gguf(tiny) as g:
        assert g.meta["tokenizer.ggml.tokens"][4] == "中文"
    assert len(parses) == 2


def test_views_outlive_close(tiny):
    """close() drops the file's hold; a view already handed out still reads; new ones are refused."""
    g = open_gguf(tiny)
    view, expect = g.raw("w_q8"), g.raw("w_q8").tobytes()
    g.close()
    assert view.tobytes() == expect
    with pytest.raises(ModelFileError, match="closed"):
        g.raw("w_q8")


# ---- the fixture models --------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_reads_as_transformers_reader_reads_it(name):
    """Metadata, tensor table and every tensor's bytes equal transformers' GGUF reader's (its table
    parse, sized by the gguf package's block table)."""
    from gguf.constants import GGML_QUANT_SIZES
    from transformers.integrations.gguf import reader

    path = fixture_model(name)
    big = ("tokenizer.ggml.tokens", "tokenizer.ggml.merges")
    theirs, _ = reader.read_gguf_metadata(str(path), big)
    blob = np.memmap(path, mode="r", dtype=np.uint8)
    _, count, pos = reader._read_metadata(blob, str(path))
    table, pos = reader._read_tensor_table(blob, count, pos)
    align = theirs.get("general.alignment", 32)
    data_start = -(-pos // align) * align
    with open_gguf(path) as g:
        ours = {k: v if k in big or not isinstance(v, (list, Strings)) else len(v) for k, v in g.meta.items()}
        assert {k: plain(v) for k, v in ours.items()} == theirs
        assert list(g.tensors) == [name for name, *_ in table]
        for name, shape, ggml_type, offset in table:
            info, (block, size) = g.tensors[name], GGML_QUANT_SIZES[ggml_type]
            start, nbytes = data_start + offset, int(np.prod(shape)) // block * size
            assert (info.type, info.shape[::-1], info.offset, info.nbytes) == (ggml_type, shape, start, nbytes)
            assert np.array_equal(g.raw(name), blob[start:start + nbytes])
            if len(shape) == 2 and ggml_type in NAMES:
                assert np.shares_memory(g.weight(name).data, g.raw(name))


@pytest.mark.slow
def test_smollm2_reads_as_gguf_reader_reads_it():
    """The gguf package's reader (seconds per file: one fixture) agrees on everything."""
    import gguf

    path = fixture_model("smollm2-135m")
    reader = gguf.GGUFReader(path)
    with open_gguf(path) as g:
        assert {k: plain(v) for k, v in g.meta.items()} == reader_values(reader)
        for t in reader.tensors:
            info = g.tensors[t.name]
            assert (info.type, info.shape, info.offset, info.nbytes) == \
                   (int(t.tensor_type), tuple(int(d) for d in t.shape), t.data_offset, t.n_bytes)
            assert np.array_equal(g.raw(t.name), t.data.reshape(-1).view(np.uint8))
