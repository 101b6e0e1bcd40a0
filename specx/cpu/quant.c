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
   Compiled with -ffp-contract=off (the compiler never fuses what is written as a product and a sum). */
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

enum { T_F32 = 0, T_F16 = 1, T_Q4_0 = 2, T_Q4_1 = 3, T_Q5_0 = 6, T_Q5_1 = 7, T_Q8_0 = 8, T_Q4_K = 12,
       T_Q5_K = 13, T_Q6_K = 14, T_BF16 = 30 };
enum { MODE_F32 = 0, MODE_Q8 = 1 };

#define QK 32          /* values per block of the 32-value types, and per activation block in q8 mode */
#define QKK 256        /* values per K-type superblock; also one q8 "group" of 8 activation blocks */
#define RMAX 8         /* activation rows that share one decoded weight block (register blocking) */
#define TILE_BYTES 49152   /* a thread computes its outputs in tiles of about this many weight bytes, so a
                              tile stays in L1/L2 while every row group of a long prompt passes over it */
#define XCHUNK_BYTES (1 << 20)   /* at most this many bytes of X per pass over the weights (stays in L2) */

/* q8 activations, per row: for each group of 256 values (8 blocks of 32), XG bytes:
   u[256]   the int8 values q plus 128 (as unsigned bytes); byte 64k + 32h + 4j + t holds value 32j + 16h + 4k + t
            of the group (block j, half h), so a 64-byte vector k has 4 values of half h of block j in its
            32-bit lane 8h + j (the SIMD kernels decode weights into the same order);
   s[256]   the same values q as signed bytes, in the same order;
   dx[16]   the blocks' float scales, lane 8h + j = dx of block j (twice, for 16-lane arithmetic);
   xs[8]    dx·Σq per block (float).
   The integer products pair unsigned with signed bytes (VNNI, maddubs): weights that are never negative
   (unsigned_weights) take q as it is; signed weights take q + 128 and subtract 128·Σw, a sum over the
   weights alone (decoded once for all rows). Values past the row's end are zeros with scale 0. */
#define XG 640
#define XG_S 256
#define XG_DX 512
#define XG_XS 576

static inline int64_t xq_stride(int64_t K) { return (K + QKK - 1) / QKK * XG; }

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

static int block_values(int type) {
    switch (type) {
        case T_F32: case T_F16: case T_BF16: return 1;
        case T_Q4_0: case T_Q4_1: case T_Q5_0: case T_Q5_1: case T_Q8_0: return QK;
        case T_Q4_K: case T_Q5_K: case T_Q6_K: return QKK;
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
        case T_Q4_K: return 144;
        case T_Q5_K: return 176;
        case T_Q6_K: return 210;
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

/* ---------------------------------------------------------------- q8: activations and the canonical sums */

/* One row of X quantized into the layout above. amax/127 and 1/d are correctly rounded divisions, x·(1/d)
   is rounded to the nearest integer, ties to even (numpy's rint; the SIMD conversions do the same). */
static void quantize_row(const float *x, int64_t K, uint8_t *out) {
    const int64_t groups = (K + QKK - 1) / QKK;
    memset(out, 0, groups * XG);
    for (int64_t g = 0; g < groups; ++g) {
        uint8_t *o = out + g * XG;
        float *dxv = (float *)(o + XG_DX), *xsv = (float *)(o + XG_XS);
        memset(o, 128, 256);
        for (int j = 0; j < 8; ++j) {
            int64_t base = g * QKK + QK * j;
            if (base >= K) break;
            const float *xb = x + base;
            float amax = 0.0f;
            for (int p = 0; p < QK; ++p) amax = fmaxf(amax, fabsf(xb[p]));
            float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            int sum = 0;
            for (int p = 0; p < QK; ++p) {
                float v = xb[p] * id;
                v = v != v ? 0.0f : v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
                int q = (int)nearbyintf(v);
                int h = p / 16, k = (p % 16) / 4, t = p % 4;
                o[64 * k + 32 * h + 4 * j + t] = (uint8_t)(q + 128);
                o[XG_S + 64 * k + 32 * h + 4 * j + t] = (uint8_t)(int8_t)q;
                sum += q;
            }
            dxv[j] = dxv[8 + j] = d;
            xsv[j] = d * (float)sum;
        }
    }
}

static inline int xq_at(const uint8_t *xg, int j, int p) {   /* q of value p of block j in a quantized group */
    return (int)xg[64 * ((p % 16) / 4) + 32 * (p / 16) + 4 * j + p % 4] - 128;
}

/* The q8 arithmetic. A weight block is integers w (signed 8-bit) and floats a, b with gguf's values
   S  (Q4_0, Q5_0, Q8_0, Q6_K): a·w          (Q6_K: a = d·sc per 16 values, exact)
   SM (Q4_1, Q5_1):             a·w + b      (a = d, b = m)
   KM (Q4_K, Q5_K):             a·w − b      (a = d·sc, b = dmin·m, both exact)
   For each half block (j, h) of a row: S = Σ q·w over its 16 values (exact), then, in float32 with one
   rounding per step,  t = a·dx;  acc[8h + j] = fma(S, t, acc[8h + j]);  and for SM/KM
   accb[j] = fma(b, xs, accb[j]). The result is tree8(acc[0..7] + acc[8..15]) + (SM) or − (KM) tree8(accb). */
enum { KIND_S = 0, KIND_SM = 1, KIND_KM = 2 };

static int q8_kind(int type) {
    return type == T_Q4_1 || type == T_Q5_1 ? KIND_SM : type == T_Q4_K || type == T_Q5_K ? KIND_KM : KIND_S;
}

static inline int unsigned_weights(int type) { return q8_kind(type) != KIND_S; }   /* q, no offset */

static inline float tree8(const float *a) {
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

static inline float q8_result(int kind, const float *acc, const float *accb) {
    float s8[8];
    for (int j = 0; j < 8; ++j) s8[j] = acc[j] + acc[8 + j];
    const float main = tree8(s8), mins = tree8(accb);
    return kind == KIND_SM ? main + mins : kind == KIND_KM ? main - mins : main;
}

/* A group of 8 blocks of one weight row as the q8 arithmetic takes it: q[32j + p] is value p of block j,
   a[8h + j], b[j]. Blocks past the row's end (nb < 8) are zeros. */
typedef struct {
    int8_t q[QKK];
    float a[16], b[8];
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
        float acc[RMAX][16], accb[RMAX][8];
        memset(acc, 0, sizeof acc);
        memset(accb, 0, sizeof accb);
        for (int64_t s = 0; s < groups; ++s) {
            int nb = (int)(nblocks - 8 * s < 8 ? nblocks - 8 * s : 8);
            decode_group(type, wr + (kt ? s * bytes : 8 * s * bytes), nb, &g);
            for (int64_t r = 0; r < R; ++r) {
                const uint8_t *xg = xq + r * stride + s * XG;
                const float *dx = (const float *)(xg + XG_DX), *xs = (const float *)(xg + XG_XS);
                for (int l = 0; l < 16; ++l)
                    acc[r][l] = fmaf((float)half_sum(&g, xg, l & 7, l >> 3), g.a[l] * dx[l], acc[r][l]);
                if (kind != KIND_S)
                    for (int j = 0; j < 8; ++j) accb[r][j] = fmaf(g.b[j], xs[j], accb[r][j]);
            }
        }
        for (int64_t r = 0; r < R; ++r) y[r * ldy + c] = q8_result(kind, acc[r], accb[r]);
    }
}

/* How far ahead of its reads a thread prefetches weights (0: not at all; quant.py chooses, per machine). It
   never changes a result. */
static int64_t prefetch_bytes = 0;
int64_t spx_set_prefetch(int64_t bytes) {   /* returns the previous setting */
    const int64_t was = prefetch_bytes;
    prefetch_bytes = bytes;
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

/* prefetch the n bytes that lie prefetch_bytes after p (one request per cache line) */
static inline __attribute__((always_inline)) void prefetch_ahead(const uint8_t *p, int64_t n) {
    if (prefetch_bytes)
        for (int64_t i = 0; i < n; i += 64) _mm_prefetch((const char *)p + prefetch_bytes + i, _MM_HINT_T0);
}

static inline __attribute__((always_inline)) __m256 halves8(const uint8_t *b, int64_t stride) {
    return _mm256_cvtph_ps(_mm_setr_epi16((short)rd16(b), (short)rd16(b + stride), (short)rd16(b + 2 * stride),
                                          (short)rd16(b + 3 * stride), (short)rd16(b + 4 * stride),
                                          (short)rd16(b + 5 * stride), (short)rd16(b + 6 * stride),
                                          (short)rd16(b + 7 * stride)));
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

#endif

/* ---------------------------------------------------------------- AVX-512 kernels (F, BW, VL; VNNI if built with it) */
#if defined(SPX_AVX512)

#define L16(F, k) _mm512_setr_epi32(F(0, k), F(1, k), F(2, k), F(3, k), F(4, k), F(5, k), F(6, k), F(7, k), F(8, k), \
                                    F(9, k), F(10, k), F(11, k), F(12, k), F(13, k), F(14, k), F(15, k))
/* lane l of a 64-byte vector k holds block j = l & 7, half h = l >> 3 (the q8 layout above) */
#define J_(l) ((l) & 7)
#define H_(l) ((l) >> 3)
#define IDX_Q4K(l, k) (8 * (J_(l) >> 1) + 4 * H_(l) + (k))        /* raw dword of Q4_K/Q5_K qs */
#define SHR_Q4K(l, k) (4 * (J_(l) & 1))
#define IDX_QH5K(l, k) (4 * H_(l) + (k))                          /* Q5_K qh dword */
#define BIT_Q5K(l, k) ((int)(0x01010101u << J_(l)))                /* its bit j in every byte */
#define IDX_Q6L(l, k) (16 * (J_(l) >> 2) + 8 * (J_(l) & 1) + 4 * H_(l) + (k))
#define SHR_Q6L(l, k) (4 * ((J_(l) >> 1) & 1))
#define IDX_Q6H(l, k) (8 * (J_(l) >> 2) + 4 * H_(l) + (k))
#define ROL_Q6H(l, k) ((4 - 2 * (J_(l) & 3)) & 31)                 /* bits 2Q..2Q+1 of each byte to 4..5 */
#define IDX_SC6(l, k) (2 * J_(l) + H_(l))
#define IDX_B32(l, k) (4 * J_(l) + (k))                            /* 8 blocks' qs dwords (two tables) */
#define SHR_B32(l, k) (4 * H_(l))
#define SHUF_Q5(l, k) ((int)(0x01010101u * (4 * ((l) & 3) + 2 * H_(l) + ((k) >> 1))))
#define IDX_Q8(l, k) (8 * (J_(l) & 3) + 4 * H_(l) + (k))

/* quantize_row's arithmetic, 16 values at a time (the same operations: max, a division, a product, a clamp,
   rounding to nearest even). */
static void quantize_row_simd(const float *x, int64_t K, uint8_t *out) {
    const int64_t groups = (K + QKK - 1) / QKK;
    memset(out, 0, groups * XG);
    const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
    for (int64_t g = 0; g < groups; ++g) {
        uint8_t *o = out + g * XG;
        if ((g + 1) * QKK > K) memset(o, 128, 256);
        for (int j = 0; j < 8 && g * QKK + QK * j < K; ++j) {
            const float *xb = x + g * QKK + QK * j;
            const __m512 a = _mm512_loadu_ps(xb), b = _mm512_loadu_ps(xb + 16);
            const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(b)));
            const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            const __m512i qa = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(a, _mm512_set1_ps(id)), lo), hi));
            const __m512i qb = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(b, _mm512_set1_ps(id)), lo), hi));
            const int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(qa, qb));
            const __m128i bias = _mm_set1_epi8((char)0x80);
            uint32_t ba[4], bb[4];
            const __m128i sa = _mm512_cvtsepi32_epi8(qa), sb = _mm512_cvtsepi32_epi8(qb);
            uint32_t ca[4], cb[4];
            _mm_storeu_si128((__m128i *)ba, _mm_xor_si128(sa, bias));
            _mm_storeu_si128((__m128i *)bb, _mm_xor_si128(sb, bias));
            _mm_storeu_si128((__m128i *)ca, sa);
            _mm_storeu_si128((__m128i *)cb, sb);
            for (int k = 0; k < 4; ++k) {
                memcpy(o + 64 * k + 4 * j, &ba[k], 4);
                memcpy(o + 64 * k + 32 + 4 * j, &bb[k], 4);
                memcpy(o + XG_S + 64 * k + 4 * j, &ca[k], 4);
                memcpy(o + XG_S + 64 * k + 32 + 4 * j, &cb[k], 4);
            }
            ((float *)(o + XG_DX))[j] = ((float *)(o + XG_DX))[8 + j] = d;
            ((float *)(o + XG_XS))[j] = d * (float)sum;
        }
    }
}

