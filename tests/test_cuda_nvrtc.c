/* Every CUDA kernel the code generator prints for the graphs of
 * cuda_graphs.h (every pointwise op, every dtype, the reductions and row
 * ops) compiled with the real NVRTC to CUBIN for sm_80 and sm_90, with no
 * local-memory spills (ptxas's report).  NVRTC needs no GPU or driver, so
 * this runs here and in CI; where NVRTC is absent the test is skipped with
 * the reason. */
#define TCOMPILE_TESTING
#define TCOMPILE_IMPLEMENTATION
#include "tcompile.h"
#include "tc_test.h"
#include "cuda_graphs.h"

static tc_ctx *ctx;
static cg_case cases[160];
static int ncases;
static char log_buf[1 << 20];

/* The CUDA C of case c's compiled graph (to free), NULL with a check failed. */
static char *case_source(const cg_case *c) {
    tc_tensor *in[3], *out[1] = {NULL};
    tc_compile_options o;
    tc_fn *f;
    memset(&o, 0, sizeof o);
    o.num_inputs = c->nin;
    o.decompose = 1; /* as the CUDA backend decomposes (attention into matmuls and a softmax) */
    f = tc_compile(ctx, cg_model, (void *)c, &o);
    char *src = NULL;
    size_t n;
    tc_scope_begin(ctx);
    cg_inputs(ctx, c, in);
    /* the first call traces, the second builds and runs the program */
    TC_CHECKF(tc_call(f, in, out) == TC_OK && tc_call(f, in, out) == TC_OK, "%s: %s", c->name, tc_fn_error(f));
    n = tc_fn_cuda_source(f, 0, NULL, 0);
    TC_CHECKF(n > 0, "%s: no CUDA source", c->name);
    if (n > 0 && (src = (char *)malloc(n + 1)) != NULL) tc_fn_cuda_source(f, 0, src, n + 1);
    tc_scope_end(ctx);
    tc_fn_free(f);
    return src;
}

TC_TEST(test_every_graph_compiles_for_sm80_and_sm90) {
    static const int archs[] = {80, 90};
    int i, a, kernels = 0;
    for (i = 0; i < ncases; i++) {
        char *src = case_source(&cases[i]);
        const char *p;
        if (!src) continue;
        for (p = src; (p = strstr(p, "__global__")) != NULL; p++) kernels++;
        TC_CHECKF(strstr(src, "__global__") != NULL, "%s: no kernel in the program", cases[i].name);
        for (a = 0; a < 2; a++) {
            long spill = -1;
            tc_result r = tc__test_nvrtc(src, archs[a], &spill, log_buf, sizeof log_buf);
            TC_CHECKF(r == TC_OK, "%s for sm_%d: %s\n%s", cases[i].name, archs[a], log_buf, src);
            TC_CHECKF(r != TC_OK || spill == 0, "%s for sm_%d: %ld bytes of spills\n%s", cases[i].name, archs[a], spill,
                      log_buf);
        }
        free(src);
    }
    printf("      %d graphs, %d kernels, each compiled for sm_80 and sm_90\n", ncases, kernels);
}

/* The two models' programs (cuda_graphs.h), each of their kernels through
 * NVRTC for sm_80 and sm_90. */
TC_TEST(test_models_compile) {
    model_w w;
    int32_t tok[8] = {3, 14, 15, 9, 2, 6, 5, 35};
    int64_t tshape[2] = {1, 8}, ishape[4] = {2, 3, 12, 12};
    tc_tensor *in[2];
    int m, a, i;
    cg_model_weights(ctx, &w);
    in[0] = tc_from_data(ctx, TC_I32, 2, tshape, tok);
    in[1] = tc_rand_uniform(ctx, 4, ishape, -1, 1, 77);
    for (m = 0; m < 2; m++) {
        tc_compile_options o;
        tc_fn *f;
        tc_tensor *out = NULL;
        char *src;
        size_t n;
        memset(&o, 0, sizeof o);
        o.decompose = 1; /* as on the CUDA backend */
        f = tc_compile(ctx, m ? cnn : gpt_block, &w, &o);
        TC_CHECKF(tc_call(f, &in[m], &out) == TC_OK && tc_call(f, &in[m], &out) == TC_OK, "%s: %s", m ? "cnn" : "gpt", tc_fn_error(f));
        n = tc_fn_cuda_source(f, 0, NULL, 0);
        TC_CHECK(n > 0);
        if ((src = (char *)malloc(n + 1)) != NULL) {
            tc_fn_cuda_source(f, 0, src, n + 1);
            for (a = 80; a <= 90; a += 10) {
                long spill = -1;
                tc_result r = tc__test_nvrtc(src, a, &spill, log_buf, sizeof log_buf);
                TC_CHECKF(r == TC_OK && spill == 0, "%s for sm_%d: %s", m ? "cnn" : "gpt", a, log_buf);
            }
            free(src);
        }
        tc_fn_free(f);
    }
    for (i = 0; i < (int)(sizeof w / sizeof(tc_tensor *)); i++) tc_free(((tc_tensor **)&w)[i]);
}

