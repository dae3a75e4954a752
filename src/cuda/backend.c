/* The CUDA backend: the plan's device table (compiler/plan.c's tc__backend)
 * for the GPU.  A program's fused kernels are printed as one CUDA C
 * program (cuda/codegen.c), compiled by NVRTC for the device's exact
 * architecture (CUBIN; PTX for the newest NVRTC knows when the device is
 * newer, which the driver compiles), cached on disk under a hash of the
 * source, the options, NVRTC's version and the device, and loaded once per
 * program on its first run.  A launch packs its kernel's parameter block
 * (the accesses' addresses and strides, read from the program's headers
 * at the launch, so views of moving inputs work) and launches on the
 * context's stream.  The arena and outputs are device memory from the
 * context's block cache (cuda/memory.c). */

#ifndef TC_NO_CUDA

#define TC__CU_SMEM_ROW (40u * 1024u)

typedef struct tc__cuda_prog {
    tc__CUmodule mod;
    tc__CUfunction *fn;        /* one per fused kernel                      */
    int nk;
    tc__kernel *xk;            /* per launch: a pointwise op the fuser left
                                  alone (a cast to a half float, a copy of
                                  non-f32 data) as a kernel of its own;
                                  ncode 0: none                             */
    tc__CUfunction *xfn;
    int nx;
    int from_disk;             /* the binary came from the on-disk cache    */
    tc__CUdeviceptr *ws;       /* per launch: its row kernel's workspace,
                                  kept with the program (a captured graph
                                  holds its address)                        */
    size_t *ws_cap;
    /* reduce-overhead: the launches captured as one CUDA graph */
    tc__CUgraphExec exec;
    int runs;                  /* runs so far (the first warms up)          */
    int graph_failed;          /* capture failed: launches run one by one   */
    char graph_why[160];
    tc__storage *st_in;        /* per node: an input's static copy          */
    int64_t *st_lo;            /* its span's first element                  */
} tc__cuda_prog;

/* Launch l's pointwise op as a one-op kernel in *k: a load per input
 * (broadcast dims read at index 0), the op, a store.  0 when it has none:
 * not pointwise, or an integer result the float registers would round
 * (i32 arithmetic: its CUDA kernels come later). */
TC__FN int tc__cuda_op_kernel(const tc__program *p, const tc__launch *l, tc__kernel *k) {
    const tc__node *nd = &p->g->nodes[l->node];
    const tc_tensor *out = &p->hdr[l->node];
    const tc__call *c = &l->call;
    int j, d, copy = c->op == TC__OP_CLONE || (c->op == TC__OP_CAST && nd->nin == 1 && p->ref[nd->in[0]]->dtype == out->dtype);
    memset(k, 0, sizeof *k);
    if (l->kernel >= 0 || l->is_view || tc__optable[c->op].cls != TC__CLASS_POINTWISE || nd->nin < 1 || nd->nin > 3)
        return 0;
    if (out->dtype == TC_I32 && !copy && c->op != TC__OP_CAST) return 0;
    if (!copy && tc__cu_int_expr(c->op)) { /* integer operands of an op with an integer form: exact, in tco<launch> */
        int ints = 1;
        for (j = 0; j < nd->nin; j++) ints &= nd->in[j] >= 0 && p->ref[nd->in[j]]->dtype == TC_I32;
        if (ints) return 0;
    }
    for (j = 0; j < nd->nin; j++)
        if (nd->in[j] < 0 || p->ref[nd->in[j]]->ndim > out->ndim) return 0;
    k->ndim = k->row0 = out->ndim;
    memcpy(k->shape, out->shape, sizeof k->shape);
    /* the inputs' accesses and the output's (tc__kernel_free frees them) */
    if (!(k->acc = (tc__kaccess *)TC_MALLOC(sizeof(tc__kaccess) * (size_t)(nd->nin + 1)))) return -1;
    memset(k->acc, 0, sizeof(tc__kaccess) * (size_t)(nd->nin + 1));
    for (j = 0; j < nd->nin; j++) {
        const tc_tensor *x = p->ref[nd->in[j]];
        tc__kaccess *a = &k->acc[k->nacc++];
        int lead = out->ndim - x->ndim;
        a->node = nd->in[j];
        a->ndim = x->ndim;
        for (d = 0; d < x->ndim; d++) {
            a->kdim[d] = (int8_t)(x->shape[d] == 1 && out->shape[lead + d] != 1 ? -1 : lead + d);
            a->coef[d] = 1;
        }
        if (tc__kernel_emit(k, TC__V_LOAD, j, j, -1, -1, 0, 0) != 0) return -1;
    }
    k->acc[k->nacc].node = l->node;
    k->acc[k->nacc].store = 1;
    k->acc[k->nacc].ndim = out->ndim;
    for (d = 0; d < out->ndim; d++) {
        k->acc[k->nacc].kdim[d] = (int8_t)d;
        k->acc[k->nacc].coef[d] = 1;
    }
    k->nacc++;
    if (copy) { /* the bits as they are (tc__cuda_emit_kernel's copy form) */
        if (tc__kernel_emit(k, TC__V_STORE, -1, k->nacc - 1, 0, -1, 0, 0) != 0) return -1;
        k->nreg = 1;
    } else {
        if (tc__kernel_emit(k, c->op, nd->nin, 0, nd->nin > 1 ? 1 : -1, nd->nin > 2 ? 2 : -1, (float)c->a.f[0],
                            (float)c->a.f[1]) != 0 ||
            tc__kernel_emit(k, TC__V_STORE, -1, k->nacc - 1, nd->nin, -1, 0, 0) != 0)
            return -1;
        k->nreg = nd->nin + 1;
    }
    k->nstage = 1;
    k->stage[0].end = k->ncode;
    k->nodes = 1;
    k->root = l->node;
    return 1;
}

/* The CUDA C of p's fused kernels (tck0, tck1, ...), NUL-terminated, to
 * TC_FREE; NULL out of memory. */
/* Whether launch l is a contraction the GEMM kernel runs (tcg<launch>). */
TC__FN int tc__cuda_is_gemm(const tc__launch *l) {
    return l->kernel < 0 && !l->is_view && (l->call.op == TC__OP_MATMUL || l->call.op == TC__OP_LINEAR);
}

#ifdef TCOMPILE_TESTING
/* Tests pick the compute capability the GEMM templates are chosen for
 * (tc_fn_cuda_source without a device); 0: the device's. */
static int tc__cu_test_sm = 0;
#else
#define tc__cu_test_sm 0
#endif

/* Launch l's GEMM template: 0 the SIMT one, else the tensor-core one for
 * f16 (1) or bf16 (2) inputs, or f32 ones as TF32 (3, when the context
 * allows it), on compute capability 8.0 and up (mma.sync, ldmatrix and
 * cp.async need it). */
