/* quant.c's SIMD helpers (AVX2 and AVX-512 builds), included by it in this place: half floats, prefetching,
   scale and table readers shared by quant_avx512.h and quant_avx2.h. */

/* ---------------------------------------------------------------- SIMD helpers (AVX2 and AVX-512 builds) */
#if defined(SPX_AVX512) || defined(SPX_AVX2)
#if defined(__AVX512VNNI__) || (defined(SPX_AVX2) && defined(__AVXVNNI__))
#define SPX_VNNI 1
#endif
#endif
#ifndef SPX_VNNI
#define SPX_VNNI 0
#endif
#if defined(SPX_AVX512) && defined(__AVX512VBMI__)   /* byte permutes gather the 32-value types' qs (qs_at) */
#define SPX_VBMI 1
#else
#define SPX_VBMI 0
#endif
#if defined(SPX_AVX512) || defined(SPX_AVX2)

/* X_OFFSET: the signed weight types hold w = q − off with q unsigned (Q4_0 off 8, Q5_0 16, Q6_K 32), or signed
   bytes that become unsigned as w + 128 (Q8_0, IQ4_NL, IQ4_XS: off 128). Against x bytes q_x + 128 such weights
   need a −128·Σw correction per lane of every decoded group (a byte sum and one dot product in the AVX-512
   build, eight dot products in the AVX2 one; four dot products for the wide types). A call of at most OFFSET_ROWS rows
   decodes them as q instead and starts each row's sums at −off·Σq_x (the activations' ns, scaled by a shift):
   Σ(q − off)·q_x is the same integer, so the same bits, for one widening and shift a row. Without VNNI the wide
   types keep their |w| products (maddubs would saturate on 255·127 pairs). More rows keep the correction: past
   OFFSET_ROWS rows the widenings cost more than the correction they save, past one for the wide types (whose
   offset also costs a byte flip a vector: 2 rows timed even; benchmarks/results/2026-11-29-offset). */
#define OFFSET_ROWS 4
#define OFFSET_ROWS_WIDE 1
static inline int x_offset(int type, int R) {
    return (R <= OFFSET_ROWS && (type == T_Q4_0 || type == T_Q5_0 || type == T_Q6_K || type == T_Q6_K_G))
           || (SPX_VNNI && R <= OFFSET_ROWS_WIDE && wide_weights(type));
}
/* off / 16 as a shift of ns (which holds −16·Σq_x): Q4_0 −1 (a halving), Q5_0 0, Q6_K 1, the wide types 3 */
static inline int offset_shift(int type) {
    return type == T_Q4_0 ? -1 : type == T_Q5_0 ? 0 : type == T_Q6_K || type == T_Q6_K_G ? 1 : 3;
}

static inline float f16at(const uint8_t *p) { return _cvtsh_ss(rd16(p)); }

/* prefetch the n bytes that lie the call's distance (prefetch_now) after p into L1 and, with prefetch_l2, those
   twice as far into L2 (one request per cache line each). L1 requests are bounded by the core's few line-fill
   buffers; the L2 ones keep more lines in flight (benchmarks/results/2026-11-27-five-rows). */
static inline __attribute__((always_inline)) int64_t prefetch_distance(void) {
    return __atomic_load_n(&prefetch_now, __ATOMIC_RELAXED);
}

static inline __attribute__((always_inline)) void prefetch_ahead(const uint8_t *p, int64_t n) {
    const int64_t d = prefetch_distance();
    if (!d) return;
    for (int64_t i = 0; i < n; i += 64) _mm_prefetch((const char *)p + d + i, _MM_HINT_T0);
    if (prefetch_l2)
        for (int64_t i = 0; i < n; i += 64) _mm_prefetch((const char *)p + 2 * d + i, _MM_HINT_T1);
}

/* prefetch the n bytes at p into L1, where the kernels will read next something other than what lies ahead
   of their reads (XSPAN: the same span of the next output); off with the other prefetches */
