/* The executor's inner loop: the tile interpreter (tc__vm_tile_) and the
 * pre-decoded steps (tc__vsteps_), written once over GNU C vector types and
 * instantiated by tools/amalgamate.sh once per ISA level (TC__ISA_SFX,
 * TC__ISA_W, TC__ISA_ATTR, as vmath_isa.c), after the vector math of
 * vmath_isa.c, whose types, primitives and functions it uses. */

/* d[0..m) vectors <- VAL (an expression of i), the store kind and whether
 * operand a has a prologue chosen once per tile rather than per vector:
 * each loop is compiled with tc__pro_c a constant, so a kernel without
 * prologues pays no identity multiply-add per vector (one vector op in
 * twenty of an exp, one in two of a plain multiply) */
#define TC__RUN_(VAL)                                                          \
    do {                                                                       \
        if (ntd)                                                               \
            for (i = 0; i < m; i++) TC__VFN(tc__vput_)(d + i * TC__W, VAL, 1); \
        else                                                                   \
            for (i = 0; i < m; i++) TC__ST(d + i * TC__W, VAL);                \
    } while (0)
#if TC__ISA_COMPACT
/* A compact level (TC__ISA_COMPACT: one that runs only where no wider one
 * does, or when forced) has one loop for all four: the prologue always
 * applied (1 and -0 leave a value as it is) and the store kind chosen per
 * vector.  Same results (x * 1 + -0 is x exactly; only a caller who set
 * flush-to-zero would see a denormal flushed here and kept at a full
 * level), a quarter of the loops to compile. */
#define TC__RUN(VAL)                                                           \
    do {                                                                       \
        enum { tc__pro_c = 1 };                                                \
        (void)pro;                                                             \
        for (i = 0; i < m; i++) TC__VFN(tc__vput_)(d + i * TC__W, VAL, ntd);   \
    } while (0)
#else
#define TC__RUN(VAL)                  \
    do {                              \
        if (pro) {                    \
            enum { tc__pro_c = 1 };   \
            TC__RUN_(VAL);            \
        } else {                      \
            enum { tc__pro_c = 0 };   \
            TC__RUN_(VAL);            \
        }                             \
    } while (0)
#endif

/* TC__RUN with the next instruction's sum or sum of squares taken as each
 * vector is stored (tc__vrun_acc_): into a0..a3 in the order
 * tc__vacc_ takes them (vector i into a[i % 4], the rest into a0), so the
 * sums are bit for bit the separate pass's, without reading the tile back */
#define TC__RUNA_(VAL, F)                                                  \
    do {                                                                   \
        TC__VF v_, c0_ = a0, c1_ = a1, c2_ = a2, c3_ = a3;                 \
        for (i = 0; i + 4 <= m;) {                                         \
            v_ = VAL;                                                      \
            TC__ST(d + i++ * TC__W, v_);                                   \
            c0_ = F(c0_, v_);                                              \
            v_ = VAL;                                                      \
            TC__ST(d + i++ * TC__W, v_);                                   \
            c1_ = F(c1_, v_);                                              \
            v_ = VAL;                                                      \
            TC__ST(d + i++ * TC__W, v_);                                   \
            c2_ = F(c2_, v_);                                              \
            v_ = VAL;                                                      \
            TC__ST(d + i++ * TC__W, v_);                                   \
            c3_ = F(c3_, v_);                                              \
        }                                                                  \
        for (; i < m; i++) {                                               \
            v_ = VAL;                                                      \
            TC__ST(d + i * TC__W, v_);                                     \
            c0_ = F(c0_, v_);                                              \
        }                                                                  \
        a0 = c0_, a1 = c1_, a2 = c2_, a3 = c3_;                            \
    } while (0)
#define TC__RUNA_SQ_(VAL)                                  \
    do {                                                   \
        if (fsq) TC__RUNA_(VAL, TC__VACC_SUMSQ);           \
        else TC__RUNA_(VAL, TC__VACC_SUM);                 \
    } while (0)
#define TC__RUNA(VAL)                 \
    do {                              \
        if (pro) {                    \
            enum { tc__pro_c = 1 };   \
            TC__RUNA_SQ_(VAL);        \
        } else {                      \
            enum { tc__pro_c = 0 };   \
            TC__RUNA_SQ_(VAL);        \
        }                             \
    } while (0)

/* operand a's vector j, with its affine prologue (see tc__vm_tile_): in a
 * TC__RUN, and once outside one */
#define TC__A(j) (tc__pro_c ? TC__VFN(tc__vfma_)(TC__LD(a + (j) * sa), sv, tv) : TC__LD(a + (j) * sa))
#define TC__A1(j) (pro ? TC__VFN(tc__vfma_)(TC__LD(a + (j) * sa), sv, tv) : TC__LD(a + (j) * sa))

/* A computed vector to its destination: streamed past the caches when the
 * destination is a large result written straight from the op. */
TC__INL void TC__VFN(tc__vput_)(float *p, TC__VF v, int nt) {
#if (TC__ISA_W == 16 || TC__ISA_W == 8 || TC__ISA_W == 4) && defined(TC__HAVE_VEXEC_X86)
    if (nt) {
#if TC__ISA_W == 16
        _mm512_stream_ps(p, (__m512)v);
#elif TC__ISA_W == 8
        _mm256_stream_ps(p, (__m256)v);
#else
        _mm_stream_ps(p, (__m128)v);
#endif
        return;
    }
#else
    (void)nt;
#endif
    TC__ST(p, v);
}

#if defined(TC__HAVE_VEXEC_X86) && TC__ISA_W >= 4
#define TC__HAVE_VTR_BLOCK 1
/* W vectors of W floats, vector r from src[r], transposed in registers
 * (its own inverse) and vector c written to dst[c] for c < ndst: the rows
 * of a group's W x W block to its columns and back.  Within 128-bit
 * chunks first (v[4g + c] then holds, in chunk q, column 4q + c of rows
 * 4g..4g+3), then the chunks themselves.  One function with its loads and
 * stores, so the block stays in registers. */
