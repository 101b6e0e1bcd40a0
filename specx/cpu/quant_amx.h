/* quant.c's AMX-INT8 path for the q8 mode of Q4_K, Q6_K, Q8_0 and Q5_0 per 32 values in the file's layout, for
   calls of many rows (a prompt pass): included by quant.c in AVX-512 builds compiled with -mamx-tile -mamx-int8,
   used only when quant.py turned it on (the CPU has AMX, the kernel granted the tile state, SPECX_AMX is not 0)
   and the call has at least AMX_MIN_ROWS rows. The AVX-512 build's q8 takes Q4_K and Q6_K with groups, packed
   where they can be: those run on AMX through quant_amx_packed.h (included at the end), this path runs Q8_0 and
   Q5_0 (and Q4_K and Q6_K where a call asks for per 32 values).

   Same numbers, bit for bit: the q8 arithmetic (quant.c) is per half block (16 values) of each (row, output)
   an exact integer S, then fma(S, a·dx, acc[lane]) over the groups in order, then fixed trees. Here one tile
   product covers one half block for 16 outputs × 16 rows (K = 16: W as the signed A operand, 16 bytes a row;
   X VNNI-packed as the B operand, 4 rows of 64 bytes): its int32 tile is S exactly, for 256 (output, row)
   pairs at once. For each lane the products run over the groups in order into 16 float accumulators (one
   per output, a vector over 16 rows), with the same mul and fma as the VNNI kernel; the mins (Q4_K) and the
   trees follow in the same operations on vectors over rows. Only the vectors' direction differs (rows
   instead of lanes), never an operation or its order, so rows are independent and results do not depend on
   M, on the row's position or on the thread count.

   Layouts (per call; mt = tile of 16 rows, s = group of 256 values, l = lane 8h + j = half h of block j):
   XB[mt][s][l][k][m]  int32: bytes 4k..4k+3 of half block l of row 16mt + m (quant.c's xq, lane l of vector k);
   XD[mt][s][l][m]     float: dx of that block; XS[mt][s][j][m] float: xs (dx·Σq) of block j.
   Per thread, per strip of 16 outputs: WD[s][l][n][16] the signed weights of half block l of output n's
   group s (an A tile: 256 contiguous bytes), WA[s][n][l] = a, WB[s][n][j] = b (Q4_K). */
#if defined(SPX_AVX512) && defined(__AMX_TILE__) && defined(__AMX_INT8__) && defined(__linux__)
#define SPX_AMX 1
#include <sys/syscall.h>
#include <unistd.h>

#define AMX_MIN_ROWS 32   /* fewer rows run the VNNI kernels: a call decodes W once more for AMX, which pays once
                             it serves 2 or more 16-row tiles (measured: benchmarks/results/2026-11-27-amx-prefill);
                             decode and verification calls have at most 16 rows */
#define AMX_BLOCK_BYTES (1 << 18)   /* decoded weights a thread keeps per pass over the rows (in L2), so that
                                       consecutive tiles write the same rows of Y (a tile's 16 rows lie on 16
                                       pages: page walks, when Y was gone down one strip at a time) */
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static int amx_on = 0;

int spx_amx_min_rows(void) { return AMX_MIN_ROWS; }

/* Asks the kernel for the tile state (once per process); returns 0 when granted. */
int spx_amx_init(void) { return (int)syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA); }

int spx_set_amx(int32_t on) {   /* returns the previous setting; on < 0: changes nothing */
    const int was = amx_on;
    if (on >= 0) amx_on = on != 0;
    return was;
}

static inline int amx_type(int type) { return type == T_Q4_K || type == T_Q6_K || type == T_Q8_0 || type == T_Q5_0; }

