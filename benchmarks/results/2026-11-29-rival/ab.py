"""A copy that must beat the model's draft (Auto.trim: k = 0 of a copy stands for the model drafter's best
expected rate where it drafts this round, not plain decoding's) against copies judged against plain decoding
(CostModel.model_rate None: session_ab.old_side), `--draft-policy fixed -k 3` and plain decoding, each on its
own loaded default pair kept for the session (benchmarks/session_ab.py's rotation and report; its last ratio is
new / old).

    git apply benchmarks/results/2026-11-29-rival/rival.diff   # the rule tried (not landed)
    python benchmarks/results/2026-11-29-rival/ab.py [--repeats 3] [--per-category 2] [--json out.json]
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
    session_ab.old_side(costmodel.CostModel, "model_rate", lambda self, k_max: None)
    sys.argv[1:1] = ["-c", "plain=none", "-c", f"old={D},old=1", "-c", f"fixed3={D},k=3,draft_policy=fixed",
                     "-c", f"new={D}"]
    sys.exit(session_ab.main())
