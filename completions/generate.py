#!/usr/bin/env python3
"""Regenerate the shell completion scripts from the app: `python completions/generate.py`."""
from pathlib import Path

from typer.completion import get_completion_script

SHELLS = {"bash": "specx.bash", "zsh": "specx.zsh", "fish": "specx.fish"}


def script(shell: str) -> str:
    return get_completion_script(prog_name="specx", complete_var="_SPECX_COMPLETE", shell=shell).rstrip() + "\n"


if __name__ == "__main__":
    here = Path(__file__).parent
    for shell, name in SHELLS.items():
        (here / name).write_text(script(shell))
        print(f"wrote {here / name}")
