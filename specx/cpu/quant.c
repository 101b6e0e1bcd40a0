/* Y = X · Wᵀ on the CPU with W kept in its GGUF block format (quant.py is the API and states the rules).

   Rules every build keeps:
   - Batch invariance: the result for (row m, output n) is computed by one thread, by one sequence of
     operations that depends on neither the number of rows in the call, the row's position, nor the
     thread count. Rows share each decoded weight block (that is the speed), never a reduction.
   - "f32" mode: every weight is decoded to exactly gguf's float32 value (w = d·q, d·q + m, (d·sc)·q − dmin·m,
     all exact products followed by at most the one rounding gguf does) and multiplied into float32 X.
     Each build sums in its own lanes, so builds differ by float noise only.
   - "q8" mode: each row of X is quantized alone, per 32 values, to int8 with one float scale (quantize_row);
     the integer dot product of each half block (16 values) is exact, and the float steps after it are one
     fixed sequence per lane of 16 running sums (block mod 8, half), then a fixed tree (q8 arithmetic below).
     Every build does that same arithmetic, so q8 results are bit-identical across the AVX-512, AVX2 and
     portable builds.
   Compiled with -ffp-contract=off (the compiler never fuses what is written as a product and a sum).
   This file: the rules in code (exact decoding, the q8 arithmetic, portable kernels) and the driver; the
   vector kernels are quant_avx512.h and quant_avx2.h, chosen by the build's flags. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__F16C__) && defined(__FMA__)
#define SPX_AVX512 1
#include <immintrin.h>
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define SPX_AVX2 1
#include <immintrin.h>
#endif

enum { T_F32 = 0, T_F16 = 1, T_Q4_0 = 2, T_Q4_1 = 3, T_Q5_0 = 6, T_Q5_1 = 7, T_Q8_0 = 8, T_Q2_K = 10,
       T_Q3_K = 11,
       T_Q4_K = 12, T_Q5_K = 13, T_Q6_K = 14, T_BF16 = 30 };
enum { T_IQ4_NL = 20, T_IQ4_XS = 23 };
enum { MODE_F32 = 0, MODE_Q8 = 1 };

#define QK 32          /* values per block of the 32-value types, and per activation block in q8 mode */
#define QKK 256        /* values per K-type superblock; also one q8 "group" of 8 activation blocks */
#define RMAX 8         /* activation rows that share one decoded weight block (register blocking) */
#define TILE_BYTES 49152   /* a thread computes its outputs in tiles of about this many weight bytes, so a
                              tile stays in L1/L2 while every row group of a long prompt passes over it */
#define XCHUNK_BYTES (1 << 20)   /* at most this many bytes of X per pass over the weights (stays in L2) */
#define QUANTIZE_ALONE 65536     /* q8: up to this many values of X are quantized by one thread (microseconds) */

/* q8 activations, per row: for each group of 256 values (8 blocks of 32), XG bytes:
   u[256]   the int8 values q plus 128 (as unsigned bytes); byte 64k + 32h + 4j + t holds value 32j + 16h + 4k + t
            of the group (block j, half h), so a 64-byte vector k has 4 values of half h of block j in its
            32-bit lane 8h + j (the SIMD kernels decode weights into the same order);
   s[256]   the same values q as signed bytes, in the same order;
   dx[16]   the blocks' float scales, lane 8h + j = dx of block j (twice, for 16-lane arithmetic);
   xs[8]    dx·Σq per block (float);
   xh[16]   dx·Σq per half block (float), lane 8h + j: the min term of Q2_K, whose mins are per 16 values.
   The integer products pair unsigned with signed bytes (VNNI, maddubs): weights that are never negative
   (unsigned_weights) take q as it is; signed weights take q + 128 and subtract 128·Σw, a sum over the
   weights alone (decoded once for all rows). Values past the row's end are zeros with scale 0.
   TAIL: a weight row of a 32-value type whose last group holds fewer than 8 blocks (K = 896, 576, 640) is
   still decoded 8 blocks at a time, reading on into the next row of the same call, and the extra blocks'
   weight scales are set to zero: against zero activations (q = 0, dx = 0) their lanes then add exactly what
   zero blocks add (s = 0, t = +0), so results equal a zero-padded copy's bit for bit without copying. The
   call's last row, whose next bytes may lie outside the tensor, is copied into zero padding instead. */
#define XG 704
#define XG_S 256
#define XG_DX 512
#define XG_XS 576
#define XG_XH 640

static inline int64_t xq_stride(int64_t K) { return (K + QKK - 1) / QKK * XG; }

/* XSPAN: a q8 pass of R rows over one weight row reads XG_READ activation bytes per row and group (the
   values for its weights' sign, the scales, one min term). Where a whole row's worth is more than L1 holds
   (K = 8960: 35 groups, 67 KB at 5 rows), every output would read them again from L2, which with several
   rows costs more than the weights' own reads. Such calls (more than 1.5 xspan_bytes: more than the L1 data
   cache itself) cut the groups into equal spans whose activations fit xspan_bytes (quant.py sets two thirds
   of the machine's L1 data cache; this default is two thirds of the smallest, 32 KiB), and up to XSPAN_OUTS
   outputs pass over each span in turn, keeping their sums in memory between spans. */
#define XG_READ 384
#define XSPAN_BYTES 21845
#define XSPAN_OUTS 16
static int64_t xspan_bytes = XSPAN_BYTES;   /* spx_set_xspan: 0 never cuts (tests and benchmarks compare) */
int64_t spx_set_xspan(int64_t bytes) {   /* returns the previous setting; bytes < 0: changes nothing */
    const int64_t was = xspan_bytes;
    if (bytes >= 0) xspan_bytes = bytes;
    return was;
}
static inline int64_t xspan(int64_t R, int64_t groups) {
    const int64_t total = R * groups * XG_READ;
    if (R == 1 || !xspan_bytes || 2 * total <= 3 * xspan_bytes) return groups;   /* within L1 itself: whole */
    const int64_t spans = (total + xspan_bytes - 1) / xspan_bytes;
    return (groups + spans - 1) / spans;
}

/* ---------------------------------------------------------------- scalar helpers (every build) */

