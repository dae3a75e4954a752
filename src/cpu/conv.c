/* Convolution (implicit GEMM per image and group; window kernels for
 * depthwise), pooling, adaptive average pooling and inference batch norm.
 * All NCHW; a 3-D input is one image. */

/* Geometry shared by conv and pools: a.i holds
 * [0..1] kernel, [2..3] stride, [4..5] padding, [6..7] dilation,
 * [8] groups, [9] ceil_mode, [10] exclude_pad, [11] input was 3-D. */
enum { TC__G_K = 0, TC__G_S = 2, TC__G_P = 4, TC__G_D = 6, TC__G_GROUPS = 8, TC__G_CEIL = 9, TC__G_EXCL = 10, TC__G_3D = 11 };

typedef struct tc__geom {
    int64_t N, C, H, W, OH, OW;
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
} tc__geom;

TC__FN void tc__geom_of(const tc__call *c, const tc_tensor *x, tc__geom *g) {
    int three = x->ndim == 3;
    g->N = three ? 1 : x->shape[0];
    g->C = x->shape[x->ndim - 3];
    g->H = x->shape[x->ndim - 2];
    g->W = x->shape[x->ndim - 1];
    g->kh = c->a.i[TC__G_K];
    g->kw = c->a.i[TC__G_K + 1];
    g->sh = c->a.i[TC__G_S];
    g->sw = c->a.i[TC__G_S + 1];
    g->ph = c->a.i[TC__G_P];
    g->pw = c->a.i[TC__G_P + 1];
    g->dh = c->a.i[TC__G_D];
    g->dw = c->a.i[TC__G_D + 1];
    g->OH = c->ondim ? c->oshape[c->ondim - 2] : 0;
    g->OW = c->ondim ? c->oshape[c->ondim - 1] : 0;
}

/* torch's pooling_output_shape (ceil_mode 0 for convolution) */
TC__FN int64_t tc__out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int ceil_mode) {
    int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0), out;
    if (num < 0) return -1;
    out = num / s + 1;
    if (ceil_mode && (out - 1) * s >= in + p) out--;
    return out;
}

TC__FN tc_result tc__check_image(tc__call *c, const tc_tensor *x) {
    if (x->ndim != 3 && x->ndim != 4)
        return tc__msg(c, TC_ERR_SHAPE, "input must be 3-D (C,H,W) or 4-D (N,C,H,W), got %s", tc__shp(x).s);
    if (!tc__is_float(x->dtype)) return tc__msg(c, TC_ERR_DTYPE, "input must be a float type, got %s", tc__dtype_names[x->dtype]);
    return TC_OK;
}

/* Sets the output dims [N,] C, OH, OW (N omitted for 3-D input). */
TC__FN tc_result tc__image_out(tc__call *c, const tc_tensor *x, int64_t cout, int ceil_mode) {
    tc__geom g;
    tc__geom_of(c, x, &g);
    g.OH = tc__out_size(g.H, g.kh, g.sh, g.ph, g.dh, ceil_mode);
    g.OW = tc__out_size(g.W, g.kw, g.sw, g.pw, g.dw, ceil_mode);
    if (g.OH < 0 || g.OW < 0 || (g.OH == 0 && g.H > 0) || (g.OW == 0 && g.W > 0))
        return tc__msg(c, TC_ERR_SHAPE, "output size %lldx%lld is too small for input %s with kernel %lldx%lld",
                       (long long)g.OH, (long long)g.OW, tc__shp(x).s, (long long)g.kh, (long long)g.kw);
    c->ondim = x->ndim;
    if (x->ndim == 4) c->oshape[0] = g.N;
    c->oshape[x->ndim - 3] = cout;
    c->oshape[x->ndim - 2] = g.OH;
    c->oshape[x->ndim - 1] = g.OW;
    c->odt = x->dtype;
    return TC_OK;
}

/* Copies the (kernel, stride, padding, dilation) options with defaults;
 * stride 0 means `dflt_stride_is_kernel ? kernel : 1`. */
