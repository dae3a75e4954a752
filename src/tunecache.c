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
    int threads;               /* 0: all; 1: one                           */
    double ms;                 /* what the winner measured                 */
} tc__tune_choice;

#define TC__TUNE_MAGIC "tcompile tune v1"

/* The choices one compiled function has made, in memory: its first call
 * runs a throwaway program and later calls a cached one, and the second
 * must not measure what the first did.  The counts are tc_explain's. */
typedef struct tc__tune_mem {
    char **key;
    tc__tune_choice *ch;
    int n, cap;
    int measured, single, from_disk;
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
    const char *e;
    if (opt) return opt[0] ? opt : NULL;
    if ((e = getenv("TC_CACHE_DIR")) != NULL) return e[0] ? e : NULL;
    if ((e = getenv("XDG_CACHE_HOME")) != NULL && e[0]) {
        tc__fmt(buf, cap, "%s/tcompile", e);
        return buf;
    }
    if ((e = getenv("HOME")) != NULL && e[0]) {
        tc__fmt(buf, cap, "%s/.cache/tcompile", e);
        return buf;
    }
    return NULL;
}

TC__FN uint64_t tc__fnv1a(const char *s) {
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

TC__FN void tc__tune_path(const char *dir, const char *key, char *path, size_t cap) {
    tc__fmt(path, cap, "%s/tune-%016llx.txt", dir, (unsigned long long)tc__fnv1a(key));
}

/* 1 and *c filled when dir holds a valid choice for key. */
TC__FN int tc__tune_cache_get(const char *dir, const char *key, tc__tune_choice *c) {
    char path[1100], line[2048];
    FILE *fp;
    int ok = 0;
    size_t n;
    if (!dir) return 0;
    tc__tune_path(dir, key, path, sizeof path);
    fp = fopen(path, "r");
    if (!fp) return 0;
    if (fgets(line, sizeof line, fp) && strncmp(line, TC__TUNE_MAGIC, strlen(TC__TUNE_MAGIC)) == 0 &&
        fgets(line, sizeof line, fp)) {
        n = strlen(line);
        if (n > 0 && line[n - 1] == '\n') line[--n] = 0;
        if (strcmp(line, key) == 0 && fgets(line, sizeof line, fp) &&
            sscanf(line, "kc=%d mc_tiles=%d threads=%d ms=%lf", &c->kc, &c->mc_tiles, &c->threads, &c->ms) == 4)
            ok = c->kc >= 0 && c->kc <= 4096 && c->mc_tiles >= 0 && c->mc_tiles <= 256 && c->threads >= 0 &&
                 c->threads <= 1 && c->ms >= 0 && c->ms < 1e9;
    }
    fclose(fp);
    return ok;
}

/* Stores c for key; failures (no directory, read-only disk) only cost the
 * next process a measurement. */
TC__FN void tc__tune_cache_put(const char *dir, const char *key, const tc__tune_choice *c) {
    static unsigned counter; /* with the pid and a stack address: unique per thread */
    char path[1100], tmp[1200];
    FILE *fp;
    int ok;
    if (!dir || tc__mkdirs(dir) != 0) return;
    tc__tune_path(dir, key, path, sizeof path);
    tc__fmt(tmp, sizeof tmp, "%s.%lu.%lx.%u.tmp", path, tc__pid(), (unsigned long)(uintptr_t)&fp, counter++);
    fp = fopen(tmp, "w");
    if (!fp) return;
    ok = fprintf(fp, "%s\n%s\nkc=%d mc_tiles=%d threads=%d ms=%.6f\n", TC__TUNE_MAGIC, key, c->kc, c->mc_tiles,
                 c->threads, c->ms) > 0;
    ok = fclose(fp) == 0 && ok;
    if (!ok || tc__file_replace(tmp, path) != 0) remove(tmp);
}
