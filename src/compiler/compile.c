/* The compiler core: tc_compile / tc_call.  A call traces the user's
 * function (every op goes through tc__run, which records a graph node instead
 * of computing while ctx->trace is set), runs the passes, checks guards on
 * later calls and replays the cached graph without calling the function.
 *
 * Graph breaks (host reads of traced data): the pending segment is executed,
 * the live traced tensors become concrete, and tracing continues in a new
 * segment.  A signature whose trace had breaks is not replayed yet: its later
 * calls run the function eagerly (segment caching is the next step). */

typedef struct tc__break {
    char reason[160];
    const char *file;
    int line;
} tc__break;

/* What a cached graph was traced for: one record per input. */
typedef struct tc__in_guard {
    tc_dtype dt;
    int ndim;
    int64_t shape[TC_MAX_DIMS], strides[TC_MAX_DIMS];
} tc__in_guard;

typedef struct tc__segcache tc__segcache;
typedef struct tc__entry {
    tc__in_guard *ins;
    tc__segcache *segs;        /* a trace with breaks: its segments       */
    tc__graph *g;              /* NULL when the trace had breaks (eager)  */
    tc__program *prog;         /* built on first use                      */
    int nparams;
    tc__graph *raw;            /* the trace before passes (dynamic template) */
    int dyn_in, dyn_dim;       /* automatic dynamic: the symbolic dim, -1 none */
    int64_t cur;               /* the size g and prog are for              */
    tc__sym *sym;              /* slots affine in the dynamic size         */
    int nsym, verified;        /* verified: a trace at a third size agreed */
    int64_t fit_a, fit_b;      /* the two sizes the fit was made from      */
} tc__entry;

struct tc_fn {
    tc_ctx *ctx;
    tc_model_fn fn;
    void *user;
    tc_mode mode;
    int fullgraph, nin, nout, limit, decompose, dynamic, fuse, freeze;
    const char *file;          /* where tc_compile was called            */
    int line;
    tc__entry *entries;
    int nentries;
    int recompiles, calls, cached_calls, eager_calls, recorded_calls, dyn_traces, dyn_instances;
    uint64_t dyn_failed;       /* bit 8*input+dim: a fit failed, stay static */
    uint64_t dyn_marked;       /* bit 8*input+dim: tc_mark_dynamic          */
    tc__break *breaks;
    int nbreaks;
    int busy;                  /* set while a call runs (atomic)          */
    unsigned logs;             /* TC_LOGS flags                           */
    char tune_dir[512];        /* max-autotune's cache; "" none            */
    tc__tune_mem tune;         /* max-autotune's choices and counts        */
    char err[TC__MSG_CAP];
};

/* The compiled segments of a signature whose trace has graph breaks: later
 * calls record the function again (cheap) and each recorded segment that
 * equals a cached one runs that segment's program. */
typedef struct tc__segment {
    tc__graph *raw;            /* as recorded: the lookup key            */
    tc__graph *g;              /* after the passes                       */
    tc__program *prog;
} tc__segment;

#define TC__MAX_SEGMENTS 64 /* distinct segments cached per signature */

struct tc__segcache {
    tc__segment *s;
    int n, hits, misses;
};

struct tc__trace {
    tc_fn *f;
    tc__graph *g;              /* the segment being recorded              */
    tc_tensor *const *inputs;  /* the call's concrete inputs              */
    tc_tensor **allin;         /* inputs, then values made concrete by breaks */
    int nall, capall;
    unsigned gen;              /* this trace's stamp for segment values   */
    tc__segcache *cache;       /* where segments are looked up            */
    int breaks;                /* in this trace                           */
    int failed;                /* a break under fullgraph, or OOM         */
    tc_result status;
};

TC__FN void tc__segcache_free(tc__segcache *c) {
    int i;
    if (!c) return;
    for (i = 0; i < c->n; i++) {
        tc__program_free(c->s[i].prog);
        tc__graph_free(c->s[i].g);
        tc__graph_free(c->s[i].raw);
    }
    TC_FREE(c->s);
    TC_FREE(c);
}

enum {
    TC__LOG_BREAKS = 1, TC__LOG_RECOMPILES = 2, TC__LOG_GUARDS = 4, TC__LOG_GRAPH = 8, TC__LOG_FUSION = 16,
    TC__LOG_CODE = 32
};

/* TC_LOGS=graph_breaks,recompiles,guards,fusion,output_code (debugging). */
TC__FN unsigned tc__logs_from_env(void) {
    static const char *const names[] = {"graph_breaks", "recompiles", "guards", "output_code", "graph", "fusion",
                                        "schedule"};
    static const unsigned bits[] = {TC__LOG_BREAKS, TC__LOG_RECOMPILES, TC__LOG_GUARDS, TC__LOG_GRAPH | TC__LOG_CODE,
                                    TC__LOG_GRAPH, TC__LOG_FUSION, TC__LOG_FUSION};
    const char *e = getenv("TC_LOGS");
    unsigned f = 0;
    while (e && *e) {
        size_t n = strcspn(e, ","), k;
        for (k = 0; k < sizeof names / sizeof names[0]; k++)
            if (strlen(names[k]) == n && strncmp(e, names[k], n) == 0) f |= bits[k];
        e += n + (e[n] == ',');
    }
    return f;
}

/* The fuser's log bits: 1 decisions, 2 the kernels' code. */
TC__FN int tc__fuse_logs(const tc_fn *f) {
    return ((f->logs & TC__LOG_FUSION) ? 1 : 0) | ((f->logs & TC__LOG_CODE) ? 2 : 0);
}

/* ---- tracing: recording ops ------------------------------------------------- */

TC__FN int tc__trace_leaf(tc__trace *tr, tc_tensor *t) {
    tc__node nd;
    int fresh;
    memset(&nd, 0, sizeof nd);
    nd.kind = TC__NODE_PARAM;
    nd.param = t;
    nd.dt = t->dtype;
    nd.ndim = t->ndim;
    memcpy(nd.shape, t->shape, sizeof nd.shape);
    nd.in = nd.in_small;
    return tc__graph_add(tr->g, &nd, &fresh);
}

/* The node id for input tensor t of an op being recorded (-1: absent). */
TC__FN int tc__trace_input(tc__trace *tr, tc_tensor *t) {
    int id;
    if (!t) return -1;
    if (!t->lazy && t->seg > 0 && t->seg_gen == tr->gen) {
        /* made concrete by an earlier break: an input of this segment */
        tc__node nd;
        int fresh;
        memset(&nd, 0, sizeof nd);
        nd.kind = TC__NODE_INPUT;
        nd.a.i[0] = tr->f->nin + t->seg - 1;
        nd.dt = t->dtype;
        nd.ndim = t->ndim;
        memcpy(nd.shape, t->shape, sizeof nd.shape);
        nd.in = nd.in_small;
        return tc__graph_add(tr->g, &nd, &fresh);
    }
    if (!t->lazy) return tc__trace_leaf(tr, t);
    id = t->lazy - 1;
    if (t->is_wrapped && !tr->g->nodes[id].wrapped) {
        /* the same constant, marked as a scalar argument for promotion */
        tc__node nd = tr->g->nodes[id];
        int fresh;
        nd.in = nd.in_small;
        nd.wrapped = 1;
        id = tc__graph_add(tr->g, &nd, &fresh);
    }
    return id;
}

