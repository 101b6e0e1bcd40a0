/* quant.c's AVX2 kernels (FMA, F16C; AVX-VNNI when built with it) for the activations and the q8 mode on the file's
   layout: included by quant.c, which states the rules; the same q8 arithmetic as quant_avx512.h in 8-lane vectors.
   The f32 mode is quant_avx2_f32.h. */
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

/* products of 8-bit pairs summed in 16 bits before widening, as many at a time as cannot overflow: a pair is
   at most 2·255·16 (Q4_0, Q5_0: w in −16..15 times q + 128; Q3_K's −4..3 less) or 2·31·127 (unsigned weights
   times q), so 4 fit in 16 bits; Q6_K's 2·255·32 two; Q8_0, IQ4_NL, IQ4_XS (wide_weights: |w|·|q|) one */
static inline int pairs16(int type) { return type == T_Q6_K || type == T_Q6_K_G ? 2 : wide_weights(type) ? 1 : 4; }

static inline __attribute__((always_inline)) void q8_row(const int type, const int xoff, const wq *o, const uint8_t *xg,
                                                         __m256 *acc, __m256 *accb) {
    __m256i s[2] = {o->corr[0], o->corr[1]};
    if (xoff) {   /* X_OFFSET (quant_simd.h): −off·Σq_x per half block */
        s[0] = _mm256_cvtepi16_epi32(_mm_load_si128((const __m128i *)(xg + XG_NS)));
        s[1] = _mm256_cvtepi16_epi32(_mm_load_si128((const __m128i *)(xg + XG_NS + 16)));
        for (int h = 0; h < 2; ++h)
            s[h] = offset_shift(type) < 0 ? _mm256_srai_epi32(s[h], 1)
                   : offset_shift(type) > 0 ? _mm256_slli_epi32(s[h], offset_shift(type)) : s[h];
    }
#if SPX_VNNI
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i)
        s[i & 1] = unsigned_weights(type) || xoff ? dot4(s[i & 1], o->w[i], _mm256_load_si256((const __m256i *)(xg + XG_S + 32 * i)))
                                          : dot4(s[i & 1], _mm256_load_si256((const __m256i *)(xg + 32 * i)), o->w[i]);
#else
    const int n = pairs16(type);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h)
#pragma GCC unroll 4
        for (int k = 0; k < 4; k += n) {
            __m256i p = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int e = 0; e < n; ++e) {
                const int i = 2 * (k + e) + h;
                const __m256i xv = _mm256_load_si256((const __m256i *)(xg + 32 * i));
                if (unsigned_weights(type) || xoff)
                    p = _mm256_add_epi16(p, _mm256_maddubs_epi16(o->w[i], _mm256_load_si256((const __m256i *)(xg + XG_S + 32 * i))));
                else if (wide_weights(type))   /* |w| · (x with w's sign) */
                    p = _mm256_add_epi16(p, _mm256_maddubs_epi16(o->w[i], _mm256_sign_epi8(
                                                    _mm256_load_si256((const __m256i *)(xg + XG_S + 32 * i)), o->sw[i])));
                else
                    p = _mm256_add_epi16(p, _mm256_maddubs_epi16(xv, o->w[i]));
            }
            s[h] = _mm256_add_epi32(s[h], _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
        }
#endif
    if (q8_kind(type) == KIND_G) {   /* S = Σ sc_j·(S_j0 + S_j1), −16·M = Σ m·ns_l (exact), then g_step in lane 0 */
        const int32_t S = hsum8_epi32(_mm256_mullo_epi32(_mm256_add_epi32(s[0], s[1]), _mm256_castps_si256(o->a[0])));
        const int32_t M = -(hsum8_epi32(_mm256_madd_epi16(_mm256_load_si256((const __m256i *)(xg + XG_NS)),
                                                          _mm256_castps_si256(o->b))) >> 4);
        const float a0 = g_step(_mm256_cvtss_f32(acc[0]), S, M, _mm256_cvtss_f32(o->b1),
                                _mm256_cvtss_f32(_mm256_permutevar8x32_ps(o->b1, _mm256_set1_epi32(1))),
                                ((const float *)(xg + XG_DX))[0]);
        acc[0] = _mm256_setr_ps(a0, 0, 0, 0, 0, 0, 0, 0);
        return;
    }
    if (q8_kind(type) == KIND_G6) {   /* S = Σ sc_2j+h·S_jh (exact), then g6_step in lane 0 */
        const int32_t S = hsum8_epi32(_mm256_add_epi32(_mm256_mullo_epi32(s[0], _mm256_castps_si256(o->a[0])),
                                                       _mm256_mullo_epi32(s[1], _mm256_castps_si256(o->a[1]))));
        const float a0 = g6_step(_mm256_cvtss_f32(acc[0]), S, _mm256_cvtss_f32(o->b1), ((const float *)(xg + XG_DX))[0]);
        acc[0] = _mm256_setr_ps(a0, 0, 0, 0, 0, 0, 0, 0);
        return;
    }
    const __m256 dx = _mm256_load_ps((const float *)(xg + XG_DX));
    const __m256 t0 = _mm256_mul_ps(o->a[0], dx);
    const __m256 t1 = type == T_Q6_K || type == T_Q2_K || type == T_Q3_K ? _mm256_mul_ps(o->a[1], dx) : t0;
    acc[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[0]), t0, acc[0]);
    acc[1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[1]), t1, acc[1]);
    if (q8_kind(type) == KIND_K2) {   /* per half block: accb[0] lanes j of half 0, accb[1] of half 1 */
        accb[0] = _mm256_fmadd_ps(o->b, _mm256_load_ps((const float *)(xg + XG_XH)), accb[0]);
        accb[1] = _mm256_fmadd_ps(o->b1, _mm256_load_ps((const float *)(xg + XG_XH + 32)), accb[1]);
    } else if (q8_kind(type) != KIND_S) {
        accb[0] = _mm256_fmadd_ps(o->b, _mm256_load_ps((const float *)(xg + XG_XS)), accb[0]);
    }
}

