"""A windowed layer (window 512, row by row past it) against a global one, Gemma-3-270M's attention shape, hot."""
import time, torch, sys, statistics
from specx.cpu import attention as A
torch.manual_seed(0)
heads, kv, d, cap, window = 4, 1, 256, 4096, 512
def mk(w):
    k, v = A.cache_tensors(kv, cap, d); k, v = k[0].normal_(), v[0].normal_()
    ang = torch.arange(cap).float()[:, None] * (1.0 / (1e4 ** (torch.arange(0, d, 2).float() / d)))
    return A.Attention(k, v, ang.cos().contiguous(), ang.sin().contiguous(), None, None, heads, 1e-6, d ** -0.5, w)
for T, start in [(5, 1000), (16, 1000), (512, 512), (512, 3584)]:
    qkv = torch.randn(T, (heads + 2 * kv) * d); pos = torch.arange(start, start + T)
    out = {}
    for name, w in (("window512", window), ("global", 0)):
        L = mk(w); ts = []
        for r in range(5 if T > 64 else 21):
            t = time.perf_counter(); A.attention(L, qkv, start, pos); ts.append(time.perf_counter() - t)
        out[name] = statistics.median(ts) * 1e3
    print(T, start, {k: f"{v:.3f} ms" for k, v in out.items()})