static TC__ISA_ATTR TC__UNUSED void TC__VFN(tc__vtr_block_)(const float *const *src, float *const *dst, int ndst) {
    /* every step written out with constant indices: as loops over arrays
     * the block went through the stack, at half the path's time */
#define TC__R4_(M) M(0) M(1) M(2) M(3)
#define TC__R8_(M) TC__R4_(M) M(4) M(5) M(6) M(7)
#define TC__R16_(M) TC__R8_(M) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)
#if TC__ISA_W == 16
#define TC__VT_V_ __m512
#define TC__VT_PD_ __m512d
#define TC__VT_(op) _mm512_##op
#define TC__VT_RN_ TC__R16_
/* masked forms: g++ 12 misreports the unmasked unpacks' undefined
 * pass-through operand as uninitialised */
#define TC__VT_UPS_(hl, a, b) _mm512_maskz_unpack##hl##_ps((__mmask16)0xFFFF, a, b)
#define TC__VT_UPD_(hl, a, b) _mm512_maskz_unpack##hl##_pd((__mmask8)0xFF, a, b)
#elif TC__ISA_W == 8
#define TC__VT_V_ __m256
#define TC__VT_PD_ __m256d
#define TC__VT_(op) _mm256_##op
#define TC__VT_RN_ TC__R8_
#else
#define TC__VT_V_ __m128
#define TC__VT_PD_ __m128d
#define TC__VT_(op) _mm_##op
#define TC__VT_RN_ TC__R4_
#endif
#ifndef TC__VT_UPS_
#define TC__VT_UPS_(hl, a, b) TC__VT_(unpack##hl##_ps)(a, b)
#define TC__VT_UPD_(hl, a, b) TC__VT_(unpack##hl##_pd)(a, b)
#endif
    TC__VT_V_ v[TC__W], a[TC__W];
    int r;
#define TC__VT_LD_(i) v[i] = (TC__VT_V_)TC__LD(src[i]);
#define TC__VT_PS_(g)                                     \
    a[2 * g] = TC__VT_UPS_(lo, v[2 * g], v[2 * g + 1]);    \
    a[2 * g + 1] = TC__VT_UPS_(hi, v[2 * g], v[2 * g + 1]);
#define TC__VT_PDS_(g)                                                                                       \
    v[4 * g] = TC__VT_(castpd_ps)(TC__VT_UPD_(lo, TC__VT_(castps_pd)(a[4 * g]), TC__VT_(castps_pd)(a[4 * g + 2])));     \
    v[4 * g + 1] = TC__VT_(castpd_ps)(TC__VT_UPD_(hi, TC__VT_(castps_pd)(a[4 * g]), TC__VT_(castps_pd)(a[4 * g + 2]))); \
    v[4 * g + 2] = TC__VT_(castpd_ps)(TC__VT_UPD_(lo, TC__VT_(castps_pd)(a[4 * g + 1]), TC__VT_(castps_pd)(a[4 * g + 3]))); \
    v[4 * g + 3] = TC__VT_(castpd_ps)(TC__VT_UPD_(hi, TC__VT_(castps_pd)(a[4 * g + 1]), TC__VT_(castps_pd)(a[4 * g + 3])));
    TC__VT_RN_(TC__VT_LD_)
    /* pairs of rows: W / 2 of them */
    TC__VT_PS_(0) TC__VT_PS_(1)
#if TC__ISA_W >= 8
    TC__VT_PS_(2) TC__VT_PS_(3)
#endif
#if TC__ISA_W == 16
    TC__VT_PS_(4) TC__VT_PS_(5) TC__VT_PS_(6) TC__VT_PS_(7)
#endif
#if TC__ISA_W == 16
    TC__R4_(TC__VT_PDS_)
    /* The full-mask maskz form: gcc's unmasked one merges into _mm512_undefined_ps and -Wmaybe-uninitialized rejects it under C++. */
#define TC__VT_SH_(a, b, imm) _mm512_maskz_shuffle_f32x4((__mmask16)0xFFFF, a, b, imm)
    /* column 4q + c: chunk q of v[c], v[4 + c], v[8 + c], v[12 + c] */
#define TC__VT_CH_(c)                                                                 \
    {                                                                                 \
        __m512 t0 = TC__VT_SH_(v[c], v[4 + c], 0x44);                       \
        __m512 t1 = TC__VT_SH_(v[c], v[4 + c], 0xEE);                       \
        __m512 t2 = TC__VT_SH_(v[8 + c], v[12 + c], 0x44);                  \
        __m512 t3 = TC__VT_SH_(v[8 + c], v[12 + c], 0xEE);                  \
        a[c] = TC__VT_SH_(t0, t2, 0x88);                                    \
        a[4 + c] = TC__VT_SH_(t0, t2, 0xDD);                                \
        a[8 + c] = TC__VT_SH_(t1, t3, 0x88);                                \
        a[12 + c] = TC__VT_SH_(t1, t3, 0xDD);                               \
    }
    TC__R4_(TC__VT_CH_)
#undef TC__VT_CH_
#undef TC__VT_SH_
#elif TC__ISA_W == 8
    TC__VT_PDS_(0) TC__VT_PDS_(1)
    /* column 4q + c: chunk q of v[c], v[4 + c] */
#define TC__VT_CH_(c)                                                 \
    a[c] = _mm256_permute2f128_ps(v[c], v[4 + c], 0x20);            \
    a[4 + c] = _mm256_permute2f128_ps(v[c], v[4 + c], 0x31);
    TC__R4_(TC__VT_CH_)
#undef TC__VT_CH_
#else
    TC__VT_PDS_(0)
#define TC__VT_CH_(c) a[c] = v[c];
    TC__R4_(TC__VT_CH_)
#undef TC__VT_CH_
#endif
    for (r = 0; r < ndst; r++) TC__ST(dst[r], (TC__VF)a[r]);
#undef TC__VT_LD_
#undef TC__VT_PS_
#undef TC__VT_PDS_
#undef TC__VT_V_
#undef TC__VT_PD_
#undef TC__VT_
#undef TC__VT_RN_
#undef TC__VT_UPS_
#undef TC__VT_UPD_
#undef TC__R4_
#undef TC__R8_
#undef TC__R16_
}
#endif

/* Rows across lanes (tc__vst.tr): access k over the group's trl columns
 * into buf, column j's vector at buf + j * W with lane r from lane r's
 * row.  An access with stride 0 along the row is one value per row: one
 * vector, in uv (*uni set); one the rows share (a norm's weight) is a
 * splat per column. */
static TC__ISA_ATTR TC__UNUSED __attribute__((noinline)) const float *TC__VFN(tc__vtr_load_)(tc__vst *s, int k, float *buf,
                                                                                           float *uv, int *uni) {
    char *const *lp = s->lp[k];
    int64_t st = s->stride[k];
    int j, r, same = 1, dt = s->dt[k] & ~TC__VST_LANES;
    *uni = st == 0;
    if (st == 0) {
        for (r = 0; r < TC__W; r++) uv[r] = dt == TC_F32 ? *(const float *)lp[r] : (float)tc__load(lp[r], (tc_dtype)dt, 0);
        return uv;
    }
    for (r = 1; r < TC__W; r++) same &= lp[r] == lp[0];
    if (same) {
        for (j = 0; j < s->trl; j++)
            TC__ST(buf + j * TC__W, TC__SPL(dt == TC_F32 ? ((const float *)lp[0])[j * st]
                                                         : (float)tc__load(lp[0], (tc_dtype)dt, j * st)));
        return buf;
    }
    j = 0;
#ifdef TC__HAVE_VTR_BLOCK
    if (dt == TC_F32 && st == 1) /* whole blocks of W columns in registers */
        for (; j + TC__W <= s->trl; j += TC__W) {
            const float *src[TC__W];
            float *dst[TC__W];
            for (r = 0; r < TC__W; r++) {
                src[r] = (const float *)lp[r] + j;
                dst[r] = buf + (j + r) * TC__W;
            }
            TC__VFN(tc__vtr_block_)(src, dst, TC__W);
        }
#endif
    for (r = 0; r < TC__W; r++) {
        int j0 = j;
        if (dt == TC_F32) {
            const float *p = (const float *)lp[r];
            for (j = j0; j < s->trl; j++) buf[j * TC__W + r] = p[j * st];
        } else {
            for (j = j0; j < s->trl; j++) buf[j * TC__W + r] = (float)tc__load(lp[r], (tc_dtype)dt, j * st);
        }
        j = j0;
    }
    return buf;
}

