// The CUDA driver's and NVRTC's ABI as tcompile mirrors it (src/cuda/driver.c),
// checked against the toolkit's real headers at compile time: every entry
// point's signature (after mapping each mirror type to the real one), every
// constant and the struct layouts.  A wrong mirror fails the build, which
// tests/run_all.sh reports; it also shows that a user who includes <cuda.h>
// and tcompile.h together gets no clash.  Built with the toolkit's include
// directory (skipped, with the reason, where the toolkit is absent).
#include <cuda.h>
#include <nvrtc.h>
#define TCOMPILE_IMPLEMENTATION
#include "tcompile.h"

#include <cstddef>
#include <cstdio>
#include <type_traits>

// tr<T>::type: the real header's type for a mirror type, through pointers,
// const and function pointer types.
template <class T> struct tr { typedef T type; };
template <class T> struct tr<T *> { typedef typename tr<T>::type *type; };
template <class T> struct tr<const T> { typedef const typename tr<T>::type type; };
template <class R, class... A> struct tr<R (*)(A...)> {
    typedef typename tr<R>::type (*type)(typename tr<A>::type...);
};
#define TC_MAP(mirror, real)                                                                                  \
    template <> struct tr<mirror> { typedef real type; };
TC_MAP(tc__CUresult, CUresult)
TC_MAP(tc__CUdevice_attribute, CUdevice_attribute)
TC_MAP(tc__CUfunction_attribute, CUfunction_attribute)
TC_MAP(tc__CUstreamCaptureMode, CUstreamCaptureMode)
TC_MAP(tc__CUstreamCaptureStatus, CUstreamCaptureStatus)
TC_MAP(tc__CUgraphExecUpdateResultInfo, CUgraphExecUpdateResultInfo)
TC_MAP(tc__nvrtcResult, nvrtcResult)
TC_MAP(struct tc__CUctx_st, struct CUctx_st)
TC_MAP(struct tc__CUmod_st, struct CUmod_st)
TC_MAP(struct tc__CUfunc_st, struct CUfunc_st)
TC_MAP(struct tc__CUstream_st, struct CUstream_st)
TC_MAP(struct tc__CUevent_st, struct CUevent_st)
TC_MAP(struct tc__CUgraph_st, struct CUgraph_st)
TC_MAP(struct tc__CUgraphExec_st, struct CUgraphExec_st)
TC_MAP(struct tc__nvrtcProgram_st, struct _nvrtcProgram)

static_assert(std::is_same<tc__CUdeviceptr, CUdeviceptr>::value, "CUdeviceptr");
static_assert(std::is_same<tc__CUdevice, CUdevice>::value, "CUdevice");
static_assert(sizeof(tc__CUgraphExecUpdateResultInfo) == sizeof(CUgraphExecUpdateResultInfo), "result info size");
static_assert(offsetof(tc__CUgraphExecUpdateResultInfo, errorNode) == offsetof(CUgraphExecUpdateResultInfo, errorNode),
              "result info layout");
static_assert(offsetof(tc__CUgraphExecUpdateResultInfo, errorFromNode) ==
                  offsetof(CUgraphExecUpdateResultInfo, errorFromNode),
              "result info layout");
static_assert(sizeof(tc__CUresult) == sizeof(CUresult) && sizeof(tc__nvrtcResult) == sizeof(nvrtcResult), "enum sizes");

#define TC_CONST(name, v) static_assert((long long)TC__##name == (long long)name && (long long)name == v, #name);
TC__CU_RESULTS(TC_CONST)
TC__CU_DEVICE_ATTRS(TC_CONST)
TC__CU_FUNC_ATTRS(TC_CONST)
TC__CU_CAPTURE_MODES(TC_CONST)
TC__CU_CAPTURE_STATUS(TC_CONST)
TC__CU_UPDATE_RESULTS(TC_CONST)
TC__CU_FLAGS(TC_CONST)
TC__NVRTC_RESULTS(TC_CONST)

#define TC_SIG(f, sym, ret, params)                                                                           \
    static_assert(std::is_same<tr<tc__pfn_##sym>::type, decltype(&::sym)>::value, #sym " signature");
TC__CU_FUNCS(TC_SIG)
TC__NVRTC_FUNCS(TC_SIG)

#define TC_COUNT(f, sym, ret, params) +1
int main() {
    std::printf("ok    %d driver and %d NVRTC entry points, constants and structs match cuda.h and nvrtc.h\n",
                0 TC__CU_FUNCS(TC_COUNT), 0 TC__NVRTC_FUNCS(TC_COUNT));
    return 0;
}
