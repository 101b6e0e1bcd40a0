/* attention.c's lane arithmetic: LANES floats as one vector value, a fused multiply-add every build rounds alike,
   a fixed-tree lane sum, and exp, SiLU and GELU-tanh from basic operations, scalar and on LANES values (a lane
   gives the bits the scalar function gives). Included by attention.c (which defines LANES and the C headers). */

/* LANES floats as one value (GCC/Clang vector extension): lane-wise IEEE arithmetic that the compiler maps to
   one AVX-512 register, two AVX2 registers, or scalar code, with the same results. */
typedef float lanes __attribute__((vector_size(LANES * sizeof(float))));
typedef float lanes_u __attribute__((vector_size(LANES * sizeof(float)), aligned(sizeof(float))));

static inline lanes load(const float *p) { return *(const lanes_u *)p; }

static inline lanes splat(float x) { return (lanes){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }   /* LANES 16 */

/* a·b + c per lane, rounded once: one instruction where the build has FMA, else C's fmaf (which also rounds
   once), so every build gives the same bits. Attention's score and value sums take it: a multiply and an add
   apiece cost the several-row passes over a long context twice the arithmetic
   (benchmarks/results/2026-11-27-attention-tiles). */
static inline lanes fma_lanes(lanes a, lanes b, lanes c) {
#if defined(__AVX512F__)
    return (lanes)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif defined(__FMA__)
    union { lanes v; __m256 h[2]; } x = {a}, y = {b}, z = {c}, r;
    r.h[0] = _mm256_fmadd_ps(x.h[0], y.h[0], z.h[0]);
    r.h[1] = _mm256_fmadd_ps(x.h[1], y.h[1], z.h[1]);
    return r.v;
#else
    lanes r;
    for (int l = 0; l < LANES; ++l) r[l] = fmaf(a[l], b[l], c[l]);
    return r;
#endif
}

static inline float lane_sum(lanes a) {
    float s8[8], s4[4];
    for (int l = 0; l < 8; ++l) s8[l] = a[l] + a[l + 8];
    for (int l = 0; l < 4; ++l) s4[l] = s8[l] + s8[l + 4];
    return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

static inline float dot(const float *a, const float *b, int64_t n) {
    lanes acc = {0};
    int64_t k = 0;
    for (; k + LANES <= n; k += LANES) acc += load(a + k) * load(b + k);
    for (int l = 0; k + l < n; ++l) acc[l] += a[k + l] * b[k + l];
    return lane_sum(acc);
}

/* exp(x) as 2^n · p(r), x = n·ln2 + r (Cephes' expf polynomial, ~1 ulp), x clamped to [-87, 88]: only
   basic operations, so vector lanes and scalar code agree bit for bit. */
static inline float exp_approx(float x) {
    x = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;   /* round to nearest */
    float r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

static inline float silu(float x) { return x / (1.0f + exp_approx(-x)); }

/* transformers' gelu_pytorch_tanh: 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))),
   with tanh(y) = 1 − 2/(e^{2y} + 1) */
static inline float gelu_tanh(float x) {
    float y = 0.7978845608028654f * (x + 0.044715f * (x * x * x));
    return 0.5f * x * (1.0f + (1.0f - 2.0f / (exp_approx(2.0f * y) + 1.0f)));
}

/* exp_approx, silu and gelu_tanh on LANES values at once: the same operations in the same order, lane by lane
   (a lane gives the bits the scalar function gives) */
typedef int32_t ilanes __attribute__((vector_size(LANES * sizeof(int32_t))));

static inline lanes pick(ilanes m, lanes a, lanes b) {   /* a where m, else b */
    return (lanes)(((ilanes)a & m) | ((ilanes)b & ~m));
}

static inline lanes exp_lanes(lanes x) {
    const lanes lo = (lanes){0} - 87.0f, hi = (lanes){0} + 88.0f;
    x = pick(x < lo, lo, pick(x > hi, hi, x));
    lanes n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    lanes r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    lanes p = (lanes){0} + 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    const ilanes bits = (__builtin_convertvector(n, ilanes) + 127) << 23;
    return p * (lanes)bits;
}

static inline lanes silu_lanes(lanes x) { return x / (1.0f + exp_lanes(-x)); }

static inline lanes gelu_tanh_lanes(lanes x) {
    lanes y = 0.7978845608028654f * (x + 0.044715f * (x * x * x));
    return 0.5f * x * (1.0f + (1.0f - 2.0f / (exp_lanes(2.0f * y) + 1.0f)));
}
