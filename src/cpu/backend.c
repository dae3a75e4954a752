/* The CPU backend: the plan's device table (compiler/plan.c's tc__backend)
 * for the host.  Fused kernels run on the built-in executor (vexec.c) with
 * one workspace per thread; an op runs its op-table kernel, a contraction
 * with its fused epilogue kernel run by the executor on each finished
 * output tile; the arena comes from the context's block cache. */

TC__FN size_t tc__cpu_kernel_ws_bytes(const tc__kernel *k) {
#ifdef TC__HAVE_VEXEC
    return tc__kernel_ws_bytes(k);
#else
    (void)k;
    return 0;
#endif
}

TC__FN tc_result tc__cpu_run_kernel(tc__program *p, tc_ctx *ctx, tc__launch *l) {
#ifdef TC__HAVE_VEXEC
    if (ctx->num_threads > p->ws_slots) {
        /* the context gained threads since the build: one workspace each */
        void *raw = NULL;
        char *ws = (char *)tc__alloc_aligned(p->ws_bytes * (size_t)ctx->num_threads, &raw);
        if (!ws) return tc__msg(&l->call, TC_ERR_OOM, "out of memory for the kernel workspace");
        TC_FREE(p->ws_raw);
        p->ws_raw = raw;
        p->ws = ws;
        p->ws_slots = ctx->num_threads;
    }
    tc__kernel_run(ctx, &p->fu.k[l->kernel], p->ref, p->ws, p->ws_bytes, p->ws_slots, l->tile);
    return TC_OK;
#else
    (void)p;
    (void)ctx;
    /* unreachable: without the executor the plan fuses nothing (the
     * context's level is none), so no launch has a kernel */
    return tc__msg(&l->call, TC_ERR_UNSUPPORTED, "fused kernels need the built-in executor (gcc or clang)");
#endif
}

TC__FN tc_result tc__cpu_run_op(tc__program *p, tc_ctx *ctx, tc__launch *l, tc_tensor *out) {
#ifdef TC__HAVE_VEXEC
    if (l->epi >= 0) {
        tc__krun kr;
        tc__epilogue e;
        tc_result r;
        tc__krun_prepare(&kr, ctx, &p->fu.k[l->epi], p->ref);
        e.fn = tc__epilogue_tile;
        e.arg = &kr;
        l->call.epi = &e;
        r = tc__optable[l->call.op].run(&l->call, out);
        l->call.epi = NULL;
        return r;
    }
#else
    (void)p;
    (void)ctx;
#endif
    return tc__optable[l->call.op].run(&l->call, out);
}

static const tc__backend tc__cpu_backend = {tc__cpu_kernel_ws_bytes, tc__cpu_run_kernel, tc__cpu_run_op,
                                            tc__block_get, tc__block_put, TC_CPU, NULL, NULL};
