/* Memory planning and the program: a graph becomes a flat launch list whose
 * calls are pre-bound (shape rules already applied, inputs pointing at
 * stable tensor headers) over one arena of intermediates laid out by
 * liveness.  Running = bind the inputs, walk the list.  In reduce-overhead
 * mode the arena, the headers and the kernels' scratch persist, so a call
 * after warm-up allocates nothing; in the default mode a call allocates the
 * arena and its outputs.  max-autotune (tune.c) hooks into the run. */

typedef struct tc__tune_mem tc__tune_mem; /* tune.c */

typedef struct tc__launch {
    int node;
    int kernel;                /* a fused kernel (index), -1: the op's own */
    int inplace;               /* writes over an input: never rerun        */
    int epi;                   /* a contraction: fused kernel run on its
                                  output tiles (index), -1 none            */
    int drop;                  /* to be removed (tc__program_compact)      */
    int is_view;               /* recompute the header; no kernel      */
    int threads;               /* 0: the context's; else a tuned cap    */
    int tile;                  /* fused kernel: tuned floats per register
                                  tile, 0: tc__kernel_tile's              */
    double tuned_ms;           /* max-autotune: the winner's time       */
    tc__call call;             /* pre-bound; ins point at headers       */
} tc__launch;

typedef struct tc__program tc__program;

/* The backend seam: what the plan asks of the device a program runs on,
 * and nothing device-specific beyond it.  One table per device: the CPU's
 * is cpu/backend.c (the executor and the op table's kernels); the CUDA
 * backend adds its own.  Copies between devices belong to the tensors,
 * not to the plan. */
typedef struct tc__backend {
    /* per-thread workspace bytes that fused kernel k needs */
    size_t (*kernel_ws_bytes)(const tc__kernel *k);
    /* runs launch l's fused kernel (l->kernel >= 0) */
    tc_result (*run_kernel)(tc__program *p, tc_ctx *ctx, tc__launch *l);
    /* runs launch l's op into out, a contraction with its fused epilogue
     * (l->epi >= 0) on each finished output tile */
    tc_result (*run_op)(tc__program *p, tc_ctx *ctx, tc__launch *l, tc_tensor *out);
    /* the arena of intermediates: a block of at least bytes (reused where
     * one is cached), and back */
    void *(*block_get)(tc_ctx *ctx, size_t bytes, void **raw, size_t *cap);
    void (*block_put)(tc_ctx *ctx, void *raw, void *data, size_t cap);
    tc_device device;          /* where its programs' memory is            */
    void (*program_free)(tc__program *p); /* its state in p->dev; NULL: none */
    /* a persistent (reduce-overhead) program's launches, bound to this
     * call's inputs, run as the device replays them (CUDA: one captured
     * graph); NULL: tc__program_launches */
    tc_result (*replay)(tc__program *p, tc_ctx *ctx, char *err, size_t errcap);
} tc__backend;

struct tc__program {
    const tc__graph *g;
    tc_ctx *ctx;
    tc_tensor *hdr;            /* one header per node (not in any scope) */
    tc_tensor **ref;           /* what a node's users read: a header or a param */
    tc__storage *slice;        /* per node: its arena slice               */
    int *root;                 /* node owning the memory a node views, -1 none */
    int64_t *off;              /* arena offset per root node, -1 none     */
    int *fresh;                /* default mode: outputs allocated per call */
    size_t arena_bytes, arena_cap; /* cap: the block's size (tc__block_get) */
    void *arena_raw;
    char *arena;
    int persistent;            /* reduce-overhead                         */
    /* max-autotune (tune.c): run on each launch in the next run, which
     * measures its variants and sets the winner up; NULL: nothing to tune */
    tc_result (*tune)(struct tc__program *p, tc_ctx *ctx, tc__launch *l, tc_tensor *out);
    const char *tune_dir;      /* the on-disk cache's directory, NULL: none */
    tc__tune_mem *tune_mem;    /* the compiled function's choices          */
    tc__scratch_cache *cache;  /* reduce-overhead: kernels' scratch       */
    tc__launch *launch;
    int nlaunch;
    tc__fusion fu;             /* fused kernels (fu.nk == 0: none)         */
    char *ws;                  /* their per-thread workspaces              */
    void *ws_raw;
    size_t ws_bytes;           /* per thread                               */
    int ws_slots;
    int64_t peak_bytes;        /* arena + outputs                          */
    int inplace;               /* results written over a dying input      */
    const tc__backend *be;     /* the device that runs it                 */
    void *dev;                 /* the backend's own state (CUDA: modules) */
};

TC__FN void tc__program_free(tc__program *p) {
    int i;
    if (!p) return;
    if (p->be && p->be->program_free) p->be->program_free(p);
    if (p->be && p->be->device != TC_CPU) {
        if (p->arena_raw) p->be->block_put(p->ctx, p->arena_raw, p->arena, p->arena_cap);
        p->arena_raw = NULL;
    }
    TC_FREE(p->hdr);
    TC_FREE(p->ref);
    TC_FREE(p->slice);
    TC_FREE(p->root);
    TC_FREE(p->off);
    TC_FREE(p->fresh);
    TC_FREE(p->arena_raw);
    TC_FREE(p->ws_raw);
    for (i = 0; p->launch && i < p->nlaunch; i++) tc__gemm_prepack_free(p->launch[i].call.prepack);
    TC_FREE(p->launch);
    tc__fusion_free(&p->fu);
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
    if (base) h->storage = base->storage;
}

