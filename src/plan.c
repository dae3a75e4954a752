/* Memory planning and the program: a graph becomes a flat launch list whose
 * calls are pre-bound (shape rules already applied, inputs pointing at
 * stable tensor headers) over one arena of intermediates laid out by
 * liveness.  Running = bind the inputs, walk the list.  In reduce-overhead
 * mode the arena, the headers and the kernels' scratch persist, so a call
 * after warm-up allocates nothing; in the default mode a call allocates the
 * arena and its outputs.  The code generator plugs its kernels into the
 * same launch list. */

typedef struct tc__launch {
    int node;
    int is_view;               /* recompute the header; no kernel      */
    int threads;               /* 0: the context's; else a tuned cap    */
    double tuned_ms;           /* max-autotune: the winner's time       */
    tc__call call;             /* pre-bound; ins point at headers       */
} tc__launch;

typedef struct tc__program {
    const tc__graph *g;
    tc_tensor *hdr;            /* one header per node (not in any scope) */
    tc_tensor **ref;           /* what a node's users read: a header or a param */
    tc__storage *slice;        /* per node: its arena slice               */
    int *root;                 /* node owning the memory a node views, -1 none */
    int64_t *off;              /* arena offset per root node, -1 none     */
    int *fresh;                /* default mode: outputs allocated per call */
    size_t arena_bytes;
    void *arena_raw;
    char *arena;
    int persistent;            /* reduce-overhead                         */
    int tune;                  /* max-autotune: measure on the next run   */
    int tuned, tuned_single;   /* launches measured; of them, 1-thread wins */
    tc__scratch_cache *cache;  /* reduce-overhead: kernels' scratch       */
    tc__launch *launch;
    int nlaunch;
} tc__program;

TC__FN void tc__program_free(tc__program *p) {
    if (!p) return;
    TC_FREE(p->hdr);
    TC_FREE(p->ref);
    TC_FREE(p->slice);
    TC_FREE(p->root);
    TC_FREE(p->off);
    TC_FREE(p->fresh);
    TC_FREE(p->launch);
    TC_FREE(p->arena_raw);
    tc__cache_free(p->cache);
    TC_FREE(p);
}

/* Fills node i's header from its launch's shape rule (views: layout over the
 * base's memory, recomputed per call since inputs move). */
TC__FN void tc__view_header(tc__program *p, tc__launch *l) {
    tc_tensor *h = &p->hdr[l->node];
    tc_tensor *base = l->call.nin > 0 ? l->call.ins[0] : NULL;
    tc__optable[l->call.op].shape(&l->call);
    h->dtype = l->call.odt;
    h->ndim = l->call.ondim;
    memcpy(h->shape, l->call.oshape, sizeof h->shape);
    memcpy(h->strides, l->call.ostrides, sizeof h->strides);
    h->offset = l->call.ooffset;
    if (base) h->st = base->st;
}

/* Greedy first-fit placement of every root buffer over its live range. */
TC__FN void tc__plan_arena(tc__program *p, const int *last) {
    const tc__graph *g = p->g;
    int i, k;
    size_t top = 0;
    for (i = 0; i < g->n; i++) {
        size_t bytes, at = 0;
        int moved = 1;
        p->off[i] = -1;
        if (p->root[i] != i || p->fresh[i]) continue;
        bytes = (size_t)tc__numel_of(p->hdr[i].ndim, p->hdr[i].shape) * tc__dtype_sizes[p->hdr[i].dtype];
        bytes = (bytes + TC__ALIGN - 1) / TC__ALIGN * TC__ALIGN;
        /* slide past every buffer still live at i that overlaps [at, at+bytes) */
        while (moved) {
            moved = 0;
            for (k = 0; k < i; k++) {
                size_t kb;
                if (p->off[k] < 0 || last[k] < i) continue;
                kb = (size_t)tc__numel_of(p->hdr[k].ndim, p->hdr[k].shape) * tc__dtype_sizes[p->hdr[k].dtype];
                kb = (kb + TC__ALIGN - 1) / TC__ALIGN * TC__ALIGN;
                if (at < (size_t)p->off[k] + kb && (size_t)p->off[k] < at + bytes) {
                    at = (size_t)p->off[k] + kb;
                    moved = 1;
                }
            }
        }
        p->off[i] = (int64_t)at;
        if (at + bytes > top) top = at + bytes;
    }
    p->arena_bytes = top;
}

