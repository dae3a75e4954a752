/* max-autotune's on-disk cache: the choice measured for one launch on this
 * machine, so that the next process compiles without measuring again.
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
#define TC__TUNE_KERNELS "k20261207a"

/* The choices one compiled function has made, in memory: its first call
 * runs a throwaway program and later calls a cached one, and the second
 * must not measure what the first did.  The counts are tc_explain's. */
typedef struct tc__tune_mem {
    char **key;
    tc__tune_choice *ch;
    int n, cap;
    int measured, single, from_disk;
    int tiles;                 /* fused kernels whose tile was changed       */
    int isas;                  /* contractions on lower-level microkernels  */
} tc__tune_mem;

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
