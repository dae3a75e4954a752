/* Data movement: concat, split/chunk (views), constant pad, and the
 * indexing ops (embedding, index_select, gather) with range-checked indices. */

/* ---- concat --------------------------------------------------------------------------- */

TC__FN tc_result tc__shape_concat(tc__call *c) {
    const tc_tensor *x0 = c->ins[0];
    int i, d, dim = tc__axis((int)c->a.i[0], x0->ndim);
    int64_t total = 0;
    if (x0->ndim == 0) return tc__msg(c, TC_ERR_SHAPE, "cannot concatenate 0-d tensors");
    if (dim < 0) return tc__bad_axis(c, (int)c->a.i[0], x0->ndim);
    for (i = 0; i < c->nin; i++) {
        const tc_tensor *x = c->ins[i];
        if (x->ndim != x0->ndim)
            return tc__msg(c, TC_ERR_SHAPE, "tensor %d %s has a different rank than tensor 0 %s", i, tc__shp(x).s, tc__shp(x0).s);
        for (d = 0; d < x->ndim; d++)
            if (d != dim && x->shape[d] != x0->shape[d])
                return tc__msg(c, TC_ERR_SHAPE, "tensor %d %s differs from tensor 0 %s in dim %d", i, tc__shp(x).s,
                               tc__shp(x0).s, d);
        total += x->shape[dim];
    }
    tc__shape_same(c);
    c->oshape[dim] = total;
    c->odt = tc__promote(c->ins, c->nin);
    c->a.i[1] = dim;
    return TC_OK;
}

TC__FN tc_result tc__run_concat(tc__call *c, tc_tensor *out) {
    int i, dim = (int)c->a.i[1];
    int64_t at = 0;
    for (i = 0; i < c->nin; i++) {
        const tc_tensor *x = c->ins[i];
        char *dst = tc__base(out) + at * out->strides[dim] * (int64_t)tc__dtype_sizes[out->dtype];
        tc__copy_into(c->ctx, dst, out->dtype, x->ndim, x->shape, out->strides, tc__base(x), x->dtype, x->ndim, x->shape,
                      x->strides);
        at += x->shape[dim];
    }
    return TC_OK;
}

TCDEF tc_tensor *tc_concat_at(tc_ctx *ctx, int n, tc_tensor *const *xs, int dim, const char *file, int line) {
    tc__call c;
    tc__call_init(&c, ctx, TC__OP_CONCAT, file, line);
    if (!ctx) return &tc__sentinel_null_ctx;
    if (n < 1 || !xs) {
        tc__msg(&c, n < 1 ? TC_ERR_INVALID_ARG : TC_ERR_NULL, "need at least one tensor (got n=%d%s)", n, xs ? "" : ", NULL array");
        return tc__fail(&c, n < 1 ? TC_ERR_INVALID_ARG : TC_ERR_NULL);
    }
    c.nin = n;
    c.ins = xs;
    c.a.i[0] = dim;
    return tc__run(&c);
}

/* ---- split / chunk ----------------------------------------------------------------------- */

/* Every slot gets the errored tensor, so code that goes on to use the pieces
 * propagates the error like any other op would. */
TC__FN int tc__split_error(tc_tensor *e, tc_tensor **out, int max_out) {
    int i;
    for (i = 0; out && i < max_out; i++) out[i] = e;
    return -1;
}

/* Writes the pieces of x along dim with the given sizes; the first failure
 * ends it. */
TC__FN int tc__split_pieces(tc_ctx *ctx, tc_tensor *x, int dim, int n, const int64_t *sizes, tc_tensor **out, int max_out,
                            const char *file, int line) {
    int i;
    int64_t at = 0;
    for (i = 0; i < n; i++) {
        if (i < max_out) {
            out[i] = tc__slice(ctx, x, dim, at, at + sizes[i], 1, file, line);
            if (out[i]->status != TC_OK) return tc__split_error(out[i], out, max_out);
        }
        at += sizes[i];
    }
    return n;
}

/* Validates x and dim for split-like ops; returns the dim size or -1 with
 * out[0] set to an errored tensor. */
