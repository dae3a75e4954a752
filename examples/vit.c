/* vit.c: a Vision Transformer encoder (patch-embedding conv, class token,
 * position embedding, pre-LN blocks, GELU MLP) from a safetensors
 * checkpoint in timm's layout or Hugging Face's, classifying a PPM image,
 * eagerly and compiled.
 *
 *     make build/vit
 *     ./build/vit                                  random ViT-S/16-shaped weights, a test pattern
 *     ./build/vit --weights vit_base_patch16_224.safetensors --image cat.ppm
 *
 * timm:  patch_embed.proj, cls_token, pos_embed, blocks.N.norm1,
 *        blocks.N.attn.qkv ([3D, D]) / attn.proj, blocks.N.norm2,
 *        blocks.N.mlp.fc1 / fc2, norm, head            (LayerNorm eps 1e-6)
 * HF:    vit.embeddings.{cls_token, position_embeddings,
 *        patch_embeddings.projection}, vit.encoder.layer.N.{layernorm_before,
 *        attention.attention.query/key/value, attention.output.dense,
 *        layernorm_after, intermediate.dense, output.dense}, vit.layernorm,
 *        classifier                                     (eps 1e-12)
 * Options: --heads H (default D / 64), --size S (default: the position
 * embedding's grid x patch), --batch N, --norm imagenet|half (input
 * normalization; default half, timm's and HF's ViT), --mode M, --threads N,
 * --runs N, --dump FILE (eager and compiled logits, for the oracle test).
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

typedef struct vblock {
    tc_tensor *n1_w, *n1_b, *qkv_w, *qkv_b, *proj_w, *proj_b, *n2_w, *n2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
} vblock;

typedef struct vit {
    int64_t D, heads, patch, grid, depth, classes;
    double eps;
    tc_tensor *pe_w, *pe_b, *cls, *pos, *norm_w, *norm_b, *head_w, *head_b;
    vblock *b;
} vit;

static tc_safetensors *g_st;
static int g_hf, g_missing;
static uint64_t g_seed = 1;

/* A checkpoint tensor by its timm name (translated for HF files), or random. */
static tc_tensor *get(tc_ctx *ctx, const char *name, int ndim, const int64_t *shape, double scale, double offset) {
    tc_tensor *t;
    if (!g_st) return tc_persist(tc_add_scalar(ctx, tc_rand_normal(ctx, ndim, shape, 0.0, scale, g_seed++), offset));
    t = tc_safetensors_get(g_st, name);
    if (tc_status(t) != TC_OK) {
        fprintf(stderr, "vit: %s\n", tc_error(t));
        g_missing++;
    } else if (tc_type(t) != TC_F32) {
        t = tc_cast(ctx, t, TC_F32);
    }
    return tc_persist(t);
}

static int64_t info_dim(const char *name, int d) {
    tc_safetensors_info info;
    if (tc_safetensors_info_of(g_st, tc_safetensors_find(g_st, name), &info) != TC_OK || d >= info.ndim) return -1;
    return info.shape[d];
}

/* HF keeps q, k and v apart: stacked into timm's qkv at load. */
static tc_tensor *hf_qkv(tc_ctx *ctx, int64_t i, const char *what) {
    static const char *const parts[3] = {"query", "key", "value"};
    tc_tensor *p[3];
    char name[160];
    int k;
    for (k = 0; k < 3; k++) {
        snprintf(name, sizeof name, "vit.encoder.layer.%lld.attention.attention.%s.%s", (long long)i, parts[k], what);
        p[k] = get(ctx, name, 0, NULL, 0, 0);
    }
    return tc_persist(tc_concat(ctx, 3, p, 0));
}

