"""The lock file: what each pull actually got (commit, files, sizes, sha256), so later runs are reproducible."""
from __future__ import annotations

import json
import time
from pathlib import Path

from ..state.paths import data_dir

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
    """Add or replace one entry: under the lock file's lock, so concurrent pulls keep each other's."""
    entry = {**entry, "pulled_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    _update(lambda entries: entries.__setitem__(key, entry))


def forget(key: str) -> bool:
    return _update(lambda entries: entries.pop(key, None) is not None)


def _update(change) -> bool:
    """Read, change (a function of the entries that says whether it changed them), write: all under the lock."""
    from ..state.atomicio import atomic_write, locked, lock_of

    with locked(lock_of(lock_path())):
        entries = read_all()
        changed = change(entries)
        if changed is not False:
            atomic_write(lock_path(), json.dumps({"version": 1, "models": entries}, indent=1, sort_keys=True))
    return changed is not False
