"""Files that readers never see half-written, an advisory lock for read-modify-write updates, and
temporary folders that a killed process leaves behind cleaned by the next one.

Every small store specx keeps (config file, lock file, sha256 index, tuned and measured settings) is
updated as: take `<file>.lock`, read, change, atomic_write. Without the lock, two processes writing at
once lose entries (2 x 40 writes kept 61 of 80 lock entries)."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import tempfile
from pathlib import Path

HELD = ".held"   # beside a scratch folder: the file its process holds an flock on while it lives


def atomic_write(dest: Path, text: str) -> None:
    """Write a temp file in the same folder, flush it to disk, then os.replace it over `dest` (and flush
    the folder, so the new name survives a crash too)."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dest)
    finally:
        Path(tmp).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder = os.open(dest.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def lock_of(path: Path) -> Path:
    """The lock file that guards read-modify-write updates of `path`."""
    return Path(path).with_name(Path(path).name + ".lock")


@contextlib.contextmanager
def locked(lock_path: Path):
    """Hold an exclusive flock on `lock_path` (a file, created if needed, or an existing folder) for the
    block; released on exit."""
    lock_path = Path(lock_path)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDONLY) if lock_path.is_dir() else os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def read_entries(path: Path, version: int) -> list[dict]:
    """The `entries` of a JSON store `{"version": …, "entries": [{…}, …]}`; a missing, unreadable or
    foreign file (or another version) reads as none: such stores are caches of what can be redone."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict) or data.get("version") != version or not isinstance(data.get("entries"), list):
        return []
    return [e for e in data["entries"] if isinstance(e, dict)]


@contextlib.contextmanager
def scratch_dir(parent: Path, prefix: str):
    """A new temporary folder in `parent`, held by this process while the block runs, removed after (if
    still there: the block may have renamed it into place). A killed process's folder is no longer held,
    and the next sweep() removes it."""
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    with locked(parent):   # a sweep never sees the folder before its holder
        tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        holder = os.open(tmp.with_name(tmp.name + HELD), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.with_name(tmp.name + HELD).unlink(missing_ok=True)
        os.close(holder)


def sweep(parent: Path, prefix: str) -> None:
    """Remove the scratch folders of `prefix` in `parent` that no live process holds."""
    parent = Path(parent)
    if not parent.is_dir():
        return
    with locked(parent):
        for path in parent.glob(f"{prefix}*"):
            if path.name.endswith(HELD):
                if not path.with_name(path.name.removesuffix(HELD)).exists() and not _held(path):
                    path.unlink(missing_ok=True)
            elif path.is_dir() and not path.is_symlink() and not _held(path.with_name(path.name + HELD)):
                shutil.rmtree(path, ignore_errors=True)
                path.with_name(path.name + HELD).unlink(missing_ok=True)


def _held(holder: Path) -> bool:
    try:
        fd = os.open(holder, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False
