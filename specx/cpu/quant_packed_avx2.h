/* quant.c's AVX2 q8 kernels on packed tiles (quant_packed.h states the layouts), included by it after
   quant_packed_q8.h: packed Q4_K (KIND_G), packed Q6_K with groups (KIND_G6) and packed Q4_0 (kind S, a model
   drafter's re-encoded layers), the AVX-512 kernels' arithmetic to the bit in 256-bit vectors. A tile's 64-byte
   vectors are read as two halves, the first holding rows 0-7 and the second rows 8-15 (quant_packed.h's pair_lane
   keeps a row's lanes within its half, and `packs` and `hadd` work within 128-bit lanes). Each block's halves are
   decoded one after the other, except Q4_K's from 4 rows, which sweep a group (in L1) once per half and nibble
   (quant_packed_avx2_q4k.h); a tile is read from memory once either way (a pass over the whole tile per half ran
   1.1-1.3× the time at 1 row: benchmarks/results/2026-12-01-avx2). Q6_K per 32 values (kind S) stays AVX-512's:
   this build runs it only on the file's layout, and cpu/packing.py packs for it only where it runs q8 with
   groups. */
#if defined(SPX_AVX2)
/* Σ over n vectors of each 32-bit lane's 4 products w[c]·x[c] (w unsigned, x signed), added to `start`: vpdpbusd
   with AVX-VNNI; without it each `maddubs` pair is added as int16 first, then one `madd` makes the dwords. The same
   integer where no int16 overflows: callers keep n·2·q·127 ≤ 32767 (Q4_K, Q4_0: 4 vectors of q ≤ 15; Q6_K: 2 of
   q ≤ 63) */
static inline __attribute__((always_inline)) __m256i lanes_sum(__m256i start, const __m256i *w, const __m256i *x,
                                                               const int n) {
#if SPX_VNNI
#pragma GCC unroll 4
    for (int c = 0; c < n; ++c) start = _mm256_dpbusd_avx_epi32(start, w[c], x[c]);
    return start;
#else
    __m256i p = _mm256_maddubs_epi16(w[0], x[0]);
#pragma GCC unroll 4
    for (int c = 1; c < n; ++c) p = _mm256_add_epi16(p, _mm256_maddubs_epi16(w[c], x[c]));
    return _mm256_add_epi32(start, _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
#endif
}

static inline __attribute__((always_inline)) __m256i dot2w(__m256i acc, __m256i a, __m256i b) {   /* int16 pairs */
#if SPX_VNNI
    return _mm256_dpwssd_avx_epi32(acc, a, b);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
#endif
}

static inline __attribute__((always_inline)) __m256i pair16(__m256i s32) {   /* each dword's low 16 bits twice */
    const __m128i at = _mm_setr_epi32(0x01000100, 0x05040504, 0x09080908, 0x0D0C0D0C);
    return _mm256_shuffle_epi8(s32, _mm256_broadcastsi128_si256(at));
}

/* Row 8h + o's byte of 16 (one per row of a tile) widened to lane o: unsigned or signed */
static inline __attribute__((always_inline)) __m256i half_u8(__m128i b, int h) {
    return _mm256_cvtepu8_epi32(h ? _mm_srli_si128(b, 8) : b);
}
static inline __attribute__((always_inline)) __m256i half_i8(const uint8_t *p) {
    return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p));
}

#include "quant_packed_avx2_q4k.h"

