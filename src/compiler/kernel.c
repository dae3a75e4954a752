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
 * tile and one pass through L1 per instruction.  Compute instructions use
 * the op table's ids.  Before register allocation each stage's code is
 * simplified (tc__kernel_simplify, at the end of this file) to cut those
 * passes: affine steps become their readers' multiply-add prologue.
 *
 * Glossary (docs/INTERNALS.md has the long one):
 *   vins   one instruction of the register program (tc__vins)
 *   slot   a row scalar: a reduction's result, read broadcast by later stages
 *   local  a row-sized buffer a value several stages read is kept in
 *   krun   a kernel's launch state, shared by its threads (cpu/vexec.c)
 *   vst    one thread's state inside a kernel: tiles, pointers, slots
 *          (cpu/vstate.h)
 *   vplan  a thread part's pre-decoded rows: the steps (vstep) of each stage
 *   fin    the tile is a whole row: its sums end as slots in registers */

#define TC__VM_TILE 256        /* the heuristic's smallest tile; largest 4x */
#define TC__VM_TILE_MIN 64     /* the smallest max-autotune tries            */
#define TC__VM_TILE_BUDGET 4096 /* floats of register tiles kept in L1      */
#define TC__VM_ROW_TILE 4096   /* the longest row a row kernel holds in one tile */
#define TC__VM_ACCW 64         /* floats per accumulator (4 vectors of 16)  */
#define TC__VM_MAXREG 24
#define TC__VM_MAXACC 48       /* accesses (loads + stores) per kernel       */
#define TC__VM_MAXSTAGE 8
#define TC__VM_MAXSLOT 16      /* reductions per kernel                      */
#define TC__VM_MAXLOCAL 8
#define TC__VM_MAXPF 4          /* input streams prefetched per tile         */
#define TC__VM_PF_STEP 8        /* lines per stream before each instruction  */
/* Rows of at most this many elements may run a vector's lanes' worth of
 * rows at once, one row per lane (tc__vst.tr): a row that short is mostly
 * the fixed cost of its stages (dispatch, folds, the chain of row
 * scalars).  The buffers are sized for it; which rows do is
 * tc__krun_lanes's rule (fewer than TC__LANE_VECTORS vectors). */
#define TC__VM_LANE_ROW 128

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

/* SUMSQ and SUMSQ_LO are an accumulation's combiners only (ACC's c): they
 * sum the squares of their register, SUMSQ_LO of it times TC__SUMSQ_LO
 * (2^-96, passes.c: a sum no finite f32 row overflows, which the norms
 * take beside SUMSQ for values past ~1.8e19, whose squares overflow), and
 * their slot's combiner is SUM.  A SUMSQ_LO is read only where the SUMSQ
 * of the same register (its pair, tc__sumsq_pair) is inf: where the pair
 * is finite the executor may skip it (a row in one tile: its one pass
 * over the row stays one) and leave its slot 0. */
enum { TC__COMB_SUM = 0, TC__COMB_MAX, TC__COMB_MIN, TC__COMB_SUMSQ, TC__COMB_SUMSQ_LO };
#define TC__COMB_IS_SUM(c) ((c) == TC__COMB_SUM || (c) == TC__COMB_SUMSQ || (c) == TC__COMB_SUMSQ_LO)

/* The combiners, as the eager reductions define them (NaN wins max/min). */
TC__FN double tc__comb_identity(int comb) {
    return TC__COMB_IS_SUM(comb) ? 0.0 : comb == TC__COMB_MAX ? -INFINITY : INFINITY;
}
TC__FN double tc__comb_apply(double a, double v, int comb) {
    if (comb == TC__COMB_SUM) return a + v;
    if (comb == TC__COMB_MAX) return (v > a || v != v) ? v : a;
    return (v < a || v != v) ? v : a;
}

