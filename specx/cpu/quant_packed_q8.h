/* quant.c's AVX-512 q8 kernels on packed tiles (quant_packed.h states the layouts and why, and holds what these
   share with the AVX2 ones, quant_packed_avx2.h), included by it after quant_packed.h: R rows of quantized
   activations against one tile of 16 weight rows, each lane of a vector of sums one output, the arithmetic of the
   file layout's kernels to the bit: Q4_K (KIND_G), Q4_0 (kind S, per 32 values), Q6_K per 32 values (kind S) or
   with groups (KIND_G6). quant_packed_driver.h lays out their activations and runs a segment's tiles. */
#if defined(SPX_AVX512)
static inline __attribute__((always_inline)) __m512i dot2w(__m512i acc, __m512i a, __m512i b) {   /* int16 pairs */
#if SPX_VNNI
    return _mm512_dpwssd_epi32(acc, a, b);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#endif
}

/* a dword lane's scale (−128..255) in both of its 16-bit halves: dpwssd's operand against a `packs` of half sums */
static inline __attribute__((always_inline)) __m512i pair16(__m512i s32) {   /* each dword's low 16 bits twice */
    return _mm512_shuffle_epi8(s32, _mm512_broadcast_i32x4(_mm_setr_epi32(0x01000100, 0x05040504, 0x09080908, 0x0D0C0D0C)));
}

/* The rows' lanes of a packed vector (quant_packed.h's pair_lane) in the rows' order: lane o of the result holds lane
   pair_lane(o) + e of lo (o % 4 < 2) or hi (the low- and the high-nibble rows' vectors) */
static inline __attribute__((always_inline)) __m512i unpair(__m512i lo, __m512i hi, int e) {
    const __m512i at = _mm512_set_epi32(30, 28, 14, 12, 26, 24, 10, 8, 22, 20, 6, 4, 18, 16, 2, 0);
    return _mm512_permutex2var_epi32(lo, _mm512_add_epi32(at, _mm512_set1_epi32(e)), hi);
}

/* Q4_K's mins of a tile's group as int16 pairs against the activations' block sums: lane o of pair p holds
   (m_2p, m_2p+1) of row o (KIND_G's M); min_sum is one activation row's M, its Σq of the group's 8 blocks (int16)
   at bs */
static inline __attribute__((always_inline)) __m512i min_pair(const __m128i *mins, int p) {
    return _mm512_or_si512(_mm512_cvtepu8_epi32(mins[2 * p]), _mm512_slli_epi32(_mm512_cvtepu8_epi32(mins[2 * p + 1]), 16));
}

static inline __attribute__((always_inline)) __m512i min_sum(const __m512i *mp, const uint8_t *bs) {
    __m512i M = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) M = dot2w(M, mp[p], _mm512_set1_epi32((int)rd32(bs + 4 * p)));
    return M;
}

static inline __attribute__((always_inline)) __m512 tree8_lanes(const __m512 *a) {   /* tree8, 16 outputs at once */
    return _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6])),
                         _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7])));
}

/* R rows of X quantized per 256 values in the Q4_K kernel's order (xg, a row every xstride bytes: xg_from_x)
   against one Q4_K tile: y[r·ldy + o] for its 16 outputs, KIND_G's arithmetic (quant.c) in each lane (a block's
   scaled sum sc·(half 0 + half 1) is one dpwssd on the packed halves: quant_packed.h says why). `next`:
   the tile read after this one (0: none), brought into L2 in order, an eighth of a group per step: part of how
   this layout is read, so it does not follow the timed prefetching choice. That choice decides the L1 requests:
   the values a step reads are asked for prefetch_bytes ahead, or not at all where prefetching is off. */
