/* quant.c's AVX2 kernels (FMA, F16C; AVX-VNNI when built with it) for the activations and the q8 mode's decoding
   on the file's layout: included by quant.c, which states the rules; the same q8 arithmetic as quant_avx512.h and
   quant_avx512_decode.h in 8-lane vectors. The q8 sums are quant_avx2_rows.h, the f32 mode quant_avx2_f32.h. */
/* ---------------------------------------------------------------- AVX2 kernels (FMA, F16C; AVX-VNNI if built with it) */
#if defined(SPX_AVX2)

/* quantize_row's arithmetic, 8 values at a time (the same operations, so the same bytes; `whole`: one scale a
   group, as there) */
static void quantize_row_simd(const float *x, int64_t K, uint8_t *out, int whole) {
    const int64_t groups = (K + QKK - 1) / QKK;
    memset(out, 0, groups * XG);
    const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t g = 0; g < groups; ++g) {
        uint8_t *o = out + g * XG;
        if ((g + 1) * QKK > K) memset(o, 128, 256);
        float bmax[8] = {0};
        int bbad[8] = {0};   /* as quantize_row: a NaN or infinity makes the scale NaN and q 0 */
        for (int j = 0; j < 8 && g * QKK + QK * j < K; ++j) {
            __m256 m = _mm256_setzero_ps();
            for (int i = 0; i < 4; ++i) {
                const __m256 v = _mm256_loadu_ps(x + g * QKK + QK * j + 8 * i);
                m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v));
                bbad[j] |= _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, v), _mm256_set1_ps(INFINITY), _CMP_NLT_UQ));
            }
            __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
            m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
            bmax[j] = _mm_cvtss_f32(_mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1)));
        }
        if (whole)
            for (int j = 1; j < 8; ++j) {
                bmax[0] = fmaxf(bmax[0], bmax[j]);
                bbad[0] |= bbad[j];
            }
        for (int j = 0; j < 8 && g * QKK + QK * j < K; ++j) {
            const float *xb = x + g * QKK + QK * j;
            __m256 v[4];
            for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(xb + 8 * i);
            const float amax = bmax[whole ? 0 : j];
            const int bad = bbad[whole ? 0 : j];
            const float d = bad ? NAN : amax / 127.0f, id = inverse_scale(d, bad);
            __m256i q[4];
            for (int i = 0; i < 4; ++i)
                q[i] = bad ? _mm256_setzero_si256()
                           : _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v[i], _mm256_set1_ps(id)), lo), hi));
            const int32_t h0 = hsum8_epi32(_mm256_add_epi32(q[0], q[1])), h1 = hsum8_epi32(_mm256_add_epi32(q[2], q[3]));
            const int32_t sum = h0 + h1;
            /* 32 bytes in value order (packs interleave the 128-bit lanes; the permute undoes it) */
            const __m256i b = _mm256_permutevar8x32_epi32(
                _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3])),
                _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            uint32_t words[8], signs[8];
            _mm256_storeu_si256((__m256i *)words, _mm256_xor_si256(b, _mm256_set1_epi8((char)0x80)));
            _mm256_storeu_si256((__m256i *)signs, b);
            for (int i = 0; i < 8; ++i) {
                memcpy(o + 64 * (i & 3) + 32 * (i >> 2) + 4 * j, &words[i], 4);
                memcpy(o + XG_S + 64 * (i & 3) + 32 * (i >> 2) + 4 * j, &signs[i], 4);
            }
            ((float *)(o + XG_DX))[j] = ((float *)(o + XG_DX))[8 + j] = d;
            ((float *)(o + XG_XS))[j] = d * (float)sum;
            ((float *)(o + XG_XH))[j] = d * (float)h0;
            ((float *)(o + XG_XH))[8 + j] = d * (float)h1;
            ((int16_t *)(o + XG_NS))[j] = (int16_t)(-16 * h0);
            ((int16_t *)(o + XG_NS))[8 + j] = (int16_t)(-16 * h1);
        }
    }
}

