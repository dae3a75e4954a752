/* Scaled-dot-product attention as one fused, flash-style kernel: for each
 * block of query rows, the scores against one block of keys at a time are
 * computed with the GEMM microkernel into a tile that stays in cache,
 * scaled, masked and folded into a running softmax (row max m, row sum l;
 * earlier partial results are rescaled by exp(m_old - m_new)), and
 * multiplied into the output accumulator with V -- the [L, S] score matrix
 * never exists in memory.  K^T and V are packed once per call into the
 * microkernel's NR-wide slivers and shared by every query block.  Causal
 * attention skips the key blocks wholly above the diagonal.  The same
 * kernel serves eager calls, compiled graphs, and the decomposed pattern
 * softmax(q @ k^T * s + mask) @ v that passes.c matches back into it.
 *
 * Work is split over (batch entry, query block) tasks; each task computes
 * its rows alone, so the result does not depend on the thread count.  The
 * exp of a score tile runs on the executor's vector exp (<= 2 ulp). */

/* ins = {q, k, v, mask?}; a.i[0] = is_causal, a.f[0] = scale (<= 0: default) */
TC__FN tc_result tc__shape_sdpa(tc__call *c) {
    tc_tensor *q = c->ins[0], *k = c->ins[1], *v = c->ins[2], *m = c->ins[3];
    tc_tensor *ts[4];
    int core[4] = {2, 2, 2, 2}, nb, d;
    tc_result r = tc__float_inputs(c, 3);
    if (r != TC_OK) return r;
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
        return tc__msg(c, TC_ERR_SHAPE, "q, k, v need at least 2 dims (got %s, %s, %s)", tc__shp(q).s, tc__shp(k).s, tc__shp(v).s);
    if (q->shape[q->ndim - 1] != k->shape[k->ndim - 1])
        return tc__msg(c, TC_ERR_SHAPE, "q %s and k %s differ in the embedding dim", tc__shp(q).s, tc__shp(k).s);
    if (k->shape[k->ndim - 2] != v->shape[v->ndim - 2])
        return tc__msg(c, TC_ERR_SHAPE, "k %s and v %s differ in the sequence dim", tc__shp(k).s, tc__shp(v).s);
    if (m && c->a.i[0]) return tc__msg(c, TC_ERR_INVALID_ARG, "pass either a mask or is_causal, not both (as PyTorch)");
    if (m && m->dtype != TC_BOOL && !tc__is_float(m->dtype))
        return tc__msg(c, TC_ERR_DTYPE, "mask must be bool or a float type, got %s", tc__dtype_names[m->dtype]);
    if (!(c->a.f[0] == c->a.f[0]) || isinf(c->a.f[0])) return tc__msg(c, TC_ERR_INVALID_ARG, "scale must be finite");
    ts[0] = q;
    ts[1] = k;
    ts[2] = v;
    nb = tc__batch_shape(c, ts, core, 3);
    if (nb < 0) return TC_ERR_SHAPE;
    if (m) {
        /* the mask broadcasts to [batch..., L, S] */
        int64_t want[TC_MAX_DIMS + 2];
        int mnd = m->ndim, wnd = nb + 2;
        for (d = 0; d < nb; d++) want[d] = c->oshape[d];
        want[nb] = q->shape[q->ndim - 2];
        want[nb + 1] = k->shape[k->ndim - 2];
        if (mnd > wnd) return tc__msg(c, TC_ERR_SHAPE, "mask %s has more dims than the scores", tc__shp(m).s);
        for (d = 0; d < mnd; d++) {
            int64_t ms = m->shape[mnd - 1 - d], ws = want[wnd - 1 - d];
            if (ms != 1 && ms != ws)
                return tc__msg(c, TC_ERR_SHAPE, "mask %s does not broadcast to the scores [..., %lld, %lld]",
                               tc__shp(m).s, (long long)want[nb], (long long)want[nb + 1]);
        }
    }
    c->ondim = nb + 2;
    c->oshape[nb] = q->shape[q->ndim - 2];
    c->oshape[nb + 1] = v->shape[v->ndim - 1];
    c->odt = tc__promote(c->ins, 3);
    c->a.i[1] = nb;
    return TC_OK;
}