/* Group s of weight row wr decoded for the q8 arithmetic (X_OFFSET's form when xoff), the blocks a partial last
   group lacks given zero scales */
static inline __attribute__((always_inline)) void q8_group(const int type, const int xoff, const uint8_t *wr, int64_t s,
                                                           int64_t nblocks, int last, wq *o) {
    uint8_t pad[Q8_PAD];
    int tail;
    const uint8_t *g = q8_group_at(type, wr, s, nblocks, last, 0, pad, &tail);
    decode_q8(type, xoff, g, o);
    if (tail && g != pad) {   /* decoded past the row's end: those blocks' scales to zero (TAIL in quant.c) */
        const __m256 keep = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(tail),
                                                                   _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
        o->a[0] = _mm256_and_ps(o->a[0], keep);
        o->a[1] = _mm256_and_ps(o->a[1], keep);
        o->b = _mm256_and_ps(o->b, keep);
    }
}

/* DECODED's copy of a decoded group: only the parts q8_row reads for this type (fewer bytes through L2) */
static inline __attribute__((always_inline)) void wq_put(const int type, wq *d, const wq *o) {
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) d->w[i] = o->w[i];
#if !SPX_VNNI
    if (wide_weights(type))
        for (int i = 0; i < 8; ++i) d->sw[i] = o->sw[i];
#endif
    d->a[0] = o->a[0];
    d->a[1] = o->a[1];
    if (q8_kind(type) != KIND_S) d->b = o->b;
    if (q8_kind(type) == KIND_K2 || grouped_kind(q8_kind(type))) d->b1 = o->b1;
    if (!unsigned_weights(type)) d->corr[0] = o->corr[0], d->corr[1] = o->corr[1];
}

static inline __attribute__((always_inline)) void wq_get(const int type, wq *o, const wq *d) {
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) o->w[i] = d->w[i];
#if !SPX_VNNI
    if (wide_weights(type))
        for (int i = 0; i < 8; ++i) o->sw[i] = d->sw[i];
#endif
    o->a[0] = d->a[0];
    o->a[1] = d->a[1];
    o->b = q8_kind(type) != KIND_S ? d->b : _mm256_setzero_ps();
    o->b1 = q8_kind(type) == KIND_K2 || grouped_kind(q8_kind(type)) ? d->b1 : _mm256_setzero_ps();
    o->corr[0] = unsigned_weights(type) ? _mm256_setzero_si256() : d->corr[0];
    o->corr[1] = unsigned_weights(type) ? _mm256_setzero_si256() : d->corr[1];
}

/* Groups [s0, s1) of weight row wr (the call's last row: last) for R rows into their accumulators; `next`: the
   weights read after this span's when they do not follow them (XSPAN), 0 otherwise. DECODED (quant.c):
   `decoded` 2 also stores each decoded group in the row's `dec`, 1 reads them from there instead of decoding;
   both in the form without X_OFFSET, which gives the same sums (so 2 runs with R > OFFSET_ROWS only). */
