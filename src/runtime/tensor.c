/* Tensors: the context, scopes, tensor objects and storage, host access. */


/* Static errored tensors for the cases where no tensor can be allocated:
 * a NULL context, or no memory for the tensor object itself. */
static tc_tensor tc__sentinel_null_ctx = {NULL, TC_F32, 0, {0}, {0}, 0, NULL, TC_ERR_NULL,
                                          "tcompile: NULL context passed to an op", 0, 1, 0, NULL, NULL, 0, 0, 0, TC_CPU};
static tc_tensor tc__sentinel_oom = {NULL, TC_F32, 0, {0}, {0}, 0, NULL, TC_ERR_OOM,
                                     "tcompile: out of memory allocating a tensor", 0, 1, 0, NULL, NULL, 0, 0, 0, TC_CPU};

/* A host read (or write) of t's data: while its context traces, a graph
 * break, which the compiler's hook runs (nonzero: refuse the access). */
TC__FN int tc__host_access(const tc_tensor *t, const char *what, const char *file, int line) {
    const tc_ctx *ctx = t ? t->ctx : NULL;
    return ctx && ctx->trace ? ctx->trace_hooks->host_access(t, what, file, line) : 0;
}

/* ---- context ------------------------------------------------------------- */

/* The executor's level (tc__isa_resolve chooses it): capped by the options
 * and, for debugging, by TC_ISA. */
TC__FN void tc__ctx_init_isa(tc_ctx *ctx) {
    tc_isa cap = tc__isa_env_cap(ctx->opts.max_isa);
    if (tc_ctx_set_isa(ctx, cap) != TC_OK) tc_ctx_set_isa(ctx, TC_ISA_AUTO);
}

TCDEF tc_isa tc_ctx_isa(const tc_ctx *ctx) { return ctx ? ctx->isa : TC_ISA_NONE; }

/* Caps the level (tests force the lower ones); AUTO = the best there is.
 * A level above what the CPU runs, or above the build's TC_ISA_MAX, is
 * clamped to the widest below it that runs. */
TCDEF tc_result tc_ctx_set_isa(tc_ctx *ctx, tc_isa max_isa) {
    if (!ctx) return TC_ERR_NULL;
    if ((int)max_isa < (int)TC_ISA_AUTO || (int)max_isa > (int)TC_ISA_AVX512) return TC_ERR_INVALID_ARG;
    ctx->isa = tc__isa_resolve(ctx->cpu_features, max_isa);
    return TC_OK;
}

TCDEF tc_result tc_ctx_set_allow_tf32(tc_ctx *ctx, int allow) {
    if (!ctx) return TC_ERR_NULL;
    ctx->opts.allow_tf32 = allow != 0;
    return TC_OK;
}

TCDEF tc_ctx *tc_ctx_create(const tc_ctx_options *opts) {
    tc_ctx *ctx = (tc_ctx *)TC_MALLOC(sizeof *ctx);
    if (!ctx) return NULL;
    memset(ctx, 0, sizeof *ctx);
    if (opts) ctx->opts = *opts;
    ctx->cache_limit = ctx->opts.cache_bytes < 0   ? 0
                       : ctx->opts.cache_bytes > 0 ? (size_t)ctx->opts.cache_bytes
                                                   : TC__STORE_CACHE_DEFAULT;
    ctx->scope_cap = 8;
    ctx->scope_head = (tc_tensor **)TC_MALLOC(sizeof(tc_tensor *) * (size_t)ctx->scope_cap);
    if (!ctx->scope_head) {
        TC_FREE(ctx);
        return NULL;
    }
    memset(ctx->scope_head, 0, sizeof(tc_tensor *) * (size_t)ctx->scope_cap);
    if (tc_ctx_set_num_threads(ctx, ctx->opts.num_threads) != TC_OK) ctx->num_threads = 1;
    ctx->cpu_features = tc__cpu_features();
    tc__ctx_init_isa(ctx);
    return ctx;
}

