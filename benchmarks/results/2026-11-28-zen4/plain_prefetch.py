"""specx's plain decoding of the 1.5B (the API `specx run` uses) with each weight-prefetching way, alternating
run by run on bench prompts: decode tok/s medians and the median paired ratio to "into L1" (the pick the
layer timing had saved on this machine).

    python plain_prefetch.py MODEL.gguf [--repeats 5] [--tokens 128]"""
import argparse
import statistics
import tomllib
from pathlib import Path

import specx
from specx.cpu import quant
from specx.engine.types import Done

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("--repeats", type=int, default=5)
ap.add_argument("--tokens", type=int, default=128)
a = ap.parse_args()
prompts = {}
for p in tomllib.loads((Path(specx.__file__).parent / "bench/prompts.toml").read_text())["prompt"]:
    prompts.setdefault(p["category"], p["text"])
pair = specx.load(a.model, "none")
lib = quant._default()
ways = list(quant.PREFETCH_WAYS)
rates = {w: [] for w in ways}
for r in range(a.repeats):
    for i, text in enumerate(prompts.values()):
        for w in ways[(r + i) % 3:] + ways[:(r + i) % 3]:
            lib.prefetch(*quant.PREFETCH_WAYS[w])
            done = [e for e in specx.stream(pair, text, max_tokens=a.tokens) if isinstance(e, Done)][0]
            rates[w].append(done.stats.decode_tok_s)
for w in ways:
    ratio = statistics.median(x / y for x, y in zip(rates[w], rates["into L1"]))
    print(f"{w:15s} decode {statistics.median(rates[w]):.2f} tok/s, paired ratio to 'into L1' {ratio:.3f} "
          f"(min {min(x / y for x, y in zip(rates[w], rates['into L1'])):.3f}, "
          f"max {max(x / y for x, y in zip(rates[w], rates['into L1'])):.3f})")
