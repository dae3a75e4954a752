/* image.h: the examples' image input (resnet.c, vit.c): a P6 PPM or raw RGB
 * file, resized and normalized into an [N, 3, S, S] f32 tensor. */
#ifndef TC_EXAMPLE_IMAGE_H
#define TC_EXAMPLE_IMAGE_H
#include <stdio.h>
#include <stdlib.h>

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

#endif