TCDEF tc_result tc_ctx_set_num_threads(tc_ctx *ctx, int num_threads) {
    if (!ctx) return TC_ERR_NULL;
    if (num_threads < 0) return TC_ERR_INVALID_ARG;
    if (num_threads == 0) num_threads = tc__cpu_count();
#ifdef TC_NO_THREADS
    num_threads = 1;
#endif
    if (num_threads == ctx->num_threads && (num_threads == 1 || ctx->pool)) return TC_OK;
    {
        /* the new pool first: where it cannot be made the old one stays */
        tc__pool *p = tc__pool_create(num_threads);
        if (!p && num_threads > 1 && ctx->pool) return TC_ERR_OOM;
        tc__pool_destroy(ctx->pool);
        ctx->pool = p;
    }
    ctx->num_threads = ctx->pool || num_threads <= 1 ? num_threads : 1;
    return ctx->num_threads == num_threads ? TC_OK : TC_ERR_OOM;
}

TCDEF int tc_ctx_num_threads(const tc_ctx *ctx) { return ctx ? ctx->num_threads : 0; }
TCDEF tc_result tc_ctx_status(const tc_ctx *ctx) { return ctx ? ctx->first_status : TC_ERR_NULL; }
TCDEF const char *tc_ctx_error(const tc_ctx *ctx) { return ctx ? ctx->first_err : "tcompile: NULL context"; }
TCDEF int64_t tc_ctx_live_tensors(const tc_ctx *ctx) { return ctx ? ctx->live_tensors : 0; }
TCDEF int64_t tc_ctx_live_bytes(const tc_ctx *ctx) { return ctx ? ctx->live_bytes : 0; }

TCDEF void tc_ctx_clear_error(tc_ctx *ctx) {
    if (!ctx) return;
    ctx->first_status = TC_OK;
    ctx->first_err[0] = 0;
}

/* ---- storage --------------------------------------------------------------- */

/* The storage cache.  A large block freed and malloc'd again is often a
 * fresh mapping: malloc trims its heap top (or unmaps) on free, and the
 * next call faults every page in again (a 16 MB result after an eager
 * layer_norm: 3 ms of faults for 1 ms of work).  Freed blocks of at least
 * TC__STORE_CACHE_MIN bytes are kept, up to the context's limit, and handed
 * to the next tensor they fit; smaller ones malloc's own bins reuse well. */

#if defined(__SANITIZE_ADDRESS__)
#define TC__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TC__ASAN 1
#endif
#endif
#ifdef TC__ASAN
/* a cached block is poisoned, so a use after tc_free still reports */
#include <sanitizer/asan_interface.h>
#define TC__POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define TC__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define TC__POISON(p, n) ((void)(p), (void)(n))
#define TC__UNPOISON(p, n) ((void)(p), (void)(n))
#endif

TC__FN void tc__cache_drop(tc_ctx *ctx, int i) {
    tc__cached_block *b = &ctx->cache[i];
    TC__UNPOISON(b->data, b->cap);
    TC_FREE(b->raw);
    ctx->cached_bytes -= b->cap;
    ctx->cache[i] = ctx->cache[--ctx->ncache];
}

/* Keeps a freed block (evicting the oldest to make room); 0: not kept. */
TC__FN int tc__cache_keep(tc_ctx *ctx, void *raw, void *data, size_t cap) {
    tc__cached_block *b;
    if (cap < TC__STORE_CACHE_MIN || cap > ctx->cache_limit) return 0;
    while (ctx->ncache > 0 && (ctx->ncache == TC__STORE_CACHE_SLOTS || ctx->cached_bytes + cap > ctx->cache_limit)) {
        int i, old = 0;
        for (i = 1; i < ctx->ncache; i++)
            if (ctx->cache[i].stamp < ctx->cache[old].stamp) old = i;
        tc__cache_drop(ctx, old);
    }
    b = &ctx->cache[ctx->ncache++];
    b->raw = raw;
    b->data = data;
    b->cap = cap;
    b->stamp = ++ctx->cache_clock;
    ctx->cached_bytes += cap;
    TC__POISON(data, cap);
    return 1;
}

/* The smallest cached block that holds bytes without wasting more than
 * their size again; -1 when none. */