/* tc__run's twin while tracing: validate exactly as eager does, then record. */
TC__FN tc_tensor *tc__trace_op(tc__call *c) {
    tc__trace *tr = c->ctx->trace;
    const tc__opinfo *info = &tc__optable[c->op];
    int ids_small[TC__MAX_IN], *ids = ids_small, i, id, fresh;
    tc__node nd;
    tc_tensor *out;
    tc_result r;
    if (tr->failed) {
        /* a break failed (OOM, or fullgraph): the graph no longer matches
         * the traced tensors, so nothing more is recorded */
        tc__msg(c, tr->status, "not recorded: the trace already failed (%s)", tc_result_string(tr->status));
        return tc__fail(c, tr->status);
    }
    if ((out = tc__check_inputs(c)) != NULL) return out;
    r = info->shape(c);
    if (r != TC_OK) return tc__fail(c, r);
    if (c->out_into) {
        tc__msg(c, TC_ERR_UNSUPPORTED, "writing into a tensor (tc_copy) inside a compiled function is not supported");
        return tc__fail(c, TC_ERR_UNSUPPORTED);
    }
    if (c->nin > TC__MAX_IN && !(ids = (int *)tc__malloc(sizeof(int) * (size_t)c->nin))) {
        tc__msg(c, TC_ERR_OOM, "out of memory while tracing");
        return tc__fail(c, TC_ERR_OOM);
    }
    r = TC_OK;
    for (i = 0; i < c->nin; i++) {
        ids[i] = tc__trace_input(tr, c->ins[i]);
        if (c->ins[i] && ids[i] < 0) r = TC_ERR_OOM;
    }
    memset(&nd, 0, sizeof nd);
    nd.kind = TC__NODE_OP;
    nd.op = c->op;
    nd.nin = c->nin;
    nd.in = ids;
    nd.a = c->a;
    nd.dt = c->odt;
    nd.ndim = c->ondim;
    memcpy(nd.shape, c->oshape, sizeof nd.shape);
    nd.file = c->file;
    nd.line = c->line;
    if (c->op == TC__OP_FROM_DATA) {
        /* the data is read now, as in eager mode: the graph keeps a copy */
        size_t bytes = (size_t)tc__numel_of(c->ondim, c->oshape) * tc__dtype_sizes[c->odt];
        void *copy = tc__malloc(bytes);
        if (!copy || tc__graph_own(tr->g, copy)) {
            TC_FREE(copy);
            r = TC_ERR_OOM;
        } else {
            memcpy(copy, c->a.ptr, bytes);
            nd.a.ptr = copy;
        }
    }
    id = r == TC_OK ? tc__graph_add(tr->g, &nd, &fresh) : -1;
    if (ids != ids_small) TC_FREE(ids);
    if (id < 0 || !(out = tc__tensor_new(c->ctx))) {
        tc__msg(c, TC_ERR_OOM, "out of memory while tracing");
        return tc__fail(c, TC_ERR_OOM);
    }
    out->dtype = c->odt;
    out->ndim = c->ondim;
    memcpy(out->shape, c->oshape, sizeof out->shape);
    if (c->is_view) {
        memcpy(out->strides, c->ostrides, sizeof out->strides);
        out->offset = c->ooffset;
    } else {
        tc__contig_strides(out->ndim, out->shape, out->strides);
    }
    out->lazy = id + 1;
    return out;
}

/* ---- graph breaks -------------------------------------------------------------- */

TC__FN void tc__fn_note_break(tc_fn *f, const char *what, const char *file, int line) {
    tc__break *b;
    int i;
    /* one record per break site (recording calls pass the same sites again) */
    for (i = 0; i < f->nbreaks; i++)
        if (f->breaks[i].line == line && f->breaks[i].file == file && strncmp(f->breaks[i].reason, what, sizeof f->breaks[i].reason - 1) == 0)
            return;
    b = (tc__break *)TC_REALLOC(f->breaks, sizeof(tc__break) * (size_t)(f->nbreaks + 1));
    if (!b) return;
    f->breaks = b;
    b += f->nbreaks++;
    tc__fmt(b->reason, sizeof b->reason, "%s", what);
    b->file = file;
    b->line = line;
    if (f->logs & TC__LOG_BREAKS)
        tc__log(f->ctx, TC_LOG_WARN, "graph break: %s at %s:%d", what, file ? file : "?", line);
}

static tc_result tc__run_passes(tc_fn *f, tc__graph **g);

/* Runs segment graph *gp (its outputs set) through the segment cache: an
 * equal cached segment runs its program; otherwise the segment is passed,
 * planned and cached (*gp moves into the cache).  outs[] gets fresh tensors. */
TC__FN tc_result tc__segment_run(tc__trace *tr, tc__graph **gp, tc_tensor **outs) {
    tc_fn *f = tr->f;
    tc__segcache *c = tr->cache;
    tc__segment *seg = NULL, *ns;
    tc__graph *g = *gp;
    int i;
    if (tc__pass_dce(g) < 0) return TC_ERR_OOM;
    for (i = 0; i < c->n && !seg; i++)
        if (tc__graph_equal(c->s[i].raw, g)) seg = &c->s[i];
    if (seg) {
        c->hits++;
        tc__graph_free(g);
        *gp = NULL;
    } else if (c->n >= TC__MAX_SEGMENTS) {
        /* paths beyond the cap run from a program built for this call only */
        tc__program *p;
        tc_result r;
        c->misses++;
        *gp = NULL;
        if (tc__run_passes(f, &g) != TC_OK) return TC_ERR_OOM;
        p = tc__program_build(f->ctx, g, tr->allin, 0, f->fuse, tc__fuse_logs(f), f->err, sizeof f->err);
        r = p ? tc__program_run(p, f->ctx, tr->allin, outs, f->err, sizeof f->err) : TC_ERR_OOM;
        tc__program_free(p);
        tc__graph_free(g);
        return r;
    } else {
        tc__segment add;
        memset(&add, 0, sizeof add);
        c->misses++;
        if (!(add.raw = tc__graph_copy(g))) return TC_ERR_OOM;
        *gp = NULL;
        add.g = g;
        if (tc__run_passes(f, &add.g) != TC_OK ||
            !(add.prog = tc__program_build(f->ctx, add.g, tr->allin, 0, f->fuse, tc__fuse_logs(f), f->err, sizeof f->err)) ||
            !(ns = (tc__segment *)TC_REALLOC(c->s, sizeof(tc__segment) * (size_t)(c->n + 1)))) {
            tc__program_free(add.prog);
            tc__graph_free(add.g);
            tc__graph_free(add.raw);
            return f->err[0] ? TC_ERR_UNSUPPORTED : TC_ERR_OOM;
        }
        c->s = ns;
        c->s[c->n] = add;
        seg = &c->s[c->n++];
    }
    return tc__program_run(seg->prog, f->ctx, tr->allin, outs, f->err, sizeof f->err);
}

TC__FN int tc__trace_keep_value(tc__trace *tr, tc_tensor *t) {
    if (tr->nall == tr->capall) {
        int cap = tr->capall * 2 + 8;
        tc_tensor **a = (tc_tensor **)TC_REALLOC(tr->allin, sizeof(tc_tensor *) * (size_t)cap);
        if (!a) return -1;
        tr->allin = a;
        tr->capall = cap;
    }
    tr->allin[tr->nall++] = t;
    t->seg = tr->nall - tr->f->nin;
    t->seg_gen = tr->gen;
    return 0;
}

/* Runs the pending segment for the traced tensors still alive and makes
 * them concrete; tracing then continues in a fresh segment.  A traced view
 * stays a view: the segment outputs the node owning its memory (its root)
 * and the view keeps the layout it was traced with, so writes through the
 * base (tc_data after the break) show through the view as in eager mode. */
