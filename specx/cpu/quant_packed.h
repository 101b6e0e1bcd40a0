/* quant.c's packed Q4_K, Q4_0 and Q6_K (T_Q4_K_P16, T_Q4_0_P16, T_Q6_K_P16), included by it in this place: the
   layouts, their packing and unpacking (every build). The AVX-512 build's q8 kernels on them (quant_packed_q8.h), the
   AVX2 build's for Q4_K and Q6_K with groups (quant_packed_avx2.h: the only kernels that read them; cpu/packing.py
   packs only for those) and their driver (quant_packed_driver.h) follow.
   Q4_K is described here; Q6_K's tile is group-major too, with Q4_K's lanes (KIND_G6: q8 with groups, T_Q6_K_PG;
   per 32 values, kind S, its block j is swept over the groups with 16 float running sums); Q4_0's is block-major,
   swept a block position at a time over the groups (kind S).

   Why: the q8 kernels keep one weight row's group of 256 values across a vector (lane 8h + j = half h of block j)
   and decode it once for the call's rows; that decoding (nibbles, the 6-bit scales and mins) costs a Q4_K group
   more than a row's products, and a verify of 4-5 rows pays it in full where the weights are already in cache.
   With 16 weight rows in a vector's lanes instead, a tile's nibbles are two masks per 64 bytes and its scales
   one widening per 16 rows, the activations are broadcast from memory, and the decoding nearly disappears
   (benchmarks/experiments/2026-11-30-packed). The arithmetic is quant.c's q8 arithmetic to the bit (Q4_K: KIND_G,
   Q6_K: kind S or KIND_G6): for each (row, output) the same exact integers, the same float steps in the same order. Only
   where the sums live differs: each lane of a vector of sums is one output of the tile (Q4_K's and Q6_K's weight
   vectors hold two rows a lane: below).

   Layout. A tile is 16 consecutive weight rows (a packed matrix has a multiple of 16 rows); it takes the bytes
   those rows take in the file (G groups × 16 × 144), group-major: group g at g × PACK_GROUP_Q4 bytes,
     scales, 256 bytes: d of the 16 rows (f16, 32 bytes), dmin (32 bytes), then the group's 12 scale bytes
       transposed (byte i of row o at 64 + 16·i + o);
     values, 8 × 256 bytes: for block j, 4 vectors c of 64 bytes in which two rows share a lane (pair_lane):
       row o's values 8c + 4e .. 8c + 4e + 3 of block j sit in bytes 0..3 of lane pair_lane(o) + e (e = 0, 1),
       in the nibble pair_shift(o).
   Why rows share lanes: a row's two sums over a block (lanes e = 0, 1: 16 values each, q ≤ 15 times |x| ≤ 127) fit
   16 bits, and `packs` of the low-nibble rows' sums with the high-nibble rows' lays a row's two side by side in its
   own dword, in the rows' order; one `dpwssd` with the block's scale in both halves then adds sc·(sum0 + sum1) to
   the group's integer, which the file layout's kernels form with a multiply of 32-bit lanes and two adds (a 5-row
   verify's hot pass 0.8× the time: benchmarks/results/2026-12-01-pairs). The activations are broadcast 8 bytes at a time, in order.
   The sweep goes group by group, each weight vector read and masked once per call and used by every row, so the
   tile is read in order; meanwhile the next tile is brought into L2 in order, an eighth of a group per step
   (without that one row streamed 10-20% slower than the file's layout: benchmarks/experiments/2026-11-30-packed). */
#define PACK_ROWS 16   /* weight rows a tile holds: the lanes of a 512-bit vector of float32 */
#define PACK_GROUP_Q4 (9 * 256)   /* a packed Q4_K group of 16 rows: 256 bytes of scales, 8 blocks of 256 */
#define PACK_GROUP_Q6 (288 + 8 * 384)   /* a packed Q6_K group of 16 rows: 288 bytes of scales, 8 blocks of 384 */
#define XG6_NS(G) ((QKK + 20) * (G))   /* where xg's Q6_K offsets (−32·Σq per packed lane) start (xg_stride) */

/* Row o (0..15) of a Q4_K or Q6_K tile shares lane pair_lane(o) + e with row o ± 2: rows 4k, 4k + 1 in the low
   nibbles of lanes 4k, 4k + 2 (+ e), rows 4k + 2, 4k + 3 in the high ones, so that packs(low rows' dword sums, high
   rows' sums) puts row o's two 16-bit sums in dword o */
