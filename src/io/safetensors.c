/* safetensors files (Hugging Face's checkpoint format): an 8-byte
 * little-endian header length N, N bytes of JSON
 *   {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]},
 *    ..., "__metadata__": {"key": "value", ..}}
 * then the tensors' bytes, offsets relative to the end of the header.
 *
 * The reader maps the file copy-on-write (a write into a tensor that views
 * it changes only this process's pages), or reads it whole where mapping
 * fails or the caller asks for a copy (a mapping's pages past a later
 * truncation of the file fault with SIGBUS).  The header is parsed by a small parser made for this grammar and
 * nothing else, and checked the way the reference implementation checks
 * it: known dtypes, at most TC_MAX_DIMS non-negative integer dims, byte
 * counts that match shape x dtype without overflow, tensors that tile the
 * data region exactly (no overlap, no gap, nothing past the end), unique
 * names, no unknown fields, strings that are valid UTF-8.  A malformed or
 * hostile file is an error message, never a read outside the file. */

#define TC__ST_MAX_HEADER (100u << 20) /* the reference implementation's limit */

typedef struct tc__sft_entry {
    char *name;
    int code;                  /* index into tc__sft_dtypes */
    int ndim;
    int64_t shape[TC_MAX_DIMS];
    uint64_t begin, end;       /* within the data region */
} tc__sft_entry;

struct tc_safetensors {
    tc_ctx *ctx;
    tc__mapping map;           /* the file, mapped; or */
    unsigned char *heap;       /* the file, read */
    const unsigned char *data; /* the data region */
    uint64_t data_len;
    int n, nmeta;
    tc__sft_entry *e;
    int *by_name;              /* e's indices in name order (tc_safetensors_find) */
    char **meta;               /* nmeta (key, value) pairs */
    char path[256];            /* for messages (may be cut short) */
};

/* The file's dtype names; what each loads as and its width in the file. */
static const struct {
    const char *name;
    tc_dtype as;
    int bytes;
    int kind;                  /* 0 same bits, 1 float, 2 signed int, 3 unsigned int, 4 bool, -1 unsupported */
} tc__sft_dtypes[] = {
    {"F32", TC_F32, 4, 0},  {"F16", TC_F16, 2, 0},   {"BF16", TC_BF16, 2, 0}, {"I32", TC_I32, 4, 0},
    {"BOOL", TC_BOOL, 1, 4}, {"F64", TC_F32, 8, 1},  {"I64", TC_I32, 8, 2},   {"I16", TC_I32, 2, 2},
    {"I8", TC_I32, 1, 2},   {"U8", TC_I32, 1, 3},    {"U16", TC_I32, 2, 3},   {"U32", TC_I32, 4, 3},
    {"U64", TC_I32, 8, 3},  {"F8_E4M3", TC_F32, 1, -1}, {"F8_E5M2", TC_F32, 1, -1},
};
#define TC__ST_NDTYPES ((int)(sizeof tc__sft_dtypes / sizeof tc__sft_dtypes[0]))

#ifdef TCOMPILE_TESTING
/* Tests count the name comparisons of lookups and of the writer's check
 * for repeated names: a lookup must stay logarithmic in the entries. */
static long tc__sft_name_cmps = 0;
#define TC__SFT_NAME_CMP_COUNT() (tc__sft_name_cmps++)
#else
#define TC__SFT_NAME_CMP_COUNT() ((void)0)
#endif

/* ---- the header parser --------------------------------------------------------- */

typedef struct tc__jp {
    const char *start, *p, *end;
    char *err;
    size_t errcap;
} tc__jp;

TC__FN int tc__jp_fail(tc__jp *j, const char *what) {
    if (j->err && !j->err[0]) tc__fmt(j->err, j->errcap, "%s at header byte %lld", what, (long long)(j->p - j->start));
    return 0;
}

TC__FN void tc__jp_ws(tc__jp *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

TC__FN int tc__jp_eat(tc__jp *j, char c) {
    tc__jp_ws(j);
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return 1;
    }
    return 0;
}

TC__FN int tc__jp_hex4(const char *p, unsigned *v) {
    int i;
    *v = 0;
    for (i = 0; i < 4; i++) {
        char c = p[i];
        *v <<= 4;
        if (c >= '0' && c <= '9') *v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') *v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') *v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    return 1;
}

