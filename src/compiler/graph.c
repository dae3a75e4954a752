/* Graph IR: the nodes a trace records.  A node is one op-table call (op,
 * attributes, input nodes) with its inferred dtype and shape, or a leaf: a
 * function input, a parameter read by identity, or a constant.  Nodes are
 * hash-consed on insertion, so a repeated computation is recorded once
 * (CSE for free); passes are plain functions from a graph to a graph. */

typedef enum tc__node_kind {
    TC__NODE_OP = 0,
    TC__NODE_INPUT,     /* a.i[0] = input index                      */
    TC__NODE_PARAM      /* a tensor the function read, by identity   */
} tc__node_kind;

typedef struct tc__node {
    tc__node_kind kind;
    tc__op op;
    int nin;
    int *in;                   /* input node ids (points at in_small or heap) */
    int in_small[TC__MAX_IN];
    tc__attrs a;
    tc_tensor *param;          /* PARAM: the user's tensor               */
    int wrapped;               /* a scalar argument (promotion tier)      */
    tc_dtype dt;
    int ndim;
    int64_t shape[TC_MAX_DIMS];
    const char *file;          /* call site, for explain and errors      */
    int line;
    uint64_t hash;
    int next_same_hash;        /* bucket chain, -1 ends                  */
    int vroot;                 /* the node a chain of views over it starts
                                  from (itself when not a view)          */
} tc__node;

typedef struct tc__graph {
    tc__node *nodes;
    int n, cap;
    int *buckets;              /* hash table of node ids, -1 = empty     */
    int nbuckets;
    int *outputs;
    int nout;
    void **owned;              /* buffers the graph owns (copied constants) */
    int nowned;
} tc__graph;

TC__FN void tc__graph_free(tc__graph *g) {
    int i;
    if (!g) return;
    for (i = 0; i < g->n; i++)
        if (g->nodes[i].in != g->nodes[i].in_small) TC_FREE(g->nodes[i].in);
    for (i = 0; i < g->nowned; i++) TC_FREE(g->owned[i]);
    TC_FREE(g->owned);
    TC_FREE(g->nodes);
    TC_FREE(g->buckets);
    TC_FREE(g->outputs);
    TC_FREE(g);
}

TC__FN tc__graph *tc__graph_new(void) {
    tc__graph *g = (tc__graph *)TC_MALLOC(sizeof *g);
    int i;
    if (!g) return NULL;
    memset(g, 0, sizeof *g);
    g->nbuckets = 256;
    g->buckets = (int *)TC_MALLOC(sizeof(int) * (size_t)g->nbuckets);
    if (!g->buckets) {
        TC_FREE(g);
        return NULL;
    }
    for (i = 0; i < g->nbuckets; i++) g->buckets[i] = -1;
    return g;
}

TC__FN uint64_t tc__hash_mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

TC__FN uint64_t tc__node_hash(const tc__node *n) {
    uint64_t h = tc__hash_mix((uint64_t)n->kind, (uint64_t)n->op);
    int i;
    for (i = 0; i < n->nin; i++) h = tc__hash_mix(h, (uint64_t)(n->in[i] + 1));
    for (i = 0; i < TC__MAX_IATTR; i++) h = tc__hash_mix(h, (uint64_t)n->a.i[i]);
    for (i = 0; i < 4; i++) {
        uint64_t bits;
        memcpy(&bits, &n->a.f[i], sizeof bits);
        h = tc__hash_mix(h, bits);
    }
    h = tc__hash_mix(h, (uint64_t)n->a.dt);
    h = tc__hash_mix(h, (uint64_t)(uintptr_t)n->a.ptr);
    h = tc__hash_mix(h, (uint64_t)(uintptr_t)n->param);
    return tc__hash_mix(h, (uint64_t)n->wrapped);
}

/* Same computation: op, inputs, attributes (bitwise: -0.0 != 0.0, NaN == NaN). */
TC__FN int tc__node_same(const tc__node *a, const tc__node *b) {
    int i;
    if (a->kind != b->kind || a->op != b->op || a->nin != b->nin || a->param != b->param || a->wrapped != b->wrapped)
        return 0;
    for (i = 0; i < a->nin; i++)
        if (a->in[i] != b->in[i]) return 0;
    return memcmp(&a->a, &b->a, sizeof a->a) == 0;
}

/* The node the views ending at node id start from, set on insertion (so
 * a walk down a chain of views costs nothing, whatever its length). */
