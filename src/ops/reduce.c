/* Reductions (sum, mean, max, min, argmax, var over any axis set) and row
 * ops (softmax, log_softmax, layer_norm, rms_norm).  Both bring the reduced
 * axes innermost and contiguous (a copy only when the layout needs it) and
 * then work on rows; a single long row is split across threads. */

/* Reduction axes live in a.i[0..TC_MAX_DIMS) as a 0/1 mask per input dim;
 * a.i[TC_MAX_DIMS] = keepdim, a.i[TC_MAX_DIMS + 1] = correction (var). */
#define TC__REDUCE_CHUNK 65536
#define TC__A_KEEP TC_MAX_DIMS
#define TC__A_CORR (TC_MAX_DIMS + 1)

TC__FN tc_result tc__shape_reduce(tc__call *c) {
    const tc_tensor *x = c->ins[0];
    int d, n = 0, keep = (int)c->a.i[TC__A_KEEP];
    int64_t rcount = 1, ocount = 1;
    for (d = 0; d < x->ndim; d++) {
        if (c->a.i[d]) {
            rcount *= x->shape[d];
            if (!keep) continue;
            c->oshape[n++] = 1;
        } else {
            ocount *= x->shape[d];
            c->oshape[n++] = x->shape[d];
        }
    }
    c->ondim = n;
    switch (c->op) {
    case TC__OP_SUM: c->odt = tc__is_float(x->dtype) ? x->dtype : TC_I32; break;
    case TC__OP_MEAN:
    case TC__OP_VAR: c->odt = tc__is_float(x->dtype) ? x->dtype : TC_F32; break;
    case TC__OP_ARGMAX: c->odt = TC_I32; break;
    default: c->odt = x->dtype; break;
    }
    if (rcount == 0 && ocount > 0 && (c->op == TC__OP_MAX || c->op == TC__OP_MIN || c->op == TC__OP_ARGMAX))
        return tc__msg(c, TC_ERR_SHAPE, "cannot reduce over an empty dimension of %s (no identity)", tc__shp(x).s);
    return TC_OK;
}

/* Parses (naxes, axes) into the mask; naxes == 0 or axes == NULL = all. */
TC__FN tc_result tc__reduce_axes(tc__call *c, const tc_tensor *x, int naxes, const int *axes) {
    int i;
    if (naxes < 0) return tc__msg(c, TC_ERR_INVALID_ARG, "naxes %d is negative", naxes);
    if (naxes == 0 || !axes) {
        for (i = 0; i < x->ndim; i++) c->a.i[i] = 1;
        return TC_OK;
    }
    for (i = 0; i < naxes; i++) {
        int d = x->ndim == 0 ? (axes[i] == 0 || axes[i] == -1 ? 0 : -1) : tc__axis(axes[i], x->ndim);
        if (d < 0) return tc__bad_axis(c, axes[i], x->ndim);
        if (x->ndim == 0) continue;
        if (c->a.i[d]) return tc__msg(c, TC_ERR_AXIS, "dim %d appears more than once", d);
        c->a.i[d] = 1;
    }
    return TC_OK;
}

/* The input as contiguous rows [outer, R] of dtype ct, reduced axes last. */
TC__FN char *tc__reduce_rows(tc_ctx *ctx, const tc_tensor *x, const int64_t *mask, tc_dtype ct, int64_t *rlen,
                             void **owned) {
    int64_t shape[TC_MAX_DIMS] = {0}, st[TC_MAX_DIMS] = {0}, cst[TC_MAX_DIMS], r = 1;
    int d, n = 0, ok = 1;
    char *buf;
    for (d = 0; d < x->ndim; d++)
        if (!mask[d]) {
            shape[n] = x->shape[d];
            st[n++] = x->strides[d];
        }
    for (d = 0; d < x->ndim; d++)
        if (mask[d]) {
            shape[n] = x->shape[d];
            st[n++] = x->strides[d];
            r *= x->shape[d];
        }
    *rlen = r;
    *owned = NULL;
    tc__contig_strides(n, shape, cst);
    for (d = 0; d < n; d++)
        if (shape[d] != 1 && st[d] != cst[d]) ok = 0;
    if (ok && x->dtype == ct) return tc__base(x);
    buf = (char *)tc__scratch_get(ctx, (size_t)tc__numel(x) * tc__dtype_sizes[ct]);
    if (!buf) return NULL;
    *owned = buf;
    tc__copy_into(ctx, buf, ct, n, shape, cst, tc__base(x), x->dtype, n, shape, st);
    return buf;
}

