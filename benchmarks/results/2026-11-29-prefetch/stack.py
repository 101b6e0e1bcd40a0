"""The prefetch timing on a stack of 6 1.5B-shaped Q4_K_M layers (what quant.prefetch_choice now times), at 1+5
and 1+3 rows, twice in each order of the ways."""
import numpy as np, time, statistics, torch
from specx.cpu import quant, timed
from specx.cpu.quant_ref import random_weight
lib = quant._default()
H, I, QKV, LAYERS = 1536, 8960, 2048, 6
rng = np.random.default_rng(0)
t0 = time.perf_counter()
def layer():
    return [random_weight("Q4_K", QKV, H, rng, extreme=False), random_weight("Q4_K", H, H, rng, extreme=False),
            random_weight("Q4_K", 2 * I, H, rng, extreme=False), random_weight("Q6_K", H, I, rng, extreme=False)]
stack = [layer() for _ in range(LAYERS)]
print("built", time.perf_counter() - t0)
xi = {}
def way(nbytes, l2):
    def make(w):
        def run(x):
            lib.prefetch(nbytes, l2)
            r = x.shape[0]
            if r not in xi: xi[r] = torch.randn(r, I, generator=torch.Generator().manual_seed(r))
            for qkv, o, gu, down in stack:
                lib.matmul(x, [qkv], "q8"); lib.matmul(x, [o], "q8"); lib.matmul(x, [gu], "q8"); lib.matmul(xi[r], [down], "q8")
        return run
    return make
for rows in ((1, 5), (1, 3)):
    timed.ROWS = rows
    for order in (["into L1 and L2", "off", "into L1"], ["off", "into L1", "into L1 and L2"]):
        opts = {n: way(*quant.PREFETCH_WAYS[n]) for n in order}
        t0 = time.perf_counter()
        print(rows, timed.time_options("pf", opts).ms, f"{time.perf_counter()-t0:.2f}s")
