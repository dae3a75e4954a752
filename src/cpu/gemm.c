/* Blocked GEMM for the eager kernels and compiled graphs:
 * C = alpha * A @ B (+ bias per column), any strides (transposed operands
 * are absorbed by packing).  BLIS structure: for each NC-wide column panel
 * and KC-deep slice, the threads pack B into NR-wide slivers together, then
 * each task packs an MC x KC block of A into MR-tall slivers and runs the
 * ISA's MR x NR register-tile microkernel (gemm_isa.c) over it; C is
 * updated in place, tile by tile.  Edge tiles come from zero-padded packs
 * and only their stores are partial.  Few rows (M <= 4: GEMV, decoding)
 * skip packing and stream B once; against a constant B (freeze, M <= 16)
 * B is packed once in the order the GEMV kernel streams it.  The level
 * follows the context's executor ISA (tc_ctx_set_isa); without GNU C
 * vectors a plain-C 4 x 16 kernel stands in. */

#define TC__GEMM_KC 256  /* k per packed slice: a B sliver (KC x NR) stays in L1 */
#define TC__GEMM_MC_TILES 16 /* MC = 16 MR: an A block stays in L2          */
#define TC__GEMM_NC 2048 /* columns per packed B panel (L3)                */

typedef struct tc__gemm {
    int64_t M, N, K;
    const float *A;
    int64_t rsa, csa;        /* A(i,k) = A[i*rsa + k*csa] */
    const float *B;
    int64_t rsb, csb;        /* B(k,j) = B[k*rsb + j*csb] */
    float *C;
    int64_t ldc;             /* C(i,j) = C[i*ldc + j]     */
    float alpha;
    const float *bias;       /* bias[j] added to column j, or NULL */
    const tc__epilogue *epi; /* after alpha and bias, per finished block */
    int kc, mc_tiles;        /* blocking; 0: TC__GEMM_KC, TC__GEMM_MC_TILES */
    int64_t epi_row0;        /* this problem's first row in the epilogue's view */
    struct tc__gemm_prepack *pre; /* B packed once (freeze), or NULL      */
    const float *rbias;      /* rbias[i] added to row i (conv's bias), or NULL */
    /* B computed while it is packed instead of read (implicit GEMM: conv's
     * im2col matrix, never stored); same contract as tc__pack_b, with B
     * as packb_arg's base pointer.  NULL: B is a strided matrix. */
    void (*packb)(const struct tc__gemm *g, int nr, int64_t pc, int64_t kc, int64_t jc, int64_t nc, int64_t js0,
                  int64_t js1, float *bp);
    const void *packb_arg;
    tc_isa isa;              /* the microkernels' level when below the
                                context's (max-autotune's choice); 0: its */
} tc__gemm;

/* Multiply-adds plus 8 per element of B (reading a weight from L2 or L3
 * costs several FMAs' time) below which a matmul or linear stays on the
 * calling thread: waking, then joining, another thread costs microseconds
 * (far more when a busy host has descheduled it), where such a product
 * takes a few.  A shape's decision, the same at every call. */
#define TC__GEMM_PAR_MIN ((int64_t)1 << 21)

TC__FN int tc__gemm_small(const struct tc__gemm *g) { return (g->M + 8) * g->N * g->K < TC__GEMM_PAR_MIN; }

/* A constant B packed whole, in the order tc__gemm_run walks its panels
 * (for each NC panel, each KC slice): packing is paid once, not per call.
 * Repacked when the blocking or the ISA's NR changes (max-autotune tries
 * several) or B moves. */
typedef struct tc__gemm_prepack {
    float *data;
    size_t floats;
    int kc, nr, ncmax;
    int gemv;                /* 1: blocks for tc__gemv_ (kc, ncmax unused;
                                nr: the block's floats per k) */
    const float *src;
    int64_t K, N, rsb, csb;
    int valid;
} tc__gemm_prepack;

TC__FN void tc__gemm_prepack_free(tc__gemm_prepack *pp) {
    if (!pp) return;
    TC_FREE(pp->data);
    TC_FREE(pp);
}

/* Row bias on a final block of C (rows [row, row + m), columns [col, col + n)). */
TC__FN void tc__gemm_rbias(const tc__gemm *g, int64_t row, int64_t m, int64_t col, int64_t n) {
    int64_t i, q;
    if (!g->rbias) return;
    for (i = 0; i < m; i++) {
        float *c = g->C + (row + i) * g->ldc + col, b = g->rbias[row + i];
        for (q = 0; q < n; q++) c[q] += b;
    }
}

/* A block of C is final: the row bias, then the epilogue, while it is in cache. */
TC__FN void tc__gemm_epi(const tc__gemm *g, int64_t row, int64_t m, int64_t col, int64_t n) {
    if (m <= 0 || n <= 0) return;
    tc__gemm_rbias(g, row, m, col, n);
    if (g->epi) g->epi->fn(g->epi->arg, g->epi_row0 + row, m, col, n, g->ldc);
}

typedef void (*tc__ukr_fn)(int64_t kc, const float *ap, const float *bp, float *c, int64_t ldc, int mr, int nr,
                           int acc);
typedef void (*tc__gemm_axpy_fn)(const float *a, int64_t lda, int64_t sa, int64_t m, const float *b, int64_t ldb,
                                 int64_t nk, float *c, int64_t ldc, int64_t n);
typedef void (*tc__gemm_dot_fn)(const float *a, int64_t lda, int64_t m, const float *b, int64_t ldb, int64_t k,
                                float *c, int64_t ldc, int64_t n);