/* ---- q8 mode: a group's weights decoded into the q8 layout (W[k] lane 8h + j = 4 values of block j, half h) */
typedef struct {
    __m512i w[4];        /* signed 8-bit weights */
    __m512i corr;        /* −128·Σw per lane: the x bytes are q + 128 */
    __m512 a;            /* a per lane (8h + j) */
    __m256 b;            /* b per block (SM, KM) */
#if !SPX_VNNI
    __mmask64 neg[4];    /* Q8_0 without VNNI: w < 0 (w holds |w|, and x is used signed) */
#endif
} wq;

static inline __m512 twice(__m256 v) {
    const __m512 z = _mm512_castps256_ps512(v);
    return _mm512_shuffle_f32x4(z, z, 0x44);
}

static inline __attribute__((always_inline)) __m512i four16(const uint8_t *b, int64_t stride) {
    __m512i z = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)b));
    z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(b + stride)), 1);
    z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(b + 2 * stride)), 2);
    return _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)(b + 3 * stride)), 3);
}

static inline __attribute__((always_inline)) __m512i dot4(__m512i acc, __m512i u, __m512i w) {
#if SPX_VNNI
    return _mm512_dpbusd_epi32(acc, u, w);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, w), _mm512_set1_epi16(1)));
#endif
}