TC__FN int tc__cuda_gemm_kind(const tc__program *p, const tc__launch *l) {
    int sm = tc__cu_test_sm ? tc__cu_test_sm : tc__cu.cc_major * 10 + tc__cu.cc_minor;
    tc_dtype da = l->call.ins[0]->dtype, db = l->call.ins[1]->dtype;
    if (sm < 80 || da != db) return 0;
    return da == TC_F16 ? 1 : da == TC_BF16 ? 2 : da == TC_F32 && p->ctx && p->ctx->opts.allow_tf32 ? 3 : 0;
}

/* Whether the tensor-core GEMM keeps B as [n][k] in shared memory (its k
 * contiguous, as a linear's weight), else [k][n]; either is right for any
 * strides (the kernel copies element by element where they do not fit). */
TC__FN int tc__cuda_gemm_bt(const tc__launch *l) {
    const tc_tensor *b = l->call.ins[1];
    if (l->call.op == TC__OP_LINEAR) return b->strides[1] == 1;
    return b->ndim < 2 || (b->strides[b->ndim - 2] == 1 && b->strides[b->ndim - 1] != 1);
}

/* Whether launch l runs a kernel of its own op (tco<launch>): none of the
 * other kinds, and one cuda/codegen.c knows. */
TC__FN int tc__cuda_is_op(const tc__program *p, const tc__launch *l, const tc__kernel *xk) {
    tc__text probe;
    if (l->kernel >= 0 || l->is_view || tc__cuda_is_gemm(l) || xk[l - p->launch].ncode > 0) return 0;
    memset(&probe, 0, sizeof probe); /* measures only */
    return tc__cuda_emit_op(&probe, "probe", &l->call, &p->hdr[l->node]) == 1;
}

/* p's CUDA C: its fused kernels (tck<k>), its launches' own pointwise
 * kernels xk[0..nlaunch) (tcx<launch>, ncode 0: none) and GEMMs
 * (tcg<launch>). */
TC__FN char *tc__cuda_source(const tc__program *p, const tc__kernel *xk) {
    const tc__fusion *fu = &p->fu;
    tc_tensor *const *ref = p->ref;
    int nx = p->nlaunch;
    tc__text sb;
    int pass, k, a;
    memset(&sb, 0, sizeof sb);
    for (pass = 0; pass < 2; pass++) { /* measure, then print */
        int mma = 0;
        tc__cuda_emit_prelude(&sb);
        for (k = 0; k < p->nlaunch; k++) {
            const tc__launch *l = &p->launch[k];
            char name[32];
            int kind;
            if (!tc__cuda_is_gemm(l)) continue;
            if ((kind = tc__cuda_gemm_kind(p, l)) != 0 && !mma++) tc__cuda_emit_mma_prelude(&sb);
            tc__fmt(name, sizeof name, "tcg%d", k);
            tc__cuda_emit_gemm(&sb, name, l->call.ins[0]->dtype, l->call.ins[1]->dtype, p->hdr[l->node].dtype,
                               l->call.op == TC__OP_LINEAR && l->call.ins[2],
                               l->call.op == TC__OP_LINEAR && l->call.ins[2] ? l->call.ins[2]->dtype : TC_F32, kind,
                               tc__cuda_gemm_bt(l));
        }
        for (k = 0; k < p->nlaunch; k++) {
            const tc__launch *l = &p->launch[k];
            char name[32];
            if (!tc__cuda_is_op(p, l, xk)) continue;
            tc__fmt(name, sizeof name, "tco%d", k);
            tc__cuda_emit_op(&sb, name, &l->call, &p->hdr[l->node]);
        }
        for (k = 0; k < fu->nk + nx; k++) {
            const tc__kernel *kk = k < fu->nk ? &fu->k[k] : &xk[k - fu->nk];
            tc_dtype dt[TC__VM_MAXACC];
            char name[32];
            if (kk->ncode == 0) continue;
            for (a = 0; a < kk->nacc; a++) dt[a] = ref[kk->acc[a].node]->dtype;
            tc__fmt(name, sizeof name, k < fu->nk ? "tck%d" : "tcx%d", k < fu->nk ? k : k - fu->nk);
            tc__cuda_emit_kernel(&sb, kk, dt, name);
        }
        if (pass == 0) {
            sb.cap = sb.n + 1;
            sb.n = 0;
            if (!(sb.p = (char *)TC_MALLOC(sb.cap))) return NULL;
        }
    }
    return sb.p;
}

/* Launches' own kernels (tc__cuda_op_kernel), one slot per launch, to
 * tc__cuda_xk_free; NULL out of memory. */
TC__FN tc__kernel *tc__cuda_xk_make(const tc__program *p) {
    tc__kernel *xk = (tc__kernel *)tc__malloc(sizeof(tc__kernel) * (size_t)(p->nlaunch > 0 ? p->nlaunch : 1));
    int k;
    if (!xk) return NULL;
    memset(xk, 0, sizeof(tc__kernel) * (size_t)(p->nlaunch > 0 ? p->nlaunch : 1));
    for (k = 0; k < p->nlaunch; k++)
        if (tc__cuda_op_kernel(p, &p->launch[k], &xk[k]) < 0) {
            for (; k >= 0; k--) tc__kernel_free(&xk[k]);
            TC_FREE(xk);
            return NULL;
        }
    return xk;
}

TC__FN void tc__cuda_xk_free(tc__kernel *xk, int n) {
    int i;
    for (i = 0; xk && i < n; i++) tc__kernel_free(&xk[i]);
    TC_FREE(xk);
}

/* The CUDA C the backend compiles for p (to TC_FREE; NULL out of memory). */
TC__FN char *tc__cuda_program_source(const tc__program *p) {
    tc__kernel *xk = tc__cuda_xk_make(p);
    char *src = xk ? tc__cuda_source(p, xk) : NULL;
    tc__cuda_xk_free(xk, p->nlaunch);
    return src;
}

/* NVRTC's options for the device: CUBIN for its architecture when NVRTC
 * knows it, else PTX for the newest it knows. */
TC__FN int tc__cuda_arch(int *cubin) {
    int sm = tc__cu.cc_major * 10 + tc__cu.cc_minor, i, best = 0;
    for (i = 0; i < tc__cu.narchs; i++)
        if (tc__cu.archs[i] == sm) { /* NVRTC emits CUBIN for it */
            *cubin = 1;
            return sm;
        } else if (tc__cu.archs[i] < sm && tc__cu.archs[i] > best) best = tc__cu.archs[i];
    /* PTX for the newest architecture NVRTC knows below the device, which the
     * driver compiles; 0 (NVRTC knows none that old) fails with NVRTC's reason */
    *cubin = 0;
    return best ? best : tc__cu.arch_max;
}