/* The group's rows of access k from v (laid out as tc__vtr_load_ reads). */
static TC__ISA_ATTR TC__UNUSED __attribute__((noinline)) void TC__VFN(tc__vtr_store_)(tc__vst *s, int k, const float *v) {
    int64_t st = s->stride[k];
    int j = 0, j0, r, dt = s->dt[k] & ~TC__VST_LANES;
#ifdef TC__HAVE_VTR_BLOCK
    if (dt == TC_F32 && st == 1)
        for (; j + TC__W <= s->trl; j += TC__W) {
            const float *src[TC__W];
            float *dst[TC__W];
            for (r = 0; r < TC__W; r++) {
                src[r] = v + (j + r) * TC__W;
                dst[r] = (float *)s->lp[k][r] + j;
            }
            TC__VFN(tc__vtr_block_)(src, dst, s->trn);
        }
#endif
    for (j0 = j, r = 0; r < s->trn; r++) {
        char *p = s->lp[k][r];
        if (dt == TC_F32) {
            float *fp = (float *)p;
            for (j = j0; j < s->trl; j++) fp[j * st] = v[j * TC__W + r];
        } else {
            for (j = j0; j < s->trl; j++) tc__store(p, (tc_dtype)dt, j * st, v[j * TC__W + r]);
        }
    }
}

/* Loads `len` elements of access k into a tile, zero past len up to the
 * vector boundary.  Contiguous f32 is read in place when whole vectors. */
TC__INL const float *TC__VFN(tc__vload_)(tc__vst *s, int k, float *buf, int len) {
    const char *p = s->ptr[k];
    int64_t st = s->stride[k];
    int i, nv = (len + TC__W - 1) / TC__W;
    if (s->dt[k] == TC_F32 && st == 1) {
        if (len % TC__W == 0) return (const float *)p;
#if TC__ISA_W == 16
        memcpy(buf, p, sizeof(float) * (size_t)(len / 16 * 16));
        _mm512_storeu_ps(buf + len / 16 * 16,
                         _mm512_maskz_loadu_ps((__mmask16)((1u << (len % 16)) - 1), (const float *)p + len / 16 * 16));
#else
        memcpy(buf, p, sizeof(float) * (size_t)len);
        for (i = len; i < nv * TC__W; i++) buf[i] = 0.0f;
#endif
        return buf;
    }
    if (st == 0) {
        float v = s->dt[k] == TC_F32 ? *(const float *)p : (float)tc__load(p, (tc_dtype)s->dt[k], 0);
        TC__VF sv = TC__SPL(v);
        for (i = 0; i < nv; i++) TC__ST(buf + i * TC__W, sv);
        return buf;
    }
    if (s->dt[k] == TC_F32) {
        const float *fp = (const float *)p;
        for (i = 0; i < len; i++) buf[i] = fp[(int64_t)i * st];
    } else {
        for (i = 0; i < len; i++) buf[i] = (float)tc__load(p, (tc_dtype)s->dt[k], (int64_t)i * st);
    }
    for (i = len; i < nv * TC__W; i++) buf[i] = 0.0f;
    return buf;
}

TC__INL void TC__VFN(tc__vstore_)(tc__vst *s, int k, const float *v, int len) {
    char *p = s->ptr[k];
    int64_t st = s->stride[k];
    int i;
    if (s->dt[k] == TC_F32 && st == 1) {
        float *fp = (float *)p;
        i = 0;
#if (TC__ISA_W == 16 || TC__ISA_W == 8 || TC__ISA_W == 4) && defined(TC__HAVE_VEXEC_X86)
        if (s->nt[k] && ((uintptr_t)fp % (4 * TC__W)) == 0) {
            for (; i + TC__W <= len; i += TC__W)
#if TC__ISA_W == 16
                _mm512_stream_ps(fp + i, (__m512)TC__LD(v + i));
#elif TC__ISA_W == 8
                _mm256_stream_ps(fp + i, (__m256)TC__LD(v + i));
#else
                _mm_stream_ps(fp + i, (__m128)TC__LD(v + i));
#endif
        }
#endif
        for (; i + TC__W <= len; i += TC__W) TC__ST(fp + i, TC__LD(v + i));
#if TC__ISA_W == 16
        if (i < len) _mm512_mask_storeu_ps(fp + i, (__mmask16)((1u << (len - i)) - 1), _mm512_loadu_ps(v + i));
#else
        for (; i < len; i++) fp[i] = v[i];
#endif
        return;
    }
    if (s->dt[k] == TC_F32) {
        float *fp = (float *)p;
        for (i = 0; i < len; i++) fp[(int64_t)i * st] = v[i];
        return;
    }
    if (s->dt[k] == TC_BOOL) {
        unsigned char *bp = (unsigned char *)p;
        for (i = 0; i < len; i++) bp[(int64_t)i * st] = v[i] != 0.0f;
        return;
    }
    for (i = 0; i < len; i++) tc__store(p, (tc_dtype)s->dt[k], (int64_t)i * st, v[i]);
}

/* Combines a register's len values into the accumulator (4 vectors, kept
 * in registers over the tile: an accumulation costs one load per vector);
 * lanes past len leave it as it is. */
#define TC__VACC_SUM(a, v) ((a) + (v))
#define TC__VACC_MAX(a, v) TC__SEL(((v) > (a)) | ((v) != (v)), v, a)
#define TC__VACC_MIN(a, v) TC__SEL(((v) < (a)) | ((v) != (v)), v, a)
#define TC__VACC_SUMSQ(a, v) TC__VFN(tc__vfma_)(v, v, a)
#define TC__VACC_SUMSQ_LO(a, v) TC__VFN(tc__vacc_sumsq_lo_)(a, v)
TC__INL TC__VF TC__VFN(tc__vacc_sumsq_lo_)(TC__VF a, TC__VF v) {
    TC__VF t = v * TC__SPL(TC__SUMSQ_LO);
    return TC__VFN(tc__vfma_)(t, t, a);
}
#define TC__VACC_LOOP(F)                                                                          \
    for (; i + 4 <= nv; i += 4) {                                                                 \
        a0 = F(a0, TC__LD(x + i * TC__W));                                                        \
        a1 = F(a1, TC__LD(x + (i + 1) * TC__W));                                                  \
        a2 = F(a2, TC__LD(x + (i + 2) * TC__W));                                                  \
        a3 = F(a3, TC__LD(x + (i + 3) * TC__W));                                                  \
    }                                                                                             \
    for (; i < nv; i++) a0 = F(a0, TC__LD(x + i * TC__W));                                        \
    if (rem) {                                                                                    \
        TC__VF v = TC__SEL(lane < rem, TC__LD(x + nv * TC__W), TC__SPL((float)tc__comb_identity(comb))); \
        a1 = F(a1, v);                                                                            \
    }
#if (TC__ISA_W == 16 || TC__ISA_W == 8 || TC__ISA_W == 4) && defined(TC__HAVE_VEXEC_X86)
/* max and min where NaN wins, as the ISA's max/min (which return their
 * second operand when either is NaN, so a NaN already in the accumulator
 * stays) plus an unordered compare of the value noted on the side: two
 * vector ops where the select form takes three and two mask ops */
