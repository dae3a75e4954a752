/* libFuzzer target: compiled against eager on fuzzed graphs.  The input
 * decodes into compile options (mode, decompose, fusion, dynamic), two
 * input shapes (x [a, b, c] with 1-3 dims, y the same with some dims 1 or
 * fewer dims: broadcasting both ways) and a program of up to 12 ops over
 * the values so far: pointwise unary and binary ops (a scalar on either
 * side), reductions, softmax / log_softmax / layer and RMS norm, views
 * (transpose, unsqueeze, slice, reshape), where and clamp.  Its one or two
 * outputs are computed eagerly and by the compiled function, on the first
 * shapes, on x's dim 0 changed (a recompile or the dynamic graph), and on
 * the first shapes again.  Eager and compiled must fail alike (a call fails
 * as a whole, with its first errored output's error: every output errored),
 * or agree within a tolerance: |c - e| <= 1e-4 (1 + |e|) plus 4 times how
 * far eager moves when the inputs are moved by 2^-18 of themselves; an
 * element that eager moves by more than 1 % of (1 + |e|), or whose
 * NaN/inf-ness the move changes, is too ill-conditioned to compare and is
 * not.  Singular ops (log, sqrt, rsqrt, reciprocal, a divisor, pow's base)
 * get |x| + 0.5: x / x of a sum that is rounding noise is 1 on one side and
 * NaN (0 / 0) on the other, which no tolerance tells from a bug.
 * layer_norm gets tanh(x): its compiled mean is a float sum, an ulp of the
 * row's mean off eager's double one, which 1 / sqrt(var + eps) amplifies
 * (a constant row of 1e5 + 6.67 normalises to -0.93 compiled, 0 eagerly:
 * a known gap, not what this target looks for).  The norms' eps is 1e-3
 * (they scale rounding noise by at most 32) and no norm takes a norm's
 * result (whose rows may be noise). */
#include <math.h>
#include "fuzz.h"

#define MAXOPS 12
#define MAXV (2 + MAXOPS)

typedef struct op {
    int kind, sub, a, b, axis, keep;
    double s;
} op;
typedef struct prog {
    int nops, nout, out[2];
    op ops[MAXOPS];
} prog;

typedef tc_tensor *(*unary_fn)(tc_ctx *, tc_tensor *, const char *, int);
typedef tc_tensor *(*binary_fn)(tc_ctx *, tc_tensor *, tc_tensor *, const char *, int);
/* continuous ones only: a last-ulp difference upstream must not flip them */
static const unary_fn unary[] = {tc_neg_at,  tc_abs_at,  tc_exp_at,     tc_log_at,  tc_sqrt_at,     tc_rsqrt_at,
                                 tc_reciprocal_at, tc_square_at, tc_sin_at, tc_cos_at, tc_tanh_at, tc_sigmoid_at,
                                 tc_relu_at, tc_gelu_at, tc_gelu_tanh_at, tc_silu_at, tc_erf_at, tc_hardswish_at};
static const binary_fn binary[] = {tc_add_at, tc_sub_at, tc_mul_at, tc_div_at, tc_maximum_at, tc_minimum_at, tc_pow_at};
#define COUNT(a) (int)(sizeof(a) / sizeof((a)[0]))
static const double scalars[] = {0.5, 2.0, -1.0, 3.0, 1e-3, -0.25, 10.0, 0.0};

enum { K_UNARY, K_BINARY, K_SCALAR_R, K_SCALAR_L, K_REDUCE, K_ROW, K_VIEW, K_WHERE, K_CLAMP, K_COUNT };

/* |x| + 0.5: what a singular op (log, sqrt, rsqrt, reciprocal, a divisor,
 * pow's base) is given, so that a value that is rounding noise (the sum of
 * a normalised row) cannot turn into inf or NaN on one side only. */
static tc_tensor *away_from_0(tc_ctx *c, tc_tensor *x) { return tc_add_scalar(c, tc_abs(c, x), 0.5); }
static int singular_unary(int k) {
    unary_fn f = unary[k % COUNT(unary)];
    return f == tc_log_at || f == tc_sqrt_at || f == tc_rsqrt_at || f == tc_reciprocal_at;
}

/* binary op k on a and b, singular operands moved away from 0 */
static tc_tensor *binary_op(tc_ctx *c, int k, tc_tensor *a, tc_tensor *b) {
    binary_fn f = binary[k % COUNT(binary)];
    if (f == tc_div_at) b = away_from_0(c, b);
    if (f == tc_pow_at) {
        a = away_from_0(c, a);
        b = tc_clamp(c, b, -3.0, 3.0);
    }
    return f(c, a, b, __FILE__, __LINE__);
}

