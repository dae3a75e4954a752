/* resnet.c: torchvision's ResNet (18/34: basic blocks, 50/101/152:
 * bottlenecks) loaded from a safetensors checkpoint in torchvision's layout
 * (conv1, bn1, layerN.M.convK / bnK, layerN.M.downsample.0/1, fc), run
 * eagerly and compiled with batch norm folded into the convolutions
 * (freeze), classifying an image given as PPM (P6) or raw RGB bytes.
 *
 *     make build/resnet
 *     ./build/resnet                                    random ResNet-18, a test pattern
 *     ./build/resnet --weights resnet18.safetensors --image cat.ppm [--labels classes.txt]
 *
 * Options: --depth 18|34|50|101|152 and --width N (random weights only; a
 * checkpoint says what it is), --size S (input side, default 224), --batch
 * N (the image repeated), --raw W H (the image is raw RGB), --mode
 * default|reduce-overhead|max-autotune, --threads N, --runs N,
 * --dump FILE (eager and compiled logits as text, for the oracle test).
 * A checkpoint from torchvision: save `model.state_dict()` with
 * safetensors.torch.save_file (num_batches_tracked entries are ignored).
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

typedef struct bn {
    tc_tensor *w, *b, *mean, *var;
} bn;

typedef struct block {
    tc_tensor *conv[3];        /* conv1, conv2 (, conv3 for bottlenecks) */
    bn norm[3];
    tc_tensor *down;           /* downsample.0 (1 x 1 conv), or NULL     */
    bn down_bn;                /* downsample.1                           */
    int stride;
} block;

typedef struct resnet {
    int bottleneck, nblocks[4];
    tc_tensor *conv1;
    bn bn1;
    block blocks[64];
    int n;
    tc_tensor *fc_w, *fc_b;
} resnet;

/* ---- weights ----------------------------------------------------------------- */

static tc_safetensors *g_st;
static int g_missing;
static uint64_t g_seed = 1;

/* A parameter: from the checkpoint, or random with the given shape. */
static tc_tensor *param(tc_ctx *ctx, const char *name, int ndim, const int64_t *shape, double scale, double offset) {
    tc_tensor *t;
    if (g_st) {
        t = tc_safetensors_get(g_st, name);
        if (tc_status(t) != TC_OK) {
            fprintf(stderr, "resnet: %s\n", tc_error(t));
            g_missing++;
        } else if (tc_type(t) != TC_F32) {
            t = tc_cast(ctx, t, TC_F32);
        }
    } else {
        t = tc_add_scalar(ctx, tc_rand_uniform(ctx, ndim, shape, -scale, scale, g_seed++), offset);
    }
    return tc_persist(t);
}

static tc_tensor *conv_w(tc_ctx *ctx, const char *name, int64_t cout, int64_t cin, int64_t k) {
    int64_t s[4];
    s[0] = cout, s[1] = cin, s[2] = k, s[3] = k;
    return param(ctx, name, 4, s, sqrt(6.0 / (double)(cin * k * k)), 0.0); /* He-uniform */
}

static bn bn_of(tc_ctx *ctx, const char *prefix, int64_t c) {
    char name[128];
    bn b;
    snprintf(name, sizeof name, "%s.weight", prefix);
    b.w = param(ctx, name, 1, &c, 0.2, 1.0);
    snprintf(name, sizeof name, "%s.bias", prefix);
    b.b = param(ctx, name, 1, &c, 0.1, 0.0);
    snprintf(name, sizeof name, "%s.running_mean", prefix);
    b.mean = param(ctx, name, 1, &c, 0.1, 0.0);
    snprintf(name, sizeof name, "%s.running_var", prefix);
    b.var = param(ctx, name, 1, &c, 0.2, 1.0);
    return b;
}

static int has(const char *name) { return g_st && tc_safetensors_find(g_st, name) >= 0; }

