/* quant.c's AVX-512 kernels (F, BW, VL; VNNI when built with it) for the activations and the q8 mode on the file's
   layout: included by quant.c, which states the rules; the f32 mode is quant_avx512_f32.h, and the AVX2 kernels
   (quant_avx2.h) do the same arithmetic in 256-bit vectors. */
/* ---------------------------------------------------------------- AVX-512 kernels (F, BW, VL; VNNI if built with it) */
#if defined(SPX_AVX512)

#define L16(F, k) _mm512_setr_epi32(F(0, k), F(1, k), F(2, k), F(3, k), F(4, k), F(5, k), F(6, k), F(7, k), F(8, k), \
                                    F(9, k), F(10, k), F(11, k), F(12, k), F(13, k), F(14, k), F(15, k))
/* lane l of a 64-byte vector k holds block j = l & 7, half h = l >> 3 (the q8 layout above) */
#define J_(l) ((l) & 7)
#define H_(l) ((l) >> 3)
#define IDX_Q4K(l, k) (8 * (J_(l) >> 1) + 4 * H_(l) + (k))        /* raw dword of Q4_K/Q5_K qs */
#define SHR_Q4K(l, k) (4 * (J_(l) & 1))
#define IDX_QH5K(l, k) (4 * H_(l) + (k))                          /* Q5_K qh dword */
#define BIT_Q5K(l, k) ((int)(0x01010101u << J_(l)))                /* its bit j in every byte */
#define IDX_Q6L(l, k) (16 * (J_(l) >> 2) + 8 * (J_(l) & 1) + 4 * H_(l) + (k))
#define SHR_Q6L(l, k) (4 * ((J_(l) >> 1) & 1))
#define IDX_Q6H(l, k) (8 * (J_(l) >> 2) + 4 * H_(l) + (k))
#define ROL_Q6H(l, k) ((4 - 2 * (J_(l) & 3)) & 31)                 /* bits 2Q..2Q+1 of each byte to 4..5 */
#define IDX_SC6(l, k) (2 * J_(l) + H_(l))
#define IDX_B32(l, k) (4 * J_(l) + (k))                            /* 8 blocks' qs dwords (two tables) */
#define SHR_B32(l, k) (4 * H_(l))
#define SHUF_Q5(l, k) ((int)(0x01010101u * (4 * ((l) & 3) + 2 * H_(l) + ((k) >> 1))))
#define IDX_Q8(l, k) (8 * (J_(l) & 3) + 4 * H_(l) + (k))
#define IDX_Q2(l, k) (8 * (J_(l) >> 2) + 4 * H_(l) + (k))         /* Q2_K qs dword of the lane's 4 values */
#define SHR_Q2(l, k) (2 * (J_(l) & 3))                            /* their 2-bit field in each byte */
#define IDX_SC2(l, k) (2 * J_(l) + H_(l))                          /* the lane's Q2_K sub-block */
/* Q3_K: its qs as Q2_K's (IDX_Q2, SHR_Q2), its hmask as Q5_K's qh (IDX_QH5K, BIT_Q5K), its scales as IDX_SC2 */

static inline __m512 twice(__m256 v) {
    const __m512 z = _mm512_castps256_ps512(v);
    return _mm512_shuffle_f32x4(z, z, 0x44);
}

/* The largest of each of 8 vectors' 16 lanes (unsigned 32-bit), as 8 lanes: a tree of maxima (exact in any order) */
static inline __m256i max_of_8(const __m512i *m) {
    __m512i a[4], b[2];
    for (int i = 0; i < 4; ++i)   /* 128-bit quarters 0, 1 with 2, 3: [m_2i | m_2i+1] halves */
        a[i] = _mm512_max_epu32(_mm512_shuffle_i32x4(m[2 * i], m[2 * i + 1], 0x44), _mm512_shuffle_i32x4(m[2 * i], m[2 * i + 1], 0xEE));
    for (int i = 0; i < 2; ++i)   /* one 128-bit quarter per vector */
        b[i] = _mm512_max_epu32(_mm512_shuffle_i32x4(a[2 * i], a[2 * i + 1], 0x88), _mm512_shuffle_i32x4(a[2 * i], a[2 * i + 1], 0xDD));
    for (int i = 0; i < 2; ++i) {   /* within each quarter */
        b[i] = _mm512_max_epu32(b[i], _mm512_shuffle_epi32(b[i], (_MM_PERM_ENUM)0x4E));
        b[i] = _mm512_max_epu32(b[i], _mm512_shuffle_epi32(b[i], (_MM_PERM_ENUM)0xB1));
    }
    return _mm512_castsi512_si256(_mm512_permutex2var_epi32(b[0], _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0), b[1]));
}

