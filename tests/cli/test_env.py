"""`specx env`: the facts a bug report needs, never the token's value."""
from __future__ import annotations

import json

from typer.testing import CliRunner

from specx.cli import app
from specx.state.machine import cpu_flags


def test_env_json_has_versions_devices_dirs_and_token_presence_only(monkeypatch, tmp_path):
    """JSON lists versions, the CPU, the directories under SPECX_HOME, and says a token is set."""
    monkeypatch.setenv("HF_TOKEN", "hf_test_SECRET_value")
    result = CliRunner().invoke(app, ["env", "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["packages"]["torch"] and info["packages"]["specx"]
    assert info["devices"][0]["device"] == "cpu"
    assert info["dirs"]["config"].startswith(str(tmp_path))
    assert info["hf_token"] == "set (HF_TOKEN)"
    assert "SECRET" not in result.output


def test_env_text_output_never_prints_the_token(monkeypatch):
    """The human view has one line per fact and no secret."""
    monkeypatch.setenv("HF_TOKEN", "hf_test_SECRET_value")
    result = CliRunner().invoke(app, ["env"])
    assert result.exit_code == 0
    assert "hf token        set (HF_TOKEN)" in result.stdout and "SECRET" not in result.stdout


def test_cpu_flags_are_read_from_cpuinfo():
    """AVX2 / AVX-512 / AMX come from the flags line."""
    flags = cpu_flags("processor: 0\nflags\t\t: fpu avx2 fma amx_tile\n")
    assert flags["avx2"] and flags["amx_tile"] and not flags["avx512f"]
