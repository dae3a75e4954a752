/* max-autotune: each launch of a program's first run is measured in its
 * variants and the fastest kept (tc__tune_launch, the program's tune hook,
 * set by a compiled function in that mode), and the choice is stored in an
 * on-disk cache, so that the next process compiles without measuring again.
 *
 * One small text file per choice, named by a hash of its key (the launch's
 * op or fused program, its operands' shapes and strides, the ISA level, the
 * thread count, the CPU features); the key is stored inside and must match
 * when read, so a hash collision is a miss, never a wrong choice.  A file
 * is written under a temporary name and renamed over the final one: when
 * processes write the same choice at once, the file is whole and from one
 * of them.  A file that does not parse, or whose values are out of range,
 * is ignored (and rewritten after measuring). */

typedef struct tc__tune_choice {
    int kc, mc_tiles;          /* GEMM blocking (0: the heuristic)         */
    int tile;                  /* fused kernel: floats per register tile
                                  (0: the heuristic, tc__kernel_tile)      */
    int isa;                   /* contraction: the microkernels' level
                                  (0: the context's)                       */
    int threads;               /* 0: all; 1: one                           */
    double ms;                 /* what the winner measured                 */
} tc__tune_choice;

#define TC__TUNE_MAGIC "tcompile tune v4"
/* The kernels' revision, in every key: a record measured against older
 * GEMM or executor code says little about the current one, so a change
 * that moves their speed bumps this and old records become misses. */
#define TC__TUNE_KERNELS "k20261208c"

/* The choices one compiled function has made, in memory: its first call
 * runs a throwaway program and later calls a cached one, and the second
 * must not measure what the first did.  The counts are tc_explain's. */
struct tc__tune_mem {
    char **key;
    tc__tune_choice *ch;
    int n, cap;
    int measured, single, from_disk;
    int dropped;               /* read from disk, then lost to the default  */
    int tiles;                 /* fused kernels whose tile was changed       */
    int isas;                  /* contractions on lower-level microkernels  */
};

TC__FN const tc__tune_choice *tc__tune_mem_get(const tc__tune_mem *m, const char *key) {
    int i;
    for (i = 0; m && i < m->n; i++)
        if (strcmp(m->key[i], key) == 0) return &m->ch[i];
    return NULL;
}

TC__FN void tc__tune_mem_put(tc__tune_mem *m, const char *key, const tc__tune_choice *c) {
    size_t len = strlen(key) + 1;
    char *k;
    if (!m) return;
    if (m->n == m->cap) {
        int cap = m->cap ? 2 * m->cap : 8;
        char **nk = (char **)TC_REALLOC(m->key, sizeof(char *) * (size_t)cap);
        tc__tune_choice *nc;
        if (!nk) return;
        m->key = nk;
        nc = (tc__tune_choice *)TC_REALLOC(m->ch, sizeof(tc__tune_choice) * (size_t)cap);
        if (!nc) return;
        m->ch = nc;
        m->cap = cap;
    }
    if (!(k = (char *)TC_MALLOC(len))) return;
    memcpy(k, key, len);
    m->key[m->n] = k;
    m->ch[m->n++] = *c;
}

TC__FN void tc__tune_mem_free(tc__tune_mem *m) {
    int i;
    for (i = 0; i < m->n; i++) TC_FREE(m->key[i]);
    TC_FREE(m->key);
    TC_FREE(m->ch);
    memset(m, 0, sizeof *m);
}

/* The cache directory: opt if given ("" = none), else $TC_CACHE_DIR (for
 * debugging), $XDG_CACHE_HOME/tcompile, or $HOME/.cache/tcompile.  NULL
 * when there is none. */
TC__FN const char *tc__tune_dir(const char *opt, char *buf, size_t cap) {
    const char *e, *sub = NULL;
    if (opt) return opt[0] ? opt : NULL;
    if ((e = getenv("TC_CACHE_DIR")) != NULL) return e[0] ? e : NULL;
    if ((e = getenv("XDG_CACHE_HOME")) != NULL && e[0]) sub = "/tcompile";
    else if ((e = getenv("HOME")) != NULL && e[0]) sub = "/.cache/tcompile";
    if (!sub || strlen(e) + strlen(sub) >= cap) return NULL; /* never a truncated path */
    tc__fmt(buf, cap, "%s%s", e, sub);
    return buf;
}

/* The longest cache directory: its file names must fit tc__tune_path's
 * buffers whole. */
