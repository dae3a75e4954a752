/* The op table: one row per op.  It drives validation and shape inference
 * (the shape rule), eager execution (the run function), printing (the name),
 * tracing and fusion (the class).
 *
 * Adding a pointwise op: its row in the lists below (TC__UNARY_OPS, ...)
 * and its name and tc_<op> macro in api.h (TC__UNARY_API, ...), two edits;
 * the rest is generated (see the lists), and its test is a reference in
 * tests/ref_pointwise.h.  Adding any other op: its row in TC__OPS, its
 * entry point (declared in api.h, defined beside its kernel), its shape
 * rule and run function where no existing one fits, and n raised at each
 * switch marked TC__OTHER_OPS_CHECK(n) once it handles it.  The table is
 * where every op's shape rule and kernel are registered: it declares them
 * ahead (TC__DECL_ below), wherever in ops/ or cpu/ they are defined, and
 * the dispatcher reaches them only through it.
 *
 * X(ID, name, class, shape rule, run function)
 *   shape rule: tc__shape_<rule>(tc__call *) -> tc_result; validates inputs
 *               and attributes, fills the output dtype and shape (or, for a
 *               view, its strides and offset).
 *   run:        tc__run_<run>(tc__call *, tc_tensor *out) -> tc_result;
 *               computes out (already allocated, contiguous).  `view` ops
 *               make no data. */

typedef enum tc__opclass {
    TC__CLASS_CREATE,     /* no tensor inputs                                  */
    TC__CLASS_VIEW,       /* new shape/strides over the input's storage        */
    TC__CLASS_POINTWISE,  /* elementwise with broadcasting                     */
    TC__CLASS_REDUCE,     /* reduction over axes                               */
    TC__CLASS_ROW,        /* reduce-then-broadcast along rows (softmax, norms) */
    TC__CLASS_CONTRACT,   /* matmul, conv, attention                           */
    TC__CLASS_OPAQUE      /* data movement the fuser treats as a boundary      */
} tc__opclass;

/* The pointwise ops: one row each, and everything else about a pointwise op
 * is generated from its row: the enum and table entry below, its public
 * entry point (pointwise.c; the prototype from api.h's name list), the
 * eager kernels (pointwise.c), the fusion cost (fuse.c), the executor's
 * vector body (tc__vunary_ / tc__vbinary_, src/cpu/vmath_isa.c), and the
 * tests' per-op lists.
 *
 *   X(ID, name, cost, int, f32, vector)
 *     cost    work per element in the fuser's units (a copy 1, a division
 *             or square root 2, a transcendental 8): recomputing a value
 *             in several kernels is allowed up to a limit (fuse.c).
 *     int     TC__INT(expr): the op keeps i32 (expr in int32_t x, or a, b;
 *             unsigned arithmetic where it could overflow), or TC__NOINT:
 *             integer inputs compute in f32 and give f32.
 *     f32     the eager kernel's expression in float x (or a, b); p0, p1
 *             are the op's float attributes (softplus, clamp).
 *     vector  the same formula on a vector x (or a, b) of the ISA level's
 *             lanes: the vector math of src/cpu/vmath_isa.c (TC__V(exp)
 *             is its tc__vexp_), TC__SEL and TC__SPL for selects and
 *             splats, TC__VLET(v, e, body) to name a value, TC__VLIBM2
 *             for libm lane by lane.  It computes the f32 expression's
 *             formula, to the accuracy vmath_isa.c documents (the tests
 *             compare compiled with eager on every ISA level).
 *
 * To add a unary op tc_foo(ctx, x): its row here (TC__UNARY_OPS), and its
 * tc_foo macro and its name at the end of TC__UNARY_API in api.h (the
 * public header is emitted before this file and cannot see these rows).
 * Its test: r_foo and U_foo (the range) in tests/ref_pointwise.h, which
 * test_ops_pointwise.c (eager) and test_vexec.c (compiled, every ISA
 * level) run for each op of TC__UNARY_API (test_errors.c and oracle_dump.c
 * iterate it too), and its torch function in tests/oracle_torch.py's unary list.  A
 * binary op likewise (TC__BINARY_OPS or TC__COMPARE_OPS, TC__BINARY_API,
 * r_foo and B_foo).  An op with attributes (TC__UNARY_ATTR_OPS: softplus,
 * clamp) writes its own entry point and tests. */
