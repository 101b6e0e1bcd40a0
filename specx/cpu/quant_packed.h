/* quant.c's packed Q4_K and Q6_K (T_Q4_K_P16, T_Q6_K_P16), included by it in this place: the layouts, their packing
   and unpacking (every build), and the AVX-512 build's q8 kernels on them (the only kernels that read them;
   cpu/packing.py packs only for those). Q4_K is described here; Q6_K's tile (its own layout below) is block-major,
   swept a block at a time over the groups with 16 float running sums (its kind S arithmetic: q8 per 32 values), or
   with a span of groups' integer sums in memory (KIND_G6: q8 with groups, T_Q6_K_PG).

   Why: the q8 kernels keep one weight row's group of 256 values across a vector (lane 8h + j = half h of block j)
   and decode it once for the call's rows; that decoding (nibbles, the 6-bit scales and mins) costs a Q4_K group
   more than a row's products, and a verify of 4-5 rows pays it in full where the weights are already in cache.
   With 16 weight rows in a vector's lanes instead, a tile's nibbles are two masks per 64 bytes and its scales
   one widening per 16 rows, the activations are broadcast from memory, and the decoding nearly disappears
   (benchmarks/experiments/2026-11-30-packed). The arithmetic is quant.c's q8 arithmetic to the bit (Q4_K: KIND_G,
   Q6_K: kind S or KIND_G6): for each (row, output) the same exact integers, the same float steps in the same order. Only
   where the sums live differs: each lane of a vector is one output of the tile.

   Layout. A tile is 16 consecutive weight rows (a packed matrix has a multiple of 16 rows); it takes the bytes
   those rows take in the file (G groups × 16 × 144), group-major: group g at g × PACK_GROUP_Q4 bytes,
     scales, 256 bytes: d of the 16 rows (f16, 32 bytes), dmin (32 bytes), then the group's 12 scale bytes
       transposed (byte i of row o at 64 + 16·i + o);
     values, 8 × 256 bytes: for block j, 4 vectors of 64 bytes; byte 4c + e of lane o holds value 4c + e of
       block j of row o in its low nibble and value 16 + 4c + e in its high one.
   The sweep goes group by group, each weight vector read and masked once per call and used by every row, a
   row's 8 block sums of a group scaled by their 6-bit scales and added as integers, so the tile is read in order;
   meanwhile the next tile is brought into L2 in order, an eighth of a group per step (without that one row
   streamed 10-20% slower than the file's layout: benchmarks/experiments/2026-11-30-packed). */
#define PACK_ROWS 16   /* weight rows a tile holds: the lanes of a 512-bit vector of float32 */
#define PACK_GROUP_Q4 (9 * 256)   /* a packed Q4_K group of 16 rows: 256 bytes of scales, 8 blocks of 256 */
#define XG6_NS(G) ((QKK + 20) * (G))   /* where xg's −32·Σq per half block start (xg_stride) */

static inline int is_packed(int type) { return type == T_Q4_K_P16 || type == T_Q6_K_P16 || type == T_Q6_K_PG; }
static inline int packed_file_type(int type) { return type == T_Q4_K_P16 ? T_Q4_K : T_Q6_K; }

/* ---------------------------------------------------------------- the layout (every build) */

static inline int64_t pack_tile_bytes(int type, int64_t K) { return K / QKK * PACK_ROWS * block_bytes(type); }

#if SPX_DRIVER
static inline uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }   /* little-endian, as x86 */

/* Row o of the tile's group g, as the file holds it (144 bytes), written to b. */
static void unpack_group(const uint8_t *tile, int64_t g, int o, uint8_t *b) {
    const uint8_t *s = tile + g * PACK_GROUP_Q4;
    memcpy(b, s + 2 * o, 2);
    memcpy(b + 2, s + 32 + 2 * o, 2);
    for (int i = 0; i < 12; ++i) b[4 + i] = s[64 + 16 * i + o];
    for (int j = 0; j < 8; ++j) {
        const uint8_t *v = s + 256 * (1 + j);
        uint8_t *qs = b + 16 + 32 * (j / 2);
        const int sh = 4 * (j & 1);
        for (int c = 0; c < 4; ++c)
            for (int e = 0; e < 4; ++e) {
                const uint8_t byte = v[64 * c + 4 * o + e];
                if (!sh) {
                    qs[4 * c + e] = (uint8_t)(byte & 15);
                    qs[16 + 4 * c + e] = (uint8_t)(byte >> 4);
                } else {
                    qs[4 * c + e] |= (uint8_t)((byte & 15) << 4);
                    qs[16 + 4 * c + e] |= (uint8_t)(byte & 0xf0);
                }
            }
    }
}