static inline __attribute__((always_inline)) void prefetch_at(const uint8_t *p, int64_t n) {
    if (!prefetch_distance()) return;
    for (int64_t i = 0; i < n; i += 64) _mm_prefetch((const char *)p + i, _MM_HINT_T0);
}

static inline __attribute__((always_inline)) void prefetch_l2_at(const uint8_t *p, int64_t n) {
    if (!prefetch_distance()) return;
    for (int64_t i = 0; i < n; i += 64) _mm_prefetch((const char *)p + i, _MM_HINT_T1);
}

/* XSPAN's order: where the span that outputs c0 + c (c may run past n, into the next spans) read lies, 0 past the end */
static inline const uint8_t *span_at(const uint8_t *w, int64_t rowbytes, int64_t gbytes, int64_t c0, int64_t n,
                                     int64_t c, int64_t s0, int64_t span, int64_t groups) {
    const int64_t s = s0 + c / n * span;
    return s < groups ? w + (c0 + c % n) * rowbytes + s * gbytes : 0;
}

static inline __attribute__((always_inline)) __m256 halves8(const uint8_t *b, int64_t stride) {
    return _mm256_cvtph_ps(_mm_setr_epi16((short)rd16(b), (short)rd16(b + stride), (short)rd16(b + 2 * stride),
                                          (short)rd16(b + 3 * stride), (short)rd16(b + 4 * stride),
                                          (short)rd16(b + 5 * stride), (short)rd16(b + 6 * stride),
                                          (short)rd16(b + 7 * stride)));
}

/* 8 dwords at p, p + stride, ... as one vector, built in registers (assembled in memory by the compiler,
   its wide reload waited for the stores to drain: 1.7x slower Q5_1) */
static inline __attribute__((always_inline)) __m256i dwords8(const uint8_t *p, int64_t stride) {
    __m128i a = _mm_cvtsi32_si128((int)rd32(p)), b = _mm_cvtsi32_si128((int)rd32(p + 4 * stride));
    a = _mm_insert_epi32(a, (int)rd32(p + stride), 1);
    b = _mm_insert_epi32(b, (int)rd32(p + 5 * stride), 1);
    a = _mm_insert_epi32(a, (int)rd32(p + 2 * stride), 2);
    b = _mm_insert_epi32(b, (int)rd32(p + 6 * stride), 2);
    a = _mm_insert_epi32(a, (int)rd32(p + 3 * stride), 3);
    b = _mm_insert_epi32(b, (int)rd32(p + 7 * stride), 3);
    return _mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1);
}

static inline int32_t hsum8_epi32(__m256i s) {   /* exact: any order gives the same integer */
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
    return _mm_cvtsi128_si32(_mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1)));
}

static inline float hsum8(__m256 v) {   /* tree8's order */
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}

/* Q4_K/Q5_K sub-block scales and mins as integers (get_scale_min_k4 on 8 lanes). */
static inline void k4_ints(const uint8_t *g, __m256i *sc, __m256i *m) {
    const __m256i s = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(g + 4)));
    const char z = (char)0x80;
#define DW(i) (char)(i), z, z, z
#define ZZ z, z, z, z
    const __m256i u = _mm256_shuffle_epi8(s, _mm256_setr_epi8(DW(0), DW(1), DW(2), DW(3), DW(8), DW(9), DW(10), DW(11)));
    const __m256i v = _mm256_shuffle_epi8(s, _mm256_setr_epi8(DW(4), DW(5), DW(6), DW(7), DW(8), DW(9), DW(10), DW(11)));
    const __m256i hs = _mm256_shuffle_epi8(s, _mm256_setr_epi8(ZZ, ZZ, ZZ, ZZ, DW(0), DW(1), DW(2), DW(3)));
    const __m256i hm = _mm256_shuffle_epi8(s, _mm256_setr_epi8(ZZ, ZZ, ZZ, ZZ, DW(4), DW(5), DW(6), DW(7)));
