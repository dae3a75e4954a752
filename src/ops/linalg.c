/* Contractions on top of the blocked GEMM: matmul (torch.matmul rules) and
 * linear.  (Attention is in attention.c.) */

/* Element offsets of every batch entry of an operand with shape / strides
 * st whose leading tnb dims are batch dims (the strides may be those of a
 * converted copy), broadcast against bshape[0..nb), in row-major batch
 * order. */
TC__FN void tc__batch_offsets(const int64_t *shape, const int64_t *st, int tnb, int nb, const int64_t *bshape,
                              int64_t nbatch, int64_t *off) {
    int64_t idx[TC_MAX_DIMS] = {0}, b;
    int d;
    for (b = 0; b < nbatch; b++) {
        int64_t o = 0;
        for (d = 0; d < nb; d++) {
            int td = tnb - nb + d;
            if (td >= 0 && shape[td] != 1) o += idx[d] * st[td];
        }
        off[b] = o;
        for (d = nb - 1; d >= 0; d--) {
            if (++idx[d] < bshape[d]) break;
            idx[d] = 0;
        }
    }
}

/* Broadcasts the batch dims of up to three operands (each with `core`
 * trailing non-batch dims) into c->oshape[0..nb); returns nb or -1. */
TC__FN int tc__batch_shape(tc__call *c, tc_tensor *const *ts, const int *core, int n) {
    int i, d, nb = 0;
    for (i = 0; i < n; i++)
        if (ts[i]->ndim - core[i] > nb) nb = ts[i]->ndim - core[i];
    for (d = 0; d < nb; d++) {
        int64_t s = 1;
        for (i = 0; i < n; i++) {
            int td = ts[i]->ndim - core[i] - nb + d;
            int64_t v = td >= 0 ? ts[i]->shape[td] : 1;
            if (v == 1 || v == s) continue;
            if (s != 1) {
                tc__msg(c, TC_ERR_SHAPE, "batch dims of %s and %s are not broadcastable", tc__shp(ts[0]).s,
                        tc__shp(ts[i]).s);
                return -1;
            }
            s = v;
        }
        c->oshape[d] = s;
    }
    return nb;
}

TC__FN tc_result tc__float_inputs(tc__call *c, int n) {
    int i;
    for (i = 0; i < n; i++)
        if (c->ins[i] && !tc__is_float(c->ins[i]->dtype))
            return tc__msg(c, TC_ERR_DTYPE, "input %d must be a float type, got %s", i,
                           tc__dtype_names[c->ins[i]->dtype]);
    return TC_OK;
}

/* ---- matmul -------------------------------------------------------------------------- */

/* a.i[0..1]: 1 when a / b was 1-D (its unit dim is dropped from the result) */
TC__FN tc_result tc__shape_matmul(tc__call *c) {
    const tc_tensor *a = c->ins[0], *b = c->ins[1];
    int64_t ka, kb, m, n;
    int nb, core[2] = {2, 2};
    tc_tensor *views[2];
    tc_tensor va, vb;
    tc_result r = tc__float_inputs(c, 2);
    if (r != TC_OK) return r;
    if (a->ndim == 0 || b->ndim == 0) return tc__msg(c, TC_ERR_SHAPE, "both arguments need at least 1 dim (got %s @ %s)", tc__shp(a).s, tc__shp(b).s);
    ka = a->shape[a->ndim - 1];
    kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
    if (ka != kb) return tc__msg(c, TC_ERR_SHAPE, "inner dims differ: %s @ %s", tc__shp(a).s, tc__shp(b).s);
    m = a->ndim == 1 ? 1 : a->shape[a->ndim - 2];
    n = b->ndim == 1 ? 1 : b->shape[b->ndim - 1];
    /* batch dims: everything before the last two (1-D operands have none) */
    va = *a;
    vb = *b;
    if (a->ndim == 1) va.ndim = 2;
    if (b->ndim == 1) vb.ndim = 2;
    views[0] = &va;
    views[1] = &vb;
    nb = tc__batch_shape(c, views, core, 2);
    if (nb < 0) return TC_ERR_SHAPE;
    c->ondim = nb;
    if (a->ndim > 1) c->oshape[c->ondim++] = m;
    if (b->ndim > 1) c->oshape[c->ondim++] = n;
    c->a.i[0] = a->ndim == 1;
    c->a.i[1] = b->ndim == 1;
    c->a.i[2] = nb;
    c->odt = tc__promote(c->ins, 2);
    if (tc__numel_of(c->ondim, c->oshape) < 0) return tc__msg(c, TC_ERR_OVERFLOW, "result too large");
    return TC_OK;
}