TC__FN int tc__cache_find(const tc_ctx *ctx, size_t bytes) {
    int i, best = -1;
    if (bytes < TC__STORE_CACHE_MIN) return -1;
    for (i = 0; i < ctx->ncache; i++) {
        size_t c = ctx->cache[i].cap;
        if (c >= bytes && c / 2 <= bytes && (best < 0 || c < ctx->cache[best].cap)) best = i;
    }
    return best;
}

TCDEF void tc_ctx_empty_cache(tc_ctx *ctx) {
    if (!ctx) return;
    while (ctx->ncache > 0) tc__cache_drop(ctx, ctx->ncache - 1);
    tc__cuda_trim(ctx);
}
TCDEF int64_t tc_ctx_cached_bytes(const tc_ctx *ctx) { return ctx ? (int64_t)ctx->cached_bytes : 0; }

/* An aligned block of at least `bytes`: a cached one when one fits, else
 * a new one (*raw is what TC_FREE takes, *cap its usable size); NULL out
 * of memory.  Tensors' storage and a default-mode call's arena of
 * intermediates (plan.c) both come from here and go back with
 * tc__block_put, so a call's arena is the last call's, already mapped. */
TC__FN void *tc__block_get(tc_ctx *ctx, size_t bytes, void **raw, size_t *cap) {
    int hit = tc__cache_find(ctx, bytes);
    void *data;
    if (hit >= 0) {
        tc__cached_block b = ctx->cache[hit];
        ctx->cache[hit] = ctx->cache[--ctx->ncache];
        ctx->cached_bytes -= b.cap;
        TC__UNPOISON(b.data, bytes);
        *raw = b.raw;
        *cap = b.cap;
        return b.data;
    }
    data = tc__alloc_aligned(bytes, raw);
    if (!data && ctx->ncache > 0) { /* what the cache holds goes back first */
        TC_FREE(*raw);
        tc_ctx_empty_cache(ctx);
        data = tc__alloc_aligned(bytes, raw);
    }
    if (!data) {
        TC_FREE(*raw);
        *raw = NULL;
        return NULL;
    }
    *cap = bytes;
    return data;
}
TC__FN void tc__block_put(tc_ctx *ctx, void *raw, void *data, size_t cap) {
    if (raw && !tc__cache_keep(ctx, raw, data, cap)) TC_FREE(raw);
}

TC__FN void tc__storage_release(tc_ctx *ctx, tc__storage *sto) {
    if (!sto || --sto->refs > 0) return;
    if (sto->device == TC_CUDA) {
        ctx->live_bytes -= (int64_t)sto->bytes;
        tc__cuda_free(ctx, (tc__CUdeviceptr)(uintptr_t)sto->data, sto->cap);
    } else if (sto->raw) {
        ctx->live_bytes -= (int64_t)sto->bytes;
        tc__block_put(ctx, sto->raw, sto->data, sto->cap);
    }
    TC_FREE(sto);
}

TC__FN tc__storage *tc__storage_new(tc_ctx *ctx, size_t bytes) {
    tc__storage *sto = (tc__storage *)TC_MALLOC(sizeof *sto);
    if (!sto) return NULL;
    sto->data = tc__block_get(ctx, bytes, &sto->raw, &sto->cap);
    if (!sto->data) {
        TC_FREE(sto);
        return NULL;
    }
    sto->bytes = bytes;
    sto->refs = 1;
    sto->device = TC_CPU;
    ctx->live_bytes += (int64_t)bytes;
    return sto;
}

TC__FN tc__storage *tc__storage_wrap(void *data) {
    tc__storage *sto = (tc__storage *)TC_MALLOC(sizeof *sto);
    if (!sto) return NULL;
    sto->data = data;
    sto->raw = NULL;
    sto->bytes = sto->cap = 0;
    sto->refs = 1;
    sto->device = TC_CPU;
    return sto;
}