/* rows (a multiple of PACK_ROWS) × K Q4_K rows as the file holds them into the packed layout at dst (the same
   number of bytes). Returns 0, or 2 where rows or K do not fit the layout. */
int spx_pack_q4k(const uint8_t *src, int64_t rows, int64_t K, uint8_t *dst) {
    if (rows < 0 || rows % PACK_ROWS || K <= 0 || K % QKK) return 2;
    const int64_t G = K / QKK;
    for (int64_t t = 0; t < rows / PACK_ROWS; ++t) {
        uint8_t *tile = dst + t * pack_tile_bytes(T_Q4_K_P16, K);
        for (int o = 0; o < PACK_ROWS; ++o)
            for (int64_t g = 0; g < G; ++g) {
                const uint8_t *b = src + ((t * PACK_ROWS + o) * G + g) * 144;
                uint8_t *s = tile + g * PACK_GROUP_Q4;
                memcpy(s + 2 * o, b, 2);
                memcpy(s + 32 + 2 * o, b + 2, 2);
                for (int i = 0; i < 12; ++i) s[64 + 16 * i + o] = b[4 + i];
                for (int pair = 0; pair < 4; ++pair) {   /* blocks 2·pair (low nibbles) and 2·pair + 1 (high) */
                    const uint8_t *qs = b + 16 + 32 * pair;
                    for (int half = 0; half < 2; ++half) {   /* values 8·half.. and 16 + 8·half.., 8 bytes at once */
                        const uint64_t lo = rd64(qs + 8 * half), hi = rd64(qs + 16 + 8 * half);
                        const uint64_t m = 0x0f0f0f0f0f0f0f0fULL;
                        const uint64_t even = (lo & m) | ((hi & m) << 4), odd = ((lo >> 4) & m) | (hi & ~m);
                        for (int k = 0; k < 2; ++k) {   /* dword c = 2·half + k of the block's row o */
                            const int c = 2 * half + k;
                            const uint32_t ev = (uint32_t)(even >> (32 * k)), od = (uint32_t)(odd >> (32 * k));
                            memcpy(s + 256 * (1 + 2 * pair) + 64 * c + 4 * o, &ev, 4);
                            memcpy(s + 256 * (2 + 2 * pair) + 64 * c + 4 * o, &od, 4);
                        }
                    }
                }
            }
    }
    return 0;
}

/* Q6_K: value p (0..31) of block j of a superblock (210 bytes at b) is q (0..63, the weight q − 32) with its low 4
   bits at ql[64n + 32·(quarter & 1) + p] >> 4·(quarter >> 1) and its high 2 at qh[32n + p] >> 2·quarter, for
   j = 4n + quarter (ggml's dequantize_row_q6_K); q6_put writes it there */
static inline void q6_put(uint8_t *b, int j, int p, int q) {   /* into zeroed ql and qh */
    const int n = j / 4, quarter = j % 4;
    b[64 * n + 32 * (quarter & 1) + p] |= (uint8_t)((q & 15) << (4 * (quarter >> 1)));
    b[128 + 32 * n + p] |= (uint8_t)((q >> 4) << (2 * quarter));
}

/* Q6_K's packed tile: per group 288 bytes of scales (d of the 16 rows as f16, then scale i of row o at
   32 + 16·i + o), then per block j and group g 384 bytes: 4 vectors whose lane o byte 4c + e holds the low 4 bits
   of values 4c + e and 16 + 4c + e, then 2 vectors (half h) whose lane o byte e holds the high 2 bits of value
   16h + 4c + e at bits 2c. The same 16 × 210 bytes a group as the file. */
