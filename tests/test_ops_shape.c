/* test_ops_shape.c: shape ops against references in plain C: reshape,
 * permute/transpose, slice/select, expand, (un)squeeze/flatten, concat,
 * split/chunk, pad, embedding/index_select/gather, and non-f32 dtypes
 * through the ops that keep the input dtype.  Helpers, conventions,
 * environment and how to build: ops_common.h. */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"
#include "tc_test.h"
#include "ops_common.h"

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
/* Dtypes                                                                    */
/* ------------------------------------------------------------------------ */

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

int main(void) {
    ops_setup();
    TC_RUN(test_reshape);
    TC_RUN(test_permute_transpose);
    TC_RUN(test_slice_select);
    TC_RUN(test_expand);
    TC_RUN(test_squeeze_unsqueeze_flatten);
    TC_RUN(test_concat);
    TC_RUN(test_split_chunk);
    TC_RUN(test_pad);
    TC_RUN(test_embedding_index_select_gather);
    TC_RUN(test_dtype_coverage);
    return TC_TEST_SUMMARY();
}
