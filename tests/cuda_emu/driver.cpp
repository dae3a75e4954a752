/* tcemu's CUDA driver API: one device whose memory is host memory (with an
 * allocation table, so a host pointer passed as a device one is an error),
 * streams that run their work when it is enqueued (a legal schedule), graph
 * capture and replay, and modules that are dlopen'ed kernel libraries
 * (nvrtc.cpp builds them).  Handles are kept in live sets, so a stale or
 * foreign one is CUDA_ERROR_INVALID_HANDLE rather than a crash. */
#include "emu.h"
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <link.h>
#include <mutex>
#include <set>
#include <thread>
#include <unistd.h>

tcemu_stats_t g_stats;
static std::recursive_mutex g_mu;
static bool g_init;
static std::string g_last_err;

int env_int(const char *name, int def) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : def;
}
static int sm() { return env_int("TC_EMU_SM", 90); }
/* a driver at least as new as the NVRTC, as a toolkit's own driver is */
static int driver_version() { return env_int("TC_EMU_DRIVER_VERSION", std::max(12080, nvrtc_version_code())); }
static size_t mem_total() { return (size_t)env_int("TC_EMU_MEM_MB", 4096) << 20; }
static int optin_smem() { return sm() >= 90 ? 232448 : sm() == 80 ? 166912 : 101376; }

struct CUctx_st { int refs = 0; bool active = false; };
static CUctx_st g_ctx;
static thread_local CUcontext tl_ctx;
enum { N_KERNEL, N_COPY, N_SET };
enum { HTOD, DTOH, DTOD };
struct Node { /* one operation, as a capture records it */
    int kind, dir = 0;
    CUfunc_st *f = nullptr;
    unsigned grid[3], block[3], smem = 0;
    std::vector<unsigned char> args; /* kernel parameters, copied at capture */
    std::vector<size_t> off;
    uintptr_t dst = 0, src = 0;
    size_t n = 0, elem = 1;
    unsigned val = 0;
};
struct CUgraph_st { std::vector<Node> nodes; };
struct CUgraphExec_st { std::vector<Node> nodes; };
struct Capture { CUgraph_st *g; CUstreamCaptureMode mode; std::thread::id thread; bool invalid; };
struct CUstream_st { unsigned flags; Capture *cap = nullptr; };
struct CUevent_st { unsigned flags; bool recorded = false; double t = 0; };
static std::set<void *> g_streams, g_events, g_modules, g_funcs, g_graphs, g_execs, g_host;
/* device allocations: base -> bytes asked for (copies are held to these;
 * the budget counts them rounded up to 256, as the real allocator does) */
static std::map<uintptr_t, size_t> g_allocs;
static size_t rounded(size_t n) { return (n + 255) / 256 * 256; }

/* ---- fault injection ---- */
static std::map<std::string, int> g_faults;
int fault_hit(const char *fn) {
    std::lock_guard<std::recursive_mutex> lk(g_mu);
    if (g_faults.empty()) return 0;
    std::string s = fn, base = s.substr(0, s.rfind("_v") == std::string::npos ? s.size() : s.rfind("_v"));
    for (const std::string &k : {s, base}) {
        auto it = g_faults.find(k);
        if (it != g_faults.end() && --it->second <= 0) return g_faults.erase(it), 1;
    }
    return 0;
}
static CUresult fault_code(const char *fn) {
    static const struct { const char *part; CUresult r; } t[] = {
        {"Alloc", CUDA_ERROR_OUT_OF_MEMORY}, {"Create", CUDA_ERROR_OUT_OF_MEMORY},
        {"Instantiate", CUDA_ERROR_OUT_OF_MEMORY}, {"Retain", CUDA_ERROR_OUT_OF_MEMORY},
        {"Launch", CUDA_ERROR_LAUNCH_FAILED}, {"Synchronize", CUDA_ERROR_LAUNCH_FAILED},
        {"cuModuleLoad", CUDA_ERROR_INVALID_IMAGE}, {"cuModuleGetFunction", CUDA_ERROR_NOT_FOUND},
        {"cuMemcpy", CUDA_ERROR_ILLEGAL_ADDRESS}, {"cuMemset", CUDA_ERROR_ILLEGAL_ADDRESS},
        {"cuInit", CUDA_ERROR_NO_DEVICE}, {"Capture", CUDA_ERROR_STREAM_CAPTURE_INVALIDATED}};
    for (auto &e : t)
        if (strstr(fn, e.part)) return e.r;
    return CUDA_ERROR_UNKNOWN;
}

/* Every entry point starts with one of these: the lock, then the checks the
 * real driver makes first. */