/* The layout torchvision builds for depth/width (or finds in the file). */
static int load(tc_ctx *ctx, resnet *m, int depth, int64_t width, int64_t *classes) {
    static const int blocks18[4] = {2, 2, 2, 2}, blocks34[4] = {3, 4, 6, 3}, blocks101[4] = {3, 4, 23, 3},
                     blocks152[4] = {3, 8, 36, 3};
    const int *nb = depth == 18 ? blocks18 : depth == 101 ? blocks101 : depth == 152 ? blocks152 : blocks34;
    int64_t inplanes, planes, expansion;
    int L, i, k;
    char name[128];
    memset(m, 0, sizeof *m);
    if (g_st) { /* the checkpoint decides */
        tc_safetensors_info info;
        int idx = tc_safetensors_find(g_st, "conv1.weight");
        if (idx < 0) {
            fprintf(stderr, "resnet: no conv1.weight: not torchvision's ResNet layout\n");
            return -1;
        }
        tc_safetensors_info_of(g_st, idx, &info);
        width = info.shape[0];
        m->bottleneck = has("layer1.0.conv3.weight");
        for (L = 0; L < 4; L++) {
            for (i = 0;; i++) {
                snprintf(name, sizeof name, "layer%d.%d.conv1.weight", L + 1, i);
                if (!has(name)) break;
            }
            m->nblocks[L] = i;
        }
        idx = tc_safetensors_find(g_st, "fc.weight");
        if (idx >= 0 && tc_safetensors_info_of(g_st, idx, &info) == TC_OK) *classes = info.shape[0];
    } else {
        m->bottleneck = depth >= 50;
        for (L = 0; L < 4; L++) m->nblocks[L] = nb[L];
    }
    expansion = m->bottleneck ? 4 : 1;
    m->conv1 = conv_w(ctx, "conv1.weight", width, 3, 7);
    m->bn1 = bn_of(ctx, "bn1", width);
    inplanes = width;
    for (L = 0; L < 4; L++) {
        planes = width << L;
        for (i = 0; i < m->nblocks[L]; i++) {
            block *b = &m->blocks[m->n++];
            char pre[64];
            if (m->n > 64) return -1;
            snprintf(pre, sizeof pre, "layer%d.%d", L + 1, i);
            b->stride = i == 0 && L > 0 ? 2 : 1;
            for (k = 0; k < (m->bottleneck ? 3 : 2); k++) {
                /* basic: 3x3 in->planes, 3x3; bottleneck: 1x1 in->planes, 3x3, 1x1 ->4 planes */
                int64_t cin = k == 0 ? inplanes : planes, cout = m->bottleneck && k == 2 ? planes * 4 : planes;
                int ks = m->bottleneck && k != 1 ? 1 : 3;
                snprintf(name, sizeof name, "%s.conv%d.weight", pre, k + 1);
                b->conv[k] = conv_w(ctx, name, cout, cin, ks);
                snprintf(name, sizeof name, "%s.bn%d", pre, k + 1);
                b->norm[k] = bn_of(ctx, name, cout);
            }
            snprintf(name, sizeof name, "%s.downsample.0.weight", pre);
            if (g_st ? has(name) : (b->stride != 1 || inplanes != planes * expansion)) {
                b->down = conv_w(ctx, name, planes * expansion, inplanes, 1);
                snprintf(name, sizeof name, "%s.downsample.1", pre);
                b->down_bn = bn_of(ctx, name, planes * expansion);
            }
            inplanes = planes * expansion;
        }
    }
    {
        int64_t s[2];
        s[0] = *classes, s[1] = inplanes;
        m->fc_w = param(ctx, "fc.weight", 2, s, 1.0 / sqrt((double)inplanes), 0.0);
        m->fc_b = param(ctx, "fc.bias", 1, s, 1.0 / sqrt((double)inplanes), 0.0);
    }
    return g_missing ? -1 : 0;
}

