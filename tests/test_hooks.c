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

int main(void) {
    TC_RUN(test_hooks_balance);
    TC_RUN(test_hooks_oom_everywhere);
    return TC_TEST_SUMMARY();
}