/* One whole group of 256 values (8 blocks) in quantize_row's arithmetic, all 8 blocks at once: the same
   operations on each value (a block's maximum, d = amax/127, id = 1/d, x·id clamped and rounded to nearest
   even, exact integer sums), so the same bytes. A block's maximum is taken on the bit patterns of |x|, which
   order as the floats do and put a NaN or an infinity (a "bad" block) above every finite value. The 16 half
   blocks' bytes are moved into the layout by dword permutes (lane 8h + j of vector k: dword k of half h of
   block j). `whole`: one scale for the group (quantize_row's), from the largest of the 8 blocks' maxima. */
static inline void quantize_group_simd(const float *x, uint8_t *o, int whole) {
    const __m512i absmask = _mm512_set1_epi32(0x7fffffff);
    __m512 v[16];
    __m512i m[8];
    for (int j = 0; j < 8; ++j) {
        v[2 * j] = _mm512_loadu_ps(x + QK * j);
        v[2 * j + 1] = _mm512_loadu_ps(x + QK * j + 16);
        m[j] = _mm512_max_epu32(_mm512_and_si512(_mm512_castps_si512(v[2 * j]), absmask),
                                _mm512_and_si512(_mm512_castps_si512(v[2 * j + 1]), absmask));
    }
    __m256i amax = max_of_8(m);
    if (whole) amax = _mm256_set1_epi32((int)_mm512_reduce_max_epu32(_mm512_zextsi256_si512(amax)));
    const __mmask8 bad = _mm256_cmpge_epu32_mask(amax, _mm256_set1_epi32(0x7f800000));
    const __m256 d = _mm256_mask_mov_ps(_mm256_div_ps(_mm256_castsi256_ps(amax), _mm256_set1_ps(127.0f)), bad,
                                        _mm256_set1_ps(NAN));
    const __mmask8 inverse = ~bad & _mm256_cmp_ps_mask(d, _mm256_setzero_ps(), _CMP_NEQ_OQ);
    const __m256 inv = _mm256_maskz_div_ps(inverse, _mm256_set1_ps(1.0f), d);   /* inverse_scale, 8 at once */
    const __m256 id = _mm256_maskz_mov_ps(_mm256_cmp_ps_mask(inv, _mm256_set1_ps(FLT_MAX), _CMP_LE_OQ), inv);
    const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f), id16 = _mm512_castps256_ps512(id);
    __m512i z[4];   /* z[2h + (j >> 2)]: the bytes of half h of blocks 4(j >> 2) .. +3, a block per 128-bit lane */
    for (int j = 0; j < 8; ++j) {
        const __m512 idj = _mm512_permutexvar_ps(_mm512_set1_epi32(j), id16);
        const __mmask16 keep = (bad >> j) & 1 ? 0 : 0xFFFF;
        for (int h = 0; h < 2; ++h) {
            const __m512i q = _mm512_maskz_cvtps_epi32(keep, _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v[2 * j + h], idj), lo), hi));
            const __m128i bytes = _mm512_cvtsepi32_epi8(q);
            const int at = 2 * h + (j >> 2);
            z[at] = (j & 3) == 0 ? _mm512_castsi128_si512(bytes) : _mm512_inserti32x4(z[at], bytes, j & 3);
        }
    }
    __m512i sums = _mm512_setzero_si512();   /* lane 8h + j: Σq of half h of block j */
    const __m512i ones = _mm512_set1_epi8(1);
    for (int k = 0; k < 4; ++k) {
        const __m512i idx = _mm512_setr_epi32(k, 4 + k, 8 + k, 12 + k, 16 + k, 20 + k, 24 + k, 28 + k,
                                              k, 4 + k, 8 + k, 12 + k, 16 + k, 20 + k, 24 + k, 28 + k);
        const __m512i sk = _mm512_mask_blend_epi32(0xFF00, _mm512_permutex2var_epi32(z[0], idx, z[1]),
                                                   _mm512_permutex2var_epi32(z[2], idx, z[3]));
        _mm512_store_si512(o + XG_S + 64 * k, sk);
        _mm512_store_si512(o + 64 * k, _mm512_xor_si512(sk, _mm512_set1_epi8((char)0x80)));
#if SPX_VNNI
        sums = _mm512_dpbusd_epi32(sums, ones, sk);
#else
        sums = _mm512_add_epi32(sums, _mm512_madd_epi16(_mm512_maddubs_epi16(ones, sk), _mm512_set1_epi16(1)));
#endif
    }
    const __m512 d16 = twice(d);
    const __m256i blocks = _mm256_add_epi32(_mm512_castsi512_si256(sums), _mm512_extracti64x4_epi64(sums, 1));
    _mm512_store_ps((float *)(o + XG_DX), d16);
    _mm256_store_ps((float *)(o + XG_XS), _mm256_mul_ps(d, _mm256_cvtepi32_ps(blocks)));
    _mm256_store_si256((__m256i *)(o + XG_NS), _mm512_cvtepi32_epi16(_mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sums, 4))));
    _mm512_store_ps((float *)(o + XG_XH), _mm512_mul_ps(d16, _mm512_cvtepi32_ps(sums)));
}