TC__FN tc_result tc__geom_attrs(tc__call *c, const int *k, const int *s, const int *p, const int *d, int stride_is_kernel) {
    int i;
    for (i = 0; i < 2; i++) {
        c->a.i[TC__G_K + i] = k[i];
        c->a.i[TC__G_S + i] = s[i] ? s[i] : (stride_is_kernel ? k[i] : 1);
        c->a.i[TC__G_P + i] = p[i];
        c->a.i[TC__G_D + i] = d[i] ? d[i] : 1;
        if (k[i] < 1) return tc__msg(c, TC_ERR_INVALID_ARG, "kernel size must be >= 1 (got %d)", k[i]);
        if (c->a.i[TC__G_S + i] < 1) return tc__msg(c, TC_ERR_INVALID_ARG, "stride must be >= 1 (got %d)", s[i]);
        if (p[i] < 0) return tc__msg(c, TC_ERR_INVALID_ARG, "padding must be >= 0 (got %d)", p[i]);
        if (c->a.i[TC__G_D + i] < 1) return tc__msg(c, TC_ERR_INVALID_ARG, "dilation must be >= 1 (got %d)", d[i]);
    }
    return TC_OK;
}

/* ---- conv2d ------------------------------------------------------------------------ */

TC__FN tc_result tc__shape_conv2d(tc__call *c) {
    const tc_tensor *x = c->ins[0], *w = c->ins[1], *b = c->ins[2];
    int64_t groups = c->a.i[TC__G_GROUPS], cin;
    tc_result r = tc__check_image(c, x);
    if (r != TC_OK) return r;
    if ((r = tc__float_inputs(c, 3)) != TC_OK) return r;
    if (w->ndim != 4) return tc__msg(c, TC_ERR_SHAPE, "weight must be 4-D [Cout, Cin/groups, kH, kW], got %s", tc__shp(w).s);
    cin = x->shape[x->ndim - 3];
    if (groups < 1) return tc__msg(c, TC_ERR_INVALID_ARG, "groups must be >= 1 (got %lld)", (long long)groups);
    if (cin % groups || w->shape[0] % groups)
        return tc__msg(c, TC_ERR_SHAPE, "groups %lld must divide input channels %lld and output channels %lld",
                       (long long)groups, (long long)cin, (long long)w->shape[0]);
    if (w->shape[1] * groups != cin)
        return tc__msg(c, TC_ERR_SHAPE, "weight %s expects %lld input channels, input %s has %lld", tc__shp(w).s,
                       (long long)(w->shape[1] * groups), tc__shp(x).s, (long long)cin);
    if (b && (b->ndim != 1 || b->shape[0] != w->shape[0]))
        return tc__msg(c, TC_ERR_SHAPE, "bias %s must be [%lld]", tc__shp(b).s, (long long)w->shape[0]);
    if (w->shape[2] < 1 || w->shape[3] < 1) return tc__msg(c, TC_ERR_SHAPE, "empty kernel %s", tc__shp(w).s);
    c->a.i[TC__G_K] = w->shape[2];
    c->a.i[TC__G_K + 1] = w->shape[3];
    r = tc__image_out(c, x, w->shape[0], 0);
    c->odt = tc__promote(c->ins, b ? 3 : 2);
    return r;
}

/* Implicit GEMM: conv is W[og, K] @ X[K, P] per image and group, where X
 * is the im2col matrix (k = (channel, ki, kj), q = (oh, ow)).  X is never
 * stored: the GEMM's B packer computes each KC x NR sliver straight from
 * the image (tc__gemm.packb), so the extra memory is one packed panel,
 * not K x P floats per image.  gm->B is the group's first channel of image
 * 0; columns past P continue into the next images (a folded batch). */
TC__FN void tc__conv_pack_b(const tc__gemm *gm, int nr_, int64_t pc, int64_t kc, int64_t jc, int64_t nc, int64_t js0,
                            int64_t js1, float *bp) {
    const tc__geom *g = (const tc__geom *)gm->packb_arg;
    const int64_t khw = g->kh * g->kw, HW = g->H * g->W, P = g->OH * g->OW;
    int64_t js;
    for (js = js0; js < js1 && js < nc; js += nr_) {
        /* column q is image q / P (batches folded into the columns), position q % P */
        int64_t nr = nc - js < nr_ ? nc - js : nr_, q0 = jc + js, n0 = q0 / P, oh0 = q0 % P / g->OW, ow0 = q0 % P % g->OW;
        int64_t ch = pc / khw, ki = (pc / g->kw) % g->kh, kj = pc % g->kw, k;
        float *dst = bp + js * kc;
        for (k = 0; k < kc; k++) {
            float *d = dst + k * nr_;
            int64_t j = 0, n = n0, oh = oh0, ow = ow0, t;
            /* the sliver's columns, one output row's run at a time */
            while (j < nr) {
                const float *xc = gm->B + n * g->C * HW + ch * HW;
                int64_t run = nr - j < g->OW - ow ? nr - j : g->OW - ow;
                int64_t ih = oh * g->sh - g->ph + ki * g->dh, iw0 = ow * g->sw - g->pw + kj * g->dw;
                const float *xr = xc + (ih >= 0 && ih < g->H ? ih : 0) * g->W;
                if (ih < 0 || ih >= g->H) {
                    for (t = 0; t < run; t++) d[j + t] = 0.0f;
                } else if (g->sw == 1) { /* a contiguous run of the input row, zeros in the padding */
                    int64_t lo = iw0 < 0 ? -iw0 : 0, hi = g->W - iw0 < run ? g->W - iw0 : run;
                    if (lo > run) lo = run;
                    if (hi < lo) hi = lo;
                    for (t = 0; t < lo; t++) d[j + t] = 0.0f;
                    if (hi > lo) memcpy(d + j + lo, xr + iw0 + lo, sizeof(float) * (size_t)(hi - lo));
                    for (t = hi; t < run; t++) d[j + t] = 0.0f;
                } else {
                    for (t = 0; t < run; t++) {
                        int64_t iw = iw0 + t * g->sw;
                        d[j + t] = iw >= 0 && iw < g->W ? xr[iw] : 0.0f;
                    }
                }
                j += run;
                ow = 0;
                if (++oh == g->OH) {
                    oh = 0;
                    n++;
                }
            }
            for (; j < nr_; j++) d[j] = 0.0f;
            if (++kj == g->kw) {
                kj = 0;
                if (++ki == g->kh) {
                    ki = 0;
                    ch++;
                }
            }
        }
    }
}

