/* A context's CUDA state: its stream, its cache of device blocks, copies.
 *
 * Made when the context first touches the device (tc__cuda_ctx_get) and
 * destroyed with the context.  Work goes to the context's own non-blocking
 * stream, so tcompile never synchronises with other users of the primary
 * context; a host read synchronises the stream.
 *
 * The block cache is the caching allocator: freed device blocks are kept
 * by size and handed to the next request they fit (at most twice its size,
 * so a small tensor does not pin a large block), so a call after warm-up
 * makes no cuMemAlloc.  An allocation that fails returns the cached blocks
 * to the driver and tries again. */

#ifndef TC_NO_CUDA

typedef struct tc__dblock {
    tc__CUdeviceptr ptr;
    size_t cap;
} tc__dblock;

struct tc__cuda_ctx {
    tc__CUstream stream;
    tc__dblock *free_blocks;        /* the cache, unordered                */
    int nfree, free_cap;
    size_t cached_bytes;
    int64_t allocs, reuses;         /* cuMemAlloc calls; cache hits        */
    void *eager;                    /* eager ops' compiled functions (cuda/eager.c) */
    void (*eager_free)(tc_ctx *ctx);
};

/* Makes the device's primary context current on the calling thread (a
 * context's calls may come from any thread, one at a time). */
TC__FN tc_result tc__cuda_enter(tc_ctx *ctx, const char *what) {
    tc__CUresult r;
    if (tc__cuda_load(NULL, NULL) != 0) return tc__ctx_fail(ctx, TC_ERR_DEVICE, "%s: CUDA unavailable: %s", what, tc__cu.why);
    r = tc__cu.cu.CtxSetCurrent(tc__cu.pctx);
    if (r != TC__CUDA_SUCCESS) return tc__ctx_fail(ctx, TC_ERR_DEVICE, "%s: cuCtxSetCurrent: %s", what, tc__cu_errname(r));
    return TC_OK;
}

/* The context's CUDA state, made on first use; NULL with the context's
 * error set when the device cannot be used. */
TC__FN tc__cuda_ctx *tc__cuda_ctx_get(tc_ctx *ctx, const char *what) {
    tc__cuda_ctx *c;
    tc__CUresult r;
    if (tc__cuda_enter(ctx, what) != TC_OK) return NULL;
    if (ctx->cuda) return ctx->cuda;
    c = (tc__cuda_ctx *)TC_MALLOC(sizeof *c);
    if (!c) {
        tc__ctx_fail(ctx, TC_ERR_OOM, "%s: out of memory", what);
        return NULL;
    }
    memset(c, 0, sizeof *c);
    r = tc__cu.cu.StreamCreate(&c->stream, TC__CU_STREAM_NON_BLOCKING);
    if (r != TC__CUDA_SUCCESS) {
        TC_FREE(c);
        tc__ctx_fail(ctx, TC_ERR_DEVICE, "%s: cuStreamCreate: %s", what, tc__cu_errname(r));
        return NULL;
    }
    ctx->cuda = c;
    return c;
}

/* Returns every cached block to the driver. */
TC__FN void tc__cuda_trim(tc_ctx *ctx) {
    tc__cuda_ctx *c = ctx->cuda;
    int i;
    if (!c) return;
    tc__cu.cu.CtxSetCurrent(tc__cu.pctx);
    for (i = 0; i < c->nfree; i++) tc__cu.cu.MemFree(c->free_blocks[i].ptr);
    c->nfree = 0;
    c->cached_bytes = 0;
}

TC__FN void tc__cuda_ctx_destroy(tc_ctx *ctx) {
    tc__cuda_ctx *c = ctx->cuda;
    if (!c) return;
    if (c->eager_free) c->eager_free(ctx); /* their programs give blocks back first */
    tc__cu.cu.CtxSetCurrent(tc__cu.pctx);
    tc__cu.cu.StreamSynchronize(c->stream);
    tc__cuda_trim(ctx);
    tc__cu.cu.StreamDestroy(c->stream);
    TC_FREE(c->free_blocks);
    TC_FREE(c);
    ctx->cuda = NULL;
}

