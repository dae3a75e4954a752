/* test_ops.c — every op of the eager API against a straightforward reference
 * written here in plain C with double accumulation.
 *
 * Build:
 *   gcc -std=c99 -O1 -g -Wall -Wextra -Werror -pedantic -I. tests/test_ops.c \
 *       -o /tmp/t -lm -lpthread && /tmp/t
 * Also compiles as C++ (g++ -std=c++11 -x c++) and under
 * -fsanitize=address,undefined.
 *
 * Environment (optional): TC_TEST_SEED=n reruns every random case with
 * another seed; TC_TEST_THREADS=n runs the single-threaded tests on n threads
 * (combine with -DTC_PARALLEL_MIN_WORK=2 to push tiny tensors through the
 * parallel paths).
 *
 * Conventions: every test makes its own context(s) and destroys them; random
 * cases come from a seeded PRNG (g_rng), so a failure is reproducible; the
 * text in g_case names the failing case.  Inputs are written and outputs read
 * through tc_data + tc_strides with conversions written here, so one broken
 * host-access function does not hide every other result (tc_read/tc_write are
 * tested on their own). */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"
#include "tc_test.h"
#include "ref_pointwise.h"
#include <float.h>
#include <stdint.h>

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

static uint64_t g_rng = 0x1234567887654321ull;
static char g_case[512];

static uint64_t rnd_u64(void) {
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int rnd_int(int lo, int hi) { /* inclusive */
    return lo + (int)(rnd_u64() % (uint64_t)(hi - lo + 1));
}
static double rnd_unif(double lo, double hi) {
    return lo + (hi - lo) * ((double)(rnd_u64() >> 11) * (1.0 / 9007199254740992.0));
}
/* a size for random shapes: mostly 1..4, sometimes 0 */
static int64_t rnd_size(void) {
    int r = rnd_int(0, 15);
    if (r == 0) return 0;
    if (r <= 3) return 1;
    return (int64_t)rnd_int(2, 5);
}

static int is_nan(double x) { return x != x; }
static int is_inf(double x) { return x == INFINITY || x == -INFINITY; }

static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* IEEE binary16, round to nearest even */
static uint16_t f32_to_f16(float f) {
    uint32_t x = f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ex = (x >> 23) & 0xffu, man = x & 0x7fffffu;
    int e;
    if (ex == 0xffu) return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0u));
    e = (int)ex - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        uint32_t half, rem, mid;
        int shift;
        if (e < -10) return (uint16_t)sign;
        man |= 0x800000u;
        shift = 14 - e;
        half = man >> shift;
        rem = man & ((1u << shift) - 1u);
        mid = 1u << (shift - 1);
        if (rem > mid || (rem == mid && (half & 1u))) half++;
        return (uint16_t)(sign | half);
    } else {
        uint32_t h = ((uint32_t)e << 10) | (man >> 13);
        uint32_t rem = man & 0x1fffu;
        if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
        return (uint16_t)(sign | h);
    }
}
static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        float v = (float)m * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    if (e == 31) return bits_f32(sign | 0x7f800000u | (m << 13));
    return bits_f32(sign | ((e - 15 + 127) << 23) | (m << 13));
}
static uint16_t f32_to_bf16(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}
static float bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

/* float -> i32 as documented for tc_cast: truncate, NaN -> 0, saturate */
static double to_i32(double v) {
    if (is_nan(v)) return 0.0;
    if (v >= 2147483647.0) return 2147483647.0;
    if (v <= -2147483648.0) return -2147483648.0;
    return (double)(int32_t)v;
}
/* the value v becomes when stored as dt (via f32 for the float types) */
static double quant(tc_dtype dt, double v) {
    switch (dt) {
    case TC_F32: return (double)(float)v;
    case TC_F16: return (double)f16_to_f32(f32_to_f16((float)v));
    case TC_BF16: return (double)bf16_to_f32(f32_to_bf16((float)v));
    case TC_I32: return to_i32(v);
    case TC_BOOL: return v != 0.0 ? 1.0 : 0.0;
    default: return v;
    }
}

static double elem_get(const void *base, tc_dtype dt, int64_t off) {
    switch (dt) {
    case TC_F32: return (double)((const float *)base)[off];
    case TC_F16: return (double)f16_to_f32(((const uint16_t *)base)[off]);
    case TC_BF16: return (double)bf16_to_f32(((const uint16_t *)base)[off]);
    case TC_I32: return (double)((const int32_t *)base)[off];
    case TC_BOOL: return ((const uint8_t *)base)[off] ? 1.0 : 0.0;
    default: return NAN;
    }
}
static void elem_put(void *base, tc_dtype dt, int64_t off, double v) {
    switch (dt) {
    case TC_F32: ((float *)base)[off] = (float)v; break;
    case TC_F16: ((uint16_t *)base)[off] = f32_to_f16((float)v); break;
    case TC_BF16: ((uint16_t *)base)[off] = f32_to_bf16((float)v); break;
    case TC_I32: ((int32_t *)base)[off] = (int32_t)to_i32(v); break;
    case TC_BOOL: ((uint8_t *)base)[off] = (uint8_t)(v != 0.0); break;
    default: break;
    }
}

static int64_t numel_of(int nd, const int64_t *sh) {
    int64_t n = 1;
    int i;
    for (i = 0; i < nd; i++) n *= sh[i];
    return n;
}
/* storage offset of the row-major flat index `flat` */
static int64_t strided_off(int nd, const int64_t *sh, const int64_t *st, int64_t flat) {
    int64_t off = 0;
    int i;
    for (i = nd - 1; i >= 0; i--) {
        int64_t c = flat % sh[i];
        flat /= sh[i];
        off += c * st[i];
    }
    return off;
}
static double *dalloc(int64_t n) {
    return (double *)calloc((size_t)(n > 0 ? n : 1), sizeof(double));
}

/* all elements of t (any strides), row-major, as doubles; caller frees */
static double *peek(tc_tensor *t) {
    int64_t n = tc_numel(t), i;
    double *v = dalloc(n);
    const void *d;
    int nd;
    if (tc_status(t) != TC_OK || n <= 0) return v;
    d = tc_data(t);
    if (!d) return v;
    nd = tc_ndim(t);
    for (i = 0; i < n; i++)
        v[i] = elem_get(d, tc_type(t), strided_off(nd, tc_shape(t), tc_strides(t), i));
    return v;
}
/* write row-major values into t (any strides) */
static void poke(tc_tensor *t, const double *v) {
    int64_t n = tc_numel(t), i;
    void *d;
    int nd;
    if (tc_status(t) != TC_OK || n <= 0) return;
    d = tc_data(t);
    if (!d) return;
    nd = tc_ndim(t);
    for (i = 0; i < n; i++)
        elem_put(d, tc_type(t), strided_off(nd, tc_shape(t), tc_strides(t), i), v[i]);
}

static int g_threads_override; /* TC_TEST_THREADS: thread count for the 1-thread contexts */
static tc_ctx *mkctx(int threads) {
    tc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.num_threads = (threads == 1 && g_threads_override > 0) ? g_threads_override : threads;
    return tc_ctx_create(&o);
}

static void shape_str(char *buf, size_t cap, int nd, const int64_t *sh) {
    size_t len;
    int i;
    snprintf(buf, cap, "[");
    for (i = 0; i < nd; i++) {
        len = strlen(buf);
        snprintf(buf + len, cap - len, "%s%lld", i ? "," : "", (long long)sh[i]);
    }
    len = strlen(buf);
    snprintf(buf + len, cap - len, "]");
}

/* Build a tensor of dtype dt, logical shape (nd, sh), holding vals (row-major),
 * with a layout: 0 contiguous, 1 permuted storage, 2 a step-2/3 slice of a
 * bigger tensor (with an offset), 3 both.  Gaps hold a sentinel. */
static tc_tensor *mk_layout(tc_ctx *ctx, tc_dtype dt, int nd, const int64_t *sh,
                            const double *vals, int layout) {
    int perm[TC_MAX_DIMS], inv[TC_MAX_DIMS], i;
    int64_t bsh[TC_MAX_DIMS] = {0}, esh[TC_MAX_DIMS] = {0};
    int sdim = 0;
    int64_t step = 2;
    tc_tensor *base, *t;
    if (nd == 0) layout = 0;
    if (nd < 2 && (layout & 1)) layout &= ~1;
    for (i = 0; i < nd; i++) { perm[i] = i; esh[i] = sh[i]; }
    if (layout & 2) {
        sdim = rnd_int(0, nd - 1);
        step = rnd_int(2, 3);
        esh[sdim] = sh[sdim] * step + 2;
    }
    if (layout & 1) {
        for (i = nd - 1; i > 0; i--) {
            int j = rnd_int(0, i), tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
        }
    }
    /* t = permute(base, perm): t.shape[i] = base.shape[perm[i]] */
    for (i = 0; i < nd; i++) bsh[perm[i]] = esh[i];
    for (i = 0; i < nd; i++) inv[i] = perm[i];
    base = tc_full(ctx, dt, nd, bsh, 777.0);
    t = (layout & 1) ? tc_permute(ctx, base, inv) : base;
    if (layout & 2) t = tc_slice(ctx, t, sdim, 1, 1 + sh[sdim] * step, step);
    poke(t, vals);
    return t;
}
static tc_tensor *mk(tc_ctx *ctx, tc_dtype dt, int nd, const int64_t *sh, const double *vals) {
    return mk_layout(ctx, dt, nd, sh, vals, 0);
}
/* Like mk_layout, plus layout 4: an expanded (stride-0) tensor.  For layout 4
 * the values in v are first made constant along some random dims (and a
 * dropped leading dim) — v is updated in place, so compute the reference
 * after this call. */
static int64_t bcast_idx(int ond, const int64_t *osh, int64_t flat, int ind, const int64_t *ish);
static tc_tensor *mk_any(tc_ctx *ctx, tc_dtype dt, int nd, const int64_t *sh, double *v, int layout) {
    int64_t bsh[TC_MAX_DIMS], n = numel_of(nd, sh), bn, f;
    double *bv;
    char *seen;
    int i, lead, any = 0;
    tc_tensor *t;
    if (layout != 4) return mk_layout(ctx, dt, nd, sh, v, layout);
    if (nd == 0) return mk_layout(ctx, dt, nd, sh, v, 0);
    lead = rnd_int(0, 1);
    for (i = 0; i < nd; i++) {
        bsh[i] = (i < lead || rnd_int(0, 2) == 0) ? 1 : sh[i];
        any |= bsh[i] != sh[i];
    }
    if (!any) bsh[rnd_int(0, nd - 1)] = 1;
    bn = numel_of(nd, bsh);
    bv = dalloc(bn);
    seen = (char *)calloc((size_t)(bn > 0 ? bn : 1), 1);
    for (f = 0; f < n; f++) {
        int64_t b = bcast_idx(nd, sh, f, nd, bsh);
        if (!seen[b]) { seen[b] = 1; bv[b] = v[f]; }
        v[f] = bv[b];
    }
    t = tc_expand(ctx, mk_layout(ctx, dt, nd - lead, bsh + lead, bv, rnd_int(0, 3)), nd, sh);
    free(bv);
    free(seen);
    return t;
}

static double *rnd_vals(tc_dtype dt, int64_t n, double lo, double hi) {
    double *v = dalloc(n);
    int64_t i;
    for (i = 0; i < n; i++) {
        if (dt == TC_I32) v[i] = (double)rnd_int((int)lo, (int)hi);
        else if (dt == TC_BOOL) v[i] = (double)rnd_int(0, 1);
        else v[i] = quant(dt, rnd_unif(lo, hi));
    }
    return v;
}

static int close_enough(double got, double exp, double atol, double rtol) {
    if (is_nan(exp)) return is_nan(got);
    if (is_nan(got)) return 0;
    if (is_inf(exp) || is_inf(got)) return got == exp;
    return fabs(got - exp) <= atol + rtol * fabs(exp);
}

static int check_shape(tc_tensor *t, int nd, const int64_t *sh) {
    int i, ok = 1;
    char b1[128], b2[128];
    if (tc_status(t) != TC_OK) {
        TC_CHECKF(0, "%s: status %s: %s", g_case, tc_result_string(tc_status(t)), tc_error(t));
        return 0;
    }
    if (tc_ndim(t) != nd) ok = 0;
    else
        for (i = 0; i < nd; i++)
            if (tc_shape(t)[i] != sh[i]) ok = 0;
    if (!ok) {
        shape_str(b1, sizeof b1, nd, sh);
        if (tc_ndim(t) >= 0 && tc_ndim(t) <= TC_MAX_DIMS)
            shape_str(b2, sizeof b2, tc_ndim(t), tc_shape(t));
        else
            snprintf(b2, sizeof b2, "(ndim %d)", tc_ndim(t));
        TC_CHECKF(0, "%s: shape %s, expected %s", g_case, b2, b1);
    }
    return ok;
}

/* status OK, dtype, shape, and every value within atol + rtol*|exp|
 * (NaN must match NaN, inf must match inf exactly). */
static int check_t(tc_tensor *t, tc_dtype dt, int nd, const int64_t *sh,
                   const double *exp, double atol, double rtol) {
    double *got;
    int64_t n, i;
    int bad = 0;
    if (!check_shape(t, nd, sh)) return 0;
    if (tc_type(t) != dt) {
        TC_CHECKF(0, "%s: dtype %s, expected %s", g_case, tc_dtype_name(tc_type(t)),
                  tc_dtype_name(dt));
        return 0;
    }
    n = numel_of(nd, sh);
    if (tc_numel(t) != n) {
        TC_CHECKF(0, "%s: numel %lld, expected %lld", g_case, (long long)tc_numel(t),
                  (long long)n);
        return 0;
    }
    got = peek(t);
    for (i = 0; i < n; i++) {
        if (!close_enough(got[i], exp[i], atol, rtol)) {
            if (bad < 4)
                TC_CHECKF(0, "%s: element %lld: got %.9g, expected %.9g", g_case,
                          (long long)i, got[i], exp[i]);
            bad++;
        }
    }
    if (bad > 4) TC_CHECKF(0, "%s: %d mismatching elements in all", g_case, bad);
    free(got);
    return bad == 0;
}

/* tolerances for a result of dtype dt computed in f32 */
static double tol_a(tc_dtype dt) { return dt == TC_F16 ? 1e-3 : dt == TC_BF16 ? 1e-2 : 1e-5; }
static double tol_r(tc_dtype dt) { return dt == TC_F16 ? 2e-3 : dt == TC_BF16 ? 1.6e-2 : 1e-4; }

/* row-major flat index into a broadcast input (right-aligned shapes) */
static int64_t bcast_idx(int ond, const int64_t *osh, int64_t flat, int ind, const int64_t *ish) {
    int64_t idx = 0, mul = 1;
    int i;
    for (i = ond - 1; i >= 0; i--) {
        int64_t c = flat % osh[i];
        int k = i - (ond - ind);
        flat /= osh[i];
        if (k >= 0) {
            if (ish[k] != 1) idx += c * mul;
            mul *= ish[k];
        }
    }
    return idx;
}
/* broadcast two shapes; returns 0 when not broadcastable */
static int bcast_shape(int na, const int64_t *a, int nb, const int64_t *b, int *no, int64_t *o) {
    int n = na > nb ? na : nb, i;
    for (i = 0; i < n; i++) {
        int ia = i - (n - na), ib = i - (n - nb);
        int64_t sa = ia >= 0 ? a[ia] : 1, sb = ib >= 0 ? b[ib] : 1;
        if (sa != sb && sa != 1 && sb != 1) return 0;
        o[i] = sa == 1 ? sb : sa;
    }
    *no = n;
    return 1;
}
static void rnd_shape(int *nd, int64_t *sh, int maxnd) {
    int i;
    *nd = rnd_int(0, maxnd);
    for (i = 0; i < *nd; i++) sh[i] = rnd_size();
}
static const tc_dtype all_dtypes[5] = {TC_F32, TC_F16, TC_BF16, TC_I32, TC_BOOL};

/* random operand shape broadcastable to (ond, osh) */
static void bcast_operand_shape(int ond, const int64_t *osh, int *nd, int64_t *sh) {
    int i;
    *nd = rnd_int(0, ond);
    for (i = 0; i < *nd; i++) sh[i] = rnd_int(0, 2) == 0 ? 1 : osh[ond - *nd + i];
}

/* an operand tensor: random layout, sometimes explicitly expanded to (ond, osh) */
static tc_tensor *mk_operand(tc_ctx *ctx, tc_dtype dt, int nd, const int64_t *sh, const double *v,
                             int ond, const int64_t *osh, int *how) {
    tc_tensor *t = mk_layout(ctx, dt, nd, sh, v, rnd_int(0, 3));
    *how = 0;
    if (rnd_int(0, 4) == 0) {
        *how = 1;
        return tc_expand(ctx, t, ond, osh);
    }
    return t;
}


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
/* Views                                                                     */
/* ------------------------------------------------------------------------ */