typedef void (*tc__gemv_fn)(const float *a, int64_t lda, int64_t sa, int64_t m, const float *bp, int64_t ldb,
                            int64_t kc, int nv, float *t, int64_t ldt, int acc, int64_t ahead);
typedef void (*tc__gtile_fin_fn)(float *c, int64_t ldc, int64_t mr, int64_t nr, float alpha, const float *bias);
typedef void (*tc__gwin_row_fn)(int kind, const float *const *taps, const float *w, int ntaps, int64_t n, float *y,
                               float bias);
typedef void (*tc__dconv_fn)(int64_t K, const float *wp, const float *x, const int64_t *koff, float *c, int64_t ldc,
                             int mr, int acc);
typedef void (*tc__dconv_out_fn)(const float *g, int64_t ldg, int64_t wq, int mr, int64_t nrows, int64_t ow, float *y,
                                 int64_t ys, const float *bias);

/* One ISA level's kernels and register tile. */
typedef struct tc__gemm_impl {
    tc_isa isa;
    int mr, nr;
    tc__ukr_fn ukr;
    tc__gemm_axpy_fn axpy;
    tc__gemm_dot_fn dot;
    tc__gemv_fn gemv;         /* a B packed for it (freeze), vectors of nr / 2 */
    tc__gtile_fin_fn fin;
    tc__gwin_row_fn win;      /* depthwise conv and pooling rows (conv.c) */
    /* direct convolution (conv.c): tile a of mra channels x nra positions,
     * tile b of mrb x nrb (gemm_isa.c's tc__dconv_a_ / _b_) */
    tc__dconv_fn dconv_a, dconv_b;
    tc__dconv_out_fn dconv_out; /* a tile's rows to the output (conv.c) */
    int mra, nra, mrb, nrb;
} tc__gemm_impl;

/* Plain C, for compilers without GNU C vectors (MSVC): a 4 x 16 tile in
 * named row arrays, which the compiler vectorises for the ISA it targets. */
#define TC__BASE_MR 4
#define TC__BASE_NR 16
/* B's row k: packed (koff NULL, rows of TC__BASE_NR) or at bp + koff[k]
 * (the direct convolution's taps). */
TC__FN void tc__tile_base(int64_t kc, const float *TC__RESTRICT ap, const float *TC__RESTRICT bp, const int64_t *koff,
                          float *c, int64_t ldc, int mr, int nr, int acc) {
    float c0[TC__BASE_NR], c1[TC__BASE_NR], c2[TC__BASE_NR], c3[TC__BASE_NR];
    float *rows[TC__BASE_MR];
    int64_t k;
    int i, j;
    for (j = 0; j < TC__BASE_NR; j++) c0[j] = c1[j] = c2[j] = c3[j] = 0.0f;
    for (k = 0; k < kc; k++) {
        const float *b = koff ? bp + koff[k] : bp + k * TC__BASE_NR, *a = ap + k * TC__BASE_MR;
        for (j = 0; j < TC__BASE_NR; j++) {
            c0[j] += a[0] * b[j];
            c1[j] += a[1] * b[j];
            c2[j] += a[2] * b[j];
            c3[j] += a[3] * b[j];
        }
    }
    rows[0] = c0, rows[1] = c1, rows[2] = c2, rows[3] = c3;
    for (i = 0; i < mr; i++)
        for (j = 0; j < nr; j++) c[i * ldc + j] = acc ? c[i * ldc + j] + rows[i][j] : rows[i][j];
}

TC__FN void tc__ukr_base(int64_t kc, const float *TC__RESTRICT ap, const float *TC__RESTRICT bp, float *c, int64_t ldc,
                         int mr, int nr, int acc) {
    tc__tile_base(kc, ap, bp, NULL, c, ldc, mr, nr, acc);
}

TC__FN void tc__gemm_axpy_base(const float *a, int64_t lda, int64_t sa, int64_t m, const float *b, int64_t ldb,
                               int64_t nk, float *c, int64_t ldc, int64_t n) {
    int64_t r, i, j;
    for (r = 0; r < nk; r++)
        for (i = 0; i < m; i++)
            for (j = 0; j < n; j++) c[i * ldc + j] += a[i * lda + r * sa] * b[r * ldb + j];
}

TC__FN void tc__gemm_dot_base(const float *a, int64_t lda, int64_t m, const float *b, int64_t ldb, int64_t k, float *c,
                              int64_t ldc, int64_t n) {
    int64_t i, j, q;
    for (j = 0; j < n; j++)
        for (i = 0; i < m; i++) {
            float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, s;
            const float *ai = a + i * lda, *bj = b + j * ldb;
            for (q = 0; q + 8 <= k; q += 8) {
                int t;
                for (t = 0; t < 8; t++) acc[t] += ai[q + t] * bj[q + t];
            }
            s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
            for (; q < k; q++) s += ai[q] * bj[q];
            c[i * ldc + j] = s;
        }
}

/* gemm_isa.c's tc__gemv_ in plain C, vectors of TC__BASE_NR / 2. */
TC__FN void tc__gemv_base(const float *a, int64_t lda, int64_t sa, int64_t m, const float *bp, int64_t ldb, int64_t kc,
                          int nv, float *t, int64_t ldt, int acc, int64_t ahead) {
    int64_t i, k;
    int j, n = nv * (TC__BASE_NR / 2);
    (void)ahead;
    for (i = 0; i < m; i++) {
        float s[2 * TC__BASE_NR];
        const float *ai = a + i * lda;
        for (j = 0; j < n; j++) s[j] = acc ? t[i * ldt + j] : 0.0f;
        for (k = 0; k < kc; k++)
            for (j = 0; j < n; j++) s[j] += ai[k * sa] * bp[k * ldb + j];
        for (j = 0; j < n; j++) t[i * ldt + j] = s[j];
    }
}

