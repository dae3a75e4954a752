/* Fusion: the scheduler that groups a graph's nodes into kernels, and the
 * lowering of each group to kernel IR (kernel.c).
 *
 * Every fusible node is either materialized (it has a buffer and a kernel
 * computes it) or inlined (computed inside each kernel that reads it).  A
 * kernel is built from one materialized root by walking its inputs through
 * inlined nodes: views become index expressions, pointwise ops become
 * instructions, an inlined reduction becomes a stage that leaves one row
 * scalar (a slot) for the later stages.  Decisions, each with its rule:
 *   - output:      graph outputs are materialized;
 *   - boundary:    inputs of contraction / opaque ops (and of views they read)
 *                  are materialized;
 *   - fuse:        a node with one consumer is inlined into it;
 *   - recompute:   a node read by several kernels is recomputed in each when
 *                  its inlined cost is at most TC__RECOMPUTE_MAX units and it
 *                  holds no reduction, else it is materialized;
 *   - broadcast:   a pointwise node broadcast over at least twice its size is
 *                  recomputed per element only when it costs < 4 units;
 *   - row:         reductions whose result is broadcast back over the reduced
 *                  dims join their consumer as stages of one row kernel; when
 *                  the kernel needs several passes over a row longer than
 *                  TC__ROW_CACHE_BYTES the reduction is materialized instead;
 *   - limits:      a kernel over the executor's limits (registers, buffers,
 *                  slots, stages) materializes the node that overflowed.
 * The fixed point is reached by rebuilding after each new materialization;
 * TC_LOGS=fusion prints every decision with its reason. */

#define TC__RECOMPUTE_MAX 8
#define TC__ROW_CACHE_BYTES (256 * 1024)

typedef struct tc__vmap {
    int nd;
    int8_t kdim[TC_MAX_DIMS];
    int64_t coef[TC_MAX_DIMS];
    int64_t off[TC_MAX_DIMS];
} tc__vmap;

/* A (node, map) pair met while building one kernel. */
typedef struct tc__fval {
    int node;
    tc__vmap m;
    int level;                 /* first stage it can be computed in         */
    unsigned reach;            /* stages whose code needs it                */
    int local, local_stage;    /* row buffer id and the stage filling it    */
    int vreg, vreg_stage;      /* SSA register in the stage being emitted   */
    int slot;                  /* a reduction's slot, -1 none               */
} tc__fval;

typedef struct tc__fslot {
    int val;                   /* the reduction's fval                      */
    int body;                  /* node reduced                              */
    tc__vmap mb;               /* its map over the domain (row dims walked) */
    int level;
} tc__fslot;

typedef struct tc__fuse {
    tc_ctx *ctx;
    const tc__graph *g;
    const tc_tensor *hdr;      /* concrete shapes per node (the program's)  */
    int n;
    char *fusible, *mat, *nofuse, *is_view_ok;
    int *kcount, *klast;       /* kernels that compute each inlined node    */
    int *group, cur;           /* the (last) kernel computing each node     */
    double *scost;             /* inlined subtree cost, -1 unknown          */
    signed char *sred;         /* inlined subtree holds a reduction         */
    int8_t (*vq)[TC_MAX_DIMS]; /* per view node and base dim: the view dim */
    int64_t (*vc)[TC_MAX_DIMS], (*vo)[TC_MAX_DIMS];
    int logs;
    /* one kernel being built */
    tc__kernel *k;
    int root, kid;
    int ndom, row_set, row_appended, nrow;
    int64_t dom[TC_MAX_DIMS];
    int8_t row[TC_MAX_DIMS];
    tc__fval *v;
    int nv, capv;
    tc__fslot slot[TC__VM_MAXSLOT];
    int nslot;
    int nvreg, stage, scalar_stage;
    int acc_vreg[TC__VM_MAXACC], acc_stage[TC__VM_MAXACC]; /* loads done this stage */
    int fail_node;             /* materialize this to make progress         */
    int oom;
    char why[160];
} tc__fuse;

/* A pointwise op's cost is its row's (optable.h); every other op costs 1. */
TC__FN double tc__op_cost(tc__op op) {
    switch (op) {
#define TC__COST_(ID, name, cost, i, f, v) case TC__OP_##ID: return cost;
        TC__POINTWISE_OPS(TC__COST_)
#undef TC__COST_
    default: return 1;
    }
}

TC__FN int tc__vload_dtype_ok(tc_dtype dt) { return dt == TC_F32 || dt == TC_BOOL || dt == TC_I32 || dt == TC_F16 || dt == TC_BF16; }

/* Ops the executor computes: f32 results (bool for comparisons) of inputs
 * it can load; reductions sum/mean/max/min.  The pointwise rows' cases are
 * generated; the others are written here (where, clone, cast, reductions). */
TC__FN int tc__node_fusible(const tc__fuse *f, int i) {
    const tc__node *nd = &f->g->nodes[i];
    const tc_tensor *h = &f->hdr[i];
    int k;
    TC__OTHER_OPS_CHECK(41);
    if (nd->kind != TC__NODE_OP || nd->nin < 1 || nd->nin > 3) return 0;
    for (k = 0; k < nd->nin; k++)
        if (nd->in[k] < 0 || !tc__vload_dtype_ok(f->hdr[nd->in[k]].dtype)) return 0;
    switch (nd->op) {
#define TC__FU_(ID, name, cost, i, f, v) case TC__OP_##ID:
        TC__UNARY_OPS(TC__FU_)
        TC__UNARY_ATTR_OPS(TC__FU_)
        return h->dtype == TC_F32 && nd->nin == 1;
        TC__BINARY_OPS(TC__FU_)
        return h->dtype == TC_F32 && nd->nin == 2;
        TC__COMPARE_OPS(TC__FU_)
        return h->dtype == TC_BOOL && nd->nin == 2 && f->hdr[nd->in[0]].dtype == TC_F32 &&
               f->hdr[nd->in[1]].dtype == TC_F32;
#undef TC__FU_
    case TC__OP_WHERE: return h->dtype == TC_F32 && nd->nin == 3 && f->hdr[nd->in[0]].dtype == TC_BOOL;
    case TC__OP_CLONE: case TC__OP_CAST: return h->dtype == TC_F32 && nd->nin == 1;
    case TC__OP_SUM: case TC__OP_MEAN: case TC__OP_MAX: case TC__OP_MIN: {
        const tc_tensor *x = &f->hdr[nd->in[0]];
        for (k = 0; k < x->ndim; k++)
            if (nd->a.i[k] && x->shape[k] == 0) return 0; /* empty reductions stay eager */
        return h->dtype == TC_F32;
    }
    default: return 0;
    }
}

