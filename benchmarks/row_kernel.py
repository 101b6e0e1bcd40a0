"""specx rowgemm against PyTorch's CPU kernels on one target, paired in one process.

    python benchmarks/row_kernel.py MODEL [--weights none|fp16] [--context 200] [--reps 5] [--sizes 1,2,5,9,17]

Loads MODEL once (its linears run rowgemm: float32 weights, or half floats with `--weights fp16`),
then swaps every layer between rowgemm and the kernel specx would use without it (same weights:
oneDNN's prepacked float32 linear, or fbgemm's fp16 linear) and alternates the two, so drift cancels:
per configuration the prompt pass of `--context` tokens and forwards of 1, 2, 5, … tokens after it
(best of 4 each), median over the repeats, and the ratio rowgemm / other.
"""
from __future__ import annotations

import argparse
import statistics
import time


def swap(model, kind: str, rows: dict) -> None:
    import torch
    from torch.utils.mkldnn import MkldnnLinear

    from specx.cpu.fastpath import RowLinear
    from specx.cpu.qlinear import Fp16Linear

    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, RowLinear):
                rows[(id(parent), name)] = child
                if kind != "rowgemm":
                    linear = torch.nn.Linear(child.in_features, child.out_features, bias=child.bias is not None)
                    linear.weight = torch.nn.Parameter(child.weight.detach().float(), requires_grad=False)
                    linear.bias = child.bias
                    with torch.no_grad():
                        setattr(parent, name, Fp16Linear(linear) if kind == "fbgemm"
                                else MkldnnLinear(linear, torch.float32))
            elif isinstance(child, (MkldnnLinear, Fp16Linear)) and kind == "rowgemm":
                setattr(parent, name, rows[(id(parent), name)])


def main() -> None:
    from specx.models.resolve import load_lm, resolve

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--weights", choices=("none", "fp16"), default="none")
    parser.add_argument("--context", type=int, default=200)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sizes", default="1,2,5,9,17")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    lm = load_lm(resolve(args.model), "float32", args.weights)
    other = "fbgemm" if args.weights == "fp16" else "onednn"
    if "rowgemm" not in lm.kernels:
        raise SystemExit(f"rowgemm is not in use here: {lm.kernels}")
    context = [(i * 7919) % 20000 + 100 for i in range(args.context)]
    results: dict[tuple[str, object], list[float]] = {}
    rows: dict = {}
    for rep in range(args.reps):
        for kind in ("rowgemm", other) if rep % 2 == 0 else (other, "rowgemm"):
            swap(lm.model, kind, rows)
            lm.reset()
            t = time.perf_counter()
            lm.forward(context, last_only=True)
            results.setdefault((kind, "prompt"), []).append(time.perf_counter() - t)
            for n in sizes:
                best = float("inf")
                for _ in range(4):
                    t = time.perf_counter()
                    lm.forward(list(range(500, 500 + n)))
                    best = min(best, time.perf_counter() - t)
                    lm.crop(len(context))
                results.setdefault((kind, n), []).append(best)
    weights = "fp16 weights" if args.weights == "fp16" else "float32"
    print(f"{args.model}, {weights}, context {args.context}, median of {args.reps} alternating repeats")
    for key in ["prompt", *sizes]:
        a, b = (statistics.median(results[(kind, key)]) for kind in (other, "rowgemm"))
        label = f"prompt of {args.context}" if key == "prompt" else f"{key} token{'s' if key != 1 else ''}"
        print(f"{label:>14}: {other} {a * 1e3:7.0f} ms   rowgemm {b * 1e3:7.0f} ms   ratio {b / a:.2f}", flush=True)


if __name__ == "__main__":
    main()