#define API_NOINIT std::lock_guard<std::recursive_mutex> lk_(g_mu)
#define API                                                                                              \
    API_NOINIT;                                                                                          \
    if (!g_init) return CUDA_ERROR_NOT_INITIALIZED;                                                      \
    if (fault_hit(__func__)) return fault_code(__func__)
#define API_CTX                                                                                          \
    API;                                                                                                 \
    if (!tl_ctx) return CUDA_ERROR_INVALID_CONTEXT;                                                      \
    if (!tl_ctx->active) return CUDA_ERROR_CONTEXT_IS_DESTROYED
#define CHECK(e)                                                                                         \
    do {                                                                                                 \
        CUresult r_ = (e);                                                                               \
        if (r_ != CUDA_SUCCESS) return r_;                                                               \
    } while (0)
#define OUT(p, v) return !(p) ? CUDA_ERROR_INVALID_VALUE : (*(p) = (v), CUDA_SUCCESS)
#define DEVICE(d) if ((d) != 0) return CUDA_ERROR_INVALID_DEVICE
#define LIVE(set, h) if (!set.count(h)) return CUDA_ERROR_INVALID_HANDLE

/* ---- device and context ---- */
TCEMU_EXPORT CUresult cuInit(unsigned flags) {
    API_NOINIT;
    if (fault_hit(__func__)) return CUDA_ERROR_NO_DEVICE;
    if (flags) return CUDA_ERROR_INVALID_VALUE;
    g_init = true;
    return CUDA_SUCCESS;
}
TCEMU_EXPORT CUresult cuDriverGetVersion(int *v) { OUT(v, driver_version()); }
TCEMU_EXPORT CUresult cuDeviceGetCount(int *n) { API; OUT(n, 1); }
TCEMU_EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) { API; DEVICE(ordinal); OUT(d, 0); }
TCEMU_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice d) { API; DEVICE(d); OUT(bytes, mem_total()); }
TCEMU_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
    API;
    DEVICE(d);
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "tcemu SIMT emulator (sm_%d)", sm());
    return CUDA_SUCCESS;
}
TCEMU_EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
    API;
    DEVICE(d);
    int s = sm(), r;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: r = s / 10; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: r = s % 10; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: r = env_int("TC_EMU_SMS", s >= 90 ? 132 : 108); break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: r = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: r = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: r = 2048; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: r = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: r = 49152; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: r = optin_smem(); break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: r = optin_smem() + 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: r = INT_MAX; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: r = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: r = 65536; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: r = (s >= 90 ? 50 : 40) << 20; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: r = 1755000; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: r = 2619000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: r = 5120; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: r = 1; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
        r = 0;
        break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    OUT(v, r);
}
/* The primary context: its last release frees everything in it. */
static void destroy_context();
TCEMU_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
    API;
    DEVICE(d);
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    g_ctx.refs++, g_ctx.active = true;
    OUT(c, &g_ctx);
}
TCEMU_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
    API;
    DEVICE(d);
    if (g_ctx.refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
    if (--g_ctx.refs == 0) destroy_context();
    return CUDA_SUCCESS;
}
TCEMU_EXPORT CUresult cuCtxSetCurrent(CUcontext c) {
    API;
    if (c && c != &g_ctx) return CUDA_ERROR_INVALID_CONTEXT;
    tl_ctx = c;
    return CUDA_SUCCESS;
}
TCEMU_EXPORT CUresult cuCtxGetCurrent(CUcontext *c) { API; OUT(c, tl_ctx); }

/* ---- capture rules, as in global mode: an unsafe call while a capture
 * that forbids it is open fails and invalidates that capture ---- */
