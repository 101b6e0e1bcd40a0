/* The lean decoder's layer loop in C (cpu/layers.py): for each active layer, the calls decoder/model.py's
   loop makes, in its order, on its arguments: fused QKV (quant.c spx_matmul) + bias, attention
   (attention.c spx_attention), output projection + bias, residual + RMSNorm, fused gate/up, activation,
   down, residual + RMSNorm. The kernels are the other libraries' own functions, reached through pointers
   layers.py takes from them, so a forward computes the same bits either way; what this saves is the
   Python and ctypes work between the calls (several microseconds each, seven calls a layer).

   Built without vector flags or OpenMP: it only adds biases (one IEEE addition per value, as PyTorch's
   in-place add computes it) and calls the kernels, which split their own work among the threads. */
#include <stdint.h>

typedef int (*matmul_fn)(const float *x, int64_t M, int64_t K, int32_t nseg, const int32_t *types,
                         const uint8_t *const *data, const int64_t *rows, float *y, int32_t mode, int32_t threads);
typedef int (*attention_fn)(const void *L, const float *qkv, int64_t T, int64_t start, const int64_t *pos,
                            int64_t past, const uint8_t *mask, float *out, int threads);
typedef void (*residual_norm_fn)(float *x, const float *a, const float *post, const float *w, int64_t rows,
                                 int64_t n, float eps, float *out, int threads);
typedef void (*glu_fn)(const float *gu, int64_t rows, int64_t n, int act, float *out, int threads);

typedef struct {               /* the kernels (layers.py Kernels) */
    matmul_fn matmul;
    attention_fn attention;
    residual_norm_fn residual_norm;
    glu_fn glu;
} spx_kernels;

typedef struct {               /* one fused projection: quant.c's segments (layers.py Group) */
    int32_t nseg;
    const int32_t *types;
    const uint8_t *const *data;
    const int64_t *rows;
    int64_t n;                 /* Σ rows: the outputs */
} spx_group;

typedef struct {               /* one layer's weights (layers.py LayerWeights); absent tensors are null */
    spx_group qkv, o, gate_up, down;
    const float *qkv_bias, *o_bias, *post_attn_norm, *ffn_norm, *post_ffn_norm;
    int64_t attn_width;        /* the attention's output: heads × head_dim, the o projection's inputs */
} spx_layer;

typedef struct {               /* per-forward buffers, each at least rows × its width floats; out may be qkv
                                  (the attention has read qkv before the output projection writes out) */
    float *qkv, *attn, *out, *gu, *act;
} spx_scratch;

static void add_bias(float *y, const float *b, int64_t rows, int64_t n) {
    for (int64_t t = 0; t < rows; ++t)
        for (int64_t j = 0; j < n; ++j) y[t * n + j] += b[j];
}

static int matmul(const spx_kernels *k, const float *in, int64_t T, int64_t K, const spx_group *g, float *y,
                  int32_t mode, int32_t threads) {
    return k->matmul(in, T, K, g->nseg, g->types, g->data, g->rows, y, mode, threads);
}

/* The layers layer[0..count) in turn over T rows: x (T × hidden) is the residual stream (updated in place),
   h (T × hidden) holds RMSNorm(x) by the norm in front of layer[0] and ends holding RMSNorm(x) by
   next_norm[count - 1]; next_norm[i] is the norm in front of whatever follows layer[i]; attn[i] its
   attention (attention.c's spx_attn). positions, past and mask: spx_attention's. Returns 0, or
   16·(i + 1) + s for layer i's first failing call: s = 1 or 2 a matmul's status (memory, a type without a
   kernel), 3 or 4 the attention's plus 2 (memory, slots or positions outside the cache or tables). */
int spx_layers(const spx_kernels *k, const spx_layer *const *layer, const void *const *attn,
               const float *const *next_norm, int32_t count, float *x, float *h, int64_t T, int64_t hidden,
               int64_t start, const int64_t *positions, int64_t past, const uint8_t *mask, int32_t mode,
               float eps, int32_t act, const spx_scratch *s, int32_t threads) {
    for (int32_t i = 0; i < count; ++i) {
        const spx_layer *L = layer[i];
        const int fail = 16 * (i + 1);
        int st;
        if ((st = matmul(k, h, T, hidden, &L->qkv, s->qkv, mode, threads))) return fail + st;
        if (L->qkv_bias) add_bias(s->qkv, L->qkv_bias, T, L->qkv.n);
        if ((st = k->attention(attn[i], s->qkv, T, start, positions, past, mask, s->attn, threads)))
            return fail + 2 + st;
        if ((st = matmul(k, s->attn, T, L->attn_width, &L->o, s->out, mode, threads))) return fail + st;
        if (L->o_bias) add_bias(s->out, L->o_bias, T, L->o.n);
        k->residual_norm(x, s->out, L->post_attn_norm, L->ffn_norm, T, hidden, eps, h, threads);
        if ((st = matmul(k, h, T, hidden, &L->gate_up, s->gu, mode, threads))) return fail + st;
        k->glu(s->gu, T, L->gate_up.n / 2, act, s->act, threads);
        if ((st = matmul(k, s->act, T, L->gate_up.n / 2, &L->down, s->out, mode, threads))) return fail + st;
        k->residual_norm(x, s->out, L->post_ffn_norm, next_norm[i], T, hidden, eps, h, threads);
    }
    return 0;
}