TC__FN int64_t tc__split_check(tc__call *c, tc_tensor *x, int dim, tc_tensor **out, int max_out) {
    tc_tensor *e = NULL;
    if (!c->ctx) e = &tc__sentinel_null_ctx;
    else if (!x) {
        tc__msg(c, TC_ERR_NULL, "input 0 is NULL");
        e = tc__fail(c, TC_ERR_NULL);
    } else if (x->status != TC_OK) e = tc__error_tensor(c->ctx, x->status, tc_error(x));
    else if (x->ndim == 0 || tc__axis(dim, x->ndim) < 0) {
        if (x->ndim == 0) tc__msg(c, TC_ERR_AXIS, "cannot split a 0-d tensor");
        else tc__bad_axis(c, dim, x->ndim);
        e = tc__fail(c, TC_ERR_AXIS);
    } else if (max_out > 0 && !out) {
        tc__msg(c, TC_ERR_NULL, "out is NULL");
        e = tc__fail(c, TC_ERR_NULL);
    }
    if (e) return tc__split_error(e, out, max_out);
    return x->shape[tc__axis(dim, x->ndim)];
}

TC__FN int tc__split_fail(tc__call *c, tc_result r, tc_tensor **out, int max_out) {
    return tc__split_error(tc__fail(c, r), out, max_out);
}

TCDEF int tc_split_sizes_at(tc_ctx *ctx, tc_tensor *x, int n, const int64_t *sizes, int dim, tc_tensor **out,
                            const char *file, int line) {
    tc__call c;
    int64_t len, sum = 0;
    int i;
    tc__call_init(&c, ctx, TC__OP_SLICE, file, line);
    c.name = "split_sizes";
    len = tc__split_check(&c, x, dim, out, n);
    if (len < 0) return -1;
    if (n < 1 || !sizes) return tc__split_fail(&c, tc__msg(&c, TC_ERR_INVALID_ARG, "need n >= 1 sizes"), out, n);
    for (i = 0; i < n; i++)
        if (sizes[i] < 0) return tc__split_fail(&c, tc__msg(&c, TC_ERR_INVALID_ARG, "negative split size %lld", (long long)sizes[i]), out, n);
    for (i = 0; i < n; i++) {
        if (sizes[i] > len - sum) break; /* too long already (and no overflow) */
        sum += sizes[i];
    }
    if (i < n)
        return tc__split_fail(&c, tc__msg(&c, TC_ERR_SHAPE, "split sizes exceed dim %d of size %lld", dim, (long long)len), out, n);
    if (sum != len)
        return tc__split_fail(&c, tc__msg(&c, TC_ERR_SHAPE, "split sizes add up to %lld, dim %d has %lld", (long long)sum, dim, (long long)len), out, n);
    return tc__split_pieces(ctx, x, dim, n, sizes, out, n, file, line);
}

/* Equal pieces of `size` (the last may be smaller); `count` forces the
 * number of pieces (torch.chunk on an empty dim). */
TC__FN int tc__split_even(tc_ctx *ctx, tc__call *c, tc_tensor *x, int dim, int64_t len, int64_t size, int64_t count,
                          tc_tensor **out, int max_out, const char *file, int line) {
    int64_t sizes_buf[64] = {0}, *sizes = sizes_buf, i;
    int r;
    if (count > INT_MAX) return tc__split_fail(c, tc__msg(c, TC_ERR_OVERFLOW, "too many pieces"), out, max_out);
    if (count > 64 && !(sizes = (int64_t *)tc__scratch_get(ctx, sizeof(int64_t) * (size_t)count)))
        return tc__split_fail(c, tc__msg(c, TC_ERR_OOM, "out of memory"), out, max_out);
    for (i = 0; i < count; i++) sizes[i] = len - i * size < size ? len - i * size : size;
    r = tc__split_pieces(ctx, x, dim, (int)count, sizes, out, max_out, file, line);
    if (sizes != sizes_buf) tc__scratch_put(sizes);
    return r;
}

TCDEF int tc_split_at(tc_ctx *ctx, tc_tensor *x, int64_t split_size, int dim, tc_tensor **out, int max_out,
                      const char *file, int line) {
    tc__call c;
    int64_t len;
    tc__call_init(&c, ctx, TC__OP_SLICE, file, line);
    c.name = "split";
    len = tc__split_check(&c, x, dim, out, max_out);
    if (len < 0) return -1;
    if (split_size < 0 || (split_size == 0 && len > 0))
        return tc__split_fail(&c, tc__msg(&c, TC_ERR_INVALID_ARG, "split_size must be positive (got %lld)", (long long)split_size), out, max_out);
    return tc__split_even(ctx, &c, x, dim, len, split_size, len == 0 ? 1 : (len - 1) / split_size + 1, out, max_out,
                          file, line);
}

