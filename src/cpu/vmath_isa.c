/* The executor's vector math, written once over GNU C vector types and
 * instantiated by tools/amalgamate.sh once per ISA level, before the
 * executor (vexec_isa.c), which uses it:
 *   TC__ISA_SFX   name suffix (avx512, avx2, v128, scalar)
 *   TC__ISA_W     lanes of 32 bits (16, 8, 4, 1)
 *   TC__ISA_ATTR  the target attribute (empty for the baseline)
 * Every function here carries the ISA's target attribute, so the compiler
 * lowers the generic vector code to that ISA's registers; the executor picks
 * the instance at run time (cpuid + XGETBV).  Here: the vector types and
 * their primitives, the transcendental functions, and tc__vunary_ /
 * tc__vbinary_, one op on vectors, generated from the pointwise rows
 * (src/ops/optable.h).
 *
 * Accuracy against libm on the tested ranges (tests/test_vexec.c measures
 * it on every ISA level this machine runs; -ffast-math must not be used to
 * compile the implementation): exp, log, tanh: <= 2 ulp; sigmoid: <= 3 ulp
 * (results below FLT_MIN may flush to 0, as 1 / (1 + expf(-x)) does); erf: <= 3
 * ulp for |x| >= 1e-3, <= 2e-7 absolute elsewhere; sin, cos: <= 2e-7
 * absolute for |x| <= 8192, beyond that each lane is computed by libm.  inf,
 * NaN, signed zero and denormals follow libm.
 *
 * The names below (TC__VF, TC__VFN, TC__SPL, ...) stay defined for
 * vexec_isa.c's instances; its last one undefines them. */

#define TC__VF TC__CAT(tc__vf_, TC__ISA_SFX)
#define TC__VI TC__CAT(tc__vi_, TC__ISA_SFX)
#define TC__VU TC__CAT(tc__vu_, TC__ISA_SFX)
#define TC__VFN(name) TC__CAT(name, TC__ISA_SFX)
#define TC__W TC__ISA_W
#define TC__INL static inline TC__ISA_ATTR TC__UNUSED

typedef float TC__VF __attribute__((vector_size(4 * TC__ISA_W)));
typedef int32_t TC__VI __attribute__((vector_size(4 * TC__ISA_W)));
typedef float TC__VU __attribute__((vector_size(4 * TC__ISA_W), aligned(4), may_alias));

/* c in every lane, bit for bit: added to -0 (which leaves every value as
 * it is; +0 would turn a -0 into +0) */
TC__INL TC__VF TC__VFN(tc__vsplat_)(float c) {
    TC__VF v = {0};
    return -v + c;
}
TC__INL TC__VF TC__VFN(tc__vld_)(const float *p) { return *(const TC__VU *)p; }
TC__INL void TC__VFN(tc__vst_)(float *p, TC__VF v) { *(TC__VU *)p = v; }
TC__INL TC__VF TC__VFN(tc__vsel_)(TC__VI m, TC__VF a, TC__VF b) {
    return (TC__VF)(((TC__VI)a & m) | ((TC__VI)b & ~m));
}
/* a * b + c, fused where the ISA has it (the polynomials' inner step) */
TC__INL TC__VF TC__VFN(tc__vfma_)(TC__VF a, TC__VF b, TC__VF c) {
#if TC__ISA_W == 16
    return (TC__VF)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif TC__ISA_W == 8
    return (TC__VF)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
    return a * b + c;
#endif
}
#define TC__SPL(c) TC__VFN(tc__vsplat_)(c)
#define TC__FMA(a, b, c) TC__VFN(tc__vfma_)(a, b, TC__SPL(c))
#define TC__SEL(m, a, b) TC__VFN(tc__vsel_)(m, a, b)
#define TC__LD(p) TC__VFN(tc__vld_)(p)
#define TC__ST(p, v) TC__VFN(tc__vst_)(p, v)
/* The vector math function tc__v<name>_ of this level (the rows' vector
 * expressions name them so: TC__V(exp)(x)) */
