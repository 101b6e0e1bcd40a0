"""Shell completions stay fresh, and --help never imports torch or transformers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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


def _complete(words: str, cword: int, **env: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "_SPECX_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword), **env}
    code = ("import sys, specx.cli\nsys.argv[0] = 'specx'\ntry:\n    specx.cli.main()\nfinally:\n"
            "    print(sorted(m for m in ('torch', 'transformers') if m in sys.modules), file=sys.stderr)")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize("words, cword", [("specx run smo", 2), ("specx chat ", 2), ("specx run x --drafter smo", 4)])
def test_model_arguments_complete_presets_without_torch(words, cword):
    """Model arguments offer the preset names, and a completion request never imports torch."""
    out = _complete(words, cword)
    assert "smollm2" in out.stdout.split()
    assert out.stderr.strip().endswith("[]")


def test_model_arguments_complete_models_in_the_cache_index(tmp_path):
    """A GGUF that specx has hashed before (the model cache's index) is offered from anywhere."""
    model = tmp_path / "somewhere" / "mine.gguf"
    model.parent.mkdir()
    model.write_bytes(b"GGUF")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "sha256-index.json").write_text(json.dumps({str(model): {"sha256": "0" * 64, "stamp": [4, 0, 0]},
                                                         str(tmp_path / "gone.gguf"): {}}))
    out = _complete("specx run ", 2, SPECX_MODEL_CACHE=str(cache))
    assert str(model) in out.stdout.splitlines() and "gone.gguf" not in out.stdout


def test_drafter_completes_the_special_names():
    assert {"none", "ngram"} <= set(_complete("specx run smollm2 --drafter n", 4).stdout.split())


@pytest.mark.parametrize("shell, where", [("bash", ".bash_completions/specx.sh"), ("zsh", ".zfunc/_specx"),
                                          ("fish", ".config/fish/completions/specx.fish")])
def test_install_completion_writes_the_script_for_specx(tmp_path, shell, where):
    """`specx --install-completion SHELL` installs a script that calls `specx` (also under python -m)."""
    env = {**os.environ, "HOME": str(tmp_path), "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    out = subprocess.run([sys.executable, "-m", "specx", "--install-completion", shell], capture_output=True,
                         text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    script = (tmp_path / where).read_text()
    assert "_SPECX_COMPLETE" in script and "python -m" not in script


def test_version_and_short_help_answer_on_every_command():
    """`specx --version`/`-V` print the version; `-h` is help on the app and on every command."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import readme_help
    from typer.testing import CliRunner

    from specx import __version__
    from specx.cli import app

    runner = CliRunner()
    for flag in ("--version", "-V"):
        result = runner.invoke(app, [flag])
        assert result.exit_code == 0 and result.output.strip() == f"specx {__version__}"
    for path in readme_help.commands():
        result = runner.invoke(app, [*path, "-h"])
        assert result.exit_code == 0 and result.output.startswith("Usage: "), path
