/* graph_breaks.c: what tc_compile does with a function that reads its own
 * data, and what fullgraph turns that into.
 *
 *     make examples && ./build/graph_breaks
 *     TC_LOGS=graph_breaks,recompiles ./build/graph_breaks    (log as it happens)
 *
 * `gated_mlp` picks one of two branches from a value it computes (a
 * data-dependent branch, like Python's `if x.sum() > 0:`).  Compiled, the read
 * of that value is a graph break: the graph so far runs, the value comes back,
 * tracing continues.  Under fullgraph the same read is an error that names
 * the line.  `clean_mlp` has no break: after its first call, tc_call replays
 * the compiled graph without running the C function at all.
 */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"

#include <stdio.h>
#include <string.h>

typedef struct mlp {
    tc_tensor *w1, *b1, *w2, *b2;
    int runs; /* how often the C function body actually ran */
} mlp;

static void clean_mlp(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    mlp *m = (mlp *)user;
    m->runs++;
    out[0] = tc_linear(ctx, tc_gelu(ctx, tc_linear(ctx, in[0], m->w1, m->b1)), m->w2, m->b2);
}

static void gated_mlp(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    mlp *m = (mlp *)user;
    tc_tensor *h = tc_linear(ctx, in[0], m->w1, m->b1);
    m->runs++;
    /* tc_item reads data: a graph break */
    if (tc_item(tc_mean(ctx, h, 0, NULL, 0)) > 0.0) h = tc_relu(ctx, h);
    else h = tc_tanh(ctx, h);
    out[0] = tc_linear(ctx, h, m->w2, m->b2);
}

static void report(const char *title, tc_fn *f) {
    char text[8192];
    tc_explain(f, NULL, text, sizeof text);
    printf("== %s\n%s\n", title, text);
}

int main(void) {
    tc_ctx *ctx = tc_ctx_create(NULL);
    int64_t ws1[2] = {32, 16}, bs1[1] = {32}, ws2[2] = {4, 32}, bs2[1] = {4}, xs[2] = {8, 16}, origin[2] = {0, 0};
    mlp m;
    tc_compile_options strict;
    tc_fn *clean, *gated, *gated_strict;
    tc_tensor *x, *x_neg, *y = NULL;
    int i;

    m.w1 = tc_rand_normal(ctx, 2, ws1, 0.0, 0.3, 1);
    m.b1 = tc_rand_normal(ctx, 1, bs1, 0.0, 0.1, 2);
    m.w2 = tc_rand_normal(ctx, 2, ws2, 0.0, 0.3, 3);
    m.b2 = tc_zeros(ctx, TC_F32, 1, bs2);
    m.runs = 0;
    x = tc_rand_normal(ctx, 2, xs, 1.0, 1.0, 4);      /* mean(h) > 0 likely  */
    x_neg = tc_rand_normal(ctx, 2, xs, -3.0, 1.0, 5); /* the other branch    */

    clean = tc_compile(ctx, clean_mlp, &m, NULL);
    tc_scope_begin(ctx);
    for (i = 0; i < 5; i++) tc_call(clean, &x, &y);
    tc_scope_end(ctx);
    printf("clean_mlp: 5 calls, the C function ran %d time(s)\n", m.runs);
    report("clean_mlp", clean);

    m.runs = 0;
    gated = tc_compile(ctx, gated_mlp, &m, NULL);
    tc_scope_begin(ctx);
    for (i = 0; i < 4; i++) {
        tc_result r = tc_call(gated, i % 2 ? &x_neg : &x, &y);
        printf("gated_mlp call %d (%s input): %s, y[0][0] = %+.5f\n", i, i % 2 ? "negative" : "positive",
               tc_result_string(r), tc_get(y, origin));
    }
    tc_scope_end(ctx);
    report("gated_mlp", gated);

    memset(&strict, 0, sizeof strict);
    strict.fullgraph = 1;
    gated_strict = tc_compile(ctx, gated_mlp, &m, &strict);
    tc_scope_begin(ctx);
    printf("== gated_mlp with fullgraph\n  tc_call: %s\n  %s\n", tc_result_string(tc_call(gated_strict, &x, &y)),
           tc_fn_error(gated_strict));
    tc_scope_end(ctx);

    tc_fn_free(clean);
    tc_fn_free(gated);
    tc_fn_free(gated_strict);
    tc_ctx_destroy(ctx);
    return 0;
}