/* Length of the valid UTF-8 sequence at p (before end), or 0. */
TC__FN int tc__utf8_len(const unsigned char *p, const unsigned char *end) {
    int n, i;
    unsigned cp;
    if (p[0] < 0x80) return 1;
    if (p[0] >= 0xC2 && p[0] <= 0xDF) n = 2, cp = p[0] & 0x1Fu;
    else if (p[0] >= 0xE0 && p[0] <= 0xEF) n = 3, cp = p[0] & 0x0Fu;
    else if (p[0] >= 0xF0 && p[0] <= 0xF4) n = 4, cp = p[0] & 0x07u;
    else return 0;
    if (end - p < n) return 0;
    for (i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (p[i] & 0x3Fu);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

/* A JSON string, decoded to UTF-8 in a fresh NUL-terminated buffer (NULL
 * on an error; an escaped NUL is refused, names are C strings). */
TC__FN char *tc__jp_string(tc__jp *j) {
    const char *s;
    char *out, *o;
    int bad = 0;
    tc__jp_ws(j);
    if (j->p >= j->end || *j->p != '"') {
        tc__jp_fail(j, "expected a string");
        return NULL;
    }
    s = ++j->p;
    while (j->p < j->end && *j->p != '"') j->p += *j->p == '\\' && j->p + 1 < j->end ? 2 : 1;
    if (j->p >= j->end) {
        tc__jp_fail(j, "unterminated string");
        return NULL;
    }
    /* decoded is never longer than escaped */
    out = o = (char *)tc__malloc((size_t)(j->p - s) + 1);
    if (!out) {
        tc__jp_fail(j, "out of memory");
        return NULL;
    }
    while (s < j->p && !bad) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20) {
            bad = 1;
            break;
        }
        if (c != '\\') {
            int n = tc__utf8_len((const unsigned char *)s, (const unsigned char *)j->p);
            if (!n) {
                bad = 1;
                break;
            }
            memcpy(o, s, (size_t)n);
            o += n;
            s += n;
            continue;
        }
        c = (unsigned char)s[1];
        s += 2;
        if (c == '"' || c == '\\' || c == '/') *o++ = (char)c;
        else if (c == 'b') *o++ = '\b';
        else if (c == 'f') *o++ = '\f';
        else if (c == 'n') *o++ = '\n';
        else if (c == 'r') *o++ = '\r';
        else if (c == 't') *o++ = '\t';
        else if (c == 'u') {
            unsigned cp, lo;
            if (j->p - s < 4 || !tc__jp_hex4(s, &cp)) {
                bad = 1;
                break;
            }
            s += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) { /* a surrogate pair */
                if (j->p - s < 6 || s[0] != '\\' || s[1] != 'u' || !tc__jp_hex4(s + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                    bad = 1;
                    break;
                }
                s += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if ((cp >= 0xDC00 && cp <= 0xDFFF) || cp == 0) {
                bad = 1;
                break;
            }
            if (cp < 0x80) *o++ = (char)cp;
            else if (cp < 0x800) *o++ = (char)(0xC0 | cp >> 6), *o++ = (char)(0x80 | (cp & 0x3F));
            else if (cp < 0x10000)
                *o++ = (char)(0xE0 | cp >> 12), *o++ = (char)(0x80 | (cp >> 6 & 0x3F)), *o++ = (char)(0x80 | (cp & 0x3F));
            else
                *o++ = (char)(0xF0 | cp >> 18), *o++ = (char)(0x80 | (cp >> 12 & 0x3F)),
                *o++ = (char)(0x80 | (cp >> 6 & 0x3F)), *o++ = (char)(0x80 | (cp & 0x3F));
        } else {
            bad = 1;
        }
    }
    if (bad) {
        TC_FREE(out);
        tc__jp_fail(j, "invalid string (control character, bad escape or invalid UTF-8)");
        return NULL;
    }
    *o = 0;
    j->p++;
    return out;
}

/* A non-negative integer below 2^63 (no sign, fraction, exponent or leading zero). */
TC__FN int tc__jp_uint(tc__jp *j, uint64_t *v) {
    const char *s;
    tc__jp_ws(j);
    s = j->p;
    *v = 0;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
        if (*v > (((uint64_t)1 << 63) - 1 - (uint64_t)(*j->p - '0')) / 10) return tc__jp_fail(j, "integer too large");
        *v = *v * 10 + (uint64_t)(*j->p++ - '0');
    }
    if (j->p == s || (j->p - s > 1 && *s == '0')) return tc__jp_fail(j, "expected a non-negative integer");
    if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E')) return tc__jp_fail(j, "expected an integer");
    return 1;
}

/* [u, u, ...] into v (at most cap values); *n gets the count. */
TC__FN int tc__jp_uints(tc__jp *j, uint64_t *v, int cap, int *n) {
    *n = 0;
    if (!tc__jp_eat(j, '[')) return tc__jp_fail(j, "expected an array");
    if (tc__jp_eat(j, ']')) return 1;
    do {
        if (*n == cap) return tc__jp_fail(j, "array too long");
        if (!tc__jp_uint(j, &v[(*n)++])) return 0;
    } while (tc__jp_eat(j, ','));
    return tc__jp_eat(j, ']') ? 1 : tc__jp_fail(j, "expected ',' or ']'");
}