TC__FN int tc__view_root_of(const tc__graph *g, const tc__node *n, int id) {
    if (n->kind == TC__NODE_OP && tc__optable[n->op].cls == TC__CLASS_VIEW && n->nin > 0 && n->in[0] >= 0)
        return g->nodes[n->in[0]].vroot;
    return id;
}

/* Rebuilds the hash table with nb buckets (more than it has), so a lookup
 * stays O(1) however large the graph grows.  -1 on OOM. */
TC__FN int tc__graph_rehash(tc__graph *g, int nb) {
    int i, *b = (int *)TC_MALLOC(sizeof(int) * (size_t)nb);
    if (!b) return -1;
    for (i = 0; i < nb; i++) b[i] = -1;
    for (i = 0; i < g->n; i++) {
        int k = (int)(g->nodes[i].hash % (uint64_t)nb);
        g->nodes[i].next_same_hash = b[k];
        b[k] = i;
    }
    TC_FREE(g->buckets);
    g->buckets = b;
    g->nbuckets = nb;
    return 0;
}

/* Room for cap nodes (and as many hash buckets), so a graph whose size is
 * known ahead (a pass's copy of one) grows without copies.  -1 on OOM. */
TC__FN int tc__graph_reserve(tc__graph *g, int cap) {
    int nb = g->nbuckets, i;
    tc__node *nn;
    if (cap > g->cap) {
        /* moving the nodes moves their inline input arrays: fix the pointers */
        if (!(nn = (tc__node *)TC_MALLOC(sizeof(tc__node) * (size_t)cap))) return -1;
        if (g->n) memcpy(nn, g->nodes, sizeof(tc__node) * (size_t)g->n);
        for (i = 0; i < g->n; i++)
            if (g->nodes[i].in == g->nodes[i].in_small) nn[i].in = nn[i].in_small;
        TC_FREE(g->nodes);
        g->nodes = nn;
        g->cap = cap;
    }
    while (nb < cap && nb < (1 << 28)) nb *= 2;
    return nb > g->nbuckets ? tc__graph_rehash(g, nb) : 0;
}

/* Ops whose result must not be shared between two calls. */
TC__FN int tc__node_cse_ok(const tc__node *n) { return !(n->kind == TC__NODE_OP && n->op == TC__OP_EMPTY); }

/* Inserts *proto (its `in` may point anywhere; it is copied) unless an equal
 * node exists; returns the node id, or -1 on OOM.  *fresh tells which. */
TC__FN int tc__graph_add(tc__graph *g, const tc__node *proto, int *fresh) {
    tc__node *n;
    uint64_t h;
    int b, id, *heap_in = NULL;
    tc__node tmp = *proto;
    if (g->n >= g->nbuckets && g->nbuckets < (1 << 28) && tc__graph_rehash(g, 2 * g->nbuckets) != 0) return -1;
    /* copy the inputs first: proto->in may point into g->nodes, which
     * growing the array below frees */
    if (tmp.nin <= TC__MAX_IN) {
        if (tmp.nin) memmove(tmp.in_small, proto->in, sizeof(int) * (size_t)tmp.nin);
        tmp.in = tmp.in_small;
    } else {
        heap_in = (int *)TC_MALLOC(sizeof(int) * (size_t)tmp.nin);
        if (!heap_in) return -1;
        memcpy(heap_in, proto->in, sizeof(int) * (size_t)tmp.nin);
        tmp.in = heap_in;
    }
    h = tc__node_hash(&tmp);
    b = (int)(h % (uint64_t)g->nbuckets);
    *fresh = 0;
    if (tc__node_cse_ok(&tmp))
        for (id = g->buckets[b]; id >= 0; id = g->nodes[id].next_same_hash)
            if (g->nodes[id].hash == h && tc__node_same(&g->nodes[id], &tmp)) {
                TC_FREE(heap_in);
                return id;
            }
    if (g->n == g->cap && tc__graph_reserve(g, g->cap ? g->cap * 2 : 64) != 0) {
        TC_FREE(heap_in);
        return -1;
    }
    id = g->n;
    n = &g->nodes[id];
    *n = tmp;
    n->in = heap_in ? heap_in : n->in_small;
    n->hash = h;
    n->vroot = tc__view_root_of(g, n, id);
    n->next_same_hash = g->buckets[b];
    g->buckets[b] = id;
    g->n++;
    *fresh = 1;
    return id;
}