/* A compute instruction reads operand a as a * as + at, where as and at
 * are uniform registers (-1: 1 and -0, i.e. a as it is): the affine
 * prologue tc__kernel_simplify folds producers into.  A product may read
 * operand b as bu(b), bu one of the gate activations below (-1: b as it
 * is): x * sigmoid(y) and its kin (GLU, SwiGLU, GeGLU, LSTM gates) in one
 * pass, so the product's stores are spread over the activation's math
 * instead of written in a burst by a pass that only multiplies.  Where
 * operand a is itself a ratio gate (below), the product reads it as
 * au(a * as + at) (-1: a as it is), with bu none or a ratio gate too:
 * gelu_tanh(x * 1.5 + 0.25) * sigmoid(x) in one pass with no tile between
 * the two activations, and one division for both. */
typedef struct tc__vins {
    int16_t op, dst, a, b, c, as, at, bu, au;
    int16_t fz; /* how the executor fuses it with what follows (TC__FZ_*) */
    float f0, f1;
} tc__vins;

/* What follows a compute instruction that the tile interpreter folds into
 * its loop, decided once per stage (tc__kernel_mark_fusions) rather than
 * at every tile and row: a store of its value to a row buffer, or to the
 * kernel's result (where the tile allows), and a sum of its value taken as
 * each vector is stored (tc__acc_as_stored, after the row buffer's store
 * when there is one). */
enum { TC__FZ_LOCAL = 1, TC__FZ_OUT = 2, TC__FZ_ACC = 4 };

#define TC__GATE_OPS(X) X(SIGMOID) X(TANH) X(EXP) X(SILU) X(GELU) X(GELU_TANH) X(RELU)
/* The gates of the form n(x) / d(x), d = 1 + exp(..) (tc__vratio_): a
 * product of two divides once, n_a / (d_a d_b) * n_b.  The executor's
 * loops for au name these three (vexec_isa.c, TC__VQA_). */
#define TC__RATIO_GATE_OPS(X) X(SIGMOID) X(SILU) X(GELU_TANH)

/* The compute instructions whose sum (or sum of squares) right after them
 * the executor takes as they store each vector (no pass that reads the
 * tile back): the values row kernels sum in practice (softmax's exp,
 * norms' centred values and means of sums and products).  Each costs an
 * extra loop per operand form, so the list stays short. */
#define TC__ACC_FUSED_BINARY(X) X(ADD) X(SUB) X(MUL) X(DIV)
TC__FN int tc__vins_fuses_acc(const tc__vins *in) {
    if (in->bu >= 0 || in->au >= 0) return 0;
    if (in->b < 0) return in->op == TC__OP_EXP;
#define TC__FA_(ID) in->op == TC__OP_##ID ||
    return in->c < 0 && (TC__ACC_FUSED_BINARY(TC__FA_) 0);
#undef TC__FA_
}

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
    int sums;                  /* takes a sum or sum of squares: its float
                                * partials round, so its tiles are capped
                                * at tc__krun_fold_span (max/min are exact) */
} tc__kstage;

