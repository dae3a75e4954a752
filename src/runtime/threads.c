/* Thread pool: persistent workers per context, one synchronisation per
 * parallel loop.  Between jobs a worker spins for a while before it sleeps
 * on the condition variable (and so does the caller waiting for the job to
 * finish): waking a sleeping thread costs tens of microseconds, more than a
 * small kernel takes, and back-to-back kernels are the common case.  Work
 * [0, n) is split into equal contiguous ranges, one per thread (the caller
 * takes the first), so a kernel's memory access stays sequential within
 * each thread.  A part is claimed by whoever gets to it first: the caller,
 * done with its own, runs the parts no worker has started, so a worker the
 * host has not scheduled (its core busy with other processes) delays the
 * loop by nothing, where waiting for it cost up to a scheduler slice.  A
 * part's range is fixed, so results never depend on timing. */

typedef void (*tc__range_fn)(void *arg, int64_t begin, int64_t end);

#ifndef TC_NO_THREADS
struct tc__pool {
    int nworkers;
    tc__thread *threads;
    tc__mutex mu;
    tc__cond wake, done_cv;
    uint64_t generation;       /* bumped for each job                   */
    uint64_t ticket;           /* generation << 40 | nparts << 20 | the next
                                  part to claim (atomics; else `next`)   */
    int next;
    int done;                  /* parts finished                        */
    int quit;
    int busy;                  /* a job is running: nested loops go serial */
    tc__range_fn fn;
    void *arg;
    int64_t n;
    int nparts;
};

typedef struct tc__worker_arg {
    tc__pool *pool;
    int index;                 /* 1..nworkers; the caller is part 0     */
} tc__worker_arg;

static tc__worker_arg *tc__worker_args_of(tc__pool *p) { return (tc__worker_arg *)(p->threads + p->nworkers); }

TC__FN void tc__run_part(tc__pool *p, int part) {
    int64_t b = p->n * part / p->nparts, e = p->n * (part + 1) / p->nparts;
    if (b < e) p->fn(p->arg, b, e);
}

#if defined(TCOMPILE_TESTING) && defined(TC__HAVE_ATOMICS)
/* Tests hold a worker back before it claims a part, as a host that has not
 * scheduled it does; NULL: none. */
static void (*tc__pool_worker_hook)(void) = NULL;
#define TC__POOL_WORKER_HOOK()                                                         \
    do {                                                                               \
        void (*h_)(void) = __atomic_load_n(&tc__pool_worker_hook, __ATOMIC_ACQUIRE); \
        if (h_) h_();                                                                  \
    } while (0)
#else
#define TC__POOL_WORKER_HOOK() ((void)0)
#endif

/* The next part of job `gen` nobody has started, or -1 (the job is done
 * or another has begun). */
TC__FN int tc__pool_claim(tc__pool *p, uint64_t gen) {
#ifdef TC__HAVE_ATOMICS
    for (;;) {
        uint64_t t = tc__atomic_load_u64(&p->ticket);
        uint64_t part = t & 0xFFFFF, nparts = (t >> 20) & 0xFFFFF;
        if (t >> 40 != (gen & 0xFFFFFF) || part >= nparts) return -1;
        if (tc__atomic_cas_u64(&p->ticket, t, t + 1)) return (int)part;
    }
#else
    int part = -1;
    tc__mutex_lock(&p->mu);
    if (p->generation == gen && p->next < p->nparts) part = p->next++;
    tc__mutex_unlock(&p->mu);
    return part;
#endif
}

/* Runs claimed part `part`, then counts it; the last wakes the caller. */
TC__FN void tc__pool_run_claimed(tc__pool *p, int part) {
    int last, nparts = p->nparts; /* read while the job is still ours */
    tc__run_part(p, part);
#ifdef TC__HAVE_ATOMICS
    last = tc__atomic_inc_int(&p->done) == nparts;
    if (last) {
        tc__mutex_lock(&p->mu);
        tc__cond_broadcast(&p->done_cv);
        tc__mutex_unlock(&p->mu);
    }
#else
    tc__mutex_lock(&p->mu);
    last = ++p->done == nparts;
    if (last) tc__cond_broadcast(&p->done_cv);
    tc__mutex_unlock(&p->mu);
#endif
}

#ifdef TC__HAVE_ATOMICS
#define TC__SPIN 20000
#define TC__GEN_LOAD(p) tc__atomic_load_u64(&(p)->generation)
#define TC__QUIT_LOAD(p) tc__atomic_load_int(&(p)->quit)
#else
#define TC__SPIN 0
#define TC__GEN_LOAD(p) ((p)->generation)
#define TC__QUIT_LOAD(p) ((p)->quit)
#endif

TC__FN void *tc__worker_main(void *varg) {
    tc__worker_arg *wa = (tc__worker_arg *)varg;
    tc__pool *p = wa->pool;
    uint64_t seen = 0;
    (void)wa->index;
    for (;;) {
        int spins = 0, part;
#ifdef TC__HAVE_ATOMICS
        while (TC__GEN_LOAD(p) == seen && !TC__QUIT_LOAD(p) && spins < TC__SPIN) {
            tc__cpu_relax();
            spins++;
        }
#endif
        tc__mutex_lock(&p->mu);
        while (!p->quit && p->generation == seen) tc__cond_wait(&p->wake, &p->mu);
        if (p->quit) {
            tc__mutex_unlock(&p->mu);
            return NULL;
        }
        seen = p->generation;
        tc__mutex_unlock(&p->mu);
        TC__POOL_WORKER_HOOK();
        while ((part = tc__pool_claim(p, seen)) >= 0) tc__pool_run_claimed(p, part);
    }
}

