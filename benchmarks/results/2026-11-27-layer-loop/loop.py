"""Whole forwards of a GGUF on the lean decoder with its layer loop in C (cpu/layers.c) and in Python
(model.py's call-by-call loop), alternating forward by forward on one loaded model; the logits of both are
compared bit for bit.

    python loop.py MODEL.gguf [MODEL.gguf …] [--contexts 200,1000] [--rows 1,2,5] [--reps 14]"""
import argparse
import statistics
import time
from pathlib import Path

import torch

from specx.cpu import layers
from specx.decoder import lm as lean

ap = argparse.ArgumentParser()
ap.add_argument("models", nargs="+")
ap.add_argument("--contexts", default="200,1000")
ap.add_argument("--rows", default="1,2,5")
ap.add_argument("--reps", type=int, default=14)
a = ap.parse_args()
print(f"{torch.get_num_threads()} threads")
print("| model | context | rows | Python loop ms | C loop ms | C/Python (median, [2nd-lowest, 2nd-highest]) | same logits |")
print("|---|---|---|---|---|---|---|")
for path in a.models:
    model = lean.load(Path(path), mode="q8")
    for context in map(int, a.contexts.split(",")):
        prompt = [(i * 7919) % 1000 + 100 for i in range(context)]
        model.reset()
        model.forward(prompt)
        for rows in map(int, a.rows.split(",")):
            times, outs = {False: [], True: []}, {}
            for r in range(a.reps):
                for on in ((False, True) if r % 2 == 0 else (True, False)):
                    layers.use(on)
                    model.crop(context)
                    t = time.perf_counter()
                    outs[on, r] = model.forward(prompt[r:r + rows])
                    times[on].append(time.perf_counter() - t)
            layers.use(True)
            same = all(torch.equal(outs[False, r], outs[True, r]) for r in range(a.reps))
            ratios = sorted(n / o for o, n in zip(times[False], times[True]))
            print(f"| {Path(path).stem} | {context} | {rows} | {statistics.median(times[False]) * 1e3:.2f} | "
                  f"{statistics.median(times[True]) * 1e3:.2f} | {statistics.median(ratios):.3f} "
                  f"[{ratios[1]:.3f}–{ratios[-2]:.3f}] | {same} |", flush=True)
