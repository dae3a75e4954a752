/* Blocked GEMM for the eager kernels: C = alpha * A @ B (+ bias per column).
 * BLIS structure: B panels of KC x NC packed into NR-wide slivers, A blocks
 * of MC x KC packed into MR-tall slivers, an MR x NR register-tile kernel in
 * plain C with constant trip counts (the compiler vectorises it for the ISA
 * it targets).  Any strides: transposed operands are absorbed by packing.
 * Edge tiles are zero-padded in the packs, so there is no scalar tail path.
 * The per-ISA microkernels and run-time dispatch come with the contraction
 * templates; this is the honest baseline. */

#define TC__MR 4 /* the microkernel body names its 4 rows */
#define TC__NR 16
#define TC__MC 64
#define TC__KC 256
#define TC__NC 1024

typedef struct tc__gemm {
    int64_t M, N, K;
    const float *A;
    int64_t rsa, csa;        /* A(i,k) = A[i*rsa + k*csa] */
    const float *B;
    int64_t rsb, csb;        /* B(k,j) = B[k*rsb + j*csb] */
    float *C;
    int64_t ldc;             /* C(i,j) = C[i*ldc + j]     */
    float alpha;
    const float *bias;       /* bias[j] added to column j, or NULL */
    const tc__epilogue *epi; /* after alpha and bias, per finished block */
    int64_t epi_row0;        /* this problem's first row in the epilogue's view */
} tc__gemm;

TC__FN void tc__gemm_epi(const tc__gemm *g, int64_t row, int64_t m, int64_t col, int64_t n) {
    if (g->epi && m > 0 && n > 0) g->epi->fn(g->epi->arg, g->epi_row0 + row, m, col, n, g->ldc);
}

TC__FN void tc__pack_b(const tc__gemm *g, int64_t pc, int64_t kc, int64_t jc, int64_t nc, float *bp) {
    int64_t js, k, j;
    for (js = 0; js < nc; js += TC__NR) {
        int64_t nr = nc - js < TC__NR ? nc - js : TC__NR;
        float *dst = bp + js * kc;
        for (k = 0; k < kc; k++) {
            const float *src = g->B + (pc + k) * g->rsb + (jc + js) * g->csb;
            float *d = dst + k * TC__NR;
            if (g->csb == 1 && nr == TC__NR)
                for (j = 0; j < TC__NR; j++) d[j] = src[j];
            else {
                for (j = 0; j < nr; j++) d[j] = src[j * g->csb];
                for (; j < TC__NR; j++) d[j] = 0.0f;
            }
        }
    }
}

TC__FN void tc__pack_a(const tc__gemm *g, int64_t ic, int64_t mc, int64_t pc, int64_t kc, float *ap) {
    int64_t is, k, i;
    for (is = 0; is < mc; is += TC__MR) {
        int64_t mr = mc - is < TC__MR ? mc - is : TC__MR;
        float *dst = ap + is * kc;
        for (k = 0; k < kc; k++) {
            const float *src = g->A + (ic + is) * g->rsa + (pc + k) * g->csa;
            for (i = 0; i < mr; i++) dst[k * TC__MR + i] = src[i * g->rsa];
            for (; i < TC__MR; i++) dst[k * TC__MR + i] = 0.0f;
        }
    }
}

/* acc = Ap(MR x kc) @ Bp(kc x NR).  One body, compiled twice on x86: for
 * the baseline ISA and, with a target attribute, for AVX2+FMA (chosen at run
 * time by cpuid+XGETBV), so a default -O2 build still uses the wide units. */
#define TC__MICRO_BODY(FMA)                                                    \
    /* four named row accumulators (MR = 4) so they live in registers */     \
    float c0[TC__NR], c1[TC__NR], c2[TC__NR], c3[TC__NR];                      \
    int64_t k;                                                                 \
    int j;                                                                     \
    for (j = 0; j < TC__NR; j++) c0[j] = c1[j] = c2[j] = c3[j] = 0.0f;         \
    for (k = 0; k < kc; k++) {                                                 \
        const float *b = bp + k * TC__NR, *a = ap + k * TC__MR;                \
        for (j = 0; j < TC__NR; j++) {                                         \
            c0[j] = FMA(a[0], b[j], c0[j]);                                    \
            c1[j] = FMA(a[1], b[j], c1[j]);                                    \
            c2[j] = FMA(a[2], b[j], c2[j]);                                    \
            c3[j] = FMA(a[3], b[j], c3[j]);                                    \
        }                                                                      \
    }                                                                          \
    for (j = 0; j < TC__NR; j++) {                                             \
        acc[0][j] = c0[j];                                                     \
        acc[1][j] = c1[j];                                                     \
        acc[2][j] = c2[j];                                                     \
        acc[3][j] = c3[j];                                                     \
    }
