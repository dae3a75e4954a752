/* Pointwise ops: dtype promotion, the strided broadcasting iterator, and the
 * unary / binary / where / cast / copy kernels.  Inner loops are written per
 * stride pattern (contiguous, broadcast scalar, strided) so the compiler
 * vectorises the contiguous ones. */

/* ---- dtype promotion (PyTorch's lattice restricted to our dtypes) ------------ */

TC__FN int tc__category(tc_dtype dt) { return dt == TC_BOOL ? 0 : dt == TC_I32 ? 1 : 2; }

TC__FN tc_dtype tc__promote2(tc_dtype a, tc_dtype b) {
    if (a == b) return a;
    if (a == TC_F32 || b == TC_F32) return TC_F32;
    if (tc__is_float(a) && tc__is_float(b)) return TC_F32; /* f16 with bf16 */
    if (tc__is_float(a)) return a;
    if (tc__is_float(b)) return b;
    return TC_I32; /* i32 with bool */
}

/* torch's three tiers: dimensioned tensors, then 0-d tensors, then wrapped
 * scalars; a lower tier only decides the dtype when its category (bool <
 * int < float) is higher than everything above it. */
TC__FN tc_dtype tc__promote(tc_tensor *const *ts, int n) {
    int i, tier, have[3] = {0, 0, 0};
    tc_dtype d[3] = {TC_BOOL, TC_BOOL, TC_BOOL}, r = TC_BOOL;
    int found = 0;
    for (i = 0; i < n; i++) {
        tier = ts[i]->is_wrapped ? 2 : ts[i]->ndim == 0 ? 1 : 0;
        d[tier] = have[tier] ? tc__promote2(d[tier], ts[i]->dtype) : ts[i]->dtype;
        have[tier] = 1;
    }
    for (tier = 0; tier < 3; tier++) {
        if (!have[tier]) continue;
        if (!found || tc__category(d[tier]) > tc__category(r)) r = d[tier];
        found = 1;
    }
    return r;
}

/* Broadcast shapes of n tensors into c->oshape; error text on mismatch. */
TC__FN tc_result tc__broadcast(tc__call *c, tc_tensor *const *ts, int n) {
    int i, d, nd = 0;
    for (i = 0; i < n; i++) nd = ts[i]->ndim > nd ? ts[i]->ndim : nd;
    for (d = 0; d < nd; d++) {
        int64_t s = 1;
        for (i = 0; i < n; i++) {
            int k = ts[i]->ndim - nd + d;
            int64_t v = k >= 0 ? ts[i]->shape[k] : 1;
            if (v == s || v == 1) continue;
            if (s != 1) {
                char b1[96], b2[96];
                return tc__msg(c, TC_ERR_SHAPE, "shapes %s and %s are not broadcastable (dim %d: %lld vs %lld)",
                               tc__shape_str(ts[0]->ndim, ts[0]->shape, b1, sizeof b1),
                               tc__shape_str(ts[i]->ndim, ts[i]->shape, b2, sizeof b2), d, (long long)s,
                               (long long)v);
            }
            s = v;
        }
        c->oshape[d] = s;
    }
    c->ondim = nd;
    return TC_OK;
}

/* ---- the strided iterator ---------------------------------------------------- */

#define TC__MAX_OPS 4

typedef struct tc__iter tc__iter;
/* Called for runs of n elements; ptr[k] points at operand k's first element,
 * st[k] is its element stride along the run.  Operand 0 is the output. */
typedef void (*tc__inner_fn)(const tc__iter *it, char **ptr, const int64_t *st, int64_t n);

struct tc__iter {
    int ndim, nops;
    int64_t shape[TC_MAX_DIMS];
    char *base[TC__MAX_OPS];
    int64_t st[TC__MAX_OPS][TC_MAX_DIMS]; /* element strides */
    int esize[TC__MAX_OPS];
    tc__inner_fn inner;
    const void *fn;                        /* the typed kernel           */
    const tc__attrs *attrs;
};

/* Adds an operand viewed (with broadcasting) at the iterator's shape. */
TC__FN void tc__iter_operand(tc__iter *it, char *base, int esize, int ndim, const int64_t *shape, const int64_t *strides) {
    int k = it->nops++, d;
    it->base[k] = base;
    it->esize[k] = esize;
    for (d = 0; d < it->ndim; d++) {
        int j = ndim - it->ndim + d;
        it->st[k][d] = j >= 0 && shape[j] != 1 ? strides[j] : 0;
    }
}

/* Drops size-1 dims and merges dims that are contiguous for every operand,
 * so the inner run is as long as possible. */
