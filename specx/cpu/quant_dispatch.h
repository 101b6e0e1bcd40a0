/* quant.c's dispatch in the AVX2 and AVX-512 builds: a call's type and row count to one compiled kernel instance
   (one function per kernel and type, spread over the build's units: UNIT_1..UNIT_4), and the DECODED path's
   tiles decoded once for a call's rows. Included by quant.c after the kernels. */
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
#define KERNEL_SIG(F, T)                                                                                     \
    SPX_SHARED __attribute__((noinline)) void F##_##T(int64_t R, const float *x, const uint8_t *xq, int64_t K, \
                                                      const uint8_t *w, int64_t nout, int64_t rowbytes,      \
                                                      float *y, int64_t ldy)
#define KERNEL_FN(F, T, ...)                                       \
    KERNEL_SIG(F, T) {                                             \
        (void)x;                                                   \
        (void)xq;                                                  \
        BY_ROWS(F, T, __VA_ARGS__, K, w, nout, rowbytes, y, ldy)   \
    }
/* the first 8 rows decode and store, the next read (both R = 8: fewer rows decode as without DECODED) */
#define STORE_SIG(T)                                                                                       \
    SPX_SHARED __attribute__((noinline)) void q8_store_##T(const uint8_t *xq, int64_t K, const uint8_t *w,  \
                                                           int64_t nout, int64_t rowbytes, wq *dec, float *y, \
                                                           int64_t ldy)
#define STORED_SIG(T)                                                                                      \
    SPX_SHARED __attribute__((noinline)) void q8_stored_##T(const uint8_t *xq, int64_t K, wq *dec, int64_t nout, \
                                                            float *y, int64_t ldy)
#define QUANT_TYPES(M) M(T_Q4_0) M(T_Q4_1) M(T_Q5_0) M(T_Q5_1) M(T_Q8_0) M(T_Q2_K) M(T_Q4_K) M(T_Q5_K) M(T_Q6_K) \
    M(T_Q3_K) M(T_IQ4_NL) M(T_IQ4_XS)
#define Q8_TYPES(M) QUANT_TYPES(M) M(T_Q4_K_G) M(T_Q6_K_G)   /* the q8 kernels' types (the _G ones have no f32 kernel) */
#define FLOAT_TYPES(M) M(T_F32) M(T_F16) M(T_BF16)
#define Q8_FN(T) KERNEL_FN(q8_rows, T, xq)
#define F32_FN(T) KERNEL_FN(f32_rows, T, x)
#define DECODED_FN(T)                                                                  \
    STORE_SIG(T) { q8_rows_from(T, RMAX, 2, xq, K, w, dec, nout, rowbytes, y, ldy); } \
    STORED_SIG(T) { q8_rows_from(T, RMAX, 1, xq, K, 0, dec, nout, 0, y, ldy); }
#define Q8_DECL(T) KERNEL_SIG(q8_rows, T);
#define F32_DECL(T) KERNEL_SIG(f32_rows, T);
#define DECODED_DECL(T) STORE_SIG(T); STORED_SIG(T);

/* Each unit's instances (q8, f32 and DECODED kernels of a type), balanced by their compile times
   (benchmarks/results/2026-11-30-units): */
#define UNIT_1(Q8, F32, DEC) Q8(T_Q4_K) F32(T_Q4_K) DEC(T_Q4_K) Q8(T_Q4_0) F32(T_Q4_0) DEC(T_Q4_0) \
    Q8(T_Q4_1) F32(T_Q4_1) DEC(T_Q4_1)
#define UNIT_2(Q8, F32, DEC) Q8(T_Q6_K) F32(T_Q6_K) DEC(T_Q6_K) Q8(T_Q5_0) F32(T_Q5_0) DEC(T_Q5_0) \
    Q8(T_Q5_1) F32(T_Q5_1) DEC(T_Q5_1)