/* One tensor's {"dtype", "shape", "data_offsets"}, each exactly once. */
TC__FN int tc__jp_entry(tc__jp *j, tc__sft_entry *e) {
    int seen = 0, k, n;
    uint64_t v[TC_MAX_DIMS + 1];
    if (!tc__jp_eat(j, '{')) return tc__jp_fail(j, "expected an object for a tensor");
    if (!tc__jp_eat(j, '}')) do {
            char *key = tc__jp_string(j);
            int bit;
            if (!key) return 0;
            bit = strcmp(key, "dtype") == 0 ? 1 : strcmp(key, "shape") == 0 ? 2 : strcmp(key, "data_offsets") == 0 ? 4 : 0;
            TC_FREE(key);
            if (!bit) return tc__jp_fail(j, "unknown field in a tensor entry");
            if (seen & bit) return tc__jp_fail(j, "repeated field in a tensor entry");
            seen |= bit;
            if (!tc__jp_eat(j, ':')) return tc__jp_fail(j, "expected ':'");
            if (bit == 1) {
                char *dt = tc__jp_string(j);
                if (!dt) return 0;
                for (e->code = 0; e->code < TC__ST_NDTYPES && strcmp(dt, tc__sft_dtypes[e->code].name) != 0; e->code++) {
                }
                TC_FREE(dt);
                if (e->code == TC__ST_NDTYPES) return tc__jp_fail(j, "unknown dtype");
            } else if (bit == 2) {
                if (!tc__jp_uints(j, v, TC_MAX_DIMS, &n)) return 0;
                e->ndim = n;
                for (k = 0; k < n; k++) e->shape[k] = (int64_t)v[k];
            } else {
                if (!tc__jp_uints(j, v, 2, &n)) return 0;
                if (n != 2) return tc__jp_fail(j, "data_offsets must be [begin, end]");
                e->begin = v[0];
                e->end = v[1];
            }
        } while (tc__jp_eat(j, ','));
    if (seen && !tc__jp_eat(j, '}')) return tc__jp_fail(j, "expected ',' or '}'");
    return seen == 7 ? 1 : tc__jp_fail(j, "a tensor entry needs dtype, shape and data_offsets");
}

TC__FN int tc__sft_add_meta(tc_safetensors *sf, char *k, char *v) {
    char **m = (char **)TC_REALLOC(sf->meta, sizeof(char *) * (size_t)(2 * sf->nmeta + 2));
    if (!m) return 0;
    sf->meta = m;
    m[2 * sf->nmeta] = k;
    m[2 * sf->nmeta + 1] = v;
    sf->nmeta++;
    return 1;
}

/* "__metadata__": {"key": "value", ...} */
TC__FN int tc__jp_meta(tc__jp *j, tc_safetensors *sf) {
    if (!tc__jp_eat(j, '{')) return tc__jp_fail(j, "__metadata__ must be an object");
    if (tc__jp_eat(j, '}')) return 1;
    do {
        char *k = tc__jp_string(j), *v = NULL;
        if (!k || !tc__jp_eat(j, ':') || !(v = tc__jp_string(j)) || !tc__sft_add_meta(sf, k, v)) {
            TC_FREE(k);
            TC_FREE(v);
            return tc__jp_fail(j, "__metadata__ values must be strings");
        }
    } while (tc__jp_eat(j, ','));
    return tc__jp_eat(j, '}') ? 1 : tc__jp_fail(j, "expected ',' or '}'");
}

TC__FN int tc__sft_parse(tc_safetensors *sf, const char *h, size_t n, char *err, size_t errcap) {
    tc__jp j;
    int cap = 0, have_meta = 0;
    j.start = j.p = h;
    j.end = h + n;
    j.err = err;
    j.errcap = errcap;
    if (!tc__jp_eat(&j, '{')) return tc__jp_fail(&j, "the header is not a JSON object");
    if (!tc__jp_eat(&j, '}')) do {
            char *key = tc__jp_string(&j);
            if (!key) return 0;
            if (!tc__jp_eat(&j, ':')) {
                TC_FREE(key);
                return tc__jp_fail(&j, "expected ':'");
            }
            if (strcmp(key, "__metadata__") == 0) {
                TC_FREE(key);
                if (have_meta++) return tc__jp_fail(&j, "repeated __metadata__");
                if (!tc__jp_meta(&j, sf)) return 0;
                continue;
            }
            if (sf->n == cap) {
                tc__sft_entry *e = (tc__sft_entry *)TC_REALLOC(sf->e, sizeof(tc__sft_entry) * (size_t)(cap * 2 + 8));
                if (!e) {
                    TC_FREE(key);
                    return tc__jp_fail(&j, "out of memory");
                }
                sf->e = e;
                cap = cap * 2 + 8;
            }
            memset(&sf->e[sf->n], 0, sizeof sf->e[0]);
            sf->e[sf->n].name = key;
            if (!tc__jp_entry(&j, &sf->e[sf->n++])) return 0;
        } while (tc__jp_eat(&j, ','));
    if ((sf->n || have_meta) && !tc__jp_eat(&j, '}')) return tc__jp_fail(&j, "expected ',' or '}'");
    tc__jp_ws(&j);
    if (j.p != j.end) return tc__jp_fail(&j, "text after the header's object");
    return 1;
}