#define TC__V(name) TC__VFN(tc__v##name##_)
/* A row's vector expression with a named intermediate: the vector var = e
 * in expression body (a GNU statement expression, as the vector types are
 * GNU C already) */
#define TC__VLET(var, e, body) __extension__({ TC__VF var = (e); body; })
/* fn(a, b) lane by lane, fn a libm function: written over a (a vector
 * variable), which is the value */
#define TC__VLIBM2(fn, a, b)                                                             \
    __extension__({                                                                      \
        int tc__l_;                                                                      \
        for (tc__l_ = 0; tc__l_ < TC__W; tc__l_++) a[tc__l_] = fn(a[tc__l_], b[tc__l_]); \
        a;                                                                               \
    })

TC__INL TC__VF TC__VFN(tc__vabs_)(TC__VF x) { return (TC__VF)((TC__VI)x & 0x7fffffff); }
TC__INL TC__VF TC__VFN(tc__vcopysign_)(TC__VF mag, TC__VF sgn) {
    return (TC__VF)(((TC__VI)mag & 0x7fffffff) | ((TC__VI)sgn & (int32_t)0x80000000u));
}

TC__INL TC__VF TC__VFN(tc__vsqrt_)(TC__VF x) {
#if TC__ISA_W == 16
    return (TC__VF)_mm512_maskz_sqrt_ps((__mmask16)0xFFFF, (__m512)x);
#elif TC__ISA_W == 8
    return (TC__VF)_mm256_sqrt_ps((__m256)x);
#elif TC__ISA_W == 4 && (defined(__x86_64__) || defined(__i386__))
    return (TC__VF)_mm_sqrt_ps((__m128)x);
#else
    int i;
    for (i = 0; i < TC__W; i++) x[i] = sqrtf(x[i]);
    return x;
#endif
}

/* x clamped to [lo, hi], NaN kept: one min and one max where the ISA has
 * them (x86's return their second operand when either is NaN; AVX-512's
 * masked forms, as g++ 12 misreports the unmasked ones' undefined operand) */
TC__INL TC__VF TC__VFN(tc__vclamp_)(TC__VF x, float lo, float hi) {
#if TC__ISA_W == 16
    return (TC__VF)_mm512_maskz_max_ps((__mmask16)0xFFFF, (__m512)TC__SPL(lo),
                                        _mm512_maskz_min_ps((__mmask16)0xFFFF, (__m512)TC__SPL(hi), (__m512)x));
#elif TC__ISA_W == 8
    return (TC__VF)_mm256_max_ps((__m256)TC__SPL(lo), _mm256_min_ps((__m256)TC__SPL(hi), (__m256)x));
#else
    x = TC__SEL(x > hi, TC__SPL(hi), x);
    return TC__SEL(x < lo, TC__SPL(lo), x);
#endif
}

/* 2^n for integer-valued n in [-151, 129], as two factors so that
 * denormal and overflowing results come out as libm's. */
TC__INL TC__VF TC__VFN(tc__vscale_)(TC__VF y, TC__VI n) {
#if TC__ISA_W == 16
    /* n as float through the 1.5 * 2^23 bias (no cvt: g++ 12 misreports its
     * undefined pass-through operand as uninitialised) */
    return (TC__VF)_mm512_maskz_scalef_ps((__mmask16)0xFFFF, (__m512)y, (__m512)((TC__VF)(n + 0x4B400000) - 12582912.0f));
#else
    TC__VI h = n >> 1;
    y = y * (TC__VF)((h + 127) << 23);
    return y * (TC__VF)((n - h + 127) << 23);
#endif
}

#if TC__ISA_W == 16
/* 2^(j/16), j = 0..15, rounded to float: one register, read by a
 * permute */
