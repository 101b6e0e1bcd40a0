"""The `specx` command: Typer app; main() maps SpecxError to `error:`/`hint:` and an exit code."""
from __future__ import annotations

import errno
import os
import sys
from typing import Annotated

import typer
from typer.core import TyperGroup

from ..errors import InsufficientResources, Interrupted, SpecxError, redact

EXIT_CODES = """\b
Exit codes:  0 success; 1 runtime failure (I/O, corrupt file); 2 usage or input validation;
3 model unavailable (unknown preset, not found, gated, offline cache miss, needs remote code,
incompatible drafter); 4 insufficient resources (memory or disk); 130 interrupted; 141 broken pipe."""


try:  # typer ≥ 0.22 vendors click
    from typer._click.exceptions import ClickException
except ImportError:  # pragma: no cover
    from click import ClickException

PASS_THROUGH = (typer.Exit, typer.Abort, ClickException)   # exits and usage errors: typer prints them


class SpecxGroup(TyperGroup):
    """Every command runs through here: specx errors, Ctrl-C and surprises become one error/hint pair."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except PASS_THROUGH:
            raise
        except SpecxError as e:
            if os.environ.get("SPECX_DEBUG"):
                raise
            raise typer.Exit(report(e)) from None
        except BrokenPipeError:   # a library wrote to a closed stderr pipe (`2>&1 | head -n 1`)
            from .output import silence_stderr, silence_stdout

            silence_stdout()
            silence_stderr()
            raise typer.Exit(141) from None
        except KeyboardInterrupt:
            raise typer.Exit(report(Interrupted("interrupted", "nothing was generated yet"))) from None
        except MemoryError:
            raise typer.Exit(report(InsufficientResources("out of memory"))) from None
        except Exception as e:  # noqa: BLE001  (a CLI prints no tracebacks; SPECX_DEBUG=1 shows it)
            if os.environ.get("SPECX_DEBUG"):
                raise
            if isinstance(e, OSError) and disk_error(e):
                raise typer.Exit(report(disk_error(e))) from None
            raise typer.Exit(report(SpecxError(f"unexpected {type(e).__name__}: {e}",
                                               "this is a bug in specx: rerun with SPECX_DEBUG=1 "
                                               "and report the traceback"))) from None


app = typer.Typer(cls=SpecxGroup, no_args_is_help=True, pretty_exceptions_show_locals=False,
                  add_completion=True, help="Lossless speculative decoding for local LLMs.",
                  context_settings={"help_option_names": ["-h", "--help"]},
                  epilog="\b\nExamples:\n  specx run smollm2 \"Explain speculative decoding in one sentence\"\n"
                         "  specx chat smollm2\n\n" + EXIT_CODES, rich_markup_mode=None)


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"specx {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option("--version", "-V", is_eager=True, callback=_version,
                                                help="Print the version and exit.")] = False) -> None:
    """Lossless speculative decoding for local LLMs: the output is what the target alone would write."""


from . import env as _env  # noqa: E402,F401  (registers the command)
from . import models_cmd as _models_cmd  # noqa: E402,F401  (pull, list, show, rm, verify)
from . import run as _run  # noqa: E402,F401  (registers the command)
from . import bench as _bench  # noqa: E402,F401  (registers the command)
from . import tune as _tune  # noqa: E402,F401  (registers the command)
from . import config_cmd as _config_cmd  # noqa: E402,F401  (registers the command)
from . import chat as _chat  # noqa: E402,F401  (registers the command)
from . import plan as _plan  # noqa: E402,F401  (registers the command)
from . import serve as _serve  # noqa: E402,F401  (serve, export vllm)


MOVE_HINT = "SPECX_HOME moves specx's settings and state, SPECX_MODEL_CACHE its model cache"


def disk_error(e: OSError) -> SpecxError | None:
    """A full or unwritable disk, wherever specx was writing: what it is and where the files can go instead."""
    where = f": {e.filename}" if e.filename else ""
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return InsufficientResources(f"the disk is full{where}", f"free some disk; {MOVE_HINT}")
    if e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        return SpecxError(f"{e.strerror}{where}", f"make it writable; {MOVE_HINT}")
    return None


def report(error) -> int:
    """Print one `error:` and one `hint:` line on stderr; return the exit code."""
    from .output import note

    def one_line(text: str) -> str:   # credentials in a URL (HF_ENDPOINT) are never printed
        return redact(" ".join(part.strip() for part in str(text).splitlines() if part.strip()))

    note(f"error: {one_line(error.message)}\nhint: {one_line(error.hint)}")
    return error.exit_code


def main() -> None:
    """Entry point: run the app, turning specx errors into exit codes without tracebacks."""
    try:
        app(standalone_mode=True, prog_name="specx")  # also under `python -m specx`: completion is for `specx`
    except SpecxError as e:
        if os.environ.get("SPECX_DEBUG"):
            raise
        sys.exit(report(e))
    except BrokenPipeError:   # e.g. `specx --help | head -n 1`
        _quick_exit(141)
    except SystemExit as e:
        if e.code == 141:
            _quick_exit(141)
        raise


def _quick_exit(code: int) -> None:
    """The reader is gone: leave now. Interpreter teardown with torch loaded takes ~1 s."""
    from .output import silence_stdout

    silence_stdout()
    try:
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    os._exit(code)
