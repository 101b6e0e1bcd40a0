#!/usr/bin/env python3
"""Several loaded setups over one long session of answers, paired: what a policy or drafter change does over time.

    python benchmarks/session_ab.py -c plain=none -c file=DRAFTER.gguf+ngram,draft_quant=q8 \
        -c q4=DRAFTER.gguf+ngram [--target T.gguf] [--repeats 3] [--per-category 2] [--tokens 128] [--json out.json]

Each `-c NAME=DRAFTER[,option=value…]` is `specx.load(TARGET, DRAFTER, **options)` (an option's value is an int
where it reads as one; `draft_policy=` and `confidence=` are given to each answer instead, and `old=1` runs the functions a script
replaced with old_side as they were), loaded once and kept for the whole session, so each setup carries its own measured costs
from answer to answer as a chat or a server does (a policy drifting over a session shows only so). Every repeat
runs every bench prompt (the first N of each category) under every setup, in an order rotated per prompt so the
machine's drift cancels. After each answer: its speed, rounds, tokens drafted and accepted, and the drafting step
its setup's cost model carries. At the end: every setup's outputs against the first's (greedy: lossless setups
must equal it), and per category the paired speed ratio of each setup to the first and of the last to the
second (median and geometric mean), with each setup's carried step and acceptance. The run's state (measured
costs, tuned settings) starts empty unless SPECX_HOME is set.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

FIXTURES = Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser()
HERE = Path(__file__).resolve().parent


def setup(spec: str) -> tuple[str, str, dict]:
    """NAME=DRAFTER[,option=value…] -> (name, drafter, options)."""
    name, _, rest = spec.partition("=")
    drafter, *pairs = rest.split(",")
    if not name or not drafter or any("=" not in p for p in pairs):
        raise SystemExit(f"error: -c {spec!r}: expected NAME=DRAFTER[,option=value...]")
    options = {k: int(v) if v.lstrip("-").isdigit() else v for k, v in (p.split("=", 1) for p in pairs)}
    return name, drafter, options


OLD = {"on": False}   # set while an answer of a setup given `old=1` runs


def old_side(owner, name: str, before) -> None:
    """Run `before` in place of owner.name during the answers of the setups given `old=1`: a rule against the
    one it replaced, in one process, each on its own loaded pair (the results scripts that call main())."""
    now = getattr(owner, name)

    def either(*args, **kwargs):
        return (before if OLD["on"] else now)(*args, **kwargs)

    setattr(owner, name, either)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-c", "--config", action="append", required=True, help="NAME=DRAFTER[,option=value...]")
    ap.add_argument("--target", default=str(FIXTURES / "qwen2.5-coder-1.5b.gguf"))
    ap.add_argument("--prompts", default=str(HERE.parent / "specx" / "bench" / "prompts.toml"))
    ap.add_argument("--per-category", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    setups = [setup(s) for s in args.config]
    if len({n for n, _, _ in setups}) != len(setups) or len(setups) < 2:
        raise SystemExit("error: give two or more setups with different names")
    os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp(prefix="specx-session-"))

    import specx
    from specx.bench import suite
    sys.path.insert(0, str(HERE))
    from trees import run_one

    prompts = suite.calibration(suite.load(args.prompts), args.per_category)
    policies = {name: options.pop("draft_policy", "auto") for name, _, options in setups}   # an answer's option
    floors = {name: {"confidence": float(options.pop("confidence"))} if "confidence" in options else {}
              for name, _, options in setups}                                                 # ... and this one
    olds = {name for name, _, options in setups if options.pop("old", 0)}                   # see old_side
    pairs = [(name, specx.load(args.target, drafter, **options)) for name, drafter, options in setups]
    for name, pair in pairs:
        print(f"{name}: {pair.explanation}", flush=True)
    out = []
    for rep in range(args.repeats):
        for i, p in enumerate(prompts):
            shift = (rep * len(prompts) + i) % len(pairs)
            for name, pair in pairs[shift:] + pairs[:shift]:
                OLD["on"] = name in olds
                try:
                    s = run_one(pair, p.text, args.tokens, 0, policies[name], **floors[name])
                finally:
                    OLD["on"] = False
                cost = pair.costs.get(True) if getattr(pair, "costs", None) else None
                step = cost.draft_step_s * 1e3 if cost is not None and cost.draft_step_s else None
                out.append({"name": name, "cat": p.category, "rep": rep, "prompt": i, "step_ms": step, **s})
                r, n = s["rounds"], max(len(s["rounds"]), 1)
                print(f"{rep} {p.category:<14} {name:<8} {len(s['tokens']) / s['decode_s']:6.2f} tok/s, rounds {n}, "
                      f"drafted/round {sum(x[0] for x in r) / n:.2f}, accepted/round {sum(x[1] for x in r) / n:.2f}"
                      + (f", step carried {step:.1f} ms" if step else ""), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out))
    report(out, [n for n, _ in pairs], sorted({p.category for p in prompts}))
    return 0


def report(out: list[dict], names: list[str], cats: list[str]) -> None:
    first = names[0]
    speed = {(o["name"], o["rep"], o["prompt"]): len(o["tokens"]) / o["decode_s"] for o in out}
    tokens = {(o["name"], o["rep"], o["prompt"]): o["tokens"] for o in out}
    for name in names[1:]:
        same = sum(tokens[(name, r, i)] == tokens[(first, r, i)] for (m, r, i) in tokens if m == name)
        print(f"{name}: {same}/{sum(m == name for m, _, _ in tokens)} outputs equal to {first}'s")
    ratios = [(n, first) for n in names[1:]] + ([(names[-1], names[1])] if len(names) > 2 else [])
    units = sorted({(r, i, o["cat"]) for o in out for (r, i) in [(o["rep"], o["prompt"])]})
    for cat in cats + ["all"]:
        cells = {}
        for a, b in ratios:
            v = [speed[(a, r, i)] / speed[(b, r, i)] for r, i, c in units if cat in ("all", c)]
            cells[f"{a}/{b}"] = (round(statistics.median(v), 3), round(statistics.geometric_mean(v), 3))
        print(cat, cells)
    for name in names:
        rounds = [x for o in out if o["name"] == name for x in o["rounds"]]
        steps = [o["step_ms"] for o in out if o["name"] == name and o["step_ms"]]
        drafted = sum(x[0] for x in rounds)
        if drafted:
            step = f"step carried median {statistics.median(steps):.1f} ms (max {max(steps):.1f}); " if steps else ""
            print(f"{name}: {step}drafted/round {drafted / len(rounds):.2f}, "
                  f"accepted/drafted {sum(x[1] for x in rounds) / drafted:.3f}")


if __name__ == "__main__":
    sys.exit(main())
