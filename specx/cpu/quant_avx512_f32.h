/* quant.c's AVX-512 kernels for the f32 mode (gguf's exact weights into float32 activations): included by quant.c
   after quant_avx512.h and quant_avx512_decode.h, whose decoding helpers they share; quant.c states the rules. */
#if defined(SPX_AVX512)
/* ---- f32 mode: each (row, output) sums into two 16-lane accumulators: values 0..15 of every 32-value
   block into the first, 16..31 into the second; then one fixed horizontal sum. */

#define CMAX 4
/* outputs decoded together for R rows (registers: 2·R·C accumulators and up to 4·C weight vectors) */
#define COLS_F32(R) ((R) == 1 ? 4 : (R) <= 4 ? 2 : 1)

/* 32 values of a 32-value block: positions 0..15 and 16..31, gguf's exact values. The 4- and 5-bit types
   look each value up in a table of the block's 16 or 32 possible values (computed as gguf does: d·q − off·d
   = d·(q − off) exactly, or d·q + m rounded once), so a value costs one permute instead of a conversion
   and a product. */
static inline __m512 iota16(int base) {
    return _mm512_add_ps(_mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_ps((float)base));
}

static inline __m512 iq4_values512(void) { return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(iq4_values128())); }

static inline __attribute__((always_inline)) void dec_block32(const int type, const uint8_t *b, float d, float m,
                                                              __m512 *w0, __m512 *w1) {
    const __m512 dv = _mm512_set1_ps(d);
    if (type == T_IQ4_NL) {   /* a table of the block's 16 values d·T (gguf's products) */
        const __m512i raw = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(b + 2)));
        const __m512 t = _mm512_mul_ps(iq4_values512(), dv);
        *w0 = _mm512_permutexvar_ps(raw, t);
        *w1 = _mm512_permutexvar_ps(_mm512_srli_epi32(raw, 4), t);
        return;
    }
    if (type == T_Q8_0) {
        *w0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b + 2)))), dv);
        *w1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b + 18)))), dv);
        return;
    }
    const int one = type == T_Q4_1 || type == T_Q5_1, five = type == T_Q5_0 || type == T_Q5_1;
    const __m512i raw = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(b + 2 + 2 * one + 4 * five)));
    const __m512 mv = _mm512_set1_ps(m);
    const __m512 t0 = one ? _mm512_fmadd_ps(iota16(0), dv, mv) : _mm512_fmsub_ps(iota16(0), dv, mv);
    if (!five) {   /* vpermps reads the low 4 bits of each index: the low nibble needs no mask */
        *w0 = _mm512_permutexvar_ps(raw, t0);
        *w1 = _mm512_permutexvar_ps(_mm512_srli_epi32(raw, 4), t0);
        return;
    }
    const __m512 t1 = one ? _mm512_fmadd_ps(iota16(16), dv, mv) : _mm512_fmsub_ps(iota16(16), dv, mv);
    const uint32_t qh = rd32(b + 2 + 2 * one);
    const __m512i sixteen = _mm512_set1_epi32(16);
    const __m512i lo = _mm512_mask_or_epi32(_mm512_and_si512(raw, _mm512_set1_epi32(15)), (__mmask16)qh, raw, sixteen);
    const __m512i hi = _mm512_mask_or_epi32(_mm512_srli_epi32(raw, 4), (__mmask16)(qh >> 16), _mm512_srli_epi32(raw, 4), sixteen);
    *w0 = _mm512_permutex2var_ps(t0, lo, t1);
    *w1 = _mm512_permutex2var_ps(t0, hi, t1);
}