static int load(tc_ctx *ctx, vit *m) {
    int64_t i, D, s[4];
    char name[160];
    if (g_st) {
        g_hf = tc_safetensors_find(g_st, "vit.embeddings.cls_token") >= 0;
        const char *pe = g_hf ? "vit.embeddings.patch_embeddings.projection.weight" : "patch_embed.proj.weight";
        const char *pos = g_hf ? "vit.embeddings.position_embeddings" : "pos_embed";
        m->D = info_dim(pe, 0);
        m->patch = info_dim(pe, 2);
        m->grid = 0;
        if (info_dim(pos, 1) > 1)
            while ((m->grid + 1) * (m->grid + 1) <= info_dim(pos, 1) - 1) m->grid++;
        for (m->depth = 0;; m->depth++) {
            snprintf(name, sizeof name, g_hf ? "vit.encoder.layer.%lld.layernorm_before.weight" : "blocks.%lld.norm1.weight",
                     (long long)m->depth);
            if (tc_safetensors_find(g_st, name) < 0) break;
        }
        m->classes = info_dim(g_hf ? "classifier.weight" : "head.weight", 0);
        m->eps = g_hf ? 1e-12 : 1e-6;
        if (m->D < 1 || m->patch < 1 || m->grid < 1 || m->depth < 1 || m->classes < 1 || m->grid * m->grid + 1 != info_dim(pos, 1)) {
            fprintf(stderr, "vit: not a ViT checkpoint in timm's or Hugging Face's layout\n");
            return -1;
        }
    }
    if (m->heads <= 0) m->heads = m->D / 64 > 0 ? m->D / 64 : 1;
    if (m->D % m->heads) {
        fprintf(stderr, "vit: %lld heads do not divide D = %lld\n", (long long)m->heads, (long long)m->D);
        return -1;
    }
    D = m->D;
    m->b = (vblock *)calloc((size_t)m->depth, sizeof(vblock));
    s[0] = D, s[1] = 3, s[2] = m->patch, s[3] = m->patch;
    m->pe_w = get(ctx, g_hf ? "vit.embeddings.patch_embeddings.projection.weight" : "patch_embed.proj.weight", 4, s, 0.05, 0);
    m->pe_b = get(ctx, g_hf ? "vit.embeddings.patch_embeddings.projection.bias" : "patch_embed.proj.bias", 1, &D, 0.02, 0);
    s[0] = 1, s[1] = 1, s[2] = D;
    m->cls = get(ctx, g_hf ? "vit.embeddings.cls_token" : "cls_token", 3, s, 0.02, 0);
    s[1] = m->grid * m->grid + 1;
    m->pos = get(ctx, g_hf ? "vit.embeddings.position_embeddings" : "pos_embed", 3, s, 0.02, 0);
    for (i = 0; i < m->depth; i++) {
        vblock *b = &m->b[i];
        int64_t w2[2];
#define T_(f, timm, hf, nd, a, c, sc, off)                                                            \
    (w2[0] = a, w2[1] = c,                                                                           \
     snprintf(name, sizeof name, g_hf ? "vit.encoder.layer.%lld." hf : "blocks.%lld." timm, (long long)i), \
     b->f = get(ctx, name, nd, w2, sc, off))
        T_(n1_w, "norm1.weight", "layernorm_before.weight", 1, D, 0, 0.1, 1.0);
        T_(n1_b, "norm1.bias", "layernorm_before.bias", 1, D, 0, 0.1, 0.0);
        if (g_hf) {
            b->qkv_w = hf_qkv(ctx, i, "weight");
            b->qkv_b = hf_qkv(ctx, i, "bias");
        } else {
            T_(qkv_w, "attn.qkv.weight", "", 2, 3 * D, D, 0.05, 0.0);
            T_(qkv_b, "attn.qkv.bias", "", 1, 3 * D, 0, 0.02, 0.0);
        }
        T_(proj_w, "attn.proj.weight", "attention.output.dense.weight", 2, D, D, 0.05, 0.0);
        T_(proj_b, "attn.proj.bias", "attention.output.dense.bias", 1, D, 0, 0.02, 0.0);
        T_(n2_w, "norm2.weight", "layernorm_after.weight", 1, D, 0, 0.1, 1.0);
        T_(n2_b, "norm2.bias", "layernorm_after.bias", 1, D, 0, 0.1, 0.0);
        T_(fc1_w, "mlp.fc1.weight", "intermediate.dense.weight", 2, 4 * D, D, 0.05, 0.0);
        T_(fc1_b, "mlp.fc1.bias", "intermediate.dense.bias", 1, 4 * D, 0, 0.02, 0.0);
        T_(fc2_w, "mlp.fc2.weight", "output.dense.weight", 2, D, 4 * D, 0.05, 0.0);
        T_(fc2_b, "mlp.fc2.bias", "output.dense.bias", 1, D, 0, 0.02, 0.0);
#undef T_
    }
    s[0] = D;
    m->norm_w = get(ctx, g_hf ? "vit.layernorm.weight" : "norm.weight", 1, s, 0.1, 1.0);
    m->norm_b = get(ctx, g_hf ? "vit.layernorm.bias" : "norm.bias", 1, s, 0.1, 0.0);
    s[0] = m->classes, s[1] = D;
    m->head_w = get(ctx, g_hf ? "classifier.weight" : "head.weight", 2, s, 0.05, 0.0);
    m->head_b = get(ctx, g_hf ? "classifier.bias" : "head.bias", 1, s, 0.02, 0.0);
    return g_missing ? -1 : 0;
}

