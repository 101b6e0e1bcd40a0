"""Small error types that carry a hint and an exit code; the CLI catches them once."""
from __future__ import annotations

import re

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s]+@")   # scheme://user:password@host


def redact(text: str) -> str:
    """`text` without the user:password@ of any URL in it (HF_ENDPOINT, a proxy): errors never echo them."""
    return _USERINFO.sub(r"\1", str(text))


class SpecxError(Exception):
    """A user-facing failure: one `error:` line, one `hint:` line, an exit code."""

    exit_code = 1
    default_hint = "run with SPECX_DEBUG=1 for details"

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint or self.default_hint


class UsageError(SpecxError):
    """Bad option values or bad input (prompt, lengths)."""

    exit_code = 2
    default_hint = "see `specx run --help`"


class ModelUnavailable(SpecxError):
    """Unknown preset, missing file, gated, offline cache miss, remote code, incompatible drafter."""

    exit_code = 3
    default_hint = "give a local GGUF file, a Hugging Face model folder, or a preset name"


class IncompatibleDrafter(ModelUnavailable):
    """The drafter's tokenizer does not match the target's."""

    default_hint = "use a drafter of the same tokenizer family, or `--drafter ngram`"


class ModelFileError(SpecxError):
    """A model file that exists but cannot be read: empty, truncated, corrupt."""

    exit_code = 1
    default_hint = "the file looks damaged: download it again (or delete it from the specx model cache)"


DAMAGED_GGUF = "the file is damaged or not a GGUF model: download it again"   # the hint for a GGUF that fails a check


class InsufficientResources(SpecxError):
    """Not enough memory or disk."""

    exit_code = 4
    default_hint = "free some memory or disk, or pick a smaller model"


class Interrupted(SpecxError):
    """Ctrl-C."""

    exit_code = 130
    default_hint = "generation was interrupted"
