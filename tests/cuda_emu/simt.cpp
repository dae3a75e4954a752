/* tcemu's SIMT core: every CUDA thread of a block is a fiber on one OS
 * thread.  A fiber runs until it finishes, reaches __syncthreads or a warp
 * collective; the scheduler resumes the runnable ones in a FIFO, so a block
 * always runs the same way.  Barriers release when every thread (or every
 * lane of the collective's mask) has arrived; a thread that can never
 * arrive (it exited, or everyone waits) is a launch error, never a hang. */
#include "emu.h"
#include <atomic>
#include <cstdarg>
#include <cstring>
#include <memory>
#include <mutex>
#include <csignal>
#include <sys/mman.h>
#include <thread>
#include <unistd.h>

/* ---- context switch: callee-saved registers on the stack, then swap the
 * stack pointer (no syscall, unlike swapcontext); ucontext elsewhere.  The
 * floating-point control words are not switched (reloading them costs more
 * than the rest): every fiber runs kernel code, which never changes them. ---- */
#if defined(__x86_64__) && !defined(TCEMU_UCONTEXT)
extern "C" __attribute__((visibility("hidden"))) void tcemu_swap(void **save, void *to);
asm(".text\n.globl tcemu_swap\n.hidden tcemu_swap\n.type tcemu_swap,@function\ntcemu_swap:\n"
    "pushq %rbp\npushq %rbx\npushq %r12\npushq %r13\npushq %r14\npushq %r15\n"
    "movq %rsp, (%rdi)\nmovq %rsi, %rsp\n"
    "popq %r15\npopq %r14\npopq %r13\npopq %r12\npopq %rbx\npopq %rbp\nret\n"
    ".size tcemu_swap,.-tcemu_swap\n");
struct Ctx { void *sp; };
static void ctx_init(Ctx *c, char *stack, size_t size, void (*fn)()) {
    uint64_t *p = (uint64_t *)(((uintptr_t)stack + size) & ~(uintptr_t)15);
    *--p = 0;             /* fn's return address: fn is entered with rsp = 8 mod 16, as after a call */
    *--p = (uint64_t)fn;  /* where tcemu_swap's ret goes */
    for (int i = 0; i < 6; i++) *--p = 0;
    c->sp = p;
}
static void ctx_swap(Ctx *from, Ctx *to) { tcemu_swap(&from->sp, to->sp); }
#elif defined(__aarch64__) && !defined(TCEMU_UCONTEXT)
extern "C" __attribute__((visibility("hidden"))) void tcemu_swap(void **save, void *to);
asm(".text\n.globl tcemu_swap\n.hidden tcemu_swap\n.type tcemu_swap,%function\ntcemu_swap:\n"
    "sub sp, sp, #160\n"
    "stp x19, x20, [sp, #0]\nstp x21, x22, [sp, #16]\nstp x23, x24, [sp, #32]\n"
    "stp x25, x26, [sp, #48]\nstp x27, x28, [sp, #64]\nstp x29, x30, [sp, #80]\n"
    "stp d8, d9, [sp, #96]\nstp d10, d11, [sp, #112]\nstp d12, d13, [sp, #128]\nstp d14, d15, [sp, #144]\n"
    "mov x9, sp\nstr x9, [x0]\nmov sp, x1\n"
    "ldp x19, x20, [sp, #0]\nldp x21, x22, [sp, #16]\nldp x23, x24, [sp, #32]\n"
    "ldp x25, x26, [sp, #48]\nldp x27, x28, [sp, #64]\nldp x29, x30, [sp, #80]\n"
    "ldp d8, d9, [sp, #96]\nldp d10, d11, [sp, #112]\nldp d12, d13, [sp, #128]\nldp d14, d15, [sp, #144]\n"
    "add sp, sp, #160\nret\n.size tcemu_swap,.-tcemu_swap\n");
struct Ctx { void *sp; };
static void ctx_init(Ctx *c, char *stack, size_t size, void (*fn)()) {
    uint64_t *p = (uint64_t *)((((uintptr_t)stack + size) & ~(uintptr_t)15) - 160);
    memset(p, 0, 160);
    p[11] = (uint64_t)fn; /* x30: where tcemu_swap's ret goes */
    c->sp = p;
}
static void ctx_swap(Ctx *from, Ctx *to) { tcemu_swap(&from->sp, to->sp); }
#else
#include <ucontext.h>
struct Ctx { ucontext_t uc; };
static void ctx_init(Ctx *c, char *stack, size_t size, void (*fn)()) {
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = stack;
    c->uc.uc_stack.ss_size = size;
    c->uc.uc_link = nullptr;
    makecontext(&c->uc, fn, 0);
}
static void ctx_swap(Ctx *from, Ctx *to) { swapcontext(&from->uc, &to->uc); }
#endif