TC_TEST(test_reshape) {
    tc_ctx *ctx = mkctx(1);
    int iter, i;
    for (iter = 0; iter < 80; iter++) {
        int nd, tnd, layout = rnd_int(0, 3);
        int64_t sh[TC_MAX_DIMS] = {0}, tsh[TC_MAX_DIMS], arg[TC_MAX_DIMS], n, m;
        double *v;
        tc_tensor *x, *r;
        tc_dtype dt = iter % 5 == 4 ? TC_I32 : TC_F32;
        rnd_shape(&nd, sh, 4);
        n = numel_of(nd, sh);
        tnd = rnd_int(0, 4);
        if (tnd == 0 && n != 1) tnd = 1;
        for (i = 0; i < tnd; i++) tsh[i] = 1;
        if (n == 0) {
            for (i = 0; i < tnd; i++) tsh[i] = rnd_int(1, 3);
            tsh[rnd_int(0, tnd - 1)] = 0;
        } else {
            m = n;
            while (m > 1) { /* distribute prime factors */
                int64_t p = 2;
                while (m % p) p++;
                m /= p;
                tsh[rnd_int(0, tnd - 1)] *= p;
            }
        }
        for (i = 0; i < tnd; i++) arg[i] = tsh[i];
        if (n > 0 && tnd > 0 && rnd_int(0, 2) == 0) arg[rnd_int(0, tnd - 1)] = -1;
        v = rnd_vals(dt, n, -5, 5);
        tc_scope_begin(ctx);
        x = mk_layout(ctx, dt, nd, sh, v, layout);
        r = tc_reshape(ctx, x, tnd, arg);
        {
            char b1[128], b2[128];
            shape_str(b1, sizeof b1, nd, sh);
            shape_str(b2, sizeof b2, tnd, arg);
            snprintf(g_case, sizeof g_case, "reshape %s -> %s layout %d", b1, b2, layout);
        }
        check_t(r, dt, tnd, tsh, v, 0, 0);
        if (layout == 0 && n > 0)
            TC_CHECKF(tc_data(r) == tc_data(x), "%s: contiguous reshape must be a view", g_case);
        tc_scope_end(ctx);
        free(v);
    }
    {   /* transposed -> flat: needs a copy */
        int64_t s34[2] = {3, 4}, s12 = 12, s523[3] = {5, 2, 3}, s65[2] = {6, 5}, s46[2] = {4, 6};
        int64_t s223[3] = {2, 2, 3}, s1 = 1, s11[2] = {1, 1};
        double v[30], e[30];
        int j;
        tc_tensor *x, *t, *r;
        for (i = 0; i < 30; i++) v[i] = i;
        strcpy(g_case, "reshape transposed [4,3]^T -> [12]");
        x = mk(ctx, TC_F32, 2, s34, v);
        t = tc_transpose(ctx, x, 0, 1);
        r = tc_reshape(ctx, t, 1, &s12);
        for (i = 0; i < 4; i++)
            for (j = 0; j < 3; j++) e[i * 3 + j] = v[j * 4 + i];
        check_t(r, TC_F32, 1, &s12, e, 0, 0);
        TC_CHECK(tc_is_contiguous(r));
        TC_CHECK(tc_data(r) != tc_data(x));
        strcpy(g_case, "reshape splitting a dim of a transposed tensor is a view");
        x = mk(ctx, TC_F32, 2, s65, v);
        t = tc_transpose(ctx, x, 0, 1); /* [5,6] */
        r = tc_reshape(ctx, t, 3, s523);
        for (i = 0; i < 5; i++)
            for (j = 0; j < 6; j++) e[i * 6 + j] = v[j * 5 + i];
        check_t(r, TC_F32, 3, s523, e, 0, 0);
        TC_CHECKF(tc_data(r) == tc_data(t), "%s", g_case);
        strcpy(g_case, "reshape of a row-sliced tensor");
        x = mk(ctx, TC_F32, 2, s46, v);
        t = tc_slice(ctx, x, 0, 0, 4, 2); /* rows 0 and 2: [2,6] */
        r = tc_reshape(ctx, t, 3, s223);
        for (i = 0; i < 2; i++)
            for (j = 0; j < 6; j++) e[i * 6 + j] = v[i * 12 + j];
        check_t(r, TC_F32, 3, s223, e, 0, 0);
        TC_CHECKF(tc_data(r) == tc_data(t), "%s: splitting the last dim is a view", g_case);
        r = tc_reshape(ctx, t, 1, &s12);
        check_t(r, TC_F32, 1, &s12, e, 0, 0);
        strcpy(g_case, "size-1 dims do not break contiguity (PyTorch)");
        {
            int64_t s6 = 6, s16[2] = {1, 6}, s61[2] = {6, 1};
            x = mk(ctx, TC_F32, 2, s46, v);
            t = tc_slice(ctx, x, 0, 2, 3, 1); /* [1,6], offset 12 */
            check_shape(t, 2, s16);
            TC_CHECK(tc_is_contiguous(t));
            TC_CHECK(tc_contiguous(ctx, t) == t);
            for (i = 0; i < 6; i++) e[i] = v[12 + i];
            r = tc_reshape(ctx, t, 1, &s6);
            check_t(r, TC_F32, 1, &s6, e, 0, 0);
            TC_CHECKF(tc_data(r) == tc_data(t), "%s: reshape of a row slice must be a view", g_case);
            r = tc_transpose(ctx, t, 0, 1); /* [6,1] */
            check_t(r, TC_F32, 2, s61, e, 0, 0);
            TC_CHECKF(tc_data(tc_reshape(ctx, r, 1, &s6)) == tc_data(t), "%s: reshape of [6,1] (transposed [1,6]) must be a view", g_case);
            TC_CHECKF(tc_data(tc_squeeze_all(ctx, r)) == tc_data(t), "%s: squeeze is a view", g_case);
            TC_CHECKF(tc_data(tc_flatten(ctx, r, 0, -1)) == tc_data(t), "%s: flatten of [6,1] must be a view", g_case);
        }
        strcpy(g_case, "reshape of an expanded tensor (stride 0) copies");
        {
            int64_t s31[2] = {3, 1}, s34b[2] = {3, 4};
            x = mk(ctx, TC_F32, 2, s31, v);
            t = tc_expand(ctx, x, 2, s34b);
            for (i = 0; i < 12; i++) e[i] = v[i / 4];
            check_t(tc_reshape(ctx, t, 1, &s12), TC_F32, 1, &s12, e, 0, 0);
            check_t(tc_contiguous(ctx, t), TC_F32, 2, s34b, e, 0, 0);
            check_t(tc_clone(ctx, t), TC_F32, 2, s34b, e, 0, 0);
        }
        strcpy(g_case, "reshape of an empty tensor with -1");
        {
            int64_t z3[2] = {0, 3}, m3[2] = {-1, 3}, t3[2] = {3, -1}, r30[2] = {3, 0};
            x = tc_zeros(ctx, TC_F32, 2, z3);
            check_t(tc_reshape(ctx, x, 2, m3), TC_F32, 2, z3, e, 0, 0);
            check_t(tc_reshape(ctx, x, 2, t3), TC_F32, 2, r30, e, 0, 0);
        }
        strcpy(g_case, "reshape 0-d <-> [1] / [1,1]");
        x = tc_scalar(ctx, 2.5);
        r = tc_reshape(ctx, x, 2, s11);
        e[0] = 2.5;
        check_t(r, TC_F32, 2, s11, e, 0, 0);
        r = tc_reshape(ctx, r, 0, NULL);
        check_t(r, TC_F32, 0, NULL, e, 0, 0);
        {
            int64_t m1 = -1;
            r = tc_reshape(ctx, x, 1, &m1);
            check_t(r, TC_F32, 1, &s1, e, 0, 0);
        }
    }
    tc_ctx_destroy(ctx);
}

/* expected values of a permutation of (nd, sh) data */
static void ref_permute(int nd, const int64_t *sh, const int *perm, const double *in, double *out) {
    int64_t osh[TC_MAX_DIMS], n = numel_of(nd, sh), f, idx[TC_MAX_DIMS];
    int i;
    for (i = 0; i < nd; i++) osh[i] = sh[perm[i]];
    for (f = 0; f < n; f++) {
        int64_t r = f, src = 0;
        for (i = nd - 1; i >= 0; i--) {
            idx[perm[i]] = r % osh[i];
            r /= osh[i];
        }
        for (i = 0; i < nd; i++) src = src * sh[i] + idx[i];
        out[f] = in[src];
    }
}