static inline int pair_lane(int o) { return 4 * (o / 4) + 2 * (o % 2); }
static inline int pair_shift(int o) { return 4 * ((o / 2) % 2); }

static inline int is_packed(int type) {
    return type == T_Q4_0_P16 || type == T_Q4_K_P16 || type == T_Q6_K_P16 || type == T_Q6_K_PG;
}
static inline int packed_file_type(int type) { return type == T_Q4_0_P16 ? T_Q4_0 : type == T_Q4_K_P16 ? T_Q4_K : T_Q6_K; }

/* Q4_0's packed tile: 16 rows' block b = 8g + j (b < NB = K / 32; g the group of 256 values, j the block in it) in
   the unit q40_unit(NB, j, g), block-major (block position j over the groups, as the per-32 sweep reads them; a row
   of 896 values has only 3 blocks 4..7 for 4 blocks 0..3), each unit 288 bytes, the rows' 16 × 18 in the file:
   d of the 16 rows (f16, 32 bytes), then 4 vectors of 64 bytes whose lane o holds row o's qs bytes 4c..4c + 3
   (value 4c + e in the low nibble of byte 4c + e, 16 + 4c + e in the high one: the file's own order). */
#define PACK_UNIT_Q40 (PACK_ROWS * 18)
static inline int64_t xp_groups(int64_t K) { return (K + QKK - 1) / QKK; }   /* the packed activations' groups (xp) */
static inline int64_t q40_groups(int64_t NB, int j) { return NB / 8 + (j < NB % 8); }   /* blocks at position j */
static inline int64_t q40_unit(int64_t NB, int j, int64_t g) {
    return j * (NB / 8) + (j < NB % 8 ? j : NB % 8) + g;
}

/* ---------------------------------------------------------------- the layout (every build) */

static inline int64_t pack_tile_bytes(int type, int64_t K) { return K / block_values(type) * PACK_ROWS * block_bytes(type); }

#if SPX_DRIVER

