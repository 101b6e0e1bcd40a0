"""With a prompt argument, `specx run` reads stdin only when `-` asks for it (issue 33, item 7)."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from cli_helpers import cli_models, invoke, one_thread, specx_cmd, specx_env  # noqa: F401
from specx.cli.prompt import read_prompt
from specx.errors import UsageError


class Untouchable(io.TextIOBase):
    """A stdin that is not a terminal and must not be read."""

    buffer = property(lambda self: pytest.fail("stdin was read"))

    def isatty(self) -> bool:
        return False


class Piped(io.TextIOWrapper):
    def __init__(self, data: bytes):
        super().__init__(io.BytesIO(data), encoding="utf-8")

    def isatty(self) -> bool:
        return False


def test_a_prompt_argument_leaves_stdin_alone(monkeypatch):
    """`specx run M "prompt"` with stdin a pipe: the pipe is not read (was: read to its end, so `sleep 20 |`
    hung and a `while read` loop lost its remaining lines into the prompt)."""
    monkeypatch.setattr(sys, "stdin", Untouchable())
    assert read_prompt("hi there") == read_prompt(["hi there"]) == "hi there"


@pytest.mark.parametrize("args, piped, prompt", [
    (["-"], b"diff text", "diff text"),
    (["-", "Write a message"], b"diff text\n", "diff text\n\nWrite a message"),
    ([], b"piped alone", "piped alone"),
])
def test_dash_reads_stdin_first_then_the_argument(monkeypatch, args, piped, prompt):
    """`-` reads stdin; `- TEXT` puts the piped text first; no argument at all reads a piped stdin."""
    monkeypatch.setattr(sys, "stdin", Piped(piped))
    assert read_prompt(args) == prompt


@pytest.mark.parametrize("args", [["two", "words"], ["text", "-"], ["-", "a", "b"]])
def test_more_than_one_prompt_argument_is_a_usage_error(monkeypatch, args):
    monkeypatch.setattr(sys, "stdin", Untouchable())
    with pytest.raises(UsageError, match="quote"):
        read_prompt(args)


@pytest.mark.usefixtures("one_thread")
def test_git_diff_pipe_with_dash_and_a_prompt(cli_models):
    """`git diff | specx run M - "…"`, as the README shows it, runs with both (was: "unexpected extra
    argument")."""
    result = invoke("run", str(cli_models["target"]), "-", "w7", "--raw", "-n", "2", "--json", input="w5 w6\n")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.splitlines()[-1])["stats"]["prompt_tokens"] == 3


@pytest.mark.usefixtures("one_thread")
def test_dash_and_a_prompt_with_the_configured_model(cli_models):
    """With a default model, `git diff | specx run - "…"` means that model, the pipe and the prompt."""
    from specx.state import settings

    settings.set_value("model", str(cli_models["target"]))
    result = invoke("run", "-", "w7", "--raw", "-n", "2", "--json", input="w5 w6\n")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout.splitlines()[-1])["stats"]["prompt_tokens"] == 3


def test_a_pipe_that_never_ends_does_not_hang_a_run_with_a_prompt(cli_models, tmp_path):
    """`sleep 20 | specx run M "w5 w6"` (here: a pipe left open, holding a loop's next lines): the run
    finishes and the lines are still in the pipe for the loop."""
    read_end, write_end = os.pipe()
    os.write(write_end, b"next line of the loop\n")
    try:
        proc = subprocess.run(specx_cmd("run", str(cli_models["target"]), "w5 w6", "--raw", "-n", "2"),
                              stdin=read_end, capture_output=True, text=True, timeout=60,
                              env=specx_env(SPECX_HOME=str(tmp_path / "home")))
        assert proc.returncode == 0, proc.stderr
        assert len(proc.stdout.split()) == 2
        os.set_blocking(read_end, False)
        assert os.read(read_end, 100) == b"next line of the loop\n"
    finally:
        os.close(write_end)
        os.close(read_end)