/* quantize_row's arithmetic, 16 values at a time: whole groups by quantize_group_simd, a partial last group
   from a zero-padded copy (a zero block quantizes to what quantize_row leaves there: q 0, scale 0, sums 0). */
static void quantize_row_simd(const float *x, int64_t K, uint8_t *out, int whole) {
    const int64_t full = K / QKK;
    for (int64_t g = 0; g < full; ++g) quantize_group_simd(x + g * QKK, out + g * XG, whole);
    if (K % QKK) {
        float last[QKK] = {0};
        memcpy(last, x + full * QKK, sizeof(float) * (K % QKK));
        quantize_group_simd(last, out + full * XG, whole);
    }
}

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

/* One row's step of the q8 arithmetic for a decoded group: 16 exact half-block sums, then the fmas. */
static inline __attribute__((always_inline)) void q8_row(const int type, const int xoff, const wq *o, const uint8_t *xg,
                                                         __m512 *acc, __m256 *accb, __m512 *accb16) {
    __m512i s = o->corr;
    if (xoff) {   /* X_OFFSET (quant_simd.h): −off·Σq_x per half block */
        s = _mm512_cvtepi16_epi32(_mm256_load_si256((const __m256i *)(xg + XG_NS)));
        if (offset_shift(type) < 0) s = _mm512_srai_epi32(s, 1);
        else if (offset_shift(type) > 0) s = _mm512_slli_epi32(s, offset_shift(type));
    }
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
        if (unsigned_weights(type) || xoff) {   /* w unsigned, q signed */
            s = dot4(s, o->w[k], _mm512_load_si512(xg + XG_S + 64 * k));
            continue;
        }
        __m512i xv = _mm512_load_si512(xg + 64 * k);
#if !SPX_VNNI
        if (wide_weights(type)) {
            xv = _mm512_load_si512(xg + XG_S + 64 * k);   /* q signed, negated where w < 0 */
            xv = _mm512_mask_sub_epi8(xv, o->neg[k], _mm512_setzero_si512(), xv);
            s = _mm512_add_epi32(s, _mm512_madd_epi16(_mm512_maddubs_epi16(o->w[k], xv), _mm512_set1_epi16(1)));
            continue;
        }
#endif
        s = dot4(s, xv, o->w[k]);
    }
    if (q8_kind(type) == KIND_G) {   /* S = Σ sc·S_l, −16·M = Σ m·ns_l (exact), then g_step in lane 0 */
        const int32_t S = _mm512_reduce_add_epi32(_mm512_mullo_epi32(s, _mm512_castps_si512(o->a)));
        const __m256i mn = _mm256_madd_epi16(_mm256_load_si256((const __m256i *)(xg + XG_NS)), _mm256_castps_si256(o->b));
        const int32_t M = -(hsum8_epi32(mn) >> 4);
        const float a0 = g_step(_mm512_cvtss_f32(*acc), S, M, _mm512_cvtss_f32(o->b16),
                                _mm512_cvtss_f32(_mm512_permutexvar_ps(_mm512_set1_epi32(1), o->b16)),
                                ((const float *)(xg + XG_DX))[0]);
        *acc = _mm512_zextps128_ps512(_mm_set_ss(a0));
        return;
    }
    if (q8_kind(type) == KIND_G6) {   /* S = Σ sc·S_l (exact), then g6_step in lane 0 */
        const int32_t S = _mm512_reduce_add_epi32(_mm512_mullo_epi32(s, _mm512_castps_si512(o->a)));
        const float a0 = g6_step(_mm512_cvtss_f32(*acc), S, _mm512_cvtss_f32(o->b16), ((const float *)(xg + XG_DX))[0]);
        *acc = _mm512_zextps128_ps512(_mm_set_ss(a0));
        return;
    }
    const __m512 t = _mm512_mul_ps(o->a, _mm512_load_ps((const float *)(xg + XG_DX)));
    *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), t, *acc);
    if (q8_kind(type) == KIND_K2)
        *accb16 = _mm512_fmadd_ps(o->b16, _mm512_load_ps((const float *)(xg + XG_XH)), *accb16);
    else if (q8_kind(type) != KIND_S)
        *accb = _mm256_fmadd_ps(o->b, _mm256_load_ps((const float *)(xg + XG_XS)), *accb);
}

