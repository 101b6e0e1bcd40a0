"""A whole prompt pass on the lean decoder (chunks of PROMPT_CHUNK rows, the last row's logits) with an older tree's
attention.c against this tree's, alternating on one loaded model; the largest difference of the last row's logits
(relative to their largest magnitude: the new sums fuse each product into its sum, so the bits differ).

    python prompt.py OLD_TREE MODEL.gguf TOKENS[,TOKENS...] [--reps 3]"""
import argparse
import statistics
import time
from pathlib import Path

import torch

from specx.cpu import attention
from specx.decoder import lm as lean

ap = argparse.ArgumentParser()
ap.add_argument("old")
ap.add_argument("model")
ap.add_argument("tokens")
ap.add_argument("--reps", type=int, default=3)
a = ap.parse_args()
new = attention._library()
attention.SOURCE = Path(a.old) / "specx/cpu/attention.c"
old = attention.load_build(attention._state["build"])
model = lean.load(Path(a.model), mode="q8")
print(f"{Path(a.model).name}, {torch.get_num_threads()} threads; {attention.describe()}")
print("| prompt tokens | old s | new s | new/old (median) | logits' largest difference |\n|---|---|---|---|---|")
for n in map(int, a.tokens.split(",")):
    prompt = [(i * 7919) % 1000 + 100 for i in range(n)]
    times, outs, ratios = {"old": [], "new": []}, {}, []
    for r in range(a.reps):
        for key in (("old", "new") if r % 2 == 0 else ("new", "old")):
            attention._state["lib"] = old if key == "old" else new
            model.reset()
            t = time.perf_counter()
            outs[key] = model.forward(prompt, last_only=True)
            times[key].append(time.perf_counter() - t)
        ratios.append(times["new"][-1] / times["old"][-1])
    print(f"| {n} | {statistics.median(times['old']):.2f} | {statistics.median(times['new']):.2f} | "
          f"{statistics.median(ratios):.3f} | "
          f"{float((outs['old'] - outs['new']).abs().max() / outs['old'].abs().max()):.1e} |", flush=True)
