"""benchmarks/data/heldout.toml, the one saved copy of the held-out prompts, is what heldout.py prints."""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import heldout  # noqa: E402


def test_saved_heldout_prompts_are_current(capsys):
    """The results folders cite benchmarks/data/heldout.toml; a change to the bundled suite must regenerate it."""
    heldout.main()
    saved = (ROOT / "benchmarks" / "data" / "heldout.toml").read_text(encoding="utf-8")
    assert capsys.readouterr().out == saved, "stale: python benchmarks/heldout.py > benchmarks/data/heldout.toml"
