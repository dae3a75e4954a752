/* The C half of the PyTorch oracle test; tests/oracle_torch.py drives it
 * (tests/oracle.sh builds and runs both).
 *
 *     oracle_dump DIR [NUM_THREADS]
 *
 * DIR/cases.txt lists one case a line:
 *
 *     NAME OP IN0 IN1 ... | P0 P1 ...
 *
 * Each INi is the stem of a tensor the script wrote (DIR/STEM.bin: raw
 * little-endian data; DIR/STEM.shape: "f32 NDIM D0 D1 ...") or NULL, and
 * P0... are the op's numeric parameters.  OP may end in a view suffix that
 * makes IN0 a non-contiguous view before the op sees it (the script writes
 * IN0 so that the view holds the intended values):
 *     @t  IN0 transposed in its last two dims
 *     @s  IN0[..., 1::2]: a stepped slice with a nonzero offset
 *
 * Each case runs eagerly inside its own scope.  The result goes to
 * DIR/NAME.out.bin + DIR/NAME.out.shape; when the op fails, its tc_result
 * (as a number) and message go to DIR/NAME.err instead.  All shapes, values
 * and parameters live in the script, so a new case needs no change here
 * unless it needs a new OP.
 *
 * The script judges the numbers.  This program checks only what it alone
 * can see: that ending a case's scope frees everything the case created
 * (DIR/NAME.leak otherwise).
 */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IN 16
#define MAX_PARAMS 32
#define MAX_LINE 4096

typedef struct oracle_case {
    tc_ctx *ctx;
    tc_tensor *in[MAX_IN];
    int nin;
    double p[MAX_PARAMS];
    int np;
    int bad_params; /* set when an op asks for a parameter the line lacks */
} oracle_case;

static const char *g_dir;

static void path_of(char *buf, size_t cap, const char *stem, const char *ext) {
    snprintf(buf, cap, "%s/%s%s", g_dir, stem, ext);
}

