/* The CUDA driver and NVRTC, found at run time.
 *
 * Nothing here needs the CUDA SDK to build: the driver's and NVRTC's ABI is
 * mirrored below under tcompile's own names (a user who includes <cuda.h>
 * gets no clash), and tests/test_cuda_abi.cpp checks every mirrored
 * signature, constant and struct against the real headers.  Functions are
 * looked up by their exported, versioned names (cuMemAlloc_v2, ...): the
 * unversioned ones are the old ABIs the driver keeps for old binaries.
 *
 * The libraries, the device and its primary context are process-wide and
 * loaded once (tc__cuda_load); a context's own CUDA state (its stream, its
 * cache of device blocks and of loaded modules) is tc__cuda_ctx, made when
 * the context first touches the device.  TC_NO_CUDA compiles all of it out. */

#ifndef TC_NO_CUDA

#if defined(_WIN32)
#define TC__CUAPI __stdcall
#else
#define TC__CUAPI
#endif

/* ---- the mirrored ABI ------------------------------------------------------ */

/* X(name, value): each becomes TC__<name>; the ABI test compares each with
 * the real header's <name>. */
#define TC__CU_RESULTS(X)                                                                                      \
    X(CUDA_SUCCESS, 0) X(CUDA_ERROR_INVALID_VALUE, 1) X(CUDA_ERROR_OUT_OF_MEMORY, 2)                           \
    X(CUDA_ERROR_NOT_INITIALIZED, 3) X(CUDA_ERROR_DEINITIALIZED, 4) X(CUDA_ERROR_NO_DEVICE, 100)               \
    X(CUDA_ERROR_INVALID_IMAGE, 200) X(CUDA_ERROR_INVALID_CONTEXT, 201) X(CUDA_ERROR_NO_BINARY_FOR_GPU, 209)   \
    X(CUDA_ERROR_INVALID_PTX, 218) X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222) X(CUDA_ERROR_NOT_FOUND, 500)     \
    X(CUDA_ERROR_ILLEGAL_ADDRESS, 700) X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, 701)                              \
    X(CUDA_ERROR_LAUNCH_FAILED, 719) X(CUDA_ERROR_NOT_SUPPORTED, 801)                                          \
    X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 900) X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, 901)                \
    X(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, 910) X(CUDA_ERROR_UNKNOWN, 999)
#define TC__CU_DEVICE_ATTRS(X)                                                                                 \
    X(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1) X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 8)      \
    X(CU_DEVICE_ATTRIBUTE_WARP_SIZE, 10) X(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 16)                       \
    X(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 38) X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 75)               \
    X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 76) X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 97)
#define TC__CU_FUNC_ATTRS(X)                                                                                   \
    X(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0) X(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, 1)                    \
    X(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, 3) X(CU_FUNC_ATTRIBUTE_NUM_REGS, 4)                                  \
    X(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 8)
#define TC__CU_CAPTURE_MODES(X)                                                                                \
    X(CU_STREAM_CAPTURE_MODE_GLOBAL, 0) X(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, 1) X(CU_STREAM_CAPTURE_MODE_RELAXED, 2)
#define TC__CU_CAPTURE_STATUS(X)                                                                               \
    X(CU_STREAM_CAPTURE_STATUS_NONE, 0) X(CU_STREAM_CAPTURE_STATUS_ACTIVE, 1)                                  \
    X(CU_STREAM_CAPTURE_STATUS_INVALIDATED, 2)
#define TC__CU_UPDATE_RESULTS(X) X(CU_GRAPH_EXEC_UPDATE_SUCCESS, 0) X(CU_GRAPH_EXEC_UPDATE_ERROR, 1)
#define TC__CU_FLAGS(X) X(CU_STREAM_NON_BLOCKING, 1) X(CU_EVENT_DEFAULT, 0)
#define TC__NVRTC_RESULTS(X)                                                                                   \
    X(NVRTC_SUCCESS, 0) X(NVRTC_ERROR_OUT_OF_MEMORY, 1) X(NVRTC_ERROR_INVALID_INPUT, 3)                        \
    X(NVRTC_ERROR_INVALID_OPTION, 5) X(NVRTC_ERROR_COMPILATION, 6)

