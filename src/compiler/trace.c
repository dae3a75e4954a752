/* Tracing: a compiled call runs the user's function with ctx->trace set, so
 * every op goes through tc__run to the context's hook, tc__trace_op
 * (ctx->trace_hooks), which records a graph node instead of computing (the
 * tensors it returns are lazy).  A host read of
 * traced data (tc_item, tc_read, a host callback) is a graph break: the
 * pending segment is compiled and run (through the segment cache, so later
 * calls reuse it), the live traced tensors become concrete, and tracing
 * continues in a new segment.  tc__trace_call traces one whole call. */

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

/* A host parameter of a function on the GPU: its device copy, uploaded on
 * first sight and kept by the function (later changes to the host tensor
 * are not seen, as with freeze).  NULL with the reason in f->err. */
TC__FN tc_tensor *tc__trace_upload(tc_fn *f, tc_tensor *t) {
    tc_tensor *d;
    int i;
    for (i = 0; i < f->nup; i++)
        if (f->up_src[i] == t) return f->up_dev[i];
    if (f->nup == f->capup) {
        int cap = f->capup ? 2 * f->capup : 8;
        tc_tensor **a = (tc_tensor **)TC_REALLOC(f->up_src, sizeof(tc_tensor *) * (size_t)cap), **b;
        if (!a) return NULL;
        f->up_src = a;
        if (!(b = (tc_tensor **)TC_REALLOC(f->up_dev, sizeof(tc_tensor *) * (size_t)cap))) return NULL;
        f->up_dev = b;
        f->capup = cap;
    }
    d = tc__to_device(f->ctx, t);
    if (!d || d->status != TC_OK) {
        tc_free(d);
        return NULL;
    }
    d = tc__move_to(d, 0); /* the function's, not the call's scope */
    f->up_src[f->nup] = t;
    f->up_dev[f->nup++] = d;
    return d;
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
    for (i = 0; tr->f->be->device == TC_CUDA && c->ins == c->in && i < c->nin; i++) {
        tc_tensor *t = c->in[i];
        if (!t || t->lazy || t->device == TC_CUDA || t->status != TC_OK || t->ctx != c->ctx || (t->seg > 0 && t->seg_gen == tr->gen))
            continue;
        if (!(c->in[i] = tc__trace_upload(tr->f, t))) {
            tc__msg(c, c->ctx->first_status ? c->ctx->first_status : TC_ERR_OOM, "uploading parameter %d: %s", i,
                    c->ctx->first_err[0] ? c->ctx->first_err : "out of memory");
            return tc__fail(c, c->ctx->first_status ? c->ctx->first_status : TC_ERR_OOM);
        }
    }
    if ((out = tc__check_inputs(c)) != NULL) return out;
    r = info->shape(c);
    if (r != TC_OK) return tc__fail(c, r);
    if (tc__call_device(c) >= 0 && tc__call_device(c) != (int)tr->f->be->device) {
        /* a parameter on the other device: the program would read memory
         * its device cannot address */
        tc__msg(c, TC_ERR_INVALID_ARG, "reads a tensor on %s in a function compiled for %s (its inputs' device): tc_to it there",
                tc__device_name((tc_device)tc__call_device(c)), tc__device_name(tr->f->be->device));
        return tc__fail(c, TC_ERR_INVALID_ARG);
    }
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
    out->device = tr->f->be->device;
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
        f->compiles++;
        if (tc__passes_run(f->ctx, f->freeze, f->decompose, &g) != TC_OK) return TC_ERR_OOM;
        p = tc__program_build(f->ctx, f->be, g, tr->allin, 0, f->fuse, tc__fuse_logs(f), f->err, sizeof f->err);
        r = p ? tc__program_run(p, f->ctx, tr->allin, outs, f->err, sizeof f->err) : TC_ERR_OOM;
        tc__program_free(p);
        tc__graph_free(g);
        return r;
    } else {
        tc__segment add;
        memset(&add, 0, sizeof add);
        c->misses++;
        f->compiles++;
        if (!(add.raw = tc__graph_copy(g))) return TC_ERR_OOM;
        *gp = NULL;
        add.g = g;
        if (tc__passes_run(f->ctx, f->freeze, f->decompose, &add.g) != TC_OK ||
            !(add.prog = tc__program_build(f->ctx, f->be, add.g, tr->allin, 0, f->fuse, tc__fuse_logs(f), f->err, sizeof f->err)) ||
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
    int *ids = NULL, *root = NULL, *pos = NULL, nid = 0, d, k, i;
    tc_result r = TC_OK;
    if (g->n > 0) {
        ids = (int *)tc__malloc(sizeof(int) * (size_t)g->n);
        root = (int *)tc__malloc(sizeof(int) * (size_t)g->n * 2);
        outs = (tc_tensor **)tc__malloc(sizeof(tc_tensor *) * (size_t)g->n);
        if (!ids || !root || !outs) r = TC_ERR_OOM;
        else pos = root + g->n; /* per node: its index in ids, -1 none */
        for (i = 0; r == TC_OK && i < g->n; i++) {
            const tc__node *nd = &g->nodes[i];
            int view = nd->kind == TC__NODE_OP && tc__optable[nd->op].cls == TC__CLASS_VIEW && nd->nin > 0;
            root[i] = view && nd->in[0] >= 0 ? root[nd->in[0]] : i;
            pos[i] = -1;
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
                    t->storage = base->storage;
                    base->storage->refs++;
                    if (tc__trace_keep_value(tr, t)) r = TC_ERR_OOM;
                    continue;
                }
                /* a view of user memory (tc_wrap) is output itself, copied */
                k = rn->op == TC__OP_WRAP ? t->lazy - 1 : root[t->lazy - 1];
                if (pos[k] < 0) {
                    pos[k] = nid;
                    ids[nid++] = k;
                }
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
                    int own, pr, po;
                    if (!t->lazy) continue;
                    /* the first output that is its root or its own node */
                    pr = pos[root[t->lazy - 1]], po = pos[t->lazy - 1];
                    k = pr < 0 || (po >= 0 && po < pr) ? po : pr;
                    own = ids[k] == t->lazy - 1; /* the tensor's own node (a root, or a wrap view) */
                    v = outs[k];
                    t->lazy = 0;
                    t->storage = v->storage;
                    v->storage->refs++;
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

/* The host-access hook: a host read of tensor data while tracing is a graph
 * break.  Under fullgraph it is an error (returns nonzero, the function's
 * error names the read's call site); otherwise the pending segment runs and
 * the data becomes readable. */
TC__FN int tc__trace_host_access(const tc_tensor *t, const char *what, const char *file, int line) {
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

static const tc__trace_hooks tc__tracer = {tc__trace_op, tc__trace_host_access};

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
    if (tr && tc__trace_host_access(x, "tc_host_call", file, line)) {
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
    (void)tc__trace_host_access(&probe, "tc_graph_break", file, line);
}

/* ---- running one call ------------------------------------------------------- */

/* Moves outputs made in the call's own scope (or in a scope the user's
 * function left open inside it) out to the caller's; an output that is an
 * input or parameter stays where it is. */
TC__FN void tc__hand_out(tc_ctx *ctx, tc_tensor **outputs, int n) {
    int i, floor = ctx->scope_floor; /* the call's scope (tc__scope_open) */
    for (i = 0; i < n; i++) {
        tc_tensor *t = outputs[i];
        if (!t || t->is_sentinel || t->scope < floor) continue;
        /* in the call's scope, or in one the function left open inside it */
        tc__move_to(t, floor > 0 ? floor - 1 : 0);
    }
}

/* A failed call: f->err (when empty, a default naming the function and r)
 * in an errored tensor at every output, as a failed op gives.  Returns r. */
TC__FN tc_result tc__fn_fail(tc_fn *f, tc_tensor **outputs, tc_result r) {
    int i;
    if (!f->err[0])
        tc__fmt(f->err, sizeof f->err, "compiled function (%s:%d): %s", f->file ? f->file : "?", f->line,
                tc_result_string(r));
    for (i = 0; i < f->nout; i++) outputs[i] = tc__error_tensor(f->ctx, r, f->err);
    return r;
}

/* Runs a cached graph through its program (built on first use): no call to
 * the user's function.  Errors become errored outputs, as an op's would. */
TC__FN tc_result tc__replay(tc_fn *f, tc__entry *e, tc_tensor *const *inputs, tc_tensor **outputs, int persistent) {
    tc_result r = TC_OK;
    if (!e->prog) {
        f->compiles++;
        e->prog = tc__program_build(f->ctx, f->be, e->g, inputs, persistent, f->fuse, tc__fuse_logs(f), f->err, sizeof f->err);
        if (!e->prog) r = f->err[0] ? TC_ERR_UNSUPPORTED : TC_ERR_OOM;
        else {
            e->prog->tune = f->mode == TC_MODE_MAX_AUTOTUNE ? tc__tune_launch : NULL;
            e->prog->tune_dir = f->tune_dir[0] ? f->tune_dir : NULL;
            e->prog->tune_mem = &f->tune;
            if (f->freeze && tc__program_freeze(e->prog) != 0) r = TC_ERR_OOM;
        }
    }
    if (r == TC_OK) r = tc__program_run(e->prog, f->ctx, inputs, outputs, f->err, sizeof f->err);
    return r == TC_OK ? r : tc__fn_fail(f, outputs, r);
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

/* The function's inputs as lazy tensors, each the graph's input node. */
TC__FN tc_result tc__trace_inputs(tc__trace *tr, tc_tensor *const *inputs, tc_tensor **lazy_in) {
    tc_ctx *ctx = tr->f->ctx;
    int i, fresh;
    for (i = 0; i < tr->f->nin; i++) {
        tc__node nd;
        tc_tensor *t = tc__tensor_new(ctx);
        if (!t) return TC_ERR_OOM;
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
        t->device = inputs[i]->device;
        t->lazy = tc__graph_add(tr->g, &nd, &fresh) + 1;
        lazy_in[i] = t;
        if (t->lazy == 0) return TC_ERR_OOM;
    }
    return TC_OK;
}

/* The function's outputs, checked (not NULL, not errored), become the final
 * segment's outputs. */
TC__FN tc_result tc__trace_outputs(tc__trace *tr, tc_tensor **outputs) {
    tc_fn *f = tr->f;
    int i;
    for (i = 0; i < f->nout; i++) {
        if (!outputs[i]) {
            tc__fmt(f->err, sizeof f->err, "compiled function (%s:%d) left outputs[%d] NULL", f->file ? f->file : "?",
                    f->line, i);
            return TC_ERR_NULL;
        }
        if (outputs[i]->status != TC_OK) {
            tc__fmt(f->err, sizeof f->err, "%s", tc_error(outputs[i]));
            return outputs[i]->status;
        }
        if (outputs[i]->ctx != f->ctx) {
            tc__fmt(f->err, sizeof f->err, "compiled function (%s:%d): outputs[%d] belongs to another context",
                    f->file ? f->file : "?", f->line, i);
            return TC_ERR_INVALID_ARG;
        }
    }
    tr->g->nout = f->nout;
    tr->g->outputs = (int *)tc__malloc(sizeof(int) * (size_t)f->nout);
    if (!tr->g->outputs) return TC_ERR_OOM;
    for (i = 0; i < f->nout; i++)
        if ((tr->g->outputs[i] = outputs[i]->lazy ? outputs[i]->lazy - 1 : tc__trace_input(tr, outputs[i])) < 0)
            return TC_ERR_OOM;
    return TC_OK;
}

/* TC_LOGS=graph: a cached graph, printed. */
TC__FN void tc__trace_log_graph(const tc_fn *f, const tc__graph *g) {
    size_t need;
    char *txt;
    if (!(f->logs & TC__LOG_GRAPH)) return;
    need = tc__graph_print(g, NULL, 0) + 1;
    if (!(txt = (char *)tc__malloc(need))) return;
    tc__graph_print(g, txt, need);
    tc__log(f->ctx, TC_LOG_WARN, "graph of compiled function (%s:%d):\n%s", f->file ? f->file : "?", f->line, txt);
    TC_FREE(txt);
}

/* A persistent program's outputs are its own buffers, valid until its next
 * run: the call that traced gets copies, as its outputs are the caller's. */
TC__FN tc_result tc__own_outputs(tc_fn *f, tc_tensor **outputs) {
    int i;
    for (i = 0; i < f->nout; i++) {
        tc_tensor *c = tc__clone(f->ctx, outputs[i], NULL, f->file, f->line);
        if (c->status != TC_OK) {
            tc__fmt(f->err, sizeof f->err, "%s", tc_error(c));
            return tc__fn_fail(f, outputs, c->status);
        }
        outputs[i] = c;
    }
    return TC_OK;
}

/* The final segment of a trace, run for this call's results.  With breaks
 * it goes through the segment cache; without, the trace is kept as the
 * template for dynamic shapes (*rawout), passed, and becomes the entry's
 * graph (*gout) with the program built for it (*pout: the one the entry's
 * cached calls replay, so a signature compiles once). */
TC__FN tc_result tc__trace_final(tc__trace *tr, tc_tensor *const *inputs, tc_tensor **outputs, tc__graph **gout,
                                 tc__graph **rawout, tc__program **pout) {
    tc_fn *f = tr->f;
    tc__entry e;
    tc_result r;
    int i, persistent = f->mode == TC_MODE_REDUCE_OVERHEAD;
    if (tr->breaks > 0) {
        r = tc__segment_run(tr, &tr->g, outputs);
        if (r != TC_OK)
            for (i = 0; i < f->nout; i++) outputs[i] = NULL;
        return r;
    }
    if (tc__pass_dce(tr->g) < 0 || !(*rawout = tc__graph_copy(tr->g))) return TC_ERR_OOM;
    if ((r = tc__passes_run(f->ctx, f->freeze, f->decompose, &tr->g)) != TC_OK) return r;
    tc__trace_log_graph(f, tr->g);
    memset(&e, 0, sizeof e);
    e.g = tr->g;
    r = tc__replay(f, &e, inputs, outputs, persistent);
    if (r == TC_OK && persistent) r = tc__own_outputs(f, outputs);
    if (r == TC_OK) {
        *gout = tr->g;
        *pout = e.prog;
        tr->g = NULL;
    } else {
        tc__program_free(e.prog);
    }
    return r;
}

/* Traces one call: returns the new cache entry's graph in *gout with its
 * program in *pout and a copy of the graph before the passes in *rawout
 * (all NULL when the trace had breaks) and fills outputs with this call's
 * results. */
TC__FN tc_result tc__trace_call(tc_fn *f, tc_tensor *const *inputs, tc_tensor **outputs, tc__graph **gout,
                                tc__graph **rawout, tc__program **pout, tc__segcache **segs) {
    int up_;
    /* host parameters uploaded by earlier traces are not reused: a tensor
     * freed and made again at the same address is another weight (the
     * copies stay with the entries that read them) */
    for (up_ = 0; up_ < f->nup; up_++) f->up_src[up_] = NULL;
    tc_ctx *ctx = f->ctx;
    tc__trace tr;
    tc_tensor **lazy_in = (tc_tensor **)tc__malloc(sizeof(tc_tensor *) * (size_t)f->nin);
    int i, floor;
    tc_result r;
    *gout = NULL;
    *rawout = NULL;
    f->traces++;
    *pout = NULL;
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
        tc__fmt(f->err, sizeof f->err, "compiled function (%s:%d): out of memory while tracing", f->file ? f->file : "?",
                f->line);
        return tc__fn_fail(f, outputs, TC_ERR_OOM);
    }
    for (i = 0; i < f->nin; i++) tr.allin[i] = inputs[i];
    tr.nall = f->nin;
    floor = tc__scope_open(ctx); /* the trace's tensors; outputs are kept out of it */
    r = tc__trace_inputs(&tr, inputs, lazy_in);
    for (i = 0; i < f->nout; i++) outputs[i] = NULL;
    if (r == TC_OK) {
        ctx->trace_hooks = &tc__tracer;
        ctx->trace = &tr;
        f->fn(ctx, f->user, lazy_in, outputs);
        ctx->trace = NULL;
        if (tr.failed) r = tr.status;
    }
    if (r == TC_OK) r = tc__trace_outputs(&tr, outputs);
    if (r == TC_OK) r = tc__trace_final(&tr, inputs, outputs, gout, rawout, pout);
    if (r != TC_OK) { /* (a failed replay has written its errored outputs already) */
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
    tc__scope_close(ctx, floor);
    tc__poison_escaped(f);
    tc__graph_free(tr.g);
    TC_FREE(lazy_in);
    TC_FREE(tr.allin);
    return r;
}
