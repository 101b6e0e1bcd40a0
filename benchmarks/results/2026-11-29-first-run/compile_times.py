"""Each kernel's compile time on a fresh kernel cache, and a first `specx.load` + answer of SmolLM2 with it.

    SPECX_KERNEL_CACHE=$(mktemp -d) SPECX_HOME=$(mktemp -d) python compile_times.py
    SPECX_KERNEL_CACHE=$(mktemp -d) python compile_times.py --builds   # quant.c's every build
"""
import os
import sys
import time

from specx.cpu import build

if "--builds" in sys.argv:
    from specx.cpu import quant

    for v in quant.variants():
        t = time.perf_counter()
        quant.load(v)
        print(f"quant {v}: {time.perf_counter() - t:.1f} s", flush=True)
    raise SystemExit

orig = build._compile


def timed(command, source, options, path):
    t = time.perf_counter()
    orig(command, source, options, path)
    print(f"compile {path.name.split('-')[0]}: {time.perf_counter() - t:.1f} s", flush=True)


build._compile = timed
t0 = time.perf_counter()
import specx  # noqa: E402

pair = specx.load(os.path.expanduser("~/.cache/specx-fixture-models/smollm2-135m.gguf"), "none")
print(f"load, kernels included: {time.perf_counter() - t0:.1f} s")
specx.generate(pair, "Hi", max_tokens=4)
print(f"first answer, all included: {time.perf_counter() - t0:.1f} s")
