/* test_errors.c — every error path of the eager API.
 *
 * Build:
 *   gcc -std=c99 -O1 -g -Wall -Wextra -Werror -pedantic -I. tests/test_errors.c \
 *       -o /tmp/te -lm -lpthread && /tmp/te
 *
 * Each EXPECT(...) line makes one call that must fail: the result is an
 * errored tensor (never NULL) with the expected tc_result code, and tc_error()
 * names the op and "test_errors.c:<line of the call>".  Where api.h/manual.h
 * do not pin the code down, the accepted set is listed (E(a) | E(b)).
 * Nothing here may abort or crash (run it under ASan/UBSan too). */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"
#include "tc_test.h"
#include <stdint.h>
#include <limits.h>

#define E(code) (1u << (unsigned)(code))

static tc_ctx *g_ctx;

static const char *code_name(tc_result r) {
    const char *s = tc_result_string(r);
    return s ? s : "(null)";
}

static int contains_line(const char *msg, int line) {
    char needle[64];
    snprintf(needle, sizeof needle, "test_errors.c:%d", line);
    return msg && strstr(msg, needle) != NULL;
}

/* t must be an errored tensor whose code is in `codes`, whose message names
 * `op` and the call site `line`. */
static void expect_err_(tc_tensor *t, unsigned codes, const char *op, int line, const char *expr) {
    const char *msg;
    tc_result st;
    if (!t) {
        TC_CHECKF(0, "line %d: %s returned NULL (ops never return NULL)", line, expr);
        return;
    }
    st = tc_status(t);
    msg = tc_error(t);
    TC_CHECKF(st != TC_OK, "line %d: %s succeeded, expected an error", line, expr);
    if (st == TC_OK) {
        tc_ctx_clear_error(g_ctx);
        return;
    }
    TC_CHECKF((codes & E(st)) != 0, "line %d: %s: got %s (\"%s\")", line, expr, code_name(st), msg ? msg : "(null)");
    TC_CHECKF(msg != NULL && strstr(msg, op) != NULL, "line %d: %s: message \"%s\" does not name %s", line, expr,
              msg ? msg : "(null)", op);
    TC_CHECKF(contains_line(msg, line), "line %d: %s: message \"%s\" does not name test_errors.c:%d", line, expr,
              msg ? msg : "(null)", line);
    TC_CHECKF(tc_data(t) == NULL, "line %d: %s: tc_data of an errored tensor must be NULL", line, expr);
    TC_CHECKF(tc_ctx_status(g_ctx) != TC_OK, "line %d: %s: the context did not record the error", line, expr);
    tc_ctx_clear_error(g_ctx);
}
/* keep every EXPECT on one line: __LINE__ here and in the op macro agree */
#define EXPECT(codes, op, expr) expect_err_((expr), (codes), (op), __LINE__, #expr)

/* for split/chunk/split_sizes: -1, and every one of the nslots slots of out[]
 * holds the errored tensor (api.h: "fill every slot of out[]") */
static void expect_pieces_err_(int got, tc_tensor **out, int nslots, unsigned codes, const char *op, int line, const char *expr) {
    int i;
    TC_CHECKF(got == -1, "line %d: %s returned %d, expected -1", line, expr, got);
    if (got == -1) {
        for (i = 1; i < nslots; i++)
            TC_CHECKF(out[i] == out[0] || (out[i] && tc_status(out[i]) == tc_status(out[0]) && strcmp(tc_error(out[i]), tc_error(out[0])) == 0),
                      "line %d: %s: slot %d does not hold the error", line, expr, i);
        expect_err_(out[0], codes, op, line, expr);
    } else tc_ctx_clear_error(g_ctx);
}
#define EXPECT_PIECES(codes, op, out, nslots, expr) expect_pieces_err_((expr), (out), (nslots), (codes), (op), __LINE__, #expr)

static tc_tensor *f32(int nd, int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t sh[4];
    sh[0] = a; sh[1] = b; sh[2] = c; sh[3] = d;
    return tc_ones(g_ctx, TC_F32, nd, sh);
}
static tc_tensor *typed(tc_dtype dt, int nd, int64_t a, int64_t b, int64_t c, int64_t d) {
    int64_t sh[4];
    sh[0] = a; sh[1] = b; sh[2] = c; sh[3] = d;
    return tc_zeros(g_ctx, dt, nd, sh);
}
static tc_tensor *idx1(int n, const int32_t *v) {
    int64_t s = n;
    return tc_from_data(g_ctx, TC_I32, 1, &s, v);
}

typedef tc_tensor *(*unary_fn)(tc_ctx *, tc_tensor *, const char *, int);
typedef tc_tensor *(*binary_fn)(tc_ctx *, tc_tensor *, tc_tensor *, const char *, int);
typedef tc_tensor *(*bscalar_fn)(tc_ctx *, tc_tensor *, double, const char *, int);
static const struct { const char *name; unary_fn fn; } unops[] = {
#define TCT_U_(name) {"tc_" #name, tc_##name##_at},
    TC__UNARY_API(TCT_U_)
#undef TCT_U_
};
static const struct { const char *name; binary_fn fn; bscalar_fn sfn; } binops[] = {
#define TCT_B_(name) {"tc_" #name, tc_##name##_at, tc_##name##_scalar_at},
    TC__BINARY_API(TCT_B_)
#undef TCT_B_
};

/* every unary and binary op (and _scalar form): NULL context, NULL input,
 * errored input; binary: non-broadcastable shapes */
TC_TEST(test_every_pointwise_op) {
    tc_tensor *a = f32(2, 2, 3, 0, 0), *b = f32(1, 4, 0, 0, 0), *bad, *r;
    int i, line;
    char saved[512];
    line = __LINE__; bad = tc_matmul(g_ctx, a, a);
    snprintf(saved, sizeof saved, "%s", tc_error(bad));
    TC_CHECK(contains_line(saved, line));
    for (i = 0; i < (int)(sizeof unops / sizeof unops[0]); i++) {
        r = unops[i].fn(NULL, a, __FILE__, __LINE__);
        TC_CHECKF(r != NULL && tc_status(r) == TC_ERR_NULL, "%s with a NULL context", unops[i].name);
        line = __LINE__; r = unops[i].fn(g_ctx, NULL, __FILE__, __LINE__);
        expect_err_(r, E(TC_ERR_NULL), unops[i].name, line, unops[i].name);
        r = unops[i].fn(g_ctx, bad, __FILE__, __LINE__);
        TC_CHECKF(r != NULL && tc_status(r) == TC_ERR_SHAPE && strcmp(tc_error(r), saved) == 0, "%s(errored): \"%s\"", unops[i].name,
                  r ? tc_error(r) : "(NULL)");
    }
    for (i = 0; i < (int)(sizeof binops / sizeof binops[0]); i++) {
        r = binops[i].fn(NULL, a, a, __FILE__, __LINE__);
        TC_CHECKF(r != NULL && tc_status(r) == TC_ERR_NULL, "%s with a NULL context", binops[i].name);
        r = binops[i].sfn(NULL, a, 1.0, __FILE__, __LINE__);
        TC_CHECKF(r != NULL && tc_status(r) == TC_ERR_NULL, "%s_scalar with a NULL context", binops[i].name);
        line = __LINE__; r = binops[i].fn(g_ctx, NULL, a, __FILE__, __LINE__);
        expect_err_(r, E(TC_ERR_NULL), binops[i].name, line, binops[i].name);
        line = __LINE__; r = binops[i].fn(g_ctx, a, NULL, __FILE__, __LINE__);
        expect_err_(r, E(TC_ERR_NULL), binops[i].name, line, binops[i].name);
        line = __LINE__; r = binops[i].sfn(g_ctx, NULL, 2.0, __FILE__, __LINE__);
        expect_err_(r, E(TC_ERR_NULL), binops[i].name, line, binops[i].name);
        line = __LINE__; r = binops[i].fn(g_ctx, a, b, __FILE__, __LINE__);
        expect_err_(r, E(TC_ERR_SHAPE), binops[i].name, line, binops[i].name);
        r = binops[i].fn(g_ctx, a, bad, __FILE__, __LINE__);
        TC_CHECKF(r != NULL && tc_status(r) == TC_ERR_SHAPE && strcmp(tc_error(r), saved) == 0, "%s(a, errored): \"%s\"", binops[i].name,
                  r ? tc_error(r) : "(NULL)");
        r = binops[i].sfn(g_ctx, bad, 1.0, __FILE__, __LINE__);
        TC_CHECKF(r != NULL && tc_status(r) == TC_ERR_SHAPE && strcmp(tc_error(r), saved) == 0, "%s_scalar(errored): \"%s\"", binops[i].name,
                  r ? tc_error(r) : "(NULL)");
    }
    r = tc_softplus(NULL, a, 1, 20);
    TC_CHECK(r != NULL && tc_status(r) == TC_ERR_NULL);
    EXPECT(E(TC_ERR_NULL), "tc_softplus", tc_softplus(g_ctx, NULL, 1, 20));
    EXPECT(E(TC_ERR_NULL), "tc_clamp", tc_clamp(g_ctx, NULL, 0, 1));
    EXPECT(E(TC_ERR_NULL), "tc_cast", tc_cast(g_ctx, NULL, TC_I32));
    tc_ctx_clear_error(g_ctx);
}

