/* The implementation for the fuzz targets (fuzz.h), with capped hooks. */
#include <stdlib.h>
#include <stddef.h>

static size_t fz_limit = (size_t)64 << 20;
static long fz_count, fz_fail = -1; /* (one thread: fuzz_ctx has no workers) */

static int fz_refuse(size_t n) { return n > fz_limit || (fz_fail >= 0 && fz_count++ == fz_fail); }
static void *fz_malloc(size_t n) { return fz_refuse(n) ? NULL : malloc(n); }
static void *fz_realloc(void *p, size_t n) { return fz_refuse(n) ? NULL : realloc(p, n); }
#define TC_MALLOC(n) fz_malloc(n)
#define TC_REALLOC(p, n) fz_realloc(p, n)
#define TC_FREE(p) free(p)
#define TCOMPILE_IMPLEMENTATION
#include "fuzz.h"

void fuzz_alloc_limit(size_t bytes) { fz_limit = bytes; }
void fuzz_fail_at(long n) {
    fz_count = 0;
    fz_fail = n;
}
tc_ctx *fuzz_ctx(void) {
    static tc_ctx *ctx;
    if (!ctx) {
        tc_ctx_options o;
        memset(&o, 0, sizeof o);
        o.num_threads = 1;
        o.log_level = TC_LOG_ERROR;
        ctx = tc_ctx_create(&o);
        FUZZ_ASSERT(ctx != NULL);
    }
    return ctx;
}
