/* gpt2.c: GPT-2 from a Hugging Face checkpoint directory (model.safetensors
 * in GPT-2's layout: wte, wpe, h.N.ln_1, h.N.attn.c_attn / c_proj (Conv1D,
 * weight [in, out]), h.N.ln_2, h.N.mlp.c_fc / c_proj, ln_f, with or without
 * a "transformer." prefix; the LM head tied to wte), generating from prompt
 * token ids with a KV cache, eager and compiled.
 *
 *     make build/gpt2
 *     ./build/gpt2                                 a random 4-layer model
 *     ./build/gpt2 --model gpt2/ --prompt "464 2068 7586 21831" --tokens 20
 *
 * With vocab.json in the directory the tokens are printed as text too.
 * Options: --tokens N (to generate), --topk K (0: greedy), --temperature T,
 * --seed S, --threads N, --eager (generate op by op instead), --dump FILE
 * (the prompt's last logits, eager then compiled, and the generated ids:
 * for the oracle test).  n_head comes from config.json when present, else
 * d / 64 (every GPT-2 size).
 *
 * Two compiled functions: the prompt (causal attention over it, no cache)
 * and one decode step (a token against the cache).  The cache is one
 * preallocated [max_positions, 2 (K, V), layers, heads, head_dim] buffer:
 * a step reads its first T rows (a contiguous view whose only changing
 * size is marked dynamic, so the step compiles once, not per token) and
 * returns the new token's row, which the loop writes at row T.
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct layer {
    tc_tensor *ln1_w, *ln1_b, *attn_w, *attn_b, *proj_w, *proj_b;
    tc_tensor *ln2_w, *ln2_b, *fc_w, *fc_b, *fc2_w, *fc2_b;
} layer;

typedef struct gpt2 {
    int64_t n_layer, n_head, d, vocab, n_ctx;
    tc_tensor *wte, *wpe, *lnf_w, *lnf_b;
    layer *h;
} gpt2;

/* What a compiled function is: the prompt (no cache) or a decode step. */
typedef struct step_user {
    const gpt2 *m;
    int decode;
} step_user;

/* ---- weights ------------------------------------------------------------------- */

static tc_safetensors *g_st;
static const char *g_prefix = "";
static int g_missing;
static uint64_t g_seed = 1;

static tc_tensor *param(tc_ctx *ctx, const char *name, int ndim, int64_t a, int64_t b, double scale, double offset) {
    int64_t shape[2];
    tc_tensor *t;
    shape[0] = a, shape[1] = b;
    if (g_st) {
        char full[160];
        snprintf(full, sizeof full, "%s%s", g_prefix, name);
        t = tc_safetensors_get(g_st, full);
        if (tc_status(t) != TC_OK) {
            fprintf(stderr, "gpt2: %s\n", tc_error(t));
            g_missing++;
        } else if (tc_ndim(t) != ndim || tc_dim(t, 0) != a || (ndim == 2 && tc_dim(t, 1) != b)) {
            fprintf(stderr, "gpt2: %s%s has an unexpected shape\n", g_prefix, name);
            g_missing++;
        } else if (tc_type(t) != TC_F32) {
            t = tc_cast(ctx, t, TC_F32);
        }
    } else {
        t = tc_add_scalar(ctx, tc_rand_normal(ctx, ndim, shape, 0.0, scale, g_seed++), offset);
    }
    return tc_persist(t);
}

/* A tensor's dims from the checkpoint (-1 when absent). */
static int64_t dim_of(const char *name, int d) {
    char full[160];
    tc_safetensors_info info;
    snprintf(full, sizeof full, "%s%s", g_prefix, name);
    if (tc_safetensors_info_of(g_st, tc_safetensors_find(g_st, full), &info) != TC_OK || d >= info.ndim) return -1;
    return info.shape[d];
}

/* "n_head": N from config.json, or 0. */
static int64_t config_heads(const char *dir) {
    char path[1024], buf[65536], *p;
    size_t n;
    FILE *fp;
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (!(fp = fopen(path, "r"))) return 0;
    n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    p = strstr(buf, "\"n_head\"");
    if (!p || !(p = strchr(p, ':'))) return 0;
    return strtol(p + 1, NULL, 10);
}

