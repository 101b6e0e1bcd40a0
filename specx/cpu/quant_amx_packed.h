/* quant.c's AMX-INT8 path for packed Q4_K and Q6_K tiles (T_Q4_K_P16, T_Q6_K_PG) in the q8 mode with groups
   (KIND_G, KIND_G6), for calls of many rows (a prompt pass): included by quant_amx.h, which states when AMX runs.

   Same numbers, bit for bit: KIND_G's and KIND_G6's per-group integers S = Σ sc·S_sub (and Q4_K's
   M = Σ_j m_j·Σq_j), then the same float steps in the same order as the packed VNNI kernels (quant_packed_q8.h).
   What makes it fit AMX: a group's scaled weights w' = sc·q (Q4_K, 0..945) or sc·(q − 32) (Q6_K, −4064..4096)
   do not fit a byte, but their two bytes do: w' = 256·hi + lo with lo unsigned (0..255) and hi signed (Q4_K 0..3,
   Q6_K −16..16), so S = 256·(X·HI) + X·LO, each an exact int32 tile product over the group's 256 values with no
   step between the four 64-value products: the per-32 path (quant_amx.h) pays a float step per 16 values
   instead. Both byte planes are made once per call and strip of 16 outputs (a packed tile), and every 16-row
   tile of X passes over them.

   Roles: X is the A operand (16 rows × 64 signed bytes, read in place from the packed activations xg, whose rows
   hold each group's q in order), the weights the B operand (16 rows of 64 bytes: row r holds values 4r..4r + 3
   of the 16 outputs, lane o for output o: the packed layout's lanes put back in the outputs' order), so a C tile is 16 rows × 16 outputs,
   stored as Y's rows are. Layout of a decoded strip, per group (AMXP_GROUP bytes): LO[4][16][64] (chunk k of 64
   values, row r), HI the same, then (Q4_K) the mins as int16 pairs (4 vectors: lane o holds m_2p, m_2p+1 of
   output o), d and dmin as floats (16 each). */
#define AMXP_PLANE 4096
#define AMXP_GROUP (2 * AMXP_PLANE + 256 + 128)

static inline int amxp_type(int type) { return type == T_Q4_K_P16 || type == T_Q6_K_PG; }

static void amxp_config(void) {   /* every tile 16 rows of 64 bytes: C 0-3, A 4-5, B 6-7 */
    amx_cfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 8; ++t) c.rows[t] = 16, c.colsb[t] = 64;
    _tile_loadconfig(&c);
}

/* 64 values q (16 outputs × 4 bytes) into the two planes: w' = (q − off)·s exactly in 16 bits (each 16-bit lane of
   s16 holds its output's scale), the even bytes' and the odd bytes' apart, then their low bytes to lo and their
   high bytes to hi */
static inline __attribute__((always_inline)) void amxp_split(__m512i q, __m512i s16, int off, uint8_t *lo,
                                                            uint8_t *hi) {
    const __mmask64 odd = 0xAAAAAAAAAAAAAAAAULL;
    const __m512i o16 = _mm512_set1_epi16((short)off);
    const __m512i pe = _mm512_mullo_epi16(_mm512_sub_epi16(_mm512_and_si512(q, _mm512_set1_epi16(255)), o16), s16);
    const __m512i po = _mm512_mullo_epi16(_mm512_sub_epi16(_mm512_srli_epi16(q, 8), o16), s16);
    _mm512_store_si512((__m512i *)lo, _mm512_mask_blend_epi8(odd, pe, _mm512_slli_epi16(po, 8)));
    _mm512_store_si512((__m512i *)hi, _mm512_mask_blend_epi8(odd, _mm512_srli_epi16(pe, 8), po));
}

/* The 8 rows of block j (values 32j..32j + 31) of a group's planes, row k for values 4k..4k + 3 of the 16 outputs:
   rows 2c and 2c + 1 from vector c's lanes (w0[c] the low-nibble rows', w1[c] the high-nibble rows': quant_packed.h's
   pair_lane) put back in the outputs' order; s0 scales values 0..15, s1 16..31 */
static inline __attribute__((always_inline)) void amxp_block(uint8_t *dg, int j, const __m512i *w0, const __m512i *w1,
                                                            __m512i s0, __m512i s1, int off) {
    const int at = (j / 2) * 1024 + (j % 2) * 512;
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c)
#pragma GCC unroll 2
        for (int e = 0; e < 2; ++e) {
            const int k = 2 * c + e;
            amxp_split(unpair(w0[c], w1[c], e), c < 2 ? s0 : s1, off, dg + at + 64 * k, dg + AMXP_PLANE + at + 64 * k);
        }
}

