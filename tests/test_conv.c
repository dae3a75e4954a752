/* Convolution, direct (the default: a padded, phase-split input band read
 * in place by the microkernels) and as implicit GEMM (max-autotune's
 * variant: the B packer computes im2col slivers from the image), both
 * against a double-precision reference on every ISA level this machine
 * runs: K deeper than one slice, more positions than one panel or band,
 * every microkernel tail, stride / padding / dilation / groups /
 * depthwise / 1 x 1, batches folded into one GEMM's columns, bias, and a
 * check that the direct kernel is the one that ran; the window kernels
 * (depthwise conv, max and avg pooling) across vector tails, strides
 * (phase-split rows), dilation, ceil mode and NaN; the compiler running
 * pointwise ops after a conv as its epilogue (on the depthwise path too),
 * with batch norm's per-channel scale hoisted ahead of the conv; batch
 * norm folded into the conv's weights under freeze (not without it, not
 * when the conv's result is read elsewhere); and frozen packed weights
 * repacked when the ISA level (and so the tile) changes. */
#define TCOMPILE_IMPLEMENTATION
#define TCOMPILE_TESTING /* the test switches (tc__conv_path, tc__conv_direct_runs) */
#include "../tcompile.h"
#include "tc_test.h"

static tc_ctx *ctx;

static float *dense(tc_tensor *t) {
    int64_t n = tc_numel(t);
    float *p = (float *)malloc(sizeof(float) * (size_t)(n ? n : 1));
    tc_read(t, TC_F32, p, sizeof(float) * (size_t)n);
    return p;
}

typedef struct conv_case {
    int64_t N, C, H, W, O;   /* batch, in channels, height, width, out channels */
    int kh, kw, s[2], p[2], d[2], groups, bias;
} conv_case;

/* Worst |got - ref| / (sum |x w| + 1e-3) over the output. */
static double conv_err(const conv_case *k, const float *x, const float *w, const float *b, const float *y, int64_t OH,
                       int64_t OW) {
    int64_t cg = k->C / k->groups, og = k->O / k->groups, n, o, oh, ow, c;
    double worst = 0;
    int i, j;
    for (n = 0; n < k->N; n++)
        for (o = 0; o < k->O; o++)
            for (oh = 0; oh < OH; oh++)
                for (ow = 0; ow < OW; ow++) {
                    double s = b ? b[o] : 0, mag = b ? fabs(b[o]) : 0, err;
                    int64_t g = o / og;
                    for (c = 0; c < cg; c++)
                        for (i = 0; i < k->kh; i++)
                            for (j = 0; j < k->kw; j++) {
                                int64_t ih = oh * k->s[0] - k->p[0] + (int64_t)i * k->d[0];
                                int64_t iw = ow * k->s[1] - k->p[1] + (int64_t)j * k->d[1];
                                double t;
                                if (ih < 0 || ih >= k->H || iw < 0 || iw >= k->W) continue;
                                t = (double)x[((n * k->C + g * cg + c) * k->H + ih) * k->W + iw] *
                                    w[((o * cg + c) * k->kh + i) * k->kw + j];
                                s += t;
                                mag += fabs(t);
                            }
                    err = fabs(y[((n * k->O + o) * OH + oh) * OW + ow] - s) / (mag + 1e-3);
                    if (!(err <= worst)) worst = err != err ? INFINITY : err;
                }
    return worst;
}

