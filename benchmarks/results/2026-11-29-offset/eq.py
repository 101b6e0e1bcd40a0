"""The current AVX-512 build against an earlier build's .so: every q8 result equal (10 types, K 64-4864 with
partial groups, ordinary and extreme blocks, 1-17 rows, 1 and 2 threads).

    python eq.py OLD.so             (BUILD=avx2 with an old AVX2 build's .so: the AVX2 build without VNNI)"""
import os, numpy as np, torch, sys
from specx.cpu import quant, build
from specx.cpu.quant_ref import random_weight
new = quant.load(os.environ['BUILD'], False) if os.environ.get('BUILD') else quant._library()
raw = build.load(sys.argv[1])
for n in ("spx_matmul",):
    f, g = getattr(new.lib, n), getattr(raw, n); g.argtypes, g.restype = f.argtypes, f.restype
old = quant.Library(new.name, new.vnni, raw, sys.argv[1], False, new.vbmi)
rng = np.random.default_rng(1)
bad = 0
for typ in ("Q4_0", "Q5_0", "Q5_1", "Q4_1", "Q8_0", "IQ4_NL", "IQ4_XS", "Q4_K", "Q6_K", "Q3_K"):
    for K in (64, 896, 1024, 4864):
        if (typ[-2:] == "_K" or typ == "IQ4_XS") and K % 256: continue
        for extreme in (False, True):
            w = random_weight(typ, 37, K, rng, extreme=extreme)
            for R in range(1, 18):
                for thr in (1, 2):
                    torch.set_num_threads(thr)
                    x = torch.randn(R, K) * (100 if extreme else 1)
                    a, b = old.matmul(x, [w], "q8"), new.matmul(x, [w], "q8")
                    if not torch.equal(a, b): bad += 1; print("DIFF", typ, K, extreme, R, thr, (a-b).abs().max())
print("bad", bad)