static inline __attribute__((always_inline)) void decode_q8(const int type, const uint8_t *g, wq *o) {
    const __m512i nib = _mm512_set1_epi8(15);
    __m256 a;
    o->b = _mm256_setzero_ps();
    if (type == T_Q4_K || type == T_Q5_K) {
        const uint8_t *qs = g + (type == T_Q5_K ? 48 : 16);
        const __m512i q0 = _mm512_loadu_si512(qs), q1 = _mm512_loadu_si512(qs + 64), shr = L16(SHR_Q4K, 0);
        o->w[0] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(q0, L16(IDX_Q4K, 0), q1), shr), nib);
        o->w[1] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(q0, L16(IDX_Q4K, 1), q1), shr), nib);
        o->w[2] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(q0, L16(IDX_Q4K, 2), q1), shr), nib);
        o->w[3] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(q0, L16(IDX_Q4K, 3), q1), shr), nib);
        if (type == T_Q5_K) {
            const __m512i qh = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(g + 16)));
            const __m512i bit = L16(BIT_Q5K, 0), sixteen = _mm512_set1_epi8(16);
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) {
                const __m512i idx = k == 0 ? L16(IDX_QH5K, 0) : k == 1 ? L16(IDX_QH5K, 1) : k == 2 ? L16(IDX_QH5K, 2)
                                                                                                 : L16(IDX_QH5K, 3);
                const __mmask64 m = _mm512_test_epi8_mask(_mm512_permutexvar_epi32(idx, qh), bit);
                o->w[k] = _mm512_mask_add_epi8(o->w[k], m, o->w[k], sixteen);
            }
        }
        k4_scales(g, &a, &o->b);
        o->a = twice(a);
    } else if (type == T_Q6_K) {
        const __m512i l0 = _mm512_loadu_si512(g), l1 = _mm512_loadu_si512(g + 64), qh = _mm512_loadu_si512(g + 128);
        const __m512i shr = L16(SHR_Q6L, 0), rol = L16(ROL_Q6H, 0), two = _mm512_set1_epi8(0x30);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            const __m512i il = k == 0 ? L16(IDX_Q6L, 0) : k == 1 ? L16(IDX_Q6L, 1) : k == 2 ? L16(IDX_Q6L, 2) : L16(IDX_Q6L, 3);
            const __m512i ih = k == 0 ? L16(IDX_Q6H, 0) : k == 1 ? L16(IDX_Q6H, 1) : k == 2 ? L16(IDX_Q6H, 2) : L16(IDX_Q6H, 3);
            const __m512i lo = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(l0, il, l1), shr), nib);
            const __m512i hi = _mm512_rolv_epi32(_mm512_permutexvar_epi32(ih, qh), rol);
            o->w[k] = _mm512_sub_epi8(_mm512_ternarylogic_epi32(lo, hi, two, 0xF8), _mm512_set1_epi8(32));   /* (lo | hi & 0x30) − 32 */
        }
        const __m512i sc = _mm512_permutexvar_epi32(L16(IDX_SC6, 0), _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(g + 192))));
        o->a = _mm512_mul_ps(_mm512_set1_ps(f16at(g + 208)), _mm512_cvtepi32_ps(sc));
    } else if (type == T_Q8_0) {
        const __m512i za = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(g + 2))),
                                              _mm256_loadu_si256((const __m256i *)(g + 36)), 1);
        const __m512i zb = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(g + 70))),
                                              _mm256_loadu_si256((const __m256i *)(g + 104)), 1);
        const __m512i zc = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(g + 138))),
                                              _mm256_loadu_si256((const __m256i *)(g + 172)), 1);
        const __m512i zd = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(g + 206))),
                                              _mm256_loadu_si256((const __m256i *)(g + 240)), 1);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            const __m512i idx = k == 0 ? L16(IDX_Q8, 0) : k == 1 ? L16(IDX_Q8, 1) : k == 2 ? L16(IDX_Q8, 2) : L16(IDX_Q8, 3);
            o->w[k] = _mm512_mask_blend_epi32(0xF0F0, _mm512_permutex2var_epi32(za, idx, zb),
                                              _mm512_permutex2var_epi32(zc, idx, zd));
        }
        o->a = twice(halves8(g, 34));
    } else {   /* Q4_0, Q4_1, Q5_0, Q5_1: 8 blocks */
        const int bytes = block_bytes(type), qs = type == T_Q4_0 ? 2 : type == T_Q4_1 ? 4 : type == T_Q5_0 ? 6 : 8;
        const __m512i z0 = four16(g + qs, bytes), z1 = four16(g + qs + 4 * bytes, bytes), shr = L16(SHR_B32, 0);
        o->w[0] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(z0, L16(IDX_B32, 0), z1), shr), nib);
        o->w[1] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(z0, L16(IDX_B32, 1), z1), shr), nib);
        o->w[2] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(z0, L16(IDX_B32, 2), z1), shr), nib);
        o->w[3] = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutex2var_epi32(z0, L16(IDX_B32, 3), z1), shr), nib);
        if (type == T_Q5_0 || type == T_Q5_1) {
            const int off = qs - 4;
            const __m256i h8 = _mm256_setr_epi32((int)rd32(g + off), (int)rd32(g + off + bytes), (int)rd32(g + off + 2 * bytes),
                                                 (int)rd32(g + off + 3 * bytes), (int)rd32(g + off + 4 * bytes),
                                                 (int)rd32(g + off + 5 * bytes), (int)rd32(g + off + 6 * bytes),
                                                 (int)rd32(g + off + 7 * bytes));
            const __m512i qh = _mm512_inserti64x4(_mm512_castsi256_si512(h8), h8, 1), sixteen = _mm512_set1_epi8(16);
            const __m512i even = _mm512_set1_epi32(0x08040201), odd = _mm512_set1_epi32((int)0x80402010u);
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) {
                const __m512i ctl = k == 0 ? L16(SHUF_Q5, 0) : k == 1 ? L16(SHUF_Q5, 1) : k == 2 ? L16(SHUF_Q5, 2) : L16(SHUF_Q5, 3);
                const __mmask64 m = _mm512_test_epi8_mask(_mm512_shuffle_epi8(qh, ctl), k & 1 ? odd : even);
                o->w[k] = _mm512_mask_add_epi8(o->w[k], m, o->w[k], sixteen);
            }
        }
        if (type == T_Q4_0 || type == T_Q5_0) {
            const __m512i off = _mm512_set1_epi8(type == T_Q4_0 ? 8 : 16);
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) o->w[k] = _mm512_sub_epi8(o->w[k], off);
        }
        o->a = twice(halves8(g, bytes));
        if (type == T_Q4_1 || type == T_Q5_1) o->b = halves8(g + 2, bytes);
    }
    o->corr = _mm512_setzero_si512();
    if (unsigned_weights(type)) return;
#if SPX_VNNI
    __m512i c = _mm512_setzero_si512();
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) c = dot4(c, _mm512_set1_epi8((char)0x80), o->w[k]);
    o->corr = _mm512_sub_epi32(_mm512_setzero_si512(), c);
#else
    if (type == T_Q8_0) {   /* maddubs would saturate on (q + 128)·w: x is used signed, w as |w| */
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            o->neg[k] = _mm512_movepi8_mask(o->w[k]);
            o->w[k] = _mm512_abs_epi8(o->w[k]);
        }
        o->corr = _mm512_setzero_si512();
    } else {
        __m512i c = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) c = dot4(c, _mm512_set1_epi8((char)0x80), o->w[k]);
        o->corr = _mm512_sub_epi32(_mm512_setzero_si512(), c);
    }
#endif
}

/* One row's step of the q8 arithmetic for a decoded group: 16 exact half-block sums, then the fmas. */
static inline __attribute__((always_inline)) void q8_row(const int type, const wq *o, const uint8_t *xg, __m512 *acc,
                                                         __m256 *accb) {
    __m512i s = o->corr;
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
        if (unsigned_weights(type)) {   /* w unsigned, q signed */
            s = dot4(s, o->w[k], _mm512_load_si512(xg + XG_S + 64 * k));
            continue;
        }
        __m512i xv = _mm512_load_si512(xg + 64 * k);
#if !SPX_VNNI
        if (type == T_Q8_0) {
            xv = _mm512_xor_si512(xv, _mm512_set1_epi8((char)0x80));
            xv = _mm512_mask_sub_epi8(xv, o->neg[k], _mm512_setzero_si512(), xv);
            s = _mm512_add_epi32(s, _mm512_madd_epi16(_mm512_maddubs_epi16(o->w[k], xv), _mm512_set1_epi16(1)));
            continue;
        }
#endif
        s = dot4(s, xv, o->w[k]);
    }
    const __m512 t = _mm512_mul_ps(o->a, _mm512_load_ps((const float *)(xg + XG_DX)));
    *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), t, *acc);
    if (q8_kind(type) != KIND_S) *accb = _mm256_fmadd_ps(o->b, _mm256_load_ps((const float *)(xg + XG_XS)), *accb);
}

static inline float q8_result_simd(int kind, __m512 acc, __m256 accb) {
    const float main = hsum8(_mm256_add_ps(_mm512_castps512_ps256(acc), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1))));
    const float mins = hsum8(accb);
    return kind == KIND_SM ? main + mins : kind == KIND_KM ? main - mins : main;
}

static inline __attribute__((always_inline)) void q8_rows(const int type, const int R, const uint8_t *xq, int64_t K,
                                                          const uint8_t *w, int64_t nout, int64_t rowbytes, float *y,
                                                          int64_t ldy) {
    const int64_t groups = (K + QKK - 1) / QKK, stride = xq_stride(K), nblocks = K / QK;
    const int bytes = block_bytes(type), kt = block_values(type) == QKK;
    uint8_t pad[8 * 34];
    for (int64_t c = 0; c < nout; ++c) {
        const uint8_t *wr = w + c * rowbytes;
        __m512 acc[RMAX];
        __m256 accb[RMAX];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            acc[r] = _mm512_setzero_ps();
            accb[r] = _mm256_setzero_ps();
        }
        for (int64_t s = 0; s < groups; ++s) {
            const uint8_t *g = wr + (kt ? s : 8 * s) * bytes;
            if (!kt && nblocks - 8 * s < 8) {   /* a row's last, partial group: zero blocks after it */
                memset(pad, 0, sizeof pad);
                memcpy(pad, g, (nblocks - 8 * s) * bytes);
                g = pad;
            }
            prefetch_ahead(g, kt ? bytes : 8 * bytes);
            wq o;
            decode_q8(type, g, &o);
            const uint8_t *xg = xq + s * XG;
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) q8_row(type, &o, xg + r * stride, &acc[r], &accb[r]);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) y[r * ldy + c] = q8_result_simd(q8_kind(type), acc[r], accb[r]);
    }
}

/* ---- f32 mode: each (row, output) sums into two 16-lane accumulators: values 0..15 of every 32-value
   block into the first, 16..31 into the second; then one fixed horizontal sum. */

#define CMAX 4
/* outputs decoded together for R rows (registers: 2·R·C accumulators and up to 4·C weight vectors) */
#define COLS_F32(R) ((R) == 1 ? 4 : (R) <= 4 ? 2 : 1)

/* 32 values of a 32-value block: positions 0..15 and 16..31, gguf's exact values. The 4- and 5-bit types
   look each value up in a table of the block's 16 or 32 possible values (computed as gguf does: d·q − off·d
   = d·(q − off) exactly, or d·q + m rounded once), so a value costs one permute instead of a conversion
   and a product. */
static inline __m512 iota16(int base) {
    return _mm512_add_ps(_mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_ps((float)base));
}