TC__FN int tc__node_is_reduce(const tc__node *nd) {
    return nd->kind == TC__NODE_OP && (nd->op == TC__OP_SUM || nd->op == TC__OP_MEAN || nd->op == TC__OP_MAX ||
                                       nd->op == TC__OP_MIN);
}

/* A view the fuser can see through: each base dim is indexed by at most
 * one view dim (permute, slice, select, expand, (un)squeeze, and reshapes
 * that only add or drop size-1 dims).  Fills vq/vc/vo by probing the
 * view's shape rule with one unit stride per base dim. */
TC__FN int tc__view_probe(tc__fuse *f, int i) {
    const tc__node *nd = &f->g->nodes[i];
    const tc_tensor *vh = &f->hdr[i], *bh;
    int b = nd->nin > 0 ? nd->in[0] : -1, p, q;
    if (nd->kind != TC__NODE_OP || tc__optable[nd->op].cls != TC__CLASS_VIEW || b < 0) return 0;
    bh = &f->hdr[b];
    if (nd->op == TC__OP_RESHAPE) {
        int qi = 0;
        for (p = 0; p < bh->ndim; p++) {
            f->vq[i][p] = -1;
            f->vc[i][p] = 0;
            f->vo[i][p] = 0;
            if (bh->shape[p] == 1) continue;
            while (qi < vh->ndim && vh->shape[qi] == 1) qi++;
            if (qi >= vh->ndim || vh->shape[qi] != bh->shape[p]) return 0;
            f->vq[i][p] = (int8_t)qi++;
            f->vc[i][p] = 1;
        }
        while (qi < vh->ndim && vh->shape[qi] == 1) qi++;
        return qi == vh->ndim;
    }
    for (p = 0; p < bh->ndim; p++) {
        tc__call c;
        tc_tensor probe;
        int found = -1;
        memset(&probe, 0, sizeof probe);
        probe.dtype = bh->dtype;
        probe.ndim = bh->ndim;
        memcpy(probe.shape, bh->shape, sizeof probe.shape);
        probe.strides[p] = 1;
        tc__call_init(&c, NULL, nd->op, nd->file, nd->line);
        c.a = nd->a;
        c.nin = 1;
        c.in[0] = &probe;
        if (tc__optable[nd->op].shape(&c) != TC_OK || c.ondim != vh->ndim) return 0;
        f->vq[i][p] = -1;
        f->vc[i][p] = 0;
        f->vo[i][p] = c.ooffset;
        for (q = 0; q < c.ondim; q++) {
            if (c.ostrides[q] == 0 || c.oshape[q] <= 1) continue;
            if (found >= 0) return 0;
            found = q;
        }
        if (found >= 0) {
            f->vq[i][p] = (int8_t)found;
            f->vc[i][p] = c.ostrides[found];
        }
    }
    return 1;
}

TC__FN void tc__vmap_norm(tc__vmap *m, const tc_tensor *h) {
    int d;
    for (d = 0; d < m->nd; d++) {
        if (h->shape[d] <= 1 && m->kdim[d] >= 0) { /* a size-1 dim is index 0 */
            m->off[d] = 0;
            m->kdim[d] = -1;
        }
        if (m->kdim[d] < 0) m->coef[d] = 0;
    }
}

TC__FN int tc__vmap_eq(const tc__vmap *a, const tc__vmap *b) {
    int d;
    if (a->nd != b->nd) return 0;
    for (d = 0; d < a->nd; d++)
        if (a->kdim[d] != b->kdim[d] || a->coef[d] != b->coef[d] || a->off[d] != b->off[d]) return 0;
    return 1;
}

/* The base's map from a view's (see tc__view_probe). */
TC__FN void tc__vmap_through_view(const tc__fuse *f, int v, const tc__vmap *mv, tc__vmap *mb) {
    int b = f->g->nodes[v].in[0], p;
    mb->nd = f->hdr[b].ndim;
    for (p = 0; p < mb->nd; p++) {
        int q = f->vq[v][p];
        if (q < 0) {
            mb->kdim[p] = -1;
            mb->coef[p] = 0;
            mb->off[p] = f->vo[v][p];
        } else {
            mb->kdim[p] = mv->kdim[q];
            mb->coef[p] = mv->kdim[q] >= 0 ? f->vc[v][p] * mv->coef[q] : 0;
            mb->off[p] = f->vc[v][p] * mv->off[q] + f->vo[v][p];
        }
    }
    tc__vmap_norm(mb, &f->hdr[b]);
}

/* An elementwise op's input map: right-aligned broadcasting. */
TC__FN void tc__vmap_broadcast(const tc__fuse *f, int in, int out, const tc__vmap *mo, tc__vmap *mi) {
    const tc_tensor *hi = &f->hdr[in], *ho = &f->hdr[out];
    int p, lead = ho->ndim - hi->ndim;
    mi->nd = hi->ndim;
    for (p = 0; p < hi->ndim; p++) {
        int q = p + lead;
        if (hi->shape[p] == 1 || q < 0) {
            mi->kdim[p] = -1;
            mi->coef[p] = 0;
            mi->off[p] = 0;
        } else {
            mi->kdim[p] = mo->kdim[q];
            mi->coef[p] = mo->coef[q];
            mi->off[p] = mo->off[q];
        }
    }
    tc__vmap_norm(mi, hi);
}