/* Compiles src with NVRTC for sm_<arch> (CUBIN when cubin, else PTX for
 * compute_<arch>): the binary in *bin (to TC_FREE), or the log in err;
 * with one more option (NULL: none), after which, on success, err holds
 * NVRTC's log (ptxas's report with --ptxas-options=-v). */
TC__FN tc_result tc__nvrtc_compile_opt(const char *src, int arch, int cubin, const char *extra, char **bin, size_t *nbin,
                                       char *err, size_t errcap) {
    tc__nvrtcProgram prog = NULL;
    char opt_arch[48];
    const char *opts[4];
    int nopt = 0;
    size_t n = 0, logn = 0;
    tc__nvrtcResult r;
    *bin = NULL;
    if (errcap) err[0] = 0;
    tc__fmt(opt_arch, sizeof opt_arch, "--gpu-architecture=%s_%d", cubin ? "sm" : "compute", arch);
    opts[nopt++] = opt_arch;
    opts[nopt++] = "--std=c++17";
    if (extra) opts[nopt++] = extra;
    if ((r = tc__cu.nv.CreateProgram(&prog, src, "tcompile.cu", 0, NULL, NULL)) != TC__NVRTC_SUCCESS) {
        tc__fmt(err, errcap, "nvrtcCreateProgram: %s", tc__cu.nv.GetErrorString(r));
        return r == TC__NVRTC_ERROR_OUT_OF_MEMORY ? TC_ERR_OOM : TC_ERR_DEVICE;
    }
    r = tc__cu.nv.CompileProgram(prog, nopt, opts);
    if (r != TC__NVRTC_SUCCESS) {
        char *log = NULL;
        if (tc__cu.nv.GetProgramLogSize(prog, &logn) == TC__NVRTC_SUCCESS && logn > 0 && (log = (char *)TC_MALLOC(logn)))
            tc__cu.nv.GetProgramLog(prog, log);
        tc__fmt(err, errcap, "NVRTC (%s) failed: %s", opt_arch, log ? log : tc__cu.nv.GetErrorString(r));
        TC_FREE(log);
        tc__cu.nv.DestroyProgram(&prog);
        return TC_ERR_DEVICE;
    }
    if (extra && tc__cu.nv.GetProgramLogSize(prog, &logn) == TC__NVRTC_SUCCESS && logn > 0 && logn <= errcap)
        tc__cu.nv.GetProgramLog(prog, err);
    r = cubin ? tc__cu.nv.GetCUBINSize(prog, &n) : tc__cu.nv.GetPTXSize(prog, &n);
    if (r == TC__NVRTC_SUCCESS && !(*bin = (char *)TC_MALLOC(n ? n : 1))) r = TC__NVRTC_ERROR_OUT_OF_MEMORY;
    if (r == TC__NVRTC_SUCCESS) r = cubin ? tc__cu.nv.GetCUBIN(prog, *bin) : tc__cu.nv.GetPTX(prog, *bin);
    tc__cu.nv.DestroyProgram(&prog);
    if (r != TC__NVRTC_SUCCESS) {
        TC_FREE(*bin);
        *bin = NULL;
        tc__fmt(err, errcap, "NVRTC: reading the binary: %s", tc__cu.nv.GetErrorString(r));
        return r == TC__NVRTC_ERROR_OUT_OF_MEMORY ? TC_ERR_OOM : TC_ERR_DEVICE;
    }
    *nbin = n;
    return TC_OK;
}

TC__FN tc_result tc__nvrtc_compile(const char *src, int arch, int cubin, char **bin, size_t *nbin, char *err,
                                   size_t errcap) {
    return tc__nvrtc_compile_opt(src, arch, cubin, NULL, bin, nbin, err, errcap);
}

/* The on-disk cache's file for a source: its hash with everything else
 * the binary depends on.  0 when there is no cache directory. */
TC__FN int tc__cuda_cache_path(const char *src, int arch, int cubin, char *path, size_t cap) {
    char buf[512], key[160];
    const char *dir = tc__tune_dir(NULL, buf, sizeof buf);
    uint64_t h;
    if (!dir || strlen(dir) > TC__TUNE_DIR_MAX) return 0;
    tc__fmt(key, sizeof key, "|%s_%d|nvrtc %d.%d|driver %d|%s|v1", cubin ? "sm" : "compute", arch, tc__cu.nvrtc_major,
            tc__cu.nvrtc_minor, tc__cu.driver_version, tc__cu.name);
    h = tc__fnv1a(src) ^ (tc__fnv1a(key) * 1099511628211ull);
    tc__fmt(path, cap, "%s/cuda-%016llx.%s", dir, (unsigned long long)h, cubin ? "cubin" : "ptx");
    return 1;
}

/* The binary at path (to TC_FREE), or NULL. */
TC__FN char *tc__cuda_cache_read(const char *path, size_t *n) {
    FILE *fp = fopen(path, "rb");
    char *b = NULL;
    long len;
    if (!fp) return NULL;
    if (fseek(fp, 0, SEEK_END) == 0 && (len = ftell(fp)) > 0 && len < (1L << 30) && fseek(fp, 0, SEEK_SET) == 0 &&
        (b = (char *)TC_MALLOC((size_t)len + 1)) != NULL) {
        if (fread(b, 1, (size_t)len, fp) != (size_t)len) {
            TC_FREE(b);
            b = NULL;
        } else {
            b[len] = 0; /* PTX is loaded as a string */
            *n = (size_t)len;
        }
    }
    fclose(fp);
    return b;
}

/* Stores a binary for the next process (a failure only costs it a compile). */
TC__FN void tc__cuda_cache_write(const char *path, const char *bin, size_t n) {
    static int counter;
    char tmp[1200], dir[1100];
    char *slash;
    FILE *fp;
    int ok;
    tc__fmt(dir, sizeof dir, "%s", path);
    if ((slash = strrchr(dir, '/')) != NULL) *slash = 0;
    if (tc__mkdirs(dir) != 0) return;
    tc__fmt(tmp, sizeof tmp, "%s.%lu.%u.tmp", path, tc__pid(), tc__next_ticket(&counter));
    if (!(fp = fopen(tmp, "wb"))) return;
    ok = fwrite(bin, 1, n, fp) == n;
    ok = fclose(fp) == 0 && ok;
    if (!ok || tc__file_replace(tmp, path) != 0) remove(tmp);
}

TC__FN void tc__cuda_prog_free(tc__cuda_prog *cp) {
    if (!cp) return;
    if (cp->exec) tc__cu.cu.GraphExecDestroy(cp->exec);
    if (cp->mod) tc__cu.cu.ModuleUnload(cp->mod); /* the caller synchronised: no kernel of it is queued */
    tc__cuda_xk_free(cp->xk, cp->nx);
    TC_FREE(cp->ws);
    TC_FREE(cp->ws_cap);
    TC_FREE(cp->st_in);
    TC_FREE(cp->st_lo);
    TC_FREE(cp->xfn);
    TC_FREE(cp->fn);
    TC_FREE(cp);
}