/* The size a request is rounded to: 512 bytes (the driver's own alignment
 * is 256) below 1 MiB, 2 MiB above, so blocks are reusable across the
 * slightly different sizes of dynamic shapes. */
TC__FN size_t tc__cuda_round(size_t bytes) {
    size_t q = bytes < ((size_t)1 << 20) ? 512 : ((size_t)2 << 20);
    if (bytes == 0) bytes = 1;
    return bytes > (size_t)-1 - q ? 0 : (bytes + q - 1) / q * q;
}

/* A device block of at least `bytes`: a cached one that fits (the smallest
 * at most twice the size), else a new one.  0 with the context's error set
 * on failure. */
TC__FN tc__CUdeviceptr tc__cuda_alloc(tc_ctx *ctx, size_t bytes, size_t *cap, const char *what) {
    tc__cuda_ctx *c = tc__cuda_ctx_get(ctx, what);
    tc__CUdeviceptr p = 0;
    tc__CUresult r;
    size_t want = tc__cuda_round(bytes);
    int i, best = -1;
    if (!c) return 0;
    if (!want) {
        tc__ctx_fail(ctx, TC_ERR_OVERFLOW, "%s: %llu bytes", what, (unsigned long long)bytes);
        return 0;
    }
    for (i = 0; i < c->nfree; i++) {
        size_t k = c->free_blocks[i].cap;
        if (k >= want && k / 2 <= want && (best < 0 || k < c->free_blocks[best].cap)) best = i;
    }
    if (best >= 0) {
        p = c->free_blocks[best].ptr;
        *cap = c->free_blocks[best].cap;
        c->cached_bytes -= *cap;
        c->free_blocks[best] = c->free_blocks[--c->nfree];
        c->reuses++;
        return p;
    }
    r = tc__cu.cu.MemAlloc(&p, want);
    if (r == TC__CUDA_ERROR_OUT_OF_MEMORY && c->nfree > 0) {
        tc__cuda_trim(ctx);
        r = tc__cu.cu.MemAlloc(&p, want);
    }
    if (r != TC__CUDA_SUCCESS) {
        tc__ctx_fail(ctx, tc__cu_result(r), "%s: cuMemAlloc of %llu bytes: %s", what, (unsigned long long)want, tc__cu_errname(r));
        return 0;
    }
    c->allocs++;
    *cap = want;
    return p;
}

/* Gives a block back to the cache (to the driver when the cache cannot
 * grow).  Work queued on the stream that still reads it runs before any
 * later use: the stream orders them. */
TC__FN void tc__cuda_free(tc_ctx *ctx, tc__CUdeviceptr p, size_t cap) {
    tc__cuda_ctx *c = ctx->cuda;
    if (!p || !c) return;
    if (c->nfree == c->free_cap) {
        int n = c->free_cap ? c->free_cap * 2 : 16;
        tc__dblock *nb = (tc__dblock *)TC_REALLOC(c->free_blocks, sizeof *nb * (size_t)n);
        if (!nb) {
            tc__cu.cu.CtxSetCurrent(tc__cu.pctx);
            tc__cu.cu.MemFree(p);
            return;
        }
        c->free_blocks = nb;
        c->free_cap = n;
    }
    c->free_blocks[c->nfree].ptr = p;
    c->free_blocks[c->nfree++].cap = cap;
    c->cached_bytes += cap;
}

/* Host <-> device copies on the context's stream; a copy to the host
 * waits for it (the host reads the data next). */
TC__FN tc_result tc__cuda_copy(tc_ctx *ctx, void *host, tc__CUdeviceptr dev, size_t bytes, int to_host, const char *what) {
    tc__cuda_ctx *c = tc__cuda_ctx_get(ctx, what);
    tc__CUresult r;
    if (!c) return ctx->first_status ? ctx->first_status : TC_ERR_DEVICE;
    if (bytes == 0) return TC_OK;
    r = to_host ? tc__cu.cu.MemcpyDtoHAsync(host, dev, bytes, c->stream)
                : tc__cu.cu.MemcpyHtoDAsync(dev, host, bytes, c->stream);
    if (r == TC__CUDA_SUCCESS) r = tc__cu.cu.StreamSynchronize(c->stream);
    if (r != TC__CUDA_SUCCESS)
        return tc__ctx_fail(ctx, tc__cu_result(r), "%s: copy of %llu bytes %s the device: %s", what, (unsigned long long)bytes,
                            to_host ? "from" : "to", tc__cu_errname(r));
    return TC_OK;
}