/* x [B, 3, S, S] -> logits [B, classes] */
static void forward(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    const vit *m = (const vit *)user;
    const int64_t B = tc_dim(in[0], 0), N = m->grid * m->grid + 1, D = m->D, H = m->heads;
    int64_t sh_tok[3], sh_heads[5], sh_cls[3];
    int perm_tok[3] = {0, 2, 1}, perm_qkv[5] = {2, 0, 3, 1, 4}, perm_back[4] = {0, 2, 1, 3};
    tc_conv2d_opts o;
    tc_tensor *x, *parts[2];
    int64_t i;
    memset(&o, 0, sizeof o);
    o.stride[0] = o.stride[1] = (int)m->patch;
    sh_tok[0] = B, sh_tok[1] = D, sh_tok[2] = N - 1;
    sh_cls[0] = B, sh_cls[1] = 1, sh_cls[2] = D;
    /* patches: [B, D, g, g] -> [B, g*g, D]; the class token first */
    x = tc_permute(ctx, tc_reshape(ctx, tc_conv2d(ctx, in[0], m->pe_w, m->pe_b, &o), 3, sh_tok), perm_tok);
    parts[0] = tc_expand(ctx, m->cls, 3, sh_cls);
    parts[1] = x;
    x = tc_add(ctx, tc_concat(ctx, 2, parts, 1), m->pos);
    sh_heads[0] = B, sh_heads[1] = N, sh_heads[2] = 3, sh_heads[3] = H, sh_heads[4] = D / H;
    sh_tok[0] = B, sh_tok[1] = N, sh_tok[2] = D;
    for (i = 0; i < m->depth; i++) {
        const vblock *b = &m->b[i];
        tc_tensor *h = tc_layer_norm(ctx, x, 1, b->n1_w, b->n1_b, m->eps), *qkv, *a;
        /* [B, N, 3D] -> [3, B, H, N, hd] */
        qkv = tc_permute(ctx, tc_reshape(ctx, tc_linear(ctx, h, b->qkv_w, b->qkv_b), 5, sh_heads), perm_qkv);
        a = tc_scaled_dot_product_attention(ctx, tc_select(ctx, qkv, 0, 0), tc_select(ctx, qkv, 0, 1),
                                            tc_select(ctx, qkv, 0, 2), NULL, 0, 0.0);
        a = tc_reshape(ctx, tc_permute(ctx, a, perm_back), 3, sh_tok);
        x = tc_add(ctx, x, tc_linear(ctx, a, b->proj_w, b->proj_b));
        h = tc_layer_norm(ctx, x, 1, b->n2_w, b->n2_b, m->eps);
        x = tc_add(ctx, x, tc_linear(ctx, tc_gelu(ctx, tc_linear(ctx, h, b->fc1_w, b->fc1_b)), b->fc2_w, b->fc2_b));
    }
    x = tc_layer_norm(ctx, tc_select(ctx, x, 1, 0), 1, m->norm_w, m->norm_b, m->eps); /* the class token */
    out[0] = tc_linear(ctx, x, m->head_w, m->head_b);
}