TC__FN tc_result tc__trace_flush(tc__trace *tr) {
    tc_ctx *ctx = tr->f->ctx;
    tc__graph *g = tr->g;
    tc_tensor **outs = NULL, *t;
    int *ids = NULL, *root = NULL, nid = 0, d, k, i;
    tc_result r = TC_OK;
    if (g->n > 0) {
        ids = (int *)tc__malloc(sizeof(int) * (size_t)g->n);
        root = (int *)tc__malloc(sizeof(int) * (size_t)g->n);
        outs = (tc_tensor **)tc__malloc(sizeof(tc_tensor *) * (size_t)g->n);
        if (!ids || !root || !outs) r = TC_ERR_OOM;
        for (i = 0; r == TC_OK && i < g->n; i++) {
            const tc__node *nd = &g->nodes[i];
            int view = nd->kind == TC__NODE_OP && tc__optable[nd->op].cls == TC__CLASS_VIEW && nd->nin > 0;
            root[i] = view && nd->in[0] >= 0 ? root[nd->in[0]] : i;
        }
        /* the segment's outputs: the roots of the live traced tensors (an
         * input or parameter root needs no output: its memory exists) */
        for (d = 0; r == TC_OK && d <= ctx->depth; d++)
            for (t = ctx->scope_head[d]; t; t = t->next) {
                const tc__node *rn;
                const tc_tensor *base;
                if (!t->lazy) continue;
                rn = &g->nodes[root[t->lazy - 1]];
                base = rn->kind == TC__NODE_INPUT ? tr->allin[rn->a.i[0]] : rn->kind == TC__NODE_PARAM ? rn->param : NULL;
                if (base) {
                    t->lazy = 0;
                    t->st = base->st;
                    base->st->refs++;
                    if (tc__trace_keep_value(tr, t)) r = TC_ERR_OOM;
                    continue;
                }
                /* a view of user memory (tc_wrap) is output itself, copied */
                k = rn->op == TC__OP_WRAP ? t->lazy - 1 : root[t->lazy - 1];
                for (i = 0; i < nid && ids[i] != k; i++) continue;
                if (i == nid) ids[nid++] = k;
            }
        if (r == TC_OK && nid > 0) {
            g->outputs = (int *)tc__malloc(sizeof(int) * (size_t)nid);
            if (!g->outputs) r = TC_ERR_OOM;
            else {
                memcpy(g->outputs, ids, sizeof(int) * (size_t)nid);
                g->nout = nid;
                r = tc__segment_run(tr, &tr->g, outs);
            }
        }
        if (r == TC_OK && nid > 0) {
            for (d = 0; d <= ctx->depth; d++)
                for (t = ctx->scope_head[d]; t; t = t->next) {
                    tc_tensor *v;
                    int own;
                    if (!t->lazy) continue;
                    for (k = 0; ids[k] != root[t->lazy - 1] && ids[k] != t->lazy - 1; k++) continue;
                    own = ids[k] == t->lazy - 1; /* the tensor's own node (a root, or a wrap view) */
                    v = outs[k];
                    t->lazy = 0;
                    t->st = v->st;
                    v->st->refs++;
                    if (own) {
                        memcpy(t->strides, v->strides, sizeof t->strides);
                        t->offset = v->offset;
                    } /* else a view: its traced layout over the fresh contiguous root */
                    if (tc__trace_keep_value(tr, t)) r = TC_ERR_OOM;
                }
            for (k = 0; k < nid; k++) tc_free(outs[k]);
        }
    }
    TC_FREE(ids);
    TC_FREE(root);
    TC_FREE(outs);
    if (r != TC_OK) {
        tr->failed = 1;
        tr->status = r;
    }
    /* a new segment: the old one's values now live in concrete tensors */
    tc__graph_free(tr->g);
    tr->g = tc__graph_new();
    if (!tr->g) {
        tr->failed = 1;
        tr->status = TC_ERR_OOM;
        return TC_ERR_OOM;
    }
    return r;
}

/* Called by every host read of tensor data.  Outside tracing it does
 * nothing.  While tracing, a read is a graph break: under fullgraph it is an
 * error (returns nonzero, the function's error names the read's call site);
 * otherwise the pending segment runs and the data becomes readable. */
TC__FN int tc__host_access(const tc_tensor *t, const char *what, const char *file, int line) {
    tc__trace *tr = t && t->ctx ? t->ctx->trace : NULL;
    tc_fn *f;
    char reason[160];
    if (!tr) return 0;
    if (tr->failed) return -1;
    f = tr->f;
    if (strcmp(what, "tc_graph_break") == 0) tc__fmt(reason, sizeof reason, "explicit tc_graph_break");
    else if (strcmp(what, "tc_host_call") == 0) tc__fmt(reason, sizeof reason, "tc_host_call runs host code");
    else tc__fmt(reason, sizeof reason, "%s %s tensor data", what, strcmp(what, "tc_write") && strcmp(what, "tc_set") ? "reads" : "writes");
    tr->breaks++;
    tc__fn_note_break(f, reason, file, line);
    if (f->fullgraph) {
        if (!tr->failed)
            tc__fmt(f->err, sizeof f->err, "fullgraph: graph break in compiled function (%s:%d): %s (%s:%d)",
                     f->file ? f->file : "?", f->line, reason, file ? file : "?", line);
        tr->failed = 1;
        tr->status = TC_ERR_STATE;
        return -1;
    }
    return tc__trace_flush(tr) == TC_OK ? 0 : -1;
}

TCDEF tc_tensor *tc_host_call_at(tc_ctx *ctx, tc_host_fn fn, void *user, tc_tensor *x, const char *file, int line) {
    char text[TC__MSG_CAP];
    tc__trace *tr;
    tc_tensor *y;
    if (!ctx) return &tc__sentinel_null_ctx;
    if (!fn || !x || x->ctx != ctx) {
        tc__fmt(text, sizeof text, "tc_host_call (%s:%d): %s", file ? file : "?", line,
                !fn ? "fn is NULL" : !x ? "input is NULL" : "input belongs to another context");
        return tc__error_tensor(ctx, TC_ERR_NULL, text);
    }
    if (x->status != TC_OK) return tc__error_tensor(ctx, x->status, tc_error(x));
    tr = ctx->trace;
    if (tr && tc__host_access(x, "tc_host_call", file, line)) {
        tc__fmt(text, sizeof text, "tc_host_call (%s:%d): a graph break under fullgraph", file ? file : "?", line);
        return tc__error_tensor(ctx, TC_ERR_STATE, text);
    }
    ctx->trace = NULL; /* the host function computes for real */
    y = fn(ctx, user, x);
    ctx->trace = tr;
    if (!y) {
        tc__fmt(text, sizeof text, "tc_host_call (%s:%d): the host function returned NULL", file ? file : "?", line);
        return tc__error_tensor(ctx, TC_ERR_NULL, text);
    }
    /* its result feeds the next segment as an input, not as a parameter */
    if (tr && y->status == TC_OK && !y->is_sentinel && tc__trace_keep_value(tr, y)) {
        tr->failed = 1;
        tr->status = TC_ERR_OOM;
    }
    return y;
}

TCDEF void tc_graph_break_at(tc_ctx *ctx, const char *file, int line) {
    tc_tensor probe;
    if (!ctx || !ctx->trace) return;
    memset(&probe, 0, sizeof probe);
    probe.ctx = ctx;
    (void)tc__host_access(&probe, "tc_graph_break", file, line);
}

/* ---- the pass pipeline ------------------------------------------------------- */

