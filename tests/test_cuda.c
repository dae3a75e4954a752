/* The CUDA backend: the loader's failure paths (each in a child process of
 * its own, since the driver is loaded once per process), and, through the
 * SIMT emulator standing in for the driver and NVRTC (tests/cuda_emu/, its
 * library's path in TCEMU_LIB), device tensors: copies both ways, views,
 * element access, the caching allocator, errors on mixed devices, and what
 * is not built yet failing cleanly.  Without the emulator those tests are
 * skipped with the reason printed. */
#define _POSIX_C_SOURCE 200809L
#define TCOMPILE_TESTING /* the GEMM template's test switches (tc__cu_plant_frag, tc__cu_test_sm) */
#define TCOMPILE_IMPLEMENTATION
#include "tcompile.h"
#include "tc_test.h"
#include "cuda_graphs.h"

#include <dlfcn.h>
#include "cuda_emu/tcemu.h"
#include <sys/wait.h>
#include <unistd.h>

static const char *emu_lib; /* the emulator, when built */

/* ---- the loader, one process per scenario ---------------------------------- */

/* Runs fn in a child with the given library overrides; its exit code: 0
 * when fn's checks held. */
static int in_child(const char *cuda_lib, const char *nvrtc_lib, int (*fn)(void)) {
    pid_t pid;
    int st = 0;
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        if (cuda_lib) setenv("TC_CUDA_LIB", cuda_lib, 1);
        else unsetenv("TC_CUDA_LIB");
        if (nvrtc_lib) setenv("TC_NVRTC_LIB", nvrtc_lib, 1);
        else unsetenv("TC_NVRTC_LIB");
        _exit(fn());
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static const char *want_in_why; /* what the child expects the reason to say */

static int child_unavailable(void) {
    const char *why = NULL;
    tc_ctx *ctx;
    tc_tensor *x, *d;
    tc_cuda_info info;
    int64_t shape[1] = {4};
    int ok = 1;
    if (tc_cuda_available(&why) != 0 || !why || !strstr(why, want_in_why)) {
        fprintf(stderr, "  available or wrong reason: '%s' (wanted '%s')\n", why ? why : "(null)", want_in_why);
        ok = 0;
    }
    if (tc_cuda_device_info(&info) != TC_ERR_DEVICE) ok = 0;
    /* a request for the device is a clean error naming the call site */
    ctx = tc_ctx_create(NULL);
    x = tc_ones(ctx, TC_F32, 1, shape);
    d = tc_to(ctx, x, TC_CUDA);
    if (tc_status(d) != TC_ERR_DEVICE || !strstr(tc_error(d), "tc_to (") || !strstr(tc_error(d), "test_cuda.c:") ||
        !strstr(tc_error(d), want_in_why)) {
        fprintf(stderr, "  tc_to: %s / %s\n", tc_result_string(tc_status(d)), tc_error(d));
        ok = 0;
    }
    if (tc_device_of(d) != TC_CPU || tc_ctx_status(ctx) != TC_ERR_DEVICE) ok = 0;
    tc_ctx_destroy(ctx);
    return ok ? 0 : 1;
}

TC_TEST(test_loader_missing_driver) {
    want_in_why = "/nonexistent/libcuda.so.1";
    TC_CHECK(in_child("/nonexistent/libcuda.so.1", NULL, child_unavailable) == 0);
}

TC_TEST(test_loader_library_without_symbols) {
    /* a library that loads but is no driver: the first symbol is missing */
    want_in_why = "has no cuInit";
    TC_CHECK(in_child("libm.so.6", NULL, child_unavailable) == 0);
}

TC_TEST(test_loader_missing_nvrtc) {
    want_in_why = "no NVRTC";
    TC_CHECK(in_child(emu_lib, "/nonexistent/libnvrtc.so.12", child_unavailable) == 0);
}

TC_TEST(test_loader_default_names) {
    /* this machine has no driver (CI's neither): the default search fails
     * cleanly; where a GPU is present it must work */
    want_in_why = "no CUDA driver";
    TC_CHECK(in_child(NULL, NULL, child_unavailable) == 0);
}

/* ---- device tensors, through the emulator ---------------------------------- */

static tc_ctx *ctx;

/* Runs a test on the device under test: the emulator when it is built
 * (TCEMU_LIB), else a real GPU when one is here; or prints why it is
 * skipped (a skip is not a pass).  RUN_EMU: tests of the emulator's
 * counters and fault injection, which a real driver has not. */
static int real_gpu;
#define RUN_DEV(name)                                                                                         \
    do {                                                                                                      \
        if (emu_lib || real_gpu) TC_RUN(name);                                                                \
        else {                                                                                                \
            printf("SKIP  %s: no device: the SIMT emulator is not built (TCEMU_LIB unset; tests/run_all.sh "   \
                   "builds it) and no GPU is here\n", #name);                                                 \
            tct_skipped++;                                                                                    \
        }                                                                                                     \
    } while (0)
#define RUN_EMU(name)                                                                                         \
    do {                                                                                                      \
        if (emu_lib) TC_RUN(name);                                                                            \
        else {                                                                                                \
            printf("SKIP  %s: needs the SIMT emulator's counters or fault injection (TCEMU_LIB unset)\n", #name); \
            tct_skipped++;                                                                                    \
        }                                                                                                     \
    } while (0)

TC_TEST(test_device_info) {
    tc_cuda_info info;
    const char *why = "x";
    TC_CHECK(tc_cuda_available(&why) == 1 && why && !*why);
    TC_CHECK(tc_cuda_device_info(&info) == TC_OK);
    TC_CHECK(info.sm >= 80 && info.multiprocessors > 0 && info.nvrtc_max_sm >= 80);
    TC_CHECK(!emu_lib || strstr(info.driver_path, "tcemu") != NULL);
}

TC_TEST(test_round_trip) {
    int64_t shape[2] = {3, 5};
    float src[15], back[15];
    int i;
    tc_tensor *x, *d, *h;
    for (i = 0; i < 15; i++) src[i] = (float)i * 0.5f - 3;
    x = tc_from_data(ctx, TC_F32, 2, shape, src);
    d = tc_to(ctx, x, TC_CUDA);
    TC_CHECK(tc_status(d) == TC_OK && tc_device_of(d) == TC_CUDA && tc_device_of(x) == TC_CPU);
    TC_CHECK(tc_data(d) == NULL);                   /* not the host's to address */
    TC_CHECK(tc_to(ctx, d, TC_CUDA) == d);          /* already there */
    h = tc_to(ctx, d, TC_CPU);
    TC_CHECK(tc_device_of(h) == TC_CPU && tc_read(h, TC_F32, back, sizeof back) == TC_OK);
    TC_CHECK(memcmp(src, back, sizeof src) == 0);
    memset(back, 0, sizeof back);
    TC_CHECK(tc_read(d, TC_F32, back, sizeof back) == TC_OK && memcmp(src, back, sizeof src) == 0);
    {
        int64_t at[2] = {2, 3};
        TC_CHECK(tc_get(d, at) == src[13]);
        TC_CHECK(tc_set(d, at, 42.0) == TC_OK && tc_get(d, at) == 42.0);
    }
    tc_ctx_clear_error(ctx);
}

TC_TEST(test_views_and_dtypes) {
    int64_t shape[2] = {4, 6}, four[1] = {4};
    float src[24], got[24];
    double want;
    int i, j;
    tc_tensor *x, *d, *t, *col, *h;
    for (i = 0; i < 24; i++) src[i] = (float)(i * i % 17) - 8;
    x = tc_from_data(ctx, TC_F32, 2, shape, src);
    d = tc_to(ctx, x, TC_CUDA);
    t = tc_transpose(ctx, d, 0, 1);           /* a view on the device */
    TC_CHECK(tc_device_of(t) == TC_CUDA && !tc_is_contiguous(t));
    TC_CHECK(tc_read(t, TC_F32, got, sizeof got) == TC_OK);
    for (i = 0; i < 6; i++)
        for (j = 0; j < 4; j++) TC_CHECK(got[i * 4 + j] == src[j * 6 + i]);
    /* a strided view read as another dtype and moved back */
    col = tc_select(ctx, d, 1, 2);
    h = tc_to(ctx, col, TC_CPU);
    for (i = 0; i < 4; i++) {
        int64_t at[1] = {i};
        want = src[i * 6 + 2];
        TC_CHECK(tc_get(h, at) == want);
    }
    {
        int32_t iv[4];
        TC_CHECK(tc_read(col, TC_I32, iv, sizeof iv) == TC_OK);
        for (i = 0; i < 4; i++) TC_CHECK(iv[i] == (int32_t)src[i * 6 + 2]);
        /* a write through a strided view lands in the right places only */
        for (i = 0; i < 4; i++) iv[i] = 100 + i;
        TC_CHECK(tc_write(col, TC_I32, iv, sizeof iv) == TC_OK);
        TC_CHECK(tc_read(d, TC_F32, got, sizeof got) == TC_OK);
        for (i = 0; i < 24; i++) TC_CHECK(got[i] == (i % 6 == 2 ? (float)(100 + i / 6) : src[i]));
    }
    /* a host tensor that is a broadcast view (stride 0) moved up */
    {
        float one = 7;
        int64_t sc[1] = {1};
        tc_tensor *s = tc_from_data(ctx, TC_F32, 1, sc, &one);
        tc_tensor *e = tc_expand(ctx, s, 1, four);
        tc_tensor *de = tc_to(ctx, e, TC_CUDA);
        float v[4];
        TC_CHECK(tc_read(de, TC_F32, v, sizeof v) == TC_OK && v[0] == 7 && v[3] == 7);
    }
    /* f16 and bf16 keep their bits */
    {
        tc_tensor *hf = tc_cast(ctx, x, TC_F16), *dh = tc_to(ctx, hf, TC_CUDA);
        uint16_t a[24], b[24];
        TC_CHECK(tc_read(hf, TC_F16, a, sizeof a) == TC_OK && tc_read(dh, TC_F16, b, sizeof b) == TC_OK);
        TC_CHECK(memcmp(a, b, sizeof a) == 0);
    }
}

TC_TEST(test_item_and_empty) {
    int64_t zero[2] = {0, 3};
    tc_tensor *s = tc_to(ctx, tc_scalar(ctx, 2.5), TC_CUDA), *z;
    float dummy;
    TC_CHECK(tc_item(s) == 2.5);
    z = tc_to(ctx, tc_zeros(ctx, TC_F32, 2, zero), TC_CUDA);
    TC_CHECK(tc_status(z) == TC_OK && tc_numel(z) == 0 && tc_read(z, TC_F32, &dummy, 0) == TC_OK);
}

TC_TEST(test_mixed_devices_rejected) {
    int64_t shape[1] = {8};
    tc_tensor *a, *b, *r;
    a = tc_ones(ctx, TC_F32, 1, shape);
    b = tc_to(ctx, a, TC_CUDA);
    r = tc_add(ctx, a, b);
    TC_CHECK(tc_status(r) == TC_ERR_INVALID_ARG);
    TC_CHECKF(strstr(tc_error(r), "tc_add (") && strstr(tc_error(r), "test_cuda.c:") &&
                  strstr(tc_error(r), "different devices") && strstr(tc_error(r), "cuda"),
              "message: %s", tc_error(r));
    tc_ctx_clear_error(ctx);
}

static void add_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    (void)user;
    out[0] = tc_add(c, in[0], in[0]);
}

/* A function runs on its first call's inputs' device: inputs on the other
 * device later, or a parameter there, are refused naming them. */
TC_TEST(test_devices_of_a_compiled_function) {
    int64_t shape[1] = {8};
    tc_tensor *h = tc_ones(ctx, TC_F32, 1, shape), *in[1], *out[1] = {NULL};
    tc_fn *f = tc_compile(ctx, add_fn, NULL, NULL);
    in[0] = tc_to(ctx, h, TC_CUDA);
    TC_CHECK(tc_call(f, in, out) == TC_OK && tc_device_of(out[0]) == TC_CUDA && tc_item(tc_sum(ctx, out[0], 0, NULL, 0)) == 16);
    in[0] = h;
    TC_CHECK(tc_call(f, in, out) == TC_ERR_INVALID_ARG);
    TC_CHECKF(strstr(tc_fn_error(f), "input 0 is on cpu") != NULL, "%s", tc_fn_error(f));
    TC_CHECK(tc_status(out[0]) == TC_ERR_INVALID_ARG);
    tc_fn_free(f);
    tc_ctx_clear_error(ctx);
}

static tc_tensor *host_weight;
static void weighted_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    (void)user;
    out[0] = tc_rms_norm(c, tc_mul(c, in[0], host_weight), 1, host_weight, 1e-6);
}

/* A function on the GPU reading a host tensor (a weight): uploaded once,
 * on the first trace, and read from the device after that. */
TC_TEST(test_host_parameters_are_uploaded_once) {
    int64_t shape[2] = {6, 50}, row[1] = {50};
    tc_tensor *x = tc_rand_uniform(ctx, 2, shape, -1, 1, 5), *dx = tc_to(ctx, x, TC_CUDA), *want = NULL, *got = NULL;
    tc_fn *f = tc_compile(ctx, weighted_fn, NULL, NULL), *ref = tc_compile(ctx, weighted_fn, NULL, NULL);
    int call;
    host_weight = tc_rand_uniform(ctx, 1, row, 0.5, 2, 6);
    TC_CHECK(tc_call(ref, &x, &want) == TC_OK);
    for (call = 0; call < 3; call++) {
        TC_CHECKF(tc_call(f, &dx, &got) == TC_OK, "call %d: %s", call, tc_fn_error(f));
        TC_CHECKF(tct_maxrel(got, want) <= 2e-5, "call %d: %.3g", call, tct_maxrel(got, want));
    }
    tc_fn_free(f);
    tc_fn_free(ref);
    tc_free(host_weight);
}

/* Two small models (tests/cuda_graphs.h's gpt_block and cnn), as the
 * examples build them, with their weights on the device: compiled on CUDA
 * in each mode against the CPU. */
TC_TEST(test_models_on_device) {
    model_w w, dw;
    tc_tensor **src = (tc_tensor **)&w, **dst = (tc_tensor **)&dw;
    int32_t tok[8] = {3, 14, 15, 9, 2, 6, 5, 35};
    int64_t tshape[2] = {1, 8}, ishape[4] = {2, 3, 12, 12};
    tc_tensor *toks = tc_from_data(ctx, TC_I32, 2, tshape, tok), *img = tc_rand_uniform(ctx, 4, ishape, -1, 1, 77);
    int i, m, mode;
    cg_model_weights(ctx, &w);
    for (i = 0; i < (int)(sizeof w / sizeof(tc_tensor *)); i++) dst[i] = tc_persist(tc_to(ctx, src[i], TC_CUDA));
    for (m = 0; m < 2; m++)
        for (mode = 0; mode < 2; mode++) {
            tc_model_fn fn = m ? cnn : gpt_block;
            tc_tensor *x = m ? img : toks, *dx = tc_to(ctx, x, TC_CUDA), *want = NULL, *got = NULL;
            tc_compile_options o;
            tc_fn *fc, *fg;
            int call;
            memset(&o, 0, sizeof o);
            o.mode = mode ? TC_MODE_REDUCE_OVERHEAD : TC_MODE_DEFAULT;
            fc = tc_compile(ctx, fn, &w, NULL);
            fg = tc_compile(ctx, fn, &dw, &o);
            TC_CHECKF(tc_call(fc, &x, &want) == TC_OK, "%s on the CPU: %s", m ? "cnn" : "gpt", tc_fn_error(fc));
            for (call = 0; call < 4; call++) {
                TC_CHECKF(tc_call(fg, &dx, &got) == TC_OK, "%s mode %d call %d: %s", m ? "cnn" : "gpt", mode, call, tc_fn_error(fg));
                TC_CHECKF(tct_maxrel_scaled(got, want) <= 2e-5, "%s mode %d call %d: %.3g", m ? "cnn" : "gpt", mode, call,
                          tct_maxrel_scaled(got, want));
            }
            tc_fn_free(fc);
            tc_fn_free(fg);
        }
    for (i = 0; i < (int)(sizeof w / sizeof(tc_tensor *)); i++) tc_free(src[i]), tc_free(dst[i]);
}

/* Review findings, each against the CPU: norms of values past 1.8e19 (the
 * scaled second sum of squares), integer reductions past 2^24, a strided
 * bias, an eager op over more shapes than one function keeps. */
TC_TEST(test_review_cases) {
    int64_t shape[2] = {5, 33}, row[1] = {33}, ishape[2] = {2, 3}, bshape[2] = {4, 2}, wshape[2] = {4, 6}, xs[2] = {3, 6};
    int32_t iv[6] = {16777217, 0, 3, 16777216, 16777217, -5};
    int ax1[1] = {1}, n;
    tc_tensor *x = tc_mul_scalar(ctx, tc_rand_uniform(ctx, 2, shape, -1, 1, 9), 3e19), *w = tc_rand_uniform(ctx, 1, row, 0.5, 1.5, 10);
    tc_tensor *dx = tc_to(ctx, x, TC_CUDA), *dw = tc_to(ctx, w, TC_CUDA), *a, *b;
    a = tc_rms_norm(ctx, dx, 1, dw, 1e-6), b = tc_rms_norm(ctx, x, 1, w, 1e-6);
    TC_CHECKF(tct_maxrel(a, b) <= 2e-5, "rms_norm of large values: %.3g (%s)", tct_maxrel(a, b), tc_error(a));
    a = tc_layer_norm(ctx, dx, 1, dw, NULL, 1e-5), b = tc_layer_norm(ctx, x, 1, w, NULL, 1e-5);
    TC_CHECKF(tct_maxrel(a, b) <= 2e-5, "layer_norm of large values: %.3g", tct_maxrel(a, b));
    {
        tc_tensor *ih = tc_from_data(ctx, TC_I32, 2, ishape, iv), *id = tc_to(ctx, ih, TC_CUDA);
        TC_CHECK(tct_maxdiff(tc_sum(ctx, id, 1, ax1, 0), tc_sum(ctx, ih, 1, ax1, 0)) == 0);
        TC_CHECK(tct_maxdiff(tc_max(ctx, id, 1, ax1, 0), tc_max(ctx, ih, 1, ax1, 0)) == 0);
        TC_CHECK(tct_maxdiff(tc_argmax(ctx, id, 1, ax1, 0), tc_argmax(ctx, ih, 1, ax1, 0)) == 0);
    }
    {   /* linear with a bias that is a strided view (a column of a matrix) */
        tc_tensor *bm = tc_rand_uniform(ctx, 2, bshape, -1, 1, 11), *wm = tc_rand_uniform(ctx, 2, wshape, -1, 1, 12);
        tc_tensor *xm = tc_rand_uniform(ctx, 2, xs, -1, 1, 13);
        a = tc_linear(ctx, tc_to(ctx, xm, TC_CUDA), tc_to(ctx, wm, TC_CUDA), tc_select(ctx, tc_to(ctx, bm, TC_CUDA), 1, 1));
        b = tc_linear(ctx, xm, wm, tc_select(ctx, bm, 1, 1));
        TC_CHECKF(tct_maxrel(a, b) <= 1e-5, "strided bias: %.3g", tct_maxrel(a, b));
    }
    for (n = 1; n <= 70; n++) { /* more shapes than one eager function keeps */
        int64_t s1[1];
        int ok;
        s1[0] = n;
        tc_scope_begin(ctx);
        a = tc_add_scalar(ctx, tc_to(ctx, tc_ones(ctx, TC_F32, 1, s1), TC_CUDA), 1.0);
        ok = tc_status(a) == TC_OK && tc_item(tc_sum(ctx, a, 0, NULL, 0)) == 2.0 * n;
        TC_CHECKF(ok, "shape %d: %s", n, tc_error(a));
        tc_scope_end(ctx);
        if (!ok) break;
    }
    tc_ctx_clear_error(ctx);
}

/* The caching allocator: after the first round, the same sizes make no
 * new device allocations. */
TC_TEST(test_caching_allocator) {
    int64_t shape[1] = {1000}, shape2[1] = {1100};
    int64_t n0, round;
    tc_tensor *x;
    x = tc_ones(ctx, TC_F32, 1, shape);
    tc_scope_begin(ctx);
    tc_to(ctx, x, TC_CUDA);
    tc_scope_end(ctx);
    n0 = tc_cuda_alloc_count(ctx);
    TC_CHECK(tc_cuda_cached_bytes(ctx) >= 4000);
    for (round = 0; round < 5; round++) {
        tc_scope_begin(ctx);
        tc_to(ctx, x, TC_CUDA);
        tc_to(ctx, tc_ones(ctx, TC_F32, 1, shape2), TC_CUDA); /* same 512-byte class: 4400 B rounds to 4608 */
        tc_scope_end(ctx);
    }
    TC_CHECKF(tc_cuda_alloc_count(ctx) <= n0 + 1, "%lld allocations after warm-up",
              (long long)(tc_cuda_alloc_count(ctx) - n0));
    tc_ctx_empty_cache(ctx);
    TC_CHECK(tc_cuda_cached_bytes(ctx) == 0);
}

/* Every graph of cuda_graphs.h compiled on the CUDA backend (inputs moved
 * up) against the same function compiled on the CPU: results within the
 * fused kernels' tolerance, NaN where the CPU has NaN. */
static tc_fn *cg_compile(const cg_case *c, tc_mode mode) {
    tc_compile_options o;
    memset(&o, 0, sizeof o);
    o.num_inputs = c->nin;
    o.mode = mode;
    return tc_compile(ctx, cg_model, (void *)c, &o);
}

static double cg_tol(const cg_case *c) {
    /* vector math within a few ulp; sums reassociate over long rows */
    return c->kind >= CG_SUM0 ? 2e-5 : 1e-5;
}

TC_TEST(test_compiled_graphs_match_cpu) {
    static cg_case cs[160];
    int n = cg_cases(cs), i, calls;
    for (i = 0; i < n; i++) {
        const cg_case *c = &cs[i];
        tc_tensor *in[3], *din[3], *want = NULL, *got = NULL;
        tc_fn *fc = cg_compile(c, TC_MODE_DEFAULT), *fg = cg_compile(c, TC_MODE_DEFAULT);
        int k;
        double err;
        tc_scope_begin(ctx);
        cg_inputs(ctx, c, in);
        for (k = 0; k < c->nin; k++) din[k] = tc_to(ctx, in[k], TC_CUDA);
        TC_CHECKF(tc_call(fc, in, &want) == TC_OK, "%s on the CPU: %s", c->name, tc_fn_error(fc));
        /* the first call traces, the next ones run the program (built and
         * compiled on the second) */
        for (calls = 0; calls < 3; calls++)
            TC_CHECKF(tc_call(fg, din, &got) == TC_OK, "%s on CUDA (call %d): %s", c->name, calls + 1, tc_fn_error(fg));
        TC_CHECKF(tc_device_of(got) == TC_CUDA, "%s: the result is on %s", c->name, tc_device_of(got) ? "cuda" : "cpu");
        TC_CHECKF(tc_type(got) == tc_type(want) && tc_ndim(got) == tc_ndim(want), "%s: %s vs %s", c->name,
                  tc_dtype_name(tc_type(got)), tc_dtype_name(tc_type(want)));
        /* a contraction sums in another order: scaled by the result's size */
        err = c->kind >= CG_MATMUL ? tct_maxrel_scaled(got, want) : tct_maxrel(got, want);
        TC_CHECKF(err <= cg_tol(c), "%s: max relative error %.3g", c->name, err);
        tc_scope_end(ctx);
        tc_fn_free(fc);
        tc_fn_free(fg);
    }
}

/* The same ops eagerly on device tensors: one generated kernel each. */
TC_TEST(test_eager_ops_on_device) {
    int64_t shape[2] = {19, 67}, row[1] = {67};
    tc_tensor *x = tc_rand_uniform(ctx, 2, shape, -2, 2, 7), *w = tc_rand_uniform(ctx, 1, row, 0.5, 1.5, 8);
    tc_tensor *dx = tc_to(ctx, x, TC_CUDA), *dw = tc_to(ctx, w, TC_CUDA);
    int ax[1] = {1};
    struct {
        const char *name;
        tc_tensor *cpu, *gpu;
    } r[6];
    int i, n = 0;
    r[n].name = "exp", r[n].cpu = tc_exp(ctx, x), r[n++].gpu = tc_exp(ctx, dx);
    r[n].name = "add (broadcast)", r[n].cpu = tc_add(ctx, x, w), r[n++].gpu = tc_add(ctx, dx, dw);
    r[n].name = "softmax", r[n].cpu = tc_softmax(ctx, x, 1), r[n++].gpu = tc_softmax(ctx, dx, 1);
    r[n].name = "sum", r[n].cpu = tc_sum(ctx, x, 1, ax, 0), r[n++].gpu = tc_sum(ctx, dx, 1, ax, 0);
    r[n].name = "rms_norm", r[n].cpu = tc_rms_norm(ctx, x, 1, w, 1e-6), r[n++].gpu = tc_rms_norm(ctx, dx, 1, dw, 1e-6);
    r[n].name = "transpose then exp", r[n].cpu = tc_exp(ctx, tc_transpose(ctx, x, 0, 1)),
    r[n++].gpu = tc_exp(ctx, tc_transpose(ctx, dx, 0, 1));
    for (i = 0; i < n; i++) {
        TC_CHECKF(tc_status(r[i].gpu) == TC_OK && tc_device_of(r[i].gpu) == TC_CUDA, "%s: %s", r[i].name, tc_error(r[i].gpu));
        TC_CHECKF(tct_maxrel(r[i].gpu, r[i].cpu) <= 2e-5, "%s: %.3g", r[i].name, tct_maxrel(r[i].gpu, r[i].cpu));
    }
    /* scalar arguments go with the op to the device */
    {
        tc_tensor *g = tc_add_scalar(ctx, tc_mul_scalar(ctx, dx, 0.5), -1.25), *c = tc_add_scalar(ctx, tc_mul_scalar(ctx, x, 0.5), -1.25);
        TC_CHECKF(tc_status(g) == TC_OK && tc_device_of(g) == TC_CUDA && tct_maxrel(g, c) == 0, "scalar ops: %s", tc_error(g));
        g = tc_gt_scalar(ctx, dx, 0.25);
        c = tc_gt_scalar(ctx, x, 0.25);
        TC_CHECKF(tc_type(g) == TC_BOOL && tct_maxrel(g, c) == 0, "gt_scalar: %s", tc_error(g));
    }
    /* a matmul on the GEMM kernel */
    {
        tc_tensor *m = tc_matmul(ctx, dx, tc_transpose(ctx, dx, 0, 1)), *mc = tc_matmul(ctx, x, tc_transpose(ctx, x, 0, 1));
        TC_CHECKF(tc_status(m) == TC_OK && tct_maxrel_scaled(m, mc) <= 1e-5, "matmul: %s", tc_error(m));
    }
    /* what the GPU cannot do yet fails cleanly, naming the op and the site */
    {
        tc_tensor *m = tc_copy(ctx, tc_to(ctx, tc_zeros(ctx, TC_F32, 2, shape), TC_CUDA), dx);
        TC_CHECKF(tc_status(m) == TC_ERR_UNSUPPORTED && strstr(tc_error(m), "tc_copy (") && strstr(tc_error(m), "test_cuda.c:"),
                  "copy: %s / %s", tc_result_string(tc_status(m)), tc_error(m));
    }
    /* an index out of range is TC_ERR_INDEX, checked on the device */
    {
        int32_t bad[3] = {1, 70, 2};
        int64_t three[1] = {3};
        tc_tensor *idx = tc_to(ctx, tc_from_data(ctx, TC_I32, 1, three, bad), TC_CUDA);
        tc_tensor *m = tc_index_select(ctx, dx, 1, idx);
        TC_CHECKF(tc_status(m) == TC_ERR_INDEX && strstr(tc_error(m), "index_select"), "index: %s / %s",
                  tc_result_string(tc_status(m)), tc_error(m));
    }
    tc_ctx_clear_error(ctx);
}

/* The emulator's counters (tests/cuda_emu/tcemu.h). */
static tcemu_stats_t emu_stats(void) {
    tcemu_stats_t st;
    void *h = dlopen(emu_lib, RTLD_NOW | RTLD_NOLOAD);
    void (*fn)(tcemu_stats_t *) = NULL;
    memset(&st, 0, sizeof st);
    if (h) *(void **)&fn = dlsym(h, "tcemu_stats");
    if (fn) fn(&st);
    else TC_CHECKF(0, "tcemu_stats not found in %s", emu_lib);
    if (h) dlclose(h);
    return st;
}

static int emu_fail_after(const char *name, int n) {
    void *h = dlopen(emu_lib, RTLD_NOW | RTLD_NOLOAD);
    int (*fn)(const char *, int) = NULL;
    int r = -1;
    if (h) *(void **)&fn = dlsym(h, "tcemu_fail_after");
    if (fn) r = fn(name, n);
    if (h) dlclose(h);
    return r;
}

static void block_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    (void)user;
    /* softmax, then a layer norm of it scaled: two row kernels, a pointwise one */
    out[0] = tc_mul_scalar(c, tc_layer_norm(c, tc_softmax(c, in[0], -1), 1, NULL, NULL, 1e-5), 0.5);
}

