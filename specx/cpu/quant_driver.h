/* quant.c's driver (unit 0 alone, included by it after the kernels and quant_dispatch.h): how a call's segments are
   cut among the threads, each range's rows passed over its weight tiles by the kernel the range's type takes, and
   spx_matmul, which checks a call, quantizes its rows the ways its weights take them and runs the ranges. */

static int decoded_on = 1;
/* DECODED on (1) or off (0; tests and benchmarks compare), -1 changes nothing; returns the previous setting, or -1
   where this build has no DECODED path */
int32_t spx_set_decoded(int32_t on) {
    const int was = decoded_on;
    if (on >= 0) decoded_on = on != 0;
    return SPX_DECODED ? was : -1;
}

/* Rows [0, R) (R <= RMAX) of X against `nout` consecutive weight rows starting at w. */
static void kernel(int type, int mode, const float *x, const uint8_t *xq, int64_t R, int64_t K,
                   const uint8_t *w, int64_t nout, int64_t rowbytes, float *y, int64_t ldy) {
#ifdef SPX_SIMD
    simd_kernel(type, mode, x, xq, R, K, w, nout, rowbytes, y, ldy);
    return;
#endif
    if (mode == MODE_Q8 && !is_float_type(type))
        portable_q8(type, xq, R, K, w, nout, rowbytes, y, ldy);
    else
        portable_f32(type, x, R, K, w, nout, rowbytes, y, ldy);
}

/* A call of SPLIT_ROWS rows or more cuts its weight bytes into SPLIT_PER_THREAD parts a thread, taken in turn as
   the threads finish: such a call is bound by the cores, and halves fixed in advance left one thread waiting on
   the other (the split weighs a Q6_K byte as a Q4_K one, and a shared core slows one thread). A call of fewer rows,
   bound by memory, keeps one part a thread, read in order (8 parts cost 2 rows up to 6%: benchmarks/results/
   2026-12-02-zen3). The AVX-512 builds keep one part a thread at every row count: their kernels still read 5-9
   rows at the memory's pace, and 4 parts a thread cost a Zen 4's 5- and 9-token forwards 1-3% and gained its
   prompt pass nothing (benchmarks/results/2026-12-02-zen4) */
#define SPLIT_ROWS 3
#ifdef SPX_AVX512
#define SPLIT_PER_THREAD 1
#else
#define SPLIT_PER_THREAD 4
#endif

#if SPX_DECODED
/* This thread's DECODED buffer for a call of M rows of a K-value weight type, *tile set to the outputs it holds;
   or 0, *tile unchanged, where the call takes no such buffer (too few rows, float weights, turned off, no memory,
   a row longer than the buffer) */
static wq *decoded_buffer(int type, const uint8_t *xq, int64_t M, int64_t K, int64_t *tile) {
    static _Thread_local wq *dec;   /* allocated at the thread's first such call and kept */
    const int64_t outputs = DECODED_BYTES / ((K + QKK - 1) / QKK * (int64_t)sizeof(wq));
    if (!xq || M < 2 * RMAX || is_float_type(type) || !decoded_on || outputs < 1) return 0;
    if (!dec) dec = aligned_alloc(64, DECODED_BYTES);
    if (dec) *tile = outputs;
    return dec;
}
#endif

/* Outputs [n0, n1) of one segment for all M rows: a long X is cut into chunks that stay in cache, each
   chunk's rows pass over a tile of weights in groups of at most RMAX (with DECODED, a tile the buffer holds
   decoded, stored by a chunk's first RMAX rows and read by its next full groups). */
static void segment_rows(int type, int mode, const float *x, const uint8_t *xq, int64_t M, int64_t K,
                         const uint8_t *w, int64_t rowbytes, int64_t n0, int64_t n1, float *y, int64_t ldy) {
    const int64_t xrow = mode == MODE_Q8 && !is_float_type(type) ? xq_stride(K) : K * 4;
    int64_t chunk = XCHUNK_BYTES / xrow;
    chunk = chunk < RMAX ? RMAX : chunk / RMAX * RMAX;
    int64_t tile = TILE_BYTES / rowbytes;
    if (tile < 1) tile = 1;
#if SPX_DECODED
    wq *dec = decoded_buffer(type, xq, M, K, &tile);
#endif
    for (int64_t m0 = 0; m0 < M; m0 += chunk) {
        const int64_t m1 = m0 + chunk < M ? m0 + chunk : M;
        for (int64_t t0 = n0; t0 < n1; t0 += tile) {
            const int64_t t1 = t0 + tile < n1 ? t0 + tile : n1;
            for (int64_t r = m0; r < m1; r += RMAX) {
                const int64_t R = m1 - r < RMAX ? m1 - r : RMAX;
#if SPX_DECODED
                if (dec && R == RMAX && m1 - m0 >= 2 * RMAX) {
                    decoded_kernel(type, r == m0, xq + r * xq_stride(K), K, w + t0 * rowbytes, t1 - t0, rowbytes, dec,
                                   y + r * ldy + t0, ldy);
                    continue;
                }
#endif
                kernel(type, mode, x + r * K, xq ? xq + r * xq_stride(K) : 0, R, K, w + t0 * rowbytes, t1 - t0,
                       rowbytes, y + r * ldy + t0, ldy);
            }
        }
    }
}

