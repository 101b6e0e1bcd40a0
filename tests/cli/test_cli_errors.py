"""Bad input: one `error:` line, one `hint:` line, the documented exit code, never a traceback."""
from __future__ import annotations

import io
import json
import os
import sys

import pytest

from conftest import FIXTURES
from cli_helpers import Pty, call_app, cli_models, invoke, one_thread, run_specx  # noqa: F401

pytestmark = pytest.mark.usefixtures("one_thread")

WORDS = " ".join(f"w{i % 90 + 2}" for i in range(300))


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory) -> dict[str, str]:
    """Damaged model files and folders."""
    root = tmp_path_factory.mktemp("bad")
    (root / "empty.gguf").write_bytes(b"")
    (root / "text.gguf").write_bytes(b"this is not a model\n" * 50)
    (root / "corrupt.gguf").write_bytes(b"GGUF" + os.urandom(4096))
    (root / "remote-code").mkdir()
    (root / "remote-code" / "config.json").write_text(json.dumps(
        {"model_type": "llama", "auto_map": {"AutoModelForCausalLM": "modeling_x.XForCausalLM"}}))
    return {p.name: str(p) for p in root.iterdir()}


def assert_one_error(result, code: int, fragment: str) -> None:
    out, err = result.stdout, result.stderr
    assert result.exit_code == code, (result.exit_code, err)
    lines = err.splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    hints = [line for line in lines if line.startswith("hint:")]
    assert len(errors) == 1 and len(hints) == 1, err
    assert lines.index(hints[0]) == lines.index(errors[0]) + 1
    assert fragment.lower() in errors[0].lower(), errors[0]
    assert len(hints[0]) > len("hint: ")
    assert "Traceback" not in err and "Traceback" not in out
    assert out == ""


# (id, args after `run`, stdin, exit code, fragment of the error line). "{target}" etc. are filled in.
CASES = [
    ("missing-file", ["{tmp}/nope.gguf", "hi"], None, 3, "not found"),
    ("missing-folder", ["{tmp}/nope/model", "hi"], None, 3, "not found"),
    ("unknown-preset", ["no-such-preset-xyz", "hi"], None, 3, "no model file, folder or preset"),
    ("empty-file", ["{empty.gguf}", "hi"], None, 1, "empty"),
    ("not-gguf", ["{text.gguf}", "hi"], None, 1, "not a GGUF"),
    ("corrupt-gguf", ["{corrupt.gguf}", "hi"], None, 1, "corrupt.gguf"),
    ("unsupported-architecture", ["{unknown_arch}", "w5"], None, 3, "unsupported architecture"),
    ("needs-remote-code", ["{remote-code}", "w5"], None, 3, "custom code"),
    ("drafter-renamed-token", ["{target}", "w5", "-d", "{renamed}"], None, 3, "token 7 differs"),
    ("drafter-other-eos", ["{target}", "w5", "-d", "{other_eos}"], None, 3, "eos"),
    ("empty-prompt", ["{target}", ""], None, 2, "empty"),
    ("blank-prompt", ["{target}", "  \n\t "], None, 2, "empty"),
    ("empty-stdin", ["{target}", "-"], b"", 2, "empty"),
    ("invalid-utf8-stdin", ["{target}", "-"], b"caf\xe9 w5", 2, "UTF-8"),
    ("nul-stdin", ["{target}", "-"], b"w5\x00w6", 2, "NUL"),
    ("prompt-over-target-context", ["{target}", WORDS], None, 2, "target's context"),
    ("prompt-over-drafter-context", ["{target}", WORDS[:150], "-d", "{small_ctx}"], None, 2, "drafter's context"),
    ("max-tokens-zero", ["{target}", "w5", "-n", "0"], None, 2, "max tokens"),
    ("max-tokens-negative", ["{target}", "w5", "-n", "-3"], None, 2, "max tokens"),
    ("temperature-negative", ["{target}", "w5", "-t", "-0.5"], None, 2, "temperature"),
    ("top-p-zero", ["{target}", "w5", "--top-p", "0"], None, 2, "top-p"),
    ("top-p-above-one", ["{target}", "w5", "--top-p", "1.5"], None, 2, "top-p"),
    ("top-p-negative", ["{target}", "w5", "--top-p", "-0.1"], None, 2, "top-p"),
    ("top-k-negative", ["{target}", "w5", "--top-k", "-2"], None, 2, "top-k"),
    ("k-negative", ["{target}", "w5", "-k", "-1"], None, 2, "draft tokens"),
    ("k-absurd", ["{target}", "w5", "-k", "1000000"], None, 2, "draft tokens"),
    ("unknown-dtype", ["{target}", "w5", "--dtype", "float8"], None, 2, "dtype"),
]


