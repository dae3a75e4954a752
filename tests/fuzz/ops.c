/* libFuzzer target: the op API with fuzzed shapes and arguments.  The
 * input is a program: its first byte picks an allocation to fail (0:
 * none), the rest decodes into op calls on a stack of 8 tensors, with
 * fuzzed dims (small ones mostly, and hostile ones: negative, 2^40,
 * INT64_MAX), axes, dtypes (an invalid one too), options and index
 * tensors.  Every result must be a valid tensor (its shape consistent,
 * every element readable through its strides: the sanitizers see a read
 * outside its storage) or an errored one with a message; nothing may
 * crash, hang or leak.  Ops whose inputs are larger than 2^20 elements
 * (expanded views) are skipped, and allocations above 16 MB fail (a clean
 * TC_ERR_OOM), so an input runs in milliseconds. */
#include "fuzz.h"

#define NSLOT 8
#define BIG ((int64_t)1 << 20)

static tc_ctx *ctx;
static tc_tensor *slot[NSLOT];

typedef tc_tensor *(*unary_fn)(tc_ctx *, tc_tensor *, const char *, int);
typedef tc_tensor *(*binary_fn)(tc_ctx *, tc_tensor *, tc_tensor *, const char *, int);
typedef tc_tensor *(*scalar_fn)(tc_ctx *, tc_tensor *, double, const char *, int);
#define UNARY_(name) tc_##name##_at,
#define BINARY_(name) tc_##name##_at,
#define SCALAR_(name) tc_##name##_scalar_at,
static const unary_fn unary[] = {TC__UNARY_API(UNARY_)};
static const binary_fn binary[] = {TC__BINARY_API(BINARY_)};
static const scalar_fn scalar[] = {TC__BINARY_API(SCALAR_)};
#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))

static const double values[] = {0.0, 1.0, -1.0, 0.5, 2.0, 3.0, -2.5, 1e-3, 1e30, -1e30, 65504.0, 1e-40,
                                1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0, 4.0};
static double value(fuzz_in *in) { return values[fuzz_u8(in) % COUNT(values)]; }

/* A dim: 0..8 mostly, sometimes hostile. */
static int64_t dim(fuzz_in *in) {
    static const int64_t hostile[] = {-1, -2, 16, 64, 257, (int64_t)1 << 31, (int64_t)1 << 40, INT64_MAX / 2,
                                      INT64_MAX, INT64_MIN, 3, 1000};
    unsigned b = fuzz_u8(in);
    return b < 224 ? (int64_t)(b % 9) : hostile[b % COUNT(hostile)];
}
/* A dim shifted down by k (negative indices, crops), hostile ones kept. */
static int64_t sdim(fuzz_in *in, int64_t k) {
    int64_t v = dim(in);
    return v >= 0 && v <= 1000 ? v - k : v;
}
static int ndim(fuzz_in *in) { /* 0..4 mostly; up to 9 (over TC_MAX_DIMS) and -1 */
    unsigned b = fuzz_u8(in);
    return b < 240 ? (int)(b % 5) : (int)(b % 11) - 1;
}
static int shape(fuzz_in *in, int64_t *s) {
    int n = ndim(in), d;
    for (d = 0; d < n && d < 16; d++) s[d] = dim(in);
    return n;
}
static int axis(fuzz_in *in) { return (int)(fuzz_u8(in) % 13) - 6; }
static tc_dtype dtype(fuzz_in *in) { return (tc_dtype)(fuzz_u8(in) % (TC_DTYPE_COUNT_ + 1)); }
static tc_tensor *pick(fuzz_in *in) { return slot[fuzz_u8(in) % NSLOT]; }
static tc_tensor *pick_or_null(fuzz_in *in) {
    unsigned b = fuzz_u8(in);
    return b % 9 == 8 ? NULL : slot[b % NSLOT];
}

/* Too large to compute on here (an expanded view): the op is skipped. */
static int big(const tc_tensor *t) { return t && tc_status(t) == TC_OK && tc_numel(t) > BIG; }
static int64_t numel0(const tc_tensor *t) { return t && tc_status(t) == TC_OK ? tc_numel(t) : 0; }

