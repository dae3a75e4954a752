/* tcemu's NVRTC: a CUDA C++ program becomes a host shared library.
 *   1. preprocess it as C++ with emu_cuda.h force-included (the user's -D,
 *      -U, -I, and __CUDA_ARCH__ for the -arch asked for), which turns
 *      __global__, __shared__ and __launch_bounds__ into markers;
 *   2. rewrite the markers in the preprocessed text (line structure kept, so
 *      the compiler's errors name the program's own lines) and append a
 *      table of the extern "C" kernels with their trampolines;
 *   3. compile that to a .so, handed out wrapped in a blob (see make_blob). */
#include "emu.h"
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <ftw.h>
#include <mutex>
#include <set>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
extern "C" const char tcemu_header[]; /* emu_cuda.h, embedded below */
asm(".section .rodata\n.globl tcemu_header\n.hidden tcemu_header\ntcemu_header:\n.incbin \"" TCEMU_HEADER_PATH
    "\"\n.byte 0\n.previous\n");

struct _nvrtcProgram {
    std::string src, name, file, log, cubin, ptx; /* file: the name made a safe file name */
    std::vector<std::pair<std::string, std::string>> headers; /* include name, text */
    bool compiled = false;
};
static std::mutex g_pmu;
static std::set<nvrtcProgram> g_progs;