static CUresult unsafe_call() {
    CUresult r = CUDA_SUCCESS;
    for (void *p : g_streams) {
        Capture *c = ((CUstream_st *)p)->cap;
        if (!c || c->invalid) continue;
        bool mine = c->thread == std::this_thread::get_id();
        if (c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL || (c->mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL && mine))
            c->invalid = true, r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    return r;
}
/* Work on the legacy stream waits for every blocking stream, which for one
 * being captured is an error that invalidates its capture. */
static CUresult get_stream(CUstream h, CUstream_st **s) {
    *s = nullptr;
    if (h == CU_STREAM_PER_THREAD) return CUDA_SUCCESS;
    if (h == nullptr || h == CU_STREAM_LEGACY) {
        CUresult r = CUDA_SUCCESS;
        for (void *p : g_streams) {
            CUstream_st *o = (CUstream_st *)p;
            if (o->cap && !(o->flags & CU_STREAM_NON_BLOCKING))
                o->cap->invalid = true, r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
        }
        return r;
    }
    LIVE(g_streams, h);
    *s = h;
    return CUDA_SUCCESS;
}

/* ---- memory ---- */
static bool dev_range(uintptr_t p, size_t n) {
    auto it = g_allocs.upper_bound(p);
    if (it == g_allocs.begin()) return false;
    --it;
    return p - it->first <= it->second && n <= it->second - (p - it->first);
}
TCEMU_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
    API_CTX;
    if (!p || !n) return CUDA_ERROR_INVALID_VALUE;
    CHECK(unsafe_call());
    size_t sz = rounded(n);
    void *m = (size_t)g_stats.live_bytes + sz <= mem_total() ? aligned_alloc(256, sz) : nullptr;
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    memset(m, 0xff, sz); /* fresh memory reads as NaN, not as zeros that hide a missing initialisation */
    g_allocs[(uintptr_t)m] = n;
    g_stats.mem_allocs++, g_stats.live_allocs++, g_stats.live_bytes += (long long)sz;
    g_stats.peak_bytes = std::max(g_stats.peak_bytes, g_stats.live_bytes);
    OUT(p, (CUdeviceptr)m);
}
TCEMU_EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
    API_CTX;
    if (!p) return CUDA_SUCCESS;
    CHECK(unsafe_call());
    auto it = g_allocs.find((uintptr_t)p);
    if (it == g_allocs.end()) return CUDA_ERROR_INVALID_VALUE;
    g_stats.mem_frees++, g_stats.live_allocs--, g_stats.live_bytes -= (long long)rounded(it->second);
    free((void *)it->first);
    g_allocs.erase(it);
    return CUDA_SUCCESS;
}
TCEMU_EXPORT CUresult cuMemGetInfo_v2(size_t *fr, size_t *total) {
    API_CTX;
    if (!fr) return CUDA_ERROR_INVALID_VALUE;
    *fr = mem_total() - std::min(mem_total(), (size_t)g_stats.live_bytes);
    OUT(total, mem_total());
}
TCEMU_EXPORT CUresult cuMemAllocHost_v2(void **p, size_t n) {
    API_CTX;
    if (!p || !n) return CUDA_ERROR_INVALID_VALUE;
    if (!(*p = aligned_alloc(256, rounded(n)))) return CUDA_ERROR_OUT_OF_MEMORY;
    g_host.insert(*p);
    return CUDA_SUCCESS;
}
TCEMU_EXPORT CUresult cuMemFreeHost(void *p) {
    API_CTX;
    if (!g_host.erase(p)) return CUDA_ERROR_INVALID_VALUE;
    free(p);
    return CUDA_SUCCESS;
}

/* ---- operations: run now, or recorded when their stream captures ---- */
static bool node_ok(const Node &n) { /* checked when captured too, as the real driver does */
    if (!n.n || n.kind == N_KERNEL) return true;
    if (n.kind == N_SET) return n.dst % n.elem == 0 && dev_range(n.dst, n.n * n.elem);
    return n.dst && n.src && (n.dir == DTOH || dev_range(n.dst, n.n)) && (n.dir == HTOD || dev_range(n.src, n.n));
}
static CUresult run_kernel(CUfunc_st *f, const unsigned *g, const unsigned *b, unsigned smem, void **params) {
    LIVE(g_funcs, f); /* a replay after the module was unloaded */
    Launch L{f, {g[0], g[1], g[2]}, {b[0], b[1], b[2]}, smem, params};
    std::string err;
    g_stats.kernels_run++;
    if (!simt_run(L, &err)) return CUDA_SUCCESS;
    fprintf(stderr, "tcemu: launch failed: %s\n", err.c_str());
    g_last_err = err;
    return CUDA_ERROR_LAUNCH_FAILED;
}
static CUresult run_node(const Node &n) {
    if (!node_ok(n)) return CUDA_ERROR_INVALID_VALUE;
    if (n.kind == N_KERNEL) {
        std::vector<void *> p(n.off.size());
        for (size_t i = 0; i < p.size(); i++) p[i] = (void *)(n.args.data() + n.off[i]);
        return run_kernel(n.f, n.grid, n.block, n.smem, p.data());
    }
    if (n.kind == N_COPY) {
        memmove((void *)n.dst, (const void *)n.src, n.n);
        (n.dir == HTOD ? g_stats.memcpy_htod : n.dir == DTOH ? g_stats.memcpy_dtoh : g_stats.memcpy_dtod)++;
    } else {
        if (n.elem == 1) memset((void *)n.dst, (int)n.val, n.n);
        else
            for (size_t i = 0; i < n.n; i++) memcpy((char *)n.dst + 4 * i, &n.val, 4);
        g_stats.memsets++;
    }
    return CUDA_SUCCESS;
}
static CUresult enqueue(CUstream h, const Node &n) {
    CUstream_st *s;
    CHECK(get_stream(h, &s));
    if (!s || !s->cap) return run_node(n);
    if (s->cap->invalid) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (!node_ok(n)) return CUDA_ERROR_INVALID_VALUE;
    s->cap->g->nodes.push_back(n);
    return CUDA_SUCCESS;
}
static Node op(int kind, int dir, uintptr_t dst, uintptr_t src, size_t n, unsigned val = 0, size_t elem = 1) {
    Node c;
    c.kind = kind, c.dir = dir, c.dst = dst, c.src = src, c.n = n, c.val = val, c.elem = elem;
    return c;
}
/* The synchronous forms run on the legacy stream and are unsafe in capture. */
static CUresult sync_op(const Node &n) {
    CHECK(unsafe_call());
    return enqueue(nullptr, n);
}
#define ENTRY(name, params, body)                                                                        \
    TCEMU_EXPORT CUresult name params {                                                                  \
        API_CTX;                                                                                         \
        return body;                                                                                     \
    }