static inline float f32_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static float half_to_float(uint16_t h) {   /* exact, subnormals, infinities and NaNs included */
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return f32_bits(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        float v = (float)man * (1.0f / 16777216.0f);   /* man · 2^-24, exact */
        return sign ? -v : v;
    }
    return f32_bits(sign | ((exp + 112) << 23) | (man << 13));
}

static inline uint16_t rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline float rdh(const uint8_t *p) { return half_to_float(rd16(p)); }

/* Q4_K / Q5_K: the 6-bit scale and min of sub-block j (ggml's get_scale_min_k4). */
static inline void scale_min_k4(int j, const uint8_t *s, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* Q3_K: scale i (0..15) of a block, sc − 32 (−32..31): 16 six-bit values packed in scales[12], the low 4
   bits in the nibbles of bytes 0..7 (i % 8, high nibble for i ≥ 8), the high 2 bits in bytes 8..11 (i % 4,
   bits 2·(i / 4)): what ggml's dequantize_row_q3_K unpacks with kmask1/kmask2 over aux words. */
static inline int q3_scale(const uint8_t *s, int i) {
    return (((s[i & 7] >> (4 * (i >> 3))) & 15) | (((s[8 + (i & 3)] >> (2 * (i >> 2))) & 3) << 4)) - 32;
}

/* Q3_K: q (−4..3) of value v of a block: value 128n + 32j + l has low bits (qs[32n + l] >> 2j) & 3 and high
   bit (hmask[l] >> (4n + j)) & 1, that is bit v / 32; the value is low − 4 when the high bit is 0. */
static inline int q3_value(const uint8_t *b, int v) {
    const int low = (b[32 + 32 * (v / 128) + v % 32] >> (2 * ((v / 32) % 4))) & 3, high = (b[v % 32] >> (v / 32)) & 1;
    return (low | (high << 2)) - 4;
}

/* IQ4_NL / IQ4_XS: a 4-bit index picks one of these 16 signed values (ggml's kvalues_iq4nl, a non-uniform
   grid); the weight is the block's (sub-block's) scale times it. */
static const int8_t IQ4_VALUES[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/* IQ4_XS: the 6-bit scale of sub-block ib (32 values), stored biased by 32: 4 low bits in scales_l (at 4), 2 high
   bits in scales_h (at 2). The sub-block's scale d·(ls − 32) is exact (an 11-bit d times a 6-bit integer). */
static inline int iq4xs_scale(const uint8_t *b, int ib) {
    return (((b[4 + ib / 2] >> (4 * (ib % 2))) & 15) | (((rd16(b + 2) >> (2 * ib)) & 3) << 4)) - 32;
}

static int block_values(int type) {
    switch (type) {
        case T_F32: case T_F16: case T_BF16: return 1;
        case T_Q4_0: case T_Q4_1: case T_Q5_0: case T_Q5_1: case T_Q8_0: return QK;
        case T_Q2_K: case T_Q4_K: case T_Q5_K: case T_Q6_K: return QKK;
        case T_Q3_K: return QKK;
        case T_IQ4_NL: return QK;
        case T_IQ4_XS: return QKK;
        default: return 0;
    }
}

static int block_bytes(int type) {
    switch (type) {
        case T_F32: return 4;
        case T_F16: case T_BF16: return 2;
        case T_Q4_0: return 18;
        case T_Q4_1: return 20;
        case T_Q5_0: return 22;
        case T_Q5_1: return 24;
        case T_Q8_0: return 34;
        case T_Q2_K: return 84;
        case T_Q3_K: return 110;
        case T_Q4_K: return 144;
        case T_Q5_K: return 176;
        case T_Q6_K: return 210;
        case T_IQ4_NL: return 18;
        case T_IQ4_XS: return 136;
        default: return 0;
    }
}

static inline int is_float_type(int type) { return type == T_F32 || type == T_F16 || type == T_BF16; }

/* ---------------------------------------------------------------- exact decoding to gguf's float32 values */

/* One block (32 or 256 values; one value for the float types) as gguf dequantizes it. */
static void decode_block(int type, const uint8_t *b, float *w) {
    switch (type) {
        case T_F32: memcpy(w, b, 4); return;
        case T_F16: w[0] = rdh(b); return;
        case T_BF16: w[0] = f32_bits((uint32_t)rd16(b) << 16); return;
        case T_Q4_0: {
            float d = rdh(b);
            for (int i = 0; i < 16; ++i) {
                w[i] = d * (float)((b[2 + i] & 15) - 8);
                w[i + 16] = d * (float)((b[2 + i] >> 4) - 8);
            }
            return;
        }
        case T_Q4_1: {
            float d = rdh(b), m = rdh(b + 2);
            for (int i = 0; i < 16; ++i) {
                w[i] = d * (float)(b[4 + i] & 15) + m;
                w[i + 16] = d * (float)(b[4 + i] >> 4) + m;
            }
            return;
        }
        case T_Q5_0: case T_Q5_1: {
            int one = type == T_Q5_1;
            float d = rdh(b), m = one ? rdh(b + 2) : 0.0f;
            uint32_t qh = rd32(b + 2 + 2 * one);
            const uint8_t *qs = b + 6 + 2 * one;
            for (int i = 0; i < 16; ++i) {
                int lo = (qs[i] & 15) | (((qh >> i) & 1) << 4), hi = (qs[i] >> 4) | (((qh >> (i + 16)) & 1) << 4);
                if (one) {
                    w[i] = d * (float)lo + m;
                    w[i + 16] = d * (float)hi + m;
                } else {
                    w[i] = d * (float)(lo - 16);
                    w[i + 16] = d * (float)(hi - 16);
                }
            }
            return;
        }
        case T_Q8_0: {
            float d = rdh(b);
            for (int i = 0; i < 32; ++i) w[i] = (float)(int8_t)b[2 + i] * d;
            return;
        }
        case T_IQ4_NL: {   /* value l (< 16): T[qs[l] & 15], value 16 + l: T[qs[l] >> 4] */
            float d = rdh(b);
            for (int i = 0; i < 16; ++i) {
                w[i] = d * (float)IQ4_VALUES[b[2 + i] & 15];
                w[i + 16] = d * (float)IQ4_VALUES[b[2 + i] >> 4];
            }
            return;
        }
        case T_IQ4_XS: {   /* sub-block ib: qs[16ib + l] holds values 32ib + l (low nibble) and 32ib + 16 + l */
            float d = rdh(b);
            const uint8_t *qs = b + 8;
            for (int ib = 0; ib < 8; ++ib) {
                float a = d * (float)iq4xs_scale(b, ib);
                for (int i = 0; i < 16; ++i) {
                    w[32 * ib + i] = a * (float)IQ4_VALUES[qs[16 * ib + i] & 15];
                    w[32 * ib + 16 + i] = a * (float)IQ4_VALUES[qs[16 * ib + i] >> 4];
                }
            }
            return;
        }
        case T_Q4_K: case T_Q5_K: {
            int five = type == T_Q5_K;
            float d = rdh(b), dmin = rdh(b + 2);
            const uint8_t *s = b + 4, *qh = b + 16, *qs = b + 16 + 32 * five;
            for (int j = 0; j < 8; ++j) {
                int sc, m;
                scale_min_k4(j, s, &sc, &m);
                float ws = d * (float)sc, wm = dmin * (float)m;
                for (int p = 0; p < 32; ++p) {
                    int q = (qs[32 * (j / 2) + p] >> (4 * (j & 1))) & 15;
                    if (five) q |= ((qh[p] >> j) & 1) << 4;
                    w[32 * j + p] = ws * (float)q - wm;
                }
            }
            return;
        }
        case T_Q2_K: {   /* value 128n + 32s + l: bits 2s..2s+1 of qs[32n + l]; scales per 16 values */
            float d = rdh(b + 80), dmin = rdh(b + 82);
            for (int v = 0; v < 256; ++v) {
                const int sc = b[v / 16], q = (b[16 + 32 * (v / 128) + v % 32] >> (2 * ((v / 32) % 4))) & 3;
                w[v] = (d * (float)(sc & 15)) * (float)q - dmin * (float)(sc >> 4);
            }
            return;
        }
        case T_Q3_K: {   /* hmask[32], qs[64], scales[12], d: (d·(sc − 32))·q, both products exact */
            float d = rdh(b + 108);
            for (int v = 0; v < 256; ++v) w[v] = (d * (float)q3_scale(b + 96, v / 16)) * (float)q3_value(b, v);
            return;
        }
        case T_Q6_K: {
            const uint8_t *ql = b, *qh = b + 128;
            const int8_t *sc = (const int8_t *)(b + 192);
            float d = rdh(b + 208);
            for (int v = 0; v < 256; ++v) {
                int n = v / 128, r = v % 128, quarter = r / 32, p = r % 32;
                int lo = (ql[64 * n + 32 * (quarter & 1) + p] >> (4 * (quarter >> 1))) & 15;
                int hi = (qh[32 * n + p] >> (2 * quarter)) & 3;
                w[v] = (d * (float)sc[v / 16]) * (float)((lo | (hi << 4)) - 32);
            }
            return;
        }
        default: return;
    }
}

/* Values k..K-1 of a float-type weight row (fewer than 8), as floats. */
static void decode_row_tail(int type, const uint8_t *row, int64_t k, int64_t K, float *out) {
    for (int64_t i = k; i < K; ++i) decode_block(type, row + i * block_bytes(type), out + (i - k));
}

/* ---------------------------------------------------------------- q8: activations and the arithmetic */

/* One row of X quantized into the layout above. amax/127 and 1/d are correctly rounded divisions, x·(1/d)
   is rounded to the nearest integer, ties to even (numpy's rint; the SIMD conversions do the same). A block
   holding a NaN or an infinity gets scale NaN and q = 0, in every build. */
static void quantize_row(const float *x, int64_t K, uint8_t *out) {
    const int64_t groups = (K + QKK - 1) / QKK;
    memset(out, 0, groups * XG);
    for (int64_t g = 0; g < groups; ++g) {
        uint8_t *o = out + g * XG;
        float *dxv = (float *)(o + XG_DX), *xsv = (float *)(o + XG_XS), *xhv = (float *)(o + XG_XH);
        memset(o, 128, 256);
        for (int j = 0; j < 8; ++j) {
            int64_t base = g * QKK + QK * j;
            if (base >= K) break;
            const float *xb = x + base;
            float amax = 0.0f;
            int bad = 0;   /* a NaN or infinity: the block's scale is NaN, its q are 0 (the row's results NaN) */
            for (int p = 0; p < QK; ++p) {
                amax = fmaxf(amax, fabsf(xb[p]));
                bad |= !(fabsf(xb[p]) < INFINITY);
            }
            float d = bad ? NAN : amax / 127.0f, id = !bad && d != 0.0f ? 1.0f / d : 0.0f;
            int sum = 0, half[2] = {0, 0};
            for (int p = 0; p < QK; ++p) {
                float v = xb[p] * id;
                v = v != v ? 0.0f : v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
                int q = (int)nearbyintf(v);
                int h = p / 16, k = (p % 16) / 4, t = p % 4;
                o[64 * k + 32 * h + 4 * j + t] = (uint8_t)(q + 128);
                o[XG_S + 64 * k + 32 * h + 4 * j + t] = (uint8_t)(int8_t)q;
                sum += q;
                half[h] += q;
            }
            dxv[j] = dxv[8 + j] = d;
            xsv[j] = d * (float)sum;
            xhv[j] = d * (float)half[0];
            xhv[8 + j] = d * (float)half[1];
        }
    }
}

static inline int xq_at(const uint8_t *xg, int j, int p) {   /* q of value p of block j in a quantized group */
    return (int)xg[64 * ((p % 16) / 4) + 32 * (p / 16) + 4 * j + p % 4] - 128;
}

/* The q8 arithmetic. A weight block is integers w (signed 8-bit) and floats a, b with gguf's values
   S  (Q4_0, Q5_0, Q8_0, Q6_K): a·w          (Q6_K: a = d·sc per 16 values, exact)
   S  (Q3_K):                   a·w          (a = d·(sc − 32) per 16 values, exact; w in −4..3)
   SM (Q4_1, Q5_1):             a·w + b      (a = d, b = m)
   KM (Q4_K, Q5_K):             a·w − b      (a = d·sc, b = dmin·m, both exact)
   K2 (Q2_K):                   a·w − b      (the same, a and b per 16 values)
   S  (IQ4_NL, IQ4_XS):         a·w          (w = IQ4_VALUES[nibble], −127..113; IQ4_NL: a = d per block,
                                              IQ4_XS: a = d·(ls − 32) per 32 values, exact)
   For each half block (j, h) of a row: S = Σ q·w over its 16 values (exact), then, in float32 with one
   rounding per step,  t = a·dx;  acc[8h + j] = fma(S, t, acc[8h + j]);  and for SM/KM
   accb[j] = fma(b, xs, accb[j]) (K2: accb[8h + j] = fma(b, xh, accb[8h + j]) per half block). The result is
   tree8(acc[0..7] + acc[8..15]) + (SM) or − (KM) tree8(accb), − (K2) tree8(accb[0..7] + accb[8..15]). */
enum { KIND_S = 0, KIND_SM = 1, KIND_KM = 2, KIND_K2 = 3 };

static int q8_kind(int type) {
    return type == T_Q4_1 || type == T_Q5_1 ? KIND_SM : type == T_Q4_K || type == T_Q5_K ? KIND_KM
           : type == T_Q2_K ? KIND_K2 : KIND_S;
}

static inline int unsigned_weights(int type) { return q8_kind(type) != KIND_S; }   /* q, no offset */

/* signed weights as large as ±127 (Q8_0, IQ4_NL, IQ4_XS): without VNNI, maddubs would saturate on (q + 128)·w,
   so those kernels multiply |w| by q carrying w's sign instead (2·127·127 fits in 16 bits) */
static inline int wide_weights(int type) { return type == T_Q8_0 || type == T_IQ4_NL || type == T_IQ4_XS; }

static inline float tree8(const float *a) {
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

static inline float q8_result(int kind, const float *acc, const float *accb) {
    float s8[8], b8[8];
    for (int j = 0; j < 8; ++j) {
        s8[j] = acc[j] + acc[8 + j];
        b8[j] = kind == KIND_K2 ? accb[j] + accb[8 + j] : accb[j];
    }
    const float main = tree8(s8), mins = tree8(b8);
    return kind == KIND_SM ? main + mins : kind == KIND_KM || kind == KIND_K2 ? main - mins : main;
}

/* A group of 8 blocks of one weight row as the q8 arithmetic takes it: q[32j + p] is value p of block j,
   a[8h + j], b[j] (K2: b[8h + j]). Blocks past the row's end (nb < 8) are zeros. */
typedef struct {
    int8_t q[QKK];
    float a[16], b[16];
} qgroup;

static void decode_group(int type, const uint8_t *w, int nb, qgroup *g) {
    memset(g, 0, sizeof *g);
    if (type == T_Q4_K || type == T_Q5_K) {
        int five = type == T_Q5_K;
        float d = rdh(w), dmin = rdh(w + 2);
        const uint8_t *s = w + 4, *qh = w + 16, *qs = w + 16 + 32 * five;
        for (int j = 0; j < 8; ++j) {
            int sc, m;
            scale_min_k4(j, s, &sc, &m);
            g->a[j] = g->a[8 + j] = d * (float)sc;
            g->b[j] = dmin * (float)m;
            for (int p = 0; p < 32; ++p) {
                int q = (qs[32 * (j / 2) + p] >> (4 * (j & 1))) & 15;
                if (five) q |= ((qh[p] >> j) & 1) << 4;
                g->q[32 * j + p] = (int8_t)q;
            }
        }
        return;
    }
    if (type == T_Q2_K) {   /* half h of q8 block j is Q2_K sub-block 2j + h */
        float d = rdh(w + 80), dmin = rdh(w + 82);
        for (int v = 0; v < 256; ++v)
            g->q[v] = (int8_t)((w[16 + 32 * (v / 128) + v % 32] >> (2 * ((v / 32) % 4))) & 3);
        for (int j = 0; j < 8; ++j)
            for (int h = 0; h < 2; ++h) {
                g->a[8 * h + j] = d * (float)(w[2 * j + h] & 15);
                g->b[8 * h + j] = dmin * (float)(w[2 * j + h] >> 4);
            }
        return;
    }
    if (type == T_Q3_K) {   /* half h of q8 block j is Q3_K scale 2j + h */
        float d = rdh(w + 108);
        for (int v = 0; v < 256; ++v) g->q[v] = (int8_t)q3_value(w, v);
        for (int l = 0; l < 16; ++l) g->a[l] = d * (float)q3_scale(w + 96, 2 * (l & 7) + (l >> 3));
        return;
    }
    if (type == T_IQ4_XS) {   /* q8 block j is sub-block j */
        float d = rdh(w);
        for (int j = 0; j < 8; ++j) {
            g->a[j] = g->a[8 + j] = d * (float)iq4xs_scale(w, j);
            for (int i = 0; i < 16; ++i) {
                g->q[32 * j + i] = IQ4_VALUES[w[8 + 16 * j + i] & 15];
                g->q[32 * j + 16 + i] = IQ4_VALUES[w[8 + 16 * j + i] >> 4];
            }
        }
        return;
    }
    if (type == T_Q6_K) {
        const uint8_t *ql = w, *qh = w + 128;
        float d = rdh(w + 208);
        for (int v = 0; v < 256; ++v) {
            int n = v / 128, r = v % 128, quarter = r / 32, p = r % 32;
            int lo = (ql[64 * n + 32 * (quarter & 1) + p] >> (4 * (quarter >> 1))) & 15;
            int hi = (qh[32 * n + p] >> (2 * quarter)) & 3;
            g->q[v] = (int8_t)((lo | (hi << 4)) - 32);
        }
        for (int j = 0; j < 8; ++j)
            for (int h = 0; h < 2; ++h) g->a[8 * h + j] = d * (float)((const int8_t *)(w + 192))[2 * j + h];
        return;
    }
    const int bytes = block_bytes(type);
    for (int j = 0; j < nb; ++j) {
        const uint8_t *b = w + (int64_t)j * bytes;
        int8_t *q = g->q + 32 * j;
        g->a[j] = g->a[8 + j] = rdh(b);
        switch (type) {
            case T_Q4_0: case T_Q4_1: {
                int one = type == T_Q4_1, off = one ? 0 : 8;
                if (one) g->b[j] = rdh(b + 2);
                for (int i = 0; i < 16; ++i) {
                    q[i] = (int8_t)((b[2 + 2 * one + i] & 15) - off);
                    q[i + 16] = (int8_t)((b[2 + 2 * one + i] >> 4) - off);
                }
                break;
            }
            case T_Q5_0: case T_Q5_1: {
                int one = type == T_Q5_1, off = one ? 0 : 16;
                if (one) g->b[j] = rdh(b + 2);
                uint32_t qh = rd32(b + 2 + 2 * one);
                const uint8_t *qs = b + 6 + 2 * one;
                for (int i = 0; i < 16; ++i) {
                    q[i] = (int8_t)(((qs[i] & 15) | (((qh >> i) & 1) << 4)) - off);
                    q[i + 16] = (int8_t)(((qs[i] >> 4) | (((qh >> (i + 16)) & 1) << 4)) - off);
                }
                break;
            }
            case T_Q8_0:
                memcpy(q, b + 2, 32);
                break;
            case T_IQ4_NL:
                for (int i = 0; i < 16; ++i) {
                    q[i] = IQ4_VALUES[b[2 + i] & 15];
                    q[i + 16] = IQ4_VALUES[b[2 + i] >> 4];
                }
                break;
        }
    }
}

/* S of half h of block j of a decoded group against the same half of a quantized row. */
static inline int32_t half_sum(const qgroup *g, const uint8_t *xg, int j, int h) {
    int32_t s = 0;
    for (int p = 16 * h; p < 16 * h + 16; ++p) s += (int32_t)g->q[32 * j + p] * xq_at(xg, j, p);
    return s;
}

/* ---------------------------------------------------------------- portable kernels (every build has them) */

/* f32 mode, portable: 16 running sums per (row, output), value i into sum i % 16, then a fixed tree. */
static void portable_f32(int type, const float *x, int64_t R, int64_t K, const uint8_t *w, int64_t nout,
                         int64_t rowbytes, float *y, int64_t ldy) {
    const int per = block_values(type), bytes = block_bytes(type);
    float wv[QKK];
    for (int64_t c = 0; c < nout; ++c) {
        const uint8_t *wr = w + c * rowbytes;
        float acc[RMAX][16];
        memset(acc, 0, sizeof acc);
        const int step = per == 1 ? 16 : per;
        for (int64_t k0 = 0; k0 < K; k0 += step) {
            int n = (int)(K - k0 < step ? K - k0 : step);
            if (per == 1)
                for (int i = 0; i < n; ++i) decode_block(type, wr + (k0 + i) * bytes, wv + i);
            else
                decode_block(type, wr + k0 / per * bytes, wv);
            for (int64_t r = 0; r < R; ++r)
                for (int i = 0; i < n; ++i) acc[r][(k0 + i) & 15] += x[r * K + k0 + i] * wv[i];
        }
        for (int64_t r = 0; r < R; ++r) {
            float *a = acc[r];
            float s8[8];
            for (int i = 0; i < 8; ++i) s8[i] = a[i] + a[i + 8];
            y[r * ldy + c] = tree8(s8);
        }
    }
}

/* q8 mode, portable: the q8 arithmetic written out (the SIMD builds do exactly this, in vectors). */
static void portable_q8(int type, const uint8_t *xq, int64_t R, int64_t K, const uint8_t *w, int64_t nout,
                        int64_t rowbytes, float *y, int64_t ldy) {
    const int64_t groups = (K + QKK - 1) / QKK, stride = xq_stride(K);
    const int kind = q8_kind(type), bytes = block_bytes(type), kt = block_values(type) == QKK;
    const int64_t nblocks = K / QK;
    qgroup g;
    for (int64_t c = 0; c < nout; ++c) {
        const uint8_t *wr = w + c * rowbytes;
        float acc[RMAX][16], accb[RMAX][16];
        memset(acc, 0, sizeof acc);
        memset(accb, 0, sizeof accb);
        for (int64_t s = 0; s < groups; ++s) {
            int nb = (int)(nblocks - 8 * s < 8 ? nblocks - 8 * s : 8);
            decode_group(type, wr + (kt ? s * bytes : 8 * s * bytes), nb, &g);
            for (int64_t r = 0; r < R; ++r) {
                const uint8_t *xg = xq + r * stride + s * XG;
                const float *dx = (const float *)(xg + XG_DX), *xs = (const float *)(xg + XG_XS);
                const float *xh = (const float *)(xg + XG_XH);
                for (int l = 0; l < 16; ++l)
                    acc[r][l] = fmaf((float)half_sum(&g, xg, l & 7, l >> 3), g.a[l] * dx[l], acc[r][l]);
                if (kind == KIND_K2)
                    for (int l = 0; l < 16; ++l) accb[r][l] = fmaf(g.b[l], xh[l], accb[r][l]);
                else if (kind != KIND_S)
                    for (int j = 0; j < 8; ++j) accb[r][j] = fmaf(g.b[j], xs[j], accb[r][j]);
            }
        }
        for (int64_t r = 0; r < R; ++r) y[r * ldy + c] = q8_result(kind, acc[r], accb[r]);
    }
}

/* How far ahead of its reads a thread prefetches weights into L1 (0: not at all), and whether it also asks for
   the lines twice as far ahead into L2 (quant.py chooses both, per machine). Neither changes a result. */
static int64_t prefetch_bytes = 0;
static int prefetch_l2 = 0;
int64_t spx_set_prefetch(int64_t bytes) {   /* returns the previous setting */
    const int64_t was = prefetch_bytes;
    prefetch_bytes = bytes;
    return was;
}
int spx_set_prefetch_l2(int32_t on) {   /* returns the previous setting; on < 0: changes nothing */
    const int was = prefetch_l2;
    if (on >= 0) prefetch_l2 = on != 0;
    return was;
}

/* ---------------------------------------------------------------- SIMD helpers (AVX2 and AVX-512 builds) */
#if defined(SPX_AVX512) || defined(SPX_AVX2)
#if defined(__AVX512VNNI__) || (defined(SPX_AVX2) && defined(__AVXVNNI__))
#define SPX_VNNI 1
#endif
#endif
#ifndef SPX_VNNI
#define SPX_VNNI 0
#endif
#if defined(SPX_AVX512) || defined(SPX_AVX2)

static inline float f16at(const uint8_t *p) { return _cvtsh_ss(rd16(p)); }

/* prefetch the n bytes that lie prefetch_bytes after p into L1 and, with prefetch_l2, those twice as far
   into L2 (one request per cache line each). L1 requests are bounded by the core's few line-fill buffers;
   the L2 ones keep more lines in flight (benchmarks/results/2026-11-27-five-rows). */
static inline __attribute__((always_inline)) void prefetch_ahead(const uint8_t *p, int64_t n) {
    if (!prefetch_bytes) return;
    for (int64_t i = 0; i < n; i += 64) _mm_prefetch((const char *)p + prefetch_bytes + i, _MM_HINT_T0);
    if (prefetch_l2)
        for (int64_t i = 0; i < n; i += 64) _mm_prefetch((const char *)p + 2 * prefetch_bytes + i, _MM_HINT_T1);
}

/* prefetch the n bytes at p into L1, where the kernels will read next something other than what lies ahead
   of their reads (XSPAN: the same span of the next output); off with the other prefetches */
static inline __attribute__((always_inline)) void prefetch_at(const uint8_t *p, int64_t n) {
    if (!prefetch_bytes) return;
    for (int64_t i = 0; i < n; i += 64) _mm_prefetch((const char *)p + i, _MM_HINT_T0);
}

static inline __attribute__((always_inline)) void prefetch_l2_at(const uint8_t *p, int64_t n) {
    if (!prefetch_bytes) return;
    for (int64_t i = 0; i < n; i += 64) _mm_prefetch((const char *)p + i, _MM_HINT_T1);
}

/* XSPAN's order: where the span that outputs c0 + c (c may run past n, into the next spans) read lies, 0 past the end */
static inline const uint8_t *span_at(const uint8_t *w, int64_t rowbytes, int64_t gbytes, int64_t c0, int64_t n,
                                     int64_t c, int64_t s0, int64_t span, int64_t groups) {
    const int64_t s = s0 + c / n * span;
    return s < groups ? w + (c0 + c % n) * rowbytes + s * gbytes : 0;
}

static inline __attribute__((always_inline)) __m256 halves8(const uint8_t *b, int64_t stride) {
    return _mm256_cvtph_ps(_mm_setr_epi16((short)rd16(b), (short)rd16(b + stride), (short)rd16(b + 2 * stride),
                                          (short)rd16(b + 3 * stride), (short)rd16(b + 4 * stride),
                                          (short)rd16(b + 5 * stride), (short)rd16(b + 6 * stride),
                                          (short)rd16(b + 7 * stride)));
}

/* 8 dwords at p, p + stride, ... as one vector, built in registers (assembled in memory by the compiler,
   its wide reload waited for the stores to drain: 1.7x slower Q5_1) */
static inline __attribute__((always_inline)) __m256i dwords8(const uint8_t *p, int64_t stride) {
    __m128i a = _mm_cvtsi32_si128((int)rd32(p)), b = _mm_cvtsi32_si128((int)rd32(p + 4 * stride));
    a = _mm_insert_epi32(a, (int)rd32(p + stride), 1);
    b = _mm_insert_epi32(b, (int)rd32(p + 5 * stride), 1);
    a = _mm_insert_epi32(a, (int)rd32(p + 2 * stride), 2);
    b = _mm_insert_epi32(b, (int)rd32(p + 6 * stride), 2);
    a = _mm_insert_epi32(a, (int)rd32(p + 3 * stride), 3);
    b = _mm_insert_epi32(b, (int)rd32(p + 7 * stride), 3);
    return _mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1);
}

static inline float hsum8(__m256 v) {   /* tree8's order */
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}

/* Q4_K/Q5_K sub-block scales and mins (get_scale_min_k4 on 8 lanes): a = d·sc, b = dmin·m. */
static inline void k4_scales(const uint8_t *g, __m256 *a, __m256 *b) {
    const __m256i s = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(g + 4)));
    const char z = (char)0x80;
#define DW(i) (char)(i), z, z, z
#define ZZ z, z, z, z
    const __m256i u = _mm256_shuffle_epi8(s, _mm256_setr_epi8(DW(0), DW(1), DW(2), DW(3), DW(8), DW(9), DW(10), DW(11)));
    const __m256i v = _mm256_shuffle_epi8(s, _mm256_setr_epi8(DW(4), DW(5), DW(6), DW(7), DW(8), DW(9), DW(10), DW(11)));
    const __m256i hs = _mm256_shuffle_epi8(s, _mm256_setr_epi8(ZZ, ZZ, ZZ, ZZ, DW(0), DW(1), DW(2), DW(3)));
    const __m256i hm = _mm256_shuffle_epi8(s, _mm256_setr_epi8(ZZ, ZZ, ZZ, ZZ, DW(4), DW(5), DW(6), DW(7)));
#undef DW
#undef ZZ
    const __m256i low = _mm256_setr_epi32(63, 63, 63, 63, 15, 15, 15, 15);
    const __m256i sc = _mm256_or_si256(_mm256_and_si256(u, low), _mm256_slli_epi32(_mm256_srli_epi32(hs, 6), 4));
    const __m256i m = _mm256_or_si256(_mm256_and_si256(_mm256_srlv_epi32(v, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), low),
                                      _mm256_slli_epi32(_mm256_srli_epi32(hm, 6), 4));
    *a = _mm256_mul_ps(_mm256_set1_ps(f16at(g)), _mm256_cvtepi32_ps(sc));
    *b = _mm256_mul_ps(_mm256_set1_ps(f16at(g + 2)), _mm256_cvtepi32_ps(m));
}

