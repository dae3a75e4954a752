/* The graphs the CUDA tests run: every pointwise op of the op table (both
 * operand sides broadcast for the binary ones), every dtype a kernel loads
 * and stores, reductions over every kind of axis set, the row ops
 * (softmax, log_softmax, layer_norm, rms_norm) on short, block-sized and
 * long rows, strided and broadcast inputs, gates and attributes.
 * test_cuda_nvrtc.c compiles each one's generated CUDA C with the real
 * NVRTC; test_cuda.c runs each on the CUDA backend (through the emulator)
 * against the CPU. */
#ifndef TC_CUDA_GRAPHS_H
#define TC_CUDA_GRAPHS_H
#include "ref_pointwise.h"

typedef struct cg_case {
    char name[48];
    int kind, op;                   /* what model_fn builds              */
    int nin;
    tc_dtype dt[3];
    int ndim[3];
    int64_t shape[3][4];
    int transpose0;                 /* input 0 is a transposed view      */
} cg_case;

enum {
    CG_UNARY, CG_BINARY, CG_BINARY_LEFT, CG_WHERE, CG_CAST, CG_SUM0, CG_SUM1, CG_SUM_ALL, CG_MEAN1, CG_MAX1, CG_MIN0,
    CG_SOFTMAX, CG_LOG_SOFTMAX, CG_LAYER_NORM, CG_RMS_NORM, CG_GATES, CG_ATTRS, CG_MATMUL, CG_LINEAR_GELU, CG_SDPA,
    CG_CONV, CG_MAXPOOL, CG_AVGPOOL, CG_ADAPTIVE, CG_CONCAT, CG_PAD, CG_EMBEDDING, CG_INDEX_SELECT, CG_GATHER,
    CG_ARGMAX, CG_VAR, CG_ISUM, CG_IARITH, CG_KINDS
};

