/* test_ops_reduce.c: reductions and normalisations against references in
 * plain C: sum, mean, max, min, argmax, var (dtypes and NaN), softmax, layer
 * and RMS norm, pooling, batch norm, and TC_MAX_DIMS-dimensional operands.
 * Helpers, conventions, environment and how to build: ops_common.h. */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"
#include "tc_test.h"
#include "ops_common.h"

/* ------------------------------------------------------------------------ */
/* Reductions                                                                */
/* ------------------------------------------------------------------------ */

TC_TEST(test_reductions) {
    tc_ctx *ctx = mkctx(1);
    int op, iter, i;
    for (op = 0; op < R_COUNT_; op++) {
        for (iter = 0; iter < 80; iter++) {
            int nd, keep = rnd_int(0, 1), na = 0, axes[TC_MAX_DIMS], ond, layout = rnd_int(0, 3), style = rnd_int(0, 3);
            unsigned mask = 0;
            int64_t sh[TC_MAX_DIMS] = {0}, osh[TC_MAX_DIMS], n, on, rc;
            double *v, *e;
            tc_tensor *r;
            tc_dtype dt = iter % 5 == 4 ? TC_I32 : TC_F32;
            tc_dtype odt = op == R_ARGMAX ? TC_I32 : (op == R_SUM || op == R_MAX || op == R_MIN) ? dt : TC_F32;
            rnd_shape(&nd, sh, 4);
            n = numel_of(nd, sh);
            v = rnd_vals(TC_F32, n, -1, 1);
            if (iter % 2 || dt == TC_I32)
                for (i = 0; i < n; i++) v[i] = (double)rnd_int(-2, 2);
            if (style == 0 || nd == 0) { /* all axes via naxes 0 / NULL */
                mask = (1u << nd) - 1u;
                na = 0;
                if (nd == 0 && rnd_int(0, 1)) { axes[0] = rnd_int(-1, 0); na = 1; } /* 0-d: dim 0 / -1 */
            } else {
                for (i = 0; i < nd; i++)
                    if (rnd_int(0, 1)) mask |= 1u << i;
                if (style == 3 || mask == 0) mask = (1u << nd) - 1u; /* naxes 0 means all */
                for (i = 0; i < nd; i++)
                    if (mask & (1u << i)) axes[na++] = rnd_int(0, 1) ? i : i - nd;
                for (i = na - 1; i > 0; i--) { /* any order */
                    int j = rnd_int(0, i), t = axes[i];
                    axes[i] = axes[j];
                    axes[j] = t;
                }
            }
            on = ref_reduce(op, nd, sh, v, mask, keep, &ond, osh, &e, &rc);
            tc_scope_begin(ctx);
            {
                char b1[64];
                shape_str(b1, sizeof b1, nd, sh);
                snprintf(g_case, sizeof g_case, "%s %s %s mask 0x%x naxes %d keepdim %d layout %d", red_names[op], tc_dtype_name(dt), b1,
                         mask, na, keep, layout);
            }
            r = call_red(ctx, op, mk_layout(ctx, dt, nd, sh, v, layout),
                         na, (na == 0 && rnd_int(0, 1)) ? NULL : axes, keep);
            if ((op == R_MAX || op == R_MIN || op == R_ARGMAX) && rc == 0) {
                if (on > 0) TC_CHECKF(tc_status(r) != TC_OK, "%s: empty reduction must be an error", g_case);
            } else {
                check_t(r, odt, ond, osh, e, 1e-5 * (1.0 + sqrt((double)rc)), 1e-4);
            }
            tc_scope_end(ctx);
            free(v);
            free(e);
        }
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_reduction_dtypes_and_nan) {
    tc_ctx *ctx = mkctx(1);
    int64_t sh[2] = {3, 4}, s3 = 3, s4 = 4;
    int ax1 = 1, ax0 = 0;
    double vi[12] = {1, -2, 3, 4, 5, 6, -7, 8, 9, 10, 11, -12}, vb[12] = {1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1};
    double e[4];
    strcpy(g_case, "sum i32 -> i32");
    e[0] = 6; e[1] = 12; e[2] = 18;
    check_t(tc_sum(ctx, mk_layout(ctx, TC_I32, 2, sh, vi, 1), 1, &ax1, 0), TC_I32, 1, &s3, e, 0, 0);
    strcpy(g_case, "sum bool -> i32");
    e[0] = 3; e[1] = 0; e[2] = 4;
    check_t(tc_sum(ctx, mk(ctx, TC_BOOL, 2, sh, vb), 1, &ax1, 0), TC_I32, 1, &s3, e, 0, 0);
    strcpy(g_case, "max/min i32 keep i32");
    e[0] = 9; e[1] = 10; e[2] = 11; e[3] = 8;
    check_t(tc_max(ctx, mk(ctx, TC_I32, 2, sh, vi), 1, &ax0, 0), TC_I32, 1, &s4, e, 0, 0);
    e[0] = 1; e[1] = -2; e[2] = -7; e[3] = -12;
    check_t(tc_min(ctx, mk(ctx, TC_I32, 2, sh, vi), 1, &ax0, 0), TC_I32, 1, &s4, e, 0, 0);
    strcpy(g_case, "mean i32 -> f32");
    e[0] = 1.5; e[1] = 3; e[2] = 4.5;
    check_t(tc_mean(ctx, mk(ctx, TC_I32, 2, sh, vi), 1, &ax1, 0), TC_F32, 1, &s3, e, 1e-6, 1e-6);
    strcpy(g_case, "argmax i32 (ties: first)");
    {
        double vt[12] = {1, 5, 5, 2, 0, 0, 0, 0, -1, 3, 3, -1};
        e[0] = 1; e[1] = 0; e[2] = 1;
        check_t(tc_argmax(ctx, mk(ctx, TC_I32, 2, sh, vt), 1, &ax1, 0), TC_I32, 1, &s3, e, 0, 0);
        e[0] = 1;
        check_t(tc_argmax(ctx, mk(ctx, TC_I32, 2, sh, vt), 0, NULL, 0), TC_I32, 0, NULL, e, 0, 0);
    }
    strcpy(g_case, "sum/max f16 keep f16");
    {
        double vh[12];
        int i;
        for (i = 0; i < 12; i++) vh[i] = quant(TC_F16, vi[i] * 0.3);
        e[0] = quant(TC_F16, vh[0] + vh[1] + vh[2] + vh[3]);
        e[1] = quant(TC_F16, vh[4] + vh[5] + vh[6] + vh[7]);
        e[2] = quant(TC_F16, vh[8] + vh[9] + vh[10] + vh[11]);
        check_t(tc_sum(ctx, mk(ctx, TC_F16, 2, sh, vh), 1, &ax1, 0), TC_F16, 1, &s3, e, 1e-3, 2e-3);
        e[0] = vh[3]; e[1] = vh[7]; e[2] = vh[10];
        check_t(tc_max(ctx, mk(ctx, TC_F16, 2, sh, vh), 1, &ax1, 0), TC_F16, 1, &s3, e, 0, 0);
    }
    strcpy(g_case, "NaN propagation: sum/mean/max/min/argmax/var");
    {
        double vn[12] = {1, NAN, 3, 4, 5, 6, 7, 8, 9, 10, NAN, NAN};
        double en[3] = {NAN, 26, NAN}, em[3] = {NAN, 6.5, NAN}, ea[3] = {1, 3, 2}, emax[3] = {NAN, 8, NAN}, emin[3] = {NAN, 5, NAN};
        check_t(tc_sum(ctx, mk(ctx, TC_F32, 2, sh, vn), 1, &ax1, 0), TC_F32, 1, &s3, en, 1e-6, 1e-6);
        check_t(tc_mean(ctx, mk(ctx, TC_F32, 2, sh, vn), 1, &ax1, 0), TC_F32, 1, &s3, em, 1e-6, 1e-6);
        check_t(tc_max(ctx, mk(ctx, TC_F32, 2, sh, vn), 1, &ax1, 0), TC_F32, 1, &s3, emax, 0, 0);
        check_t(tc_min(ctx, mk(ctx, TC_F32, 2, sh, vn), 1, &ax1, 0), TC_F32, 1, &s3, emin, 0, 0);
        ea[1] = 3; /* row 1 max is the last */
        ea[0] = 1; /* NaN wins */
        ea[2] = 2; /* first NaN */
        check_t(tc_argmax(ctx, mk(ctx, TC_F32, 2, sh, vn), 1, &ax1, 0), TC_I32, 1, &s3, ea, 0, 0);
        en[1] = 5.0 / 3.0;
        check_t(tc_var(ctx, mk(ctx, TC_F32, 2, sh, vn), 1, &ax1, 1, 0), TC_F32, 1, &s3, en, 1e-6, 1e-5);
    }
    strcpy(g_case, "empty reductions: sum 0, mean NaN, var NaN");
    {
        int64_t s30[2] = {3, 0};
        double z[3] = {0, 0, 0}, nn[3] = {NAN, NAN, NAN};
        tc_tensor *x = tc_zeros(ctx, TC_F32, 2, s30);
        check_t(tc_sum(ctx, x, 1, &ax1, 0), TC_F32, 1, &s3, z, 0, 0);
        check_t(tc_mean(ctx, x, 1, &ax1, 0), TC_F32, 1, &s3, nn, 0, 0);
        check_t(tc_var(ctx, x, 1, &ax1, 0, 0), TC_F32, 1, &s3, nn, 0, 0);
        check_t(tc_sum(ctx, x, 0, NULL, 0), TC_F32, 0, NULL, z, 0, 0);
        check_t(tc_sum(ctx, tc_zeros(ctx, TC_I32, 2, s30), 0, NULL, 0), TC_I32, 0, NULL, z, 0, 0);
        TC_CHECK(tc_status(tc_max(ctx, x, 1, &ax1, 0)) != TC_OK);
        TC_CHECK(tc_status(tc_min(ctx, x, 0, NULL, 0)) != TC_OK);
        TC_CHECK(tc_status(tc_argmax(ctx, x, 0, NULL, 1)) != TC_OK);
        tc_ctx_clear_error(ctx);
    }
    strcpy(g_case, "var of one element: c=1 NaN, c=0 zero");
    {
        double one = 2.5, nn = NAN, zero = 0;
        int64_t s1 = 1;
        check_t(tc_var(ctx, mk(ctx, TC_F32, 1, &s1, &one), 0, NULL, 1, 0), TC_F32, 0, NULL, &nn, 0, 0);
        check_t(tc_var(ctx, mk(ctx, TC_F32, 1, &s1, &one), 0, NULL, 0, 0), TC_F32, 0, NULL, &zero, 0, 0);
    }
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Softmax and norms                                                         */
/* ------------------------------------------------------------------------ */

TC_TEST(test_softmax) {
    tc_ctx *ctx = mkctx(1);
    int iter, lg;
    int64_t i;
    for (iter = 0; iter < 160; iter++) {
        int nd, dim, arg, layout = rnd_int(0, 4);
        int64_t sh[TC_MAX_DIMS] = {0}, n;
        double *v, *e;
        tc_tensor *x;
        rnd_shape(&nd, sh, 4);
        dim = nd ? rnd_int(0, nd - 1) : 0;
        arg = rnd_int(0, 1) ? dim : dim - (nd ? nd : 1);
        n = numel_of(nd, sh);
        v = rnd_vals(TC_F32, n, -8, 8);
        if (iter % 3 == 0)
            for (i = 0; i < n; i++)
                if (rnd_int(0, 5) == 0) v[i] = -INFINITY;
        if (iter % 7 == 0)
            for (i = 0; i < n; i++) v[i] = quant(TC_F32, v[i] + 1000.0); /* stability */
        e = dalloc(n);
        for (lg = 0; lg < 2; lg++) {
            tc_scope_begin(ctx);
            x = mk_any(ctx, TC_F32, nd, sh, v, layout);
            ref_softmax(nd, sh, dim, v, e, lg);
            snprintf(g_case, sizeof g_case, "%s nd %d dim %d layout %d iter %d", lg ? "log_softmax" : "softmax", nd, arg, layout, iter);
            check_t((lg ? tc_log_softmax_at : tc_softmax_at)(ctx, x, arg, TC_HERE_),
                    /* inputs near 1000 carry f32 ulps of 6e-5: x - logsumexp may lose that much */
                    TC_F32, nd, sh, e, (lg && iter % 7 == 0) ? 1.5e-4 : 1e-5, 1e-4);
            tc_scope_end(ctx);
        }
        free(v);
        free(e);
    }
    {   /* log_softmax of rows with a large mean keeps (x - max)'s precision
         * (issue 35, defect 9: x - (max + log(sum)) gave -3.125 for
         * -3.113278 on 1e6 + 0.25 i, and 0 for -log(8) on a row of 1e30) */
        int64_t sh[2] = {2, 8};
        double v[16], e[16];
        for (i = 0; i < 8; i++) {
            v[i] = 1e6 + 0.25 * (double)i;
            v[8 + i] = quant(TC_F32, 1e30);
        }
        ref_softmax(2, sh, 1, v, e, 1);
        strcpy(g_case, "log_softmax of large rows");
        check_t(tc_log_softmax(ctx, mk(ctx, TC_F32, 2, sh, v), -1), TC_F32, 2, sh, e, 1e-5, 1e-5);
    }
    {   /* f16 in -> f16 out */
        int64_t sh[2] = {3, 5};
        double *v = rnd_vals(TC_F16, 15, -3, 3), e[15];
        ref_softmax(2, sh, 1, v, e, 0);
        for (i = 0; i < 15; i++) e[i] = quant(TC_F16, e[i]);
        strcpy(g_case, "softmax f16");
        check_t(tc_softmax(ctx, mk(ctx, TC_F16, 2, sh, v), -1), TC_F16, 2, sh, e, 1e-3, 2e-3);
        free(v);
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_layer_rms_norm) {
    tc_ctx *ctx = mkctx(1);
    int iter;
    for (iter = 0; iter < 160; iter++) {
        int nd, nnorm, hasw = rnd_int(0, 1), hasb = rnd_int(0, 1), rms = iter % 2, layout = rnd_int(0, 4);
        int64_t sh[TC_MAX_DIMS] = {0}, n, m;
        double *v, *w, *b, *e, eps = rnd_int(0, 3) == 0 ? 0.5 : rms ? (double)FLT_EPSILON : 1e-5;
        tc_tensor *tw, *tb, *r, *x;
        rnd_shape(&nd, sh, 4);
        if (nd == 0) { nd = 1; sh[0] = 6; }
        nnorm = rnd_int(1, nd);
        n = numel_of(nd, sh);
        m = numel_of(nnorm, sh + nd - nnorm);
        v = rnd_vals(TC_F32, n, -3, 3);
        w = rnd_vals(TC_F32, m, -2, 2);
        b = rnd_vals(TC_F32, m, -1, 1);
        e = dalloc(n);
        tc_scope_begin(ctx);
        x = mk_any(ctx, TC_F32, nd, sh, v, layout);
        ref_norm(nd, sh, nnorm, v, hasw ? w : NULL, (hasb && !rms) ? b : NULL, eps, rms, e);
        tw = hasw ? mk_layout(ctx, TC_F32, nnorm, sh + nd - nnorm, w, rnd_int(0, 3)) : NULL;
        tb = hasb ? mk_layout(ctx, TC_F32, nnorm, sh + nd - nnorm, b, rnd_int(0, 3)) : NULL;
        {
            char b1[64];
            shape_str(b1, sizeof b1, nd, sh);
            snprintf(g_case, sizeof g_case, "%s %s nnorm %d weight %d bias %d eps %g layout %d", rms ? "rms_norm" : "layer_norm", b1,
                     nnorm, hasw, rms ? 0 : hasb, eps, layout);
        }
        if (rms) r = tc_rms_norm(ctx, x, nnorm, tw, eps);
        else r = tc_layer_norm(ctx, x, nnorm, tw, tb, eps);
        /* an expanded input can make whole rows constant: then x - mean is
         * f32 rounding noise (|x| * 2^-23) amplified by 1/sqrt(eps) */
        check_t(r, TC_F32, nd, sh, e, 1e-4 + (layout == 4 && !rms ? 3.0 * 2.0 * 2.4e-7 / sqrt(eps) : 0.0), 1e-4);
        tc_scope_end(ctx);
        free(v);
        free(w);
        free(b);
        free(e);
    }
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Pooling, batch norm                                                       */
/* ------------------------------------------------------------------------ */

static int64_t pool_out(int64_t in, int k, int s, int p, int d, int ceil_mode) {
    int64_t num = in + 2 * p - (int64_t)d * (k - 1) - 1, o;
    if (num < 0) return 0;
    o = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
    if (ceil_mode && (o - 1) * s >= in + p) o--;
    return o;
}

TC_TEST(test_pool2d) {
    tc_ctx *ctx = mkctx(1);
    int iter, done = 0;
    for (iter = 0; iter < 1500 && done < 300; iter++) {
        int isavg = iter % 2, k[2], s[2], p[2], d[2], i, ceil_mode = rnd_int(0, 1), excl = rnd_int(0, 1), chw;
        int64_t N = rnd_int(1, 2), C = rnd_int(1, 3), H = rnd_int(1, 9), W = rnd_int(1, 9), OH, OW, n, c, oh, ow, sx[4], so[4];
        double *vx, *e;
        tc_pool2d_opts o;
        memset(&o, 0, sizeof o);
        for (i = 0; i < 2; i++) {
            k[i] = rnd_int(1, iter % 5 == 4 ? 6 : 4);
            s[i] = rnd_int(0, 3); /* 0 = kernel */
            p[i] = rnd_int(0, k[i] / 2);
            d[i] = isavg ? 1 : rnd_int(1, 3);
            o.kernel[i] = k[i];
            o.stride[i] = s[i];
            o.padding[i] = p[i];
            o.dilation[i] = isavg ? 0 : (d[i] == 1 && rnd_int(0, 1)) ? 0 : d[i];
            if (s[i] == 0) s[i] = k[i];
        }
        o.ceil_mode = ceil_mode;
        o.exclude_pad = isavg ? excl : 0;
        OH = pool_out(H, k[0], s[0], p[0], d[0], ceil_mode);
        OW = pool_out(W, k[1], s[1], p[1], d[1], ceil_mode);
        if (OH <= 0 || OW <= 0) continue;
        done++;
        chw = N == 1 && rnd_int(0, 1);
        sx[0] = N; sx[1] = C; sx[2] = H; sx[3] = W;
        so[0] = N; so[1] = C; so[2] = OH; so[3] = OW;
        vx = rnd_vals(TC_F32, N * C * H * W, -4, 4);
        e = dalloc(N * C * OH * OW);
        for (n = 0; n < N; n++)
            for (c = 0; c < C; c++)
                for (oh = 0; oh < OH; oh++)
                    for (ow = 0; ow < OW; ow++) {
                        const double *xp = vx + (n * C + c) * H * W;
                        double r;
                        int64_t hs = oh * s[0] - p[0], ws = ow * s[1] - p[1];
                        if (!isavg) {
                            int a, b;
                            r = -INFINITY;
                            for (a = 0; a < k[0]; a++)
                                for (b = 0; b < k[1]; b++) {
                                    int64_t ih = hs + (int64_t)a * d[0], iw = ws + (int64_t)b * d[1];
                                    if (ih >= 0 && ih < H && iw >= 0 && iw < W && xp[ih * W + iw] > r) r = xp[ih * W + iw];
                                }
                        } else {
                            int64_t he = hs + k[0] < H + p[0] ? hs + k[0] : H + p[0];
                            int64_t we = ws + k[1] < W + p[1] ? ws + k[1] : W + p[1];
                            int64_t pool = (he - hs) * (we - ws), ih, iw;
                            double sum = 0;
                            if (hs < 0) hs = 0;
                            if (ws < 0) ws = 0;
                            if (he > H) he = H;
                            if (we > W) we = W;
                            for (ih = hs; ih < he; ih++)
                                for (iw = ws; iw < we; iw++) sum += xp[ih * W + iw];
                            r = sum / (double)(excl ? (he - hs) * (we - ws) : pool);
                        }
                        e[((n * C + c) * OH + oh) * OW + ow] = r;
                    }
        tc_scope_begin(ctx);
        snprintf(g_case, sizeof g_case, "%s x[%lld,%lld,%lld,%lld] k %d,%d stride %d,%d pad %d,%d dil %d,%d ceil %d excl %d chw %d",
                 isavg ? "avg_pool2d" : "max_pool2d", (long long)N, (long long)C, (long long)H, (long long)W, k[0], k[1], o.stride[0],
                 o.stride[1], p[0], p[1], d[0], d[1], ceil_mode, o.exclude_pad, chw);
        {
            tc_tensor *x = mk_layout(ctx, TC_F32, chw ? 3 : 4, chw ? sx + 1 : sx, vx, rnd_int(0, 3));
            check_t(isavg ? tc_avg_pool2d(ctx, x, &o) : tc_max_pool2d(ctx, x, &o), TC_F32, chw ? 3 : 4, chw ? so + 1 : so, e, 1e-5,
                    1e-5);
        }
        tc_scope_end(ctx);
        free(vx);
        free(e);
    }
    TC_CHECK(done >= 300);
    {   /* NaN propagates through max_pool2d (PyTorch), -inf padding never wins */
        int64_t sx[4] = {1, 1, 2, 4}, so[4] = {1, 1, 1, 2};
        double v[8] = {1, 2, 3, 4, NAN, 0, -5, -6}, e[2] = {NAN, 4};
        tc_pool2d_opts o;
        memset(&o, 0, sizeof o);
        o.kernel[0] = o.kernel[1] = 2;
        strcpy(g_case, "max_pool2d with NaN");
        check_t(tc_max_pool2d(ctx, mk(ctx, TC_F32, 4, sx, v), &o), TC_F32, 4, so, e, 0, 0);
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_adaptive_avg_pool2d) {
    tc_ctx *ctx = mkctx(1);
    int iter;
    for (iter = 0; iter < 40; iter++) {
        int64_t N = rnd_int(1, 2), C = rnd_int(1, 3), H = rnd_int(1, 9), W = rnd_int(1, 9);
        int64_t OH = rnd_int(1, (int)H + 2), OW = rnd_int(1, (int)W + 2), n, c, oh, ow, sx[4], so[4];
        int chw = N == 1 && rnd_int(0, 1), global = iter % 8 == 0;
        double *vx, *e;
        if (global) OH = OW = 1;
        sx[0] = N; sx[1] = C; sx[2] = H; sx[3] = W;
        so[0] = N; so[1] = C; so[2] = OH; so[3] = OW;
        vx = rnd_vals(TC_F32, N * C * H * W, -4, 4);
        e = dalloc(N * C * OH * OW);
        for (n = 0; n < N; n++)
            for (c = 0; c < C; c++)
                for (oh = 0; oh < OH; oh++)
                    for (ow = 0; ow < OW; ow++) {
                        int64_t h0 = (oh * H) / OH, h1 = ((oh + 1) * H + OH - 1) / OH;
                        int64_t w0 = (ow * W) / OW, w1 = ((ow + 1) * W + OW - 1) / OW, ih, iw;
                        double s = 0;
                        for (ih = h0; ih < h1; ih++)
                            for (iw = w0; iw < w1; iw++) s += vx[((n * C + c) * H + ih) * W + iw];
                        e[((n * C + c) * OH + oh) * OW + ow] = s / (double)((h1 - h0) * (w1 - w0));
                    }
        tc_scope_begin(ctx);
        snprintf(g_case, sizeof g_case, "adaptive_avg_pool2d [%lld,%lld,%lld,%lld] -> %lld x %lld chw %d", (long long)N, (long long)C,
                 (long long)H, (long long)W, (long long)OH, (long long)OW, chw);
        {
            tc_tensor *x = mk_layout(ctx, TC_F32, chw ? 3 : 4, chw ? sx + 1 : sx, vx, rnd_int(0, 3));
            check_t(global ? tc_global_avg_pool2d(ctx, x) : tc_adaptive_avg_pool2d(ctx, x, OH, OW), TC_F32, chw ? 3 : 4,
                    chw ? so + 1 : so, e, 1e-5, 1e-5);
        }
        tc_scope_end(ctx);
        free(vx);
        free(e);
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_batch_norm) {
    tc_ctx *ctx = mkctx(1);
    int iter;
    for (iter = 0; iter < 30; iter++) {
        int nd = rnd_int(2, 4), hasw = rnd_int(0, 1), hasb = rnd_int(0, 1), i;
        int64_t sh[4], C, inner = 1, n, f;
        double *vx, *vm, *vv, *vw, *vb, *e, eps = iter % 3 ? 1e-5 : 0.1;
        for (i = 0; i < nd; i++) sh[i] = rnd_int(1, 4);
        if (iter % 9 == 0) sh[0] = 0;
        C = sh[1];
        for (i = 2; i < nd; i++) inner *= sh[i];
        n = numel_of(nd, sh);
        vx = rnd_vals(TC_F32, n, -3, 3);
        vm = rnd_vals(TC_F32, C, -1, 1);
        vv = rnd_vals(TC_F32, C, 0.1, 2);
        vw = rnd_vals(TC_F32, C, -2, 2);
        vb = rnd_vals(TC_F32, C, -1, 1);
        e = dalloc(n);
        for (f = 0; f < n; f++) {
            int64_t c = (f / inner) % C;
            double y = (vx[f] - vm[c]) / sqrt(vv[c] + eps);
            if (hasw) y *= vw[c];
            if (hasb) y += vb[c];
            e[f] = y;
        }
        tc_scope_begin(ctx);
        snprintf(g_case, sizeof g_case, "batch_norm nd %d C %lld weight %d bias %d eps %g", nd, (long long)C, hasw, hasb, eps);
        check_t(tc_batch_norm(ctx, mk_layout(ctx, TC_F32, nd, sh, vx, rnd_int(0, 3)), mk(ctx, TC_F32, 1, &C, vm),
                              mk(ctx, TC_F32, 1, &C, vv), hasw ? mk(ctx, TC_F32, 1, &C, vw) : NULL,
                              hasb ? mk_layout(ctx, TC_F32, 1, &C, vb, 2) : NULL, eps),
                TC_F32, nd, sh, e, 1e-5, 1e-4);
        tc_scope_end(ctx);
        free(vx); free(vm); free(vv); free(vw); free(vb); free(e);
    }
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Many dimensions                                                           */
/* ------------------------------------------------------------------------ */

/* TC_MAX_DIMS-dimensional operands */
TC_TEST(test_max_dims) {
    tc_ctx *ctx = mkctx(1);
    int64_t sa[8] = {2, 1, 2, 1, 2, 1, 2, 3}, sb[7] = {1, 2, 1, 2, 1, 1, 3}, so[8], n, f, rc;
    int ond, i, op, iter;
    double *va, *vb, *e;
    tc_scope_begin(ctx);
    va = rnd_vals(TC_F32, numel_of(8, sa), -2, 2);
    vb = rnd_vals(TC_F32, numel_of(7, sb), -2, 2);
    bcast_shape(8, sa, 7, sb, &ond, so);
    n = numel_of(ond, so);
    e = dalloc(n);
    for (f = 0; f < n; f++) e[f] = (double)(float)(va[bcast_idx(8, so, f, 8, sa)] * vb[bcast_idx(8, so, f, 7, sb)]);
    strcpy(g_case, "mul 8-d x 7-d broadcast");
    check_t(tc_mul(ctx, mk_layout(ctx, TC_F32, 8, sa, va, 3), mk_layout(ctx, TC_F32, 7, sb, vb, 1)), TC_F32, 8, so, e, 1e-6, 1e-6);
    free(e);
    for (iter = 0; iter < 12; iter++) {
        unsigned mask = (unsigned)rnd_int(1, 255);
        int axes[8], na = 0, keep = rnd_int(0, 1);
        int64_t osh[8];
        op = iter % R_COUNT_;
        for (i = 0; i < 8; i++)
            if (mask & (1u << i)) axes[na++] = i - 8 * rnd_int(0, 1);
        ref_reduce(op, 8, sa, va, mask, keep, &ond, osh, &e, &rc);
        snprintf(g_case, sizeof g_case, "%s of an 8-d tensor mask 0x%x keepdim %d", red_names[op], mask, keep);
        check_t(call_red(ctx, op, mk_layout(ctx, TC_F32, 8, sa, va, rnd_int(0, 3)), na, axes, keep), op == R_ARGMAX ? TC_I32 : TC_F32, ond,
                osh, e, 1e-5, 1e-4);
        free(e);
    }
    {
        int perm[8] = {7, 0, 6, 1, 5, 2, 4, 3};
        int64_t psh[8];
        e = dalloc(numel_of(8, sa));
        ref_permute(8, sa, perm, va, e);
        for (i = 0; i < 8; i++) psh[i] = sa[perm[i]];
        strcpy(g_case, "permute 8-d");
        check_t(tc_permute(ctx, mk_layout(ctx, TC_F32, 8, sa, va, 2), perm), TC_F32, 8, psh, e, 0, 0);
        ref_softmax(8, sa, 6, va, e, 0);
        strcpy(g_case, "softmax dim 6 of 8-d");
        check_t(tc_softmax(ctx, mk_layout(ctx, TC_F32, 8, sa, va, 1), -2), TC_F32, 8, sa, e, 1e-6, 1e-5);
        free(e);
    }
    {
        int64_t ma[8] = {2, 1, 2, 1, 2, 1, 3, 4}, mb[8] = {1, 2, 1, 2, 1, 2, 4, 5}, m2[2] = {4, 5};
        run_matmul_case(ctx, TC_F32, 8, ma, 2, m2, 1, 0);
        run_matmul_case(ctx, TC_F32, 8, ma, 8, mb, 3, 4);
    }
    {
        int64_t one8[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        double v1 = 4.5;
        strcpy(g_case, "squeeze_all / sum of [1]*8");
        check_t(tc_squeeze_all(ctx, mk(ctx, TC_F32, 8, one8, &v1)), TC_F32, 0, NULL, &v1, 0, 0);
        check_t(tc_sum(ctx, mk(ctx, TC_F32, 8, one8, &v1), 0, NULL, 1), TC_F32, 8, one8, &v1, 0, 0);
    }
    tc_scope_end(ctx);
    free(va);
    free(vb);
    tc_ctx_destroy(ctx);
}

int main(void) {
    ops_setup();
    TC_RUN(test_reductions);
    TC_RUN(test_reduction_dtypes_and_nan);
    TC_RUN(test_softmax);
    TC_RUN(test_layer_rms_norm);
    TC_RUN(test_pool2d);
    TC_RUN(test_adaptive_avg_pool2d);
    TC_RUN(test_batch_norm);
    TC_RUN(test_max_dims);
    return TC_TEST_SUMMARY();
}