/* half h of block v's 6-bit values q (0..63) of a Q6_K tile: w0[c] the low-nibble rows', w1[c] the high ones' */
static inline __attribute__((always_inline)) void q6_half(const uint8_t *v, int h, __m256i *w0, __m256i *w1) {
    const __m256i hb = _mm256_set1_epi8(0x30), nib = _mm256_set1_epi8(15);
    const __m256i h0 = _mm256_loadu_si256((const __m256i *)(v + 256 + 32 * h));
    const __m256i h1 = _mm256_loadu_si256((const __m256i *)(v + 320 + 32 * h));
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {   /* the high 2 bits (at 2c) moved to bits 4-5, then bits 0-3 from the nibble */
        const __m256i q = _mm256_loadu_si256((const __m256i *)(v + 64 * c + 32 * h));
        const __m256i t0 = c < 2 ? _mm256_slli_epi16(h0, 4 - 2 * c) : c == 2 ? h0 : _mm256_srli_epi16(h0, 2);
        const __m256i t1 = c < 2 ? _mm256_slli_epi16(h1, 4 - 2 * c) : c == 2 ? h1 : _mm256_srli_epi16(h1, 2);
        w0[c] = _mm256_or_si256(_mm256_and_si256(t0, hb), _mm256_and_si256(q, nib));
        w1[c] = _mm256_or_si256(_mm256_and_si256(t1, hb), _mm256_and_si256(_mm256_srli_epi16(q, 4), nib));
    }
}

/* R rows of xg against one Q6_K tile, KIND_G6's arithmetic as the AVX-512 packed_tile_q6g computes it, a block's
   two halves one after the other as for Q4_K (1 row: 0.74-0.78× the time of a pass per half) */
static inline __attribute__((always_inline)) void packed_tile_q6g(const int R, const uint8_t *tile, int64_t G,
                                                                  const uint8_t *next, const uint8_t *xg,
                                                                  int64_t xstride, float *y, int64_t ldy) {
    __m256 acc[2][PACK_RMAX];
    const int64_t ahead = __atomic_load_n(&prefetch_bytes, __ATOMIC_RELAXED);
#pragma GCC unroll 9
    for (int r = 0; r < R; ++r) acc[0][r] = acc[1][r] = _mm256_setzero_ps();
    for (int64_t g = 0; g < G; ++g) {
        const uint8_t *grp = tile + g * PACK_GROUP_Q6;
        __m256i S[2][PACK_RMAX];
#pragma GCC unroll 9
        for (int r = 0; r < R; ++r) S[0][r] = S[1][r] = _mm256_setzero_si256();
#pragma GCC unroll 1
        for (int j = 0; j < 8; ++j) {
            const uint8_t *v = grp + 288 + j * 384;
            sweep_prefetch(v, 384, ahead, next ? next + g * PACK_GROUP_Q6 + j * Q6_STEP : 0, Q6_STEP);
#pragma GCC unroll 2
            for (int h = 0; h < 2; ++h) {
                const uint8_t *sc = grp + 32 + 32 * j + 8 * h;
                const __m256i c0 = pair16(half_i8(sc)), c1 = pair16(half_i8(sc + 16));
                __m256i w0[4], w1[4];
                q6_half(v, h, w0, w1);
#pragma GCC unroll 9
                for (int r = 0; r < R; ++r) {
                    const uint8_t *xr = xg + r * xstride, *xb = xr + QKK * g + QK * j;
                    const uint8_t *ns = xr + XG6_NS(G) + 4 * (32 * g + 4 * j);
#pragma GCC unroll 2
                    for (int b = 0; b < 2; ++b) {
                        const __m256i n = _mm256_set1_epi64x((long long)rd64(ns + 8 * b));
                        const __m256i xv[2] = {_mm256_set1_epi64x((long long)rd64(xb + 16 * b)),
                                               _mm256_set1_epi64x((long long)rd64(xb + 16 * b + 8))};
                        const __m256i t0 = lanes_sum(n, w0 + 2 * b, xv, 2), t1 = lanes_sum(n, w1 + 2 * b, xv, 2);
                        S[h][r] = dot2w(S[h][r], _mm256_packs_epi32(t0, t1), b ? c1 : c0);
                    }
                }
            }
        }
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(grp + 16 * h)));
#pragma GCC unroll 9
            for (int r = 0; r < R; ++r) {
                const __m256 D = _mm256_set1_ps(((const float *)(xg + r * xstride + QKK * G))[g]);
                acc[h][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(S[h][r]), _mm256_mul_ps(d, D), acc[h][r]);
            }
        }
    }
