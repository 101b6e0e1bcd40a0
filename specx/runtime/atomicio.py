"""Files that readers never see half-written, and an advisory lock for read-modify-write updates."""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from pathlib import Path


def atomic_write(dest: Path, text: str) -> None:
    """Write a temp file in the same folder, flush it to disk, then os.replace it over `dest`."""
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


@contextlib.contextmanager
def locked(lock_path: Path):
    """Hold an exclusive flock on `lock_path` (created if needed) for the block; released on exit."""
    lock_path = Path(lock_path)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
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
