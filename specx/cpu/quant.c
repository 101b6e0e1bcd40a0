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
   This file: the settings and unit 0's other exports (rows dequantized, the build's id, the stream read);
   quant_driver.h the driver (spx_matmul: a call's ranges among the threads; spx_set_decoded). The rules in code are quant_blocks.h (exact decoding) and quant_q8.h (the q8
   arithmetic), quant_portable.h the kernels every build has; the vector kernels are quant_avx512.h and
   quant_avx2.h (activations, q8 decoding; quant_avx512_decode.h the AVX-512 one), their _rows.h (q8 sums) and
   _f32.h (f32) parts, chosen by the build's flags, and quant_dispatch.h picks a call's kernel instance;
   quant_packed.h holds layouts of Q4_0, Q4_K and Q6_K (T_Q4_0_P16, T_Q4_K_P16, T_Q6_K_P16, made at load),
   quant_packed_q8.h the AVX-512 q8 kernels on them, the same arithmetic to the bit, quant_packed_avx2.h the AVX2
   ones (Q4_K, Q6_K with groups), and quant_packed_driver.h their activations and segments. */
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
#include "quant_driver.h"

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
