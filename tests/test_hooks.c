/* Allocation hooks: every byte tcompile allocates goes through TC_MALLOC /
 * TC_REALLOC / TC_FREE, and everything is returned by the time the context
 * is destroyed (also on error paths and with scopes left open). */
#include <stdlib.h>
#include <string.h>

static long hook_live, hook_calls, hook_fail_after = -1;
static void *hook_malloc(size_t n) {
    if (hook_fail_after >= 0 && hook_calls >= hook_fail_after) return NULL;
    hook_calls++;
    hook_live++;
    return malloc(n);
}
static void *hook_realloc(void *p, size_t n) {
    void *q;
    if (hook_fail_after >= 0 && hook_calls >= hook_fail_after) return NULL;
    hook_calls++;
    q = realloc(p, n);
    if (!p && q) hook_live++;
    return q;
}
static void hook_free(void *p) {
    if (p) hook_live--;
    free(p);
}
#define TC_MALLOC(n) hook_malloc(n)
#define TC_REALLOC(p, n) hook_realloc(p, n)
#define TC_FREE(p) hook_free(p)
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"
#include "tc_test.h"

/* A small model touching most kernels; returns its output's status. */
static tc_result run_model(tc_ctx *ctx) {
    int64_t xs[4] = {2, 3, 8, 8}, ws[4] = {4, 3, 3, 3}, ls[2] = {5, 64};
    tc_conv2d_opts co;
    tc_pool2d_opts po;
    tc_tensor *x, *w, *y, *lw;
    tc_result r;
    memset(&co, 0, sizeof co);
    memset(&po, 0, sizeof po);
    co.padding[0] = co.padding[1] = 1;
    po.kernel[0] = po.kernel[1] = 2;
    tc_scope_begin(ctx);
    x = tc_rand_normal(ctx, 4, xs, 0, 1, 1);
    w = tc_rand_normal(ctx, 4, ws, 0, 1, 2);
    lw = tc_rand_normal(ctx, 2, ls, 0, 1, 3);
    y = tc_relu(ctx, tc_conv2d(ctx, x, w, NULL, &co));
    y = tc_max_pool2d(ctx, y, &po);
    y = tc_flatten(ctx, y, 1, -1);
    y = tc_softmax(ctx, tc_linear(ctx, y, lw, NULL), -1);
    y = tc_layer_norm(ctx, tc_transpose(ctx, y, 0, 1), 1, NULL, NULL, 1e-5);
    y = tc_keep(y);
    tc_scope_end(ctx);
    r = tc_status(y);
    tc_free(y);
    return r;
}

TC_TEST(test_hooks_balance) {
    tc_ctx *ctx = tc_ctx_create(NULL);
    TC_CHECK(ctx != NULL);
    TC_CHECK(run_model(ctx) == TC_OK);
    TC_CHECK(tc_ctx_live_tensors(ctx) == 0);
    TC_CHECK(tc_ctx_live_bytes(ctx) == 0);
    tc_scope_begin(ctx);
    tc_scope_begin(ctx);
    (void)tc_matmul(ctx, tc_ones(ctx, TC_F32, 0, NULL), tc_ones(ctx, TC_F32, 0, NULL)); /* an error path */
    tc_ctx_destroy(ctx); /* with two scopes still open */
    TC_CHECKF(hook_live == 0, "%ld allocations not freed", hook_live);
    TC_CHECK(hook_calls > 0);
}

/* Fail the n-th allocation for every n: each run must end in an error or a
 * success, never a crash, and leak nothing. */
TC_TEST(test_hooks_oom_everywhere) {
    long n, total;
    tc_ctx *ctx;
    hook_calls = 0;
    ctx = tc_ctx_create(NULL);
    run_model(ctx);
    tc_ctx_destroy(ctx);
    total = hook_calls;
    TC_CHECKF(total > 20, "only %ld allocations seen: the hooks are not in use", total);
    for (n = 0; n < total; n++) {
        tc_result r;
        hook_calls = 0;
        hook_live = 0;
        hook_fail_after = n;
        ctx = tc_ctx_create(NULL);
        if (ctx) {
            r = run_model(ctx);
            TC_CHECK(r == TC_OK || r == TC_ERR_OOM);
            tc_ctx_destroy(ctx);
        }
        hook_fail_after = -1;
        TC_CHECKF(hook_live == 0, "failing allocation %ld of %ld leaked %ld blocks", n, total, hook_live);
    }
}

/* conv + pool + linear + softmax + layer norm on a [2,3,8,8] input */
typedef struct small_model {
    tc_tensor *w, *lw;
} small_model;

