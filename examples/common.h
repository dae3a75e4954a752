/* common.h: what the image examples (resnet.c, vit.c) share: the image
 * input (a P6 PPM or raw RGB file, resized and normalized into an
 * [N, 3, S, S] f32 tensor) and the eager-vs-compiled run with its timings.
 * Include after tcompile.h. */
#ifndef TC_EXAMPLE_COMMON_H
#define TC_EXAMPLE_COMMON_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* P6 PPM (maxval < 256) or raw RGB bytes; NULL on error. */
static unsigned char *read_image(const char *path, int raw, int *w, int *h) {
    FILE *fp = fopen(path, "rb");
    unsigned char *px;
    int maxv = 255;
    if (!fp) return NULL;
    if (!raw && (fscanf(fp, "P6 %d %d %d", w, h, &maxv) != 3 || maxv <= 0 || maxv > 255 || fgetc(fp) == EOF)) {
        fclose(fp);
        return NULL;
    }
    if (*w <= 0 || *h <= 0 || *w > 16384 || *h > 16384) {
        fclose(fp);
        return NULL;
    }
    px = (unsigned char *)malloc((size_t)*w * (size_t)*h * 3);
    if (px && fread(px, 3, (size_t)*w * (size_t)*h, fp) != (size_t)*w * (size_t)*h) {
        free(px);
        px = NULL;
    }
    fclose(fp);
    return px;
}

static const float image_mean_imagenet[3] = {0.485f, 0.456f, 0.406f}, image_std_imagenet[3] = {0.229f, 0.224f, 0.225f};
static const float image_mean_half[3] = {0.5f, 0.5f, 0.5f}, image_std_half[3] = {0.5f, 0.5f, 0.5f};

/* [N, 3, S, S]: bilinear resize (half-pixel centres, as torch's
 * interpolate), then (v - mean) / std per channel; px NULL: a test pattern. */
static tc_tensor *image_tensor(tc_ctx *ctx, const unsigned char *px, int w, int h, int S, int N, const float *mean,
                               const float *stdv) {
    int64_t shape[4];
    float *d = (float *)malloc(sizeof(float) * (size_t)N * 3 * (size_t)S * (size_t)S);
    tc_tensor *t;
    int n, c, y, x;
    shape[0] = N, shape[1] = 3, shape[2] = S, shape[3] = S;
    if (!d) return tc_zeros(ctx, TC_F32, 4, shape);
    for (c = 0; c < 3; c++)
        for (y = 0; y < S; y++)
            for (x = 0; x < S; x++) {
                float v;
                if (!px) {
                    v = (float)(((x / 16 + y / 16 + c) % 3) * 0.4 + 0.1);
                } else {
                    double sy = ((double)y + 0.5) * h / S - 0.5, sx = ((double)x + 0.5) * w / S - 0.5, fy, fx;
                    int y0, x0, y1, x1;
                    if (sy < 0) sy = 0;
                    if (sx < 0) sx = 0;
                    y0 = (int)sy, x0 = (int)sx;
                    y1 = y0 + 1 < h ? y0 + 1 : h - 1, x1 = x0 + 1 < w ? x0 + 1 : w - 1;
                    fy = sy - y0, fx = sx - x0;
#define PX(yy, xx) ((double)px[((size_t)(yy) * (size_t)w + (size_t)(xx)) * 3 + (size_t)c] / 255.0)
                    v = (float)((1 - fy) * ((1 - fx) * PX(y0, x0) + fx * PX(y0, x1)) + fy * ((1 - fx) * PX(y1, x0) + fx * PX(y1, x1)));
#undef PX
                }
                for (n = 0; n < N; n++) d[(((size_t)n * 3 + (size_t)c) * (size_t)S + (size_t)y) * (size_t)S + (size_t)x] = (v - mean[c]) / stdv[c];
            }
    t = tc_from_data(ctx, TC_F32, 4, shape, d);
    free(d);
    return t;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* fn(x) eagerly and compiled (freeze; mode_name "default",
 * "reduce-overhead" or "max-autotune"), `runs` calls each after the first,
 * and one line of timings; *ye and *yc get the two results (persistent).
 * 0, or 1 after printing the error with `what` in front. */
static int run_eager_and_compiled(tc_ctx *ctx, const char *what, tc_model_fn fn, void *user, tc_tensor *x,
                                  const char *mode_name, int runs, tc_tensor **ye, tc_tensor **yc) {
    tc_compile_options o;
    tc_explain_info info;
    tc_fn *f;
    double t0, eager_ms, first_ms, comp_ms;
    int i;
    tc_scope_begin(ctx);
    fn(ctx, user, &x, ye);
    tc_persist(*ye);
    tc_scope_end(ctx);
    if (tc_status(*ye) != TC_OK) {
        fprintf(stderr, "%s: %s\n", what, tc_error(*ye));
        return 1;
    }
    t0 = now_ms();
    for (i = 0; i < runs; i++) {
        tc_scope_begin(ctx);
        fn(ctx, user, &x, yc);
        tc_scope_end(ctx);
    }
    eager_ms = (now_ms() - t0) / runs;
    /* compiled: traced once, the parameters constant (batch norm folded) */
    memset(&o, 0, sizeof o);
    o.freeze = 1;
    o.mode = !strcmp(mode_name, "reduce-overhead") ? TC_MODE_REDUCE_OVERHEAD
             : !strcmp(mode_name, "max-autotune") ? TC_MODE_MAX_AUTOTUNE
                                                  : TC_MODE_DEFAULT;
    f = tc_compile(ctx, fn, user, &o);
    t0 = now_ms();
    if (tc_call(f, &x, yc) != TC_OK) {
        fprintf(stderr, "%s: %s\n", what, tc_fn_error(f));
        tc_fn_free(f);
        return 1;
    }
    first_ms = now_ms() - t0;
    t0 = now_ms();
    for (i = 0; i < runs; i++) {
        tc_scope_begin(ctx);
        tc_call(f, &x, yc);
        if (i < runs - 1) tc_scope_end(ctx);
    }
    comp_ms = (now_ms() - t0) / runs;
    tc_persist(*yc);
    tc_scope_end(ctx);
    tc_explain(f, &info, NULL, 0);
    printf("eager %.2f ms/call; compiled (%s) %.2f ms/call, first call %.1f ms, %.2fx; %d kernels (%d op by op), "
           "max |compiled - eager| %.2g\n",
           eager_ms, mode_name, comp_ms, first_ms, eager_ms / comp_ms, info.kernels, info.kernels_unfused,
           tc_item(tc_max(ctx, tc_abs(ctx, tc_sub(ctx, *yc, *ye)), 0, NULL, 0)));
    tc_fn_free(f);
    return 0;
}

/* Both logit rows of image 0 (eager, then compiled) as text: the oracle's input. */
static void dump_logits(tc_ctx *ctx, const char *path, tc_tensor *ye, tc_tensor *yc) {
    FILE *fp = fopen(path, "w");
    int64_t n = tc_dim(ye, 1), j, r;
    float *v = (float *)malloc(sizeof(float) * (size_t)n);
    for (r = 0; fp && v && r < 2; r++) {
        tc_read(tc_select(ctx, r ? yc : ye, 0, 0), TC_F32, v, sizeof(float) * (size_t)n);
        for (j = 0; j < n; j++) fprintf(fp, "%.9g%c", v[j], j + 1 < n ? ' ' : '\n');
    }
    if (fp) fclose(fp);
    free(v);
}

#endif