/* Device storage of `bytes` (the context's error set when it fails). */
TC__FN tc__storage *tc__storage_new_device(tc_ctx *ctx, size_t bytes, const char *what) {
    tc__storage *sto = (tc__storage *)TC_MALLOC(sizeof *sto);
    tc__CUdeviceptr p;
    if (!sto) return NULL;
    p = tc__cuda_alloc(ctx, bytes, &sto->cap, what);
    if (!p) {
        TC_FREE(sto);
        return NULL;
    }
    sto->data = (void *)(uintptr_t)p;
    sto->raw = NULL;
    sto->bytes = bytes;
    sto->refs = 1;
    sto->device = TC_CUDA;
    ctx->live_bytes += (int64_t)bytes;
    return sto;
}

/* ---- tensor objects and scopes ------------------------------------------- */

TC__FN void tc__link(tc_ctx *ctx, tc_tensor *t, int depth) {
    t->scope = depth;
    t->prev = NULL;
    t->next = ctx->scope_head[depth];
    if (t->next) t->next->prev = t;
    ctx->scope_head[depth] = t;
}

TC__FN void tc__unlink(tc_ctx *ctx, tc_tensor *t) {
    if (t->prev) t->prev->next = t->next;
    else ctx->scope_head[t->scope] = t->next;
    if (t->next) t->next->prev = t->prev;
    t->prev = t->next = NULL;
}

/* A fresh tensor object in the current scope: no storage, status OK. */
TC__FN tc_tensor *tc__tensor_new(tc_ctx *ctx) {
    tc_tensor *t = (tc_tensor *)TC_MALLOC(sizeof *t);
    if (!t) return NULL;
    memset(t, 0, sizeof *t);
    t->ctx = ctx;
    tc__link(ctx, t, ctx->depth);
    ctx->live_tensors++;
    return t;
}

TCDEF void tc_free(tc_tensor *t) {
    tc_ctx *ctx;
    if (!t || t->is_sentinel) return;
    ctx = t->ctx;
    tc__unlink(ctx, t);
    tc__storage_release(ctx, t->storage);
    TC_FREE((void *)t->err);
    TC_FREE(t);
    ctx->live_tensors--;
}

TCDEF void tc_scope_begin(tc_ctx *ctx) {
    if (!ctx) return;
    if (ctx->depth + 1 >= ctx->scope_cap) {
        int cap = ctx->scope_cap * 2;
        tc_tensor **h = (tc_tensor **)TC_REALLOC(ctx->scope_head, sizeof(tc_tensor *) * (size_t)cap);
        if (!h) {
            /* No room for a new level: keep using the current one, which only
             * delays frees; the matching end then closes nothing. */
            tc__log(ctx, TC_LOG_ERROR, "tc_scope_begin: out of memory, scope not opened");
            ctx->phantom_scopes++;
            return;
        }
        memset(h + ctx->scope_cap, 0, sizeof(tc_tensor *) * (size_t)(cap - ctx->scope_cap));
        ctx->scope_head = h;
        ctx->scope_cap = cap;
    }
    ctx->depth++;
    ctx->scope_head[ctx->depth] = NULL;
}

TC__FN void tc__scope_pop(tc_ctx *ctx) {
    if (ctx->phantom_scopes > 0) {
        ctx->phantom_scopes--;
        return;
    }
    while (ctx->scope_head[ctx->depth]) tc_free(ctx->scope_head[ctx->depth]);
    ctx->depth--;
}

TCDEF tc_result tc_scope_end(tc_ctx *ctx) {
    if (!ctx) return TC_ERR_NULL;
    if (ctx->phantom_scopes == 0 && ctx->depth <= ctx->scope_floor) {
        tc__log(ctx, TC_LOG_WARN, "tc_scope_end: %s", ctx->depth == 0 ? "no open scope"
                                  : "no scope of the caller's open (the innermost is tcompile's own, around a "
                                    "compiled function)");
        return TC_ERR_STATE;
    }
    tc__scope_pop(ctx);
    return TC_OK;
}

/* A scope tcompile opens around code of its own or the user's (a traced
 * or eager call of a compiled function): only tc__scope_close ends it, so
 * an unbalanced tc_scope_end in the user's function cannot free what the
 * library still uses.  Returns the floor to restore. */