/* ---- per-OS-thread worker: 1024 fibers with their stacks, reused ---- */
enum { F_RUN, F_BAR, F_WARP, F_DONE };
struct Fiber {
    Ctx ctx;
    char *stack;
    int state, op, src;
    unsigned mask;
    uint64_t val, res; /* collective operand and result (barrier: the count) */
    tcemu::uint3_ tid;
};
struct Worker {
    enum { MAXT = 1024 };
    Fiber fib[MAXT];
    char *stacks = nullptr;
    size_t stack_size = 0, map_size = 0;
    Ctx sched;
    const Launch *L = nullptr;
    tcemu::state *st = nullptr;
    tcemu::uint3_ bid{};
    unsigned n = 0, cur = 0, ndone = 0, nbar = 0, npred = 0, q[MAXT], qh = 0, qn = 0;
    unsigned arrived[MAXT / 32], done[MAXT / 32]; /* per warp: lanes at a collective, lanes exited */
    std::string err;
    unsigned char *dyn = nullptr;
    size_t dyn_cap = 0, guard = 0;
    void *altstack = nullptr;
    Worker() {
        /* 64 KiB stacks (TC_EMU_STACK_KB) with a guard page below each, so an
         * overflow faults instead of corrupting the neighbour */
        guard = (size_t)sysconf(_SC_PAGESIZE);
        stack_size = ((size_t)env_int("TC_EMU_STACK_KB", 64) * 1024 + guard - 1) / guard * guard;
        map_size = (stack_size + guard) * MAXT;
        void *m = mmap(nullptr, map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) { perror("tcemu: fiber stacks"); abort(); }
        stacks = (char *)m;
        for (unsigned i = 0; i < MAXT; i++) {
            char *base = stacks + i * (stack_size + guard);
            mprotect(base, guard, PROT_NONE);
            fib[i].stack = base + guard;
        }
        watch_faults();
    }
    ~Worker() {
        munmap(stacks, map_size);
        free(dyn);
        if (!altstack) return;
        stack_t ss{};
        ss.ss_flags = SS_DISABLE;
        sigaltstack(&ss, nullptr);
        free(altstack);
    }
    void watch_faults();
};
static thread_local Worker *tl_w;

/* A fault in kernel code (a wild pointer, a fiber stack overflow) names the
 * kernel, block and thread on stderr; then the previous handler (ASan's, or
 * the default crash) takes the fault again. */
static struct sigaction g_prev_segv, g_prev_bus;
static void on_fault(int sig, siginfo_t *si, void *) {
    Worker *w = tl_w;
    if (w && w->L) {
        Fiber &f = w->fib[w->cur];
        const char *a = (const char *)si->si_addr;
        fprintf(stderr, "tcemu: %s in kernel '%s' block (%u,%u,%u) thread (%u,%u,%u), address %p%s\n",
                sig == SIGBUS ? "SIGBUS" : "SIGSEGV", w->L->f->ki->name, w->bid.x, w->bid.y, w->bid.z, f.tid.x, f.tid.y,
                f.tid.z, (const void *)a,
                a < f.stack && a + w->guard >= f.stack ? ": its stack overflowed (TC_EMU_STACK_KB)" : "");
    }
    sigaction(sig, sig == SIGBUS ? &g_prev_bus : &g_prev_segv, nullptr);
}
void Worker::watch_faults() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction sa {};
        sa.sa_sigaction = on_fault;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK; /* on this thread's signal stack: the fault may be an overflow */
        sigaction(SIGSEGV, &sa, &g_prev_segv);
        sigaction(SIGBUS, &sa, &g_prev_bus);
    });
    stack_t cur;
    if (sigaltstack(nullptr, &cur) || !(cur.ss_flags & SS_DISABLE)) return; /* the thread has one */
    stack_t ss{};
    ss.ss_sp = altstack = malloc(ss.ss_size = 65536);
    sigaltstack(&ss, nullptr);
}
static thread_local std::unique_ptr<Worker> tl_own;
static Worker *worker() {
    if (!tl_own) tl_own.reset(new Worker);
    return tl_own.get();
}