#define TC__CU_ENUM_(name, v) TC__##name = v,
typedef enum tc__cudaError_enum { TC__CU_RESULTS(TC__CU_ENUM_) TC__CU_RESULT_END_ } tc__CUresult;
typedef enum tc__CUdevice_attribute_enum { TC__CU_DEVICE_ATTRS(TC__CU_ENUM_) TC__CU_DATTR_END_ } tc__CUdevice_attribute;
typedef enum tc__CUfunction_attribute_enum { TC__CU_FUNC_ATTRS(TC__CU_ENUM_) TC__CU_FATTR_END_ } tc__CUfunction_attribute;
typedef enum tc__CUstreamCaptureMode_enum { TC__CU_CAPTURE_MODES(TC__CU_ENUM_) TC__CU_CMODE_END_ } tc__CUstreamCaptureMode;
typedef enum tc__CUstreamCaptureStatus_enum { TC__CU_CAPTURE_STATUS(TC__CU_ENUM_) TC__CU_CSTAT_END_ } tc__CUstreamCaptureStatus;
typedef enum tc__CUgraphExecUpdateResult_enum { TC__CU_UPDATE_RESULTS(TC__CU_ENUM_) TC__CU_UPD_END_ } tc__CUgraphExecUpdateResult;
enum { TC__CU_FLAGS(TC__CU_ENUM_) TC__CU_FLAGS_END_ };
typedef enum tc__nvrtcResult_enum { TC__NVRTC_RESULTS(TC__CU_ENUM_) TC__NVRTC_END_ } tc__nvrtcResult;
#undef TC__CU_ENUM_

typedef int tc__CUdevice;
#if defined(_WIN64) || defined(__LP64__)
typedef unsigned long long tc__CUdeviceptr;
#else
typedef unsigned int tc__CUdeviceptr;
#endif
typedef struct tc__CUctx_st *tc__CUcontext;
typedef struct tc__CUmod_st *tc__CUmodule;
typedef struct tc__CUfunc_st *tc__CUfunction;
typedef struct tc__CUstream_st *tc__CUstream;
typedef struct tc__CUevent_st *tc__CUevent;
typedef struct tc__CUgraph_st *tc__CUgraph;
typedef struct tc__CUgraphExec_st *tc__CUgraphExec;
typedef struct tc__CUgraphNode_st *tc__CUgraphNode;
typedef struct tc__CUgraphExecUpdateResultInfo_st {
    tc__CUgraphExecUpdateResult result;
    tc__CUgraphNode errorNode, errorFromNode;
} tc__CUgraphExecUpdateResultInfo;
typedef struct tc__nvrtcProgram_st *tc__nvrtcProgram;

/* X(field, exported symbol, return type, parameters): the driver's entry
 * points tcompile uses.  Every one must resolve, or the driver is reported
 * too old (cuGraphExecUpdate_v2 is the newest: CUDA 12.0). */
