/* ops_common.h: the helpers of the test_ops_*.c programs, which test every
 * op of the eager API against a straightforward reference written in plain C
 * with double accumulation, one program per op family:
 *   test_ops_tensor.c     creation, host access, conversions, copies, the
 *                         storage cache, scopes, threads
 *   test_ops_shape.c      views, concat/split, pad, indexing, dtype coverage
 *   test_ops_pointwise.c  unary and binary ops, type promotion, where, cast,
 *                         lengths around SIMD widths
 *   test_ops_reduce.c     reductions, softmax, norms, pooling, batch norm
 *   test_ops_linalg.c     matmul, linear, conv2d, attention, big inputs
 * Each includes tcompile.h (with TCOMPILE_IMPLEMENTATION) and tc_test.h, then
 * this header, and its main calls ops_setup() first.
 *
 * Build one:
 *   gcc -std=c99 -O1 -g -Wall -Wextra -Werror -pedantic -I. tests/test_ops_shape.c \
 *       -o /tmp/t -lm -lpthread && /tmp/t
 * They also compile as C++ (g++ -std=c++11 -x c++) and under
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
 * tested on their own).  The functions here are static inline so that a
 * program that uses only some of them compiles without unused warnings. */
#ifndef OPS_COMMON_H
#define OPS_COMMON_H
#include <float.h>
#include <stdint.h>

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */
/* ------------------------------------------------------------------------ */

static uint64_t g_rng = 0x1234567887654321ull;
static char g_case[512];

