"""The command reference (docs/commands.md) is what `--help` prints, and every `--help` shows examples."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import readme_help  # noqa: E402


def test_command_reference_matches_help():
    """docs/commands.md holds every command's current `--help`."""
    text = readme_help.DOC.read_text(encoding="utf-8")
    assert readme_help.render(text) == text, "stale: run `python scripts/readme_help.py`"


@pytest.mark.parametrize("path", readme_help.commands(), ids=lambda p: " ".join(["specx", *p]))
def test_every_help_has_a_description_and_examples(path):
    """Every `--help` states what the command does and shows an example."""
    text = readme_help.help_text(path)
    description = text.split("\n\n")[1].strip()
    assert description and not description.startswith(("Options:", "Arguments:"))
    examples = text.split("Example")[1] if "Example" in text else ""
    assert any("specx " in line for line in examples.splitlines()[1:4]), f"`{' '.join(path)} --help` shows no example"
