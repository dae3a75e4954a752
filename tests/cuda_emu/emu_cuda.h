/* tcemu's kernel-side header: the CUDA C++ device dialect as plain C++17.
 * Force-included (-include) into every program tcemu's NVRTC compiles; also
 * included by the runtime (TCEMU_RUNTIME) for the ABI both halves share.
 * Each CUDA thread is a fiber of the runtime: barriers and warp collectives
 * call back into it through `tcemu_api`, and the per-thread indices live in a
 * thread_local `tcemu_st` that the runtime rewrites at every fiber switch. */
#ifndef TCEMU_CUDA_H
#define TCEMU_CUDA_H
#include <cstddef>
#include <cstdint>

namespace tcemu {
enum { ABI = 1 };
struct uint3_ { unsigned x, y, z; };
/* What the running fiber sees; one per OS thread per module. */
struct state { uint3_ tid, bid, bdim, gdim; void *dyn_smem; unsigned lane; };
enum { W_SYNC, W_SHFL, W_BALLOT, W_ANY, W_ALL };
/* The runtime's entry points, handed to the module when it is loaded. */
struct api {
    int (*sync)(int pred);  /* __syncthreads: returns how many threads passed pred != 0 */
    uint64_t (*warp)(int op, unsigned mask, uint64_t v, int src); /* warp collective */
    unsigned (*active)(void);                                      /* live lanes of my warp */
    void (*fail)(const char *msg) __attribute__((noreturn));       /* launch error */
};
/* One kernel of a module: its trampoline and its parameters' layout (what a
 * cubin's parameter table tells the real driver). */
struct kernel_info {
    const char *name;
    void (*entry)(void **params);
    unsigned nparams;
    const size_t *size, *align;
    int max_threads; /* __launch_bounds__, else 1024 */
};
} // namespace tcemu

#ifndef TCEMU_RUNTIME
#include <algorithm>
#include <cassert>
#include <cfloat>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <math.h>
#include <type_traits>
#include <utility>

extern "C" {
thread_local tcemu::state tcemu_st;
const tcemu::api *tcemu_api;
int tcemu_abi = tcemu::ABI;
void tcemu_bind(const tcemu::api *a) { tcemu_api = a; }
tcemu::state *tcemu_state(void) { return &tcemu_st; }
}

/* The attribute spellings: defined after the standard headers, which use
 * some of these names in their own __attribute__ lists.  __global__,
 * __shared__ and __launch_bounds__ become markers that tcemu's NVRTC finds
 * and rewrites in the preprocessed source (trampolines, per-block storage,
 * extern shared arrays). */
#define __global__ __tcemu_global__
#define __shared__ __tcemu_shared__
#define __launch_bounds__(...) __tcemu_lb__(__VA_ARGS__)
#define __device__
#define __host__
#define __constant__
#define __managed__
#define __grid_constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __align__(n) __attribute__((aligned(n)))
#define __CUDACC__ 1
#define __CUDACC_RTC__ 1
#define __TCEMU__ 1

typedef tcemu::uint3_ uint3;
struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
    constexpr dim3(uint3 u) : x(u.x), y(u.y), z(u.z) {}
};
#define threadIdx (static_cast<const uint3 &>(tcemu_st.tid))
#define blockIdx (static_cast<const uint3 &>(tcemu_st.bid))
#define blockDim (static_cast<const uint3 &>(tcemu_st.bdim))
#define gridDim (static_cast<const uint3 &>(tcemu_st.gdim))
static constexpr int warpSize = 32;

/* Vector types, aligned as CUDA aligns them. */
#define TCEMU_VEC(T, N, A2, A4)                                                                          \
    struct __attribute__((aligned(A2))) N##2 { T x, y; };                                              \
    struct N##3 { T x, y, z; };                                                                          \
    struct __attribute__((aligned(A4))) N##4 { T x, y, z, w; };                                        \
    inline N##2 make_##N##2(T x, T y) { return {x, y}; }                                                 \
    inline N##3 make_##N##3(T x, T y, T z) { return {x, y, z}; }                                         \
    inline N##4 make_##N##4(T x, T y, T z, T w) { return {x, y, z, w}; }