/* Row o of the tile's group g, as the file holds it (144 bytes), written to b. */
static void unpack_group(const uint8_t *tile, int64_t g, int o, uint8_t *b) {
    const uint8_t *s = tile + g * PACK_GROUP_Q4;
    memcpy(b, s + 2 * o, 2);
    memcpy(b + 2, s + 32 + 2 * o, 2);
    for (int i = 0; i < 12; ++i) b[4 + i] = s[64 + 16 * i + o];
    memset(b + 16, 0, 128);
    for (int j = 0; j < 8; ++j) {
        const uint8_t *v = s + 256 * (1 + j);
        uint8_t *qs = b + 16 + 32 * (j / 2);   /* block j: the low (even j) or high (odd j) nibbles of the pair's 32 bytes */
        for (int c = 0; c < 4; ++c)
            for (int e = 0; e < 2; ++e)
                for (int k = 0; k < 4; ++k) {
                    const int q = (v[64 * c + 4 * (pair_lane(o) + e) + k] >> pair_shift(o)) & 15;
                    qs[8 * c + 4 * e + k] |= (uint8_t)(q << (4 * (j & 1)));
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
            }
        for (int o = 0; o < PACK_ROWS; ++o) {   /* rows o (low nibbles) and o + 2 (high) share lanes: o % 4 < 2 */
            if (o % 4 >= 2) continue;
            for (int64_t g = 0; g < G; ++g) {
                const uint8_t *qa = src + ((t * PACK_ROWS + o) * G + g) * 144 + 16, *qb = qa + 2 * G * 144;
                for (int j = 0; j < 8; ++j) {   /* block j: the low (even j) or high (odd j) nibbles of 32 bytes */
                    const int sh = 4 * (j & 1);
                    uint8_t *v = tile + g * PACK_GROUP_Q4 + 256 * (1 + j);
                    for (int c = 0; c < 4; ++c)
                        for (int e = 0; e < 2; ++e) {   /* values 8c + 4e .., a byte each, for both rows */
                            const int at = 32 * (j / 2) + 8 * c + 4 * e;
                            const uint32_t m = 0x0f0f0f0fu, word = ((rd32(qa + at) >> sh) & m) | (((rd32(qb + at) >> sh) & m) << 4);
                            memcpy(v + 64 * c + 4 * (pair_lane(o) + e), &word, 4);
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

/* Q6_K's packed tile: group-major, group g at g × PACK_GROUP_Q6 bytes: 288 bytes of scales (d of the 16 rows as
   f16, then scale i of row o at 32 + 16·i + o), then per block j 384 bytes: 4 vectors c holding the low 4 bits of row o's values
   8c + 4e .. 8c + 4e + 3 in bytes 0..3 of lane pair_lane(o) + e, nibble pair_shift(o) (Q4_K's order), then 2
   vectors, one for the rows of low nibbles and one for those of high nibbles, whose lane pair_lane(o) + e byte k
   holds the high 2 bits of value 8c + 4e + k at bits 2c. The same 16 × 210 bytes a group as the file. */
static void unpack_group_q6(const uint8_t *tile, int64_t G, int64_t g, int o, uint8_t *b) {
    const uint8_t *s = tile + g * PACK_GROUP_Q6;
    const int lane = pair_lane(o), high = pair_shift(o) / 4;
    memset(b, 0, 192);
    for (int i = 0; i < 16; ++i) b[192 + i] = s[32 + 16 * i + o];
    memcpy(b + 208, s + 2 * o, 2);
    for (int j = 0; j < 8; ++j) {
        const uint8_t *v = s + 288 + j * 384;
        for (int c = 0; c < 4; ++c)
            for (int e = 0; e < 2; ++e)
                for (int k = 0; k < 4; ++k) {
                    const int lo = (v[64 * c + 4 * (lane + e) + k] >> (4 * high)) & 15;
                    const int hi = (v[256 + 64 * high + 4 * (lane + e) + k] >> (2 * c)) & 3;
                    q6_put(b, j, 8 * c + 4 * e + k, lo | (hi << 4));
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
                uint8_t *s = tile + g * PACK_GROUP_Q6;
                memcpy(s + 2 * o, b + 208, 2);
                for (int i = 0; i < 16; ++i) s[32 + 16 * i + o] = b[192 + i];
            }
        for (int o = 0; o < PACK_ROWS; ++o) {   /* rows o (low nibbles) and o + 2 (high) share lanes: o % 4 < 2 */
            if (o % 4 >= 2) continue;
            for (int64_t g = 0; g < G; ++g) {
                const uint8_t *rb[2] = {src + ((t * PACK_ROWS + o) * G + g) * 210, src + ((t * PACK_ROWS + o + 2) * G + g) * 210};
                for (int j = 0; j < 8; ++j) {   /* those fields, 4 values at once */
                    const int n = j / 4, quarter = j % 4, sh = 4 * (quarter >> 1);
                    uint8_t *v = tile + g * PACK_GROUP_Q6 + 288 + j * 384;
                    for (int c = 0; c < 4; ++c)
                        for (int e = 0; e < 2; ++e) {
                            const int p = 8 * c + 4 * e, at = 4 * (pair_lane(o) + e);
                            uint32_t low = 0;
                            for (int r = 0; r < 2; ++r)
                                low |= ((rd32(rb[r] + 64 * n + 32 * (quarter & 1) + p) >> sh) & 0x0f0f0f0fu) << (4 * r);
                            memcpy(v + 64 * c + at, &low, 4);
                        }
                    for (int r = 0; r < 2; ++r)   /* byte k of lane pair_lane(o) + e: values 8c + 4e + k at bits 2c */
                        for (int e = 0; e < 2; ++e) {
                            uint32_t word = 0;
                            for (int c = 0; c < 4; ++c)
                                word |= ((rd32(rb[r] + 128 + 32 * n + 8 * c + 4 * e) >> (2 * quarter)) & 0x03030303u) << (2 * c);
                            memcpy(v + 256 + 64 * r + 4 * (pair_lane(o) + e), &word, 4);
                        }
                }
            }
        }
    }
    return 0;
}

/* rows (a multiple of PACK_ROWS) × K Q4_0 rows as the file holds them into the packed layout at dst (the same
   number of bytes). Returns 0, or 2 where rows or K do not fit the layout. */
int spx_pack_q40(const uint8_t *src, int64_t rows, int64_t K, uint8_t *dst) {
    if (rows < 0 || rows % PACK_ROWS || K <= 0 || K % QK) return 2;
    const int64_t NB = K / QK;
    for (int64_t t = 0; t < rows / PACK_ROWS; ++t) {
        uint8_t *tile = dst + t * pack_tile_bytes(T_Q4_0_P16, K);
        for (int o = 0; o < PACK_ROWS; ++o)
            for (int64_t b = 0; b < NB; ++b) {
                const uint8_t *blk = src + ((t * PACK_ROWS + o) * NB + b) * 18;
                uint8_t *u = tile + q40_unit(NB, (int)(b % 8), b / 8) * PACK_UNIT_Q40;
                memcpy(u + 2 * o, blk, 2);
                for (int c = 0; c < 4; ++c) memcpy(u + 32 + 64 * c + 4 * o, blk + 2 + 4 * c, 4);
            }
    }
    return 0;
}

/* Row `row` of a packed matrix of K values as the file holds it (its blocks at b). */
static void unpack_row(int type, const uint8_t *w, int64_t K, int64_t row, uint8_t *b) {
    const int64_t G = K / QKK;
    const uint8_t *tile = w + row / PACK_ROWS * pack_tile_bytes(type, K);
    if (type == T_Q4_0_P16) {
        const int64_t NB = K / QK;
        const int o = (int)(row % PACK_ROWS);
        for (int64_t k = 0; k < NB; ++k) {
            const uint8_t *u = tile + q40_unit(NB, (int)(k % 8), k / 8) * PACK_UNIT_Q40;
            memcpy(b + 18 * k, u + 2 * o, 2);
            for (int c = 0; c < 4; ++c) memcpy(b + 18 * k + 2 + 4 * c, u + 32 + 64 * c + 4 * o, 4);
        }
        return;
    }
    for (int64_t g = 0; g < G; ++g) {
        if (type != T_Q4_K_P16) unpack_group_q6(tile, G, g, (int)(row % PACK_ROWS), b + g * 210);
        else unpack_group(tile, g, (int)(row % PACK_ROWS), b + g * 144);
    }
}

/* Rows ids[0..n) of a packed matrix of K values as the file holds them, one after another at out (a trimmed
   output layer, VocabTrim's rows). Returns 0, or 2 for a type that is not packed or an id outside its rows. */
int spx_unpack_rows(int32_t type, const uint8_t *data, int64_t rows, int64_t K, const int64_t *ids, int64_t n,
                    uint8_t *out) {
    if (!is_packed(type) || K <= 0 || K % block_values(type)) return 2;
    for (int64_t i = 0; i < n; ++i)
        if (ids[i] < 0 || ids[i] >= rows) return 2;
    const int64_t rb = K / block_values(type) * block_bytes(type);
    for (int64_t i = 0; i < n; ++i) unpack_row(type, data, K, ids[i], out + i * rb);
    return 0;
}
#endif

/* What the AVX-512 and AVX2 packed kernels (quant_packed_q8.h, quant_packed_avx2.h) share: how many rows a pass
   takes, a Q4_K block's scales as they lie in a packed group, a sweep's prefetches */
#if defined(SPX_AVX512) || defined(SPX_AVX2)
/* Rows a pass over a Q4_K or Q6_K tile takes at most: a verify of 8 or 16 drafts (9, 17 rows) in one or two passes,
   not 8 + 1 or 8 + 8 + 1, each pass decoding the tile again (those kernels' 9-17-row calls 0.85-0.96× the time;
   Q4_0's kernel, two running sums a row, keeps RMAX: benchmarks/results/2026-11-30-q40, rmax.out) */
#define PACK_RMAX 9
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

#define Q6_STEP (PACK_GROUP_Q6 / 8)   /* the next Q6_K tile's bytes brought into L2 a step: a block's share of a group */

/* One step of a sweep over a tile, the `bytes` it reads at v: their L1 request `ahead` bytes on (none at 0), and
   `step` bytes of the next tile from `next_at` (0: none) into L2, so that tile too is brought in in the order the
   sweep reads it */
static inline __attribute__((always_inline)) void sweep_prefetch(const uint8_t *v, int64_t bytes, int64_t ahead,
                                                                 const uint8_t *next_at, int64_t step) {
    if (ahead) prefetch_at(v + ahead, bytes);
    if (next_at)
        for (int64_t i = 0; i < step; i += 64) _mm_prefetch((const char *)next_at + i, _MM_HINT_T1);
}

#endif
