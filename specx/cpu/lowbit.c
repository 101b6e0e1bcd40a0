/* Round-to-nearest Q2_K and Q4_0 quantization: float32 rows -> ggml's block_q2_K bytes (84 bytes per 256
   values) and block_q4_0 bytes (18 per 32; the rule at spx_quantize_q4_0).

   The rule, value for value, is lowbit_ref.quantize_q2_k's (test_lowbit holds them equal bit for bit):
   every step is one float32 operation in the reference's order (build with -ffp-contract=off), rounding
   is half to even (rintf), and the fp16 scales round to nearest even as numpy's astype(float16) does.
   Per 16-value sub-block: range [min(lo, 0), hi] in 4 levels (scale = (hi - lo) / 3, min = 0 - lo);
   the 16 scales and mins as 4-bit integers under fp16 d and dmin (the largest of each / 15, + 0 so a
   zero is +0); each value rounded to the nearest level of its sub-block's quantized scale and min.
   A ratio that is NaN (0/0, inf/inf) rounds to level 0. Layout as dequantize_row_q2_K reads it:
   scales[16] (low nibble scale, high nibble min), qs[64] (value 128h + 32j + 16s + l in byte
   32h + 16s + l, bits 2j), d, dmin. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#define QK 256
#define ROUNDER 12582912.0f   /* 1.5 * 2^23: adding and subtracting it rounds a float below 2^22 to an integer, half to even */

static uint16_t half_bits(float f) {   /* float32 -> IEEE half, round to nearest even; inputs are not NaN */
    uint32_t x;
    memcpy(&x, &f, 4);
    const uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    const uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x477ff000u) return sign | 0x7c00;            /* at or past halfway above 65504: infinity */
    if (ax < 0x38800000u) {                                 /* below 2^-14: a subnormal half (exact scaling) */
        float a;
        memcpy(&a, &ax, 4);
        return sign | (uint16_t)rintf(a * 16777216.0f);      /* 1024 is the smallest normal, as it should be */
    }
    const uint32_t base = ax - 0x38000000u;                 /* exponent rebiased from 127 to 15 */
    uint32_t h = base >> 13;
    const uint32_t rest = base & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h += 1;
    return sign | (uint16_t)h;
}

static float half_value(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    uint32_t bits;
    if (e == 0x1f) bits = sign | 0x7f800000u | (m << 13);
    else if (e) bits = sign | ((e + 112) << 23) | (m << 13);
    else {
        const float v = (float)m * (1.0f / 16777216.0f);
        memcpy(&bits, &v, 4);
        bits |= sign;
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static inline uint8_t level(float v, int top) {   /* rint(v) clipped to [0, top]; NaN -> 0 */
    if (!(v > 0.0f)) return 0;                     /* NaN, zero, negative: rint(v) <= 0 */
    if (v >= (float)top) return (uint8_t)top;
    return (uint8_t)((v + ROUNDER) - ROUNDER);     /* 0 < v < 16: rint to nearest even, branch-free */
}

static void quantize_block(const float *x, uint8_t *out) {
    float scale[16], mins[16], smax = 0.0f, mmax = 0.0f;
    for (int s = 0; s < 16; ++s) {
        const float *v = x + 16 * s;
        float lo = v[0], hi = v[0];
        for (int l = 1; l < 16; ++l) {
            lo = v[l] < lo ? v[l] : lo;
            hi = v[l] > hi ? v[l] : hi;
        }
        lo = lo < 0.0f ? lo : 0.0f;
        scale[s] = (hi - lo) / 3.0f;
        mins[s] = 0.0f - lo;
        if (s == 0 || scale[s] > smax) smax = scale[s];
        if (s == 0 || mins[s] > mmax) mmax = mins[s];
    }
    const uint16_t dh = half_bits(smax / 15.0f + 0.0f), mh = half_bits(mmax / 15.0f + 0.0f);
    const float d = half_value(dh), dmin = half_value(mh);
    uint8_t q[QK];
    for (int s = 0; s < 16; ++s) {
        const uint8_t sc = d > 0.0f ? level(scale[s] / d, 15) : 0;
        const uint8_t mq = dmin > 0.0f ? level(mins[s] / dmin, 15) : 0;
        out[s] = (uint8_t)(sc | (mq << 4));
        const float dl = d * (float)sc, ml = dmin * (float)mq;
        for (int l = 0; l < 16; ++l)
            q[16 * s + l] = dl > 0.0f ? level((x[16 * s + l] + ml) / dl, 3) : 0;
    }
    uint8_t *qs = out + 16;
    memset(qs, 0, 64);
    for (int h = 0; h < 2; ++h)
        for (int j = 0; j < 4; ++j)
            for (int i = 0; i < 32; ++i)   /* i = 16s + l */
                qs[32 * h + i] |= (uint8_t)(q[128 * h + 32 * j + i] << (2 * j));
    memcpy(out + 80, &dh, 2);
    memcpy(out + 82, &mh, 2);
}

/* n blocks of 256 values (x: n * 256 floats) -> n * 84 bytes; the threads split the blocks. */
void spx_quantize_q2_k(const float *x, int64_t n, uint8_t *out, int32_t threads) {
    #pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t b = 0; b < n; ++b) quantize_block(x + b * QK, out + b * 84);
}

/* Q4_0, ggml's quantize_row_q4_0_ref value for value (lowbit_ref.quantize_q4_0 holds it bit for bit): per block
   of 32, the value of largest magnitude (the first of equals) gives d = max / -8 (fp16, to nearest even) and
   id = 1 / d in float32, 0 where the fp16 d is 0 (ggml's 0 where d is 0; a d below fp16's range decodes to zeros
   either way, and id stays finite, so every x * id lies within [-8, 8]); value j is min(15, trunc(x_j * id + 8.5)), the low nibble of byte j
   for j < 16, the high nibble of byte j - 16 else, after the fp16 d. */
static void quantize_block_q4_0(const float *x, uint8_t *out) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j) {
        const float a = fabsf(x[j]);
        if (amax < a) {
            amax = a;
            max = x[j];
        }
    }
    const float d = max / -8.0f;
    const uint16_t dh = half_bits(d);
    const float id = (dh & 0x7fff) ? 1.0f / d : 0.0f;
    memcpy(out, &dh, 2);
    for (int j = 0; j < 16; ++j) {
        const int lo = (int)(int8_t)(x[j] * id + 8.5f), hi = (int)(int8_t)(x[16 + j] * id + 8.5f);
        out[2 + j] = (uint8_t)((lo < 15 ? lo : 15) | ((hi < 15 ? hi : 15) << 4));
    }
}

/* n blocks of 32 values (x: n * 32 floats) -> n * 18 bytes; the threads split the blocks. */
void spx_quantize_q4_0(const float *x, int64_t n, uint8_t *out, int32_t threads) {
    #pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t b = 0; b < n; ++b) quantize_block_q4_0(x + b * 32, out + b * 18);
}
