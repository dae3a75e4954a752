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
 *                  slots, stages) materializes the node that overflowed; a
 *                  stage past its registers' range is split along the kernel
 *                  (tc__fuse_split);
 *   - bound:       a region no kernel could hold (twice the limits) is split
 *                  before the kernels are built (tc__fuse_bound).
 * The fixed point is reached by rebuilding after each new materialization;
 * TC_LOGS=fusion prints every decision with its reason.
 *
 * Cost: a decision rebuilds only the kernels whose inlined region holds the
 * node it changed (found by walking up from that node to the kernels' roots),
 * in the order the rounds would, so the decisions and kernels are those of
 * rebuilding every kernel per round; the walks over a kernel's region use
 * explicit stacks, never the C stack, so a graph of any length compiles on
 * a small thread stack. */

#define TC__RECOMPUTE_MAX 8
/* SSA values plus four per instruction in one stage (tc__fuse_ssa_full) */
#define TC__VM_MAXSSA 32000
/* Values a kernel can hold: each costs at least five of a stage's
 * TC__VM_MAXSSA in some stage, and there are TC__VM_MAXSTAGE stages; a
 * region walked past this many is split where the walk stopped. */
#define TC__FUSE_MAXVALS (TC__VM_MAXSTAGE * TC__VM_MAXSSA / 5)
/* A stage past its registers' range is split every this many values along
 * the kernel's walk (each value costs at most about 20 of TC__VM_MAXSSA,
 * so a piece fits): one decision, not one per range's worth. */
#define TC__FUSE_SPLIT 1024
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
    int next;                  /* the next value in its hash bucket, -1 end */
} tc__fval;

/* One step of a walk over a kernel's region (tc__fuse_level, _reach,
 * _emit): the walks keep their own stack, so their depth is the graph's,
 * not the C stack's. */
typedef struct tc__fstep {
    int node, vi, k, state, acc, sl;
    int in[3];
    tc__vmap m;
} tc__fstep;

/* A built kernel kept for its root while nothing in its region changes:
 * the kernel, the nodes it computes (each once), then the nodes whose
 * inlined cost it evaluated (tc__subtree_cost). */
typedef struct tc__frec {
    tc__kernel k;
    int ncomp, nmemo;
    int *list;                 /* ncomp computed nodes, then nmemo         */
} tc__frec;

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
    int *kcount, *klast;       /* kernels that compute each inlined node;
                                  klast: the last build that counted it    */
    double *scost;             /* inlined subtree cost, when cstamp = build */
    signed char *sred;         /* inlined subtree holds a reduction         */
    int *cstamp;
    int8_t (*vq)[TC_MAX_DIMS]; /* per view node and base dim: the view dim */
    int64_t (*vc)[TC_MAX_DIMS], (*vo)[TC_MAX_DIMS];
    int logs;
    /* the rounds, kept incrementally (tc__fuse_graph) */
    int *use_start, *use;      /* consumers of each node (CSR)              */
    tc__frec **rec;            /* per root: its kernel while valid, or NULL */
    char *stale;               /* per root: rec is for an older state       */
    int *dirty, ndirty;        /* roots to build, a min-heap                */
    char *indirty;
    int *cand, ncand;          /* nodes read by 2+ kernels, a min-heap      */
    char *incand, *rejected;
    int *mcount;               /* valid kernels that evaluated each node's
                                  inlined cost (mcost, mred: that cost)     */
    double *mcost;
    signed char *mred;
    int *walk, *wstamp;        /* tc__fuse_invalidate's stack and marks     */
    int phase;                 /* evaluating the recompute rule: costs use
                                  the kernels' evaluations (mcount)         */
    int *comp, ncomp, capcomp; /* the build's computed nodes               */
    int *memo, nmemo, capmemo; /* the build's evaluated costs              */
    tc__fstep *stk;            /* the walks' stack                          */
    int nstk, capstk;
    int *cstk, ncstk;          /* tc__subtree_cost's stack (n deep at most) */
    int *vbucket, *vbstamp;    /* the values' hash table, valid where
                                  vbstamp = build                          */
    int nbucket;
    /* one kernel being built */
    tc__kernel *k;
    int root, build, builds;   /* build: this build's stamp (> 0)          */
    int ndom, row_set, row_appended, nrow;
    int64_t dom[TC_MAX_DIMS];
    int8_t row[TC_MAX_DIMS];
    tc__fval *v;
    int nv, capv;
    tc__fslot slot[TC__VM_MAXSLOT];
    int nslot;
    int nvreg, stage, scalar_stage;
    int acc_vreg[TC__VM_MAXACC], acc_stage[TC__VM_MAXACC]; /* loads done this stage */
    tc__kaccess accbuf[TC__VM_MAXACC]; /* the accesses of the kernel being built */
    int fail_node;             /* materialize this to make progress         */
    int split;                 /* the failure was a stage too long          */
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

TC__FN unsigned tc__vmap_hash(int node, const tc__vmap *m) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)node;
    int d;
    for (d = 0; d < m->nd; d++) {
        h = (h ^ (uint64_t)(m->kdim[d] + 2)) * 0xff51afd7ed558ccdull;
        h = (h ^ (uint64_t)m->coef[d]) * 0xc4ceb9fe1a85ec53ull;
        h = (h ^ (uint64_t)m->off[d]) * 0xff51afd7ed558ccdull;
    }
    return (unsigned)(h ^ (h >> 31));
}

/* The values' hash table sized for cap values (rebuilt for this build's). */
TC__FN int tc__fval_rehash(tc__fuse *f, int cap) {
    int nb = 64, i, *b, *st;
    while (nb < 2 * cap) nb *= 2;
    if (nb <= f->nbucket) return 0;
    b = (int *)TC_REALLOC(f->vbucket, sizeof(int) * (size_t)nb);
    if (b) f->vbucket = b;
    st = b ? (int *)TC_REALLOC(f->vbstamp, sizeof(int) * (size_t)nb) : NULL;
    if (!b || !st) return -1;
    f->vbstamp = st;
    f->nbucket = nb;
    for (i = 0; i < nb; i++) st[i] = 0;
    for (i = 0; i < f->nv; i++) {
        int h = (int)(tc__vmap_hash(f->v[i].node, &f->v[i].m) & (unsigned)(nb - 1));
        f->v[i].next = st[h] == f->build ? b[h] : -1;
        b[h] = i;
        st[h] = f->build;
    }
    return 0;
}

/* The kernel's value (node, m), added when new: a hash lookup, so a kernel
 * of many values is built in time linear in them. */