static const float TC__VFN(tc__vexp2_16_)[16] = {
    1.0f,        1.04427373f, 1.09050775f, 1.13878858f, 1.18920708f, 1.24185777f, 1.29683959f, 1.35425556f,
    1.41421354f, 1.47682619f, 1.54221082f, 1.61049032f, 1.68179286f, 1.75625217f, 1.8340081f,  1.91520655f};
#elif TC__ISA_W == 8
/* 2^(j/8), j = 0..7, rounded to float (the even entries of the above) */
static const float TC__VFN(tc__vexp2_8_)[8] = {1.0f,        1.09050775f, 1.18920708f, 1.29683959f,
                                                 1.41421354f, 1.54221082f, 1.68179286f, 1.8340081f};
#endif

/* exp: x = n ln2 + r (two-part ln2), degree-6 polynomial (Cephes).
 * AVX-512: x = (n / 16) ln2 + r, 2^(n mod 16 / 16) from a 16-entry table
 * (one permute), exp(r) on |r| <= ln2 / 32 by a cubic: two multiply-adds
 * fewer, and the exp-bound kernels (ew, softmax) are FMA-bound on it;
 * <= 1.1 ulp against libm.  AVX2: the
 * same with an 8-entry table.  x is clamped to [lo, 89] first: lo -104
 * gives libm's denormals, TC__EXP_NORMAL_MIN none (tc__vexp_). */
TC__INL TC__VF TC__VFN(tc__vexp_core_)(TC__VF x, float lo) {
    TC__VF t, n, r;
    x = TC__VFN(tc__vclamp_)(x, lo, 89.0f);
#if TC__ISA_W == 16
    {
        TC__VF tb, q;
        t = TC__VFN(tc__vfma_)(x, TC__SPL(16.0f * 1.44269504088896341f), TC__SPL(12582912.0f));
        n = t - 12582912.0f;
        /* ln2 / 16 in two parts, the first exact in a product with n */
        r = TC__VFN(tc__vfma_)(n, TC__SPL(-0.693359375f / 16.0f), x);
        r = TC__VFN(tc__vfma_)(n, TC__SPL(2.12194440e-4f / 16.0f), r);
        /* t's low four bits are n mod 16 (the bias's are zero), the index
         * the permute reads */
        __m512 tbl = _mm512_loadu_ps(TC__VFN(tc__vexp2_16_));
        /* the masked form: the plain one's undefined pass-through trips
         * g++ 12's -Wmaybe-uninitialized once inlined */
        tb = (TC__VF)_mm512_mask_permutexvar_ps(tbl, (__mmask16)0xFFFF, (__m512i)t, tbl);
        q = TC__FMA(r, TC__SPL(1.0f / 6.0f), 0.5f);
        q = TC__FMA(q, r, 1.0f);
        /* tb (1 + r q), and 2^floor(n / 16): scalef floors its exponent */
        return (TC__VF)_mm512_maskz_scalef_ps((__mmask16)0xFFFF, (__m512)TC__VFN(tc__vfma_)(tb * r, q, tb),
                                              (__m512)(n * 0.0625f));
    }
#elif TC__ISA_W == 8
    {
        TC__VF tb, q;
        /* as AVX-512's with n / 8 and 2^(n mod 8 / 8) from an 8-entry table
         * (one vpermps, which reads an index's low three bits), exp(r) on
         * |r| <= ln2 / 16 by a quartic: 8 -> 4 multiply-adds; <= 1 ulp, as
         * the degree-6 one */
        t = TC__VFN(tc__vfma_)(x, TC__SPL(8.0f * 1.44269504088896341f), TC__SPL(12582912.0f));
        n = t - 12582912.0f;
        r = TC__VFN(tc__vfma_)(n, TC__SPL(-0.693359375f / 8.0f), x);
        r = TC__VFN(tc__vfma_)(n, TC__SPL(2.12194440e-4f / 8.0f), r);
        tb = (TC__VF)_mm256_permutevar8x32_ps(_mm256_loadu_ps(TC__VFN(tc__vexp2_8_)), (__m256i)t);
        q = TC__FMA(r, TC__SPL(1.0f / 24.0f), 1.0f / 6.0f);
        q = TC__FMA(q, r, 0.5f);
        q = TC__FMA(q, r, 1.0f);
        /* tb (1 + r q) 2^floor(n / 8): t's bits less the bias are n */
        return TC__VFN(tc__vscale_)(TC__VFN(tc__vfma_)(tb * r, q, tb), ((TC__VI)t - 0x4B400000) >> 3);
    }
#else
    TC__VF p;
    TC__VI ni;
    t = x * 1.44269504088896341f + 12582912.0f; /* round to nearest: 1.5 * 2^23 */
    n = t - 12582912.0f;
    ni = (TC__VI)t - 0x4B400000;
    r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    p = TC__SPL(1.9875691500E-4f);
    p = TC__FMA(p, r, 1.3981999507E-3f);
    p = TC__FMA(p, r, 8.3334519073E-3f);
    p = TC__FMA(p, r, 4.1665795894E-2f);
    p = TC__FMA(p, r, 1.6666665459E-1f);
    p = TC__FMA(p, r, 5.0000001201E-1f);
    /* (p r + 1) r + 1 = p r^2 + r + 1 in two FMAs, not a square, an FMA and
     * an add: the vector ops, not memory, bound the kernels that use it */
    p = TC__FMA(p, r, 1.0f);
    p = TC__FMA(p, r, 1.0f);
    return TC__VFN(tc__vscale_)(p, ni);
#endif
}