TC__FN int tc__fval_get(tc__fuse *f, int node, const tc__vmap *m) {
    int i;
    for (i = 0; i < f->nv; i++)
        if (f->v[i].node == node && tc__vmap_eq(&f->v[i].m, m)) return i;
    if (f->nv == f->capv) {
        int cap = f->capv ? f->capv * 2 : 64;
        tc__fval *nv = (tc__fval *)TC_REALLOC(f->v, sizeof(tc__fval) * (size_t)cap);
        if (!nv) {
            f->oom = 1;
            return -1;
        }
        f->v = nv;
        f->capv = cap;
    }
    memset(&f->v[f->nv], 0, sizeof f->v[0]);
    f->v[f->nv].node = node;
    f->v[f->nv].m = *m;
    f->v[f->nv].level = -1;
    f->v[f->nv].local = -1;
    f->v[f->nv].vreg_stage = -1;
    f->v[f->nv].slot = -1;
    return f->nv++;
}

/* Inlined (computed by the kernel that reads it) rather than loaded. */
TC__FN int tc__inlined(const tc__fuse *f, int i) {
    const tc__node *nd = &f->g->nodes[i];
    if (nd->kind != TC__NODE_OP) return 0;
    if (tc__optable[nd->op].cls == TC__CLASS_VIEW) return f->is_view_ok[i];
    return f->fusible[i] && !f->nofuse[i] && (!f->mat[i] || i == f->root);
}

/* Cost in units per element of computing node i with everything it inlines. */
TC__FN double tc__subtree_cost(tc__fuse *f, int i) {
    const tc__node *nd = &f->g->nodes[i];
    double c = 0;
    int k;
    if (f->scost[i] >= 0) return f->scost[i];
    f->sred[i] = 0;
    if (nd->kind == TC__NODE_OP && tc__optable[nd->op].cls != TC__CLASS_VIEW) c = tc__op_cost(nd->op);
    if (tc__node_is_reduce(nd)) f->sred[i] = 1;
    for (k = 0; k < nd->nin; k++) {
        int j = nd->in[k];
        if (j < 0 || !tc__inlined(f, j) || j == f->root) continue;
        c += tc__subtree_cost(f, j);
        if (f->sred[j]) f->sred[i] = 1;
    }
    f->scost[i] = c;
    return c;
}

TC__FN int tc__fuse_fail(tc__fuse *f, int node, const char *fmt, ...) TC__PRINTF(3, 4);
TC__FN int tc__fuse_fail(tc__fuse *f, int node, const char *fmt, ...) {
    va_list ap;
    if (f->fail_node >= 0 || f->oom) return -1;
    f->fail_node = node;
    va_start(ap, fmt);
    vsnprintf(f->why, sizeof f->why, fmt, ap);
    va_end(ap);
    return -1;
}

/* Fixes the kernel's row dims for reduction node q under map mq, and fills
 * mb, the map of q's input over the domain.  -1: q cannot be a stage. */
TC__FN int tc__fuse_row(tc__fuse *f, int q, const tc__vmap *mq, tc__vmap *mb) {
    const tc__node *nd = &f->g->nodes[q];
    int u = nd->in[0], keep = (int)nd->a.i[TC__A_KEEP], p, d, nf = 0, na = 0, j = 0, qi = 0;
    const tc_tensor *hu = &f->hdr[u];
    int used[TC_MAX_DIMS] = {0};
    int8_t free_[TC_MAX_DIMS];
    int64_t asz[TC_MAX_DIMS];
    for (d = 0; d < mq->nd; d++)
        if (mq->kdim[d] >= 0) used[mq->kdim[d]] = 1;
    for (d = 0; d < f->ndom; d++)
        if (f->dom[d] > 1 && !used[d]) free_[nf++] = (int8_t)d;
    for (p = 0; p < hu->ndim; p++)
        if (nd->a.i[p] && hu->shape[p] > 1) asz[na++] = hu->shape[p];
    if (f->row_set) {
        int same = nf == f->nrow;
        for (d = 0; d < nf && same; d++) same = free_[d] == f->row[d];
        if (!same && !(nf == 0 && f->row_appended)) return tc__fuse_fail(f, q, "reduction over other dims than the kernel's row");
        if (na != f->nrow) return tc__fuse_fail(f, q, "reduction over other dims than the kernel's row");
        for (d = 0; d < na; d++)
            if (asz[d] != f->dom[f->row[d]]) return tc__fuse_fail(f, q, "reduction over other dims than the kernel's row");
        for (d = 0; d < mq->nd; d++)
            for (j = 0; j < f->nrow; j++)
                if (mq->kdim[d] == f->row[j]) return tc__fuse_fail(f, q, "reduction result varies along the row");
    } else if (nf == na && na > 0) {
        for (d = 0; d < na; d++)
            if (asz[d] != f->dom[free_[d]]) return tc__fuse_fail(f, q, "reduced dims do not match the broadcast dims");
        for (d = 0; d < na; d++) f->row[d] = free_[d];
        f->nrow = na;
        f->row_set = 1;
    } else if (nf == 0 && f->ndom + na <= TC_MAX_DIMS) {
        for (d = 0; d < na; d++) {
            f->row[d] = (int8_t)f->ndom;
            f->dom[f->ndom++] = asz[d];
        }
        f->nrow = na;
        f->row_set = f->row_appended = 1;
    } else {
        return tc__fuse_fail(f, q, "reduced dims do not match the broadcast dims");
    }
    mb->nd = hu->ndim;
    j = 0;
    for (p = 0; p < hu->ndim; p++) {
        mb->coef[p] = 0;
        mb->off[p] = 0;
        mb->kdim[p] = -1;
        if (nd->a.i[p]) {
            if (hu->shape[p] > 1) {
                mb->kdim[p] = f->row[j++];
                mb->coef[p] = 1;
            }
            if (keep) qi++;
        } else {
            mb->kdim[p] = mq->kdim[qi];
            mb->coef[p] = mq->coef[qi];
            mb->off[p] = mq->off[qi];
            qi++;
        }
    }
    tc__vmap_norm(mb, hu);
    return 0;
}