/* One matmul of f32 operands with strides; out f32 contiguous [batch.., M, N].
 * When B has no batch dims and A's batch dims fold into M by strides, the
 * whole thing is one GEMM (the common linear-layer case). */
TC__FN tc_result tc__matmul_f32(tc__call *c, const float *ap, const int64_t *ash, const int64_t *ast, int and_,
                                const float *bp, const int64_t *bsh, const int64_t *bst, int bnd, float *cp, int nb,
                                const int64_t *bshape, const float *bias, float alpha) {
    tc__gemm g;
    int64_t nbatch = tc__numel_of(nb, bshape), *off;
    int d, fold = bnd == 2;
    memset(&g, 0, sizeof g);
    g.M = ash[and_ - 2];
    g.K = ash[and_ - 1];
    g.N = bsh[bnd - 1];
    g.A = ap;
    g.rsa = ast[and_ - 2];
    g.csa = ast[and_ - 1];
    g.B = bp;
    g.rsb = bst[bnd - 2];
    g.csb = bst[bnd - 1];
    g.C = cp;
    g.ldc = g.N;
    g.alpha = alpha;
    g.bias = bias;
    g.epi = c->epi;
    g.kc = c->blk.kc;
    g.mc_tiles = c->blk.mc_tiles;
    g.isa = (tc_isa)c->blk.isa;
    /* fold A's batch dims into M when every batch stride continues the rows */
    {
        int64_t next = g.rsa * g.M;
        for (d = and_ - 3; fold && d >= 0; d--) {
            if (ash[d] == 1) continue;
            if (ast[d] != next) fold = 0;
            next *= ash[d];
        }
    }
    if (fold && and_ - 2 == nb) {
        for (d = 0; d < and_ - 2; d++) g.M *= ash[d];
        g.pre = c->prepack;
        return tc__gemm_run(c->ctx, &g, tc__gemm_small(&g)) ? tc__msg(c, TC_ERR_OOM, "out of memory") : TC_OK;
    }
    off = (int64_t *)tc__scratch_get(c->ctx, sizeof(int64_t) * 3 * (size_t)(nbatch > 0 ? nbatch : 1));
    if (!off) return tc__msg(c, TC_ERR_OOM, "out of memory");
    tc__batch_offsets(ash, ast, and_ - 2, nb, bshape, nbatch, off);
    tc__batch_offsets(bsh, bst, bnd - 2, nb, bshape, nbatch, off + nbatch);
    for (d = 0; d < nbatch; d++) off[2 * nbatch + d] = (int64_t)d * g.M * g.N;
    d = tc__gemm_batched(c->ctx, &g, nbatch, off, off + nbatch, off + 2 * nbatch);
    tc__scratch_put(off);
    return d ? tc__msg(c, TC_ERR_OOM, "out of memory") : TC_OK;
}

/* The output buffer as f32: out itself, or scratch converted afterwards. */
TC__FN float *tc__out_f32(tc_tensor *out, void **owned) {
    *owned = NULL;
    if (out->dtype == TC_F32) return (float *)tc__base(out);
    *owned = tc__scratch_get(out->ctx, (size_t)tc__numel(out) * sizeof(float));
    return (float *)*owned;
}

TC__FN void tc__out_f32_done(tc_ctx *ctx, tc_tensor *out, void *owned) {
    int64_t st[TC_MAX_DIMS];
    if (!owned) return;
    tc__contig_strides(out->ndim, out->shape, st);
    tc__copy_into(ctx, tc__base(out), out->dtype, out->ndim, out->shape, out->strides, (const char *)owned, TC_F32,
                  out->ndim, out->shape, st);
    tc__scratch_put(owned);
}

TC__FN tc_result tc__run_matmul(tc__call *c, tc_tensor *out) {
    const tc_tensor *a = c->ins[0], *b = c->ins[1];
    int64_t ash[TC_MAX_DIMS + 1], ast[TC_MAX_DIMS + 1], bsh[TC_MAX_DIMS + 1], bst[TC_MAX_DIMS + 1];
    int and_ = a->ndim, bnd = b->ndim;
    void *ao = NULL, *bo = NULL, *oo = NULL;
    const float *ap = (const float *)tc__as_dtype(c->ctx, a, TC_F32, ast, &ao);
    const float *bp = (const float *)tc__as_dtype(c->ctx, b, TC_F32, bst, &bo);
    float *op = tc__out_f32(out, &oo);
    tc_result r;
    memcpy(ash, a->shape, sizeof a->shape);
    memcpy(bsh, b->shape, sizeof b->shape);
    if (!ap || !bp || !op) r = tc__msg(c, TC_ERR_OOM, "out of memory");
    else {
        if (and_ == 1) { /* [K] -> [1, K] */
            ash[1] = ash[0];
            ast[1] = ast[0];
            ash[0] = 1;
            ast[0] = 0;
            and_ = 2;
        }
        if (bnd == 1) { /* [K] -> [K, 1] */
            bsh[1] = 1;
            bst[1] = 0;
            bnd = 2;
        }
        r = tc__matmul_f32(c, ap, ash, ast, and_, bp, bsh, bst, bnd, op, (int)c->a.i[2], c->oshape, NULL, 1.0f);
    }
    if (r == TC_OK) tc__out_f32_done(c->ctx, out, oo);
    else tc__scratch_put(oo);
    tc__scratch_put(ao);
    tc__scratch_put(bo);
    return r;
}