ENTRY(cuMemcpyHtoD_v2, (CUdeviceptr d, const void *s, size_t n), sync_op(op(N_COPY, HTOD, d, (uintptr_t)s, n)))
ENTRY(cuMemcpyDtoH_v2, (void *d, CUdeviceptr s, size_t n), sync_op(op(N_COPY, DTOH, (uintptr_t)d, s, n)))
ENTRY(cuMemcpyDtoD_v2, (CUdeviceptr d, CUdeviceptr s, size_t n), sync_op(op(N_COPY, DTOD, d, s, n)))
ENTRY(cuMemsetD8_v2, (CUdeviceptr d, unsigned char v, size_t n), sync_op(op(N_SET, 0, d, 0, n, v)))
ENTRY(cuMemsetD32_v2, (CUdeviceptr d, unsigned v, size_t n), sync_op(op(N_SET, 0, d, 0, n, v, 4)))
ENTRY(cuMemcpyHtoDAsync_v2, (CUdeviceptr d, const void *s, size_t n, CUstream h),
      enqueue(h, op(N_COPY, HTOD, d, (uintptr_t)s, n)))
ENTRY(cuMemcpyDtoHAsync_v2, (void *d, CUdeviceptr s, size_t n, CUstream h),
      enqueue(h, op(N_COPY, DTOH, (uintptr_t)d, s, n)))
ENTRY(cuMemcpyDtoDAsync_v2, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream h), enqueue(h, op(N_COPY, DTOD, d, s, n)))
ENTRY(cuMemsetD8Async, (CUdeviceptr d, unsigned char v, size_t n, CUstream h), enqueue(h, op(N_SET, 0, d, 0, n, v)))
ENTRY(cuMemsetD32Async, (CUdeviceptr d, unsigned v, size_t n, CUstream h), enqueue(h, op(N_SET, 0, d, 0, n, v, 4)))

/* ---- streams and capture ---- */
template <class T> static CUresult destroy(std::set<void *> &live, T *h) {
    if (!live.erase(h)) return CUDA_ERROR_INVALID_HANDLE;
    delete h;
    return CUDA_SUCCESS;
}
TCEMU_EXPORT CUresult cuStreamCreate(CUstream *s, unsigned flags) {
    API_CTX;
    if (!s || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
    g_streams.insert(*s = new CUstream_st{flags});
    return CUDA_SUCCESS;
}
static void end_capture(CUstream_st *s, bool keep_graph) {
    if (s->cap && !keep_graph) delete s->cap->g;
    delete s->cap;
    s->cap = nullptr;
}
TCEMU_EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
    API_CTX;
    LIVE(g_streams, s);
    end_capture(s, false);
    return destroy(g_streams, s);
}
TCEMU_EXPORT CUresult cuStreamSynchronize(CUstream h) {
    API_CTX;
    CUstream_st *s;
    CHECK(get_stream(h, &s));
    if (s && s->cap) return s->cap->invalid = true, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    g_stats.syncs++;
    return CUDA_SUCCESS;
}
/* Streams never overlap: waits are met and queries find the work done (a
 * wait between streams does not join a capture, as a real one would). */
