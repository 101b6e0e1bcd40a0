/* A float32 linear layer for the CPU (AVX2 + FMA) whose rows do not depend on each other.

   y[m][n] = bias[n] + x[m] . w[n], with w in PyTorch's own layout (out_features x in_features,
   row-major): each output is a dot product along a contiguous row of w. Every output is computed by
   the same sequence of operations whatever the number of rows M and wherever the row sits in the
   batch: eight running sums in the lanes of one vector over k = 0, 8, 16, ..., a fixed horizontal
   sum, the k % 8 tail in order, then the bias. So the logits of a token verified among k others are
   bit for bit those of the same token decoded alone.

   Speed comes from blocking: ROWS rows of x times COLS rows of w share each load (4 x 3 accumulators,
   3 weight vectors and 1 input vector fill AVX2's 16 vector registers; built with -mavx512vl, the same
   256-bit arithmetic has 32 registers and runs blocks of 6 x 4, so both builds give the same bits), so
   reading the weights, the cost of a 1-token forward, is shared by up to ROWS tokens at a time and a few
   more rows cost little. Threads split the output columns; while a thread computes one group of
   columns it prefetches the next group's weights into L2, so reading memory overlaps the arithmetic
   (on the AVX-512 dev machine, one 8960x1536 layer: 1 row 1.3x, 5 rows 1.8x, 17 rows 1.6x faster than
   without both). Prefetching is the caller's choice (`prefetch`): on a Zen 1 machine it made the whole 1.5B
   target 1.09-1.16x slower at 1 and 5 rows, so rowgemm.py times both once per machine. Results are the same.
   Built and loaded by rowgemm.py; compile with -ffp-contract=off.

   spx_linear_f16 is the same kernel for weights stored as IEEE half floats (half the bytes to read per
   token): each weight vector is widened to float32 (F16C, exact) as it is loaded, and the arithmetic
   is the float32 kernel's, so its rows are exact in the same way. */
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>

#ifdef __AVX512VL__
#define ROWS 6     /* float32 with 32 registers: blocks of 6 rows x 4 outputs (24 accumulators, 4 weights, 1 input) */
#define COLS 4
#else
#define ROWS 4     /* float32: blocks of 4 rows x 3 outputs (12 accumulators, 3 weight vectors, 1 input) */
#define COLS 3
#endif
#define ROWS_H 6   /* half floats: up to 6 rows in one block (1-2 rows x 4 outputs, 3-4 x 3, 5-6 x 2), so
                      each widened weight vector serves every row (widening costs about as much as reading
                      on AVX2); more rows widen 3 outputs' weights once into a buffer and run the float32
                      blocks on it */
#define COLS_H 2   /* outputs per block for 5-6 rows of half floats */
#define ROW_CHUNK 64   /* at most this many rows per pass over the weights: the chunk's inputs stay in the
                          cache; a long prompt is cut into equal chunks (200 rows: 4 of 52 or fewer, not
                          3 of 64 and one of 8, which would read all the weights again for 8 rows) */

static inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    __m128 h = _mm_movehdup_ps(s);
    s = _mm_add_ps(s, h);
    h = _mm_movehl_ps(h, s);
    s = _mm_add_ss(s, h);
    return _mm_cvtss_f32(s);
}

/* Eight weights from index i of w: float32, or half floats widened to float32 when H. */
static inline __attribute__((always_inline)) __m256 load_w(const int H, const void *w, int64_t i) {
    return H ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)w + i)))
             : _mm256_loadu_ps((const float *)w + i);
}

static inline __attribute__((always_inline)) float w_at(const int H, const void *w, int64_t i) {
    return H ? _cvtsh_ss(((const uint16_t *)w)[i]) : ((const float *)w)[i];
}

static inline __attribute__((always_inline)) void block(const int H, const int R, const int C, const float *x,
                                                        const void *w, int64_t K, const float *bias, float *y,
                                                        int64_t ldy, const char *pf, const char *pf_end) {
    __m256 acc[ROWS_H][4];
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
        __m256 wv[4];
        if (pf < pf_end) {   /* two cache lines of the weights the thread reads next, per step */
            _mm_prefetch(pf, _MM_HINT_T1);
            _mm_prefetch(pf + 64, _MM_HINT_T1);
            pf += 128;
        }
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) wv[c] = load_w(H, w, c * K + k);
#pragma GCC unroll 6
        for (int r = 0; r < R; ++r) {
            __m256 xv = _mm256_loadu_ps(x + r * K + k);
#pragma GCC unroll 4
            for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(xv, wv[c], acc[r][c]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) {
            float s = hsum(acc[r][c]);
            for (int64_t t = k; t < K; ++t) s += x[r * K + t] * w_at(H, w, c * K + t);
            y[r * ldy + c] = bias ? s + bias[c] : s;
        }
}

static inline const char *upto(const char *p, int64_t n, const char *end) { return p + n < end ? p + n : end; }

/* Rows m0..m1 of x against output columns n..n+C: float32 weights in blocks of ROWS rows; half floats (at
   most ROWS_H rows here) in one block. The blocks share out the prefetching of [next, next_end). */