/* Floats a block of tc__sum_f32 / tc__sqdev_f32 sums in float lanes
 * before adding the block in double: 32 a lane.  Blocks of 1024 (128 a
 * lane) put a layer_norm of 1100 values near 3167 (spread 3) 9e-4 from a
 * double reference, against 3e-4 for the compiled kernel (fuzz seed
 * 33450); a lane's rounding grows with the sum it holds. */
#define TC__SUM_BLOCK 256

/* Sum of n floats: f32 lanes within blocks (vectorisable), blocks in double. */
TC__FN double tc__sum_f32(const float *x, int64_t n) {
    double total = 0.0;
    int64_t i = 0;
    while (i < n) {
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t e = i + TC__SUM_BLOCK < n ? i + TC__SUM_BLOCK : n, j;
        for (; i + 8 <= e; i += 8)
            for (j = 0; j < 8; j++) acc[j] += x[i + j];
        for (; i < e; i++) acc[0] += x[i];
        total += (double)((acc[0] + acc[4]) + (acc[1] + acc[5])) + (double)((acc[2] + acc[6]) + (acc[3] + acc[7]));
    }
    return total;
}

TC__FN double tc__sqdev_f32(const float *x, int64_t n, float mean) {
    double total = 0.0;
    int64_t i = 0;
    while (i < n) {
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t e = i + TC__SUM_BLOCK < n ? i + TC__SUM_BLOCK : n, j;
        for (; i + 8 <= e; i += 8)
            for (j = 0; j < 8; j++) {
                float d = x[i + j] - mean;
                acc[j] += d * d;
            }
        for (; i < e; i++) {
            float d = x[i] - mean;
            acc[0] += d * d;
        }
        total += (double)((acc[0] + acc[4]) + (acc[1] + acc[5])) + (double)((acc[2] + acc[6]) + (acc[3] + acc[7]));
    }
    return total;
}

/* max (is_max) or min with NaN propagation */
TC__FN float tc__minmax_f32(const float *x, int64_t n, int is_max) {
    float m = x[0];
    int nan = 0;
    int64_t i;
    if (is_max)
        for (i = 0; i < n; i++) {
            m = x[i] > m ? x[i] : m;
            nan |= x[i] != x[i];
        }
    else
        for (i = 0; i < n; i++) {
            m = x[i] < m ? x[i] : m;
            nan |= x[i] != x[i];
        }
    return nan ? NAN : m;
}

typedef struct tc__reduce_job {
    tc__op op;
    tc_dtype ct;
    const char *rows;
    int64_t rlen, nrows;
    int64_t chunks;        /* > 1: one row split into chunks (partials) */
    double *res;           /* per row result, or per chunk partial      */
    int64_t *ires;         /* argmax index / integer results            */
    int correction;
} tc__reduce_job;

