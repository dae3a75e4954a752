/* Guards and dynamic shapes: which cache entry a call's inputs match, and
 * automatic dynamic shapes.  When a recompile differs from an entry only in
 * one input dim's size, the two traces are fitted (tc__graph_fit: attributes
 * affine in that size become symbolic); a trace at a third size verifies the
 * fit, and from then on a new size instantiates the template (no trace, no
 * call of the user's function).  tc_mark_dynamic fits and verifies up front
 * by tracing copies one and two longer in the marked dim. */

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

/* Caches (g with its program p, raw) or the segments of a trace with breaks
 * for the inputs' signature; on OOM the cache just misses. */
TC__FN void tc__add_entry(tc_fn *f, tc_tensor *const *inputs, tc__graph *g, tc__graph *raw, tc__program *p,
                          tc__segcache *segs) {
    tc__entry *ne = (tc__entry *)TC_REALLOC(f->entries, sizeof(tc__entry) * (size_t)(f->nentries + 1));
    tc__in_guard *ins = (tc__in_guard *)tc__malloc(sizeof(tc__in_guard) * (size_t)f->nin);
    tc__entry *e;
    int i;
    if (ne) f->entries = ne;
    if (!ne || !ins) {
        TC_FREE(ins);
        tc__program_free(p);
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
    e->prog = p;
    e->raw = raw;
    e->segs = segs;
    e->dyn_in = e->dyn_dim = -1;
    if (g)
        for (i = 0; i < g->n; i++) e->nparams += g->nodes[i].kind == TC__NODE_PARAM;
}

/* Points entry e at graph g with its program p (NULL: built on the next
 * replay) and template raw, when given, for size s. */
TC__FN void tc__entry_set(tc__entry *e, tc__graph *g, tc__program *p, tc__graph *raw, int64_t s) {
    tc__program_free(e->prog);
    e->prog = p;
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

/* Traces the inputs with input i zero-padded by `pad` elements at the end
 * of dim d; its template (raw, before the passes) in *raw2, or NULL. */
TC__FN void tc__trace_padded(tc_fn *f, tc_tensor *const *inputs, int i, int d, int pad, tc__graph **raw2) {
    tc_ctx *ctx = f->ctx;
    tc_tensor **alt = (tc_tensor **)tc__malloc(sizeof(tc_tensor *) * (size_t)(f->nin + f->nout)), *padded;
    tc__graph *g2 = NULL;
    tc__program *p2 = NULL;
    tc__segcache *segs = NULL;
    tc__call pc;
    int k, floor;
    *raw2 = NULL;
    if (!alt) return;
    floor = tc__scope_open(ctx);
    tc__unary_call(ctx, TC__OP_PAD, inputs[i], f->file, f->line, &pc);
    pc.a.i[2 * d + 1] = pad; /* zeros after the end of dim d */
    padded = tc__run(&pc);
    for (k = 0; k < f->nin; k++) alt[k] = k == i ? padded : inputs[k];
    if (padded->status != TC_OK || tc__trace_call(f, alt, alt + f->nin, &g2, raw2, &p2, &segs) != TC_OK) {
        tc__graph_free(*raw2);
        *raw2 = NULL;
    }
    tc__program_free(p2); /* only the graph is wanted: the fit */
    tc__graph_free(g2);
    tc__segcache_free(segs);
    tc__scope_close(ctx, floor);
    TC_FREE(alt);
}

/* For a marked dim of the inputs (size s >= 2, contiguous input): traces
 * zero-padded copies of sizes s + 1 and s + 2, fits raw (size s) against
 * the first and verifies the fit on the second, so the entry is dynamic
 * and verified from the first call on: no trace at any later size.  A fit
 * that does not hold (a size used other than affinely) leaves the dim
 * static, as automatic dynamic shapes do. */
TC__FN int tc__marked_fit(tc_fn *f, tc_tensor *const *inputs, const tc__graph *raw, int *di, int *dd, tc__sym **sym,
                          int *nsym) {
    int i, d;
    for (i = 0; i < f->nin && i < 8; i++)
        for (d = 0; d < inputs[i]->ndim; d++) {
            int64_t s = inputs[i]->shape[d];
            tc__graph *raw2 = NULL, *raw3 = NULL, *inst = NULL;
            int ok;
            if (!(f->dyn_marked >> (8 * i + d) & 1) || (f->dyn_failed >> (8 * i + d) & 1) || s < 2 || !tc__contig(inputs[i]))
                continue;
            tc__trace_padded(f, inputs, i, d, 1, &raw2);
            *nsym = raw2 ? tc__graph_fit(raw, raw2, s, s + 1, sym) : -1;
            ok = *nsym >= 0;
            if (ok) tc__trace_padded(f, inputs, i, d, 2, &raw3);
            if (ok && raw3) inst = tc__graph_instantiate(raw, *sym, *nsym, s + 2);
            if (ok && inst && !tc__graph_equal(inst, raw3)) {
                tc__log(f->ctx, TC_LOG_INFO, "tc_mark_dynamic: input %d dim %d is not affine; recompiling per size", i, d);
                f->dyn_failed |= (uint64_t)1 << (8 * i + d);
            }
            if (ok && !(inst && tc__graph_equal(inst, raw3))) { /* not affine, or out of memory */
                TC_FREE(*sym);
                *sym = NULL;
                ok = 0;
            }
            tc__graph_free(raw2);
            tc__graph_free(raw3);
            tc__graph_free(inst);
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
    if (tc__passes_run(f->ctx, f->freeze, f->decompose, &g) != TC_OK) return TC_ERR_OOM;
    tc__entry_set(e, g, NULL, NULL, s);
    f->dyn_instances++;
    return TC_OK;
}

/* A dynamic entry called at a new size.  Verified: the template is
 * instantiated for it (*resized = 1; the caller replays).  Not yet: the
 * call is traced once more and the trace compared with the template's
 * instance, which verifies the fit or sends the dim back to static. */
TC__FN tc_result tc__dynamic_resize(tc_fn *f, tc__entry *e, tc_tensor *const *inputs, tc_tensor **outputs,
                                    int *resized) {
    int64_t s = inputs[e->dyn_in]->shape[e->dyn_dim];
    tc__graph *g = NULL, *raw = NULL;
    tc__program *p = NULL;
    tc__segcache *segs = NULL;
    tc_result r;
    *resized = 0;
    if (e->verified) {
        r = tc__dynamic_instantiate(f, e, s);
        *resized = r == TC_OK;
        return r == TC_OK ? r : tc__fn_fail(f, outputs, r);
    }
    r = tc__trace_call(f, inputs, outputs, &g, &raw, &p, &segs);
    tc__segcache_free(segs); /* a break now: this size just isn't cached */
    if (r == TC_OK && g && (s == e->fit_a || s == e->fit_b)) {
        /* a size the fit was made from proves nothing: keep waiting */
        tc__entry_set(e, g, p, raw, s);
    } else if (r == TC_OK && g) {
        tc__graph *inst = tc__graph_instantiate(e->raw, e->sym, e->nsym, s);
        if (inst && tc__graph_equal(inst, raw)) {
            e->verified = 1;
            tc__entry_set(e, g, p, raw, s);
        } else {
            /* not affine after all: the dim goes back to static */
            tc__log(f->ctx, TC_LOG_INFO, "automatic dynamic: input %d dim %d is not affine; recompiling per size",
                    e->dyn_in, e->dyn_dim);
            if (e->dyn_in < 8) f->dyn_failed |= (uint64_t)1 << (8 * e->dyn_in + e->dyn_dim);
            e->ins[e->dyn_in].shape[e->dyn_dim] = e->cur;
            tc__contig_strides(e->ins[e->dyn_in].ndim, e->ins[e->dyn_in].shape, e->ins[e->dyn_in].strides);
            e->dyn_in = e->dyn_dim = -1;
            TC_FREE(e->sym);
            e->sym = NULL;
            e->nsym = 0;
            f->recompiles++;
            tc__add_entry(f, inputs, g, raw, p, NULL);
        }
        tc__graph_free(inst);
    }
    f->dyn_traces++;
    return r;
}

/* A miss: traces and caches a new entry.  When one input dim's size is all
 * that differs from an entry, the two traces are fitted and that entry
 * becomes dynamic; a dim marked with tc_mark_dynamic is fitted up front. */
TC__FN tc_result tc__dynamic_miss(tc_fn *f, tc_tensor *const *inputs, tc_tensor **outputs, const char *why) {
    tc__entry *cand = NULL;
    tc__graph *g = NULL, *raw = NULL;
    tc__program *p = NULL;
    tc__segcache *segs = NULL;
    tc__sym *sym = NULL;
    tc_result r;
    int di = -1, dd = -1, i, nsym;
    for (i = 0; f->dynamic && i < f->nentries && !cand; i++)
        if (tc__size_only_miss(f, &f->entries[i], inputs, &di, &dd) && !(di < 8 && (f->dyn_failed >> (8 * di + dd) & 1)))
            cand = &f->entries[i];
    if (f->nentries > 0) {
        f->recompiles++;
        if (f->logs & TC__LOG_RECOMPILES)
            tc__log(f->ctx, TC_LOG_WARN, "recompiling function (%s:%d): %s", f->file ? f->file : "?", f->line, why);
    }
    r = tc__trace_call(f, inputs, outputs, &g, &raw, &p, &segs);
    if (r != TC_OK) return r;
    nsym = cand && g && raw ? tc__graph_fit(cand->raw, raw, cand->ins[di].shape[dd], inputs[di]->shape[dd], &sym) : -1;
    if (nsym >= 0) {
        if (f->logs & TC__LOG_RECOMPILES)
            tc__log(f->ctx, TC_LOG_WARN, "automatic dynamic: input %d dim %d (%d symbolic attributes)", di, dd, nsym);
        cand->dyn_in = di;
        cand->dyn_dim = dd;
        TC_FREE(cand->sym);
        cand->sym = sym;
        cand->nsym = nsym;
        cand->verified = 0;
        cand->fit_a = cand->ins[di].shape[dd];
        cand->fit_b = inputs[di]->shape[dd];
        cand->ins[di].shape[dd] = inputs[di]->shape[dd];
        tc__entry_set(cand, g, p, raw, inputs[di]->shape[dd]);
    } else if (g && raw && tc__marked_fit(f, inputs, raw, &di, &dd, &sym, &nsym)) {
        int n0 = f->nentries;
        tc__add_entry(f, inputs, g, raw, p, segs);
        if (f->nentries == n0 + 1) {
            tc__entry *ne = &f->entries[n0];
            ne->dyn_in = di;
            ne->dyn_dim = dd;
            ne->sym = sym;
            ne->nsym = nsym;
            ne->cur = ne->fit_a = inputs[di]->shape[dd];
            ne->fit_b = ne->cur + 1;
            ne->verified = 1; /* on size + 2, by tc__marked_fit */
        } else {
            TC_FREE(sym); /* out of memory: the entry was not added */
        }
    } else {
        tc__add_entry(f, inputs, g, raw, p, segs);
    }
    return r;
}
