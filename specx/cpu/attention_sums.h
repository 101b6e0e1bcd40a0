/* attention.c's sums over the KV cache: the key layout, a query's scores against the visible keys, their
   softmax, and the value sums, with the orders that make a row's result independent of the call. Included by
   attention.c (which defines spx_attn, LANES and first_seen). */

/* Keys are stored in blocks of KEY_BLOCK slots, transposed: block b of a head holds head_dim rows of
   KEY_BLOCK floats, so one vector operation advances the scores of KEY_BLOCK keys by one dimension, and each
   key's score is still a plain sum over the dimensions in order. Values are stored slot by slot. */
#define KEY_BLOCK LANES
#define HEADS_AT_ONCE 4   /* query heads sharing each key and value load (independent sums: no waiting on one chain) */
/* software prefetching of the cache: a layer's keys and values are cold (every weight read since evicted
   them) and the hardware prefetcher alone streamed them at about 8 GB/s (benchmarks/results/2026-11-26-tails) */
#define AHEAD_BLOCKS 2    /* key blocks ahead */
#define AHEAD_ROWS 16     /* value rows ahead */

/* sc[slot[0..n)] → their softmax in sc[0..n) (slots ascending; slot NULL: sc[0..n) as they are). The maximum is
   exact in any order; the sum runs in LANES partial sums by index and a fixed tree. */
static inline void softmax(float *sc, const int64_t *slot, int64_t n) {
    if (slot)
        for (int64_t i = 0; i < n; ++i) sc[i] = sc[slot[i]];
    vec top = splat_vec(-INFINITY);
    int64_t i = 0;
    for (; i + VEC <= n; i += VEC) {
        const vec x = load_vec(sc + i);
        top = pick(x > top, x, top);
    }
    for (int l = 0; i + l < n; ++l) top[l] = sc[i + l] > top[l] ? sc[i + l] : top[l];
    float m = top[0];
    for (int l = 1; l < VEC; ++l) m = top[l] > m ? top[l] : m;
    for (i = 0; i + VEC <= n; i += VEC) store_vec(sc + i, exp_vec(load_vec(sc + i) - m));   /* a lane: exp_approx's bits */
    for (; i < n; ++i) sc[i] = exp_approx(sc[i] - m);
    partials sum = zero_partials();
    for (i = 0; i + LANES <= n; i += LANES)
        for (int p = 0; p < PARTS; ++p) sum.p[p] += load_vec(sc + i + p * VEC);
    for (int l = 0; i + l < n; ++l) sum.p[l / VEC][l % VEC] += sc[i + l];
    const float total = lane_sum(sum);
    for (i = 0; i + VEC <= n; i += VEC) store_vec(sc + i, load_vec(sc + i) / total);
    for (; i < n; ++i) sc[i] = sc[i] / total;
}

/* The two passes of attention over one kv head, for nq query vectors q (head_dim floats each) of rows that
   share the kv head: vector i belongs to row first_row + i / group (head i % group of the kv head) and sees the
   keys up to slot s_first + i / group. Each key block and value row is read once for all of them, AT of them
   at a time, and each vector's sums run term by term in slot order whatever shares the pass (a row's bits do
   not depend on the rows beside it). score: nq rows of `width` floats, key slot j at column j − base. */
/* query vectors per key pass when there are more than HEADS_AT_ONCE of them: with 16 registers (AVX2) a vector's
   sums take PARTS of them, so 6 vectors' sums, the key's parts and a query value fill them */
#if defined(__AVX512F__)
#define SCORES_AT_ONCE 8
#else
#define SCORES_AT_ONCE 6
#endif

