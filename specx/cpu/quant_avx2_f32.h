/* quant.c's AVX2 kernels for the f32 mode (gguf's exact weights into float32 activations): included by quant.c
   after quant_avx2.h, whose decoding helpers they share; quant.c states the rules. */
#if defined(SPX_AVX2)
/* ---- f32 mode: one 8-lane accumulator per (row, output); each unit (a 32-value block or a superblock) is
   decoded in steps of a few vectors to gguf's exact values (as in the AVX-512 kernels) */
#define CMAX 4
#define COLS_F32(R) ((R) == 1 ? 4 : (R) <= 3 ? 2 : 1)

static inline int f32_steps(int type) { return type == T_Q6_K || type == T_Q2_K || type == T_Q3_K ? 8 : block_values(type) == QKK ? 16 : 2; }

/* step st of a unit at g: NV = 2 vectors (Q6_K, Q2_K, Q3_K: 4) and their offsets in the unit. sa/sb: the unit's
   scales (32-value types: d and m or off·d; Q4_K/Q5_K: ws, wm per sub-block; Q6_K: d·sc, 32·d·sc per 16 values;
   Q2_K: d·sc, dmin·m per 16 values; Q3_K: d·(sc − 32) per 16 values; IQ4_NL: d; IQ4_XS: d·(ls − 32) per
   sub-block) */