TC__FN void tc__iter_coalesce(tc__iter *it) {
    int d, k, n = 0;
    for (d = 0; d < it->ndim; d++) {
        if (it->shape[d] == 1) continue;
        if (n > 0) {
            int ok = 1;
            for (k = 0; k < it->nops; k++)
                if (it->st[k][n - 1] != it->st[k][d] * it->shape[d]) ok = 0;
            if (ok) {
                it->shape[n - 1] *= it->shape[d];
                for (k = 0; k < it->nops; k++) it->st[k][n - 1] = it->st[k][d];
                continue;
            }
        }
        it->shape[n] = it->shape[d];
        for (k = 0; k < it->nops; k++) it->st[k][n] = it->st[k][d];
        n++;
    }
    it->ndim = n;
}

TC__FN void tc__iter_range(void *arg, int64_t begin, int64_t end) {
    const tc__iter *it = (const tc__iter *)arg;
    int64_t idx[TC_MAX_DIMS], rem = begin, inner_st[TC__MAX_OPS];
    char *ptr[TC__MAX_OPS];
    int d, k, last = it->ndim - 1;
    if (it->ndim == 0) {
        for (k = 0; k < it->nops; k++) {
            ptr[k] = it->base[k];
            inner_st[k] = 0;
        }
        it->inner(it, ptr, inner_st, 1);
        return;
    }
    for (d = last; d >= 0; d--) {
        idx[d] = rem % it->shape[d];
        rem /= it->shape[d];
    }
    for (k = 0; k < it->nops; k++) inner_st[k] = it->st[k][last];
    while (begin < end) {
        int64_t n = it->shape[last] - idx[last];
        if (n > end - begin) n = end - begin;
        for (k = 0; k < it->nops; k++) {
            int64_t off = 0;
            for (d = 0; d <= last; d++) off += idx[d] * it->st[k][d];
            ptr[k] = it->base[k] + off * it->esize[k];
        }
        it->inner(it, ptr, inner_st, n);
        begin += n;
        idx[last] += n;
        for (d = last; d > 0 && idx[d] >= it->shape[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
        }
    }
}

/* cost: rough work per element relative to a copy (transcendentals ~ 8). */
TC__FN void tc__iter_run(tc_ctx *ctx, tc__iter *it, int64_t cost) {
    int64_t n = tc__numel_of(it->ndim, it->shape);
    tc__iter_coalesce(it);
    if (n <= 0) return;
    tc__parallel_for(ctx, n, n * cost, tc__iter_range, it);
}

TC__FN void tc__iter_init(tc__iter *it, int ndim, const int64_t *shape, tc__inner_fn inner, const void *fn,
                          const tc__attrs *attrs) {
    memset(it, 0, sizeof *it);
    it->ndim = ndim;
    memcpy(it->shape, shape, sizeof(int64_t) * (size_t)ndim);
    it->inner = inner;
    it->fn = fn;
    it->attrs = attrs;
}

/* ---- copy with conversion ------------------------------------------------------ */

TC__FN void tc__inner_convert(const tc__iter *it, char **ptr, const int64_t *st, int64_t n) {
    tc_dtype od = (tc_dtype)it->attrs->i[0], id = (tc_dtype)it->attrs->i[1];
    int64_t i, so = st[0], si = st[1];
    if (od == id) {
        size_t es = tc__dtype_sizes[od];
        if (so == 1 && si == 1) memmove(ptr[0], ptr[1], (size_t)n * es);
        else if (es == 4)
            for (i = 0; i < n; i++) ((int32_t *)ptr[0])[i * so] = ((const int32_t *)ptr[1])[i * si];
        else if (es == 2)
            for (i = 0; i < n; i++) ((uint16_t *)ptr[0])[i * so] = ((const uint16_t *)ptr[1])[i * si];
        else
            for (i = 0; i < n; i++) ((unsigned char *)ptr[0])[i * so] = ((const unsigned char *)ptr[1])[i * si];
    } else if (od == TC_F32 && id == TC_F16) {
        for (i = 0; i < n; i++) ((float *)ptr[0])[i * so] = tc__f16_to_f32(((const uint16_t *)ptr[1])[i * si]);
    } else if (od == TC_F32 && id == TC_BF16) {
        for (i = 0; i < n; i++) ((float *)ptr[0])[i * so] = tc__bf16_to_f32(((const uint16_t *)ptr[1])[i * si]);
    } else if (od == TC_F16 && id == TC_F32) {
        for (i = 0; i < n; i++) ((uint16_t *)ptr[0])[i * so] = tc__f32_to_f16(((const float *)ptr[1])[i * si]);
    } else if (od == TC_BF16 && id == TC_F32) {
        for (i = 0; i < n; i++) ((uint16_t *)ptr[0])[i * so] = tc__f32_to_bf16(((const float *)ptr[1])[i * si]);
    } else if (od == TC_F32 && id == TC_I32) {
        for (i = 0; i < n; i++) ((float *)ptr[0])[i * so] = (float)((const int32_t *)ptr[1])[i * si];
    } else if (od == TC_I32 && id == TC_F32) {
        for (i = 0; i < n; i++) ((int32_t *)ptr[0])[i * so] = tc__f32_to_i32(((const float *)ptr[1])[i * si]);
    } else {
        for (i = 0; i < n; i++) tc__store(ptr[0], od, i * so, tc__load(ptr[1], id, i * si));
    }
}

/* dst (any strides) = src broadcast to dst's shape, converted. */
TC__FN void tc__copy_into(tc_ctx *ctx, char *dbase, tc_dtype dd, int ndim, const int64_t *shape, const int64_t *dstrides,
                          const char *sbase, tc_dtype sd, int sndim, const int64_t *sshape, const int64_t *sstrides) {
    tc__iter it;
    tc__attrs a;
    memset(&a, 0, sizeof a);
    a.i[0] = dd;
    a.i[1] = sd;
    tc__iter_init(&it, ndim, shape, tc__inner_convert, NULL, &a);
    tc__iter_operand(&it, dbase, (int)tc__dtype_sizes[dd], ndim, shape, dstrides);
    tc__iter_operand(&it, (char *)sbase, (int)tc__dtype_sizes[sd], sndim, sshape, sstrides);
    tc__iter_run(ctx, &it, 1);
}

/* A tensor's data as dtype `dt`: the tensor itself when it already is, else
 * a contiguous converted copy in *owned (caller frees).  Strides in *st. */
TC__FN char *tc__as_dtype(tc_ctx *ctx, const tc_tensor *t, tc_dtype dt, int64_t *st, void **owned) {
    int64_t n = tc__numel(t);
    char *buf;
    *owned = NULL;
    if (t->dtype == dt) {
        memcpy(st, t->strides, sizeof t->strides);
        return tc__base(t);
    }
    buf = (char *)tc__scratch_get(ctx, (size_t)n * tc__dtype_sizes[dt]);
    if (!buf) return NULL;
    *owned = buf;
    tc__contig_strides(t->ndim, t->shape, st);
    tc__copy_into(ctx, buf, dt, t->ndim, t->shape, st, tc__base(t), t->dtype, t->ndim, t->shape, t->strides);
    return buf;
}

/* As tc__as_dtype but always contiguous. */
TC__FN char *tc__contig_as(tc_ctx *ctx, const tc_tensor *t, tc_dtype dt, void **owned) {
    int64_t st[TC_MAX_DIMS];
    char *buf;
    *owned = NULL;
    if (t->dtype == dt && tc__contig(t)) return tc__base(t);
    buf = (char *)tc__scratch_get(ctx, (size_t)tc__numel(t) * tc__dtype_sizes[dt]);
    if (!buf) return NULL;
    *owned = buf;
    tc__contig_strides(t->ndim, t->shape, st);
    tc__copy_into(ctx, buf, dt, t->ndim, t->shape, st, tc__base(t), t->dtype, t->ndim, t->shape, t->strides);
    return buf;
}

TC__FN tc_result tc__shape_same(tc__call *c) {
    const tc_tensor *x = c->ins[0];
    c->odt = x->dtype;
    c->ondim = x->ndim;
    memcpy(c->oshape, x->shape, sizeof x->shape);
    return TC_OK;
}

TC__FN tc_result tc__shape_cast(tc__call *c) {
    if (!tc__dtype_valid(c->a.dt)) return tc__msg(c, TC_ERR_DTYPE, "invalid dtype %d", (int)c->a.dt);
    tc__shape_same(c);
    c->odt = c->a.dt;
    return TC_OK;
}

TC__FN tc_result tc__run_copy(tc__call *c, tc_tensor *out) {
    const tc_tensor *x = c->ins[0];
    tc__copy_into(c->ctx, tc__base(out), out->dtype, out->ndim, out->shape, out->strides, tc__base(x), x->dtype, x->ndim,
                  x->shape, x->strides);
    return TC_OK;
}

/* copy: ins = {dst, src}; result is dst itself */
TC__FN tc_result tc__shape_copy_into(tc__call *c) {
    tc_tensor *dst = c->ins[0], *src = c->ins[1];
    tc_result r = tc__broadcast(c, c->ins, 2);
    int i;
    if (r != TC_OK) return r;
    if (c->ondim != dst->ndim) r = TC_ERR_SHAPE;
    for (i = 0; r == TC_OK && i < dst->ndim; i++)
        if (c->oshape[i] != dst->shape[i]) r = TC_ERR_SHAPE;
    if (r != TC_OK) return tc__msg(c, r, "cannot broadcast %s into %s", tc__shp(src).s, tc__shp(dst).s);
    c->out_into = dst;
    c->odt = dst->dtype;
    return TC_OK;
}

TC__FN tc_result tc__run_copy_into(tc__call *c, tc_tensor *dst) {
    tc_tensor *src = c->ins[1];
    void *tmp = NULL;
    int64_t st[TC_MAX_DIMS];
    const char *sp = tc__base(src);
    memcpy(st, src->strides, sizeof st);
    if (src->storage == dst->storage) {
        /* src may overlap dst (a view of it): read it all before writing */
        size_t bytes = (size_t)tc__numel(src) * tc__dtype_sizes[src->dtype];
        tmp = tc__scratch_get(c->ctx, bytes);
        if (!tmp) return tc__msg(c, TC_ERR_OOM, "out of memory");
        tc__contig_strides(src->ndim, src->shape, st);
        tc__copy_into(c->ctx, (char *)tmp, src->dtype, src->ndim, src->shape, st, sp, src->dtype, src->ndim,
                      src->shape, src->strides);
        sp = (const char *)tmp;
    }
    tc__copy_into(c->ctx, tc__base(dst), dst->dtype, dst->ndim, dst->shape, dst->strides, sp, src->dtype, src->ndim,
                  src->shape, st);
    tc__scratch_put(tmp);
    return TC_OK;
}

TCDEF tc_tensor *tc_copy_at(tc_ctx *ctx, tc_tensor *dst, tc_tensor *src, const char *file, int line) {
    tc__call c;
    tc__call_init(&c, ctx, TC__OP_COPY, file, line);
    c.nin = 2;
    c.in[0] = dst;
    c.in[1] = src;
    return tc__run(&c);
}

TCDEF tc_tensor *tc_clone_at(tc_ctx *ctx, tc_tensor *x, const char *file, int line) {
    return tc__clone(ctx, x, NULL, file, line);
}

TCDEF tc_tensor *tc_contiguous_at(tc_ctx *ctx, tc_tensor *x, const char *file, int line) {
    if (ctx && x && x->status == TC_OK && x->ctx == ctx && tc__contig(x)) return x;
    return tc__clone(ctx, x, "contiguous", file, line);
}

TCDEF tc_tensor *tc_cast_at(tc_ctx *ctx, tc_tensor *x, tc_dtype dt, const char *file, int line) {
    tc__call c;
    tc__unary_call(ctx, TC__OP_CAST, x, file, line, &c);
    c.a.dt = dt;
    return tc__run(&c);
}

/* ---- unary kernels --------------------------------------------------------------- */

typedef void (*tc__unary_k)(void *o, const void *x, int64_t sx, int64_t n, float p0, float p1);

#define TC__UNARY_LOOPS_(T, EXPR)                                                \
    T *TC__RESTRICT op = (T *)o;                                                 \
    const T *TC__RESTRICT xp = (const T *)xv;                                    \
    int64_t i;                                                                   \
    (void)p0;                                                                    \
    (void)p1;                                                                    \
    if (sx == 1) {                                                               \
        for (i = 0; i < n; i++) {                                                \
            T x = xp[i];                                                         \
            op[i] = (T)(EXPR);                                                   \
        }                                                                        \
    } else {                                                                     \
        for (i = 0; i < n; i++) {                                                \
            T x = xp[i * sx];                                                    \
            op[i] = (T)(EXPR);                                                   \
        }                                                                        \
    }

/* Per row of TC__UNARY_OPS / TC__UNARY_ATTR_OPS (optable.h): tc__uf_ID,
 * and tc__ui_ID where the op keeps i32. */
#define TC__DEF_UF_(ID, name, cost, i, f, v)                                                      \
    static void tc__uf_##ID(void *o, const void *xv, int64_t sx, int64_t n, float p0, float p1) { \
        TC__UNARY_LOOPS_(float, f)                                                                \
    }