/* reduce-overhead on CUDA: the second run captures the launches, later
 * calls replay one graph each, reading each call's inputs (new values,
 * new memory) through the program's static copies. */
TC_TEST(test_reduce_overhead_replays_a_cuda_graph) {
    int64_t shape[2] = {33, 300};
    tc_compile_options o;
    tc_fn *f, *ref;
    tc_explain_info info;
    tcemu_stats_t s0, s1;
    int call;
    memset(&o, 0, sizeof o);
    memset(&s0, 0, sizeof s0);
    o.mode = TC_MODE_REDUCE_OVERHEAD;
    f = tc_compile(ctx, block_fn, NULL, &o);
    ref = tc_compile(ctx, block_fn, NULL, NULL);
    for (call = 0; call < 6; call++) {
        tc_tensor *x, *dx, *want = NULL, *got = NULL;
        tc_scope_begin(ctx);
        x = tc_rand_uniform(ctx, 2, shape, -4, 4, 100u + (unsigned)call);
        dx = tc_to(ctx, x, TC_CUDA); /* new memory each call */
        if (call == 3 && emu_lib) s0 = emu_stats();
        TC_CHECKF(tc_call(f, &dx, &got) == TC_OK, "call %d: %s", call, tc_fn_error(f));
        TC_CHECK(tc_call(ref, &x, &want) == TC_OK);
        TC_CHECKF(tct_maxrel(got, want) <= 2e-5, "call %d: %.3g", call, tct_maxrel(got, want));
        tc_scope_end(ctx);
    }
    s1 = emu_lib ? emu_stats() : s0;
    TC_CHECKF(!emu_lib || s1.graph_launches - s0.graph_launches == 3, "%lld graph launches in calls 4-6",
              s1.graph_launches - s0.graph_launches);
    TC_CHECKF(!emu_lib || s1.launches == s0.launches, "%lld kernels launched one by one after the capture", s1.launches - s0.launches);
    TC_CHECK(tc_explain(f, &info, NULL, 0) == TC_OK && info.device == TC_CUDA && info.cuda_graphs == 1 &&
             info.cuda_graph_failures == 0);
    tc_fn_free(f);
    tc_fn_free(ref);
}