#pragma GCC unroll 9
    for (int r = 0; r < R; ++r) {
        _mm256_storeu_ps(y + r * ldy, acc[0][r]);
        _mm256_storeu_ps(y + r * ldy + 8, acc[1][r]);
    }
}

/* R rows of X quantized per 32 values in the packed order (xp: xp_from_xq) against one Q4_0 tile, kind S as the
   AVX-512 packed_tile_q40 computes it (its sweep, its 16 running sums per output, its trees), each unit's halves
   one after the other */
static inline __attribute__((always_inline)) void packed_tile_q40(const int R, const uint8_t *tile, int64_t K,
                                                                  const uint8_t *next, const uint8_t *xp,
                                                                  int64_t xstride, float *y, int64_t ldy) {
    const int64_t NB = K / QK, G = xp_groups(K);
    const int64_t ahead = __atomic_load_n(&prefetch_bytes, __ATOMIC_RELAXED);
    const __m256i nib = _mm256_set1_epi8(15);
    __m256 sums[RMAX][2][16];
    for (int j = 0; j < 8; ++j) {
        __m256 acc0[2][RMAX], acc1[2][RMAX];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc0[0][r] = acc0[1][r] = acc1[0][r] = acc1[1][r] = _mm256_setzero_ps();
        const int64_t u0 = q40_unit(NB, j, 0), n = q40_groups(NB, j);
        for (int64_t g = 0; g < n; ++g) {
            const uint8_t *u = tile + (u0 + g) * PACK_UNIT_Q40;
            const int64_t at = j * G + g;
            sweep_prefetch(u, PACK_UNIT_Q40, ahead, next ? next + (u0 + g) * PACK_UNIT_Q40 : 0, PACK_UNIT_Q40);
#pragma GCC unroll 2
            for (int h = 0; h < 2; ++h) {   /* rows 8h .. 8h + 7 */
                const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(u + 16 * h)));
                __m256i w0[4], w1[4];
#pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) {
                    const __m256i q = _mm256_loadu_si256((const __m256i *)(u + 32 + 64 * c + 32 * h));
                    w0[c] = _mm256_and_si256(q, nib);
                    w1[c] = _mm256_and_si256(_mm256_srli_epi16(q, 4), nib);
                }
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) {   /* a half's sum starts at −8·Σq (weights q − 8): xp's ns / 4 */
                    const uint8_t *xr = xp + r * xstride, *xb = xr + 32 * at;
                    const float *dx = (const float *)(xr + 32 * 8 * G);
                    const int32_t *ns = (const int32_t *)(dx + 16 * G);
                    __m256i x0[4], x1[4];
#pragma GCC unroll 4
                    for (int c = 0; c < 4; ++c) {
                        x0[c] = _mm256_set1_epi32((int)rd32(xb + 4 * c));
                        x1[c] = _mm256_set1_epi32((int)rd32(xb + 16 + 4 * c));
                    }
                    const __m256i s0 = lanes_sum(_mm256_set1_epi32(ns[2 * at] / 4), w0, x0, 4);
                    const __m256i s1 = lanes_sum(_mm256_set1_epi32(ns[2 * at + 1] / 4), w1, x1, 4);
                    const __m256 t = _mm256_mul_ps(d, _mm256_set1_ps(dx[at]));
                    acc0[h][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), t, acc0[h][r]);
                    acc1[h][r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), t, acc1[h][r]);
                }
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r)
            for (int h = 0; h < 2; ++h) sums[r][h][j] = acc0[h][r], sums[r][h][8 + j] = acc1[h][r];
    }
    for (int r = 0; r < R; ++r)   /* q8_result's trees, tree8(acc[j] + acc[8 + j]), 8 outputs at once */
        for (int h = 0; h < 2; ++h) {
            __m256 a[8];
            for (int j = 0; j < 8; ++j) a[j] = _mm256_add_ps(sums[r][h][j], sums[r][h][8 + j]);
            const __m256 even = _mm256_add_ps(_mm256_add_ps(a[0], a[4]), _mm256_add_ps(a[2], a[6]));
            const __m256 odd = _mm256_add_ps(_mm256_add_ps(a[1], a[5]), _mm256_add_ps(a[3], a[7]));
            _mm256_storeu_ps(y + r * ldy + 8 * h, _mm256_add_ps(even, odd));
        }
}

