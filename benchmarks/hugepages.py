#!/usr/bin/env python3
"""The lean decoder's steps with its layer matrices read through the file's map against copied to 2 MiB pages
(decoder/resident.py), alternating in one process.

    python benchmarks/hugepages.py [MODEL.gguf ...] [--reps 7] [--steps 12] [--prompt 300]

Per model: the load's time with the copy, then for each repeat and each way a prompt pass of --prompt tokens and the median
of --steps 1-token steps after it; medians over repeats, and whether both ways gave the same logits."""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

FIXTURES = Path(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")).expanduser()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=[str(FIXTURES / "qwen2.5-coder-1.5b.gguf"),
                                                  str(FIXTURES / "qwen2.5-coder-0.5b.gguf")])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--prompt", type=int, default=300)
    ap.add_argument("--mode", default="q8")
    a = ap.parse_args()

    import torch

    from specx.decoder import resident
    from specx.decoder.lm import load

    print(f"threads {torch.get_num_threads()}; huge pages offered: {resident.wanted()}", flush=True)
    for path in a.models:
        os.environ[resident.ENV] = "map"
        mapped = load(path, mode=a.mode)
        del os.environ[resident.ENV]
        t = time.perf_counter()
        copied = load(path, mode=a.mode)
        print(f"{Path(path).name}: loaded with the copy in {time.perf_counter() - t:.2f} s", flush=True)
        ids = [1000 + (i * 7919) % 20000 for i in range(a.prompt + a.steps + 6)]
        res = {"map": ([], [], []), "2 MiB pages": ([], [], [])}
        same = True
        for r in range(a.reps):
            logits = {}
            for name, lm in (("map", mapped), ("2 MiB pages", copied))[::1 if r % 2 == 0 else -1]:
                lm.reset()
                t = time.perf_counter()
                lm.forward(ids[:a.prompt], last_only=True)
                res[name][0].append(a.prompt / (time.perf_counter() - t))
                steps, fives = [], []
                for s in range(a.steps):
                    t = time.perf_counter()
                    out = lm.forward([ids[a.prompt + s]], last_only=True)
                    steps.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    lm.forward(ids[a.prompt + s + 1:a.prompt + s + 6])   # a verification's 5 rows, then rewound
                    fives.append(time.perf_counter() - t)
                    lm.crop(a.prompt + s + 1)
                res[name][1].append(statistics.median(steps) * 1000)
                res[name][2].append(statistics.median(fives) * 1000)
                logits[name] = out
            same &= torch.equal(logits["map"], logits["2 MiB pages"])
        for name, (prompt, step, five) in res.items():
            print(f"  {name:<12} prompt {statistics.median(prompt):6.1f} tok/s  step {statistics.median(step):6.1f} ms"
                  f"  5 rows {statistics.median(five):6.1f} ms ({statistics.median(five) / statistics.median(step):.2f}x)"
                  f"  (steps: {', '.join(f'{x:.1f}' for x in step)})")
        ratio = [m / c for m, c in zip(res["map"][1], res["2 MiB pages"][1])]
        print(f"  step speed-up {statistics.median(ratio):.2f}x [{min(ratio):.2f}-{max(ratio):.2f}]; "
              f"prompt {statistics.median(c / m for m, c in zip(res['map'][0], res['2 MiB pages'][0])):.2f}x; "
              f"same logits: {same}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
