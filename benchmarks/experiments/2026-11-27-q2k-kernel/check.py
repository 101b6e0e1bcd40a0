"""Correctness of q2k.c: against gguf's dequantize(W) (float64) @ the q8-rounded X, against float X, and
batch invariance (a row alone equals the same row among 8 and among 16, bit for bit)."""
import numpy as np
import torch

import q2k
from specx.cpu.quant_ref import quantize_rows

torch.set_num_threads(2)
lib = q2k.load()
shifted = q2k.load("/tmp/q2k-shift.so", shift=1)
rng = np.random.default_rng(1)
for rows, cols in [(37, 256), (64, 1536), (96, 8960)]:
    w = q2k.random_q2k(rows, cols, rng)
    ref_w = q2k.dequantize(w, rows, cols)
    x = torch.from_numpy(rng.standard_normal((16, cols), dtype=np.float32))
    q, d = quantize_rows(x.numpy())
    xq = (q * d[..., None].astype(np.float64)).reshape(16, cols)
    scale = np.abs(ref_w).max() * np.abs(xq).sum(axis=1).max()   # bound of |Σ w·x| for the error's scale
    for m in (1, 4, 8, 16):
        y = q2k.matmul(lib, x[:m].contiguous(), w, rows).numpy().astype(np.float64)
        exact, fp = xq[:m] @ ref_w.T, x[:m].numpy().astype(np.float64) @ ref_w.T
        err_q8 = np.abs(y - exact).max() / np.abs(exact).max()
        err_fp = np.linalg.norm(y - fp) / np.linalg.norm(fp)
        print(f"{rows}x{cols} M={m:2d}: max |y - W·q8(x)| / max|y| = {err_q8:.2e}, "
              f"rel. RMS vs float x = {err_fp:.2e}, max err / Σ|w·x| bound = {np.abs(y - exact).max() / scale:.1e}")
        assert err_q8 < 1e-5, err_q8
    alone = [q2k.matmul(lib, x[i:i + 1].contiguous(), w, rows) for i in range(16)]
    for m in (8, 16):
        together = q2k.matmul(lib, x[:m].contiguous(), w, rows)
        assert all(torch.equal(alone[i][0], together[i]) for i in range(m)), "batch invariance"
    torch.set_num_threads(1)
    assert torch.equal(q2k.matmul(lib, x, w, rows), q2k.matmul(lib, x, w, rows)), "thread count"
    one = q2k.matmul(lib, x, w, rows)
    torch.set_num_threads(2)
    assert torch.equal(one, q2k.matmul(lib, x, w, rows)), "1 vs 2 threads"
    assert torch.equal(one, q2k.matmul(shifted, x, w, rows)), "masked in place vs shifted"
    print(f"{rows}x{cols}: masked-in-place fields equal shifted ones bit for bit")
    print(f"{rows}x{cols}: each row bit-identical alone, among 8 and among 16, with 1 and 2 threads")
