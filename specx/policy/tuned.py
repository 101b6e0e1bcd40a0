"""Tuned settings: what `specx tune` measured best, per model pair and machine, for `specx run` to use.

Stored in `tuned.json` in the user config dir. Writers take an flock on `tuned.json.lock`, re-read,
merge their entry and replace the file atomically, so concurrent tunes never lose each other's
results and readers (which take no lock) never see half a file.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from ..errors import SpecxError
from ..state import machine
from ..state.limits import MAX_K, MAX_TREE
from ..state.paths import config_dir
from .policy import POLICIES

FILE, LOCK = "tuned.json", "tuned.json.lock"
SELF_COPY = "self-q2k"   # the target drafting with a 2-bit copy of its own layers (drafters/selfcopy.py)
SPECIAL = ("none", "ngram", "self", SELF_COPY)   # drafters that name no model file (self: the target's own layers)
VERSION = 1


@dataclass(frozen=True)
class TunedKey:
    """What a tuned setting depends on. `drafter=None` in a lookup matches any drafter."""

    target: str                 # model identity: sha256 of the GGUF, or folder + weight stamps
    drafter: str | None         # "none", "ngram", or the drafter model's identity
    device: str                 # e.g. "cpu: AMD EPYC (AVX512), 2 threads"
    dtype: str                  # float32 | bfloat16 | float16
    quant: str = "none"         # weight-only quantisation, when used
    placement: str = "cpu"      # where the weights live (one device, or an offload split)
    mode: str = "greedy"        # greedy | sampling

    def matches(self, other: dict) -> bool:
        mine = asdict(self)
        return all(other.get(f) == v for f, v in mine.items() if not (f == "drafter" and v is None))


@dataclass(frozen=True)
class TunedSetting:
    """The winning configuration; `drafter == "none"` means speculation is off for this pair."""

    drafter: str                # what to pass as --drafter: "none", "ngram", a model path or preset name
    k: int
    policy: str = "fixed"
    confidence: float = 0.4
    tok_s: float | None = None
    baseline_tok_s: float | None = None
    speedup: float | None = None
    tuned_at: str = ""          # ISO 8601, UTC
    complete: bool = True       # False: the tune was interrupted and this comes from the finished trials
    tree: int = 0               # token trees (`--tree`): 0 chains, -1 sized by measured costs, N at most N nodes

    @property
    def off(self) -> bool:
        return self.drafter == "none" or self.k == 0

    def describe(self) -> str:
        """One sentence, e.g. `k=5 fixed with drafter ngram, tuned 2026-11-23 (1.31× plain decoding)`."""
        date = self.tuned_at[:10] or "at an unknown date"
        partial = "; interrupted tune" if not self.complete else ""
        if self.off:
            return f"speculation off (tuned {date}: nothing beat plain decoding{partial})"
        policy = f"confidence {self.confidence:g}" if self.policy == "confidence" else self.policy
        gain = f" ({self.speedup:.2f}× plain decoding{partial})" if self.speedup else ""
        tree = "" if not self.tree else ", trees sized by measured costs" if self.tree < 0 else f", trees of {self.tree}"
        return f"k={self.k} {policy}{tree} with drafter {_short(self.drafter)}, tuned {date}{gain}"

    @classmethod
    def from_dict(cls, data: dict) -> "TunedSetting":
        """The setting a stored entry holds; ValueError when a field has the wrong type or value (a
        hand-edited or foreign file): such an entry is skipped, never run."""
        names = {f.name for f in fields(cls)}
        setting = cls(**{k: v for k, v in data.items() if k in names})
        wrong = next((name for name, ok in _FIELD_CHECKS.items() if not ok(getattr(setting, name))), None)
        if wrong:
            raise ValueError(f"`{wrong}` is {getattr(setting, wrong)!r}")
        return setting


def _number(v, none: bool = True) -> bool:
    return (none and v is None) or (isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < math.inf)


_FIELD_CHECKS = {
    "drafter": lambda v: isinstance(v, str) and bool(v),
    "k": lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_K,
    "policy": lambda v: v in POLICIES,
    "confidence": lambda v: _number(v, none=False) and 0 < v < 1,
    "tok_s": _number, "baseline_tok_s": _number, "speedup": _number,
    "tuned_at": lambda v: isinstance(v, str), "complete": lambda v: isinstance(v, bool),
    "tree": lambda v: isinstance(v, int) and not isinstance(v, bool) and -1 <= v <= MAX_TREE,
}


def _short(ref: str) -> str:
    return ref if ref in SPECIAL else Path(ref).stem or ref


# ---- identities ---------------------------------------------------------------------------------

def model_identity(ref: str, ask=None) -> str:
    """sha256 of a GGUF (remembered by the model cache's index), else the folder plus its weight stamps; a
    preset's file as a run with `ask` (memory/variant.Ask) takes it."""
    from ..memory.variant import Ask, source_for
    from ..models.store import sha256_file

    if ref in SPECIAL:
        return ref
    source = source_for(ref, ask or Ask())
    if source.kind == "gguf":
        return "sha256:" + sha256_file(source.path)
    h = hashlib.sha256()
    for f in sorted(source.path.glob("*.json")) + sorted(source.path.glob("*.safetensors")):
        st = f.stat()
        h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return f"folder:{source.path.resolve()}:{h.hexdigest()[:16]}"


def make_key(model: str, drafter: str | None, dtype: str = "auto", temperature: float = 0.0,
             quant: str = "none", device: str = "cpu") -> TunedKey:
    from ..models.resolve import dtype_name

    from ..memory.variant import Ask

    return TunedKey(model_identity(model, Ask(quant, dtype)), None if drafter is None else _drafter_identity(drafter),
                    machine.identity(device), dtype_name(dtype), quant, device.split(":")[0],
                    "greedy" if temperature == 0 else "sampling")


def _drafter_identity(drafter: str) -> str:
    base, hybrid = split_hybrid(drafter)
    return model_identity(base) + ("+ngram" if hybrid else "")


def split_hybrid(drafter: str) -> tuple[str, bool]:
    """`MODEL+ngram` (a model drafter that copies from the context where it can) → (MODEL, True)."""
    return (drafter.removesuffix(HYBRID), True) if drafter.endswith(HYBRID) and drafter != HYBRID else (drafter, False)


HYBRID = "+ngram"


# ---- the store ----------------------------------------------------------------------------------

def path() -> Path:
    return config_dir() / FILE


def load_entries() -> list[dict]:
    """Every stored entry; a missing, unreadable or foreign file reads as none (it is only a cache)."""
    from ..state.atomicio import read_entries

    return [e for e in read_entries(path(), VERSION) if isinstance(e.get("key"), dict)]


def lookup_tuned(key: TunedKey, notify=None) -> TunedSetting | None:
    """The tuned setting for this key (any drafter if key.drafter is None: the fastest one), or None.
    Entries that do not read as a setting are skipped, and `notify` is told once."""
    found, skipped = [], []
    for entry in load_entries():
        if key.matches(entry["key"]) and isinstance(entry.get("setting"), dict):
            try:
                found.append(TunedSetting.from_dict(entry["setting"]))
            except (TypeError, ValueError) as e:
                skipped.append(str(e))
    if skipped and notify:
        notify(f"note: skipped {len(skipped)} tuned setting{'s' * (len(skipped) > 1)} for this model in "
               f"{path()} that specx cannot read ({skipped[0]}); `specx tune` again replaces it")
    if not found:
        return None
    return max(found, key=lambda s: (not s.off, s.speedup or 0.0))


def check_writable() -> None:
    """Fail before tuning, not after: the config dir must take the lock file and a new tuned.json."""
    folder = config_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        os.close(os.open(folder / LOCK, os.O_RDWR | os.O_CREAT, 0o644))
        probe = folder / f".{FILE}.probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise SpecxError(f"cannot save tuned settings in {folder}: {e.strerror or e}",
                         "make that folder writable or set SPECX_HOME to a writable folder; "
                         "`specx run` works without tuned settings") from None


def _write(entries: list[dict]) -> None:
    from ..state.atomicio import atomic_write

    atomic_write(path(), json.dumps({"version": VERSION, "entries": entries}, indent=1, ensure_ascii=False) + "\n")


def record(key: TunedKey, setting: TunedSetting | None, trials: list[dict], names: dict | None = None) -> None:
    """Add or replace this key's entry, under the lock (concurrent tunes of other pairs both land)."""
    from ..state.atomicio import locked

    check_writable()
    entry = {"key": asdict(key), "names": names or {}, "setting": asdict(setting) if setting else None,
             "trials": trials}
    with locked(config_dir() / LOCK):
        entries = [e for e in load_entries() if e["key"] != entry["key"]]
        _write(entries + [entry])


def reset(target: str | None = None) -> int:
    """Forget every tuned setting (or those of one target identity); returns how many were removed."""
    from ..state.atomicio import locked

    if not path().exists():
        return 0
    check_writable()
    with locked(config_dir() / LOCK):
        entries = load_entries()
        keep = [e for e in entries if target is not None and e["key"].get("target") != target]
        _write(keep)
    return len(entries) - len(keep)
