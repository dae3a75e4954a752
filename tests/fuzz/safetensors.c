/* libFuzzer target: the safetensors parser.  The input is written to a
 * file, opened mapped and copied; every entry's info is read, every tensor
 * got and read whole (the sanitizers see any read outside the file), a
 * missing name and metadata looked up; the tensors that load are saved
 * again and must read back bit for bit.  A file that does not open must
 * say why; nothing may crash, leak or leave tensors behind. */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>
#include "fuzz.h"

#define MAXT 64

static void read_whole(tc_tensor *t) {
    int64_t n = tc_numel(t);
    size_t bytes = (size_t)n * tc_dtype_size(tc_type(t));
    void *buf = malloc(bytes ? bytes : 1);
    FUZZ_ASSERT(buf != NULL);
    FUZZ_ASSERT(tc_read(t, tc_type(t), buf, bytes) == TC_OK);
    free(buf);
}

/* Saves what loaded and compares it with the file written back. */
static void round_trip(tc_ctx *ctx, const char *path, int n, const char **names, tc_tensor **ts) {
    char err[300];
    tc_safetensors *st;
    int i;
    if (tc_safetensors_save(path, n, names, ts, NULL, err, sizeof err) != TC_OK) {
        FUZZ_ASSERT(err[0] != 0);
        return;
    }
    st = tc_safetensors_open(ctx, path, err, sizeof err);
    FUZZ_ASSERT(st != NULL && tc_safetensors_count(st) == n);
    for (i = 0; i < n; i++) {
        tc_tensor *b = tc_safetensors_get(st, names[i]);
        size_t bytes = (size_t)tc_numel(ts[i]) * tc_dtype_size(tc_type(ts[i]));
        unsigned char *x = (unsigned char *)malloc(bytes + 1), *y = (unsigned char *)malloc(bytes + 1);
        FUZZ_ASSERT(x && y && tc_status(b) == TC_OK && tc_type(b) == tc_type(ts[i]) && tc_ndim(b) == tc_ndim(ts[i]));
        FUZZ_ASSERT(memcmp(tc_shape(b), tc_shape(ts[i]), sizeof(int64_t) * (size_t)tc_ndim(b)) == 0);
        FUZZ_ASSERT(tc_read(b, tc_type(b), x, bytes) == TC_OK && tc_read(ts[i], tc_type(b), y, bytes) == TC_OK);
        FUZZ_ASSERT(memcmp(x, y, bytes) == 0);
        free(x);
        free(y);
    }
    tc_safetensors_close(st);
}

static void check_file(tc_ctx *ctx, const char *path, const char *path2, int copy) {
    char err[300];
    tc_safetensors_options o;
    tc_safetensors *st;
    const char *names[MAXT];
    tc_tensor *ok[MAXT];
    int i, n, nok = 0, named = 1;
    memset(&o, 0, sizeof o);
    o.copy = copy;
    err[0] = 0;
    st = tc_safetensors_open_with(ctx, path, &o, err, sizeof err);
    if (!st) {
        FUZZ_ASSERT(err[0] != 0);
        return;
    }
    n = tc_safetensors_count(st);
    FUZZ_ASSERT(n >= 0);
    tc_scope_begin(ctx);
    for (i = 0; i < n; i++) {
        tc_safetensors_info info;
        tc_tensor *t;
        int d;
        FUZZ_ASSERT(tc_safetensors_info_of(st, i, &info) == TC_OK && info.name && info.dtype);
        FUZZ_ASSERT(tc_safetensors_find(st, info.name) == i);
        FUZZ_ASSERT(info.ndim >= 0 && info.ndim <= TC_MAX_DIMS);
        t = tc_safetensors_get(st, info.name);
        if (tc_status(t) != TC_OK) {
            FUZZ_ASSERT(tc_error(t)[0] != 0);
            continue;
        }
        FUZZ_ASSERT(info.supported && tc_type(t) == info.loads_as && tc_ndim(t) == info.ndim);
        for (d = 0; d < info.ndim; d++) FUZZ_ASSERT(tc_dim(t, d) == info.shape[d]);
        read_whole(t);
        if (nok < MAXT) {
            names[nok] = info.name;
            ok[nok++] = t;
            if (!info.name[0] || strcmp(info.name, "__metadata__") == 0) named = 0;
        }
    }
    /* (a control character: no name in a file can hold one) */
    FUZZ_ASSERT(tc_status(tc_safetensors_get(st, "\x01 not a name")) == TC_ERR_INDEX);
    (void)tc_safetensors_metadata(st, "format");
    (void)tc_safetensors_metadata(st, "");
    FUZZ_ASSERT(tc_safetensors_info_of(st, n, NULL) != TC_OK && tc_safetensors_info_of(st, -1, NULL) != TC_OK);
    if (named && !copy) round_trip(ctx, path2, nok, names, ok);
    tc_scope_end(ctx);
    tc_safetensors_close(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char path[64], path2[64];
    tc_ctx *ctx = fuzz_ctx();
    int64_t live = tc_ctx_live_tensors(ctx);
    FILE *fp;
    int copy;
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/tc-fuzz-st-%ld.safetensors", (long)getpid());
        snprintf(path2, sizeof path2, "/tmp/tc-fuzz-st-%ld.back.safetensors", (long)getpid());
    }
    fp = fopen(path, "wb");
    FUZZ_ASSERT(fp != NULL);
    if (size) FUZZ_ASSERT(fwrite(data, 1, size, fp) == size);
    fclose(fp);
    for (copy = 0; copy < 2; copy++) check_file(ctx, path, path2, copy);
    FUZZ_ASSERT(tc_ctx_live_tensors(ctx) == live);
    tc_ctx_clear_error(ctx);
    remove(path);
    remove(path2);
    return 0;
}
