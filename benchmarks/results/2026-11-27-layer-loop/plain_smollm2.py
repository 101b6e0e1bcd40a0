"""SmolLM2-135M's plain decoding (the embedded default's file, `--drafter none`) through the Python API: 200 new
tokens of one story prompt after a warm-up answer, three answers; tokens per second of the whole answer and the
share of it spent in forwards.

    SPECX_HOME=$(mktemp -d) python plain_smollm2.py"""
import os
import time

import specx
from specx.engine.types import Done

pair = specx.load(os.path.expanduser("~/.cache/specx-fixture-models/smollm2-135m.gguf"), "none")
PROMPT = "Write a short story about a lighthouse keeper who finds a message in a bottle."


def answer():
    for event in specx.stream(pair, PROMPT, max_tokens=200):
        if isinstance(event, Done):
            return event.stats


answer()
for _ in range(3):
    t = time.perf_counter()
    stats = answer()
    wall = time.perf_counter() - t
    print(f"{stats.new_tokens} tokens in {wall:.3f} s: {stats.new_tokens / wall:.0f} tok/s; forwards "
          f"{stats.forward_s / stats.decode_s:.0%} of decoding")
