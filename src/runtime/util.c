/* Utilities: results, dtypes, aligned allocation, messages and logging,
 * half-precision conversion, overflow-checked size arithmetic. */

static const char *const tc__result_names[TC_RESULT_COUNT_] = {
    "ok", "invalid argument", "NULL argument", "shape mismatch", "unsupported dtype",
    "axis out of range", "index out of range", "size overflow", "out of memory",
    "unsupported", "invalid state", "I/O error", "device error"};

TCDEF const char *tc_result_string(tc_result r) {
    if ((int)r < 0 || (int)r >= (int)TC_RESULT_COUNT_) return "unknown result";
    return tc__result_names[r];
}

static const char *const tc__dtype_names[TC_DTYPE_COUNT_] = {"f32", "f16", "bf16", "i32", "bool"};
static const size_t tc__dtype_sizes[TC_DTYPE_COUNT_] = {4, 2, 2, 4, 1};

TC__FN int tc__dtype_valid(tc_dtype dt) { return (int)dt >= 0 && (int)dt < (int)TC_DTYPE_COUNT_; }

TCDEF const char *tc_dtype_name(tc_dtype dt) {
    return tc__dtype_valid(dt) ? tc__dtype_names[dt] : "invalid";
}

TC__FN const char *tc__device_name(tc_device d) { return d == TC_CUDA ? "cuda" : "cpu"; }

TCDEF size_t tc_dtype_size(tc_dtype dt) { return tc__dtype_valid(dt) ? tc__dtype_sizes[dt] : 0; }

TC__FN int tc__is_float(tc_dtype dt) { return dt == TC_F32 || dt == TC_F16 || dt == TC_BF16; }

/* ---- aligned allocation over the user's hooks ----------------------------- */

/* The original pointer is kept in the storage struct, so no header is
 * needed in front of the block. */
TC__FN void *tc__alloc_aligned(size_t bytes, void **raw) {
    unsigned char *p;
    *raw = NULL;
    if (bytes > (size_t)-1 - TC__ALIGN) return NULL;
    p = (unsigned char *)TC_MALLOC(bytes + TC__ALIGN);
    *raw = p;
    if (!p) return NULL;
    return p + ((TC__ALIGN - ((uintptr_t)p % TC__ALIGN)) % TC__ALIGN);
}

/* Scratch buffers for kernels (not tensors).  Each block carries a header
 * naming the cache it came from (or none), so tc__scratch_put needs no
 * context.  While a context has a cache (a reduce-overhead program runs),
 * blocks are reused across calls: after warm-up a call allocates nothing. */
#define TC__SCRATCH_SLOTS 32
#define TC__SCRATCH_HDR 16

/* Plain allocation that never asks for 0 bytes (freed with TC_FREE). */
TC__FN void *tc__malloc(size_t bytes) { return TC_MALLOC(bytes ? bytes : 1); }

struct tc__scratch_cache {
    void *blk[TC__SCRATCH_SLOTS];   /* user pointers (after the header) */
    size_t size[TC__SCRATCH_SLOTS];
    int used[TC__SCRATCH_SLOTS];
#ifndef TC_NO_THREADS
    tc__mutex mu;                   /* kernels ask from worker threads too */
#endif
};

TC__FN void tc__cache_lock(tc__scratch_cache *c) {
#ifndef TC_NO_THREADS
    tc__mutex_lock(&c->mu);
#else
    (void)c;
#endif
}
TC__FN void tc__cache_unlock(tc__scratch_cache *c) {
#ifndef TC_NO_THREADS
    tc__mutex_unlock(&c->mu);
#else
    (void)c;
#endif
}

TC__FN void *tc__scratch_raw(tc__scratch_cache *owner, size_t bytes) {
    char *p;
    if (bytes > (size_t)-1 - TC__SCRATCH_HDR) return NULL;
    p = (char *)TC_MALLOC(bytes + TC__SCRATCH_HDR);
    if (!p) return NULL;
    memcpy(p, &owner, sizeof owner);
    return p + TC__SCRATCH_HDR;
}

