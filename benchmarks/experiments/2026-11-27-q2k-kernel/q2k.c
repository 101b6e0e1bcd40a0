/* Experiment: Y = X · Wᵀ with W in ggml's Q2_K format and X in specx's q8 mode (per-32 int8 + float scale),
   AVX-512 (+VNNI) only. It includes specx's quant.c for the shared parts (the activation quantizer and its
   layout, dot4, weight prefetching, the driver's tiling constants) so the Q2_K kernel differs from specx's
   Q4_K kernel only in decoding and in its min term; spx_q2k_matmul mirrors spx_matmul's driver.

   Q2_K block (84 bytes, 256 values): scales[16] (low nibble sc, high nibble m, per 16 values), qs[64]
   (value v = 128n + 32s + l is bits 2s..2s+1 of qs[32n + l]), d, dmin (f16); w = d·sc·q − dmin·m.
   In the q8 layout a 64-byte vector's lane l = 8h + j holds 4 values of half h of 32-value block j, which is
   exactly Q2_K sub-block 2j + h: each lane has one scale and one min.

   q8 arithmetic per row and group (the Q4_K one, with the min per half block instead of per block):
     S[l] = Σ q·w over the lane's 16 values (exact, VNNI, w unsigned 0..3);
     acc[l]  = fma(S[l], a[l]·dx[l], acc[l])          a = d·sc (exact)
     accb[l] = fma(b[l], xh[l], accb[l])              b = dmin·m (exact), xh = dx·Σq over the half (per row,
                                                      computed once per call: Q8_0's per-32 sums are too coarse)
   result = tree(acc) − tree(accb). Each (row, output) is one fixed sequence: batch-invariant. */
#include "quant.c"

#if !defined(SPX_AVX512) || !SPX_VNNI
#error "this experiment has an AVX-512 VNNI kernel only"
#endif

#define Q2K_BYTES 84
#define IDX_Q2(l, k) (8 * (J_(l) >> 2) + 4 * H_(l) + (k))   /* the qs dword holding the lane's 4 values */
#define SHR_Q2(l, k) (2 * (J_(l) & 3))                      /* their bit position in each byte */
#define IDX_SC2(l, k) (2 * J_(l) + H_(l))                   /* the lane's sub-block */

typedef struct {
    __m512i w[4];
    __m512 a, b;
} wq2;

#ifndef Q2K_SHIFT
#define Q2K_SHIFT 0   /* 1: shift each 2-bit field down (srlv); 0: mask it in place, as q·4^s (see decode_q2k) */
#endif
#define MASK_Q2(l, k) ((int)(0x03030303u << SHR_Q2(l, k)))
#define POW_Q2(l, k) (1.0f / (float)(1 << SHR_Q2(l, k)))          /* 4^-s, exact */
#define L16F(F, k) _mm512_setr_ps(F(0, k), F(1, k), F(2, k), F(3, k), F(4, k), F(5, k), F(6, k), F(7, k), F(8, k), \
                                  F(9, k), F(10, k), F(11, k), F(12, k), F(13, k), F(14, k), F(15, k))

/* A group decoded into the q8 lanes. Without Q2K_SHIFT the fields stay in place: the lane's weights are
   q·4^s (at most 192, still unsigned bytes), its exact integer sum is 4^s·S, and its scale is a·4^-s (exact),
   so fma(4^s·S, (a·4^-s)·dx, acc) is the product fma(S, a·dx, acc) takes, bit for bit while a·dx is a
   normal float: 4 shifts fewer per group. */
static inline __attribute__((always_inline)) void decode_q2k(const uint8_t *g, wq2 *o) {
    const __m512i qs = _mm512_loadu_si512(g + 16);
#if Q2K_SHIFT
    const __m512i three = _mm512_set1_epi8(3), shr = L16(SHR_Q2, 0);
#define FIELD(k) _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutexvar_epi32(L16(IDX_Q2, k), qs), shr), three)
    const __m512 pow = _mm512_set1_ps(1.0f);
#else
    const __m512i mask = L16(MASK_Q2, 0);
#define FIELD(k) _mm512_and_si512(_mm512_permutexvar_epi32(L16(IDX_Q2, k), qs), mask)
    const __m512 pow = L16F(POW_Q2, 0);
#endif
    o->w[0] = FIELD(0);
    o->w[1] = FIELD(1);
    o->w[2] = FIELD(2);
    o->w[3] = FIELD(3);
#undef FIELD
    const __m512i sc = _mm512_permutexvar_epi32(L16(IDX_SC2, 0), _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)g)));
    o->a = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(f16at(g + 80)), pow),
                         _mm512_cvtepi32_ps(_mm512_and_si512(sc, _mm512_set1_epi32(15))));
    o->b = _mm512_mul_ps(_mm512_set1_ps(f16at(g + 82)), _mm512_cvtepi32_ps(_mm512_srli_epi32(sc, 4)));
}

static inline __attribute__((always_inline)) void q2k_row(const wq2 *o, const uint8_t *xg, const float *xh, __m512 *acc,
                                                          __m512 *accb) {
    __m512i s = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) s = dot4(s, o->w[k], _mm512_load_si512(xg + XG_S + 64 * k));
    const __m512 t = _mm512_mul_ps(o->a, _mm512_load_ps((const float *)(xg + XG_DX)));
    *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), t, *acc);
    *accb = _mm512_fmadd_ps(o->b, _mm512_load_ps(xh), *accb);
}