/* ---- validation ---------------------------------------------------------------- */

TC__FN int tc__sft_cmp_begin(const void *a, const void *b) {
    const tc__sft_entry *x = *(const tc__sft_entry *const *)a, *y = *(const tc__sft_entry *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : x->end < y->end ? -1 : x->end > y->end;
}

TC__FN int tc__sft_cmp_name(const void *a, const void *b) {
    return strcmp((*(const tc__sft_entry *const *)a)->name, (*(const tc__sft_entry *const *)b)->name);
}

/* Sizes, then the tiling of the data region, then unique names. */
TC__FN int tc__sft_validate(tc_safetensors *sf, char *err, size_t errcap) {
    tc__sft_entry **ord;
    uint64_t at = 0;
    int i, k, ok = 1;
    for (i = 0; i < sf->n; i++) {
        tc__sft_entry *e = &sf->e[i];
        uint64_t bytes = (uint64_t)tc__sft_dtypes[e->code].bytes, ext = bytes;
        for (k = 0; k < e->ndim; k++) {
            /* ext: with sizes 0 counted as 1, as the strides need it */
            uint64_t d = (uint64_t)e->shape[k], d1 = d ? d : 1;
            if (ext > ((uint64_t)1 << 62) / d1) {
                tc__fmt(err, errcap, "tensor '%s': its size overflows", e->name);
                return 0;
            }
            ext *= d1;
            bytes *= d;
        }
        if (e->end < e->begin || e->end - e->begin != bytes) {
            tc__fmt(err, errcap, "tensor '%s': data_offsets [%llu, %llu] hold %llu bytes, its %s shape needs %llu", e->name,
                    (unsigned long long)e->begin, (unsigned long long)e->end,
                    (unsigned long long)(e->end >= e->begin ? e->end - e->begin : 0), tc__sft_dtypes[e->code].name,
                    (unsigned long long)bytes);
            return 0;
        }
    }
    ord = (tc__sft_entry **)tc__malloc(sizeof(tc__sft_entry *) * (size_t)(sf->n > 0 ? sf->n : 1));
    if (!ord) {
        tc__fmt(err, errcap, "out of memory");
        return 0;
    }
    for (i = 0; i < sf->n; i++) ord[i] = &sf->e[i];
    qsort(ord, (size_t)sf->n, sizeof ord[0], tc__sft_cmp_begin);
    for (i = 0; i < sf->n && ok; i++) {
        if (ord[i]->begin != at) {
            tc__fmt(err, errcap, "tensor '%s' starts at byte %llu of the data, expected %llu (%s)", ord[i]->name,
                    (unsigned long long)ord[i]->begin, (unsigned long long)at,
                    ord[i]->begin < at ? "it overlaps another" : "a gap before it");
            ok = 0;
        }
        at = ord[i]->end;
    }
    if (ok && at != sf->data_len) {
        tc__fmt(err, errcap, "the tensors cover %llu bytes of data, the file holds %llu", (unsigned long long)at,
                (unsigned long long)sf->data_len);
        ok = 0;
    }
    qsort(ord, (size_t)sf->n, sizeof ord[0], tc__sft_cmp_name);
    for (i = 1; i < sf->n && ok; i++)
        if (strcmp(ord[i - 1]->name, ord[i]->name) == 0) {
            tc__fmt(err, errcap, "tensor name '%s' appears twice", ord[i]->name);
            ok = 0;
        }
    /* the name order kept: a lookup is a binary search, so loading every
     * tensor of a file is n log n, not n^2 */
    if (ok && !(sf->by_name = (int *)tc__malloc(sizeof(int) * (size_t)(sf->n > 0 ? sf->n : 1)))) {
        tc__fmt(err, errcap, "out of memory");
        ok = 0;
    }
    for (i = 0; i < sf->n && ok; i++) sf->by_name[i] = (int)(ord[i] - sf->e);
    TC_FREE(ord);
    return ok;
}

/* ---- the public API ------------------------------------------------------------- */

TCDEF void tc_safetensors_close(tc_safetensors *sf) {
    int i;
    if (!sf) return;
    for (i = 0; i < sf->n; i++) TC_FREE(sf->e[i].name);
    for (i = 0; i < 2 * sf->nmeta; i++) TC_FREE(sf->meta[i]);
    TC_FREE(sf->e);
    TC_FREE(sf->by_name);
    TC_FREE(sf->meta);
    tc__unmap_file(&sf->map);
    TC_FREE(sf->heap);
    TC_FREE(sf);
}

/* The whole file read into memory (where it cannot be mapped, or asked to
 * copy), in one allocation when it holds the `hint` bytes it held when
 * mapped; 0 on success. */
TC__FN int tc__sft_read_whole(const char *path, size_t hint, unsigned char **out, size_t *size) {
    FILE *fp = fopen(path, "rb");
    size_t cap = hint < ((size_t)1 << 16) || hint == SIZE_MAX ? (size_t)1 << 16 : hint + 1, n = 0, got;
    unsigned char *buf = NULL, *nb;
    if (!fp) return -1;
    do {
        if (n == cap || !buf) {
            if (buf) cap *= 2;
            nb = (unsigned char *)TC_REALLOC(buf, cap);
            if (!nb) {
                TC_FREE(buf);
                fclose(fp);
                return -1;
            }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, fp);
        n += got;
    } while (got > 0);
    fclose(fp);
    *out = buf;
    *size = n;
    return 0;
}

TCDEF tc_safetensors *tc_safetensors_open(tc_ctx *ctx, const char *path, char *err, size_t errcap) {
    return tc_safetensors_open_with(ctx, path, NULL, err, errcap);
}

TCDEF tc_safetensors *tc_safetensors_open_with(tc_ctx *ctx, const char *path, const tc_safetensors_options *opts,
                                               char *err, size_t errcap) {
    tc_safetensors *sf;
    const unsigned char *base;
    size_t size;
    uint64_t hlen = 0;
    char dummy[2];
    int i;
    if (!err || !errcap) err = dummy, errcap = sizeof dummy;
    err[0] = 0;
    if (!ctx || !path) {
        tc__fmt(err, errcap, "tc_safetensors_open: %s is NULL", ctx ? "path" : "ctx");
        return NULL;
    }
    sf = (tc_safetensors *)TC_MALLOC(sizeof *sf);
    if (!sf) {
        tc__fmt(err, errcap, "tc_safetensors_open: out of memory");
        return NULL;
    }
    memset(sf, 0, sizeof *sf);
    sf->ctx = ctx;
    tc__fmt(sf->path, sizeof sf->path, "%s", path);
    i = tc__map_file(path, &sf->map, 1);
    size = sf->map.size;
    if (i == 0 && opts && opts->copy) {
        /* mapped only to refuse what is not a regular file (a FIFO would
         * block the read) and to size the copy: read whole */
        tc__unmap_file(&sf->map);
        i = -1;
    }
    if (i == 0) {
        base = (const unsigned char *)sf->map.data;
    } else if (i == -1 && tc__sft_read_whole(path, size, &sf->heap, &size) == 0) {
        base = sf->heap;
    } else {
        tc__fmt(err, errcap, "tc_safetensors_open: cannot read %s%s", path, i == -2 ? " (not a regular file)" : "");
        tc_safetensors_close(sf);
        return NULL;
    }
    for (i = 7; i >= 0 && size >= 8; i--) hlen = hlen << 8 | base[i];
    if (size < 8 || hlen > size - 8 || hlen > TC__ST_MAX_HEADER) {
        tc__fmt(err, errcap, "tc_safetensors_open: %s: %s", path,
                size < 8 ? "shorter than the 8-byte header length" : "the header length runs past the file (or over 100 MB)");
        tc_safetensors_close(sf);
        return NULL;
    }
    sf->data = base + 8 + hlen;
    sf->data_len = (uint64_t)(size - 8 - (size_t)hlen);
    {
        char msg[200];
        msg[0] = 0;
        if (!tc__sft_parse(sf, (const char *)base + 8, (size_t)hlen, msg, sizeof msg) ||
            !tc__sft_validate(sf, msg, sizeof msg)) {
            tc__fmt(err, errcap, "tc_safetensors_open: %s: %s", path, msg[0] ? msg : "invalid header");
            tc_safetensors_close(sf);
            return NULL;
        }
    }
    return sf;
}

TCDEF int tc_safetensors_count(const tc_safetensors *sf) { return sf ? sf->n : 0; }

TCDEF int tc_safetensors_find(const tc_safetensors *sf, const char *name) {
    int lo = 0, hi = sf ? sf->n : 0;
    if (!name) return -1;
    while (lo < hi) { /* in by_name[lo, hi) */
        int mid = lo + (hi - lo) / 2, c = strcmp(sf->e[sf->by_name[mid]].name, name);
        TC__SFT_NAME_CMP_COUNT();
        if (c == 0) return sf->by_name[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

TCDEF const char *tc_safetensors_metadata(const tc_safetensors *sf, const char *key) {
    int i;
    for (i = 0; sf && key && i < sf->nmeta; i++)
        if (strcmp(sf->meta[2 * i], key) == 0) return sf->meta[2 * i + 1];
    return NULL;
}

TC__FN int tc__little_endian(void) {
    const uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

/* Can entry e be viewed in place (same bits, aligned, the host's byte order)? */
TC__FN int tc__sft_zero_copy(const tc_safetensors *sf, const tc__sft_entry *e) {
    const int w = tc__sft_dtypes[e->code].bytes;
    const unsigned char *p = sf->data + e->begin;
    uint64_t i;
    if (tc__sft_dtypes[e->code].kind == 4) { /* bool: only when every byte is 0 or 1 */
        for (i = 0; i < e->end - e->begin; i++)
            if (p[i] > 1) return 0;
        return 1;
    }
    return tc__sft_dtypes[e->code].kind == 0 && (w == 1 || tc__little_endian()) && (uintptr_t)p % (uintptr_t)w == 0;
}

TCDEF tc_result tc_safetensors_info_of(const tc_safetensors *sf, int index, tc_safetensors_info *info) {
    const tc__sft_entry *e;
    if (!sf || !info) return TC_ERR_NULL;
    if (index < 0 || index >= sf->n) return TC_ERR_INDEX;
    e = &sf->e[index];
    memset(info, 0, sizeof *info);
    info->name = e->name;
    info->dtype = tc__sft_dtypes[e->code].name;
    info->ndim = e->ndim;
    memcpy(info->shape, e->shape, sizeof(int64_t) * (size_t)e->ndim);
    info->nbytes = e->end - e->begin;
    info->loads_as = tc__sft_dtypes[e->code].as;
    info->zero_copy = tc__sft_zero_copy(sf, e);
    info->supported = tc__sft_dtypes[e->code].kind >= 0;
    return TC_OK;
}

/* Element i of e (w bytes, little-endian) as raw bits. */
TC__FN uint64_t tc__sft_bits(const unsigned char *p, int w, uint64_t i) {
    uint64_t v = 0;
    int b;
    for (b = w - 1; b >= 0; b--) v = v << 8 | p[i * (uint64_t)w + (uint64_t)b];
    return v;
}

TCDEF tc_tensor *tc_safetensors_get_at(tc_safetensors *sf, const char *name, const char *file, int line) {
    char text[TC__MSG_CAP + 160], where[200];
    const tc__sft_entry *e;
    int idx = tc_safetensors_find(sf, name), kind;
    uint64_t n, i;
    void *buf;
    tc_tensor *t;
    if (!sf) return &tc__sentinel_null_ctx;
    if (file) tc__fmt(where, sizeof where, "tc_safetensors_get (%s:%d)", file, line);
    else tc__fmt(where, sizeof where, "tc_safetensors_get");
    if (!name || idx < 0) {
        tc__fmt(text, sizeof text, "%s: %s%s%s in %s", where, name ? "no tensor named '" : "name is NULL", name ? name : "",
                name ? "'" : "", sf->path);
        return tc__error_tensor(sf->ctx, name ? TC_ERR_INDEX : TC_ERR_NULL, text);
    }
    e = &sf->e[idx];
    kind = tc__sft_dtypes[e->code].kind;
    if (kind < 0) {
        tc__fmt(text, sizeof text, "%s: '%s' is %s, which tcompile does not load", where, name, tc__sft_dtypes[e->code].name);
        return tc__error_tensor(sf->ctx, TC_ERR_UNSUPPORTED, text);
    }
    if (tc__sft_zero_copy(sf, e))
        return tc_wrap_at(sf->ctx, tc__sft_dtypes[e->code].as, e->ndim, e->shape, NULL, (void *)(sf->data + e->begin), file,
                          line);
    /* converted (or merely realigned / byte-swapped) into a fresh tensor */
    n = (e->end - e->begin) / (uint64_t)tc__sft_dtypes[e->code].bytes;
    buf = tc__malloc((size_t)(n ? n : 1) * tc_dtype_size(tc__sft_dtypes[e->code].as));
    if (!buf) {
        tc__fmt(text, sizeof text, "%s: out of memory for '%s'", where, name);
        return tc__error_tensor(sf->ctx, TC_ERR_OOM, text);
    }
    for (i = 0; i < n; i++) {
        const unsigned char *p = sf->data + e->begin;
        const int wb = tc__sft_dtypes[e->code].bytes;
        uint64_t bits = tc__sft_bits(p, wb, i);
        if (kind == 0 && wb == 4) ((uint32_t *)buf)[i] = (uint32_t)bits;
        else if (kind == 0) ((uint16_t *)buf)[i] = (uint16_t)bits;
        else if (kind == 4) ((unsigned char *)buf)[i] = bits != 0;
        else if (kind == 1) {
            double d;
            memcpy(&d, &bits, sizeof d);
            ((float *)buf)[i] = (float)d;
        } else {
            /* integers into i32: a value that does not fit is an error, not a wrap */
            int64_t v = kind == 2 ? (int64_t)(bits << (64 - 8 * wb)) >> (64 - 8 * wb) : (int64_t)bits;
            if ((kind == 3 && bits > 0x7FFFFFFFu) || v < INT32_MIN || v > INT32_MAX) {
                TC_FREE(buf);
                tc__fmt(text, sizeof text, "%s: '%s' (%s) holds %s%llu at element %llu, outside i32", where, name,
                        tc__sft_dtypes[e->code].name, v < 0 && kind == 2 ? "-" : "",
                        (unsigned long long)(v < 0 && kind == 2 ? (uint64_t)0 - (uint64_t)v : bits),
                        (unsigned long long)i);
                return tc__error_tensor(sf->ctx, TC_ERR_OVERFLOW, text);
            }
            ((int32_t *)buf)[i] = (int32_t)v;
        }
    }
    t = tc_from_data_at(sf->ctx, tc__sft_dtypes[e->code].as, e->ndim, e->shape, buf, file, line);
    TC_FREE(buf);
    return t;
}

/* ---- the writer ------------------------------------------------------------------ */

TC__FN void tc__json_string(tc__text *t, const char *s) {
    tc__text_printf(t, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') tc__text_printf(t, "\\%c", c);
        else if (c < 0x20) tc__text_printf(t, "\\u%04x", c);
        else tc__text_printf(t, "%c", c);
    }
    tc__text_printf(t, "\"");
}

TC__FN const char *tc__sft_dtype_name(tc_dtype dt) {
    int i;
    for (i = 0; i < TC__ST_NDTYPES; i++)
        if (tc__sft_dtypes[i].kind == 0 || tc__sft_dtypes[i].kind == 4)
            if (tc__sft_dtypes[i].as == dt) return tc__sft_dtypes[i].name;
    return NULL;
}

/* The header's text for the tensors (NULL metadata: none); *len its length. */
TC__FN char *tc__sft_header(int n, const char *const *names, tc_tensor *const *ts, const char *const *meta, size_t *len) {
    tc__text t;
    uint64_t at = 0;
    int pass, i, k;
    t.p = NULL;
    t.n = 0;
    t.cap = 0;
    /* the first pass measures, the second writes */
    for (pass = 0; pass < 2; pass++) {
        if (pass) {
            t.cap = t.n + 8;
            t.n = 0;
            at = 0;
            if (!(t.p = (char *)tc__malloc(t.cap))) return NULL;
        }
        tc__text_printf(&t, "{");
        if (meta && meta[0]) {
            tc__text_printf(&t, "\"__metadata__\":{");
            for (i = 0; meta[i] && meta[i + 1]; i += 2) {
                if (i) tc__text_printf(&t, ",");
                tc__json_string(&t, meta[i]);
                tc__text_printf(&t, ":");
                tc__json_string(&t, meta[i + 1]);
            }
            tc__text_printf(&t, "}%s", n ? "," : "");
        }
        for (i = 0; i < n; i++) {
            uint64_t bytes = (uint64_t)tc_numel(ts[i]) * tc_dtype_size(tc_type(ts[i]));
            if (i) tc__text_printf(&t, ",");
            tc__json_string(&t, names[i]);
            tc__text_printf(&t, ":{\"dtype\":\"%s\",\"shape\":[", tc__sft_dtype_name(tc_type(ts[i])));
            for (k = 0; k < tc_ndim(ts[i]); k++) tc__text_printf(&t, "%s%lld", k ? "," : "", (long long)tc_shape(ts[i])[k]);
            tc__text_printf(&t, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)at, (unsigned long long)(at + bytes));
            at += bytes;
        }
        tc__text_printf(&t, "}");
        /* padded with spaces so the data starts 8-byte aligned */
        while ((t.n + 8) % 8) tc__text_printf(&t, " ");
    }
    *len = t.n;
    return t.p;
}

TC__FN int tc__sft_cmp_str(const void *a, const void *b) {
    TC__SFT_NAME_CMP_COUNT();
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* TC_OK when the n names are distinct: sorted, not each against all. */
TC__FN tc_result tc__sft_names_unique(int n, const char *const *names, char *err, size_t errcap) {
    const char **ord = (const char **)tc__malloc(sizeof(char *) * (size_t)(n > 0 ? n : 1));
    tc_result r = TC_OK;
    int i;
    if (!ord) {
        tc__fmt(err, errcap, "tc_safetensors_save: out of memory");
        return TC_ERR_OOM;
    }
    for (i = 0; i < n; i++) ord[i] = names[i];
    qsort((void *)ord, (size_t)n, sizeof ord[0], tc__sft_cmp_str);
    for (i = 1; i < n && r == TC_OK; i++)
        if (strcmp(ord[i - 1], ord[i]) == 0) {
            tc__fmt(err, errcap, "tc_safetensors_save: name '%s' given twice", ord[i]);
            r = TC_ERR_INVALID_ARG;
        }
    TC_FREE((void *)ord);
    return r;
}

TCDEF tc_result tc_safetensors_save(const char *path, int n, const char *const *names, tc_tensor *const *tensors,
                                    const char *const *metadata, char *err, size_t errcap) {
    char dummy[2], *hdr = NULL;
    size_t hlen = 0;
    unsigned char len8[8];
    FILE *fp;
    int i, k, ok;
    tc_result r;
    if (!err || !errcap) err = dummy, errcap = sizeof dummy;
    err[0] = 0;
    if (!path || n < 0 || (n > 0 && (!names || !tensors))) {
        tc__fmt(err, errcap, "tc_safetensors_save: %s", !path ? "path is NULL" : n < 0 ? "n < 0" : "names or tensors is NULL");
        return !path || n >= 0 ? TC_ERR_NULL : TC_ERR_INVALID_ARG;
    }
    for (i = 0; i < n; i++) {
        if (!names[i] || !names[i][0] || strcmp(names[i], "__metadata__") == 0) {
            tc__fmt(err, errcap, "tc_safetensors_save: name %d is %s", i, !names[i] ? "NULL" : !names[i][0] ? "empty" : "reserved");
            return names[i] ? TC_ERR_INVALID_ARG : TC_ERR_NULL;
        }
        if (tc_status(tensors[i]) != TC_OK || !tc__sft_dtype_name(tc_type(tensors[i]))) {
            tc__fmt(err, errcap, "tc_safetensors_save: tensor '%s' %s", names[i],
                    tc_status(tensors[i]) != TC_OK ? "is an errored tensor" : "has a dtype safetensors cannot hold");
            return tc_status(tensors[i]) != TC_OK ? tc_status(tensors[i]) : TC_ERR_DTYPE;
        }
    }
    if ((r = tc__sft_names_unique(n, names, err, errcap)) != TC_OK) return r;
    if (!(hdr = tc__sft_header(n, names, tensors, metadata, &hlen))) {
        tc__fmt(err, errcap, "tc_safetensors_save: out of memory");
        return TC_ERR_OOM;
    }
    for (i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    fp = fopen(path, "wb");
    ok = fp && fwrite(len8, 1, 8, fp) == 8 && fwrite(hdr, 1, hlen, fp) == hlen;
    TC_FREE(hdr);
    for (i = 0; ok && i < n; i++) {
        size_t w = tc_dtype_size(tc_type(tensors[i])), bytes = (size_t)tc_numel(tensors[i]) * w, b;
        unsigned char *buf = (unsigned char *)tc__malloc(bytes ? bytes : 1);
        r = buf ? tc_read(tensors[i], tc_type(tensors[i]), buf, bytes) : TC_ERR_OOM;
        ok = r == TC_OK;
        if (ok && !tc__little_endian() && w > 1) /* the file is little-endian */
            for (b = 0; b < bytes; b += w)
                for (k = 0; k < (int)w / 2; k++) {
                    unsigned char x = buf[b + (size_t)k];
                    buf[b + (size_t)k] = buf[b + w - 1 - (size_t)k];
                    buf[b + w - 1 - (size_t)k] = x;
                }
        ok = ok && fwrite(buf, 1, bytes, fp) == bytes;
        TC_FREE(buf);
    }
    if (fp && fclose(fp) != 0) ok = 0;
    if (!ok) { /* out of memory is not an I/O error: the caller may retry with less in use */
        if (fp) remove(path);
        if (r != TC_OK)
            tc__fmt(err, errcap, "tc_safetensors_save: %s while writing tensor '%s' to %s",
                    r == TC_ERR_OOM ? "out of memory" : tc_result_string(r), names[i - 1], path);
        else tc__fmt(err, errcap, "tc_safetensors_save: cannot write %s", path);
        return r != TC_OK ? r : TC_ERR_IO;
    }
    return TC_OK;
}
