/* Graph passes, each a plain function from a graph to a graph: algebraic
 * simplification, constant folding, decomposition of composite ops into
 * primitives.  (CSE is hash-consing in tc__graph_add; DCE is in graph.c.)
 * A pass rebuilds the graph node by node: a rewrite hook sees each old node
 * with its inputs already mapped into the new graph and returns the new id,
 * either an existing node or one it adds. */

/* Rewrite hook: new id for old node i, or -2 to copy it unchanged. */
typedef int (*tc__rewrite_fn)(tc__graph *ng, const tc__node *nd, const int *in, void *arg);

/* Node metadata as a tensor header, for running shape rules on the graph. */
TC__FN void tc__node_as_tensor(const tc__node *n, tc_tensor *t) {
    memset(t, 0, sizeof *t);
    t->dtype = n->dt;
    t->ndim = n->ndim;
    memcpy(t->shape, n->shape, sizeof t->shape);
    tc__contig_strides(t->ndim, t->shape, t->strides);
    t->is_wrapped = n->wrapped;
    t->lazy = 1;
}

/* Runs op's shape rule on graph nodes in[] (-1: an absent optional
 * input) into *c: its result's dtype, shape and normalized attributes
 * (c's input pointers are not valid afterwards). */
TC__FN tc_result tc__g_shape(const tc__graph *g, tc__op op, const tc__attrs *a, const int *in, int nin, const char *file,
                             int line, tc__call *c) {
    tc_tensor hdr[TC__MAX_IN];
    int k;
    if (nin > TC__MAX_IN) return TC_ERR_INVALID_ARG;
    tc__call_init(c, NULL, op, file, line);
    if (a) c->a = *a;
    c->nin = nin;
    c->optional = ~0u;
    for (k = 0; k < nin; k++) {
        if (in[k] < 0) continue;
        tc__node_as_tensor(&g->nodes[in[k]], &hdr[k]);
        c->in[k] = &hdr[k];
    }
    return tc__optable[op].shape(c);
}

/* Adds op(in...) to g with its shape rule applied; -1 on a rule error/OOM. */
TC__FN int tc__g_op(tc__graph *g, tc__op op, const tc__attrs *a, const int *in, int nin, const char *file, int line) {
    tc__call c;
    tc__node nd;
    int fresh;
    if (tc__g_shape(g, op, a, in, nin, file, line, &c) != TC_OK) return -1;
    memset(&nd, 0, sizeof nd);
    nd.kind = TC__NODE_OP;
    nd.op = op;
    nd.nin = nin;
    nd.in = (int *)in;
    nd.a = c.a;
    nd.dt = c.odt;
    nd.ndim = c.ondim;
    memcpy(nd.shape, c.oshape, sizeof nd.shape);
    nd.file = file;
    nd.line = line;
    return tc__graph_add(g, &nd, &fresh);
}

/* A 0-d constant (a scalar argument: it promotes like one). */
TC__FN int tc__g_scalar(tc__graph *g, double v, const char *file, int line) {
    tc__attrs a;
    tc__node nd;
    int fresh;
    memset(&a, 0, sizeof a);
    a.dt = TC_F32;
    a.f[0] = v;
    memset(&nd, 0, sizeof nd);
    nd.kind = TC__NODE_OP;
    nd.op = TC__OP_FULL;
    nd.a = a;
    nd.dt = TC_F32;
    nd.in = nd.in_small;
    nd.wrapped = 1;
    nd.file = file;
    nd.line = line;
    return tc__graph_add(g, &nd, &fresh);
}

/* Constant data (a from_data node) that g owns from now on; -1 on OOM
 * (data is freed then). */
TC__FN int tc__g_data(tc__graph *g, tc_dtype dt, int ndim, const int64_t *shape, void *data, const char *file, int line) {
    tc__node nd;
    int k, fresh;
    if (!data || tc__graph_own(g, data)) {
        TC_FREE(data);
        return -1;
    }
    memset(&nd, 0, sizeof nd);
    nd.kind = TC__NODE_OP;
    nd.op = TC__OP_FROM_DATA;
    nd.in = nd.in_small;
    nd.a.dt = dt;
    for (k = 0; k < ndim; k++) nd.a.i[k] = shape[k];
    nd.a.i[TC__A_NDIM] = ndim;
    nd.a.ptr = data;
    nd.dt = dt;
    nd.ndim = ndim;
    memcpy(nd.shape, shape, sizeof(int64_t) * (size_t)ndim);
    nd.file = file;
    nd.line = line;
    return tc__graph_add(g, &nd, &fresh);
}

TC__FN int tc__g_unary(tc__graph *g, tc__op op, int x, const char *file, int line) {
    return x < 0 ? -1 : tc__g_op(g, op, NULL, &x, 1, file, line);
}

TC__FN int tc__g_binary(tc__graph *g, tc__op op, int x, int y, const char *file, int line) {
    int in[2];
    in[0] = x;
    in[1] = y;
    return x < 0 || y < 0 ? -1 : tc__g_op(g, op, NULL, in, 2, file, line);
}

/* x with its last two dims swapped (a transpose view). */
TC__FN int tc__g_transpose_last(tc__graph *g, int x, const char *file, int line) {
    tc__attrs a;
    int d, nd = g->nodes[x].ndim;
    memset(&a, 0, sizeof a);
    for (d = 0; d < nd; d++) a.i[d] = d;
    a.i[nd - 2] = nd - 1;
    a.i[nd - 1] = nd - 2;
    return tc__g_op(g, TC__OP_PERMUTE, &a, &x, 1, file, line);
}

/* Rebuilds g through fn, visiting the old nodes in `order` (a topological
 * order of all of them; NULL: as they are); the old graph is freed and the
 * new one returned (NULL on OOM, with g freed as well).  *changed counts
 * rewritten nodes. */