static int load(tc_ctx *ctx, gpt2 *m, const char *dir) {
    int64_t i, d;
    if (g_st) {
        if (tc_safetensors_find(g_st, "wte.weight") < 0 && tc_safetensors_find(g_st, "transformer.wte.weight") >= 0)
            g_prefix = "transformer.";
        m->vocab = dim_of("wte.weight", 0);
        m->d = dim_of("wte.weight", 1);
        m->n_ctx = dim_of("wpe.weight", 0);
        for (m->n_layer = 0;; m->n_layer++) {
            char name[64];
            snprintf(name, sizeof name, "h.%lld.ln_1.weight", (long long)m->n_layer);
            if (dim_of(name, 0) < 0) break;
        }
        m->n_head = config_heads(dir);
        if (m->n_head <= 0) m->n_head = m->d / 64;
        if (m->vocab < 1 || m->d < 1 || m->n_ctx < 1 || m->n_layer < 1 || m->n_head < 1 || m->d % m->n_head) {
            fprintf(stderr, "gpt2: %s: not GPT-2's layout (wte, wpe, h.N.*)\n", dir);
            return -1;
        }
    }
    d = m->d;
    m->h = (layer *)calloc((size_t)m->n_layer, sizeof(layer));
    m->wte = param(ctx, "wte.weight", 2, m->vocab, d, 0.02, 0.0);
    m->wpe = param(ctx, "wpe.weight", 2, m->n_ctx, d, 0.01, 0.0);
    for (i = 0; i < m->n_layer; i++) {
        layer *l = &m->h[i];
        char n[96];
#define P_(field, suffix, nd, a, b, sc, off)                                  \
    (snprintf(n, sizeof n, "h.%lld.%s", (long long)i, suffix), l->field = param(ctx, n, nd, a, b, sc, off))
        P_(ln1_w, "ln_1.weight", 1, d, 0, 0.1, 1.0);
        P_(ln1_b, "ln_1.bias", 1, d, 0, 0.1, 0.0);
        P_(attn_w, "attn.c_attn.weight", 2, d, 3 * d, 0.02, 0.0); /* Conv1D: [in, out] */
        P_(attn_b, "attn.c_attn.bias", 1, 3 * d, 0, 0.02, 0.0);
        P_(proj_w, "attn.c_proj.weight", 2, d, d, 0.02, 0.0);
        P_(proj_b, "attn.c_proj.bias", 1, d, 0, 0.02, 0.0);
        P_(ln2_w, "ln_2.weight", 1, d, 0, 0.1, 1.0);
        P_(ln2_b, "ln_2.bias", 1, d, 0, 0.1, 0.0);
        P_(fc_w, "mlp.c_fc.weight", 2, d, 4 * d, 0.02, 0.0);
        P_(fc_b, "mlp.c_fc.bias", 1, 4 * d, 0, 0.02, 0.0);
        P_(fc2_w, "mlp.c_proj.weight", 2, 4 * d, d, 0.02, 0.0);
        P_(fc2_b, "mlp.c_proj.bias", 1, d, 0, 0.02, 0.0);
#undef P_
    }
    m->lnf_w = param(ctx, "ln_f.weight", 1, d, 0, 0.1, 1.0);
    m->lnf_b = param(ctx, "ln_f.bias", 1, d, 0, 0.1, 0.0);
    return g_missing ? -1 : 0;
}

/* ---- the model ------------------------------------------------------------------- */

/* Conv1D: x @ w + b with w [in, out] */
static tc_tensor *conv1d(tc_ctx *ctx, tc_tensor *x, tc_tensor *w, tc_tensor *b) {
    return tc_add(ctx, tc_matmul(ctx, x, w), b);
}

/* in: ids [T] and positions [T] (i32); a decode step also the cache's
 * first Tp rows [Tp, 2, layers, heads, head_dim].  out: the last
 * position's logits [vocab], then this call's rows [T, 2, layers, heads,
 * head_dim]. */
