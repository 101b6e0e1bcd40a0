"""Forwards of N tokens (a prompt pass, a wide verify) on the lean decoder with quant.c's DECODED on and off,
alternating in one process: median milliseconds, the paired ratio off / on, and whether the logits are equal.

    python benchmarks/results/2026-11-29-decoded/forwards.py MODEL [SIZES] [REPEATS]     (BUILD=avx2: that build)

MODEL is a fixture's name (qwen2.5-coder-1.5b); each forward follows a context of 100 tokens and is cropped
back after, and only the last position's logits are computed (as a prompt pass does).
"""
import os
import statistics as st
import sys
import tempfile
import time

os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp())
import torch  # noqa: E402

from specx.cpu import quant  # noqa: E402
from specx.decoder import lm as lean  # noqa: E402

F = os.path.expanduser(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")) + "/"
name = sys.argv[1]
sizes = [int(v) for v in (sys.argv[2] if len(sys.argv) > 2 else "9,16,32,100").split(",")]
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 7
torch.set_num_threads(2)
model = lean.load(F + name + ".gguf", mode="q8")
lib = quant._library()
if os.environ.get("BUILD"):   # another build, with the default one's prefetch and span settings
    other = quant.load(os.environ["BUILD"])
    other.prefetch(*lib.prefetch(0, False))
    other.xspan(lib.xspan(-1))
    quant._state["lib"] = lib = other
print(lib.describe(), "| threads 2", flush=True)
prompt = [(i * 7919) % 1000 + 100 for i in range(100 + max(sizes))]
model.reset()
model.forward(prompt[:100])
for size in sizes:
    times, outs = {False: [], True: []}, {}
    for r in range(reps):
        for on in ((False, True) if r % 2 else (True, False)):
            lib.decode_once(on)
            model.crop(100)
            t = time.perf_counter()
            logits = model.forward(prompt[100:100 + size], last_only=True)
            times[on].append(time.perf_counter() - t)
            outs.setdefault(on, logits.clone())
    ratios = sorted(a / b for a, b in zip(times[False], times[True]))
    print(f"{name} {size:4d} tokens: off {st.median(times[False]) * 1e3:7.1f} ms  on {st.median(times[True]) * 1e3:7.1f} ms"
          f"  off/on {st.median(ratios):.3f} [{ratios[0]:.3f}-{ratios[-1]:.3f}]  equal logits: "
          f"{torch.equal(outs[False], outs[True])}", flush=True)
lib.decode_once(True)