static tc_tensor *emb_table;
static void embed_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    (void)user;
    out[0] = tc_mul_scalar(c, tc_embedding(c, emb_table, in[0]), 2.0);
}

/* An index out of range inside a replayed CUDA graph is TC_ERR_INDEX too:
 * the graph's flags are read back after each replay. */
TC_TEST(test_index_checked_in_a_replay) {
    int64_t wshape[2] = {10, 4}, ishape[1] = {3};
    int32_t good[3] = {1, 9, 0}, bad[3] = {1, 10, 0};
    tc_compile_options o;
    tc_fn *f;
    tc_tensor *out = NULL;
    int call;
    memset(&o, 0, sizeof o);
    o.mode = TC_MODE_REDUCE_OVERHEAD;
    emb_table = tc_persist(tc_to(ctx, tc_rand_uniform(ctx, 2, wshape, -1, 1, 3), TC_CUDA));
    f = tc_compile(ctx, embed_fn, NULL, &o);
    for (call = 0; call < 5; call++) {
        tc_tensor *idx;
        tc_scope_begin(ctx);
        idx = tc_to(ctx, tc_from_data(ctx, TC_I32, 1, ishape, call == 4 ? bad : good), TC_CUDA);
        if (call < 4) TC_CHECKF(tc_call(f, &idx, &out) == TC_OK, "call %d: %s", call, tc_fn_error(f));
        else {
            TC_CHECK(tc_call(f, &idx, &out) == TC_ERR_INDEX);
            TC_CHECKF(strstr(tc_fn_error(f), "embedding") != NULL, "%s", tc_fn_error(f));
        }
        tc_scope_end(ctx);
    }
    tc_fn_free(f);
    tc_free(emb_table);
    tc_ctx_clear_error(ctx);
}

