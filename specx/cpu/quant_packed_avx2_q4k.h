/* quant_packed_avx2.h's packed Q4_K kernel (included by it): packed_tile, R rows of xg (xg_from_x) against one
   Q4_K tile, y[r·ldy + o] for its 16 outputs, KIND_G's arithmetic in each lane as the AVX-512 packed_tile computes
   it. Two sweeps of the same bits: up to PASSES_FROM − 1 rows one pass over a group's blocks; from PASSES_FROM
   rows four passes over the group in L1, with fewer instructions a row and more a group. On an AMD Zen 3, hot,
   a row cost 7.3 cycles a 256-value group against 9.9 and a group 29 against 21 (they break even at 3.2 rows),
   and the 1.5B's Q4_K matrices took 0.77-0.95× the time at 5 and 9 rows, while four passes ran 2 rows
   1.12-1.16× the time (benchmarks/results/2026-12-02-zen3). */
#define PASSES_FROM 4

/* The end of group g for half h: each row's acc += S·d·D − (its mins · the activations' block sums)·dmin·D, the
   float steps of the AVX-512 kernel in its order (both sweeps close a half so) */
static inline __attribute__((always_inline)) void q4k_close_half(const int R, int h, const __m128i *mins,
                                                                 const uint8_t *grp, int64_t G, int64_t g,
                                                                 const uint8_t *xg, int64_t xstride,
                                                                 const __m256i *S, __m256 *acc) {
    __m256i mp[4];
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p)
        mp[p] = _mm256_or_si256(half_u8(mins[2 * p], h), _mm256_slli_epi32(half_u8(mins[2 * p + 1], h), 16));
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(grp + 16 * h)));
    const __m256 dm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(grp + 32 + 16 * h)));
#pragma GCC unroll 9
    for (int r = 0; r < R; ++r) {
        const uint8_t *xr = xg + r * xstride, *bs = xr + (QKK + 4) * G + 16 * g;
        __m256i M = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) M = dot2w(M, mp[p], _mm256_set1_epi32((int)rd32(bs + 4 * p)));
        const __m256 D = _mm256_set1_ps(((const float *)(xr + QKK * G))[g]);
        acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(S[r]), _mm256_mul_ps(d, D), acc[r]);
        acc[r] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(M), _mm256_mul_ps(dm, D), acc[r]);
    }
}

/* packed_tile for fewer rows: a block's two halves one after the other, each lane's two sums packed and scaled
   as the AVX-512 kernel does (its vectors read once: 0.81-0.92× the time of a pass per half at 1 and 5 rows,
   benchmarks/results/2026-12-01-avx2) */
static inline __attribute__((always_inline)) void q4k_tile_pairs(const int R, const uint8_t *tile, int64_t G,
                                                                 const uint8_t *next, const uint8_t *xg,
                                                                 int64_t xstride, float *y, int64_t ldy) {
    __m256 acc[2][PACK_RMAX];
    const __m256i nib = _mm256_set1_epi8(15);
    const int64_t ahead = __atomic_load_n(&prefetch_bytes, __ATOMIC_RELAXED), step = PACK_GROUP_Q4 / 8;
#pragma GCC unroll 9
    for (int r = 0; r < R; ++r) acc[0][r] = acc[1][r] = _mm256_setzero_ps();
    for (int64_t g = 0; g < G; ++g) {
        const uint8_t *grp = tile + g * PACK_GROUP_Q4;
        __m256i S[2][PACK_RMAX];
        __m128i mins[8];
#pragma GCC unroll 9
        for (int r = 0; r < R; ++r) S[0][r] = S[1][r] = _mm256_setzero_si256();
#pragma GCC unroll 1
        for (int j = 0; j < 8; ++j) {
            const uint8_t *v = grp + 256 * (1 + j);
            sweep_prefetch(v, 256, ahead, next ? next + g * PACK_GROUP_Q4 + j * step : 0, step);
            __m128i scb;
            packed_ints(grp, j, &scb, &mins[j]);
#pragma GCC unroll 2
            for (int h = 0; h < 2; ++h) {   /* rows 8h .. 8h + 7: bytes 32h .. of each vector */
                const __m256i sc = pair16(half_u8(scb, h));
                __m256i w0[4], w1[4];
#pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) {
                    const __m256i q = _mm256_loadu_si256((const __m256i *)(v + 64 * c + 32 * h));
                    w0[c] = _mm256_and_si256(q, nib);
                    w1[c] = _mm256_and_si256(_mm256_srli_epi16(q, 4), nib);
                }
#pragma GCC unroll 9
                for (int r = 0; r < R; ++r) {
                    const uint8_t *xb = xg + r * xstride + QKK * g + QK * j;
                    __m256i xv[4];
#pragma GCC unroll 4
                    for (int c = 0; c < 4; ++c) xv[c] = _mm256_set1_epi64x((long long)rd64(xb + 8 * c));
                    const __m256i t0 = lanes_sum(_mm256_setzero_si256(), w0, xv, 4);
                    const __m256i t1 = lanes_sum(_mm256_setzero_si256(), w1, xv, 4);
                    S[h][r] = dot2w(S[h][r], _mm256_packs_epi32(t0, t1), sc);   /* a lane's sums fit 16 bits */
                }
            }
        }
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) q4k_close_half(R, h, mins, grp, G, g, xg, xstride, S[h], acc[h]);
    }
