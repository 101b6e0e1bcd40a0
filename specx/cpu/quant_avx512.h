/* quant.c's AVX-512 activations (F, BW, VL; VNNI when built with it): a row quantized per group into the q8
   activations' layout, and the lane index macros the decoders use (quant_avx512_decode.h): included by quant.c,
   which states the rules. The q8 mode is quant_avx512_decode.h (a group's weights decoded) and quant_avx512_rows.h
   (their sums with a row's activations); the f32 mode is quant_avx512_f32.h; the AVX2 kernels (quant_avx2.h) do
   the same arithmetic in 256-bit vectors. */
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
#endif /* SPX_AVX512 */