/* ------------------------------------------------------------------------ */

TC_TEST(test_null_ctx) {
    int64_t s2[2] = {2, 3};
    tc_tensor *a = f32(2, 2, 3, 0, 0), *r;
    tc_tensor *rs[12];
    int i;
    tc_tensor *out[2];
    rs[0] = tc_zeros(NULL, TC_F32, 2, s2);
    rs[1] = tc_add(NULL, a, a);
    rs[2] = tc_relu(NULL, a);
    rs[3] = tc_matmul(NULL, a, tc_transpose(g_ctx, a, 0, 1));
    rs[4] = tc_sum(NULL, a, 0, NULL, 0);
    rs[5] = tc_reshape(NULL, a, 2, s2);
    rs[6] = tc_scalar(NULL, 1.0);
    rs[7] = tc_arange(NULL, TC_F32, 0, 4, 1);
    rs[8] = tc_softmax(NULL, a, -1);
    rs[9] = tc_concat(NULL, 1, &a, 0);
    rs[10] = tc_rand_uniform(NULL, 2, s2, 0, 1, 1);
    rs[11] = tc_conv2d(NULL, a, a, NULL, NULL);
    for (i = 0; i < 12; i++) {
        TC_CHECKF(rs[i] != NULL, "op %d with a NULL context returned NULL", i);
        if (rs[i]) {
            TC_CHECKF(tc_status(rs[i]) == TC_ERR_NULL, "op %d with a NULL context: status %s", i, code_name(tc_status(rs[i])));
            TC_CHECK(tc_error(rs[i]) != NULL && tc_error(rs[i])[0] != 0);
            TC_CHECK(tc_data(rs[i]) == NULL);
            TC_CHECK(tc_item(rs[i]) != tc_item(rs[i])); /* NaN */
            tc_free(rs[i]);                              /* sentinels: no-op */
        }
    }
    TC_CHECK(tc_split(NULL, a, 1, 0, out, 2) == -1);
    TC_CHECK(tc_chunk(NULL, a, 2, 0, out, 2) == -1);
    TC_CHECK(out[0] != NULL && out[1] != NULL && tc_status(out[0]) == TC_ERR_NULL && tc_status(out[1]) == TC_ERR_NULL);
    r = tc_add(NULL, a, a);
    TC_CHECK(r != NULL && tc_status(r) != TC_OK);
    /* property queries on NULL never crash */
    TC_CHECK(tc_status(NULL) == TC_ERR_NULL);
    TC_CHECK(tc_error(NULL) != NULL);
    TC_CHECK(tc_data(NULL) == NULL);
    TC_CHECK(tc_item(NULL) != tc_item(NULL));
    tc_free(NULL);
    TC_CHECK(tc_keep(NULL) == NULL);
    tc_ctx_destroy(NULL);
    TC_CHECK(tc_scope_end(NULL) != TC_OK);
    {
        float buf[6];
        TC_CHECK(tc_read(NULL, TC_F32, buf, sizeof buf) == TC_ERR_NULL);
    }
    tc_ctx_clear_error(g_ctx);
}

TC_TEST(test_null_inputs) {
    tc_tensor *a = f32(2, 2, 3, 0, 0), *w = f32(4, 2, 3, 1, 1);
    tc_tensor *xs[2];
    int64_t s2[2] = {2, 3};
    tc_pool2d_opts po;
    tc_tensor *out[4];
    memset(&po, 0, sizeof po);
    memset(out, 0, sizeof out);
    xs[0] = a;
    xs[1] = NULL;
    EXPECT(E(TC_ERR_NULL), "tc_add", tc_add(g_ctx, NULL, a));
    EXPECT(E(TC_ERR_NULL), "tc_add", tc_add(g_ctx, a, NULL));
    EXPECT(E(TC_ERR_NULL), "tc_mul", tc_mul_scalar(g_ctx, NULL, 2.0));
    EXPECT(E(TC_ERR_NULL), "tc_relu", tc_relu(g_ctx, NULL));
    EXPECT(E(TC_ERR_NULL), "tc_matmul", tc_matmul(g_ctx, NULL, a));
    EXPECT(E(TC_ERR_NULL), "tc_linear", tc_linear(g_ctx, a, NULL, NULL));
    EXPECT(E(TC_ERR_NULL), "tc_sum", tc_sum(g_ctx, NULL, 0, NULL, 0));
    EXPECT(E(TC_ERR_NULL), "tc_reshape", tc_reshape(g_ctx, NULL, 2, s2));
    EXPECT(E(TC_ERR_NULL), "tc_permute", tc_permute(g_ctx, a, NULL));
    EXPECT(E(TC_ERR_NULL), "tc_concat", tc_concat(g_ctx, 2, xs, 0));
    EXPECT(E(TC_ERR_NULL), "tc_concat", tc_concat(g_ctx, 1, NULL, 0));
    EXPECT(E(TC_ERR_NULL), "tc_conv2d", tc_conv2d(g_ctx, a, NULL, NULL, NULL));
    EXPECT(E(TC_ERR_NULL), "tc_conv2d", tc_conv2d(g_ctx, NULL, w, NULL, NULL));
    EXPECT(E(TC_ERR_NULL), "tc_where", tc_where(g_ctx, NULL, a, a));
    EXPECT(E(TC_ERR_NULL), "tc_embedding", tc_embedding(g_ctx, a, NULL));
    EXPECT(E(TC_ERR_NULL), "tc_layer_norm", tc_layer_norm(g_ctx, NULL, 1, NULL, NULL, 1e-5));
    EXPECT(E(TC_ERR_NULL), "tc_batch_norm", tc_batch_norm(g_ctx, a, NULL, NULL, NULL, NULL, 1e-5));
    EXPECT(E(TC_ERR_NULL), "tc_zeros", tc_zeros(g_ctx, TC_F32, 2, NULL));
    EXPECT(E(TC_ERR_NULL), "tc_from_data", tc_from_data(g_ctx, TC_F32, 2, s2, NULL));
    EXPECT(E(TC_ERR_NULL), "tc_wrap", tc_wrap(g_ctx, TC_F32, 2, s2, NULL, NULL));
    EXPECT(E(TC_ERR_NULL), "tc_pad", tc_pad(g_ctx, a, 2, NULL, 0.0));
    EXPECT(E(TC_ERR_NULL), "tc_copy", tc_copy(g_ctx, NULL, a));
    EXPECT(E(TC_ERR_NULL), "tc_copy", tc_copy(g_ctx, a, NULL));
    EXPECT(E(TC_ERR_NULL), "tc_max_pool2d", tc_max_pool2d(g_ctx, w, NULL));
    EXPECT(E(TC_ERR_NULL), "tc_scaled_dot_product_attention", tc_scaled_dot_product_attention(g_ctx, a, NULL, a, NULL, 0, 0));
    EXPECT_PIECES(E(TC_ERR_NULL), "tc_split", out, 4, tc_split(g_ctx, NULL, 1, 0, out, 4));
    EXPECT_PIECES(E(TC_ERR_NULL), "tc_chunk", out, 4, tc_chunk(g_ctx, NULL, 2, 0, out, 4));
    TC_CHECK(tc_split(g_ctx, a, 1, 0, NULL, 4) == -1); /* nowhere to write: an error, no crash */
    tc_ctx_clear_error(g_ctx);
}

