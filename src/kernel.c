/* Kernel IR: what the fuser produces and every backend lowers from.
 *
 * A kernel iterates a domain of up to TC_MAX_DIMS dims.  Dims [0, row0) are
 * the outer (parallel) dims, dims [row0, ndim) the row.  Buffers are reached
 * through accesses: a graph node's header (resolved at launch, so views of
 * moving inputs work) and, per dim of that buffer, which domain dim indexes
 * it with which coefficient and offset, so broadcasts, permutes, slices and
 * selects are index expressions, never copies.
 *
 * The body is a short register program (tc__vins) per stage.  Stages run in
 * order over each row: every stage but the last may accumulate reductions
 * (ACC) whose results become row scalars (slots) for the later stages; the
 * last stage stores the full-domain outputs; an optional scalar stage runs
 * once per row with the row index at 0 and stores the reduced outputs.  A
 * value needed by several stages is kept in a row-sized local buffer
 * (STOREL/LOADL) when that is cheaper than recomputing it.
 *
 * Registers are tiles of tc__kernel_tile(k) floats; the executor runs each
 * instruction over a whole tile, so interpreting costs one dispatch per
 * tile.  Compute instructions use the op table's ids. */

#define TC__VM_TILE 256        /* the heuristic's smallest tile; largest 4x */
#define TC__VM_TILE_MIN 64     /* the smallest max-autotune tries            */
#define TC__VM_TILE_BUDGET 4096 /* floats of register tiles kept in L1      */
#define TC__VM_ACCW 64         /* floats per accumulator (4 vectors of 16)  */
#define TC__VM_MAXREG 24
#define TC__VM_MAXACC 48       /* accesses (loads + stores) per kernel       */
#define TC__VM_MAXSTAGE 8
#define TC__VM_MAXSLOT 16      /* reductions per kernel                      */
#define TC__VM_MAXLOCAL 8
#define TC__VM_MAXPF 4          /* input streams prefetched per tile         */
#define TC__VM_PF_STEP 8        /* lines per stream before each instruction  */

/* Pseudo ops, numbered after the op table so one 16-bit field holds both. */
enum {
    TC__V_LOAD = TC__OP_COUNT, /* dst <- access a over the tile            */
    TC__V_CONST,               /* dst <- f0                                 */
    TC__V_SLOT,                /* dst <- slot a (a row scalar, broadcast)   */
    TC__V_LOADL,               /* dst <- local buffer a at the tile         */
    TC__V_STOREL,              /* local a <- register b                     */
    TC__V_STORE,               /* access a <- register b                    */
    TC__V_ACC,                 /* accumulator a <- combine(register b); c = combiner */
    TC__V_END
};

enum { TC__COMB_SUM = 0, TC__COMB_MAX, TC__COMB_MIN };

/* The combiners, as the eager reductions define them (NaN wins max/min). */
TC__FN double tc__comb_identity(int comb) {
    return comb == TC__COMB_SUM ? 0.0 : comb == TC__COMB_MAX ? -INFINITY : INFINITY;
}
TC__FN double tc__comb_apply(double a, double v, int comb) {
    if (comb == TC__COMB_SUM) return a + v;
    if (comb == TC__COMB_MAX) return (v > a || v != v) ? v : a;
    return (v < a || v != v) ? v : a;
}

typedef struct tc__vins {
    int16_t op, dst, a, b, c;
    float f0, f1;
} tc__vins;

/* One buffer access, static part (from the fuser). */
typedef struct tc__kaccess {
    int node;                  /* graph node whose header holds the memory   */
    int store;                 /* written by the kernel                      */
    int ndim;                  /* the buffer's dims                          */
    int8_t kdim[TC_MAX_DIMS];  /* per buffer dim: the domain dim, -1 none    */
    int64_t coef[TC_MAX_DIMS]; /* index = coef * i[kdim] + off               */
    int64_t off[TC_MAX_DIMS];
} tc__kaccess;