TC__FN size_t tc__node_bytes(const tc__program *p, int i) {
    size_t b = (size_t)tc__numel_of(p->hdr[i].ndim, p->hdr[i].shape) * tc__dtype_sizes[p->hdr[i].dtype];
    return (b + TC__ALIGN - 1) / TC__ALIGN * TC__ALIGN;
}

/* In place: a pointwise fused kernel may write its result over an input
 * buffer whose last reader it is, when every read of that input walks the
 * domain exactly as the store does (element i read, then element i
 * written, tile by tile).  An epilogue runs inside its contraction, whose
 * inputs are still being read then: `only` (its contraction, or -1) is
 * then the one buffer it may write over.  The donor's arena root, or -1. */
TC__FN int tc__inplace_donor(const tc__program *p, int i, int only, const int *last) {
    const tc__kernel *k;
    const tc__kaccess *store = NULL;
    int a, d, donor = -1;
    if (!p->fu.kernel_of || p->fu.kernel_of[i] < 0) return -1;
    k = &p->fu.k[p->fu.kernel_of[i]];
    if (k->nslot || k->nstage != 1) return -1;
    for (a = 0; a < k->nacc; a++)
        if (k->acc[a].store) store = &k->acc[a];
    if (!store) return -1;
    for (a = 0; a < k->nacc && donor < 0; a++) {
        const tc__kaccess *ac = &k->acc[a];
        int r = p->root[ac->node], b, same = 1;
        if (ac->store || r < 0 || r == i || last[r] != i || p->off[r] < 0 || ac->node != r) continue;
        if (only >= 0 && r != only) continue;
        if (tc__node_bytes(p, r) != tc__node_bytes(p, i) || p->hdr[r].dtype != p->hdr[i].dtype) continue;
        /* every access of r must be the store's own walk */
        for (b = 0; b < k->nacc && same; b++) {
            const tc__kaccess *x = &k->acc[b];
            if (x->store || p->root[x->node] != r) continue;
            same = x->node == r && x->ndim == store->ndim;
            for (d = 0; same && d < x->ndim; d++)
                same = x->kdim[d] == store->kdim[d] && x->coef[d] == store->coef[d] && x->off[d] == store->off[d] &&
                       p->hdr[r].shape[d] == p->hdr[i].shape[d];
        }
        if (same) donor = r;
    }
    return donor;
}

/* The buffers placed so far that may still be live, sorted by offset: the
 * arena planner's working set (buffers that died before any later buffer
 * is born leave it, so it stays the size of what is live, not the graph). */
typedef struct tc__arena_set {
    int *k, n;
} tc__arena_set;

/* Lowest offset at which `bytes` overlap no buffer of the set live at
 * `born` (alive until last[k] >= born): the intervals in offset order, the
 * candidate moved past each one it overlaps until one starts beyond it.
 * This is the lowest such offset at all: any lower one overlaps a buffer
 * the sweep passed. */
TC__FN size_t tc__arena_fit(const tc__program *p, const tc__arena_set *s, const int *last, int born, size_t bytes) {
    size_t at = 0;
    int j;
    for (j = 0; j < s->n; j++) {
        int k = s->k[j];
        size_t o = (size_t)p->off[k], e;
        if (last[k] < born) continue;
        if (o >= at + bytes) break;
        e = o + tc__node_bytes(p, k);
        if (e > at) at = e;
    }
    return at;
}

/* Whether [at, at + bytes) overlaps a buffer of the set live at born, other
 * than `except`. */
TC__FN int tc__arena_overlaps(const tc__program *p, const tc__arena_set *s, const int *last, int born, size_t at,
                              size_t bytes, int except) {
    int j;
    for (j = 0; j < s->n; j++) {
        int k = s->k[j];
        size_t o = (size_t)p->off[k];
        if (k == except || last[k] < born) continue;
        if (o >= at + bytes) break;
        if (at < o + tc__node_bytes(p, k) && o < at + bytes) return 1;
    }
    return 0;
}

TC__FN void tc__arena_insert(const tc__program *p, tc__arena_set *s, int i) {
    int lo = 0, hi = s->n;
    while (lo < hi) { /* after every buffer at or below its offset */
        int mid = (lo + hi) / 2;
        if (p->off[s->k[mid]] <= p->off[i]) lo = mid + 1;
        else hi = mid;
    }
    memmove(s->k + lo + 1, s->k + lo, sizeof(int) * (size_t)(s->n - lo));
    s->k[lo] = i;
    s->n++;
}

