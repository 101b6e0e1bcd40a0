/* quant.c's AVX-512 q8 mode, decoding: a group's weights (the file's layout) decoded into the q8 layout and its
   corrections, one kernel per block type; quant_avx512_rows.h sums them with the rows' activations. Included by
   quant.c after quant_avx512.h (its lane index macros). */
#if defined(SPX_AVX512)

/* ---- q8 mode: a group's weights decoded into the q8 layout (W[k] lane 8h + j = 4 values of block j, half h) */
typedef struct {
    __m512i w[4];        /* signed 8-bit weights */
    __m512i corr;        /* −128·Σw per lane: the x bytes are q + 128 */
    __m512 a;            /* a per lane (8h + j); KIND_G: sc_j as int32 in lanes j and 8 + j; KIND_G6: sc_2j+h */
    __m256 b;            /* b per block (SM, KM); KIND_G: m_j as int16 in lanes j and 8 + j */
    __m512 b16;          /* b per lane (K2); KIND_G: d and dmin in lanes 0 and 1; KIND_G6: d in lane 0 */
#if !SPX_VNNI
    __mmask64 neg[4];    /* wide_weights without VNNI: w < 0 (w holds |w|, and x is used signed) */
#endif
} wq;

static inline __attribute__((always_inline)) __m512i four16(const uint8_t *b, int64_t stride) {
    __m512i z = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)b));
    z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(b + stride)), 1);
    z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(b + 2 * stride)), 2);
    return _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(b + 3 * stride)), 3);
}

static inline __attribute__((always_inline)) __m512i dot4(__m512i acc, __m512i u, __m512i w) {
#if SPX_VNNI
    return _mm512_dpbusd_epi32(acc, u, w);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, w), _mm512_set1_epi16(1)));
#endif
}

/* The 16-bit fields of a group of 8 blocks of 32 values (block_bytes B) besides their values, gathered from the
   WORDS_READ bytes at g by two word permutes instead of one load per block and field: words 0..7 the blocks'
   scales d, 8..15 Q4_1's and Q5_1's mins m, 16..31 Q5_0's and Q5_1's high-bit dwords qh (2 words each). */
#define WORDS_READ 192
_Static_assert(Q8_PAD >= WORDS_READ, "q8_group_at's zero padding must hold a gather's reads");
#define WD(B, off) ((off) / 2), ((B) + (off)) / 2, (2 * (B) + (off)) / 2, (3 * (B) + (off)) / 2, (4 * (B) + (off)) / 2, \
                   (5 * (B) + (off)) / 2, (6 * (B) + (off)) / 2, (7 * (B) + (off)) / 2
#define Q1(B, off, j) ((j) * (B) + (off)) / 2, ((j) * (B) + (off)) / 2 + 1
#define WQ(B, off) Q1(B, off, 0), Q1(B, off, 1), Q1(B, off, 2), Q1(B, off, 3), Q1(B, off, 4), Q1(B, off, 5), \
                   Q1(B, off, 6), Q1(B, off, 7)
#define Z8 0, 0, 0, 0, 0, 0, 0, 0
static const uint16_t WORD_TABLE[4][32] __attribute__((aligned(64))) = {
    {WD(18, 0), Z8, Z8, Z8},                                   /* Q4_0 and IQ4_NL: d */
    {WD(20, 0), WD(20, 2), Z8, Z8},                            /* Q4_1: d, m */
    {WD(22, 0), Z8, WQ(22, 2)},                                /* Q5_0: d, qh */
    {WD(24, 0), WD(24, 2), WQ(24, 4)},                         /* Q5_1: d, m, qh */
};
#undef WD
#undef WQ
#undef Q1
#undef Z8

static inline int words_row(int type) {
    return type == T_Q4_1 ? 1 : type == T_Q5_0 ? 2 : type == T_Q5_1 ? 3 : 0;
}

/* bytes a decode reads beyond the group's end (q8_group_at pads the call's last row for them) */
static inline int words_past(int type) {
    const int gathered = type == T_Q4_0 || type == T_Q4_1 || type == T_Q5_0 || type == T_Q5_1 || type == T_IQ4_NL;
    return gathered ? WORDS_READ - 8 * block_bytes(type) : 0;
}

