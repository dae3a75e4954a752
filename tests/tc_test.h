/* Minimal test harness shared by the test programs.  Each program ends with
 * TC_TEST_SUMMARY(), which prints "N passed, N failed, N skipped" and
 * returns nonzero on any failure; tests/run_all.sh adds the counts up.  A
 * test that cannot run here calls TC_SKIP with the reason: it counts as
 * skipped, never as passed. */
#ifndef TC_TEST_H
#define TC_TEST_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tct_passed, tct_failed, tct_tests_failed, tct_skipped, tct_skipping;
static const char *tct_current = "";

#define TC_TEST(name) static void name(void)
#define TC_RUN(name)                                                        \
    do {                                                                    \
        int f0_ = tct_failed;                                               \
        tct_current = #name;                                                \
        tct_skipping = 0;                                                   \
        name();                                                             \
        if (tct_failed != f0_) {                                            \
            tct_tests_failed++;                                             \
            fprintf(stderr, "FAIL %s\n", #name);                            \
        } else if (tct_skipping) tct_skipped++;                             \
        else tct_passed++;                                                  \
    } while (0)

/* Marks the running test skipped (the caller returns), printing
 * "SKIP test: reason"; a check that failed before it still fails it. */
#define TC_SKIP(...)                                                        \
    do {                                                                    \
        printf("SKIP %s: ", tct_current);                                   \
        printf(__VA_ARGS__);                                                \
        printf("\n");                                                       \
        tct_skipping = 1;                                                   \
    } while (0)

/* Under CI (CI=true) .ci/run installs every optional tool a test needs
 * (python3-numpy, python3-torch): a test missing one fails there, and
 * skips elsewhere. */
#define tct_under_ci() (getenv("CI") && strcmp(getenv("CI"), "true") == 0)
#define TC_SKIP_UNLESS_CI(...)                                              \
    do {                                                                    \
        if (tct_under_ci()) {                                               \
            fprintf(stderr, "  %s: needed under CI: ", tct_current);        \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
            tct_failed++;                                                   \
        } else TC_SKIP(__VA_ARGS__);                                        \
    } while (0)

/* A failed check counts once per test (TC_RUN), but each failing check prints. */
#define TC_CHECK(cond)                                                      \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "  %s:%d: %s: check failed: %s\n", __FILE__,   \
                    __LINE__, tct_current, #cond);                          \
            tct_failed++;                                                   \
        }                                                                   \
    } while (0)

#define TC_CHECKF(cond, ...)                                                \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "  %s:%d: %s: ", __FILE__, __LINE__,            \
                    tct_current);                                           \
            fprintf(stderr, __VA_ARGS__);                                   \
            fprintf(stderr, "\n");                                          \
            tct_failed++;                                                   \
        }                                                                   \
    } while (0)

#define TC_TEST_SUMMARY()                                                              \
    (printf("%d passed, %d failed, %d skipped\n", tct_passed, tct_tests_failed, tct_skipped), \
     tct_tests_failed != 0)
#ifdef TCOMPILE_H
/* The largest difference of two f32-readable tensors, measured as `how`
 * says: TCT_REL |a - b| / (1 + |b|) per element (the tolerance fused
 * kernels are held to: a few ulp, for vector math and reassociated sums);
 * TCT_ABS |a - b|; TCT_SCALED |a - b| over 1 + the largest |b| (a chain of
 * contractions, whose small elements are differences of large terms, so a
 * summation order max-autotune picks moves them by more than their own
 * ulps).  NaN in both counts as equal; +inf on an error or a size mismatch. */
enum { TCT_REL, TCT_ABS, TCT_SCALED };
static inline double tct_err(tc_tensor *a, tc_tensor *b, int how) {
    int64_t n = tc_numel(a), i;
    double m = 0, big = 0;
    float *x, *y;
    if (tc_status(a) || tc_status(b) || n != tc_numel(b) || tc_ndim(a) != tc_ndim(b)) return INFINITY;
    x = (float *)malloc(sizeof(float) * (size_t)(n ? n : 1));
    y = (float *)malloc(sizeof(float) * (size_t)(n ? n : 1));
    tc_read(a, TC_F32, x, sizeof(float) * (size_t)n);
    tc_read(b, TC_F32, y, sizeof(float) * (size_t)n);
    for (i = 0; i < n; i++) {
        double d = fabs((double)x[i] - (double)y[i]);
        if (how == TCT_REL) d /= 1.0 + fabs((double)y[i]);
        if (x[i] != x[i] && y[i] != y[i]) d = 0;
        if (d > m || d != d) m = d != d ? INFINITY : d;
        if (fabs((double)y[i]) > big) big = fabs((double)y[i]);
    }
    free(x);
    free(y);
    return how == TCT_SCALED ? m / (1.0 + big) : m;
}
static inline double tct_maxrel(tc_tensor *a, tc_tensor *b) { return tct_err(a, b, TCT_REL); }
static inline double tct_maxdiff(tc_tensor *a, tc_tensor *b) { return tct_err(a, b, TCT_ABS); }
static inline double tct_maxrel_scaled(tc_tensor *a, tc_tensor *b) { return tct_err(a, b, TCT_SCALED); }
#endif
#endif