static inline __attribute__((always_inline)) void dec_block32(const int type, const uint8_t *b, float d, float m,
                                                              __m512 *w0, __m512 *w1) {
    const __m512 dv = _mm512_set1_ps(d);
    if (type == T_Q8_0) {
        *w0 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b + 2)))), dv);
        *w1 = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b + 18)))), dv);
        return;
    }
    const int one = type == T_Q4_1 || type == T_Q5_1, five = type == T_Q5_0 || type == T_Q5_1;
    const __m512i raw = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(b + 2 + 2 * one + 4 * five)));
    const __m512 mv = _mm512_set1_ps(m);
    const __m512 t0 = one ? _mm512_fmadd_ps(iota16(0), dv, mv) : _mm512_fmsub_ps(iota16(0), dv, mv);
    if (!five) {   /* vpermps reads the low 4 bits of each index: the low nibble needs no mask */
        *w0 = _mm512_permutexvar_ps(raw, t0);
        *w1 = _mm512_permutexvar_ps(_mm512_srli_epi32(raw, 4), t0);
        return;
    }
    const __m512 t1 = one ? _mm512_fmadd_ps(iota16(16), dv, mv) : _mm512_fmsub_ps(iota16(16), dv, mv);
    const uint32_t qh = rd32(b + 2 + 2 * one);
    const __m512i sixteen = _mm512_set1_epi32(16);
    const __m512i lo = _mm512_mask_or_epi32(_mm512_and_si512(raw, _mm512_set1_epi32(15)), (__mmask16)qh, raw, sixteen);
    const __m512i hi = _mm512_mask_or_epi32(_mm512_srli_epi32(raw, 4), (__mmask16)(qh >> 16), _mm512_srli_epi32(raw, 4), sixteen);
    *w0 = _mm512_permutex2var_ps(t0, lo, t1);
    *w1 = _mm512_permutex2var_ps(t0, hi, t1);
}

/* the scales of up to 8 blocks from b on: d, and m (Q4_1, Q5_1) or off·d (Q4_0: 8·d, Q5_0: 16·d, exact) */
static inline __attribute__((always_inline)) void block_scales(const int type, const uint8_t *b, int n, float *sa, float *sb) {
    const int bytes = block_bytes(type);
    if (n == 8) {
        const __m256 d = halves8(b, bytes);
        _mm256_storeu_ps(sa, d);
        if (type == T_Q4_1 || type == T_Q5_1) _mm256_storeu_ps(sb, halves8(b + 2, bytes));
        else _mm256_storeu_ps(sb, _mm256_mul_ps(d, _mm256_set1_ps(type == T_Q5_0 ? 16.0f : 8.0f)));
        return;
    }
    for (int i = 0; i < n; ++i) {
        sa[i] = f16at(b + i * bytes);
        sb[i] = type == T_Q4_1 || type == T_Q5_1 ? f16at(b + i * bytes + 2) : sa[i] * (type == T_Q5_0 ? 16.0f : 8.0f);
    }
}

static inline __attribute__((always_inline)) void f32_blocks(const int type, const int R, const int C, const float *x,
                                                             int64_t K, const uint8_t *w, int64_t rowbytes, float *y,
                                                             int64_t ldy) {
    const int bytes = block_bytes(type);
    const int64_t nb = K / QK;
    __m512 acc[RMAX][CMAX][2];
    float sa[CMAX][8], sb[CMAX][8];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) acc[r][c][0] = acc[r][c][1] = _mm512_setzero_ps();
    for (int64_t b0 = 0; b0 < nb; b0 += 8) {
        const int n = nb - b0 < 8 ? (int)(nb - b0) : 8;
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
            prefetch_ahead(w + c * rowbytes + b0 * bytes, n * bytes);
            block_scales(type, w + c * rowbytes + b0 * bytes, n, sa[c], sb[c]);
        }
        __asm__ volatile("" ::: "memory");   /* broadcast the scales from memory (load ports), not by shuffles */
        for (int i = 0; i < n; ++i) {
            const int64_t b = b0 + i;
            __m512 w0[CMAX], w1[CMAX];
#pragma GCC unroll 4
            for (int c = 0; c < C; ++c) dec_block32(type, w + c * rowbytes + b * bytes, sa[c][i], sb[c][i], &w0[c], &w1[c]);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const __m512 x0 = _mm512_loadu_ps(x + r * K + QK * b), x1 = _mm512_loadu_ps(x + r * K + QK * b + 16);
#pragma GCC unroll 4
                for (int c = 0; c < C; ++c) {
                    acc[r][c][0] = _mm512_fmadd_ps(w0[c], x0, acc[r][c][0]);
                    acc[r][c][1] = _mm512_fmadd_ps(w1[c], x1, acc[r][c][1]);
                }
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) y[r * ldy + c] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r][c][0], acc[r][c][1]));
}

/* K types: a superblock in 4 steps of 4 vectors (16 values each) with their offsets in the superblock */
static inline __attribute__((always_inline)) void dec_super_step(const int type, const uint8_t *g, int st,
                                                                 const float *sa, const float *sb, __m512 *v, int *off) {
    if (type == T_Q6_K) {   /* step st: half n, 16 values u; vectors Q = 0..3 are values 32Q + 16u of the half */
        const int n = st >> 1, u = st & 1;
        const __m512i a = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(g + 64 * n + 16 * u)));
        const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(g + 64 * n + 32 + 16 * u)));
        const __m512i h = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(g + 128 + 32 * n + 16 * u)));
        const __m512i f = _mm512_set1_epi32(15), t = _mm512_set1_epi32(0x30);
        __m512i q[4];
        q[0] = _mm512_or_si512(_mm512_and_si512(a, f), _mm512_and_si512(_mm512_slli_epi32(h, 4), t));
        q[1] = _mm512_or_si512(_mm512_and_si512(b, f), _mm512_and_si512(_mm512_slli_epi32(h, 2), t));
        q[2] = _mm512_or_si512(_mm512_srli_epi32(a, 4), _mm512_and_si512(h, t));
        q[3] = _mm512_or_si512(_mm512_srli_epi32(b, 4), _mm512_and_si512(_mm512_srli_epi32(h, 2), t));
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {   /* (d·sc)·(q − 32), exact */
            const int i = 2 * (4 * n + k) + u;
            v[k] = _mm512_fmsub_ps(_mm512_cvtepi32_ps(q[k]), _mm512_set1_ps(sa[i]), _mm512_set1_ps(sb[i]));
            off[k] = 128 * n + 32 * k + 16 * u;
        }
        return;
    }
    /* Q4_K / Q5_K, step st = chunk i: sub-blocks 2i (low nibbles) and 2i+1 (high), 32 values each, looked up
       in tables of their 16 (32) values ws·q − wm (dec_block32 says why) */
    const int five = type == T_Q5_K;
    const uint8_t *qs = g + 16 + 32 * five + 32 * st;
    const __m512 al = _mm512_set1_ps(sa[2 * st]), bl = _mm512_set1_ps(sb[2 * st]);
    const __m512 ah = _mm512_set1_ps(sa[2 * st + 1]), bh = _mm512_set1_ps(sb[2 * st + 1]);
    const __m512 tl = _mm512_fmsub_ps(iota16(0), al, bl), th = _mm512_fmsub_ps(iota16(0), ah, bh);
#pragma GCC unroll 2
    for (int u = 0; u < 2; ++u) {
        const __m512i raw = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(qs + 16 * u)));
        if (five) {
            const __m512i qh = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(g + 16 + 16 * u)));
            const __m512i sixteen = _mm512_set1_epi32(16);
            const __m512i lo = _mm512_mask_or_epi32(_mm512_and_si512(raw, _mm512_set1_epi32(15)),
                                                    _mm512_test_epi32_mask(qh, _mm512_set1_epi32(1 << (2 * st))), raw, sixteen);
            const __m512i hi = _mm512_mask_or_epi32(_mm512_srli_epi32(raw, 4),
                                                    _mm512_test_epi32_mask(qh, _mm512_set1_epi32(2 << (2 * st))),
                                                    _mm512_srli_epi32(raw, 4), sixteen);
            v[u] = _mm512_permutex2var_ps(tl, lo, _mm512_fmsub_ps(iota16(16), al, bl));
            v[2 + u] = _mm512_permutex2var_ps(th, hi, _mm512_fmsub_ps(iota16(16), ah, bh));
        } else {
            v[u] = _mm512_permutexvar_ps(raw, tl);
            v[2 + u] = _mm512_permutexvar_ps(_mm512_srli_epi32(raw, 4), th);
        }
        off[u] = 64 * st + 16 * u;
        off[2 + u] = 64 * st + 32 + 16 * u;
    }
}

