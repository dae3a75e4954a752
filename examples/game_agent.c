/* game_agent.c: a small policy network evaluated once per frame, the way a
 * game loop calls it: observation in, action scores out, a latency budget
 * of microseconds.  The policy (64 -> 256 -> 256 -> 16, tanh, softmax over
 * actions) runs eagerly, compiled in the default mode, and compiled in
 * reduce-overhead mode, where a call allocates nothing and its output
 * tensors are reused from call to call; each way prints the per-call
 * latency over the frames (median, 99th percentile, worst).
 *
 *     make build/game_agent
 *     ./build/game_agent [--frames N] [--threads N] [--weights policy.safetensors]
 *
 * A checkpoint (optional) holds fc1/fc2/fc3 .weight [out, in] and .bias, as
 * torch.nn.Linear saves them.  Small kernels run single-threaded anyway;
 * --threads 1 (the default here) also keeps the game's other threads free.
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OBS 64
#define HID 256
#define ACT 16

typedef struct policy {
    tc_tensor *w[3], *b[3];
} policy;

static void act(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    const policy *p = (const policy *)user;
    tc_tensor *h = tc_tanh(ctx, tc_linear(ctx, in[0], p->w[0], p->b[0]));
    h = tc_tanh(ctx, tc_linear(ctx, h, p->w[1], p->b[1]));
    out[0] = tc_softmax(ctx, tc_linear(ctx, h, p->w[2], p->b[2]), -1);
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A made-up game: the observation drifts with the chosen action. */
static void observe(float *obs, int frame, int action) {
    int i;
    for (i = 0; i < OBS; i++) obs[i] = 0.9f * obs[i] + 0.1f * (float)((i * 7 + frame + action) % 13 - 6) / 6.0f;
}

/* Plays `frames` frames; mode < 0: eager.  Prints the latency line and
 * returns the sum of the chosen actions (the runs must agree). */
static long play(tc_ctx *ctx, policy *p, int mode, int frames, double *lat) {
    float obs[OBS], scores[ACT];
    int64_t shape[2] = {1, OBS};
    tc_fn *f = NULL;
    int frame, action = 0, i;
    long total = 0;
    tc_tensor *x = tc_persist(tc_zeros(ctx, TC_F32, 2, shape)), *y;
    memset(obs, 0, sizeof obs);
    if (mode >= 0) {
        tc_compile_options o;
        memset(&o, 0, sizeof o);
        o.mode = (tc_mode)mode;
        o.freeze = 1;
        f = tc_compile(ctx, act, p, &o);
    }
    for (frame = 0; frame < frames; frame++) {
        double t0;
        observe(obs, frame, action);
        t0 = now_us();
        tc_scope_begin(ctx);
        tc_write(x, TC_F32, obs, sizeof obs); /* the frame's observation, into the same input */
        if (f) {
            if (tc_call(f, &x, &y) != TC_OK) {
                fprintf(stderr, "game_agent: %s\n", tc_fn_error(f));
                exit(1);
            }
        } else {
            act(ctx, p, &x, &y);
        }
        tc_read(y, TC_F32, scores, sizeof scores);
        tc_scope_end(ctx);
        lat[frame] = now_us() - t0;
        for (action = 0, i = 1; i < ACT; i++)
            if (scores[i] > scores[action]) action = i;
        total += action;
    }
    tc_fn_free(f);
    tc_free(x);
    /* the first frame traces and compiles: reported apart */
    qsort(lat + 1, (size_t)(frames - 1), sizeof(double), cmp_d);
    printf("%-16s first frame %8.1f us; then median %6.1f us, p99 %6.1f us, worst %7.1f us\n",
           mode < 0 ? "eager" : mode == TC_MODE_REDUCE_OVERHEAD ? "reduce-overhead" : "default", lat[0],
           lat[1 + (frames - 1) / 2], lat[1 + (frames - 1) * 99 / 100], lat[frames - 1]);
    return total;
}

int main(int argc, char **argv) {
    static const int64_t dims[4] = {OBS, HID, HID, ACT};
    const char *weights = NULL;
    int frames = 2000, threads = 1, i;
    tc_ctx_options co;
    tc_ctx *ctx;
    tc_safetensors *st = NULL;
    policy p;
    double *lat;
    long a, b, c;
    char err[256];
    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--frames") && i + 1 < argc) frames = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--weights") && i + 1 < argc) weights = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--frames N] [--threads N] [--weights F]\n", argv[0]);
            return 2;
        }
    }
    if (frames < 2) frames = 2;
    memset(&co, 0, sizeof co);
    co.num_threads = threads;
    ctx = tc_ctx_create(&co);
    if (weights && !(st = tc_safetensors_open(ctx, weights, err, sizeof err))) {
        fprintf(stderr, "game_agent: %s\n", err);
        return 1;
    }
    for (i = 0; i < 3; i++) {
        int64_t ws[2];
        char name[32];
        ws[0] = dims[i + 1], ws[1] = dims[i];
        if (st) {
            snprintf(name, sizeof name, "fc%d.weight", i + 1);
            p.w[i] = tc_persist(tc_safetensors_get(st, name));
            snprintf(name, sizeof name, "fc%d.bias", i + 1);
            p.b[i] = tc_persist(tc_safetensors_get(st, name));
        } else {
            p.w[i] = tc_persist(tc_rand_uniform(ctx, 2, ws, -1.0 / 8, 1.0 / 8, 10 + (uint64_t)i));
            p.b[i] = tc_persist(tc_rand_uniform(ctx, 1, ws, -0.1, 0.1, 20 + (uint64_t)i));
        }
        if (tc_status(p.w[i]) != TC_OK || tc_status(p.b[i]) != TC_OK) {
            fprintf(stderr, "game_agent: %s%s\n", tc_error(p.w[i]), tc_error(p.b[i]));
            return 1;
        }
    }
    lat = (double *)malloc(sizeof(double) * (size_t)frames);
    printf("policy %d -> %d -> %d -> %d (tanh, softmax), %d frames, %d thread(s)\n", OBS, HID, HID, ACT, frames,
           tc_ctx_num_threads(ctx));
    a = play(ctx, &p, -1, frames, lat);
    b = play(ctx, &p, TC_MODE_DEFAULT, frames, lat);
    c = play(ctx, &p, TC_MODE_REDUCE_OVERHEAD, frames, lat);
    printf("the three played the same game: %s\n", a == b && b == c ? "yes" : "NO");
    free(lat);
    tc_safetensors_close(st);
    tc_ctx_destroy(ctx);
    return a == b && b == c ? 0 : 1;
}
