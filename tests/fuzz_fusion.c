/* Differential fuzzer: random graphs, compiled and eager, each checked
 * against a float64 reference interpreter of the graph written here.
 *
 *   fuzz_fusion [graphs [first_seed]]      default 200 graphs from seed 1 (make test's bounded run)
 *
 * Each graph is a short random program over inputs of random shapes (0- and
 * 1-sized dims, sizes of several tiles and of every tile's tail; data
 * inputs of 2+ dims are transposed views of their storage half the time; 1
 * in 10 is f16 and 1 in 10 bf16): unary ops (every op of the unary API),
 * binary ops broadcasting either operand or both, scalars on either side
 * (x + s, x * s; s - x and s / x with a 0-d tensor on the left), sum / mean
 * / max / min, views (transpose, permute, slice, select, (un)squeeze,
 * reshape, and expand, the view with 0 strides, 3 times in 10), softmax,
 * log_softmax, layer and RMS norm, matmul (2-D, batched with broadcast
 * batch dims, 1-D operands; against another value, transposed or not, or
 * a weight input of any width), concat on any dim, conv2d (strides,
 * asymmetric padding, dilation, groups, depthwise, bias), max pooling
 * (dilation, ceil mode), avg pooling (with and without the padding in the
 * divisor) and adaptive avg pooling, attention (the fused op with no,
 * bool, additive or causal mask and the default or a custom scale, and
 * softmax(q k^T s + mask) v written by hand, the scale multiplied or
 * divided on the scores, on q or on k^T, so that the compiler's rewrite
 * into the kernel is fuzzed), embedding, gather and index_select of i32
 * index inputs, floor, ceil, where(a > b), and constants of other dtypes.
 * 1 graph in SPECIAL_EVERY (5) puts special values (NaN, +-inf, -0,
 * +-1e30, +-3e38, 1e-30, a subnormal, 0) in 1 of 16 elements of its float
 * data inputs.
 *
 * The graph is compiled in a random mode on a random ISA level this machine
 * runs; eager runs at the same level.  Both are compared with the reference
 * (ref_run): every op computed in double by its own loops, no tcompile
 * kernel, with its own dtype promotion (PyTorch's), each result rounded to
 * its dtype as the library stores it.  NaN and infinities must be at the
 * same positions and of the same sign; finite elements within a tolerance
 * of |x - ref| / (1 + |ref|) (check_ref).  The tolerance is FUZZ_TOL,
 * widened per output to four times how far the reference itself moves in
 * NOISE_RUNS runs with its roundings moved (noise: each rounding op's
 * result by up to 2^-22 of itself, or 2^-11 / 2^-8 in f16 / bf16, a
 * transcendental one also by 2^-22 absolute, each sum by 2^-21 of its
 * terms' magnitudes; the runs in pairs moved opposite ways), and never
 * past its cap (tol_cap: FUZZ_TOL_CAP, 2^-4 for outputs computed through
 * bf16): beyond it an output fails.  Left out of the comparison, and
 * counted in the summary: elements the moved runs move past a quarter of
 * the cap or to another class (ill-conditioned: a cancellation of huge
 * values, a small inexact value times a huge one), and elements whose float
 * value depends on an order the reference does not fix (a sum whose finite
 * terms reach FLT_MAX / 2, a norm's statistic past it, padding times an
 * infinite weight, attention keys of no weight times an infinite value, q
 * or k times the scale past FLT_MAX / 2).
 *
 * A failure prints the seed; `fuzz_fusion 1 SEED` replays it
 * (FUZZ_VERBOSE=1 prints the program and the compiled plan), and the fixed
 * graph becomes a regression test (test_compile.c).  Every graph is also
 * run once more with the executor's pre-decoded steps off (the tile
 * interpreter alone): the two must give the same bits.  A compiled result
 * may share an input's memory only where eager's does, and a graph whose
 * eager run fails must fail compiled too.  Discontinuous ops (floor, ceil,
 * comparisons, index inputs, masks) read only inputs, whose values the
 * reference holds exactly. */
#define TCOMPILE_TESTING /* the test switches (tc__vplan_off) */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"

#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ref_pointwise.h"

typedef struct rng {
    uint64_t s;
} rng;

static uint32_t rnd(rng *r) {
    r->s = r->s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(r->s >> 33);
}
static int pick(rng *r, int n) { return n > 0 ? (int)(rnd(r) % (uint32_t)n) : 0; }
static double unif(rng *r) { return (rnd(r) + 0.5) / 4294967296.0; } /* (0, 1) */

#define MAXV 32      /* values: inputs and op results                       */
#define MAXIN 10     /* inputs                                              */
#define MAXOPS 14    /* compute ops                                         */
#define MAXNUMEL 100000
#define MAXWORK 300000 /* multiply-adds of one contraction (the reference's time) */
#ifndef SPECIAL_EVERY
#define SPECIAL_EVERY 5
#endif

enum {
    K_INPUT, /* not drawn: an input of the graph */
    K_UNARY, K_BINARY, K_SCALAR, K_REDUCE, K_VIEW, K_ROW, K_MATMUL, K_CONCAT, K_LEAFOP, K_CONV, K_POOL, K_ATTN,
    K_INDEX, K_COUNT
};
/* input kinds: data (normal values), index (i32 in [0, hi)), bool mask
 * (3 in 4 true), causal bool mask (key j <= row l), additive mask (f32, 1
 * in 6 -inf) */
enum { IN_DATA, IN_INDEX, IN_MASK, IN_CAUSAL, IN_ADDMASK };

typedef struct op {
    int kind, sub, a, b, c, d; /* operand value ids (-1: none)            */
    int axis, keep;
    int64_t ia[8]; /* geometry, permutation or shape                     */
    double s;
} op;

typedef struct inspec {
    tc_dtype dt;
    int kind;
    int64_t hi;
    int transposed; /* a transposed view (dims 0, 1) of its storage */
} inspec;

typedef struct prog {
    int nin, nv, nout;
    op ops[MAXV]; /* value i is ops[i]; inputs are K_INPUT ops */
    inspec in[MAXIN];
    int out[2];
    uint64_t seed;
    int special; /* the float inputs hold special values */
} prog;

/* Shapes are tracked while generating so every op is valid by construction. */
typedef struct vinfo {
    int ndim;
    int64_t shape[TC_MAX_DIMS];
    tc_dtype dt;
    int leaf;   /* a data input                                              */
    int usable; /* a float value an op may read (not an index or a mask)     */
    int depth;
    int normed; /* derived from a softmax/norm: its sums may be pure noise   */
} vinfo;

/* the last entry (0) is drawn 1 time in 8; 257 and 1100 make rows of
 * several tiles (and, for row kernels, several passes over them) */
static const int64_t dim_pool[] = {1, 1, 2, 3, 4, 5, 7, 16, 17, 33, 257, 1100, 0};
#define NPOOL ((int)(sizeof dim_pool / sizeof dim_pool[0]))
static const int64_t small_pool[] = {1, 2, 3, 5, 7, 16, 17, 33};

static int is_float(tc_dtype dt) { return dt == TC_F32 || dt == TC_F16 || dt == TC_BF16; }