TC__FN void tc__cuda_program_free(tc__program *p) {
    tc__cuda_prog *cp = (tc__cuda_prog *)p->dev;
    int i;
    if (cp) {
        tc__cu.cu.CtxSetCurrent(tc__cu.pctx);
        tc__cu.cu.StreamSynchronize(p->ctx->cuda->stream); /* its kernels may still be queued */
        for (i = 0; cp->ws && i < cp->nx; i++) tc__cuda_free(p->ctx, cp->ws[i], cp->ws_cap[i]);
        for (i = 0; cp->st_in && i < p->g->n; i++)
            if (cp->st_in[i].data) tc__cuda_free(p->ctx, (tc__CUdeviceptr)(uintptr_t)cp->st_in[i].data, cp->st_in[i].cap);
    }
    tc__cuda_prog_free(cp);
    p->dev = NULL;
}

/* Builds and loads p's kernels (the first run): from the disk cache when
 * the same source was compiled before for this device. */
TC__FN tc_result tc__cuda_prog_build(tc__program *p, tc_ctx *ctx, tc__launch *l) {
    tc__cuda_prog *cp;
    char *src, *bin = NULL, path[1100] = "", err[TC__MSG_CAP];
    size_t nbin = 0;
    int cubin, arch = tc__cuda_arch(&cubin), k, cached = 0;
    tc__CUresult cr;
    tc_result r;
    if (!tc__cuda_ctx_get(ctx, "a compiled kernel")) return tc__msg(&l->call, TC_ERR_DEVICE, "%s", ctx->first_err);
    cp = (tc__cuda_prog *)TC_MALLOC(sizeof *cp);
    if (cp) memset(cp, 0, sizeof *cp);
    src = NULL;
    if (!cp || !(cp->fn = (tc__CUfunction *)tc__malloc(sizeof(tc__CUfunction) * (size_t)(p->fu.nk + 1))) ||
        !(cp->xfn = (tc__CUfunction *)tc__malloc(sizeof(tc__CUfunction) * (size_t)(p->nlaunch + 1))) ||
        !(cp->xk = tc__cuda_xk_make(p)) || (cp->nx = p->nlaunch, !(src = tc__cuda_source(p, cp->xk)))) {
        tc__cuda_prog_free(cp);
        return tc__msg(&l->call, TC_ERR_OOM, "out of memory generating CUDA code");
    }
    cp->nk = p->fu.nk;
    memset(cp->xfn, 0, sizeof(tc__CUfunction) * (size_t)(p->nlaunch + 1));
    if (!(cp->ws = (tc__CUdeviceptr *)tc__malloc(sizeof(tc__CUdeviceptr) * (size_t)(p->nlaunch + 1))) ||
        !(cp->ws_cap = (size_t *)tc__malloc(sizeof(size_t) * (size_t)(p->nlaunch + 1)))) {
        TC_FREE(src);
        tc__cuda_prog_free(cp);
        return tc__msg(&l->call, TC_ERR_OOM, "out of memory generating CUDA code");
    }
    memset(cp->ws, 0, sizeof(tc__CUdeviceptr) * (size_t)(p->nlaunch + 1));
    memset(cp->ws_cap, 0, sizeof(size_t) * (size_t)(p->nlaunch + 1));
    if (tc__cuda_cache_path(src, arch, cubin, path, sizeof path) && (bin = tc__cuda_cache_read(path, &nbin)) != NULL)
        cached = 1;
    r = TC_OK;
    if (!bin && (r = tc__nvrtc_compile(src, arch, cubin, &bin, &nbin, err, sizeof err)) != TC_OK) {
        tc__log(ctx, TC_LOG_DEBUG, "the CUDA program that failed:\n%s", src);
        TC_FREE(src);
        tc__cuda_prog_free(cp);
        return tc__msg(&l->call, r, "%s", err);
    }
    cr = tc__cu.cu.ModuleLoadData(&cp->mod, bin);
    if (cr != TC__CUDA_SUCCESS && cached) { /* a stale or damaged cache file: compile afresh */
        TC_FREE(bin);
        bin = NULL;
        cached = 0;
        if ((r = tc__nvrtc_compile(src, arch, cubin, &bin, &nbin, err, sizeof err)) == TC_OK)
            cr = tc__cu.cu.ModuleLoadData(&cp->mod, bin);
    }
    if (r == TC_OK && cr == TC__CUDA_SUCCESS && !cached && path[0]) tc__cuda_cache_write(path, bin, nbin);
    TC_FREE(bin);
    TC_FREE(src);
    if (r != TC_OK || cr != TC__CUDA_SUCCESS) {
        tc__cuda_prog_free(cp);
        if (r != TC_OK) return tc__msg(&l->call, r, "%s", err);
        return tc__msg(&l->call, tc__cu_result(cr), "cuModuleLoadData: %s", tc__cu_errname(cr));
    }
    for (k = 0; k < cp->nk + cp->nx; k++) {
        char name[32];
        int gemm = k >= cp->nk && tc__cuda_is_gemm(&p->launch[k - cp->nk]);
        int op = k >= cp->nk && tc__cuda_is_op(p, &p->launch[k - cp->nk], cp->xk);
        if (k >= cp->nk && cp->xk[k - cp->nk].ncode == 0 && !gemm && !op) continue;
        tc__fmt(name, sizeof name, k < cp->nk ? "tck%d" : gemm ? "tcg%d" : op ? "tco%d" : "tcx%d", k < cp->nk ? k : k - cp->nk);
        if ((cr = tc__cu.cu.ModuleGetFunction(k < cp->nk ? &cp->fn[k] : &cp->xfn[k - cp->nk], cp->mod, name)) !=
            TC__CUDA_SUCCESS) {
            tc__cuda_prog_free(cp);
            return tc__msg(&l->call, TC_ERR_DEVICE, "cuModuleGetFunction(%s): %s", name, tc__cu_errname(cr));
        }
    }
    cp->from_disk = cached;
    p->dev = cp;
    return TC_OK;
}

/* Kernel k's parameter block at its launch (the struct tc__cuda_emit_kernel
 * prints): addresses and strides from the headers, as tc__krun_prepare
 * reads them, the domain's shape, the locals' workspace. */
