/* Y = X · Wᵀ on the CPU with W kept in its GGUF block format (quant.py is the API and states the rules).

   Rules every build keeps:
   - Batch invariance: the result for (row m, output n) is computed by one thread, by one sequence of
     operations that depends on neither the number of rows in the call, the row's position, nor the
     thread count. Rows share each decoded weight block (that is the speed), never a reduction.
   - "f32" mode: every weight is decoded to exactly gguf's float32 value (w = d·q, d·q + m, (d·sc)·q − dmin·m,
     all exact products followed by at most the one rounding gguf does) and multiplied into float32 X.
     Each build sums in its own lanes, so builds differ by float noise only.
   - "q8" mode: each row of X is quantized alone, per 32 values, to int8 with one float scale (quantize_row);
     the integer dot product of each half block (16 values) is exact, and the float steps after it are one
     fixed sequence per lane of 16 running sums (block mod 8, half), then a fixed tree (q8 arithmetic below).
     Every build does that same arithmetic, so q8 results are bit-identical across the AVX-512, AVX2 and
     portable builds.
   - "q8" with groups (MODE_Q8K): "q8", except that Q4_K and Q6_K weights (KIND_G and KIND_G6 below) take the row
     quantized per 256 values (one scale a group, llama.cpp's Q8_K), so that a group's block sums stay integers:
     per group the exact int32 S = Σ_j sc_j·S_j (and Q4_K's M = Σ_j m_j·Σq_j), then one fma each into one running
     sum, groups in order. A call holding both kinds of weights quantizes its rows both ways. Every build computes
     it, bit-identical across builds; quant.py runs it where it is the faster: the AVX-512 and AVX2 builds, whose
     packed kernels take it (AVX-512: a verify's and a prompt's rows through Q4_K a fifth to a quarter cheaper,
     through Q6_K up to a seventh; AMX's prompt passes on packed tiles keep a group's sums in the tiles,
     quant_amx_packed.h; benchmarks/results/2026-11-30-q8k, 2026-11-30-q6k; AVX2's file-layout kernels keep a
     group's sums in the lanes of one weight row and lose by it, but its packed ones run 0.5-0.8× the time of its
     per-32 file-layout kernels: benchmarks/results/2026-12-01-avx2).
   Compiled with -ffp-contract=off (the compiler never fuses what is written as a product and a sum).
   This file: the settings and the driver; the rules in code are quant_blocks.h (exact decoding) and quant_q8.h
   (the q8 arithmetic), quant_portable.h the kernels every build has; the vector kernels are quant_avx512.h and
   quant_avx2.h (activations, q8 decoding; quant_avx512_decode.h the AVX-512 one), their _rows.h (q8 sums) and
   _f32.h (f32) parts, chosen by the build's flags, and quant_dispatch.h
   picks a call's kernel instance; quant_packed.h holds layouts
   of Q4_0, Q4_K and Q6_K (T_Q4_0_P16, T_Q4_K_P16, T_Q6_K_P16, made at load), quant_packed_q8.h the AVX-512 q8
   kernels on them, the same arithmetic to the bit, quant_packed_avx2.h the AVX2 ones (Q4_K, Q6_K with groups), and
   quant_packed_driver.h their activations and segments. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__F16C__) && defined(__FMA__)
#define SPX_AVX512 1
#include <immintrin.h>
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define SPX_AVX2 1
#include <immintrin.h>
#endif

/* Units. A first run waits for this file's compile (benchmarks/results/2026-11-30-units), so build.py compiles it
   as SPX_UNITS units in parallel and links them: unit 0 (SPX_UNIT=0) holds all but the vector kernels' instances,
   unit u >= 1 the instances UNIT_u lists (quant_dispatch.h). Without SPX_UNIT the file is one unit, as before.
   The settings the kernels read (prefetching, XSPAN) live in unit 0 and are shared by name (SPX_SHARED). */