/* ---- window kernels: depthwise convolution and pooling --------------------------- */

enum { TC__WIN_CONV = 0, TC__WIN_MAX = 1, TC__WIN_AVG = 2 };

/* Depthwise convolution and pooling slide a small window over each plane.
 * The plane is first copied into scratch that already holds the padding
 * (0, or -inf for max) and has each row split by stride phase (phase p
 * holds padded columns p, p + s, p + 2s, ...): then every tap reads a
 * contiguous run for consecutive outputs, whatever the stride, and a row of
 * outputs is one vector loop without bounds checks (tc__gwin_row_ in
 * gemm_isa.c).  The copy costs one pass over a plane that is then in cache
 * for the kh x kw reads. */
typedef struct tc__win_job {
    tc_ctx *ctx;
    const float *x, *w, *bias;
    float *y;
    tc__geom g;
    int kind, exclude_pad;
    int64_t mult;              /* conv: output channels per input channel    */
    int64_t Hp, Wp, Wq;        /* padded rows and columns read; per phase    */
    int64_t nph;               /* phases read: min(stride, Wp)               */
    const tc__epilogue *epi;   /* conv: run on each finished output plane    */
    tc__gwin_row_fn row;
    int failed;
} tc__win_job;

/* The window row kernels may read a vector past a row's last output. */
#define TC__WIN_SLACK 32

/* Input plane xp into buf: padded rows of nph phases of Wq floats (a
 * phase shorter than Wq is padded too, so every float is written). */
TC__FN void tc__win_fill(const tc__win_job *j, const float *xp, float *buf) {
    const tc__geom *g = &j->g;
    const int64_t s = g->sw, rowlen = j->nph * j->Wq;
    const float pad = j->kind == TC__WIN_MAX ? -INFINITY : 0.0f;
    int64_t r, c, ph, t;
    for (r = 0; r < j->Hp; r++) {
        int64_t ih = r - g->ph;
        float *d = buf + r * rowlen;
        const float *xr = xp + (ih >= 0 && ih < g->H ? ih : 0) * g->W;
        if (ih < 0 || ih >= g->H) {
            for (c = 0; c < rowlen; c++) d[c] = pad;
            continue;
        }
        for (ph = 0; ph < j->nph; ph++) {
            /* phase ph's t-th float is padded column c = ph + t * s, input column c - pw */
            float *dp = d + ph * j->Wq;
            int64_t lo = g->pw > ph ? (g->pw - ph + s - 1) / s : 0, hi = (g->pw + g->W - ph + s - 1) / s;
            if (hi > j->Wq) hi = j->Wq;
            if (lo > hi) lo = hi;
            for (t = 0; t < lo; t++) dp[t] = pad;
            if (s == 1) {
                if (hi > lo) memcpy(dp + lo, xr + (lo - g->pw), sizeof(float) * (size_t)(hi - lo));
            } else {
                const float *src = xr + ph - g->pw;
                for (t = lo; t < hi; t++) dp[t] = src[t * s];
            }
            for (t = hi; t < j->Wq; t++) dp[t] = pad;
        }
    }
}

/* torch's avg_pool2d divisor along one axis (the window clipped to the
 * padded input, or to the input itself with exclude_pad): the divisor of a
 * window is the product of its row and column sizes. */