/* Whether some lane of x is below c (NaN is not). */
TC__INL int TC__VFN(tc__vany_below_)(TC__VF x, float c) {
#if TC__ISA_W == 16
    return _mm512_cmp_ps_mask((__m512)x, _mm512_set1_ps(c), _CMP_LT_OQ) != 0;
#elif TC__ISA_W == 8
    return _mm256_movemask_ps(_mm256_cmp_ps((__m256)x, _mm256_set1_ps(c), _CMP_LT_OQ)) != 0;
#elif TC__ISA_W == 4 && (defined(__x86_64__) || defined(__i386__))
    return _mm_movemask_ps(_mm_cmplt_ps((__m128)x, _mm_set1_ps(c))) != 0;
#else
    int i, any = 0;
    for (i = 0; i < TC__W; i++) any |= x[i] < c;
    return any;
#endif
}

/* Below this exp is no normal float (ln FLT_MIN, rounded up): a kernel
 * whose exps all lie above it makes no denormal on the way, and Intel's
 * cores take a microcode assist for each instruction that does, which
 * made masked softmax rows several times slower (docs/PERF.md). */
#define TC__EXP_NORMAL_MIN -87.33654f

/* exp, as libm's: the lanes below TC__EXP_NORMAL_MIN are 0, or, where some
 * lie above -104 (a denormal result), those as the clamped polynomial
 * makes them; only then does the vector make denormals. */
TC__INL TC__VF TC__VFN(tc__vexp_)(TC__VF x) {
    TC__VF y = TC__VFN(tc__vexp_core_)(x, TC__EXP_NORMAL_MIN);
    if (TC__VFN(tc__vany_below_)(x, TC__EXP_NORMAL_MIN)) {
        TC__VI lo = x < TC__EXP_NORMAL_MIN, den = lo & (x >= -104.0f);
        y = TC__SEL(lo, TC__SPL(0.0f), y);
        /* any den lane: the others read as 0, which is not below */
        if (TC__VFN(tc__vany_below_)(TC__SEL(den, x, TC__SPL(0.0f)), TC__EXP_NORMAL_MIN))
            y = TC__SEL(den, TC__VFN(tc__vexp_core_)(x, -104.0f), y);
    }
    return y;
}