TC_TEST(test_shape_errors) {
    tc_tensor *a23 = f32(2, 2, 3, 0, 0), *a4 = f32(1, 4, 0, 0, 0), *xs[3];
    tc_conv2d_opts co;
    memset(&co, 0, sizeof co);
    EXPECT(E(TC_ERR_SHAPE), "tc_add", tc_add(g_ctx, a23, a4));
    EXPECT(E(TC_ERR_SHAPE), "tc_ge", tc_ge(g_ctx, f32(3, 2, 1, 3, 0), f32(2, 3, 2, 0, 0)));
    EXPECT(E(TC_ERR_SHAPE), "tc_where", tc_where(g_ctx, typed(TC_BOOL, 1, 5, 0, 0, 0), a23, a23));
    EXPECT(E(TC_ERR_SHAPE), "tc_where", tc_where(g_ctx, typed(TC_BOOL, 1, 3, 0, 0, 0), a23, a4));
    EXPECT(E(TC_ERR_SHAPE), "tc_copy", tc_copy(g_ctx, a23, a4));
    /* matmul */
    EXPECT(E(TC_ERR_SHAPE), "tc_matmul", tc_matmul(g_ctx, f32(2, 2, 3, 0, 0), f32(2, 4, 5, 0, 0)));
    EXPECT(E(TC_ERR_SHAPE), "tc_matmul", tc_matmul(g_ctx, f32(1, 3, 0, 0, 0), f32(1, 4, 0, 0, 0)));
    EXPECT(E(TC_ERR_SHAPE), "tc_matmul", tc_matmul(g_ctx, f32(3, 2, 3, 4, 0), f32(3, 5, 4, 6, 0)));
    EXPECT(E(TC_ERR_SHAPE), "tc_matmul", tc_matmul(g_ctx, tc_scalar(g_ctx, 2.0), f32(1, 1, 0, 0, 0)));
    EXPECT(E(TC_ERR_SHAPE), "tc_matmul", tc_matmul(g_ctx, f32(2, 2, 3, 0, 0), f32(1, 4, 0, 0, 0)));
    EXPECT(E(TC_ERR_SHAPE), "tc_linear", tc_linear(g_ctx, f32(2, 2, 3, 0, 0), f32(2, 5, 4, 0, 0), NULL));
    EXPECT(E(TC_ERR_SHAPE), "tc_linear", tc_linear(g_ctx, f32(2, 2, 3, 0, 0), f32(2, 5, 3, 0, 0), f32(1, 4, 0, 0, 0)));
    EXPECT(E(TC_ERR_SHAPE), "tc_linear", tc_linear(g_ctx, f32(2, 2, 3, 0, 0), f32(1, 3, 0, 0, 0), NULL));
    /* conv */
    EXPECT(E(TC_ERR_SHAPE), "tc_conv2d", tc_conv2d(g_ctx, f32(4, 1, 3, 8, 8), f32(4, 4, 2, 3, 3), NULL, NULL));
    co.groups = 2;
    EXPECT(E(TC_ERR_SHAPE) | E(TC_ERR_INVALID_ARG), "tc_conv2d", tc_conv2d(g_ctx, f32(4, 1, 3, 8, 8), f32(4, 4, 1, 3, 3), NULL, &co));
    EXPECT(E(TC_ERR_SHAPE) | E(TC_ERR_INVALID_ARG), "tc_conv2d", tc_conv2d(g_ctx, f32(4, 1, 4, 8, 8), f32(4, 3, 2, 3, 3), NULL, &co));
    co.groups = 0;
    EXPECT(E(TC_ERR_SHAPE), "tc_conv2d", tc_conv2d(g_ctx, f32(4, 1, 3, 8, 8), f32(3, 4, 3, 3, 0), NULL, NULL));
    EXPECT(E(TC_ERR_SHAPE), "tc_conv2d", tc_conv2d(g_ctx, f32(2, 3, 8, 0, 0), f32(4, 4, 3, 3, 3), NULL, NULL));
    EXPECT(E(TC_ERR_SHAPE), "tc_conv2d", tc_conv2d(g_ctx, f32(4, 1, 3, 8, 8), f32(4, 4, 3, 3, 3), f32(1, 5, 0, 0, 0), NULL));
    EXPECT(E(TC_ERR_SHAPE) | E(TC_ERR_INVALID_ARG), "tc_conv2d", tc_conv2d(g_ctx, f32(4, 1, 1, 2, 2), f32(4, 1, 1, 3, 3), NULL, NULL));
    /* concat */
    xs[0] = f32(2, 2, 3, 0, 0); xs[1] = f32(3, 2, 3, 1, 0);
    EXPECT(E(TC_ERR_SHAPE), "tc_concat", tc_concat(g_ctx, 2, xs, 0));
    xs[1] = f32(2, 2, 4, 0, 0);
    EXPECT(E(TC_ERR_SHAPE), "tc_concat", tc_concat(g_ctx, 2, xs, 0));
    xs[1] = typed(TC_I32, 2, 2, 3, 0, 0); /* dtypes promote like torch.cat: no error */
    {
        tc_tensor *r = tc_concat(g_ctx, 2, xs, 0);
        TC_CHECKF(tc_status(r) == TC_OK && tc_type(r) == TC_F32 && tc_dim(r, 0) == 4, "concat f32 + i32: %s", tc_error(r));
    }
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_concat", tc_concat(g_ctx, 0, xs, 0));
    xs[0] = tc_scalar(g_ctx, 1.0); xs[1] = tc_scalar(g_ctx, 2.0);
    EXPECT(E(TC_ERR_SHAPE) | E(TC_ERR_AXIS), "tc_concat", tc_concat(g_ctx, 2, xs, 0));
    /* norms */
    EXPECT(E(TC_ERR_SHAPE), "tc_layer_norm", tc_layer_norm(g_ctx, f32(2, 2, 3, 0, 0), 1, f32(1, 4, 0, 0, 0), NULL, 1e-5));
    EXPECT(E(TC_ERR_SHAPE), "tc_layer_norm", tc_layer_norm(g_ctx, f32(2, 2, 3, 0, 0), 1, NULL, f32(1, 2, 0, 0, 0), 1e-5));
    EXPECT(E(TC_ERR_SHAPE), "tc_layer_norm", tc_layer_norm(g_ctx, f32(3, 2, 3, 4, 0), 2, f32(1, 12, 0, 0, 0), NULL, 1e-5));
    EXPECT(E(TC_ERR_SHAPE), "tc_rms_norm", tc_rms_norm(g_ctx, f32(2, 2, 3, 0, 0), 1, f32(2, 1, 3, 0, 0), 1e-5));
    EXPECT(E(TC_ERR_AXIS) | E(TC_ERR_INVALID_ARG) | E(TC_ERR_SHAPE), "tc_layer_norm", tc_layer_norm(g_ctx, f32(2, 2, 3, 0, 0), 3, NULL, NULL, 1e-5));
    EXPECT(E(TC_ERR_AXIS) | E(TC_ERR_INVALID_ARG), "tc_layer_norm", tc_layer_norm(g_ctx, f32(2, 2, 3, 0, 0), 0, NULL, NULL, 1e-5));
    EXPECT(E(TC_ERR_AXIS) | E(TC_ERR_INVALID_ARG), "tc_rms_norm", tc_rms_norm(g_ctx, f32(2, 2, 3, 0, 0), -1, NULL, 1e-5));
    EXPECT(E(TC_ERR_SHAPE), "tc_batch_norm", tc_batch_norm(g_ctx, f32(4, 2, 3, 4, 4), f32(1, 4, 0, 0, 0), f32(1, 3, 0, 0, 0), NULL, NULL, 1e-5));
    EXPECT(E(TC_ERR_SHAPE), "tc_batch_norm", tc_batch_norm(g_ctx, f32(4, 2, 3, 4, 4), f32(1, 3, 0, 0, 0), f32(1, 3, 0, 0, 0), f32(1, 2, 0, 0, 0), NULL, 1e-5));
    EXPECT(E(TC_ERR_SHAPE), "tc_batch_norm", tc_batch_norm(g_ctx, f32(1, 3, 0, 0, 0), f32(1, 3, 0, 0, 0), f32(1, 3, 0, 0, 0), NULL, NULL, 1e-5));
    /* attention */
    EXPECT(E(TC_ERR_SHAPE), "tc_scaled_dot_product_attention", tc_scaled_dot_product_attention(g_ctx, f32(3, 2, 4, 8, 0), f32(3, 2, 5, 6, 0), f32(3, 2, 5, 8, 0), NULL, 0, 0));
    EXPECT(E(TC_ERR_SHAPE), "tc_scaled_dot_product_attention", tc_scaled_dot_product_attention(g_ctx, f32(3, 2, 4, 8, 0), f32(3, 2, 5, 8, 0), f32(3, 2, 6, 8, 0), NULL, 0, 0));
    EXPECT(E(TC_ERR_SHAPE), "tc_scaled_dot_product_attention", tc_scaled_dot_product_attention(g_ctx, f32(3, 2, 4, 8, 0), f32(3, 3, 5, 8, 0), f32(3, 3, 5, 8, 0), NULL, 0, 0));
    EXPECT(E(TC_ERR_SHAPE), "tc_scaled_dot_product_attention", tc_scaled_dot_product_attention(g_ctx, f32(3, 2, 4, 8, 0), f32(3, 2, 5, 8, 0), f32(3, 2, 5, 8, 0), typed(TC_BOOL, 2, 4, 4, 0, 0), 0, 0));
    EXPECT(E(TC_ERR_SHAPE), "tc_scaled_dot_product_attention", tc_scaled_dot_product_attention(g_ctx, f32(1, 8, 0, 0, 0), f32(2, 5, 8, 0, 0), f32(2, 5, 8, 0, 0), NULL, 0, 0));
    /* indexing */
    EXPECT(E(TC_ERR_SHAPE), "tc_embedding", tc_embedding(g_ctx, f32(1, 10, 0, 0, 0), typed(TC_I32, 1, 3, 0, 0, 0)));
    EXPECT(E(TC_ERR_SHAPE), "tc_index_select", tc_index_select(g_ctx, f32(2, 4, 5, 0, 0), 0, typed(TC_I32, 2, 2, 2, 0, 0)));
    /* a 0-d input has one element: 3 indices wrote 3 into its 1-element result
     * (a heap overflow found by tests/fuzz/ops.c); 0 indices, none */
    EXPECT(E(TC_ERR_SHAPE), "tc_index_select", tc_index_select(g_ctx, f32(0, 0, 0, 0, 0), 0, typed(TC_I32, 1, 3, 0, 0, 0)));
    EXPECT(E(TC_ERR_SHAPE), "tc_index_select", tc_index_select(g_ctx, f32(0, 0, 0, 0, 0), 0, typed(TC_I32, 1, 0, 0, 0, 0)));
    EXPECT(E(TC_ERR_SHAPE), "tc_gather", tc_gather(g_ctx, f32(2, 4, 5, 0, 0), 1, typed(TC_I32, 1, 3, 0, 0, 0)));
    EXPECT(E(TC_ERR_SHAPE), "tc_gather", tc_gather(g_ctx, f32(2, 4, 5, 0, 0), 1, typed(TC_I32, 2, 5, 2, 0, 0)));
    /* views */
    {
        int64_t s[3] = {4, 3, 0}, two[2] = {-1, -1}, bad[2] = {-2, 3}, ex[2] = {4, 5}, ex1[1] = {3}, exl[3] = {-1, 2, 3};
        tc_tensor *x = f32(2, 2, 3, 0, 0);
        EXPECT(E(TC_ERR_SHAPE), "tc_reshape", tc_reshape(g_ctx, x, 2, s));
        s[0] = 7; s[1] = -1;
        EXPECT(E(TC_ERR_SHAPE), "tc_reshape", tc_reshape(g_ctx, x, 2, s));
        EXPECT(E(TC_ERR_INVALID_ARG) | E(TC_ERR_SHAPE), "tc_reshape", tc_reshape(g_ctx, x, 2, two));
        EXPECT(E(TC_ERR_INVALID_ARG), "tc_reshape", tc_reshape(g_ctx, x, 2, bad));
        {
            int64_t z3[2] = {0, 3}, m0[2] = {-1, 0};
            EXPECT(E(TC_ERR_INVALID_ARG) | E(TC_ERR_SHAPE), "tc_reshape", tc_reshape(g_ctx, tc_zeros(g_ctx, TC_F32, 2, z3), 2, m0));
        }
        EXPECT(E(TC_ERR_SHAPE), "tc_expand", tc_expand(g_ctx, x, 2, ex));
        EXPECT(E(TC_ERR_SHAPE), "tc_expand", tc_expand(g_ctx, x, 1, ex1));
        EXPECT(E(TC_ERR_INVALID_ARG) | E(TC_ERR_SHAPE), "tc_expand", tc_expand(g_ctx, x, 3, exl));
    }
    /* nothing half-written: a failed copy leaves dst alone */
    {
        int64_t s3 = 3;
        tc_tensor *dst = tc_full(g_ctx, TC_F32, 1, &s3, 5.0);
        float back[3];
        EXPECT(E(TC_ERR_SHAPE), "tc_copy", tc_copy(g_ctx, dst, f32(1, 4, 0, 0, 0)));
        TC_CHECK(tc_read(dst, TC_F32, back, sizeof back) == TC_OK);
        TC_CHECK(back[0] == 5.0f && back[1] == 5.0f && back[2] == 5.0f);
    }
}

