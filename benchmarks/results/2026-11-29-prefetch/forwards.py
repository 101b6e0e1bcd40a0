"""Whole forwards of the 1.5B fixture after a 300-token prompt at 1, 2, 3 and 5 rows under each weight-prefetching
way, with and without XSPAN, the settings rotating round by round (logits are the same bits either way).

    python forwards.py REPEATS"""
import time, statistics, sys, itertools
from pathlib import Path
import specx
from specx.cpu import quant
F = Path("~/.cache/specx-fixture-models").expanduser()
pair = specx.load(str(F / "qwen2.5-coder-1.5b.gguf"), "none")
lm = pair.target
lib = quant._default()
xs0 = lib.xspan(-1); pf0 = lib.prefetch(0, False); lib.prefetch(*pf0)
print("xspan", xs0, "prefetch", pf0)
ids = list(range(1000, 1300))
lm.forward(ids, last_only=True)
B = quant.PREFETCH_BYTES
configs = {"off": (xs0, (0, False)), "off-noxspan": (0, (0, False)), "pfL1": (xs0, (B, False)),
           "pfL1L2": (xs0, (B, True)), "pfL1L2-noxspan": (0, (B, True))}
R = [1, 2, 3, 5]
res = {(c, r): [] for c in configs for r in R}
for rep in range(int(sys.argv[1])):
    for c, (xs, pf) in (list(configs.items()) if rep % 2 == 0 else list(configs.items())[::-1]):
        lib.xspan(xs); lib.prefetch(*pf)
        for r in R:
            t0 = time.perf_counter(); lm.forward(list(range(2000, 2000 + r))); dt = time.perf_counter() - t0
            lm.crop(300)
            res[(c, r)].append(dt * 1000)
for c in configs:
    m1 = statistics.median(res[(c, 1)])
    print(f"{c:<16}", "  ".join(f"{r}: {statistics.median(res[(c, r)]):6.2f} ({statistics.median(res[(c, r)])/m1:.2f})" for r in R))