#pragma GCC unroll 9
    for (int r = 0; r < R; ++r) {
        _mm256_storeu_ps(y + r * ldy, acc[0][r]);
        _mm256_storeu_ps(y + r * ldy + 8, acc[1][r]);
    }
}

/* Block j's scales (scb: row o's at byte o) as the operand that scales a lane's sum for the rows of half h whose
   values sit in nibble n: lane 4k + i of the half holds row 8h + 4k + i/2 + 2n's sum over its values e = i % 2
   (quant_packed.h's pair_lane, pair_shift); the scale in both 16-bit halves of the lane for `madd` against a
   pair of int16 sums, or in the low one for VNNI's `dpwssd` against one 32-bit sum (which fits 16 bits) */
static inline __attribute__((always_inline)) __m256i lane_scales(__m128i scb, int h, int n) {
    const int b = 8 * h + 2 * n;
#define SPX_LANE_SCALE(o) \
    (SPX_VNNI ? (int)(0x80808000u | (unsigned)(o)) : (int)(0x80008000u | (unsigned)(o) << 16 | (unsigned)(o)))
    const __m256i at = _mm256_setr_epi32(SPX_LANE_SCALE(b), SPX_LANE_SCALE(b), SPX_LANE_SCALE(b + 1),
                                         SPX_LANE_SCALE(b + 1), SPX_LANE_SCALE(b + 4), SPX_LANE_SCALE(b + 4),
                                         SPX_LANE_SCALE(b + 5), SPX_LANE_SCALE(b + 5));
#undef SPX_LANE_SCALE
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(scb), at);
}

/* S + sc·(each lane's 16 products of w[0..3] with the 32 activations at xb, 8 broadcast at a time): the int16
   pair sums (8 products each, q ≤ 15: they fit) scaled and added by one `madd`; with VNNI the 32-bit sum by one
   `dpwssd` */
static inline __attribute__((always_inline)) __m256i scaled_sum(__m256i S, const __m256i *w, const uint8_t *xb,
                                                                __m256i sc) {
#if SPX_VNNI
    __m256i t = _mm256_setzero_si256();
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c)
        t = _mm256_dpbusd_avx_epi32(t, w[c], _mm256_set1_epi64x((long long)rd64(xb + 8 * c)));
    return _mm256_dpwssd_avx_epi32(S, t, sc);
#else
    __m256i p = _mm256_maddubs_epi16(w[0], _mm256_set1_epi64x((long long)rd64(xb)));
#pragma GCC unroll 3
    for (int c = 1; c < 4; ++c)
        p = _mm256_add_epi16(p, _mm256_maddubs_epi16(w[c], _mm256_set1_epi64x((long long)rd64(xb + 8 * c))));
    return _mm256_add_epi32(S, _mm256_madd_epi16(p, sc));
#endif
}