static void check_conv(const conv_case *k, int strided) {
    int64_t sx[4], sw[4] = {k->O, k->C / k->groups, k->kh, k->kw}, sb = k->O;
    tc_conv2d_opts o;
    tc_tensor *x, *w, *b, *y;
    float *xd, *wd, *bd = NULL, *yd;
    double err;
    long runs;
    int direct;
    tc_scope_begin(ctx);
    memset(&o, 0, sizeof o);
    memcpy(o.stride, k->s, sizeof o.stride);
    memcpy(o.padding, k->p, sizeof o.padding);
    memcpy(o.dilation, k->d, sizeof o.dilation);
    o.groups = k->groups;
    if (strided) { /* x as a channels-last tensor permuted to NCHW (conv copies it) */
        int perm[4] = {0, 3, 1, 2};
        sx[0] = k->N, sx[1] = k->H, sx[2] = k->W, sx[3] = k->C;
        x = tc_permute(ctx, tc_rand_uniform(ctx, 4, sx, -1.0, 1.0, 31), perm);
    } else {
        sx[0] = k->N, sx[1] = k->C, sx[2] = k->H, sx[3] = k->W;
        x = tc_rand_uniform(ctx, 4, sx, -1.0, 1.0, 31);
    }
    w = tc_rand_uniform(ctx, 4, sw, -1.0, 1.0, 32);
    b = k->bias ? tc_rand_uniform(ctx, 1, &sb, -1.0, 1.0, 33) : NULL;
    runs = tc__conv_direct_runs;
    y = tc_conv2d(ctx, x, w, b, &o);
    TC_CHECKF(tc_status(y) == TC_OK, "conv2d: %s", tc_error(y));
    /* forced onto the direct kernel, every conv runs it but the depthwise
     * ones that take the window kernel (as conv.c chooses) and strides
     * past 16; forced onto the implicit GEMM, none; left to conv.c, also
     * not the 1 x 1 stride-1 unpadded ones over at most 64 channels */
    direct = tc__conv_path != 1 && k->s[0] <= 16 && k->s[1] <= 16 &&
             !(k->groups == k->C && (k->O / k->groups <= 4 || k->N * k->C >= 2 * (int64_t)tc_ctx_num_threads(ctx))) &&
             (tc__conv_path == 2 || !(k->kh == 1 && k->kw == 1 && k->s[0] == 1 && k->s[1] == 1 && k->p[0] == 0 &&
                                      k->p[1] == 0 && k->C / k->groups <= 64));
    TC_CHECKF(tc__conv_direct_runs - runs == direct, "x[%lld,%lld,%lld,%lld] s %d,%d g %d: %ld direct runs (want %d)",
              (long long)k->N, (long long)k->C, (long long)k->H, (long long)k->W, k->s[0], k->s[1], k->groups,
              tc__conv_direct_runs - runs, direct);
    xd = dense(x), wd = dense(w), yd = dense(y);
    if (b) bd = dense(b);
    err = tc_status(y) == TC_OK ? conv_err(k, xd, wd, bd, yd, tc_dim(y, 2), tc_dim(y, 3)) : INFINITY;
    TC_CHECKF(err <= 2e-6, "%s %s x[%lld,%lld,%lld,%lld] w[%lld,%lld,%d,%d] s %d,%d p %d,%d d %d,%d g %d bias %d: error %.3g",
              tc_isa_name(tc_ctx_isa(ctx)), tc__conv_path == 1 ? "gemm" : tc__conv_path == 2 ? "direct" : "auto", (long long)k->N, (long long)k->C, (long long)k->H, (long long)k->W,
              (long long)k->O, (long long)(k->C / k->groups), k->kh, k->kw, k->s[0], k->s[1], k->p[0], k->p[1], k->d[0],
              k->d[1], k->groups, k->bias, err);
    free(xd), free(wd), free(bd), free(yd);
    tc_scope_end(ctx);
}