static int64_t numel_of(int ndim, const int64_t *shape) {
    int64_t n = 1;
    int d;
    for (d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

static int same_shape(const vinfo *a, const vinfo *b) {
    return a->ndim == b->ndim && memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

/* PyTorch's promotion of two tensors (bool < i32 < f16/bf16 < f32; f16
 * with bf16 gives f32), as DTYPES AND SEMANTICS states it. */
static tc_dtype promote2(tc_dtype a, tc_dtype b) {
    if (a == b) return a;
    if (a == TC_F32 || b == TC_F32) return TC_F32;
    if (is_float(a) && is_float(b)) return TC_F32;
    if (is_float(a)) return a;
    if (is_float(b)) return b;
    return a == TC_I32 || b == TC_I32 ? TC_I32 : TC_BOOL;
}

static int category(tc_dtype dt) { return dt == TC_BOOL ? 0 : dt == TC_I32 ? 1 : 2; }

/* Two tensors of nd_a and nd_b dims: a 0-d one beside one with dims only
 * decides the dtype when its category is higher (PyTorch's tiers). */
static tc_dtype promote_v(tc_dtype a, int nd_a, tc_dtype b, int nd_b) {
    if ((nd_a == 0) != (nd_b == 0)) {
        tc_dtype dims = nd_a ? a : b, zero = nd_a ? b : a;
        return category(zero) > category(dims) ? zero : dims;
    }
    return promote2(a, b);
}

/* The broadcast shape of two shapes (numpy rules); 0 if they do not broadcast. */
static int bcast(int an, const int64_t *as, int bn, const int64_t *bs, int *on, int64_t *os) {
    int n = an > bn ? an : bn, d;
    for (d = 0; d < n; d++) {
        int i = an - n + d, j = bn - n + d;
        int64_t x = i >= 0 ? as[i] : 1, y = j >= 0 ? bs[j] : 1;
        if (x != y && x != 1 && y != 1) return 0;
        os[d] = x == 1 ? y : x;
    }
    *on = n;
    return 1;
}

/* torch.matmul's result shape for a @ b (1-D operands, broadcast batch
 * dims) and its multiply-adds; 0 if they do not multiply. */
static int matmul_shape(int an, const int64_t *as, int bn, const int64_t *bs, int *on, int64_t *os, int64_t *work) {
    int64_t a2[TC_MAX_DIMS + 1], b2[TC_MAX_DIMS + 1], bo[TC_MAX_DIMS];
    int na = an, nb = bn, nbo, d;
    if (an == 0 || bn == 0) return 0;
    memcpy(a2, as, sizeof(int64_t) * (size_t)an);
    memcpy(b2, bs, sizeof(int64_t) * (size_t)bn);
    if (an == 1) a2[1] = a2[0], a2[0] = 1, na = 2;
    if (bn == 1) b2[1] = 1, nb = 2;
    if (a2[na - 1] != b2[nb - 2]) return 0;
    if (!bcast(na - 2, a2, nb - 2, b2, &nbo, bo)) return 0;
    *work = numel_of(nbo, bo) * a2[na - 2] * b2[nb - 1] * a2[na - 1];
    *on = 0;
    for (d = 0; d < nbo; d++) os[(*on)++] = bo[d];
    if (an > 1) os[(*on)++] = a2[na - 2];
    if (bn > 1) os[(*on)++] = b2[nb - 1];
    return *on <= TC_MAX_DIMS;
}

/* Every op of TC__UNARY_API (api.h), the list the library declares them
 * from, with its reference (unops[], ref_pointwise.h: an op added to the
 * list without one does not compile): unary subs from 17 on, each on
 * (0.25, 0.75), inside every op's domain and clear of floor's and ceil's
 * steps. */
#define N_UNARY (17 + N_UNOPS)

/* ======================================================================== */
/* The graph on tcompile (eager or traced: the same code)                    */
/* ======================================================================== */

/* The attention written by hand: softmax(q @ k^T * scale [+ mask]) @ v,
 * the scale written where ia[2] says (0 the scores, 1 divided from the
 * scores, 2 q, 3 k^T) */
static tc_tensor *attention_by_hand(tc_ctx *c, const op *o, tc_tensor *q, tc_tensor *k, tc_tensor *v, tc_tensor *m) {
    tc_tensor *kt, *s;
    if (o->ia[2] == 2) q = tc_mul_scalar(c, q, o->s);
    kt = tc_transpose(c, k, -2, -1);
    if (o->ia[2] == 3) kt = tc_mul_scalar(c, kt, o->s);
    s = tc_matmul(c, q, kt);
    if (o->ia[2] == 0) s = tc_mul_scalar(c, s, o->s);
    if (o->ia[2] == 1) s = tc_div_scalar(c, s, 1.0 / o->s);
    if (m && tc_type(m) == TC_BOOL) s = tc_where(c, m, s, tc_scalar(c, -INFINITY));
    else if (m) s = tc_add(c, s, m);
    return tc_matmul(c, tc_softmax(c, s, -1), v);
}

/* Runs op o on values v[]. */
static tc_tensor *apply(tc_ctx *c, const op *o, tc_tensor **v) {
    tc_tensor *a = o->a >= 0 ? v[o->a] : NULL, *b = o->b >= 0 ? v[o->b] : NULL;
    int axes[1];
    switch (o->kind) {
    case K_UNARY:
        switch (o->sub) {
        case 0: return tc_tanh(c, a);
        case 1: return tc_sigmoid(c, a);
        /* bounded arguments: sin of a large value turns its last-ulp
         * difference into a visible one */
        case 2: return tc_sin(c, tc_mul_scalar(c, tc_tanh(c, a), 3.0));
        case 3: return tc_cos(c, tc_mul_scalar(c, tc_tanh(c, a), 3.0));
        case 4: return tc_gelu(c, a);
        case 5: return tc_gelu_tanh(c, a);
        case 6: return tc_silu(c, a);
        case 7: return tc_exp(c, tc_tanh(c, a));
        case 8: return tc_log(c, tc_add_scalar(c, tc_abs(c, a), 1.0));
        case 9: return tc_sqrt(c, tc_add_scalar(c, tc_abs(c, a), 0.25)); /* bounded slope: sqrt near 0 amplifies noise */
        case 10: return tc_rsqrt(c, tc_add_scalar(c, tc_square(c, a), 1.0));
        case 11: return tc_relu(c, a);
        case 12: return tc_erf(c, a);
        case 13: return tc_softplus(c, a, 1.0, 20.0);
        case 14: return tc_clamp(c, a, -0.5, 0.75);
        case 15: return tc_neg(c, a);
        case 16: return tc_reciprocal(c, tc_add_scalar(c, tc_abs(c, a), 1.0));
        default: return unops[o->sub - 17].fn(c, tc_add_scalar(c, tc_mul_scalar(c, tc_tanh(c, a), 0.25), 0.5), TC_HERE_);
        }
    case K_BINARY:
        switch (o->sub) {
        case 0: return tc_add(c, a, b);
        case 1: return tc_sub(c, a, b);
        case 2: return tc_mul(c, a, b);
        case 3: return tc_div(c, a, tc_add_scalar(c, tc_abs(c, b), 1.0));
        case 4: return tc_maximum(c, a, b);
        case 5: return tc_minimum(c, a, b);
        default: { /* ratio gates' product (one pass, one division), axis picks the pair */
            tc_tensor *g = tc_add_scalar(c, tc_mul_scalar(c, a, 1.5), 0.25);
            g = o->axis % 3 == 0 ? tc_sigmoid(c, g) : o->axis % 3 == 1 ? tc_silu(c, g) : tc_gelu_tanh(c, g);
            switch (o->axis / 3) {
            case 0: return tc_mul(c, g, tc_sigmoid(c, b));
            case 1: return tc_mul(c, g, tc_silu(c, b));
            case 2: return tc_mul(c, g, tc_gelu_tanh(c, b));
            default: return tc_mul(c, g, b);
            }
        }
        }
    case K_SCALAR:
        switch (o->sub) {
        case 0: return tc_add_scalar(c, a, o->s);
        case 1: return tc_mul_scalar(c, a, o->s);
        case 2: return tc_sub(c, tc_scalar(c, o->s), a); /* a uniform left operand */
        default: return tc_div(c, tc_scalar(c, o->s), tc_add_scalar(c, tc_abs(c, a), 1.0));
        }
    case K_REDUCE:
        axes[0] = o->axis;
        switch (o->sub) {
        case 0: return tc_sum(c, a, 1, axes, o->keep);
        case 1: return tc_mean(c, a, 1, axes, o->keep);
        case 2: return tc_max(c, a, 1, axes, o->keep);
        default: return tc_min(c, a, 1, axes, o->keep);
        }
    case K_VIEW:
        switch (o->sub) {
        case 0: return tc_transpose(c, a, 0, o->axis);
        case 1: return tc_slice(c, a, o->axis, 1, -1, 2);
        case 2: return tc_select(c, a, o->axis, 0);
        case 3: return tc_unsqueeze(c, a, o->axis);
        case 4: return tc_squeeze(c, a, o->axis);
        case 5: {
            int64_t s[1];
            s[0] = -1;
            return tc_reshape(c, a, 1, s);
        }
        case 6: {
            int perm[TC_MAX_DIMS], d;
            for (d = 0; d < tc_ndim(a); d++) perm[d] = (int)o->ia[d];
            return tc_permute(c, a, perm);
        }
        default: return tc_expand(c, a, o->axis, o->ia);
        }
    case K_ROW:
        switch (o->sub) {
        case 0: return tc_softmax(c, a, -1);
        case 1: return tc_log_softmax(c, a, -1);
        case 2: return tc_layer_norm(c, a, 1, NULL, NULL, 1e-5);
        default: return tc_rms_norm(c, a, 1, NULL, 1e-5);
        }
    case K_MATMUL: return tc_matmul(c, a, o->keep ? tc_transpose(c, b, -2, -1) : b);
    case K_CONCAT: {
        tc_tensor *two[2];
        two[0] = a;
        two[1] = b;
        return tc_concat(c, 2, two, o->axis);
    }
    case K_LEAFOP:
        switch (o->sub) {
        case 0: return tc_floor(c, tc_mul_scalar(c, a, 3.0));
        case 1: return tc_ceil(c, a);
        case 2: { /* a constant of another dtype: its value is rounded first */
            static const tc_dtype dts[4] = {TC_I32, TC_BOOL, TC_F16, TC_BF16};
            int64_t n = tc_ndim(a) > 0 ? tc_dim(a, tc_ndim(a) - 1) : 1;
            return tc_mul(c, a, tc_full(c, dts[o->axis & 3], 1, &n, o->s));
        }
        default: return tc_where(c, tc_gt(c, a, b), a, tc_mul_scalar(c, b, 0.5));
        }
    case K_CONV: {
        tc_conv2d_opts co;
        co.stride[0] = (int)o->ia[0], co.stride[1] = (int)o->ia[1];
        co.padding[0] = (int)o->ia[2], co.padding[1] = (int)o->ia[3];
        co.dilation[0] = (int)o->ia[4], co.dilation[1] = (int)o->ia[5];
        co.groups = (int)o->ia[6];
        return tc_conv2d(c, a, b, o->c >= 0 ? v[o->c] : NULL, &co);
    }
    case K_POOL: {
        tc_pool2d_opts po;
        memset(&po, 0, sizeof po);
        if (o->sub == 2) return tc_adaptive_avg_pool2d(c, a, o->ia[0], o->ia[1]);
        po.kernel[0] = (int)o->ia[0], po.kernel[1] = (int)o->ia[1];
        po.stride[0] = (int)o->ia[2], po.stride[1] = (int)o->ia[3];
        po.padding[0] = (int)o->ia[4], po.padding[1] = (int)o->ia[5];
        po.dilation[0] = (int)o->ia[6], po.dilation[1] = (int)o->ia[6];
        po.ceil_mode = (int)o->ia[7] & 1;
        po.exclude_pad = (int)o->ia[7] >> 1;
        return o->sub == 0 ? tc_max_pool2d(c, a, &po) : tc_avg_pool2d(c, a, &po);
    }
    case K_ATTN: {
        tc_tensor *m = o->d >= 0 ? v[o->d] : NULL;
        if (o->sub == 1) return attention_by_hand(c, o, a, b, v[o->c], m);
        return tc_scaled_dot_product_attention(c, a, b, v[o->c], m, (int)o->ia[0], o->s);
    }
    case K_INDEX:
        switch (o->sub) {
        case 0: return tc_embedding(c, a, b);
        case 1: return tc_gather(c, a, o->axis, b);
        default: return tc_index_select(c, a, o->axis, b);
        }
    }
    return a;
}

static void model(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    const prog *p = (const prog *)user;
    tc_tensor *v[MAXV];
    int i;
    for (i = 0; i < p->nv; i++) v[i] = p->ops[i].kind == K_INPUT ? in[p->ops[i].sub] : apply(c, &p->ops[i], v);
    for (i = 0; i < p->nout; i++) out[i] = v[p->out[i]];
}

/* ======================================================================== */
/* Generation                                                               */
/* ======================================================================== */

typedef struct gen {
    rng *r;
    prog *p;
    vinfo *vi;
} gen;

/* Appends an input of the given kind; its value id, or -1 when full. */
static int add_input(gen *G, tc_dtype dt, int kind, int64_t hi, int ndim, const int64_t *shape) {
    prog *p = G->p;
    vinfo *v;
    op *o;
    if (p->nin >= MAXIN || p->nv >= MAXV || numel_of(ndim, shape) > MAXNUMEL) return -1;
    o = &p->ops[p->nv];
    memset(o, 0, sizeof *o);
    o->kind = K_INPUT;
    o->sub = p->nin;
    o->a = o->b = o->c = o->d = -1;
    p->in[p->nin].dt = dt;
    p->in[p->nin].kind = kind;
    p->in[p->nin].hi = hi;
    p->in[p->nin].transposed = kind == IN_DATA && ndim >= 2 && pick(G->r, 2);
    p->nin++;
    v = &G->vi[p->nv];
    memset(v, 0, sizeof *v);
    v->ndim = ndim;
    memcpy(v->shape, shape, sizeof(int64_t) * (size_t)ndim);
    v->dt = dt;
    v->leaf = kind == IN_DATA;
    v->usable = kind == IN_DATA && is_float(dt);
    return p->nv++;
}

static tc_dtype data_dtype(rng *r) {
    int k = pick(r, 10);
    return k == 0 ? TC_F16 : k == 1 ? TC_BF16 : TC_F32;
}

/* The graph's first inputs: 1-3 data inputs, their dims drawn from
 * dim_pool (often equal to input 0's), or an image [N, C, H, W] for the
 * convolutions and pools. */
static void gen_inputs(gen *G) {
    int i, nin = 1 + pick(G->r, 3);
    for (i = 0; i < nin; i++) {
        int64_t sh[TC_MAX_DIMS];
        int nd, d;
        const vinfo *v0 = &G->vi[0];
        if (pick(G->r, 5) == 0) { /* an image */
            nd = 3 + pick(G->r, 2);
            for (d = 0; d < nd; d++) sh[d] = 1 + pick(G->r, 12);
            if (nd == 4) sh[0] = pick(G->r, 3);
            if (pick(G->r, 8) == 0) sh[nd - 1] = 1 + pick(G->r, 40);
        } else {
            nd = i > 0 && pick(G->r, 2) ? v0->ndim : pick(G->r, 4) + (pick(G->r, 4) == 0 ? 0 : 1);
            for (d = 0; d < nd; d++) {
                sh[d] = dim_pool[pick(G->r, NPOOL - (pick(G->r, 8) ? 1 : 0))];
                if (pick(G->r, 6) == 0) sh[d] = 1 + pick(G->r, 48); /* any size: every tile's tail */
                if (i > 0 && nd == v0->ndim && pick(G->r, 3)) sh[d] = v0->shape[d];
            }
        }
        while (numel_of(nd, sh) > 40000) { /* keep a graph to milliseconds */
            int big = 0;
            for (d = 1; d < nd; d++)
                if (sh[d] > sh[big]) big = d;
            sh[big] = (sh[big] + 1) / 2;
        }
        add_input(G, data_dtype(G->r), IN_DATA, 0, nd, sh);
    }
}

/* A float value to read, or -1. */
static int pick_usable(gen *G) {
    int c[MAXV], n = 0, i;
    for (i = 0; i < G->p->nv; i++)
        if (G->vi[i].usable) c[n++] = i;
    return n ? c[pick(G->r, n)] : -1;
}

/* Fills o and nv for one op of kind o->kind on value a; 0 if it does not
 * apply (the generator draws again). */
static int gen_op(gen *G, op *o, vinfo *nv) {
    rng *r = G->r;
    prog *p = G->p;
    vinfo *vi = G->vi;
    const vinfo *va = &vi[o->a];
    int n = p->nv, d, k;
    *nv = *va;
    nv->leaf = 0;
    nv->depth = va->depth + 1;
    switch (o->kind) {
    case K_UNARY: o->sub = pick(r, N_UNARY); return 1;
    case K_SCALAR:
        o->sub = pick(r, 4);
        o->s = (pick(r, 200) - 100) / 37.0;
        if (o->sub >= 2) nv->dt = promote_v(TC_F32, 0, va->dt, va->ndim); /* tc_scalar: a 0-d tensor */
        return 1;
    case K_BINARY: {
        /* a partner broadcasting with a either way (or both ways) */
        int cand[MAXV], nc = 0;
        for (k = 0; k < n; k++) {
            int on;
            int64_t os[TC_MAX_DIMS];
            if (vi[k].usable && bcast(va->ndim, va->shape, vi[k].ndim, vi[k].shape, &on, os) &&
                numel_of(on, os) <= MAXNUMEL)
                cand[nc++] = k;
        }
        if (!nc) return 0;
        o->b = cand[pick(r, nc)];
        if (pick(r, 2)) { /* the broadcast operand on the left as often as on the right */
            k = o->a;
            o->a = o->b;
            o->b = k;
            va = &vi[o->a];
        }
        bcast(va->ndim, va->shape, vi[o->b].ndim, vi[o->b].shape, &nv->ndim, nv->shape);
        nv->dt = promote_v(va->dt, va->ndim, vi[o->b].dt, vi[o->b].ndim);
        nv->normed = va->normed | vi[o->b].normed;
        nv->depth = (va->depth > vi[o->b].depth ? va->depth : vi[o->b].depth) + 1;
        o->sub = pick(r, 7);
        o->axis = pick(r, 12);
        return 1;
    }
    case K_REDUCE:
        if (va->ndim == 0) return 0;
        o->sub = pick(r, 4);
        o->axis = pick(r, va->ndim);
        o->keep = pick(r, 2);
        if (o->sub >= 2 && va->shape[o->axis] == 0) return 0; /* no identity */
        if (o->sub < 2 && va->normed) return 0; /* a norm's row sums to 0: the sum is its rounding */
        if (o->keep) nv->shape[o->axis] = 1;
        else {
            for (d = o->axis; d < nv->ndim - 1; d++) nv->shape[d] = nv->shape[d + 1];
            nv->ndim--;
        }
        return 1;
    case K_VIEW:
        o->sub = pick(r, 10); /* 7-9: expand, the one view that makes broadcast (0) strides */
        if (o->sub > 7) o->sub = 7;
        switch (o->sub) {
        case 0:
            if (va->ndim < 2) return 0;
            o->axis = 1 + pick(r, va->ndim - 1);
            nv->shape[0] = va->shape[o->axis];
            nv->shape[o->axis] = va->shape[0];
            return 1;
        case 1: case 2:
            if (va->ndim == 0) return 0;
            o->axis = pick(r, va->ndim);
            if (o->sub == 1) {
                int64_t len = va->shape[o->axis], end = len - 1, start = len > 1 ? 1 : len;
                nv->shape[o->axis] = end > start ? (end - start - 1) / 2 + 1 : 0;
            } else {
                if (va->shape[o->axis] == 0) return 0;
                for (d = o->axis; d < nv->ndim - 1; d++) nv->shape[d] = nv->shape[d + 1];
                nv->ndim--;
            }
            return 1;
        case 3:
            if (va->ndim >= 6) return 0;
            o->axis = pick(r, va->ndim + 1);
            for (d = nv->ndim; d > o->axis; d--) nv->shape[d] = nv->shape[d - 1];
            nv->shape[o->axis] = 1;
            nv->ndim++;
            return 1;
        case 4:
            k = -1;
            for (d = 0; d < va->ndim; d++)
                if (va->shape[d] == 1) k = d;
            if (k < 0) return 0;
            o->axis = k;
            for (d = k; d < nv->ndim - 1; d++) nv->shape[d] = nv->shape[d + 1];
            nv->ndim--;
            return 1;
        case 5:
            nv->ndim = 1;
            nv->shape[0] = numel_of(va->ndim, va->shape);
            return 1;
        case 6: /* a random permutation */
            if (va->ndim < 2) return 0;
            for (d = 0; d < va->ndim; d++) o->ia[d] = d;
            for (d = va->ndim - 1; d > 0; d--) {
                int j = pick(r, d + 1);
                int64_t t = o->ia[d];
                o->ia[d] = o->ia[j];
                o->ia[j] = t;
            }
            for (d = 0; d < va->ndim; d++) nv->shape[d] = va->shape[o->ia[d]];
            return 1;
        default: { /* expand: size-1 dims widened, 0-2 new leading dims; -1 keeps */
            int lead = va->ndim >= 5 ? 0 : pick(r, 3), changed = lead > 0;
            static const int64_t widths[] = {2, 3, 5, 17};
            if (va->ndim + lead > 6) lead = 6 - va->ndim;
            o->axis = va->ndim + lead;
            for (d = 0; d < lead; d++) o->ia[d] = widths[pick(r, 4)];
            for (d = 0; d < va->ndim; d++) {
                int64_t s = va->shape[d];
                o->ia[lead + d] = pick(r, 3) ? -1 : s;
                if (s == 1 && pick(r, 3)) o->ia[lead + d] = widths[pick(r, 4)], changed = 1;
            }
            if (!changed) return 0;
            nv->ndim = o->axis;
            for (d = 0; d < nv->ndim; d++) nv->shape[d] = o->ia[d] == -1 ? va->shape[d - lead] : o->ia[d];
            return 1;
        }
        }
    case K_ROW:
        /* on shallow values only: a norm of a nearly constant row
         * amplifies last-ulp differences without bound */
        /* rows of 0 elements (empty results) or of 2+ */
        if (va->ndim == 0 || va->depth > 2 || va->normed || va->shape[va->ndim - 1] == 1) return 0;
        o->sub = pick(r, 4);
        nv->normed = 1;
        return 1;
    case K_MATMUL: {
        /* against a value (or its transpose) that multiplies, or a new weight */
        int cand[2 * MAXV], nc = 0;
        int64_t work, sh[TC_MAX_DIMS];
        for (k = 0; k < n; k++) {
            int t;
            if (!vi[k].usable) continue;
            for (t = 0; t < 2; t++) {
                int on;
                int64_t os[TC_MAX_DIMS];
                memcpy(sh, vi[k].shape, sizeof sh);
                if (t) {
                    if (vi[k].ndim < 2) continue;
                    sh[vi[k].ndim - 1] = vi[k].shape[vi[k].ndim - 2];
                    sh[vi[k].ndim - 2] = vi[k].shape[vi[k].ndim - 1];
                }
                if (matmul_shape(va->ndim, va->shape, vi[k].ndim, sh, &on, os, &work) && work <= MAXWORK &&
                    numel_of(on, os) <= MAXNUMEL)
                    cand[nc++] = 2 * k + t;
            }
        }
        if (va->ndim == 0) return 0;
        if (nc && pick(r, 2)) {
            k = cand[pick(r, nc)];
            o->b = k / 2;
            o->keep = k % 2;
        } else { /* a weight [N, K] used transposed (linear's), [K, N], or [K] */
            /* N from the pool, or any width up to 70: every edge tile of
             * every register tile (NR 32 on AVX-512) */
            int64_t K = va->shape[va->ndim - 1], N = pick(r, 2) ? dim_pool[pick(r, NPOOL - 1)] : 1 + pick(r, 70);
            int wd = pick(r, 6) ? 2 : 1;
            o->keep = wd == 2 && pick(r, 2);
            sh[0] = o->keep ? N : K;
            sh[1] = o->keep ? K : N;
            if ((o->b = add_input(G, data_dtype(r), IN_DATA, 0, wd, sh)) < 0) return 0;
        }
        memcpy(sh, vi[o->b].shape, sizeof sh);
        if (o->keep) {
            sh[vi[o->b].ndim - 1] = vi[o->b].shape[vi[o->b].ndim - 2];
            sh[vi[o->b].ndim - 2] = vi[o->b].shape[vi[o->b].ndim - 1];
        }
        if (!matmul_shape(va->ndim, va->shape, vi[o->b].ndim, sh, &nv->ndim, nv->shape, &work) || work > MAXWORK ||
            numel_of(nv->ndim, nv->shape) > MAXNUMEL)
            return 0;
        nv->dt = promote2(va->dt, vi[o->b].dt);
        nv->normed |= vi[o->b].normed;
        return 1;
    }
    case K_CONCAT: {
        int cand[MAXV], nc = 0;
        if (va->ndim == 0) return 0;
        o->axis = pick(r, va->ndim);
        for (k = 0; k < n; k++) {
            vinfo t = vi[k];
            t.shape[o->axis] = va->shape[o->axis];
            if (vi[k].usable && t.ndim == va->ndim && same_shape(&t, va)) cand[nc++] = k;
        }
        o->b = cand[pick(r, nc)];
        nv->shape[o->axis] = va->shape[o->axis] + vi[o->b].shape[o->axis];
        nv->dt = promote2(va->dt, vi[o->b].dt);
        nv->normed |= vi[o->b].normed;
        return 1;
    }
    case K_LEAFOP:
        if (!va->leaf) return 0;
        o->sub = pick(r, 4);
        o->axis = pick(r, 4);
        o->s = (pick(r, 400) - 200) / 7.0;
        if (o->sub == 2) { /* times a constant [n] (n: a's last dim, or 1) */
            static const tc_dtype dts[4] = {TC_I32, TC_BOOL, TC_F16, TC_BF16};
            nv->dt = promote_v(va->dt, va->ndim, dts[o->axis], 1);
            if (va->ndim == 0) nv->ndim = 1, nv->shape[0] = 1;
        }
        if (o->sub == 3) {
            int cand[MAXV], nc = 0;
            for (k = 0; k < n; k++)
                if (vi[k].leaf && is_float(vi[k].dt) && same_shape(&vi[k], va)) cand[nc++] = k;
            o->b = cand[pick(r, nc)];
            nv->dt = promote2(va->dt, vi[o->b].dt);
        }
        nv->depth = 0;
        return 1;
    case K_CONV: {
        /* x [N, C, H, W] or [C, H, W]; weight [Cout, C / groups, kh, kw] */
        int64_t C, H, W, g, ws[4], bs[1], work, kh, kw, sh_, sw_, ph, pw, dh, dw, OH, OW, N;
        if (va->ndim < 3 || va->ndim > 4) return 0;
        N = va->ndim == 4 ? va->shape[0] : 1;
        C = va->shape[va->ndim - 3], H = va->shape[va->ndim - 2], W = va->shape[va->ndim - 1];
        if (C < 1 || H < 1 || W < 1) return 0;
        g = pick(r, 3) == 0 ? C : pick(r, 2) && C % 2 == 0 ? 2 : pick(r, 2) && C % 3 == 0 ? 3 : 1;
        kh = 1 + pick(r, 3), kw = pick(r, 3) ? kh : 1 + pick(r, 5);
        sh_ = 1 + pick(r, 2), sw_ = pick(r, 2) ? sh_ : 1 + pick(r, 3);
        ph = pick(r, 3), pw = pick(r, 2) ? ph : pick(r, 3);
        dh = 1 + (pick(r, 4) == 0), dw = 1 + (pick(r, 4) == 0);
        OH = (H + 2 * ph - dh * (kh - 1) - 1) / sh_ + 1;
        OW = (W + 2 * pw - dw * (kw - 1) - 1) / sw_ + 1;
        if (H + 2 * ph < dh * (kh - 1) + 1 || W + 2 * pw < dw * (kw - 1) + 1) return 0;
        ws[0] = g == 1 && pick(r, 2) ? 1 + pick(r, 40) : g * (1 + pick(r, 3)); /* Cout: the GEMM's M */
        ws[1] = C / g, ws[2] = kh, ws[3] = kw;
        work = N * ws[0] * OH * OW * ws[1] * kh * kw;
        if (work > MAXWORK || N * ws[0] * OH * OW > MAXNUMEL) return 0;
        if ((o->b = add_input(G, TC_F32, IN_DATA, 0, 4, ws)) < 0) return 0;
        vi[o->b].usable = 0; /* a weight: its own shape */
        bs[0] = ws[0];
        o->c = pick(r, 2) ? add_input(G, TC_F32, IN_DATA, 0, 1, bs) : -1;
        if (o->c >= 0) vi[o->c].usable = 0;
        o->ia[0] = sh_, o->ia[1] = sw_, o->ia[2] = ph, o->ia[3] = pw, o->ia[4] = dh, o->ia[5] = dw, o->ia[6] = g;
        nv->shape[nv->ndim - 3] = ws[0];
        nv->shape[nv->ndim - 2] = OH;
        nv->shape[nv->ndim - 1] = OW;
        nv->dt = promote2(va->dt, TC_F32);
        return 1;
    }
    case K_POOL: {
        int64_t H, W, kh, kw, s0, s1, p0, p1, dil, OH, OW;
        int ceil_mode;
        if (va->ndim < 3 || va->ndim > 4) return 0;
        H = va->shape[va->ndim - 2], W = va->shape[va->ndim - 1];
        if (H < 1 || W < 1 || va->shape[va->ndim - 3] < 1) return 0;
        o->sub = pick(r, 3);
        if (o->sub == 2) {
            o->ia[0] = 1 + pick(r, (int)(H + 2 < 9 ? H + 2 : 9));
            o->ia[1] = 1 + pick(r, (int)(W + 2 < 9 ? W + 2 : 9));
            nv->shape[nv->ndim - 2] = o->ia[0];
            nv->shape[nv->ndim - 1] = o->ia[1];
            return 1;
        }
        kh = 1 + pick(r, 3), kw = pick(r, 2) ? kh : 1 + pick(r, 3);
        s0 = pick(r, 3), s1 = pick(r, 2) ? s0 : pick(r, 3); /* 0: the kernel size */
        p0 = pick(r, (int)kh / 2 + 1), p1 = pick(r, (int)kw / 2 + 1);
        dil = o->sub == 0 && pick(r, 4) == 0 ? 2 : 1;
        ceil_mode = pick(r, 3) == 0;
        {
            int64_t st0 = s0 ? s0 : kh, st1 = s1 ? s1 : kw, num0 = H + 2 * p0 - dil * (kh - 1) - 1,
                    num1 = W + 2 * p1 - dil * (kw - 1) - 1;
            if (num0 < 0 || num1 < 0) return 0;
            OH = (ceil_mode ? (num0 + st0 - 1) / st0 : num0 / st0) + 1;
            OW = (ceil_mode ? (num1 + st1 - 1) / st1 : num1 / st1) + 1;
            /* PyTorch: the last window must start inside the input or its left padding */
            if (ceil_mode && (OH - 1) * st0 >= H + p0) OH--;
            if (ceil_mode && (OW - 1) * st1 >= W + p1) OW--;
        }
        o->ia[0] = kh, o->ia[1] = kw, o->ia[2] = s0, o->ia[3] = s1, o->ia[4] = p0, o->ia[5] = p1, o->ia[6] = dil;
        o->ia[7] = ceil_mode | (o->sub == 1 ? pick(r, 2) << 1 : 0);
        nv->shape[nv->ndim - 2] = OH;
        nv->shape[nv->ndim - 1] = OW;
        return 1;
    }
    case K_ATTN: {
        /* q = a [..., L, E]; k [.., S, E] and v [.., S, Ev] new inputs whose
         * batch dims are q's or 1 (broadcast); a mask of [L, S] or [1, S] */
        int64_t ks[TC_MAX_DIMS], vs[TC_MAX_DIMS], ms[2], L, E, S, Ev, nb;
        int nd = va->ndim, mk, form;
        if (nd < 2 || nd > 4) return 0;
        L = va->shape[nd - 2], E = va->shape[nd - 1];
        S = small_pool[pick(r, 8)], Ev = small_pool[pick(r, 8)];
        nb = numel_of(nd - 2, va->shape);
        if (nb * L * S * (E + Ev) > MAXWORK || nb * L * Ev > MAXNUMEL || nb * S * (E > Ev ? E : Ev) > MAXNUMEL)
            return 0;
        o->sub = pick(r, 2); /* 1: written by hand */
        for (d = 0; d < nd - 2; d++) ks[d] = vs[d] = pick(r, 4) ? va->shape[d] : 1;
        ks[nd - 2] = vs[nd - 2] = S;
        ks[nd - 1] = E;
        vs[nd - 1] = Ev;
        if ((o->b = add_input(G, TC_F32, IN_DATA, 0, nd, ks)) < 0) return 0;
        if ((o->c = add_input(G, TC_F32, IN_DATA, 0, nd, vs)) < 0) return 0;
        mk = pick(r, 4); /* 0 none, 1 causal, 2 bool, 3 additive */
        ms[0] = mk == 1 || pick(r, 3) ? L : 1;
        ms[1] = S;
        o->d = -1;
        o->ia[0] = 0;
        if (mk == 1 && o->sub == 0) {
            o->ia[0] = 1; /* is_causal */
        } else if (mk) { /* by hand, causal is a bool mask input */
            o->d = add_input(G, mk == 3 ? TC_F32 : TC_BOOL, mk == 1 ? IN_CAUSAL : mk == 2 ? IN_MASK : IN_ADDMASK, 0, 2, ms);
            if (o->d < 0) return 0;
        }
        form = pick(r, 4);
        o->ia[2] = form;
        o->s = o->sub == 0 && pick(r, 3) == 0 ? 0.0 : 0.05 + pick(r, 30) / 20.0; /* 0: the default, 1/sqrt(E) */
        nv->shape[nd - 1] = Ev;
        for (d = 0; d < nd - 2; d++) nv->shape[d] = va->shape[d];
        nv->dt = promote2(va->dt, TC_F32);
        nv->normed = 1;
        return 1;
    }
    case K_INDEX: {
        int64_t is[TC_MAX_DIMS];
        int ind;
        o->sub = pick(r, 3);
        if (o->sub == 0) { /* embedding: a [V, D], idx any shape */
            if (va->ndim != 2 || va->shape[0] < 1) return 0;
            ind = pick(r, 3);
            for (d = 0; d < ind; d++) is[d] = small_pool[pick(r, 6)] - (pick(r, 8) == 0);
            if ((o->b = add_input(G, TC_I32, IN_INDEX, va->shape[0], ind, is)) < 0) return 0;
            nv->ndim = ind + 1;
            memcpy(nv->shape, is, sizeof(int64_t) * (size_t)ind);
            nv->shape[ind] = va->shape[1];
        } else {
            if (va->ndim == 0) return 0;
            o->axis = pick(r, va->ndim);
            if (o->sub == 1) { /* gather: idx of a's rank, no larger than a off the axis */
                for (d = 0; d < va->ndim; d++) is[d] = pick(r, 2) ? va->shape[d] : pick(r, (int)(va->shape[d] < 4 ? va->shape[d] : 4) + 1);
                if (pick(r, 2)) is[o->axis] = 1 + pick(r, 5);
                ind = va->ndim;
            } else {
                is[0] = pick(r, 7);
                ind = 1;
            }
            if (va->shape[o->axis] < 1 && numel_of(ind, is) > 0) return 0;
            if ((o->b = add_input(G, TC_I32, IN_INDEX, va->shape[o->axis], ind, is)) < 0) return 0;
            if (o->sub == 1) {
                memcpy(nv->shape, is, sizeof(int64_t) * (size_t)ind);
            } else {
                nv->shape[o->axis] = is[0];
            }
        }
        return numel_of(nv->ndim, nv->shape) <= MAXNUMEL;
    }
    }
    return 0;
}

/* Builds a random valid program. */
static void generate(rng *r, prog *p, vinfo *vi) {
    gen G;
    int tries, ncomp = 0, want, k;
    memset(p, 0, sizeof *p);
    G.r = r, G.p = p, G.vi = vi;
    p->special = pick(r, SPECIAL_EVERY) == 0;
    gen_inputs(&G);
    want = 4 + pick(r, MAXOPS - 4);
    for (tries = 0; tries < 400 && ncomp < want && p->nv < MAXV - 1; tries++) {
        op o;
        vinfo nv;
        prog saved_p;
        memset(&o, 0, sizeof o);
        o.kind = 1 + pick(r, K_COUNT - 1);
        o.b = o.c = o.d = -1;
        if ((o.a = pick_usable(&G)) < 0) break;
        saved_p = *p; /* an op that does not apply takes back the inputs it added */
        if (!gen_op(&G, &o, &nv) || numel_of(nv.ndim, nv.shape) > MAXNUMEL || p->nv >= MAXV) {
            *p = saved_p;
            continue;
        }
        nv.usable = is_float(nv.dt);
        p->ops[p->nv] = o;
        vi[p->nv++] = nv;
        ncomp++;
    }
    /* the last value, and the last op it does not read (so that fewer
     * ops are dead code), or one drawn */
    p->nout = 1 + pick(r, 2);
    p->out[0] = p->out[1] = p->nv - 1;
    {
        char live[MAXV];
        memset(live, 0, sizeof live);
        live[p->nv - 1] = 1;
        for (k = p->nv - 1; k >= 0; k--)
            if (live[k]) {
                const op *o = &p->ops[k];
                if (o->a >= 0) live[o->a] = 1;
                if (o->b >= 0) live[o->b] = 1;
                if (o->c >= 0) live[o->c] = 1;
                if (o->d >= 0) live[o->d] = 1;
            }
        for (k = p->nv - 1; k >= 0 && (live[k] || p->ops[k].kind == K_INPUT); k--) continue;
        if (k >= 0) p->nout = 2, p->out[1] = k;
        else if (p->ops[k = pick(r, p->nv)].kind != K_INPUT) p->out[1] = k;
    }
}

/* ======================================================================== */
/* The reference: every op in double, its own loops                          */
/* ======================================================================== */

typedef struct rval {
    tc_dtype dt;
    int ndim;
    int64_t shape[TC_MAX_DIMS];
    int64_t n;
    double *x;
    unsigned char *dc; /* 1: the float result is not determined (NULL: none) */
    double eps;        /* the coarsest rounding (eps_of) on the way: f32, f16 or bf16 */
} rval;

/* The moved runs (noise): every rounding op's result moves by up to
 * eps(dt) of itself, every sum by 2^-21 of its terms' magnitudes. */
static struct {
    int on;
    double sign; /* runs in pairs, the second moved the other way */
    rng r;
} noise;

static double eps_of(tc_dtype dt) {
    return dt == TC_F32 ? 1.0 / 4194304.0 : dt == TC_F16 ? 1.0 / 2048.0 : dt == TC_BF16 ? 1.0 / 256.0 : 0.0;
}
static double noise_u(void) { return noise.sign * (2.0 * unif(&noise.r) - 1.0); }

/* v rounded to the nearest value with `bits` significant bits, exponent at
 * least emin (subnormals), inf past max: f16 and bf16 from a float. */
static double round_bits(double v, int bits, int emin, double max) {
    double a = fabs(v), q;
    int e;
    if (v != v || isinf(v) || a == 0) return v;
    frexp(a, &e); /* a in [2^(e-1), 2^e) */
    if (e - 1 < emin) e = emin + 1;
    q = ldexp(1.0, e - bits);
    a = rint(a / q) * q; /* ties to even */
    if (a > max) a = INFINITY;
    return v < 0 ? -a : a;
}

/* v as the library stores it in dt: float results are computed in f32 and
 * rounded to half. */
static double round_to(double v, tc_dtype dt) {
    switch (dt) {
    case TC_F32: return (double)(float)v;
    case TC_F16: return round_bits((double)(float)v, 11, -14, 65504.0);
    case TC_BF16: return round_bits((double)(float)v, 8, -126, 3.3895313892515355e38);
    case TC_I32: return v != v ? 0 : v >= 2147483647.0 ? 2147483647.0 : v <= -2147483648.0 ? -2147483648.0 : trunc(v);
    default: return v != 0;
    }
}

/* A rounding op's result: moved in the noise runs, then rounded. */
static double fin(double v, tc_dtype dt) {
    if (noise.on && v == v && !isinf(v)) v *= 1.0 + noise_u() * eps_of(dt);
    return round_to(v, dt);
}

/* A transcendental function's result: also moved by 2^-22 absolute in
 * the noise runs (the vector math's accuracy is partly absolute: sin, erf,
 * and formulas like gelu_tanh's 1 + tanh(u) near -1), so a product of such
 * a small value with a huge one is known to be ill-conditioned. */
static double fin_t(double v, tc_dtype dt) {
    if (noise.on && v == v && !isinf(v)) v += noise_u() / 4194304.0;
    return fin(v, dt);
}

/* A sum's value given its terms' sum of magnitudes (finite terms only):
 * moved in the noise runs; *dc set where the terms reach FLT_MAX / 2. */
static double acc_fin(double sum, double mag, unsigned char *dc) {
    if (mag > FLT_MAX / 2 && dc) *dc = 1;
    if (noise.on && sum == sum && !isinf(sum)) sum += noise_u() * mag / 2097152.0;
    return sum;
}

static void rv_alloc(rval *v, tc_dtype dt, int ndim, const int64_t *shape) {
    v->dt = dt;
    v->ndim = ndim;
    memcpy(v->shape, shape, sizeof(int64_t) * (size_t)ndim);
    v->n = numel_of(ndim, shape);
    v->x = (double *)calloc((size_t)(v->n ? v->n : 1), sizeof(double));
    v->dc = NULL;
}
static void rv_free(rval *v) {
    free(v->x);
    free(v->dc);
    v->x = NULL;
    v->dc = NULL;
}
static unsigned char *rv_dc(rval *v) {
    if (!v->dc) v->dc = (unsigned char *)calloc((size_t)(v->n ? v->n : 1), 1);
    return v->dc;
}
static int dc_at(const rval *v, int64_t i) { return v->dc && v->dc[i]; }
static void dc_or(rval *o, int64_t i, int x) {
    if (x) rv_dc(o)[i] = 1;
}

/* coordinates of linear index i in shape */
static void unravel(int64_t i, int ndim, const int64_t *shape, int64_t *idx) {
    int d;
    for (d = ndim - 1; d >= 0; d--) {
        idx[d] = shape[d] ? i % shape[d] : 0;
        i = shape[d] ? i / shape[d] : 0;
    }
}

/* linear index in v of the output coordinates idx (ondim dims), v
 * broadcast to them (right-aligned, size-1 dims at 0) */
static int64_t bindex(const rval *v, int ondim, const int64_t *idx) {
    int64_t off = 0;
    int d;
    for (d = 0; d < v->ndim; d++) {
        int64_t c = idx[ondim - v->ndim + d];
        off = off * v->shape[d] + (v->shape[d] == 1 ? 0 : c);
    }
    return off;
}

static void contig_strides(int ndim, const int64_t *shape, int64_t *st) {
    int64_t s = 1;
    int d;
    for (d = ndim - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d];
    }
}

/* o = a view of src: element idx at offset + sum idx[d] * st[d] of src */
static void rv_view(rval *o, const rval *src, int ndim, const int64_t *shape, const int64_t *st, int64_t offset) {
    int64_t i, idx[TC_MAX_DIMS];
    int d;
    rv_alloc(o, src->dt, ndim, shape);
    for (i = 0; i < o->n; i++) {
        int64_t off = offset;
        unravel(i, ndim, shape, idx);
        for (d = 0; d < ndim; d++) off += idx[d] * st[d];
        o->x[i] = src->x[off];
        dc_or(o, i, dc_at(src, off));
    }
}

/* a unary function of one element, rounded at every step as the library's
 * ops round: f32, or the value's half dtype */
static double R(double v, tc_dtype dt) { return fin(v, dt); }
static double T(double v, tc_dtype dt) { return fin_t(v, dt); }
static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }
static double gelu_e(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); } /* 1 + erf(z) = erfc(-z), accurate for x < 0 */
/* 0.5 x (1 + tanh(u)) as x / (1 + exp(-2u)): the same, without 1 + tanh's
 * cancellation for x < 0 */