static inline __attribute__((always_inline)) void columns(const int H, const int C, const float *x, int64_t m0,
                                                          int64_t m1, const void *w, int64_t K, const float *bias,
                                                          float *y, int64_t N, const char *next,
                                                          const char *next_end) {
    int64_t m = m0;
    const int64_t blocks = H ? 1 : (m1 - m0 + ROWS - 1) / ROWS;
    const int64_t share = ((next_end - next) / blocks + 127) / 128 * 128;
    const char *pf = next;
    if (!H)
        for (; m + ROWS <= m1; m += ROWS, pf += share)
            block(0, ROWS, C, x + m * K, w, K, bias, y + m * N, N, pf, upto(pf, share, next_end));
    const char *pe = upto(pf, share, next_end);
    switch (m1 - m) {
        case 6: block(H, 6, C, x + m * K, w, K, bias, y + m * N, N, pf, pe); break;
        case 5: block(H, 5, C, x + m * K, w, K, bias, y + m * N, N, pf, pe); break;
        case 4: block(H, 4, C, x + m * K, w, K, bias, y + m * N, N, pf, pe); break;
        case 3: block(H, 3, C, x + m * K, w, K, bias, y + m * N, N, pf, pe); break;
        case 2: block(H, 2, C, x + m * K, w, K, bias, y + m * N, N, pf, pe); break;
        case 1: block(H, 1, C, x + m * K, w, K, bias, y + m * N, N, pf, pe); break;
        default: break;
    }
}

/* Half-float weights read by more than ROWS_H rows are widened once, into the thread's buffer, and the
   float32 kernel runs on that copy: the same values and the same operations, so the same results. */
static inline __attribute__((always_inline)) void group(const int H, const int C, const float *x, int64_t m0,
                                                        int64_t m1, const void *w, int64_t K, const float *bias,
                                                        float *y, int64_t N, float *wide, const char *next,
                                                        const char *next_end) {
    if (H && m1 - m0 > ROWS_H) {
        int64_t i = 0;
        for (; i + 8 <= C * K; i += 8) _mm256_storeu_ps(wide + i, load_w(1, w, i));
        for (; i < C * K; ++i) wide[i] = w_at(1, w, i);
        columns(0, C, x, m0, m1, wide, K, bias, y, N, next, next_end);
    } else {
        columns(H, C, x, m0, m1, w, K, bias, y, N, next, next_end);
    }
}

static inline __attribute__((always_inline)) int run(const int H, const float *x, int64_t M, int64_t K,
                                                     const void *w, int64_t N, const float *bias, float *y,
                                                     int threads, int prefetch) {
    if (M <= 0 || N <= 0) return 0;
    int64_t chunks = (M + ROW_CHUNK - 1) / ROW_CHUNK;
    int64_t chunk = ((M + chunks - 1) / chunks + ROWS - 1) / ROWS * ROWS;
    int failed = 0;
    const int64_t size = H ? 2 : 4;
    const char *end = (const char *)w + N * K * size;
    for (int64_t m0 = 0; m0 < M; m0 += chunk) {
        int64_t m1 = m0 + chunk < M ? m0 + chunk : M;
        const int cols = !H || m1 - m0 > ROWS_H ? COLS : m1 - m0 <= 2 ? 4 : m1 - m0 <= 4 ? 3 : COLS_H;   /* <= 16 registers */
        int64_t groups = (N + cols - 1) / cols;
#pragma omp parallel num_threads(threads) reduction(| : failed)
        {
            float *wide = H && m1 - m0 > ROWS_H ? malloc(sizeof(float) * cols * K) : 0;
            failed = H && m1 - m0 > ROWS_H && !wide;
#pragma omp for schedule(static)
            for (int64_t g = 0; g < groups; ++g) {
                if (failed) continue;
                int64_t n = g * cols;
                const float *b = bias ? bias + n : 0;
                const char *wn = (const char *)w + n * K * size;
                /* while it runs, prefetch the thread's next group (a static schedule's groups are consecutive);
                   without prefetching the range is empty */
                const char *next = prefetch ? upto(wn, cols * K * size, end) : end;
                const char *next_end = prefetch ? upto(next, cols * K * size, end) : end;
                switch (N - n < cols ? N - n : cols) {
                    case 4: group(H, 4, x, m0, m1, wn, K, b, y + n, N, wide, next, next_end); break;
                    case 3: group(H, 3, x, m0, m1, wn, K, b, y + n, N, wide, next, next_end); break;
                    case 2: group(H, 2, x, m0, m1, wn, K, b, y + n, N, wide, next, next_end); break;
                    default: group(H, 1, x, m0, m1, wn, K, b, y + n, N, wide, next, next_end); break;
                }
            }
            free(wide);
        }
    }
    return failed;
}

/* Both return 0, or 1 when a buffer could not be allocated (y is then incomplete). prefetch: 1 prefetches
   each thread's next weights into L2, 0 leaves it to the hardware; the results are the same. */
int spx_linear(const float *x, int64_t M, int64_t K, const float *w, int64_t N, const float *bias, float *y,
               int threads, int prefetch) {
    return run(0, x, M, K, w, N, bias, y, threads, prefetch);
}

int spx_linear_f16(const float *x, int64_t M, int64_t K, const uint16_t *w, int64_t N, const float *bias, float *y,
                   int threads, int prefetch) {
    return run(1, x, M, K, w, N, bias, y, threads, prefetch);
}
