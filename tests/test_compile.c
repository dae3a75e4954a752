/* tc_compile / tc_call: tracing, caching, guards and recompiles, graph
 * breaks, fullgraph, the DCE/CSE passes, errors inside compiled functions. */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"
#include "tc_test.h"

static tc_ctx *ctx;

/* ---- helpers -------------------------------------------------------------- */

static tc_tensor *randn(int nd, int64_t a, int64_t b, int64_t c, uint64_t seed) {
    int64_t s[3];
    s[0] = a;
    s[1] = b;
    s[2] = c;
    return tc_rand_normal(ctx, nd, s, 0.0, 1.0, seed);
}

/* Largest |a - b| / (1 + |b|): fused kernels may differ from eager by a few
 * ulp (vector exp, reassociated sums), never by more. */
#define FUSED_TOL 1e-5
#define maxrel tct_maxrel

#define maxdiff tct_maxdiff

/* ---- models ---------------------------------------------------------------- */

typedef struct block {
    tc_tensor *ln_w, *ln_b, *qkv_w, *qkv_b, *proj_w, *fc_w, *fc_b, *out_w;
    int heads;
    int calls;          /* how often the Python-level function ran */
} block;

/* A GPT-2-style pre-LN block on x [B, T, d]. */
static void block_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    block *m = (block *)user;
    tc_tensor *x = in[0], *h, *qkv[3], *y;
    int64_t B = tc_dim(x, 0), T = tc_dim(x, 1), d = tc_dim(x, 2), hs[4], ms[3];
    int i;
    m->calls++;
    hs[0] = B;
    hs[1] = T;
    hs[2] = m->heads;
    hs[3] = d / m->heads;
    ms[0] = B;
    ms[1] = T;
    ms[2] = d;
    h = tc_layer_norm(c, x, 1, m->ln_w, m->ln_b, 1e-5);
    h = tc_linear(c, h, m->qkv_w, m->qkv_b);
    tc_split(c, h, d, -1, qkv, 3);
    for (i = 0; i < 3; i++) qkv[i] = tc_transpose(c, tc_reshape(c, qkv[i], 4, hs), 1, 2);
    y = tc_scaled_dot_product_attention(c, qkv[0], qkv[1], qkv[2], NULL, 1, 0.0);
    y = tc_reshape(c, tc_transpose(c, y, 1, 2), 3, ms);
    x = tc_add(c, x, tc_linear(c, y, m->proj_w, NULL));
    h = tc_gelu_tanh(c, tc_linear(c, tc_layer_norm(c, x, 1, m->ln_w, m->ln_b, 1e-5), m->fc_w, m->fc_b));
    out[0] = tc_add(c, x, tc_linear(c, h, m->out_w, NULL));
}

static block make_block(int64_t d, int heads) {
    block m;
    int64_t s[2];
    memset(&m, 0, sizeof m);
    m.heads = heads;
    s[0] = d;
    m.ln_w = tc_rand_uniform(ctx, 1, s, 0.5, 1.5, 11);
    m.ln_b = tc_rand_uniform(ctx, 1, s, -0.1, 0.1, 12);
    m.qkv_w = randn(2, 3 * d, d, 0, 13);
    s[0] = 3 * d;
    m.qkv_b = tc_rand_uniform(ctx, 1, s, -0.1, 0.1, 14);
    m.proj_w = randn(2, d, d, 0, 15);
    m.fc_w = randn(2, 4 * d, d, 0, 16);
    s[0] = 4 * d;
    m.fc_b = tc_rand_uniform(ctx, 1, s, -0.1, 0.1, 17);
    m.out_w = randn(2, d, 4 * d, 0, 18);
    m.qkv_w = tc_mul_scalar(ctx, m.qkv_w, 0.1);
    m.proj_w = tc_mul_scalar(ctx, m.proj_w, 0.1);
    m.fc_w = tc_mul_scalar(ctx, m.fc_w, 0.1);
    m.out_w = tc_mul_scalar(ctx, m.out_w, 0.05);
    return m;
}

TC_TEST(test_compiled_matches_eager_and_caches) {
    block m = make_block(32, 4);
    tc_fn *f = tc_compile(ctx, block_fn, &m, NULL);
    tc_tensor *x = randn(3, 2, 8, 32, 1), *ye, *yc;
    tc_explain_info info;
    int k;
    tc_scope_begin(ctx);
    block_fn(ctx, &m, &x, &ye); /* eager reference */
    for (k = 0; k < 3; k++) {
        TC_CHECK(tc_call(f, &x, &yc) == TC_OK);
        TC_CHECKF(maxdiff(ye, yc) < 1e-5, "call %d: compiled differs from eager by %g", k, maxdiff(ye, yc));
    }
    /* one eager run + one trace; the two later calls replayed the graph */
    TC_CHECKF(m.calls == 2, "the function ran %d times", m.calls);
    tc_explain(f, &info, NULL, 0);
    TC_CHECK(info.graphs == 1 && info.recompiles == 0 && info.graph_breaks == 0);
    TC_CHECK(info.calls == 3 && info.cached_calls == 2);
    TC_CHECK(info.ops > 10 && info.kernels < info.ops); /* views are not kernels */
    TC_CHECK(info.mode == TC_MODE_DEFAULT && info.fullgraph == 0);
    tc_scope_end(ctx);
    tc_fn_free(f);
}

TC_TEST(test_recompile_on_new_shape_and_limit) {
    block m = make_block(16, 2);
    tc_compile_options o;
    tc_fn *f;
    tc_tensor *y, *ye;
    tc_explain_info info;
    int64_t t;
    memset(&o, 0, sizeof o);
    o.recompile_limit = 2;
    o.dynamic = -1; /* every new size is a recompile */
    f = tc_compile(ctx, block_fn, &m, &o);
    tc_scope_begin(ctx);
    for (t = 4; t <= 6; t++) {
        tc_tensor *x = randn(3, 1, t, 16, (uint64_t)t);
        TC_CHECK(tc_call(f, &x, &y) == TC_OK);
        block_fn(ctx, &m, &x, &ye);
        TC_CHECKF(maxdiff(ye, y) < 1e-5, "T=%d: differs by %g", (int)t, maxdiff(ye, y));
        TC_CHECK(tc_call(f, &x, &y) == TC_OK); /* same signature again */
    }
    tc_explain(f, &info, NULL, 0);
    TC_CHECKF(info.graphs == 2, "graphs %d", info.graphs);
    TC_CHECKF(info.recompiles == 1, "recompiles %d", info.recompiles);
    TC_CHECKF(info.eager_calls == 2, "eager calls %d (T=6 is past the limit of 2)", info.eager_calls);
    TC_CHECKF(info.cached_calls == 2, "cached calls %d", info.cached_calls);
    {
        /* a dtype or layout change is a guard miss too */
        tc_tensor *x = randn(3, 1, 4, 16, 99), *xt = tc_transpose(ctx, randn(3, 1, 16, 4, 98), 1, 2);
        tc_fn *g = tc_compile(ctx, block_fn, &m, NULL);
        TC_CHECK(tc_call(g, &x, &y) == TC_OK);
        TC_CHECK(tc_call(g, &xt, &y) == TC_OK);
        block_fn(ctx, &m, &xt, &ye);
        TC_CHECK(maxdiff(ye, y) < 1e-5);
        tc_explain(g, &info, NULL, 0);
        TC_CHECKF(info.recompiles == 1, "strided input: recompiles %d", info.recompiles);
        tc_fn_free(g);
    }
    tc_scope_end(ctx);
    tc_fn_free(f);
}

/* ---- automatic dynamic shapes ----------------------------------------------- */

/* T changes every call (like a growing sequence): the first recompile makes
 * dim 1 dynamic, the next size verifies the fit, later sizes neither trace
 * nor recompile.  Sizes 0 and 1 stay specialised. */
TC_TEST(test_automatic_dynamic) {
    block m = make_block(16, 2);
    tc_fn *f = tc_compile(ctx, block_fn, &m, NULL);
    tc_tensor *y, *ye;
    tc_explain_info info;
    char text[16384];
    int64_t t;
    int calls_before = 0;
    tc_scope_begin(ctx);
    for (t = 4; t <= 12; t++) {
        tc_tensor *x = randn(3, 2, t, 16, (uint64_t)(100 + t));
        if (t == 7) calls_before = m.calls;
        TC_CHECK(tc_call(f, &x, &y) == TC_OK);
        m.calls--; /* do not count the eager reference below */
        block_fn(ctx, &m, &x, &ye);
        TC_CHECKF(maxdiff(ye, y) < 1e-5, "T=%d: differs by %g (%s)", (int)t, maxdiff(ye, y), tc_fn_error(f));
    }
    /* T=4 traced, T=5 recompiled (dim goes dynamic), T=6 verified by a
     * trace; T=7..12 instantiated without running block_fn */
    TC_CHECKF(m.calls == calls_before, "block_fn ran %d times for T=7..12", m.calls - calls_before);
    tc_explain(f, &info, text, sizeof text);
    TC_CHECKF(info.recompiles == 1 && info.graphs == 1 && info.dynamic_dims == 1 && info.traces == 3,
              "recompiles %d graphs %d dynamic %d traces %d\n%s", info.recompiles, info.graphs, info.dynamic_dims,
              info.traces, text);
    TC_CHECK(strstr(text, "in0=f32[2,*,16]") != NULL && strstr(text, "verified") != NULL);
    {
        /* size 1 is specialised: a separate, static entry */
        tc_tensor *x1 = randn(3, 2, 1, 16, 7);
        TC_CHECK(tc_call(f, &x1, &y) == TC_OK);
        block_fn(ctx, &m, &x1, &ye);
        TC_CHECK(maxdiff(ye, y) < 1e-5);
        tc_explain(f, &info, NULL, 0);
        TC_CHECK(info.graphs == 2 && info.recompiles == 2);
    }
    tc_scope_end(ctx);
    tc_fn_free(f);
}