TC__FN tc__graph *tc__graph_rebuild_in(tc__graph *g, const int *order, tc__rewrite_fn fn, void *arg, int *changed) {
    tc__graph *ng = tc__graph_new();
    int *map = (int *)tc__malloc(sizeof(int) * (size_t)(g->n ? g->n : 1)), o, i, k;
    /* about as many nodes as the old graph (a pass that adds many grows it) */
    int ok = ng && map && tc__graph_reserve(ng, g->n + g->n / 8 + 64) == 0;
    *changed = 0;
    for (o = 0; ok && o < g->n; o++) {
        const tc__node *nd = &g->nodes[i = order ? order[o] : o];
        int small[TC__MAX_IN], *in = small, id;
        if (nd->nin > TC__MAX_IN && !(in = (int *)tc__malloc(sizeof(int) * (size_t)nd->nin))) {
            ok = 0;
            break;
        }
        for (k = 0; k < nd->nin; k++) in[k] = nd->in[k] >= 0 ? map[nd->in[k]] : -1;
        id = nd->kind == TC__NODE_OP && fn ? fn(ng, nd, in, arg) : -2;
        if (id == -2) {
            tc__node cp = *nd;
            int fresh;
            cp.in = in;
            id = tc__graph_add(ng, &cp, &fresh);
        } else if (id >= 0) {
            (*changed)++;
        }
        if (in != small) TC_FREE(in);
        if (id < 0) ok = 0;
        map[i] = id;
    }
    if (ok) {
        ng->outputs = (int *)tc__malloc(sizeof(int) * (size_t)(g->nout ? g->nout : 1));
        ok = ng->outputs != NULL;
        for (i = 0; ok && i < g->nout; i++) ng->outputs[i] = map[g->outputs[i]];
        ng->nout = ok ? g->nout : 0;
        /* constants copied into the old graph now belong to the new one */
        for (i = 0; ok && i < g->nowned; i++) {
            if (tc__graph_own(ng, g->owned[i])) ok = 0;
            else g->owned[i] = NULL;
        }
    }
    TC_FREE(map);
    tc__graph_free(g);
    if (!ok) {
        tc__graph_free(ng);
        return NULL;
    }
    return ng;
}

TC__FN tc__graph *tc__graph_rebuild(tc__graph *g, tc__rewrite_fn fn, void *arg, int *changed) {
    return tc__graph_rebuild_in(g, NULL, fn, arg, changed);
}

/* Nodes that read no input (parameters, constants and what is computed
 * from them alone: batch norm's per-channel scale and shift, a weight's
 * transpose) move ahead of the rest, each group in its old order.  The
 * planner runs nodes in graph order and a contraction's epilogue may only
 * read what exists before the contraction runs, so without this the
 * scale that batch norm traced after its conv would keep the norm out of
 * the conv's epilogue.  (Random ops read no input either; they all move,
 * so the order they draw in is kept.) */
TC__FN tc__graph *tc__pass_hoist(tc__graph *g, int *changed) {
    int n = g->n ? g->n : 1, *order = (int *)tc__malloc(sizeof(int) * (size_t)n), i, k, at = 0, pass, moved = 0;
    char *dep = (char *)tc__malloc((size_t)n);
    tc__graph *ng;
    *changed = 0;
    if (!order || !dep) {
        TC_FREE(order);
        TC_FREE(dep);
        tc__graph_free(g);
        return NULL;
    }
    for (i = 0; i < g->n; i++) {
        dep[i] = g->nodes[i].kind == TC__NODE_INPUT;
        for (k = 0; k < g->nodes[i].nin && !dep[i]; k++)
            if (g->nodes[i].in[k] >= 0 && dep[g->nodes[i].in[k]]) dep[i] = 1;
    }
    for (pass = 0; pass < 2; pass++)
        for (i = 0; i < g->n; i++)
            if (dep[i] == pass) {
                moved += at != i;
                order[at++] = i;
            }
    ng = moved ? tc__graph_rebuild_in(g, order, NULL, NULL, changed) : g;
    if (ng) *changed = moved;
    TC_FREE(order);
    TC_FREE(dep);
    return ng;
}

/* ---- algebraic simplification ---------------------------------------------- */

TC__FN int tc__is_const(const tc__graph *g, int id, double v) {
    const tc__node *n = &g->nodes[id];
    return n->kind == TC__NODE_OP && n->op == TC__OP_FULL && n->a.f[0] == v;
}

/* x can stand for node nd: same dtype and shape. */
TC__FN int tc__same_meta(const tc__graph *g, int x, const tc__node *nd) {
    const tc__node *n = &g->nodes[x];
    return n->dt == nd->dt && n->ndim == nd->ndim && memcmp(n->shape, nd->shape, sizeof(int64_t) * (size_t)nd->ndim) == 0;
}

/* a -> b -> a loses nothing */
TC__FN int tc__cast_lossless(tc_dtype a, tc_dtype b) {
    return a == b || a == TC_BOOL || ((a == TC_F16 || a == TC_BF16) && b == TC_F32);
}

/* Node id of g is an op's own result, so contiguous whatever the inputs'
 * strides (not an input, a parameter or a view). */
TC__FN int tc__contig_result(const tc__graph *g, int id) {
    const tc__node *n = &g->nodes[id];
    return n->kind == TC__NODE_OP && tc__optable[n->op].cls != TC__CLASS_VIEW;
}

/* Node id of g reads memory an op of the graph wrote (itself, or what a
 * chain of views of it starts from), not the caller's (an input, a
 * parameter, wrapped memory). */
TC__FN int tc__fresh_root(const tc__graph *g, int id) { return tc__contig_result(g, g->nodes[id].vroot); }

/* A copy of node x: an op's own result with x's values. */
TC__FN int tc__g_clone(tc__graph *g, int x, const char *file, int line) {
    tc__attrs none;
    memset(&none, 0, sizeof none);
    return tc__g_op(g, TC__OP_CLONE, &none, &x, 1, file, line);
}

