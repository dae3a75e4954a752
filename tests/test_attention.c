/* The fused (flash-style) attention kernel against a double-precision
 * reference on every ISA level this machine runs: shapes spanning several
 * query and key blocks and the tails of each, E and Ev of 1 and past the
 * register tile, decode (L = 1) over a long cache, causal with L < S and
 * L > S, bool and additive masks that hide whole key blocks of a row before
 * later ones show it (the running max starts at -inf), fully masked rows
 * (NaN, like softmax), transposed and strided q/k/v, broadcast batches,
 * results independent of the thread count; and the compiler matching
 * softmax(q @ k^T * s + mask) @ v written by hand back into the kernel,
 * with the scale multiplied or divided on the scores, q, k or k^T, set
 * apart from the default 1/sqrt(E), and additive, bool and causal masks,
 * against a double reference of its own. */
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

/* ---- the rewrite's scale, masks and batch shapes, against a double reference -- */

/* softmax(q k^T * s + mask) v written by hand, one form per case: the
 * scale multiplied or divided, on the scores, on q, on k^T or on k (its
 * value chosen apart from 1/sqrt(E), so a rewrite that drops it, or takes
 * the default, or inverts a division, gives another result); the mask
 * none, added (with -inf), a bool selecting the scores over -inf, causal
 * written either way, or added per batch; q, k, v [B, L, E] or [B, H, L, E],
 * k and v shared by every batch entry.  The reference is computed here in
 * double from the inputs' values and the mask's, not by tcompile's ops. */
typedef struct hand_case {
    int form;      /* HF_*: where the scale is written                         */
    double s;      /* the constant written (a divisor for the / forms)         */
    int mask;      /* HM_*                                                     */
    int heads;     /* 0: [B, L, E]; H > 0: [B, H, L, E]                         */
    int shared_kv; /* k, v [S, E], [S, Ev]: one for every batch entry           */
    int fuses;     /* the attention kernel must be used                        */
    int64_t B, L, S, E, Ev;
} hand_case;
enum { HF_SCORES_MUL, HF_SCORES_DIV, HF_SCALAR_MUL_SCORES, HF_Q_MUL, HF_Q_DIV, HF_KT_MUL, HF_K_MUL, HF_TWICE, HF_NONE };
enum { HM_NONE, HM_ADD, HM_WHERE, HM_CAUSAL_WHERE, HM_CAUSAL_ADD, HM_ADD_PER_BATCH };

/* The scale a form multiplies the scores by. */
static double hand_scale(const hand_case *hc) {
    switch (hc->form) {
    case HF_SCORES_DIV: case HF_Q_DIV: return 1.0 / hc->s;
    case HF_TWICE: return hc->s / 4.0;
    case HF_NONE: return 1.0;
    default: return hc->s;
    }
}

/* in: q, k, v, then the mask (bool for the where forms, f32 otherwise) */
static void by_hand_case(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    const hand_case *hc = (const hand_case *)user;
    tc_tensor *q = in[0], *k = in[1], *kt, *s;
    if (hc->form == HF_Q_MUL) q = tc_mul_scalar(c, q, hc->s);
    if (hc->form == HF_Q_DIV) q = tc_div_scalar(c, q, hc->s);
    if (hc->form == HF_K_MUL) k = tc_mul_scalar(c, k, hc->s);
    kt = tc_transpose(c, k, -2, -1);
    if (hc->form == HF_KT_MUL) kt = tc_mul_scalar(c, kt, hc->s);
    s = tc_matmul(c, q, kt);
    if (hc->form == HF_SCORES_MUL) s = tc_mul_scalar(c, s, hc->s);
    if (hc->form == HF_SCORES_DIV) s = tc_div_scalar(c, s, hc->s);
    if (hc->form == HF_SCALAR_MUL_SCORES) s = tc_mul(c, tc_scalar(c, hc->s), s);
    if (hc->form == HF_TWICE) s = tc_div_scalar(c, tc_mul_scalar(c, s, hc->s), 4.0);
    if (hc->mask == HM_ADD || hc->mask == HM_CAUSAL_ADD || hc->mask == HM_ADD_PER_BATCH) s = tc_add(c, s, in[3]);
    if (hc->mask == HM_WHERE || hc->mask == HM_CAUSAL_WHERE) s = tc_where(c, in[3], s, tc_scalar(c, -INFINITY));
    out[0] = tc_matmul(c, tc_softmax(c, s, -1), in[2]);
}

/* The mask's value at batch entry b (of the [B, H] ones), row l, key j, as
 * an additive term (0 or -inf for a bool mask).  Row 1 of the additive
 * masks hides every key (a NaN row, as softmax gives). */
