"""Progress of `specx bench` and `specx tune` on stderr, with the time left."""
from __future__ import annotations

import sys

from . import output


class ProgressBar:
    """Progress on stderr with the time left: a transient Rich bar on a terminal, else one line per
    measured run. The estimate is the time per run so far times the runs left (every configuration
    runs every prompt, so the mix ahead is the mix behind); warm-ups (short, unmeasured) are left out."""

    def __init__(self, what: str, total: int):
        self.what, self.total, self.bar, self.done, self.measured = what, total, None, 0, 0

    def __enter__(self):
        import time

        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from . import live

        self.start = time.monotonic()
        if live.wants_live(sys.stderr):
            self.bar = Progress(TextColumn(f"{self.what} {{task.description}}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), TextColumn("{task.fields[left]}"), console=live.stderr_console(),
                                transient=True)
            self.bar.__enter__()
            self.task = self.bar.add_task("", total=self.total, left="")
        return self.advance

    def left(self) -> str:
        """`~2m10s left` once a measured run is done; empty before."""
        import time

        if not self.measured:
            return ""
        return f"~{duration((time.monotonic() - self.start) / self.measured * (self.total - self.done))} left"

    def advance(self, label: str, sample) -> None:
        import time

        self.done += 1
        if sample is None:   # a warm-up: the clock for the estimate starts after the last one
            self.start = time.monotonic()
        else:
            self.measured += 1
        if self.bar:
            self.bar.update(self.task, advance=1, description=label, left=self.left())
        elif sample is not None:   # not a terminal: one line per measured run
            output.note(f"{self.what} {self.done}/{self.total} {label} · {sample.category}/{sample.prompt} · "
                        f"{sample.new_tokens} tokens · {sample.tok_s:.2f} tok/s · {self.left()}")

    def __exit__(self, *exc):
        if self.bar:
            self.bar.__exit__(*exc)
        return False


def duration(seconds: float) -> str:
    """`45s`, `3m05s`, `1h02m`."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    return f"{s // 60}m{s % 60:02d}s" if s < 3600 else f"{s // 3600}h{s % 3600 // 60:02d}m"