/* A dim marked up front is dynamic from the first compile: no recompile,
 * and every trace (the size, and padded copies one and two longer to fit
 * and verify) in the first call: lengths 4..12 trace 3 times, where the
 * mark traced 4 (4, the padded 5, 5 again, 6) and automatic dynamic 3. */
TC_TEST(test_mark_dynamic_up_front) {
    block m = make_block(16, 2);
    tc_fn *f = tc_compile(ctx, block_fn, &m, NULL);
    tc_tensor *y, *ye;
    tc_explain_info info;
    int64_t t;
    int calls_after_first = 0;
    TC_CHECK(tc_mark_dynamic(f, 0, 1) == TC_OK);
    TC_CHECK(tc_mark_dynamic(f, 3, 0) == TC_ERR_AXIS && tc_mark_dynamic(NULL, 0, 0) == TC_ERR_NULL);
    tc_scope_begin(ctx);
    for (t = 4; t <= 12; t++) {
        tc_tensor *x = randn(3, 2, t, 16, (uint64_t)(200 + t));
        TC_CHECK(tc_call(f, &x, &y) == TC_OK);
        if (t == 4) calls_after_first = m.calls;
        m.calls--; /* do not count the eager reference below */
        block_fn(ctx, &m, &x, &ye);
        TC_CHECKF(maxdiff(ye, y) < 1e-5, "T=%d: differs by %g (%s)", (int)t, maxdiff(ye, y), tc_fn_error(f));
        if (t == 4) {
            tc_explain(f, &info, NULL, 0);
            TC_CHECKF(info.traces == 3, "first call: %d traces", info.traces);
        }
    }
    tc_explain(f, &info, NULL, 0);
    TC_CHECKF(info.recompiles == 0 && info.graphs == 1 && info.dynamic_dims == 1 && info.traces == 3,
              "recompiles %d graphs %d dynamic %d traces %d", info.recompiles, info.graphs, info.dynamic_dims,
              info.traces);
    TC_CHECKF(m.calls == calls_after_first, "block_fn ran %d times for T=5..12", m.calls - calls_after_first);
    tc_fn_free(f);
    {
        /* dynamic = 2 ("on") marks every dim; dim 0 (batch) fits first */
        tc_compile_options o;
        memset(&o, 0, sizeof o);
        o.dynamic = 2;
        f = tc_compile(ctx, block_fn, &m, &o);
        for (t = 2; t <= 5; t++) {
            tc_tensor *x = randn(3, t, 4, 16, (uint64_t)(300 + t));
            TC_CHECK(tc_call(f, &x, &y) == TC_OK);
            block_fn(ctx, &m, &x, &ye);
            TC_CHECKF(maxdiff(ye, y) < 1e-5, "B=%d: differs by %g", (int)t, maxdiff(ye, y));
        }
        tc_explain(f, &info, NULL, 0);
        TC_CHECKF(info.recompiles == 0 && info.dynamic_dims == 1, "on: recompiles %d dynamic %d", info.recompiles,
                  info.dynamic_dims);
        tc_fn_free(f);
    }
    tc_scope_end(ctx);
}

/* A size used non-affinely (here squared) must not be instantiated wrongly:
 * the verification trace catches it and the dim goes back to static. */
static void square_size_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    int64_t n = tc_dim(in[0], 0);
    (void)user;
    out[0] = tc_add(c, in[0], tc_sum(c, tc_arange(c, TC_F32, 0, (double)(n * n), 1), 0, NULL, 0));
}

TC_TEST(test_dynamic_not_affine_falls_back) {
    tc_fn *f = tc_compile(ctx, square_size_fn, NULL, NULL);
    tc_tensor *y, *ye;
    tc_explain_info info;
    int64_t n;
    tc_scope_begin(ctx);
    for (n = 2; n <= 6; n++) {
        tc_tensor *x = randn(1, n, 0, 0, (uint64_t)n);
        TC_CHECK(tc_call(f, &x, &y) == TC_OK);
        TC_CHECK(tc_call(f, &x, &y) == TC_OK);
        square_size_fn(ctx, NULL, &x, &ye);
        TC_CHECKF(maxdiff(ye, y) < 1e-3, "n=%d differs by %g", (int)n, maxdiff(ye, y));
    }
    tc_explain(f, &info, NULL, 0);
    TC_CHECKF(info.dynamic_dims == 0, "dynamic dims %d", info.dynamic_dims);
    tc_fn_free(f);
    /* marked: the verification at the first call catches it */
    f = tc_compile(ctx, square_size_fn, NULL, NULL);
    TC_CHECK(tc_mark_dynamic(f, 0, 0) == TC_OK);
    for (n = 2; n <= 6; n++) {
        tc_tensor *x = randn(1, n, 0, 0, (uint64_t)n);
        TC_CHECK(tc_call(f, &x, &y) == TC_OK);
        square_size_fn(ctx, NULL, &x, &ye);
        TC_CHECKF(maxdiff(ye, y) < 1e-3, "marked, n=%d differs by %g", (int)n, maxdiff(ye, y));
    }
    tc_explain(f, &info, NULL, 0);
    /* 3 traces at n = 2 (the fit fails on the copy of 4), 1 for each size after */
    TC_CHECKF(info.dynamic_dims == 0 && info.traces == 3 + 4, "marked: dynamic dims %d, traces %d", info.dynamic_dims,
              info.traces);
    tc_scope_end(ctx);
    tc_fn_free(f);
}

/* ---- passes -------------------------------------------------------------- */

static void dup_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    tc_tensor *a = tc_exp(c, in[0]), *b = tc_exp(c, in[0]); /* CSE: one node */
    (void)tc_sigmoid(c, in[0]);                              /* DCE: unused  */
    (void)user;
    out[0] = tc_add(c, a, b);
}

TC_TEST(test_cse_and_dce) {
    tc_fn *f = tc_compile(ctx, dup_fn, NULL, NULL);
    tc_tensor *x = randn(2, 3, 5, 0, 7), *y;
    tc_explain_info info;
    char text[4096];
    tc_scope_begin(ctx);
    TC_CHECK(tc_call(f, &x, &y) == TC_OK);
    TC_CHECK(maxdiff(y, tc_mul_scalar(ctx, tc_exp(ctx, x), 2.0)) < 1e-5);
    tc_explain(f, &info, text, sizeof text);
    TC_CHECKF(info.ops == 2, "ops %d (expected exp + add)\n%s", info.ops, text);
    TC_CHECK(strstr(text, "sigmoid") == NULL);
    TC_CHECK(strstr(text, "exp(%0)") != NULL);
    tc_scope_end(ctx);
    tc_fn_free(f);
}

/* ---- graph breaks and fullgraph ------------------------------------------------ */

static int break_line;

/* Data-dependent branch: relu(x) when sum(x) > 0, else x*x - 1. */
static void branch_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    tc_tensor *s = tc_sum(c, in[0], 0, NULL, 0);
    double v;
    (void)user;
    break_line = __LINE__ + 1;
    v = tc_item(s);
    if (v > 0) out[0] = tc_relu(c, in[0]);
    else out[0] = tc_sub_scalar(c, tc_square(c, in[0]), 1.0);
}

TC_TEST(test_graph_break_both_paths) {
    tc_fn *f = tc_compile(ctx, branch_fn, NULL, NULL);
    tc_tensor *pos = tc_add_scalar(ctx, randn(1, 64, 0, 0, 3), 1.0), *neg = tc_sub_scalar(ctx, randn(1, 64, 0, 0, 3), 1.0);
    tc_tensor *y, *ye;
    tc_explain_info info;
    char text[8192], site[64];
    int k;
    tc_scope_begin(ctx);
    for (k = 0; k < 2; k++) {
        TC_CHECK(tc_call(f, &pos, &y) == TC_OK);
        TC_CHECK(maxdiff(y, tc_relu(ctx, pos)) == 0);
        TC_CHECK(tc_call(f, &neg, &y) == TC_OK);
        ye = tc_sub_scalar(ctx, tc_square(ctx, neg), 1.0);
        TC_CHECK(maxdiff(y, ye) == 0);
    }
    tc_explain(f, &info, text, sizeof text);
    TC_CHECKF(info.graph_breaks >= 1, "breaks %d", info.graph_breaks);
    /* later calls re-record and run cached segment programs: the sum
     * before the break, then one segment per branch taken */
    TC_CHECKF(info.eager_calls == 0 && info.recorded_calls == 3, "eager %d recorded %d", info.eager_calls,
              info.recorded_calls);
    TC_CHECKF(info.graphs == 3 && strstr(text, "segment 2") && !strstr(text, "segment 3"), "segments:\n%s", text);
    TC_CHECKF(strstr(text, "relu") && strstr(text, "square"), "both branches compiled:\n%s", text);
    sprintf(site, "test_compile.c:%d", break_line);
    TC_CHECKF(strstr(text, site) != NULL && strstr(text, "tc_item") != NULL, "explain lacks the break site %s:\n%s", site, text);
    tc_scope_end(ctx);
    tc_fn_free(f);
}