static double hand_mask(const hand_case *hc, int64_t b, int64_t l, int64_t j) {
    int64_t bb = hc->mask == HM_ADD_PER_BATCH ? b / (hc->heads ? hc->heads : 1) : 0;
    uint64_t h = (uint64_t)(bb * 31 + l * 7919 + j * 104729 + 1) * 2654435761u;
    switch (hc->mask) {
    case HM_ADD: case HM_ADD_PER_BATCH:
        if (l == 1) return -INFINITY;
        return (h >> 7) % 6 == 0 ? -INFINITY : (double)((int)((h >> 9) % 200) - 100) / 40.0;
    case HM_WHERE: return (h >> 7) % 4 == 0 && j != 0 ? -INFINITY : 0.0;
    case HM_CAUSAL_WHERE: case HM_CAUSAL_ADD: return j > l ? -INFINITY : 0.0;
    default: return 0.0;
    }
}

/* The mask input: [L, S] (one for every batch entry) or [B, 1, L, S]. */
static tc_tensor *hand_mask_tensor(const hand_case *hc) {
    int64_t sh[4], n = hc->L * hc->S, nb = hc->mask == HM_ADD_PER_BATCH ? hc->B : 1, b, l, j;
    float *m = (float *)malloc(sizeof(float) * (size_t)(n * nb));
    tc_tensor *t;
    for (b = 0; b < nb; b++)
        for (l = 0; l < hc->L; l++)
            for (j = 0; j < hc->S; j++) {
                double x = hand_mask(hc, b * (hc->heads ? hc->heads : 1), l, j);
                m[(b * hc->L + l) * hc->S + j] = hc->mask == HM_WHERE || hc->mask == HM_CAUSAL_WHERE ? (float)(x == 0) : (float)x;
            }
    if (nb > 1) sh[0] = hc->B, sh[1] = 1, sh[2] = hc->L, sh[3] = hc->S;
    else sh[0] = hc->L, sh[1] = hc->S;
    t = tc_from_data(ctx, TC_F32, nb > 1 ? 4 : 2, sh, m);
    free(m);
    return hc->mask == HM_WHERE || hc->mask == HM_CAUSAL_WHERE ? tc_ne_scalar(ctx, t, 0.0) : t;
}

/* Worst error of y against the reference, relative to sum p|v| + 1e-3 per
 * element; a row whose every key is masked must be NaN (+inf if not). */
static double hand_err(const hand_case *hc, const float *q, const float *k, const float *v, const float *y) {
    int64_t NB = hc->B * (hc->heads ? hc->heads : 1), b, l, j, e;
    double worst = 0, sc = hand_scale(hc), *p = (double *)malloc(sizeof(double) * (size_t)hc->S);
    for (b = 0; b < NB; b++) {
        const float *kb = k + (hc->shared_kv ? 0 : b) * hc->S * hc->E, *vb = v + (hc->shared_kv ? 0 : b) * hc->S * hc->Ev;
        for (l = 0; l < hc->L; l++) {
            double mx = -INFINITY, sum = 0;
            const float *ql = q + (b * hc->L + l) * hc->E;
            for (j = 0; j < hc->S; j++) {
                double d = 0;
                for (e = 0; e < hc->E; e++) d += (double)ql[e] * kb[j * hc->E + e];
                p[j] = d * sc + hand_mask(hc, b, l, j);
                if (p[j] > mx) mx = p[j];
            }
            for (j = 0; j < hc->S; j++) sum += p[j] = exp(p[j] - mx);
            for (e = 0; e < hc->Ev; e++) {
                double acc = 0, mag = 0, got = y[(b * hc->L + l) * hc->Ev + e], err;
                if (mx == -INFINITY) {
                    if (got == got) worst = INFINITY;
                    continue;
                }
                for (j = 0; j < hc->S; j++) {
                    acc += p[j] / sum * vb[j * hc->Ev + e];
                    mag += p[j] / sum * fabs(vb[j * hc->Ev + e]);
                }
                err = fabs(got - acc) / (mag + 1e-3);
                if (!(err <= worst)) worst = err != err ? INFINITY : err;
            }
        }
    }
    free(p);
    return worst;
}

static tc_tensor *hand_operand(const hand_case *hc, int64_t R, int64_t C, int shared, uint64_t seed) {
    int64_t sh[4];
    int n = 0;
    if (!shared) {
        sh[n++] = hc->B;
        if (hc->heads) sh[n++] = hc->heads;
    }
    sh[n++] = R;
    sh[n++] = C;
    return tc_rand_uniform(ctx, n, sh, -1.5, 1.5, seed);
}

/* One case: the pattern compiled in every mode, and eager, against the
 * reference; the kernel used where the case says it must be. */