static tc_tensor *apply(tc_ctx *c, const op *o, tc_tensor **v, int leaf_a) {
    tc_tensor *a = v[o->a], *b = v[o->b];
    int ax = o->axis;
    switch (o->kind) {
    case K_UNARY:
        return unary[o->sub % COUNT(unary)](c, singular_unary(o->sub) ? away_from_0(c, a) : a, __FILE__, __LINE__);
    case K_BINARY: return binary_op(c, o->sub, a, b);
    case K_SCALAR_R: return binary_op(c, o->sub, a, tc_scalar(c, o->s));
    case K_SCALAR_L: return binary_op(c, o->sub, tc_scalar(c, o->s), a);
    case K_REDUCE:
        switch (o->sub % 5) {
        case 0: return tc_sum(c, a, 1, &ax, o->keep);
        case 1: return tc_mean(c, a, 1, &ax, o->keep);
        case 2: return tc_max(c, a, 1, &ax, o->keep);
        case 3: return tc_min(c, a, 1, &ax, o->keep);
        default: return tc_sum(c, a, 0, NULL, o->keep);
        }
    case K_ROW:
        switch (o->sub % 4) {
        case 0: return tc_softmax(c, a, ax);
        case 1: return tc_log_softmax(c, a, ax);
        case 2: return tc_layer_norm(c, tc_tanh(c, a), 1 + (ax & 1), NULL, NULL, 1e-3);
        default: return tc_rms_norm(c, a, 1, NULL, 1e-3);
        }
    case K_VIEW:
        switch (o->sub % 4) {
        case 0: return tc_transpose(c, a, ax, -1);
        case 1: return tc_unsqueeze(c, a, ax);
        case 2: return tc_slice(c, a, ax, 1, -1, 1 + (o->keep & 1));
        default: {
            int64_t s = -1;
            return tc_reshape(c, a, 1, &s);
        }
        }
    case K_WHERE: /* the condition reads an input only (see unary[]) */
        return tc_where(c, tc_gt_scalar(c, v[leaf_a], o->s), a, b);
    default: return tc_clamp(c, a, -o->s - 1.0, o->s + 1.0);
    }
}

static void model(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    const prog *p = (const prog *)user;
    tc_tensor *v[MAXV];
    int i;
    v[0] = in[0];
    v[1] = in[1];
    for (i = 0; i < p->nops; i++) v[2 + i] = apply(c, &p->ops[i], v, p->ops[i].b & 1);
    for (i = 0; i < p->nout; i++) out[i] = v[p->out[i]];
}

static int is_norm(const op *o) { return o->kind == K_ROW && o->sub % 4 >= 2; }

static void decode(fuzz_in *in, prog *p) {
    char normed[MAXV]; /* derived from a layer or RMS norm */
    int i;
    memset(normed, 0, sizeof normed);
    p->nops = 1 + (int)(fuzz_u8(in) % MAXOPS);
    for (i = 0; i < p->nops; i++) {
        op *o = &p->ops[i];
        int nv = 2 + i;
        o->kind = (int)(fuzz_u8(in) % K_COUNT);
        o->sub = (int)fuzz_u8(in);
        /* mostly the latest value, so programs are chains rather than fans */
        o->a = fuzz_u8(in) & 1 ? nv - 1 : (int)(fuzz_u8(in) % (unsigned)nv);
        o->b = (int)(fuzz_u8(in) % (unsigned)nv);
        o->axis = (int)(fuzz_u8(in) % 7) - 3;
        o->keep = (int)(fuzz_u8(in) & 3);
        o->s = scalars[fuzz_u8(in) % COUNT(scalars)];
        /* a norm of a norm's result: the first one's rows may be rounding
         * noise (a row nearly constant), which the second scales to O(1)
         * differently on each side; tanh instead */
        if (is_norm(o) && normed[o->a]) {
            o->kind = K_UNARY;
            o->sub = 10; /* tanh */
        }
        normed[nv] = (char)(is_norm(o) || normed[o->a] ||
                            ((o->kind == K_BINARY || o->kind == K_WHERE) && normed[o->b]));
    }
    p->nout = 1 + (int)(fuzz_u8(in) & 1);
    p->out[0] = 1 + p->nops;
    p->out[1] = (int)(fuzz_u8(in) % (unsigned)(2 + p->nops));
}

