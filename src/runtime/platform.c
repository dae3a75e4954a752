/* Platform layer: the only file with OS-specific code (threads, dynamic
 * loading, file mapping, CPU features, timers).  Porting = this file. */

#if defined(_WIN32)
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#else
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>
#ifndef TC_NO_THREADS
#include <pthread.h>
#endif
#endif

/* ---- timers -------------------------------------------------------------- */

TC__FN TC__UNUSED double tc__now_sec(void) {
#if defined(_WIN32)
    LARGE_INTEGER f, c;
    QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&c);
    return (double)c.QuadPart / (double)f.QuadPart;
#else
    /* gettimeofday, not clock_gettime: the latter is hidden under -std=c99
     * when the user's file included a system header before this one. */
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
#endif
}

/* ---- files for the on-disk caches ------------------------------------------ */

/* Creates dir and its parents (mkdir -p); 0 when it exists afterwards. */
TC__FN TC__UNUSED int tc__mkdirs(const char *dir) {
    char buf[1024];
    size_t i, n = strlen(dir);
    if (n == 0 || n >= sizeof buf) return -1;
    memcpy(buf, dir, n + 1);
    for (i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\\' && buf[i] != 0) continue;
        buf[i] = 0;
#if defined(_WIN32)
        CreateDirectoryA(buf, NULL);
#else
        mkdir(buf, 0755);
#endif
        buf[i] = dir[i];
    }
#if defined(_WIN32)
    {
        DWORD a = GetFileAttributesA(dir);
        return a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY) ? 0 : -1;
    }
#else
    {
        struct stat st;
        return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
    }
#endif
}

/* Moves a finished file over dst in one step: a reader sees the old file
 * or the new one, never a part (rename is atomic on POSIX; Windows
 * replaces the target in one call). */
TC__FN TC__UNUSED int tc__file_replace(const char *tmp, const char *dst) {
#if defined(_WIN32)
    return MoveFileExA(tmp, dst, MOVEFILE_REPLACE_EXISTING) ? 0 : -1;
#else
    return rename(tmp, dst);
#endif
}

/* Reads up to cap - 1 bytes of path into buf (NUL-terminated); the byte
 * count, or -1.  Only a regular file is read: a FIFO or device placed
 * where a cache file belongs must neither block nor feed the reader (it
 * is opened non-blocking and checked on the descriptor itself, so there
 * is no window between the check and the read). */
TC__FN TC__UNUSED long tc__read_small_file(const char *path, char *buf, size_t cap) {
    long n = 0;
#if defined(_WIN32)
    DWORD a = GetFileAttributesA(path);
    FILE *fp;
    if (cap == 0 || a == INVALID_FILE_ATTRIBUTES || (a & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_DEVICE))) return -1;
    if (!(fp = fopen(path, "rb"))) return -1;
    n = (long)fread(buf, 1, cap - 1, fp);
    fclose(fp);
#else
    struct stat st;
    int fd;
    if (cap == 0 || (fd = open(path, O_RDONLY | O_NONBLOCK)) < 0) return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    while ((size_t)n < cap - 1) {
        ssize_t r = read(fd, buf + n, cap - 1 - (size_t)n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (long)r;
    }
    close(fd);
#endif
    buf[n] = 0;
    return n;
}

TC__FN TC__UNUSED unsigned long tc__pid(void) {
#if defined(_WIN32)
    return (unsigned long)GetCurrentProcessId();
#else
    return (unsigned long)getpid();
#endif
}

/* ---- CPU count and features --------------------------------------------- */

TC__FN int tc__cpu_count(void) {
#if defined(_WIN32)
    SYSTEM_INFO si;
    GetSystemInfo(&si);
    return (int)si.dwNumberOfProcessors;
#else
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (n > 256 ? 256 : (int)n);
#endif
}

/* TC__CPU_NT_FILL: the core's non-temporal stores combine in the L1's
 * fill buffers, the ones its load misses need (Intel's cores; AMD's have
 * separate write-combining buffers), so a kernel that streams its result
 * past the caches starves the hardware prefetcher of its input
 * (tc__krun_arm_stream). */
enum { TC__CPU_AVX2 = 1, TC__CPU_FMA = 2, TC__CPU_AVX512F = 4, TC__CPU_NEON = 8, TC__CPU_NT_FILL = 16 };

/* cpuid says what the core implements; XGETBV says whether the OS saves the
 * wide registers.  Both must agree before a wide ISA is used. */