/* A capture that fails falls back to launching kernel by kernel, with the
 * reason in tc_explain, and the results stay right. */
TC_TEST(test_failed_capture_falls_back) {
    int64_t shape[2] = {9, 70};
    tc_compile_options o;
    tc_fn *f, *ref;
    tc_explain_info info;
    char text[4096];
    int call;
    memset(&o, 0, sizeof o);
    o.mode = TC_MODE_REDUCE_OVERHEAD;
    f = tc_compile(ctx, block_fn, NULL, &o);
    ref = tc_compile(ctx, block_fn, NULL, NULL);
    TC_CHECK(emu_fail_after("cuStreamBeginCapture_v2", 1) == 0);
    for (call = 0; call < 4; call++) {
        tc_tensor *x, *want = NULL, *got = NULL;
        tc_scope_begin(ctx);
        x = tc_rand_uniform(ctx, 2, shape, -4, 4, 7u + (unsigned)call);
        tc_tensor *dx = tc_to(ctx, x, TC_CUDA);
        TC_CHECKF(tc_call(f, &dx, &got) == TC_OK, "call %d: %s", call, tc_fn_error(f));
        TC_CHECK(tc_call(ref, &x, &want) == TC_OK);
        TC_CHECKF(tct_maxrel(got, want) <= 2e-5, "call %d: %.3g", call, tct_maxrel(got, want));
        tc_scope_end(ctx);
    }
    TC_CHECK(tc_explain(f, &info, text, sizeof text) == TC_OK && info.cuda_graphs == 0 && info.cuda_graph_failures == 1);
    TC_CHECKF(strstr(text, "no CUDA graph") != NULL, "%s", text);
    tc_fn_free(f);
    tc_fn_free(ref);
    tc_ctx_clear_error(ctx);
}