#define TC__DEF_UI_(ID, name, cost, i, f, v) TC__CAT(TC__DEF_UI_, TC__HAS_INT(i))(ID, TC__INT_EXPR(i))
#define TC__DEF_UI_0(ID, EXPR)
#define TC__DEF_UI_1(ID, EXPR)                                                                    \
    static void tc__ui_##ID(void *o, const void *xv, int64_t sx, int64_t n, float p0, float p1) { \
        TC__UNARY_LOOPS_(int32_t, EXPR)                                                           \
    }
TC__UNARY_OPS(TC__DEF_UF_)
TC__UNARY_ATTR_OPS(TC__DEF_UF_)
TC__UNARY_OPS(TC__DEF_UI_)
TC__UNARY_ATTR_OPS(TC__DEF_UI_)
#undef TC__DEF_UF_
#undef TC__DEF_UI_
#undef TC__DEF_UI_0
#undef TC__DEF_UI_1

typedef struct tc__unary_row {
    tc__op op;
    tc__unary_k fn;
} tc__unary_row;

#define TC__U_ROW_F_(ID, name, cost, i, f, v) {TC__OP_##ID, tc__uf_##ID},
#define TC__U_ROW_I_(ID, name, cost, i, f, v) TC__CAT(TC__U_ROW_I_, TC__HAS_INT(i))(ID)
#define TC__U_ROW_I_0(ID)
#define TC__U_ROW_I_1(ID) {TC__OP_##ID, tc__ui_##ID},
static const tc__unary_row tc__unary_f32[] = {TC__UNARY_OPS(TC__U_ROW_F_) TC__UNARY_ATTR_OPS(TC__U_ROW_F_)};
static const tc__unary_row tc__unary_i32[] = {TC__UNARY_OPS(TC__U_ROW_I_) TC__UNARY_ATTR_OPS(TC__U_ROW_I_)};
#undef TC__U_ROW_F_
#undef TC__U_ROW_I_
#undef TC__U_ROW_I_0
#undef TC__U_ROW_I_1