/* the scales of up to 8 blocks from b on: d, and m (Q4_1, Q5_1) or off·d (Q4_0: 8·d, Q5_0: 16·d, exact) */
static inline __attribute__((always_inline)) void block_scales(const int type, const uint8_t *b, int n, float *sa, float *sb) {
    const int bytes = block_bytes(type);
    if (n == 8) {
        const __m256 d = halves8(b, bytes);
        _mm256_storeu_ps(sa, d);
        if (type == T_Q4_1 || type == T_Q5_1) _mm256_storeu_ps(sb, halves8(b + 2, bytes));
        else _mm256_storeu_ps(sb, _mm256_mul_ps(d, _mm256_set1_ps(type == T_Q5_0 ? 16.0f : 8.0f)));
        return;
    }
    for (int i = 0; i < n; ++i) {
        sa[i] = f16at(b + i * bytes);
        sb[i] = type == T_Q4_1 || type == T_Q5_1 ? f16at(b + i * bytes + 2) : sa[i] * (type == T_Q5_0 ? 16.0f : 8.0f);
    }
}

static inline __attribute__((always_inline)) void f32_blocks(const int type, const int R, const int C, const float *x,
                                                             int64_t K, const uint8_t *w, int64_t rowbytes, float *y,
                                                             int64_t ldy) {
    const int bytes = block_bytes(type);
    const int64_t nb = K / QK;
    __m512 acc[RMAX][CMAX][2];
    float sa[CMAX][8], sb[CMAX][8];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) acc[r][c][0] = acc[r][c][1] = _mm512_setzero_ps();
    for (int64_t b0 = 0; b0 < nb; b0 += 8) {
        const int n = nb - b0 < 8 ? (int)(nb - b0) : 8;
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
            prefetch_ahead(w + c * rowbytes + b0 * bytes, n * bytes);
            block_scales(type, w + c * rowbytes + b0 * bytes, n, sa[c], sb[c]);
        }
        __asm__ volatile("" ::: "memory");   /* broadcast the scales from memory (load ports), not by shuffles */
        for (int i = 0; i < n; ++i) {
            const int64_t b = b0 + i;
            __m512 w0[CMAX], w1[CMAX];
#pragma GCC unroll 4
            for (int c = 0; c < C; ++c) dec_block32(type, w + c * rowbytes + b * bytes, sa[c][i], sb[c][i], &w0[c], &w1[c]);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const __m512 x0 = _mm512_loadu_ps(x + r * K + QK * b), x1 = _mm512_loadu_ps(x + r * K + QK * b + 16);
#pragma GCC unroll 4
                for (int c = 0; c < C; ++c) {
                    acc[r][c][0] = _mm512_fmadd_ps(w0[c], x0, acc[r][c][0]);
                    acc[r][c][1] = _mm512_fmadd_ps(w1[c], x1, acc[r][c][1]);
                }
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) y[r * ldy + c] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r][c][0], acc[r][c][1]));
}