TC_TEST(test_conv_every_level_and_shape) {
    static const conv_case cases[] = {
        /* N  C   H   W   O  kh kw stride  pad    dil  groups bias */
        {1, 40, 9, 11, 70, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, 1},   /* K = 360: two K slices; M tails */
        {1, 3, 50, 47, 13, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, 0},   /* 2350 positions: two B panels */
        {2, 3, 31, 29, 8, 7, 7, {2, 2}, {3, 3}, {1, 1}, 1, 1},    /* ResNet's stem: 7 x 7 stride 2 */
        {1, 16, 14, 15, 33, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, 1},  /* 1 x 1: the image is B itself */
        {3, 20, 9, 11, 40, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, 1},   /* 1 x 1 over a folded batch */
        {4, 24, 6, 7, 50, 3, 3, {1, 1}, {1, 1}, {1, 1}, 2, 1},    /* a folded batch, K slices, groups */
        {2, 16, 13, 14, 24, 1, 1, {2, 2}, {0, 0}, {1, 1}, 1, 0},  /* 1 x 1 stride 2 (downsample) */
        {1, 12, 12, 17, 20, 3, 3, {1, 2}, {2, 1}, {2, 3}, 1, 1},  /* dilation, mixed strides */
        {3, 8, 10, 9, 12, 3, 5, {1, 1}, {1, 2}, {1, 1}, 2, 1},    /* groups, 3 x 5 */
        {5, 6, 7, 7, 5, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, 1},      /* small images: one per thread */
        {1, 7, 6, 6, 3, 2, 2, {1, 1}, {0, 0}, {1, 1}, 1, 1},      /* M < 4 rows through the packed path */
        {2, 12, 9, 10, 24, 3, 3, {1, 1}, {1, 1}, {1, 1}, 12, 1},  /* depthwise, 2 per channel */
        {1, 4, 5, 40, 4, 1, 9, {1, 3}, {0, 4}, {1, 1}, 1, 0},     /* a wide row kernel, padding past the row */
        {1, 2, 3, 3, 6, 3, 3, {4, 4}, {5, 5}, {1, 1}, 1, 1},      /* padding wider than the image */
        {1, 1, 1, 1, 40, 1, 1, {1, 1}, {0, 0}, {1, 1}, 1, 1},     /* K = 1, one position */
        /* the direct kernel's own edges: */
        {1, 64, 60, 62, 32, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, 1},  /* bands of rows, K = 576 in slices */
        {1, 24, 5, 6, 100, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, 0},   /* one band: split by channel tiles */
        {3, 5, 17, 9, 36, 3, 3, {2, 1}, {0, 2}, {1, 1}, 1, 1},    /* row phases only, 36 = 3 tiles of 12 */
        {1, 8, 19, 20, 16, 3, 3, {3, 3}, {1, 1}, {2, 2}, 1, 1},   /* stride 3, dilation 2: every phase read */
        {2, 4, 40, 40, 8, 1, 1, {17, 17}, {0, 0}, {1, 1}, 1, 1},  /* strides past 16: the implicit GEMM */
        {11, 6, 7, 7, 10, 3, 3, {1, 1}, {1, 1}, {1, 1}, 1, 1},    /* 11 small images, 2 of 9 positions dropped */
        {3, 4, 9, 8, 8, 3, 3, {1, 1}, {1, 1}, {2, 2}, 1, 0},      /* dilated and padded: 4 dropped per row */
        {3, 4, 5, 6, 8, 1, 1, {1, 1}, {1, 1}, {1, 1}, 1, 1},      /* 1 x 1 padded: direct, not the GEMM */
    };
    int isa, path;
    size_t i;
    /* the direct kernel wherever it can run, the implicit GEMM
     * (max-autotune's variant), then conv.c's choice */
    for (path = 2; path >= 0; path--)
        for (isa = TC_ISA_SCALAR; isa <= TC_ISA_AVX512; isa++) {
            tc_ctx_set_isa(ctx, (tc_isa)isa);
            if ((int)tc_ctx_isa(ctx) != isa) continue;
            tc__conv_path = path;
            for (i = 0; i < sizeof cases / sizeof cases[0]; i++) check_conv(&cases[i], (int)(i % 3 == 2));
        }
    tc__conv_path = 0;
    tc_ctx_set_isa(ctx, TC_ISA_AUTO);
}

/* ---- window kernels: depthwise conv and pooling ------------------------------- */