#if TC__ISA_W == 16
#define TC__VNAN_T __mmask16
#define TC__VNAN_NOTE(n, v) ((n) | _mm512_cmp_ps_mask((__m512)(v), (__m512)(v), _CMP_UNORD_Q))
#define TC__VNAN_ANY(n) ((n) != 0)
#define TC__VMAX_(v, a) (TC__VF) _mm512_maskz_max_ps((__mmask16)0xFFFF, (__m512)(v), (__m512)(a))
#define TC__VMIN_(v, a) (TC__VF) _mm512_maskz_min_ps((__mmask16)0xFFFF, (__m512)(v), (__m512)(a))
#elif TC__ISA_W == 8
#define TC__VNAN_T __m256
#define TC__VNAN_NOTE(n, v) _mm256_or_ps(n, _mm256_cmp_ps((__m256)(v), (__m256)(v), _CMP_UNORD_Q))
#define TC__VNAN_ANY(n) (_mm256_movemask_ps(n) != 0)
#define TC__VMAX_(v, a) (TC__VF) _mm256_max_ps((__m256)(v), (__m256)(a))
#define TC__VMIN_(v, a) (TC__VF) _mm256_min_ps((__m256)(v), (__m256)(a))
#else
#define TC__VNAN_T __m128
#define TC__VNAN_NOTE(n, v) _mm_or_ps(n, _mm_cmpunord_ps((__m128)(v), (__m128)(v)))
#define TC__VNAN_ANY(n) (_mm_movemask_ps(n) != 0)
#define TC__VMAX_(v, a) (TC__VF) _mm_max_ps((__m128)(v), (__m128)(a))
#define TC__VMIN_(v, a) (TC__VF) _mm_min_ps((__m128)(v), (__m128)(a))
#endif
#define TC__VACC_MAXN(a, v) (nan_ = TC__VNAN_NOTE(nan_, v), TC__VMAX_(v, a))
#define TC__VACC_MINN(a, v) (nan_ = TC__VNAN_NOTE(nan_, v), TC__VMIN_(v, a))
#define TC__VACC_MAXMIN_(max)                                         \
    do {                                                              \
        TC__VNAN_T nan_;                                              \
        memset(&nan_, 0, sizeof nan_);                                \
        if (max) {                                                    \
            TC__VACC_LOOP(TC__VACC_MAXN)                              \
        } else {                                                      \
            TC__VACC_LOOP(TC__VACC_MINN)                              \
        }                                                             \
        if (TC__VNAN_ANY(nan_)) a0 = TC__SPL(NAN);                    \
    } while (0)
#else
#define TC__VACC_MAXMIN_(max)            \
    do {                                 \
        if (max) {                       \
            TC__VACC_LOOP(TC__VACC_MAX)  \
        } else {                         \
            TC__VACC_LOOP(TC__VACC_MIN)  \
        }                                \
    } while (0)
#endif
#if TC__ISA_W == 16 || TC__ISA_W == 8
/* A vector's lanes combined in registers: reading them one by one through
 * memory after a vector store stalls on store forwarding (once per row and
 * reduction, it cost a fifth of softmax_ln).  Sums as a tree in float
 * (the 16 or 8 partial sums of one fold span; the spans add in double,
 * tc__krun_row_stage), NaN wins max and min (x86's min/max would drop
 * it).  In double, a sum's fold was a large part of the latency of a row
 * kernel's stage boundary. */
TC__INL double TC__VFN(tc__vfold_x86_)(TC__VF a, int comb) {
    __m256 h = _mm256_setzero_ps(); /* eight float lanes */
    __m128 q, h4;
#if TC__ISA_W == 16
    /* masked forms: g++ 12 misreports the unmasked ones' undefined
     * pass-through operand as uninitialised */
    __m512d v = _mm512_castps_pd((__m512)a);
    __m256 lo = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd((__mmask8)0xF, v, 0));
    __m256 hi = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd((__mmask8)0xF, v, 1));
    if (comb == TC__COMB_SUM) {
        h = _mm256_add_ps(lo, hi);
    } else {
        if (_mm512_cmp_ps_mask((__m512)a, (__m512)a, _CMP_UNORD_Q)) return NAN;
        h = comb == TC__COMB_MAX ? _mm256_max_ps(lo, hi) : _mm256_min_ps(lo, hi);
    }
#else
    if (comb != TC__COMB_SUM && _mm256_movemask_ps(_mm256_cmp_ps((__m256)a, (__m256)a, _CMP_UNORD_Q))) return NAN;
    h = (__m256)a;
#endif
    if (comb == TC__COMB_SUM) { /* a tree in float (tc__vrowfold_) */
        h4 = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
        h4 = _mm_add_ps(h4, _mm_movehl_ps(h4, h4));
        return _mm_cvtss_f32(_mm_add_ss(h4, _mm_shuffle_ps(h4, h4, 1)));
    }
    h4 = _mm256_castps256_ps128(h);
    q = _mm256_extractf128_ps(h, 1);
    h4 = comb == TC__COMB_MAX ? _mm_max_ps(h4, q) : _mm_min_ps(h4, q);
    q = _mm_movehl_ps(h4, h4);
    h4 = comb == TC__COMB_MAX ? _mm_max_ps(h4, q) : _mm_min_ps(h4, q);
    q = _mm_shuffle_ps(h4, h4, 1);
    h4 = comb == TC__COMB_MAX ? _mm_max_ss(h4, q) : _mm_min_ss(h4, q);
    return _mm_cvtss_f32(h4);
}
#endif

/* Four accumulator vectors combined lane by lane. */
TC__INL TC__VF TC__VFN(tc__vcomb4_)(TC__VF a, TC__VF b, TC__VF c, TC__VF d, int comb) {
    if (comb == TC__COMB_SUM) return (a + b) + (c + d);
    if (comb == TC__COMB_MAX) return TC__VACC_MAX(TC__VACC_MAX(a, b), TC__VACC_MAX(c, d));
    return TC__VACC_MIN(TC__VACC_MIN(a, b), TC__VACC_MIN(c, d));
}

/* Four accumulator vectors reduced to one value (vectors first, then lanes). */
TC__INL double TC__VFN(tc__vreduce4_)(TC__VF a, TC__VF b, TC__VF c, TC__VF d, int comb) {
    a = TC__VFN(tc__vcomb4_)(a, b, c, d, comb);
#if TC__ISA_W == 16 || TC__ISA_W == 8
    return TC__VFN(tc__vfold_x86_)(a, comb);
#else
    {
        double r = a[0];
        int i;
        for (i = 1; i < TC__W; i++) r = tc__comb_apply(r, a[i], comb);
        return r;
    }
#endif
}

/* A row held in one tile: its four accumulators to the row scalar, as
 * tc__krun_row_stage's fold of them ends (identity, combined, times
 * scale), so a row's result does not depend on its tiles.  A sum's last
 * steps in float: the double conversions and scalar double ops were half
 * the latency of each stage boundary, which nothing else in the row
 * overlaps; adding the identity's +0 is exact and the product of two
 * floats is exact in double, so the bits are the double path's. */
TC__INL float TC__VFN(tc__vrowfold_)(TC__VF a, TC__VF b, TC__VF c, TC__VF d, int fcomb, float scale) {
    double h = TC__VFN(tc__vreduce4_)(a, b, c, d, fcomb);
#if TC__ISA_W == 16 || TC__ISA_W == 8
    if (fcomb == TC__COMB_SUM) return (0.0f + (float)h) * scale; /* h is a float's value here */
#endif
    return (float)(tc__comb_apply(tc__comb_identity(fcomb), h, fcomb) * (double)scale);
}