/* Q3_K's 16 scales (q3_scale on 16 bytes): byte i = sc_i − 32, signed. The 12 scale bytes are read alone (the
   block ends 2 bytes after them). */
static inline __m128i q3_scales(const uint8_t *g) {
    const __m128i s = _mm_setr_epi32((int)rd32(g + 96), (int)rd32(g + 100), (int)rd32(g + 104), 0);
    const __m128i nib = _mm_set1_epi8(15);
    const __m128i lo = _mm_unpacklo_epi64(_mm_and_si128(s, nib), _mm_and_si128(_mm_srli_epi16(s, 4), nib));
    const __m128i h = _mm_shuffle_epi8(s, _mm_setr_epi8(8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11, 8, 9, 10, 11));
    const __m128i hi = _mm_and_si128(_mm_srlv_epi32(h, _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
    return _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), _mm_set1_epi8(32));
}

/* IQ4_XS: the 8 sub-block scales d·(ls − 32) (iq4xs_scale on 8 lanes): low bits 4ib.. of the scales_l dword,
   high bits 2ib.. of scales_h */
static inline __m256 iq4xs_scales(const uint8_t *g) {
    const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)rd32(g + 4)),
                                                          _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)), _mm256_set1_epi32(15));
    const __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(rd16(g + 2)),
                                                          _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)), _mm256_set1_epi32(3));
    const __m256i ls = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
    return _mm256_mul_ps(_mm256_set1_ps(f16at(g)), _mm256_cvtepi32_ps(ls));
}

