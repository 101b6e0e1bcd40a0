"""Seconds from the interpreter's start to the model being ready (specx.api.prepare returned) in a 1-token run."""
import os, sys, time
import specx.api as api
real = api.prepare
def prepare(*a, **k):
    try:
        return real(*a, **k)
    finally:
        print(f"READY {time.perf_counter() - T0:.3f}", file=sys.stderr)
T0 = float(os.environ["T0"]) if "T0" in os.environ else time.perf_counter()
api.prepare = prepare
from specx.cli import main
main()
