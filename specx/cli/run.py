"""`specx run MODEL [PROMPT]`: stream a completion to stdout, stats to stderr."""
from __future__ import annotations

import contextlib
import errno
import signal
import sys
import threading
from typing import Annotated, Optional

import typer

from ..memory.probe import peak_rss_bytes
from . import EXIT_CODES, app, live, model_flags, output
from .prompt import read_prompt

EXAMPLES = """\b
Examples:
  specx run smollm2 "Explain speculative decoding in one sentence"
  git diff | specx run smollm2 - --max-tokens 128 "Write a commit message for this diff"
  specx run ./target.gguf --drafter ./drafter.gguf "def quicksort(arr):"
"""


@app.command(epilog=EXAMPLES + "\n" + EXIT_CODES)
def run(
    ctx: typer.Context,
    model: model_flags.Model,
    prompt: Annotated[Optional[list[str]], typer.Argument(help="The prompt. `-` reads stdin; `- PROMPT`: the piped text, then PROMPT; stdin is read only then, or when no prompt is given.")] = None,
    drafter: model_flags.Drafter = "auto",
    draft_tokens: model_flags.DraftTokens = 4,
    draft_policy: model_flags.DraftPolicy = "auto",
    confidence: model_flags.Confidence = 0.4,
    tree: model_flags.Tree = 0,
    max_tokens: model_flags.MaxTokens = 512,
    dtype: model_flags.Dtype = "auto",
    quant: model_flags.Quant = "auto",
    mem_budget: model_flags.MemBudget = None,
    allow_disk_offload: model_flags.AllowDiskOffload = False,
    moe_offload: model_flags.MoeOffload = False,
    draft_dtype: model_flags.DraftDtype = None,
    draft_quant: model_flags.DraftQuant = "auto",
    draft_vocab: model_flags.DraftVocab = None,
    temperature: Annotated[float, typer.Option("--temperature", "-t", help="0 = greedy (argmax).")] = 0.0,
    top_p: Annotated[Optional[float], typer.Option(help="Nucleus sampling mass in (0, 1].")] = None,
    top_k: Annotated[Optional[int], typer.Option(help="Sample among the k most likely tokens.")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Seed for sampling.")] = None,
    system: Annotated[Optional[str], typer.Option(help="System message for the chat template.")] = None,
    stop: Annotated[Optional[list[str]], typer.Option("--stop", help="Stop at this string (repeatable).")] = None,
    raw: Annotated[bool, typer.Option("--raw", help="Do not apply the chat template.")] = False,
    no_stats: Annotated[bool, typer.Option("--no-stats", help="No stats on stderr (warnings still show).")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per line on stdout (schema in docs/output.md).")] = False,
    color_drafted: Annotated[bool, typer.Option("--color-drafted", help="On a colour terminal, tint the text that came from the drafter.")] = False,
) -> None:
    """Generate text with speculative decoding; the output is exactly what the target alone would give."""
    from ..api import stream
    from .defaults import resolve

    options, prompt = resolve(ctx, dict(locals()), notify=output.note)   # checked before stdin is read
    text = read_prompt(prompt)
    notify = output.note if options.stats else output.warnings_only
    for line in options.notes:
        notify(line)
    generation = stream(options.model, text, options.run, notify=notify)
    code = consume(generation, Sink(json_out, options.stats, color_drafted))
    if code:
        raise typer.Exit(code)


class Sink:
    """Where one run's events go: stdout gets text or JSON lines; stderr a live panel, one line, or nothing."""

    def __init__(self, json_out: bool, show_stats: bool, color_drafted: bool):
        self.json_out, self.show_stats = json_out, show_stats
        self.tint = color_drafted and not json_out and live.wants_color(sys.stdout)
        self.panel: live.LivePanel | None = None
        self.last = ""   # the last character of text written, to end the output with a newline

    def open(self, stats) -> None:
        if self.show_stats and live.wants_live(sys.stderr):
            shares = live.same_file(sys.stdout, sys.stderr)
            self.panel = live.LivePanel(live.stderr_console(), stats, shares_stdout=shares, legend=self.tint)
            self.panel.__enter__()

    def round(self, event) -> None:
        if event.notice and not self.panel:   # auto turned drafting off or on: said, never silent
            # (the live panel shows it in its line instead); on its own line where it shares a terminal or
            # file with a line of text not yet ended
            apart = self.last not in ("", "\n") and live.same_file(sys.stdout, sys.stderr)
            output.note(("\n" if apart else "") + f"note: {event.notice}")
        if self.json_out:
            self._out([(output.round_json(event) + "\n", False, False)])
        else:
            self._out(output.pieces(event, self.tint))
        if self.panel:
            self.panel.tick()

    def done(self, reason: str, stats) -> None:
        """The end: the panel goes, the unfinished line is written, then the summary."""
        self.close(flush=True)
        if self.json_out:
            output.write_stdout(output.done_json(reason, stats) + "\n")
        elif self.last not in ("", "\n"):
            output.write_stdout("\n")
        if self.show_stats:
            output.note(output.summary_line(stats, reason))

    def close(self, flush: bool = False) -> None:
        panel, self.panel = self.panel, None
        if panel:
            panel.stop(flush)

    def _out(self, runs: list[tuple[str, bool, bool]]) -> None:
        if not runs:
            return
        if self.panel and self.panel.shares_stdout:
            self.panel.write(runs)
        else:
            output.write_stdout(output.ansi(runs))
        self.last = runs[-1][0][-1:] or self.last


@contextlib.contextmanager
def first_sigint_sets(event: threading.Event):
    """The first Ctrl-C asks the loop to stop after this round; a second one raises KeyboardInterrupt."""
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or previous in (signal.SIG_IGN, None):
        yield
        return

    def handler(signum, frame):
        event.set()
        signal.signal(signal.SIGINT, previous)

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def consume(generation, sink: Sink) -> int:
    """Stream the events out; the exit code: 0, 130 (Ctrl-C), 141 (closed pipe), 1 (write failed)."""
    from ..engine.types import Done

    try:
        with first_sigint_sets(generation.stop):
            sink.open(generation.stats)
            for event in generation:
                if isinstance(event, Done):
                    sink.done(event.reason, event.stats)
                    return 130 if event.reason == "interrupted" else 0
                sink.round(event)
    except KeyboardInterrupt:
        return interrupted(generation, sink)
    except output.OutputError as e:
        return write_failed(generation, sink, e)
    finally:
        sink.close()
    return 1


def interrupted(generation, sink: Sink) -> int:
    """A hard Ctrl-C (out of torch): what was produced is flushed, then the stats so far."""
    generation.stop.set()
    stats = generation.stats
    stats.total_s = stats.total_s or stats.prefill_s + stats.decode_s
    stats.peak_bytes = stats.peak_bytes or peak_rss_bytes()
    try:
        sink.done("interrupted", stats)
    except output.OutputError as e:
        return write_failed(generation, sink, e)
    return 130


def write_failed(generation, sink: Sink, e: output.OutputError) -> int:
    """EPIPE: quiet exit 141. Anything else (ENOSPC, EIO…): one error line, exit 1."""
    generation.stop.set()
    sink.close()
    output.silence_stdout()
    if e.errno == errno.EPIPE:
        return 141
    output.error(f"cannot write the output: {e.strerror}",
                 "free space where stdout goes" if e.errno in (errno.ENOSPC, errno.EFBIG)
                 else "check where stdout is redirected")
    return 1