/* IQ4_VALUES in each 16-byte lane: one byte shuffle (vpshufb) of the nibbles looks 16 or 32 of them up */
static inline __m128i iq4_values128(void) { return _mm_loadu_si128((const __m128i *)IQ4_VALUES); }

#endif

#include "quant_avx512.h"


#include "quant_avx2.h"

#include "quant_amx.h"

/* ---------------------------------------------------------------- dispatch (AVX2 and AVX-512 builds) */
#if defined(SPX_AVX512) || defined(SPX_AVX2)
static inline __attribute__((always_inline)) void f32_rows(const int type, const int R, const float *x, int64_t K,
                                                           const uint8_t *w, int64_t nout, int64_t rowbytes, float *y,
                                                           int64_t ldy) {
    const int C = COLS_F32(R);
    int64_t c = 0;
    for (; c + C <= nout; c += C) f32_cols(type, R, C, x, K, w + c * rowbytes, rowbytes, y + c, ldy);
    if (C > 1)
        for (; c < nout; ++c) f32_cols(type, R, 1, x, K, w + c * rowbytes, rowbytes, y + c, ldy);
}

#define BY_ROWS(F, T, ...)                                  \
    switch (R) {                                            \
        case 1: F(T, 1, __VA_ARGS__); break;                \
        case 2: F(T, 2, __VA_ARGS__); break;                \
        case 3: F(T, 3, __VA_ARGS__); break;                \
        case 4: F(T, 4, __VA_ARGS__); break;                \
        case 5: F(T, 5, __VA_ARGS__); break;                \
        case 6: F(T, 6, __VA_ARGS__); break;                \
        case 7: F(T, 7, __VA_ARGS__); break;                \
        default: F(T, 8, __VA_ARGS__); break;               \
    }