/* max_pool2d (NaN wins) or avg_pool2d (torch's divisor) in double; 0 on a mismatch. */
static int check_pool(int isavg, int64_t C, int64_t H, int64_t W, int k, int s, int p, int d, int ceil_mode,
                      int excl, int nan_at) {
    int64_t sx[4] = {2, C, H, W}, n, oh, ow, OH, OW;
    tc_pool2d_opts o;
    tc_tensor *x, *y;
    float *xd, *yd;
    double worst = 0;
    tc_scope_begin(ctx);
    memset(&o, 0, sizeof o);
    o.kernel[0] = o.kernel[1] = k;
    o.stride[0] = o.stride[1] = s;
    o.padding[0] = o.padding[1] = p;
    o.dilation[0] = o.dilation[1] = isavg ? 0 : d;
    o.ceil_mode = ceil_mode;
    o.exclude_pad = excl;
    x = tc_rand_uniform(ctx, 4, sx, -4.0, 4.0, 61);
    if (nan_at >= 0) { /* one NaN, landing in some vector lane of some window */
        int64_t at[4] = {1, C - 1, nan_at / W % H, nan_at % W};
        tc_set(x, at, NAN);
    }
    y = isavg ? tc_avg_pool2d(ctx, x, &o) : tc_max_pool2d(ctx, x, &o);
    TC_CHECKF(tc_status(y) == TC_OK, "pool: %s", tc_error(y));
    if (tc_status(y) != TC_OK) {
        tc_scope_end(ctx);
        return 0;
    }
    OH = tc_dim(y, 2), OW = tc_dim(y, 3);
    xd = dense(x), yd = dense(y);
    for (n = 0; n < 2 * C; n++)
        for (oh = 0; oh < OH; oh++)
            for (ow = 0; ow < OW; ow++) {
                const float *xp = xd + n * H * W;
                int64_t h0 = oh * s - p, w0 = ow * s - p, h1, w1, cnt, ih, iw;
                double r = isavg ? 0 : -INFINITY, got = yd[(n * OH + oh) * OW + ow];
                if (!isavg) {
                    int a, b;
                    for (a = 0; a < k; a++)
                        for (b = 0; b < k; b++) {
                            ih = h0 + (int64_t)a * d, iw = w0 + (int64_t)b * d;
                            if (ih >= 0 && ih < H && iw >= 0 && iw < W && (xp[ih * W + iw] > r || xp[ih * W + iw] != xp[ih * W + iw]))
                                r = r != r ? r : xp[ih * W + iw];
                        }
                } else {
                    h1 = h0 + k < H + p ? h0 + k : H + p;
                    w1 = w0 + k < W + p ? w0 + k : W + p;
                    cnt = (h1 - h0) * (w1 - w0);
                    if (h0 < 0) h0 = 0;
                    if (w0 < 0) w0 = 0;
                    if (h1 > H) h1 = H;
                    if (w1 > W) w1 = W;
                    if (excl) cnt = (h1 - h0) * (w1 - w0);
                    for (ih = h0; ih < h1; ih++)
                        for (iw = w0; iw < w1; iw++) r += xp[ih * W + iw];
                    r /= (double)cnt;
                }
                if (r != r || got != got) {
                    if ((r != r) != (got != got)) worst = INFINITY;
                } else if (fabs(got - r) > worst) {
                    worst = fabs(got - r);
                }
            }
    TC_CHECKF(worst <= 1e-5, "%s %s C %lld H %lld W %lld k %d s %d p %d d %d ceil %d excl %d nan %d: error %.3g",
              tc_isa_name(tc_ctx_isa(ctx)), isavg ? "avg_pool2d" : "max_pool2d", (long long)C, (long long)H, (long long)W,
              k, s, p, d, ceil_mode, excl, nan_at, worst);
    free(xd), free(yd);
    tc_scope_end(ctx);
    return worst <= 1e-5;
}

