/* quant.c's packed segments (AVX-512 and AVX2 builds), included by it after the packed kernels
   (quant_packed_q8.h, quant_packed_avx2.h): the activations in the packed kernels' orders (xp per 32 values, xg
   per 256) and the pass of a call's rows over a segment's tiles. */
#if (defined(SPX_AVX512) || defined(SPX_AVX2)) && SPX_DRIVER
/* the signed q of block j of a quantized group (XG layout) into dst, in the values' order */
static inline void block_q(const uint8_t *xgroup, int j, uint8_t *dst) {
    for (int h = 0; h < 2; ++h)
        for (int c = 0; c < 4; ++c) memcpy(dst + 16 * h + 4 * c, xgroup + XG_S + 64 * c + 32 * h + 4 * j, 4);
}

/* The packed kernels' activations quantized per 256 values (xg), a row every xg_stride(K) bytes: the signed q in
   the row's order, then D of each group (float), then Σq of each block as int16 (8 a group, for Q4_K's mins), then
   Q6_K's offsets (XG6_NS) as int32, 32 a group: at 4j + 2h + e, −32·Σq of the values 16h + 4e .. + 3 and
   16h + 8 + 4e .. + 3 of block j (a packed lane's 8 values: quant_packed.h). */
static inline int64_t xg_stride(int64_t K) { return ((QKK + 148) * (K / QKK) + 63) / 64 * 64; }

/* The packed kernel's activations (xp), a row every xp_stride(K) bytes: the signed q of block j of group g at
   32·(j·G + g), values in order, then dx and dx·Σq of block j of group g as floats at index
   j·G + g, then −32·Σq of its two halves as int32 at 2·(j·G + g) + h (Q6_K's weights are q − 32, Q4_0's q − 8):
   a sweep over block j reads each row's values and scales in order (the q8 layout, XG, spreads a block over four
   cache lines and keeps every group's 704 bytes, more than L1 holds for a few rows of a long row). G counts a
   last group of fewer than 8 blocks (K = 896: 4 groups; xq holds its missing blocks as zeros, which are copied
   and never read). */
static inline int64_t xp_stride(int64_t K) { return (xp_groups(K) * (QKK + 8 * 16) + 63) / 64 * 64; }

static void xp_from_xq(const uint8_t *xq, int64_t M, int64_t K, uint8_t *xp, int threads) {
    const int64_t G = xp_groups(K), Kg = G * QKK;
#pragma omp parallel for num_threads(threads) schedule(static) if (M * K > QUANTIZE_ALONE)
    for (int64_t m = 0; m < M; ++m) {
        const uint8_t *xr = xq + m * xq_stride(K);
        uint8_t *o = xp + m * xp_stride(K);
        float *dx = (float *)(o + Kg), *xs = dx + Kg / QK;
        for (int64_t g = 0; g < G; ++g)
            for (int j = 0; j < 8; ++j) {
                block_q(xr + g * XG, j, o + 32 * (j * G + g));
                memcpy(dx + j * G + g, xr + g * XG + XG_DX + 4 * j, 4);
                memcpy(xs + j * G + g, xr + g * XG + XG_XS + 4 * j, 4);
                for (int h = 0; h < 2; ++h) {   /* ns holds −16·Σq of half h at lane 8h + j */
                    int16_t ns;
                    memcpy(&ns, xr + g * XG + XG_NS + 2 * (8 * h + j), 2);
                    ((int32_t *)(xs + Kg / QK))[2 * (j * G + g) + h] = 2 * (int32_t)ns;
                }
            }
    }
}
#endif

#if defined(SPX_AVX512) && SPX_DRIVER
/* A group's Q6_K offsets (int32, 32 at ns) and Σq per block (int16, 8 at bs) from its q in order (256 bytes at q),
   both from the sums of 4 values (dwords d): lane (h, e) of block j, at 4j + 2h + e, is −32·(d[8j + 4h + e] +
   d[8j + 4h + 2 + e]), and block j's Σq the sum of its 4 lanes' */