#define SPX_UNITS 5
#ifdef SPX_UNIT
#define SPX_DRIVER (SPX_UNIT == 0)
#define SPX_SHARED __attribute__((visibility("hidden")))
#else
#define SPX_DRIVER 1
#define SPX_SHARED static
#endif

enum { T_F32 = 0, T_F16 = 1, T_Q4_0 = 2, T_Q4_1 = 3, T_Q5_0 = 6, T_Q5_1 = 7, T_Q8_0 = 8, T_Q2_K = 10,
       T_Q3_K = 11,
       T_Q4_K = 12, T_Q5_K = 13, T_Q6_K = 14, T_BF16 = 30 };
enum { T_IQ4_NL = 20, T_IQ4_XS = 23 };
enum { T_Q4_0_P16 = 102, T_Q4_K_P16 = 112, T_Q6_K_P16 = 114 };   /* not ggml types: Q4_0, Q4_K and Q6_K with 16 rows packed together
                                                   (quant_packed.h), never a file's */
enum { T_Q4_K_G = 212, T_Q6_K_G = 214, T_Q6_K_PG = 314 };   /* not ggml types: Q4_K, Q6_K and packed Q6_K in the
                              q8 mode with activations per 256 values (KIND_G, KIND_G6), what spx_matmul calls such a
                              segment of a MODE_Q8K call (packed Q4_K computes KIND_G only: it keeps its type) */
enum { MODE_F32 = 0, MODE_Q8 = 1, MODE_Q8K = 2 };   /* MODE_Q8K: MODE_Q8 with Q4_K as KIND_G, Q6_K as KIND_G6 */

#define QK 32          /* values per block of the 32-value types, and per activation block in q8 mode */
#define QKK 256        /* values per K-type superblock; also one q8 "group" of 8 activation blocks */
#define RMAX 8         /* activation rows that share one decoded weight block (register blocking) */
#define TILE_BYTES 49152   /* a thread computes its outputs in tiles of about this many weight bytes, so a
                              tile stays in L1/L2 while every row group of a long prompt passes over it */
#define XCHUNK_BYTES (1 << 20)   /* at most this many bytes of X per pass over the weights (stays in L2) */
#define QUANTIZE_ALONE 65536     /* q8: up to this many values of X are quantized by one thread (microseconds) */

/* q8 activations, per row: for each group of 256 values (8 blocks of 32), XG bytes:
   u[256]   the int8 values q plus 128 (as unsigned bytes); byte 64k + 32h + 4j + t holds value 32j + 16h + 4k + t
            of the group (block j, half h), so a 64-byte vector k has 4 values of half h of block j in its
            32-bit lane 8h + j (the SIMD kernels decode weights into the same order);
   s[256]   the same values q as signed bytes, in the same order;
   dx[16]   the blocks' float scales, lane 8h + j = dx of block j (twice, for 16-lane arithmetic);
   xs[8]    dx·Σq per block (float);
   xh[16]   dx·Σq per half block (float), lane 8h + j: the min term of Q2_K, whose mins are per 16 values;
   ns[16]   −16·Σq per half block (int16: |Σq| <= 16·127), lane 8h + j, in the 32 bytes after xs: the SIMD
            kernels' X_OFFSET (quant_simd.h).
   Quantized per 256 values (KIND_G's and KIND_G6's rows, xk), the same layout with one scale in all 8 blocks' dx.
   The integer products pair unsigned with signed bytes (VNNI, maddubs): weights that are never negative
   (unsigned_weights) take q as it is; signed weights take q + 128 and subtract 128·Σw, a sum over the
   weights alone (decoded once for all rows), except in the SIMD kernels' short calls (X_OFFSET). Values past the row's end are zeros with scale 0.
   TAIL: a weight row of a 32-value type whose last group holds fewer than 8 blocks (K = 896, 576, 640) is
   still decoded 8 blocks at a time, reading on into the next row of the same call, and the extra blocks'
   weight scales are set to zero: against zero activations (q = 0, dx = 0) their lanes then add exactly what
   zero blocks add (s = 0, t = +0), so results equal a zero-padded copy's bit for bit without copying. The
   call's last row, whose next bytes may lie outside the tensor, is copied into zero padding instead. */