static void unpack_group_q6(const uint8_t *tile, int64_t G, int64_t g, int o, uint8_t *b) {
    const uint8_t *s = tile + g * 288;
    memset(b, 0, 192);
    for (int i = 0; i < 16; ++i) b[192 + i] = s[32 + 16 * i + o];
    memcpy(b + 208, s + 2 * o, 2);
    for (int j = 0; j < 8; ++j) {
        const uint8_t *v = tile + G * 288 + (j * G + g) * 384;
        for (int c = 0; c < 4; ++c)
            for (int e = 0; e < 4; ++e)
                for (int h = 0; h < 2; ++h) {
                    const int lo = (v[64 * c + 4 * o + e] >> (4 * h)) & 15;
                    const int hi = (v[256 + 64 * h + 4 * o + e] >> (2 * c)) & 3;
                    q6_put(b, j, 16 * h + 4 * c + e, lo | (hi << 4));
                }
    }
}

/* rows (a multiple of PACK_ROWS) × K Q6_K rows as the file holds them into the packed layout at dst (the same
   number of bytes). Returns 0, or 2 where rows or K do not fit the layout. */
int spx_pack_q6k(const uint8_t *src, int64_t rows, int64_t K, uint8_t *dst) {
    if (rows < 0 || rows % PACK_ROWS || K <= 0 || K % QKK) return 2;
    const int64_t G = K / QKK;
    for (int64_t t = 0; t < rows / PACK_ROWS; ++t) {
        uint8_t *tile = dst + t * pack_tile_bytes(T_Q6_K_P16, K);
        for (int o = 0; o < PACK_ROWS; ++o)
            for (int64_t g = 0; g < G; ++g) {
                const uint8_t *b = src + ((t * PACK_ROWS + o) * G + g) * 210;
                uint8_t *s = tile + g * 288;
                memcpy(s + 2 * o, b + 208, 2);
                for (int i = 0; i < 16; ++i) s[32 + 16 * i + o] = b[192 + i];
                for (int j = 0; j < 8; ++j) {   /* those fields, 8 (low bits) or 4 (high bits) values at once */
                    const int n = j / 4, quarter = j % 4, sh = 4 * (quarter >> 1);
                    const uint8_t *ql = b + 64 * n + 32 * (quarter & 1), *qh = b + 128 + 32 * n;
                    uint8_t *v = tile + G * 288 + (j * G + g) * 384;
                    const uint64_t m = 0x0f0f0f0f0f0f0f0fULL;
                    for (int k = 0; k < 2; ++k) {   /* values 8k.. and 16 + 8k.. in the low and high nibbles */
                        const uint64_t low = ((rd64(ql + 8 * k) >> sh) & m) | (((rd64(ql + 16 + 8 * k) >> sh) & m) << 4);
                        const uint32_t c0 = (uint32_t)low, c1 = (uint32_t)(low >> 32);
                        memcpy(v + 64 * (2 * k) + 4 * o, &c0, 4);
                        memcpy(v + 64 * (2 * k + 1) + 4 * o, &c1, 4);
                    }
                    for (int h = 0; h < 2; ++h) {   /* byte e: the high 2 bits of values 16h + 4c + e at bits 2c */
                        uint32_t word = 0;
                        for (int c = 0; c < 4; ++c) word |= ((rd32(qh + 16 * h + 4 * c) >> (2 * quarter)) & 0x03030303u) << (2 * c);
                        memcpy(v + 256 + 64 * h + 4 * o, &word, 4);
                    }
                }
            }
    }
    return 0;
}

/* Row `row` of a packed matrix of K values as the file holds it (K / 256 blocks at b). */
static void unpack_row(int type, const uint8_t *w, int64_t K, int64_t row, uint8_t *b) {
    const int64_t G = K / QKK;
    const uint8_t *tile = w + row / PACK_ROWS * pack_tile_bytes(type, K);
    for (int64_t g = 0; g < G; ++g) {
        if (type != T_Q4_K_P16) unpack_group_q6(tile, G, g, (int)(row % PACK_ROWS), b + g * 210);
        else unpack_group(tile, g, (int)(row % PACK_ROWS), b + g * 144);
    }
}