TC__FN void tc__cuda_params(const tc__kernel *k, tc_tensor *const *ref, tc__CUdeviceptr ws, int64_t *pb) {
    int nd = k->ndim > 0 ? k->ndim : 1, a, d;
    int64_t *st = pb + k->nacc, *sh = st + k->nacc * nd;
    for (a = 0; a < k->nacc; a++) {
        const tc__kaccess *ac = &k->acc[a];
        const tc_tensor *h = ref[ac->node];
        int64_t off = h->offset;
        for (d = 0; d < nd; d++) st[a * nd + d] = 0;
        for (d = 0; d < ac->ndim; d++) {
            if (ac->kdim[d] >= 0) st[a * nd + ac->kdim[d]] += h->strides[d] * ac->coef[d];
            off += h->strides[d] * ac->off[d];
        }
        pb[a] = (int64_t)((uintptr_t)h->storage->data + (uintptr_t)(off * (int64_t)tc__dtype_sizes[h->dtype]));
    }
    for (d = 0; d < nd; d++) sh[d] = d < k->ndim ? k->shape[d] : 1;
    sh[nd] = (int64_t)ws;
}

TC__FN size_t tc__cuda_kernel_ws_bytes(const tc__kernel *k) {
    (void)k;
    return 0; /* the locals' workspace is device memory, per launch */
}

TC__FN tc_result tc__cuda_launch(tc__program *p, tc_ctx *ctx, tc__launch *l, const tc__kernel *k, tc__CUfunction fn);

TC__FN tc_result tc__cuda_run_kernel(tc__program *p, tc_ctx *ctx, tc__launch *l) {
    tc_result r;
    if (!p->dev && (r = tc__cuda_prog_build(p, ctx, l)) != TC_OK) return r;
    return tc__cuda_launch(p, ctx, l, &p->fu.k[l->kernel], ((tc__cuda_prog *)p->dev)->fn[l->kernel]);
}

/* Launches kernel k (its function fn) on the context's stream. */
TC__FN tc_result tc__cuda_launch(tc__program *p, tc_ctx *ctx, tc__launch *l, const tc__kernel *k, tc__CUfunction fn) {
    int64_t pb[TC__VM_MAXACC * (TC_MAX_DIMS + 1) + TC_MAX_DIMS + 1], rows = 1, rowlen = 1, n = 1;
    void *args[1];
    unsigned grid, block = TC__CU_BLOCK;
    tc__CUdeviceptr ws = 0;
    size_t ws_cap = 0, ws_bytes = 0;
    unsigned smem = 0;
    (void)ws_cap;
    tc__CUresult cr;
    int d, is_rows = tc__cuda_is_rows(k);
    for (d = 0; d < k->ndim; d++) {
        n *= k->shape[d];
        if (d < k->row0) rows *= k->shape[d];
        else rowlen *= k->shape[d];
    }
    if (n == 0) return TC_OK;
    if (is_rows) {
        int64_t g = rows < (int64_t)tc__cu.sm_count * 16 ? rows : (int64_t)tc__cu.sm_count * 16;
        grid = (unsigned)(g > 0 ? g : 1);
        /* a short row needs fewer threads: whole warps, at least one */
        if (rowlen < TC__CU_BLOCK) block = (unsigned)((rowlen + 31) / 32 * 32);
        ws_bytes = (size_t)grid * (size_t)k->nlocal * (size_t)rowlen * sizeof(float);
        /* a row's locals in shared memory when they fit the 48 KiB every
         * device gives without opting in (TC__CU_SMEM_ROW: room left for
         * the reduction's buffer) */
        if ((size_t)k->nlocal * (size_t)rowlen * sizeof(float) <= TC__CU_SMEM_ROW) {
            smem = (unsigned)((size_t)k->nlocal * (size_t)rowlen * sizeof(float));
            ws_bytes = 0;
        }
    } else {
        int64_t g = (n + TC__CU_BLOCK - 1) / TC__CU_BLOCK, cap = (int64_t)tc__cu.sm_count * 32;
        grid = (unsigned)(g < cap ? g : cap);
    }
    if (ws_bytes) { /* the launch's own, kept with the program */
        tc__cuda_prog *cp = (tc__cuda_prog *)p->dev;
        int li = (int)(l - p->launch);
        if (cp->ws_cap[li] < ws_bytes) {
            if (cp->ws[li]) tc__cuda_free(ctx, cp->ws[li], cp->ws_cap[li]);
            cp->ws[li] = 0;
            cp->ws_cap[li] = 0;
            if (!(ws = tc__cuda_alloc(ctx, ws_bytes, &ws_cap, "a row kernel's workspace")))
                return tc__msg(&l->call, ctx->first_status ? ctx->first_status : TC_ERR_DEVICE, "%s", ctx->first_err);
            cp->ws[li] = ws;
            cp->ws_cap[li] = ws_cap;
        }
        ws = cp->ws[li];
    }
    tc__cuda_params(k, p->ref, ws, pb);
    args[0] = pb;
    cr = tc__cu.cu.LaunchKernel(fn, grid, 1, 1, block, 1, 1, smem, ctx->cuda->stream, args, NULL);
    if (cr != TC__CUDA_SUCCESS)
        return tc__msg(&l->call, tc__cu_result(cr), "cuLaunchKernel (grid %u, block %u): %s", grid, block,
                       tc__cu_errname(cr));
    return TC_OK;
}

/* Launch l's matmul or linear on the GEMM kernel: the operands' strides
 * as tc__run_matmul / tc__run_linear read them (1-D operands as a row or a
 * column, linear's weight transposed by strides), batch dims broadcast. */