/* The accumulator in memory reduced to one value. */
static TC__ISA_ATTR TC__UNUSED double TC__VFN(tc__vhreduce_)(const float *acc, int comb) {
    return TC__VFN(tc__vreduce4_)(TC__LD(acc), TC__LD(acc + TC__W), TC__LD(acc + 2 * TC__W), TC__LD(acc + 3 * TC__W),
                                  comb);
}

/* fold: the tile is the whole row (tc__vst.fin): start at the identity
 * and end as the row scalar *fold = reduce * scale, exactly as the row
 * stage's own fold of the accumulator would (tc__krun_row_stage). */
#define TC__VACC_BEGIN(acc, comb, fold)                                                             \
    do {                                                                                            \
        if (fold) {                                                                                 \
            a0 = a1 = a2 = a3 = TC__SPL((float)tc__comb_identity(comb));                            \
        } else {                                                                                    \
            a0 = TC__LD(acc), a1 = TC__LD((acc) + TC__W), a2 = TC__LD((acc) + 2 * TC__W);           \
            a3 = TC__LD((acc) + 3 * TC__W);                                                         \
        }                                                                                           \
    } while (0)
#define TC__VACC_END(acc, fold, fcomb, scale, trv)                                                  \
    do {                                                                                            \
        if (trv) { /* a row per lane: each lane's row scalar */                                    \
            TC__ST(trv, TC__VFN(tc__vcomb4_)(a0, a1, a2, a3, fcomb) * TC__SPL(scale));              \
        } else if (fold) {                                                                          \
            *(fold) = TC__VFN(tc__vrowfold_)(a0, a1, a2, a3, fcomb, scale);                          \
        } else {                                                                                    \
            TC__ST(acc, a0);                                                                        \
            TC__ST((acc) + TC__W, a1);                                                              \
            TC__ST((acc) + 2 * TC__W, a2);                                                          \
            TC__ST((acc) + 3 * TC__W, a3);                                                          \
        }                                                                                           \
    } while (0)
TC__INL void TC__VFN(tc__vacc_)(float *acc, const float *x, int len, int comb, float *fold, int fcomb, float scale,
                                float *trv) {
    TC__VF a0, a1, a2, a3;
    TC__VI lane;
    int i = 0, nv = len / TC__W, rem = len % TC__W;
    TC__VACC_BEGIN(acc, comb, fold);
    for (i = 0; i < TC__W; i++) lane[i] = i;
    i = 0;
    if (comb == TC__COMB_SUM) {
        TC__VACC_LOOP(TC__VACC_SUM)
    } else if (comb == TC__COMB_SUMSQ) {
        TC__VACC_LOOP(TC__VACC_SUMSQ)
    } else if (comb == TC__COMB_SUMSQ_LO) {
        TC__VACC_LOOP(TC__VACC_SUMSQ_LO)
    } else if (trv) { /* NaN wins in each lane on its own */
        if (comb == TC__COMB_MAX) {
            TC__VACC_LOOP(TC__VACC_MAX)
        } else {
            TC__VACC_LOOP(TC__VACC_MIN)
        }
    } else {
        TC__VACC_MAXMIN_(comb == TC__COMB_MAX);
    }
    TC__VACC_END(acc, fold, fcomb, scale, trv);
}
#undef TC__VACC_LOOP
#undef TC__VACC_MAXMIN_
#ifdef TC__VNAN_T
#undef TC__VNAN_T
#undef TC__VNAN_NOTE
#undef TC__VNAN_ANY
#undef TC__VMAX_
#undef TC__VMIN_
#undef TC__VACC_MAXN
#undef TC__VACC_MINN
#endif

/* An accumulator set to the combiner's identity. */
static TC__ISA_ATTR TC__UNUSED void TC__VFN(tc__vacc_init_)(float *acc, int comb) {
    TC__VF v = TC__SPL((float)tc__comb_identity(comb));
    int i;
    for (i = 0; i < 4; i++) TC__ST(acc + i * TC__W, v);
}


/* A uniform register (a constant, a row scalar, a broadcast load, or an op
 * of those) holds one vector, in uv[] apart from the tile buffers: ops on it
 * run once per tile, and it is expanded to a full tile only where a store
 * or accumulation needs one. */
TC__INL const float *TC__VFN(tc__vexpand_)(tc__vst *s, int reg, int nv) {
    if (s->u[reg]) {
        float *b = s->buf[reg];
        TC__VF v = TC__LD(s->r[reg]);
        int i;
        for (i = 0; i < nv; i++) TC__ST(b + i * TC__W, v);
        s->r[reg] = b;
        s->u[reg] = 0;
    }
    return s->r[reg];
}

