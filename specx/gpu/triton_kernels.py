"""The Triton kernels of qmatmul.py (imported only where they run: Triton is PyTorch's GPU compiler, present with
CUDA builds of torch). Rules and layout: blocks.py and qmatmul.py."""
import triton
import triton.language as tl

# blocks.py's value rules, as the kernel's RULE (qmatmul.RULES)
ZERO, LUT, KMIN, MIN = tl.constexpr(0), tl.constexpr(1), tl.constexpr(2), tl.constexpr(3)


@triton.jit
def block_matmul(x_ptr, y_ptr, part_ptr, bias_ptr, lo_ptr, hi_ptr, d_ptr, sc_ptr, dmin_ptr, m_ptr, lut_ptr,
                 T, N, K, stride_x, stride_y,
                 HB: tl.constexpr, S: tl.constexpr, G: tl.constexpr, SC: tl.constexpr, RULE: tl.constexpr,
                 Z: tl.constexpr, PER: tl.constexpr, SPLIT: tl.constexpr, BIAS: tl.constexpr, F32: tl.constexpr,
                 BN: tl.constexpr, CH: tl.constexpr):
    """Rows 16·pid(2) … of Y = X·Wᵀ for W's rows BN·pid(0) …, over split pid(1)'s PER 64-value chunks.

    Each group of E values (a group, at most half a chunk) is one tl.dot of the rows' x by the group's values
    v, scaled after: acc += (x·v)·(d·sc) + (Σx)·o (blocks.py's weight (d·sc)·v + o, factored). A row's result
    depends only on its own x: the launch (BN, CH, splits) is a function of the matrix alone, and the rows
    always go 16 to a program. SPLIT: write float32 partial sums (split, T, N) that sum_splits adds in order.
    F32: the dot in float32 (the interpreter, which has no bfloat16 dot); else in x's own dtype, exact for v."""
    pid_n = tl.program_id(0)
    pid_s = tl.program_id(1)
    pid_t = tl.program_id(2)
    E: tl.constexpr = G if G < 32 else 32
    R: tl.constexpr = 32 // E
    n = pid_n * BN + tl.arange(0, BN)
    nm = n < N
    t = pid_t * 16 + tl.arange(0, 16)
    tm = t < T
    e = tl.arange(0, E)
    nl = n.to(tl.int64)
    lo_row = lo_ptr + nl[:, None] * (K // 2)
    hi_row = hi_ptr + nl[:, None] * (K * HB // 8)
    x_row = x_ptr + t[:, None].to(tl.int64) * stride_x
    d_row = d_ptr + nl * (K // S)
    g_row = nl * (K // G)
    acc = tl.zeros((16, BN), dtype=tl.float32)
    for i in range(0, PER, CH):   # this split's PER chunks, CH a step
        for u in tl.static_range(CH):
            c = pid_s * PER + i + u
            for r in tl.static_range(R):
                b = tl.load(lo_row + c * 32 + r * E + e[None, :], mask=nm[:, None], other=0)
                for h in tl.static_range(2):
                    j = h * 32 + r * E + e                       # the values' places in the chunk
                    q = ((b >> (4 * h)) & 15).to(tl.int32)
                    if HB > 0:
                        hb = tl.load(hi_row + c * (8 * HB) + (j[None, :] * HB) // 8, mask=nm[:, None], other=0)
                        q = q | (((hb.to(tl.int32) >> ((j[None, :] * HB) % 8)) & ((1 << HB) - 1)) << 4)
                    if RULE == LUT:
                        v = tl.load(lut_ptr + q)
                    elif RULE == ZERO:
                        v = q - Z
                    else:
                        v = q
                    xk = tl.load(x_row + c * 64 + j[None, :], mask=tm[:, None], other=0.0)
                    if F32:
                        p = tl.dot(xk.to(tl.float32), tl.trans(v.to(tl.float32)), input_precision="ieee")
                    else:
                        p = tl.dot(xk, tl.trans(v.to(xk.dtype)))
                    g = (c * 64 + h * 32 + r * E) // G
                    a = tl.load(d_row + g // (S // G), mask=nm, other=0.0).to(tl.float32)
                    if SC:
                        a = a * tl.load(sc_ptr + g_row + g, mask=nm, other=0).to(tl.float32)
                    acc += p * a[None, :]
                    if RULE >= KMIN:
                        if RULE == KMIN:
                            o = -(tl.load(dmin_ptr + nl * (K // S) + g // (S // G), mask=nm, other=0.0).to(tl.float32)
                                  * tl.load(m_ptr + g_row + g, mask=nm, other=0).to(tl.float32))
                        else:
                            o = tl.load(m_ptr + g_row + g, mask=nm, other=0.0).to(tl.float32)
                        acc += tl.sum(xk.to(tl.float32), axis=1)[:, None] * o[None, :]
    keep = tm[:, None] & nm[None, :]
    if SPLIT:
        tl.store(part_ptr + (pid_s * T + t[:, None]).to(tl.int64) * N + n[None, :], acc, mask=keep)
    else:
        if BIAS:
            acc += tl.load(bias_ptr + n, mask=nm, other=0.0).to(tl.float32)[None, :]
        tl.store(y_ptr + t[:, None].to(tl.int64) * stride_y + n[None, :], acc.to(y_ptr.dtype.element_ty), mask=keep)


@triton.jit
def sum_splits(part_ptr, y_ptr, bias_ptr, T, N, stride_y, SPLITS: tl.constexpr, BIAS: tl.constexpr,
               BLOCK: tl.constexpr):
    """y[t] = Σ_s part[s, t] (+ bias), in split order: the same sum whatever the other rows."""
    t = tl.program_id(0)
    n = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    nm = n < N
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for s in range(0, SPLITS):
        acc += tl.load(part_ptr + (s * T + t).to(tl.int64) * N + n, mask=nm, other=0.0)
    if BIAS:
        acc += tl.load(bias_ptr + n, mask=nm, other=0.0).to(tl.float32)
    tl.store(y_ptr + t.to(tl.int64) * stride_y + n, acc.to(y_ptr.dtype.element_ty), mask=nm)