/* ---- q8 mode: a group decoded into 8 vectors w[2k + h], 32-bit lane j = 4 values of half h of block j */
typedef struct {
    __m256i w[8];        /* signed 8-bit weights (wide_weights without VNNI: |w|) */
#if !SPX_VNNI
    __m256i sw[8];       /* wide_weights without VNNI: the signed weights, for their signs */
#endif
    __m256i corr[2];     /* −128·Σw per lane of each half: the x bytes are q + 128 */
    __m256 a[2], b;      /* KIND_G: a[0] holds sc_j as int32 (lane j), b m_j as int16 (lanes j and 8 + j);
                            KIND_G6: a[h] holds sc_2j+h as int32 (lane j) */
    __m256 b1;           /* K2: b of half 1 (b holds half 0's); KIND_G: d and dmin in lanes 0 and 1; KIND_G6: d */
} wq;

static inline void transpose4(__m256i c0, __m256i c1, __m256i c2, __m256i c3, __m256i *u) {
    /* u[e] = [c0.e c1.e c2.e c3.e | c0.(e+4) c1.(e+4) c2.(e+4) c3.(e+4)] (dwords) */
    const __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
    const __m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
    u[0] = _mm256_unpacklo_epi64(t0, t2);
    u[1] = _mm256_unpackhi_epi64(t0, t2);
    u[2] = _mm256_unpacklo_epi64(t1, t3);
    u[3] = _mm256_unpackhi_epi64(t1, t3);
}

static inline __m256i ld32(const uint8_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
static inline __m256i bcast32(const uint8_t *p) { return _mm256_set1_epi32((int)rd32(p)); }

static inline __attribute__((always_inline)) __m256i dot4(__m256i acc, __m256i u, __m256i w) {
#if SPX_VNNI
    return _mm256_dpbusd_avx_epi32(acc, u, w);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, w), _mm256_set1_epi16(1)));
#endif
}