/* ---- the model ------------------------------------------------------------------ */

static tc_tensor *conv_bn(tc_ctx *ctx, tc_tensor *x, tc_tensor *w, const bn *b, int stride, int relu) {
    tc_conv2d_opts o;
    tc_tensor *h;
    memset(&o, 0, sizeof o);
    o.stride[0] = o.stride[1] = stride;
    o.padding[0] = o.padding[1] = (int)(tc_dim(w, 2) / 2);
    h = tc_batch_norm(ctx, tc_conv2d(ctx, x, w, NULL, &o), b->mean, b->var, b->w, b->b, 1e-5);
    return relu ? tc_relu(ctx, h) : h;
}

static void forward(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    const resnet *m = (const resnet *)user;
    tc_pool2d_opts po;
    tc_tensor *x;
    int i;
    memset(&po, 0, sizeof po);
    po.kernel[0] = po.kernel[1] = 3;
    po.stride[0] = po.stride[1] = 2;
    po.padding[0] = po.padding[1] = 1;
    x = tc_max_pool2d(ctx, conv_bn(ctx, in[0], m->conv1, &m->bn1, 2, 1), &po);
    for (i = 0; i < m->n; i++) {
        const block *b = &m->blocks[i];
        tc_tensor *h, *id = b->down ? conv_bn(ctx, x, b->down, &b->down_bn, b->stride, 0) : x;
        if (m->bottleneck) {
            h = conv_bn(ctx, x, b->conv[0], &b->norm[0], 1, 1);
            h = conv_bn(ctx, h, b->conv[1], &b->norm[1], b->stride, 1); /* torchvision v1.5: stride on the 3x3 */
            h = conv_bn(ctx, h, b->conv[2], &b->norm[2], 1, 0);
        } else {
            h = conv_bn(ctx, x, b->conv[0], &b->norm[0], b->stride, 1);
            h = conv_bn(ctx, h, b->conv[1], &b->norm[1], 1, 0);
        }
        x = tc_relu(ctx, tc_add(ctx, h, id));
    }
    x = tc_flatten(ctx, tc_adaptive_avg_pool2d(ctx, x, 1, 1), 1, -1);
    out[0] = tc_linear(ctx, x, m->fc_w, m->fc_b);
}

/* ---- main ------------------------------------------------------------------------- */

static void print_top5(tc_ctx *ctx, const char *what, tc_tensor *logits, char **labels, int nlabels) {
    int64_t n = tc_dim(logits, 1), i;
    float *p = (float *)malloc(sizeof(float) * (size_t)n);
    int k;
    tc_read(tc_softmax(ctx, tc_select(ctx, logits, 0, 0), -1), TC_F32, p, sizeof(float) * (size_t)n);
    printf("%s top-5:", what);
    for (k = 0; k < 5 && k < n; k++) {
        int64_t best = 0;
        for (i = 1; i < n; i++)
            if (p[i] > p[best]) best = i;
        printf("  %lld%s%s%s (%.3f)", (long long)best, best < nlabels ? " " : "", best < nlabels ? labels[best] : "", "",
               p[best]);
        p[best] = -1.0f;
    }
    printf("\n");
    free(p);
}