/* Builds the program for g traced on `inputs`.  NULL on OOM. */
TC__FN tc__program *tc__program_build(tc_ctx *ctx, const tc__graph *g, tc_tensor *const *inputs, int persistent,
                                      char *err, size_t errcap) {
    tc__program *p = (tc__program *)TC_MALLOC(sizeof *p);
    int *last = NULL, i, k, n = g->n;
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->g = g;
    p->persistent = persistent;
    p->hdr = (tc_tensor *)tc__malloc(sizeof(tc_tensor) * (size_t)n);
    p->ref = (tc_tensor **)tc__malloc(sizeof(tc_tensor *) * (size_t)n);
    p->slice = (tc__storage *)tc__malloc(sizeof(tc__storage) * (size_t)n);
    p->root = (int *)tc__malloc(sizeof(int) * (size_t)n);
    p->off = (int64_t *)tc__malloc(sizeof(int64_t) * (size_t)n);
    p->fresh = (int *)tc__malloc(sizeof(int) * (size_t)n);
    p->launch = (tc__launch *)tc__malloc(sizeof(tc__launch) * (size_t)n);
    last = (int *)tc__malloc(sizeof(int) * (size_t)n);
    if (persistent) p->cache = tc__cache_new();
    if (!p->hdr || !p->ref || !p->slice || !p->root || !p->off || !p->fresh || !p->launch || !last ||
        (persistent && !p->cache)) {
        TC_FREE(last);
        tc__program_free(p);
        return NULL;
    }
    memset(p->hdr, 0, sizeof(tc_tensor) * (size_t)n);
    memset(p->slice, 0, sizeof(tc__storage) * (size_t)n);
    memset(p->fresh, 0, sizeof(int) * (size_t)n);
    for (i = 0; i < n; i++) {
        const tc__node *nd = &g->nodes[i];
        tc_tensor *h = &p->hdr[i];
        h->ctx = ctx;
        h->is_sentinel = 1; /* owned by the program: tc_free/tc_keep ignore it */
        h->scope = -1;
        p->root[i] = -1;
        last[i] = i;
        if (nd->kind == TC__NODE_INPUT) {
            *h = *inputs[nd->a.i[0]];
            h->is_sentinel = 1;
            h->prev = h->next = NULL;
            p->ref[i] = h;
            continue;
        }
        if (nd->kind == TC__NODE_PARAM) {
            /* launches read the parameter itself; hdr[i] is a copy handed
             * out when a reduce-overhead output is the parameter, so that
             * tc_free on it cannot free the user's weight */
            *h = *nd->param;
            h->is_sentinel = 1;
            h->scope = -1;
            h->prev = h->next = NULL;
            p->ref[i] = nd->param;
            continue;
        }
        {
            tc__launch *l = &p->launch[p->nlaunch++];
            tc__call *c = &l->call;
            l->node = i;
            tc__call_init(c, ctx, nd->op, nd->file, nd->line);
            c->a = nd->a;
            c->nin = nd->nin;
            c->optional = ~0u;
            if (nd->nin > TC__MAX_IN) {
                tc__fmt(err, errcap, "op %s with %d inputs is not supported in a compiled graph yet",
                         tc__optable[nd->op].name, nd->nin);
                TC_FREE(last);
                tc__program_free(p);
                return NULL;
            }
            for (k = 0; k < nd->nin; k++) {
                int j = nd->in[k];
                c->in[k] = j >= 0 ? p->ref[j] : NULL;
                if (j >= 0 && p->root[j] >= 0 && last[p->root[j]] < i) last[p->root[j]] = i;
            }
            if (tc__optable[nd->op].shape(c) != TC_OK) {
                tc__fmt(err, errcap, "replanning %s failed: %s", tc__optable[nd->op].name, c->msg);
                TC_FREE(last);
                tc__program_free(p);
                return NULL;
            }
            l->is_view = c->is_view;
            h->dtype = c->odt;
            h->ndim = c->ondim;
            memcpy(h->shape, c->oshape, sizeof h->shape);
            p->ref[i] = h;
            if (c->is_view) {
                /* a view lives on its base's memory (or the user's, for wrap) */
                int b = nd->nin > 0 && nd->in[0] >= 0 ? nd->in[0] : -1;
                p->root[i] = b >= 0 ? p->root[b] : -1;
                if (nd->nin == 0) {
                    p->slice[i].data = c->a.ptr; /* tc_wrap: user memory */
                    p->slice[i].refs = 1;
                    h->st = &p->slice[i];
                }
            } else {
                p->root[i] = i;
                tc__contig_strides(h->ndim, h->shape, h->strides);
                p->slice[i].refs = 1;
                h->st = &p->slice[i];
            }
        }
    }
    /* outputs live to the end; in default mode they are fresh per call */
    for (i = 0; i < g->nout; i++) {
        int r = p->root[g->outputs[i]];
        if (r < 0) continue;
        last[r] = n;
        if (!persistent && r == g->outputs[i]) p->fresh[r] = 1;
    }
    tc__plan_arena(p, last);
    TC_FREE(last);
    if (persistent) {
        p->arena = (char *)tc__alloc_aligned(p->arena_bytes ? p->arena_bytes : 1, &p->arena_raw);
        if (!p->arena) {
            tc__program_free(p);
            return NULL;
        }
    }
    return p;
}

