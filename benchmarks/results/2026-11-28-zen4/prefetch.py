"""1-token forwards of a GGUF on the lean decoder with each weight-prefetching way of quant.c (PREFETCH_WAYS),
rotating call by call after a 300-token prompt; medians and the median paired ratio to "off".

    python prefetch.py MODEL.gguf [REPS]"""
import statistics, time, sys
from pathlib import Path
from specx.cpu import quant
from specx.decoder import lm as lean
model = lean.load(Path(sys.argv[1]), mode="q8")
lib = quant._default()
print(quant.describe(detail=True))
ways = quant.PREFETCH_WAYS
prompt = [(i * 7919) % 1000 + 100 for i in range(300)]
model.reset(); model.forward(prompt)
times = {k: [] for k in ways}
for r in range(int(sys.argv[2]) if len(sys.argv) > 2 else 40):
    for k in (list(ways)[r % 3:] + list(ways)[:r % 3]):
        lib.prefetch(*ways[k]); model.crop(300)
        t = time.perf_counter(); model.forward([prompt[r]]); times[k].append(time.perf_counter() - t)
for k, v in times.items():
    print(k, f"{statistics.median(v)*1e3:.1f} ms", "ratio to off", f"{statistics.median(a/b for a, b in zip(v, times['off'])):.3f}")