#define TC__SIGMOID_(v) (1.0f / (1.0f + expf(-(v))))
#define TC__UNARY_OPS(X)                                                                                       \
    X(NEG, neg, 1, TC__INT((int32_t)(0u - (uint32_t)x)), -x, -x)                                              \
    X(ABS, abs, 1, TC__INT(x < 0 ? (int32_t)(0u - (uint32_t)x) : x), fabsf(x), TC__V(abs)(x))                \
    X(EXP, exp, 8, TC__NOINT, expf(x), TC__V(exp)(x))                                                          \
    X(LOG, log, 8, TC__NOINT, logf(x), TC__V(log)(x))                                                          \
    X(SQRT, sqrt, 2, TC__NOINT, sqrtf(x), TC__V(sqrt)(x))                                                      \
    X(RSQRT, rsqrt, 2, TC__NOINT, 1.0f / sqrtf(x), 1.0f / TC__V(sqrt)(x))                                      \
    X(RECIPROCAL, reciprocal, 2, TC__NOINT, 1.0f / x, 1.0f / x)                                                \
    X(SQUARE, square, 1, TC__INT((int32_t)((uint32_t)x * (uint32_t)x)), x * x, x * x)                         \
    X(SIN, sin, 8, TC__NOINT, sinf(x), TC__V(sincos)(x, 0))                                                    \
    X(COS, cos, 8, TC__NOINT, cosf(x), TC__V(sincos)(x, 1))                                                    \
    X(TANH, tanh, 8, TC__NOINT, tanhf(x), TC__V(tanh)(x))                                                      \
    X(SIGMOID, sigmoid, 8, TC__NOINT, TC__SIGMOID_(x), TC__V(sigmoid)(x))                                      \
    X(RELU, relu, 1, TC__INT(x < 0 ? 0 : x), x < 0.0f ? 0.0f : x, TC__SEL(x < 0.0f, TC__SPL(0.0f), x))        \
    X(GELU, gelu, 8, TC__NOINT, 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)),                            \
      0.5f * x * (1.0f + TC__V(erf)(x * 0.70710678118654752f)))                                                \
    X(GELU_TANH, gelu_tanh, 8, TC__NOINT,                                                                      \
      0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x))),                          \
      TC__V(ratio_value)(TC__OP_GELU_TANH, x))                                                                 \
    X(SILU, silu, 8, TC__NOINT, x * TC__SIGMOID_(x), TC__V(ratio_value)(TC__OP_SILU, x))                       \
    X(FLOOR, floor, 1, TC__INT(x), floorf(x), TC__V(floor)(x))                                                 \
    X(CEIL, ceil, 1, TC__INT(x), ceilf(x), -TC__V(floor)(-x))                                                  \
    X(ERF, erf, 8, TC__NOINT, erff(x), TC__V(erf)(x))                                                          \
    X(HARDSWISH, hardswish, 2, TC__NOINT, x * (x + 3.0f < 0.0f ? 0.0f : x + 3.0f > 6.0f ? 6.0f : x + 3.0f) / 6.0f, \
      x * TC__V(clamp)(x + 3.0f, 0.0f, 6.0f) / 6.0f)

/* Unary ops with attributes p0, p1: rows as above, entry points by hand. */
#define TC__UNARY_ATTR_OPS(X)                                                                                  \
    X(SOFTPLUS, softplus, 8, TC__NOINT, x * p0 > p1 ? x : log1pf(expf(x * p0)) / p0,                           \
      TC__VLET(xb, x * p0, TC__SEL(xb > p1, x, TC__V(log1p)(TC__V(exp)(xb)) / p0)))                            \
    X(CLAMP, clamp, 1, TC__NOINT, (x < p0 ? p0 : x) > p1 ? p1 : (x < p0 ? p0 : x),                             \
      TC__VLET(lo, TC__SEL(x < p0, TC__SPL(p0), x), TC__SEL(lo > p1, TC__SPL(p1), lo)))

