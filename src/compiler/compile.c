/* The compiler's entry points: tc_compile (options into a tc_fn) and
 * tc_call, a dispatcher over what a call's inputs find in the cache: a
 * cached graph to replay, a dynamic entry at a new size, a trace with
 * breaks to record again, the recompile limit (eager), or a miss (trace,
 * compile, cache). */

/* tc_compile_at's body, also the CUDA eager ops' (cuda/eager.c). */
TC__FN tc_fn *tc__compile(tc_ctx *ctx, tc_model_fn fn, void *user, const tc_compile_options *opts, tc_mode default_mode,
                          int default_fullgraph, int default_dynamic, const char *file, int line) {
    tc_fn *f;
    tc_compile_options o;
    if (!ctx || !fn) return NULL;
    f = (tc_fn *)TC_MALLOC(sizeof *f);
    if (!f) return NULL;
    memset(f, 0, sizeof *f);
    if (opts) o = *opts;
    else memset(&o, 0, sizeof o);
    f->ctx = ctx;
    f->be = &tc__cpu_backend;
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

TCDEF tc_fn *tc_compile_at(tc_ctx *ctx, tc_model_fn fn, void *user, const tc_compile_options *opts,
                           tc_mode default_mode, int default_fullgraph, int default_dynamic, const char *file, int line) {
    return tc__compile(ctx, fn, user, opts, default_mode, default_fullgraph, default_dynamic, file, line);
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
    for (i = 0; i < f->nup; i++) tc_free(f->up_dev[i]);
    TC_FREE(f->up_src);
    TC_FREE(f->up_dev);
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

/* ---- calls ------------------------------------------------------------------- */

/* What a call's inputs find in the cache: its state decides the path. */
typedef enum tc__call_state {
    TC__CALL_REPLAY,  /* an entry with a graph: run its program              */
    TC__CALL_RESIZE,  /* a dynamic entry at a new size (then replay)         */
    TC__CALL_RECORD,  /* an entry whose trace had breaks: record again       */
    TC__CALL_EAGER,   /* past the recompile limit, or uncacheable: run eagerly */
    TC__CALL_MISS     /* no entry: trace, compile and cache                  */
} tc__call_state;

TC__FN tc__call_state tc__call_state_of(const tc_fn *f, const tc__entry *e, tc_tensor *const *inputs) {
    if (e && e->g && e->dyn_in >= 0 && inputs[e->dyn_in]->shape[e->dyn_dim] != e->cur) return TC__CALL_RESIZE;
    if (e && e->g) return TC__CALL_REPLAY;
    if (e && e->segs) return TC__CALL_RECORD;
    if (e || f->nentries >= f->limit) return TC__CALL_EAGER;
    return TC__CALL_MISS;
}

/* The checks before any path: not nested in a trace, inputs concrete and of
 * this context.  Nonzero: refused (errored outputs where there are some). */
TC__FN tc_result tc__call_check(tc_fn *f, tc_tensor *const *inputs, tc_tensor **outputs) {
    tc_ctx *ctx = f->ctx;
    int i;
    if (!inputs || !outputs) {
        tc__fmt(f->err, sizeof f->err, "tc_call: inputs or outputs is NULL");
        return TC_ERR_NULL;
    }
    if (ctx->trace) {
        tc__fmt(f->err, sizeof f->err, "tc_call: calling a compiled function inside a traced one is not supported");
        return tc__fn_fail(f, outputs, TC_ERR_STATE);
    }
    for (i = 0; i < f->nin; i++) {
        if (!inputs[i] || inputs[i]->status != TC_OK || inputs[i]->ctx != ctx || inputs[i]->lazy) {
            tc__fmt(f->err, sizeof f->err, "tc_call: input %d is %s", i,
                     !inputs[i] ? "NULL" : inputs[i]->status != TC_OK ? tc_error(inputs[i])
                                         : inputs[i]->ctx != ctx      ? "from another context"
                                                                      : "a traced value");
            return tc__fn_fail(f, outputs, TC_ERR_INVALID_ARG);
        }
#ifndef TC_NO_CUDA
        /* the first call's inputs choose the device its programs run on */
        if (i == 0 && f->nentries == 0 && f->calls == 0) {
            f->be = inputs[0]->device == TC_CUDA ? &tc__cuda_backend : &tc__cpu_backend;
            /* attention has no CUDA kernel before part 2: as matmuls and a softmax */
            if (f->be == &tc__cuda_backend && f->decompose == 1) f->decompose = 2;
        }
#endif
        if (inputs[i]->device != f->be->device) {
            tc__fmt(f->err, sizeof f->err, "tc_call: input %d is on %s but the function runs on %s (its first call's inputs' "
                                           "device): tc_to moves it", i, tc__device_name(inputs[i]->device),
                    tc__device_name(f->be->device));
            return tc__fn_fail(f, outputs, TC_ERR_INVALID_ARG);
        }
    }
    return TC_OK;
}

/* Replays entry e's graph in a scope of its own (no call of the function). */
TC__FN tc_result tc__call_replay(tc_fn *f, tc__entry *e, tc_tensor *const *inputs, tc_tensor **outputs) {
    int floor = tc__scope_open(f->ctx);
    tc_result r = tc__replay(f, e, inputs, outputs, f->mode == TC_MODE_REDUCE_OVERHEAD);
    tc__hand_out(f->ctx, outputs, f->nout);
    tc__scope_close(f->ctx, floor);
    f->cached_calls++;
    return r;
}

/* A trace with breaks: records the function again; each recorded segment
 * equal to a cached one runs that segment's program. */
TC__FN tc_result tc__call_record(tc_fn *f, tc__entry *e, tc_tensor *const *inputs, tc_tensor **outputs) {
    tc__graph *g = NULL, *raw = NULL;
    tc__program *p = NULL;
    tc_result r = tc__trace_call(f, inputs, outputs, &g, &raw, &p, &e->segs);
    tc__program_free(p); /* a break-free path this time: not cached here */
    tc__graph_free(g);
    tc__graph_free(raw);
    f->recorded_calls++;
    return r;
}

/* Runs the function eagerly (past the recompile limit, or an entry that
 * could not be cached). */
TC__FN tc_result tc__call_eager(tc_fn *f, const tc__entry *e, tc_tensor *const *inputs, tc_tensor **outputs,
                                const char *why) {
    tc_ctx *ctx = f->ctx;
    tc_result r = TC_OK;
    int i, floor;
    if (!e)
        tc__log(ctx, TC_LOG_WARN, "compiled function (%s:%d) hit the recompile limit (%d); running eagerly (%s)",
                f->file ? f->file : "?", f->line, f->limit, why);
    floor = tc__scope_open(ctx);
    f->fn(ctx, f->user, inputs, outputs);
    for (i = 0; i < f->nout; i++) {
        if (!outputs[i]) outputs[i] = tc__error_tensor(ctx, r = TC_ERR_NULL, "compiled function left an output NULL");
        else if (outputs[i]->ctx != ctx) {
            tc__fmt(f->err, sizeof f->err, "compiled function (%s:%d): outputs[%d] belongs to another context",
                    f->file ? f->file : "?", f->line, i);
            outputs[i] = tc__error_tensor(ctx, r = TC_ERR_INVALID_ARG, f->err);
        } else if (outputs[i]->status != TC_OK && r == TC_OK) {
            r = outputs[i]->status;
            tc__fmt(f->err, sizeof f->err, "%s", tc_error(outputs[i]));
        }
    }
    tc__hand_out(ctx, outputs, f->nout);
    tc__scope_close(ctx, floor);
    f->eager_calls++;
    return r;
}

TCDEF tc_result tc_call(tc_fn *f, tc_tensor *const *inputs, tc_tensor **outputs) {
    tc__entry *e = NULL;
    char why[160] = "";
    tc_result r;
    int i, resized = 0;
    if (!f) return TC_ERR_NULL;
    /* first, so a refused caller (nested, or another thread) touches nothing */
    if (!tc__try_enter(&f->busy)) return TC_ERR_STATE;
    f->err[0] = 0;
    if ((r = tc__call_check(f, inputs, outputs)) != TC_OK) {
        tc__leave(&f->busy);
        return r;
    }
    f->calls++;
    for (i = 0; i < f->nentries && !e; i++)
        if (tc__guards_match(f, &f->entries[i], inputs, why, sizeof why)) e = &f->entries[i];
    if (e && f->logs & TC__LOG_GUARDS)
        tc__log(f->ctx, TC_LOG_WARN, "guards hit: entry %d of %d", (int)(e - f->entries), f->nentries);
    switch (tc__call_state_of(f, e, inputs)) {
    case TC__CALL_RESIZE:
        r = tc__dynamic_resize(f, e, inputs, outputs, &resized);
        if (r == TC_OK && resized) r = tc__call_replay(f, e, inputs, outputs);
        break;
    case TC__CALL_REPLAY: r = tc__call_replay(f, e, inputs, outputs); break;
    case TC__CALL_RECORD: r = tc__call_record(f, e, inputs, outputs); break;
    case TC__CALL_EAGER: r = tc__call_eager(f, e, inputs, outputs, why); break;
    case TC__CALL_MISS: r = tc__dynamic_miss(f, inputs, outputs, why); break;
    }
    tc__leave(&f->busy);
    return r;
}
