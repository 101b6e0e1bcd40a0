/* Prototype: Y (M x N float32) = X (M x K float32, quantized per row per 32 values to int8 + one float scale,
   as specx's q8 mode) · W (N x K, Q4_K blocks)ᵀ with AMX-INT8.
   Design: W (u8 nibbles 0..15) is the A operand (row-major, rows = output columns n), X (s8) the B operand
   (VNNI-packed once per call), so each _tile_dpbusd gives a 16(n) x 16(m) int32 tile of Yᵀ. Every 32-value
   group has its own W scale (d·sc, dmin·m per column) and its own X scale per row, so one tile product
   covers K = 32 (A: 16 x 32 bytes, B: 8 x 64 bytes) and is scaled into float accumulators right away:
   acc[n][m] += a[n]·xs[m]·C[n][m] − b[n]·(xs·Σx)[m]. Every output element sees the same sequence of
   operations whatever M is: a row's result does not depend on the rows sharing the call. */
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>
#include <sys/syscall.h>

#define QK 32
#define QKK 256
#define BB 144
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

int amx_init(void) { return (int)syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA); }

typedef struct { uint8_t palette, start; uint8_t rsv[14]; uint16_t colsb[16]; uint8_t rows[16]; } tilecfg;

static void config_tiles(void) {
    tilecfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 4; ++t) { c.rows[t] = 16; c.colsb[t] = 64; }   /* tiles 0-3: C */
    for (int t = 4; t < 6; ++t) { c.rows[t] = 16; c.colsb[t] = 32; }   /* 4-5: A (W, 16 columns x 32) */
    for (int t = 6; t < 8; ++t) { c.rows[t] = 8; c.colsb[t] = 64; }    /* 6-7: B (X, VNNI-packed) */
    _tile_loadconfig(&c);
}

static float h2f(uint16_t h) { return _cvtsh_ss(h); }

/* X (M x K float) → packed int8 B tiles xp[mt][g][8][16][4], scales xs[mt][g][16], xs·Σq xss[mt][g][16]
   (rows past M are zero). Quantization: s = amax/127, q = round(x/s) (as specx's quantize_row). */
static void quantize_pack(const float *x, int64_t M, int64_t K, int8_t *xp, float *xs, float *xss) {
    const int64_t G = K / QK, MT = (M + 15) / 16;
    memset(xp, 0, MT * G * 512);
    memset(xs, 0, MT * G * 16 * 4);
    memset(xss, 0, MT * G * 16 * 4);
    for (int64_t m = 0; m < M; ++m) {
        const int64_t mt = m / 16, mm = m % 16;
        for (int64_t g = 0; g < G; ++g) {
            const float *xb = x + m * K + g * QK;
            __m512 a = _mm512_loadu_ps(xb), b = _mm512_loadu_ps(xb + 16);
            float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b)));
            float s = amax / 127.0f, inv = amax ? 127.0f / amax : 0.0f;
            __m512i qa = _mm512_cvtps_epi32(_mm512_roundscale_ps(_mm512_mul_ps(a, _mm512_set1_ps(inv)), 8));
            __m512i qb = _mm512_cvtps_epi32(_mm512_roundscale_ps(_mm512_mul_ps(b, _mm512_set1_ps(inv)), 8));
            int sum = _mm512_reduce_add_epi32(_mm512_add_epi32(qa, qb));
            int8_t q[32];
            _mm_storeu_si128((__m128i *)q, _mm512_cvtsepi32_epi8(qa));
            _mm_storeu_si128((__m128i *)(q + 16), _mm512_cvtsepi32_epi8(qb));
            int8_t *t = xp + (mt * G + g) * 512;
            for (int r = 0; r < 8; ++r) memcpy(t + r * 64 + mm * 4, q + 4 * r, 4);
            xs[(mt * G + g) * 16 + mm] = s;
            xss[(mt * G + g) * 16 + mm] = s * (float)sum;
        }
    }
}

/* 16 rows of W (Q4_K) → nibbles wd[16][K] (u8 0..15), a[g][16] = d·sc, b[g][16] = dmin·m. */
static void decode_strip(const uint8_t *w, int64_t rowbytes, int nrows, int64_t K, uint8_t *wd, float *a, float *b) {
    const int64_t nb = K / QKK;
    const __m256i lo = _mm256_set1_epi8(15);
    for (int n = 0; n < 16; ++n) {
        if (n >= nrows) {
            memset(wd + n * K, 0, K);
            for (int64_t g = 0; g < K / QK; ++g) a[g * 16 + n] = b[g * 16 + n] = 0.0f;
            continue;
        }
        for (int64_t k = 0; k < nb; ++k) {
            const uint8_t *blk = w + n * rowbytes + k * BB, *s = blk + 4, *qs = blk + 16;
            const float d = h2f(*(const uint16_t *)blk), dm = h2f(*(const uint16_t *)(blk + 2));
            for (int j = 0; j < 8; ++j) {
                int sc, m;
                if (j < 4) { sc = s[j] & 63; m = s[j + 4] & 63; }
                else { sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4); m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4); }
                a[(k * 8 + j) * 16 + n] = d * (float)sc;
                b[(k * 8 + j) * 16 + n] = dm * (float)m;
            }
            uint8_t *o = wd + n * K + k * QKK;
            for (int c = 0; c < 4; ++c) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
                _mm256_storeu_si256((__m256i *)(o + 64 * c), _mm256_and_si256(v, lo));
                _mm256_storeu_si256((__m256i *)(o + 64 * c + 32), _mm256_and_si256(_mm256_srli_epi16(v, 4), lo));
            }
        }
    }
}