static inline __attribute__((always_inline)) void decode_q8(const int type, const int xoff, const uint8_t *g, wq *o) {
    const __m256i nib = _mm256_set1_epi8(15);
    o->b = _mm256_setzero_ps();
    if (type == T_Q4_K || type == T_Q4_K_G || type == T_Q5_K) {
        const uint8_t *qs = g + (type == T_Q5_K ? 48 : 16);
        __m256i u[4];
        transpose4(ld32(qs), ld32(qs + 32), ld32(qs + 64), ld32(qs + 96), u);
        const __m256i shr = _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4);
        const __m256i dup[2] = {_mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3), _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7)};
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            const int k = i >> 1, h = i & 1;
            o->w[i] = _mm256_and_si256(_mm256_srlv_epi32(_mm256_permutevar8x32_epi32(u[k], dup[h]), shr), nib);
            if (type == T_Q5_K) {   /* bit j of each byte of qh dword 4h + k, to bit 4 */
                const __m256i bits = _mm256_srlv_epi32(bcast32(g + 16 + 4 * (4 * h + k)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
                o->w[i] = _mm256_or_si256(o->w[i], _mm256_slli_epi32(_mm256_and_si256(bits, _mm256_set1_epi8(1)), 4));
            }
        }
        if (q8_kind(type) == KIND_G) {
            __m256i sc, m;
            k4_ints(g, &sc, &m);
            o->a[0] = o->a[1] = _mm256_castsi256_ps(sc);
            const __m128i m8 = _mm_packs_epi32(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
            o->b = _mm256_castsi256_ps(_mm256_set_m128i(m8, m8));
            o->b1 = _mm256_setr_ps(f16at(g), f16at(g + 2), 0, 0, 0, 0, 0, 0);
        } else {
            k4_scales(g, &o->a[0], &o->b);
            o->a[1] = o->a[0];
        }
    } else if (type == T_Q2_K) {   /* lane j: qs dword 8(j >> 2) + 4h + k, field 2(j & 3); sub-block 2j + h */
        const __m256i shq = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            const int k = i >> 1, h = i & 1;
            const __m256i qs = _mm256_blend_epi32(bcast32(g + 16 + 4 * (4 * h + k)), bcast32(g + 48 + 4 * (4 * h + k)), 0xF0);
            o->w[i] = _mm256_and_si256(_mm256_srlv_epi32(qs, shq), _mm256_set1_epi8(3));
        }
        const __m128i sc = _mm_loadu_si128((const __m128i *)g);
        const __m256 d = _mm256_set1_ps(f16at(g + 80)), dmin = _mm256_set1_ps(f16at(g + 82));
        const __m256i even = _mm256_cvtepu8_epi32(_mm_shuffle_epi8(sc, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0)));
        const __m256i odd = _mm256_cvtepu8_epi32(_mm_shuffle_epi8(sc, _mm_setr_epi8(1, 3, 5, 7, 9, 11, 13, 15, 0, 0, 0, 0, 0, 0, 0, 0)));
        const __m256i f = _mm256_set1_epi32(15);
        o->a[0] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(even, f)));
        o->a[1] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(odd, f)));
        o->b = _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(_mm256_srli_epi32(even, 4)));
        o->b1 = _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(_mm256_srli_epi32(odd, 4)));
    } else if (type == T_Q3_K) {   /* qs as Q2_K's (at g + 32); lane j: bit j of each byte of hmask dword 4h + k */
        const __m256i shq = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6), shj = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            const int k = i >> 1, h = i & 1;
            const __m256i qs = _mm256_blend_epi32(bcast32(g + 32 + 4 * (4 * h + k)), bcast32(g + 64 + 4 * (4 * h + k)), 0xF0);
            const __m256i low = _mm256_and_si256(_mm256_srlv_epi32(qs, shq), _mm256_set1_epi8(3));
            const __m256i high = _mm256_and_si256(_mm256_srlv_epi32(bcast32(g + 4 * (4 * h + k)), shj), _mm256_set1_epi8(1));
            o->w[i] = _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi32(high, 2)), _mm256_set1_epi8(4));
        }
        const __m128i sc = q3_scales(g);
        const __m256 d = _mm256_set1_ps(f16at(g + 108));
        o->a[0] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                       _mm_shuffle_epi8(sc, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0)))));
        o->a[1] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                       _mm_shuffle_epi8(sc, _mm_setr_epi8(1, 3, 5, 7, 9, 11, 13, 15, 0, 0, 0, 0, 0, 0, 0, 0)))));
    } else if (type == T_Q6_K || type == T_Q6_K_G) {
        __m256i u[4];
        transpose4(ld32(g), ld32(g + 32), ld32(g + 64), ld32(g + 96), u);
        const __m256i pick[2] = {_mm256_setr_epi32(0, 1, 0, 1, 2, 3, 2, 3), _mm256_setr_epi32(4, 5, 4, 5, 6, 7, 6, 7)};
        const __m256i shl = _mm256_setr_epi32(0, 0, 4, 4, 0, 0, 4, 4), shh = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            const int k = i >> 1, h = i & 1;
            const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_permutevar8x32_epi32(u[k], pick[h]), shl), nib);
            const __m256i qh = _mm256_blend_epi32(bcast32(g + 128 + 4 * (4 * h + k)), bcast32(g + 160 + 4 * (4 * h + k)), 0xF0);
            const __m256i hi = _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(qh, shh), _mm256_set1_epi8(3)), 4);
            o->w[i] = xoff ? _mm256_or_si256(lo, hi) : _mm256_sub_epi8(_mm256_or_si256(lo, hi), _mm256_set1_epi8(32));
        }
        const __m128i sc = _mm_loadu_si128((const __m128i *)(g + 192));
        const __m256 d = _mm256_set1_ps(f16at(g + 208));
        const __m256i s0 = _mm256_cvtepi8_epi32(_mm_shuffle_epi8(sc, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0)));
        const __m256i s1 = _mm256_cvtepi8_epi32(_mm_shuffle_epi8(sc, _mm_setr_epi8(1, 3, 5, 7, 9, 11, 13, 15, 0, 0, 0, 0, 0, 0, 0, 0)));
        if (type == T_Q6_K_G) {
            o->a[0] = _mm256_castsi256_ps(s0);
            o->a[1] = _mm256_castsi256_ps(s1);
            o->b1 = _mm256_setr_ps(f16at(g + 208), 0, 0, 0, 0, 0, 0, 0);
        } else {
            o->a[0] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(s0));
            o->a[1] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(s1));
        }
    } else if (type == T_Q8_0) {   /* 8 blocks x 8 dwords, transposed: w[2k + h] lane j = block j dword 4h + k */
        __m256i s[8], r[8];
        for (int i = 0; i < 8; ++i) r[i] = ld32(g + 34 * i + 2);
        transpose4(r[0], r[1], r[2], r[3], s);
        transpose4(r[4], r[5], r[6], r[7], s + 4);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            o->w[2 * k] = _mm256_permute2x128_si256(s[k], s[4 + k], 0x20);
            o->w[2 * k + 1] = _mm256_permute2x128_si256(s[k], s[4 + k], 0x31);
        }
        if (xoff)   /* w + 128 (X_OFFSET) */
            for (int i = 0; i < 8; ++i) o->w[i] = _mm256_xor_si256(o->w[i], _mm256_set1_epi8((char)0x80));
        o->a[0] = o->a[1] = halves8(g, 34);
    } else if (type == T_IQ4_NL || type == T_IQ4_XS) {   /* 8 blocks (IQ4_XS: sub-blocks) of 16 qs bytes as Q4_0's,
                                                          each nibble looked up in IQ4_VALUES */
        const int xs = type == T_IQ4_XS, stride = xs ? 16 : block_bytes(type);
        const uint8_t *b = g + (xs ? 8 : 2);
        __m256i p[4], u[4];
        for (int i = 0; i < 4; ++i)
            p[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(b + i * stride))),
                                           _mm_loadu_si128((const __m128i *)(b + (4 + i) * stride)), 1);
        transpose4(p[0], p[1], p[2], p[3], u);   /* u[k] lane j = block j dword k */
        const __m256i values = xoff ? _mm256_xor_si256(_mm256_broadcastsi128_si256(iq4_values128()), _mm256_set1_epi8((char)0x80))
                                    : _mm256_broadcastsi128_si256(iq4_values128());   /* + 128 for X_OFFSET */
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            const int k = i >> 1, h = i & 1;
            o->w[i] = _mm256_shuffle_epi8(values, _mm256_and_si256(h ? _mm256_srli_epi16(u[k], 4) : u[k], nib));
        }
        o->a[0] = o->a[1] = xs ? iq4xs_scales(g) : halves8(g, stride);
    } else {   /* Q4_0, Q4_1, Q5_0, Q5_1: 8 blocks */
        const int bytes = block_bytes(type), qs = type == T_Q4_0 ? 2 : type == T_Q4_1 ? 4 : type == T_Q5_0 ? 6 : 8;
        const uint8_t *b = g + qs;
        __m256i p[4], u[4];
        for (int i = 0; i < 4; ++i)
            p[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(b + i * bytes))),
                                           _mm_loadu_si128((const __m128i *)(b + (4 + i) * bytes)), 1);
        transpose4(p[0], p[1], p[2], p[3], u);   /* u[k] lane j = block j dword k */
        const int five = type == T_Q5_0 || type == T_Q5_1;
        __m256i qh = _mm256_setzero_si256();
        if (five)
            qh = dwords8(g + qs - 4, bytes);
        const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12,
                                                0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12);
        const __m256i bit = _mm256_set1_epi32(0x08040201);
        const __m256i off = _mm256_set1_epi8(xoff ? 0 : type == T_Q4_0 ? 8 : type == T_Q5_0 ? 16 : 0);
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            const int k = i >> 1, h = i & 1;
            __m256i v = _mm256_and_si256(h ? _mm256_srli_epi16(u[k], 4) : u[k], nib);
            if (five) {   /* bits 16h + 4k + t of qh, t = byte: to bit 4 */
                const __m256i t = _mm256_shuffle_epi8(_mm256_srl_epi32(qh, _mm_cvtsi32_si128(16 * h + 4 * k)), spread);
                v = _mm256_or_si256(v, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(t, bit), bit), _mm256_set1_epi8(16)));
            }
            o->w[i] = _mm256_sub_epi8(v, off);
        }
        o->a[0] = o->a[1] = halves8(g, bytes);
        if (type == T_Q4_1 || type == T_Q5_1) o->b = halves8(g + 2, bytes);
    }
#if !SPX_VNNI
    if (wide_weights(type)) {   /* maddubs would saturate on (q + 128)·w: x is used signed, w as |w| */
        for (int i = 0; i < 8; ++i) {
            o->sw[i] = o->w[i];
            o->w[i] = _mm256_abs_epi8(o->w[i]);
        }
        o->corr[0] = o->corr[1] = _mm256_setzero_si256();
        return;
    }
#endif
    o->corr[0] = o->corr[1] = _mm256_setzero_si256();
    if (unsigned_weights(type) || xoff) return;
    __m256i c[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    for (int i = 0; i < 8; ++i) c[i & 1] = dot4(c[i & 1], _mm256_set1_epi8((char)0x80), o->w[i]);
    o->corr[0] = _mm256_sub_epi32(_mm256_setzero_si256(), c[0]);
    o->corr[1] = _mm256_sub_epi32(_mm256_setzero_si256(), c[1]);
}
#endif /* SPX_AVX2 */
