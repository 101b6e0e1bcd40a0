"""Whole 1.5B target, float32 rowgemm: the previous kernel against the current one, alternating in one process.

    git show 3d79b8c:specx/kernels/rowgemm.c > /tmp/base.c
    gcc -O3 -mavx2 -mfma -mf16c -fopenmp -ffp-contract=off -shared -fPIC /tmp/base.c -o /tmp/base.so
    OLD=/tmp/base.so python old_vs_new.py [MODEL]
"""
import os, sys, time, statistics
from pathlib import Path
from specx.kernels import rowgemm
from specx.runtime.models import load_lm, resolve
M = os.path.expanduser('~/.cache/specx-fixture-models')
model = sys.argv[1] if len(sys.argv) > 1 else f'{M}/qwen2.5-coder-1.5b.gguf'
lm = load_lm(resolve(model), "float32", "none")
assert "rowgemm" in lm.kernels, lm.kernels
libs = {'old': rowgemm._open(Path(os.environ.get('OLD', '/tmp/base.so'))), 'new': rowgemm._library()}
context = [(i * 7919) % 20000 + 100 for i in range(123)]
sizes = [1, 2, 5, 9, 17, 33]
res = {}
for rep in range(int(os.environ.get('R', 5))):
    for kind in (('old', 'new') if rep % 2 == 0 else ('new', 'old')):
        rowgemm._state['lib'] = libs[kind]
        lm.reset(); t = time.perf_counter(); lm.forward(context, last_only=True)
        res.setdefault((kind, 'prompt'), []).append(time.perf_counter() - t)
        for n in sizes:
            best = float('inf')
            for _ in range(4):
                t = time.perf_counter(); lm.forward(list(range(500, 500 + n))); best = min(best, time.perf_counter() - t)
                lm.crop(len(context))
            res.setdefault((kind, n), []).append(best)
for key in ['prompt', *sizes]:
    a, b = (statistics.median(res[(k, key)]) for k in ('old', 'new'))
    print(f"{str(key):>7}: old {a*1e3:7.0f} ms  new {b*1e3:7.0f} ms  new/old {b/a:.2f}", flush=True)