static inline __attribute__((always_inline)) void score_blocks(const int AT, const spx_attn *L, const float *keys,
                                                               const float *q, int64_t nq, int64_t group,
                                                               int64_t s_first, int64_t base, int64_t width,
                                                               float *score) {
    const int64_t d = L->head_dim, last = s_first + (nq - 1) / group;
    for (int64_t b = base; b <= last; b += KEY_BLOCK) {
        const float *block = keys + b * d;
        const int64_t first = b > s_first ? (b - s_first) * group : 0;   /* vectors whose rows see some of it */
        for (int64_t i0 = first; i0 < nq; i0 += AT) {
            const float *qs[SCORES_AT_ONCE];
            vec acc[SCORES_AT_ONCE][PARTS];
#pragma GCC unroll 8
            for (int h = 0; h < AT; ++h) {
                qs[h] = q + (i0 + h < nq ? i0 + h : i0) * d;
#pragma GCC unroll 4
                for (int p = 0; p < PARTS; ++p) acc[h][p] = (vec){0};
            }
            for (int64_t e = 0; e < d; ++e) {
                if (i0 == first) __builtin_prefetch(block + (AHEAD_BLOCKS * d + e) * KEY_BLOCK);   /* no fault: a hint */
                vec k[PARTS];
#pragma GCC unroll 4
                for (int p = 0; p < PARTS; ++p) k[p] = load_vec(block + e * KEY_BLOCK + p * VEC);
#pragma GCC unroll 8
                for (int h = 0; h < AT; ++h) {
                    const vec qe = splat_vec(qs[h][e]);
#pragma GCC unroll 4
                    for (int p = 0; p < PARTS; ++p) acc[h][p] = fma_vec(qe, k[p], acc[h][p]);
                }
            }
            for (int h = 0; h < AT && i0 + h < nq; ++h) {
                const int64_t s = s_first + (i0 + h) / group;
                float *row = score + (i0 + h) * width + (b - base);
                if (b + KEY_BLOCK - 1 <= s)   /* the whole block seen: vector products (the same products) */
                    for (int p = 0; p < PARTS; ++p) *(vec_u *)(row + p * VEC) = acc[h][p] * splat_vec(L->scale);
                else
                    for (int l = 0; b + l <= s; ++l) row[l] = acc[h][l / VEC][l % VEC] * L->scale;
            }
        }
    }
}

/* scores of every vector against the keys it sees (padding a pass to AT vectors costs whole sums, so few
   vectors take HEADS_AT_ONCE at a time; with 16 registers, so do those that SCORES_AT_ONCE a pass would pad more) */
static void score_pass(const spx_attn *L, const float *keys, const float *q, int64_t nq, int64_t group,
                       int64_t s_first, int64_t base, int64_t width, float *score) {
    int wide = nq > HEADS_AT_ONCE;
#if !defined(__AVX512F__)
    const int64_t padded_wide = (nq + SCORES_AT_ONCE - 1) / SCORES_AT_ONCE * SCORES_AT_ONCE;
    wide = wide && padded_wide <= (nq + HEADS_AT_ONCE - 1) / HEADS_AT_ONCE * HEADS_AT_ONCE;
#endif
    if (wide) score_blocks(SCORES_AT_ONCE, L, keys, q, nq, group, s_first, base, width, score);
    else score_blocks(HEADS_AT_ONCE, L, keys, q, nq, group, s_first, base, width, score);
}

/* Value rows [from, to) into the running sums of a pass's VH vectors, VC chunks of LANES dimensions from c0.
   `tested`: a vector h sums row i only from lo[h] and below n[h], and a chunk may run past head_dim; untested, every
   vector sums every row and the chunks are whole (the rows all vectors see, without a test per row: the same operations on
   the same sums). Prefetches AHEAD_ROWS rows ahead (up to `most`) when `ahead`. */
#define MAX_VH 8
#define MAX_VC 4
static inline __attribute__((always_inline)) void value_rows(const int VH, const int VC, const int tested,
                                                             const spx_attn *L, const float *values,
                                                             const int64_t *slot, int64_t base, const float *const *ps,
                                                             const int64_t *lo, const int64_t *n, int64_t c0,
                                                             int64_t from, int64_t to, int64_t most, int ahead,
                                                             vec acc[][MAX_VC * PARTS]) {
    const int64_t d = L->head_dim;
    for (int64_t i = from; i < to; ++i) {
        const float *v = values + (base + (slot ? slot[i] : i)) * d;
        if (ahead && i + AHEAD_ROWS < most)
            for (int64_t e = 0; e < d; e += 64 / sizeof(float))
                __builtin_prefetch(values + (base + (slot ? slot[i + AHEAD_ROWS] : i + AHEAD_ROWS)) * d + e);
#pragma GCC unroll 4
        for (int k = 0; k < VC; ++k) {
            const int64_t c = c0 + k * LANES;
            vec vv[PARTS];
#pragma GCC unroll 4
            for (int p = 0; p < PARTS; ++p)
                if (!tested || c + LANES <= d) vv[p] = load_vec(v + c + p * VEC);
                else {   /* past head_dim: zeros */
                    vv[p] = (vec){0};
                    for (int l = 0; l < VEC && c + p * VEC + l < d; ++l) vv[p][l] = v[c + p * VEC + l];
                }
#pragma GCC unroll 16
            for (int h = 0; h < VH; ++h)
                if (!tested || (i >= lo[h] && i < n[h])) {
                    const vec pi = splat_vec(ps[h][i]);
#pragma GCC unroll 4
                    for (int p = 0; p < PARTS; ++p) acc[h][k * PARTS + p] = fma_vec(pi, vv[p], acc[h][k * PARTS + p]);
                }
        }
    }
}

