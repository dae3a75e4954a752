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

/* max |a - b| over equal-shaped tensors; +inf on mismatch */
static double maxdiff(tc_tensor *a, tc_tensor *b) {
    int64_t n = tc_numel(a), i;
    double m = 0;
    float *x, *y;
    if (tc_status(a) || tc_status(b) || n != tc_numel(b) || tc_ndim(a) != tc_ndim(b)) return INFINITY;
    x = (float *)malloc(sizeof(float) * (size_t)(n ? n : 1));
    y = (float *)malloc(sizeof(float) * (size_t)(n ? n : 1));
    tc_read(a, TC_F32, x, sizeof(float) * (size_t)n);
    tc_read(b, TC_F32, y, sizeof(float) * (size_t)n);
    for (i = 0; i < n; i++) {
        double d = fabs((double)x[i] - (double)y[i]);
        if (d > m || d != d) m = d != d ? INFINITY : d;
    }
    free(x);
    free(y);
    return m;
}

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
    tc_fn_free(f);
}

int main(void) {
    int r;
    ctx = tc_ctx_create(NULL);
    TC_RUN(test_compiled_matches_eager_and_caches);
    TC_RUN(test_recompile_on_new_shape_and_limit);
    TC_RUN(test_cse_and_dce);
    TC_RUN(test_graph_break_both_paths);
    TC_RUN(test_fullgraph_error_names_site);
    TC_RUN(test_errors_in_compiled_functions);
    TC_RUN(test_modes_observable);
    r = TC_TEST_SUMMARY();
    tc_ctx_destroy(ctx);
    return r;
}