TCEMU_VEC(float, float, 8, 16)
TCEMU_VEC(int, int, 8, 16)
TCEMU_VEC(double, double, 16, 16)
TCEMU_VEC(unsigned char, uchar, 2, 4)
TCEMU_VEC(char, char, 2, 4)
TCEMU_VEC(short, short, 4, 8)
TCEMU_VEC(unsigned short, ushort, 4, 8)
struct __attribute__((aligned(8))) uint2 { unsigned x, y; };
struct __attribute__((aligned(16))) uint4 { unsigned x, y, z, w; };
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return {x, y, z}; }
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }

/* Barriers, warp collectives, errors. */
inline void __syncthreads() { tcemu_api->sync(0); }
inline int __syncthreads_count(int p) { return tcemu_api->sync(p); }
inline int __syncthreads_or(int p) { return tcemu_api->sync(p) != 0; }
inline int __syncthreads_and(int p) {
    return tcemu_api->sync(p) == (int)(blockDim.x * blockDim.y * blockDim.z);
}
inline void __syncwarp(unsigned mask = 0xffffffffu) { tcemu_api->warp(tcemu::W_SYNC, mask, 0, 0); }
inline unsigned __activemask() { return tcemu_api->active(); }
inline unsigned __ballot_sync(unsigned m, int p) { return (unsigned)tcemu_api->warp(tcemu::W_BALLOT, m, p != 0, 0); }
inline int __any_sync(unsigned m, int p) { return (int)tcemu_api->warp(tcemu::W_ANY, m, p != 0, 0); }
inline int __all_sync(unsigned m, int p) { return (int)tcemu_api->warp(tcemu::W_ALL, m, p != 0, 0); }
[[noreturn]] inline void __trap() { tcemu_api->fail("__trap() called"); }
/* a failed assert ends the launch (the real one: CUDA_ERROR_ASSERT), not the process */
#undef assert
#define assert(e) ((e) ? (void)0 : tcemu_api->fail("assertion failed: " #e))
inline void __nanosleep(unsigned) {}
inline long long clock64() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

namespace tcemu {
/* A shuffle is a collective whose result is lane `src`'s value (the caller
 * computes src from CUDA's rules; a src past the segment means its own). */
template <class T> inline T shfl(unsigned mask, T v, int src) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "shuffle of a type over 8 bytes");
    uint64_t b = 0;
    std::memcpy(&b, &v, sizeof v);
    b = tcemu_api->warp(W_SHFL, mask, b, src);
    std::memcpy(&v, &b, sizeof v);
    return v;
}
inline int lane() { return (int)tcemu_st.lane; }
} // namespace tcemu
template <class T> inline T __shfl_sync(unsigned m, T v, int src, int w = 32) {
    return tcemu::shfl(m, v, (tcemu::lane() & ~(w - 1)) + (src & (w - 1)));
}
template <class T> inline T __shfl_up_sync(unsigned m, T v, unsigned d, int w = 32) {
    int l = tcemu::lane();
    return tcemu::shfl(m, v, (l & (w - 1)) >= (int)d ? l - (int)d : l);
}
template <class T> inline T __shfl_down_sync(unsigned m, T v, unsigned d, int w = 32) {
    int l = tcemu::lane();
    return tcemu::shfl(m, v, (l & (w - 1)) + (int)d < w ? l + (int)d : l);
}
template <class T> inline T __shfl_xor_sync(unsigned m, T v, int x, int w = 32) {
    int l = tcemu::lane(), s = l ^ (x & 31);
    return tcemu::shfl(m, v, (s & ~(w - 1)) > (l & ~(w - 1)) ? l : s);
}

/* Atomics: relaxed, and real ones (blocks may run on several OS threads);
 * CUDA's overload set, each a compare-and-swap loop on the bits. */