/* max-autotune's hook: the variants of one launch are measured on the real
 * data and the fastest kept.  Today a launch's variants are its thread
 * splits (all threads vs one: small kernels lose to the synchronisation);
 * the contraction templates add GEMM blockings and microkernels here. */
TC__FN tc_result tc__tune_launch(tc__program *p, tc_ctx *ctx, tc__launch *l, tc_tensor *out) {
    int caps[2], v, rep;
    double best = -1;
    caps[0] = 0;
    caps[1] = 1;
    if (ctx->num_threads <= 1) return TC_OK;
    for (v = 0; v < 2; v++) {
        double t_min = -1;
        ctx->thread_cap = caps[v];
        for (rep = 0; rep < 3; rep++) {
            double t0 = tc__now_sec(), t;
            tc_result r = tc__optable[l->call.op].run(&l->call, out);
            t = tc__now_sec() - t0;
            if (r != TC_OK) {
                ctx->thread_cap = 0;
                return r;
            }
            if (t_min < 0 || t < t_min) t_min = t;
        }
        if (best < 0 || t_min < best) {
            best = t_min;
            l->threads = caps[v];
        }
    }
    ctx->thread_cap = 0;
    l->tuned_ms = best * 1e3;
    p->tuned++;
    p->tuned_single += l->threads == 1;
    return TC_OK;
}

/* Runs the program.  Default mode: outputs[] get fresh tensors in the
 * caller's scope.  Persistent: outputs[] are the program's headers, valid
 * until the next call.  On error *err_t holds an errored tensor. */