TC__FN int tc__fval_get(tc__fuse *f, int node, const tc__vmap *m) {
    unsigned h = tc__vmap_hash(node, m);
    int i, b = (int)(h & (unsigned)(f->nbucket - 1));
    if (f->vbstamp[b] == f->build)
        for (i = f->vbucket[b]; i >= 0; i = f->v[i].next)
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
    if (2 * (f->nv + 1) > f->nbucket) {
        if (tc__fval_rehash(f, f->capv) != 0) {
            f->oom = 1;
            return -1;
        }
        b = (int)(h & (unsigned)(f->nbucket - 1));
    }
    memset(&f->v[f->nv], 0, sizeof f->v[0]);
    f->v[f->nv].node = node;
    f->v[f->nv].m = *m;
    f->v[f->nv].level = -1;
    f->v[f->nv].local = -1;
    f->v[f->nv].vreg_stage = -1;
    f->v[f->nv].slot = -1;
    f->v[f->nv].next = f->vbstamp[b] == f->build ? f->vbucket[b] : -1;
    f->vbucket[b] = f->nv;
    f->vbstamp[b] = f->build;
    return f->nv++;
}

/* Inlined (computed by the kernel that reads it) rather than loaded. */
TC__FN int tc__inlined(const tc__fuse *f, int i) {
    const tc__node *nd = &f->g->nodes[i];
    if (nd->kind != TC__NODE_OP) return 0;
    if (tc__optable[nd->op].cls == TC__CLASS_VIEW) return f->is_view_ok[i];
    return f->fusible[i] && !f->nofuse[i] && (!f->mat[i] || i == f->root);
}

/* Appends v to a growable int list; -1 on OOM (f->oom set). */
TC__FN int tc__fuse_push_int(tc__fuse *f, int **a, int *n, int *cap, int v) {
    if (*n == *cap) {
        int c = *cap ? *cap * 2 : 64, *na = (int *)TC_REALLOC(*a, sizeof(int) * (size_t)c);
        if (!na) {
            f->oom = 1;
            return -1;
        }
        *a = na;
        *cap = c;
    }
    (*a)[(*n)++] = v;
    return 0;
}

/* A node's inlined cost known to this evaluation: computed in this build
 * (cstamp), or, while the recompute rule runs, by a kernel built before it
 * (mcount: the rounds evaluated the rule with the costs their kernels had
 * left behind, so a node materialized earlier in the same pass still
 * counts where a kernel's evaluation covered it). */
TC__FN int tc__cost_known(const tc__fuse *f, int i, double *c, int *red) {
    if (f->phase && f->mcount[i] > 0) {
        *c = f->mcost[i];
        *red = f->mred[i];
        return 1;
    }
    if (f->cstamp[i] != f->build) return 0;
    *c = f->scost[i];
    *red = f->sred[i];
    return 1;
}

/* Cost in units per element of computing node i with everything it
 * inlines; f->sred[i] tells whether that holds a reduction.  Memoized per
 * build (the nodes evaluated are noted in f->memo). */