/* A reduction over dims that all have size 1 is its input, re-indexed. */
TC__FN int tc__reduce_trivial(const tc__fuse *f, int q, const tc__vmap *mq, tc__vmap *mb) {
    const tc__node *nd = &f->g->nodes[q];
    const tc_tensor *hu = &f->hdr[nd->in[0]];
    int p, qi = 0, keep = (int)nd->a.i[TC__A_KEEP];
    for (p = 0; p < hu->ndim; p++)
        if (nd->a.i[p] && hu->shape[p] != 1) return 0;
    mb->nd = hu->ndim;
    for (p = 0; p < hu->ndim; p++) {
        if (nd->a.i[p]) {
            mb->kdim[p] = -1;
            mb->coef[p] = 0;
            mb->off[p] = 0;
            qi += keep;
        } else {
            mb->kdim[p] = mq->kdim[qi];
            mb->coef[p] = mq->coef[qi];
            mb->off[p] = mq->off[qi];
            qi++;
        }
    }
    tc__vmap_norm(mb, hu);
    return 1;
}

/* Follows views and size-1 reductions from (node, m) down to the node whose
 * value it is; stops at anything not inlined. */
TC__FN void tc__fuse_resolve(const tc__fuse *f, int *node, tc__vmap *m) {
    for (;;) {
        const tc__node *nd = &f->g->nodes[*node];
        tc__vmap mb;
        if (!tc__inlined(f, *node)) return;
        if (tc__optable[nd->op].cls == TC__CLASS_VIEW) tc__vmap_through_view(f, *node, m, &mb);
        else if (!tc__node_is_reduce(nd) || !tc__reduce_trivial(f, *node, m, &mb)) return;
        *node = nd->in[0];
        *m = mb;
    }
}

/* Levels: the first stage a value can be computed in (slots it reads come
 * from earlier stages).  Creates the slots. */
TC__FN int tc__fuse_level(tc__fuse *f, int node, const tc__vmap *m0) {
    const tc__node *nd;
    tc__vmap mr = *m0, *m = &mr;
    int vi, k, lvl = 0;
    if (f->oom || f->fail_node >= 0) return 0;
    tc__fuse_resolve(f, &node, m);
    nd = &f->g->nodes[node];
    if (!tc__inlined(f, node)) return 0;
    vi = tc__fval_get(f, node, m);
    if (vi < 0) return 0;
    if (f->v[vi].level >= 0) return f->v[vi].level;
    if (tc__node_is_reduce(nd)) {
        tc__vmap mb;
        int sl;
        if (tc__fuse_row(f, node, m, &mb) != 0) return 0;
        if (f->nslot == TC__VM_MAXSLOT) {
            tc__fuse_fail(f, node, "more than %d reductions in one kernel", TC__VM_MAXSLOT);
            return 0;
        }
        sl = f->nslot++;
        f->slot[sl].val = vi;
        f->slot[sl].body = nd->in[0];
        f->slot[sl].mb = mb;
        lvl = tc__fuse_level(f, nd->in[0], &mb) + 1;
        f->slot[sl].level = lvl;
        f->v[vi].slot = sl;
    } else {
        for (k = 0; k < nd->nin; k++) {
            tc__vmap mi;
            int l;
            tc__vmap_broadcast(f, nd->in[k], node, m, &mi);
            l = tc__fuse_level(f, nd->in[k], &mi);
            if (l > lvl) lvl = l;
        }
    }
    f->v[vi].level = lvl;
    return lvl;
}

/* Marks the values stage s needs, walking down from its roots.  A value
 * an earlier stage computed and that costs 2+ units to recompute becomes a
 * row buffer (filled by that stage) and the walk stops there, so only the
 * frontier between stages is kept. */
TC__FN void tc__fuse_reach(tc__fuse *f, int node, const tc__vmap *m0, int s, int64_t rowlen) {
    const tc__node *nd;
    tc__vmap mr = *m0, *m = &mr;
    int vi, k;
    if (f->oom) return;
    tc__fuse_resolve(f, &node, m);
    nd = &f->g->nodes[node];
    if (!tc__inlined(f, node)) return;
    vi = tc__fval_get(f, node, m);
    if (vi < 0 || (f->v[vi].reach & (1u << s))) return;
    if (f->v[vi].local >= 0) return;
    if (f->v[vi].reach && f->v[vi].slot < 0 && tc__subtree_cost(f, node) >= 2 && f->k->nlocal < TC__VM_MAXLOCAL &&
        rowlen * (int64_t)sizeof(float) * (f->k->nlocal + 1) <= 4 * TC__ROW_CACHE_BYTES) {
        int first = 0;
        while (!(f->v[vi].reach & (1u << first))) first++;
        f->v[vi].local = f->k->nlocal++;
        f->v[vi].local_stage = first;
        return;
    }
    f->v[vi].reach |= 1u << s;
    if (f->v[vi].slot >= 0) return;
    for (k = 0; k < nd->nin; k++) {
        tc__vmap mi;
        tc__vmap_broadcast(f, nd->in[k], node, m, &mi);
        tc__fuse_reach(f, nd->in[k], &mi, s, rowlen);
    }
}