TC__FN void tc__gtile_fin_base(float *c, int64_t ldc, int64_t mr, int64_t nr, float alpha, const float *bias) {
    int64_t i, j;
    for (i = 0; i < mr; i++)
        for (j = 0; j < nr; j++) c[i * ldc + j] = c[i * ldc + j] * alpha + (bias ? bias[j] : 0.0f);
}

/* gemm_isa.c's tc__gwin_row_ in plain C. */
TC__FN void tc__gwin_row_base(int kind, const float *const *taps, const float *w, int ntaps, int64_t n, float *y,
                             float bias) {
    int64_t i;
    int t;
    for (i = 0; i < n; i++) {
        float a = kind == 1 ? taps[0][i] : kind == 0 ? bias : 0.0f;
        for (t = kind == 1; t < ntaps; t++) {
            float v = taps[t][i];
            if (kind == 1) a = v > a || v != v ? v : a;
            else a = kind == 0 ? a + w[t] * v : a + v;
        }
        y[i] = a;
    }
}

/* gemm_isa.c's tc__dconv_a_ in plain C: 4 channels x 16 positions (both tiles). */
TC__FN void tc__dconv_base(int64_t K, const float *TC__RESTRICT wp, const float *TC__RESTRICT x, const int64_t *koff,
                           float *c, int64_t ldc, int mr, int acc) {
    tc__tile_base(K, wp, x, koff, c, ldc, mr, TC__BASE_NR, acc);
}

/* gemm_isa.c's tc__dconv_out_ in plain C. */
TC__FN void tc__dconv_out_base(const float *g, int64_t ldg, int64_t wq, int mr, int64_t nrows, int64_t ow, float *y,
                               int64_t ys, const float *bias) {
    int64_t r, w;
    int i;
    for (i = 0; i < mr; i++)
        for (r = 0; r < nrows; r++)
            for (w = 0; w < ow; w++) y[i * ys + r * ow + w] = g[i * ldg + r * wq + w] + (bias ? bias[i] : 0.0f);
}