/* Inputs moved by 2^-18 of themselves, the sign from a hash of the index. */
static tc_tensor *moved(tc_ctx *c, tc_tensor *x, int sign) {
    int64_t n = tc_numel(x), i;
    float *d = (float *)malloc(sizeof(float) * (size_t)(n ? n : 1));
    tc_tensor *y;
    FUZZ_ASSERT(d != NULL);
    tc_read(x, TC_F32, d, sizeof(float) * (size_t)n);
    for (i = 0; i < n; i++) {
        uint64_t h = (uint64_t)i * 0x9E3779B97F4A7C15ull;
        d[i] += (float)(d[i] * ldexp(1.0, -18) * ((h >> 40) & 1 ? sign : -sign));
    }
    y = tc_from_data(c, TC_F32, tc_ndim(x), tc_shape(x), d);
    free(d);
    return y;
}

static float *values_of(tc_tensor *t) {
    int64_t n = tc_numel(t);
    float *d = (float *)malloc(sizeof(float) * (size_t)(n ? n : 1));
    FUZZ_ASSERT(d != NULL && tc_read(t, TC_F32, d, sizeof(float) * (size_t)n) == TC_OK);
    return d;
}

static int cls(float x) { return x != x ? 2 : isinf(x) ? (x > 0 ? 3 : 4) : 0; }

static void compare(tc_tensor *got, tc_tensor *ref, tc_tensor *p1, tc_tensor *p2) {
    int64_t n, i;
    float *g, *e, *m1, *m2;
    FUZZ_ASSERT(tc_status(got) == TC_OK && tc_status(ref) == TC_OK);
    FUZZ_ASSERT(tc_ndim(got) == tc_ndim(ref));
    FUZZ_ASSERT(memcmp(tc_shape(got), tc_shape(ref), sizeof(int64_t) * (size_t)tc_ndim(ref)) == 0);
    n = tc_numel(ref);
    g = values_of(got);
    e = values_of(ref);
    m1 = tc_status(p1) == TC_OK && tc_numel(p1) == n ? values_of(p1) : NULL;
    m2 = tc_status(p2) == TC_OK && tc_numel(p2) == n ? values_of(p2) : NULL;
    for (i = 0; m1 && m2 && i < n; i++) {
        double noise, tol;
        if (cls(e[i]) != cls(m1[i]) || cls(e[i]) != cls(m2[i])) continue; /* ill-conditioned */
        if (cls(e[i])) {
            if (cls(g[i]) != cls(e[i]))
                fprintf(stderr, "element %lld: compiled %g, eager %g\n", (long long)i, (double)g[i], (double)e[i]);
            FUZZ_ASSERT(cls(g[i]) == cls(e[i]));
            continue;
        }
        noise = fmax(fabs((double)e[i] - m1[i]), fabs((double)e[i] - m2[i]));
        if (noise > 1e-2 * (1 + fabs((double)e[i]))) continue; /* ill-conditioned */
        tol = 1e-4 * (1 + fabs((double)e[i])) + 4 * noise;
        if (!(fabs((double)g[i] - e[i]) <= tol))
            fprintf(stderr, "element %lld of %lld: compiled %.9g, eager %.9g (moved: %.9g, %.9g), tolerance %g\n",
                    (long long)i, (long long)n, (double)g[i], (double)e[i], (double)m1[i], (double)m2[i], tol);
        FUZZ_ASSERT(fabs((double)g[i] - e[i]) <= tol);
    }
    free(g);
    free(e);
    free(m1);
    free(m2);
}