TC__FN int tc__graph_own(tc__graph *g, void *buf) {
    void **o = (void **)TC_REALLOC(g->owned, sizeof(void *) * (size_t)(g->nowned + 1));
    if (!o) return -1;
    g->owned = o;
    g->owned[g->nowned++] = buf;
    return 0;
}

/* ---- passes --------------------------------------------------------------- */

/* Dead-code elimination: keeps the nodes the outputs depend on (and every
 * input, so input numbering stays stable), renumbers in order. */
TC__FN int tc__pass_dce(tc__graph *g) {
    char *live;
    int *remap, i, k, n = 0, removed;
    if (g->n == 0) return 0;
    live = (char *)TC_MALLOC((size_t)g->n);
    remap = (int *)TC_MALLOC(sizeof(int) * (size_t)g->n);
    if (!live || !remap) {
        TC_FREE(live);
        TC_FREE(remap);
        return -1;
    }
    memset(live, 0, (size_t)g->n);
    for (i = 0; i < g->nout; i++) live[g->outputs[i]] = 1;
    /* nodes only refer to earlier nodes: one backward sweep finds them all */
    for (i = g->n - 1; i >= 0; i--) {
        if (g->nodes[i].kind == TC__NODE_INPUT) live[i] = 1;
        if (!live[i]) continue;
        for (k = 0; k < g->nodes[i].nin; k++)
            if (g->nodes[i].in[k] >= 0) live[g->nodes[i].in[k]] = 1; /* -1: absent optional input */
    }
    for (i = 0; i < g->n; i++) {
        tc__node *nd = &g->nodes[i];
        if (!live[i]) {
            if (nd->in != nd->in_small) TC_FREE(nd->in);
            remap[i] = -1;
            continue;
        }
        remap[i] = n;
        for (k = 0; k < nd->nin; k++)
            if (nd->in[k] >= 0) nd->in[k] = remap[nd->in[k]];
        nd->vroot = remap[nd->vroot]; /* live: the views' inputs are */
        if (n != i) {
            g->nodes[n] = *nd;
            if (nd->in == nd->in_small) g->nodes[n].in = g->nodes[n].in_small;
        }
        n++;
    }
    for (i = 0; i < g->nout; i++) g->outputs[i] = remap[g->outputs[i]];
    removed = g->n - n;
    g->n = n;
    /* rebuild the hash chains for the surviving nodes */
    for (i = 0; i < g->nbuckets; i++) g->buckets[i] = -1;
    for (i = 0; i < g->n; i++) {
        int b = (int)(g->nodes[i].hash % (uint64_t)g->nbuckets);
        g->nodes[i].next_same_hash = g->buckets[b];
        g->buckets[b] = i;
    }
    TC_FREE(live);
    TC_FREE(remap);
    return removed;
}

/* Appends printf output to buf[0..cap) at n (counting past cap, like
 * snprintf, so a NULL buf measures).  Used with `buf`, `cap`, `n` in scope. */
#define TC__P_(...)                                                       \
    do {                                                                  \
        int w_ = snprintf(buf ? buf + n : NULL, buf && n < cap ? cap - n : 0, __VA_ARGS__); \
        if (w_ > 0) n += (size_t)w_;                                      \
    } while (0)

/* Graph as Graphviz DOT: one box per node (op, dtype, shape, call site);
 * with group[] (node -> fused kernel, -1 none) each kernel is a cluster. */
TC__FN size_t tc__graph_dot(const tc__graph *g, const int *group, char *buf, size_t cap) {
    size_t n = 0;
    int i, k, maxg = -1;
    TC__P_("digraph tcompile {\n  node [shape=box, fontname=monospace];\n");
    for (i = 0; group && i < g->n; i++)
        if (group[i] > maxg) maxg = group[i];
    for (k = 0; k <= maxg; k++) {
        TC__P_("  subgraph cluster_k%d {\n    label=\"kernel %d\"; style=filled; color=lightgrey;\n", k, k);
        for (i = 0; i < g->n; i++)
            if (group[i] == k) TC__P_("    n%d;\n", i);
        TC__P_("  }\n");
    }
    for (i = 0; i < g->n; i++) {
        const tc__node *nd = &g->nodes[i];
        char shp[96];
        const char *what = nd->kind == TC__NODE_INPUT ? "input" : nd->kind == TC__NODE_PARAM ? "param"
                                                                                                : tc__optable[nd->op].name;
        tc__shape_str(nd->ndim, nd->shape, shp, sizeof shp);
        TC__P_("  n%d [label=\"%%%d %s\\n%s%s\"%s];\n", i, i, what, tc__dtype_names[nd->dt], shp,
               nd->kind != TC__NODE_OP ? ", style=rounded" : "");
        for (k = 0; k < nd->nin; k++)
            if (nd->in[k] >= 0) TC__P_("  n%d -> n%d;\n", nd->in[k], i);
    }
    for (i = 0; i < g->nout; i++) TC__P_("  out%d [shape=plaintext];\n  n%d -> out%d;\n", i, g->outputs[i], i);
    TC__P_("}\n");
    if (buf && cap) buf[n < cap ? n : cap - 1] = 0;
    return n;
}

