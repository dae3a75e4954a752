/* tcemu, the CPU stand-in for libcuda and libnvrtc that the CUDA backend's
 * tests run on (tests/cuda_emu/): hand-written CUDA C kernels compiled by
 * its NVRTC and run through its driver API, each checked against a C
 * reference; graph capture and replay; the driver's error paths; and the
 * same kernels compiled by the real NVRTC for sm_80 and sm_90 when it is
 * installed, to show that they are valid CUDA.
 *   test_cuda_emu [path/to/libtcemu.so]   (else $TCEMU_LIB)
 * Built against the toolkit's cuda.h and nvrtc.h (tests/cuda_emu/run.sh). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <cuda.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <nvrtc.h>
#include <stdint.h>
#include "cuda_emu/tcemu.h"
#include "tc_test.h"

static int tct_skipped;
#define SKIP(...) (printf("SKIP "), printf(__VA_ARGS__), printf("\n"), tct_skipped++)

/* ---- the entry points, typed from the real headers ---- */
#define STR_(x) #x
#define STR(x) STR_(x) /* the versioned name cuda.h maps a name to */
#define DRIVER(X)                                                                                        \
    X(cuInit) X(cuDeviceGet) X(cuDeviceGetAttribute) X(cuDeviceGetName) X(cuDevicePrimaryCtxRetain)       \
    X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuMemAlloc) X(cuMemFree)       \
    X(cuMemGetInfo) X(cuMemcpyHtoD) X(cuMemcpyDtoH) X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync)             \
    X(cuMemcpyDtoDAsync) X(cuMemsetD32Async) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) \
    X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuStreamIsCapturing) X(cuGraphInstantiate)           \
    X(cuGraphLaunch) X(cuGraphExecUpdate) X(cuGraphExecDestroy) X(cuGraphDestroy) X(cuModuleLoadData)    \
    X(cuModuleGetFunction) X(cuModuleUnload) X(cuLaunchKernel) X(cuFuncGetAttribute) X(cuFuncSetAttribute) \
    X(cuGetErrorName) X(cuGetErrorString) X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventQuery)  \
    X(cuEventElapsedTime) X(cuEventDestroy) X(cuStreamWaitEvent) X(cuStreamQuery) X(cuCtxGetDevice)           \
    X(cuMemsetD32) X(cuMemsetD8) X(cuMemcpyDtoD) X(cuMemAllocHost) X(cuMemFreeHost)
#define NVRTC(X)                                                                                         \
    X(nvrtcCreateProgram) X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize) X(nvrtcGetProgramLog)         \
    X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN) X(nvrtcGetPTXSize) X(nvrtcGetPTX) X(nvrtcDestroyProgram) X(nvrtcVersion)
#define DECL(f) static __typeof__(&f) p_##f;
DRIVER(DECL)
typedef struct {
#define FIELD(f) __typeof__(&f) f;
    NVRTC(FIELD)
} nvrtc_api;
static nvrtc_api emu, real;
static void (*p_stats)(tcemu_stats_t *);
static int (*p_fail_after)(const char *, int);
static void (*p_reset_faults)(void);
static const char *(*p_last_error)(void);

static int sym(void *lib, const char *name, void *fp) { /* through memcpy: ISO C has no void * to function cast */
    void *s = dlsym(lib, name);
    if (!s) fprintf(stderr, "  missing symbol %s\n", name);
    memcpy(fp, &s, sizeof s);
    return s != NULL;
}
static int load_nvrtc(void *lib, nvrtc_api *a) {
    int ok = 1;
#define LOADN(f) ok &= sym(lib, STR(f), &a->f);
    NVRTC(LOADN)
    return ok;
}
static int load_emu(void *lib) {
    int ok = load_nvrtc(lib, &emu);
#define LOADD(f) ok &= sym(lib, STR(f), &p_##f);
    DRIVER(LOADD)
    ok &= sym(lib, "tcemu_stats", &p_stats) & sym(lib, "tcemu_fail_after", &p_fail_after);
    ok &= sym(lib, "tcemu_reset_faults", &p_reset_faults) & sym(lib, "tcemu_last_error", &p_last_error);
    return ok;
}

/* ---- the kernels (valid CUDA: the real NVRTC compiles them too) ---- */
#define FULL "0xffffffffu"
/* (in parts: ISO C99 promises string literals of 4095 characters) */
static char kernels_src[16384];
static const char *kernels_parts[] = {
    "struct Affine { float scale, shift; int n; double bias; };\n"
    "extern \"C\" __global__ void saxpy(int n, float a, const float *__restrict__ x, float *__restrict__ y) {\n"
    "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) y[i] = a * x[i] + y[i];\n"
    "}\n"
    "extern \"C\" {\n"
    "__global__ void scale(float *y, int n, float s) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < n) y[i] *= s;\n"
    "}\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(256) block_sum(const float *x, float *out, int n) {\n"
    "  __shared__ float s[256];\n"
    "  int t = threadIdx.x;\n"
    "  float acc = 0.0f;\n"
    "  for (int i = blockIdx.x * 256 + t; i < n; i += 256 * gridDim.x) acc += x[i];\n"
    "  s[t] = acc;\n"
    "  __syncthreads();\n"
    "  for (int w = 128; w > 0; w >>= 1) {\n"
    "    if (t < w) s[t] += s[t + w];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (t == 0) out[blockIdx.x] = s[0];\n"
    "}\n"
    "extern \"C\" __global__ void warp_ops(const float *x, float *xsum, float *dsum, unsigned *ballot, int *scan,\n"
    "                                     double *bd, long long *bl, float *seg) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;\n"
    "  float v = x[i], u = v;\n"
    "  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(" FULL ", v, o);\n"
    "  for (int o = 16; o > 0; o >>= 1) u += __shfl_down_sync(" FULL ", u, o);\n"
    "  xsum[i] = v;\n"
    "  if (lane == 0) dsum[i / 32] = u;\n"
    "  unsigned b = __ballot_sync(" FULL ", v > 0.0f && x[i] > 0.0f);\n"
    "  if (lane == 0) ballot[i / 32] = b;\n"
    "  int s = lane + 1;\n"
    "  for (int o = 1; o < 32; o <<= 1) {\n"
    "    int y = __shfl_up_sync(" FULL ", s, o);\n"
    "    if (lane >= o) s += y;\n"
    "  }\n"
    "  scan[i] = s;\n"
    "  bd[i] = __shfl_sync(" FULL ", (double)i * 0.5, 3);\n"
    "  bl[i] = __shfl_sync(" FULL ", (long long)i << 33, 31);\n"
    "  float g = x[i];\n" /* segments of 8 lanes */
    "  for (int o = 4; o > 0; o >>= 1) g += __shfl_down_sync(" FULL ", g, o, 8);\n"
    "  seg[2 * i] = g;\n"
    "  seg[2 * i + 1] = __shfl_xor_sync(" FULL ", x[i], 2, 2);\n"
    "}\n",
    "extern \"C\" __global__ void reverse_dyn(float *x, int n) {\n"
    "  extern __shared__ float buf[];\n"
    "  int t = threadIdx.x;\n"
    "  if (t < n) buf[t] = x[blockIdx.x * n + t];\n"
    "  __syncthreads();\n"
    "  if (t < n) x[blockIdx.x * n + t] = buf[n - 1 - t];\n"
    "}\n"
    "extern __shared__ float file_scope_dyn[];\n"
    "extern \"C\" __global__ void rotate_dyn(float *x) {\n"
    "  int t = threadIdx.x, n = blockDim.x;\n"
    "  file_scope_dyn[t] = x[t];\n"
    "  __syncthreads();\n"
    "  x[t] = file_scope_dyn[(t + 1) % n];\n"
    "}\n"
    "extern \"C\" __global__ void big_dyn(float *out) {\n" /* 64 KiB of dynamic shared memory */
    "  extern __shared__ __align__(16) unsigned char raw[];\n"
    "  float *buf = reinterpret_cast<float *>(raw);\n"
    "  for (int k = 0; k < 16; k++) buf[threadIdx.x * 16 + k] = (float)(threadIdx.x * 16 + k);\n"
    "  __syncthreads();\n"
    "  for (int k = 0; k < 16; k++) out[threadIdx.x * 16 + k] = buf[16383 - (threadIdx.x * 16 + k)];\n"
    "}\n"
    "extern \"C\" __global__ void affine(Affine p, const float *x, float *y) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i < p.n) y[i] = x[i] * p.scale + p.shift + (float)p.bias;\n"
    "}\n",
    "extern \"C\" __global__ void atomics(const int *x, int n, int *sum, unsigned *umax, int *imin, float *fsum,\n"
    "                                    unsigned long long *cnt, int *first, double *dsum) {\n"
    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i >= n) return;\n"
    "  atomicAdd(sum, x[i]);\n"
    "  atomicMax(umax, (unsigned)x[i]);\n"
    "  atomicMin(imin, x[i] - 50);\n"
    "  atomicAdd(fsum, 0.5f);\n"
    "  atomicAdd(cnt, 1ull);\n"
    "  atomicAdd(dsum, 0.25);\n"
    "  atomicCAS(first, -1, i);\n"
    "}\n"
    "extern \"C\" __global__ void index3d(int *out, int nx, int ny, int nz, unsigned *dims) {\n"
    "  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;\n"
    "  int z = blockIdx.z * blockDim.z + threadIdx.z;\n"
    "  if (x < nx && y < ny && z < nz) atomicAdd(&out[(z * ny + y) * nx + x], 1 + x + 100 * y + 10000 * z);\n"
    "  if (x + y + z == 0) {\n"
    "    dims[0] = blockDim.x, dims[1] = blockDim.y, dims[2] = blockDim.z;\n"
    "    dims[3] = gridDim.x, dims[4] = gridDim.y, dims[5] = gridDim.z;\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void mathfns(const float *x, float *y, int *bits) {\n"
    "  int i = threadIdx.x;\n"
    "  float v = x[i];\n"
    "  y[8 * i + 0] = expf(v) + tanhf(v);\n"
    "  y[8 * i + 1] = erff(v) * rsqrtf(v * v + 1.0f);\n"
    "  y[8 * i + 2] = fmaxf(v, 0.25f) + fminf(v, -0.25f) + __saturatef(v);\n"
    "  y[8 * i + 3] = __expf(v) + __logf(v * v + 1.0f) + __fdividef(v, 3.0f);\n"
    "  y[8 * i + 4] = powf(fabsf(v), 1.5f) + sqrtf(v * v) + floorf(v) + ceilf(v);\n"
    "  y[8 * i + 5] = (float)max(i, 3) + (float)min(i, 3) + max(v, 1.0f) + copysignf(1.0f, v);\n"
    "  y[8 * i + 6] = isnan(v / 0.0f) ? 1.0f : isinf(v / 0.0f) ? 2.0f : 3.0f;\n"
    "  y[8 * i + 7] = fmaf(v, 2.0f, 1.0f) + log1pf(v * v) + exp2f(v) + sinf(v) * cosf(v);\n"
    "  bits[4 * i + 0] = __float_as_int(v);\n"
    "  bits[4 * i + 1] = __popc((unsigned)i * 2654435761u);\n"
    "  bits[4 * i + 2] = __clz(i) + 100 * __ffs(i);\n"
    "  bits[4 * i + 3] = __float_as_int(__int_as_float(0x7f800000)) == 0x7f800000;\n"
    "}\n"};