TC_TEST(test_permute_transpose) {
    tc_ctx *ctx = mkctx(1);
    int iter, i;
    for (iter = 0; iter < 60; iter++) {
        int nd, perm[TC_MAX_DIMS], layout = rnd_int(0, 3);
        int64_t sh[TC_MAX_DIMS] = {0}, osh[TC_MAX_DIMS], n;
        double *v, *e;
        tc_tensor *x, *r;
        rnd_shape(&nd, sh, 5);
        n = numel_of(nd, sh);
        for (i = 0; i < nd; i++) perm[i] = i;
        for (i = nd - 1; i > 0; i--) {
            int j = rnd_int(0, i), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (i = 0; i < nd; i++) osh[i] = sh[perm[i]];
        v = rnd_vals(TC_F32, n, -3, 3);
        e = dalloc(n);
        ref_permute(nd, sh, perm, v, e);
        tc_scope_begin(ctx);
        x = mk_layout(ctx, TC_F32, nd, sh, v, layout);
        snprintf(g_case, sizeof g_case, "permute iter %d nd %d layout %d", iter, nd, layout);
        r = tc_permute(ctx, x, perm);
        check_t(r, TC_F32, nd, osh, e, 0, 0);
        if (n > 0) TC_CHECKF(tc_data(r) == tc_data(x), "%s: permute must be a view", g_case);
        if (nd >= 1) {
            int d0 = rnd_int(0, nd - 1), d1 = rnd_int(0, nd - 1);
            for (i = 0; i < nd; i++) perm[i] = i;
            perm[d0] = d1;
            perm[d1] = d0;
            for (i = 0; i < nd; i++) osh[i] = sh[perm[i]];
            ref_permute(nd, sh, perm, v, e);
            snprintf(g_case, sizeof g_case, "transpose(%d,%d) iter %d nd %d", d0 - nd, d1, iter, nd);
            r = tc_transpose(ctx, x, d0 - nd, d1);
            check_t(r, TC_F32, nd, osh, e, 0, 0);
        }
        tc_scope_end(ctx);
        free(v);
        free(e);
    }
    tc_ctx_destroy(ctx);
}

static int64_t py_clamp(int64_t v, int64_t n) {
    if (v < 0) {
        v += n;
        if (v < 0) v = 0;
    }
    if (v > n) v = n;
    return v;
}

TC_TEST(test_slice_select) {
    tc_ctx *ctx = mkctx(1);
    int iter, i;
    for (iter = 0; iter < 100; iter++) {
        int nd, dim, layout = rnd_int(0, 3), ndim_arg;
        int64_t sh[TC_MAX_DIMS] = {0}, osh[TC_MAX_DIMS], n, m, start, end, step, s0, e0, len, f;
        double *v, *e;
        tc_tensor *x, *r;
        rnd_shape(&nd, sh, 4);
        if (nd == 0) { nd = 1; sh[0] = 5; }
        dim = rnd_int(0, nd - 1);
        ndim_arg = rnd_int(0, 1) ? dim : dim - nd;
        m = sh[dim];
        start = rnd_int(-(int)m - 3, (int)m + 3);
        end = rnd_int(-(int)m - 3, (int)m + 3);
        if (rnd_int(0, 5) == 0) start = INT64_MIN;
        if (rnd_int(0, 5) == 0) end = INT64_MAX;
        step = rnd_int(1, 4);
        s0 = py_clamp(start, m);
        e0 = py_clamp(end, m);
        len = e0 > s0 ? (e0 - s0 + step - 1) / step : 0;
        for (i = 0; i < nd; i++) osh[i] = sh[i];
        osh[dim] = len;
        n = numel_of(nd, sh);
        v = rnd_vals(TC_F32, n, -3, 3);
        e = dalloc(numel_of(nd, osh));
        for (f = 0; f < numel_of(nd, osh); f++) {
            int64_t r0 = f, src = 0, idx[TC_MAX_DIMS];
            for (i = nd - 1; i >= 0; i--) { idx[i] = r0 % osh[i]; r0 /= osh[i]; }
            idx[dim] = s0 + idx[dim] * step;
            for (i = 0; i < nd; i++) src = src * sh[i] + idx[i];
            e[f] = v[src];
        }
        tc_scope_begin(ctx);
        x = mk_layout(ctx, TC_F32, nd, sh, v, layout);
        snprintf(g_case, sizeof g_case, "slice dim %d of size %lld [%lld:%lld:%lld] layout %d", ndim_arg,
                 (long long)m, (long long)start, (long long)end, (long long)step, layout);
        r = tc_slice(ctx, x, ndim_arg, start, end, step);
        check_t(r, TC_F32, nd, osh, e, 0, 0);
        if (numel_of(nd, osh) > 0)
            TC_CHECKF(tc_data(r) == (void *)((char *)tc_data(x) + s0 * tc_strides(x)[dim] * 4),
                      "%s: slice must be a view", g_case);
        if (m > 0) {
            int64_t index = rnd_int(-(int)m, (int)m - 1), ix = index < 0 ? index + m : index;
            int64_t ssh[TC_MAX_DIMS], k = 0;
            double *se;
            for (i = 0; i < nd; i++)
                if (i != dim) ssh[k++] = sh[i];
            se = dalloc(numel_of(nd - 1, ssh));
            for (f = 0; f < numel_of(nd - 1, ssh); f++) {
                int64_t r0 = f, src = 0, idx[TC_MAX_DIMS];
                for (i = nd - 1; i >= 0; i--) {
                    if (i == dim) { idx[i] = ix; continue; }
                    idx[i] = r0 % sh[i];
                    r0 /= sh[i];
                }
                for (i = 0; i < nd; i++) src = src * sh[i] + idx[i];
                se[f] = v[src];
            }
            snprintf(g_case, sizeof g_case, "select dim %d index %lld of size %lld layout %d",
                     ndim_arg, (long long)index, (long long)m, layout);
            check_t(tc_select(ctx, x, ndim_arg, index), TC_F32, nd - 1, ssh, se, 0, 0);
            free(se);
        }
        tc_scope_end(ctx);
        free(v);
        free(e);
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_expand) {
    tc_ctx *ctx = mkctx(1);
    int iter, i;
    for (iter = 0; iter < 60; iter++) {
        int nd, lead = rnd_int(0, 2), tnd, layout = rnd_int(0, 3);
        int64_t sh[TC_MAX_DIMS] = {0}, tsh[TC_MAX_DIMS], arg[TC_MAX_DIMS], n, tn, f;
        double *v, *e;
        tc_tensor *x, *r;
        rnd_shape(&nd, sh, 3);
        for (i = 0; i < nd; i++)
            if (rnd_int(0, 1)) sh[i] = 1;
        tnd = nd + lead;
        for (i = 0; i < lead; i++) arg[i] = tsh[i] = rnd_int(0, 6) == 0 ? 0 : rnd_int(1, 3);
        for (i = 0; i < nd; i++) {
            int64_t s = sh[i];
            if (s == 1) s = rnd_int(0, 6) == 0 ? 0 : rnd_int(1, 4);
            tsh[lead + i] = s;
            arg[lead + i] = (s == sh[i] && rnd_int(0, 1)) ? -1 : s;
        }
        n = numel_of(nd, sh);
        tn = numel_of(tnd, tsh);
        v = rnd_vals(TC_F32, n, -3, 3);
        e = dalloc(tn);
        for (f = 0; f < tn; f++) e[f] = v[bcast_idx(tnd, tsh, f, nd, sh)];
        tc_scope_begin(ctx);
        x = mk_layout(ctx, TC_F32, nd, sh, v, layout);
        {
            char b1[128], b2[128];
            shape_str(b1, sizeof b1, nd, sh);
            shape_str(b2, sizeof b2, tnd, arg);
            snprintf(g_case, sizeof g_case, "expand %s -> %s layout %d", b1, b2, layout);
        }
        r = tc_expand(ctx, x, tnd, arg);
        check_t(r, TC_F32, tnd, tsh, e, 0, 0);
        if (tn > 0) TC_CHECKF(tc_data(r) == tc_data(x), "%s: expand must be a view", g_case);
        tc_scope_end(ctx);
        free(v);
        free(e);
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_squeeze_unsqueeze_flatten) {
    tc_ctx *ctx = mkctx(1);
    int iter, i;
    for (iter = 0; iter < 60; iter++) {
        int nd, layout = rnd_int(0, 3), d, k;
        int64_t sh[TC_MAX_DIMS] = {0}, osh[TC_MAX_DIMS], n;
        double *v;
        tc_tensor *x;
        rnd_shape(&nd, sh, 5);
        for (i = 0; i < nd; i++)
            if (rnd_int(0, 2) == 0) sh[i] = 1;
        n = numel_of(nd, sh);
        v = rnd_vals(TC_F32, n, -3, 3);
        tc_scope_begin(ctx);
        x = mk_layout(ctx, TC_F32, nd, sh, v, layout);
        if (nd > 0) {
            d = rnd_int(0, nd - 1);
            k = 0;
            for (i = 0; i < nd; i++)
                if (i != d || sh[d] != 1) osh[k++] = sh[i];
            snprintf(g_case, sizeof g_case, "squeeze(%d) iter %d", d - nd, iter);
            check_t(tc_squeeze(ctx, x, d - nd), TC_F32, k, osh, v, 0, 0);
            snprintf(g_case, sizeof g_case, "squeeze(%d) iter %d", d, iter);
            check_t(tc_squeeze(ctx, x, d), TC_F32, k, osh, v, 0, 0);
        }
        k = 0;
        for (i = 0; i < nd; i++)
            if (sh[i] != 1) osh[k++] = sh[i];
        snprintf(g_case, sizeof g_case, "squeeze_all iter %d", iter);
        check_t(tc_squeeze_all(ctx, x), TC_F32, k, osh, v, 0, 0);
        if (nd < TC_MAX_DIMS) {
            int arg = rnd_int(-nd - 1, nd), pos = arg < 0 ? arg + nd + 1 : arg;
            k = 0;
            for (i = 0; i <= nd; i++) osh[i] = i < pos ? sh[i] : i == pos ? 1 : sh[i - 1];
            snprintf(g_case, sizeof g_case, "unsqueeze(%d) nd %d iter %d", arg, nd, iter);
            check_t(tc_unsqueeze(ctx, x, arg), TC_F32, nd + 1, osh, v, 0, 0);
        }
        {
            int s, e2, as, ae, onv = 0;
            if (nd == 0) {
                int64_t one = 1;
                snprintf(g_case, sizeof g_case, "flatten 0-d");
                check_t(tc_flatten(ctx, x, 0, -1), TC_F32, 1, &one, v, 0, 0);
            } else {
                s = rnd_int(0, nd - 1);
                e2 = rnd_int(s, nd - 1);
                as = rnd_int(0, 1) ? s : s - nd;
                ae = rnd_int(0, 1) ? e2 : e2 - nd;
                for (i = 0; i < s; i++) osh[onv++] = sh[i];
                osh[onv] = 1;
                for (i = s; i <= e2; i++) osh[onv] *= sh[i];
                onv++;
                for (i = e2 + 1; i < nd; i++) osh[onv++] = sh[i];
                snprintf(g_case, sizeof g_case, "flatten(%d,%d) nd %d layout %d", as, ae, nd, layout);
                check_t(tc_flatten(ctx, x, as, ae), TC_F32, onv, osh, v, 0, 0);
            }
        }
        tc_scope_end(ctx);
        free(v);
    }
    tc_ctx_destroy(ctx);
}

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
/* Pointwise unary                                                           */
/* ------------------------------------------------------------------------ */

/* unops[]: every op of TC__UNARY_API, with its reference (ref_pointwise.h) */

TC_TEST(test_unary_f32) {
    tc_ctx *ctx = mkctx(1);
    int o, iter;
    int64_t i;
    for (o = 0; o < N_UNOPS; o++) {
        for (iter = 0; iter < 30; iter++) {
            int nd, layout = rnd_int(0, 4);
            int64_t sh[TC_MAX_DIMS] = {0}, n;
            double *v, *e;
            tc_tensor *x;
            rnd_shape(&nd, sh, 4);
            n = numel_of(nd, sh);
            v = rnd_vals(TC_F32, n, unops[o].lo, unops[o].hi);
            if (unops[o].ref == r_reciprocal)
                for (i = 0; i < n; i++) v[i] = (i % 2) ? -v[i] : v[i];
            tc_scope_begin(ctx);
            x = mk_any(ctx, TC_F32, nd, sh, v, layout);
            e = dalloc(n);
            for (i = 0; i < n; i++) e[i] = (double)(float)unops[o].ref(v[i]);
            snprintf(g_case, sizeof g_case, "%s f32 nd %d layout %d iter %d", unops[o].name, nd, layout, iter);
            check_t(unops[o].fn(ctx, x, TC_HERE_), TC_F32, nd, sh, e, 1e-5, 1e-4);
            tc_scope_end(ctx);
            free(v);
            free(e);
        }
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_unary_special_values) {
    static const double sv[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, 0.5, -2.5, 1e-30, 88.0, 100.0, -100.0};
    int64_t n = (int64_t)(sizeof sv / sizeof sv[0]), i;
    tc_ctx *ctx = mkctx(1);
    int o;
    double v[16], e[16];
    for (o = 0; o < N_UNOPS; o++) {
        for (i = 0; i < n; i++) {
            v[i] = sv[i];
            if (!unops[o].special_inf && is_inf(v[i])) v[i] = 3.0;
            e[i] = (double)(float)unops[o].ref(v[i]);
        }
        snprintf(g_case, sizeof g_case, "%s on 0, -0, +-1, +-inf, NaN, 1e-30, +-100", unops[o].name);
        check_t(unops[o].fn(ctx, mk(ctx, TC_F32, 1, &n, v), TC_HERE_), TC_F32, 1, &n, e, 1e-5, 1e-4);
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_unary_dtypes) {
    tc_ctx *ctx = mkctx(1);
    int o, k;
    int64_t sh[2] = {3, 7}, n = 21, i;
    for (o = 0; o < N_UNOPS; o++) {
        for (k = 0; k < 4; k++) {
            tc_dtype in = k == 0 ? TC_I32 : k == 1 ? TC_F16 : k == 2 ? TC_BF16 : TC_BOOL;
            tc_dtype out;
            double *v, *e;
            if (in == TC_BOOL && unops[o].keeps_int) continue; /* neg/abs/... of bool: not specified */
            e = dalloc(n);
            v = rnd_vals(in, n, unops[o].lo < -5 ? -5 : unops[o].lo, unops[o].hi > 5 ? 5 : unops[o].hi);
            out = (in == TC_I32 && unops[o].keeps_int) ? TC_I32 : (in == TC_I32 || in == TC_BOOL) ? TC_F32 : in;
            for (i = 0; i < n; i++) e[i] = quant(out, unops[o].ref(v[i]));
            tc_scope_begin(ctx);
            snprintf(g_case, sizeof g_case, "%s on %s", unops[o].name, tc_dtype_name(in));
            check_t(unops[o].fn(ctx, mk_layout(ctx, in, 2, sh, v, k), TC_HERE_), out, 2, sh, e,
                    tol_a(out), tol_r(out));
            tc_scope_end(ctx);
            free(v);
            free(e);
        }
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_softplus_clamp) {
    tc_ctx *ctx = mkctx(1);
    static const double betas[3] = {1, 2, 0.5}, thrs[3] = {20, 5, 1};
    int c, iter;
    int64_t i;
    for (c = 0; c < 3; c++) {
        for (iter = 0; iter < 6; iter++) {
            int nd, layout = rnd_int(0, 3);
            int64_t sh[TC_MAX_DIMS] = {0}, n;
            double *v, *e;
            rnd_shape(&nd, sh, 3);
            n = numel_of(nd, sh);
            v = rnd_vals(TC_F32, n, -30, 30);
            e = dalloc(n);
            for (i = 0; i < n; i++) {
                double bx = betas[c] * v[i];
                e[i] = bx > thrs[c] ? v[i] : log1p(exp(bx)) / betas[c];
            }
            tc_scope_begin(ctx);
            snprintf(g_case, sizeof g_case, "softplus beta %g threshold %g", betas[c], thrs[c]);
            check_t(tc_softplus(ctx, mk_layout(ctx, TC_F32, nd, sh, v, layout), betas[c], thrs[c]), TC_F32,
                    nd, sh, e, 1e-5, 1e-4);
            tc_scope_end(ctx);
            free(v);
            free(e);
        }
    }
    {   /* threshold boundary: beta*x == threshold is not linear yet (PyTorch: linear when beta*x > threshold) */
        int64_t s3 = 3;
        double v[3] = {1.0, 1.5, 0.5}, e[3];
        e[0] = log1p(exp(1.0));
        e[1] = 1.5;
        e[2] = log1p(exp(0.5));
        strcpy(g_case, "softplus beta 1 threshold 1 at the threshold");
        check_t(tc_softplus(ctx, mk(ctx, TC_F32, 1, &s3, v), 1.0, 1.0), TC_F32, 1, &s3, e, 1e-5, 1e-4);
        e[0] = log1p(exp(2.0)) / 2.0;
        e[1] = 1.5;
        e[2] = log1p(exp(1.0)) / 2.0;
        strcpy(g_case, "softplus beta 2 threshold 2 at the threshold");
        check_t(tc_softplus(ctx, mk(ctx, TC_F32, 1, &s3, v), 2.0, 2.0), TC_F32, 1, &s3, e, 1e-5, 1e-4);
    }
    {
        static const double los[5] = {-1.0, -INFINITY, -2.0, 0.0, 2.0};
        static const double his[5] = {1.0, 0.5, INFINITY, 0.0, -2.0}; /* lo > hi gives hi */
        int64_t n = 9;
        double v[9] = {-3, -1.5, -0.5, 0, 0.25, 0.75, 2.5, INFINITY, NAN}, e[9];
        for (c = 0; c < 5; c++) {
            for (i = 0; i < n; i++) e[i] = is_nan(v[i]) ? v[i] : fmin(fmax(v[i], los[c]), his[c]);
            snprintf(g_case, sizeof g_case, "clamp(%g, %g)", los[c], his[c]);
            check_t(tc_clamp(ctx, mk_layout(ctx, TC_F32, 1, &n, v, 2), los[c], his[c]), TC_F32, 1, &n, e, 0, 0);
        }
        for (i = 0; i < n; i++) v[i] = quant(TC_F16, v[i]);
        for (i = 0; i < n; i++) e[i] = is_nan(v[i]) ? v[i] : fmin(fmax(v[i], -1.0), 1.0);
        strcpy(g_case, "clamp f16");
        check_t(tc_clamp(ctx, mk(ctx, TC_F16, 1, &n, v), -1, 1), TC_F16, 1, &n, e, 0, 0);
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_cast) {
    static const double fv[] = {0.0, -0.0, 2.7, -2.7, 0.5, -0.5, 1e10, -1e10, NAN, INFINITY, -INFINITY,
                                2147483520.0, 2147483648.0, -2147483648.0, 65504.0, 70000.0, 1.00048828125,
                                3.0, -7.0, 1e-30};
    static const double iv[] = {0, 1, -1, 2049, 16777217, 70000, -2147483647.0 - 1.0, 2147483647.0, 123456789, -5};
    tc_ctx *ctx = mkctx(1);
    int a, b;
    int64_t i;
    for (a = 0; a < 5; a++) {
        for (b = 0; b < 5; b++) {
            tc_dtype from = all_dtypes[a], to = all_dtypes[b];
            const double *src = from == TC_I32 ? iv : fv;
            int64_t n = from == TC_I32 ? (int64_t)(sizeof iv / sizeof iv[0]) : (int64_t)(sizeof fv / sizeof fv[0]);
            double v[32], e[32];
            for (i = 0; i < n; i++) {
                v[i] = quant(from, src[i]);
                /* i32 -> f16/bf16 goes through f32 like every conversion here */
                e[i] = quant(to, v[i]);
            }
            snprintf(g_case, sizeof g_case, "cast %s -> %s", tc_dtype_name(from), tc_dtype_name(to));
            check_t(tc_cast(ctx, mk_layout(ctx, from, 1, &n, v, 2), to), to, 1, &n, e, 0, 0);
        }
    }
    {   /* the documented f32 -> i32 cases, spelled out */
        int64_t n = 8;
        double v[8] = {2.7, -2.7, 1e10, -1e10, NAN, INFINITY, -INFINITY, 0.999};
        double e[8] = {2, -2, 2147483647.0, -2147483648.0, 0, 2147483647.0, -2147483648.0, 0};
        double eb[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        strcpy(g_case, "cast f32 -> i32 (truncate, saturate, NaN -> 0)");
        check_t(tc_cast(ctx, mk(ctx, TC_F32, 1, &n, v), TC_I32), TC_I32, 1, &n, e, 0, 0);
        strcpy(g_case, "cast f32 -> bool (x != 0, NaN is true)");
        check_t(tc_cast(ctx, mk(ctx, TC_F32, 1, &n, v), TC_BOOL), TC_BOOL, 1, &n, eb, 0, 0);
    }
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Pointwise binary                                                          */
/* ------------------------------------------------------------------------ */

/* binops[]: every op of TC__BINARY_API, with its reference (ref_pointwise.h) */
static int binop_index(const char *name) {
    int i;
    for (i = 0; i < N_BINOPS; i++)
        if (strcmp(binops[i].name, name) == 0) return i;
    return 0;
}

static double *binop_vals(int kind, int operand, int64_t n) {
    double *v = dalloc(n);
    int64_t i;
    for (i = 0; i < n; i++) {
        if (kind == K_CMP) v[i] = rnd_int(0, 2) ? (double)rnd_int(-2, 2) : quant(TC_F32, rnd_unif(-2, 2));
        else if (kind == K_POW) v[i] = operand == 0 ? quant(TC_F32, rnd_unif(0.1, 3)) : quant(TC_F32, rnd_unif(-3, 3));
        else if (kind == K_DIV && operand == 1) {
            double x = rnd_unif(0.25, 5);
            v[i] = quant(TC_F32, rnd_int(0, 1) ? x : -x);
        } else v[i] = quant(TC_F32, rnd_unif(-5, 5));
    }
    return v;
}

TC_TEST(test_binary_broadcast) {
    tc_ctx *ctx = mkctx(1);
    int o, iter;
    for (o = 0; o < N_BINOPS; o++) {
        for (iter = 0; iter < 60; iter++) {
            int ond, na, nb, rnd_, ha, hb;
            int64_t osh[TC_MAX_DIMS], sa[TC_MAX_DIMS], sb[TC_MAX_DIMS], rsh[TC_MAX_DIMS], n, f;
            double *va, *vb, *e;
            tc_dtype dt = iter % 6 == 5 ? TC_F16 : iter % 6 == 4 ? TC_BF16 : TC_F32;
            tc_dtype odt = binops[o].kind == K_CMP ? TC_BOOL : dt;
            tc_tensor *a, *b;
            rnd_shape(&ond, osh, 4);
            bcast_operand_shape(ond, osh, &na, sa);
            bcast_operand_shape(ond, osh, &nb, sb);
            if (!bcast_shape(na, sa, nb, sb, &rnd_, rsh)) continue;
            va = binop_vals(binops[o].kind, 0, numel_of(na, sa));
            vb = binop_vals(binops[o].kind, 1, numel_of(nb, sb));
            for (f = 0; f < numel_of(na, sa); f++) va[f] = quant(dt, va[f]);
            for (f = 0; f < numel_of(nb, sb); f++) vb[f] = quant(dt, vb[f]);
            n = numel_of(rnd_, rsh);
            e = dalloc(n);
            for (f = 0; f < n; f++)
                e[f] = quant(odt, binops[o].ref(va[bcast_idx(rnd_, rsh, f, na, sa)], vb[bcast_idx(rnd_, rsh, f, nb, sb)]));
            tc_scope_begin(ctx);
            a = mk_operand(ctx, dt, na, sa, va, rnd_, rsh, &ha);
            b = mk_operand(ctx, dt, nb, sb, vb, rnd_, rsh, &hb);
            {
                char b1[64], b2[64];
                shape_str(b1, sizeof b1, na, sa);
                shape_str(b2, sizeof b2, nb, sb);
                snprintf(g_case, sizeof g_case, "%s %s %s%s x %s%s", binops[o].name, tc_dtype_name(dt), b1, ha ? "(expanded)" : "",
                         b2, hb ? "(expanded)" : "");
            }
            check_t(binops[o].fn(ctx, a, b, TC_HERE_), odt, rnd_, rsh, e, tol_a(odt), tol_r(odt));
            /* scalar form */
            {
                double s = vb[0 < numel_of(nb, sb) ? 0 : 0];
                int64_t an = numel_of(na, sa);
                double *es = dalloc(an);
                if (numel_of(nb, sb) == 0) s = binops[o].kind == K_DIV ? 0.75 : 1.5;
                for (f = 0; f < an; f++) es[f] = quant(odt, binops[o].ref(va[f], s));
                snprintf(g_case, sizeof g_case, "%s_scalar(%g) %s nd %d", binops[o].name, s, tc_dtype_name(dt), na);
                check_t(binops[o].sfn(ctx, mk_layout(ctx, dt, na, sa, va, rnd_int(0, 3)), s, TC_HERE_), odt, na,
                        sa, es, tol_a(odt), tol_r(odt));
                free(es);
            }
            tc_scope_end(ctx);
            free(va);
            free(vb);
            free(e);
        }
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_binary_special_values) {
    static const double sv[] = {0.0, -0.0, 1.0, -2.0, 0.5, 3.0, INFINITY, -INFINITY, NAN};
    int ns = (int)(sizeof sv / sizeof sv[0]), o, i, j;
    int64_t n = ns * ns, sh[2];
    double va[81], vb[81], e[81];
    tc_ctx *ctx = mkctx(1);
    sh[0] = ns;
    sh[1] = ns;
    for (i = 0; i < ns; i++)
        for (j = 0; j < ns; j++) {
            va[i * ns + j] = sv[i];
            vb[i * ns + j] = sv[j];
        }
    for (o = 0; o < N_BINOPS; o++) {
        tc_dtype odt = binops[o].kind == K_CMP ? TC_BOOL : TC_F32;
        for (i = 0; i < n; i++) e[i] = quant(odt, binops[o].ref(va[i], vb[i]));
        snprintf(g_case, sizeof g_case, "%s on all pairs of 0, -0, 1, -2, 0.5, 3, +-inf, NaN", binops[o].name);
        check_t(binops[o].fn(ctx, mk(ctx, TC_F32, 2, sh, va), mk(ctx, TC_F32, 2, sh, vb), TC_HERE_), odt, 2, sh, e,
                1e-6, 1e-6);
    }
    tc_ctx_destroy(ctx);
}

typedef struct promo_case {
    tc_dtype a;
    int a0d;
    tc_dtype b;
    int b0d;
    const char *op;
    tc_dtype out;
} promo_case;

static double *promo_vals(tc_dtype dt, int64_t n, int nonzero) {
    double *v = dalloc(n);
    int64_t i;
    for (i = 0; i < n; i++) {
        if (dt == TC_BOOL) v[i] = nonzero ? 1.0 : (double)rnd_int(0, 1);
        else if (dt == TC_I32) {
            v[i] = (double)rnd_int(-4, 4);
            if (nonzero && v[i] == 0) v[i] = 3;
        } else {
            v[i] = quant(dt, rnd_unif(-4, 4));
            if (nonzero && fabs(v[i]) < 0.25) v[i] = quant(dt, 0.75);
        }
    }
    return v;
}

TC_TEST(test_type_promotion) {
    static const promo_case cs[] = {
        {TC_I32, 0, TC_I32, 0, "add", TC_I32}, {TC_I32, 0, TC_I32, 0, "sub", TC_I32},
        {TC_I32, 0, TC_I32, 0, "mul", TC_I32}, {TC_I32, 0, TC_I32, 0, "maximum", TC_I32},
        {TC_I32, 0, TC_I32, 0, "minimum", TC_I32}, {TC_I32, 0, TC_I32, 0, "div", TC_F32},
        {TC_I32, 0, TC_F32, 0, "add", TC_F32}, {TC_F32, 0, TC_I32, 0, "mul", TC_F32},
        {TC_F16, 0, TC_F16, 0, "add", TC_F16}, {TC_F16, 0, TC_F16, 0, "div", TC_F16},
        {TC_BF16, 0, TC_BF16, 0, "mul", TC_BF16}, {TC_F16, 0, TC_BF16, 0, "add", TC_F32},
        {TC_F16, 0, TC_F32, 0, "sub", TC_F32}, {TC_I32, 0, TC_F16, 0, "add", TC_F16},
        {TC_BOOL, 0, TC_I32, 0, "add", TC_I32}, {TC_BOOL, 0, TC_BOOL, 0, "add", TC_I32},
        {TC_BOOL, 0, TC_BOOL, 0, "mul", TC_I32}, {TC_BOOL, 0, TC_F32, 0, "mul", TC_F32},
        {TC_BOOL, 0, TC_BOOL, 0, "div", TC_F32}, {TC_I32, 0, TC_I32, 0, "eq", TC_BOOL},
        {TC_BOOL, 0, TC_BOOL, 0, "eq", TC_BOOL}, {TC_BOOL, 0, TC_BOOL, 0, "ne", TC_BOOL},
        {TC_I32, 0, TC_F32, 0, "lt", TC_BOOL}, {TC_F16, 0, TC_BF16, 0, "ge", TC_BOOL},
        {TC_I32, 0, TC_BOOL, 0, "gt", TC_BOOL}, {TC_F16, 0, TC_F16, 0, "maximum", TC_F16},
        {TC_I32, 0, TC_I32, 0, "pow", TC_I32}, {TC_I32, 0, TC_F32, 0, "pow", TC_F32},
        /* a 0-d tensor only promotes across categories */
        {TC_F16, 0, TC_F32, 1, "add", TC_F16}, {TC_BF16, 0, TC_F16, 1, "add", TC_BF16},
        {TC_I32, 0, TC_F32, 1, "add", TC_F32}, {TC_F32, 0, TC_I32, 1, "mul", TC_F32},
        {TC_I32, 0, TC_BOOL, 1, "add", TC_I32}, {TC_BOOL, 0, TC_I32, 1, "add", TC_I32},
        {TC_F16, 0, TC_I32, 1, "sub", TC_F16}, {TC_F32, 1, TC_F16, 0, "add", TC_F16},
        {TC_I32, 1, TC_F32, 1, "add", TC_F32}, {TC_F16, 1, TC_F32, 1, "add", TC_F32},
        {TC_F16, 1, TC_BF16, 1, "mul", TC_F32}, {TC_F16, 1, TC_F32, 0, "add", TC_F32},
        {TC_BOOL, 0, TC_F16, 1, "add", TC_F16},
    };
    tc_ctx *ctx = mkctx(1);
    int c;
    int64_t f;
    for (c = 0; c < (int)(sizeof cs / sizeof cs[0]); c++) {
        int o = binop_index(cs[c].op), na = cs[c].a0d ? 0 : 2, nb = cs[c].b0d ? 0 : 1, ond = 0;
        int64_t sa[2] = {2, 3}, sb[1] = {3}, osh[2];
        double *va, *vb, *e;
        int is_pow = binops[o].kind == K_POW;
        bcast_shape(na, sa, nb, sb, &ond, osh);
        va = promo_vals(cs[c].a, numel_of(na, sa), 0);
        vb = promo_vals(cs[c].b, numel_of(nb, sb), binops[o].kind == K_DIV);
        if (is_pow) { /* small non-negative integer exponents, so i32 ** i32 is exact */
            for (f = 0; f < numel_of(nb, sb); f++) vb[f] = (double)rnd_int(0, 3);
        }
        e = dalloc(numel_of(ond, osh));
        for (f = 0; f < numel_of(ond, osh); f++) {
            double x = va[bcast_idx(ond, osh, f, na, sa)], y = vb[bcast_idx(ond, osh, f, nb, sb)];
            e[f] = quant(cs[c].out, (double)(float)binops[o].ref(x, y));
        }
        snprintf(g_case, sizeof g_case, "promotion %s%s %s %s%s -> %s", tc_dtype_name(cs[c].a), cs[c].a0d ? "[]" : "[2,3]",
                 cs[c].op, tc_dtype_name(cs[c].b), cs[c].b0d ? "[]" : "[3]", tc_dtype_name(cs[c].out));
        tc_scope_begin(ctx);
        check_t(binops[o].fn(ctx, mk(ctx, cs[c].a, na, sa, va), mk_layout(ctx, cs[c].b, nb, sb, vb, 2), TC_HERE_),
                cs[c].out, ond, osh, e, tol_a(cs[c].out), tol_r(cs[c].out));
        tc_scope_end(ctx);
        free(va);
        free(vb);
        free(e);
    }
    {   /* true division of integers, incl. by zero (PyTorch: inf / nan) */
        int64_t s4 = 4;
        double a[4] = {7, -7, 1, 0}, b[4] = {2, 2, 0, 0}, e[4] = {3.5, -3.5, INFINITY, NAN};
        strcpy(g_case, "i32 / i32 is true division");
        check_t(tc_div(ctx, mk(ctx, TC_I32, 1, &s4, a), mk(ctx, TC_I32, 1, &s4, b)), TC_F32, 1, &s4, e, 0, 0);
    }
    {   /* scalar forms act like a Python float */
        static const struct { tc_dtype a; const char *op; double s; tc_dtype out; } ss[] = {
            {TC_I32, "add", 2.0, TC_F32}, {TC_I32, "mul", 0.5, TC_F32}, {TC_I32, "div", 2.0, TC_F32},
            {TC_F16, "add", 2.5, TC_F16}, {TC_BF16, "mul", 3.0, TC_BF16}, {TC_BOOL, "add", 1.0, TC_F32},
            {TC_BOOL, "mul", 2.5, TC_F32}, {TC_I32, "lt", 1.5, TC_BOOL}, {TC_I32, "eq", 2.0, TC_BOOL},
            {TC_F16, "ge", 0.5, TC_BOOL}, {TC_I32, "maximum", 0.5, TC_F32}, {TC_I32, "pow", 2.0, TC_F32},
            {TC_F32, "pow", 0.5, TC_F32},
        };
        int64_t sh[2] = {3, 4};
        for (c = 0; c < (int)(sizeof ss / sizeof ss[0]); c++) {
            int o = binop_index(ss[c].op);
            double *va = promo_vals(ss[c].a, 12, 0), e[12];
            if (binops[o].kind == K_POW)
                for (f = 0; f < 12; f++) va[f] = fabs(va[f]);
            for (f = 0; f < 12; f++) e[f] = quant(ss[c].out, (double)(float)binops[o].ref(va[f], ss[c].s));
            snprintf(g_case, sizeof g_case, "%s_scalar(%s, %g) -> %s", ss[c].op, tc_dtype_name(ss[c].a), ss[c].s,
                     tc_dtype_name(ss[c].out));
            check_t(binops[o].sfn(ctx, mk_layout(ctx, ss[c].a, 2, sh, va, 1), ss[c].s, TC_HERE_), ss[c].out, 2, sh, e,
                    tol_a(ss[c].out), tol_r(ss[c].out));
            free(va);
        }
        {   /* i32 tensor + 0-d f32 tensor from tc_scalar -> f32 */
            double va[12], e[12];
            for (f = 0; f < 12; f++) { va[f] = (double)(f - 6); e[f] = va[f] + 0.5; }
            strcpy(g_case, "i32[3,4] + tc_scalar(0.5)");
            check_t(tc_add(ctx, mk(ctx, TC_I32, 2, sh, va), tc_scalar(ctx, 0.5)), TC_F32, 2, sh, e, 0, 0);
        }
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_where) {
    tc_ctx *ctx = mkctx(1);
    int iter;
    static const tc_dtype pa[4] = {TC_F32, TC_I32, TC_F16, TC_I32}, pb[4] = {TC_F32, TC_F32, TC_F16, TC_I32};
    static const tc_dtype po[4] = {TC_F32, TC_F32, TC_F16, TC_I32};
    for (iter = 0; iter < 60; iter++) {
        int ond, nc, na, nb, n1, n2, k = iter % 4, hc, ha, hb;
        int64_t osh[TC_MAX_DIMS], sc[TC_MAX_DIMS], sa[TC_MAX_DIMS], sb[TC_MAX_DIMS], t1[TC_MAX_DIMS], rsh[TC_MAX_DIMS], n, f;
        double *vc, *va, *vb, *e;
        rnd_shape(&ond, osh, 4);
        bcast_operand_shape(ond, osh, &nc, sc);
        bcast_operand_shape(ond, osh, &na, sa);
        bcast_operand_shape(ond, osh, &nb, sb);
        if (!bcast_shape(nc, sc, na, sa, &n1, t1) || !bcast_shape(n1, t1, nb, sb, &n2, rsh)) continue;
        vc = rnd_vals(TC_BOOL, numel_of(nc, sc), 0, 1);
        va = rnd_vals(pa[k], numel_of(na, sa), -9, 9);
        vb = rnd_vals(pb[k], numel_of(nb, sb), -9, 9);
        n = numel_of(n2, rsh);
        e = dalloc(n);
        for (f = 0; f < n; f++)
            e[f] = vc[bcast_idx(n2, rsh, f, nc, sc)] != 0 ? va[bcast_idx(n2, rsh, f, na, sa)] : vb[bcast_idx(n2, rsh, f, nb, sb)];
        tc_scope_begin(ctx);
        snprintf(g_case, sizeof g_case, "where iter %d (%s, %s)", iter, tc_dtype_name(pa[k]), tc_dtype_name(pb[k]));
        check_t(tc_where(ctx, mk_operand(ctx, TC_BOOL, nc, sc, vc, n2, rsh, &hc), mk_operand(ctx, pa[k], na, sa, va, n2, rsh, &ha),
                         mk_operand(ctx, pb[k], nb, sb, vb, n2, rsh, &hb)),
                po[k], n2, rsh, e, 0, 0);
        tc_scope_end(ctx);
        free(vc);
        free(va);
        free(vb);
        free(e);
    }
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Reductions                                                                */
/* ------------------------------------------------------------------------ */

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_ARGMAX, R_VAR0, R_VAR1, R_COUNT_ };
static const char *const red_names[R_COUNT_] = {"sum", "mean", "max", "min", "argmax", "var(c=0)", "var(c=1)"};

static tc_tensor *call_red(tc_ctx *ctx, int op, tc_tensor *x, int na, const int *axes, int keep) {
    switch (op) {
    case R_SUM: return tc_sum(ctx, x, na, axes, keep);
    case R_MEAN: return tc_mean(ctx, x, na, axes, keep);
    case R_MAX: return tc_max(ctx, x, na, axes, keep);
    case R_MIN: return tc_min(ctx, x, na, axes, keep);
    case R_ARGMAX: return tc_argmax(ctx, x, na, axes, keep);
    case R_VAR0: return tc_var(ctx, x, na, axes, 0, keep);
    default: return tc_var(ctx, x, na, axes, 1, keep);
    }
}

/* reference reduction over the axes in `mask`; returns output numel and fills
 * (ond, osh) and out[]; *rcount = number of elements reduced per output */
static int64_t ref_reduce(int op, int nd, const int64_t *sh, const double *v, unsigned mask, int keep,
                          int *ond, int64_t *osh, double **outp, int64_t *rcount) {
    int64_t on = 1, n = numel_of(nd, sh), f, rc = 1;
    int i, k = 0;
    double *out, *acc, *cnt, *best;
    for (i = 0; i < nd; i++) {
        if (mask & (1u << i)) {
            rc *= sh[i];
            if (keep) osh[k++] = 1;
        } else osh[k++] = sh[i];
    }
    *ond = k;
    on = numel_of(k, osh);
    out = dalloc(on);
    acc = dalloc(on);
    cnt = dalloc(on);
    best = dalloc(on);
    for (f = 0; f < n; f++) {
        int64_t r = f, idx[TC_MAX_DIMS], o = 0, rpos = 0;
        for (i = nd - 1; i >= 0; i--) { idx[i] = r % sh[i]; r /= sh[i]; }
        for (i = 0; i < nd; i++) {
            if (mask & (1u << i)) rpos = rpos * sh[i] + idx[i];
            else o = o * sh[i] + idx[i];
        }
        /* with keepdim the reduced dims are 1, so the row-major index is the same */
        if (cnt[o] == 0) {
            acc[o] = 0;
            best[o] = v[f];
            out[o] = op == R_ARGMAX ? (double)rpos : v[f];
        }
        acc[o] += v[f];
        if (op == R_MAX || op == R_ARGMAX) {
            if (!is_nan(best[o]) && (is_nan(v[f]) || v[f] > best[o])) {
                best[o] = v[f];
                out[o] = op == R_ARGMAX ? (double)rpos : v[f];
            }
        } else if (op == R_MIN) {
            if (!is_nan(best[o]) && (is_nan(v[f]) || v[f] < best[o])) { best[o] = v[f]; out[o] = v[f]; }
        }
        cnt[o] += 1;
    }
    for (f = 0; f < on; f++) {
        if (op == R_SUM) out[f] = acc[f];
        else if (op == R_MEAN) out[f] = rc ? acc[f] / (double)rc : NAN;
        else if (op == R_VAR0 || op == R_VAR1) out[f] = 0;
    }
    if (op == R_VAR0 || op == R_VAR1) {
        for (f = 0; f < n; f++) {
            int64_t r = f, idx[TC_MAX_DIMS], o = 0;
            double d;
            for (i = nd - 1; i >= 0; i--) { idx[i] = r % sh[i]; r /= sh[i]; }
            for (i = 0; i < nd; i++)
                if (!(mask & (1u << i))) o = o * sh[i] + idx[i];
            d = v[f] - acc[o] / (double)rc;
            out[o] += d * d;
        }
        for (f = 0; f < on; f++) {
            double den = (double)rc - (op == R_VAR1 ? 1.0 : 0.0);
            out[f] = den > 0 ? out[f] / den : NAN;
        }
    }
    free(acc);
    free(cnt);
    free(best);
    *outp = out;
    *rcount = rc;
    return on;
}

TC_TEST(test_reductions) {
    tc_ctx *ctx = mkctx(1);
    int op, iter, i;
    for (op = 0; op < R_COUNT_; op++) {
        for (iter = 0; iter < 80; iter++) {
            int nd, keep = rnd_int(0, 1), na = 0, axes[TC_MAX_DIMS], ond, layout = rnd_int(0, 3), style = rnd_int(0, 3);
            unsigned mask = 0;
            int64_t sh[TC_MAX_DIMS] = {0}, osh[TC_MAX_DIMS], n, on, rc;
            double *v, *e;
            tc_tensor *r;
            tc_dtype dt = iter % 5 == 4 ? TC_I32 : TC_F32;
            tc_dtype odt = op == R_ARGMAX ? TC_I32 : (op == R_SUM || op == R_MAX || op == R_MIN) ? dt : TC_F32;
            rnd_shape(&nd, sh, 4);
            n = numel_of(nd, sh);
            v = rnd_vals(TC_F32, n, -1, 1);
            if (iter % 2 || dt == TC_I32)
                for (i = 0; i < n; i++) v[i] = (double)rnd_int(-2, 2);
            if (style == 0 || nd == 0) { /* all axes via naxes 0 / NULL */
                mask = (1u << nd) - 1u;
                na = 0;
                if (nd == 0 && rnd_int(0, 1)) { axes[0] = rnd_int(-1, 0); na = 1; } /* 0-d: dim 0 / -1 */
            } else {
                for (i = 0; i < nd; i++)
                    if (rnd_int(0, 1)) mask |= 1u << i;
                if (style == 3 || mask == 0) mask = (1u << nd) - 1u; /* naxes 0 means all */
                for (i = 0; i < nd; i++)
                    if (mask & (1u << i)) axes[na++] = rnd_int(0, 1) ? i : i - nd;
                for (i = na - 1; i > 0; i--) { /* any order */
                    int j = rnd_int(0, i), t = axes[i];
                    axes[i] = axes[j];
                    axes[j] = t;
                }
            }
            on = ref_reduce(op, nd, sh, v, mask, keep, &ond, osh, &e, &rc);
            tc_scope_begin(ctx);
            {
                char b1[64];
                shape_str(b1, sizeof b1, nd, sh);
                snprintf(g_case, sizeof g_case, "%s %s %s mask 0x%x naxes %d keepdim %d layout %d", red_names[op], tc_dtype_name(dt), b1,
                         mask, na, keep, layout);
            }
            r = call_red(ctx, op, mk_layout(ctx, dt, nd, sh, v, layout),
                         na, (na == 0 && rnd_int(0, 1)) ? NULL : axes, keep);
            if ((op == R_MAX || op == R_MIN || op == R_ARGMAX) && rc == 0) {
                if (on > 0) TC_CHECKF(tc_status(r) != TC_OK, "%s: empty reduction must be an error", g_case);
            } else {
                check_t(r, odt, ond, osh, e, 1e-5 * (1.0 + sqrt((double)rc)), 1e-4);
            }
            tc_scope_end(ctx);
            free(v);
            free(e);
        }
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_reduction_dtypes_and_nan) {
    tc_ctx *ctx = mkctx(1);
    int64_t sh[2] = {3, 4}, s3 = 3, s4 = 4;
    int ax1 = 1, ax0 = 0;
    double vi[12] = {1, -2, 3, 4, 5, 6, -7, 8, 9, 10, 11, -12}, vb[12] = {1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1};
    double e[4];
    strcpy(g_case, "sum i32 -> i32");
    e[0] = 6; e[1] = 12; e[2] = 18;
    check_t(tc_sum(ctx, mk_layout(ctx, TC_I32, 2, sh, vi, 1), 1, &ax1, 0), TC_I32, 1, &s3, e, 0, 0);
    strcpy(g_case, "sum bool -> i32");
    e[0] = 3; e[1] = 0; e[2] = 4;
    check_t(tc_sum(ctx, mk(ctx, TC_BOOL, 2, sh, vb), 1, &ax1, 0), TC_I32, 1, &s3, e, 0, 0);
    strcpy(g_case, "max/min i32 keep i32");
    e[0] = 9; e[1] = 10; e[2] = 11; e[3] = 8;
    check_t(tc_max(ctx, mk(ctx, TC_I32, 2, sh, vi), 1, &ax0, 0), TC_I32, 1, &s4, e, 0, 0);
    e[0] = 1; e[1] = -2; e[2] = -7; e[3] = -12;
    check_t(tc_min(ctx, mk(ctx, TC_I32, 2, sh, vi), 1, &ax0, 0), TC_I32, 1, &s4, e, 0, 0);
    strcpy(g_case, "mean i32 -> f32");
    e[0] = 1.5; e[1] = 3; e[2] = 4.5;
    check_t(tc_mean(ctx, mk(ctx, TC_I32, 2, sh, vi), 1, &ax1, 0), TC_F32, 1, &s3, e, 1e-6, 1e-6);
    strcpy(g_case, "argmax i32 (ties: first)");
    {
        double vt[12] = {1, 5, 5, 2, 0, 0, 0, 0, -1, 3, 3, -1};
        e[0] = 1; e[1] = 0; e[2] = 1;
        check_t(tc_argmax(ctx, mk(ctx, TC_I32, 2, sh, vt), 1, &ax1, 0), TC_I32, 1, &s3, e, 0, 0);
        e[0] = 1;
        check_t(tc_argmax(ctx, mk(ctx, TC_I32, 2, sh, vt), 0, NULL, 0), TC_I32, 0, NULL, e, 0, 0);
    }
    strcpy(g_case, "sum/max f16 keep f16");
    {
        double vh[12];
        int i;
        for (i = 0; i < 12; i++) vh[i] = quant(TC_F16, vi[i] * 0.3);
        e[0] = quant(TC_F16, vh[0] + vh[1] + vh[2] + vh[3]);
        e[1] = quant(TC_F16, vh[4] + vh[5] + vh[6] + vh[7]);
        e[2] = quant(TC_F16, vh[8] + vh[9] + vh[10] + vh[11]);
        check_t(tc_sum(ctx, mk(ctx, TC_F16, 2, sh, vh), 1, &ax1, 0), TC_F16, 1, &s3, e, 1e-3, 2e-3);
        e[0] = vh[3]; e[1] = vh[7]; e[2] = vh[10];
        check_t(tc_max(ctx, mk(ctx, TC_F16, 2, sh, vh), 1, &ax1, 0), TC_F16, 1, &s3, e, 0, 0);
    }
    strcpy(g_case, "NaN propagation: sum/mean/max/min/argmax/var");
    {
        double vn[12] = {1, NAN, 3, 4, 5, 6, 7, 8, 9, 10, NAN, NAN};
        double en[3] = {NAN, 26, NAN}, em[3] = {NAN, 6.5, NAN}, ea[3] = {1, 3, 2}, emax[3] = {NAN, 8, NAN}, emin[3] = {NAN, 5, NAN};
        check_t(tc_sum(ctx, mk(ctx, TC_F32, 2, sh, vn), 1, &ax1, 0), TC_F32, 1, &s3, en, 1e-6, 1e-6);
        check_t(tc_mean(ctx, mk(ctx, TC_F32, 2, sh, vn), 1, &ax1, 0), TC_F32, 1, &s3, em, 1e-6, 1e-6);
        check_t(tc_max(ctx, mk(ctx, TC_F32, 2, sh, vn), 1, &ax1, 0), TC_F32, 1, &s3, emax, 0, 0);
        check_t(tc_min(ctx, mk(ctx, TC_F32, 2, sh, vn), 1, &ax1, 0), TC_F32, 1, &s3, emin, 0, 0);
        ea[1] = 3; /* row 1 max is the last */
        ea[0] = 1; /* NaN wins */
        ea[2] = 2; /* first NaN */
        check_t(tc_argmax(ctx, mk(ctx, TC_F32, 2, sh, vn), 1, &ax1, 0), TC_I32, 1, &s3, ea, 0, 0);
        en[1] = 5.0 / 3.0;
        check_t(tc_var(ctx, mk(ctx, TC_F32, 2, sh, vn), 1, &ax1, 1, 0), TC_F32, 1, &s3, en, 1e-6, 1e-5);
    }
    strcpy(g_case, "empty reductions: sum 0, mean NaN, var NaN");
    {
        int64_t s30[2] = {3, 0};
        double z[3] = {0, 0, 0}, nn[3] = {NAN, NAN, NAN};
        tc_tensor *x = tc_zeros(ctx, TC_F32, 2, s30);
        check_t(tc_sum(ctx, x, 1, &ax1, 0), TC_F32, 1, &s3, z, 0, 0);
        check_t(tc_mean(ctx, x, 1, &ax1, 0), TC_F32, 1, &s3, nn, 0, 0);
        check_t(tc_var(ctx, x, 1, &ax1, 0, 0), TC_F32, 1, &s3, nn, 0, 0);
        check_t(tc_sum(ctx, x, 0, NULL, 0), TC_F32, 0, NULL, z, 0, 0);
        check_t(tc_sum(ctx, tc_zeros(ctx, TC_I32, 2, s30), 0, NULL, 0), TC_I32, 0, NULL, z, 0, 0);
        TC_CHECK(tc_status(tc_max(ctx, x, 1, &ax1, 0)) != TC_OK);
        TC_CHECK(tc_status(tc_min(ctx, x, 0, NULL, 0)) != TC_OK);
        TC_CHECK(tc_status(tc_argmax(ctx, x, 0, NULL, 1)) != TC_OK);
        tc_ctx_clear_error(ctx);
    }
    strcpy(g_case, "var of one element: c=1 NaN, c=0 zero");
    {
        double one = 2.5, nn = NAN, zero = 0;
        int64_t s1 = 1;
        check_t(tc_var(ctx, mk(ctx, TC_F32, 1, &s1, &one), 0, NULL, 1, 0), TC_F32, 0, NULL, &nn, 0, 0);
        check_t(tc_var(ctx, mk(ctx, TC_F32, 1, &s1, &one), 0, NULL, 0, 0), TC_F32, 0, NULL, &zero, 0, 0);
    }
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Softmax and norms                                                         */
/* ------------------------------------------------------------------------ */

static void ref_softmax(int nd, const int64_t *sh, int dim, const double *v, double *out, int logsm) {
    int64_t n = numel_of(nd, sh), len = nd ? sh[dim] : 1, inner = 1, rows, r, k;
    int i;
    for (i = dim + 1; i < nd; i++) inner *= sh[i];
    rows = len ? n / len : 0;
    for (r = 0; r < rows; r++) { /* one row per (outer, inner) pair */
        int64_t base = (r / inner) * len * inner + r % inner;
        double mx = -INFINITY, s = 0;
        for (k = 0; k < len; k++) mx = fmax(mx, v[base + k * inner]);
        for (k = 0; k < len; k++) s += exp(v[base + k * inner] - mx);
        for (k = 0; k < len; k++) {
            double x = v[base + k * inner];
            out[base + k * inner] = mx == -INFINITY ? NAN : logsm ? x - mx - log(s) : exp(x - mx) / s;
        }
    }
}

TC_TEST(test_softmax) {
    tc_ctx *ctx = mkctx(1);
    int iter, lg;
    int64_t i;
    for (iter = 0; iter < 160; iter++) {
        int nd, dim, arg, layout = rnd_int(0, 4);
        int64_t sh[TC_MAX_DIMS] = {0}, n;
        double *v, *e;
        tc_tensor *x;
        rnd_shape(&nd, sh, 4);
        dim = nd ? rnd_int(0, nd - 1) : 0;
        arg = rnd_int(0, 1) ? dim : dim - (nd ? nd : 1);
        n = numel_of(nd, sh);
        v = rnd_vals(TC_F32, n, -8, 8);
        if (iter % 3 == 0)
            for (i = 0; i < n; i++)
                if (rnd_int(0, 5) == 0) v[i] = -INFINITY;
        if (iter % 7 == 0)
            for (i = 0; i < n; i++) v[i] = quant(TC_F32, v[i] + 1000.0); /* stability */
        e = dalloc(n);
        for (lg = 0; lg < 2; lg++) {
            tc_scope_begin(ctx);
            x = mk_any(ctx, TC_F32, nd, sh, v, layout);
            ref_softmax(nd, sh, dim, v, e, lg);
            snprintf(g_case, sizeof g_case, "%s nd %d dim %d layout %d iter %d", lg ? "log_softmax" : "softmax", nd, arg, layout, iter);
            check_t((lg ? tc_log_softmax_at : tc_softmax_at)(ctx, x, arg, TC_HERE_),
                    /* inputs near 1000 carry f32 ulps of 6e-5: x - logsumexp may lose that much */
                    TC_F32, nd, sh, e, (lg && iter % 7 == 0) ? 1.5e-4 : 1e-5, 1e-4);
            tc_scope_end(ctx);
        }
        free(v);
        free(e);
    }
    {   /* f16 in -> f16 out */
        int64_t sh[2] = {3, 5};
        double *v = rnd_vals(TC_F16, 15, -3, 3), e[15];
        ref_softmax(2, sh, 1, v, e, 0);
        for (i = 0; i < 15; i++) e[i] = quant(TC_F16, e[i]);
        strcpy(g_case, "softmax f16");
        check_t(tc_softmax(ctx, mk(ctx, TC_F16, 2, sh, v), -1), TC_F16, 2, sh, e, 1e-3, 2e-3);
        free(v);
    }
    tc_ctx_destroy(ctx);
}

/* layer_norm (rms = 0) / rms_norm (rms = 1) over the last nnorm dims */
static void ref_norm(int nd, const int64_t *sh, int nnorm, const double *v, const double *w, const double *b,
                     double eps, int rms, double *out) {
    int64_t m = 1, rows, r, k;
    int i;
    for (i = nd - nnorm; i < nd; i++) m *= sh[i];
    rows = m ? numel_of(nd, sh) / m : 0;
    for (r = 0; r < rows; r++) {
        const double *x = v + r * m;
        double mean = 0, var = 0, inv;
        for (k = 0; k < m; k++) mean += x[k];
        mean /= (double)m;
        for (k = 0; k < m; k++) var += rms ? x[k] * x[k] : (x[k] - mean) * (x[k] - mean);
        var /= (double)m;
        inv = 1.0 / sqrt(var + eps);
        for (k = 0; k < m; k++) {
            double y = rms ? x[k] * inv : (x[k] - mean) * inv;
            if (w) y *= w[k];
            if (b) y += b[k];
            out[r * m + k] = y;
        }
    }
}

TC_TEST(test_layer_rms_norm) {
    tc_ctx *ctx = mkctx(1);
    int iter;
    for (iter = 0; iter < 160; iter++) {
        int nd, nnorm, hasw = rnd_int(0, 1), hasb = rnd_int(0, 1), rms = iter % 2, layout = rnd_int(0, 4);
        int64_t sh[TC_MAX_DIMS] = {0}, n, m;
        double *v, *w, *b, *e, eps = rnd_int(0, 3) == 0 ? 0.5 : rms ? (double)FLT_EPSILON : 1e-5;
        tc_tensor *tw, *tb, *r, *x;
        rnd_shape(&nd, sh, 4);
        if (nd == 0) { nd = 1; sh[0] = 6; }
        nnorm = rnd_int(1, nd);
        n = numel_of(nd, sh);
        m = numel_of(nnorm, sh + nd - nnorm);
        v = rnd_vals(TC_F32, n, -3, 3);
        w = rnd_vals(TC_F32, m, -2, 2);
        b = rnd_vals(TC_F32, m, -1, 1);
        e = dalloc(n);
        tc_scope_begin(ctx);
        x = mk_any(ctx, TC_F32, nd, sh, v, layout);
        ref_norm(nd, sh, nnorm, v, hasw ? w : NULL, (hasb && !rms) ? b : NULL, eps, rms, e);
        tw = hasw ? mk_layout(ctx, TC_F32, nnorm, sh + nd - nnorm, w, rnd_int(0, 3)) : NULL;
        tb = hasb ? mk_layout(ctx, TC_F32, nnorm, sh + nd - nnorm, b, rnd_int(0, 3)) : NULL;
        {
            char b1[64];
            shape_str(b1, sizeof b1, nd, sh);
            snprintf(g_case, sizeof g_case, "%s %s nnorm %d weight %d bias %d eps %g layout %d", rms ? "rms_norm" : "layer_norm", b1,
                     nnorm, hasw, rms ? 0 : hasb, eps, layout);
        }
        if (rms) r = tc_rms_norm(ctx, x, nnorm, tw, eps);
        else r = tc_layer_norm(ctx, x, nnorm, tw, tb, eps);
        /* an expanded input can make whole rows constant: then x - mean is
         * f32 rounding noise (|x| * 2^-23) amplified by 1/sqrt(eps) */
        check_t(r, TC_F32, nd, sh, e, 1e-4 + (layout == 4 && !rms ? 3.0 * 2.0 * 2.4e-7 / sqrt(eps) : 0.0), 1e-4);
        tc_scope_end(ctx);
        free(v);
        free(w);
        free(b);
        free(e);
    }
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Contractions                                                              */
/* ------------------------------------------------------------------------ */

/* torch.matmul reference; returns 0 when the shapes do not fit */
static int ref_matmul(int na, const int64_t *sa, const double *va, int nb, const int64_t *sb, const double *vb,
                      int *ond, int64_t *osh, double **outp, int64_t *kout) {
    int64_t a2[TC_MAX_DIMS + 1] = {0}, b2[TC_MAX_DIMS + 1] = {0}, bsh[TC_MAX_DIMS] = {0}, M, K, N, nbatch, bt, m, n, k;
    int ra, rb, bnd, i;
    double *out;
    if (na == 0 || nb == 0) return 0;
    if (na == 1) { a2[0] = 1; a2[1] = sa[0]; ra = 2; }
    else { for (i = 0; i < na; i++) a2[i] = sa[i]; ra = na; }
    if (nb == 1) { b2[0] = sb[0]; b2[1] = 1; rb = 2; }
    else { for (i = 0; i < nb; i++) b2[i] = sb[i]; rb = nb; }
    M = a2[ra - 2]; K = a2[ra - 1]; N = b2[rb - 1];
    if (b2[rb - 2] != K) return 0;
    if (!bcast_shape(ra - 2, a2, rb - 2, b2, &bnd, bsh)) return 0;
    nbatch = numel_of(bnd, bsh);
    out = dalloc(nbatch * M * N);
    for (bt = 0; bt < nbatch; bt++) {
        int64_t ia = bcast_idx(bnd, bsh, bt, ra - 2, a2), ib = bcast_idx(bnd, bsh, bt, rb - 2, b2);
        for (m = 0; m < M; m++)
            for (n = 0; n < N; n++) {
                double s = 0;
                for (k = 0; k < K; k++) s += va[(ia * M + m) * K + k] * vb[(ib * K + k) * N + n];
                out[(bt * M + m) * N + n] = s;
            }
    }
    *ond = 0;
    for (i = 0; i < bnd; i++) osh[(*ond)++] = bsh[i];
    if (na > 1) osh[(*ond)++] = M;
    if (nb > 1) osh[(*ond)++] = N;
    *outp = out;
    *kout = K;
    return 1;
}

static void run_matmul_case(tc_ctx *ctx, tc_dtype dt, int na, const int64_t *sa, int nb, const int64_t *sb, int la, int lb) {
    int ond;
    int64_t osh[TC_MAX_DIMS], K, n, i;
    double *va = rnd_vals(dt, numel_of(na, sa), -1, 1), *vb = rnd_vals(dt, numel_of(nb, sb), -1, 1), *e;
    char b1[64], b2[64];
    tc_tensor *ta, *tb;
    shape_str(b1, sizeof b1, na, sa);
    shape_str(b2, sizeof b2, nb, sb);
    snprintf(g_case, sizeof g_case, "matmul %s %s (layout %d) @ %s (layout %d)", tc_dtype_name(dt), b1, la, b2, lb);
    tc_scope_begin(ctx);
    ta = mk_any(ctx, dt, na, sa, va, la);
    tb = mk_any(ctx, dt, nb, sb, vb, lb);
    if (!ref_matmul(na, sa, va, nb, sb, vb, &ond, osh, &e, &K)) {
        TC_CHECKF(0, "%s: bad test case", g_case);
        free(va); free(vb);
        tc_scope_end(ctx);
        return;
    }
    n = numel_of(ond, osh);
    for (i = 0; i < n; i++) e[i] = quant(dt, e[i]);
    check_t(tc_matmul(ctx, ta, tb), dt, ond, osh, e,
            (dt == TC_F32 ? 1e-5 : 2e-3) * (1.0 + sqrt((double)K)), tol_r(dt));
    tc_scope_end(ctx);
    free(va);
    free(vb);
    free(e);
}

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
/* Convolution, pooling, batch norm                                          */
/* ------------------------------------------------------------------------ */

static int64_t conv_out(int64_t in, int k, int s, int p, int d) {
    int64_t num = in + 2 * p - (int64_t)d * (k - 1) - 1;
    return num < 0 ? 0 : num / s + 1;
}

static void ref_conv2d(int64_t N, int64_t Cin, int64_t H, int64_t W, const double *x, int64_t Cout, int kh, int kw,
                       const double *w, const double *b, int G, const int *st, const int *pd, const int *dl,
                       int64_t OH, int64_t OW, double *out) {
    int64_t n, co, oh, ow, ci, cpg = Cin / G, opg = Cout / G;
    int i, j;
    for (n = 0; n < N; n++)
        for (co = 0; co < Cout; co++)
            for (oh = 0; oh < OH; oh++)
                for (ow = 0; ow < OW; ow++) {
                    double s = b ? b[co] : 0;
                    int64_t g = co / opg;
                    for (ci = 0; ci < cpg; ci++)
                        for (i = 0; i < kh; i++)
                            for (j = 0; j < kw; j++) {
                                int64_t ih = oh * st[0] - pd[0] + (int64_t)i * dl[0], iw = ow * st[1] - pd[1] + (int64_t)j * dl[1];
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                s += x[((n * Cin + g * cpg + ci) * H + ih) * W + iw] * w[((co * cpg + ci) * kh + i) * kw + j];
                            }
                    out[((n * Cout + co) * OH + oh) * OW + ow] = s;
                }
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

static int64_t pool_out(int64_t in, int k, int s, int p, int d, int ceil_mode) {
    int64_t num = in + 2 * p - (int64_t)d * (k - 1) - 1, o;
    if (num < 0) return 0;
    o = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
    if (ceil_mode && (o - 1) * s >= in + p) o--;
    return o;
}

TC_TEST(test_pool2d) {
    tc_ctx *ctx = mkctx(1);
    int iter, done = 0;
    for (iter = 0; iter < 1500 && done < 300; iter++) {
        int isavg = iter % 2, k[2], s[2], p[2], d[2], i, ceil_mode = rnd_int(0, 1), excl = rnd_int(0, 1), chw;
        int64_t N = rnd_int(1, 2), C = rnd_int(1, 3), H = rnd_int(1, 9), W = rnd_int(1, 9), OH, OW, n, c, oh, ow, sx[4], so[4];
        double *vx, *e;
        tc_pool2d_opts o;
        memset(&o, 0, sizeof o);
        for (i = 0; i < 2; i++) {
            k[i] = rnd_int(1, iter % 5 == 4 ? 6 : 4);
            s[i] = rnd_int(0, 3); /* 0 = kernel */
            p[i] = rnd_int(0, k[i] / 2);
            d[i] = isavg ? 1 : rnd_int(1, 3);
            o.kernel[i] = k[i];
            o.stride[i] = s[i];
            o.padding[i] = p[i];
            o.dilation[i] = isavg ? 0 : (d[i] == 1 && rnd_int(0, 1)) ? 0 : d[i];
            if (s[i] == 0) s[i] = k[i];
        }
        o.ceil_mode = ceil_mode;
        o.exclude_pad = isavg ? excl : 0;
        OH = pool_out(H, k[0], s[0], p[0], d[0], ceil_mode);
        OW = pool_out(W, k[1], s[1], p[1], d[1], ceil_mode);
        if (OH <= 0 || OW <= 0) continue;
        done++;
        chw = N == 1 && rnd_int(0, 1);
        sx[0] = N; sx[1] = C; sx[2] = H; sx[3] = W;
        so[0] = N; so[1] = C; so[2] = OH; so[3] = OW;
        vx = rnd_vals(TC_F32, N * C * H * W, -4, 4);
        e = dalloc(N * C * OH * OW);
        for (n = 0; n < N; n++)
            for (c = 0; c < C; c++)
                for (oh = 0; oh < OH; oh++)
                    for (ow = 0; ow < OW; ow++) {
                        const double *xp = vx + (n * C + c) * H * W;
                        double r;
                        int64_t hs = oh * s[0] - p[0], ws = ow * s[1] - p[1];
                        if (!isavg) {
                            int a, b;
                            r = -INFINITY;
                            for (a = 0; a < k[0]; a++)
                                for (b = 0; b < k[1]; b++) {
                                    int64_t ih = hs + (int64_t)a * d[0], iw = ws + (int64_t)b * d[1];
                                    if (ih >= 0 && ih < H && iw >= 0 && iw < W && xp[ih * W + iw] > r) r = xp[ih * W + iw];
                                }
                        } else {
                            int64_t he = hs + k[0] < H + p[0] ? hs + k[0] : H + p[0];
                            int64_t we = ws + k[1] < W + p[1] ? ws + k[1] : W + p[1];
                            int64_t pool = (he - hs) * (we - ws), ih, iw;
                            double sum = 0;
                            if (hs < 0) hs = 0;
                            if (ws < 0) ws = 0;
                            if (he > H) he = H;
                            if (we > W) we = W;
                            for (ih = hs; ih < he; ih++)
                                for (iw = ws; iw < we; iw++) sum += xp[ih * W + iw];
                            r = sum / (double)(excl ? (he - hs) * (we - ws) : pool);
                        }
                        e[((n * C + c) * OH + oh) * OW + ow] = r;
                    }
        tc_scope_begin(ctx);
        snprintf(g_case, sizeof g_case, "%s x[%lld,%lld,%lld,%lld] k %d,%d stride %d,%d pad %d,%d dil %d,%d ceil %d excl %d chw %d",
                 isavg ? "avg_pool2d" : "max_pool2d", (long long)N, (long long)C, (long long)H, (long long)W, k[0], k[1], o.stride[0],
                 o.stride[1], p[0], p[1], d[0], d[1], ceil_mode, o.exclude_pad, chw);
        {
            tc_tensor *x = mk_layout(ctx, TC_F32, chw ? 3 : 4, chw ? sx + 1 : sx, vx, rnd_int(0, 3));
            check_t(isavg ? tc_avg_pool2d(ctx, x, &o) : tc_max_pool2d(ctx, x, &o), TC_F32, chw ? 3 : 4, chw ? so + 1 : so, e, 1e-5,
                    1e-5);
        }
        tc_scope_end(ctx);
        free(vx);
        free(e);
    }
    TC_CHECK(done >= 300);
    {   /* NaN propagates through max_pool2d (PyTorch), -inf padding never wins */
        int64_t sx[4] = {1, 1, 2, 4}, so[4] = {1, 1, 1, 2};
        double v[8] = {1, 2, 3, 4, NAN, 0, -5, -6}, e[2] = {NAN, 4};
        tc_pool2d_opts o;
        memset(&o, 0, sizeof o);
        o.kernel[0] = o.kernel[1] = 2;
        strcpy(g_case, "max_pool2d with NaN");
        check_t(tc_max_pool2d(ctx, mk(ctx, TC_F32, 4, sx, v), &o), TC_F32, 4, so, e, 0, 0);
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_adaptive_avg_pool2d) {
    tc_ctx *ctx = mkctx(1);
    int iter;
    for (iter = 0; iter < 40; iter++) {
        int64_t N = rnd_int(1, 2), C = rnd_int(1, 3), H = rnd_int(1, 9), W = rnd_int(1, 9);
        int64_t OH = rnd_int(1, (int)H + 2), OW = rnd_int(1, (int)W + 2), n, c, oh, ow, sx[4], so[4];
        int chw = N == 1 && rnd_int(0, 1), global = iter % 8 == 0;
        double *vx, *e;
        if (global) OH = OW = 1;
        sx[0] = N; sx[1] = C; sx[2] = H; sx[3] = W;
        so[0] = N; so[1] = C; so[2] = OH; so[3] = OW;
        vx = rnd_vals(TC_F32, N * C * H * W, -4, 4);
        e = dalloc(N * C * OH * OW);
        for (n = 0; n < N; n++)
            for (c = 0; c < C; c++)
                for (oh = 0; oh < OH; oh++)
                    for (ow = 0; ow < OW; ow++) {
                        int64_t h0 = (oh * H) / OH, h1 = ((oh + 1) * H + OH - 1) / OH;
                        int64_t w0 = (ow * W) / OW, w1 = ((ow + 1) * W + OW - 1) / OW, ih, iw;
                        double s = 0;
                        for (ih = h0; ih < h1; ih++)
                            for (iw = w0; iw < w1; iw++) s += vx[((n * C + c) * H + ih) * W + iw];
                        e[((n * C + c) * OH + oh) * OW + ow] = s / (double)((h1 - h0) * (w1 - w0));
                    }
        tc_scope_begin(ctx);
        snprintf(g_case, sizeof g_case, "adaptive_avg_pool2d [%lld,%lld,%lld,%lld] -> %lld x %lld chw %d", (long long)N, (long long)C,
                 (long long)H, (long long)W, (long long)OH, (long long)OW, chw);
        {
            tc_tensor *x = mk_layout(ctx, TC_F32, chw ? 3 : 4, chw ? sx + 1 : sx, vx, rnd_int(0, 3));
            check_t(global ? tc_global_avg_pool2d(ctx, x) : tc_adaptive_avg_pool2d(ctx, x, OH, OW), TC_F32, chw ? 3 : 4,
                    chw ? so + 1 : so, e, 1e-5, 1e-5);
        }
        tc_scope_end(ctx);
        free(vx);
        free(e);
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_batch_norm) {
    tc_ctx *ctx = mkctx(1);
    int iter;
    for (iter = 0; iter < 30; iter++) {
        int nd = rnd_int(2, 4), hasw = rnd_int(0, 1), hasb = rnd_int(0, 1), i;
        int64_t sh[4], C, inner = 1, n, f;
        double *vx, *vm, *vv, *vw, *vb, *e, eps = iter % 3 ? 1e-5 : 0.1;
        for (i = 0; i < nd; i++) sh[i] = rnd_int(1, 4);
        if (iter % 9 == 0) sh[0] = 0;
        C = sh[1];
        for (i = 2; i < nd; i++) inner *= sh[i];
        n = numel_of(nd, sh);
        vx = rnd_vals(TC_F32, n, -3, 3);
        vm = rnd_vals(TC_F32, C, -1, 1);
        vv = rnd_vals(TC_F32, C, 0.1, 2);
        vw = rnd_vals(TC_F32, C, -2, 2);
        vb = rnd_vals(TC_F32, C, -1, 1);
        e = dalloc(n);
        for (f = 0; f < n; f++) {
            int64_t c = (f / inner) % C;
            double y = (vx[f] - vm[c]) / sqrt(vv[c] + eps);
            if (hasw) y *= vw[c];
            if (hasb) y += vb[c];
            e[f] = y;
        }
        tc_scope_begin(ctx);
        snprintf(g_case, sizeof g_case, "batch_norm nd %d C %lld weight %d bias %d eps %g", nd, (long long)C, hasw, hasb, eps);
        check_t(tc_batch_norm(ctx, mk_layout(ctx, TC_F32, nd, sh, vx, rnd_int(0, 3)), mk(ctx, TC_F32, 1, &C, vm),
                              mk(ctx, TC_F32, 1, &C, vv), hasw ? mk(ctx, TC_F32, 1, &C, vw) : NULL,
                              hasb ? mk_layout(ctx, TC_F32, 1, &C, vb, 2) : NULL, eps),
                TC_F32, nd, sh, e, 1e-5, 1e-4);
        tc_scope_end(ctx);
        free(vx); free(vm); free(vv); free(vw); free(vb); free(e);
    }
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Shape ops                                                                 */
/* ------------------------------------------------------------------------ */

/* values of x[..., start:start+len, ...] along dim (row-major in, row-major out) */
static double *ref_narrow(int nd, const int64_t *sh, const double *v, int dim, int64_t start, int64_t len) {
    int64_t osh[TC_MAX_DIMS], on, f, inner = 1;
    double *out;
    int i;
    for (i = 0; i < nd; i++) osh[i] = sh[i];
    osh[dim] = len;
    for (i = dim + 1; i < nd; i++) inner *= sh[i];
    on = numel_of(nd, osh);
    out = dalloc(on);
    for (f = 0; f < on; f++) {
        int64_t outer = f / (len * inner), j = (f / inner) % len, in = f % inner;
        out[f] = v[(outer * sh[dim] + start + j) * inner + in];
    }
    return out;
}

TC_TEST(test_concat) {
    tc_ctx *ctx = mkctx(1);
    int iter;
    for (iter = 0; iter < 100; iter++) {
        int nd = rnd_int(1, 4), n = rnd_int(1, 4), dim = rnd_int(0, nd - 1), arg = rnd_int(0, 1) ? dim : dim - nd, i, j;
        int64_t base[TC_MAX_DIMS], osh[TC_MAX_DIMS], sizes[4], total = 0, on, f, inner = 1;
        double *vs[4], *e;
        tc_tensor *xs[4];
        tc_dtype dt = iter % 6 == 5 ? TC_I32 : iter % 6 == 4 ? TC_F16 : TC_F32;
        for (i = 0; i < nd; i++) base[i] = rnd_size();
        for (j = 0; j < n; j++) {
            sizes[j] = rnd_int(0, 3);
            total += sizes[j];
        }
        for (i = 0; i < nd; i++) osh[i] = base[i];
        osh[dim] = total;
        for (i = dim + 1; i < nd; i++) inner *= base[i];
        on = numel_of(nd, osh);
        e = dalloc(on);
        tc_scope_begin(ctx);
        for (j = 0; j < n; j++) {
            int64_t sh[TC_MAX_DIMS];
            for (i = 0; i < nd; i++) sh[i] = base[i];
            sh[dim] = sizes[j];
            vs[j] = rnd_vals(dt, numel_of(nd, sh), -5, 5);
            xs[j] = mk_layout(ctx, dt, nd, sh, vs[j], rnd_int(0, 3));
        }
        for (f = 0; f < on; f++) {
            int64_t outer = f / (total * inner), k = (f / inner) % total, in = f % inner, off = 0;
            for (j = 0; j < n; j++) {
                if (k < off + sizes[j]) {
                    e[f] = vs[j][(outer * sizes[j] + (k - off)) * inner + in];
                    break;
                }
                off += sizes[j];
            }
        }
        snprintf(g_case, sizeof g_case, "concat %d tensors %s nd %d dim %d", n, tc_dtype_name(dt), nd, arg);
        check_t(tc_concat(ctx, n, xs, arg), dt, nd, osh, e, 0, 0);
        if (n >= 2 && dt == TC_F32) { /* dtypes promote like torch.cat: make one input i32 */
            int64_t sh[TC_MAX_DIMS];
            double *iv;
            for (i = 0; i < nd; i++) sh[i] = base[i];
            sh[dim] = sizes[1];
            iv = rnd_vals(TC_I32, numel_of(nd, sh), -5, 5);
            xs[1] = mk_layout(ctx, TC_I32, nd, sh, iv, rnd_int(0, 3));
            memcpy(vs[1], iv, (size_t)numel_of(nd, sh) * sizeof(double));
            for (f = 0; f < on; f++) {
                int64_t outer = f / (total * inner), k = (f / inner) % total, in = f % inner, off = 0;
                for (j = 0; j < n; j++) {
                    if (k < off + sizes[j]) {
                        e[f] = vs[j][(outer * sizes[j] + (k - off)) * inner + in];
                        break;
                    }
                    off += sizes[j];
                }
            }
            snprintf(g_case, sizeof g_case, "concat %d tensors f32 with an i32 one -> f32, nd %d dim %d", n, nd, arg);
            check_t(tc_concat(ctx, n, xs, arg), TC_F32, nd, osh, e, 0, 0);
            free(iv);
        }
        tc_scope_end(ctx);
        for (j = 0; j < n; j++) free(vs[j]);
        free(e);
    }
    tc_ctx_destroy(ctx);
}

static void check_pieces(tc_ctx *ctx, tc_tensor *x, int nd, const int64_t *sh, const double *v, int dim, int got, tc_tensor **out,
                         int max_out, int npieces, const int64_t *lens) {
    int p;
    int64_t start = 0;
    (void)ctx;
    TC_CHECKF(got == npieces, "%s: returned %d pieces, expected %d", g_case, got, npieces);
    if (got != npieces) return;
    for (p = 0; p < npieces && p < max_out; p++) {
        int64_t psh[TC_MAX_DIMS];
        double *e = ref_narrow(nd, sh, v, dim, start, lens[p]);
        int i;
        for (i = 0; i < nd; i++) psh[i] = sh[i];
        psh[dim] = lens[p];
        check_t(out[p], TC_F32, nd, psh, e, 0, 0);
        if (numel_of(nd, psh) > 0 && tc_status(out[p]) == TC_OK)
            TC_CHECKF(tc_data(out[p]) == (void *)((char *)tc_data(x) + start * tc_strides(x)[dim] * 4), "%s: piece %d is not a view", g_case,
                      p);
        free(e);
        start += lens[p];
    }
}

TC_TEST(test_split_chunk) {
    tc_ctx *ctx = mkctx(1);
    int iter;
    for (iter = 0; iter < 120; iter++) {
        int nd = rnd_int(1, 3), dim = rnd_int(0, nd - 1), arg = rnd_int(0, 1) ? dim : dim - nd, i, np, got, max_out;
        int64_t sh[TC_MAX_DIMS] = {0}, m, ss, lens[16];
        double *v;
        tc_tensor *x, *out[16];
        for (i = 0; i < nd; i++) sh[i] = rnd_size();
        sh[dim] = rnd_int(0, 9);
        m = sh[dim];
        v = rnd_vals(TC_F32, numel_of(nd, sh), -5, 5);
        tc_scope_begin(ctx);
        x = mk_layout(ctx, TC_F32, nd, sh, v, rnd_int(0, 3));
        /* split */
        ss = rnd_int(1, 4);
        np = m == 0 ? 1 : (int)((m + ss - 1) / ss); /* torch.split: one empty piece for an empty dim */
        for (i = 0; i < np; i++) lens[i] = (i + 1) * ss <= m ? ss : m - i * ss;
        max_out = rnd_int(0, 2) ? 16 : rnd_int(1, np);
        snprintf(g_case, sizeof g_case, "split size %lld dim %d of %lld max_out %d", (long long)ss, arg, (long long)m, max_out);
        got = tc_split(ctx, x, ss, arg, out, max_out);
        check_pieces(ctx, x, nd, sh, v, dim, got, out, max_out, np, lens);
        /* chunk */
        {
            int chunks = rnd_int(1, 6);
            int64_t cs = (m + chunks - 1) / chunks;
            if (m == 0) {
                np = chunks;
                for (i = 0; i < np; i++) lens[i] = 0;
            } else {
                np = (int)((m + cs - 1) / cs);
                for (i = 0; i < np; i++) lens[i] = (i + 1) * cs <= m ? cs : m - i * cs;
            }
            snprintf(g_case, sizeof g_case, "chunk %d dim %d of %lld", chunks, arg, (long long)m);
            got = tc_chunk(ctx, x, chunks, arg, out, 16);
            check_pieces(ctx, x, nd, sh, v, dim, got, out, 16, np, lens);
        }
        /* split_sizes */
        {
            int64_t rem = m;
            np = 0;
            while (rem > 0 && np < 15) {
                lens[np] = rnd_int(0, (int)rem);
                rem -= lens[np++];
            }
            lens[np++] = rem;
            snprintf(g_case, sizeof g_case, "split_sizes %d pieces dim %d of %lld", np, arg, (long long)m);
            got = tc_split_sizes(ctx, x, np, lens, arg, out);
            check_pieces(ctx, x, nd, sh, v, dim, got, out, np, np, lens);
        }
        tc_scope_end(ctx);
        free(v);
    }
    {   /* the torch.chunk examples: 5 in 4 chunks -> 2,2,1; 6 in 4 -> 2,2,2 */
        int64_t s5 = 5, s6 = 6, l1[3] = {2, 2, 1}, l2[3] = {2, 2, 2};
        double v[6] = {0, 1, 2, 3, 4, 5};
        tc_tensor *out[8], *x;
        strcpy(g_case, "chunk(arange(5), 4)");
        x = mk(ctx, TC_F32, 1, &s5, v);
        check_pieces(ctx, x, 1, &s5, v, 0, tc_chunk(ctx, x, 4, 0, out, 8), out, 8, 3, l1);
        strcpy(g_case, "chunk(arange(6), 4)");
        x = mk(ctx, TC_F32, 1, &s6, v);
        check_pieces(ctx, x, 1, &s6, v, 0, tc_chunk(ctx, x, 4, 0, out, 8), out, 8, 3, l2);
        strcpy(g_case, "split(arange(6), 4) with max_out 1 still returns 2");
        l2[0] = 4;
        check_pieces(ctx, x, 1, &s6, v, 0, tc_split(ctx, x, 4, 0, out, 1), out, 1, 2, l2);
    }
    tc_ctx_destroy(ctx);
}

TC_TEST(test_pad) {
    tc_ctx *ctx = mkctx(1);
    int iter;
    for (iter = 0; iter < 120; iter++) {
        int nd = rnd_int(1, 4), npairs = rnd_int(1, nd), i, ok = 1;
        int64_t sh[TC_MAX_DIMS] = {0}, osh[TC_MAX_DIMS], pad[2 * TC_MAX_DIMS], on, f;
        double *v, *e, value = iter % 3 ? 0.0 : -1.5;
        tc_dtype dt = iter % 5 == 4 ? TC_I32 : TC_F32;
        for (i = 0; i < nd; i++) sh[i] = rnd_size();
        for (i = 0; i < nd; i++) osh[i] = sh[i];
        for (i = 0; i < npairs; i++) {
            int d = nd - 1 - i;
            pad[2 * i] = rnd_int(-2, 3);
            pad[2 * i + 1] = rnd_int(-2, 3);
            osh[d] = sh[d] + pad[2 * i] + pad[2 * i + 1];
            if (osh[d] < 0) ok = 0;
        }
        if (!ok) continue;
        if (dt == TC_I32) value = 7;
        v = rnd_vals(dt, numel_of(nd, sh), -5, 5);
        on = numel_of(nd, osh);
        e = dalloc(on);
        for (f = 0; f < on; f++) {
            int64_t r = f, idx[TC_MAX_DIMS], src = 0;
            int inside = 1;
            for (i = nd - 1; i >= 0; i--) { idx[i] = r % osh[i]; r /= osh[i]; }
            for (i = 0; i < nd; i++) {
                int pi = nd - 1 - i;
                int64_t before = pi < npairs ? pad[2 * pi] : 0, s = idx[i] - before;
                if (s < 0 || s >= sh[i]) inside = 0;
                src = src * sh[i] + (s < 0 ? 0 : s);
            }
            e[f] = inside ? v[src] : value;
        }
        tc_scope_begin(ctx);
        {
            char b1[64];
            shape_str(b1, sizeof b1, nd, sh);
            snprintf(g_case, sizeof g_case, "pad %s %s npad %d (%lld,%lld,...) value %g", tc_dtype_name(dt), b1, 2 * npairs,
                     (long long)pad[0], (long long)pad[1], value);
        }
        check_t(tc_pad(ctx, mk_layout(ctx, dt, nd, sh, v, rnd_int(0, 3)), 2 * npairs, pad, value), dt, nd, osh, e, 0, 0);
        tc_scope_end(ctx);
        free(v);
        free(e);
    }
    tc_ctx_destroy(ctx);
}

/* ------------------------------------------------------------------------ */
/* Indexing                                                                  */
/* ------------------------------------------------------------------------ */

TC_TEST(test_embedding_index_select_gather) {
    tc_ctx *ctx = mkctx(1);
    int iter, i;
    for (iter = 0; iter < 80; iter++) {
        int64_t V = rnd_int(1, 9), D = rnd_int(0, 5), sw[2], si[TC_MAX_DIMS], so[TC_MAX_DIMS], ni, f;
        int nid = rnd_int(0, 3);
        double *vw, *vi, *e;
        sw[0] = V; sw[1] = D;
        for (i = 0; i < nid; i++) si[i] = rnd_size();
        ni = numel_of(nid, si);
        vw = rnd_vals(TC_F32, V * D, -3, 3);
        vi = dalloc(ni);
        for (f = 0; f < ni; f++) vi[f] = rnd_int(0, (int)V - 1);
        for (i = 0; i < nid; i++) so[i] = si[i];
        so[nid] = D;
        e = dalloc(ni * D);
        for (f = 0; f < ni * D; f++) e[f] = vw[(int64_t)vi[f / D] * D + f % D];
        tc_scope_begin(ctx);
        snprintf(g_case, sizeof g_case, "embedding V %lld D %lld idx nd %d", (long long)V, (long long)D, nid);
        check_t(tc_embedding(ctx, mk_layout(ctx, TC_F32, 2, sw, vw, rnd_int(0, 3)), mk_layout(ctx, TC_I32, nid, si, vi, rnd_int(0, 3))), TC_F32,
                nid + 1, so, e, 0, 0);
        tc_scope_end(ctx);
        free(vw); free(vi); free(e);
    }
    for (iter = 0; iter < 40; iter++) {
        int nd = rnd_int(1, 4), dim = rnd_int(0, nd - 1), arg = rnd_int(0, 1) ? dim : dim - nd;
        int64_t sh[TC_MAX_DIMS] = {0}, so[TC_MAX_DIMS], ni = rnd_int(0, 6), m, f, inner = 1;
        double *v, *vi, *e;
        for (i = 0; i < nd; i++) sh[i] = rnd_size();
        if (sh[dim] == 0) sh[dim] = 3;
        m = sh[dim];
        for (i = 0; i < nd; i++) so[i] = sh[i];
        so[dim] = ni;
        for (i = dim + 1; i < nd; i++) inner *= sh[i];
        v = rnd_vals(TC_F32, numel_of(nd, sh), -3, 3);
        vi = dalloc(ni);
        for (f = 0; f < ni; f++) vi[f] = rnd_int(0, (int)m - 1); /* api.h: indices in [0, size) */
        e = dalloc(numel_of(nd, so));
        for (f = 0; f < numel_of(nd, so); f++) {
            int64_t outer = f / (ni * inner), j = (f / inner) % ni, in = f % inner, ix = (int64_t)vi[j];
            if (ix < 0) ix += m;
            e[f] = v[(outer * m + ix) * inner + in];
        }
        tc_scope_begin(ctx);
        snprintf(g_case, sizeof g_case, "index_select nd %d dim %d n %lld", nd, arg, (long long)ni);
        check_t(tc_index_select(ctx, mk_layout(ctx, TC_F32, nd, sh, v, rnd_int(0, 3)), arg, mk_layout(ctx, TC_I32, 1, &ni, vi, rnd_int(0, 3))),
                TC_F32, nd, so, e, 0, 0);
        tc_scope_end(ctx);
        free(v); free(vi); free(e);
    }
    for (iter = 0; iter < 40; iter++) {
        int nd = rnd_int(1, 4), dim = rnd_int(0, nd - 1), arg = rnd_int(0, 1) ? dim : dim - nd;
        int64_t sh[TC_MAX_DIMS] = {0}, si[TC_MAX_DIMS], m, f, n;
        double *v, *vi, *e;
        for (i = 0; i < nd; i++) sh[i] = rnd_size();
        if (sh[dim] == 0) sh[dim] = 2;
        m = sh[dim];
        for (i = 0; i < nd; i++) si[i] = i == dim ? rnd_int(0, 5) : rnd_int(0, (int)sh[i]); /* index may be smaller */
        n = numel_of(nd, si);
        v = rnd_vals(TC_F32, numel_of(nd, sh), -3, 3);
        vi = dalloc(n);
        e = dalloc(n);
        for (f = 0; f < n; f++) {
            int64_t r = f, idx[TC_MAX_DIMS], src = 0, ix;
            vi[f] = rnd_int(0, (int)m - 1);
            for (i = nd - 1; i >= 0; i--) { idx[i] = r % si[i]; r /= si[i]; }
            ix = (int64_t)vi[f];
            idx[dim] = ix < 0 ? ix + m : ix;
            for (i = 0; i < nd; i++) src = src * sh[i] + idx[i];
            e[f] = v[src];
        }
        tc_scope_begin(ctx);
        snprintf(g_case, sizeof g_case, "gather nd %d dim %d", nd, arg);
        check_t(tc_gather(ctx, mk_layout(ctx, TC_F32, nd, sh, v, rnd_int(0, 3)), arg, mk_layout(ctx, TC_I32, nd, si, vi, rnd_int(0, 3))), TC_F32,
                nd, si, e, 0, 0);
        tc_scope_end(ctx);
        free(v); free(vi); free(e);
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
    printf("  test_storage_cache_faults skipped: counts page faults with getrusage (Linux only)\n");
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

/* Lengths around SIMD widths and GEMM register tiles (tails, edges) */
TC_TEST(test_simd_edges) {
    tc_ctx *ctx = mkctx(1);
    static const int64_t lens[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 47, 48, 49, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1023, 1025};
    int li, M, N, k;
    int64_t i;
    for (li = 0; li < (int)(sizeof lens / sizeof lens[0]); li++) {
        int64_t n = lens[li], sh2[2], one = 1, s3[2];
        double *a = rnd_vals(TC_F32, 3 * n, -3, 3), *b = rnd_vals(TC_F32, 3 * n, 0.5, 3), *e = dalloc(3 * n);
        int ax = 1;
        tc_tensor *ta, *tb;
        tc_scope_begin(ctx);
        sh2[0] = 3; sh2[1] = n;
        ta = mk(ctx, TC_F32, 2, sh2, a);
        tb = mk_layout(ctx, TC_F32, 2, sh2, b, 2);
        for (k = 0; k < N_UNOPS; k++) {
            if (unops[k].lo >= 0) { /* log, sqrt, rsqrt, reciprocal: positive inputs */
                for (i = 0; i < 3 * n; i++) e[i] = (double)(float)unops[k].ref(b[i]);
                snprintf(g_case, sizeof g_case, "%s length %lld", unops[k].name, (long long)n);
                check_t(unops[k].fn(ctx, tb, TC_HERE_), TC_F32, 2, sh2, e, 1e-5, 1e-4);
            } else {
                for (i = 0; i < 3 * n; i++) e[i] = (double)(float)unops[k].ref(a[i]);
                snprintf(g_case, sizeof g_case, "%s length %lld", unops[k].name, (long long)n);
                check_t(unops[k].fn(ctx, ta, TC_HERE_), TC_F32, 2, sh2, e, 1e-5, 1e-4);
            }
        }
        for (k = 0; k < N_BINOPS; k++) {
            tc_dtype odt = binops[k].kind == K_CMP ? TC_BOOL : TC_F32;
            for (i = 0; i < 3 * n; i++) e[i] = quant(odt, binops[k].ref(b[i], a[i % n]));
            snprintf(g_case, sizeof g_case, "%s length %lld, [3,n] x [n]", binops[k].name, (long long)n);
            s3[0] = n;
            check_t(binops[k].fn(ctx, tb, mk(ctx, TC_F32, 1, s3, a), TC_HERE_), odt, 2, sh2, e, 1e-5, 1e-4);
        }
        {
            double *er;
            int ond;
            int64_t osh[TC_MAX_DIMS], rc;
            int op;
            for (op = 0; op < R_COUNT_; op++) {
                ref_reduce(op, 2, sh2, a, 2u, 0, &ond, osh, &er, &rc);
                snprintf(g_case, sizeof g_case, "%s over rows of length %lld", red_names[op], (long long)n);
                check_t(call_red(ctx, op, ta, 1, &ax, 0), op == R_ARGMAX ? TC_I32 : TC_F32, ond, osh, er, 1e-5 * (1 + sqrt((double)n)), 1e-4);
                free(er);
                ref_reduce(op, 2, sh2, a, 3u, 0, &ond, osh, &er, &rc);
                snprintf(g_case, sizeof g_case, "%s over all of [3,%lld] (strided)", red_names[op], (long long)n);
                check_t(call_red(ctx, op, tb == ta ? ta : mk_layout(ctx, TC_F32, 2, sh2, a, 1), 0, NULL, 0), op == R_ARGMAX ? TC_I32 : TC_F32,
                        ond, osh, er, 1e-5 * (1 + sqrt((double)n)), 1e-4);
                free(er);
            }
        }
        {   /* reductions over dim 0 of [n, 3] (column sums), outer-product broadcast [n,1] x [1,3] */
            int64_t sc[2], sr[2], so2[2], f2;
            double *er;
            int ond, ax0 = 0, op;
            int64_t osh[TC_MAX_DIMS], rc;
            sc[0] = n; sc[1] = 3;
            for (op = 0; op < R_COUNT_; op++) {
                ref_reduce(op, 2, sc, a, 1u, 1, &ond, osh, &er, &rc);
                snprintf(g_case, sizeof g_case, "%s over dim 0 of [%lld,3] keepdim", red_names[op], (long long)n);
                check_t(call_red(ctx, op, mk_layout(ctx, TC_F32, 2, sc, a, rnd_int(0, 1)), 1, &ax0, 1), op == R_ARGMAX ? TC_I32 : TC_F32, ond,
                        osh, er, 1e-5 * (1 + sqrt((double)n)), 1e-4);
                free(er);
            }
            sc[1] = 1; sr[0] = 1; sr[1] = 3; so2[0] = n; so2[1] = 3;
            for (f2 = 0; f2 < 3 * n; f2++) e[f2] = (double)(float)(a[f2 / 3] - b[f2 % 3]);
            snprintf(g_case, sizeof g_case, "sub [%lld,1] - [1,3]", (long long)n);
            check_t(tc_sub(ctx, mk(ctx, TC_F32, 2, sc, a), mk(ctx, TC_F32, 2, sr, b)), TC_F32, 2, so2, e, 1e-6, 1e-6);
            sr[1] = n; sc[0] = 3; so2[0] = 3; so2[1] = n;
            for (f2 = 0; f2 < 3 * n; f2++) e[f2] = (double)(float)(a[f2 / n] * b[f2 % n]);
            snprintf(g_case, sizeof g_case, "mul [3,1] * [1,%lld]", (long long)n);
            check_t(tc_mul(ctx, mk(ctx, TC_F32, 2, sc, a), mk(ctx, TC_F32, 2, sr, b)), TC_F32, 2, so2, e, 1e-6, 1e-6);
        }
        ref_softmax(2, sh2, 1, a, e, 0);
        snprintf(g_case, sizeof g_case, "softmax length %lld", (long long)n);
        check_t(tc_softmax(ctx, ta, -1), TC_F32, 2, sh2, e, 1e-6, 1e-4);
        ref_norm(2, sh2, 1, a, b, NULL, 1e-5, 0, e);
        snprintf(g_case, sizeof g_case, "layer_norm length %lld", (long long)n);
        check_t(tc_layer_norm(ctx, ta, 1, mk(ctx, TC_F32, 1, &sh2[1], b), NULL, 1e-5), TC_F32, 2, sh2, e, 1e-4, 1e-4);
        for (i = 0; i < 3 * n; i++) e[i] = quant(TC_F16, a[i]);
        snprintf(g_case, sizeof g_case, "cast f32 -> f16 length %lld", (long long)n);
        check_t(tc_cast(ctx, ta, TC_F16), TC_F16, 2, sh2, e, 0, 0);
        (void)one;
        tc_scope_end(ctx);
        free(a); free(b); free(e);
    }
    /* every small GEMM edge: M, N in 1..18, a few K, B plain and transposed */
    for (M = 1; M <= 18; M++)
        for (N = 1; N <= 18; N++) {
            static const int64_t ks[4] = {1, 8, 17, 64};
            int64_t sa[2], sb[2];
            sa[0] = M; sa[1] = ks[(M + N) % 4];
            sb[0] = sa[1]; sb[1] = N;
            run_matmul_case(ctx, TC_F32, 2, sa, 2, sb, 0, (M * 7 + N) % 2);
        }
    tc_ctx_destroy(ctx);
}

/* Non-f32 dtypes through ops that keep the input dtype */
TC_TEST(test_dtype_coverage) {
    tc_ctx *ctx = mkctx(1);
    static const tc_dtype dts[4] = {TC_F16, TC_BF16, TC_I32, TC_BOOL};
    int k;
    int64_t i;
    tc_scope_begin(ctx);
    for (k = 0; k < 4; k++) {
        tc_dtype dt = dts[k];
        int64_t sw[2] = {5, 3}, si[2] = {2, 2}, sx[2] = {4, 3}, s4 = 4, s3 = 3, so[3] = {2, 2, 3};
        double *vw = rnd_vals(dt, 15, -4, 4), vi[4] = {4, 0, 2, 2}, e[64], *vx = rnd_vals(dt, 12, -4, 4);
        int32_t isel[4] = {3, 0, 0, 2};
        tc_tensor *xs[2];
        for (i = 0; i < 12; i++) e[i] = vw[(int64_t)vi[i / 3] * 3 + i % 3];
        snprintf(g_case, sizeof g_case, "embedding %s", tc_dtype_name(dt));
        check_t(tc_embedding(ctx, mk_layout(ctx, dt, 2, sw, vw, 1), mk(ctx, TC_I32, 2, si, vi)), dt, 3, so, e, 0, 0);
        snprintf(g_case, sizeof g_case, "index_select %s", tc_dtype_name(dt));
        for (i = 0; i < 12; i++) e[i] = vx[isel[i / 3] * 3 + i % 3];
        {
            int64_t s43[2] = {4, 3};
            check_t(tc_index_select(ctx, mk_layout(ctx, dt, 2, sx, vx, 2), 0, tc_from_data(ctx, TC_I32, 1, &s4, isel)), dt, 2, s43, e, 0, 0);
        }
        snprintf(g_case, sizeof g_case, "concat %s", tc_dtype_name(dt));
        xs[0] = mk(ctx, dt, 2, sx, vx);
        xs[1] = mk_layout(ctx, dt, 2, sx, vx, 1);
        for (i = 0; i < 24; i++) e[i] = vx[i % 12];
        {
            int64_t s83[2] = {8, 3};
            check_t(tc_concat(ctx, 2, xs, 0), dt, 2, s83, e, 0, 0);
        }
        snprintf(g_case, sizeof g_case, "pad %s", tc_dtype_name(dt));
        {
            int64_t pd[2] = {1, -1}, s;
            for (i = 0; i < 12; i++) {
                s = i % 3;
                e[i] = s == 0 ? quant(dt, 1.0) : vx[(i / 3) * 3 + s - 1];
            }
            check_t(tc_pad(ctx, mk_layout(ctx, dt, 2, sx, vx, 3), 2, pd, 1.0), dt, 2, sx, e, 0, 0);
        }
        snprintf(g_case, sizeof g_case, "gather %s", tc_dtype_name(dt));
        {
            int32_t gi[3] = {3, 1, 0};
            int64_t s13[2] = {1, 3};
            for (i = 0; i < 3; i++) e[i] = vx[gi[i] * 3 + i];
            check_t(tc_gather(ctx, mk_layout(ctx, dt, 2, sx, vx, 1), 0, tc_from_data(ctx, TC_I32, 2, s13, gi)), dt, 2, s13, e, 0, 0);
        }
        snprintf(g_case, sizeof g_case, "transpose + contiguous %s", tc_dtype_name(dt));
        {
            int64_t s34[2] = {3, 4};
            for (i = 0; i < 12; i++) e[i] = vx[(i % 4) * 3 + i / 4];
            check_t(tc_contiguous(ctx, tc_transpose(ctx, mk(ctx, dt, 2, sx, vx), 0, 1)), dt, 2, s34, e, 0, 0);
        }
        if (dt != TC_BOOL) {
            snprintf(g_case, sizeof g_case, "max over dim 0 %s", tc_dtype_name(dt));
            for (i = 0; i < 3; i++) e[i] = fmax(fmax(vx[i], vx[3 + i]), fmax(vx[6 + i], vx[9 + i]));
            {
                int ax = 0;
                check_t(tc_max(ctx, mk_layout(ctx, dt, 2, sx, vx, 2), 1, &ax, 0), dt, 1, &s3, e, 0, 0);
                if (dt != TC_I32) {
                    for (i = 0; i < 3; i++) e[i] = quant(dt, vx[i] + vx[3 + i] + vx[6 + i] + vx[9 + i]);
                    snprintf(g_case, sizeof g_case, "sum over dim 0 %s", tc_dtype_name(dt));
                    check_t(tc_sum(ctx, mk_layout(ctx, dt, 2, sx, vx, 2), 1, &ax, 0), dt, 1, &s3, e, tol_a(dt), tol_r(dt));
                }
            }
        }
        free(vw);
        free(vx);
    }
    {   /* mean/var/softmax of half types stay half (PyTorch) */
        int64_t sx[2] = {3, 4}, s3 = 3;
        int ax = 1;
        double *vh = rnd_vals(TC_F16, 12, -2, 2), *vb = rnd_vals(TC_BF16, 12, -2, 2), e[12];
        for (i = 0; i < 3; i++) e[i] = quant(TC_F16, (vh[4 * i] + vh[4 * i + 1] + vh[4 * i + 2] + vh[4 * i + 3]) / 4);
        strcpy(g_case, "mean f16 -> f16");
        check_t(tc_mean(ctx, mk(ctx, TC_F16, 2, sx, vh), 1, &ax, 0), TC_F16, 1, &s3, e, 1e-3, 2e-3);
        for (i = 0; i < 3; i++) {
            double m = (vb[4 * i] + vb[4 * i + 1] + vb[4 * i + 2] + vb[4 * i + 3]) / 4, q = 0;
            int j;
            for (j = 0; j < 4; j++) q += (vb[4 * i + j] - m) * (vb[4 * i + j] - m);
            e[i] = quant(TC_BF16, q / 3);
        }
        strcpy(g_case, "var bf16 -> bf16");
        check_t(tc_var(ctx, mk(ctx, TC_BF16, 2, sx, vb), 1, &ax, 1, 0), TC_BF16, 1, &s3, e, 1e-2, 1.6e-2);
        ref_softmax(2, sx, 1, vb, e, 0);
        for (i = 0; i < 12; i++) e[i] = quant(TC_BF16, e[i]);
        strcpy(g_case, "softmax bf16 -> bf16");
        check_t(tc_softmax(ctx, mk(ctx, TC_BF16, 2, sx, vb), 1), TC_BF16, 2, sx, e, 1e-2, 1.6e-2);
        {
            double am[3];
            for (i = 0; i < 3; i++) {
                int j, best = 0;
                for (j = 1; j < 4; j++)
                    if (vh[4 * i + j] > vh[4 * i + best]) best = j;
                am[i] = best;
            }
            strcpy(g_case, "argmax f16 -> i32");
            check_t(tc_argmax(ctx, mk(ctx, TC_F16, 2, sx, vh), 1, &ax, 0), TC_I32, 1, &s3, am, 0, 0);
        }
        free(vh);
        free(vb);
    }
    {   /* concat promotes like torch.cat */
        int64_t s2[1] = {2}, s4[1] = {4};
        double a[2] = {1.5, -2.25}, b[2] = {3, -4}, e[4] = {1.5, -2.25, 3, -4}, eb[4] = {1, 0, 3, -4};
        double bb[2] = {1, 0};
        tc_tensor *xs[2];
        xs[0] = mk(ctx, TC_F16, 1, s2, a);
        xs[1] = mk(ctx, TC_BF16, 1, s2, b);
        strcpy(g_case, "concat f16 + bf16 -> f32");
        check_t(tc_concat(ctx, 2, xs, 0), TC_F32, 1, s4, e, 0, 0);
        xs[0] = mk(ctx, TC_BOOL, 1, s2, bb);
        xs[1] = mk(ctx, TC_I32, 1, s2, b);
        strcpy(g_case, "concat bool + i32 -> i32");
        check_t(tc_concat(ctx, 2, xs, 0), TC_I32, 1, s4, eb, 0, 0);
        xs[1] = mk(ctx, TC_F16, 1, s2, b);
        strcpy(g_case, "concat bool + f16 -> f16");
        check_t(tc_concat(ctx, 2, xs, 0), TC_F16, 1, s4, eb, 0, 0);
    }
    {   /* f16 conv2d and layer_norm compute in f32 and round to f16 */
        int64_t sx[4] = {1, 2, 5, 5}, sw[4] = {3, 2, 3, 3}, so[4] = {1, 3, 3, 3}, C = 3, sl[2] = {3, 8};
        int st[2] = {1, 1}, pd[2] = {0, 0}, dl[2] = {1, 1};
        double *vx = rnd_vals(TC_F16, 50, -1, 1), *vw = rnd_vals(TC_F16, 54, -1, 1), *vb = rnd_vals(TC_F16, 3, -1, 1), e[27], el[24];
        double *vl = rnd_vals(TC_F16, 24, -3, 3);
        ref_conv2d(1, 2, 5, 5, vx, 3, 3, 3, vw, vb, 1, st, pd, dl, 3, 3, e);
        for (i = 0; i < 27; i++) e[i] = quant(TC_F16, e[i]);
        strcpy(g_case, "conv2d f16");
        check_t(tc_conv2d(ctx, mk(ctx, TC_F16, 4, sx, vx), mk(ctx, TC_F16, 4, sw, vw), mk(ctx, TC_F16, 1, &C, vb), NULL), TC_F16, 4, so, e,
                4e-3, 2e-3);
        ref_norm(2, sl, 1, vl, NULL, NULL, 1e-5, 0, el);
        for (i = 0; i < 24; i++) el[i] = quant(TC_F16, el[i]);
        strcpy(g_case, "layer_norm f16");
        check_t(tc_layer_norm(ctx, mk(ctx, TC_F16, 2, sl, vl), 1, NULL, NULL, 1e-5), TC_F16, 2, sl, el, 2e-3, 2e-3);
        free(vx); free(vw); free(vb); free(vl);
    }
    {   /* full with NaN / inf; from_data of a 0-d tensor */
        int64_t s2 = 2;
        double nn[2] = {NAN, NAN}, inf2[2] = {INFINITY, -INFINITY}, z[2] = {0, 0}, x0 = -1.25;
        float f0 = -1.25f;
        strcpy(g_case, "full NaN / inf");
        check_t(tc_full(ctx, TC_F32, 1, &s2, NAN), TC_F32, 1, &s2, nn, 0, 0);
        check_t(tc_full(ctx, TC_F16, 1, &s2, NAN), TC_F16, 1, &s2, nn, 0, 0);
        check_t(tc_full(ctx, TC_I32, 1, &s2, NAN), TC_I32, 1, &s2, z, 0, 0);
        check_t(tc_cast(ctx, mk(ctx, TC_F32, 1, &s2, inf2), TC_BF16), TC_BF16, 1, &s2, inf2, 0, 0);
        strcpy(g_case, "from_data 0-d");
        check_t(tc_from_data(ctx, TC_F32, 0, NULL, &f0), TC_F32, 0, NULL, &x0, 0, 0);
    }
    tc_scope_end(ctx);
    tc_ctx_destroy(ctx);
}

/* TC_MAX_DIMS-dimensional operands */
TC_TEST(test_max_dims) {
    tc_ctx *ctx = mkctx(1);
    int64_t sa[8] = {2, 1, 2, 1, 2, 1, 2, 3}, sb[7] = {1, 2, 1, 2, 1, 1, 3}, so[8], n, f, rc;
    int ond, i, op, iter;
    double *va, *vb, *e;
    tc_scope_begin(ctx);
    va = rnd_vals(TC_F32, numel_of(8, sa), -2, 2);
    vb = rnd_vals(TC_F32, numel_of(7, sb), -2, 2);
    bcast_shape(8, sa, 7, sb, &ond, so);
    n = numel_of(ond, so);
    e = dalloc(n);
    for (f = 0; f < n; f++) e[f] = (double)(float)(va[bcast_idx(8, so, f, 8, sa)] * vb[bcast_idx(8, so, f, 7, sb)]);
    strcpy(g_case, "mul 8-d x 7-d broadcast");
    check_t(tc_mul(ctx, mk_layout(ctx, TC_F32, 8, sa, va, 3), mk_layout(ctx, TC_F32, 7, sb, vb, 1)), TC_F32, 8, so, e, 1e-6, 1e-6);
    free(e);
    for (iter = 0; iter < 12; iter++) {
        unsigned mask = (unsigned)rnd_int(1, 255);
        int axes[8], na = 0, keep = rnd_int(0, 1);
        int64_t osh[8];
        op = iter % R_COUNT_;
        for (i = 0; i < 8; i++)
            if (mask & (1u << i)) axes[na++] = i - 8 * rnd_int(0, 1);
        ref_reduce(op, 8, sa, va, mask, keep, &ond, osh, &e, &rc);
        snprintf(g_case, sizeof g_case, "%s of an 8-d tensor mask 0x%x keepdim %d", red_names[op], mask, keep);
        check_t(call_red(ctx, op, mk_layout(ctx, TC_F32, 8, sa, va, rnd_int(0, 3)), na, axes, keep), op == R_ARGMAX ? TC_I32 : TC_F32, ond,
                osh, e, 1e-5, 1e-4);
        free(e);
    }
    {
        int perm[8] = {7, 0, 6, 1, 5, 2, 4, 3};
        int64_t psh[8];
        e = dalloc(numel_of(8, sa));
        ref_permute(8, sa, perm, va, e);
        for (i = 0; i < 8; i++) psh[i] = sa[perm[i]];
        strcpy(g_case, "permute 8-d");
        check_t(tc_permute(ctx, mk_layout(ctx, TC_F32, 8, sa, va, 2), perm), TC_F32, 8, psh, e, 0, 0);
        ref_softmax(8, sa, 6, va, e, 0);
        strcpy(g_case, "softmax dim 6 of 8-d");
        check_t(tc_softmax(ctx, mk_layout(ctx, TC_F32, 8, sa, va, 1), -2), TC_F32, 8, sa, e, 1e-6, 1e-5);
        free(e);
    }
    {
        int64_t ma[8] = {2, 1, 2, 1, 2, 1, 3, 4}, mb[8] = {1, 2, 1, 2, 1, 2, 4, 5}, m2[2] = {4, 5};
        run_matmul_case(ctx, TC_F32, 8, ma, 2, m2, 1, 0);
        run_matmul_case(ctx, TC_F32, 8, ma, 8, mb, 3, 4);
    }
    {
        int64_t one8[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        double v1 = 4.5;
        strcpy(g_case, "squeeze_all / sum of [1]*8");
        check_t(tc_squeeze_all(ctx, mk(ctx, TC_F32, 8, one8, &v1)), TC_F32, 0, NULL, &v1, 0, 0);
        check_t(tc_sum(ctx, mk(ctx, TC_F32, 8, one8, &v1), 0, NULL, 1), TC_F32, 8, one8, &v1, 0, 0);
    }
    tc_scope_end(ctx);
    free(va);
    free(vb);
    tc_ctx_destroy(ctx);
}

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
    /* TC_TEST_SEED=n reruns every random case with another seed */
    const char *seed = getenv("TC_TEST_SEED");
    if (seed && *seed) {
        g_rng = (uint64_t)strtoull(seed, NULL, 10) * 0x9E3779B97F4A7C15ull + 1u;
        printf("seed %s\n", seed);
    }
    /* TC_TEST_THREADS=n runs the single-threaded tests on n threads (build
     * with -DTC_PARALLEL_MIN_WORK=1 to send even tiny tensors down the
     * parallel paths) */
    seed = getenv("TC_TEST_THREADS");
    if (seed && *seed) g_threads_override = atoi(seed);
    TC_RUN(test_dtype_info);
    TC_RUN(test_fill_creation);
    TC_RUN(test_arange);
    TC_RUN(test_rand);
    TC_RUN(test_from_data_wrap);
    TC_RUN(test_reshape);
    TC_RUN(test_permute_transpose);
    TC_RUN(test_slice_select);
    TC_RUN(test_expand);
    TC_RUN(test_squeeze_unsqueeze_flatten);
    TC_RUN(test_contiguous_clone_copy);
    TC_RUN(test_read_write);
    TC_RUN(test_host_conversions_special);
    TC_RUN(test_int_wraparound);
    TC_RUN(test_half_conversions);
    TC_RUN(test_get_set_item_describe);
    TC_RUN(test_unary_f32);
    TC_RUN(test_unary_special_values);
    TC_RUN(test_unary_dtypes);
    TC_RUN(test_softplus_clamp);
    TC_RUN(test_cast);
    TC_RUN(test_binary_broadcast);
    TC_RUN(test_binary_special_values);
    TC_RUN(test_type_promotion);
    TC_RUN(test_where);
    TC_RUN(test_reductions);
    TC_RUN(test_reduction_dtypes_and_nan);
    TC_RUN(test_softmax);
    TC_RUN(test_layer_rms_norm);
    TC_RUN(test_matmul);
    TC_RUN(test_linear);
    TC_RUN(test_conv2d);
    TC_RUN(test_pool2d);
    TC_RUN(test_adaptive_avg_pool2d);
    TC_RUN(test_batch_norm);
    TC_RUN(test_concat);
    TC_RUN(test_split_chunk);
    TC_RUN(test_pad);
    TC_RUN(test_embedding_index_select_gather);
    TC_RUN(test_sdpa);
    TC_RUN(test_storage_cache);
    TC_RUN(test_storage_cache_faults);
    TC_RUN(test_memory_scopes);
    TC_RUN(test_threads_identical);
    TC_RUN(test_big_vs_reference);
    TC_RUN(test_max_dims);
    TC_RUN(test_dtype_coverage);
    TC_RUN(test_simd_edges);
    return TC_TEST_SUMMARY();
}