static double gelu_t(double x) { return x / (1.0 + exp(-2.0 * 0.7978845608028654 * (x + 0.044715 * x * x * x))); }
static double silu_e(double x) { return x / (1.0 + exp(-x)); }

/* PyTorch's NaN-propagating max / min and clamp */
static double maxn(double a, double b) { return a != a || b != b ? NAN : a > b ? a : b; }
static double minn(double a, double b) { return a != a || b != b ? NAN : a < b ? a : b; }

static double ref_unary1(int sub, double x, tc_dtype dt) {
    switch (sub) {
    case 0: return T(tanh(x), dt);
    case 1: return T(sigm(x), dt);
    case 2: return T(sin(R(T(tanh(x), dt) * 3.0, dt)), dt);
    case 3: return T(cos(R(T(tanh(x), dt) * 3.0, dt)), dt);
    case 4: return T(gelu_e(x), dt);
    case 5: return T(gelu_t(x), dt);
    case 6: return T(silu_e(x), dt);
    case 7: return T(exp(T(tanh(x), dt)), dt);
    case 8: return T(log(R(fabs(x) + 1.0, dt)), dt);
    case 9: return R(sqrt(R(fabs(x) + 0.25, dt)), dt);
    case 10: return R(1.0 / sqrt(R(R(x * x, dt) + 1.0, dt)), dt);
    case 11: return x != x ? x : x > 0 ? x : 0.0;
    case 12: return T(erf(x), dt);
    case 13: return x > 20.0 ? x : T(log1p(exp(x)), dt);
    case 14: return x != x ? x : x < -0.5 ? round_to(-0.5, dt) : x > 0.75 ? round_to(0.75, dt) : x;
    case 15: return -x;
    case 16: return R(1.0 / R(fabs(x) + 1.0, dt), dt);
    default: return T(unops[sub - 17].ref(R(R(T(tanh(x), dt) * 0.25, dt) + 0.5, dt)), dt);
    }
}

