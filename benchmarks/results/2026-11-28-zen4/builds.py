"""Whole forwards of a GGUF on the lean decoder with each build of quant.c this CPU runs (AVX-512 with VNNI,
AVX2 with AVX-VNNI where the CPU has it, AVX-512 without VNNI), alternating call by call in one process on the same weights and cache; the
logits compared bit for bit (q8 results are the same in every build).

    python builds.py MODEL.gguf [--contexts 200,1000] [--rows 1,5] [--reps 14]"""
import argparse
import statistics
import time
from pathlib import Path

import torch

from specx.cpu import quant
from specx.decoder import lm as lean

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("--contexts", default="200,1000")
ap.add_argument("--rows", default="1,5")
ap.add_argument("--reps", type=int, default=14)
a = ap.parse_args()

default = quant._default()
libs = {"default": default}
for name, vnni in (("avx2", None), ("avx512", False)):   # VNNI where the CPU has it (None), AVX-512 without
    try:
        lib = quant.load(name, vnni=vnni)
    except Exception as e:   # noqa: BLE001
        print(f"{name} vnni={vnni}: not built ({e})")
        continue
    lib.xspan(quant.xspan_bytes(quant.l1_data_bytes()))
    lib.prefetch(*quant.PREFETCH_WAYS[quant._state["prefetch"].pick])
    libs[f"{name}{'+vnni' if lib.vnni else ''}"] = lib
model = lean.load(Path(a.model), mode="q8")
print(f"{Path(a.model).name}, {torch.get_num_threads()} threads; default: {quant.describe()}")
names = list(libs)
print("| context | rows | " + " | ".join(f"{n} ms" for n in names) + " | ratios to default (median) | same logits |")
print("|---|---|" + "---|" * len(names) + "---|---|")
for context in map(int, a.contexts.split(",")):
    prompt = [(i * 7919) % 1000 + 100 for i in range(context)]
    quant._state["lib"] = default
    model.reset()
    model.forward(prompt)
    for rows in map(int, a.rows.split(",")):
        times, outs = {n: [] for n in names}, {}
        for r in range(a.reps):
            order = names[r % len(names):] + names[:r % len(names)]
            for n in order:
                quant._state["lib"] = libs[n]
                model.crop(context)
                t = time.perf_counter()
                outs[n, r] = model.forward(prompt[r:r + rows])
                times[n].append(time.perf_counter() - t)
        same = all(torch.equal(outs[n, r], outs["default", r]) for n in names for r in range(a.reps))
        med = {n: statistics.median(times[n]) * 1e3 for n in names}
        ratios = ", ".join(f"{n} {statistics.median(x / d for x, d in zip(times[n], times['default'])):.3f}"
                           for n in names[1:])
        print(f"| {context} | {rows} | " + " | ".join(f"{med[n]:.1f}" for n in names) + f" | {ratios} | {same} |")
quant._state["lib"] = default