#undef DW
#undef ZZ
    const __m256i low = _mm256_setr_epi32(63, 63, 63, 63, 15, 15, 15, 15);
    *sc = _mm256_or_si256(_mm256_and_si256(u, low), _mm256_slli_epi32(_mm256_srli_epi32(hs, 6), 4));
    *m = _mm256_or_si256(_mm256_and_si256(_mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), low),
                         _mm256_slli_epi32(_mm256_srli_epi32(hm, 6), 4));
}

/* Q4_K/Q5_K sub-block scales and mins (get_scale_min_k4 on 8 lanes): a = d·sc, b = dmin·m. */
static inline void k4_scales(const uint8_t *g, __m256 *a, __m256 *b) {
    __m256i sc, m;
    k4_ints(g, &sc, &m);
    *a = _mm256_mul_ps(_mm256_set1_ps(f16at(g)), _mm256_cvtepi32_ps(sc));
    *b = _mm256_mul_ps(_mm256_set1_ps(f16at(g + 2)), _mm256_cvtepi32_ps(m));
}

/* Q3_K's 16 scales (q3_scale on 16 bytes): byte i = sc_i − 32, signed. The 12 scale bytes are read alone (the
   block ends 2 bytes after them). */
static inline __m128i q3_scales(const uint8_t *g) {
    const __m128i s = _mm_setr_epi32((int)rd32(g + 96), (int)rd32(g + 100), (int)rd32(g + 104), 0);
    const __m128i nib = _mm_set1_epi8(15);
    const __m128i lo = _mm_unpacklo_epi64(_mm_and_si128(s, nib), _mm_and_si128(_mm_srli_epi16(s, 4), nib));
    const __m128i h = _mm_shuffle_epi8(s, _mm_setr_epi8(8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11));
    const __m128i hi = _mm_and_si128(_mm_srlv_epi32(h, _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
    return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
}

/* IQ4_XS: the 8 sub-block scales d·(ls − 32) (iq4xs_scale on 8 lanes): low bits 4ib.. of the scales_l dword,
   high bits 2ib.. of scales_h */
static inline __m256 iq4xs_scales(const uint8_t *g) {
    const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)rd32(g + 4)),
                                                          _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)), _mm256_set1_epi32(15));
    const __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(rd16(g + 2)),
                                                          _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)), _mm256_set1_epi32(3));
    const __m256i ls = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
    return _mm256_mul_ps(_mm256_set1_ps(f16at(g)), _mm256_cvtepi32_ps(ls));
}

/* IQ4_VALUES in each 16-byte lane: one byte shuffle (vpshufb) of the nibbles looks 16 or 32 of them up */
static inline __m128i iq4_values128(void) { return _mm_loadu_si128((const __m128i *)IQ4_VALUES); }

#define Q8_PAD (8 * 34)   /* 8 blocks of the largest 32-value type (Q8_0: 34 bytes); at least WORDS_READ */

/* Group s of weight row wr for the q8 kernels: where its bytes are, and in *tail how many blocks a 32-value type's
   partial last group holds (0: a whole group). A 32-value type's group is decoded 8 blocks at a time, a partial
   one reading on into the next row of the call (TAIL in quant.c), and a decoder may read `past` bytes beyond
   the 8 blocks (AVX-512: words_at). Where those reads would pass the end of the next row (of this row, on the
   call's last row: `last`), the group's blocks are copied into the zero padding `pad` (Q8_PAD bytes) first:
   reading further could leave the tensor. */
static inline __attribute__((always_inline)) const uint8_t *q8_group_at(int type, const uint8_t *wr, int64_t s,
                                                                        int64_t nblocks, int last, int past,
                                                                        uint8_t *pad, int *tail) {
    const int bytes = block_bytes(type), kt = block_values(type) == QKK;
    const uint8_t *g = wr + (kt ? s : 8 * s) * bytes;
    *tail = !kt && nblocks - 8 * s < 8 ? (int)(nblocks - 8 * s) : 0;
    if (!kt && 8 * bytes + past > (nblocks - 8 * s + (last ? 0 : nblocks)) * bytes) {
        memset(pad, 0, Q8_PAD);
        memcpy(pad, g, (*tail ? *tail : 8) * bytes);
        g = pad;
    }
    return g;
}

#endif