#define UNIT_3(Q8, F32, DEC) Q8(T_Q8_0) F32(T_Q8_0) DEC(T_Q8_0) Q8(T_Q5_K) F32(T_Q5_K) DEC(T_Q5_K) \
    Q8(T_Q2_K) F32(T_Q2_K) DEC(T_Q2_K) F32(T_F32) Q8(T_Q6_K_G) DEC(T_Q6_K_G)
#define UNIT_4(Q8, F32, DEC) Q8(T_Q3_K) F32(T_Q3_K) DEC(T_Q3_K) Q8(T_IQ4_NL) F32(T_IQ4_NL) DEC(T_IQ4_NL) \
    Q8(T_IQ4_XS) F32(T_IQ4_XS) DEC(T_IQ4_XS) F32(T_F16) F32(T_BF16) Q8(T_Q4_K_G) DEC(T_Q4_K_G)
#if !defined(SPX_UNIT)
Q8_TYPES(Q8_FN)
QUANT_TYPES(F32_FN)
FLOAT_TYPES(F32_FN)
Q8_TYPES(DECODED_FN)
#elif SPX_UNIT == 0
Q8_TYPES(Q8_DECL)
QUANT_TYPES(F32_DECL)
FLOAT_TYPES(F32_DECL)
Q8_TYPES(DECODED_DECL)
#elif SPX_UNIT == 1
UNIT_1(Q8_FN, F32_FN, DECODED_FN)
#elif SPX_UNIT == 2
UNIT_2(Q8_FN, F32_FN, DECODED_FN)
#elif SPX_UNIT == 3
UNIT_3(Q8_FN, F32_FN, DECODED_FN)
#elif SPX_UNIT == 4
UNIT_4(Q8_FN, F32_FN, DECODED_FN)
#else
#error "SPX_UNIT is 0 to SPX_UNITS - 1"
#endif

#if SPX_DRIVER
static void simd_kernel(int type, int mode, const float *x, const uint8_t *xq, int64_t R, int64_t K,
                        const uint8_t *w, int64_t nout, int64_t rowbytes, float *y, int64_t ldy) {
#define CASE(F, T) \
    case T: F##_##T(R, x, xq, K, w, nout, rowbytes, y, ldy); break;
#define Q8_CASE(T) CASE(q8_rows, T)
#define F32_CASE(T) CASE(f32_rows, T)
    if (mode == MODE_Q8 && !is_float_type(type)) {
        switch (type) { Q8_TYPES(Q8_CASE) default: break; }
    } else {
        switch (type) { QUANT_TYPES(F32_CASE) FLOAT_TYPES(F32_CASE) default: break; }
    }
#undef CASE
}
#endif /* SPX_DRIVER */
#define SPX_SIMD 1

/* DECODED: in a call of 2·RMAX rows or more (a prompt pass, a wide verify), the first RMAX rows passing over a
   tile of weights leave its groups decoded in a buffer of DECODED_BYTES per thread (in L2), and the next RMAX
   rows read them there instead of decoding them again: the same decoded values and the same arithmetic per
   row, so the same bits. A last set of fewer rows decodes as without it, and so do shorter calls, where
   nothing would read what the first set stores (storing alone costs time: benchmarks/results/2026-11-29-decoded,
   which also sized the buffer: a smaller one gained less, a larger one no more). */
#define SPX_DECODED 1
#define DECODED_BYTES (160 << 10)   /* per thread, allocated at its first such call and kept */

#if SPX_DRIVER
/* RMAX rows of X against nout weight rows at w, the decoded weights left in dec (store), or against the rows a
   store left in dec */
static void decoded_kernel(int type, int store, const uint8_t *xq, int64_t K, const uint8_t *w, int64_t nout,
                           int64_t rowbytes, wq *dec, float *y, int64_t ldy) {
#define CASE(T)                                                 \
    case T:                                                     \
        if (store) q8_store_##T(xq, K, w, nout, rowbytes, dec, y, ldy); \
        else q8_stored_##T(xq, K, dec, nout, y, ldy);            \
        break;
    switch (type) { Q8_TYPES(CASE) default: break; }
#undef CASE
}
#endif /* SPX_DRIVER */
#endif
