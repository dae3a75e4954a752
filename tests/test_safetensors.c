/* safetensors: round trips of every dtype tcompile holds (strided, 0-d and
 * empty tensors, names that need escaping, metadata), zero-copy views and
 * their copy-on-write, conversions (F64, I64, I16, I8, U8, U16, U32, U64,
 * BOOL bytes other than 0/1, misaligned data) with out-of-range integers
 * refused, a list of malformed headers each refused with its reason, a
 * FIFO that must not block, thousands of random mutations of a valid file
 * (opened and read under ASan in `make test`), and an independent Python
 * implementation of the format (tests/safetensors_oracle.py, numpy) reading
 * what we write and writing what we read; a file of 60,000 tensors saved,
 * opened and loaded whole with n log n name comparisons. */
#define TCOMPILE_TESTING /* the name comparisons' counter (tc__sft_name_cmps) */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"
#include "tc_test.h"

static tc_ctx *ctx;
static char dir[200];

static void path_of(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", dir, name); }

/* A file of 8-byte length + header text + data bytes. */
static void write_raw(const char *path, const char *hdr, size_t hlen, const void *data, size_t dlen) {
    FILE *fp = fopen(path, "wb");
    unsigned char len8[8];
    int i;
    for (i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
    TC_CHECK(fp != NULL);
    if (!fp) return;
    fwrite(len8, 1, 8, fp);
    fwrite(hdr, 1, hlen, fp);
    if (dlen) fwrite(data, 1, dlen, fp);
    fclose(fp);
}

static double maxdiff(tc_tensor *a, tc_tensor *b) { return tct_maxrel(a, b); }

/* Element i of a 1-d tensor. */
static double at1(tc_tensor *t, int64_t i) { return tc_get(t, &i); }

TC_TEST(test_round_trip) {
    char path[300], err[300];
    int64_t s2[2] = {5, 7}, s0[1] = {0}, se[2] = {0, 3};
    tc_tensor *t[7], *back;
    const char *names[7] = {"w.f32", "h.\"q\\uote\"\n", "b16", "ids", "mask", "scalar", "empty"};
    const char *meta[] = {"format", "pt", "note", "caf\xc3\xa9 \"x\"", NULL};
    tc_safetensors *st;
    tc_safetensors_info info;
    int i;
    (void)s0;
    tc_scope_begin(ctx);
    t[0] = tc_transpose(ctx, tc_rand_uniform(ctx, 2, s2, -3.0, 3.0, 1), 0, 1); /* strided */
    t[1] = tc_cast(ctx, tc_rand_uniform(ctx, 2, s2, -3.0, 3.0, 2), TC_F16);
    t[2] = tc_cast(ctx, tc_rand_uniform(ctx, 2, s2, -3.0, 3.0, 3), TC_BF16);
    t[3] = tc_arange(ctx, TC_I32, -5, 30, 1);
    t[4] = tc_gt_scalar(ctx, tc_rand_uniform(ctx, 2, s2, -1.0, 1.0, 4), 0.0);
    t[5] = tc_scalar(ctx, 2.5);
    t[6] = tc_zeros(ctx, TC_F32, 2, se);
    path_of(path, sizeof path, "round.safetensors");
    TC_CHECKF(tc_safetensors_save(path, 7, names, t, meta, err, sizeof err) == TC_OK, "save: %s", err);
    st = tc_safetensors_open(ctx, path, err, sizeof err);
    TC_CHECKF(st != NULL, "open: %s", err);
    if (!st) {
        tc_scope_end(ctx);
        return;
    }
    TC_CHECK(tc_safetensors_count(st) == 7);
    TC_CHECK(tc_safetensors_metadata(st, "format") && strcmp(tc_safetensors_metadata(st, "format"), "pt") == 0);
    TC_CHECK(tc_safetensors_metadata(st, "note") && strcmp(tc_safetensors_metadata(st, "note"), meta[3]) == 0);
    TC_CHECK(tc_safetensors_metadata(st, "absent") == NULL);
    for (i = 0; i < 7; i++) {
        int idx = tc_safetensors_find(st, names[i]);
        TC_CHECKF(idx == i, "'%s' at %d", names[i], idx);
        TC_CHECK(tc_safetensors_info_of(st, idx, &info) == TC_OK && strcmp(info.name, names[i]) == 0);
        /* the first starts the (8-aligned) data; the rest start wherever the previous ended */
        TC_CHECKF((info.zero_copy || i > 0) && info.supported && info.loads_as == tc_type(t[i]) && info.ndim == tc_ndim(t[i]),
                  "'%s': zero copy %d, loads as %d", names[i], info.zero_copy, (int)info.loads_as);
        back = tc_safetensors_get(st, names[i]);
        TC_CHECKF(tc_status(back) == TC_OK && tc_type(back) == tc_type(t[i]) && maxdiff(back, t[i]) == 0,
                  "'%s' read back: %s", names[i], tc_error(back));
    }
    back = tc_safetensors_get(st, "nope");
    TC_CHECK(tc_status(back) == TC_ERR_INDEX && strstr(tc_error(back), "nope") && strstr(tc_error(back), "round.safetensors"));
    TC_CHECK(tc_status(tc_safetensors_get(st, NULL)) == TC_ERR_NULL);
    TC_CHECK(tc_safetensors_info_of(st, 7, &info) == TC_ERR_INDEX);
    {   /* copy-on-write: a write through a view leaves the file alone */
        tc_tensor *v = tc_safetensors_get(st, "w.f32");
        tc_safetensors *again;
        int64_t at[2] = {0, 0};
        TC_CHECK(tc_set(v, at, 1234.0) == TC_OK);
        again = tc_safetensors_open(ctx, path, err, sizeof err);
        TC_CHECK(again && maxdiff(tc_safetensors_get(again, "w.f32"), t[0]) == 0);
        tc_safetensors_close(again);
    }
    tc_safetensors_close(st);
    /* the writer's refusals */
    {
        const char *dup[2] = {"a", "a"}, *res[1] = {"__metadata__"};
        TC_CHECK(tc_safetensors_save(path, 2, dup, t, NULL, err, sizeof err) == TC_ERR_INVALID_ARG && strstr(err, "twice"));
        TC_CHECK(tc_safetensors_save(path, 1, res, t, NULL, err, sizeof err) == TC_ERR_INVALID_ARG);
        TC_CHECK(tc_safetensors_save(NULL, 1, names, t, NULL, err, sizeof err) == TC_ERR_NULL);
        TC_CHECK(tc_safetensors_save("/nonexistent-dir/x.safetensors", 1, names, t, NULL, err, sizeof err) == TC_ERR_IO);
    }
    tc_scope_end(ctx);
}

TC_TEST(test_conversions) {
    /* little-endian bytes of: F64 [1.5, -2.25], I64 [-7, 2^31-1], I16 [-300],
     * I8 [-5], U8 [250], U16 [65535], U32 [4000000000 -> too big], U64 [5],
     * BOOL [0, 2, 1], I64 [2^31] (too big), F8 */
    unsigned char d[128];
    size_t n = 0;
    char hdr[1024], path[300], err[300];
    double f64[2] = {1.5, -2.25};
    int64_t i64[2] = {-7, 2147483647}, big = (int64_t)1 << 31;
    int16_t i16 = -300;
    int8_t i8 = -5;
    uint8_t u8 = 250, bools[3] = {0, 2, 1}, f8 = 0x38;
    uint16_t u16 = 65535;
    uint32_t u32 = 4000000000u;
    uint64_t u64 = 5;
    tc_safetensors *st;
    tc_tensor *x;
    int hl;
#define TC_PUT_(v) (memcpy(d + n, &(v), sizeof(v)), n += sizeof(v))
    TC_PUT_(f64);
    TC_PUT_(i64);
    TC_PUT_(i16);
    TC_PUT_(i8);
    TC_PUT_(u8);
    TC_PUT_(u16);
    TC_PUT_(u32);
    TC_PUT_(u64);
    TC_PUT_(bools);
    TC_PUT_(big);
    TC_PUT_(f8);
    hl = snprintf(hdr, sizeof hdr,
                  "{\"f64\":{\"dtype\":\"F64\",\"shape\":[2],\"data_offsets\":[0,16]},"
                  "\"i64\":{\"dtype\":\"I64\",\"shape\":[2],\"data_offsets\":[16,32]},"
                  "\"i16\":{\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[32,34]},"
                  "\"i8\":{\"dtype\":\"I8\",\"shape\":[],\"data_offsets\":[34,35]},"
                  "\"u8\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[35,36]},"
                  "\"u16\":{\"dtype\":\"U16\",\"shape\":[1],\"data_offsets\":[36,38]},"
                  "\"u32\":{\"dtype\":\"U32\",\"shape\":[1],\"data_offsets\":[38,42]},"
                  "\"u64\":{\"dtype\":\"U64\",\"shape\":[1],\"data_offsets\":[42,50]},"
                  "\"bool\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[50,53]},"
                  "\"big\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[53,61]},"
                  "\"f8\":{\"dtype\":\"F8_E4M3\",\"shape\":[1],\"data_offsets\":[61,62]}}");
    path_of(path, sizeof path, "conv.safetensors");
    write_raw(path, hdr, (size_t)hl, d, n);
    st = tc_safetensors_open(ctx, path, err, sizeof err);
    TC_CHECKF(st != NULL, "open: %s", err);
    if (!st) return;
    tc_scope_begin(ctx);
    x = tc_safetensors_get(st, "f64");
    TC_CHECK(tc_type(x) == TC_F32 && at1(x, 0) == 1.5 && at1(x, 1) == -2.25);
    x = tc_safetensors_get(st, "i64");
    TC_CHECK(tc_type(x) == TC_I32 && at1(x, 0) == -7 && at1(x, 1) == 2147483647.0);
    TC_CHECK(at1(tc_safetensors_get(st, "i16"), 0) == -300);
    x = tc_safetensors_get(st, "i8");
    TC_CHECK(tc_ndim(x) == 0 && tc_item(x) == -5);
    TC_CHECK(at1(tc_safetensors_get(st, "u8"), 0) == 250);
    TC_CHECK(at1(tc_safetensors_get(st, "u16"), 0) == 65535);
    x = tc_safetensors_get(st, "u32");
    TC_CHECKF(tc_status(x) == TC_ERR_OVERFLOW && strstr(tc_error(x), "4000000000"), "u32: %s", tc_error(x));
    TC_CHECK(at1(tc_safetensors_get(st, "u64"), 0) == 5);
    x = tc_safetensors_get(st, "bool");
    TC_CHECK(tc_type(x) == TC_BOOL && at1(x, 1) == 1 && at1(x, 0) == 0);
    x = tc_safetensors_get(st, "big");
    TC_CHECKF(tc_status(x) == TC_ERR_OVERFLOW, "big: %s", tc_error(x));
    x = tc_safetensors_get(st, "f8");
    TC_CHECK(tc_status(x) == TC_ERR_UNSUPPORTED && strstr(tc_error(x), "F8_E4M3"));
    tc_scope_end(ctx);
    tc_safetensors_close(st);
    /* F32 data at an odd address (header of 9 bytes): copied, same values */
    {
        float v[2] = {3.0f, -1.0f};
        path_of(path, sizeof path, "odd.safetensors");
        const char *h = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}   "; /* 57 bytes */
        write_raw(path, h, strlen(h), v, 8);
        st = tc_safetensors_open(ctx, path, err, sizeof err);
        TC_CHECKF(st != NULL, "odd: %s", err);
        if (st) {
            tc_safetensors_info info;
            tc_scope_begin(ctx);
            TC_CHECK(tc_safetensors_info_of(st, 0, &info) == TC_OK && !info.zero_copy);
            x = tc_safetensors_get(st, "a");
            TC_CHECK(at1(x, 0) == 3.0 && at1(x, 1) == -1.0);
            tc_scope_end(ctx);
            tc_safetensors_close(st);
        }
    }
}

/* Each header must be refused, with `why` in the message. */
TC_TEST(test_malformed_headers) {
    static const struct {
        const char *hdr, *why;
        size_t data;
    } bad[] = {
        {"[]", "not a JSON object", 0},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", "expected ','", 8},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", "need", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "cover", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", "cover", 12},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],"
         "\"data_offsets\":[0,4]}}", "overlaps", 8},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", "gap", 8},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
         "\"data_offsets\":[4,8]}}", "twice", 8},
        {"{\"a\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", "unknown dtype", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", "non-negative integer", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", "integer", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}", "integer", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", "too long", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999,99999999999],\"data_offsets\":[0,4]}}", "overflow", 4},
        /* empty, but its strides overflow (issue 35, defect 5) */
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[0,1099511627776,1099511627776],\"data_offsets\":[0,0]}}", "overflow", 0},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,4]}}", "too large", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", "data_offsets", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", "too long", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", "needs dtype", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", "unknown field", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "repeated", 4},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}} x", "after the header", 4},
        {"{\"a\x01\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "invalid string", 4},
        {"{\"a\\q\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "invalid string", 4},
        {"{\"a\\ud800\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "invalid string", 4},
        {"{\"a\\u0000\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "invalid string", 4},
        {"{\"\xc3\x28\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "invalid string", 4},
        {"{\"\xed\xa0\x80\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "invalid string", 4},
        {"{\"a", "unterminated", 0},
        {"{\"__metadata__\":{\"k\":1}}", "expected a string", 0},
        {"{\"__metadata__\":{},\"__metadata__\":{}}", "repeated", 0},
        {"{\"a\":[]}", "expected an object", 0},
        {"", "not a JSON object", 0},
    };
    char path[300], err[300];
    unsigned char zeros[16];
    size_t i;
    memset(zeros, 0, sizeof zeros);
    path_of(path, sizeof path, "bad.safetensors");
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tc_safetensors *st;
        write_raw(path, bad[i].hdr, strlen(bad[i].hdr), zeros, bad[i].data);
        err[0] = 0;
        st = tc_safetensors_open(ctx, path, err, sizeof err);
        TC_CHECKF(!st && strstr(err, bad[i].why) && strstr(err, "bad.safetensors"), "header %d (%s): %s", (int)i, bad[i].hdr,
                  st ? "accepted" : err);
        tc_safetensors_close(st);
    }
    {   /* the length field: past the file, and a file shorter than it */
        FILE *fp = fopen(path, "wb");
        unsigned char len8[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
        tc_safetensors *st;
        if (fp) {
            fwrite(len8, 1, 8, fp);
            fwrite("{}", 1, 2, fp);
            fclose(fp);
        }
        st = tc_safetensors_open(ctx, path, err, sizeof err);
        TC_CHECKF(!st && strstr(err, "runs past"), "huge length: %s", st ? "accepted" : err);
        fp = fopen(path, "wb");
        if (fp) {
            fwrite(len8, 1, 5, fp);
            fclose(fp);
        }
        st = tc_safetensors_open(ctx, path, err, sizeof err);
        TC_CHECKF(!st && strstr(err, "shorter"), "5-byte file: %s", st ? "accepted" : err);
        TC_CHECK(!tc_safetensors_open(ctx, "/nonexistent/x.safetensors", err, sizeof err) && strstr(err, "cannot read"));
        TC_CHECK(!tc_safetensors_open(NULL, path, err, sizeof err) && !tc_safetensors_open(ctx, NULL, NULL, 0));
    }
    {   /* an empty header is a valid file with nothing in it */
        tc_safetensors *st;
        write_raw(path, "{}      ", 8, zeros, 0);
        st = tc_safetensors_open(ctx, path, err, sizeof err);
        TC_CHECKF(st && tc_safetensors_count(st) == 0, "{}: %s", err);
        tc_safetensors_close(st);
    }
#if !defined(_WIN32)
    {   /* a FIFO where the file should be: an error at once, not a hang */
        char cmd[700];
        tc_safetensors *st;
        path_of(path, sizeof path, "fifo.safetensors");
        snprintf(cmd, sizeof cmd, "rm -f '%s' && mkfifo '%s'", path, path);
        TC_CHECK(system(cmd) == 0);
        st = tc_safetensors_open(ctx, path, err, sizeof err);
        TC_CHECKF(!st && strstr(err, "not a regular file"), "fifo: %s", st ? "accepted" : err);
        {   /* nor when asked to copy, which reads rather than maps */
            tc_safetensors_options o;
            memset(&o, 0, sizeof o);
            o.copy = 1;
            st = tc_safetensors_open_with(ctx, path, &o, err, sizeof err);
            TC_CHECKF(!st && strstr(err, "not a regular file"), "fifo, copy: %s", st ? "accepted" : err);
        }
        remove(path);
    }
#endif
}

/* Random damage to a valid file: open may refuse it, and whatever it
 * accepts reads within the file (ASan checks that in make test). */
TC_TEST(test_mutations) {
    char path[300], mpath[300], err[300];
    int64_t s[2] = {3, 5};
    const char *names[3] = {"alpha", "beta", "gamma.weight"};
    tc_tensor *t[3];
    unsigned char *orig, *buf;
    long len;
    FILE *fp;
    int iter, opened = 0;
    uint64_t rng = 88172645463325252ull;
    tc_scope_begin(ctx);
    t[0] = tc_rand_uniform(ctx, 2, s, -1, 1, 9);
    t[1] = tc_cast(ctx, t[0], TC_BF16);
    t[2] = tc_arange(ctx, TC_I32, 0, 7, 1);
    path_of(path, sizeof path, "valid.safetensors");
    path_of(mpath, sizeof mpath, "mutant.safetensors");
    TC_CHECK(tc_safetensors_save(path, 3, names, t, NULL, err, sizeof err) == TC_OK);
    tc_scope_end(ctx);
    fp = fopen(path, "rb");
    if (!fp) return;
    fseek(fp, 0, SEEK_END);
    len = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    orig = (unsigned char *)malloc((size_t)len);
    buf = (unsigned char *)malloc((size_t)len);
    TC_CHECK(fread(orig, 1, (size_t)len, fp) == (size_t)len);
    fclose(fp);
    for (iter = 0; iter < 3000; iter++) {
        long n = len, k, flips;
        tc_safetensors *st;
        memcpy(buf, orig, (size_t)len);
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        if (iter % 7 == 0) n = (long)(rng % (uint64_t)len); /* truncated */
        flips = 1 + (long)(rng >> 20) % 4;
        for (k = 0; k < flips; k++) {
            long at;
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            /* mostly in the length and the header, where the parser works */
            at = (long)(rng % (uint64_t)(iter % 3 ? 8 + 120 : len));
            if (at < len) buf[at] = iter % 5 == 0 ? (unsigned char)"{}[],:\"0123456789\\ u"[rng % 21] : (unsigned char)(rng >> 8);
        }
        fp = fopen(mpath, "wb");
        if (!fp) break;
        fwrite(buf, 1, (size_t)n, fp);
        fclose(fp);
        st = tc_safetensors_open(ctx, mpath, err, sizeof err);
        if (st) {
            int i;
            opened++;
            tc_scope_begin(ctx);
            for (i = 0; i < tc_safetensors_count(st); i++) {
                tc_safetensors_info info;
                tc_tensor *x;
                tc_safetensors_info_of(st, i, &info);
                x = tc_safetensors_get(st, info.name);
                if (tc_status(x) == TC_OK) (void)tc_item(tc_sum(ctx, tc_cast(ctx, x, TC_F32), 0, NULL, 0));
            }
            tc_scope_end(ctx);
            tc_safetensors_close(st);
        } else {
            TC_CHECKF(err[0] != 0, "a refusal without a message (mutation %d)", iter);
        }
    }
    TC_CHECKF(opened > 0 && opened < 3000, "%d of 3000 mutants opened", opened);
    free(orig);
    free(buf);
}

/* options.copy: the file read into memory, so a file truncated (here
 * emptied: fopen "wb") while open leaves the views readable; mapped, the
 * same read of a view past the file's new end is SIGBUS. */
TC_TEST(test_copy_survives_truncation) {
    char path[300], err[300];
    int64_t s2[2] = {64, 256};
    const char *names[2] = {"a", "b"};
    tc_tensor *t[2], *a, *b;
    tc_safetensors_options o;
    tc_safetensors_info info;
    tc_safetensors *st;
    FILE *fp;
    tc_scope_begin(ctx);
    t[0] = tc_rand_uniform(ctx, 2, s2, -1.0, 1.0, 11);
    t[1] = tc_cast(ctx, tc_rand_uniform(ctx, 2, s2, -1.0, 1.0, 12), TC_BF16);
    path_of(path, sizeof path, "trunc.safetensors");
    TC_CHECK(tc_safetensors_save(path, 2, names, t, NULL, err, sizeof err) == TC_OK);
    memset(&o, 0, sizeof o);
    o.copy = 1;
    st = tc_safetensors_open_with(ctx, path, &o, err, sizeof err);
    TC_CHECKF(st != NULL, "open with copy: %s", err);
    if (st) {
        TC_CHECK(tc_safetensors_info_of(st, 0, &info) == TC_OK && info.zero_copy); /* views of the copy */
        a = tc_safetensors_get(st, "a");
        fp = fopen(path, "wb"); /* truncated to 0 bytes */
        TC_CHECK(fp != NULL);
        if (fp) fclose(fp);
        b = tc_safetensors_get(st, "b");
        TC_CHECKF(maxdiff(a, t[0]) == 0 && maxdiff(b, t[1]) == 0, "after truncation: %g %g", maxdiff(a, t[0]),
                  maxdiff(b, t[1]));
        tc_safetensors_close(st);
    }
    /* zeroed options and NULL map the file, as tc_safetensors_open */
    TC_CHECK(tc_safetensors_save(path, 2, names, t, NULL, err, sizeof err) == TC_OK);
    memset(&o, 0, sizeof o);
    st = tc_safetensors_open_with(ctx, path, &o, err, sizeof err);
    TC_CHECKF(st && maxdiff(tc_safetensors_get(st, "b"), t[1]) == 0, "open_with zeroed options: %s", err);
    tc_safetensors_close(st);
    st = tc_safetensors_open_with(ctx, path, NULL, err, sizeof err);
    TC_CHECKF(st && maxdiff(tc_safetensors_get(st, "a"), t[0]) == 0, "open_with NULL options: %s", err);
    tc_safetensors_close(st);
    tc_scope_end(ctx);
}

/* 60,000 tensors (a large model's checkpoint holds tens of thousands):
 * saving checks the names for repeats and loading every one looks each up,
 * both with O(n log n) name comparisons (counted), where the pairwise check
 * and the linear lookup took n^2 / 2 (1.8e9: 5.2 s to load). */
TC_TEST(test_many_tensors) {
    enum { N = 60000 };
    char path[300], err[300];
    char(*names)[24] = (char(*)[24])malloc(sizeof(char[24]) * N);
    const char **np = (const char **)malloc(sizeof(char *) * N);
    tc_tensor **ts = (tc_tensor **)malloc(sizeof(tc_tensor *) * N);
    tc_safetensors *st;
    long cmps, bound = 4L * N * 16; /* 4 n log2(n) */
    int i, bad = 0;
    TC_CHECK(names && np && ts);
    if (!names || !np || !ts) goto done;
    tc_scope_begin(ctx);
    for (i = 0; i < N; i++) {
        /* not in name order, so the index must sort them */
        snprintf(names[i], sizeof names[i], "layer.%d.w", (int)((i * 7919L) % N));
        np[i] = names[i];
        ts[i] = tc_full(ctx, TC_F32, 0, NULL, (double)((i * 7919L) % N));
    }
    path_of(path, sizeof path, "many.safetensors");
    tc__sft_name_cmps = 0;
    TC_CHECKF(tc_safetensors_save(path, N, np, ts, NULL, err, sizeof err) == TC_OK, "save: %s", err);
    TC_CHECKF(tc__sft_name_cmps <= bound, "saving %d names took %ld comparisons (bound %ld)", N, tc__sft_name_cmps, bound);
    tc_scope_end(ctx);
    st = tc_safetensors_open(ctx, path, err, sizeof err);
    TC_CHECKF(st != NULL, "open: %s", err);
    if (!st) goto done;
    TC_CHECK(tc_safetensors_count(st) == N);
    tc__sft_name_cmps = 0;
    tc_scope_begin(ctx);
    for (i = 0; i < N; i++) {
        char name[24];
        tc_tensor *x;
        snprintf(name, sizeof name, "layer.%d.w", i);
        x = tc_safetensors_get(st, name);
        if (tc_status(x) != TC_OK || tc_item(x) != (double)i) bad++;
    }
    cmps = tc__sft_name_cmps;
    tc_scope_end(ctx);
    TC_CHECKF(bad == 0, "%d of %d tensors not read back", bad, N);
    TC_CHECKF(cmps <= bound, "loading %d tensors took %ld name comparisons (bound %ld)", N, cmps, bound);
    TC_CHECK(tc_status(tc_safetensors_get(st, "layer.60000.w")) == TC_ERR_INDEX);
    TC_CHECK(tc_safetensors_find(st, "layer.0.w") >= 0 && tc_safetensors_find(st, "layer.0.x") == -1);
    tc_safetensors_close(st);
done:
    free(names);
    free((void *)np);
    free(ts);
}

/* The format from an independent implementation (numpy + json). */
TC_TEST(test_python_oracle) {
    char cmd[600], path[300], err[300];
    tc_safetensors *st;
    if (system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") != 0) {
        TC_SKIP_UNLESS_CI("/usr/bin/python3 with numpy not found (apt-get install python3-numpy)");
        return;
    }
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/safetensors_oracle.py write '%s'", dir);
    TC_CHECK(system(cmd) == 0);
    path_of(path, sizeof path, "py.safetensors");
    st = tc_safetensors_open(ctx, path, err, sizeof err);
    TC_CHECKF(st != NULL, "python's file: %s", err);
    if (st) {
        /* py.txt: name, then the values as f64 text, one tensor per line */
        char tpath[300], name[128];
        FILE *fp;
        int lines = 0;
        path_of(tpath, sizeof tpath, "py.txt");
        fp = fopen(tpath, "r");
        TC_CHECK(fp != NULL);
        while (fp && fscanf(fp, "%127s", name) == 1) {
            tc_tensor *x;
            int64_t n, i;
            double v, worst = 0, tol = strstr(name, "f16") ? 1e-3 : 1e-6;
            float *got;
            tc_scope_begin(ctx);
            x = tc_safetensors_get(st, name);
            TC_CHECKF(tc_status(x) == TC_OK, "'%s': %s", name, tc_error(x));
            n = tc_numel(x);
            got = (float *)malloc(sizeof(float) * (size_t)(n ? n : 1));
            TC_CHECK(tc_read(x, TC_F32, got, sizeof(float) * (size_t)n) == TC_OK);
            for (i = 0; i < n && fscanf(fp, "%lf", &v) == 1; i++)
                if (!(fabs(got[i] - v) <= tol * (1 + fabs(v)))) worst = fabs(got[i] - v) > worst ? fabs(got[i] - v) : worst + 1;
            TC_CHECKF(i == n && worst == 0, "'%s': %lld of %lld values read, worst %g", name, (long long)i, (long long)n, worst);
            free(got);
            tc_scope_end(ctx);
            lines++;
        }
        if (fp) fclose(fp);
        TC_CHECKF(lines >= 8, "%d tensors listed by python", lines);
        tc_safetensors_close(st);
    }
    /* and python reads what we wrote */
    {
        int64_t s[3] = {2, 3, 4};
        const char *names[4] = {"x", "y.half", "z.bf", "n\xc3\xa9"};
        const char *meta[] = {"format", "pt", NULL};
        tc_tensor *t[4];
        tc_scope_begin(ctx);
        t[0] = tc_rand_uniform(ctx, 3, s, -2, 2, 5);
        t[1] = tc_cast(ctx, t[0], TC_F16);
        t[2] = tc_cast(ctx, t[0], TC_BF16);
        t[3] = tc_arange(ctx, TC_I32, -3, 3, 1);
        path_of(path, sizeof path, "c.safetensors");
        TC_CHECK(tc_safetensors_save(path, 4, names, t, meta, err, sizeof err) == TC_OK);
        snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/safetensors_oracle.py check '%s'", dir);
        TC_CHECKF(system(cmd) == 0, "python refused our file (see its message above)");
        tc_scope_end(ctx);
    }
}

int main(void) {
    char cmd[600];
    ctx = tc_ctx_create(NULL);
    snprintf(dir, sizeof dir, "/tmp/tcompile-st-test-%lu", tc__pid());
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", dir, dir);
    if (system(cmd) != 0) return 1;
    TC_RUN(test_round_trip);
    TC_RUN(test_conversions);
    TC_RUN(test_malformed_headers);
    TC_RUN(test_mutations);
    TC_RUN(test_copy_survives_truncation);
    TC_RUN(test_many_tensors);
    TC_RUN(test_python_oracle);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) return 1;
    tc_ctx_destroy(ctx);
    return TC_TEST_SUMMARY();
}