static inline float tree16(__m512 v) {   /* lanes l and l + 8 first, then tree8 */
    return hsum8(_mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
}

static inline float q8_result_simd(int kind, __m512 acc, __m256 accb, __m512 accb16) {
    if (grouped_kind(kind)) return _mm512_cvtss_f32(acc);
    const float main = tree16(acc);
    const float mins = kind == KIND_K2 ? tree16(accb16) : hsum8(accb);
    return kind == KIND_SM ? main + mins : kind == KIND_KM || kind == KIND_K2 ? main - mins : main;
}

/* DECODED's copy of a decoded group: only the parts q8_row reads for this type (fewer bytes through L2) */
static inline __attribute__((always_inline)) void wq_put(const int type, wq *d, const wq *o) {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) d->w[k] = o->w[k];
    d->a = o->a;
    if (q8_kind(type) == KIND_K2 || grouped_kind(q8_kind(type))) d->b16 = o->b16;
    if (q8_kind(type) != KIND_S && q8_kind(type) != KIND_K2) d->b = o->b;
    if (!unsigned_weights(type)) d->corr = o->corr;
#if !SPX_VNNI
    if (wide_weights(type))
        for (int k = 0; k < 4; ++k) d->neg[k] = o->neg[k];
#endif
}

static inline __attribute__((always_inline)) void wq_get(const int type, wq *o, const wq *d) {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) o->w[k] = d->w[k];
    o->a = d->a;
    o->b16 = q8_kind(type) == KIND_K2 || grouped_kind(q8_kind(type)) ? d->b16 : _mm512_setzero_ps();
    o->b = q8_kind(type) == KIND_SM || q8_kind(type) == KIND_KM || q8_kind(type) == KIND_G ? d->b : _mm256_setzero_ps();
    o->corr = unsigned_weights(type) ? _mm512_setzero_si512() : d->corr;
#if !SPX_VNNI
    if (wide_weights(type))
        for (int k = 0; k < 4; ++k) o->neg[k] = d->neg[k];
#endif
}

/* Group s of weight row wr decoded for the q8 arithmetic (X_OFFSET's form when xoff), the blocks a partial last
   group lacks given zero scales */
static inline __attribute__((always_inline)) void q8_group(const int type, const int xoff, const uint8_t *wr, int64_t s,
                                                           int64_t nblocks, int last, const uint8_t *next, wq *o) {
    const int64_t gbytes = block_values(type) == QKK ? block_bytes(type) : 8 * block_bytes(type);
    uint8_t pad[Q8_PAD];
    int tail;
    const uint8_t *g = q8_group_at(type, wr, s, nblocks, last, words_past(type), pad, &tail);
    if (!next) prefetch_ahead(g, gbytes);
    decode_q8(type, xoff, g, o);
    if (tail && g != pad) {   /* decoded past the row's end: those blocks' scales to zero (TAIL in quant.c) */
        o->a = _mm512_maskz_mov_ps((__mmask16)(((1u << tail) - 1) * 0x0101u), o->a);
        o->b = _mm256_maskz_mov_ps((__mmask8)((1u << tail) - 1), o->b);
    }
}

/* Groups [s0, s1) of weight row wr (the call's last row: last) for R rows into their accumulators; `next`: where
   the weights read after this span's lie (0: ahead of them, in the same row). DECODED (quant.c): `decoded` 2
   also stores each decoded group in the row's `dec`, 1 reads them from there instead of decoding; both in the
   form without X_OFFSET, which gives the same sums (so 2 runs with R > OFFSET_ROWS only). */