static void cg_model(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    const cg_case *c = (const cg_case *)user;
    int ax0[1] = {0}, ax1[1] = {1};
    tc_tensor *x = in[0];
    if (c->transpose0) x = tc_transpose(ctx, x, 0, 1);
    switch (c->kind) {
    case CG_UNARY: out[0] = unops[c->op].fn(ctx, x, __FILE__, __LINE__); break;
    case CG_BINARY: out[0] = binops[c->op].fn(ctx, x, in[1], __FILE__, __LINE__); break;
    case CG_BINARY_LEFT: out[0] = binops[c->op].fn(ctx, in[1], x, __FILE__, __LINE__); break;
    case CG_WHERE: out[0] = tc_where(ctx, tc_gt(ctx, x, in[1]), x, tc_mul_scalar(ctx, in[1], -2.0)); break;
    case CG_CAST: out[0] = tc_cast(ctx, tc_mul_scalar(ctx, tc_cast(ctx, x, TC_F32), 2.0), c->dt[1]); break;
    case CG_SUM0: out[0] = tc_sum(ctx, tc_mul(ctx, x, x), 1, ax0, 0); break;
    case CG_SUM1: out[0] = tc_sum(ctx, tc_exp(ctx, x), 1, ax1, 1); break;
    case CG_SUM_ALL: out[0] = tc_sum(ctx, x, 0, NULL, 0); break;
    case CG_MEAN1: out[0] = tc_mean(ctx, x, 1, ax1, 0); break;
    case CG_MAX1: out[0] = tc_max(ctx, x, 1, ax1, 0); break;
    case CG_MIN0: out[0] = tc_min(ctx, tc_neg(ctx, x), 1, ax0, 1); break;
    case CG_SOFTMAX: out[0] = tc_softmax(ctx, x, -1); break;
    case CG_LOG_SOFTMAX: out[0] = tc_log_softmax(ctx, x, -1); break;
    case CG_LAYER_NORM: out[0] = tc_layer_norm(ctx, x, 1, in[1], in[2], 1e-5); break;
    case CG_RMS_NORM: out[0] = tc_rms_norm(ctx, x, 1, in[1], 1e-6); break;
    case CG_GATES:
        out[0] = tc_mul(ctx, tc_gelu_tanh(ctx, tc_add_scalar(ctx, tc_mul_scalar(ctx, x, 1.5), 0.25)),
                        tc_sigmoid(ctx, in[1]));
        break;
    case CG_ATTRS: out[0] = tc_softplus(ctx, tc_clamp(ctx, x, -2.0, 3.0), 2.0, 10.0); break;
    case CG_MATMUL: out[0] = tc_matmul(ctx, x, in[1]); break;
    case CG_SDPA: out[0] = tc_scaled_dot_product_attention(ctx, x, in[1], in[2], NULL, 1, 0.0); break;
    case CG_CONV: {
        tc_conv2d_opts co;
        memset(&co, 0, sizeof co);
        co.stride[0] = co.stride[1] = 2, co.padding[0] = co.padding[1] = 1, co.groups = 2;
        out[0] = tc_conv2d(ctx, x, in[1], in[2], &co);
        break;
    }
    case CG_MAXPOOL:
    case CG_AVGPOOL: {
        tc_pool2d_opts po;
        memset(&po, 0, sizeof po);
        po.kernel[0] = po.kernel[1] = 3, po.stride[0] = po.stride[1] = 2, po.padding[0] = po.padding[1] = 1;
        po.ceil_mode = c->kind == CG_AVGPOOL;
        out[0] = c->kind == CG_MAXPOOL ? tc_max_pool2d(ctx, x, &po) : tc_avg_pool2d(ctx, x, &po);
        break;
    }
    case CG_ADAPTIVE: out[0] = tc_adaptive_avg_pool2d(ctx, x, 3, 2); break;
    case CG_CONCAT: {
        tc_tensor *two[2];
        two[0] = x, two[1] = tc_exp(ctx, in[1]);
        out[0] = tc_concat(ctx, 2, two, 1);
        break;
    }
    case CG_PAD: {
        int64_t pd[4] = {1, 2, -1, 3};
        out[0] = tc_pad(ctx, x, 4, pd, 0.5);
        break;
    }
    case CG_EMBEDDING: out[0] = tc_embedding(ctx, x, in[1]); break;
    case CG_INDEX_SELECT: out[0] = tc_index_select(ctx, x, 1, in[1]); break;
    case CG_GATHER: out[0] = tc_gather(ctx, x, 1, in[1]); break;
    case CG_ARGMAX: out[0] = tc_argmax(ctx, x, 1, ax1, 0); break;
    case CG_VAR: out[0] = tc_var(ctx, x, 1, ax0, 1, 1); break;
    case CG_ISUM: out[0] = tc_sum(ctx, x, 1, ax1, 0); break;
    case CG_IARITH: /* i32 arithmetic, a power, a compare, both operand sides broadcast */
        out[0] = tc_where(ctx, tc_lt(ctx, in[1], x), tc_pow(ctx, tc_sub(ctx, in[1], tc_mul(ctx, x, x)), in[2]),
                          tc_maximum(ctx, tc_neg(ctx, x), in[1]));
        break;
    case CG_LINEAR_GELU: out[0] = tc_gelu(ctx, tc_linear(ctx, x, in[1], in[2])); break;
    }
}

static int cg_add(cg_case *cs, int n, int kind, int op, const char *name, int nin, tc_dtype dt, int r, int c) {
    cg_case *k = &cs[n];
    int i;
    memset(k, 0, sizeof *k);
    snprintf(k->name, sizeof k->name, "%s", name);
    k->kind = kind;
    k->op = op;
    k->nin = nin;
    for (i = 0; i < nin; i++) {
        k->dt[i] = dt;
        k->ndim[i] = 2;
        k->shape[i][0] = r;
        k->shape[i][1] = c;
    }
    return n + 1;
}