static inline uint64_t rnd_u64(void) {
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline int rnd_int(int lo, int hi) { /* inclusive */
    return lo + (int)(rnd_u64() % (uint64_t)(hi - lo + 1));
}
static inline double rnd_unif(double lo, double hi) {
    return lo + (hi - lo) * ((double)(rnd_u64() >> 11) * (1.0 / 9007199254740992.0));
}
/* a size for random shapes: mostly 1..4, sometimes 0 */
static inline int64_t rnd_size(void) {
    int r = rnd_int(0, 15);
    if (r == 0) return 0;
    if (r <= 3) return 1;
    return (int64_t)rnd_int(2, 5);
}

static inline int is_nan(double x) { return x != x; }
static inline int is_inf(double x) { return x == INFINITY || x == -INFINITY; }

static inline float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* IEEE binary16, round to nearest even */
static inline uint16_t f32_to_f16(float f) {
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
static inline float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        float v = (float)m * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    if (e == 31) return bits_f32(sign | 0x7f800000u | (m << 13));
    return bits_f32(sign | ((e - 15 + 127) << 23) | (m << 13));
}
static inline uint16_t f32_to_bf16(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}
static inline float bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

/* float -> i32 as documented for tc_cast: truncate, NaN -> 0, saturate */
static inline double to_i32(double v) {
    if (is_nan(v)) return 0.0;
    if (v >= 2147483647.0) return 2147483647.0;
    if (v <= -2147483648.0) return -2147483648.0;
    return (double)(int32_t)v;
}
/* the value v becomes when stored as dt (via f32 for the float types) */
static inline double quant(tc_dtype dt, double v) {
    switch (dt) {
    case TC_F32: return (double)(float)v;
    case TC_F16: return (double)f16_to_f32(f32_to_f16((float)v));
    case TC_BF16: return (double)bf16_to_f32(f32_to_bf16((float)v));
    case TC_I32: return to_i32(v);
    case TC_BOOL: return v != 0.0 ? 1.0 : 0.0;
    default: return v;
    }
}

static inline double elem_get(const void *base, tc_dtype dt, int64_t off) {
    switch (dt) {
    case TC_F32: return (double)((const float *)base)[off];
    case TC_F16: return (double)f16_to_f32(((const uint16_t *)base)[off]);
    case TC_BF16: return (double)bf16_to_f32(((const uint16_t *)base)[off]);
    case TC_I32: return (double)((const int32_t *)base)[off];
    case TC_BOOL: return ((const uint8_t *)base)[off] ? 1.0 : 0.0;
    default: return NAN;
    }
}
static inline void elem_put(void *base, tc_dtype dt, int64_t off, double v) {
    switch (dt) {
    case TC_F32: ((float *)base)[off] = (float)v; break;
    case TC_F16: ((uint16_t *)base)[off] = f32_to_f16((float)v); break;
    case TC_BF16: ((uint16_t *)base)[off] = f32_to_bf16((float)v); break;
    case TC_I32: ((int32_t *)base)[off] = (int32_t)to_i32(v); break;
    case TC_BOOL: ((uint8_t *)base)[off] = (uint8_t)(v != 0.0); break;
    default: break;
    }
}

static inline int64_t numel_of(int nd, const int64_t *sh) {
    int64_t n = 1;
    int i;
    for (i = 0; i < nd; i++) n *= sh[i];
    return n;
}
/* storage offset of the row-major flat index `flat` */
static inline int64_t strided_off(int nd, const int64_t *sh, const int64_t *st, int64_t flat) {
    int64_t off = 0;
    int i;
    for (i = nd - 1; i >= 0; i--) {
        int64_t c = flat % sh[i];
        flat /= sh[i];
        off += c * st[i];
    }
    return off;
}
static inline double *dalloc(int64_t n) {
    return (double *)calloc((size_t)(n > 0 ? n : 1), sizeof(double));
}

/* all elements of t (any strides), row-major, as doubles; caller frees */
static inline double *peek(tc_tensor *t) {
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
static inline void poke(tc_tensor *t, const double *v) {
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
static inline tc_ctx *mkctx(int threads) {
    tc_ctx_options o;
    memset(&o, 0, sizeof o);
    o.num_threads = (threads == 1 && g_threads_override > 0) ? g_threads_override : threads;
    return tc_ctx_create(&o);
}

static inline void shape_str(char *buf, size_t cap, int nd, const int64_t *sh) {
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
static inline tc_tensor *mk_layout(tc_ctx *ctx, tc_dtype dt, int nd, const int64_t *sh,
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
static inline tc_tensor *mk(tc_ctx *ctx, tc_dtype dt, int nd, const int64_t *sh, const double *vals) {
    return mk_layout(ctx, dt, nd, sh, vals, 0);
}
/* Like mk_layout, plus layout 4: an expanded (stride-0) tensor.  For layout 4
 * the values in v are first made constant along some random dims (and a
 * dropped leading dim) — v is updated in place, so compute the reference
 * after this call. */
static inline int64_t bcast_idx(int ond, const int64_t *osh, int64_t flat, int ind, const int64_t *ish);
static inline tc_tensor *mk_any(tc_ctx *ctx, tc_dtype dt, int nd, const int64_t *sh, double *v, int layout) {
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

static inline double *rnd_vals(tc_dtype dt, int64_t n, double lo, double hi) {
    double *v = dalloc(n);
    int64_t i;
    for (i = 0; i < n; i++) {
        if (dt == TC_I32) v[i] = (double)rnd_int((int)lo, (int)hi);
        else if (dt == TC_BOOL) v[i] = (double)rnd_int(0, 1);
        else v[i] = quant(dt, rnd_unif(lo, hi));
    }
    return v;
}

static inline int close_enough(double got, double exp, double atol, double rtol) {
    if (is_nan(exp)) return is_nan(got);
    if (is_nan(got)) return 0;
    if (is_inf(exp) || is_inf(got)) return got == exp;
    return fabs(got - exp) <= atol + rtol * fabs(exp);
}

static inline int check_shape(tc_tensor *t, int nd, const int64_t *sh) {
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
static inline int check_t(tc_tensor *t, tc_dtype dt, int nd, const int64_t *sh,
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
static inline double tol_a(tc_dtype dt) { return dt == TC_F16 ? 1e-3 : dt == TC_BF16 ? 1e-2 : 1e-5; }
static inline double tol_r(tc_dtype dt) { return dt == TC_F16 ? 2e-3 : dt == TC_BF16 ? 1.6e-2 : 1e-4; }

/* row-major flat index into a broadcast input (right-aligned shapes) */
static inline int64_t bcast_idx(int ond, const int64_t *osh, int64_t flat, int ind, const int64_t *ish) {
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
static inline int bcast_shape(int na, const int64_t *a, int nb, const int64_t *b, int *no, int64_t *o) {
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
static inline void rnd_shape(int *nd, int64_t *sh, int maxnd) {
    int i;
    *nd = rnd_int(0, maxnd);
    for (i = 0; i < *nd; i++) sh[i] = rnd_size();
}
static const tc_dtype all_dtypes[5] = {TC_F32, TC_F16, TC_BF16, TC_I32, TC_BOOL};

/* random operand shape broadcastable to (ond, osh) */
static inline void bcast_operand_shape(int ond, const int64_t *osh, int *nd, int64_t *sh) {
    int i;
    *nd = rnd_int(0, ond);
    for (i = 0; i < *nd; i++) sh[i] = rnd_int(0, 2) == 0 ? 1 : osh[ond - *nd + i];
}

/* an operand tensor: random layout, sometimes explicitly expanded to (ond, osh) */
static inline tc_tensor *mk_operand(tc_ctx *ctx, tc_dtype dt, int nd, const int64_t *sh, const double *v,
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
/* References used by several programs                                       */
/* ------------------------------------------------------------------------ */

/* The reference implementations that more than one test_ops_*.c program
 * checks against; those only one program uses stay in that program. */

/* ------------------------------------------------------------------------ */
/* References: permute                                                       */
/* ------------------------------------------------------------------------ */

/* expected values of a permutation of (nd, sh) data */
static inline void ref_permute(int nd, const int64_t *sh, const int *perm, const double *in, double *out) {
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

/* ------------------------------------------------------------------------ */
/* References: reductions                                                    */
/* ------------------------------------------------------------------------ */

enum { R_SUM, R_MEAN, R_MAX, R_MIN, R_ARGMAX, R_VAR0, R_VAR1, R_COUNT_ };
static const char *const red_names[R_COUNT_] = {"sum", "mean", "max", "min", "argmax", "var(c=0)", "var(c=1)"};

static inline tc_tensor *call_red(tc_ctx *ctx, int op, tc_tensor *x, int na, const int *axes, int keep) {
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
static inline int64_t ref_reduce(int op, int nd, const int64_t *sh, const double *v, unsigned mask, int keep,
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

/* ------------------------------------------------------------------------ */
/* References: softmax and norms                                             */
/* ------------------------------------------------------------------------ */

static inline void ref_softmax(int nd, const int64_t *sh, int dim, const double *v, double *out, int logsm) {
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

/* layer_norm (rms = 0) / rms_norm (rms = 1) over the last nnorm dims */
static inline void ref_norm(int nd, const int64_t *sh, int nnorm, const double *v, const double *w, const double *b,
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

/* ------------------------------------------------------------------------ */
/* References: matmul                                                        */
/* ------------------------------------------------------------------------ */

/* torch.matmul reference; returns 0 when the shapes do not fit */
static inline int ref_matmul(int na, const int64_t *sa, const double *va, int nb, const int64_t *sb, const double *vb,
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

static inline void run_matmul_case(tc_ctx *ctx, tc_dtype dt, int na, const int64_t *sa, int nb, const int64_t *sb, int la, int lb) {
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

/* ------------------------------------------------------------------------ */
/* References: conv2d                                                        */
/* ------------------------------------------------------------------------ */

static inline void ref_conv2d(int64_t N, int64_t Cin, int64_t H, int64_t W, const double *x, int64_t Cout, int kh, int kw,
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

/* Reads the environment (above); every program's main calls it first. */
static inline void ops_setup(void) {
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
}
#endif
