/* The lean decoder's own row-exact kernels: attention over the KV cache (with the q/k norms and the
   rotary embedding in front of it), RMSNorm after a residual add, and the gated MLP's activation.

   Rule: the result for one token (one row) is a function of that row's inputs and of the keys it sees,
   never of how many other rows share the call or of the thread count. So every reduction runs in a
   fixed order written out here (LANES partial sums indexed by position mod LANES, then a fixed tree;
   score and value sums over the visible keys in slot order), each (token, kv head) of the attention is
   computed whole by one thread, and element-wise code uses only IEEE operations (built with
   -ffp-contract=off, no -ffast-math), which a vector lane and a scalar tail compute alike; where a product
   and a sum are fused (fma_vec, attention's score and value sums) every build fuses them, as C's fmaf does.
   The code is plain C with GCC/Clang vector types; built with or without AVX2/AVX-512 flags it gives the same
   bits.
   Built and loaded by attention.py. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

#define LANES 16               /* partial sums per reduction (lane_sum's tree is written for 16): one AVX-512
                                  register, two AVX2 ones */
/* Below these amounts of work a call stays on one thread: waking another (microseconds on an idle machine,
   a scheduler tick when the cores are shared) costs more than it saves. A token's attention reads its layer's
   keys and values cold (the weights read since evicted them), so two threads pay from less arithmetic than
   the values' passes do (benchmarks/results/2026-11-27-attention). */
#define PARALLEL_WORK (1 << 15)     /* attention: multiply-adds, a few µs of arithmetic on one core */
#define PARALLEL_VALUES (1 << 17)   /* norms: values, ~30-60 µs on one core */
/* The activation's exp and division cost ~0.7 ns a value on one core (a verify of 5 tokens of a 1.5B's MLP:
   45k values, ~30 µs), so it takes a second thread from fewer values, in chunks of its rows (element-wise: the
   same bits however it is cut). */
#define PARALLEL_ACT (1 << 15)
#define ACT_CHUNK 2048   /* values a task of the activation takes, a multiple of LANES */

typedef struct {
    float *k, *v;                  /* this layer's cache: keys (kv_heads, capacity/KEY_BLOCK, head_dim, KEY_BLOCK),
                                      values (kv_heads, capacity, head_dim) */
    const float *cos, *sin;        /* rotary tables: (table_rows, head_dim / 2) */
    const float *q_norm, *k_norm;  /* (head_dim) RMSNorm weights, or NULL */
    int64_t capacity, heads, kv_heads, head_dim, table_rows;
    int64_t window;                /* > 0: a query at position p sees keys at positions > p - window */
    float eps, scale;
    int32_t adjacent;              /* rotate pairs (2i, 2i+1) instead of (i, i + head_dim/2) */
} spx_attn;

#include "lanes.h"

/* the first slot a query at slot s sees: s − window + 1 with a window (window > 0; slots holding their positions) */
static inline int64_t first_seen(int64_t s, int64_t window) { return window > 0 && s - window + 1 > 0 ? s - window + 1 : 0; }

static inline void norm_row(const float *x, const float *w, int64_t n, float eps, float *out) {
    float r = 1.0f / sqrtf(dot(x, x, n) / (float)n + eps);
    for (int64_t i = 0; i < n; ++i) out[i] = (x[i] * r) * w[i];
}

/* out = RMSNorm(x) · w, row by row. out may be x. */
void spx_rmsnorm(const float *x, const float *w, int64_t rows, int64_t n, float eps, float *out, int threads) {
#pragma omp parallel for num_threads(threads) if (rows * n > PARALLEL_VALUES)
    for (int64_t t = 0; t < rows; ++t) norm_row(x + t * n, w, n, eps, out + t * n);
}

/* The residual stream takes a sublayer's output, then the next sublayer's norm reads it:
   x += a (Gemma: x += RMSNorm(a) · post), then out = RMSNorm(x) · w. */
void spx_residual_norm(float *x, const float *a, const float *post, const float *w, int64_t rows, int64_t n,
                       float eps, float *out, int threads) {
#pragma omp parallel for num_threads(threads) if (rows * n > PARALLEL_VALUES)
    for (int64_t t = 0; t < rows; ++t) {
        float *xr = x + t * n;
        const float *ar = a + t * n;
        if (post) {
            float r = 1.0f / sqrtf(dot(ar, ar, n) / (float)n + eps);
            for (int64_t i = 0; i < n; ++i) xr[i] += (ar[i] * r) * post[i];
        } else {
            for (int64_t i = 0; i < n; ++i) xr[i] += ar[i];
        }
        norm_row(xr, w, n, eps, out + t * n);
    }
}