typedef struct tc__kernel {
    int ndim, row0;
    int64_t shape[TC_MAX_DIMS];
    tc__kaccess *acc;          /* nacc of them, at most TC__VM_MAXACC (its
                                  own array; a kernel is small to keep)    */
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

/* Floats per register tile: the largest of 1024, 512, 256 whose tiles
 * all fit TC__VM_TILE_BUDGET (16 KiB, a third of a small L1 beside the
 * streams), since each instruction's dispatch is paid once per tile.  A
 * row kernel's row of up to TC__VM_ROW_TILE floats is one tile (the
 * power of two that holds it), so the executor runs it as a row held in
 * one tile (pre-decoded steps, sums folded in registers) where the fold
 * span allows: the register buffers such a row's code writes are few
 * (its values go to row buffers, the result or the row scalars). */
TC__FN int tc__kernel_tile(const tc__kernel *k) {
    int t = 4 * TC__VM_TILE, d;
    int64_t row = 1;
    for (d = k->row0; d < k->ndim; d++) row *= k->shape[d];
    if ((k->nslot > 0 || k->nstage > 1) && row > t && row <= TC__VM_ROW_TILE) {
        while (t < row) t *= 2;
        return t;
    }
    while (t > TC__VM_TILE && t * (k->nreg > 0 ? k->nreg : 1) > TC__VM_TILE_BUDGET) t /= 2;
    return t;
}

/* The register tile the executor runs k on when asked for `tile` floats
 * (max-autotune's choice, maybe from a damaged cache record): only the
 * sizes max-autotune tries, powers of two from TC__VM_TILE_MIN below the
 * heuristic's; 0 (the heuristic's) for any other. */
TC__FN int tc__kernel_tile_choice(const tc__kernel *k, int tile) {
    return tile >= TC__VM_TILE_MIN && tile < tc__kernel_tile(k) && (tile & (tile - 1)) == 0 ? tile : 0;
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
    v->bu = v->au = -1;
    v->a = (int16_t)a;
    v->b = (int16_t)b;
    v->c = (int16_t)c;
    v->as = v->at = -1;
    v->fz = 0;
    v->f0 = f0;
    v->f1 = f1;
    return 0;
}

/* The registers an instruction reads, as pointers to its fields (so a
 * pass can rename them); returns how many (at most 5). */
TC__FN int tc__vins_srcs(tc__vins *v, int16_t **src) {
    int n = 0;
    if (v->op == TC__V_STORE || v->op == TC__V_STOREL || v->op == TC__V_ACC) src[n++] = &v->b;
    else if (v->op < TC__OP_COUNT) {
        int16_t *f[5];
        int j;
        f[0] = &v->a, f[1] = &v->b, f[2] = &v->c, f[3] = &v->as, f[4] = &v->at;
        for (j = 0; j < 5; j++)
            if (*f[j] >= 0) src[n++] = f[j];
    }
    return n;
}

TC__FN void tc__kernel_free(tc__kernel *k) {
    if (!k) return;
    TC_FREE(k->code);
    TC_FREE(k->acc);
}

/* Whether code[i] is an accumulation the executor takes inside the loop
 * of the instruction computing its value (marked TC__FZ_ACC for tc__vm_tile_;
 * on the vector levels, in tiles of whole vectors): that instruction right
 * before it, or before its row buffer's store, and one tc__vins_fuses_acc
 * takes. */
TC__FN int tc__acc_as_stored(const tc__vins *code, int begin, int i) {
    const tc__vins *ac = &code[i];
    int j = i - 1;
    /* not SUMSQ_LO: beside a SUMSQ of the same value (its one use), a loop
     * of its own over the tile, as the executor's as-stored forms leave it out */
    if (ac->op != TC__V_ACC || (ac->c != TC__COMB_SUM && ac->c != TC__COMB_SUMSQ)) return 0;
    if (j > begin && code[j].op == TC__V_STOREL && code[j].b == ac->b) j--;
    return j >= begin && code[j].op < TC__OP_COUNT && code[j].dst == ac->b && tc__vins_fuses_acc(&code[j]);
}

/* The slot of the SUMSQ of the register SUMSQ_LO code[i] sums, earlier in
 * its stage code[begin, i), or -1. */
TC__FN int tc__sumsq_pair(const tc__vins *code, int begin, int i) {
    int j;
    for (j = i - 1; j >= begin; j--) {
        if (code[j].op == TC__V_ACC && code[j].c == TC__COMB_SUMSQ && code[j].b == code[i].b) return code[j].a;
        if (code[j].dst == code[i].b) break; /* the register's value begins here */
    }
    return -1;
}

/* Sets the TC__FZ_* marks of the stage code[begin, end), its final code
 * (after register allocation: the marks compare registers). */
TC__FN void tc__kernel_mark_fusions(tc__vins *code, int begin, int end) {
    int i;
    for (i = begin; i < end; i++) {
        tc__vins *in = &code[i];
        int local = i + 1 < end && code[i + 1].op == TC__V_STOREL && code[i + 1].b == in->dst, acc = i + (local ? 2 : 1);
        in->fz = 0;
        if (in->op >= TC__OP_COUNT) continue;
        if (local) in->fz |= TC__FZ_LOCAL;
        else if (i + 1 < end && code[i + 1].op == TC__V_STORE && code[i + 1].b == in->dst) in->fz |= TC__FZ_OUT;
        if (!(in->fz & TC__FZ_OUT) && acc < end && tc__acc_as_stored(code, begin, acc)) in->fz |= TC__FZ_ACC;
    }
}

/* Lets row buffers whose stages do not overlap share one buffer: a buffer
 * is free for another once the stage after its last reader begins (a
 * buffer is written by one stage and read by later ones, each stage a
 * whole pass over the row, so strictly later is enough).  softmax ->
 * layer_norm keeps three values of a row (the exps, the scaled sum, the
 * centred values) of which two are ever live together: two buffers, not
 * three, less of L1 that each row (and rows run in pairs) holds. */
TC__FN void tc__kernel_share_locals(tc__kernel *k) {
    int wr[TC__VM_MAXLOCAL], rd[TC__VM_MAXLOCAL], map[TC__VM_MAXLOCAL], busy[TC__VM_MAXLOCAL];
    int si, i, l, p, np = 0;
    for (l = 0; l < k->nlocal; l++) wr[l] = rd[l] = -1;
    for (si = 0; si < k->nstage; si++)
        for (i = k->stage[si].begin; i < k->stage[si].end; i++) {
            const tc__vins *in = &k->code[i];
            if (in->op == TC__V_STOREL && wr[in->a] < 0) wr[in->a] = si;
            if (in->op == TC__V_LOADL) rd[in->a] = si;
        }
    /* locals are numbered as their writers come (tc__fuse_reach), but
     * nothing here relies on it: each takes the first buffer free at its
     * writer's stage */
    for (si = 0; si < k->nstage; si++)
        for (l = 0; l < k->nlocal; l++) {
            if (wr[l] != si) continue;
            for (p = 0; p < np && busy[p] >= si; p++) {}
            if (p == np) np++;
            map[l] = p;
            busy[p] = rd[l] > si ? rd[l] : si;
        }
    for (l = 0; l < k->nlocal; l++)
        if (wr[l] < 0) return; /* a buffer no stage writes: left as it is */
    for (i = 0; i < k->ncode; i++)
        if (k->code[i].op == TC__V_STOREL || k->code[i].op == TC__V_LOADL) k->code[i].a = map[k->code[i].a];
    k->nlocal = np;
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
        const tc__kstage *stg = &k->stage[s];
        tc__text_printf(sb, "  stage %d (%s):\n", s, stg->scalar ? "once per row" : "over the row");
        for (i = stg->begin; i < stg->end; i++) {
            const tc__vins *v = &k->code[i];
            switch (v->op) {
            case TC__V_LOAD: tc__text_printf(sb, "    r%d = load in%d\n", v->dst, v->a); break;
            case TC__V_CONST: tc__text_printf(sb, "    r%d = %.9g\n", v->dst, v->f0); break;
            case TC__V_SLOT: tc__text_printf(sb, "    r%d = slot%d\n", v->dst, v->a); break;
            case TC__V_LOADL: tc__text_printf(sb, "    r%d = local%d\n", v->dst, v->a); break;
            case TC__V_STOREL: tc__text_printf(sb, "    local%d = r%d\n", v->a, v->b); break;
            case TC__V_STORE: tc__text_printf(sb, "    out%d = r%d\n", v->a, v->b); break;
            case TC__V_ACC:
                tc__text_printf(sb, "    slot%d %s= %sr%d%s%s%s\n", v->a, comb[TC__COMB_IS_SUM(v->c) ? 0 : v->c],
                                v->c == TC__COMB_SUMSQ ? "square(" : v->c == TC__COMB_SUMSQ_LO ? "square(2^-96*" : "", v->b,
                                v->c != TC__COMB_SUM && TC__COMB_IS_SUM(v->c) ? ")" : "",
                                k->slot_scale[v->a] != 1.0f ? " (then scaled)" : "",
                                tc__acc_as_stored(k->code, stg->begin, i) ? " (as stored)" : "");
                break;
            default:
                tc__text_printf(sb, "    r%d = %s(", v->dst, tc__vop_name(v->op));
                if (v->au >= 0) tc__text_printf(sb, "%s(", tc__vop_name(v->au));
                tc__text_printf(sb, "r%d", v->a);
                if (v->as >= 0) tc__text_printf(sb, "*r%d", v->as);
                if (v->at >= 0) tc__text_printf(sb, "+r%d", v->at);
                if (v->au >= 0) tc__text_printf(sb, ")");
                if (v->bu >= 0) tc__text_printf(sb, ", %s(r%d)", tc__vop_name(v->bu), v->b);
                else if (v->b >= 0) tc__text_printf(sb, ", r%d", v->b);
                if (v->c >= 0) tc__text_printf(sb, ", r%d", v->c);
                if (v->op == TC__OP_CLAMP || v->op == TC__OP_SOFTPLUS) tc__text_printf(sb, "; %g, %g", v->f0, v->f1);
                tc__text_printf(sb, ")\n");
            }
        }
    }
}