/* Reduces x[0..n) of one row (or chunk) into *res / *ires. */
TC__FN void tc__reduce_span(const tc__reduce_job *j, const char *p, int64_t n, double *res, int64_t *ires) {
    int64_t i;
    if (j->ct == TC_I32) {
        const int32_t *x = (const int32_t *)p;
        int64_t acc = 0;
        if (j->op == TC__OP_SUM) {
            for (i = 0; i < n; i++) acc += x[i];
            *ires = acc;
        } else if (j->op == TC__OP_ARGMAX) {
            int64_t best = 0;
            for (i = 1; i < n; i++)
                if (x[i] > x[best]) best = i;
            *ires = best;
        } else {
            int32_t m = n > 0 ? x[0] : 0;
            for (i = 0; i < n; i++) m = j->op == TC__OP_MAX ? (x[i] > m ? x[i] : m) : (x[i] < m ? x[i] : m);
            *ires = m;
        }
        return;
    }
    {
        const float *x = (const float *)p;
        switch (j->op) {
        case TC__OP_SUM:
        case TC__OP_MEAN: *res = tc__sum_f32(x, n); break;
        case TC__OP_MAX:
        case TC__OP_MIN: *res = n > 0 ? tc__minmax_f32(x, n, j->op == TC__OP_MAX) : NAN; break;
        case TC__OP_ARGMAX: {
            int64_t best = 0;
            for (i = 0; i < n; i++) {
                if (x[i] != x[i]) {
                    best = i;
                    break;
                }
                if (x[i] > x[best]) best = i;
            }
            *ires = best;
            *res = n > 0 ? x[best] : NAN;
            break;
        }
        case TC__OP_VAR: {
            double mean = tc__sum_f32(x, n) / (double)n;
            double dof = (double)n - (double)j->correction;
            *res = tc__sqdev_f32(x, n, (float)mean) / (dof > 0 ? dof : 0.0);
            break;
        }
        default: break;
        }
    }
}

TC__FN void tc__reduce_rows_range(void *arg, int64_t b, int64_t e) {
    const tc__reduce_job *j = (const tc__reduce_job *)arg;
    size_t es = tc__dtype_sizes[j->ct];
    int64_t r;
    for (r = b; r < e; r++) {
        if (j->chunks > 1) {
            int64_t s = r * TC__REDUCE_CHUNK, t = s + TC__REDUCE_CHUNK < j->rlen ? s + TC__REDUCE_CHUNK : j->rlen;
            tc__reduce_span(j, j->rows + (size_t)s * es, t - s, &j->res[r], &j->ires[r]);
            if (j->op == TC__OP_ARGMAX) j->ires[r] += s;
        } else {
            tc__reduce_span(j, j->rows + (size_t)(r * j->rlen) * es, j->rlen, &j->res[r], &j->ires[r]);
        }
    }
}

/* Combines chunk partials of one row (sum-like, min/max, argmax). */
TC__FN void tc__reduce_combine(tc__reduce_job *j) {
    int64_t k;
    double acc = j->res[0];
    int64_t iacc = j->ires[0];
    for (k = 1; k < j->chunks; k++) {
        double v = j->res[k];
        int64_t iv = j->ires[k];
        switch (j->op) {
        case TC__OP_SUM:
        case TC__OP_MEAN:
            if (j->ct == TC_I32) iacc = (int64_t)((uint64_t)iacc + (uint64_t)iv);
            else acc += v;
            break;
        case TC__OP_MAX:
            if (j->ct == TC_I32) iacc = iv > iacc ? iv : iacc;
            else acc = (v != v || acc != acc) ? NAN : (v > acc ? v : acc);
            break;
        case TC__OP_MIN:
            if (j->ct == TC_I32) iacc = iv < iacc ? iv : iacc;
            else acc = (v != v || acc != acc) ? NAN : (v < acc ? v : acc);
            break;
        case TC__OP_ARGMAX:
            if (j->ct == TC_I32) {
                const int32_t *x = (const int32_t *)j->rows;
                if (x[iv] > x[iacc]) iacc = iv;
            } else if (acc == acc && (v != v || v > acc)) {
                acc = v;
                iacc = iv;
            }
            break;
        default: break;
        }
    }
    j->res[0] = acc;
    j->ires[0] = iacc;
}

