/* The op table: one row per op.  It drives validation and shape inference
 * (the shape rule), eager execution (the run function), printing (the name)
 * and, later, tracing and fusion (the class).  Adding an op = one row here,
 * its public wrapper, and its rule/kernel if no existing one fits.
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

/* Sub-lists, expanded as R(X, ID, name) so they can feed TC__OPS's X. */
#define TC__UNARY_OPS(R, X)                                                              \
    R(X, NEG, neg) R(X, ABS, abs) R(X, EXP, exp) R(X, LOG, log) R(X, SQRT, sqrt)         \
    R(X, RSQRT, rsqrt) R(X, RECIPROCAL, reciprocal) R(X, SQUARE, square) R(X, SIN, sin)  \
    R(X, COS, cos) R(X, TANH, tanh) R(X, SIGMOID, sigmoid) R(X, RELU, relu)              \
    R(X, GELU, gelu) R(X, GELU_TANH, gelu_tanh) R(X, SILU, silu) R(X, FLOOR, floor)      \
    R(X, CEIL, ceil) R(X, ERF, erf) R(X, SOFTPLUS, softplus) R(X, CLAMP, clamp)

#define TC__BINARY_OPS(R, X)                                                             \
    R(X, ADD, add) R(X, SUB, sub) R(X, MUL, mul) R(X, DIV, div) R(X, POW, pow)           \
    R(X, MAXIMUM, maximum) R(X, MINIMUM, minimum) R(X, EQ, eq) R(X, NE, ne)              \
    R(X, LT, lt) R(X, LE, le) R(X, GT, gt) R(X, GE, ge)

#define TC__UNARY_ROW_(X, ID, name) X(ID, #name, TC__CLASS_POINTWISE, unary, unary)
#define TC__BINARY_ROW_(X, ID, name) X(ID, #name, TC__CLASS_POINTWISE, binary, binary)

#define TC__OPS(X)                                                                       \
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
    TC__UNARY_OPS(TC__UNARY_ROW_, X)                                                      \
    TC__BINARY_OPS(TC__BINARY_ROW_, X)                                                    \
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
    TC__OPS(TC__ENUM_)
#undef TC__ENUM_
    TC__OP_COUNT
} tc__op;

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
TC__OPS(TC__DECL_)
#undef TC__DECL_

typedef struct tc__opinfo {
    const char *name;
    tc__opclass cls;
    tc__shape_fn shape;
    tc__run_fn run;
} tc__opinfo;

static const tc__opinfo tc__optable[TC__OP_COUNT] = {
#define TC__ROW_(ID, name, cls, shape, run) {name, cls, tc__shape_##shape, tc__run_##run},
    TC__OPS(TC__ROW_)
#undef TC__ROW_
};