/* ---- simplification: affine prologues, reciprocals, sums of squares ---- */

/* What a stage's SSA value is, to the pass below. */
typedef struct tc__vval {
    int16_t x, s, t; /* x * s + t for non-uniform x and uniform s, t (-1: 1, -0); x < 0: not so */
    int16_t sq;      /* square(sq), read with no prologue; -1: not so         */
    int16_t sqlo;    /* square(sqlo * TC__SUMSQ_LO), no other prologue; -1: not */
    float cval;      /* a CONST instruction's register: its value (else 0)      */
    int uni;         /* uniform wherever it runs: constants, slots, ops of them */
    int cst;         /* uniform and of constants only (no row scalar)          */
    int kept;        /* stored, kept or accumulated: its pass stays anyway     */
} tc__vval;

typedef struct tc__vsimp {
    tc__kernel *k;
    tc__vval *v;
    int nvreg, oom;
} tc__vsimp;

/* A uniform instruction appended to the stage (computed once per tile). */
TC__FN int16_t tc__vsimp_uni(tc__vsimp *p, int op, int a, int b, float f0) {
    int d = p->nvreg++;
    if (tc__kernel_emit(p->k, op, d, a, b, -1, f0, 0) != 0) p->oom = 1;
    p->v[d].x = p->v[d].sq = -1;
    p->v[d].uni = 1;
    p->v[d].cst = (a < 0 || p->v[a].cst) && (b < 0 || p->v[b].cst);
    p->v[d].kept = 0;
    return (int16_t)d;
}