TC__FN tc_result tc__run_reduce(tc__call *c, tc_tensor *out) {
    const tc_tensor *x = c->ins[0];
    tc__reduce_job j;
    void *owned = NULL;
    int64_t r, nout = tc__numel(out), total = tc__numel(x);
    char *obase = tc__base(out);
    tc_result res = TC_OK;
    memset(&j, 0, sizeof j);
    j.op = c->op;
    j.correction = (int)c->a.i[TC__A_CORR];
    /* integers stay integers for sum/max/min/argmax; everything else in f32 */
    j.ct = (!tc__is_float(x->dtype) && c->op != TC__OP_MEAN && c->op != TC__OP_VAR) ? TC_I32 : TC_F32;
    j.rows = tc__reduce_rows(c->ctx, x, c->a.i, j.ct, &j.rlen, &owned);
    j.nrows = nout;
    /* one long row: split it into fixed-size chunks so threads can share it.
     * The chunk size does not depend on the thread count, so the result is
     * the same bits whatever the threads (var needs the mean first: whole). */
    j.chunks = (nout == 1 && j.rlen >= 2 * TC__REDUCE_CHUNK && c->op != TC__OP_VAR)
                   ? (j.rlen + TC__REDUCE_CHUNK - 1) / TC__REDUCE_CHUNK
                   : 1;
    j.res = (double *)tc__scratch_get(c->ctx, sizeof(double) * (size_t)(j.chunks > 1 ? j.chunks : nout));
    j.ires = (int64_t *)tc__scratch_get(c->ctx, sizeof(int64_t) * (size_t)(j.chunks > 1 ? j.chunks : nout));
    if (!j.rows || !j.res || !j.ires) res = tc__msg(c, TC_ERR_OOM, "out of memory");
    else {
        size_t nres = (size_t)(j.chunks > 1 ? j.chunks : nout);
        memset(j.res, 0, sizeof(double) * nres);
        memset(j.ires, 0, sizeof(int64_t) * nres);
        if (j.chunks > 1) {
            tc__parallel_for(c->ctx, j.chunks, total, tc__reduce_rows_range, &j);
            tc__reduce_combine(&j);
        } else {
            tc__parallel_for(c->ctx, nout, total, tc__reduce_rows_range, &j);
        }
        for (r = 0; r < nout; r++) {
            double v;
            if (c->op == TC__OP_ARGMAX) v = (double)j.ires[r];
            else if (j.ct == TC_I32) v = (double)(int32_t)(uint32_t)(uint64_t)j.ires[r];
            else if (c->op == TC__OP_MEAN) v = j.res[r] / (double)j.rlen;
            else v = j.res[r];
            tc__store(obase, out->dtype, r, v);
        }
    }
    tc__scratch_put(owned);
    tc__scratch_put(j.res);
    tc__scratch_put(j.ires);
    return res;
}

TC__FN tc_tensor *tc__reduce(tc_ctx *ctx, tc__op op, tc_tensor *x, int naxes, const int *axes, int keepdim, int corr,
                             const char *file, int line) {
    tc__call c;
    tc_result r;
    tc__unary_call(ctx, op, x, file, line, &c);
    if (!ctx) return &tc__sentinel_null_ctx;
    if (x && x->status == TC_OK) {
        r = tc__reduce_axes(&c, x, naxes, axes);
        if (r != TC_OK) return tc__fail(&c, r);
    }
    c.a.i[TC__A_KEEP] = keepdim != 0;
    c.a.i[TC__A_CORR] = corr;
    return tc__run(&c);
}

TCDEF tc_tensor *tc_sum_at(tc_ctx *ctx, tc_tensor *x, int naxes, const int *axes, int keepdim, const char *file, int line) {
    return tc__reduce(ctx, TC__OP_SUM, x, naxes, axes, keepdim, 0, file, line);
}
TCDEF tc_tensor *tc_mean_at(tc_ctx *ctx, tc_tensor *x, int naxes, const int *axes, int keepdim, const char *file, int line) {
    return tc__reduce(ctx, TC__OP_MEAN, x, naxes, axes, keepdim, 0, file, line);
}
TCDEF tc_tensor *tc_max_at(tc_ctx *ctx, tc_tensor *x, int naxes, const int *axes, int keepdim, const char *file, int line) {
    return tc__reduce(ctx, TC__OP_MAX, x, naxes, axes, keepdim, 0, file, line);
}
TCDEF tc_tensor *tc_min_at(tc_ctx *ctx, tc_tensor *x, int naxes, const int *axes, int keepdim, const char *file, int line) {
    return tc__reduce(ctx, TC__OP_MIN, x, naxes, axes, keepdim, 0, file, line);
}
TCDEF tc_tensor *tc_argmax_at(tc_ctx *ctx, tc_tensor *x, int naxes, const int *axes, int keepdim, const char *file,
                              int line) {
    return tc__reduce(ctx, TC__OP_ARGMAX, x, naxes, axes, keepdim, 0, file, line);
}
TCDEF tc_tensor *tc_var_at(tc_ctx *ctx, tc_tensor *x, int naxes, const int *axes, int correction, int keepdim,
                           const char *file, int line) {
    if (ctx && correction < 0) {
        tc__call c;
        tc__unary_call(ctx, TC__OP_VAR, x, file, line, &c);
        tc__msg(&c, TC_ERR_INVALID_ARG, "correction must be >= 0 (got %d)", correction);
        return tc__fail(&c, TC_ERR_INVALID_ARG);
    }
    return tc__reduce(ctx, TC__OP_VAR, x, naxes, axes, keepdim, correction, file, line);
}