typedef struct tc__kstage {
    int begin, end;            /* code range                                */
    int scalar;                /* run once per row at row index 0           */
} tc__kstage;

typedef struct tc__kernel {
    int ndim, row0;
    int64_t shape[TC_MAX_DIMS];
    tc__kaccess acc[TC__VM_MAXACC];
    int nacc;
    tc__vins *code;
    int ncode, cap;
    tc__kstage stage[TC__VM_MAXSTAGE + 1];
    int nstage;
    int nreg, nslot, nlocal;
    int slot_comb[TC__VM_MAXSLOT];
    float slot_scale[TC__VM_MAXSLOT]; /* mean: 1/n                          */
    int nodes;                 /* graph ops fused into it                    */
    int root;                  /* the node it is named after                 */
    double cost;               /* vector instructions per domain element     */
} tc__kernel;

/* Run-time state of one thread inside a kernel: register tiles, the current
 * tile's pointers and strides per access, row scalars, accumulators. */
typedef struct tc__vst {
    float *buf[TC__VM_MAXREG];       /* tile buffers (aligned)               */
    const float *r[TC__VM_MAXREG];   /* what each register reads             */
    int u[TC__VM_MAXREG];            /* uniform: one vector stands for all   */
    float uv[TC__VM_MAXREG][16];     /* that vector (up to 16 lanes)         */
    char *ptr[TC__VM_MAXACC];        /* tile start per access                */
    int64_t stride[TC__VM_MAXACC];   /* elements, along the tiled dim        */
    int dt[TC__VM_MAXACC];
    int nt[TC__VM_MAXACC];           /* store with non-temporal writes       */
    float slot[TC__VM_MAXSLOT];
    float *acc[TC__VM_MAXSLOT];      /* accumulators, TC__VM_ACCW floats each */
    float *local[TC__VM_MAXLOCAL];   /* at the tile's position in the row    */
    /* software prefetch of a later tile, spread over the tile's compute
     * instructions (a burst of a whole tile's lines overruns the miss
     * buffers and most of it is dropped) */
    const char *pf[TC__VM_MAXPF];
    int npf, pf_lines, pf_next;
} tc__vst;

#ifdef TC__HAVE_VEXEC
/* Issues the armed prefetch's lines up to `end` (at most all of them) for
 * every armed stream. */
TC__FN void tc__vst_pf_upto(tc__vst *s, int end) {
    int q, l;
    if (end > s->pf_lines) end = s->pf_lines;
    for (q = 0; q < s->npf; q++)
        for (l = s->pf_next; l < end; l++) tc__prefetch(s->pf[q] + (size_t)l * 64);
    if (end > s->pf_next) s->pf_next = end;
}
#endif

/* Floats per register tile: the largest of 1024, 512, 256 whose tiles
 * all fit TC__VM_TILE_BUDGET (16 KiB, a third of a small L1 beside the
 * streams), since each instruction's dispatch is paid once per tile. */
TC__FN int tc__kernel_tile(const tc__kernel *k) {
    int t = 4 * TC__VM_TILE;
    while (t > TC__VM_TILE && t * (k->nreg > 0 ? k->nreg : 1) > TC__VM_TILE_BUDGET) t /= 2;
    return t;
}

TC__FN const char *tc__vop_name(int op) {
    static const char *const pseudo[] = {"load", "const", "slot", "loadl", "storel", "store", "acc"};
    if (op >= 0 && op < TC__OP_COUNT) return tc__optable[op].name;
    if (op >= TC__V_LOAD && op < TC__V_END) return pseudo[op - TC__V_LOAD];
    return "?";
}