TC__FN tc_result tc__cuda_gemm(tc__program *p, tc_ctx *ctx, tc__launch *l, tc_tensor *out, tc__CUfunction fn) {
    const tc__call *c = &l->call;
    const tc_tensor *a = c->ins[0], *b = c->ins[1], *bias = c->op == TC__OP_LINEAR ? c->ins[2] : NULL;
    int64_t ash[TC_MAX_DIMS + 1], ast[TC_MAX_DIMS + 1], bsh[TC_MAX_DIMS + 1], bst[TC_MAX_DIMS + 1];
    int64_t pb[15 + 4 * TC_MAX_DIMS], *bs = pb + 14, M, N, K, cstride;
    int and_ = a->ndim, bnd = b->ndim, nb, d;
    unsigned gx, gy, gz;
    void *args[1];
    tc__CUresult cr;
    memcpy(ash, a->shape, sizeof a->shape);
    memcpy(ast, a->strides, sizeof a->strides);
    if (c->op == TC__OP_LINEAR) { /* B(k, j) = W[j, k] */
        bsh[0] = b->shape[1], bsh[1] = b->shape[0];
        bst[0] = b->strides[1], bst[1] = b->strides[0];
        bnd = 2;
    } else {
        memcpy(bsh, b->shape, sizeof b->shape);
        memcpy(bst, b->strides, sizeof b->strides);
    }
    if (and_ == 1) ash[1] = ash[0], ast[1] = ast[0], ash[0] = 1, ast[0] = 0, and_ = 2;
    if (bnd == 1) bsh[1] = 1, bst[1] = 0, bnd = 2;
    nb = c->op == TC__OP_LINEAR ? and_ - 2 : (int)c->a.i[2];
    M = ash[and_ - 2], K = ash[and_ - 1], N = bsh[bnd - 1];
    memset(pb, 0, sizeof pb);
    pb[0] = (int64_t)(uintptr_t)tc__base(a);
    pb[1] = (int64_t)(uintptr_t)tc__base(b);
    pb[2] = (int64_t)(uintptr_t)tc__base(out);
    pb[3] = bias ? (int64_t)(uintptr_t)tc__base(bias) : 0;
    pb[4] = M, pb[5] = N, pb[6] = K;
    pb[7] = ast[and_ - 2], pb[8] = ast[and_ - 1], pb[9] = bst[bnd - 2], pb[10] = bst[bnd - 1];
    pb[11] = N, pb[12] = 1, pb[13] = nb;
    cstride = M * N;
    for (d = nb - 1; d >= 0; d--) { /* batch dims: the output's leading ones */
        int ta = and_ - 2 - nb + d, tb = bnd - 2 - nb + d;
        int64_t size = c->op == TC__OP_LINEAR ? ash[d] : c->oshape[d];
        bs[d] = size;
        bs[TC_MAX_DIMS + d] = ta >= 0 && ash[ta] != 1 ? ast[ta] : 0;
        bs[2 * TC_MAX_DIMS + d] = tb >= 0 && bsh[tb] != 1 ? bst[tb] : 0;
        bs[3 * TC_MAX_DIMS + d] = cstride;
        cstride *= size;
    }
    pb[14 + 4 * TC_MAX_DIMS] = bias ? bias->strides[0] : 0; /* the bias's own stride (a strided view) */
    gx = (unsigned)((N + 63) / 64), gy = (unsigned)((M + 63) / 64), gz = (unsigned)(cstride / (M * N > 0 ? M * N : 1));
    if (M == 0 || N == 0 || gz == 0) return TC_OK;
    if (gy > 65535 || gz > 65535) return tc__msg(&l->call, TC_ERR_UNSUPPORTED, "a GEMM of %lld rows x %u batches is too large for part 1's grid", (long long)M, gz);
    args[0] = pb;
    /* the same 64 x 64 tiles: 256 threads in the SIMT template, 4 warps in the tensor-core one */
    cr = tc__cu.cu.LaunchKernel(fn, gx, gy, gz, tc__cuda_gemm_kind(p, l) ? 128 : 256, 1, 1, 0, ctx->cuda->stream, args, NULL);
    if (cr != TC__CUDA_SUCCESS)
        return tc__msg(&l->call, tc__cu_result(cr), "cuLaunchKernel (GEMM %lldx%lldx%lld): %s", (long long)M, (long long)N,
                       (long long)K, tc__cu_errname(cr));
    return TC_OK;
}

/* Launch l's own op kernel (cuda/codegen.c's tc__cuda_emit_op): the
 * inputs' and the output's addresses and, for the index ops, a flag the
 * kernel raises on an index out of range, read back after the launch (in a
 * capture, after each replay: tc__cuda_check_flags). */
TC__FN tc_result tc__cuda_op(tc__program *p, tc_ctx *ctx, tc__launch *l, tc_tensor *out, tc__CUfunction fn) {
    const tc__call *c = &l->call;
    tc__cuda_prog *cp = (tc__cuda_prog *)p->dev;
    int64_t pb[TC__MAX_IN + 2], n = tc__numel(out), g = (n + TC__CU_BLOCK - 1) / TC__CU_BLOCK, cap = (int64_t)tc__cu.sm_count * 32;
    int li = (int)(l - p->launch), k, index = c->op == TC__OP_EMBEDDING || c->op == TC__OP_INDEX_SELECT || c->op == TC__OP_GATHER;
    void *args[1];
    tc__CUresult cr;
    int flag = 0;
    tc__CUstreamCaptureStatus cs = TC__CU_STREAM_CAPTURE_STATUS_NONE;
    if (n == 0) return TC_OK;
    memset(pb, 0, sizeof pb);
    for (k = 0; k < c->nin && k < TC__MAX_IN; k++) pb[k] = c->ins[k] ? (int64_t)(uintptr_t)tc__base(c->ins[k]) : 0;
    pb[c->nin > 0 ? c->nin : 1] = (int64_t)(uintptr_t)tc__base(out);
    if (index) {
        if (!cp->ws[li]) {
            size_t capb;
            tc__CUdeviceptr f = tc__cuda_alloc(ctx, sizeof(int), &capb, "an index flag");
            if (!f) return tc__msg(&l->call, ctx->first_status ? ctx->first_status : TC_ERR_DEVICE, "%s", ctx->first_err);
            cp->ws[li] = f;
            cp->ws_cap[li] = capb;
        }
        pb[(c->nin > 0 ? c->nin : 1) + 1] = (int64_t)cp->ws[li];
        if ((cr = tc__cu.cu.MemsetD8Async(cp->ws[li], 0, sizeof(int), ctx->cuda->stream)) != TC__CUDA_SUCCESS)
            return tc__msg(&l->call, tc__cu_result(cr), "clearing the index flag: %s", tc__cu_errname(cr));
    }
    args[0] = pb;
    cr = tc__cu.cu.LaunchKernel(fn, (unsigned)(g < cap ? g : cap), 1, 1, TC__CU_BLOCK, 1, 1, 0, ctx->cuda->stream, args, NULL);
    if (cr != TC__CUDA_SUCCESS)
        return tc__msg(&l->call, tc__cu_result(cr), "cuLaunchKernel (%s): %s", tc__optable[c->op].name, tc__cu_errname(cr));
    if (index && tc__cu.cu.StreamIsCapturing(ctx->cuda->stream, &cs) == TC__CUDA_SUCCESS && cs == TC__CU_STREAM_CAPTURE_STATUS_NONE) {
        if ((cr = tc__cu.cu.MemcpyDtoHAsync(&flag, cp->ws[li], sizeof flag, ctx->cuda->stream)) == TC__CUDA_SUCCESS)
            cr = tc__cu.cu.StreamSynchronize(ctx->cuda->stream);
        if (cr != TC__CUDA_SUCCESS)
            return tc__msg(&l->call, tc__cu_result(cr), "reading the index flag: %s", tc__cu_errname(cr));
        if (flag) return tc__msg(&l->call, TC_ERR_INDEX, "an index is out of range (checked on the GPU)");
    }
    return TC_OK;
}

/* An op with no fused kernel: a pointwise op of its own, a matmul or
 * linear (the GEMM kernel, then its epilogue kernel), a constant the graph
 * owns.  Convolution, attention and the data-movement ops need their CUDA
 * kernels (part 2). */