static inline __attribute__((always_inline)) void dec_step(const int type, const uint8_t *g, int st, const float *sa,
                                                           const float *sb, __m256 *v, int *off) {
    const __m256i f = _mm256_set1_epi32(15);
#define U8(p) _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p)))
    if (type == T_Q8_0) {
        const __m256 d = _mm256_broadcast_ss(sa);
        v[0] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(g + 2 + 16 * st)))), d);
        v[1] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(g + 10 + 16 * st)))), d);
        off[0] = 16 * st;
        off[1] = 16 * st + 8;
    } else if (type == T_Q6_K) {   /* st = (half n, 8 values m): vectors Q = 0..3 are values 32Q + 8m of the half */
        const int n = st >> 2, m = st & 3;
        const __m256i a = U8(g + 64 * n + 8 * m), b = U8(g + 64 * n + 32 + 8 * m), h = U8(g + 128 + 32 * n + 8 * m);
        const __m256i t = _mm256_set1_epi32(0x30);
        __m256i q[4];
        q[0] = _mm256_or_si256(_mm256_and_si256(a, f), _mm256_and_si256(_mm256_slli_epi32(h, 4), t));
        q[1] = _mm256_or_si256(_mm256_and_si256(b, f), _mm256_and_si256(_mm256_slli_epi32(h, 2), t));
        q[2] = _mm256_or_si256(_mm256_srli_epi32(a, 4), _mm256_and_si256(h, t));
        q[3] = _mm256_or_si256(_mm256_srli_epi32(b, 4), _mm256_and_si256(_mm256_srli_epi32(h, 2), t));
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            const int i = 8 * n + 2 * k + (m >> 1);
            v[k] = _mm256_fmsub_ps(_mm256_cvtepi32_ps(q[k]), _mm256_broadcast_ss(sa + i), _mm256_broadcast_ss(sb + i));
            off[k] = 128 * n + 32 * k + 8 * m;
        }
    } else if (type == T_Q2_K) {   /* st = (half n, 8 values m): vectors k = 0..3 are values 32k + 8m of the half */
        const int n = st >> 2, m = st & 3;
        const __m256i raw = U8(g + 16 + 32 * n + 8 * m);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            const int i = 8 * n + 2 * k + (m >> 1);
            const __m256i q = _mm256_and_si256(_mm256_srli_epi32(raw, 2 * k), _mm256_set1_epi32(3));
            v[k] = _mm256_fmsub_ps(_mm256_cvtepi32_ps(q), _mm256_broadcast_ss(sa + i), _mm256_broadcast_ss(sb + i));
            off[k] = 128 * n + 32 * k + 8 * m;
        }
    } else if (type == T_Q3_K) {   /* st = (half n, 8 values m): vectors k = 0..3 are values 32k + 8m of the half */
        const int n = st >> 2, m = st & 3;
        const __m256i raw = U8(g + 32 + 32 * n + 8 * m), hm = U8(g + 8 * m);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {   /* (d·(sc − 32))·q, exact */
            const __m256i low = _mm256_and_si256(_mm256_srli_epi32(raw, 2 * k), _mm256_set1_epi32(3));
            const __m256i high = _mm256_and_si256(_mm256_srli_epi32(hm, 4 * n + k), _mm256_set1_epi32(1));
            const __m256i q = _mm256_sub_epi32(_mm256_or_si256(low, _mm256_slli_epi32(high, 2)), _mm256_set1_epi32(4));
            v[k] = _mm256_mul_ps(_mm256_cvtepi32_ps(q), _mm256_broadcast_ss(sa + 8 * n + 2 * k + (m >> 1)));
            off[k] = 128 * n + 32 * k + 8 * m;
        }
    } else if (type == T_Q4_K || type == T_Q5_K) {   /* st = (chunk i, 8 values m): sub-blocks 2i and 2i+1 */
        const int i = st >> 2, m = st & 3, five = type == T_Q5_K;
        const __m256i raw = U8(g + 16 + 32 * five + 32 * i + 8 * m);
        __m256i lo = _mm256_and_si256(raw, f), hi = _mm256_srli_epi32(raw, 4);
        if (five) {
            const __m256i qh = U8(g + 16 + 8 * m);
            lo = _mm256_or_si256(lo, _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(qh, 2 * i), _mm256_set1_epi32(1)), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(qh, 2 * i + 1), _mm256_set1_epi32(1)), 4));
        }
        v[0] = _mm256_fmsub_ps(_mm256_cvtepi32_ps(lo), _mm256_broadcast_ss(sa + 2 * i), _mm256_broadcast_ss(sb + 2 * i));
        v[1] = _mm256_fmsub_ps(_mm256_cvtepi32_ps(hi), _mm256_broadcast_ss(sa + 2 * i + 1), _mm256_broadcast_ss(sb + 2 * i + 1));
        off[0] = 64 * i + 8 * m;
        off[1] = 64 * i + 32 + 8 * m;
    } else if (type == T_IQ4_NL || type == T_IQ4_XS) {   /* IQ4_NL as Q4_0 below; IQ4_XS: st = (sub-block ib, 8 bytes m):
                                                          values 32ib + 8m.. (low nibbles) and 32ib + 16 + 8m.. (high) */
        const int xs = type == T_IQ4_XS, ib = xs ? st >> 1 : 0, m = xs ? st & 1 : st;
        const __m128i raw = _mm_loadl_epi64((const __m128i *)(g + (xs ? 8 + 16 * ib : 2) + 8 * m));
        const __m128i values = iq4_values128(), nib = _mm_set1_epi8(15);
        const __m256i lo = _mm256_cvtepi8_epi32(_mm_shuffle_epi8(values, _mm_and_si128(raw, nib)));
        const __m256i hi = _mm256_cvtepi8_epi32(_mm_shuffle_epi8(values, _mm_and_si128(_mm_srli_epi16(raw, 4), nib)));
        const __m256 a = _mm256_broadcast_ss(sa + ib);   /* a·T: gguf's one product */
        v[0] = _mm256_mul_ps(_mm256_cvtepi32_ps(lo), a);
        v[1] = _mm256_mul_ps(_mm256_cvtepi32_ps(hi), a);
        off[0] = 32 * ib + 8 * m;
        off[1] = 32 * ib + 16 + 8 * m;
    } else {   /* Q4_0, Q4_1, Q5_0, Q5_1: st = 8 bytes of qs: values 8st.. (low nibbles) and 16 + 8st.. (high) */
        const int one = type == T_Q4_1 || type == T_Q5_1, five = type == T_Q5_0 || type == T_Q5_1;
        const __m256i raw = U8(g + 2 + 2 * one + 4 * five + 8 * st);
        __m256i lo = _mm256_and_si256(raw, f), hi = _mm256_srli_epi32(raw, 4);
        if (five) {
            const __m256i qh = _mm256_set1_epi32((int)rd32(g + 2 + 2 * one));
            const __m256i bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
            const __m256i sl = _mm256_and_si256(_mm256_srli_epi32(qh, 8 * st), bits);
            const __m256i sh = _mm256_and_si256(_mm256_srli_epi32(qh, 16 + 8 * st), bits);
            lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_cmpeq_epi32(sl, bits), _mm256_set1_epi32(16)));
            hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_cmpeq_epi32(sh, bits), _mm256_set1_epi32(16)));
        }
        const __m256 d = _mm256_broadcast_ss(sa), m = _mm256_broadcast_ss(sb);
        v[0] = one ? _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo), d, m) : _mm256_fmsub_ps(_mm256_cvtepi32_ps(lo), d, m);
        v[1] = one ? _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi), d, m) : _mm256_fmsub_ps(_mm256_cvtepi32_ps(hi), d, m);
        off[0] = 8 * st;
        off[1] = 16 + 8 * st;
    }