/* ---- row ops: softmax, log_softmax, layer_norm, rms_norm ------------------------ */

/* softmax: a.i[0] = dim (normalised by the rule) */
TC__FN tc_result tc__shape_softmax(tc__call *c) {
    const tc_tensor *x = c->ins[0];
    int d = x->ndim == 0 ? (c->a.i[0] == 0 || c->a.i[0] == -1 ? 0 : -1) : tc__axis((int)c->a.i[0], x->ndim);
    if (d < 0) return tc__bad_axis(c, (int)c->a.i[0], x->ndim);
    tc__shape_same(c);
    if (!tc__is_float(x->dtype)) c->odt = TC_F32;
    c->a.i[1] = d;
    return TC_OK;
}

typedef struct tc__row_job {
    tc__op op;
    float *rows;             /* in/out, [nrows, rlen] contiguous        */
    int64_t rlen;
    const float *w, *b;      /* norms: weight/bias (NULL = none)        */
    float eps;
} tc__row_job;

TC__FN void tc__softmax_row(float *x, int64_t n, int logsm) {
    float m = tc__minmax_f32(x, n, 1);
    int64_t i;
    double s;
    if (logsm) {
        float ls;
        for (i = 0, s = 0; i < n; i++) s += expf(x[i] - m);
        /* (x - max) - log(sum), as PyTorch: x - (max + log(sum)) rounds the
         * log into max first, all of it lost where max is large */
        ls = (float)log(s);
        for (i = 0; i < n; i++) x[i] = (x[i] - m) - ls;
        return;
    }
    for (i = 0; i < n; i++) x[i] = expf(x[i] - m);
    s = tc__sum_f32(x, n);
    {
        float inv = (float)(1.0 / s);
        for (i = 0; i < n; i++) x[i] *= inv;
    }
}

TC__FN void tc__norm_row(const tc__row_job *j, float *x) {
    int64_t i, n = j->rlen;
    float scale, shift = 0.0f;
    if (j->op == TC__OP_LAYER_NORM) {
        double mean = tc__sum_f32(x, n) / (double)n;
        double var = tc__sqdev_f32(x, n, (float)mean) / (double)n;
        if (!(var <= DBL_MAX)) { /* a square past FLT_MAX (|x - mean| over ~1.8e19): in double */
            var = 0.0;
            for (i = 0; i < n; i++) var += ((double)x[i] - (double)(float)mean) * ((double)x[i] - (double)(float)mean);
            var /= (double)n;
        }
        scale = (float)(1.0 / sqrt(var + j->eps));
        shift = (float)mean;
    } else {
        double ss = 0.0;
        for (i = 0; i < n; i++) ss += (double)x[i] * x[i];
        scale = (float)(1.0 / sqrt(ss / (double)n + j->eps));
    }
    for (i = 0; i < n; i++) x[i] = (x[i] - shift) * scale;
    if (j->w)
        for (i = 0; i < n; i++) x[i] *= j->w[i];
    if (j->b)
        for (i = 0; i < n; i++) x[i] += j->b[i];
}

TC__FN void tc__rows_range(void *arg, int64_t b, int64_t e) {
    const tc__row_job *j = (const tc__row_job *)arg;
    int64_t r;
    for (r = b; r < e; r++) {
        float *x = j->rows + r * j->rlen;
        if (j->op == TC__OP_SOFTMAX || j->op == TC__OP_LOG_SOFTMAX)
            tc__softmax_row(x, j->rlen, j->op == TC__OP_LOG_SOFTMAX);
        else tc__norm_row(j, x);
    }
}