TC__FN int tc__fuse_access(tc__fuse *f, int node, const tc__vmap *m, int store) {
    tc__kernel *k = f->k;
    int i, d;
    for (i = 0; i < k->nacc; i++) {
        tc__kaccess *a = &k->acc[i];
        if (a->node != node || a->store != store || a->ndim != m->nd) continue;
        for (d = 0; d < m->nd; d++)
            if (a->kdim[d] != m->kdim[d] || a->coef[d] != m->coef[d] || a->off[d] != m->off[d]) break;
        if (d == m->nd) return i;
    }
    if (k->nacc == TC__VM_MAXACC) return tc__fuse_fail(f, f->root, "more than %d buffers", TC__VM_MAXACC);
    i = k->nacc++;
    memset(&k->acc[i], 0, sizeof k->acc[i]);
    k->acc[i].node = node;
    k->acc[i].store = store;
    k->acc[i].ndim = m->nd;
    for (d = 0; d < m->nd; d++) {
        k->acc[i].kdim[d] = m->kdim[d];
        k->acc[i].coef[d] = m->coef[d];
        k->acc[i].off[d] = m->off[d];
    }
    return i;
}

TC__FN int tc__fuse_ins(tc__fuse *f, int op, int a, int b, int c, float f0, float f1) {
    int dst = f->nvreg++;
    if (tc__kernel_emit(f->k, op, dst, a, b, c, f0, f1) != 0) {
        f->oom = 1;
        return -1;
    }
    return dst;
}

/* Emits the code computing (node, m) in the current stage; its register. */
TC__FN int tc__fuse_emit(tc__fuse *f, int node, const tc__vmap *m0) {
    const tc__node *nd;
    tc__vmap mr = *m0, *m = &mr;
    int vi, r = -1, k, in[3] = {-1, -1, -1};
    if (f->oom || f->fail_node >= 0) return -1;
    tc__fuse_resolve(f, &node, m);
    nd = &f->g->nodes[node];
    /* an f32 fill is an immediate (other dtypes round the value: loaded) */
    if (nd->kind == TC__NODE_OP && nd->op == TC__OP_FULL && nd->nin == 0 && f->hdr[node].dtype == TC_F32)
        return tc__fuse_ins(f, TC__V_CONST, -1, -1, -1, (float)nd->a.f[0], 0);
    if (!tc__inlined(f, node)) {
        int a = tc__fuse_access(f, node, m, 0);
        if (a < 0) return -1;
        if (f->acc_stage[a] != f->stage) { /* one load per buffer and stage */
            f->acc_vreg[a] = tc__fuse_ins(f, TC__V_LOAD, a, -1, -1, 0, 0);
            f->acc_stage[a] = f->stage;
        }
        return f->acc_vreg[a];
    }
    vi = tc__fval_get(f, node, m);
    if (vi < 0) return -1;
    if (f->v[vi].vreg_stage == f->stage) return f->v[vi].vreg;
    if (f->v[vi].local >= 0 && f->v[vi].local_stage < f->stage && !f->scalar_stage) {
        r = tc__fuse_ins(f, TC__V_LOADL, f->v[vi].local, -1, -1, 0, 0);
    } else if (f->v[vi].slot >= 0) {
        r = tc__fuse_ins(f, TC__V_SLOT, f->v[vi].slot, -1, -1, 0, 0);
    } else {
        int64_t dn = 1, vn = tc__numel_of(f->hdr[node].ndim, f->hdr[node].shape);
        for (k = 0; k < f->ndom; k++) dn *= f->dom[k];
        if (node != f->root && vn * 2 <= dn && tc__subtree_cost(f, node) >= 4 && !f->sred[node])
            return tc__fuse_fail(f, node, "broadcast %lldx: cheaper to materialize than to recompute per element",
                                 (long long)(vn ? dn / vn : 0));
        for (k = 0; k < nd->nin; k++) {
            tc__vmap mi;
            tc__vmap_broadcast(f, nd->in[k], node, m, &mi);
            in[k] = tc__fuse_emit(f, nd->in[k], &mi);
            if (in[k] < 0) return -1;
        }
        if (f->klast[node] != f->kid) {
            f->klast[node] = f->kid;
            f->kcount[node]++;
            if (f->group) f->group[node] = f->cur;
            f->k->nodes++;
        }
        f->k->cost += tc__op_cost(nd->op);
        r = tc__fuse_ins(f, nd->op, in[0], in[1], in[2], (float)nd->a.f[0], (float)nd->a.f[1]);
    }
    if (r < 0) return -1;
    if (f->v[vi].local >= 0 && f->v[vi].local_stage == f->stage && !f->scalar_stage)
        if (tc__kernel_emit(f->k, TC__V_STOREL, -1, f->v[vi].local, r, -1, 0, 0) != 0) f->oom = 1;
    f->v[vi].vreg = r;
    f->v[vi].vreg_stage = f->stage;
    return r;
}