/* arg: the graph being rebuilt (nd's), read for what nd's inputs were. */
TC__FN int tc__simplify_node(tc__graph *g, const tc__node *nd, const int *in, void *arg) {
    const tc__graph *old = (const tc__graph *)arg;
    switch (nd->op) {
    case TC__OP_MUL:
        if (tc__is_const(g, in[1], 1.0) && tc__same_meta(g, in[0], nd)) return in[0];
        if (tc__is_const(g, in[0], 1.0) && tc__same_meta(g, in[1], nd)) return in[1];
        break;
    case TC__OP_DIV:
        if (tc__is_const(g, in[1], 1.0) && tc__same_meta(g, in[0], nd)) return in[0];
        break;
    case TC__OP_ADD:
        if (tc__is_const(g, in[1], 0.0) && tc__same_meta(g, in[0], nd)) return in[0];
        if (tc__is_const(g, in[0], 0.0) && tc__same_meta(g, in[1], nd)) return in[1];
        break;
    case TC__OP_SUB:
        if (tc__is_const(g, in[1], 0.0) && tc__same_meta(g, in[0], nd)) return in[0];
        /* x - x = 0 only for integers: inf - inf and NaN - NaN are NaN */
        if (in[0] == in[1] && nd->dt == TC_I32) {
            tc__attrs a;
            int k;
            memset(&a, 0, sizeof a);
            for (k = 0; k < nd->ndim; k++) a.i[k] = nd->shape[k];
            a.i[TC__A_NDIM] = nd->ndim;
            a.dt = TC_I32;
            return tc__g_op(g, TC__OP_FULL, &a, NULL, 0, nd->file, nd->line);
        }
        break;
    case TC__OP_PERMUTE: {
        const tc__node *x = &g->nodes[in[0]];
        tc__attrs a;
        int k, ident = 1;
        if (x->kind != TC__NODE_OP || x->op != TC__OP_PERMUTE) {
            for (k = 0; k < nd->ndim; k++)
                if (tc__axis((int)nd->a.i[k], nd->ndim) != k) ident = 0;
            return ident ? in[0] : -2;
        }
        /* permute(permute(y, p1), p2) = permute(y, p1[p2]) */
        memset(&a, 0, sizeof a);
        for (k = 0; k < nd->ndim; k++) {
            a.i[k] = x->a.i[tc__axis((int)nd->a.i[k], nd->ndim)];
            a.i[k] = tc__axis((int)a.i[k], nd->ndim);
            if (a.i[k] != k) ident = 0;
        }
        return ident ? x->in[0] : tc__g_op(g, TC__OP_PERMUTE, &a, x->in, 1, nd->file, nd->line);
    }
    case TC__OP_RESHAPE: {
        const tc__node *x = &g->nodes[in[0]];
        if (tc__same_meta(g, in[0], nd)) return in[0];
        /* reshape(reshape(y)) = reshape(y) when y is a contiguous result */
        if (x->kind == TC__NODE_OP && x->op == TC__OP_RESHAPE) {
            if (tc__contig_result(g, x->in[0])) {
                if (tc__same_meta(g, x->in[0], nd)) return x->in[0];
                return tc__g_op(g, TC__OP_RESHAPE, &nd->a, x->in, 1, nd->file, nd->line);
            }
        }
        /* traced as a view of memory an op wrote (a result, or views of
         * one), the reshape now reads what a rule above put in that
         * result's place (x * 1 -> x, a cast to its own dtype -> x): the
         * caller's memory, whose strides may not express it.  The copy
         * the front end makes for such a tensor is made here (fuzz seed
         * 145821: reshape(x * 1) of a transposed input failed to plan). */
        if (tc__fresh_root(old, nd->in[0]) && !tc__fresh_root(g, in[0])) {
            int c = tc__g_clone(g, in[0], nd->file, nd->line);
            return c < 0 ? -1 : tc__g_op(g, TC__OP_RESHAPE, &nd->a, &c, 1, nd->file, nd->line);
        }
        break;
    }
    case TC__OP_CAST: {
        const tc__node *x = &g->nodes[in[0]];
        if (x->dt == nd->dt) return in[0];
        if (x->kind == TC__NODE_OP && x->op == TC__OP_CAST && tc__cast_lossless(g->nodes[x->in[0]].dt, x->dt)) {
            if (g->nodes[x->in[0]].dt == nd->dt) return x->in[0];
            return tc__g_op(g, TC__OP_CAST, &nd->a, x->in, 1, nd->file, nd->line);
        }
        break;
    }
    default: break;
    }
    return -2;
}

/* x*1, 1*x, x/1, x+0, 0+x, x-0 -> x (a zero result's sign may differ:
 * -0 + 0 is +0); integer x-x -> 0; permute and reshape chains; identity
 * permutes/reshapes; same-dtype and lossless cast chains.  A reshape that
 * viewed a result one of these replaced, and a returned result, read a
 * copy of what replaced it when that is an input or a view. */
TC__FN tc__graph *tc__pass_simplify(tc__graph *g, int *changed) {
    /* an output traced on memory an op wrote stays so: with x * 1 -> x in
     * its place (or under its views: select(x * 1), fuzz seed 57305) it
     * would be the caller's input (reduce-overhead hands out the node's own
     * header), where eager's result was new memory */
    char *fresh = (char *)tc__malloc((size_t)(g->nout ? g->nout : 1));
    tc__graph *ng;
    int i;
    if (!fresh) {
        tc__graph_free(g);
        return NULL;
    }
    for (i = 0; i < g->nout; i++) fresh[i] = (char)tc__fresh_root(g, g->outputs[i]);
    ng = tc__graph_rebuild(g, tc__simplify_node, g, changed);
    for (i = 0; ng && i < ng->nout; i++)
        if (fresh[i] && !tc__fresh_root(ng, ng->outputs[i])) {
            const tc__node *x = &ng->nodes[ng->outputs[i]];
            int c = tc__g_clone(ng, ng->outputs[i], x->file, x->line);
            if (c < 0) {
                tc__graph_free(ng);
                ng = NULL;
                break;
            }
            ng->outputs[i] = c;
            (*changed)++;
        }
    TC_FREE(fresh);
    return ng;
}

/* ---- constant folding -------------------------------------------------------- */

typedef struct tc__fold_ctx {
    tc_ctx *ctx;
    tc_tensor **vals;          /* concrete value per new node (constants) */
    int cap;
    int64_t max_numel;
} tc__fold_ctx;

TC__FN int tc__is_leaf_const(const tc__node *n) {
    return n->kind == TC__NODE_OP && n->nin == 0 && n->op != TC__OP_EMPTY && n->op != TC__OP_WRAP;
}

/* Evaluates constant node id of g (recursively), caching in fc->vals. */
TC__FN tc_tensor *tc__fold_value(tc__fold_ctx *fc, const tc__graph *g, int id) {
    const tc__node *n = &g->nodes[id];
    tc__call c;
    int k;
    if (id < fc->cap && fc->vals[id]) return fc->vals[id];
    if (id >= fc->cap) {
        int cap = g->n + 16;
        tc_tensor **v = (tc_tensor **)TC_REALLOC(fc->vals, sizeof(tc_tensor *) * (size_t)cap);
        if (!v) return NULL;
        memset(v + fc->cap, 0, sizeof(tc_tensor *) * (size_t)(cap - fc->cap));
        fc->vals = v;
        fc->cap = cap;
    }
    tc__call_init(&c, fc->ctx, n->op, n->file, n->line);
    c.a = n->a;
    c.nin = n->nin;
    c.optional = ~0u;
    for (k = 0; k < n->nin; k++) {
        c.in[k] = n->in[k] >= 0 ? tc__fold_value(fc, g, n->in[k]) : NULL;
        if (n->in[k] >= 0 && !c.in[k]) return NULL;
    }
    fc->vals[id] = tc__run(&c);
    if (fc->vals[id]->status != TC_OK) {
        tc_free(fc->vals[id]);
        fc->vals[id] = NULL;
        return NULL;
    }
    fc->vals[id]->is_wrapped = n->wrapped;
    return fc->vals[id];
}

