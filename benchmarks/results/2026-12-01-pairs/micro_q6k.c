/* The packed Q6_K (KIND_G6) kernel's inner loop before this change (each lane one row, a half block's sums times its
   scale by 32-bit multiplies) against the pair layout (two rows a lane, 8-value lanes packed to 16 bits, one dpwssd
   per half), with the 6-bit values decoded by vpermb + vpmultishiftqb (default) or from nibbles and 2-bit fields as
   the kernels do (-DNIB: the same speed, so the kernels kept the nibbles, which need no VBMI); G = 6 (K = 1536)
   here, -DG35 variant by editing G and T; random bytes in L2, one thread. Build as micro_q4k.c, plus -mavx512vbmi. */
#ifndef NIB
#define DECODE q6_decode(v, w, idx, ctl);
#else
#define DECODE { q6_values(v, w, w + 4); }
#endif
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define QK 32
#define QKK 256
#define RMAX 9
#define Q6G_SPAN 16
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static inline uint32_t rd32(const uint8_t *p){uint32_t v;memcpy(&v,p,4);return v;}
static inline uint64_t rd64(const uint8_t *p){uint64_t v;memcpy(&v,p,8);return v;}
#define dot4 _mm512_dpbusd_epi32
#define XG6_NS(G) ((QKK + 20) * (G))
static inline __attribute__((always_inline)) void q6_values(const uint8_t *v, __m512i *w0, __m512i *w1) {
    const __m512i nib = _mm512_set1_epi8(15), two = _mm512_set1_epi8(3);
    const __m512i h0 = _mm512_loadu_si512(v + 256), h1 = _mm512_loadu_si512(v + 320);
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
        const __m512i q = _mm512_loadu_si512(v + 64 * c);
        w0[c] = _mm512_or_si512(_mm512_and_si512(q, nib), _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h0, 2 * c), two), 4));
        w1[c] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(q, 4), nib), _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h1, 2 * c), two), 4));
    }
}
static inline __attribute__((always_inline)) void tile_a(const int R, const uint8_t *tile, int64_t G, const uint8_t *xg, int64_t xstride, float *y, int64_t ldy) {
    __m512 acc[RMAX]; __m512i S[RMAX][Q6G_SPAN];
#pragma GCC unroll 9
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t g0 = 0; g0 < G; g0 += Q6G_SPAN) {
        const int n = G - g0 < Q6G_SPAN ? (int)(G - g0) : Q6G_SPAN;
#pragma GCC unroll 1
        for (int j = 0; j < 8; ++j)
            for (int i = 0; i < n; ++i) {
                const int64_t g = g0 + i;
                const uint8_t *v = tile + G * 288 + (j * G + g) * 384, *sc = tile + g * 288 + 32 + 32 * j;
                const __m512i c0 = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)sc));
                const __m512i c1 = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(sc + 16)));
                __m512i w0[4], w1[4];
                q6_values(v, w0, w1);
#pragma GCC unroll 9
                for (int r = 0; r < R; ++r) {
                    const uint8_t *xr = xg + r * xstride, *xb = xr + QKK * g + QK * j;
                    const int32_t *ns = (const int32_t *)(xr + XG6_NS(G)) + 16 * g + 2 * j;
                    __m512i s0 = _mm512_set1_epi32(ns[0]), s1 = _mm512_set1_epi32(ns[1]);
#pragma GCC unroll 4
                    for (int c = 0; c < 4; ++c) {
                        s0 = dot4(s0, w0[c], _mm512_set1_epi32((int)rd32(xb + 4 * c)));
                        s1 = dot4(s1, w1[c], _mm512_set1_epi32((int)rd32(xb + 16 + 4 * c)));
                    }
                    const __m512i t = _mm512_add_epi32(_mm512_mullo_epi32(s0, c0), _mm512_mullo_epi32(s1, c1));
                    S[r][i] = j ? _mm512_add_epi32(S[r][i], t) : t;
                }
            }
        for (int i = 0; i < n; ++i) {
            const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(tile + (g0 + i) * 288)));
#pragma GCC unroll 9
            for (int r = 0; r < R; ++r) {
                const __m512 D = _mm512_set1_ps(((const float *)(xg + r * xstride + QKK * G))[g0 + i]);
                acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[r][i]), _mm512_mul_ps(d, D), acc[r]);
            }
        }
    }
