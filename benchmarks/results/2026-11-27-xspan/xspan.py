"""Whole lean-decoder forwards of 1 to 9 rows with quant.c's XSPAN at several sizes (0: never cut), on one loaded
model, alternating sizes from step to step (2 MiB pages as the decoder reads them).

    python benchmarks/results/2026-11-27-xspan/xspan.py [MODEL.gguf ...] [--sizes 0,24576,32768] [--rows 1,2,5,9]
                                                        [--reps 5] [--steps 10]

Per size and row count: the median forward after a 300-token prompt (each rep's median over its steps, then
the median and range over reps), and whether the logits were the same bits at every size."""
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
    ap.add_argument("--sizes", default="0,24576,32768")
    ap.add_argument("--rows", default="1,2,5,9")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--prompt", type=int, default=300)
    a = ap.parse_args()
    sizes = [int(v) for v in a.sizes.split(",")]
    counts = [int(v) for v in a.rows.split(",")]

    import torch

    from specx.cpu import quant
    from specx.decoder.lm import load

    lib = quant._default()
    default = lib.xspan(-1)
    print(f"threads {torch.get_num_threads()}; {lib.describe()}; default XSPAN {default}", flush=True)
    for path in a.models:
        lm = load(path, mode="q8")
        ids = [1000 + (i * 7919) % 20000 for i in range(a.prompt + a.steps + max(counts) + 2)]
        res = {(b, m): [] for b in sizes for m in counts}
        same = True
        for r in range(a.reps):
            lm.reset()
            lm.forward(ids[:a.prompt], last_only=True)
            times = {k: [] for k in res}
            for s in range(a.steps):
                at = a.prompt + s
                for m in counts:
                    logits = []
                    for b in sizes[::1 if (r + s) % 2 == 0 else -1]:
                        lib.xspan(b)
                        t = time.perf_counter()
                        logits.append(lm.forward(ids[at:at + m]))
                        times[(b, m)].append(time.perf_counter() - t)
                        lm.crop(at)
                    same &= all(torch.equal(logits[0], x) for x in logits[1:])
                lm.forward([ids[at]], last_only=True)
            for k in res:
                res[k].append(statistics.median(times[k]) * 1e3)
        lib.xspan(default)
        print(Path(path).name)
        for m in counts:
            line = "  ".join(f"{b}: {statistics.median(res[(b, m)]):6.1f} ms [{min(res[(b, m)]):.1f}-{max(res[(b, m)]):.1f}]"
                             for b in sizes)
            ratio = "  ".join(f"{b}: {statistics.median(res[(b, m)]) / statistics.median(res[(b, 1)]):.2f}x" for b in sizes)
            print(f"  {m} rows  {line}   (÷ 1 row: {ratio})")
        print(f"  same logits at every size: {same}", flush=True)


if __name__ == "__main__":
    main()