/* One function per (kernel, type) holding its 8 row counts: compiled apart, they keep the compiler's work
   linear in their number (one function holding all of them took several times as long to build). */
#define KERNEL_FN(F, T, ...)                                                                               \
    static __attribute__((noinline)) void F##_##T(int64_t R, const float *x, const uint8_t *xq, int64_t K, \
                                                  const uint8_t *w, int64_t nout, int64_t rowbytes,      \
                                                  float *y, int64_t ldy) {                               \
        (void)x;                                                                                         \
        (void)xq;                                                                                        \
        BY_ROWS(F, T, __VA_ARGS__, K, w, nout, rowbytes, y, ldy)                                         \
    }
#define QUANT_TYPES(M) M(T_Q4_0) M(T_Q4_1) M(T_Q5_0) M(T_Q5_1) M(T_Q8_0) M(T_Q2_K) M(T_Q4_K) M(T_Q5_K) M(T_Q6_K) \
    M(T_Q3_K) M(T_IQ4_NL) M(T_IQ4_XS)
#define FLOAT_TYPES(M) M(T_F32) M(T_F16) M(T_BF16)
#define Q8_FN(T) KERNEL_FN(q8_rows, T, xq)
#define F32_FN(T) KERNEL_FN(f32_rows, T, x)
QUANT_TYPES(Q8_FN)
QUANT_TYPES(F32_FN)
FLOAT_TYPES(F32_FN)