TCDEF int tc_chunk_at(tc_ctx *ctx, tc_tensor *x, int chunks, int dim, tc_tensor **out, int max_out, const char *file,
                      int line) {
    tc__call c;
    int64_t len, size;
    tc__call_init(&c, ctx, TC__OP_SLICE, file, line);
    c.name = "chunk";
    len = tc__split_check(&c, x, dim, out, max_out);
    if (len < 0) return -1;
    if (chunks < 1) return tc__split_fail(&c, tc__msg(&c, TC_ERR_INVALID_ARG, "chunks must be >= 1 (got %d)", chunks), out, max_out);
    size = len == 0 ? 0 : (len - 1) / chunks + 1;
    return tc__split_even(ctx, &c, x, dim, len, size, size == 0 ? chunks : (len - 1) / size + 1, out, max_out, file,
                          line);
}

/* ---- pad ----------------------------------------------------------------------------------- */

/* a.i[0..2*ndim): (before, after) per dim in dim order; a.f[0] = value */
TC__FN tc_result tc__shape_pad(tc__call *c) {
    const tc_tensor *x = c->ins[0];
    int d;
    tc__shape_same(c);
    for (d = 0; d < x->ndim; d++) {
        int64_t s, lim = (int64_t)1 << 48;
        if (c->a.i[2 * d] > lim || c->a.i[2 * d] < -lim || c->a.i[2 * d + 1] > lim || c->a.i[2 * d + 1] < -lim)
            return tc__msg(c, TC_ERR_OVERFLOW, "padding (%lld, %lld) of dim %d is too large", (long long)c->a.i[2 * d],
                           (long long)c->a.i[2 * d + 1], d);
        s = x->shape[d] + c->a.i[2 * d] + c->a.i[2 * d + 1];
        if (s < 0)
            return tc__msg(c, TC_ERR_SHAPE, "padding (%lld, %lld) makes dim %d of %s negative", (long long)c->a.i[2 * d],
                           (long long)c->a.i[2 * d + 1], d, tc__shp(x).s);
        c->oshape[d] = s;
    }
    if (tc__numel_of(c->ondim, c->oshape) < 0) return tc__msg(c, TC_ERR_OVERFLOW, "result too large");
    return TC_OK;
}

TC__FN tc_result tc__run_pad(tc__call *c, tc_tensor *out) {
    const tc_tensor *x = c->ins[0];
    int64_t shape[TC_MAX_DIMS], xoff = 0, ooff = 0;
    int d, empty = 0;
    tc__call fill = *c;
    fill.a.f[0] = c->a.f[0];
    tc__run_full(&fill, out);
    for (d = 0; d < x->ndim; d++) {
        int64_t before = c->a.i[2 * d], after = c->a.i[2 * d + 1];
        int64_t lo = before < 0 ? -before : 0, hi = x->shape[d] - (after < 0 ? -after : 0);
        shape[d] = hi - lo;
        if (shape[d] <= 0) empty = 1;
        xoff += lo * x->strides[d];
        ooff += (before > 0 ? before : 0) * out->strides[d];
    }
    if (!empty)
        tc__copy_into(c->ctx, tc__base(out) + ooff * (int64_t)tc__dtype_sizes[out->dtype], out->dtype, x->ndim, shape,
                      out->strides, tc__base(x) + xoff * (int64_t)tc__dtype_sizes[x->dtype], x->dtype, x->ndim, shape,
                      x->strides);
    return TC_OK;
}

TCDEF tc_tensor *tc_pad_at(tc_ctx *ctx, tc_tensor *x, int npad, const int64_t *pad, double value, const char *file,
                           int line) {
    tc__call c;
    int i;
    tc__unary_call(ctx, TC__OP_PAD, x, file, line, &c);
    if (!ctx) return &tc__sentinel_null_ctx;
    c.a.f[0] = value;
    if (x && x->status == TC_OK) {
        if (npad > 0 && !pad) {
            tc__msg(&c, TC_ERR_NULL, "pad is NULL");
            return tc__fail(&c, TC_ERR_NULL);
        }
        if (npad < 0 || npad % 2 || npad > 2 * x->ndim) {
            tc__msg(&c, TC_ERR_INVALID_ARG, "pad needs an even count of at most 2*ndim = %d values (got %d%s)",
                    2 * x->ndim, npad, npad > 0 && !pad ? ", NULL" : "");
            return tc__fail(&c, TC_ERR_INVALID_ARG);
        }
        /* F.pad order: the last dim first */
        for (i = 0; i < npad / 2; i++) {
            int d = x->ndim - 1 - i;
            c.a.i[2 * d] = pad[2 * i];
            c.a.i[2 * d + 1] = pad[2 * i + 1];
        }
    }
    return tc__run(&c);
}

/* ---- indexing --------------------------------------------------------------------------------- */

