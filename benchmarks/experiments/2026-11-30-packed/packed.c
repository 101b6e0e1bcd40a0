/* A prototype: Q4_K weights repacked with 16 outputs in a vector's lanes, and specx's q8 arithmetic on them to the
 * bit (quant.c's contract: per half block an exact integer sum S, t = (d·sc)·dx, acc[8h + j] = fma(S, t, acc),
 * accb[j] = fma(dmin·m, xs, accb), tree8(acc[j] + acc[8 + j]) − tree8(accb)), to measure whether the layout makes
 * a verify row cheaper without changing a result (packed.py).
 *
 * A tile is 16 consecutive weight rows (the last one padded with zero rows). Per tile, for G groups of 256 values:
 *   scales, G × 256 bytes: d of the 16 rows (f16, 32 bytes), dmin (32 bytes), then the 12 scale bytes of the
 *     group transposed (byte i of row o at 64 + 16 i + o);
 *   values, 8 × G × 256 bytes, sub-block-major: for sub-block j, for group g, 4 vectors of 64 bytes: lane o byte
 *     4c + b holds value 4c + b of the sub-block in its low nibble and value 16 + 4c + b in its high one.
 * The same 2,304 bytes a tile and group as the file's 16 × 144.
 * A tile's sub-block j is swept over all groups with its 2 × R sums and R mins in registers, so every weight
 * vector is decoded once per call and used by every row; the 8 sweeps read the tile's values once, in order. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define QKK 256
#define TILE 16
#define RMAX 8
/* Settings (prefetch_variants.py): pf_ahead, bytes the value stream is asked for into L1 ahead (0: not); next_t1,
 * the next tile asked into L2 in order, an eighth of a group per step; one_mode, one row with groups outer (nine
 * streams) instead of a sweep per block. The defaults are the first prototype's (packed.py). */
int64_t pf_ahead = 2048;
int next_t1 = 0;
int one_mode = 0;
void set_mode(int64_t a, int n, int o) { pf_ahead = a; next_t1 = n; one_mode = o; }

int64_t packed_bytes(int64_t n, int64_t k) { return (n + TILE - 1) / TILE * (k / QKK) * 9 * 256; }

void packed_repack(const uint8_t *w, int64_t n, int64_t k, uint8_t *out) {
    const int64_t G = k / QKK, tiles = (n + TILE - 1) / TILE;
    memset(out, 0, packed_bytes(n, k));
    for (int64_t t = 0; t < tiles; ++t) {
        uint8_t *tile = out + t * G * 9 * 256;
        for (int o = 0; o < TILE && t * TILE + o < n; ++o)
            for (int64_t g = 0; g < G; ++g) {
                const uint8_t *b = w + ((t * TILE + o) * G + g) * 144;
                uint8_t *s = tile + g * 256;
                memcpy(s + 2 * o, b, 2);
                memcpy(s + 32 + 2 * o, b + 2, 2);
                for (int i = 0; i < 12; ++i) s[64 + 16 * i + o] = b[4 + i];
                for (int j = 0; j < 8; ++j) {
                    const uint8_t *qs = b + 16 + 32 * (j / 2);
                    const int sh = 4 * (j & 1);
                    uint8_t *v = tile + G * 256 + (j * G + g) * 256;
                    for (int c = 0; c < 4; ++c)
                        for (int e = 0; e < 4; ++e)
                            v[64 * c + 4 * o + e] = (uint8_t)(((qs[4 * c + e] >> sh) & 15) | (((qs[16 + 4 * c + e] >> sh) & 15) << 4));
                }
            }
    }
}

/* sub-block j's scales (a = d·sc) and mins (b = dmin·m) of the 16 rows, exact as in quant.c */
static inline __attribute__((always_inline)) void scales_j(const uint8_t *s, int j, __m512 *a, __m512 *b) {
    const __m128i m63 = _mm_set1_epi8(63), m15 = _mm_set1_epi8(15), m3 = _mm_set1_epi8(3);
    __m128i sc, m;
    if (j < 4) {
        sc = _mm_and_si128(_mm_load_si128((const __m128i *)(s + 64 + 16 * j)), m63);
        m = _mm_and_si128(_mm_load_si128((const __m128i *)(s + 64 + 16 * (j + 4))), m63);
    } else {
        const __m128i lo = _mm_load_si128((const __m128i *)(s + 64 + 16 * (j + 4)));
        const __m128i up = _mm_load_si128((const __m128i *)(s + 64 + 16 * (j - 4)));
        const __m128i um = _mm_load_si128((const __m128i *)(s + 64 + 16 * j));
        sc = _mm_or_si128(_mm_and_si128(lo, m15), _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(up, 6), m3), 4));
        m = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(lo, 4), m15), _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(um, 6), m3), 4));
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)s));
    const __m512 dm = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(s + 32)));
    *a = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sc)));
    *b = _mm512_mul_ps(dm, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(m)));
}