/* The kernel for op in dtype ct (f32 or i32); NULL when the op has no
 * integer form (integer inputs then compute in f32). */
TC__FN tc__unary_k tc__unary_kernel(tc__op op, tc_dtype ct) {
    const tc__unary_row *t = ct == TC_I32 ? tc__unary_i32 : tc__unary_f32;
    size_t i, n = ct == TC_I32 ? sizeof tc__unary_i32 / sizeof *t : sizeof tc__unary_f32 / sizeof *t;
    for (i = 0; i < n; i++)
        if (t[i].op == op) return t[i].fn;
    return NULL;
}

TC__FN tc_result tc__shape_unary(tc__call *c) {
    const tc_tensor *x = c->ins[0];
    tc__shape_same(c);
    if (!tc__is_float(x->dtype)) c->odt = tc__unary_kernel(c->op, TC_I32) ? TC_I32 : TC_F32;
    return TC_OK;
}

TC__FN void tc__inner_unary(const tc__iter *it, char **ptr, const int64_t *st, int64_t n) {
    ((tc__unary_k)(uintptr_t)it->fn)(ptr[0], ptr[1], st[1], n, (float)it->attrs->f[0], (float)it->attrs->f[1]);
}

/* Computes in `ct` (f32 or i32): converts inputs first when their dtype
 * differs and converts the result when the output is half. */
