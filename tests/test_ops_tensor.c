/* test_ops_tensor.c: tensors themselves: dtype info, creation (fill,
 * arange, rand, from_data), copies, host access (read/write, get/set,
 * conversions, f16/bf16), the storage cache, memory scopes, and results
 * identical at 1 and N threads.  Helpers, conventions, environment and how
 * to build: ops_common.h. */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"
#include "tc_test.h"
#include "ops_common.h"

/* ------------------------------------------------------------------------ */
/* Creation                                                                  */
/* ------------------------------------------------------------------------ */

TC_TEST(test_dtype_info) {
    static const size_t sizes[5] = {4, 2, 2, 4, 1};
    int i;
    for (i = 0; i < 5; i++) {
        TC_CHECK(tc_dtype_size(all_dtypes[i]) == sizes[i]);
        TC_CHECK(tc_dtype_name(all_dtypes[i]) != NULL && tc_dtype_name(all_dtypes[i])[0] != 0);
    }
    TC_CHECK(tc_dtype_size((tc_dtype)99) == 0);
    TC_CHECK(tc_dtype_size(TC_DTYPE_COUNT_) == 0);
    for (i = 0; i < (int)TC_RESULT_COUNT_; i++)
        TC_CHECK(tc_result_string((tc_result)i) != NULL);
    TC_CHECK(tc_result_string((tc_result)12345) != NULL);
}