static std::string fmt(const char *f, ...) {
    char b[512];
    va_list ap;
    va_start(ap, f);
    vsnprintf(b, sizeof b, f, ap);
    va_end(ap);
    return b;
}
static void push(Worker *w, unsigned i) {
    unsigned t = w->qh + w->qn++;
    w->q[t >= w->n ? t - w->n : t] = i;
}
static void yield(Worker *w) { ctx_swap(&w->fib[w->cur].ctx, &w->sched); }

/* The error of thread w->cur: names the kernel, block and thread. */
static void set_err(Worker *w, const std::string &why) {
    Fiber &f = w->fib[w->cur];
    w->err = fmt("kernel '%s' block (%u,%u,%u) thread (%u,%u,%u): %s", w->L->f->ki->name, w->bid.x, w->bid.y,
                 w->bid.z, f.tid.x, f.tid.y, f.tid.z, why.c_str());
}
/* Ends the block from inside a fiber. */
[[noreturn]] static void fail_here(Worker *w, const std::string &why) {
    set_err(w, why);
    yield(w); /* never resumed */
    abort();
}
static unsigned lanes_present(Worker *w, unsigned base) {
    return w->n - base >= 32 ? ~0u : (1u << (w->n - base)) - 1;
}

static void fiber_main() {
    Worker *w = tl_w;
    w->L->f->ki->entry(w->L->params);
    Fiber &f = w->fib[w->cur];
    unsigned wi = w->cur >> 5, bit = 1u << (w->cur & 31);
    f.state = F_DONE;
    w->ndone++;
    w->done[wi] |= bit;
    if (w->nbar && w->nbar + w->ndone == w->n)
        fail_here(w, fmt("exited while %u threads of its block wait at __syncthreads()", w->nbar));
    for (unsigned l = 0; l < 32; l++)
        if ((w->arrived[wi] >> l & 1) && (w->fib[32 * wi + l].mask & bit))
            fail_here(w, fmt("exited while lane %u of its warp waits for it at a warp collective (mask 0x%08x)", l,
                             w->fib[32 * wi + l].mask));
    yield(w);
    abort();
}

static int api_sync(int pred) {
    Worker *w = tl_w;
    Fiber &f = w->fib[w->cur];
    f.state = F_BAR;
    w->nbar++;
    w->npred += pred != 0;
    if (w->nbar + w->ndone == w->n) {
        if (w->ndone) fail_here(w, fmt("reached __syncthreads() after %u threads of its block exited", w->ndone));
        for (unsigned i = 0; i < w->n; i++) {
            w->fib[i].state = F_RUN;
            w->fib[i].res = w->npred;
            push(w, i);
        }
        w->nbar = w->npred = 0;
    }
    yield(w);
    return (int)f.res;
}

/* A warp collective completes when every lane of its mask (those the block
 * has) has arrived; the last one computes everyone's result. */
static uint64_t api_warp(int op, unsigned mask, uint64_t v, int src) {
    Worker *w = tl_w;
    Fiber &f = w->fib[w->cur];
    unsigned wi = w->cur >> 5, base = 32 * wi, lane = w->cur & 31, m = mask & lanes_present(w, base), ballot = 0;
    if (!(m >> lane & 1)) fail_here(w, fmt("warp collective with mask 0x%08x, which leaves out its own lane %u", mask, lane));
    if (m & w->done[wi])
        fail_here(w, fmt("warp collective with mask 0x%08x, but lane %d exited", mask, __builtin_ctz(m & w->done[wi])));
    f.state = F_WARP, f.op = op, f.mask = m, f.val = v, f.src = src;
    w->arrived[wi] |= 1u << lane;
    if ((w->arrived[wi] & m) != m) { /* wait for the others */
        yield(w);
        return f.res;
    }
    for (unsigned l = 0; l < 32; l++) {
        Fiber &g = w->fib[base + l];
        if (!(m >> l & 1)) continue;
        if (g.mask != m)
            fail_here(w, fmt("warp collective with mask 0x%08x while lane %u waits in one with mask 0x%08x", m, l, g.mask));
        ballot |= (unsigned)(g.val != 0) << l;
    }
    for (unsigned l = 0; l < 32; l++) {
        Fiber &g = w->fib[base + l];
        if (!(m >> l & 1)) continue;
        unsigned s = (unsigned)g.src & 31;
        g.res = g.op == tcemu::W_SHFL ? (m >> s & 1 ? w->fib[base + s].val : g.val)
              : g.op == tcemu::W_BALLOT ? ballot
              : g.op == tcemu::W_ANY ? ballot != 0
              : g.op == tcemu::W_ALL ? ballot == m : 0;
        g.state = F_RUN;
        push(w, base + l);
    }
    w->arrived[wi] &= ~m;
    yield(w);
    return f.res;
}