/* Binary ops (broadcasting; the _scalar forms too), a and b the operands. */
#define TC__BINARY_OPS(X)                                                                                      \
    X(ADD, add, 1, TC__INT((int32_t)((uint32_t)a + (uint32_t)b)), a + b, a + b)                                \
    X(SUB, sub, 1, TC__INT((int32_t)((uint32_t)a - (uint32_t)b)), a - b, a - b)                                \
    X(MUL, mul, 1, TC__INT((int32_t)((uint32_t)a * (uint32_t)b)), a * b, a * b)                                \
    X(DIV, div, 2, TC__NOINT, a / b, a / b)                                                                    \
    X(POW, pow, 8, TC__INT(tc__ipow(a, b)), powf(a, b), TC__VLIBM2(powf, a, b))                                \
    X(MAXIMUM, maximum, 1, TC__INT(a > b ? a : b), (a > b || a != a) ? a : b, TC__SEL((a > b) | (a != a), a, b)) \
    X(MINIMUM, minimum, 1, TC__INT(a < b ? a : b), (a < b || a != a) ? a : b, TC__SEL((a < b) | (a != a), a, b))

/* Comparisons: bool results (the executor's 1.0f / 0.0f), i32 inputs
 * compared as i32 (the int column), others in f32. */
#define TC__COMPARE_OPS(X)                                                                                     \
    X(EQ, eq, 1, TC__INT(a == b), a == b, TC__SEL(a == b, TC__SPL(1.0f), TC__SPL(0.0f)))                       \
    X(NE, ne, 1, TC__INT(a != b), a != b, TC__SEL(a != b, TC__SPL(1.0f), TC__SPL(0.0f)))                       \
    X(LT, lt, 1, TC__INT(a < b), a < b, TC__SEL(a < b, TC__SPL(1.0f), TC__SPL(0.0f)))                          \
    X(LE, le, 1, TC__INT(a <= b), a <= b, TC__SEL(a <= b, TC__SPL(1.0f), TC__SPL(0.0f)))                       \
    X(GT, gt, 1, TC__INT(a > b), a > b, TC__SEL(a > b, TC__SPL(1.0f), TC__SPL(0.0f)))                          \
    X(GE, ge, 1, TC__INT(a >= b), a >= b, TC__SEL(a >= b, TC__SPL(1.0f), TC__SPL(0.0f)))

#define TC__POINTWISE_OPS(X) TC__UNARY_OPS(X) TC__UNARY_ATTR_OPS(X) TC__BINARY_OPS(X) TC__COMPARE_OPS(X)

/* The int column: TC__HAS_INT(int) is 1 or 0, TC__INT_EXPR(int) the
 * expression (0 without one). */
#define TC__HAS_INT(i) TC__CAT(TC__HAS_INT_, i)
#define TC__HAS_INT_TC__NOINT 0
#define TC__HAS_INT_TC__INT(e) 1
#define TC__INT_EXPR(i) TC__CAT(TC__INT_EXPR_, i)
#define TC__INT_EXPR_TC__NOINT 0
#define TC__INT_EXPR_TC__INT(e) e

/* The whole table in enum order: X(ID, "name", class, shape rule, run)
 * for the other ops, U(row) for the unary rows above, B(row) for the
 * binary ones (class pointwise, shape rule and run unary / binary). */