/* A query block is NR * 2 queries, a key block MR * 8 keys (64 x 96 on
 * AVX-512): the transposed score tile (24 KiB) and the packs beside it
 * stay in L1/L2. */
#define TC__ATTN_QSLIVERS 2
#define TC__ATTN_KSLIVERS 8

typedef void (*tc__flash_softmax_fn)(float *st, int64_t ld, int64_t nk, float *m, float *l, float *corr);

typedef struct tc__flash {
    tc_ctx *ctx;
    tc__gemm_impl im;
    tc__flash_softmax_fn softmax;                   /* the executor level's online softmax step */
    const float *q, *k, *v;
    int64_t qrs, qcs, krs, kcs, vrs, vcs;           /* strides of the last two dims */
    const int64_t *qoff, *koff, *voff, *moff;       /* per batch entry, in elements */
    const char *mask;                               /* f32 (additive) or bool, or NULL */
    int mbool;
    int64_t mrs, mcs;                               /* mask strides over [L, S] (0: broadcast) */
    float *kp, *vp;                                 /* packed K and V, per batch entry */
    int64_t kpb, vpb;                               /* floats of each pack per batch entry */
    int64_t L, S, E, Ev, Evp;                       /* Evp: Ev rounded up to NR */
    int64_t lb, sb, nq, nkb;                        /* block sizes; blocks per batch entry */
    float scale;
    int causal;
    float *out;                                     /* [nbatch, L, Ev] contiguous */
    int failed;
} tc__flash;

/* The online softmax step in plain C (no GNU C vectors), same contract as
 * the executor's tc__vflash_softmax_. */
TC__FN void tc__flash_softmax_base(float *st, int64_t ld, int64_t nk, float *m, float *l, float *corr) {
    int64_t i, k;
    for (i = 0; i < ld; i++) {
        float mx = m[i], mb, sum = 0.0f;
        for (k = 0; k < nk; k++)
            if (st[k * ld + i] > mx) mx = st[k * ld + i];
        mb = mx == -INFINITY ? 0.0f : mx;
        for (k = 0; k < nk; k++) sum += (st[k * ld + i] = expf(st[k * ld + i] - mb));
        corr[i] = expf(m[i] - mb);
        l[i] = l[i] * corr[i] + sum;
        m[i] = mx;
    }
}

/* Packs, for task t < nbatch * nkb (batch t / nkb, key block t % nkb), the
 * block's rows of K as the GEMM A operand of the transposed scores
 * K @ Q^T, and of V as the B operand of P @ V. */
TC__FN void tc__flash_pack(void *arg, int64_t tb, int64_t te) {
    const tc__flash *f = (const tc__flash *)arg;
    int64_t t;
    for (t = tb; t < te; t++) {
        int64_t b = t / f->nkb, s0 = (t % f->nkb) * f->sb, sbk = f->S - s0 < f->sb ? f->S - s0 : f->sb;
        tc__gemm g;
        memset(&g, 0, sizeof g);
        g.A = f->k + f->koff[b];
        g.rsa = f->krs;
        g.csa = f->kcs;
        tc__pack_a(&g, f->im.mr, s0, sbk, 0, f->E, f->kp + b * f->kpb + s0 * f->E);
        g.B = f->v + f->voff[b];
        g.rsb = f->vrs;
        g.csb = f->vcs;
        tc__pack_b(&g, f->im.nr, s0, sbk, 0, f->Ev, 0, f->Evp, f->vp + b * f->vpb + s0 * f->Evp);
    }
}

/* Causal and user masks on the transposed tile st[k * ld + i]: query
 * l0 + i against key s0 + k. */