TC__FN void *tc__scratch_get(tc_ctx *ctx, size_t bytes) {
    tc__scratch_cache *c = ctx ? ctx->scratch : NULL;
    int i, best = -1, empty = -1, victim = -1;
    void *p;
    if (!c) return tc__scratch_raw(NULL, bytes);
    tc__cache_lock(c);
    for (i = 0; i < TC__SCRATCH_SLOTS; i++) {
        if (!c->blk[i]) {
            if (empty < 0) empty = i;
        } else if (!c->used[i]) {
            if (c->size[i] >= bytes && (best < 0 || c->size[i] < c->size[best])) best = i;
            if (victim < 0 || c->size[i] < c->size[victim]) victim = i;
        }
    }
    if (best >= 0) {
        c->used[best] = 1;
        tc__cache_unlock(c);
        return c->blk[best];
    }
    if (empty < 0 && victim >= 0) { /* too small to reuse: replace it */
        TC_FREE((char *)c->blk[victim] - TC__SCRATCH_HDR);
        c->blk[victim] = NULL;
        empty = victim;
    }
    p = tc__scratch_raw(empty >= 0 ? c : NULL, bytes);
    if (p && empty >= 0) {
        c->blk[empty] = p;
        c->size[empty] = bytes;
        c->used[empty] = 1;
    }
    tc__cache_unlock(c);
    return p;
}

TC__FN void tc__scratch_put(void *p) {
    tc__scratch_cache *c;
    int i;
    if (!p) return;
    memcpy(&c, (char *)p - TC__SCRATCH_HDR, sizeof c);
    if (c) {
        tc__cache_lock(c);
        for (i = 0; i < TC__SCRATCH_SLOTS; i++)
            if (c->blk[i] == p) c->used[i] = 0;
        tc__cache_unlock(c);
        return;
    }
    TC_FREE((char *)p - TC__SCRATCH_HDR);
}

TC__FN tc__scratch_cache *tc__cache_new(void) {
    tc__scratch_cache *c = (tc__scratch_cache *)TC_MALLOC(sizeof *c);
    if (!c) return NULL;
    memset(c, 0, sizeof *c);
#ifndef TC_NO_THREADS
    tc__mutex_init(&c->mu);
#endif
    return c;
}

/* Frees the cache and every block (none may be in use). */
TC__FN void tc__cache_free(tc__scratch_cache *c) {
    int i;
    if (!c) return;
    for (i = 0; i < TC__SCRATCH_SLOTS; i++)
        if (c->blk[i]) TC_FREE((char *)c->blk[i] - TC__SCRATCH_HDR);
#ifndef TC_NO_THREADS
    tc__mutex_destroy(&c->mu);
#endif
    TC_FREE(c);
}