static inline void xg_sums(const uint8_t *q, uint8_t *bs, uint8_t *ns) {
    const __m512i ones = _mm512_set1_epi8(1);
    const __m512i pick = _mm512_set_epi32(29, 28, 25, 24, 21, 20, 17, 16, 13, 12, 9, 8, 5, 4, 1, 0);
    __m512i h[4], b[2];
    for (int k = 0; k < 4; ++k) {   /* blocks 2k, 2k + 1: in each 128-bit lane (a, b, c, d) → (a + c, b + d, ..) */
        const __m512i d = dot4(_mm512_setzero_si512(), ones, _mm512_loadu_si512(q + 64 * k));
        h[k] = _mm512_add_epi32(d, _mm512_shuffle_epi32(d, _MM_PERM_BADC));
    }
    for (int k = 0; k < 2; ++k) {   /* blocks 4k .. 4k + 3: their 4 lanes each, in a 128-bit lane of s */
        const __m512i s = _mm512_permutex2var_epi32(h[2 * k], pick, h[2 * k + 1]);
        _mm512_storeu_si512(ns + 64 * k, _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(s, 5)));
        const __m512i t = _mm512_add_epi32(s, _mm512_shuffle_epi32(s, _MM_PERM_BADC));
        b[k] = _mm512_add_epi32(t, _mm512_shuffle_epi32(t, _MM_PERM_CDAB));   /* a block's Σq in each of its dwords */
    }
    const __m512i blocks = _mm512_permutex2var_epi32(b[0], _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0,
                                                                                0, 0, 0, 0), b[1]);
    _mm_storeu_si128((__m128i *)bs, _mm256_cvtepi32_epi16(_mm512_castsi512_si256(blocks)));
}

/* One row's group g of 256 values quantized straight into xg (its q, D, Σq per block, Q6_K's offsets):
   quantize_group_simd's arithmetic with one scale for the group, so the same q and D, bit for bit (a NaN or an
   infinity in the group: D NaN, q 0) */
static inline void xg_group(const float *x, uint8_t *o, int64_t G, int64_t g) {
    const __m512i absmask = _mm512_set1_epi32(0x7fffffff);
    __m512 v[16];
    __m512i m = _mm512_setzero_si512();
    for (int i = 0; i < 16; ++i) {
        v[i] = _mm512_loadu_ps(x + 16 * i);
        m = _mm512_max_epu32(m, _mm512_and_si512(_mm512_castps_si512(v[i]), absmask));
    }
    const uint32_t top = _mm512_reduce_max_epu32(m);
    const int bad = top >= 0x7f800000u;
    float amax;
    memcpy(&amax, &top, 4);
    const float d = bad ? NAN : amax / 127.0f;
    const __m512 id = _mm512_set1_ps(inverse_scale(d, bad)), lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
    const __mmask16 keep = bad ? 0 : 0xFFFF;
    uint8_t *q = o + QKK * g;
    for (int i = 0; i < 16; ++i) {
        const __m512i n = _mm512_maskz_cvtps_epi32(keep, _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v[i], id), lo), hi));
        _mm_storeu_si128((__m128i *)(q + 16 * i), _mm512_cvtsepi32_epi8(n));
    }
    memcpy(o + QKK * G + 4 * g, &d, 4);
    xg_sums(q, o + (QKK + 4) * G + 16 * g, o + XG6_NS(G) + 4 * 32 * g);
}

#endif

#if (defined(SPX_AVX512) || defined(SPX_AVX2)) && SPX_DRIVER
/* M rows of X (K a multiple of 256) quantized straight into xg (a call whose grouped weights are all packed) */
static void xg_from_x(const float *x, int64_t M, int64_t K, uint8_t *xg, int threads) {
    const int64_t G = K / QKK;
#pragma omp parallel for num_threads(threads) schedule(static) if (M * K > QUANTIZE_ALONE)
    for (int64_t m = 0; m < M; ++m)
        for (int64_t g = 0; g < G; ++g) xg_group(x + m * K + g * QKK, xg + m * xg_stride(K), G, g);
}