TC_TEST(test_windows_every_level) {
    static const conv_case dw[] = {
        /* depthwise: N  C   H   W   O  kh kw stride  pad    dil  groups bias */
        {2, 5, 9, 70, 5, 3, 3, {1, 1}, {1, 1}, {1, 1}, 5, 1},     /* rows past two vectors, a tail */
        {1, 4, 17, 33, 8, 3, 3, {2, 2}, {1, 1}, {1, 1}, 4, 1},    /* stride 2 (phases), 2 per channel */
        {1, 3, 12, 31, 15, 5, 5, {3, 1}, {2, 2}, {1, 1}, 3, 0},   /* 5 x 5, 5 per channel, mixed stride */
        {1, 6, 11, 19, 6, 3, 3, {1, 2}, {2, 2}, {2, 2}, 6, 1},    /* dilation: taps two columns apart */
        {3, 2, 1, 1, 2, 1, 1, {1, 1}, {0, 0}, {1, 1}, 2, 1},      /* 1 x 1 images */
        {1, 2, 8, 16, 2, 7, 1, {1, 1}, {3, 0}, {1, 1}, 2, 1},     /* a column kernel, width one vector */
    };
    int isa;
    size_t i;
    for (isa = TC_ISA_SCALAR; isa <= TC_ISA_AVX512; isa++) {
        tc_ctx_set_isa(ctx, (tc_isa)isa);
        if ((int)tc_ctx_isa(ctx) != isa) continue;
        for (i = 0; i < sizeof dw / sizeof dw[0]; i++) check_conv(&dw[i], (int)(i % 2));
        check_pool(0, 3, 112, 112, 3, 2, 1, 1, 0, 0, -1); /* ResNet's stem */
        check_pool(0, 2, 19, 70, 3, 1, 1, 1, 0, 0, 19 * 7 + 40); /* a NaN mid-row */
        check_pool(0, 2, 9, 35, 3, 2, 1, 2, 1, 0, 3 * 35 + 33);  /* dilation, ceil, NaN near the row's end */
        check_pool(0, 1, 5, 17, 4, 3, 2, 1, 1, 0, -1);           /* windows past the padding (ceil) */
        check_pool(1, 3, 14, 33, 3, 2, 1, 1, 0, 0, -1);          /* counting the padding */
        check_pool(1, 3, 14, 33, 3, 2, 1, 1, 1, 1, -1);          /* excluding it, ceil */
        check_pool(1, 2, 7, 7, 7, 7, 0, 1, 0, 0, -1);            /* global */
        check_pool(1, 2, 16, 50, 2, 2, 0, 1, 0, 0, 3);           /* 2 x 2 stride 2, NaN */
    }
    tc_ctx_set_isa(ctx, TC_ISA_AUTO);
}

/* ---- compiled: epilogues and batch-norm folding ----------------------------- */

static tc_tensor *g_w, *g_b, *g_bn[4], *g_dw;
static int g_model, g_pre;

static tc_tensor *bn(tc_ctx *c, tc_tensor *h) { return tc_batch_norm(c, h, g_bn[0], g_bn[1], g_bn[2], g_bn[3], 1e-5); }

/* 0: relu(conv + b) * 2 + 1; 1: relu(bn(conv) + x) (ResNet's tail);
 * 2: relu(depthwise conv); 3: bn(conv), whose raw result is an output too;
 * 4: relu(bn(conv) + x) with the norm's mean and weight filled in the
 * traced function (zeros, a constant) rather than parameters */
static void model(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    tc_conv2d_opts o;
    tc_tensor *h;
    int k;
    (void)user;
    memset(&o, 0, sizeof o);
    o.padding[0] = o.padding[1] = 1;
    if (g_model == 2) {
        o.groups = 12;
        out[0] = tc_relu(c, tc_conv2d(c, in[0], g_dw, g_b, &o));
        return;
    }
    h = in[0];
    for (k = 0; k < g_pre; k++) h = tc_add_scalar(c, h, 1e-3 * k); /* nodes before the conv */
    h = tc_conv2d(c, h, g_w, g_model == 0 ? g_b : NULL, &o);
    if (g_model == 0) out[0] = tc_add_scalar(c, tc_mul_scalar(c, tc_relu(c, h), 2.0), 1.0);
    else if (g_model == 1) out[0] = tc_relu(c, tc_add(c, bn(c, h), in[0]));
    else if (g_model == 4) {
        int64_t C = 12;
        tc_tensor *n = tc_batch_norm(c, h, tc_zeros(c, TC_F32, 1, &C), g_bn[1], tc_full(c, TC_F32, 1, &C, 0.75), g_bn[3], 1e-5);
        out[0] = tc_relu(c, tc_add(c, n, in[0]));
    }
    else {
        out[0] = bn(c, h);
        out[1] = h;
    }
}

static int g_frozen; /* the last compiled_launches's tc_explain_info.frozen_weights */