@pytest.mark.parametrize("name, args, stdin, code, fragment", CASES, ids=[c[0] for c in CASES])
def test_bad_input(cli_models, bad_files, tmp_path, name, args, stdin, code, fragment):
    names = {**{k: str(v) for k, v in cli_models.items()}, **bad_files, "tmp": str(tmp_path)}
    for key, value in names.items():
        args = [a.replace("{" + key + "}", value) for a in args]
    result = invoke("run", *args, input=stdin)
    assert_one_error(result, code, fragment)


def test_truncated_gguf(tmp_path):
    """A partial download of a real model: exit 1, it says so, before any conversion."""
    source = FIXTURES / "smollm2-135m.gguf"
    if not source.is_file():
        pytest.skip(f"{source} is missing")
    bad = tmp_path / "partial.gguf"
    with open(source, "rb") as f:
        bad.write_bytes(f.read(3 << 20))
    result = invoke("run", str(bad), "hi")
    assert_one_error(result, 1, "partial.gguf")


def test_larger_drafter_is_a_warning(cli_models):
    """A drafter with more parameters than the target: a warning line, and the run goes on."""
    result = invoke("run", str(cli_models["target"]), "w5 w9", "-n", "8", "-d", str(cli_models["big"]))
    assert result.exit_code == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "larger" in warnings[0]
    assert len(result.stdout.split()) == 8
    # … and --no-stats keeps the warning, drops the explanation and the stats.
    quiet = invoke("run", str(cli_models["target"]), "w5 w9", "-n", "8", "-d", str(cli_models["big"]), "--no-stats")
    assert quiet.exit_code == 0 and quiet.stdout == result.stdout
    assert [line for line in quiet.stderr.splitlines() if line.startswith(("warning:", "drafter:"))] == warnings
    assert "tok/s" not in quiet.stderr


def test_usage_errors_exit_2(cli_models):
    for args in (["run"], ["run", str(cli_models["target"]), "w5", "--bogus"], ["run", "m", "w5", "-n", "many"]):
        result = invoke(*args)
        assert result.exit_code == 2, (args, result.stderr)
        assert "Traceback" not in result.stderr + result.stdout


def test_no_prompt_at_a_terminal(cli_models, monkeypatch):
    """Nothing piped and no prompt argument, stdin a terminal: a usage error, not a hang."""
    tty = Pty()
    try:
        monkeypatch.setattr(sys, "stdin", open(os.dup(tty.stream.fileno()), "r"))
        monkeypatch.setattr(sys, "stderr", io.StringIO())
        code = call_app("run", str(cli_models["target"]))
        err = sys.stderr.getvalue()
    finally:
        sys.stdin.close()
        tty.close()
    assert code == 2 and err.startswith("error: no prompt given\nhint: ")


def test_real_process_invalid_utf8_stdin(cli_models):
    """Through `python -m specx` with a real pipe on stdin: strict UTF-8, no traceback."""
    proc = run_specx("run", str(cli_models["target"]), "-", input="w5 \udcff".encode("utf-8", "surrogateescape"),
                     text=False)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert err.splitlines()[-2:][0].startswith("error: stdin is not valid UTF-8")
    assert err.splitlines()[-1].startswith("hint:")
    assert "Traceback" not in err and proc.stdout == b""