/* Kernels that fail at run time (valid CUDA, wrong programs). */
static const char *bad_src =
    "extern \"C\" __global__ void divergent_sync(float *x) {\n"
    "  if (threadIdx.x < 16) __syncthreads();\n" /* threads 16..31 exit instead */
    "  x[threadIdx.x] = 1.0f;\n"
    "}\n"
    "extern \"C\" __global__ void early_exit(float *x) {\n"
    "  if (threadIdx.x < 40) return;\n" /* a common bug: the bounds check before a barrier */
    "  __syncthreads();\n"
    "  x[threadIdx.x] = 1.0f;\n"
    "}\n"
    "extern \"C\" __global__ void lane_exits(float *x) {\n"
    "  if (threadIdx.x == 5) return;\n"
    "  x[threadIdx.x] = __shfl_xor_sync(" FULL ", x[threadIdx.x], 1);\n"
    "}\n"
    "extern \"C\" __global__ void deadlock(float *x) {\n"
    "  if (threadIdx.x == 0) __syncthreads();\n"
    "  else x[threadIdx.x] = __shfl_sync(" FULL ", x[threadIdx.x], 0);\n"
    "}\n"
    "__global__ void mangled(float *x) { x[0] = 0.0f; }\n"
    "extern \"C\" __global__ void asserts(float *x) {\n"
    "  assert(threadIdx.x < 5);\n"
    "  x[threadIdx.x] = 0.0f;\n"
    "}\n"
    "extern \"C\" __global__ void wild(float *x) {\n"
    "  if (blockIdx.x == 1 && threadIdx.x == 3) x[0] = 1.0f;\n"
    "}\n";

/* Line 3 is wrong. */
static const char *syntax_error_src = "extern \"C\" __global__ void k(float *x) {\n"
                                      "  int i = threadIdx.x;\n"
                                      "  x[i] = undeclared_name * 2.0f;\n"
                                      "}\n";

/* ---- helpers ---- */
static CUcontext ctx;
static CUmodule mod;
static CUdeviceptr dalloc(size_t n) {
    CUdeviceptr d = 0;
    CUresult r = p_cuMemAlloc(&d, n);
    TC_CHECKF(r == CUDA_SUCCESS, "cuMemAlloc(%zu) = %d", n, (int)r);
    return d;
}
static CUfunction fn(const char *name) {
    CUfunction f = NULL;
    CUresult r = p_cuModuleGetFunction(&f, mod, name);
    TC_CHECKF(r == CUDA_SUCCESS, "cuModuleGetFunction(%s) = %d", name, (int)r);
    return f;
}
static CUresult launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                       unsigned smem, CUstream s, void **args) {
    return p_cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, s, args, NULL);
}
static tcemu_stats_t stats(void) {
    tcemu_stats_t s;
    p_stats(&s);
    return s;
}
/* Compiles src with `api`; the CUBIN (or the PTX when ptx is set) in *image,
 * the result code returned, the log in `log`. */
static nvrtcResult compile(const nvrtc_api *api, const char *src, const char *name, int nopt, const char **opts,
                           int ptx, char **image, char *log, size_t logcap) {
    nvrtcProgram p;
    nvrtcResult r = api->nvrtcCreateProgram(&p, src, name, 0, NULL, NULL);
    size_t n = 0;
    if (image) *image = NULL;
    if (r != NVRTC_SUCCESS) return r;
    r = api->nvrtcCompileProgram(p, nopt, opts);
    if (log && api->nvrtcGetProgramLogSize(p, &n) == NVRTC_SUCCESS) {
        char *l = (char *)malloc(n);
        api->nvrtcGetProgramLog(p, l);
        snprintf(log, logcap, "%s", l);
        free(l);
    }
    if (r == NVRTC_SUCCESS && image) {
        (ptx ? api->nvrtcGetPTXSize : api->nvrtcGetCUBINSize)(p, &n);
        *image = (char *)malloc(n ? n : 1);
        (ptx ? api->nvrtcGetPTX : api->nvrtcGetCUBIN)(p, *image);
        if (!n) free(*image), *image = NULL;
    }
    api->nvrtcDestroyProgram(&p);
    return r;
}
static CUmodule load(const char *src, const char *arch) {
    const char *opts[2] = {arch, "-DTCEMU_TEST=1"};
    char log[4096], *img;
    CUmodule m = NULL;
    nvrtcResult r = compile(&emu, src, "kernels.cu", 2, opts, 0, &img, log, sizeof log);
    TC_CHECKF(r == NVRTC_SUCCESS && img, "compile: %d\n%s", (int)r, log);
    if (!img) return NULL;
    TC_CHECK(p_cuModuleLoadData(&m, img) == CUDA_SUCCESS);
    free(img);
    return m;
}

