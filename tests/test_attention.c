/* The fused (flash-style) attention kernel against a double-precision
 * reference on every ISA level this machine runs: shapes spanning several
 * query and key blocks and the tails of each, E and Ev of 1 and past the
 * register tile, decode (L = 1) over a long cache, causal with L < S and
 * L > S, bool and additive masks that hide whole key blocks of a row before
 * later ones show it (the running max starts at -inf), fully masked rows
 * (NaN, like softmax), transposed and strided q/k/v, broadcast batches,
 * results independent of the thread count; and the compiler matching
 * softmax(q @ k^T * s + mask) @ v written by hand back into the kernel. */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"
#include "tc_test.h"

static tc_ctx *ctx;

/* mask kinds: 0 none, 1 bool [L, S], 2 additive [L, S], 3 bool that hides
 * the first 300 keys from row 0 and every key from row 1 */
static float mask_val(int kind, int64_t l, int64_t s, int64_t S) {
    uint64_t h = (uint64_t)(l * 7919 + s * 104729 + S) * 2654435761u;
    if (kind == 1) return (h >> 7) % 5 != 0;
    if (kind == 2) return (h >> 7) % 7 == 0 ? -INFINITY : (float)((int)((h >> 9) % 200) - 100) / 50.0f;
    if (kind == 3) return l == 1 ? 0.0f : (l == 0 && s < 300) ? 0.0f : 1.0f;
    return 0;
}

/* softmax(q k^T scale + mask) v for batch entry q-, k-, v-offsets in double;
 * x holds [B, L, E] etc. contiguous copies, y the kernel's [B, L, Ev]. */
static double attn_err(const float *q, const float *k, const float *v, const float *y, int64_t B, int64_t L,
                       int64_t S, int64_t E, int64_t Ev, int causal, int mkind, double scale, int *nan_ok) {
    double worst = 0, *sc = (double *)malloc(sizeof(double) * (size_t)(S ? S : 1));
    int64_t b, l, s, e;
    *nan_ok = 1;
    for (b = 0; b < B; b++)
        for (l = 0; l < L; l++) {
            double mx = -INFINITY, sum = 0;
            for (s = 0; s < S; s++) {
                double d = 0;
                for (e = 0; e < E; e++) d += (double)q[(b * L + l) * E + e] * k[(b * S + s) * E + e];
                d *= scale;
                if (causal && s > l) d = -INFINITY;
                if (mkind == 1 || mkind == 3) d = mask_val(mkind, l, s, S) != 0 ? d : -INFINITY;
                if (mkind == 2) d += mask_val(mkind, l, s, S);
                sc[s] = d;
                if (d > mx) mx = d;
            }
            for (s = 0; s < S; s++) sum += exp(sc[s] - mx);
            for (e = 0; e < Ev; e++) {
                double acc = 0, mag = 0, got = y[(b * L + l) * Ev + e], err;
                if (mx == -INFINITY) { /* every key masked: NaN, as softmax gives */
                    if (got == got) *nan_ok = 0;
                    continue;
                }
                for (s = 0; s < S; s++) {
                    double p = exp(sc[s] - mx) / sum;
                    acc += p * v[(b * S + s) * Ev + e];
                    mag += p * fabs(v[(b * S + s) * Ev + e]);
                }
                err = fabs(got - acc) / (mag + 1e-3);
                if (!(err <= worst)) worst = err != err ? INFINITY : err;
            }
        }
    free(sc);
    return worst;
}

/* q [B, L, E] in one of three layouts: 0 contiguous, 1 from [B, E, L]
 * transposed, 2 from [L, B, E] permuted (rows strided) */
static tc_tensor *operand(int lay, int64_t B, int64_t R, int64_t C, uint64_t seed) {
    int64_t sh[3];
    tc_tensor *t;
    if (lay == 0) {
        sh[0] = B, sh[1] = R, sh[2] = C;
        return tc_rand_uniform(ctx, 3, sh, -1.0, 1.0, seed);
    }
    if (lay == 1) {
        sh[0] = B, sh[1] = C, sh[2] = R;
        t = tc_rand_uniform(ctx, 3, sh, -1.0, 1.0, seed);
        return tc_transpose(ctx, t, 1, 2);
    }
    {
        int perm[3] = {1, 0, 2};
        sh[0] = R, sh[1] = B, sh[2] = C;
        t = tc_rand_uniform(ctx, 3, sh, -1.0, 1.0, seed);
        return tc_permute(ctx, t, perm);
    }
}

