"""`auto`'s survival floors priced at drafting's pace (CostModel.pace: a further drafted token must earn its
time at the rate drafting makes, not at plain decoding's), against the floors before (pace 1 in this process),
`--draft-policy fixed -k 3` and plain decoding, each on its own loaded default pair kept for the session
(benchmarks/session_ab.py's rotation and report; its last ratio is new / old).

    python benchmarks/results/2026-11-29-pace/ab.py [--repeats 3] [--per-category 2] [--json out.json]
"""
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

import session_ab  # noqa: E402
import trees  # noqa: E402
import specx  # noqa: E402
from specx.policy import costmodel  # noqa: E402

D = str(Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser()
        / "qwen2.5-coder-0.5b.gguf") + "+ngram"
paced, answer, load = costmodel.CostModel.pace, trees.run_one, specx.load
OLD = {"on": False}   # set while an answer of the `old` pair runs


def pace(self, k_max):
    return 1.0 if OLD["on"] else paced(self, k_max)


def run(pair, prompt, n, tree, policy):
    OLD["on"] = getattr(pair, "old", False)
    try:
        return answer(pair, prompt, n, tree, policy)
    finally:
        OLD["on"] = False


def loading(target, drafter, **options):
    old = options.pop("old", 0)
    pair = load(target, drafter, **options)
    pair.old = bool(old)
    return pair


if __name__ == "__main__":
    costmodel.CostModel.pace, trees.run_one, specx.load = pace, run, loading
    sys.argv[1:1] = ["-c", "plain=none", "-c", f"old={D},old=1", "-c", f"fixed3={D},k=3,draft_policy=fixed",
                     "-c", f"new={D}"]
    sys.exit(session_ab.main())
