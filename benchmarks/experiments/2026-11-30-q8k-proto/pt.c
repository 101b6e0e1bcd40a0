#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define RMAX 8
static inline uint32_t rd32(const uint8_t *p){uint32_t v; memcpy(&v,p,4); return v;}
static inline __attribute__((always_inline)) __m512i dotx(__m512i s, __m512i w, const uint8_t *x) {
#ifdef EMB
    __asm__("vpdpbusd %1%{1to16%}, %2, %0" : "+v"(s) : "m"(*(const int32_t*)x), "v"(w));
    return s;
#else
    return _mm512_dpbusd_epi32(s, w, _mm512_set1_epi32((int)rd32(x)));
#endif
}
static inline __attribute__((always_inline)) void packed_scales(const uint8_t *s, int j, __m512 *a, __m512 *b) {
    const __m128i m63 = _mm_set1_epi8(63), m15 = _mm_set1_epi8(15), m3 = _mm_set1_epi8(3);
    __m128i sc, m;
    if (j < 4) {
        sc = _mm_and_si128(_mm_loadu_si128((const __m128i *)(s + 64 + 16 * j)), m63);
        m = _mm_and_si128(_mm_loadu_si128((const __m128i *)(s + 64 + 16 * (j + 4))), m63);
    } else {
        const __m128i lo = _mm_loadu_si128((const __m128i *)(s + 64 + 16 * (j + 4)));
        const __m128i up = _mm_loadu_si128((const __m128i *)(s + 64 + 16 * (j - 4)));
        const __m128i um = _mm_loadu_si128((const __m128i *)(s + 64 + 16 * j));
        sc = _mm_or_si128(_mm_and_si128(lo, m15), _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(up, 6), m3), 4));
        m = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(lo, 4), m15),
                         _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(um, 6), m3), 4));
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)s));
    const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(s + 32)));
    *a = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sc)));
    *b = _mm512_mul_ps(dm, _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(m)));
}
static inline __attribute__((always_inline)) __m512 tree8_lanes(const __m512 *a) {
    return _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6])),
                         _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7])));
}
static inline __attribute__((always_inline)) void packed_tile(const int R, const uint8_t *tile, int64_t G,
                                                              const uint8_t *xp, int64_t xstride, float *y, int64_t ldy) {
    __m512 sums[RMAX][16], mins[RMAX][8];
    const __m512i nib = _mm512_set1_epi8(15);
    for (int j = 0; j < 8; ++j) {
        __m512 acc0[RMAX], acc1[RMAX], accb[RMAX];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = accb[r] = _mm512_setzero_ps();
        const uint8_t *vals = tile + G * 256 + j * G * 256;
        for (int64_t g = 0; g < G; ++g) {
            const uint8_t *v = vals + g * 256;
            __m512 a, b;
            packed_scales(tile + g * 256, j, &a, &b);
            __m512i w0[4], w1[4];
#pragma GCC unroll 4
            for (int c = 0; c < 4; ++c) {
                const __m512i q = _mm512_loadu_si512(v + 64 * c);
                w0[c] = _mm512_and_si512(q, nib);
                w1[c] = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
            }
            const int64_t at = j * G + g;
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t *xr = xp + r * xstride, *xb = xr + 32 * at;
                __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
#pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) {
                    s0 = dotx(s0, w0[c], xb + 4 * c);
                    s1 = dotx(s1, w1[c], xb + 16 + 4 * c);
                }
                const float *dx = (const float *)(xr + 32 * 8 * G), *xs = dx + 8 * G;
#if defined(NOFLOAT)
                acc0[r] = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(acc0[r]), _mm512_add_epi32(s0, s1)));
#elif defined(ONEFMA)
                const __m512 t = _mm512_mul_ps(a, _mm512_set1_ps(dx[at]));
                acc0[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1)), t, acc0[r]);
                accb[r] = _mm512_fmadd_ps(b, _mm512_set1_ps(xs[at]), accb[r]);
#elif defined(NOMIN)
                const __m512 t = _mm512_mul_ps(a, _mm512_set1_ps(dx[at]));
                acc0[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0), t, acc0[r]);
                acc1[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), t, acc1[r]);
#else
                const __m512 t = _mm512_mul_ps(a, _mm512_set1_ps(dx[at]));
                acc0[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0), t, acc0[r]);
                acc1[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), t, acc1[r]);
                accb[r] = _mm512_fmadd_ps(b, _mm512_set1_ps(xs[at]), accb[r]);
#endif
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) sums[r][j] = acc0[r], sums[r][8 + j] = acc1[r], mins[r][j] = accb[r];
    }
    for (int r = 0; r < R; ++r) {
        __m512 s8[8];
        for (int j = 0; j < 8; ++j) s8[j] = _mm512_add_ps(sums[r][j], sums[r][8 + j]);
        _mm512_storeu_ps(y + r * ldy, _mm512_sub_ps(tree8_lanes(s8), tree8_lanes(mins[r])));
    }
}
__attribute__((noinline)) void run(int R, const uint8_t *w, int64_t tiles, int64_t G, const uint8_t *xp, int64_t xs, float *y) {
    for (int64_t t = 0; t < tiles; ++t) {
        const uint8_t *tile = w + t * G * 16 * 144;
        switch (R) {
        case 4: packed_tile(4, tile, G, xp, xs, y + 16 * t, 1024); break;
        default: packed_tile(8, tile, G, xp, xs, y + 16 * t, 1024); break;
        }
    }
}
int main(int argc, char **argv) {
    int R = atoi(argv[1]);
    const int64_t G = argc > 2 ? atoi(argv[2]) : 6, tiles = 8;
    uint8_t *w = aligned_alloc(64, tiles * G * 16 * 144);
    for (int64_t i = 0; i < tiles * G * 16 * 144; ++i) w[i] = (uint8_t)(i * 7 + 3);
    for (int64_t t = 0; t < tiles; ++t) for (int g = 0; g < G; ++g) for (int o = 0; o < 64; ++o) w[t*G*16*144 + g*256 + o] = 0x20;
    const int64_t xs = (G * 256 + G * 256 / 32 * 8 + 63) / 64 * 64;
    uint8_t *xp = aligned_alloc(64, 8 * xs);
    for (int64_t i = 0; i < 8 * xs; ++i) xp[i] = (uint8_t)(i * 13);
    for (int r = 0; r < 8; ++r) { float *dx = (float*)(xp + r * xs + 32 * 8 * G); for (int i = 0; i < 16 * G; ++i) dx[i] = 0.01f; }
    float *y = aligned_alloc(64, 8 * 1024 * 4);
    long x = 1, n = 200000000L; double t = now();
    for (long i = 0; i < n; ++i) __asm__ volatile("add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0" : "+r"(x));
    double ghz = 4.0 * n / (now() - t) / 1e9;
    int reps = 120000 / G; double best = 1e9;
    for (int k = 0; k < 5; ++k) { t = now(); for (int i = 0; i < reps; ++i) run(R, w, tiles, G, xp, xs, y); double d = now() - t; if (d < best) best = d; }
    printf("R %d ghz %.2f cycles per group-row %.2f (%g)\n", R, ghz, best * ghz * 1e9 / ((double)reps * tiles * 16 * G * R), y[5]);
}
