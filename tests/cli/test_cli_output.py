"""`specx run` output: the JSON-lines schema, stdout purity, the live panel, the colour policy."""
from __future__ import annotations

import io
import json
import re
import sys

import pytest
from jsonschema import Draft202012Validator

from cli_helpers import Pty, call_app, cli_models, invoke, one_thread, screen, strip_ansi  # noqa: F401
from specx.cli import live

pytestmark = pytest.mark.usefixtures("one_thread")

NUM = {"type": "number", "minimum": 0}
INT = {"type": "integer", "minimum": 0}
ROUND = {
    "type": "object", "additionalProperties": False,
    "required": ["version", "type", "text", "token_ids", "from_draft", "drafted", "accepted", "draft_s", "verify_s",
                 "notice", "tree"],
    "properties": {
        "version": {"const": 1}, "type": {"const": "round"}, "text": {"type": "string"},
        "token_ids": {"type": "array", "items": INT}, "from_draft": {"type": "array", "items": {"type": "boolean"}},
        "drafted": INT, "accepted": INT, "draft_s": NUM, "verify_s": NUM, "notice": {"type": "string"},
        "tree": INT,
    },
}
STATS = {
    "type": "object", "additionalProperties": False,
    "required": ["prompt_tokens", "reused_prompt_tokens", "new_tokens", "rounds", "drafted", "accepted", "acceptance_rate",
                 "mean_acceptance_length", "per_position_acceptance", "decode_tok_s", "end_to_end_tok_s",
                 "time_to_first_token_s", "prefill_s", "draft_s", "verify_s", "decode_s", "total_s",
                 "peak_bytes", "k", "draft_policy", "mean_drafted", "drafter", "forward_s", "overhead_share",
                 "notices", "placement", "gpu_peak_bytes", "experts", "tree_rounds", "mean_tree_nodes",
                 "mean_tree_path"],
    "properties": {
        "prompt_tokens": INT, "reused_prompt_tokens": INT, "new_tokens": INT, "rounds": INT, "drafted": INT, "accepted": INT,
        "acceptance_rate": {"type": "number", "minimum": 0, "maximum": 1},
        "mean_acceptance_length": NUM,
        "per_position_acceptance": {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1}},
        "decode_tok_s": NUM, "end_to_end_tok_s": NUM, "time_to_first_token_s": {"type": ["number", "null"]},
        "prefill_s": NUM, "draft_s": NUM, "verify_s": NUM, "decode_s": NUM, "total_s": NUM,
        "peak_bytes": INT, "k": INT, "drafter": {"type": "string"},
        "draft_policy": {"enum": ["auto", "fixed", "heuristic", "confidence"]}, "mean_drafted": NUM,
        "forward_s": NUM, "overhead_share": {"type": "number", "minimum": 0, "maximum": 1},
        "notices": {"type": "array", "items": {"type": "string"}},
        "placement": {"type": "string", "minLength": 1}, "gpu_peak_bytes": {"type": ["integer", "null"]},
        "experts": {"oneOf": [{"type": "null"}, {
            "type": "object", "required": ["hits", "misses", "prefetches", "prefetch_used", "bytes_moved",
                                           "peak_bytes", "hit_rate"]}]},
        "tree_rounds": INT, "mean_tree_nodes": NUM, "mean_tree_path": NUM,
    },
}
DONE = {
    "type": "object", "additionalProperties": False,
    "required": ["version", "type", "reason", "stats"],
    "properties": {
        "version": {"const": 1}, "type": {"const": "done"},
        "reason": {"enum": ["eos", "length", "stop", "context", "interrupted"]}, "stats": STATS,
    },
}
SCHEMA = {"$schema": "https://json-schema.org/draft/2020-12/schema", "oneOf": [ROUND, DONE]}
SGR = re.compile(r"\x1b\[[0-9;]*m")
PROMPT = "w5 w9 w12 w5 w9"