static float *dense(tc_tensor *t) {
    int64_t n = tc_numel(t);
    float *p = (float *)malloc(sizeof(float) * (size_t)(n ? n : 1));
    tc_read(t, TC_F32, p, sizeof(float) * (size_t)n);
    return p;
}

static tc_tensor *make_mask(int kind, int64_t L, int64_t S) {
    int64_t sh[2], l, s;
    float *m;
    tc_tensor *t, *r;
    if (!kind) return NULL;
    sh[0] = L, sh[1] = S;
    m = (float *)malloc(sizeof(float) * (size_t)(L * S > 0 ? L * S : 1));
    for (l = 0; l < L; l++)
        for (s = 0; s < S; s++) m[l * S + s] = mask_val(kind, l, s, S);
    t = tc_from_data(ctx, TC_F32, 2, sh, m);
    free(m);
    r = kind == 2 ? t : tc_ne_scalar(ctx, t, 0.0);
    return r;
}

static int check_case(int64_t B, int64_t L, int64_t S, int64_t E, int64_t Ev, int causal, int mkind, double scale,
                      int lay) {
    tc_tensor *q, *k, *v, *y;
    float *qd, *kd, *vd, *yd;
    double err, sc = scale > 0 ? scale : 1.0 / sqrt((double)E);
    int nan_ok, ok;
    tc_scope_begin(ctx);
    q = operand(lay, B, L, E, 11);
    k = operand((lay + 1) % 3, B, S, E, 12);
    v = operand((lay + 2) % 3, B, S, Ev, 13);
    y = tc_scaled_dot_product_attention(ctx, q, k, v, make_mask(mkind, L, S), causal, scale);
    TC_CHECKF(tc_status(y) == TC_OK, "sdpa: %s", tc_error(y));
    qd = dense(q), kd = dense(k), vd = dense(v), yd = dense(y);
    err = attn_err(qd, kd, vd, yd, B, L, S, E, Ev, causal, mkind, sc, &nan_ok);
    ok = err <= 2e-5 && nan_ok;
    TC_CHECKF(ok, "%s B=%lld L=%lld S=%lld E=%lld Ev=%lld causal=%d mask=%d layout=%d: error %.3g%s",
              tc_isa_name(tc_ctx_isa(ctx)), (long long)B, (long long)L, (long long)S, (long long)E, (long long)Ev,
              causal, mkind, lay, err, nan_ok ? "" : ", a fully masked row is not NaN");
    free(qd), free(kd), free(vd), free(yd);
    tc_scope_end(ctx);
    return ok;
}

TC_TEST(test_flash_every_level_and_shape) {
    int isa;
    for (isa = TC_ISA_SCALAR; isa <= TC_ISA_AVX512; isa++) {
        tc_ctx_set_isa(ctx, (tc_isa)isa);
        if ((int)tc_ctx_isa(ctx) != isa) continue;
        check_case(2, 100, 300, 64, 40, 0, 0, 0, 0);  /* several blocks of each, tails */
        check_case(2, 100, 300, 64, 40, 1, 0, 0, 1);  /* causal, L < S */
        check_case(1, 301, 97, 33, 65, 1, 0, 0, 2);   /* causal, L > S */
        check_case(3, 57, 211, 16, 16, 0, 1, 0, 0);   /* bool mask */
        check_case(2, 67, 200, 24, 31, 0, 2, 0.3, 1); /* additive mask with -inf, custom scale */
        check_case(1, 5, 700, 8, 8, 0, 3, 0, 2);      /* keys shown only after whole blocks; a dead row */
        check_case(4, 1, 1000, 64, 64, 0, 0, 0, 0);   /* decode over a long cache */
        check_case(2, 13, 1, 1, 1, 0, 0, 0, 1);       /* S = E = Ev = 1 */
        check_case(1, 40, 129, 1, 200, 1, 0, 0, 2);   /* E = 1, wide Ev */
        check_case(1, 20, 50, 300, 3, 0, 2, 0, 0);    /* E deeper than a GEMM slice */
    }
    tc_ctx_set_isa(ctx, TC_ISA_AUTO);
}