/* Y (M x Σrows, row-major) = X (M x K) · [W_0; W_1; …]ᵀ, segment s being rows[s] rows of ggml type types[s]
   at data[s]. All outputs of all segments are cut into contiguous ranges of about equal weight bytes, one a
   thread for a call of a few rows and SPLIT_PER_THREAD a thread for more (SPLIT_ROWS), the threads taking them
   in turn (each range read once, by one thread; which thread computes an output never changes its bits).
   Returns 0, 1 when memory for the quantized X could not be allocated, 2 for a type without a kernel (quant.py
   refuses those first). */
int spx_matmul(const float *x, int64_t M, int64_t K, int32_t nseg, const int32_t *types,
               const uint8_t *const *data, const int64_t *rows, float *y, int32_t mode, int32_t threads) {
    int64_t N = 0, total = 0;
    int quantized = 0, packed = 0, packed_g = 0, unpacked_g = 0;
    if (mode < MODE_F32 || mode > MODE_Q8K || nseg < 0) return 2;
    int32_t kinds[nseg > 0 ? nseg : 1];   /* the segments' types as the kernels take them (MODE_Q8K: the _G ones) */
    for (int s = 0; s < nseg; ++s) {
        if (types[s] == T_Q4_K_G || types[s] == T_Q6_K_G || types[s] == T_Q6_K_PG) return 2;   /* never a caller's */
        kinds[s] = mode != MODE_Q8K ? types[s] : types[s] == T_Q4_K ? T_Q4_K_G : types[s] == T_Q6_K ? T_Q6_K_G
                   : types[s] == T_Q6_K_P16 ? T_Q6_K_PG : types[s];
    }
    /* packed Q4_K's kernel computes KIND_G only (packed Q6_K both: T_Q6_K_PG is its KIND_G6); every other step
       treats MODE_Q8K as MODE_Q8 */
    for (int s = 0; s < nseg; ++s)
        if (types[s] == T_Q4_K_P16 && mode != MODE_Q8K) return 2;
    mode = mode == MODE_F32 ? MODE_F32 : MODE_Q8;
    types = kinds;
    for (int s = 0; s < nseg; ++s) {
        if (!block_values(types[s]) || K % block_values(types[s])) return 2;
#if defined(SPX_AVX512)
        if (is_packed(types[s]) && (mode != MODE_Q8 || rows[s] % PACK_ROWS)) return 2;
#elif defined(SPX_AVX2)   /* its packed kernels: Q4_K and Q6_K with groups, Q4_0 */
        if (is_packed(types[s]) && (mode != MODE_Q8 || rows[s] % PACK_ROWS || types[s] == T_Q6_K_P16)) return 2;
#else
        if (is_packed(types[s])) return 2;   /* only the AVX-512 and AVX2 builds' q8 kernels read the packed layout */
#endif
        packed |= is_packed(types[s]) && !group_scaled(types[s]);
        packed_g |= is_packed(types[s]) && group_scaled(types[s]);
        N += rows[s];
        total += rows[s] * (K / block_values(types[s]) * block_bytes(types[s]));
        quantized |= !is_float_type(types[s]) && !group_scaled(types[s]);
        unpacked_g |= group_scaled(types[s]) && !is_packed(types[s]);
    }
    if (M <= 0 || N <= 0) return 0;
    prefetch_for(M);
    /* q8: X quantized per 32 values (xq) for the weights that take that, per 256 (xk) for KIND_G's */
    uint8_t *xq = 0, *xk = 0;
    if (mode == MODE_Q8 && quantized) {
        xq = aligned_alloc(64, M * xq_stride(K));
        if (!xq) return 1;
    }
    /* a call whose grouped weights are all packed quantizes X straight into their layout (xg), without xk */
    if (mode == MODE_Q8 && unpacked_g) {
        xk = aligned_alloc(64, M * xq_stride(K));
        if (!xk) {
            free(xq);
            return 1;
        }
    }
    if (xq || xk) {
        /* a few rows are quantized by the calling thread: a second parallel region would cost more */
#pragma omp parallel for num_threads(threads) schedule(static) if (M * K > QUANTIZE_ALONE)
        for (int64_t m = 0; m < M; ++m)
            for (int whole = 0; whole < 2; ++whole) {
                uint8_t *out = whole ? xk : xq;
                if (!out) continue;
#ifdef SPX_SIMD
                quantize_row_simd(x + m * K, K, out + m * xq_stride(K), whole);
#else
                quantize_row(x + m * K, K, out + m * xq_stride(K), whole);
#endif
            }
    }
    uint8_t *xpack = 0;   /* AMX: the quantized rows repacked (quant_amx.h), when this call takes that path */
#if SPX_AMX
    int amx = 0;
    for (int s = 0; s < nseg; ++s) amx |= amx_type(types[s]);
    if (amx && amx_on && xq && M >= AMX_MIN_ROWS) {
        xpack = aligned_alloc(64, amx_x_bytes(M, K));
        if (xpack) amx_pack_x(xq, M, K, xpack, threads);   /* without the memory: the VNNI kernels */
    }
#endif
    uint8_t *xp = 0, *xg = 0;   /* packed segments' activations (quant_packed_driver.h): per 32 values (Q4_0, Q6_K), per 256 (Q4_K) */
    int amx_g = 0;   /* AMX: the grouped packed segments (quant_amx_packed.h) take this call, xg then padded to 16 rows */
#if SPX_AMX
    for (int s = 0; s < nseg; ++s) amx_g |= amx_on && M >= AMX_MIN_ROWS && amxp_type(types[s]);
#endif
#if defined(SPX_AVX512) || defined(SPX_AVX2)
    if (packed || packed_g) {
        const int64_t mg = amx_g ? (M + 15) / 16 * 16 : M;
        xp = packed ? aligned_alloc(64, M * xp_stride(K)) : 0;
        xg = packed_g ? aligned_alloc(64, mg * xg_stride(K)) : 0;
        if (xg && mg > M) memset(xg + M * xg_stride(K), 0, (mg - M) * xg_stride(K));
        if ((packed && !xp) || (packed_g && !xg)) {
            free(xp);
            free(xg);
            free(xq);
            free(xk);
            return 1;
        }
        if (xp) xp_from_xq(xq, M, K, xp, threads);
        if (xg && xk) xg_from_xk(xk, M, K, xg, threads);
        else if (xg) xg_from_x(x, M, K, xg, threads);
    }
#endif
    const int64_t parts = M >= SPLIT_ROWS ? (int64_t)threads * SPLIT_PER_THREAD : threads;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
    for (int64_t part = 0; part < parts; ++part) {
        const int64_t lo = total * part / parts, hi = total * (part + 1) / parts;   /* this part's bytes */
        int64_t start = 0, col = 0;
        for (int s = 0; s < nseg; ++s) {
            const int64_t rb = K / block_values(types[s]) * block_bytes(types[s]), bytes = rows[s] * rb;
            /* outputs whose first byte lies in [lo, hi) */
            int64_t a = lo <= start ? 0 : (lo - start + rb - 1) / rb, b = hi <= start ? 0 : (hi - start + rb - 1) / rb;
            if (is_packed(types[s])) {   /* whole tiles: both ends rounded alike, so the threads' ranges still meet */
                a = (a + PACK_ROWS - 1) / PACK_ROWS * PACK_ROWS;
                b = (b + PACK_ROWS - 1) / PACK_ROWS * PACK_ROWS;
            }
            if (a > rows[s]) a = rows[s];
            if (b > rows[s]) b = rows[s];
            int done = a >= b;
#if SPX_AMX
            if (!done && xpack && amx_type(types[s]))
                done = !amx_segment_rows(types[s], xpack, M, K, data[s], rb, a, b, y + col, N);
#endif
#if SPX_AMX
            if (!done && amx_g && amxp_type(types[s]))
                done = !amxp_segment(types[s], xg, M, K, data[s], a, b, y + col, N);
#endif
#if defined(SPX_AVX512) || defined(SPX_AVX2)
            if (!done && is_packed(types[s])) {
                packed_segment(types[s], group_scaled(types[s]) ? xg : xp, M, K, data[s], a, b, y + col, N);
                done = 1;
            }
#endif
            if (!done) segment_rows(types[s], mode, x, group_scaled(types[s]) ? xk : xq, M, K, data[s], rb, a, b, y + col, N);
            start += bytes;
            col += rows[s];
        }
    }
    free(xpack);
    free(xp);
    free(xg);
    free(xq);
    free(xk);
    return 0;
}