/* [decompose ->] simplify -> fold -> DCE (CSE happened while recording). */
TC__FN tc_result tc__run_passes(tc_fn *f, tc__graph **g) {
    int changed = 0;
    /* hand-written attention into the fused kernel, before decomposition
     * takes its softmax apart */
    *g = tc__pass_attention(*g, &changed);
    if (!*g) return TC_ERR_OOM;
    /* frozen parameters: batch norm into its conv, before decomposition
     * takes the norm apart */
    if (f->freeze && !(*g = tc__pass_fold_bn(f->ctx, *g, &changed))) return TC_ERR_OOM;
    /* rounds: a decomposition may emit composites (sdpa emits softmax) */
    if (f->decompose && (f->decompose > 1 || f->ctx->isa != TC_ISA_NONE)) {
        int round;
        for (round = 0, changed = 1; *g && changed && round < 4; round++)
            *g = tc__pass_decompose(*g, f->decompose, &changed);
    }
    if (*g) *g = tc__pass_simplify(*g, &changed);
    if (*g) *g = tc__pass_fold(f->ctx, *g, 4096, &changed);
    if (*g) *g = tc__pass_legalize(*g, &changed);
    if (*g) *g = tc__pass_hoist(*g, &changed);
    if (*g && tc__pass_dce(*g) < 0) {
        tc__graph_free(*g);
        *g = NULL;
    }
    return *g ? TC_OK : TC_ERR_OOM;
}

/* ---- compile, guards, call -------------------------------------------------- */

TCDEF tc_fn *tc_compile_at(tc_ctx *ctx, tc_model_fn fn, void *user, const tc_compile_options *opts,
                           tc_mode default_mode, int default_fullgraph, int default_dynamic, const char *file, int line) {
    tc_fn *f;
    tc_compile_options o;
    if (!ctx || !fn) return NULL;
    f = (tc_fn *)TC_MALLOC(sizeof *f);
    if (!f) return NULL;
    memset(f, 0, sizeof *f);
    if (opts) o = *opts;
    else memset(&o, 0, sizeof o);
    f->ctx = ctx;
    f->fn = fn;
    f->user = user;
    f->mode = o.mode != TC_MODE_FROM_FLAGS ? o.mode : default_mode;
    if (f->mode < TC_MODE_DEFAULT || f->mode > TC_MODE_MAX_AUTOTUNE) f->mode = TC_MODE_DEFAULT;
    f->fullgraph = o.fullgraph > 0 ? 1 : o.fullgraph < 0 ? 0 : default_fullgraph != 0;
    f->nin = o.num_inputs > 0 ? o.num_inputs : 1;
    f->nout = o.num_outputs > 0 ? o.num_outputs : 1;
    f->limit = o.recompile_limit > 0 ? o.recompile_limit : 8;
    f->fuse = o.fusion >= 0;
    f->freeze = o.freeze > 0;
    /* the fuser wants row ops as primitives; 1 decomposes everything */
    f->decompose = o.decompose > 0 ? 2 : o.decompose == 0 && f->fuse ? 1 : 0;
    f->dynamic = o.dynamic > 0 ? 1 : o.dynamic < 0 ? 0 : default_dynamic;
    if (o.dynamic >= 2) f->dyn_marked = ~(uint64_t)0; /* "on": every dim marked up front */
    f->file = file;
    f->line = line;
    f->logs = tc__logs_from_env();
    if (f->mode == TC_MODE_MAX_AUTOTUNE) {
        char buf[512];
        const char *d = tc__tune_dir(o.cache_dir, buf, sizeof buf);
        if (d && strlen(d) < sizeof f->tune_dir) memcpy(f->tune_dir, d, strlen(d) + 1);
        else if (d || (!o.cache_dir && !getenv("TC_CACHE_DIR")))
            /* never a truncated path: the choices stay in memory */
            tc__log(ctx, TC_LOG_WARN, "max-autotune: %s; measured choices are not kept on disk",
                    d ? "the cache directory's path is too long" : "no cache directory (HOME unset or too long)");
    }
    return f;
}

TCDEF void tc_fn_free(tc_fn *f) {
    int i;
    if (!f) return;
    for (i = 0; i < f->nentries; i++) {
        tc__program_free(f->entries[i].prog);
        tc__graph_free(f->entries[i].g);
        tc__graph_free(f->entries[i].raw);
        tc__segcache_free(f->entries[i].segs);
        TC_FREE(f->entries[i].sym);
        TC_FREE(f->entries[i].ins);
    }
    TC_FREE(f->entries);
    TC_FREE(f->breaks);
    tc__tune_mem_free(&f->tune);
    TC_FREE(f);
}

TCDEF tc_result tc_mark_dynamic(tc_fn *f, int input, int dim) {
    if (!f) return TC_ERR_NULL;
    if (input < 0 || input >= f->nin || input >= 8 || dim < 0 || dim >= TC_MAX_DIMS) {
        tc__fmt(f->err, sizeof f->err, "tc_mark_dynamic: input %d dim %d out of range (%d inputs, dims < %d)", input, dim,
                f->nin, TC_MAX_DIMS);
        return TC_ERR_AXIS;
    }
    f->dyn_marked |= (uint64_t)1 << (8 * input + dim);
    return TC_OK;
}

TCDEF const char *tc_fn_error(const tc_fn *f) { return f ? f->err : "tcompile: NULL function"; }

/* Checks entry e's guards against the inputs; on a miss writes why. */
TC__FN int tc__guards_match(const tc_fn *f, const tc__entry *e, tc_tensor *const *in, char *why, size_t cap) {
    int i, d;
    for (i = 0; i < f->nin; i++) {
        const tc__in_guard *gd = &e->ins[i];
        const tc_tensor *t = in[i];
        if (t->dtype != gd->dt) {
            snprintf(why, cap, "input %d dtype %s != %s", i, tc__dtype_names[t->dtype], tc__dtype_names[gd->dt]);
            return 0;
        }
        if (t->ndim != gd->ndim) {
            snprintf(why, cap, "input %d rank %d != %d", i, t->ndim, gd->ndim);
            return 0;
        }
        if (i == e->dyn_in) {
            /* a dynamic entry: any size >= 2 in that dim, contiguous input */
            int64_t s = t->shape[e->dyn_dim];
            if (s < 2 || !tc__contig(t)) {
                tc__fmt(why, cap, "input %d dim %d: size %lld %s", i, e->dyn_dim, (long long)s,
                        s < 2 ? "is specialised (0 and 1 never go dynamic)" : "with a non-contiguous input");
                return 0;
            }
            for (d = 0; d < t->ndim; d++)
                if (d != e->dyn_dim && t->shape[d] != gd->shape[d]) {
                    tc__fmt(why, cap, "input %d size of dim %d: %lld != %lld", i, d, (long long)t->shape[d],
                            (long long)gd->shape[d]);
                    return 0;
                }
            continue;
        }
        for (d = 0; d < t->ndim; d++) {
            if (t->shape[d] != gd->shape[d]) {
                snprintf(why, cap, "input %d size of dim %d: %lld != %lld", i, d, (long long)t->shape[d],
                         (long long)gd->shape[d]);
                return 0;
            }
            if (t->shape[d] > 1 && t->strides[d] != gd->strides[d]) {
                snprintf(why, cap, "input %d stride of dim %d: %lld != %lld", i, d, (long long)t->strides[d],
                         (long long)gd->strides[d]);
                return 0;
            }
        }
    }
    return 1;
}

/* Moves outputs made in the call's own scope out to the caller's (an output
 * that is an input or parameter stays where it is). */
TC__FN void tc__hand_out(tc_ctx *ctx, tc_tensor **outputs, int n) {
    int i;
    for (i = 0; i < n; i++)
        if (outputs[i] && !outputs[i]->is_sentinel && outputs[i]->scope == ctx->depth) tc_keep(outputs[i]);
}

/* Runs a cached graph through its program (built on first use): no call to
 * the user's function.  Errors become errored outputs, as an op's would. */
