"""The whole float32 target with rowgemm prefetching on and off, paired in one process (alternating).

    python prefetch_ab.py MODEL [--reps 5] [--sizes 1,2,5,9,17] [--context 123]

Per setting: forwards of each size after a context of --context tokens (best of 3 each), median over
the repeats, and the ratio on/off. The same bits either way (checked on the last logits)."""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from specx.kernels import rowgemm, timed
from specx.runtime import models
from specx.runtime.api import prepare


def forward_ms(lm, context: list[int], size: int) -> float:
    best = float("inf")
    for _ in range(3):
        lm.crop(len(context))
        start = time.perf_counter()
        lm.forward(list(range(2000, 2000 + size)))
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--sizes", default="1,2,5,9,17")
    ap.add_argument("--context", type=int, default=123)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    pair = prepare(args.model, "none")
    lm = pair.target
    print(lm.kernels)
    context = list(range(1000, 1000 + args.context))
    lm.reset()
    lm.forward(context, last_only=True)
    times = {on: {n: [] for n in sizes} for on in ("on", "off")}
    logits = {}
    for rep in range(args.reps):
        for on in (("on", "off") if rep % 2 else ("off", "on")):
            rowgemm._state["prefetch"] = timed.Choice("L2 prefetching", on, source="prefetch_ab.py")
            rowgemm._state["prefetch_flag"] = int(on == "on")   # what each linear call passes
            for n in sizes:
                times[on][n].append(forward_ms(lm, context, n))
            lm.crop(len(context))
            logits[on] = lm.forward([7, 8, 9])
    print(f"{args.model}, float32, context {args.context}, median of {args.reps} alternating repeats "
          f"({timed.machine()})")
    for n in sizes:
        on, off = statistics.median(times["on"][n]), statistics.median(times["off"][n])
        print(f"{n:>3} tokens: prefetch on {on:7.0f} ms   off {off:7.0f} ms   on/off {on / off:.2f}")
    print("same logits" if torch.equal(logits["on"], logits["off"]) else "LOGITS DIFFER")


if __name__ == "__main__":
    main()