TC__FN int64_t tc__avg_span(int64_t o, int64_t k, int64_t s, int64_t p, int64_t in, int exclude_pad) {
    int64_t a = o * s - p, b = a + k < in + p ? a + k : in + p;
    if (!exclude_pad) return b - a;
    if (a < 0) a = 0;
    if (b > in) b = in;
    return b - a;
}

/* Input planes [pb, pe) (n * C + c): each plane's outputs, mult of them for
 * a depthwise conv. */
TC__FN void tc__win_planes(void *arg, int64_t pb, int64_t pe) {
    tc__win_job *j = (tc__win_job *)arg;
    const tc__geom *g = &j->g;
    const int64_t rowlen = j->nph * j->Wq, P = g->OH * g->OW, ntaps = g->kh * g->kw;
    const int64_t cout = g->C * j->mult;
    size_t fl = (size_t)(j->Hp * rowlen + TC__WIN_SLACK), tb = (sizeof(const float *) * (size_t)ntaps + 63) / 64 * 64;
    /* the tap pointers first, the plane on a cache line after them */
    const float **taps = (const float **)tc__scratch_get(j->ctx, tb + sizeof(float) * (fl + (size_t)g->OW));
    float *buf, *colsz;        /* (set once taps is known not NULL: NULL + tb is UB) */
    int64_t p, m, oh, ow, ki, kj;
    if (!taps) {
        tc__flag_raise(&j->failed);
        return;
    }
    buf = (float *)(void *)((char *)taps + tb);
    colsz = buf + fl;          /* avg: the divisor's column factor */
    for (ow = 0; ow < TC__WIN_SLACK; ow++) buf[fl - TC__WIN_SLACK + ow] = 0.0f;
    for (ow = 0; ow < g->OW && j->kind == TC__WIN_AVG; ow++)
        colsz[ow] = (float)tc__avg_span(ow, g->kw, g->sw, g->pw, g->W, j->exclude_pad);
    for (p = pb; p < pe; p++) {
        int64_t n = p / g->C, ci = p % g->C;
        tc__win_fill(j, j->x + p * g->H * g->W, buf);
        for (m = 0; m < j->mult; m++) {
            int64_t co = ci * j->mult + m, op = j->kind == TC__WIN_CONV ? n * cout + co : p;
            float *yp = j->y + op * P;
            for (oh = 0; oh < g->OH; oh++) {
                float *yr = yp + oh * g->OW;
                for (ki = 0; ki < g->kh; ki++)
                    for (kj = 0; kj < g->kw; kj++) {
                        int64_t off = kj * g->dw;
                        taps[ki * g->kw + kj] =
                            buf + (oh * g->sh + ki * g->dh) * rowlen + (off % g->sw) * j->Wq + off / g->sw;
                    }
                j->row(j->kind, taps, j->w ? j->w + co * ntaps : NULL, (int)ntaps, g->OW, yr,
                       j->bias ? j->bias[co] : 0.0f);
                if (j->kind == TC__WIN_AVG) {
                    float rs = (float)tc__avg_span(oh, g->kh, g->sh, g->ph, g->H, j->exclude_pad);
                    for (ow = 0; ow < g->OW; ow++) yr[ow] = rs * colsz[ow] > 0 ? yr[ow] / (rs * colsz[ow]) : NAN;
                }
            }
            if (j->epi && P > 0) j->epi->fn(j->epi->arg, op, 1, 0, P, P);
        }
    }
    tc__scratch_put((void *)taps);
}

/* Runs the window kernel of `kind` over x's planes into y; -1 on OOM. */
TC__FN int tc__win_run(tc_ctx *ctx, int kind, const tc__geom *g, const float *x, const float *w, const float *bias,
                       int64_t mult, int exclude_pad, const tc__epilogue *epi, float *y) {
    tc__win_job j;
    memset(&j, 0, sizeof j);
    j.ctx = ctx;
    j.x = x;
    j.w = w;
    j.bias = bias;
    j.y = y;
    j.g = *g;
    j.kind = kind;
    j.exclude_pad = exclude_pad;
    j.mult = mult;
    j.epi = epi;
    j.row = tc__gemm_impl_of(ctx).win;
    if (g->N * g->C == 0 || g->OH * g->OW == 0) return 0;
    j.Hp = (g->OH - 1) * g->sh + (g->kh - 1) * g->dh + 1;
    j.Wp = (g->OW - 1) * g->sw + (g->kw - 1) * g->dw + 1;
    j.Wq = (j.Wp + g->sw - 1) / g->sw;
    j.nph = g->sw < j.Wp ? g->sw : j.Wp;
    tc__parallel_for(ctx, g->N * g->C, g->N * g->C * mult * g->OH * g->OW * g->kh * g->kw, tc__win_planes, &j);
    return j.failed ? -1 : 0;
}

