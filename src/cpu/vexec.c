/* The built-in executor: runs a fused kernel (kernel.c) over its domain.
 * A launch resolves each access against the live tensor headers (inputs
 * move between calls), merges dims that every access walks contiguously,
 * then splits the work over the thread pool (one synchronisation per
 * kernel): pointwise kernels by element ranges, row kernels by rows.  Each
 * thread walks its part tile by tile and calls the ISA instance's tile
 * interpreter (vexec_isa.c).  No code is generated at run time. */

#ifndef TC__NT_STORE_BYTES
#define TC__NT_STORE_BYTES ((int64_t)8 << 20)
#endif

#ifdef TC__HAVE_VEXEC

typedef void (*tc__vm_tile_fn)(const tc__vins *code, int n, tc__vst *s, int len);
typedef double (*tc__vm_hred_fn)(const float *acc, int comb);
typedef void (*tc__vm_init_fn)(float *acc, int comb);
typedef void (*tc__vm_math_fn)(int op, const float *x, float *y, int64_t n, float p0, float p1);
typedef void (*tc__vm_flash_fn)(float *st, int64_t ld, int64_t nk, float *m, float *l, float *corr);

typedef struct tc__isa_impl {
    tc_isa isa;
    int lanes;                 /* floats per vector                         */
    tc__vm_tile_fn tile;
    tc__vm_hred_fn hred;
    tc__vm_math_fn math;
    tc__vm_init_fn init;
    tc__vm_flash_fn flash_softmax;
    const tc__vstep_fn *steps;  /* the pre-decoded steps' handlers (TC__VS_*) */
    int fuse_acc;              /* a sum taken as its value is stored (tc__vrun_acc_) */
} tc__isa_impl;

