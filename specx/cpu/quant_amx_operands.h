/* quant_amx.h's operands (AVX-512 builds with AMX, unit 0; included by it after its tile configuration): the call's
   quantized rows repacked into B tiles, and a strip of 16 outputs' weights decoded into A tiles' bytes */
/* ---- X: the call's quantized rows (quant.c's xq) repacked into B tiles, scales by row */

static inline int64_t amx_x_bytes(int64_t M, int64_t K) {   /* XB, XD, XS */
    return (M + 15) / 16 * ((K + QKK - 1) / QKK) * (4096 + 1024 + 512);
}

static void amx_pack_x(const uint8_t *xq, int64_t M, int64_t K, uint8_t *out, int threads) {
    const int64_t G = (K + QKK - 1) / QKK, MT = (M + 15) / 16, stride = xq_stride(K);
    int32_t *xb = (int32_t *)out;
    float *xd = (float *)(out + MT * G * 4096), *xs = xd + MT * G * 256;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t mt = 0; mt < MT; ++mt)
        for (int64_t s = 0; s < G; ++s) {
            int32_t *b = xb + (mt * G + s) * 1024;
            float *d = xd + (mt * G + s) * 256, *e = xs + (mt * G + s) * 128;
            for (int m = 0; m < 16; ++m) {
                const int64_t row = 16 * mt + m;
                if (row >= M) {   /* rows past the end: zeros */
                    for (int l = 0; l < 16; ++l) {
                        for (int k = 0; k < 4; ++k) b[64 * l + 16 * k + m] = 0;
                        d[16 * l + m] = 0.0f;
                    }
                    for (int j = 0; j < 8; ++j) e[16 * j + m] = 0.0f;
                    continue;
                }
                const uint8_t *g = xq + row * stride + s * XG;
                for (int l = 0; l < 16; ++l) {
                    for (int k = 0; k < 4; ++k) memcpy(&b[64 * l + 16 * k + m], g + XG_S + 64 * k + 4 * l, 4);
                    d[16 * l + m] = ((const float *)(g + XG_DX))[l];
                }
                for (int j = 0; j < 8; ++j) e[16 * j + m] = ((const float *)(g + XG_XS))[j];
            }
        }
}

/* ---- W: one strip of up to 16 outputs decoded (zeros past nrows) */


/* the 32 values of sub-block j (natural order) of output n into WD: half h is lane 8h + j */
static inline void amx_put(int8_t *wds, int n, int j, __m256i v) {
    _mm_storeu_si128((__m128i *)(wds + 256 * j + 16 * n), _mm256_castsi256_si128(v));
    _mm_storeu_si128((__m128i *)(wds + 256 * (8 + j) + 16 * n), _mm256_extracti128_si256(v, 1));
}

/* 32 values of a Q8_0 or Q5_0 block as signed bytes (Q5_0: q − 16, q's fifth bit from qh) */
static inline __m256i amx_block32(int type, const uint8_t *b) {
    if (type == T_Q8_0) return _mm256_loadu_si256((const __m256i *)(b + 2));
    const __m128i qs = _mm_loadu_si128((const __m128i *)(b + 6)), nib = _mm_set1_epi8(15);
    const __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(qs, nib)),
                                              _mm_and_si128(_mm_srli_epi16(qs, 4), nib), 1);
    const __m256i sixteen = _mm256_set1_epi8(16);
    return _mm256_sub_epi8(_mm256_mask_add_epi8(q, (__mmask32)rd32(b + 2), q, sixteen), sixteen);
}

static void amx_decode_strip(int type, const uint8_t *w, int64_t rowbytes, int nrows, int64_t G, int64_t K,
                             int8_t *wd, float *wa, float *wb) {
    const int bytes = block_bytes(type), kt = block_values(type) == QKK;
    const __m256i nib = _mm256_set1_epi8(15), three = _mm256_set1_epi8(3), off = _mm256_set1_epi8(32);
    for (int64_t s = 0; s < G; ++s)
        for (int n = 0; n < 16; ++n) {
            int8_t *o = wd + s * 4096;
            float *a = wa + s * 256 + 16 * n, *b = wb + s * 128 + 8 * n;
            if (n >= nrows) {
                for (int j = 0; j < 8; ++j) amx_put(o, n, j, _mm256_setzero_si256());
                _mm512_storeu_ps(a, _mm512_setzero_ps());
                _mm256_storeu_ps(b, _mm256_setzero_ps());
                continue;
            }
            const uint8_t *g = w + n * rowbytes + (kt ? s : 8 * s) * bytes;
            if (!kt) {   /* Q8_0, Q5_0: 8 blocks, a = d for both halves; blocks past the row's end are zeros */
                const int nb = K / QK - 8 * s < 8 ? (int)(K / QK - 8 * s) : 8;
                float d[8] = {0};
                for (int j = 0; j < 8; ++j) {
                    amx_put(o, n, j, j < nb ? amx_block32(type, g + j * bytes) : _mm256_setzero_si256());
                    d[j] = j < nb ? f16at(g + j * bytes) : 0.0f;
                }
                _mm512_storeu_ps(a, twice(_mm256_loadu_ps(d)));
            } else if (type == T_Q4_K) {   /* sub-block 2i: low nibbles of qs[32i..], 2i + 1: high nibbles */
                for (int i = 0; i < 4; ++i) {
                    const __m256i v = _mm256_loadu_si256((const __m256i *)(g + 16 + 32 * i));
                    amx_put(o, n, 2 * i, _mm256_and_si256(v, nib));
                    amx_put(o, n, 2 * i + 1, _mm256_and_si256(_mm256_srli_epi16(v, 4), nib));
                }
                __m256 a8, b8;
                k4_scales(g, &a8, &b8);   /* d·sc and dmin·m of sub-blocks 0..7 (lanes j and 8 + j share a) */
                _mm512_storeu_ps(a, twice(a8));
                _mm256_storeu_ps(b, b8);
            } else {   /* Q6_K: value 128n + 32Q + p from ql[64n + 32(Q & 1) + p] >> 4(Q >> 1) and qh[32n + p] >> 2Q */
                for (int h = 0; h < 2; ++h) {
                    const __m256i qh = _mm256_loadu_si256((const __m256i *)(g + 128 + 32 * h));
                    for (int Q = 0; Q < 4; ++Q) {
                        const __m256i ql = _mm256_loadu_si256((const __m256i *)(g + 64 * h + 32 * (Q & 1)));
                        const __m256i lo = _mm256_and_si256(Q >> 1 ? _mm256_srli_epi16(ql, 4) : ql, nib);
                        const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * Q), three);
                        const __m256i q = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
                        amx_put(o, n, 4 * h + Q, _mm256_sub_epi8(q, off));
                    }
                }
                /* lane l = 8h + j: d·sc of its 16 values, sc[2j + h] */
                const __m512i lane = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
                const __m512i sc = _mm512_permutexvar_epi32(lane, _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(g + 192))));
                _mm512_storeu_ps(a, _mm512_mul_ps(_mm512_set1_ps(f16at(g + 208)), _mm512_cvtepi32_ps(sc)));
            }
        }
}
