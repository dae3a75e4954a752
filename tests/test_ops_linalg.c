/* test_ops_linalg.c: contractions against references in plain C: matmul,
 * linear, conv2d, scaled dot product attention (eager), and big inputs
 * (parallel paths, blocked GEMM, long rows; these also reduce and
 * normalise).  Helpers, conventions, environment and how to build:
 * ops_common.h. */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"
#include "tc_test.h"
#include "ops_common.h"

/* ------------------------------------------------------------------------ */
/* Contractions                                                              */
/* ------------------------------------------------------------------------ */

TC_TEST(test_matmul) {
    static const struct { int na; int64_t a[4]; int nb; int64_t b[4]; } cs[] = {
        {1, {5}, 1, {5}}, {1, {0}, 1, {0}}, {1, {1}, 1, {1}}, {1, {7}, 2, {7, 3}}, {2, {4, 7}, 1, {7}},
        {3, {2, 3, 4}, 1, {4}}, {1, {4}, 3, {2, 4, 3}}, {4, {2, 1, 3, 4}, 3, {5, 4, 6}}, {2, {3, 0}, 2, {0, 4}},
        {2, {0, 5}, 2, {5, 3}}, {2, {5, 3}, 2, {3, 0}}, {2, {33, 65}, 2, {65, 129}}, {2, {1, 1}, 2, {1, 1}},
        {2, {129, 7}, 2, {7, 1}}, {3, {1, 65, 33}, 2, {33, 17}}, {2, {7, 129}, 3, {3, 129, 5}},
        {3, {3, 1, 4}, 3, {1, 4, 2}}, {4, {2, 3, 5, 0}, 2, {0, 6}}, {3, {0, 2, 3}, 3, {1, 3, 4}},
        {2, {64, 64}, 2, {64, 64}}, {2, {17, 256}, 2, {256, 9}}, {3, {4, 1, 1}, 1, {1}},
    };
    tc_ctx *ctx = mkctx(1);
    int c, iter, la, lb;
    for (c = 0; c < (int)(sizeof cs / sizeof cs[0]); c++)
        for (la = 0; la < 5; la++)
            for (lb = 0; lb < 5; lb++) run_matmul_case(ctx, TC_F32, cs[c].na, cs[c].a, cs[c].nb, cs[c].b, la, lb);
    {   /* batched A with a size-1 batch dim, transposed in its last two dims */
        int64_t s4[4] = {2, 1, 3, 2}, s31[2] = {3, 1}, so[3] = {2, 1, 2}, so4[4] = {2, 1, 2, 1};
        double e[4] = {6, 9, 24, 27};
        tc_tensor *a = tc_transpose(ctx, tc_reshape(ctx, tc_arange(ctx, TC_F32, 0, 12, 1), 4, s4), 2, 3); /* [2,1,2,3] */
        tc_tensor *b = tc_ones(ctx, TC_F32, 2, s31);
        strcpy(g_case, "matmul transpose([2,1,3,2], 2, 3) @ ones[3,1]");
        check_t(tc_matmul(ctx, a, b), TC_F32, 4, so4, e, 1e-6, 1e-6);
        strcpy(g_case, "matmul transpose([2,1,3,2], 2, 3) @ ones[3]");
        check_t(tc_matmul(ctx, a, tc_reshape(ctx, b, 1, s31)), TC_F32, 3, so, e, 1e-6, 1e-6);
    }
    for (iter = 0; iter < 300; iter++) {
        static const int64_t sz[] = {0, 1, 2, 3, 7, 16, 33, 65};
        int na = rnd_int(1, 4), nb = rnd_int(1, 4), bnd = rnd_int(0, 2), i;
        int64_t sa[TC_MAX_DIMS], sb[TC_MAX_DIMS], M, N, K, bsh[2];
        M = sz[rnd_int(1, 7)]; N = sz[rnd_int(1, 7)]; K = sz[rnd_int(1, 7)];
        if (rnd_int(0, 9) == 0) K = 0;
        if (rnd_int(0, 9) == 0) M = 0;
        for (i = 0; i < bnd; i++) bsh[i] = rnd_int(1, 3);
        if (na == 1) sa[0] = K;
        else {
            int nba = na - 2 < bnd ? na - 2 : bnd;
            for (i = 0; i < nba; i++) sa[i] = rnd_int(0, 1) ? bsh[bnd - nba + i] : 1;
            na = nba + 2;
            sa[na - 2] = M; sa[na - 1] = K;
        }
        if (nb == 1) sb[0] = K;
        else {
            int nbb = nb - 2 < bnd ? nb - 2 : bnd;
            for (i = 0; i < nbb; i++) sb[i] = rnd_int(0, 1) ? bsh[bnd - nbb + i] : 1;
            nb = nbb + 2;
            sb[nb - 2] = K; sb[nb - 1] = N;
        }
        run_matmul_case(ctx, TC_F32, na, sa, nb, sb, rnd_int(0, 4), rnd_int(0, 4));
    }
    {
        int64_t a[2] = {5, 33}, b[2] = {33, 7}, a3[3] = {2, 3, 16}, b1[1] = {16};
        run_matmul_case(ctx, TC_F16, 2, a, 2, b, 0, 1);
        run_matmul_case(ctx, TC_BF16, 2, a, 2, b, 1, 0);
        run_matmul_case(ctx, TC_F16, 3, a3, 1, b1, 0, 0);
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_linear) {
    tc_ctx *ctx = mkctx(1);
    int iter;
    for (iter = 0; iter < 40; iter++) {
        static const int64_t ins[] = {1, 3, 7, 33}, outs[] = {1, 5, 17, 64};
        int nx = rnd_int(1, 3), i, hasb = rnd_int(0, 1);
        int64_t in = ins[rnd_int(0, 3)], out = outs[rnd_int(0, 3)], sx[TC_MAX_DIMS], sw[2], osh[TC_MAX_DIMS], rows, r, o, k;
        double *vx, *vw, *vb, *e;
        for (i = 0; i < nx - 1; i++) sx[i] = rnd_size();
        sx[nx - 1] = in;
        sw[0] = out; sw[1] = in;
        for (i = 0; i < nx - 1; i++) osh[i] = sx[i];
        osh[nx - 1] = out;
        rows = numel_of(nx - 1, sx);
        vx = rnd_vals(TC_F32, rows * in, -1, 1);
        vw = rnd_vals(TC_F32, out * in, -1, 1);
        vb = rnd_vals(TC_F32, out, -1, 1);
        e = dalloc(rows * out);
        for (r = 0; r < rows; r++)
            for (o = 0; o < out; o++) {
                double s = hasb ? vb[o] : 0;
                for (k = 0; k < in; k++) s += vx[r * in + k] * vw[o * in + k];
                e[r * out + o] = s;
            }
        tc_scope_begin(ctx);
        snprintf(g_case, sizeof g_case, "linear nx %d in %lld out %lld bias %d", nx, (long long)in, (long long)out, hasb);
        check_t(tc_linear(ctx, mk_layout(ctx, TC_F32, nx, sx, vx, rnd_int(0, 3)), mk_layout(ctx, TC_F32, 2, sw, vw, rnd_int(0, 3)),
                          hasb ? mk_layout(ctx, TC_F32, 1, &out, vb, rnd_int(0, 3)) : NULL),
                TC_F32, nx, osh, e, 1e-5 * (1 + sqrt((double)in)), 1e-4);
        tc_scope_end(ctx);
        free(vx); free(vw); free(vb); free(e);
    }
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Convolution                                                               */
/* ------------------------------------------------------------------------ */

static int64_t conv_out(int64_t in, int k, int s, int p, int d) {
    int64_t num = in + 2 * p - (int64_t)d * (k - 1) - 1;
    return num < 0 ? 0 : num / s + 1;
}

TC_TEST(test_conv2d) {
    tc_ctx *ctx = mkctx(1);
    int iter, done = 0;
    for (iter = 0; iter < 1000 && done < 150; iter++) {
        int kind = rnd_int(0, 3), G, kh = rnd_int(1, 3), kw = rnd_int(1, 3), st[2], pd[2], dl[2], i, use_null = 0, chw, hasb;
        int64_t N = rnd_int(1, 2), cpg = rnd_int(1, 3), opg = rnd_int(1, 3), Cin, Cout, H = rnd_int(1, 8), W = rnd_int(1, 8), OH, OW;
        int64_t sx[4], sw[4], so[4];
        double *vx, *vw, *vb, *e;
        tc_conv2d_opts o;
        tc_tensor *r, *x;
        G = kind == 0 ? 1 : kind == 1 ? 2 : kind == 2 ? (int)rnd_int(1, 4) : 3;
        if (iter % 6 == 5) { /* wider channels: GEMM tile edges */
            cpg = rnd_int(4, 20);
            opg = rnd_int(4, 20);
            H = rnd_int(3, 12);
            W = rnd_int(3, 12);
        }
        if (kind == 2) cpg = 1; /* depthwise: groups == Cin */
        Cin = G * cpg;
        Cout = G * opg;
        for (i = 0; i < 2; i++) {
            st[i] = rnd_int(1, 3);
            pd[i] = rnd_int(0, 2);
            dl[i] = rnd_int(1, 2);
        }
        if (iter % 5 == 0) { /* defaults */
            st[0] = st[1] = dl[0] = dl[1] = 1;
            pd[0] = pd[1] = 0;
            if (G == 1) use_null = 1;
        }
        if (iter % 7 == 0) kh = kw = 1;
        OH = conv_out(H, kh, st[0], pd[0], dl[0]);
        OW = conv_out(W, kw, st[1], pd[1], dl[1]);
        if (OH <= 0 || OW <= 0) continue;
        done++;
        chw = N == 1 && rnd_int(0, 1);
        hasb = rnd_int(0, 1);
        sx[0] = N; sx[1] = Cin; sx[2] = H; sx[3] = W;
        sw[0] = Cout; sw[1] = cpg; sw[2] = kh; sw[3] = kw;
        so[0] = N; so[1] = Cout; so[2] = OH; so[3] = OW;
        vx = rnd_vals(TC_F32, N * Cin * H * W, -1, 1);
        vw = rnd_vals(TC_F32, Cout * cpg * kh * kw, -1, 1);
        vb = rnd_vals(TC_F32, Cout, -1, 1);
        e = dalloc(N * Cout * OH * OW);
        tc_scope_begin(ctx);
        x = mk_any(ctx, TC_F32, chw ? 3 : 4, chw ? sx + 1 : sx, vx, rnd_int(0, 4));
        ref_conv2d(N, Cin, H, W, vx, Cout, kh, kw, vw, hasb ? vb : NULL, G, st, pd, dl, OH, OW, e);
        memset(&o, 0, sizeof o);
        for (i = 0; i < 2; i++) {
            o.stride[i] = (st[i] == 1 && rnd_int(0, 1)) ? 0 : st[i]; /* 0 = default 1 */
            o.padding[i] = pd[i];
            o.dilation[i] = (dl[i] == 1 && rnd_int(0, 1)) ? 0 : dl[i];
        }
        o.groups = (G == 1 && rnd_int(0, 1)) ? 0 : G;
        snprintf(g_case, sizeof g_case,
                 "conv2d x[%lld,%lld,%lld,%lld] w[%lld,%lld,%d,%d] stride %d,%d pad %d,%d dil %d,%d groups %d bias %d chw %d opts %s",
                 (long long)N, (long long)Cin, (long long)H, (long long)W, (long long)Cout, (long long)cpg, kh, kw, st[0], st[1], pd[0],
                 pd[1], dl[0], dl[1], G, hasb, chw, use_null ? "NULL" : "set");
        r = tc_conv2d(ctx, x,
                      mk_layout(ctx, TC_F32, 4, sw, vw, rnd_int(0, 3)), hasb ? mk_layout(ctx, TC_F32, 1, &Cout, vb, 0) : NULL,
                      use_null ? NULL : &o);
        check_t(r, TC_F32, chw ? 3 : 4, chw ? so + 1 : so, e, 1e-5 * (1 + sqrt((double)(cpg * kh * kw))), 1e-4);
        tc_scope_end(ctx);
        free(vx); free(vw); free(vb); free(e);
    }
    TC_CHECK(done >= 150);
    {   /* an empty batch */
        int64_t sx[4] = {0, 3, 5, 5}, sw[4] = {4, 3, 3, 3}, so[4] = {0, 4, 3, 3}, sp[4] = {0, 3, 2, 2};
        tc_pool2d_opts po;
        double dummy = 0;
        memset(&po, 0, sizeof po);
        po.kernel[0] = po.kernel[1] = 2;
        strcpy(g_case, "conv2d / pools with N = 0");
        check_t(tc_conv2d(ctx, tc_zeros(ctx, TC_F32, 4, sx), tc_ones(ctx, TC_F32, 4, sw), NULL, NULL), TC_F32, 4, so, &dummy, 0, 0);
        check_t(tc_max_pool2d(ctx, tc_zeros(ctx, TC_F32, 4, sx), &po), TC_F32, 4, sp, &dummy, 0, 0);
        check_t(tc_avg_pool2d(ctx, tc_zeros(ctx, TC_F32, 4, sx), &po), TC_F32, 4, sp, &dummy, 0, 0);
        check_t(tc_adaptive_avg_pool2d(ctx, tc_zeros(ctx, TC_F32, 4, sx), 2, 2), TC_F32, 4, sp, &dummy, 0, 0);
    }
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Attention                                                                 */
/* ------------------------------------------------------------------------ */

/* mask_kind: 0 none, 1 bool, 2 float */
static void run_sdpa_case(tc_ctx *ctx, int nbq, const int64_t *bq, int nbk, const int64_t *bk, int64_t L, int64_t S, int64_t E,
                          int64_t Ev, int mask_kind, int mask_nd, int causal, double scale, int all_masked_row) {
    int64_t sq[TC_MAX_DIMS], sk[TC_MAX_DIMS], sv[TC_MAX_DIMS], sm[TC_MAX_DIMS], so[TC_MAX_DIMS], bsh[TC_MAX_DIMS];
    int bnd = 0, i, mnd;
    int64_t nb, bt, l, s, e2;
    double *vq, *vk, *vv, *vm = NULL, *e, sc = scale > 0 ? scale : 1.0 / sqrt((double)E);
    tc_tensor *mask = NULL;
    bcast_shape(nbq, bq, nbk, bk, &bnd, bsh);
    for (i = 0; i < nbq; i++) sq[i] = bq[i];
    sq[nbq] = L; sq[nbq + 1] = E;
    for (i = 0; i < nbk; i++) sk[i] = sv[i] = bk[i];
    sk[nbk] = S; sk[nbk + 1] = E;
    sv[nbk] = S; sv[nbk + 1] = Ev;
    for (i = 0; i < bnd; i++) so[i] = bsh[i];
    so[bnd] = L; so[bnd + 1] = Ev;
    /* mask shape: the last mask_nd dims of [batch..., L, S] (batch dims sometimes 1) */
    mnd = mask_nd;
    for (i = 0; i < mnd; i++) {
        int full = bnd + 2 - mnd + i;
        sm[i] = full == bnd ? L : full == bnd + 1 ? S : (rnd_int(0, 1) ? bsh[full] : 1);
    }
    vq = rnd_vals(TC_F32, numel_of(nbq + 2, sq), -1, 1);
    vk = rnd_vals(TC_F32, numel_of(nbk + 2, sk), -1, 1);
    vv = rnd_vals(TC_F32, numel_of(nbk + 2, sv), -1, 1);
    if (mask_kind == 1) {
        vm = rnd_vals(TC_BOOL, numel_of(mnd, sm), 0, 1);
        if (all_masked_row && L > 0)
            for (s = 0; s < numel_of(mnd, sm); s++)
                if ((s / S) % L == 0) vm[s] = 0; /* row l = 0 masked everywhere */
    } else if (mask_kind == 2) {
        vm = rnd_vals(TC_F32, numel_of(mnd, sm), -2, 2);
        for (s = 0; s < numel_of(mnd, sm); s++)
            if (rnd_int(0, 4) == 0) vm[s] = -INFINITY;
        if (all_masked_row && L > 0)
            for (s = 0; s < numel_of(mnd, sm); s++)
                if ((s / S) % L == 0) vm[s] = -INFINITY;
    }
    nb = numel_of(bnd, bsh);
    e = dalloc(nb * L * Ev);
    {
        int64_t fsh[TC_MAX_DIMS];
        double *sco = dalloc(S);
        for (i = 0; i < bnd; i++) fsh[i] = bsh[i];
        fsh[bnd] = L; fsh[bnd + 1] = S;
        for (bt = 0; bt < nb; bt++) {
            int64_t iq = bcast_idx(bnd, bsh, bt, nbq, bq), ik = bcast_idx(bnd, bsh, bt, nbk, bk);
            for (l = 0; l < L; l++) {
                double mx = -INFINITY, sum = 0;
                for (s = 0; s < S; s++) {
                    double d = 0;
                    for (e2 = 0; e2 < E; e2++) d += vq[(iq * L + l) * E + e2] * vk[(ik * S + s) * E + e2];
                    d *= sc;
                    if (causal && s > l) d = -INFINITY;
                    if (mask_kind) {
                        double mv = vm[bcast_idx(bnd + 2, fsh, (bt * L + l) * S + s, mnd, sm)];
                        if (mask_kind == 1) { if (mv == 0) d = -INFINITY; }
                        else d += mv;
                    }
                    sco[s] = d;
                    mx = fmax(mx, d);
                }
                for (s = 0; s < S; s++) sum += exp(sco[s] - mx);
                for (e2 = 0; e2 < Ev; e2++) {
                    double acc = 0;
                    for (s = 0; s < S; s++) acc += exp(sco[s] - mx) / sum * vv[(ik * S + s) * Ev + e2];
                    e[(bt * L + l) * Ev + e2] = mx == -INFINITY ? NAN : acc;
                }
            }
        }
        free(sco);
    }
    tc_scope_begin(ctx);
    if (mask_kind) mask = mk_layout(ctx, mask_kind == 1 ? TC_BOOL : TC_F32, mnd, sm, vm, rnd_int(0, 3));
    {
        char b1[64], b2[64];
        shape_str(b1, sizeof b1, nbq + 2, sq);
        shape_str(b2, sizeof b2, nbk + 2, sk);
        snprintf(g_case, sizeof g_case, "sdpa q%s k%s Ev %lld mask %d (nd %d) causal %d scale %g all-masked-row %d", b1, b2, (long long)Ev,
                 mask_kind, mnd, causal, scale, all_masked_row);
    }
    check_t(tc_scaled_dot_product_attention(ctx, mk_layout(ctx, TC_F32, nbq + 2, sq, vq, rnd_int(0, 3)),
                                            mk_layout(ctx, TC_F32, nbk + 2, sk, vk, rnd_int(0, 3)),
                                            mk_layout(ctx, TC_F32, nbk + 2, sv, vv, rnd_int(0, 3)), mask, causal, scale),
            TC_F32, bnd + 2, so, e, 1e-5 * (1 + sqrt((double)(E > S ? E : S))), 1e-4);
    tc_scope_end(ctx);
    free(vq); free(vk); free(vv); free(vm); free(e);
}

TC_TEST(test_sdpa) {
    tc_ctx *ctx = mkctx(1);
    int64_t b2[2] = {2, 3}, b1[1] = {3}, b13[2] = {1, 3}, b21[2] = {2, 1};
    int iter;
    run_sdpa_case(ctx, 2, b2, 2, b2, 4, 4, 8, 8, 0, 0, 0, 0, 0);          /* no mask */
    run_sdpa_case(ctx, 2, b2, 2, b2, 3, 5, 8, 6, 0, 0, 1, 0, 0);          /* causal, L < S */
    run_sdpa_case(ctx, 2, b2, 2, b2, 6, 4, 8, 6, 0, 0, 1, 0, 0);          /* causal, L > S */
    run_sdpa_case(ctx, 1, b1, 1, b1, 5, 7, 4, 4, 1, 2, 0, 0, 0);          /* bool mask [L,S] */
    run_sdpa_case(ctx, 2, b2, 2, b2, 5, 7, 4, 4, 2, 4, 0, 0, 0);          /* float mask full */
    run_sdpa_case(ctx, 2, b2, 2, b2, 5, 7, 4, 4, 2, 2, 0, 0.3, 0);        /* custom scale */
    run_sdpa_case(ctx, 2, b21, 2, b13, 3, 5, 4, 2, 0, 0, 0, 0, 0);        /* batch broadcast */
    run_sdpa_case(ctx, 2, b2, 1, b1, 3, 5, 4, 2, 1, 3, 0, 0, 0);          /* k/v with fewer batch dims */
    run_sdpa_case(ctx, 1, b1, 1, b1, 4, 6, 4, 4, 1, 2, 0, 0, 1);          /* fully masked row (bool) -> NaN */
    run_sdpa_case(ctx, 1, b1, 1, b1, 4, 6, 4, 4, 2, 3, 0, 0, 1);          /* fully masked row (float) -> NaN */
    run_sdpa_case(ctx, 0, NULL, 0, NULL, 1, 1, 1, 1, 0, 0, 0, 0, 0);      /* 2-D, sizes 1 */
    run_sdpa_case(ctx, 0, NULL, 0, NULL, 33, 65, 16, 7, 0, 0, 1, 0, 0);   /* awkward sizes */
    run_sdpa_case(ctx, 1, b1, 1, b1, 0, 5, 4, 3, 0, 0, 0, 0, 0);          /* L = 0: empty output */
    run_sdpa_case(ctx, 1, b1, 1, b1, 4, 6, 4, 4, 0, 0, 0, -2.0, 0);       /* negative scale = default */
    for (iter = 0; iter < 60; iter++) {
        int64_t bq[2], bk[2], bsh[2];
        int nbq = rnd_int(0, 2), nbk = rnd_int(0, 2), i, bnd = nbq > nbk ? nbq : nbk;
        int mk_ = rnd_int(0, 2);
        for (i = 0; i < bnd; i++) bsh[i] = rnd_int(1, 3);
        for (i = 0; i < nbq; i++) bq[i] = rnd_int(0, 2) ? bsh[bnd - nbq + i] : 1;
        for (i = 0; i < nbk; i++) bk[i] = rnd_int(0, 2) ? bsh[bnd - nbk + i] : 1;
        {
            int64_t L = rnd_int(1, 9), S = rnd_int(1, 9);
            int nbo = nbq > nbk ? nbq : nbk;
            run_sdpa_case(ctx, nbq, bq, nbk, bk, L, S, rnd_int(1, 9), rnd_int(1, 9), mk_, mk_ ? rnd_int(2, 2 + nbo) : 0,
                          mk_ ? 0 : rnd_int(0, 1), rnd_int(0, 1) ? 0 : 0.25, 0);
        }
    }
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Big inputs                                                                */
/* ------------------------------------------------------------------------ */

/* Big inputs (parallel paths, blocked GEMM, long rows) against the reference */
TC_TEST(test_big_vs_reference) {
    tc_ctx *ctx = mkctx(4);
    {   /* matmul with K spanning several cache blocks, transposed B */
        int64_t sa[2] = {150, 600}, sb[2] = {600, 130};
        run_matmul_case(ctx, TC_F32, 2, sa, 2, sb, 0, 1);
        run_matmul_case(ctx, TC_F32, 2, sa, 2, sb, 2, 0);
    }
    {   /* batched matmul with a broadcast batch */
        int64_t sa[3] = {3, 70, 90}, sb[2] = {90, 200};
        run_matmul_case(ctx, TC_F32, 3, sa, 2, sb, 1, 0);
    }
    {   /* GEMV shapes: M = 1, N = 1, 1-D operands, big K */
        int64_t sa[2] = {1, 2048}, sb[2] = {2048, 300}, sc[2] = {300, 2048}, k1[1] = {2048}, sd[3] = {2, 2048, 5};
        run_matmul_case(ctx, TC_F32, 2, sa, 2, sb, 0, 1);
        run_matmul_case(ctx, TC_F32, 2, sc, 1, k1, 1, 0);
        run_matmul_case(ctx, TC_F32, 1, k1, 2, sb, 0, 0);
        run_matmul_case(ctx, TC_F32, 1, k1, 3, sd, 0, 4);
        run_matmul_case(ctx, TC_F32, 1, k1, 1, k1, 0, 2);
    }
    {   /* big linear, weight [out, in] as stored by models */
        int64_t sx[2] = {64, 512}, sw[2] = {384, 512}, so[2] = {64, 384}, O = 384, r, o, k;
        double *vx = rnd_vals(TC_F32, 64 * 512, -1, 1), *vw = rnd_vals(TC_F32, 384 * 512, -1, 1), *vb = rnd_vals(TC_F32, 384, -1, 1);
        double *e = dalloc(64 * 384);
        for (r = 0; r < 64; r++)
            for (o = 0; o < 384; o++) {
                double acc = vb[o];
                for (k = 0; k < 512; k++) acc += vx[r * 512 + k] * vw[o * 512 + k];
                e[r * 384 + o] = acc;
            }
        strcpy(g_case, "big linear [64,512] x [384,512]^T + b");
        tc_scope_begin(ctx);
        check_t(tc_linear(ctx, mk(ctx, TC_F32, 2, sx, vx), mk(ctx, TC_F32, 2, sw, vw), mk(ctx, TC_F32, 1, &O, vb)), TC_F32, 2, so, e,
                1e-5 * (1 + sqrt(512.0)), 1e-4);
        tc_scope_end(ctx);
        free(vx); free(vw); free(vb); free(e);
    }
    {   /* big attention: causal, float mask, decode-like L = 1 */
        int64_t b2[2] = {2, 4}, b1[1] = {4};
        run_sdpa_case(ctx, 2, b2, 2, b2, 100, 100, 64, 64, 0, 0, 1, 0, 0);
        run_sdpa_case(ctx, 1, b1, 1, b1, 70, 130, 32, 48, 2, 2, 0, 0, 0);
        run_sdpa_case(ctx, 2, b2, 2, b2, 1, 300, 64, 64, 0, 0, 0, 0, 0);
    }
    {   /* big layer_norm / rms_norm rows, big pools */
        int64_t sh[2] = {64, 4096}, n = 64 * 4096, i;
        double *v = rnd_vals(TC_F32, n, -3, 3), *w = rnd_vals(TC_F32, 4096, -2, 2), *b = rnd_vals(TC_F32, 4096, -1, 1), *e = dalloc(n);
        tc_scope_begin(ctx);
        ref_norm(2, sh, 1, v, w, b, 1e-5, 0, e);
        strcpy(g_case, "big layer_norm [64,4096]");
        check_t(tc_layer_norm(ctx, mk(ctx, TC_F32, 2, sh, v), 1, mk(ctx, TC_F32, 1, sh + 1, w), mk(ctx, TC_F32, 1, sh + 1, b), 1e-5), TC_F32, 2,
                sh, e, 1e-4, 1e-4);
        ref_norm(2, sh, 1, v, w, NULL, FLT_EPSILON, 1, e);
        strcpy(g_case, "big rms_norm [64,4096]");
        check_t(tc_rms_norm(ctx, mk_layout(ctx, TC_F32, 2, sh, v, 1), 1, mk(ctx, TC_F32, 1, sh + 1, w), FLT_EPSILON), TC_F32, 2, sh, e, 1e-4,
                1e-4);
        {
            int64_t sx[4] = {2, 16, 64, 64}, so[4] = {2, 16, 32, 32}, c, oh, ow;
            tc_pool2d_opts o;
            memset(&o, 0, sizeof o);
            o.kernel[0] = o.kernel[1] = 3;
            o.stride[0] = o.stride[1] = 2;
            o.padding[0] = o.padding[1] = 1;
            for (c = 0; c < 32; c++)
                for (oh = 0; oh < 32; oh++)
                    for (ow = 0; ow < 32; ow++) {
                        double mx = -INFINITY, sum = 0;
                        int a, bb;
                        for (a = 0; a < 3; a++)
                            for (bb = 0; bb < 3; bb++) {
                                int64_t ih = oh * 2 - 1 + a, iw = ow * 2 - 1 + bb;
                                if (ih < 0 || iw < 0 || ih >= 64 || iw >= 64) continue;
                                mx = fmax(mx, v[(c * 64 + ih) * 64 + iw]);
                                sum += v[(c * 64 + ih) * 64 + iw];
                            }
                        e[(c * 32 + oh) * 32 + ow] = mx;
                        e[32768 + (c * 32 + oh) * 32 + ow] = sum / 9.0;
                    }
            strcpy(g_case, "big max_pool2d [2,16,64,64] k3 s2 p1");
            check_t(tc_max_pool2d(ctx, mk_layout(ctx, TC_F32, 4, sx, v, 2), &o), TC_F32, 4, so, e, 0, 0);
            strcpy(g_case, "big avg_pool2d [2,16,64,64] k3 s2 p1 (count_include_pad)");
            check_t(tc_avg_pool2d(ctx, mk(ctx, TC_F32, 4, sx, v), &o), TC_F32, 4, so, e + 32768, 1e-6, 1e-5);
        }
        tc_scope_end(ctx);
        for (i = 0; i < 1; i++) free(v);
        free(w); free(b); free(e);
    }
    {   /* conv2d, 3x3 pad 1, and a strided grouped one */
        int64_t N = 2, Cin = 16, H = 40, W = 40, Cout = 16, OH, OW, sx[4], sw[4], so[4];
        int st[2] = {1, 1}, pd[2] = {1, 1}, dl[2] = {1, 1}, g;
        for (g = 0; g < 4; g++) {
            int G = g == 1 ? 4 : g == 2 ? 16 : 1;
            int kk = g == 3 ? 1 : 3;
            double *vx, *vw, *vb, *e;
            tc_conv2d_opts o;
            if (g == 1) { st[0] = 2; st[1] = 3; dl[0] = 2; }
            if (g == 2) { st[0] = st[1] = 1; dl[0] = 1; }          /* depthwise 3x3 */
            if (g == 3) { st[0] = st[1] = 2; pd[0] = pd[1] = 0; } /* 1x1 stride 2 */
            OH = conv_out(H, kk, st[0], pd[0], dl[0]);
            OW = conv_out(W, kk, st[1], pd[1], dl[1]);
            sx[0] = N; sx[1] = Cin; sx[2] = H; sx[3] = W;
            sw[0] = Cout; sw[1] = Cin / G; sw[2] = kk; sw[3] = kk;
            so[0] = N; so[1] = Cout; so[2] = OH; so[3] = OW;
            vx = rnd_vals(TC_F32, numel_of(4, sx), -1, 1);
            vw = rnd_vals(TC_F32, numel_of(4, sw), -1, 1);
            vb = rnd_vals(TC_F32, Cout, -1, 1);
            e = dalloc(numel_of(4, so));
            ref_conv2d(N, Cin, H, W, vx, Cout, kk, kk, vw, vb, G, st, pd, dl, OH, OW, e);
            memset(&o, 0, sizeof o);
            o.stride[0] = st[0]; o.stride[1] = st[1];
            o.padding[0] = pd[0]; o.padding[1] = pd[1];
            o.dilation[0] = dl[0]; o.dilation[1] = dl[1];
            o.groups = G;
            snprintf(g_case, sizeof g_case, "big conv2d groups %d", G);
            tc_scope_begin(ctx);
            check_t(tc_conv2d(ctx, mk_layout(ctx, TC_F32, 4, sx, vx, 1), mk(ctx, TC_F32, 4, sw, vw), mk(ctx, TC_F32, 1, &Cout, vb), &o), TC_F32,
                    4, so, e, 1e-5 * (1 + sqrt(16.0 * 9)), 1e-4);
            tc_scope_end(ctx);
            free(vx); free(vw); free(vb); free(e);
        }
    }
    {   /* long softmax rows, reductions over middle axes of a permuted tensor, broadcast add */
        int64_t sh[2] = {12, 5000}, s3[3] = {40, 30, 50}, n = 60000, f;
        int ax[2] = {0, 2}, ond;
        int64_t osh[TC_MAX_DIMS], rc;
        double *v = rnd_vals(TC_F32, n, -6, 6), *e = dalloc(n), *er;
        tc_scope_begin(ctx);
        ref_softmax(2, sh, 1, v, e, 0);
        strcpy(g_case, "softmax rows of 5000");
        check_t(tc_softmax(ctx, mk(ctx, TC_F32, 2, sh, v), -1), TC_F32, 2, sh, e, 1e-6, 1e-4);
        ref_softmax(2, sh, 0, v, e, 1);
        strcpy(g_case, "log_softmax over dim 0 of [12,5000]");
        check_t(tc_log_softmax(ctx, mk_layout(ctx, TC_F32, 2, sh, v, 1), 0), TC_F32, 2, sh, e, 1e-5, 1e-4);
        ref_reduce(R_SUM, 3, s3, v, 5u, 0, &ond, osh, &er, &rc);
        strcpy(g_case, "sum over axes {0,2} of a permuted [40,30,50]");
        check_t(tc_sum(ctx, mk_layout(ctx, TC_F32, 3, s3, v, 1), 2, ax, 0), TC_F32, ond, osh, er, 1e-4, 1e-5);
        free(er);
        ref_reduce(R_VAR1, 3, s3, v, 5u, 1, &ond, osh, &er, &rc);
        strcpy(g_case, "var over axes {0,2} keepdim of a sliced [40,30,50]");
        check_t(tc_var(ctx, mk_layout(ctx, TC_F32, 3, s3, v, 2), 2, ax, 1, 1), TC_F32, ond, osh, er, 1e-4, 1e-4);
        free(er);
        ref_reduce(R_ARGMAX, 3, s3, v, 2u, 0, &ond, osh, &er, &rc);
        strcpy(g_case, "argmax over axis 1 of [40,30,50]");
        ax[0] = 1;
        check_t(tc_argmax(ctx, mk_layout(ctx, TC_F32, 3, s3, v, 3), 1, ax, 0), TC_I32, ond, osh, er, 0, 0);
        free(er);
        {
            int64_t s1[1] = {50};
            for (f = 0; f < n; f++) e[f] = (double)(float)(v[f] + v[f % 50]);
            strcpy(g_case, "big broadcast add [40,30,50] + [50]");
            check_t(tc_add(ctx, mk_layout(ctx, TC_F32, 3, s3, v, 1), mk(ctx, TC_F32, 1, s1, v)), TC_F32, 3, s3, e, 1e-6, 1e-6);
        }
        tc_scope_end(ctx);
        free(v);
        free(e);
    }
    tc_ctx_destroy(ctx);
}

int main(void) {
    ops_setup();
    TC_RUN(test_matmul);
    TC_RUN(test_linear);
    TC_RUN(test_conv2d);
    TC_RUN(test_sdpa);
    TC_RUN(test_big_vs_reference);
    return TC_TEST_SUMMARY();
}