#if SPX_VBMI
/* The 32-value types' values (16 qs bytes a block) of the group's 8 blocks as four16 lays them out (blocks 0..3 in
   z0's 128-bit lanes, 4..7 in z1's), by two byte permutes of the WORDS_READ bytes at g instead of eight 16-byte
   loads: z0 from bytes 0..127, z1 from 64..191. QS_TABLE: each lane byte's source (qs offset in the block + block ·
   block bytes + byte), for Q4_0 and IQ4_NL, Q4_1, Q5_0 and Q5_1 (words_row's rows). */
#define R16(o) (o), (o) + 1, (o) + 2, (o) + 3, (o) + 4, (o) + 5, (o) + 6, (o) + 7, (o) + 8, (o) + 9, (o) + 10, \
               (o) + 11, (o) + 12, (o) + 13, (o) + 14, (o) + 15
#define R64(B, o) R16(o), R16((o) + (B)), R16((o) + 2 * (B)), R16((o) + 3 * (B))
static const uint8_t QS_TABLE[4][2][64] __attribute__((aligned(64))) = {
    {{R64(18, 2)}, {R64(18, 2 + 4 * 18 - 64)}},
    {{R64(20, 4)}, {R64(20, 4 + 4 * 20 - 64)}},
    {{R64(22, 6)}, {R64(22, 6 + 4 * 22 - 64)}},
    {{R64(24, 8)}, {R64(24, 8 + 4 * 24 - 64)}},
};
#undef R64
#undef R16

static inline __attribute__((always_inline)) void qs_at(const int type, const uint8_t *g, __m512i *z0, __m512i *z1) {
    const __m512i a = _mm512_loadu_si512(g), b = _mm512_loadu_si512(g + 64), c = _mm512_loadu_si512(g + 128);
    *z0 = _mm512_permutex2var_epi8(a, _mm512_load_si512(QS_TABLE[words_row(type)][0]), b);
    *z1 = _mm512_permutex2var_epi8(b, _mm512_load_si512(QS_TABLE[words_row(type)][1]), c);
}
#endif

static inline __attribute__((always_inline)) __m512i words_at(const int type, const uint8_t *g) {
    const __m512i idx = _mm512_load_si512(WORD_TABLE[words_row(type)]);
    const __m512i lo = _mm512_permutex2var_epi16(_mm512_loadu_si512(g), idx, _mm512_loadu_si512(g + 64));
    const __m512i hi = _mm512_permutexvar_epi16(idx, _mm512_loadu_si512(g + 128));   /* words 64..95: idx & 31 */
    return _mm512_mask_blend_epi16(_mm512_cmpge_epu16_mask(idx, _mm512_set1_epi16(64)), lo, hi);
}

/* −128·Σw per lane, the correction for x bytes that are q + 128: the narrow signed types' (|w| <= 32) four
   vectors added bytewise first (four of them fit a byte) and summed by one dot product, the wide ones' one by one */
static inline __attribute__((always_inline)) __m512i minus128_sums(const int type, const __m512i *w) {
    const __m512i u = _mm512_set1_epi8((char)0x80);
    __m512i c = _mm512_setzero_si512();
    if (wide_weights(type)) {
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) c = dot4(c, u, w[k]);
    } else
        c = dot4(c, u, _mm512_add_epi8(_mm512_add_epi8(w[0], w[1]), _mm512_add_epi8(w[2], w[3])));
    return _mm512_sub_epi32(_mm512_setzero_si512(), c);
}

/* the 8 six-bit scales (lanes 0..7) and 8 mins (lanes 8..15) of a Q4_K/Q5_K group, as int32 */
static inline __m512i k4_ints16(const uint8_t *g) {
    const __m512i s = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(g + 4)));
    const char z = (char)0x80;
#define DW(i) z, z, z, (char)(i)   /* byte i into a dword (_mm512_set_epi8 lists the bytes from the last) */
#define ZZ z, z, z, z
    const __m512i uv = _mm512_shuffle_epi8(s, _mm512_set_epi8(DW(11), DW(10), DW(9), DW(8), DW(7), DW(6), DW(5), DW(4),
                                                              DW(11), DW(10), DW(9), DW(8), DW(3), DW(2), DW(1), DW(0)));
    const __m512i hi = _mm512_shuffle_epi8(s, _mm512_set_epi8(DW(7), DW(6), DW(5), DW(4), ZZ, ZZ, ZZ, ZZ,
                                                              DW(3), DW(2), DW(1), DW(0), ZZ, ZZ, ZZ, ZZ));
#undef DW
#undef ZZ
    const __m512i low = _mm512_setr_epi32(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 15, 15, 15, 15);
    const __m512i shift = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4);
    return _mm512_or_si512(_mm512_and_si512(_mm512_srlv_epi32(uv, shift), low), _mm512_slli_epi32(_mm512_srli_epi32(hi, 6), 4));
}

