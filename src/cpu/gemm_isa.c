/* GEMM inner kernels, written once over GNU C vector types and emitted once
 * per ISA level by tools/amalgamate.sh, like vexec_isa.c (TC__ISA_SFX,
 * TC__ISA_W, TC__ISA_ATTR).  gemm.c picks the level's instance at run time.
 *
 * The microkernel computes one MR x NR tile of C from packed slivers,
 *   C[0..mr, 0..nr) = (or +=) Ap[kc x MR] @ Bp[kc x NR],
 * with MR * 2 vector accumulators held in registers for the whole kc loop:
 * per k it loads two vectors of B and broadcasts MR values of A.  MR fills
 * the register file: 12 rows on AVX-512 (24 of 32 zmm), 6 on AVX2 (12 of 16
 * ymm), 8 on NEON (16 of 32), 4 on SSE2 and scalar.  The packs are
 * zero-padded, so a partial tile computes as a full one and only its store
 * is partial (masked on AVX-512, through a small buffer elsewhere).
 *
 * The GEMV kernels (M = 1) stream B once at memory speed: the axpy form
 * (B's rows contiguous, matmul's [K, N]) adds four rows of B at a time into
 * a column block of C kept in L1; the dot form (B's columns contiguous,
 * linear's weight [N, K]) runs four dot products at a time with the x
 * vector shared; a B packed once for it (freeze) is streamed by
 * tc__gemv_, rows of A against blocks of 4 vectors of columns. */

#define TC__GV TC__CAT(tc__gv_, TC__ISA_SFX)
#define TC__GVU TC__CAT(tc__gvu_, TC__ISA_SFX)
#define TC__GFN(name) TC__CAT(name, TC__ISA_SFX)
#define TC__GW TC__ISA_W
#define TC__GINL static inline TC__ISA_ATTR TC__UNUSED

#if TC__ISA_W == 16
#define TC__GMR 12
#elif TC__ISA_W == 8
#define TC__GMR 6
#elif TC__ISA_W == 4 && defined(__aarch64__)
#define TC__GMR 8
#else
#define TC__GMR 4
#endif
#define TC__GNR (2 * TC__ISA_W)

typedef float TC__GV __attribute__((vector_size(4 * TC__ISA_W)));
typedef float TC__GVU __attribute__((vector_size(4 * TC__ISA_W), aligned(4), may_alias));

TC__GINL TC__GV TC__GFN(tc__gld_)(const float *p) { return *(const TC__GVU *)p; }
TC__GINL void TC__GFN(tc__gst_)(float *p, TC__GV v) { *(TC__GVU *)p = v; }
TC__GINL TC__GV TC__GFN(tc__gsplat_)(float c) { /* bit for bit: see tc__vsplat_ */
    TC__GV v = {0};
    return -v + c;
}
/* c + a * b, one rounding where the ISA fuses it */
TC__GINL TC__GV TC__GFN(tc__gfma_)(TC__GV a, TC__GV b, TC__GV c) {
#if TC__ISA_W == 16
    return (TC__GV)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif TC__ISA_W == 8
    return (TC__GV)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#elif TC__ISA_W == 4 && defined(__aarch64__)
    return (TC__GV)vfmaq_f32((float32x4_t)c, (float32x4_t)a, (float32x4_t)b);
#else
    return a * b + c;
#endif
}
#define TC__GLD(p) TC__GFN(tc__gld_)(p)
#define TC__GST(p, v) TC__GFN(tc__gst_)(p, v)
#define TC__GFMA(a, b, c) TC__GFN(tc__gfma_)(a, b, c)

/* One row of the tile (two vectors) to C: nr of its NR columns, added to
 * what C holds when acc is set. */