/* log: x = m 2^e with m in [sqrt(1/2), sqrt(2)), polynomial in m - 1. */
TC__INL TC__VF TC__VFN(tc__vlog_)(TC__VF x0) {
    TC__VI den = (x0 < 1.17549435e-38f) & (x0 > 0.0f), xi, e, small;
    TC__VF x = TC__SEL(den, x0 * 8388608.0f, x0), m, z, y, ef;
    xi = (TC__VI)x;
    e = ((xi >> 23) & 0xff) - 126 - (den & 23);
    m = (TC__VF)((xi & 0x007fffff) | 0x3f000000); /* [0.5, 1) */
    small = m < 0.707106781186547524f;
    e = e + small; /* small is -1 where true */
    m = TC__SEL(small, m + m, m) - 1.0f;
    ef = (TC__VF)(e + 0x4B400000) - 12582912.0f;
    z = m * m;
    y = TC__SPL(7.0376836292E-2f);
    y = y * m - 1.1514610310E-1f;
    y = y * m + 1.1676998740E-1f;
    y = y * m - 1.2420140846E-1f;
    y = y * m + 1.4249322787E-1f;
    y = y * m - 1.6668057665E-1f;
    y = y * m + 2.0000714765E-1f;
    y = y * m - 2.4999993993E-1f;
    y = y * m + 3.3333331174E-1f;
    y = y * m * z;
    y = y + ef * -2.12194440e-4f;
    y = y - 0.5f * z;
    y = m + y + ef * 0.693359375f;
    y = TC__SEL(x0 == INFINITY, x0, y);
    y = TC__SEL(x0 == 0.0f, TC__SPL(-INFINITY), y);
    return TC__SEL((x0 < 0.0f) | (x0 != x0), TC__SPL(NAN), y);
}

/* A ratio gate (TC__RATIO_GATE_OPS) as *n / d, d = 1 + exp(..), the one
 * formula of each that its own value and the products below divide by:
 * sigmoid 1 / (1 + exp(-x)), silu x / (1 + exp(-x)), and gelu_tanh
 * x / (1 + exp(-2u)): 0.5 (1 + tanh(u)) = sigmoid(2u), with -2u = x (-k -
 * k 0.044715 x^2), one exp, one division and no multiply by a reciprocal. */
TC__INL TC__VF TC__VFN(tc__vratio_)(int op, TC__VF x, TC__VF *n) {
    *n = op == TC__OP_SIGMOID ? TC__SPL(1.0f) : x;
    if (op == TC__OP_GELU_TANH)
        return 1.0f + TC__VFN(tc__vexp_core_)(x * TC__FMA(x * x, TC__SPL(-1.59576912160573072f * 0.044715f),
                                                          -1.59576912160573072f),
                                              TC__EXP_NORMAL_MIN);
    return 1.0f + TC__VFN(tc__vexp_core_)(-x, TC__EXP_NORMAL_MIN);
}
TC__INL TC__VF TC__VFN(tc__vratio_value_)(int op, TC__VF x) {
    TC__VF n, d = TC__VFN(tc__vratio_)(op, x, &n);
    return n / d;
}
TC__INL TC__VF TC__VFN(tc__vsigmoid_)(TC__VF x) { return TC__VFN(tc__vratio_value_)(TC__OP_SIGMOID, x); }
/* au(a) * bu(b), au a ratio gate and bu one too (or -1: b as it is).
 * With bu: n_a / (d_a d_b) * n_b, one division where the two passes
 * divide twice; both are within 1.5 ulp of n_a n_b / (d_a d_b), except
 * below 1e-34, where this may lose digits or give 0 (d_a d_b overflows
 * only where |n_a n_b| / (d_a d_b) < 2.3e-35: a large d comes with |n| <
 * 89).  Without bu: exactly the two passes' au(a) * b. */
TC__INL TC__VF TC__VFN(tc__vratio_prod_)(int au, int bu, TC__VF a, TC__VF b) {
    TC__VF na, nb, da = TC__VFN(tc__vratio_)(au, a, &na);
    if (bu < 0) return na / da * b;
    {
        TC__VF db = TC__VFN(tc__vratio_)(bu, b, &nb);
        return na / (da * db) * nb;
    }
}