static void emu_reset_stats(void) {
    void *h = dlopen(emu_lib, RTLD_NOW | RTLD_NOLOAD);
    void (*fn)(void) = NULL;
    if (h) *(void **)&fn = dlsym(h, "tcemu_reset_stats");
    if (fn) fn();
    if (h) dlclose(h);
}

static int child_second_process(void) {
    /* the same graph in a fresh process: every binary from the disk cache
     * (the child of a fork: the counters start from the parent's) */
    tc_ctx *c = tc_ctx_create(NULL);
    int64_t shape[2] = {5, 40};
    tc_tensor *x = tc_to(c, tc_rand_uniform(c, 2, shape, -1, 1, 3), TC_CUDA), *y = NULL;
    tc_fn *f = tc_compile(c, block_fn, NULL, NULL);
    int ok;
    emu_reset_stats();
    ok = tc_call(f, &x, &y) == TC_OK && tc_call(f, &x, &y) == TC_OK && tc_status(y) == TC_OK;
    ok = ok && emu_stats().nvrtc_compiles == 0;
    tc_fn_free(f);
    tc_ctx_destroy(c);
    return ok ? 0 : 1;
}

static int child_first_process(void) {
    tcemu_stats_t st;
    int r = child_second_process(); /* compiles: 1 = it made no compile-free run */
    st = emu_stats();
    return r == 1 && st.nvrtc_compiles > 0 ? 0 : 1;
}