TC__FN char *tc__strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = (char *)TC_MALLOC(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* ---- overflow-checked arithmetic ----------------------------------------- */

/* Returns 0 and sets *out on success, -1 when a*b overflows int64. */
TC__FN int tc__mul_ov(int64_t a, int64_t b, int64_t *out) {
    if (a < 0 || b < 0) return -1;
    if (a != 0 && b > INT64_MAX / a) return -1;
    *out = a * b;
    return 0;
}

/* numel of a shape, or -1 on overflow/negative size. */
/* The element count, or -1 when a size is negative or the shape's extent,
 * the product with sizes 0 counted as 1, overflows: the contiguous strides
 * are that product's partial products, and a shape with a 0 among huge
 * sizes has none that fit. */
TC__FN int64_t tc__numel_of(int ndim, const int64_t *shape) {
    int64_t ext = 1;
    int i, empty = 0;
    for (i = 0; i < ndim; i++) {
        if (shape[i] < 0 || tc__mul_ov(ext, shape[i] > 0 ? shape[i] : 1, &ext)) return -1;
        empty |= shape[i] == 0;
    }
    return empty ? 0 : ext;
}

/* snprintf that may truncate by design (messages into fixed buffers). */
TC__FN void tc__fmt(char *dst, size_t cap, const char *fmt, ...) TC__PRINTF(3, 4);
TC__FN void tc__fmt(char *dst, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(dst, cap, fmt, ap);
    va_end(ap);
}

/* Text appended to a caller's buffer, truncating (snprintf semantics): n
 * counts what the whole text needs, so callers can size a second try. */
typedef struct tc__text {
    char *p;
    size_t n, cap;
} tc__text;

TC__FN void tc__text_printf(tc__text *sb, const char *fmt, ...) TC__PRINTF(2, 3);
TC__FN void tc__text_printf(tc__text *sb, const char *fmt, ...) {
    va_list ap;
    int w;
    va_start(ap, fmt);
    w = vsnprintf(sb->p ? sb->p + (sb->n < sb->cap ? sb->n : sb->cap) : NULL,
                  sb->p && sb->n < sb->cap ? sb->cap - sb->n : 0, fmt, ap);
    va_end(ap);
    if (w > 0) sb->n += (size_t)w;
}

/* ---- logging ------------------------------------------------------------- */

TC__FN void tc__log(const tc_ctx *ctx, tc_log_level level, const char *fmt, ...) TC__PRINTF(3, 4);
TC__FN void tc__log(const tc_ctx *ctx, tc_log_level level, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    tc_log_level max = ctx && ctx->opts.log_level != TC_LOG_DEFAULT ? ctx->opts.log_level : TC_LOG_WARN;
    if (level > max) return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (ctx && ctx->opts.log) ctx->opts.log(ctx->opts.log_user, level, buf);
    else fprintf(stderr, "tcompile: %s\n", buf);
}

/* ---- half precision -------------------------------------------------------- */

/* The context keeps its first error (tc_ctx_error). */
TC__FN void tc__ctx_note(tc_ctx *ctx, tc_result r, const char *text) {
    if (ctx->first_status == TC_OK) {
        size_t n = strlen(text);
        if (n >= sizeof ctx->first_err) n = sizeof ctx->first_err - 1; /* keep the start: op and site */
        ctx->first_status = r;
        memcpy(ctx->first_err, text, n);
        ctx->first_err[n] = 0;
    }
}

/* A failure outside an op (the device layer): noted on the context, logged
 * at debug level, and returned. */
TC__FN tc_result tc__ctx_fail(tc_ctx *ctx, tc_result r, const char *fmt, ...) TC__PRINTF(3, 4);
TC__FN tc_result tc__ctx_fail(tc_ctx *ctx, tc_result r, const char *fmt, ...) {
    char text[TC__MSG_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    tc__ctx_note(ctx, r, text);
    tc__log(ctx, TC_LOG_DEBUG, "%s", text);
    return r;
}

TC__FN float tc__bits_to_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

TC__FN uint32_t tc__f32_to_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

TC__FN float tc__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return tc__bits_to_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* zero or subnormal: value = man * 2^-24 */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return tc__bits_to_f32(sign | ((exp + 112) << 23) | (man << 13));
}

/* Round to nearest even, overflow to inf, NaN stays NaN (quiet). */
TC__FN uint16_t tc__f32_to_f16(float f) {
    uint32_t u = tc__f32_to_bits(f);
    uint32_t sign = (u >> 16) & 0x8000, absu = u & 0x7fffffffu;
    if (absu >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (absu > 0x7f800000u ? 0x200 : 0));
    if (absu >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds past 65504 */
    if (absu < 0x38800000u) {
        /* subnormal half (or zero): scale so the float rounding does it */
        float a = tc__bits_to_f32(absu) * 16777216.0f; /* 2^24 */
        uint32_t m = (uint32_t)a;
        float rem = a - (float)m;
        if (rem > 0.5f || (rem == 0.5f && (m & 1))) m++;
        return (uint16_t)(sign | m);
    }
    {
        uint32_t r = absu - 0x38000000u; /* rebias exponent 127 -> 15 */
        uint32_t lsb = (r >> 13) & 1;
        r += 0xfff + lsb;
        return (uint16_t)(sign | (r >> 13));
    }
}

TC__FN float tc__bf16_to_f32(uint16_t h) { return tc__bits_to_f32((uint32_t)h << 16); }

TC__FN uint16_t tc__f32_to_bf16(float f) {
    uint32_t u = tc__f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* f32 -> i32 as documented: truncate toward zero, NaN -> 0, saturate. */
TC__FN int32_t tc__f32_to_i32(float v) {
    if (v != v) return 0;
    if (v >= 2147483647.0f) return INT32_MAX;
    if (v <= -2147483648.0f) return INT32_MIN;
    return (int32_t)v;
}

/* Element load/store through a dtype, as double (exact for every dtype). */
TC__FN double tc__load(const void *base, tc_dtype dt, int64_t i) {
    switch (dt) {
    case TC_F32: return ((const float *)base)[i];
    case TC_F16: return tc__f16_to_f32(((const uint16_t *)base)[i]);
    case TC_BF16: return tc__bf16_to_f32(((const uint16_t *)base)[i]);
    case TC_I32: return ((const int32_t *)base)[i];
    case TC_BOOL: return ((const unsigned char *)base)[i] ? 1.0 : 0.0;
    default: return 0.0;
    }
}

TC__FN void tc__store(void *base, tc_dtype dt, int64_t i, double v) {
    switch (dt) {
    case TC_F32: ((float *)base)[i] = (float)v; break;
    case TC_F16: ((uint16_t *)base)[i] = tc__f32_to_f16((float)v); break;
    case TC_BF16: ((uint16_t *)base)[i] = tc__f32_to_bf16((float)v); break;
    case TC_I32:
        ((int32_t *)base)[i] = v != v ? 0 : v >= 2147483647.0 ? INT32_MAX : v <= -2147483648.0 ? INT32_MIN : (int32_t)v;
        break;
    case TC_BOOL: ((unsigned char *)base)[i] = (unsigned char)(v != 0.0); break;
    default: break;
    }
}