/* One row per level this build instantiates (TC__ISA_LEVELS). */
#define TC__ISA_IMPL_ROW_(level, sfx, lanes, needs)                                                            \
    {level, lanes, tc__vm_tile_##sfx, tc__vhreduce_##sfx, tc__vmath_##sfx, tc__vacc_init_##sfx,                \
     tc__vflash_softmax_##sfx, tc__vsteps_##sfx, tc__vacc_fused_##sfx},
static const tc__isa_impl tc__isa_impls[] = {TC__ISA_LEVELS(TC__ISA_IMPL_ROW_)};
#undef TC__ISA_IMPL_ROW_

/* The instance of a level that tc__isa_resolve chose (the lowest for any
 * other). */
TC__FN const tc__isa_impl *tc__isa_impl_of(tc_isa isa) {
    size_t i, lowest = 0;
    for (i = 0; i < sizeof tc__isa_impls / sizeof tc__isa_impls[0]; i++) {
        if (tc__isa_impls[i].isa == isa) return &tc__isa_impls[i];
        if ((int)tc__isa_impls[i].isa < (int)tc__isa_impls[lowest].isa) lowest = i;
    }
    return &tc__isa_impls[lowest];
}

/* A launch's view of the kernel: bases and strides per access over the
 * (coalesced) domain. */
typedef struct tc__krun {
    const tc__kernel *k;
    const tc__isa_impl *isa;
    int ndim, row0;            /* after merging dims                        */
    int rows;                  /* a row kernel (stages); else pointwise     */
    int64_t shape[TC_MAX_DIMS];
    int64_t st[TC__VM_MAXACC][TC_MAX_DIMS];
    char *base[TC__VM_MAXACC];
    int dt[TC__VM_MAXACC];
    int nt[TC__VM_MAXACC];
    int mem[TC__VM_MAXACC];    /* an input too large for the caches         */
    int any_mem;               /* some access is (tc__krun_arm_rows)        */
    int pf_streams;            /* a pointwise kernel fetches its inputs from
                                * memory ahead (tc__krun_arm_stream)     */
    int64_t rowlen;            /* elements in a row (product of row dims)  */
    int tile;                  /* floats per register tile                  */
    char *ws;                  /* per-thread workspace                      */
    size_t ws_bytes;
    int ws_next;               /* claimed workspace slots                   */
    int ws_slots;
} tc__krun;

/* Elements in one row of k (the product of its row dims). */
TC__FN int64_t tc__kernel_rowlen(const tc__kernel *k) {
    int64_t n = 1;
    int d;
    for (d = k->row0; d < k->ndim; d++) n *= k->shape[d];
    return n;
}

/* Bytes of one row buffer: the row rounded up to whole vectors, so the
 * last tile's partial vector stays inside (and 64-byte aligned). */
TC__FN size_t tc__row_buffer_bytes(int64_t rowlen) {
    return sizeof(float) * (size_t)((rowlen + 15) / 16 * 16);
}

/* Bytes of one local row buffer: a row, or for rows of at most
 * TC__VM_LANE_ROW a group of them, one per lane of the widest level. */
TC__FN size_t tc__local_bytes(int64_t rowlen) {
    return tc__row_buffer_bytes(rowlen <= TC__VM_LANE_ROW ? rowlen * 16 : rowlen);
}

/* Floats of one register's buffer: a tile, or for rows of at most
 * TC__VM_LANE_ROW a group's tile of them (a row per lane of the widest
 * level), whichever is larger. */
TC__FN size_t tc__reg_floats(int64_t rowlen, int tile) {
    size_t lanes = rowlen <= TC__VM_LANE_ROW ? (size_t)rowlen * 16 : 0;
    return lanes > (size_t)tile ? lanes : (size_t)tile;
}

/* Bytes of one thread state's registers, accumulators and local row
 * buffers (as tc__krun_state lays them out), registers of `tile` floats. */
TC__FN size_t tc__state_bytes(const tc__kernel *k, int rows, int64_t rowlen, int tile) {
    size_t reg = tc__reg_floats(rows ? rowlen : 0, tile);
    return sizeof(float) * (reg * (size_t)k->nreg + (size_t)TC__VM_ACCW * (size_t)k->nslot) +
           tc__local_bytes(rowlen) * (size_t)k->nlocal;
}

/* Workspace per thread: a row kernel's holds two states, for rows run in
 * pairs (tc__krun_rows_pair). */
TC__FN size_t tc__kernel_ws_bytes(const tc__kernel *k) {
    int rows = k->nslot > 0 || k->nstage > 1;
    return tc__state_bytes(k, rows, tc__kernel_rowlen(k), tc__kernel_tile(k)) * (rows ? 2 : 1) + TC__ALIGN;
}

/* Lays the thread state over workspace w (NULL: claim the next slot). */
TC__FN void tc__krun_state(tc__krun *kr, tc__vst *s, char *w) {
    int i;
    size_t tile = sizeof(float) * tc__reg_floats(kr->rows ? kr->rowlen : 0, kr->tile),
           local = tc__local_bytes(kr->rowlen);
    if (!w) {
        /* one slot per part: tc__kernel_run caps the parts at the slots */
        int slot = tc__atomic_fetch_add_int(&kr->ws_next, 1);
        w = kr->ws + (size_t)slot * kr->ws_bytes;
    }
    memset(s, 0, sizeof *s);
    s->w = w;
    s->slot_comb = kr->k->slot_comb;
    s->slot_scale = kr->k->slot_scale;
    for (i = 0; i < kr->k->nreg; i++, w += tile) s->buf[i] = (float *)w;
    for (i = 0; i < kr->k->nslot; i++, w += sizeof(float) * TC__VM_ACCW) s->acc[i] = (float *)w;
    for (i = 0; i < kr->k->nlocal; i++, w += local) s->local[i] = (float *)w;
    for (i = 0; i < kr->k->nacc; i++) {
        s->dt[i] = kr->dt[i];
        s->nt[i] = kr->nt[i];
    }
}

/* Points every access at domain index idx[0..ndim-1) + col along the last dim. */
TC__FN void tc__krun_point(const tc__krun *kr, tc__vst *s, const int64_t *idx, int64_t col) {
    int a, d, last = kr->ndim - 1;
    for (a = 0; a < kr->k->nacc; a++) {
        int64_t off = col * kr->st[a][last];
        for (d = 0; d < last; d++) off += idx[d] * kr->st[a][d];
        s->ptr[a] = kr->base[a] + off * (int64_t)tc__dtype_sizes[kr->dt[a]];
        s->stride[a] = kr->st[a][last];
    }
}

/* Whether access a's next step along outer dim `dim` needs no software
 * prefetch: it reads the same memory again (stride 0), or it starts where
 * the current row ends (one row dim, walked contiguously), which the
 * hardware's stream prefetcher already runs ahead of; fetching such rows
 * again by software cost softmax_ln 7-10% (in cache and at 4096 rows
 * alike) for no gain.  (Rows held in one tile are another matter:
 * tc__krun_arm_rows.) */
TC__FN int tc__krun_next_row_cached(const tc__krun *kr, int a, int dim) {
    int last = kr->ndim - 1;
    return kr->st[a][dim] == 0 ||
           (kr->row0 == last && dim == last - 1 && kr->st[a][last] == 1 && kr->st[a][dim] == kr->shape[last]);
}

/* Whether access a is prefetched `steps` along dim (dim < 0: along its own
 * stream): a contiguous input, and for an outer dim one whose next row is
 * not already on its way (tc__krun_next_row_cached). */
TC__FN int tc__krun_prefetches(const tc__krun *kr, int a, int dim) {
    return !kr->k->acc[a].store && kr->st[a][kr->ndim - 1] == 1 && (dim < 0 || !tc__krun_next_row_cached(kr, a, dim)) &&
           (kr->rows || kr->mem[a]);
}

/* Arms the prefetch of len elements (as many lines as len floats: the
 * widest element) of every contiguous input, `steps`
 * along domain dim `dim` past its current tile (dim < 0: along the stream
 * itself); the tile's instructions issue it a few lines at a time and
 * tc__vst_pf_rest what is left.  Only a row walked by several stages
 * takes it: going back to the row's start for each stage breaks the
 * hardware's stream, and long rows then wait on every stage's first
 * lines.  A stream walked once is the hardware prefetcher's best
 * case, and software lines on top of it only compete for the miss
 * buffers, but where non-temporal stores hold them (tc__krun_arm_stream). */
TC__FN void tc__krun_prefetch(const tc__krun *kr, tc__vst *s, int dim, int64_t steps, int len) {
    int a, lines = (int)(((size_t)len * sizeof(float) + 63) / 64);
    if (lines > s->pf_lines) s->pf_lines = lines;
    for (a = 0; a < kr->k->nacc && s->npf < TC__VM_MAXPF; a++) {
        int64_t esz = (int64_t)tc__dtype_sizes[s->dt[a]];
        if (!tc__krun_prefetches(kr, a, dim)) continue;
        s->pf[s->npf++] = s->ptr[a] + steps * (dim < 0 ? 1 : kr->st[a][dim]) * esz;
    }
}

/* Narrows the armed prefetch to part `part` of `nparts` of its lines: a
 * row kernel's stages share the next row's lines, so each issues a few and
 * the row is in cache when the first stage reaches it (all of it in the
 * first stage, which computes nothing to spread it over, was a burst the
 * miss buffers dropped). */
TC__FN void tc__vst_pf_part(tc__vst *s, int part, int nparts) {
    int lines = s->pf_lines;
    s->pf_next = lines * part / nparts;
    s->pf_lines = lines * (part + 1) / nparts;
}

/* Issues the lines of the armed prefetch the instructions did not. */
TC__FN void tc__vst_pf_rest(tc__vst *s) {
    tc__vst_pf_upto(s, s->pf_lines);
    s->npf = s->pf_next = s->pf_lines = 0;
}
#define TC__PREFETCH_TILES 2 /* how far a stream runs ahead */

/* Moves every access past the tile just run (len elements). */
TC__FN void tc__vst_advance(tc__vst *s, int nacc, int len) {
    int a;
    for (a = 0; a < nacc; a++) s->ptr[a] += s->stride[a] * (int64_t)len * (int64_t)tc__dtype_sizes[s->dt[a]];
}

/* idx[hi], idx[hi - 1], ..., idx[lo] from f, a flat index over those dims */
TC__FN void tc__krun_unravel(const tc__krun *kr, int64_t *idx, int64_t f, int lo, int hi) {
    int d;
    for (d = hi; d >= lo; d--) {
        idx[d] = f % kr->shape[d];
        f /= kr->shape[d];
    }
}

/* Arms the software fetch ahead of a pointwise kernel's inputs from
 * memory (kr->pf_streams) for the tile at t of a stretch of n elements
 * that starts at flat index b of the span [b, e), outer index idx:
 * TC__PREFETCH_TILES tiles further along the stretch while it lasts, or,
 * for a stretch no longer than that (a broadcast kept the rows from
 * merging), as many rows ahead, where that row is still in the span and
 * in the same outer index.  Returns the streams armed.
 *
 * Each stream is walked once, front to back, and the hardware prefetcher
 * keeps ahead of it alone, except where the result's non-temporal stores
 * hold the fill buffers the input's misses need (TC__CPU_NT_FILL: Intel's
 * cores, where the fetch wins; on AMD's, with separate write-combining
 * buffers, it only costs; docs/PERF.md has the figures). */
TC__FN int tc__krun_arm_stream(const tc__krun *kr, tc__vst *s, const int64_t *idx, int64_t b, int64_t e, int64_t t,
                               int64_t n) {
    int64_t ahead = (int64_t)kr->tile * TC__PREFETCH_TILES, inner = kr->shape[kr->ndim - 1], rows;
    int od = kr->ndim - 2, before = s->npf, len = (int)(n - t < kr->tile ? n - t : kr->tile);
    if (!kr->pf_streams) return 0;
    if (n - t > ahead) tc__krun_prefetch(kr, s, -1, ahead, len);
    else if (t == 0 && od >= 0) {
        rows = (ahead + inner - 1) / inner;
        if (idx[od] + rows < kr->shape[od] && b + rows * inner + n <= e) tc__krun_prefetch(kr, s, od, rows, len);
    }
    return s->npf - before;
}

/* Elements [b, e) of the flattened domain of a pointwise kernel, a tile
 * at a time. */
TC__FN void tc__krun_span(tc__krun *kr, tc__vst *s, int64_t b, int64_t e) {
    int64_t idx[TC_MAX_DIMS], inner = kr->shape[kr->ndim - 1];
    const tc__kstage *stg = &kr->k->stage[0];
    while (b < e) {
        int64_t col = b % inner, n = inner - col, t;
        tc__krun_unravel(kr, idx, b / inner, 0, kr->ndim - 2);
        if (n > e - b) n = e - b;
        tc__krun_point(kr, s, idx, col);
        for (t = 0; t < n; t += kr->tile) {
            int len = (int)(n - t < kr->tile ? n - t : kr->tile);
            int armed = tc__krun_arm_stream(kr, s, idx, b, e, t, n);
            kr->isa->tile(kr->k->code + stg->begin, stg->end - stg->begin, s, len);
            if (armed) tc__vst_pf_rest(s);
            tc__vst_advance(s, kr->k->nacc, len);
        }
        b += n;
    }
}

/* Non-temporal stores are weakly ordered: fenced before the part ends. */
TC__FN void tc__store_fence(void) {
#if defined(TC__HAVE_VEXEC_X86)
    _mm_sfence();
#endif
}

TC__FN void tc__krun_pointwise(void *arg, int64_t b, int64_t e) {
    tc__krun *kr = (tc__krun *)arg;
    tc__vst s;
    tc__krun_state(kr, &s, NULL);
    tc__krun_span(kr, &s, b, e);
    tc__store_fence();
}

/* Values a row stage sums in float before it folds them into a double:
 * 64 per accumulator lane (an accumulator is 4 vectors of the level's
 * lanes).  A tile is summed whole before the fold, so a stage that sums
 * walks tiles of at most this many.  A 1024-float tile is 16 values a lane
 * at AVX-512, but the scalar level's 4 lanes summed 256 each, and a
 * layer_norm of 1100 values near 3167 (spread 3) came out 2.3e-3 from a
 * double reference, where eager's 8 lanes of 128 gave 9e-4 (fuzz seed
 * 33450). */
TC__FN int tc__krun_fold_span(const tc__krun *kr) { return 64 * 4 * kr->isa->lanes; }

/* Whether some stage of k sums (tc__kstage.sums). */
TC__FN int tc__kernel_sums(const tc__kernel *k) {
    int si, any = 0;
    for (si = 0; si < k->nstage; si++) any |= k->stage[si].sums;
    return any;
}

/* Adds the float accumulators of slots used[0..nused) into dacc and
 * restarts them at their combiner's identity. */
TC__FN void tc__krun_fold(const tc__krun *kr, tc__vst *s, const int *used, int nused, double *dacc) {
    const tc__kernel *k = kr->k;
    int q;
    for (q = 0; q < nused; q++) {
        int sl = used[q];
        dacc[sl] = tc__comb_apply(dacc[sl], kr->isa->hred(s->acc[sl], k->slot_comb[sl]), k->slot_comb[sl]);
        kr->isa->init(s->acc[sl], k->slot_comb[sl]);
    }
}

/* One row stage over the row at outer index idx[0..row0): every tile of
 * every row dim; the stage's accumulators end as row scalars (slots),
 * folded into doubles every tc__krun_fold_span values.  Stage `part` of
 * the row's `nparts` also fetches its share of the next row along the
 * innermost outer dim (when next_row is set). */
TC__FN void tc__krun_row_stage(const tc__krun *kr, tc__vst *s, int64_t *idx, const tc__kstage *stg, int part,
                               int nparts, float *const *lbase, int next_row) {
    const tc__kernel *k = kr->k;
    int64_t inner = kr->shape[kr->ndim - 1], nrows = 1, r, since = 0;
    int tile = kr->tile, span = tc__krun_fold_span(kr);
    double dacc[TC__VM_MAXSLOT];
    int used[TC__VM_MAXSLOT], nused = 0, q, i, d;
    if (tile > span && stg->sums) tile = span;
    for (d = kr->row0; d < kr->ndim - 1; d++) nrows *= kr->shape[d];
    /* a row in one tile folds its accumulators in registers (tc__vst.fin) */
    s->fin = nrows == 1 && inner > 0 && inner <= tile;
    for (i = stg->begin; i < stg->end && !s->fin; i++)
        if (k->code[i].op == TC__V_ACC) {
            int sl = k->code[i].a;
            used[nused++] = sl;
            kr->isa->init(s->acc[sl], k->slot_comb[sl]);
            dacc[sl] = tc__comb_identity(k->slot_comb[sl]);
        }
    for (r = 0; r < nrows; r++) {
        int64_t t;
        tc__krun_unravel(kr, idx, r, kr->row0, kr->ndim - 2);
        tc__krun_point(kr, s, idx, 0);
        for (t = 0; t < inner; t += tile) {
            int len = (int)(inner - t < tile ? inner - t : tile);
            /* the first of several stages fetches ahead (tc__krun_prefetch);
             * a single one (a sum) is one stream, the hardware's to fetch */
            int ahead = part == 0 && nparts > 1 && inner - t > (int64_t)tile * TC__PREFETCH_TILES;
            for (i = 0; i < k->nlocal; i++) s->local[i] = lbase[i] + r * inner + t;
            if (ahead) tc__krun_prefetch(kr, s, -1, (int64_t)tile * TC__PREFETCH_TILES, tile);
            if (next_row) {
                tc__krun_prefetch(kr, s, kr->row0 - 1, 1, len);
                if (!ahead) tc__vst_pf_part(s, part, nparts);
            }
            /* folded before a tile that would take the float sums past
             * the span (short rows: several to a span, never more) */
            if (nused && since + len > span) {
                tc__krun_fold(kr, s, used, nused, dacc);
                since = 0;
            }
            kr->isa->tile(k->code + stg->begin, stg->end - stg->begin, s, len);
            tc__vst_pf_rest(s);
            tc__vst_advance(s, k->nacc, len);
            since += len;
        }
    }
    tc__krun_fold(kr, s, used, nused, dacc);
    for (q = 0; q < nused; q++) s->slot[used[q]] = (float)(dacc[used[q]] * (double)k->slot_scale[used[q]]);
    s->fin = 0;
}

/* Rows shorter than this many vectors run across lanes; longer ones, one
 * row at a time (two at once, tc__krun_rows_pair) in their vectors: from
 * about 6 vectors on a row's own vectors are enough to hide its stages'
 * latencies, and across lanes costs the transposes (the crossover, measured
 * at AVX-512 and AVX2, is in docs/PERF.md). */
#define TC__LANE_VECTORS 6

/* Whether rows of n elements (the row dims merged into one) run a
 * vector's lanes' worth at a time (tc__vst.tr): rows shorter than
 * TC__LANE_VECTORS vectors, a group's tile of n vectors fits a register,
 * and its row buffers the local ones. */
TC__FN int tc__krun_lanes(const tc__krun *kr, int64_t nrows, int64_t n) {
    int w = kr->isa->lanes;
    return w >= 4 && nrows == 1 && n > 0 && n <= TC__VM_LANE_ROW && n < TC__LANE_VECTORS * w &&
           (size_t)(n * w) <= tc__reg_floats(kr->rowlen, kr->tile) && kr->rowlen == n;
}

#define TC__FETCH_AHEAD_BYTES 8192 /* how far ahead a one-tile row kernel fetches rows */
#define TC__FETCH_MIN_BYTES 2048   /* the least a step fetches ahead */

/* Arms (tc__vst.pf; tc__vst_pf_rest issues it) the fetch of rows
 * [o + ahead, o + ahead + count) of every input read from memory
 * (tc__krun.mem) that lies along the one outer dim in rows of its own,
 * at[a] being access a at row o's start, where those rows are the part's
 * (before e) and, for several, one span; returns the inputs armed.  A row
 * kernel walks each row several times in L1, so the hardware's stream
 * prefetcher, which follows the first walk only, stops ahead of it and the
 * next row's lines arrive only as its first stage asks for them; fetched
 * after a row's first stage, they come in while its other stages compute.
 * Short rows gained nothing from it, so a step fetches
 * TC__FETCH_MIN_BYTES or more.  For an input in the caches it is only
 * cost, so it is left to inputs of TC__NT_STORE_BYTES or more.  Every
 * input gets as many lines as the narrowest's rows have, so that none
 * runs past its own. */
TC__FN int tc__krun_arm_rows(const tc__krun *kr, tc__vst *s, char *const *at, int64_t o, int64_t e, int64_t ahead,
                             int count) {
    int a, last = kr->ndim - 1;
    /* checked first: a kernel of inputs in the caches pays one test a row */
    if (!kr->any_mem || kr->row0 != 1 || o + ahead + count > e) return 0;
    for (a = 0; a < kr->k->nacc && s->npf < TC__VM_MAXPF; a++) {
        int64_t esz = (int64_t)tc__dtype_sizes[kr->dt[a]], lines = count * kr->shape[last] * esz / 64;
        if (!kr->mem[a] || kr->st[a][last] != 1 || kr->st[a][0] == 0 || lines * 64 < TC__FETCH_MIN_BYTES ||
            (count > 1 && kr->st[a][0] != kr->shape[last]))
            continue;
        s->pf[s->npf++] = at[a] + ahead * kr->st[a][0] * esz;
        if (s->npf == 1 || lines < s->pf_lines) s->pf_lines = (int)lines;
    }
    return s->npf;
}

/* A part's pre-decoded stages (tc__vstep): step[begin[si]..begin[si + 1])
 * run stage si, u[] holds the uniform values (a vector each). */
#define TC__VPLAN_MAXSTEP 64
#define TC__VPLAN_MAXU 32
typedef struct tc__vplan {
    tc__vstep step[TC__VPLAN_MAXSTEP];
    int begin[TC__VM_MAXSTAGE + 1];
    float u[TC__VPLAN_MAXU][16];
} tc__vplan;

/* Tests set it to run every kernel through the interpreter; a user build
 * (no TCOMPILE_TESTING) has a constant 0 and the checks fold away. */
#ifdef TCOMPILE_TESTING
static int tc__vplan_off = 0;
#else
#define tc__vplan_off 0
#endif

/* What a register holds while a stage is pre-decoded: a fixed buffer
 * (p), or else access `pa` at the row's pointer; uniform (one vector). */
typedef struct tc__vreg {
    const float *p;
    int pa, uni, set;
} tc__vreg;

/* Operand j of step reads register r (0: no such register in the
 * stage, which the interpreter alone runs). */
TC__FN int tc__vplan_operand(tc__vstep *step, int j, const tc__vreg *reg, int r) {
    if (!reg[r].set) return 0;
    step->p[j] = reg[r].p;
    step->pa[j] = reg[r].pa;
    return 1;
}

/* Steps of a store of register r (STOREL, STORE, ACC): a uniform one is
 * expanded into its tile buffer first, and reads as that from then on (as
 * tc__vexpand_ leaves it). */
TC__FN int tc__vplan_store_src(tc__vstep *step, const tc__vst *s, tc__vreg *reg, int r) {
    if (!tc__vplan_operand(step, 0, reg, r)) return 0;
    if (reg[r].uni) {
        step->e = s->buf[r];
        reg[r].p = s->buf[r];
        reg[r].uni = 0;
    }
    return 1;
}

/* Step does `kind` (TC__VS_*) with the ISA's handler of it. */
TC__FN void tc__vplan_kind(tc__vstep *step, const tc__vstep_fn *fn, int kind) {
    step->kind = kind;
    step->fn = fn[kind];
}

/* Each run of two or more uniform steps in a stage (a slot's or an
 * element's broadcast, an op on uniforms: a row's scalars on their way
 * from one stage's sum to the next stage's operands) becomes one step
 * that runs them in turn (TC__VS_UBLOCK), one call and one prefetch
 * check for the run rather than one a step. */
TC__FN void tc__vplan_blocks(tc__vplan *pl, int nstage, const tc__vstep_fn *fn) {
    int si, i, j;
    for (si = 0; si < nstage; si++)
        for (i = pl->begin[si]; i < pl->begin[si + 1]; i = j > i ? j : i + 1) {
            for (j = i; j < pl->begin[si + 1]; j++) {
                int kd = pl->step[j].kind;
                if (kd != TC__VS_SLOT && kd != TC__VS_BCAST && kd != TC__VS_UNIFORM) break;
            }
            if (j - i < 2) continue;
            pl->step[i].n = j - i;
            pl->step[i].fn = fn[TC__VS_UBLOCK];
        }
}

/* Step of instruction in, nothing decided yet: field by field, since
 * a memset of the step compiles to a string store whose start-up cost is
 * a visible share of a short row kernel's plan build. */
TC__FN void tc__vstep_init(tc__vstep *step, const tc__vins *in, int m, int len, int fin) {
    int j;
    step->fn = NULL;
    step->in = in;
    step->ac = NULL;
    step->pair = -1;
    for (j = 0; j < 3; j++) {
        step->p[j] = NULL;
        step->pa[j] = 0;
    }
    step->sp = step->tp = NULL;
    step->d = step->e = NULL;
    step->od = -1;
    step->sa = step->sb = step->sc = 0;
    step->m = m;
    step->len = len;
    step->k = in->a;
    step->fin = fin;
    step->kind = 0;
    step->n = 1;
}

/* Pre-decodes k's stages for thread state s, stage si over tiles of
 * len[si] elements, decided exactly as tc__vm_tile_ decides at each tile
 * (the same uniform registers, fusions and paths: the steps compute the
 * same bits).  s's row buffers must stay where they are while it runs.
 * Returns 0 where it cannot (too many steps or uniform values, a register
 * read before the stage writes it): the interpreter runs those. */
TC__FN int tc__vplan_build(const tc__krun *kr, const tc__vst *s, tc__vplan *pl, const int *len) {
    const tc__kernel *k = kr->k;
    const tc__vstep_fn *fn = kr->isa->steps;
    int w = kr->isa->lanes, last = kr->ndim - 1, n = 0, nu = 0, si, i, j;
    for (si = 0; si < k->nstage; si++) {
        const tc__kstage *stg = &k->stage[si];
        tc__vreg reg[TC__VM_MAXREG];
        int tl = len[si], m = (tl + w - 1) / w, whole = tl % w == 0;
        for (j = 0; j < k->nreg; j++) {
            reg[j].p = NULL;
            reg[j].pa = reg[j].uni = reg[j].set = 0;
        }
        pl->begin[si] = n;
        for (i = stg->begin; i < stg->end; i++) {
            const tc__vins *in = &k->code[i];
            tc__vstep *step = &pl->step[n];
            tc__vreg *rd = in->dst >= 0 ? &reg[in->dst] : NULL;
            int a = in->a, emit = 1;
            if (n == TC__VPLAN_MAXSTEP || nu == TC__VPLAN_MAXU) return 0;
            tc__vstep_init(step, in, m, tl, !stg->scalar);
            switch (in->op) {
            case TC__V_LOAD: {
                int64_t stride = kr->st[a][last];
                rd->set = 1;
                rd->uni = stride == 0;
                rd->pa = a;
                if (s->dt[a] & TC__VST_LANES) { /* a lane per row: a vector of row values when uniform */
                    tc__vplan_kind(step, fn, TC__VS_TRLOAD);
                    step->d = rd->uni ? pl->u[nu++] : s->buf[in->dst];
                } else if (rd->uni) {
                    tc__vplan_kind(step, fn, TC__VS_BCAST);
                    step->d = pl->u[nu++];
                } else if (s->dt[a] == TC_F32 && stride == 1 && whole) {
                    emit = 0; /* read in place */
                } else {
                    tc__vplan_kind(step, fn, TC__VS_LOAD);
                    step->d = s->buf[in->dst];
                }
                rd->p = step->d;
                break;
            }
            case TC__V_CONST:
                for (j = 0; j < 16; j++) pl->u[nu][j] = in->f0;
                rd->p = pl->u[nu++];
                rd->uni = rd->set = 1;
                emit = 0;
                break;
            case TC__V_SLOT:
                tc__vplan_kind(step, fn, TC__VS_SLOT);
                rd->p = step->d = pl->u[nu++];
                rd->uni = rd->set = 1;
                break;
            case TC__V_LOADL:
                rd->p = s->local[a];
                rd->uni = 0;
                rd->set = 1;
                emit = 0;
                break;
            case TC__V_STOREL:
            case TC__V_STORE:
            case TC__V_ACC:
                if (!tc__vplan_store_src(step, s, reg, in->b)) return 0;
                tc__vplan_kind(step, fn, in->op == TC__V_STOREL ? TC__VS_STOREL : in->op == TC__V_STORE ? TC__VS_STORE : TC__VS_ACC);
                if (in->op == TC__V_STOREL) step->d = s->local[a];
                if (in->op == TC__V_ACC && in->c == TC__COMB_SUMSQ_LO) step->pair = tc__sumsq_pair(k->code, stg->begin, i);
                break;
            default: {
                int uni;
                if (!tc__vplan_operand(step, 0, reg, a) || (in->b >= 0 && !tc__vplan_operand(step, 1, reg, in->b)) ||
                    (in->c >= 0 && !tc__vplan_operand(step, 2, reg, in->c)) ||
                    (in->as >= 0 && (!reg[in->as].set || !reg[in->as].uni)) ||
                    (in->at >= 0 && (!reg[in->at].set || !reg[in->at].uni)))
                    return 0;
                tc__vplan_kind(step, fn, TC__VS_COMPUTE);
                step->sp = in->as >= 0 ? reg[in->as].p : NULL;
                step->tp = in->at >= 0 ? reg[in->at].p : NULL;
                uni = reg[a].uni && (in->b < 0 || reg[in->b].uni) && (in->c < 0 || reg[in->c].uni);
                step->sa = reg[a].uni ? 0 : w;
                step->sb = in->b >= 0 && reg[in->b].uni ? 0 : w;
                step->sc = in->c >= 0 && reg[in->c].uni ? 0 : w;
                step->d = s->buf[in->dst];
                if (uni) {
                    tc__vplan_kind(step, fn, TC__VS_UNIFORM);
                    step->m = 1;
                    step->d = pl->u[nu++];
                } else if (in->fz & TC__FZ_LOCAL) {
                    step->d = s->local[in[1].a];
                    i++;
                } else if ((in->fz & TC__FZ_OUT) && whole && s->dt[in[1].a] == TC_F32 && kr->st[in[1].a][last] == 1) {
                    step->d = NULL;
                    step->od = in[1].a;
                    i++;
                }
                /* a sum of the value next: taken as it is stored */
                if (kr->isa->fuse_acc && !uni && whole && (in->fz & TC__FZ_ACC)) {
                    step->ac = &k->code[i + 1];
                    i++;
                }
                rd->set = 1;
                rd->uni = uni;
                rd->p = step->d;
                rd->pa = step->od;
                break;
            }
            }
            n += emit;
        }
    }
    pl->begin[k->nstage] = n;
    tc__vplan_blocks(pl, k->nstage, fn);
    return 1;
}

/* Runs steps [0, n) of a plan, issuing a few lines of the armed prefetch
 * (the next rows, tc__krun_arm_rows) after each step, as the interpreter
 * does at each instruction. */
TC__FN void tc__vplan_run(const tc__vstep *step, int n, tc__vst *s) {
    const tc__vstep *end = step + n;
    for (; step < end; step += step->n) {
        step->fn(step, s);
        if (s->pf_next < s->pf_lines) tc__vst_pf_upto(s, s->pf_next + TC__VPLAN_PF_STEP);
    }
}

/* Rows [b, e) a group of lanes at a time: lane r of every vector walks
 * row o + r, each stage runs once per group over its n columns, and the
 * row scalars are vectors of a value per row. */
TC__FN void tc__krun_rows_lanes(const tc__krun *kr, tc__vst *s, int64_t *idx, int64_t b, int64_t e) {
    const tc__kernel *k = kr->k;
    int w = kr->isa->lanes, n = (int)kr->shape[kr->ndim - 1], si, d, r, a;
    int64_t o;
    /* here, not in tc__vst: the state of every other kernel stays small */
    float slotv[TC__VM_MAXSLOT][16];
    char *lp[TC__VM_MAXACC][16];
    s->slotv = slotv;
    s->lp = lp;
    tc__vplan pl;
    int len[TC__VM_MAXSTAGE], planned;
    for (a = 0; a < k->nacc; a++) s->dt[a] |= TC__VST_LANES;
    for (si = 0; si < k->nstage; si++) len[si] = (k->stage[si].scalar ? 1 : n) * w;
    planned = e - b > w && !tc__vplan_off && tc__vplan_build(kr, s, &pl, len);
    for (d = kr->row0; d < kr->ndim - 1; d++) idx[d] = 0; /* size-1 row dims */
    tc__krun_unravel(kr, idx, b, 0, kr->row0 - 1);
    s->tr = 1;
    for (o = b; o < e; o += w) {
        s->trn = (int)(e - o < w ? e - o : w);
        for (r = 0; r < w; r++) {
            if (r < s->trn) {
                tc__krun_point(kr, s, idx, 0);
                for (d = kr->row0 - 1; d >= 0 && ++idx[d] == kr->shape[d]; d--) idx[d] = 0;
            }
            for (a = 0; a < k->nacc; a++) s->lp[a][r] = r < s->trn ? s->ptr[a] : s->lp[a][0];
        }
        for (si = 0; si < k->nstage; si++) {
            const tc__kstage *stg = &k->stage[si];
            s->fin = !stg->scalar;
            s->trl = stg->scalar ? 1 : n;
            if (planned) tc__vplan_run(pl.step + pl.begin[si], pl.begin[si + 1] - pl.begin[si], s);
            else kr->isa->tile(k->code + stg->begin, stg->end - stg->begin, s, s->trl * w);
            if (si == 0) { /* the next group of w rows, as one span */
                char *g0[TC__VM_MAXACC];
                for (a = 0; a < k->nacc; a++) g0[a] = s->lp[a][0];
                tc__krun_arm_rows(kr, s, g0, o, e, w, w);
            }
        }
        tc__vst_pf_rest(s); /* what the stages left (tc__krun_rows_one_tile) */
    }
    for (a = 0; a < k->nacc; a++) s->dt[a] &= ~TC__VST_LANES;
    s->tr = s->fin = 0;
    s->slotv = NULL;
    s->lp = NULL;
}

/* Tests set it to run rows one at a time (tc__krun_rows_pair), and read
 * how many parts ran rows in pairs (TC__VPAIR_COUNTED); a user build has
 * neither the switch nor the count. */
#ifdef TCOMPILE_TESTING
static int tc__vpair_off = 0;
static int tc__vpair_parts = 0;
#define TC__VPAIR_COUNTED() (void)tc__atomic_fetch_add_int(&tc__vpair_parts, 1)
#else
#define tc__vpair_off 0
#define TC__VPAIR_COUNTED() ((void)0)
#endif
/* The most bytes of row buffers and input rows two rows in flight may
 * hold: past it (rows of 768 floats and more from a cold cache) pairs were
 * slower than single rows.  Not L1's room alone: with the row buffers
 * shared (tc__kernel_share_locals) they were as much slower, and fetching
 * two pairs ahead changed nothing (docs/PERF.md). */
#define TC__PAIR_BYTES 16384

/* Rows [o, e) along the one outer dim (s pointed at row o) two at a time,
 * each in a state and plan of its own (the second state in the other half
 * of the thread's workspace), their stages interleaved: row o's stage,
 * then row o + 1's.  Each stage boundary of a row is a chain of latencies
 * nothing else in that row can overlap (the sum's fold, its broadcast,
 * the ops on the row scalar, before the next stage's first vector); here
 * the other row computes while it runs.  Returns the first row not run
 * (o itself where the second plan cannot be built). */
TC__FN int64_t tc__krun_rows_pair(const tc__krun *kr, tc__vst *s, const tc__vplan *pl, const int *len, int64_t o,
                                  int64_t e, int64_t ahead, const int64_t *rstep) {
    const tc__kernel *k = kr->k;
    tc__vst s2;
    tc__vplan pl2;
    int si, a;
    tc__krun_state((tc__krun *)kr, &s2, s->w + tc__state_bytes(k, kr->rows, kr->rowlen, kr->tile));
    if (!tc__vplan_build(kr, &s2, &pl2, len)) return o;
    for (a = 0; a < k->nacc; a++) s2.stride[a] = s->stride[a];
    TC__VPAIR_COUNTED();
    for (; o + 1 < e; o += 2) {
        for (a = 0; a < k->nacc; a++) s2.ptr[a] = s->ptr[a] + rstep[a];
        for (si = 0; si < k->nstage; si++) {
            tc__vplan_run(pl->step + pl->begin[si], pl->begin[si + 1] - pl->begin[si], s);
            tc__vplan_run(pl2.step + pl2.begin[si], pl2.begin[si + 1] - pl2.begin[si], &s2);
            /* the next pair, as one span where the rows are one */
            if (si == 0 && !tc__krun_arm_rows(kr, s, s->ptr, o, e, ahead, 2))
                tc__krun_arm_rows(kr, s, s->ptr, o, e, ahead, 1);
        }
        tc__vst_pf_rest(s);
        /* not past the part's last row: that address may lie outside the tensor */
        if (o + 2 < e)
            for (a = 0; a < k->nacc; a++) s->ptr[a] += 2 * rstep[a];
    }
    return o;
}

/* Rows [b, e) each held in one tile (one row dim): the accesses are
 * pointed at a row once and every stage starts from there, its sums folded
 * in registers (tc__vst.fin), with none of tc__krun_row_stage's walk over
 * row dims and tiles, which at rows of 256 floats took a sixth of the time. */
TC__FN void tc__krun_rows_one_tile(const tc__krun *kr, tc__vst *s, int64_t *idx, int64_t b, int64_t e) {
    const tc__kernel *k = kr->k;
    int n = (int)kr->shape[kr->ndim - 1], si, d, a;
    int64_t rstep[TC__VM_MAXACC];
    /* rows this far ahead of the one computing (4 to 32 KB ahead measured
     * alike at rows of 512 and 1024 floats) */
    int64_t o = b, ahead = n > 0 ? TC__FETCH_AHEAD_BYTES / ((int64_t)n * (int64_t)sizeof(float)) : 1;
    tc__vplan pl;
    int len[TC__VM_MAXSTAGE], planned;
    if (ahead < 1) ahead = 1;
    for (si = 0; si < k->nstage; si++) len[si] = k->stage[si].scalar ? 1 : n;
    planned = e - b > 1 && !tc__vplan_off && tc__vplan_build(kr, s, &pl, len);
    for (d = kr->row0; d < kr->ndim - 1; d++) idx[d] = 0; /* size-1 row dims */
    tc__krun_unravel(kr, idx, b, 0, kr->row0 - 1);
    for (a = 0; a < k->nacc; a++) rstep[a] = kr->st[a][0] * (int64_t)tc__dtype_sizes[kr->dt[a]];
    /* every stage starts from the pointers set here: the tile interpreter
     * reads s->ptr and never moves it.  Along one outer dim they step by
     * its strides; else they are pointed from the row's index. */
    tc__krun_point(kr, s, idx, 0);
    if (planned && !tc__vpair_off && kr->row0 == 1 && e - b >= 4 &&
        2 * tc__row_buffer_bytes(n) * (size_t)(k->nlocal + 1) <= TC__PAIR_BYTES &&
        2 * tc__state_bytes(k, kr->rows, kr->rowlen, kr->tile) + TC__ALIGN <= kr->ws_bytes)
        o = tc__krun_rows_pair(kr, s, &pl, len, b, e, ahead, rstep);
    for (; o < e; o++) {
        /* the next rows' fetch is armed after the first stage, and issued
         * a few lines at each step or instruction of the rest: in one burst
         * it overruns the miss buffers, and spread evenly over every step it
         * comes too late for the next row's first stage */
        if (planned) { /* the steps know their stage's fin */
            tc__vplan_run(pl.step, pl.begin[1], s);
            tc__krun_arm_rows(kr, s, s->ptr, o, e, ahead, 1);
            tc__vplan_run(pl.step + pl.begin[1], pl.begin[k->nstage] - pl.begin[1], s);
        } else {
            for (si = 0; si < k->nstage; si++) {
                const tc__kstage *stg = &k->stage[si];
                s->fin = !stg->scalar;
                kr->isa->tile(k->code + stg->begin, stg->end - stg->begin, s, len[si]);
                if (si == 0) tc__krun_arm_rows(kr, s, s->ptr, o, e, ahead, 1);
            }
        }
        tc__vst_pf_rest(s);
        if (kr->row0 == 1) {
            if (o + 1 < e)
                for (a = 0; a < k->nacc; a++) s->ptr[a] += rstep[a];
        } else {
            for (d = kr->row0 - 1; d >= 0 && ++idx[d] == kr->shape[d]; d--) idx[d] = 0;
            if (o + 1 < e) tc__krun_point(kr, s, idx, 0);
        }
    }
    s->fin = 0;
}

/* Row kernels: rows [b, e) of the outer dims; every stage walks the row,
 * a scalar stage runs once at row index 0. */
TC__FN void tc__krun_rows(void *arg, int64_t b, int64_t e) {
    tc__krun *kr = (tc__krun *)arg;
    const tc__kernel *k = kr->k;
    tc__vst s;
    int64_t idx[TC_MAX_DIMS], o, nrows = 1;
    float *lbase[TC__VM_MAXLOCAL];
    int i, si, d;
    int next_row = 0, nrow_stages = 0, part, a;
    /* the next row is fetched ahead by software only where some input's
     * next row is not the continuation of its current one */
    if (kr->row0 > 0 && kr->shape[kr->row0 - 1] > 1)
        for (a = 0; a < k->nacc; a++) next_row |= tc__krun_prefetches(kr, a, kr->row0 - 1);
    for (si = 0; si < k->nstage; si++) nrow_stages += !k->stage[si].scalar;
    for (d = kr->row0; d < kr->ndim - 1; d++) nrows *= kr->shape[d];
    tc__krun_state(kr, &s, NULL);
    if (e - b > 1 && tc__krun_lanes(kr, nrows, kr->shape[kr->ndim - 1])) {
        tc__krun_rows_lanes(kr, &s, idx, b, e);
        tc__store_fence();
        return;
    }
    for (i = 0; i < k->nlocal; i++) lbase[i] = s.local[i];
    /* one tile sums a row in float: at most a fold's span of it */
    if (nrows == 1 && kr->shape[kr->ndim - 1] > 0 && kr->shape[kr->ndim - 1] <= kr->tile &&
        (!tc__kernel_sums(k) || kr->shape[kr->ndim - 1] <= tc__krun_fold_span(kr)) && !next_row) {
        tc__krun_rows_one_tile(kr, &s, idx, b, e);
        tc__store_fence();
        return;
    }
    for (o = b; o < e; o++) {
        tc__krun_unravel(kr, idx, o, 0, kr->row0 - 1);
        for (si = 0, part = 0; si < k->nstage; si++) {
            const tc__kstage *stg = &k->stage[si];
            if (!stg->scalar) {
                tc__krun_row_stage(kr, &s, idx, stg, part++, nrow_stages, lbase, next_row);
                continue;
            }
            for (d = kr->row0; d < kr->ndim - 1; d++) idx[d] = 0;
            tc__krun_point(kr, &s, idx, 0);
            kr->isa->tile(k->code + stg->begin, stg->end - stg->begin, &s, 1);
        }
    }
    tc__store_fence();
}

/* Merges dim d into d+1 where every access steps over d exactly as one
 * sweep of d+1 (and drops size-1 dims); never across the row boundary. */
TC__FN void tc__krun_coalesce(tc__krun *kr) {
    int d, a, n = 0, row0 = 0, nacc = kr->k->nacc;
    int64_t shape[TC_MAX_DIMS], st[TC__VM_MAXACC][TC_MAX_DIMS];
    for (d = 0; d < kr->ndim; d++) {
        int in_row = d >= kr->row0;
        if (kr->shape[d] == 1 && kr->ndim > 1) continue;
        if (n > 0 && (n - 1 >= row0) == in_row) {
            int ok = 1;
            for (a = 0; a < nacc && ok; a++) ok = st[a][n - 1] == kr->st[a][d] * kr->shape[d];
            if (ok) {
                shape[n - 1] *= kr->shape[d];
                for (a = 0; a < nacc; a++) st[a][n - 1] = kr->st[a][d];
                continue;
            }
        }
        if (!in_row) row0 = n + 1;
        shape[n] = kr->shape[d];
        for (a = 0; a < nacc; a++) st[a][n] = kr->st[a][d];
        n++;
    }
    if (n == 0) { /* all dims were size 1 */
        shape[0] = 1;
        for (a = 0; a < nacc; a++) st[a][0] = 0;
        n = 1;
        row0 = 0;
    }
    if (!kr->rows) row0 = n; /* pointwise: no row dims */
    else if (row0 >= n && n < TC_MAX_DIMS) {
        /* every row dim had size 1: keep one, the stages walk it */
        shape[n] = 1;
        for (a = 0; a < nacc; a++) st[a][n] = 0;
        n++;
    }
    kr->ndim = n;
    kr->row0 = row0;
    memcpy(kr->shape, shape, sizeof shape);
    for (a = 0; a < nacc; a++) memcpy(kr->st[a], st[a], sizeof st[a]);
}

/* Runs kernel k with its buffers' headers in ref[] (by graph node).  ws
 * holds ws_slots per-thread workspaces of ws_bytes each. */
TC__FN void tc__krun_prepare(tc__krun *kr, tc_ctx *ctx, const tc__kernel *k, tc_tensor *const *ref) {
    int a, d, any_nt = 0;
    memset(kr, 0, sizeof *kr); /* in place: the state is 4 KB */
    kr->k = k;
    kr->isa = tc__isa_impl_of(ctx->isa);
    kr->ndim = k->ndim;
    kr->rows = k->nslot > 0 || k->nstage > 1;
    kr->row0 = kr->rows ? k->row0 : k->ndim;
    memcpy(kr->shape, k->shape, sizeof kr->shape);
    for (a = 0; a < k->nacc; a++) {
        const tc__kaccess *ac = &k->acc[a];
        const tc_tensor *h = ref[ac->node];
        int64_t esz = (int64_t)tc__dtype_sizes[h->dtype], off = h->offset;
        for (d = 0; d < TC_MAX_DIMS; d++) kr->st[a][d] = 0;
        for (d = 0; d < ac->ndim; d++) {
            if (ac->kdim[d] >= 0) kr->st[a][ac->kdim[d]] += h->strides[d] * ac->coef[d];
            off += h->strides[d] * ac->off[d];
        }
        kr->base[a] = (char *)h->storage->data + off * esz;
        kr->dt[a] = (int)h->dtype;
        /* a result larger than the caches streams past them: no read for
         * ownership of lines about to be overwritten whole */
        kr->nt[a] = ac->store && h->dtype == TC_F32 &&
                    tc__numel(h) * (int64_t)sizeof(float) >= TC__NT_STORE_BYTES;
        /* and an input of that size is read from memory (tc__krun_arm_rows) */
        kr->mem[a] = !ac->store && tc__numel(h) * esz >= TC__NT_STORE_BYTES;
        kr->any_mem |= kr->mem[a];
        any_nt |= kr->nt[a];
    }
    kr->pf_streams = any_nt && kr->any_mem && !kr->rows && (ctx->cpu_features & TC__CPU_NT_FILL);
    kr->rowlen = tc__kernel_rowlen(k);
    kr->tile = tc__kernel_tile(k);
    tc__krun_coalesce(kr);
}

/* A fused pointwise kernel as a contraction's epilogue (arg: its prepared
 * tc__krun): the tile's rows are spans of the kernel's flattened domain
 * (the contraction's output shape).  Runs on the contraction's thread with
 * a workspace on the stack. */
TC__FN void tc__epilogue_tile(void *arg, int64_t row, int64_t m, int64_t col, int64_t n, int64_t ldc) {
    tc__krun *kr = (tc__krun *)arg;
    /* tc__kernel_tile keeps nreg * tile within this */
    float ws[(TC__VM_MAXREG * TC__VM_TILE * sizeof(float) + TC__ALIGN) / sizeof(float)];
    char *w = (char *)ws + (TC__ALIGN - ((uintptr_t)ws % TC__ALIGN)) % TC__ALIGN;
    tc__vst s;
    int64_t r;
    tc__krun_state(kr, &s, w);
    for (r = row; r < row + m; r++) tc__krun_span(kr, &s, r * ldc + col, r * ldc + col + n);
}

/* tile: floats per register tile when smaller than the heuristic's (the
 * workspace is sized for that one), else 0 (max-autotune's choice). */
TC__FN void tc__kernel_run(tc_ctx *ctx, const tc__kernel *k, tc_tensor *const *ref, char *ws, size_t ws_bytes,
                           int ws_slots, int tile) {
    tc__krun kr;
    int d, saved_cap;
    int64_t outer = 1, numel = 1;
    tc__krun_prepare(&kr, ctx, k, ref);
    if (tc__kernel_tile_choice(k, tile)) kr.tile = tile;
    for (d = 0; d < k->ndim; d++) numel *= k->shape[d];
    for (d = 0; d < kr.row0; d++) outer *= kr.shape[d];
    kr.ws = ws;
    kr.ws_bytes = ws_bytes;
    kr.ws_slots = ws_slots;
    /* at most one part per workspace */
    saved_cap = ctx->thread_cap;
    if (ctx->thread_cap <= 0 || ctx->thread_cap > ws_slots) ctx->thread_cap = ws_slots;
    if (!kr.rows) {
        if (numel > 0) tc__parallel_for(ctx, numel, (int64_t)((double)numel * (1.0 + k->cost / 8.0)), tc__krun_pointwise, &kr);
    } else if (outer > 0) {
        tc__parallel_for(ctx, outer, (int64_t)((double)(numel > outer ? numel : outer) * (1.0 + k->cost / 8.0)),
                         tc__krun_rows, &kr);
    }
    ctx->thread_cap = saved_cap;
}
#endif /* TC__HAVE_VEXEC */