TC__FN tc_result tc__program_run(tc__program *p, tc_ctx *ctx, tc_tensor *const *inputs, tc_tensor **outputs,
                                 char *err, size_t errcap) {
    const tc__graph *g = p->g;
    tc__scratch_cache *saved = ctx->scratch;
    tc__trace *saved_trace = ctx->trace; /* a segment runs mid-trace: compute, don't record */
    tc_tensor **fresh_t = NULL, **copies = NULL;
    tc_result r = TC_OK;
    int i, k;
    ctx->trace = NULL;
    /* bind the inputs: same shapes (guarded), new memory */
    for (i = 0; i < g->n; i++) {
        const tc__node *nd = &g->nodes[i];
        if (nd->kind == TC__NODE_INPUT) {
            const tc_tensor *in = inputs[nd->a.i[0]];
            if (in->st >= p->slice && in->st < p->slice + g->n) {
                /* last call's output fed back in (reduce-overhead): this
                 * call overwrites that memory, so read a copy */
                if (!copies && (copies = (tc_tensor **)tc__malloc(sizeof(tc_tensor *) * (size_t)g->n)) != NULL)
                    memset(copies, 0, sizeof(tc_tensor *) * (size_t)g->n);
                if (!copies) {
                    r = TC_ERR_OOM;
                    break;
                }
                copies[i] = tc_clone_at(ctx, (tc_tensor *)in, nd->file, nd->line);
                if (copies[i]->status != TC_OK) {
                    r = copies[i]->status;
                    break;
                }
                in = copies[i];
            }
            p->hdr[i].st = in->st;
            p->hdr[i].offset = in->offset;
            memcpy(p->hdr[i].strides, in->strides, sizeof in->strides);
        }
    }
    if (!p->persistent) {
        p->arena = (char *)tc__alloc_aligned(p->arena_bytes ? p->arena_bytes : 1, &p->arena_raw);
        fresh_t = (tc_tensor **)tc__malloc(sizeof(tc_tensor *) * (size_t)g->n);
        if (fresh_t) memset(fresh_t, 0, sizeof(tc_tensor *) * (size_t)g->n);
        if (!p->arena || !fresh_t) r = TC_ERR_OOM;
    }
    for (i = 0; r == TC_OK && i < g->n; i++) {
        if (p->off[i] >= 0) p->slice[i].data = p->arena + p->off[i];
        if (p->fresh[i]) {
            tc__call oc;
            tc__call_init(&oc, ctx, g->nodes[i].op, g->nodes[i].file, g->nodes[i].line);
            oc.odt = p->hdr[i].dtype;
            oc.ondim = p->hdr[i].ndim;
            memcpy(oc.oshape, p->hdr[i].shape, sizeof oc.oshape);
            fresh_t[i] = tc__alloc_out(&oc, &r);
            if (fresh_t[i]) p->hdr[i].st = fresh_t[i]->st;
        }
    }
    ctx->scratch = p->cache;
    for (k = 0; r == TC_OK && k < p->nlaunch; k++) {
        tc__launch *l = &p->launch[k];
        tc_tensor *out = &p->hdr[l->node];
        if (l->is_view) {
            tc__view_header(p, l);
            continue;
        }
        if (tc__numel(out) == 0) continue;
        if (p->tune) r = tc__tune_launch(p, ctx, l, out);
        if (r == TC_OK) {
            ctx->thread_cap = l->threads;
            r = tc__optable[l->call.op].run(&l->call, out);
            ctx->thread_cap = 0;
        }
        if (r != TC_OK) {
            const char *name = l->call.name ? l->call.name : tc__optable[l->call.op].name;
            if (l->call.file) tc__fmt(err, errcap, "tc_%s (%s:%d): %s", name, l->call.file, l->call.line, l->call.msg);
            else tc__fmt(err, errcap, "tc_%s: %s", name, l->call.msg);
        }
    }
    ctx->scratch = saved;
    for (i = 0; i < g->nout; i++) {
        int o = g->outputs[i];
        if (r != TC_OK) outputs[i] = NULL;
        else if (p->persistent) outputs[i] = g->nodes[o].kind == TC__NODE_PARAM ? &p->hdr[o] : p->ref[o];
        else if (p->fresh[o] && fresh_t[o]) {
            outputs[i] = fresh_t[o];
            fresh_t[o] = NULL; /* handed out; the same node twice gets a clone */
        } else {
            /* a view, input or parameter: the result must own its memory */
            outputs[i] = tc_clone_at(ctx, p->ref[o], g->nodes[o].file, g->nodes[o].line);
        }
    }
    ctx->trace = saved_trace;
    if (copies) {
        for (i = 0; i < g->n; i++) tc_free(copies[i]);
        TC_FREE(copies);
    }
    if (r == TC_OK) p->tune = 0;
    if (!p->persistent) {
        if (fresh_t)
            for (i = 0; i < g->n; i++)
                if (fresh_t[i]) tc_free(fresh_t[i]);
        TC_FREE(fresh_t);
        TC_FREE(p->arena_raw);
        p->arena_raw = NULL;
        p->arena = NULL;
    }
    return r;
}