static inline __attribute__((always_inline)) void packed_tile(const int R, const uint8_t *tile, int64_t G,
                                                              const uint8_t *next, const uint8_t *xg,
                                                              int64_t xstride, float *y, int64_t ldy) {
    __m512 acc[PACK_RMAX];
    const __m512i nib = _mm512_set1_epi8(15);
    const int64_t ahead = __atomic_load_n(&prefetch_bytes, __ATOMIC_RELAXED), step = PACK_GROUP_Q4 / 8;
#pragma GCC unroll 9
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t g = 0; g < G; ++g) {
        const uint8_t *grp = tile + g * PACK_GROUP_Q4;
        __m512i S[PACK_RMAX];
        __m128i mins[8];
#pragma GCC unroll 9
        for (int r = 0; r < R; ++r) S[r] = _mm512_setzero_si512();
#pragma GCC unroll 1
        for (int j = 0; j < 8; ++j) {
            const uint8_t *v = grp + 256 * (1 + j);
            sweep_prefetch(v, 256, ahead, next ? next + g * PACK_GROUP_Q4 + j * step : 0, step);
            __m128i scb;
            packed_ints(grp, j, &scb, &mins[j]);
            const __m512i sc = pair16(_mm512_cvtepu8_epi32(scb));
            __m512i w0[4], w1[4];
#pragma GCC unroll 4
            for (int c = 0; c < 4; ++c) {
                const __m512i q = _mm512_loadu_si512(v + 64 * c);
                w0[c] = _mm512_and_si512(q, nib);
                w1[c] = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
            }
#pragma GCC unroll 9
            for (int r = 0; r < R; ++r) {
                const uint8_t *xb = xg + r * xstride + QKK * g + QK * j;
                __m512i t0 = _mm512_setzero_si512(), t1 = _mm512_setzero_si512();
#pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) {   /* values 8c.. (even lanes) and 8c + 4.. (odd), both rows of a lane */
                    const __m512i xv = _mm512_set1_epi64((long long)rd64(xb + 8 * c));
                    t0 = dot4(t0, w0[c], xv);
                    t1 = dot4(t1, w1[c], xv);
                }   /* a lane's sum: 16 values of q ≤ 15 times |x| ≤ 127, in 16 bits */
                S[r] = dot2w(S[r], _mm512_packs_epi32(t0, t1), sc);
            }
        }
        __m512i mp[4];
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p) mp[p] = min_pair(mins, p);
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)grp));
        const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(grp + 32)));
#pragma GCC unroll 9
        for (int r = 0; r < R; ++r) {
            const uint8_t *xr = xg + r * xstride;
            const __m512i M = min_sum(mp, xr + (QKK + 4) * G + 16 * g);
            const __m512 D = _mm512_set1_ps(((const float *)(xr + QKK * G))[g]);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[r]), _mm512_mul_ps(d, D), acc[r]);
            acc[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(M), _mm512_mul_ps(dm, D), acc[r]);
        }
    }
#pragma GCC unroll 9
    for (int r = 0; r < R; ++r) _mm512_storeu_ps(y + r * ldy, acc[r]);
}

/* The outputs of R rows from their 16 running sums each (a per-32 kernel's): q8_result for kind S, tree8(acc[j] +
   acc[8 + j]), 16 outputs at once */
static inline __attribute__((always_inline)) void store_kind_s(const int R, __m512 sums[][16], float *y, int64_t ldy) {
    for (int r = 0; r < R; ++r) {
        __m512 s8[8];
        for (int j = 0; j < 8; ++j) s8[j] = _mm512_add_ps(sums[r][j], sums[r][8 + j]);
        _mm512_storeu_ps(y + r * ldy, tree8_lanes(s8));
    }
}

/* The per-32 kernels' R rows against one decoded block (w0, w1: its halves' values, unsigned) at step `at` of the
   packed activations (xp), kind S: each half's exact sum starts at the row's offset term, xp's −32·Σq divided by
   `per` (1: Q6_K's weights q − 32; 4: Q4_0's q − 8, exact), then acc_h = fma(sum, a_h·dx, acc_h). Q4_0's w0, w1
   are a block's halves in lane o (row o); Q6_K's (`paired`) the low- and high-nibble rows' vectors in quant_packed.h's
   pair_lane order, vector c holding values 8c.. and 8c + 4.., whose lanes' sums are put back in the rows' order. */