#define TC__OPS(X, U, B)                                                                     \
    X(EMPTY, "empty", TC__CLASS_CREATE, create, none)                                    \
    X(FULL, "full", TC__CLASS_CREATE, create, full)                                      \
    X(ARANGE, "arange", TC__CLASS_CREATE, arange, arange)                                \
    X(RAND_UNIFORM, "rand_uniform", TC__CLASS_CREATE, create, rand)                      \
    X(RAND_NORMAL, "rand_normal", TC__CLASS_CREATE, create, rand)                        \
    X(FROM_DATA, "from_data", TC__CLASS_CREATE, create, from_data)                       \
    X(WRAP, "wrap", TC__CLASS_CREATE, wrap, view)                                        \
    X(RESHAPE, "reshape", TC__CLASS_VIEW, reshape, view)                                 \
    X(PERMUTE, "permute", TC__CLASS_VIEW, permute, view)                                 \
    X(SLICE, "slice", TC__CLASS_VIEW, slice, view)                                       \
    X(SELECT, "select", TC__CLASS_VIEW, select, view)                                    \
    X(EXPAND, "expand", TC__CLASS_VIEW, expand, view)                                    \
    X(SQUEEZE, "squeeze", TC__CLASS_VIEW, squeeze, view)                                 \
    X(UNSQUEEZE, "unsqueeze", TC__CLASS_VIEW, unsqueeze, view)                           \
    X(CLONE, "clone", TC__CLASS_POINTWISE, same, copy)                                   \
    X(COPY, "copy", TC__CLASS_OPAQUE, copy_into, copy_into)                                   \
    X(CAST, "cast", TC__CLASS_POINTWISE, cast, copy)                                     \
    TC__UNARY_OPS(U) TC__UNARY_ATTR_OPS(U) TC__BINARY_OPS(B) TC__COMPARE_OPS(B)           \
    X(WHERE, "where", TC__CLASS_POINTWISE, where, where)                                 \
    X(SUM, "sum", TC__CLASS_REDUCE, reduce, reduce)                                      \
    X(MEAN, "mean", TC__CLASS_REDUCE, reduce, reduce)                                    \
    X(MAX, "max", TC__CLASS_REDUCE, reduce, reduce)                                      \
    X(MIN, "min", TC__CLASS_REDUCE, reduce, reduce)                                      \
    X(ARGMAX, "argmax", TC__CLASS_REDUCE, reduce, reduce)                                \
    X(VAR, "var", TC__CLASS_REDUCE, reduce, reduce)                                      \
    X(SOFTMAX, "softmax", TC__CLASS_ROW, softmax, softmax)                               \
    X(LOG_SOFTMAX, "log_softmax", TC__CLASS_ROW, softmax, softmax)                       \
    X(LAYER_NORM, "layer_norm", TC__CLASS_ROW, norm, norm)                               \
    X(RMS_NORM, "rms_norm", TC__CLASS_ROW, norm, norm)                                   \
    X(MATMUL, "matmul", TC__CLASS_CONTRACT, matmul, matmul)                              \
    X(LINEAR, "linear", TC__CLASS_CONTRACT, linear, linear)                              \
    X(SDPA, "scaled_dot_product_attention", TC__CLASS_CONTRACT, sdpa, sdpa)              \
    X(CONV2D, "conv2d", TC__CLASS_CONTRACT, conv2d, conv2d)                              \
    X(MAX_POOL2D, "max_pool2d", TC__CLASS_OPAQUE, pool2d, pool2d)                        \
    X(AVG_POOL2D, "avg_pool2d", TC__CLASS_OPAQUE, pool2d, pool2d)                        \
    X(ADAPTIVE_AVG_POOL2D, "adaptive_avg_pool2d", TC__CLASS_OPAQUE, adaptive, adaptive)  \
    X(BATCH_NORM, "batch_norm", TC__CLASS_POINTWISE, batch_norm, batch_norm)             \
    X(CONCAT, "concat", TC__CLASS_OPAQUE, concat, concat)                                \
    X(PAD, "pad", TC__CLASS_OPAQUE, pad, pad)                                            \
    X(EMBEDDING, "embedding", TC__CLASS_OPAQUE, embedding, embedding)                    \
    X(INDEX_SELECT, "index_select", TC__CLASS_OPAQUE, index_select, index_select)        \
    X(GATHER, "gather", TC__CLASS_OPAQUE, gather, gather)

typedef enum tc__op {
#define TC__ENUM_(ID, name, cls, shape, run) TC__OP_##ID,
#define TC__ENUM_PW_(ID, name, cost, i, f, v) TC__OP_##ID,
    TC__OPS(TC__ENUM_, TC__ENUM_PW_, TC__ENUM_PW_)
#undef TC__ENUM_
#undef TC__ENUM_PW_
    TC__OP_COUNT
} tc__op;

/* A switch over ops written by hand (not generated from the rows) starts
 * with TC__OTHER_OPS_CHECK(n), n the count of ops other than pointwise rows
 * it was written for: a new such op fails the build at each of them until
 * that switch has been looked at and its n raised.  A new pointwise row
 * fails none. */