/* Maps SSA registers of code[begin, end) to at most TC__VM_MAXREG tiles. */
TC__FN int tc__fuse_regalloc(tc__fuse *f, int begin, int end) {
    tc__kernel *k = f->k;
    int *last = NULL, *phys = NULL, i, nv = f->nvreg, free_[TC__VM_MAXREG], nfree = 0, top = 0;
    if (nv == 0) return 0;
    last = (int *)tc__malloc(sizeof(int) * (size_t)nv);
    phys = (int *)tc__malloc(sizeof(int) * (size_t)nv);
    if (!last || !phys) {
        TC_FREE(last);
        TC_FREE(phys);
        f->oom = 1;
        return -1;
    }
    for (i = 0; i < nv; i++) last[i] = -1;
    for (i = begin; i < end; i++) {
        int16_t *src[5];
        int j, ns = tc__vins_srcs(&k->code[i], src);
        for (j = 0; j < ns; j++) last[*src[j]] = i;
    }
    for (i = begin; i < end; i++) {
        tc__vins *v = &k->code[i];
        int16_t *src[5];
        int j, srcs[5], ns = tc__vins_srcs(v, src);
        /* rename sources, then free those dying here before picking dst */
        for (j = 0; j < ns; j++) {
            srcs[j] = *src[j];
            *src[j] = (int16_t)phys[srcs[j]];
        }
        for (j = 0; j < ns; j++) {
            int dup = 0, t;
            for (t = 0; t < j; t++) dup |= srcs[t] == srcs[j];
            if (!dup && last[srcs[j]] == i) free_[nfree++] = phys[srcs[j]];
        }
        if (v->dst >= 0) {
            int d = v->dst, p;
            if (nfree) p = free_[--nfree];
            else if (top < TC__VM_MAXREG) p = top++;
            else {
                TC_FREE(last);
                TC_FREE(phys);
                return tc__fuse_fail(f, f->root, "more than %d live values", TC__VM_MAXREG);
            }
            phys[d] = p;
            v->dst = (int16_t)p;
            if (last[d] < 0) free_[nfree++] = p; /* never read */
        }
    }
    if (top > k->nreg) k->nreg = top;
    TC_FREE(last);
    TC_FREE(phys);
    return 0;
}

TC__FN int tc__fuse_stage_begin(tc__fuse *f, int scalar) {
    tc__kstage *st;
    if (f->k->nstage == TC__VM_MAXSTAGE) return tc__fuse_fail(f, f->root, "more than %d stages", TC__VM_MAXSTAGE);
    st = &f->k->stage[f->k->nstage];
    st->begin = f->k->ncode;
    st->scalar = scalar;
    st->sums = 0;
    f->scalar_stage = scalar;
    f->nvreg = 0;
    return 0;
}

TC__FN int tc__fuse_stage_end(tc__fuse *f) {
    tc__kstage *st = &f->k->stage[f->k->nstage];
    int i;
    if (f->oom || f->fail_node >= 0) return -1;
    if (tc__kernel_simplify(f->k, st->begin, &f->nvreg) != 0) {
        f->oom = 1;
        return -1;
    }
    st->end = f->k->ncode;
    for (i = st->begin; i < st->end; i++)
        st->sums |= f->k->code[i].op == TC__V_ACC && TC__COMB_IS_SUM(f->k->code[i].c);
    if (tc__fuse_regalloc(f, st->begin, st->end) != 0) return -1;
    tc__kernel_mark_fusions(f->k->code, st->begin, st->end);
    f->k->nstage++;
    f->stage++;
    return 0;
}

/* Builds the kernel computing materialized node root.  0 ok; -1 with
 * fail_node set (or oom). */
TC__FN int tc__fuse_build(tc__fuse *f, int root, tc__kernel *k) {
    const tc_tensor *h = &f->hdr[root];
    tc__vmap id;
    int d, s, i, lroot, full, nrowstage, perm[TC_MAX_DIMS], inv[TC_MAX_DIMS], np = 0;
    int64_t rowlen = 1;
    memset(k, 0, sizeof *k);
    f->k = k;
    f->root = root;
    f->nv = 0;
    f->nslot = 0;
    f->stage = 0;
    f->row_set = f->row_appended = f->nrow = 0;
    for (d = 0; d < TC__VM_MAXACC; d++) f->acc_stage[d] = -1;
    f->ndom = h->ndim;
    for (d = 0; d < h->ndim; d++) f->dom[d] = h->shape[d];
    id.nd = h->ndim;
    for (d = 0; d < h->ndim; d++) {
        id.kdim[d] = (int8_t)d;
        id.coef[d] = 1;
        id.off[d] = 0;
    }
    tc__vmap_norm(&id, h);
    k->root = root;
    lroot = tc__fuse_level(f, root, &id);
    if (f->oom || f->fail_node >= 0) return -1;
    for (d = 0; d < f->nrow; d++) rowlen *= f->dom[f->row[d]];
    /* the root is stored over the row when its map walks the row dims */
    full = 0;
    for (d = 0; d < id.nd; d++)
        for (i = 0; i < f->nrow; i++) full |= id.kdim[d] == f->row[i];
    if (!f->row_set) full = 1;
    nrowstage = lroot + (full ? 1 : 0);
    if (nrowstage > 1 && rowlen * (int64_t)sizeof(float) > TC__ROW_CACHE_BYTES) {
        int worst = -1;
        /* the deepest reduction other than the root itself goes to memory */
        for (s = 0; s < f->nslot; s++)
            if (f->v[f->slot[s].val].node != root && (worst < 0 || f->slot[s].level > f->slot[worst].level)) worst = s;
        if (worst < 0) worst = 0;
        return tc__fuse_fail(f, f->v[f->slot[worst].val].node,
                             "row of %lld floats is larger than the cache: %d passes would re-read memory",
                             (long long)rowlen, nrowstage);
    }
    if (nrowstage + 1 > TC__VM_MAXSTAGE) return tc__fuse_fail(f, f->v[f->slot[0].val].node, "too many stages");
    /* which values several row stages need: kept in row buffers */
    for (s = 0; s < lroot; s++)
        for (i = 0; i < f->nslot; i++)
            if (f->slot[i].level == s + 1) tc__fuse_reach(f, f->slot[i].body, &f->slot[i].mb, s, rowlen);
    if (full) tc__fuse_reach(f, root, &id, lroot, rowlen);
    /* code: one stage per slot level, then the root */
    f->kid++;
    for (s = 0; s < lroot; s++) {
        if (tc__fuse_stage_begin(f, 0) != 0) return -1;
        for (i = 0; i < f->nslot; i++) {
            const tc__node *q = &f->g->nodes[f->v[f->slot[i].val].node];
            int r;
            if (f->slot[i].level != s + 1) continue;
            r = tc__fuse_emit(f, f->slot[i].body, &f->slot[i].mb);
            if (r < 0) return -1;
            k->slot_comb[i] = q->op == TC__OP_MAX ? TC__COMB_MAX : q->op == TC__OP_MIN ? TC__COMB_MIN : TC__COMB_SUM;
            k->slot_scale[i] = 1.0f;
            if (q->op == TC__OP_MEAN) k->slot_scale[i] = (float)(1.0 / (double)rowlen);
            if (f->klast[f->v[f->slot[i].val].node] != f->kid) {
                f->klast[f->v[f->slot[i].val].node] = f->kid;
                f->kcount[f->v[f->slot[i].val].node]++;
                if (f->group) f->group[f->v[f->slot[i].val].node] = f->cur;
                k->nodes++;
            }
            if (tc__kernel_emit(k, TC__V_ACC, -1, i, r, k->slot_comb[i], 0, 0) != 0) f->oom = 1;
        }
        if (tc__fuse_stage_end(f) != 0) return -1;
    }
    if (tc__fuse_stage_begin(f, !full) != 0) return -1;
    {
        int r = tc__fuse_emit(f, root, &id), a;
        if (r < 0) return -1;
        a = tc__fuse_access(f, root, &id, 1);
        if (a < 0) return -1;
        if (tc__kernel_emit(k, TC__V_STORE, -1, a, r, -1, 0, 0) != 0) f->oom = 1;
    }
    if (tc__fuse_stage_end(f) != 0) return -1;
    tc__kernel_share_locals(k);
    k->nslot = f->nslot;
    /* the domain: outer dims first, row dims last */
    for (d = 0; d < f->ndom; d++) {
        int in_row = 0;
        for (i = 0; i < f->nrow; i++) in_row |= f->row[i] == d;
        if (!in_row) perm[np++] = d;
    }
    k->row0 = np;
    for (i = 0; i < f->nrow; i++) perm[np++] = f->row[i];
    for (d = 0; d < np; d++) inv[perm[d]] = d;
    k->ndim = np;
    for (d = 0; d < np; d++) k->shape[d] = f->dom[perm[d]];
    for (i = 0; i < k->nacc; i++)
        for (d = 0; d < k->acc[i].ndim; d++)
            if (k->acc[i].kdim[d] >= 0) k->acc[i].kdim[d] = (int8_t)inv[k->acc[i].kdim[d]];
    if (k->ndim == 0) { /* a 0-d result: one element */
        k->ndim = 1;
        k->shape[0] = 1;
        k->row0 = 1;
    }
    return 0;
}