def check_json_lines(stdout: str) -> list[dict]:
    """Every line is one schema-valid object; rounds, then exactly one `done`, consistent with them."""
    Draft202012Validator.check_schema(SCHEMA)
    validator = Draft202012Validator(SCHEMA)
    assert stdout.endswith("\n")
    events = [json.loads(line) for line in stdout.splitlines()]
    for event in events:
        validator.validate(event)
    *rounds, done = events
    assert done["type"] == "done" and all(e["type"] == "round" for e in rounds)
    for e in rounds:
        assert e["accepted"] <= e["drafted"] and len(e["from_draft"]) == len(e["token_ids"])
    stats = done["stats"]
    assert sum(len(e["token_ids"]) for e in rounds) == stats["new_tokens"]
    assert sum(e["drafted"] for e in rounds) == stats["drafted"]
    assert sum(e["accepted"] for e in rounds) == stats["accepted"]
    return events


def plain(models, n: int, *extra: str) -> str:
    """The reference: the same run in-process, stdout not a terminal."""
    result = invoke("run", str(models["target"]), PROMPT, "-n", str(n), *extra)
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("drafter", ["self", "ngram", "none"])
def test_json_lines_follow_the_schema(cli_models, drafter):
    """--json: only schema-valid objects on stdout; the texts add up to the plain output."""
    d = str(cli_models["target"]) if drafter == "self" else drafter
    # The target as its own drafter, bit for bit (no int8dyn copy) and always drafting (`auto` may sit out a
    # drafter as slow as its target): every drafted token is accepted
    policy = ["--draft-quant", "none", "--draft-policy", "fixed"] if drafter == "self" else []
    result = invoke("run", str(cli_models["target"]), PROMPT, "-n", "40", "-d", d, *policy, "--json")
    assert result.exit_code == 0, result.stderr
    events = check_json_lines(result.stdout)
    assert events[-1]["reason"] == "length" and events[-1]["stats"]["new_tokens"] == 40
    assert "".join(e.get("text", "") for e in events) + "\n" == plain(cli_models, 40, "-d", d)
    if drafter == "self":
        stats = events[-1]["stats"]
        assert stats["drafted"] > 0 and stats["acceptance_rate"] == 1.0
    assert "tok/s" in result.stderr   # the stats still go to stderr


def test_plain_stdout_is_only_the_text(cli_models):
    result = invoke("run", str(cli_models["target"]), PROMPT, "-n", "12", "-d", "ngram")
    assert result.exit_code == 0, result.stderr
    assert re.fullmatch(r"w\d+( w\d+){11}\n", result.stdout)
    assert result.stderr.rstrip().splitlines()[-1].endswith("stop: length")
    assert "drafter: ngram" in result.stderr


def test_no_stats_means_no_stats(cli_models):
    result = invoke("run", str(cli_models["target"]), PROMPT, "-n", "12", "--no-stats")
    assert result.exit_code == 0 and result.stdout.strip()
    assert "tok/s" not in result.stderr and "drafter:" not in result.stderr


class FakeStream:
    def __init__(self, tty: bool):
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.mark.parametrize("env, tty, color, panel", [
    ({}, True, True, True),
    ({}, False, False, False),
    ({"NO_COLOR": "1"}, True, False, True),
    ({"NO_COLOR": ""}, True, True, True),            # empty means unset
    ({"TERM": "dumb"}, True, False, False),
    ({"FORCE_COLOR": "1"}, False, True, False),      # colour forced, never animation
    ({"FORCE_COLOR": "1", "TERM": "dumb"}, True, True, False),
    ({"FORCE_COLOR": "1", "NO_COLOR": "1"}, True, False, True),
])
def test_colour_policy(env, tty, color, panel):
    stream = FakeStream(tty)
    assert live.wants_color(stream, env) is color
    assert live.wants_live(stream, env) is panel