TC__FN tc_result tc__cuda_run_op(tc__program *p, tc_ctx *ctx, tc__launch *l, tc_tensor *out) {
    tc__call *c = &l->call;
    size_t bytes = (size_t)tc__numel(out) * tc__dtype_sizes[out->dtype];
    tc__cuda_prog *cp;
    tc_result r;
    if (!p->dev && (r = tc__cuda_prog_build(p, ctx, l)) != TC_OK) return r;
    cp = (tc__cuda_prog *)p->dev;
    if (l - p->launch < cp->nx && cp->xk[l - p->launch].ncode > 0)
        return tc__cuda_launch(p, ctx, l, &cp->xk[l - p->launch], cp->xfn[l - p->launch]);
    if (tc__cuda_is_gemm(l)) {
        r = tc__cuda_gemm(p, ctx, l, out, cp->xfn[l - p->launch]);
        /* the epilogue the fuser attached: its kernel after the GEMM (part 2
         * fuses it into the GEMM's stores) */
        if (r == TC_OK && l->epi >= 0) r = tc__cuda_launch(p, ctx, l, &p->fu.k[l->epi], cp->fn[l->epi]);
        return r;
    }
    if (cp->xfn[l - p->launch]) {
        r = tc__cuda_op(p, ctx, l, out, cp->xfn[l - p->launch]);
        /* a conv's epilogue (the fuser attaches one to convs too) */
        if (r == TC_OK && l->epi >= 0) r = tc__cuda_launch(p, ctx, l, &p->fu.k[l->epi], cp->fn[l->epi]);
        return r;
    }
    if (c->op == TC__OP_FROM_DATA) {
        /* data the graph owns (it outlives the copy), uploaded per run: an
         * intermediate may use its memory between runs */
        tc__CUresult cr = tc__cu.cu.MemcpyHtoDAsync((tc__CUdeviceptr)(uintptr_t)tc__base(out), c->a.ptr, bytes, ctx->cuda->stream);
        return cr == TC__CUDA_SUCCESS ? TC_OK : tc__msg(c, tc__cu_result(cr), "uploading a constant: %s", tc__cu_errname(cr));
    }
    return tc__msg(c, TC_ERR_UNSUPPORTED, "no CUDA kernel for %s outside a fused kernel yet", tc__optable[c->op].name);
}

/* reduce-overhead: the inputs' static copies.  A captured graph holds the
 * addresses it was captured with, so each call's inputs are copied (on the
 * stream, before the replay) into buffers the program owns, and the
 * launches read those. */
TC__FN tc_result tc__cuda_stage_inputs(tc__program *p, tc_ctx *ctx, char *err, size_t errcap) {
    tc__cuda_prog *cp = (tc__cuda_prog *)p->dev;
    int i, d;
    if (!cp->st_in) {
        if (!(cp->st_in = (tc__storage *)tc__malloc(sizeof(tc__storage) * (size_t)p->g->n)) ||
            !(cp->st_lo = (int64_t *)tc__malloc(sizeof(int64_t) * (size_t)p->g->n))) {
            TC_FREE(cp->st_in); /* both or neither: a later call tries again */
            cp->st_in = NULL;
            tc__fmt(err, errcap, "out of memory");
            return TC_ERR_OOM;
        }
        memset(cp->st_in, 0, sizeof(tc__storage) * (size_t)p->g->n);
    }
    for (i = 0; i < p->g->n; i++) {
        tc_tensor *h = &p->hdr[i];
        size_t es = tc__dtype_sizes[h->dtype], bytes;
        int64_t lo = h->offset, hi = h->offset;
        tc__CUresult cr;
        if (p->g->nodes[i].kind != TC__NODE_INPUT) continue;
        for (d = 0; d < h->ndim; d++) {
            int64_t reach = (h->shape[d] - 1) * h->strides[d];
            if (reach < 0) lo += reach;
            else hi += reach;
        }
        bytes = tc__numel(h) > 0 ? (size_t)(hi - lo + 1) * es : 0;
        if (!cp->st_in[i].data) {
            size_t cap;
            tc__CUdeviceptr b = tc__cuda_alloc(ctx, bytes ? bytes : 1, &cap, "a reduce-overhead input's copy");
            if (!b) {
                tc__fmt(err, errcap, "%s", ctx->first_err);
                return ctx->first_status ? ctx->first_status : TC_ERR_DEVICE;
            }
            cp->st_in[i].data = (void *)(uintptr_t)b;
            cp->st_in[i].cap = cap;
            cp->st_in[i].refs = 1;
            cp->st_in[i].device = TC_CUDA;
            cp->st_lo[i] = lo;
        }
        if (bytes && (cr = tc__cu.cu.MemcpyDtoDAsync((tc__CUdeviceptr)(uintptr_t)cp->st_in[i].data,
                                                     (tc__CUdeviceptr)(uintptr_t)h->storage->data + (size_t)lo * es,
                                                     bytes, ctx->cuda->stream)) != TC__CUDA_SUCCESS) {
            tc__fmt(err, errcap, "copying input %d: %s", (int)p->g->nodes[i].a.i[0], tc__cu_errname(cr));
            return tc__cu_result(cr);
        }
        h->storage = &cp->st_in[i];
        h->offset -= lo;
        cp->st_in[i].bytes = bytes;
    }
    return TC_OK;
}

/* After a replay: the index flags its launches raised (the graph cleared
 * and set them), read back in one synchronisation; TC_ERR_INDEX naming the
 * first op whose index was out of range. */
TC__FN tc_result tc__cuda_check_flags(tc__program *p, tc_ctx *ctx, char *err, size_t errcap) {
    tc__cuda_prog *cp = (tc__cuda_prog *)p->dev;
    int k, flags_small[8], idx_small[8], *flags = flags_small, *idx = idx_small, n = 0, i, cap = 0;
    tc_result ret = TC_OK;
    tc__CUresult cr = TC__CUDA_SUCCESS;
    for (k = 0; k < p->nlaunch; k++) { /* the index ops' count: room for every flag */
        const tc__call *c = &p->launch[k].call;
        cap += (c->op == TC__OP_EMBEDDING || c->op == TC__OP_INDEX_SELECT || c->op == TC__OP_GATHER) && cp->xfn[k] && cp->ws[k];
    }
    if (cap > 8 && (!(flags = (int *)tc__malloc(sizeof(int) * (size_t)cap)) || !(idx = (int *)tc__malloc(sizeof(int) * (size_t)cap)))) {
        if (flags != flags_small) TC_FREE(flags);
        tc__fmt(err, errcap, "out of memory");
        return TC_ERR_OOM;
    }
    for (k = 0; k < p->nlaunch; k++) {
        const tc__call *c = &p->launch[k].call;
        int index = c->op == TC__OP_EMBEDDING || c->op == TC__OP_INDEX_SELECT || c->op == TC__OP_GATHER;
        if (!index || !cp->xfn[k] || !cp->ws[k]) continue;
        flags[n] = 0;
        idx[n] = k;
        if ((cr = tc__cu.cu.MemcpyDtoHAsync(&flags[n], cp->ws[k], sizeof(int), ctx->cuda->stream)) != TC__CUDA_SUCCESS) break;
        n++;
    }
    if (n && cr == TC__CUDA_SUCCESS) cr = tc__cu.cu.StreamSynchronize(ctx->cuda->stream);
    if (cr != TC__CUDA_SUCCESS) {
        tc__fmt(err, errcap, "reading the index flags: %s", tc__cu_errname(cr));
        ret = tc__cu_result(cr);
    }
    for (i = 0; ret == TC_OK && i < n; i++)
        if (flags[i]) {
            const tc__call *c = &p->launch[idx[i]].call;
            tc__fmt(err, errcap, "tc_%s (%s:%d): an index is out of range (checked on the GPU)", tc__optable[c->op].name,
                    c->file ? c->file : "?", c->line);
            ret = TC_ERR_INDEX;
        }
    if (flags != flags_small) TC_FREE(flags);
    if (idx != idx_small) TC_FREE(idx);
    return ret;
}