int main(int argc, char **argv) {
    const char *weights = NULL, *image = NULL, *labels_path = NULL, *dump = NULL, *mode_name = "default";
    int depth = 18, size = 224, batch = 1, raw = 0, rw = 0, rh = 0, threads = 0, runs = 10, i, nlabels = 0;
    int64_t width = 64, classes = 1000;
    char err[256], **labels = NULL;
    tc_ctx_options co;
    tc_ctx *ctx;
    resnet *m = (resnet *)malloc(sizeof(resnet));
    tc_tensor *x, *ye, *yc;
    unsigned char *px = NULL;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--weights") && v) weights = v, i++;
        else if (!strcmp(a, "--image") && v) image = v, i++;
        else if (!strcmp(a, "--labels") && v) labels_path = v, i++;
        else if (!strcmp(a, "--dump") && v) dump = v, i++;
        else if (!strcmp(a, "--mode") && v) mode_name = v, i++;
        else if (!strcmp(a, "--depth") && v) depth = atoi(v), i++;
        else if (!strcmp(a, "--width") && v) width = atoi(v), i++;
        else if (!strcmp(a, "--size") && v) size = atoi(v), i++;
        else if (!strcmp(a, "--batch") && v) batch = atoi(v), i++;
        else if (!strcmp(a, "--threads") && v) threads = atoi(v), i++;
        else if (!strcmp(a, "--runs") && v) runs = atoi(v), i++;
        else if (!strcmp(a, "--raw") && i + 2 < argc) raw = 1, rw = atoi(argv[i + 1]), rh = atoi(argv[i + 2]), i += 2;
        else {
            fprintf(stderr, "usage: %s [--weights F.safetensors] [--image F.ppm | --image F --raw W H] [--labels F] "
                            "[--depth 18|34|50|101|152] [--width N] [--size S] [--batch N] [--mode M] [--threads N] "
                            "[--runs N] [--dump F]\n", argv[0]);
            return 2;
        }
    }
    if (!m || size < 32 || batch < 1 || width < 1 || runs < 1 ||
        (depth != 18 && depth != 34 && depth != 50 && depth != 101 && depth != 152)) {
        fprintf(stderr, "resnet: bad options\n");
        return 2;
    }
    memset(&co, 0, sizeof co);
    co.num_threads = threads;
    ctx = tc_ctx_create(&co);
    if (weights && !(g_st = tc_safetensors_open(ctx, weights, err, sizeof err))) {
        fprintf(stderr, "resnet: %s\n", err);
        return 1;
    }
    if (load(ctx, m, depth, width, &classes) != 0) return 1;
    if (image) {
        int w = rw, h = rh;
        if (!(px = read_image(image, raw, &w, &h))) {
            fprintf(stderr, "resnet: cannot read %s as %s\n", image, raw ? "raw RGB of that size" : "a P6 PPM");
            return 1;
        }
        rw = w, rh = h;
    }
    if (labels_path) { /* one class name per line */
        FILE *fp = fopen(labels_path, "r");
        char line[256];
        while (fp && fgets(line, sizeof line, fp)) {
            line[strcspn(line, "\r\n")] = 0;
            labels = (char **)realloc(labels, sizeof(char *) * (size_t)(nlabels + 1));
            labels[nlabels] = (char *)malloc(strlen(line) + 1);
            strcpy(labels[nlabels++], line);
        }
        if (fp) fclose(fp);
    }
    x = tc_persist(image_tensor(ctx, px, rw, rh, size, batch, image_mean_imagenet, image_std_imagenet));
    printf("ResNet-%d%s (%s, width %lld, %lld classes), input [%d, 3, %d, %d], %d threads, %s\n",
           m->bottleneck ? (m->nblocks[2] == 23 ? 101 : m->nblocks[2] == 36 ? 152 : 50)
                         : (m->nblocks[0] == 2 ? 18 : 34),
           "", weights ? weights : "random weights", (long long)width, (long long)classes, batch, size, size,
           tc_ctx_num_threads(ctx), image ? image : "a test pattern");

    if (run_eager_and_compiled(ctx, "resnet", forward, m, x, mode_name, runs, &ye, &yc)) return 1;
    print_top5(ctx, "eager   ", ye, labels, nlabels);
    print_top5(ctx, "compiled", yc, labels, nlabels);
    if (dump) dump_logits(ctx, dump, ye, yc);
    tc_safetensors_close(g_st);
    tc_ctx_destroy(ctx);
    for (i = 0; i < nlabels; i++) free(labels[i]);
    free(labels);
    free(px);
    free(m);
    return 0;
}