#define TC__MUL_ADD(a, b, c) ((a) * (b) + (c))

typedef void (*tc__micro_fn)(int64_t kc, const float *TC__RESTRICT ap, const float *TC__RESTRICT bp,
                             float acc[TC__MR][TC__NR]);

TC__FN void tc__micro_base(int64_t kc, const float *TC__RESTRICT ap, const float *TC__RESTRICT bp,
                           float acc[TC__MR][TC__NR]) {
    TC__MICRO_BODY(TC__MUL_ADD)
}

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define TC__HAVE_MICRO_AVX2 1
/* AVX2+FMA: 4 rows x 2 vectors = 8 accumulators, enough to cover the FMA
 * latency on two ports.  Intrinsics under a target attribute, so the rest of
 * the header needs no -mavx2. */
__attribute__((target("avx2,fma"))) static void tc__micro_avx2(int64_t kc, const float *TC__RESTRICT ap,
                                                               const float *TC__RESTRICT bp,
                                                               float acc[TC__MR][TC__NR]) {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    int64_t k;
    for (k = 0; k < kc; k++) {
        __m256 b0 = _mm256_loadu_ps(bp + k * TC__NR), b1 = _mm256_loadu_ps(bp + k * TC__NR + 8), a;
        a = _mm256_broadcast_ss(ap + k * TC__MR);
        c00 = _mm256_fmadd_ps(a, b0, c00);
        c01 = _mm256_fmadd_ps(a, b1, c01);
        a = _mm256_broadcast_ss(ap + k * TC__MR + 1);
        c10 = _mm256_fmadd_ps(a, b0, c10);
        c11 = _mm256_fmadd_ps(a, b1, c11);
        a = _mm256_broadcast_ss(ap + k * TC__MR + 2);
        c20 = _mm256_fmadd_ps(a, b0, c20);
        c21 = _mm256_fmadd_ps(a, b1, c21);
        a = _mm256_broadcast_ss(ap + k * TC__MR + 3);
        c30 = _mm256_fmadd_ps(a, b0, c30);
        c31 = _mm256_fmadd_ps(a, b1, c31);
    }
    _mm256_storeu_ps(acc[0], c00);
    _mm256_storeu_ps(acc[0] + 8, c01);
    _mm256_storeu_ps(acc[1], c10);
    _mm256_storeu_ps(acc[1] + 8, c11);
    _mm256_storeu_ps(acc[2], c20);
    _mm256_storeu_ps(acc[2] + 8, c21);
    _mm256_storeu_ps(acc[3], c30);
    _mm256_storeu_ps(acc[3] + 8, c31);
}
#endif

TC__FN tc__micro_fn tc__micro_pick(const tc_ctx *ctx) {
#ifdef TC__HAVE_MICRO_AVX2
    int f = ctx->cpu_features;
    if ((f & TC__CPU_AVX2) && (f & TC__CPU_FMA)) return tc__micro_avx2;
#else
    (void)ctx;
#endif
    return tc__micro_base;
}

typedef struct tc__gemm_job {
    const tc__gemm *g;
    tc__micro_fn micro;
    const float *bp;
    int64_t jc, nc, pc, kc;
    int64_t mblocks, nchunks, chunk_cols;
    int first, last;         /* first / last K block: overwrite / finish */
} tc__gemm_job;