TC__FN int tc__scope_open(tc_ctx *ctx) {
    int floor = ctx->scope_floor;
    tc_scope_begin(ctx);
    ctx->scope_floor = ctx->depth;
    return floor;
}

/* Ends the scope tc__scope_open opened (with the user's scopes it still
 * holds, left open by an unbalanced tc_scope_begin) and restores the
 * floor. */
TC__FN void tc__scope_close(tc_ctx *ctx, int floor) {
    int depth = ctx->scope_floor;
    while (ctx->depth > depth && ctx->phantom_scopes == 0) tc__scope_pop(ctx);
    tc__scope_pop(ctx);
    ctx->scope_floor = floor;
}

TCDEF int tc_scope_depth(const tc_ctx *ctx) { return ctx ? ctx->depth : 0; }

TC__FN tc_tensor *tc__move_to(tc_tensor *t, int depth) {
    if (!t || t->is_sentinel || t->scope == depth) return t;
    tc__unlink(t->ctx, t);
    tc__link(t->ctx, t, depth);
    return t;
}

TCDEF tc_tensor *tc_keep(tc_tensor *t) {
    return t && !t->is_sentinel && t->scope > 0 ? tc__move_to(t, t->scope - 1) : t;
}
TCDEF tc_tensor *tc_persist(tc_tensor *t) { return tc__move_to(t, 0); }

TCDEF void tc_ctx_destroy(tc_ctx *ctx) {
    int d;
    if (!ctx) return;
    for (d = ctx->depth; d >= 0; d--)
        while (ctx->scope_head[d]) tc_free(ctx->scope_head[d]);
    tc_ctx_empty_cache(ctx);
    tc__cuda_ctx_destroy(ctx);
    tc__pool_destroy(ctx->pool);
    TC_FREE(ctx->scope_head);
    TC_FREE(ctx);
}

/* ---- layout helpers -------------------------------------------------------- */

TC__FN void tc__contig_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    int i;
    for (i = ndim - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i] > 0 ? shape[i] : 1;
    }
}

TC__FN int tc__contig(const tc_tensor *t) {
    int64_t s = 1;
    int i;
    for (i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] == 0) return 1;
        if (t->shape[i] != 1 && t->strides[i] != s) return 0;
        s *= t->shape[i];
    }
    return 1;
}

