/* A prototype (not specx's kernel): Q4_K weights repacked with 16 outputs in the lanes of a vector, and the q8
 * matmul over them for 1..8 rows, to measure what a verify row would cost in such a layout (lanes.py).
 *
 * Layout of a tile (16 consecutive weight rows) and group (256 values): 8 sub-blocks of 32 values, each 4
 * vectors of 64 bytes: lane o holds 4 bytes, byte b of vector c = q[o][4c + b] | q[o][16 + 4c + b] << 4 (values
 * 4c..4c+3 in the low nibbles, 16 + 4c.. in the high); then d and dmin of the 16 rows as float32, the 8
 * sub-blocks' 6-bit scales and their 6-bit mins (16 bytes each).
 *
 * Activations as specx's q8 quantizes them: int8 per 32-value block with its own scale dx_j (and xs_j = dx_j·Σq).
 * Arithmetic per (row, output): for each group, for each sub-block j the exact integer sum S_j (q·x over its 32
 * values), then acc = fma(float(S_j), (d·sc_j)·dx_j, acc) and accm = fma(dmin·m_j, xs_j, accm); the result
 * acc − accm. Each row alone: batch-invariant.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#define QK 256
#define TILE 16
#define SUB 8
#define TILE_BYTES (SUB * 4 * 64 + 64 + 64 + 2 * SUB * TILE)   /* values, d, dmin, scales, mins */

static float f16(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return _cvtsh_ss(h);
}