#define TC__TUNE_DIR_MAX 511

TC__FN uint64_t tc__fnv1a(const char *s) {
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

TC__FN void tc__tune_path(const char *dir, const char *key, char *path, size_t cap) {
    tc__fmt(path, cap, "%s/tune-%016llx.txt", dir, (unsigned long long)tc__fnv1a(key));
}

/* "name=<integer in [lo, hi]>" at *p, then a space or the end: strict, so a
 * damaged file is rejected instead of read with an overflowing sscanf. */
TC__FN int tc__tune_field(const char **p, const char *name, long lo, long hi, long *out) {
    size_t n = strlen(name);
    char *end;
    long v;
    if (strncmp(*p, name, n) != 0 || (*p)[n] != '=' || !((*p)[n + 1] == '-' || ((*p)[n + 1] >= '0' && (*p)[n + 1] <= '9')))
        return 0;
    errno = 0;
    v = strtol(*p + n + 1, &end, 10);
    if (errno || v < lo || v > hi || (*end != ' ' && *end != 0)) return 0;
    *out = v;
    *p = *end == ' ' ? end + 1 : end;
    return 1;
}

/* The choice line "kc=.. mc_tiles=.. tile=.. isa=.. threads=.. us=.." (the
 * time in microseconds since v2, an integer like the rest; the tile since
 * v3, the microkernels' level since v4). */
TC__FN int tc__tune_parse(const char *line, tc__tune_choice *c) {
    long kc, mc, tile, isa, th, us;
    if (!tc__tune_field(&line, "kc", 0, 4096, &kc) || !tc__tune_field(&line, "mc_tiles", 0, 256, &mc) ||
        !tc__tune_field(&line, "tile", 0, 4096, &tile) || !tc__tune_field(&line, "isa", 0, TC_ISA_AVX512, &isa) ||
        !tc__tune_field(&line, "threads", 0, 1, &th) || !tc__tune_field(&line, "us", 0, 1000000000L, &us) || *line)
        return 0;
    c->isa = (int)isa;
    c->kc = (int)kc;
    c->mc_tiles = (int)mc;
    c->tile = (int)tile;
    c->threads = (int)th;
    c->ms = (double)us * 1e-3;
    return 1;
}

/* The next line of *p (its newline replaced by NUL), or NULL at the end. */
TC__FN char *tc__next_line(char **p) {
    char *l = *p, *e;
    if (!l || !*l) return NULL;
    e = strchr(l, '\n');
    if (e) {
        *e = 0;
        *p = e + 1;
        if (e > l && e[-1] == '\r') e[-1] = 0; /* a record copied through a text-mode tool */
    } else {
        *p = l + strlen(l);
    }
    return l;
}

/* 1 and *c filled when dir holds a valid choice for key. */
TC__FN int tc__tune_cache_get(const char *dir, const char *key, tc__tune_choice *c) {
    char path[1100], text[4096], *p = text, *l;
    if (!dir || strlen(dir) > TC__TUNE_DIR_MAX) return 0;
    tc__tune_path(dir, key, path, sizeof path);
    if (tc__read_small_file(path, text, sizeof text) <= 0) return 0;
    l = tc__next_line(&p);
    if (!l || strcmp(l, TC__TUNE_MAGIC) != 0) return 0;
    l = tc__next_line(&p);
    if (!l || strcmp(l, key) != 0) return 0;
    l = tc__next_line(&p);
    return l && tc__tune_parse(l, c);
}

/* Stores c for key; failures (no directory, read-only disk) only cost the
 * next process a measurement. */
TC__FN void tc__tune_cache_put(const char *dir, const char *key, const tc__tune_choice *c) {
    static int counter; /* with the pid and a stack address: unique per thread */
    char path[1100], tmp[1200];
    FILE *fp;
    int ok;
    double us = c->ms * 1e3 + 0.5;
    if (!dir || strlen(dir) > TC__TUNE_DIR_MAX || tc__mkdirs(dir) != 0) return;
    tc__tune_path(dir, key, path, sizeof path);
    tc__fmt(tmp, sizeof tmp, "%s.%lu.%lx.%u.tmp", path, tc__pid(), (unsigned long)(uintptr_t)&fp,
            tc__next_ticket(&counter));
    fp = fopen(tmp, "wb"); /* "\n" as written, on Windows too: the reader reads bytes */
    if (!fp) return;
    ok = fprintf(fp, "%s\n%s\nkc=%d mc_tiles=%d tile=%d isa=%d threads=%d us=%ld\n", TC__TUNE_MAGIC, key, c->kc,
                 c->mc_tiles, c->tile, c->isa, c->threads, (long)(us < 0 ? 0 : us > 1e9 ? 1e9 : us)) > 0;
    ok = fclose(fp) == 0 && ok;
    if (!ok || tc__file_replace(tmp, path) != 0) remove(tmp);
}

/* ---- measuring a launch's variants ---------------------------------------- */

/* max-autotune's hook: the variants of one launch are measured on the real
 * data and the fastest kept, then stored in the on-disk cache
 * (above) under a key naming everything the choice depends on, so a
 * later process reads it instead of measuring.  A contraction's variants
 * are GEMM blockings (KC x MC), then the microkernels of each lower ISA
 * level down to 128-bit vectors; a fused kernel's its register-tile sizes
 * (the heuristic's, then halved down to TC__VM_TILE_MIN); every launch's
 * are then its thread splits (all threads vs one: small kernels lose to
 * the synchronisation). */
static const int tc__gemm_variants[][2] = {{0, 0}, {128, 16}, {384, 16}, {256, 8}, {256, 32}, {512, 8}};

TC__FN int tc__launch_is_gemm(const tc__launch *l) {
    return l->kernel < 0 &&
           (l->call.op == TC__OP_MATMUL || l->call.op == TC__OP_LINEAR || l->call.op == TC__OP_CONV2D);
}

/* What a launch's best variant depends on, as one line of text. */
TC__FN void tc__tune_key(const tc__program *p, const tc_ctx *ctx, const tc__launch *l, const tc_tensor *out,
                         char *key, size_t cap) {
    tc__text t;
    int i, d;
    t.p = key;
    t.n = 0;
    t.cap = cap;
    tc__text_printf(&t, "tc=%s/%s isa=%s threads=%d cpu=%d ncpu=%d ", TC_VERSION_STRING, TC__TUNE_KERNELS,
                    tc_isa_name(ctx->isa), ctx->num_threads, ctx->cpu_features, tc__cpu_count());
    if (l->kernel >= 0) { /* a fused program: its code, hashed */
        const tc__kernel *k = &p->fu.k[l->kernel];
        uint64_t h = 14695981039346656037ull;
        char ins[128];
        for (i = 0; i < k->ncode; i++) {
            const tc__vins *v = &k->code[i];
            /* ops by name: adding an op renumbers those after it */
            tc__fmt(ins, sizeof ins, "%s %d %d %d %d %d %d %s %s %a %a;", tc__vop_name(v->op), v->dst, v->a, v->b, v->c,
                    v->as, v->at, tc__vop_name(v->bu), tc__vop_name(v->au), (double)v->f0, (double)v->f1);
            h ^= tc__fnv1a(ins);
            h *= 1099511628211ull;
        }
        tc__text_printf(&t, "kernel=%016llx stages=%d", (unsigned long long)h, k->nstage);
        for (d = 0; d < k->ndim; d++) tc__text_printf(&t, "%s%lld", d ? "x" : " dom=", (long long)k->shape[d]);
    } else {
        tc__text_printf(&t, "op=%s%s", tc__optable[l->call.op].name, l->call.prepack ? " frozen" : "");
    }
    for (i = 0; i < l->call.nin; i++) {
        const tc_tensor *x = l->call.ins[i];
        if (!x) continue;
        tc__text_printf(&t, " in%d=%s", i, tc_dtype_name(x->dtype));
        for (d = 0; d < x->ndim; d++) tc__text_printf(&t, "%s%lld/%lld", d ? "," : "[", (long long)x->shape[d],
                                                     (long long)x->strides[d]);
        tc__text_printf(&t, "]");
    }
    tc__text_printf(&t, " out=");
    for (d = 0; d < out->ndim; d++) tc__text_printf(&t, "%s%lld", d ? "x" : "", (long long)out->shape[d]);
    for (i = 0; i < TC__MAX_IATTR && i < 12; i++) tc__text_printf(&t, " %lld", (long long)l->call.a.i[i]);
    if (t.n >= cap) key[0] = 0; /* too long to trust: no caching */
}

#ifdef TCOMPILE_TESTING
/* Tests script the times a variant measures (launch, thread cap); NULL:
 * measured. */
static double (*tc__tune_measure_hook)(const tc__launch *l, int cap) = NULL;
#endif

/* The fastest of 3 runs of l as it is set up now (ms), or -1 on error. */
TC__FN double tc__tune_measure(tc__program *p, tc_ctx *ctx, tc__launch *l, tc_tensor *out, int cap, tc_result *r) {
    double t_min = -1;
    int rep;
#ifdef TCOMPILE_TESTING
    if (tc__tune_measure_hook) {
        *r = TC_OK;
        return tc__tune_measure_hook(l, cap);
    }
#endif
    ctx->thread_cap = cap;
    for (rep = 0; rep < 3; rep++) {
        double t0 = tc__now_sec(), t;
        *r = tc__launch_exec(p, ctx, l, out);
        t = tc__now_sec() - t0;
        if (*r != TC_OK) break;
        if (t_min < 0 || t < t_min) t_min = t;
    }
    ctx->thread_cap = 0;
    return *r == TC_OK ? t_min * 1e3 : -1;
}

/* Sets l up as choice c says (its thread split is the caller's); a tile
 * the executor would not run (tc__kernel_tile_choice) is none, so that
 * tuned_tiles counts only tiles in use. */
TC__FN void tc__tune_apply(const tc__program *p, tc__launch *l, const tc__tune_choice *c) {
    l->call.blk.kc = c->kc;
    l->call.blk.mc_tiles = c->mc_tiles;
    l->tile = l->kernel >= 0 ? tc__kernel_tile_choice(&p->fu.k[l->kernel], c->tile) : 0;
    l->call.blk.isa = tc__launch_is_gemm(l) ? c->isa : 0;
}

/* A choice other than the default, measured against it in turns (3 of
 * each, the best of each kept): the variants were measured one after
 * another, and where the host's speed drifted between them (another
 * process taking a core for a while) a choice won that the same calls in
 * turn do not bear out, and its cache entry kept it wrong for good (a
 * kernel kept on one thread where two are much faster).  The choice stays
 * only where it wins by TC__TUNE_MARGIN. */
#define TC__TUNE_MARGIN 0.97
TC__FN tc_result tc__tune_confirm(tc__program *p, tc_ctx *ctx, tc__launch *l, tc_tensor *out, tc__tune_choice *ch,
                                  double *best) {
    tc__tune_choice def;
    double td = -1, tc = -1;
    tc_result r = TC_OK;
    int k;
    memset(&def, 0, sizeof def);
    if (!ch->kc && !ch->mc_tiles && !ch->tile && !ch->isa && !ch->threads) return TC_OK;
    for (k = 0; k < 3; k++) {
        double t;
        tc__tune_apply(p, l, &def);
        t = tc__tune_measure(p, ctx, l, out, 0, &r);
        if (r != TC_OK) return r;
        if (td < 0 || t < td) td = t;
        tc__tune_apply(p, l, ch);
        t = tc__tune_measure(p, ctx, l, out, ch->threads, &r);
        if (r != TC_OK) return r;
        if (tc < 0 || t < tc) tc = t;
    }
    if (tc < td * TC__TUNE_MARGIN) *best = tc;
    else {
        *ch = def;
        *best = td;
    }
    tc__tune_apply(p, l, ch);
    return TC_OK;
}

/* A launch that takes longer than this on all threads is never kept on
 * one: waking and joining the pool costs microseconds, so one thread wins
 * on such work only while another process holds a core, and the choice,
 * cached on disk, would keep it slow after that process is gone. */
#define TC__TUNE_SPLIT_MS 0.05

/* A choice read from disk, measured again in turns against the default the
 * first time this function uses it: the cores may be busier or quieter
 * than in the process that measured it.  It is replaced by the default,
 * here and on disk, when it no longer wins. */
TC__FN tc_result tc__tune_recheck(tc__program *p, tc_ctx *ctx, tc__launch *l, tc_tensor *out, const char *key,
                                  tc__tune_choice *ch) {
    tc__tune_choice was;
    double best = ch->ms;
    tc_result r;
    was = *ch;
    if (ch->threads && ch->ms > TC__TUNE_SPLIT_MS) ch->threads = 0;
    if ((r = tc__tune_confirm(p, ctx, l, out, ch, &best)) != TC_OK) return r;
    if (was.kc != ch->kc || was.mc_tiles != ch->mc_tiles || was.tile != ch->tile || was.isa != ch->isa ||
        was.threads != ch->threads) {
        ch->ms = best;
        if (p->tune_mem) p->tune_mem->dropped++;
        tc__tune_cache_put(p->tune_dir, key, ch);
    }
    return TC_OK;
}

TC__FN tc_result tc__tune_launch(tc__program *p, tc_ctx *ctx, tc__launch *l, tc_tensor *out) {
    char key[1024];
    tc__tune_choice ch;
    tc_result r = TC_OK;
    double best;
    size_t v;
    const tc__tune_choice *known;
    tc__tune_key(p, ctx, l, out, key, sizeof key);
    known = key[0] ? tc__tune_mem_get(p->tune_mem, key) : NULL;
    if (!known && key[0] && tc__tune_cache_get(p->tune_dir, key, &ch)) {
        if ((r = tc__tune_recheck(p, ctx, l, out, key, &ch)) != TC_OK) return r;
        tc__tune_mem_put(p->tune_mem, key, &ch);
        if (p->tune_mem) p->tune_mem->from_disk++;
        known = &ch;
    }
    if (known) {
        tc__tune_apply(p, l, known);
        l->threads = known->threads;
        if (p->tune_mem && known == &ch) {
            p->tune_mem->tiles += l->tile != 0;
            p->tune_mem->isas += l->call.blk.isa != 0;
        }
        l->tuned_ms = known->ms;
        return TC_OK;
    }
    memset(&ch, 0, sizeof ch);
    best = tc__tune_measure(p, ctx, l, out, 0, &r);
    if (r != TC_OK) return r;
    for (v = 1; tc__launch_is_gemm(l) && v < sizeof tc__gemm_variants / sizeof tc__gemm_variants[0]; v++) {
        double t;
        l->call.blk.kc = tc__gemm_variants[v][0];
        l->call.blk.mc_tiles = tc__gemm_variants[v][1];
        t = tc__tune_measure(p, ctx, l, out, 0, &r);
        if (r != TC_OK) return r;
        if (t < best) {
            best = t;
            ch.kc = l->call.blk.kc;
            ch.mc_tiles = l->call.blk.mc_tiles;
        }
    }
    l->call.blk.kc = ch.kc;
    l->call.blk.mc_tiles = ch.mc_tiles;
    /* a contraction's microkernels: a lower level's register tile can win
     * (narrower vectors, a clock that does not drop, a shape its tile fits) */
    if (tc__launch_is_gemm(l)) {
        int lvl;
        for (lvl = (int)ctx->isa - 1; lvl >= (int)TC_ISA_V128; lvl--) {
            double t;
            l->call.blk.isa = lvl;
            t = tc__tune_measure(p, ctx, l, out, 0, &r);
            if (r != TC_OK) return r;
            if (t < best) {
                best = t;
                ch.isa = lvl;
            }
        }
        l->call.blk.isa = ch.isa;
    }
    /* a fused kernel's register tiles: smaller ones trade dispatches per
     * element for L1 room beside the streams it reads */
    if (l->kernel >= 0) {
        int tile;
        for (tile = tc__kernel_tile(&p->fu.k[l->kernel]) / 2; tile >= TC__VM_TILE_MIN; tile /= 2) {
            double t;
            l->tile = tile;
            t = tc__tune_measure(p, ctx, l, out, 0, &r);
            if (r != TC_OK) return r;
            if (t < best) {
                best = t;
                ch.tile = tile;
            }
        }
        l->tile = ch.tile;
    }
    if (ctx->num_threads > 1 && best <= TC__TUNE_SPLIT_MS) {
        double t = tc__tune_measure(p, ctx, l, out, 1, &r);
        if (r != TC_OK) return r;
        if (t < best) {
            best = t;
            ch.threads = 1;
        }
    }
    if ((r = tc__tune_confirm(p, ctx, l, out, &ch, &best)) != TC_OK) return r;
    l->threads = ch.threads;
    l->tuned_ms = ch.ms = best;
    if (p->tune_mem) {
        p->tune_mem->measured++;
        p->tune_mem->single += l->threads == 1;
        p->tune_mem->tiles += l->tile != 0;
        p->tune_mem->isas += l->call.blk.isa != 0;
    }
    if (key[0]) {
        tc__tune_mem_put(p->tune_mem, key, &ch);
        tc__tune_cache_put(p->tune_dir, key, &ch);
    }
    return TC_OK;
}