/* Greedy first-fit placement of every root buffer over its live range: each
 * at the lowest offset where it overlaps no buffer placed before it and
 * still live when it is born.  A buffer is born at its node, except an
 * epilogue's result: it is written while its contraction runs, so it is
 * born there.  -1 on OOM. */
TC__FN int tc__plan_arena(tc__program *p, const int *last) {
    const tc__graph *g = p->g;
    int n = g->n, i, k, j, *born = (int *)tc__malloc(sizeof(int) * (size_t)(3 * n + 1)), *minborn, *launch_of;
    int *host_of = p->fu.nk > 0 ? (int *)tc__malloc(sizeof(int) * (size_t)p->fu.nk) : NULL, min_last = INT_MAX;
    tc__arena_set set;
    size_t top = 0;
    set.n = 0;
    set.k = (int *)tc__malloc(sizeof(int) * (size_t)(n + 1));
    if (!born || !set.k || (p->fu.nk > 0 && !host_of)) {
        TC_FREE(born);
        TC_FREE(set.k);
        TC_FREE(host_of);
        return -1;
    }
    minborn = born + n;
    launch_of = minborn + n;
    for (i = 0; i < n; i++) launch_of[i] = -1;
    for (k = 0; k < p->nlaunch; k++) launch_of[p->launch[k].node] = k;
    /* the contraction whose epilogue a kernel is (tc__program_epilogues) */
    for (k = 0; k < p->fu.nk; k++) host_of[k] = -1;
    for (k = p->nlaunch - 1; k >= 0; k--)
        if (p->launch[k].epi >= 0) host_of[p->launch[k].epi] = p->launch[k].node;
    for (i = 0; i < n; i++) {
        int kn = p->fu.kernel_of ? p->fu.kernel_of[i] : -1, host = kn >= 0 ? host_of[kn] : -1;
        born[i] = host >= 0 ? host : i;
    }
    /* no buffer placed from i on is born before minborn[i] */
    for (i = n - 1, j = INT_MAX; i >= 0; i--) {
        if (p->root[i] == i && !p->fresh[i] && born[i] < j) j = born[i];
        minborn[i] = j;
    }
    for (i = 0; i < n; i++) {
        size_t bytes, at;
        int donor;
        p->off[i] = -1;
        if (p->root[i] != i || p->fresh[i]) continue;
        if (min_last < minborn[i]) { /* drop the buffers no later one can meet */
            for (j = k = 0, min_last = INT_MAX; j < set.n; j++)
                if (last[set.k[j]] >= minborn[i]) {
                    set.k[k++] = set.k[j];
                    if (last[set.k[j]] < min_last) min_last = last[set.k[j]];
                }
            set.n = k;
        }
        bytes = tc__node_bytes(p, i);
        donor = tc__inplace_donor(p, i, born[i] != i ? born[i] : -1, last);
        if (donor >= 0 && !tc__arena_overlaps(p, &set, last, born[i], (size_t)p->off[donor], bytes, donor)) {
            /* the donor's slot: nothing else live overlaps it */
            p->off[i] = p->off[donor];
            p->inplace++;
            if (launch_of[i] >= 0) p->launch[launch_of[i]].inplace = 1;
        } else {
            at = tc__arena_fit(p, &set, last, born[i], bytes);
            p->off[i] = (int64_t)at;
            if (at + bytes > top) top = at + bytes;
        }
        tc__arena_insert(p, &set, i);
        if (last[i] < min_last) min_last = last[i];
    }
    p->arena_bytes = top;
    TC_FREE(born);
    TC_FREE(set.k);
    TC_FREE(host_of);
    return 0;
}

#ifdef TC__HAVE_VEXEC
/* Removes the launches marked `drop`; a call whose `ins` pointed at its own
 * `in` array is re-pointed at the copy's. */
TC__FN void tc__program_compact(tc__program *p) {
    int k, nl = 0;
    for (k = 0; k < p->nlaunch; k++) {
        int own = p->launch[k].call.ins == p->launch[k].call.in;
        if (p->launch[k].drop) continue;
        p->launch[nl] = p->launch[k];
        if (own) p->launch[nl].call.ins = p->launch[nl].call.in;
        nl++;
    }
    p->nlaunch = nl;
}

/* Epilogue fusion: a pointwise kernel whose input is a matmul/linear/conv2d result
 * of its own shape runs on the contraction's output tiles while they are in
 * cache, instead of as a pass of its own.  Conditions: every read of that
 * result is the identity walk (a tile is all the epilogue may see), no
 * other launch or kernel reads it (it is written over: see the planner),
 * and the kernel's other inputs exist before the contraction runs.  The
 * readers are counted once up front (per root: op launches reading it,
 * fused kernels reading it), so each kernel's check is its own accesses.
 * -1 on OOM. */