/* Graph as text, one node per line (TC_LOGS=graph and tc_explain). */
TC__FN size_t tc__graph_print(const tc__graph *g, char *buf, size_t cap) {
    size_t n = 0;
    int i, k;
    for (i = 0; i < g->n; i++) {
        const tc__node *nd = &g->nodes[i];
        char shp[96];
        tc__shape_str(nd->ndim, nd->shape, shp, sizeof shp);
        TC__P_("  %%%d = ", i);
        if (nd->kind == TC__NODE_INPUT) TC__P_("input[%d]", (int)nd->a.i[0]);
        else if (nd->kind == TC__NODE_PARAM) TC__P_("param");
        else {
            TC__P_("%s(", tc__optable[nd->op].name);
            for (k = 0; k < nd->nin; k++) TC__P_(k ? ", %%%d" : "%%%d", nd->in[k]);
            TC__P_(")");
        }
        TC__P_(" : %s%s", tc__dtype_names[nd->dt], shp);
        if (nd->file) TC__P_("  # %s:%d", nd->file, nd->line);
        TC__P_("\n");
    }
    TC__P_("  return");
    for (i = 0; i < g->nout; i++) TC__P_(i ? ", %%%d" : " %%%d", g->outputs[i]);
    TC__P_("\n");
    if (buf && cap) buf[n < cap ? n : cap - 1] = 0;
    return n;
}

#undef TC__P_

/* ---- automatic dynamic shapes ------------------------------------------------
 * C has no symbolic integers: a function that reads tc_dim() bakes sizes into
 * attributes (reshape targets, arange bounds).  So a dynamic dim is inferred
 * from two traces at sizes s1 != s2: every attribute or shape entry that
 * differs must be an affine function of the size, v = a*s + b (integer a, b
 * for integer slots), fitted from the two values; a third trace verifies the
 * fit before the graph is instantiated from it without tracing. */

#define TC__NSLOTS (TC__MAX_IATTR + 4 + TC_MAX_DIMS)

typedef struct tc__sym {
    int node, slot;            /* slot: a.i[k], then a.f[k], then shape[k] */
    double a, b;
} tc__sym;

TC__FN double tc__slot_get(const tc__node *n, int s) {
    if (s < TC__MAX_IATTR) return (double)n->a.i[s];
    if (s < TC__MAX_IATTR + 4) return n->a.f[s - TC__MAX_IATTR];
    return (double)n->shape[s - TC__MAX_IATTR - 4];
}

TC__FN void tc__slot_set(tc__node *n, int s, double v) {
    if (s < TC__MAX_IATTR) n->a.i[s] = (int64_t)v;
    else if (s < TC__MAX_IATTR + 4) n->a.f[s - TC__MAX_IATTR] = v;
    else n->shape[s - TC__MAX_IATTR - 4] = (int64_t)v;
}

/* Bytes of a FROM_DATA node's payload. */
TC__FN size_t tc__payload_bytes(const tc__node *n) {
    return (size_t)tc__numel_of(n->ndim, n->shape) * tc__dtype_sizes[n->dt];
}

/* Same structure: everything but the numeric slots (payloads compared by
 * content, which needs equal shapes). */
TC__FN int tc__graph_same_structure(const tc__graph *x, const tc__graph *y) {
    int i, k;
    if (x->n != y->n || x->nout != y->nout) return 0;
    for (i = 0; i < x->nout; i++)
        if (x->outputs[i] != y->outputs[i]) return 0;
    for (i = 0; i < x->n; i++) {
        const tc__node *p = &x->nodes[i], *q = &y->nodes[i];
        if (p->kind != q->kind || p->op != q->op || p->nin != q->nin || p->dt != q->dt || p->ndim != q->ndim ||
            p->param != q->param || p->wrapped != q->wrapped || p->a.dt != q->a.dt)
            return 0;
        for (k = 0; k < p->nin; k++)
            if (p->in[k] != q->in[k]) return 0;
        if (p->kind == TC__NODE_OP && p->op == TC__OP_FROM_DATA) {
            if (memcmp(p->shape, q->shape, sizeof p->shape) != 0 ||
                memcmp(p->a.ptr, q->a.ptr, tc__payload_bytes(p)) != 0)
                return 0;
        } else if (p->a.ptr != q->a.ptr) {
            return 0;
        }
    }
    return 1;
}