/* K types: a superblock in 4 steps of 4 vectors (16 values each) with their offsets in the superblock */
static inline __attribute__((always_inline)) void dec_super_step(const int type, const uint8_t *g, int st,
                                                                 const float *sa, const float *sb, __m512 *v, int *off) {
    if (type == T_Q6_K) {   /* step st: half n, 16 values u; vectors Q = 0..3 are values 32Q + 16u of the half */
        const int n = st >> 1, u = st & 1;
        const __m512i a = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(g + 64 * n + 16 * u)));
        const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(g + 64 * n + 32 + 16 * u)));
        const __m512i h = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(g + 128 + 32 * n + 16 * u)));
        const __m512i f = _mm512_set1_epi32(15), t = _mm512_set1_epi32(0x30);
        __m512i q[4];
        q[0] = _mm512_or_si512(_mm512_and_si512(a, f), _mm512_and_si512(_mm512_slli_epi32(h, 4), t));
        q[1] = _mm512_or_si512(_mm512_and_si512(b, f), _mm512_and_si512(_mm512_slli_epi32(h, 2), t));
        q[2] = _mm512_or_si512(_mm512_srli_epi32(a, 4), _mm512_and_si512(h, t));
        q[3] = _mm512_or_si512(_mm512_srli_epi32(b, 4), _mm512_and_si512(_mm512_srli_epi32(h, 2), t));
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {   /* (d·sc)·(q − 32), exact */
            const int i = 2 * (4 * n + k) + u;
            v[k] = _mm512_fmsub_ps(_mm512_cvtepi32_ps(q[k]), _mm512_set1_ps(sa[i]), _mm512_set1_ps(sb[i]));
            off[k] = 128 * n + 32 * k + 16 * u;
        }
        return;
    }
    if (type == T_Q2_K) {   /* step st: half n, 16 values u; vectors k = 0..3 are values 32k + 16u of the half */
        const int n = st >> 1, u = st & 1;
        const __m512i raw = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(g + 16 + 32 * n + 16 * u)));
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {   /* (d·sc)·q − dmin·m, exact products, one rounding */
            const int i = 8 * n + 2 * k + u;
            const __m512i q = _mm512_and_si512(_mm512_srli_epi32(raw, 2 * k), _mm512_set1_epi32(3));
            v[k] = _mm512_fmsub_ps(_mm512_cvtepi32_ps(q), _mm512_set1_ps(sa[i]), _mm512_set1_ps(sb[i]));
            off[k] = 128 * n + 32 * k + 16 * u;
        }
        return;
    }
    if (type == T_Q3_K) {   /* step st: half n, 16 values u; vectors k = 0..3 are values 32k + 16u of the half */
        const int n = st >> 1, u = st & 1;
        const __m512i raw = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(g + 32 + 32 * n + 16 * u)));
        const __m512i hm = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(g + 16 * u)));
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {   /* (d·(sc − 32))·q, exact */
            const __m512i low = _mm512_and_si512(_mm512_srli_epi32(raw, 2 * k), _mm512_set1_epi32(3));
            const __m512i high = _mm512_and_si512(_mm512_srli_epi32(hm, 4 * n + k), _mm512_set1_epi32(1));
            const __m512i q = _mm512_sub_epi32(_mm512_or_si512(low, _mm512_slli_epi32(high, 2)), _mm512_set1_epi32(4));
            v[k] = _mm512_mul_ps(_mm512_cvtepi32_ps(q), _mm512_set1_ps(sa[8 * n + 2 * k + u]));
            off[k] = 128 * n + 32 * k + 16 * u;
        }
        return;
    }
    if (type == T_IQ4_XS) {   /* step st: sub-blocks 2st + u, each looked up in a table of its 16 values a·T */
        const __m512 values = iq4_values512();
#pragma GCC unroll 2
        for (int u = 0; u < 2; ++u) {
            const int ib = 2 * st + u;
            const __m512i raw = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(g + 8 + 16 * ib)));
            const __m512 t = _mm512_mul_ps(values, _mm512_set1_ps(sa[ib]));
            v[2 * u] = _mm512_permutexvar_ps(raw, t);
            v[2 * u + 1] = _mm512_permutexvar_ps(_mm512_srli_epi32(raw, 4), t);
            off[2 * u] = 32 * ib;
            off[2 * u + 1] = 32 * ib + 16;
        }
        return;
    }
    /* Q4_K / Q5_K, step st = chunk i: sub-blocks 2i (low nibbles) and 2i+1 (high), 32 values each, looked up
       in tables of their 16 (32) values ws·q − wm (dec_block32 says why) */
    const int five = type == T_Q5_K;
    const uint8_t *qs = g + 16 + 32 * five + 32 * st;
    const __m512 al = _mm512_set1_ps(sa[2 * st]), bl = _mm512_set1_ps(sb[2 * st]);
    const __m512 ah = _mm512_set1_ps(sa[2 * st + 1]), bh = _mm512_set1_ps(sb[2 * st + 1]);
    const __m512 tl = _mm512_fmsub_ps(iota16(0), al, bl), th = _mm512_fmsub_ps(iota16(0), ah, bh);