/* Rows ids[0..n) of a packed matrix of K values as the file holds them, one after another at out (a trimmed
   output layer, VocabTrim's rows). Returns 0, or 2 for a type that is not packed or an id outside its rows. */
int spx_unpack_rows(int32_t type, const uint8_t *data, int64_t rows, int64_t K, const int64_t *ids, int64_t n,
                    uint8_t *out) {
    if (!is_packed(type) || K <= 0 || K % QKK) return 2;
    for (int64_t i = 0; i < n; ++i)
        if (ids[i] < 0 || ids[i] >= rows) return 2;
    const int64_t rb = K / QKK * block_bytes(type);
    for (int64_t i = 0; i < n; ++i) unpack_row(type, data, K, ids[i], out + i * rb);
    return 0;
}
#endif

/* ---------------------------------------------------------------- the q8 kernel (AVX-512 build) */
#if defined(SPX_AVX512)
/* block j's 6-bit scales and mins of the tile's 16 rows in a group (its scales at s), a byte per row */
static inline __attribute__((always_inline)) void packed_ints(const uint8_t *s, int j, __m128i *sc, __m128i *m) {
    const __m128i m63 = _mm_set1_epi8(63), m15 = _mm_set1_epi8(15), m3 = _mm_set1_epi8(3);
    if (j < 4) {
        *sc = _mm_and_si128(_mm_loadu_si128((const __m128i *)(s + 64 + 16 * j)), m63);
        *m = _mm_and_si128(_mm_loadu_si128((const __m128i *)(s + 64 + 16 * (j + 4))), m63);
        return;
    }   /* get_scale_min_k4's upper half: 4 low bits from byte j + 4, 2 high bits from bytes j − 4 and j */
    const __m128i lo = _mm_loadu_si128((const __m128i *)(s + 64 + 16 * (j + 4)));
    const __m128i up = _mm_loadu_si128((const __m128i *)(s + 64 + 16 * (j - 4)));
    const __m128i um = _mm_loadu_si128((const __m128i *)(s + 64 + 16 * j));
    *sc = _mm_or_si128(_mm_and_si128(lo, m15), _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(up, 6), m3), 4));
    *m = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(lo, 4), m15), _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(um, 6), m3), 4));
}

static inline __attribute__((always_inline)) __m512i dot2w(__m512i acc, __m512i a, __m512i b) {   /* int16 pairs */
#if SPX_VNNI
    return _mm512_dpwssd_epi32(acc, a, b);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
#endif
}

static inline __attribute__((always_inline)) __m512 tree8_lanes(const __m512 *a) {   /* tree8, 16 outputs at once */
    return _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6])),
                         _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7])));
}

/* R rows of X quantized per 256 values in the Q4_K kernel's order (xg, a row every xstride bytes: xg_from_xk)
   against one Q4_K tile: y[r·ldy + o] for its 16 outputs, KIND_G's arithmetic (quant.c) in each lane. `next`:
   the tile read after this one (0: none), brought into L2 in order, an eighth of a group per step: part of how
   this layout is read, so it does not follow the timed prefetching choice. That choice decides the L1 requests:
   the values a step reads are asked for prefetch_bytes ahead, or not at all where prefetching is off. */
static inline __attribute__((always_inline)) void packed_tile(const int R, const uint8_t *tile, int64_t G,
                                                              const uint8_t *next, const uint8_t *xg,
                                                              int64_t xstride, float *y, int64_t ldy) {
    __m512 acc[RMAX];
    const __m512i nib = _mm512_set1_epi8(15);
    const int64_t ahead = __atomic_load_n(&prefetch_bytes, __ATOMIC_RELAXED), step = PACK_GROUP_Q4 / 8;
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t g = 0; g < G; ++g) {
        const uint8_t *grp = tile + g * PACK_GROUP_Q4;
        __m512i S[RMAX];
        __m128i mins[8];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) S[r] = _mm512_setzero_si512();