#define TC__VB_FORMS_(ID, RUN)                                                                    \
    if (sb) {                                                                                     \
        TC__VF av = TC__A1(0);                                                                    \
        if (sa) RUN(TC__VFN(tc__vbinary_)(TC__OP_##ID, TC__A(i), TC__LD(b + i * TC__W)));          \
        else RUN(TC__VFN(tc__vbinary_)(TC__OP_##ID, av, TC__LD(b + i * TC__W)));                   \
    } else {                                                                                      \
        TC__VF bv = TC__LD(b);                                                                    \
        RUN(TC__VFN(tc__vbinary_)(TC__OP_##ID, TC__A(i), bv));                                    \
    }

/* a compact level (the scalar one among them) keeps the separate pass (one
 * copy less of the loops); the executor asks tc__vacc_fused_ */
#if TC__ISA_W > 1 && !TC__ISA_COMPACT
#define TC__VACC_FUSED 1
#else
#define TC__VACC_FUSED 0
#endif
enum { TC__VFN(tc__vacc_fused_) = TC__VACC_FUSED };
#if TC__VACC_FUSED
/* Compute instruction `in` (tc__vins_fuses_acc) over the tile's m whole
 * vectors into d, with accumulation `ac` of its value taken as each vector
 * is stored; operands a, b (NULL: none) and the prologue's uniforms sp, tp
 * (NULL: 1, -0) as resolved by the caller, fin as tc__vst.fin.  A function
 * of its own: inside the interpreter's one large body the compiler spilled
 * the accumulators, and the sum ran through memory at a store-forwarding
 * round trip per vector. */
static TC__ISA_ATTR TC__UNUSED __attribute__((noinline)) void TC__VFN(tc__vrun_acc_)(
    const tc__vins *in, const tc__vins *ac, tc__vst *s, const float *a, const float *b, const float *sp,
    const float *tp, float *d, int m, int sa, int sb, int fin) {
    float *acc = s->acc[ac->a], *fold = fin ? &s->slot[ac->a] : NULL;
    int i, pro = sp || tp, fsq = ac->c == TC__COMB_SUMSQ;
    TC__VF a0, a1, a2, a3;
    TC__VF sv = sp ? TC__LD(sp) : TC__SPL(1.0f);
    TC__VF tv = tp ? TC__LD(tp) : TC__SPL(-0.0f);
    TC__VACC_BEGIN(acc, ac->c, fold);
    if (!b) {
        TC__RUNA(TC__VFN(tc__vunary_)(TC__OP_EXP, TC__A(i), 0.0f, 0.0f));
    } else {
        switch (in->op) {
#define TC__VBA_(ID)                  \
    case TC__OP_##ID:                 \
        TC__VB_FORMS_(ID, TC__RUNA)   \
        break;
            TC__ACC_FUSED_BINARY(TC__VBA_)
#undef TC__VBA_
        default: break;
        }
    }
    TC__VACC_END(acc, fold, s->slot_comb[ac->a], s->slot_scale[ac->a], s->tr ? s->slotv[ac->a] : NULL);
}
#endif

/* Compute instruction `in` over m vectors into d: operands a, b, c (NULL:
 * none) read with strides sa, sb, sc (0: a uniform's one vector), operand
 * a through the prologue's uniforms sp, tp (NULL: 1 and -0, which leave
 * every value, -0 included, as it is: a multiply-add per vector in place
 * of the pass over the tile that computing a*as+at on its own would cost),
 * stored non-temporally when ntd.  The interpreter and the pre-decoded
 * steps (tc__vplan) both run it, so they compute the same bits. */
TC__INL void TC__VFN(tc__vcompute_)(const tc__vins *in, const float *a, const float *b, const float *c,
                                    const float *sp, const float *tp, float *d, int m, int sa, int sb, int sc,
                                    int ntd) {
    int i, pro = sp || tp;
    TC__VF sv = sp ? TC__LD(sp) : TC__SPL(1.0f);
    TC__VF tv = tp ? TC__LD(tp) : TC__SPL(-0.0f);
    TC__OTHER_OPS_CHECK(41); /* where, clone and cast by hand */
    switch (in->op) {
    case TC__OP_WHERE:
        TC__RUN(TC__SEL(TC__A(i) != 0.0f, TC__LD(b + i * sb), TC__LD(c + i * sc)));
        break;
    default:
        if (in->au >= 0) { /* au(a) * bu(b) or au(a) * b: ratio gates (tc__vratio_prod_) */
            switch (in->au) {
#define TC__VQ_(AU, BU) TC__RUN(TC__VFN(tc__vratio_prod_)(TC__OP_##AU, BU, TC__A(i), TC__LD(b + i * sb)))
#define TC__VQA_(AU)                                                                   \
    case TC__OP_##AU:                                                                  \
        if (in->bu == TC__OP_SIGMOID) TC__VQ_(AU, TC__OP_SIGMOID);                     \
        else if (in->bu == TC__OP_SILU) TC__VQ_(AU, TC__OP_SILU);                      \
        else if (in->bu == TC__OP_GELU_TANH) TC__VQ_(AU, TC__OP_GELU_TANH);            \
        else TC__VQ_(AU, -1);                                                          \
        break;
                TC__RATIO_GATE_OPS(TC__VQA_)
#undef TC__VQA_
#undef TC__VQ_
            default: break;
            }
        } else if (in->bu >= 0) { /* a * bu(b): a product with a gate */
            switch (in->bu) {
#define TC__VG_(ID)                                                                                    \
    case TC__OP_##ID:                                                                                  \
        TC__RUN(TC__A(i) * TC__VFN(tc__vunary_)(TC__OP_##ID, TC__LD(b + i * sb), 0.0f, 0.0f));        \
        break;
                TC__GATE_OPS(TC__VG_)
#undef TC__VG_
            default: break;
            }
        } else if (b) {
            /* one switch per tile, not per vector: the op is hoisted,
             * and so is a uniform operand (a register, not a load) */
            switch (in->op) {
#define TC__VB_(ID)                   \
    case TC__OP_##ID:                 \
        TC__VB_FORMS_(ID, TC__RUN)    \
        break;
#define TC__VB_ROW_(ID, name, cost, i, f, v) TC__VB_(ID)
                TC__BINARY_OPS(TC__VB_ROW_) TC__COMPARE_OPS(TC__VB_ROW_)
#undef TC__VB_ROW_
#undef TC__VB_
            default: break;
            }
        } else {
            /* a uniform operand makes a uniform result: m is 1 then */
            float p0 = in->f0, p1 = in->f1;
            switch (in->op) {
#define TC__VU_(ID, name, cost, i_, f, v)                                                              \
    case TC__OP_##ID: TC__RUN(TC__VFN(tc__vunary_)(TC__OP_##ID, TC__A(i), p0, p1)); break;
                TC__UNARY_OPS(TC__VU_) TC__UNARY_ATTR_OPS(TC__VU_)
#undef TC__VU_
            case TC__OP_CLONE:
            case TC__OP_CAST: TC__RUN(TC__A(i)); break;
            default: break;
            }
        }
    }
}

/* Runs code[0..n) over one tile of len elements (len <= the register
 * tile, tc__kernel_tile: a row kernel's whole row up to TC__VM_ROW_TILE). */
static TC__ISA_ATTR TC__UNUSED void TC__VFN(tc__vm_tile_)(const tc__vins *code, int n, tc__vst *s, int len) {
    int k, i, nv = (len + TC__W - 1) / TC__W;
    for (k = 0; k < n; k++) {
        const tc__vins *in = &code[k];
        float *d;
        const float *sp, *tp, *pb;
        int uni = 0, m, sa, sb, sc, ntd;
        /* the moves between registers, row buffers and memory first, with
         * none of the compute instructions' set-up: they are most of a row
         * kernel's dispatches, and the interpreter's own instructions are
         * on every row's path */
        switch (in->op) {
        case TC__V_LOAD:
            if (s->dt[in->a] & TC__VST_LANES) { /* rows across lanes */
                s->r[in->dst] = TC__VFN(tc__vtr_load_)(s, in->a, s->buf[in->dst], s->uv[in->dst], &s->u[in->dst]);
            } else if (s->stride[in->a] == 0) { /* broadcast: one vector */
                const char *p = s->ptr[in->a];
                float v = s->dt[in->a] == TC_F32 ? *(const float *)p : (float)tc__load(p, (tc_dtype)s->dt[in->a], 0);
                TC__ST(s->uv[in->dst], TC__SPL(v));
                s->r[in->dst] = s->uv[in->dst];
                s->u[in->dst] = 1;
            } else {
                s->r[in->dst] = TC__VFN(tc__vload_)(s, in->a, s->buf[in->dst], len);
                s->u[in->dst] = 0;
            }
            continue;
        case TC__V_CONST:
        case TC__V_SLOT:
            TC__ST(s->uv[in->dst], in->op == TC__V_SLOT && s->tr ? TC__LD(s->slotv[in->a])
                                                                 : TC__SPL(in->op == TC__V_CONST ? in->f0 : s->slot[in->a]));
            s->r[in->dst] = s->uv[in->dst];
            s->u[in->dst] = 1;
            continue;
        case TC__V_LOADL:
            s->r[in->dst] = s->local[in->a];
            s->u[in->dst] = 0;
            continue;
        case TC__V_STOREL: {
            const float *x = TC__VFN(tc__vexpand_)(s, in->b, nv);
            float *l = s->local[in->a];
            for (i = 0; i < nv; i++) TC__ST(l + i * TC__W, TC__LD(x + i * TC__W));
            continue;
        }
        case TC__V_STORE:
            if (s->dt[in->a] & TC__VST_LANES) TC__VFN(tc__vtr_store_)(s, in->a, TC__VFN(tc__vexpand_)(s, in->b, nv));
            else TC__VFN(tc__vstore_)(s, in->a, TC__VFN(tc__vexpand_)(s, in->b, nv), len);
            continue;
        case TC__V_ACC:
            TC__VFN(tc__vacc_)(s->acc[in->a], TC__VFN(tc__vexpand_)(s, in->b, nv), len, in->c,
                               s->fin ? &s->slot[in->a] : NULL, s->fin ? s->slot_comb[in->a] : 0,
                               s->fin ? s->slot_scale[in->a] : 1.0f, s->tr ? s->slotv[in->a] : NULL);
            continue;
        default: break;
        }
        d = in->dst >= 0 ? s->buf[in->dst] : NULL;
        m = nv;
        sa = sb = sc = TC__W;
        ntd = 0;
        if (s->pf_next < s->pf_lines) tc__vst_pf_upto(s, s->pf_next + TC__VM_PF_STEP);
        /* compute: a uniform operand is read with stride 0; all uniform
         * operands make a uniform result computed once */
        uni = s->u[in->a] && (in->b < 0 || s->u[in->b]) && (in->c < 0 || s->u[in->c]);
        if (uni) { /* one vector, kept apart from the tile buffers it may be read with */
            m = 1;
            d = s->uv[in->dst];
        } else if (in->fz & TC__FZ_LOCAL) {
            /* a value kept for later stages is computed straight into its row
             * buffer (a stage never reads the buffer it fills) */
            d = s->local[code[k + 1].a];
            k++;
        } else if ((in->fz & TC__FZ_OUT) && len % TC__W == 0 && s->dt[code[k + 1].a] == TC_F32 &&
                   s->stride[code[k + 1].a] == 1) {
            /* the kernel's result, computed straight into the output (its
             * one store ends the code, so no later read sees it early) */
            int o = code[k + 1].a;
            d = (float *)s->ptr[o];
            ntd = s->nt[o] && ((uintptr_t)d % (4 * TC__W)) == 0;
            k++;
        }
        if (s->u[in->a]) sa = 0;
        if (in->b >= 0 && s->u[in->b]) sb = 0;
        if (in->c >= 0 && s->u[in->c]) sc = 0;
        sp = in->as >= 0 ? s->r[in->as] : NULL;
        tp = in->at >= 0 ? s->r[in->at] : NULL;
        pb = in->b >= 0 ? s->r[in->b] : NULL;
#if TC__VACC_FUSED
        /* (never after a value stored straight into the output: its STORE
         * stands between, and tc__kernel_mark_fusions sets TC__FZ_ACC only
         * after a row buffer's) */
        if (!uni && len % TC__W == 0 && (in->fz & TC__FZ_ACC)) {
            /* a sum of the value follows: taken as it is stored */
            TC__VFN(tc__vrun_acc_)(in, &code[k + 1], s, s->r[in->a], pb, sp, tp, d, m, sa, sb, s->fin);
            k++;
        } else
#endif
            TC__VFN(tc__vcompute_)(in, s->r[in->a], pb, in->c >= 0 ? s->r[in->c] : NULL, sp, tp, d, m, sa, sb,
                                   sc, ntd);
        s->r[in->dst] = d;
        s->u[in->dst] = uni;
    }
}

/* The pre-decoded steps (tc__vstep): each does what the interpreter does
 * for its instruction, with the decisions made (tc__vplan_build). */
#define TC__VS_P(step, s, j) ((step)->p[j] ? (step)->p[j] : (const float *)(s)->ptr[(step)->pa[j]])

/* operand a, a uniform one first expanded to the tile (as tc__vexpand_) */
TC__INL const float *TC__VFN(tc__vs_src_)(const tc__vstep *step, tc__vst *s) {
    const float *x = TC__VS_P(step, s, 0);
    if (step->e) {
        TC__VF v = TC__LD(x);
        int i;
        for (i = 0; i < step->m; i++) TC__ST(step->e + i * TC__W, v);
        x = step->e;
    }
    return x;
}
TC__INL TC__VF TC__VFN(tc__vs_bcast1_)(const tc__vstep *step, tc__vst *s) {
    const char *p = s->ptr[step->k];
    return TC__SPL(s->dt[step->k] == TC_F32 ? *(const float *)p : (float)tc__load(p, (tc_dtype)s->dt[step->k], 0));
}
static TC__ISA_ATTR TC__UNUSED void TC__VFN(tc__vs_bcast_)(const tc__vstep *step, tc__vst *s) {
    TC__ST(step->d, TC__VFN(tc__vs_bcast1_)(step, s));
}
static TC__ISA_ATTR TC__UNUSED void TC__VFN(tc__vs_load_)(const tc__vstep *step, tc__vst *s) {
    (void)TC__VFN(tc__vload_)(s, step->k, step->d, step->len);
}
static TC__ISA_ATTR TC__UNUSED void TC__VFN(tc__vs_trload_)(const tc__vstep *step, tc__vst *s) {
    int u;
    (void)TC__VFN(tc__vtr_load_)(s, step->k, step->d, step->d, &u);
}
TC__INL TC__VF TC__VFN(tc__vs_slot1_)(const tc__vstep *step, tc__vst *s) {
    return s->tr ? TC__LD(s->slotv[step->k]) : TC__SPL(s->slot[step->k]);
}
static TC__ISA_ATTR TC__UNUSED void TC__VFN(tc__vs_slot_)(const tc__vstep *step, tc__vst *s) {
    TC__ST(step->d, TC__VFN(tc__vs_slot1_)(step, s));
}
static TC__ISA_ATTR TC__UNUSED void TC__VFN(tc__vs_storel_)(const tc__vstep *step, tc__vst *s) {
    const float *x = TC__VFN(tc__vs_src_)(step, s);
    int i;
    for (i = 0; i < step->m; i++) TC__ST(step->d + i * TC__W, TC__LD(x + i * TC__W));
}
static TC__ISA_ATTR TC__UNUSED void TC__VFN(tc__vs_store_)(const tc__vstep *step, tc__vst *s) {
    const float *x = TC__VFN(tc__vs_src_)(step, s);
    if (s->dt[step->k] & TC__VST_LANES) TC__VFN(tc__vtr_store_)(s, step->k, x);
    else TC__VFN(tc__vstore_)(s, step->k, x, step->len);
}
static TC__ISA_ATTR TC__UNUSED void TC__VFN(tc__vs_acc_)(const tc__vstep *step, tc__vst *s) {
    int a = step->k;
    /* a SUMSQ_LO whose SUMSQ beside it (its pair) is finite: its value is
     * not read (kernel.c), and the row's one pass stays one */
    if (step->pair >= 0 && step->fin && !s->tr && !(s->slot[step->pair] > FLT_MAX)) {
        s->slot[a] = 0.0f;
        return;
    }
    TC__VFN(tc__vacc_)(s->acc[a], TC__VFN(tc__vs_src_)(step, s), step->len, step->in->c, step->fin ? &s->slot[a] : NULL,
                       step->fin ? s->slot_comb[a] : 0, step->fin ? s->slot_scale[a] : 1.0f, s->tr ? s->slotv[a] : NULL);
}
static TC__ISA_ATTR TC__UNUSED void TC__VFN(tc__vs_compute_)(const tc__vstep *step, tc__vst *s) {
    float *d = step->d;
    int ntd = 0;
    if (!d) { /* straight into the result */
        d = (float *)s->ptr[step->od];
        ntd = s->nt[step->od] && ((uintptr_t)d % (4 * TC__W)) == 0;
    }
#if TC__VACC_FUSED
    if (step->ac) {
        TC__VFN(tc__vrun_acc_)(step->in, step->ac, s, TC__VS_P(step, s, 0), step->in->b >= 0 ? TC__VS_P(step, s, 1) : NULL,
                               step->sp, step->tp, d, step->m, step->sa, step->sb, step->fin);
        return;
    }
#endif
    TC__VFN(tc__vcompute_)(step->in, TC__VS_P(step, s, 0), step->in->b >= 0 ? TC__VS_P(step, s, 1) : NULL,
                           step->in->c >= 0 ? TC__VS_P(step, s, 2) : NULL, step->sp, step->tp, d, step->m, step->sa, step->sb,
                           step->sc, ntd);
}
/* A compute instruction on uniform operands: one vector, as
 * tc__vcompute_ computes it with m = 1 (the same functions on the same
 * vector), without that function's set-up for a tile: a row kernel's row
 * scalars pass through a few of these a row (softmax's 1 / sum, a norm's
 * rsqrt(var + eps)), which cost it more than its real work at short rows. */
/* Operand p: the vector at p, or lv where p is lp (the value the step
 * before computed, still in a register: a load of it would wait on the
 * store just made). */
#define TC__VS_OP(p, lp, lv) ((p) == (lp) ? (lv) : TC__LD(p))
TC__INL TC__VF TC__VFN(tc__vs_uniform1_)(const tc__vstep *step, const float *lp, TC__VF lv) {
    const tc__vins *in = step->in;
    TC__VF x = TC__VS_OP(step->p[0], lp, lv);
    if (step->sp || step->tp)
        x = TC__VFN(tc__vfma_)(x, step->sp ? TC__VS_OP(step->sp, lp, lv) : TC__SPL(1.0f),
                               step->tp ? TC__VS_OP(step->tp, lp, lv) : TC__SPL(-0.0f));
    if (in->op == TC__OP_WHERE) {
        x = TC__SEL(x != 0.0f, TC__VS_OP(step->p[1], lp, lv), TC__VS_OP(step->p[2], lp, lv));
    } else if (in->au >= 0) {
        int bu = in->bu == TC__OP_SIGMOID || in->bu == TC__OP_SILU || in->bu == TC__OP_GELU_TANH ? in->bu : -1;
        x = TC__VFN(tc__vratio_prod_)(in->au, bu, x, TC__VS_OP(step->p[1], lp, lv));
    } else if (in->bu >= 0) {
        x = x * TC__VFN(tc__vunary_)(in->bu, TC__VS_OP(step->p[1], lp, lv), 0.0f, 0.0f);
    } else if (in->b >= 0) {
        x = TC__VFN(tc__vbinary_)(in->op, x, TC__VS_OP(step->p[1], lp, lv));
    } else {
        x = TC__VFN(tc__vunary_)(in->op, x, in->f0, in->f1);
    }
    return x;
}
static TC__ISA_ATTR TC__UNUSED void TC__VFN(tc__vs_uniform_)(const tc__vstep *step, tc__vst *s) {
    (void)s;
    TC__ST(step->d, TC__VFN(tc__vs_uniform1_)(step, NULL, TC__SPL(0.0f)));
}
/* A run of uniform steps, each one's value carried in a register to the
 * next (a row scalar's chain: its broadcast, then the ops on it). */
static TC__ISA_ATTR TC__UNUSED void TC__VFN(tc__vs_ublock_)(const tc__vstep *step, tc__vst *s) {
    const tc__vstep *end = step + step->n;
    const float *lp = NULL;
    TC__VF lv = TC__SPL(0.0f);
    for (; step < end; step++) {
        if (step->kind == TC__VS_SLOT) lv = TC__VFN(tc__vs_slot1_)(step, s);
        else if (step->kind == TC__VS_BCAST) lv = TC__VFN(tc__vs_bcast1_)(step, s);
        else lv = TC__VFN(tc__vs_uniform1_)(step, lp, lv);
        TC__ST(step->d, lv);
        lp = step->d;
    }
}
#undef TC__VS_OP
static const tc__vstep_fn TC__VFN(tc__vsteps_)[TC__VS_COUNT] = {
    TC__VFN(tc__vs_bcast_), TC__VFN(tc__vs_load_),  TC__VFN(tc__vs_trload_), TC__VFN(tc__vs_slot_),
    TC__VFN(tc__vs_storel_), TC__VFN(tc__vs_store_), TC__VFN(tc__vs_acc_),    TC__VFN(tc__vs_compute_),
    TC__VFN(tc__vs_uniform_), TC__VFN(tc__vs_ublock_)};
#undef TC__VS_P

#undef TC__VACC_SUM
#undef TC__VACC_SUMSQ
#undef TC__VACC_SUMSQ_LO
#undef TC__VACC_MAX
#undef TC__VACC_MIN
#undef TC__VACC_BEGIN
#undef TC__VACC_END
#undef TC__RUNA_
#undef TC__RUNA_SQ_
#undef TC__RUNA
#undef TC__VB_FORMS_

/* One key block of attention's online softmax, the scores transposed:
 * st[k * ld + i] for keys k < nk and queries i < ld (ld a multiple of the
 * lanes), so each vector holds one key's score for TC__W queries.  m[i],
 * l[i] are the running max and sum of query i; the block's scores become
 * exp(s - m_new), corr[i] = exp(m_old - m_new) rescales what came before.
 * A query with every key so far masked (max -inf) gets p = 0, not NaN. */
static TC__ISA_ATTR TC__UNUSED void TC__VFN(tc__vflash_softmax_)(float *st, int64_t ld, int64_t nk, float *m, float *l,
                                                                 float *corr) {
    int64_t i, k;
    for (i = 0; i < ld; i += TC__W) {
        TC__VF mx = TC__SPL(-INFINITY), mo = TC__LD(m + i), sum = TC__SPL(0.0f), mb, c;
        for (k = 0; k < nk; k++) {
            TC__VF v = TC__LD(st + k * ld + i);
            mx = TC__SEL(v > mx, v, mx);
        }
        mx = TC__SEL(mo > mx, mo, mx);
        mb = TC__SEL(mx == -INFINITY, TC__SPL(0.0f), mx);
        for (k = 0; k < nk; k++) {
            TC__VF e = TC__VFN(tc__vexp_)(TC__LD(st + k * ld + i) - mb);
            TC__ST(st + k * ld + i, e);
            sum += e;
        }
        c = TC__VFN(tc__vexp_)(mo - mb);
        TC__ST(corr + i, c);
        TC__ST(l + i, TC__LD(l + i) * c + sum);
        TC__ST(m + i, mx);
    }
}

#undef TC__VACC_FUSED
#undef TC__RUN
#undef TC__RUN_
#undef TC__A
#undef TC__A1
#ifdef TC__HAVE_VTR_BLOCK
#undef TC__HAVE_VTR_BLOCK
#endif

/* vmath_isa.c's names, after the last instance (scalar: tools/amalgamate.sh
 * emits the levels widest first) */
#if TC__ISA_W == 1
#undef TC__VF
#undef TC__VI
#undef TC__VU
#undef TC__VFN
#undef TC__W
#undef TC__INL
#undef TC__SPL
#undef TC__FMA
#undef TC__SEL
#undef TC__LD
#undef TC__ST
#undef TC__V
#undef TC__VLET
#undef TC__VLIBM2
#undef TC__EXP_NORMAL_MIN
#endif