/* Launches per call, and compiled vs eager, for the model in g_model. */
static int compiled_launches(int freeze, double *err) {
    int64_t sx[4] = {2, 12, 20, 19};
    tc_tensor *in[1], *eager[2], *got[2];
    tc_compile_options o;
    tc_explain_info info;
    tc_fn *f;
    int k, nout = g_model == 3 ? 2 : 1;
    tc_scope_begin(ctx);
    in[0] = tc_rand_uniform(ctx, 4, sx, -1.0, 1.0, 41);
    model(ctx, NULL, in, eager);
    memset(&o, 0, sizeof o);
    o.num_outputs = nout;
    o.freeze = freeze;
    f = tc_compile(ctx, model, NULL, &o);
    *err = INFINITY;
    /* the first call traces; the second runs the program */
    if (tc_call(f, in, got) != TC_OK || tc_call(f, in, got) != TC_OK || tc_explain(f, &info, NULL, 0) != TC_OK) {
        TC_CHECKF(0, "model %d: %s", g_model, tc_fn_error(f));
        info.kernels = -1;
    } else {
        *err = 0;
        g_frozen = info.frozen_weights;
        for (k = 0; k < nout; k++)
            if (tct_maxrel(got[k], eager[k]) > *err) *err = tct_maxrel(got[k], eager[k]);
    }
    tc_fn_free(f);
    tc_scope_end(ctx);
    return info.kernels;
}

TC_TEST(test_conv_epilogues_and_bn_folding) {
    int64_t sw[4] = {12, 12, 3, 3}, sd[4] = {12, 1, 3, 3}, sc = 12;
    double err;
    int n;
    tc_scope_begin(ctx);
    g_w = tc_persist(tc_rand_uniform(ctx, 4, sw, -0.3, 0.3, 51));
    g_dw = tc_persist(tc_rand_uniform(ctx, 4, sd, -0.5, 0.5, 52));
    g_b = tc_persist(tc_rand_uniform(ctx, 1, &sc, -1.0, 1.0, 53));
    g_bn[0] = tc_persist(tc_rand_uniform(ctx, 1, &sc, -0.5, 0.5, 54));
    g_bn[1] = tc_persist(tc_rand_uniform(ctx, 1, &sc, 0.5, 2.0, 55));
    g_bn[2] = tc_persist(tc_rand_uniform(ctx, 1, &sc, 0.5, 1.5, 56));
    g_bn[3] = tc_persist(tc_rand_uniform(ctx, 1, &sc, -0.5, 0.5, 57));
    tc_scope_end(ctx);
    /* the pointwise tail runs on the conv's output tiles: one launch */
    g_model = 0;
    n = compiled_launches(0, &err);
    TC_CHECKF(n == 1 && err < 1e-5, "conv + bias + relu * 2 + 1: %d launches (want 1), error %.3g", n, err);
    g_model = 2;
    n = compiled_launches(0, &err);
    TC_CHECKF(n == 1 && err < 1e-5, "relu(depthwise conv): %d launches (want 1), error %.3g", n, err);
    /* not frozen: bn's scale and shift are computed (ahead of the conv) and
     * the norm, residual and relu are the conv's epilogue */
    g_model = 1;
    n = compiled_launches(0, &err);
    TC_CHECKF(n >= 2 && n <= 3 && err < 1e-5, "bn(conv) + x, not frozen: %d launches (want 2-3), error %.3g", n, err);
    TC_CHECKF(g_frozen == 0, "bn(conv) + x, not frozen: %d weights counted frozen", g_frozen);
    /* frozen: the norm is in the conv's weights (a weight frozen, as
     * tc_explain counts it); residual and relu remain */
    n = compiled_launches(1, &err);
    TC_CHECKF(n == 1 && err < 1e-5, "bn(conv) + x, frozen: %d launches (want 1), error %.3g", n, err);
    TC_CHECKF(g_frozen == 1, "bn(conv) + x, frozen: %d weights counted frozen (want the conv's)", g_frozen);
    /* stats and weight made by fills in the function fold the same way */
    g_model = 4;
    n = compiled_launches(1, &err);
    TC_CHECKF(n == 1 && err < 1e-5, "bn(conv) + x, filled stats, frozen: %d launches (want 1), error %.3g", n, err);
    TC_CHECKF(g_frozen == 1, "filled stats, frozen: %d weights counted frozen", g_frozen);
    /* the raw conv is an output too: no folding, both results right (the
     * conv's own weight is still packed once) */
    g_model = 3;
    n = compiled_launches(1, &err);
    TC_CHECKF(n >= 2 && err < 1e-5, "bn(conv) with conv an output: %d launches (want >= 2), error %.3g", n, err);
    TC_CHECKF(g_frozen == 1, "bn(conv) with conv an output: %d weights counted frozen (want 1)", g_frozen);
    /* frozen, no norm to fold: the direct conv packs its weight once */
    g_model = 0;
    n = compiled_launches(1, &err);
    TC_CHECKF(g_frozen == 1 && err < 1e-5, "conv + bias, frozen: %d weights counted frozen (want 1)", g_frozen);
    /* the fold adds nodes while it reads the conv's: across every graph size
     * where the node array grows (ASan in make test sees a stale read) */
    g_model = 1;
    for (g_pre = 20; g_pre <= 70; g_pre += 1 + (g_pre > 30 && g_pre < 55) * 3) {
        n = compiled_launches(1, &err);
        TC_CHECKF(err < 1e-5, "bn(conv) after %d nodes, frozen: error %.3g", g_pre, err);
    }
    g_pre = 0;
    tc_free(g_w), tc_free(g_dw), tc_free(g_b);
    for (n = 0; n < 4; n++) tc_free(g_bn[n]);
}