TC__FN int tc__fold_node(tc__graph *g, const tc__node *nd, const int *in, void *arg) {
    tc__fold_ctx *fc = (tc__fold_ctx *)arg;
    tc__node cp;
    tc_tensor *v;
    void *own = NULL, *copy;
    const char *data;
    size_t bytes;
    int k, id, fresh;
    if (nd->nin == 0 || nd->nin > TC__MAX_IN || tc__optable[nd->op].cls == TC__CLASS_VIEW) return -2;
    if (tc__numel_of(nd->ndim, nd->shape) > fc->max_numel) return -2;
    for (k = 0; k < nd->nin; k++) {
        if (in[k] < 0) continue;
        if (!tc__is_leaf_const(&g->nodes[in[k]])) return -2;
    }
    /* evaluate on the new graph's constant inputs */
    cp = *nd;
    cp.in = (int *)in;
    id = tc__graph_add(g, &cp, &fresh);
    if (id < 0 || !(v = tc__fold_value(fc, g, id))) return -2;
    bytes = (size_t)tc__numel(v) * tc__dtype_sizes[v->dtype];
    data = tc__contig_as(fc->ctx, v, v->dtype, &own);
    copy = tc__malloc(bytes);
    if (!data || !copy) {
        tc__scratch_put(own);
        TC_FREE(copy);
        return -2;
    }
    memcpy(copy, data, bytes);
    tc__scratch_put(own);
    /* the evaluated node stays unreferenced (DCE drops it) */
    return tc__g_data(g, nd->dt, nd->ndim, nd->shape, copy, nd->file, nd->line);
}

/* Ops whose inputs are all constants (full, arange, rand, data) and whose
 * result has at most max_numel elements are computed now and become data. */
TC__FN tc__graph *tc__pass_fold(tc_ctx *ctx, tc__graph *g, int64_t max_numel, int *changed) {
    tc__fold_ctx fc;
    tc__trace *saved = ctx->trace;
    tc__graph *ng;
    int i, floor;
    memset(&fc, 0, sizeof fc);
    fc.ctx = ctx;
    fc.max_numel = max_numel;
    ctx->trace = NULL; /* folding computes eagerly */
    floor = tc__scope_open(ctx);
    ng = tc__graph_rebuild(g, tc__fold_node, &fc, changed);
    for (i = 0; i < fc.cap; i++) tc_free(fc.vals[i]);
    tc__scope_close(ctx, floor);
    ctx->trace = saved;
    TC_FREE(fc.vals);
    return ng;
}

/* ---- decomposition ----------------------------------------------------------- */

TC__FN int tc__g_reduce(tc__graph *g, tc__op op, int x, int axis, int corr, const char *file, int line) {
    tc__attrs a;
    memset(&a, 0, sizeof a);
    a.i[axis] = 1;
    a.i[TC__A_KEEP] = 1;
    a.i[TC__A_CORR] = corr;
    return x < 0 ? -1 : tc__g_op(g, op, &a, &x, 1, file, line);
}

/* Mean (and var) over the last k dims of x, keepdim: flatten them first. */
TC__FN int tc__g_row_stat(tc__graph *g, tc__op op, int x, int k, const char *file, int line) {
    const tc__node *n = x >= 0 ? &g->nodes[x] : NULL;
    tc__attrs a;
    int d;
    if (!n) return -1;
    memset(&a, 0, sizeof a);
    for (d = n->ndim - k; d < n->ndim; d++) a.i[d] = 1;
    a.i[TC__A_KEEP] = 1;
    return tc__g_op(g, op, &a, &x, 1, file, line);
}

/* softmax(q @ k^T * scale [+ mask | causal]) @ v; the softmax node is itself
 * decomposed by the next round of the pass. */
TC__FN int tc__decompose_sdpa(tc__graph *g, const tc__node *nd, const int *in) {
    const char *f = nd->file;
    int l = nd->line, q = in[0], k = in[1], v = in[2], m = in[3], kt, s;
    const tc__node *kn = &g->nodes[k];
    int64_t L = g->nodes[q].shape[g->nodes[q].ndim - 2], S = kn->shape[kn->ndim - 2], E = kn->shape[kn->ndim - 1];
    double scale = nd->a.f[0] > 0 ? nd->a.f[0] : 1.0 / sqrt((double)(E > 0 ? E : 1));
    tc__attrs a;
    int in2[3];
    kt = tc__g_transpose_last(g, k, f, l);
    s = tc__g_binary(g, TC__OP_MUL, tc__g_binary(g, TC__OP_MATMUL, q, kt, f, l), tc__g_scalar(g, scale, f, l), f, l);
    if (nd->a.i[0]) {
        /* causal: keep j <= i, top-left aligned */
        int ri, ci;
        memset(&a, 0, sizeof a);
        a.dt = TC_F32;
        a.f[1] = (double)L;
        a.f[2] = 1.0;
        ri = tc__g_op(g, TC__OP_ARANGE, &a, NULL, 0, f, l);
        a.f[1] = (double)S;
        ci = tc__g_op(g, TC__OP_ARANGE, &a, NULL, 0, f, l);
        memset(&a, 0, sizeof a);
        a.i[0] = 1;
        ri = tc__g_op(g, TC__OP_UNSQUEEZE, &a, &ri, 1, f, l);
        a.i[0] = 0;
        ci = tc__g_op(g, TC__OP_UNSQUEEZE, &a, &ci, 1, f, l);
        m = tc__g_binary(g, TC__OP_GE, ri, ci, f, l);
    }
    if (m >= 0 && g->nodes[m].dt == TC_BOOL) {
        in2[0] = m;
        in2[1] = s;
        in2[2] = tc__g_scalar(g, -INFINITY, f, l);
        s = tc__g_op(g, TC__OP_WHERE, NULL, in2, 3, f, l);
    } else if (m >= 0) {
        s = tc__g_binary(g, TC__OP_ADD, s, m, f, l);
    }
    memset(&a, 0, sizeof a);
    a.i[0] = -1;
    s = s < 0 ? -1 : tc__g_op(g, TC__OP_SOFTMAX, &a, &s, 1, f, l);
    return tc__g_binary(g, TC__OP_MATMUL, s, v, f, l);
}