/* Appends one instruction; -1 when the code buffer cannot grow. */
TC__FN int tc__kernel_emit(tc__kernel *k, int op, int dst, int a, int b, int c, float f0, float f1) {
    tc__vins *v;
    if (k->ncode == k->cap) {
        int cap = k->cap ? k->cap * 2 : 32;
        tc__vins *nc = (tc__vins *)TC_REALLOC(k->code, sizeof(tc__vins) * (size_t)cap);
        if (!nc) return -1;
        k->code = nc;
        k->cap = cap;
    }
    v = &k->code[k->ncode++];
    v->op = (int16_t)op;
    v->dst = (int16_t)dst;
    v->a = (int16_t)a;
    v->b = (int16_t)b;
    v->c = (int16_t)c;
    v->f0 = f0;
    v->f1 = f1;
    return 0;
}

TC__FN void tc__kernel_free(tc__kernel *k) {
    if (k) TC_FREE(k->code);
}

/* Kernel IR as text (TC_LOGS=output_code and tc_fn_kernels). */
TC__FN void tc__kernel_print(const tc__kernel *k, int index, tc__text *sb) {
    static const char *const comb[] = {"sum", "max", "min"};
    int s, i, d;
    tc__text_printf(sb, "kernel %d: domain [", index);
    for (d = 0; d < k->ndim; d++) tc__text_printf(sb, "%s%lld", d ? ", " : "", (long long)k->shape[d]);
    if (k->row0 < k->ndim) tc__text_printf(sb, "], row dims %d..%d", k->row0, k->ndim - 1);
    else tc__text_printf(sb, "], pointwise");
    tc__text_printf(sb, ", %d ops fused, %d registers, %d slots, %d local\n", k->nodes, k->nreg, k->nslot, k->nlocal);
    for (i = 0; i < k->nacc; i++) {
        const tc__kaccess *a = &k->acc[i];
        tc__text_printf(sb, "  %s%d = node %%%d[", a->store ? "out" : "in", i, a->node);
        for (d = 0; d < a->ndim; d++) {
            if (d) tc__text_printf(sb, ", ");
            if (a->kdim[d] < 0) tc__text_printf(sb, "%lld", (long long)a->off[d]);
            else if (a->coef[d] == 1 && a->off[d] == 0) tc__text_printf(sb, "i%d", a->kdim[d]);
            else tc__text_printf(sb, "%lld*i%d+%lld", (long long)a->coef[d], a->kdim[d], (long long)a->off[d]);
        }
        tc__text_printf(sb, "]\n");
    }
    for (s = 0; s < k->nstage; s++) {
        const tc__kstage *st = &k->stage[s];
        tc__text_printf(sb, "  stage %d (%s):\n", s, st->scalar ? "once per row" : "over the row");
        for (i = st->begin; i < st->end; i++) {
            const tc__vins *v = &k->code[i];
            switch (v->op) {
            case TC__V_LOAD: tc__text_printf(sb, "    r%d = load in%d\n", v->dst, v->a); break;
            case TC__V_CONST: tc__text_printf(sb, "    r%d = %.9g\n", v->dst, v->f0); break;
            case TC__V_SLOT: tc__text_printf(sb, "    r%d = slot%d\n", v->dst, v->a); break;
            case TC__V_LOADL: tc__text_printf(sb, "    r%d = local%d\n", v->dst, v->a); break;
            case TC__V_STOREL: tc__text_printf(sb, "    local%d = r%d\n", v->a, v->b); break;
            case TC__V_STORE: tc__text_printf(sb, "    out%d = r%d\n", v->a, v->b); break;
            case TC__V_ACC:
                tc__text_printf(sb, "    slot%d %s= r%d%s\n", v->a, comb[v->c], v->b,
                                k->slot_scale[v->a] != 1.0f ? " (then scaled)" : "");
                break;
            default:
                tc__text_printf(sb, "    r%d = %s(r%d", v->dst, tc__vop_name(v->op), v->a);
                if (v->b >= 0) tc__text_printf(sb, ", r%d", v->b);
                if (v->c >= 0) tc__text_printf(sb, ", r%d", v->c);
                if (v->op == TC__OP_CLAMP || v->op == TC__OP_SOFTPLUS) tc__text_printf(sb, "; %g, %g", v->f0, v->f1);
                tc__text_printf(sb, ")\n");
            }
        }
    }
}