TC__FN int tc__program_epilogues(tc__program *p, int logs) {
    const tc__graph *g = p->g;
    int n = g->n, k, c, a, d;
    int *cnt = (int *)tc__malloc(sizeof(int) * (size_t)(4 * n + 1));
    int *op_reads, *k_reads, *stamp, *launch_of;
    if (!cnt) return -1;
    op_reads = cnt, k_reads = cnt + n, stamp = cnt + 2 * n, launch_of = cnt + 3 * n;
    for (a = 0; a < n; a++) op_reads[a] = k_reads[a] = 0, stamp[a] = launch_of[a] = -1;
    for (c = 0; c < p->nlaunch; c++) {
        const tc__node *nd = &g->nodes[p->launch[c].node];
        launch_of[p->launch[c].node] = c;
        if (p->launch[c].kernel >= 0) continue;
        for (a = 0; a < nd->nin; a++)
            if (nd->in[a] >= 0 && p->root[nd->in[a]] >= 0) op_reads[p->root[nd->in[a]]]++;
    }
    for (k = 0; k < p->fu.nk; k++)
        for (a = 0; a < p->fu.k[k].nacc; a++) {
            int r = p->fu.k[k].acc[a].store ? -1 : p->root[p->fu.k[k].acc[a].node];
            if (r >= 0 && stamp[r] != k) stamp[r] = k, k_reads[r]++;
        }
    for (a = 0; a < g->nout; a++) /* an output's memory: never written over */
        if (p->root[g->outputs[a]] >= 0) op_reads[p->root[g->outputs[a]]]++;
    for (k = 0; k < p->nlaunch; k++) {
        tc__launch *l = &p->launch[k];
        const tc__kernel *kn;
        int src = -1, ok = 1;
        if (l->kernel < 0) continue;
        kn = &p->fu.k[l->kernel];
        if (kn->nslot || kn->nstage != 1) continue;
        for (a = 0; a < kn->nacc && src < 0; a++) {
            const tc__node *cn = &g->nodes[kn->acc[a].node];
            if (!kn->acc[a].store && cn->kind == TC__NODE_OP &&
                (cn->op == TC__OP_MATMUL || cn->op == TC__OP_LINEAR || cn->op == TC__OP_CONV2D) &&
                p->hdr[kn->acc[a].node].dtype == TC_F32)
                src = kn->acc[a].node;
        }
        if (src < 0) continue;
        for (a = 0; a < kn->nacc && ok; a++) {
            const tc__kaccess *ac = &kn->acc[a];
            const tc_tensor *ch = &p->hdr[src], *rh = &p->hdr[l->node];
            if (ac->store) continue;
            if (p->root[ac->node] != src) {
                ok = ac->node < src; /* exists before the contraction */
                continue;
            }
            ok = ac->node == src && ch->ndim == rh->ndim && ac->ndim == ch->ndim;
            for (d = 0; ok && d < ch->ndim; d++)
                ok = ch->shape[d] == rh->shape[d] &&
                     (ch->shape[d] == 1 || (ac->kdim[d] == d && ac->coef[d] == 1 && ac->off[d] == 0));
        }
        /* no other reader: op launches (views included), the outputs, and
         * every fused kernel but this one, launched or already an epilogue */
        if (ok) ok = op_reads[src] == 0 && k_reads[src] == 1;
        c = launch_of[src];
        if (!ok || c < 0 || c >= k || p->launch[c].kernel >= 0 || p->launch[c].epi >= 0) continue;
        p->launch[c].epi = l->kernel;
        l->drop = 1;
        if (logs & 1)
            tc__log(p->ctx, TC_LOG_WARN, "fusion: kernel %d runs as the epilogue of %%%d %s", p->launch[c].epi, src,
                    tc__optable[g->nodes[src].op].name);
    }
    TC_FREE(cnt);
    tc__program_compact(p);
    return 0;
}

/* Groups the program's nodes into fused kernels (when the executor exists
 * and fuse is set): inlined nodes lose their launch and their memory, fused
 * roots launch their kernel, and each thread gets a workspace. */