/* out[t][i] = act(gate[t][i]) · up[t][i], gate and up side by side in each row of gu (rows × 2n).
   act: 0 SiLU, 1 GELU-tanh. Tasks of ACT_CHUNK values of a row (a row's last one shorter). */
void spx_glu(const float *gu, int64_t rows, int64_t n, int act, float *out, int threads) {
    const int64_t per = (n + ACT_CHUNK - 1) / ACT_CHUNK;
#pragma omp parallel for num_threads(threads) schedule(static) if (rows * n > PARALLEL_ACT)
    for (int64_t k = 0; k < rows * per; ++k) {
        const int64_t t = k / per, end = (k % per + 1) * ACT_CHUNK < n ? (k % per + 1) * ACT_CHUNK : n;
        const float *g = gu + t * 2 * n, *u = g + n;
        float *o = out + t * n;
        int64_t i = k % per * ACT_CHUNK;
        for (; i + VEC <= end; i += VEC)
            store_vec(o + i, (act == 1 ? gelu_tanh_vec(load_vec(g + i)) : silu_vec(load_vec(g + i))) * load_vec(u + i));
        for (; i < end; ++i) o[i] = (act == 1 ? gelu_tanh(g[i]) : silu(g[i])) * u[i];
    }
}

/* RMSNorm a head's vector in place (when w), then rotate it to position row `p` of the tables. */
static inline void prepare(float *x, const float *w, const spx_attn *L, int64_t p) {
    const int64_t d = L->head_dim, half = d / 2;
    if (w) norm_row(x, w, d, L->eps, x);
    const float *c = L->cos + p * half, *s = L->sin + p * half;
    if (L->adjacent) {
        for (int64_t i = 0; i < half; ++i) {
            float a = x[2 * i], b = x[2 * i + 1];
            x[2 * i] = a * c[i] - b * s[i];
            x[2 * i + 1] = b * c[i] + a * s[i];
        }
    } else {
        for (int64_t i = 0; i < half; ++i) {
            float a = x[i], b = x[i + half];
            x[i] = a * c[i] - b * s[i];
            x[i + half] = b * c[i] + a * s[i];
        }
    }
}

#include "attention_sums.h"

/* The queries of row t that share kv head g (heads g·group .. g·group + group − 1) against the keys row t
   sees, in slot order: the cached slots before the last `past`, those of the last `past` and of this call's
   rows that `mask` allows (without a mask: every earlier row; itself always), all within the window. pos[u]:
   the position of row u, u = -past .. -1 the masked cached slots'. */
static void attend(const spx_attn *L, const float *qkv, int64_t T, int64_t start, const int64_t *pos,
                   int64_t past, const uint8_t *mask, int64_t t, int64_t g, float *out, float *q, float *score,
                   int64_t *slot) {
    const int64_t d = L->head_dim, group = L->heads / L->kv_heads, s = start + t;
    const int64_t row = (L->heads + 2 * L->kv_heads) * d;
    for (int64_t j = 0; j < group; ++j) {
        memcpy(q + j * d, qkv + t * row + (g * group + j) * d, sizeof(float) * d);
        prepare(q + j * d, L->q_norm, L, pos[t]);
    }
    /* the window counts positions: cached slot j holds position j, new row u position pos[u] */
    const int64_t far = L->window > 0 ? pos[t] - L->window : -1;   /* keys at positions <= far are out of it */
    int64_t lo = far + 1 < start ? (far + 1 > 0 ? far + 1 : 0) : start;
    if (lo > start - past) lo = start - past;   /* a masked cached slot is in the window by its position */
    const int64_t base = lo / KEY_BLOCK * KEY_BLOCK, width = s + 1 - base, W = past + T;
    int64_t n = 0;
    for (int64_t j = lo; j < start - past; ++j) slot[n++] = j - base;
    for (int64_t u = -past; u <= t; ++u)
        if ((u == t || !mask || mask[t * W + past + u]) && pos[u] > far) slot[n++] = start + u - base;
    const int64_t *order = n && slot[n - 1] == n - 1 ? NULL : slot;   /* ascending: all of them from base on */
    score_pass(L, L->k + g * L->capacity * d, q, group, group, s, base, width, score);
    for (int64_t j = 0; j < group; ++j)   /* softmax over the visible keys, packed to the front of the row */
        softmax(score + j * width, order, n);
    value_pass(L, L->v + g * L->capacity * d, order, base, score, width, group, group, n, 0, t, g, out);
}