TC_TEST(test_dtype_errors) {
    tc_tensor *b = typed(TC_BOOL, 2, 3, 3, 0, 0), *i = typed(TC_I32, 2, 3, 3, 0, 0), *f = f32(2, 3, 3, 0, 0);
    int64_t s2[2] = {2, 2};
    float buf[16];
    EXPECT(E(TC_ERR_DTYPE), "tc_matmul", tc_matmul(g_ctx, b, b));
    EXPECT(E(TC_ERR_DTYPE), "tc_matmul", tc_matmul(g_ctx, i, i));
    EXPECT(E(TC_ERR_DTYPE), "tc_linear", tc_linear(g_ctx, i, i, NULL));
    EXPECT(E(TC_ERR_DTYPE), "tc_conv2d", tc_conv2d(g_ctx, typed(TC_I32, 4, 1, 1, 4, 4), typed(TC_I32, 4, 1, 1, 3, 3), NULL, NULL));
    EXPECT(E(TC_ERR_DTYPE), "tc_where", tc_where(g_ctx, f, f, f));
    EXPECT(E(TC_ERR_DTYPE), "tc_where", tc_where(g_ctx, i, f, f));
    EXPECT(E(TC_ERR_DTYPE), "tc_embedding", tc_embedding(g_ctx, f, f32(1, 2, 0, 0, 0)));
    EXPECT(E(TC_ERR_DTYPE), "tc_index_select", tc_index_select(g_ctx, f, 0, f32(1, 2, 0, 0, 0)));
    EXPECT(E(TC_ERR_DTYPE), "tc_gather", tc_gather(g_ctx, f, 0, b));
    EXPECT(E(TC_ERR_DTYPE), "tc_scaled_dot_product_attention", tc_scaled_dot_product_attention(g_ctx, f, f, f, i, 0, 0));
    EXPECT(E(TC_ERR_DTYPE), "tc_scaled_dot_product_attention", tc_scaled_dot_product_attention(g_ctx, i, i, i, NULL, 0, 0));
    EXPECT(E(TC_ERR_DTYPE) | E(TC_ERR_INVALID_ARG), "tc_zeros", tc_zeros(g_ctx, (tc_dtype)99, 2, s2));
    EXPECT(E(TC_ERR_DTYPE) | E(TC_ERR_INVALID_ARG), "tc_full", tc_full(g_ctx, (tc_dtype)-1, 2, s2, 1.0));
    EXPECT(E(TC_ERR_DTYPE) | E(TC_ERR_INVALID_ARG), "tc_cast", tc_cast(g_ctx, f, (tc_dtype)7));
    EXPECT(E(TC_ERR_DTYPE) | E(TC_ERR_INVALID_ARG), "tc_arange", tc_arange(g_ctx, TC_BOOL, 0, 4, 1));
    EXPECT(E(TC_ERR_DTYPE) | E(TC_ERR_INVALID_ARG), "tc_arange", tc_arange(g_ctx, (tc_dtype)42, 0, 4, 1));
    TC_CHECK(tc_read(f, (tc_dtype)42, buf, sizeof buf) != TC_OK);
    TC_CHECK(tc_write(f, (tc_dtype)42, buf, sizeof buf) != TC_OK);
    tc_ctx_clear_error(g_ctx);
}