/* tanh: odd polynomial below 0.625, 1 - 2 / (e^2|x| + 1) above (Cephes). */
TC__INL TC__VF TC__VFN(tc__vtanh_)(TC__VF x) {
    TC__VF ax = TC__VFN(tc__vabs_)(x), z = x * x, s, b;
    s = TC__SPL(-5.70498872745E-3f);
    s = TC__FMA(s, z, 2.06390887954E-2f);
    s = TC__FMA(s, z, -5.37397155531E-2f);
    s = TC__FMA(s, z, 1.33314422036E-1f);
    s = TC__FMA(s, z, -3.33332819422E-1f);
    s = s * z * x + x;
    b = 1.0f - 2.0f / (TC__VFN(tc__vexp_core_)(ax + ax, TC__EXP_NORMAL_MIN) + 1.0f);
    b = TC__VFN(tc__vcopysign_)(b, x);
    return TC__SEL(ax < 0.625f, s, b);
}

/* erf: Taylor series below 0.5; above, 1 - erfc with erfc from a
 * Chebyshev fit of t exp(-x^2 + P(t)), t = 1 / (1 + x/2), relative error
 * under 1.2e-7 (Numerical Recipes' erfcc). */
TC__INL TC__VF TC__VFN(tc__verf_)(TC__VF x) {
    TC__VF ax = TC__VFN(tc__vabs_)(x), z = x * x, s, t, p, b;
    s = TC__SPL(-1.0f / 1320.0f);
    s = s * z + 1.0f / 216.0f;
    s = s * z - 1.0f / 42.0f;
    s = s * z + 1.0f / 10.0f;
    s = s * z - 1.0f / 3.0f;
    s = (s * z + 1.0f) * x * 1.12837916709551257f;
    t = 1.0f / (1.0f + 0.5f * ax);
    p = TC__SPL(0.17087277f);
    p = p * t - 0.82215223f;
    p = p * t + 1.48851587f;
    p = p * t - 1.13520398f;
    p = p * t + 0.27886807f;
    p = p * t - 0.18628806f;
    p = p * t + 0.09678418f;
    p = p * t + 0.37409196f;
    p = p * t + 1.00002368f;
    p = p * t - 1.26551223f;
    b = 1.0f - t * TC__VFN(tc__vexp_core_)(p - z, TC__EXP_NORMAL_MIN); /* 1 - t * tiny: 1 */
    b = TC__SEL(ax > 10.0f, TC__SPL(1.0f), b);
    b = TC__VFN(tc__vcopysign_)(b, x);
    return TC__SEL(ax < 0.5f, s, b);
}

/* sin (cos_shift 0) and cos (1): octant reduction with a three-part pi/4
 * (Cephes), exact below 8192; lanes beyond (and inf, NaN) go to libm. */
TC__INL TC__VF TC__VFN(tc__vsincos_)(TC__VF x, int cos_shift) {
    TC__VF ax = TC__VFN(tc__vabs_)(x), t, y, r, z, ps, pc, res;
    TC__VI j, sign, usec;
    TC__VI huge = ~(ax <= 8192.0f);
    int i, any = 0;
    ax = TC__SEL(huge, TC__SPL(0.0f), ax);
    t = ax * 1.27323954473516f;
    y = (t + 12582912.0f) - 12582912.0f;
    y = TC__SEL(y > t, y - 1.0f, y);                  /* floor(|x| 4/pi) */
    j = (TC__VI)(y + 12582912.0f) - 0x4B400000;
    j = (j + 1) & ~1;                                 /* odd octants move up */
    y = (TC__VF)(j + 0x4B400000) - 12582912.0f;
    r = ((ax - y * 0.78515625f) - y * 2.4187564849853515625e-4f) - y * 3.77489497744594108e-8f;
    j = j + cos_shift * 2;
    sign = (j & 4) != 0;
    if (!cos_shift) sign = sign ^ ((TC__VI)x < 0);
    usec = (j & 2) != 0;
    z = r * r;
    ps = TC__SPL(-1.9515295891E-4f);
    ps = ps * z + 8.3321608736E-3f;
    ps = ps * z - 1.6666654611E-1f;
    ps = ps * z * r + r;
    pc = TC__SPL(2.443315711809948E-5f);
    pc = pc * z - 1.388731625493765E-3f;
    pc = pc * z + 4.166664568298827E-2f;
    pc = pc * z * z - 0.5f * z + 1.0f;
    res = TC__SEL(usec, pc, ps);
    res = TC__SEL(sign, -res, res);
    for (i = 0; i < TC__W; i++) any |= huge[i];
    if (any)
        for (i = 0; i < TC__W; i++)
            if (huge[i]) res[i] = cos_shift ? cosf(x[i]) : sinf(x[i]);
    return res;
}

