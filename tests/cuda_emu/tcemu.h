/* tcemu's test hooks: counters and fault injection for the CUDA backend's
 * tests, exported by libtcemu.so next to the driver and NVRTC entry points
 * (dlsym them by these names).  C, so that the tests can include it. */
#ifndef TCEMU_H
#define TCEMU_H
#ifdef __cplusplus
extern "C" {
#endif
typedef struct tcemu_stats_t {
    long long mem_allocs, mem_frees;        /* successful cuMemAlloc_v2 / cuMemFree_v2 */
    long long live_allocs, live_bytes, peak_bytes; /* device memory now, and its high-water mark */
    long long launches;                     /* cuLaunchKernel calls that ran a kernel (not captured) */
    long long kernels_run;                  /* kernels run: direct launches and graph replays */
    long long graph_launches, captures;     /* cuGraphLaunch calls; completed captures (cuStreamEndCapture) */
    long long graph_instantiates, graph_updates; /* cuGraphInstantiateWithFlags, successful cuGraphExecUpdate_v2 */
    long long modules_loaded, modules_live; /* successful cuModuleLoadData(Ex); modules not unloaded */
    long long nvrtc_compiles;               /* nvrtcCompileProgram calls that ran the host compiler */
    long long memcpy_htod, memcpy_dtoh, memcpy_dtod, memsets; /* executed (not captured) copies and sets */
    long long syncs;                        /* cuCtx/cuStream/cuEventSynchronize calls */
} tcemu_stats_t;
void tcemu_stats(tcemu_stats_t *out);
/* Zeroes the counters; live_allocs, live_bytes and modules_live stay. */
void tcemu_reset_stats(void);
/* The n-th later call (n >= 1) of exported function `fn` (versioned name,
 * e.g. "cuMemAlloc_v2"; "cuMemAlloc" also matches) fails with its typical
 * code: CUDA_ERROR_OUT_OF_MEMORY for allocations and object creation,
 * CUDA_ERROR_LAUNCH_FAILED for launches and synchronizations,
 * CUDA_ERROR_INVALID_IMAGE for module loads, CUDA_ERROR_NOT_FOUND for
 * cuModuleGetFunction, CUDA_ERROR_ILLEGAL_ADDRESS for copies and sets,
 * NVRTC_ERROR_COMPILATION for nvrtcCompileProgram, else CUDA_ERROR_UNKNOWN /
 * NVRTC_ERROR_INTERNAL_ERROR.  Returns -1 (and arms nothing) for a name
 * libtcemu does not export. */
int tcemu_fail_after(const char *fn, int n);
void tcemu_reset_faults(void);
/* The message of the last failed launch ("" if none): kernel, block, thread. */
const char *tcemu_last_error(void);
#ifdef __cplusplus
}
#endif
#endif