#define TC__CU_FUNCS(X)                                                                                        \
    X(Init, cuInit, tc__CUresult, (unsigned int flags))                                                        \
    X(DriverGetVersion, cuDriverGetVersion, tc__CUresult, (int *version))                                      \
    X(DeviceGetCount, cuDeviceGetCount, tc__CUresult, (int *count))                                            \
    X(DeviceGet, cuDeviceGet, tc__CUresult, (tc__CUdevice * dev, int ordinal))                                 \
    X(DeviceGetName, cuDeviceGetName, tc__CUresult, (char *name, int len, tc__CUdevice dev))                   \
    X(DeviceGetAttribute, cuDeviceGetAttribute, tc__CUresult, (int *pi, tc__CUdevice_attribute a, tc__CUdevice dev)) \
    X(DeviceTotalMem, cuDeviceTotalMem_v2, tc__CUresult, (size_t * bytes, tc__CUdevice dev))                   \
    X(DevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, tc__CUresult, (tc__CUcontext * pctx, tc__CUdevice dev)) \
    X(DevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, tc__CUresult, (tc__CUdevice dev))                 \
    X(CtxSetCurrent, cuCtxSetCurrent, tc__CUresult, (tc__CUcontext ctx))                                       \
    X(CtxGetCurrent, cuCtxGetCurrent, tc__CUresult, (tc__CUcontext * pctx))                                    \
    X(MemAlloc, cuMemAlloc_v2, tc__CUresult, (tc__CUdeviceptr * dptr, size_t bytes))                           \
    X(MemFree, cuMemFree_v2, tc__CUresult, (tc__CUdeviceptr dptr))                                             \
    X(MemGetInfo, cuMemGetInfo_v2, tc__CUresult, (size_t * free_bytes, size_t * total))                       \
    X(MemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, tc__CUresult,                                                     \
      (tc__CUdeviceptr dst, const void *src, size_t bytes, tc__CUstream s))                                   \
    X(MemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, tc__CUresult,                                                     \
      (void *dst, tc__CUdeviceptr src, size_t bytes, tc__CUstream s))                                         \
    X(MemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, tc__CUresult,                                                     \
      (tc__CUdeviceptr dst, tc__CUdeviceptr src, size_t bytes, tc__CUstream s))                               \
    X(MemsetD8Async, cuMemsetD8Async, tc__CUresult,                                                            \
      (tc__CUdeviceptr dst, unsigned char v, size_t n, tc__CUstream s))                                       \
    X(StreamCreate, cuStreamCreate, tc__CUresult, (tc__CUstream * s, unsigned int flags))                      \
    X(StreamDestroy, cuStreamDestroy_v2, tc__CUresult, (tc__CUstream s))                                       \
    X(StreamSynchronize, cuStreamSynchronize, tc__CUresult, (tc__CUstream s))                                  \
    X(StreamBeginCapture, cuStreamBeginCapture_v2, tc__CUresult, (tc__CUstream s, tc__CUstreamCaptureMode mode)) \
    X(StreamEndCapture, cuStreamEndCapture, tc__CUresult, (tc__CUstream s, tc__CUgraph * g))                   \
    X(StreamIsCapturing, cuStreamIsCapturing, tc__CUresult, (tc__CUstream s, tc__CUstreamCaptureStatus * st))  \
    X(GraphInstantiate, cuGraphInstantiateWithFlags, tc__CUresult,                                             \
      (tc__CUgraphExec * e, tc__CUgraph g, unsigned long long flags))                                         \
    X(GraphLaunch, cuGraphLaunch, tc__CUresult, (tc__CUgraphExec e, tc__CUstream s))                           \
    X(GraphExecUpdate, cuGraphExecUpdate_v2, tc__CUresult,                                                     \
      (tc__CUgraphExec e, tc__CUgraph g, tc__CUgraphExecUpdateResultInfo * info))                             \
    X(GraphExecDestroy, cuGraphExecDestroy, tc__CUresult, (tc__CUgraphExec e))                                 \
    X(GraphDestroy, cuGraphDestroy, tc__CUresult, (tc__CUgraph g))                                             \
    X(ModuleLoadData, cuModuleLoadData, tc__CUresult, (tc__CUmodule * m, const void *image))                   \
    X(ModuleGetFunction, cuModuleGetFunction, tc__CUresult, (tc__CUfunction * f, tc__CUmodule m, const char *name)) \
    X(ModuleUnload, cuModuleUnload, tc__CUresult, (tc__CUmodule m))                                            \
    X(LaunchKernel, cuLaunchKernel, tc__CUresult,                                                              \
      (tc__CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by, \
       unsigned int bz, unsigned int shared_bytes, tc__CUstream s, void **params, void **extra))              \
    X(FuncGetAttribute, cuFuncGetAttribute, tc__CUresult, (int *pi, tc__CUfunction_attribute a, tc__CUfunction f)) \
    X(FuncSetAttribute, cuFuncSetAttribute, tc__CUresult, (tc__CUfunction f, tc__CUfunction_attribute a, int v)) \
    X(EventCreate, cuEventCreate, tc__CUresult, (tc__CUevent * e, unsigned int flags))                         \
    X(EventRecord, cuEventRecord, tc__CUresult, (tc__CUevent e, tc__CUstream s))                               \
    X(EventSynchronize, cuEventSynchronize, tc__CUresult, (tc__CUevent e))                                     \
    X(EventElapsedTime, cuEventElapsedTime, tc__CUresult, (float *ms, tc__CUevent a, tc__CUevent b))           \
    X(EventDestroy, cuEventDestroy_v2, tc__CUresult, (tc__CUevent e))                                          \
    X(GetErrorName, cuGetErrorName, tc__CUresult, (tc__CUresult r, const char **s))