typedef struct {
    uint8_t palette, start;
    uint8_t rsv[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_cfg;

/* tiles 0-3: C (16 × 16 int32); 4-5: A (W, 16 outputs × 16 bytes); 6-7: B (X, 4 × 64 bytes) */
static void amx_config(void) {
    amx_cfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int t = 0; t < 4; ++t) c.rows[t] = 16, c.colsb[t] = 64;
    for (int t = 4; t < 6; ++t) c.rows[t] = 16, c.colsb[t] = 16;
    for (int t = 6; t < 8; ++t) c.rows[t] = 4, c.colsb[t] = 64;
    _tile_loadconfig(&c);
}

#include "quant_amx_operands.h"

/* ---- one strip (16 outputs) × one tile of 16 rows */

/* Product i of a tile: lane l = i / G, group s = i % G (the lanes one after another, each over its groups in
   order): where its operands lie, and the lane whose sums are complete after it (-1 when none). Computed
   once per call (amx_steps). */
typedef struct {
    int32_t a, b, e, w, done;   /* A: bytes into WD; B: int32s into XB; dx: floats into XD; a: into WA */
} amx_step;

static void amx_steps(int64_t G, amx_step *st) {
    for (int64_t i = 0; i < 16 * G; ++i) {
        const int l = (int)(i / G), s = (int)(i % G);
        st[i] = (amx_step){s * 4096 + 256 * l, s * 1024 + 64 * l, s * 256 + 16 * l, s * 256 + l, s == G - 1 ? l : -1};
    }
}

#define AMX_DOT(C, A, B, i)                                  \
    do {                                                     \
        _tile_zero(C);                                       \
        _tile_loadd(A, wd + st[i].a, 16);                   \
        _tile_loadd(B, xb + st[i].b, 64);                    \
        _tile_dpbssd(C, A, B);                               \
    } while (0)

/* the stored S of product i (rows n, columns m): acc[n] = fma(S, a·dx, acc[n]); a complete lane's sums go
   to `lanes` */
static inline __attribute__((always_inline)) void amx_epi(const int32_t *cb, const amx_step *st, const float *wa,
                                                          const float *xd, float *lanes, __m512 *acc) {
    const __m512 dxv = _mm512_load_ps(xd + st->e);
    const float *an = wa + st->w;
#pragma GCC unroll 16
    for (int n = 0; n < 16; ++n) {
        __m512 v = _mm512_cvtepi32_ps(_mm512_load_si512(cb + 16 * n));
        __asm__("" : "+v"(v));   /* keeps GCC from hoisting all 16 conversions (their registers spilled acc) */
        acc[n] = _mm512_fmadd_ps(v, _mm512_mul_ps(_mm512_set1_ps(an[16 * n]), dxv), acc[n]);
    }
    if (st->done >= 0)
#pragma GCC unroll 16
        for (int n = 0; n < 16; ++n) {
            _mm512_store_ps(lanes + 256 * st->done + 16 * n, acc[n]);
            acc[n] = _mm512_setzero_ps();
        }
}

/* Four C tiles rotate: at step i tile i % 4 is stored (into buffer i % 8), reissued for product i + 4, and
   product i − AMX_LAG is scaled (in order: the accumulation order is the products' order). */
#define AMX_LAG 2   /* steps between a tile's store and its scaling (its stored bytes are read once the store
                      has left; 1 to 4 differed by a few per cent) */
#define AMX_STEP(T, A, B, U, i)                                                                \
    do {                                                                                       \
        _tile_stored(T, cb[U], 64);                                                            \
        if ((i) >= AMX_LAG) amx_epi(cb[(U + 8 - AMX_LAG) & 7], st + (i) - AMX_LAG, wa, xd, lanes, acc); \
        if ((i) + 4 < P) AMX_DOT(T, A, B, (i) + 4);                                            \
    } while (0)

/* 16 vectors (rows n, lanes m) → y[m][n] for m < mrows, n < ncols: a transpose in registers (at each block
   size b = 8, 4, 2, 1 the off-diagonal b × b blocks swap: AMX_SWAP_LO/HI are its permutations) */
static const int32_t AMX_SWAP_LO[4][16] __attribute__((aligned(64))) = {
    {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
    {0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27},
    {0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29},
    {0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30}};
static const int32_t AMX_SWAP_HI[4][16] __attribute__((aligned(64))) = {
    {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31},
    {4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31},
    {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31},
    {1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31}};

static inline __attribute__((always_inline)) void amx_store_transposed(__m512 *r, float *y, int64_t ldy, int mrows,
                                                                       int ncols) {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
        const int b = 8 >> k;
        const __m512i il = _mm512_load_si512(AMX_SWAP_LO[k]), ih = _mm512_load_si512(AMX_SWAP_HI[k]);
#pragma GCC unroll 16
        for (int i = 0; i < 16; ++i)
            if (!(i & b)) {
                const __m512 u = r[i], v = r[i + b];
                r[i] = _mm512_permutex2var_ps(u, il, v);
                r[i + b] = _mm512_permutex2var_ps(u, ih, v);
            }
    }
    const __mmask16 keep = (__mmask16)((1u << ncols) - 1);
    for (int m = 0; m < mrows; ++m) _mm512_mask_storeu_ps(y + m * ldy, keep, r[m]);
}