/* ---- tests ---- */
TC_TEST(test_before_init_and_context) {
    CUdevice dev;
    CUdeviceptr d;
    TC_CHECK(p_cuDeviceGet(&dev, 0) == CUDA_ERROR_NOT_INITIALIZED);
    TC_CHECK(p_cuInit(0) == CUDA_SUCCESS);
    TC_CHECK(p_cuDeviceGet(&dev, 0) == CUDA_SUCCESS && dev == 0);
    TC_CHECK(p_cuDeviceGet(&dev, 1) == CUDA_ERROR_INVALID_DEVICE);
    TC_CHECK(p_cuMemAlloc(&d, 16) == CUDA_ERROR_INVALID_CONTEXT);
    TC_CHECK(p_cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS && p_cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
}

TC_TEST(test_device_attributes) {
    int v = 0;
    char name[128];
    TC_CHECK(p_cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0) == CUDA_SUCCESS && v == 9);
    TC_CHECK(p_cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0) == CUDA_SUCCESS && v == 32);
    TC_CHECK(p_cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 0) == CUDA_SUCCESS && v == 232448);
    TC_CHECK(p_cuDeviceGetAttribute(&v, (CUdevice_attribute)100000, 0) == CUDA_ERROR_INVALID_VALUE);
    setenv("TC_EMU_SM", "80", 1);
    TC_CHECK(p_cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0) == CUDA_SUCCESS && v == 8);
    unsetenv("TC_EMU_SM");
    TC_CHECK(p_cuDeviceGetName(name, sizeof name, 0) == CUDA_SUCCESS && strstr(name, "sm_90"));
}

TC_TEST(test_compile_and_load) {
    int v = 0;
    CUfunction f;
    tcemu_stats_t s0 = stats();
    mod = load(kernels_src, "-arch=sm_90");
    TC_CHECK(mod != NULL);
    TC_CHECK(stats().nvrtc_compiles == s0.nvrtc_compiles + 1 && stats().modules_loaded == s0.modules_loaded + 1);
    if (!mod) return;
    TC_CHECK(p_cuModuleGetFunction(&f, mod, "no_such_kernel") == CUDA_ERROR_NOT_FOUND);
    TC_CHECK(p_cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn("block_sum")) == CUDA_SUCCESS && v == 256);
    TC_CHECK(p_cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn("saxpy")) == CUDA_SUCCESS && v == 1024);
    TC_CHECKF(p_cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fn("block_sum")) == CUDA_SUCCESS && v >= 1024,
              "static shared %d", v);
}

TC_TEST(test_saxpy_grid_stride) {
    enum { N = 10007 };
    static float x[N], y[N], out[N];
    int n = N, i, bad = 0;
    float a = 1.5f;
    CUdeviceptr dx = dalloc(sizeof x), dy = dalloc(sizeof y);
    void *args[] = {&n, &a, &dx, &dy};
    for (i = 0; i < N; i++) x[i] = (float)(i % 97) * 0.25f, y[i] = (float)(i % 13) - 6.0f;
    p_cuMemcpyHtoD(dx, x, sizeof x);
    p_cuMemcpyHtoD(dy, y, sizeof y);
    TC_CHECK(launch(fn("saxpy"), 7, 1, 1, 128, 1, 1, 0, NULL, args) == CUDA_SUCCESS); /* fewer threads than elements */
    TC_CHECK(p_cuMemcpyDtoH(out, dy, sizeof out) == CUDA_SUCCESS);
    for (i = 0; i < N; i++) bad += out[i] != a * x[i] + y[i];
    TC_CHECKF(bad == 0, "%d of %d wrong", bad, N);
    p_cuMemFree(dx), p_cuMemFree(dy);
}

TC_TEST(test_block_reduction_shared) {
    enum { N = 5000, B = 4 };
    static float x[N];
    float out[B], want[B] = {0};
    int n = N, i, b;
    CUdeviceptr dx = dalloc(sizeof x), dout = dalloc(sizeof out);
    void *args[] = {&dx, &dout, &n};
    for (i = 0; i < N; i++) x[i] = (float)((i * 7) % 11) - 5.0f; /* small integers: exact in any order */
    for (i = 0; i < N; i++) want[(i / 256) % B] += x[i];
    p_cuMemcpyHtoD(dx, x, sizeof x);
    for (const char *th = "1"; th; th = th[0] == '1' ? "4" : NULL) { /* blocks on 1 and on 4 OS threads */
        setenv("TC_EMU_THREADS", th, 1);
        TC_CHECK(launch(fn("block_sum"), B, 1, 1, 256, 1, 1, 0, NULL, args) == CUDA_SUCCESS);
        p_cuMemcpyDtoH(out, dout, sizeof out);
        for (b = 0; b < B; b++) TC_CHECKF(out[b] == want[b], "threads %s block %d: %g, want %g", th, b, out[b], want[b]);
    }
    unsetenv("TC_EMU_THREADS");
    /* more threads than its __launch_bounds__ */
    TC_CHECK(launch(fn("block_sum"), 1, 1, 1, 512, 1, 1, 0, NULL, args) == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
    p_cuMemFree(dx), p_cuMemFree(dout);
}

TC_TEST(test_warp_collectives) {
    enum { N = 96 }; /* 3 warps in blocks of 64: a full warp, then two in the second block */
    float x[N], xsum[N], dsum[N / 32];
    unsigned ballot[N / 32];
    int scan[N], i, w, l;
    double bd[N];
    float seg[2 * N], g8[N], t8[N];
    int o;
    long long bl[N];
    CUdeviceptr dx = dalloc(sizeof x), dxs = dalloc(sizeof xsum), dds = dalloc(sizeof dsum), db = dalloc(sizeof ballot);
    CUdeviceptr dsc = dalloc(sizeof scan), dbd = dalloc(sizeof bd), dbl = dalloc(sizeof bl);
    CUdeviceptr dseg = dalloc(sizeof seg);
    void *args[] = {&dx, &dxs, &dds, &db, &dsc, &dbd, &dbl, &dseg};
    for (i = 0; i < N; i++) x[i] = (float)((i * 5) % 9) - 3.0f;
    p_cuMemcpyHtoD(dx, x, sizeof x);
    TC_CHECK(launch(fn("warp_ops"), 2, 1, 1, 48, 1, 1, 0, NULL, args) == CUDA_SUCCESS); /* partial warps */
    TC_CHECK(launch(fn("warp_ops"), 3, 1, 1, 32, 1, 1, 0, NULL, args) == CUDA_SUCCESS);
    p_cuMemcpyDtoH(xsum, dxs, sizeof xsum), p_cuMemcpyDtoH(dsum, dds, sizeof dsum);
    p_cuMemcpyDtoH(ballot, db, sizeof ballot), p_cuMemcpyDtoH(scan, dsc, sizeof scan);
    p_cuMemcpyDtoH(bd, dbd, sizeof bd), p_cuMemcpyDtoH(bl, dbl, sizeof bl), p_cuMemcpyDtoH(seg, dseg, sizeof seg);
    for (i = 0; i < N; i++) g8[i] = x[i];
    for (o = 4; o > 0; o >>= 1) { /* shfl_down in segments of 8: past the segment, a lane reads itself */
        for (i = 0; i < N; i++) t8[i] = g8[i] + (i % 8 + o < 8 ? g8[i + o] : g8[i]);
        memcpy(g8, t8, sizeof g8);
    }
    for (w = 0; w < N / 32; w++) {
        float sum = 0;
        unsigned bits = 0;
        for (l = 0; l < 32; l++) sum += x[32 * w + l];
        for (l = 0; l < 32; l++) bits |= (unsigned)(sum > 0 && x[32 * w + l] > 0) << l;
        TC_CHECKF(dsum[w] == sum, "warp %d: shfl_down sum %g, want %g", w, dsum[w], sum);
        TC_CHECKF(ballot[w] == bits, "warp %d: ballot %08x, want %08x", w, ballot[w], bits);
        for (l = 0; l < 32; l++) {
            i = 32 * w + l;
            TC_CHECKF(xsum[i] == sum, "lane %d: shfl_xor sum %g, want %g", i, xsum[i], sum);
            TC_CHECKF(scan[i] == (l + 1) * (l + 2) / 2, "lane %d: shfl_up scan %d", i, scan[i]);
            /* width 2, lane mask 2: from the earlier pair, or its own value */
            TC_CHECKF(seg[2 * i] == g8[i] && seg[2 * i + 1] == x[l & 2 ? i ^ 2 : i], "lane %d: width-8 shfl_down %g, want %g; width-2 shfl_xor %g",
                      i, seg[2 * i], g8[i], seg[2 * i + 1]);
            TC_CHECKF(bd[i] == (32 * w + 3) * 0.5 && bl[i] == (long long)(32 * w + 31) << 33, "lane %d: shfl %g %lld", i, bd[i], bl[i]);
        }
    }
    p_cuMemFree(dx), p_cuMemFree(dxs), p_cuMemFree(dds), p_cuMemFree(db), p_cuMemFree(dsc), p_cuMemFree(dbd), p_cuMemFree(dbl), p_cuMemFree(dseg);
}

TC_TEST(test_dynamic_shared) {
    enum { N = 200, B = 3 };
    static float x[N * B], out[16384];
    int n = N, i, bad = 0;
    CUdeviceptr dx = dalloc(sizeof x), dout = dalloc(sizeof out);
    void *args[] = {&dx, &n}, *args2[] = {&dout};
    CUfunction big = fn("big_dyn");
    for (i = 0; i < N * B; i++) x[i] = (float)i;
    p_cuMemcpyHtoD(dx, x, sizeof x);
    TC_CHECK(launch(fn("reverse_dyn"), B, 1, 1, N, 1, 1, N * sizeof(float), NULL, args) == CUDA_SUCCESS);
    p_cuMemcpyDtoH(x, dx, sizeof x);
    for (i = 0; i < N * B; i++) bad += x[i] != (float)((i / N) * N + N - 1 - i % N);
    TC_CHECKF(bad == 0, "%d wrong", bad);
    /* declared at file scope */
    TC_CHECK(launch(fn("rotate_dyn"), 1, 1, 1, 100, 1, 1, 100 * sizeof(float), NULL, args) == CUDA_SUCCESS);
    p_cuMemcpyDtoH(x, dx, sizeof x);
    for (bad = 0, i = 0; i < 100; i++) bad += x[i] != (float)(N - 1 - (i + 1) % 100);
    TC_CHECKF(bad == 0, "file scope: %d wrong", bad);
    /* over 48 KiB only after cuFuncSetAttribute, and never past the opt-in limit */
    TC_CHECK(launch(big, 1, 1, 1, 1024, 1, 1, 65536, NULL, args2) == CUDA_ERROR_INVALID_VALUE);
    TC_CHECK(p_cuFuncSetAttribute(big, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 300000) == CUDA_ERROR_INVALID_VALUE);
    TC_CHECK(p_cuFuncSetAttribute(big, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536) == CUDA_SUCCESS);
    TC_CHECK(launch(big, 1, 1, 1, 1024, 1, 1, 65536, NULL, args2) == CUDA_SUCCESS);
    p_cuMemcpyDtoH(out, dout, sizeof out);
    for (bad = 0, i = 0; i < 16384; i++) bad += out[i] != (float)(16383 - i);
    TC_CHECKF(bad == 0, "%d wrong", bad);
    p_cuMemFree(dx), p_cuMemFree(dout);
}

TC_TEST(test_struct_parameter) {
    struct Affine { float scale, shift; int n; double bias; } p = {2.0f, -1.0f, 5, 0.5};
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8];
    int i;
    CUdeviceptr dx = dalloc(sizeof x), dy = dalloc(sizeof y);
    void *args[] = {&p, &dx, &dy};
    p_cuMemcpyHtoD(dx, x, sizeof x);
    p_cuMemcpyHtoD(dy, x, sizeof x);
    TC_CHECK(launch(fn("affine"), 1, 1, 1, 8, 1, 1, 0, NULL, args) == CUDA_SUCCESS);
    p_cuMemcpyDtoH(y, dy, sizeof y);
    for (i = 0; i < 8; i++) TC_CHECKF(y[i] == (i < 5 ? x[i] * 2.0f - 0.5f : x[i]), "y[%d] = %g", i, y[i]);
    p_cuMemFree(dx), p_cuMemFree(dy);
}