TCEMU_EXPORT CUresult cuStreamWaitEvent(CUstream h, CUevent e, unsigned) {
    API_CTX;
    CUstream_st *s;
    LIVE(g_events, e);
    return get_stream(h, &s);
}
TCEMU_EXPORT CUresult cuStreamQuery(CUstream h) { API_CTX; CUstream_st *s; return get_stream(h, &s); }
TCEMU_EXPORT CUresult cuEventQuery(CUevent e) { API_CTX; LIVE(g_events, e); return CUDA_SUCCESS; }
TCEMU_EXPORT CUresult cuCtxGetDevice(CUdevice *d) { API_CTX; OUT(d, 0); }
TCEMU_EXPORT CUresult cuCtxSynchronize(void) {
    API_CTX;
    CHECK(unsafe_call());
    g_stats.syncs++;
    return CUDA_SUCCESS;
}
TCEMU_EXPORT CUresult cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode mode) {
    API_CTX;
    if (h == nullptr || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD)
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* the default streams cannot be captured */
    LIVE(g_streams, h);
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    if (h->cap) return CUDA_ERROR_ILLEGAL_STATE;
    h->cap = new Capture{new CUgraph_st, mode, std::this_thread::get_id(), false};
    return CUDA_SUCCESS;
}
TCEMU_EXPORT CUresult cuStreamEndCapture(CUstream h, CUgraph *g) {
    API_CTX;
    if (!g) return CUDA_ERROR_INVALID_VALUE;
    LIVE(g_streams, h);
    Capture *c = h->cap;
    if (!c) return CUDA_ERROR_ILLEGAL_STATE;
    if (c->mode != CU_STREAM_CAPTURE_MODE_RELAXED && c->thread != std::this_thread::get_id())
        return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    bool ok = !c->invalid;
    *g = ok ? c->g : nullptr;
    if (ok) g_graphs.insert(c->g), g_stats.captures++;
    end_capture(h, ok);
    return ok ? CUDA_SUCCESS : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
}
TCEMU_EXPORT CUresult cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus *st) {
    API_CTX;
    CUstream_st *s = nullptr;
    if (h != nullptr && h != CU_STREAM_LEGACY && h != CU_STREAM_PER_THREAD && !g_streams.count(s = h))
        return CUDA_ERROR_INVALID_HANDLE;
    OUT(st, !s || !s->cap ? CU_STREAM_CAPTURE_STATUS_NONE
            : s->cap->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED : CU_STREAM_CAPTURE_STATUS_ACTIVE);
}

/* ---- graphs ---- */
TCEMU_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long) {
    API_CTX;
    LIVE(g_graphs, g);
    if (!e) return CUDA_ERROR_INVALID_VALUE;
    g_execs.insert(*e = new CUgraphExec_st{g->nodes});
    g_stats.graph_instantiates++;
    return CUDA_SUCCESS;
}
TCEMU_EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream h) {
    API_CTX;
    LIVE(g_execs, e);
    CUstream_st *s;
    CHECK(get_stream(h, &s));
    if (s && s->cap) { /* a graph launched into a capture becomes part of it */
        if (s->cap->invalid) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        s->cap->g->nodes.insert(s->cap->g->nodes.end(), e->nodes.begin(), e->nodes.end());
        return CUDA_SUCCESS;
    }
    g_stats.graph_launches++;
    for (const Node &n : e->nodes) CHECK(run_node(n));
    return CUDA_SUCCESS;
}
/* Succeeds when the graphs have the same nodes in the same order (same
 * kernel functions, copy directions and set widths), taking the new
 * parameters; else says what differs, as the real update does. */
TCEMU_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec e, CUgraph g, CUgraphExecUpdateResultInfo *info) {
    API_NOINIT; /* API_CTX but for the fault, which fills info in */
    if (!g_init) return CUDA_ERROR_NOT_INITIALIZED;
    if (!tl_ctx || !tl_ctx->active) return CUDA_ERROR_INVALID_CONTEXT;
    if (!info) return CUDA_ERROR_INVALID_VALUE;
    LIVE(g_execs, e);
    LIVE(g_graphs, g);
    *info = CUgraphExecUpdateResultInfo{};
    if (fault_hit(__func__)) return info->result = CU_GRAPH_EXEC_UPDATE_ERROR, CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    info->result = e->nodes.size() != g->nodes.size() ? CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED
                                                      : CU_GRAPH_EXEC_UPDATE_SUCCESS;
    for (size_t i = 0; i < g->nodes.size() && info->result == CU_GRAPH_EXEC_UPDATE_SUCCESS; i++) {
        const Node &a = e->nodes[i], &b = g->nodes[i];
        info->errorNode = (CUgraphNode)&g->nodes[i];
        if (a.kind != b.kind) info->result = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
        else if (a.f != b.f) info->result = CU_GRAPH_EXEC_UPDATE_ERROR_FUNCTION_CHANGED;
        else if (a.dir != b.dir || a.elem != b.elem) info->result = CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
    }
    if (info->result != CU_GRAPH_EXEC_UPDATE_SUCCESS) return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    info->errorNode = nullptr;
    e->nodes = g->nodes;
    g_stats.graph_updates++;
    return CUDA_SUCCESS;
}
TCEMU_EXPORT CUresult cuGraphExecDestroy(CUgraphExec e) { API_CTX; return destroy(g_execs, e); }
TCEMU_EXPORT CUresult cuGraphDestroy(CUgraph g) { API_CTX; return destroy(g_graphs, g); }