TC_TEST(test_fullgraph_error_names_site) {
    tc_compile_options o;
    tc_fn *f;
    tc_tensor *x = randn(1, 8, 0, 0, 5), *y = NULL;
    char site[64];
    memset(&o, 0, sizeof o);
    o.fullgraph = 1;
    f = tc_compile(ctx, branch_fn, NULL, &o);
    tc_scope_begin(ctx);
    TC_CHECK(tc_call(f, &x, &y) == TC_ERR_STATE);
    sprintf(site, "test_compile.c:%d", break_line);
    TC_CHECKF(strstr(tc_fn_error(f), site) != NULL, "error lacks %s: %s", site, tc_fn_error(f));
    TC_CHECK(strstr(tc_fn_error(f), "fullgraph") != NULL);
    TC_CHECK(y != NULL && tc_status(y) == TC_ERR_STATE);
    tc_scope_end(ctx);
    tc_fn_free(f);
}

/* The other break kinds: tc_read, an explicit tc_graph_break, a host call. */
static tc_tensor *host_clip(tc_ctx *c, void *user, tc_tensor *x) {
    /* host code reading and writing plain floats */
    tc_tensor *y = tc_contiguous(c, tc_clone(c, x));
    float *p = (float *)tc_data(y);
    int64_t i, n = tc_numel(y);
    (void)user;
    for (i = 0; i < n; i++) p[i] = p[i] > 2.0f ? 2.0f : p[i];
    return y;
}

static void read_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    float first[1];
    tc_tensor *h = tc_exp(c, in[0]);
    (void)user;
    tc_read(tc_slice(c, h, 0, 0, 1, 1), TC_F32, first, sizeof first); /* break 1 */
    h = tc_mul_scalar(c, h, first[0]);
    tc_graph_break(c);                                                  /* break 2 */
    h = tc_host_call(c, host_clip, NULL, h);                            /* break 3 */
    out[0] = tc_neg(c, h);
}

TC_TEST(test_other_break_kinds) {
    tc_fn *f = tc_compile(ctx, read_fn, NULL, NULL);
    tc_tensor *x = randn(1, 5, 0, 0, 61), *y, *ye;
    tc_explain_info info;
    char text[8192];
    int k;
    tc_scope_begin(ctx);
    read_fn(ctx, NULL, &x, &ye);
    for (k = 0; k < 3; k++) TC_CHECK(tc_call(f, &x, &y) == TC_OK && maxrel(y, ye) < FUSED_TOL);
    tc_explain(f, &info, text, sizeof text);
    TC_CHECKF(info.graph_breaks == 3 && strstr(text, "tc_read") && strstr(text, "tc_graph_break") &&
                  strstr(text, "tc_host_call"), "%s", text);
    TC_CHECK(info.recorded_calls == 2 && info.eager_calls == 0);
    /* every segment after the first call came from the cache */
    TC_CHECKF(strstr(text, "3 segments, 6 runs from cache, 3 compiled") != NULL, "%s", text);
    tc_scope_end(ctx);
    tc_fn_free(f);
}

/* ---- errors inside compiled functions -------------------------------------------- */

static int bad_line;
static void bad_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    (void)user;
    bad_line = __LINE__ + 1;
    out[0] = tc_matmul(c, in[0], in[0]); /* [3,5] @ [3,5]: inner dims differ */
}

static void nested_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    tc_tensor *y = NULL;
    TC_CHECK(tc_call((tc_fn *)user, in, &y) == TC_ERR_STATE);
    out[0] = tc_neg(c, in[0]);
}

TC_TEST(test_errors_in_compiled_functions) {
    tc_fn *f = tc_compile(ctx, bad_fn, NULL, NULL), *g;
    tc_tensor *x = randn(2, 3, 5, 0, 9), *y = NULL;
    char site[64];
    int64_t live;
    tc_scope_begin(ctx);
    live = tc_ctx_live_tensors(ctx);
    TC_CHECK(tc_call(f, &x, &y) == TC_ERR_SHAPE);
    sprintf(site, "test_compile.c:%d", bad_line);
    TC_CHECKF(strstr(tc_error(y), "tc_matmul") && strstr(tc_error(y), site), "message: %s", tc_error(y));
    TC_CHECK(strstr(tc_fn_error(f), site) != NULL);
    TC_CHECK(tc_ctx_live_tensors(ctx) == live + 1); /* only the errored output */
    g = tc_compile(ctx, nested_fn, f, NULL);
    TC_CHECK(tc_call(g, &x, &y) == TC_OK && maxdiff(y, tc_neg(ctx, x)) == 0);
    TC_CHECK(tc_call(NULL, &x, &y) == TC_ERR_NULL);
    TC_CHECK(tc_compile(NULL, bad_fn, NULL, NULL) == NULL);
    tc_scope_end(ctx);
    tc_fn_free(f);
    tc_fn_free(g);
}

/* ---- passes, each on its own ---------------------------------------------------- */

static void simplify_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    int64_t s6[1], s23[2];
    tc_tensor *e = tc_exp(c, in[0]), *y;
    (void)user;
    s6[0] = 6;
    s23[0] = 3;
    s23[1] = 2;
    y = tc_transpose(c, tc_transpose(c, e, 0, 1), 0, 1); /* -> e        */
    y = tc_add_scalar(c, tc_mul_scalar(c, y, 1.0), 0.0);  /* -> e        */
    y = tc_reshape(c, tc_reshape(c, y, 1, s6), 2, s23);   /* one reshape */
    y = tc_cast(c, tc_cast(c, y, TC_F32), TC_F32);        /* -> y        */
    out[0] = tc_neg(c, y);
}

TC_TEST(test_pass_simplify) {
    tc_fn *f = tc_compile(ctx, simplify_fn, NULL, NULL);
    tc_tensor *x = randn(2, 2, 3, 0, 21), *y, *ye;
    tc_explain_info info;
    char text[4096];
    tc_scope_begin(ctx);
    simplify_fn(ctx, NULL, &x, &ye);
    TC_CHECK(tc_call(f, &x, &y) == TC_OK && maxrel(y, ye) < FUSED_TOL);
    TC_CHECK(tc_call(f, &x, &y) == TC_OK && maxrel(y, ye) < FUSED_TOL);
    tc_explain(f, &info, text, sizeof text);
    TC_CHECKF(info.ops == 3, "ops %d, expected exp, reshape, neg:\n%s", info.ops, text);
    TC_CHECK(strstr(text, "permute") == NULL && strstr(text, "mul") == NULL && strstr(text, "cast") == NULL);
    tc_scope_end(ctx);
    tc_fn_free(f);
}

/* fuzz seed 145821: x * 1 -> x handed reshape(x * 1) a transposed input
 * its strides cannot flatten; the view traced on x * 1's own contiguous
 * result failed to plan */
static void reshape_of_identity_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    int64_t flat = -1;
    (void)user;
    out[0] = tc_reshape(c, tc_mul_scalar(c, in[0], 1.0), 1, &flat);
    out[1] = tc_reshape(c, tc_add_scalar(c, tc_transpose(c, in[0], 0, 1), 0.0), 1, &flat);
    out[2] = tc_reshape(c, tc_slice(c, tc_mul_scalar(c, in[0], 1.0), 0, 1, 4, 1), 1, &flat);
}

TC_TEST(test_pass_simplify_keeps_reshape_viewable) {
    int mode, t;
    tc_scope_begin(ctx);
    for (mode = 1; mode <= 3; mode++)
        for (t = 0; t < 2; t++) { /* transposed, then contiguous; and the other way round */
            tc_compile_options o;
            tc_fn *f;
            tc_tensor *xt = tc_transpose(ctx, randn(2, 7, 5, 0, 60 + mode), 0, 1), *xc = randn(2, 5, 7, 0, 70 + mode);
            tc_tensor *order[2], *y[3], *ye[3];
            int call, k;
            memset(&o, 0, sizeof o);
            o.mode = (tc_mode)mode;
            o.num_inputs = 1;
            o.num_outputs = 3;
            f = tc_compile(ctx, reshape_of_identity_fn, NULL, &o);
            order[0] = t ? xc : xt;
            order[1] = t ? xt : xc;
            for (call = 0; call < 4; call++) {
                tc_tensor *x = order[call % 2];
                tc_result r = tc_call(f, &x, y);
                reshape_of_identity_fn(ctx, NULL, &x, ye);
                TC_CHECKF(r == TC_OK, "mode %d, call %d (%s input): %s", mode, call, x == xt ? "transposed" : "contiguous",
                          tc_fn_error(f));
                for (k = 0; k < 3 && r == TC_OK; k++)
                    TC_CHECKF(maxdiff(y[k], ye[k]) == 0, "mode %d, call %d, output %d differs", mode, call, k);
            }
            tc_fn_free(f);
        }
    tc_scope_end(ctx);
}

/* x * 1 -> x must not make a result the caller's input: eager's is new
 * memory, and reduce-overhead handed out the input itself, so writing the
 * result wrote the input */
static void identity_results_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    (void)user;
    out[0] = tc_mul_scalar(c, in[0], 1.0);
    out[1] = tc_add_scalar(c, tc_transpose(c, in[0], 0, 1), 0.0);
    out[2] = tc_select(c, tc_mul_scalar(c, in[0], 1.0), 0, 1); /* fuzz seed 57305 */
}