/* FUZZ_PRINT=1: the program, to turn a crasher into a test. */
static void print_prog(const prog *p, const tc_compile_options *o, const int64_t *xs, int nd, const int64_t *ys, int ynd) {
    static const char *const kinds[] = {"unary", "binary", "scalar_r", "scalar_l", "reduce", "row", "view", "where", "clamp"};
    int i;
    fprintf(stderr, "mode %d decompose %d fusion %d dynamic %d; x", (int)o->mode, o->decompose, o->fusion, o->dynamic);
    for (i = 0; i < nd; i++) fprintf(stderr, " %lld", (long long)xs[i]);
    fprintf(stderr, "; y");
    for (i = 0; i < ynd; i++) fprintf(stderr, " %lld", (long long)ys[i]);
    fprintf(stderr, "\n");
    for (i = 0; i < p->nops; i++) {
        const op *q = &p->ops[i];
        fprintf(stderr, "  v%d = %s sub %d (v%d, v%d) axis %d keep %d s %g\n", 2 + i, kinds[q->kind], q->sub, q->a, q->b,
                q->axis, q->keep, q->s);
    }
    fprintf(stderr, "  outputs v%d", p->out[0]);
    if (p->nout > 1) fprintf(stderr, ", v%d", p->out[1]);
    fprintf(stderr, "\n");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const tc_mode modes[] = {TC_MODE_DEFAULT, TC_MODE_REDUCE_OVERHEAD, TC_MODE_MAX_AUTOTUNE};
    tc_ctx *ctx = fuzz_ctx();
    fuzz_in in;
    prog p;
    tc_compile_options o;
    tc_fn *f;
    int64_t xs[3], ys[3], live = tc_ctx_live_tensors(ctx);
    int nd, ynd, d, call;
    unsigned ymask, b;
    in.p = data;
    in.n = size;
    memset(&o, 0, sizeof o);
    b = fuzz_u8(&in);
    o.mode = modes[b % 3];
    o.decompose = (int)(b / 3 % 3) - 1;
    o.fusion = b / 9 % 4 == 3 ? -1 : 0;
    o.num_inputs = 2;
    o.cache_dir = ""; /* max-autotune measures, never writes */
    nd = 1 + (int)(fuzz_u8(&in) % 3);
    for (d = 0; d < nd; d++) xs[d] = 1 + (int64_t)(fuzz_u8(&in) % 9);
    ymask = fuzz_u8(&in);
    ynd = nd - (int)(ymask >> 6) % nd; /* y: fewer leading dims, some of size 1 */
    o.dynamic = (int)(ymask >> 3 & 7) % 3 == 0 ? 0 : (int)(ymask >> 3 & 7) % 3 == 1 ? 2 : -1;
    for (d = 0; d < ynd; d++) ys[d] = ymask >> d & 1 ? 1 : xs[nd - ynd + d];
    decode(&in, &p);
    o.num_outputs = p.nout;
    if (getenv("FUZZ_PRINT")) print_prog(&p, &o, xs, nd, ys, ynd);
    fuzz_alloc_limit((size_t)16 << 20);
    tc_scope_begin(ctx);
    f = tc_compile(ctx, model, &p, &o);
    FUZZ_ASSERT(f != NULL);
    for (call = 0; call < 3; call++) {
        int64_t x1[3], y1[3];
        tc_tensor *inp[2], *ref[2], *got[2], *p1[2], *p2[2], *mv[2];
        int k;
        tc_result r, eager;
        memcpy(x1, xs, sizeof xs);
        memcpy(y1, ys, sizeof ys);
        if (call == 1) { /* dim 0 of x changes, and y's where it followed it */
            x1[0] = xs[0] == 5 ? 7 : 5;
            if (ynd == nd && ys[0] == xs[0]) y1[0] = x1[0];
        }
        tc_scope_begin(ctx);
        inp[0] = tc_rand_normal(ctx, nd, x1, 0.0, 1.0, 1 + (uint64_t)call);
        inp[1] = tc_rand_normal(ctx, ynd, y1, 0.5, 1.0, 11 + (uint64_t)call);
        model(ctx, &p, inp, ref);
        for (k = 0; k < 2; k++) mv[k] = moved(ctx, inp[k], 1);
        model(ctx, &p, mv, p1);
        for (k = 0; k < 2; k++) mv[k] = moved(ctx, inp[k], -1);
        model(ctx, &p, mv, p2);
        r = tc_call(f, inp, got);
        /* a call fails as a whole, with its first errored output's error */
        for (k = 0, eager = TC_OK; k < p.nout && eager == TC_OK; k++) eager = tc_status(ref[k]);
        if (r != eager) fprintf(stderr, "call %d: compiled %s, eager %s: %s\n", call, tc_result_string(r),
                                tc_result_string(eager), tc_fn_error(f));
        FUZZ_ASSERT(r == eager);
        for (k = 0; k < p.nout; k++) {
            if (r != TC_OK) FUZZ_ASSERT(tc_status(got[k]) != TC_OK);
            else compare(got[k], ref[k], p1[k], p2[k]);
        }
        tc_scope_end(ctx);
    }
    tc_fn_free(f);
    tc_scope_end(ctx);
    FUZZ_ASSERT(tc_ctx_live_tensors(ctx) == live);
    tc_ctx_clear_error(ctx);
    return 0;
}