/* ---- modules: a blob from nvrtc.cpp, written out and dlopen'ed ---- */
static int tls_size(struct dl_phdr_info *i, size_t, void *arg) {
    CUmod_st *m = (CUmod_st *)arg;
    if (!i->dlpi_name || m->path != i->dlpi_name) return 0;
    for (int k = 0; k < i->dlpi_phnum; k++)
        if (i->dlpi_phdr[k].p_type == PT_TLS) m->static_smem = i->dlpi_phdr[k].p_memsz;
    return 1;
}
static CUresult load_module(CUmodule *out, const void *image) {
    BlobHdr h;
    std::string so;
    if (!out || !image) return CUDA_ERROR_INVALID_VALUE;
    if (!parse_blob(image, &h, &so)) return CUDA_ERROR_INVALID_IMAGE;
    /* a cubin runs on its own major version with a minor at least its own;
     * PTX on any later device, if the driver is as new as its NVRTC */
    int dev = sm(), arch = (int)h.arch;
    if (arch > dev || (!h.ptx && arch / 10 != dev / 10)) return CUDA_ERROR_NO_BINARY_FOR_GPU;
    if (h.ptx && (int)h.nvrtc > driver_version()) return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
    const char *tmp = getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/tcemu-mod-XXXXXX.so";
    int fd = mkstemps(&path[0], 3);
    if (fd < 0) return CUDA_ERROR_OPERATING_SYSTEM;
    bool wrote = write(fd, so.data(), so.size()) == (ssize_t)so.size();
    close(fd);
    void *dl = wrote ? dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!env_int("TC_EMU_KEEP", 0)) unlink(path.c_str()); /* it stays mapped */
    else fprintf(stderr, "tcemu: module kept at %s\n", path.c_str());
    if (!dl) return fprintf(stderr, "tcemu: cannot load module: %s\n", wrote ? dlerror() : "write failed"),
                  CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
    CUmod_st *m = new CUmod_st;
    int *abi = (int *)dlsym(dl, "tcemu_abi");
    auto bind = (void (*)(const tcemu::api *))dlsym(dl, "tcemu_bind");
    m->dl = dl, m->path = path, m->arch = arch, m->binary = !h.ptx;
    m->state = (tcemu::state * (*)()) dlsym(dl, "tcemu_state");
    m->kernels = (const tcemu::kernel_info *)dlsym(dl, "tcemu_kernels");
    if (!abi || *abi != tcemu::ABI || !bind || !m->state || !m->kernels)
        return dlclose(dl), delete m, CUDA_ERROR_INVALID_IMAGE;
    bind(simt_api());
    dl_iterate_phdr(tls_size, m);
    m->static_smem -= std::min(m->static_smem, sizeof(tcemu::state)); /* only the __shared__ variables */
    g_modules.insert(m);
    g_stats.modules_loaded++, g_stats.modules_live++;
    OUT(out, m);
}
TCEMU_EXPORT CUresult cuModuleLoadData(CUmodule *m, const void *image) { API_CTX; return load_module(m, image); }
TCEMU_EXPORT CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, CUjit_option *o, void **v) {
    API_CTX;
    if (n && (!o || !v)) return CUDA_ERROR_INVALID_VALUE; /* JIT options have no meaning here */
    return load_module(m, image);
}
static void unload(CUmod_st *m) {
    for (auto &kv : m->funcs) g_funcs.erase(kv.second), delete kv.second;
    dlclose(m->dl);
    g_modules.erase(m);
    g_stats.modules_live--;
    delete m;
}
TCEMU_EXPORT CUresult cuModuleUnload(CUmodule m) { API_CTX; LIVE(g_modules, m); unload(m); return CUDA_SUCCESS; }
TCEMU_EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
    API_CTX;
    LIVE(g_modules, m);
    if (!f || !name) return CUDA_ERROR_INVALID_VALUE;
    if (!m->funcs.count(name)) {
        const tcemu::kernel_info *k = m->kernels;
        while (k->name && strcmp(k->name, name)) k++;
        if (!k->name) return CUDA_ERROR_NOT_FOUND;
        g_funcs.insert(m->funcs[name] = new CUfunc_st{m, k});
    }
    OUT(f, m->funcs[name]);
}
TCEMU_EXPORT CUresult cuFuncGetAttribute(int *v, CUfunction_attribute a, CUfunction f) {
    API_CTX;
    LIVE(g_funcs, f);
    int r;
    switch (a) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: r = f->ki->max_threads; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: r = (int)f->mod->static_smem; break;
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: r = 0; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: r = 32; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION: case CU_FUNC_ATTRIBUTE_BINARY_VERSION: r = f->mod->arch; break;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        r = f->max_dyn >= 0 ? f->max_dyn : 49152 - (int)f->mod->static_smem;
        break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    OUT(v, r);
}
TCEMU_EXPORT CUresult cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
    API_CTX;
    LIVE(g_funcs, f);
    if (a == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT)
        return v >= -1 && v <= 100 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (a != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES || v < 0 ||
        (size_t)v + f->mod->static_smem > (size_t)optin_smem())
        return CUDA_ERROR_INVALID_VALUE;
    f->max_dyn = v;
    return CUDA_SUCCESS;
}

