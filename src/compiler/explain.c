/* Observability: TC_LOGS (like TORCH_LOGS), tc_explain's counts and text,
 * and the Graphviz DOT of a cached graph with its fusion groups. */


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

TCDEF size_t tc_fn_cuda_source(const tc_fn *f, int entry, char *buf, size_t cap) {
#ifndef TC_NO_CUDA
    const tc__program *p = f && entry >= 0 && entry < f->nentries ? f->entries[entry].prog : NULL;
    char *src = p ? tc__cuda_program_source(p) : NULL;
    size_t n = src ? strlen(src) : 0;
    if (buf && cap) {
        size_t m = n < cap - 1 ? n : cap - 1;
        if (src) memcpy(buf, src, m);
        buf[m] = 0;
    }
    TC_FREE(src);
    return n;
#else
    (void)f, (void)entry;
    if (buf && cap) buf[0] = 0;
    return 0;
#endif
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
    in.compiles = f->compiles;
    in.calls = f->calls;
    in.cached_calls = f->cached_calls;
    in.eager_calls = f->eager_calls;
    in.recorded_calls = f->recorded_calls;
    in.traces = f->traces;
    for (i = 0; i < f->nentries; i++) {
        const tc__graph *g = f->entries[i].g;
        const tc__segcache *sc = f->entries[i].segs;
        in.guards += f->nin * 3 + f->entries[i].nparams;
        for (k = 0; sc && k < sc->n; k++) tc__count_graph(sc->s[k].g, sc->s[k].prog, &in);
        in.dynamic_dims += f->entries[i].dyn_in >= 0;
        if (!g) continue;
        tc__count_graph(g, f->entries[i].prog, &in);
        if (f->freeze && f->entries[i].prog) in.frozen_weights += tc__program_frozen(f->entries[i].prog);
#ifndef TC_NO_CUDA
        if (f->entries[i].prog) {
            const char *why;
            int st = tc__cuda_graph_state(f->entries[i].prog, &why);
            in.cuda_graphs += st > 0;
            in.cuda_graph_failures += st < 0;
        }
#endif
        if (f->entries[i].prog && (int64_t)f->entries[i].prog->arena_bytes > in.arena_bytes)
            in.arena_bytes = (int64_t)f->entries[i].prog->arena_bytes;
    }
    in.tuned_launches = f->tune.measured;
    in.tuned_single_thread = f->tune.single;
    in.tuned_tiles = f->tune.tiles;
    in.tuned_microkernels = f->tune.isas;
    in.tuned_cached = f->tune.from_disk;
    in.tuned_dropped = f->tune.dropped;
    in.device = f->be->device;
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
    TC__W_("  graphs %d, ops %d, kernels %d (%d fused; %d op by op), guards %d, recompiles %d, traces %d, compiles %d, "
           "graph breaks %d\n",
           in.graphs, in.ops, in.kernels, in.fused_kernels, in.kernels_unfused, in.guards, in.recompiles, in.traces, in.compiles,
           in.graph_breaks);
    if (f->freeze)
        TC__W_("  freeze: %d weights frozen (packed once for the GEMM, or a conv's with its batch norm folded in)\n",
               in.frozen_weights);
    if (in.device == TC_CUDA) {
        TC__W_("  device cuda%s", f->mode == TC_MODE_REDUCE_OVERHEAD ? ": " : "\n");
        if (f->mode == TC_MODE_REDUCE_OVERHEAD)
            TC__W_("%d programs replayed as one captured CUDA graph per call, %d launched kernel by kernel\n",
                   in.cuda_graphs, in.cuda_graph_failures);
#ifndef TC_NO_CUDA
        for (i = 0; i < f->nentries; i++) {
            const char *why;
            if (f->entries[i].prog && tc__cuda_graph_state(f->entries[i].prog, &why) < 0)
                TC__W_("  entry %d: no CUDA graph: %s\n", i, why);
        }
#endif
    }
    if (f->mode == TC_MODE_MAX_AUTOTUNE)
        TC__W_("  max-autotune: %d launches measured, %d run faster on one thread, %d fused kernels on smaller tiles, "
               "%d contractions on a lower level's microkernels, %d choices from the cache%s%s (%d lost to the "
               "default when measured again)\n",
               in.tuned_launches, in.tuned_single_thread, in.tuned_tiles, in.tuned_microkernels, in.tuned_cached,
               f->tune_dir[0] ? " in " : "", f->tune_dir, in.tuned_dropped);
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