TC__FN void tc__gemm_tasks(void *arg, int64_t tb, int64_t te) {
    const tc__gemm_job *j = (const tc__gemm_job *)arg;
    const tc__gemm *g = j->g;
    float ap[TC__MC * TC__KC];
    float acc[TC__MR][TC__NR];
    int64_t t, packed_ic = -1;
    for (t = tb; t < te; t++) {
        int64_t ic = (t / j->nchunks) * TC__MC, mc = g->M - ic < TC__MC ? g->M - ic : TC__MC;
        int64_t j0 = (t % j->nchunks) * j->chunk_cols, j1 = j0 + j->chunk_cols < j->nc ? j0 + j->chunk_cols : j->nc;
        int64_t is, js;
        if (packed_ic != ic) {
            tc__pack_a(g, ic, mc, j->pc, j->kc, ap);
            packed_ic = ic;
        }
        for (js = j0; js < j1; js += TC__NR) {
            int64_t nr = j1 - js < TC__NR ? j1 - js : TC__NR;
            for (is = 0; is < mc; is += TC__MR) {
                int64_t mr = mc - is < TC__MR ? mc - is : TC__MR, i, c;
                float *crow = g->C + (ic + is) * g->ldc + j->jc + js;
                j->micro(j->kc, ap + is * j->kc, j->bp + js * j->kc, acc);
                for (i = 0; i < mr; i++) {
                    float *cr = crow + i * g->ldc;
                    if (j->first)
                        for (c = 0; c < nr; c++) cr[c] = acc[i][c];
                    else
                        for (c = 0; c < nr; c++) cr[c] += acc[i][c];
                    if (j->last) {
                        for (c = 0; c < nr; c++) cr[c] *= g->alpha;
                        if (g->bias)
                            for (c = 0; c < nr; c++) cr[c] += g->bias[j->jc + js + c];
                    }
                }
            }
        }
        /* the block (mc rows x the chunk) is final and still in cache */
        if (j->last) tc__gemm_epi(g, ic, mc, j->jc + j0, j1 - j0);
    }
}

/* Few rows (a GEMV at M = 1, decoding, small batches): packing would cost
 * more than it saves.  Each output column is a dot product when B's columns
 * are contiguous in k (linear's weight), else rows of B are accumulated
 * (axpy); both stream B once.  Parallel over column blocks. */
#define TC__SKINNY_M 4

typedef struct tc__skinny_job {
    const tc__gemm *g;
} tc__skinny_job;

TC__FN void tc__skinny_cols(void *arg, int64_t jb, int64_t je) {
    const tc__gemm *g = ((const tc__skinny_job *)arg)->g;
    int64_t i, j, k;
    for (i = 0; i < g->M; i++) {
        const float *a = g->A + i * g->rsa;
        float *c = g->C + i * g->ldc;
        if (g->rsb == 1 && g->csa == 1) {
            for (j = jb; j < je; j++) {
                const float *b = g->B + j * g->csb;
                float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0}, s;
                for (k = 0; k + 8 <= g->K; k += 8) {
                    int q;
                    for (q = 0; q < 8; q++) acc[q] += a[k + q] * b[k + q];
                }
                s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
                for (; k < g->K; k++) s += a[k] * b[k];
                c[j] = s;
            }
        } else {
            for (j = jb; j < je; j++) c[j] = 0.0f;
            for (k = 0; k < g->K; k++) {
                float av = a[k * g->csa];
                const float *b = g->B + k * g->rsb;
                if (g->csb == 1)
                    for (j = jb; j < je; j++) c[j] += av * b[j];
                else
                    for (j = jb; j < je; j++) c[j] += av * b[j * g->csb];
            }
        }
        for (j = jb; j < je; j++) {
            c[j] *= g->alpha;
            if (g->bias) c[j] += g->bias[j];
        }
    }
    tc__gemm_epi(g, 0, g->M, jb, je - jb);
}

TC__FN int tc__gemm_skinny(tc_ctx *ctx, const tc__gemm *g, int serial) {
    tc__skinny_job j;
    j.g = g;
    if (serial) tc__skinny_cols(&j, 0, g->N);
    else tc__parallel_for(ctx, g->N, g->M * g->N * g->K, tc__skinny_cols, &j);
    return 0;
}