TC_TEST(test_pass_simplify_keeps_results_fresh) {
    int mode, call, k;
    tc_scope_begin(ctx);
    for (mode = 1; mode <= 3; mode++) {
        tc_compile_options o;
        tc_fn *f;
        tc_tensor *x = randn(2, 4, 6, 0, 80 + mode);
        float x0 = ((const float *)tc_data(x))[0];
        memset(&o, 0, sizeof o);
        o.mode = (tc_mode)mode;
        o.num_inputs = 1;
        o.num_outputs = 3;
        f = tc_compile(ctx, identity_results_fn, NULL, &o);
        for (call = 0; call < 3; call++) {
            tc_tensor *y[3];
            TC_CHECK(tc_call(f, &x, y) == TC_OK);
            for (k = 0; k < 3; k++) {
                TC_CHECKF(tc_data(y[k]) != tc_data(x), "mode %d, call %d: result %d is the input", mode, call, k);
                ((float *)tc_data(y[k]))[0] = 1e30f;
            }
            TC_CHECKF(((const float *)tc_data(x))[0] == x0, "mode %d, call %d: writing a result wrote the input", mode,
                      call);
            ((float *)tc_data(x))[0] = x0;
        }
        tc_fn_free(f);
    }
    tc_scope_end(ctx);
}

/* fuzz_fusion (the float64 reference), seed 68: a scalar argument keeps a
 * 0-d half tensor half (it promotes like a Python float), and the
 * compiled program's header of the scalar's constant lost the mark, so
 * relu(tanh(x) * 0.25 + 0.5) of a 0-d f16 came out f32 */
static void scalar_args_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    (void)user;
    out[0] = tc_add_scalar(c, in[0], 1.0);
    out[1] = tc_relu(c, tc_add_scalar(c, tc_mul_scalar(c, tc_tanh(c, in[0]), 0.25), 0.5));
    out[2] = tc_sub(c, tc_scalar(c, 3.0), in[0]); /* a 0-d tensor, not a scalar argument: f32 */
}

TC_TEST(test_scalar_argument_keeps_0d_half) {
    int mode, h, call, k;
    tc_scope_begin(ctx);
    for (h = 0; h < 2; h++)
        for (mode = 1; mode <= 3; mode++) {
            tc_compile_options o;
            tc_fn *f;
            tc_tensor *x = tc_cast(ctx, tc_scalar(ctx, 0.375 + h), h ? TC_BF16 : TC_F16), *y[3], *ye[3];
            memset(&o, 0, sizeof o);
            o.mode = (tc_mode)mode;
            o.num_inputs = 1;
            o.num_outputs = 3;
            f = tc_compile(ctx, scalar_args_fn, NULL, &o);
            scalar_args_fn(ctx, NULL, &x, ye);
            TC_CHECK(tc_type(ye[0]) == tc_type(x) && tc_type(ye[1]) == tc_type(x) && tc_type(ye[2]) == TC_F32);
            for (call = 0; call < 2; call++) {
                TC_CHECK(tc_call(f, &x, y) == TC_OK);
                for (k = 0; k < 3; k++)
                    TC_CHECKF(tc_type(y[k]) == tc_type(ye[k]) && maxdiff(y[k], ye[k]) == 0,
                              "%s, mode %d, call %d, output %d: dtype %d (eager %d), difference %g", h ? "bf16" : "f16",
                              mode, call, k, (int)tc_type(y[k]), (int)tc_type(ye[k]), maxdiff(y[k], ye[k]));
            }
            tc_fn_free(f);
        }
    tc_scope_end(ctx);
}

/* fuzz_fusion (the float64 reference), seed 13363: softmax(x * 2.65) of a
 * row holding 1e30 was NaN compiled on AVX2 and AVX-512.  The row max came
 * from x * s rounded, and x * s - max was folded into one multiply-add,
 * which for the largest element gives the product's rounding error instead
 * of 0: exp of it overflowed (a max past about 1.5e9).  An offset
 * (x * s + c) and log_softmax are checked beside it. */
static int big_row_kind;
static void big_row_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    (void)user;
    switch (big_row_kind) {
    case 0: out[0] = tc_softmax(c, tc_mul_scalar(c, in[0], 2.65), -1); break;
    case 1: out[0] = tc_softmax(c, tc_add_scalar(c, tc_mul_scalar(c, in[0], 1.7), 0.5), -1); break;
    default: out[0] = tc_log_softmax(c, tc_mul_scalar(c, in[0], 2.65), -1); break;
    }
}

/* |a - b| / (1 + |b|) at worst, equal infinities and NaNs counting as 0;
 * +inf where one is NaN or infinite and the other is not */
static double rel_err_special(tc_tensor *a, tc_tensor *b) {
    int64_t n = tc_numel(b), i;
    float *x = (float *)malloc(sizeof(float) * (size_t)(n ? n : 1)), *y = (float *)malloc(sizeof(float) * (size_t)(n ? n : 1));
    double worst = 0;
    if (tc_numel(a) != n || tc_read(a, TC_F32, x, sizeof(float) * (size_t)n) != TC_OK ||
        tc_read(b, TC_F32, y, sizeof(float) * (size_t)n) != TC_OK)
        n = 0, worst = INFINITY;
    for (i = 0; i < n; i++) {
        double d = x[i] == y[i] || (x[i] != x[i] && y[i] != y[i]) ? 0 : fabs((double)x[i] - y[i]) / (1 + fabs((double)y[i]));
        if (!(d <= worst)) worst = d == d ? d : INFINITY;
    }
    free(x);
    free(y);
    return worst;
}

TC_TEST(test_softmax_of_scaled_large_rows) {
    static const float bigs[] = {3e9f, 1e20f, 1e30f, 1e7f};
    int isa, kind, b, j;
    tc_scope_begin(ctx);
    for (isa = TC_ISA_SCALAR; isa <= TC_ISA_AVX512; isa++) {
        tc_ctx_set_isa(ctx, (tc_isa)isa);
        if ((int)tc_ctx_isa(ctx) != isa) continue;
        for (kind = 0; kind < 3; kind++)
            for (b = 0; b < 4; b++) {
                int64_t sh[2] = {3, 37};
                float x[3 * 37];
                tc_tensor *in, *y, *ye;
                tc_compile_options o;
                tc_fn *f;
                for (j = 0; j < 3 * 37; j++) x[j] = (float)((j * 37 % 11) - 5) * 0.5f;
                x[5] = bigs[b];                          /* row 0: one large element */
                x[37 + 20] = bigs[b], x[37 + 21] = -INFINITY; /* row 1: and a masked one */
                x[74 + 3] = bigs[b], x[74 + 4] = bigs[b] * (1 - 1.0f / 1024); /* row 2: two near the top */
                in = tc_from_data(ctx, TC_F32, 2, sh, x);
                memset(&o, 0, sizeof o);
                o.num_inputs = 1;
                o.num_outputs = 1;
                big_row_kind = kind;
                f = tc_compile(ctx, big_row_fn, NULL, &o);
                big_row_fn(ctx, NULL, &in, &ye);
                TC_CHECK(tc_call(f, &in, &y) == TC_OK);
                TC_CHECKF(rel_err_special(y, ye) < FUSED_TOL, "%s, kind %d, max %g: compiled differs from eager by %g",
                          tc_isa_name(tc_ctx_isa(ctx)), kind, bigs[b], rel_err_special(y, ye));
                tc_fn_free(f);
            }
    }
    tc_ctx_set_isa(ctx, TC_ISA_AUTO);
    tc_scope_end(ctx);
}

static void fold_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    (void)user;
    /* sqrt(arange) * 2 depends on no input: computed once, at compile time */
    out[0] = tc_add(c, in[0], tc_mul_scalar(c, tc_sqrt(c, tc_arange(c, TC_F32, 0, (double)tc_dim(in[0], 0), 1)), 2.0));
}

TC_TEST(test_pass_fold) {
    tc_fn *f = tc_compile(ctx, fold_fn, NULL, NULL);
    tc_tensor *x = randn(1, 10, 0, 0, 22), *y, *ye;
    tc_explain_info info;
    char text[4096];
    tc_scope_begin(ctx);
    fold_fn(ctx, NULL, &x, &ye);
    TC_CHECK(tc_call(f, &x, &y) == TC_OK && maxrel(y, ye) < FUSED_TOL);
    TC_CHECK(tc_call(f, &x, &y) == TC_OK && maxrel(y, ye) < FUSED_TOL);
    tc_explain(f, &info, text, sizeof text);
    TC_CHECKF(info.ops == 2 && strstr(text, "from_data") && !strstr(text, "sqrt") && !strstr(text, "arange"),
              "expected add(input, from_data):\n%s", text);
    tc_scope_end(ctx);
    tc_fn_free(f);
}

TC_TEST(test_pass_decompose) {
    block m = make_block(32, 4);
    tc_compile_options o;
    tc_fn *f;
    tc_tensor *x = randn(3, 2, 8, 32, 23), *y, *ye;
    char text[32768];
    memset(&o, 0, sizeof o);
    o.decompose = 1;
    f = tc_compile(ctx, block_fn, &m, &o);
    tc_scope_begin(ctx);
    block_fn(ctx, &m, &x, &ye);
    TC_CHECK(tc_call(f, &x, &y) == TC_OK);
    TC_CHECKF(maxdiff(y, ye) < 1e-4, "decomposed differs by %g", maxdiff(y, ye));
    TC_CHECK(tc_call(f, &x, &y) == TC_OK && maxdiff(y, ye) < 1e-4);
    tc_explain(f, NULL, text, sizeof text);
    TC_CHECKF(!strstr(text, "layer_norm") && !strstr(text, "gelu_tanh") && strstr(text, "rsqrt") && strstr(text, "tanh"),
              "composites left:\n%s", text);
    tc_scope_end(ctx);
    tc_fn_free(f);
}

