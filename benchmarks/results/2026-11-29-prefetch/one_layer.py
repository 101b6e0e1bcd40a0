"""The prefetch timing as it was (one Q4_K 8960x1536 layer, 16 copies per way, timed.time_options), twice in each
order of the ways."""
import numpy as np, time, statistics
from specx.cpu import quant, timed
lib = quant._default()
def way(nbytes, l2):
    def make(w):
        rng = np.random.default_rng(0)
        rows, cols = w.shape
        copies = [quant.random_weight("Q4_K", rows, cols, rng, extreme=False) for _ in range(16)]
        turn = iter(range(1 << 62))
        def run(x):
            lib.prefetch(nbytes, l2)
            return lib.matmul(x, [copies[next(turn) % len(copies)]], "q8")
        return run
    return make
for order in (["into L1 and L2", "off", "into L1"], ["off", "into L1", "into L1 and L2"]):
    opts = {n: way(*quant.PREFETCH_WAYS[n]) for n in order}
    for _ in range(2):
        print(timed.time_options("pf", opts).ms)