/* attend for rows t0 .. t1-1 of a plain causal call (no mask; row t sees slots 0 .. start + t in order, or with a
   window W > 0 (slots holding their positions) those from start + t − W + 1 on) of kv head g, all of their query
   vectors in each pass. q: (t1 - t0)·group·head_dim floats; score: as many rows of window_width(...) floats. The
   scores are computed from the first row's first visible key block on (a later row's earlier keys too, unread), and
   each row's softmax and value sums run over its own visible slots, as attend's do. */
static int64_t rows_width(int64_t start, int64_t t0, int64_t t1, int64_t window) {
    return start + t1 - first_seen(start + t0, window) / KEY_BLOCK * KEY_BLOCK + KEY_BLOCK;
}

static void attend_rows(const spx_attn *L, const float *qkv, int64_t start, const int64_t *pos, int64_t t0,
                        int64_t t1, int64_t window, int64_t g, float *out, float *q, float *score) {
    const int64_t d = L->head_dim, group = L->heads / L->kv_heads, row = (L->heads + 2 * L->kv_heads) * d;
    const int64_t nq = (t1 - t0) * group, base = first_seen(start + t0, window) / KEY_BLOCK * KEY_BLOCK;
    const int64_t width = rows_width(start, t0, t1, window);
    for (int64_t i = 0; i < nq; ++i) {   /* query vector i: row t0 + i / group, head i % group of the kv head */
        memcpy(q + i * d, qkv + (t0 + i / group) * row + (g * group + i % group) * d, sizeof(float) * d);
        prepare(q + i * d, L->q_norm, L, pos[t0 + i / group]);
    }
    score_pass(L, L->k + g * L->capacity * d, q, nq, group, start + t0, base, width, score);
    for (int64_t i = 0; i < nq; ++i) {
        const int64_t s = start + t0 + i / group, lo = first_seen(s, window);
        softmax(score + i * width + (lo - base), NULL, s - lo + 1);
    }
    value_pass(L, L->v + g * L->capacity * d, NULL, base, score, width, nq, group, start + t0 + 1 - base, window, t0,
               g, out);
}

/* Rows attend_rows takes at once: as many as keep their score rows within score_tile_bytes (at least one). The
   scores of a whole long prompt chunk (512 rows x the group's heads x the context) outgrow the caches, and each
   of attention's three passes over them then streams them through memory; a tile's stay in L2 while the keys and
   values are read again per tile. Which rows share a tile never changes a row's bits. */
#define SCORE_TILE_BYTES (512 * 1024)
static int64_t score_tile_bytes = SCORE_TILE_BYTES;
int64_t spx_set_score_tile(int64_t bytes) {   /* returns the previous setting; bytes < 0: changes nothing */
    const int64_t was = score_tile_bytes;
    if (bytes >= 0) score_tile_bytes = bytes;
    return was;
}

static int64_t tile_rows(int64_t group, int64_t width) {
    const int64_t rows = score_tile_bytes / ((int64_t)sizeof(float) * group * width);
    return rows > 0 ? rows : 1;
}

static int64_t gcd(int64_t a, int64_t b) { return b ? gcd(b, a % b) : a; }

/* Rows 0..T (after `start` cached slots) in `parts` runs of about equal work (row t reads start + t + 1 keys):
   run j is cut[j] .. cut[j + 1]. With kv heads × parts a multiple of the threads, each thread gets the same work
   (3 kv heads on 2 threads: each thread 1.5 heads' rows, not 2 and 1). */
static void split_rows(int64_t T, int64_t start, int64_t parts, int64_t *cut) {
    const double total = (double)T * start + (double)T * (T + 1) / 2;
    int64_t t = 0;
    double done = 0;
    cut[0] = 0;
    for (int64_t j = 1; j < parts; ++j) {
        while (t < T && done + (start + t + 1) / 2.0 < total * j / parts) {   /* done: rows 0 .. t-1's work */
            done += start + t + 1;
            ++t;
        }
        cut[j] = t;
    }
    cut[parts] = T;
}

/* Whether plain causal calls of several rows take attend_rows (1) or attend row by row (0): the same bits
   either way (tests and benchmarks compare them). */
static int share_rows = 1;
int spx_set_attention_share(int32_t on) {   /* returns the previous setting; on < 0: changes nothing */
    const int was = share_rows;
    if (on >= 0) share_rows = on != 0;
    return was;
}

/* Attention of T new rows (slots start .. start+T-1, rotary positions pos[t]) for one layer: normalizes and
   rotates their keys into the cache, stores their values, then writes each row's heads into out (T × heads·head_dim).
   qkv: T rows of [q (heads·head_dim) | k (kv_heads·head_dim) | v (kv_heads·head_dim)].
   mask: NULL (causal), or T × (past + T) bytes over the last `past` cached slots and this call's rows: row t
   may see cached slot start - past + i where mask[t·(past + T) + i] != 0, and new row u < t where
   mask[t·(past + T) + past + u] != 0 (a token tree, grown over several calls: rows of a tree may share
   positions). pos: past + T positions, those of the masked cached slots first (for the window), then the
   rows'. The cache's other slots 0..start-past-1 hold positions 0..start-past-1.
   Returns 0, 1 when a buffer could not be allocated, 2 for a slot or position outside the cache or tables. */