/* One packed tile (16 outputs) decoded into G groups of planes at dst */
static void amxp_decode(int type, const uint8_t *tile, int64_t G, uint8_t *dst) {
    const __m512i nib = _mm512_set1_epi8(15);
    for (int64_t g = 0; g < G; ++g) {
        uint8_t *dg = dst + g * AMXP_GROUP;
        float *d = (float *)(dg + 2 * AMXP_PLANE + 256);
        if (type == T_Q4_K_P16) {
            const uint8_t *grp = tile + g * PACK_GROUP_Q4;
            __m128i mins[8];
            for (int j = 0; j < 8; ++j) {
                __m128i scb;
                packed_ints(grp, j, &scb, &mins[j]);
                const __m512i s = pair16(_mm512_cvtepu8_epi32(scb));
                __m512i w0[4], w1[4];
                for (int c = 0; c < 4; ++c) {
                    const __m512i q = _mm512_loadu_si512(grp + 256 * (1 + j) + 64 * c);
                    w0[c] = _mm512_and_si512(q, nib);
                    w1[c] = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
                }
                amxp_block(dg, j, w0, w1, s, s, 0);   /* Q4_K: q as it is */
            }
            for (int p = 0; p < 4; ++p) _mm512_store_si512((__m512i *)(dg + 2 * AMXP_PLANE + 64 * p), min_pair(mins, p));
            _mm512_store_ps(d, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)grp)));
            _mm512_store_ps(d + 16, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(grp + 32))));
        } else {
            const uint8_t *sc = tile + g * PACK_GROUP_Q6 + 32;
            for (int j = 0; j < 8; ++j) {
                __m512i w0[4], w1[4];
                q6_values(tile + g * PACK_GROUP_Q6 + 288 + j * 384, w0, w1);
                const __m512i s0 = pair16(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(sc + 32 * j))));
                const __m512i s1 = pair16(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(sc + 32 * j + 16))));
                amxp_block(dg, j, w0, w1, s0, s1, 32);   /* Q6_K: q − 32 */
            }
            _mm512_store_ps(d, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(tile + g * PACK_GROUP_Q6))));
        }
    }
}

/* One group's float steps for the 32 rows of two row tiles (their C tiles stored at cb: LO and HI of tile 0,
   then of tile 1), packed_tile's and packed_tile_q6g's operations in their order */
static inline __attribute__((always_inline)) void amxp_epi(const int q4, const int32_t *cb, const uint8_t *dg,
                                                          const uint8_t *xg0, const uint8_t *xg1, int64_t xstride,
                                                          int64_t G, int64_t g, __m512 *acc, int mrows) {
    const float *dd = (const float *)(dg + 2 * AMXP_PLANE + 256);
    const __m512 d = _mm512_load_ps(dd), dm = _mm512_load_ps(dd + 16);
    const __m512i *mp = (const __m512i *)(dg + 2 * AMXP_PLANE);
    for (int m = 0; m < mrows; ++m) {   /* the rows past mrows are never stored */
        const uint8_t *xr = (m < 16 ? xg0 : xg1) + (m & 15) * xstride;
        const int32_t *c = cb + 512 * (m >> 4) + 16 * (m & 15);
        const __m512i S = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(c + 256), 8), _mm512_load_si512(c));
        const __m512 D = _mm512_set1_ps(((const float *)(xr + QKK * G))[g]);
        acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S), _mm512_mul_ps(d, D), acc[m]);
        if (q4) {
            const __m512i M = min_sum(mp, xr + (QKK + 4) * G + 16 * g);
            acc[m] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(M), _mm512_mul_ps(dm, D), acc[m]);
        }
    }
}

/* Two 16-row tiles of X (xg0, xg1: their first rows in xg) against one decoded strip: y's rows 0..mrows − 1 (of
   the 32; `two` 0: the last tile alone, xg1 unread). A group's products (4 chunks × 2 planes × 2 tiles, each C tile
   one chain of 4) are issued before the previous group's float steps, which run for the rows stored only. */