static int host_is_little_endian(void) {
    uint32_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static int parse_dtype(const char *s, tc_dtype *dt) {
    if (strcmp(s, "f32") == 0) { *dt = TC_F32; return 1; }
    if (strcmp(s, "i32") == 0) { *dt = TC_I32; return 1; }
    if (strcmp(s, "bool") == 0) { *dt = TC_BOOL; return 1; }
    if (strcmp(s, "f16") == 0) { *dt = TC_F16; return 1; }
    if (strcmp(s, "bf16") == 0) { *dt = TC_BF16; return 1; }
    return 0;
}

/* Loads DIR/STEM.{shape,bin} as a new tensor; NULL (with a message) when the
 * files are unreadable: that is a harness fault, not a library one. */
static tc_tensor *load_tensor(tc_ctx *ctx, const char *stem) {
    char path[1024], dts[16];
    int64_t shape[TC_MAX_DIMS], numel = 1;
    int ndim = 0, i;
    tc_dtype dt;
    size_t bytes;
    void *data;
    tc_tensor *t;
    FILE *f;

    path_of(path, sizeof path, stem, ".shape");
    f = fopen(path, "r");
    if (!f) { fprintf(stderr, "oracle_dump: cannot open %s\n", path); return NULL; }
    if (fscanf(f, "%15s %d", dts, &ndim) != 2 || !parse_dtype(dts, &dt) ||
        ndim < 0 || ndim > TC_MAX_DIMS) {
        fclose(f);
        fprintf(stderr, "oracle_dump: bad shape file %s\n", path);
        return NULL;
    }
    for (i = 0; i < ndim; i++) {
        long long d;
        if (fscanf(f, "%lld", &d) != 1 || d < 0) {
            fclose(f);
            fprintf(stderr, "oracle_dump: bad shape file %s\n", path);
            return NULL;
        }
        shape[i] = (int64_t)d;
        numel *= shape[i];
    }
    fclose(f);

    bytes = (size_t)numel * tc_dtype_size(dt);
    data = malloc(bytes ? bytes : 1);
    if (!data) return NULL;
    path_of(path, sizeof path, stem, ".bin");
    f = fopen(path, "rb");
    if (!f || fread(data, 1, bytes, f) != bytes) {
        if (f) fclose(f);
        free(data);
        fprintf(stderr, "oracle_dump: cannot read %s\n", path);
        return NULL;
    }
    fclose(f);
    t = tc_from_data(ctx, dt, ndim, shape, data);
    free(data);
    return t;
}

/* Writes the result as f32, or as i32 for integer and bool results. */
static int save_tensor(const tc_tensor *t, const char *name) {
    char path[1024];
    tc_dtype dt = tc_type(t) == TC_F32 || tc_type(t) == TC_F16 ||
                  tc_type(t) == TC_BF16 ? TC_F32 : TC_I32;
    int64_t numel = tc_numel(t);
    size_t bytes = (size_t)numel * 4;
    void *buf = malloc(bytes ? bytes : 1);
    FILE *f;
    int i, ok;

    if (!buf) return 0;
    if (tc_read(t, dt, buf, bytes) != TC_OK) {
        free(buf);
        return 0;
    }
    path_of(path, sizeof path, name, ".out.bin");
    f = fopen(path, "wb");
    ok = f && fwrite(buf, 1, bytes, f) == bytes;
    if (f) fclose(f);
    free(buf);
    if (!ok) return 0;

    path_of(path, sizeof path, name, ".out.shape");
    f = fopen(path, "w");
    if (!f) return 0;
    fprintf(f, "%s %d", dt == TC_F32 ? "f32" : "i32", tc_ndim(t));
    for (i = 0; i < tc_ndim(t); i++) fprintf(f, " %lld", (long long)tc_dim(t, i));
    fprintf(f, " %s\n", tc_dtype_name(tc_type(t)));
    fclose(f);
    return 1;
}

static void save_text(const char *name, const char *ext, const char *text) {
    char path[1024];
    FILE *f;
    path_of(path, sizeof path, name, ext);
    f = fopen(path, "w");
    if (f) {
        fprintf(f, "%s\n", text);
        fclose(f);
    }
}

/* Parameter accessors: a missing parameter is a harness fault. */
static double PD(oracle_case *c, int i) {
    if (i >= c->np) { c->bad_params = 1; return 0.0; }
    return c->p[i];
}
static int PI(oracle_case *c, int i) { return (int)PD(c, i); }

/* ------------------------------------------------------------------------ */
/* Ops                                                                       */
/* ------------------------------------------------------------------------ */

static tc_tensor *op_softmax(oracle_case *c) { return tc_softmax(c->ctx, c->in[0], PI(c, 0)); }
static tc_tensor *op_log_softmax(oracle_case *c) { return tc_log_softmax(c->ctx, c->in[0], PI(c, 0)); }

static tc_tensor *op_layer_norm(oracle_case *c) {
    return tc_layer_norm(c->ctx, c->in[0], PI(c, 0), c->in[1], c->in[2], PD(c, 1));
}
static tc_tensor *op_rms_norm(oracle_case *c) {
    return tc_rms_norm(c->ctx, c->in[0], PI(c, 0), c->in[1], PD(c, 1));
}
static tc_tensor *op_matmul(oracle_case *c) { return tc_matmul(c->ctx, c->in[0], c->in[1]); }

/* The pointwise ops, one wrapper each: u_NAME(x), b_NAME(a, b). */
#define ORACLE_UNARY_(name) \
    static tc_tensor *op_u_##name(oracle_case *c) { return tc_##name(c->ctx, c->in[0]); }
#define ORACLE_BINARY_(name) \
    static tc_tensor *op_b_##name(oracle_case *c) { return tc_##name(c->ctx, c->in[0], c->in[1]); }
TC__UNARY_API(ORACLE_UNARY_)
TC__BINARY_API(ORACLE_BINARY_)
#undef ORACLE_UNARY_
#undef ORACLE_BINARY_

static tc_tensor *op_where(oracle_case *c) { return tc_where(c->ctx, c->in[0], c->in[1], c->in[2]); }
static tc_tensor *op_clamp(oracle_case *c) { return tc_clamp(c->ctx, c->in[0], PD(c, 0), PD(c, 1)); }
static tc_tensor *op_softplus(oracle_case *c) {
    return tc_softplus(c->ctx, c->in[0], PD(c, 0), PD(c, 1));
}
static tc_tensor *op_add_scalar(oracle_case *c) { return tc_add_scalar(c->ctx, c->in[0], PD(c, 0)); }
/* params: the tc_dtype as a number */
static tc_tensor *op_cast(oracle_case *c) { return tc_cast(c->ctx, c->in[0], (tc_dtype)PI(c, 0)); }

/* a^T @ b with a^T a transposed view */
static tc_tensor *op_matmul_ta(oracle_case *c) {
    return tc_matmul(c->ctx, tc_transpose(c->ctx, c->in[0], -1, -2), c->in[1]);
}

/* a (expanded to params' shape, a stride-0 view) @ b */
static tc_tensor *op_matmul_ea(oracle_case *c) {
    int64_t shape[TC_MAX_DIMS];
    int n = PI(c, 0), i;
    if (n < 1 || n > TC_MAX_DIMS) { c->bad_params = 1; return c->in[0]; }
    for (i = 0; i < n; i++) shape[i] = (int64_t)PD(c, 1 + i);
    return tc_matmul(c->ctx, tc_expand(c->ctx, c->in[0], n, shape), c->in[1]);
}

/* a @ b^T with b^T a transposed view, not a copy */
static tc_tensor *op_matmul_tb(oracle_case *c) {
    return tc_matmul(c->ctx, c->in[0], tc_transpose(c->ctx, c->in[1], -1, -2));
}
static tc_tensor *op_linear(oracle_case *c) {
    return tc_linear(c->ctx, c->in[0], c->in[1], c->in[2]);
}

/* params: stride h w, padding h w, dilation h w, groups */
static tc_tensor *op_conv2d(oracle_case *c) {
    tc_conv2d_opts o;
    memset(&o, 0, sizeof o);
    o.stride[0] = PI(c, 0); o.stride[1] = PI(c, 1);
    o.padding[0] = PI(c, 2); o.padding[1] = PI(c, 3);
    o.dilation[0] = PI(c, 4); o.dilation[1] = PI(c, 5);
    o.groups = PI(c, 6);
    return tc_conv2d(c->ctx, c->in[0], c->in[1], c->in[2], &o);
}

/* params: kernel h w, stride h w, padding h w, dilation h w, ceil_mode,
 * exclude_pad */
static void pool_opts(oracle_case *c, tc_pool2d_opts *o) {
    memset(o, 0, sizeof *o);
    o->kernel[0] = PI(c, 0); o->kernel[1] = PI(c, 1);
    o->stride[0] = PI(c, 2); o->stride[1] = PI(c, 3);
    o->padding[0] = PI(c, 4); o->padding[1] = PI(c, 5);
    o->dilation[0] = PI(c, 6); o->dilation[1] = PI(c, 7);
    o->ceil_mode = PI(c, 8);
    o->exclude_pad = PI(c, 9);
}
static tc_tensor *op_max_pool2d(oracle_case *c) {
    tc_pool2d_opts o;
    pool_opts(c, &o);
    return tc_max_pool2d(c->ctx, c->in[0], &o);
}
static tc_tensor *op_avg_pool2d(oracle_case *c) {
    tc_pool2d_opts o;
    pool_opts(c, &o);
    return tc_avg_pool2d(c->ctx, c->in[0], &o);
}
static tc_tensor *op_adaptive_avg_pool2d(oracle_case *c) {
    return tc_adaptive_avg_pool2d(c->ctx, c->in[0], PI(c, 0), PI(c, 1));
}

/* inputs q k v [mask]; params: is_causal, scale */
static tc_tensor *op_sdpa(oracle_case *c) {
    return tc_scaled_dot_product_attention(c->ctx, c->in[0], c->in[1], c->in[2],
                                           c->in[3], PI(c, 0), PD(c, 1));
}

/* params: naxes, axes..., then the op's own */
static int axes_of(oracle_case *c, int *axes) {
    int n = PI(c, 0), i;
    if (n < 0 || n > TC_MAX_DIMS) { c->bad_params = 1; return 0; }
    for (i = 0; i < n; i++) axes[i] = PI(c, 1 + i);
    return n;
}
static tc_tensor *op_var(oracle_case *c) {
    int axes[TC_MAX_DIMS], n = axes_of(c, axes);
    return tc_var(c->ctx, c->in[0], n, n ? axes : NULL, PI(c, 1 + n), PI(c, 2 + n));
}
static tc_tensor *op_sum(oracle_case *c) {
    int axes[TC_MAX_DIMS], n = axes_of(c, axes);
    return tc_sum(c->ctx, c->in[0], n, n ? axes : NULL, PI(c, 1 + n));
}
static tc_tensor *op_mean(oracle_case *c) {
    int axes[TC_MAX_DIMS], n = axes_of(c, axes);
    return tc_mean(c->ctx, c->in[0], n, n ? axes : NULL, PI(c, 1 + n));
}
static tc_tensor *op_max(oracle_case *c) {
    int axes[TC_MAX_DIMS], n = axes_of(c, axes);
    return tc_max(c->ctx, c->in[0], n, n ? axes : NULL, PI(c, 1 + n));
}
static tc_tensor *op_min(oracle_case *c) {
    int axes[TC_MAX_DIMS], n = axes_of(c, axes);
    return tc_min(c->ctx, c->in[0], n, n ? axes : NULL, PI(c, 1 + n));
}
static tc_tensor *op_argmax(oracle_case *c) {
    int axes[TC_MAX_DIMS], n = axes_of(c, axes);
    return tc_argmax(c->ctx, c->in[0], n, n ? axes : NULL, PI(c, 1 + n));
}

/* params: npad, pad..., value */
static tc_tensor *op_pad(oracle_case *c) {
    int64_t pad[2 * TC_MAX_DIMS];
    int n = PI(c, 0), i;
    if (n < 0 || n > 2 * TC_MAX_DIMS) { c->bad_params = 1; return c->in[0]; }
    for (i = 0; i < n; i++) pad[i] = (int64_t)PD(c, 1 + i);
    return tc_pad(c->ctx, c->in[0], n, pad, PD(c, 1 + n));
}
static tc_tensor *op_gather(oracle_case *c) { return tc_gather(c->ctx, c->in[0], PI(c, 0), c->in[1]); }
static tc_tensor *op_embedding(oracle_case *c) { return tc_embedding(c->ctx, c->in[0], c->in[1]); }
static tc_tensor *op_index_select(oracle_case *c) {
    return tc_index_select(c->ctx, c->in[0], PI(c, 0), c->in[1]);
}

/* every input, params: dim */
static tc_tensor *op_concat(oracle_case *c) { return tc_concat(c->ctx, c->nin, c->in, PI(c, 0)); }

/* params: chunks, dim.  The pieces come back concatenated in reverse order,
 * which shows their sizes and contents in one tensor. */
static tc_tensor *op_chunk_reversed(oracle_case *c) {
    tc_tensor *piece[64], *rev[64];
    int n = tc_chunk(c->ctx, c->in[0], PI(c, 0), PI(c, 1), piece, 64), i;
    if (n < 1 || n > 64) return n < 0 ? piece[0] : c->in[0];
    for (i = 0; i < n; i++) rev[i] = piece[n - 1 - i];
    return tc_concat(c->ctx, n, rev, PI(c, 1));
}

/* inputs x mean var [weight] [bias]; params: eps */
static tc_tensor *op_batch_norm(oracle_case *c) {
    return tc_batch_norm(c->ctx, c->in[0], c->in[1], c->in[2], c->in[3], c->in[4], PD(c, 0));
}

/* A GPT-2 block, pre-LN:
 *   x = x + proj(attn(ln_1(x)));  x = x + fc2(gelu_tanh(fc(ln_2(x))))
 * inputs: x [B,T,C], ln1 w b, attn w [3C,C] b [3C], proj w [C,C] b,
 *         ln2 w b, fc w [4C,C] b, fc2 w [C,4C] b;  params: n_head */
static tc_tensor *op_gpt2_block(oracle_case *c) {
    tc_ctx *ctx = c->ctx;
    tc_tensor *x = c->in[0], *h, *y, *qkv, *part[3];
    int n_head = PI(c, 0), i;
    int64_t B = tc_dim(x, 0), T = tc_dim(x, 1), C = tc_dim(x, 2);
    int64_t heads[4], flat[3];

    if (n_head <= 0) { c->bad_params = 1; return x; }
    heads[0] = B; heads[1] = T; heads[2] = n_head; heads[3] = C / n_head;
    flat[0] = B; flat[1] = T; flat[2] = C;

    h = tc_layer_norm(ctx, x, 1, c->in[1], c->in[2], 1e-5);
    qkv = tc_linear(ctx, h, c->in[3], c->in[4]);
    if (tc_split(ctx, qkv, C, -1, part, 3) != 3) part[1] = part[2] = part[0];
    for (i = 0; i < 3; i++) /* [B,T,C] -> [B,H,T,D] */
        part[i] = tc_transpose(ctx, tc_reshape(ctx, part[i], 4, heads), 1, 2);
    y = tc_scaled_dot_product_attention(ctx, part[0], part[1], part[2], NULL, 1, 0.0);
    y = tc_reshape(ctx, tc_transpose(ctx, y, 1, 2), 3, flat);
    x = tc_add(ctx, x, tc_linear(ctx, y, c->in[5], c->in[6]));

    h = tc_layer_norm(ctx, x, 1, c->in[7], c->in[8], 1e-5);
    h = tc_gelu_tanh(ctx, tc_linear(ctx, h, c->in[9], c->in[10]));
    return tc_add(ctx, x, tc_linear(ctx, h, c->in[11], c->in[12]));
}

typedef tc_tensor *(*op_fn)(oracle_case *c);
typedef struct op_entry {
    const char *name;
    op_fn fn;
} op_entry;

static const op_entry OPS[] = {
    {"softmax", op_softmax},
    {"log_softmax", op_log_softmax},
    {"layer_norm", op_layer_norm},
    {"rms_norm", op_rms_norm},
    {"matmul", op_matmul},
    {"matmul_tb", op_matmul_tb},
    {"matmul_ta", op_matmul_ta},
    {"matmul_ea", op_matmul_ea},
#define ORACLE_ROW_(name) {#name, op_u_##name},
    TC__UNARY_API(ORACLE_ROW_)
#undef ORACLE_ROW_
#define ORACLE_ROW_(name) {#name, op_b_##name},
    TC__BINARY_API(ORACLE_ROW_)
#undef ORACLE_ROW_
    {"where", op_where},
    {"clamp", op_clamp},
    {"softplus", op_softplus},
    {"max", op_max},
    {"min", op_min},
    {"index_select", op_index_select},
    {"concat", op_concat},
    {"chunk_reversed", op_chunk_reversed},
    {"add_scalar", op_add_scalar},
    {"cast", op_cast},
    {"linear", op_linear},
    {"conv2d", op_conv2d},
    {"max_pool2d", op_max_pool2d},
    {"avg_pool2d", op_avg_pool2d},
    {"adaptive_avg_pool2d", op_adaptive_avg_pool2d},
    {"sdpa", op_sdpa},
    {"var", op_var},
    {"argmax", op_argmax},
    {"sum", op_sum},
    {"mean", op_mean},
    {"pad", op_pad},
    {"gather", op_gather},
    {"embedding", op_embedding},
    {"batch_norm", op_batch_norm},
    {"gpt2_block", op_gpt2_block},
};

static op_fn find_op(const char *name) {
    size_t i;
    for (i = 0; i < sizeof OPS / sizeof OPS[0]; i++)
        if (strcmp(OPS[i].name, name) == 0) return OPS[i].fn;
    return NULL;
}

/* Runs one line of cases.txt; returns 0 on a harness fault. */
static int run_case(tc_ctx *ctx, char *line) {
    oracle_case c;
    char *name, *opname, *tok;
    op_fn fn;
    tc_tensor *out;
    int64_t live_before;
    int in_params = 0, ok = 1;
    char *at, view = 0;

    memset(&c, 0, sizeof c);
    c.ctx = ctx;
    name = strtok(line, " \t\r\n");
    if (!name || name[0] == '#') return 1;
    opname = strtok(NULL, " \t\r\n");
    if (opname && (at = strchr(opname, '@')) != NULL) {
        *at = '\0';
        view = at[1];
    }
    fn = opname ? find_op(opname) : NULL;
    if (!fn) {
        fprintf(stderr, "oracle_dump: %s: unknown op %s\n", name, opname ? opname : "(none)");
        save_text(name, ".err", "-1 oracle_dump: unknown op");
        return 0;
    }

    live_before = tc_ctx_live_tensors(ctx);
    tc_scope_begin(ctx);
    while ((tok = strtok(NULL, " \t\r\n")) != NULL) {
        if (strcmp(tok, "|") == 0) {
            in_params = 1;
        } else if (in_params) {
            if (c.np < MAX_PARAMS) c.p[c.np++] = strtod(tok, NULL);
        } else if (c.nin < MAX_IN) {
            if (strcmp(tok, "NULL") == 0) {
                c.in[c.nin++] = NULL;
            } else {
                tc_tensor *t = load_tensor(ctx, tok);
                if (!t) ok = 0;
                c.in[c.nin++] = t;
            }
        }
    }

    if (ok && view && c.nin > 0) {
        if (view == 't')
            c.in[0] = tc_transpose(ctx, c.in[0], -1, -2);
        else if (view == 's')
            c.in[0] = tc_slice(ctx, c.in[0], -1, 1, INT64_MAX, 2);
        else
            ok = 0;
    }
    if (ok) {
        out = fn(&c);
        if (c.bad_params) {
            fprintf(stderr, "oracle_dump: %s: missing parameters\n", name);
            ok = 0;
        } else if (tc_status(out) != TC_OK) {
            char msg[1024];   /* "<tc_result as int> <message>" */
            snprintf(msg, sizeof msg, "%d %s", (int)tc_status(out), tc_error(out));
            save_text(name, ".err", msg);
        } else if (!save_tensor(out, name)) {
            fprintf(stderr, "oracle_dump: %s: cannot write the result\n", name);
            ok = 0;
        }
    }
    tc_ctx_clear_error(ctx);
    if (tc_scope_end(ctx) != TC_OK) save_text(name, ".leak", "tc_scope_end failed");
    if (tc_ctx_live_tensors(ctx) != live_before) {
        char msg[128];
        snprintf(msg, sizeof msg, "live tensors %lld before the case, %lld after its scope ended",
                 (long long)live_before, (long long)tc_ctx_live_tensors(ctx));
        save_text(name, ".leak", msg);
    }
    return ok;
}

int main(int argc, char **argv) {
    char path[1024], line[MAX_LINE];
    tc_ctx_options opts;
    tc_ctx *ctx;
    FILE *f;
    int faults = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR [NUM_THREADS]\n", argv[0]);
        return 2;
    }
    if (!host_is_little_endian()) {
        fprintf(stderr, "oracle_dump: the raw files are little-endian; this host is not\n");
        return 2;
    }
    g_dir = argv[1];
    memset(&opts, 0, sizeof opts);
    opts.num_threads = argc > 2 ? atoi(argv[2]) : 0;
    ctx = tc_ctx_create(&opts);
    if (!ctx) {
        fprintf(stderr, "oracle_dump: tc_ctx_create failed\n");
        return 2;
    }
    printf("threads %d\n", tc_ctx_num_threads(ctx));

    path_of(path, sizeof path, "cases", ".txt");
    f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "oracle_dump: cannot open %s\n", path);
        tc_ctx_destroy(ctx);
        return 2;
    }
    while (fgets(line, sizeof line, f))
        if (!run_case(ctx, line)) faults++;
    fclose(f);
    tc_ctx_destroy(ctx);
    return faults ? 1 : 0;
}