static inline float hsum16(__m512 v) {   /* lanes l and l + 8 first, then tree8 */
    return hsum8(_mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))));
}

static inline __attribute__((always_inline)) void q2k_rows(const int R, const uint8_t *xq, const float *xh, int64_t K,
                                                           const uint8_t *w, int64_t nout, int64_t rowbytes, float *y,
                                                           int64_t ldy) {
    const int64_t groups = K / QKK, stride = xq_stride(K);
    for (int64_t c = 0; c < nout; ++c) {
        const uint8_t *wr = w + c * rowbytes;
        __m512 acc[RMAX], accb[RMAX];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r] = accb[r] = _mm512_setzero_ps();
        for (int64_t s = 0; s < groups; ++s) {
            const uint8_t *g = wr + s * Q2K_BYTES;
            prefetch_ahead(g, Q2K_BYTES);
            wq2 o;
            decode_q2k(g, &o);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) q2k_row(&o, xq + r * stride + s * XG, xh + (r * groups + s) * 16, &acc[r], &accb[r]);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) y[r * ldy + c] = hsum16(acc[r]) - hsum16(accb[r]);
    }
}

static __attribute__((noinline)) void q2k_kernel(int64_t R, const uint8_t *xq, const float *xh, int64_t K,
                                                 const uint8_t *w, int64_t nout, int64_t rowbytes, float *y, int64_t ldy) {
    switch (R) {
        case 1: q2k_rows(1, xq, xh, K, w, nout, rowbytes, y, ldy); break;
        case 2: q2k_rows(2, xq, xh, K, w, nout, rowbytes, y, ldy); break;
        case 3: q2k_rows(3, xq, xh, K, w, nout, rowbytes, y, ldy); break;
        case 4: q2k_rows(4, xq, xh, K, w, nout, rowbytes, y, ldy); break;
        case 5: q2k_rows(5, xq, xh, K, w, nout, rowbytes, y, ldy); break;
        case 6: q2k_rows(6, xq, xh, K, w, nout, rowbytes, y, ldy); break;
        case 7: q2k_rows(7, xq, xh, K, w, nout, rowbytes, y, ldy); break;
        default: q2k_rows(8, xq, xh, K, w, nout, rowbytes, y, ldy); break;
    }
}

/* per row and group, xh[16·g + l] = dx[l]·Σq over lane l's 16 values (one VNNI dot with ones) */
static void half_sums(const uint8_t *xq, int64_t K, float *xh) {
    const __m512i ones = _mm512_set1_epi8(1);
    for (int64_t g = 0; g < K / QKK; ++g) {
        const uint8_t *xg = xq + g * XG;
        __m512i s = _mm512_setzero_si512();
        for (int k = 0; k < 4; ++k) s = _mm512_dpbusd_epi32(s, ones, _mm512_load_si512(xg + XG_S + 64 * k));
        _mm512_storeu_ps(xh + 16 * g, _mm512_mul_ps(_mm512_load_ps((const float *)(xg + XG_DX)), _mm512_cvtepi32_ps(s)));
    }
}

/* Y (M x N) = X (M x K) · Wᵀ, W N rows of K/256 Q2_K blocks; K a multiple of 256. spx_matmul's driver: the
   threads split the outputs into contiguous ranges, each range in tiles of TILE_BYTES passed over by the rows
   RMAX at a time. Returns 0, 1 out of memory, 2 bad K. */
int spx_q2k_matmul(const float *x, int64_t M, int64_t K, const uint8_t *w, int64_t N, float *y, int32_t threads) {
    if (K % QKK) return 2;
    if (M <= 0 || N <= 0) return 0;
    const int64_t stride = xq_stride(K), groups = K / QKK, rowbytes = groups * Q2K_BYTES;
    uint8_t *xq = aligned_alloc(64, M * stride);
    float *xh = aligned_alloc(64, (M * groups * 16 * 4 + 63) / 64 * 64);
    if (!xq || !xh) {
        free(xq);
        free(xh);
        return 1;
    }
#pragma omp parallel for num_threads(threads) schedule(static) if (M * K > QUANTIZE_ALONE)
    for (int64_t m = 0; m < M; ++m) {
        quantize_row_simd(x + m * K, K, xq + m * stride);
        half_sums(xq + m * stride, K, xh + m * groups * 16);
    }
#pragma omp parallel num_threads(threads)
    {
        const int id = omp_get_thread_num(), nt = omp_get_num_threads();
        const int64_t n0 = N * id / nt, n1 = N * (id + 1) / nt;
        int64_t tile = TILE_BYTES / rowbytes;
        if (tile < 1) tile = 1;
        for (int64_t t0 = n0; t0 < n1; t0 += tile) {
            const int64_t t1 = t0 + tile < n1 ? t0 + tile : n1;
            for (int64_t r = 0; r < M; r += RMAX) {
                const int64_t R = M - r < RMAX ? M - r : RMAX;
                q2k_kernel(R, xq + r * stride, xh + r * groups * 16, K, w + t0 * rowbytes, t1 - t0, rowbytes,
                           y + r * N + t0, N);
            }
        }
    }
    free(xq);
    free(xh);
    return 0;
}