/* Runs one GEMM; parallel over MC blocks x column chunks unless `serial`. */
TC__FN int tc__gemm_run(tc_ctx *ctx, const tc__gemm *g, int serial) {
    int64_t jc, pc, i, jj;
    float *bp;
    tc__micro_fn micro = tc__micro_pick(ctx);
    if (g->M <= 0 || g->N <= 0) return 0;
    if (g->K == 0) {
        for (i = 0; i < g->M; i++)
            for (jj = 0; jj < g->N; jj++) g->C[i * g->ldc + jj] = g->bias ? g->bias[jj] : 0.0f;
        tc__gemm_epi(g, 0, g->M, 0, g->N);
        return 0;
    }
    if (g->M <= TC__SKINNY_M) return tc__gemm_skinny(ctx, g, serial);
    /* the packed panel is as large as the problem needs, not a fixed 1 MB */
    {
        int64_t kc = g->K < TC__KC ? g->K : TC__KC, nc = g->N < TC__NC ? g->N : TC__NC;
        nc = (nc + TC__NR - 1) / TC__NR * TC__NR;
        bp = (float *)tc__scratch_get(ctx, sizeof(float) * (size_t)kc * (size_t)nc);
    }
    if (!bp) return -1;
    for (jc = 0; jc < g->N; jc += TC__NC) {
        int64_t nc = g->N - jc < TC__NC ? g->N - jc : TC__NC;
        for (pc = 0; pc < g->K; pc += TC__KC) {
            tc__gemm_job j;
            int64_t kc = g->K - pc < TC__KC ? g->K - pc : TC__KC, slivers = (nc + TC__NR - 1) / TC__NR;
            int nth = serial ? 1 : ctx->num_threads;
            tc__pack_b(g, pc, kc, jc, nc, bp);
            j.g = g;
            j.micro = micro;
            j.bp = bp;
            j.jc = jc;
            j.nc = nc;
            j.pc = pc;
            j.kc = kc;
            j.first = pc == 0;
            j.last = pc + kc >= g->K;
            j.mblocks = (g->M + TC__MC - 1) / TC__MC;
            /* enough tasks for every thread: split columns when M is short */
            j.nchunks = j.mblocks >= 2 * nth ? 1 : (2 * nth + j.mblocks - 1) / j.mblocks;
            if (j.nchunks > slivers) j.nchunks = slivers;
            j.chunk_cols = ((slivers + j.nchunks - 1) / j.nchunks) * TC__NR;
            j.nchunks = (nc + j.chunk_cols - 1) / j.chunk_cols;
            if (serial) tc__gemm_tasks(&j, 0, j.mblocks * j.nchunks);
            else tc__parallel_for(ctx, j.mblocks * j.nchunks, g->M * nc * kc, tc__gemm_tasks, &j);
        }
    }
    tc__scratch_put(bp);
    return 0;
}

/* Batched GEMM: the i-th problem uses offsets aoff[i], boff[i], coff[i] (in
 * floats) from the base pointers of g.  Small problems run one per thread;
 * large ones one after another, each parallel inside. */
typedef struct tc__bgemm_job {
    tc_ctx *ctx;
    const tc__gemm *g;
    const int64_t *aoff, *boff, *coff;
    int failed;
} tc__bgemm_job;

TC__FN void tc__bgemm_range(void *arg, int64_t b, int64_t e) {
    tc__bgemm_job *j = (tc__bgemm_job *)arg;
    int64_t i;
    for (i = b; i < e; i++) {
        tc__gemm gi = *j->g;
        gi.A += j->aoff[i];
        gi.B += j->boff[i];
        gi.C += j->coff[i];
        gi.epi_row0 = gi.ldc > 0 ? j->coff[i] / gi.ldc : 0;
        if (tc__gemm_run(j->ctx, &gi, 1)) j->failed = 1;
    }
}

TC__FN int tc__gemm_batched(tc_ctx *ctx, const tc__gemm *g, int64_t nbatch, const int64_t *aoff, const int64_t *boff,
                            const int64_t *coff) {
    int64_t work = g->M * g->N * (g->K > 0 ? g->K : 1), i;
    if (nbatch > 1 && work < ((int64_t)1 << 22)) {
        tc__bgemm_job j;
        j.ctx = ctx;
        j.g = g;
        j.aoff = aoff;
        j.boff = boff;
        j.coff = coff;
        j.failed = 0;
        tc__parallel_for(ctx, nbatch, work * nbatch, tc__bgemm_range, &j);
        return j.failed ? -1 : 0;
    }
    for (i = 0; i < nbatch; i++) {
        tc__gemm gi = *g;
        gi.A += aoff[i];
        gi.B += boff[i];
        gi.C += coff[i];
        gi.epi_row0 = g->ldc > 0 ? coff[i] / g->ldc : 0;
        if (tc__gemm_run(ctx, &gi, 0)) return -1;
    }
    return 0;
}