TC__FN tc_result tc__replay(tc_fn *f, tc__entry *e, tc_tensor *const *inputs, tc_tensor **outputs, int persistent) {
    tc_result r = TC_OK;
    int i;
    if (!e->prog) {
        e->prog = tc__program_build(f->ctx, e->g, inputs, persistent, f->fuse, tc__fuse_logs(f), f->err, sizeof f->err);
        if (!e->prog) r = f->err[0] ? TC_ERR_UNSUPPORTED : TC_ERR_OOM;
        else {
            e->prog->tune = f->mode == TC_MODE_MAX_AUTOTUNE;
            e->prog->tune_dir = f->tune_dir[0] ? f->tune_dir : NULL;
            e->prog->tune_mem = &f->tune;
            if (f->freeze && tc__program_freeze(e->prog) != 0) r = TC_ERR_OOM;
        }
    }
    if (r == TC_OK) r = tc__program_run(e->prog, f->ctx, inputs, outputs, f->err, sizeof f->err);
    if (r != TC_OK) {
        if (!f->err[0]) tc__fmt(f->err, sizeof f->err, "compiled function (%s:%d): %s", f->file ? f->file : "?", f->line,
                                 tc_result_string(r));
        for (i = 0; i < f->nout; i++) outputs[i] = tc__error_tensor(f->ctx, r, f->err);
    }
    return r;
}

/* A traced tensor kept past the function (tc_keep/tc_persist on a traced
 * value) has no data and refers to a graph that is gone: make it an error. */
TC__FN void tc__poison_escaped(tc_fn *f) {
    tc_ctx *ctx = f->ctx;
    int d;
    for (d = 0; d <= ctx->depth; d++) {
        tc_tensor *t;
        for (t = ctx->scope_head[d]; t; t = t->next) {
            char text[TC__MSG_CAP];
            if (!t->lazy) continue;
            t->lazy = 0;
            t->status = TC_ERR_STATE;
            tc__fmt(text, sizeof text, "a traced value kept past its compiled function (%s:%d) has no data",
                    f->file ? f->file : "?", f->line);
            TC_FREE((void *)t->err);
            t->err = tc__strdup(text);
        }
    }
}

/* Traces one call: returns the new cache entry's graph in *gout and a copy of
 * it before the passes in *rawout (both NULL when the trace had breaks) and
 * fills outputs with this call's results. */
TC__FN tc_result tc__trace_call(tc_fn *f, tc_tensor *const *inputs, tc_tensor **outputs, tc__graph **gout,
                                tc__graph **rawout, tc__segcache **segs) {
    tc_ctx *ctx = f->ctx;
    tc__trace tr;
    tc_tensor **lazy_in = (tc_tensor **)tc__malloc(sizeof(tc_tensor *) * (size_t)f->nin);
    int i, fresh;
    tc_result r = TC_OK;
    *gout = NULL;
    *rawout = NULL;
    memset(&tr, 0, sizeof tr);
    tr.f = f;
    tr.inputs = inputs;
    tr.gen = ++ctx->trace_gen;
    tr.g = tc__graph_new();
    tr.capall = f->nin + 8;
    tr.allin = (tc_tensor **)tc__malloc(sizeof(tc_tensor *) * (size_t)tr.capall);
    tr.cache = *segs;
    if (!tr.cache && (tr.cache = (tc__segcache *)tc__malloc(sizeof(tc__segcache))) != NULL)
        memset(tr.cache, 0, sizeof(tc__segcache));
    if (!lazy_in || !tr.g || !tr.allin || !tr.cache) {
        TC_FREE(lazy_in);
        TC_FREE(tr.allin);
        tc__graph_free(tr.g);
        if (tr.cache != *segs) tc__segcache_free(tr.cache);
        return TC_ERR_OOM;
    }
    for (i = 0; i < f->nin; i++) tr.allin[i] = inputs[i];
    tr.nall = f->nin;
    tc_scope_begin(ctx); /* the trace's tensors; outputs are kept out of it */
    for (i = 0; i < f->nin && r == TC_OK; i++) {
        tc__node nd;
        tc_tensor *t = tc__tensor_new(ctx);
        if (!t) {
            r = TC_ERR_OOM;
            break;
        }
        memset(&nd, 0, sizeof nd);
        nd.kind = TC__NODE_INPUT;
        nd.a.i[0] = i;
        nd.dt = inputs[i]->dtype;
        nd.ndim = inputs[i]->ndim;
        memcpy(nd.shape, inputs[i]->shape, sizeof nd.shape);
        nd.in = nd.in_small;
        t->dtype = inputs[i]->dtype;
        t->ndim = inputs[i]->ndim;
        memcpy(t->shape, inputs[i]->shape, sizeof t->shape);
        memcpy(t->strides, inputs[i]->strides, sizeof t->strides);
        t->offset = inputs[i]->offset; /* views traced from it carry the real offset */
        t->lazy = tc__graph_add(tr.g, &nd, &fresh) + 1;
        if (t->lazy == 0) r = TC_ERR_OOM;
        lazy_in[i] = t;
    }
    for (i = 0; i < f->nout; i++) outputs[i] = NULL;
    if (r == TC_OK) {
        ctx->trace = &tr;
        f->fn(ctx, f->user, lazy_in, outputs);
        ctx->trace = NULL;
        if (tr.failed) r = tr.status;
    }
    for (i = 0; r == TC_OK && i < f->nout; i++) {
        if (!outputs[i]) {
            tc__fmt(f->err, sizeof f->err, "compiled function (%s:%d) left outputs[%d] NULL", f->file ? f->file : "?",
                     f->line, i);
            r = TC_ERR_NULL;
        } else if (outputs[i]->status != TC_OK) {
            tc__fmt(f->err, sizeof f->err, "%s", tc_error(outputs[i]));
            r = outputs[i]->status;
        }
    }
    if (r == TC_OK) {
        /* the final segment: its outputs are the function's outputs */
        tr.g->nout = f->nout;
        tr.g->outputs = (int *)tc__malloc(sizeof(int) * (size_t)f->nout);
        if (!tr.g->outputs) r = TC_ERR_OOM;
        for (i = 0; r == TC_OK && i < f->nout; i++)
            if ((tr.g->outputs[i] = outputs[i]->lazy ? outputs[i]->lazy - 1 : tc__trace_input(&tr, outputs[i])) < 0)
                r = TC_ERR_OOM;
    }
    if (r == TC_OK && tr.breaks > 0) {
        /* a trace with breaks: its last segment goes through the cache too */
        r = tc__segment_run(&tr, &tr.g, outputs);
        if (r != TC_OK)
            for (i = 0; i < f->nout; i++) outputs[i] = NULL;
    } else if (r == TC_OK) {
        /* the template for automatic dynamic shapes: the trace as recorded */
        if (tc__pass_dce(tr.g) < 0 || !(*rawout = tc__graph_copy(tr.g))) r = TC_ERR_OOM;
        if (r == TC_OK) r = tc__run_passes(f, &tr.g);
    }
    if (r == TC_OK && tr.breaks == 0) {
        tc__entry e;
        memset(&e, 0, sizeof e);
        e.g = tr.g;
        if (f->logs & TC__LOG_GRAPH) {
            size_t need = tc__graph_print(tr.g, NULL, 0) + 1;
            char *txt = (char *)tc__malloc(need);
            if (txt) {
                tc__graph_print(tr.g, txt, need);
                tc__log(ctx, TC_LOG_WARN, "graph of compiled function (%s:%d):\n%s", f->file ? f->file : "?", f->line, txt);
                TC_FREE(txt);
            }
        }
        /* run the final segment for this call's results with a throwaway
         * non-persistent program (fresh outputs); the cached entry builds
         * its own program, persistent in reduce-overhead, on its first replay */
        r = tc__replay(f, &e, inputs, outputs, 0);
        tc__program_free(e.prog);
        if (r == TC_OK) {
            *gout = tr.g;
            tr.g = NULL;
        }
    } else if (r != TC_OK) {
        if (f->err[0] == 0) tc__fmt(f->err, sizeof f->err, "tracing failed: %s", tc_result_string(r));
        for (i = 0; i < f->nout; i++)
            if (!outputs[i] || outputs[i]->status == TC_OK) outputs[i] = tc__error_tensor(ctx, r, f->err);
    }
    if (r != TC_OK || !*gout) {
        tc__graph_free(*rawout);
        *rawout = NULL;
    }
    /* the segment cache goes to the entry when the trace had breaks */
    if (r == TC_OK && tr.breaks > 0) *segs = tr.cache;
    else if (tr.cache != *segs) tc__segcache_free(tr.cache);
    tc__hand_out(ctx, outputs, f->nout); /* results and errors alike, as an op's */
    tc_scope_end(ctx);
    tc__poison_escaped(f);
    tc__graph_free(tr.g);
    TC_FREE(lazy_in);
    TC_FREE(tr.allin);
    return r;
}