#define XG 704
#define XG_S 256
#define XG_DX 512
#define XG_XS 576
#define XG_NS 608
#define XG_XH 640

static inline int64_t xq_stride(int64_t K) { return (K + QKK - 1) / QKK * XG; }

/* XSPAN: a q8 pass of R rows over one weight row reads XG_READ activation bytes per row and group (the
   values for its weights' sign, the scales, one min term). Where a whole row's worth is more than L1 holds
   (K = 8960: 35 groups, 67 KB at 5 rows), every output would read them again from L2, which with several
   rows costs more than the weights' own reads. Such calls (more than 1.5 xspan_bytes: three quarters of the
   L1 data cache, which the weights' stream shares) cut the groups into equal spans whose activations fit
   xspan_bytes (quant.py sets half of the machine's L1 data cache; this default is half of the smallest,
   32 KiB), and up to XSPAN_OUTS outputs pass over each span in turn, keeping their sums in memory between
   spans. */
#define XG_READ 384
#define XSPAN_BYTES 16384
#define XSPAN_OUTS 16
#if SPX_DRIVER
SPX_SHARED int64_t xspan_bytes = XSPAN_BYTES;   /* spx_set_xspan: 0 never cuts (tests and benchmarks compare) */
int64_t spx_set_xspan(int64_t bytes) {   /* returns the previous setting; bytes < 0: changes nothing */
    const int64_t was = xspan_bytes;
    if (bytes >= 0) xspan_bytes = bytes;
    return was;
}
#else
extern SPX_SHARED int64_t xspan_bytes;
#endif
static inline int64_t xspan(int64_t R, int64_t groups) {
    const int64_t total = R * groups * XG_READ;
    if (R == 1 || !xspan_bytes || 2 * total <= 3 * xspan_bytes) return groups;   /* within L1 itself: whole */
    const int64_t spans = (total + xspan_bytes - 1) / xspan_bytes;
    return (groups + spans - 1) / spans;
}

#include "quant_blocks.h"

#include "quant_q8.h"

#include "quant_portable.h"

/* How far ahead of its reads a thread prefetches weights into L1 (0: not at all), and whether it also asks for
   the lines twice as far ahead into L2 (quant.py chooses both, per machine). A call of one row, which waits on
   memory, may look farther ahead (prefetch_one bytes; -1: as far as the others), chosen per machine too. Each call
   sets prefetch_now, the distance its kernels read (atomically: two callers at once only change speeds). None of
   them changes a result. */
#if SPX_DRIVER
SPX_SHARED int64_t prefetch_bytes = 0;
SPX_SHARED int64_t prefetch_one = -1;
SPX_SHARED int64_t prefetch_now = 0;
SPX_SHARED int prefetch_l2 = 0;
int64_t spx_set_prefetch(int64_t bytes) {   /* returns the previous setting */
    const int64_t was = prefetch_bytes;
    prefetch_bytes = bytes;
    return was;
}
int64_t spx_set_prefetch_one(int64_t bytes) {   /* returns the previous setting; bytes < -1: changes nothing */
    const int64_t was = prefetch_one;
    if (bytes >= -1) prefetch_one = bytes;
    return was;
}
int spx_set_prefetch_l2(int32_t on) {   /* returns the previous setting; on < 0: changes nothing */
    const int was = prefetch_l2;
    if (on >= 0) prefetch_l2 = on != 0;
    return was;
}
/* the distance a call of M rows prefetches at: off stays off */
static void prefetch_for(int64_t M) {
    const int64_t d = prefetch_bytes && M == 1 && prefetch_one >= 0 ? prefetch_one : prefetch_bytes;
    __atomic_store_n(&prefetch_now, d, __ATOMIC_RELAXED);
}
#else
extern SPX_SHARED int64_t prefetch_bytes;
extern SPX_SHARED int64_t prefetch_now;
extern SPX_SHARED int prefetch_l2;
#endif