TC__GINL void TC__GFN(tc__grow_out_)(float *p, TC__GV x0, TC__GV x1, int nr, int acc) {
    if (nr == TC__GNR) {
        if (acc) {
            x0 += TC__GLD(p);
            x1 += TC__GLD(p + TC__GW);
        }
        TC__GST(p, x0);
        TC__GST(p + TC__GW, x1);
        return;
    }
#if TC__ISA_W == 16
    {
        __mmask16 m0 = (__mmask16)(nr >= 16 ? 0xFFFF : (1u << nr) - 1),
                  m1 = (__mmask16)(nr <= 16 ? 0 : (1u << (nr - 16)) - 1);
        if (acc) {
            x0 += (TC__GV)_mm512_maskz_loadu_ps(m0, p);
            x1 += (TC__GV)_mm512_maskz_loadu_ps(m1, p + 16);
        }
        _mm512_mask_storeu_ps(p, m0, (__m512)x0);
        _mm512_mask_storeu_ps(p + 16, m1, (__m512)x1);
    }
#else
    {
        float t[TC__GNR];
        int j;
        TC__GST(t, x0);
        TC__GST(t + TC__GW, x1);
        for (j = 0; j < nr; j++) p[j] = acc ? p[j] + t[j] : t[j];
    }
#endif
}

/* The rows of the tile, by name, so that they stay in registers; a step
 * broadcasts row i's value from TC__GR_A (the GEMM's packed A, the direct
 * convolution's packed weights). */
#define TC__GR_DECL(i) TC__GV c##i##a = z, c##i##b = z;
#define TC__GR_STEP(i)                                  \
    {                                                   \
        TC__GV a_ = TC__GFN(tc__gsplat_)(TC__GR_A[i]);  \
        c##i##a = TC__GFMA(a_, b0, c##i##a);            \
        c##i##b = TC__GFMA(a_, b1, c##i##b);            \
    }
