"""Files that readers never see half-written, and an advisory lock for read-modify-write updates."""
from __future__ import annotations

import contextlib
import fcntl
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