/* An infinite factor times a nonzero one below 1e-6: +-inf exactly, NaN
 * where float's value of the small factor is 0 (gelu_tanh(-5.4) is -1e-8,
 * 0 by its float formula): the noise moves such a factor by 2^-22 absolute,
 * across 0 in one run of a pair unless the draw is tiny, so this leaves the
 * product out for certain. */
static int inf_tiny(double a, double b) {
    return (isinf(a) && b != 0 && fabs(b) < 1e-6) || (isinf(b) && a != 0 && fabs(a) < 1e-6);
}

static double ref_binary1(const op *o, double a, double b, tc_dtype ta, tc_dtype tb, tc_dtype to, int *dc) {
    switch (o->sub) {
    case 0: return R(a + b, to);
    case 1: return R(a - b, to);
    case 2:
        *dc |= inf_tiny(a, b);
        return R(a * b, to);
    case 3: return R(a / R(fabs(b) + 1.0, tb), to);
    case 4: return round_to(maxn(a, b), to); /* the other operand's value in the result's dtype */
    case 5: return round_to(minn(a, b), to);
    default: {
        double g = R(R(a * 1.5, ta) + 0.25, ta), h;
        g = o->axis % 3 == 0 ? T(sigm(g), ta) : o->axis % 3 == 1 ? T(silu_e(g), ta) : T(gelu_t(g), ta);
        switch (o->axis / 3) {
        case 0: h = T(sigm(b), tb); break;
        case 1: h = T(silu_e(b), tb); break;
        case 2: h = T(gelu_t(b), tb); break;
        default: h = b;
        }
        *dc |= inf_tiny(g, h);
        return R(g * h, to);
    }
    }
}