/* ---- launches: checked as the real driver checks them ---- */
TCEMU_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                     unsigned bz, unsigned smem, CUstream h, void **params, void **extra) {
    API_CTX;
    LIVE(g_funcs, f);
    const tcemu::kernel_info *k = f->ki;
    if (!gx || !gy || !gz || !bx || !by || !bz || gx > INT_MAX || gy > 65535 || gz > 65535 || bx > 1024 || by > 1024 ||
        bz > 64 || (uint64_t)bx * by * bz > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    if (bx * by * bz > (unsigned)k->max_threads) return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
    /* static __shared__ is counted per module here (every kernel's, as one
     * thread_local segment), not per kernel as on a device: subtracting it
     * would refuse a kernel for its neighbours' buffers, so dynamic shared
     * memory is checked against the limit alone */
    if (smem > (f->max_dyn >= 0 ? (size_t)f->max_dyn : (size_t)49152))
        return CUDA_ERROR_INVALID_VALUE;
    /* the parameters' offsets, as packed in a buffer passed through extra */
    std::vector<size_t> off(k->nparams);
    size_t total = 0;
    for (unsigned i = 0; i < k->nparams; i++) {
        off[i] = total = (total + k->align[i] - 1) / k->align[i] * k->align[i];
        total += k->size[i];
    }
    std::vector<void *> xp;
    if (params && extra) return CUDA_ERROR_INVALID_VALUE;
    if (extra) {
        char *buf = nullptr;
        size_t *size = nullptr;
        for (void **e = extra; *e != CU_LAUNCH_PARAM_END; e += 2)
            if (e[0] == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = (char *)e[1];
            else if (e[0] == CU_LAUNCH_PARAM_BUFFER_SIZE) size = (size_t *)e[1];
            else return CUDA_ERROR_INVALID_VALUE;
        if (!buf || !size || *size < total) return CUDA_ERROR_INVALID_VALUE;
        for (size_t o : off) xp.push_back(buf + o);
        params = xp.data();
    }
    if (k->nparams && !params) return CUDA_ERROR_INVALID_VALUE;
    unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
    CUstream_st *s;
    CHECK(get_stream(h, &s));
    if (s && s->cap) { /* captured: the parameters are copied now, by value */
        if (s->cap->invalid) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        Node n = op(N_KERNEL, 0, 0, 0, 0);
        n.f = f, n.smem = smem, n.off = off, n.args.resize(total);
        memcpy(n.grid, g, sizeof g), memcpy(n.block, b, sizeof b);
        for (unsigned i = 0; i < k->nparams; i++) memcpy(n.args.data() + off[i], params[i], k->size[i]);
        s->cap->g->nodes.push_back(std::move(n));
        return CUDA_SUCCESS;
    }
    g_stats.launches++;
    return run_kernel(f, g, b, smem, params);
}

/* ---- events: host wall time, the work being done when it is enqueued ---- */
TCEMU_EXPORT CUresult cuEventCreate(CUevent *e, unsigned flags) {
    API_CTX;
    if (!e) return CUDA_ERROR_INVALID_VALUE;
    g_events.insert(*e = new CUevent_st{flags});
    return CUDA_SUCCESS;
}
TCEMU_EXPORT CUresult cuEventRecord(CUevent e, CUstream h) {
    API_CTX;
    LIVE(g_events, e);
    CUstream_st *s;
    CHECK(get_stream(h, &s));
    if (s && s->cap) return s->cap->invalid ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS;
    e->recorded = true;
    e->t = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
    return CUDA_SUCCESS;
}
TCEMU_EXPORT CUresult cuEventSynchronize(CUevent e) {
    API_CTX;
    LIVE(g_events, e);
    g_stats.syncs++;
    return CUDA_SUCCESS;
}
TCEMU_EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) {
    API_CTX;
    LIVE(g_events, a);
    LIVE(g_events, b);
    if (!a->recorded || !b->recorded || ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_HANDLE;
    OUT(ms, (float)(b->t - a->t));
}
/* CUDA 12's name of it (before 12.8's _v2), for a backend built against those headers */
#undef cuEventElapsedTime
TCEMU_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { return cuEventElapsedTime_v2(ms, a, b); }
TCEMU_EXPORT CUresult cuEventDestroy_v2(CUevent e) { API_CTX; return destroy(g_events, e); }

static void destroy_context() {
    for (auto &a : g_allocs) free((void *)a.first);
    g_allocs.clear();
    g_stats.live_allocs = g_stats.live_bytes = 0;
    while (!g_modules.empty()) unload((CUmod_st *)*g_modules.begin());
    for (void *p : g_streams) end_capture((CUstream_st *)p, false), delete (CUstream_st *)p;
    for (void *p : g_events) delete (CUevent_st *)p;
    for (void *p : g_graphs) delete (CUgraph_st *)p;
    for (void *p : g_execs) delete (CUgraphExec_st *)p;
    g_streams.clear(), g_events.clear(), g_graphs.clear(), g_execs.clear();
    g_ctx.active = false;
}

/* ---- errors: the real driver's names and messages ---- */
#define TCEMU_ERRORS(X)                                                                                  \
    X(CUDA_SUCCESS, "no error")                                                                          \
    X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                                                      \
    X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                                         \
    X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                                                \
    X(CUDA_ERROR_DEINITIALIZED, "driver shutting down")                                                  \
    X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                                        \
    X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                                               \
    X(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid")                                        \
    X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                                              \
    X(CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device")          \
    X(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed")                                            \
    X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain.") \
    X(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "shared object initialization failed")                       \
    X(CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS")               \
    X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                                              \
    X(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state")                \
    X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                                                    \
    X(CUDA_ERROR_NOT_READY, "device not ready")                                                          \
    X(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")                            \
    X(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch")                     \
    X(CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure")                                            \
    X(CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed")                                           \
    X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                                               \
    X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing")         \
    X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture")  \
    X(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT,                                                                \
      "operation would make the legacy stream depend on a capturing blocking stream")                    \
    X(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD,                                                            \
      "attempt to terminate a thread-local capture sequence from another thread")                        \
    X(CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "the graph update was not performed because it included "   \
                                            "changes which violated constraints specific to instantiated graph update") \
    X(CUDA_ERROR_UNKNOWN, "unknown error")
TCEMU_EXPORT CUresult cuGetErrorString(CUresult e, const char **s) {
#define X(c, m) if (e == c) OUT(s, m);
    TCEMU_ERRORS(X)
#undef X
    if (s) *s = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
}
TCEMU_EXPORT CUresult cuGetErrorName(CUresult e, const char **s) {
#define X(c, m) if (e == c) OUT(s, #c);
    TCEMU_ERRORS(X)
#undef X
    if (s) *s = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
}

/* ---- test hooks (tcemu.h) ---- */
TCEMU_EXPORT void tcemu_stats(tcemu_stats_t *out) { API_NOINIT; *out = g_stats; }
TCEMU_EXPORT void tcemu_reset_stats(void) {
    API_NOINIT;
    tcemu_stats_t s = {};
    s.live_allocs = g_stats.live_allocs, s.live_bytes = s.peak_bytes = g_stats.live_bytes;
    s.modules_live = g_stats.modules_live;
    g_stats = s;
}
TCEMU_EXPORT int tcemu_fail_after(const char *fn, int n) {
    API_NOINIT;
    Dl_info self; /* only names this library exports: a typo must not pass silently */
    void *h = dladdr((void *)&tcemu_stats, &self) ? dlopen(self.dli_fname, RTLD_LAZY | RTLD_NOLOAD) : nullptr;
    bool known = h && fn && strncmp(fn, "tcemu_", 6) && (dlsym(h, fn) || dlsym(h, (std::string(fn) + "_v2").c_str()));
    if (h) dlclose(h);
    if (!known || n < 1) return -1;
    g_faults[fn] = n;
    return 0;
}
TCEMU_EXPORT void tcemu_reset_faults(void) { API_NOINIT; g_faults.clear(); }
TCEMU_EXPORT const char *tcemu_last_error(void) { return g_last_err.c_str(); }
