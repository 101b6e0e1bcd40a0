/* A float32 linear layer for the CPU (AVX2 + FMA) whose rows do not depend on each other.

   y[m][n] = bias[n] + x[m] . w[n], with w in PyTorch's own layout (out_features x in_features,
   row-major): each output is a dot product along a contiguous row of w. Every output is computed by
   the same sequence of operations whatever the number of rows M and wherever the row sits in the
   batch: eight running sums in the lanes of one vector over k = 0, 8, 16, ..., a fixed horizontal
   sum, the k % 8 tail in order, then the bias. So the logits of a token verified among k others are
   bit for bit those of the same token decoded alone.

   Speed comes from blocking: ROWS rows of x times COLS rows of w share each load (4 x 3 accumulators,
   3 weight vectors and 1 input vector fill the 16 vector registers), so reading the weights, the cost
   of a 1-token forward, is shared by up to 4 tokens at a time and a few more rows cost little. Threads
   split the output columns. Built and loaded by rowgemm.py; compile with -ffp-contract=off. */
#include <immintrin.h>
#include <stdint.h>

#define ROWS 4
#define COLS 3
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

static inline __attribute__((always_inline)) void block(const int R, const int C, const float *x, const float *w,
                                                        int64_t K, const float *bias, float *y, int64_t ldy) {
    __m256 acc[ROWS][COLS];
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 3
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
        __m256 wv[COLS];
#pragma GCC unroll 3
        for (int c = 0; c < C; ++c) wv[c] = _mm256_loadu_ps(w + c * K + k);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            __m256 xv = _mm256_loadu_ps(x + r * K + k);
#pragma GCC unroll 3
            for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(xv, wv[c], acc[r][c]);
        }
    }
    for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) {
            float s = hsum(acc[r][c]);
            for (int64_t t = k; t < K; ++t) s += x[r * K + t] * w[c * K + t];
            y[r * ldy + c] = bias ? s + bias[c] : s;
        }
}

/* Rows m0..m1 of x against output columns n..n+C. */
static inline __attribute__((always_inline)) void columns(const int C, const float *x, int64_t m0, int64_t m1,
                                                          const float *w, int64_t K, const float *bias, float *y,
                                                          int64_t N) {
    int64_t m = m0;
    for (; m + ROWS <= m1; m += ROWS) block(ROWS, C, x + m * K, w, K, bias, y + m * N, N);
    switch (m1 - m) {
        case 3: block(3, C, x + m * K, w, K, bias, y + m * N, N); break;
        case 2: block(2, C, x + m * K, w, K, bias, y + m * N, N); break;
        case 1: block(1, C, x + m * K, w, K, bias, y + m * N, N); break;
        default: break;
    }
}

void spx_linear(const float *x, int64_t M, int64_t K, const float *w, int64_t N, const float *bias, float *y,
                int threads) {
    if (M <= 0 || N <= 0) return;
    int64_t groups = (N + COLS - 1) / COLS;
    int64_t chunks = (M + ROW_CHUNK - 1) / ROW_CHUNK;
    int64_t chunk = ((M + chunks - 1) / chunks + ROWS - 1) / ROWS * ROWS;
    for (int64_t m0 = 0; m0 < M; m0 += chunk) {
        int64_t m1 = m0 + chunk < M ? m0 + chunk : M;
#pragma omp parallel for schedule(static) num_threads(threads)
        for (int64_t g = 0; g < groups; ++g) {
            int64_t n = g * COLS;
            const float *b = bias ? bias + n : 0;
            switch (N - n < COLS ? N - n : COLS) {
                case 3: columns(3, x, m0, m1, w + n * K, K, b, y + n, N); break;
                case 2: columns(2, x, m0, m1, w + n * K, K, b, y + n, N); break;
                default: columns(1, x, m0, m1, w + n * K, K, b, y + n, N); break;
            }
        }
    }
}