static void small_forward(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    small_model *m = (small_model *)user;
    tc_conv2d_opts co;
    tc_pool2d_opts po;
    tc_tensor *y;
    memset(&co, 0, sizeof co);
    memset(&po, 0, sizeof po);
    co.padding[0] = co.padding[1] = 1;
    po.kernel[0] = po.kernel[1] = 2;
    y = tc_max_pool2d(ctx, tc_relu(ctx, tc_conv2d(ctx, in[0], m->w, NULL, &co)), &po);
    y = tc_softmax(ctx, tc_linear(ctx, tc_flatten(ctx, y, 1, -1), m->lw, NULL), -1);
    out[0] = tc_layer_norm(ctx, tc_transpose(ctx, y, 0, 1), 1, NULL, NULL, 1e-5);
}

/* reduce-overhead: after warm-up a call allocates nothing at all (arena,
 * headers and the kernels' scratch persist); the default mode allocates the
 * arena and the outputs each call.  Both equal eager. */
TC_TEST(test_reduce_overhead_allocates_nothing) {
    int64_t xs[4] = {2, 3, 8, 8}, ws[4] = {4, 3, 3, 3}, ls[2] = {5, 64};
    tc_ctx *ctx = tc_ctx_create(NULL);
    small_model m;
    tc_compile_options o;
    tc_fn *ro, *df;
    tc_tensor *x, *ye, *y = NULL;
    long before;
    int k;
    m.w = tc_rand_normal(ctx, 4, ws, 0, 1, 2);
    m.lw = tc_rand_normal(ctx, 2, ls, 0, 1, 3);
    x = tc_rand_normal(ctx, 4, xs, 0, 1, 1);
    small_forward(ctx, &m, &x, &ye);
    memset(&o, 0, sizeof o);
    o.mode = TC_MODE_REDUCE_OVERHEAD;
    ro = tc_compile(ctx, small_forward, &m, &o);
    df = tc_compile(ctx, small_forward, &m, NULL);
    for (k = 0; k < 2; k++) TC_CHECK(tc_call(ro, &x, &y) == TC_OK); /* trace, then build the program */
    before = hook_calls;
    for (k = 0; k < 3; k++) TC_CHECK(tc_call(ro, &x, &y) == TC_OK);
    TC_CHECKF(hook_calls == before, "reduce-overhead: %ld allocations in 3 cached calls", hook_calls - before);
    TC_CHECK(tc_item(tc_max(ctx, tc_abs(ctx, tc_sub(ctx, y, ye)), 0, NULL, 0)) < 1e-5);
    tc_free(y); /* ignored: the function owns it */
    for (k = 0; k < 2; k++) {
        TC_CHECK(tc_call(df, &x, &y) == TC_OK);
        TC_CHECK(tc_item(tc_max(ctx, tc_abs(ctx, tc_sub(ctx, y, ye)), 0, NULL, 0)) < 1e-5);
    }
    before = hook_calls;
    TC_CHECK(tc_call(df, &x, &y) == TC_OK);
    /* the arena, the output and a few kernel scratch buffers: not one per op */
    TC_CHECKF(hook_calls - before <= 12, "default mode: %ld allocations per cached call", hook_calls - before);
    tc_fn_free(ro);
    tc_fn_free(df);
    tc_ctx_destroy(ctx);
    TC_CHECKF(hook_live == 0, "%ld blocks leaked", hook_live);
}

/* Every allocation of a compiled function's first call (trace, passes,
 * fusion, plan, run) failed in turn: the call returns an error, writes an
 * errored tensor to every output (nothing of the caller's is left there)
 * and a message, leaks nothing, and the next call works (issue 35,
 * defect 2: a failure among the trace's first allocations returned OOM
 * with the outputs untouched and no message). */
TC_TEST(test_first_call_oom_writes_outputs) {
    int64_t xs[4] = {2, 3, 8, 8}, ws[4] = {4, 3, 3, 3}, ls[2] = {5, 64};
    static tc_tensor marker;
    long n, total = -1, start;
    for (n = 0; n <= total || total < 0; n++) {
        tc_ctx *ctx;
        small_model m;
        tc_fn *f;
        tc_tensor *x, *y;
        tc_result r;
        hook_live = 0;
        hook_calls = 0;
        ctx = tc_ctx_create(NULL);
        m.w = tc_rand_normal(ctx, 4, ws, 0, 1, 2);
        m.lw = tc_rand_normal(ctx, 2, ls, 0, 1, 3);
        x = tc_rand_normal(ctx, 4, xs, 0, 1, 1);
        f = tc_compile(ctx, small_forward, &m, NULL);
        y = &marker;
        start = hook_calls;
        if (total >= 0) hook_fail_after = start + n;
        r = tc_call(f, &x, &y);
        hook_fail_after = -1;
        if (total < 0) { /* the first round counts the call's allocations */
            TC_CHECK(r == TC_OK);
            total = hook_calls - start;
            n = -1;
        } else if (r != TC_OK) {
            TC_CHECKF(y != &marker, "allocation %ld of %ld failed: output left as the caller had it", n, total);
            TC_CHECKF(y == NULL || tc_status(y) != TC_OK, "allocation %ld of %ld failed: output not errored", n, total);
            TC_CHECKF(tc_fn_error(f)[0] != 0, "allocation %ld of %ld failed: no message", n, total);
            TC_CHECKF(tc_call(f, &x, &y) == TC_OK, "allocation %ld of %ld failed: the next call fails: %s", n, total,
                      tc_fn_error(f));
        }
        tc_fn_free(f);
        tc_ctx_destroy(ctx);
        TC_CHECKF(hook_live == 0, "allocation %ld of %ld failed: %ld blocks leaked", n, total, hook_live);
    }
    TC_CHECKF(total > 20, "only %ld allocations in a first call: the hooks are not in use", total);
}