#undef U8
}

/* the scales of n units from g on (n <= 8 blocks, or one superblock) into sa/sb (see dec_step) */
static inline __attribute__((always_inline)) void unit_scales(const int type, const uint8_t *g, int n, float *sa, float *sb) {
    if (type == T_Q3_K) {
        const __m128i sc = q3_scales(g);
        const __m256 d = _mm256_set1_ps(f16at(g + 108));
        _mm256_storeu_ps(sa, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc))));
        _mm256_storeu_ps(sa + 8, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_unpackhi_epi64(sc, sc)))));
        return;
    }
    if (type == T_IQ4_XS) {   /* d·(ls − 32) per sub-block */
        _mm256_storeu_ps(sa, iq4xs_scales(g));
        return;
    }
    if (type == T_Q2_K) {
        const __m256 d = _mm256_set1_ps(f16at(g + 80)), dmin = _mm256_set1_ps(f16at(g + 82));
        for (int i = 0; i < 2; ++i) {
            const __m256i sc = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(g + 8 * i)));
            _mm256_storeu_ps(sa + 8 * i, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_and_si256(sc, _mm256_set1_epi32(15)))));
            _mm256_storeu_ps(sb + 8 * i, _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(_mm256_srli_epi32(sc, 4))));
        }
        return;
    }
    if (type == T_Q6_K) {
        const __m256 d = _mm256_set1_ps(f16at(g + 208));
        for (int i = 0; i < 2; ++i) {
            const __m256 ds = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(g + 192 + 8 * i)))));
            _mm256_storeu_ps(sa + 8 * i, ds);
            _mm256_storeu_ps(sb + 8 * i, _mm256_mul_ps(ds, _mm256_set1_ps(32.0f)));
        }
        return;
    }
    if (type == T_Q4_K || type == T_Q5_K) {
        __m256 a, b;
        k4_scales(g, &a, &b);
        _mm256_storeu_ps(sa, a);
        _mm256_storeu_ps(sb, b);
        return;
    }
    const int bytes = block_bytes(type), one = type == T_Q4_1 || type == T_Q5_1;
    if (n == 8) {
        const __m256 d = halves8(g, bytes);
        _mm256_storeu_ps(sa, d);
        _mm256_storeu_ps(sb, one ? halves8(g + 2, bytes) : _mm256_mul_ps(d, _mm256_set1_ps(type == T_Q5_0 ? 16.0f : 8.0f)));
        return;
    }
    for (int i = 0; i < n; ++i) {
        sa[i] = f16at(g + i * bytes);
        sb[i] = one ? f16at(g + i * bytes + 2) : type == T_Q8_0 ? 0.0f : sa[i] * (type == T_Q5_0 ? 16.0f : 8.0f);
    }
}

