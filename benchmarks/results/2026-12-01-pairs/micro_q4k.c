/* The packed Q4_K kernel's inner loop before this change (each lane one row: a block's two 16-value sums added, then
   a 32-bit multiply by the scale) against the pair layout (two rows a lane, 8-byte activation broadcasts, packs +
   one dpwssd per block), on random bytes in L2 (48 tiles of K = 1536), one thread, R = 1, 2, 5, 9 rows; the times
   only (the arithmetic is checked by tests/cpu). Build: gcc -O3 -ffp-contract=off -mavx512f -mavx512bw -mavx512vl
   -mavx2 -mfma -mf16c -mavx512vnni micro_q4k.c */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define QK 32
#define QKK 256
#define PACK_GROUP_Q4 (9*256)
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static inline uint32_t rd32(const uint8_t *p){uint32_t v;memcpy(&v,p,4);return v;}
static inline uint64_t rd64(const uint8_t *p){uint64_t v;memcpy(&v,p,8);return v;}
#define dot4 _mm512_dpbusd_epi32
#define dot2w _mm512_dpwssd_epi32
static inline __attribute__((always_inline)) void packed_ints(const uint8_t *s, int j, __m128i *sc, __m128i *m) {
    const __m128i m63 = _mm_set1_epi8(63), m15 = _mm_set1_epi8(15), m3 = _mm_set1_epi8(3);
    if (j < 4) {
        *sc = _mm_and_si128(_mm_loadu_si128((const __m128i *)(s + 64 + 16 * j)), m63);
        *m = _mm_and_si128(_mm_loadu_si128((const __m128i *)(s + 64 + 16 * (j + 4))), m63);
        return;
    }
    const __m128i lo = _mm_loadu_si128((const __m128i *)(s + 64 + 16 * (j + 4)));
    const __m128i up = _mm_loadu_si128((const __m128i *)(s + 64 + 16 * (j - 4)));
    const __m128i um = _mm_loadu_si128((const __m128i *)(s + 64 + 16 * j));
    *sc = _mm_or_si128(_mm_and_si128(lo, m15), _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(up, 6), m3), 4));
    *m = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(lo, 4), m15), _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(um, 6), m3), 4));
}
static inline __attribute__((always_inline)) __m512i min_pair(const __m128i *mins, int p) {
    return _mm512_or_si512(_mm512_cvtepu8_epi32(mins[2 * p]), _mm512_slli_epi32(_mm512_cvtepu8_epi32(mins[2 * p + 1]), 16));
}
static inline __attribute__((always_inline)) __m512i min_sum(const __m512i *mp, const uint8_t *bs) {
    __m512i M = _mm512_setzero_si512();
    for (int p = 0; p < 4; ++p) M = dot2w(M, mp[p], _mm512_set1_epi32((int)rd32(bs + 4 * p)));
    return M;
}
#define RMAX 9
/* variant: 0 = current, 1 = pair layout */
#define TILE(NAME, VAR)                                                                                     \
static inline __attribute__((always_inline)) void NAME(const int R, const uint8_t *tile, int64_t G, const uint8_t *xg, int64_t xstride, float *y, int64_t ldy) { \
    __m512 acc[RMAX]; const __m512i nib = _mm512_set1_epi8(15);                                              \
    _Pragma("GCC unroll 9") for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();                                               \
    for (int64_t g = 0; g < G; ++g) {                                                                        \
        const uint8_t *grp = tile + g * PACK_GROUP_Q4; __m512i S[RMAX]; __m128i mins[8];                     \
        _Pragma("GCC unroll 9") for (int r = 0; r < R; ++r) S[r] = _mm512_setzero_si512();                                          \
        _Pragma("GCC unroll 1") for (int j = 0; j < 8; ++j) {                                                \
            const uint8_t *v = grp + 256 * (1 + j); __m128i scb; packed_ints(grp, j, &scb, &mins[j]);        \
            __m512i w0[4], w1[4];                                                                            \
            _Pragma("GCC unroll 4") for (int c = 0; c < 4; ++c) { const __m512i q = _mm512_loadu_si512(v + 64 * c);                  \
                w0[c] = _mm512_and_si512(q, nib); w1[c] = _mm512_and_si512(_mm512_srli_epi16(q, 4), nib); }   \
            if (VAR == 0) {                                                                                  \
                const __m512i sc = _mm512_cvtepu8_epi32(scb);                                                \
                _Pragma("GCC unroll 9") for (int r = 0; r < R; ++r) { const uint8_t *xb = xg + r * xstride + QKK * g + QK * j;         \
                    __m512i t0 = _mm512_setzero_si512(), t1 = _mm512_setzero_si512();                        \
                    _Pragma("GCC unroll 4") for (int c = 0; c < 4; ++c) { t0 = dot4(t0, w0[c], _mm512_set1_epi32((int)rd32(xb + 4 * c))); \
                        t1 = dot4(t1, w1[c], _mm512_set1_epi32((int)rd32(xb + 16 + 4 * c))); }                 \
                    S[r] = _mm512_add_epi32(S[r], _mm512_mullo_epi32(_mm512_add_epi32(t0, t1), sc)); }        \
            } else {                                                                                         \
                const __m512i sc = _mm512_cvtepu8_epi32(scb);                                                \
                const __m512i sp = _mm512_or_si512(sc, _mm512_slli_epi32(sc, 16));                           \
                _Pragma("GCC unroll 9") for (int r = 0; r < R; ++r) { const uint8_t *xb = xg + r * xstride + QKK * g + QK * j;         \
                    __m512i t0 = _mm512_setzero_si512(), t1 = _mm512_setzero_si512();                        \
                    _Pragma("GCC unroll 4") for (int c = 0; c < 4; ++c) { const __m512i xv = _mm512_set1_epi64((long long)rd64(xb + 8 * c)); \
                        t0 = dot4(t0, w0[c], xv); t1 = dot4(t1, w1[c], xv); }                                 \
                    S[r] = dot2w(S[r], _mm512_packs_epi32(t0, t1), sp); }                                    \
            }                                                                                                \
        }                                                                                                    \
        __m512i mp[4]; for (int p = 0; p < 4; ++p) mp[p] = min_pair(mins, p);                               \
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)grp));                          \
        const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(grp + 32)));                  \
        _Pragma("GCC unroll 9") for (int r = 0; r < R; ++r) { const uint8_t *xr = xg + r * xstride;                                  \
            const __m512i M = min_sum(mp, xr + (QKK + 4) * G + 16 * g);                                       \
            const __m512 D = _mm512_set1_ps(((const float *)(xr + QKK * G))[g]);                             \
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[r]), _mm512_mul_ps(d, D), acc[r]);                 \
            acc[r] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(M), _mm512_mul_ps(dm, D), acc[r]); }                \
    }                                                                                                        \
    _Pragma("GCC unroll 9") for (int r = 0; r < R; ++r) _mm512_storeu_ps(y + r * ldy, acc[r]);                                       \
}
TILE(tile_a, 0)
TILE(tile_b, 1)
int main(int argc, char **argv) {
    int G = 6, T = 48; /* 48 tiles of K=1536: 663 KB, L2 */
    size_t tb = (size_t)G * PACK_GROUP_Q4;
    uint8_t *w = aligned_alloc(64, tb * T); for (size_t i = 0; i < tb * T; ++i) w[i] = rand();
    for (int t = 0; t < T; ++t) for (int g = 0; g < G; ++g) memset(w + t*tb + g*PACK_GROUP_Q4, 0x30, 64); /* sane f16 */
    int64_t xs = 4096; uint8_t *x = aligned_alloc(64, xs * 16); for (int i = 0; i < xs * 16; ++i) x[i] = rand() % 200 - 100;
    for (int r = 0; r < 16; ++r) for (int g = 0; g < G; ++g) ((float *)(x + r * xs + QKK * G))[g] = 0.01f;
    float *y = aligned_alloc(64, 16 * 16 * T * 4);
    int Rs[] = {1, 2, 5, 9};
    for (int ri = 0; ri < 4; ++ri) {
        double best[2] = {1e9, 1e9};
        for (int rep = 0; rep < 15; ++rep) for (int v = 0; v < 2; ++v) {
            double t0 = now();
            for (int it = 0; it < 20; ++it) for (int t = 0; t < T; ++t) {
                int R = Rs[ri];
#define CALL(F) switch (R) { case 1: F(1, w + t*tb, G, x, xs, y + 16*t, 16*T); break; case 2: F(2, w + t*tb, G, x, xs, y + 16*t, 16*T); break; case 5: F(5, w + t*tb, G, x, xs, y + 16*t, 16*T); break; default: F(9, w + t*tb, G, x, xs, y + 16*t, 16*T); }
                if (v == 0) { CALL(tile_a) } else { CALL(tile_b) }
            }
            double dt = (now() - t0) / (20.0 * T * G);
            if (dt < best[v]) best[v] = dt;
        }
        printf("R %d: current %.2f ns/group  pair %.2f ns/group  ratio %.3f  (current %.0f GMAC/s/core)\n", Rs[ri], best[0]*1e9, best[1]*1e9, best[1]/best[0], 16.0*256*Rs[ri]/best[0]/1e9);
    }
    return 0;
}