TC_TEST(test_axis_errors) {
    tc_tensor *x = f32(2, 2, 3, 0, 0), *out[4];
    int ax2 = 2, axm3 = -3, rep[2] = {0, 0}, rep2[2] = {1, -1}, three[3] = {0, 1, 0};
    int p_rep[2] = {0, 0}, p_oob[2] = {0, 2};
    int32_t iv[2] = {0, 1};
    int64_t three_sz[1] = {3};
    memset(out, 0, sizeof out);
    EXPECT(E(TC_ERR_AXIS), "tc_sum", tc_sum(g_ctx, x, 1, &ax2, 0));
    EXPECT(E(TC_ERR_AXIS), "tc_sum", tc_sum(g_ctx, x, 1, &axm3, 1));
    EXPECT(E(TC_ERR_AXIS), "tc_sum", tc_sum(g_ctx, x, 2, rep, 0));
    EXPECT(E(TC_ERR_AXIS), "tc_mean", tc_mean(g_ctx, x, 2, rep2, 0));
    EXPECT(E(TC_ERR_AXIS) | E(TC_ERR_INVALID_ARG), "tc_max", tc_max(g_ctx, x, 3, three, 0));
    EXPECT(E(TC_ERR_AXIS), "tc_min", tc_min(g_ctx, x, 1, &ax2, 0));
    EXPECT(E(TC_ERR_AXIS), "tc_argmax", tc_argmax(g_ctx, x, 1, &ax2, 0));
    EXPECT(E(TC_ERR_AXIS), "tc_var", tc_var(g_ctx, x, 1, &axm3, 1, 0));
    EXPECT(E(TC_ERR_AXIS), "tc_softmax", tc_softmax(g_ctx, x, 2));
    EXPECT(E(TC_ERR_AXIS), "tc_log_softmax", tc_log_softmax(g_ctx, x, -3));
    EXPECT(E(TC_ERR_AXIS), "tc_permute", tc_permute(g_ctx, x, p_rep));
    EXPECT(E(TC_ERR_AXIS), "tc_permute", tc_permute(g_ctx, x, p_oob));
    EXPECT(E(TC_ERR_AXIS), "tc_transpose", tc_transpose(g_ctx, x, 0, 2));
    EXPECT(E(TC_ERR_AXIS), "tc_transpose", tc_transpose(g_ctx, x, -3, 0));
    EXPECT(E(TC_ERR_AXIS), "tc_slice", tc_slice(g_ctx, x, 2, 0, 1, 1));
    EXPECT(E(TC_ERR_AXIS), "tc_select", tc_select(g_ctx, x, -3, 0));
    EXPECT(E(TC_ERR_AXIS), "tc_squeeze", tc_squeeze(g_ctx, x, 2));
    EXPECT(E(TC_ERR_AXIS), "tc_unsqueeze", tc_unsqueeze(g_ctx, x, 3));
    EXPECT(E(TC_ERR_AXIS), "tc_unsqueeze", tc_unsqueeze(g_ctx, x, -4));
    EXPECT(E(TC_ERR_AXIS), "tc_flatten", tc_flatten(g_ctx, x, 0, 2));
    EXPECT(E(TC_ERR_AXIS) | E(TC_ERR_INVALID_ARG), "tc_flatten", tc_flatten(g_ctx, x, 1, 0));
    EXPECT(E(TC_ERR_AXIS), "tc_index_select", tc_index_select(g_ctx, x, 2, idx1(2, iv)));
    EXPECT(E(TC_ERR_AXIS), "tc_gather", tc_gather(g_ctx, x, -3, typed(TC_I32, 2, 1, 1, 0, 0)));
    {
        tc_tensor *xs[2];
        xs[0] = x; xs[1] = x;
        EXPECT(E(TC_ERR_AXIS), "tc_concat", tc_concat(g_ctx, 2, xs, 2));
    }
    EXPECT_PIECES(E(TC_ERR_AXIS), "tc_split", out, 4, tc_split(g_ctx, x, 1, 2, out, 4));
    EXPECT_PIECES(E(TC_ERR_AXIS), "tc_split_sizes", out, 1, tc_split_sizes(g_ctx, x, 1, three_sz, -3, out));
    EXPECT_PIECES(E(TC_ERR_AXIS), "tc_chunk", out, 4, tc_chunk(g_ctx, x, 2, 5, out, 4));
    EXPECT(E(TC_ERR_AXIS), "tc_softmax", tc_softmax(g_ctx, tc_scalar(g_ctx, 1.0), 1));
}

TC_TEST(test_size_errors) {
    int64_t neg[2] = {2, -1}, nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, big[2], big3[3], huge1[1], huge_e[2], s1 = 1;
    tc_tensor *x8, *x = f32(2, 2, 3, 0, 0);
    big[0] = big[1] = (int64_t)1 << 40;
    big3[0] = big3[1] = (int64_t)1 << 31; big3[2] = 4;
    huge1[0] = (int64_t)1 << 62;
    huge_e[0] = huge_e[1] = (int64_t)1 << 40;
    /* negative sizes */
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_zeros", tc_zeros(g_ctx, TC_F32, 2, neg));
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_full", tc_full(g_ctx, TC_I32, 2, neg, 1.0));
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_empty", tc_empty(g_ctx, TC_F32, 2, neg));
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_rand_uniform", tc_rand_uniform(g_ctx, 2, neg, 0, 1, 1));
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_rand_normal", tc_rand_normal(g_ctx, 2, neg, 0, 1, 1));
    {
        float d[4] = {0, 0, 0, 0};
        EXPECT(E(TC_ERR_INVALID_ARG), "tc_from_data", tc_from_data(g_ctx, TC_F32, 2, neg, d));
        EXPECT(E(TC_ERR_INVALID_ARG), "tc_wrap", tc_wrap(g_ctx, TC_F32, 2, neg, NULL, d));
    }
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_adaptive_avg_pool2d", tc_adaptive_avg_pool2d(g_ctx, f32(4, 1, 1, 4, 4), -1, 2));
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_zeros", tc_zeros(g_ctx, TC_F32, -1, neg));
    /* ndim > 8 */
    EXPECT(E(TC_ERR_INVALID_ARG) | E(TC_ERR_SHAPE), "tc_zeros", tc_zeros(g_ctx, TC_F32, 9, nine));
    EXPECT(E(TC_ERR_INVALID_ARG) | E(TC_ERR_SHAPE), "tc_reshape", tc_reshape(g_ctx, f32(1, 1, 0, 0, 0), 9, nine));
    EXPECT(E(TC_ERR_INVALID_ARG) | E(TC_ERR_SHAPE), "tc_expand", tc_expand(g_ctx, f32(1, 1, 0, 0, 0), 9, nine));
    x8 = tc_ones(g_ctx, TC_F32, 8, nine);
    TC_CHECK(tc_status(x8) == TC_OK && tc_ndim(x8) == 8);
    EXPECT(E(TC_ERR_INVALID_ARG) | E(TC_ERR_SHAPE) | E(TC_ERR_AXIS), "tc_unsqueeze", tc_unsqueeze(g_ctx, x8, 0));
    /* overflow */
    EXPECT(E(TC_ERR_OVERFLOW), "tc_zeros", tc_zeros(g_ctx, TC_F32, 2, big));
    EXPECT(E(TC_ERR_OVERFLOW), "tc_empty", tc_empty(g_ctx, TC_I32, 3, big3));
    EXPECT(E(TC_ERR_OVERFLOW), "tc_ones", tc_ones(g_ctx, TC_F32, 1, huge1));
    EXPECT(E(TC_ERR_OVERFLOW), "tc_rand_uniform", tc_rand_uniform(g_ctx, 2, big, 0, 1, 1));
    EXPECT(E(TC_ERR_OVERFLOW), "tc_expand", tc_expand(g_ctx, tc_ones(g_ctx, TC_F32, 1, &s1), 2, huge_e));
    EXPECT(E(TC_ERR_OVERFLOW) | E(TC_ERR_INVALID_ARG), "tc_arange", tc_arange(g_ctx, TC_F32, 0, 1e30, 1));
    {   /* empty, but the strides of the other sizes overflow; strides that
         * reach past the address range (issue 35, defect 5) */
        int64_t z[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40}, ws[2] = {2, 3}, wst[2] = {INT64_MAX / 2, 1};
        float d[6] = {0, 0, 0, 0, 0, 0};
        EXPECT(E(TC_ERR_OVERFLOW), "tc_empty", tc_empty(g_ctx, TC_F32, 3, z));
        EXPECT(E(TC_ERR_OVERFLOW), "tc_zeros", tc_zeros(g_ctx, TC_F32, 3, z));
        EXPECT(E(TC_ERR_OVERFLOW), "tc_from_data", tc_from_data(g_ctx, TC_F32, 3, z, d));
        EXPECT(E(TC_ERR_OVERFLOW), "tc_wrap", tc_wrap(g_ctx, TC_F32, 3, z, NULL, d));
        EXPECT(E(TC_ERR_OVERFLOW), "tc_wrap", tc_wrap(g_ctx, TC_F32, 2, ws, wst, d));
        /* an empty tensor reshaped to such sizes (the strides overflowed in
         * tc__contig_strides; found by tests/fuzz/ops.c) */
        EXPECT(E(TC_ERR_OVERFLOW), "tc_reshape", tc_reshape(g_ctx, tc_zeros(g_ctx, TC_F32, 1, z), 3, z));
        wst[0] = 3;
        TC_CHECK(tc_status(tc_wrap(g_ctx, TC_F32, 2, ws, wst, d)) == TC_OK);
        wst[0] = INT64_MAX / 2;
        ws[0] = 0; /* empty: nothing is read */
        TC_CHECK(tc_status(tc_wrap(g_ctx, TC_F32, 2, ws, wst, d)) == TC_OK);
    }
    {
        int64_t p[2] = {INT64_MAX - 1, 5};
        EXPECT(E(TC_ERR_OVERFLOW) | E(TC_ERR_INVALID_ARG), "tc_pad", tc_pad(g_ctx, x, 2, p, 0.0));
    }
    {
        int64_t p[2] = {-4, 0};
        EXPECT(E(TC_ERR_SHAPE) | E(TC_ERR_INVALID_ARG), "tc_pad", tc_pad(g_ctx, x, 2, p, 0.0));
        EXPECT(E(TC_ERR_INVALID_ARG), "tc_pad", tc_pad(g_ctx, x, 1, p, 0.0));
        int64_t z6[6] = {0, 0, 0, 0, 0, 0};
        EXPECT(E(TC_ERR_INVALID_ARG) | E(TC_ERR_AXIS), "tc_pad", tc_pad(g_ctx, x, 6, z6, 0.0));
    }
}