static void simd_kernel(int type, int mode, const float *x, const uint8_t *xq, int64_t R, int64_t K,
                        const uint8_t *w, int64_t nout, int64_t rowbytes, float *y, int64_t ldy) {
#define CASE(F, T) \
    case T: F##_##T(R, x, xq, K, w, nout, rowbytes, y, ldy); break;
#define Q8_CASE(T) CASE(q8_rows, T)
#define F32_CASE(T) CASE(f32_rows, T)
    if (mode == MODE_Q8 && !is_float_type(type)) {
        switch (type) { QUANT_TYPES(Q8_CASE) default: break; }
    } else {
        switch (type) { QUANT_TYPES(F32_CASE) FLOAT_TYPES(F32_CASE) default: break; }
    }
#undef CASE
}
#define SPX_SIMD 1
#endif




/* Rows [0, R) (R <= RMAX) of X against `nout` consecutive weight rows starting at w. */
static void kernel(int type, int mode, const float *x, const uint8_t *xq, int64_t R, int64_t K,
                   const uint8_t *w, int64_t nout, int64_t rowbytes, float *y, int64_t ldy) {
#ifdef SPX_SIMD
    simd_kernel(type, mode, x, xq, R, K, w, nout, rowbytes, y, ldy);
    return;
#endif
    if (mode == MODE_Q8 && !is_float_type(type))
        portable_q8(type, xq, R, K, w, nout, rowbytes, y, ldy);
    else
        portable_f32(type, x, R, K, w, nout, rowbytes, y, ldy);
}

