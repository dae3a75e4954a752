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

/* Padded columns ph, ph + s, ph + 2s, ... of input row xr (W floats, pw
 * columns of padding before it; NULL: a padding row) into d[0..Wq), pad
 * where they fall outside the row. */
TC__FN void tc__fill_phase(const float *xr, float *d, int64_t W, int64_t pw, int64_t s, int64_t ph, int64_t Wq,
                           float pad) {
    /* the t-th float is padded column c = ph + t * s, input column c - pw */
    int64_t lo = pw > ph ? (pw - ph + s - 1) / s : 0, hi = (pw + W - ph + s - 1) / s, t;
    if (!xr) lo = hi = 0;
    if (hi > Wq) hi = Wq;
    if (lo > hi) lo = hi;
    for (t = 0; t < lo; t++) d[t] = pad;
    if (s == 1) {
        if (hi > lo) memcpy(d + lo, xr + (lo - pw), sizeof(float) * (size_t)(hi - lo));
    } else {
        for (t = lo; t < hi; t++) d[t] = xr[ph - pw + t * s];
    }
    for (t = hi; t < Wq; t++) d[t] = pad;
}

/* Input plane xp into buf: padded rows of nph phases of Wq floats (a
 * phase shorter than Wq is padded too, so every float is written). */
TC__FN void tc__win_fill(const tc__win_job *j, const float *xp, float *buf) {
    const tc__geom *g = &j->g;
    const int64_t rowlen = j->nph * j->Wq;
    const float pad = j->kind == TC__WIN_MAX ? -INFINITY : 0.0f;
    int64_t r, ph;
    for (r = 0; r < j->Hp; r++) {
        int64_t ih = r - g->ph;
        const float *xr = ih >= 0 && ih < g->H ? xp + ih * g->W : NULL;
        for (ph = 0; ph < j->nph; ph++) tc__fill_phase(xr, buf + r * rowlen + ph * j->Wq, g->W, g->pw, g->sw, ph, j->Wq, pad);
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

/* ---- direct convolution ------------------------------------------------------------ */

/* Direct convolution (the default for every conv but the depthwise ones
 * and short 1 x 1 ones, tc__dconv_takes):
 * no im2col matrix is packed.  Each task takes one image's band of output
 * rows (and one group, and a range of output-channel tiles): it copies the
 * input rows the band reads into scratch, padded and split by stride
 * phase in both directions ([channel][row phase][column phase][row][Wq]),
 * so that output position q = r * Wq + ow of the band (Wq >= OW: a row's
 * last Wq - OW positions are computed and dropped) reads, for every tap k,
 * the float at koff[k] + q.  A tile of output channels x consecutive
 * positions is then a GEMM microkernel whose B operand is read in place
 * (tc__dconv_a_ / _b_ in gemm_isa.c), whole vectors, no padding tests;
 * the weights are packed [channel tile][k][MR] once (freeze: kept by the
 * launch) or per call.  The tile's rows go to the output (bias added) and
 * the fused epilogue runs on them while they are in cache.  The implicit
 * GEMM below remains for max-autotune's blockings, which may beat it. */
#define TC__DCONV_PHASES 16 /* strides above it take the implicit GEMM */
/* Tests: tc__conv_path 1 runs every conv through the implicit GEMM (as
 * max-autotune's blockings do), 2 through the direct kernel wherever it
 * can run (0: conv.c's choice); and a count of direct convolutions run.
 * A user build (no TCOMPILE_TESTING) has constants and the checks fold
 * away. */
#ifdef TCOMPILE_TESTING
static int tc__conv_path = 0;
static long tc__conv_direct_runs = 0;
#define TC__CONV_DIRECT_RAN() (tc__conv_direct_runs++)
#else
#define tc__conv_path 0
#define TC__CONV_DIRECT_RAN() ((void)0)
#endif

/* Whether the direct kernel takes a conv of geometry g (cg input channels
 * per group): strides it can phase-split, and not a 1 x 1 stride-1
 * unpadded conv over at most 64 channels, whose image already is the
 * im2col matrix (the implicit GEMM reads it as B) and whose short K leaves
 * the band copy and the output pass as a large share (the GEMM is faster
 * there up to 64 channels; docs/PERF.md).  7 x 7 images, where it computes
 * 9 positions per row of 7, still run it: the implicit GEMM repacks its
 * weights per call, which costs more on a frozen model. */
TC__FN int tc__dconv_takes(const tc__geom *g, int64_t cg) {
    int plain_1x1 = g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
    if (g->sh > TC__DCONV_PHASES || g->sw > TC__DCONV_PHASES || tc__conv_path == 1) return 0;
    return tc__conv_path == 2 || !(plain_1x1 && cg <= 64);
}

typedef struct tc__dconv_job {
    tc_ctx *ctx;
    const float *x, *wpk, *bias;
    float *y;
    tc__geom g;
    const tc__epilogue *epi;
    tc__dconv_fn ukr;
    tc__dconv_out_fn out;
    int mr, nr;
    int64_t groups, cg, og, cout, K, ncot;  /* ncot: channel tiles per group   */
    int64_t brows, nbands, nchunks;         /* output rows per band; tile ranges */
    int64_t nphh, nphw, Rq, Wq, plane;      /* the band: per input channel     */
    int slot_h[TC__DCONV_PHASES], slot_w[TC__DCONV_PHASES]; /* phase's place, -1: not read */
    int64_t kc;                             /* k per slice (weights in L1)     */
    int64_t data, floats, ldg;              /* band floats; with slack; grid row */
    const int64_t *koff;
    int failed;
} tc__dconv_job;

/* Input channel plane xc's rows [ih0, ih0 + rb) into the band layout at dst. */
TC__FN void tc__dconv_fill(const tc__dconv_job *j, const float *xc, int64_t ih0, int64_t rb, float *dst) {
    const tc__geom *g = &j->g;
    int64_t ph, q, pw;
    for (ph = 0; ph < g->sh; ph++)
        for (q = 0; q < j->Rq && j->slot_h[ph] >= 0; q++) {
            int64_t bi = q * g->sh + ph, ih = ih0 + bi;
            const float *xr = bi < rb && ih >= 0 && ih < g->H ? xc + ih * g->W : NULL;
            for (pw = 0; pw < g->sw; pw++)
                if (j->slot_w[pw] >= 0)
                    tc__fill_phase(xr, dst + ((j->slot_h[ph] * j->nphw + j->slot_w[pw]) * j->Rq + q) * j->Wq, g->W,
                                   g->pw, g->sw, pw, j->Wq, 0.0f);
        }
}

TC__FN void tc__dconv_tasks(void *arg, int64_t tb, int64_t te) {
    tc__dconv_job *j = (tc__dconv_job *)arg;
    const tc__geom *g = &j->g;
    const int64_t P = g->OH * g->OW;
    float *buf = (float *)tc__scratch_get(j->ctx, sizeof(float) * (size_t)(j->floats + (int64_t)j->mr * j->ldg));
    float *grid;
    int64_t t, q;
    if (!buf) {
        tc__flag_raise(&j->failed);
        return;
    }
    grid = buf + j->floats;
    for (q = j->data; q < j->floats; q++) buf[q] = 0.0f; /* read by the last tiles' dropped positions */
    for (t = tb; t < te; t++) {
        int64_t ch = t % j->nchunks, band = t / j->nchunks % j->nbands, gi = t / (j->nchunks * j->nbands) % j->groups;
        int64_t n = t / (j->nchunks * j->nbands * j->groups), r0 = band * j->brows;
        int64_t nrows = g->OH - r0 < j->brows ? g->OH - r0 : j->brows;
        int64_t ntiles = (nrows * j->Wq + j->nr - 1) / j->nr, ct, ci, k0;
        int64_t ct0 = j->ncot * ch / j->nchunks, ct1 = j->ncot * (ch + 1) / j->nchunks;
        if (nrows <= 0 || ct0 >= ct1) continue;
        for (ci = 0; ci < j->cg; ci++)
            tc__dconv_fill(j, j->x + ((n * g->C + gi * j->cg + ci) * g->H) * g->W, r0 * g->sh - g->ph,
                           (nrows - 1) * g->sh + (g->kh - 1) * g->dh + 1, buf + ci * j->plane);
        for (ct = ct0; ct < ct1; ct++) {
            int64_t co0 = gi * j->og + ct * j->mr;
            int mr = (int)(j->og - ct * j->mr < j->mr ? j->og - ct * j->mr : j->mr);
            const float *wp = j->wpk + (gi * j->ncot + ct) * j->K * j->mr;
            for (k0 = 0; k0 < j->K; k0 += j->kc) {
                int64_t kc = j->K - k0 < j->kc ? j->K - k0 : j->kc;
                for (q = 0; q < ntiles; q++)
                    j->ukr(kc, wp + k0 * j->mr, buf + q * j->nr, j->koff + k0, grid + q * j->nr, j->ldg, mr, k0 > 0);
            }
            j->out(grid, j->ldg, j->Wq, mr, nrows, g->OW, j->y + ((n * j->cout + co0) * g->OH + r0) * g->OW, P,
                   j->bias ? j->bias + co0 : NULL);
            if (j->epi) j->epi->fn(j->epi->arg, n * j->cout + co0, mr, r0 * g->OW, nrows * g->OW, P);
        }
    }
    tc__scratch_put(buf);
}

/* The weights [cout, cg, kh, kw] as tiles of mr output channels, each
 * [K][mr] with zeros past a group's last channel. */
TC__FN void tc__dconv_pack(const float *w, int64_t groups, int64_t og, int64_t K, int mr, int64_t ncot, float *dst) {
    int64_t gi, ct, i, k;
    for (gi = 0; gi < groups; gi++)
        for (ct = 0; ct < ncot; ct++) {
            /* k outer: mr read streams, one sequential write stream */
            float *d = dst + (gi * ncot + ct) * K * mr;
            const float *src = w + (gi * og + ct * mr) * K;
            int64_t rows = og - ct * mr < mr ? og - ct * mr : mr;
            for (k = 0; k < K; k++, d += mr) {
                for (i = 0; i < rows; i++) d[i] = src[i * K + k];
                for (; i < mr; i++) d[i] = 0.0f;
            }
        }
}

/* The tile whose padding wastes least (channels x positions of a band
 * of j->brows rows), and the channel tiles per group and k per slice. */
TC__FN void tc__dconv_tile(tc__dconv_job *j, const tc__gemm_impl *im) {
    int64_t grid = j->brows * j->Wq, ca = (j->og + im->mra - 1) / im->mra * im->mra;
    int64_t cb = (j->og + im->mrb - 1) / im->mrb * im->mrb;
    double ea = (double)j->og / (double)ca * (double)grid / (double)((grid + im->nra - 1) / im->nra * im->nra);
    double eb = (double)j->og / (double)cb * (double)grid / (double)((grid + im->nrb - 1) / im->nrb * im->nrb);
    j->ukr = eb > ea ? im->dconv_b : im->dconv_a;
    j->mr = eb > ea ? im->mrb : im->mra;
    j->nr = eb > ea ? im->nrb : im->nra;
    j->ncot = (j->og + j->mr - 1) / j->mr;
    j->kc = 4096 / j->mr; /* 16 KiB of weights */
}

#define TC__DCONV_BAND_BYTES (384 << 10) /* an input band and its tile's rows stay in L2 */

/* The direct convolution of x (geometry g) into y; the weights packed into
 * pre when given (freeze), else per call.  -1 on OOM. */
TC__FN int tc__dconv_run(tc__call *c, const tc__geom *g, int64_t groups, const float *x, const float *w, int w_stable,
                         const float *bias, float *y) {
    tc__dconv_job j;
    tc__gemm gm;
    tc__gemm_impl im;
    tc__gemm_prepack *pre = w_stable ? c->prepack : NULL;
    const tc__epilogue *epi = c->epi;
    int64_t K, Wp, rowb, tasks, k;
    int64_t *koff;
    float *wpk = NULL;
    int nth, rc = 0;
    int64_t target;
    memset(&j, 0, sizeof j);
    memset(&gm, 0, sizeof gm);
    gm.isa = (tc_isa)c->blk.isa;
    im = tc__gemm_impl_for(c->ctx, &gm);
    j.ctx = c->ctx;
    j.x = x;
    j.bias = bias;
    j.y = y;
    j.g = *g;
    j.epi = epi;
    j.groups = groups;
    j.cg = g->C / groups;
    j.cout = c->oshape[c->ondim - 3];
    j.og = j.cout / groups;
    j.K = K = j.cg * g->kh * g->kw;
    TC__CONV_DIRECT_RAN();
    if (g->N == 0 || j.cout == 0 || g->OH * g->OW == 0) return 0;
    /* the band: rows of Wq floats per column phase, Rq rows per row phase */
    Wp = (g->OW - 1) * g->sw + (g->kw - 1) * g->dw + 1;
    j.Wq = (Wp + g->sw - 1) / g->sw;
    /* the phases some tap reads (1 x 1 stride 2 reads one in four) */
    for (k = 0; k < TC__DCONV_PHASES; k++) j.slot_h[k] = j.slot_w[k] = -1;
    for (k = 0; k < g->kh; k++) j.slot_h[k * g->dh % g->sh] = 0;
    for (k = 0; k < g->kw; k++) j.slot_w[k * g->dw % g->sw] = 0;
    for (k = 0; k < g->sh; k++) j.slot_h[k] = j.slot_h[k] < 0 ? -1 : (int)j.nphh++;
    for (k = 0; k < g->sw; k++) j.slot_w[k] = j.slot_w[k] < 0 ? -1 : (int)j.nphw++;
    rowb = (int64_t)sizeof(float) * j.cg * j.nphh * j.nphw * j.Wq;
    j.brows = TC__DCONV_BAND_BYTES / (rowb > 0 ? rowb : 1);
    if (j.brows < 1) j.brows = 1;
    if (j.brows > g->OH) j.brows = g->OH;
    j.out = im.dconv_out;
    nth = tc__parallel_parts(c->ctx, INT64_MAX, g->N * j.cout * g->OH * g->OW * K);
    target = nth > 1 ? 2 * nth : 1;
    j.nbands = (g->OH + j.brows - 1) / j.brows;
    j.brows = (g->OH + j.nbands - 1) / j.nbands;
    tc__dconv_tile(&j, &im);
    /* enough tasks for the threads: ranges of channel tiles (refilling a
     * band is cheap), then thinner bands (whose last tile pads more) */
    tasks = g->N * groups * j.nbands;
    if (tasks * j.ncot < target) {
        while (j.brows > 1 && tasks * j.ncot < target) {
            j.brows = (j.brows + 1) / 2;
            tasks = g->N * groups * ((g->OH + j.brows - 1) / j.brows);
        }
        j.nbands = (g->OH + j.brows - 1) / j.brows;
        j.brows = (g->OH + j.nbands - 1) / j.nbands;
        tc__dconv_tile(&j, &im);
        tasks = g->N * groups * j.nbands;
    }
    j.nchunks = tasks < target ? (target + tasks - 1) / tasks : 1;
    if (j.nchunks > j.ncot) j.nchunks = j.ncot;
    j.Rq = ((j.brows - 1) * g->sh + (g->kh - 1) * g->dh + 1 + g->sh - 1) / g->sh;
    j.plane = j.nphh * j.nphw * j.Rq * j.Wq;
    koff = (int64_t *)tc__scratch_get(c->ctx, sizeof(int64_t) * (size_t)K);
    if (!koff) return -1;
    j.data = j.cg * j.plane;
    j.floats = 0;
    for (k = 0; k < K; k++) {
        int64_t ci = k / (g->kh * g->kw), a = k / g->kw % g->kh, b = k % g->kw;
        int64_t ra = a * g->dh, cb = b * g->dw;
        koff[k] = ci * j.plane + ((j.slot_h[ra % g->sh] * j.nphw + j.slot_w[cb % g->sw]) * j.Rq + ra / g->sh) * j.Wq +
                  cb / g->sw;
        if (koff[k] > j.floats) j.floats = koff[k];
    }
    /* the last tile of the thickest band reads up to a tile past its grid */
    j.floats += (j.brows * j.Wq + j.nr - 1) / j.nr * j.nr;
    if (j.floats < j.data) j.floats = j.data;
    j.floats = (j.floats + 15) / 16 * 16;
    j.ldg = (j.brows * j.Wq + j.nr - 1) / j.nr * j.nr + 16; /* + 16: rows not 4 KiB apart */
    j.koff = koff;
    /* weights: the launch's packing when it is for these weights and tile */
    {
        size_t need = (size_t)(groups * j.ncot * K * j.mr);
        if (pre && pre->valid && pre->src == w && pre->K == K && pre->N == j.cout && pre->nr == j.mr &&
            pre->kc == (int)groups) {
            wpk = pre->data;
        } else if (pre) {
            pre->valid = 0;
            if (pre->floats < need) {
                float *d = (float *)TC_REALLOC(pre->data, sizeof(float) * need);
                if (d) {
                    pre->data = d;
                    pre->floats = need;
                }
            }
            if (pre->floats >= need) {
                tc__dconv_pack(w, groups, j.og, K, j.mr, j.ncot, pre->data);
                pre->src = w;
                pre->K = K;
                pre->N = j.cout;
                pre->nr = j.mr;
                pre->kc = (int)groups;
                pre->valid = 1;
                wpk = pre->data;
            }
        } else if ((wpk = (float *)tc__scratch_get(c->ctx, sizeof(float) * need)) != NULL) {
            tc__dconv_pack(w, groups, j.og, K, j.mr, j.ncot, wpk);
        }
    }
    if (!wpk) rc = -1;
    else {
        j.wpk = wpk;
        tasks = g->N * groups * j.nbands * j.nchunks;
        tc__parallel_for(c->ctx, tasks, g->N * j.cout * g->OH * g->OW * K, tc__dconv_tasks, &j);
        rc = j.failed ? -1 : 0;
    }
    if (!pre || wpk != pre->data) tc__scratch_put(wpk);
    tc__scratch_put(koff);
    return rc;
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
    } else if (!c->blk.kc && !c->blk.mc_tiles && tc__dconv_takes(&g, cg)) {
        if (tc__dconv_run(c, &g, groups, xp, wp, wo == NULL, bp, op)) r = tc__msg(c, TC_ERR_OOM, "out of memory");
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
