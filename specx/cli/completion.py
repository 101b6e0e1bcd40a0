"""Shell completion for model arguments: presets, models specx has seen, local model paths. No torch."""
from __future__ import annotations

import glob
import json
import os



def _presets() -> list[str]:
    try:
        from .. import presets

        return sorted(presets.bundled())
    except Exception:  # noqa: BLE001  (a broken preset must not break the shell)
        return []


def _cached_models() -> list[str]:
    """GGUF files specx has hashed before (its model cache index), if they still exist."""
    from ..state.paths import model_cache

    try:
        index = json.loads((model_cache() / "sha256-index.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return sorted(p for p in index if isinstance(p, str) and os.path.isfile(p)) if isinstance(index, dict) else []


def _paths(incomplete: str) -> list[str]:
    """Folders, .gguf and .toml files under what is typed so far."""
    out = []
    for path in sorted(glob.glob(os.path.expanduser(incomplete) + "*"))[:200]:
        if os.path.isdir(path):
            out.append(path + os.sep)
        elif path.endswith((".gguf", ".toml")):
            out.append(path)
    return out


def complete_model(incomplete: str) -> list[str]:
    names = _presets() + _cached_models()
    seen = [n for n in dict.fromkeys(names) if n.startswith(incomplete)]
    return seen + [p for p in _paths(incomplete) if p not in seen]


def complete_drafter(incomplete: str) -> list[str]:
    from ..policy.tuned import HYBRID, SELF_COPY, SPECIAL   # the names api.prepare takes, defined once

    special = ("auto", *SPECIAL, *(name + HYBRID for name in ("self", SELF_COPY)))
    return [d for d in special if d.startswith(incomplete)] + complete_model(incomplete)