TC__FN int tc__program_fuse(tc__program *p, tc_ctx *ctx, int logs) {
    const tc__graph *g = p->g;
    int i, k, rc;
    size_t ws = 0;
    rc = tc__fuse_graph(ctx, g, p->hdr, logs, &p->fu);
    if (rc != 0) return rc < 0 ? -1 : 0;
    for (k = 0; k < p->nlaunch; k++) {
        tc__launch *l = &p->launch[k];
        l->drop = p->fu.inl[l->node];
        l->kernel = p->fu.kernel_of[l->node];
    }
    tc__program_compact(p);
    /* scalar constants that only fused kernels read are immediates there */
    {
        char *need = (char *)tc__malloc((size_t)g->n);
        if (!need) return -1;
        memset(need, 0, (size_t)g->n);
        for (i = 0; i < g->nout; i++) need[g->outputs[i]] = 1;
        for (k = 0; k < p->nlaunch; k++) {
            const tc__launch *l = &p->launch[k];
            const tc__node *nd = &g->nodes[l->node];
            int a;
            if (l->kernel >= 0) {
                for (a = 0; a < p->fu.k[l->kernel].nacc; a++) need[p->fu.k[l->kernel].acc[a].node] = 1;
                continue;
            }
            for (a = 0; a < nd->nin; a++)
                if (nd->in[a] >= 0) need[nd->in[a]] = 1;
        }
        for (k = 0; k < p->nlaunch; k++) {
            tc__launch *l = &p->launch[k];
            if (g->nodes[l->node].op == TC__OP_FULL && g->nodes[l->node].nin == 0 && !need[l->node]) {
                p->fu.inl[l->node] = 1;
                l->drop = 1;
            }
        }
        tc__program_compact(p);
        TC_FREE(need);
    }
    for (i = 0; i < g->n; i++)
        if (p->fu.inl[i]) p->root[i] = -1;
    if (tc__program_epilogues(p, logs) != 0) return -1;
    for (k = 0; k < p->fu.nk; k++)
        if (p->be->kernel_ws_bytes(&p->fu.k[k]) > ws) ws = p->be->kernel_ws_bytes(&p->fu.k[k]);
    p->ws_bytes = (ws + TC__ALIGN - 1) / TC__ALIGN * TC__ALIGN;
    p->ws_slots = ctx->num_threads > 0 ? ctx->num_threads : 1;
    if (p->fu.nk > 0) {
        p->ws = (char *)tc__alloc_aligned(p->ws_bytes * (size_t)p->ws_slots, &p->ws_raw);
        if (!p->ws) return -1;
    }
    if (logs & 2) {
        tc__text sb;
        size_t need;
        char *txt;
        memset(&sb, 0, sizeof sb);
        for (k = 0; k < p->fu.nk; k++) tc__kernel_print(&p->fu.k[k], k, &sb);
        need = sb.n + 1;
        txt = (char *)tc__malloc(need);
        if (txt) {
            sb.p = txt;
            sb.cap = need;
            sb.n = 0;
            txt[0] = '\0'; /* a plan of views only prints no kernel */
            for (k = 0; k < p->fu.nk; k++) tc__kernel_print(&p->fu.k[k], k, &sb);
            tc__log(ctx, TC_LOG_WARN, "output code (%d kernels):\n%s", p->fu.nk, txt);
            TC_FREE(txt);
        }
    }
    return 0;
}
#endif

/* Liveness over the launch list: a buffer lives until its last reader (an
 * epilogue's inputs until its kernel's root, whose buffer the planner
 * treats as born at the contraction). */
TC__FN void tc__program_liveness(tc__program *p, int *last) {
    const tc__graph *g = p->g;
    int i, k, a;
    for (i = 0; i < g->n; i++) last[i] = i;
    for (k = 0; k < p->nlaunch; k++) {
        const tc__launch *l = &p->launch[k];
        const tc__node *nd = &g->nodes[l->node];
        if (l->epi >= 0) {
            const tc__kernel *kn = &p->fu.k[l->epi];
            int r = kn->root;
            for (a = 0; a < kn->nacc; a++) {
                int rr = p->root[kn->acc[a].node];
                if (rr >= 0 && last[rr] < r) last[rr] = r;
            }
        }
        if (l->kernel >= 0) {
            const tc__kernel *kn = &p->fu.k[l->kernel];
            for (a = 0; a < kn->nacc; a++) {
                int r = p->root[kn->acc[a].node];
                if (r >= 0 && last[r] < l->node) last[r] = l->node;
            }
            continue;
        }
        for (a = 0; a < nd->nin; a++) {
            int j = nd->in[a], r = j >= 0 ? p->root[j] : -1;
            if (r >= 0 && last[r] < l->node) last[r] = l->node;
        }
    }
}

/* A program's arrays, one entry per node (NULL when out of memory). */
TC__FN tc__program *tc__program_alloc(tc_ctx *ctx, const tc__backend *be, const tc__graph *g, int persistent) {
    tc__program *p = (tc__program *)TC_MALLOC(sizeof *p);
    int n = g->n;
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->g = g;
    p->ctx = ctx;
    p->be = be;
    p->persistent = persistent;
    p->hdr = (tc_tensor *)tc__malloc(sizeof(tc_tensor) * (size_t)n);
    p->ref = (tc_tensor **)tc__malloc(sizeof(tc_tensor *) * (size_t)n);
    p->slice = (tc__storage *)tc__malloc(sizeof(tc__storage) * (size_t)n);
    p->root = (int *)tc__malloc(sizeof(int) * (size_t)n);
    p->off = (int64_t *)tc__malloc(sizeof(int64_t) * (size_t)n);
    p->fresh = (int *)tc__malloc(sizeof(int) * (size_t)n);
    p->launch = (tc__launch *)tc__malloc(sizeof(tc__launch) * (size_t)n);
    if (persistent) p->cache = tc__cache_new();
    if (!p->hdr || !p->ref || !p->slice || !p->root || !p->off || !p->fresh || !p->launch || (persistent && !p->cache)) {
        tc__program_free(p);
        return NULL;
    }
    memset(p->hdr, 0, sizeof(tc_tensor) * (size_t)n);
    memset(p->slice, 0, sizeof(tc__storage) * (size_t)n);
    memset(p->fresh, 0, sizeof(int) * (size_t)n);
    return p;
}

/* Node i's header when it computes nothing: an input, data the graph owns,
 * or a parameter.  Returns 0 for a node that needs a launch.  outmem[i]:
 * node i is an output or the memory an output views. */