/* freeze packs a conv's weights once for the tile of the level it first
 * ran at: a later call at another level (tc_ctx_set_isa, max-autotune's
 * variants) has another tile height and must repack, not reuse them */
TC_TEST(test_conv_frozen_weights_across_levels) {
    int64_t sx[4] = {2, 12, 20, 19}, sw[4] = {40, 12, 3, 3}, sb = 40;
    tc_tensor *in[1], *eager[1], *got[1], *w, *b;
    tc_compile_options o;
    tc_conv2d_opts co;
    tc_fn *f;
    int isa, calls = 0, levels = 0;
    for (isa = TC_ISA_SCALAR; isa <= TC_ISA_AVX512; isa++) {
        tc_ctx_set_isa(ctx, (tc_isa)isa);
        levels += (int)tc_ctx_isa(ctx) == isa;
    }
    tc_ctx_set_isa(ctx, TC_ISA_AUTO);
    if (levels < 2) {
        TC_SKIP("this build runs %d ISA level: no other level to call the frozen conv at", levels);
        return;
    }
    tc_scope_begin(ctx);
    w = tc_rand_uniform(ctx, 4, sw, -0.3, 0.3, 71);
    b = tc_rand_uniform(ctx, 1, &sb, -1.0, 1.0, 72);
    in[0] = tc_rand_uniform(ctx, 4, sx, -1.0, 1.0, 73);
    memset(&co, 0, sizeof co);
    co.padding[0] = co.padding[1] = 1;
    eager[0] = tc_conv2d(ctx, in[0], w, b, &co);
    g_w = w, g_b = b, g_model = 0;
    memset(&o, 0, sizeof o);
    o.freeze = 1;
    f = tc_compile(ctx, model, NULL, &o);
    eager[0] = tc_add_scalar(ctx, tc_mul_scalar(ctx, tc_relu(ctx, eager[0]), 2.0), 1.0);
    for (isa = TC_ISA_AVX512; isa >= TC_ISA_SCALAR; isa--) {
        double err;
        tc_ctx_set_isa(ctx, (tc_isa)isa);
        if ((int)tc_ctx_isa(ctx) != isa) continue;
        TC_CHECKF(tc_call(f, in, got) == TC_OK, "frozen conv at %s: %s", tc_isa_name((tc_isa)isa), tc_fn_error(f));
        err = tct_maxrel(got[0], eager[0]);
        TC_CHECKF(err < 1e-5, "frozen conv at %s after a call at another level: error %.3g", tc_isa_name((tc_isa)isa), err);
        calls++;
    }
    TC_CHECKF(calls >= 2, "frozen conv: %d ISA levels ran (want 2 or more)", calls);
    tc_ctx_set_isa(ctx, TC_ISA_AUTO);
    tc_fn_free(f);
    tc_scope_end(ctx);
}

int main(void) {
    ctx = tc_ctx_create(NULL);
    TC_RUN(test_conv_every_level_and_shape);
    TC_RUN(test_windows_every_level);
    TC_RUN(test_conv_epilogues_and_bn_folding);
    TC_RUN(test_conv_frozen_weights_across_levels);
    tc_ctx_destroy(ctx);
    return TC_TEST_SUMMARY();
}
