/* quant.c's AVX2 q8 mode, sums: a decoded group (quant_avx2.h) applied to each row's activations in exact
   integers, then the scales' fmas; a group, a span of groups, a call's rows (quant_avx512_rows.h's arithmetic in
   8-lane vectors). Included by quant.c. */
#if defined(SPX_AVX2)

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