/* Caches (g, raw) or the segments of a trace with breaks for the inputs'
 * signature; on OOM the cache just misses. */
TC__FN void tc__add_entry(tc_fn *f, tc_tensor *const *inputs, tc__graph *g, tc__graph *raw, tc__segcache *segs) {
    tc__entry *ne = (tc__entry *)TC_REALLOC(f->entries, sizeof(tc__entry) * (size_t)(f->nentries + 1));
    tc__in_guard *ins = (tc__in_guard *)tc__malloc(sizeof(tc__in_guard) * (size_t)f->nin);
    tc__entry *e;
    int i;
    if (ne) f->entries = ne;
    if (!ne || !ins) {
        TC_FREE(ins);
        tc__graph_free(g);
        tc__graph_free(raw);
        tc__segcache_free(segs);
        return;
    }
    for (i = 0; i < f->nin; i++) {
        ins[i].dt = inputs[i]->dtype;
        ins[i].ndim = inputs[i]->ndim;
        memcpy(ins[i].shape, inputs[i]->shape, sizeof ins[i].shape);
        memcpy(ins[i].strides, inputs[i]->strides, sizeof ins[i].strides);
    }
    e = &ne[f->nentries++];
    memset(e, 0, sizeof *e);
    e->ins = ins;
    e->g = g;
    e->raw = raw;
    e->segs = segs;
    e->dyn_in = e->dyn_dim = -1;
    if (g)
        for (i = 0; i < g->n; i++) e->nparams += g->nodes[i].kind == TC__NODE_PARAM;
}

/* Points entry e at graph g (and template raw, when given) for size s. */
TC__FN void tc__entry_set(tc__entry *e, tc__graph *g, tc__graph *raw, int64_t s) {
    tc__program_free(e->prog);
    e->prog = NULL;
    tc__graph_free(e->g);
    e->g = g;
    if (raw) {
        tc__graph_free(e->raw);
        e->raw = raw;
    }
    e->cur = s;
}

/* The inputs differ from entry e (static, replayable, contiguous inputs)
 * only in the size of one dim of one input, both sizes >= 2. */
TC__FN int tc__size_only_miss(const tc_fn *f, const tc__entry *e, tc_tensor *const *in, int *di, int *dd) {
    int i, d, found = 0;
    if (!e->g || !e->raw || e->dyn_in >= 0) return 0;
    for (i = 0; i < f->nin; i++) {
        const tc__in_guard *gd = &e->ins[i];
        int64_t cst[TC_MAX_DIMS];
        if (in[i]->dtype != gd->dt || in[i]->ndim != gd->ndim) return 0;
        tc__contig_strides(gd->ndim, gd->shape, cst);
        for (d = 0; d < gd->ndim; d++) {
            if (gd->shape[d] > 1 && gd->strides[d] != cst[d]) return 0; /* traced input not contiguous */
            if (in[i]->shape[d] == gd->shape[d]) continue;
            if (found || in[i]->shape[d] < 2 || gd->shape[d] < 2) return 0;
            found = 1;
            *di = i;
            *dd = d;
        }
        if (!tc__contig(in[i])) return 0;
    }
    return found;
}

/* For a marked dim of the inputs (size >= 2, contiguous input): traces a
 * zero-padded copy one longer in that dim and fits raw against it. */
TC__FN int tc__marked_fit(tc_fn *f, tc_tensor *const *inputs, const tc__graph *raw, int *di, int *dd, tc__sym **sym,
                          int *nsym) {
    tc_ctx *ctx = f->ctx;
    int i, d, k, ok = 0;
    for (i = 0; i < f->nin && i < 8; i++)
        for (d = 0; d < inputs[i]->ndim; d++) {
            tc_tensor **alt, **outs, *padded;
            tc__graph *g2 = NULL, *raw2 = NULL;
            tc__segcache *segs = NULL;
            int64_t pad[2 * TC_MAX_DIMS];
            if (!(f->dyn_marked >> (8 * i + d) & 1) || inputs[i]->shape[d] < 2 || !tc__contig(inputs[i])) continue;
            alt = (tc_tensor **)tc__malloc(sizeof(tc_tensor *) * (size_t)(f->nin + f->nout));
            if (!alt) return 0;
            outs = alt + f->nin;
            memset(pad, 0, sizeof pad);
            pad[2 * (inputs[i]->ndim - 1 - d) + 1] = 1; /* F.pad order: last dim first */
            tc_scope_begin(ctx);
            padded = tc_pad_at(ctx, inputs[i], 2 * inputs[i]->ndim, pad, 0.0, f->file, f->line);
            for (k = 0; k < f->nin; k++) alt[k] = k == i ? padded : inputs[k];
            if (padded->status == TC_OK && tc__trace_call(f, alt, outs, &g2, &raw2, &segs) == TC_OK && raw2)
                *nsym = tc__graph_fit(raw, raw2, inputs[i]->shape[d], inputs[i]->shape[d] + 1, sym);
            else
                *nsym = -1;
            ok = *nsym >= 0;
            tc__graph_free(g2);
            tc__graph_free(raw2);
            tc__segcache_free(segs);
            tc_scope_end(ctx);
            TC_FREE(alt);
            if (ok) {
                *di = i;
                *dd = d;
                return 1;
            }
        }
    return 0;
}

/* A verified dynamic entry at a new size: the template instantiated and run
 * through the passes; no trace, no call of the user's function. */
TC__FN tc_result tc__dynamic_instantiate(tc_fn *f, tc__entry *e, int64_t s) {
    tc__graph *g = tc__graph_instantiate(e->raw, e->sym, e->nsym, s);
    if (!g) return TC_ERR_OOM;
    if (tc__run_passes(f, &g) != TC_OK) return TC_ERR_OOM;
    tc__entry_set(e, g, NULL, s);
    f->dyn_instances++;
    return TC_OK;
}

