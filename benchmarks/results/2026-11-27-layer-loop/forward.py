"""Whole forwards of a GGUF on the lean decoder with an older tree's kernels (quant.c and attention.c built from
OLD/specx/cpu) against this tree's, alternating call by call in one process (the same loaded weights and cache);
the logits of both are compared bit for bit.

    python forward.py OLD_TREE MODEL.gguf [--contexts 200,1000] [--rows 1,2,5] [--reps 14]

OLD_TREE: a checkout of an earlier commit (git worktree add --detach /tmp/old COMMIT)."""
import argparse
import statistics
import time
from pathlib import Path

import torch

from specx.cpu import attention, quant
from specx.decoder import lm as lean

ap = argparse.ArgumentParser()
ap.add_argument("old")
ap.add_argument("model")
ap.add_argument("--contexts", default="200,1000")
ap.add_argument("--rows", default="1,2,5")
ap.add_argument("--reps", type=int, default=14)
a = ap.parse_args()

new = {"attention": attention._library(), "quant": quant._default()}
build = attention._state["build"]
attention.SOURCE = Path(a.old) / "specx/cpu/attention.c"
source, quant.SOURCE = quant.SOURCE, Path(a.old) / "specx/cpu/quant.c"
old = {"attention": attention.load_build(build), "quant": quant.load(new["quant"].name)}
quant.SOURCE = source
old["quant"].xspan(quant.xspan_bytes(quant.l1_data_bytes()))
old["quant"].prefetch(*quant.PREFETCH_WAYS[quant._state["prefetch"].pick])


def use(libs):
    attention._state["lib"], quant._state["lib"] = libs["attention"], libs["quant"]


model = lean.load(Path(a.model), mode="q8")
print(f"{Path(a.model).name}, {torch.get_num_threads()} threads; {quant.describe()}; {attention.describe()}")
print("| context | rows | old ms | new ms | new/old (median, [2nd-lowest, 2nd-highest]) | same logits |")
print("|---|---|---|---|---|---|")
for context in map(int, a.contexts.split(",")):
    prompt = [(i * 7919) % 1000 + 100 for i in range(context)]
    use(new)
    model.reset()
    model.forward(prompt)
    for rows in map(int, a.rows.split(",")):
        times, outs = {"old": [], "new": []}, {}
        for r in range(a.reps):
            for key in (("old", "new") if r % 2 == 0 else ("new", "old")):
                use(old if key == "old" else new)
                model.crop(context)
                t = time.perf_counter()
                outs[key, r] = model.forward(prompt[r:r + rows])
                times[key].append(time.perf_counter() - t)
        same = all(torch.equal(outs["old", r], outs["new", r]) for r in range(a.reps))
        ratios = sorted(n / o for o, n in zip(times["old"], times["new"]))
        print(f"| {context} | {rows} | {statistics.median(times['old']) * 1e3:.1f} | "
              f"{statistics.median(times['new']) * 1e3:.1f} | {statistics.median(ratios):.3f} "
              f"[{ratios[1]:.3f}–{ratios[-2]:.3f}] | {same} |", flush=True)