#pragma GCC unroll 1
        for (int j = 0; j < 8; ++j) {
            const uint8_t *v = grp + 256 * (1 + j);
            if (ahead) prefetch_at(v + ahead, 256);
            if (next)
                for (int i = 0; i < step; i += 64) _mm_prefetch((const char *)next + g * PACK_GROUP_Q4 + j * step + i, _MM_HINT_T1);
            __m128i scb;
            packed_ints(grp, j, &scb, &mins[j]);
            const __m512i sc = _mm512_cvtepu8_epi32(scb);
            __m512i w0[4], w1[4];
#pragma GCC unroll 4
            for (int c = 0; c < 4; ++c) {
                const __m512i q = _mm512_loadu_si512(v + 64 * c);
                w0[c] = _mm512_and_si512(q, nib);
                w1[c] = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
            }
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t *xb = xg + r * xstride + QKK * g + QK * j;
                __m512i t0 = _mm512_setzero_si512(), t1 = _mm512_setzero_si512();
#pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) {   /* q of values 4c.. (low nibbles) and 16 + 4c.. (high) of block j */
                    t0 = dot4(t0, w0[c], _mm512_set1_epi32((int)rd32(xb + 4 * c)));
                    t1 = dot4(t1, w1[c], _mm512_set1_epi32((int)rd32(xb + 16 + 4 * c)));
                }
                S[r] = _mm512_add_epi32(S[r], _mm512_mullo_epi32(_mm512_add_epi32(t0, t1), sc));
            }
        }
        __m512i mp[4];   /* lane o: (m_2p, m_2p+1) of row o as int16, against the activations' (Σq_2p, Σq_2p+1) */
#pragma GCC unroll 4
        for (int p = 0; p < 4; ++p)
            mp[p] = _mm512_or_si512(_mm512_cvtepu8_epi32(mins[2 * p]), _mm512_slli_epi32(_mm512_cvtepu8_epi32(mins[2 * p + 1]), 16));
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)grp));
        const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(grp + 32)));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const uint8_t *xr = xg + r * xstride;
            const uint8_t *bs = xr + (QKK + 4) * G + 16 * g;   /* Σq of the group's 8 blocks, int16 */
            __m512i M = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int p = 0; p < 4; ++p) M = dot2w(M, mp[p], _mm512_set1_epi32((int)rd32(bs + 4 * p)));
            const __m512 D = _mm512_set1_ps(((const float *)(xr + QKK * G))[g]);
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[r]), _mm512_mul_ps(d, D), acc[r]);
            acc[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(M), _mm512_mul_ps(dm, D), acc[r]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) _mm512_storeu_ps(y + r * ldy, acc[r]);
}

/* A Q6_K tile's block j of group g (its 384 bytes at v; at = j·G + g, the per-32 sweep's step): its L1 request
   `ahead` bytes on (none at 0) and an eighth of a group's worth of the next tile (0: none) into L2, in the order
   that sweep reads */
static inline __attribute__((always_inline)) void q6_prefetch(const uint8_t *v, int64_t ahead, const uint8_t *next,
                                                              int64_t at) {
    const int64_t step = PACK_ROWS * 210 / 8;
    if (ahead) prefetch_at(v + ahead, 384);
    if (next)
        for (int i = 0; i < step; i += 64) _mm_prefetch((const char *)next + at * step + i, _MM_HINT_T1);
}

/* its 6-bit values q (0..63): lane o byte 4c + e of w0[c] is value 4c + e of row o's block, of w1[c] value 16 + 4c + e */
static inline __attribute__((always_inline)) void q6_values(const uint8_t *v, __m512i *w0, __m512i *w1) {
    const __m512i nib = _mm512_set1_epi8(15), two = _mm512_set1_epi8(3);
    const __m512i h0 = _mm512_loadu_si512(v + 256), h1 = _mm512_loadu_si512(v + 320);
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
        const __m512i q = _mm512_loadu_si512(v + 64 * c);
        w0[c] = _mm512_or_si512(_mm512_and_si512(q, nib),
                                _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h0, 2 * c), two), 4));
        w1[c] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(q, 4), nib),
                                _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h1, 2 * c), two), 4));
    }
}