TC__FN tc_result tc__check_index_dtype(tc__call *c, const tc_tensor *idx) {
    if (idx->dtype != TC_I32) return tc__msg(c, TC_ERR_DTYPE, "indices must be i32, got %s", tc__dtype_names[idx->dtype]);
    return TC_OK;
}

/* The index tensor as contiguous i32, every value checked against [0, n). */
TC__FN const int32_t *tc__indices(tc__call *c, const tc_tensor *idx, int64_t n, void **owned, tc_result *r) {
    const int32_t *ip = (const int32_t *)tc__contig_as(c->ctx, idx, TC_I32, owned);
    int64_t i, m = tc__numel(idx);
    *r = TC_OK;
    if (!ip) {
        *r = tc__msg(c, TC_ERR_OOM, "out of memory");
        return NULL;
    }
    for (i = 0; i < m; i++)
        if (ip[i] < 0 || ip[i] >= n) {
            *r = tc__msg(c, TC_ERR_INDEX, "index %d at position %lld is out of range [0, %lld)", (int)ip[i], (long long)i,
                         (long long)n);
            return NULL;
        }
    return ip;
}

TC__FN tc_result tc__shape_embedding(tc__call *c) {
    const tc_tensor *w = c->ins[0], *idx = c->ins[1];
    tc_result r = tc__check_index_dtype(c, idx);
    if (r != TC_OK) return r;
    if (w->ndim != 2) return tc__msg(c, TC_ERR_SHAPE, "weight must be 2-D [num, dim], got %s", tc__shp(w).s);
    if (idx->ndim >= TC_MAX_DIMS) return tc__msg(c, TC_ERR_SHAPE, "indices %s have too many dims", tc__shp(idx).s);
    c->ondim = idx->ndim + 1;
    memcpy(c->oshape, idx->shape, sizeof(int64_t) * (size_t)idx->ndim);
    c->oshape[idx->ndim] = w->shape[1];
    c->odt = w->dtype;
    return TC_OK;
}

/* Copies rows: out row r = src row sel[r] (rows of `row` elements). */
TC__FN void tc__gather_rows(char *dst, const char *src, const int32_t *sel, int64_t nsel, int64_t outer,
                            int64_t src_rows, size_t row_bytes) {
    int64_t o, r;
    for (o = 0; o < outer; o++)
        for (r = 0; r < nsel; r++)
            memcpy(dst + (size_t)(o * nsel + r) * row_bytes, src + (size_t)(o * src_rows + sel[r]) * row_bytes, row_bytes);
}

TC__FN tc_result tc__run_embedding(tc__call *c, tc_tensor *out) {
    const tc_tensor *w = c->ins[0], *idx = c->ins[1];
    void *io = NULL, *wo = NULL;
    tc_result r;
    const int32_t *ip = tc__indices(c, idx, w->shape[0], &io, &r);
    const char *wp = ip ? tc__contig_as(c->ctx, w, w->dtype, &wo) : NULL;
    if (ip && !wp) r = tc__msg(c, TC_ERR_OOM, "out of memory");
    if (r == TC_OK)
        tc__gather_rows(tc__base(out), wp, ip, tc__numel(idx), 1, w->shape[0],
                        (size_t)w->shape[1] * tc__dtype_sizes[w->dtype]);
    tc__scratch_put(io);
    tc__scratch_put(wo);
    return r;
}

TCDEF tc_tensor *tc_embedding_at(tc_ctx *ctx, tc_tensor *weight, tc_tensor *idx, const char *file, int line) {
    tc__call c;
    tc__call_init(&c, ctx, TC__OP_EMBEDDING, file, line);
    c.nin = 2;
    c.in[0] = weight;
    c.in[1] = idx;
    return tc__run(&c);
}

TC__FN tc_result tc__shape_index_select(tc__call *c) {
    const tc_tensor *x = c->ins[0], *idx = c->ins[1];
    int d = x->ndim == 0 ? (c->a.i[0] == 0 || c->a.i[0] == -1 ? 0 : -1) : tc__axis((int)c->a.i[0], x->ndim);
    tc_result r = tc__check_index_dtype(c, idx);
    if (r != TC_OK) return r;
    if (d < 0) return tc__bad_axis(c, (int)c->a.i[0], x->ndim);
    if (idx->ndim > 1) return tc__msg(c, TC_ERR_SHAPE, "indices must be 0-d or 1-D, got %s", tc__shp(idx).s);
    if (x->ndim == 0 && tc__numel(idx) != 1) /* (as PyTorch: its one element, selected once) */
        return tc__msg(c, TC_ERR_SHAPE, "a 0-d input takes exactly one index, got %lld", (long long)tc__numel(idx));
    tc__shape_same(c);
    if (x->ndim > 0) c->oshape[d] = tc__numel(idx);
    c->a.i[1] = d;
    return TC_OK;
}