static void step(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    const step_user *u = (const step_user *)user;
    const gpt2 *m = u->m;
    const int64_t T = tc_dim(in[0], 0), H = m->n_head, hd = m->d / m->n_head;
    int64_t sh_heads[3], sh_merged[2], sh_row[5];
    int perm[3] = {1, 0, 2};
    tc_tensor *x, **ks = (tc_tensor **)malloc(sizeof(tc_tensor *) * 2 * (size_t)m->n_layer), **vs = ks + m->n_layer, *kv[2];
    int64_t i;
    sh_heads[0] = T, sh_heads[1] = H, sh_heads[2] = hd;
    sh_merged[0] = T, sh_merged[1] = m->d;
    sh_row[0] = T, sh_row[1] = 1, sh_row[2] = 1, sh_row[3] = H, sh_row[4] = hd;
    x = tc_add(ctx, tc_embedding(ctx, m->wte, in[0]), tc_embedding(ctx, m->wpe, in[1])); /* [T, d] */
    for (i = 0; i < m->n_layer; i++) {
        const layer *l = &m->h[i];
        tc_tensor *h = tc_layer_norm(ctx, x, 1, l->ln1_w, l->ln1_b, 1e-5), *qkv, *q, *k, *v, *a;
        qkv = conv1d(ctx, h, l->attn_w, l->attn_b); /* [T, 3d] */
        /* [T, d] -> [H, T, hd] */
        q = tc_reshape(ctx, tc_slice(ctx, qkv, 1, 0, m->d, 1), 3, sh_heads); /* [T, H, hd] */
        k = tc_reshape(ctx, tc_slice(ctx, qkv, 1, m->d, 2 * m->d, 1), 3, sh_heads);
        v = tc_reshape(ctx, tc_slice(ctx, qkv, 1, 2 * m->d, 3 * m->d, 1), 3, sh_heads);
        ks[i] = tc_reshape(ctx, k, 5, sh_row);
        vs[i] = tc_reshape(ctx, v, 5, sh_row);
        q = tc_permute(ctx, q, perm); /* [H, T, hd] */
        if (u->decode) { /* the cached positions, then this one */
            tc_tensor *kk[2], *vv[2];
            kk[0] = tc_select(ctx, tc_select(ctx, in[2], 1, 0), 1, i), kk[1] = k; /* [Tp, H, hd], [T, H, hd] */
            vv[0] = tc_select(ctx, tc_select(ctx, in[2], 1, 1), 1, i), vv[1] = v;
            a = tc_scaled_dot_product_attention(ctx, q, tc_permute(ctx, tc_concat(ctx, 2, kk, 0), perm),
                                                tc_permute(ctx, tc_concat(ctx, 2, vv, 0), perm), NULL, 0, 0.0);
        } else {
            a = tc_scaled_dot_product_attention(ctx, q, tc_permute(ctx, k, perm), tc_permute(ctx, v, perm), NULL, 1, 0.0);
        }
        a = tc_reshape(ctx, tc_permute(ctx, a, perm), 2, sh_merged); /* [T, d] */
        x = tc_add(ctx, x, conv1d(ctx, a, l->proj_w, l->proj_b));
        h = tc_layer_norm(ctx, x, 1, l->ln2_w, l->ln2_b, 1e-5);
        h = conv1d(ctx, tc_gelu_tanh(ctx, conv1d(ctx, h, l->fc_w, l->fc_b)), l->fc2_w, l->fc2_b);
        x = tc_add(ctx, x, h);
    }
    /* only the last position's logits are needed: the LM head is wte, tied */
    x = tc_layer_norm(ctx, tc_select(ctx, x, 0, T - 1), 1, m->lnf_w, m->lnf_b, 1e-5);
    out[0] = tc_linear(ctx, x, m->wte, NULL);
    kv[0] = tc_concat(ctx, (int)m->n_layer, ks, 2);
    kv[1] = tc_concat(ctx, (int)m->n_layer, vs, 2);
    out[1] = tc_concat(ctx, 2, kv, 1);
    free(ks);
}

/* ---- vocab.json (optional): ids to text ----------------------------------------- */

static char **g_vocab; /* id -> the token's bytes */
static int64_t g_nvocab;

/* GPT-2's byte-level alphabet: code point -> byte (-1: none). */
static int byte_of(unsigned cp) {
    static int table[512];
    static int ready;
    if (!ready) {
        int b, n = 0;
        for (b = 0; b < 512; b++) table[b] = -1;
        for (b = 0; b < 256; b++) {
            if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) table[b] = b;
            else table[256 + n++] = b;
        }
        ready = 1;
    }
    return cp < 512 ? table[cp] : -1;
}

