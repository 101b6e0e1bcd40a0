#!/usr/bin/env python3
"""Issue 36's tree bars: token trees against chains at the same policy, the Qwen pair, paired, per category.

    python benchmarks/trees.py [--repeats 5] [--tokens 128] [--per-category N] [--trees 8,-1] [--policy auto]
                               [--json out.json]

One loaded pair (target qwen2.5-coder-1.5b.gguf, drafter qwen2.5-coder-0.5b.gguf with copies, as `specx run`
sets them up), greedy, the bench prompts with the target's chat template. Each repeat runs every prompt under
`--tree 0` (chains) and each tree setting, in a rotated order so drift cancels. Per category: accepted tokens
per round, verify rows per round (drafted + 1), draft and verify seconds per round; overall: the paired speed
ratio tree/chain (decode tok/s, median with a 90% bootstrap interval) and the ratio of mean accepted tokens per
verification. Every tree output is compared with the chain's (lossless: must be equal). The run's state
(measured costs, tuned settings) starts empty unless SPECX_HOME or --state says otherwise: `auto` steered by
another run's measured costs confounded earlier comparisons (benchmarks/results/2026-11-26-trees-cache).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

FIXTURES = Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser()
HERE = Path(__file__).resolve().parent


def run_one(pair, prompt: str, n: int, tree: int, policy: str, **run) -> dict:
    import specx
    from specx.engine.types import Done, Round

    tokens, rounds = [], []
    for event in specx.stream(pair, prompt, max_tokens=n, draft_policy=policy, tree=tree, **run):
        if isinstance(event, Round):
            tokens.extend(event.token_ids)
            if event.token_ids:
                rounds.append((event.drafted, event.accepted, event.draft_s, event.verify_s))
        elif isinstance(event, Done):
            stats = event.stats
    return {"tokens": tokens, "decode_s": stats.decode_s, "rounds": rounds}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=str(FIXTURES / "qwen2.5-coder-1.5b.gguf"))
    ap.add_argument("--drafter", default=str(FIXTURES / "qwen2.5-coder-0.5b.gguf"))
    ap.add_argument("--prompts", default=str(HERE.parent / "specx" / "bench" / "prompts.toml"))
    ap.add_argument("--per-category", type=int, default=0, help="the first N prompts of each category (0: all)")
    ap.add_argument("--trees", default="8,-1", help="tree settings to compare with chains (--tree values)")
    ap.add_argument("--policy", default="auto")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--json", default=None)
    ap.add_argument("--state", default=None,
                    help="SPECX_HOME for the run (default: a fresh temporary one, so no earlier run's measured "
                         "costs or tuned settings steer `auto`; set SPECX_HOME yourself to keep yours)")
    args = ap.parse_args()
    if args.state or "SPECX_HOME" not in os.environ:
        import tempfile

        os.environ["SPECX_HOME"] = args.state or tempfile.mkdtemp(prefix="specx-trees-")

    import specx

    from specx.bench import suite

    prompts = suite.load(args.prompts)
    if args.per_category:
        prompts = suite.calibration(prompts, args.per_category)
    settings = [0] + [int(t) for t in args.trees.split(",")]
    pair = specx.load(args.target, f"{args.drafter}+ngram")
    samples = []
    for rep in range(args.repeats):
        for i, p in enumerate(prompts):
            shift = (rep + i) % len(settings)
            for tree in settings[shift:] + settings[:shift]:
                s = run_one(pair, p.text, args.tokens, tree, args.policy)
                samples.append({"tree": tree, "category": p.category, "prompt": i, "rep": rep, **s})
                print(f"rep {rep} {p.category:<14} tree {tree:>3} {len(s['tokens']):>4} tok "
                      f"{len(s['tokens']) / s['decode_s']:6.2f} tok/s", file=sys.stderr, flush=True)
    report(samples, settings)
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "samples": samples}))
    return 0


def report(samples: list[dict], settings: list[int]) -> None:
    from specx.bench.stats import bootstrap_median

    cats = sorted({s["category"] for s in samples}) + ["overall"]
    by = {t: {(s["category"], s["prompt"], s["rep"]): s for s in samples if s["tree"] == t} for t in settings}

    def per_round(tree, cat):
        rounds = [r for u, s in by[tree].items() if cat in ("overall", u[0]) for r in s["rounds"]]
        n = max(len(rounds), 1)
        return (sum(r[1] for r in rounds) / n, sum(r[0] + 1 for r in rounds) / n,
                1000 * sum(r[2] for r in rounds) / n, 1000 * sum(r[3] for r in rounds) / n)

    print("\nper round: accepted, verify rows, draft ms, verify ms")
    print("| tree | " + " | ".join(cats) + " |\n|---|" + "---|" * len(cats))
    for t in settings:
        print(f"| {t} | " + " | ".join("{:.2f}, {:.1f}, {:.0f}, {:.0f}".format(*per_round(t, c)) for c in cats) + " |")
    print("\ndecode tok/s ratio to chains (median [90% interval]); accepted per verification ratio; equal outputs")
    for t in settings[1:]:
        cells = []
        for cat in cats:
            units = [u for u in by[t] if cat in ("overall", u[0]) and u in by[0]]
            rate = lambda s: len(s["tokens"]) / max(s["decode_s"], 1e-9)   # noqa: E731
            q = bootstrap_median([rate(by[t][u]) / rate(by[0][u]) for u in units])
            cells.append(f"{q.median:.2f}x [{q.lo:.2f}-{q.hi:.2f}]")
        acc = per_round(t, "overall")[0] / max(per_round(0, "overall")[0], 1e-9)
        same = sum(by[t][u]["tokens"] == by[0][u]["tokens"] for u in by[t] if u in by[0])
        print(f"tree {t}: " + " | ".join(f"{c} {x}" for c, x in zip(cats, cells))
              + f"; accepted/verification {acc:.2f}x; {same}/{len(by[t])} outputs equal to chains'")


if __name__ == "__main__":
    t0 = time.perf_counter()
    code = main()
    print(f"{time.perf_counter() - t0:.0f} s", file=sys.stderr)
    sys.exit(code)