TC__FN tc_result tc__run_index_select(tc__call *c, tc_tensor *out) {
    const tc_tensor *x = c->ins[0], *idx = c->ins[1];
    int d = (int)c->a.i[1], i;
    int64_t outer = 1, inner = 1, n = x->ndim > 0 ? x->shape[d] : 1;
    void *io = NULL, *xo = NULL;
    tc_result r;
    const int32_t *ip = tc__indices(c, idx, n, &io, &r);
    const char *xp = ip ? tc__contig_as(c->ctx, x, x->dtype, &xo) : NULL;
    for (i = 0; i < d; i++) outer *= x->shape[i];
    for (i = d + 1; i < x->ndim; i++) inner *= x->shape[i];
    if (ip && !xp) r = tc__msg(c, TC_ERR_OOM, "out of memory");
    if (r == TC_OK)
        tc__gather_rows(tc__base(out), xp, ip, tc__numel(idx), outer, n, (size_t)inner * tc__dtype_sizes[x->dtype]);
    tc__scratch_put(io);
    tc__scratch_put(xo);
    return r;
}

/* index_select and gather: (x, dim, idx) */
TC__FN tc_tensor *tc__index_op(tc_ctx *ctx, tc__op op, tc_tensor *x, int dim, tc_tensor *idx, const char *file, int line) {
    tc__call c;
    tc__call_init(&c, ctx, op, file, line);
    c.nin = 2;
    c.in[0] = x;
    c.in[1] = idx;
    c.a.i[0] = dim;
    return tc__run(&c);
}

TCDEF tc_tensor *tc_index_select_at(tc_ctx *ctx, tc_tensor *x, int dim, tc_tensor *idx, const char *file, int line) {
    return tc__index_op(ctx, TC__OP_INDEX_SELECT, x, dim, idx, file, line);
}

TC__FN tc_result tc__shape_gather(tc__call *c) {
    const tc_tensor *x = c->ins[0], *idx = c->ins[1];
    int d = x->ndim == 0 ? (c->a.i[0] == 0 || c->a.i[0] == -1 ? 0 : -1) : tc__axis((int)c->a.i[0], x->ndim), i;
    tc_result r = tc__check_index_dtype(c, idx);
    if (r != TC_OK) return r;
    if (d < 0) return tc__bad_axis(c, (int)c->a.i[0], x->ndim);
    if (idx->ndim != x->ndim)
        return tc__msg(c, TC_ERR_SHAPE, "index %s must have the rank of input %s", tc__shp(idx).s, tc__shp(x).s);
    for (i = 0; i < x->ndim; i++)
        if (i != d && idx->shape[i] > x->shape[i])
            return tc__msg(c, TC_ERR_SHAPE, "index %s is larger than input %s in dim %d", tc__shp(idx).s, tc__shp(x).s, i);
    c->ondim = idx->ndim;
    memcpy(c->oshape, idx->shape, sizeof idx->shape);
    c->odt = x->dtype;
    c->a.i[1] = d;
    return TC_OK;
}

TC__FN tc_result tc__run_gather(tc__call *c, tc_tensor *out) {
    const tc_tensor *x = c->ins[0], *idx = c->ins[1];
    int d = (int)c->a.i[1];
    void *io = NULL;
    tc_result r;
    const int32_t *ip = tc__indices(c, idx, x->ndim > 0 ? x->shape[d] : 1, &io, &r);
    size_t es = tc__dtype_sizes[x->dtype];
    if (r == TC_OK) {
        const char *xp = tc__base(x);
        char *op = tc__base(out);
        /* idx is contiguous here, so its linear index is the output's */
        TC__FOR_EACH_INDEX(out, si, li, {
            int64_t xo = 0;
            int k;
            for (k = 0; k < x->ndim; k++) xo += (k == d ? (int64_t)ip[li] : idx_[k]) * x->strides[k];
            (void)si;
            memcpy(op + (size_t)li * es, xp + xo * (int64_t)es, es);
        });
    }
    tc__scratch_put(io);
    return r;
}

TCDEF tc_tensor *tc_gather_at(tc_ctx *ctx, tc_tensor *x, int dim, tc_tensor *idx, const char *file, int line) {
    return tc__index_op(ctx, TC__OP_GATHER, x, dim, idx, file, line);
}