/* ---------------------------------------------------------------- the driver */

/* Outputs [n0, n1) of one segment for all M rows: a long X is cut into chunks that stay in cache, each
   chunk's rows pass over a tile of weights in groups of at most RMAX. */
static void segment_rows(int type, int mode, const float *x, const uint8_t *xq, int64_t M, int64_t K,
                         const uint8_t *w, int64_t rowbytes, int64_t n0, int64_t n1, float *y, int64_t ldy) {
    const int64_t xrow = mode == MODE_Q8 && !is_float_type(type) ? xq_stride(K) : K * 4;
    int64_t chunk = XCHUNK_BYTES / xrow;
    chunk = chunk < RMAX ? RMAX : chunk / RMAX * RMAX;
    int64_t tile = TILE_BYTES / rowbytes;
    if (tile < 1) tile = 1;
    for (int64_t m0 = 0; m0 < M; m0 += chunk) {
        const int64_t m1 = m0 + chunk < M ? m0 + chunk : M;
        for (int64_t t0 = n0; t0 < n1; t0 += tile) {
            const int64_t t1 = t0 + tile < n1 ? t0 + tile : n1;
            for (int64_t r = m0; r < m1; r += RMAX) {
                const int64_t R = m1 - r < RMAX ? m1 - r : RMAX;
                kernel(type, mode, x + r * K, xq ? xq + r * xq_stride(K) : 0, R, K, w + t0 * rowbytes, t1 - t0,
                       rowbytes, y + r * ldy + t0, ldy);
            }
        }
    }
}