/* A result: valid through and through, or errored with a message. */
static void check(tc_tensor *t) {
    int64_t n = 1;
    int d, zero = 0, over = 0;
    FUZZ_ASSERT(t != NULL);
    if (tc_status(t) != TC_OK) {
        FUZZ_ASSERT(tc_error(t)[0] != 0);
        FUZZ_ASSERT(tc_data(t) == NULL);
        return;
    }
    FUZZ_ASSERT(tc_ndim(t) >= 0 && tc_ndim(t) <= TC_MAX_DIMS);
    FUZZ_ASSERT((int)tc_type(t) >= 0 && tc_type(t) < TC_DTYPE_COUNT_);
    for (d = 0; d < tc_ndim(t); d++) {
        int64_t k = tc_dim(t, d);
        FUZZ_ASSERT(k >= 0);
        if (k == 0) zero = 1;
        else if (n > INT64_MAX / k) over = 1;
        else n *= k;
    }
    FUZZ_ASSERT(zero ? tc_numel(t) == 0 : !over && n == tc_numel(t)); /* sizes never overflow */
    if (tc_numel(t) <= BIG) {
        size_t bytes = (size_t)tc_numel(t) * tc_dtype_size(tc_type(t));
        void *buf = malloc(bytes ? bytes : 1);
        FUZZ_ASSERT(buf != NULL);
        FUZZ_ASSERT(tc_read(t, tc_type(t), buf, bytes) == TC_OK);
        free(buf);
    }
}

static void put(fuzz_in *in, tc_tensor *t) {
    check(t);
    slot[fuzz_u8(in) % NSLOT] = t;
}

static tc_tensor *create(fuzz_in *in) {
    int64_t s[16];
    unsigned k = fuzz_u8(in) % 10;
    tc_dtype dt = dtype(in);
    int n = shape(in, s);
    switch (k) {
    case 0: return tc_empty(ctx, dt, n, s);
    case 1: return tc_zeros(ctx, dt, n, s);
    case 2: return tc_ones(ctx, dt, n, s);
    case 3: return tc_full(ctx, dt, n, s, value(in));
    case 4: return tc_scalar(ctx, value(in));
    case 5: {
        double a = value(in), b = value(in);
        return tc_arange(ctx, dt, a, b, value(in));
    }
    case 6: return tc_rand_uniform(ctx, n, s, -2.0, 2.0, fuzz_u8(in));
    case 7: {
        /* from the input's own bytes, where it holds enough of them */
        int64_t need = 1;
        int d;
        for (d = 0; d < n && n <= TC_MAX_DIMS; d++) need = s[d] >= 0 && s[d] <= 64 ? need * s[d] : -1;
        if (n < 0 || n > TC_MAX_DIMS || need < 0 || dt >= TC_DTYPE_COUNT_ ||
            (uint64_t)need * tc_dtype_size(dt) > in->n)
            return tc_rand_normal(ctx, n, s, 0.0, 1.0, 7);
        {
            tc_tensor *t = tc_from_data(ctx, dt, n, s, in->p);
            size_t used = (size_t)need * tc_dtype_size(dt);
            in->p += used;
            in->n -= used;
            return t;
        }
    }
    default: return tc_rand_normal(ctx, n, s, 0.0, 1.0, fuzz_u8(in));
    }
}

static void view_op(fuzz_in *in) {
    tc_tensor *x = pick(in);
    int64_t s[16];
    int perm[16], n, i;
    switch (fuzz_u8(in) % 13) {
    case 0: n = shape(in, s); put(in, tc_reshape(ctx, x, n, s)); break;
    case 1:
        for (i = 0; i < 16; i++) perm[i] = axis(in);
        put(in, tc_permute(ctx, x, perm));
        break;
    case 2: {
        int a = axis(in);
        put(in, tc_transpose(ctx, x, a, axis(in)));
        break;
    }
    case 3: {
        int a = axis(in);
        int64_t b = sdim(in, 4), e = sdim(in, 2);
        put(in, tc_slice(ctx, x, a, b, e, dim(in)));
        break;
    }
    case 4: {
        int a = axis(in);
        put(in, tc_select(ctx, x, a, sdim(in, 3)));
        break;
    }
    case 5: n = shape(in, s); put(in, tc_expand(ctx, x, n, s)); break;
    case 6: put(in, tc_squeeze(ctx, x, axis(in))); break;
    case 7: put(in, tc_squeeze_all(ctx, x)); break;
    case 8: put(in, tc_unsqueeze(ctx, x, axis(in))); break;
    case 9: {
        int a = axis(in);
        put(in, tc_flatten(ctx, x, a, axis(in)));
        break;
    }
    case 10: if (!big(x)) put(in, tc_contiguous(ctx, x)); break;
    case 11: if (!big(x)) put(in, tc_clone(ctx, x)); break;
    default: {
        tc_tensor *src = pick(in);
        if (!big(x) && !big(src)) check(tc_copy(ctx, x, src));
        break;
    }
    }
}