static inline __attribute__((always_inline)) void amxp_pair(const int q4, const int two, const uint8_t *wd, int64_t G,
                                                           const uint8_t *xg0, const uint8_t *xg1, int64_t xstride,
                                                           float *y, int64_t ldy, int mrows) {
    int32_t cb[2][4 * 256] __attribute__((aligned(64)));
    __m512 acc[32];
    for (int m = 0; m < 32; ++m) acc[m] = _mm512_setzero_ps();
    for (int64_t g = 0; g < G; ++g) {
        const uint8_t *dg = wd + g * AMXP_GROUP;
        _tile_zero(0);
        _tile_zero(1);
        if (two) {
            _tile_zero(2);
            _tile_zero(3);
        }
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            _tile_loadd(6, dg + 1024 * k, 64);
            _tile_loadd(7, dg + AMXP_PLANE + 1024 * k, 64);
            _tile_loadd(4, xg0 + QKK * g + 64 * k, xstride);
            if (two) _tile_loadd(5, xg1 + QKK * g + 64 * k, xstride);
            _tile_dpbsud(0, 4, 6);
            if (two) _tile_dpbsud(2, 5, 6);
            if (q4) {
                _tile_dpbsud(1, 4, 7);
                if (two) _tile_dpbsud(3, 5, 7);
            } else {
                _tile_dpbssd(1, 4, 7);
                if (two) _tile_dpbssd(3, 5, 7);
            }
        }
        if (g) amxp_epi(q4, cb[(g - 1) & 1], dg - AMXP_GROUP, xg0, xg1, xstride, G, g - 1, acc, mrows);
        int32_t *c = cb[g & 1];
        _tile_stored(0, c, 64);
        _tile_stored(1, c + 256, 64);
        if (two) {
            _tile_stored(2, c + 512, 64);
            _tile_stored(3, c + 768, 64);
        }
    }
    amxp_epi(q4, cb[(G - 1) & 1], wd + (G - 1) * AMXP_GROUP, xg0, xg1, xstride, G, G - 1, acc, mrows);
    for (int m = 0; m < mrows; ++m) _mm512_storeu_ps(y + m * ldy, acc[m]);
}

/* Outputs [n0, n1) (whole tiles) of a packed segment for all M rows, xg holding (M + 15) / 16 · 16 rows (those
   past M zeros): a pass decodes a block of tiles (about AMX_BLOCK_BYTES), then each pair of row tiles goes over
   all of them. Returns 0, or 1 when its scratch memory was not had (the caller then runs the packed VNNI kernel:
   the same numbers). */
static int amxp_segment(int type, const uint8_t *xg, int64_t M, int64_t K, const uint8_t *w, int64_t n0, int64_t n1,
                        float *y, int64_t ldy) {
    const int64_t G = K / QKK, MT = (M + 15) / 16, strip = G * AMXP_GROUP, tb = pack_tile_bytes(type, K);
    const int64_t xstride = xg_stride(K);
    int64_t nb = AMX_BLOCK_BYTES / strip;
    nb = nb < 1 ? 1 : nb;
    uint8_t *wd = aligned_alloc(64, nb * strip);
    if (!wd) return 1;
    amxp_config();
    for (int64_t c0 = n0; c0 < n1; c0 += 16 * nb) {
        const int64_t c1 = c0 + 16 * nb < n1 ? c0 + 16 * nb : n1;
        for (int64_t c = c0; c < c1; c += 16) amxp_decode(type, w + c / 16 * tb, G, wd + (c - c0) / 16 * strip);
        for (int64_t mt = 0; mt < MT; mt += 2) {
            const uint8_t *x0 = xg + 16 * mt * xstride, *x1 = mt + 1 < MT ? x0 + 16 * xstride : x0;
            const int mrows = M - 16 * mt < 32 ? (int)(M - 16 * mt) : 32;
            for (int64_t c = c0; c < c1; c += 16) {
                const uint8_t *d = wd + (c - c0) / 16 * strip;
                float *yt = y + 16 * mt * ldy + c;
                if (type == T_Q4_K_P16) {
                    if (mrows > 16) amxp_pair(1, 1, d, G, x0, x1, xstride, yt, ldy, mrows);
                    else amxp_pair(1, 0, d, G, x0, x1, xstride, yt, ldy, mrows);
                } else if (mrows > 16) amxp_pair(0, 1, d, G, x0, x1, xstride, yt, ldy, mrows);
                else amxp_pair(0, 0, d, G, x0, x1, xstride, yt, ldy, mrows);
            }
        }
    }
    _tile_release();
    free(wd);
    return 0;
}