#pragma GCC unroll 2
    for (int u = 0; u < 2; ++u) {
        const __m512i raw = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(qs + 16 * u)));
        if (five) {
            const __m512i qh = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(g + 16 + 16 * u)));
            const __m512i sixteen = _mm512_set1_epi32(16);
            const __m512i lo = _mm512_mask_or_epi32(_mm512_and_si512(raw, _mm512_set1_epi32(15)),
                                                    _mm512_test_epi32_mask(qh, _mm512_set1_epi32(1 << (2 * st))), raw, sixteen);
            const __m512i hi = _mm512_mask_or_epi32(_mm512_srli_epi32(raw, 4),
                                                    _mm512_test_epi32_mask(qh, _mm512_set1_epi32(2 << (2 * st))),
                                                    _mm512_srli_epi32(raw, 4), sixteen);
            v[u] = _mm512_permutex2var_ps(tl, lo, _mm512_fmsub_ps(iota16(16), al, bl));
            v[2 + u] = _mm512_permutex2var_ps(th, hi, _mm512_fmsub_ps(iota16(16), ah, bh));
        } else {
            v[u] = _mm512_permutexvar_ps(raw, tl);
            v[2 + u] = _mm512_permutexvar_ps(_mm512_srli_epi32(raw, 4), th);
        }
        off[u] = 64 * st + 16 * u;
        off[2 + u] = 64 * st + 32 + 16 * u;
    }
}

/* the per-superblock scale tables dec_super_step reads: Q4_K/Q5_K a = d·sc, b = dmin·m per sub-block;
   Q6_K a = d·sc, b = 32·d·sc per 16 values; Q2_K a = d·sc, b = dmin·m per 16 values;
   Q3_K a = d·(sc − 32) per 16 values (no b); IQ4_XS a = d·(ls − 32) per sub-block (no b) */
static inline __attribute__((always_inline)) void super_scales(const int type, const uint8_t *g, float *sa, float *sb) {
    if (type == T_Q3_K) {
        _mm512_storeu_ps(sa, _mm512_mul_ps(_mm512_set1_ps(f16at(g + 108)), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q3_scales(g)))));
        return;
    }
    if (type == T_IQ4_XS) {
        _mm256_storeu_ps(sa, iq4xs_scales(g));
    } else if (type == T_Q2_K) {
        const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)g));
        _mm512_storeu_ps(sa, _mm512_mul_ps(_mm512_set1_ps(f16at(g + 80)), _mm512_cvtepi32_ps(_mm512_and_si512(sc, _mm512_set1_epi32(15)))));
        _mm512_storeu_ps(sb, _mm512_mul_ps(_mm512_set1_ps(f16at(g + 82)), _mm512_cvtepi32_ps(_mm512_srli_epi32(sc, 4))));
    } else if (type == T_Q6_K) {
        const __m512 d = _mm512_set1_ps(f16at(g + 208));
        const __m512 ds = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(g + 192)))));
        _mm512_storeu_ps(sa, ds);
        _mm512_storeu_ps(sb, _mm512_mul_ps(ds, _mm512_set1_ps(32.0f)));
    } else {
        const __m512 ab = k4_scales16(g);
        _mm256_storeu_ps(sa, _mm512_castps512_ps256(ab));
        _mm256_storeu_ps(sb, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(ab), 1)));
    }
}

static inline __attribute__((always_inline)) void f32_super(const int type, const int R, const int C, const float *x,
                                                            int64_t K, const uint8_t *w, int64_t rowbytes, float *y,
                                                            int64_t ldy) {
    const int bytes = block_bytes(type);
    __m512 acc[RMAX][CMAX][2];
    float sa[CMAX][16], sb[CMAX][16];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) acc[r][c][0] = acc[r][c][1] = _mm512_setzero_ps();
    for (int64_t s = 0; s < K / QKK; ++s) {
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
            prefetch_ahead(w + c * rowbytes + s * bytes, bytes);
            super_scales(type, w + c * rowbytes + s * bytes, sa[c], sb[c]);
        }
        __asm__ volatile("" ::: "memory");   /* broadcast the scales from memory (load ports), not by shuffles */
        for (int pair = 0; pair < 4; pair += 2)   /* steps in pairs: Q6_K's (Q2_K's, Q3_K's) even and odd steps feed its two sums */