/* 2^-96: (v * 2^-96)^2 summed over any row of finite f32 values (at most
 * 2^128 each, 2^64 squared) stays finite for rows of up to 2^64 values,
 * and any value the sum must count (a row whose plain sum of squares
 * overflowed holds one of at least 2^64 / sqrt(n)) keeps a normal square.
 * The executor sums such squares in one step (kernel.c, SUMSQ_LO). */
#define TC__SUMSQ_LO 1.2621774483536188887e-29f

/* rsqrt(mean(v^2) + eps) over the last k dims of v, as the norms scale
 * by.  A square past FLT_MAX (|v| over ~1.8e19) makes the mean inf and
 * the row 0 (eager sums in double): a second mean, of (v * 2^-96)^2,
 * taken in the same pass over the row, holds any finite row, and stands
 * in where the first is inf: rsqrt(mean((v 2^-96)^2)) * 2^-96 (eps is
 * far below such a mean).  A row with inf or NaN gives what eager does. */
TC__FN int tc__g_rsqrt_mean_sq(tc__graph *g, int v, int k, double eps, const char *f, int l) {
    int c = tc__g_scalar(g, TC__SUMSQ_LO, f, l), big[3];
    int ms = tc__g_row_stat(g, TC__OP_MEAN, tc__g_unary(g, TC__OP_SQUARE, v, f, l), k, f, l);
    int ms_lo = tc__g_row_stat(g, TC__OP_MEAN, tc__g_unary(g, TC__OP_SQUARE, tc__g_binary(g, TC__OP_MUL, v, c, f, l), f, l), k, f, l);
    big[0] = tc__g_binary(g, TC__OP_EQ, ms, tc__g_scalar(g, INFINITY, f, l), f, l);
    big[1] = tc__g_binary(g, TC__OP_MUL, tc__g_unary(g, TC__OP_RSQRT, ms_lo, f, l), c, f, l);
    big[2] = tc__g_unary(g, TC__OP_RSQRT, tc__g_binary(g, TC__OP_ADD, ms, tc__g_scalar(g, eps, f, l), f, l), f, l);
    return big[0] < 0 || big[1] < 0 || big[2] < 0 ? -1 : tc__g_op(g, TC__OP_WHERE, NULL, big, 3, f, l);
}

TC__FN int tc__decompose_node(tc__graph *g, const tc__node *nd, const int *in, void *arg) {
    const char *f = nd->file;
    int l = nd->line, x = nd->nin > 0 ? in[0] : -1, t, u, level = *(const int *)arg;
    if (nd->dt != TC_F32 || (nd->nin > 0 && x >= 0 && g->nodes[x].dt != TC_F32)) return -2;
    /* empty: max has no identity, and there is nothing to compute */
    if (tc__numel_of(nd->ndim, nd->shape) == 0 || (x >= 0 && tc__numel_of(g->nodes[x].ndim, g->nodes[x].shape) == 0))
        return -2;
    /* level 1 (for the fuser): only what a fused kernel does better as
     * primitives; the executor has silu and both gelus as single ops */
    if (level < 2 && nd->op != TC__OP_SOFTMAX && nd->op != TC__OP_LOG_SOFTMAX && nd->op != TC__OP_LAYER_NORM &&
        nd->op != TC__OP_RMS_NORM && nd->op != TC__OP_BATCH_NORM)
        return -2;
    switch (nd->op) {
    case TC__OP_SOFTMAX:
    case TC__OP_LOG_SOFTMAX: {
        int d = (int)nd->a.i[1];
        if (nd->ndim == 0) return -2;
        t = tc__g_binary(g, TC__OP_SUB, x, tc__g_reduce(g, TC__OP_MAX, x, d, 0, f, l), f, l); /* x - max */
        u = tc__g_reduce(g, TC__OP_SUM, tc__g_unary(g, TC__OP_EXP, t, f, l), d, 0, f, l);
        if (nd->op == TC__OP_SOFTMAX)
            return tc__g_binary(g, TC__OP_DIV, tc__g_unary(g, TC__OP_EXP, t, f, l), u, f, l);
        return tc__g_binary(g, TC__OP_SUB, t, tc__g_unary(g, TC__OP_LOG, u, f, l), f, l);
    }
    case TC__OP_LAYER_NORM:
    case TC__OP_RMS_NORM: {
        int k = (int)nd->a.i[0], w = nd->nin > 1 ? in[1] : -1, b = nd->nin > 2 ? in[2] : -1;
        if (nd->op == TC__OP_LAYER_NORM) {
            /* two passes, mean((x - mean)^2): the fuser keeps x - mean in cache */
            t = tc__g_binary(g, TC__OP_SUB, x, tc__g_row_stat(g, TC__OP_MEAN, x, k, f, l), f, l);
            t = tc__g_binary(g, TC__OP_MUL, tc__g_rsqrt_mean_sq(g, t, k, nd->a.f[0], f, l), t, f, l);
        } else {
            /* the row scalar first: the fuser emits operands in order, and
             * the row read after the scalar's chain is not live across it
             * (4 registers, a 1024-float row still in one tile) */
            t = tc__g_binary(g, TC__OP_MUL, tc__g_rsqrt_mean_sq(g, x, k, nd->a.f[0], f, l), x, f, l);
        }
        if (w >= 0) t = tc__g_binary(g, TC__OP_MUL, t, w, f, l);
        if (b >= 0) t = tc__g_binary(g, TC__OP_ADD, t, b, f, l);
        return t;
    }
    case TC__OP_SILU: return tc__g_binary(g, TC__OP_MUL, x, tc__g_unary(g, TC__OP_SIGMOID, x, f, l), f, l);
    case TC__OP_GELU:
        /* 0.5 x (1 + erf(x / sqrt(2))) */
        t = tc__g_unary(g, TC__OP_ERF, tc__g_binary(g, TC__OP_MUL, x, tc__g_scalar(g, 0.7071067811865476, f, l), f, l), f, l);
        t = tc__g_binary(g, TC__OP_ADD, t, tc__g_scalar(g, 1.0, f, l), f, l);
        return tc__g_binary(g, TC__OP_MUL, tc__g_binary(g, TC__OP_MUL, x, tc__g_scalar(g, 0.5, f, l), f, l), t, f, l);
    case TC__OP_BATCH_NORM: {
        /* (x - mean) * (rsqrt(var + eps) * w) + b, per channel [C, 1, ...] */
        int nd_ = nd->ndim, k, p[4];
        tc__attrs ra;
        memset(&ra, 0, sizeof ra);
        ra.i[0] = g->nodes[x].shape[1];
        for (k = 1; k < nd_ - 1; k++) ra.i[k] = 1;
        ra.i[TC__A_NDIM] = nd_ - 1;
        for (k = 0; k < 4; k++)
            p[k] = nd->nin > k + 1 && in[k + 1] >= 0 ? tc__g_op(g, TC__OP_RESHAPE, &ra, &in[k + 1], 1, f, l) : -1;
        u = tc__g_unary(g, TC__OP_RSQRT, tc__g_binary(g, TC__OP_ADD, p[1], tc__g_scalar(g, nd->a.f[0], f, l), f, l), f, l);
        if (p[2] >= 0) u = tc__g_binary(g, TC__OP_MUL, u, p[2], f, l);
        t = tc__g_binary(g, TC__OP_MUL, tc__g_binary(g, TC__OP_SUB, x, p[0], f, l), u, f, l);
        return p[3] >= 0 ? tc__g_binary(g, TC__OP_ADD, t, p[3], f, l) : t;
    }
    case TC__OP_SDPA:
        if (g->nodes[in[1]].dt != TC_F32 || g->nodes[in[2]].dt != TC_F32) return -2;
        return tc__decompose_sdpa(g, nd, in);
    case TC__OP_GELU_TANH: {
        /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
        int x3 = tc__g_binary(g, TC__OP_MUL, tc__g_unary(g, TC__OP_SQUARE, x, f, l), x, f, l);
        t = tc__g_binary(g, TC__OP_ADD, x, tc__g_binary(g, TC__OP_MUL, x3, tc__g_scalar(g, 0.044715, f, l), f, l), f, l);
        t = tc__g_unary(g, TC__OP_TANH, tc__g_binary(g, TC__OP_MUL, t, tc__g_scalar(g, 0.7978845608028654, f, l), f, l), f, l);
        t = tc__g_binary(g, TC__OP_ADD, t, tc__g_scalar(g, 1.0, f, l), f, l);
        return tc__g_binary(g, TC__OP_MUL, tc__g_binary(g, TC__OP_MUL, x, tc__g_scalar(g, 0.5, f, l), f, l), t, f, l);
    }
    default: break;
    }
    return -2;
}