/* Every instance of the tensor-core GEMM template (f16, bf16 and TF32
 * inputs; B as [n][k] and [k][n]; with and without the bias) in one
 * program, compiled for sm_80 and sm_90: mma.sync, ldmatrix and cp.async
 * assemble, and ptxas reports no spills. */
TC_TEST(test_tensor_core_gemm_compiles) {
    tc__text t;
    int pass, kind, bt, bias, a, n = 0;
    memset(&t, 0, sizeof t);
    for (pass = 0; pass < 2; pass++) {
        n = 0;
        tc__cuda_emit_prelude(&t);
        tc__cuda_emit_mma_prelude(&t);
        for (kind = 1; kind <= 3; kind++)
            for (bt = 0; bt < 2; bt++)
                for (bias = 0; bias < 2; bias++) {
                    char name[32];
                    tc_dtype dt = kind == 1 ? TC_F16 : kind == 2 ? TC_BF16 : TC_F32;
                    snprintf(name, sizeof name, "tcg%d", n++);
                    tc__cuda_emit_gemm(&t, name, dt, dt, dt, bias, dt, kind, bt);
                }
        if (pass == 0) {
            t.cap = t.n + 1;
            t.n = 0;
            t.p = (char *)malloc(t.cap);
            if (!t.p) return;
        }
    }
    for (a = 80; a <= 90; a += 10) {
        long spill = -1;
        tc_result r = tc__test_nvrtc(t.p, a, &spill, log_buf, sizeof log_buf);
        TC_CHECKF(r == TC_OK, "sm_%d: %s\n%s", a, log_buf, t.p);
        TC_CHECKF(r != TC_OK || spill == 0, "sm_%d: %ld bytes of spills\n%s", a, spill, log_buf);
    }
    printf("      %d tensor-core GEMM instances, each compiled for sm_80 and sm_90\n", n);
    free(t.p);
}

/* A program that does not compile gives NVRTC's log naming the line. */
TC_TEST(test_compile_error_has_the_log) {
    long spill;
    tc_result r = tc__test_nvrtc("extern \"C\" __global__ void k(float *p) { p[0] = undeclared_name; }", 90, &spill,
                                 log_buf, sizeof log_buf);
    TC_CHECK(r == TC_ERR_DEVICE);
    TC_CHECKF(strstr(log_buf, "undeclared_name") != NULL && strstr(log_buf, "tcompile.cu(") != NULL, "log: %s", log_buf);
}

int main(void) {
    long spill;
    char why[512];
    if (tc__test_nvrtc("extern \"C\" __global__ void k(float *p) { p[0] = 1.f; }", 80, &spill, why, sizeof why) != TC_OK) {
        printf("SKIP  test_cuda_nvrtc: NVRTC not usable here: %s\n", why);
        printf("0 passed, 0 failed, 1 skipped\n");
        return 0;
    }
    ctx = tc_ctx_create(NULL);
    ncases = cg_cases(cases);
    TC_RUN(test_every_graph_compiles_for_sm80_and_sm90);
    TC_RUN(test_models_compile);
    TC_RUN(test_tensor_core_gemm_compiles);
    TC_RUN(test_compile_error_has_the_log);
    tc_ctx_destroy(ctx);
    return TC_TEST_SUMMARY();
}