#define TC__GR_OUT(i) \
    if (i < mr) TC__GFN(tc__grow_out_)(c + (int64_t)i * ldc, c##i##a, c##i##b, nr, acc);
#if TC__GMR == 12
#define TC__GR_ALL(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#elif TC__GMR == 8
#define TC__GR_ALL(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#elif TC__GMR == 6
#define TC__GR_ALL(X) X(0) X(1) X(2) X(3) X(4) X(5)
#else
#define TC__GR_ALL(X) X(0) X(1) X(2) X(3)
#endif

#define TC__GR_A ap
static TC__ISA_ATTR TC__UNUSED void TC__GFN(tc__ukr_)(int64_t kc, const float *TC__RESTRICT ap,
                                                       const float *TC__RESTRICT bp, float *c, int64_t ldc, int mr,
                                                       int nr, int acc) {
    TC__GV z = {0};
    int64_t k;
    TC__GR_ALL(TC__GR_DECL)
    for (k = 0; k < kc; k++, ap += TC__GMR, bp += TC__GNR) {
        TC__GV b0 = TC__GLD(bp), b1 = TC__GLD(bp + TC__GW);
        TC__GR_ALL(TC__GR_STEP)
    }
    TC__GR_ALL(TC__GR_OUT)
}
#undef TC__GR_A
#undef TC__GR_OUT

/* For rows i < m of A (row i at a + i * lda, its k-th value at a[k * sa]):
 * c_i[0..n) += sum over r < nk of a_i[r] * B[r * ldb + 0..n).  Four rows of
 * B at a time (16 KiB for n = 1024, so L1) are added into every row of C,
 * so B is read from memory once whatever m is. */
static TC__ISA_ATTR TC__UNUSED void TC__GFN(tc__gemm_axpy_)(const float *a, int64_t lda, int64_t sa, int64_t m,
                                                             const float *b, int64_t ldb, int64_t nk, float *c,
                                                             int64_t ldc, int64_t n) {
    int64_t r, i, j;
    for (r = 0; r + 4 <= nk; r += 4) {
        const float *b0 = b + r * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
        for (i = 0; i < m; i++) {
            const float *ai = a + i * lda + r * sa;
            float s0 = ai[0], s1 = ai[sa], s2 = ai[2 * sa], s3 = ai[3 * sa];
            TC__GV a0 = TC__GFN(tc__gsplat_)(s0), a1 = TC__GFN(tc__gsplat_)(s1), a2 = TC__GFN(tc__gsplat_)(s2),
                   a3 = TC__GFN(tc__gsplat_)(s3);
            float *ci = c + i * ldc;
            for (j = 0; j + TC__GW <= n; j += TC__GW) {
                TC__GV v = TC__GLD(ci + j);
                v = TC__GFMA(a0, TC__GLD(b0 + j), v);
                v = TC__GFMA(a1, TC__GLD(b1 + j), v);
                v = TC__GFMA(a2, TC__GLD(b2 + j), v);
                v = TC__GFMA(a3, TC__GLD(b3 + j), v);
                TC__GST(ci + j, v);
            }
            for (; j < n; j++) ci[j] += s0 * b0[j] + s1 * b1[j] + s2 * b2[j] + s3 * b3[j];
        }
    }
    /* the last rows one at a time: never 0 * a row of B (inf * 0 is NaN) */
    for (; r < nk; r++) {
        const float *br = b + r * ldb;
        for (i = 0; i < m; i++) {
            float s = a[i * lda + r * sa], *ci = c + i * ldc;
            TC__GV av = TC__GFN(tc__gsplat_)(s);
            for (j = 0; j + TC__GW <= n; j += TC__GW) TC__GST(ci + j, TC__GFMA(av, TC__GLD(br + j), TC__GLD(ci + j)));
            for (; j < n; j++) ci[j] += s * br[j];
        }
    }
}

/* The lanes of v summed. */
TC__GINL float TC__GFN(tc__ghsum_)(TC__GV v) {
    float s = 0;
    int i;
    for (i = 0; i < TC__GW; i++) s += v[i];
    return s;
}

/* c[i * ldc + j] = dot(a + i * lda, b + j * ldb) over k, for i < m, j < n
 * (A's rows and B's columns contiguous: linear with its weight [N, K]).
 * Blocks of 4 x 4 dot products share their loads; the 4 columns of B (4 k
 * floats each) stay in L1 while every row block of A passes, so B is read
 * from memory once. */
#define TC__GD_ROWS(X) X(0) X(1) X(2) X(3)
static TC__ISA_ATTR TC__UNUSED void TC__GFN(tc__gemm_dot_)(const float *a, int64_t lda, int64_t m, const float *b,
                                                            int64_t ldb, int64_t k, float *c, int64_t ldc, int64_t n) {
    int64_t j, i, q;
    for (j = 0; j < n; j += 4) {
        int nj = n - j < 4 ? (int)(n - j) : 4;
        const float *b0 = b + j * ldb, *b1 = nj > 1 ? b0 + ldb : b0, *b2 = nj > 2 ? b0 + 2 * ldb : b0,
                    *b3 = nj > 3 ? b0 + 3 * ldb : b0;
        for (i = 0; i < m; i += 4) {
            int mi = m - i < 4 ? (int)(m - i) : 4, t, u;
            const float *ar[4];
            TC__GV z = {0};
#define TC__GD_DECL(r) TC__GV s##r##0 = z, s##r##1 = z, s##r##2 = z, s##r##3 = z;
            TC__GD_ROWS(TC__GD_DECL)
#undef TC__GD_DECL
            float out[4][4];
            for (t = 0; t < 4; t++) ar[t] = a + (i + (t < mi ? t : 0)) * lda;
            for (q = 0; q + TC__GW <= k; q += TC__GW) {
                TC__GV w0 = TC__GLD(b0 + q), w1 = TC__GLD(b1 + q), w2 = TC__GLD(b2 + q), w3 = TC__GLD(b3 + q);
#define TC__GD_STEP(r)                          \
    {                                           \
        TC__GV x_ = TC__GLD(ar[r] + q);         \
        s##r##0 = TC__GFMA(x_, w0, s##r##0);    \
        s##r##1 = TC__GFMA(x_, w1, s##r##1);    \
        s##r##2 = TC__GFMA(x_, w2, s##r##2);    \
        s##r##3 = TC__GFMA(x_, w3, s##r##3);    \
    }
                TC__GD_ROWS(TC__GD_STEP)
#undef TC__GD_STEP
            }
#define TC__GD_SUM(r)                                 \
    out[r][0] = TC__GFN(tc__ghsum_)(s##r##0);         \
    out[r][1] = TC__GFN(tc__ghsum_)(s##r##1);         \
    out[r][2] = TC__GFN(tc__ghsum_)(s##r##2);         \
    out[r][3] = TC__GFN(tc__ghsum_)(s##r##3);
            TC__GD_ROWS(TC__GD_SUM)
#undef TC__GD_SUM
            for (; q < k; q++)
                for (t = 0; t < 4; t++) {
                    out[t][0] += ar[t][q] * b0[q];
                    out[t][1] += ar[t][q] * b1[q];
                    out[t][2] += ar[t][q] * b2[q];
                    out[t][3] += ar[t][q] * b3[q];
                }
            for (t = 0; t < mi; t++)
                for (u = 0; u < nj; u++) c[(i + t) * ldc + j + u] = out[t][u];
        }
    }
}
#undef TC__GD_ROWS

/* GEMV and small-M GEMM over a block of B packed for it (freeze,
 * tc__gemv_pack in gemm.c): Bp is kc x (nv vectors), row k at bp + k * ldb,
 * so one block is one contiguous stream.  Per k: nv vector loads of B, one
 * broadcast of A per row, rows x nv FMAs into accumulators that stay in
 * registers for the whole kc loop; no horizontal sums.  Rows run in groups
 * of TC__GVR (4 where there are 32 vector registers), blocks of 4 vectors
 * (the last block of a B may be narrower: one vector at a time).  Where a
 * group has few accumulators (4 or fewer) a second set takes the odd k, so
 * the FMA latency does not bound a single row's stream.
 *   t[i * ldt + 0..nv W) = (acc ? t : 0) + sum_k a[i * lda + k * sa] * Bp[k] */
#if TC__ISA_W == 16 || (TC__ISA_W == 4 && defined(__aarch64__))
#define TC__GVR 4
#else
#define TC__GVR 2
#endif
/* `ahead`: rows of the block fetched ahead, a line per 16 floats (gemm.c
 * picks it): the hardware stream alone left each block's run short of
 * requests in flight, from L3 and more so from memory. */
#define TC__GVA(X, s) \
    X(s, 0, 0) X(s, 0, 1) X(s, 0, 2) X(s, 0, 3) X(s, 1, 0) X(s, 1, 1) X(s, 1, 2) X(s, 1, 3) \
    X(s, 2, 0) X(s, 2, 1) X(s, 2, 2) X(s, 2, 3) X(s, 3, 0) X(s, 3, 1) X(s, 3, 2) X(s, 3, 3)
#define TC__GVA_DECL(s, r, v) TC__GV s##r##v = z;
#define TC__GVA_FMA(s, r, v) \
    if (R > r && NV > v) s##r##v = TC__GFMA(x##r, b##v, s##r##v);
#define TC__GVA_SUM(s, r, v) \
    if (R > r && NV > v) c##r##v += d##r##v;
#define TC__GVA_OUT(s, r, v)                                                 \
    if (R > r && NV > v) {                                                   \
        float *p_ = t + (int64_t)r * ldt + v * TC__GW;                       \
        TC__GST(p_, acc ? TC__GLD(p_) + c##r##v : c##r##v);                 \
    }
/* the loads of row k of Bp, the broadcasts of A, the FMAs into set s */
#define TC__GV_STEP(s, kk)                                                                                   \
    {                                                                                                        \
        const float *b_ = bp + (kk) * ldb;                                                                   \
        tc__prefetch(b_ + ahead * ldb);                                                                      \
        if (NV * TC__GW > 16) tc__prefetch(b_ + ahead * ldb + 16);                                           \
        if (NV * TC__GW > 32) tc__prefetch(b_ + ahead * ldb + 32);                                           \
        if (NV * TC__GW > 48) tc__prefetch(b_ + ahead * ldb + 48);                                           \
        TC__GV b0 = TC__GLD(b_), b1 = NV > 1 ? TC__GLD(b_ + TC__GW) : z, b2 = NV > 2 ? TC__GLD(b_ + 2 * TC__GW) : z, \
               b3 = NV > 3 ? TC__GLD(b_ + 3 * TC__GW) : z;                                                   \
        TC__GV x0 = TC__GFN(tc__gsplat_)(a0[(kk) * sa]), x1 = R > 1 ? TC__GFN(tc__gsplat_)(a1[(kk) * sa]) : z, \
               x2 = R > 2 ? TC__GFN(tc__gsplat_)(a2[(kk) * sa]) : z,                                         \
               x3 = R > 3 ? TC__GFN(tc__gsplat_)(a3[(kk) * sa]) : z;                                         \
        TC__GVA(TC__GVA_FMA, s)                                                                              \
    }

static inline __attribute__((always_inline)) TC__ISA_ATTR TC__UNUSED void TC__GFN(tc__gemv_rows_)(
    const int R, const int NV, const float *a, int64_t lda, int64_t sa, const float *TC__RESTRICT bp, int64_t ldb,
    int64_t kc, float *TC__RESTRICT t, int64_t ldt, int acc, int64_t ahead) {
    TC__GV z = {0};
    const float *a0 = a, *a1 = a + (R > 1 ? lda : 0), *a2 = a + (R > 2 ? 2 * lda : 0), *a3 = a + (R > 3 ? 3 * lda : 0);
    int64_t k = 0;
    TC__GVA(TC__GVA_DECL, c)
    TC__GVA(TC__GVA_DECL, d)
    if (R * NV <= 4) {
        for (; k + 2 <= kc; k += 2) {
            TC__GV_STEP(c, k)
            TC__GV_STEP(d, k + 1)
        }
        TC__GVA(TC__GVA_SUM, c)
    }
    for (; k < kc; k++) TC__GV_STEP(c, k)
    TC__GVA(TC__GVA_OUT, c)
}
#undef TC__GVA_DECL
#undef TC__GVA_FMA
#undef TC__GVA_SUM
#undef TC__GVA_OUT
#undef TC__GV_STEP
#undef TC__GVA

/* A rows group of r <= TC__GVR rows over nv vectors (NV: 4, or 1 at a time). */
#if TC__GVR == 4
#define TC__GV_GROUP(NV, bb, tt)                                                   \
    switch (r) {                                                                   \
    case 1: TC__GFN(tc__gemv_rows_)(1, NV, ai, lda, sa, bb, ldb, kc, tt, ldt, acc, ahead); break; \
    case 2: TC__GFN(tc__gemv_rows_)(2, NV, ai, lda, sa, bb, ldb, kc, tt, ldt, acc, ahead); break; \
    case 3: TC__GFN(tc__gemv_rows_)(3, NV, ai, lda, sa, bb, ldb, kc, tt, ldt, acc, ahead); break; \
    default: TC__GFN(tc__gemv_rows_)(4, NV, ai, lda, sa, bb, ldb, kc, tt, ldt, acc, ahead); break; \
    }
#else
#define TC__GV_GROUP(NV, bb, tt)                                                                  \
    if (r == 1) TC__GFN(tc__gemv_rows_)(1, NV, ai, lda, sa, bb, ldb, kc, tt, ldt, acc, ahead);            \
    else TC__GFN(tc__gemv_rows_)(2, NV, ai, lda, sa, bb, ldb, kc, tt, ldt, acc, ahead);
#endif
static TC__ISA_ATTR TC__UNUSED void TC__GFN(tc__gemv_)(const float *a, int64_t lda, int64_t sa, int64_t m,
                                                       const float *bp, int64_t ldb, int64_t kc, int nv, float *t,
                                                       int64_t ldt, int acc, int64_t ahead) {
    int64_t i;
    int v;
    for (i = 0; i < m; i += TC__GVR) {
        int r = m - i < TC__GVR ? (int)(m - i) : TC__GVR;
        const float *ai = a + i * lda;
        float *ti = t + i * ldt;
        if (nv == 4) {
            TC__GV_GROUP(4, bp, ti)
        } else {
            for (v = 0; v < nv; v++) {
                TC__GV_GROUP(1, bp + v * TC__GW, ti + v * TC__GW)
            }
        }
    }
}
#undef TC__GV_GROUP
#undef TC__GVR

/* A finished tile: c = c * alpha + bias[col] over mr rows of nr columns. */
static TC__ISA_ATTR TC__UNUSED void TC__GFN(tc__gtile_fin_)(float *c, int64_t ldc, int64_t mr, int64_t nr, float alpha,
                                                             const float *bias) {
    TC__GV va = TC__GFN(tc__gsplat_)(alpha), z = {0};
    int64_t i, j;
    for (i = 0; i < mr; i++) {
        float *r = c + i * ldc;
        for (j = 0; j + TC__GW <= nr; j += TC__GW) TC__GST(r + j, TC__GLD(r + j) * va + (bias ? TC__GLD(bias + j) : z));
        for (; j < nr; j++) r[j] = r[j] * alpha + (bias ? bias[j] : 0.0f);
    }
}

/* Window kernels (depthwise convolution and pooling, conv.c): one output
 * row y[0..n) from ntaps input rows that conv.c has padded and split by
 * stride phase, so tap t reads taps[t][i] for output i:
 *   kind 0: y = bias + sum_t w[t] * taps[t][i]
 *   kind 1: y = max_t taps[t][i], a NaN winning (torch's max_pool2d)
 *   kind 2: y = sum_t taps[t][i]  (avg_pool2d, divided by the caller)
 * Two vectors of outputs per step hold every tap's sum in registers. */
typedef int32_t TC__CAT(tc__gvi_, TC__ISA_SFX) __attribute__((vector_size(4 * TC__ISA_W)));
#define TC__GVI TC__CAT(tc__gvi_, TC__ISA_SFX)
TC__GINL TC__GV TC__GFN(tc__gmax_nan_)(TC__GV m, TC__GV v) {
    TC__GVI take = (v > m) | (v != v);
    return (TC__GV)(((TC__GVI)v & take) | ((TC__GVI)m & ~take));
}

/* One vector of outputs from i on. */
TC__GINL TC__GV TC__GFN(tc__gwin_vec_)(int kind, const float *const *taps, const float *w, int ntaps, int64_t i,
                                        float bias) {
    TC__GV a;
    int t;
    if (kind == 1) {
        a = TC__GLD(taps[0] + i);
        for (t = 1; t < ntaps; t++) a = TC__GFN(tc__gmax_nan_)(a, TC__GLD(taps[t] + i));
    } else if (kind == 0) {
        a = TC__GFN(tc__gsplat_)(bias);
        for (t = 0; t < ntaps; t++) a = TC__GFMA(TC__GFN(tc__gsplat_)(w[t]), TC__GLD(taps[t] + i), a);
    } else {
        a = TC__GFN(tc__gsplat_)(0.0f);
        for (t = 0; t < ntaps; t++) a += TC__GLD(taps[t] + i);
    }
    return a;
}

/* The taps may be read up to a vector past n (conv.c pads its buffer for
 * it): a short tail is computed whole and stored in part. */
static TC__ISA_ATTR TC__UNUSED void TC__GFN(tc__gwin_row_)(int kind, const float *const *taps, const float *w, int ntaps,
                                                           int64_t n, float *y, float bias) {
    int64_t i = 0;
    int t;
    for (; i + 2 * TC__GW <= n; i += 2 * TC__GW) {
        TC__GV a0, a1;
        if (kind == 1) {
            a0 = TC__GLD(taps[0] + i);
            a1 = TC__GLD(taps[0] + i + TC__GW);
            for (t = 1; t < ntaps; t++) {
                a0 = TC__GFN(tc__gmax_nan_)(a0, TC__GLD(taps[t] + i));
                a1 = TC__GFN(tc__gmax_nan_)(a1, TC__GLD(taps[t] + i + TC__GW));
            }
        } else if (kind == 0) {
            a0 = a1 = TC__GFN(tc__gsplat_)(bias);
            for (t = 0; t < ntaps; t++) {
                TC__GV wt = TC__GFN(tc__gsplat_)(w[t]);
                a0 = TC__GFMA(wt, TC__GLD(taps[t] + i), a0);
                a1 = TC__GFMA(wt, TC__GLD(taps[t] + i + TC__GW), a1);
            }
        } else {
            a0 = a1 = TC__GFN(tc__gsplat_)(0.0f);
            for (t = 0; t < ntaps; t++) {
                a0 += TC__GLD(taps[t] + i);
                a1 += TC__GLD(taps[t] + i + TC__GW);
            }
        }
        TC__GST(y + i, a0);
        TC__GST(y + i + TC__GW, a1);
    }
    for (; i < n; i += TC__GW) {
        TC__GV a = TC__GFN(tc__gwin_vec_)(kind, taps, w, ntaps, i, bias);
        if (i + TC__GW <= n) {
            TC__GST(y + i, a);
        } else {
            float part[TC__GW];
            TC__GST(part, a);
            memcpy(y + i, part, sizeof(float) * (size_t)(n - i));
        }
    }
}

/* Direct convolution (conv.c's tc__dconv_*): one tile of MR output
 * channels x NV vectors of output positions,
 *   c[i * ldc + j] = sum_k wp[k * MR + i] * x[koff[k] + j],
 * for i < mr (rows past mr are not stored), j < NV * W; added to what c
 * holds when acc is set (the sum over k split in slices that stay in L1).  x is the input
 * band conv.c has padded and split by stride phase, so that for every tap
 * k (channel, kernel row, kernel column) consecutive output positions read
 * consecutive floats at koff[k]: the im2col matrix is read in place, as
 * whole vectors, never packed.  wp is the tile's weights, packed once
 * (freeze) or per call, [k][MR] zero-padded.  Two shapes per level: the
 * GEMM's (TC__GMR x 2 vectors) and one of fewer channels and more
 * positions (TC__DMR8 x 3 vectors: 8 on AVX-512, so that 32 or 64 output
 * channels fill every tile). */
#if TC__ISA_W == 16
#define TC__DMR8 8
#else
#define TC__DMR8 4
#endif
#define TC__DR_OUT2(i)                                                                     \
    if (i < mr) {                                                                          \
        float *r_ = c + (int64_t)i * ldc;                                                  \
        if (acc) c##i##a += TC__GLD(r_), c##i##b += TC__GLD(r_ + TC__GW);                  \
        TC__GST(r_, c##i##a), TC__GST(r_ + TC__GW, c##i##b);                               \
    }
#define TC__DR_DECL3(i) TC__GV c##i##a = z, c##i##b = z, c##i##c = z;
#define TC__DR_STEP3(i)                                 \
    {                                                   \
        TC__GV a_ = TC__GFN(tc__gsplat_)(wp[i]);        \
        c##i##a = TC__GFMA(a_, b0, c##i##a);            \
        c##i##b = TC__GFMA(a_, b1, c##i##b);            \
        c##i##c = TC__GFMA(a_, b2, c##i##c);            \
    }
#define TC__DR_OUT3(i)                                                                                   \
    if (i < mr) {                                                                                        \
        float *r_ = c + (int64_t)i * ldc;                                                                \
        if (acc) c##i##a += TC__GLD(r_), c##i##b += TC__GLD(r_ + TC__GW), c##i##c += TC__GLD(r_ + 2 * TC__GW); \
        TC__GST(r_, c##i##a), TC__GST(r_ + TC__GW, c##i##b), TC__GST(r_ + 2 * TC__GW, c##i##c);         \
    }
#define TC__GR_A wp
#if TC__DMR8 == 8
#define TC__DR_ALL8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
#else
#define TC__DR_ALL8(X) X(0) X(1) X(2) X(3)
#endif
static TC__ISA_ATTR TC__UNUSED void TC__GFN(tc__dconv_a_)(int64_t K, const float *TC__RESTRICT wp,
                                                           const float *TC__RESTRICT x, const int64_t *koff, float *c,
                                                           int64_t ldc, int mr, int acc) {
    TC__GV z = {0};
    int64_t k;
    TC__GR_ALL(TC__GR_DECL)
    for (k = 0; k < K; k++, wp += TC__GMR) {
        const float *xk = x + koff[k];
        TC__GV b0 = TC__GLD(xk), b1 = TC__GLD(xk + TC__GW);
        TC__GR_ALL(TC__GR_STEP)
    }
    TC__GR_ALL(TC__DR_OUT2)
}
static TC__ISA_ATTR TC__UNUSED void TC__GFN(tc__dconv_b_)(int64_t K, const float *TC__RESTRICT wp,
                                                           const float *TC__RESTRICT x, const int64_t *koff, float *c,
                                                           int64_t ldc, int mr, int acc) {
    TC__GV z = {0};
    int64_t k;
    TC__DR_ALL8(TC__DR_DECL3)
    for (k = 0; k < K; k++, wp += TC__DMR8) {
        const float *xk = x + koff[k];
        TC__GV b0 = TC__GLD(xk), b1 = TC__GLD(xk + TC__GW), b2 = TC__GLD(xk + 2 * TC__GW);
        TC__DR_ALL8(TC__DR_STEP3)
    }
    TC__DR_ALL8(TC__DR_OUT3)
}
#undef TC__GR_A
#undef TC__GR_DECL
#undef TC__GR_STEP
#undef TC__GR_ALL
#undef TC__DR_ALL8
#undef TC__DR_OUT2
#undef TC__DR_DECL3
#undef TC__DR_STEP3
#undef TC__DR_OUT3

/* The direct conv's tile rows to the output: rows i < mr of the grid g
 * (row i at g + i * ldg; output row r of it at r * wq, wq >= ow) into y
 * (channel i at y + i * ys, row r at r * ow), plus bias[i].  A row's last
 * vector overlaps the one before it rather than going scalar. */
static TC__ISA_ATTR TC__UNUSED void TC__GFN(tc__dconv_out_)(const float *g, int64_t ldg, int64_t wq, int mr,
                                                             int64_t nrows, int64_t ow, float *y, int64_t ys,
                                                             const float *bias) {
    int64_t r, w;
    int i;
    for (i = 0; i < mr; i++) {
        float bs = bias ? bias[i] : 0.0f;
        TC__GV b = TC__GFN(tc__gsplat_)(bs);
        for (r = 0; r < nrows; r++) {
            const float *s = g + i * ldg + r * wq;
            float *d = y + i * ys + r * ow;
            if (ow < TC__GW) {
                for (w = 0; w < ow; w++) d[w] = s[w] + bs;
                continue;
            }
            for (w = 0; w + TC__GW <= ow; w += TC__GW) TC__GST(d + w, TC__GLD(s + w) + b);
            if (w < ow) TC__GST(d + ow - TC__GW, TC__GLD(s + ow - TC__GW) + b);
        }
    }
}

/* The level's register tile, for gemm.c's table; and the direct conv's
 * two tiles (channels x positions). */
static TC__ISA_ATTR TC__UNUSED void TC__GFN(tc__gemm_shape_)(int *mr, int *nr) {
    *mr = TC__GMR;
    *nr = TC__GNR;
}
static TC__ISA_ATTR TC__UNUSED void TC__GFN(tc__dconv_shape_)(int *mra, int *nra, int *mrb, int *nrb) {
    *mra = TC__GMR;
    *nra = 2 * TC__GW;
    *mrb = TC__DMR8;
    *nrb = 3 * TC__GW;
}
#undef TC__DMR8

#undef TC__GV
#undef TC__GVU
#undef TC__GFN
#undef TC__GW
#undef TC__GINL
#undef TC__GMR
#undef TC__GNR
#undef TC__GLD
#undef TC__GST
#undef TC__GFMA
#undef TC__GVI