TC__FN int tc__program_leaf(tc__program *p, int i, tc_tensor *const *inputs, const char *outmem) {
    const tc__node *nd = &p->g->nodes[i];
    tc_tensor *h = &p->hdr[i];
    if (nd->kind == TC__NODE_INPUT) {
        *h = *inputs[nd->a.i[0]];
        h->is_sentinel = 1;
        h->prev = h->next = NULL;
        p->ref[i] = h;
        return 1;
    }
    if (nd->kind == TC__NODE_OP && nd->op == TC__OP_FROM_DATA && !outmem[i] && p->be->device == TC_CPU) {
        /* data the graph owns (folded constants, batch norm folded into
         * a conv's weights): read where it lies, not copied per call */
        h->dtype = nd->dt;
        h->ndim = nd->ndim;
        memcpy(h->shape, nd->shape, sizeof h->shape);
        tc__contig_strides(h->ndim, h->shape, h->strides);
        p->slice[i].data = nd->a.ptr;
        p->slice[i].refs = 1;
        h->storage = &p->slice[i];
        p->ref[i] = h;
        return 1;
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
        return 1;
    }
    return 0;
}

/* Node i's launch, pre-bound: its call with the inputs' headers, the shape
 * rule applied, and its header (a view's on its base's memory).  Nonzero:
 * the op cannot be replanned (err says why). */
TC__FN int tc__program_launch(tc__program *p, int i, char *err, size_t errcap) {
    const tc__node *nd = &p->g->nodes[i];
    tc_tensor *h = &p->hdr[i];
    tc__launch *l = &p->launch[p->nlaunch++];
    tc__call *c = &l->call;
    int k;
    memset(l, 0, sizeof *l); /* no tuned thread cap or tile yet */
    l->node = i;
    l->kernel = -1;
    l->epi = -1;
    tc__call_init(c, p->ctx, nd->op, nd->file, nd->line);
    c->a = nd->a;
    c->nin = nd->nin;
    c->optional = ~0u;
    if (nd->nin > TC__MAX_IN) {
        tc__fmt(err, errcap, "op %s with %d inputs is not supported in a compiled graph yet", tc__optable[nd->op].name,
                nd->nin);
        return -1;
    }
    for (k = 0; k < nd->nin; k++) {
        int j = nd->in[k];
        c->in[k] = j >= 0 ? p->ref[j] : NULL;
    }
    if (tc__optable[nd->op].shape(c) != TC_OK) {
        tc__fmt(err, errcap, "replanning %s failed: %s", tc__optable[nd->op].name, c->msg);
        return -1;
    }
    l->is_view = c->is_view;
    h->dtype = c->odt;
    h->is_wrapped = nd->wrapped; /* a scalar argument: its readers promote as eager's do */
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
            h->storage = &p->slice[i];
        }
    } else {
        p->root[i] = i;
        tc__contig_strides(h->ndim, h->shape, h->strides);
        p->slice[i].refs = 1;
        p->slice[i].device = p->be->device;
        h->storage = &p->slice[i];
    }
    return 0;
}

/* The memory plan: liveness, outputs kept to the end (fresh per call in
 * the default mode), the arena's offsets and the peak. */
TC__FN int tc__program_memory(tc__program *p, int *last) {
    const tc__graph *g = p->g;
    int i;
    tc__program_liveness(p, last);
    for (i = 0; i < g->nout; i++) {
        int r = p->root[g->outputs[i]];
        if (r < 0) continue;
        last[r] = g->n;
        if (!p->persistent && r == g->outputs[i]) p->fresh[r] = 1;
    }
    if (tc__plan_arena(p, last) != 0) return -1;
    p->peak_bytes = (int64_t)p->arena_bytes;
    for (i = 0; i < g->nout; i++) {
        int o = g->outputs[i];
        if (p->fresh[o]) p->peak_bytes += (int64_t)tc__node_bytes(p, o);
    }
    return 0;
}

/* Builds the program for g traced on `inputs`, to run on backend be.  NULL
 * on OOM, or when an op cannot be replanned (err says why). */
