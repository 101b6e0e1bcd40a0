"""`specx chat [MODEL]`: a multi-turn conversation; the KV caches live across turns."""
from __future__ import annotations

import json
import sys
import threading
from typing import Annotated, Optional

import typer

from . import EXIT_CODES, app, model_flags, output
from .completion import complete_drafter, complete_model

EXAMPLES = """\b
Examples:
  specx chat smollm2
  printf 'Hi\\nName a prime\\n' | specx chat smollm2 --json | jq -r .text
"""
COMMANDS = ("/stats (session totals), /reset (forget the conversation), /system TEXT, /save FILE "
            "(transcript as JSON), /exit; Ctrl-C cancels an answer, Ctrl-D exits")


@app.command(epilog=EXAMPLES + "\n" + EXIT_CODES)
def chat(
    ctx: typer.Context,
    model: Annotated[Optional[str], typer.Argument(help="A GGUF file, a model folder or a preset (default: `specx config set model …`).", autocompletion=complete_model)] = None,
    drafter: Annotated[str, typer.Option("--drafter", "-d", help="auto, none, ngram, self (the target drafts with some of its own layers), a model, or MODEL+ngram (self+ngram too).", autocompletion=complete_drafter)] = "auto",
    draft_tokens: Annotated[int, typer.Option("--draft-tokens", "-k", help="Tokens drafted per round (0 = plain decoding); the most with --draft-policy auto, which drafts up to 16 unless -k is set.")] = 4,
    draft_policy: Annotated[str, typer.Option("--draft-policy", help="auto (drafts up to k while measured costs say it pays), fixed, heuristic or confidence.")] = "auto",
    confidence: Annotated[float, typer.Option("--confidence", help="Threshold for --draft-policy confidence.")] = 0.4,
    tree: model_flags.Tree = 0,
    max_tokens: Annotated[int, typer.Option("--max-tokens", "-n", help="Most new tokens per answer.")] = 512,
    dtype: Annotated[str, typer.Option(help="auto|float32|bfloat16|float16.")] = "auto",
    temperature: Annotated[float, typer.Option("--temperature", "-t", help="0 = greedy (argmax).")] = 0.0,
    top_p: Annotated[Optional[float], typer.Option(help="Nucleus sampling mass in (0, 1].")] = None,
    top_k: Annotated[Optional[int], typer.Option(help="Sample among the k most likely tokens.")] = None,
    seed: Annotated[Optional[int], typer.Option(help="Seed for sampling.")] = None,
    system: Annotated[Optional[str], typer.Option(help="System message.")] = None,
    no_stats: Annotated[bool, typer.Option("--no-stats", help="No stats on stderr.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="One JSON object per turn on stdout.")] = False,
) -> None:
    """Chat with a model: each turn prefills only its new tokens. Stdin piped: one message per line."""
    from ..api import prepare
    from ..engine.session import ChatSession
    from .defaults import resolve

    options, _ = resolve(ctx, dict(locals()), prompt_param=None, notify=output.note)
    m, r = options.model, options.run
    notify = output.note if options.stats else output.warnings_only
    for line in options.notes:
        notify(line)
    pair = prepare(m, notify)
    notify(pair.explanation + (f"; {pair.target.kernels}" if pair.target.kernels else ""))
    session = ChatSession(pair, system=r.system, max_tokens=r.max_tokens, sampling=r.sampling,
                          draft_policy=r.draft_policy, confidence=r.confidence, guard=r.guard, tree=r.tree, notify=output.note)
    if sys.stdin is not None and sys.stdin.isatty():
        code = terminal(session, m.model, options.stats)
    else:
        code = piped(session, json_out, options.stats)
    if code:
        raise typer.Exit(code)


def piped(session, json_out: bool, show_stats: bool) -> int:
    """One user turn per line; each answer then one empty line on stdout (or one JSON object)."""
    for line in sys.stdin:
        user = line.rstrip("\r\n")
        if not user.strip():
            continue
        turn = session.ask(user)
        try:
            text, reason = answer(turn, json_out, show_stats)
            if json_out:
                output.write_stdout(turn_json(turn) + "\n")
            else:
                output.write_stdout("\n")
        except output.OutputError as e:
            from .run import Sink, write_failed

            return write_failed(turn.generation, Sink(False, False, False), e)
        if reason == "interrupted":
            return 130
    return 0


def answer(turn, json_out: bool, show_stats: bool) -> tuple[str, str]:
    """Stream one answer (text mode: live panel on a terminal stderr); returns its text and stop reason."""
    from ..engine.types import Done
    from .run import Sink, first_sigint_sets

    sink = Sink(False, show_stats, False)
    parts, reason = [], "interrupted"
    try:
        with first_sigint_sets(turn.stop):
            if not json_out:
                sink.open(turn.stats)
            for event in turn:
                if isinstance(event, Done):
                    reason = event.reason
                    if not json_out:
                        sink.done(reason, event.stats)
                    elif show_stats:
                        output.note(output.summary_line(event.stats, reason))
                    break
                parts.append(event.text)
                if not json_out:
                    sink.round(event)
    finally:
        sink.close()
    return "".join(parts), reason


def turn_json(turn) -> str:
    record = turn.record
    return json.dumps({"version": output.JSON_SCHEMA_VERSION, "type": "turn", "user": record.user,
                       "text": record.text, "reason": record.reason, "reused_tokens": record.reused,
                       "prefilled_tokens": record.prefilled, "stats": record.stats.as_dict()}, ensure_ascii=False)


def terminal(session, model: str, show_stats: bool) -> int:
    """The interactive loop: line editing and history, slash commands, Ctrl-C cancels, Ctrl-D exits."""
    from .chat_commands import handle, read_line, setup_history

    setup_history()
    output.note(f"chatting with {model}; {COMMANDS}")
    while True:
        line = read_line()
        if line is None:
            return 0
        if not line.strip():
            continue
        if line.startswith("/"):
            if handle(session, line) == "exit":
                return 0
            continue
        code = one_turn(session, line, show_stats)
        if code in (1, 141):
            return code


def one_turn(session, line: str, show_stats: bool) -> int:
    """One answer on the terminal; a user mistake is reported and the chat goes on."""
    from ..errors import SpecxError
    from . import report

    try:
        turn = session.ask(line, threading.Event())
        _, reason = answer(turn, False, show_stats)
    except SpecxError as e:
        report(e)
        return 0
    except KeyboardInterrupt:   # a second Ctrl-C, inside torch: the caches are rebuilt next turn
        output.write_stdout("\n")
        output.note("(cancelled; this turn is not kept)")
        return 0
    except output.OutputError as e:
        from .run import Sink, write_failed

        return write_failed(turn.generation, Sink(False, False, False), e)
    if reason == "interrupted":
        output.note("(cancelled; this turn is not kept)")
    return 0