/* dst = op(x * s1 + t1, u), or u - (x * s1 + t1) when rev, or its negation
 * for NEG: an affine function of x again, whose s and t are computed from
 * s1, t1 and u once per tile. */
TC__FN void tc__vsimp_derive(tc__vsimp *p, int dst, int op, int rev, int16_t x, int16_t s1, int16_t t1, int16_t u) {
    tc__vval *d = &p->v[dst];
    int16_t s = s1, t = t1;
    if (op == TC__OP_ADD) t = t1 < 0 ? u : tc__vsimp_uni(p, TC__OP_ADD, t1, u, 0);
    else if (op == TC__OP_SUB && !rev) t = t1 < 0 ? tc__vsimp_uni(p, TC__OP_NEG, u, -1, 0) : tc__vsimp_uni(p, TC__OP_SUB, t1, u, 0);
    else if (op == TC__OP_MUL) {
        s = s1 < 0 ? u : tc__vsimp_uni(p, TC__OP_MUL, s1, u, 0);
        t = t1 < 0 ? -1 : tc__vsimp_uni(p, TC__OP_MUL, t1, u, 0);
    } else { /* NEG, or u - y */
        s = s1 < 0 ? tc__vsimp_uni(p, TC__V_CONST, -1, -1, -1.0f) : tc__vsimp_uni(p, TC__OP_NEG, s1, -1, 0);
        if (rev) t = t1 < 0 ? u : tc__vsimp_uni(p, TC__OP_SUB, u, t1, 0);
        else t = t1 < 0 ? -1 : tc__vsimp_uni(p, TC__OP_NEG, t1, -1, 0);
    }
    d->x = x;
    d->s = s;
    d->t = t;
}

