/* quant.c's q8 arithmetic, the rules every build keeps (quant.c's header states them): activations quantized
   per row (quantize_row), the weight kinds, a group's exact integer decoding (decode_group) and its sums.
   Included by quant.c before the portable kernels, which compute with these alone. */
/* ---------------------------------------------------------------- q8: activations and the arithmetic */

/* 1/d for a block's scale d, 0 where the block is bad or d is 0 or so small (below 2^-128) that 1/d overflows:
   such a block's q are all 0 (x·inf would be NaN for a zero x), in every build and in quant_ref */
static inline float inverse_scale(float d, int bad) {
    const float inv = !bad && d != 0.0f ? 1.0f / d : 0.0f;
    return inv <= FLT_MAX ? inv : 0.0f;
}

/* One row of X quantized into the layout above. amax/127 and 1/d are correctly rounded divisions, x·(1/d)
   is rounded to the nearest integer, ties to even (numpy's rint; the SIMD conversions do the same). A block
   holding a NaN or an infinity gets scale NaN and q = 0, in every build.
   `whole` (K a multiple of 256): one scale per group of 256 values, the largest |x| of the group (a NaN or an
   infinity anywhere in it makes the whole group's scale NaN); every other step the same. */
static void quantize_row(const float *x, int64_t K, uint8_t *out, int whole) {
    const int64_t groups = (K + QKK - 1) / QKK;
    memset(out, 0, groups * XG);
    for (int64_t g = 0; g < groups; ++g) {
        uint8_t *o = out + g * XG;
        float *dxv = (float *)(o + XG_DX), *xsv = (float *)(o + XG_XS), *xhv = (float *)(o + XG_XH);
        int16_t *nsv = (int16_t *)(o + XG_NS);
        memset(o, 128, 256);
        float bmax[8] = {0};
        int bbad[8] = {0};   /* a NaN or infinity: the block's scale is NaN, its q are 0 (the row's results NaN) */
        for (int j = 0; j < 8 && g * QKK + QK * j < K; ++j)
            for (int p = 0; p < QK; ++p) {
                const float v = x[g * QKK + QK * j + p];
                bmax[j] = fmaxf(bmax[j], fabsf(v));
                bbad[j] |= !(fabsf(v) < INFINITY);
            }
        if (whole)
            for (int j = 1; j < 8; ++j) {
                bmax[0] = fmaxf(bmax[0], bmax[j]);
                bbad[0] |= bbad[j];
            }
        for (int j = 0; j < 8; ++j) {
            int64_t base = g * QKK + QK * j;
            if (base >= K) break;
            const float *xb = x + base;
            const float amax = bmax[whole ? 0 : j];
            const int bad = bbad[whole ? 0 : j];
            float d = bad ? NAN : amax / 127.0f, id = inverse_scale(d, bad);
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
            nsv[j] = (int16_t)(-16 * half[0]);
            nsv[8 + j] = (int16_t)(-16 * half[1]);
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
   tree8(acc[0..7] + acc[8..15]) + (SM) or − (KM) tree8(accb), − (K2) tree8(accb[0..7] + accb[8..15]).
   G (Q4_K; activations per 256 values, one scale D a group): w = d·sc_j·q − dmin·m_j with sc_j, m_j the 6-bit
   scale and min of block j. Per group, exact in int32: S = Σ_j sc_j·S_j (S_j = Σ q·w over block j) and
   M = Σ_j m_j·Σq_j; then in float32  acc = fma((float)S, d·D, acc);  acc = fma(−(float)M, dmin·D, acc),  over
   the groups in order from acc = 0; the result is acc. (|S| < 2^25: its conversion rounds, the same in every
   build.)
   G6 (Q6_K; activations per 256 values): w = d·sc_i·(q − 32) with sc_i the signed 8-bit scale of values
   16i..16i + 15 (half h of block j: i = 2j + h). Per group, exact in int32: S = Σ_i sc_i·S_i (S_i = Σ q·w over
   those 16 values, w = q − 32; |S| ≤ 16·128·16·32·127 < 2^31); then acc = fma((float)S, d·D, acc) over the
   groups in order from acc = 0; the result is acc. */
enum { KIND_S = 0, KIND_SM = 1, KIND_KM = 2, KIND_K2 = 3, KIND_G = 4, KIND_G6 = 5 };

static int q8_kind(int type) {
    return type == T_Q4_1 || type == T_Q5_1 ? KIND_SM : type == T_Q4_K_G ? KIND_G
           : type == T_Q6_K_G || type == T_Q6_K_PG ? KIND_G6
           : type == T_Q4_K || type == T_Q5_K ? KIND_KM : type == T_Q2_K ? KIND_K2 : KIND_S;
}

/* KIND_G and KIND_G6: one running sum a group, kept in lane 0 by the SIMD kernels */
static inline int grouped_kind(int kind) { return kind == KIND_G || kind == KIND_G6; }

/* the types whose q8 activations are quantized per 256 values (KIND_G, KIND_G6; Q4_K_P16 is Q4_K packed, whose
   kernel computes KIND_G only) */
static inline int group_scaled(int type) {
    return type == T_Q4_K_G || type == T_Q4_K_P16 || type == T_Q6_K_G || type == T_Q6_K_PG;
}

/* KIND_G's float step for one group: the scalar every build runs (fmaf rounds once, as the fma instructions) */
static inline float g_step(float acc, int32_t S, int32_t M, float d, float dmin, float D) {
    acc = fmaf((float)S, d * D, acc);
    return fmaf(-(float)M, dmin * D, acc);
}

static inline float g6_step(float acc, int32_t S, float d, float D) { return fmaf((float)S, d * D, acc); }   /* G6's */

static inline int unsigned_weights(int type) {   /* q, no offset */
    return q8_kind(type) != KIND_S && q8_kind(type) != KIND_G6;
}

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
    int sc[16], m[8];  /* KIND_G: the blocks' 6-bit scales (sc[j]) and mins; KIND_G6: the 16 scales sc[i], */
    float d, dmin;     /* and the group's f16 scales */
} qgroup;

static void decode_group(int type, const uint8_t *w, int nb, qgroup *g) {
    memset(g, 0, sizeof *g);
    if (type == T_Q4_K || type == T_Q4_K_G || type == T_Q5_K) {
        int five = type == T_Q5_K;
        float d = rdh(w), dmin = rdh(w + 2);
        const uint8_t *s = w + 4, *qh = w + 16, *qs = w + 16 + 32 * five;
        g->d = d;
        g->dmin = dmin;
        for (int j = 0; j < 8; ++j) {
            int sc, m;
            scale_min_k4(j, s, &sc, &m);
            g->a[j] = g->a[8 + j] = d * (float)sc;
            g->b[j] = dmin * (float)m;
            g->sc[j] = sc;
            g->m[j] = m;
            for (int p = 0; p < 32; ++p) g->q[32 * j + p] = (int8_t)q_k4(five, qs, qh, j, p);
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
    if (type == T_Q6_K || type == T_Q6_K_G) {
        const uint8_t *ql = w, *qh = w + 128;
        float d = rdh(w + 208);
        g->d = d;
        for (int i = 0; i < 16; ++i) g->sc[i] = ((const int8_t *)(w + 192))[i];
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