template <class T, class Op> inline T tcemu_rmw(T *p, Op op) {
    using U = std::conditional_t<sizeof(T) == 8, uint64_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint16_t>>;
    U o = __atomic_load_n((U *)p, __ATOMIC_RELAXED), n;
    T f, r;
    do {
        std::memcpy(&f, &o, sizeof f);
        r = op(f);
        std::memcpy(&n, &r, sizeof n);
    } while (!__atomic_compare_exchange_n((U *)p, &o, n, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return f;
}
#define TCEMU_RMW(T, name, e) \
    inline T name(T *p, T v) { return tcemu_rmw(p, [=](T o) { return (T)(e); }); }
#define TCEMU_INT_ATOMICS(T)                                                                              \
    TCEMU_RMW(T, atomicAdd, o + v) TCEMU_RMW(T, atomicExch, v) TCEMU_RMW(T, atomicMin, o < v ? o : v)     \
    TCEMU_RMW(T, atomicMax, o > v ? o : v) TCEMU_RMW(T, atomicAnd, o & v) TCEMU_RMW(T, atomicOr, o | v)   \
    TCEMU_RMW(T, atomicXor, o ^ v)                                                                        \
    inline T atomicCAS(T *p, T c, T v) { return tcemu_rmw(p, [=](T o) { return o == c ? v : o; }); }
TCEMU_INT_ATOMICS(int)
TCEMU_INT_ATOMICS(unsigned)
TCEMU_INT_ATOMICS(unsigned long long)
TCEMU_RMW(int, atomicSub, o - v)
TCEMU_RMW(unsigned, atomicSub, o - v)
TCEMU_RMW(unsigned, atomicInc, o >= v ? 0u : o + 1)
TCEMU_RMW(unsigned, atomicDec, o == 0 || o > v ? v : o - 1)
TCEMU_RMW(long long, atomicMin, o < v ? o : v)
TCEMU_RMW(long long, atomicMax, o > v ? o : v)
TCEMU_RMW(float, atomicAdd, o + v)
TCEMU_RMW(float, atomicExch, v)
TCEMU_RMW(double, atomicAdd, o + v)
inline unsigned short atomicCAS(unsigned short *p, unsigned short c, unsigned short v) {
    return tcemu_rmw(p, [=](unsigned short o) { return o == c ? v : o; });
}
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
template <class T> inline T __ldg(const T *p) { return *p; }

/* Bits. */
template <class To, class From> inline To tcemu_bits(From f) {
    To t;
    std::memcpy(&t, &f, sizeof t);
    return t;
}
inline float __int_as_float(int i) { return tcemu_bits<float>(i); }
inline float __uint_as_float(unsigned i) { return tcemu_bits<float>(i); }
inline int __float_as_int(float f) { return tcemu_bits<int>(f); }
inline unsigned __float_as_uint(float f) { return tcemu_bits<unsigned>(f); }
inline double __longlong_as_double(long long i) { return tcemu_bits<double>(i); }
inline long long __double_as_longlong(double d) { return tcemu_bits<long long>(d); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}

/* Math: the C library's float functions, plus CUDA's intrinsics at full
 * precision (the fast variants are allowed to be more accurate). */
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __expf(float x) { return expf(x); }
inline float __exp10f(float x) { return powf(10.0f, x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __log10f(float x) { return log10f(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __tanhf(float x) { return tanhf(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float fdividef(float a, float b) { return a / b; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __saturatef(float x) { return x != x ? 0.0f : x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
inline int __float2int_rz(float x) { return (int)x; }
inline float __int2float_rn(int x) { return (float)x; }

/* min/max: CUDA's overload set (same-type, and the signed/unsigned mixes). */
#define TCEMU_MM(R, A, B)                                                                                \
    inline R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; }                                         \
    inline R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
TCEMU_MM(int, int, int)
TCEMU_MM(unsigned, unsigned, unsigned)
TCEMU_MM(unsigned, int, unsigned)
TCEMU_MM(unsigned, unsigned, int)
TCEMU_MM(long, long, long)
TCEMU_MM(unsigned long, unsigned long, unsigned long)
TCEMU_MM(long long, long long, long long)
TCEMU_MM(unsigned long long, unsigned long long, unsigned long long)
TCEMU_MM(unsigned long long, long long, unsigned long long)
TCEMU_MM(unsigned long long, unsigned long long, long long)
inline float min(float a, float b) { return fminf(a, b); }
inline float max(float a, float b) { return fmaxf(a, b); }
inline double min(double a, double b) { return fmin(a, b); }
inline double max(double a, double b) { return fmax(a, b); }
inline double min(float a, double b) { return fmin(a, b); }
inline double max(float a, double b) { return fmax(a, b); }
inline double min(double a, float b) { return fmin(a, b); }
inline double max(double a, float b) { return fmax(a, b); }

/* Tensor cores, as the generated code calls them (cuda/codegen.c's
 * prelude defines the same functions with inline PTX for the real NVRTC).
 * The layouts are the PTX ISA's (9.7.14.5 "Matrix Fragments for mma",
 * 9.7.14.5.15 "ldmatrix"), lane l = 4 * groupID + threadID_in_group: every
 * lane's registers go to the warp's slot of a per-block exchange buffer,
 * a __syncwarp (a warp collective: every lane has arrived) publishes them,
 * each lane computes its own result from the whole warp's, and a second
 * __syncwarp frees the buffer.  A fragment index the generator gets wrong
 * therefore gives a wrong product, as on the GPU. */
namespace tcemu {
struct xch_t { uint64_t w[32][8]; }; /* per warp: 8 words of each lane */
static inline xch_t &xch() { /* static: per module (an inline function's statics are
                                 * STB_GNU_UNIQUE, one for every module loaded) */
    static thread_local xch_t x[32]; /* blocks of an OS thread run one at a time */
    unsigned t = tcemu_st.tid.x + tcemu_st.bdim.x * (tcemu_st.tid.y + tcemu_st.bdim.y * tcemu_st.tid.z);
    return x[t >> 5];
}
inline void warp_all() { __syncwarp(0xffffffffu); }
inline float f16f(uint16_t h) {
    unsigned s = (unsigned)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu) return tcemu_bits<float>(s | 0x7f800000u | (m << 13));
    if (e == 0u) { float v = (float)m * 5.9604644775390625e-8f; return s ? -v : v; }
    return tcemu_bits<float>(s | ((e + 112u) << 23) | (m << 13));
}
inline float bf16f(uint16_t h) { return tcemu_bits<float>((unsigned)h << 16); }
/* cvt.rna.tf32.f32: 10 mantissa bits, to nearest, ties away from zero */
inline float tf32(float f) {
    unsigned u = tcemu_bits<unsigned>(f);
    if ((u & 0x7f800000u) == 0x7f800000u) return f;
    return tcemu_bits<float>((u + 0x1000u) & 0xffffe000u);
}
/* D = A B + C for one m16n8k16 (.row.col, f16 or bf16, f32 accumulators). */
template <int BF> inline void mma16816(float *d, const unsigned *a, const unsigned *b) {
    xch_t &x = xch();
    const int l = lane();
    float A[16][16], B[16][8];
    for (int i = 0; i < 4; i++) x.w[l][i] = a[i];
    x.w[l][4] = b[0], x.w[l][5] = b[1];
    warp_all();
    for (int s = 0; s < 32; s++) {
        const int g = s >> 2, t = s & 3;
        for (int i = 0; i < 8; i++) { /* a_i: register i / 2, half i % 2 (low first) */
            const uint16_t h = (uint16_t)(x.w[s][i >> 1] >> (16 * (i & 1)));
            const int row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8, col = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
            A[row][col] = BF ? bf16f(h) : f16f(h);
        }
        for (int i = 0; i < 4; i++) { /* b_i: row (k) = 2 t + (i & 1) (+ 8 for i >= 2), col (n) = groupID */
            const uint16_t h = (uint16_t)(x.w[s][4 + (i >> 1)] >> (16 * (i & 1)));
            B[t * 2 + (i & 1) + (i >= 2 ? 8 : 0)][g] = BF ? bf16f(h) : f16f(h);
        }
    }
    warp_all();
    const int g = l >> 2, t = l & 3;
    for (int i = 0; i < 4; i++) { /* c_i: row groupID (+ 8 for i >= 2), col 2 t + (i & 1) */
        const int row = g + (i >= 2 ? 8 : 0), col = t * 2 + (i & 1);
        float acc = d[i];
        for (int k = 0; k < 16; k++) acc = fmaf(A[row][k], B[k][col], acc);
        d[i] = acc;
    }
}
} // namespace tcemu
inline void tc_mma_m16n8k16_f16(float *d, const unsigned *a, const unsigned *b) { tcemu::mma16816<0>(d, a, b); }
inline void tc_mma_m16n8k16_bf16(float *d, const unsigned *a, const unsigned *b) { tcemu::mma16816<1>(d, a, b); }
/* D = A B + C for one m16n8k8 .tf32 (inputs rounded to TF32 first). */
inline void tc_mma_m16n8k8_tf32(float *d, const unsigned *a, const unsigned *b) {
    tcemu::xch_t &x = tcemu::xch();
    const int l = tcemu::lane();
    float A[16][8], B[8][8];
    for (int i = 0; i < 4; i++) x.w[l][i] = a[i];
    x.w[l][4] = b[0], x.w[l][5] = b[1];
    tcemu::warp_all();
    for (int s = 0; s < 32; s++) {
        const int g = s >> 2, t = s & 3;
        for (int i = 0; i < 4; i++) /* a_i: row groupID (+ 8 for a1, a3), col t (+ 4 for a2, a3) */
            A[g + (i & 1) * 8][t + (i >> 1) * 4] = tcemu::tf32(tcemu_bits<float>((unsigned)x.w[s][i]));
        for (int i = 0; i < 2; i++) /* b_i: row (k) t (+ 4 for b1), col (n) groupID */
            B[t + i * 4][g] = tcemu::tf32(tcemu_bits<float>((unsigned)x.w[s][4 + i]));
    }
    tcemu::warp_all();
    const int g = l >> 2, t = l & 3;
    for (int i = 0; i < 4; i++) {
        const int row = g + (i >= 2 ? 8 : 0), col = t * 2 + (i & 1);
        float acc = d[i];
        for (int k = 0; k < 8; k++) acc = fmaf(A[row][k], B[k][col], acc);
        d[i] = acc;
    }
}
inline unsigned tc_f2tf32(float f) { return tcemu_bits<unsigned>(tcemu::tf32(f)); }
/* ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16: lanes 8 i .. 8 i + 7
 * give the rows (16 bytes, 16-byte aligned) of matrix i; register i of lane
 * l holds matrix i's row l / 4, columns 2 (l % 4) and + 1 (.trans: rows
 * 2 (l % 4) and + 1 of column l / 4). */
template <int TRANS> inline void tcemu_ldmatrix_x4(unsigned *r, const void *row) {
    tcemu::xch_t &x = tcemu::xch();
    const int l = tcemu::lane();
    if ((uintptr_t)row & 15) tcemu_api->fail("ldmatrix: a row address that is not 16-byte aligned");
    x.w[l][0] = (uint64_t)(uintptr_t)row;
    tcemu::warp_all();
    /* TC_EMU_BANK_CHECK=1: a matrix whose 8 rows do not fall in 8 distinct
     * 16-byte bank groups (a conflict: the read takes several passes) is a
     * launch error (a slowness, not a wrong result, so opt-in) */
    static const int bank_check = getenv("TC_EMU_BANK_CHECK") && atoi(getenv("TC_EMU_BANK_CHECK"));
    if (bank_check && l == 0)
        for (int i = 0; i < 4; i++) {
            unsigned seen = 0;
            for (int r = 0; r < 8; r++) seen |= 1u << ((x.w[8 * i + r][0] >> 4) & 7);
            if (seen != 0xffu) tcemu_api->fail("ldmatrix: the rows of a matrix share shared-memory banks (TC_EMU_BANK_CHECK)");
        }
    for (int i = 0; i < 4; i++) {
        if (!TRANS) std::memcpy(&r[i], (const char *)(uintptr_t)x.w[8 * i + (l >> 2)][0] + 4 * (l & 3), 4);
        else {
            uint16_t lo, hi;
            std::memcpy(&lo, (const char *)(uintptr_t)x.w[8 * i + 2 * (l & 3)][0] + 2 * (l >> 2), 2);
            std::memcpy(&hi, (const char *)(uintptr_t)x.w[8 * i + 2 * (l & 3) + 1][0] + 2 * (l >> 2), 2);
            r[i] = (unsigned)lo | (unsigned)hi << 16;
        }
    }
    tcemu::warp_all();
}
inline void tc_ldmatrix_x4(unsigned *r, const void *row) { tcemu_ldmatrix_x4<0>(r, row); }
inline void tc_ldmatrix_x4_trans(unsigned *r, const void *row) { tcemu_ldmatrix_x4<1>(r, row); }
/* cp.async.cg.shared.global 16 bytes (src_bytes of them read, the rest
 * zeroed): queued per thread and done when a tc_cp_async_wait<N> retires
 * its group, so a read of the tile before the wait sees the old bytes. */
namespace tcemu {
struct cpa_t { void *d; const void *s; int n, grp; };
struct cpq_t { cpa_t q[32]; int n, committed; };
static inline cpq_t &cpq() {
    static thread_local cpq_t x[1024];
    return x[tcemu_st.tid.x + tcemu_st.bdim.x * (tcemu_st.tid.y + tcemu_st.bdim.y * tcemu_st.tid.z)];
}
} // namespace tcemu
/* Set by the module's first cp.async, so that only modules that use it
 * carry the queue in their thread-local storage, which tcemu counts as the
 * module's static shared memory. */
namespace tcemu {
static void (*cpq_reset)() = nullptr;
static inline void cpq_clear() {
    cpq_t &c = cpq();
    c.n = 0;
    c.committed = 0;
}
} // namespace tcemu
inline void tc_cp_async_16(void *dst, const void *src, int src_bytes) {
    tcemu::cpq_t &c = tcemu::cpq();
    tcemu::cpq_reset = tcemu::cpq_clear;
    if (((uintptr_t)dst & 15) || (src_bytes > 0 && ((uintptr_t)src & 15)) || src_bytes < 0 || src_bytes > 16)
        tcemu_api->fail("cp.async: a misaligned address or a size outside 0..16");
    if (c.n == 32) tcemu_api->fail("cp.async: more than 32 copies in flight in one thread");
    c.q[c.n++] = {dst, src, src_bytes, c.committed};
}
inline void tc_cp_async_commit() { tcemu::cpq().committed++; }
template <int N> inline void tc_cp_async_wait() {
    tcemu::cpq_t &c = tcemu::cpq();
    int k = 0;
    for (int i = 0; i < c.n; i++) {
        tcemu::cpa_t &e = c.q[i];
        if (e.grp < c.committed - N) { /* retired: its bytes land now */
            if (e.n) std::memcpy(e.d, e.s, (size_t)e.n);
            std::memset((char *)e.d + e.n, 0, (size_t)(16 - e.n));
        } else c.q[k++] = e;
    }
    c.n = k;
}

/* A file-scope `extern __shared__ T name[];` becomes one of these (at block
 * scope it becomes a plain pointer): indexing and conversion to pointers. */
template <class T> struct tcemu_dyn {
    T &operator[](size_t i) const { return ((T *)tcemu_st.dyn_smem)[i]; }
    operator T *() const { return (T *)tcemu_st.dyn_smem; }
    template <class U> explicit operator U *() const { return (U *)tcemu_st.dyn_smem; }
};

/* The trampolines tcemu's NVRTC appends: unpack cuLaunchKernel's void **
 * by the kernel's own parameter types (copies, as the real launch does).
 * In an unnamed namespace: two modules may name a kernel and its parameter
 * struct alike (a program's tck0 and P_tck0), and g++ makes a template's
 * static data unique across the process (STB_GNU_UNIQUE, even under
 * RTLD_LOCAL): the second module would read the first one's parameter sizes. */
namespace tcemu {
namespace {
template <class F> struct sig;
template <class... A> struct sig<void (*)(A...)> {
    static constexpr unsigned n = sizeof...(A);
    static constexpr size_t size[sizeof...(A) + 1] = {sizeof(A)..., 0};
    static constexpr size_t align[sizeof...(A) + 1] = {alignof(A)..., 0};
    template <size_t... I> static void call(void (*f)(A...), void **p, std::index_sequence<I...>) {
        f(*static_cast<std::remove_cv_t<A> *>(p[I])...);
    }
};
template <auto F> void entry(void **p) {
    using S = sig<decltype(F)>;
    /* a thread starts with no copies in flight: a block that failed (or
     * ended without waiting) must not land its copies into a later one */
    if (cpq_reset) cpq_reset();
    S::call(F, p, std::make_index_sequence<S::n>{});
}
template <auto F> constexpr kernel_info info(const char *name, int max_threads) {
    using S = sig<decltype(F)>;
    return kernel_info{name, &entry<F>, S::n, S::size, S::align, max_threads};
}
} // namespace
} // namespace tcemu
#endif /* !TCEMU_RUNTIME */
#endif