int main(int argc, char **argv) {
    const char *weights = NULL, *image = NULL, *dump = NULL, *mode_name = "default", *norm = "half";
    int size = 0, batch = 1, threads = 0, runs = 10, i, raw = 0, rw = 0, rh = 0;
    char err[256];
    vit m;
    tc_ctx_options co;
    tc_ctx *ctx;
    tc_tensor *x, *ye, *yc;
    unsigned char *px = NULL;
    memset(&m, 0, sizeof m);
    m.D = 384, m.patch = 16, m.grid = 14, m.depth = 12, m.classes = 1000, m.eps = 1e-6; /* ViT-S/16 */
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--weights") && v) weights = v, i++;
        else if (!strcmp(a, "--image") && v) image = v, i++;
        else if (!strcmp(a, "--dump") && v) dump = v, i++;
        else if (!strcmp(a, "--mode") && v) mode_name = v, i++;
        else if (!strcmp(a, "--norm") && v) norm = v, i++;
        else if (!strcmp(a, "--heads") && v) m.heads = atoi(v), i++;
        else if (!strcmp(a, "--depth") && v) m.depth = atoi(v), i++;
        else if (!strcmp(a, "--size") && v) size = atoi(v), i++;
        else if (!strcmp(a, "--batch") && v) batch = atoi(v), i++;
        else if (!strcmp(a, "--threads") && v) threads = atoi(v), i++;
        else if (!strcmp(a, "--runs") && v) runs = atoi(v), i++;
        else if (!strcmp(a, "--raw") && i + 2 < argc) raw = 1, rw = atoi(argv[i + 1]), rh = atoi(argv[i + 2]), i += 2;
        else {
            fprintf(stderr, "usage: %s [--weights F] [--image F.ppm | --image F --raw W H] [--heads H] [--depth N] "
                            "[--size S] [--batch N] [--norm imagenet|half] [--mode M] [--threads N] [--runs N] [--dump F]\n",
                    argv[0]);
            return 2;
        }
    }
    memset(&co, 0, sizeof co);
    co.num_threads = threads;
    ctx = tc_ctx_create(&co);
    if (weights && !(g_st = tc_safetensors_open(ctx, weights, err, sizeof err))) {
        fprintf(stderr, "vit: %s\n", err);
        return 1;
    }
    if (batch < 1 || runs < 1 || m.depth < 1 || load(ctx, &m) != 0) return 1;
    if (size && size != m.grid * m.patch) {
        fprintf(stderr, "vit: the position embedding fixes the input at %lld px\n", (long long)(m.grid * m.patch));
        return 2;
    }
    size = (int)(m.grid * m.patch);
    if (image) {
        if (!(px = read_image(image, raw, &rw, &rh))) {
            fprintf(stderr, "vit: cannot read %s\n", image);
            return 1;
        }
    }
    x = tc_persist(image_tensor(ctx, px, rw, rh, size, batch, strcmp(norm, "imagenet") ? image_mean_half : image_mean_imagenet,
                                strcmp(norm, "imagenet") ? image_std_half : image_std_imagenet));
    printf("ViT (%s, %s layout): D %lld, %lld heads, %lld blocks, patch %lld, %lld tokens, %lld classes; input [%d, 3, %d, %d], "
           "%d threads\n",
           weights ? weights : "random weights", g_hf ? "Hugging Face" : "timm", (long long)m.D, (long long)m.heads,
           (long long)m.depth, (long long)m.patch, (long long)(m.grid * m.grid + 1), (long long)m.classes, batch, size,
           size, tc_ctx_num_threads(ctx));
    if (run_eager_and_compiled(ctx, "vit", forward, &m, x, mode_name, runs, &ye, &yc)) return 1;
    if (dump) dump_logits(ctx, dump, ye, yc);
    {
        int64_t n = m.classes, j, best = 0;
        float *v = (float *)malloc(sizeof(float) * (size_t)n);
        tc_read(tc_select(ctx, yc, 0, 0), TC_F32, v, sizeof(float) * (size_t)n);
        for (j = 1; j < n; j++)
            if (v[j] > v[best]) best = j;
        printf("compiled: class %lld (logit %.3f)\n", (long long)best, v[best]);
        free(v);
    }
    tc_safetensors_close(g_st);
    tc_ctx_destroy(ctx);
    free(m.b);
    free(px);
    return 0;
}
