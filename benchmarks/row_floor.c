/* The core's rate of int8 products: what a verify row costs at best on this CPU (benchmarks/row_floor.py
 * compiles and runs it). Every further row of a forward multiplies every weight once more, and no kernel does
 * more products a cycle than the core's product instruction allows.
 *
 * One thread. Prints four lines "name value":
 *   kind   the instruction measured;
 *   vecs   how many of them one row needs per 256 weights;
 *   ghz    the core's clock, from a chain of dependent scalar adds (1 cycle each on every x86 core since P6);
 *   dot    ns per int8 product instruction of the kind the kernels use here (AVX-512 VNNI vpdpbusd on 512 bits,
 *          AVX-VNNI vpdpbusd on 256, else AVX2 vpmaddubsw + vpmaddwd + vpaddd on 256), 12 independent sums.
 */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

#if defined(__AVX512VNNI__) && defined(__AVX512F__)
typedef __m512i vi;
#define BYTES 64
#define ZERO() _mm512_setzero_si512()
#define SET8(v) _mm512_set1_epi8(v)
#define DOT(s, w, x) _mm512_dpbusd_epi32((s), (w), (x))
#define ADD(a, b) _mm512_add_epi32((a), (b))
#define KIND "vpdpbusd zmm (AVX-512 VNNI)"
#elif defined(__AVXVNNI__)
typedef __m256i vi;
#define BYTES 32
#define DOT(s, w, x) _mm256_dpbusd_avx_epi32((s), (w), (x))
#define KIND "vpdpbusd ymm (AVX-VNNI)"
#else
typedef __m256i vi;
#define BYTES 32
#define DOT(s, w, x) _mm256_add_epi32((s), _mm256_madd_epi16(_mm256_maddubs_epi16((w), (x)), _mm256_set1_epi16(1)))
#define KIND "vpmaddubsw+vpmaddwd+vpaddd ymm (AVX2)"
#endif
#if BYTES == 32
#define ZERO() _mm256_setzero_si256()
#define SET8(v) _mm256_set1_epi8(v)
#define ADD(a, b) _mm256_add_epi32((a), (b))
#endif

#define VECS (256 / BYTES)   /* product instructions a row needs per group of 256 weights */
#define KEEP(v) __asm__ volatile("" : "+v"(v))   /* the compiler must keep v as it is: no folding */

static double clock_ghz(void) {
    long x = 1, n = 400000000L;
    double t = now();
    for (long i = 0; i < n; ++i) __asm__ volatile("add %0, %0\n\tadd %0, %0\n\tadd %0, %0\n\tadd %0, %0" : "+r"(x));
    return 4.0 * n / (now() - t) / 1e9 + (double)(x & 0);
}

static double dot_ns(void) {
    long n = 40000000L;
    vi w = SET8(3);
    vi s0 = SET8(5), s1 = s0, s2 = s0, s3 = s0, s4 = s0, s5 = s0, s6 = s0, s7 = s0, s8 = s0, s9 = s0, s10 = s0,
       s11 = s0;   /* twelve named sums: the compiler keeps them in registers (an array may stay in memory) */
    /* each sum is its own product's activations too: no two products share inputs a compiler could merge */
#define D(s) s = DOT(s, w, s); KEEP(s);
    double t = now();
    for (long i = 0; i < n; ++i) {
        D(s0) D(s1) D(s2) D(s3) D(s4) D(s5) D(s6) D(s7) D(s8) D(s9) D(s10) D(s11)
        KEEP(w);
    }
#undef D
    double d = now() - t;
    vi all = ADD(ADD(ADD(s0, s1), ADD(s2, s3)), ADD(ADD(s4, s5), ADD(s6, s7)));
    all = ADD(all, ADD(ADD(s8, s9), ADD(s10, s11)));
    KEEP(all);
    return d / (n * 12.0) * 1e9;
}

int main(void) {
    printf("kind %s\n", KIND);
    printf("vecs %d\n", VECS);
    printf("ghz %.4f\n", clock_ghz());
    printf("dot %.5f\n", dot_ns());
    return 0;
}
