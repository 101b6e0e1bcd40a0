"""The model drafter checking the context's guesses beside its next token (ModelDrafter._guess), against the
same pair without them, and plain decoding, in one process (benchmarks/session_ab.py's sessions).

    python benchmarks/results/2026-11-29-guesses/ab.py [--repeats 3] [--per-category 2] [--json ab.json]

Setups: plain (`none`), old (the default pair with no guesses: `old=1` runs ModelDrafter._guess as
returning none), new (the default pair as it is). GUESS=N in the environment sets ModelDrafter.GUESS.
"""
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
import session_ab  # noqa: E402
from specx.drafters.model import ModelDrafter  # noqa: E402

if os.environ.get("GUESS"):
    ModelDrafter.GUESS = int(os.environ["GUESS"])
session_ab.old_side(ModelDrafter, "_guess", lambda self, *args: [])
D = str(session_ab.FIXTURES / "qwen2.5-coder-0.5b.gguf")
sys.argv[1:1] = ["-c", "plain=none", "-c", f"old={D}+ngram,old=1", "-c", f"new={D}+ngram"]
sys.exit(session_ab.main())
