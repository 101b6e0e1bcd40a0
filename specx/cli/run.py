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
from . import EXIT_CODES, app, live, output
from .completion import complete_drafter, complete_model
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
    model: Annotated[str, typer.Argument(help="A GGUF file, a Hugging Face model folder, a preset name (or preset file), or a Hub repo org/name[:quant][@revision].", autocompletion=complete_model)],
    prompt: Annotated[Optional[list[str]], typer.Argument(help="The prompt. `-` reads stdin; `- PROMPT`: the piped text, then PROMPT; stdin is read only then, or when no prompt is given.")] = None,
    drafter: Annotated[str, typer.Option("--drafter", "-d", help="auto (a model drafter that also copies from the context, else self+ngram on specx's own decoder, else ngram), none, ngram, self (the target drafts with some of its own layers), a model (file/folder/preset), or MODEL+ngram (self+ngram too).", autocompletion=complete_drafter)] = "auto",
    draft_tokens: Annotated[int, typer.Option("--draft-tokens", "-k", help="Tokens drafted per round (0 = plain decoding); the most with --draft-policy auto, which drafts up to 16 unless -k is set.")] = 4,
    draft_policy: Annotated[str, typer.Option("--draft-policy", help="auto (draft up to k while measured costs say it pays, each draft ending where the rest would likely be wasted; else plain decoding, re-probed), fixed (k every round), heuristic (+2 after a fully accepted round, -1 otherwise), confidence (up to k, stop when the drafter's top probability < --confidence).")] = "auto",
    confidence: Annotated[float, typer.Option("--confidence", help="Threshold for --draft-policy confidence.")] = 0.4,
    max_tokens: Annotated[int, typer.Option("--max-tokens", "-n", help="Most new tokens (never past the context).")] = 512,
    dtype: Annotated[str, typer.Option(help="auto|float32|bfloat16|float16 (auto = float32 on CPU).")] = "auto",
    quant: Annotated[str, typer.Option("--quant", help="Target weights: auto (as loaded where they fit, quantized only where they do not; a GGUF file on the CPU runs as the file holds it with int8 activations, q8), none (on a GGUF file: float32 activations, exact), q8; on CPU fp16, int8, int4; on a GPU int8, nf4, fp4 (bitsandbytes). Anything but none/auto is a faster, slightly different target (see docs/speed.md). A preset's GGUF variant by name (Q4_K_M, Q8_0, ...): without CUDA a preset takes Q4_K_M (or a smaller variant that fits) unasked.")] = "auto",
    mem_budget: Annotated[Optional[str], typer.Option("--mem-budget", help="Memory to plan for, e.g. gpu=6GiB,cpu=16GiB (unnamed ones are detected); see `specx plan`.")] = None,
    allow_disk_offload: Annotated[bool, typer.Option("--allow-disk-offload", help="Let the plan keep weights on disk (slow) instead of refusing.")] = False,
    moe_offload: Annotated[bool, typer.Option("--moe-offload", help="Keep MoE experts in CPU memory behind a cache on the compute device (on by default when they do not fit).")] = False,
    draft_dtype: Annotated[Optional[str], typer.Option("--draft-dtype", help="Drafter dtype (default: --dtype).")] = None,
    draft_quant: Annotated[str, typer.Option("--draft-quant", help="Drafter weights on CPU: auto (a GGUF drafter as it is with int8 activations, q8; else int8dyn where available), none, q8, fp16, int8, int4, int8dyn (int8 weights and activations; drafters only). Never changes the output.")] = "auto",
    draft_vocab: Annotated[Optional[int], typer.Option("--draft-vocab", help="Drafter scores only the N most frequent tokens (VocabTrim, e.g. 32768; default 0 = all). Never changes the output.")] = None,
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
            output.note(f"note: {event.notice}")   # (the live panel shows it in its line instead)
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
