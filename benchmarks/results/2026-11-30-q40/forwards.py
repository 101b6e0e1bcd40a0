"""The 0.5B drafter fixture as specx drafts with it (`--draft-quant auto`: its wider layers re-encoded to Q4_0, q8, VocabTrim
head) with its Q4_0 layers packed (this change) and in the file's layout (before it: packing.packable refusing Q4_0),
both loaded by the current build in one process: forwards after a 100-token prompt of 1, 2, 5, 9 and 17 tokens
and a 128-token prompt pass, alternating (order flipped each repeat); medians and the paired ratio packed / file
with quartiles. Usage: python forwards.py [REPEATS] [MODEL.gguf]"""
import statistics
import sys
import time
from pathlib import Path

import torch

from specx.cpu import packing
from specx.decoder import lm as lean
from specx.decoder import resident

args = [a for a in sys.argv[1:] if not a.isdigit()]
path = str(Path(args[0] if args else "~/.cache/specx-fixture-models/qwen2.5-coder-0.5b.gguf").expanduser())
resident.wanted = lambda: True
packed = lean.load(path, mode="q4", draft_vocab=32768)
packable = packing.packable
packing.packable = lambda w, lib=None: w.name != "Q4_0" and packable(w, lib)
file = lean.load(path, mode="q4", draft_vocab=32768)
packing.packable = packable
print(packed.kernels[:400], flush=True)
ids = torch.randint(100, 20000, (240,), generator=torch.Generator().manual_seed(0)).tolist()
res = {n: [] for n in (1, 2, 5, 9, 17, "prompt 128")}
reps = int(next((a for a in sys.argv[1:] if a.isdigit()), 9))
for rep in range(reps):
    for n, times in res.items():
        pair = {}
        for name, m in ((("packed", packed), ("file", file)) if rep % 2 else (("file", file), ("packed", packed))):
            if n == "prompt 128":
                m.crop(0)
                s = time.perf_counter()
                out = m.forward(ids[:128], last_only=True)
            else:
                m.crop(100)
                s = time.perf_counter()
                out = m.forward(ids[100:100 + n])
            pair[name] = (time.perf_counter() - s, out)
        assert torch.equal(pair["packed"][1], pair["file"][1])
        times.append((pair["file"][0], pair["packed"][0]))
for n, v in res.items():
    f, p = (statistics.median(x[i] for x in v) * 1e3 for i in (0, 1))
    r = sorted(x[1] / x[0] for x in v)
    print(f"{n} tokens: file {f:.2f} ms, packed {p:.2f} ms, packed/file {statistics.median(r):.3f} "
          f"[{r[len(r) // 4]:.3f}-{r[3 * len(r) // 4]:.3f}]", flush=True)
