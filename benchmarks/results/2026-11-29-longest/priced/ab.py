"""The model drafter pricing its next token before making it (ModelDrafter._ends: the chance that all would be
accepted, the next token's taken as the last one's), against the rule before (the chance of the tokens made so
far against the next token's floor), `--draft-policy fixed -k 3` and plain decoding, each on its own loaded
default pair kept for the session (benchmarks/session_ab.py's rotation and report; its last ratio is new / old).

    python benchmarks/results/2026-11-29-priced/ab.py [--repeats 3] [--per-category 2] [--json out.json]
"""
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

import session_ab  # noqa: E402
import specx  # noqa: E402

D = str(Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser()
        / "qwen2.5-coder-0.5b.gguf") + "+ngram"
load = specx.load


def old_ends(stops, m, survival, chance):
    """The rule before: the chance that the m tokens made are all accepted, against the next one's floor."""
    floor = stops.floor(m)
    return floor is not None and survival < floor


def loading(target, drafter, **options):
    old = options.pop("old", 0)
    pair = load(target, drafter, **options)
    if old:
        pair.drafter.model._ends = old_ends
    return pair


if __name__ == "__main__":
    specx.load = loading
    sys.argv[1:1] = ["-c", "plain=none", "-c", f"old={D},old=1", "-c", f"fixed3={D},k=3,draft_policy=fixed",
                     "-c", f"new={D}"]
    sys.exit(session_ab.main())
