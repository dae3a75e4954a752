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

/* ew: y = gelu_tanh(x * 1.5 + 0.25) * sigmoid(x) over [b, e); nt: the
 * output streams past the caches (the library's rule: a result of
 * TC__NT_STORE_BYTES and more, so neither side pays a read for ownership
 * the other does not) */
REF_ATTR static void RFN(ref_ew_)(const float *x, float *y, int64_t b, int64_t e, int nt) {
    int64_t i;
    for (i = b; i < e && ((uintptr_t)(y + i) % (4 * REF_W)) != 0; i++) {
        float u = x[i] * 1.5f + 0.25f;
        y[i] = u / (1.0f + expf(-1.59576912160573072f * (u + 0.044715f * u * u * u))) / (1.0f + expf(-x[i]));
    }
    for (; i + REF_W <= e; i += REF_W) {
        RV v = RLD(x + i), u = v * 1.5f + 0.25f;
        RFN(tc__vput_)(y + i, RFN(tc__vunary_)(TC__OP_GELU_TANH, u, 0, 0) * RFN(tc__vunary_)(TC__OP_SIGMOID, v, 0, 0), nt);
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

/* softmax_ln, rows [b, e) of n floats (n a multiple of 2 REF_W, rows
 * aligned to a vector): five passes over a row held in the two row
 * buffers l0, l1, as layer_norm(softmax(x) * 2 + x) needs them: max, exp
 * and sum, scale-add and sum, centre and sum of squares, normalise (the
 * output streamed when nt).  Written as a careful C programmer would: the
 * max over four vectors a step with an accumulator each and the sums over
 * two (one chain would bound them at its latency), a multiply by 2 / sum,
 * not a division a vector, and the next row's lines fetched while this
 * one's exp pass computes (only the max pass walks the input in order, so
 * the hardware's stream prefetcher stops short of the next row).  With
 * the four max chains and the fetch it runs 12-15% faster than with two
 * and none (make bench, 2 threads, Zen 5). */
REF_ATTR static void RFN(ref_softmax_ln_)(const float *x0, float *y0, int64_t n, int64_t b, int64_t e, float *l0,
                                          float *l1, int nt) {
    int64_t r, i;
    for (r = b; r < e; r++) {
        const float *x = x0 + r * n;
        const char *next = r + 1 < e ? (const char *)(x + n) : NULL;
        float *y = y0 + r * n;
        RV m0 = RLD(x), m1 = m0, m2 = m0, m3 = m0, z = m0 - m0, s0 = z, s1 = z, mv, cv;
        float mx = -INFINITY, mean, rstd;
        for (i = 0; i + 4 * REF_W <= n; i += 4 * REF_W) {
            RV v0 = RLD(x + i), v1 = RLD(x + i + REF_W), v2 = RLD(x + i + 2 * REF_W), v3 = RLD(x + i + 3 * REF_W);
            m0 = RFN(tc__vsel_)(v0 > m0, v0, m0);
            m1 = RFN(tc__vsel_)(v1 > m1, v1, m1);
            m2 = RFN(tc__vsel_)(v2 > m2, v2, m2);
            m3 = RFN(tc__vsel_)(v3 > m3, v3, m3);
        }
        for (; i < n; i += 2 * REF_W) {
            RV v0 = RLD(x + i), v1 = RLD(x + i + REF_W);
            m0 = RFN(tc__vsel_)(v0 > m0, v0, m0);
            m1 = RFN(tc__vsel_)(v1 > m1, v1, m1);
        }
        m0 = RFN(tc__vsel_)(m1 > m0, m1, m0);
        m2 = RFN(tc__vsel_)(m3 > m2, m3, m2);
        m0 = RFN(tc__vsel_)(m2 > m0, m2, m0);
        for (i = 0; i < REF_W; i++) mx = m0[i] > mx ? m0[i] : mx;
        mv = z + mx;
        for (i = 0; i < n; i += 2 * REF_W) {
            RV t0 = RFN(tc__vunary_)(TC__OP_EXP, RLD(x + i) - mv, 0, 0);
            RV t1 = RFN(tc__vunary_)(TC__OP_EXP, RLD(x + i + REF_W) - mv, 0, 0);
            int64_t q;
            /* this step's two vectors' bytes of the next row */
            for (q = 0; next && q < 2 * REF_W * (int64_t)sizeof(float); q += 64)
                tc__prefetch(next + i * (int64_t)sizeof(float) + q);
            RST(l0 + i, t0);
            RST(l0 + i + REF_W, t1);
            s0 += t0;
            s1 += t1;
        }
        cv = z + 2.0f / RFN(ref_hsum_)(s0 + s1);
        s0 = s1 = z;
        for (i = 0; i < n; i += 2 * REF_W) {
            RV t0 = RLD(l0 + i) * cv + RLD(x + i), t1 = RLD(l0 + i + REF_W) * cv + RLD(x + i + REF_W);
            RST(l1 + i, t0);
            RST(l1 + i + REF_W, t1);
            s0 += t0;
            s1 += t1;
        }
        mean = RFN(ref_hsum_)(s0 + s1) / (float)n;
        mv = z + mean;
        s0 = s1 = z;
        for (i = 0; i < n; i += 2 * REF_W) {
            RV d0 = RLD(l1 + i) - mv, d1 = RLD(l1 + i + REF_W) - mv;
            RST(l1 + i, d0);
            RST(l1 + i + REF_W, d1);
            s0 += d0 * d0;
            s1 += d1 * d1;
        }
        rstd = 1.0f / sqrtf(RFN(ref_hsum_)(s0 + s1) / (float)n + 1e-5f);
        mv = z + rstd;
        for (i = 0; i < n; i += REF_W) RFN(tc__vput_)(y + i, RLD(l1 + i) * mv, nt);
    }
}

#undef RV
#undef RFN
#undef RLD
#undef RST
#undef REF_SFX
#undef REF_W
#undef REF_ATTR