TC__FN tc_result tc__run_unary(tc__call *c, tc_tensor *out) {
    const tc_tensor *x = c->ins[0];
    tc_dtype ct = out->dtype == TC_I32 ? TC_I32 : TC_F32;
    tc__unary_k k = tc__unary_kernel(c->op, ct);
    int64_t xst[TC_MAX_DIMS], ost[TC_MAX_DIMS];
    void *xown = NULL, *oown = NULL;
    char *xp = tc__as_dtype(c->ctx, x, ct, xst, &xown), *op;
    tc__iter it;
    tc_result r = TC_OK;
    if (!xp) return tc__msg(c, TC_ERR_OOM, "out of memory");
    op = out->dtype == ct ? tc__base(out) : (char *)(oown = tc__scratch_get(c->ctx, (size_t)tc__numel(out) * 4));
    if (!op) r = tc__msg(c, TC_ERR_OOM, "out of memory");
    else {
        tc__contig_strides(out->ndim, out->shape, ost);
        tc__iter_init(&it, out->ndim, out->shape, tc__inner_unary, (const void *)(uintptr_t)k, &c->a);
        tc__iter_operand(&it, op, 4, out->ndim, out->shape, ost);
        tc__iter_operand(&it, xp, 4, x->ndim, x->shape, xst);
        tc__iter_run(c->ctx, &it, tc__category(out->dtype) == 2 && c->op != TC__OP_NEG ? 8 : 1);
        if (oown)
            tc__copy_into(c->ctx, tc__base(out), out->dtype, out->ndim, out->shape, out->strides, op, ct, out->ndim,
                          out->shape, ost);
    }
    tc__scratch_put(xown);
    tc__scratch_put(oown);
    return r;
}

/* The entry points of TC__UNARY_OPS, declared by api.h's TC__UNARY_API. */
#define TC__DEF_UNARY_API_(ID, name, cost, i, f, v)                                               \
    TCDEF tc_tensor *tc_##name##_at(tc_ctx *ctx, tc_tensor *x, const char *file, int line) {      \
        tc__call c;                                                                               \
        tc__unary_call(ctx, TC__OP_##ID, x, file, line, &c);                                      \
        return tc__run(&c);                                                                       \
    }
TC__UNARY_OPS(TC__DEF_UNARY_API_)
#undef TC__DEF_UNARY_API_

/* api.h's name lists (TC__UNARY_API, TC__BINARY_API) and the rows name the
 * same ops: a name without a row has no definition (the tests call every
 * listed op, so their link fails), and as many names as rows. */
#define TC__ONE_(name) +1
#define TC__ONE_ROW_(ID, name, cost, i, f, v) +1
typedef char tc__unary_api_has_each_row[0 TC__UNARY_API(TC__ONE_) == 0 TC__UNARY_OPS(TC__ONE_ROW_) ? 1 : -1];
typedef char tc__binary_api_has_each_row[0 TC__BINARY_API(TC__ONE_) ==
                                         0 TC__BINARY_OPS(TC__ONE_ROW_) TC__COMPARE_OPS(TC__ONE_ROW_) ? 1 : -1];