/* a @ b, torch.matmul's rules */
static void ref_matmul(rval *o, const rval *a, const rval *b) {
    int64_t a2[TC_MAX_DIMS + 1], b2[TC_MAX_DIMS + 1], os[TC_MAX_DIMS], bo[TC_MAX_DIMS], work, M, N, K, nb, bi, i, j, k;
    int na = a->ndim, nb_ = b->ndim, on, nbo;
    tc_dtype dt = promote2(a->dt, b->dt);
    memcpy(a2, a->shape, sizeof(int64_t) * (size_t)na);
    memcpy(b2, b->shape, sizeof(int64_t) * (size_t)nb_);
    if (na == 1) a2[1] = a2[0], a2[0] = 1, na = 2;
    if (nb_ == 1) b2[1] = 1, nb_ = 2;
    matmul_shape(a->ndim, a->shape, b->ndim, b->shape, &on, os, &work);
    rv_alloc(o, dt, on, os);
    bcast(na - 2, a2, nb_ - 2, b2, &nbo, bo);
    M = a2[na - 2], K = a2[na - 1], N = b2[nb_ - 1];
    nb = numel_of(nbo, bo);
    for (bi = 0; bi < nb; bi++) {
        int64_t idx[TC_MAX_DIMS], aoff = 0, boff = 0;
        int d;
        unravel(bi, nbo, bo, idx);
        for (d = 0; d < na - 2; d++) aoff = aoff * a2[d] + (a2[d] == 1 ? 0 : idx[nbo - (na - 2) + d]);
        for (d = 0; d < nb_ - 2; d++) boff = boff * b2[d] + (b2[d] == 1 ? 0 : idx[nbo - (nb_ - 2) + d]);
        aoff *= M * K;
        boff *= K * N;
        for (i = 0; i < M; i++)
            for (j = 0; j < N; j++) {
                double s = 0, mag = 0;
                int dcx = 0;
                unsigned char dcf = 0;
                for (k = 0; k < K; k++) {
                    double x = a->x[aoff + i * K + k], y = b->x[boff + k * N + j], t = x * y;
                    s += t;
                    if (!isinf(t) && t == t) mag += fabs(t);
                    dcx |= dc_at(a, aoff + i * K + k) | dc_at(b, boff + k * N + j) | inf_tiny(x, y);
                }
                s = acc_fin(s, mag, &dcf);
                o->x[(bi * M + i) * N + j] = fin(s, dt);
                dc_or(o, (bi * M + i) * N + j, dcx | dcf);
            }
    }
}

static void ref_transpose_last(rval *o, const rval *a) {
    int64_t st[TC_MAX_DIMS], sh[TC_MAX_DIMS], t;
    int n = a->ndim;
    contig_strides(n, a->shape, st);
    memcpy(sh, a->shape, sizeof sh);
    sh[n - 1] = a->shape[n - 2], sh[n - 2] = a->shape[n - 1];
    t = st[n - 1], st[n - 1] = st[n - 2], st[n - 2] = t;
    rv_view(o, a, n, sh, st, 0);
}

/* softmax(q k^T scale + mask) v over broadcast batch dims; mask bool
 * (0: -inf), additive, or causal; `hand`: the by-hand form's roundings */
static void ref_attention(rval *o, const op *op_, const rval *q, const rval *k, const rval *v, const rval *m) {
    int nd = q->ndim, d;
    int64_t L = q->shape[nd - 2], E = q->shape[nd - 1], S = k->shape[nd - 2], Ev = v->shape[nd - 1], os[TC_MAX_DIMS],
            nb, bi, l, j, e;
    int hand = op_->sub == 1, causal = !hand && op_->ia[0];
    double scale = hand ? op_->s : op_->s > 0 ? op_->s : 1.0 / sqrt((double)(E > 0 ? E : 1));
    double *p = (double *)malloc(sizeof(double) * (size_t)(S ? S : 1));
    tc_dtype dt = promote2(promote2(q->dt, k->dt), v->dt);
    memcpy(os, q->shape, sizeof os);
    os[nd - 1] = Ev;
    rv_alloc(o, dt, nd, os);
    nb = numel_of(nd - 2, q->shape);
    for (bi = 0; bi < nb; bi++) {
        int64_t idx[TC_MAX_DIMS], ko = 0, vo = 0;
        unravel(bi, nd - 2, q->shape, idx);
        for (d = 0; d < nd - 2; d++) {
            ko = ko * k->shape[d] + (k->shape[d] == 1 ? 0 : idx[d]);
            vo = vo * v->shape[d] + (v->shape[d] == 1 ? 0 : idx[d]);
        }
        for (l = 0; l < L; l++) {
            const double *ql = q->x + (bi * L + l) * E;
            double mx = -INFINITY, sum = 0;
            int rowdc = 0, nan = 0;
            for (j = 0; j < S; j++) {
                double s = 0, mag = 0;
                unsigned char dcf = 0;
                for (e = 0; e < E; e++) {
                    double qe = ql[e], ke = k->x[(ko * S + j) * E + e], t;
                    if (hand && op_->ia[2] == 2) qe = fin(qe * round_to(scale, TC_F32), q->dt);
                    if (hand && op_->ia[2] == 3) ke = fin(ke * round_to(scale, TC_F32), k->dt);
                    t = qe * ke;
                    s += t;
                    if (!isinf(t) && t == t) mag += fabs(t);
                    /* the kernel scales q before the product (PyTorch's math
                     * path scales q and k by sqrt(scale)): either may overflow */
                    if ((!isinf(qe) && fabs(qe) * (scale > 1 ? scale : 1) > FLT_MAX / 2) ||
                        (!isinf(ke) && fabs(ke) * (scale > 1 ? scale : 1) > FLT_MAX / 2))
                        dcf = 1;
                    rowdc |= dc_at(q, (bi * L + l) * E + e) | dc_at(k, (ko * S + j) * E + e) | inf_tiny(qe, ke);
                }
                s = acc_fin(s, mag, &dcf);
                rowdc |= dcf;
                if (hand) { /* the scores are a tensor: rounded, scaled, rounded */
                    s = fin(s, dt);
                    if (op_->ia[2] == 0) s = fin(s * round_to(scale, TC_F32), dt);
                    if (op_->ia[2] == 1) s = fin(s / round_to(1.0 / scale, TC_F32), dt);
                } else {
                    s *= scale;
                }
                if (causal && j > l) s = -INFINITY;
                if (m) {
                    int64_t mi = (m->shape[0] == 1 ? 0 : l) * S + j;
                    if (m->dt == TC_BOOL) s = m->x[mi] != 0 ? s : -INFINITY;
                    else s = hand ? fin(s + m->x[mi], dt) : s + m->x[mi];
                }
                p[j] = s;
                if (s != s) nan = 1;
                if (s > mx) mx = s;
            }
            for (j = 0; j < S; j++) {
                p[j] = exp(p[j] - mx);
                sum += p[j];
            }
            for (e = 0; e < Ev; e++) {
                int64_t oi = (bi * L + l) * Ev + e;
                double acc = 0, mag = 0;
                unsigned char dcf = 0;
                int dcv = 0;
                for (j = 0; j < S; j++) {
                    double w = p[j] / sum, x = v->x[(vo * S + j) * Ev + e], t = w * x;
                    acc += t;
                    if (!isinf(t) && t == t) mag += fabs(t);
                    /* a key of (nearly) no weight times an infinite value:
                     * NaN, unless the kernel skips the key (causal blocks) */
                    dcv |= dc_at(v, (vo * S + j) * Ev + e) | (w < 1e-30 && (isinf(x) || x != x));
                }
                if (mx == -INFINITY || nan || isinf(mx)) acc = NAN; /* every key masked, a NaN, or +inf: NaN */
                acc = acc_fin(acc, mag, &dcf);
                /* the flash kernel sums exp(s - running max) v before dividing */
                if (mag * sum > FLT_MAX / 2) dcf = 1;
                o->x[oi] = fin(acc, dt);
                dc_or(o, oi, rowdc | dcv | dcf);
            }
        }
    }
    free(p);
}

static void ref_conv(rval *o, const op *op_, const rval *x, const rval *w, const rval *b) {
    int three = x->ndim == 3;
    int64_t N = three ? 1 : x->shape[0], C = x->shape[x->ndim - 3], H = x->shape[x->ndim - 2], W = x->shape[x->ndim - 1];
    int64_t Co = w->shape[0], Cg = w->shape[1], kh = w->shape[2], kw = w->shape[3];
    int64_t sh = op_->ia[0], sw = op_->ia[1], ph = op_->ia[2], pw = op_->ia[3], dh = op_->ia[4], dw = op_->ia[5],
            g = op_->ia[6];
    int64_t OH = (H + 2 * ph - dh * (kh - 1) - 1) / sh + 1, OW = (W + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
    int64_t os[4], n, co, oh, ow, ci, ki, kj;
    tc_dtype dt = promote2(promote2(x->dt, w->dt), b ? b->dt : w->dt);
    if (three) os[0] = Co, os[1] = OH, os[2] = OW;
    else os[0] = N, os[1] = Co, os[2] = OH, os[3] = OW;
    rv_alloc(o, dt, three ? 3 : 4, os);
    for (n = 0; n < N; n++)
        for (co = 0; co < Co; co++)
            for (oh = 0; oh < OH; oh++)
                for (ow = 0; ow < OW; ow++) {
                    int64_t grp = co / (Co / g), oi = ((n * Co + co) * OH + oh) * OW + ow;
                    double s = b ? b->x[co] : 0, mag = b && !isinf(b->x[co]) && b->x[co] == b->x[co] ? fabs(b->x[co]) : 0;
                    int dcx = b ? dc_at(b, co) : 0;
                    unsigned char dcf = 0;
                    for (ci = 0; ci < Cg; ci++)
                        for (ki = 0; ki < kh; ki++)
                            for (kj = 0; kj < kw; kj++) {
                                int64_t ih = oh * sh - ph + ki * dh, iw = ow * sw - pw + kj * dw, xi,
                                        wi = ((co * Cg + ci) * kh + ki) * kw + kj;
                                double t;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
                                    /* padding times an infinite weight: NaN where the
                                     * kernel multiplies the padding's zeros, nothing
                                     * where it skips them */
                                    dcx |= isinf(w->x[wi]) || w->x[wi] != w->x[wi];
                                    continue;
                                }
                                xi = ((n * C + grp * Cg + ci) * H + ih) * W + iw;
                                t = x->x[xi] * w->x[wi];
                                s += t;
                                if (!isinf(t) && t == t) mag += fabs(t);
                                dcx |= dc_at(x, xi) | dc_at(w, wi) | inf_tiny(x->x[xi], w->x[wi]);
                            }
                    s = acc_fin(s, mag, &dcf);
                    o->x[oi] = fin(s, dt);
                    dc_or(o, oi, dcx | dcf);
                }
}