/* Y (M x Σrows, row-major) = X (M x K) · [W_0; W_1; …]ᵀ, segment s being rows[s] rows of ggml type types[s]
   at data[s]. The threads split all outputs of all segments into contiguous ranges of about equal weight
   bytes (a static schedule: each reads its own part of each W once). Returns 0, 1 when memory for the
   quantized X could not be allocated, 2 for a type without a kernel (quant.py refuses those first). */
int spx_matmul(const float *x, int64_t M, int64_t K, int32_t nseg, const int32_t *types,
               const uint8_t *const *data, const int64_t *rows, float *y, int32_t mode, int32_t threads) {
    int64_t N = 0, total = 0;
    int quantized = 0;
    for (int s = 0; s < nseg; ++s) {
        if (!block_values(types[s]) || K % block_values(types[s])) return 2;
        N += rows[s];
        total += rows[s] * (K / block_values(types[s]) * block_bytes(types[s]));
        quantized |= !is_float_type(types[s]);
    }
    if (M <= 0 || N <= 0) return 0;
    uint8_t *xq = 0;
    if (mode == MODE_Q8 && quantized) {
        xq = aligned_alloc(64, M * xq_stride(K));
        if (!xq) return 1;
        /* a few rows are quantized by the calling thread: a second parallel region would cost more */
#pragma omp parallel for num_threads(threads) schedule(static) if (M * K > QUANTIZE_ALONE)
        for (int64_t m = 0; m < M; ++m) {
#ifdef SPX_SIMD
            quantize_row_simd(x + m * K, K, xq + m * xq_stride(K));
#else
            quantize_row(x + m * K, K, xq + m * xq_stride(K));
#endif
        }
    }
    uint8_t *xpack = 0;   /* AMX: the quantized rows repacked (quant_amx.h), when this call takes that path */
#if SPX_AMX
    int amx = 0;
    for (int s = 0; s < nseg; ++s) amx |= amx_type(types[s]);
    if (amx && amx_on && xq && M >= AMX_MIN_ROWS) {
        xpack = aligned_alloc(64, amx_x_bytes(M, K));
        if (xpack) amx_pack_x(xq, M, K, xpack, threads);   /* without the memory: the VNNI kernels */
    }
#endif
#pragma omp parallel num_threads(threads)
    {
        int id = 0, nt = 1;
#ifdef _OPENMP
        id = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        const int64_t lo = total * id / nt, hi = total * (id + 1) / nt;   /* this thread's bytes */
        int64_t start = 0, col = 0;
        for (int s = 0; s < nseg; ++s) {
            const int64_t rb = K / block_values(types[s]) * block_bytes(types[s]), bytes = rows[s] * rb;
            /* outputs whose first byte lies in [lo, hi) */
            int64_t a = lo <= start ? 0 : (lo - start + rb - 1) / rb, b = hi <= start ? 0 : (hi - start + rb - 1) / rb;
            if (a > rows[s]) a = rows[s];
            if (b > rows[s]) b = rows[s];
            int done = a >= b;
#if SPX_AMX
            if (!done && xpack && amx_type(types[s]))
                done = !amx_segment_rows(types[s], xpack, M, K, data[s], rb, a, b, y + col, N);
#endif
            if (!done) segment_rows(types[s], mode, x, xq, M, K, data[s], rb, a, b, y + col, N);
            start += bytes;
            col += rows[s];
        }
    }
    free(xpack);
    free(xq);
    return 0;
}

/* Rows ids[0..n) of a weight (K values each) decoded to gguf's float32 values: out is n x K. */
void spx_dequantize_rows(int32_t type, const uint8_t *data, int64_t K, const int64_t *ids, int64_t n, float *out) {
    const int per = block_values(type), bytes = block_bytes(type);
    if (!per) return;
    const int64_t rb = K / per * bytes;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t b = 0; b < K / per; ++b) decode_block(type, data + ids[i] * rb + b * bytes, out + i * K + b * per);
}

/* Which build this is: 2 AVX-512, 1 AVX2, 0 portable; +4 when its integer dot products are VNNI, +8 when it
   has the AMX path (quant_amx.h). */
int spx_build(void) {
#if defined(SPX_AVX512)
    return 2 + 4 * SPX_VNNI + 8 * SPX_AMX;
#elif defined(SPX_AVX2)
    return 1 + 4 * SPX_VNNI;
#else
    return 0;
#endif
}

/* The sum of n bytes (n a multiple of 256) read by `threads` threads, each its own contiguous part, with the
   kernels' prefetching: the benchmark's measure of this machine's read bandwidth, in the same library. */
uint64_t spx_stream_sum(const uint8_t *p, int64_t n, int32_t threads) {
    uint64_t total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
        int id = 0, nt = 1;
#ifdef _OPENMP
        id = omp_get_thread_num();
        nt = omp_get_num_threads();
#endif
        int64_t a = n / 256 * id / nt * 256, b = n / 256 * (id + 1) / nt * 256;
        uint64_t s[4] = {0, 0, 0, 0};
        for (int64_t i = a; i < b; i += 64) {
#ifdef SPX_SIMD
            prefetch_ahead(p + i, 64);   /* as the kernels read their weights */
#endif
            for (int k = 0; k < 8; ++k) {
                uint64_t v;
                memcpy(&v, p + i + 8 * k, 8);
                s[k & 3] += v;
            }
        }
        total += s[0] + s[1] + s[2] + s[3];
    }
    return total;
}
