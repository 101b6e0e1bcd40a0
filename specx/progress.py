"""Progress on stderr: a Rich bar on a terminal, one line per step otherwise; and what the libraries
specx calls may show instead.

huggingface_hub takes a tqdm-like class (`tqdm_class=`) and calls `cls(total=, initial=, desc=, …)`,
`update(n)` and the context-manager protocol on it; `Bars.tqdm_class()` returns such a class bound to
one Rich progress display. `library_calls()` wraps specx's calls into torch and transformers: their own
tqdm bars become transient Rich bars on a terminal and nothing otherwise (specx says each step in one
line), and their warnings are dropped there (never for the user's own code around them).
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import warnings

# What torch and transformers warn about inside specx's calls: deprecations and advice meant for whoever
# calls them (specx, which caps the versions it installs and tests them in CI), not for specx's user.
LIBRARY_WARNINGS = (FutureWarning, UserWarning, DeprecationWarning)


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


class Bars:
    """One download session's progress; use as a context manager around the downloads."""

    def __init__(self, stream=None):
        from . import terminal as live

        self.stream = stream or sys.stderr
        self.rich = None
        if live.wants_live(self.stream):
            from rich.console import Console
            from rich.progress import (BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn,
                                       TransferSpeedColumn)

            console = Console(file=self.stream, no_color=not live.wants_color(self.stream))
            self.rich = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                 TransferSpeedColumn(), TimeRemainingColumn(), console=console, transient=False)
        self.lock = threading.Lock()

    def __enter__(self) -> "Bars":
        if self.rich:
            self.rich.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.rich:
            self.rich.stop()

    def line(self, text: str) -> None:
        try:
            if self.rich:
                self.rich.console.print(text, markup=False, highlight=False)
            else:
                self.stream.write(text + "\n")
                self.stream.flush()
        except (OSError, ValueError):
            pass

    def tqdm_class(self, label: str):
        """A tqdm stand-in that huggingface_hub drives for one file called `label`."""
        bars = self

        class _Bar:
            def __init__(self, *args, total=None, initial=0, **kwargs):
                self.total, self.n = total, initial or 0
                self.task = None
                if bars.rich:
                    self.task = bars.rich.add_task(label, total=total, completed=self.n)
                else:
                    size = f" ({_human(total)})" if total else ""
                    resumed = f", resuming at {_human(self.n)}" if self.n else ""
                    bars.line(f"downloading {label}{size}{resumed} …")

            def update(self, n=1):
                self.n += n or 0
                if self.task is not None:
                    bars.rich.update(self.task, completed=self.n)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.close()

            def close(self):
                pass

            def set_description(self, *a, **k):
                pass

            set_postfix_str = refresh = set_description

        return _Bar


@contextlib.contextmanager
def quiet():
    """The libraries' warnings (LIBRARY_WARNINGS) are dropped inside; cheap enough for every forward."""
    with warnings.catch_warnings():
        for category in LIBRARY_WARNINGS:
            warnings.simplefilter("ignore", category)
        yield


@contextlib.contextmanager
def library_calls():
    """Around a call that loads, converts or saves a model: warnings dropped (quiet), transformers' log
    lines below errors unless TRANSFORMERS_VERBOSITY says otherwise, and its tqdm bars (transformers'
    own hook; the GGUF converter's `tqdm.auto` by its module's name) shown as LibraryBar."""
    with quiet(), _transformers_quiet():
        yield


@contextlib.contextmanager
def _transformers_quiet():
    from transformers.utils import logging as tf_logging

    def hook(factory, args, kwargs):
        return factory(*args, **kwargs) if factory is tf_logging.EmptyTqdm else LibraryBar(*args, **kwargs)

    previous = tf_logging.set_tqdm_hook(hook)
    gguf = sys.modules.get("transformers.modeling_gguf_pytorch_utils")
    gguf_tqdm = getattr(gguf, "tqdm", None)
    level = tf_logging.get_verbosity()
    if gguf_tqdm is not None:
        gguf.tqdm = LibraryBar
    if not os.environ.get("TRANSFORMERS_VERBOSITY"):
        tf_logging.set_verbosity_error()
    try:
        yield
    finally:
        tf_logging.set_verbosity(level)
        if gguf_tqdm is not None:
            gguf.tqdm = gguf_tqdm
        tf_logging.set_tqdm_hook(previous)


class LibraryBar:
    """A tqdm stand-in for the libraries' own loops (`for x in tqdm(items, desc=…)`, `update`, `close`,
    the context-manager protocol): a transient Rich bar on a terminal, nothing otherwise."""

    def __init__(self, iterable=None, desc=None, total=None, disable=False, **_):
        from . import terminal

        self.iterable, self.n = iterable, 0
        self.total = total if total is not None else (len(iterable) if hasattr(iterable, "__len__") else None)
        self.rich = None
        if not disable and terminal.wants_live(sys.stderr):
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            console = Console(file=sys.stderr, no_color=not terminal.wants_color(sys.stderr))
            self.rich = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 console=console, transient=True)
            self.task = self.rich.add_task((desc or "").rstrip(".: ").lower(), total=self.total)
            self.rich.start()

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.update(1)
        self.close()

    def __len__(self) -> int:
        return self.total or 0

    def update(self, n=1) -> None:
        self.n += n or 0
        if self.rich:
            self.rich.update(self.task, completed=self.n)

    def close(self) -> None:
        rich, self.rich = self.rich, None
        if rich:
            rich.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def set_description(self, *a, **k):
        pass

    set_postfix = set_postfix_str = refresh = clear = write = set_description