#pragma GCC unroll 2
        for (int st = pair; st < pair + 2; ++st) {
            __m512 v[CMAX][4];
            int off[4];
#pragma GCC unroll 4
            for (int c = 0; c < C; ++c) dec_super_step(type, w + c * rowbytes + s * bytes, st, sa[c], sb[c], v[c], off);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const float *xr = x + r * K + QKK * s;
#pragma GCC unroll 4
                for (int k = 0; k < 4; ++k) {
                    const __m512 xv = _mm512_loadu_ps(xr + off[k]);
                    const int half = type == T_Q6_K || type == T_Q2_K || type == T_Q3_K ? (st - pair) & 1 : k & 1;   /* = (off[k] >> 4) & 1 */
#pragma GCC unroll 4
                    for (int c = 0; c < C; ++c) acc[r][c][half] = _mm512_fmadd_ps(v[c][k], xv, acc[r][c][half]);
                }
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) y[r * ldy + c] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r][c][0], acc[r][c][1]));
}

/* float weights: 32 values per step, the tail through masked loads */
static inline __attribute__((always_inline)) __m512 load_float16(const int type, const uint8_t *p, int64_t i, __mmask16 m) {
    if (type == T_F32) return _mm512_maskz_loadu_ps(m, (const float *)p + i);
    const __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i);
    if (type == T_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static inline __attribute__((always_inline)) void f32_float(const int type, const int R, const int C, const float *x,
                                                            int64_t K, const uint8_t *w, int64_t rowbytes, float *y,
                                                            int64_t ldy) {
    __m512 acc[RMAX][CMAX][2];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) acc[r][c][0] = acc[r][c][1] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k += 32) {
        const int64_t n = K - k;
        const __mmask16 m0 = n >= 16 ? 0xFFFF : (__mmask16)((1u << n) - 1);
        const __mmask16 m1 = n >= 32 ? 0xFFFF : n <= 16 ? 0 : (__mmask16)((1u << (n - 16)) - 1);
        __m512 w0[CMAX], w1[CMAX];
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
            prefetch_ahead(w + c * rowbytes + k * block_bytes(type), 32 * block_bytes(type));
            w0[c] = load_float16(type, w + c * rowbytes, k, m0);
            w1[c] = load_float16(type, w + c * rowbytes, k + 16, m1);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m512 x0 = _mm512_maskz_loadu_ps(m0, x + r * K + k), x1 = _mm512_maskz_loadu_ps(m1, x + r * K + k + 16);
#pragma GCC unroll 4
            for (int c = 0; c < C; ++c) {
                acc[r][c][0] = _mm512_fmadd_ps(w0[c], x0, acc[r][c][0]);
                acc[r][c][1] = _mm512_fmadd_ps(w1[c], x1, acc[r][c][1]);
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) y[r * ldy + c] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r][c][0], acc[r][c][1]));
}

static inline __attribute__((always_inline)) void f32_cols(const int type, const int R, const int C, const float *x,
                                                           int64_t K, const uint8_t *w, int64_t rowbytes, float *y,
                                                           int64_t ldy) {
    if (is_float_type(type))
        f32_float(type, R, C, x, K, w, rowbytes, y, ldy);
    else if (block_values(type) == QKK)
        f32_super(type, R, C, x, K, w, rowbytes, y, ldy);
    else
        f32_blocks(type, R, C, x, K, w, rowbytes, y, ldy);
}

#endif /* SPX_AVX512 */
