"""Time to the first new token after a long prompt: specx's lean decoder (the prompt's pass in chunks, then the
first token's logits) against llama.cpp (llama-cpp-python in a child process, as benchmarks/cpu_bars.py runs it:
the same file, thread count, n_ctx 4096 and batch 512), alternating, on the same token ids; each repeat's prompt
starts with another token, so that neither reuses a cached prefix (llama-cpp-python's generate keeps the longest
common prefix of its last call).

    PYTHONPATH=. python ttft.py MODEL.gguf 512,2048,4000 [--reps 3]"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))   # benchmarks/
from cpu_bars import LlamaCpp  # noqa: E402

from specx.decoder import lm as lean  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("tokens")
ap.add_argument("--reps", type=int, default=3)
a = ap.parse_args()
threads = torch.get_num_threads()
model = lean.load(Path(a.model), mode="q8")
llama = LlamaCpp(a.model, threads)
print(f"{Path(a.model).name}, {threads} threads")
print("| prompt tokens | llama.cpp s | specx s | specx / llama.cpp (median) | same first token |\n|---|---|---|---|---|")
try:
    for n in map(int, a.tokens.split(",")):
        times, ratios, same = {"llama": [], "specx": []}, [], True
        for r in range(a.reps):
            prompt = [100 + r] + [(i * 7919) % 1000 + 200 for i in range(1, n)]
            for key in (("llama", "specx") if r % 2 == 0 else ("specx", "llama")):
                if key == "llama":
                    tokens, _, first = llama.generate(prompt, 1, [])
                    times[key].append(first)
                    theirs = tokens[0]
                else:
                    model.reset()
                    t = time.perf_counter()
                    ours = int(model.forward(prompt, last_only=True)[0].argmax())
                    times[key].append(time.perf_counter() - t)
            ratios.append(times["specx"][-1] / times["llama"][-1])
            same = same and ours == theirs
        print(f"| {n} | {statistics.median(times['llama']):.2f} | {statistics.median(times['specx']):.2f} | "
              f"{statistics.median(ratios):.2f} | {same} |", flush=True)
finally:
    llama.close()