TCDEF tc_result tc_call(tc_fn *f, tc_tensor *const *inputs, tc_tensor **outputs) {
    tc_ctx *ctx;
    tc__entry *e = NULL;
    tc__graph *g = NULL;
    char why[160] = "";
    tc_result r;
    int i;
    if (!f) return TC_ERR_NULL;
    /* first, so a refused caller (nested, or another thread) touches nothing */
    if (!tc__try_enter(&f->busy)) return TC_ERR_STATE;
    ctx = f->ctx;
    f->err[0] = 0;
    if (ctx->trace) {
        tc__fmt(f->err, sizeof f->err, "tc_call: calling a compiled function inside a traced one is not supported");
        tc__leave(&f->busy);
        return TC_ERR_STATE;
    }
    if (!inputs || !outputs) {
        tc__fmt(f->err, sizeof f->err, "tc_call: inputs or outputs is NULL");
        tc__leave(&f->busy);
        return TC_ERR_NULL;
    }
    for (i = 0; i < f->nin; i++) {
        if (!inputs[i] || inputs[i]->status != TC_OK || inputs[i]->ctx != ctx || inputs[i]->lazy) {
            tc__fmt(f->err, sizeof f->err, "tc_call: input %d is %s", i,
                     !inputs[i] ? "NULL" : inputs[i]->status != TC_OK ? tc_error(inputs[i])
                                         : inputs[i]->ctx != ctx      ? "from another context"
                                                                      : "a traced value");
            for (r = TC_ERR_INVALID_ARG, i = 0; i < f->nout; i++) outputs[i] = tc__error_tensor(ctx, r, f->err);
            tc__leave(&f->busy);
            return r;
        }
    }
    f->calls++;
    for (i = 0; i < f->nentries; i++)
        if (tc__guards_match(f, &f->entries[i], inputs, why, sizeof why)) {
            e = &f->entries[i];
            break;
        }
    if (e && f->logs & TC__LOG_GUARDS) tc__log(ctx, TC_LOG_WARN, "guards hit: entry %d of %d", (int)(e - f->entries), f->nentries);
    if (e && e->g && e->dyn_in >= 0 && inputs[e->dyn_in]->shape[e->dyn_dim] != e->cur) {
        /* a dynamic entry at a new size */
        int64_t s = inputs[e->dyn_in]->shape[e->dyn_dim];
        if (e->verified) {
            r = tc__dynamic_instantiate(f, e, s);
            if (r != TC_OK) {
                tc__fmt(f->err, sizeof f->err, "compiled function (%s:%d): %s", f->file ? f->file : "?", f->line,
                        tc_result_string(r));
                for (i = 0; i < f->nout; i++) outputs[i] = tc__error_tensor(ctx, r, f->err);
                tc__leave(&f->busy);
                return r;
            }
        } else {
            /* the first new size after the fit: trace once more and compare */
            tc__graph *raw = NULL;
            tc__segcache *segs = NULL;
            r = tc__trace_call(f, inputs, outputs, &g, &raw, &segs);
            tc__segcache_free(segs); /* a break now: this size just isn't cached */
            if (r == TC_OK && g && (s == e->fit_a || s == e->fit_b)) {
                /* a size the fit was made from proves nothing: keep waiting */
                tc__entry_set(e, g, raw, s);
            } else if (r == TC_OK && g) {
                tc__graph *inst = tc__graph_instantiate(e->raw, e->sym, e->nsym, s);
                if (inst && tc__graph_equal(inst, raw)) {
                    e->verified = 1;
                    tc__entry_set(e, g, raw, s);
                } else {
                    /* not affine after all: the dim goes back to static */
                    tc__log(ctx, TC_LOG_INFO, "automatic dynamic: input %d dim %d is not affine; recompiling per size",
                            e->dyn_in, e->dyn_dim);
                    if (e->dyn_in < 8) f->dyn_failed |= (uint64_t)1 << (8 * e->dyn_in + e->dyn_dim);
                    e->ins[e->dyn_in].shape[e->dyn_dim] = e->cur;
                    tc__contig_strides(e->ins[e->dyn_in].ndim, e->ins[e->dyn_in].shape, e->ins[e->dyn_in].strides);
                    e->dyn_in = e->dyn_dim = -1;
                    TC_FREE(e->sym);
                    e->sym = NULL;
                    e->nsym = 0;
                    f->recompiles++;
                    tc__add_entry(f, inputs, g, raw, NULL);
                }
                tc__graph_free(inst);
            }
            f->dyn_traces++;
            tc__leave(&f->busy);
            return r;
        }
    }
    if (e && e->g) {
        tc_scope_begin(ctx);
        r = tc__replay(f, e, inputs, outputs, f->mode == TC_MODE_REDUCE_OVERHEAD);
        tc__hand_out(ctx, outputs, f->nout);
        tc_scope_end(ctx);
        f->cached_calls++;
    } else if (e && e->segs) {
        /* a trace with breaks: record again, run each segment's program */
        tc__graph *raw = NULL;
        r = tc__trace_call(f, inputs, outputs, &g, &raw, &e->segs);
        tc__graph_free(g); /* a break-free path this time: not cached here */
        tc__graph_free(raw);
        f->recorded_calls++;
    } else if (e || f->nentries >= f->limit) {
        /* past the recompile limit (or an entry that could not be cached) */
        if (!e)
            tc__log(ctx, TC_LOG_WARN, "compiled function (%s:%d) hit the recompile limit (%d); running eagerly (%s)",
                    f->file ? f->file : "?", f->line, f->limit, why);
        tc_scope_begin(ctx);
        f->fn(ctx, f->user, inputs, outputs);
        r = TC_OK;
        for (i = 0; i < f->nout; i++) {
            if (!outputs[i]) outputs[i] = tc__error_tensor(ctx, r = TC_ERR_NULL, "compiled function left an output NULL");
            else if (outputs[i]->status != TC_OK && r == TC_OK) {
                r = outputs[i]->status;
                tc__fmt(f->err, sizeof f->err, "%s", tc_error(outputs[i]));
            }
        }
        tc__hand_out(ctx, outputs, f->nout);
        tc_scope_end(ctx);
        f->eager_calls++;
    } else {
        /* a miss: when one input dim's size is all that differs from an
         * entry, this recompile may make that dim dynamic */
        tc__entry *cand = NULL;
        tc__graph *raw = NULL;
        tc__segcache *segs = NULL;
        int di = -1, dd = -1;
        for (i = 0; f->dynamic && i < f->nentries && !cand; i++)
            if (tc__size_only_miss(f, &f->entries[i], inputs, &di, &dd) &&
                !(di < 8 && (f->dyn_failed >> (8 * di + dd) & 1)))
                cand = &f->entries[i];
        if (f->nentries > 0) {
            f->recompiles++;
            if (f->logs & TC__LOG_RECOMPILES)
                tc__log(ctx, TC_LOG_WARN, "recompiling function (%s:%d): %s", f->file ? f->file : "?", f->line, why);
        }
        r = tc__trace_call(f, inputs, outputs, &g, &raw, &segs);
        if (r == TC_OK) {
            tc__sym *sym = NULL;
            int nsym = cand && g && raw ? tc__graph_fit(cand->raw, raw, cand->ins[di].shape[dd], inputs[di]->shape[dd], &sym) : -1;
            if (nsym >= 0) {
                if (f->logs & TC__LOG_RECOMPILES)
                    tc__log(ctx, TC_LOG_WARN, "automatic dynamic: input %d dim %d (%d symbolic attributes)", di, dd, nsym);
                cand->dyn_in = di;
                cand->dyn_dim = dd;
                TC_FREE(cand->sym);
                cand->sym = sym;
                cand->nsym = nsym;
                cand->verified = 0;
                cand->fit_a = cand->ins[di].shape[dd];
                cand->fit_b = inputs[di]->shape[dd];
                cand->ins[di].shape[dd] = inputs[di]->shape[dd];
                tc__entry_set(cand, g, raw, inputs[di]->shape[dd]);
            } else if (g && raw && tc__marked_fit(f, inputs, raw, &di, &dd, &sym, &nsym)) {
                int n0 = f->nentries;
                tc__add_entry(f, inputs, g, raw, segs);
                if (f->nentries == n0 + 1) {
                    tc__entry *ne = &f->entries[n0];
                    ne->dyn_in = di;
                    ne->dyn_dim = dd;
                    ne->sym = sym;
                    ne->nsym = nsym;
                    ne->cur = ne->fit_a = inputs[di]->shape[dd];
                    ne->fit_b = ne->cur + 1;
                } else {
                    TC_FREE(sym); /* out of memory: the entry was not added */
                }
            } else {
                tc__add_entry(f, inputs, g, raw, segs);
            }
        }
    }
    tc__leave(&f->busy);
    return r;
}

