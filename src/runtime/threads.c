/* Thread pool: persistent workers per context, one synchronisation per
 * parallel loop.  Between jobs a worker spins for a while before it sleeps
 * on the condition variable (and so does the caller waiting for the job to
 * finish): waking a sleeping thread costs tens of microseconds, more than a
 * small kernel takes, and back-to-back kernels are the common case.  Work [0, n) is split into equal contiguous ranges, one per
 * thread (the caller takes the first), so a kernel's memory access stays
 * sequential within each thread and results never depend on timing. */

typedef void (*tc__range_fn)(void *arg, int64_t begin, int64_t end);

#ifndef TC_NO_THREADS
struct tc__pool {
    int nworkers;
    tc__thread *threads;
    tc__mutex mu;
    tc__cond wake, done;
    uint64_t generation;       /* bumped for each job                   */
    int pending;               /* workers still running the job         */
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
    for (;;) {
        int spins = 0, last;
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
        if (wa->index < p->nparts) tc__run_part(p, wa->index);
#ifdef TC__HAVE_ATOMICS
        last = tc__atomic_dec_int(&p->pending) == 0;
#else
        tc__mutex_lock(&p->mu);
        last = --p->pending == 0;
        tc__mutex_unlock(&p->mu);
#endif
        if (last) {
            tc__mutex_lock(&p->mu);
            tc__cond_broadcast(&p->done);
            tc__mutex_unlock(&p->mu);
        }
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
    tc__cond_destroy(&p->done);
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
    tc__cond_init(&p->done);
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
        int nparts = p->nworkers + 1;
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
            tc__mutex_lock(&p->mu);
            p->fn = fn;
            p->arg = arg;
            p->n = n;
            p->nparts = nparts;
#ifdef TC__HAVE_ATOMICS
            tc__atomic_store_int(&p->pending, p->nworkers);
#else
            p->pending = p->nworkers;
#endif
            p->busy = 1;
#ifdef TC__HAVE_ATOMICS
            tc__atomic_store_u64(&p->generation, p->generation + 1); /* publishes the job */
#else
            p->generation++;
#endif
            tc__cond_broadcast(&p->wake);
            tc__mutex_unlock(&p->mu);
            tc__run_part(p, 0);
#ifdef TC__HAVE_ATOMICS
            {
                int spins = 0;
                while (tc__atomic_load_int(&p->pending) > 0 && spins < TC__SPIN) {
                    tc__cpu_relax();
                    spins++;
                }
            }
#endif
            tc__mutex_lock(&p->mu);
#ifdef TC__HAVE_ATOMICS
            while (tc__atomic_load_int(&p->pending) > 0) tc__cond_wait(&p->done, &p->mu);
#else
            while (p->pending > 0) tc__cond_wait(&p->done, &p->mu);
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