/* One compute instruction: its operand a folded, then what it is noted. */
TC__FN void tc__vsimp_compute(tc__vsimp *p, tc__vins *in) {
    tc__vval *v = p->v;
    int op = in->op, bin = in->b >= 0 && in->c < 0;
    int comm = bin && (op == TC__OP_ADD || op == TC__OP_MUL || op == TC__OP_EQ || op == TC__OP_NE);
    if (comm && !v[in->b].uni && (v[in->a].uni || (v[in->a].x < 0 && v[in->b].x >= 0))) {
        int16_t tmp = in->a; /* the uniform operand second, a foldable one first */
        in->a = in->b;
        in->b = tmp;
    }
    if (in->as < 0 && in->at < 0 && v[in->a].x >= 0 && !v[in->a].kept) {
        const tc__vval *y = &v[in->a];
        in->as = y->s;
        in->at = y->t;
        in->a = y->x;
    }
    v[in->dst].uni = v[in->a].uni && (in->b < 0 || v[in->b].uni) && (in->c < 0 || v[in->c].uni);
    v[in->dst].cst = v[in->dst].uni && v[in->a].cst && (in->b < 0 || v[in->b].cst) && (in->c < 0 || v[in->c].cst);
    if (v[in->dst].uni) return;
    if (op == TC__OP_DIV && bin && v[in->b].uni) { /* x / u -> x * (1 / u): one division per tile */
        in->b = tc__vsimp_uni(p, TC__OP_DIV, tc__vsimp_uni(p, TC__V_CONST, -1, -1, 1.0f), in->b, 0);
        in->op = (int16_t)(op = TC__OP_MUL);
    }
    /* A row scalar (softmax's max) added to or subtracted from a value
     * folded from x (x * s + t) is not folded into it: the scalar came
     * from that value rounded, and x * s - m in one multiply-add is, for
     * the row's largest element, the product's rounding error instead of
     * 0 (half an ulp of m: past 88 for |m| > 1.5e9, where exp overflows and
     * the softmax row is NaN). */
    if (bin && (op == TC__OP_ADD || op == TC__OP_SUB || op == TC__OP_MUL) && v[in->b].uni &&
        (op == TC__OP_MUL || v[in->b].cst || (in->as < 0 && in->at < 0)))
        tc__vsimp_derive(p, in->dst, op, 0, in->a, in->as, in->at, in->b);
    else if (bin && op == TC__OP_SUB && v[in->a].uni) { /* u - y: a uniform a has no prologue */
        const tc__vval *y = &v[in->b];
        if (y->x >= 0 && (v[in->a].cst || (y->s < 0 && y->t < 0))) tc__vsimp_derive(p, in->dst, op, 1, y->x, y->s, y->t, in->a);
        else tc__vsimp_derive(p, in->dst, op, 1, in->b, -1, -1, in->a);
    } else if (op == TC__OP_NEG)
        tc__vsimp_derive(p, in->dst, op, 0, in->a, in->as, in->at, -1);
    if (in->as < 0 && in->at < 0 && (op == TC__OP_SQUARE || (op == TC__OP_MUL && in->a == in->b))) v[in->dst].sq = in->a;
    if (op == TC__OP_SQUARE && in->as >= 0 && in->at < 0 && v[in->as].cst && v[in->as].cval == TC__SUMSQ_LO)
        v[in->dst].sqlo = in->a;
}

