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

/* Ops whose result must not be shared between two calls. */
TC__FN int tc__node_cse_ok(const tc__node *n) { return !(n->kind == TC__NODE_OP && n->op == TC__OP_EMPTY); }

/* Inserts *proto (its `in` may point anywhere; it is copied) unless an equal
 * node exists; returns the node id, or -1 on OOM.  *fresh tells which. */
TC__FN int tc__graph_add(tc__graph *g, const tc__node *proto, int *fresh) {
    tc__node *n;
    uint64_t h;
    int b, id;
    tc__node tmp = *proto;
    tmp.in = (int *)proto->in;
    h = tc__node_hash(&tmp);
    b = (int)(h % (uint64_t)g->nbuckets);
    *fresh = 0;
    if (tc__node_cse_ok(&tmp))
        for (id = g->buckets[b]; id >= 0; id = g->nodes[id].next_same_hash)
            if (g->nodes[id].hash == h && tc__node_same(&g->nodes[id], &tmp)) return id;
    /* realloc of nodes moves the inline arrays: fix pointers before growing */
    if (g->n == g->cap) {
        int cap = g->cap ? g->cap * 2 : 64, i;
        tc__node *nn = (tc__node *)TC_MALLOC(sizeof(tc__node) * (size_t)cap);
        if (!nn) return -1;
        if (g->n) memcpy(nn, g->nodes, sizeof(tc__node) * (size_t)g->n);
        for (i = 0; i < g->n; i++)
            if (g->nodes[i].in == g->nodes[i].in_small) nn[i].in = nn[i].in_small;
        TC_FREE(g->nodes);
        g->nodes = nn;
        g->cap = cap;
    }
    id = g->n;
    n = &g->nodes[id];
    *n = tmp;
    if (tmp.nin <= TC__MAX_IN) {
        n->in = n->in_small;
    } else {
        n->in = (int *)TC_MALLOC(sizeof(int) * (size_t)tmp.nin);
        if (!n->in) return -1;
    }
    if (tmp.nin) memmove(n->in, proto->in, sizeof(int) * (size_t)tmp.nin);
    n->hash = h;
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

/* Graph as Graphviz DOT: one box per node (op, dtype, shape, call site). */
TC__FN size_t tc__graph_dot(const tc__graph *g, char *buf, size_t cap) {
    size_t n = 0;
    int i, k;
#define TC__P_(...)                                                       \
    do {                                                                  \
        int w_ = snprintf(buf ? buf + n : NULL, buf && n < cap ? cap - n : 0, __VA_ARGS__); \
        if (w_ > 0) n += (size_t)w_;                                      \
    } while (0)
    TC__P_("digraph tcompile {\n  node [shape=box, fontname=monospace];\n");
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
#undef TC__P_
    if (buf && cap) buf[n < cap ? n : cap - 1] = 0;
    return n;
}

/* Graph as text, one node per line (TC_LOGS=graph and tc_explain). */
TC__FN size_t tc__graph_print(const tc__graph *g, char *buf, size_t cap) {
    size_t n = 0;
    int i, k;
#define TC__P_(...)                                                       \
    do {                                                                  \
        int w_ = snprintf(buf ? buf + n : NULL, buf && n < cap ? cap - n : 0, __VA_ARGS__); \
        if (w_ > 0) n += (size_t)w_;                                      \
    } while (0)
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
#undef TC__P_
    if (buf && cap) buf[n < cap ? n : cap - 1] = 0;
    return n;
}