/* Runs the row job over x with dim `dim` moved last, writing `out`.  The rows
 * are computed in a contiguous f32 buffer: `out` itself when its layout and
 * dtype allow, else scratch copied back through the inverse permutation. */
TC__FN tc_result tc__run_rows(tc__call *c, tc_tensor *out, int dim, tc__row_job *j) {
    const tc_tensor *x = c->ins[0];
    int64_t shape[TC_MAX_DIMS] = {0}, xst[TC_MAX_DIMS] = {0}, ost[TC_MAX_DIMS] = {0}, cst[TC_MAX_DIMS];
    int d, n = 0, nd = x->ndim;
    float *buf;
    int direct = out->dtype == TC_F32 && (nd == 0 || dim == nd - 1);
    for (d = 0; d < nd; d++)
        if (d != dim) {
            shape[n] = x->shape[d];
            xst[n] = x->strides[d];
            ost[n++] = out->strides[d];
        }
    if (nd > 0) {
        shape[n] = x->shape[dim];
        xst[n] = x->strides[dim];
        ost[n++] = out->strides[dim];
    }
    tc__contig_strides(n, shape, cst);
    buf = direct ? (float *)tc__base(out) : (float *)tc__scratch_get(c->ctx, (size_t)tc__numel(x) * sizeof(float));
    if (!buf) return tc__msg(c, TC_ERR_OOM, "out of memory");
    tc__copy_into(c->ctx, (char *)buf, TC_F32, n, shape, cst, tc__base(x), x->dtype, n, shape, xst);
    j->rows = buf;
    j->rlen = nd > 0 ? x->shape[dim] : 1;
    if (j->rlen > 0) tc__parallel_for(c->ctx, tc__numel(x) / j->rlen, tc__numel(x) * 4, tc__rows_range, j);
    if (!direct) {
        tc__copy_into(c->ctx, tc__base(out), out->dtype, n, shape, ost, (const char *)buf, TC_F32, n, shape, cst);
        tc__scratch_put(buf);
    }
    return TC_OK;
}

TC__FN tc_result tc__run_softmax(tc__call *c, tc_tensor *out) {
    tc__row_job j;
    memset(&j, 0, sizeof j);
    j.op = c->op;
    return tc__run_rows(c, out, (int)c->a.i[1], &j);
}

TC__FN tc_tensor *tc__softmax(tc_ctx *ctx, tc__op op, tc_tensor *x, int dim, const char *file, int line) {
    tc__call c;
    tc__unary_call(ctx, op, x, file, line, &c);
    c.a.i[0] = dim;
    return tc__run(&c);
}

TCDEF tc_tensor *tc_softmax_at(tc_ctx *ctx, tc_tensor *x, int dim, const char *file, int line) {
    return tc__softmax(ctx, TC__OP_SOFTMAX, x, dim, file, line);
}
TCDEF tc_tensor *tc_log_softmax_at(tc_ctx *ctx, tc_tensor *x, int dim, const char *file, int line) {
    return tc__softmax(ctx, TC__OP_LOG_SOFTMAX, x, dim, file, line);
}

/* norms: ins = {x, weight?, bias?}; a.i[0] = nnorm; a.f[0] = eps.  The
 * normalised dims are flattened into one row by a reshape view or copy. */
TC__FN tc_result tc__shape_norm(tc__call *c) {
    const tc_tensor *x = c->ins[0];
    int k = (int)c->a.i[0], i, p;
    if (k < 1 || k > x->ndim)
        return tc__msg(c, TC_ERR_INVALID_ARG, "nnorm %d must be in [1, %d] for input %s", k, x->ndim, tc__shp(x).s);
    if (!tc__is_float(x->dtype)) return tc__msg(c, TC_ERR_DTYPE, "input must be a float type, got %s", tc__dtype_names[x->dtype]);
    for (p = 1; p < c->nin; p++) {
        const tc_tensor *w = c->ins[p];
        int bad = 0;
        if (!w) continue;
        if (w->ndim != k) bad = 1;
        for (i = 0; !bad && i < k; i++)
            if (w->shape[i] != x->shape[x->ndim - k + i]) bad = 1;
        if (bad)
            return tc__msg(c, TC_ERR_SHAPE, "%s %s does not match the normalised shape of input %s",
                           p == 1 ? "weight" : "bias", tc__shp(w).s, tc__shp(x).s);
        if (!tc__is_float(w->dtype)) return tc__msg(c, TC_ERR_DTYPE, "%s must be a float type", p == 1 ? "weight" : "bias");
    }
    if (!(c->a.f[0] >= 0.0)) return tc__msg(c, TC_ERR_INVALID_ARG, "eps must be >= 0 (got %g)", c->a.f[0]);
    tc__shape_same(c);
    return TC_OK;
}