TC_TEST(test_atomics) {
    enum { N = 1000 };
    int x[N], i, sum = 0, imin = 1 << 30, isum, iminv, first = -1;
    unsigned umax = 0, umaxv;
    float fsum = 0;
    unsigned long long cnt = 0;
    double dsum = 0;
    int n = N;
    CUdeviceptr dx = dalloc(sizeof x), d = dalloc(64);
    CUdeviceptr ds = d, dmax = d + 4, dmin = d + 8, df = d + 12, dc = d + 16, dfirst = d + 24, dd = d + 32;
    void *args[] = {&dx, &n, &ds, &dmax, &dmin, &df, &dc, &dfirst, &dd};
    for (i = 0; i < N; i++) x[i] = (i * 37) % 1001;
    p_cuMemcpyHtoD(dx, x, sizeof x);
    p_cuMemcpyHtoD(ds, &sum, 4), p_cuMemcpyHtoD(dmax, &umax, 4), p_cuMemcpyHtoD(dmin, &imin, 4);
    p_cuMemcpyHtoD(df, &fsum, 4), p_cuMemcpyHtoD(dc, &cnt, 8), p_cuMemcpyHtoD(dfirst, &first, 4), p_cuMemcpyHtoD(dd, &dsum, 8);
    setenv("TC_EMU_THREADS", "3", 1);
    TC_CHECK(launch(fn("atomics"), 8, 1, 1, 128, 1, 1, 0, NULL, args) == CUDA_SUCCESS);
    unsetenv("TC_EMU_THREADS");
    p_cuMemcpyDtoH(&isum, ds, 4), p_cuMemcpyDtoH(&umaxv, dmax, 4), p_cuMemcpyDtoH(&iminv, dmin, 4);
    p_cuMemcpyDtoH(&fsum, df, 4), p_cuMemcpyDtoH(&cnt, dc, 8), p_cuMemcpyDtoH(&first, dfirst, 4), p_cuMemcpyDtoH(&dsum, dd, 8);
    for (i = 0; i < N; i++) sum += x[i], umax = (unsigned)x[i] > umax ? (unsigned)x[i] : umax, imin = x[i] - 50 < imin ? x[i] - 50 : imin;
    TC_CHECKF(isum == sum && umaxv == umax && iminv == imin, "sum %d/%d max %u/%u min %d/%d", isum, sum, umaxv, umax, iminv, imin);
    TC_CHECKF(fsum == 500.0f && cnt == N && dsum == 250.0 && first >= 0 && first < N, "%g %llu %g %d", fsum, cnt, dsum, first);
    p_cuMemFree(dx), p_cuMemFree(d);
}

TC_TEST(test_2d_3d_grids) {
    enum { NX = 37, NY = 11, NZ = 5 };
    static int out[NX * NY * NZ];
    unsigned dims[6];
    int nx = NX, ny = NY, nz = NZ, x, y, z, bad = 0;
    CUdeviceptr dout = dalloc(sizeof out), ddims = dalloc(sizeof dims);
    void *args[] = {&dout, &nx, &ny, &nz, &ddims};
    CUstream s;
    p_cuStreamCreate(&s, 0);
    TC_CHECK(p_cuMemsetD32Async(dout, 0, NX * NY * NZ, s) == CUDA_SUCCESS);
    TC_CHECK(launch(fn("index3d"), 3, 4, 2, 16, 3, 4, 0, s, args) == CUDA_SUCCESS); /* 48 x 12 x 8 covers it */
    p_cuStreamSynchronize(s);
    p_cuMemcpyDtoH(out, dout, sizeof out), p_cuMemcpyDtoH(dims, ddims, sizeof dims);
    for (z = 0; z < NZ; z++)
        for (y = 0; y < NY; y++)
            for (x = 0; x < NX; x++) bad += out[(z * NY + y) * NX + x] != 1 + x + 100 * y + 10000 * z;
    TC_CHECKF(bad == 0, "%d of %d wrong", bad, NX * NY * NZ);
    TC_CHECKF(dims[0] == 16 && dims[1] == 3 && dims[2] == 4 && dims[3] == 3 && dims[4] == 4 && dims[5] == 2,
              "dims %u %u %u %u %u %u", dims[0], dims[1], dims[2], dims[3], dims[4], dims[5]);
    /* block and grid limits */
    TC_CHECK(launch(fn("index3d"), 1, 1, 1, 2048, 1, 1, 0, s, args) == CUDA_ERROR_INVALID_VALUE);
    TC_CHECK(launch(fn("index3d"), 1, 1, 1, 32, 32, 2, 0, s, args) == CUDA_ERROR_INVALID_VALUE);
    TC_CHECK(launch(fn("index3d"), 1, 1, 1, 1, 1, 65, 0, s, args) == CUDA_ERROR_INVALID_VALUE);
    TC_CHECK(launch(fn("index3d"), 1, 65536, 1, 1, 1, 1, 0, s, args) == CUDA_ERROR_INVALID_VALUE);
    TC_CHECK(launch(fn("index3d"), 0, 1, 1, 1, 1, 1, 0, s, args) == CUDA_ERROR_INVALID_VALUE);
    p_cuStreamDestroy(s);
    p_cuMemFree(dout), p_cuMemFree(ddims);
}