#define TC__CONV_FOLD_P 1024 /* output positions below which a batch folds into one GEMM */

TC__FN tc_result tc__run_conv2d(tc__call *c, tc_tensor *out) {
    const tc_tensor *x = c->ins[0], *w = c->ins[1], *b = c->ins[2];
    tc__geom g;
    int64_t groups = c->a.i[TC__G_GROUPS], cout = w->shape[0], cg, og, K, P, n, gi, *off = NULL;
    void *xo = NULL, *wo = NULL, *bo = NULL, *oo = NULL;
    const float *xp = (const float *)tc__contig_as(c->ctx, x, TC_F32, &xo);
    const float *wp = (const float *)tc__contig_as(c->ctx, w, TC_F32, &wo);
    const float *bp = b ? (const float *)tc__contig_as(c->ctx, b, TC_F32, &bo) : NULL;
    float *op = tc__out_f32(out, &oo);
    tc_result r = TC_OK;
    tc__geom_of(c, x, &g);
    cg = g.C / groups;
    og = cout / groups;
    K = cg * g.kh * g.kw;
    P = g.OH * g.OW;
    if (!xp || !wp || (b && !bp) || !op) r = tc__msg(c, TC_ERR_OOM, "out of memory");
    else if (cg == 1 && groups == g.C && (og <= 4 || g.N * g.C >= 2 * (int64_t)tc_ctx_num_threads(c->ctx))) {
        /* depthwise: a window per channel (parallel over input planes; with
         * few planes and many outputs each, the GEMM splits better) */
        if (tc__win_run(c->ctx, TC__WIN_CONV, &g, xp, wp, bp, og, 0, c->epi, op))
            r = tc__msg(c, TC_ERR_OOM, "out of memory");
    } else if (!(off = (int64_t *)tc__scratch_get(c->ctx, sizeof(int64_t) * 3 * (size_t)(g.N > 0 ? g.N : 1)))) {
        r = tc__msg(c, TC_ERR_OOM, "out of memory");
    } else {
        /* 1 x 1, stride 1, no padding: the image itself is the B matrix */
        int direct = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0;
        /* small images: the batch folds into the GEMM's columns (one GEMM of
         * N * P columns instead of N narrow ones), into scratch, then each
         * image's rows go to their place and the epilogue runs there */
        float *fold = g.N > 1 && P < TC__CONV_FOLD_P
                          ? (float *)tc__scratch_get(c->ctx, sizeof(float) * (size_t)(og * g.N * P > 0 ? og * g.N * P : 1))
                          : NULL;
        for (n = 0; n < g.N; n++) {
            off[n] = 0;                      /* A: the group's weights */
            off[g.N + n] = n * g.C * g.H * g.W; /* B: image n           */
            off[2 * g.N + n] = n * cout * P;    /* C: output image n    */
        }
        for (gi = 0; r == TC_OK && gi < groups; gi++) {
            tc__gemm gm;
            memset(&gm, 0, sizeof gm);
            gm.M = og;
            gm.N = P;
            gm.K = K;
            gm.A = wp + gi * og * K;
            gm.rsa = K;
            gm.csa = 1;
            gm.B = xp + gi * cg * g.H * g.W;
            gm.rsb = P;
            gm.csb = 1;
            if (!direct) {
                gm.packb = tc__conv_pack_b;
                gm.packb_arg = &g;
            }
            gm.C = op + gi * og * P;
            gm.ldc = P;
            gm.alpha = 1.0f;
            gm.rbias = bp ? bp + gi * og : NULL;
            gm.epi = c->epi;
            gm.epi_row0 = gi * og; /* the output seen as [N * cout, P] */
            gm.kc = c->blk.kc;
            gm.mc_tiles = c->blk.mc_tiles;
            gm.isa = (tc_isa)c->blk.isa;
            if (fold) {
                int64_t n, i;
                gm.N = g.N * P;
                gm.packb = tc__conv_pack_b;
                gm.packb_arg = &g;
                gm.C = fold;
                gm.ldc = g.N * P;
                gm.epi = NULL;
                if (tc__gemm_run(c->ctx, &gm, 0)) r = tc__msg(c, TC_ERR_OOM, "out of memory");
                for (n = 0; r == TC_OK && n < g.N; n++) {
                    for (i = 0; i < og; i++)
                        memcpy(op + (n * cout + gi * og + i) * P, fold + i * g.N * P + n * P, sizeof(float) * (size_t)P);
                    if (c->epi) c->epi->fn(c->epi->arg, n * cout + gi * og, og, 0, P, P);
                }
            } else if (tc__gemm_batched(c->ctx, &gm, g.N, off, off + g.N, off + 2 * g.N)) {
                r = tc__msg(c, TC_ERR_OOM, "out of memory");
            }
        }
        tc__scratch_put(fold);
    }
    if (r == TC_OK) tc__out_f32_done(c->ctx, out, oo);
    else tc__scratch_put(oo);
    tc__scratch_put(off);
    tc__scratch_put(xo);
    tc__scratch_put(wo);
    tc__scratch_put(bo);
    return r;
}