static inline __attribute__((always_inline)) void q8_span(const int type, const int R, const int decoded,
                                                          const uint8_t *xq, int64_t stride, int64_t nblocks,
                                                          const uint8_t *wr, wq *dec, int last,
                                                          int64_t s0, int64_t s1, const uint8_t *next,
                                                          const uint8_t *then, __m512 *acc, __m256 *accb,
                                                          __m512 *accb16) {
    const int64_t gbytes = block_values(type) == QKK ? block_bytes(type) : 8 * block_bytes(type);
    const int xoff = decoded == 1 ? 0 : x_offset(type, R);
    for (int64_t s = s0; s < s1; ++s) {
        wq o;
        if (decoded == 1)
            wq_get(type, &o, &dec[s]);
        else {
            if (next) {
                prefetch_at(next + (s - s0) * gbytes, gbytes);
                if (then) prefetch_l2_at(then + (s - s0) * gbytes, gbytes);
            }
            q8_group(type, xoff, wr, s, nblocks, last, next, &o);
            if (decoded == 2) wq_put(type, &dec[s], &o);
        }
        const uint8_t *xg = xq + s * XG;
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) q8_row(type, xoff, &o, xg + r * stride, &acc[r], &accb[r], &accb16[r]);
    }
}

/* R rows of X against nout weight rows at w (`decoded` 0 or 2: see q8_span), or against those rows as a call
   with `decoded` 2 left them in dec (1) */
static inline __attribute__((always_inline)) void q8_rows_from(const int type, const int R, const int decoded,
                                                               const uint8_t *xq, int64_t K, const uint8_t *w,
                                                               wq *dec, int64_t nout,
                                                               int64_t rowbytes, float *y, int64_t ldy) {
    const int64_t groups = (K + QKK - 1) / QKK, stride = xq_stride(K), nblocks = K / QK;
    const int64_t span = xspan(R, groups);
    const int64_t gbytes = block_values(type) == QKK ? block_bytes(type) : 8 * block_bytes(type);
    if (span == groups) {   /* the rows' activations stay in L1: one output at a time, all its groups */
        for (int64_t c = 0; c < nout; ++c) {
            __m512 acc[RMAX], accb16[RMAX];
            __m256 accb[RMAX];
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                acc[r] = accb16[r] = _mm512_setzero_ps();
                accb[r] = _mm256_setzero_ps();
            }
            q8_span(type, R, decoded, xq, stride, nblocks, decoded == 1 ? 0 : w + c * rowbytes, decoded ? dec + c * groups : 0,
                    c == nout - 1, 0, groups, 0, 0, acc, accb, accb16);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) y[r * ldy + c] = q8_result_simd(q8_kind(type), acc[r], accb[r], accb16[r]);
        }
        return;
    }
    /* XSPAN: up to XSPAN_OUTS outputs pass over each span of groups in turn, their sums kept in memory between
       spans (the same fmas in the same order: the same bits) */
    for (int64_t c0 = 0; c0 < nout; c0 += XSPAN_OUTS) {
        const int64_t n = nout - c0 < XSPAN_OUTS ? nout - c0 : XSPAN_OUTS;
        __m512 acc[XSPAN_OUTS][RMAX], accb16[XSPAN_OUTS][RMAX];
        __m256 accb[XSPAN_OUTS][RMAX];
        for (int64_t c = 0; c < n; ++c)
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                acc[c][r] = accb16[c][r] = _mm512_setzero_ps();
                accb[c][r] = _mm256_setzero_ps();
            }
        for (int64_t s0 = 0; s0 < groups; s0 += span) {
            const int64_t s1 = s0 + span < groups ? s0 + span : groups;
            for (int64_t c = 0; c < n; ++c) {
                __m512 a[RMAX], a16[RMAX];
                __m256 b[RMAX];
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) a[r] = acc[c][r], a16[r] = accb16[c][r], b[r] = accb[c][r];
                const uint8_t *next = decoded == 1 ? 0 : span_at(w, rowbytes, gbytes, c0, n, c + 1, s0, span, groups);
                const uint8_t *then = decoded == 1 ? 0 : span_at(w, rowbytes, gbytes, c0, n, c + 2, s0, span, groups);
                q8_span(type, R, decoded, xq, stride, nblocks, decoded == 1 ? 0 : w + (c0 + c) * rowbytes,
                        decoded ? dec + (c0 + c) * groups : 0, c0 + c == nout - 1, s0, s1, next, then, a, b, a16);
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) acc[c][r] = a[r], accb16[c][r] = a16[r], accb[c][r] = b[r];
            }
        }
        for (int64_t c = 0; c < n; ++c)
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r)
                y[r * ldy + c0 + c] = q8_result_simd(q8_kind(type), acc[c][r], accb[c][r], accb16[c][r]);
    }
}

static inline __attribute__((always_inline)) void q8_rows(const int type, const int R, const uint8_t *xq, int64_t K,
                                                          const uint8_t *w, int64_t nout, int64_t rowbytes, float *y,
                                                          int64_t ldy) {
    q8_rows_from(type, R, 0, xq, K, w, 0, nout, rowbytes, y, ldy);
}

#endif /* SPX_AVX512 */