static inline __attribute__((always_inline)) void f32_quant(const int type, const int R, const int C, const float *x,
                                                            int64_t K, const uint8_t *w, int64_t rowbytes, float *y,
                                                            int64_t ldy) {
    const int bytes = block_bytes(type), per = block_values(type), steps = f32_steps(type);
    const int nv = type == T_Q6_K || type == T_Q2_K || type == T_Q3_K ? 4 : 2, span = per == QKK ? 1 : 8;   /* units whose scales are read together */
    const int64_t units = K / per;
    __m256 acc[RMAX][CMAX];
    float sa[CMAX][16], sb[CMAX][16];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
    for (int64_t u0 = 0; u0 < units; u0 += span) {
        const int n = units - u0 < span ? (int)(units - u0) : span;
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
            prefetch_ahead(w + c * rowbytes + u0 * bytes, n * bytes);
            unit_scales(type, w + c * rowbytes + u0 * bytes, n, sa[c], sb[c]);
        }
        __asm__ volatile("" ::: "memory");   /* broadcast the scales from memory (load ports), not by shuffles */
        for (int i = 0; i < n; ++i) {
            const int64_t u = u0 + i;
            const int si = per == QKK ? 0 : i;
#pragma GCC unroll 2
            for (int st = 0; st < steps; ++st) {
                __m256 v[CMAX][4];
                int off[4];
#pragma GCC unroll 4
                for (int c = 0; c < C; ++c) dec_step(type, w + c * rowbytes + u * bytes, st, sa[c] + si, sb[c] + si, v[c], off);
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
                    for (int k = 0; k < nv; ++k) {
                        const __m256 xv = _mm256_loadu_ps(x + r * K + u * per + off[k]);
#pragma GCC unroll 4
                        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(v[c][k], xv, acc[r][c]);
                    }
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) y[r * ldy + c] = hsum8(acc[r][c]);
}

/* float weights: 8 values per vector; the last K % 8 through zero-padded copies */
static inline __attribute__((always_inline)) __m256 load_float8(const int type, const uint8_t *p, int64_t i) {
    if (type == T_F32) return _mm256_loadu_ps((const float *)p + i);
    const __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + i));
    if (type == T_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static inline __attribute__((always_inline)) void f32_float(const int type, const int R, const int C, const float *x,
                                                            int64_t K, const uint8_t *w, int64_t rowbytes, float *y,
                                                            int64_t ldy) {
    __m256 acc[RMAX][CMAX];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
        __m256 wv[CMAX];
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
            if (!(k & 15)) prefetch_ahead(w + c * rowbytes + k * block_bytes(type), 16 * block_bytes(type));
            wv[c] = load_float8(type, w + c * rowbytes, k);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m256 xv = _mm256_loadu_ps(x + r * K + k);
#pragma GCC unroll 4
            for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(wv[c], xv, acc[r][c]);
        }
    }
    if (k < K) {
        float wt[CMAX][8] = {{0}}, xt[8];
        for (int c = 0; c < C; ++c) decode_row_tail(type, w + c * rowbytes, k, K, wt[c]);
        for (int r = 0; r < R; ++r) {
            memset(xt, 0, sizeof xt);
            memcpy(xt, x + r * K + k, (K - k) * 4);
            for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(_mm256_loadu_ps(wt[c]), _mm256_loadu_ps(xt), acc[r][c]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) y[r * ldy + c] = hsum8(acc[r][c]);
}

static inline __attribute__((always_inline)) void f32_cols(const int type, const int R, const int C, const float *x,
                                                           int64_t K, const uint8_t *w, int64_t rowbytes, float *y,
                                                           int64_t ldy) {
    if (is_float_type(type))
        f32_float(type, R, C, x, K, w, rowbytes, y, ldy);
    else
        f32_quant(type, R, C, x, K, w, rowbytes, y, ldy);
}

#endif /* SPX_AVX2 */
