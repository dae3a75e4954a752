/* Hand-written references for bench.c: the workloads' math as a C
 * programmer would write it by hand for one SIMD level, each value kept in
 * registers from load to store, with the library's own vector math (so the
 * two differ only in how the code is run, not in what it computes).
 * Included once per ISA level with REF_SFX (tc__vf_ suffix), REF_W (lanes)
 * and REF_ATTR (target attribute) defined. */

#define REF_CAT2(a, b) a##b
#define REF_CAT(a, b) REF_CAT2(a, b)
#define RV REF_CAT(tc__vf_, REF_SFX)
#define RFN(name) REF_CAT(name, REF_SFX)
#define RLD(p) RFN(tc__vld_)(p)
#define RST(p, v) RFN(tc__vst_)(p, v)

/* ew: y = gelu_tanh(x * 1.5 + 0.25) * sigmoid(x) over [b, e) */
REF_ATTR static void RFN(ref_ew_)(const float *x, float *y, int64_t b, int64_t e) {
    int64_t i;
    for (i = b; i + REF_W <= e; i += REF_W) {
        RV v = RLD(x + i), u = v * 1.5f + 0.25f;
        RST(y + i, RFN(tc__vunary_)(TC__OP_GELU_TANH, u, 0, 0) * RFN(tc__vunary_)(TC__OP_SIGMOID, v, 0, 0));
    }
    for (; i < e; i++) {
        float u = x[i] * 1.5f + 0.25f;
        y[i] = u / (1.0f + expf(-1.59576912160573072f * (u + 0.044715f * u * u * u))) / (1.0f + expf(-x[i]));
    }
}

REF_ATTR static float RFN(ref_hsum_)(RV a) {
    float s = 0;
    int i;
    for (i = 0; i < REF_W; i++) s += a[i];
    return s;
}

/* softmax_ln, rows [b, e) of n floats (n a multiple of REF_W): five passes
 * over a row held in the two row buffers l0, l1, as layer_norm(softmax(x) *
 * 2 + x) needs them: max, exp and sum, scale-add and sum, centre and sum of
 * squares, normalise. */
REF_ATTR static void RFN(ref_softmax_ln_)(const float *x0, float *y0, int64_t n, int64_t b, int64_t e, float *l0,
                                          float *l1) {
    int64_t r, i;
    for (r = b; r < e; r++) {
        const float *x = x0 + r * n;
        float *y = y0 + r * n;
        RV m = RLD(x), s = m - m, s2 = s, s3 = s;
        float mx = -INFINITY, sum, mean, rstd;
        for (i = REF_W; i < n; i += REF_W) {
            RV v = RLD(x + i);
            m = RFN(tc__vsel_)(v > m, v, m);
        }
        for (i = 0; i < REF_W; i++) mx = m[i] > mx ? m[i] : mx;
        for (i = 0; i < n; i += REF_W) {
            RV t = RFN(tc__vunary_)(TC__OP_EXP, RLD(x + i) - mx, 0, 0);
            RST(l0 + i, t);
            s += t;
        }
        sum = RFN(ref_hsum_)(s);
        for (i = 0; i < n; i += REF_W) {
            RV t = RLD(l0 + i) / sum * 2.0f + RLD(x + i);
            RST(l1 + i, t);
            s2 += t;
        }
        mean = RFN(ref_hsum_)(s2) / (float)n;
        for (i = 0; i < n; i += REF_W) {
            RV d = RLD(l1 + i) - mean;
            RST(l1 + i, d);
            s3 += d * d;
        }
        rstd = 1.0f / sqrtf(RFN(ref_hsum_)(s3) / (float)n + 1e-5f);
        for (i = 0; i < n; i += REF_W) RST(y + i, RLD(l1 + i) * rstd);
    }
}

#undef RV
#undef RFN
#undef RLD
#undef RST
#undef REF_SFX
#undef REF_W
#undef REF_ATTR