#define TC__NVRTC_FUNCS(X)                                                                                     \
    X(Version, nvrtcVersion, tc__nvrtcResult, (int *major, int *minor))                                        \
    X(GetNumSupportedArchs, nvrtcGetNumSupportedArchs, tc__nvrtcResult, (int *n))                              \
    X(GetSupportedArchs, nvrtcGetSupportedArchs, tc__nvrtcResult, (int *archs))                                \
    X(CreateProgram, nvrtcCreateProgram, tc__nvrtcResult,                                                      \
      (tc__nvrtcProgram * p, const char *src, const char *name, int nheaders, const char *const *headers,     \
       const char *const *include_names))                                                                     \
    X(DestroyProgram, nvrtcDestroyProgram, tc__nvrtcResult, (tc__nvrtcProgram * p))                            \
    X(CompileProgram, nvrtcCompileProgram, tc__nvrtcResult, (tc__nvrtcProgram p, int n, const char *const *opts)) \
    X(GetProgramLogSize, nvrtcGetProgramLogSize, tc__nvrtcResult, (tc__nvrtcProgram p, size_t * n))           \
    X(GetProgramLog, nvrtcGetProgramLog, tc__nvrtcResult, (tc__nvrtcProgram p, char *log))                    \
    X(GetCUBINSize, nvrtcGetCUBINSize, tc__nvrtcResult, (tc__nvrtcProgram p, size_t * n))                     \
    X(GetCUBIN, nvrtcGetCUBIN, tc__nvrtcResult, (tc__nvrtcProgram p, char *cubin))                            \
    X(GetPTXSize, nvrtcGetPTXSize, tc__nvrtcResult, (tc__nvrtcProgram p, size_t * n))                         \
    X(GetPTX, nvrtcGetPTX, tc__nvrtcResult, (tc__nvrtcProgram p, char *ptx))                                  \
    X(GetErrorString, nvrtcGetErrorString, const char *, (tc__nvrtcResult r))

/* One pointer type per entry point (tc__pfn_cuInit, ...): the ABI test
 * checks each against the real declaration. */
#define TC__CU_PFN_(f, sym, ret, params) typedef ret(TC__CUAPI *tc__pfn_##sym) params;
#define TC__NV_PFN_(f, sym, ret, params) typedef ret (*tc__pfn_##sym) params;
TC__CU_FUNCS(TC__CU_PFN_)
TC__NVRTC_FUNCS(TC__NV_PFN_)
#undef TC__CU_PFN_
#undef TC__NV_PFN_

/* ---- the process-wide state ------------------------------------------------ */

typedef struct tc__cuda_api {
    int state;                      /* 0 not tried, 1 ready, -1 unavailable */
    char why[256];                  /* the reason when unavailable          */
    void *lib_cuda, *lib_nvrtc;
    char cuda_path[128], nvrtc_path[160];
#define TC__CU_FIELD_(f, sym, ret, params) tc__pfn_##sym f;
    struct { TC__CU_FUNCS(TC__CU_FIELD_) } cu;
    struct { TC__NVRTC_FUNCS(TC__CU_FIELD_) } nv;
#undef TC__CU_FIELD_
    tc__CUdevice dev;
    tc__CUcontext pctx;             /* the device's primary context          */
    int cc_major, cc_minor, sm_count, max_threads, smem_block, smem_optin, l2_bytes;
    int driver_version, nvrtc_major, nvrtc_minor;
    int arch_max;                   /* the newest sm NVRTC targets (CUBIN)   */
    int archs[64], narchs;          /* every sm it targets                   */
    char name[96];
    int lock;
} tc__cuda_api;

static tc__cuda_api tc__cu;

/* The driver's name for a result, for messages. */
TC__FN const char *tc__cu_errname(tc__CUresult r) {
    const char *s = NULL;
    if (tc__cu.cu.GetErrorName && tc__cu.cu.GetErrorName(r, &s) == TC__CUDA_SUCCESS && s) return s;
    return "CUDA_ERROR_?";
}

TC__FN TC__UNUSED tc_result tc__cu_result(tc__CUresult r) {
    return r == TC__CUDA_SUCCESS ? TC_OK : r == TC__CUDA_ERROR_OUT_OF_MEMORY ? TC_ERR_OOM : TC_ERR_DEVICE;
}

/* dlopen's first success among a list of names (the override alone when
 * given). */
TC__FN void *tc__cu_open_first(const char *override, const char *const *names, char *path, size_t cap) {
    void *h;
    if (override && *override) {
        snprintf(path, cap, "%s", override);
        return tc__dl_open(override);
    }
    for (; *names; names++) {
        h = tc__dl_open(*names);
        if (h) {
            snprintf(path, cap, "%s", *names);
            return h;
        }
    }
    return NULL;
}