/* ---- attention: the decomposed pattern back into the fused kernel ---------- */

/* Walks the old graph beside the new one: a node of the pattern may be
 * replaced only when the pattern is its one reader, else it would be
 * computed twice (once inside the attention kernel). */
typedef struct tc__attn_pass {
    const tc__graph *old;
    const int *uses;          /* readers per old node (outputs count)      */
} tc__attn_pass;

/* The value of a 0-d f32 constant (a scalar argument), or NaN. */
TC__FN double tc__node_const(const tc__graph *g, int id) {
    const tc__node *n = &g->nodes[id];
    return n->kind == TC__NODE_OP && n->op == TC__OP_FULL && n->ndim == 0 && n->nin == 0 ? n->a.f[0] : NAN;
}

TC__FN int tc__same_shape(const tc__node *a, const tc__node *b) {
    return a->ndim == b->ndim && memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) == 0;
}

/* Is n a permute that swaps the last two dims (a transpose)? */
TC__FN int tc__is_last_swap(const tc__node *n) {
    int d;
    if (n->kind != TC__NODE_OP || n->op != TC__OP_PERMUTE || n->ndim < 2) return 0;
    for (d = 0; d < n->ndim - 2; d++)
        if (n->a.i[d] != d) return 0;
    return n->a.i[n->ndim - 2] == n->ndim - 1 && n->a.i[n->ndim - 1] == n->ndim - 2;
}

/* matmul(softmax(S, -1), v) with S = q @ k^T (* s | / s) [+ mask | where(mask,
 * ., -inf)] becomes scaled_dot_product_attention(q, k, v, mask, scale): the
 * [L, S] scores never reach memory.  Each intermediate must have this
 * pattern as its only reader. */