TC_TEST(test_disk_cache_across_processes) {
    char dir[] = "/tmp/tc_cuda_cacheXXXXXX";
    const char *old = getenv("TC_CACHE_DIR");
    char saved[1024];
    snprintf(saved, sizeof saved, "%s", old ? old : "");
    TC_CHECK(mkdtemp(dir) != NULL);
    setenv("TC_CACHE_DIR", dir, 1);
    TC_CHECKF(in_child(emu_lib, emu_lib, child_first_process) == 0, "the first process did not compile");
    TC_CHECKF(in_child(emu_lib, emu_lib, child_second_process) == 0, "the second process compiled again");
    if (old) setenv("TC_CACHE_DIR", saved, 1);
    else unsetenv("TC_CACHE_DIR");
}

/* ---- the GEMM templates against a float64 reference ------------------------ */

/* The emulator's last launch error ("" if none or not found). */
static const char *tcemu_last(void) {
    void *h = dlopen(emu_lib, RTLD_NOW | RTLD_NOLOAD);
    const char *(*fn)(void) = NULL;
    const char *r = "";
    if (h) *(void **)&fn = dlsym(h, "tcemu_last_error");
    if (fn) r = fn();
    if (h) dlclose(h);
    return r;
}

typedef struct gemm_case {
    tc_dtype dt;
    int64_t batch, M, N, K; /* batch 0: 2-D */
    int linear, bias;       /* linear(x, W, bias) with W (N, K); else matmul */
    int bt;                 /* matmul: B a transposed (N, K) tensor (its k contiguous) */
    int ta;                 /* A a transposed (K, M) tensor (no cp.async for it) */
    int pad;                /* B's rows (or W's) padded to this many columns, then sliced */
} gemm_case;

static void gemm_model(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    const gemm_case *g = (const gemm_case *)user;
    out[0] = g->linear ? tc_linear(c, in[0], in[1], g->bias ? in[2] : NULL) : tc_matmul(c, in[0], in[1]);
}

/* Host operand of `rows` x `cols` (as the GEMM reads it): transposed or
 * sliced from a padded one as the case asks, in dtype dt. */
static tc_tensor *gemm_operand(const gemm_case *g, int64_t b, int64_t rows, int64_t cols, int trans, int pad, uint64_t seed) {
    int64_t shape[3];
    int nd = 0;
    tc_tensor *x;
    if (b) shape[nd++] = b;
    shape[nd++] = trans ? cols : rows;
    shape[nd++] = trans ? rows : (pad > cols ? pad : cols);
    x = tc_cast(ctx, tc_rand_uniform(ctx, nd, shape, -1, 1, seed), g->dt);
    if (pad > cols && !trans) x = tc_slice(ctx, x, nd - 1, 0, cols, 1);
    if (trans) x = tc_transpose(ctx, x, nd - 2, nd - 1);
    return x;
}

/* Runs case g on the device (compiled), checks every element against a
 * float64 reference from the same inputs: |got - ref| <= tol * sum_k
 * |a_ik b_kj| (+ |bias|) + the output dtype's rounding of ref.  Returns
 * the largest error over that bound's tol part (tol_used / tol), -1 on a
 * failed call; *src_has reports whether the program's source contains
 * `want` (the template chosen). */