/* Drops the instructions of code[begin, ncode) marked dead (TC__V_END). */
TC__FN void tc__kernel_compact(tc__kernel *k, int begin) {
    int i, w;
    for (i = w = begin; i < k->ncode; i++)
        if (k->code[i].op != TC__V_END) k->code[w++] = k->code[i];
    k->ncode = w;
}

/* Drops the instructions of code[begin, ncode) whose values nobody reads. */
TC__FN void tc__vsimp_dce(tc__kernel *k, int begin, int *uses) {
    int i, j, n;
    int16_t *src[5];
    for (i = begin; i < k->ncode; i++)
        for (j = 0, n = tc__vins_srcs(&k->code[i], src); j < n; j++) uses[*src[j]]++;
    for (i = k->ncode - 1; i >= begin; i--) {
        tc__vins *v = &k->code[i];
        if (v->dst < 0 || uses[v->dst] > 0) continue;
        for (j = 0, n = tc__vins_srcs(v, src); j < n; j++) uses[*src[j]]--;
        v->op = TC__V_END; /* dead */
    }
    tc__kernel_compact(k, begin);
}

#define TC__GATE_IS_(ID) op == TC__OP_##ID ||
TC__FN int tc__is_gate_op(int op) { return TC__GATE_OPS(TC__GATE_IS_) 0; }
TC__FN int tc__is_ratio_gate_op(int op) { return TC__RATIO_GATE_OPS(TC__GATE_IS_) 0; }
#undef TC__GATE_IS_

/* The instruction of code[begin, i) that defines register r, or NULL
 * (def: each register's defining instruction, -1 none: the code is SSA). */
static tc__vins *tc__vsimp_def(tc__kernel *k, const int *def, int i, int16_t r) {
    return r >= 0 && def[r] >= 0 && def[r] < i ? &k->code[def[r]] : NULL;
}

/* x * g(y), g a gate activation whose value nothing else reads: the
 * product reads y through g (tc__vins.bu) and g's own pass goes.  Then,
 * where x is a ratio gate h(z * s + t) read only here and g is none or a
 * ratio gate, the product reads z through h and its prologue too
 * (tc__vins.au), and h's pass goes. */
TC__FN void tc__vsimp_gate(tc__kernel *k, int begin, const int *uses, const tc__vval *val, int *def, int nvreg) {
    int i, side;
    for (i = 0; i < nvreg; i++) def[i] = -1;
    for (i = begin; i < k->ncode; i++)
        if (k->code[i].dst >= 0) def[k->code[i].dst] = i;
    for (i = begin; i < k->ncode; i++) {
        tc__vins *m = &k->code[i], *h;
        if (m->op != TC__OP_MUL || m->b < 0 || m->c >= 0 || m->a == m->b || val[m->dst].uni) continue;
        for (side = 0; side < 2; side++) {
            int16_t u = side ? m->a : m->b;
            tc__vins *g;
            /* operand a moves to b, where it would lose its prologue */
            if (side && (m->as >= 0 || m->at >= 0)) break;
            g = tc__vsimp_def(k, def, i, u);
            if (!g || !tc__is_gate_op(g->op) || g->as >= 0 || g->at >= 0 || uses[u] != 1 || val[g->a].uni) continue;
            if (side) m->a = m->b;
            m->b = g->a;
            m->bu = g->op;
            g->op = TC__V_END; /* read once, by the product: dead now */
            break;
        }
        if (m->as >= 0 || m->at >= 0 || (m->bu >= 0 && !tc__is_ratio_gate_op(m->bu))) continue;
        h = tc__vsimp_def(k, def, i, m->a);
        if (!h || !tc__is_ratio_gate_op(h->op) || uses[m->a] != 1 || val[h->a].uni) continue;
        m->a = h->a;
        m->as = h->as;
        m->at = h->at;
        m->au = h->op;
        h->op = TC__V_END;
    }
    tc__kernel_compact(k, begin);
}

