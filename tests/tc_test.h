/* Minimal test harness shared by the test programs.  Each program ends with
 * TC_TEST_SUMMARY(), which prints "N passed, N failed" and returns nonzero on
 * any failure; tests/run_all.sh adds the counts up. */
#ifndef TC_TEST_H
#define TC_TEST_H
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tct_passed, tct_failed, tct_tests_failed;
static const char *tct_current = "";

#define TC_TEST(name) static void name(void)
#define TC_RUN(name)                                                        \
    do {                                                                    \
        int f0_ = tct_failed;                                               \
        tct_current = #name;                                                \
        name();                                                             \
        if (tct_failed == f0_) tct_passed++;                                \
        else { tct_tests_failed++; fprintf(stderr, "FAIL %s\n", #name); } \
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

#define TC_TEST_SUMMARY()                                                   \
    (printf("%d passed, %d failed\n", tct_passed, tct_tests_failed),      \
     tct_tests_failed != 0)
#endif