TCDEF size_t tc_fn_dot(const tc_fn *f, int entry, char *buf, size_t cap) {
    if (!f || entry < 0 || entry >= f->nentries || !f->entries[entry].g) {
        if (buf && cap) buf[0] = 0;
        return 0;
    }
    {
        const tc__program *p = f->entries[entry].prog;
        return tc__graph_dot(f->entries[entry].g, p && p->fu.group ? p->fu.group : NULL, buf, cap);
    }
}

/* One graph's share of tc_explain's counts (views launch no kernel); with
 * its program, the launches it really makes. */
TC__FN void tc__count_graph(const tc__graph *g, const tc__program *p, tc_explain_info *in) {
    int k, unfused = 0;
    in->graphs++;
    for (k = 0; k < g->n; k++) {
        if (g->nodes[k].kind != TC__NODE_OP) continue;
        in->ops++;
        unfused += tc__optable[g->nodes[k].op].cls != TC__CLASS_VIEW;
    }
    in->kernels_unfused += unfused;
    if (!p) {
        in->kernels += unfused;
        return;
    }
    for (k = 0; k < p->nlaunch; k++) {
        in->kernels += !p->launch[k].is_view;
        in->fused_kernels += p->launch[k].kernel >= 0 || p->launch[k].epi >= 0;
    }
    if (p->peak_bytes > in->peak_bytes) in->peak_bytes = p->peak_bytes;
    in->inplace += p->inplace;
}

TCDEF tc_result tc_explain(const tc_fn *f, tc_explain_info *info, char *text, size_t cap) {
    tc_explain_info in;
    int i, k;
    size_t n = 0;
    static const char *const modes[] = {"default", "default", "reduce-overhead", "max-autotune"};
    if (!f) return TC_ERR_NULL;
    memset(&in, 0, sizeof in);
    in.mode = f->mode;
    in.fullgraph = f->fullgraph;
    in.graph_breaks = f->nbreaks;
    in.recompiles = f->recompiles;
    in.calls = f->calls;
    in.cached_calls = f->cached_calls;
    in.eager_calls = f->eager_calls;
    in.recorded_calls = f->recorded_calls;
    for (i = 0; i < f->nentries; i++) {
        const tc__graph *g = f->entries[i].g;
        const tc__segcache *sc = f->entries[i].segs;
        in.guards += f->nin * 3 + f->entries[i].nparams;
        for (k = 0; sc && k < sc->n; k++) tc__count_graph(sc->s[k].g, sc->s[k].prog, &in);
        in.dynamic_dims += f->entries[i].dyn_in >= 0;
        if (!g) continue;
        tc__count_graph(g, f->entries[i].prog, &in);
        if (f->entries[i].prog) in.frozen_weights += tc__program_frozen(f->entries[i].prog);
        if (f->entries[i].prog && (int64_t)f->entries[i].prog->arena_bytes > in.arena_bytes)
            in.arena_bytes = (int64_t)f->entries[i].prog->arena_bytes;
    }
    in.tuned_launches = f->tune.measured;
    in.tuned_single_thread = f->tune.single;
    in.tuned_tiles = f->tune.tiles;
    in.tuned_microkernels = f->tune.isas;
    in.tuned_cached = f->tune.from_disk;
    if (info) *info = in;
    if (!text || cap == 0) return TC_OK;
#define TC__W_(...)                                                                     \
    do {                                                                                \
        int w_ = snprintf(text + n, n < cap ? cap - n : 0, __VA_ARGS__);                \
        if (w_ > 0) n += (size_t)w_;                                                    \
        if (n >= cap) n = cap - 1;                                                      \
    } while (0)
    TC__W_("compiled function (%s:%d): mode %s%s\n", f->file ? f->file : "?", f->line, modes[f->mode],
           f->fullgraph ? ", fullgraph" : "");
    TC__W_("  graphs %d, ops %d, kernels %d (%d fused; %d op by op), guards %d, recompiles %d, graph breaks %d\n",
           in.graphs, in.ops, in.kernels, in.fused_kernels, in.kernels_unfused, in.guards, in.recompiles,
           in.graph_breaks);
    if (f->freeze) TC__W_("  freeze: %d weights packed once for the GEMM\n", in.frozen_weights);
    if (f->mode == TC_MODE_MAX_AUTOTUNE)
        TC__W_("  max-autotune: %d launches measured, %d run faster on one thread, %d fused kernels on smaller tiles, "
               "%d contractions on a lower level's microkernels, %d choices from the cache%s%s\n",
               in.tuned_launches, in.tuned_single_thread, in.tuned_tiles, in.tuned_microkernels, in.tuned_cached,
               f->tune_dir[0] ? " in " : "", f->tune_dir);
    TC__W_("  calls %d (cached %d, recorded with cached segments %d, eager %d), intermediates arena %lld bytes, "
           "peak %lld bytes, %d results in place, dynamic dims %d\n",
           in.calls, in.cached_calls, in.recorded_calls, in.eager_calls, (long long)in.arena_bytes,
           (long long)in.peak_bytes, in.inplace, in.dynamic_dims);
    for (i = 0; i < f->nbreaks; i++)
        TC__W_("  break %d: %s at %s:%d\n", i + 1, f->breaks[i].reason, f->breaks[i].file ? f->breaks[i].file : "?",
               f->breaks[i].line);
    for (i = 0; i < f->nentries; i++) {
        const tc__entry *e = &f->entries[i];
        TC__W_("  entry %d guards:", i);
        for (k = 0; k < f->nin; k++) {
            char shp[96];
            int d;
            tc__shape_str(e->ins[k].ndim, e->ins[k].shape, shp, sizeof shp);
            if (k == e->dyn_in) { /* print the dynamic dim as '*' */
                size_t at = 1;
                for (d = 0; d < e->dyn_dim; d++) at = (size_t)(strchr(shp + at, ',') - shp) + 1;
                {
                    char rest[96];
                    const char *end = strpbrk(shp + at, ",]");
                    snprintf(rest, sizeof rest, "%s", end ? end : "]");
                    snprintf(shp + at, sizeof shp - at, "*%s", rest);
                }
            }
            TC__W_(" in%d=%s%s", k, tc__dtype_names[e->ins[k].dt], shp);
        }
        if (e->dyn_in >= 0)
            TC__W_(" [dynamic: %d symbolic attributes, %s, now %lld]", e->nsym, e->verified ? "verified" : "unverified",
                   (long long)e->cur);
        TC__W_(", %d params by identity", e->nparams);
        if (e->segs)
            TC__W_(" (trace had breaks: %d segments, %d runs from cache, %d compiled)", e->segs->n, e->segs->hits,
                   e->segs->misses);
        TC__W_("\n");
        for (k = 0; e->segs && k < e->segs->n; k++) {
            TC__W_("  segment %d:\n", k);
            if (n + 1 < cap) n += tc__graph_print(e->segs->s[k].g, text + n, cap - n);
            if (n >= cap) n = cap - 1;
        }
        if (e->g && n + 1 < cap) n += tc__graph_print(e->g, text + n, cap - n);
        if (n >= cap) n = cap - 1;
    }
#undef TC__W_
    return TC_OK;
}