TC__FN int64_t tc__numel(const tc_tensor *t) {
    int64_t n = 1;
    int i;
    for (i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

TC__FN int tc__on_device(const tc_tensor *t) { return t->storage && t->storage->device == TC_CUDA; }

TC__FN char *tc__base(const tc_tensor *t) {
    return (char *)t->storage->data + t->offset * (int64_t)tc__dtype_sizes[t->dtype];
}

/* ---- properties ------------------------------------------------------------ */

TCDEF tc_result tc_status(const tc_tensor *t) { return t ? t->status : TC_ERR_NULL; }
TCDEF const char *tc_error(const tc_tensor *t) {
    if (!t) return "tcompile: NULL tensor";
    return t->status == TC_OK ? "" : (t->err ? t->err : tc_result_string(t->status));
}
TCDEF tc_ctx *tc_context(const tc_tensor *t) { return t ? t->ctx : NULL; }
TCDEF tc_dtype tc_type(const tc_tensor *t) { return t ? t->dtype : TC_F32; }
TCDEF int tc_ndim(const tc_tensor *t) { return t ? t->ndim : 0; }
TCDEF int64_t tc_dim(const tc_tensor *t, int dim) {
    if (!t) return 0;
    if (dim < 0) dim += t->ndim;
    return dim >= 0 && dim < t->ndim ? t->shape[dim] : 0;
}
TCDEF const int64_t *tc_shape(const tc_tensor *t) { return t ? t->shape : NULL; }
TCDEF const int64_t *tc_strides(const tc_tensor *t) { return t ? t->strides : NULL; }
TCDEF int64_t tc_offset(const tc_tensor *t) { return t ? t->offset : 0; }
TCDEF int64_t tc_numel(const tc_tensor *t) { return t && t->status == TC_OK ? tc__numel(t) : 0; }
TCDEF int tc_is_contiguous(const tc_tensor *t) { return t && t->status == TC_OK && tc__contig(t); }
TCDEF void *tc_data_at(const tc_tensor *t, const char *file, int line) {
    if (!t || t->status != TC_OK || tc__host_access(t, "tc_data", file, line)) return NULL;
    if (tc__on_device(t)) { /* device memory is not the host's to address */
        tc__ctx_fail(t->ctx, TC_ERR_DEVICE, "tc_data (%s:%d): the tensor is on the GPU (tc_read or tc_to copies it)",
                     file ? file : "?", line);
        return NULL;
    }
    return (void *)tc__base(t);
}

TCDEF char *tc_describe(const tc_tensor *t, char *buf, size_t cap) {
    size_t n;
    int i;
    if (!buf || cap == 0) return buf;
    if (!t || t->status != TC_OK) {
        snprintf(buf, cap, "error(%s)", tc_result_string(tc_status(t)));
        return buf;
    }
    n = (size_t)snprintf(buf, cap, "%s[", tc__dtype_names[t->dtype]);
    for (i = 0; i < t->ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, i ? ",%lld" : "%lld", (long long)t->shape[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

/* ---- host access ------------------------------------------------------------ */


/* A device tensor's elements staged on the host: *h is t over a host copy
 * of the span of storage its elements reach (*buf, to TC_FREE; written back
 * by tc__unstage).  Host-side code then runs unchanged on *h. */
typedef struct tc__staged {
    tc_tensor h;
    tc__storage hs;
    int64_t lo;                     /* first element of the span            */
    size_t bytes;
} tc__staged;

TC__FN tc_result tc__stage(const tc_tensor *t, tc__staged *st, const char *what) {
    int64_t lo = t->offset, hi = t->offset;
    size_t es = tc__dtype_sizes[t->dtype];
    void *buf;
    int i;
    for (i = 0; i < t->ndim; i++) {
        int64_t reach = (t->shape[i] - 1) * t->strides[i];
        if (reach < 0) lo += reach;
        else hi += reach;
    }
    if (tc__numel(t) == 0) hi = lo - 1; /* nothing to stage */
    st->h = *t;
    st->lo = lo;
    st->bytes = hi >= lo ? (size_t)(hi - lo + 1) * es : 0;
    buf = TC_MALLOC(st->bytes ? st->bytes : 1);
    if (!buf) return tc__ctx_fail(t->ctx, TC_ERR_OOM, "%s: out of memory staging %llu bytes", what, (unsigned long long)st->bytes);
    memset(&st->hs, 0, sizeof st->hs);
    st->hs.data = buf;
    st->hs.refs = 1;
    st->h.storage = &st->hs;
    st->h.offset = t->offset - lo;
    st->h.device = TC_CPU;
    if (st->bytes &&
        tc__cuda_copy(t->ctx, buf, (tc__CUdeviceptr)(uintptr_t)t->storage->data + (size_t)lo * es, st->bytes, 1, what)) {
        TC_FREE(buf);
        return TC_ERR_DEVICE;
    }
    return TC_OK;
}

/* Frees the staging copy, writing it back first when `write`. */
TC__FN tc_result tc__unstage(const tc_tensor *t, tc__staged *st, int write, const char *what) {
    tc_result r = TC_OK;
    size_t es = tc__dtype_sizes[t->dtype];
    if (write && st->bytes)
        r = tc__cuda_copy(t->ctx, st->hs.data, (tc__CUdeviceptr)(uintptr_t)t->storage->data + (size_t)st->lo * es,
                          st->bytes, 0, what);
    TC_FREE(st->hs.data);
    return r;
}

TCDEF tc_device tc_device_of(const tc_tensor *t) { return t ? t->device : TC_CPU; }

/* Walks every element of t in row-major order, calling visit with the
 * element's storage index relative to tc__base(t) and its linear index. */
#define TC__FOR_EACH_INDEX(t, SIDX, LIN, BODY)                                  \
    do {                                                                        \
        int64_t idx_[TC_MAX_DIMS] = {0}, n_ = tc__numel(t), LIN;                \
        int64_t SIDX = 0;                                                       \
        for (LIN = 0; LIN < n_; LIN++) {                                        \
            int d_;                                                             \
            BODY;                                                               \
            for (d_ = (t)->ndim - 1; d_ >= 0; d_--) {                           \
                SIDX += (t)->strides[d_];                                       \
                if (++idx_[d_] < (t)->shape[d_]) break;                         \
                SIDX -= (t)->strides[d_] * (t)->shape[d_];                      \
                idx_[d_] = 0;                                                   \
            }                                                                   \
        }                                                                       \
    } while (0)

/* tc_read's body (also tc_to's). */
TC__FN tc_result tc__read(const tc_tensor *t, tc_dtype dtype, void *dst, size_t dst_bytes, const char *file, int line) {
    if (!t || !dst) return TC_ERR_NULL;
    if (t->status != TC_OK) return t->status;
    if (tc__host_access(t, "tc_read", file, line)) return TC_ERR_STATE;
    if (!tc__dtype_valid(dtype)) return TC_ERR_DTYPE;
    if ((uint64_t)tc__numel(t) > (uint64_t)(dst_bytes / tc__dtype_sizes[dtype])) return TC_ERR_INVALID_ARG;
    if (tc__on_device(t)) {
        tc__staged st;
        tc_result r;
        if (dtype == t->dtype && tc__contig(t)) /* straight into dst */
            return tc__cuda_copy(t->ctx, dst, (tc__CUdeviceptr)(uintptr_t)tc__base(t),
                                 (size_t)tc__numel(t) * tc__dtype_sizes[dtype], 1, "tc_read");
        if ((r = tc__stage(t, &st, "tc_read")) != TC_OK) return r;
        r = tc__read(&st.h, dtype, dst, dst_bytes, file, line);
        tc__unstage(t, &st, 0, "tc_read");
        return r;
    }
    if (dtype == t->dtype && tc__contig(t)) {
        memcpy(dst, tc__base(t), (size_t)tc__numel(t) * tc__dtype_sizes[dtype]);
        return TC_OK;
    }
    {
        const char *base = tc__base(t);
        TC__FOR_EACH_INDEX(t, si, li, tc__store(dst, dtype, li, tc__load(base, t->dtype, si)));
    }
    return TC_OK;
}

TCDEF tc_result tc_read_at(const tc_tensor *t, tc_dtype dtype, void *dst, size_t dst_bytes, const char *file, int line) {
    return tc__read(t, dtype, dst, dst_bytes, file, line);
}

TCDEF tc_result tc_write(tc_tensor *t, tc_dtype dtype, const void *src, size_t src_bytes) {
    if (!t || !src) return TC_ERR_NULL;
    if (t->status != TC_OK) return t->status;
    if (tc__host_access(t, "tc_write", NULL, 0)) return TC_ERR_STATE;
    if (!tc__dtype_valid(dtype)) return TC_ERR_DTYPE;
    if ((uint64_t)tc__numel(t) > (uint64_t)(src_bytes / tc__dtype_sizes[dtype])) return TC_ERR_INVALID_ARG;
    if (tc__on_device(t)) {
        tc__staged st;
        tc_result r;
        if (dtype == t->dtype && tc__contig(t))
            return tc__cuda_copy(t->ctx, (void *)src, (tc__CUdeviceptr)(uintptr_t)tc__base(t),
                                 (size_t)tc__numel(t) * tc__dtype_sizes[dtype], 0, "tc_write");
        if ((r = tc__stage(t, &st, "tc_write")) != TC_OK) return r;
        r = tc_write(&st.h, dtype, src, src_bytes);
        return tc__unstage(t, &st, r == TC_OK, "tc_write") != TC_OK ? TC_ERR_DEVICE : r;
    }
    if (dtype == t->dtype && tc__contig(t)) {
        memmove(tc__base(t), src, (size_t)tc__numel(t) * tc__dtype_sizes[dtype]);
        return TC_OK;
    }
    {
        char *base = tc__base(t);
        TC__FOR_EACH_INDEX(t, si, li, tc__store(base, t->dtype, si, tc__load(src, dtype, li)));
    }
    return TC_OK;
}

TC__FN int tc__elem_index(const tc_tensor *t, const int64_t *index, int64_t *si) {
    int i;
    *si = 0;
    if (t->ndim > 0 && !index) return -1;
    for (i = 0; i < t->ndim; i++) {
        if (index[i] < 0 || index[i] >= t->shape[i]) return -1;
        *si += index[i] * t->strides[i];
    }
    return 0;
}

/* One element of a device tensor, read over (NaN when the copy fails). */
TC__FN double tc__device_elem(const tc_tensor *t, int64_t si, const char *what) {
    unsigned char v[8];
    if (tc__cuda_copy(t->ctx, v, (tc__CUdeviceptr)(uintptr_t)tc__base(t) + (size_t)si * tc__dtype_sizes[t->dtype],
                      tc__dtype_sizes[t->dtype], 1, what) != TC_OK)
        return NAN;
    return tc__load(v, t->dtype, 0);
}

TCDEF double tc_get(const tc_tensor *t, const int64_t *index) {
    int64_t si;
    if (!t || t->status != TC_OK || tc__elem_index(t, index, &si) || tc__host_access(t, "tc_get", NULL, 0)) return NAN;
    if (tc__on_device(t)) return tc__device_elem(t, si, "tc_get");
    return tc__load(tc__base(t), t->dtype, si);
}

TCDEF tc_result tc_set(tc_tensor *t, const int64_t *index, double value) {
    int64_t si;
    if (!t) return TC_ERR_NULL;
    if (t->status != TC_OK) return t->status;
    if (t->ndim > 0 && !index) return TC_ERR_NULL;
    if (tc__elem_index(t, index, &si)) return TC_ERR_INDEX;
    if (tc__host_access(t, "tc_set", NULL, 0)) return TC_ERR_STATE;
    if (tc__on_device(t)) {
        unsigned char v[8];
        tc__store(v, t->dtype, 0, value);
        return tc__cuda_copy(t->ctx, v, (tc__CUdeviceptr)(uintptr_t)tc__base(t) + (size_t)si * tc__dtype_sizes[t->dtype],
                             tc__dtype_sizes[t->dtype], 0, "tc_set");
    }
    tc__store(tc__base(t), t->dtype, si, value);
    return TC_OK;
}

TCDEF double tc_item_at(const tc_tensor *t, const char *file, int line) {
    if (!t || t->status != TC_OK || tc__numel(t) != 1 || tc__host_access(t, "tc_item", file, line)) return NAN;
    if (tc__on_device(t)) return tc__device_elem(t, 0, "tc_item");
    return tc__load(tc__base(t), t->dtype, 0);
}

/* ---- device copies -------------------------------------------------------- */

/* A device copy of host tensor x (contiguous), in the current scope. */
TC__FN tc_tensor *tc__to_device(tc_ctx *ctx, const tc_tensor *x) {
    tc_tensor *t = tc__tensor_new(ctx);
    size_t bytes = (size_t)tc__numel(x) * tc__dtype_sizes[x->dtype];
    void *tmp;
    tc_result r;
    if (!t) return NULL;
    t->dtype = x->dtype;
    t->ndim = x->ndim;
    memcpy(t->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    tc__contig_strides(t->ndim, t->shape, t->strides);
    t->device = TC_CUDA;
    if (!(t->storage = tc__storage_new_device(ctx, bytes, "a copy to the GPU"))) {
        t->status = ctx->first_status ? ctx->first_status : TC_ERR_OOM;
        return t;
    }
    if (!(tmp = TC_MALLOC(bytes ? bytes : 1))) {
        t->status = TC_ERR_OOM;
        return t;
    }
    r = tc__read(x, x->dtype, tmp, bytes, NULL, 0);
    if (r == TC_OK) r = tc__cuda_copy(ctx, tmp, (tc__CUdeviceptr)(uintptr_t)t->storage->data, bytes, 0, "a copy to the GPU");
    TC_FREE(tmp);
    t->status = r;
    return t;
}