static inline __attribute__((always_inline)) float tree8f(const float *a) {
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

static inline __attribute__((always_inline)) __m512 tree8v(const __m512 *a) {
    return _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6])),
                         _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7])));
}

/* x: R rows of int8 (xstride bytes apart), dx and xs: per row sstride floats (one per 32 values) */
static inline __attribute__((always_inline)) void tile_rows(const int R, const uint8_t *tile, int64_t G,
        const int8_t *x, int64_t xstride, const float *dx, const float *xs, int64_t sstride, float *y, int64_t ldy,
        int valid) {
    __m512 A[RMAX][16], Mn[RMAX][8];
    const __m512i nib = _mm512_set1_epi8(15);
    for (int j = 0; j < 8; ++j) {
        __m512 acc0[RMAX], acc1[RMAX], accm[RMAX];
        for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = accm[r] = _mm512_setzero_ps();
        const uint8_t *vals = tile + G * 256 + j * G * 256;
        for (int64_t g = 0; g < G; ++g) {
            __m512 a, b;
            scales_j(tile + g * 256, j, &a, &b);
            const uint8_t *v = vals + g * 256;
            if (pf_ahead) for (int i = 0; i < 256; i += 64) _mm_prefetch((const char *)(v + pf_ahead + i), _MM_HINT_T0);
            if (next_t1) { const uint8_t *nx = tile + G * 9 * 256 + (j * G + g) * 288; for (int i = 0; i < 288; i += 64) _mm_prefetch((const char *)(nx + i), _MM_HINT_T1); }
            __m512i w0[4], w1[4];
            for (int c = 0; c < 4; ++c) {
                const __m512i q = _mm512_load_si512(v + 64 * c);
                w0[c] = _mm512_and_si512(q, nib);
                w1[c] = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
            }
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const int32_t *xb = (const int32_t *)(x + r * xstride + g * QKK + 32 * j);
                __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
                for (int c = 0; c < 4; ++c) {
                    s0 = _mm512_dpbusd_epi32(s0, w0[c], _mm512_set1_epi32(xb[c]));
                    s1 = _mm512_dpbusd_epi32(s1, w1[c], _mm512_set1_epi32(xb[4 + c]));
                }
                const __m512 t = _mm512_mul_ps(a, _mm512_set1_ps(dx[r * sstride + 8 * g + j]));
                acc0[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0), t, acc0[r]);
                acc1[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), t, acc1[r]);
                accm[r] = _mm512_fmadd_ps(b, _mm512_set1_ps(xs[r * sstride + 8 * g + j]), accm[r]);
            }
        }
        for (int r = 0; r < R; ++r) A[r][j] = acc0[r], A[r][8 + j] = acc1[r], Mn[r][j] = accm[r];
    }
    const __mmask16 mask = (__mmask16)((1u << valid) - 1);
    for (int r = 0; r < R; ++r) {
        __m512 s8[8];
        for (int j = 0; j < 8; ++j) s8[j] = _mm512_add_ps(A[r][j], A[r][8 + j]);
        _mm512_mask_storeu_ps(y + r * ldy, mask, _mm512_sub_ps(tree8v(s8), tree8v(Mn[r])));
    }
}