TC__FN TC__UNUSED int tc__cpu_features(void) {
    int f = 0;
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    unsigned a, b, c, d, xlo, xhi;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
    if (b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu) f |= TC__CPU_NT_FILL; /* "GenuineIntel" */
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
    if (!(c & (1u << 27))) return 0; /* OSXSAVE */
    {
        int fma = (c >> 12) & 1;
        __asm__ volatile("xgetbv" : "=a"(xlo), "=d"(xhi) : "c"(0));
        if ((xlo & 6) != 6) return 0; /* XMM and YMM state */
        __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
        if (b & (1u << 5)) f |= TC__CPU_AVX2;
        if (fma) f |= TC__CPU_FMA;
        if ((b & (1u << 16)) && (xlo & 0xe0) == 0xe0) f |= TC__CPU_AVX512F;
    }
#elif defined(__aarch64__)
    f |= TC__CPU_NEON;
#endif
    return f;
}

/* ---- ISA levels: the one place that chooses the executor's level -------- */

/* The levels this build instantiates (TC__ISA_LEVELS, generated from the
 * amalgamation's list) with the CPU features each needs; the executor's
 * and the GEMM's tables of instances are built from the same rows. */
typedef struct tc__isa_level {
    tc_isa isa;
    int needs; /* TC__CPU_* bits */
} tc__isa_level;
#define TC__ISA_LEVEL_ROW_(level, sfx, lanes, needs) {level, needs},
static const tc__isa_level tc__isa_levels[] = {TC__ISA_LEVELS(TC__ISA_LEVEL_ROW_){TC_ISA_NONE, 0}};
#undef TC__ISA_LEVEL_ROW_

/* The level that runs for a request (AUTO: the widest there is; else a
 * cap): the widest level built, at most the cap, that the CPU and OS run
 * (cpuid and XGETBV, tc__cpu_features).  A request below every level built
 * gets the lowest; TC_ISA_NONE when none is built (no GNU C vectors). */
TC__FN tc_isa tc__isa_resolve(int cpu_features, tc_isa cap) {
    tc_isa r = TC_ISA_NONE, lowest = TC_ISA_NONE;
    int i;
    for (i = 0; tc__isa_levels[i].isa != TC_ISA_NONE; i++) {
        tc_isa l = tc__isa_levels[i].isa;
        if ((cpu_features & tc__isa_levels[i].needs) != tc__isa_levels[i].needs) continue;
        if (lowest == TC_ISA_NONE || (int)l < (int)lowest) lowest = l;
        if ((cap == TC_ISA_AUTO || (int)l <= (int)cap) && (int)l > (int)r) r = l;
    }
    return r == TC_ISA_NONE ? lowest : r;
}

/* A cap lowered by the environment variable TC_ISA (debugging, tests): a
 * level's name, v128's also by its architecture's (sse2, neon). */
TC__FN tc_isa tc__isa_env_cap(tc_isa cap) {
    static const char *const names[] = {"scalar", "v128", "sse2", "neon", "avx2", "avx512"};
    static const tc_isa levels[] = {TC_ISA_SCALAR, TC_ISA_V128, TC_ISA_V128, TC_ISA_V128, TC_ISA_AVX2, TC_ISA_AVX512};
    const char *e = getenv("TC_ISA");
    int i;
    for (i = 0; e && i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcmp(e, names[i]) == 0 && (cap == TC_ISA_AUTO || (int)levels[i] < (int)cap)) cap = levels[i];
    return cap;
}

TCDEF const char *tc_isa_name(tc_isa isa) {
    switch (isa) {
    case TC_ISA_SCALAR: return "scalar";
#if defined(__aarch64__)
    case TC_ISA_V128: return "neon";
#elif defined(__x86_64__) || defined(__i386__)
    case TC_ISA_V128: return "sse2";
#else
    case TC_ISA_V128: return "v128";
#endif
    case TC_ISA_AVX2: return "avx2";
    case TC_ISA_AVX512: return "avx512";
    default: return "none";
    }
}

/* ---- dynamic loading ----------------------------------------------------- */

TC__FN TC__UNUSED void *tc__dl_open(const char *name) {
#if defined(_WIN32)
    return (void *)LoadLibraryA(name);
#else
    return dlopen(name, RTLD_NOW | RTLD_LOCAL);
#endif
}

TC__FN TC__UNUSED void *tc__dl_sym(void *lib, const char *name) {
#if defined(_WIN32)
    /* ISO C has no function-to-object pointer cast; copy the bits */
    FARPROC p = GetProcAddress((HMODULE)lib, name);
    void *r;
    memcpy(&r, &p, sizeof r);
    return r;
#else
    return dlsym(lib, name);
#endif
}