static void reduce_op(fuzz_in *in) {
    tc_tensor *x = pick(in);
    int axes[8], n = (int)(fuzz_u8(in) % 5), i, keep = (int)(fuzz_u8(in) & 1), k = (int)(fuzz_u8(in) % 6);
    for (i = 0; i < n; i++) axes[i] = axis(in);
    if (big(x)) return;
    switch (k) {
    case 0: put(in, tc_sum(ctx, x, n, axes, keep)); break;
    case 1: put(in, tc_mean(ctx, x, n, axes, keep)); break;
    case 2: put(in, tc_max(ctx, x, n, axes, keep)); break;
    case 3: put(in, tc_min(ctx, x, n, axes, keep)); break;
    case 4: put(in, tc_argmax(ctx, x, n, axes, keep)); break;
    default: put(in, tc_var(ctx, x, n, axes, (int)(fuzz_u8(in) % 3), keep)); break;
    }
}

static void row_op(fuzz_in *in) {
    tc_tensor *x = pick(in), *w = pick_or_null(in), *b = pick_or_null(in);
    int k = (int)(fuzz_u8(in) % 4), a = axis(in);
    if (big(x) || big(w) || big(b)) return;
    switch (k) {
    case 0: put(in, tc_softmax(ctx, x, a)); break;
    case 1: put(in, tc_log_softmax(ctx, x, a)); break;
    case 2: put(in, tc_layer_norm(ctx, x, a, w, b, 1e-5)); break;
    default: put(in, tc_rms_norm(ctx, x, a, w, 1e-6)); break;
    }
}

/* The work of a contraction is at most the product of its operands' sizes. */
static int costly(const tc_tensor *a, const tc_tensor *b) {
    return big(a) || big(b) || (double)numel0(a) * (double)numel0(b) > 1e7;
}

static void contract_op(fuzz_in *in) {
    tc_tensor *a = pick(in), *b = pick(in), *c = pick_or_null(in);
    int k = (int)(fuzz_u8(in) % 3);
    if (costly(a, b) || big(c)) return;
    if (k == 0) put(in, tc_matmul(ctx, a, b));
    else if (k == 1) put(in, tc_linear(ctx, a, b, c));
    else {
        tc_tensor *mask = fuzz_u8(in) & 1 ? pick_or_null(in) : NULL;
        int causal = (int)(fuzz_u8(in) & 1);
        if (costly(a, c) || big(mask)) return;
        put(in, tc_scaled_dot_product_attention(ctx, a, b, c ? c : b, mask, causal, value(in)));
    }
}

static void conv_op(fuzz_in *in) {
    tc_tensor *x = pick(in), *w = pick(in), *b = pick_or_null(in);
    tc_conv2d_opts co;
    tc_pool2d_opts po;
    int i, k = (int)(fuzz_u8(in) % 5);
    memset(&co, 0, sizeof co);
    memset(&po, 0, sizeof po);
    for (i = 0; i < 2; i++) {
        co.stride[i] = (int)(fuzz_u8(in) % 5) - 1;
        co.padding[i] = (int)(fuzz_u8(in) % 5) - 1;
        co.dilation[i] = (int)(fuzz_u8(in) % 4) - 1;
        po.kernel[i] = (int)(fuzz_u8(in) % 6) - 1;
        po.stride[i] = (int)(fuzz_u8(in) % 4) - 1;
        po.padding[i] = (int)(fuzz_u8(in) % 4) - 1;
        po.dilation[i] = (int)(fuzz_u8(in) % 3) - 1;
    }
    co.groups = (int)(fuzz_u8(in) % 5) - 1;
    po.ceil_mode = (int)(fuzz_u8(in) & 1);
    po.exclude_pad = (int)(fuzz_u8(in) & 1);
    if (big(x) || big(b)) return;
    switch (k) {
    case 0:
        if (!costly(x, w)) put(in, tc_conv2d(ctx, x, w, b, &co));
        break;
    case 1: put(in, tc_max_pool2d(ctx, x, &po)); break;
    case 2: put(in, tc_avg_pool2d(ctx, x, &po)); break;
    case 3: {
        int64_t oh = dim(in);
        put(in, tc_adaptive_avg_pool2d(ctx, x, oh, dim(in)));
        break;
    }
    default: {
        tc_tensor *v = pick(in), *g = pick_or_null(in);
        if (!big(w) && !big(v) && !big(g)) put(in, tc_batch_norm(ctx, x, w, v, g, b, 1e-5));
        break;
    }
    }
}

static void index_op(fuzz_in *in) {
    tc_tensor *x = pick(in), *idx = pick(in);
    int k = (int)(fuzz_u8(in) % 3), a = axis(in);
    if (big(x) || big(idx)) return;
    if (fuzz_u8(in) & 1) idx = tc_cast(ctx, tc_abs(ctx, idx), TC_I32);
    if (k == 0) put(in, tc_embedding(ctx, x, idx));
    else if (k == 1) put(in, tc_index_select(ctx, x, a, idx));
    else put(in, tc_gather(ctx, x, a, idx));
}