static void hand_check(const hand_case *hc, int idx) {
    tc_tensor *in[4], *y;
    float *qd, *kd, *vd, *yd;
    int mode, nin = hc->mask ? 4 : 3;
    tc_scope_begin(ctx);
    in[0] = hand_operand(hc, hc->L, hc->E, 0, 100 + (uint64_t)idx);
    in[1] = hand_operand(hc, hc->S, hc->E, hc->shared_kv, 200 + (uint64_t)idx);
    in[2] = hand_operand(hc, hc->S, hc->Ev, hc->shared_kv, 300 + (uint64_t)idx);
    in[3] = hc->mask ? hand_mask_tensor(hc) : NULL;
    qd = dense(in[0]), kd = dense(in[1]), vd = dense(in[2]);
    by_hand_case(ctx, (void *)hc, in, &y);
    TC_CHECKF(tc_status(y) == TC_OK, "case %d eager: %s", idx, tc_error(y));
    yd = dense(y);
    {
        double err = hand_err(hc, qd, kd, vd, yd);
        TC_CHECKF(err <= 5e-5, "case %d (form %d, scale %g, mask %d) eager: error %.3g against the reference", idx, hc->form,
                  hc->s, hc->mask, err);
    }
    free(yd);
    for (mode = TC_MODE_DEFAULT; mode <= TC_MODE_MAX_AUTOTUNE; mode++) {
        tc_compile_options o;
        tc_fn *f;
        char text[8192];
        double err;
        int fused;
        memset(&o, 0, sizeof o);
        o.num_inputs = nin;
        o.num_outputs = 1;
        o.mode = (tc_mode)mode;
        f = tc_compile(ctx, by_hand_case, (void *)hc, &o);
        TC_CHECKF(tc_call(f, in, &y) == TC_OK, "case %d mode %d: %s", idx, mode, tc_fn_error(f));
        tc_explain(f, NULL, text, sizeof text);
        fused = strstr(text, "scaled_dot_product_attention") != NULL;
        TC_CHECKF(fused || !hc->fuses, "case %d (form %d, mask %d) mode %d: the attention kernel is not used", idx,
                  hc->form, hc->mask, mode);
        yd = dense(y);
        err = hand_err(hc, qd, kd, vd, yd);
        TC_CHECKF(err <= 5e-5, "case %d (form %d, scale %g, mask %d, %s) mode %d: error %.3g against the reference", idx,
                  hc->form, hc->s, hc->mask, fused ? "fused" : "not fused", mode, err);
        free(yd);
        tc_fn_free(f);
    }
    free(qd), free(kd), free(vd);
    tc_scope_end(ctx);
}

TC_TEST(test_pattern_scale_and_masks) {
    /* form, s, mask, heads, shared_kv, fuses, B, L, S, E, Ev: E = 24 and 40,
     * whose default scales (0.204, 0.158) none of the constants gives */
    static const hand_case cases[] = {
        {HF_SCORES_MUL, 0.37, HM_NONE, 0, 0, 1, 2, 37, 53, 24, 19},
        {HF_SCORES_DIV, 2.5, HM_NONE, 0, 0, 1, 2, 37, 53, 24, 19},
        {HF_SCORES_DIV, 0.8, HM_ADD, 3, 0, 1, 2, 29, 45, 40, 16},
        {HF_SCALAR_MUL_SCORES, 0.6, HM_WHERE, 0, 0, 1, 3, 21, 70, 24, 24},
        {HF_Q_MUL, 1.7, HM_NONE, 3, 0, 1, 2, 29, 45, 40, 16},
        {HF_Q_DIV, 3.0, HM_CAUSAL_WHERE, 0, 0, 1, 2, 37, 53, 24, 19},
        {HF_KT_MUL, 0.45, HM_CAUSAL_ADD, 3, 0, 1, 2, 45, 29, 40, 16}, /* causal with L > S */
        {HF_K_MUL, 0.3, HM_ADD_PER_BATCH, 2, 0, 1, 2, 29, 45, 40, 16},
        {HF_SCORES_MUL, 0.9, HM_CAUSAL_ADD, 2, 1, 1, 2, 33, 33, 24, 8}, /* k, v shared across the batch */
        {HF_NONE, 1.0, HM_ADD, 0, 0, 1, 2, 37, 53, 24, 19},              /* no scale: 1, not 1/sqrt(E) */
        {HF_TWICE, 1.6, HM_NONE, 0, 0, 0, 2, 37, 53, 24, 19},            /* two constants: 0.4 */
        {HF_SCORES_MUL, -0.5, HM_NONE, 0, 0, 0, 2, 37, 53, 24, 19},      /* negative: not the kernel's */
        {HF_SCORES_DIV, 8.0, HM_WHERE, 2, 0, 1, 1, 30, 40, 64, 64},      /* the default written out */
    };
    int i;
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) hand_check(&cases[i], i);
}

int main(void) {
    ctx = tc_ctx_create(NULL);
    TC_RUN(test_flash_every_level_and_shape);
    TC_RUN(test_flash_thread_independent);
    TC_RUN(test_pattern_becomes_flash);
    TC_RUN(test_pattern_scale_and_masks);
    tc_ctx_destroy(ctx);
    return TC_TEST_SUMMARY();
}