static const int tc__zero2[2] = {0, 0};

TCDEF tc_tensor *tc_conv2d_at(tc_ctx *ctx, tc_tensor *x, tc_tensor *weight, tc_tensor *bias, const tc_conv2d_opts *opts,
                              const char *file, int line) {
    tc__call c;
    tc_conv2d_opts o;
    int one[2] = {1, 1};
    tc_result r;
    tc__call_init(&c, ctx, TC__OP_CONV2D, file, line);
    if (!ctx) return &tc__sentinel_null_ctx;
    c.nin = 3;
    c.in[0] = x;
    c.in[1] = weight;
    c.in[2] = bias;
    c.optional = 4;
    if (opts) o = *opts;
    else memset(&o, 0, sizeof o);
    r = tc__geom_attrs(&c, one, o.stride, o.padding, o.dilation, 0);
    if (r != TC_OK) return tc__fail(&c, r);
    c.a.i[TC__G_GROUPS] = o.groups ? o.groups : 1;
    return tc__run(&c);
}

/* ---- pooling ----------------------------------------------------------------------- */

TC__FN tc_result tc__shape_pool2d(tc__call *c) {
    const tc_tensor *x = c->ins[0];
    tc_result r = tc__check_image(c, x);
    int i;
    if (r != TC_OK) return r;
    for (i = 0; i < 2; i++)
        if (c->a.i[TC__G_P + i] * 2 > c->a.i[TC__G_K + i])
            return tc__msg(c, TC_ERR_INVALID_ARG, "padding %lld must be at most half the kernel size %lld",
                           (long long)c->a.i[TC__G_P + i], (long long)c->a.i[TC__G_K + i]);
    if (c->op == TC__OP_AVG_POOL2D && (c->a.i[TC__G_D] != 1 || c->a.i[TC__G_D + 1] != 1))
        return tc__msg(c, TC_ERR_INVALID_ARG, "avg_pool2d has no dilation");
    return tc__image_out(c, x, x->shape[x->ndim - 3], (int)c->a.i[TC__G_CEIL]);
}

TC__FN tc_result tc__run_pool2d(tc__call *c, tc_tensor *out) {
    const tc_tensor *x = c->ins[0];
    tc__geom g;
    void *xo = NULL, *oo = NULL;
    const float *xp = (const float *)tc__contig_as(c->ctx, x, TC_F32, &xo);
    float *yp = tc__out_f32(out, &oo);
    tc_result r = TC_OK;
    tc__geom_of(c, x, &g);
    if (!xp || !yp || tc__win_run(c->ctx, c->op == TC__OP_MAX_POOL2D ? TC__WIN_MAX : TC__WIN_AVG, &g, xp, NULL, NULL, 1,
                                  (int)c->a.i[TC__G_EXCL], NULL, yp))
        r = tc__msg(c, TC_ERR_OOM, "out of memory");
    if (r == TC_OK) tc__out_f32_done(c->ctx, out, oo);
    else tc__scratch_put(oo);
    tc__scratch_put(xo);
    return r;
}

TC__FN tc_tensor *tc__pool2d(tc_ctx *ctx, tc__op op, tc_tensor *x, const tc_pool2d_opts *opts, const char *file, int line) {
    tc__call c;
    tc_result r;
    tc__unary_call(ctx, op, x, file, line, &c);
    if (!ctx) return &tc__sentinel_null_ctx;
    if (!opts) {
        tc__msg(&c, TC_ERR_NULL, "options are required (kernel size)");
        return tc__fail(&c, TC_ERR_NULL);
    }
    r = tc__geom_attrs(&c, opts->kernel, opts->stride, opts->padding, op == TC__OP_MAX_POOL2D ? opts->dilation : tc__zero2, 1);
    if (r == TC_OK && op == TC__OP_AVG_POOL2D && (opts->dilation[0] > 1 || opts->dilation[1] > 1))
        r = tc__msg(&c, TC_ERR_INVALID_ARG, "avg_pool2d has no dilation");
    if (r != TC_OK) return tc__fail(&c, r);
    c.a.i[TC__G_CEIL] = opts->ceil_mode != 0;
    c.a.i[TC__G_EXCL] = opts->exclude_pad != 0;
    return tc__run(&c);
}