#include "quant_simd.h"

#include "quant_avx512.h"
#include "quant_avx512_decode.h"
#include "quant_avx512_rows.h"
#include "quant_avx512_f32.h"
#include "quant_avx2.h"
#include "quant_avx2_rows.h"
#include "quant_avx2_f32.h"

#include "quant_packed.h"
#include "quant_packed_q8.h"
#include "quant_packed_avx2.h"
#include "quant_packed_driver.h"

#if SPX_DRIVER
#include "quant_amx.h"
#endif

#include "quant_dispatch.h"
#ifndef SPX_DECODED
#define SPX_DECODED 0
#endif

/* ---------------------------------------------------------------- unit 0 alone from here */
#if SPX_DRIVER
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

/* ---------------------------------------------------------------- the driver */

/* A call of SPLIT_ROWS rows or more cuts its weight bytes into SPLIT_PER_THREAD parts a thread, taken in turn as
   the threads finish: such a call is bound by the cores, and halves fixed in advance left one thread waiting on
   the other (the split weighs a Q6_K byte as a Q4_K one, and a shared core slows one thread). A call of fewer rows,
   bound by memory, keeps one part a thread, read in order (8 parts cost 2 rows up to 6%: benchmarks/results/
   2026-12-02-zen3) */
#define SPLIT_ROWS 3
#define SPLIT_PER_THREAD 4

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

/* Rows ids[0..n) of a weight (K values each) decoded to gguf's float32 values: out is n x K. */
void spx_dequantize_rows(int32_t type, const uint8_t *data, int64_t K, const int64_t *ids, int64_t n, float *out) {
    const int per = block_values(type), bytes = block_bytes(type);
    if (!per) return;
    const int64_t rb = K / per * bytes;
    if (is_packed(type)) {   /* each row unpacked to the file's blocks first */
        uint8_t *row = malloc(rb);
        if (!row) return;
        for (int64_t i = 0; i < n; ++i) {
            unpack_row(type, data, K, ids[i], row);
            for (int64_t b = 0; b < K / per; ++b)
                decode_block(packed_file_type(type), row + b * bytes, out + i * K + b * per);
        }
        free(row);
        return;
    }
    for (int64_t i = 0; i < n; ++i)
        for (int64_t b = 0; b < K / per; ++b) decode_block(type, data + ids[i] * rb + b * bytes, out + i * K + b * per);
}

/* Which build this is: 2 AVX-512, 1 AVX2, 0 portable; +4 when its integer dot products are VNNI, +8 when it
   has the AMX path (quant_amx.h). */
int spx_build(void) {
#if defined(SPX_AVX512)
    return 2 + 4 * SPX_VNNI + 8 * SPX_AMX + 16 * SPX_VBMI;
#elif defined(SPX_AVX2)
    return 1 + 4 * SPX_VNNI;
#else
    return 0;
#endif
}

/* The sum of n bytes (n a multiple of 256) read by `threads` threads, each its own contiguous part, with the
   kernels' prefetching for a call of one row: the benchmark's measure of this machine's read bandwidth, in the
   same library. */
uint64_t spx_stream_sum(const uint8_t *p, int64_t n, int32_t threads) {
    uint64_t total = 0;
    prefetch_for(1);
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
        int id = 0, nt = 1;
#ifdef _OPENMP
        id = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        int64_t a = n / 256 * id / nt * 256, b = n / 256 * (id + 1) / nt * 256;
        uint64_t s[4] = {0, 0, 0, 0};
        for (int64_t i = a; i < b; i += 64) {
#ifdef SPX_SIMD
            prefetch_ahead(p + i, 64);   /* as the kernels read their weights */
#endif
            for (int k = 0; k < 8; ++k) {
                uint64_t v;
                memcpy(&v, p + i + 8 * k, 8);
                s[k & 3] += v;
            }
        }
        total += s[0] + s[1] + s[2] + s[3];
    }
    return total;
}
#endif /* SPX_DRIVER */
