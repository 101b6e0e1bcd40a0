/* quant.c's AVX-512 q8 mode, sums: a decoded group (quant_avx512_decode.h) applied to each row's activations in
   exact integers, then the scales' fmas; a group, a span of groups, a call's rows. Included by quant.c. */
#if defined(SPX_AVX512)

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