/* Rewrites the SSA code of the stage being built, code[begin, ncode), with
 * *nvreg values so far, so the executor makes fewer passes over its tiles:
 * - a value that is an affine function x * s + t of one non-uniform value
 *   (+, -, * by constants or row scalars, negation, and chains of those) is
 *   folded into the instructions that read it as their operand a's
 *   prologue (one multiply-add per vector; the producer's own pass goes);
 * - division by a uniform value multiplies by its reciprocal;
 * - a sum of squares accumulates with multiply-adds (SUMSQ);
 * - a gate activation read once by a product is applied as the product
 *   reads it (tc__vins.bu), exactly as the two passes would round.
 * The fused forms round once where the graph rounds twice (x * s + t),
 * and x * (1 / u) is within an ulp of x / u: the reassociation a compiled
 * function's tolerance allows.  0, or -1 out of memory. */
TC__FN int tc__kernel_simplify(tc__kernel *k, int begin, int *nvreg) {
    int n = k->ncode - begin, cap = *nvreg + 4 * n + 4, i;
    tc__vins *old = (tc__vins *)tc__malloc(sizeof(tc__vins) * (size_t)(n > 0 ? n : 1));
    tc__vsimp p;
    int *uses = (int *)tc__malloc(sizeof(int) * (size_t)cap * 2);
    p.k = k;
    p.v = (tc__vval *)tc__malloc(sizeof(tc__vval) * (size_t)cap);
    p.nvreg = *nvreg;
    p.oom = !old || !uses || !p.v;
    if (!p.oom) {
        memcpy(old, k->code + begin, sizeof(tc__vins) * (size_t)n);
        k->ncode = begin;
        for (i = 0; i < cap; i++) {
            p.v[i].x = p.v[i].sq = p.v[i].sqlo = -1;
            p.v[i].uni = p.v[i].kept = p.v[i].cst = 0;
            p.v[i].cval = 0;
            uses[i] = 0;
        }
        for (i = 0; i < n; i++) /* folding a value that is kept saves no pass, and may cost one (a square) */
            if (old[i].op == TC__V_STORE || old[i].op == TC__V_STOREL || old[i].op == TC__V_ACC) p.v[old[i].b].kept = 1;
        for (i = 0; i < n && !p.oom; i++) {
            tc__vins in = old[i];
            if (in.op == TC__V_CONST || in.op == TC__V_SLOT) {
                p.v[in.dst].uni = 1;
                p.v[in.dst].cst = in.op == TC__V_CONST;
                p.v[in.dst].cval = in.f0;
            } else if (in.op == TC__V_ACC && in.c == TC__COMB_SUM && p.v[in.b].sq >= 0) {
                in.b = p.v[in.b].sq;
                in.c = TC__COMB_SUMSQ;
            } else if (in.op == TC__V_ACC && in.c == TC__COMB_SUM && p.v[in.b].sqlo >= 0) {
                in.b = p.v[in.b].sqlo;
                in.c = TC__COMB_SUMSQ_LO;
            } else if (in.op < TC__OP_COUNT) tc__vsimp_compute(&p, &in);
            if (tc__kernel_emit(k, in.op, in.dst, in.a, in.b, in.c, in.f0, in.f1) != 0) p.oom = 1;
            else {
                k->code[k->ncode - 1].as = in.as;
                k->code[k->ncode - 1].at = in.at;
            }
        }
        if (!p.oom) {
            tc__vsimp_dce(k, begin, uses);
            tc__vsimp_gate(k, begin, uses, p.v, uses + cap, p.nvreg);
        }
        *nvreg = p.nvreg;
    }
    TC_FREE(old);
    TC_FREE(uses);
    TC_FREE(p.v);
    return p.oom ? -1 : 0;
}
