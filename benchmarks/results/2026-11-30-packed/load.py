"""Loading the 1.5B target (lean decoder, q8, copied to 2 MiB pages) with its Q4_K layers packed and with the
file's layout (SPECX_PACK=0), alternating, 4 each: median seconds. Usage: python load.py"""
import os
import statistics
import time

from specx.decoder import lm as lean

path = os.path.expanduser("~/.cache/specx-fixture-models/qwen2.5-coder-1.5b.gguf")
res = {"packed": [], "file": []}
for rep in range(4):
    for name in (("packed", "file") if rep % 2 else ("file", "packed")):
        if name == "file":
            os.environ["SPECX_PACK"] = "0"
        else:
            os.environ.pop("SPECX_PACK", None)
        t = time.perf_counter()
        model = lean.load(path, mode="q8")
        res[name].append(time.perf_counter() - t)
        assert ("packed 16 rows" in model.kernels) == (name == "packed")
        del model
print({k: f"{statistics.median(v):.2f} s" for k, v in res.items()})
