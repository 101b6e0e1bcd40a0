"""Download progress on stderr: a Rich bar on a terminal, one line per file otherwise.

huggingface_hub takes a tqdm-like class (`tqdm_class=`) and calls `cls(total=, initial=, desc=, …)`,
`update(n)` and the context-manager protocol on it; `Bars.tqdm_class()` returns such a class bound to
one Rich progress display.
"""
from __future__ import annotations

import sys
import threading


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