TC__FN int tc__attention_node(tc__graph *g, const tc__node *nd, const int *in, void *arg) {
    const tc__attn_pass *ap = (const tc__attn_pass *)arg;
    const tc__graph *og = ap->old;
    int op_ = nd->in[0], np = in[0], os, ns, mask = -1, q, k, kt;
    double scale = 1.0, c;
    tc__attrs a;
    tc__call cc;
    int sin[4];
    const tc__node *sm, *x;
    if (nd->op != TC__OP_MATMUL || nd->nin != 2 || nd->dt != TC_F32 || np < 0 || in[1] < 0) return -2;
    sm = &g->nodes[np];
    if (sm->op != TC__OP_SOFTMAX || sm->dt != TC_F32 || sm->ndim < 2 || sm->a.i[1] != sm->ndim - 1 ||
        ap->uses[op_] != 1 || g->nodes[in[1]].ndim < 2 || g->nodes[in[1]].dt != TC_F32)
        return -2;
    os = og->nodes[op_].in[0];
    ns = sm->in[0];
    x = &g->nodes[ns];
    /* the mask: added, or a bool selecting the scores over -inf */
    if (x->op == TC__OP_ADD && ap->uses[os] == 1) {
        int side;
        for (side = 0; side < 2; side++) {
            const tc__node *o = &g->nodes[x->in[side]];
            if (o->op == TC__OP_MATMUL || o->op == TC__OP_MUL || o->op == TC__OP_DIV) break;
        }
        if (side == 2 || !tc__same_shape(&g->nodes[x->in[side]], x) || g->nodes[x->in[1 - side]].dt != TC_F32) return -2;
        mask = x->in[1 - side];
        os = og->nodes[os].in[side];
        ns = x->in[side];
    } else if (x->op == TC__OP_WHERE && ap->uses[os] == 1 && tc__node_const(g, x->in[2]) == -INFINITY &&
               g->nodes[x->in[0]].dt == TC_BOOL && tc__same_shape(&g->nodes[x->in[1]], x)) {
        mask = x->in[0];
        os = og->nodes[os].in[1];
        ns = x->in[1];
    }
    x = &g->nodes[ns];
    /* the scale: a positive finite constant multiplied or divided */
    if ((x->op == TC__OP_MUL || x->op == TC__OP_DIV) && ap->uses[os] == 1) {
        int side = x->op == TC__OP_MUL && tc__node_const(g, x->in[0]) == tc__node_const(g, x->in[0]) ? 0 : 1;
        c = tc__node_const(g, x->in[side]);
        if (!(c > 0) || isinf(c) || (x->op == TC__OP_DIV && side == 0)) return -2;
        scale = x->op == TC__OP_DIV ? 1.0 / c : c;
        os = og->nodes[os].in[1 - side];
        ns = x->in[1 - side];
        x = &g->nodes[ns];
    }
    if (x->op != TC__OP_MATMUL || ap->uses[os] != 1 || x->dt != TC_F32) return -2;
    q = x->in[0];
    kt = x->in[1];
    if (g->nodes[q].ndim < 2 || g->nodes[kt].ndim < 2 || g->nodes[q].dt != TC_F32 || g->nodes[kt].dt != TC_F32) return -2;
    /* k itself: under the transpose, or the transpose of a [.., E, S] operand */
    if (tc__is_last_swap(&g->nodes[kt])) k = g->nodes[kt].in[0];
    else if ((k = tc__g_transpose_last(g, kt, nd->file, nd->line)) < 0) return -1;
    memset(&a, 0, sizeof a);
    a.f[0] = scale;
    sin[0] = q;
    sin[1] = k;
    sin[2] = in[1];
    sin[3] = mask;
    /* only when the kernel's shape rule agrees with the matmul's result */
    if (tc__g_shape(g, TC__OP_SDPA, &a, sin, 4, nd->file, nd->line, &cc) != TC_OK || cc.ondim != nd->ndim ||
        memcmp(cc.oshape, nd->shape, sizeof(int64_t) * (size_t)nd->ndim) != 0)
        return -2;
    return tc__g_op(g, TC__OP_SDPA, &a, sin, 4, nd->file, nd->line);
}

/* Readers per node (a graph output counts as one), or NULL on OOM. */
TC__FN int *tc__use_counts(const tc__graph *g) {
    int *uses = (int *)tc__malloc(sizeof(int) * (size_t)(g->n ? g->n : 1)), i, k;
    if (!uses) return NULL;
    memset(uses, 0, sizeof(int) * (size_t)(g->n ? g->n : 1));
    for (i = 0; i < g->n; i++)
        for (k = 0; k < g->nodes[i].nin; k++)
            if (g->nodes[i].in[k] >= 0) uses[g->nodes[i].in[k]]++;
    for (i = 0; i < g->nout; i++) uses[g->outputs[i]]++;
    return uses;
}

/* tc__graph_rebuild for a pattern that must see the old graph's reader
 * counts (to rewrite only what nothing else reads): *uses_at points at
 * them while fn runs. */
TC__FN tc__graph *tc__rebuild_with_uses(tc__graph *g, tc__rewrite_fn fn, void *arg, const int **uses_at, int *changed) {
    int *uses = tc__use_counts(g);
    tc__graph *ng;
    if (!uses) {
        tc__graph_free(g);
        return NULL;
    }
    *uses_at = uses;
    ng = tc__graph_rebuild(g, fn, arg, changed);
    TC_FREE(uses);
    return ng;
}

TC__FN tc__graph *tc__pass_attention(tc__graph *g, int *changed) {
    tc__attn_pass ap;
    ap.old = g;
    return tc__rebuild_with_uses(g, tc__attention_node, &ap, &ap.uses, changed);
}

/* ---- legalization --------------------------------------------------------------- */

/* A concat of more inputs than a launch holds (TC__MAX_IN: a GPT's K/V of
 * every layer) becomes a tree of concats of at most TC__MAX_IN each, the
 * same values in the same order. */
TC__FN int tc__legalize_node(tc__graph *g, const tc__node *nd, const int *in, void *arg) {
    int ids[TC__MAX_IN], *level, n = nd->nin, i, k, id = -2;
    (void)arg;
    if (nd->op != TC__OP_CONCAT || n <= TC__MAX_IN) return -2;
    if (!(level = (int *)tc__malloc(sizeof(int) * (size_t)n))) return -1;
    memcpy(level, in, sizeof(int) * (size_t)n);
    while (n > 1) {
        int m = 0;
        for (i = 0; i < n; i += TC__MAX_IN) {
            int c = n - i < TC__MAX_IN ? n - i : TC__MAX_IN;
            for (k = 0; k < c; k++) ids[k] = level[i + k];
            level[m] = c == 1 ? ids[0] : tc__g_op(g, TC__OP_CONCAT, &nd->a, ids, c, nd->file, nd->line);
            if (level[m++] < 0) {
                TC_FREE(level);
                return -1;
            }
        }
        n = m;
    }
    id = level[0];
    TC_FREE(level);
    return id;
}

TC__FN tc__graph *tc__pass_legalize(tc__graph *g, int *changed) { return tc__graph_rebuild(g, tc__legalize_node, NULL, changed); }

/* ---- batch norm folding (freeze) ---------------------------------------------- */

typedef struct tc__bnfold_pass {
    tc_ctx *ctx;
    const int *uses;           /* readers per old node */
} tc__bnfold_pass;

/* The values of a frozen f32 constant of n elements (a parameter, data a
 * pass made, or a constant fill made in the traced function: tc_ones as a
 * norm's weight), or NULL; *own is released with tc__scratch_put. */
TC__FN const float *tc__frozen_f32(tc_ctx *ctx, const tc__graph *g, int id, int64_t n, void **own) {
    const tc__node *nd;
    *own = NULL;
    if (id < 0) return NULL;
    nd = &g->nodes[id];
    if (nd->dt != TC_F32 || tc__numel_of(nd->ndim, nd->shape) != n) return NULL;
    if (nd->kind == TC__NODE_PARAM && nd->param && nd->param->status == TC_OK && nd->param->device == TC_CPU)
        return (const float *)tc__contig_as(ctx, nd->param, TC_F32, own);
    if (nd->kind == TC__NODE_OP && nd->op == TC__OP_FROM_DATA) return (const float *)nd->a.ptr;
    if (nd->kind == TC__NODE_OP && nd->op == TC__OP_FULL) {
        float *buf = (float *)tc__scratch_get(ctx, sizeof(float) * (size_t)(n > 0 ? n : 1));
        int64_t i;
        if (!buf) return NULL; /* left unfolded: still right */
        for (i = 0; i < n; i++) buf[i] = (float)nd->a.f[0];
        *own = buf;
        return buf;
    }
    return NULL;
}

