/* test_ops_pointwise.c: pointwise ops against references in plain C: unary
 * (f32, special values, dtypes), softplus and clamp, cast, binary with
 * broadcasting, type promotion, where, and lengths around SIMD widths and
 * GEMM register tiles.  Helpers, conventions, environment and how to build:
 * ops_common.h. */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"
#include "tc_test.h"
#include "ops_common.h"
#include "ref_pointwise.h"

/* ------------------------------------------------------------------------ */
/* Pointwise unary                                                           */
/* ------------------------------------------------------------------------ */

/* unops[]: every op of TC__UNARY_API, with its reference (ref_pointwise.h) */

TC_TEST(test_unary_f32) {
    tc_ctx *ctx = mkctx(1);
    int o, iter;
    int64_t i;
    for (o = 0; o < N_UNOPS; o++) {
        for (iter = 0; iter < 30; iter++) {
            int nd, layout = rnd_int(0, 4);
            int64_t sh[TC_MAX_DIMS] = {0}, n;
            double *v, *e;
            tc_tensor *x;
            rnd_shape(&nd, sh, 4);
            n = numel_of(nd, sh);
            v = rnd_vals(TC_F32, n, unops[o].lo, unops[o].hi);
            if (unops[o].ref == r_reciprocal)
                for (i = 0; i < n; i++) v[i] = (i % 2) ? -v[i] : v[i];
            tc_scope_begin(ctx);
            x = mk_any(ctx, TC_F32, nd, sh, v, layout);
            e = dalloc(n);
            for (i = 0; i < n; i++) e[i] = (double)(float)unops[o].ref(v[i]);
            snprintf(g_case, sizeof g_case, "%s f32 nd %d layout %d iter %d", unops[o].name, nd, layout, iter);
            check_t(unops[o].fn(ctx, x, TC_HERE_), TC_F32, nd, sh, e, 1e-5, 1e-4);
            tc_scope_end(ctx);
            free(v);
            free(e);
        }
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_unary_special_values) {
    static const double sv[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, 0.5, -2.5, 1e-30, 88.0, 100.0, -100.0};
    int64_t n = (int64_t)(sizeof sv / sizeof sv[0]), i;
    tc_ctx *ctx = mkctx(1);
    int o;
    double v[16], e[16];
    for (o = 0; o < N_UNOPS; o++) {
        for (i = 0; i < n; i++) {
            v[i] = sv[i];
            if (!unops[o].special_inf && is_inf(v[i])) v[i] = 3.0;
            e[i] = (double)(float)unops[o].ref(v[i]);
        }
        snprintf(g_case, sizeof g_case, "%s on 0, -0, +-1, +-inf, NaN, 1e-30, +-100", unops[o].name);
        check_t(unops[o].fn(ctx, mk(ctx, TC_F32, 1, &n, v), TC_HERE_), TC_F32, 1, &n, e, 1e-5, 1e-4);
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_unary_dtypes) {
    tc_ctx *ctx = mkctx(1);
    int o, k;
    int64_t sh[2] = {3, 7}, n = 21, i;
    for (o = 0; o < N_UNOPS; o++) {
        for (k = 0; k < 4; k++) {
            tc_dtype in = k == 0 ? TC_I32 : k == 1 ? TC_F16 : k == 2 ? TC_BF16 : TC_BOOL;
            tc_dtype out;
            double *v, *e;
            if (in == TC_BOOL && unops[o].keeps_int) continue; /* neg/abs/... of bool: not specified */
            e = dalloc(n);
            v = rnd_vals(in, n, unops[o].lo < -5 ? -5 : unops[o].lo, unops[o].hi > 5 ? 5 : unops[o].hi);
            out = (in == TC_I32 && unops[o].keeps_int) ? TC_I32 : (in == TC_I32 || in == TC_BOOL) ? TC_F32 : in;
            for (i = 0; i < n; i++) e[i] = quant(out, unops[o].ref(v[i]));
            tc_scope_begin(ctx);
            snprintf(g_case, sizeof g_case, "%s on %s", unops[o].name, tc_dtype_name(in));
            check_t(unops[o].fn(ctx, mk_layout(ctx, in, 2, sh, v, k), TC_HERE_), out, 2, sh, e,
                    tol_a(out), tol_r(out));
            tc_scope_end(ctx);
            free(v);
            free(e);
        }
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_softplus_clamp) {
    tc_ctx *ctx = mkctx(1);
    static const double betas[3] = {1, 2, 0.5}, thrs[3] = {20, 5, 1};
    int c, iter;
    int64_t i;
    for (c = 0; c < 3; c++) {
        for (iter = 0; iter < 6; iter++) {
            int nd, layout = rnd_int(0, 3);
            int64_t sh[TC_MAX_DIMS] = {0}, n;
            double *v, *e;
            rnd_shape(&nd, sh, 3);
            n = numel_of(nd, sh);
            v = rnd_vals(TC_F32, n, -30, 30);
            e = dalloc(n);
            for (i = 0; i < n; i++) {
                double bx = betas[c] * v[i];
                e[i] = bx > thrs[c] ? v[i] : log1p(exp(bx)) / betas[c];
            }
            tc_scope_begin(ctx);
            snprintf(g_case, sizeof g_case, "softplus beta %g threshold %g", betas[c], thrs[c]);
            check_t(tc_softplus(ctx, mk_layout(ctx, TC_F32, nd, sh, v, layout), betas[c], thrs[c]), TC_F32,
                    nd, sh, e, 1e-5, 1e-4);
            tc_scope_end(ctx);
            free(v);
            free(e);
        }
    }
    {   /* threshold boundary: beta*x == threshold is not linear yet (PyTorch: linear when beta*x > threshold) */
        int64_t s3 = 3;
        double v[3] = {1.0, 1.5, 0.5}, e[3];
        e[0] = log1p(exp(1.0));
        e[1] = 1.5;
        e[2] = log1p(exp(0.5));
        strcpy(g_case, "softplus beta 1 threshold 1 at the threshold");
        check_t(tc_softplus(ctx, mk(ctx, TC_F32, 1, &s3, v), 1.0, 1.0), TC_F32, 1, &s3, e, 1e-5, 1e-4);
        e[0] = log1p(exp(2.0)) / 2.0;
        e[1] = 1.5;
        e[2] = log1p(exp(1.0)) / 2.0;
        strcpy(g_case, "softplus beta 2 threshold 2 at the threshold");
        check_t(tc_softplus(ctx, mk(ctx, TC_F32, 1, &s3, v), 2.0, 2.0), TC_F32, 1, &s3, e, 1e-5, 1e-4);
    }
    {
        static const double los[5] = {-1.0, -INFINITY, -2.0, 0.0, 2.0};
        static const double his[5] = {1.0, 0.5, INFINITY, 0.0, -2.0}; /* lo > hi gives hi */
        int64_t n = 9;
        double v[9] = {-3, -1.5, -0.5, 0, 0.25, 0.75, 2.5, INFINITY, NAN}, e[9];
        for (c = 0; c < 5; c++) {
            for (i = 0; i < n; i++) e[i] = is_nan(v[i]) ? v[i] : fmin(fmax(v[i], los[c]), his[c]);
            snprintf(g_case, sizeof g_case, "clamp(%g, %g)", los[c], his[c]);
            check_t(tc_clamp(ctx, mk_layout(ctx, TC_F32, 1, &n, v, 2), los[c], his[c]), TC_F32, 1, &n, e, 0, 0);
        }
        for (i = 0; i < n; i++) v[i] = quant(TC_F16, v[i]);
        for (i = 0; i < n; i++) e[i] = is_nan(v[i]) ? v[i] : fmin(fmax(v[i], -1.0), 1.0);
        strcpy(g_case, "clamp f16");
        check_t(tc_clamp(ctx, mk(ctx, TC_F16, 1, &n, v), -1, 1), TC_F16, 1, &n, e, 0, 0);
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_cast) {
    static const double fv[] = {0.0, -0.0, 2.7, -2.7, 0.5, -0.5, 1e10, -1e10, NAN, INFINITY, -INFINITY,
                                2147483520.0, 2147483648.0, -2147483648.0, 65504.0, 70000.0, 1.00048828125,
                                3.0, -7.0, 1e-30};
    static const double iv[] = {0, 1, -1, 2049, 16777217, 70000, -2147483647.0 - 1.0, 2147483647.0, 123456789, -5};
    tc_ctx *ctx = mkctx(1);
    int a, b;
    int64_t i;
    for (a = 0; a < 5; a++) {
        for (b = 0; b < 5; b++) {
            tc_dtype from = all_dtypes[a], to = all_dtypes[b];
            const double *src = from == TC_I32 ? iv : fv;
            int64_t n = from == TC_I32 ? (int64_t)(sizeof iv / sizeof iv[0]) : (int64_t)(sizeof fv / sizeof fv[0]);
            double v[32], e[32];
            for (i = 0; i < n; i++) {
                v[i] = quant(from, src[i]);
                /* i32 -> f16/bf16 goes through f32 like every conversion here */
                e[i] = quant(to, v[i]);
            }
            snprintf(g_case, sizeof g_case, "cast %s -> %s", tc_dtype_name(from), tc_dtype_name(to));
            check_t(tc_cast(ctx, mk_layout(ctx, from, 1, &n, v, 2), to), to, 1, &n, e, 0, 0);
        }
    }
    {   /* the documented f32 -> i32 cases, spelled out */
        int64_t n = 8;
        double v[8] = {2.7, -2.7, 1e10, -1e10, NAN, INFINITY, -INFINITY, 0.999};
        double e[8] = {2, -2, 2147483647.0, -2147483648.0, 0, 2147483647.0, -2147483648.0, 0};
        double eb[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        strcpy(g_case, "cast f32 -> i32 (truncate, saturate, NaN -> 0)");
        check_t(tc_cast(ctx, mk(ctx, TC_F32, 1, &n, v), TC_I32), TC_I32, 1, &n, e, 0, 0);
        strcpy(g_case, "cast f32 -> bool (x != 0, NaN is true)");
        check_t(tc_cast(ctx, mk(ctx, TC_F32, 1, &n, v), TC_BOOL), TC_BOOL, 1, &n, eb, 0, 0);
    }
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Pointwise binary                                                          */
/* ------------------------------------------------------------------------ */

/* binops[]: every op of TC__BINARY_API, with its reference (ref_pointwise.h) */
static int binop_index(const char *name) {
    int i;
    for (i = 0; i < N_BINOPS; i++)
        if (strcmp(binops[i].name, name) == 0) return i;
    return 0;
}

static double *binop_vals(int kind, int operand, int64_t n) {
    double *v = dalloc(n);
    int64_t i;
    for (i = 0; i < n; i++) {
        if (kind == K_CMP) v[i] = rnd_int(0, 2) ? (double)rnd_int(-2, 2) : quant(TC_F32, rnd_unif(-2, 2));
        else if (kind == K_POW) v[i] = operand == 0 ? quant(TC_F32, rnd_unif(0.1, 3)) : quant(TC_F32, rnd_unif(-3, 3));
        else if (kind == K_DIV && operand == 1) {
            double x = rnd_unif(0.25, 5);
            v[i] = quant(TC_F32, rnd_int(0, 1) ? x : -x);
        } else v[i] = quant(TC_F32, rnd_unif(-5, 5));
    }
    return v;
}

TC_TEST(test_binary_broadcast) {
    tc_ctx *ctx = mkctx(1);
    int o, iter;
    for (o = 0; o < N_BINOPS; o++) {
        for (iter = 0; iter < 60; iter++) {
            int ond, na, nb, rnd_, ha, hb;
            int64_t osh[TC_MAX_DIMS], sa[TC_MAX_DIMS], sb[TC_MAX_DIMS], rsh[TC_MAX_DIMS], n, f;
            double *va, *vb, *e;
            tc_dtype dt = iter % 6 == 5 ? TC_F16 : iter % 6 == 4 ? TC_BF16 : TC_F32;
            tc_dtype odt = binops[o].kind == K_CMP ? TC_BOOL : dt;
            tc_tensor *a, *b;
            rnd_shape(&ond, osh, 4);
            bcast_operand_shape(ond, osh, &na, sa);
            bcast_operand_shape(ond, osh, &nb, sb);
            if (!bcast_shape(na, sa, nb, sb, &rnd_, rsh)) continue;
            va = binop_vals(binops[o].kind, 0, numel_of(na, sa));
            vb = binop_vals(binops[o].kind, 1, numel_of(nb, sb));
            for (f = 0; f < numel_of(na, sa); f++) va[f] = quant(dt, va[f]);
            for (f = 0; f < numel_of(nb, sb); f++) vb[f] = quant(dt, vb[f]);
            n = numel_of(rnd_, rsh);
            e = dalloc(n);
            for (f = 0; f < n; f++)
                e[f] = quant(odt, binops[o].ref(va[bcast_idx(rnd_, rsh, f, na, sa)], vb[bcast_idx(rnd_, rsh, f, nb, sb)]));
            tc_scope_begin(ctx);
            a = mk_operand(ctx, dt, na, sa, va, rnd_, rsh, &ha);
            b = mk_operand(ctx, dt, nb, sb, vb, rnd_, rsh, &hb);
            {
                char b1[64], b2[64];
                shape_str(b1, sizeof b1, na, sa);
                shape_str(b2, sizeof b2, nb, sb);
                snprintf(g_case, sizeof g_case, "%s %s %s%s x %s%s", binops[o].name, tc_dtype_name(dt), b1, ha ? "(expanded)" : "",
                         b2, hb ? "(expanded)" : "");
            }
            check_t(binops[o].fn(ctx, a, b, TC_HERE_), odt, rnd_, rsh, e, tol_a(odt), tol_r(odt));
            /* scalar form */
            {
                double s = vb[0 < numel_of(nb, sb) ? 0 : 0];
                int64_t an = numel_of(na, sa);
                double *es = dalloc(an);
                if (numel_of(nb, sb) == 0) s = binops[o].kind == K_DIV ? 0.75 : 1.5;
                for (f = 0; f < an; f++) es[f] = quant(odt, binops[o].ref(va[f], s));
                snprintf(g_case, sizeof g_case, "%s_scalar(%g) %s nd %d", binops[o].name, s, tc_dtype_name(dt), na);
                check_t(binops[o].sfn(ctx, mk_layout(ctx, dt, na, sa, va, rnd_int(0, 3)), s, TC_HERE_), odt, na,
                        sa, es, tol_a(odt), tol_r(odt));
                free(es);
            }
            tc_scope_end(ctx);
            free(va);
            free(vb);
            free(e);
        }
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_binary_special_values) {
    static const double sv[] = {0.0, -0.0, 1.0, -2.0, 0.5, 3.0, INFINITY, -INFINITY, NAN};
    int ns = (int)(sizeof sv / sizeof sv[0]), o, i, j;
    int64_t n = ns * ns, sh[2];
    double va[81], vb[81], e[81];
    tc_ctx *ctx = mkctx(1);
    sh[0] = ns;
    sh[1] = ns;
    for (i = 0; i < ns; i++)
        for (j = 0; j < ns; j++) {
            va[i * ns + j] = sv[i];
            vb[i * ns + j] = sv[j];
        }
    for (o = 0; o < N_BINOPS; o++) {
        tc_dtype odt = binops[o].kind == K_CMP ? TC_BOOL : TC_F32;
        for (i = 0; i < n; i++) e[i] = quant(odt, binops[o].ref(va[i], vb[i]));
        snprintf(g_case, sizeof g_case, "%s on all pairs of 0, -0, 1, -2, 0.5, 3, +-inf, NaN", binops[o].name);
        check_t(binops[o].fn(ctx, mk(ctx, TC_F32, 2, sh, va), mk(ctx, TC_F32, 2, sh, vb), TC_HERE_), odt, 2, sh, e,
                1e-6, 1e-6);
    }
    tc_ctx_destroy(ctx);
}

typedef struct promo_case {
    tc_dtype a;
    int a0d;
    tc_dtype b;
    int b0d;
    const char *op;
    tc_dtype out;
} promo_case;

static double *promo_vals(tc_dtype dt, int64_t n, int nonzero) {
    double *v = dalloc(n);
    int64_t i;
    for (i = 0; i < n; i++) {
        if (dt == TC_BOOL) v[i] = nonzero ? 1.0 : (double)rnd_int(0, 1);
        else if (dt == TC_I32) {
            v[i] = (double)rnd_int(-4, 4);
            if (nonzero && v[i] == 0) v[i] = 3;
        } else {
            v[i] = quant(dt, rnd_unif(-4, 4));
            if (nonzero && fabs(v[i]) < 0.25) v[i] = quant(dt, 0.75);
        }
    }
    return v;
}

TC_TEST(test_type_promotion) {
    static const promo_case cs[] = {
        {TC_I32, 0, TC_I32, 0, "add", TC_I32}, {TC_I32, 0, TC_I32, 0, "sub", TC_I32},
        {TC_I32, 0, TC_I32, 0, "mul", TC_I32}, {TC_I32, 0, TC_I32, 0, "maximum", TC_I32},
        {TC_I32, 0, TC_I32, 0, "minimum", TC_I32}, {TC_I32, 0, TC_I32, 0, "div", TC_F32},
        {TC_I32, 0, TC_F32, 0, "add", TC_F32}, {TC_F32, 0, TC_I32, 0, "mul", TC_F32},
        {TC_F16, 0, TC_F16, 0, "add", TC_F16}, {TC_F16, 0, TC_F16, 0, "div", TC_F16},
        {TC_BF16, 0, TC_BF16, 0, "mul", TC_BF16}, {TC_F16, 0, TC_BF16, 0, "add", TC_F32},
        {TC_F16, 0, TC_F32, 0, "sub", TC_F32}, {TC_I32, 0, TC_F16, 0, "add", TC_F16},
        {TC_BOOL, 0, TC_I32, 0, "add", TC_I32}, {TC_BOOL, 0, TC_BOOL, 0, "add", TC_I32},
        {TC_BOOL, 0, TC_BOOL, 0, "mul", TC_I32}, {TC_BOOL, 0, TC_F32, 0, "mul", TC_F32},
        {TC_BOOL, 0, TC_BOOL, 0, "div", TC_F32}, {TC_I32, 0, TC_I32, 0, "eq", TC_BOOL},
        {TC_BOOL, 0, TC_BOOL, 0, "eq", TC_BOOL}, {TC_BOOL, 0, TC_BOOL, 0, "ne", TC_BOOL},
        {TC_I32, 0, TC_F32, 0, "lt", TC_BOOL}, {TC_F16, 0, TC_BF16, 0, "ge", TC_BOOL},
        {TC_I32, 0, TC_BOOL, 0, "gt", TC_BOOL}, {TC_F16, 0, TC_F16, 0, "maximum", TC_F16},
        {TC_I32, 0, TC_I32, 0, "pow", TC_I32}, {TC_I32, 0, TC_F32, 0, "pow", TC_F32},
        /* a 0-d tensor only promotes across categories */
        {TC_F16, 0, TC_F32, 1, "add", TC_F16}, {TC_BF16, 0, TC_F16, 1, "add", TC_BF16},
        {TC_I32, 0, TC_F32, 1, "add", TC_F32}, {TC_F32, 0, TC_I32, 1, "mul", TC_F32},
        {TC_I32, 0, TC_BOOL, 1, "add", TC_I32}, {TC_BOOL, 0, TC_I32, 1, "add", TC_I32},
        {TC_F16, 0, TC_I32, 1, "sub", TC_F16}, {TC_F32, 1, TC_F16, 0, "add", TC_F16},
        {TC_I32, 1, TC_F32, 1, "add", TC_F32}, {TC_F16, 1, TC_F32, 1, "add", TC_F32},
        {TC_F16, 1, TC_BF16, 1, "mul", TC_F32}, {TC_F16, 1, TC_F32, 0, "add", TC_F32},
        {TC_BOOL, 0, TC_F16, 1, "add", TC_F16},
    };
    tc_ctx *ctx = mkctx(1);
    int c;
    int64_t f;
    for (c = 0; c < (int)(sizeof cs / sizeof cs[0]); c++) {
        int o = binop_index(cs[c].op), na = cs[c].a0d ? 0 : 2, nb = cs[c].b0d ? 0 : 1, ond = 0;
        int64_t sa[2] = {2, 3}, sb[1] = {3}, osh[2];
        double *va, *vb, *e;
        int is_pow = binops[o].kind == K_POW;
        bcast_shape(na, sa, nb, sb, &ond, osh);
        va = promo_vals(cs[c].a, numel_of(na, sa), 0);
        vb = promo_vals(cs[c].b, numel_of(nb, sb), binops[o].kind == K_DIV);
        if (is_pow) { /* small non-negative integer exponents, so i32 ** i32 is exact */
            for (f = 0; f < numel_of(nb, sb); f++) vb[f] = (double)rnd_int(0, 3);
        }
        e = dalloc(numel_of(ond, osh));
        for (f = 0; f < numel_of(ond, osh); f++) {
            double x = va[bcast_idx(ond, osh, f, na, sa)], y = vb[bcast_idx(ond, osh, f, nb, sb)];
            e[f] = quant(cs[c].out, (double)(float)binops[o].ref(x, y));
        }
        snprintf(g_case, sizeof g_case, "promotion %s%s %s %s%s -> %s", tc_dtype_name(cs[c].a), cs[c].a0d ? "[]" : "[2,3]",
                 cs[c].op, tc_dtype_name(cs[c].b), cs[c].b0d ? "[]" : "[3]", tc_dtype_name(cs[c].out));
        tc_scope_begin(ctx);
        check_t(binops[o].fn(ctx, mk(ctx, cs[c].a, na, sa, va), mk_layout(ctx, cs[c].b, nb, sb, vb, 2), TC_HERE_),
                cs[c].out, ond, osh, e, tol_a(cs[c].out), tol_r(cs[c].out));
        tc_scope_end(ctx);
        free(va);
        free(vb);
        free(e);
    }
    {   /* true division of integers, incl. by zero (PyTorch: inf / nan) */
        int64_t s4 = 4;
        double a[4] = {7, -7, 1, 0}, b[4] = {2, 2, 0, 0}, e[4] = {3.5, -3.5, INFINITY, NAN};
        strcpy(g_case, "i32 / i32 is true division");
        check_t(tc_div(ctx, mk(ctx, TC_I32, 1, &s4, a), mk(ctx, TC_I32, 1, &s4, b)), TC_F32, 1, &s4, e, 0, 0);
    }
    {   /* scalar forms act like a Python float */
        static const struct { tc_dtype a; const char *op; double s; tc_dtype out; } ss[] = {
            {TC_I32, "add", 2.0, TC_F32}, {TC_I32, "mul", 0.5, TC_F32}, {TC_I32, "div", 2.0, TC_F32},
            {TC_F16, "add", 2.5, TC_F16}, {TC_BF16, "mul", 3.0, TC_BF16}, {TC_BOOL, "add", 1.0, TC_F32},
            {TC_BOOL, "mul", 2.5, TC_F32}, {TC_I32, "lt", 1.5, TC_BOOL}, {TC_I32, "eq", 2.0, TC_BOOL},
            {TC_F16, "ge", 0.5, TC_BOOL}, {TC_I32, "maximum", 0.5, TC_F32}, {TC_I32, "pow", 2.0, TC_F32},
            {TC_F32, "pow", 0.5, TC_F32},
        };
        int64_t sh[2] = {3, 4};
        for (c = 0; c < (int)(sizeof ss / sizeof ss[0]); c++) {
            int o = binop_index(ss[c].op);
            double *va = promo_vals(ss[c].a, 12, 0), e[12];
            if (binops[o].kind == K_POW)
                for (f = 0; f < 12; f++) va[f] = fabs(va[f]);
            for (f = 0; f < 12; f++) e[f] = quant(ss[c].out, (double)(float)binops[o].ref(va[f], ss[c].s));
            snprintf(g_case, sizeof g_case, "%s_scalar(%s, %g) -> %s", ss[c].op, tc_dtype_name(ss[c].a), ss[c].s,
                     tc_dtype_name(ss[c].out));
            check_t(binops[o].sfn(ctx, mk_layout(ctx, ss[c].a, 2, sh, va, 1), ss[c].s, TC_HERE_), ss[c].out, 2, sh, e,
                    tol_a(ss[c].out), tol_r(ss[c].out));
            free(va);
        }
        {   /* i32 tensor + 0-d f32 tensor from tc_scalar -> f32 */
            double va[12], e[12];
            for (f = 0; f < 12; f++) { va[f] = (double)(f - 6); e[f] = va[f] + 0.5; }
            strcpy(g_case, "i32[3,4] + tc_scalar(0.5)");
            check_t(tc_add(ctx, mk(ctx, TC_I32, 2, sh, va), tc_scalar(ctx, 0.5)), TC_F32, 2, sh, e, 0, 0);
        }
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_where) {
    tc_ctx *ctx = mkctx(1);
    int iter;
    static const tc_dtype pa[4] = {TC_F32, TC_I32, TC_F16, TC_I32}, pb[4] = {TC_F32, TC_F32, TC_F16, TC_I32};
    static const tc_dtype po[4] = {TC_F32, TC_F32, TC_F16, TC_I32};
    for (iter = 0; iter < 60; iter++) {
        int ond, nc, na, nb, n1, n2, k = iter % 4, hc, ha, hb;
        int64_t osh[TC_MAX_DIMS], sc[TC_MAX_DIMS], sa[TC_MAX_DIMS], sb[TC_MAX_DIMS], t1[TC_MAX_DIMS], rsh[TC_MAX_DIMS], n, f;
        double *vc, *va, *vb, *e;
        rnd_shape(&ond, osh, 4);
        bcast_operand_shape(ond, osh, &nc, sc);
        bcast_operand_shape(ond, osh, &na, sa);
        bcast_operand_shape(ond, osh, &nb, sb);
        if (!bcast_shape(nc, sc, na, sa, &n1, t1) || !bcast_shape(n1, t1, nb, sb, &n2, rsh)) continue;
        vc = rnd_vals(TC_BOOL, numel_of(nc, sc), 0, 1);
        va = rnd_vals(pa[k], numel_of(na, sa), -9, 9);
        vb = rnd_vals(pb[k], numel_of(nb, sb), -9, 9);
        n = numel_of(n2, rsh);
        e = dalloc(n);
        for (f = 0; f < n; f++)
            e[f] = vc[bcast_idx(n2, rsh, f, nc, sc)] != 0 ? va[bcast_idx(n2, rsh, f, na, sa)] : vb[bcast_idx(n2, rsh, f, nb, sb)];
        tc_scope_begin(ctx);
        snprintf(g_case, sizeof g_case, "where iter %d (%s, %s)", iter, tc_dtype_name(pa[k]), tc_dtype_name(pb[k]));
        check_t(tc_where(ctx, mk_operand(ctx, TC_BOOL, nc, sc, vc, n2, rsh, &hc), mk_operand(ctx, pa[k], na, sa, va, n2, rsh, &ha),
                         mk_operand(ctx, pb[k], nb, sb, vb, n2, rsh, &hb)),
                po[k], n2, rsh, e, 0, 0);
        tc_scope_end(ctx);
        free(vc);
        free(va);
        free(vb);
        free(e);
    }
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* SIMD widths                                                               */
/* ------------------------------------------------------------------------ */

/* Lengths around SIMD widths and GEMM register tiles (tails, edges) */
TC_TEST(test_simd_edges) {
    tc_ctx *ctx = mkctx(1);
    static const int64_t lens[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 47, 48, 49, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1023, 1025};
    int li, M, N, k;
    int64_t i;
    for (li = 0; li < (int)(sizeof lens / sizeof lens[0]); li++) {
        int64_t n = lens[li], sh2[2], one = 1, s3[2];
        double *a = rnd_vals(TC_F32, 3 * n, -3, 3), *b = rnd_vals(TC_F32, 3 * n, 0.5, 3), *e = dalloc(3 * n);
        int ax = 1;
        tc_tensor *ta, *tb;
        tc_scope_begin(ctx);
        sh2[0] = 3; sh2[1] = n;
        ta = mk(ctx, TC_F32, 2, sh2, a);
        tb = mk_layout(ctx, TC_F32, 2, sh2, b, 2);
        for (k = 0; k < N_UNOPS; k++) {
            if (unops[k].lo >= 0) { /* log, sqrt, rsqrt, reciprocal: positive inputs */
                for (i = 0; i < 3 * n; i++) e[i] = (double)(float)unops[k].ref(b[i]);
                snprintf(g_case, sizeof g_case, "%s length %lld", unops[k].name, (long long)n);
                check_t(unops[k].fn(ctx, tb, TC_HERE_), TC_F32, 2, sh2, e, 1e-5, 1e-4);
            } else {
                for (i = 0; i < 3 * n; i++) e[i] = (double)(float)unops[k].ref(a[i]);
                snprintf(g_case, sizeof g_case, "%s length %lld", unops[k].name, (long long)n);
                check_t(unops[k].fn(ctx, ta, TC_HERE_), TC_F32, 2, sh2, e, 1e-5, 1e-4);
            }
        }
        for (k = 0; k < N_BINOPS; k++) {
            tc_dtype odt = binops[k].kind == K_CMP ? TC_BOOL : TC_F32;
            for (i = 0; i < 3 * n; i++) e[i] = quant(odt, binops[k].ref(b[i], a[i % n]));
            snprintf(g_case, sizeof g_case, "%s length %lld, [3,n] x [n]", binops[k].name, (long long)n);
            s3[0] = n;
            check_t(binops[k].fn(ctx, tb, mk(ctx, TC_F32, 1, s3, a), TC_HERE_), odt, 2, sh2, e, 1e-5, 1e-4);
        }
        {
            double *er;
            int ond;
            int64_t osh[TC_MAX_DIMS], rc;
            int op;
            for (op = 0; op < R_COUNT_; op++) {
                ref_reduce(op, 2, sh2, a, 2u, 0, &ond, osh, &er, &rc);
                snprintf(g_case, sizeof g_case, "%s over rows of length %lld", red_names[op], (long long)n);
                check_t(call_red(ctx, op, ta, 1, &ax, 0), op == R_ARGMAX ? TC_I32 : TC_F32, ond, osh, er, 1e-5 * (1 + sqrt((double)n)), 1e-4);
                free(er);
                ref_reduce(op, 2, sh2, a, 3u, 0, &ond, osh, &er, &rc);
                snprintf(g_case, sizeof g_case, "%s over all of [3,%lld] (strided)", red_names[op], (long long)n);
                check_t(call_red(ctx, op, tb == ta ? ta : mk_layout(ctx, TC_F32, 2, sh2, a, 1), 0, NULL, 0), op == R_ARGMAX ? TC_I32 : TC_F32,
                        ond, osh, er, 1e-5 * (1 + sqrt((double)n)), 1e-4);
                free(er);
            }
        }
        {   /* reductions over dim 0 of [n, 3] (column sums), outer-product broadcast [n,1] x [1,3] */
            int64_t sc[2], sr[2], so2[2], f2;
            double *er;
            int ond, ax0 = 0, op;
            int64_t osh[TC_MAX_DIMS], rc;
            sc[0] = n; sc[1] = 3;
            for (op = 0; op < R_COUNT_; op++) {
                ref_reduce(op, 2, sc, a, 1u, 1, &ond, osh, &er, &rc);
                snprintf(g_case, sizeof g_case, "%s over dim 0 of [%lld,3] keepdim", red_names[op], (long long)n);
                check_t(call_red(ctx, op, mk_layout(ctx, TC_F32, 2, sc, a, rnd_int(0, 1)), 1, &ax0, 1), op == R_ARGMAX ? TC_I32 : TC_F32, ond,
                        osh, er, 1e-5 * (1 + sqrt((double)n)), 1e-4);
                free(er);
            }
            sc[1] = 1; sr[0] = 1; sr[1] = 3; so2[0] = n; so2[1] = 3;
            for (f2 = 0; f2 < 3 * n; f2++) e[f2] = (double)(float)(a[f2 / 3] - b[f2 % 3]);
            snprintf(g_case, sizeof g_case, "sub [%lld,1] - [1,3]", (long long)n);
            check_t(tc_sub(ctx, mk(ctx, TC_F32, 2, sc, a), mk(ctx, TC_F32, 2, sr, b)), TC_F32, 2, so2, e, 1e-6, 1e-6);
            sr[1] = n; sc[0] = 3; so2[0] = 3; so2[1] = n;
            for (f2 = 0; f2 < 3 * n; f2++) e[f2] = (double)(float)(a[f2 / n] * b[f2 % n]);
            snprintf(g_case, sizeof g_case, "mul [3,1] * [1,%lld]", (long long)n);
            check_t(tc_mul(ctx, mk(ctx, TC_F32, 2, sc, a), mk(ctx, TC_F32, 2, sr, b)), TC_F32, 2, so2, e, 1e-6, 1e-6);
        }
        ref_softmax(2, sh2, 1, a, e, 0);
        snprintf(g_case, sizeof g_case, "softmax length %lld", (long long)n);
        check_t(tc_softmax(ctx, ta, -1), TC_F32, 2, sh2, e, 1e-6, 1e-4);
        ref_norm(2, sh2, 1, a, b, NULL, 1e-5, 0, e);
        snprintf(g_case, sizeof g_case, "layer_norm length %lld", (long long)n);
        check_t(tc_layer_norm(ctx, ta, 1, mk(ctx, TC_F32, 1, &sh2[1], b), NULL, 1e-5), TC_F32, 2, sh2, e, 1e-4, 1e-4);
        for (i = 0; i < 3 * n; i++) e[i] = quant(TC_F16, a[i]);
        snprintf(g_case, sizeof g_case, "cast f32 -> f16 length %lld", (long long)n);
        check_t(tc_cast(ctx, ta, TC_F16), TC_F16, 2, sh2, e, 0, 0);
        (void)one;
        tc_scope_end(ctx);
        free(a); free(b); free(e);
    }
    /* every small GEMM edge: M, N in 1..18, a few K, B plain and transposed */
    for (M = 1; M <= 18; M++)
        for (N = 1; N <= 18; N++) {
            static const int64_t ks[4] = {1, 8, 17, 64};
            int64_t sa[2], sb[2];
            sa[0] = M; sa[1] = ks[(M + N) % 4];
            sb[0] = sa[1]; sb[1] = N;
            run_matmul_case(ctx, TC_F32, 2, sa, 2, sb, 0, (M * 7 + N) % 2);
        }
    tc_ctx_destroy(ctx);
}

int main(void) {
    ops_setup();
    TC_RUN(test_unary_f32);
    TC_RUN(test_unary_special_values);
    TC_RUN(test_unary_dtypes);
    TC_RUN(test_softplus_clamp);
    TC_RUN(test_cast);
    TC_RUN(test_binary_broadcast);
    TC_RUN(test_binary_special_values);
    TC_RUN(test_type_promotion);
    TC_RUN(test_where);
    TC_RUN(test_simd_edges);
    return TC_TEST_SUMMARY();
}
