/* Prototype: packed Q4_K, group-outer sweep with integer accumulation over a group's 8 blocks (activations with one
   scale per 256 values, Q8_K-like, and per-32 sums for the mins). Timing only: cycles per group-row, hot. */
#include <immintrin.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define RMAX 8
static inline uint32_t rd32(const uint8_t *p){uint32_t v; memcpy(&v,p,4); return v;}
/* tile layout per group g (prototype, 2048 + 320 bytes): values: 8 blocks x 4 vectors (lane o: bytes of output o,
   low nibble block value c*4+e, high nibble 16+c*4+e); scales: sc[8][16] u8, m[8][16] u8, d[16] f32, dmin[16] f32 */
#define GBYTES (2048 + 256 + 128)
/* activations per row: per group: q[256] (block j at 32j: values in order), then per group float d, int16 bsum[8] */
static inline __attribute__((always_inline)) void tile_g(const int R, const uint8_t *tile, int64_t G,
        const uint8_t *xq, const float *xd, const int16_t *xb, int64_t xstride, float *y, int64_t ldy) {
    const __m512i nib = _mm512_set1_epi8(15);
    __m512 acc[RMAX];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t g = 0; g < G; ++g) {
        const uint8_t *v = tile + g * GBYTES, *s = v + 2048;
        __m512i S[RMAX];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) S[r] = _mm512_setzero_si512();
#pragma GCC unroll 1
        for (int j = 0; j < 8; ++j) {
            __m512i w0[4], w1[4];
#pragma GCC unroll 4
            for (int c = 0; c < 4; ++c) {
                const __m512i q = _mm512_loadu_si512(v + 256 * j + 64 * c);
                w0[c] = _mm512_and_si512(q, nib);
                w1[c] = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib);
            }
            const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(s + 16 * j)));
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t *xj = xq + r * xstride + g * 256 + 32 * j;
                __m512i t = _mm512_setzero_si512();
#pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) {
                    t = _mm512_dpbusd_epi32(t, w0[c], _mm512_set1_epi32((int)rd32(xj + 4 * c)));
                    t = _mm512_dpbusd_epi32(t, w1[c], _mm512_set1_epi32((int)rd32(xj + 16 + 4 * c)));
                }
#ifdef FLOATSC
                S[r] = _mm512_castps_si512(_mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_cvtepi32_ps(sc), _mm512_castsi512_ps(S[r])));
#else
                S[r] = _mm512_add_epi32(S[r], _mm512_mullo_epi32(t, sc));
#endif
            }
        }
        /* mins: sum_j m_j * bsum_j, as 4 vpdpwssd over pairs of blocks */
        __m512i mp[4];
        for (int p = 0; p < 4; ++p) {   /* lane o: (m_{2p}, m_{2p+1}) as int16 */
            const __m512i a = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(s + 128 + 16 * 2 * p)));
            const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(s + 128 + 16 * (2 * p + 1))));
            mp[p] = _mm512_or_si512(a, _mm512_slli_epi32(b, 16));
        }
        const __m512 d = _mm512_loadu_ps((const float *)(s + 256)), dm = _mm512_loadu_ps((const float *)(s + 320));
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const int16_t *bs = xb + r * G * 8 + g * 8;
            __m512i M = _mm512_setzero_si512();
            for (int p = 0; p < 4; ++p) M = _mm512_dpwssd_epi32(M, mp[p], _mm512_set1_epi32((int)rd32((const uint8_t *)(bs + 2 * p))));
            const __m512 dx = _mm512_set1_ps(xd[r * G + g]);
#ifndef FLOATSC
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[r]), _mm512_mul_ps(d, dx), acc[r]);
#else
            acc[r] = _mm512_fmadd_ps(_mm512_castsi512_ps(S[r]), _mm512_mul_ps(d, dx), acc[r]);
#endif
            acc[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(M), _mm512_mul_ps(dm, dx), acc[r]);
        }
    }
    for (int r = 0; r < R; ++r) _mm512_storeu_ps(y + r * ldy, acc[r]);
}
__attribute__((noinline)) void run(int R, const uint8_t *w, int64_t tiles, int64_t G, const uint8_t *xq, const float *xd, const int16_t *xb, int64_t xs, float *y) {
    for (int64_t t = 0; t < tiles; ++t) {
        const uint8_t *tile = w + t * G * GBYTES;
        switch (R) {
        case 1: tile_g(1, tile, G, xq, xd, xb, xs, y + 16 * t, 1024); break;
        case 4: tile_g(4, tile, G, xq, xd, xb, xs, y + 16 * t, 1024); break;
        default: tile_g(8, tile, G, xq, xd, xb, xs, y + 16 * t, 1024); break;
        }
    }
}
int main(int argc, char **argv) {
    int R = atoi(argv[1]); const int64_t G = argc > 2 ? atoi(argv[2]) : 6, tiles = 8;
    uint8_t *w = aligned_alloc(64, tiles * G * GBYTES);
    for (int64_t i = 0; i < tiles * G * GBYTES; ++i) w[i] = (uint8_t)(i * 7 + 3);
    for (int64_t t = 0; t < tiles * G; ++t) { float *f = (float *)(w + t * GBYTES + 2048 + 256); for (int i = 0; i < 32; ++i) f[i] = 0.01f; }
    const int64_t xs = G * 256;
    uint8_t *xq = aligned_alloc(64, 8 * xs); float *xd = malloc(8 * G * 4); int16_t *xb = malloc(8 * G * 16);
    for (int64_t i = 0; i < 8 * xs; ++i) xq[i] = (uint8_t)(i * 13);
    for (int i = 0; i < 8 * G; ++i) xd[i] = 0.01f;
    for (int i = 0; i < 8 * G * 8; ++i) xb[i] = (int16_t)(i % 200 - 100);
    float *y = aligned_alloc(64, 8 * 1024 * 4);
    long x = 1, n = 200000000L; double t = now();
    for (long i = 0; i < n; ++i) __asm__ volatile("add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0" : "+r"(x));
    double ghz = 4.0 * n / (now() - t) / 1e9;
    int reps = 120000 / G; double best = 1e9;
    for (int k = 0; k < 5; ++k) { t = now(); for (int i = 0; i < reps; ++i) run(R, w, tiles, G, xq, xd, xb, xs, y); double d = now() - t; if (d < best) best = d; }
    printf("R %d G %ld ghz %.2f cycles per group-row %.2f (%g)\n", R, (long)G, ghz, best * ghz * 1e9 / ((double)reps * tiles * 16 * G * R), y[5]);
}
