"""The benchmark prompt suite: the bundled one, or the user's own file (TOML or JSON), validated."""
from __future__ import annotations

import difflib
import json
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..errors import UsageError

KEYS = ("category", "name", "text")
FORMAT_HINT = ('the file holds [[prompt]] tables (TOML) or {"prompt": [...]} (JSON), each with `category` '
               'and `text`, and optionally a unique `name`')


@dataclass(frozen=True)
class Prompt:
    name: str
    category: str
    text: str


def bundled() -> list[Prompt]:
    """The suite shipped with specx: five categories, four prompts each."""
    text = resources.files(__package__).joinpath("prompts.toml").read_text(encoding="utf-8")
    return parse(tomllib.loads(text), "the bundled suite")


def load(path: str | Path | None) -> list[Prompt]:
    """The user's prompts file, or the bundled suite when no path is given."""
    if path is None:
        return bundled()
    path = Path(path).expanduser()
    try:
        raw = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise UsageError(f"prompts file not found: {path}", "check the path given to --prompts") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a folder, not a prompts file", FORMAT_HINT) from None
    except UnicodeDecodeError as e:
        raise UsageError(f"{path} is not UTF-8 text (byte {e.start})", "save the file as UTF-8") from None
    except OSError as e:
        raise UsageError(f"cannot read the prompts file {path}: {e.strerror}", "check its permissions") from None
    return parse(_decode(raw, path), str(path))


def _decode(raw: str, path: Path) -> object:
    if path.suffix.lower() == ".json":
        try:
            return json.loads(raw)
        except ValueError as e:
            raise UsageError(f"{path} is not valid JSON: {e}", FORMAT_HINT) from None
    try:
        return tomllib.loads(raw)
    except tomllib.TOMLDecodeError as e:
        hint = FORMAT_HINT if path.suffix.lower() == ".toml" else "name the file .json for JSON; " + FORMAT_HINT
        raise UsageError(f"{path} is not valid TOML: {e}", hint) from None


def parse(data: object, where: str) -> list[Prompt]:
    """Checked prompts from decoded TOML/JSON: a list under `prompt` (or a bare JSON list)."""
    if isinstance(data, dict):
        extra = [key for key in data if key != "prompt"]
        if extra:
            raise UsageError(f"unknown top-level key `{extra[0]}` in {where}", _suggest(extra[0], ["prompt"]))
        data = data.get("prompt")
    if not isinstance(data, list) or not data:
        raise UsageError(f"{where} holds no prompts", FORMAT_HINT)
    prompts = [_one(entry, i + 1, where) for i, entry in enumerate(data)]
    seen: set[str] = set()
    for p in prompts:
        if p.name in seen:
            raise UsageError(f"two prompts in {where} are named `{p.name}`", "give every prompt a unique name")
        seen.add(p.name)
    return prompts


def _one(entry: object, number: int, where: str) -> Prompt:
    at = f"prompt {number} of {where}"
    if not isinstance(entry, dict):
        raise UsageError(f"{at} is a {type(entry).__name__}, not a table", FORMAT_HINT)
    for key in entry:
        if key not in KEYS:
            raise UsageError(f"unknown key `{key}` in {at}", _suggest(key, KEYS))
    for key in ("category", "text"):
        if key not in entry:
            raise UsageError(f"{at} has no `{key}`", FORMAT_HINT)
    for key in KEYS:
        value = entry.get(key, "x")
        if not isinstance(value, str) or not value.strip():
            raise UsageError(f"`{key}` in {at} must be a non-empty string", FORMAT_HINT)
    category = entry["category"].strip()
    return Prompt(entry.get("name", f"{category}-{number}").strip(), category, entry["text"])


def _suggest(key: str, allowed) -> str:
    close = difflib.get_close_matches(key, list(allowed), n=1)
    return f"did you mean `{close[0]}`?" if close else f"allowed keys: {', '.join(allowed)}"


def categories(prompts: list[Prompt]) -> list[str]:
    """Categories in first-seen order."""
    return list(dict.fromkeys(p.category for p in prompts))


def calibration(prompts: list[Prompt], per_category: int = 1) -> list[Prompt]:
    """The first prompt(s) of every category: what `specx tune` measures by default."""
    out, counts = [], {}
    for p in prompts:
        if counts.get(p.category, 0) < per_category:
            out.append(p)
            counts[p.category] = counts.get(p.category, 0) + 1
    return out
