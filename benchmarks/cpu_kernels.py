"""Cost of one target forward per weight precision and tokens per forward (the shape of verification).

    python benchmarks/cpu_kernels.py MODEL [--weights none,fp16,int8,int4] [--context 200] [--reps 5]

Prints, per precision, the median milliseconds of a forward of 1, 2, 5 and 9 tokens after a context of
`--context` tokens, its ratio to one token, and the time of the output layer alone. Each precision
loads the model once; the forwards of different token counts alternate so drift cancels.
"""
from __future__ import annotations

import argparse
import statistics
import time


def forward_ms(lm, context: list[int], tokens: int, reps: int) -> list[float]:
    times = []
    for _ in range(reps):
        lm.crop(len(context))
        t = time.perf_counter()
        lm.forward(list(range(100, 100 + tokens)))
        times.append((time.perf_counter() - t) * 1e3)
    return times


def main() -> None:
    import torch

    from specx.models.resolve import load_lm, resolve

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--weights", default="none,fp16,int8,int4")
    parser.add_argument("--context", type=int, default=200)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sizes", default="1,2,5,9")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"threads={torch.get_num_threads()} model={args.model} context={args.context}")
    for weights in args.weights.split(","):
        lm = load_lm(resolve(args.model), "float32", weights)
        context = [(i * 7919) % 20000 + 100 for i in range(args.context)]
        lm.reset()
        lm.forward(context)
        results = {n: [] for n in sizes}
        for _ in range(args.reps):
            for n in sizes:
                results[n] += forward_ms(lm, context, n, 1)
        med = {n: statistics.median(v) for n, v in results.items()}
        cells = "  ".join(f"{n}:{med[n]:7.1f} ms ({med[n] / med[sizes[0]]:.2f}×)" for n in sizes)
        print(f"{weights:5s} {lm.kernels[:40]:40s} {cells}", flush=True)
        del lm
        from specx.models import resolve as models
        models._LOADED.clear()


if __name__ == "__main__":
    main()
