#!/usr/bin/env python3
"""`--drafter self-q2k` against plain decoding and `self+ngram`, end to end (issue 36).

    nice -n 19 python benchmarks/results/2026-11-27-self-q2k/run.py [--configs ...] [--repeats 2]

Each configuration is `specx.load(MODEL, drafter)` with `--draft-policy auto` (the product as a user runs it;
the copy is built on first use and loaded from its cache after: both timed). Bench prompts (two per
category), 128 tokens, greedy, configurations alternated per prompt; outputs compared with plain decoding's
(lossless: equal). Decode tok/s over plain, medians per category and overall; tokens a round."""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

MODEL = Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser() / \
    "qwen2.5-coder-1.5b.gguf"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", default="self+ngram,self-q2k+ngram,self-q2k")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--per-category", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--policy", default="auto")
    ap.add_argument("--cold", action="store_true", help="delete the cached copy first: time its first build")
    a = ap.parse_args()

    import specx
    from specx import api
    from specx.bench import suite
    from specx.drafters import copycache
    from specx.engine.types import Done, Round
    from specx.options import RunOptions

    def run(pair, prompt):
        tokens, stats, cpu = [], None, time.process_time()
        for e in api.stream(pair, prompt, RunOptions(max_tokens=a.tokens, draft_policy=a.policy)):
            if isinstance(e, Round):
                tokens += e.token_ids
            elif isinstance(e, Done):
                stats = e.stats
        return tokens, stats, time.process_time() - cpu

    pairs = {"plain": specx.load(str(MODEL), "none")}
    for name in a.configs.split(","):
        if a.cold and name.startswith("self-q2k") and "self-q2k" not in {n.split("+")[0] for n in pairs}:
            stale = copycache.cache_file(MODEL)
            stale.unlink(missing_ok=True)
            t = time.perf_counter()
            specx.load(str(MODEL), "self-q2k")
            print(f"copy built and loaded in {time.perf_counter() - t:.1f} s (cold: {stale})", flush=True)
        t = time.perf_counter()
        pairs[name] = specx.load(str(MODEL), name)
        print(f"{name} loaded in {time.perf_counter() - t:.1f} s: {pairs[name].explanation}", flush=True)
    names = list(pairs)
    chosen = suite.calibration(suite.bundled(), a.per_category)
    rank = {id(p): sum(q.category == p.category for q in chosen[:i]) for i, p in enumerate(chosen)}
    prompts = sorted(chosen, key=lambda p: rank[id(p)])   # categories interleaved: a run cut short covers them all
    rates, rounds, tokens = {n: {} for n in names}, {n: {} for n in names}, {}
    per_cpu = {n: {} for n in names}   # tokens per CPU second of this process: robust to a loaded machine
    for rep in range(a.repeats):
        for i, p in enumerate(prompts):
            shift = (rep + i) % len(names)
            for name in names[shift:] + names[:shift]:
                out, stats, cpu = run(pairs[name], p.text)
                rates[name][(p.category, i, rep)] = len(out) / stats.decode_s
                per_cpu[name][(p.category, i, rep)] = len(out) / cpu
                rounds[name][(p.category, i, rep)] = stats.mean_acceptance_length
                tokens[(name, i, rep)] = out
                print(f"rep {rep} {p.category:<14} {name:<15} {len(out) / stats.decode_s:6.2f} tok/s "
                      f"({stats.mean_acceptance_length:.2f} a round) {len(out) / cpu:6.2f} tok/CPU-s", flush=True)
    cats = sorted({c for c, _, _ in rates["plain"]})
    print(f"\ndecode tok/s over plain, median per category (tokens a round); outputs equal to plain; policy {a.policy}")
    for name, measure in ((n, m) for m in (rates, per_cpu) for n in names[1:]):
        ratio = {u: measure[name][u] / measure["plain"][u] for u in measure["plain"]}
        cells = [f"{c} {statistics.median(r for u, r in ratio.items() if u[0] == c):.2f}x "
                 f"({statistics.median(r for u, r in rounds[name].items() if u[0] == c):.2f})" for c in cats]
        equal = sum(tokens[(name, i, rep)] == tokens[("plain", i, rep)] for _, i, rep in rates["plain"])
        print(f"{name} ({'wall' if measure is rates else 'CPU'}): " + " | ".join(cells) + f" | overall {statistics.median(ratio.values()):.2f}x; "
              f"{equal}/{len(ratio)} equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