TCDEF tc_tensor *tc_max_pool2d_at(tc_ctx *ctx, tc_tensor *x, const tc_pool2d_opts *opts, const char *file, int line) {
    return tc__pool2d(ctx, TC__OP_MAX_POOL2D, x, opts, file, line);
}
TCDEF tc_tensor *tc_avg_pool2d_at(tc_ctx *ctx, tc_tensor *x, const tc_pool2d_opts *opts, const char *file, int line) {
    return tc__pool2d(ctx, TC__OP_AVG_POOL2D, x, opts, file, line);
}

/* ---- adaptive average pooling ------------------------------------------------------ */

TC__FN tc_result tc__shape_adaptive(tc__call *c) {
    const tc_tensor *x = c->ins[0];
    tc_result r = tc__check_image(c, x);
    if (r != TC_OK) return r;
    if (c->a.i[0] < 1 || c->a.i[1] < 1)
        return tc__msg(c, TC_ERR_INVALID_ARG, "output size %lldx%lld must be positive", (long long)c->a.i[0], (long long)c->a.i[1]);
    if (x->shape[x->ndim - 2] < 1 || x->shape[x->ndim - 1] < 1)
        return tc__msg(c, TC_ERR_SHAPE, "input %s has an empty spatial dim", tc__shp(x).s);
    tc__shape_same(c);
    c->oshape[x->ndim - 2] = c->a.i[0];
    c->oshape[x->ndim - 1] = c->a.i[1];
    return TC_OK;
}

typedef struct tc__adapt_job {
    const float *x;
    float *y;
    int64_t H, W, OH, OW;
} tc__adapt_job;

TC__FN void tc__adapt_planes(void *arg, int64_t pb, int64_t pe) {
    const tc__adapt_job *j = (const tc__adapt_job *)arg;
    int64_t p, oh, ow, ih, iw;
    for (p = pb; p < pe; p++) {
        const float *xp = j->x + p * j->H * j->W;
        float *yp = j->y + p * j->OH * j->OW;
        for (oh = 0; oh < j->OH; oh++) {
            int64_t h0 = oh * j->H / j->OH, h1 = ((oh + 1) * j->H + j->OH - 1) / j->OH;
            for (ow = 0; ow < j->OW; ow++) {
                int64_t w0 = ow * j->W / j->OW, w1 = ((ow + 1) * j->W + j->OW - 1) / j->OW;
                double s = 0.0;
                for (ih = h0; ih < h1; ih++)
                    for (iw = w0; iw < w1; iw++) s += xp[ih * j->W + iw];
                yp[oh * j->OW + ow] = (float)(s / (double)((h1 - h0) * (w1 - w0)));
            }
        }
    }
}

TC__FN tc_result tc__run_adaptive(tc__call *c, tc_tensor *out) {
    const tc_tensor *x = c->ins[0];
    tc__adapt_job j;
    void *xo = NULL, *oo = NULL;
    int64_t planes = tc__numel(x) / (x->shape[x->ndim - 2] * x->shape[x->ndim - 1]);
    tc_result r = TC_OK;
    j.x = (const float *)tc__contig_as(c->ctx, x, TC_F32, &xo);
    j.y = tc__out_f32(out, &oo);
    j.H = x->shape[x->ndim - 2];
    j.W = x->shape[x->ndim - 1];
    j.OH = c->a.i[0];
    j.OW = c->a.i[1];
    if (!j.x || !j.y) r = tc__msg(c, TC_ERR_OOM, "out of memory");
    else tc__parallel_for(c->ctx, planes, tc__numel(x), tc__adapt_planes, &j);
    if (r == TC_OK) tc__out_f32_done(c->ctx, out, oo);
    else tc__scratch_put(oo);
    tc__scratch_put(xo);
    return r;
}

TCDEF tc_tensor *tc_adaptive_avg_pool2d_at(tc_ctx *ctx, tc_tensor *x, int64_t out_h, int64_t out_w, const char *file,
                                           int line) {
    tc__call c;
    tc__unary_call(ctx, TC__OP_ADAPTIVE_AVG_POOL2D, x, file, line, &c);
    c.a.i[0] = out_h;
    c.a.i[1] = out_w;
    return tc__run(&c);
}