#undef TC__ONE_
#undef TC__ONE_ROW_

TCDEF tc_tensor *tc_softplus_at(tc_ctx *ctx, tc_tensor *x, double beta, double threshold, const char *file, int line) {
    tc__call c;
    tc__unary_call(ctx, TC__OP_SOFTPLUS, x, file, line, &c);
    if (ctx && !(beta != 0.0 && isfinite(beta))) {
        tc__msg(&c, TC_ERR_INVALID_ARG, "beta must be finite and nonzero (got %g)", beta);
        return tc__fail(&c, TC_ERR_INVALID_ARG);
    }
    c.a.f[0] = beta;
    c.a.f[1] = threshold;
    return tc__run(&c);
}

TCDEF tc_tensor *tc_clamp_at(tc_ctx *ctx, tc_tensor *x, double lo, double hi, const char *file, int line) {
    tc__call c;
    tc__unary_call(ctx, TC__OP_CLAMP, x, file, line, &c);
    c.a.f[0] = lo;
    c.a.f[1] = hi;
    return tc__run(&c);
}

/* ---- binary kernels ---------------------------------------------------------------- */

TC__FN int32_t tc__ipow(int32_t a, int32_t b) {
    uint32_t r = 1, base = (uint32_t)a;
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;
    while (b) {
        if (b & 1) r *= base;
        base *= base;
        b >>= 1;
    }
    return (int32_t)r;
}

typedef void (*tc__binary_k)(void *o, const void *a, int64_t sa, const void *b, int64_t sb, int64_t n);

/* Four loops: both contiguous, b broadcast, a broadcast, general strides. */
#define TC__BINARY_LOOPS_(TO, TI, EXPR)                                             \
    TO *TC__RESTRICT op = (TO *)o;                                                  \
    const TI *TC__RESTRICT ap = (const TI *)av;                                     \
    const TI *TC__RESTRICT bp = (const TI *)bv;                                     \
    int64_t i;                                                                      \
    if (sa == 1 && sb == 1) {                                                       \
        for (i = 0; i < n; i++) {                                                   \
            TI a = ap[i], b = bp[i];                                                \
            op[i] = (TO)(EXPR);                                                     \
        }                                                                           \
    } else if (sa == 1 && sb == 0) {                                                \
        TI b = bp[0];                                                               \
        for (i = 0; i < n; i++) {                                                   \
            TI a = ap[i];                                                           \
            op[i] = (TO)(EXPR);                                                     \
        }                                                                           \
    } else if (sa == 0 && sb == 1) {                                                \
        TI a = ap[0];                                                               \
        for (i = 0; i < n; i++) {                                                   \
            TI b = bp[i];                                                           \
            op[i] = (TO)(EXPR);                                                     \
        }                                                                           \
    } else {                                                                        \
        for (i = 0; i < n; i++) {                                                   \
            TI a = ap[i * sa], b = bp[i * sb];                                      \
            op[i] = (TO)(EXPR);                                                     \
        }                                                                           \
    }

/* Per row of TC__BINARY_OPS (optable.h): tc__bf_ID, and tc__bi_ID where
 * the op keeps i32; per row of TC__COMPARE_OPS: tc__cf_ID and tc__ci_ID. */
#define TC__DEF_BF_(ID, name, cost, i, f, v) \
    static void tc__bf_##ID(void *o, const void *av, int64_t sa, const void *bv, int64_t sb, int64_t n) { TC__BINARY_LOOPS_(float, float, f) }
#define TC__DEF_BI_(ID, name, cost, i, f, v) TC__CAT(TC__DEF_BI_, TC__HAS_INT(i))(ID, TC__INT_EXPR(i))
#define TC__DEF_BI_0(ID, EXPR)
#define TC__DEF_BI_1(ID, EXPR) \
    static void tc__bi_##ID(void *o, const void *av, int64_t sa, const void *bv, int64_t sb, int64_t n) { TC__BINARY_LOOPS_(int32_t, int32_t, EXPR) }
#define TC__DEF_CF_(ID, name, cost, i, f, v) \
    static void tc__cf_##ID(void *o, const void *av, int64_t sa, const void *bv, int64_t sb, int64_t n) { TC__BINARY_LOOPS_(unsigned char, float, f) }
#define TC__DEF_CI_(ID, name, cost, i, f, v) \
    static void tc__ci_##ID(void *o, const void *av, int64_t sa, const void *bv, int64_t sb, int64_t n) { TC__BINARY_LOOPS_(unsigned char, int32_t, TC__INT_EXPR(i)) }
TC__BINARY_OPS(TC__DEF_BF_)
TC__BINARY_OPS(TC__DEF_BI_)
TC__COMPARE_OPS(TC__DEF_CF_)
TC__COMPARE_OPS(TC__DEF_CI_)
#undef TC__DEF_BF_
#undef TC__DEF_BI_
#undef TC__DEF_BI_0
#undef TC__DEF_BI_1
#undef TC__DEF_CF_
#undef TC__DEF_CI_

