/* quant.c's block formats, included by it in this place: scalar readers and the exact decoding of every
   block type to gguf's float32 values (the f32 mode's portable kernels and embedding rows use it; the q8
   mode's integers, decode_group, follow in quant.c). */

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
static inline uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }   /* little-endian, as x86 */
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

/* Q4_K / Q5_K: the integer q (0..15; Q5_K 0..31) of value p of sub-block j of a superblock, from its qs (and,
   for Q5_K, its qh): the float decoder and the q8 one read it alike. */
static inline int q_k4(int five, const uint8_t *qs, const uint8_t *qh, int j, int p) {
    const int q = (qs[32 * (j / 2) + p] >> (4 * (j & 1))) & 15;
    return five ? q | (((qh[p] >> j) & 1) << 4) : q;
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
        case T_Q4_0: case T_Q4_0_P16: case T_Q4_1: case T_Q5_0: case T_Q5_1: case T_Q8_0: return QK;
        case T_Q2_K: case T_Q4_K: case T_Q5_K: case T_Q6_K: case T_Q4_K_P16: case T_Q6_K_P16: case T_Q4_K_G:
        case T_Q6_K_G: case T_Q6_K_PG: return QKK;
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
        case T_Q4_0: case T_Q4_0_P16: return 18;
        case T_Q4_1: return 20;
        case T_Q5_0: return 22;
        case T_Q5_1: return 24;
        case T_Q8_0: return 34;
        case T_Q2_K: return 84;
        case T_Q3_K: return 110;
        case T_Q4_K: case T_Q4_K_P16: case T_Q4_K_G: return 144;
        case T_Q5_K: return 176;
        case T_Q6_K: case T_Q6_K_P16: case T_Q6_K_G: case T_Q6_K_PG: return 210;
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
                for (int p = 0; p < 32; ++p) w[32 * j + p] = ws * (float)q_k4(five, qs, qh, j, p) - wm;
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
