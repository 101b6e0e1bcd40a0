"""Every field of a preset file checked for its type and value before specx uses it, with the file's
line in the error: a value a preset gives becomes a file name, a Hub request or a default option.

A rule is (test, what the value must be); tables are checked key by key, nested tables by their own rules.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable

from ..errors import UsageError
from ..state.limits import MAX_K
from ..state.paths import NAME

Rule = tuple[Callable[[object], bool], str]

_PART = r"[A-Za-z0-9_][A-Za-z0-9._+-]*"   # one component of a path inside a repo or a wheel
REPO = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
FILE = re.compile(rf"{_PART}(/{_PART})*")
QUANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SHA256 = re.compile(r"[0-9a-f]{64}")
WHEEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9][A-Za-z0-9.+!_-]*")
DRAFTER = re.compile(rf"({NAME.pattern}|{REPO.pattern})(:{QUANT.pattern})?(@{FILE.pattern})?(\+ngram)?")
LAYOUT = "see the bundled presets for the layout"


def _text(pattern: re.Pattern | None = None, what: str = "a string", empty: bool = True) -> Rule:
    def ok(v):
        return isinstance(v, str) and ((empty and v == "") or (pattern.fullmatch(v) is not None if pattern else True))
    return ok, what


def _int(lo: int, hi: int | None = None) -> Rule:
    what = f"an integer ≥ {lo}" if hi is None else f"an integer from {lo} to {hi}"
    return (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi)), what


def _number(lo: float, hi: float = math.inf) -> Rule:
    what = f"a finite number ≥ {lo:g}" if hi == math.inf else f"a number from {lo:g} to {hi:g}"
    return (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            and lo <= v <= hi), what


BOOL: Rule = (lambda v: isinstance(v, bool), "true or false")
STR = _text()
SHA_OR_EMPTY = _text(SHA256, "64 lower-case hex digits (a sha256)")


TOP = {"name": _text(NAME, "a plain name (letters, digits, '.', '_', '-'; not starting with a dot)", empty=False),
       "description": _text(re.compile(r"(?s).*\S.*"), "a non-empty string", empty=False),
       "drafters": ((lambda v: isinstance(v, list) and all(isinstance(d, str) and (d == "ngram" or DRAFTER.fullmatch(d))
                                                           for d in v)),
                    "a list of drafters: preset names, Hub repos (org/name) or \"ngram\""),
       "license": STR, "gated": BOOL, "source": STR, "family": STR, "notes": STR,
       "default_quant": _text(QUANT, "a quant name")}
TARGET = {"repo": _text(REPO, "a Hub repo org/name"), "revision": _text(FILE, "a revision (commit, branch or tag)"),
          "params": _int(0), "source": STR,
          "sha256": ((lambda v: isinstance(v, dict) and all(FILE.fullmatch(f) and isinstance(s, str)
                                                             and SHA256.fullmatch(s) for f, s in v.items())),
                     "a table of file = sha256 (64 lower-case hex digits)")}
SAMPLING = {"temperature": _number(0), "top_p": _number(0, 1), "top_k": _int(0), "source": STR}
QUANTS = {"repo": _text(REPO, "a Hub repo org/name", empty=False), "file": _text(FILE, "a file name in the repo", empty=False),
          "sha256": SHA_OR_EMPTY, "size": _int(0), "source": STR}
MIRRORS = {"kind": ((lambda v: v == "pypi-wheel"), "\"pypi-wheel\" (the only mirror kind specx knows)"),
           "wheel": _text(WHEEL, "\"package==version\"", empty=False),
           "member": _text(FILE, "a file inside the wheel", empty=False),
           "sha256": _text(SHA256, "64 lower-case hex digits (a sha256)", empty=False), "source": STR}


def line_of(text: str, table: str, key: str) -> int:
    """The line of `key = …` in `[table]` (`""`: the top), or of the table's header; 0 when not found."""
    current, header = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        found = re.match(r"\s*\[\[?\s*([^\]]+?)\s*\]\]?", line)
        if found:
            current = found.group(1).replace('"', "")
            header = number if current == table else header
            continue
        if current == table and re.match(rf"\s*\"?{re.escape(key)}\"?\s*=", line):
            return number
    return header


def check(data: dict, text: str, where: str) -> None:
    """Refuse the first field of wrong type or value, naming the file, its line and the key."""
    _fields(data, {**TOP, "k": _int(0, MAX_K)}, "", text, where)
    for name, rules in (("target", TARGET), ("sampling", SAMPLING)):
        if name in data:
            _fields(_need_table(data[name], name, text, where), rules, name, text, where)
    quants = _need_table(data.get("quants", {}), "quants", text, where)
    for q, value in quants.items():
        if not QUANT.fullmatch(q):
            _refuse(where, line_of(text, f"quants.{q}", ""), f"quants.{q}", "a quant name", q)
        _fields(_need_table(value, f"quants.{q}", text, where), QUANTS, f"quants.{q}", text, where)
    mirrors = data.get("mirrors", [])
    if not isinstance(mirrors, list):
        _refuse(where, line_of(text, "", "mirrors"), "mirrors", "a list of [[mirrors]] tables", mirrors)
    for m in mirrors:
        _fields(_need_table(m, "mirrors", text, where), MIRRORS, "mirrors", text, where)
        missing = [key for key in MIRRORS if key != "source" and key not in m]
        if missing:
            raise UsageError(f"{where} line {line_of(text, 'mirrors', '')}: a [[mirrors]] table needs "
                             f"{', '.join(missing)}", f"{LAYOUT} (smollm2.toml has a mirror)")


def _fields(data: dict, rules: dict[str, Rule], table: str, text: str, where: str) -> None:
    for key, value in data.items():
        rule = rules.get(key)
        if rule is not None and not rule[0](value):
            _refuse(where, line_of(text, table, key), f"{table}.{key}" if table else key, rule[1], value)


def _need_table(value, name: str, text: str, where: str) -> dict:
    if not isinstance(value, dict):
        _refuse(where, line_of(text, "", name), name, "a table", value)
    return value


def _refuse(where: str, line: int, key: str, must: str, value) -> None:
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "…"
    raise UsageError(f"{where}{f' line {line}' if line else ''}: `{key}` must be {must} (got {shown})",
                     f"fix that line; {LAYOUT}")
