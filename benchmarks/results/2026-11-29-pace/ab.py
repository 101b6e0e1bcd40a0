"""`auto`'s survival floors priced at drafting's pace (CostModel.pace: a further drafted token must earn its
time at the rate drafting makes, not at plain decoding's), against the floors before (pace 1:
session_ab.old_side), `--draft-policy fixed -k 3` and plain decoding, each on its own loaded default pair kept
for the session (benchmarks/session_ab.py's rotation and report; its last ratio is new / old). `--only-autos`:
the two `auto`s alone (chat.out: `--only-autos --prompts chatsumm.toml --per-category 4`).

    python benchmarks/results/2026-11-29-pace/ab.py [--only-autos] [--repeats 3] [--per-category 2] [--json out.json]
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import session_ab  # noqa: E402
from specx.policy import costmodel  # noqa: E402

D = str(Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser()
        / "qwen2.5-coder-0.5b.gguf") + "+ngram"

if __name__ == "__main__":
    session_ab.old_side(costmodel.CostModel, "pace", lambda self, k_max: 1.0)
    setups = ["-c", f"old={D},old=1", "-c", f"new={D}"]
    if "--only-autos" in sys.argv:
        sys.argv.remove("--only-autos")
    else:
        setups = ["-c", "plain=none", setups[0], setups[1], "-c", f"fixed3={D},k=3,draft_policy=fixed", *setups[2:]]
    sys.argv[1:1] = setups
    sys.exit(session_ab.main())
