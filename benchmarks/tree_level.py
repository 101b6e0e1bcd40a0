#!/usr/bin/env python3
"""One tree level's drafter forward, two ways: the new nodes alone over the cached earlier ones (a (T, m + T)
mask) against cropping to the context and re-running every tree node (a (T, T) mask), on the drafter as
`specx run` loads it (the Qwen pair's 0.5B, VocabTrim head). Alternating, median milliseconds.

    python benchmarks/tree_level.py [--context 200] [--cached 3] [--new 3] [--repeats 40]
"""
from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

FIXTURES = Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=str(FIXTURES / "qwen2.5-coder-1.5b.gguf"))
    ap.add_argument("--drafter", default=str(FIXTURES / "qwen2.5-coder-0.5b.gguf"))
    ap.add_argument("--context", type=int, default=200)
    ap.add_argument("--cached", type=int, default=3, help="tree nodes already forwarded (the earlier levels)")
    ap.add_argument("--new", type=int, default=3, help="nodes this level adds")
    ap.add_argument("--repeats", type=int, default=40)
    args = ap.parse_args()

    import torch

    import specx
    from specx.engine.tree import ROOT, Tree, tree_mask, tree_positions

    lm = specx.load(args.target, args.drafter).drafter.lm
    context = [(7 * i + 11) % 20_000 + 100 for i in range(args.context)]
    # the earlier levels: a root with `cached` children; this level: one child under each of them (cycled)
    m, n = args.cached, args.new
    tree = Tree(tuple(range(500, 500 + m + n)), tuple([ROOT] * m + [i % m for i in range(n)]))
    mask, positions = tree_mask(tree)[1:, 1:], tree_positions(tree, args.context - 1)[1:]
    lm.reset()
    lm.forward(context, last_only=True)
    lm.forward(list(tree.tokens[:m]), positions=positions[:m], mask=mask[:m, :m])

    def cached():
        lm.crop(args.context + m)
        lm.forward(list(tree.tokens[m:]), positions=positions, mask=mask[m:])

    def rerun():
        lm.crop(args.context)
        lm.forward(list(tree.tokens), positions=positions, mask=mask)

    times = {"cached": [], "rerun": []}
    for rep in range(args.repeats):
        for name, f in (("cached", cached), ("rerun", rerun))[::1 if rep % 2 else -1]:
            t = time.perf_counter()
            f()
            times[name].append(time.perf_counter() - t)
    for name, ts in times.items():
        print(f"{name:>6}: {len(tree.tokens) - m if name == 'cached' else len(tree.tokens)} rows, "
              f"median {1000 * statistics.median(ts):.2f} ms (threads {torch.get_num_threads()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