/* gelu (erf), batch_norm, causal and masked attention, all decomposed */
static void composite_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    tc_tensor *x = in[0], *mean = tc_select(c, tc_select(c, x, 0, 0), 1, 0);            /* [4]: x [2,4,6] */
    tc_tensor *var = tc_add_scalar(c, tc_abs(c, tc_select(c, tc_select(c, x, 0, 1), 1, 1)), 0.5);
    tc_tensor *bn = tc_batch_norm(c, x, mean, var, tc_exp(c, mean), var, 1e-5);
    tc_tensor *mask = tc_gt_scalar(c, tc_slice(c, tc_select(c, x, 0, 0), 1, 0, 4, 1), -0.5); /* [4,4] */
    tc_tensor *a1 = tc_scaled_dot_product_attention(c, bn, x, x, NULL, 1, 0.0);
    tc_tensor *a2 = tc_scaled_dot_product_attention(c, x, bn, bn, mask, 0, 0.25);
    (void)user;
    out[0] = tc_add(c, tc_gelu(c, a1), a2);
}

TC_TEST(test_pass_decompose_more) {
    tc_compile_options o;
    tc_fn *f;
    tc_tensor *x = randn(3, 2, 4, 6, 24), *y, *ye;
    char text[32768];
    memset(&o, 0, sizeof o);
    o.decompose = 1;
    f = tc_compile(ctx, composite_fn, NULL, &o);
    tc_scope_begin(ctx);
    composite_fn(ctx, NULL, &x, &ye);
    TC_CHECK(tc_call(f, &x, &y) == TC_OK);
    TC_CHECKF(maxdiff(y, ye) < 1e-4, "decomposed differs by %g (%s)", maxdiff(y, ye), tc_fn_error(f));
    TC_CHECK(tc_call(f, &x, &y) == TC_OK && maxdiff(y, ye) < 1e-4);
    tc_explain(f, NULL, text, sizeof text);
    TC_CHECKF(!strstr(text, "scaled_dot") && !strstr(text, "batch_norm") && !strstr(text, " gelu(") &&
                  !strstr(text, "softmax") && strstr(text, "erf") && strstr(text, "where") && strstr(text, "matmul"),
              "composites left:\n%s", text);
    tc_scope_end(ctx);
    tc_fn_free(f);
    {
        /* the erf primitive itself, against libm in double */
        tc_tensor *z = tc_mul_scalar(ctx, randn(1, 1000, 0, 0, 25), 3.0), *e = tc_erf(ctx, z);
        int64_t i, n = tc_numel(z);
        double worst = 0;
        for (i = 0; i < n; i++) {
            double d = fabs(tc_get(e, &i) - erf(tc_get(z, &i)));
            worst = d > worst ? d : worst;
        }
        TC_CHECKF(worst < 1e-6, "erf error %g", worst);
    }
}

/* ---- every op family, compiled vs eager ------------------------------------------ */

static const int ax1[1] = {1};
static const int ax02[2] = {0, 2};
static const int perm201[3] = {2, 0, 1};
static const int64_t s543[3] = {5, 4, 3};
static const int64_t s12x5[2] = {12, 5};
static const int64_t pad4[4] = {1, 2, -1, 0};

/* Each case maps x, w ([4,3,5] f32) to one result. */
#define OPC(name, expr) \
    static tc_tensor *name(tc_ctx *c, tc_tensor *x, tc_tensor *w) { (void)w; return expr; }
OPC(oc_unary, tc_sigmoid(c, tc_gelu(c, tc_softplus(c, tc_clamp(c, tc_floor(c, tc_mul_scalar(c, x, 3.0)), -2.0, 2.0), 1.0, 20.0))))
OPC(oc_unary2, tc_add(c, tc_silu(c, tc_abs(c, x)), tc_log(c, tc_add_scalar(c, tc_square(c, x), 1.0))))
OPC(oc_trig, tc_add(c, tc_sin(c, x), tc_mul(c, tc_cos(c, x), tc_tanh(c, tc_rsqrt(c, tc_add_scalar(c, tc_exp(c, x), 1.0))))))
OPC(oc_binary, tc_pow(c, tc_maximum(c, tc_abs(c, x), tc_minimum(c, w, tc_scalar(c, 0.5))), tc_div_scalar(c, w, 4.0)))
OPC(oc_compare, tc_where(c, tc_ge(c, x, w), tc_cast(c, tc_lt_scalar(c, x, 0.0), TC_F32), tc_sub(c, x, tc_ceil(c, w))))
OPC(oc_int, tc_cast(c, tc_add(c, tc_cast(c, tc_mul_scalar(c, x, 10.0), TC_I32), tc_neg(c, tc_cast(c, w, TC_I32))), TC_F32))
OPC(oc_half, tc_cast(c, tc_add(c, tc_cast(c, x, TC_F16), tc_cast(c, w, TC_BF16)), TC_F32))
OPC(oc_reduce, tc_add(c, tc_sum(c, x, 1, ax1, 1), tc_mul(c, tc_var(c, w, 1, ax1, 1, 1), tc_mean(c, x, 1, ax1, 1))))
OPC(oc_reduce2, tc_add(c, tc_cast(c, tc_argmax(c, x, 2, ax02, 0), TC_F32), tc_sub(c, tc_max(c, w, 2, ax02, 0), tc_min(c, x, 2, ax02, 0))))
OPC(oc_rows, tc_add(c, tc_softmax(c, x, 1), tc_log_softmax(c, w, 0)))
OPC(oc_norms, tc_add(c, tc_layer_norm(c, x, 2, NULL, NULL, 1e-5), tc_rms_norm(c, w, 1, NULL, 1e-6)))
OPC(oc_matmul, tc_matmul(c, x, tc_transpose(c, w, 1, 2)))
OPC(oc_linear, tc_linear(c, x, tc_select(c, w, 0, 0), tc_select(c, tc_select(c, w, 0, 1), 1, 0)))
OPC(oc_views, tc_add(c, tc_contiguous(c, tc_permute(c, x, perm201)), tc_expand(c, tc_slice(c, tc_select(c, w, 2, 1), 0, 0, 1, 1), 3, s543)))
OPC(oc_pad, tc_pad(c, tc_squeeze(c, tc_unsqueeze(c, x, 0), 0), 4, pad4, 7.0))
OPC(oc_attn, tc_scaled_dot_product_attention(c, x, w, w, NULL, 1, 0.0))
OPC(oc_attn_mask, tc_scaled_dot_product_attention(c, x, w, x, tc_gt_scalar(c, tc_slice(c, tc_select(c, w, 2, 0), 0, 0, 3, 1), -1.0), 0, 0.3))
OPC(oc_flatten, tc_add(c, tc_flatten(c, x, 0, 1), tc_reshape(c, w, 2, s12x5)))
OPC(oc_pool, tc_adaptive_avg_pool2d(c, tc_relu(c, x), 2, 2))
OPC(oc_bn, tc_batch_norm(c, tc_unsqueeze(c, x, 0), tc_select(c, tc_select(c, w, 2, 0), 1, 0), tc_add_scalar(c, tc_abs(c, tc_select(c, tc_select(c, w, 2, 1), 1, 1)), 0.5), NULL, NULL, 1e-5))
#undef OPC

static tc_tensor *oc_concat(tc_ctx *c, tc_tensor *x, tc_tensor *w) {
    tc_tensor *xs[3];
    xs[0] = x;
    xs[1] = w;
    xs[2] = tc_neg(c, x);
    return tc_concat(c, 3, xs, 1);
}

static tc_tensor *oc_chunk(tc_ctx *c, tc_tensor *x, tc_tensor *w) {
    tc_tensor *p[3];
    tc_chunk(c, tc_add(c, x, w), 3, 1, p, 3);
    return tc_sub(c, p[0], p[2]);
}

static tc_tensor *oc_index(tc_ctx *c, tc_tensor *x, tc_tensor *w) {
    int32_t idx[4] = {2, 0, 1, 2};
    int64_t n = 4;
    tc_tensor *i = tc_from_data(c, TC_I32, 1, &n, idx);
    (void)w;
    return tc_add(c, tc_index_select(c, x, 1, i), tc_embedding(c, tc_select(c, x, 0, 3), tc_reshape(c, i, 1, &n)));
}

static tc_tensor *oc_misc(tc_ctx *c, tc_tensor *x, tc_tensor *w) {
    int32_t idx[60];
    int64_t sz[2], k;
    tc_pool2d_opts po;
    tc_tensor *gi, *p[2], *cmp;
    for (k = 0; k < 60; k++) idx[k] = (int32_t)((k * 7) % 3);
    gi = tc_from_data(c, TC_I32, 3, tc_shape(x), idx);
    sz[0] = 1;
    sz[1] = 2;
    tc_split_sizes(c, w, 2, sz, 1, p);
    memset(&po, 0, sizeof po);
    po.kernel[0] = po.kernel[1] = 2;
    po.padding[1] = 1;
    po.ceil_mode = 1;
    cmp = tc_cast(c, tc_add(c, tc_cast(c, tc_le(c, x, w), TC_I32), tc_cast(c, tc_ne(c, tc_eq(c, x, x), tc_gt_scalar(c, w, 0.0)), TC_I32)), TC_F32);
    return tc_add(c, tc_add(c, tc_gather(c, x, 1, gi), cmp),
                  tc_add(c, tc_sum(c, tc_avg_pool2d(c, tc_reciprocal(c, tc_sqrt(c, tc_add_scalar(c, tc_abs(c, x), 1.0))), &po), 0, NULL, 0),
                         tc_sum(c, tc_sub(c, p[0], tc_slice(c, p[1], 1, 0, 1, 1)), 0, NULL, 0)));
}