typedef struct tc__binary_info {
    tc__op op;
    tc__binary_k f32, i32;   /* i32 NULL: integer inputs compute in f32 */
    int compare;
} tc__binary_info;

#define TC__B_INFO_(ID, name, cost, i, f, v) {TC__OP_##ID, tc__bf_##ID, TC__CAT(TC__B_INFO_I_, TC__HAS_INT(i))(ID), 0},
#define TC__B_INFO_I_0(ID) NULL
#define TC__B_INFO_I_1(ID) tc__bi_##ID
#define TC__C_INFO_(ID, name, cost, i, f, v) {TC__OP_##ID, tc__cf_##ID, tc__ci_##ID, 1},
static const tc__binary_info tc__binary_table[] = {TC__BINARY_OPS(TC__B_INFO_) TC__COMPARE_OPS(TC__C_INFO_)};
#undef TC__B_INFO_
#undef TC__B_INFO_I_0
#undef TC__B_INFO_I_1
#undef TC__C_INFO_

TC__FN const tc__binary_info *tc__binary_lookup(tc__op op) {
    size_t i;
    for (i = 0; i < sizeof tc__binary_table / sizeof tc__binary_table[0]; i++)
        if (tc__binary_table[i].op == op) return &tc__binary_table[i];
    return NULL;
}

/* compute dtype of a binary op given the promoted input dtype */
TC__FN tc_dtype tc__binary_compute(const tc__binary_info *b, tc_dtype promoted) {
    return tc__is_float(promoted) || !b->i32 ? TC_F32 : TC_I32;
}

TC__FN tc_result tc__shape_binary(tc__call *c) {
    const tc__binary_info *b = tc__binary_lookup(c->op);
    tc_dtype p = tc__promote(c->ins, 2);
    tc_result r = tc__broadcast(c, c->ins, 2);
    if (r != TC_OK) return r;
    if (b->compare) c->odt = TC_BOOL;
    else if (tc__is_float(p)) c->odt = p;
    else c->odt = tc__binary_compute(b, p);
    return TC_OK;
}

TC__FN void tc__inner_binary(const tc__iter *it, char **ptr, const int64_t *st, int64_t n) {
    ((tc__binary_k)(uintptr_t)it->fn)(ptr[0], ptr[1], st[1], ptr[2], st[2], n);
}

TC__FN tc_result tc__run_binary(tc__call *c, tc_tensor *out) {
    const tc__binary_info *b = tc__binary_lookup(c->op);
    tc_dtype ct = tc__binary_compute(b, tc__promote(c->ins, 2));
    tc__binary_k k = ct == TC_I32 ? b->i32 : b->f32;
    const tc_tensor *x = c->ins[0], *y = c->ins[1];
    int64_t xst[TC_MAX_DIMS], yst[TC_MAX_DIMS], ost[TC_MAX_DIMS];
    void *xown = NULL, *yown = NULL, *oown = NULL;
    char *xp = tc__as_dtype(c->ctx, x, ct, xst, &xown), *yp = tc__as_dtype(c->ctx, y, ct, yst, &yown), *op;
    int osize = b->compare ? 1 : 4;
    tc_result r = TC_OK;
    tc__iter it;
    op = out->dtype == (b->compare ? TC_BOOL : ct) ? tc__base(out)
                                                   : (char *)(oown = tc__scratch_get(c->ctx, (size_t)tc__numel(out) * 4));
    if (!xp || !yp || !op) r = tc__msg(c, TC_ERR_OOM, "out of memory");
    else {
        tc__contig_strides(out->ndim, out->shape, ost);
        tc__iter_init(&it, out->ndim, out->shape, tc__inner_binary, (const void *)(uintptr_t)k, &c->a);
        tc__iter_operand(&it, op, osize, out->ndim, out->shape, ost);
        tc__iter_operand(&it, xp, 4, x->ndim, x->shape, xst);
        tc__iter_operand(&it, yp, 4, y->ndim, y->shape, yst);
        tc__iter_run(c->ctx, &it, c->op == TC__OP_POW ? 8 : 1);
        if (oown)
            tc__copy_into(c->ctx, tc__base(out), out->dtype, out->ndim, out->shape, out->strides, op, ct, out->ndim,
                          out->shape, ost);
    }
    tc__scratch_put(xown);
    tc__scratch_put(yown);
    tc__scratch_put(oown);
    return r;
}

TC__FN tc_tensor *tc__binary(tc_ctx *ctx, tc__op op, tc_tensor *a, tc_tensor *b, const char *name, const char *file,
                             int line) {
    tc__call c;
    tc__call_init(&c, ctx, op, file, line);
    c.name = name;
    c.nin = 2;
    c.in[0] = a;
    c.in[1] = b;
    return tc__run(&c);
}

/* The scalar is a 0-d f32 tensor in the caller's scope, freed right after:
 * the result never aliases it. */