def test_color_drafted_needs_a_colour_stream(cli_models, monkeypatch):
    """--color-drafted: ANSI only when stdout takes colour (FORCE_COLOR here); NO_COLOR and --json win."""
    for var in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(var, raising=False)
    args = ["run", str(cli_models["target"]), PROMPT, "-n", "20", "-d", str(cli_models["target"]), "--color-drafted",
            "--draft-policy", "fixed"]   # auto's choice to draft depends on timing: drafts must happen here
    untinted = invoke(*args).stdout
    assert "\x1b" not in untinted                      # CliRunner's stdout is not a terminal
    tinted = invoke(*args, env={"FORCE_COLOR": "1"}).stdout
    assert live.SGR_DRAFT in tinted and strip_ansi(tinted) == untinted
    assert "\x1b" not in invoke(*args, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout
    as_json = invoke(*args, "--json", env={"FORCE_COLOR": "1"}).stdout
    assert "\x1b" not in as_json
    check_json_lines(as_json)


def test_color_drafted_tints_exactly_the_drafted_tokens(cli_models):
    """The tinted words are the tokens that JSON reports as from_draft, and only those."""
    target = str(cli_models["target"])
    args = ["run", target, PROMPT, "-n", "30", "-d", "ngram", "-k", "3", "--draft-policy", "fixed"]
    events = check_json_lines(invoke(*args, "--json").stdout)
    expected = [(f"w{t}", d) for e in events[:-1] for t, d in zip(e["token_ids"], e["from_draft"])]
    assert {d for _, d in expected} == {True, False}   # both kinds occur
    out = invoke(*args, "--color-drafted", env={"FORCE_COLOR": "1"}).stdout
    got, drafted = [], False
    for part in re.split(r"(\x1b\[\d+m)", out):
        if part in (live.SGR_DRAFT, live.SGR_RESET):
            drafted = part == live.SGR_DRAFT
        else:
            got += [(word, drafted) for word in part.split()]
    assert got == expected


# --- a real terminal on stderr and/or stdout, in-process ----------------------------------------

@pytest.fixture
def term(monkeypatch, tmp_path):
    """A colour terminal environment; stdin empty, stdout a file unless a test points it elsewhere."""
    for var in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("LINES", "30")
    files = []

    class Term:
        def run(self, *args, stdout_tty=False, stderr_tty=True):
            """Run with the streams set here (pytest's capture resets them between phases)."""
            tty = Pty()
            files.extend(open(tmp_path / name, "w", encoding="utf-8") for name in ("out", "err"))
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
            monkeypatch.setattr(sys, "stdout", tty.stream if stdout_tty else files[-2])
            monkeypatch.setattr(sys, "stderr", tty.stream if stderr_tty else files[-1])
            code = call_app(*args)
            files[-2].flush()
            return code, tty.close(), (tmp_path / "out").read_text(encoding="utf-8")

    yield Term()
    for f in files:
        f.close()


def summary(rows: list[str], tokens: int) -> bool:
    """The screen ends with the one-line summary (wrapped at the terminal's width) and no panel above it."""
    start = max(i for i, row in enumerate(rows) if row.startswith(f"{tokens} tokens ·"))
    line = "".join("".join(rows[start:]).split())   # a wrap at a space loses that space: compare without
    return line.endswith("stop:length") and not any("tok/s" in row for row in rows[:start])


@pytest.mark.parametrize("mode", ["text", "json"])
def test_stdout_stays_pure_with_stderr_on_a_terminal(cli_models, term, mode):
    """stderr on a pty gets the live panel; stdout (a file) gets exactly the text, or only JSON lines."""
    target = str(cli_models["target"])
    args = ["run", target, PROMPT, "-n", "40", "-d", target] + (["--json"] if mode == "json" else [])
    code, tty, stdout = term.run(*args)
    assert code == 0
    if mode == "json":
        check_json_lines(stdout)
    else:
        assert stdout == plain(cli_models, 40, "-d", target)
    assert "\x1b[2K" in tty and SGR.search(tty)               # a redrawn, coloured panel …
    assert "mean length" in strip_ansi(tty)
    assert summary(screen(tty, 100), 40)                        # … gone at the end, the summary stays


def test_no_color_keeps_the_panel_without_colour(cli_models, term, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    code, tty, _ = term.run("run", str(cli_models["target"]), PROMPT, "-n", "20")
    assert code == 0 and "\x1b[2K" in tty and not SGR.search(tty)


def test_dumb_terminal_gets_plain_lines(cli_models, term, monkeypatch):
    monkeypatch.setenv("TERM", "dumb")
    # the n-gram drafter: no draft-policy notice (a self-draft's may come mid-text) splits the words
    code, tty, stdout = term.run("run", str(cli_models["target"]), PROMPT, "-n", "20", "--color-drafted", "-d", "ngram",
                                 stdout_tty=True)
    assert code == 0 and "\x1b" not in tty
    assert "stop: length" in tty and re.search(r"(w\d+ ){19}w\d+", tty)


@pytest.mark.parametrize("env, tinted", [({}, True), ({"NO_COLOR": "1"}, False), ({"TERM": "dumb"}, False)])
def test_color_drafted_on_a_terminal_stdout(cli_models, term, monkeypatch, env, tinted):
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    target = str(cli_models["target"])
    code, tty, _ = term.run("run", target, PROMPT, "-n", "20", "-d", target, "--color-drafted", "--draft-policy",
                            "fixed", stdout_tty=True, stderr_tty=False)   # auto's drafting depends on timing
    assert code == 0
    assert (live.SGR_DRAFT in tty) is tinted
    assert strip_ansi(tty).replace("\r\n", "\n") == plain(cli_models, 20, "-d", target)


def test_shared_terminal_text_and_panel_do_not_overwrite(cli_models, term):
    """stdout and stderr on one terminal: the text goes above the panel; the final screen is text + summary."""
    target = str(cli_models["target"])
    code, tty, _ = term.run("run", target, PROMPT, "-n", "120", "-d", target, "--color-drafted", "--draft-policy",
                            "fixed", stdout_tty=True)   # auto's drafting depends on timing: drafts must happen
    assert code == 0 and "\x1b[2K" in tty and "\x1b[36m" in tty     # Rich's cyan for drafted text
    rows = screen(tty, 100)
    assert summary(rows, 120)
    text = rows[:next(i for i, row in enumerate(rows) if row.startswith("120 tokens ·"))]
    # The text starts at the first row of the tiny model's words ("w12 w7 ..."), after the loading notes, which
    # wrap where the CPU's kernels sentence happens to (a note's row may start with "weight").
    text = text[next(i for i, row in enumerate(text) if re.match(r"w\d+( |$)", row)):]
    assert " ".join(text).split() == plain(cli_models, 120, "-d", target).split()


def test_a_policy_note_starts_its_own_line_where_it_shares_a_file_with_unfinished_text(tmp_path, monkeypatch):
    """stdout and stderr into one file (`2>&1`): a note that arrives mid-line goes on a line of its own; the text
    is unchanged around it. Into different files, stdout holds the text alone."""
    from specx.cli.run import Sink
    from specx.engine.types import Round

    rounds = [Round((5,), "Hello there", 0, 0, 0.0, 0.0, (False,), ("Hello there",)),
              Round((6,), " friend", 0, 0, 0.0, 0.0, (False,), (" friend",), "speculation off: it does not pay")]
    with open(tmp_path / "both", "w+") as both:
        monkeypatch.setattr(sys, "stdout", both)
        monkeypatch.setattr(sys, "stderr", both)
        sink = Sink(False, False, False)
        for r in rounds:
            sink.round(r)
        both.seek(0)
        assert both.read() == "Hello there\nnote: speculation off: it does not pay\n friend"
    with open(tmp_path / "out", "w+") as out, open(tmp_path / "err", "w+") as err:
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        sink = Sink(False, False, False)
        for r in rounds:
            sink.round(r)
        out.seek(0), err.seek(0)
        assert out.read() == "Hello there friend" and err.read() == "note: speculation off: it does not pay\n"