/* depthwise 3x3 conv (groups 4, padding 1) then a 2x2 max pool, stride 1 */
static tc_tensor *oc_conv(tc_ctx *c, tc_tensor *x, tc_tensor *w) {
    tc_pool2d_opts po;
    tc_conv2d_opts co;
    tc_tensor *k = tc_slice(c, tc_unsqueeze(c, w, 1), 3, 0, 3, 1); /* [4,1,3,3] */
    memset(&po, 0, sizeof po);
    memset(&co, 0, sizeof co);
    po.kernel[0] = po.kernel[1] = 2;
    po.stride[0] = po.stride[1] = 1;
    co.padding[0] = co.padding[1] = 1;
    co.groups = 4;
    return tc_max_pool2d(c, tc_conv2d(c, tc_unsqueeze(c, x, 0), k, NULL, &co), &po);
}

typedef struct op_case {
    const char *name;
    tc_tensor *(*fn)(tc_ctx *c, tc_tensor *x, tc_tensor *w);
    int tuned; /* has a contraction whose microkernel max-autotune may swap */
} op_case;

static const op_case op_cases[] = {
    {"unary", oc_unary, 0}, {"unary2", oc_unary2, 0}, {"trig", oc_trig, 0}, {"binary", oc_binary, 0},
    {"compare", oc_compare, 0}, {"int", oc_int, 0}, {"half", oc_half, 0}, {"reduce", oc_reduce, 0},
    {"reduce2", oc_reduce2, 0}, {"rows", oc_rows, 0}, {"norms", oc_norms, 0}, {"matmul", oc_matmul, 1},
    {"linear", oc_linear, 1}, {"views", oc_views, 0}, {"pad", oc_pad, 0}, {"attn", oc_attn, 0},
    {"attn_mask", oc_attn_mask, 0}, {"flatten", oc_flatten, 0}, {"pool", oc_pool, 0}, {"bn", oc_bn, 0},
    {"concat", oc_concat, 0}, {"chunk", oc_chunk, 0}, {"index", oc_index, 0}, {"conv", oc_conv, 1},
    {"misc", oc_misc, 0}};

static const op_case *cur_case;
static void case_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    (void)user;
    out[0] = cur_case->fn(c, in[0], in[1]);
}

TC_TEST(test_every_op_family_compiled_equals_eager) {
    size_t k;
    int mode;
    tc_tensor *in[2];
    in[0] = randn(3, 4, 3, 5, 31);
    in[1] = randn(3, 4, 3, 5, 32);
    /* modes 0-2 fused (within FUSED_TOL of eager); 3-5 the same modes op by
     * op, which must match eager exactly, but for a contraction under
     * max-autotune (5): it keeps the fastest K blocking and microkernel of
     * every ISA level, and x86's 128-bit one rounds a product and a sum
     * apart (a few ulp) */
    for (mode = 0; mode < 6; mode++)
        for (k = 0; k < sizeof op_cases / sizeof op_cases[0]; k++) {
            tc_compile_options o;
            tc_fn *f;
            tc_tensor *ye, *y;
            int call;
            memset(&o, 0, sizeof o);
            o.num_inputs = 2;
            o.mode = mode % 3 == 0 ? TC_MODE_DEFAULT : mode % 3 == 1 ? TC_MODE_REDUCE_OVERHEAD : TC_MODE_MAX_AUTOTUNE;
            o.fusion = mode >= 3 ? -1 : 0;
            cur_case = &op_cases[k];
            f = tc_compile(ctx, case_fn, NULL, &o);
            tc_scope_begin(ctx);
            ye = cur_case->fn(ctx, in[0], in[1]);
            TC_CHECKF(tc_status(ye) == TC_OK, "%s: eager failed: %s", cur_case->name, tc_error(ye));
            for (call = 0; call < 3; call++) {
                tc_result r = tc_call(f, in, &y);
                TC_CHECKF(r == TC_OK, "%s (mode %d) call %d: %s", cur_case->name, mode, call, tc_fn_error(f));
                if (mode == 5 && cur_case->tuned)
                    TC_CHECKF(maxrel(y, ye) < 1e-6, "%s (max-autotune, op by op) call %d: differs from eager by %g",
                              cur_case->name, call, maxrel(y, ye));
                else if (mode >= 3)
                    TC_CHECKF(maxdiff(y, ye) == 0, "%s (mode %d, op by op) call %d: differs from eager by %g",
                              cur_case->name, mode, call, maxdiff(y, ye));
                else
                    TC_CHECKF(maxrel(y, ye) < FUSED_TOL, "%s (mode %d) call %d: differs from eager by %g (relative)",
                              cur_case->name, mode, call, maxrel(y, ye));
            }
            tc_scope_end(ctx);
            tc_fn_free(f);
        }
}

/* ---- one tc_fn, two threads: the second is refused, nothing breaks ---------- */

#if !defined(_WIN32)
#include <pthread.h>
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int entered, tried;
} gate;
static gate g_gate;

static void gated_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    (void)user;
    pthread_mutex_lock(&g_gate.mu);
    g_gate.entered = 1;
    pthread_cond_broadcast(&g_gate.cv);
    while (!g_gate.tried) pthread_cond_wait(&g_gate.cv, &g_gate.mu);
    pthread_mutex_unlock(&g_gate.mu);
    out[0] = tc_exp(c, in[0]);
}

typedef struct call_arg {
    tc_fn *f;
    tc_tensor *x, *y;
    tc_result r;
} call_arg;

static void *call_thread(void *p) {
    call_arg *a = (call_arg *)p;
    a->r = tc_call(a->f, &a->x, &a->y);
    return NULL;
}

TC_TEST(test_concurrent_call_refused) {
    tc_fn *f = tc_compile(ctx, gated_fn, NULL, NULL);
    call_arg a;
    pthread_t th;
    tc_tensor *y2 = NULL;
    memset(&g_gate, 0, sizeof g_gate);
    pthread_mutex_init(&g_gate.mu, NULL);
    pthread_cond_init(&g_gate.cv, NULL);
    a.f = f;
    a.x = randn(1, 16, 0, 0, 41);
    a.y = NULL;
    tc_scope_begin(ctx);
    TC_CHECK(pthread_create(&th, NULL, call_thread, &a) == 0);
    pthread_mutex_lock(&g_gate.mu);
    while (!g_gate.entered) pthread_cond_wait(&g_gate.cv, &g_gate.mu);
    pthread_mutex_unlock(&g_gate.mu);
    /* the other thread is inside tc_call (tracing): this call must refuse
     * without touching the context */
    TC_CHECK(tc_call(f, &a.x, &y2) == TC_ERR_STATE);
    TC_CHECK(y2 == NULL);
    pthread_mutex_lock(&g_gate.mu);
    g_gate.tried = 1;
    pthread_cond_broadcast(&g_gate.cv);
    pthread_mutex_unlock(&g_gate.mu);
    pthread_join(th, NULL);
    TC_CHECK(a.r == TC_OK && maxrel(a.y, tc_exp(ctx, a.x)) < FUSED_TOL);
    TC_CHECK(tc_call(f, &a.x, &y2) == TC_OK); /* usable again afterwards */
    tc_scope_end(ctx);
    pthread_cond_destroy(&g_gate.cv);
    pthread_mutex_destroy(&g_gate.mu);
    tc_fn_free(f);
}
#endif

TC_TEST(test_dot_dump) {
    tc_fn *f = tc_compile(ctx, dup_fn, NULL, NULL);
    tc_tensor *x = randn(2, 3, 5, 0, 7), *y;
    char dot[2048];
    size_t need;
    tc_scope_begin(ctx);
    TC_CHECK(tc_fn_dot(f, 0, dot, sizeof dot) == 0); /* nothing compiled yet */
    TC_CHECK(tc_call(f, &x, &y) == TC_OK);
    need = tc_fn_dot(f, 0, NULL, 0);
    TC_CHECK(need > 0 && need < sizeof dot && tc_fn_dot(f, 0, dot, sizeof dot) == need);
    TC_CHECK(strncmp(dot, "digraph", 7) == 0 && strstr(dot, "exp") && strstr(dot, "n0 -> n1") && strstr(dot, "out0"));
    TC_CHECK(tc_fn_dot(f, 1, dot, sizeof dot) == 0 && dot[0] == 0);
    /* once the cached entry has its program, the fused kernel is a cluster
     * holding exp and add */
    TC_CHECK(tc_call(f, &x, &y) == TC_OK);
    tc_fn_dot(f, 0, dot, sizeof dot);
    TC_CHECKF(tc_ctx_isa(ctx) == TC_ISA_NONE ||
                  (strstr(dot, "subgraph cluster_k0") && strstr(dot, "    n1;") && strstr(dot, "    n2;")),
              "%s", dot);
    tc_scope_end(ctx);
    tc_fn_free(f);
}

/* ---- regressions found by review ----------------------------------------------- */

/* A chain rewrite must not read node inputs from an array the rewrite grows
 * (31 nodes put the second permute at the capacity boundary). */
static void long_chain_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    static const int p120[3] = {1, 2, 0};
    tc_tensor *x = in[0];
    int k;
    (void)user;
    for (k = 0; k < 31; k++) x = tc_add_scalar(c, x, 0.5);
    out[0] = tc_permute(c, tc_permute(c, x, p120), p120);
}

/* 1/n is a float attribute: a fit from n = 4 and 8 "verified" again at n = 4
 * proves nothing and must not be trusted at n = 16. */
static void mean_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    int ax = 0;
    (void)user;
    out[0] = tc_mul_scalar(c, tc_sum(c, in[0], 1, &ax, 0), 1.0 / (double)tc_dim(in[0], 0));
}

static void swap_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    out[0] = tc_matmul(c, in[0], (tc_tensor *)user);
}