int nvrtc_version_code() {
    const char *v = getenv("TC_EMU_NVRTC_VERSION");
    int maj = 12, min = 8;
    if (v && *v) sscanf(v, "%d.%d", &maj, &min);
    return 1000 * maj + 10 * min;
}
static std::vector<int> archs() {
    if (nvrtc_version_code() >= 13000) return {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
    return {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 120};
}

/* ---- the blob: a CUBIN is a BlobHdr and the library's bytes; a "PTX" is
 * text (NUL-terminated, as PTX is): a header line and the bytes in hex ---- */
static std::string make_blob(const std::string &so, int arch, bool ptx) {
    BlobHdr h = {{'T', 'C', 'E', 'M', 'U', 'B', 'I', 'N'}, tcemu::ABI, (uint32_t)arch,
                 (uint32_t)nvrtc_version_code(), ptx, so.size()};
    if (!ptx) return std::string((const char *)&h, sizeof h) + so;
    char line[160];
    snprintf(line, sizeof line, "//TCEMU-PTX abi=%u arch=%u nvrtc=%u size=%llu\n", h.abi, h.arch, h.nvrtc,
             (unsigned long long)h.size);
    std::string t = line;
    static const char hx[] = "0123456789abcdef";
    for (unsigned char c : so) t += hx[c >> 4], t += hx[c & 15];
    return t + "\n";
}
bool parse_blob(const void *image, BlobHdr *h, std::string *so) {
    const char *p = (const char *)image;
    unsigned long long size;
    if (!strncmp(p, "TCEMUBIN", 8)) { /* (strncmp: stops at a shorter image's NUL) */
        memcpy(h, p, sizeof *h);
        if (h->abi != tcemu::ABI || h->ptx) return false;
        so->assign(p + sizeof *h, h->size);
        return true;
    }
    int used = 0;
    if (strncmp(p, "//TCEMU-PTX ", 12) ||
        sscanf(p, "//TCEMU-PTX abi=%u arch=%u nvrtc=%u size=%llu\n%n", &h->abi, &h->arch, &h->nvrtc, &size, &used) < 4 ||
        !used || h->abi != tcemu::ABI)
        return false;
    h->ptx = 1, h->size = size;
    p += used;
    so->resize(size);
    for (size_t i = 0; i < size; i++) {
        int a = p[2 * i], b = a ? p[2 * i + 1] : 0;
        auto v = [](int c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
        if (v(a) < 0 || v(b) < 0) return false;
        (*so)[i] = (char)(v(a) << 4 | v(b));
    }
    return true;
}

/* ---- options ---- */
struct Opts {
    std::vector<std::string> pp; /* -D, -U, -I, -include for the preprocessor */
    int arch = 0;                /* 0: NVRTC's default (virtual) */
    bool virt = true, ptxas_v = false;
    std::string std_ = "c++17";
};
static bool parse_opts(int n, const char *const *o, Opts *r, std::string *log) {
    static const char *const ignored[] = {"-G", "--device-debug", "-lineinfo", "--generate-line-info", "-use_fast_math",
        "--use_fast_math", "-extra-device-vectorization", "--extra-device-vectorization", "-default-device",
        "--device-as-default-execution-space", "-w", "--disable-warnings", "-restrict", "--restrict", "-dlto",
        "--dlink-time-opt", "-minimal", "--minimal", "-ewp", "--extensible-whole-program", "-dw", "--no-source-include",
        "-no-source-include", "-fdevice-time-trace", "-fdevice-syntax-only"};
    static const char *const ignored_eq[] = {"-ftz=", "--ftz=", "-prec-div=", "--prec-div=", "-prec-sqrt=",
        "--prec-sqrt=", "-fmad=", "--fmad=", "-dopt=", "--dopt=", "-maxrregcount=", "--maxrregcount=", "-rdc=",
        "--relocatable-device-code=", "-builtin-move-forward=", "-builtin-initializer-list=", "-split-compile=",
        "--split-compile=", "-time=", "--time=", "-Werror=", "-diag-suppress=", "--diag-suppress=", "-diag-error=",
        "-diag-warn=", "--ptxas-options=", "-Xptxas="};
    /* what has no meaning on the CPU is accepted and ignored; --use_fast_math
     * is not passed on as -ffast-math, which would break isnan/isinf */
    auto pre = [](const std::string &s, const char *p) { return s.compare(0, strlen(p), p) == 0; };
    for (int i = 0; i < n; i++) {
        if (!o || !o[i]) return false;
        std::string s = o[i], v;
        auto value = [&](const char *sh, const char *lg) { /* -Dx, -D x, --define-macro=x */
            if (s == sh || s == lg) return i + 1 < n && o[i + 1] ? (v = o[++i], true) : false;
            if (pre(s, (std::string(lg) + "=").c_str())) return v = s.substr(strlen(lg) + 1), true;
            if (sh[1] != '-' && pre(s, sh) && s.size() > strlen(sh)) /* -DX, -arch=X */
                return v = s.substr(strlen(sh) + (s[strlen(sh)] == '=')), true;
            return false;
        };
        bool known = false;
        for (const char *x : ignored) known |= s == x;
        for (const char *x : ignored_eq) known |= pre(s, x);
        if (pre(s, "-Xptxas=") || pre(s, "--ptxas-options=")) r->ptxas_v |= s.find("-v") != std::string::npos;
        if (known) continue;
        if (s == "-Xptxas" || s == "--ptxas-options") {
            if (i + 1 >= n || !o[i + 1]) return *log = "nvrtc: error: missing value for " + s + "\n", false;
            r->ptxas_v |= strcmp(o[++i], "-v") == 0;
        } else if (value("-D", "--define-macro")) r->pp.push_back("-D" + v);
        else if (value("-U", "--undefine-macro")) r->pp.push_back("-U" + v);
        else if (value("-I", "--include-path")) r->pp.push_back("-I" + v);
        else if (value("-include", "--pre-include")) r->pp.push_back("-include"), r->pp.push_back(v);
        else if (value("-std", "--std")) {
            if (v != "c++03" && v != "c++11" && v != "c++14" && v != "c++17" && v != "c++20")
                return *log = "nvrtc: error: invalid value for -std: " + v + "\n", false;
            if (v == "c++20") r->std_ = v;
        } else if (value("-arch", "--gpu-architecture")) {
            int a = 0;
            char kind[16] = "", suffix = 0;
            bool ok = sscanf(v.c_str(), "%15[a-z]_%d%c", kind, &a, &suffix) >= 2 &&
                      (suffix == 0 || suffix == 'a' || suffix == 'f') && (!strcmp(kind, "sm") || !strcmp(kind, "compute"));
            bool supported = false; /* by this NVRTC version */
            for (int x : archs()) supported |= x == a;
            ok = ok && supported;
            if (!ok) return *log = "nvrtc: error: invalid value for --gpu-architecture (-arch): " + v + "\n", false;
            r->arch = a, r->virt = !strcmp(kind, "compute");
        } else return *log = "nvrtc: error: unrecognized option " + s + "\n", false;
    }
    if (!r->arch) r->arch = nvrtc_version_code() >= 13000 ? 75 : 52;
    return true;
}

/* ---- running the host compiler ---- */
static bool write_file(const std::string &path, const std::string &data) {
    FILE *f = fopen(path.c_str(), "wb");
    if (!f) return false;
    bool ok = fwrite(data.data(), 1, data.size(), f) == data.size();
    return fclose(f) == 0 && ok;
}
static bool read_file(const std::string &path, std::string *out) {
    FILE *f = fopen(path.c_str(), "rb");
    if (!f) return false;
    char buf[65536];
    size_t k;
    out->clear();
    while ((k = fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, k);
    fclose(f);
    return true;
}
/* Runs argv with stdout and stderr into `log`; the exit status, or -1. */
static int run(std::vector<std::string> args, const std::string &logpath, std::string *log) {
    std::vector<char *> av;
    for (auto &a : args) av.push_back(&a[0]);
    av.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, logpath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int e = posix_spawnp(&pid, av[0], &fa, nullptr, av.data(), environ), st = 0;
    posix_spawn_file_actions_destroy(&fa);
    if (e) return *log += std::string("tcemu: cannot run ") + av[0] + ": " + strerror(e) + "\n", -1;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    std::string out;
    read_file(logpath, &out);
    *log += out;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
static std::vector<std::string> split(const std::string &s) {
    std::vector<std::string> v;
    std::string w;
    for (size_t i = 0; i <= s.size(); i++)
        if (i == s.size() || isspace((unsigned char)s[i])) { if (!w.empty()) v.push_back(w), w.clear(); }
        else w += s[i];
    return v;
}
/* $TC_EMU_CXX (may carry flags), else c++, else g++ */
static std::vector<std::string> compiler() {
    const char *c = getenv("TC_EMU_CXX");
    return split(c && *c ? c : access("/usr/bin/c++", X_OK) == 0 ? "c++" : "g++");
}
static int rm_entry(const char *p, const struct stat *, int, struct FTW *) { return remove(p); }
struct TempDir {
    std::string path;
    TempDir() {
        const char *t = getenv("TMPDIR");
        path = std::string(t && *t ? t : "/tmp") + "/tcemu-XXXXXX";
        if (!mkdtemp(&path[0])) path.clear();
    }
    ~TempDir() {
        if (path.empty()) return;
        if (env_int("TC_EMU_KEEP", 0)) fprintf(stderr, "tcemu: program kept in %s\n", path.c_str());
        else nftw(path.c_str(), rm_entry, 8, FTW_DEPTH | FTW_PHYS);
    }
};

/* ---- step 2: the rewrite of the preprocessed text ---- */
struct Kernel { std::string name, bounds; };
static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }
static size_t skip_parens(const std::string &t, size_t i) { /* t[i] == '(': past its match */
    for (int d = 0; i < t.size(); i++) {
        d += t[i] == '(' ? 1 : t[i] == ')' ? -1 : 0;
        if (!d) return i + 1;
    }
    return i;
}
/* A type with its __attribute__((...)) and alignas(...) taken out. */
static std::string strip_attrs(std::string s) {
    for (const char *a : {"__attribute__", "alignas"})
        for (size_t p; (p = s.find(a)) != std::string::npos;) {
            size_t q = s.find('(', p);
            s.erase(p, q == std::string::npos ? s.size() - p : skip_parens(s, q) - p);
        }
    return s;
}
static std::string rewrite(const std::string &t, std::vector<Kernel> *ks, std::string *log) {
    std::string out;
    std::vector<char> braces;   /* per open brace: 'n' namespace or extern "C" block, 'c' extern "C", 'o' other */
    std::string prev;           /* the last token */
    bool decl_ns = false, decl_c = false, decl_tmpl = false; /* seen since the last ; { } */
    size_t prev_at = 0;         /* where prev starts in out */
    out.reserve(t.size() + 4096);
    for (size_t i = 0; i < t.size();) {
        char c = t[i];
        if (c == '#' && (i == 0 || t[i - 1] == '\n')) { /* a line marker */
            size_t e = t.find('\n', i);
            e = e == std::string::npos ? t.size() : e;
            out.append(t, i, e - i), i = e;
            continue;
        }
        if (isspace((unsigned char)c)) { out += c, i++; continue; }
        size_t start = i, at = out.size();
        std::string tok;
        size_t w = i;
        while (w > 0 && ident_char(t[w - 1])) w--;
        if (c == '\'' && w < i && isdigit((unsigned char)t[w])) tok = t.substr(i++, 1); /* 1'000 */
        else if (c == '"' || c == '\'') { /* a literal: to its closing quote */
            for (i++; i < t.size() && t[i] != c; i++) i += t[i] == '\\';
            tok = t.substr(start, ++i - start);
        } else if (ident_char(c)) {
            while (i < t.size() && ident_char(t[i])) i++;
            tok = t.substr(start, i - start);
        } else tok = t.substr(i++, 1);
        if (tok == "__tcemu_global__") {
            bool c_link = decl_c;
            for (char b : braces) c_link |= b == 'c';
            Kernel k;
            size_t j = i;
            while (j < t.size()) { /* the declarator: the first name followed by '(' */
                while (j < t.size() && isspace((unsigned char)t[j])) j++;
                size_t s0 = j;
                while (j < t.size() && ident_char(t[j])) j++;
                if (s0 == j) break;
                std::string id = t.substr(s0, j - s0);
                size_t p = j;
                while (p < t.size() && isspace((unsigned char)t[p])) p++;
                if (p >= t.size() || t[p] != '(') continue;
                if (id == "__tcemu_lb__" || id == "__attribute__" || id == "alignas" || id == "__declspec") {
                    size_t e = skip_parens(t, p);
                    if (id == "__tcemu_lb__") { /* the first argument: the block size bound */
                        int d = 0;
                        for (size_t q = p + 1; q < e - 1 && !(d == 0 && t[q] == ','); q++) {
                            d += t[q] == '(' ? 1 : t[q] == ')' ? -1 : 0;
                            k.bounds += t[q];
                        }
                    }
                    j = e;
                    continue;
                }
                k.name = id;
                break;
            }
            if (k.name.empty()) *log += "tcemu: warning: cannot find the name of a __global__ function\n";
            else if (decl_tmpl) *log += "tcemu: warning: template kernel '" + k.name + "' is not supported\n";
            else if (!c_link) /* as with the real NVRTC, whose name for it is mangled */
                *log += "tcemu: warning: kernel '" + k.name + "' is not extern \"C\": cuModuleGetFunction will not find it\n";
            else {
                bool dup = false;
                for (auto &x : *ks) dup |= x.name == k.name;
                if (!dup) ks->push_back(k);
            }
            out.append(tok.size(), ' ');
            continue;
        }
        if (tok == "__tcemu_lb__") { /* parsed with its __global__: drop it */
            size_t p = t.find('(', i);
            size_t e = skip_parens(t, p);
            for (size_t q = start; q < e; q++) out += t[q] == '\n' ? '\n' : ' ';
            i = e;
            continue;
        }
        if (tok == "__tcemu_shared__" && prev == "extern") {
            /* extern __shared__ T name[];  ->  T *name = dynamic shared memory */
            size_t semi = t.find(';', i), br = t.rfind('[', semi), e = br;
            if (semi == std::string::npos || br == std::string::npos || br < i) {
                *log += "tcemu: warning: cannot parse an extern __shared__ declaration\n";
                out += "static thread_local";
                continue;
            }
            while (e > i && isspace((unsigned char)t[e - 1])) e--;
            size_t s0 = e;
            while (s0 > i && ident_char(t[s0 - 1])) s0--;
            std::string name = t.substr(s0, e - s0), type = strip_attrs(t.substr(i, s0 - i));
            bool in_function = false;
            for (char b : braces) in_function |= b == 'o';
            out.resize(prev_at);
            out += in_function ? type + " *" + name + " = (" + type + " *)tcemu_st.dyn_smem;"
                               : "static tcemu_dyn<" + type + "> " + name + ";";
            for (size_t q = start; q <= semi; q++) out += t[q] == '\n' ? "\n" : "";
            i = semi + 1;
            prev = ";", decl_ns = decl_c = decl_tmpl = false;
            continue;
        }
        if (tok == "__tcemu_shared__") out += prev == "static" ? "thread_local" : "static thread_local";
        else out += tok;
        if (tok == "{") braces.push_back(decl_ns ? 'n' : decl_c && prev == "\"C\"" ? 'c' : 'o');
        if (tok == "}" && !braces.empty()) braces.pop_back();
        if (tok == "{" || tok == "}" || tok == ";") decl_ns = decl_c = decl_tmpl = false;
        decl_ns |= tok == "namespace";
        decl_c |= tok == "\"C\"" && prev == "extern";
        decl_tmpl |= tok == "template";
        prev = tok, prev_at = at;
    }
    return out;
}

/* ---- the API ---- */
#define PROG_CHECK(p)                                                                                    \
    std::lock_guard<std::mutex> lk_(g_pmu);                                                              \
    if (!g_progs.count(p)) return NVRTC_ERROR_INVALID_PROGRAM
TCEMU_EXPORT const char *nvrtcGetErrorString(nvrtcResult r) {
    static const char *const s[] = {"NVRTC_SUCCESS", "NVRTC_ERROR_OUT_OF_MEMORY", "NVRTC_ERROR_PROGRAM_CREATION_FAILURE",
        "NVRTC_ERROR_INVALID_INPUT", "NVRTC_ERROR_INVALID_PROGRAM", "NVRTC_ERROR_INVALID_OPTION",
        "NVRTC_ERROR_COMPILATION", "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE",
        "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION", "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION",
        "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID", "NVRTC_ERROR_INTERNAL_ERROR", "NVRTC_ERROR_TIME_FILE_WRITE_FAILED"};
    return (unsigned)r < sizeof s / sizeof *s ? s[r] : "NVRTC_ERROR unknown";
}
static nvrtcResult nvrtc_fault(const char *fn) {
    if (!fault_hit(fn)) return NVRTC_SUCCESS;
    return !strcmp(fn, "nvrtcCompileProgram") ? NVRTC_ERROR_COMPILATION
         : !strcmp(fn, "nvrtcCreateProgram") ? NVRTC_ERROR_OUT_OF_MEMORY : NVRTC_ERROR_INTERNAL_ERROR;
}
#define NVRTC_FAULT                                                                                      \
    if (nvrtcResult f_ = nvrtc_fault(__func__)) return f_
TCEMU_EXPORT nvrtcResult nvrtcVersion(int *maj, int *min) {
    NVRTC_FAULT;
    if (!maj || !min) return NVRTC_ERROR_INVALID_INPUT;
    *maj = nvrtc_version_code() / 1000, *min = nvrtc_version_code() % 1000 / 10;
    return NVRTC_SUCCESS;
}
TCEMU_EXPORT nvrtcResult nvrtcGetNumSupportedArchs(int *n) {
    NVRTC_FAULT;
    if (!n) return NVRTC_ERROR_INVALID_INPUT;
    *n = (int)archs().size();
    return NVRTC_SUCCESS;
}
TCEMU_EXPORT nvrtcResult nvrtcGetSupportedArchs(int *a) {
    NVRTC_FAULT;
    if (!a) return NVRTC_ERROR_INVALID_INPUT;
    for (int x : archs()) *a++ = x;
    return NVRTC_SUCCESS;
}
TCEMU_EXPORT nvrtcResult nvrtcCreateProgram(nvrtcProgram *prog, const char *src, const char *name, int nh,
                                            const char *const *headers, const char *const *names) {
    NVRTC_FAULT;
    if (!prog) return NVRTC_ERROR_INVALID_PROGRAM;
    if (!src || nh < 0 || (nh && (!headers || !names))) return NVRTC_ERROR_INVALID_INPUT;
    _nvrtcProgram *p = new _nvrtcProgram;
    p->src = src;
    p->file = p->name = name && *name ? name : "default_program";
    for (char &ch : p->file)
        if (!ident_char(ch) && ch != '.' && ch != '-') ch = '_';
    for (int i = 0; i < nh; i++) {
        if (!names[i] || strstr(names[i], "..") || names[i][0] == '/') { delete p; return NVRTC_ERROR_INVALID_INPUT; }
        p->headers.emplace_back(names[i], headers[i] ? headers[i] : "");
    }
    std::lock_guard<std::mutex> lk(g_pmu);
    g_progs.insert(*prog = p);
    return NVRTC_SUCCESS;
}
TCEMU_EXPORT nvrtcResult nvrtcDestroyProgram(nvrtcProgram *prog) {
    NVRTC_FAULT;
    if (!prog) return NVRTC_ERROR_INVALID_PROGRAM;
    PROG_CHECK(*prog);
    g_progs.erase(*prog);
    delete *prog;
    *prog = nullptr;
    return NVRTC_SUCCESS;
}
static std::string strip_dir(std::string log, const std::string &dir) {
    for (size_t p; (p = log.find(dir + "/")) != std::string::npos;) log.erase(p, dir.size() + 1);
    return log;
}
TCEMU_EXPORT nvrtcResult nvrtcCompileProgram(nvrtcProgram p, int n, const char *const *opts) {
    { /* compiles of different programs may run in parallel */
        PROG_CHECK(p);
    }
    p->compiled = false;
    p->log.clear();
    if (fault_hit(__func__)) return p->log = "tcemu: injected failure (tcemu_fail_after)\n", NVRTC_ERROR_COMPILATION;
    Opts o;
    if (!parse_opts(n, opts, &o, &p->log)) return NVRTC_ERROR_INVALID_OPTION;
    __atomic_fetch_add(&g_stats.nvrtc_compiles, 1, __ATOMIC_RELAXED);
    TempDir d;
    if (d.path.empty()) return p->log = "tcemu: cannot make a temporary directory\n", NVRTC_ERROR_INTERNAL_ERROR;
    std::string D = d.path + "/", hdr = D + "tcemu_cuda.h", log, so;
    std::string quoted;
    for (char ch : p->name) quoted += ch == '"' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
    bool ok = write_file(hdr, tcemu_header) && write_file(D + p->file, "#line 1 \"" + quoted + "\"\n" + p->src);
    for (auto &h : p->headers) { /* at their include names, beside the program */
        std::string path = D + h.first;
        for (size_t s = path.find('/', D.size()); s != std::string::npos; s = path.find('/', s + 1))
            mkdir(path.substr(0, s).c_str(), 0700);
        ok = ok && write_file(path, h.second);
    }
    if (!ok) return p->log = "tcemu: cannot write the program's files\n", NVRTC_ERROR_INTERNAL_ERROR;
    std::vector<std::string> cxx = compiler(), a = cxx;
    for (const char *x : {"-E", "-x", "c++"}) a.push_back(x);
    a.push_back("-std=" + o.std_);
    a.push_back("-D__CUDA_ARCH__=" + std::to_string(o.arch * 10));
    a.push_back("-include"), a.push_back(hdr), a.push_back("-I" + d.path);
    a.insert(a.end(), o.pp.begin(), o.pp.end());
    a.push_back(D + p->file), a.push_back("-o"), a.push_back(D + "prog.ii");
    if (run(a, D + "log", &log)) return p->log = strip_dir(log, d.path), NVRTC_ERROR_COMPILATION;
    std::string pre, warn;
    std::vector<Kernel> ks;
    if (!read_file(D + "prog.ii", &pre)) return p->log = "tcemu: no preprocessed output\n", NVRTC_ERROR_INTERNAL_ERROR;
    std::string text = rewrite(pre, &ks, &warn);
    text += "\n# 1 \"<tcemu trampolines>\"\nextern \"C\" const tcemu::kernel_info tcemu_kernels[] = {\n";
    for (auto &k : ks) /* the bound is an expression of the program's: the compiler evaluates it */
        text += "  tcemu::info<&" + k.name + ">(\"" + k.name + "\", " + (k.bounds.empty() ? "1024" : "(int)(" + k.bounds + ")") +
                "),\n";
    text += "  {}};\n";
    a = cxx;
    a.push_back("-std=" + o.std_);
    for (const char *x : {"-O1", "-fPIC", "-shared"}) a.push_back(x);
    if (const char *x = getenv("TC_EMU_CXXFLAGS")) /* e.g. "-O0 -g" to debug a kernel */
        for (const std::string &w : split(x)) a.push_back(w);
    a.push_back(D + "kernel.ii"), a.push_back("-o"), a.push_back(D + "kernel.so");
    if (!write_file(D + "kernel.ii", text)) return p->log = "tcemu: cannot write the program\n", NVRTC_ERROR_INTERNAL_ERROR;
    if (run(a, D + "log", &log)) return p->log = strip_dir(warn + log, d.path), NVRTC_ERROR_COMPILATION;
    if (!read_file(D + "kernel.so", &so)) return p->log = "tcemu: no library\n", NVRTC_ERROR_INTERNAL_ERROR;
    p->log = strip_dir(warn + log, d.path);
    if (o.ptxas_v)
        for (auto &k : ks)
            p->log += "ptxas info    : Compiling entry function '" + k.name + "' for 'sm_" + std::to_string(o.arch) +
                      "'\nptxas info    : Used 32 registers\n";
    p->ptx = make_blob(so, o.arch, true);
    p->ptx += '\0';
    p->cubin = o.virt ? "" : make_blob(so, o.arch, false);
    p->compiled = true;
    return NVRTC_SUCCESS;
}
TCEMU_EXPORT nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram p, size_t *n) {
    NVRTC_FAULT;
    PROG_CHECK(p);
    if (!n) return NVRTC_ERROR_INVALID_INPUT;
    *n = p->log.size() + 1;
    return NVRTC_SUCCESS;
}
TCEMU_EXPORT nvrtcResult nvrtcGetProgramLog(nvrtcProgram p, char *log) {
    NVRTC_FAULT;
    PROG_CHECK(p);
    if (!log) return NVRTC_ERROR_INVALID_INPUT;
    memcpy(log, p->log.c_str(), p->log.size() + 1);
    return NVRTC_SUCCESS;
}
static nvrtcResult get(nvrtcProgram p, const std::string _nvrtcProgram::*what, size_t *n, char *out) {
    PROG_CHECK(p);
    if (!p->compiled || (!n && !out)) return NVRTC_ERROR_INVALID_INPUT;
    const std::string &s = p->*what;
    if (n) *n = s.size();
    else memcpy(out, s.data(), s.size());
    return NVRTC_SUCCESS;
}
TCEMU_EXPORT nvrtcResult nvrtcGetCUBINSize(nvrtcProgram p, size_t *n) {
    NVRTC_FAULT;
    return n ? get(p, &_nvrtcProgram::cubin, n, nullptr) : NVRTC_ERROR_INVALID_INPUT;
}
TCEMU_EXPORT nvrtcResult nvrtcGetCUBIN(nvrtcProgram p, char *c) {
    NVRTC_FAULT;
    return c ? get(p, &_nvrtcProgram::cubin, nullptr, c) : NVRTC_ERROR_INVALID_INPUT;
}
TCEMU_EXPORT nvrtcResult nvrtcGetPTXSize(nvrtcProgram p, size_t *n) {
    NVRTC_FAULT;
    return n ? get(p, &_nvrtcProgram::ptx, n, nullptr) : NVRTC_ERROR_INVALID_INPUT;
}
TCEMU_EXPORT nvrtcResult nvrtcGetPTX(nvrtcProgram p, char *c) {
    NVRTC_FAULT;
    return c ? get(p, &_nvrtcProgram::ptx, nullptr, c) : NVRTC_ERROR_INVALID_INPUT;
}
