"""Whole lean-decoder forwards with weight prefetching into L1 only against L1 and L2 (quant.PREFETCH_WAYS),
on one loaded model, alternating ways from step to step (2 MiB pages as the decoder reads them).

    python benchmarks/results/2026-11-27-five-rows/prefetch_l2.py [MODEL.gguf ...] [--reps 7] [--steps 12]

Per way: the median 1-token step and 5-row forward (a verification's shape) after a 300-token prompt, and
whether the logits were the same bits both ways."""
from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

FIXTURES = Path(os.environ.get("SPECX_FIXTURE_MODELS", Path.home() / ".cache" / "specx-fixture-models"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("models", nargs="*", default=[str(FIXTURES / f"qwen2.5-coder-{s}.gguf") for s in ("1.5b", "0.5b")])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--prompt", type=int, default=300)
    a = ap.parse_args()

    import torch

    from specx.cpu import quant
    from specx.decoder.lm import load

    lib = quant._default()
    ways = {"into L1": quant.PREFETCH_WAYS["into L1"], "into L1 and L2": quant.PREFETCH_WAYS["into L1 and L2"]}
    print(f"threads {torch.get_num_threads()}; {lib.describe()}", flush=True)
    for path in a.models:
        lm = load(path, mode="q8")
        ids = [1000 + (i * 7919) % 20000 for i in range(a.prompt + a.steps + 6)]
        res = {w: ([], []) for w in ways}
        same = True
        for r in range(a.reps):
            lm.reset()
            lm.forward(ids[:a.prompt], last_only=True)
            steps = {w: [] for w in ways}
            fives = {w: [] for w in ways}
            for s in range(a.steps):
                logits = {}
                for w in list(ways)[::1 if (r + s) % 2 == 0 else -1]:
                    lib.prefetch(*ways[w])
                    t = time.perf_counter()
                    logits[w] = lm.forward([ids[a.prompt + s]], last_only=True)
                    steps[w].append(time.perf_counter() - t)
                    t = time.perf_counter()
                    lm.forward(ids[a.prompt + s + 1:a.prompt + s + 6])   # a verification's 5 rows
                    fives[w].append(time.perf_counter() - t)
                    lm.crop(a.prompt + s)
                same &= torch.equal(*logits.values())
                lm.forward([ids[a.prompt + s]], last_only=True)
            for w in ways:
                res[w][0].append(statistics.median(steps[w]) * 1e3)
                res[w][1].append(statistics.median(fives[w]) * 1e3)
        print(Path(path).name)
        for w, (step, five) in res.items():
            print(f"  {w:<15} step {statistics.median(step):6.1f} ms [{min(step):.1f}-{max(step):.1f}]  "
                  f"5 rows {statistics.median(five):6.1f} ms [{min(five):.1f}-{max(five):.1f}]  "
                  f"({statistics.median(five) / statistics.median(step):.2f}x)")
        l1, l2 = res["into L1"], res["into L1 and L2"]
        print(f"  L2 too: step {statistics.median(x / y for x, y in zip(l1[0], l2[0])):.3f}x, "
              f"5 rows {statistics.median(x / y for x, y in zip(l1[1], l2[1])):.3f}x faster; same logits: {same}",
              flush=True)
    lib.prefetch(*quant.PREFETCH_WAYS[quant._state["prefetch"].pick])


if __name__ == "__main__":
    main()