TC_TEST(test_index_errors) {
    tc_tensor *w = f32(2, 5, 3, 0, 0), *x = f32(2, 4, 6, 0, 0);
    int32_t v5[2] = {1, 5}, vm1[2] = {0, -1}, v4[1] = {4}, vm5[1] = {-5}, v6[1] = {6}, vm7[1] = {-7};
    int64_t gi_sh[2] = {1, 1}, gi_bad[1] = {4}, at[2] = {4, 0}, atn[2] = {-1, 0};
    int32_t gbad = 4;
    EXPECT(E(TC_ERR_INDEX), "tc_embedding", tc_embedding(g_ctx, w, idx1(2, v5)));
    EXPECT(E(TC_ERR_INDEX), "tc_embedding", tc_embedding(g_ctx, w, idx1(2, vm1)));
    EXPECT(E(TC_ERR_INDEX), "tc_index_select", tc_index_select(g_ctx, x, 0, idx1(1, v4)));
    EXPECT(E(TC_ERR_INDEX), "tc_index_select", tc_index_select(g_ctx, x, 0, idx1(1, vm5)));
    EXPECT(E(TC_ERR_INDEX), "tc_index_select", tc_index_select(g_ctx, x, -1, idx1(1, v6)));
    EXPECT(E(TC_ERR_INDEX), "tc_index_select", tc_index_select(g_ctx, x, 1, idx1(1, vm7)));
    EXPECT(E(TC_ERR_INDEX), "tc_gather", tc_gather(g_ctx, x, 0, tc_from_data(g_ctx, TC_I32, 2, gi_sh, &gbad)));
    gbad = -5;
    EXPECT(E(TC_ERR_INDEX), "tc_gather", tc_gather(g_ctx, x, 0, tc_from_data(g_ctx, TC_I32, 2, gi_sh, &gbad)));
    gbad = 6;
    EXPECT(E(TC_ERR_INDEX), "tc_gather", tc_gather(g_ctx, x, 1, tc_from_data(g_ctx, TC_I32, 2, gi_sh, &gbad)));
    {   /* api.h: an index outside [0, size) is an error (like PyTorch) */
        int32_t m1[1] = {-1};
        int64_t g11[2] = {1, 1};
        EXPECT(E(TC_ERR_INDEX), "tc_index_select", tc_index_select(g_ctx, x, 0, idx1(1, m1)));
        EXPECT(E(TC_ERR_INDEX), "tc_gather", tc_gather(g_ctx, x, 1, tc_from_data(g_ctx, TC_I32, 2, g11, m1)));
    }
    EXPECT(E(TC_ERR_INDEX), "tc_select", tc_select(g_ctx, x, 0, 4));
    EXPECT(E(TC_ERR_INDEX), "tc_select", tc_select(g_ctx, x, 1, -7));
    (void)gi_bad;
    /* host element access */
    TC_CHECK(tc_set(x, at, 1.0) == TC_ERR_INDEX);
    TC_CHECK(tc_set(x, atn, 1.0) == TC_ERR_INDEX);
    TC_CHECK(tc_get(x, at) != tc_get(x, at)); /* NaN */
    TC_CHECK(tc_get(x, atn) != tc_get(x, atn));
    TC_CHECK(tc_set(x, NULL, 1.0) == TC_ERR_NULL);
    tc_ctx_clear_error(g_ctx);
}

TC_TEST(test_option_errors) {
    tc_tensor *x = f32(2, 4, 6, 0, 0), *img = f32(4, 1, 2, 6, 6), *out[8];
    tc_pool2d_opts po;
    tc_conv2d_opts co;
    int64_t bad_sizes[2] = {5, 2}, neg_sizes[2] = {7, -1};
    memset(out, 0, sizeof out);
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_slice", tc_slice(g_ctx, x, 0, 0, 4, 0));
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_slice", tc_slice(g_ctx, x, 1, 4, 0, -1));
    EXPECT_PIECES(E(TC_ERR_INVALID_ARG), "tc_chunk", out, 8, tc_chunk(g_ctx, x, 0, 0, out, 8));
    EXPECT_PIECES(E(TC_ERR_INVALID_ARG), "tc_chunk", out, 8, tc_chunk(g_ctx, x, -2, 0, out, 8));
    EXPECT_PIECES(E(TC_ERR_INVALID_ARG), "tc_split", out, 8, tc_split(g_ctx, x, 0, 1, out, 8));
    EXPECT_PIECES(E(TC_ERR_INVALID_ARG), "tc_split", out, 8, tc_split(g_ctx, x, -1, 1, out, 8));
    EXPECT_PIECES(E(TC_ERR_SHAPE) | E(TC_ERR_INVALID_ARG), "tc_split_sizes", out, 2, tc_split_sizes(g_ctx, x, 2, bad_sizes, 1, out));
    EXPECT_PIECES(E(TC_ERR_INVALID_ARG), "tc_split_sizes", out, 2, tc_split_sizes(g_ctx, x, 2, neg_sizes, 1, out));
    /* pooling */
    memset(&po, 0, sizeof po);
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_max_pool2d", tc_max_pool2d(g_ctx, img, &po)); /* kernel 0 */
    po.kernel[0] = 3; po.kernel[1] = 0;
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_avg_pool2d", tc_avg_pool2d(g_ctx, img, &po));
    po.kernel[1] = 3; po.padding[0] = 2; /* > kernel/2 */
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_max_pool2d", tc_max_pool2d(g_ctx, img, &po));
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_avg_pool2d", tc_avg_pool2d(g_ctx, img, &po));
    po.padding[0] = -1;
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_max_pool2d", tc_max_pool2d(g_ctx, img, &po));
    po.padding[0] = 0; po.stride[1] = -1;
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_max_pool2d", tc_max_pool2d(g_ctx, img, &po));
    po.stride[1] = 0; po.dilation[0] = -2;
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_max_pool2d", tc_max_pool2d(g_ctx, img, &po));
    po.dilation[0] = 0; po.kernel[0] = po.kernel[1] = 7; /* window bigger than the input */
    EXPECT(E(TC_ERR_SHAPE) | E(TC_ERR_INVALID_ARG), "tc_max_pool2d", tc_max_pool2d(g_ctx, img, &po));
    po.kernel[0] = po.kernel[1] = 2;
    EXPECT(E(TC_ERR_SHAPE), "tc_max_pool2d", tc_max_pool2d(g_ctx, x, &po)); /* 2-D input */
    EXPECT(E(TC_ERR_SHAPE), "tc_adaptive_avg_pool2d", tc_adaptive_avg_pool2d(g_ctx, x, 2, 2));
    /* conv options */
    memset(&co, 0, sizeof co);
    co.stride[0] = -1;
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_conv2d", tc_conv2d(g_ctx, img, f32(4, 2, 2, 3, 3), NULL, &co));
    co.stride[0] = 1; co.padding[1] = -1;
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_conv2d", tc_conv2d(g_ctx, img, f32(4, 2, 2, 3, 3), NULL, &co));
    co.padding[1] = 0; co.dilation[0] = -1;
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_conv2d", tc_conv2d(g_ctx, img, f32(4, 2, 2, 3, 3), NULL, &co));
    co.dilation[0] = 0; co.groups = -2;
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_conv2d", tc_conv2d(g_ctx, img, f32(4, 2, 2, 3, 3), NULL, &co));
    /* creation arguments */
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_arange", tc_arange(g_ctx, TC_F32, 0, 10, 0));
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_arange", tc_arange(g_ctx, TC_F32, 0, 10, -1));
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_arange", tc_arange(g_ctx, TC_I32, 5, 0, 1));
    EXPECT(E(TC_ERR_INVALID_ARG), "tc_arange", tc_arange(g_ctx, TC_F32, 0, NAN, 1));
    {
        int64_t s2 = 2;
        EXPECT(E(TC_ERR_INVALID_ARG), "tc_rand_normal", tc_rand_normal(g_ctx, 1, &s2, 0.0, -1.0, 1));
    }
    TC_CHECK(tc_ctx_set_num_threads(g_ctx, -1) == TC_ERR_INVALID_ARG);
    TC_CHECK(tc_ctx_num_threads(g_ctx) >= 1);
    tc_ctx_clear_error(g_ctx);
}

/* extreme integer arguments: an error (or the right answer), never a crash
 * or signed overflow (run under UBSan) */