static tc_tensor *g_kept;
static void keep_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    (void)user;
    g_kept = tc_persist(tc_neg(c, in[0])); /* a traced value leaving the function */
    out[0] = tc_exp(c, in[0]);
}

/* a view made before a break still shares memory with its base after it */
static void view_fill_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    int64_t s[2] = {2, 2};
    tc_tensor *buf = tc_zeros(c, TC_F32, 2, s), *row = tc_select(c, buf, 0, 1);
    float *p = (float *)tc_data(buf); /* the break */
    (void)user;
    p[2] = 7.0f;
    p[3] = 8.0f;
    out[0] = tc_add(c, in[0], row);
}

TC_TEST(test_review_regressions) {
    tc_tensor *y, *ye, *x;
    tc_fn *f;
    int64_t n, s2[2] = {2, 2};
    float swap[4] = {0, 1, 1, 0};
    tc_compile_options o;
    tc_scope_begin(ctx);
    /* long chain */
    f = tc_compile(ctx, long_chain_fn, NULL, NULL);
    x = randn(3, 2, 3, 4, 71);
    long_chain_fn(ctx, NULL, &x, &ye);
    TC_CHECK(tc_call(f, &x, &y) == TC_OK && maxdiff(y, ye) < 1e-5);
    tc_fn_free(f);
    /* verification at a fit size */
    f = tc_compile(ctx, mean_fn, NULL, NULL);
    for (n = 0; n < 4; n++) {
        static const int64_t sizes[4] = {4, 8, 4, 16};
        int64_t s[2];
        s[0] = sizes[n];
        s[1] = 3;
        x = tc_ones(ctx, TC_F32, 2, s);
        mean_fn(ctx, NULL, &x, &ye);
        TC_CHECK(tc_call(f, &x, &y) == TC_OK);
        TC_CHECKF(maxdiff(y, ye) < 1e-6, "n=%d: compiled differs by %g", (int)s[0], maxdiff(y, ye));
    }
    tc_fn_free(f);
    /* reduce-overhead: the output fed back as the next input */
    memset(&o, 0, sizeof o);
    o.mode = TC_MODE_REDUCE_OVERHEAD;
    f = tc_compile(ctx, swap_fn, tc_from_data(ctx, TC_F32, 2, s2, swap), &o);
    {
        int64_t s12[2] = {1, 2};
        tc_tensor *cur = tc_reshape(ctx, tc_arange(ctx, TC_F32, 1, 3, 1), 2, s12);
        int step;
        for (step = 0; step < 5; step++) {
            int64_t i0[2] = {0, 0};
            TC_CHECK(tc_call(f, &cur, &y) == TC_OK);
            TC_CHECKF(tc_get(y, i0) == (step % 2 ? 1.0 : 2.0), "step %d: y[0] = %g", step, tc_get(y, i0));
            cur = y;
        }
    }
    tc_fn_free(f);
    /* a traced value kept past the function is an error, and breaks later */
    f = tc_compile(ctx, keep_fn, NULL, NULL);
    x = randn(1, 4, 0, 0, 72);
    TC_CHECK(tc_call(f, &x, &y) == TC_OK);
    TC_CHECK(tc_status(g_kept) == TC_ERR_STATE && strstr(tc_error(g_kept), "kept past") != NULL);
    {
        tc_fn *g = tc_compile(ctx, branch_fn, NULL, NULL);
        TC_CHECK(tc_call(g, &x, &y) == TC_OK);
        tc_fn_free(g);
    }
    tc_free(g_kept);
    tc_fn_free(f);
    /* view before a break */
    f = tc_compile(ctx, view_fill_fn, NULL, NULL);
    x = randn(1, 2, 0, 0, 73);
    view_fill_fn(ctx, NULL, &x, &ye);
    TC_CHECK(tc_call(f, &x, &y) == TC_OK && maxrel(y, ye) < FUSED_TOL);
    TC_CHECK(tc_call(f, &x, &y) == TC_OK && maxrel(y, ye) < FUSED_TOL);
    tc_fn_free(f);
    tc_scope_end(ctx);
}

/* Modes and flags are recorded and observable. */
TC_TEST(test_modes_observable) {
    tc_compile_options o;
    tc_fn *f;
    tc_explain_info info;
    char text[2048];
    memset(&o, 0, sizeof o);
    o.mode = TC_MODE_REDUCE_OVERHEAD;
    f = tc_compile(ctx, dup_fn, NULL, &o);
    tc_explain(f, &info, text, sizeof text);
    TC_CHECK(info.mode == TC_MODE_REDUCE_OVERHEAD && strstr(text, "reduce-overhead") != NULL);
    tc_fn_free(f);
    o.mode = TC_MODE_MAX_AUTOTUNE;
    o.fullgraph = 1;
    f = tc_compile(ctx, dup_fn, NULL, &o);
    tc_explain(f, &info, text, sizeof text);
    TC_CHECK(info.mode == TC_MODE_MAX_AUTOTUNE && info.fullgraph == 1 && strstr(text, "fullgraph") != NULL);
    {
        /* the first call measures each launch's variants and keeps the
         * fastest (or reads what an earlier process stored on disk) */
        tc_tensor *x = randn(2, 64, 64, 0, 51), *y;
        tc_scope_begin(ctx);
        TC_CHECK(tc_call(f, &x, &y) == TC_OK && tc_call(f, &x, &y) == TC_OK);
        TC_CHECK(maxdiff(y, tc_mul_scalar(ctx, tc_exp(ctx, x), 2.0)) < 1e-5);
        tc_explain(f, &info, text, sizeof text);
        TC_CHECKF(info.tuned_launches + info.tuned_cached == info.kernels, "tuned %d + cached %d of %d\n%s",
                  info.tuned_launches, info.tuned_cached, info.kernels, text);
        TC_CHECK(strstr(text, "max-autotune:") != NULL);
        tc_scope_end(ctx);
    }
    tc_fn_free(f);
}

/* A program built over dirty heap memory: every field of a launch starts
 * known (an uninitialised tuned tile of 100 floats once broke row
 * reductions; an uninitialised thread cap could serialise a launch). */
static void dirty_row_fn(tc_ctx *c, void *u, tc_tensor *const *in, tc_tensor **out) {
    int ax = 1;
    (void)u;
    out[0] = tc_sum(c, tc_mul_scalar(c, in[0], 2.0), 1, &ax, 0);
}

TC_TEST(test_program_over_dirty_heap) {
    int64_t shape[2] = {3, 5000}, sz;
    tc_tensor *x = tc_rand_uniform(ctx, 2, shape, 0.0, 1.0, 5), *y, *ye;
    tc_fn *f;
    int round;
    for (round = 0; round < 3; round++) {
        void *junk[400];
        int k = 0;
        /* freed blocks of many sizes, every int in them 100 */
        for (sz = 256; sz <= 256 * 400 && k < 400; sz += 256, k++) {
            int *p = (int *)malloc((size_t)sz);
            int64_t i;
            for (i = 0; p && i < sz / (int64_t)sizeof(int); i++) p[i] = 100;
            junk[k] = p;
        }
        while (k > 0) free(junk[--k]);
        f = tc_compile(ctx, dirty_row_fn, NULL, NULL);
        TC_CHECK(tc_call(f, &x, &y) == TC_OK && tc_call(f, &x, &y) == TC_OK);
        dirty_row_fn(ctx, NULL, &x, &ye);
        TC_CHECKF(tct_maxrel(y, ye) < 1e-5, "round %d: compiled differs from eager by %g", round, tct_maxrel(y, ye));
        tc_fn_free(f);
    }
}

/* A concat of more tensors than one launch holds (13 > TC__MAX_IN) compiles
 * as a tree of concats with the same result (a GPT's per-layer K/V). */
static void wide_concat_fn(tc_ctx *c, void *u, tc_tensor *const *in, tc_tensor **out) {
    tc_tensor *parts[13];
    int k;
    (void)u;
    for (k = 0; k < 13; k++) parts[k] = tc_mul_scalar(c, tc_slice(c, in[0], 0, k, k + 1, 1), 1.0 + k);
    out[0] = tc_concat(c, 13, parts, 0);
}

TC_TEST(test_wide_concat_compiles) {
    int64_t shape[2] = {13, 7};
    tc_tensor *x = tc_rand_uniform(ctx, 2, shape, -1.0, 1.0, 3), *y = NULL, *ye;
    tc_fn *f = tc_compile(ctx, wide_concat_fn, NULL, NULL);
    tc_explain_info info;
    TC_CHECKF(tc_call(f, &x, &y) == TC_OK && tc_call(f, &x, &y) == TC_OK, "%s", tc_fn_error(f));
    wide_concat_fn(ctx, NULL, &x, &ye);
    TC_CHECK(tct_maxrel(y, ye) == 0);
    TC_CHECK(tc_explain(f, &info, NULL, 0) == TC_OK && info.eager_calls == 0);
    tc_fn_free(f);
}

/* A default-mode call's arena of intermediates comes from the context's
 * block cache and goes back to it (tc__block_get / tc__block_put), so the
 * next call's arena is pages already mapped: a fresh malloc of a large
 * block is often a new mapping faulted in page by page (ViT-S at batch 32:
 * 170 ms a call against reduce-overhead's 150 before).  With the cache off
 * (cache_bytes < 0) the arena is malloc's again. */