#if SPX_DRIVER
/* A group's Q6_K offsets (int32, 32 at ns) and Σq per block (int16, 8 at bs) from its q in order (256 bytes at
   q), the AVX-512 xg_sums' integers: lane (h, e) of block j, at 4j + 2h + e, is −32·(d[8j + 4h + e] +
   d[8j + 4h + 2 + e]) for d the sums of 4 values, and block j's Σq the sum of its 4 lanes' */
static inline void xg_sums(const uint8_t *q, uint8_t *bs, uint8_t *ns) {
    const __m256i ones = _mm256_set1_epi8(1), order = _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7);
    int16_t sums[8];
    for (int k = 0; k < 4; ++k) {   /* blocks 2k, 2k + 1 */
        __m256i s[2];
        for (int i = 0; i < 2; ++i) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)(q + 64 * k + 32 * i));
            const __m256i d = lanes_sum(_mm256_setzero_si256(), &ones, &v, 1);
            s[i] = _mm256_add_epi32(d, _mm256_shuffle_epi32(d, 0x4E));   /* (a + c, b + d, ..) in each 128-bit lane */
        }   /* block 2k's 4 lane sums, then block 2k + 1's */
        const __m256i lanes = _mm256_permutevar8x32_epi32(_mm256_unpacklo_epi64(s[0], s[1]), order);
        const __m256i offsets = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(lanes, 5));
        _mm256_storeu_si256((__m256i *)(ns + 32 * k), offsets);
        int32_t l[8];
        _mm256_storeu_si256((__m256i *)l, lanes);
        sums[2 * k] = (int16_t)(l[0] + l[1] + l[2] + l[3]);
        sums[2 * k + 1] = (int16_t)(l[4] + l[5] + l[6] + l[7]);
    }
    memcpy(bs, sums, 16);
}

/* One row's group g of 256 values quantized straight into xg: quantize_row_simd's arithmetic with one scale for
   the group (its `whole`), so the same q and D, bit for bit (a NaN or an infinity in the group: D NaN, q 0) */
static inline void xg_group(const float *x, uint8_t *o, int64_t G, int64_t g) {
    const __m256i absmask = _mm256_set1_epi32(0x7fffffff);
    __m256i m = _mm256_setzero_si256();
    for (int i = 0; i < 32; ++i)
        m = _mm256_max_epu32(m, _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(x + 8 * i)), absmask));
    __m128i m4 = _mm_max_epu32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
    m4 = _mm_max_epu32(m4, _mm_shuffle_epi32(m4, 0x4E));
    m4 = _mm_max_epu32(m4, _mm_shuffle_epi32(m4, 0xB1));
    const uint32_t top = (uint32_t)_mm_cvtsi128_si32(m4);
    const int bad = top >= 0x7f800000u;
    float amax;
    memcpy(&amax, &top, 4);
    const float d = bad ? NAN : amax / 127.0f;
    const __m256 id = _mm256_set1_ps(inverse_scale(d, bad)), lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
    uint8_t *q = o + QKK * g;
    for (int i = 0; i < 8; ++i) {
        __m256i n[4];
        for (int k = 0; k < 4; ++k)
            n[k] = bad ? _mm256_setzero_si256()
                       : _mm256_cvtps_epi32(_mm256_min_ps(
                             _mm256_max_ps(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * i + 8 * k), id), lo), hi));
        const __m256i b = _mm256_permutevar8x32_epi32(   /* 32 bytes in order (packs interleave 128-bit lanes) */
            _mm256_packs_epi16(_mm256_packs_epi32(n[0], n[1]), _mm256_packs_epi32(n[2], n[3])),
            _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)(q + 32 * i), b);
    }
    memcpy(o + QKK * G + 4 * g, &d, 4);
    xg_sums(q, o + (QKK + 4) * G + 16 * g, o + XG6_NS(G) + 4 * 32 * g);
}
#endif
#endif