static inline __attribute__((always_inline)) void kind_s_rows(const int R, const __m512i *w0, const __m512i *w1,
                                                              __m512 a0, __m512 a1, const int per, const int paired,
                                                              const uint8_t *xp, int64_t xstride, int64_t G,
                                                              int64_t at, __m512 *acc0, __m512 *acc1) {
#pragma GCC unroll 9
    for (int r = 0; r < R; ++r) {
        const uint8_t *xr = xp + r * xstride, *xb = xr + 32 * at;
        const float *dx = (const float *)(xr + 32 * 8 * G);
        const int32_t *ns = (const int32_t *)(dx + 16 * G);
        __m512i s0 = _mm512_set1_epi32(ns[2 * at] / per), s1 = _mm512_set1_epi32(ns[2 * at + 1] / per);
        if (paired) {
            __m512i t[2][2];
#pragma GCC unroll 2
            for (int h = 0; h < 2; ++h) {
                t[h][0] = t[h][1] = _mm512_setzero_si512();
#pragma GCC unroll 2
                for (int k = 0; k < 2; ++k) {
                    const __m512i xv = _mm512_set1_epi64((long long)rd64(xb + 16 * h + 8 * k));
                    t[h][0] = dot4(t[h][0], w0[2 * h + k], xv);
                    t[h][1] = dot4(t[h][1], w1[2 * h + k], xv);
                }
            }
            s0 = _mm512_add_epi32(s0, _mm512_add_epi32(unpair(t[0][0], t[0][1], 0), unpair(t[0][0], t[0][1], 1)));
            s1 = _mm512_add_epi32(s1, _mm512_add_epi32(unpair(t[1][0], t[1][1], 0), unpair(t[1][0], t[1][1], 1)));
        } else {
#pragma GCC unroll 4
            for (int c = 0; c < 4; ++c) {
                s0 = dot4(s0, w0[c], _mm512_set1_epi32((int)rd32(xb + 4 * c)));
                s1 = dot4(s1, w1[c], _mm512_set1_epi32((int)rd32(xb + 16 + 4 * c)));
            }
        }
        const __m512 x = _mm512_set1_ps(dx[at]);
        acc0[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0), _mm512_mul_ps(a0, x), acc0[r]);
        acc1[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), _mm512_mul_ps(a1, x), acc1[r]);
    }
}

/* its 6-bit values q (0..63): w0[c] the low-nibble rows' (quant_packed.h's pair_lane order), w1[c] the high-nibble rows' */
static inline __attribute__((always_inline)) void q6_values(const uint8_t *v, __m512i *w0, __m512i *w1) {
    const __m512i hb = _mm512_set1_epi8(0x30);
    const __m512i h0 = _mm512_loadu_si512(v + 256), h1 = _mm512_loadu_si512(v + 320);
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {   /* the high 2 bits (at 2c) moved to bits 4-5, alone; then bits 0-3 from the nibble */
        const __m512i q = _mm512_loadu_si512(v + 64 * c);
        const __m512i t0 = c < 2 ? _mm512_slli_epi16(h0, 4 - 2 * c) : c == 2 ? h0 : _mm512_srli_epi16(h0, 2);
        const __m512i t1 = c < 2 ? _mm512_slli_epi16(h1, 4 - 2 * c) : c == 2 ? h1 : _mm512_srli_epi16(h1, 2);
        w0[c] = _mm512_ternarylogic_epi32(_mm512_and_si512(t0, hb), q, _mm512_set1_epi8(15), 0xF8);   /* a | (b & c) */
        w1[c] = _mm512_ternarylogic_epi32(_mm512_and_si512(t1, hb), _mm512_srli_epi16(q, 4), _mm512_set1_epi8(15), 0xF8);
    }
}