static void arena_fn(tc_ctx *c, void *u, tc_tensor *const *in, tc_tensor **out) {
    (void)u; /* the relu's [256, 512] result lives in the arena between the matmuls */
    out[0] = tc_matmul(c, tc_relu(c, tc_matmul(c, in[0], in[1])), in[1]);
}
/* Scopes around a compiled function are tcompile's own (issue 35, defect
 * 1): an unbalanced tc_scope_end inside the function gets TC_ERR_STATE and
 * frees nothing the trace or the eager fallback still uses (it freed the
 * traced inputs before: a use after free, caught by the ASan build); an
 * unbalanced tc_scope_begin leaves no open scope behind the call and its
 * result is handed out, not freed. */
typedef struct scope_abuse {
    int end_codes[4], nend, begin;
} scope_abuse;

static void scope_abuse_fn(tc_ctx *c, void *u, tc_tensor *const *in, tc_tensor **out) {
    scope_abuse *a = (scope_abuse *)u;
    tc_tensor *r = tc_relu(c, in[0]);
    if (a->begin) tc_scope_begin(c);
    else if (a->nend < 4) a->end_codes[a->nend++] = (int)tc_scope_end(c);
    out[0] = tc_add(c, r, in[0]);
}

TC_TEST(test_scopes_around_compiled_functions) {
    scope_abuse a;
    tc_compile_options o;
    tc_fn *f;
    tc_tensor *x, *y, *ye;
    int k, depth, t;
    memset(&a, 0, sizeof a);
    memset(&o, 0, sizeof o);
    o.recompile_limit = 1; /* the second shape runs eagerly */
    o.dynamic = -1;
    f = tc_compile(ctx, scope_abuse_fn, &a, &o);
    tc_scope_begin(ctx);
    depth = tc_scope_depth(ctx);
    for (t = 5; t <= 6; t++) {
        x = randn(2, 3, t, 1, (uint64_t)t);
        ye = tc_add(ctx, tc_relu(ctx, x), x);
        TC_CHECK(tc_call(f, &x, &y) == TC_OK);
        TC_CHECKF(maxdiff(ye, y) < 1e-6, "t=%d: %s", t, tc_fn_error(f));
        TC_CHECKF(tc_scope_depth(ctx) == depth, "t=%d: depth %d after the call, %d before", t, tc_scope_depth(ctx), depth);
    }
    TC_CHECKF(a.nend == 2, "the function ran %d times (a trace, an eager call)", a.nend);
    for (k = 0; k < a.nend; k++)
        TC_CHECKF(a.end_codes[k] == TC_ERR_STATE, "tc_scope_end %d inside the function gave %d", k, a.end_codes[k]);
    tc_fn_free(f);
    a.begin = 1; /* now an unbalanced begin */
    f = tc_compile(ctx, scope_abuse_fn, &a, &o);
    for (t = 5; t <= 6; t++) {
        x = randn(2, 3, t, 1, (uint64_t)t + 10);
        ye = tc_add(ctx, tc_relu(ctx, x), x);
        TC_CHECK(tc_call(f, &x, &y) == TC_OK);
        TC_CHECKF(tc_scope_depth(ctx) == depth, "begin, t=%d: depth %d after the call, %d before", t,
                  tc_scope_depth(ctx), depth);
        TC_CHECKF(tc_status(y) == TC_OK && maxdiff(ye, y) < 1e-6, "begin, t=%d: %s", t, tc_fn_error(f));
    }
    tc_scope_end(ctx);
    tc_fn_free(f);
}

/* An output of another context is refused, traced or eager (issue 35,
 * defect 8: tc_call returned TC_OK with it; in reduce-overhead later calls
 * made tensors in the other context). */
static tc_tensor *g_foreign;
static void foreign_fn(tc_ctx *c, void *u, tc_tensor *const *in, tc_tensor **out) {
    out[0] = tc_relu(c, in[0]);
    out[1] = *(int *)u ? g_foreign : tc_neg(c, in[0]);
}

TC_TEST(test_output_of_another_context) {
    tc_ctx *other = tc_ctx_create(NULL);
    int64_t s[1] = {4};
    int mode;
    g_foreign = tc_zeros(other, TC_F32, 1, s);
    for (mode = 0; mode < 3; mode++) {
        tc_compile_options o;
        tc_fn *f;
        tc_tensor *x, *y[2];
        int k, give = 1;
        memset(&o, 0, sizeof o);
        o.num_outputs = 2;
        o.mode = mode == 1 ? TC_MODE_REDUCE_OVERHEAD : TC_MODE_DEFAULT;
        o.recompile_limit = mode == 2 ? 1 : 0;
        o.dynamic = -1;
        f = tc_compile(ctx, foreign_fn, &give, &o);
        tc_scope_begin(ctx);
        if (mode == 2) { /* one signature cached, then the others past the limit run eagerly */
            give = 0;
            x = randn(1, 3, 1, 1, 9);
            TC_CHECK(tc_call(f, &x, y) == TC_OK);
            give = 1;
        }
        for (k = 0; k < 3; k++) {
            x = randn(1, 4 + (mode == 2 ? k : 0), 1, 1, (uint64_t)k);
            TC_CHECKF(tc_call(f, &x, y) == TC_ERR_INVALID_ARG, "mode %d call %d", mode, k);
            TC_CHECKF(strstr(tc_fn_error(f), "outputs[1] belongs to another context") != NULL, "mode %d call %d: %s",
                      mode, k, tc_fn_error(f));
            TC_CHECK(tc_status(y[1]) != TC_OK && tc_context(y[1]) != other);
        }
        tc_scope_end(ctx);
        tc_fn_free(f);
    }
    tc_ctx_destroy(other);
}

TC_TEST(test_default_arena_reused) {
    int pass;
    for (pass = 0; pass < 2; pass++) {
        tc_ctx_options o;
        tc_ctx *c;
        tc_compile_options co;
        tc_fn *f;
        tc_tensor *in[2], *y1 = NULL, *y2 = NULL, *y3 = NULL, *ye;
        tc_explain_info info;
        int64_t sx[2] = {256, 512}, sw[2] = {512, 512}, c1, c2;
        memset(&o, 0, sizeof o);
        o.num_threads = 2;
        o.cache_bytes = pass ? -1 : 0;
        c = tc_ctx_create(&o);
        memset(&co, 0, sizeof co);
        co.num_inputs = 2;
        in[0] = tc_rand_normal(c, 2, sx, 0.0, 1.0, 1);
        in[1] = tc_rand_normal(c, 2, sw, 0.0, 0.05, 2);
        ye = tc_matmul(c, tc_relu(c, tc_matmul(c, in[0], in[1])), in[1]);
        f = tc_compile(c, arena_fn, NULL, &co);
        TC_CHECK(tc_call(f, in, &y1) == TC_OK); /* the traced call */
        tc_free(y1);
        TC_CHECK(tc_call(f, in, &y1) == TC_OK); /* the cached program's first */
        tc_free(y1);
        TC_CHECK(tc_explain(f, &info, NULL, 0) == TC_OK && info.arena_bytes >= 4 * 256 * 512);
        tc_ctx_empty_cache(c);
        TC_CHECK(tc_call(f, in, &y2) == TC_OK);
        c1 = tc_ctx_cached_bytes(c);
        TC_CHECK(tc_call(f, in, &y3) == TC_OK);
        c2 = tc_ctx_cached_bytes(c);
        if (pass)
            TC_CHECKF(c1 == 0 && c2 == 0, "cache off: %lld, %lld bytes cached", (long long)c1, (long long)c2);
        else
            TC_CHECKF(c1 >= info.arena_bytes && c2 == c1,
                      "arena of %lld bytes: %lld cached after a call, %lld after the next (the same block again)",
                      (long long)info.arena_bytes, (long long)c1, (long long)c2);
        TC_CHECKF(maxdiff(y2, ye) < 1e-4 && maxdiff(y3, ye) < 1e-4, "results: %g, %g", maxdiff(y2, ye),
                  maxdiff(y3, ye));
        tc_free(y2);
        tc_free(y3);
        tc_fn_free(f);
        tc_ctx_destroy(c);
    }
}

int main(void) {
    int r;
    ctx = tc_ctx_create(NULL);
    TC_RUN(test_compiled_matches_eager_and_caches);
    TC_RUN(test_default_arena_reused);
    TC_RUN(test_scopes_around_compiled_functions);
    TC_RUN(test_output_of_another_context);
    TC_RUN(test_recompile_on_new_shape_and_limit);
    TC_RUN(test_cse_and_dce);
    TC_RUN(test_automatic_dynamic);
    TC_RUN(test_dynamic_not_affine_falls_back);
    TC_RUN(test_mark_dynamic_up_front);
    TC_RUN(test_graph_break_both_paths);
    TC_RUN(test_fullgraph_error_names_site);
    TC_RUN(test_other_break_kinds);
    TC_RUN(test_errors_in_compiled_functions);
    TC_RUN(test_modes_observable);
    TC_RUN(test_pass_simplify);
    TC_RUN(test_pass_simplify_keeps_reshape_viewable);
    TC_RUN(test_pass_simplify_keeps_results_fresh);
    TC_RUN(test_scalar_argument_keeps_0d_half);
    TC_RUN(test_softmax_of_scaled_large_rows);
    TC_RUN(test_pass_fold);
    TC_RUN(test_pass_decompose);
    TC_RUN(test_pass_decompose_more);
    TC_RUN(test_every_op_family_compiled_equals_eager);
#if !defined(_WIN32)
    TC_RUN(test_concurrent_call_refused);
#endif
    TC_RUN(test_dot_dump);
    TC_RUN(test_review_regressions);
    TC_RUN(test_program_over_dirty_heap);
    TC_RUN(test_wide_concat_compiles);
    r = TC_TEST_SUMMARY();
    tc_ctx_destroy(ctx);
    return r;
}
