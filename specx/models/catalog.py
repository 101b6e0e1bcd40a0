"""What specx knows about a model name without loading it: its preset, Hub ref, lock entry and local state."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import presets
from . import hub, lock, store
from ..errors import ModelUnavailable


@dataclass(frozen=True)
class Entry:
    """One name, resolved: the preset (if any), the Hub ref (if any) and the sha256 a source states."""

    label: str
    preset: presets.Preset | None
    ref: hub.HubRef | None
    sha256: dict = field(default_factory=dict)

    @property
    def key(self) -> str:
        return str(self.ref) if self.ref else ""


def lookup(name: str) -> Entry:
    """A preset name (`NAME[:QUANT]`), a preset file, or a Hub ref; never touches the network."""
    from .preset_source import hub_target

    path = Path(name).expanduser()
    if presets.is_preset_file(path):
        preset = presets.parse(path.read_text(encoding="utf-8"), str(path))
        ref, sha = hub_target(preset)
        return Entry(preset.name, preset, ref, sha)
    if "/" in name:
        ref = hub.parse_ref(name)
        if ref is None:
            raise ModelUnavailable(f"{name!r} is not a preset name nor a Hub repo (org/name[:quant][@revision])",
                                   "`specx list` shows the presets")
        return Entry(name, _preset_for_repo(ref.repo), ref)
    base, _, quant = name.partition(":")
    preset = presets.find(base)
    ref, sha = hub_target(preset, quant)
    return Entry(name, preset, ref, sha)


def _preset_for_repo(repo: str) -> presets.Preset | None:
    """The preset whose target is this repo (gives a Hub ref its drafter candidates and family)."""
    return next((p for p in presets.all_presets().values() if p.target.repo.lower() == repo.lower()), None)


def state(entry: Entry) -> dict:
    """Local facts: pulled?, complete?, commit, files with sizes, bytes on disk (no network)."""
    if entry.ref is None:
        return _mirror_state(entry)
    recorded = lock.get(entry.key)
    if not recorded:
        return {"pulled": False, "complete": False, "commit": None, "files": {}, "bytes": 0, "params": None}
    path = hub.cached(entry.ref)
    return {"pulled": True, "complete": path is not None, "commit": recorded.get("commit"),
            "files": recorded.get("files", {}), "bytes": _bytes_on_disk(entry.ref, recorded),
            "params": recorded.get("params"), "gated": recorded.get("gated"), "path": str(path) if path else None,
            "pulled_at": recorded.get("pulled_at")}


def _mirror_state(entry: Entry) -> dict:
    from .store import embedded_file

    dest = embedded_file(entry.preset.name) if entry.preset else None
    there = bool(dest and dest.is_file())
    return {"pulled": there, "complete": there, "commit": None, "bytes": dest.stat().st_size if there else 0,
            "files": {dest.name: {"size": dest.stat().st_size, "sha256": entry.preset.mirrors[0].sha256}}
            if there else {}, "params": store.count_params(dest, "gguf") if there else None,
            "path": str(dest) if there else None}


def _bytes_on_disk(ref: hub.HubRef, recorded: dict) -> int:
    total = 0
    for name in recorded.get("files", {}):
        path = hub._cached(ref.repo, name, recorded.get("commit", ""))
        if path is not None and path.exists():
            total += path.stat().st_size
    return total


def is_local(entry: Entry) -> bool:
    return state(entry)["complete"]


def params(entry: Entry) -> int:
    """Parameter count: the preset's sourced number, else what the pull counted; 0 when unknown."""
    if entry.preset and entry.preset.target.params and not (entry.ref and entry.ref.quant):
        return entry.preset.target.params
    recorded = state(entry)
    return int(recorded.get("params") or 0)