/* batch_norm(conv2d(x, w, b), mean, var, gamma, beta) with every parameter
 * frozen becomes conv2d(x, w * s, (b - mean) * s + beta), s = gamma /
 * sqrt(var + eps) per output channel: inference's norm costs nothing.
 * Only when the norm is the conv's one reader (else the conv would run
 * twice). */
TC__FN int tc__bnfold_node(tc__graph *g, const tc__node *nd, const int *in, void *arg) {
    const tc__bnfold_pass *bp = (const tc__bnfold_pass *)arg;
    tc__node cv;               /* a copy: adding nodes may move g->nodes */
    tc__node wn;
    const float *v[6];
    void *own[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    float *nw = NULL, *nb = NULL;
    int64_t cout, per, co, q;
    int ci[3], k, id = -2;
    if (nd->op != TC__OP_BATCH_NORM || nd->nin != 5 || nd->dt != TC_F32 || in[0] < 0 || bp->uses[nd->in[0]] != 1)
        return -2;
    cv = g->nodes[in[0]];
    if (cv.kind != TC__NODE_OP || cv.op != TC__OP_CONV2D || cv.dt != TC_F32 || cv.ndim != 4 || cv.shape[1] < 1 ||
        cv.nin != 3 || cv.in[1] < 0)
        return -2;
    ci[0] = cv.in[0], ci[1] = cv.in[1], ci[2] = cv.in[2];
    wn = g->nodes[ci[1]];
    cout = cv.shape[1];
    per = tc__numel_of(wn.ndim, wn.shape) / cout;
    /* w, b, then mean, var, gamma, beta; an absent optional one stays NULL */
    v[0] = tc__frozen_f32(bp->ctx, g, ci[1], cout * per, &own[0]);
    v[1] = tc__frozen_f32(bp->ctx, g, ci[2], cout, &own[1]);
    for (k = 1; k < 5; k++) v[k + 1] = tc__frozen_f32(bp->ctx, g, in[k], cout, &own[k + 1]);
    if (!v[0] || (ci[2] >= 0 && !v[1]) || !v[2] || !v[3] || (in[3] >= 0 && !v[4]) || (in[4] >= 0 && !v[5]))
        goto done;
    nw = (float *)tc__malloc(sizeof(float) * (size_t)(cout * per > 0 ? cout * per : 1));
    nb = (float *)tc__malloc(sizeof(float) * (size_t)cout);
    if (!nw || !nb) {
        id = -1;
        goto done;
    }
    for (co = 0; co < cout; co++) {
        double sc = 1.0 / sqrt((double)v[3][co] + nd->a.f[0]) * (v[4] ? v[4][co] : 1.0f);
        for (q = 0; q < per; q++) nw[co * per + q] = (float)(v[0][co * per + q] * sc);
        nb[co] = (float)(((v[1] ? v[1][co] : 0.0f) - (double)v[2][co]) * sc + (v[5] ? v[5][co] : 0.0f));
    }
    ci[1] = tc__g_data(g, TC_F32, wn.ndim, wn.shape, nw, cv.file, cv.line);
    ci[2] = tc__g_data(g, TC_F32, 1, &cout, nb, cv.file, cv.line);
    nw = nb = NULL; /* the graph's now */
    id = ci[1] < 0 || ci[2] < 0 ? -1 : tc__g_op(g, TC__OP_CONV2D, &cv.a, ci, 3, cv.file, cv.line);
done:
    TC_FREE(nw);
    TC_FREE(nb);
    for (k = 0; k < 6; k++) tc__scratch_put(own[k]);
    return id;
}

TC__FN tc__graph *tc__pass_fold_bn(tc_ctx *ctx, tc__graph *g, int *changed) {
    tc__bnfold_pass bp;
    bp.ctx = ctx;
    return tc__rebuild_with_uses(g, tc__bnfold_node, &bp, &bp.uses, changed);
}

/* softmax, log_softmax, layer_norm, rms_norm, silu, gelu (both forms),
 * batch_norm and scaled_dot_product_attention on f32 become matmuls,
 * pointwise ops and reductions, so the fuser sees one vocabulary.
 * Level 2 decomposes all of them; level 1 (the default when fusing) only
 * the row ops and batch_norm, which fuse into their neighbours. */
TC__FN tc__graph *tc__pass_decompose(tc__graph *g, int level, int *changed) {
    return tc__graph_rebuild(g, tc__decompose_node, &level, changed);
}

/* The pipeline a compiled function runs on each trace (decompose: 0 none,
 * 1 the fuser's primitives where the executor runs, 2 everything):
 * attention -> [fold bn ->] [decompose ->] simplify -> fold -> legalize ->
 * hoist -> DCE (CSE happened while recording). */
TC__FN tc_result tc__passes_run(tc_ctx *ctx, int freeze, int decompose, tc__graph **g) {
    int changed = 0;
    /* hand-written attention into the fused kernel, before decomposition
     * takes its softmax apart */
    *g = tc__pass_attention(*g, &changed);
    if (!*g) return TC_ERR_OOM;
    /* frozen parameters: batch norm into its conv, before decomposition
     * takes the norm apart */
    if (freeze && !(*g = tc__pass_fold_bn(ctx, *g, &changed))) return TC_ERR_OOM;
    /* rounds: a decomposition may emit composites (sdpa emits softmax) */
    if (decompose && (decompose > 1 || ctx->isa != TC_ISA_NONE)) {
        int round;
        for (round = 0, changed = 1; *g && changed && round < 4; round++)
            *g = tc__pass_decompose(*g, decompose, &changed);
    }
    if (*g) *g = tc__pass_simplify(*g, &changed);
    if (*g) *g = tc__pass_fold(ctx, *g, 4096, &changed);
    if (*g) *g = tc__pass_legalize(*g, &changed);
    if (*g) *g = tc__pass_hoist(*g, &changed);
    if (*g && tc__pass_dce(*g) < 0) {
        tc__graph_free(*g);
        *g = NULL;
    }
    return *g ? TC_OK : TC_ERR_OOM;
}