/* Equal in every slot too (the verification of a fit). */
TC__FN int tc__graph_equal(const tc__graph *x, const tc__graph *y) {
    int i, s;
    if (!tc__graph_same_structure(x, y)) return 0;
    for (i = 0; i < x->n; i++)
        for (s = 0; s < TC__NSLOTS; s++)
            if (tc__slot_get(&x->nodes[i], s) != tc__slot_get(&y->nodes[i], s)) return 0;
    return 1;
}

/* Fits every differing slot of g1 (traced at s1) and g2 (at s2).  Returns the
 * number of symbolic slots (>= 0) with *out allocated, or -1 when some slot
 * is not affine with integer coefficients where it must be. */
TC__FN int tc__graph_fit(const tc__graph *g1, const tc__graph *g2, int64_t s1, int64_t s2, tc__sym **out) {
    tc__sym *sym = NULL;
    int i, s, n = 0, cap = 0;
    *out = NULL;
    if (s1 == s2 || !tc__graph_same_structure(g1, g2)) return -1;
    for (i = 0; i < g1->n; i++)
        for (s = 0; s < TC__NSLOTS; s++) {
            double v1 = tc__slot_get(&g1->nodes[i], s), v2 = tc__slot_get(&g2->nodes[i], s), a, b;
            if (v1 == v2 || (v1 != v1 && v2 != v2)) continue;
            a = (v2 - v1) / (double)(s2 - s1);
            b = v1 - a * (double)s1;
            if ((s < TC__MAX_IATTR || s >= TC__MAX_IATTR + 4) && (a != floor(a) || b != floor(b))) {
                TC_FREE(sym);
                return -1;
            }
            if (n == cap) {
                tc__sym *ns;
                cap = cap ? cap * 2 : 16;
                ns = (tc__sym *)TC_REALLOC(sym, sizeof(tc__sym) * (size_t)cap);
                if (!ns) {
                    TC_FREE(sym);
                    return -1;
                }
                sym = ns;
            }
            sym[n].node = i;
            sym[n].slot = s;
            sym[n].a = a;
            sym[n].b = b;
            n++;
        }
    *out = sym;
    return n;
}

/* A deep copy (payloads duplicated, so each graph owns its own). */
TC__FN tc__graph *tc__graph_copy(const tc__graph *g) {
    tc__graph *c = tc__graph_new();
    int i, fresh, ok = c != NULL && tc__graph_reserve(c, g->n) == 0;
    for (i = 0; ok && i < g->n; i++) {
        tc__node nd = g->nodes[i];
        if (nd.kind == TC__NODE_OP && nd.op == TC__OP_FROM_DATA) {
            size_t bytes = tc__payload_bytes(&nd);
            void *p = tc__malloc(bytes);
            if (!p || tc__graph_own(c, p)) {
                TC_FREE(p);
                ok = 0;
                break;
            }
            memcpy(p, nd.a.ptr, bytes);
            nd.a.ptr = p;
        }
        /* the original has no duplicates (CSE), so each node keeps its id */
        if (tc__graph_add(c, &nd, &fresh) != i) ok = 0;
    }
    if (ok) {
        c->outputs = (int *)tc__malloc(sizeof(int) * (size_t)(g->nout ? g->nout : 1));
        if (!c->outputs) ok = 0;
        else {
            memcpy(c->outputs, g->outputs, sizeof(int) * (size_t)g->nout);
            c->nout = g->nout;
        }
    }
    if (!ok) {
        tc__graph_free(c);
        return NULL;
    }
    return c;
}

/* The template with every symbolic slot evaluated at size s. */
TC__FN tc__graph *tc__graph_instantiate(const tc__graph *tmpl, const tc__sym *sym, int nsym, int64_t s) {
    tc__graph *c = tc__graph_copy(tmpl);
    int k;
    if (!c) return NULL;
    for (k = 0; k < nsym; k++) tc__slot_set(&c->nodes[sym[k].node], sym[k].slot, sym[k].a * (double)s + sym[k].b);
    /* the hash table keys are stale now; instances are never added to */
    return c;
}
