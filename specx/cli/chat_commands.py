"""`specx chat` on a terminal: the input line (readline history) and the slash commands."""
from __future__ import annotations

import difflib
import json
import os
import sys
import tempfile
from pathlib import Path

from . import output

PROMPT = ">>> "
NAMES = ("/stats", "/reset", "/system", "/save", "/help", "/exit")


def setup_history() -> None:
    """Arrow keys and a persistent history (in specx's state dir) when readline exists."""
    try:
        import atexit
        import readline
    except ImportError:   # pragma: no cover  (Windows without pyreadline)
        return
    from ..state.paths import state_dir

    path = state_dir() / "chat_history"
    try:
        readline.read_history_file(path)
    except OSError:
        pass
    readline.set_history_length(1000)

    def save() -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            readline.write_history_file(path)
        except OSError:
            pass

    atexit.register(save)


def read_line() -> str | None:
    """The next message; None on Ctrl-D. Ctrl-C at the prompt clears the line."""
    while True:
        try:
            if sys.stdout.isatty():
                return input(PROMPT)
            sys.stderr.write(PROMPT)
            sys.stderr.flush()
            return input()
        except EOFError:
            output.note("")
            return None
        except KeyboardInterrupt:
            output.note("")


def handle(session, line: str) -> str | None:
    """Run a slash command; "exit" ends the chat."""
    name, _, arg = line.strip().partition(" ")
    arg = arg.strip()
    if name in ("/exit", "/quit", "/bye"):
        return "exit"
    if name == "/reset":
        session.reset()
        output.note("(conversation forgotten)")
    elif name == "/system":
        session.system = arg or None
        output.note(f"(system message {'set' if arg else 'cleared'}; it applies from the next message)")
    elif name == "/stats":
        output.note(stats_table(session))
    elif name == "/save":
        if not arg:
            output.error("/save needs a file name", "e.g. /save chat.json")
        else:
            save_transcript(session, Path(arg).expanduser())
    elif name == "/help":
        output.note(" ".join(NAMES) + " — /system TEXT sets the system message, /save FILE writes JSON")
    else:
        close = difflib.get_close_matches(name, NAMES, n=1)
        output.error(f"unknown command {name}", f"did you mean {close[0]}?" if close else "try /help")
    return None


def stats_table(session) -> str:
    """Per turn: tokens, tok/s, acceptance, prompt tokens reused / prefilled; then the totals."""
    if not session.turns:
        return "(no answers yet)"
    rows = ["turn  tokens   tok/s  accepted  reused  prefilled"]
    for i, t in enumerate(session.turns, 1):
        s = t.stats
        rows.append(f"{i:>4}  {s.new_tokens:>6}  {s.decode_tok_s:>6.1f}  {s.acceptance_rate * 100:>7.0f}%"
                    f"  {t.reused:>6}  {t.prefilled:>9}")
    total = session.totals()
    rows.append(f" all  {total['new_tokens']:>6}  {total['decode_tok_s']:>6.1f}  "
                f"{total['acceptance_rate'] * 100:>7.0f}%  {total['reused']:>6}  {total['prefilled']:>9}")
    return "\n".join(rows)


def transcript(session) -> dict:
    pair = session.pair
    return {"version": output.JSON_SCHEMA_VERSION, "type": "transcript", "model": pair.target.name,
            "drafter": pair.drafter.name, "system": session.system, "messages": session.messages,
            "turns": [{"user": t.user, "text": t.text, "reason": t.reason, "reused_tokens": t.reused,
                       "prefilled_tokens": t.prefilled, "stats": t.stats.as_dict()} for t in session.turns],
            "totals": session.totals()}


def save_transcript(session, path: Path) -> None:
    """Written atomically (a temp file in the same folder, then put in place); a file already there is
    replaced only when the user says so."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(transcript(session), f, ensure_ascii=False, indent=1)
                f.flush()
                os.fsync(f.fileno())
            if not _put_in_place(Path(tmp), path):
                output.note(f"(not saved: {path} is left as it was)")
                return
        finally:
            Path(tmp).unlink(missing_ok=True)
    except OSError as e:
        output.error(f"cannot write {path}: {e.strerror}", "check the folder exists and is writable")
        return
    output.note(f"(saved {len(session.messages)} messages to {path})")


def _put_in_place(tmp: Path, path: Path) -> bool:
    """A new name is linked (it fails if a file appeared meanwhile: never a silent overwrite); an existing
    one is replaced after a yes."""
    if not (path.exists() or path.is_symlink()):
        try:
            os.link(tmp, path)
            return True
        except FileExistsError:
            pass
        except OSError:   # a file system without hard links
            os.replace(tmp, path)
            return True
    if not _yes(f"{path} exists: overwrite it? [y/N] "):
        return False
    os.replace(tmp, path)
    return True


def _yes(question: str) -> bool:
    try:
        return input(question).strip().lower() in ("y", "yes")
    except (EOFError, KeyboardInterrupt):
        output.note("")
        return False