/* The result of fusing one graph. */
typedef struct tc__fusion {
    tc__kernel *k;
    int nk;
    int *kernel_of;            /* per node: the kernel it roots, -1 none     */
    int *group;                /* per node: a kernel computing it, -1 none   */
    char *inl;                 /* per node: computed inside kernels only     */
} tc__fusion;

TC__FN void tc__fusion_free(tc__fusion *fu) {
    int i;
    for (i = 0; i < fu->nk; i++) tc__kernel_free(&fu->k[i]);
    TC_FREE(fu->k);
    TC_FREE(fu->kernel_of);
    TC_FREE(fu->group);
    TC_FREE(fu->inl);
    memset(fu, 0, sizeof *fu);
}

/* Materializes the memory a hard consumer reads: through views to the base. */
TC__FN void tc__fuse_hard(tc__fuse *f, int i) {
    while (i >= 0 && f->g->nodes[i].kind == TC__NODE_OP && tc__optable[f->g->nodes[i].op].cls == TC__CLASS_VIEW &&
           f->g->nodes[i].nin > 0)
        i = f->g->nodes[i].in[0];
    if (i >= 0) f->mat[i] = 1;
}

TC__FN void tc__fuse_mark_hard(tc__fuse *f) {
    const tc__graph *g = f->g;
    int i, k;
    for (i = 0; i < g->nout; i++) tc__fuse_hard(f, g->outputs[i]);
    for (i = 0; i < g->n; i++) {
        const tc__node *nd = &g->nodes[i];
        int soft = nd->kind == TC__NODE_OP && ((f->fusible[i] && !f->nofuse[i]) || f->is_view_ok[i]);
        if (soft) continue;
        for (k = 0; k < nd->nin; k++)
            if (nd->in[k] >= 0) tc__fuse_hard(f, nd->in[k]);
    }
}

TC__FN void tc__fuse_log(tc__fuse *f, int node, const char *what) {
    const tc__node *nd = &f->g->nodes[node];
    if (!(f->logs & 1)) return;
    tc__log(f->ctx, TC_LOG_WARN, "fusion: %%%d %s (%s:%d): %s: %s", node, tc__optable[nd->op].name,
            nd->file ? nd->file : "?", nd->line, what, f->why);
}

/* One round of grouping: every materialized fusible node's kernel built,
 * then the recompute rule.  0: done; 1: a node was materialized or left
 * unfused (decisions logged), go again; -1: out of memory. */