/* one row, groups outer: the 16 sums and 8 mins in registers, the 8 blocks' values read in step */
static void one_row_g(const uint8_t *tile, int64_t G, const int8_t *x, const float *dx, const float *xs, float *y) {
    __m512 acc[16], accm[8];
    for (int i = 0; i < 16; ++i) acc[i] = _mm512_setzero_ps();
    for (int i = 0; i < 8; ++i) accm[i] = _mm512_setzero_ps();
    const __m512i nib = _mm512_set1_epi8(15);
    for (int64_t g = 0; g < G; ++g) {
        const uint8_t *sc = tile + g * 256;
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
            const uint8_t *v = tile + G * 256 + (j * G + g) * 256;
            if (pf_ahead) for (int i = 0; i < 256; i += 64) _mm_prefetch((const char *)(v + pf_ahead + i), _MM_HINT_T0);
            if (next_t1) { const uint8_t *nx = tile + G * 9 * 256 + (g * 8 + j) * 288; for (int i = 0; i < 288; i += 64) _mm_prefetch((const char *)(nx + i), _MM_HINT_T1); }
            __m512 a, b;
            scales_j(sc, j, &a, &b);
            const int32_t *xb = (const int32_t *)(x + g * QKK + 32 * j);
            __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
            for (int c = 0; c < 4; ++c) {
                const __m512i q = _mm512_loadu_si512(v + 64 * c);
                s0 = _mm512_dpbusd_epi32(s0, _mm512_and_si512(q, nib), _mm512_set1_epi32(xb[c]));
                s1 = _mm512_dpbusd_epi32(s1, _mm512_and_si512(_mm512_srli_epi16(q, 4), nib), _mm512_set1_epi32(xb[4 + c]));
            }
            const __m512 t = _mm512_mul_ps(a, _mm512_set1_ps(dx[8 * g + j]));
            acc[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0), t, acc[j]);
            acc[8 + j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), t, acc[8 + j]);
            accm[j] = _mm512_fmadd_ps(b, _mm512_set1_ps(xs[8 * g + j]), accm[j]);
        }
    }
    __m512 s8[8];
    for (int j = 0; j < 8; ++j) s8[j] = _mm512_add_ps(acc[j], acc[8 + j]);
    _mm512_storeu_ps(y, _mm512_sub_ps(tree8v(s8), tree8v(accm)));
}

#define ROWS_FN(R)                                                                                                 \
    static void rows_##R(const uint8_t *wp, int64_t n, int64_t G, const int8_t *x, int64_t xstride,             \
                         const float *dx, const float *xs, int64_t sstride, int64_t t0, int64_t t1, float *y,   \
                         int64_t ldy) {                                                                          \
        for (int64_t t = t0; t < t1; ++t) {                                                                      \
            const int valid = n - t * TILE < TILE ? (int)(n - t * TILE) : TILE;                                  \
            tile_rows(R, wp + t * G * 9 * 256, G, x, xstride, dx, xs, sstride, y + t * TILE, ldy, valid);         \
        }                                                                                                        \
    }
ROWS_FN(1) ROWS_FN(2) ROWS_FN(3) ROWS_FN(4) ROWS_FN(5) ROWS_FN(6) ROWS_FN(7) ROWS_FN(8)

/* M rows (any number, in passes of at most 8) against all n outputs; threads split the tiles */
void packed_matmul(const uint8_t *wp, int64_t n, int64_t k, int64_t M, const int8_t *x, const float *dx,
                   const float *xs, float *y, int64_t ldy, int threads) {
    const int64_t tiles = (n + TILE - 1) / TILE, G = k / QKK, sstride = k / 32;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int th = 0; th < threads; ++th) {
        const int64_t t0 = tiles * th / threads, t1 = tiles * (th + 1) / threads;
        for (int64_t m = 0; m < M; m += RMAX) {
            const int64_t R = M - m < RMAX ? M - m : RMAX;
            const int8_t *xr = x + m * k;
            const float *dr = dx + m * sstride, *sr = xs + m * sstride;
            float *yr = y + m * ldy;
            if (R == 1 && one_mode) { for (int64_t t = t0; t < t1; ++t) one_row_g(wp + t * G * 9 * 256, G, xr, dr, sr, yr + t * TILE); continue; }
            switch (R) {
                case 1: rows_1(wp, n, G, xr, k, dr, sr, sstride, t0, t1, yr, ldy); break;
                case 2: rows_2(wp, n, G, xr, k, dr, sr, sstride, t0, t1, yr, ldy); break;
                case 3: rows_3(wp, n, G, xr, k, dr, sr, sstride, t0, t1, yr, ldy); break;
                case 4: rows_4(wp, n, G, xr, k, dr, sr, sstride, t0, t1, yr, ldy); break;
                case 5: rows_5(wp, n, G, xr, k, dr, sr, sstride, t0, t1, yr, ldy); break;
                case 6: rows_6(wp, n, G, xr, k, dr, sr, sstride, t0, t1, yr, ldy); break;
                case 7: rows_7(wp, n, G, xr, k, dr, sr, sstride, t0, t1, yr, ldy); break;
                default: rows_8(wp, n, G, xr, k, dr, sr, sstride, t0, t1, yr, ldy); break;
            }
        }
    }
}