TC__FN void tc__flash_mask(const tc__flash *f, int64_t b, float *st, int64_t ld, int64_t l0, int64_t lb, int64_t s0,
                           int64_t sbk) {
    int64_t k, i;
    for (k = 0; k < sbk; k++) {
        float *row = st + k * ld;
        if (f->causal) /* keep key <= query */
            for (i = 0; i < lb && l0 + i < s0 + k; i++) row[i] = -INFINITY;
        if (f->mask) {
            int64_t off = f->moff[b] + l0 * f->mrs + (s0 + k) * f->mcs;
            if (f->mbool) {
                const unsigned char *mp = (const unsigned char *)f->mask + off;
                for (i = 0; i < lb; i++)
                    if (!mp[i * f->mrs]) row[i] = -INFINITY;
            } else {
                const float *mp = (const float *)f->mask + off;
                for (i = 0; i < lb; i++) row[i] += mp[i * f->mrs];
            }
        }
    }
}

/* Tasks [tb, te): task t is batch entry t / nq and query block t % nq in
 * zigzag order (0, nq-1, 1, nq-2, ...), so that contiguous ranges of tasks
 * carry similar work under a causal mask.  Per key block: the transposed
 * scores st = K_blk @ (Q_blk * scale)^T with the microkernel, masks, the
 * online softmax step (vectors across queries), then out += P @ V_blk with
 * P read from st as a column-major A (packing is a copy per key). */
TC__FN void tc__flash_tasks(void *arg, int64_t tb, int64_t te) {
    tc__flash *f = (tc__flash *)arg;
    const int mr_ = f->im.mr, nr_ = f->im.nr;
    /* P's pack pads the queries to whole MR slivers */
    const int64_t ld = f->lb, sbp = (f->sb + mr_ - 1) / mr_ * mr_, lbp = (ld + mr_ - 1) / mr_ * mr_;
    size_t floats = (size_t)(ld * f->E + sbp * ld + lbp * f->sb + ld * f->Evp + 3 * ld);
    float *qp = (float *)tc__scratch_get(f->ctx, sizeof(float) * floats), *st, *pp, *o, *m, *l, *corr;
    int64_t t;
    if (!qp) {
        tc__flag_raise(&f->failed);
        return;
    }
    memset(qp, 0, sizeof(float) * floats); /* the tile's padding lanes stay finite */
    st = qp + ld * f->E;
    pp = st + sbp * ld;
    o = pp + lbp * f->sb;
    m = o + ld * f->Evp;
    l = m + ld;
    corr = l + ld;
    for (t = tb; t < te; t++) {
        int64_t b = t / f->nq, u = t % f->nq, qb = u % 2 ? f->nq - 1 - u / 2 : u / 2;
        int64_t l0 = qb * f->lb, lb = f->L - l0 < f->lb ? f->L - l0 : f->lb, kend = f->S, s0, i, j, is, js;
        const float *kpb = f->kp + b * f->kpb, *vpb = f->vp + b * f->vpb;
        tc__gemm g;
        if (f->causal && l0 + lb < kend) kend = l0 + lb; /* later keys are masked for every query */
        memset(&g, 0, sizeof g);
        /* Q^T as a B operand: B(e, i) = Q[l0 + i, e], scaled once here */
        g.B = f->q + f->qoff[b];
        g.rsb = f->qcs;
        g.csb = f->qrs;
        tc__pack_b(&g, nr_, 0, f->E, l0, lb, 0, ld, qp);
        for (i = 0; i < ld * f->E; i++) qp[i] *= f->scale;
        for (i = 0; i < ld; i++) {
            m[i] = -INFINITY;
            l[i] = 0.0f;
        }
        memset(o, 0, sizeof(float) * (size_t)(ld * f->Evp));
        for (s0 = 0; s0 < kend; s0 += f->sb) {
            int64_t sbk = f->S - s0 < f->sb ? f->S - s0 : f->sb;
            for (js = 0; js < lb; js += nr_)
                for (is = 0; is < sbk; is += mr_)
                    f->im.ukr(f->E, kpb + (s0 + is) * f->E, qp + js * f->E, st + is * ld + js, ld,
                              (int)(sbk - is < mr_ ? sbk - is : mr_), (int)(lb - js < nr_ ? lb - js : nr_), 0);
            if (f->mask || (f->causal && s0 + sbk > l0 + 1)) tc__flash_mask(f, b, st, ld, l0, lb, s0, sbk);
            f->softmax(st, ld, sbk, m, l, corr);
            for (i = 0; i < lb; i++)
                if (corr[i] != 1.0f)
                    for (j = 0; j < f->Ev; j++) o[i * f->Evp + j] *= corr[i];
            /* P (queries x keys) is st read column-major */
            g.A = st;
            g.rsa = 1;
            g.csa = ld;
            tc__pack_a(&g, mr_, 0, lb, 0, sbk, pp);
            for (js = 0; js < f->Ev; js += nr_)
                for (is = 0; is < lb; is += mr_)
                    f->im.ukr(sbk, pp + is * sbk, vpb + s0 * f->Evp + js * sbk, o + is * f->Evp + js, f->Evp,
                              (int)(lb - is < mr_ ? lb - is : mr_), (int)(f->Ev - js < nr_ ? f->Ev - js : nr_), 1);
        }
        /* l = 0 only where every key was masked: 0 / 0, NaN like softmax */
        for (i = 0; i < lb; i++) {
            float *dst = f->out + (b * f->L + l0 + i) * f->Ev;
            for (j = 0; j < f->Ev; j++) dst[j] = o[i * f->Evp + j] / l[i];
        }
    }
    tc__scratch_put(qp);
}