/* R rows of X quantized per 32 values in the packed order (xp, a row every xstride bytes: xp_from_xq) against one
   Q6_K tile (q8 without groups: tests and benchmarks ask for it), quant.c's kind S arithmetic: block j swept over
   all the groups with the rows' two half sums in registers (each from its lanes' two sums, put back in the rows'
   order), 16 running sums per output (acc[8h + j]) in the same order as every build, then the trees. A half
   block's sum starts at −32·Σq (its weights are q − 32, q the 6-bit value: the same exact integer as the q8
   kernels' S) and takes its own scale a = d·sc (Q6_K's scales are per 16 values); no mins.
   `next` as for Q4_K. */
static inline __attribute__((always_inline)) void packed_tile_q6(const int R, const uint8_t *tile, int64_t G,
                                                                 const uint8_t *next, const uint8_t *xp,
                                                                 int64_t xstride, float *y, int64_t ldy) {
    __m512 sums[PACK_RMAX][16];
    const int64_t ahead = __atomic_load_n(&prefetch_bytes, __ATOMIC_RELAXED);
    for (int j = 0; j < 8; ++j) {
        __m512 acc0[PACK_RMAX], acc1[PACK_RMAX];
#pragma GCC unroll 9
        for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
        for (int64_t g = 0; g < G; ++g) {
            const uint8_t *sc = tile + g * PACK_GROUP_Q6, *v = sc + 288 + j * 384;
            sweep_prefetch(v, 384, ahead, next ? next + (j * G + g) * Q6_STEP : 0, Q6_STEP);
            const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)sc));
            const __m512 a0 = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                                   _mm_loadu_si128((const __m128i *)(sc + 32 + 16 * (2 * j))))));
            const __m512 a1 = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                                   _mm_loadu_si128((const __m128i *)(sc + 32 + 16 * (2 * j + 1))))));
            __m512i w0[4], w1[4];
            q6_values(v, w0, w1);
            kind_s_rows(R, w0, w1, a0, a1, 1, 1, xp, xstride, G, j * G + g, acc0, acc1);
        }
#pragma GCC unroll 9
        for (int r = 0; r < R; ++r) sums[r][j] = acc0[r], sums[r][8 + j] = acc1[r];
    }
    store_kind_s(R, sums, y, ldy);
}

/* R rows of X quantized per 32 values in the packed order (xp: xp_from_xq) against one Q4_0 tile, quant.c's kind S
   arithmetic as packed_tile_q6 computes it: block position j swept over the groups in order with the rows' two
   half sums in registers (a half block's sum starts at −8·Σq: the weights are q − 8), t = d·dx for both halves,
   16 running sums per output, then the trees. A position with a group fewer (the row's last group short of 8
   blocks) skips it: the zero block the other builds add there adds exactly +0 to a sum that is never −0. */
static inline __attribute__((always_inline)) void packed_tile_q40(const int R, const uint8_t *tile, int64_t K,
                                                                  const uint8_t *next, const uint8_t *xp,
                                                                  int64_t xstride, float *y, int64_t ldy) {
    const int64_t NB = K / QK, G = xp_groups(K);
    const int64_t ahead = __atomic_load_n(&prefetch_bytes, __ATOMIC_RELAXED);
    const __m512i nib = _mm512_set1_epi8(15);
    __m512 sums[PACK_RMAX][16];
    for (int j = 0; j < 8; ++j) {
        __m512 acc0[PACK_RMAX], acc1[PACK_RMAX];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
        const int64_t u0 = q40_unit(NB, j, 0), n = q40_groups(NB, j);
        for (int64_t g = 0; g < n; ++g) {
            const uint8_t *u = tile + (u0 + g) * PACK_UNIT_Q40;
            sweep_prefetch(u, PACK_UNIT_Q40, ahead, next ? next + (u0 + g) * PACK_UNIT_Q40 : 0, PACK_UNIT_Q40);
            const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)u));
            __m512i w0[4], w1[4];