TCDEF tc_tensor *tc_matmul_at(tc_ctx *ctx, tc_tensor *a, tc_tensor *b, const char *file, int line) {
    tc__call c;
    tc__call_init(&c, ctx, TC__OP_MATMUL, file, line);
    c.nin = 2;
    c.in[0] = a;
    c.in[1] = b;
    return tc__run(&c);
}

/* ---- linear ------------------------------------------------------------------------- */

TC__FN tc_result tc__shape_linear(tc__call *c) {
    const tc_tensor *x = c->ins[0], *w = c->ins[1], *b = c->ins[2];
    tc_result r = tc__float_inputs(c, 3);
    if (r != TC_OK) return r;
    if (w->ndim != 2) return tc__msg(c, TC_ERR_SHAPE, "weight must be 2-D [out, in], got %s", tc__shp(w).s);
    if (x->ndim < 1 || x->shape[x->ndim - 1] != w->shape[1])
        return tc__msg(c, TC_ERR_SHAPE, "input %s does not end in in_features %lld of weight %s", tc__shp(x).s,
                       (long long)w->shape[1], tc__shp(w).s);
    if (b && (b->ndim != 1 || b->shape[0] != w->shape[0]))
        return tc__msg(c, TC_ERR_SHAPE, "bias %s must be [%lld]", tc__shp(b).s, (long long)w->shape[0]);
    tc__shape_same(c);
    c->oshape[x->ndim - 1] = w->shape[0];
    c->odt = tc__promote(c->ins, b ? 3 : 2);
    return TC_OK;
}

TC__FN tc_result tc__run_linear(tc__call *c, tc_tensor *out) {
    const tc_tensor *x = c->ins[0], *w = c->ins[1], *b = c->ins[2];
    int64_t xsh[TC_MAX_DIMS], xst[TC_MAX_DIMS], wsh[2], wst[2], ws[TC_MAX_DIMS], bshape[TC_MAX_DIMS];
    int nd = x->ndim, d;
    void *xo = NULL, *wo = NULL, *bo = NULL, *oo = NULL;
    const float *xp = (const float *)tc__as_dtype(c->ctx, x, TC_F32, xst, &xo);
    const float *wp = (const float *)tc__as_dtype(c->ctx, w, TC_F32, ws, &wo);
    const float *bp = b ? (const float *)tc__contig_as(c->ctx, b, TC_F32, &bo) : NULL;
    float *op = tc__out_f32(out, &oo);
    tc_result r;
    if (!xp || !wp || (b && !bp) || !op) r = tc__msg(c, TC_ERR_OOM, "out of memory");
    else {
        memcpy(xsh, x->shape, sizeof x->shape);
        if (nd == 1) {
            xsh[1] = xsh[0];
            xst[1] = xst[0];
            xsh[0] = 1;
            xst[0] = 0;
            nd = 2;
        }
        /* B = W^T: B(k, j) = W[j, k] */
        wsh[0] = w->shape[1];
        wsh[1] = w->shape[0];
        wst[0] = ws[1];
        wst[1] = ws[0];
        for (d = 0; d < nd - 2; d++) bshape[d] = xsh[d];
        r = tc__matmul_f32(c, xp, xsh, xst, nd, wp, wsh, wst, 2, op, nd - 2, bshape, bp, 1.0f);
    }
    if (r == TC_OK) tc__out_f32_done(c->ctx, out, oo);
    else tc__scratch_put(oo);
    tc__scratch_put(xo);
    tc__scratch_put(wo);
    tc__scratch_put(bo);
    return r;
}

TCDEF tc_tensor *tc_linear_at(tc_ctx *ctx, tc_tensor *x, tc_tensor *weight, tc_tensor *bias, const char *file, int line) {
    tc__call c;
    tc__call_init(&c, ctx, TC__OP_LINEAR, file, line);
    c.nin = 3;
    c.in[0] = x;
    c.in[1] = weight;
    c.in[2] = bias;
    c.optional = 4;
    return tc__run(&c);
}
