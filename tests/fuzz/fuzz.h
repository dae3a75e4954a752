/* Shared by the libFuzzer targets under tests/fuzz/ (see run.sh).  The
 * implementation is compiled once, in fuzz_impl.c, with allocation hooks
 * that refuse large blocks (a fuzzed shape of 2^40 elements is then a
 * clean TC_ERR_OOM instead of the sanitizer's allocation-size report) and
 * can fail the n-th allocation.  One context per process, one thread: an
 * input always runs the same way. */
#ifndef TC_FUZZ_H
#define TC_FUZZ_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../tcompile.h"

#ifdef __cplusplus
extern "C" {
#endif
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_alloc_limit(size_t bytes); /* allocations above it fail          */
void fuzz_fail_at(long n);           /* the n-th allocation from now fails (-1: none) */
tc_ctx *fuzz_ctx(void);
#ifdef __cplusplus
}
#endif

/* An invariant the library broke: a crash libFuzzer reports with its input. */
#define FUZZ_ASSERT(c)                                                            \
    do {                                                                          \
        if (!(c)) {                                                               \
            fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", __FILE__, __LINE__, #c); \
            abort();                                                              \
        }                                                                         \
    } while (0)

/* The fuzz input as a stream of bytes (zeros once it runs out). */
typedef struct fuzz_in {
    const uint8_t *p;
    size_t n;
} fuzz_in;
static inline unsigned fuzz_u8(fuzz_in *in) {
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}
static inline unsigned fuzz_u16(fuzz_in *in) {
    unsigned a = fuzz_u8(in);
    return a | fuzz_u8(in) << 8;
}
#endif