#ifdef NOEPI
#define EPI(CB, g) do { acc[0] = _mm512_add_ps(acc[0], _mm512_cvtepi32_ps(_mm512_load_si512(CB))); } while (0)
#else
#define EPI(CB, g)                                                                                  \
    do {                                                                                            \
        const __m512 xsv = _mm512_loadu_ps(xsg + (g) * 16), xssv = _mm512_loadu_ps(xssg + (g) * 16); \
        const float *ag = a + (g) * 16, *bg = b + (g) * 16;                                         \
        for (int n = 0; n < 16; ++n) {                                                              \
            __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(CB + 16 * n)), xsv);     \
            acc[n] = _mm512_fmadd_ps(t, _mm512_set1_ps(ag[n]), acc[n]);                             \
            acc[n] = _mm512_fnmadd_ps(xssv, _mm512_set1_ps(bg[n]), acc[n]);                          \
        }                                                                                           \
    } while (0)
#endif

/* One 16x16 output tile over all K. Four C tiles rotate: products of groups g+1..g+3 are in flight while
   group g's tile is stored and scaled (a tile product's latency is several times its issue interval). */
#define DOT(C, A, B, g)                                   \
    do {                                                  \
        _tile_zero(C);                                    \
        _tile_loadd(A, wd + (g) * QK, K);                 \
        _tile_loadd(B, xpt + (g) * 512, 64);              \
        _tile_dpbusd(C, A, B);                            \
    } while (0)

static void tile16(const uint8_t *wd, int64_t K, const int8_t *xpt, const float *xsg, const float *xssg,
                   const float *a, const float *b, float *y, int64_t ldy, int mrows, int ncols) {
    const int64_t G = K / QK;
    int32_t cb[4][256] __attribute__((aligned(64)));
    __m512 acc[16];
    for (int n = 0; n < 16; ++n) acc[n] = _mm512_setzero_ps();
    DOT(0, 4, 6, 0); DOT(1, 5, 7, 1); DOT(2, 4, 6, 2); DOT(3, 5, 7, 3);   /* G is a multiple of 8 */
    for (int64_t g = 0; g < G; g += 4) {
        const int more = g + 4 < G;
        _tile_stored(0, cb[0], 64); if (more) DOT(0, 4, 6, g + 4); EPI(cb[0], g);
        _tile_stored(1, cb[1], 64); if (more) DOT(1, 5, 7, g + 5); EPI(cb[1], g + 1);
        _tile_stored(2, cb[2], 64); if (more) DOT(2, 4, 6, g + 6); EPI(cb[2], g + 2);
        _tile_stored(3, cb[3], 64); if (more) DOT(3, 5, 7, g + 7); EPI(cb[3], g + 3);
    }
    float t[256] __attribute__((aligned(64)));   /* acc is Yᵀ: write it transposed */
    for (int n = 0; n < 16; ++n) _mm512_store_ps(t + 16 * n, acc[n]);
    for (int m = 0; m < mrows; ++m)
        for (int n = 0; n < ncols; ++n) y[m * ldy + n] = t[n * 16 + m];
}

/* Returns 0, or 1 when out of memory. threads split the 16-column strips of W. */
int q4k_amx_matmul(const float *x, int64_t M, int64_t K, const uint8_t *w, int64_t N, float *y, int threads) {
    const int64_t G = K / QK, MT = (M + 15) / 16, NS = (N + 15) / 16, rowbytes = K / QKK * BB;
    int8_t *xp = aligned_alloc(64, MT * G * 512);
    float *xs = aligned_alloc(64, MT * G * 64), *xss = aligned_alloc(64, MT * G * 64);
    if (!xp || !xs || !xss) { free(xp); free(xs); free(xss); return 1; }
    quantize_pack(x, M, K, xp, xs, xss);
#pragma omp parallel num_threads(threads)
    {
        config_tiles();
        uint8_t *wd = aligned_alloc(64, 16 * K);
        float *a = aligned_alloc(64, G * 64), *b = aligned_alloc(64, G * 64);
#pragma omp for schedule(static)
        for (int64_t s = 0; s < NS; ++s) {
            const int nrows = N - s * 16 < 16 ? (int)(N - s * 16) : 16;
            decode_strip(w + s * 16 * rowbytes, rowbytes, nrows, K, wd, a, b);
            for (int64_t mt = 0; mt < MT; ++mt) {
                const int mrows = M - mt * 16 < 16 ? (int)(M - mt * 16) : 16;
                tile16(wd, K, xp + mt * G * 512, xs + mt * G * 16, xss + mt * G * 16, a, b,
                       y + mt * 16 * N + s * 16, N, mrows, nrows);
            }
        }
        _tile_release();
        free(wd); free(a); free(b);
    }
    free(xp); free(xs); free(xss);
    return 0;
}

/* For the reference check: X's int8 values q (M x K) and scales s (M x K/32) exactly as the matmul uses them. */
void q4k_amx_quantize(const float *x, int64_t M, int64_t K, int8_t *q, float *s) {
    const int64_t G = K / QK, MT = (M + 15) / 16;
    int8_t *xp = aligned_alloc(64, MT * G * 512);
    float *xs = aligned_alloc(64, MT * G * 64), *xss = aligned_alloc(64, MT * G * 64);
    quantize_pack(x, M, K, xp, xs, xss);
    for (int64_t m = 0; m < M; ++m)
        for (int64_t g = 0; g < G; ++g) {
            const int8_t *t = xp + (m / 16 * G + g) * 512;
            for (int r = 0; r < 8; ++r) memcpy(q + m * K + g * QK + 4 * r, t + r * 64 + (m % 16) * 4, 4);
            s[m * G + g] = xs[(m / 16 * G + g) * 16 + m % 16];
        }
    free(xp); free(xs); free(xss);
}