TC__FN void tc__pool_destroy(tc__pool *p) {
    int i;
    if (!p) return;
    tc__mutex_lock(&p->mu);
#ifdef TC__HAVE_ATOMICS
    tc__atomic_store_int(&p->quit, 1);
#else
    p->quit = 1;
#endif
    tc__cond_broadcast(&p->wake);
    tc__mutex_unlock(&p->mu);
    for (i = 0; i < p->nworkers; i++) tc__thread_join(&p->threads[i]);
    tc__cond_destroy(&p->wake);
    tc__cond_destroy(&p->done_cv);
    tc__mutex_destroy(&p->mu);
    TC_FREE(p->threads);
    TC_FREE(p);
}

/* nthreads counts the caller; nthreads <= 1 means no pool. */
TC__FN tc__pool *tc__pool_create(int nthreads) {
    tc__pool *p;
    int i;
    if (nthreads <= 1) return NULL;
    p = (tc__pool *)TC_MALLOC(sizeof *p);
    if (!p) return NULL;
    memset(p, 0, sizeof *p);
    p->nworkers = nthreads - 1;
    p->threads = (tc__thread *)TC_MALLOC((size_t)p->nworkers * (sizeof(tc__thread) + sizeof(tc__worker_arg)) + 16);
    if (!p->threads) {
        TC_FREE(p);
        return NULL;
    }
    tc__mutex_init(&p->mu);
    tc__cond_init(&p->wake);
    tc__cond_init(&p->done_cv);
    for (i = 0; i < p->nworkers; i++) {
        tc__worker_arg *wa = tc__worker_args_of(p) + i;
        wa->pool = p;
        wa->index = i + 1;
        if (tc__thread_start(&p->threads[i], tc__worker_main, wa) != 0) {
            p->nworkers = i; /* run with the threads we got */
            break;
        }
    }
    if (p->nworkers == 0) {
        tc__pool_destroy(p);
        return NULL;
    }
    return p;
}
#else
struct tc__pool {
    int unused;
};
TC__FN void tc__pool_destroy(tc__pool *p) { (void)p; }
TC__FN tc__pool *tc__pool_create(int nthreads) {
    (void)nthreads;
    return NULL;
}
#endif

/* The number of equal contiguous parts tc__parallel_for(ctx, n, work, ..)
 * splits [0, n) into (1: it runs on the caller), so that a caller can size
 * its tasks to split evenly. */
TC__FN int tc__parallel_parts(const tc_ctx *ctx, int64_t n, int64_t work) {
#ifndef TC_NO_THREADS
    const tc__pool *p = ctx ? ctx->pool : NULL;
    if (p && !p->busy && work >= TC_PARALLEL_MIN_WORK && n > 1) {
        /* about two threshold-halves of work per part (any threshold >= 0) */
        int64_t half = TC_PARALLEL_MIN_WORK / 2 > 0 ? TC_PARALLEL_MIN_WORK / 2 : 1;
        int64_t by_work = work / half;
        int nparts = p->nworkers + 1 < 0xFFFFF ? p->nworkers + 1 : 0xFFFFF; /* tc__pool's ticket */
        if (ctx->thread_cap > 0 && nparts > ctx->thread_cap) nparts = ctx->thread_cap;
        if ((int64_t)nparts > n) nparts = (int)n;
        if ((int64_t)nparts > by_work) nparts = (int)(by_work < 1 ? 1 : by_work);
        return nparts;
    }
#else
    (void)ctx;
    (void)n;
    (void)work;
#endif
    return 1;
}

/* Runs fn over [0, n) split across the context's threads when `work` (an
 * estimate of elements touched) is worth it; otherwise on the caller. */
TC__FN void tc__parallel_for(tc_ctx *ctx, int64_t n, int64_t work, tc__range_fn fn, void *arg) {
    if (n <= 0) return;
#ifndef TC_NO_THREADS
    {
        tc__pool *p = ctx ? ctx->pool : NULL;
        int nparts = tc__parallel_parts(ctx, n, work);
        if (p && nparts > 1) {
            uint64_t gen;
            int part;
            tc__mutex_lock(&p->mu);
            p->fn = fn;
            p->arg = arg;
            p->n = n;
            p->nparts = nparts;
            p->busy = 1;
            gen = p->generation + 1;
#ifdef TC__HAVE_ATOMICS
            tc__atomic_store_int(&p->done, 0);
            /* part 0 is the caller's */
            tc__atomic_store_u64(&p->ticket, (gen & 0xFFFFFF) << 40 | (uint64_t)nparts << 20 | 1);
            tc__atomic_store_u64(&p->generation, gen); /* publishes the job */
#else
            p->done = 0;
            p->next = 1;
            p->generation = gen;
#endif
            tc__cond_broadcast(&p->wake);
            tc__mutex_unlock(&p->mu);
            tc__pool_run_claimed(p, 0);
            /* the parts no worker has started */
            while ((part = tc__pool_claim(p, gen)) >= 0) tc__pool_run_claimed(p, part);
#ifdef TC__HAVE_ATOMICS
            {
                int spins = 0;
                while (tc__atomic_load_int(&p->done) < nparts && spins < TC__SPIN) {
                    tc__cpu_relax();
                    spins++;
                }
            }
#endif
            tc__mutex_lock(&p->mu);
#ifdef TC__HAVE_ATOMICS
            while (tc__atomic_load_int(&p->done) < nparts) tc__cond_wait(&p->done_cv, &p->mu);
#else
            while (p->done < nparts) tc__cond_wait(&p->done_cv, &p->mu);
#endif
            p->busy = 0;
            tc__mutex_unlock(&p->mu);
            return;
        }
    }
#else
    (void)ctx;
    (void)work;
#endif
    fn(arg, 0, n);
}
