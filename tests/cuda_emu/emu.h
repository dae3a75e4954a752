/* tcemu internals shared by driver.cpp, simt.cpp and nvrtc.cpp. */
#ifndef TCEMU_EMU_H
#define TCEMU_EMU_H
#define TCEMU_RUNTIME
#include "emu_cuda.h"
#include "tcemu.h"
#include <cuda.h>
#include <nvrtc.h>
#include <map>
#include <string>
#include <vector>

#define TCEMU_EXPORT extern "C" __attribute__((visibility("default")))

/* A loaded module: a dlopen'ed kernel library. */
struct CUmod_st {
    void *dl = nullptr;
    std::string path;
    const tcemu::kernel_info *kernels = nullptr;
    tcemu::state *(*state)() = nullptr; /* this OS thread's tcemu_st in the module */
    size_t static_smem = 0;             /* the module's __shared__ bytes (its TLS) */
    int arch = 0, binary = 0;           /* sm the blob was built for; 1 = cubin, 0 = PTX */
    std::map<std::string, struct CUfunc_st *> funcs;
};
struct CUfunc_st {
    CUmod_st *mod;
    const tcemu::kernel_info *ki;
    int max_dyn = -1; /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, -1 = unset */
};
struct Launch {
    CUfunc_st *f;
    unsigned grid[3], block[3], smem;
    void **params;
};

/* simt.cpp: runs a launch's blocks; 0, or -1 with the error message. */
int simt_run(const Launch &L, std::string *err);
const tcemu::api *simt_api();

/* nvrtc.cpp: the blob format (see make_blob). */
struct BlobHdr {
    char magic[8];                   /* "TCEMUBIN" */
    uint32_t abi, arch, nvrtc, ptx;  /* tcemu::ABI, sm (90), NVRTC version (12080), 1 = PTX */
    uint64_t size;                   /* bytes of the kernel library that follow */
};
bool parse_blob(const void *image, BlobHdr *h, std::string *so);
int nvrtc_version_code(); /* 1000 * major + 10 * minor */

/* driver.cpp: shared with nvrtc.cpp. */
extern tcemu_stats_t g_stats;
int fault_hit(const char *fn); /* 1 when fn's armed failure is due */
int env_int(const char *name, int def);
#endif