static void ref_pool(rval *o, const op *op_, const rval *x) {
    int nd = x->ndim;
    int64_t P = numel_of(nd - 2, x->shape), H = x->shape[nd - 2], W = x->shape[nd - 1], os[TC_MAX_DIMS], OH, OW, pl,
            oh, ow, i, j;
    memcpy(os, x->shape, sizeof os);
    if (op_->sub == 2) {
        OH = op_->ia[0], OW = op_->ia[1];
    } else {
        int64_t kh = op_->ia[0], kw = op_->ia[1], s0 = op_->ia[2] ? op_->ia[2] : kh, s1 = op_->ia[3] ? op_->ia[3] : kw,
                p0 = op_->ia[4], p1 = op_->ia[5], dil = op_->ia[6], num0 = H + 2 * p0 - dil * (kh - 1) - 1,
                num1 = W + 2 * p1 - dil * (kw - 1) - 1;
        int ceil_mode = (int)op_->ia[7] & 1;
        OH = (ceil_mode ? (num0 + s0 - 1) / s0 : num0 / s0) + 1;
        OW = (ceil_mode ? (num1 + s1 - 1) / s1 : num1 / s1) + 1;
        if (ceil_mode && (OH - 1) * s0 >= H + p0) OH--;
        if (ceil_mode && (OW - 1) * s1 >= W + p1) OW--;
    }
    os[nd - 2] = OH, os[nd - 1] = OW;
    rv_alloc(o, x->dt, nd, os);
    for (pl = 0; pl < P; pl++)
        for (oh = 0; oh < OH; oh++)
            for (ow = 0; ow < OW; ow++) {
                int64_t oi = (pl * OH + oh) * OW + ow, h0, h1, w0, w1;
                double s = 0, mag = 0, div;
                int dcx = 0;
                unsigned char dcf = 0;
                if (op_->sub == 2) { /* adaptive: [floor(i H / OH), ceil((i + 1) H / OH)) */
                    h0 = oh * H / OH, h1 = ((oh + 1) * H + OH - 1) / OH;
                    w0 = ow * W / OW, w1 = ((ow + 1) * W + OW - 1) / OW;
                    div = (double)((h1 - h0) * (w1 - w0));
                } else if (op_->sub == 0) {
                    int64_t kh = op_->ia[0], kw = op_->ia[1], s0 = op_->ia[2] ? op_->ia[2] : kh,
                            s1 = op_->ia[3] ? op_->ia[3] : kw, dil = op_->ia[6];
                    double mx = -INFINITY;
                    for (i = 0; i < kh; i++)
                        for (j = 0; j < kw; j++) {
                            int64_t ih = oh * s0 - op_->ia[4] + i * dil, iw = ow * s1 - op_->ia[5] + j * dil, xi;
                            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                            xi = (pl * H + ih) * W + iw;
                            mx = maxn(mx, x->x[xi]);
                            dcx |= dc_at(x, xi);
                        }
                    o->x[oi] = mx;
                    dc_or(o, oi, dcx);
                    continue;
                } else { /* avg: PyTorch's window clipped to the padded input, then to the input */
                    int64_t kh = op_->ia[0], kw = op_->ia[1], s0 = op_->ia[2] ? op_->ia[2] : kh,
                            s1 = op_->ia[3] ? op_->ia[3] : kw;
                    h0 = oh * s0 - op_->ia[4], w0 = ow * s1 - op_->ia[5];
                    h1 = h0 + kh < H + op_->ia[4] ? h0 + kh : H + op_->ia[4];
                    w1 = w0 + kw < W + op_->ia[5] ? w0 + kw : W + op_->ia[5];
                    div = (double)((h1 - h0) * (w1 - w0));
                    h0 = h0 < 0 ? 0 : h0, w0 = w0 < 0 ? 0 : w0;
                    h1 = h1 > H ? H : h1, w1 = w1 > W ? W : w1;
                    if (op_->ia[7] >> 1) div = (double)((h1 - h0) * (w1 - w0));
                }
                for (i = h0; i < h1; i++)
                    for (j = w0; j < w1; j++) {
                        double t = x->x[(pl * H + i) * W + j];
                        s += t;
                        if (!isinf(t) && t == t) mag += fabs(t);
                        dcx |= dc_at(x, (pl * H + i) * W + j);
                    }
                s = acc_fin(s, mag, &dcf);
                o->x[oi] = fin(s / div, x->dt);
                dc_or(o, oi, dcx | dcf);
            }
}

/* softmax, log_softmax, layer_norm, rms_norm over the last dim */
static void ref_row(rval *o, int sub, const rval *a) {
    int64_t Lr = a->shape[a->ndim - 1], rows = Lr ? a->n / Lr : 0, ri, j;
    rv_alloc(o, a->dt, a->ndim, a->shape);
    for (ri = 0; ri < rows; ri++) {
        const double *x = a->x + ri * Lr;
        double *y = o->x + ri * Lr, mx = -INFINITY, s = 0, mag = 0, mean, var = 0;
        int dcx = 0, nan = 0;
        unsigned char dcf = 0;
        for (j = 0; j < Lr; j++) {
            dcx |= dc_at(a, ri * Lr + j);
            if (x[j] != x[j]) nan = 1;
            if (x[j] > mx) mx = x[j];
        }
        if (sub <= 1) {
            for (j = 0; j < Lr; j++) s += exp(x[j] - mx);
            s = acc_fin(s, s, &dcf);
            for (j = 0; j < Lr; j++) {
                double t = sub == 0 ? exp(x[j] - mx) / s : x[j] - mx - log(s);
                y[j] = nan ? NAN : fin(t, a->dt);
            }
        } else {
            for (j = 0; j < Lr; j++) {
                s += sub == 2 ? x[j] : x[j] * x[j];
                if (!isinf(x[j])) mag += sub == 2 ? fabs(x[j]) : x[j] * x[j];
            }
            s = acc_fin(s, mag, &dcf) / (double)Lr;
            mean = sub == 2 ? s : 0;
            if (sub == 2) {
                mag = 0;
                for (j = 0; j < Lr; j++) {
                    var += (x[j] - mean) * (x[j] - mean);
                    if (!isinf(x[j])) mag += (x[j] - mean) * (x[j] - mean);
                }
                var = acc_fin(var, mag, &dcf) / (double)Lr;
            } else {
                var = s;
            }
            for (j = 0; j < Lr; j++) y[j] = fin((x[j] - mean) / sqrt(var + 1e-5), a->dt);
        }
        for (j = 0; j < Lr; j++) dc_or(o, ri * Lr + j, dcx | dcf);
    }
}

static void ref_reduce(rval *o, const op *op_, const rval *a) {
    int ax = op_->axis, d, on = 0;
    int64_t os[TC_MAX_DIMS] = {0}, outer = 1, inner = 1, len = a->shape[ax], oi, ii, k;
    for (d = 0; d < a->ndim; d++) {
        if (d < ax) outer *= a->shape[d];
        if (d > ax) inner *= a->shape[d];
        if (d != ax) os[on++] = a->shape[d];
        else if (op_->keep) os[on++] = 1;
    }
    rv_alloc(o, a->dt, on, os);
    for (oi = 0; oi < outer; oi++)
        for (ii = 0; ii < inner; ii++) {
            double s = 0, mag = 0;
            int dcx = 0;
            unsigned char dcf = 0;
            int64_t out = oi * inner + ii;
            if (op_->sub >= 2) s = op_->sub == 2 ? -INFINITY : INFINITY;
            for (k = 0; k < len; k++) {
                double t = a->x[(oi * len + k) * inner + ii];
                dcx |= dc_at(a, (oi * len + k) * inner + ii);
                if (op_->sub == 2) s = maxn(s, t);
                else if (op_->sub == 3) s = minn(s, t);
                else {
                    s += t;
                    if (!isinf(t) && t == t) mag += fabs(t);
                }
            }
            if (op_->sub < 2) {
                s = acc_fin(s, mag, &dcf);
                if (op_->sub == 1) s /= (double)len;
                s = fin(s, a->dt);
            }
            o->x[out] = s;
            dc_or(o, out, dcx | dcf);
        }
}

static void ref_view(rval *o, const op *op_, const rval *a) {
    int64_t st[TC_MAX_DIMS], sh[TC_MAX_DIMS], ost[TC_MAX_DIMS], off = 0, t;
    int nd = a->ndim, d, ax = op_->axis;
    contig_strides(nd, a->shape, st);
    memcpy(sh, a->shape, sizeof sh);
    memcpy(ost, st, sizeof ost);
    switch (op_->sub) {
    case 0:
        sh[0] = a->shape[ax], sh[ax] = a->shape[0];
        t = ost[0], ost[0] = ost[ax], ost[ax] = t;
        break;
    case 1: {
        int64_t len = a->shape[ax], end = len - 1, start = len > 1 ? 1 : len;
        sh[ax] = end > start ? (end - start - 1) / 2 + 1 : 0;
        if (sh[ax] > 0) off = start * st[ax];
        ost[ax] = st[ax] * 2;
        break;
    }
    case 2:
        for (d = ax; d < nd - 1; d++) sh[d] = sh[d + 1], ost[d] = ost[d + 1];
        nd--;
        break;
    case 3:
        for (d = nd; d > ax; d--) sh[d] = sh[d - 1], ost[d] = ost[d - 1];
        sh[ax] = 1, ost[ax] = 0;
        nd++;
        break;
    case 4:
        for (d = ax; d < nd - 1; d++) sh[d] = sh[d + 1], ost[d] = ost[d + 1];
        nd--;
        break;
    case 5:
        sh[0] = a->n, ost[0] = 1, nd = 1;
        break;
    case 6:
        for (d = 0; d < nd; d++) sh[d] = a->shape[op_->ia[d]], ost[d] = st[op_->ia[d]];
        break;
    default: {
        int lead = op_->axis - a->ndim;
        nd = op_->axis;
        for (d = 0; d < nd; d++) {
            int64_t have = d >= lead ? a->shape[d - lead] : 1;
            sh[d] = op_->ia[d] == -1 ? have : op_->ia[d];
            ost[d] = d >= lead && have == sh[d] ? st[d - lead] : 0;
        }
    }
    }
    rv_view(o, a, nd, sh, ost, off);
}