/* the per-superblock scale tables dec_super_step reads: Q4_K/Q5_K a = d·sc, b = dmin·m per sub-block;
   Q6_K a = d·sc, b = 32·d·sc per 16 values */
static inline __attribute__((always_inline)) void super_scales(const int type, const uint8_t *g, float *sa, float *sb) {
    if (type == T_Q6_K) {
        const __m512 d = _mm512_set1_ps(f16at(g + 208));
        const __m512 ds = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(g + 192)))));
        _mm512_storeu_ps(sa, ds);
        _mm512_storeu_ps(sb, _mm512_mul_ps(ds, _mm512_set1_ps(32.0f)));
    } else {
        __m256 a, b;
        k4_scales(g, &a, &b);
        _mm256_storeu_ps(sa, a);
        _mm256_storeu_ps(sb, b);
    }
}

static inline __attribute__((always_inline)) void f32_super(const int type, const int R, const int C, const float *x,
                                                            int64_t K, const uint8_t *w, int64_t rowbytes, float *y,
                                                            int64_t ldy) {
    const int bytes = block_bytes(type);
    __m512 acc[RMAX][CMAX][2];
    float sa[CMAX][16], sb[CMAX][16];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) acc[r][c][0] = acc[r][c][1] = _mm512_setzero_ps();
    for (int64_t s = 0; s < K / QKK; ++s) {
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
            prefetch_ahead(w + c * rowbytes + s * bytes, bytes);
            super_scales(type, w + c * rowbytes + s * bytes, sa[c], sb[c]);
        }
        __asm__ volatile("" ::: "memory");   /* broadcast the scales from memory (load ports), not by shuffles */
#pragma GCC unroll 4
        for (int st = 0; st < 4; ++st) {
            __m512 v[CMAX][4];
            int off[4];
#pragma GCC unroll 4
            for (int c = 0; c < C; ++c) dec_super_step(type, w + c * rowbytes + s * bytes, st, sa[c], sb[c], v[c], off);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const float *xr = x + r * K + QKK * s;
#pragma GCC unroll 4
                for (int k = 0; k < 4; ++k) {
                    const __m512 xv = _mm512_loadu_ps(xr + off[k]);
                    const int half = type == T_Q6_K ? st & 1 : k & 1;   /* = (off[k] >> 4) & 1 */
#pragma GCC unroll 4
                    for (int c = 0; c < C; ++c) acc[r][c][half] = _mm512_fmadd_ps(v[c][k], xv, acc[r][c][half]);
                }
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) y[r * ldy + c] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r][c][0], acc[r][c][1]));
}

/* float weights: 32 values per step, the tail through masked loads */
static inline __attribute__((always_inline)) __m512 load_float16(const int type, const uint8_t *p, int64_t i, __mmask16 m) {
    if (type == T_F32) return _mm512_maskz_loadu_ps(m, (const float *)p + i);
    const __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)p + i);
    if (type == T_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

static inline __attribute__((always_inline)) void f32_float(const int type, const int R, const int C, const float *x,
                                                            int64_t K, const uint8_t *w, int64_t rowbytes, float *y,
                                                            int64_t ldy) {
    __m512 acc[RMAX][CMAX][2];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) acc[r][c][0] = acc[r][c][1] = _mm512_setzero_ps();
    for (int64_t k = 0; k < K; k += 32) {
        const int64_t n = K - k;
        const __mmask16 m0 = n >= 16 ? 0xFFFF : (__mmask16)((1u << n) - 1);
        const __mmask16 m1 = n >= 32 ? 0xFFFF : n <= 16 ? 0 : (__mmask16)((1u << (n - 16)) - 1);
        __m512 w0[CMAX], w1[CMAX];
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
            prefetch_ahead(w + c * rowbytes + k * block_bytes(type), 32 * block_bytes(type));
            w0[c] = load_float16(type, w + c * rowbytes, k, m0);
            w1[c] = load_float16(type, w + c * rowbytes, k + 16, m1);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m512 x0 = _mm512_maskz_loadu_ps(m0, x + r * K + k), x1 = _mm512_maskz_loadu_ps(m1, x + r * K + k + 16);
#pragma GCC unroll 4
            for (int c = 0; c < C; ++c) {
                acc[r][c][0] = _mm512_fmadd_ps(w0[c], x0, acc[r][c][0]);
                acc[r][c][1] = _mm512_fmadd_ps(w1[c], x1, acc[r][c][1]);
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) y[r * ldy + c] = _mm512_reduce_add_ps(_mm512_add_ps(acc[r][c][0], acc[r][c][1]));
}

static inline __attribute__((always_inline)) void f32_cols(const int type, const int R, const int C, const float *x,
                                                           int64_t K, const uint8_t *w, int64_t rowbytes, float *y,
                                                           int64_t ldy) {
    if (is_float_type(type))
        f32_float(type, R, C, x, K, w, rowbytes, y, ldy);
    else if (block_values(type) == QKK)
        f32_super(type, R, C, x, K, w, rowbytes, y, ldy);
    else
        f32_blocks(type, R, C, x, K, w, rowbytes, y, ldy);
}

#endif /* SPX_AVX512 */

/* ---------------------------------------------------------------- AVX2 kernels (FMA, F16C; AVX-VNNI if built with it) */
#if defined(SPX_AVX2)

/* quantize_row's arithmetic, 8 values at a time (the same operations, so the same bytes) */
static void quantize_row_simd(const float *x, int64_t K, uint8_t *out) {
    const int64_t groups = (K + QKK - 1) / QKK;
    memset(out, 0, groups * XG);
    const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    for (int64_t g = 0; g < groups; ++g) {
        uint8_t *o = out + g * XG;
        if ((g + 1) * QKK > K) memset(o, 128, 256);
        for (int j = 0; j < 8 && g * QKK + QK * j < K; ++j) {
            const float *xb = x + g * QKK + QK * j;
            __m256 v[4];
            __m256 m = _mm256_setzero_ps();
            for (int i = 0; i < 4; ++i) {
                v[i] = _mm256_loadu_ps(xb + 8 * i);
                m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[i]));
            }
            __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
            m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
            const float amax = _mm_cvtss_f32(_mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1)));
            const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            __m256i q[4];
            for (int i = 0; i < 4; ++i)
                q[i] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v[i], _mm256_set1_ps(id)), lo), hi));
            const __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
            __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
            s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
            const int32_t sum = _mm_cvtsi128_si32(_mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1)));
            /* 32 bytes in value order (packs interleave the 128-bit lanes; the permute undoes it) */
            const __m256i b = _mm256_permutevar8x32_epi32(
                _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3])),
                _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            uint32_t words[8], signs[8];
            _mm256_storeu_si256((__m256i *)words, _mm256_xor_si256(b, _mm256_set1_epi8((char)0x80)));
            _mm256_storeu_si256((__m256i *)signs, b);
            for (int i = 0; i < 8; ++i) {
                memcpy(o + 64 * (i & 3) + 32 * (i >> 2) + 4 * j, &words[i], 4);
                memcpy(o + XG_S + 64 * (i & 3) + 32 * (i >> 2) + 4 * j, &signs[i], 4);
            }
            ((float *)(o + XG_DX))[j] = ((float *)(o + XG_DX))[8 + j] = d;
            ((float *)(o + XG_XS))[j] = d * (float)sum;
        }
    }
}

/* ---- q8 mode: a group decoded into 8 vectors w[2k + h], 32-bit lane j = 4 values of half h of block j */
typedef struct {
    __m256i w[8];        /* signed 8-bit weights (Q8_0 without VNNI: |w|) */
#if !SPX_VNNI
    __m256i sw[8];       /* Q8_0 without VNNI: the signed weights, for their signs */
#endif
    __m256i corr[2];     /* −128·Σw per lane of each half: the x bytes are q + 128 */
    __m256 a[2], b;
} wq;

static inline void transpose4(__m256i c0, __m256i c1, __m256i c2, __m256i c3, __m256i *u) {
    /* u[e] = [c0.e c1.e c2.e c3.e | c0.(e+4) c1.(e+4) c2.(e+4) c3.(e+4)] (dwords) */
    const __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
    const __m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
    u[0] = _mm256_unpacklo_epi64(t0, t2);
    u[1] = _mm256_unpackhi_epi64(t0, t2);
    u[2] = _mm256_unpacklo_epi64(t1, t3);
    u[3] = _mm256_unpackhi_epi64(t1, t3);
}

static inline __m256i ld32(const uint8_t *p) { return _mm256_loadu_si256((const __m256i *)p); }
static inline __m256i bcast32(const uint8_t *p) { return _mm256_set1_epi32((int)rd32(p)); }