static void shape_op(fuzz_in *in) {
    tc_tensor *out[8], *xs[3];
    int64_t sizes[8], pad[10];
    int i, n, k = (int)(fuzz_u8(in) % 5), a = axis(in), got, max_out = 8;
    for (i = 0; i < 3; i++) xs[i] = pick(in);
    for (i = 0; i < 3; i++)
        if (big(xs[i])) return;
    switch (k) {
    case 0: put(in, tc_concat(ctx, (int)(fuzz_u8(in) % 4), xs, a)); return;
    case 1:
        max_out = (int)(fuzz_u8(in) % 9);
        got = tc_split(ctx, xs[0], dim(in), a, out, max_out);
        break;
    case 2:
        max_out = (int)(fuzz_u8(in) % 9);
        got = tc_chunk(ctx, xs[0], (int)(fuzz_u8(in) % 6) - 1, a, out, max_out);
        break;
    case 3:
        n = (int)(fuzz_u8(in) % 9);
        for (i = 0; i < n; i++) sizes[i] = dim(in);
        got = tc_split_sizes(ctx, xs[0], n, sizes, a, out);
        FUZZ_ASSERT(got == -1 || got == n);
        break;
    default:
        n = (int)(fuzz_u8(in) % 11);
        for (i = 0; i < n; i++) pad[i] = sdim(in, 3);
        put(in, tc_pad(ctx, xs[0], n, pad, value(in)));
        return;
    }
    FUZZ_ASSERT(got >= -1);
    for (i = 0; i < got && i < max_out; i++) put(in, out[i]);
}

static void misc_op(fuzz_in *in) {
    tc_tensor *x = pick(in), *y = pick(in), *z = pick(in);
    int64_t at[16];
    int i, k = (int)(fuzz_u8(in) % 7);
    if (big(x) || big(y) || big(z)) return;
    switch (k) {
    case 0: put(in, tc_cast(ctx, x, dtype(in))); break;
    case 1: {
        double lo = value(in);
        put(in, tc_clamp(ctx, x, lo, value(in)));
        break;
    }
    case 2: put(in, tc_where(ctx, tc_gt_scalar(ctx, x, 0.0), y, z)); break;
    case 3: {
        double b = value(in);
        put(in, tc_softplus(ctx, x, b, value(in)));
        break;
    }
    case 4:
        for (i = 0; i < 16; i++) at[i] = sdim(in, 1);
        (void)tc_get(x, at);
        (void)tc_set(x, at, value(in));
        break;
    case 5: (void)tc_item(x); break;
    default: {
        char buf[64];
        tc_describe(x, buf, sizeof buf);
        FUZZ_ASSERT(memchr(buf, 0, sizeof buf) != NULL);
        break;
    }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_in in;
    int64_t live, s[2] = {3, 4};
    int i, steps = 0;
    unsigned fail;
    in.p = data;
    in.n = size;
    ctx = fuzz_ctx();
    live = tc_ctx_live_tensors(ctx);
    fuzz_alloc_limit((size_t)16 << 20);
    fail = fuzz_u8(&in);
    tc_scope_begin(ctx);
    for (i = 0; i < NSLOT; i++) slot[i] = tc_rand_normal(ctx, i % 3, s, 0.0, 1.0, (uint64_t)i);
    fuzz_fail_at(fail ? (long)fail * 3 : -1);
    while (in.n && steps++ < 64) {
        unsigned op = fuzz_u8(&in) % 11;
        switch (op) {
        case 0: put(&in, create(&in)); break;
        case 1: {
            tc_tensor *x = pick(&in);
            unsigned f = fuzz_u8(&in) % COUNT(unary);
            if (!big(x)) put(&in, unary[f](ctx, x, __FILE__, __LINE__));
            break;
        }
        case 2: {
            tc_tensor *a = pick(&in), *b = pick(&in);
            unsigned f = fuzz_u8(&in) % COUNT(binary);
            if (big(a) || big(b)) break;
            if (fuzz_u8(&in) & 1) put(&in, scalar[f](ctx, a, value(&in), __FILE__, __LINE__));
            else put(&in, binary[f](ctx, a, b, __FILE__, __LINE__));
            break;
        }
        case 3: view_op(&in); break;
        case 4: reduce_op(&in); break;
        case 5: row_op(&in); break;
        case 6: contract_op(&in); break;
        case 7: conv_op(&in); break;
        case 8: index_op(&in); break;
        case 9: shape_op(&in); break;
        default: misc_op(&in); break;
        }
    }
    fuzz_fail_at(-1);
    tc_scope_end(ctx);
    FUZZ_ASSERT(tc_ctx_live_tensors(ctx) == live);
    tc_ctx_clear_error(ctx);
    return 0;
}