static double gemm_run(const gemm_case *g, double tol, const char *want, int *src_has) {
    int64_t M = g->M, N = g->N, K = g->K, nb = g->batch ? g->batch : 1, i, j, k, b, n;
    tc_tensor *a, *w, *bias = NULL, *in[3], *din[3], *got = NULL;
    float *ha, *hw, *hb = NULL, *hg;
    double worst = 0, oround = g->dt == TC_F16 ? 1.0 / 2048 : g->dt == TC_BF16 ? 1.0 / 256 : 1.2e-7;
    tc_fn *f;
    size_t len;
    tc_compile_options o;
    tc_scope_begin(ctx);
    a = gemm_operand(g, g->batch, M, K, g->ta, 0, 11 + (uint64_t)M);
    /* B (K, N) as matmul reads it, or W (N, K) for linear; bt: B = W^T */
    if (g->linear || g->bt) w = gemm_operand(g, 0, N, K, 0, g->pad, 12 + (uint64_t)N);
    else w = gemm_operand(g, 0, K, N, 0, g->pad, 13 + (uint64_t)N);
    if (g->bt) w = tc_transpose(ctx, w, 0, 1);
    if (g->bias) {
        int64_t bs[1] = {N};
        bias = tc_cast(ctx, tc_rand_uniform(ctx, 1, bs, -1, 1, 14), g->dt);
    }
    in[0] = a, in[1] = w, in[2] = bias;
    for (k = 0; k < 2 + (g->bias != 0); k++) din[k] = tc_to(ctx, in[k], TC_CUDA);
    ha = (float *)malloc(sizeof(float) * (size_t)(nb * M * K));
    hw = (float *)malloc(sizeof(float) * (size_t)(N * K));
    hg = (float *)malloc(sizeof(float) * (size_t)(nb * M * N + 1));
    tc_read(a, TC_F32, ha, sizeof(float) * (size_t)(nb * M * K));
    tc_read(w, TC_F32, hw, sizeof(float) * (size_t)(N * K)); /* (N, K) for linear, else (K, N) */
    if (bias) {
        hb = (float *)malloc(sizeof(float) * (size_t)N);
        tc_read(bias, TC_F32, hb, sizeof(float) * (size_t)N);
    }
    memset(&o, 0, sizeof o);
    o.num_inputs = 2 + (g->bias != 0);
    f = tc_compile(ctx, gemm_model, (void *)g, &o);
    if (tc_call(f, din, &got) != TC_OK || tc_call(f, din, &got) != TC_OK) {
        fprintf(stderr, "      %s\n", tc_fn_error(f));
        worst = -1;
    } else {
        char *src;
        len = tc_fn_cuda_source(f, 0, NULL, 0);
        src = (char *)malloc(len + 1);
        tc_fn_cuda_source(f, 0, src, len + 1);
        *src_has = strstr(src, want) != NULL;
        free(src);
        n = tc_numel(got);
        TC_CHECK(n == nb * M * N);
        tc_read(got, TC_F32, hg, sizeof(float) * (size_t)n);
        for (b = 0; b < nb; b++)
            for (i = 0; i < M; i++)
                for (j = 0; j < N; j++) {
                    double ref = hb ? hb[j] : 0, mag = hb ? fabs(hb[j]) : 0, e;
                    for (k = 0; k < K; k++) {
                        double x = ha[(b * M + i) * K + k], y = g->linear ? hw[j * K + k] : hw[k * N + j];
                        ref += x * y;
                        mag += fabs(x * y);
                    }
                    e = fabs((double)hg[(b * M + i) * N + j] - ref) - oround * fabs(ref);
                    e = e <= 0 ? 0 : e / (tol * mag + 1e-30);
                    if (e > worst || e != e) worst = e != e ? INFINITY : e;
                }
    }
    tc_fn_free(f);
    free(ha), free(hw), free(hb), free(hg);
    tc_scope_end(ctx);
    return worst;
}

static const gemm_case gemm_cases[] = {
    /* dt, batch, M, N, K, linear, bias, bt, ta, pad */
    {TC_F16, 0, 1, 1, 1, 0, 0, 0, 0, 0},       {TC_F16, 0, 16, 16, 16, 0, 0, 0, 0, 0},
    {TC_F16, 0, 15, 17, 16, 0, 0, 0, 0, 0},    {TC_F16, 0, 17, 15, 17, 0, 0, 0, 0, 0},
    {TC_F16, 0, 127, 129, 64, 0, 0, 0, 0, 0},  {TC_F16, 0, 129, 72, 129, 0, 0, 0, 0, 0},
    {TC_F16, 0, 65, 75, 48, 0, 0, 0, 0, 80},   {TC_F16, 0, 33, 40, 72, 0, 0, 1, 0, 0},
    {TC_F16, 0, 31, 33, 40, 0, 0, 0, 1, 0},    {TC_F16, 3, 33, 40, 40, 0, 0, 0, 0, 0},
    {TC_F16, 0, 70, 129, 127, 1, 1, 0, 0, 0},  {TC_F16, 2, 37, 19, 64, 1, 1, 0, 0, 0},
    {TC_BF16, 0, 1, 1, 1, 0, 0, 0, 0, 0},      {TC_BF16, 0, 127, 129, 64, 0, 0, 0, 0, 0},
    {TC_BF16, 0, 129, 127, 129, 0, 0, 0, 0, 0}, {TC_BF16, 0, 17, 33, 16, 0, 0, 1, 0, 0},
    {TC_BF16, 0, 65, 75, 48, 0, 0, 0, 0, 80},  {TC_BF16, 0, 31, 33, 40, 0, 0, 0, 1, 0},
    {TC_BF16, 2, 37, 19, 64, 1, 1, 0, 0, 0},   {TC_BF16, 0, 70, 129, 127, 1, 1, 0, 0, 0},
};

/* f16 and bf16 inputs: the tensor-core template (sm_90 by default in the
 * emulator), every element within the f32 accumulation's bound plus the
 * output's rounding; shapes with edges in M, N and K, a K not a multiple
 * of 8 (rows not 16-byte aligned: element copies), B as [n][k] and
 * [k][n], a transposed A, padded rows (a partial cp.async chunk), batches
 * and the bias epilogue. */
TC_TEST(test_tensor_core_gemm_16bit) {
    size_t c;
    for (c = 0; c < sizeof gemm_cases / sizeof gemm_cases[0]; c++) {
        const gemm_case *g = &gemm_cases[c];
        int has = 0;
        double e = gemm_run(g, 2e-5, g->dt == TC_F16 ? "tc_mma_m16n8k16_f16(acc" : "tc_mma_m16n8k16_bf16(acc", &has);
        TC_CHECKF(e >= 0 && e <= 1, "%s %s %lldx%lldx%lldx%lld bt %d ta %d pad %d: error %.3g of the bound",
                  tc_dtype_name(g->dt), g->linear ? "linear" : "matmul", (long long)g->batch, (long long)g->M, (long long)g->N,
                  (long long)g->K, g->bt, g->ta, g->pad, e);
        TC_CHECKF(has, "case %d: not the tensor-core template", (int)c);
    }
}

/* f32: exact f32 (the SIMT template) unless the context allows TF32; with
 * it, mma m16n8k8 on inputs rounded to TF32, within 2^-10 of sum |a b| and
 * measurably not f32 (the rounding shows). */
