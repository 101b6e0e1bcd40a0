"""A long prompt's pass on the lean decoder in chunks of PROMPT_CHUNK rows (decoder/config.py) against other chunk
sizes (a size above the prompt: one call), alternating, on one loaded model; the last row's logits compared bit for
bit. Seconds for the whole pass, median of 2.

    python chunks.py MODEL.gguf TOKENS SIZES          e.g. qwen2.5-coder-0.5b.gguf 2048 128,256,512,1024,1000000"""
import statistics
import sys
import time
from pathlib import Path

import torch

from specx.decoder import lm as lean
from specx.decoder import model as decoder_model

path, n, sizes = Path(sys.argv[1]), int(sys.argv[2]), [int(x) for x in sys.argv[3].split(",")]
m = lean.load(path, mode="q8")
prompt = [(i * 7919) % 1000 + 100 for i in range(n)]
times, outs = {}, {}
for r in range(2):
    for chunk in (sizes if r % 2 == 0 else sizes[::-1]):
        decoder_model.PROMPT_CHUNK = chunk
        m.reset()
        t = time.perf_counter()
        outs[chunk] = m.forward(prompt, last_only=True)
        times.setdefault(chunk, []).append(time.perf_counter() - t)
same = all(torch.equal(outs[sizes[0]], o) for o in outs.values())
print(path.stem, n, "tokens:", ", ".join(f"{k} rows {statistics.median(v):.2f} s" for k, v in times.items()),
      "| same logits:", same)