/* floor for |x| < 2^23 by rounding through 2^23; larger, inf and NaN are
 * already integers (or NaN) and pass through. */
TC__INL TC__VF TC__VFN(tc__vfloor_)(TC__VF x) {
    TC__VF ax = TC__VFN(tc__vabs_)(x), r;
    r = (ax + 8388608.0f) - 8388608.0f;
    r = TC__VFN(tc__vcopysign_)(r, x);
    r = TC__SEL(r > x, r - 1.0f, r);
    return TC__SEL(ax < 8388608.0f, r, x);
}

/* log1p(u) as log(1 + u) corrected by u / ((1 + u) - 1) (Goldberg). */
TC__INL TC__VF TC__VFN(tc__vlog1p_)(TC__VF u) {
    TC__VF w = 1.0f + u, d = w - 1.0f, lw = TC__VFN(tc__vlog_)(w);
    TC__VF l = lw * (u / TC__SEL(d == 0.0f, TC__SPL(1.0f), d));
    l = TC__SEL(w == INFINITY, lw, l);
    return TC__SEL(d == 0.0f, u, l);
}

/* One elementwise op, with the same formula as the eager kernel: the
 * vector column of the op's row (optable.h), on operand x (a and b for a
 * binary op); p0, p1 are the op's attributes (softplus, clamp). */
TC__INL TC__VF TC__VFN(tc__vunary_)(int op, TC__VF x, float p0, float p1) {
    TC__OTHER_OPS_CHECK(41); /* clone and cast: x as it is */
    switch (op) {
#define TC__VUNARY_(ID, name, cost, i, f, v) case TC__OP_##ID: return v;
        TC__UNARY_OPS(TC__VUNARY_)
        TC__UNARY_ATTR_OPS(TC__VUNARY_)
#undef TC__VUNARY_
    case TC__OP_CLONE:
    case TC__OP_CAST:
    default: return x;
    }
}

TC__INL TC__VF TC__VFN(tc__vbinary_)(int op, TC__VF a, TC__VF b) {
    switch (op) {
#define TC__VBINARY_(ID, name, cost, i, f, v) case TC__OP_##ID: return v;
        TC__BINARY_OPS(TC__VBINARY_)
        TC__COMPARE_OPS(TC__VBINARY_)
#undef TC__VBINARY_
    default: return a;
    }
}

/* Elementwise math over an array (tests measure accuracy through it). */
static TC__ISA_ATTR TC__UNUSED void TC__VFN(tc__vmath_)(int op, const float *x, float *y, int64_t n, float p0, float p1) {
    int64_t i;
    float tmp[TC__W];
    for (i = 0; i + TC__W <= n; i += TC__W) TC__ST(y + i, TC__VFN(tc__vunary_)(op, TC__LD(x + i), p0, p1));
    if (i < n) {
        int64_t k;
        for (k = 0; k < TC__W; k++) tmp[k] = i + k < n ? x[i + k] : 0.0f;
        TC__ST(tmp, TC__VFN(tc__vunary_)(op, TC__LD(tmp), p0, p1));
        for (k = 0; i + k < n; k++) y[i + k] = tmp[k];
    }
}