/* one op of the reference; inputs are v[] */
static void ref_op(rval *v, int i, const prog *p) {
    const op *o = &p->ops[i];
    rval *out = &v[i];
    const rval *a = o->a >= 0 ? &v[o->a] : NULL, *b = o->b >= 0 ? &v[o->b] : NULL;
    int64_t j, idx[TC_MAX_DIMS];
    switch (o->kind) {
    case K_UNARY:
        rv_alloc(out, a->dt, a->ndim, a->shape);
        for (j = 0; j < a->n; j++) {
            out->x[j] = ref_unary1(o->sub, a->x[j], a->dt);
            dc_or(out, j, dc_at(a, j));
        }
        return;
    case K_SCALAR: {
        /* add / mul: a scalar argument keeps a's dtype; s - a, s / a: tc_scalar, a 0-d f32 tensor */
        tc_dtype dt = o->sub >= 2 ? promote_v(TC_F32, 0, a->dt, a->ndim) : a->dt;
        double s = round_to(o->s, TC_F32);
        rv_alloc(out, dt, a->ndim, a->shape);
        for (j = 0; j < a->n; j++) {
            double x = a->x[j];
            out->x[j] = o->sub == 0 ? R(x + s, dt) : o->sub == 1 ? R(x * s, dt) : o->sub == 2 ? R(s - x, dt)
                                                                               : R(s / R(fabs(x) + 1.0, a->dt), dt);
            dc_or(out, j, dc_at(a, j));
        }
        return;
    }
    case K_BINARY: {
        int on;
        int64_t os[TC_MAX_DIMS];
        tc_dtype dt = promote_v(a->dt, a->ndim, b->dt, b->ndim);
        bcast(a->ndim, a->shape, b->ndim, b->shape, &on, os);
        rv_alloc(out, dt, on, os);
        for (j = 0; j < out->n; j++) {
            int64_t ia, ib;
            unravel(j, on, os, idx);
            ia = bindex(a, on, idx), ib = bindex(b, on, idx);
            int dcx = dc_at(a, ia) | dc_at(b, ib);
            out->x[j] = ref_binary1(o, a->x[ia], b->x[ib], a->dt, b->dt, dt, &dcx);
            dc_or(out, j, dcx);
        }
        return;
    }
    case K_REDUCE: ref_reduce(out, o, a); return;
    case K_VIEW: ref_view(out, o, a); return;
    case K_ROW: ref_row(out, o->sub, a); return;
    case K_MATMUL:
        if (o->keep) {
            rval bt;
            ref_transpose_last(&bt, b);
            ref_matmul(out, a, &bt);
            rv_free(&bt);
        } else {
            ref_matmul(out, a, b);
        }
        return;
    case K_CONCAT: {
        int64_t os[TC_MAX_DIMS], la = a->shape[o->axis];
        memcpy(os, a->shape, sizeof os);
        os[o->axis] += b->shape[o->axis];
        rv_alloc(out, promote2(a->dt, b->dt), a->ndim, os);
        for (j = 0; j < out->n; j++) {
            const rval *src = a;
            int64_t si;
            unravel(j, out->ndim, os, idx);
            if (idx[o->axis] >= la) src = b, idx[o->axis] -= la;
            si = bindex(src, out->ndim, idx);
            out->x[j] = round_to(src->x[si], out->dt);
            dc_or(out, j, dc_at(src, si));
        }
        return;
    }
    case K_LEAFOP: {
        static const tc_dtype dts[4] = {TC_I32, TC_BOOL, TC_F16, TC_BF16};
        tc_dtype dt = o->sub == 2 ? promote_v(a->dt, a->ndim, dts[o->axis & 3], 1) : o->sub == 3 ? promote2(a->dt, b->dt) : a->dt;
        double cst = round_to(o->s, dts[o->axis & 3]);
        int64_t one = 1;
        if (o->sub == 2 && a->ndim == 0) rv_alloc(out, dt, 1, &one);
        else rv_alloc(out, dt, a->ndim, a->shape);
        for (j = 0; j < a->n; j++) {
            double x = a->x[j];
            switch (o->sub) {
            case 0: out->x[j] = floor(round_to(x * 3.0, a->dt)); break;
            case 1: out->x[j] = ceil(x); break;
            case 2: out->x[j] = round_to(x * cst, dt); break;
            default: out->x[j] = x > b->x[j] ? round_to(x, dt) : round_to(round_to(b->x[j] * 0.5, b->dt), dt);
            }
        }
        return;
    }
    case K_CONV: ref_conv(out, o, a, b, o->c >= 0 ? &v[o->c] : NULL); return;
    case K_POOL: ref_pool(out, o, a); return;
    case K_ATTN: ref_attention(out, o, a, b, &v[o->c], o->d >= 0 ? &v[o->d] : NULL); return;
    case K_INDEX:
        if (o->sub == 0) {
            int64_t D = a->shape[1], os[TC_MAX_DIMS];
            memcpy(os, b->shape, sizeof(int64_t) * (size_t)b->ndim);
            os[b->ndim] = D;
            rv_alloc(out, a->dt, b->ndim + 1, os);
            for (j = 0; j < out->n; j++) {
                int64_t si = (int64_t)b->x[j / (D ? D : 1)] * D + j % (D ? D : 1);
                out->x[j] = a->x[si];
                dc_or(out, j, dc_at(a, si));
            }
        } else {
            int64_t os[TC_MAX_DIMS], ast[TC_MAX_DIMS];
            memcpy(os, a->shape, sizeof os);
            if (o->sub == 1) memcpy(os, b->shape, sizeof(int64_t) * (size_t)b->ndim);
            else os[o->axis] = b->shape[0];
            contig_strides(a->ndim, a->shape, ast);
            rv_alloc(out, a->dt, a->ndim, os);
            for (j = 0; j < out->n; j++) {
                int64_t si = 0;
                int d;
                unravel(j, a->ndim, os, idx);
                idx[o->axis] = (int64_t)b->x[o->sub == 1 ? j : idx[o->axis]];
                for (d = 0; d < a->ndim; d++) si += idx[d] * ast[d];
                out->x[j] = a->x[si];
                dc_or(out, j, dc_at(a, si));
            }
        }
        return;
    }
}

/* ======================================================================== */
/* Inputs: values drawn here, held exactly by the reference                  */
/* ======================================================================== */

static const double specials[] = {NAN, INFINITY, -INFINITY, -0.0, 1e30, -1e30, 3e38, -3e38, 1e-30, 1e-41, 0.0};

/* The bits of a half (f16) value v (already rounded to one). */
static uint16_t half_bits(double v) {
    uint16_t s = (uint16_t)(signbit(v) ? 0x8000 : 0);
    double a = fabs(v);
    int e;
    if (v != v) return 0x7E00;
    if (isinf(v)) return (uint16_t)(s | 0x7C00);
    if (a < ldexp(1.0, -14)) return (uint16_t)(s | (uint16_t)(a * 16777216.0)); /* subnormal: a / 2^-24 */
    frexp(a, &e);                                                                 /* a in [2^(e-1), 2^e) */
    return (uint16_t)(s | (uint16_t)((e - 1 + 15) << 10) | (uint16_t)((a / ldexp(1.0, e - 1) - 1.0) * 1024.0));
}

/* The value of input k: drawn (and rounded to its dtype) into x. */
static void draw_input(const prog *p, int k, const vinfo *v, rng *r, rval *x) {
    const inspec *s = &p->in[k];
    int64_t j, idx[TC_MAX_DIMS];
    rv_alloc(x, s->dt, v->ndim, v->shape);
    for (j = 0; j < x->n; j++) {
        double u;
        switch (s->kind) {
        case IN_INDEX: x->x[j] = (double)(rnd(r) % (uint32_t)(s->hi > 0 ? s->hi : 1)); break;
        case IN_MASK: x->x[j] = pick(r, 4) != 0; break;
        case IN_CAUSAL:
            unravel(j, v->ndim, v->shape, idx);
            x->x[j] = idx[1] <= idx[0];
            break;
        default:
            u = sqrt(-2.0 * log(unif(r))) * cos(6.283185307179586 * unif(r)); /* normal */
            if (s->kind == IN_ADDMASK && pick(r, 6) == 0) u = -INFINITY;
            if (s->kind == IN_DATA && p->special && pick(r, 16) == 0)
                u = specials[pick(r, (int)(sizeof specials / sizeof specials[0]))];
            x->x[j] = round_to(u, s->dt);
        }
    }
}

/* The tensor of input k holding x's values (a transposed view of its
 * storage where the input says so). */
static tc_tensor *make_input(tc_ctx *ctx, const prog *p, int k, const rval *x) {
    const inspec *s = &p->in[k];
    int64_t sh[TC_MAX_DIMS], st[TC_MAX_DIMS], j, idx[TC_MAX_DIMS], n = x->n ? x->n : 1;
    void *buf = malloc((size_t)n * 4);
    tc_tensor *t;
    int d, tr = s->transposed && x->ndim >= 2;
    memcpy(sh, x->shape, sizeof sh);
    if (tr) sh[0] = x->shape[1], sh[1] = x->shape[0];
    contig_strides(x->ndim, sh, st);
    for (j = 0; j < x->n; j++) {
        int64_t si = 0;
        double v = x->x[j];
        unravel(j, x->ndim, x->shape, idx);
        if (tr) {
            int64_t t0 = idx[0];
            idx[0] = idx[1], idx[1] = t0;
        }
        for (d = 0; d < x->ndim; d++) si += idx[d] * st[d];
        switch (s->dt) {
        case TC_F32: ((float *)buf)[si] = (float)v; break;
        case TC_F16: ((uint16_t *)buf)[si] = half_bits(v); break;
        case TC_BF16: {
            float f = (float)v;
            uint32_t u;
            memcpy(&u, &f, 4);
            ((uint16_t *)buf)[si] = (uint16_t)(v != v ? 0x7FC0 : u >> 16);
            break;
        }
        case TC_I32: ((int32_t *)buf)[si] = (int32_t)v; break;
        default: ((unsigned char *)buf)[si] = (unsigned char)(v != 0);
        }
    }
    t = tc_from_data(ctx, s->dt, x->ndim, sh, buf);
    free(buf);
    return tr ? tc_transpose(ctx, t, 0, 1) : t;
}

/* The reference run: every value of the graph; the inputs are in[]. */
static void ref_run(const prog *p, const rval *in, rval *v) {
    int i;
    for (i = 0; i < p->nv; i++) {
        if (p->ops[i].kind == K_INPUT) {
            const rval *x = &in[p->ops[i].sub];
            rv_alloc(&v[i], x->dt, x->ndim, x->shape);
            memcpy(v[i].x, x->x, sizeof(double) * (size_t)(x->n ? x->n : 1));
            v[i].eps = 0; /* held exactly */
        } else {
            const op *o = &p->ops[i];
            int k, src[4];
            ref_op(v, i, p);
            src[0] = o->a, src[1] = o->b, src[2] = o->c, src[3] = o->d;
            v[i].eps = eps_of(v[i].dt);
            for (k = 0; k < 4; k++)
                if (src[k] >= 0 && v[src[k]].eps > v[i].eps) v[i].eps = v[src[k]].eps;
        }
    }
}

/* ======================================================================== */
/* Checks                                                                   */
/* ======================================================================== */

#define FUZZ_TOL 2e-4
/* The widest an output is compared within: beyond it, it fails.  An
 * output computed through f16 or bf16 values: 16 of its coarsest dtype's
 * half-ulps, if wider (bf16: 2^-4). */
#define FUZZ_TOL_CAP 1e-2
static double tol_cap(const rval *v) { return 16 * v->eps > FUZZ_TOL_CAP ? 16 * v->eps : FUZZ_TOL_CAP; }

static int cls(double x) { return x != x ? 1 : isinf(x) ? (x > 0 ? 2 : 3) : 0; }

/* The element error: relative, absolute below 1. */
static double elem_err(double x, double ref) { return fabs(x - ref) / (1.0 + fabs(ref)); }

/* The largest elem_err of a moved run x from the reference over the
 * elements not left out; an element whose class (finite, NaN, +inf, -inf)
 * changes, or that moves past a quarter of the output's cap (tol_cap:
 * ill-conditioned, like a huge value's cancellation or a small inexact
 * value times a huge one), is left out (skip[i] set) instead. */
static double spread_vs(const rval *x, const rval *ref, unsigned char *skip) {
    double worst = 0;
    int64_t i;
    for (i = 0; i < ref->n; i++) {
        double d;
        if (skip[i] || dc_at(ref, i)) continue;
        if (dc_at(x, i) || cls(x->x[i]) != cls(ref->x[i])) { /* moved into overflow, or to another class */
            skip[i] = 1;
            continue;
        }
        if (cls(ref->x[i])) continue;
        d = elem_err(x->x[i], ref->x[i]);
        if (d > tol_cap(ref) / 4) skip[i] = 1;
        else if (d > worst) worst = d;
    }
    return worst;
}

/* got against the reference: dtype, shape, NaN / inf at the same
 * positions, finite elements within tol (skip[i]: left out).  Returns 1 if
 * it holds; *worst is the largest error, msg describes what failed. */
static int check_ref(tc_tensor *got, const rval *ref, const unsigned char *skip, double tol, double *worst, char *msg,
                     size_t cap) {
    int64_t n = ref->n, i, bad = -1;
    float *x;
    int d;
    *worst = 0;
    msg[0] = 0;
    if (tc_status(got) != TC_OK) {
        snprintf(msg, cap, "error: %s", tc_error(got));
        return 0;
    }
    if (tc_type(got) != ref->dt || tc_ndim(got) != ref->ndim) {
        snprintf(msg, cap, "dtype %d, %d dims; the reference has dtype %d, %d dims", (int)tc_type(got), tc_ndim(got),
                 (int)ref->dt, ref->ndim);
        return 0;
    }
    for (d = 0; d < ref->ndim; d++)
        if (tc_shape(got)[d] != ref->shape[d]) {
            snprintf(msg, cap, "dim %d is %lld; the reference's is %lld", d, (long long)tc_shape(got)[d],
                     (long long)ref->shape[d]);
            return 0;
        }
    x = (float *)malloc(sizeof(float) * (size_t)(n ? n : 1));
    if (tc_read(got, TC_F32, x, sizeof(float) * (size_t)n) != TC_OK) {
        snprintf(msg, cap, "tc_read failed");
        free(x);
        return 0;
    }
    for (i = 0; i < n; i++) {
        double y = ref->x[i], e;
        if (skip[i]) continue;
        if (cls(x[i]) != cls(y)) {
            e = INFINITY;
        } else if (cls(y)) {
            continue;
        } else {
            e = elem_err((double)x[i], y);
        }
        if (e > *worst) {
            *worst = e;
            if (e > tol) bad = i; /* the worst element, once past tol */
        }
    }
    if (bad >= 0) {
        int64_t idx[TC_MAX_DIMS];
        char where[128];
        int k = 0;
        unravel(bad, ref->ndim, ref->shape, idx);
        where[0] = 0;
        for (d = 0; d < ref->ndim && k < 100; d++) k += snprintf(where + k, sizeof where - (size_t)k, "%s%lld", d ? "," : "", (long long)idx[d]);
        snprintf(msg, cap, "at [%s] %.9g, the reference %.9g (worst error %.3g)", where, (double)x[bad], ref->x[bad],
                 *worst);
    }
    free(x);
    return bad < 0;
}

/* Bytes from t's first element to just past its last (strides span them). */
static int64_t span_bytes(tc_tensor *t) {
    int64_t e = 1;
    int d;
    for (d = 0; d < tc_ndim(t); d++) e += (tc_shape(t)[d] - 1) * (tc_strides(t)[d] < 0 ? -tc_strides(t)[d] : tc_strides(t)[d]);
    return e * (int64_t)tc_dtype_size(tc_type(t));
}

/* Whether a's elements and b's share memory (their spans overlap). */
static int shares_memory(tc_tensor *a, tc_tensor *b) {
    const char *pa, *pb;
    if (tc_status(a) != TC_OK || tc_status(b) != TC_OK || tc_numel(a) == 0 || tc_numel(b) == 0) return 0;
    pa = (const char *)tc_data(a);
    pb = (const char *)tc_data(b);
    return pa < pb + span_bytes(b) && pb < pa + span_bytes(a);
}