TC__FN tc__program *tc__program_build(tc_ctx *ctx, const tc__backend *be, const tc__graph *g, tc_tensor *const *inputs,
                                      int persistent, int fuse, int logs, char *err, size_t errcap) {
    tc__program *p = tc__program_alloc(ctx, be, g, persistent);
    int *last = p ? (int *)tc__malloc(sizeof(int) * (size_t)g->n) : NULL, i, bad = !last;
    char *outmem = last ? (char *)tc__malloc((size_t)g->n + 1) : NULL;
    if (outmem) {
        memset(outmem, 0, (size_t)g->n + 1);
        for (i = 0; i < g->nout; i++) outmem[g->nodes[g->outputs[i]].vroot] = 1;
    }
    bad = !outmem;
    for (i = 0; !bad && i < g->n; i++) {
        tc_tensor *h = &p->hdr[i];
        h->ctx = ctx;
        h->is_sentinel = 1; /* owned by the program: tc_free/tc_keep ignore it */
        h->scope = -1;
        h->device = be->device;
        p->root[i] = -1;
        last[i] = i;
        if (!tc__program_leaf(p, i, inputs, outmem)) bad = tc__program_launch(p, i, err, errcap) != 0;
    }
    TC_FREE(outmem);
#ifdef TC__HAVE_VEXEC
    if (!bad && fuse && (ctx->isa != TC_ISA_NONE || be->device != TC_CPU)) bad = tc__program_fuse(p, ctx, logs) != 0;
#else
    (void)fuse;
    (void)logs;
#endif
    if (!bad) bad = tc__program_memory(p, last) != 0;
    TC_FREE(last);
    if (!bad && persistent && be->device != TC_CPU) /* the device's memory, given back by tc__program_free */
        bad = !(p->arena = (char *)be->block_get(ctx, p->arena_bytes ? p->arena_bytes : 1, &p->arena_raw, &p->arena_cap));
    else if (!bad && persistent &&
             !(p->arena = (char *)tc__alloc_aligned(p->arena_bytes ? p->arena_bytes : 1, &p->arena_raw)))
        bad = 1;
    if (bad) {
        tc__program_free(p);
        return NULL;
    }
    return p;
}

/* Runs one launch: its fused kernel or its op's kernel. */
TC__FN tc_result tc__launch_exec(tc__program *p, tc_ctx *ctx, tc__launch *l, tc_tensor *out) {
    return l->kernel >= 0 ? p->be->run_kernel(p, ctx, l) : p->be->run_op(p, ctx, l, out);
}

/* Contractions whose weight freeze made constant: a matmul/linear or conv
 * whose weight really is packed once (a GEMV-shaped matmul streams its
 * weight instead and never packs it; a depthwise conv reads it in place),
 * and a conv whose batch norm was folded into its weight. */
TC__FN int tc__program_frozen(const tc__program *p) {
    int k, n = 0;
    for (k = 0; k < p->nlaunch; k++) {
        const tc__launch *l = &p->launch[k];
        const tc__node *nd = &p->g->nodes[l->node];
        int w = nd->nin > 1 ? nd->in[1] : -1;
        if (l->call.prepack && l->call.prepack->valid) n++;
        else if (l->kernel < 0 && !l->is_view && nd->kind == TC__NODE_OP && nd->op == TC__OP_CONV2D && w >= 0)
            n += p->g->nodes[w].kind == TC__NODE_OP && p->g->nodes[w].op == TC__OP_FROM_DATA;
    }
    return n;
}

/* freeze: parameters are constants, so a matmul/linear whose B is an f32
 * parameter, and a conv whose weight is one (or batch norm's fold), packs
 * it once (on its first run) and reuses the packing. */
TC__FN int tc__program_freeze(tc__program *p) {
    int k;
    for (k = 0; k < p->nlaunch; k++) {
        tc__launch *l = &p->launch[k];
        const tc__node *nd = &p->g->nodes[l->node];
        int b;
        if (l->kernel >= 0 || l->is_view || l->call.prepack) continue;
        if (l->call.op != TC__OP_MATMUL && l->call.op != TC__OP_LINEAR && l->call.op != TC__OP_CONV2D) continue;
        b = nd->nin > 1 ? nd->in[1] : -1;
        /* a conv's weight may be batch norm's fold (passes.c), a constant too */
        if (b < 0 || p->hdr[b].dtype != TC_F32 ||
            !(p->g->nodes[b].kind == TC__NODE_PARAM ||
              (l->call.op == TC__OP_CONV2D && p->g->nodes[b].kind == TC__NODE_OP && p->g->nodes[b].op == TC__OP_FROM_DATA)))
            continue;
        l->call.prepack = (tc__gemm_prepack *)TC_MALLOC(sizeof(tc__gemm_prepack));
        if (!l->call.prepack) return -1;
        memset(l->call.prepack, 0, sizeof(tc__gemm_prepack));
    }
    return 0;
}

/* Binds the inputs (same shapes, guarded; new memory).  An input that is
 * the last call's output (reduce-overhead) is read from a copy, in
 * (*copies)[node], as this call overwrites that memory. */
TC__FN tc_result tc__program_bind(tc__program *p, tc_ctx *ctx, tc_tensor *const *inputs, tc_tensor ***copies) {
    const tc__graph *g = p->g;
    int i;
    for (i = 0; i < g->n; i++) {
        const tc__node *nd = &g->nodes[i];
        const tc_tensor *in;
        if (nd->kind != TC__NODE_INPUT) continue;
        in = inputs[nd->a.i[0]];
        if (in->storage >= p->slice && in->storage < p->slice + g->n) {
            if (!*copies && (*copies = (tc_tensor **)tc__malloc(sizeof(tc_tensor *) * (size_t)g->n)) != NULL)
                memset(*copies, 0, sizeof(tc_tensor *) * (size_t)g->n);
            if (!*copies) return TC_ERR_OOM;
            (*copies)[i] = tc__clone(ctx, (tc_tensor *)in, NULL, nd->file, nd->line);
            if ((*copies)[i]->status != TC_OK) return (*copies)[i]->status;
            in = (*copies)[i];
        }
        p->hdr[i].storage = in->storage;
        p->hdr[i].offset = in->offset;
        memcpy(p->hdr[i].strides, in->strides, sizeof in->strides);
    }
    return TC_OK;
}