static void load_vocab(const char *dir) {
    char path[1024];
    FILE *fp;
    long size;
    char *text, *p;
    snprintf(path, sizeof path, "%s/vocab.json", dir);
    if (!(fp = fopen(path, "rb"))) return;
    fseek(fp, 0, SEEK_END);
    size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    text = (char *)malloc((size_t)size + 1);
    if (!text || fread(text, 1, (size_t)size, fp) != (size_t)size) {
        fclose(fp);
        free(text);
        return;
    }
    fclose(fp);
    text[size] = 0;
    g_nvocab = 1 << 17;
    g_vocab = (char **)calloc((size_t)g_nvocab, sizeof(char *));
    for (p = text; (p = strchr(p, '"')) != NULL;) {
        /* "token": id, the token in JSON escapes over the byte alphabet */
        char tok[256];
        int n = 0;
        long id;
        unsigned cp;
        for (p++; *p && *p != '"' && n < 250; p++) {
            cp = (unsigned char)*p;
            if (*p == '\\') {
                p++;
                if (*p == 'u') {
                    cp = (unsigned)strtoul((char[5]){p[1], p[2], p[3], p[4], 0}, NULL, 16);
                    p += 4;
                } else {
                    cp = (unsigned char)(*p == 'n' ? '\n' : *p == 't' ? '\t' : *p);
                }
            } else if (cp >= 0xC0) { /* UTF-8 of a code point below 512: two bytes */
                cp = (cp & 0x1F) << 6 | ((unsigned char)p[1] & 0x3F);
                p++;
            }
            if (byte_of(cp) >= 0) tok[n++] = (char)byte_of(cp);
        }
        if (*p != '"') break;
        p++;
        while (*p == ' ' || *p == ':') p++;
        id = strtol(p, &p, 10);
        if (id >= 0 && id < g_nvocab && !g_vocab[id]) {
            g_vocab[id] = (char *)malloc((size_t)n + 1);
            memcpy(g_vocab[id], tok, (size_t)n);
            g_vocab[id][n] = 0;
        }
    }
    free(text);
}

/* ---- generation ------------------------------------------------------------------ */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The next token from logits: the best, or a draw from the k best. */
static int sample(tc_tensor *logits, int64_t vocab, int topk, double temp, uint64_t *rng) {
    float *p = (float *)malloc(sizeof(float) * (size_t)vocab);
    int64_t i, best = 0;
    tc_read(logits, TC_F32, p, sizeof(float) * (size_t)vocab);
    for (i = 1; i < vocab; i++)
        if (p[i] > p[best]) best = i;
    if (topk > 1) {
        int64_t *top = (int64_t *)malloc(sizeof(int64_t) * (size_t)topk), j, n = 0;
        double w[256], sum = 0, r;
        for (j = 0; j < topk && j < 256; j++) { /* k passes: k is small */
            int64_t b = -1;
            for (i = 0; i < vocab; i++)
                if (p[i] > -INFINITY && (b < 0 || p[i] > p[b])) b = i;
            if (b < 0) break;
            top[n] = b;
            w[n] = exp((p[b] - p[best]) / (temp > 0 ? temp : 1.0));
            sum += w[n++];
            p[b] = -INFINITY;
        }
        *rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
        r = (double)(*rng >> 11) / 9007199254740992.0 * sum;
        for (j = 0; j + 1 < n && r >= w[j]; j++) r -= w[j];
        best = top[j];
        free(top);
    }
    free(p);
    return (int)best;
}