/* Fills cs (room for 160) and returns how many. */
static int cg_cases(cg_case *cs) {
    int n = 0, o;
    char nm[48];
    static const tc_dtype dts[] = {TC_F16, TC_BF16, TC_I32, TC_BOOL};
    static const int rows[] = {7, 256, 3000};
    for (o = 0; o < N_UNOPS; o++) n = cg_add(cs, n, CG_UNARY, o, unops[o].name, 1, TC_F32, 37, 29);
    for (o = 0; o < N_BINOPS; o++) {
        snprintf(nm, sizeof nm, "%s (right broadcast)", binops[o].name);
        n = cg_add(cs, n, CG_BINARY, o, nm, 2, TC_F32, 37, 29);
        cs[n - 1].shape[1][0] = 1; /* b: [1, 29] */
        snprintf(nm, sizeof nm, "%s (left broadcast)", binops[o].name);
        n = cg_add(cs, n, CG_BINARY_LEFT, o, nm, 2, TC_F32, 37, 29);
        cs[n - 1].shape[1][1] = 1; /* the left operand: [37, 1] */
    }
    n = cg_add(cs, n, CG_WHERE, 0, "where(x > y)", 2, TC_F32, 19, 41);
    for (o = 0; o < 4; o++) {
        snprintf(nm, sizeof nm, "load and store %s", tc_dtype_name(dts[o]));
        n = cg_add(cs, n, CG_CAST, 0, nm, 1, dts[o] == TC_BOOL ? TC_F32 : dts[o], 23, 17);
        cs[n - 1].dt[1] = dts[o];
    }
    n = cg_add(cs, n, CG_UNARY, 2, "exp of a transposed view", 1, TC_F32, 29, 37);
    cs[n - 1].transpose0 = 1;
    n = cg_add(cs, n, CG_SUM0, 0, "sum of squares over dim 0", 1, TC_F32, 300, 45);
    n = cg_add(cs, n, CG_SUM1, 0, "sum of exp over dim 1", 1, TC_F32, 45, 300);
    n = cg_add(cs, n, CG_SUM_ALL, 0, "sum of everything", 1, TC_F32, 301, 333);
    n = cg_add(cs, n, CG_MEAN1, 0, "mean over dim 1", 1, TC_F32, 33, 65);
    n = cg_add(cs, n, CG_MAX1, 0, "max over dim 1", 1, TC_F32, 33, 513);
    n = cg_add(cs, n, CG_MIN0, 0, "min of -x over dim 0", 1, TC_F32, 70, 9);
    for (o = 0; o < 3; o++) {
        int r = rows[o];
        snprintf(nm, sizeof nm, "softmax rows of %d", r);
        n = cg_add(cs, n, CG_SOFTMAX, 0, nm, 1, TC_F32, 24, r);
        snprintf(nm, sizeof nm, "log_softmax rows of %d", r);
        n = cg_add(cs, n, CG_LOG_SOFTMAX, 0, nm, 1, TC_F32, 24, r);
        snprintf(nm, sizeof nm, "layer_norm rows of %d", r);
        n = cg_add(cs, n, CG_LAYER_NORM, 0, nm, 3, TC_F32, 24, r);
        cs[n - 1].ndim[1] = cs[n - 1].ndim[2] = 1;
        cs[n - 1].shape[1][0] = cs[n - 1].shape[2][0] = r;
        snprintf(nm, sizeof nm, "rms_norm rows of %d", r);
        n = cg_add(cs, n, CG_RMS_NORM, 0, nm, 2, TC_F32, 24, r);
        cs[n - 1].ndim[1] = 1;
        cs[n - 1].shape[1][0] = r;
    }
    n = cg_add(cs, n, CG_SOFTMAX, 0, "softmax of a transposed view", 1, TC_F32, 130, 20);
    cs[n - 1].transpose0 = 1;
    /* contractions: edge tiles, a transposed operand, broadcast batches,
     * 1-D operands, half inputs, a linear with a fused epilogue */
    n = cg_add(cs, n, CG_MATMUL, 0, "matmul 70x37 @ 37x65", 2, TC_F32, 70, 37);
    cs[n - 1].shape[1][0] = 37, cs[n - 1].shape[1][1] = 65;
    n = cg_add(cs, n, CG_MATMUL, 0, "matmul of a transposed A", 2, TC_F32, 37, 70);
    cs[n - 1].transpose0 = 1;
    cs[n - 1].shape[1][0] = 37, cs[n - 1].shape[1][1] = 20;
    n = cg_add(cs, n, CG_MATMUL, 0, "batched matmul, B broadcast", 2, TC_F32, 5, 17);
    cs[n - 1].ndim[0] = 3, cs[n - 1].shape[0][0] = 3, cs[n - 1].shape[0][1] = 5, cs[n - 1].shape[0][2] = 17;
    cs[n - 1].ndim[1] = 3, cs[n - 1].shape[1][0] = 1, cs[n - 1].shape[1][1] = 17, cs[n - 1].shape[1][2] = 9;
    n = cg_add(cs, n, CG_MATMUL, 0, "matrix @ vector", 2, TC_F32, 33, 40);
    cs[n - 1].ndim[1] = 1, cs[n - 1].shape[1][0] = 40;
    n = cg_add(cs, n, CG_MATMUL, 0, "f16 matmul", 2, TC_F16, 16, 24);
    cs[n - 1].shape[1][0] = 24, cs[n - 1].shape[1][1] = 8;
    n = cg_add(cs, n, CG_LINEAR_GELU, 0, "gelu(linear(x, w, b))", 3, TC_F32, 67, 48);
    cs[n - 1].shape[1][0] = 80, cs[n - 1].shape[1][1] = 48;
    cs[n - 1].ndim[2] = 1, cs[n - 1].shape[2][0] = 80;
    n = cg_add(cs, n, CG_SDPA, 0, "causal attention (decomposed)", 3, TC_F32, 19, 16);
    /* images [2, 4, 9, 11]: conv (stride 2, padding 1, 2 groups, bias), pools, adaptive */
    n = cg_add(cs, n, CG_CONV, 0, "conv2d 3x3 stride 2 groups 2", 3, TC_F32, 9, 11);
    cs[n - 1].ndim[0] = 4, cs[n - 1].shape[0][0] = 2, cs[n - 1].shape[0][1] = 4, cs[n - 1].shape[0][2] = 9, cs[n - 1].shape[0][3] = 11;
    cs[n - 1].ndim[1] = 4, cs[n - 1].shape[1][0] = 6, cs[n - 1].shape[1][1] = 2, cs[n - 1].shape[1][2] = 3, cs[n - 1].shape[1][3] = 3;
    cs[n - 1].ndim[2] = 1, cs[n - 1].shape[2][0] = 6;
    for (o = 0; o < 3; o++) {
        static const char *const names[] = {"max_pool2d 3x3 stride 2", "avg_pool2d 3x3 ceil", "adaptive_avg_pool2d 3x2"};
        n = cg_add(cs, n, CG_MAXPOOL + o, 0, names[o], 1, TC_F32, 9, 11);
        cs[n - 1].ndim[0] = 4, cs[n - 1].shape[0][0] = 2, cs[n - 1].shape[0][1] = 4, cs[n - 1].shape[0][2] = 9, cs[n - 1].shape[0][3] = 11;
    }
    n = cg_add(cs, n, CG_CONCAT, 0, "concat along dim 1", 2, TC_F32, 7, 5);
    cs[n - 1].shape[1][1] = 3;
    n = cg_add(cs, n, CG_PAD, 0, "pad (and crop)", 1, TC_F32, 6, 9);
    n = cg_add(cs, n, CG_EMBEDDING, 0, "embedding", 2, TC_F32, 50, 24);
    cs[n - 1].dt[1] = TC_I32, cs[n - 1].shape[1][0] = 3, cs[n - 1].shape[1][1] = 7;
    n = cg_add(cs, n, CG_INDEX_SELECT, 0, "index_select along dim 1", 2, TC_F32, 6, 20);
    cs[n - 1].dt[1] = TC_I32, cs[n - 1].ndim[1] = 1, cs[n - 1].shape[1][0] = 9;
    n = cg_add(cs, n, CG_GATHER, 0, "gather along dim 1", 2, TC_F32, 6, 20);
    cs[n - 1].dt[1] = TC_I32, cs[n - 1].shape[1][1] = 8;
    n = cg_add(cs, n, CG_ARGMAX, 0, "argmax over dim 1", 1, TC_F32, 13, 77);
    n = cg_add(cs, n, CG_VAR, 0, "var over dim 0", 1, TC_F32, 40, 9);
    n = cg_add(cs, n, CG_ISUM, 0, "sum of i32 over dim 1", 1, TC_I32, 9, 31);
    n = cg_add(cs, n, CG_IARITH, 0, "i32 arithmetic past 2^24", 3, TC_I32, 9, 31);
    cs[n - 1].shape[1][0] = 1; /* [1, 31] */
    cs[n - 1].shape[2][1] = 1; /* [9, 1]: small exponents */
    n = cg_add(cs, n, CG_GATES, 0, "gelu_tanh(1.5x + 0.25) * sigmoid(y)", 2, TC_F32, 31, 63);
    n = cg_add(cs, n, CG_ATTRS, 0, "softplus(clamp(x))", 1, TC_F32, 31, 63);
    return n;
}