/* The launches captured into a graph (the second run: the first built
 * the module and the workspaces, which capture must not allocate). */
TC__FN void tc__cuda_capture(tc__program *p, tc_ctx *ctx, char *err, size_t errcap) {
    tc__cuda_prog *cp = (tc__cuda_prog *)p->dev;
    tc__CUstream s = ctx->cuda->stream;
    tc__CUgraph g = NULL;
    tc__CUresult cr;
    tc_result r;
    cr = tc__cu.cu.StreamBeginCapture(s, TC__CU_STREAM_CAPTURE_MODE_RELAXED);
    if (cr != TC__CUDA_SUCCESS) {
        tc__fmt(cp->graph_why, sizeof cp->graph_why, "cuStreamBeginCapture: %s", tc__cu_errname(cr));
        cp->graph_failed = 1;
        return;
    }
    r = tc__program_launches(p, ctx, err, errcap);
    cr = tc__cu.cu.StreamEndCapture(s, &g);
    if (r == TC_OK && cr == TC__CUDA_SUCCESS) cr = tc__cu.cu.GraphInstantiate(&cp->exec, g, 0);
    if (g) tc__cu.cu.GraphDestroy(g);
    if (r != TC_OK || cr != TC__CUDA_SUCCESS) {
        cp->exec = NULL;
        cp->graph_failed = 1;
        tc__fmt(cp->graph_why, sizeof cp->graph_why, "%s", r != TC_OK ? err : tc__cu_errname(cr));
        err[0] = 0;
    }
}

/* A persistent program's run: the first runs its launches, the second
 * captures them as a CUDA graph, later ones replay it with cuGraphLaunch
 * (one launch for the call).  Where capture fails the launches run one
 * by one, with the reason logged and in tc_explain. */
TC__FN tc_result tc__cuda_replay(tc__program *p, tc_ctx *ctx, char *err, size_t errcap) {
    tc__cuda_prog *cp;
    tc__CUresult cr;
    tc_result r;
    if (!p->dev && p->nlaunch > 0 && (r = tc__cuda_prog_build(p, ctx, &p->launch[0])) != TC_OK) {
        tc__fmt(err, errcap, "%s", p->launch[0].call.msg);
        return r;
    }
    cp = (tc__cuda_prog *)p->dev;
    if (!cp || cp->graph_failed) return tc__program_launches(p, ctx, err, errcap);
    if ((r = tc__cuda_stage_inputs(p, ctx, err, errcap)) != TC_OK) return r;
    if (cp->runs++ == 0) return tc__program_launches(p, ctx, err, errcap);
    if (!cp->exec) {
        tc__cuda_capture(p, ctx, err, errcap);
        if (cp->graph_failed) {
            tc__log(ctx, TC_LOG_WARN, "reduce-overhead: no CUDA graph (%s); launching kernels one by one", cp->graph_why);
            return tc__program_launches(p, ctx, err, errcap);
        }
    }
    cr = tc__cu.cu.GraphLaunch(cp->exec, ctx->cuda->stream);
    if (cr != TC__CUDA_SUCCESS) {
        tc__fmt(err, errcap, "cuGraphLaunch: %s", tc__cu_errname(cr));
        return tc__cu_result(cr);
    }
    return tc__cuda_check_flags(p, ctx, err, errcap);
}

/* For tc_explain: 1 when p replays as a CUDA graph, -1 when capture
 * failed (*why the reason), 0 otherwise. */
TC__FN int tc__cuda_graph_state(const tc__program *p, const char **why) {
    const tc__cuda_prog *cp = p && p->be->device == TC_CUDA ? (const tc__cuda_prog *)p->dev : NULL;
    *why = cp ? cp->graph_why : "";
    return !cp ? 0 : cp->exec ? 1 : cp->graph_failed ? -1 : 0;
}

TC__FN void *tc__cuda_block_get(tc_ctx *ctx, size_t bytes, void **raw, size_t *cap) {
    tc__CUdeviceptr d = tc__cuda_alloc(ctx, bytes, cap, "a compiled function's arena");
    *raw = (void *)(uintptr_t)d;
    return *raw;
}

TC__FN void tc__cuda_block_put(tc_ctx *ctx, void *raw, void *data, size_t cap) {
    (void)data;
    tc__cuda_free(ctx, (tc__CUdeviceptr)(uintptr_t)raw, cap);
}

static const tc__backend tc__cuda_backend = {tc__cuda_kernel_ws_bytes, tc__cuda_run_kernel, tc__cuda_run_op,
                                             tc__cuda_block_get, tc__cuda_block_put, TC_CUDA, tc__cuda_program_free,
                                             tc__cuda_replay};

#ifdef TCOMPILE_TESTING
/* Tests: compiles src with NVRTC alone (no driver is needed) to CUBIN for
 * sm_<arch>, ptxas reporting; *spill gets the bytes of spill stores and
 * loads it reports.  TC_OK, or the reason in err. */
TCDEF tc_result tc__test_nvrtc(const char *src, int arch, long *spill, char *err, size_t cap) {
    char *bin = NULL, *p;
    size_t n;
    tc_result r;
    if (tc__cu_open_nvrtc(NULL) != 0) {
        tc__fmt(err, cap, "%s", tc__cu.why);
        return TC_ERR_DEVICE;
    }
    r = tc__nvrtc_compile_opt(src, arch, 1, "--ptxas-options=-v", &bin, &n, err, cap);
    TC_FREE(bin);
    *spill = 0;
    for (p = err; r == TC_OK && (p = strstr(p, " bytes ")) != NULL; p++) {
        const char *q = p;
        if (strncmp(p, " bytes spill", 12) != 0) continue; /* a stack frame is libdevice's (sinf's slow path) */
        while (q > err && q[-1] >= '0' && q[-1] <= '9') q--;
        *spill += strtol(q, NULL, 10);
    }
    return r;
}
#endif

#endif /* TC_NO_CUDA */
