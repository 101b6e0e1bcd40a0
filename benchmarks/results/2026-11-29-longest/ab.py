"""`auto` with its model drafts capped at the longest worth verifying (CostModel.longest_worth), against `auto`
as before (the cap replaced by k_max: session_ab.old_side), `--draft-policy fixed -k 3` and plain decoding, each
on its own loaded default pair kept for the session (benchmarks/session_ab.py's rotation and report; its last
ratio is new / old).

    python benchmarks/results/2026-11-29-longest/ab.py [--repeats 3] [--per-category 2] [--json out.json]
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import session_ab  # noqa: E402
from specx.policy import auto  # noqa: E402

D = str(Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser()
        / "qwen2.5-coder-0.5b.gguf") + "+ngram"

if __name__ == "__main__":
    session_ab.old_side(auto.Auto, "_longest", lambda self: self.k_max)
    sys.argv[1:1] = ["-c", "plain=none", "-c", f"old={D},old=1", "-c", f"fixed3={D},k=3,draft_policy=fixed",
                     "-c", f"new={D}"]
    sys.exit(session_ab.main())