/* R rows of X quantized per 32 values in the packed order (xp, a row every xstride bytes: xp_from_xq) against one
   Q6_K tile, quant.c's kind S arithmetic: block j swept over all the groups (its values in order, block-major) with
   the rows' two half sums in registers, 16 running sums per output (acc[8h + j]) in the same order as every build,
   then the trees. A half block's sum starts at −32·Σq (its weights are q − 32, q the 6-bit value: the same exact
   integer as the q8 kernels' S) and takes its own scale a = d·sc (Q6_K's scales are per 16 values); no mins.
   `next` as for Q4_K. */
static inline __attribute__((always_inline)) void packed_tile_q6(const int R, const uint8_t *tile, int64_t G,
                                                                 const uint8_t *next, const uint8_t *xp,
                                                                 int64_t xstride, float *y, int64_t ldy) {
    __m512 sums[RMAX][16];
    const int64_t ahead = __atomic_load_n(&prefetch_bytes, __ATOMIC_RELAXED);
    for (int j = 0; j < 8; ++j) {
        __m512 acc0[RMAX], acc1[RMAX];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
        const uint8_t *vals = tile + G * 288 + j * G * 384;
        for (int64_t g = 0; g < G; ++g) {
            const uint8_t *v = vals + g * 384, *sc = tile + g * 288;
            q6_prefetch(v, ahead, next, j * G + g);
            const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)sc));
            const __m512 a0 = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                                   _mm_loadu_si128((const __m128i *)(sc + 32 + 16 * (2 * j))))));
            const __m512 a1 = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
                                                   _mm_loadu_si128((const __m128i *)(sc + 32 + 16 * (2 * j + 1))))));
            __m512i w0[4], w1[4];
            q6_values(v, w0, w1);
            const int64_t at = j * G + g;
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t *xr = xp + r * xstride, *xb = xr + 32 * at;
                const float *dx = (const float *)(xr + 32 * 8 * G);
                const int32_t *ns = (const int32_t *)(dx + 16 * G);
                __m512i s0 = _mm512_set1_epi32(ns[2 * at]), s1 = _mm512_set1_epi32(ns[2 * at + 1]);
#pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) {
                    s0 = dot4(s0, w0[c], _mm512_set1_epi32((int)rd32(xb + 4 * c)));
                    s1 = dot4(s1, w1[c], _mm512_set1_epi32((int)rd32(xb + 16 + 4 * c)));
                }
                const __m512 x = _mm512_set1_ps(dx[at]);
                acc0[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0), _mm512_mul_ps(a0, x), acc0[r]);
                acc1[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), _mm512_mul_ps(a1, x), acc1[r]);
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) sums[r][j] = acc0[r], sums[r][8 + j] = acc1[r];
    }
    for (int r = 0; r < R; ++r) {   /* q8_result, kind S: tree8(acc[j] + acc[8 + j]) */
        __m512 s8[8];
        for (int j = 0; j < 8; ++j) s8[j] = _mm512_add_ps(sums[r][j], sums[r][8 + j]);
        _mm512_storeu_ps(y + r * ldy, tree8_lanes(s8));
    }
}

/* R rows of X quantized per 256 values (xg, a row every xstride bytes: xg_from_xk) against one Q6_K tile, KIND_G6's
   arithmetic (quant.c) in each lane. The tile is read in its order (block-major) over spans of Q6G_SPAN groups: a
   span's integer sums wait in memory (L1) while block j passes over its groups, each half block's sum started at
   −32·Σq (its weights are q − 32) and scaled by its 8-bit scale as integers; then each group of the span takes its
   one fma, in order. Reading the tile group by group instead (8 streams of 384 bytes) made one row from memory 1.2×
   slower (benchmarks/results/2026-11-30-q6k). `next` as for the per-32 kernel. */