TC_TEST(test_extreme_values) {
    tc_tensor *x = f32(2, 4, 6, 0, 0), *img = f32(4, 1, 1, 4, 4), *out[8];
    tc_conv2d_opts co;
    tc_pool2d_opts po;
    int ax = INT_MIN, n;
    unsigned bad = E(TC_ERR_SHAPE) | E(TC_ERR_INVALID_ARG) | E(TC_ERR_OVERFLOW);
    memset(out, 0, sizeof out);
    EXPECT(E(TC_ERR_AXIS), "tc_sum", tc_sum(g_ctx, x, 1, &ax, 0));
    ax = INT_MAX;
    EXPECT(E(TC_ERR_AXIS), "tc_mean", tc_mean(g_ctx, x, 1, &ax, 1));
    EXPECT(E(TC_ERR_AXIS), "tc_softmax", tc_softmax(g_ctx, x, INT_MIN));
    EXPECT(E(TC_ERR_AXIS), "tc_unsqueeze", tc_unsqueeze(g_ctx, x, INT_MIN));
    EXPECT(E(TC_ERR_AXIS), "tc_transpose", tc_transpose(g_ctx, x, INT_MIN, 0));
    EXPECT(E(TC_ERR_AXIS) | E(TC_ERR_INVALID_ARG), "tc_flatten", tc_flatten(g_ctx, x, INT_MIN, INT_MAX));
    EXPECT(E(TC_ERR_AXIS), "tc_slice", tc_slice(g_ctx, x, INT_MIN, 0, 1, 1));
    EXPECT(E(TC_ERR_INDEX), "tc_select", tc_select(g_ctx, x, 0, INT64_MIN));
    EXPECT(E(TC_ERR_INDEX), "tc_select", tc_select(g_ctx, x, 1, INT64_MAX));
    EXPECT(E(TC_ERR_AXIS) | E(TC_ERR_INVALID_ARG) | E(TC_ERR_SHAPE), "tc_layer_norm", tc_layer_norm(g_ctx, x, INT_MAX, NULL, NULL, 1e-5));
    TC_CHECK(tc_dim(x, INT_MIN) == 0 && tc_dim(x, INT_MAX) == 0);
    {
        int64_t p1[2] = {INT64_MIN, 0}, p2[2] = {INT64_MAX, INT64_MAX}, ss[3] = {INT64_MAX, INT64_MAX, 8};
        int64_t r2[2] = {INT64_MAX, 2}, r3[3] = {-1, INT64_MAX, 2};
        EXPECT(bad, "tc_pad", tc_pad(g_ctx, x, 2, p1, 0.0));
        EXPECT(bad, "tc_pad", tc_pad(g_ctx, x, 2, p2, 0.0));
        EXPECT_PIECES(bad, "tc_split_sizes", out, 3, tc_split_sizes(g_ctx, x, 3, ss, 1, out));
        EXPECT(E(TC_ERR_SHAPE) | E(TC_ERR_OVERFLOW), "tc_reshape", tc_reshape(g_ctx, x, 2, r2));
        EXPECT(E(TC_ERR_SHAPE) | E(TC_ERR_OVERFLOW) | E(TC_ERR_INVALID_ARG), "tc_reshape", tc_reshape(g_ctx, x, 3, r3));
    }
    EXPECT(E(TC_ERR_OVERFLOW) | E(TC_ERR_INVALID_ARG), "tc_arange", tc_arange(g_ctx, TC_F32, 0, 1, 1e-300));
    EXPECT(E(TC_ERR_OVERFLOW) | E(TC_ERR_INVALID_ARG), "tc_adaptive_avg_pool2d", tc_adaptive_avg_pool2d(g_ctx, f32(4, 2, 2, 4, 4), INT64_MAX, 2));
    /* huge but valid: a single piece / step */
    n = tc_split(g_ctx, x, INT64_MAX, 1, out, 8);
    TC_CHECK(n == 1 && tc_status(out[0]) == TC_OK && tc_dim(out[0], 1) == 6);
    n = tc_chunk(g_ctx, x, INT_MAX, 1, out, 8);
    TC_CHECK(n == 6 && tc_status(out[0]) == TC_OK && tc_dim(out[0], 1) == 1);
    {
        tc_tensor *r = tc_slice(g_ctx, x, 1, 0, INT64_MAX, INT64_MAX);
        TC_CHECK(tc_status(r) == TC_OK && tc_dim(r, 1) == 1);
    }
    /* conv / pool options at the int limits */
    memset(&co, 0, sizeof co);
    co.dilation[0] = INT_MAX;
    EXPECT(bad, "tc_conv2d", tc_conv2d(g_ctx, img, f32(4, 1, 1, 3, 3), NULL, &co));
    co.dilation[0] = 0; co.stride[0] = co.stride[1] = INT_MAX;
    {
        tc_tensor *r = tc_conv2d(g_ctx, img, f32(4, 1, 1, 3, 3), NULL, &co); /* one output position */
        TC_CHECKF(tc_status(r) == TC_OK && tc_dim(r, 2) == 1 && tc_dim(r, 3) == 1, "conv2d stride INT_MAX: %s", tc_error(r));
    }
    co.stride[0] = co.stride[1] = 0; co.groups = INT_MAX;
    EXPECT(bad, "tc_conv2d", tc_conv2d(g_ctx, img, f32(4, 1, 1, 3, 3), NULL, &co));
    memset(&po, 0, sizeof po);
    po.kernel[0] = po.kernel[1] = INT_MAX;
    EXPECT(bad, "tc_max_pool2d", tc_max_pool2d(g_ctx, img, &po));
    EXPECT(bad, "tc_avg_pool2d", tc_avg_pool2d(g_ctx, img, &po));
    po.kernel[0] = po.kernel[1] = 2; po.dilation[0] = INT_MAX;
    EXPECT(bad, "tc_max_pool2d", tc_max_pool2d(g_ctx, img, &po));
    po.dilation[0] = 0; po.stride[0] = INT_MAX; po.ceil_mode = 1;
    {
        tc_tensor *r = tc_max_pool2d(g_ctx, img, &po);
        TC_CHECKF(tc_status(r) == TC_OK && tc_dim(r, 2) == 1, "max_pool2d stride INT_MAX: %s", tc_error(r));
    }
    tc_ctx_clear_error(g_ctx);
}

TC_TEST(test_host_access_errors) {
    int64_t s6 = 6;
    tc_tensor *x = tc_arange(g_ctx, TC_F32, 0, 6, 1), *bad;
    unsigned char buf[64];
    size_t i;
    memset(buf, 0xAB, sizeof buf);
    {
        tc_result r = tc_read(x, TC_F32, buf, 23); /* needs 24 */
        TC_CHECKF(r == TC_ERR_INVALID_ARG || r == TC_ERR_SHAPE, "tc_read with a short buffer gave %s", code_name(r));
    }
    for (i = 0; i < sizeof buf; i++) TC_CHECK(buf[i] == 0xAB); /* nothing written */
    {
        tc_result r = tc_write(x, TC_F32, buf, 20);
        TC_CHECKF(r == TC_ERR_INVALID_ARG || r == TC_ERR_SHAPE, "tc_write with a short buffer gave %s", code_name(r));
        TC_CHECK(tc_item(tc_select(g_ctx, x, 0, 5)) == 5.0); /* nothing half-written */
    }
    TC_CHECK(tc_read(x, TC_F32, NULL, 24) == TC_ERR_NULL);
    TC_CHECK(tc_write(x, TC_F32, NULL, 24) == TC_ERR_NULL);
    TC_CHECK(tc_read(x, TC_F32, buf, 24) == TC_OK);
    TC_CHECK(tc_read(x, TC_I32, buf, 23) != TC_OK);
    TC_CHECK(tc_read(x, TC_BOOL, buf, 6) == TC_OK);
    TC_CHECK(tc_read(x, TC_BOOL, buf, 5) != TC_OK);
    TC_CHECK(tc_item(x) != tc_item(x)); /* numel 6 -> NaN */
    bad = tc_matmul(g_ctx, x, tc_arange(g_ctx, TC_F32, 0, 5, 1));
    TC_CHECK(tc_read(bad, TC_F32, buf, sizeof buf) == TC_ERR_SHAPE);
    TC_CHECK(tc_write(bad, TC_F32, buf, sizeof buf) == TC_ERR_SHAPE);
    (void)s6;
    tc_ctx_clear_error(g_ctx);
}

TC_TEST(test_scope_state_errors) {
    int d = tc_scope_depth(g_ctx);
    while (tc_scope_depth(g_ctx) > 0) tc_scope_end(g_ctx);
    TC_CHECK(tc_scope_end(g_ctx) == TC_ERR_STATE);
    TC_CHECK(tc_scope_depth(g_ctx) == 0);
    tc_scope_begin(g_ctx);
    TC_CHECK(tc_scope_end(g_ctx) == TC_OK);
    TC_CHECK(tc_scope_end(g_ctx) == TC_ERR_STATE);
    (void)d;
    tc_ctx_clear_error(g_ctx);
}

/* ------------------------------------------------------------------------ */
/* Propagation and the context's first error                                 */
/* ------------------------------------------------------------------------ */

static int g_logged;
static char g_logmsg[512];
static void log_cb(void *user, tc_log_level level, const char *msg) {
    (void)user;
    (void)level;
    g_logged++;
    snprintf(g_logmsg, sizeof g_logmsg, "%s", msg ? msg : "");
}