/* k4_scales' a = d·sc (lanes 0..7) and b = dmin·m (lanes 8..15) in one vector: the same integers and products */
static inline __m512 k4_scales16(const uint8_t *g) {
    const __m512i sm = k4_ints16(g);
    const __m512 dd = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
                                            _mm512_castps128_ps512(_mm_cvtph_ps(_mm_cvtsi32_si128((int)rd32(g)))));
    return _mm512_mul_ps(dd, _mm512_cvtepi32_ps(sm));
}

static inline __attribute__((always_inline)) void decode_q8(const int type, const int xoff, const uint8_t *g, wq *o) {
    const __m512i nib = _mm512_set1_epi8(15);
    o->b = _mm256_setzero_ps();
    if (type == T_Q4_K || type == T_Q4_K_G || type == T_Q5_K) {
        const uint8_t *qs = g + (type == T_Q5_K ? 48 : 16);
        const __m512i q0 = _mm512_loadu_si512(qs), q1 = _mm512_loadu_si512(qs + 64), shr = L16(SHR_Q4K, 0);
        o->w[0] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(q0, L16(IDX_Q4K, 0), q1), shr), nib);
        o->w[1] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(q0, L16(IDX_Q4K, 1), q1), shr), nib);
        o->w[2] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(q0, L16(IDX_Q4K, 2), q1), shr), nib);
        o->w[3] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(q0, L16(IDX_Q4K, 3), q1), shr), nib);
        if (type == T_Q5_K) {
            const __m512i qh = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(g + 16)));
            const __m512i bit = L16(BIT_Q5K, 0), sixteen = _mm512_set1_epi8(16);
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) {
                const __m512i idx = k == 0 ? L16(IDX_QH5K, 0) : k == 1 ? L16(IDX_QH5K, 1) : k == 2 ? L16(IDX_QH5K, 2)
                                                                                                 : L16(IDX_QH5K, 3);
                const __mmask64 m = _mm512_test_epi8_mask(_mm512_permutexvar_epi32(idx, qh), bit);
                o->w[k] = _mm512_mask_add_epi8(o->w[k], m, o->w[k], sixteen);
            }
        }
        if (q8_kind(type) == KIND_G) {   /* the integers and the two scales (wq's fields say where) */
            const __m512i sm = k4_ints16(g);
            o->a = _mm512_castsi512_ps(_mm512_shuffle_i32x4(sm, sm, 0x44));
            o->b = _mm256_castsi256_ps(_mm512_cvtepi32_epi16(_mm512_shuffle_i32x4(sm, sm, 0xEE)));
            o->b16 = _mm512_castps128_ps512(_mm_setr_ps(f16at(g), f16at(g + 2), 0.0f, 0.0f));
        } else {
            const __m512 ab = k4_scales16(g);
            o->a = _mm512_shuffle_f32x4(ab, ab, 0x44);
            o->b = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(ab), 1));
        }
    } else if (type == T_Q2_K) {
        const __m512i qs = _mm512_loadu_si512(g + 16), shr = L16(SHR_Q2, 0), three = _mm512_set1_epi8(3);
        o->w[0] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutexvar_epi32(L16(IDX_Q2, 0), qs), shr), three);
        o->w[1] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutexvar_epi32(L16(IDX_Q2, 1), qs), shr), three);
        o->w[2] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutexvar_epi32(L16(IDX_Q2, 2), qs), shr), three);
        o->w[3] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutexvar_epi32(L16(IDX_Q2, 3), qs), shr), three);
        const __m512i sc = _mm512_permutexvar_epi32(L16(IDX_SC2, 0), _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)g)));
        o->a = _mm512_mul_ps(_mm512_set1_ps(f16at(g + 80)), _mm512_cvtepi32_ps(_mm512_and_si512(sc, _mm512_set1_epi32(15))));
        o->b16 = _mm512_mul_ps(_mm512_set1_ps(f16at(g + 82)), _mm512_cvtepi32_ps(_mm512_srli_epi32(sc, 4)));
    } else if (type == T_Q3_K) {   /* low 2 bits from qs, minus 4 where the hmask bit is 0 */
        const __m512i qs = _mm512_loadu_si512(g + 32), shr = L16(SHR_Q2, 0), three = _mm512_set1_epi8(3);
        const __m512i hm = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)g)), bit = L16(BIT_Q5K, 0);
        const __m512i four = _mm512_set1_epi8(4);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            const __m512i iq = k == 0 ? L16(IDX_Q2, 0) : k == 1 ? L16(IDX_Q2, 1) : k == 2 ? L16(IDX_Q2, 2) : L16(IDX_Q2, 3);
            const __m512i ih = k == 0 ? L16(IDX_QH5K, 0) : k == 1 ? L16(IDX_QH5K, 1) : k == 2 ? L16(IDX_QH5K, 2)
                                                                                         : L16(IDX_QH5K, 3);
            const __m512i low = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutexvar_epi32(iq, qs), shr), three);
            o->w[k] = _mm512_mask_sub_epi8(low, _mm512_testn_epi8_mask(_mm512_permutexvar_epi32(ih, hm), bit), low, four);
        }
        const __m512i sc = _mm512_permutexvar_epi32(L16(IDX_SC2, 0), _mm512_cvtepi8_epi32(q3_scales(g)));
        o->a = _mm512_mul_ps(_mm512_set1_ps(f16at(g + 108)), _mm512_cvtepi32_ps(sc));
    } else if (type == T_Q6_K || type == T_Q6_K_G) {
        const __m512i l0 = _mm512_loadu_si512(g), l1 = _mm512_loadu_si512(g + 64), qh = _mm512_loadu_si512(g + 128);
        const __m512i shr = L16(SHR_Q6L, 0), rol = L16(ROL_Q6H, 0), two = _mm512_set1_epi8(0x30);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            const __m512i il = k == 0 ? L16(IDX_Q6L, 0) : k == 1 ? L16(IDX_Q6L, 1) : k == 2 ? L16(IDX_Q6L, 2) : L16(IDX_Q6L, 3);
            const __m512i ih = k == 0 ? L16(IDX_Q6H, 0) : k == 1 ? L16(IDX_Q6H, 1) : k == 2 ? L16(IDX_Q6H, 2) : L16(IDX_Q6H, 3);
            const __m512i lo = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(l0, il, l1), shr), nib);
            const __m512i hi = _mm512_rolv_epi32(_mm512_permutexvar_epi32(ih, qh), rol);
            o->w[k] = _mm512_ternarylogic_epi32(lo, hi, two, 0xF8);   /* (lo | hi & 0x30) − 32, or without − 32: X_OFFSET */
            if (!xoff) o->w[k] = _mm512_sub_epi8(o->w[k], _mm512_set1_epi8(32));
        }
        const __m512i sc = _mm512_permutexvar_epi32(L16(IDX_SC6, 0), _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(g + 192))));
        if (type == T_Q6_K_G) {
            o->a = _mm512_castsi512_ps(sc);
            o->b16 = _mm512_castps128_ps512(_mm_set_ss(f16at(g + 208)));
        } else
            o->a = _mm512_mul_ps(_mm512_set1_ps(f16at(g + 208)), _mm512_cvtepi32_ps(sc));
    } else if (type == T_Q8_0) {
        const __m512i za = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(g + 2))),
                                              _mm256_loadu_si256((const __m256i *)(g + 36)), 1);
        const __m512i zb = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(g + 70))),
                                              _mm256_loadu_si256((const __m256i *)(g + 104)), 1);
        const __m512i zc = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(g + 138))),
                                              _mm256_loadu_si256((const __m256i *)(g + 172)), 1);
        const __m512i zd = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(g + 206))),
                                              _mm256_loadu_si256((const __m256i *)(g + 240)), 1);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            const __m512i idx = k == 0 ? L16(IDX_Q8, 0) : k == 1 ? L16(IDX_Q8, 1) : k == 2 ? L16(IDX_Q8, 2) : L16(IDX_Q8, 3);
            o->w[k] = _mm512_mask_blend_epi32(0xF0F0, _mm512_permutex2var_epi32(za, idx, zb),
                                              _mm512_permutex2var_epi32(zc, idx, zd));
            if (xoff) o->w[k] = _mm512_xor_si512(o->w[k], _mm512_set1_epi8((char)0x80));   /* w + 128 */
        }
        o->a = twice(halves8(g, 34));
    } else if (type == T_IQ4_NL || type == T_IQ4_XS) {   /* 8 blocks (IQ4_XS: sub-blocks) of 16 qs bytes as Q4_0's,
                                                          each nibble looked up in IQ4_VALUES */
        const int xs = type == T_IQ4_XS, stride = xs ? 16 : block_bytes(type);
        const uint8_t *qs = g + (xs ? 8 : 2);
        __m512i z0, z1;
        const __m512i shr = L16(SHR_B32, 0);
        if (xs) {   /* the sub-blocks' qs lie end to end */
            z0 = _mm512_loadu_si512(qs);
            z1 = _mm512_loadu_si512(qs + 64);
        } else {
#if SPX_VBMI
            qs_at(type, g, &z0, &z1);
#else
            z0 = four16(qs, stride);
            z1 = four16(qs + 4 * stride, stride);
#endif
        }
        const __m512i values = xoff ? _mm512_xor_si512(_mm512_broadcast_i32x4(iq4_values128()), _mm512_set1_epi8((char)0x80))
                                    : _mm512_broadcast_i32x4(iq4_values128());   /* + 128 for X_OFFSET */
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            const __m512i idx = k == 0 ? L16(IDX_B32, 0) : k == 1 ? L16(IDX_B32, 1) : k == 2 ? L16(IDX_B32, 2) : L16(IDX_B32, 3);
            const __m512i q = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(z0, idx, z1), shr), nib);
            o->w[k] = _mm512_shuffle_epi8(values, q);
        }
        o->a = twice(xs ? iq4xs_scales(g) : _mm256_cvtph_ps(_mm512_castsi512_si128(words_at(type, g))));
    } else {   /* Q4_0, Q4_1, Q5_0, Q5_1: 8 blocks */
        const int bytes = block_bytes(type), qs = type == T_Q4_0 ? 2 : type == T_Q4_1 ? 4 : type == T_Q5_0 ? 6 : 8;
#if SPX_VBMI
        __m512i z0, z1;
        qs_at(type, g, &z0, &z1);
        (void)qs;
#else
        const __m512i z0 = four16(g + qs, bytes), z1 = four16(g + qs + 4 * bytes, bytes);
#endif
        const __m512i shr = L16(SHR_B32, 0);
        const __m512i fields = words_at(type, g);
        o->w[0] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(z0, L16(IDX_B32, 0), z1), shr), nib);
        o->w[1] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(z0, L16(IDX_B32, 1), z1), shr), nib);
        o->w[2] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(z0, L16(IDX_B32, 2), z1), shr), nib);
        o->w[3] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(z0, L16(IDX_B32, 3), z1), shr), nib);
        if (type == T_Q5_0 || type == T_Q5_1) {
            const __m256i h8 = _mm512_extracti64x4_epi64(fields, 1);
            const __m512i qh = _mm512_inserti64x4(_mm512_castsi256_si512(h8), h8, 1), sixteen = _mm512_set1_epi8(16);
            const __m512i even = _mm512_set1_epi32(0x08040201), odd = _mm512_set1_epi32((int)0x80402010u);
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) {
                const __m512i ctl = k == 0 ? L16(SHUF_Q5, 0) : k == 1 ? L16(SHUF_Q5, 1) : k == 2 ? L16(SHUF_Q5, 2) : L16(SHUF_Q5, 3);
                const __m512i bits = _mm512_shuffle_epi8(qh, ctl);
                if (type == T_Q5_0 && !xoff)   /* q + 16·bit − 16 in one step: − 16 where the bit is clear */
                    o->w[k] = _mm512_mask_sub_epi8(o->w[k], _mm512_testn_epi8_mask(bits, k & 1 ? odd : even), o->w[k], sixteen);
                else
                    o->w[k] = _mm512_mask_add_epi8(o->w[k], _mm512_test_epi8_mask(bits, k & 1 ? odd : even), o->w[k], sixteen);
            }
        }
        if (type == T_Q4_0 && !xoff) {
            const __m512i off = _mm512_set1_epi8(8);
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) o->w[k] = _mm512_sub_epi8(o->w[k], off);
        }
        o->a = twice(_mm256_cvtph_ps(_mm512_castsi512_si128(fields)));
        if (type == T_Q4_1 || type == T_Q5_1) o->b = _mm256_cvtph_ps(_mm512_extracti32x4_epi32(fields, 1));
    }
    o->corr = _mm512_setzero_si512();
    if (unsigned_weights(type) || xoff) return;
#if !SPX_VNNI
    if (wide_weights(type)) {   /* maddubs would saturate on (q + 128)·w: x is used signed, w as |w| */
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            o->neg[k] = _mm512_movepi8_mask(o->w[k]);
            o->w[k] = _mm512_abs_epi8(o->w[k]);
        }
        return;
    }
#endif
    o->corr = minus128_sums(type, o->w);
}
#endif /* SPX_AVX512 */
