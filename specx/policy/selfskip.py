"""The self-draft shapes searched so far (drafters/skipsearch.py), per target model, its precision and kernels,
and machine: a later process drafts at once with the shape an earlier answer or `specx tune` found.

Stored in `selfdraft.json` in the user config dir, beside tuned.json and updated as it is: writers lock,
re-read, merge their entry and replace the file atomically; readers take no lock. It is a cache: an
unreadable file or entry reads as nothing (the search starts again), a failed write is skipped."""
from __future__ import annotations

import json
import time
from pathlib import Path

from ..state.paths import config_dir

FILE, LOCK = "selfdraft.json", "selfdraft.json.lock"
VERSION = 1


def path() -> Path:
    return config_dir() / FILE


def make_key(target, target_path: Path, draft_vocab: int = 0) -> dict:
    """What a shape depends on: the target file, its precision and kernels (their build too), where it
    lives and the machine (processor, vector instructions, threads): measured.make_key's fields; and the
    output rows its drafts score (VocabTrim changes what a draft costs)."""
    from .measured import make_key as measured_key

    return measured_key(target, target_path, f"self|output rows {draft_vocab}" if draft_vocab else "self")


def load(key: dict) -> dict | None:
    """The entry saved for this key ({"shape": …, "done": …, …}), or None."""
    from ..state.atomicio import read_entries

    entry = next((e for e in read_entries(path(), VERSION) if e.get("key") == key), None)
    return entry if entry and isinstance(entry.get("shape"), dict) else None


def save(key: dict, shape: dict, **facts) -> bool:
    """Replace this key's entry with `shape` and its facts (done, alpha, cost, scored); False where the
    config dir refuses."""
    from ..state.atomicio import atomic_write, locked, read_entries

    entry = {"key": key, "shape": shape, **facts, "saved": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        with locked(config_dir() / LOCK):
            entries = [e for e in read_entries(path(), VERSION) if e.get("key") != key]
            atomic_write(path(), json.dumps({"version": VERSION, "entries": entries + [entry]}, indent=1) + "\n")
    except OSError:
        return False
    return True