TC_TEST(test_math) {
    enum { N = 8 };
    float x[N] = {-2.5f, -1.0f, -0.3f, 0.0f, 0.4f, 1.0f, 2.0f, 3.7f}, y[8 * N];
    int bits[4 * N], i;
    CUdeviceptr dx = dalloc(sizeof x), dy = dalloc(sizeof y), db = dalloc(sizeof bits);
    void *args[] = {&dx, &dy, &db};
    p_cuMemcpyHtoD(dx, x, sizeof x);
    TC_CHECK(launch(fn("mathfns"), 1, 1, 1, N, 1, 1, 0, NULL, args) == CUDA_SUCCESS);
    p_cuMemcpyDtoH(y, dy, sizeof y), p_cuMemcpyDtoH(bits, db, sizeof bits);
    for (i = 0; i < N; i++) {
        float v = x[i], sat = v < 0 ? 0 : v > 1 ? 1 : v, want[8];
        int k;
        unsigned h = (unsigned)i * 2654435761u, pop = 0, iv;
        want[0] = expf(v) + tanhf(v);
        want[1] = erff(v) / sqrtf(v * v + 1.0f);
        want[2] = fmaxf(v, 0.25f) + fminf(v, -0.25f) + sat;
        want[3] = expf(v) + logf(v * v + 1.0f) + v / 3.0f;
        want[4] = powf(fabsf(v), 1.5f) + sqrtf(v * v) + floorf(v) + ceilf(v);
        want[5] = (float)(i > 3 ? i : 3) + (float)(i < 3 ? i : 3) + fmaxf(v, 1.0f) + copysignf(1.0f, v);
        want[6] = v == 0.0f ? 1.0f : 2.0f;
        want[7] = fmaf(v, 2.0f, 1.0f) + log1pf(v * v) + exp2f(v) + sinf(v) * cosf(v);
        for (k = 0; k < 8; k++) TC_CHECKF(fabsf(y[8 * i + k] - want[k]) <= 1e-5f * (1 + fabsf(want[k])), "x=%g fn %d: %.9g, want %.9g", v, k, y[8 * i + k], want[k]);
        for (; h; h &= h - 1) pop++;
        memcpy(&iv, &v, 4);
        TC_CHECK(bits[4 * i] == (int)iv && bits[4 * i + 1] == (int)pop && bits[4 * i + 3] == 1);
        TC_CHECKF(bits[4 * i + 2] == (i ? __builtin_clz((unsigned)i) + 100 * __builtin_ffs(i) : 32), "clz/ffs(%d) = %d", i, bits[4 * i + 2]);
    }
    p_cuMemFree(dx), p_cuMemFree(dy), p_cuMemFree(db);
}