TC__FN TC__UNUSED void tc__dl_close(void *lib) {
#if defined(_WIN32)
    FreeLibrary((HMODULE)lib);
#else
    if (lib) dlclose(lib);
#endif
}

/* ---- file mapping ---------------------------------------------------------- */

typedef struct tc__mapping {
    void *data;
    size_t size;
    void *handle;
} tc__mapping;

/* Maps a regular file read-only, or copy-on-write when `cow` (writes stay
 * in this process's pages).  Returns 0 on success, -2 when path is not a
 * regular file (a FIFO or device: never opened blocking), -1 otherwise.
 * An empty file maps to data == NULL, size 0. */
TC__FN TC__UNUSED int tc__map_file(const char *path, tc__mapping *m, int cow) {
    memset(m, 0, sizeof *m);
#if defined(_WIN32)
    {
        LARGE_INTEGER sz;
        HANDLE f = CreateFileA(path, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, NULL);
        if (f == INVALID_HANDLE_VALUE) return -1;
        if (GetFileType(f) != FILE_TYPE_DISK) {
            CloseHandle(f);
            return -2;
        }
        if (!GetFileSizeEx(f, &sz)) {
            CloseHandle(f);
            return -1;
        }
        m->size = (size_t)sz.QuadPart;
        if (m->size > 0) {
            HANDLE map = CreateFileMappingA(f, NULL, cow ? PAGE_WRITECOPY : PAGE_READONLY, 0, 0, NULL);
            if (map) m->data = MapViewOfFile(map, cow ? FILE_MAP_COPY : FILE_MAP_READ, 0, 0, 0);
            if (map) CloseHandle(map);
        }
        CloseHandle(f);
        return m->size > 0 && !m->data ? -1 : 0;
    }
#else
    {
        struct stat sb;
        int fd = open(path, O_RDONLY | O_NONBLOCK);
        if (fd < 0) return -1;
        if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < 0 || (uint64_t)sb.st_size > (uint64_t)SIZE_MAX) {
            int r = fstat(fd, &sb) == 0 && !S_ISREG(sb.st_mode) ? -2 : -1;
            close(fd);
            return r;
        }
        m->size = (size_t)sb.st_size;
        if (m->size > 0) {
            void *p = mmap(NULL, m->size, cow ? PROT_READ | PROT_WRITE : PROT_READ, MAP_PRIVATE, fd, 0);
            if (p == MAP_FAILED) {
                close(fd);
                return -1;
            }
            m->data = p;
        }
        close(fd);
        return 0;
    }
#endif
}

TC__FN TC__UNUSED void tc__unmap_file(tc__mapping *m) {
#if defined(_WIN32)
    if (m->data) UnmapViewOfFile(m->data);
#else
    if (m->data) munmap(m->data, m->size);
#endif
    memset(m, 0, sizeof *m);
}

/* ---- atomics (for the thread pool's spin phase) ------------------------------ */