/* Default mode: this call's arena, and a fresh tensor for each output that
 * owns its memory (fresh_t[node]); the arena's slices pointed into it. */
TC__FN tc_result tc__program_memory_of_call(tc__program *p, tc_ctx *ctx, tc_tensor ***fresh_t) {
    const tc__graph *g = p->g;
    tc_result r = TC_OK;
    int i;
    if (!p->persistent) {
        p->arena = (char *)p->be->block_get(ctx, p->arena_bytes ? p->arena_bytes : 1, &p->arena_raw, &p->arena_cap);
        *fresh_t = (tc_tensor **)tc__malloc(sizeof(tc_tensor *) * (size_t)g->n);
        if (*fresh_t) memset(*fresh_t, 0, sizeof(tc_tensor *) * (size_t)g->n);
        if (!p->arena || !*fresh_t) return TC_ERR_OOM;
    }
    for (i = 0; r == TC_OK && i < g->n; i++) {
        if (p->off[i] >= 0) p->slice[i].data = p->arena + p->off[i];
        if (p->fresh[i]) {
            tc__call oc;
            tc__call_init(&oc, ctx, g->nodes[i].op, g->nodes[i].file, g->nodes[i].line);
            oc.odt = p->hdr[i].dtype;
            oc.device = p->be->device;
            oc.ondim = p->hdr[i].ndim;
            memcpy(oc.oshape, p->hdr[i].shape, sizeof oc.oshape);
            (*fresh_t)[i] = tc__alloc_out(&oc, &r);
            if ((*fresh_t)[i]) p->hdr[i].storage = (*fresh_t)[i]->storage;
        }
    }
    return r;
}

/* Walks the launch list (max-autotune's hook first, on its first run). */
TC__FN tc_result tc__program_launches(tc__program *p, tc_ctx *ctx, char *err, size_t errcap) {
    tc_result r = TC_OK;
    int k;
    for (k = 0; r == TC_OK && k < p->nlaunch; k++) {
        tc__launch *l = &p->launch[k];
        tc_tensor *out = &p->hdr[l->node];
        if (l->is_view) {
            tc__view_header(p, l);
            continue;
        }
        if (tc__numel(out) == 0) continue;
        if (p->tune && !l->inplace) r = p->tune(p, ctx, l, out);
        if (r == TC_OK) {
            ctx->thread_cap = l->threads;
            r = tc__launch_exec(p, ctx, l, out);
            ctx->thread_cap = 0;
        }
        if (r != TC_OK) {
            const char *name = l->call.name ? l->call.name : tc__optable[l->call.op].name;
            if (l->call.file) tc__fmt(err, errcap, "tc_%s (%s:%d): %s", name, l->call.file, l->call.line, l->call.msg);
            else tc__fmt(err, errcap, "tc_%s: %s", name, l->call.msg);
        }
    }
    return r;
}

/* Runs the program.  Default mode: outputs[] get fresh tensors in the
 * caller's scope.  Persistent: outputs[] are the program's headers, valid
 * until the next call.  On error outputs[] are NULL and err says why. */
TC__FN tc_result tc__program_run(tc__program *p, tc_ctx *ctx, tc_tensor *const *inputs, tc_tensor **outputs,
                                 char *err, size_t errcap) {
    const tc__graph *g = p->g;
    tc__scratch_cache *saved = ctx->scratch;
    tc__trace *saved_trace = ctx->trace; /* a segment runs mid-trace: compute, don't record */
    tc_tensor **fresh_t = NULL, **copies = NULL;
    tc_result r;
    int i;
    ctx->trace = NULL;
    r = tc__program_bind(p, ctx, inputs, &copies);
    if (r == TC_OK) r = tc__program_memory_of_call(p, ctx, &fresh_t);
    ctx->scratch = p->cache;
    if (r == TC_OK) r = p->persistent && p->be->replay ? p->be->replay(p, ctx, err, errcap) : tc__program_launches(p, ctx, err, errcap);
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
            outputs[i] = tc__clone(ctx, p->ref[o], NULL, g->nodes[o].file, g->nodes[o].line);
        }
    }
    ctx->trace = saved_trace;
    if (copies) {
        for (i = 0; i < g->n; i++) tc_free(copies[i]);
        TC_FREE(copies);
    }
    if (r == TC_OK) p->tune = NULL;
    if (!p->persistent) {
        if (fresh_t)
            for (i = 0; i < g->n; i++)
                if (fresh_t[i]) tc_free(fresh_t[i]);
        TC_FREE(fresh_t);
        p->be->block_put(ctx, p->arena_raw, p->arena, p->arena_cap);
        p->arena_raw = NULL;
        p->arena = NULL;
    }
    return r;
}
