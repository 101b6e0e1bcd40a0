/* attention.c's lane arithmetic: native vectors of floats, a fused multiply-add every build rounds alike, LANES
   partial sums with a fixed-tree sum, and exp, SiLU and GELU-tanh from basic operations, scalar and on a vector (a
   lane gives the bits the scalar function gives). Included by attention.c (which defines LANES and the C
   headers). */

/* One register of floats (VEC of them; GCC/Clang vector extension): lane-wise IEEE arithmetic, the same results
   from any build. Not LANES wide: GCC keeps a vector wider than the target's registers (16 floats on AVX2) in
   memory, each operation going through the stack (the AVX2 build's attention ran 4-5x the time of the same sums on
   registers: benchmarks/results/2026-12-02-zen2). Element-wise results do not depend on the width; a reduction's
   LANES partial sums span PARTS registers (lane l in register l / VEC). */
#if defined(__AVX512F__)
#define VEC 16
#elif defined(__AVX__)
#define VEC 8
#else
#define VEC 4
#endif
#define PARTS (LANES / VEC)
typedef float vec __attribute__((vector_size(VEC * sizeof(float))));
typedef float vec_u __attribute__((vector_size(VEC * sizeof(float)), aligned(sizeof(float))));
typedef struct { vec p[PARTS]; } partials;   /* LANES partial sums */

static inline vec load_vec(const float *p) { return *(const vec_u *)p; }
static inline void store_vec(float *p, vec v) { *(vec_u *)p = v; }
static inline vec splat_vec(float x) { return (vec){0} + x; }
static inline partials zero_partials(void) {
    partials s;
    for (int p = 0; p < PARTS; ++p) s.p[p] = (vec){0};
    return s;
}

/* a·b + c per lane, rounded once: one instruction where the build has FMA, else C's fmaf (which also rounds
   once), so every build gives the same bits. Attention's score and value sums take it: a multiply and an add
   apiece cost the several-row passes over a long context twice the arithmetic
   (benchmarks/results/2026-11-27-attention-tiles). */
static inline vec fma_vec(vec a, vec b, vec c) {
#if defined(__AVX512F__)
    return (vec)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif defined(__FMA__)
    return (vec)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
    vec r;
    for (int l = 0; l < VEC; ++l) r[l] = fmaf(a[l], b[l], c[l]);
    return r;
#endif
}

static inline float lane_sum(partials a) {   /* a fixed tree over the LANES (16) partial sums */
    float s8[8], s4[4];
    for (int l = 0; l < 8; ++l) s8[l] = a.p[l / VEC][l % VEC] + a.p[(l + 8) / VEC][(l + 8) % VEC];
    for (int l = 0; l < 4; ++l) s4[l] = s8[l] + s8[l + 4];
    return (s4[0] + s4[2]) + (s4[1] + s4[3]);
}

static inline float dot(const float *a, const float *b, int64_t n) {   /* partial sum k mod LANES, then the tree */
    partials acc = zero_partials();
    int64_t k = 0;
    for (; k + LANES <= n; k += LANES)
        for (int p = 0; p < PARTS; ++p) acc.p[p] += load_vec(a + k + p * VEC) * load_vec(b + k + p * VEC);
    for (int l = 0; k + l < n; ++l) acc.p[l / VEC][l % VEC] += a[k + l] * b[k + l];
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

/* exp_approx, silu and gelu_tanh on VEC values at once: the same operations in the same order, lane by lane
   (a lane gives the bits the scalar function gives) */
typedef int32_t ivec __attribute__((vector_size(VEC * sizeof(int32_t))));

static inline vec pick(ivec m, vec a, vec b) {   /* a where m, else b */
    return (vec)(((ivec)a & m) | ((ivec)b & ~m));
}

static inline vec exp_vec(vec x) {
    const vec lo = (vec){0} - 87.0f, hi = (vec){0} + 88.0f;
    x = pick(x < lo, lo, pick(x > hi, hi, x));
    vec n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    vec r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    vec p = (vec){0} + 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    const ivec bits = (__builtin_convertvector(n, ivec) + 127) << 23;
    return p * (vec)bits;
}

static inline vec silu_vec(vec x) { return x / (1.0f + exp_vec(-x)); }

static inline vec gelu_tanh_vec(vec x) {
    vec y = 0.7978845608028654f * (x + 0.044715f * (x * x * x));
    return 0.5f * x * (1.0f + (1.0f - 2.0f / (exp_vec(2.0f * y) + 1.0f)));
}