static unsigned api_active() {
    Worker *w = tl_w;
    return lanes_present(w, w->cur & ~31u) & ~w->done[w->cur >> 5];
}
__attribute__((noreturn)) static void api_fail(const char *msg) { fail_here(tl_w, msg); }
const tcemu::api *simt_api() {
    static const tcemu::api a = {api_sync, api_warp, api_active, api_fail};
    return &a;
}

/* Runs one block to the end; 0, or -1 with w->err. */
static int run_block(Worker *w, const Launch &L, tcemu::uint3_ bid) {
    const unsigned *b = L.block;
    w->L = &L;
    w->bid = bid;
    w->n = b[0] * b[1] * b[2];
    w->ndone = w->nbar = w->npred = w->qh = w->qn = 0;
    memset(w->arrived, 0, sizeof w->arrived);
    memset(w->done, 0, sizeof w->done);
    w->err.clear();
    w->st = L.f->mod->state();
    w->st->bid = bid;
    w->st->bdim = {b[0], b[1], b[2]};
    w->st->gdim = {L.grid[0], L.grid[1], L.grid[2]};
    if (L.smem > w->dyn_cap) {
        free(w->dyn);
        w->dyn = (unsigned char *)aligned_alloc(256, (L.smem + 255) / 256 * 256);
        w->dyn_cap = L.smem;
    }
    /* dynamic shared memory starts as NaN bytes (-1 as integers), so reading
     * it before writing it shows */
    if (L.smem) memset(w->dyn, 0xff, L.smem);
    w->st->dyn_smem = L.smem ? w->dyn : nullptr;
    for (unsigned i = 0; i < w->n; i++) {
        Fiber &f = w->fib[i];
        f.state = F_RUN;
        f.tid = {i % b[0], i / b[0] % b[1], i / (b[0] * b[1])};
        ctx_init(&f.ctx, f.stack, w->stack_size, fiber_main);
        push(w, i);
    }
    while (w->qn && w->err.empty()) {
        w->cur = w->q[w->qh];
        w->qh = w->qh + 1 == w->n ? 0 : w->qh + 1;
        w->qn--;
        w->st->tid = w->fib[w->cur].tid;
        w->st->lane = w->cur & 31;
        ctx_swap(&w->sched, &w->fib[w->cur].ctx);
    }
    if (w->err.empty() && w->ndone < w->n) { /* nobody can run: say who waits where */
        unsigned nwarp = 0, first = 0;
        for (unsigned i = w->n; i-- > 0;)
            if (w->fib[i].state == F_WARP) nwarp++, first = i;
        w->cur = first;
        set_err(w, fmt("deadlock: %u threads wait at __syncthreads() while %u wait at warp collectives (this one with mask 0x%08x)",
                         w->nbar, nwarp, w->fib[first].mask));
    }
    return w->err.empty() ? 0 : -1;
}

/* Runs the grid's blocks in order (TC_EMU_THREADS > 1: on that many threads). */
int simt_run(const Launch &L, std::string *err) {
    uint64_t nb = (uint64_t)L.grid[0] * L.grid[1] * L.grid[2];
    unsigned nt = (unsigned)env_int("TC_EMU_THREADS", 1);
    std::atomic<uint64_t> next{0};
    std::atomic<bool> stop{false};
    std::mutex em;
    uint64_t err_block = UINT64_MAX;
    auto job = [&] {
        Worker *w = worker(), *saved = tl_w;
        tl_w = w;
        for (uint64_t i; !stop && (i = next++) < nb;) {
            tcemu::uint3_ bid = {(unsigned)(i % L.grid[0]), (unsigned)(i / L.grid[0] % L.grid[1]),
                                 (unsigned)(i / ((uint64_t)L.grid[0] * L.grid[1]))};
            if (run_block(w, L, bid)) {
                std::lock_guard<std::mutex> lk(em);
                if (i < err_block) err_block = i, *err = w->err;
                stop = true;
            }
        }
        w->L = nullptr; /* a fault past here is not the kernel's */
        tl_w = saved;
    };
    /* TC_EMU_THREADS > 1: blocks taken in turn by that many OS threads (made
     * per launch: it is a test mode; __shared__ is thread_local, so each has its own) */
    std::vector<std::thread> helpers;
    for (uint64_t k = 1; k < nt && k < nb; k++) helpers.emplace_back(job);
    job();
    for (auto &t : helpers) t.join();
    return err_block == UINT64_MAX ? 0 : -1;
}
