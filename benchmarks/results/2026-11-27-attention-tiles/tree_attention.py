"""The masked path (a chain given as a tree mask, row by row) against the plain causal call (rows sharing key reads),
1.5B's attention shape, hot, medians of 41."""
import time, torch, statistics
from specx.cpu import attention as A
torch.manual_seed(0)
heads, kv, d, cap = 12, 2, 128, 4096
k, v = A.cache_tensors(kv, cap, d); k, v = k[0].normal_(), v[0].normal_()
ang = torch.arange(cap).float()[:, None] * (1.0 / (1e6 ** (torch.arange(0, d, 2).float() / d)))
L = A.Attention(k, v, ang.cos().contiguous(), ang.sin().contiguous(), None, None, heads, 1e-6, d ** -0.5)
for T in (4, 8, 16):
  for start in (300, 1000):
    qkv = torch.randn(T, (heads + 2 * kv) * d)
    chain = torch.arange(start, start + T)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))   # a chain as a tree mask: the masked path
    res = {}
    for name, kw in (("plain", {}), ("masked", {"mask": mask})):
        ts = []
        for r in range(41):
            t = time.perf_counter(); A.attention(L, qkv, start, chain, **kw); ts.append(time.perf_counter() - t)
        res[name] = statistics.median(ts) * 1e3
    print(T, start, {k: f"{v:.3f} ms" for k, v in res.items()})