#if defined(__GNUC__) || defined(__clang__)
#define TC__HAVE_ATOMICS 1
TC__FN TC__UNUSED uint64_t tc__atomic_load_u64(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
TC__FN TC__UNUSED void tc__atomic_store_u64(uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
TC__FN TC__UNUSED int tc__atomic_load_int(const int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
TC__FN TC__UNUSED void tc__atomic_store_int(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
/* the value before adding v (claims, e.g. a workspace slot) */
TC__FN TC__UNUSED int tc__atomic_fetch_add_int(int *p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
TC__FN TC__UNUSED int tc__atomic_inc_int(int *p) { return __atomic_add_fetch(p, 1, __ATOMIC_ACQ_REL); }
/* *p = v where *p was `was`: nonzero when it was */
TC__FN TC__UNUSED int tc__atomic_cas_u64(uint64_t *p, uint64_t was, uint64_t v) {
    return __atomic_compare_exchange_n(p, &was, v, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}
TC__FN TC__UNUSED void tc__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ volatile("pause");
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}
#endif

/* A flag taken by one thread at a time (a compiled function's busy flag):
 * nonzero when this caller took it. */
TC__FN TC__UNUSED int tc__try_enter(int *flag) {
#if defined(TC__HAVE_ATOMICS)
    return __atomic_exchange_n(flag, 1, __ATOMIC_ACQUIRE) == 0;
#elif defined(_WIN32)
    return InterlockedExchange((volatile LONG *)flag, 1) == 0;
#else
    if (*flag) return 0; /* no atomics known for this compiler: best effort */
    *flag = 1;
    return 1;
#endif
}

/* A failure flag raised by any worker of a parallel loop (several may at
 * once); read by the caller after the pool's join, which orders it. */
TC__FN TC__UNUSED void tc__flag_raise(int *flag) {
#if defined(TC__HAVE_ATOMICS)
    __atomic_store_n(flag, 1, __ATOMIC_RELAXED);
#elif defined(_WIN32)
    InterlockedExchange((volatile LONG *)flag, 1);
#else
    *flag = 1; /* no atomics known for this compiler: best effort */
#endif
}

/* A counter's next value, unique across threads (temporary file names). */
TC__FN TC__UNUSED unsigned tc__next_ticket(int *counter) {
#if defined(TC__HAVE_ATOMICS)
    return (unsigned)__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
#elif defined(_WIN32)
    return (unsigned)InterlockedIncrement((volatile LONG *)counter);
#else
    return (unsigned)(*counter)++; /* no atomics known for this compiler: best effort */
#endif
}

TC__FN TC__UNUSED void tc__leave(int *flag) {
#if defined(TC__HAVE_ATOMICS)
    __atomic_store_n(flag, 0, __ATOMIC_RELEASE);
#elif defined(_WIN32)
    InterlockedExchange((volatile LONG *)flag, 0);
#else
    *flag = 0;
#endif
}

/* ---- threads ------------------------------------------------------------- */

#ifndef TC_NO_THREADS
#if defined(_WIN32)
typedef struct tc__thread {
    HANDLE h;
    void *(*fn)(void *);
    void *arg;
} tc__thread;
typedef SRWLOCK tc__mutex;
typedef CONDITION_VARIABLE tc__cond;

static DWORD WINAPI tc__thread_tramp(LPVOID p) {
    tc__thread *th = (tc__thread *)p;
    th->fn(th->arg);
    return 0;
}
TC__FN int tc__thread_start(tc__thread *th, void *(*fn)(void *), void *arg) {
    th->fn = fn;
    th->arg = arg;
    th->h = CreateThread(NULL, 0, tc__thread_tramp, th, 0, NULL);
    return th->h ? 0 : -1;
}
TC__FN void tc__thread_join(tc__thread *th) {
    WaitForSingleObject(th->h, INFINITE);
    CloseHandle(th->h);
}
TC__FN void tc__mutex_init(tc__mutex *m) { InitializeSRWLock(m); }
TC__FN void tc__mutex_destroy(tc__mutex *m) { (void)m; }
TC__FN void tc__mutex_lock(tc__mutex *m) { AcquireSRWLockExclusive(m); }
TC__FN void tc__mutex_unlock(tc__mutex *m) { ReleaseSRWLockExclusive(m); }
TC__FN void tc__cond_init(tc__cond *c) { InitializeConditionVariable(c); }
TC__FN void tc__cond_destroy(tc__cond *c) { (void)c; }
TC__FN void tc__cond_wait(tc__cond *c, tc__mutex *m) { SleepConditionVariableSRW(c, m, INFINITE, 0); }
TC__FN void tc__cond_broadcast(tc__cond *c) { WakeAllConditionVariable(c); }
#else
typedef struct tc__thread {
    pthread_t t;
} tc__thread;
typedef pthread_mutex_t tc__mutex;
typedef pthread_cond_t tc__cond;

TC__FN int tc__thread_start(tc__thread *th, void *(*fn)(void *), void *arg) {
    return pthread_create(&th->t, NULL, fn, arg) == 0 ? 0 : -1;
}
TC__FN void tc__thread_join(tc__thread *th) { pthread_join(th->t, NULL); }
TC__FN void tc__mutex_init(tc__mutex *m) { pthread_mutex_init(m, NULL); }
TC__FN void tc__mutex_destroy(tc__mutex *m) { pthread_mutex_destroy(m); }
TC__FN void tc__mutex_lock(tc__mutex *m) { pthread_mutex_lock(m); }
TC__FN void tc__mutex_unlock(tc__mutex *m) { pthread_mutex_unlock(m); }
TC__FN void tc__cond_init(tc__cond *c) { pthread_cond_init(c, NULL); }
TC__FN void tc__cond_destroy(tc__cond *c) { pthread_cond_destroy(c); }
TC__FN void tc__cond_wait(tc__cond *c, tc__mutex *m) { pthread_cond_wait(c, m); }
TC__FN void tc__cond_broadcast(tc__cond *c) { pthread_cond_broadcast(c); }
#endif
#endif