TC__FN tc_result tc__run_sdpa(tc__call *c, tc_tensor *out) {
    const tc_tensor *q = c->ins[0], *k = c->ins[1], *v = c->ins[2], *m = c->ins[3];
    int nb = (int)c->a.i[1], d;
    int64_t L = q->shape[q->ndim - 2], S = k->shape[k->ndim - 2], E = q->shape[q->ndim - 1], Ev = v->shape[v->ndim - 1];
    int64_t nbatch = tc__numel_of(nb, c->oshape), qst[TC_MAX_DIMS], kst[TC_MAX_DIMS], vst[TC_MAX_DIMS], mst[TC_MAX_DIMS];
    void *qo = NULL, *ko = NULL, *vo = NULL, *mo = NULL, *oo = NULL, *packs = NULL;
    int64_t *offs = NULL;
    float *op;
    tc__flash f;
    tc_result r = TC_OK;
    if (nbatch == 0 || L == 0 || Ev == 0) return TC_OK;
    op = tc__out_f32(out, &oo);
    if (S == 0) { /* softmax over no keys: nothing is added up */
        if (op) memset(op, 0, sizeof(float) * (size_t)(nbatch * L * Ev));
        if (op) tc__out_f32_done(c->ctx, out, oo);
        return op ? TC_OK : tc__msg(c, TC_ERR_OOM, "out of memory");
    }
    memset(&f, 0, sizeof f);
    f.ctx = c->ctx;
    f.im = tc__gemm_impl_of(c->ctx);
    f.softmax = tc__flash_softmax_base;
#ifdef TC__HAVE_VEXEC
    if (c->ctx->isa != TC_ISA_NONE) f.softmax = tc__isa_impl_of(c->ctx->isa)->flash_softmax;
#endif
    f.q = (const float *)tc__as_dtype(c->ctx, q, TC_F32, qst, &qo);
    f.k = (const float *)tc__as_dtype(c->ctx, k, TC_F32, kst, &ko);
    f.v = (const float *)tc__as_dtype(c->ctx, v, TC_F32, vst, &vo);
    f.mask = m ? tc__as_dtype(c->ctx, m, m->dtype == TC_BOOL ? TC_BOOL : TC_F32, mst, &mo) : NULL;
    f.mbool = m && m->dtype == TC_BOOL;
    f.L = L;
    f.S = S;
    f.E = E;
    f.Ev = Ev;
    f.lb = (int64_t)f.im.nr * TC__ATTN_QSLIVERS;
    f.sb = (int64_t)f.im.mr * TC__ATTN_KSLIVERS;
    f.nq = (L + f.lb - 1) / f.lb;
    f.nkb = (S + f.sb - 1) / f.sb;
    f.Evp = (Ev + f.im.nr - 1) / f.im.nr * f.im.nr;
    f.kpb = E * ((S + f.im.mr - 1) / f.im.mr * f.im.mr);
    f.vpb = S * f.Evp;
    f.scale = (float)(c->a.f[0] > 0 ? c->a.f[0] : 1.0 / sqrt((double)(E > 0 ? E : 1)));
    f.causal = (int)c->a.i[0];
    f.out = op;
    f.qrs = qst[q->ndim - 2];
    f.qcs = qst[q->ndim - 1];
    f.krs = kst[k->ndim - 2];
    f.kcs = kst[k->ndim - 1];
    f.vrs = vst[v->ndim - 2];
    f.vcs = vst[v->ndim - 1];
    packs = tc__scratch_get(c->ctx, sizeof(float) * (size_t)(nbatch * (f.kpb + f.vpb)));
    offs = (int64_t *)tc__scratch_get(c->ctx, sizeof(int64_t) * 4 * (size_t)nbatch);
    if (!f.q || !f.k || !f.v || (m && !f.mask) || !op || !packs || !offs) r = tc__msg(c, TC_ERR_OOM, "out of memory");
    if (r == TC_OK) {
        f.kp = (float *)packs;
        f.vp = f.kp + nbatch * f.kpb;
        f.qoff = offs;
        f.koff = offs + nbatch;
        f.voff = offs + 2 * nbatch;
        tc__batch_offsets(q->shape, qst, q->ndim - 2, nb, c->oshape, nbatch, offs);
        tc__batch_offsets(k->shape, kst, k->ndim - 2, nb, c->oshape, nbatch, offs + nbatch);
        tc__batch_offsets(v->shape, vst, v->ndim - 2, nb, c->oshape, nbatch, offs + 2 * nbatch);
        if (m) {
            /* the mask's strides over [batch..., L, S], broadcast dims 0 */
            int64_t ms[TC_MAX_DIMS + 2];
            for (d = 0; d < nb + 2; d++) {
                int md = m->ndim - (nb + 2) + d;
                ms[d] = md >= 0 && m->shape[md] != 1 ? mst[md] : 0;
            }
            f.mrs = ms[nb];
            f.mcs = ms[nb + 1];
            tc__batch_offsets(c->oshape, ms, nb, nb, c->oshape, nbatch, offs + 3 * nbatch);
            f.moff = offs + 3 * nbatch;
        }
        tc__parallel_for(c->ctx, nbatch * f.nkb, nbatch * S * (E + Ev), tc__flash_pack, &f);
        tc__parallel_for(c->ctx, nbatch * f.nq, nbatch * L * S * (E + Ev) / (f.causal ? 2 : 1), tc__flash_tasks, &f);
        if (f.failed) r = tc__msg(c, TC_ERR_OOM, "out of memory");
    }
    if (r == TC_OK) tc__out_f32_done(c->ctx, out, oo);
    else tc__scratch_put(oo);
    tc__scratch_put(qo);
    tc__scratch_put(ko);
    tc__scratch_put(vo);
    tc__scratch_put(mo);
    tc__scratch_put(packs);
    tc__scratch_put(offs);
    return r;
}

TCDEF tc_tensor *tc_scaled_dot_product_attention_at(tc_ctx *ctx, tc_tensor *q, tc_tensor *k, tc_tensor *v,
                                                    tc_tensor *mask, int is_causal, double scale, const char *file,
                                                    int line) {
    tc__call c;
    tc__call_init(&c, ctx, TC__OP_SDPA, file, line);
    c.nin = 4;
    c.in[0] = q;
    c.in[1] = k;
    c.in[2] = v;
    c.in[3] = mask;
    c.optional = 8;
    c.a.i[0] = is_causal != 0;
    c.a.f[0] = scale;
    return tc__run(&c);
}