#define Q6G_SPAN 16
static inline __attribute__((always_inline)) void packed_tile_q6g(const int R, const uint8_t *tile, int64_t G,
                                                                  const uint8_t *next, const uint8_t *xg,
                                                                  int64_t xstride, float *y, int64_t ldy) {
    __m512 acc[RMAX];
    __m512i S[RMAX][Q6G_SPAN];
    const int64_t ahead = __atomic_load_n(&prefetch_bytes, __ATOMIC_RELAXED);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t g0 = 0; g0 < G; g0 += Q6G_SPAN) {
        const int n = G - g0 < Q6G_SPAN ? (int)(G - g0) : Q6G_SPAN;
#pragma GCC unroll 1
        for (int j = 0; j < 8; ++j)
            for (int i = 0; i < n; ++i) {
                const int64_t g = g0 + i;
                const uint8_t *v = tile + G * 288 + (j * G + g) * 384, *sc = tile + g * 288 + 32 + 32 * j;
                q6_prefetch(v, ahead, next, j * G + g);
                const __m512i c0 = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)sc));
                const __m512i c1 = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(sc + 16)));
                __m512i w0[4], w1[4];
                q6_values(v, w0, w1);
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) {
                    const uint8_t *xr = xg + r * xstride, *xb = xr + QKK * g + QK * j;
                    const int32_t *ns = (const int32_t *)(xr + XG6_NS(G)) + 16 * g + 2 * j;
                    __m512i s0 = _mm512_set1_epi32(ns[0]), s1 = _mm512_set1_epi32(ns[1]);
#pragma GCC unroll 4
                    for (int c = 0; c < 4; ++c) {
                        s0 = dot4(s0, w0[c], _mm512_set1_epi32((int)rd32(xb + 4 * c)));
                        s1 = dot4(s1, w1[c], _mm512_set1_epi32((int)rd32(xb + 16 + 4 * c)));
                    }
                    const __m512i t = _mm512_add_epi32(_mm512_mullo_epi32(s0, c0), _mm512_mullo_epi32(s1, c1));
                    S[r][i] = j ? _mm512_add_epi32(S[r][i], t) : t;
                }
            }
        for (int i = 0; i < n; ++i) {
            const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(tile + (g0 + i) * 288)));
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const __m512 D = _mm512_set1_ps(((const float *)(xg + r * xstride + QKK * G))[g0 + i]);
                acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[r][i]), _mm512_mul_ps(d, D), acc[r]);
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) _mm512_storeu_ps(y + r * ldy, acc[r]);
}

#if SPX_DRIVER
/* The packed kernel's activations (xp), a row every xp_stride(K) bytes: the signed q of block j of group g at
   32·(j·G + g), values in order, then dx and dx·Σq of block j of group g as floats at index
   j·G + g, then −32·Σq of its two halves as int32 at 2·(j·G + g) + h (Q6_K's weights are q − 32): a sweep over block j reads each row's values and scales in order (the q8 layout, XG, spreads a block
   over four cache lines and keeps every group's 704 bytes, more than L1 holds for a few rows of a long row). */
static inline int64_t xp_stride(int64_t K) { return (K + K / QK * 16 + 63) / 64 * 64; }

/* the signed q of block j of a quantized group (XG layout) into dst, in the values' order */
static inline void block_q(const uint8_t *xgroup, int j, uint8_t *dst) {
    for (int h = 0; h < 2; ++h)
        for (int c = 0; c < 4; ++c) memcpy(dst + 16 * h + 4 * c, xgroup + XG_S + 64 * c + 32 * h + 4 * j, 4);
}

/* The packed kernels' activations quantized per 256 values (xg), a row every xg_stride(K) bytes: the signed q in
   the row's order, then D of each group (float), then Σq of each block as int16 (8 a group, for Q4_K's mins), then
   −32·Σq of each half block as int32 (16 a group, half h of block j at 2j + h: Q6_K's offset, XG6_NS). */
static inline int64_t xg_stride(int64_t K) { return ((QKK + 84) * (K / QKK) + 63) / 64 * 64; }