/* xg from the rows as quantized for the file layout's per-256 kernels (xk): a call that holds such weights too */
static void xg_from_xk(const uint8_t *xk, int64_t M, int64_t K, uint8_t *xg, int threads) {
    const int64_t G = K / QKK;
#pragma omp parallel for num_threads(threads) schedule(static) if (M * K > QUANTIZE_ALONE)
    for (int64_t m = 0; m < M; ++m) {
        const uint8_t *xr = xk + m * xq_stride(K);
        uint8_t *o = xg + m * xg_stride(K);
        for (int64_t g = 0; g < G; ++g) {
            const uint8_t *xgr = xr + g * XG;
            for (int j = 0; j < 8; ++j) block_q(xgr, j, o + QKK * g + QK * j);
            memcpy(o + QKK * G + 4 * g, xgr + XG_DX, 4);
            xg_sums(o + QKK * g, o + (QKK + 4) * G + 16 * g, o + XG6_NS(G) + 4 * 32 * g);
        }
    }
}

/* Outputs [n0, n1) (whole tiles: spx_matmul splits them so) of a packed segment for all M rows: a long X is cut
   into chunks that stay in cache, each chunk's rows pass over each tile in groups of at most PACK_RMAX (Q4_0:
   RMAX), the first group bringing the next tile into L2. */
static void packed_segment(int type, const uint8_t *xp, int64_t M, int64_t K, const uint8_t *w, int64_t n0,
                           int64_t n1, float *y, int64_t ldy) {
    const int64_t G = K / QKK, tb = pack_tile_bytes(type, K), t1 = n1 / PACK_ROWS;
    const int64_t stride = type == T_Q6_K_P16 || type == T_Q4_0_P16 ? xp_stride(K) : xg_stride(K);
    int64_t chunk = XCHUNK_BYTES / stride;
    const int64_t rmax = type == T_Q4_0_P16 ? RMAX : PACK_RMAX;   /* Q4_0's kernel keeps 2 sums a row in registers */
    chunk = chunk < rmax ? rmax : chunk / rmax * rmax;
    for (int64_t m0 = 0; m0 < M; m0 += chunk) {
        const int64_t m1 = m0 + chunk < M ? m0 + chunk : M;
        for (int64_t t = n0 / PACK_ROWS; t < t1; ++t)
            for (int64_t r = m0, R; r < m1; r += R) {
                R = m1 - r < rmax ? m1 - r : rmax;
                const uint8_t *tile = w + t * tb, *next = r == m0 && t + 1 < t1 ? tile + tb : 0;
                const uint8_t *x = xp + r * stride;
                float *out = y + r * ldy + t * PACK_ROWS;
#if defined(SPX_AVX512)
#define PACKED_PER32(N)                                                                  \
        if (type == T_Q4_0_P16) packed_tile_q40(N, tile, K, next, x, stride, out, ldy); \
        else if (type == T_Q6_K_P16) packed_tile_q6(N, tile, G, next, x, stride, out, ldy); \
        else
#else   /* spx_matmul gives the AVX2 build no packed Q6_K per 32 values */
#define PACKED_PER32(N)                                                                  \
        if (type == T_Q4_0_P16) packed_tile_q40(N < RMAX ? N : RMAX, tile, K, next, x, stride, out, ldy); \
        else
#endif
#define PACKED_R(N)                                                                 \
    case N:                                                                         \
        PACKED_PER32(N)                                                             \
        if (type == T_Q6_K_PG) packed_tile_q6g(N, tile, G, next, x, stride, out, ldy); \
        else packed_tile(N, tile, G, next, x, stride, out, ldy);                    \
        break;
                switch (R) {
                    PACKED_R(1) PACKED_R(2) PACKED_R(3) PACKED_R(4) PACKED_R(5) PACKED_R(6) PACKED_R(7) PACKED_R(8)
                    default: PACKED_R(9)
                }
#undef PACKED_R
#undef PACKED_PER32
            }
    }
}
#endif
