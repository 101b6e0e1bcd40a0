"""Shell completions stay fresh, and --help never imports torch or transformers."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "completions"))


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts_are_current(shell):
    """completions/specx.<shell> equals what the app generates now."""
    from generate import SHELLS, script

    assert (ROOT / "completions" / SHELLS[shell]).read_text() == script(shell), \
        "stale: run `python completions/generate.py`"


def test_help_and_completion_do_not_import_torch():
    """`specx --help`, `specx run --help` and a completion request stay light (no torch, no transformers)."""
    code = ("import sys\nfrom typer.testing import CliRunner\nfrom specx.cli import app\n"
            "r = CliRunner()\nassert r.invoke(app, ['--help']).exit_code == 0\n"
            "assert r.invoke(app, ['run', '--help']).exit_code == 0\n"
            "heavy = [m for m in ('torch', 'transformers') if m in sys.modules]\nprint(heavy)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    env = {**os.environ, "_SPECX_COMPLETE": "complete_bash", "COMP_WORDS": "specx ru", "COMP_CWORD": "1"}
    code = "import sys, specx.cli\nsys.argv[0] = 'specx'\ntry:\n    specx.cli.main()\nfinally:\n    print('torch' in sys.modules, file=sys.stderr)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert "run" in out.stdout
    assert out.stderr.strip().endswith("False")