/* Deterministic inputs for case c on the host: values in a range the op
 * takes (positive where it needs), ties for comparisons. */
static void cg_inputs(tc_ctx *ctx, const cg_case *c, tc_tensor **in) {
    int i;
    for (i = 0; i < c->nin; i++) {
        double lo = -3, hi = 3;
        tc_tensor *t;
        if (c->kind == CG_UNARY && !c->transpose0) lo = unops[c->op].lo, hi = unops[c->op].hi;
        if ((c->kind == CG_BINARY || c->kind == CG_BINARY_LEFT) && binops[c->op].kind == K_POW) lo = 0.5, hi = 2;
        if ((c->kind == CG_BINARY || c->kind == CG_BINARY_LEFT) && binops[c->op].kind == K_DIV && i == 1) lo = 0.5, hi = 4;
        if (c->kind == CG_BINARY_LEFT && binops[c->op].kind == K_DIV) lo = 0.5, hi = 4;
        t = tc_rand_uniform(ctx, c->ndim[i], c->shape[i], lo, hi, 1234u + 7u * (unsigned)i);
        if ((c->kind == CG_BINARY || c->kind == CG_BINARY_LEFT) && binops[c->op].kind == K_CMP)
            t = tc_floor(ctx, t); /* ties */
        if (c->dt[i] == TC_I32 && c->kind >= CG_EMBEDDING && c->kind <= CG_GATHER) { /* valid indices */
            double range = (double)c->shape[0][c->kind == CG_EMBEDDING ? 0 : 1];
            t = tc_floor(ctx, tc_mul_scalar(ctx, tc_add_scalar(ctx, t, 3.0), range / 6.0 - 1e-3));
        } else if (c->dt[i] == TC_I32 && c->kind == CG_IARITH) /* values past 2^24, and exponents 0..2 */
            t = tc_floor(ctx, i == 2 ? tc_add_scalar(ctx, tc_mul_scalar(ctx, t, 0.4), 1.2) : tc_mul_scalar(ctx, t, 3e6));
        else if (c->dt[i] == TC_I32) t = tc_floor(ctx, tc_mul_scalar(ctx, t, 10.0));
        if (c->kind >= CG_MATMUL) t = tc_mul_scalar(ctx, t, 0.3); /* sums of products stay near 1 */
        in[i] = c->dt[i] == TC_F32 ? t : tc_cast(ctx, t, c->dt[i]);
    }
}
/* Two small models as the examples build them: a GPT-2 block (embedding,
 * layer norms, linear layers, causal attention, GELU, residuals) and a CNN
 * (conv, batch norm, ReLU, pooling, linear). */