/* Whether a call with the executor's pre-decoded steps off (tc__vplan)
 * gives bit for bit the outputs y[0..nout) of the call just made: the
 * steps decide once what the interpreter decides at every tile, so any
 * difference is a decision taken differently. */
static int same_without_plan(tc_fn *f, tc_tensor **in, tc_tensor **y, int nout, int *bad) {
    float *a[2] = {NULL, NULL}, *b = NULL;
    size_t bytes[2] = {0, 0};
    tc_tensor *y2[2] = {NULL, NULL};
    int k, same = 1;
    for (k = 0; k < nout; k++) {
        bytes[k] = sizeof(float) * (size_t)(tc_numel(y[k]) ? tc_numel(y[k]) : 1);
        a[k] = (float *)malloc(bytes[k]);
        tc_read(y[k], TC_F32, a[k], sizeof(float) * (size_t)tc_numel(y[k]));
    }
    tc__vplan_off = 1;
    same = tc_call(f, in, y2) == TC_OK;
    tc__vplan_off = 0;
    for (k = 0; k < nout && same; k++) {
        b = (float *)malloc(bytes[k]);
        same = tc_numel(y2[k]) == tc_numel(y[k]) &&
               tc_read(y2[k], TC_F32, b, sizeof(float) * (size_t)tc_numel(y2[k])) == TC_OK &&
               memcmp(a[k], b, sizeof(float) * (size_t)tc_numel(y2[k])) == 0;
        if (!same) *bad = k;
        free(b);
    }
    for (k = 0; k < nout; k++) free(a[k]);
    return same;
}

static const char *const kind_name[K_COUNT] = {"input",  "unary", "binary", "scalar", "reduce", "view", "row",
                                               "matmul", "concat", "leafop", "conv2d", "pool", "attention", "index"};

static void print_prog(const prog *p, const vinfo *vi) {
    int i, d;
    fprintf(stderr, "  program (seed %llu%s):\n", (unsigned long long)p->seed, p->special ? ", special values" : "");
    for (i = 0; i < p->nv; i++) {
        const op *o = &p->ops[i];
        fprintf(stderr, "    v%d = %s", i, kind_name[o->kind]);
        if (o->kind == K_INPUT)
            fprintf(stderr, " %d (dtype %d, kind %d%s)", o->sub, (int)p->in[o->sub].dt, p->in[o->sub].kind,
                    p->in[o->sub].transposed ? ", transposed" : "");
        else
            fprintf(stderr, ".%d(v%d, v%d, v%d, v%d; axis %d keep %d s %g; %lld %lld %lld %lld %lld %lld %lld %lld)",
                    o->sub, o->a, o->b, o->c, o->d, o->axis, o->keep, o->s, (long long)o->ia[0], (long long)o->ia[1],
                    (long long)o->ia[2], (long long)o->ia[3], (long long)o->ia[4], (long long)o->ia[5],
                    (long long)o->ia[6], (long long)o->ia[7]);
        fprintf(stderr, " -> [");
        for (d = 0; d < vi[i].ndim; d++) fprintf(stderr, "%s%lld", d ? ", " : "", (long long)vi[i].shape[d]);
        fprintf(stderr, "] dtype %d\n", (int)vi[i].dt);
    }
    fprintf(stderr, "    outputs v%d%s", p->out[0], p->nout > 1 ? ", " : "\n");
    if (p->nout > 1) fprintf(stderr, "v%d\n", p->out[1]);
}

#define NOISE_RUNS 2

int main(int argc, char **argv) {
    long graphs = argc > 1 ? atol(argv[1]) : 200, g, failures = 0, eager_errors = 0, checked = 0,
         widened = 0, nspecial = 0, ill_elems = 0, dc_elems = 0, all_elems = 0, kinds[K_COUNT];
    long total_ops = 0, total_kernels = 0, total_fused = 0, total_unfused = 0;
    uint64_t first = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    int verbose = getenv("FUZZ_VERBOSE") != NULL;
    tc_ctx_options co;
    tc_ctx *ctx;
    memset(&co, 0, sizeof co);
    memset(kinds, 0, sizeof kinds);
    co.num_threads = 2;
    ctx = tc_ctx_create(&co);
    for (g = 0; g < graphs; g++) {
        uint64_t seed = first + (uint64_t)g;
        rng r;
        prog p;
        vinfo vi[MAXV];
        rval rin[MAXIN], ref[MAXV], moved[MAXV];
        unsigned char *skip[2];
        tc_tensor *in[MAXIN], *ye[2], *y[2];
        tc_compile_options o;
        tc_fn *f;
        int i, k, isa, ok = 1, bad_eager = 0, run;
        double tol[2] = {FUZZ_TOL, FUZZ_TOL}, spread[2] = {0, 0};
        char msg[512];
        r.s = seed * 0x9E3779B97F4A7C15ull + 7;
        generate(&r, &p, vi);
        p.seed = seed;
        nspecial += p.special;
        for (i = 0; i < p.nv; i++) kinds[p.ops[i].kind]++;
        tc_scope_begin(ctx);
        for (i = 0; i < p.nv; i++)
            if (p.ops[i].kind == K_INPUT) draw_input(&p, p.ops[i].sub, &vi[i], &r, &rin[p.ops[i].sub]);
        for (i = 0; i < p.nin; i++) in[i] = make_input(ctx, &p, i, &rin[i]);
        memset(&o, 0, sizeof o);
        o.num_inputs = p.nin;
        o.num_outputs = p.nout;
        o.mode = (tc_mode)(1 + pick(&r, 3));
        isa = 1 + pick(&r, 4);
        tc_ctx_set_isa(ctx, (tc_isa)isa);
        model(ctx, &p, in, ye);
        for (k = 0; k < p.nout; k++) bad_eager |= tc_status(ye[k]) != TC_OK;
        if (bad_eager) {
            /* an op the generator thought valid was not: the eager error is
             * the reference, the compiled call must report it too */
            int reported;
            eager_errors++;
            if (verbose) print_prog(&p, vi);
            for (k = 0; k + 1 < p.nout && tc_status(ye[k]) == TC_OK; k++) continue;
            fprintf(stderr, "note: seed %llu: eager failed (%s)\n", (unsigned long long)seed, tc_error(ye[k]));
            tc_ctx_clear_error(ctx);
            f = tc_compile(ctx, model, &p, &o);
            reported = tc_call(f, in, y) != TC_OK;
            for (k = 0; k < p.nout && !reported; k++) reported = tc_status(y[k]) != TC_OK;
            if (!reported) {
                fprintf(stderr, "FAIL seed %llu: eager failed, the compiled call did not\n"
                                "  replay: fuzz_fusion 1 %llu\n",
                        (unsigned long long)seed, (unsigned long long)seed);
                failures++;
            }
            tc_fn_free(f);
            tc_scope_end(ctx);
            tc_ctx_clear_error(ctx);
            for (i = 0; i < p.nin; i++) rv_free(&rin[i]);
            continue;
        }
        /* the reference, and how far it moves with its roundings moved */
        noise.on = 0;
        ref_run(&p, rin, ref);
        for (k = 0; k < p.nout; k++) skip[k] = (unsigned char *)calloc((size_t)(ref[p.out[k]].n ? ref[p.out[k]].n : 1), 1);
        for (k = 0; k < p.nout; k++) spread[k] = 0;
        for (run = 0; run < NOISE_RUNS; run++) {
            noise.on = 1;
            noise.r.s = seed * 7919 + (uint64_t)(run / 2);
            noise.sign = run % 2 ? -1.0 : 1.0;
            ref_run(&p, rin, moved);
            noise.on = 0;
            for (k = 0; k < p.nout; k++) {
                double s = spread_vs(&moved[p.out[k]], &ref[p.out[k]], skip[k]);
                if (s > spread[k]) spread[k] = s;
            }
            for (i = 0; i < p.nv; i++) rv_free(&moved[i]);
        }
        for (k = 0; k < p.nout; k++) {
            const rval *rv = &ref[p.out[k]];
            int64_t j;
            for (j = 0; j < rv->n; j++) {
                ill_elems += skip[k][j] && !dc_at(rv, j);
                dc_elems += dc_at(rv, j);
                skip[k][j] |= dc_at(rv, j);
                all_elems++;
            }
            /* the tolerance: at most the cap (spread_vs left out the
             * elements that move past a quarter of it) */
            tol[k] = 4 * spread[k] > FUZZ_TOL ? 4 * spread[k] : FUZZ_TOL;
            if (tol[k] > tol_cap(rv)) tol[k] = tol_cap(rv);
        }
        widened += tol[0] > FUZZ_TOL || (p.nout > 1 && tol[1] > FUZZ_TOL);
        /* eager against the reference */
        for (k = 0; k < p.nout && ok; k++) {
            double worst;
            if (!check_ref(ye[k], &ref[p.out[k]], skip[k], tol[k], &worst, msg, sizeof msg)) {
                fprintf(stderr, "FAIL seed %llu (eager, output %d, isa %s): %s (tolerance %g)\n  replay: fuzz_fusion 1 %llu\n",
                        (unsigned long long)seed, k, tc_isa_name(tc_ctx_isa(ctx)), msg, tol[k], (unsigned long long)seed);
                ok = 0;
            }
        }
        f = tc_compile(ctx, model, &p, &o);
        for (i = 0; i < 2 && ok; i++) {
            tc_result rc = tc_call(f, in, y);
            for (k = 0; k < p.nout && ok; k++) {
                double worst;
                int j, alias = -1;
                /* a result may share an input's memory only where eager's
                 * does (a view of it): writing it must not write the input */
                for (j = 0; rc == TC_OK && j < p.nin && alias < 0; j++)
                    if (shares_memory(y[k], in[j]) && !shares_memory(ye[k], in[j])) alias = j;
                if (alias >= 0) {
                    fprintf(stderr, "FAIL seed %llu (call %d, output %d, mode %d): the result shares input %d's memory, "
                                    "eager's does not\n  replay: fuzz_fusion 1 %llu\n",
                            (unsigned long long)seed, i, k, (int)o.mode, alias, (unsigned long long)seed);
                    ok = 0;
                } else if (rc != TC_OK || !check_ref(y[k], &ref[p.out[k]], skip[k], tol[k], &worst, msg, sizeof msg)) {
                    fprintf(stderr,
                            "FAIL seed %llu (compiled call %d, output %d, mode %d, isa %s): %s (tolerance %g)\n"
                            "  replay: fuzz_fusion 1 %llu\n",
                            (unsigned long long)seed, i, k, (int)o.mode, tc_isa_name(tc_ctx_isa(ctx)),
                            rc != TC_OK ? tc_fn_error(f) : msg, tol[k], (unsigned long long)seed);
                    ok = 0;
                }
            }
        }
        if (ok) {
            int bad = 0;
            if (!same_without_plan(f, in, y, p.nout, &bad)) {
                fprintf(stderr,
                        "FAIL seed %llu (output %d, mode %d, isa %s): the interpreter and the pre-decoded steps differ\n"
                        "  replay: fuzz_fusion 1 %llu\n",
                        (unsigned long long)seed, bad, (int)o.mode, tc_isa_name(tc_ctx_isa(ctx)),
                        (unsigned long long)seed);
                ok = 0;
            }
        }
        if (!ok && verbose) {
            char *buf = (char *)malloc(1 << 16);
            print_prog(&p, vi);
            tc_explain(f, NULL, buf, 1 << 16);
            fprintf(stderr, "%s\n", buf);
            free(buf);
        }
        {
            tc_explain_info info;
            tc_explain(f, &info, NULL, 0);
            total_ops += info.ops;
            total_kernels += info.kernels;
            total_fused += info.fused_kernels;
            total_unfused += info.kernels_unfused;
        }
        failures += !ok;
        checked++;
        tc_fn_free(f);
        tc_ctx_set_isa(ctx, TC_ISA_AUTO);
        tc_scope_end(ctx);
        tc_ctx_clear_error(ctx);
        for (k = 0; k < p.nout; k++) free(skip[k]);
        for (i = 0; i < p.nv; i++) rv_free(&ref[i]);
        for (i = 0; i < p.nin; i++) rv_free(&rin[i]);
    }
    printf("fuzz: %ld graphs checked against the float64 reference (compiled and eager), %ld with special values, "
           "%ld had an eager error (the compiled call must report it), %ld failed; %ld compared within a tolerance "
           "widened past %g (at most %g, %g through bf16) by the reference's own spread; of %ld output elements, "
           "%ld left out as ill-conditioned (moved past a quarter of that cap, or to another class, by the noise), "
           "%ld as overflowing in float in an order the reference does not fix\n",
           checked, nspecial, eager_errors, failures, widened, FUZZ_TOL, FUZZ_TOL_CAP, 16 * eps_of(TC_BF16), all_elems,
           ill_elems, dc_elems);
    printf("fuzz: ops drawn:");
    for (g = 1; g < K_COUNT; g++) printf(" %s %ld", kind_name[g], kinds[g]);
    printf("\nfuzz: %ld graph ops, %ld launches op by op -> %ld launches (%ld fused kernels)\n", total_ops,
           total_unfused, total_kernels, total_fused);
    printf("%ld passed, %ld failed\n", checked + eager_errors - failures, failures);
    tc_ctx_destroy(ctx);
    return failures != 0;
}