static inline __attribute__((always_inline)) __m256i dot4(__m256i acc, __m256i u, __m256i w) {
#if SPX_VNNI
    return _mm256_dpbusd_avx_epi32(acc, u, w);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, w), _mm256_set1_epi16(1)));
#endif
}

static inline __attribute__((always_inline)) void decode_q8(const int type, const uint8_t *g, wq *o) {
    const __m256i nib = _mm256_set1_epi8(15);
    o->b = _mm256_setzero_ps();
    if (type == T_Q4_K || type == T_Q5_K) {
        const uint8_t *qs = g + (type == T_Q5_K ? 48 : 16);
        __m256i u[4];
        transpose4(ld32(qs), ld32(qs + 32), ld32(qs + 64), ld32(qs + 96), u);
        const __m256i shr = _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4);
        const __m256i dup[2] = {_mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3), _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7)};
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            const int k = i >> 1, h = i & 1;
            o->w[i] = _mm256_and_si256(_mm256_srlv_epi32(_mm256_permutevar8x32_epi32(u[k], dup[h]), shr), nib);
            if (type == T_Q5_K) {   /* bit j of each byte of qh dword 4h + k, to bit 4 */
                const __m256i bits = _mm256_srlv_epi32(bcast32(g + 16 + 4 * (4 * h + k)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
                o->w[i] = _mm256_or_si256(o->w[i], _mm256_slli_epi32(_mm256_and_si256(bits, _mm256_set1_epi8(1)), 4));
            }
        }
        k4_scales(g, &o->a[0], &o->b);
        o->a[1] = o->a[0];
    } else if (type == T_Q6_K) {
        __m256i u[4];
        transpose4(ld32(g), ld32(g + 32), ld32(g + 64), ld32(g + 96), u);
        const __m256i pick[2] = {_mm256_setr_epi32(0, 1, 0, 1, 2, 3, 2, 3), _mm256_setr_epi32(4, 5, 4, 5, 6, 7, 6, 7)};
        const __m256i shl = _mm256_setr_epi32(0, 0, 4, 4, 0, 0, 4, 4), shh = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            const int k = i >> 1, h = i & 1;
            const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_permutevar8x32_epi32(u[k], pick[h]), shl), nib);
            const __m256i qh = _mm256_blend_epi32(bcast32(g + 128 + 4 * (4 * h + k)), bcast32(g + 160 + 4 * (4 * h + k)), 0xF0);
            const __m256i hi = _mm256_slli_epi32(_mm256_and_si256(_mm256_srlv_epi32(qh, shh), _mm256_set1_epi8(3)), 4);
            o->w[i] = _mm256_sub_epi8(_mm256_or_si256(lo, hi), _mm256_set1_epi8(32));
        }
        const __m128i sc = _mm_loadu_si128((const __m128i *)(g + 192));
        const __m256 d = _mm256_set1_ps(f16at(g + 208));
        o->a[0] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                       _mm_shuffle_epi8(sc, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0)))));
        o->a[1] = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                       _mm_shuffle_epi8(sc, _mm_setr_epi8(1, 3, 5, 7, 9, 11, 13, 15, 0, 0, 0, 0, 0, 0, 0, 0)))));
    } else if (type == T_Q8_0) {   /* 8 blocks x 8 dwords, transposed: w[2k + h] lane j = block j dword 4h + k */
        __m256i s[8], r[8];
        for (int i = 0; i < 8; ++i) r[i] = ld32(g + 34 * i + 2);
        transpose4(r[0], r[1], r[2], r[3], s);
        transpose4(r[4], r[5], r[6], r[7], s + 4);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            o->w[2 * k] = _mm256_permute2x128_si256(s[k], s[4 + k], 0x20);
            o->w[2 * k + 1] = _mm256_permute2x128_si256(s[k], s[4 + k], 0x31);
        }
        o->a[0] = o->a[1] = halves8(g, 34);
    } else {   /* Q4_0, Q4_1, Q5_0, Q5_1: 8 blocks */
        const int bytes = block_bytes(type), qs = type == T_Q4_0 ? 2 : type == T_Q4_1 ? 4 : type == T_Q5_0 ? 6 : 8;
        const uint8_t *b = g + qs;
        __m256i p[4], u[4];
        for (int i = 0; i < 4; ++i)
            p[i] = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(b + i * bytes))),
                                           _mm_loadu_si128((const __m128i *)(b + (4 + i) * bytes)), 1);
        transpose4(p[0], p[1], p[2], p[3], u);   /* u[k] lane j = block j dword k */
        const int five = type == T_Q5_0 || type == T_Q5_1;
        __m256i qh = _mm256_setzero_si256();
        if (five)
            qh = _mm256_setr_epi32((int)rd32(g + qs - 4), (int)rd32(g + qs - 4 + bytes), (int)rd32(g + qs - 4 + 2 * bytes),
                                   (int)rd32(g + qs - 4 + 3 * bytes), (int)rd32(g + qs - 4 + 4 * bytes),
                                   (int)rd32(g + qs - 4 + 5 * bytes), (int)rd32(g + qs - 4 + 6 * bytes),
                                   (int)rd32(g + qs - 4 + 7 * bytes));
        const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12,
                                                0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12);
        const __m256i bit = _mm256_set1_epi32(0x08040201);
        const __m256i off = _mm256_set1_epi8(type == T_Q4_0 ? 8 : type == T_Q5_0 ? 16 : 0);
#pragma GCC unroll 8
        for (int i = 0; i < 8; ++i) {
            const int k = i >> 1, h = i & 1;
            __m256i v = _mm256_and_si256(h ? _mm256_srli_epi16(u[k], 4) : u[k], nib);
            if (five) {   /* bits 16h + 4k + t of qh, t = byte: to bit 4 */
                const __m256i t = _mm256_shuffle_epi8(_mm256_srl_epi32(qh, _mm_cvtsi32_si128(16 * h + 4 * k)), spread);
                v = _mm256_or_si256(v, _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(t, bit), bit), _mm256_set1_epi8(16)));
            }
            o->w[i] = _mm256_sub_epi8(v, off);
        }
        o->a[0] = o->a[1] = halves8(g, bytes);
        if (type == T_Q4_1 || type == T_Q5_1) o->b = halves8(g + 2, bytes);
    }
#if !SPX_VNNI
    if (type == T_Q8_0) {   /* maddubs would saturate on (q + 128)·w: x is used signed, w as |w| */
        for (int i = 0; i < 8; ++i) {
            o->sw[i] = o->w[i];
            o->w[i] = _mm256_abs_epi8(o->w[i]);
        }
        o->corr[0] = o->corr[1] = _mm256_setzero_si256();
        return;
    }
#endif
    o->corr[0] = o->corr[1] = _mm256_setzero_si256();
    if (unsigned_weights(type)) return;
    __m256i c[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    for (int i = 0; i < 8; ++i) c[i & 1] = dot4(c[i & 1], _mm256_set1_epi8((char)0x80), o->w[i]);
    o->corr[0] = _mm256_sub_epi32(_mm256_setzero_si256(), c[0]);
    o->corr[1] = _mm256_sub_epi32(_mm256_setzero_si256(), c[1]);
}

/* products of 8-bit pairs summed in 16 bits before widening, as many at a time as cannot overflow: a pair is
   at most 2·255·16 (Q4_0, Q5_0: w in −16..15 times q + 128) or 2·31·127 (unsigned weights times q), so 4
   fit in 16 bits; Q6_K's 2·255·32 two; Q8_0 (|w|·|q|) one */
static inline int pairs16(int type) { return type == T_Q6_K ? 2 : type == T_Q8_0 ? 1 : 4; }

static inline __attribute__((always_inline)) void q8_row(const int type, const wq *o, const uint8_t *xg, __m256 *acc,
                                                         __m256 *accb) {
    __m256i s[2] = {o->corr[0], o->corr[1]};
#if SPX_VNNI
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i)
        s[i & 1] = unsigned_weights(type) ? dot4(s[i & 1], o->w[i], _mm256_load_si256((const __m256i *)(xg + XG_S + 32 * i)))
                                          : dot4(s[i & 1], _mm256_load_si256((const __m256i *)(xg + 32 * i)), o->w[i]);
#else
    const int n = pairs16(type);
#pragma GCC unroll 2
    for (int h = 0; h < 2; ++h)