#pragma GCC unroll 4
            for (int c = 0; c < 4; ++c) {
                const __m512i q = _mm512_loadu_si512(u + 32 + 64 * c);
                w0[c] = _mm512_and_si512(q, nib);
                w1[c] = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
            }
            kind_s_rows(R, w0, w1, d, d, 4, 0, xp, xstride, G, j * G + g, acc0, acc1);   /* t = d·dx for both halves */
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) sums[r][j] = acc0[r], sums[r][8 + j] = acc1[r];
    }
    store_kind_s(R, sums, y, ldy);
}

/* R rows of X quantized per 256 values (xg, a row every xstride bytes: xg_from_x) against one Q6_K tile, KIND_G6's
   arithmetic (quant.c) in each lane: the tile read in order, group by group, each half block's sum (two lanes of
   8 values, each started at −32·Σq of its values: the weights are q − 32) scaled by its 8-bit scale as integers
   (one dpwssd on the packed lanes, as for Q4_K) into the group's integer, then the group's one fma. `next` as for
   Q4_K. */
static inline __attribute__((always_inline)) void packed_tile_q6g(const int R, const uint8_t *tile, int64_t G,
                                                                  const uint8_t *next, const uint8_t *xg,
                                                                  int64_t xstride, float *y, int64_t ldy) {
    __m512 acc[PACK_RMAX];
    const int64_t ahead = __atomic_load_n(&prefetch_bytes, __ATOMIC_RELAXED);
#pragma GCC unroll 9
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t g = 0; g < G; ++g) {
        const uint8_t *grp = tile + g * PACK_GROUP_Q6;
        __m512i S[PACK_RMAX];
#pragma GCC unroll 9
        for (int r = 0; r < R; ++r) S[r] = _mm512_setzero_si512();
#pragma GCC unroll 1
        for (int j = 0; j < 8; ++j) {
            const uint8_t *v = grp + 288 + j * 384, *sc = grp + 32 + 32 * j;
            sweep_prefetch(v, 384, ahead, next ? next + g * PACK_GROUP_Q6 + j * Q6_STEP : 0, Q6_STEP);
            const __m512i c0 = pair16(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)sc)));
            const __m512i c1 = pair16(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(sc + 16))));
            __m512i w0[4], w1[4];
            q6_values(v, w0, w1);
#pragma GCC unroll 9
            for (int r = 0; r < R; ++r) {
                const uint8_t *xr = xg + r * xstride, *xb = xr + QKK * g + QK * j;
                const uint8_t *ns = xr + XG6_NS(G) + 4 * (32 * g + 4 * j);
#pragma GCC unroll 2
                for (int h = 0; h < 2; ++h) {   /* a lane's sum starts at −32·Σq of its 8 values: |sum| ≤ 8·32·127 */
                    const __m512i n = _mm512_set1_epi64((long long)rd64(ns + 8 * h));
                    __m512i t0 = n, t1 = n;
#pragma GCC unroll 2
                    for (int k = 0; k < 2; ++k) {
                        const __m512i xv = _mm512_set1_epi64((long long)rd64(xb + 16 * h + 8 * k));
                        t0 = dot4(t0, w0[2 * h + k], xv);
                        t1 = dot4(t1, w1[2 * h + k], xv);
                    }
                    S[r] = dot2w(S[r], _mm512_packs_epi32(t0, t1), h ? c1 : c0);
                }
            }
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)grp));
#pragma GCC unroll 9
        for (int r = 0; r < R; ++r) {
            const __m512 D = _mm512_set1_ps(((const float *)(xg + r * xstride + QKK * G))[g]);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[r]), _mm512_mul_ps(d, D), acc[r]);
        }
    }
#pragma GCC unroll 9
    for (int r = 0; r < R; ++r) _mm512_storeu_ps(y + r * ldy, acc[r]);
}
#endif