static void scale_min(int j, const uint8_t *q, int *sc, int *m) {   /* ggml's get_scale_min_k4 */
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

int64_t lanes_bytes(int64_t n, int64_t k) { return n / TILE * (k / QK) * TILE_BYTES; }

/* n x k Q4_K rows (144 bytes a group) into the tile layout; n a multiple of 16, k of 256 */
void lanes_repack(const uint8_t *w, int64_t n, int64_t k, uint8_t *out) {
    const int64_t groups = k / QK;
    for (int64_t t = 0; t < n / TILE; ++t)
        for (int64_t g = 0; g < groups; ++g) {
            uint8_t *o = out + (t * groups + g) * TILE_BYTES;
            float *d = (float *)(o + SUB * 256), *dmin = d + 16;
            uint8_t *sc = o + SUB * 256 + 128, *mins = sc + SUB * TILE;
            for (int lane = 0; lane < TILE; ++lane) {
                const uint8_t *b = w + ((t * TILE + lane) * groups + g) * 144;
                d[lane] = f16(b);
                dmin[lane] = f16(b + 2);
                for (int j = 0; j < SUB; ++j) {
                    int s, m;
                    scale_min(j, b + 4, &s, &m);
                    sc[j * TILE + lane] = (uint8_t)s;
                    mins[j * TILE + lane] = (uint8_t)m;
                    for (int c = 0; c < 4; ++c)
                        for (int byte = 0; byte < 4; ++byte) {
                            const int lo = 4 * c + byte, hi = 16 + 4 * c + byte;
                            const uint8_t *qs = b + 16 + 32 * (j / 2);
                            const int sh = 4 * (j & 1);
                            const uint8_t ql = (qs[lo] >> sh) & 15, qh = (qs[hi] >> sh) & 15;
                            o[j * 256 + c * 64 + lane * 4 + byte] = (uint8_t)(ql | qh << 4);
                        }
                }
            }
        }
}

/* x: R rows of k int8 values (a row every k bytes), dx and xs: R x k/32 floats (each block's scale, and its scale
 * times its values' sum); y: R x n (ldy). Tiles [t0, t1). */
#define KERNEL(R)                                                                                                  \
    static void rows_##R(const uint8_t *wl, int64_t k, const int8_t *x, const float *dx, const float *xs,        \
                         int64_t t0, int64_t t1, float *y, int64_t ldy) {                                         \
        const int64_t groups = k / QK;                                                                           \
        const __m512i nib = _mm512_set1_epi8(15);                                                                \
        for (int64_t t = t0; t < t1; ++t) {                                                                      \
            __m512 acc[R], accm[R];                                                                              \
            for (int r = 0; r < R; ++r) acc[r] = accm[r] = _mm512_setzero_ps();                                  \
            for (int64_t g = 0; g < groups; ++g) {                                                               \
                const uint8_t *o = wl + (t * groups + g) * TILE_BYTES;                                           \
                const __m512 d = _mm512_load_ps((const float *)(o + SUB * 256));                                 \
                const __m512 dmin = _mm512_load_ps((const float *)(o + SUB * 256 + 64));                         \
                const uint8_t *sc = o + SUB * 256 + 128, *mins = sc + SUB * TILE;                                \
                for (int j = 0; j < SUB; ++j) {                                                                  \
                    __m512i wv[8];                                                                               \
                    for (int c = 0; c < 4; ++c) {                                                                \
                        const __m512i v = _mm512_load_si512(o + j * 256 + c * 64);                               \
                        wv[c] = _mm512_and_si512(v, nib);                                                        \
                        wv[4 + c] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nib);                              \
                    }                                                                                            \
                    const __m512 a = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(                   \
                                                          _mm_load_si128((const __m128i *)(sc + j * TILE)))));   \
                    const __m512 b = _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(                \
                                                          _mm_load_si128((const __m128i *)(mins + j * TILE))))); \
                    _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {                                        \
                        const int32_t *xr = (const int32_t *)(x + r * k + g * QK + j * 32);                      \
                        __m512i s = _mm512_setzero_si512();                                                      \
                        _Pragma("GCC unroll 8") for (int c = 0; c < 8; ++c)                                      \
                            s = _mm512_dpbusd_epi32(s, wv[c], _mm512_set1_epi32(xr[c]));                         \
                        const int64_t at = r * (k / 32) + g * SUB + j;                                           \
                        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(a, _mm512_set1_ps(dx[at])), \
                                                 acc[r]);                                                        \
                        accm[r] = _mm512_fmadd_ps(b, _mm512_set1_ps(xs[at]), accm[r]);                           \
                    }                                                                                            \
                }                                                                                                \
            }                                                                                                    \
            for (int r = 0; r < R; ++r) _mm512_storeu_ps(y + r * ldy + t * TILE, _mm512_sub_ps(acc[r], accm[r])); \
        }                                                                                                        \
    }
KERNEL(1)
KERNEL(2)
KERNEL(3)
KERNEL(4)
KERNEL(5)
KERNEL(6)
KERNEL(7)
KERNEL(8)

/* R <= 8 rows against all n outputs; threads split the tiles */
void lanes_matmul(const uint8_t *wl, int64_t n, int64_t k, int R, const int8_t *x, const float *dx,
                  const float *xs, float *y, int64_t ldy, int threads) {
    const int64_t tiles = n / TILE;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int th = 0; th < threads; ++th) {
        const int64_t t0 = tiles * th / threads, t1 = tiles * (th + 1) / threads;
        switch (R) {
            case 1: rows_1(wl, k, x, dx, xs, t0, t1, y, ldy); break;
            case 2: rows_2(wl, k, x, dx, xs, t0, t1, y, ldy); break;
            case 3: rows_3(wl, k, x, dx, xs, t0, t1, y, ldy); break;
            case 4: rows_4(wl, k, x, dx, xs, t0, t1, y, ldy); break;
            case 5: rows_5(wl, k, x, dx, xs, t0, t1, y, ldy); break;
            case 6: rows_6(wl, k, x, dx, xs, t0, t1, y, ldy); break;
            case 7: rows_7(wl, k, x, dx, xs, t0, t1, y, ldy); break;
            default: rows_8(wl, k, x, dx, xs, t0, t1, y, ldy); break;
        }
    }
}