/* A thread pool that cannot be made keeps the old one (issue 35, defect
 * 11: tc_ctx_set_num_threads destroyed it first, leaving the context on
 * one thread). */
TC_TEST(test_failed_resize_keeps_pool) {
    tc_ctx_options o;
    tc_ctx *ctx;
    int64_t n = 100000;
    tc_tensor *x;
    double s;
    memset(&o, 0, sizeof o);
    o.num_threads = 2;
    ctx = tc_ctx_create(&o);
    if (tc_ctx_num_threads(ctx) < 2) { /* TC_NO_THREADS */
        TC_SKIP("a build without threads");
        tc_ctx_destroy(ctx);
        return;
    }
    x = tc_rand_uniform(ctx, 1, &n, -1, 1, 5);
    s = tc_item(tc_sum(ctx, tc_exp(ctx, x), 0, NULL, 0));
    hook_fail_after = hook_calls; /* the next allocation fails */
    TC_CHECK(tc_ctx_set_num_threads(ctx, 3) == TC_ERR_OOM);
    hook_fail_after = -1;
    TC_CHECKF(tc_ctx_num_threads(ctx) == 2, "after a failed resize: %d threads", tc_ctx_num_threads(ctx));
    TC_CHECK(tc_item(tc_sum(ctx, tc_exp(ctx, x), 0, NULL, 0)) == s);
    TC_CHECK(tc_ctx_set_num_threads(ctx, 3) == TC_OK && tc_ctx_num_threads(ctx) == 3);
    tc_ctx_destroy(ctx);
}

/* Every allocation of a checkpoint save failed in turn: TC_ERR_OOM with a
 * message saying so and no file left, never TC_ERR_IO (the buffer of a
 * tensor's bytes failing after the file was opened said "cannot write"
 * and returned TC_ERR_IO; found by tests/check_faults.c). */
TC_TEST(test_save_oom_is_oom) {
    int64_t s[2] = {5, 7};
    const char *names[3] = {"a", "b", "c"};
    char path[64], err[300];
    long n, total;
    tc_ctx *ctx = tc_ctx_create(NULL);
    tc_tensor *t[3];
    FILE *fp;
    t[0] = tc_rand_uniform(ctx, 2, s, -1, 1, 1);
    t[1] = tc_transpose(ctx, tc_rand_uniform(ctx, 2, s, -1, 1, 2), 0, 1);
    t[2] = tc_arange(ctx, TC_I32, 0, 10, 1);
    snprintf(path, sizeof path, "/tmp/tc-hooks-save-%ld.safetensors", (long)tc__pid());
    hook_calls = 0;
    TC_CHECK(tc_safetensors_save(path, 3, names, t, NULL, err, sizeof err) == TC_OK);
    total = hook_calls;
    TC_CHECKF(total >= 4, "only %ld allocations in a save", total);
    for (n = 0; n < total; n++) {
        tc_result r;
        remove(path);
        hook_calls = 0;
        hook_fail_after = n;
        r = tc_safetensors_save(path, 3, names, t, NULL, err, sizeof err);
        hook_fail_after = -1;
        TC_CHECKF(r == TC_ERR_OOM && strstr(err, "out of memory"), "allocation %ld of %ld failed: %s: %s", n, total,
                  tc_result_string(r), err);
        fp = fopen(path, "rb");
        TC_CHECKF(fp == NULL, "allocation %ld of %ld failed: a file left behind", n, total);
        if (fp) fclose(fp);
    }
    remove(path);
    tc_ctx_destroy(ctx);
    TC_CHECKF(hook_live == 0, "%ld blocks leaked", hook_live);
}

int main(void) {
    TC_RUN(test_hooks_balance);
    TC_RUN(test_hooks_oom_everywhere);
    TC_RUN(test_reduce_overhead_allocates_nothing);
    TC_RUN(test_first_call_oom_writes_outputs);
    TC_RUN(test_failed_resize_keeps_pool);
    TC_RUN(test_save_oom_is_oom);
    return TC_TEST_SUMMARY();
}
