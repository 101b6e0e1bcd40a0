"""Colour policy and the live stats panel on stderr.

Policy, the same for every stream: NO_COLOR (non-empty) turns colour off; otherwise FORCE_COLOR
(non-empty) turns it on; otherwise TERM=dumb/unknown or a stream that is not a terminal means plain
text. The live panel (cursor movement) needs stderr to be a real terminal that is not dumb:
FORCE_COLOR forces colour, never animation.

Rich only ever writes to stderr here: Live runs with stdout/stderr redirection off. When stdout is
the same terminal as stderr, streamed text goes through the live console (complete lines above the
panel, the unfinished line inside it) so that text and panel never overwrite each other.
"""
from __future__ import annotations

import sys
import threading
import time

from ..terminal import dumb_term, is_tty, same_file, wants_color, wants_live  # noqa: F401  (the policy lives there)

DRAFT_STYLE = "cyan"
SGR_DRAFT, SGR_RESET = "\x1b[36m", "\x1b[39m"


class SafeStderr:
    """stderr for Rich: a write that fails (terminal gone, pipe closed) silences it instead of raising."""

    def __init__(self, stream):
        self.stream, self.broken = stream, stream is None

    def write(self, text: str) -> int:
        if not self.broken:
            try:
                self.stream.write(text)
            except (OSError, ValueError):
                self._break()
        return len(text)

    def flush(self) -> None:
        if not self.broken:
            try:
                self.stream.flush()
            except (OSError, ValueError):
                self._break()

    def _break(self) -> None:
        from .output import silence_stderr

        self.broken = True
        silence_stderr()

    def isatty(self) -> bool:
        return is_tty(self.stream)

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", None) or "utf-8"

    def fileno(self) -> int:
        return self.stream.fileno()


def stderr_console(environ=None):
    """A Rich console on stderr that follows specx's colour policy, not Rich's own reading of the env."""
    from rich.console import Console

    color = wants_color(sys.stderr, environ)
    live = wants_live(sys.stderr, environ)
    return Console(file=SafeStderr(sys.stderr), force_terminal=live, force_interactive=live,
                   no_color=not color, color_system="standard" if color else None,
                   highlight=False, emoji=False, markup=False)


def stats_text(stats, elapsed: float, legend: bool = False):
    """The panel: tokens, tok/s, acceptance, mean acceptance length, k, elapsed; one line."""
    from rich.text import Text

    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(f"{stats.new_tokens}", "bold").append(" tokens · ")
    t.append(f"{stats.decode_tok_s:.1f}", "bold green").append(" tok/s · ")
    if stats.k:
        t.append(f"accepted {stats.acceptance_rate * 100:.0f}%", "bold").append(" · ")
        t.append(f"mean length {stats.mean_acceptance_length:.2f}").append(" · ")
    if stats.tree_rounds:   # token trees: nodes verified and path accepted per tree round
        t.append(f"tree {stats.mean_tree_nodes:.1f} nodes → {stats.mean_tree_path:.2f}").append(" · ")
    t.append(f"k={stats.k} {stats.drafter}", "dim").append(" · ")
    if stats.notices:   # the auto policy's latest decision, e.g. "speculation off: …"
        t.append(stats.notices[-1].split(":")[0], "bold yellow").append(" · ")
    t.append(f"{elapsed:.1f}s", "dim")
    if legend:
        t.append(" · ").append("drafted", DRAFT_STYLE)
    return t


class LivePanel:
    """The transient stats line under the text; owns the unfinished row when stdout shares the terminal."""

    def __init__(self, console, stats, *, shares_stdout: bool, legend: bool = False, fps: float = 15.0):
        from rich.live import Live
        from rich.text import Text

        self.console, self.stats, self.shares_stdout, self.legend = console, stats, shares_stdout, legend
        self.partial = Text()   # the text after the last finished row (shared terminal only)
        self.start = time.perf_counter()
        self.min_gap, self.last = 1.0 / fps, 0.0
        # Our own ticker under our own lock: a redraw can never land between the two halves of write().
        self.lock, self.stopped = threading.RLock(), threading.Event()
        self.ticker = threading.Thread(target=self._tick_loop, name="specx-live", daemon=True)
        self.live = Live(get_renderable=self._render, console=console, redirect_stdout=False,
                         redirect_stderr=False, transient=True, auto_refresh=False)

    def __enter__(self) -> LivePanel:
        self.live.start(refresh=True)
        self.ticker.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop(flush=False)

    def stop(self, flush: bool) -> None:
        """Remove the panel; with flush, the unfinished row is printed where the panel was."""
        self.stopped.set()
        if self.ticker.is_alive():
            self.ticker.join()
        with self.lock:
            self.live.stop()
            partial, self.partial = self.partial, self.partial.blank_copy()
            if flush and partial:
                self.console.print(partial, end="", soft_wrap=True)

    def _tick_loop(self) -> None:
        while not self.stopped.wait(0.25):   # elapsed time moves even while a round is slow
            with self.lock:
                if not self.stopped.is_set():
                    self.live.refresh()

    def _render(self):
        from rich.console import Group

        panel = stats_text(self.stats, time.perf_counter() - self.start, self.legend)
        return Group(self.partial, panel) if self.partial else panel

    def write(self, runs: list[tuple[str, bool, bool]]) -> None:
        """Text for stdout on the shared terminal: finished rows go above the panel at once."""
        with self.lock:   # the ticker renders self.partial: never while it changes
            done = self._take_rows(runs)
            with self.console:   # one write: the panel takes the new state, the rows go above it
                self.live.refresh()
                if done:
                    self.console.print(*done, sep="\n", soft_wrap=True)
            self.last = time.perf_counter()

    def _take_rows(self, runs: list[tuple[str, bool, bool]]) -> list:
        """Add runs to the unfinished row; return the rows that are now final (ended or full)."""
        done = []
        for text, drafted, tint in runs:
            style = DRAFT_STYLE if drafted and tint else ""
            *ended, rest = text.split("\n")
            for chunk in ended:
                done.append(self.partial.append(chunk, style))
                self.partial = self.partial.blank_copy()
            self.partial.append(rest, style)
        rows = self.partial.wrap(self.console, self.console.width)
        if len(rows) > 1:   # a long line: its full rows are final, only the last one stays live
            done.extend(rows[:-1])
            self.partial = rows[-1]
        return done

    def tick(self) -> None:
        """A round landed: redraw the stats now unless the last redraw was very recent."""
        now = time.perf_counter()
        if now - self.last >= self.min_gap:
            self.last = now
            with self.lock:
                self.live.refresh()
