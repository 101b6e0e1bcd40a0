/* quant.c's portable kernels, which every build has (the vector builds for the types and shapes their own kernels
   leave): f32 and q8 on the file's layout in plain C, with quant_q8.h's arithmetic; quant.c states the rules. */
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
                if (kind == KIND_G) {   /* acc[r][0] is the one running sum; ns holds −16·Σq per half block */
                    const int16_t *ns = (const int16_t *)(xg + XG_NS);
                    int32_t S = 0, M = 0;
                    for (int j = 0; j < 8; ++j) {
                        S += g.sc[j] * (half_sum(&g, xg, j, 0) + half_sum(&g, xg, j, 1));
                        M -= g.m[j] * ((ns[j] + ns[8 + j]) / 16);
                    }
                    acc[r][0] = g_step(acc[r][0], S, M, g.d, g.dmin, ((const float *)(xg + XG_DX))[0]);
                    continue;
                }
                if (kind == KIND_G6) {   /* half h of block j holds scale 2j + h; the weights are q − 32 */
                    int32_t S = 0;
                    for (int j = 0; j < 8; ++j)
                        for (int h = 0; h < 2; ++h) S += g.sc[2 * j + h] * half_sum(&g, xg, j, h);
                    acc[r][0] = g6_step(acc[r][0], S, g.d, ((const float *)(xg + XG_DX))[0]);
                    continue;
                }
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
        for (int64_t r = 0; r < R; ++r) y[r * ldy + c] = grouped_kind(kind) ? acc[r][0] : q8_result(kind, acc[r], accb[r]);
    }
}