TC__FN TC__UNUSED tc_result tc__cuda_copy_d2d(tc_ctx *ctx, tc__CUdeviceptr dst, tc__CUdeviceptr src, size_t bytes, const char *what) {
    tc__cuda_ctx *c = tc__cuda_ctx_get(ctx, what);
    tc__CUresult r;
    if (!c) return TC_ERR_DEVICE;
    if (bytes == 0) return TC_OK;
    r = tc__cu.cu.MemcpyDtoDAsync(dst, src, bytes, c->stream);
    if (r != TC__CUDA_SUCCESS)
        return tc__ctx_fail(ctx, tc__cu_result(r), "%s: device copy of %llu bytes: %s", what, (unsigned long long)bytes, tc__cu_errname(r));
    return TC_OK;
}

TCDEF tc_result tc_cuda_synchronize(tc_ctx *ctx) {
    tc__CUresult r;
    if (!ctx) return TC_ERR_NULL;
    if (!ctx->cuda) return TC_OK; /* nothing was ever queued */
    tc__cu.cu.CtxSetCurrent(tc__cu.pctx);
    r = tc__cu.cu.StreamSynchronize(ctx->cuda->stream);
    return r == TC__CUDA_SUCCESS ? TC_OK : tc__ctx_fail(ctx, tc__cu_result(r), "tc_cuda_synchronize: %s", tc__cu_errname(r));
}

TCDEF int64_t tc_cuda_cached_bytes(const tc_ctx *ctx) {
    return ctx && ctx->cuda ? (int64_t)ctx->cuda->cached_bytes : 0;
}
TCDEF int64_t tc_cuda_alloc_count(const tc_ctx *ctx) { return ctx && ctx->cuda ? ctx->cuda->allocs : 0; }

#else /* TC_NO_CUDA: what the earlier stages call, for a build without it */

typedef unsigned long long tc__CUdeviceptr;
TC__FN tc__CUdeviceptr tc__cuda_alloc(tc_ctx *ctx, size_t bytes, size_t *cap, const char *what) {
    (void)bytes;
    *cap = 0;
    tc__ctx_fail(ctx, TC_ERR_DEVICE, "%s: CUDA was compiled out (TC_NO_CUDA)", what);
    return 0;
}
TC__FN void tc__cuda_free(tc_ctx *ctx, tc__CUdeviceptr p, size_t cap) { (void)ctx, (void)p, (void)cap; }
TC__FN tc_result tc__cuda_copy(tc_ctx *ctx, void *host, tc__CUdeviceptr dev, size_t bytes, int to_host, const char *what) {
    (void)ctx, (void)host, (void)dev, (void)bytes, (void)to_host, (void)what;
    return TC_ERR_DEVICE;
}
TC__FN void tc__cuda_trim(tc_ctx *ctx) { (void)ctx; }
TC__FN void tc__cuda_ctx_destroy(tc_ctx *ctx) { (void)ctx; }
TCDEF int tc_cuda_available(const char **why) {
    if (why) *why = "CUDA was compiled out (TC_NO_CUDA)";
    return 0;
}
TCDEF tc_result tc_cuda_device_info(tc_cuda_info *info) {
    if (info) memset(info, 0, sizeof *info);
    return info ? TC_ERR_DEVICE : TC_ERR_NULL;
}
TCDEF int64_t tc_cuda_cached_bytes(const tc_ctx *ctx) { return (void)ctx, 0; }
TCDEF tc_result tc_cuda_synchronize(tc_ctx *ctx) { return ctx ? TC_OK : TC_ERR_NULL; }
TCDEF int64_t tc_cuda_alloc_count(const tc_ctx *ctx) { return (void)ctx, 0; }

#endif /* TC_NO_CUDA */
