"""A machine's first run: each kernel library's compile and a first `specx.load` + answer of SmolLM2, on a fresh
kernel cache (a second process then times the same run with the kernels built).

    SPECX_KERNEL_CACHE=$(mktemp -d) SPECX_HOME=$(mktemp -d) python first_run.py
    SPECX_KERNEL_CACHE=$(mktemp -d) SPECX_HOME=$(mktemp -d) python first_run.py --one-by-one   # no kernels.ahead
    SPECX_KERNEL_CACHE=$(mktemp -d) python first_run.py --builds [--one-unit]   # quant.c's every build
"""
import os
import sys
import time

from specx.cpu import build

if "--builds" in sys.argv:
    from specx.cpu import quant, quant_build

    if "--one-unit" in sys.argv:   # quant.c as one unit, as before
        quant_build.UNITS = 1

    for v in quant.variants():
        t = time.perf_counter()
        quant.load(v)
        print(f"quant {v}: {time.perf_counter() - t:.1f} s", flush=True)
    raise SystemExit

orig = build._Compile.finish


def timed(job):
    t = time.perf_counter()
    orig(job)
    print(f"{job.spec.name.split('-')[0]} done after {time.perf_counter() - t0:.1f} s ({job.spec.units} units)",
          flush=True)


build._Compile.finish = timed
if "--one-by-one" in sys.argv:   # as before kernels.ahead: each library compiled at its first use
    from specx.cpu import kernels

    kernels._state["asked"] = True
t0 = time.perf_counter()
import specx  # noqa: E402

pair = specx.load(os.path.expanduser("~/.cache/specx-fixture-models/smollm2-135m.gguf"), "none")
print(f"load, kernels included: {time.perf_counter() - t0:.1f} s")
specx.generate(pair, "Hi", max_tokens=4)
print(f"first answer, all included: {time.perf_counter() - t0:.1f} s")