TC_TEST(test_fill_creation) {
    tc_ctx *ctx = mkctx(1);
    int iter, d, i;
    for (iter = 0; iter < 30; iter++) {
        int nd;
        int64_t sh[TC_MAX_DIMS] = {0}, n;
        double *exp;
        rnd_shape(&nd, sh, 4);
        n = numel_of(nd, sh);
        exp = dalloc(n);
        for (d = 0; d < 5; d++) {
            tc_dtype dt = all_dtypes[d];
            tc_tensor *t;
            double fv = iter % 2 ? -3.7 : 2.5;
            snprintf(g_case, sizeof g_case, "zeros/ones/full dt=%d iter=%d", d, iter);
            tc_scope_begin(ctx);
            for (i = 0; i < n; i++) exp[i] = 0;
            check_t(tc_zeros(ctx, dt, nd, sh), dt, nd, sh, exp, 0, 0);
            for (i = 0; i < n; i++) exp[i] = 1;
            check_t(tc_ones(ctx, dt, nd, sh), dt, nd, sh, exp, 0, 0);
            for (i = 0; i < n; i++) exp[i] = quant(dt, fv);
            t = tc_full(ctx, dt, nd, sh, fv);
            check_t(t, dt, nd, sh, exp, 0, 0);
            TC_CHECK(tc_is_contiguous(t));
            TC_CHECK(tc_offset(t) == 0);
            TC_CHECK(tc_numel(t) == n);
            if (nd > 0) {
                int64_t st = 1;
                for (i = nd - 1; i >= 0; i--) {
                    if (sh[i] > 1) TC_CHECK(tc_strides(t)[i] == st);
                    st *= sh[i] > 1 ? sh[i] : 1; /* PyTorch: size-0 dims count as 1 */
                }
            }
            t = tc_empty(ctx, dt, nd, sh);
            check_shape(t, nd, sh);
            TC_CHECK(tc_type(t) == dt);
            TC_CHECK(tc_context(t) == ctx);
            tc_scope_end(ctx);
        }
        free(exp);
    }
    {
        tc_tensor *s = tc_scalar(ctx, 3.25);
        TC_CHECK(tc_status(s) == TC_OK);
        TC_CHECK(tc_ndim(s) == 0);
        TC_CHECK(tc_numel(s) == 1);
        TC_CHECK(tc_type(s) == TC_F32);
        TC_CHECK(tc_item(s) == 3.25);
        TC_CHECK(tc_is_contiguous(s));
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_arange) {
    struct { double s, e, st; tc_dtype dt; int64_t n; } cs[] = {
        {0, 10, 1, TC_F32, 10}, {0, 10, 3, TC_I32, 4}, {1, 2, 0.3, TC_F32, 4},
        {5, 0, -1, TC_I32, 5}, {0, 0, 1, TC_F32, 0}, {-3, 3, 0.5, TC_F32, 12},
        {0, 8, 1, TC_F16, 8}, {2, -2, -0.75, TC_F32, 6}, {0, 5, 1, TC_BF16, 5},
        {-4, 4, 1, TC_I32, 8}, {0, 1, 2, TC_F32, 1}};
    tc_ctx *ctx = mkctx(1);
    int c;
    for (c = 0; c < (int)(sizeof cs / sizeof cs[0]); c++) {
        tc_tensor *t = tc_arange(ctx, cs[c].dt, cs[c].s, cs[c].e, cs[c].st);
        double *exp = dalloc(cs[c].n);
        int64_t i;
        for (i = 0; i < cs[c].n; i++) exp[i] = quant(cs[c].dt, cs[c].s + (double)i * cs[c].st);
        snprintf(g_case, sizeof g_case, "arange(%g, %g, %g)", cs[c].s, cs[c].e, cs[c].st);
        check_t(t, cs[c].dt, 1, &cs[c].n, exp, 1e-6, 1e-6);
        free(exp);
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_rand) {
    tc_ctx *c1 = mkctx(1), *c4 = mkctx(4);
    int64_t big = 100000, small = 200, sh2[2] = {20, 10};
    tc_tensor *a = tc_rand_uniform(c1, 1, &big, -2.0, 3.0, 42);
    tc_tensor *b = tc_rand_uniform(c4, 1, &big, -2.0, 3.0, 42);
    tc_tensor *c = tc_rand_uniform(c1, 1, &big, -2.0, 3.0, 43);
    tc_tensor *p = tc_rand_uniform(c1, 2, sh2, -2.0, 3.0, 42);
    tc_tensor *q = tc_rand_uniform(c1, 1, &small, -2.0, 3.0, 42);
    double *va = peek(a), *vb = peek(b), *vc = peek(c), *vp = peek(p), *vq = peek(q);
    double sum = 0, sq = 0, mean, var;
    int64_t i, same_ab = 0, same_ac = 0, inrange = 0, prefix = 0, pq = 0;
    TC_CHECK(tc_status(a) == TC_OK && tc_type(a) == TC_F32 && tc_numel(a) == big);
#ifndef TC_NO_THREADS
    TC_CHECK(tc_ctx_num_threads(c4) == 4);
#endif
    for (i = 0; i < big; i++) {
        same_ab += va[i] == vb[i];
        same_ac += va[i] == vc[i];
        inrange += va[i] >= -2.0 && va[i] < 3.0;
        sum += va[i];
        sq += va[i] * va[i];
    }
    for (i = 0; i < small; i++) {
        prefix += va[i] == vq[i];
        pq += vp[i] == vq[i];
    }
    mean = sum / (double)big;
    var = sq / (double)big - mean * mean;
    TC_CHECKF(same_ab == big, "uniform: same seed, 1 vs 4 threads: %lld of %lld equal", (long long)same_ab, (long long)big);
    TC_CHECKF(same_ac < big / 100, "uniform: seeds 42 and 43 agree on %lld elements", (long long)same_ac);
    TC_CHECKF(inrange == big, "uniform: %lld of %lld in [lo, hi)", (long long)inrange, (long long)big);
    TC_CHECKF(fabs(mean - 0.5) < 0.03, "uniform mean %g, expected 0.5", mean);
    TC_CHECKF(fabs(var - 25.0 / 12.0) < 0.05 * 25.0 / 12.0, "uniform var %g, expected %g", var, 25.0 / 12.0);
    TC_CHECKF(prefix == small, "uniform: element i depends only on (seed, i): [200] is a prefix of [100000] (%lld equal)", (long long)prefix);
    TC_CHECKF(pq == small, "uniform: element i independent of shape ([20,10] vs [200]): %lld equal", (long long)pq);
    free(va); free(vb); free(vc); free(vp); free(vq);

    a = tc_rand_normal(c1, 1, &big, 1.5, 2.0, 7);
    b = tc_rand_normal(c4, 1, &big, 1.5, 2.0, 7);
    c = tc_rand_normal(c1, 1, &big, 1.5, 2.0, 8);
    va = peek(a); vb = peek(b); vc = peek(c);
    {
        int64_t within = 0, nan_or_inf = 0;
        double sd;
        sum = sq = 0;
        same_ab = same_ac = 0;
        for (i = 0; i < big; i++) {
            same_ab += va[i] == vb[i];
            same_ac += va[i] == vc[i];
            sum += va[i];
            sq += va[i] * va[i];
            within += fabs(va[i] - 1.5) < 2.0;
            nan_or_inf += is_nan(va[i]) || is_inf(va[i]);
        }
        mean = sum / (double)big;
        sd = sqrt(sq / (double)big - mean * mean);
        TC_CHECKF(same_ab == big, "normal: same seed, 1 vs 4 threads: %lld equal", (long long)same_ab);
        TC_CHECKF(same_ac < big / 100, "normal: different seeds agree on %lld", (long long)same_ac);
        TC_CHECKF(fabs(mean - 1.5) < 0.04, "normal mean %g, expected 1.5", mean);
        TC_CHECKF(fabs(sd - 2.0) < 0.04, "normal std %g, expected 2", sd);
        TC_CHECKF(fabs((double)within / (double)big - 0.6827) < 0.01, "normal: fraction within 1 std %g, expected 0.6827", (double)within / (double)big);
        TC_CHECK(nan_or_inf == 0);
    }
    free(va); free(vb); free(vc);
    {   /* 0-d and empty shapes */
        int64_t z = 0;
        tc_tensor *s = tc_rand_uniform(c1, 0, NULL, 0.0, 1.0, 1);
        tc_tensor *e = tc_rand_normal(c1, 1, &z, 0.0, 1.0, 1);
        TC_CHECK(tc_status(s) == TC_OK && tc_ndim(s) == 0 && tc_numel(s) == 1);
        TC_CHECK(tc_item(s) >= 0.0 && tc_item(s) < 1.0);
        TC_CHECK(tc_status(e) == TC_OK && tc_numel(e) == 0);
    }
    tc_ctx_destroy(c1);
    tc_ctx_destroy(c4);
}

TC_TEST(test_from_data_wrap) {
    tc_ctx *ctx = mkctx(1);
    float f[12];
    int32_t ib[6] = {1, -2, 3, -4, 2147483647, (int32_t)(-2147483647 - 1)};
    uint16_t hb[4];
    uint8_t bb[5] = {0, 1, 1, 0, 1};
    int64_t sh34[2] = {3, 4}, sh43[2] = {4, 3}, st43[2] = {1, 4}, s6 = 6, s4 = 4, s5 = 5;
    double exp[12];
    int i, j;
    tc_tensor *t;
    for (i = 0; i < 12; i++) f[i] = (float)i * 0.5f - 2.0f;
    strcpy(g_case, "from_data f32");
    t = tc_from_data(ctx, TC_F32, 2, sh34, f);
    for (i = 0; i < 12; i++) exp[i] = f[i];
    check_t(t, TC_F32, 2, sh34, exp, 0, 0);
    TC_CHECK(tc_data(t) != (void *)f);
    f[0] = 100.0f; /* a copy: unaffected */
    {
        int64_t z2[2] = {0, 0};
        TC_CHECK(tc_get(t, z2) == -2.0);
    }
    f[0] = -2.0f;
    strcpy(g_case, "from_data i32");
    for (i = 0; i < 6; i++) exp[i] = ib[i];
    check_t(tc_from_data(ctx, TC_I32, 1, &s6, ib), TC_I32, 1, &s6, exp, 0, 0);
    strcpy(g_case, "from_data f16");
    hb[0] = 0x3c00; hb[1] = 0xc000; hb[2] = 0x7bff; hb[3] = 0x0001;
    exp[0] = 1; exp[1] = -2; exp[2] = 65504; exp[3] = 5.9604644775390625e-08;
    check_t(tc_from_data(ctx, TC_F16, 1, &s4, hb), TC_F16, 1, &s4, exp, 0, 0);
    strcpy(g_case, "from_data bf16");
    hb[0] = 0x3f80; hb[1] = 0xc040; hb[2] = 0x7f7f; hb[3] = 0x0001;
    exp[0] = 1; exp[1] = -3; exp[2] = (double)bf16_to_f32(0x7f7f); exp[3] = (double)bf16_to_f32(1);
    check_t(tc_from_data(ctx, TC_BF16, 1, &s4, hb), TC_BF16, 1, &s4, exp, 0, 0);
    strcpy(g_case, "from_data bool");
    for (i = 0; i < 5; i++) exp[i] = bb[i];
    check_t(tc_from_data(ctx, TC_BOOL, 1, &s5, bb), TC_BOOL, 1, &s5, exp, 0, 0);

    /* wrap: a view of user memory, writes go through */
    strcpy(g_case, "wrap row-major");
    t = tc_wrap(ctx, TC_F32, 2, sh34, NULL, f);
    for (i = 0; i < 12; i++) exp[i] = f[i];
    check_t(t, TC_F32, 2, sh34, exp, 0, 0);
    TC_CHECK(tc_data(t) == (void *)f);
    {
        int64_t idx[2] = {1, 2};
        TC_CHECK(tc_set(t, idx, 9.5) == TC_OK);
        TC_CHECK(f[1 * 4 + 2] == 9.5f);
        f[2 * 4 + 3] = 42.0f;
        idx[0] = 2; idx[1] = 3;
        TC_CHECK(tc_get(t, idx) == 42.0);
    }
    strcpy(g_case, "wrap with strides (transposed)");
    t = tc_wrap(ctx, TC_F32, 2, sh43, st43, f);
    for (i = 0; i < 4; i++)
        for (j = 0; j < 3; j++) exp[i * 3 + j] = f[j * 4 + i];
    check_t(t, TC_F32, 2, sh43, exp, 0, 0);
    TC_CHECK(!tc_is_contiguous(t));
    tc_free(t);
    TC_CHECK(f[5] == (float)5 * 0.5f - 2.0f); /* wrapped memory is never freed or touched */
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Copies                                                                    */
/* ------------------------------------------------------------------------ */

TC_TEST(test_contiguous_clone_copy) {
    tc_ctx *ctx = mkctx(1);
    int iter, i;
    for (iter = 0; iter < 30; iter++) {
        int nd, layout = rnd_int(0, 3);
        int64_t sh[TC_MAX_DIMS] = {0}, n;
        double *v;
        tc_tensor *x, *c, *k;
        tc_dtype dt = all_dtypes[iter % 5];
        rnd_shape(&nd, sh, 4);
        n = numel_of(nd, sh);
        v = rnd_vals(dt, n, -4, 4);
        tc_scope_begin(ctx);
        x = mk_layout(ctx, dt, nd, sh, v, layout);
        snprintf(g_case, sizeof g_case, "contiguous/clone dt %d layout %d nd %d", (int)dt, layout, nd);
        c = tc_contiguous(ctx, x);
        check_t(c, dt, nd, sh, v, 0, 0);
        TC_CHECK(tc_is_contiguous(c));
        if (tc_is_contiguous(x)) TC_CHECKF(c == x, "%s: contiguous of a contiguous tensor must return it", g_case);
        else if (n > 0) TC_CHECK(tc_data(c) != tc_data(x));
        k = tc_clone(ctx, x);
        check_t(k, dt, nd, sh, v, 0, 0);
        TC_CHECK(k != x);
        if (n > 0) {
            double *after;
            TC_CHECK(tc_data(k) != tc_data(x));
            {   /* writing the clone leaves x alone */
                double *z = dalloc(n);
                poke(k, z);
                free(z);
            }
            after = peek(x);
            for (i = 0; i < n; i++) TC_CHECK(after[i] == v[i]);
            free(after);
        }
        tc_scope_end(ctx);
        free(v);
    }
    for (iter = 0; iter < 60; iter++) { /* random copy: broadcast + convert into a strided destination */
        int nd, ns, layout = rnd_int(0, 3), hs;
        int64_t sh[TC_MAX_DIMS] = {0}, ss[TC_MAX_DIMS] = {0}, n, f;
        tc_dtype ddt = all_dtypes[rnd_int(0, 4)], sdt = all_dtypes[rnd_int(0, 4)];
        double *dv, *sv, *e;
        tc_tensor *dst, *r;
        rnd_shape(&nd, sh, 4);
        bcast_operand_shape(nd, sh, &ns, ss);
        n = numel_of(nd, sh);
        dv = rnd_vals(ddt, n, -9, 9);
        sv = rnd_vals(sdt, numel_of(ns, ss), -9, 9);
        e = dalloc(n);
        tc_scope_begin(ctx);
        dst = mk_layout(ctx, ddt, nd, sh, dv, layout);
        {
            tc_tensor *src = mk_operand(ctx, sdt, ns, ss, sv, nd, sh, &hs);
            for (f = 0; f < n; f++) e[f] = quant(ddt, sv[bcast_idx(nd, sh, f, ns, ss)]);
            snprintf(g_case, sizeof g_case, "copy %s nd %d <- %s nd %d%s, layout %d", tc_dtype_name(ddt), nd, tc_dtype_name(sdt), ns,
                     hs ? " (expanded)" : "", layout);
            r = tc_copy(ctx, dst, src);
        }
        TC_CHECK(r == dst);
        check_t(dst, ddt, nd, sh, e, 0, 0);
        tc_scope_end(ctx);
        free(dv); free(sv); free(e);
    }
    {   /* copy: broadcast + convert into a strided destination */
        int64_t s56[2] = {5, 6}, s3 = 3, s51[2] = {5, 1}, s53[2] = {5, 3};
        double base_v[30], src_v[5], e[30];
        int32_t srci[3] = {7, -8, 9};
        tc_tensor *base, *dst, *src, *r;
        int j;
        for (i = 0; i < 30; i++) base_v[i] = i * 0.25;
        strcpy(g_case, "copy i32[3] -> f32 slice [5,3] of [5,6]");
        base = mk(ctx, TC_F32, 2, s56, base_v);
        dst = tc_slice(ctx, base, 1, 0, 6, 2);
        src = tc_from_data(ctx, TC_I32, 1, &s3, srci);
        r = tc_copy(ctx, dst, src);
        TC_CHECK(r == dst);
        for (i = 0; i < 5; i++)
            for (j = 0; j < 6; j++) e[i * 6 + j] = (j % 2 == 0) ? (double)srci[j / 2] : base_v[i * 6 + j];
        check_t(base, TC_F32, 2, s56, e, 0, 0);
        strcpy(g_case, "copy f32[5,1] -> i32[5,3] truncates");
        for (i = 0; i < 5; i++) src_v[i] = -2.75 + i * 1.5;
        src = mk_layout(ctx, TC_F32, 2, s51, src_v, 2);
        dst = tc_zeros(ctx, TC_I32, 2, s53);
        r = tc_copy(ctx, dst, src);
        TC_CHECK(r == dst);
        for (i = 0; i < 5; i++)
            for (j = 0; j < 3; j++) e[i * 3 + j] = to_i32(src_v[i]);
        check_t(dst, TC_I32, 2, s53, e, 0, 0);
        strcpy(g_case, "copy 0-d f32 -> bf16[5,3]");
        dst = tc_zeros(ctx, TC_BF16, 2, s53);
        tc_copy(ctx, dst, tc_scalar(ctx, 1.00390625));
        for (i = 0; i < 15; i++) e[i] = 1.0; /* ties to even */
        check_t(dst, TC_BF16, 2, s53, e, 0, 0);
    }
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Host access                                                               */
/* ------------------------------------------------------------------------ */

TC_TEST(test_read_write) {
    tc_ctx *ctx = mkctx(1);
    int iter, d;
    int64_t i;
    for (iter = 0; iter < 20; iter++) {
        int nd, layout = rnd_int(0, 3);
        int64_t sh[TC_MAX_DIMS] = {0}, n;
        tc_dtype sdt = all_dtypes[iter % 5];
        double *v;
        tc_tensor *x;
        rnd_shape(&nd, sh, 4);
        n = numel_of(nd, sh);
        v = rnd_vals(sdt, n, -300, 300);
        if (n > 0 && sdt != TC_BOOL && sdt != TC_I32) v[0] = quant(sdt, 0.0);
        tc_scope_begin(ctx);
        x = mk_layout(ctx, sdt, nd, sh, v, layout);
        {   /* reading an expanded (stride-0) view */
            double *w = dalloc(n);
            float *fb = (float *)malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
            tc_tensor *xe;
            memcpy(w, v, (size_t)n * sizeof(double));
            xe = mk_any(ctx, sdt, nd, sh, w, 4);
            snprintf(g_case, sizeof g_case, "tc_read of an expanded %s view nd %d", tc_dtype_name(sdt), nd);
            TC_CHECKF(tc_read(xe, TC_F32, fb, (size_t)n * sizeof(float)) == TC_OK, "%s", g_case);
            for (i = 0; i < n; i++)
                if (!close_enough((double)fb[i], quant(TC_F32, w[i]), 0, 0)) {
                    TC_CHECKF(0, "%s: element %lld got %g expected %g", g_case, (long long)i, (double)fb[i], w[i]);
                    break;
                }
            free(w);
            free(fb);
        }
        for (d = 0; d < 5; d++) {
            tc_dtype dt = all_dtypes[d];
            size_t es = tc_dtype_size(dt), bytes = (size_t)n * es;
            unsigned char *buf = (unsigned char *)malloc(bytes + 16);
            memset(buf, 0xAB, bytes + 16);
            snprintf(g_case, sizeof g_case, "tc_read %d -> %d layout %d", (int)sdt, (int)dt, layout);
            TC_CHECKF(tc_read(x, dt, buf, bytes) == TC_OK, "%s", g_case);
            for (i = 0; i < n; i++) {
                double got = elem_get(buf, dt, i), exp = quant(dt, v[i]);
                if (!close_enough(got, exp, 0, 0)) {
                    TC_CHECKF(0, "%s: element %lld got %g expected %g", g_case, (long long)i, got, exp);
                    break;
                }
            }
            for (i = 0; i < 16; i++) TC_CHECK(buf[bytes + (size_t)i] == 0xAB);
            /* write back from a buffer of dtype dt: values become quant(sdt, quant(dt, v)) */
            {
                double *w = dalloc(n), *e = dalloc(n);
                for (i = 0; i < n; i++) {
                    w[i] = quant(dt, -v[i] * 0.5);
                    elem_put(buf, dt, i, w[i]);
                    e[i] = quant(sdt, w[i]);
                }
                snprintf(g_case, sizeof g_case, "tc_write %d -> %d layout %d", (int)dt, (int)sdt, layout);
                TC_CHECKF(tc_write(x, dt, buf, bytes) == TC_OK, "%s", g_case);
                check_t(x, sdt, nd, sh, e, 0, 0);
                poke(x, v);
                free(w);
                free(e);
            }
            free(buf);
        }
        tc_scope_end(ctx);
        free(v);
    }
    tc_ctx_destroy(ctx);
}

/* i32 arithmetic wraps like PyTorch's (two's complement) and is UB-free */
TC_TEST(test_int_wraparound) {
    tc_ctx *ctx = mkctx(1);
    int64_t n = 4;
    double a[4] = {2147483647.0, -2147483648.0, 65536, 2147483647.0};
    double b[4] = {1, 1, 65536, 2};
    double eadd[4] = {-2147483648.0, -2147483647.0, 131072, -2147483647.0};
    double esub[4] = {2147483646.0, 2147483647.0, 0, 2147483645.0};
    double emul[4] = {2147483647.0, -2147483648.0, 0, -2};
    double eneg[4] = {-2147483647.0, -2147483648.0, -65536, -2147483647.0};
    double eabs[4] = {2147483647.0, -2147483648.0, 65536, 2147483647.0};
    double esq[4] = {1, 0, 0, 1};
    tc_tensor *ta = mk(ctx, TC_I32, 1, &n, a), *tb = mk(ctx, TC_I32, 1, &n, b);
    strcpy(g_case, "i32 add wraps");
    check_t(tc_add(ctx, ta, tb), TC_I32, 1, &n, eadd, 0, 0);
    strcpy(g_case, "i32 sub wraps");
    check_t(tc_sub(ctx, ta, tb), TC_I32, 1, &n, esub, 0, 0);
    strcpy(g_case, "i32 mul wraps");
    check_t(tc_mul(ctx, ta, tb), TC_I32, 1, &n, emul, 0, 0);
    strcpy(g_case, "i32 neg / abs of INT32_MIN wrap");
    check_t(tc_neg(ctx, ta), TC_I32, 1, &n, eneg, 0, 0);
    check_t(tc_abs(ctx, ta), TC_I32, 1, &n, eabs, 0, 0);
    strcpy(g_case, "i32 square wraps");
    check_t(tc_square(ctx, ta), TC_I32, 1, &n, esq, 0, 0);
    tc_ctx_destroy(ctx);
}

/* float -> i32 conversions on every host path: truncate, saturate, NaN -> 0 */
TC_TEST(test_host_conversions_special) {
    static const double sv[8] = {NAN, INFINITY, -INFINITY, 1e10, -1e10, 2.9, -2.9, 2147483648.0};
    double ei[8], eb[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    int64_t n = 8, i;
    int32_t ib[8];
    uint8_t bb[8];
    float fb[8];
    tc_ctx *ctx = mkctx(1);
    tc_tensor *x, *t;
    for (i = 0; i < 8; i++) {
        ei[i] = to_i32(sv[i]);
        fb[i] = (float)sv[i];
    }
    x = mk(ctx, TC_F32, 1, &n, sv);
    strcpy(g_case, "tc_read f32 specials -> i32 / bool");
    TC_CHECK(tc_read(x, TC_I32, ib, sizeof ib) == TC_OK);
    for (i = 0; i < 8; i++) TC_CHECKF(ib[i] == (int32_t)ei[i], "%s: %g -> %d, expected %.0f", g_case, sv[i], ib[i], ei[i]);
    TC_CHECK(tc_read(x, TC_BOOL, bb, sizeof bb) == TC_OK);
    for (i = 0; i < 8; i++) TC_CHECKF(bb[i] == 1, "%s: %g -> bool %d", g_case, sv[i], bb[i]);
    strcpy(g_case, "tc_write f32 specials into i32 / bool");
    t = tc_zeros(ctx, TC_I32, 1, &n);
    TC_CHECK(tc_write(t, TC_F32, fb, sizeof fb) == TC_OK);
    check_t(t, TC_I32, 1, &n, ei, 0, 0);
    t = tc_zeros(ctx, TC_BOOL, 1, &n);
    TC_CHECK(tc_write(t, TC_F32, fb, sizeof fb) == TC_OK);
    check_t(t, TC_BOOL, 1, &n, eb, 0, 0);
    strcpy(g_case, "tc_copy f32 specials into i32");
    t = tc_zeros(ctx, TC_I32, 1, &n);
    tc_copy(ctx, t, x);
    check_t(t, TC_I32, 1, &n, ei, 0, 0);
    strcpy(g_case, "tc_full / tc_set on i32 with specials");
    for (i = 0; i < 8; i++) {
        double e1 = ei[i];
        int64_t one = 1, z = 0;
        check_t(tc_full(ctx, TC_I32, 1, &one, sv[i]), TC_I32, 1, &one, &e1, 0, 0);
        t = tc_zeros(ctx, TC_I32, 1, &one);
        TC_CHECK(tc_set(t, &z, sv[i]) == TC_OK);
        TC_CHECKF(tc_get(t, &z) == e1, "tc_set(i32, %g) then tc_get: %g, expected %g", sv[i], tc_get(t, &z), e1);
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_half_conversions) {
    tc_ctx *ctx = mkctx(1);
    static const float vals[] = {1.0f, -2.0f, 65504.0f, 65519.0f, 65520.0f, 70000.0f, 1e-8f, 5.96e-8f,
                                 2.98023224e-8f, 0.1f, -0.0f, 3.14159265f, 1.00048828125f, 1.000732421875f,
                                 6.1035156e-05f, 6.0975552e-05f, 1.00390625f, 1.01171875f, 3.0e38f, -1e-40f};
    int n = (int)(sizeof vals / sizeof vals[0]), i, k;
    int64_t sh = n;
    uint16_t h[64], g[64];
    float back[64];
    tc_tensor *t16 = tc_zeros(ctx, TC_F16, 1, &sh), *tb = tc_zeros(ctx, TC_BF16, 1, &sh);
    /* conversions this file relies on, checked against known bit patterns */
    TC_CHECK(f32_to_f16(1.0f) == 0x3c00 && f32_to_f16(65504.0f) == 0x7bff && f32_to_f16(65520.0f) == 0x7c00);
    TC_CHECK(f32_to_f16(5.9604645e-8f) == 0x0001 && f32_to_f16(2.98023224e-8f) == 0x0000);
    TC_CHECK(f32_to_bf16(1.00390625f) == 0x3f80 && f32_to_bf16(1.01171875f) == 0x3f82);
    TC_CHECK(f32_to_f16(1.00048828125f) == 0x3c00 && f32_to_f16(1.000732421875f) == 0x3c01);
    for (k = 0; k < 2; k++) {
        tc_tensor *t = k ? tb : t16;
        tc_dtype dt = k ? TC_BF16 : TC_F16;
        snprintf(g_case, sizeof g_case, "%s rounding of f32 values (write f32, read raw bits)", k ? "bf16" : "f16");
        TC_CHECK(tc_write(t, TC_F32, vals, sizeof(float) * (size_t)n) == TC_OK);
        TC_CHECK(tc_read(t, dt, g, sizeof(uint16_t) * (size_t)n) == TC_OK);
        for (i = 0; i < n; i++) {
            uint16_t e = k ? f32_to_bf16(vals[i]) : f32_to_f16(vals[i]);
            TC_CHECKF(g[i] == e, "%s: %.9g -> 0x%04x, expected 0x%04x", g_case, (double)vals[i], g[i], e);
        }
        /* raw bits round trip and decode */
        for (i = 0; i < 64; i++) h[i] = (uint16_t)(rnd_u64() & 0xffff);
        h[0] = k ? 0x7f80 : 0x7c00; /* inf */
        h[1] = k ? 0x0001 : 0x0001; /* smallest subnormal */
        h[2] = 0x8000;
        {
            int64_t s64 = 64;
            tc_tensor *r = tc_from_data(ctx, dt, 1, &s64, h);
            TC_CHECK(tc_read(r, dt, g, sizeof g) == TC_OK);
            TC_CHECK(tc_read(r, TC_F32, back, sizeof back) == TC_OK);
            for (i = 0; i < 64; i++) {
                float e = k ? bf16_to_f32(h[i]) : f16_to_f32(h[i]);
                int nan = e != e;
                if (!nan) TC_CHECKF(g[i] == h[i], "%s round trip 0x%04x -> 0x%04x", k ? "bf16" : "f16", h[i], g[i]);
                TC_CHECKF(nan ? back[i] != back[i] : f32_bits(back[i]) == f32_bits(e),
                          "%s decode 0x%04x -> %.9g expected %.9g", k ? "bf16" : "f16", h[i], (double)back[i], (double)e);
            }
        }
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_get_set_item_describe) {
    tc_ctx *ctx = mkctx(1);
    int64_t s345[3] = {3, 4, 5}, idx[3], one3[3] = {1, 1, 1}, s2 = 2;
    double v[60];
    int i, perm[3] = {2, 0, 1};
    tc_tensor *x, *p, *s;
    char buf[64];
    for (i = 0; i < 60; i++) v[i] = i;
    x = mk(ctx, TC_F32, 3, s345, v);
    p = tc_permute(ctx, x, perm); /* [5,3,4] */
    idx[0] = 4; idx[1] = 2; idx[2] = 1; /* p[4,2,1] = x[2,1,4] */
    TC_CHECK(tc_get(p, idx) == 2 * 20 + 1 * 5 + 4);
    TC_CHECK(tc_set(p, idx, -1.5) == TC_OK);
    idx[0] = 2; idx[1] = 1; idx[2] = 4;
    TC_CHECK(tc_get(x, idx) == -1.5);
    TC_CHECK(((float *)tc_data(x))[2 * 20 + 1 * 5 + 4] == -1.5f);
    /* tc_data with strides */
    s = tc_slice(ctx, x, 2, 1, 5, 2); /* [3,4,2], x[:, :, 1::2] */
    {
        const float *d = (const float *)tc_data(s);
        const int64_t *st = tc_strides(s);
        TC_CHECK(d[1 * st[0] + 2 * st[1] + 1 * st[2]] == (float)(1 * 20 + 2 * 5 + 3));
        TC_CHECK(tc_offset(s) == 1);
    }
    TC_CHECK(tc_dim(x, 0) == 3 && tc_dim(x, -1) == 5 && tc_dim(x, -3) == 3);
    TC_CHECK(tc_dim(x, 3) == 0 && tc_dim(x, -4) == 0);
    TC_CHECK(tc_numel(x) == 60);
    TC_CHECK(tc_is_contiguous(x) && !tc_is_contiguous(p));
    /* item */
    TC_CHECK(tc_item(tc_scalar(ctx, -7.25)) == -7.25);
    TC_CHECK(tc_item(tc_full(ctx, TC_I32, 3, one3, 12.0)) == 12.0);
    TC_CHECK(is_nan(tc_item(tc_zeros(ctx, TC_F32, 1, &s2))));
    TC_CHECK(tc_item(tc_full(ctx, TC_BOOL, 3, one3, 3.0)) == 1.0);
    /* set on an i32 tensor converts */
    {
        tc_tensor *ti = tc_zeros(ctx, TC_I32, 1, &s2);
        int64_t j = 1;
        TC_CHECK(tc_set(ti, &j, -3.9) == TC_OK);
        TC_CHECK(tc_get(ti, &j) == -3.0);
    }
    /* describe */
    {
        int64_t s23[2] = {2, 3};
        tc_describe(tc_zeros(ctx, TC_F32, 2, s23), buf, sizeof buf);
        TC_CHECKF(strcmp(buf, "f32[2,3]") == 0, "tc_describe gave \"%s\"", buf);
        memset(buf, 'x', sizeof buf);
        TC_CHECK(tc_describe(tc_zeros(ctx, TC_F32, 2, s23), buf, 4) == buf);
        TC_CHECK(memchr(buf, 0, 4) != NULL); /* truncated, still terminated */
    }
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Memory model                                                              */
/* ------------------------------------------------------------------------ */

/* Freed large blocks are kept for the next tensor that fits (not too
 * loosely), within the context's limit; small ones go back to malloc. */
static tc_ctx *cache_ctx(int64_t limit) {
    tc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.num_threads = 1;
    o.cache_bytes = limit;
    return tc_ctx_create(&o);
}
TC_TEST(test_storage_cache) {
    tc_ctx *ctx = cache_ctx(0);
    int64_t n1m = 1 << 20, n768k = 3 << 18, n256k = 1 << 18, s100 = 100, i;
    tc_tensor *a, *b, *c;
    const float *pb;
    int ok = 1;
    TC_CHECK(tc_ctx_cached_bytes(ctx) == 0);
    tc_free(tc_ones(ctx, TC_F32, 1, &s100)); /* small: malloc's */
    TC_CHECK(tc_ctx_cached_bytes(ctx) == 0);
    a = tc_ones(ctx, TC_F32, 1, &n1m);
    tc_free(a);
    TC_CHECKF(tc_ctx_cached_bytes(ctx) == 4 * n1m, "cached %lld", (long long)tc_ctx_cached_bytes(ctx));
    c = tc_ones(ctx, TC_F32, 1, &n256k); /* a quarter of the block: too loose a fit */
    TC_CHECK(tc_ctx_cached_bytes(ctx) == 4 * n1m);
    b = tc_full(ctx, TC_F32, 1, &n768k, 2.5); /* fits: the block is reused, its old values overwritten */
    TC_CHECK(tc_ctx_cached_bytes(ctx) == 0);
    TC_CHECK(tc_ctx_live_bytes(ctx) == 4 * (n256k + n768k));
    pb = (const float *)tc_data(b);
    for (i = 0; i < n768k; i++) ok &= pb[i] == 2.5f;
    TC_CHECK(ok);
    tc_free(b);
    tc_free(c);
    TC_CHECK(tc_ctx_cached_bytes(ctx) == 4 * (n1m + n256k)); /* the block's size, not the tensor's */
    tc_ctx_empty_cache(ctx);
    TC_CHECK(tc_ctx_cached_bytes(ctx) == 0);
    TC_CHECK(tc_ctx_live_bytes(ctx) == 0);
    /* a view keeps the block until the last tensor on it goes */
    a = tc_ones(ctx, TC_F32, 1, &n1m);
    b = tc_slice(ctx, a, 0, 0, 10, 1);
    tc_free(a);
    TC_CHECK(tc_ctx_cached_bytes(ctx) == 0);
    {
        int64_t i0 = 0;
        TC_CHECK(tc_get(b, &i0) == 1.0);
    }
    tc_free(b);
    TC_CHECK(tc_ctx_cached_bytes(ctx) == 4 * n1m);
    tc_ctx_destroy(ctx); /* frees the cache (test_hooks counts every block) */

    /* the limit: the oldest block goes to make room */
    ctx = cache_ctx(6 * n1m);
    a = tc_ones(ctx, TC_F32, 1, &n1m);
    b = tc_ones(ctx, TC_F32, 1, &n1m);
    tc_free(a);
    tc_free(b);
    TC_CHECKF(tc_ctx_cached_bytes(ctx) == 4 * n1m, "cached %lld", (long long)tc_ctx_cached_bytes(ctx));
    tc_ctx_destroy(ctx);
    ctx = cache_ctx(-1); /* none */
    tc_free(tc_ones(ctx, TC_F32, 1, &n1m));
    TC_CHECK(tc_ctx_cached_bytes(ctx) == 0);
    tc_ctx_destroy(ctx);
}

/* What the cache is for: large results freed and allocated again (an
 * eager model's intermediates, call after call) reuse pages already
 * faulted in, where malloc, having trimmed its heap on the frees, would
 * hand out fresh ones. */
#if defined(__linux__)
#include <sys/resource.h>
static long minor_faults(void) {
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_minflt : -1;
}
#endif
/* Minor page faults of the last two of three rounds, each allocating and
 * writing four 16 MB tensors (4096 pages each) and freeing them. */
static long churn_faults(tc_ctx *ctx) {
#if defined(__linux__)
    int64_t n = 4 << 20;
    long f0 = 0;
    int r, i;
    for (r = 0; r < 3; r++) {
        tc_tensor *t[4];
        if (r == 1) f0 = minor_faults();
        for (i = 0; i < 4; i++) t[i] = tc_full(ctx, TC_F32, 1, &n, 1.0 + i);
        for (i = 0; i < 4; i++) tc_free(t[i]);
    }
    return minor_faults() - f0;
#else
    (void)ctx;
    return 0;
#endif
}
TC_TEST(test_storage_cache_faults) {
#if defined(__linux__)
    tc_ctx *ctx = cache_ctx(0), *none = cache_ctx(-1);
    long f_none = churn_faults(none), f_cached = churn_faults(ctx);
    TC_CHECKF(f_cached < 256, "%ld minor faults in 8 cached 16 MB tensors (without the cache: %ld)", f_cached, f_none);
    if (f_none < 4096) printf("  (note: without the cache malloc kept its pages too here: %ld faults)\n", f_none);
    tc_ctx_destroy(ctx);
    tc_ctx_destroy(none);
#else
    TC_SKIP("counts page faults with getrusage (Linux only)");
#endif
}

TC_TEST(test_memory_scopes) {
    tc_ctx *ctx = mkctx(1);
    int64_t t0 = tc_ctx_live_tensors(ctx), b0 = tc_ctx_live_bytes(ctx), s100 = 100, s10 = 10;
    tc_tensor *a, *kept, *pers, *base, *view;
    int i;
    TC_CHECK(tc_scope_depth(ctx) == 0);
    tc_scope_begin(ctx);
    TC_CHECK(tc_scope_depth(ctx) == 1);
    a = tc_ones(ctx, TC_F32, 1, &s100);
    TC_CHECK(tc_ctx_live_tensors(ctx) == t0 + 1);
    TC_CHECK(tc_ctx_live_bytes(ctx) >= b0 + 400);
    tc_scope_begin(ctx);
    TC_CHECK(tc_scope_depth(ctx) == 2);
    kept = tc_keep(tc_mul_scalar(ctx, a, 3.0));
    pers = tc_persist(tc_add_scalar(ctx, a, 1.0));
    (void)tc_exp(ctx, a);
    (void)tc_reshape(ctx, a, 1, &s100);
    TC_CHECK(tc_scope_end(ctx) == TC_OK);
    TC_CHECK(tc_scope_depth(ctx) == 1);
    TC_CHECK(tc_ctx_live_tensors(ctx) == t0 + 3); /* a, kept, pers */
    TC_CHECK(tc_status(kept) == TC_OK && tc_numel(kept) == 100);
    {
        int64_t i5 = 5;
        TC_CHECK(tc_get(kept, &i5) == 3.0);
        TC_CHECK(tc_get(pers, &i5) == 2.0);
    }
    TC_CHECK(tc_scope_end(ctx) == TC_OK);
    TC_CHECK(tc_scope_depth(ctx) == 0);
    TC_CHECK(tc_ctx_live_tensors(ctx) == t0 + 1); /* only pers */
    {
        int64_t i7 = 7;
        TC_CHECK(tc_get(pers, &i7) == 2.0);
    }
    tc_free(pers);
    TC_CHECKF(tc_ctx_live_tensors(ctx) == t0, "live tensors %lld, baseline %lld", (long long)tc_ctx_live_tensors(ctx), (long long)t0);
    TC_CHECKF(tc_ctx_live_bytes(ctx) == b0, "live bytes %lld, baseline %lld", (long long)tc_ctx_live_bytes(ctx), (long long)b0);
    /* tc_scope_end with no scope open */
    TC_CHECK(tc_scope_end(ctx) == TC_ERR_STATE);
    TC_CHECK(tc_scope_depth(ctx) == 0);
    tc_ctx_clear_error(ctx);
    /* a kept view keeps the storage alive after its base is freed */
    base = tc_arange(ctx, TC_F32, 0, 100, 1);
    tc_scope_begin(ctx);
    view = tc_keep(tc_slice(ctx, tc_reshape(ctx, base, 1, &s100), 0, 10, 100, 9));
    TC_CHECK(tc_scope_end(ctx) == TC_OK);
    tc_free(base);
    TC_CHECK(tc_ctx_live_tensors(ctx) == t0 + 1);
    TC_CHECK(tc_ctx_live_bytes(ctx) >= b0 + 400);
    {
        double e[10];
        for (i = 0; i < 10; i++) e[i] = 10 + 9 * i;
        strcpy(g_case, "kept view after its base was freed");
        check_t(view, TC_F32, 1, &s10, e, 0, 0);
    }
    tc_free(view);
    TC_CHECK(tc_ctx_live_tensors(ctx) == t0);
    TC_CHECK(tc_ctx_live_bytes(ctx) == b0);
    /* tc_free inside a scope, then the scope ends: no double free */
    tc_scope_begin(ctx);
    a = tc_zeros(ctx, TC_F32, 1, &s100);
    view = tc_transpose(ctx, tc_reshape(ctx, a, 1, &s100), 0, 0);
    tc_free(a);
    tc_free(view);
    (void)tc_zeros(ctx, TC_I32, 1, &s10);
    TC_CHECK(tc_scope_end(ctx) == TC_OK);
    TC_CHECK(tc_ctx_live_tensors(ctx) == t0);
    TC_CHECK(tc_ctx_live_bytes(ctx) == b0);
    tc_free(NULL);
    /* tc_free of a tensor of an outer scope while an inner scope is open */
    tc_scope_begin(ctx);
    a = tc_ones(ctx, TC_F32, 1, &s100);
    tc_scope_begin(ctx);
    view = tc_keep(tc_slice(ctx, a, 0, 0, 10, 1)); /* into the outer scope */
    tc_free(a);
    TC_CHECK(tc_scope_end(ctx) == TC_OK);
    TC_CHECK(tc_item(tc_sum(ctx, view, 0, NULL, 0)) == 10.0);
    TC_CHECK(tc_scope_end(ctx) == TC_OK);
    TC_CHECK(tc_ctx_live_tensors(ctx) == t0);
    TC_CHECK(tc_ctx_live_bytes(ctx) == b0);
    /* views share storage: no new bytes */
    a = tc_ones(ctx, TC_F32, 1, &s100);
    {
        int64_t bytes = tc_ctx_live_bytes(ctx), s1010[2] = {10, 10};
        int pm[2] = {1, 0};
        tc_tensor *v1 = tc_reshape(ctx, a, 2, s1010), *v2 = tc_permute(ctx, v1, pm), *v3 = tc_slice(ctx, v2, 0, 1, 9, 2);
        int64_t ex3[3] = {3, -1, -1};
        tc_tensor *v5 = tc_unsqueeze(ctx, v3, 0), *v4 = tc_expand(ctx, v5, 3, ex3);
        TC_CHECK(tc_status(v4) == TC_OK && tc_numel(v4) == 120);
        TC_CHECK(tc_ctx_live_bytes(ctx) == bytes);
        tc_free(v1); tc_free(v2); tc_free(v3); tc_free(v4); tc_free(v5);
    }
    tc_ctx_clear_error(ctx);
    tc_free(a);
    /* wrapped memory is not owned */
    {
        float buf[10];
        tc_tensor *w;
        memset(buf, 0, sizeof buf);
        w = tc_wrap(ctx, TC_F32, 1, &s10, NULL, buf);
        TC_CHECK(tc_ctx_live_bytes(ctx) == b0);
        TC_CHECK(tc_ctx_live_tensors(ctx) == t0 + 1);
        tc_free(w);
    }
    /* many scoped iterations, errors included, do not leak */
    for (i = 0; i < 200; i++) {
        tc_tensor *x;
        int64_t s23[2] = {2, 3}, s4 = 4;
        tc_scope_begin(ctx);
        x = tc_rand_uniform(ctx, 2, s23, 0, 1, (uint64_t)i);
        x = tc_softmax(ctx, tc_add(ctx, x, x), -1);
        (void)tc_add(ctx, x, tc_ones(ctx, TC_F32, 1, &s4)); /* an error */
        (void)tc_sum(ctx, x, 0, NULL, 0);
        tc_scope_end(ctx);
    }
    tc_ctx_clear_error(ctx);
    TC_CHECKF(tc_ctx_live_tensors(ctx) == t0, "after 200 scoped iterations: live tensors %lld, baseline %lld",
              (long long)tc_ctx_live_tensors(ctx), (long long)t0);
    TC_CHECK(tc_ctx_live_bytes(ctx) == b0);
    /* tensors left at the root are freed by tc_ctx_destroy (ASan checks) */
    (void)tc_ones(ctx, TC_F32, 1, &s100);
    tc_scope_begin(ctx);
    (void)tc_ones(ctx, TC_F32, 1, &s100); /* an open scope at destroy time */
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Threads: results identical at 1 and N threads on big inputs               */
/* ------------------------------------------------------------------------ */

#define N_THREAD_OPS 24
static tc_tensor *thread_op(tc_ctx *ctx, int k) {
    int64_t s2[2] = {300, 200}, s1[1] = {200}, sa[2] = {96, 256}, sb[2] = {256, 160};
    int64_t sx[4] = {2, 16, 40, 40}, sw[4] = {16, 16, 3, 3}, sdw[4] = {16, 1, 3, 3}, sq[3] = {4, 64, 32};
    tc_tensor *x = tc_rand_uniform(ctx, 2, s2, -3, 3, 11), *y = tc_rand_uniform(ctx, 1, s1, -3, 3, 12);
    tc_tensor *xt = tc_transpose(ctx, tc_rand_uniform(ctx, 2, s2, -3, 3, 13), 0, 1); /* [200,300] non-contig */
    int ax0 = 0, ax1 = -1;
    tc_conv2d_opts co;
    tc_pool2d_opts po;
    memset(&co, 0, sizeof co);
    memset(&po, 0, sizeof po);
    switch (k) {
    case 0: return tc_exp(ctx, x);
    case 1: return tc_add(ctx, x, y);
    case 2: return tc_mul(ctx, xt, tc_transpose(ctx, x, 0, 1));
    case 3: return tc_gelu(ctx, xt);
    case 4: return tc_sum(ctx, x, 1, &ax0, 0);
    case 5: return tc_sum(ctx, x, 1, &ax1, 1);
    case 6: return tc_sum(ctx, xt, 0, NULL, 0);
    case 7: return tc_max(ctx, xt, 1, &ax0, 0);
    case 8: return tc_argmax(ctx, x, 0, NULL, 0);
    case 9: return tc_var(ctx, x, 1, &ax0, 1, 0);
    case 10: return tc_softmax(ctx, x, -1);
    case 11: return tc_log_softmax(ctx, xt, 0);
    case 12: return tc_layer_norm(ctx, x, 1, y, y, 1e-5);
    case 13: return tc_matmul(ctx, tc_rand_uniform(ctx, 2, sa, -1, 1, 14), tc_rand_uniform(ctx, 2, sb, -1, 1, 15));
    case 14: return tc_matmul(ctx, xt, x);
    case 15: co.padding[0] = co.padding[1] = 1;
        return tc_conv2d(ctx, tc_rand_uniform(ctx, 4, sx, -1, 1, 16), tc_rand_uniform(ctx, 4, sw, -1, 1, 17), NULL, &co);
    case 16: co.groups = 16; co.stride[0] = co.stride[1] = 2;
        return tc_conv2d(ctx, tc_rand_uniform(ctx, 4, sx, -1, 1, 16), tc_rand_uniform(ctx, 4, sdw, -1, 1, 18), NULL, &co);
    case 17: po.kernel[0] = po.kernel[1] = 3; po.stride[0] = po.stride[1] = 2; po.padding[0] = po.padding[1] = 1;
        return tc_max_pool2d(ctx, tc_rand_uniform(ctx, 4, sx, -1, 1, 19), &po);
    case 18: po.kernel[0] = po.kernel[1] = 2; po.ceil_mode = 1; po.stride[0] = po.stride[1] = 3;
        return tc_avg_pool2d(ctx, tc_rand_uniform(ctx, 4, sx, -1, 1, 19), &po);
    case 19: return tc_where(ctx, tc_gt(ctx, x, y), x, tc_neg(ctx, x));
    case 20: return tc_cast(ctx, tc_mul_scalar(ctx, xt, 1000.0), TC_I32);
    case 21: return tc_scaled_dot_product_attention(ctx, tc_rand_uniform(ctx, 3, sq, -1, 1, 20), tc_rand_uniform(ctx, 3, sq, -1, 1, 21),
                                                    tc_rand_uniform(ctx, 3, sq, -1, 1, 22), NULL, 1, 0);
    case 22: return tc_clone(ctx, xt);
    default: return tc_adaptive_avg_pool2d(ctx, tc_rand_uniform(ctx, 4, sx, -1, 1, 23), 7, 5);
    }
}

TC_TEST(test_threads_identical) {
    tc_ctx *c1 = mkctx(1), *cn = mkctx(3);
    int k;
    int64_t i;
    if (!g_threads_override) TC_CHECK(tc_ctx_num_threads(c1) == 1);
    {
        tc_ctx *c0 = mkctx(0); /* one per online CPU */
        TC_CHECK(c0 != NULL && tc_ctx_num_threads(c0) >= 1);
        tc_ctx_destroy(c0);
    }
    TC_CHECK(tc_ctx_set_num_threads(cn, 4) == TC_OK);
#ifndef TC_NO_THREADS
    TC_CHECK(tc_ctx_num_threads(cn) == 4);
#endif
    {   /* shrinking and growing the pool between ops */
        int64_t sh[1] = {100000};
        tc_tensor *x = tc_rand_uniform(cn, 1, sh, -1, 1, 5);
        double s4, s1, s6;
        s4 = tc_item(tc_sum(cn, tc_exp(cn, x), 0, NULL, 0));
        TC_CHECK(tc_ctx_set_num_threads(cn, 1) == TC_OK);
        s1 = tc_item(tc_sum(cn, tc_exp(cn, x), 0, NULL, 0));
        TC_CHECK(tc_ctx_set_num_threads(cn, 6) == TC_OK);
        s6 = tc_item(tc_sum(cn, tc_exp(cn, x), 0, NULL, 0));
        TC_CHECK(tc_ctx_set_num_threads(cn, 4) == TC_OK);
        TC_CHECKF(s4 == s1 && s1 == s6, "sum(exp(x)) at 4 / 1 / 6 threads: %.17g %.17g %.17g", s4, s1, s6);
    }
    for (k = 0; k < N_THREAD_OPS; k++) {
        tc_tensor *a, *b;
        double *va, *vb;
        int64_t bad = 0;
        tc_scope_begin(c1);
        tc_scope_begin(cn);
        a = thread_op(c1, k);
        b = thread_op(cn, k);
        snprintf(g_case, sizeof g_case, "thread op %d", k);
        TC_CHECKF(tc_status(a) == TC_OK && tc_status(b) == TC_OK, "%s: %s / %s", g_case, tc_error(a), tc_error(b));
        if (tc_status(a) == TC_OK && tc_status(b) == TC_OK) {
            TC_CHECK(tc_numel(a) == tc_numel(b) && tc_type(a) == tc_type(b));
            va = peek(a);
            vb = peek(b);
            for (i = 0; i < tc_numel(a); i++) bad += !close_enough(va[i], vb[i], 0, 0);
            TC_CHECKF(bad == 0, "%s: 1 thread vs 4 threads differ in %lld of %lld elements", g_case, (long long)bad, (long long)tc_numel(a));
            free(va);
            free(vb);
        }
        tc_scope_end(c1);
        tc_scope_end(cn);
    }
    {   /* a big sum is accurate, not a naive f32 running sum */
        int64_t n = 1 << 21;
        tc_tensor *x = tc_rand_uniform(cn, 1, &n, 0, 1, 99);
        double *v = peek(x), ref = 0, got;
        for (i = 0; i < n; i++) ref += v[i];
        got = tc_item(tc_sum(cn, x, 0, NULL, 0));
        TC_CHECKF(fabs(got - ref) <= 1e-6 * ref, "sum of 2^21 uniforms: got %.10g expected %.10g", got, ref);
        got = tc_item(tc_mean(cn, x, 0, NULL, 0));
        TC_CHECKF(fabs(got - ref / (double)n) <= 1e-6, "mean of 2^21 uniforms: got %.10g expected %.10g", got, ref / (double)n);
        free(v);
    }
    tc_ctx_destroy(c1);
    tc_ctx_destroy(cn);
}

int main(void) {
    ops_setup();
    TC_RUN(test_dtype_info);
    TC_RUN(test_fill_creation);
    TC_RUN(test_arange);
    TC_RUN(test_rand);
    TC_RUN(test_from_data_wrap);
    TC_RUN(test_contiguous_clone_copy);
    TC_RUN(test_read_write);
    TC_RUN(test_host_conversions_special);
    TC_RUN(test_int_wraparound);
    TC_RUN(test_half_conversions);
    TC_RUN(test_get_set_item_describe);
    TC_RUN(test_storage_cache);
    TC_RUN(test_storage_cache_faults);
    TC_RUN(test_memory_scopes);
    TC_RUN(test_threads_identical);
    return TC_TEST_SUMMARY();
}