typedef struct model_w {
    tc_tensor *wte, *ln1w, *ln1b, *qkv_w, *qkv_b, *proj_w, *fc_w, *fc_b, *out_w;
    tc_tensor *c1w, *c1b, *bn_m, *bn_v, *bn_g, *bn_b, *c2w, *head_w;
} model_w;

static void gpt_block(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    const model_w *w = (const model_w *)user;
    int64_t qshape[4] = {1, 8, 4, 8}, oshape[3] = {1, 8, 32};
    static const int perm[4] = {0, 2, 1, 3};
    tc_tensor *h = tc_embedding(c, w->wte, in[0]); /* [1, 8, 32] */
    tc_tensor *a = tc_layer_norm(c, h, 1, w->ln1w, w->ln1b, 1e-5);
    tc_tensor *qkv = tc_linear(c, a, w->qkv_w, w->qkv_b), *parts[3];
    tc_split(c, qkv, 32, 2, parts, 3);
    parts[0] = tc_permute(c, tc_reshape(c, parts[0], 4, qshape), perm);
    parts[1] = tc_permute(c, tc_reshape(c, parts[1], 4, qshape), perm);
    parts[2] = tc_permute(c, tc_reshape(c, parts[2], 4, qshape), perm);
    a = tc_scaled_dot_product_attention(c, parts[0], parts[1], parts[2], NULL, 1, 0.0);
    a = tc_reshape(c, tc_permute(c, a, perm), 3, oshape);
    h = tc_add(c, h, tc_linear(c, a, w->proj_w, NULL));
    h = tc_add(c, h, tc_linear(c, tc_gelu(c, tc_linear(c, tc_layer_norm(c, h, 1, w->ln1w, NULL, 1e-5), w->fc_w, w->fc_b)), w->out_w, NULL));
    out[0] = h;
}