#pragma GCC unroll 4
        for (int k = 0; k < 4; k += n) {
            __m256i p = _mm256_setzero_si256();
#pragma GCC unroll 4
            for (int e = 0; e < n; ++e) {
                const int i = 2 * (k + e) + h;
                const __m256i xv = _mm256_load_si256((const __m256i *)(xg + 32 * i));
                if (unsigned_weights(type))
                    p = _mm256_add_epi16(p, _mm256_maddubs_epi16(o->w[i], _mm256_load_si256((const __m256i *)(xg + XG_S + 32 * i))));
                else if (type == T_Q8_0)   /* |w| · (x with w's sign) */
                    p = _mm256_add_epi16(p, _mm256_maddubs_epi16(o->w[i], _mm256_sign_epi8(
                                                    _mm256_xor_si256(xv, _mm256_set1_epi8((char)0x80)), o->sw[i])));
                else
                    p = _mm256_add_epi16(p, _mm256_maddubs_epi16(xv, o->w[i]));
            }
            s[h] = _mm256_add_epi32(s[h], _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
        }
#endif
    const __m256 dx = _mm256_load_ps((const float *)(xg + XG_DX));
    const __m256 t0 = _mm256_mul_ps(o->a[0], dx);
    const __m256 t1 = type == T_Q6_K ? _mm256_mul_ps(o->a[1], dx) : t0;
    acc[0] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[0]), t0, acc[0]);
    acc[1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[1]), t1, acc[1]);
    if (q8_kind(type) != KIND_S) *accb = _mm256_fmadd_ps(o->b, _mm256_load_ps((const float *)(xg + XG_XS)), *accb);
}

static inline __attribute__((always_inline)) void q8_rows(const int type, const int R, const uint8_t *xq, int64_t K,
                                                          const uint8_t *w, int64_t nout, int64_t rowbytes, float *y,
                                                          int64_t ldy) {
    const int64_t groups = (K + QKK - 1) / QKK, stride = xq_stride(K), nblocks = K / QK;
    const int bytes = block_bytes(type), kt = block_values(type) == QKK, kind = q8_kind(type);
    uint8_t pad[8 * 34];
    for (int64_t c = 0; c < nout; ++c) {
        const uint8_t *wr = w + c * rowbytes;
        __m256 acc[RMAX][2], accb[RMAX];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = accb[r] = _mm256_setzero_ps();
        for (int64_t s = 0; s < groups; ++s) {
            const uint8_t *g = wr + (kt ? s : 8 * s) * bytes;
            if (!kt && nblocks - 8 * s < 8) {   /* a row's last, partial group: zero blocks after it */
                memset(pad, 0, sizeof pad);
                memcpy(pad, g, (nblocks - 8 * s) * bytes);
                g = pad;
            }
            wq o;
            decode_q8(type, g, &o);
            const uint8_t *xg = xq + s * XG;
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) q8_row(type, &o, xg + r * stride, acc[r], &accb[r]);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const float main = hsum8(_mm256_add_ps(acc[r][0], acc[r][1])), mins = hsum8(accb[r]);
            y[r * ldy + c] = kind == KIND_SM ? main + mins : kind == KIND_KM ? main - mins : main;
        }
    }
}

/* ---- f32 mode: one 8-lane accumulator per (row, output); each unit (a 32-value block or a superblock) is
   decoded in steps of a few vectors to gguf's exact values (as in the AVX-512 kernels) */
#define CMAX 4
#define COLS_F32(R) ((R) == 1 ? 4 : (R) <= 3 ? 2 : 1)

static inline int f32_steps(int type) { return type == T_Q6_K ? 8 : block_values(type) == QKK ? 16 : 2; }

/* step st of a unit at g: NV = 2 vectors (Q6_K: 4) and their offsets in the unit. sa/sb: the unit's scales
   (32-value types: d and m or off·d; Q4_K/Q5_K: ws, wm per sub-block; Q6_K: d·sc, 32·d·sc per 16 values) */
static inline __attribute__((always_inline)) void dec_step(const int type, const uint8_t *g, int st, const float *sa,
                                                           const float *sb, __m256 *v, int *off) {
    const __m256i f = _mm256_set1_epi32(15);
#define U8(p) _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p)))
    if (type == T_Q8_0) {
        const __m256 d = _mm256_broadcast_ss(sa);
        v[0] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(g + 2 + 16 * st)))), d);
        v[1] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(g + 10 + 16 * st)))), d);
        off[0] = 16 * st;
        off[1] = 16 * st + 8;
    } else if (type == T_Q6_K) {   /* st = (half n, 8 values m): vectors Q = 0..3 are values 32Q + 8m of the half */
        const int n = st >> 2, m = st & 3;
        const __m256i a = U8(g + 64 * n + 8 * m), b = U8(g + 64 * n + 32 + 8 * m), h = U8(g + 128 + 32 * n + 8 * m);
        const __m256i t = _mm256_set1_epi32(0x30);
        __m256i q[4];
        q[0] = _mm256_or_si256(_mm256_and_si256(a, f), _mm256_and_si256(_mm256_slli_epi32(h, 4), t));
        q[1] = _mm256_or_si256(_mm256_and_si256(b, f), _mm256_and_si256(_mm256_slli_epi32(h, 2), t));
        q[2] = _mm256_or_si256(_mm256_srli_epi32(a, 4), _mm256_and_si256(h, t));
        q[3] = _mm256_or_si256(_mm256_srli_epi32(b, 4), _mm256_and_si256(_mm256_srli_epi32(h, 2), t));
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            const int i = 8 * n + 2 * k + (m >> 1);
            v[k] = _mm256_fmsub_ps(_mm256_cvtepi32_ps(q[k]), _mm256_broadcast_ss(sa + i), _mm256_broadcast_ss(sb + i));
            off[k] = 128 * n + 32 * k + 8 * m;
        }
    } else if (type == T_Q4_K || type == T_Q5_K) {   /* st = (chunk i, 8 values m): sub-blocks 2i and 2i+1 */
        const int i = st >> 2, m = st & 3, five = type == T_Q5_K;
        const __m256i raw = U8(g + 16 + 32 * five + 32 * i + 8 * m);
        __m256i lo = _mm256_and_si256(raw, f), hi = _mm256_srli_epi32(raw, 4);
        if (five) {
            const __m256i qh = U8(g + 16 + 8 * m);
            lo = _mm256_or_si256(lo, _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(qh, 2 * i), _mm256_set1_epi32(1)), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(qh, 2 * i + 1), _mm256_set1_epi32(1)), 4));
        }
        v[0] = _mm256_fmsub_ps(_mm256_cvtepi32_ps(lo), _mm256_broadcast_ss(sa + 2 * i), _mm256_broadcast_ss(sb + 2 * i));
        v[1] = _mm256_fmsub_ps(_mm256_cvtepi32_ps(hi), _mm256_broadcast_ss(sa + 2 * i + 1), _mm256_broadcast_ss(sb + 2 * i + 1));
        off[0] = 64 * i + 8 * m;
        off[1] = 64 * i + 32 + 8 * m;
    } else {   /* Q4_0, Q4_1, Q5_0, Q5_1: st = 8 bytes of qs: values 8st.. (low nibbles) and 16 + 8st.. (high) */
        const int one = type == T_Q4_1 || type == T_Q5_1, five = type == T_Q5_0 || type == T_Q5_1;
        const __m256i raw = U8(g + 2 + 2 * one + 4 * five + 8 * st);
        __m256i lo = _mm256_and_si256(raw, f), hi = _mm256_srli_epi32(raw, 4);
        if (five) {
            const __m256i qh = _mm256_set1_epi32((int)rd32(g + 2 + 2 * one));
            const __m256i bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
            const __m256i sl = _mm256_and_si256(_mm256_srli_epi32(qh, 8 * st), bits);
            const __m256i sh = _mm256_and_si256(_mm256_srli_epi32(qh, 16 + 8 * st), bits);
            lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_cmpeq_epi32(sl, bits), _mm256_set1_epi32(16)));
            hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_cmpeq_epi32(sh, bits), _mm256_set1_epi32(16)));
        }
        const __m256 d = _mm256_broadcast_ss(sa), m = _mm256_broadcast_ss(sb);
        v[0] = one ? _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo), d, m) : _mm256_fmsub_ps(_mm256_cvtepi32_ps(lo), d, m);
        v[1] = one ? _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi), d, m) : _mm256_fmsub_ps(_mm256_cvtepi32_ps(hi), d, m);
        off[0] = 8 * st;
        off[1] = 16 + 8 * st;
    }
#undef U8
}