/* value_pass with VH vectors and VC × LANES dimensions per pass over the values */
static inline __attribute__((always_inline)) void value_passes(const int VH, const int VC, const spx_attn *L,
                                                               const float *values, const int64_t *slot, int64_t base,
                                                               const float *score, int64_t width, int64_t nq,
                                                               int64_t group, int64_t n_first, int64_t window,
                                                               int64_t first_row, int64_t g, float *out) {
    const int64_t d = L->head_dim;
    for (int64_t c0 = 0; c0 < d; c0 += VC * LANES) {
        for (int64_t i0 = 0; i0 < nq; i0 += VH) {
            const float *ps[MAX_VH];
            int64_t lo[MAX_VH], n[MAX_VH], most = 0, fewest = -1, first = -1, last = 0;
            vec acc[MAX_VH][MAX_VC * PARTS];
#pragma GCC unroll 16
            for (int h = 0; h < VH; ++h) {
                const int64_t i = i0 + h < nq ? i0 + h : i0;
                ps[h] = score + i * width;
                n[h] = i0 + h < nq ? n_first + i / group : 0;   /* a padding vector sums nothing */
                lo[h] = window > 0 ? first_seen(base + n[h] - 1, window) - base : 0;   /* its first visible row */
                most = n[h] > most ? n[h] : most;
                if (i0 + h < nq) {
                    fewest = fewest < 0 || n[h] < fewest ? n[h] : fewest;
                    first = first < 0 || lo[h] < first ? lo[h] : first;
                    last = lo[h] > last ? lo[h] : last;
                }
#pragma GCC unroll 16
                for (int k = 0; k < VC * PARTS; ++k) acc[h][k] = (vec){0};
            }
            const int ahead = c0 == 0 && i0 == 0;
            if (c0 + VC * LANES > d) fewest = 0;   /* a partial chunk: every row tested */
            const int64_t every = fewest > last ? fewest : last;   /* rows [last, every) every vector sums */
            value_rows(VH, VC, 1, L, values, slot, base, ps, lo, n, c0, first, last, most, ahead, acc);
            value_rows(VH, VC, 0, L, values, slot, base, ps, lo, n, c0, last, every, most, ahead, acc);
            value_rows(VH, VC, 1, L, values, slot, base, ps, lo, n, c0, every, most, most, ahead, acc);
            for (int h = 0; h < VH && i0 + h < nq; ++h) {
                float *o = out + (first_row + (i0 + h) / group) * L->heads * d + (g * group + (i0 + h) % group) * d;
                for (int k = 0; k < VC; ++k)
                    for (int l = 0; l < LANES && c0 + k * LANES + l < d; ++l)
                        o[c0 + k * LANES + l] = acc[h][k * PARTS + l / VEC][l % VEC];
            }
        }
    }
}

/* out = Σ p·v over the first n_first + i / group of the visible slots (slot order; slot NULL: slots base, base + 1, …)
   for vector i, whose probabilities are packed at the front of its score row; with a window (slot NULL), over those
   of them its last `window` slots hold, their probabilities at the same offsets from base. Each pass over the values reads a
   slice of every visible row for several vectors at once: the more vectors a pass serves, the fewer times the
   values are read (from L3 once a long context's outgrow L2), as many as the registers hold. Each vector's sums
   run term by term in slot order whatever shares its pass. */
static int value_shape = 0;   /* spx_set_value_shape: 0 the build's choice, else 4 or 8 vectors a pass */
int spx_set_value_shape(int32_t vectors) {
    const int was = value_shape;
    if (vectors >= 0) value_shape = vectors;
    return was;
}

static void value_pass(const spx_attn *L, const float *values, const int64_t *slot, int64_t base, const float *score,
                       int64_t width, int64_t nq, int64_t group, int64_t n_first, int64_t window, int64_t first_row,
                       int64_t g, float *out) {
#define VALUES(VH, VC) value_passes(VH, VC, L, values, slot, base, score, width, nq, group, n_first, window, first_row, \
                                    g, out)
#if defined(__AVX512F__)   /* 32 registers: 8 × 2 or 4 × 4 sums; 16 a pass: slower (2026-11-27-attention-tiles) */
    const int vh = value_shape ? value_shape : nq > 4 ? 8 : 4;
    if (vh == 8) VALUES(8, 2);
    else VALUES(4, 4);
#else   /* 16 registers: 3 vectors × 2 chunks of sums (12 registers) beside a value part and a probability, the
           fastest of 2-8 vectors a pass (2026-12-02-zen2); 4 or 8 when asked, a chunk each */
    if (value_shape == 4) VALUES(4, 1);
    else if (value_shape == 8) VALUES(8, 1);
    else VALUES(3, 2);
#endif
#undef VALUES
}