static inline __attribute__((always_inline)) void q8_span(const int type, const int R, const int decoded,
                                                          const uint8_t *xq, int64_t stride, int64_t nblocks,
                                                          const uint8_t *wr, wq *dec, int last, int64_t s0,
                                                          int64_t s1, const uint8_t *next, __m256 (*acc)[2],
                                                          __m256 (*accb)[2]) {
    const int64_t gbytes = block_values(type) == QKK ? block_bytes(type) : 8 * block_bytes(type);
    const int xoff = decoded == 1 ? 0 : x_offset(type, R);
    for (int64_t s = s0; s < s1; ++s) {
        wq o;
        if (decoded == 1)
            wq_get(type, &o, &dec[s]);
        else {
            if (next) prefetch_at(next + (s - s0) * gbytes, gbytes);
            q8_group(type, xoff, wr, s, nblocks, last, &o);
            if (decoded == 2) wq_put(type, &dec[s], &o);
        }
        const uint8_t *xg = xq + s * XG;
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) q8_row(type, xoff, &o, xg + r * stride, acc[r], accb[r]);
    }
}

static inline float q8_result_avx2(int kind, const __m256 *acc, const __m256 *accb) {
    if (grouped_kind(kind)) return _mm256_cvtss_f32(acc[0]);
    const float main = hsum8(_mm256_add_ps(acc[0], acc[1]));
    const float mins = hsum8(kind == KIND_K2 ? _mm256_add_ps(accb[0], accb[1]) : accb[0]);
    return kind == KIND_SM ? main + mins : kind == KIND_KM || kind == KIND_K2 ? main - mins : main;
}

/* R rows of X against nout weight rows at w (`decoded` 0 or 2: see q8_span), or against those rows as a call
   with `decoded` 2 left them in dec (1) */
static inline __attribute__((always_inline)) void q8_rows_from(const int type, const int R, const int decoded,
                                                               const uint8_t *xq, int64_t K, const uint8_t *w,
                                                               wq *dec, int64_t nout, int64_t rowbytes, float *y,
                                                               int64_t ldy) {
    const int64_t groups = (K + QKK - 1) / QKK, stride = xq_stride(K), nblocks = K / QK;
    const int64_t span = xspan(R, groups), gbytes = block_values(type) == QKK ? block_bytes(type) : 8 * block_bytes(type);
    const int kind = q8_kind(type);
    if (span == groups) {   /* the rows' activations stay in L1: one output at a time, all its groups */
        for (int64_t c = 0; c < nout; ++c) {
            __m256 acc[RMAX][2], accb[RMAX][2];
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = accb[r][0] = accb[r][1] = _mm256_setzero_ps();
            q8_span(type, R, decoded, xq, stride, nblocks, decoded == 1 ? 0 : w + c * rowbytes,
                    decoded ? dec + c * groups : 0, c == nout - 1, 0, groups, 0, acc, accb);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) y[r * ldy + c] = q8_result_avx2(kind, acc[r], accb[r]);
        }
        return;
    }
    /* XSPAN (quant.c): up to XSPAN_OUTS outputs pass over each span of groups in turn, their sums kept in memory
       between spans (the same fmas in the same order: the same bits) */
    for (int64_t c0 = 0; c0 < nout; c0 += XSPAN_OUTS) {
        const int64_t n = nout - c0 < XSPAN_OUTS ? nout - c0 : XSPAN_OUTS;
        __m256 acc[XSPAN_OUTS][RMAX][2], accb[XSPAN_OUTS][RMAX][2];
        for (int64_t c = 0; c < n; ++c)
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) acc[c][r][0] = acc[c][r][1] = accb[c][r][0] = accb[c][r][1] = _mm256_setzero_ps();
        for (int64_t s0 = 0; s0 < groups; s0 += span) {
            const int64_t s1 = s0 + span < groups ? s0 + span : groups;
            for (int64_t c = 0; c < n; ++c) {
                __m256 a[RMAX][2], b[RMAX][2];
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) a[r][0] = acc[c][r][0], a[r][1] = acc[c][r][1], b[r][0] = accb[c][r][0], b[r][1] = accb[c][r][1];
                q8_span(type, R, decoded, xq, stride, nblocks, decoded == 1 ? 0 : w + (c0 + c) * rowbytes,
                        decoded ? dec + (c0 + c) * groups : 0, c0 + c == nout - 1, s0, s1,
                        decoded == 1 ? 0 : span_at(w, rowbytes, gbytes, c0, n, c + 1, s0, span, groups), a, b);
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r) acc[c][r][0] = a[r][0], acc[c][r][1] = a[r][1], accb[c][r][0] = b[r][0], accb[c][r][1] = b[r][1];
            }
        }
        for (int64_t c = 0; c < n; ++c)
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) y[r * ldy + c0 + c] = q8_result_avx2(kind, acc[c][r], accb[c][r]);
    }
}

static inline __attribute__((always_inline)) void q8_rows(const int type, const int R, const uint8_t *xq, int64_t K,
                                                          const uint8_t *w, int64_t nout, int64_t rowbytes, float *y,
                                                          int64_t ldy) {
    q8_rows_from(type, R, 0, xq, K, w, 0, nout, rowbytes, y, ldy);
}

#endif /* SPX_AVX2 */