TC_TEST(test_tf32_gemm_is_opt_in) {
    static const gemm_case cs[] = {
        {TC_F32, 0, 1, 1, 1, 0, 0, 0, 0, 0},      {TC_F32, 0, 15, 17, 16, 0, 0, 0, 0, 0},
        {TC_F32, 0, 127, 129, 33, 0, 0, 0, 0, 0}, {TC_F32, 0, 129, 127, 129, 0, 0, 0, 0, 0},
        {TC_F32, 0, 33, 40, 72, 0, 0, 1, 0, 0},   {TC_F32, 0, 65, 75, 48, 0, 0, 0, 0, 80},
        {TC_F32, 0, 31, 33, 40, 0, 0, 0, 1, 0},   {TC_F32, 2, 37, 19, 64, 1, 1, 0, 0, 0},
        {TC_F32, 3, 33, 40, 40, 0, 0, 0, 0, 0},
    };
    size_t c;
    double most = 0;
    for (c = 0; c < sizeof cs / sizeof cs[0]; c++) {
        const gemm_case *g = &cs[c];
        int has = 0;
        double e;
        TC_CHECK(tc_ctx_set_allow_tf32(ctx, 0) == TC_OK);
        e = gemm_run(g, 1e-6, "tc_mma", &has);
        TC_CHECKF(e >= 0 && e <= 1 && !has, "f32 case %d without TF32: error %.3g of 1e-6 sum|ab|, mma %d", (int)c, e, has);
        TC_CHECK(tc_ctx_set_allow_tf32(ctx, 1) == TC_OK);
        e = gemm_run(g, 1.0 / 1024, "tc_mma_m16n8k8_tf32(acc", &has);
        TC_CHECKF(e >= 0 && e <= 1 && has, "f32 case %d with TF32: error %.3g of 2^-10 sum|ab|, mma %d", (int)c, e, has);
        if (e > most) most = e;
    }
    TC_CHECKF(most > 1e-3, "TF32 never rounded: largest error %.3g of 2^-10 sum|ab|", most);
    tc_ctx_set_allow_tf32(ctx, 0);
}

/* Below compute capability 8.0 the SIMT template runs f16 too. */
TC_TEST(test_gemm_template_below_sm80) {
    const gemm_case g = {TC_F16, 0, 33, 40, 72, 1, 1, 0, 0, 0};
    int has = 1;
    double e;
    tc__cu_test_sm = 75;
    e = gemm_run(&g, 2e-5, "tc_mma", &has);
    tc__cu_test_sm = 0;
    TC_CHECKF(e >= 0 && e <= 1 && !has, "sm_75: error %.3g, mma %d", e, has);
}

/* A wrong fragment in the generator (A's rows 8..15 and columns 8..15
 * swapped in the registers mma reads) fails against the reference: the
 * emulator's mma uses the PTX layouts, not the generator's. */
TC_TEST(test_planted_fragment_is_caught) {
    const gemm_case cs[] = {{TC_F16, 0, 33, 40, 72, 0, 0, 0, 0, 0}, {TC_BF16, 0, 33, 40, 72, 1, 1, 0, 0, 0},
                            {TC_F32, 0, 33, 40, 72, 0, 0, 0, 0, 0}};
    int c, has;
    double e;
    tc_ctx_set_allow_tf32(ctx, 1);
    for (c = 0; c < 3; c++) {
        tc__cu_plant_frag = 0;
        e = gemm_run(&cs[c], c < 2 ? 2e-5 : 1.0 / 1024, "tc_mma", &has);
        TC_CHECKF(e >= 0 && e <= 1 && has, "case %d as generated: %.3g", c, e);
        tc__cu_plant_frag = 1;
        e = gemm_run(&cs[c], c < 2 ? 2e-5 : 1.0 / 1024, "tc_mma", &has);
        tc__cu_plant_frag = 0;
        TC_CHECKF(e > 100 && has, "case %d planted: error only %.3g of the bound", c, e);
    }
    tc_ctx_set_allow_tf32(ctx, 0);
}

/* The XOR swizzle keeps every ldmatrix free of bank conflicts (the
 * emulator checks each one under TC_EMU_BANK_CHECK, which main sets), for
 * both B layouts; without it (planted) the check fails the launch. */
TC_TEST(test_swizzle_has_no_bank_conflicts) {
    const gemm_case cs[] = {{TC_F16, 0, 70, 72, 64, 0, 0, 0, 0, 0}, {TC_BF16, 0, 70, 72, 64, 1, 1, 0, 0, 0}};
    int c, has;
    double e;
    for (c = 0; c < 2; c++) {
        e = gemm_run(&cs[c], 2e-5, "tc_mma", &has);
        TC_CHECKF(e >= 0 && e <= 1 && has, "case %d: %.3g", c, e);
        tc__cu_plant_frag = 2;
        e = gemm_run(&cs[c], 2e-5, "tc_mma", &has);
        tc__cu_plant_frag = 0;
        TC_CHECKF(e < 0 && strstr(tcemu_last(), "share shared-memory banks") != NULL, "case %d unswizzled: %.3g, '%s'", c, e,
                  tcemu_last());
        tc_ctx_clear_error(ctx);
    }
}

int main(int argc, char **argv) {
    emu_lib = getenv("TCEMU_LIB");
    if (argc > 1) emu_lib = argv[1];
    if (emu_lib && !*emu_lib) emu_lib = NULL;
    /* the children first: the parent must not have loaded anything yet */
    TC_RUN(test_loader_missing_driver);
    TC_RUN(test_loader_library_without_symbols);
    RUN_EMU(test_loader_missing_nvrtc);
    {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (h) {
            dlclose(h);
            printf("SKIP  test_loader_default_names: a real driver is installed here\n");
            tct_skipped++;
        } else TC_RUN(test_loader_default_names);
    }
    if (emu_lib) {
        setenv("TC_EMU_BANK_CHECK", "1", 1); /* a conflicted ldmatrix fails the launch */
        setenv("TC_CUDA_LIB", emu_lib, 1);
        setenv("TC_NVRTC_LIB", emu_lib, 1);
    }
    if (!emu_lib && tc_cuda_available(NULL)) real_gpu = 1; /* the loader's children ran first */
    ctx = tc_ctx_create(NULL);
    RUN_DEV(test_device_info);
    RUN_DEV(test_round_trip);
    RUN_DEV(test_views_and_dtypes);
    RUN_DEV(test_item_and_empty);
    RUN_DEV(test_mixed_devices_rejected);
    RUN_DEV(test_devices_of_a_compiled_function);
    RUN_DEV(test_caching_allocator);
    RUN_DEV(test_compiled_graphs_match_cpu);
    RUN_DEV(test_eager_ops_on_device);
    RUN_DEV(test_host_parameters_are_uploaded_once);
    RUN_DEV(test_reduce_overhead_replays_a_cuda_graph);
    RUN_DEV(test_models_on_device);
    RUN_DEV(test_index_checked_in_a_replay);
    RUN_DEV(test_review_cases);
    RUN_DEV(test_tensor_core_gemm_16bit);
    RUN_DEV(test_tf32_gemm_is_opt_in);
    RUN_DEV(test_gemm_template_below_sm80);
    RUN_EMU(test_planted_fragment_is_caught);
    RUN_EMU(test_swizzle_has_no_bank_conflicts);
    RUN_EMU(test_failed_capture_falls_back);
    RUN_EMU(test_disk_cache_across_processes);
    tc_ctx_destroy(ctx);
    return TC_TEST_SUMMARY();
}
