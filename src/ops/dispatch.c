/* Dispatch: every public op builds a tc__call and hands it to tc__run, which
 * validates inputs, propagates errors, applies the op's shape rule from the
 * table and runs its kernel.  While the context traces (compiled mode), the
 * compiler's hook records the call instead of running it (trace.c).  Also:
 * creation and view rules. */

TC__FN void tc__call_init(tc__call *c, tc_ctx *ctx, tc__op op, const char *file, int line) {
    memset(c, 0, sizeof *c);
    c->ctx = ctx;
    c->op = op;
    c->file = file;
    c->line = line;
    c->ins = c->in;
}

TC__FN tc_result tc__msg(tc__call *c, tc_result r, const char *fmt, ...) TC__PRINTF(3, 4);
TC__FN tc_result tc__msg(tc__call *c, tc_result r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, sizeof c->msg, fmt, ap);
    va_end(ap);
    return r;
}

/* "[2,3,4]" into buf */
TC__FN const char *tc__shape_str(int ndim, const int64_t *shape, char *buf, size_t cap) {
    size_t n = 0;
    int i;
    buf[0] = 0;
    n += (size_t)snprintf(buf, cap, "[");
    for (i = 0; i < ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, i ? ",%lld" : "%lld", (long long)shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

typedef struct tc__sbuf { char s[96]; } tc__sbuf;
TC__FN tc__sbuf tc__shp(const tc_tensor *t) {
    tc__sbuf b;
    tc__shape_str(t->ndim, t->shape, b.s, sizeof b.s);
    return b;
}

/* An errored tensor in the current scope; the context keeps the first. */
TC__FN tc_tensor *tc__error_tensor(tc_ctx *ctx, tc_result r, const char *text) {
    tc_tensor *t = tc__tensor_new(ctx);
    tc__ctx_note(ctx, r, text);
    if (!t) return &tc__sentinel_oom;
    t->status = r;
    t->err = tc__strdup(text);
    return t;
}

TC__FN tc_tensor *tc__fail(tc__call *c, tc_result r) {
    char text[TC__MSG_CAP + 160];
    const char *name = c->name ? c->name : tc__optable[c->op].name;
    if (c->file) snprintf(text, sizeof text, "tc_%s (%s:%d): %s", name, c->file, c->line, c->msg);
    else snprintf(text, sizeof text, "tc_%s: %s", name, c->msg);
    if (c->ctx->opts.log_op_errors) tc__log(c->ctx, TC_LOG_ERROR, "%s", text);
    return tc__error_tensor(c->ctx, r, text);
}

/* Normalises a possibly negative axis against ndim; -1 when out of range. */
TC__FN int tc__axis(int axis, int ndim) {
    if (axis < -ndim || axis >= (ndim > 0 ? ndim : 1)) return -1;
    return axis < 0 ? axis + ndim : axis;
}

TC__FN tc_result tc__bad_axis(tc__call *c, int axis, int ndim) {
    return tc__msg(c, TC_ERR_AXIS, "dim %d out of range for a %d-d tensor (expected in [%d, %d])", axis, ndim,
                   -(ndim > 0 ? ndim : 1), ndim > 0 ? ndim - 1 : 0);
}

/* Allocates a contiguous tensor for the call's output shape. */
TC__FN tc_tensor *tc__alloc_out(tc__call *c, tc_result *r) {
    int64_t n = tc__numel_of(c->ondim, c->oshape), bytes;
    tc_tensor *t;
    if (n < 0 || tc__mul_ov(n, (int64_t)tc__dtype_sizes[c->odt], &bytes) || bytes > ((int64_t)1 << 60)) {
        *r = tc__msg(c, TC_ERR_OVERFLOW, "result of %s elements is too large",
                     n < 0 ? "an overflowing number of" : "so many");
        return NULL;
    }
    t = tc__tensor_new(c->ctx);
    if (!t) {
        *r = tc__msg(c, TC_ERR_OOM, "out of memory");
        return NULL;
    }
    t->storage = c->device == TC_CUDA ? tc__storage_new_device(c->ctx, (size_t)bytes, "the output")
                                      : tc__storage_new(c->ctx, (size_t)bytes);
    if (!t->storage) {
        tc_free(t);
        if (c->device == TC_CUDA) *r = tc__msg(c, c->ctx->first_status ? c->ctx->first_status : TC_ERR_DEVICE, "%s", c->ctx->first_err);
        else *r = tc__msg(c, TC_ERR_OOM, "out of memory allocating %lld bytes", (long long)bytes);
        return NULL;
    }
    t->device = c->device;
    t->dtype = c->odt;
    t->ndim = c->ondim;
    memcpy(t->shape, c->oshape, sizeof(int64_t) * (size_t)c->ondim);
    tc__contig_strides(t->ndim, t->shape, t->strides);
    return t;
}

TC__FN tc_tensor *tc__make_view(tc__call *c, tc__storage *sto, tc_result *r) {
    tc_tensor *t = tc__tensor_new(c->ctx);
    if (!t) {
        *r = tc__msg(c, TC_ERR_OOM, "out of memory");
        return NULL;
    }
    t->storage = sto;
    sto->refs++;
    t->device = (tc_device)sto->device;
    t->dtype = c->odt;
    t->ndim = c->ondim;
    memcpy(t->shape, c->oshape, sizeof(int64_t) * (size_t)c->ondim);
    memcpy(t->strides, c->ostrides, sizeof(int64_t) * (size_t)c->ondim);
    t->offset = c->ooffset;
    return t;
}

/* Where a checked call's inputs are (all on one device, scalar arguments
 * aside); -1 without any. */
TC__FN int tc__call_device(const tc__call *c) {
    int i;
    for (i = 0; i < c->nin; i++)
        if (c->ins[i] && !c->ins[i]->is_wrapped) return (int)c->ins[i]->device;
    for (i = 0; i < c->nin; i++)
        if (c->ins[i]) return (int)c->ins[i]->device;
    return -1;
}

/* The checks every op makes before its rule: NULL inputs (unless optional),
 * errored inputs (their error propagates), inputs of another context.
 * Returns the tensor to return instead of running, or NULL to go on. */
TC__FN tc_tensor *tc__check_inputs(tc__call *c) {
    int i, first = -1;
    for (i = 0; i < c->nin; i++) {
        tc_tensor *t = c->ins[i];
        if (!t) {
            if (c->optional & (1u << i)) continue;
            tc__msg(c, TC_ERR_NULL, "input %d is NULL", i);
            return tc__fail(c, TC_ERR_NULL);
        }
        if (t->status != TC_OK) return tc__error_tensor(c->ctx, t->status, tc_error(t));
        if (t->ctx != c->ctx) {
            tc__msg(c, TC_ERR_INVALID_ARG, "input %d belongs to another context", i);
            return tc__fail(c, TC_ERR_INVALID_ARG);
        }
        if (t->is_wrapped) continue; /* a scalar argument (tc_add_scalar's) goes where the op runs */
        if (first < 0) first = i;
        if (t->device != c->ins[first]->device || (c->out_into && c->out_into->device != t->device)) {
            int out = c->out_into && c->out_into->device != t->device;
            tc__msg(c, TC_ERR_INVALID_ARG, "inputs on different devices (input %d on %s, %s %d on %s): tc_to moves one",
                    first, tc__device_name(c->ins[first]->device), out ? "output" : "input", out ? 0 : i,
                    tc__device_name(out ? c->out_into->device : t->device));
            return tc__fail(c, TC_ERR_INVALID_ARG);
        }
    }
    return NULL;
}

TC__FN tc_tensor *tc__run(tc__call *c) {
    const tc__opinfo *info = &tc__optable[c->op];
    tc_result r;
    tc_tensor *out;
    if (!c->ctx) return &tc__sentinel_null_ctx;
    if (c->ctx->trace) return c->ctx->trace_hooks->op(c); /* recorded instead */
    if ((out = tc__check_inputs(c)) != NULL) return out;
    r = info->shape(c);
    if (r != TC_OK) return tc__fail(c, r);
    if (c->is_view) {
        tc__storage *sto = c->nin > 0 ? c->ins[0]->storage : tc__storage_wrap(c->a.ptr);
        if (!sto) {
            tc__msg(c, TC_ERR_OOM, "out of memory");
            return tc__fail(c, TC_ERR_OOM);
        }
        out = tc__make_view(c, sto, &r);
        if (c->nin == 0) sto->refs--; /* the view holds the only reference */
        if (!out) {
            if (c->nin == 0) TC_FREE(sto);
            return tc__fail(c, r);
        }
        return out;
    }
    if (tc__call_device(c) == (int)TC_CUDA) { /* every input is there (checked) */
        if (!c->ctx->device_run) {
            tc__msg(c, TC_ERR_UNSUPPORTED, "no CUDA kernel for this op yet");
            return tc__fail(c, TC_ERR_UNSUPPORTED);
        }
        return c->ctx->device_run(c);
    }
    if (c->out_into) out = c->out_into;
    else if (!(out = tc__alloc_out(c, &r))) return tc__fail(c, r);
    if (tc__numel(out) > 0 || c->out_into) {
        r = info->run(c, out);
        if (r != TC_OK) {
            if (!c->out_into) tc_free(out);
            return tc__fail(c, r);
        }
    }
    return out;
}

TC__FN tc_result tc__run_none(tc__call *c, tc_tensor *out) {
    (void)c;
    (void)out;
    return TC_OK;
}

TC__FN tc_result tc__run_view(tc__call *c, tc_tensor *out) { return tc__run_none(c, out); }

/* ---- creation ---------------------------------------------------------------- */

/* Shape attributes live in a.i[0..ndim), ndim in a.i[TC_MAX_DIMS*2]. */
#define TC__A_NDIM (TC_MAX_DIMS * 2)

TC__FN tc_result tc__set_shape_attr(tc__call *c, int ndim, const int64_t *shape) {
    int i;
    if (ndim < 0 || ndim > TC_MAX_DIMS)
        return tc__msg(c, TC_ERR_INVALID_ARG, "ndim %d out of range [0, %d]", ndim, TC_MAX_DIMS);
    if (ndim > 0 && !shape) return tc__msg(c, TC_ERR_NULL, "shape is NULL");
    for (i = 0; i < ndim; i++) c->a.i[i] = shape[i];
    c->a.i[TC__A_NDIM] = ndim;
    return TC_OK;
}

TC__FN tc_result tc__shape_create(tc__call *c) {
    int i, ndim = (int)c->a.i[TC__A_NDIM];
    if (!tc__dtype_valid(c->a.dt)) return tc__msg(c, TC_ERR_DTYPE, "invalid dtype %d", (int)c->a.dt);
    for (i = 0; i < ndim; i++) {
        if (c->a.i[i] < 0) return tc__msg(c, TC_ERR_INVALID_ARG, "negative size %lld in dim %d", (long long)c->a.i[i], i);
        c->oshape[i] = c->a.i[i];
    }
    if (tc__numel_of(ndim, c->oshape) < 0) return tc__msg(c, TC_ERR_OVERFLOW, "the product of the sizes overflows");
    c->odt = c->a.dt;
    c->ondim = ndim;
    return TC_OK;
}

/* The entry points of creation ops: a failed attribute check still goes
 * through tc__run's error path so the message names the op and call site. */
TC__FN tc_tensor *tc__create(tc_ctx *ctx, tc__op op, tc_dtype dt, int ndim, const int64_t *shape, const char *file,
                             int line, tc__call *c) {
    tc_result r;
    tc__call_init(c, ctx, op, file, line);
    if (!ctx) return &tc__sentinel_null_ctx;
    c->a.dt = dt;
    r = tc__set_shape_attr(c, ndim, shape);
    if (r != TC_OK) return tc__fail(c, r);
    return NULL;
}

TCDEF tc_tensor *tc_empty_at(tc_ctx *ctx, tc_dtype dt, int ndim, const int64_t *shape, const char *file, int line) {
    tc__call c;
    tc_tensor *e = tc__create(ctx, TC__OP_EMPTY, dt, ndim, shape, file, line, &c);
    return e ? e : tc__run(&c);
}

TC__FN tc_tensor *tc__full(tc_ctx *ctx, tc_dtype dt, int ndim, const int64_t *shape, double value, const char *name,
                           const char *file, int line) {
    tc__call c;
    tc_result r;
    tc__call_init(&c, ctx, TC__OP_FULL, file, line);
    c.name = name;
    if (!ctx) return &tc__sentinel_null_ctx;
    c.a.dt = dt;
    c.a.f[0] = value;
    r = tc__set_shape_attr(&c, ndim, shape);
    return r != TC_OK ? tc__fail(&c, r) : tc__run(&c);
}

TCDEF tc_tensor *tc_full_at(tc_ctx *ctx, tc_dtype dt, int ndim, const int64_t *shape, double value, const char *file,
                            int line) {
    return tc__full(ctx, dt, ndim, shape, value, NULL, file, line);
}

TCDEF tc_tensor *tc_zeros_at(tc_ctx *ctx, tc_dtype dt, int ndim, const int64_t *shape, const char *file, int line) {
    return tc__full(ctx, dt, ndim, shape, 0.0, "zeros", file, line);
}

TCDEF tc_tensor *tc_ones_at(tc_ctx *ctx, tc_dtype dt, int ndim, const int64_t *shape, const char *file, int line) {
    return tc__full(ctx, dt, ndim, shape, 1.0, "ones", file, line);
}

TCDEF tc_tensor *tc_scalar_at(tc_ctx *ctx, double value, const char *file, int line) {
    return tc__full(ctx, TC_F32, 0, NULL, value, "scalar", file, line);
}

typedef struct tc__fill_job {
    void *dst;
    tc_dtype dt;
    double v;
} tc__fill_job;

TC__FN void tc__fill_range(void *arg, int64_t b, int64_t e) {
    tc__fill_job *j = (tc__fill_job *)arg;
    int64_t i;
    if (j->dt == TC_F32) {
        float v = (float)j->v, *p = (float *)j->dst;
        for (i = b; i < e; i++) p[i] = v;
    } else if (j->dt == TC_I32) {
        int32_t *p = (int32_t *)j->dst, v;
        tc__store(&v, TC_I32, 0, j->v);
        for (i = b; i < e; i++) p[i] = v;
    } else {
        for (i = b; i < e; i++) tc__store(j->dst, j->dt, i, j->v);
    }
}

TC__FN tc_result tc__run_full(tc__call *c, tc_tensor *out) {
    tc__fill_job j;
    j.dst = tc__base(out);
    j.dt = out->dtype;
    j.v = c->a.f[0];
    tc__parallel_for(c->ctx, tc__numel(out), tc__numel(out), tc__fill_range, &j);
    return TC_OK;
}

TC__FN tc_result tc__shape_arange(tc__call *c) {
    double start = c->a.f[0], end = c->a.f[1], step = c->a.f[2], n;
    if (!tc__dtype_valid(c->a.dt) || c->a.dt == TC_BOOL)
        return tc__msg(c, TC_ERR_DTYPE, "dtype must be i32 or a float type");
    if (!(step == step) || step == 0.0 || !isfinite(start) || !isfinite(end) || !isfinite(step))
        return tc__msg(c, TC_ERR_INVALID_ARG, "need finite start/end and a nonzero step (got %g, %g, %g)", start, end, step);
    if ((step > 0 && end < start) || (step < 0 && end > start))
        return tc__msg(c, TC_ERR_INVALID_ARG, "end %g is on the wrong side of start %g for step %g", end, start, step);
    n = ceil((end - start) / step);
    if (n > 4e18) return tc__msg(c, TC_ERR_OVERFLOW, "too many elements");
    c->odt = c->a.dt;
    c->ondim = 1;
    c->oshape[0] = (int64_t)n;
    return TC_OK;
}

TC__FN tc_result tc__run_arange(tc__call *c, tc_tensor *out) {
    int64_t i, n = out->shape[0];
    char *p = tc__base(out);
    for (i = 0; i < n; i++) tc__store(p, out->dtype, i, c->a.f[0] + (double)i * c->a.f[2]);
    return TC_OK;
}

TCDEF tc_tensor *tc_arange_at(tc_ctx *ctx, tc_dtype dt, double start, double end, double step, const char *file,
                              int line) {
    tc__call c;
    tc__call_init(&c, ctx, TC__OP_ARANGE, file, line);
    c.a.dt = dt;
    c.a.f[0] = start;
    c.a.f[1] = end;
    c.a.f[2] = step;
    return tc__run(&c);
}

/* Counter-based generator: element i's value is a hash of (seed, i), so the
 * result does not depend on the thread split.  splitmix64 finaliser. */
TC__FN uint64_t tc__hash64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* uniform in (0, 1): 53 random bits, never exactly 0 (log-safe) */
TC__FN double tc__u01(uint64_t seed, uint64_t i) {
    uint64_t h = tc__hash64(tc__hash64(seed) ^ (i * 0xd6e8feb86659fd93ull));
    return ((double)(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

typedef struct tc__rand_job {
    float *dst;
    uint64_t seed;
    double p0, p1;
    int normal;
} tc__rand_job;

TC__FN void tc__rand_range(void *arg, int64_t b, int64_t e) {
    tc__rand_job *j = (tc__rand_job *)arg;
    int64_t i;
    for (i = b; i < e; i++) {
        if (j->normal) {
            /* Box-Muller on the pair (2i, 2i+1); keeps only the cosine half */
            double u1 = tc__u01(j->seed, 2 * (uint64_t)i), u2 = tc__u01(j->seed, 2 * (uint64_t)i + 1);
            j->dst[i] = (float)(j->p0 + j->p1 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
        } else {
            double u = tc__u01(j->seed, (uint64_t)i);
            j->dst[i] = (float)(j->p0 + (j->p1 - j->p0) * u);
        }
    }
}

TC__FN tc_result tc__run_rand(tc__call *c, tc_tensor *out) {
    tc__rand_job j;
    j.dst = (float *)tc__base(out);
    j.seed = (uint64_t)c->a.i[TC__A_NDIM + 1];
    j.p0 = c->a.f[0];
    j.p1 = c->a.f[1];
    j.normal = c->op == TC__OP_RAND_NORMAL;
    tc__parallel_for(c->ctx, tc__numel(out), tc__numel(out) * 16, tc__rand_range, &j);
    return TC_OK;
}

TC__FN tc_tensor *tc__rand(tc_ctx *ctx, tc__op op, int ndim, const int64_t *shape, double p0, double p1, uint64_t seed,
                           const char *file, int line) {
    tc__call c;
    tc_tensor *e = tc__create(ctx, op, TC_F32, ndim, shape, file, line, &c);
    if (e) return e;
    if (!isfinite(p0) || !isfinite(p1) || (op == TC__OP_RAND_NORMAL && p1 < 0)) {
        tc__msg(&c, TC_ERR_INVALID_ARG, "parameters must be finite (and std >= 0): %g, %g", p0, p1);
        return tc__fail(&c, TC_ERR_INVALID_ARG);
    }
    c.a.f[0] = p0;
    c.a.f[1] = p1;
    c.a.i[TC__A_NDIM + 1] = (int64_t)seed;
    return tc__run(&c);
}

TCDEF tc_tensor *tc_rand_uniform_at(tc_ctx *ctx, int ndim, const int64_t *shape, double lo, double hi, uint64_t seed,
                                    const char *file, int line) {
    return tc__rand(ctx, TC__OP_RAND_UNIFORM, ndim, shape, lo, hi, seed, file, line);
}

TCDEF tc_tensor *tc_rand_normal_at(tc_ctx *ctx, int ndim, const int64_t *shape, double mean, double std, uint64_t seed,
                                   const char *file, int line) {
    return tc__rand(ctx, TC__OP_RAND_NORMAL, ndim, shape, mean, std, seed, file, line);
}

TC__FN tc_result tc__run_from_data(tc__call *c, tc_tensor *out) {
    memcpy(tc__base(out), c->a.ptr, (size_t)tc__numel(out) * tc__dtype_sizes[out->dtype]);
    return TC_OK;
}

TCDEF tc_tensor *tc_from_data_at(tc_ctx *ctx, tc_dtype dt, int ndim, const int64_t *shape, const void *data,
                                 const char *file, int line) {
    tc__call c;
    tc_tensor *e = tc__create(ctx, TC__OP_FROM_DATA, dt, ndim, shape, file, line, &c);
    if (e) return e;
    if (!data) {
        tc__msg(&c, TC_ERR_NULL, "data is NULL");
        return tc__fail(&c, TC_ERR_NULL);
    }
    c.a.ptr = (void *)data;
    return tc__run(&c);
}

/* Strides for wrap live in a.i[TC_MAX_DIMS..2*TC_MAX_DIMS); has-strides flag
 * in a.i[TC__A_NDIM + 1]. */
TC__FN tc_result tc__shape_wrap(tc__call *c) {
    tc_result r = tc__shape_create(c);
    int i;
    if (r != TC_OK) return r;
    if (!c->a.ptr) return tc__msg(c, TC_ERR_NULL, "data is NULL");
    if (c->a.i[TC__A_NDIM + 1]) {
        /* the last element's byte offset must fit: the kernels compute it */
        int64_t last = 0, step;
        for (i = 0; i < c->ondim; i++) {
            if (c->a.i[TC_MAX_DIMS + i] < 0)
                return tc__msg(c, TC_ERR_INVALID_ARG, "negative stride %lld in dim %d", (long long)c->a.i[TC_MAX_DIMS + i], i);
            c->ostrides[i] = c->a.i[TC_MAX_DIMS + i];
            if (c->oshape[i] == 0) last = -1; /* empty: nothing is read */
            if (last < 0) continue;
            if (tc__mul_ov(c->oshape[i] - 1, c->ostrides[i], &step) || step > INT64_MAX - 1 - last)
                return tc__msg(c, TC_ERR_OVERFLOW, "strides reach past the addressable range (dim %d)", i);
            last += step;
        }
        if (last >= 0 && tc__mul_ov(last + 1, (int64_t)tc__dtype_sizes[c->odt], &step))
            return tc__msg(c, TC_ERR_OVERFLOW, "strides reach past the addressable range");
    } else tc__contig_strides(c->ondim, c->oshape, c->ostrides);
    c->is_view = 1;
    return TC_OK;
}

TCDEF tc_tensor *tc_wrap_at(tc_ctx *ctx, tc_dtype dt, int ndim, const int64_t *shape, const int64_t *strides, void *data,
                            const char *file, int line) {
    tc__call c;
    int i;
    tc_tensor *e = tc__create(ctx, TC__OP_WRAP, dt, ndim, shape, file, line, &c);
    if (e) return e;
    c.a.ptr = data;
    if (strides) {
        c.a.i[TC__A_NDIM + 1] = 1;
        for (i = 0; i < ndim; i++) c.a.i[TC_MAX_DIMS + i] = strides[i];
    }
    return tc__run(&c);
}

/* ---- views ------------------------------------------------------------------- */

TC__FN void tc__view_init(tc__call *c) {
    const tc_tensor *x = c->ins[0];
    c->odt = x->dtype;
    c->ondim = x->ndim;
    memcpy(c->oshape, x->shape, sizeof x->shape);
    memcpy(c->ostrides, x->strides, sizeof x->strides);
    c->ooffset = x->offset;
    c->is_view = 1;
}

/* Strides for `shape` over x's memory without copying, or -1 (torch's
 * computeStride: each run of merged input dims must split evenly). */
TC__FN int tc__view_strides(const tc_tensor *x, int ndim, const int64_t *shape, int64_t *strides) {
    int64_t numel = tc__numel(x);
    int view_d = ndim - 1, tensor_d;
    int64_t chunk_base_stride, tensor_numel = 1, view_numel = 1;
    if (numel == 0 || x->ndim == 0) {
        tc__contig_strides(ndim, shape, strides);
        return 0;
    }
    chunk_base_stride = x->strides[x->ndim - 1];
    for (tensor_d = x->ndim - 1; tensor_d >= 0; tensor_d--) {
        tensor_numel *= x->shape[tensor_d];
        if (tensor_d == 0 ||
            (x->shape[tensor_d - 1] != 1 && x->strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
            while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
                strides[view_d] = view_numel * chunk_base_stride;
                view_numel *= shape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return -1;
            if (tensor_d > 0) {
                chunk_base_stride = x->strides[tensor_d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1 ? 0 : -1;
}

/* reshape: target shape in a.i, ndim at TC__A_NDIM.  Resolves -1; when the
 * strides cannot express it the front end copies first. */
TC__FN tc_result tc__resolve_shape(tc__call *c, const tc_tensor *x, int64_t *shape, int *ndim_out) {
    int ndim = (int)c->a.i[TC__A_NDIM], i, infer = -1;
    int64_t known = 1, numel = tc__numel(x);
    char b1[96], b2[96];
    for (i = 0; i < ndim; i++) {
        shape[i] = c->a.i[i];
        if (shape[i] == -1) {
            if (infer >= 0) return tc__msg(c, TC_ERR_INVALID_ARG, "only one dimension can be -1");
            infer = i;
        } else if (shape[i] < 0) {
            return tc__msg(c, TC_ERR_INVALID_ARG, "invalid size %lld in dim %d", (long long)shape[i], i);
        } else if (tc__mul_ov(known, shape[i], &known)) {
            return tc__msg(c, TC_ERR_OVERFLOW, "the product of the sizes overflows");
        }
    }
    if (infer >= 0) {
        if (known == 0 || numel % known != 0)
            return tc__msg(c, TC_ERR_SHAPE, "cannot reshape %s (%lld elements) to %s",
                           tc__shape_str(x->ndim, x->shape, b1, sizeof b1), (long long)numel,
                           tc__shape_str(ndim, shape, b2, sizeof b2));
        shape[infer] = numel / known;
    } else if (known != numel) {
        return tc__msg(c, TC_ERR_SHAPE, "cannot reshape %s (%lld elements) to %s",
                       tc__shape_str(x->ndim, x->shape, b1, sizeof b1), (long long)numel,
                       tc__shape_str(ndim, shape, b2, sizeof b2));
    }
    /* an empty x fits any shape with a 0: the others' strides must not overflow */
    if (tc__numel_of(ndim, shape) < 0) return tc__msg(c, TC_ERR_OVERFLOW, "the strides of the sizes overflow");
    *ndim_out = ndim;
    return TC_OK;
}

TC__FN tc_result tc__shape_reshape(tc__call *c) {
    const tc_tensor *x = c->ins[0];
    int ndim = 0;
    tc_result r;
    tc__view_init(c);
    r = tc__resolve_shape(c, x, c->oshape, &ndim);
    if (r != TC_OK) return r;
    c->ondim = ndim;
    if (tc__view_strides(x, ndim, c->oshape, c->ostrides) != 0)
        return tc__msg(c, TC_ERR_UNSUPPORTED, "strides cannot express the new shape (copy first)");
    return TC_OK;
}

TC__FN tc_result tc__shape_permute(tc__call *c) {
    const tc_tensor *x = c->ins[0];
    int seen[TC_MAX_DIMS] = {0}, i;
    tc__view_init(c);
    for (i = 0; i < x->ndim; i++) {
        int p = tc__axis((int)c->a.i[i], x->ndim);
        if (p < 0) return tc__bad_axis(c, (int)c->a.i[i], x->ndim);
        if (seen[p]++) return tc__msg(c, TC_ERR_AXIS, "dim %d repeated in the permutation", p);
        c->oshape[i] = x->shape[p];
        c->ostrides[i] = x->strides[p];
    }
    return TC_OK;
}

/* slice: a.i = {dim, start, end, step} */
TC__FN tc_result tc__shape_slice(tc__call *c) {
    const tc_tensor *x = c->ins[0];
    int d = tc__axis((int)c->a.i[0], x->ndim);
    int64_t start = c->a.i[1], end = c->a.i[2], step = c->a.i[3], n;
    tc__view_init(c);
    if (x->ndim == 0) return tc__msg(c, TC_ERR_AXIS, "cannot slice a 0-d tensor");
    if (d < 0) return tc__bad_axis(c, (int)c->a.i[0], x->ndim);
    if (step <= 0) return tc__msg(c, TC_ERR_INVALID_ARG, "step must be positive (got %lld)", (long long)step);
    n = x->shape[d];
    if (start < 0) start += n;
    if (end < 0) end += n;
    start = start < 0 ? 0 : start > n ? n : start;
    end = end < start ? start : end > n ? n : end;
    c->oshape[d] = end > start ? (end - start - 1) / step + 1 : 0;
    /* with one element or none the stride is unused; avoids stride * huge step */
    c->ostrides[d] = c->oshape[d] > 1 ? x->strides[d] * step : x->strides[d];
    c->ooffset = x->offset + start * x->strides[d];
    return TC_OK;
}

TC__FN tc_result tc__shape_select(tc__call *c) {
    const tc_tensor *x = c->ins[0];
    int d = tc__axis((int)c->a.i[0], x->ndim), i;
    int64_t idx = c->a.i[1];
    tc__view_init(c);
    if (x->ndim == 0) return tc__msg(c, TC_ERR_AXIS, "cannot select from a 0-d tensor");
    if (d < 0) return tc__bad_axis(c, (int)c->a.i[0], x->ndim);
    if (idx < -x->shape[d] || idx >= x->shape[d])
        return tc__msg(c, TC_ERR_INDEX, "index %lld out of range for dim %d of size %lld", (long long)idx, d,
                       (long long)x->shape[d]);
    if (idx < 0) idx += x->shape[d];
    c->ooffset = x->offset + idx * x->strides[d];
    for (i = d; i < x->ndim - 1; i++) {
        c->oshape[i] = x->shape[i + 1];
        c->ostrides[i] = x->strides[i + 1];
    }
    c->ondim = x->ndim - 1;
    return TC_OK;
}

TC__FN tc_result tc__shape_expand(tc__call *c) {
    const tc_tensor *x = c->ins[0];
    int ndim = (int)c->a.i[TC__A_NDIM], i, lead = ndim - x->ndim;
    char b1[96], b2[96];
    tc__view_init(c);
    if (lead < 0)
        return tc__msg(c, TC_ERR_SHAPE, "cannot expand %s to fewer dims (%d)", tc__shp(x).s, ndim);
    for (i = 0; i < ndim; i++) {
        int64_t want = c->a.i[i], have = i >= lead ? x->shape[i - lead] : 1;
        int64_t st = i >= lead ? x->strides[i - lead] : 0;
        if (want == -1) {
            if (i < lead) return tc__msg(c, TC_ERR_SHAPE, "-1 not allowed for a new leading dim %d", i);
            want = have;
        }
        if (want < 0) return tc__msg(c, TC_ERR_INVALID_ARG, "invalid size %lld in dim %d", (long long)want, i);
        if (have != want && have != 1)
            return tc__msg(c, TC_ERR_SHAPE, "cannot expand %s to %s (dim %d: %lld vs %lld)",
                           tc__shape_str(x->ndim, x->shape, b1, sizeof b1),
                           tc__shape_str(ndim, c->a.i, b2, sizeof b2), i, (long long)have, (long long)want);
        c->oshape[i] = want;
        c->ostrides[i] = have == want ? st : 0;
    }
    c->ondim = ndim;
    if (tc__numel_of(ndim, c->oshape) < 0) return tc__msg(c, TC_ERR_OVERFLOW, "the product of the sizes overflows");
    return TC_OK;
}

/* squeeze: a.i[0] = dim, a.i[1] = 1 for "all size-1 dims" */
TC__FN tc_result tc__shape_squeeze(tc__call *c) {
    const tc_tensor *x = c->ins[0];
    int i, n = 0, d = -1;
    tc__view_init(c);
    if (!c->a.i[1]) {
        d = tc__axis((int)c->a.i[0], x->ndim);
        if (d < 0) return tc__bad_axis(c, (int)c->a.i[0], x->ndim);
    }
    for (i = 0; i < x->ndim; i++) {
        int drop = x->shape[i] == 1 && (c->a.i[1] || i == d);
        if (drop) continue;
        c->oshape[n] = x->shape[i];
        c->ostrides[n] = x->strides[i];
        n++;
    }
    c->ondim = n;
    return TC_OK;
}

TC__FN tc_result tc__shape_unsqueeze(tc__call *c) {
    const tc_tensor *x = c->ins[0];
    int d = (int)c->a.i[0], i;
    tc__view_init(c);
    if (x->ndim >= TC_MAX_DIMS) return tc__msg(c, TC_ERR_SHAPE, "already %d dims", TC_MAX_DIMS);
    if (d < -(x->ndim + 1) || d > x->ndim) return tc__bad_axis(c, d, x->ndim + 1);
    if (d < 0) d += x->ndim + 1;
    for (i = x->ndim; i > d; i--) {
        c->oshape[i] = x->shape[i - 1];
        c->ostrides[i] = x->strides[i - 1];
    }
    c->oshape[d] = 1;
    c->ostrides[d] = d < x->ndim ? x->strides[d] * x->shape[d] : 1;
    c->ondim = x->ndim + 1;
    return TC_OK;
}

/* A call with one tensor input (the common case of the front ends). */
TC__FN void tc__unary_call(tc_ctx *ctx, tc__op op, tc_tensor *x, const char *file, int line, tc__call *c) {
    tc__call_init(c, ctx, op, file, line);
    c->nin = 1;
    c->in[0] = x;
}

/* A contiguous copy of x through the dispatcher, as the op `name` (NULL:
 * clone): the library's own copies, rather than its public entry points. */
TC__FN tc_tensor *tc__clone(tc_ctx *ctx, tc_tensor *x, const char *name, const char *file, int line) {
    tc__call c;
    tc__unary_call(ctx, TC__OP_CLONE, x, file, line, &c);
    if (name) c.name = name;
    return tc__run(&c);
}

TC__FN tc_tensor *tc__reshape(tc_ctx *ctx, tc_tensor *x, int ndim, const int64_t *shape, const char *name,
                              const char *file, int line) {
    tc__call c;
    tc_result r;
    tc_tensor *out;
    tc__unary_call(ctx, TC__OP_RESHAPE, x, file, line, &c);
    c.name = name;
    if (!ctx) return &tc__sentinel_null_ctx;
    r = tc__set_shape_attr(&c, ndim, shape);
    if (r != TC_OK) return tc__fail(&c, r);
    if (x && x->status == TC_OK && x->ctx == ctx) {
        int64_t tmp[TC_MAX_DIMS], st[TC_MAX_DIMS];
        int nd = 0;
        if (tc__resolve_shape(&c, x, tmp, &nd) == TC_OK && tc__view_strides(x, nd, tmp, st) != 0) {
            /* torch.reshape: copy when no view exists */
            tc_tensor *xc = tc__clone(ctx, x, "contiguous", file, line);
            c.in[0] = xc;
            out = tc__run(&c);
            tc_free(xc);  /* the view holds the storage */
            return out;
        }
    }
    return tc__run(&c);
}

TCDEF tc_tensor *tc_reshape_at(tc_ctx *ctx, tc_tensor *x, int ndim, const int64_t *shape, const char *file, int line) {
    return tc__reshape(ctx, x, ndim, shape, NULL, file, line);
}

TCDEF tc_tensor *tc_permute_at(tc_ctx *ctx, tc_tensor *x, const int *perm, const char *file, int line) {
    tc__call c;
    int i;
    tc__unary_call(ctx, TC__OP_PERMUTE, x, file, line, &c);
    if (!ctx) return &tc__sentinel_null_ctx;
    if (x && x->ndim > 0 && !perm) {
        tc__msg(&c, TC_ERR_NULL, "perm is NULL");
        return tc__fail(&c, TC_ERR_NULL);
    }
    for (i = 0; x && i < x->ndim; i++) c.a.i[i] = perm[i];
    return tc__run(&c);
}

TCDEF tc_tensor *tc_transpose_at(tc_ctx *ctx, tc_tensor *x, int dim0, int dim1, const char *file, int line) {
    tc__call c;
    int i, nd = x ? x->ndim : 0, d0 = tc__axis(dim0, nd), d1 = tc__axis(dim1, nd);
    tc__unary_call(ctx, TC__OP_PERMUTE, x, file, line, &c);
    c.name = "transpose";
    if (!ctx) return &tc__sentinel_null_ctx;
    if (x && x->status == TC_OK && (d0 < 0 || d1 < 0)) {
        tc__bad_axis(&c, d0 < 0 ? dim0 : dim1, nd);
        return tc__fail(&c, TC_ERR_AXIS);
    }
    for (i = 0; i < nd; i++) c.a.i[i] = i;
    if (nd > 0) {
        c.a.i[d0] = d1;
        c.a.i[d1] = d0;
    }
    return tc__run(&c);
}

TC__FN tc_tensor *tc__slice(tc_ctx *ctx, tc_tensor *x, int dim, int64_t start, int64_t end, int64_t step,
                            const char *file, int line) {
    tc__call c;
    tc__unary_call(ctx, TC__OP_SLICE, x, file, line, &c);
    c.a.i[0] = dim;
    c.a.i[1] = start;
    c.a.i[2] = end;
    c.a.i[3] = step;
    return tc__run(&c);
}

TCDEF tc_tensor *tc_slice_at(tc_ctx *ctx, tc_tensor *x, int dim, int64_t start, int64_t end, int64_t step,
                             const char *file, int line) {
    return tc__slice(ctx, x, dim, start, end, step, file, line);
}

TCDEF tc_tensor *tc_select_at(tc_ctx *ctx, tc_tensor *x, int dim, int64_t index, const char *file, int line) {
    tc__call c;
    tc__unary_call(ctx, TC__OP_SELECT, x, file, line, &c);
    c.a.i[0] = dim;
    c.a.i[1] = index;
    return tc__run(&c);
}

TCDEF tc_tensor *tc_expand_at(tc_ctx *ctx, tc_tensor *x, int ndim, const int64_t *shape, const char *file, int line) {
    tc__call c;
    tc_result r;
    tc__unary_call(ctx, TC__OP_EXPAND, x, file, line, &c);
    if (!ctx) return &tc__sentinel_null_ctx;
    r = tc__set_shape_attr(&c, ndim, shape);
    if (r != TC_OK) return tc__fail(&c, r);
    return tc__run(&c);
}

TCDEF tc_tensor *tc_squeeze_at(tc_ctx *ctx, tc_tensor *x, int dim, const char *file, int line) {
    tc__call c;
    tc__unary_call(ctx, TC__OP_SQUEEZE, x, file, line, &c);
    c.a.i[0] = dim;
    return tc__run(&c);
}

TCDEF tc_tensor *tc_squeeze_all_at(tc_ctx *ctx, tc_tensor *x, const char *file, int line) {
    tc__call c;
    tc__unary_call(ctx, TC__OP_SQUEEZE, x, file, line, &c);
    c.name = "squeeze_all";
    c.a.i[1] = 1;
    return tc__run(&c);
}

TCDEF tc_tensor *tc_unsqueeze_at(tc_ctx *ctx, tc_tensor *x, int dim, const char *file, int line) {
    tc__call c;
    tc__unary_call(ctx, TC__OP_UNSQUEEZE, x, file, line, &c);
    c.a.i[0] = dim;
    return tc__run(&c);
}

TCDEF tc_tensor *tc_flatten_at(tc_ctx *ctx, tc_tensor *x, int start_dim, int end_dim, const char *file, int line) {
    tc__call c;
    int nd, s, e, i, n = 0;
    int64_t shape[TC_MAX_DIMS], m = 1;
    tc__unary_call(ctx, TC__OP_RESHAPE, x, file, line, &c);
    c.name = "flatten";
    if (!ctx) return &tc__sentinel_null_ctx;
    if (!x || x->status != TC_OK) return tc__run(&c);
    nd = x->ndim;
    if (nd == 0) {
        shape[0] = 1;
        return tc__reshape(ctx, x, 1, shape, "flatten", file, line);
    }
    s = tc__axis(start_dim, nd);
    e = tc__axis(end_dim, nd);
    if (s < 0 || e < 0 || s > e) {
        tc__msg(&c, TC_ERR_AXIS, "bad flatten range [%d, %d] for a %d-d tensor", start_dim, end_dim, nd);
        return tc__fail(&c, TC_ERR_AXIS);
    }
    for (i = 0; i < s; i++) shape[n++] = x->shape[i];
    for (i = s; i <= e; i++) m *= x->shape[i];
    shape[n++] = m;
    for (i = e + 1; i < nd; i++) shape[n++] = x->shape[i];
    return tc__reshape(ctx, x, n, shape, "flatten", file, line);
}