/* 1 thread and 2 threads give the same bits (a task owns its rows). */
TC_TEST(test_flash_thread_independent) {
    tc_ctx_options o;
    tc_ctx *c1;
    int64_t sh[4] = {2, 3, 150, 32};
    tc_tensor *q, *k, *v, *y1, *y2;
    memset(&o, 0, sizeof o);
    o.num_threads = 1;
    c1 = tc_ctx_create(&o);
    q = tc_rand_uniform(ctx, 4, sh, -2.0, 2.0, 1);
    k = tc_rand_uniform(ctx, 4, sh, -2.0, 2.0, 2);
    v = tc_rand_uniform(ctx, 4, sh, -2.0, 2.0, 3);
    y2 = tc_scaled_dot_product_attention(ctx, q, k, v, NULL, 1, 0.0);
    {
        tc_tensor *q1 = tc_rand_uniform(c1, 4, sh, -2.0, 2.0, 1), *k1 = tc_rand_uniform(c1, 4, sh, -2.0, 2.0, 2),
                  *v1 = tc_rand_uniform(c1, 4, sh, -2.0, 2.0, 3);
        float *a, *b;
        y1 = tc_scaled_dot_product_attention(c1, q1, k1, v1, NULL, 1, 0.0);
        a = dense(y1), b = dense(y2);
        TC_CHECK(tc_numel(y1) == tc_numel(y2) && memcmp(a, b, sizeof(float) * (size_t)tc_numel(y1)) == 0);
        free(a), free(b);
    }
    tc_ctx_destroy(c1);
}

/* ---- the decomposed pattern, compiled -------------------------------------- */

static int g_kind; /* 0: * scale, 1: / sqrt(E), 2: + additive mask, 3: where(bool mask), 4: scores also an output */
static tc_tensor *g_mask;

static void by_hand(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    tc_tensor *s = tc_matmul(c, in[0], tc_transpose(c, in[1], -2, -1));
    (void)user;
    if (g_kind == 1) s = tc_div_scalar(c, s, 8.0);
    else s = tc_mul_scalar(c, s, 0.125);
    if (g_kind == 2) s = tc_add(c, s, g_mask);
    if (g_kind == 3) s = tc_where(c, g_mask, s, tc_scalar(c, -INFINITY));
    out[0] = tc_matmul(c, tc_softmax(c, s, -1), in[2]);
    if (g_kind == 4) out[1] = s;
}

TC_TEST(test_pattern_becomes_flash) {
    int64_t sh[4] = {2, 4, 70, 64}, msh[2] = {70, 70};
    tc_tensor *in[3], *eager[2], *got[2];
    int kind;
    in[0] = tc_rand_uniform(ctx, 4, sh, -1.0, 1.0, 5);
    in[1] = tc_rand_uniform(ctx, 4, sh, -1.0, 1.0, 6);
    in[2] = tc_rand_uniform(ctx, 4, sh, -1.0, 1.0, 7);
    for (kind = 0; kind <= 4; kind++) {
        tc_compile_options o;
        tc_explain_info info;
        tc_fn *f;
        char text[8192];
        int fused;
        memset(&o, 0, sizeof o);
        o.num_inputs = 3;
        o.num_outputs = kind == 4 ? 2 : 1;
        g_kind = kind;
        g_mask = kind == 2 ? tc_rand_uniform(ctx, 2, msh, -1.0, 1.0, 8)
                 : kind == 3 ? tc_gt_scalar(ctx, tc_rand_uniform(ctx, 2, msh, -1.0, 1.0, 9), -0.6)
                             : NULL;
        by_hand(ctx, NULL, in, eager);
        f = tc_compile(ctx, by_hand, NULL, &o);
        TC_CHECK(tc_call(f, in, got) == TC_OK);
        TC_CHECK(tc_explain(f, &info, text, sizeof text) == TC_OK);
        fused = strstr(text, "scaled_dot_product_attention") != NULL;
        /* the scores read elsewhere must still be computed, so no rewrite */
        TC_CHECKF(fused == (kind != 4), "kind %d: attention kernel %s", kind, fused ? "used" : "not used");
        TC_CHECKF(tct_maxrel(got[0], eager[0]) < 1e-5, "kind %d: compiled vs eager %.3g", kind,
                  tct_maxrel(got[0], eager[0]));
        if (kind == 4) TC_CHECK(tct_maxrel(got[1], eager[1]) < 1e-5);
        tc_fn_free(f);
    }
}

int main(void) {
    ctx = tc_ctx_create(NULL);
    TC_RUN(test_flash_every_level_and_shape);
    TC_RUN(test_flash_thread_independent);
    TC_RUN(test_pattern_becomes_flash);
    tc_ctx_destroy(ctx);
    return TC_TEST_SUMMARY();
}