TC_TEST(test_propagation) {
    tc_ctx *ctx = tc_ctx_create(NULL);
    tc_tensor *a = tc_arange(ctx, TC_F32, 0, 6, 1), *ok, *e1, *y, *out[4], *xs[2];
    const char *m1;
    int line1, line2, n;
    int64_t s23[2] = {2, 3};
    char saved[512];
    tc_conv2d_opts co;
    memset(&co, 0, sizeof co);
    TC_CHECK(tc_ctx_status(ctx) == TC_OK);
    TC_CHECK(tc_ctx_error(ctx) != NULL && tc_ctx_error(ctx)[0] == 0);
    ok = tc_reshape(ctx, a, 2, s23);
    TC_CHECK(tc_status(ok) == TC_OK);
    TC_CHECK(tc_error(ok) != NULL && tc_error(ok)[0] == 0);
    line1 = __LINE__; e1 = tc_matmul(ctx, ok, ok);
    m1 = tc_error(e1);
    TC_CHECK(tc_status(e1) == TC_ERR_SHAPE);
    TC_CHECKF(strstr(m1, "tc_matmul") && contains_line(m1, line1), "first error: \"%s\"", m1);
    snprintf(saved, sizeof saved, "%s", m1);
    /* ops given an errored input carry the original error */
    line2 = __LINE__; y = tc_relu(ctx, e1);
    TC_CHECK(tc_status(y) == TC_ERR_SHAPE);
    TC_CHECKF(strcmp(tc_error(y), saved) == 0, "relu(errored): \"%s\", expected \"%s\"", tc_error(y), saved);
    TC_CHECK(!contains_line(tc_error(y), line2));
    y = tc_sum(ctx, tc_reshape(ctx, tc_add(ctx, ok, tc_mul_scalar(ctx, e1, 2.0)), 1, s23 + 0), 0, NULL, 0);
    TC_CHECKF(tc_status(y) == TC_ERR_SHAPE && strcmp(tc_error(y), saved) == 0, "chain: \"%s\"", tc_error(y));
    y = tc_where(ctx, tc_gt(ctx, ok, ok), ok, e1);
    TC_CHECKF(tc_status(y) == TC_ERR_SHAPE && strcmp(tc_error(y), saved) == 0, "where: \"%s\"", tc_error(y));
    y = tc_add(ctx, e1, tc_relu(ctx, NULL)); /* two errored inputs: the first operand's */
    TC_CHECKF(strcmp(tc_error(y), saved) == 0, "add(e1, e2): \"%s\"", tc_error(y));
    xs[0] = ok; xs[1] = e1;
    y = tc_concat(ctx, 2, xs, 0);
    TC_CHECKF(tc_status(y) == TC_ERR_SHAPE && strcmp(tc_error(y), saved) == 0, "concat: \"%s\"", tc_error(y));
    {
        int64_t s4[4] = {1, 1, 2, 3};
        y = tc_conv2d(ctx, tc_reshape(ctx, a, 4, s4), e1, NULL, &co);
    }
    TC_CHECK(tc_status(y) != TC_OK);
    y = tc_scaled_dot_product_attention(ctx, ok, ok, e1, NULL, 0, 0);
    TC_CHECKF(tc_status(y) == TC_ERR_SHAPE && strcmp(tc_error(y), saved) == 0, "sdpa: \"%s\"", tc_error(y));
    y = tc_layer_norm(ctx, ok, 1, e1, NULL, 1e-5);
    TC_CHECKF(tc_status(y) == TC_ERR_SHAPE && strcmp(tc_error(y), saved) == 0, "layer_norm weight: \"%s\"", tc_error(y));
    memset(out, 0, sizeof out);
    n = tc_split(ctx, e1, 1, 0, out, 4);
    TC_CHECK(n == -1);
    if (n == -1) {
        int k;
        for (k = 0; k < 4; k++)
            TC_CHECKF(out[k] && tc_status(out[k]) == TC_ERR_SHAPE && strcmp(tc_error(out[k]), saved) == 0, "split slot %d: \"%s\"", k,
                      out[k] ? tc_error(out[k]) : "(NULL)");
    }
    y = tc_copy(ctx, tc_zeros(ctx, TC_F32, 2, s23), e1);
    TC_CHECK(tc_status(y) == TC_ERR_SHAPE);
    /* host access on an errored tensor */
    {
        float buf[8];
        TC_CHECK(tc_read(e1, TC_F32, buf, sizeof buf) == TC_ERR_SHAPE);
        TC_CHECK(tc_item(e1) != tc_item(e1));
        TC_CHECK(tc_data(e1) == NULL);
        TC_CHECK(tc_keep(e1) == e1);
    }
    /* the context keeps the first error */
    TC_CHECK(tc_ctx_status(ctx) == TC_ERR_SHAPE);
    TC_CHECKF(strcmp(tc_ctx_error(ctx), saved) == 0, "ctx error \"%s\", expected the first \"%s\"", tc_ctx_error(ctx), saved);
    y = tc_where(ctx, ok, ok, ok); /* a second, different error */
    TC_CHECK(tc_status(y) == TC_ERR_DTYPE);
    TC_CHECK(tc_ctx_status(ctx) == TC_ERR_SHAPE);
    TC_CHECK(strcmp(tc_ctx_error(ctx), saved) == 0);
    tc_ctx_clear_error(ctx);
    TC_CHECK(tc_ctx_status(ctx) == TC_OK);
    TC_CHECK(tc_ctx_error(ctx) != NULL && tc_ctx_error(ctx)[0] == 0);
    /* errored tensors keep their own message after the clear */
    TC_CHECK(strcmp(tc_error(e1), saved) == 0);
    line2 = __LINE__; y = tc_where(ctx, ok, ok, ok);
    TC_CHECK(tc_ctx_status(ctx) == TC_ERR_DTYPE);
    TC_CHECKF(contains_line(tc_ctx_error(ctx), line2) && strstr(tc_ctx_error(ctx), "tc_where"), "ctx error after clear: \"%s\"",
              tc_ctx_error(ctx));
    tc_ctx_clear_error(ctx);
    /* propagating an old error after a clear must not crash (whether it is
     * recorded again is not specified) */
    (void)tc_relu(ctx, e1);
    /* _at form with a NULL file */
    y = tc_add_at(ctx, ok, tc_arange(ctx, TC_F32, 0, 4, 1), NULL, 0);
    TC_CHECK(tc_status(y) == TC_ERR_SHAPE);
    TC_CHECK(tc_error(y) != NULL && strstr(tc_error(y), "tc_add") != NULL);
    tc_ctx_clear_error(ctx);
    /* the context still works after errors */
    y = tc_sum(ctx, ok, 0, NULL, 0);
    TC_CHECK(tc_status(y) == TC_OK && tc_item(y) == 15.0);
    tc_free(e1);
    tc_ctx_destroy(ctx);
}

TC_TEST(test_log_op_errors) {
    tc_ctx_options o;
    tc_ctx *ctx;
    tc_tensor *a;
    int line;
    memset(&o, 0, sizeof o);
    o.log = log_cb;
    o.log_op_errors = 1;
    o.num_threads = 1;
    ctx = tc_ctx_create(&o);
    a = tc_arange(ctx, TC_F32, 0, 6, 1);
    g_logged = 0;
    line = __LINE__; (void)tc_matmul(ctx, a, tc_arange(ctx, TC_F32, 0, 5, 1));
    TC_CHECKF(g_logged >= 1, "log_op_errors: the error was not logged");
    TC_CHECKF(strstr(g_logmsg, "tc_matmul") && contains_line(g_logmsg, line), "logged \"%s\"", g_logmsg);
    tc_ctx_destroy(ctx);
    /* without log_op_errors nothing is logged for an op error */
    o.log_op_errors = 0;
    ctx = tc_ctx_create(&o);
    a = tc_arange(ctx, TC_F32, 0, 6, 1);
    g_logged = 0;
    (void)tc_matmul(ctx, a, tc_arange(ctx, TC_F32, 0, 5, 1));
    TC_CHECKF(g_logged == 0, "an op error was logged without log_op_errors: \"%s\"", g_logmsg);
    tc_ctx_destroy(ctx);
}

int main(void) {
    tc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.num_threads = 2;
    g_ctx = tc_ctx_create(&o);
    if (!g_ctx) {
        fprintf(stderr, "tc_ctx_create failed\n");
        return 1;
    }
    TC_RUN(test_null_ctx);
    TC_RUN(test_every_pointwise_op);
    TC_RUN(test_null_inputs);
    TC_RUN(test_shape_errors);
    TC_RUN(test_dtype_errors);
    TC_RUN(test_axis_errors);
    TC_RUN(test_size_errors);
    TC_RUN(test_index_errors);
    TC_RUN(test_option_errors);
    TC_RUN(test_extreme_values);
    TC_RUN(test_host_access_errors);
    TC_RUN(test_scope_state_errors);
    TC_RUN(test_propagation);
    TC_RUN(test_log_op_errors);
    tc_ctx_destroy(g_ctx);
    return TC_TEST_SUMMARY();
}