/* ---- batch norm (inference) --------------------------------------------------------- */

TC__FN tc_result tc__shape_batch_norm(tc__call *c) {
    const tc_tensor *x = c->ins[0];
    int i;
    tc_result r = tc__float_inputs(c, 5);
    if (r != TC_OK) return r;
    if (x->ndim < 2) return tc__msg(c, TC_ERR_SHAPE, "input must be [N, C, ...], got %s", tc__shp(x).s);
    for (i = 1; i < 5; i++) {
        const tc_tensor *p = c->ins[i];
        static const char *const names[5] = {"", "running_mean", "running_var", "weight", "bias"};
        if (p && (p->ndim != 1 || p->shape[0] != x->shape[1]))
            return tc__msg(c, TC_ERR_SHAPE, "%s %s must be [%lld] (channels of %s)", names[i], tc__shp(p).s,
                           (long long)x->shape[1], tc__shp(x).s);
    }
    if (!(c->a.f[0] >= 0.0)) return tc__msg(c, TC_ERR_INVALID_ARG, "eps must be >= 0 (got %g)", c->a.f[0]);
    tc__shape_same(c);
    return TC_OK;
}

typedef struct tc__bn_job {
    const float *x, *scale, *shift;
    float *y;
    int64_t C, inner;
} tc__bn_job;

TC__FN void tc__bn_planes(void *arg, int64_t pb, int64_t pe) {
    const tc__bn_job *j = (const tc__bn_job *)arg;
    int64_t p, i;
    for (p = pb; p < pe; p++) {
        float s = j->scale[p % j->C], t = j->shift[p % j->C];
        const float *xp = j->x + p * j->inner;
        float *yp = j->y + p * j->inner;
        for (i = 0; i < j->inner; i++) yp[i] = xp[i] * s + t;
    }
}

TC__FN tc_result tc__run_batch_norm(tc__call *c, tc_tensor *out) {
    const tc_tensor *x = c->ins[0];
    int64_t C = x->shape[1], ch;
    tc__bn_job j;
    void *xo = NULL, *oo = NULL, *po[4] = {NULL, NULL, NULL, NULL};
    const float *p[4];
    float *ss = (float *)tc__scratch_get(c->ctx, sizeof(float) * 2 * (size_t)(C > 0 ? C : 1));
    tc_result r = TC_OK;
    int i;
    for (i = 0; i < 4; i++) p[i] = c->ins[i + 1] ? (const float *)tc__contig_as(c->ctx, c->ins[i + 1], TC_F32, &po[i]) : NULL;
    j.x = (const float *)tc__contig_as(c->ctx, x, TC_F32, &xo);
    j.y = tc__out_f32(out, &oo);
    if (!ss || !j.x || !j.y || !p[0] || !p[1] || (c->ins[3] && !p[2]) || (c->ins[4] && !p[3]))
        r = tc__msg(c, TC_ERR_OOM, "out of memory");
    else {
        /* fold (mean, var, weight, bias) into one scale and shift per channel */
        for (ch = 0; ch < C; ch++) {
            double sc = 1.0 / sqrt((double)p[1][ch] + c->a.f[0]) * (p[2] ? p[2][ch] : 1.0f);
            ss[ch] = (float)sc;
            ss[C + ch] = (float)((p[3] ? p[3][ch] : 0.0f) - p[0][ch] * sc);
        }
        j.scale = ss;
        j.shift = ss + C;
        j.C = C;
        j.inner = C > 0 ? tc__numel(x) / (x->shape[0] * C) : 0;
        tc__parallel_for(c->ctx, x->shape[0] * C, tc__numel(x), tc__bn_planes, &j);
    }
    if (r == TC_OK) tc__out_f32_done(c->ctx, out, oo);
    else tc__scratch_put(oo);
    tc__scratch_put(xo);
    tc__scratch_put(ss);
    for (i = 0; i < 4; i++) tc__scratch_put(po[i]);
    return r;
}

TCDEF tc_tensor *tc_batch_norm_at(tc_ctx *ctx, tc_tensor *x, tc_tensor *mean, tc_tensor *var, tc_tensor *weight,
                                  tc_tensor *bias, double eps, const char *file, int line) {
    tc__call c;
    tc__call_init(&c, ctx, TC__OP_BATCH_NORM, file, line);
    c.nin = 5;
    c.in[0] = x;
    c.in[1] = mean;
    c.in[2] = var;
    c.in[3] = weight;
    c.in[4] = bias;
    c.optional = 8 | 16;
    c.a.f[0] = eps;
    return tc__run(&c);
}