#pragma GCC unroll 9
    for (int r = 0; r < R; ++r) _mm512_storeu_ps(y + r * ldy, acc[r]);
}
/* new: 8 vectors of 64 six-bit values from 48 bytes each (vpermb places 6 bytes per qword, multishift splits) */
static inline __attribute__((always_inline)) void q6_decode(const uint8_t *v, __m512i *w, __m512i idx, __m512i ctl) {
    const __m512i m63 = _mm512_set1_epi8(63);
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
        const __m512i b = _mm512_maskz_loadu_epi8(0xffffffffffffULL, v + 48 * k);
        w[k] = _mm512_and_si512(_mm512_multishift_epi64_epi8(ctl, _mm512_permutexvar_epi8(idx, b)), m63);
    }
}
static inline __attribute__((always_inline)) __m512i pair16(const uint8_t *sc) {
    const __m512i c = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)sc));
    return _mm512_or_si512(_mm512_and_si512(c, _mm512_set1_epi32(0xffff)), _mm512_slli_epi32(c, 16));
}
static inline __attribute__((always_inline)) void tile_b(const int R, const uint8_t *tile, int64_t G, const uint8_t *xg, int64_t xstride, float *y, int64_t ldy) {
    __m512 acc[RMAX]; __m512i S[RMAX][Q6G_SPAN];
    __m512i idx, ctl;
    { uint8_t ib[64], cb[64]; for (int q = 0; q < 8; ++q) for (int b = 0; b < 8; ++b) { ib[8*q+b] = b < 6 ? 6*q+b : 0; cb[8*q+b] = 6*b; }
      idx = _mm512_loadu_si512(ib); ctl = _mm512_loadu_si512(cb); }
#pragma GCC unroll 9
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
    for (int64_t g0 = 0; g0 < G; g0 += Q6G_SPAN) {
        const int n = G - g0 < Q6G_SPAN ? (int)(G - g0) : Q6G_SPAN;
#pragma GCC unroll 1
        for (int j = 0; j < 8; ++j)
            for (int i = 0; i < n; ++i) {
                const int64_t g = g0 + i;
                const uint8_t *v = tile + G * 288 + (j * G + g) * 384, *sc = tile + g * 288 + 32 + 32 * j;
                const __m512i c0 = pair16(sc), c1 = pair16(sc + 16);
                __m512i w[8];   /* w[4h + 2c + X]: half h, unit c, outputs X */
                DECODE
#pragma GCC unroll 9
                for (int r = 0; r < R; ++r) {
                    const uint8_t *xr = xg + r * xstride, *xb = xr + QKK * g + QK * j;
                    const uint8_t *ns = xr + XG6_NS(G) + 8 * (4 * g + j / 2);   /* fake: per quarter */
                    __m512i t = _mm512_setzero_si512();
#pragma GCC unroll 2
                    for (int h = 0; h < 2; ++h) {
                        const __m512i n0 = _mm512_set1_epi64((long long)rd64(ns + 8 * h));
                        __m512i tA = n0, tB = n0;
#pragma GCC unroll 2
                        for (int c = 0; c < 2; ++c) {
                            const __m512i xv = _mm512_set1_epi64((long long)rd64(xb + 16 * h + 8 * c));
                            tA = dot4(tA, w[4 * h + 2 * c], xv);
                            tB = dot4(tB, w[4 * h + 2 * c + 1], xv);
                        }
                        t = _mm512_dpwssd_epi32(t, _mm512_packs_epi32(tA, tB), h ? c1 : c0);
                    }
                    S[r][i] = j ? _mm512_add_epi32(S[r][i], t) : t;
                }
            }
        for (int i = 0; i < n; ++i) {
            const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(tile + (g0 + i) * 288)));
#pragma GCC unroll 9
            for (int r = 0; r < R; ++r) {
                const __m512 D = _mm512_set1_ps(((const float *)(xg + r * xstride + QKK * G))[g0 + i]);
                acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(S[r][i]), _mm512_mul_ps(d, D), acc[r]);
            }
        }
    }
#pragma GCC unroll 9
    for (int r = 0; r < R; ++r) _mm512_storeu_ps(y + r * ldy, acc[r]);
}
int main(void) {
#undef DECODE

    int G = 6, T = 48; size_t tb = (size_t)G * (288 + 8 * 384);
    uint8_t *w = aligned_alloc(64, tb * T + 64); for (size_t i = 0; i < tb * T; ++i) w[i] = rand();
    for (int t = 0; t < T; ++t) for (int g = 0; g < G; ++g) memset(w + t*tb + g*288, 0x30, 32);
    int64_t xs = 4096; uint8_t *x = aligned_alloc(64, xs * 16); for (int i = 0; i < xs * 16; ++i) x[i] = rand() % 200 - 100;
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
        printf("Q6 R %d: current %.2f ns/group  new %.2f ns/group  ratio %.3f  (current %.0f GMAC/s/core)\n", Rs[ri], best[0]*1e9, best[1]*1e9, best[1]/best[0], 16.0*256*Rs[ri]/best[0]/1e9);
    }
    return 0;
}