/* the scales of n units from g on (n <= 8 blocks, or one superblock) into sa/sb (see dec_step) */
static inline __attribute__((always_inline)) void unit_scales(const int type, const uint8_t *g, int n, float *sa, float *sb) {
    if (type == T_Q6_K) {
        const __m256 d = _mm256_set1_ps(f16at(g + 208));
        for (int i = 0; i < 2; ++i) {
            const __m256 ds = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(g + 192 + 8 * i)))));
            _mm256_storeu_ps(sa + 8 * i, ds);
            _mm256_storeu_ps(sb + 8 * i, _mm256_mul_ps(ds, _mm256_set1_ps(32.0f)));
        }
        return;
    }
    if (type == T_Q4_K || type == T_Q5_K) {
        __m256 a, b;
        k4_scales(g, &a, &b);
        _mm256_storeu_ps(sa, a);
        _mm256_storeu_ps(sb, b);
        return;
    }
    const int bytes = block_bytes(type), one = type == T_Q4_1 || type == T_Q5_1;
    if (n == 8) {
        const __m256 d = halves8(g, bytes);
        _mm256_storeu_ps(sa, d);
        _mm256_storeu_ps(sb, one ? halves8(g + 2, bytes) : _mm256_mul_ps(d, _mm256_set1_ps(type == T_Q5_0 ? 16.0f : 8.0f)));
        return;
    }
    for (int i = 0; i < n; ++i) {
        sa[i] = f16at(g + i * bytes);
        sb[i] = one ? f16at(g + i * bytes + 2) : type == T_Q8_0 ? 0.0f : sa[i] * (type == T_Q5_0 ? 16.0f : 8.0f);
    }
}

static inline __attribute__((always_inline)) void f32_quant(const int type, const int R, const int C, const float *x,
                                                            int64_t K, const uint8_t *w, int64_t rowbytes, float *y,
                                                            int64_t ldy) {
    const int bytes = block_bytes(type), per = block_values(type), steps = f32_steps(type);
    const int nv = type == T_Q6_K ? 4 : 2, span = per == QKK ? 1 : 8;   /* units whose scales are read together */
    const int64_t units = K / per;
    __m256 acc[RMAX][CMAX];
    float sa[CMAX][16], sb[CMAX][16];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
    for (int64_t u0 = 0; u0 < units; u0 += span) {
        const int n = units - u0 < span ? (int)(units - u0) : span;
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
            prefetch_ahead(w + c * rowbytes + u0 * bytes, n * bytes);
            unit_scales(type, w + c * rowbytes + u0 * bytes, n, sa[c], sb[c]);
        }
        __asm__ volatile("" ::: "memory");   /* broadcast the scales from memory (load ports), not by shuffles */
        for (int i = 0; i < n; ++i) {
            const int64_t u = u0 + i;
            const int si = per == QKK ? 0 : i;
#pragma GCC unroll 16
            for (int st = 0; st < steps; ++st) {
                __m256 v[CMAX][4];
                int off[4];
#pragma GCC unroll 4
                for (int c = 0; c < C; ++c) dec_step(type, w + c * rowbytes + u * bytes, st, sa[c] + si, sb[c] + si, v[c], off);
#pragma GCC unroll 8
                for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
                    for (int k = 0; k < nv; ++k) {
                        const __m256 xv = _mm256_loadu_ps(x + r * K + u * per + off[k]);
#pragma GCC unroll 4
                        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(v[c][k], xv, acc[r][c]);
                    }
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) y[r * ldy + c] = hsum8(acc[r][c]);
}

/* float weights: 8 values per vector; the last K % 8 through zero-padded copies */
static inline __attribute__((always_inline)) __m256 load_float8(const int type, const uint8_t *p, int64_t i) {
    if (type == T_F32) return _mm256_loadu_ps((const float *)p + i);
    const __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + i));
    if (type == T_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

static inline __attribute__((always_inline)) void f32_float(const int type, const int R, const int C, const float *x,
                                                            int64_t K, const uint8_t *w, int64_t rowbytes, float *y,
                                                            int64_t ldy) {
    __m256 acc[RMAX][CMAX];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) acc[r][c] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
        __m256 wv[CMAX];
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) {
            if (!(k & 15)) prefetch_ahead(w + c * rowbytes + k * block_bytes(type), 16 * block_bytes(type));
            wv[c] = load_float8(type, w + c * rowbytes, k);
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            const __m256 xv = _mm256_loadu_ps(x + r * K + k);
#pragma GCC unroll 4
            for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(wv[c], xv, acc[r][c]);
        }
    }
    if (k < K) {
        float wt[CMAX][8] = {{0}}, xt[8];
        for (int c = 0; c < C; ++c) decode_row_tail(type, w + c * rowbytes, k, K, wt[c]);
        for (int r = 0; r < R; ++r) {
            memset(xt, 0, sizeof xt);
            memcpy(xt, x + r * K + k, (K - k) * 4);
            for (int c = 0; c < C; ++c) acc[r][c] = _mm256_fmadd_ps(_mm256_loadu_ps(wt[c]), _mm256_loadu_ps(xt), acc[r][c]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) y[r * ldy + c] = hsum8(acc[r][c]);
}

static inline __attribute__((always_inline)) void f32_cols(const int type, const int R, const int C, const float *x,
                                                           int64_t K, const uint8_t *w, int64_t rowbytes, float *y,
                                                           int64_t ldy) {
    if (is_float_type(type))
        f32_float(type, R, C, x, K, w, rowbytes, y, ldy);
    else
        f32_quant(type, R, C, x, K, w, rowbytes, y, ldy);
}
#endif /* SPX_AVX2 */

/* ---------------------------------------------------------------- dispatch (AVX2 and AVX-512 builds) */
#if defined(SPX_AVX512) || defined(SPX_AVX2)
static inline __attribute__((always_inline)) void f32_rows(const int type, const int R, const float *x, int64_t K,
                                                           const uint8_t *w, int64_t nout, int64_t rowbytes, float *y,
                                                           int64_t ldy) {
    const int C = COLS_F32(R);
    int64_t c = 0;
    for (; c + C <= nout; c += C) f32_cols(type, R, C, x, K, w + c * rowbytes, rowbytes, y + c, ldy);
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
#define BY_TYPE(F, ...)                                                          \
    switch (type) {                                                              \
        case T_Q4_0: BY_ROWS(F, T_Q4_0, __VA_ARGS__) break;                       \
        case T_Q4_1: BY_ROWS(F, T_Q4_1, __VA_ARGS__) break;                       \
        case T_Q5_0: BY_ROWS(F, T_Q5_0, __VA_ARGS__) break;                       \
        case T_Q5_1: BY_ROWS(F, T_Q5_1, __VA_ARGS__) break;                       \
        case T_Q8_0: BY_ROWS(F, T_Q8_0, __VA_ARGS__) break;                       \
        case T_Q4_K: BY_ROWS(F, T_Q4_K, __VA_ARGS__) break;                       \
        case T_Q5_K: BY_ROWS(F, T_Q5_K, __VA_ARGS__) break;                       \
        case T_Q6_K: BY_ROWS(F, T_Q6_K, __VA_ARGS__) break;                       \
        default: break;                                                          \
    }
#define BY_FLOAT_TYPE(F, ...)                                                    \
    switch (type) {                                                              \
        case T_F32: BY_ROWS(F, T_F32, __VA_ARGS__) break;                         \
        case T_F16: BY_ROWS(F, T_F16, __VA_ARGS__) break;                         \
        case T_BF16: BY_ROWS(F, T_BF16, __VA_ARGS__) break;                       \
        default: break;                                                          \
    }

static void simd_kernel(int type, int mode, const float *x, const uint8_t *xq, int64_t R, int64_t K,
                        const uint8_t *w, int64_t nout, int64_t rowbytes, float *y, int64_t ldy) {
    if (is_float_type(type)) {
        BY_FLOAT_TYPE(f32_rows, x, K, w, nout, rowbytes, y, ldy)
    } else if (mode == MODE_Q8) {
        BY_TYPE(q8_rows, xq, K, w, nout, rowbytes, y, ldy)
    } else {
        BY_TYPE(f32_rows, x, K, w, nout, rowbytes, y, ldy)
    }
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
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t m = 0; m < M; ++m) {
#ifdef SPX_SIMD
            quantize_row_simd(x + m * K, K, xq + m * xq_stride(K));
#else
            quantize_row(x + m * K, K, xq + m * xq_stride(K));
#endif
        }
    }
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
            if (a < b)
                segment_rows(types[s], mode, x, xq, M, K, data[s], rb, a, b, y + col, N);
            start += bytes;
            col += rows[s];
        }
    }
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

/* Which build this is: 2 AVX-512, 1 AVX2, 0 portable; +4 when its integer dot products are VNNI. */
int spx_build(void) {
#if defined(SPX_AVX512)
    return 2 + 4 * SPX_VNNI;
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
