"""The lock file: what each pull actually got (commit, files, sizes, sha256), so later runs are reproducible."""
from __future__ import annotations

import json
import time
from pathlib import Path

from .paths import data_dir

LOCK_NAME = "models.lock.json"


def lock_path() -> Path:
    return data_dir() / LOCK_NAME


def read_all() -> dict[str, dict]:
    """Every entry by key (`org/repo[:quant]`); {} when the file is missing or unreadable."""
    try:
        data = json.loads(lock_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    entries = data.get("models") if isinstance(data, dict) else None
    return entries if isinstance(entries, dict) else {}


def get(key: str) -> dict | None:
    return read_all().get(key)


def record(key: str, entry: dict) -> None:
    """Add or replace one entry, atomically."""
    from .store import _atomic_write

    entries = read_all()
    entries[key] = {**entry, "pulled_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    _atomic_write(lock_path(), json.dumps({"version": 1, "models": entries}, indent=1, sort_keys=True))


def forget(key: str) -> bool:
    from .store import _atomic_write

    entries = read_all()
    if entries.pop(key, None) is None:
        return False
    _atomic_write(lock_path(), json.dumps({"version": 1, "models": entries}, indent=1, sort_keys=True))
    return True