TC__FN tc_tensor *tc__binary_scalar(tc_ctx *ctx, tc__op op, tc_tensor *a, double s, const char *name, const char *file,
                                    int line) {
    tc_tensor *st, *r;
    if (!ctx) return &tc__sentinel_null_ctx;
    st = tc__full(ctx, TC_F32, 0, NULL, s, name, file, line);
    if (!st->is_sentinel) st->is_wrapped = 1;
    r = tc__binary(ctx, op, a, st, name, file, line);
    tc_free(st);
    return r;
}

#define TC__DEF_BINARY_API_(ID, name, cost, i, f, v)                                                                   \
    TCDEF tc_tensor *tc_##name##_at(tc_ctx *ctx, tc_tensor *a, tc_tensor *b, const char *file, int line) {   \
        return tc__binary(ctx, TC__OP_##ID, a, b, NULL, file, line);                                         \
    }                                                                                                        \
    TCDEF tc_tensor *tc_##name##_scalar_at(tc_ctx *ctx, tc_tensor *a, double b, const char *file, int line) { \
        return tc__binary_scalar(ctx, TC__OP_##ID, a, b, #name "_scalar", file, line);                      \
    }
TC__BINARY_OPS(TC__DEF_BINARY_API_)
TC__COMPARE_OPS(TC__DEF_BINARY_API_)
#undef TC__DEF_BINARY_API_

/* ---- where ----------------------------------------------------------------------- */

TC__FN tc_result tc__shape_where(tc__call *c) {
    tc_result r;
    if (c->ins[0]->dtype != TC_BOOL)
        return tc__msg(c, TC_ERR_DTYPE, "condition must be bool, got %s", tc__dtype_names[c->ins[0]->dtype]);
    r = tc__broadcast(c, c->ins, 3);
    c->odt = tc__promote(c->ins + 1, 2);
    return r;
}

TC__FN void tc__inner_where(const tc__iter *it, char **ptr, const int64_t *st, int64_t n) {
    const unsigned char *cp = (const unsigned char *)ptr[1];
    int64_t i;
    if (it->esize[0] == 4) {
        int32_t *o = (int32_t *)ptr[0];
        const int32_t *a = (const int32_t *)ptr[2], *b = (const int32_t *)ptr[3];
        for (i = 0; i < n; i++) o[i] = cp[i * st[1]] ? a[i * st[2]] : b[i * st[3]];
    } else if (it->esize[0] == 2) {
        uint16_t *o = (uint16_t *)ptr[0];
        const uint16_t *a = (const uint16_t *)ptr[2], *b = (const uint16_t *)ptr[3];
        for (i = 0; i < n; i++) o[i] = cp[i * st[1]] ? a[i * st[2]] : b[i * st[3]];
    } else {
        unsigned char *o = (unsigned char *)ptr[0];
        const unsigned char *a = (const unsigned char *)ptr[2], *b = (const unsigned char *)ptr[3];
        for (i = 0; i < n; i++) o[i] = cp[i * st[1]] ? a[i * st[2]] : b[i * st[3]];
    }
}

/* A selection moves bits, so it works in the output dtype directly. */
TC__FN tc_result tc__run_where(tc__call *c, tc_tensor *out) {
    const tc_tensor *cond = c->ins[0], *a = c->ins[1], *b = c->ins[2];
    int64_t ast[TC_MAX_DIMS], bst[TC_MAX_DIMS];
    void *aown = NULL, *bown = NULL;
    char *ap = tc__as_dtype(c->ctx, a, out->dtype, ast, &aown), *bp = tc__as_dtype(c->ctx, b, out->dtype, bst, &bown);
    int es = (int)tc__dtype_sizes[out->dtype];
    tc_result r = TC_OK;
    tc__iter it;
    if (!ap || !bp) r = tc__msg(c, TC_ERR_OOM, "out of memory");
    else {
        tc__iter_init(&it, out->ndim, out->shape, tc__inner_where, NULL, &c->a);
        tc__iter_operand(&it, tc__base(out), es, out->ndim, out->shape, out->strides);
        tc__iter_operand(&it, tc__base(cond), 1, cond->ndim, cond->shape, cond->strides);
        tc__iter_operand(&it, ap, es, a->ndim, a->shape, ast);
        tc__iter_operand(&it, bp, es, b->ndim, b->shape, bst);
        tc__iter_run(c->ctx, &it, 1);
    }
    tc__scratch_put(aown);
    tc__scratch_put(bown);
    return r;
}

TCDEF tc_tensor *tc_where_at(tc_ctx *ctx, tc_tensor *cond, tc_tensor *a, tc_tensor *b, const char *file, int line) {
    tc__call c;
    tc__call_init(&c, ctx, TC__OP_WHERE, file, line);
    c.nin = 3;
    c.in[0] = cond;
    c.in[1] = a;
    c.in[2] = b;
    return tc__run(&c);
}
