/* The CPU executor's run-time state, shared by the per-ISA files
 * (vmath_isa.c, vexec_isa.c) and the executor (vexec.c): one thread's state
 * inside a kernel (tc__vst) and the pre-decoded steps of a row (tc__vstep).
 * The kernel IR they run is compiler/kernel.c's. */

#define TC__VPLAN_PF_STEP 4     /* lines per stream before each step (tc__vplan) */

/* tc__vst.dt flag of every access while rows run across lanes: the
 * executor's contiguous fast paths (dt == F32) miss it, and its slow paths
 * hand the access to the lane gather / scatter, so the common case tests
 * nothing more */
#define TC__VST_LANES 0x100

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
    /* the tile is a whole row of a row stage: its accumulations start at
     * the identity and end as row scalars (slot = fold * scale) in
     * registers, with no accumulator in memory to set up and read back */
    int fin;
    const int *slot_comb;
    const float *slot_scale;
    /* rows across lanes (TC__VM_LANE_ROW): lane r of every vector is row r
     * of a group of trn rows (lanes past trn repeat row 0 and are never
     * stored), a tile is trl columns of such vectors, and the row scalars
     * are vectors too (slotv, a lane per row); lp[a][r] is access a at the
     * start of lane r's row */
    int tr, trn, trl;
    char *w;                         /* the workspace it lies over           */
    float (*slotv)[16];              /* [TC__VM_MAXSLOT], the driver's       */
    char *(*lp)[16];                 /* [TC__VM_MAXACC]                      */
} tc__vst;

/* One step of a pre-decoded stage (tc__vplan, vexec.c): an instruction,
 * or a compute instruction with the row buffer / result store and the sum
 * it fuses with, with everything the tile interpreter finds out about it
 * at every tile of every row decided once per part of a launch: which
 * registers are uniform (each uniform value gets a vector of its own, and
 * constants are filled in once), where each operand is read (a fixed
 * buffer, or NULL: access pa[] at the row's pointer), where the result
 * goes, and what it fuses with.  Rows held in one tile repeat the same
 * decisions at every row; a row kernel's own work is a few passes over a
 * row, so deciding them at every tile is a large share of its work. */
enum { /* what a step does (the ISA's table of handlers, tc__vsteps_) */
    TC__VS_BCAST,    /* d <- access k's element, broadcast               */
    TC__VS_LOAD,     /* d <- access k's tile, gathered or converted      */
    TC__VS_TRLOAD,   /* d <- access k, rows across lanes                 */
    TC__VS_SLOT,     /* d <- slot k, broadcast                           */
    TC__VS_STOREL,   /* row buffer d <- operand a                        */
    TC__VS_STORE,    /* access k <- operand a                            */
    TC__VS_ACC,      /* accumulator k <- combine(operand a)              */
    TC__VS_COMPUTE,  /* d <- in(a, b, c), with its fused sum ac          */
    TC__VS_UNIFORM,  /* the same on uniform operands: one vector         */
    TC__VS_UBLOCK,   /* the n steps from here (SLOT, BCAST, UNIFORM) in one */
    TC__VS_COUNT
};
struct tc__vstep;
typedef void (*tc__vstep_fn)(const struct tc__vstep *step, tc__vst *s);
typedef struct tc__vstep {
    tc__vstep_fn fn;
    const tc__vins *in, *ac;         /* the instruction; its fused sum       */
    const float *p[3];               /* operands a, b, c (NULL: access pa)   */
    const float *sp, *tp;            /* operand a's prologue (NULL: none)    */
    float *d;                        /* result (NULL: access od's pointer)   */
    float *e;                        /* a uniform operand expanded here first */
    int pa[3], od;
    int sa, sb, sc;                  /* operand strides (0: uniform)         */
    int m, len;                      /* vectors and elements of the tile     */
    int k;                           /* the access, slot or row buffer       */
    int fin;                         /* as tc__vst.fin                       */
    int kind;                        /* TC__VS_*: what fn does               */
    int n;                           /* steps this one runs (a UBLOCK's run) */
    int pair;                        /* a SUMSQ_LO's: its SUMSQ's slot, or -1 */
} tc__vstep;

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