TC__FN int tc__cu_fail(const char *fmt, const char *a, const char *b) {
    snprintf(tc__cu.why, sizeof tc__cu.why, fmt, a, b);
    tc__cu.state = -1;
    return -1;
}

#if defined(_WIN32)
static const char *const tc__cu_names[] = {"nvcuda.dll", NULL};
static const char *const tc__nv_names[] = {"nvrtc64_130_0.dll", "nvrtc64_120_0.dll", "nvrtc64_112_0.dll", NULL};
#else
static const char *const tc__cu_names[] = {"libcuda.so.1", "libcuda.so", NULL};
/* NVRTC is often only in the toolkit's directory, not on the loader's
 * path: its usual places are tried after the path. */
static const char *const tc__nv_names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so",
                                           "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12",
                                           "/usr/local/cuda/lib64/libnvrtc.so", NULL};
#endif

/* NVRTC alone (the driver is not needed to compile: tests compile every
 * generated kernel on machines without a GPU). */
TC__FN int tc__cu_open_nvrtc(const char *nvrtc_lib) {
    if (tc__cu.lib_nvrtc) return 0;
    if (!nvrtc_lib) nvrtc_lib = getenv("TC_NVRTC_LIB");
    tc__cu.lib_nvrtc = tc__cu_open_first(nvrtc_lib, tc__nv_names, tc__cu.nvrtc_path, sizeof tc__cu.nvrtc_path);
    if (!tc__cu.lib_nvrtc)
        return tc__cu_fail("no NVRTC: %s could not be loaded%s", nvrtc_lib && *nvrtc_lib ? nvrtc_lib : "libnvrtc.so.13/.12/.11.2",
                           " (set TC_NVRTC_LIB to its path)");
#define TC__NV_SYM_(f, sym, ret, params)                                                                       \
    *(void **)&tc__cu.nv.f = tc__dl_sym(tc__cu.lib_nvrtc, #sym);                                               \
    if (!tc__cu.nv.f) {                                                                                        \
        tc__dl_close(tc__cu.lib_nvrtc);                                                                        \
        tc__cu.lib_nvrtc = NULL;                                                                               \
        return tc__cu_fail("NVRTC %s has no %s", tc__cu.nvrtc_path, #sym);                                     \
    }
    TC__NVRTC_FUNCS(TC__NV_SYM_)
#undef TC__NV_SYM_
    return 0;
}

TC__FN int tc__cu_open_libs(const char *cuda_lib, const char *nvrtc_lib) {
    if (!cuda_lib) cuda_lib = getenv("TC_CUDA_LIB");
    tc__cu.lib_cuda = tc__cu_open_first(cuda_lib, tc__cu_names, tc__cu.cuda_path, sizeof tc__cu.cuda_path);
    if (!tc__cu.lib_cuda)
        return tc__cu_fail("no CUDA driver: %s could not be loaded%s", cuda_lib && *cuda_lib ? cuda_lib : "libcuda.so.1",
                           " (no NVIDIA driver installed?)");
#define TC__CU_SYM_(f, sym, ret, params)                                                                       \
    *(void **)&tc__cu.cu.f = tc__dl_sym(tc__cu.lib_cuda, #sym);                                                \
    if (!tc__cu.cu.f) return tc__cu_fail("the CUDA driver %s has no %s (a driver for CUDA 12 or newer is needed)", \
                                         tc__cu.cuda_path, #sym);
    TC__CU_FUNCS(TC__CU_SYM_)
#undef TC__CU_SYM_
    return tc__cu_open_nvrtc(nvrtc_lib);
}

/* The device's properties and the newest architecture NVRTC can emit CUBIN
 * for (older NVRTC than device: PTX for that architecture, which the
 * driver compiles). */
TC__FN int tc__cu_query_device(void) {
    tc__CUresult r;
    int n = 0, i, na = 0, archs[64];
#define TC__CU_TRY_(call, what)                                                                                 \
    if ((r = (call)) != TC__CUDA_SUCCESS) return tc__cu_fail("CUDA: %s failed: %s", what, tc__cu_errname(r));
    TC__CU_TRY_(tc__cu.cu.Init(0), "cuInit");
    TC__CU_TRY_(tc__cu.cu.DeviceGetCount(&n), "cuDeviceGetCount");
    if (n < 1) return tc__cu_fail("CUDA: %s%s", "the driver sees no device", "");
    TC__CU_TRY_(tc__cu.cu.DeviceGet(&tc__cu.dev, 0), "cuDeviceGet");
    TC__CU_TRY_(tc__cu.cu.DriverGetVersion(&tc__cu.driver_version), "cuDriverGetVersion");
    TC__CU_TRY_(tc__cu.cu.DeviceGetName(tc__cu.name, (int)sizeof tc__cu.name - 1, tc__cu.dev), "cuDeviceGetName");
#define TC__CU_ATTR_(field, a) TC__CU_TRY_(tc__cu.cu.DeviceGetAttribute(&tc__cu.field, TC__CU_DEVICE_ATTRIBUTE_##a, tc__cu.dev), "cuDeviceGetAttribute(" #a ")")
    TC__CU_ATTR_(cc_major, COMPUTE_CAPABILITY_MAJOR);
    TC__CU_ATTR_(cc_minor, COMPUTE_CAPABILITY_MINOR);
    TC__CU_ATTR_(sm_count, MULTIPROCESSOR_COUNT);
    TC__CU_ATTR_(max_threads, MAX_THREADS_PER_BLOCK);
    TC__CU_ATTR_(smem_block, MAX_SHARED_MEMORY_PER_BLOCK);
    TC__CU_ATTR_(smem_optin, MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    TC__CU_ATTR_(l2_bytes, L2_CACHE_SIZE);
#undef TC__CU_ATTR_
    TC__CU_TRY_(tc__cu.cu.DevicePrimaryCtxRetain(&tc__cu.pctx, tc__cu.dev), "cuDevicePrimaryCtxRetain");
#undef TC__CU_TRY_
    if (tc__cu.nv.Version(&tc__cu.nvrtc_major, &tc__cu.nvrtc_minor) != TC__NVRTC_SUCCESS)
        return tc__cu_fail("NVRTC: %s%s", "nvrtcVersion failed", "");
    if (tc__cu.nv.GetNumSupportedArchs(&na) != TC__NVRTC_SUCCESS || na < 1 || na > 64 ||
        tc__cu.nv.GetSupportedArchs(archs) != TC__NVRTC_SUCCESS)
        return tc__cu_fail("NVRTC: %s%s", "nvrtcGetSupportedArchs failed", "");
    for (i = 0; i < na; i++) {
        tc__cu.archs[i] = archs[i];
        if (archs[i] > tc__cu.arch_max) tc__cu.arch_max = archs[i];
    }
    tc__cu.narchs = na;
    return 0;
}

/* Loads the driver and NVRTC once per process: the first caller's library
 * names win (later ones get what was loaded).  0 when ready. */
TC__FN int tc__cuda_load(const char *cuda_lib, const char *nvrtc_lib) {
    int st;
    while (!tc__try_enter(&tc__cu.lock)) { /* spins only while another thread loads */
    }
    if (tc__cu.state == 0 && tc__cu_open_libs(cuda_lib, nvrtc_lib) == 0 && tc__cu_query_device() == 0)
        tc__cu.state = 1;
    st = tc__cu.state;
    tc__leave(&tc__cu.lock);
    return st == 1 ? 0 : -1;
}

TCDEF int tc_cuda_available(const char **why) {
    int ok = tc__cuda_load(NULL, NULL) == 0;
    if (why) *why = ok ? "" : tc__cu.why;
    return ok;
}

TCDEF tc_result tc_cuda_device_info(tc_cuda_info *info) {
    if (!info) return TC_ERR_NULL;
    memset(info, 0, sizeof *info);
    if (tc__cuda_load(NULL, NULL) != 0) return TC_ERR_DEVICE;
    snprintf(info->name, sizeof info->name, "%s", tc__cu.name);
    info->sm = tc__cu.cc_major * 10 + tc__cu.cc_minor;
    info->multiprocessors = tc__cu.sm_count;
    info->driver_version = tc__cu.driver_version;
    info->nvrtc_version = tc__cu.nvrtc_major * 1000 + tc__cu.nvrtc_minor * 10;
    info->nvrtc_max_sm = tc__cu.arch_max;
    snprintf(info->driver_path, sizeof info->driver_path, "%s", tc__cu.cuda_path);
    snprintf(info->nvrtc_path, sizeof info->nvrtc_path, "%s", tc__cu.nvrtc_path);
    return TC_OK;
}

#endif /* TC_NO_CUDA */