/* Captures y = 2 * (a * x + y); z = y (two kernels and a copy) into a graph. */
static CUgraph capture(CUstream s, float *a, int *n, CUdeviceptr *dx, CUdeviceptr *dy, CUdeviceptr dz, int with_copy) {
    CUgraph g = NULL;
    float two = 2.0f;
    void *args1[] = {n, a, dx, dy}, *args2[] = {dy, n, &two};
    TC_CHECK(p_cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
    TC_CHECK(launch(fn("saxpy"), 2, 1, 1, 64, 1, 1, 0, s, args1) == CUDA_SUCCESS);
    TC_CHECK(launch(fn("scale"), 2, 1, 1, 64, 1, 1, 0, s, args2) == CUDA_SUCCESS);
    if (with_copy) TC_CHECK(p_cuMemcpyDtoDAsync(dz, *dy, (size_t)*n * sizeof(float), s) == CUDA_SUCCESS);
    TC_CHECK(p_cuStreamEndCapture(s, &g) == CUDA_SUCCESS && g);
    return g;
}

TC_TEST(test_graph_capture_replay_update) {
    enum { N = 100 };
    float x[N], y[N], z[N], ref[N], a = 0.5f;
    int n = N, i, r, bad = 0;
    CUdeviceptr dx = dalloc(sizeof x), dy = dalloc(sizeof y), dz = dalloc(sizeof z);
    CUstream s;
    CUgraph g, g1, g2, g3;
    CUgraphExec e;
    CUgraphExecUpdateResultInfo info;
    CUstreamCaptureStatus st;
    tcemu_stats_t s0, s1;
    for (i = 0; i < N; i++) x[i] = (float)(i % 10), y[i] = (float)(i % 3), ref[i] = y[i];
    p_cuMemcpyHtoD(dx, x, sizeof x), p_cuMemcpyHtoD(dy, y, sizeof y);
    p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    s0 = stats();
    g = g1 = capture(s, &a, &n, &dx, &dy, dz, 1);
    a = 100.0f; /* parameters were copied at capture: the replays still use 0.5 */
    s1 = stats();
    TC_CHECK(s1.captures == s0.captures + 1 && s1.kernels_run == s0.kernels_run); /* captured, not run */
    TC_CHECK(p_cuGraphInstantiate(&e, g, 0) == CUDA_SUCCESS);
    for (r = 0; r < 3; r++) TC_CHECK(p_cuGraphLaunch(e, s) == CUDA_SUCCESS);
    TC_CHECK(p_cuStreamSynchronize(s) == CUDA_SUCCESS);
    s1 = stats();
    TC_CHECKF(s1.graph_launches == s0.graph_launches + 3 && s1.kernels_run == s0.kernels_run + 6 &&
                  s1.memcpy_dtod == s0.memcpy_dtod + 3, "graph launches %lld, kernels %lld",
              s1.graph_launches - s0.graph_launches, s1.kernels_run - s0.kernels_run);
    p_cuMemcpyDtoH(z, dz, sizeof z);
    for (r = 0; r < 3; r++)
        for (i = 0; i < N; i++) ref[i] = 2.0f * (0.5f * x[i] + ref[i]);
    for (i = 0; i < N; i++) bad += z[i] != ref[i];
    TC_CHECKF(bad == 0, "%d wrong after 3 replays", bad);
    /* the same graph with a new parameter updates the executable one */
    a = -1.0f;
    g2 = capture(s, &a, &n, &dx, &dy, dz, 1);
    TC_CHECK(p_cuGraphExecUpdate(e, g2, &info) == CUDA_SUCCESS && info.result == CU_GRAPH_EXEC_UPDATE_SUCCESS);
    TC_CHECK(p_cuGraphLaunch(e, s) == CUDA_SUCCESS);
    p_cuMemcpyDtoH(z, dz, sizeof z);
    for (bad = 0, i = 0; i < N; i++) bad += z[i] != 2.0f * (-1.0f * x[i] + ref[i]);
    TC_CHECKF(bad == 0, "%d wrong after the update", bad);
    /* ... but not one of another shape */
    g3 = capture(s, &a, &n, &dx, &dy, dz, 0);
    TC_CHECK(p_cuGraphExecUpdate(e, g3, &info) == CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE &&
             info.result == CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
    /* a synchronous call during a capture invalidates it */
    TC_CHECK(p_cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
    TC_CHECK(p_cuMemcpyHtoD(dx, x, sizeof x) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    TC_CHECK(p_cuStreamIsCapturing(s, &st) == CUDA_SUCCESS && st == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    TC_CHECK(p_cuStreamEndCapture(s, &g) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    TC_CHECK(p_cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    p_cuGraphExecDestroy(e), p_cuGraphDestroy(g1), p_cuGraphDestroy(g2), p_cuGraphDestroy(g3);
    TC_CHECK(p_cuGraphDestroy(g2) == CUDA_ERROR_INVALID_HANDLE);
    p_cuStreamDestroy(s);
    p_cuMemFree(dx), p_cuMemFree(dy), p_cuMemFree(dz);
}

/* Two modules whose kernel and parameter struct share names but not sizes
 * (two programs of a code generator): each launch, captured or not, must
 * use its own module's parameter layout.  Before the trampolines moved to
 * an unnamed namespace the second module read the first one's sizes
 * (g++'s STB_GNU_UNIQUE) and a replay copied a truncated struct. */
TC_TEST(test_same_names_in_two_modules) {
    static const char *src_a = "struct P { float *y; };\n"
                               "extern \"C\" __global__ void k(const P p) { p.y[threadIdx.x] = 1.0f; }\n";
    static const char *src_b = "struct P { long long pad[6]; float *y; int n; };\n"
                               "extern \"C\" __global__ void k(const P p) { if ((int)threadIdx.x < p.n) p.y[threadIdx.x] = 2.0f; }\n";
    struct { long long pad[6]; CUdeviceptr y; int n; } pb;
    CUmodule ma = load(src_a, "-arch=sm_90"), mb = load(src_b, "-arch=sm_90");
    CUfunction fa = NULL, fb = NULL;
    CUdeviceptr ya = dalloc(32 * sizeof(float)), yb = dalloc(32 * sizeof(float));
    CUstream s;
    CUgraph g = NULL;
    CUgraphExec e = NULL;
    float out[32];
    void *aa[1], *ab[1];
    int i, bad = 0;
    if (!ma || !mb) return;
    TC_CHECK(p_cuModuleGetFunction(&fa, ma, "k") == CUDA_SUCCESS && p_cuModuleGetFunction(&fb, mb, "k") == CUDA_SUCCESS);
    memset(&pb, 0, sizeof pb);
    pb.y = yb;
    pb.n = 32;
    aa[0] = &ya;
    ab[0] = &pb;
    p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    TC_CHECK(launch(fa, 1, 1, 1, 32, 1, 1, 0, s, aa) == CUDA_SUCCESS);
    TC_CHECK(p_cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
    TC_CHECK(launch(fb, 1, 1, 1, 32, 1, 1, 0, s, ab) == CUDA_SUCCESS);
    TC_CHECK(p_cuStreamEndCapture(s, &g) == CUDA_SUCCESS && g);
    pb.n = 0; /* the capture took its copy */
    TC_CHECK(p_cuGraphInstantiate(&e, g, 0) == CUDA_SUCCESS && p_cuGraphLaunch(e, s) == CUDA_SUCCESS);
    p_cuStreamSynchronize(s);
    p_cuMemcpyDtoH(out, yb, sizeof out);
    for (i = 0; i < 32; i++) bad += out[i] != 2.0f;
    TC_CHECKF(!bad, "%d of 32 elements not written by the replay (out[0] = %g)", bad, out[0]);
    p_cuGraphExecDestroy(e);
    p_cuGraphDestroy(g);
    p_cuStreamDestroy(s);
    p_cuMemFree(ya), p_cuMemFree(yb);
    p_cuModuleUnload(ma), p_cuModuleUnload(mb);
}

TC_TEST(test_launch_errors_are_reported_not_hung) {
    CUmodule m = load(bad_src, "-arch=sm_90"), keep = mod;
    CUfunction f;
    CUdeviceptr d = dalloc(64 * sizeof(float));
    void *args[] = {&d};
    if (!m) return;
    mod = m;
    TC_CHECK(launch(fn("divergent_sync"), 1, 1, 1, 32, 1, 1, 0, NULL, args) == CUDA_ERROR_LAUNCH_FAILED);
    TC_CHECKF(strstr(p_last_error(), "divergent_sync") && strstr(p_last_error(), "__syncthreads"), "%s", p_last_error());
    TC_CHECK(launch(fn("early_exit"), 1, 1, 1, 64, 1, 1, 0, NULL, args) == CUDA_ERROR_LAUNCH_FAILED);
    TC_CHECKF(strstr(p_last_error(), "thread (63,0,0)") && strstr(p_last_error(), "after 40 threads"), "%s", p_last_error());
    TC_CHECK(launch(fn("lane_exits"), 1, 1, 1, 32, 1, 1, 0, NULL, args) == CUDA_ERROR_LAUNCH_FAILED);
    TC_CHECKF(strstr(p_last_error(), "lane_exits") && strstr(p_last_error(), "thread (5,0,0)"), "%s", p_last_error());
    TC_CHECK(launch(fn("deadlock"), 1, 1, 1, 32, 1, 1, 0, NULL, args) == CUDA_ERROR_LAUNCH_FAILED);
    TC_CHECKF(strstr(p_last_error(), "deadlock") && strstr(p_last_error(), "warp collective"), "%s", p_last_error());
    TC_CHECK(launch(fn("asserts"), 1, 1, 1, 32, 1, 1, 0, NULL, args) == CUDA_ERROR_LAUNCH_FAILED);
    TC_CHECKF(strstr(p_last_error(), "thread (5,0,0): assertion failed: threadIdx.x < 5"), "%s", p_last_error());
    /* the library is still usable after a failed launch */
    TC_CHECK(launch(fn("divergent_sync"), 1, 1, 1, 16, 1, 1, 0, NULL, args) == CUDA_SUCCESS);
    /* a fault in a kernel names it (in a child process, which it kills) */
    {
        int fds[2], st = 0;
        char buf[1024] = "";
        ssize_t k = 0, got;
        CUdeviceptr bad = 16;
        void *wargs[] = {&bad};
        pid_t pid;
        CUfunction w = fn("wild");
        TC_CHECK(pipe(fds) == 0);
        fflush(NULL);
        if ((pid = fork()) == 0) {
            dup2(fds[1], 2);
            launch(w, 2, 1, 1, 32, 1, 1, 0, NULL, wargs);
            _exit(0);
        }
        close(fds[1]);
        while (k < (ssize_t)sizeof buf - 1 && (got = read(fds[0], buf + k, sizeof buf - 1 - (size_t)k)) > 0) k += got;
        close(fds[0]);
        waitpid(pid, &st, 0);
        TC_CHECKF(!(WIFEXITED(st) && WEXITSTATUS(st) == 0) && strstr(buf, "SIGSEGV in kernel 'wild' block (1,0,0) thread (3,0,0)"),
                  "status %d, stderr: %.300s", st, buf);
    }
    /* a kernel without extern "C" has a mangled name, as with the real NVRTC */
    TC_CHECK(p_cuModuleGetFunction(&f, m, "mangled") == CUDA_ERROR_NOT_FOUND);
    mod = keep;
    TC_CHECK(p_cuModuleUnload(m) == CUDA_SUCCESS);
    TC_CHECK(p_cuModuleUnload(m) == CUDA_ERROR_INVALID_HANDLE);
    p_cuMemFree(d);
}

TC_TEST(test_compile_errors) {
    char log[4096], *img;
    const char *bad_opt[] = {"--no-such-option"}, *old_arch[] = {"-arch=sm_20"}, *sm70[] = {"-arch=sm_70"};
    int maj = 0, min = 0;
    tcemu_stats_t s0 = stats();
    TC_CHECK(compile(&emu, syntax_error_src, "src/bad.cu", 0, NULL, 0, &img, log, sizeof log) == NVRTC_ERROR_COMPILATION);
    TC_CHECKF(strstr(log, "src/bad.cu:3") && strstr(log, "undeclared_name"), "log: %s", log);
    TC_CHECK(compile(&emu, syntax_error_src, "bad.cu", 1, bad_opt, 0, &img, log, sizeof log) == NVRTC_ERROR_INVALID_OPTION);
    TC_CHECK(compile(&emu, syntax_error_src, "bad.cu", 1, old_arch, 0, &img, log, sizeof log) == NVRTC_ERROR_INVALID_OPTION);
    setenv("TC_EMU_NVRTC_VERSION", "13.0", 1); /* which lists sm_75 and up */
    TC_CHECK(emu.nvrtcVersion(&maj, &min) == NVRTC_SUCCESS && maj == 13 && min == 0);
    TC_CHECK(compile(&emu, syntax_error_src, "bad.cu", 1, sm70, 0, &img, log, sizeof log) == NVRTC_ERROR_INVALID_OPTION);
    unsetenv("TC_EMU_NVRTC_VERSION");
    TC_CHECK(stats().nvrtc_compiles == s0.nvrtc_compiles + 1);
}

TC_TEST(test_module_images) {
    const char *sm80[] = {"-arch=sm_80"}, *virt[] = {"-arch=compute_80"};
    char *cubin, *ptx;
    CUmodule m;
    CUfunction f;
    TC_CHECK(p_cuModuleLoadData(&m, "not an image") == CUDA_ERROR_INVALID_IMAGE);
    TC_CHECK(compile(&emu, "extern \"C\" __global__ void k(float *x) { x[0] = 1.0f; }", "k.cu", 1, sm80, 0, &cubin, NULL, 0) == NVRTC_SUCCESS);
    TC_CHECK(compile(&emu, "extern \"C\" __global__ void k(float *x) { x[0] = 1.0f; }", "k.cu", 1, virt, 1, &ptx, NULL, 0) == NVRTC_SUCCESS);
    if (!cubin || !ptx) return;
    /* a cubin runs only on its own major version; PTX is compiled for later ones */
    TC_CHECK(p_cuModuleLoadData(&m, cubin) == CUDA_ERROR_NO_BINARY_FOR_GPU);
    TC_CHECK(p_cuModuleLoadData(&m, ptx) == CUDA_SUCCESS && p_cuModuleGetFunction(&f, m, "k") == CUDA_SUCCESS);
    p_cuModuleUnload(m);
    setenv("TC_EMU_DRIVER_VERSION", "12000", 1); /* PTX from a newer NVRTC than the driver */
    TC_CHECK(p_cuModuleLoadData(&m, ptx) == CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
    unsetenv("TC_EMU_DRIVER_VERSION");
    TC_CHECK(p_cuModuleGetFunction(&f, m, "k") == CUDA_ERROR_INVALID_HANDLE);
    TC_CHECK(launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL) == CUDA_ERROR_INVALID_HANDLE); /* its module is gone */
    setenv("TC_EMU_SM", "86", 1);
    TC_CHECK(p_cuModuleLoadData(&m, cubin) == CUDA_SUCCESS && p_cuModuleGetFunction(&f, m, "k") == CUDA_SUCCESS);
    p_cuModuleUnload(m);
    unsetenv("TC_EMU_SM");
    free(cubin), free(ptx);
}

TC_TEST(test_headers_and_options) {
    const char *hdr[] = {"__device__ inline float twice(float v) { return 2.0f * v; }\n"}, *hname[] = {"lib/twice.h"};
    const char *src = "#include \"lib/twice.h\"\n"
                      "extern \"C\" __global__ void k(float *x) { x[threadIdx.x] = twice(x[threadIdx.x]) * SCALE; }\n";
    const char *opts[] = {"--gpu-architecture=sm_90", "--use_fast_math", "-lineinfo", "-Xptxas", "-v", "--define-macro=SCALE=3",
                          "-std=c++17"};
    float x[4] = {1, 2, 3, 4};
    nvrtcProgram p;
    size_t n = 0;
    int ok;
    char *img = NULL, log[1024] = "";
    CUmodule m;
    CUfunction f;
    CUdeviceptr d = dalloc(sizeof x);
    void *args[] = {&d};
    TC_CHECK(emu.nvrtcCreateProgram(&p, src, "h.cu", 1, hdr, hname) == NVRTC_SUCCESS);
    TC_CHECK(emu.nvrtcCompileProgram(p, 7, opts) == NVRTC_SUCCESS);
    TC_CHECK(emu.nvrtcGetProgramLogSize(p, &n) == NVRTC_SUCCESS && n < sizeof log && emu.nvrtcGetProgramLog(p, log) == NVRTC_SUCCESS);
    TC_CHECKF(strstr(log, "ptxas info") && strstr(log, "'k'"), "log: %s", log); /* -Xptxas -v */
    if (emu.nvrtcGetCUBINSize(p, &n) == NVRTC_SUCCESS && n) img = (char *)malloc(n), emu.nvrtcGetCUBIN(p, img);
    emu.nvrtcDestroyProgram(&p);
    ok = img && p_cuModuleLoadData(&m, img) == CUDA_SUCCESS && p_cuModuleGetFunction(&f, m, "k") == CUDA_SUCCESS;
    free(img);
    TC_CHECK(ok);
    if (!ok) return;
    p_cuMemcpyHtoD(d, x, sizeof x);
    TC_CHECK(launch(f, 1, 1, 1, 4, 1, 1, 0, NULL, args) == CUDA_SUCCESS);
    p_cuMemcpyDtoH(x, d, sizeof x);
    TC_CHECKF(x[0] == 6 && x[1] == 12 && x[2] == 18 && x[3] == 24, "%g %g %g %g", x[0], x[1], x[2], x[3]);
    p_cuModuleUnload(m), p_cuMemFree(d);
}

TC_TEST(test_streams_events_and_copies) {
    CUstream s;
    CUevent a = NULL, b = NULL, untimed = NULL;
    CUdevice dev = -1;
    float ms = -1, *pinned = NULL;
    unsigned v[4];
    const char *str = NULL;
    CUdeviceptr d = dalloc(sizeof v), d2 = dalloc(sizeof v);
    TC_CHECK(p_cuStreamCreate(&s, 0) == CUDA_SUCCESS && p_cuEventCreate(&a, 0) == CUDA_SUCCESS);
    TC_CHECK(p_cuEventCreate(&b, 0) == CUDA_SUCCESS && p_cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS);
    TC_CHECK(p_cuEventElapsedTime(&ms, a, b) == CUDA_ERROR_INVALID_HANDLE); /* not recorded yet */
    TC_CHECK(p_cuEventRecord(a, s) == CUDA_SUCCESS && p_cuMemsetD32(d, 0xdeadbeef, 4) == CUDA_SUCCESS);
    TC_CHECK(p_cuMemcpyDtoD(d2, d, sizeof v) == CUDA_SUCCESS && p_cuEventRecord(b, s) == CUDA_SUCCESS);
    TC_CHECK(p_cuStreamWaitEvent(s, b, 0) == CUDA_SUCCESS && p_cuStreamQuery(s) == CUDA_SUCCESS && p_cuEventQuery(b) == CUDA_SUCCESS);
    TC_CHECK(p_cuEventSynchronize(b) == CUDA_SUCCESS && p_cuEventElapsedTime(&ms, a, b) == CUDA_SUCCESS && ms >= 0);
    TC_CHECK(p_cuEventRecord(untimed, s) == CUDA_SUCCESS && p_cuEventElapsedTime(&ms, a, untimed) == CUDA_ERROR_INVALID_HANDLE);
    TC_CHECK(p_cuMemcpyDtoH(v, d2, sizeof v) == CUDA_SUCCESS && v[0] == 0xdeadbeef && v[3] == 0xdeadbeef);
    TC_CHECK(p_cuMemsetD8(d2 + 1, 0x11, 2) == CUDA_SUCCESS && p_cuMemcpyDtoH(v, d2, sizeof v) == CUDA_SUCCESS);
    TC_CHECKF(v[0] == 0xde1111ef && v[1] == 0xdeadbeef, "%08x %08x", v[0], v[1]);
    TC_CHECK(p_cuMemsetD32(d + 2, 0, 1) == CUDA_ERROR_INVALID_VALUE); /* misaligned */
    TC_CHECK(p_cuMemAllocHost((void **)&pinned, 64) == CUDA_SUCCESS && p_cuMemFreeHost(pinned) == CUDA_SUCCESS);
    TC_CHECK(p_cuMemFreeHost(v) == CUDA_ERROR_INVALID_VALUE);
    TC_CHECK(p_cuCtxGetDevice(&dev) == CUDA_SUCCESS && dev == 0);
    TC_CHECK(p_cuGetErrorName(CUDA_ERROR_LAUNCH_FAILED, &str) == CUDA_SUCCESS && !strcmp(str, "CUDA_ERROR_LAUNCH_FAILED"));
    TC_CHECK(p_cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &str) == CUDA_SUCCESS && !strcmp(str, "out of memory"));
    TC_CHECK(p_cuGetErrorName((CUresult)12345, &str) == CUDA_ERROR_INVALID_VALUE);
    p_cuEventDestroy(a), p_cuEventDestroy(b), p_cuEventDestroy(untimed);
    TC_CHECK(p_cuEventDestroy(a) == CUDA_ERROR_INVALID_HANDLE && p_cuStreamDestroy(s) == CUDA_SUCCESS);
    TC_CHECK(p_cuStreamQuery(s) == CUDA_ERROR_INVALID_HANDLE);
    p_cuMemFree(d), p_cuMemFree(d2);
}

TC_TEST(test_memory_errors_and_faults) {
    float host[16] = {0};
    size_t fr, total;
    CUdeviceptr d = dalloc(64), d2 = 0;
    long long live = stats().live_allocs;
    TC_CHECK(p_cuMemcpyDtoH(host, (CUdeviceptr)(uintptr_t)host, sizeof host) == CUDA_ERROR_INVALID_VALUE); /* a host pointer */
    TC_CHECK(p_cuMemcpyHtoD(d + 16, host, 64) == CUDA_ERROR_INVALID_VALUE); /* past the allocation */
    TC_CHECK(p_cuMemcpyHtoD(d + 16, host, 48) == CUDA_SUCCESS);
    TC_CHECK(p_cuMemFree(d + 16) == CUDA_ERROR_INVALID_VALUE);
    TC_CHECK(p_cuMemFree(d) == CUDA_SUCCESS && p_cuMemFree(d) == CUDA_ERROR_INVALID_VALUE);
    TC_CHECK(stats().live_allocs == live - 1);
    /* the n-th later call fails once */
    TC_CHECK(p_fail_after("cuMemAlloc_v2", 2) == 0 && p_fail_after("cuNoSuchFunction", 1) == -1);
    TC_CHECK(p_cuMemAlloc(&d, 16) == CUDA_SUCCESS && p_cuMemFree(d) == CUDA_SUCCESS);
    TC_CHECK(p_cuMemAlloc(&d, 16) == CUDA_ERROR_OUT_OF_MEMORY);
    TC_CHECK(p_cuMemAlloc(&d, 16) == CUDA_SUCCESS && p_cuMemFree(d) == CUDA_SUCCESS);
    TC_CHECK(p_fail_after("cuLaunchKernel", 1) == 0);
    p_reset_faults();
    TC_CHECK(p_cuMemAlloc(&d, 16) == CUDA_SUCCESS && p_cuMemFree(d) == CUDA_SUCCESS);
    /* the memory budget */
    setenv("TC_EMU_MEM_MB", "1", 1);
    TC_CHECK(p_cuMemGetInfo(&fr, &total) == CUDA_SUCCESS && total == 1 << 20 && fr <= total);
    TC_CHECK(p_cuMemAlloc(&d, 600 << 10) == CUDA_SUCCESS);
    TC_CHECK(p_cuMemAlloc(&d2, 600 << 10) == CUDA_ERROR_OUT_OF_MEMORY);
    p_cuMemFree(d);
    TC_CHECK(p_cuMemAlloc(&d2, 600 << 10) == CUDA_SUCCESS && p_cuMemFree(d2) == CUDA_SUCCESS);
    unsetenv("TC_EMU_MEM_MB");
}

/* The kernels are CUDA: the real NVRTC compiles them for sm_80 and sm_90. */
static void *real_nvrtc(char *why, size_t cap) {
    const char *env = getenv("TCEMU_REAL_NVRTC");
    const char *paths[] = {env, "/usr/local/cuda/lib64/libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.13",
                           "/usr/local/cuda/lib64/libnvrtc.so.12"};
    size_t i;
    snprintf(why, cap, "no libnvrtc in /usr/local/cuda/lib64 (set TCEMU_REAL_NVRTC)");
    for (i = 0; i < sizeof paths / sizeof *paths; i++) {
        void *h = paths[i] ? dlopen(paths[i], RTLD_NOW | RTLD_LOCAL) : NULL;
        if (h && load_nvrtc(h, &real)) return h;
        if (h) snprintf(why, cap, "%s lacks an entry point", paths[i]);
    }
    return NULL;
}
TC_TEST(test_kernels_compile_with_real_nvrtc) {
    char why[256], log[8192];
    const char *srcs[] = {kernels_src, bad_src}, *archs[] = {"-arch=sm_80", "-arch=sm_90"};
    int i, a;
    void *h = real_nvrtc(why, sizeof why);
    if (!h) {
        SKIP("real NVRTC: %s", why);
        return;
    }
    for (i = 0; i < 2; i++)
        for (a = 0; a < 2; a++) {
            const char *opts[] = {archs[a], "-DTCEMU_TEST=1"};
            char *img;
            nvrtcResult r = compile(&real, srcs[i], "kernels.cu", 2, opts, 0, &img, log, sizeof log);
            TC_CHECKF(r == NVRTC_SUCCESS && img, "real NVRTC %s, source %d: %d\n%s", archs[a], i, (int)r, log);
            free(img);
        }
    /* and rejects the broken one where tcemu does */
    TC_CHECK(compile(&real, syntax_error_src, "bad.cu", 0, NULL, 0, NULL, log, sizeof log) == NVRTC_ERROR_COMPILATION);
    TC_CHECKF(strstr(log, "bad.cu(3)"), "real log: %s", log);
}

TC_TEST(test_teardown) {
    CUdeviceptr d = dalloc(16); /* the context's last release frees what is left */
    (void)d;
    TC_CHECK(!mod || (p_cuModuleUnload(mod) == CUDA_SUCCESS && stats().modules_live == 0));
    TC_CHECK(p_cuDevicePrimaryCtxRelease(0) == CUDA_SUCCESS && stats().live_allocs == 0);
    TC_CHECK(p_cuMemAlloc(&d, 16) == CUDA_ERROR_CONTEXT_IS_DESTROYED);
}

int main(int argc, char **argv) {
    const char *path = argc > 1 ? argv[1] : getenv("TCEMU_LIB");
    void *lib = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    size_t i;
    for (i = 0; i < sizeof kernels_parts / sizeof *kernels_parts; i++) strcat(kernels_src, kernels_parts[i]);
    if (!lib || !load_emu(lib)) {
        fprintf(stderr, "cannot load libtcemu.so from '%s': %s\n", path ? path : "(give a path or set TCEMU_LIB)", lib ? "" : dlerror());
        printf("0 passed, 1 failed\n");
        return 1;
    }
    TC_RUN(test_before_init_and_context);
    TC_RUN(test_device_attributes);
    TC_RUN(test_compile_and_load);
    if (mod) {
        TC_RUN(test_saxpy_grid_stride);
        TC_RUN(test_block_reduction_shared);
        TC_RUN(test_warp_collectives);
        TC_RUN(test_dynamic_shared);
        TC_RUN(test_struct_parameter);
        TC_RUN(test_atomics);
        TC_RUN(test_2d_3d_grids);
        TC_RUN(test_math);
        TC_RUN(test_graph_capture_replay_update);
        TC_RUN(test_same_names_in_two_modules);
        TC_RUN(test_launch_errors_are_reported_not_hung);
    }
    TC_RUN(test_compile_errors);
    TC_RUN(test_module_images);
    TC_RUN(test_headers_and_options);
    TC_RUN(test_streams_events_and_copies);
    TC_RUN(test_memory_errors_and_faults);
    TC_RUN(test_kernels_compile_with_real_nvrtc);
    TC_RUN(test_teardown);
    printf("%d passed, %d failed, %d skipped\n", tct_passed, tct_tests_failed, tct_skipped);
    return tct_tests_failed != 0;
}