#define TC__COUNT_PW_(ID, name, cost, i, f, v) +1
enum { TC__POINTWISE_COUNT = 0 TC__POINTWISE_OPS(TC__COUNT_PW_) };
#undef TC__COUNT_PW_
#define TC__OTHER_OPS_CHECK(n) (void)sizeof(char[TC__OP_COUNT - TC__POINTWISE_COUNT == (n) ? 1 : -1])

/* Attributes: every op's non-tensor arguments, in one flat record so the
 * tracer can hash and compare them. */
#define TC__MAX_IN 6
#define TC__MAX_IATTR 32
typedef struct tc__attrs {
    int64_t i[TC__MAX_IATTR];
    double f[4];
    tc_dtype dt;
    void *ptr;                 /* user memory: from_data / wrap            */
} tc__attrs;

struct tc__call {
    tc_ctx *ctx;
    tc__op op;
    const char *name;          /* the public op's name when it differs from
                                  the table's (tc_zeros runs FULL, ...)     */
    const char *file;
    int line;
    int nin;
    tc_tensor *in[TC__MAX_IN];
    tc_tensor *const *ins;     /* = in, or the caller's array (concat)      */
    unsigned optional;         /* bit k: input k may be NULL                */
    tc__attrs a;
    /* filled by the shape rule */
    tc_dtype odt;
    int ondim;
    int64_t oshape[TC_MAX_DIMS];
    int is_view;               /* output = view of ins[0] (or user memory)  */
    int64_t ostrides[TC_MAX_DIMS];
    int64_t ooffset;
    tc_tensor *out_into;       /* write into this tensor (tc_copy)          */
    tc_device device;          /* where tc__alloc_out puts the output        */
    const struct tc__epilogue *epi; /* contractions: run on each finished
                                  output tile (a fused pointwise kernel)    */
    struct {
        int kc, mc_tiles;      /* GEMM blocking (max-autotune); 0: the
                                  fixed heuristic                          */
        int isa;               /* GEMM microkernels' level (max-autotune);
                                  0: the context's                         */
    } blk;
    struct tc__gemm_prepack *prepack; /* freeze: B (a constant weight) packed
                                  once, kept by the program                 */
    char msg[TC__MSG_CAP];     /* the rule's error text                     */
};

/* The epilogue interface of the contraction templates: fn runs on rows
 * [row, row + m) x columns [col, col + n) of the f32 output seen as
 * [rows, ldc], once those elements are final, while they are in cache. */
typedef struct tc__epilogue {
    void (*fn)(void *arg, int64_t row, int64_t m, int64_t col, int64_t n, int64_t ldc);
    void *arg;
} tc__epilogue;

typedef tc_result (*tc__shape_fn)(tc__call *c);
typedef tc_result (*tc__run_fn)(tc__call *c, tc_tensor *out);

/* Forward declarations of every rule and kernel the table names. */
#define TC__DECL_(ID, name, cls, shape, run)                 \
    static tc_result tc__shape_##shape(tc__call *c);         \
    static tc_result tc__run_##run(tc__call *c, tc_tensor *out);
#define TC__DECL_PW_(ID, name, cost, i, f, v)
TC__OPS(TC__DECL_, TC__DECL_PW_, TC__DECL_PW_)
TC__DECL_(pointwise, "", 0, unary, unary)
TC__DECL_(pointwise, "", 0, binary, binary)
#undef TC__DECL_
#undef TC__DECL_PW_

typedef struct tc__opinfo {
    const char *name;
    tc__opclass cls;
    tc__shape_fn shape;
    tc__run_fn run;
} tc__opinfo;

static const tc__opinfo tc__optable[TC__OP_COUNT] = {
#define TC__ROW_(ID, name, cls, shape, run) {name, cls, tc__shape_##shape, tc__run_##run},
#define TC__ROW_U_(ID, name, cost, i, f, v) TC__ROW_(ID, #name, TC__CLASS_POINTWISE, unary, unary)
#define TC__ROW_B_(ID, name, cost, i, f, v) TC__ROW_(ID, #name, TC__CLASS_POINTWISE, binary, binary)
    TC__OPS(TC__ROW_, TC__ROW_U_, TC__ROW_B_)
#undef TC__ROW_
#undef TC__ROW_U_
#undef TC__ROW_B_
};