/* packed_tile for PASSES_FROM rows or more. A group is swept four times, once per half h (rows 8h ..) and nibble
   n (the rows in lanes' low or high nibbles), each pass keeping its rows' sums in registers: a lane's sum over its
   16 values is scaled as it is added (lane_scales), and a row's two lanes (e = 0, 1) are added at the group's end,
   the low-nibble rows' lanes and the high ones' making the rows in order (`hadd`). The same integers as a `packs`
   of the two sums against the scale twice; without VNNI eight `maddubs` need two `madd` where they took three
   and a `packs`, and no row's sum is spilled. `next` as there, each pass asking for a quarter of a block's prefetches
   so that memory is asked for through all four. */
static inline __attribute__((always_inline)) void q4k_tile_passes(const int R, const uint8_t *tile, int64_t G,
                                                                  const uint8_t *next, const uint8_t *xg,
                                                                  int64_t xstride, float *y, int64_t ldy) {
    __m256 acc[2][PACK_RMAX];
    const __m256i nib = _mm256_set1_epi8(15);
    const int64_t ahead = __atomic_load_n(&prefetch_bytes, __ATOMIC_RELAXED), step = PACK_GROUP_Q4 / 8;
#pragma GCC unroll 9
    for (int r = 0; r < R; ++r) acc[0][r] = acc[1][r] = _mm256_setzero_ps();
    for (int64_t g = 0; g < G; ++g) {
        const uint8_t *grp = tile + g * PACK_GROUP_Q4;
        __m128i scb[8], mins[8];
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) packed_ints(grp, j, &scb[j], &mins[j]);
#pragma GCC unroll 1
        for (int h = 0; h < 2; ++h) {   /* rows 8h .. 8h + 7: bytes 32h .. of each vector */
            __m256i low[PACK_RMAX], S[PACK_RMAX];
#pragma GCC unroll 2
            for (int n = 0; n < 2; ++n) {
#pragma GCC unroll 9
                for (int r = 0; r < R; ++r) S[r] = _mm256_setzero_si256();
#pragma GCC unroll 1
                for (int j = 0; j < 8; ++j) {
                    const uint8_t *v = grp + 256 * (1 + j);
                    const int k = 2 * h + n;   /* the pass: each asks for a quarter of what a block's step asks */
                    const uint8_t *ahead_l2 = next ? next + g * PACK_GROUP_Q4 + (8 * k + j) * (step / 4) : 0;
                    sweep_prefetch(v + 64 * k, 64, ahead, ahead_l2, step / 4);
                    const __m256i sc = lane_scales(scb[j], h, n);
                    __m256i w[4];
#pragma GCC unroll 4
                    for (int c = 0; c < 4; ++c) {
                        const __m256i q = _mm256_loadu_si256((const __m256i *)(v + 64 * c + 32 * h));
                        w[c] = _mm256_and_si256(n ? _mm256_srli_epi16(q, 4) : q, nib);
                    }
#pragma GCC unroll 9
                    for (int r = 0; r < R; ++r) S[r] = scaled_sum(S[r], w, xg + r * xstride + QKK * g + QK * j, sc);
                }
#pragma GCC unroll 9
                for (int r = 0; r < R; ++r) low[r] = n ? _mm256_hadd_epi32(low[r], S[r]) : S[r];
            }
            q4k_close_half(R, h, mins, grp, G, g, xg, xstride, low, acc[h]);
        }
    }
#pragma GCC unroll 9
    for (int r = 0; r < R; ++r) {
        _mm256_storeu_ps(y + r * ldy, acc[0][r]);
        _mm256_storeu_ps(y + r * ldy + 8, acc[1][r]);
    }
}

static inline __attribute__((always_inline)) void packed_tile(const int R, const uint8_t *tile, int64_t G,
                                                              const uint8_t *next, const uint8_t *xg,
                                                              int64_t xstride, float *y, int64_t ldy) {
    if (R < PASSES_FROM) q4k_tile_pairs(R, tile, G, next, xg, xstride, y, ldy);
    else q4k_tile_passes(R, tile, G, next, xg, xstride, y, ldy);
}