TC__FN tc_result tc__run_norm(tc__call *c, tc_tensor *out) {
    const tc_tensor *x = c->ins[0];
    int k = (int)c->a.i[0], i;
    int64_t rlen = 1, rows, shape2[2], st2[2];
    void *xo = NULL, *wo = NULL, *bo = NULL;
    tc__row_job j;
    float *buf;
    tc_result r = TC_OK;
    for (i = x->ndim - k; i < x->ndim; i++) rlen *= x->shape[i];
    rows = rlen ? tc__numel(x) / rlen : 0;
    memset(&j, 0, sizeof j);
    j.op = c->op;
    j.eps = (float)c->a.f[0];
    j.rlen = rlen;
    buf = out->dtype == TC_F32 ? (float *)tc__base(out) : (float *)tc__scratch_get(c->ctx, (size_t)tc__numel(x) * 4);
    j.w = c->ins[1] ? (const float *)tc__contig_as(c->ctx, c->ins[1], TC_F32, &wo) : NULL;
    j.b = c->nin > 2 && c->ins[2] ? (const float *)tc__contig_as(c->ctx, c->ins[2], TC_F32, &bo) : NULL;
    if (!buf || (c->ins[1] && !j.w) || (c->nin > 2 && c->ins[2] && !j.b)) r = tc__msg(c, TC_ERR_OOM, "out of memory");
    else {
        int64_t cst[TC_MAX_DIMS];
        tc__contig_strides(x->ndim, x->shape, cst);
        tc__copy_into(c->ctx, (char *)buf, TC_F32, x->ndim, x->shape, cst, tc__base(x), x->dtype, x->ndim, x->shape,
                      x->strides);
        j.rows = buf;
        if (rlen > 0) tc__parallel_for(c->ctx, rows, tc__numel(x) * 4, tc__rows_range, &j);
        if ((char *)buf != tc__base(out)) {
            shape2[0] = rows;
            shape2[1] = rlen;
            st2[0] = rlen;
            st2[1] = 1;
            tc__copy_into(c->ctx, tc__base(out), out->dtype, 2, shape2, st2, (const char *)buf, TC_F32, 2, shape2, st2);
        }
    }
    if ((char *)buf != tc__base(out)) tc__scratch_put(buf);
    tc__scratch_put(xo);
    tc__scratch_put(wo);
    tc__scratch_put(bo);
    return r;
}

TCDEF tc_tensor *tc_layer_norm_at(tc_ctx *ctx, tc_tensor *x, int nnorm, tc_tensor *weight, tc_tensor *bias, double eps,
                                  const char *file, int line) {
    tc__call c;
    tc__unary_call(ctx, TC__OP_LAYER_NORM, x, file, line, &c);
    c.nin = 3;
    c.in[1] = weight;
    c.in[2] = bias;
    c.optional = 6;
    c.a.i[0] = nnorm;
    c.a.f[0] = eps;
    return tc__run(&c);
}

TCDEF tc_tensor *tc_rms_norm_at(tc_ctx *ctx, tc_tensor *x, int nnorm, tc_tensor *weight, double eps, const char *file,
                                int line) {
    tc__call c;
    tc__unary_call(ctx, TC__OP_RMS_NORM, x, file, line, &c);
    c.nin = 2;
    c.in[1] = weight;
    c.optional = 2;
    c.a.i[0] = nnorm;
    c.a.f[0] = eps;
    return tc__run(&c);
}