TC__FN double tc__subtree_cost(tc__fuse *f, int i0) {
    double c;
    int red, top;
    if (tc__cost_known(f, i0, &c, &red)) {
        f->scost[i0] = c;
        f->sred[i0] = (signed char)red;
        return c;
    }
    /* post-order: a node is summed once every inlined input is known (each
     * is on the stack at most once: inputs come before their readers) */
    f->cstk[0] = i0;
    top = 1;
    while (top > 0) {
        int i = f->cstk[top - 1], k, pushed = 0;
        const tc__node *nd = &f->g->nodes[i];
        for (k = 0; k < nd->nin && !pushed; k++) {
            int j = nd->in[k];
            if (j < 0 || !tc__inlined(f, j) || j == f->root) continue;
            if (!tc__cost_known(f, j, &c, &red)) {
                f->cstk[top++] = j;
                pushed = 1;
            }
        }
        if (pushed) continue;
        /* every inlined input known: sum them (as the recursion did, in order) */
        c = nd->kind == TC__NODE_OP && tc__optable[nd->op].cls != TC__CLASS_VIEW ? tc__op_cost(nd->op) : 0;
        red = tc__node_is_reduce(nd);
        for (k = 0; k < nd->nin; k++) {
            int j = nd->in[k], rj = 0;
            double cj = 0;
            if (j < 0 || !tc__inlined(f, j) || j == f->root) continue;
            tc__cost_known(f, j, &cj, &rj);
            c += cj;
            if (rj) red = 1;
        }
        f->scost[i] = c;
        f->sred[i] = (signed char)red;
        f->cstamp[i] = f->build;
        if (tc__fuse_push_int(f, &f->memo, &f->nmemo, &f->capmemo, i) != 0) return 0;
        top--;
    }
    return f->scost[i0];
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

/* A new step of a walk over the region (NULL on OOM, f->oom set). */
TC__FN tc__fstep *tc__fstep_push(tc__fuse *f, int node, const tc__vmap *m) {
    tc__fstep *st;
    if (f->nstk == f->capstk) {
        int cap = f->capstk ? f->capstk * 2 : 64;
        tc__fstep *ns = (tc__fstep *)TC_REALLOC(f->stk, sizeof(tc__fstep) * (size_t)cap);
        if (!ns) {
            f->oom = 1;
            return NULL;
        }
        f->stk = ns;
        f->capstk = cap;
    }
    st = &f->stk[f->nstk++];
    st->node = node;
    st->m = *m;
    st->state = 0;
    st->vi = st->sl = -1;
    st->k = st->acc = 0;
    st->in[0] = st->in[1] = st->in[2] = -1;
    return st;
}

/* The states of a step: entered, walking its inputs, waiting for its body
 * (a reduction's input, one level down). */
enum { TC__ST_ENTER = 0, TC__ST_INPUTS, TC__ST_BODY };

/* Levels: the first stage a value can be computed in (slots it reads come
 * from earlier stages).  Creates the slots.  Depth first from (node, m0),
 * inputs in order, as a recursion would go (the slots' numbering follows). */
TC__FN int tc__fuse_level(tc__fuse *f, int node0, const tc__vmap *m0) {
    int ret = 0;
    f->nstk = 0;
    if (!tc__fstep_push(f, node0, m0)) return 0;
    while (f->nstk > 0) {
        tc__fstep *st = &f->stk[f->nstk - 1];
        const tc__node *nd;
        if (st->state == TC__ST_ENTER) {
            tc__vmap mb;
            int sl;
            ret = 0;
            if (f->oom || f->fail_node >= 0) {
                f->nstk--;
                continue;
            }
            tc__fuse_resolve(f, &st->node, &st->m);
            if (!tc__inlined(f, st->node) || (st->vi = tc__fval_get(f, st->node, &st->m)) < 0) {
                f->nstk--;
                continue;
            }
            if (f->nv > TC__FUSE_MAXVALS) {
                tc__fuse_fail(f, st->node, "more than %d values in one kernel", TC__FUSE_MAXVALS);
                f->nstk--;
                continue;
            }
            if (f->v[st->vi].level >= 0) {
                ret = f->v[st->vi].level;
                f->nstk--;
                continue;
            }
            nd = &f->g->nodes[st->node];
            if (!tc__node_is_reduce(nd)) {
                st->state = TC__ST_INPUTS;
                continue;
            }
            if (tc__fuse_row(f, st->node, &st->m, &mb) != 0) {
                f->nstk--;
                continue;
            }
            if (f->nslot == TC__VM_MAXSLOT) {
                tc__fuse_fail(f, st->node, "more than %d reductions in one kernel", TC__VM_MAXSLOT);
                f->nstk--;
                continue;
            }
            sl = st->sl = f->nslot++;
            f->slot[sl].val = st->vi;
            f->slot[sl].body = nd->in[0];
            f->slot[sl].mb = mb;
            st->state = TC__ST_BODY;
            if (!tc__fstep_push(f, nd->in[0], &mb)) return 0;
        } else if (st->state == TC__ST_INPUTS) {
            nd = &f->g->nodes[st->node];
            if (st->k > 0 && ret > st->acc) st->acc = ret; /* input k - 1's level */
            if (st->k < nd->nin) {
                tc__vmap mi;
                int in = nd->in[st->k++];
                tc__vmap_broadcast(f, in, st->node, &st->m, &mi);
                if (!tc__fstep_push(f, in, &mi)) return 0;
                continue;
            }
            f->v[st->vi].level = ret = st->acc;
            f->nstk--;
        } else { /* the body's level: this slot's is one more */
            f->slot[st->sl].level = ret + 1;
            f->v[st->vi].slot = st->sl;
            f->v[st->vi].level = ret = ret + 1;
            f->nstk--;
        }
    }
    return ret;
}

/* Marks the values stage s needs, walking down from its roots.  A value
 * an earlier stage computed and that costs 2+ units to recompute becomes a
 * row buffer (filled by that stage) and the walk stops there, so only the
 * frontier between stages is kept.  Depth first, inputs in order. */
TC__FN void tc__fuse_reach(tc__fuse *f, int node0, const tc__vmap *m0, int s, int64_t rowlen) {
    f->nstk = 0;
    if (!tc__fstep_push(f, node0, m0)) return;
    while (f->nstk > 0) {
        tc__fstep st = f->stk[--f->nstk];
        const tc__node *nd;
        int vi, k;
        if (f->oom) return;
        tc__fuse_resolve(f, &st.node, &st.m);
        nd = &f->g->nodes[st.node];
        if (!tc__inlined(f, st.node)) continue;
        vi = tc__fval_get(f, st.node, &st.m);
        if (vi < 0 || (f->v[vi].reach & (1u << s))) continue;
        if (f->v[vi].local >= 0) continue;
        if (f->v[vi].reach && f->v[vi].slot < 0 && tc__subtree_cost(f, st.node) >= 2 && f->k->nlocal < TC__VM_MAXLOCAL &&
            rowlen * (int64_t)sizeof(float) * (f->k->nlocal + 1) <= 4 * TC__ROW_CACHE_BYTES) {
            int first = 0;
            while (!(f->v[vi].reach & (1u << first))) first++;
            f->v[vi].local = f->k->nlocal++;
            f->v[vi].local_stage = first;
            continue;
        }
        f->v[vi].reach |= 1u << s;
        if (f->v[vi].slot >= 0) continue;
        for (k = nd->nin - 1; k >= 0; k--) { /* input 0 on top: walked first */
            tc__vmap mi;
            tc__vmap_broadcast(f, nd->in[k], st.node, &st.m, &mi);
            if (!tc__fstep_push(f, nd->in[k], &mi)) return;
        }
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
    if (dst >= TC__VM_MAXSSA) /* (tc__fuse_ssa_full stops a stage before this) */
        return tc__fuse_fail(f, f->root, "more than %d values in one stage", TC__VM_MAXSSA);
    if (tc__kernel_emit(f->k, op, dst, a, b, c, f0, f1) != 0) {
        f->oom = 1;
        return -1;
    }
    return dst;
}

/* Whether the stage being emitted is as long as its registers allow: they
 * are 16-bit (tc__vins) and tc__kernel_simplify may add up to four values
 * per instruction, so SSA values plus four per instruction stay under
 * TC__VM_MAXSSA, with room for the loads and stores that follow. */
TC__FN int tc__fuse_ssa_full(const tc__fuse *f) {
    return f->nvreg + 4 * (f->k->ncode - f->k->stage[f->k->nstage].begin) + 256 > TC__VM_MAXSSA;
}

/* Finishes the value of step st in register r: its row buffer's store when
 * this stage fills it, and r noted for the stage.  Returns r (-1 failed). */
TC__FN int tc__fuse_emitted(tc__fuse *f, int vi, int r) {
    if (r < 0) return -1;
    if (f->v[vi].local >= 0 && f->v[vi].local_stage == f->stage && !f->scalar_stage)
        if (tc__kernel_emit(f->k, TC__V_STOREL, -1, f->v[vi].local, r, -1, 0, 0) != 0) f->oom = 1;
    f->v[vi].vreg = r;
    f->v[vi].vreg_stage = f->stage;
    return r;
}

/* Emits the code computing (node, m) in the current stage; its register.
 * Inputs first, in order (post order), each value once per stage. */
TC__FN int tc__fuse_emit(tc__fuse *f, int node0, const tc__vmap *m0) {
    int ret = -1;
    f->nstk = 0;
    if (!tc__fstep_push(f, node0, m0)) return -1;
    while (f->nstk > 0) {
        tc__fstep *st = &f->stk[f->nstk - 1];
        const tc__node *nd;
        int vi, k;
        if (st->state == TC__ST_ENTER) {
            ret = -1;
            if (f->oom || f->fail_node >= 0) {
                f->nstk--;
                continue;
            }
            tc__fuse_resolve(f, &st->node, &st->m);
            nd = &f->g->nodes[st->node];
            /* an f32 fill is an immediate (other dtypes round the value: loaded) */
            if (nd->kind == TC__NODE_OP && nd->op == TC__OP_FULL && nd->nin == 0 && f->hdr[st->node].dtype == TC_F32) {
                ret = tc__fuse_ins(f, TC__V_CONST, -1, -1, -1, (float)nd->a.f[0], 0);
                f->nstk--;
                continue;
            }
            if (!tc__inlined(f, st->node)) {
                int a = tc__fuse_access(f, st->node, &st->m, 0);
                if (a >= 0 && f->acc_stage[a] != f->stage) { /* one load per buffer and stage */
                    f->acc_vreg[a] = tc__fuse_ins(f, TC__V_LOAD, a, -1, -1, 0, 0);
                    f->acc_stage[a] = f->stage;
                }
                ret = a < 0 ? -1 : f->acc_vreg[a];
                f->nstk--;
                continue;
            }
            vi = st->vi = tc__fval_get(f, st->node, &st->m);
            if (vi < 0) {
                f->nstk--;
                continue;
            }
            if (f->v[vi].vreg_stage == f->stage) {
                ret = f->v[vi].vreg;
                f->nstk--;
                continue;
            }
            if (f->v[vi].local >= 0 && f->v[vi].local_stage < f->stage && !f->scalar_stage) {
                ret = tc__fuse_emitted(f, vi, tc__fuse_ins(f, TC__V_LOADL, f->v[vi].local, -1, -1, 0, 0));
                f->nstk--;
                continue;
            }
            if (f->v[vi].slot >= 0) {
                ret = tc__fuse_emitted(f, vi, tc__fuse_ins(f, TC__V_SLOT, f->v[vi].slot, -1, -1, 0, 0));
                f->nstk--;
                continue;
            }
            {
                int64_t dn = 1, vn = tc__numel_of(f->hdr[st->node].ndim, f->hdr[st->node].shape);
                for (k = 0; k < f->ndom; k++) dn *= f->dom[k];
                if (st->node != f->root && vn * 2 <= dn && tc__subtree_cost(f, st->node) >= 4 && !f->sred[st->node]) {
                    tc__fuse_fail(f, st->node, "broadcast %lldx: cheaper to materialize than to recompute per element",
                                  (long long)(vn ? dn / vn : 0));
                    f->nstk--;
                    continue;
                }
            }
            st->state = TC__ST_INPUTS;
            continue;
        }
        /* TC__ST_INPUTS: input k - 1 is in ret */
        nd = &f->g->nodes[st->node];
        vi = st->vi;
        if (st->k > 0 && (st->in[st->k - 1] = ret) < 0) {
            f->nstk--;
            continue;
        }
        if (st->k < nd->nin) {
            tc__vmap mi;
            int in = nd->in[st->k++];
            tc__vmap_broadcast(f, in, st->node, &st->m, &mi);
            if (!tc__fstep_push(f, in, &mi)) return -1;
            continue;
        }
        if (tc__fuse_ssa_full(f)) {
            f->split = f->fail_node < 0;
            tc__fuse_fail(f, st->node, "more than %d values and instructions in one stage", TC__VM_MAXSSA);
            ret = -1;
            f->nstk--;
            continue;
        }
        if (f->klast[st->node] != f->build) {
            f->klast[st->node] = f->build;
            if (tc__fuse_push_int(f, &f->comp, &f->ncomp, &f->capcomp, st->node) != 0) return -1;
            f->k->nodes++;
        }
        f->k->cost += tc__op_cost(nd->op);
        ret = tc__fuse_emitted(f, vi, tc__fuse_ins(f, nd->op, st->in[0], st->in[1], st->in[2], (float)nd->a.f[0], (float)nd->a.f[1]));
        f->nstk--;
    }
    return ret;
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
    k->acc = f->accbuf; /* (copied out by tc__fuse_commit) */
    f->k = k;
    f->root = root;
    f->build = ++f->builds;
    f->ncomp = f->nmemo = 0;
    f->split = 0;
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
            if (f->klast[f->v[f->slot[i].val].node] != f->build) {
                f->klast[f->v[f->slot[i].val].node] = f->build;
                if (tc__fuse_push_int(f, &f->comp, &f->ncomp, &f->capcomp, f->v[f->slot[i].val].node) != 0) return -1;
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
    const tc__node *r = &f->g->nodes[f->g->nodes[i].vroot];
    /* (a view with no input stands on nothing to materialize) */
    if (!(r->kind == TC__NODE_OP && tc__optable[r->op].cls == TC__CLASS_VIEW && r->nin > 0)) f->mat[r - f->g->nodes] = 1;
}

/* Inputs of ops that are not fused (and the outputs) are materialized.
 * Run once; later a node left unfused hardens its own inputs
 * (tc__fuse_unfuse). */
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

/* ---- the bound: regions no kernel could hold, split up front --------------------
 * A kernel's build walks its whole region (its root and what it inlines)
 * before it finds that the region is over the executor's limits, and each
 * decision then shrinks the region by a node or two: a chain of thousands
 * of row ops, or a sum of thousands of slices, would cost the square of
 * its length.  So before the rounds, each node's region is summarised in
 * graph order (the reductions and the buffers it would read, and how deep
 * its reductions nest), as if every fusible node were inlined; where one
 * holds more than twice what a kernel may (TC__BOUND_*), the inputs with
 * the most are materialized until it holds at most half of that.  No
 * kernel could have held such a region, so only graphs the rounds would
 * have had to split anyway are split earlier, and every region the rounds
 * then build is bounded. */
#define TC__BOUND_RED (2 * TC__VM_MAXSLOT)
#define TC__BOUND_ACC (2 * TC__VM_MAXACC)
#define TC__BOUND_DEPTH (2 * TC__VM_MAXSTAGE)

typedef struct tc__bound {
    int *pool;                 /* per summarised node: its reductions, then
                                  its buffers (sorted, unique)             */
    size_t npool, cap;
    size_t *off;
    int *nr, *na, *depth;
    int *vbase;                /* the first node under a chain of views the
                                  fuser sees through                       */
    int *tmp, *tmp2;           /* merge buffers                            */
    int leaf;                  /* a one-buffer summary's buffer            */
} tc__bound;

/* What a reader of node j inlines: j's summary (r, a: arrays; depth), one
 * buffer (a view the fuser sees through reads its base at its own map,
 * hence the view's id), or nothing (an f32 fill: an immediate). */
TC__FN void tc__bound_read(const tc__fuse *f, tc__bound *b, int j, const int **r, int *nr, const int **a, int *na,
                           int *depth) {
    const tc__node *nd = &f->g->nodes[j];
    int s = f->is_view_ok[j] ? b->vbase[j] : j;
    *r = *a = NULL;
    *nr = *na = *depth = 0;
    if (nd->kind == TC__NODE_OP && nd->op == TC__OP_FULL && nd->nin == 0 && f->hdr[j].dtype == TC_F32) return;
    if (f->fusible[s] && !f->mat[s] && !f->nofuse[s] && f->g->nodes[s].kind == TC__NODE_OP &&
        tc__optable[f->g->nodes[s].op].cls != TC__CLASS_VIEW) {
        *r = b->pool + b->off[s];
        *nr = b->nr[s];
        *a = b->pool + b->off[s] + b->nr[s];
        *na = b->na[s];
        *depth = b->depth[s];
        return;
    }
    b->leaf = j;
    *a = &b->leaf;
    *na = 1;
}

/* dst <- the sorted union of sorted x and y (dst may not alias them). */
TC__FN int tc__bound_union(const int *x, int nx, const int *y, int ny, int *dst) {
    int i = 0, j = 0, n = 0;
    while (i < nx || j < ny) {
        int v = j >= ny || (i < nx && x[i] < y[j]) ? x[i++] : y[j++];
        if (n == 0 || dst[n - 1] != v) dst[n++] = v;
    }
    return n;
}

/* Node x's summary from its inputs (those in cut[] read as memory), into
 * b->tmp: reductions [0, *nr), buffers [*nr, *nr + *na). */
TC__FN void tc__bound_merge(const tc__fuse *f, tc__bound *b, int x, const char *cut, int *nr, int *na, int *depth) {
    const tc__node *nd = &f->g->nodes[x];
    int k, n = 0, m = 0, d = 0, own = tc__node_is_reduce(nd);
    int *R = b->tmp, *A = b->tmp + (3 * TC__BOUND_RED + 4), *T = b->tmp2;
    if (own) R[n++] = x;
    for (k = 0; k < nd->nin; k++) {
        const int *r, *a;
        int rn, an, dk, cutv;
        if (nd->in[k] < 0) continue;
        if (cut[k]) { /* read as memory: one buffer */
            cutv = nd->in[k];
            memcpy(T, A, sizeof(int) * (size_t)m);
            m = tc__bound_union(T, m, &cutv, 1, A);
            continue;
        }
        tc__bound_read(f, b, nd->in[k], &r, &rn, &a, &an, &dk);
        memcpy(T, R, sizeof(int) * (size_t)n);
        n = tc__bound_union(T, n, r, rn, R);
        memcpy(T, A, sizeof(int) * (size_t)m);
        m = tc__bound_union(T, m, a, an, A);
        if (dk > d) d = dk;
    }
    *nr = n;
    *na = m;
    *depth = d + own;
}

TC__FN int tc__bound_over(int nr, int na, int depth, int half) {
    return half ? nr > TC__BOUND_RED / 2 || na > TC__BOUND_ACC / 2 || depth > TC__BOUND_DEPTH / 2
                : nr > TC__BOUND_RED || na > TC__BOUND_ACC || depth > TC__BOUND_DEPTH;
}

/* The fusible node a cut of node x's input j materializes, or -1. */
TC__FN int tc__bound_target(const tc__fuse *f, const tc__bound *b, int j) {
    int s = f->is_view_ok[j] ? b->vbase[j] : j;
    const tc__node *nd = &f->g->nodes[s];
    if (!(nd->kind == TC__NODE_OP && tc__optable[nd->op].cls != TC__CLASS_VIEW)) return -1;
    return f->fusible[s] && !f->mat[s] && !f->nofuse[s] ? s : -1;
}

/* Summarises node x (fusible, inlined so far), cutting its inputs when its
 * region is over the bound.  -1 on OOM. */
TC__FN int tc__bound_node(tc__fuse *f, tc__bound *b, int x) {
    const tc__node *nd = &f->g->nodes[x];
    char cut[TC__MAX_IN];
    int nr, na, depth, k;
    memset(cut, 0, sizeof cut);
    tc__bound_merge(f, b, x, cut, &nr, &na, &depth);
    if (tc__bound_over(nr, na, depth, 0)) {
        int onr = nr, ona = na, od = depth;
        /* the inputs holding the most, first, until it holds half */
        while (tc__bound_over(nr, na, depth, 1)) {
            int best = -1, bsize = 0, t;
            for (k = 0; k < nd->nin && k < TC__MAX_IN; k++) {
                const int *r, *a;
                int rn, an, dk;
                if (cut[k] || nd->in[k] < 0 || tc__bound_target(f, b, nd->in[k]) < 0) continue;
                tc__bound_read(f, b, nd->in[k], &r, &rn, &a, &an, &dk);
                if (best < 0 || rn + an + dk > bsize) best = k, bsize = rn + an + dk;
            }
            if (best < 0) break;
            cut[best] = 1;
            t = tc__bound_target(f, b, nd->in[best]);
            f->mat[t] = 1;
            if (f->logs & 1) {
                tc__fmt(f->why, sizeof f->why,
                        "its reader %%%d would inline %d reductions, %d buffers, %d nested (a kernel holds %d, %d, %d)", x,
                        onr, ona, od, TC__VM_MAXSLOT, TC__VM_MAXACC - 1, TC__VM_MAXSTAGE - 1);
                tc__fuse_log(f, t, "materialized");
            }
            tc__bound_merge(f, b, x, cut, &nr, &na, &depth);
        }
    }
    if (b->npool + (size_t)(nr + na) > b->cap) {
        size_t cap = b->cap * 2 + (size_t)(nr + na) + 1024;
        int *np = (int *)TC_REALLOC(b->pool, sizeof(int) * cap);
        if (!np) return -1;
        b->pool = np;
        b->cap = cap;
    }
    b->off[x] = b->npool;
    memcpy(b->pool + b->npool, b->tmp, sizeof(int) * (size_t)nr);
    memcpy(b->pool + b->npool + nr, b->tmp + (3 * TC__BOUND_RED + 4), sizeof(int) * (size_t)na);
    b->npool += (size_t)(nr + na);
    b->nr[x] = nr;
    b->na[x] = na;
    b->depth[x] = depth;
    return 0;
}

/* The bound over the whole graph, in its order (inputs first).  -1 on OOM. */
TC__FN int tc__fuse_bound(tc__fuse *f) {
    tc__bound b;
    size_t z = (size_t)(f->n ? f->n : 1);
    int i, rc = 0;
    memset(&b, 0, sizeof b);
    b.off = (size_t *)tc__malloc(sizeof(size_t) * z);
    b.nr = (int *)tc__malloc(sizeof(int) * z * 4);
    b.tmp = (int *)tc__malloc(sizeof(int) * (size_t)(2 * (3 * TC__BOUND_RED + 4 + 3 * TC__BOUND_ACC + 4)));
    if (!b.off || !b.nr || !b.tmp) rc = -1;
    else {
        b.na = b.nr + z;
        b.depth = b.na + z;
        b.vbase = b.depth + z;
        b.tmp2 = b.tmp + (3 * TC__BOUND_RED + 4 + 3 * TC__BOUND_ACC + 4);
        for (i = 0; i < f->n && rc == 0; i++) {
            const tc__node *nd = &f->g->nodes[i];
            b.vbase[i] = f->is_view_ok[i] && nd->nin > 0 && nd->in[0] >= 0 ? b.vbase[nd->in[0]] : i;
            b.nr[i] = b.na[i] = b.depth[i] = 0;
            b.off[i] = 0;
            if (f->fusible[i] && !f->mat[i] && !f->nofuse[i]) rc = tc__bound_node(f, &b, i);
        }
    }
    TC_FREE(b.pool);
    TC_FREE(b.off);
    TC_FREE(b.nr);
    TC_FREE(b.tmp);
    return rc;
}

/* ---- the rounds ----------------------------------------------------------------
 * A round built every kernel from the first root on, and at the first one
 * that failed made one decision (materialize the node that overflowed, or
 * leave the root unfused) and started again; once every kernel built, the
 * recompute rule ran over the nodes several kernels compute.  A kernel's
 * build depends only on the nodes of its region (its root and what it
 * inlines), and decisions only ever take nodes out of regions, so here a
 * decision rebuilds only the kernels whose region held the node it changed
 * (tc__fuse_invalidate), lowest root first: the first kernel that fails is
 * the one a round would have failed at, and the decisions, their order and
 * the kernels are the rounds' own, at the cost of what changed. */

TC__FN int tc__fuse_is_root(const tc__fuse *f, int i) { return f->fusible[i] && !f->nofuse[i] && f->mat[i]; }

/* Binary min-heaps of node ids (the roots to build, the recompute rule's
 * candidates), each id at most once (in[]). */
TC__FN void tc__heap_push(int *h, int *n, char *in, int v) {
    int i = (*n)++;
    if (in[v]) {
        (*n)--;
        return;
    }
    in[v] = 1;
    while (i > 0 && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

TC__FN int tc__heap_pop(int *h, int *n, char *in) {
    int top = h[0], v = h[--*n], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (h[c] >= v) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = v;
    in[top] = 0;
    return top;
}

/* Root r's kernel is to be built (again). */
TC__FN void tc__fuse_dirty(tc__fuse *f, int r) {
    if (f->rec[r]) f->stale[r] = 1;
    tc__heap_push(f->dirty, &f->ndirty, f->indirty, r);
}

/* Node x, inlined until now, is about to change: every kernel whose region
 * holds it is stale.  Those are the roots reached walking up from x
 * through readers that are themselves inlined. */
TC__FN void tc__fuse_invalidate(tc__fuse *f, int x) {
    int top = 0, stamp = ++f->builds;
    f->root = -1;
    f->walk[top++] = x;
    f->wstamp[x] = stamp;
    while (top > 0) {
        int i = f->walk[--top], u;
        for (u = f->use_start[i]; u < f->use_start[i + 1]; u++) {
            int c = f->use[u];
            if (f->wstamp[c] == stamp) continue;
            f->wstamp[c] = stamp;
            if (tc__fuse_is_root(f, c)) tc__fuse_dirty(f, c);
            else if (tc__inlined(f, c)) f->walk[top++] = c;
        }
    }
}

/* Node x gets memory of its own (a kernel, when it is fusible). */
TC__FN void tc__fuse_materialize(tc__fuse *f, int x) {
    if (f->mat[x]) return;
    f->root = -1;
    if (tc__inlined(f, x)) tc__fuse_invalidate(f, x);
    f->mat[x] = 1;
    if (tc__fuse_is_root(f, x)) tc__fuse_dirty(f, x);
}

/* Forgets root r's kernel (what it computed no longer counts). */
TC__FN void tc__fuse_drop(tc__fuse *f, int r) {
    tc__frec *rc = f->rec[r];
    int j;
    if (!rc) return;
    for (j = 0; j < rc->ncomp; j++) f->kcount[rc->list[j]]--;
    for (j = 0; j < rc->nmemo; j++) f->mcount[rc->list[rc->ncomp + j]]--;
    tc__kernel_free(&rc->k);
    TC_FREE(rc->list);
    TC_FREE(rc);
    f->rec[r] = NULL;
    f->stale[r] = 0;
}

/* Root r leaves fusion: it runs as its own op, so its inputs become
 * memory (what the rounds' hard marking did next). */
TC__FN void tc__fuse_unfuse(tc__fuse *f, int r) {
    const tc__node *nd = &f->g->nodes[r];
    int k;
    f->nofuse[r] = 1;
    tc__fuse_drop(f, r);
    for (k = 0; k < nd->nin; k++) {
        const tc__node *b;
        if (nd->in[k] < 0) continue;
        b = &f->g->nodes[f->g->nodes[nd->in[k]].vroot];
        if (!(b->kind == TC__NODE_OP && tc__optable[b->op].cls == TC__CLASS_VIEW && b->nin > 0))
            tc__fuse_materialize(f, (int)(b - f->g->nodes));
    }
}

/* Keeps the kernel just built for root r, with what it computed (counted
 * toward the recompute rule) and the costs it evaluated.  -1 on OOM. */
TC__FN int tc__fuse_commit(tc__fuse *f, int r, const tc__kernel *k) {
    tc__frec *rc = (tc__frec *)TC_MALLOC(sizeof *rc);
    tc__kaccess *acc = (tc__kaccess *)TC_MALLOC(sizeof(tc__kaccess) * (size_t)(k->nacc ? k->nacc : 1));
    int j, n = f->ncomp + f->nmemo;
    if (rc) rc->list = (int *)TC_MALLOC(sizeof(int) * (size_t)(n ? n : 1));
    if (!rc || !acc || !rc->list) {
        if (rc) TC_FREE(rc->list);
        TC_FREE(rc);
        TC_FREE(acc);
        return -1;
    }
    memcpy(acc, k->acc, sizeof(tc__kaccess) * (size_t)k->nacc);
    rc->k = *k;
    rc->k.acc = acc;
    rc->ncomp = f->ncomp;
    rc->nmemo = f->nmemo;
    if (f->ncomp) memcpy(rc->list, f->comp, sizeof(int) * (size_t)f->ncomp);
    if (f->nmemo) memcpy(rc->list + f->ncomp, f->memo, sizeof(int) * (size_t)f->nmemo);
    for (j = 0; j < f->ncomp; j++) {
        int x = f->comp[j];
        if (++f->kcount[x] >= 2 && !f->rejected[x]) tc__heap_push(f->cand, &f->ncand, f->incand, x);
    }
    for (j = 0; j < f->nmemo; j++) { /* every valid kernel agrees on a cost */
        int x = f->memo[j];
        f->mcount[x]++;
        f->mcost[x] = f->scost[x];
        f->mred[x] = f->sred[x];
    }
    f->rec[r] = rc;
    f->stale[r] = 0;
    return 0;
}

/* The recompute rule over the nodes several kernels compute, lowest first:
 * 1 when one was materialized, 0 none, -1 OOM.  A node it keeps inlined
 * stays so: its cost only falls as more is materialized. */
TC__FN int tc__fuse_recompute(tc__fuse *f) {
    int again = 0;
    f->root = -1;
    f->phase = 1;
    f->build = ++f->builds;
    while (f->ncand > 0 && !f->oom) {
        int i = tc__heap_pop(f->cand, &f->ncand, f->incand);
        double c;
        if (f->kcount[i] < 2 || f->mat[i]) continue;
        f->nmemo = 0;
        c = tc__subtree_cost(f, i);
        if (f->sred[i] || c > TC__RECOMPUTE_MAX) {
            snprintf(f->why, sizeof f->why, "read by %d kernels and recomputing costs %g units%s (limit %d)", f->kcount[i],
                     c, f->sred[i] ? " with a reduction" : "", TC__RECOMPUTE_MAX);
            tc__fuse_log(f, i, "materialized");
            tc__fuse_materialize(f, i);
            again = 1;
        } else {
            f->rejected[i] = 1;
        }
    }
    f->phase = 0;
    return f->oom ? -1 : again;
}

/* Root r's kernel overflowed a stage's registers: its region is split into
 * pieces of TC__FUSE_SPLIT values along the walk that found them (the
 * values of the failed build, in the order tc__fuse_level met them), in one
 * decision; a region that long needs them all, and finding each piece by a
 * build of its own would walk the region once per piece.  The number of
 * nodes materialized. */
TC__FN int tc__fuse_split(tc__fuse *f, int r) {
    int p, cut = 0, nv = f->nv;
    tc__fmt(f->why, sizeof f->why, "a stage of %%%d's kernel is past its registers' range: split every %d values", r,
            TC__FUSE_SPLIT);
    for (p = TC__FUSE_SPLIT; p < nv; p += TC__FUSE_SPLIT) {
        int x = f->v[p].node;
        if (x == r || !f->fusible[x] || f->mat[x] || f->nofuse[x]) continue;
        tc__fuse_log(f, x, "materialized");
        tc__fuse_materialize(f, x);
        cut++;
    }
    return cut;
}

/* Builds the kernels to the fixed point.  0 done; 1 gave up (the rounds'
 * bound, 4n + 16, reached); -1 OOM. */
TC__FN int tc__fuse_rounds(tc__fuse *f) {
    long rounds = 0, limit = 4L * f->n + 16;
    tc__kernel k;
    for (;;) {
        int again;
        while (f->ndirty > 0) {
            int i = tc__heap_pop(f->dirty, &f->ndirty, f->indirty), fn;
            if (!tc__fuse_is_root(f, i)) {
                tc__fuse_drop(f, i);
                continue;
            }
            if (f->rec[i] && !f->stale[i]) continue;
            tc__fuse_drop(f, i);
            f->fail_node = -1;
            f->why[0] = 0;
            if (tc__fuse_build(f, i, &k) == 0) {
                if (tc__fuse_commit(f, i, &k) != 0) {
                    k.acc = NULL; /* (the fuser's scratch) */
                    tc__kernel_free(&k);
                    return -1;
                }
                continue;
            }
            k.acc = NULL;
            tc__kernel_free(&k); /* the failed kernel's code so far */
            if (f->oom) return -1;
            if (++rounds >= limit) return 1;
            if (f->split && tc__fuse_split(f, i) > 0) {
                tc__fuse_dirty(f, i);
                continue;
            }
            fn = f->fail_node;
            if (fn < 0 || fn == i || !f->fusible[fn] || f->mat[fn]) {
                tc__fuse_log(f, i, "left unfused"); /* runs as its own eager op */
                tc__fuse_unfuse(f, i);
            } else {
                tc__fuse_log(f, fn, "materialized");
                tc__fuse_materialize(f, fn);
                tc__fuse_dirty(f, i);
            }
        }
        if ((again = tc__fuse_recompute(f)) <= 0) return again;
        if (++rounds >= limit) return 1;
    }
}

/* The kernels in their roots' order, as the last round numbered them: each
 * node's group is the last kernel computing it.  -1 on OOM. */
TC__FN int tc__fuse_assemble(tc__fuse *f, tc__fusion *out) {
    int i, j, nk = 0;
    for (i = 0; i < f->n; i++) {
        out->kernel_of[i] = out->group[i] = -1;
        nk += tc__fuse_is_root(f, i);
    }
    out->k = (tc__kernel *)tc__malloc(sizeof(tc__kernel) * (size_t)(nk ? nk : 1));
    if (!out->k) return -1;
    for (i = 0; i < f->n; i++) {
        tc__frec *rc = f->rec[i];
        if (!tc__fuse_is_root(f, i)) continue;
        out->k[out->nk] = rc->k;
        rc->k.code = NULL; /* the fusion's now */
        rc->k.acc = NULL;
        for (j = 0; j < rc->ncomp; j++) out->group[rc->list[j]] = out->nk;
        out->kernel_of[i] = out->nk;
        out->group[i] = out->nk++;
    }
    return 0;
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

/* The fuser's working arrays, one entry per node; -1 on OOM. */
TC__FN int tc__fuse_alloc(tc__fuse *f, tc__fusion *out) {
    const tc__graph *g = f->g;
    size_t z = (size_t)(f->n ? f->n : 1);
    int i, k, nuse = 0;
    f->fusible = (char *)tc__malloc(z);
    f->mat = (char *)tc__malloc(z);
    f->nofuse = (char *)tc__malloc(z);
    f->is_view_ok = (char *)tc__malloc(z);
    f->stale = (char *)tc__malloc(z);
    f->indirty = (char *)tc__malloc(z);
    f->incand = (char *)tc__malloc(z);
    f->rejected = (char *)tc__malloc(z);
    f->sred = (signed char *)tc__malloc(z);
    f->mred = (signed char *)tc__malloc(z);
    f->kcount = (int *)tc__malloc(sizeof(int) * z);
    f->klast = (int *)tc__malloc(sizeof(int) * z);
    f->cstamp = (int *)tc__malloc(sizeof(int) * z);
    f->mcount = (int *)tc__malloc(sizeof(int) * z);
    f->dirty = (int *)tc__malloc(sizeof(int) * z);
    f->cand = (int *)tc__malloc(sizeof(int) * z);
    f->walk = (int *)tc__malloc(sizeof(int) * z);
    f->wstamp = (int *)tc__malloc(sizeof(int) * z);
    f->cstk = (int *)tc__malloc(sizeof(int) * z);
    f->use_start = (int *)tc__malloc(sizeof(int) * (z + 1));
    f->scost = (double *)tc__malloc(sizeof(double) * z);
    f->mcost = (double *)tc__malloc(sizeof(double) * z);
    f->rec = (tc__frec **)tc__malloc(sizeof(tc__frec *) * z);
    if (f->rec) memset(f->rec, 0, sizeof(tc__frec *) * z); /* (tc__fuse_free reads it) */
    f->vq = (int8_t(*)[TC_MAX_DIMS])tc__malloc(sizeof *f->vq * z);
    f->vc = (int64_t(*)[TC_MAX_DIMS])tc__malloc(sizeof *f->vc * z);
    f->vo = (int64_t(*)[TC_MAX_DIMS])tc__malloc(sizeof *f->vo * z);
    out->kernel_of = (int *)tc__malloc(sizeof(int) * z);
    out->inl = (char *)tc__malloc(z);
    out->group = (int *)tc__malloc(sizeof(int) * z);
    if (!f->fusible || !f->mat || !f->nofuse || !f->is_view_ok || !f->stale || !f->indirty || !f->incand ||
        !f->rejected || !f->sred || !f->mred || !f->kcount || !f->klast || !f->cstamp || !f->mcount || !f->dirty ||
        !f->cand || !f->walk || !f->wstamp || !f->cstk || !f->use_start || !f->scost || !f->mcost || !f->rec || !f->vq ||
        !f->vc || !f->vo || !out->kernel_of || !out->inl || !out->group)
        return -1;
    memset(f->mat, 0, z);
    memset(f->nofuse, 0, z);
    memset(f->stale, 0, z);
    memset(f->indirty, 0, z);
    memset(f->incand, 0, z);
    memset(f->rejected, 0, z);
    for (i = 0; i < f->n; i++) f->kcount[i] = f->mcount[i] = f->cstamp[i] = f->klast[i] = f->wstamp[i] = 0;
    /* each node's readers, for tc__fuse_invalidate */
    memset(f->use_start, 0, sizeof(int) * (z + 1));
    for (i = 0; i < f->n; i++)
        for (k = 0; k < g->nodes[i].nin; k++)
            if (g->nodes[i].in[k] >= 0) f->use_start[g->nodes[i].in[k] + 1]++, nuse++;
    for (i = 0; i < f->n; i++) f->use_start[i + 1] += f->use_start[i];
    f->use = (int *)tc__malloc(sizeof(int) * (size_t)(nuse ? nuse : 1));
    if (!f->use) return -1;
    for (i = 0; i < f->n; i++)
        for (k = 0; k < g->nodes[i].nin; k++)
            if (g->nodes[i].in[k] >= 0) f->use[f->use_start[g->nodes[i].in[k]]++] = i;
    for (i = f->n; i > 0; i--) f->use_start[i] = f->use_start[i - 1];
    f->use_start[0] = 0;
    f->build = f->builds = 1;
    return tc__fval_rehash(f, 32);
}

TC__FN void tc__fuse_free(tc__fuse *f) {
    int i;
    for (i = 0; f->rec && i < f->n; i++) /* (kcount, mcount exist where a kernel was kept) */
        if (f->rec[i]) tc__fuse_drop(f, i);
    TC_FREE(f->fusible);
    TC_FREE(f->mat);
    TC_FREE(f->nofuse);
    TC_FREE(f->is_view_ok);
    TC_FREE(f->stale);
    TC_FREE(f->indirty);
    TC_FREE(f->incand);
    TC_FREE(f->rejected);
    TC_FREE(f->sred);
    TC_FREE(f->mred);
    TC_FREE(f->kcount);
    TC_FREE(f->klast);
    TC_FREE(f->cstamp);
    TC_FREE(f->mcount);
    TC_FREE(f->dirty);
    TC_FREE(f->cand);
    TC_FREE(f->walk);
    TC_FREE(f->wstamp);
    TC_FREE(f->cstk);
    TC_FREE(f->use_start);
    TC_FREE(f->use);
    TC_FREE(f->scost);
    TC_FREE(f->mcost);
    TC_FREE(f->rec);
    TC_FREE(f->vq);
    TC_FREE(f->vc);
    TC_FREE(f->vo);
    TC_FREE(f->v);
    TC_FREE(f->stk);
    TC_FREE(f->comp);
    TC_FREE(f->memo);
    TC_FREE(f->vbucket);
    TC_FREE(f->vbstamp);
}

/* Groups g into kernels.  hdr: the concrete header of every node.  logs:
 * bit 0 decisions, bit 1 the kernels' code.  0 ok (out filled), 1 no fusion
 * possible (out empty), -1 OOM.  Every materialized node's kernel is built;
 * a failure materializes a node or leaves one unfused, and the kernels it
 * touches are built again until every kernel builds (tc__fuse_rounds). */
TC__FN int tc__fuse_graph(tc_ctx *ctx, const tc__graph *g, const tc_tensor *hdr, int logs, tc__fusion *out) {
    tc__fuse f;
    int i, rc = -1;
    memset(out, 0, sizeof *out);
    memset(&f, 0, sizeof f);
    f.ctx = ctx;
    f.g = g;
    f.hdr = hdr;
    f.n = g->n;
    f.logs = logs;
    if (tc__fuse_alloc(&f, out) == 0) {
        for (i = 0; i < f.n; i++) {
            f.fusible[i] = (char)tc__node_fusible(&f, i);
            f.is_view_ok[i] = (char)tc__view_probe(&f, i);
        }
        tc__fuse_mark_hard(&f);
        if (tc__fuse_bound(&f) != 0) f.oom = 1;
        for (i = 0; i < f.n; i++)
            if (tc__fuse_is_root(&f, i)) tc__heap_push(f.dirty, &f.ndirty, f.indirty, i);
        rc = f.oom ? -1 : tc__fuse_rounds(&f);
        if (rc == 0 && tc__fuse_assemble(&f, out) != 0) rc = -1;
        if (rc == 0) tc__fuse_inlined(&f, out);
    }
    if (rc != 0) tc__fusion_free(out);
    tc__fuse_free(&f);
    return rc;
}