int spx_attention(const spx_attn *L, const float *qkv, int64_t T, int64_t start, const int64_t *pos_all,
                  int64_t past, const uint8_t *mask, float *out, int threads) {
    const int64_t d = L->head_dim, row = (L->heads + 2 * L->kv_heads) * d, q_size = L->heads * d;
    const int64_t group = L->heads / L->kv_heads, end = start + T, *pos = pos_all + past;
    if (start < 0 || T < 0 || end > L->capacity || L->capacity % KEY_BLOCK || L->heads % L->kv_heads) return 2;
    if (past < 0 || past > start || (past && !mask)) return 2;
    int64_t last = -1;   /* the rows' furthest position: below the window, a windowed layer sees every key */
    int plain = 1;       /* the rows at the positions of their slots: a window then hides the same keys by slot */
    for (int64_t t = -past; t < T; ++t) {
        if (pos[t] < 0 || pos[t] >= L->table_rows) return 2;
        if (t >= 0) {
            last = pos[t] > last ? pos[t] : last;
            plain = plain && pos[t] == start + t;
        }
    }
    const int many = T * L->heads * end * d > PARALLEL_WORK;
    const int hides = L->window > 0 && last >= L->window;   /* some row's window leaves out a key */
    const int shared = share_rows && T > 1 && !mask && (!hides || plain);   /* attend_rows' case */
    const int64_t window = hides ? L->window : 0;
    int failed = 0;
#pragma omp parallel num_threads(threads) if (many) reduction(| : failed)
    {
        float *q = malloc(sizeof(float) * group * d), *score = malloc(sizeof(float) * group * (end + KEY_BLOCK));
        int64_t *slot = malloc(sizeof(int64_t) * (end + KEY_BLOCK));
        failed = !q || !score || !slot;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < T * L->kv_heads; ++i) {
            const int64_t t = i / L->kv_heads, g = i % L->kv_heads, s = start + t;
            if (failed) continue;
            memcpy(q, qkv + t * row + q_size + g * d, sizeof(float) * d);
            prepare(q, L->k_norm, L, pos[t]);
            float *block = L->k + g * L->capacity * d + s / KEY_BLOCK * KEY_BLOCK * d + s % KEY_BLOCK;
            for (int64_t e = 0; e < d; ++e) block[e * KEY_BLOCK] = q[e];
            memcpy(L->v + (g * L->capacity + s) * d, qkv + t * row + q_size + (L->kv_heads + g) * d, sizeof(float) * d);
        }
        if (!shared) {
#pragma omp for schedule(static)
            for (int64_t i = 0; i < T * L->kv_heads; ++i)
                if (!failed) attend(L, qkv, T, start, pos, past, mask, i / L->kv_heads, i % L->kv_heads, out, q, score, slot);
        }
        free(q);
        free(score);
        free(slot);
    }
    if (shared && !failed) {   /* rows share key and value reads: tasks of (kv head, a part of the rows) */
        const int64_t parts = many ? threads / gcd(threads, L->kv_heads) : 1;
        int64_t cut[parts + 1];
        split_rows(T, start, parts, cut);
#pragma omp parallel for num_threads(threads) if (many) reduction(| : failed) schedule(static)
        for (int64_t i = 0; i < L->kv_heads * parts; ++i) {
            const int64_t g = i / parts, t0 = cut[i % parts], t1 = cut[i % parts + 1];
            if (t0 >= t1) continue;
            const int64_t seen = window > 0 && window < start + t1 ? window : start + t1;   /* a row's keys at most */
            const int64_t step = tile_rows(group, seen + KEY_BLOCK), most = step < t1 - t0 ? step : t1 - t0;
            int64_t width = 0;   /* the widest tile's score rows */
            for (int64_t a = t0; a < t1; a += step) {
                const int64_t w = rows_width(start, a, a + step < t1 ? a + step : t1, window);
                width = w > width ? w : width;
            }
            float *q = malloc(sizeof(float) * most * group * d), *score = malloc(sizeof(float) * most * group * width);
            if (q && score)
                for (int64_t a = t0; a < t1; a += step)
                    attend_rows(L, qkv, start, pos, a, a + step < t1 ? a + step : t1, window, g, out, q, score);
            else
                failed = 1;
            free(q);
            free(score);
        }
    }
    return failed;
}