/* One row per level this build instantiates (TC__ISA_LEVELS), then plain C. */
typedef struct tc__gemm_level {
    tc_isa isa;
    void (*shape)(int *mr, int *nr); /* the register tile; NULL: plain C's */
    tc__ukr_fn ukr;
    tc__gemm_axpy_fn axpy;
    tc__gemm_dot_fn dot;
    tc__gemv_fn gemv;
    tc__gtile_fin_fn fin;
    tc__gwin_row_fn win;
    void (*dshape)(int *mra, int *nra, int *mrb, int *nrb); /* NULL: plain C's */
    tc__dconv_fn dconv_a, dconv_b;
    tc__dconv_out_fn dconv_out;
} tc__gemm_level;
#define TC__GEMM_LEVEL_ROW_(level, sfx, lanes, needs)                                                          \
    {level, tc__gemm_shape_##sfx, tc__ukr_##sfx, tc__gemm_axpy_##sfx, tc__gemm_dot_##sfx, tc__gemv_##sfx,      \
     tc__gtile_fin_##sfx, tc__gwin_row_##sfx, tc__dconv_shape_##sfx, tc__dconv_a_##sfx, tc__dconv_b_##sfx,     \
     tc__dconv_out_##sfx},
static const tc__gemm_level tc__gemm_levels[] = {
    TC__ISA_LEVELS(TC__GEMM_LEVEL_ROW_){TC_ISA_NONE, NULL, tc__ukr_base, tc__gemm_axpy_base, tc__gemm_dot_base,
                                        tc__gemv_base, tc__gtile_fin_base, tc__gwin_row_base, NULL, tc__dconv_base,
                                        tc__dconv_base, tc__dconv_out_base}};
#undef TC__GEMM_LEVEL_ROW_

/* The kernels of one level (plain C for TC_ISA_NONE or one not built). */
TC__FN tc__gemm_impl tc__gemm_impl_isa(tc_isa isa) {
    const tc__gemm_level *l = tc__gemm_levels;
    tc__gemm_impl g;
    while (l->isa != TC_ISA_NONE && l->isa != isa) l++;
    g.isa = isa;
    g.mr = TC__BASE_MR;
    g.nr = TC__BASE_NR;
    if (l->shape) l->shape(&g.mr, &g.nr);
    g.ukr = l->ukr;
    g.axpy = l->axpy;
    g.dot = l->dot;
    g.gemv = l->gemv;
    g.fin = l->fin;
    g.win = l->win;
    g.mra = g.mrb = TC__BASE_MR;
    g.nra = g.nrb = TC__BASE_NR;
    if (l->dshape) l->dshape(&g.mra, &g.nra, &g.mrb, &g.nrb);
    g.dconv_a = l->dconv_a;
    g.dconv_b = l->dconv_b;
    g.dconv_out = l->dconv_out;
    return g;
}

/* The kernels for the context's executor level. */
TC__FN tc__gemm_impl tc__gemm_impl_of(const tc_ctx *ctx) { return tc__gemm_impl_isa(ctx ? ctx->isa : TC_ISA_NONE); }

/* g's kernels: its tuned level when that is one the context can run. */
TC__FN tc__gemm_impl tc__gemm_impl_for(const tc_ctx *ctx, const tc__gemm *g) {
    if (ctx && g->isa >= TC_ISA_SCALAR && ctx->isa != TC_ISA_NONE && g->isa < ctx->isa) return tc__gemm_impl_isa(g->isa);
    return tc__gemm_impl_of(ctx);
}

/* B[pc.., jc + js..] into NR-wide slivers, zero past the panel's last column. */
TC__FN void tc__pack_b(const tc__gemm *g, int nr_, int64_t pc, int64_t kc, int64_t jc, int64_t nc, int64_t js0,
                       int64_t js1, float *bp) {
    int64_t js, k, j;
    for (js = js0; js < js1 && js < nc; js += nr_) {
        int64_t nr = nc - js < nr_ ? nc - js : nr_;
        float *dst = bp + js * kc;
        if (g->csb != 1 && g->rsb == 1) {
            /* B's columns contiguous in k (linear's weight, a transposed
             * view): read each column once, write it across the sliver.
             * Walking k across columns instead would touch nr lines one
             * column stride apart, which alias in L1 when it is 4 KiB. */
            for (j = 0; j < nr; j++) {
                const float *src = g->B + pc + (jc + js + j) * g->csb;
                int64_t ahead = js + j + 8, q;
                /* each column is a short run (kc floats), too short for the
                 * hardware prefetcher to pick up: fetch 8 columns ahead */
                if (ahead < nc)
                    for (q = 0; q < kc; q += 16) tc__prefetch(g->B + pc + (jc + ahead) * g->csb + q);
                for (k = 0; k < kc; k++) dst[k * nr_ + j] = src[k];
            }
            for (; j < nr_; j++)
                for (k = 0; k < kc; k++) dst[k * nr_ + j] = 0.0f;
            continue;
        }
        for (k = 0; k < kc; k++) {
            const float *src = g->B + (pc + k) * g->rsb + (jc + js) * g->csb;
            float *d = dst + k * nr_;
            if (g->csb == 1) {
                memcpy(d, src, sizeof(float) * (size_t)nr);
                j = nr;
            } else {
                for (j = 0; j < nr; j++) d[j] = src[j * g->csb];
            }
            for (; j < nr_; j++) d[j] = 0.0f;
        }
    }
}

/* A[ic.., pc..] (mc x kc) into MR-tall slivers, zero past the last row. */
TC__FN void tc__pack_a(const tc__gemm *g, int mr_, int64_t ic, int64_t mc, int64_t pc, int64_t kc, float *ap) {
    int64_t is, k, i;
    for (is = 0; is < mc; is += mr_) {
        int64_t mr = mc - is < mr_ ? mc - is : mr_;
        float *dst = ap + is * kc;
        if (g->rsa == 1) { /* A stored column-major (a transposed view): a column is contiguous */
            for (k = 0; k < kc; k++) {
                memcpy(dst + k * mr_, g->A + (ic + is) + (pc + k) * g->csa, sizeof(float) * (size_t)mr);
                for (i = mr; i < mr_; i++) dst[k * mr_ + i] = 0.0f;
            }
            continue;
        }
        for (i = 0; i < mr; i++) {
            const float *src = g->A + (ic + is + i) * g->rsa + pc * g->csa;
            if (g->csa == 1)
                for (k = 0; k < kc; k++) dst[k * mr_ + i] = src[k];
            else
                for (k = 0; k < kc; k++) dst[k * mr_ + i] = src[k * g->csa];
        }
        for (; i < mr_; i++)
            for (k = 0; k < kc; k++) dst[k * mr_ + i] = 0.0f;
    }
}

/* How one packed panel's work is split into tasks: A's ms slivers (MR
 * rows) into mblocks blocks, the panel's ns slivers (NR columns) into
 * nchunks chunks; task t is block t / nchunks against chunk t % nchunks.
 * Block b holds slivers [ms b / mblocks, ms (b + 1) / mblocks), and chunks
 * likewise: sizes within one sliver of each other. */
typedef struct tc__gemm_split {
    int64_t ms, ns, mblocks, nchunks;
} tc__gemm_split;

/* The fewest chunks that make mblocks * nchunks a multiple of p (p /
 * gcd(mblocks, p)), at most ns. */
TC__FN tc__gemm_split tc__gemm_split_with(int64_t ms, int64_t ns, int64_t mblocks, int64_t p) {
    tc__gemm_split sp;
    int64_t a = mblocks, b = p, t;
    while (b) {
        t = a % b;
        a = b;
        b = t;
    }
    sp.ms = ms;
    sp.ns = ns;
    sp.mblocks = mblocks;
    sp.nchunks = p / a < ns ? p / a : (ns > 0 ? ns : 1);
    return sp;
}

/* The most work (in MR x NR tiles) one of p threads gets from the split,
 * when tc__parallel_for hands each an equal range of its tasks. */
TC__FN int64_t tc__gemm_split_max_work(const tc__gemm_split *sp, int64_t p) {
    int64_t n = sp->mblocks * sp->nchunks, part, t, most = 0;
    for (part = 0; part < p; part++) {
        int64_t w = 0;
        for (t = n * part / p; t < n * (part + 1) / p; t++) {
            int64_t b = t / sp->nchunks, c = t % sp->nchunks;
            w += (sp->ms * (b + 1) / sp->mblocks - sp->ms * b / sp->mblocks) *
                 (sp->ns * (c + 1) / sp->nchunks - sp->ns * c / sp->nchunks);
        }
        if (w > most) most = w;
    }
    return most;
}

/* The split of ms x ns tiles for `parts` threads (tc__parallel_parts),
 * blocks of about mct slivers (an A block stays in L2): of the block
 * counts that give blocks of at most 5/4 mct, the one whose busiest thread
 * has the least work, then the one with blocks of at most mct, then the
 * fewest tasks.  Fixed-size blocks left the remainder to one thread: at
 * M = 197 (ViT's tokens) one thread got 192 rows and the other 5. */
TC__FN tc__gemm_split tc__gemm_split_for(int64_t ms, int64_t ns, int64_t mct, int parts) {
    int64_t p = parts > 1 ? parts : 1, fit = ms > mct ? (ms + mct - 1) / mct : 1;
    int64_t lo = ms > mct * 5 / 4 ? (ms + mct * 5 / 4 - 1) / (mct * 5 / 4) : 1, mb, best_w = -1;
    tc__gemm_split best = tc__gemm_split_with(ms, ns, fit, p);
    /* many blocks per thread: the remainder is under 1/(4 parts) of a
     * share, and the search below costs the square of the block count */
    if (p == 1 || fit >= 4 * p) return best;
    for (mb = lo; mb <= fit + p && mb <= (ms > 0 ? ms : 1); mb++) {
        tc__gemm_split sp = tc__gemm_split_with(ms, ns, mb, p);
        int64_t w = tc__gemm_split_max_work(&sp, p);
        int better = best_w < 0 || w < best_w;
        if (!better && w == best_w) {
            int fits = mb >= fit, best_fits = best.mblocks >= fit;
            better = fits != best_fits ? fits : sp.mblocks * sp.nchunks < best.mblocks * best.nchunks;
        }
        if (better) {
            best = sp;
            best_w = w;
        }
    }
    return best;
}

/* Task t's rows [*i0, *i1) of A (relative to the panel's M) and columns
 * [*j0, *j1) of the panel (nc wide). */
TC__FN void tc__gemm_task_range(const tc__gemm_split *sp, int64_t t, int mr, int nr, int64_t m, int64_t nc,
                                int64_t *i0, int64_t *i1, int64_t *j0, int64_t *j1) {
    int64_t b = t / sp->nchunks, c = t % sp->nchunks;
    *i0 = sp->ms * b / sp->mblocks * mr;
    *i1 = sp->ms * (b + 1) / sp->mblocks * mr;
    *j0 = sp->ns * c / sp->nchunks * nr;
    *j1 = sp->ns * (c + 1) / sp->nchunks * nr;
    if (*i1 > m) *i1 = m;
    if (*j1 > nc) *j1 = nc;
}

typedef struct tc__gemm_job {
    tc_ctx *ctx;
    const tc__gemm *g;
    tc__gemm_impl im;
    float *bp;
    int64_t jc, nc, pc, kc, mc; /* mc: the largest A block's rows */
    tc__gemm_split sp;
    int first, last;         /* first / last K slice: overwrite / finish */
    int failed;
} tc__gemm_job;

TC__FN void tc__gemm_pack_b_part(void *arg, int64_t b, int64_t e) {
    const tc__gemm_job *j = (const tc__gemm_job *)arg;
    if (j->g->packb) j->g->packb(j->g, j->im.nr, j->pc, j->kc, j->jc, j->nc, b * j->im.nr, e * j->im.nr, j->bp);
    else tc__pack_b(j->g, j->im.nr, j->pc, j->kc, j->jc, j->nc, b * j->im.nr, e * j->im.nr, j->bp);
}

/* Tasks [tb, te) of the split j->sp. */
TC__FN void tc__gemm_tasks(void *arg, int64_t tb, int64_t te) {
    tc__gemm_job *j = (tc__gemm_job *)arg;
    const tc__gemm *g = j->g;
    const int mr_ = j->im.mr, nr_ = j->im.nr;
    float *ap = (float *)tc__scratch_get(j->ctx, sizeof(float) * (size_t)j->mc * (size_t)j->kc);
    int64_t t, packed_ic = -1;
    if (!ap) {
        tc__flag_raise(&j->failed);
        return;
    }
    for (t = tb; t < te; t++) {
        int64_t ic, ie, j0, j1, mc, is, js;
        tc__gemm_task_range(&j->sp, t, mr_, nr_, g->M, j->nc, &ic, &ie, &j0, &j1);
        mc = ie - ic;
        if (packed_ic != ic) {
            tc__pack_a(g, mr_, ic, mc, j->pc, j->kc, ap);
            packed_ic = ic;
        }
        for (js = j0; js < j1; js += nr_) {
            int nr = (int)(j1 - js < nr_ ? j1 - js : nr_);
            for (is = 0; is < mc; is += mr_) {
                int mr = (int)(mc - is < mr_ ? mc - is : mr_);
                float *ct = g->C + (ic + is) * g->ldc + j->jc + js;
                j->im.ukr(j->kc, ap + is * j->kc, j->bp + js * j->kc, ct, g->ldc, mr, nr, !j->first);
                if (j->last && (g->alpha != 1.0f || g->bias))
                    j->im.fin(ct, g->ldc, mr, nr, g->alpha, g->bias ? g->bias + j->jc + js : NULL);
                if (j->last) tc__gemm_rbias(g, ic + is, mr, j->jc + js, nr); /* the tile is in L1 */
            }
        }
        /* the block (mc rows x the chunk) is final and still in cache */
        if (j->last && g->epi && mc > 0 && j1 > j0) g->epi->fn(g->epi->arg, g->epi_row0 + ic, mc, j->jc + j0, j1 - j0, g->ldc);
    }
    tc__scratch_put(ap);
}

/* Few rows (a GEMV at M = 1, decoding, small batches): packing would cost
 * more than it saves, and B is read once at memory speed.  When B's
 * columns are contiguous in k (linear's weight) and A's rows too, blocks of
 * dot products (tc__gemm_dot_); when B's rows are, rows of B added into
 * column blocks of C (tc__gemm_axpy_).  Parallel over column blocks. */
#define TC__SKINNY_M 4       /* at most this many rows in the axpy form  */
#define TC__SKINNY_DOT_M 16  /* in the dot form                          */
#define TC__SKINNY_COLS 1024 /* axpy: the block of C that stays in L1   */

typedef struct tc__skinny_job {
    const tc__gemm *g;
    tc__gemm_impl im;
} tc__skinny_job;

TC__FN int tc__skinny_dot(const tc__gemm *g) { return g->rsb == 1 && g->csa == 1; }

TC__FN void tc__skinny_cols(void *arg, int64_t jb, int64_t je) {
    const tc__skinny_job *sj = (const tc__skinny_job *)arg;
    const tc__gemm *g = sj->g;
    int64_t i, j, n;
    if (tc__skinny_dot(g)) {
        sj->im.dot(g->A, g->rsa, g->M, g->B + jb * g->csb, g->csb, g->K, g->C + jb, g->ldc, je - jb);
    } else if (g->csb == 1) {
        for (j = jb; j < je; j += n) {
            n = je - j < TC__SKINNY_COLS ? je - j : TC__SKINNY_COLS;
            for (i = 0; i < g->M; i++) memset(g->C + i * g->ldc + j, 0, sizeof(float) * (size_t)n);
            sj->im.axpy(g->A, g->rsa, g->csa, g->M, g->B + j, g->rsb, g->K, g->C + j, g->ldc, n);
        }
    } else {
        for (i = 0; i < g->M; i++)
            for (j = jb; j < je; j++) {
                const float *a = g->A + i * g->rsa;
                float s = 0.0f;
                int64_t k;
                for (k = 0; k < g->K; k++) s += a[k * g->csa] * g->B[k * g->rsb + j * g->csb];
                g->C[i * g->ldc + j] = s;
            }
    }
    if (g->alpha != 1.0f || g->bias) sj->im.fin(g->C + jb, g->ldc, g->M, je - jb, g->alpha, g->bias ? g->bias + jb : NULL);
    tc__gemm_epi(g, 0, g->M, jb, je - jb);
}

/* Parts of whole 4-column groups (the dot kernel's block). */
TC__FN void tc__skinny_range4(void *arg, int64_t b, int64_t e) {
    const tc__skinny_job *sj = (const tc__skinny_job *)arg;
    int64_t je = e * 4 < sj->g->N ? e * 4 : sj->g->N;
    tc__skinny_cols(arg, b * 4, je);
}

TC__FN int tc__gemm_skinny(tc_ctx *ctx, const tc__gemm *g, int serial) {
    tc__skinny_job j;
    j.g = g;
    j.im = tc__gemm_impl_for(ctx, g);
    if (serial) tc__skinny_cols(&j, 0, g->N);
    else tc__parallel_for(ctx, (g->N + 3) / 4, g->M * g->N * g->K, tc__skinny_range4, &j);
    return 0;
}

/* Few rows against a B packed once (freeze): B in blocks of nb = 4 vectors
 * of columns, each block all of K deep in k order, so a thread's blocks
 * are one contiguous stream, read once per call with no packing and no
 * horizontal sums (tc__gemv_).  The last block is as wide as its columns
 * rounded up to a vector.  Threads take contiguous runs of blocks, and only
 * where the product pays for waking them (tc__gemv_parts). */
#define TC__GEMV_M 16           /* rows up to which a frozen B is streamed so  */
#define TC__GEMV_NB_MAX 64      /* the widest block (AVX-512's 4 vectors)      */
#define TC__GEMV_L1_FLOATS 8192 /* a k chunk of a block that stays in L1 while
                                   further groups of rows pass over it         */
/* A B of this many floats (1 MB) or more streams from L3 or memory, not
 * L2: the kernel fetches 64 rows ahead rather than 16, and the chunks are a
 * quarter as deep, so that a second group of rows reads the lines the first
 * just brought in while the stream goes on (a B in L2 was slower with
 * either). */
#define TC__GEMV_FAR_FLOATS ((int64_t)1 << 18)

/* Packs g's B for tc__gemv_ (once: later calls find it valid). */
TC__FN int tc__gemv_pack(tc__gemm_prepack *pre, const tc__gemm *g, const tc__gemm_impl *im) {
    int64_t nb = 2 * im->nr, w = im->nr / 2, j0;
    size_t need = (size_t)g->K * (size_t)((g->N + nb - 1) / nb * nb);
    if (pre->valid && pre->gemv && pre->nr == nb && pre->src == g->B && pre->K == g->K && pre->N == g->N &&
        pre->rsb == g->rsb && pre->csb == g->csb)
        return 0;
    pre->valid = 0;
    if (pre->floats < need) {
        float *d = (float *)TC_REALLOC(pre->data, sizeof(float) * need);
        if (!d) return -1;
        pre->data = d;
        pre->floats = need;
    }
    for (j0 = 0; j0 < g->N; j0 += nb) {
        int64_t wc = g->N - j0 < nb ? g->N - j0 : nb, ldb = (wc + w - 1) / w * w;
        tc__pack_b(g, (int)ldb, 0, g->K, j0, wc, 0, wc, pre->data + j0 * g->K);
    }
    pre->gemv = 1;
    pre->kc = 0;
    pre->ncmax = 0;
    pre->nr = (int)nb;
    pre->src = g->B;
    pre->K = g->K;
    pre->N = g->N;
    pre->rsb = g->rsb;
    pre->csb = g->csb;
    pre->valid = 1;
    return 0;
}

typedef struct tc__gemv_job {
    const tc__gemm *g;
    tc__gemm_impl im;
} tc__gemv_job;

/* Blocks [b0, b1): each into a tile on the stack, then C (alpha, bias),
 * then the epilogue once over the run's columns. */
TC__FN void tc__gemv_blocks(void *arg, int64_t b0, int64_t b1) {
    const tc__gemv_job *j = (const tc__gemv_job *)arg;
    const tc__gemm *g = j->g;
    const int64_t nb = 2 * j->im.nr, w = j->im.nr / 2;
    float t[TC__GEMV_M * TC__GEMV_NB_MAX];
    int64_t b, i, je = b1 * nb < g->N ? b1 * nb : g->N;
    int big = g->K * g->N >= TC__GEMV_FAR_FLOATS; /* not `far`: a macro in windows.h */
    for (b = b0; b < b1; b++) {
        int64_t j0 = b * nb, wc = g->N - j0 < nb ? g->N - j0 : nb, ldb = (wc + w - 1) / w * w, pc;
        const float *bp = g->pre->data + j0 * g->K;
        /* one group of rows reads the block once: no chunks */
        int64_t kcv = g->M <= 4 ? g->K : (TC__GEMV_L1_FLOATS / (big ? 4 : 1)) / ldb;
        if (kcv < 1) kcv = 1;
        for (pc = 0; pc < g->K; pc += kcv) {
            int64_t kc = g->K - pc < kcv ? g->K - pc : kcv;
            j->im.gemv(g->A + pc * g->csa, g->rsa, g->csa, g->M, bp + pc * ldb, ldb, kc, (int)(ldb / w), t, nb, pc > 0,
                       big ? 64 : 16);
        }
        for (i = 0; i < g->M; i++) memcpy(g->C + i * g->ldc + j0, t + i * nb, sizeof(float) * (size_t)wc);
        if (g->alpha != 1.0f || g->bias) j->im.fin(g->C + j0, g->ldc, g->M, wc, g->alpha, g->bias ? g->bias + j0 : NULL);
    }
    if (je > b0 * nb) tc__gemm_epi(g, 0, g->M, b0 * nb, je - b0 * nb);
}

/* The threads a frozen GEMV of this shape runs on (1: the caller alone). */
TC__FN int tc__gemv_parts(const tc_ctx *ctx, const tc__gemm *g, int64_t nblocks) {
    return tc__gemm_small(g) ? 1 : tc__parallel_parts(ctx, nblocks, INT64_MAX);
}

TC__FN int tc__gemv_run(tc_ctx *ctx, const tc__gemm *g, const tc__gemm_impl *im, int serial) {
    tc__gemv_job j;
    int64_t nb = 2 * im->nr, nblocks = (g->N + nb - 1) / nb;
    if (tc__gemv_pack(g->pre, g, im)) return -1;
    j.g = g;
    j.im = *im;
    if (serial || tc__gemv_parts(ctx, g, nblocks) <= 1) tc__gemv_blocks(&j, 0, nblocks);
    else tc__parallel_for(ctx, nblocks, INT64_MAX, tc__gemv_blocks, &j);
    return 0;
}

/* Runs one GEMM; parallel over MC blocks x column chunks unless `serial`. */
TC__FN int tc__gemm_run(tc_ctx *ctx, const tc__gemm *g, int serial) {
    int64_t jc, pc, i, jj, ncmax;
    float *bp;
    tc__gemm_prepack *pre;
    tc__gemm_impl im = tc__gemm_impl_for(ctx, g);
    int failed = 0;
    const int64_t KC = g->kc > 0 ? g->kc : TC__GEMM_KC, MCT = g->mc_tiles > 0 ? g->mc_tiles : TC__GEMM_MC_TILES;
    if (g->M <= 0 || g->N <= 0) return 0;
    if (g->K == 0) {
        for (i = 0; i < g->M; i++)
            for (jj = 0; jj < g->N; jj++) g->C[i * g->ldc + jj] = g->bias ? g->bias[jj] : 0.0f;
        tc__gemm_epi(g, 0, g->M, 0, g->N);
        return 0;
    }
    if (g->pre && !g->packb && g->M <= TC__GEMV_M && 2 * im.nr <= TC__GEMV_NB_MAX)
        return tc__gemv_run(ctx, g, &im, serial);
    if (!g->packb && (g->M <= TC__SKINNY_M || (g->M <= TC__SKINNY_DOT_M && tc__skinny_dot(g))))
        return tc__gemm_skinny(ctx, g, serial);
    ncmax = (TC__GEMM_NC + im.nr - 1) / im.nr * im.nr;
    pre = g->packb ? NULL : g->pre;
    if (pre && !(pre->valid && !pre->gemv && pre->kc == KC && pre->nr == im.nr && pre->ncmax == ncmax &&
                 pre->src == g->B && pre->K == g->K && pre->N == g->N && pre->rsb == g->rsb && pre->csb == g->csb)) {
        /* (re)pack all of B: panels of kc x (nc rounded up to NR) */
        size_t need = (size_t)g->K * (size_t)((g->N + ncmax - 1) / ncmax * ncmax + im.nr);
        pre->valid = 0;
        if (pre->floats < need) {
            float *d = (float *)TC_REALLOC(pre->data, sizeof(float) * need);
            if (!d) return -1;
            pre->data = d;
            pre->floats = need;
        }
        pre->gemv = 0;
        pre->kc = (int)KC;
        pre->nr = im.nr;
        pre->ncmax = (int)ncmax;
        pre->src = g->B;
        pre->K = g->K;
        pre->N = g->N;
        pre->rsb = g->rsb;
        pre->csb = g->csb;
        {
            float *at = pre->data;
            for (jc = 0; jc < g->N; jc += ncmax) {
                int64_t nc = g->N - jc < ncmax ? g->N - jc : ncmax, ncp = (nc + im.nr - 1) / im.nr * im.nr;
                for (pc = 0; pc < g->K; pc += KC) {
                    int64_t kc = g->K - pc < KC ? g->K - pc : KC;
                    tc__pack_b(g, im.nr, pc, kc, jc, nc, 0, ncp, at);
                    at += kc * ncp;
                }
            }
        }
        pre->valid = 1;
    }
    if (pre) {
        bp = pre->data;
    } else {
        /* the packed panel is as large as the problem needs */
        int64_t kc = g->K < KC ? g->K : KC, nc = g->N < ncmax ? g->N : ncmax;
        nc = (nc + im.nr - 1) / im.nr * im.nr;
        bp = (float *)tc__scratch_get(ctx, sizeof(float) * (size_t)kc * (size_t)nc);
    }
    if (!bp) return -1;
    for (jc = 0; jc < g->N && !failed; jc += ncmax) {
        int64_t nc = g->N - jc < ncmax ? g->N - jc : ncmax;
        for (pc = 0; pc < g->K && !failed; pc += KC) {
            tc__gemm_job j;
            int64_t kc = g->K - pc < KC ? g->K - pc : KC, slivers = (nc + im.nr - 1) / im.nr;
            int nth = serial ? 1 : tc__parallel_parts(ctx, INT64_MAX, g->M * nc * kc);
            memset(&j, 0, sizeof j);
            j.ctx = ctx;
            j.g = g;
            j.im = im;
            j.bp = bp;
            j.jc = jc;
            j.nc = nc;
            j.pc = pc;
            j.kc = kc;
            j.first = pc == 0;
            j.last = pc + kc >= g->K;
            j.sp = tc__gemm_split_for((g->M + im.mr - 1) / im.mr, slivers, MCT, nth);
            j.mc = (j.sp.ms + j.sp.mblocks - 1) / j.sp.mblocks * im.mr;
            if (serial) {
                if (!pre) tc__gemm_pack_b_part(&j, 0, slivers);
                tc__gemm_tasks(&j, 0, j.sp.mblocks * j.sp.nchunks);
            } else {
                if (!pre) tc__parallel_for(ctx, slivers, kc * nc, tc__gemm_pack_b_part, &j);
                tc__parallel_for(ctx, j.sp.mblocks * j.sp.nchunks, g->M * nc * kc, tc__gemm_tasks, &j);
            }
            failed = j.failed;
            if (pre) bp += kc * slivers * im.nr; /* the next prepacked panel */
        }
    }
    if (!pre) tc__scratch_put(bp);
    return failed ? -1 : 0;
}

/* Batched GEMM: the i-th problem uses offsets aoff[i], boff[i], coff[i] (in
 * floats) from the base pointers of g.  Small problems run one per thread;
 * large ones one after another, each parallel inside. */
typedef struct tc__bgemm_job {
    tc_ctx *ctx;
    const tc__gemm *g;
    const int64_t *aoff, *boff, *coff;
    int failed;
} tc__bgemm_job;

TC__FN void tc__bgemm_range(void *arg, int64_t b, int64_t e) {
    tc__bgemm_job *j = (tc__bgemm_job *)arg;
    int64_t i;
    for (i = b; i < e; i++) {
        tc__gemm gi = *j->g;
        gi.A += j->aoff[i];
        gi.B += j->boff[i];
        gi.C += j->coff[i];
        gi.epi_row0 += gi.ldc > 0 ? j->coff[i] / gi.ldc : 0;
        if (tc__gemm_run(j->ctx, &gi, 1)) tc__flag_raise(&j->failed);
    }
}

TC__FN int tc__gemm_batched(tc_ctx *ctx, const tc__gemm *g, int64_t nbatch, const int64_t *aoff, const int64_t *boff,
                            const int64_t *coff) {
    int64_t work = g->M * g->N * (g->K > 0 ? g->K : 1), i;
    if (nbatch > 1 && work < ((int64_t)1 << 22)) {
        tc__bgemm_job j;
        j.ctx = ctx;
        j.g = g;
        j.aoff = aoff;
        j.boff = boff;
        j.coff = coff;
        j.failed = 0;
        tc__parallel_for(ctx, nbatch, work * nbatch, tc__bgemm_range, &j);
        return j.failed ? -1 : 0;
    }
    for (i = 0; i < nbatch; i++) {
        tc__gemm gi = *g;
        gi.A += aoff[i];
        gi.B += boff[i];
        gi.C += coff[i];
        gi.epi_row0 += g->ldc > 0 ? coff[i] / g->ldc : 0;
        if (tc__gemm_run(ctx, &gi, 0)) return -1;
    }
    return 0;
}
