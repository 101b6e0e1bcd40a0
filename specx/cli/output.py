"""The only place that writes: text (or JSON lines) on stdout, everything else on stderr."""
from __future__ import annotations

import errno
import json
import os
import sys

JSON_SCHEMA_VERSION = 1


def human_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def summary_line(stats, reason: str | None = None) -> str:
    """One human line of stats, e.g. `64 tokens · 12.3 tok/s · accepted 71% (…)`."""
    parts = [f"{stats.new_tokens} tokens", f"{stats.decode_tok_s:.1f} tok/s"]
    if stats.drafted:
        pos = "/".join(f"{p * 100:.0f}" for p in stats.per_position_acceptance)
        parts.append(f"accepted {stats.acceptance_rate * 100:.0f}% of {stats.drafted} drafted "
                     f"(mean length {stats.mean_acceptance_length:.2f}; by position {pos}%)")
    parts.append(f"k={stats.k} {stats.draft_policy} (mean drafted {stats.mean_drafted:.1f}) drafter={stats.drafter}")
    if stats.first_token_s is not None:
        parts.append(f"first token {stats.first_token_s:.2f}s")
    parts.append(f"draft {stats.draft_s:.2f}s / verify {stats.verify_s:.2f}s")
    parts.append(f"peak {human_bytes(stats.peak_bytes)}" + (
        f" (GPU {human_bytes(stats.gpu_peak_bytes)})" if stats.gpu_peak_bytes else ""))
    if stats.placement:
        parts.append(stats.placement)
    if stats.experts:
        e = stats.experts
        parts.append(f"experts: {e['hit_rate']:.0%} cache hits, {e['prefetch_used']}/{e['prefetches']} prefetches "
                     f"used, {human_bytes(e['bytes_moved'])} moved")
    if stats.decode_s:
        parts.append(f"loop overhead {stats.overhead_share:.1%}")
    if stats.notices:
        parts.append(f"{len(stats.notices)} policy change{'s' * (len(stats.notices) > 1)}: {stats.notices[-1]}")
    if reason:
        parts.append(f"stop: {reason}")
    return " · ".join(parts)


# --- stdout -------------------------------------------------------------------------------------

class OutputError(Exception):
    """Writing stdout failed (EPIPE, ENOSPC, EIO…); kept apart from OSErrors raised by the engine."""

    def __init__(self, err: OSError):
        super().__init__(err.strerror or str(err))
        self.errno, self.strerror = err.errno, err.strerror or str(err)


def write_stdout(text: str) -> None:
    """Write and flush at once: a piped stdout is block-buffered otherwise."""
    if not text:
        return
    try:
        if sys.stdout is None:
            raise OSError(errno.EBADF, "stdout is closed")
        sys.stdout.write(text)
        sys.stdout.flush()
    except (OSError, ValueError) as e:
        raise OutputError(e if isinstance(e, OSError) else OSError(errno.EBADF, str(e))) from e


def pieces(event, tint: bool) -> list[tuple[str, bool, bool]]:
    """A round's text as (text, drafted, tint) runs; one untinted run if the split is unknown."""
    parts = getattr(event, "pieces", ())
    if not tint or len(parts) != len(event.from_draft) or "".join(parts) != event.text:
        return [(event.text, False, False)] if event.text else []
    runs: list[tuple[str, bool, bool]] = []
    for text, drafted in zip(parts, event.from_draft):
        if runs and runs[-1][1] == drafted:
            runs[-1] = (runs[-1][0] + text, drafted, True)
        elif text:
            runs.append((text, drafted, True))
    return runs


def ansi(runs: list[tuple[str, bool, bool]]) -> str:
    """Runs as terminal text: drafted runs tinted with one SGR colour."""
    from .live import SGR_DRAFT, SGR_RESET

    return "".join(f"{SGR_DRAFT}{t}{SGR_RESET}" if drafted and tint else t for t, drafted, tint in runs)


def round_json(event) -> str:
    return json.dumps({"version": JSON_SCHEMA_VERSION, "type": "round", "text": event.text,
                       "token_ids": list(event.token_ids), "from_draft": list(event.from_draft),
                       "drafted": event.drafted, "accepted": event.accepted,
                       "draft_s": round(event.draft_s, 6), "verify_s": round(event.verify_s, 6),
                       "notice": getattr(event, "notice", ""), "tree": getattr(event, "tree", 0)},
                      ensure_ascii=False)


def done_json(reason: str, stats) -> str:
    return json.dumps({"version": JSON_SCHEMA_VERSION, "type": "done", "reason": reason,
                       "stats": stats.as_dict()}, ensure_ascii=False)


def silence_stdout() -> None:
    """After EPIPE or a failed write: point fd 1 at /dev/null so the interpreter's final flush cannot fail."""
    _silence(sys.stdout, 1)


# --- stderr -------------------------------------------------------------------------------------

def note(text: str) -> None:
    """A status sentence on stderr; a stderr that is gone is silenced, never an error."""
    if sys.stderr is None:
        return
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        silence_stderr()


def warnings_only(text: str) -> None:
    """`notify` under --no-stats: warnings still show, explanations do not."""
    if text.startswith("warning:"):
        note(text)


def error(message: str, hint: str) -> None:
    note(f"error: {message}\nhint: {hint}")


def silence_stderr() -> None:
    _silence(sys.stderr, 2)


def _silence(stream, default_fd: int) -> None:
    """dup2 /dev/null onto the stream's descriptor and drop whatever is still buffered."""
    try:
        fd = stream.fileno() if stream is not None else default_fd
    except (OSError, ValueError, AttributeError):
        return   # not a real file (tests): nothing will flush at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)
    try:
        stream.flush()   # the stale buffer now drains into /dev/null
    except (OSError, ValueError, AttributeError):
        pass
