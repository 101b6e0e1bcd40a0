"""Defaults for every run: flags > SPECX_* environment > config file > tuned > preset > built-in.

The config file is TOML (`specx config path`); each key also has an environment variable
(`max_tokens` → `SPECX_MAX_TOKENS`). No torch here: `specx config` and completion stay instant.
"""
from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from . import limits
from ..errors import UsageError
from .paths import config_dir

FILENAME = "config.toml"
TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True)
class Key:
    name: str
    kind: type                       # str, int, float or bool
    default: object                  # the built-in value (None: not set)
    help: str
    choices: tuple[str, ...] = ()

    @property
    def env(self) -> str:
        return "SPECX_" + self.name.upper()


KEYS: dict[str, Key] = {k.name: k for k in (
    Key("model", str, None, "the model when none is given (file, folder or preset)"),
    Key("drafter", str, "auto", "auto, none, ngram, a model, or MODEL+ngram"),
    Key("k", int, 4, "tokens drafted per round (0 = plain decoding)"),
    Key("draft_policy", str, "auto", "auto, fixed, heuristic or confidence", ("auto", "fixed", "heuristic", "confidence")),
    Key("confidence", float, 0.4, "threshold of the confidence draft policy"),
    Key("tree", int, 0, "token-tree nodes per verify: 0 chains, -1 sized by measured costs, N at most N"),
    Key("max_tokens", int, 512, "most new tokens"),
    Key("temperature", float, 0.0, "0 = greedy"),
    Key("top_p", float, None, "nucleus sampling mass"),
    Key("top_k", int, None, "sample among the k most likely tokens"),
    Key("dtype", str, "auto", "weight dtype", ("auto", "float32", "bfloat16", "float16")),
    Key("color", str, "auto", "auto (NO_COLOR / terminal), always or never", ("auto", "always", "never")),
    Key("stats", bool, True, "stats on stderr"),
)}
SOURCES = ("flag", "environment", "config", "tuned", "preset", "built-in")


def config_file() -> Path:
    return config_dir() / FILENAME


def _unknown(name: str, where: str) -> UsageError:
    close = difflib.get_close_matches(name, list(KEYS), n=1)
    hint = f"did you mean `{close[0]}`?" if close else f"known keys: {', '.join(KEYS)}"
    return UsageError(f"unknown setting `{name}` in {where}", hint)


def parse_value(key: Key, value: object, where: str) -> object:
    """A value from TOML (typed) or text (environment, `specx config set`), checked against the key."""
    try:
        if isinstance(value, str) and key.kind is not str:
            text = value.strip().lower()
            if key.kind is bool:
                if text not in TRUE + FALSE:
                    raise ValueError
                value = text in TRUE
            else:
                value = key.kind(text)
        if key.kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, key.kind) or (key.kind is int and isinstance(value, bool)):
            raise ValueError
    except ValueError:
        kind = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}[key.kind]
        raise UsageError(f"{where}: `{key.name}` must be {kind} (got {value!r})",
                         f"{key.name}: {key.help}") from None
    if key.choices and value not in key.choices:
        raise UsageError(f"{where}: `{key.name}` must be one of {', '.join(key.choices)} (got {value!r})",
                         f"{key.name}: {key.help}")
    limits.check(key.name, value, where)   # the range a run checks: no NaN, no k past MAX_K, …
    return value


def _line_of(text: str, name: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(rf"\s*{re.escape(name)}\s*=", line):
            return number
    return 0


def _where_broken(text: str, message: str) -> str:
    """`line N (key `name`)` for a TOML syntax error; tomllib says `(at line N, column M)`."""
    found = re.search(r"line (\d+)", message)
    number = int(found.group(1)) if found else max(1, len(text.splitlines()))
    lines = text.splitlines()
    key = re.match(r"\s*([A-Za-z0-9_-]+)\s*=", lines[number - 1]) if number <= len(lines) else None
    return f"line {number}" + (f" (key `{key.group(1)}`)" if key else "")


def read_config(path: Path | None = None) -> dict[str, object]:
    """The config file's settings ({} when it does not exist); any mistake names file, line and key."""
    path = path or config_file()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read the config file {path}: {e}", "fix or delete it") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path} {_where_broken(text, str(e))} is not valid TOML: {e}",
                         f"fix that line, or start over with `rm {path}`") from None
    out = {}
    for name, value in data.items():
        where = f"{path} line {_line_of(text, name)} (key `{name}`)"
        if name not in KEYS:
            raise _unknown(name, f"{path} line {_line_of(text, name)}")
        out[name] = parse_value(KEYS[name], value, where)
    return out


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


def write_config(values: Mapping[str, object], path: Path | None = None) -> Path:
    """Rewrite the whole file atomically (temp file + os.replace), keys in their documented order."""
    path = path or config_file()
    lines = ["# specx defaults: flags > SPECX_* environment > this file > tuned > preset > built-in\n"]
    lines += [f"{name} = {_toml_value(values[name])}\n" for name in KEYS if values.get(name) is not None]
    from .atomicio import atomic_write

    atomic_write(path, "".join(lines))
    return path


def set_value(name: str, text: str, path: Path | None = None) -> object:
    """Check the value, then read, change and rewrite the file under its lock (concurrent sets keep both)."""
    from .atomicio import lock_of, locked

    if name not in KEYS:
        raise _unknown(name, "`specx config set`")
    value = parse_value(KEYS[name], text, "`specx config set`")
    path = path or config_file()
    with locked(lock_of(path)):
        values = read_config(path)
        values[name] = value
        write_config(values, path)
    return value


def unset_value(name: str, path: Path | None = None) -> bool:
    """Remove a key from the file; False when it was not there."""
    from .atomicio import lock_of, locked

    if name not in KEYS:
        raise _unknown(name, "`specx config unset`")
    path = path or config_file()
    with locked(lock_of(path)):
        values = read_config(path)
        if name not in values:
            return False
        del values[name]
        write_config(values, path)
    return True


def from_environment(environ: Mapping[str, str] | None = None) -> dict[str, object]:
    env = os.environ if environ is None else environ
    return {name: parse_value(key, env[key.env], f"environment variable {key.env}")
            for name, key in KEYS.items() if env.get(key.env, "") != ""}


Tuned = Callable[[str | None, dict], Mapping[str, object]]


Preset = Callable[[str | None], Mapping[str, object]]


def resolve(flags: Mapping[str, object], *, environ: Mapping[str, str] | None = None,
            config_path: Path | None = None, tuned: Tuned | None = None,
            preset: Preset | None = None) -> dict[str, tuple[object, str]]:
    """Every key → (value, source). `flags` holds only what the user gave on the command line.

    `tuned(model, settings_so_far)` is the hook for tuned values (`specx tune` results for this
    model and machine); it returns the keys it knows, which rank below the config file.
    `preset(model)`: what the model's preset sets (presets.defaults), below tuned values."""
    layers = [("flag", dict(flags)), ("environment", from_environment(environ)),
              ("config", read_config(config_path))]
    model = next((layer["model"] for _, layer in layers if layer.get("model")), None)
    if tuned is not None:
        so_far = {n: v for _, layer in reversed(layers) for n, v in layer.items()}
        layers.append(("tuned", dict(tuned(model, so_far) or {})))
    layers += [("preset", dict(preset(model)) if preset else {}), ("built-in", {n: k.default for n, k in KEYS.items()})]
    out = {}
    for name in KEYS:
        out[name] = next(((layer[name], source) for source, layer in layers if name in layer), (None, "built-in"))
    return out