TC__FN int tc__fuse_round(tc__fuse *f, tc__fusion *out) {
    int n = f->n, i, again = 0;
    for (i = 0; i < out->nk; i++) tc__kernel_free(&out->k[i]);
    out->nk = 0;
    tc__fuse_mark_hard(f);
    for (i = 0; i < n; i++) {
        f->kcount[i] = 0;
        f->klast[i] = -1;
        f->scost[i] = -1;
        out->kernel_of[i] = -1;
        out->group[i] = -1;
    }
    for (i = 0; i < n; i++) {
        int fn;
        if (!f->fusible[i] || f->nofuse[i] || !f->mat[i]) continue;
        f->fail_node = -1;
        f->why[0] = 0;
        f->cur = out->nk;
        if (tc__fuse_build(f, i, &out->k[out->nk]) == 0) {
            out->kernel_of[i] = out->nk;
            out->group[i] = out->nk++;
            continue;
        }
        tc__kernel_free(&out->k[out->nk]); /* the failed kernel's code so far */
        memset(&out->k[out->nk], 0, sizeof out->k[0]);
        if (f->oom) return -1;
        fn = f->fail_node;
        if (fn < 0 || fn == i || !f->fusible[fn] || f->mat[fn]) {
            f->nofuse[i] = 1; /* runs as its own eager op */
            tc__fuse_log(f, i, "left unfused");
        } else {
            f->mat[fn] = 1;
            tc__fuse_log(f, fn, "materialized");
        }
        return 1;
    }
    /* recompute rule: a node computed by several kernels */
    for (i = 0; i < n; i++) {
        double c;
        if (f->kcount[i] < 2) continue;
        f->root = -1;
        c = tc__subtree_cost(f, i);
        if (f->sred[i] || c > TC__RECOMPUTE_MAX) {
            f->mat[i] = 1;
            snprintf(f->why, sizeof f->why, "read by %d kernels and recomputing costs %g units%s (limit %d)", f->kcount[i],
                     c, f->sred[i] ? " with a reduction" : "", TC__RECOMPUTE_MAX);
            tc__fuse_log(f, i, "materialized");
            again = 1;
        }
    }
    return again;
}

/* After the last round: which nodes are inlined (computed inside the
 * kernels that read them, no memory of their own), and the kernels logged. */
TC__FN void tc__fuse_inlined(const tc__fuse *f, tc__fusion *out) {
    const tc__graph *g = f->g;
    int i;
    for (i = 0; i < f->n; i++) {
        const tc__node *nd = &g->nodes[i];
        out->inl[i] = nd->kind == TC__NODE_OP && f->fusible[i] && !f->nofuse[i] && !f->mat[i];
    }
    /* views over inlined values have no memory of their own */
    for (i = 0; i < f->n; i++) {
        const tc__node *nd = &g->nodes[i];
        if (nd->kind == TC__NODE_OP && tc__optable[nd->op].cls == TC__CLASS_VIEW && nd->nin > 0 && nd->in[0] >= 0 &&
            out->inl[nd->in[0]])
            out->inl[i] = 1;
    }
    if (f->logs & 1)
        for (i = 0; i < out->nk; i++) {
            const tc__kernel *k = &out->k[i];
            tc__log(f->ctx, TC_LOG_WARN, "fusion: kernel %d computes %%%d %s: %d ops, %d stages, %d reductions, %d row buffers",
                    i, k->root, tc__optable[g->nodes[k->root].op].name, k->nodes, k->nstage, k->nslot, k->nlocal);
        }
}

/* Groups g into kernels.  hdr: the concrete header of every node.  logs:
 * bit 0 decisions, bit 1 the kernels' code.  0 ok (out filled), 1 no fusion
 * possible (out empty), -1 OOM.  Each round builds the kernels of the
 * materialized nodes; a failure materializes a node or leaves one unfused,
 * and the rounds go on until one builds every kernel. */
TC__FN int tc__fuse_graph(tc_ctx *ctx, const tc__graph *g, const tc_tensor *hdr, int logs, tc__fusion *out) {
    tc__fuse f;
    int n = g->n, i, iter, rc = 1;
    size_t z = (size_t)(n ? n : 1);
    memset(out, 0, sizeof *out);
    memset(&f, 0, sizeof f);
    f.ctx = ctx;
    f.g = g;
    f.hdr = hdr;
    f.n = n;
    f.logs = logs;
    f.fusible = (char *)tc__malloc(z);
    f.mat = (char *)tc__malloc(z);
    f.nofuse = (char *)tc__malloc(z);
    f.is_view_ok = (char *)tc__malloc(z);
    f.kcount = (int *)tc__malloc(sizeof(int) * z);
    f.klast = (int *)tc__malloc(sizeof(int) * z);
    f.scost = (double *)tc__malloc(sizeof(double) * z);
    f.sred = (signed char *)tc__malloc(z);
    f.vq = (int8_t(*)[TC_MAX_DIMS])tc__malloc(sizeof *f.vq * z);
    f.vc = (int64_t(*)[TC_MAX_DIMS])tc__malloc(sizeof *f.vc * z);
    f.vo = (int64_t(*)[TC_MAX_DIMS])tc__malloc(sizeof *f.vo * z);
    out->kernel_of = (int *)tc__malloc(sizeof(int) * z);
    out->inl = (char *)tc__malloc(z);
    out->group = (int *)tc__malloc(sizeof(int) * z);
    f.group = out->group;
    out->k = (tc__kernel *)tc__malloc(sizeof(tc__kernel) * z);
    if (!f.fusible || !f.mat || !f.nofuse || !f.is_view_ok || !f.kcount || !f.klast || !f.scost || !f.sred || !f.vq ||
        !f.vc || !f.vo || !out->kernel_of || !out->inl || !out->group || !out->k) {
        rc = -1;
    } else {
        memset(out->k, 0, sizeof(tc__kernel) * z);
        memset(f.nofuse, 0, z);
        memset(f.mat, 0, z);
        for (i = 0; i < n; i++) {
            f.fusible[i] = (char)tc__node_fusible(&f, i);
            f.is_view_ok[i] = (char)tc__view_probe(&f, i);
        }
        for (iter = 0; iter < 4 * n + 16 && rc == 1; iter++) rc = tc__fuse_round(&f, out);
        if (rc == 0) tc__fuse_inlined(&f, out);
    }
    if (rc != 0) tc__fusion_free(out);
    TC_FREE(f.fusible);
    TC_FREE(f.mat);
    TC_FREE(f.nofuse);
    TC_FREE(f.is_view_ok);
    TC_FREE(f.kcount);
    TC_FREE(f.klast);
    TC_FREE(f.scost);
    TC_FREE(f.sred);
    TC_FREE(f.vq);
    TC_FREE(f.vc);
    TC_FREE(f.vo);
    TC_FREE(f.v);
    return rc;
}
