"""What a stream can show: colour and redrawn panels (no Rich, no torch: lower layers ask here too).

Policy, the same for every stream: NO_COLOR (non-empty) turns colour off; otherwise FORCE_COLOR
(non-empty) turns it on; otherwise TERM=dumb/unknown or a stream that is not a terminal means plain
text. A live panel or progress bar (cursor movement) needs a real terminal that is not dumb:
FORCE_COLOR forces colour, never animation."""
from __future__ import annotations

import os

DUMB_TERMS = ("dumb", "unknown")


def _env(environ=None):
    return os.environ if environ is None else environ


def is_tty(stream) -> bool:
    try:
        return stream is not None and stream.isatty()
    except (ValueError, OSError, AttributeError):
        return False


def dumb_term(environ=None) -> bool:
    return _env(environ).get("TERM", "").lower() in DUMB_TERMS


def wants_color(stream, environ=None) -> bool:
    """Colour on this stream? NO_COLOR > FORCE_COLOR > TERM=dumb > is it a terminal."""
    env = _env(environ)
    if env.get("NO_COLOR", ""):
        return False
    if env.get("FORCE_COLOR", ""):
        return True
    return not dumb_term(env) and is_tty(stream)


def wants_live(stream, environ=None) -> bool:
    """A redrawn panel needs a real, non-dumb terminal."""
    return is_tty(stream) and not dumb_term(environ)


def same_file(a, b) -> bool:
    """Do two streams write to the same file or terminal?"""
    try:
        return os.path.samestat(os.fstat(a.fileno()), os.fstat(b.fileno()))
    except (OSError, ValueError, AttributeError):
        return False