static void amx_tile(int kind, const int8_t *wd, const float *wa, const float *wb, int64_t G, const amx_step *st,
                     const int32_t *xb, const float *xd, const float *xs, float *lanes, float *y, int64_t ldy, int mrows,
                     int ncols) {
    int32_t cb[8][256] __attribute__((aligned(64)));
    __m512 acc[16];
    const int64_t P = 16 * G;   /* products: 16 lanes × G groups, a multiple of 4 */
#pragma GCC unroll 16
    for (int n = 0; n < 16; ++n) acc[n] = _mm512_setzero_ps();
    AMX_DOT(0, 4, 6, 0);
    AMX_DOT(1, 5, 7, 1);
    AMX_DOT(2, 4, 6, 2);
    AMX_DOT(3, 5, 7, 3);
    for (int64_t i = 0; i < P; i += 8) {   /* P is a multiple of 16 */
        AMX_STEP(0, 4, 6, 0, i);
        AMX_STEP(1, 5, 7, 1, i + 1);
        AMX_STEP(2, 4, 6, 2, i + 2);
        AMX_STEP(3, 5, 7, 3, i + 3);
        AMX_STEP(0, 4, 6, 4, i + 4);
        AMX_STEP(1, 5, 7, 5, i + 5);
        AMX_STEP(2, 4, 6, 6, i + 6);
        AMX_STEP(3, 5, 7, 7, i + 7);
    }
    for (int64_t i = P - AMX_LAG; i < P; ++i) amx_epi(cb[i & 7], st + i, wa, xd, lanes, acc);
    __m512 r[16];   /* (not acc: that one stays in registers) */
    if (kind == KIND_KM) {   /* accb[j] = fma(b, xs, accb[j]) over the groups */
        for (int j = 0; j < 8; ++j) {
            for (int n = 0; n < 16; ++n) r[n] = _mm512_setzero_ps();
            for (int64_t s = 0; s < G; ++s) {
                const __m512 xsv = _mm512_load_ps(xs + s * 128 + 16 * j);
                const float *bn = wb + s * 128 + j;
#pragma GCC unroll 16
                for (int n = 0; n < 16; ++n) r[n] = _mm512_fmadd_ps(_mm512_set1_ps(bn[8 * n]), xsv, r[n]);
            }
            for (int n = 0; n < 16; ++n) _mm512_store_ps(lanes + 256 * (16 + j) + 16 * n, r[n]);
        }
    }
    for (int n = 0; n < 16; ++n) {   /* q8_result: tree8(acc[j] + acc[8 + j]) − tree8(accb) */
        __m512 u[8], v[8];
        for (int j = 0; j < 8; ++j) {
            const float *lj = lanes + 256 * j + 16 * n;
            u[j] = _mm512_add_ps(_mm512_load_ps(lj), _mm512_load_ps(lj + 256 * 8));
            v[j] = kind == KIND_KM ? _mm512_load_ps(lanes + 256 * (16 + j) + 16 * n) : _mm512_setzero_ps();
        }
#define TREE8(a) _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[4]), _mm512_add_ps(a[2], a[6])), \
                               _mm512_add_ps(_mm512_add_ps(a[1], a[5]), _mm512_add_ps(a[3], a[7])))
        const __m512 main = TREE8(u);
        r[n] = kind == KIND_KM ? _mm512_sub_ps(main, TREE8(v)) : main;
#undef TREE8
    }
    amx_store_transposed(r, y, ldy, mrows, ncols);
}

/* Outputs [n0, n1) of one segment for all M rows: a pass decodes a block of strips (about AMX_BLOCK_BYTES),
   then each 16-row tile of X goes over all of them (consecutive tiles write neighbouring parts of the same
   rows of Y). Returns 0, or 1 when its scratch memory was not had (the caller then runs the VNNI kernels:
   the same numbers). */
static int amx_segment_rows(int type, const uint8_t *xpack, int64_t M, int64_t K, const uint8_t *w, int64_t rowbytes,
                            int64_t n0, int64_t n1, float *y, int64_t ldy) {
    const int64_t G = (K + QKK - 1) / QKK, MT = (M + 15) / 16, strip = G * (4096 + 1024 + 512);
    int64_t nb = AMX_BLOCK_BYTES / strip;
    nb = nb < 1 ? 1 : nb;
    uint8_t *wd = aligned_alloc(64, nb * strip);
    float *lanes = aligned_alloc(64, 24 * 1024);
    amx_step *st = malloc(16 * G * sizeof *st);
    if (!wd || !lanes || !st) {
        free(wd), free(lanes), free(st);
        return 1;
    }
    const int32_t *xb = (const int32_t *)xpack;
    const float *xd = (const float *)(xpack + MT * G * 4096), *xs = xd + MT * G * 256;
    amx_steps(G, st);
    amx_config();
    for (int64_t c0 = n0; c0 < n1; c0 += 16 * nb) {
        const int64_t c1 = c0 + 16 * nb < n1 ? c0 + 16 * nb : n1;
        for (int64_t c = c0; c < c1; c += 16) {
            uint8_t *d = wd + (c - c0) / 16 * strip;
            amx_decode_strip(type, w + c * rowbytes, rowbytes, n1 - c < 16 ? (int)(n1 - c) : 16, G, K, (int8_t *)d,
                             (float *)(d + G * 4096), (float *)(d + G * 5120));
        }
        for (int64_t mt = 0; mt < MT; ++mt)
            for (int64_t c = c0; c < c1; c += 16) {
                const uint8_t *d = wd + (c - c0) / 16 * strip;
                amx_tile(q8_kind(type), (const int8_t *)d, (const float *)(d + G * 4096), (const float *)(d + G * 5120),
                         G, st, xb + mt * G * 1024, xd + mt * G * 256, xs + mt * G * 128, lanes, y + 16 * mt * ldy + c,
                         ldy, M - 16 * mt < 16 ? (int)(M - 16 * mt) : 16, n1 - c < 16 ? (int)(n1 - c) : 16);
            }
    }
    _tile_release();
    free(wd), free(lanes), free(st);
    return 0;
}

#include "quant_amx_packed.h"

#else
#define SPX_AMX 0
int spx_amx_init(void) { return -1; }
int spx_set_amx(int32_t on) { (void)on; return 0; }
int spx_amx_min_rows(void) { return 0; }
#endif