int main(int argc, char **argv) {
    const char *dir = NULL, *prompt = NULL, *dump = NULL;
    int tokens = 16, topk = 0, threads = 0, eager = 0, i, np = 0, prompt_ids[1024];
    double temp = 1.0, t0, first_ms, prompt_ms, tok_ms;
    uint64_t rng = 88172645463325252ull;
    char path[1100], err[256];
    gpt2 m;
    step_user up, ud;
    tc_ctx_options co;
    tc_ctx *ctx;
    tc_fn *fp = NULL, *fd = NULL;
    tc_tensor *KV, *out[2], *ein[3];
    int64_t cache[5], T, total;
    FILE *df = NULL;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--model") && v) dir = v, i++;
        else if (!strcmp(a, "--prompt") && v) prompt = v, i++;
        else if (!strcmp(a, "--tokens") && v) tokens = atoi(v), i++;
        else if (!strcmp(a, "--topk") && v) topk = atoi(v), i++;
        else if (!strcmp(a, "--temperature") && v) temp = atof(v), i++;
        else if (!strcmp(a, "--seed") && v) rng ^= (uint64_t)strtoull(v, NULL, 10) * 2654435761u, i++;
        else if (!strcmp(a, "--threads") && v) threads = atoi(v), i++;
        else if (!strcmp(a, "--dump") && v) dump = v, i++;
        else if (!strcmp(a, "--eager")) eager = 1;
        else {
            fprintf(stderr, "usage: %s [--model DIR] [--prompt \"ids\"] [--tokens N] [--topk K] [--temperature T] "
                            "[--seed S] [--threads N] [--eager] [--dump F]\n", argv[0]);
            return 2;
        }
    }
    /* "The quick brown fox" in GPT-2's tokens; a random model's vocabulary is 4096 */
    if (!prompt) prompt = dir ? "464 2068 7586 21831" : "464 2068 3586 1831";
    for (const char *p = prompt; np < 1024;) { /* "id id id" */
        char *e;
        long id = strtol(p, &e, 10);
        if (e == p) break;
        prompt_ids[np++] = (int)id;
        p = e;
    }
    if (np < 1 || tokens < 0 || topk < 0 || topk > 256) {
        fprintf(stderr, "gpt2: bad prompt or options\n");
        return 2;
    }
    memset(&co, 0, sizeof co);
    co.num_threads = threads;
    ctx = tc_ctx_create(&co);
    memset(&m, 0, sizeof m);
    m.n_layer = 4, m.n_head = 4, m.d = 256, m.vocab = 4096, m.n_ctx = 512; /* random weights: a small one */
    if (dir) {
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        if (!(g_st = tc_safetensors_open(ctx, path, err, sizeof err))) {
            fprintf(stderr, "gpt2: %s\n", err);
            return 1;
        }
        load_vocab(dir);
    }
    if (load(ctx, &m, dir ? dir : "") != 0) return 1;
    for (i = 0; i < np; i++)
        if (prompt_ids[i] < 0 || prompt_ids[i] >= m.vocab) {
            fprintf(stderr, "gpt2: prompt token %d is outside the vocabulary (%lld)\n", prompt_ids[i], (long long)m.vocab);
            return 2;
        }
    total = np + tokens < m.n_ctx ? np + tokens : m.n_ctx;
    printf("GPT-2 (%s): %lld layers, d %lld, %lld heads, vocab %lld, context %lld; %d threads, %s\n",
           dir ? dir : "random weights", (long long)m.n_layer, (long long)m.d, (long long)m.n_head, (long long)m.vocab,
           (long long)m.n_ctx, tc_ctx_num_threads(ctx), eager ? "eager" : "compiled");

    /* the cache: [max positions, K and V, layers, heads, head_dim] */
    cache[0] = total, cache[1] = 2, cache[2] = m.n_layer, cache[3] = m.n_head, cache[4] = m.d / m.n_head;
    KV = tc_persist(tc_zeros(ctx, TC_F32, 5, cache));
    up.m = &m, up.decode = 0;
    ud.m = &m, ud.decode = 1;
    if (!eager) {
        tc_compile_options o;
        memset(&o, 0, sizeof o);
        o.freeze = 1;
        o.num_inputs = 2;
        o.num_outputs = 2;
        fp = tc_compile(ctx, step, &up, &o);
        o.num_inputs = 3;
        fd = tc_compile(ctx, step, &ud, &o);
        tc_mark_dynamic(fd, 2, 0); /* the cached length grows by one per token */
    }
    if (dump) df = fopen(dump, "w");

    /* the prompt */
    tc_scope_begin(ctx);
    {
        int64_t n = np;
        int32_t pos[1024];
        for (i = 0; i < np; i++) pos[i] = i;
        ein[0] = tc_from_data(ctx, TC_I32, 1, &n, prompt_ids);
        ein[1] = tc_from_data(ctx, TC_I32, 1, &n, pos);
    }
    if (df) { /* both ways, for the oracle */
        int64_t v;
        float *lg = (float *)malloc(sizeof(float) * (size_t)m.vocab);
        tc_scope_begin(ctx);
        step(ctx, &up, ein, out);
        tc_read(out[0], TC_F32, lg, sizeof(float) * (size_t)m.vocab);
        for (v = 0; v < m.vocab; v++) fprintf(df, "%.9g%c", lg[v], v + 1 < m.vocab ? ' ' : '\n');
        tc_scope_end(ctx);
        if (fp) {
            tc_scope_begin(ctx);
            tc_call(fp, ein, out);
            tc_read(out[0], TC_F32, lg, sizeof(float) * (size_t)m.vocab);
            for (v = 0; v < m.vocab; v++) fprintf(df, "%.9g%c", lg[v], v + 1 < m.vocab ? ' ' : '\n');
            tc_scope_end(ctx);
        }
        free(lg);
    }
    t0 = now_ms();
    if (fp) {
        if (tc_call(fp, ein, out) != TC_OK) {
            fprintf(stderr, "gpt2: %s\n", tc_fn_error(fp));
            return 1;
        }
    } else {
        step(ctx, &up, ein, out);
    }
    if (tc_status(out[0]) != TC_OK) {
        fprintf(stderr, "gpt2: %s\n", tc_error(out[0]));
        return 1;
    }
    prompt_ms = now_ms() - t0;
    tc_copy(ctx, tc_slice(ctx, KV, 0, 0, np, 1), out[1]);
    printf("prompt:");
    for (i = 0; i < np; i++) printf(" %d", prompt_ids[i]);
    if (g_vocab) {
        printf("  \"");
        for (i = 0; i < np; i++) printf("%s", prompt_ids[i] < g_nvocab && g_vocab[prompt_ids[i]] ? g_vocab[prompt_ids[i]] : "?");
        printf("\"");
    }
    printf("\n");
    {
        int next = sample(out[0], m.vocab, topk, temp, &rng);
        tc_scope_end(ctx);
        printf("generated:");
        fflush(stdout);
        first_ms = 0;
        t0 = now_ms();
        for (T = np; T < total; T++) {
            int32_t id = next, pos = (int32_t)T;
            int64_t one = 1;
            double ts = now_ms();
            printf(" %d", next);
            if (g_vocab && next < g_nvocab && g_vocab[next]) printf(" (%s)", g_vocab[next]);
            fflush(stdout);
            if (df) fprintf(df, "%d ", next);
            if (T + 1 >= total) break;
            tc_scope_begin(ctx);
            ein[0] = tc_from_data(ctx, TC_I32, 1, &one, &id);
            ein[1] = tc_from_data(ctx, TC_I32, 1, &one, &pos);
            ein[2] = tc_slice(ctx, KV, 0, 0, T, 1); /* the first T rows, in place */
            if (fd) {
                if (tc_call(fd, ein, out) != TC_OK) {
                    fprintf(stderr, "\ngpt2: %s\n", tc_fn_error(fd));
                    return 1;
                }
            } else {
                step(ctx, &ud, ein, out);
            }
            tc_copy(ctx, tc_slice(ctx, KV, 0, T, T + 1, 1), out[1]);
            next = sample(out[0], m.vocab, topk, temp, &rng);
            tc_scope_end(ctx);
            if (T == np) first_ms = now_ms() - ts;
        }
        tok_ms = total - np > 2 ? (now_ms() - t0 - first_ms) / (double)(total - np - 2) : 0;
    }
    printf("\nprompt %.1f ms (%d tokens%s); decode: first step %.1f ms%s, then %.2f ms/token\n", prompt_ms, np,
           fp ? ", first call compiles" : "", first_ms, fd ? " (compiles)" : "", tok_ms);
    if (fd) {
        tc_explain_info info;
        tc_explain(fd, &info, NULL, 0);
        printf("decode step: %d compiled graph(s), %d recompiles over %lld tokens, %d kernels per token (%d op by op)\n",
               info.graphs, info.recompiles, (long long)(total - np), info.kernels, info.kernels_unfused);
    }
    if (df) fclose(df);
    tc_fn_free(fp);
    tc_fn_free(fd);
    tc_safetensors_close(g_st);
    tc_ctx_destroy(ctx);
    free(m.h);
    return 0;
}