static void cnn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    const model_w *w = (const model_w *)user;
    tc_conv2d_opts co;
    tc_pool2d_opts po;
    tc_tensor *x;
    memset(&co, 0, sizeof co);
    memset(&po, 0, sizeof po);
    co.padding[0] = co.padding[1] = 1;
    po.kernel[0] = po.kernel[1] = 2;
    x = tc_relu(c, tc_batch_norm(c, tc_conv2d(c, in[0], w->c1w, w->c1b, &co), w->bn_m, w->bn_v, w->bn_g, w->bn_b, 1e-5));
    x = tc_max_pool2d(c, x, &po);
    x = tc_relu(c, tc_conv2d(c, x, w->c2w, NULL, &co));
    x = tc_flatten(c, tc_adaptive_avg_pool2d(c, x, 1, 1), 1, -1);
    out[0] = tc_linear(c, x, w->head_w, NULL);
}

/* A uniform random host tensor of up to 4 dims (0 ends the shape), kept at the root. */
static tc_tensor *cg_rnd(tc_ctx *ctx, int64_t d0, int64_t d1, int64_t d2, int64_t d3, unsigned seed, double lo, double hi) {
    int64_t shape[4];
    int nd = 0;
    shape[0] = d0, shape[1] = d1, shape[2] = d2, shape[3] = d3;
    while (nd < 4 && shape[nd] > 0) nd++;
    return tc_persist(tc_rand_uniform(ctx, nd, shape, lo, hi, seed));
}

/* The two models' weights on the host (tc_free each when done). */
static void cg_model_weights(tc_ctx *ctx, model_w *w) {
    w->wte = cg_rnd(ctx, 40, 32, 0, 0, 1, -0.5, 0.5);
    w->ln1w = cg_rnd(ctx, 32, 0, 0, 0, 2, 0.5, 1.5), w->ln1b = cg_rnd(ctx, 32, 0, 0, 0, 3, -0.1, 0.1);
    w->qkv_w = cg_rnd(ctx, 96, 32, 0, 0, 4, -0.2, 0.2), w->qkv_b = cg_rnd(ctx, 96, 0, 0, 0, 5, -0.1, 0.1);
    w->proj_w = cg_rnd(ctx, 32, 32, 0, 0, 6, -0.2, 0.2);
    w->fc_w = cg_rnd(ctx, 64, 32, 0, 0, 7, -0.2, 0.2), w->fc_b = cg_rnd(ctx, 64, 0, 0, 0, 8, -0.1, 0.1);
    w->out_w = cg_rnd(ctx, 32, 64, 0, 0, 9, -0.2, 0.2);
    w->c1w = cg_rnd(ctx, 8, 3, 3, 3, 10, -0.3, 0.3), w->c1b = cg_rnd(ctx, 8, 0, 0, 0, 11, -0.1, 0.1);
    w->bn_m = cg_rnd(ctx, 8, 0, 0, 0, 12, -0.1, 0.1), w->bn_v = cg_rnd(ctx, 8, 0, 0, 0, 13, 0.5, 1.5);
    w->bn_g = cg_rnd(ctx, 8, 0, 0, 0, 14, 0.5, 1.5), w->bn_b = cg_rnd(ctx, 8, 0, 0, 0, 15, -0.1, 0.1);
    w->c2w = cg_rnd(ctx, 16, 8, 3, 3, 16, -0.2, 0.2), w->head_w = cg_rnd(ctx, 10, 16, 0, 0, 17, -0.3, 0.3);
}
#endif