static void xg_from_xk(const uint8_t *xk, int64_t M, int64_t K, uint8_t *xg, int threads) {
    const int64_t G = K / QKK;
#pragma omp parallel for num_threads(threads) schedule(static) if (M * K > QUANTIZE_ALONE)
    for (int64_t m = 0; m < M; ++m) {
        const uint8_t *xr = xk + m * xq_stride(K);
        uint8_t *o = xg + m * xg_stride(K);
        for (int64_t g = 0; g < G; ++g) {
            const uint8_t *xgr = xr + g * XG;
            for (int j = 0; j < 8; ++j) block_q(xgr, j, o + QKK * g + QK * j);
            memcpy(o + QKK * G + 4 * g, xgr + XG_DX, 4);
            for (int j = 0; j < 8; ++j) {   /* ns holds −16·Σq of half h at lane 8h + j */
                int16_t n0, n1;
                memcpy(&n0, xgr + XG_NS + 2 * j, 2);
                memcpy(&n1, xgr + XG_NS + 2 * (8 + j), 2);
                const int16_t q = (int16_t)(-((int32_t)n0 + n1) / 16);
                memcpy(o + (QKK + 4) * G + 16 * g + 2 * j, &q, 2);
                const int32_t h2[2] = {2 * (int32_t)n0, 2 * (int32_t)n1};
                memcpy(o + XG6_NS(G) + 4 * (16 * g + 2 * j), h2, 8);
            }
        }
    }
}

static void xp_from_xq(const uint8_t *xq, int64_t M, int64_t K, uint8_t *xp, int threads) {
    const int64_t G = K / QKK;
#pragma omp parallel for num_threads(threads) schedule(static) if (M * K > QUANTIZE_ALONE)
    for (int64_t m = 0; m < M; ++m) {
        const uint8_t *xr = xq + m * xq_stride(K);
        uint8_t *o = xp + m * xp_stride(K);
        float *dx = (float *)(o + K), *xs = dx + K / QK;
        for (int64_t g = 0; g < G; ++g)
            for (int j = 0; j < 8; ++j) {
                block_q(xr + g * XG, j, o + 32 * (j * G + g));
                memcpy(dx + j * G + g, xr + g * XG + XG_DX + 4 * j, 4);
                memcpy(xs + j * G + g, xr + g * XG + XG_XS + 4 * j, 4);
                for (int h = 0; h < 2; ++h) {   /* ns holds −16·Σq of half h at lane 8h + j */
                    int16_t ns;
                    memcpy(&ns, xr + g * XG + XG_NS + 2 * (8 * h + j), 2);
                    ((int32_t *)(xs + K / QK))[2 * (j * G + g) + h] = 2 * (int32_t)ns;
                }
            }
    }
}

/* Outputs [n0, n1) (whole tiles: spx_matmul splits them so) of a packed segment for all M rows: a long X is cut
   into chunks that stay in cache, each chunk's rows pass over each tile in groups of at most RMAX, the first
   group bringing the next tile into L2. */
static void packed_segment(int type, const uint8_t *xp, int64_t M, int64_t K, const uint8_t *w, int64_t n0,
                           int64_t n1, float *y, int64_t ldy) {
    const int64_t G = K / QKK, stride = type == T_Q6_K_P16 ? xp_stride(K) : xg_stride(K), tb = pack_tile_bytes(type, K), t1 = n1 / PACK_ROWS;
    int64_t chunk = XCHUNK_BYTES / stride;
    chunk = chunk < RMAX ? RMAX : chunk / RMAX * RMAX;
    for (int64_t m0 = 0; m0 < M; m0 += chunk) {
        const int64_t m1 = m0 + chunk < M ? m0 + chunk : M;
        for (int64_t t = n0 / PACK_ROWS; t < t1; ++t)
            for (int64_t r = m0; r < m1; r += RMAX) {
                const uint8_t *tile = w + t * tb, *next = r == m0 && t + 1 < t1 ? tile + tb : 0;
                const uint8_t *x = xp + r * stride;
                float *out = y + r * ldy + t * PACK_ROWS;
#define PACKED_R(N)                                                                 \
    case N:                                                                         \
        if (type == T_Q6_K_P16) packed_tile_q6(N, tile, G, next, x, stride, out, ldy); \
        else if (type == T_Q6_K_PG) packed_tile_q6g(N, tile, G, next, x, stride, out, ldy); \
        else packed_tile(N, tile, G, next, x, stride, out, ldy);                    \
        break;
                switch (m1 - r < RMAX ? m1 - r : RMAX) {
                    PACKED_R(1) PACKED_R(2) PACKED_R(3) PACKED_R(4) PACKED_R(5) PACKED_R(6) PACKED_R(7)
                    default: PACKED_R(8)
                }
#undef PACKED_R
            }
    }
}
#endif
#endif
