"""`specx chat`: piped stdout is exactly the answers; the terminal mode's commands work."""
from __future__ import annotations

import json
import os
import select
import subprocess
import time

import pytest

from cli_helpers import cli_models, run_specx, specx_cmd, specx_env  # noqa: F401  (fixture)


def test_piped_stdout_is_exactly_the_answers_each_followed_by_an_empty_line(cli_models):
    result = run_specx("chat", str(cli_models["target"]), "-n", "4", input="w5 w6\n\nw7 w8 w9\n")
    assert result.returncode == 0, result.stderr
    blocks = result.stdout.split("\n\n")
    assert blocks[-1] == "" and len(blocks) == 3        # two answers, each + one empty line, nothing else
    assert all(len(b.split()) == 4 and all(w.startswith("w") for w in b.split()) for b in blocks[:2])


def test_piped_json_is_one_object_per_turn_and_turn_two_reuses_the_cache(cli_models):
    result = run_specx("chat", str(cli_models["target"]), "-n", "4", "--json", input="w5 w6\nw7 w8 w9\n")
    assert result.returncode == 0, result.stderr
    turns = [json.loads(line) for line in result.stdout.splitlines()]
    assert [t["type"] for t in turns] == ["turn", "turn"] and turns[1]["user"] == "w7 w8 w9"
    assert turns[0]["reused_tokens"] == 0 and turns[1]["reused_tokens"] >= turns[0]["stats"]["prompt_tokens"]
    assert turns[1]["prefilled_tokens"] < turns[1]["stats"]["prompt_tokens"] - turns[0]["stats"]["prompt_tokens"]


def test_chat_without_a_model_says_how_to_set_one():
    result = run_specx("chat", input="hi\n")
    assert result.returncode == 2 and "specx config set model" in result.stderr


def test_chat_takes_the_configured_model(cli_models, tmp_path):
    env = specx_env(SPECX_HOME=str(tmp_path), SPECX_MODEL=str(cli_models["target"]), SPECX_MAX_TOKENS="3")
    result = run_specx("chat", "--json", input="w5\n", env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["stats"]["new_tokens"] == 3


class Terminal:
    """specx chat on a pseudo-terminal (stdin, stdout, stderr all the same tty)."""

    def __init__(self, *args: str, env: dict):
        self.master, slave = os.openpty()
        self.proc = subprocess.Popen(specx_cmd(*args), stdin=slave, stdout=slave, stderr=slave, env=env,
                                     start_new_session=True)
        os.close(slave)
        self.seen = b""

    def expect(self, needle: str, timeout: float = 60) -> str:
        end = time.monotonic() + timeout
        while needle.encode() not in self.seen:
            left = end - time.monotonic()
            assert left > 0, f"timed out waiting for {needle!r}; got {self.seen[-800:]!r}"
            if select.select([self.master], [], [], left)[0]:
                try:
                    self.seen += os.read(self.master, 65536)
                except OSError:
                    break
        cut = self.seen.index(needle.encode()) + len(needle)
        text, self.seen = self.seen[:cut].decode("utf-8", "replace"), self.seen[cut:]
        return text

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())


def test_terminal_commands_stats_save_system_reset_and_ctrl_d(cli_models, tmp_path):
    env = specx_env(SPECX_HOME=str(tmp_path))
    term = Terminal("chat", str(cli_models["target"]), "-n", "4", env=env)
    try:
        term.expect(">>> ")
        term.send("w5 w6\r")
        term.expect("stop: length")
        term.expect(">>> ")
        term.send("w7 w8\r")
        term.expect(">>> ")
        term.send("/stats\r")
        assert "reused" in term.expect(">>> ")
        term.send("/system w9\r")
        term.expect(">>> ")
        term.send(f"/save {tmp_path / 'chat.json'}\r")
        term.expect("saved 4 messages")
        term.expect(">>> ")
        term.send("/rest\r")
        assert "did you mean /reset" in term.expect(">>> ")
        term.send("\x04")            # Ctrl-D
        assert term.proc.wait(timeout=30) == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
        os.close(term.master)
    saved = json.loads((tmp_path / "chat.json").read_text())
    assert [m["role"] for m in saved["messages"]] == ["user", "assistant"] * 2 and saved["system"] == "w9"
    assert (tmp_path / "state" / "chat_history").is_file()


def test_ctrl_c_cancels_the_answer_and_the_chat_goes_on(cli_models, tmp_path):
    import signal

    term = Terminal("chat", str(cli_models["long"]), "-n", "100000", "--drafter", "none",
                    env=specx_env(SPECX_HOME=str(tmp_path)))
    try:
        term.expect(">>> ")
        term.send("w5 w6\r")
        term.expect("w6\r\n")                 # the echo of the line
        term.expect(" w")                     # the answer is streaming
        term.proc.send_signal(signal.SIGINT)
        term.expect("(cancelled; this turn is not kept)")
        term.expect(">>> ")
        term.send("/stats\r")
        assert "no answers yet" in term.expect(">>> ")
        term.send("\x04")
        assert term.proc.wait(timeout=30) == 0
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
        os.close(term.master)


@pytest.mark.slow
def test_real_smollm2_chat_prefills_only_the_new_turn(tmp_path):
    """The real model and chat template: the second turn reuses the whole first exchange."""
    from conftest import fixture_model

    model = str(fixture_model("smollm2-135m"))
    result = run_specx("chat", model, "-n", "24", "--json", "--no-stats", input="Name a colour.\nAnd another?\n",
                       env=specx_env(SPECX_HOME=str(tmp_path)), timeout=600)
    assert result.returncode == 0, result.stderr
    first, second = (json.loads(line) for line in result.stdout.splitlines())
    assert second["reused_tokens"] >= first["stats"]["prompt_tokens"]
    new = second["stats"]["prompt_tokens"] - second["reused_tokens"]
    assert second["prefilled_tokens"] <= new
