/* CUDA C from the kernel IR: the fused kernels the CPU executor runs
 * (compiler/kernel.c), printed as CUDA C for NVRTC.
 *
 * One program per compiled graph: a prelude (half-float conversions done
 * with bit operations, so no toolkit header is needed at run time, and one
 * device function per pointwise op, its body the op table's f32
 * expression, stringified: the same row that generates the eager kernels
 * and the executor's vector body), then one __global__ function per kernel.
 *
 * A kernel's parameters are one struct passed by value (tc__cuda_params
 * packs it): the accesses' base addresses and per-domain-dim strides in
 * elements, the domain's shape and a workspace address.  Shapes and
 * strides are parameters, not constants, so one binary serves every size a
 * dynamic dim takes; the dtypes, the code and the dims' count are baked in.
 *
 * - pointwise kernels: a grid-stride loop, one element per thread-step;
 * - row kernels (reductions, softmax and norms): a block per row (a
 *   grid-stride loop over rows); each stage is a block-stride loop over the
 *   row, its accumulations reduced across the block with warp shuffles and
 *   shared memory in a fixed order (deterministic), so every thread holds
 *   the row scalars (slots) for the next stages; values several stages
 *   read (locals) live in the block's slice of the workspace, each thread
 *   reading back only what it wrote; the scalar stage runs on thread 0. */

#ifndef TC_NO_CUDA

#define TC__CU_BLOCK 256 /* threads per block (a multiple of the warp)     */

/* A double's bits, for printing it exactly. */
TC__FN uint64_t tc__f64_bits(double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}


/* The prelude: conversions, combiners, the ops as device functions. */
#define TC__CU_UN_(ID, name, cost, i, f, v)                                                                    \
    "__device__ __forceinline__ float tc_" #name "(float x, float p0, float p1) { (void)p0; (void)p1; return (float)(" #f "); }\n",
#define TC__CU_BIN_(ID, name, cost, i, f, v)                                                                   \
    "__device__ __forceinline__ float tc_" #name "(float a, float b) { return (float)(" #f "); }\n",
/* pieces (C99 compilers need not take a literal over 4095 bytes) */
static const char *const tc__cu_prelude[] = {
    "typedef long long i64;\n"
    "typedef unsigned long long u64;\n"
    "#define TC_INF __int_as_float(0x7f800000)\n"
    "__device__ __forceinline__ float tc_h2f(unsigned short h) {\n"
    "  unsigned s = (unsigned)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
    "  if (e == 0x1fu) return __uint_as_float(s | 0x7f800000u | (m << 13));\n"
    "  if (e == 0u) { float v = (float)m * 5.9604644775390625e-8f; return s ? -v : v; }\n"
    "  return __uint_as_float(s | ((e + 112u) << 23) | (m << 13));\n"
    "}\n"
    "__device__ __forceinline__ unsigned short tc_f2h(float f) {\n"
    "  unsigned u = __float_as_uint(f), s = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;\n"
    "  if (a >= 0x7f800000u) return (unsigned short)(s | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u));\n"
    "  if (a >= 0x477ff000u) return (unsigned short)(s | 0x7c00u);\n"
    "  if (a < 0x38800000u) {\n"
    "    float x = __uint_as_float(a) * 16777216.0f; unsigned m = (unsigned)x; float r = x - (float)m;\n"
    "    if (r > 0.5f || (r == 0.5f && (m & 1u))) m++;\n"
    "    return (unsigned short)(s | m);\n"
    "  }\n"
    "  a -= 0x38000000u; a += 0xfffu + ((a >> 13) & 1u);\n"
    "  return (unsigned short)(s | (a >> 13));\n"
    "}\n"
    "__device__ __forceinline__ float tc_b2f(unsigned short h) { return __uint_as_float((unsigned)h << 16); }\n"
    "__device__ __forceinline__ unsigned short tc_f2b(float f) {\n"
    "  unsigned u = __float_as_uint(f);\n"
    "  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);\n"
    "  u += 0x7fffu + ((u >> 16) & 1u);\n"
    "  return (unsigned short)(u >> 16);\n"
    "}\n"
    "__device__ __forceinline__ int tc_f2i(float v) {\n"
    "  if (v != v) return 0;\n"
    "  if (v >= 2147483647.0f) return 2147483647;\n"
    "  if (v <= -2147483648.0f) return -2147483647 - 1;\n"
    "  return (int)v;\n"
    "}\n",
    "__device__ __forceinline__ float tc_comb(float a, float v, int c) {\n"
    "  return c == 0 ? a + v : c == 1 ? ((v > a || v != v) ? v : a) : ((v < a || v != v) ? v : a);\n"
    "}\n"
    "/* the block's reduction in a fixed order; every thread gets the result */\n"
    "__device__ float tc_block_reduce(float v, int c, float idn, float *red) {\n"
    "  int o, w = threadIdx.x >> 5, l = threadIdx.x & 31, nw = (blockDim.x + 31) >> 5;\n"
    "  for (o = 16; o > 0; o >>= 1) v = tc_comb(v, __shfl_xor_sync(0xffffffffu, v, o), c);\n"
    "  __syncthreads();\n"
    "  if (l == 0) red[w] = v;\n"
    "  __syncthreads();\n"
    "  v = l < nw ? red[l] : idn;\n"
    "  for (o = 16; o > 0; o >>= 1) v = tc_comb(v, __shfl_xor_sync(0xffffffffu, v, o), c);\n"
    "  return v;\n"
    "}\n"
    "#define TC__SIGMOID_(v) (1.0f / (1.0f + expf(-(v))))\n",
    "typedef int int32_t;\ntypedef unsigned int uint32_t;\n"
    "__device__ __forceinline__ int32_t tc__ipow(int32_t a, int32_t b) {\n"
    "  uint32_t r = 1, base = (uint32_t)a;\n"
    "  if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) ? -1 : 1) : 0;\n"
    "  while (b) { if (b & 1) r *= base; base *= base; b >>= 1; }\n"
    "  return (int32_t)r;\n"
    "}\n",
    TC__UNARY_OPS(TC__CU_UN_) TC__UNARY_ATTR_OPS(TC__CU_UN_) TC__BINARY_OPS(TC__CU_BIN_) TC__COMPARE_OPS(TC__CU_BIN_) NULL};
#undef TC__CU_UN_
#undef TC__CU_BIN_

/* Whether k runs as a row kernel (the executor's rule, tc__krun_prepare). */
TC__FN int tc__cuda_is_rows(const tc__kernel *k) { return k->nslot > 0 || k->nstage > 1; }

TC__FN const char *tc__cu_ctype(tc_dtype dt) {
    return dt == TC_F32 ? "float" : dt == TC_I32 ? "int" : dt == TC_BOOL ? "unsigned char" : "unsigned short";
}

/* The float value of an element expression of dtype dt. */
TC__FN const char *tc__cu_tof(tc_dtype dt) {
    return dt == TC_F32 ? "" : dt == TC_F16 ? "tc_h2f" : dt == TC_BF16 ? "tc_b2f" : dt == TC_BOOL ? "(float)(0 != " : "(float)(";
}
TC__FN const char *tc__cu_tof_end(tc_dtype dt) { return dt == TC_F32 || dt == TC_F16 || dt == TC_BF16 ? "" : ")"; }

/* A float's conversion to dtype dt, as a prefix of "(value)"; a bool's
 * closes with ")" after the value (tc__cu_fromf_end). */
TC__FN const char *tc__cu_fromf(tc_dtype dt) {
    return dt == TC_F32 ? "" : dt == TC_F16 ? "tc_f2h" : dt == TC_BF16 ? "tc_f2b" : dt == TC_I32 ? "tc_f2i" : "(unsigned char)(0.f != ";
}

TC__FN const char *tc__cu_fromf_end(tc_dtype dt) { return dt == TC_BOOL ? ")" : ""; }

/* The element offset of access a at the domain index i0.. (the row dims
 * at 0 when `row0_only`: the scalar stage). */
TC__FN void tc__cu_offset(tc__text *o, const tc__kernel *k, int a, int row0_only) {
    int d, any = 0;
    tc__text_printf(o, "(");
    for (d = 0; d < k->ndim; d++) {
        if (row0_only && d >= k->row0) break;
        tc__text_printf(o, "%sp.st[%d][%d] * i%d", any ? " + " : "", a, d, d);
        any = 1;
    }
    tc__text_printf(o, "%s)", any ? "" : "0");
}

/* Unravels `flat` over dims [lo, hi) into i<lo>..i<hi-1>. */
TC__FN void tc__cu_unravel(tc__text *o, const char *ind, const char *flat, int lo, int hi) {
    int d;
    if (lo >= hi) return;
    tc__text_printf(o, "%si64 t_ = %s;\n", ind, flat);
    for (d = hi - 1; d > lo; d--) tc__text_printf(o, "%si64 i%d = t_ %% p.sh[%d]; t_ /= p.sh[%d];\n", ind, d, d, d);
    tc__text_printf(o, "%si64 i%d = t_;\n", ind, lo);
}

/* Operand a as the instruction reads it: a * as + at, through the gate au. */
TC__FN void tc__cu_operand_a(tc__text *o, const tc__vins *in) {
    if (in->au >= 0) tc__text_printf(o, "tc_%s(", tc__optable[in->au].name);
    if (in->as >= 0 && in->at >= 0) tc__text_printf(o, "(r%d * r%d + r%d)", in->a, in->as, in->at);
    else if (in->as >= 0) tc__text_printf(o, "(r%d * r%d)", in->a, in->as);
    else if (in->at >= 0) tc__text_printf(o, "(r%d + r%d)", in->a, in->at);
    else tc__text_printf(o, "r%d", in->a);
    if (in->au >= 0) tc__text_printf(o, ", 0.f, 0.f)");
}

/* One instruction of a stage (row_only: the scalar stage's accesses). */
TC__FN void tc__cu_ins(tc__text *o, const tc__kernel *k, const tc_dtype *dt, const tc__vins *in, int scalar) {
    const char *ind = "      ";
    tc_dtype d;
    switch (in->op) {
    case TC__V_LOAD:
        d = dt[in->a];
        tc__text_printf(o, "%sr%d = ", ind, in->dst);
        tc__text_printf(o, "%s%s((const %s *)p.b[%d])[", tc__cu_tof(d), d == TC_F16 || d == TC_BF16 ? "(" : "", tc__cu_ctype(d), in->a);
        tc__cu_offset(o, k, in->a, scalar);
        tc__text_printf(o, "]%s;\n", d == TC_F16 || d == TC_BF16 ? ")" : tc__cu_tof_end(d));
        return;
    case TC__V_CONST: tc__text_printf(o, "%sr%d = __uint_as_float(0x%08xu);\n", ind, in->dst, (unsigned)tc__f32_to_bits(in->f0)); return;
    case TC__V_SLOT: tc__text_printf(o, "%sr%d = s%d;\n", ind, in->dst, in->a); return;
    case TC__V_LOADL: tc__text_printf(o, "%sr%d = L[%d * rowlen + j];\n", ind, in->dst, in->a); return;
    case TC__V_STOREL: tc__text_printf(o, "%sL[%d * rowlen + j] = r%d;\n", ind, in->a, in->b); return;
    case TC__V_STORE:
        d = dt[in->a];
        tc__text_printf(o, "%s((%s *)p.b[%d])[", ind, tc__cu_ctype(d), in->a);
        tc__cu_offset(o, k, in->a, scalar);
        tc__text_printf(o, "] = %s(r%d)%s;\n", tc__cu_fromf(d), in->b, tc__cu_fromf_end(d));
        return;
    case TC__V_ACC:
        if (in->c == TC__COMB_SUMSQ) tc__text_printf(o, "%sa%d += r%d * r%d;\n", ind, in->a, in->b, in->b);
        else if (in->c == TC__COMB_SUMSQ_LO) /* the squares scaled by 2^-96: a sum no finite row overflows */
            tc__text_printf(o, "%s{ const float q_ = r%d * 1.2621774483536188887e-29f; a%d += q_ * q_; }\n", ind, in->b, in->a);
        else tc__text_printf(o, "%sa%d = tc_comb(a%d, r%d, %d);\n", ind, in->a, in->a, in->b, in->c);
        return;
    default: break;
    }
    tc__text_printf(o, "%sr%d = ", ind, in->dst);
    if (in->op == TC__OP_WHERE) {
        tc__text_printf(o, "0.f != ");
        tc__cu_operand_a(o, in);
        tc__text_printf(o, " ? r%d : r%d;\n", in->b, in->c);
    } else if (in->op == TC__OP_CLONE || in->op == TC__OP_CAST) {
        tc__cu_operand_a(o, in);
        tc__text_printf(o, ";\n");
    } else if (in->bu >= 0 || in->au >= 0) { /* a product with gates */
        tc__cu_operand_a(o, in);
        if (in->bu >= 0) tc__text_printf(o, " * tc_%s(r%d, 0.f, 0.f);\n", tc__optable[in->bu].name, in->b);
        else tc__text_printf(o, " * r%d;\n", in->b);
    } else if (in->b >= 0) {
        tc__text_printf(o, "tc_%s(", tc__optable[in->op].name);
        tc__cu_operand_a(o, in);
        tc__text_printf(o, ", r%d);\n", in->b);
    } else {
        tc__text_printf(o, "tc_%s(", tc__optable[in->op].name);
        tc__cu_operand_a(o, in);
        tc__text_printf(o, ", __uint_as_float(0x%08xu), __uint_as_float(0x%08xu));\n", (unsigned)tc__f32_to_bits(in->f0),
                        (unsigned)tc__f32_to_bits(in->f1));
    }
}

TC__FN void tc__cu_stage_code(tc__text *o, const tc__kernel *k, const tc_dtype *dt, const tc__kstage *stg) {
    int i;
    for (i = stg->begin; i < stg->end; i++) tc__cu_ins(o, k, dt, &k->code[i], stg->scalar);
}

/* The grid-stride loop over a kernel's domain, e and its index i<d>. */
TC__FN void tc__cu_domain_loop(tc__text *o, const tc__kernel *k) {
    int d;
    tc__text_printf(o, "  i64 n = 1");
    for (d = 0; d < k->ndim; d++) tc__text_printf(o, " * p.sh[%d]", d);
    tc__text_printf(o, ";\n  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (i64)gridDim.x * blockDim.x) {\n");
    tc__cu_unravel(o, "    ", "e", 0, k->ndim);
}

TC__FN void tc__cu_pointwise(tc__text *o, const tc__kernel *k, const tc_dtype *dt) {
    tc__cu_domain_loop(o, k);
    tc__cu_stage_code(o, k, dt, &k->stage[0]);
    tc__text_printf(o, "  }\n");
}

/* A copy kernel (one STORE of access 0's element, of the same dtype):
 * the bits moved as they are, no float round trip. */
TC__FN void tc__cu_copy(tc__text *o, const tc__kernel *k, const tc_dtype *dt) {
    tc__cu_domain_loop(o, k);
    tc__text_printf(o, "    ((%s *)p.b[%d])[", tc__cu_ctype(dt[k->code[0].a]), k->code[0].a);
    tc__cu_offset(o, k, k->code[0].a, 0);
    tc__text_printf(o, "] = ((const %s *)p.b[0])[", tc__cu_ctype(dt[0]));
    tc__cu_offset(o, k, 0, 0);
    tc__text_printf(o, "];\n  }\n");
}

TC__FN void tc__cu_rows(tc__text *o, const tc__kernel *k, const tc_dtype *dt) {
    int d, si, i;
    tc__text_printf(o, "  __shared__ float red[32];\n  i64 rows = 1, rowlen = 1;\n");
    for (d = 0; d < k->ndim; d++) tc__text_printf(o, "  %s *= p.sh[%d];\n", d < k->row0 ? "rows" : "rowlen", d);
    /* the row's values several stages read: in shared memory when they fit
     * (the launch gives it), else in the block's slice of the workspace */
    if (k->nlocal > 0)
        tc__text_printf(o, "  extern __shared__ float tc_smem[];\n"
                           "  float *L = p.ws ? (float *)p.ws + (i64)blockIdx.x * %d * rowlen : tc_smem;\n", k->nlocal);
    tc__text_printf(o, "  for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {\n");
    tc__cu_unravel(o, "    ", "row", 0, k->row0);
    for (i = 0; i < k->nslot; i++) tc__text_printf(o, "    float s%d = 0.f; (void)s%d;\n", i, i);
    for (si = 0; si < k->nstage; si++) {
        const tc__kstage *stg = &k->stage[si];
        int acc[TC__VM_MAXSLOT], nacc = 0;
        for (i = stg->begin; i < stg->end; i++)
            if (k->code[i].op == TC__V_ACC) {
                int q, seen = 0;
                for (q = 0; q < nacc; q++) seen |= acc[q] == k->code[i].a;
                if (!seen) acc[nacc++] = k->code[i].a;
            }
        tc__text_printf(o, "    { /* stage %d */\n", si);
        for (i = 0; i < nacc; i++) {
            double idn = tc__comb_identity(k->slot_comb[acc[i]]);
            tc__text_printf(o, "    float a%d = %s;\n", acc[i], idn == 0 ? "0.f" : idn > 0 ? "TC_INF" : "-TC_INF");
        }
        if (stg->scalar) {
            tc__text_printf(o, "    if (threadIdx.x == 0) {\n");
            for (d = k->row0; d < k->ndim; d++) tc__text_printf(o, "      const i64 i%d = 0; (void)i%d;\n", d, d);
        } else {
            tc__text_printf(o, "    for (i64 j = threadIdx.x; j < rowlen; j += blockDim.x) {\n");
            tc__cu_unravel(o, "      ", "j", k->row0, k->ndim);
        }
        tc__cu_stage_code(o, k, dt, stg);
        tc__text_printf(o, "    }\n");
        for (i = 0; i < nacc; i++) {
            int sl = acc[i], comb = k->slot_comb[sl];
            double idn = tc__comb_identity(comb);
            tc__text_printf(o, "    s%d = tc_block_reduce(a%d, %d, %s, red) * __uint_as_float(0x%08xu);\n", sl, sl,
                            TC__COMB_IS_SUM(comb) ? 0 : comb, idn == 0 ? "0.f" : idn > 0 ? "TC_INF" : "-TC_INF",
                            (unsigned)tc__f32_to_bits(k->slot_scale[sl]));
        }
        tc__text_printf(o, "    }\n");
    }
    /* the next row reuses the reduction's shared buffer */
    tc__text_printf(o, "    __syncthreads();\n  }\n");
}

/* Appends kernel k as `extern "C" __global__ void <name>(P_<name> p)`;
 * dt[a] is access a's dtype. */
TC__FN void tc__cuda_emit_kernel(tc__text *o, const tc__kernel *k, const tc_dtype *dt, const char *name) {
    int r;
    tc__text_printf(o, "\nstruct P_%s { u64 b[%d]; i64 st[%d][%d]; i64 sh[%d]; u64 ws; };\n", name, k->nacc, k->nacc,
                    k->ndim > 0 ? k->ndim : 1, k->ndim > 0 ? k->ndim : 1);
    tc__text_printf(o, "extern \"C\" __global__ void __launch_bounds__(%d) %s(const P_%s p) {\n", TC__CU_BLOCK, name, name);
    if (k->nreg > 0) {
        tc__text_printf(o, "  float r0");
        for (r = 1; r < k->nreg; r++) tc__text_printf(o, ", r%d", r);
        tc__text_printf(o, ";\n");
    }
    if (tc__cuda_is_rows(k)) tc__cu_rows(o, k, dt);
    else if (k->ncode == 1 && k->code[0].op == TC__V_STORE) tc__cu_copy(o, k, dt);
    else tc__cu_pointwise(o, k, dt);
    tc__text_printf(o, "}\n");
}

/* The GEMM kernels' common head: the parameter block tc__cuda_gemm packs,
 * the kernel's signature, the batch's offsets (the grid's z) and the
 * operands' typed pointers A, B, C. */
TC__FN void tc__cu_gemm_head(tc__text *o, const char *name, int threads, tc_dtype da, tc_dtype db, tc_dtype dc) {
    tc__text_printf(o, "\nstruct P_%s { u64 a, b, c, bias; i64 M, N, K, sam, sak, sbk, sbn, scm, scn, nb; "
                       "i64 bsh[%d], bsa[%d], bsb[%d], bsc[%d]; i64 nb_bias; };\n",
                    name, TC_MAX_DIMS, TC_MAX_DIMS, TC_MAX_DIMS, TC_MAX_DIMS);
    tc__text_printf(o, "extern \"C\" __global__ void __launch_bounds__(%d) %s(const P_%s p) {\n", threads, name, name);
    tc__text_printf(o, "  i64 t_ = blockIdx.z, oa = 0, ob = 0, oc = 0;\n"
                       "  for (int d = (int)p.nb - 1; d >= 0; d--) { i64 i = t_ %% p.bsh[d]; t_ /= p.bsh[d];"
                       " oa += i * p.bsa[d]; ob += i * p.bsb[d]; oc += i * p.bsc[d]; }\n");
    tc__text_printf(o, "  const %s *A = (const %s *)p.a + oa;\n  const %s *B = (const %s *)p.b + ob;\n  %s *C = (%s *)p.c + oc;\n",
                    tc__cu_ctype(da), tc__cu_ctype(da), tc__cu_ctype(db), tc__cu_ctype(db), tc__cu_ctype(dc), tc__cu_ctype(dc));
}

/* An f32-accumulating GEMM, C[b] = A[b] B[b] (+ bias over columns), every
 * operand by strides (a transposed weight, broadcast batch dims, 1-D
 * operands are strides), A, B, C and the bias of any float dtype.  Tiles of
 * 64 x 64 per block of 256 threads, each thread a 4 x 4 register tile, K in
 * steps of 16 through shared memory (padded rows: no bank conflicts on the
 * transposed reads); the batch is the grid's z.  The template where no
 * tensor-core one applies (tc__cu_gemm_mma). */
TC__FN void tc__cu_gemm_simt(tc__text *o, const char *name, tc_dtype da, tc_dtype db, tc_dtype dc, int bias, tc_dtype dbias) {
    static const char *const cv[] = {"", "tc_h2f", "tc_b2f", "(float)", "(float)"};
    tc__cu_gemm_head(o, name, 256, da, db, dc);
    tc__text_printf(o, "  __shared__ float As[16][68];\n  __shared__ float Bs[16][68];\n");
    tc__text_printf(o, "  const int tx = threadIdx.x %% 16, ty = threadIdx.x / 16;\n"
                       "  const i64 m0 = (i64)blockIdx.y * 64, n0 = (i64)blockIdx.x * 64;\n"
                       "  float acc[4][4];\n  for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) acc[i][j] = 0.f;\n"
                       "  for (i64 k0 = 0; k0 < p.K; k0 += 16) {\n"
                       "    for (int e = threadIdx.x; e < 1024; e += 256) {\n"
                       "      int mm = e >> 4, kk = e & 15; i64 gm = m0 + mm, gk = k0 + kk;\n"
                       "      As[kk][mm] = gm < p.M && gk < p.K ? %s(A[gm * p.sam + gk * p.sak]) : 0.f;\n"
                       "      int kb = e >> 6, nn = e & 63; i64 gk2 = k0 + kb, gn = n0 + nn;\n"
                       "      Bs[kb][nn] = gk2 < p.K && gn < p.N ? %s(B[gk2 * p.sbk + gn * p.sbn]) : 0.f;\n"
                       "    }\n    __syncthreads();\n"
                       "#pragma unroll\n    for (int kk = 0; kk < 16; kk++) {\n"
                       "      float a[4], b[4];\n"
                       "      for (int i = 0; i < 4; i++) { a[i] = As[kk][ty * 4 + i]; b[i] = Bs[kk][tx * 4 + i]; }\n"
                       "      for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);\n"
                       "    }\n    __syncthreads();\n  }\n",
                    cv[da], cv[db]);
    tc__text_printf(o, "  for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) {\n"
                       "    i64 gm = m0 + ty * 4 + i, gn = n0 + tx * 4 + j;\n"
                       "    if (gm >= p.M || gn >= p.N) continue;\n"
                       "    float v = acc[i][j];\n");
    if (bias) tc__text_printf(o, "    v += %s(((const %s *)p.bias)[gn * p.nb_bias]);\n", cv[dbias], tc__cu_ctype(dbias));
    tc__text_printf(o, "    C[gm * p.scm + gn * p.scn] = %s(v)%s;\n  }\n}\n", tc__cu_fromf(dc), tc__cu_fromf_end(dc));
}


/* The tensor-core helpers, printed once before the first tensor-core GEMM:
 * mma.sync, ldmatrix and cp.async as small device functions with inline
 * PTX (the emulator, which defines __TCEMU__, has its own, with the PTX
 * ISA's fragment layouts), and the shared-memory tile helpers.  A tile row
 * is R 16-byte chunks; chunk c of row r lives at chunk c ^ tc_swz<R>(r), an
 * XOR swizzle under which the 8 rows an ldmatrix (or a fragment's 32-bit
 * loads) reads fall in distinct banks. */
static const char *const tc__cu_mma_prelude[] = {
    "#ifndef __TCEMU__\n"
    "__device__ __forceinline__ unsigned tc_smem_addr(const void *p) {\n"
    "  unsigned s; asm(\"{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }\" : \"=r\"(s) : \"l\"(p)); return s;\n"
    "}\n"
    "#define TC_MMA_(name, shape, ty)                                                                  \\\n"
    "  __device__ __forceinline__ void name(float *d, const unsigned *a, const unsigned *b) {         \\\n"
    "    asm volatile(\"mma.sync.aligned.\" shape \".row.col.f32.\" ty \".\" ty \".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\\n\" \\\n"
    "                 : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3])                               \\\n"
    "                 : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b[0]), \"r\"(b[1]));          \\\n"
    "  }\n"
    "TC_MMA_(tc_mma_m16n8k16_f16, \"m16n8k16\", \"f16\")\n"
    "TC_MMA_(tc_mma_m16n8k16_bf16, \"m16n8k16\", \"bf16\")\n"
    "TC_MMA_(tc_mma_m16n8k8_tf32, \"m16n8k8\", \"tf32\")\n"
    "__device__ __forceinline__ unsigned tc_f2tf32(float f) { unsigned r; asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(f)); return r; }\n"
    "__device__ __forceinline__ void tc_ldmatrix_x4(unsigned *r, const void *p) {\n"
    "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\\n\"\n"
    "               : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(tc_smem_addr(p)));\n"
    "}\n"
    "__device__ __forceinline__ void tc_ldmatrix_x4_trans(unsigned *r, const void *p) {\n"
    "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\\n\"\n"
    "               : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(tc_smem_addr(p)));\n"
    "}\n"
    "__device__ __forceinline__ void tc_cp_async_16(void *d, const void *s, int n) {\n"
    "  asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\" :: \"r\"(tc_smem_addr(d)), \"l\"(s), \"r\"(n) : \"memory\");\n"
    "}\n"
    "__device__ __forceinline__ void tc_cp_async_commit() { asm volatile(\"cp.async.commit_group;\\n\" ::: \"memory\"); }\n"
    "template <int N> __device__ __forceinline__ void tc_cp_async_wait() { asm volatile(\"cp.async.wait_group %0;\\n\" :: \"n\"(N) : \"memory\"); }\n"
    "#endif\n",
    "template <int R> __device__ __forceinline__ int tc_soff(int r, int c) { return r * (R * 16) + ((c ^ tc_swz<R>(r)) << 4); }\n"
    "template <int R> __device__ __forceinline__ float tc_lds32(const unsigned char *s, int r, int c) {\n"
    "  return *(const float *)(s + tc_soff<R>(r, c >> 2) + ((c & 3) << 2));\n"
    "}\n"
    "/* rows [r0, r0 + ROWS) x R chunks of a tile of G (element (r, c) at r srow + c scol):\n"
    "   cp.async when the chunks are contiguous and aligned (fast), else element by element;\n"
    "   past rlim rows or clim columns, zeros */\n"
    "template <int ES, int R, int ROWS> __device__ __forceinline__ void tc_tile_load(unsigned char *s, const void *G, i64 r0,\n"
    "    i64 c0, i64 rlim, i64 clim, i64 srow, i64 scol, int fast) {\n"
    "  const unsigned char *g = (const unsigned char *)G;\n"
    "  for (int c = threadIdx.x; c < ROWS * R; c += blockDim.x) {\n"
    "    const int r = c / R, ch = c % R;\n"
    "    const i64 gr = r0 + r, gc = c0 + (i64)ch * (16 / ES);\n"
    "    unsigned char *d = s + tc_soff<R>(r, ch);\n"
    "    i64 n = gr < rlim ? clim - gc : 0;\n"
    "    n = n < 0 ? 0 : n > 16 / ES ? 16 / ES : n;\n"
    "    if (fast) tc_cp_async_16(d, n > 0 ? (const void *)(g + (gr * srow + gc) * ES) : G, (int)n * ES);\n"
    "    else for (int e = 0; e < 16 / ES; e++) {\n"
    "      if (ES == 2) ((unsigned short *)d)[e] = e < n ? ((const unsigned short *)g)[gr * srow + (gc + e) * scol] : (unsigned short)0;\n"
    "      else ((unsigned *)d)[e] = e < n ? ((const unsigned *)g)[gr * srow + (gc + e) * scol] : 0u;\n"
    "    }\n"
    "  }\n"
    "}\n",
    NULL};

#ifdef TCOMPILE_TESTING
/* Tests plant a wrong fragment (1: A's rows 8..15 and columns 8..15
 * swapped in the registers mma reads) or no swizzle (2: bank conflicts),
 * which the emulator must catch. */
static int tc__cu_plant_frag = 0;
#else
#define tc__cu_plant_frag 0
#endif

TC__FN void tc__cuda_emit_mma_prelude(tc__text *o) {
    int i;
    for (i = 0; tc__cu_mma_prelude[i]; i++) {
        if (i == 1)
            tc__text_printf(o, "template <int R> __device__ __forceinline__ int tc_swz(int r) { return %s; }\n",
                            tc__cu_plant_frag == 2 ? "0 * r" : "R == 4 ? (r >> 1) & 3 : R == 8 ? r & 7 : (r & 3) << 1");
        tc__text_printf(o, "%s", tc__cu_mma_prelude[i]);
    }
}

/* A tensor-core GEMM (kind 1: f16, 2: bf16 inputs, mma.sync m16n8k16; 3:
 * f32 inputs as TF32, m16n8k8), f32 accumulators, the same parameters and
 * 64 x 64 tiles per block as the SIMT template, 4 warps of 32 x 32 each
 * (2 x 4 mma tiles).  K in steps of BK (64 bytes of a row of A) through a
 * 3-stage cp.async pipeline in swizzled shared memory: A as [m][k], B as
 * [n][k] when bt (its k contiguous: a linear's weight) else [k][n], read
 * by ldmatrix (.trans for [k][n]) for 16-bit inputs, by 32-bit loads
 * rounded to TF32 for f32.  The chunks of a tile are copied by cp.async
 * when the operand's contiguous dim has stride 1 and its rows are 16-byte
 * aligned, else element by element; edges past M, N, K are zeros.  The
 * bias is added to the accumulators before the one store. */
TC__FN void tc__cu_gemm_mma(tc__text *o, const char *name, int kind, int bt, tc_dtype dc, int bias, tc_dtype dbias) {
    static const char *const cv[] = {"", "tc_h2f", "tc_b2f", "(float)", "(float)"};
    tc_dtype dt = kind == 1 ? TC_F16 : kind == 2 ? TC_BF16 : TC_F32;
    int es = kind == 3 ? 4 : 2, bk = 64 / es, rb = bt ? 4 : 4 * es; /* B's chunks per row ([k][n]: 64 columns) */
    tc__cu_gemm_head(o, name, 128, dt, dt, dc);
    tc__text_printf(o, "  __shared__ __align__(128) unsigned char sm[3][8192];\n"
                       "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wm = (warp >> 1) * 32, wn = (warp & 1) * 32;\n"
                       "  const int g = lane >> 2, t = lane & 3; (void)g; (void)t;\n"
                       "  const i64 m0 = (i64)blockIdx.y * 64, n0 = (i64)blockIdx.x * 64;\n"
                       "  const int fa = p.sak == 1 && ((u64)A & 15) == 0 && ((p.sam * %d) & 15) == 0;\n"
                       "  const int fb = p.%s == 1 && ((u64)B & 15) == 0 && ((p.%s * %d) & 15) == 0;\n"
                       "  float acc[2][4][4];\n"
                       "  for (int i = 0; i < 2; i++) for (int j = 0; j < 4; j++) for (int e = 0; e < 4; e++) acc[i][j][e] = 0.f;\n"
                       "  const int nk = (int)((p.K + %d) / %d);\n",
                    es, bt ? "sbk" : "sbn", bt ? "sbn" : "sbk", es, bk - 1, bk);
    /* one stage's tiles: A's 64 x BK, B's BK x 64 */
    tc__text_printf(o, "#define TC_LD_(st, k0) do { \\\n"
                       "    tc_tile_load<%d, 4, 64>(sm[st], A, m0, (k0), p.M, p.K, p.sam, p.sak, fa); \\\n", es);
    if (bt) tc__text_printf(o, "    tc_tile_load<%d, 4, 64>(sm[st] + 4096, B, n0, (k0), p.N, p.K, p.sbn, p.sbk, fb); \\\n", es);
    else tc__text_printf(o, "    tc_tile_load<%d, %d, %d>(sm[st] + 4096, B, (k0), n0, p.K, p.N, p.sbk, p.sbn, fb); \\\n", es, rb, bk);
    tc__text_printf(o, "  } while (0)\n"
                       "  for (int s = 0; s < 2; s++) { if (s < nk) TC_LD_(s, (i64)s * %d); tc_cp_async_commit(); }\n"
                       "  for (int kt = 0; kt < nk; kt++) {\n"
                       "    tc_cp_async_wait<1>(); /* tile kt has landed (this thread's copies) */\n"
                       "    __syncthreads();       /* everyone's, and stage (kt + 2) %% 3 is read by no one */\n"
                       "    if (kt + 2 < nk) TC_LD_((kt + 2) %% 3, (i64)(kt + 2) * %d);\n"
                       "    tc_cp_async_commit();\n"
                       "    const unsigned char *sa = sm[kt %% 3], *sb = sa + 4096; (void)sb;\n"
                       "#pragma unroll\n"
                       "    for (int ks = 0; ks < 2; ks++) {\n"
                       "      unsigned af[2][4], bf[4][2];\n",
                    bk, bk);
    if (kind != 3) {
        if (tc__cu_plant_frag != 1)
            tc__text_printf(o, "      for (int mi = 0; mi < 2; mi++) tc_ldmatrix_x4(af[mi], sa + tc_soff<4>(wm + mi * 16 + (lane & 15), ks * 2 + (lane >> 4)));\n");
        else /* planted: matrices 1 and 2 (rows 8..15 and columns 8..15) swapped */
            tc__text_printf(o, "      for (int mi = 0; mi < 2; mi++) tc_ldmatrix_x4(af[mi], sa + tc_soff<4>(wm + mi * 16 + (lane & 7) + ((lane >> 4) << 3), ks * 2 + ((lane >> 3) & 1)));\n");
        tc__text_printf(o, "      for (int nj = 0; nj < 2; nj++) {\n        unsigned r4[4];\n");
        if (bt)
            tc__text_printf(o, "        tc_ldmatrix_x4(r4, sb + tc_soff<4>(wn + nj * 16 + (lane & 7) + ((lane >> 4) << 3), ks * 2 + ((lane >> 3) & 1)));\n");
        else
            tc__text_printf(o, "        tc_ldmatrix_x4_trans(r4, sb + tc_soff<8>(ks * 16 + (lane & 7) + (((lane >> 3) & 1) << 3), ((wn + nj * 16) >> 3) + (lane >> 4)));\n");
        tc__text_printf(o, "        bf[2 * nj][0] = r4[0]; bf[2 * nj][1] = r4[1]; bf[2 * nj + 1][0] = r4[2]; bf[2 * nj + 1][1] = r4[3];\n      }\n");
        tc__text_printf(o, "      for (int mi = 0; mi < 2; mi++) for (int ni = 0; ni < 4; ni++) tc_mma_m16n8k16_%s(acc[mi][ni], af[mi], bf[ni]);\n",
                        kind == 1 ? "f16" : "bf16");
    } else {
        tc__text_printf(o, "      const int k = ks * 8 + t;\n"
                           "      for (int mi = 0; mi < 2; mi++) {\n"
                           "        const int r = wm + mi * 16 + g;\n"
                           "        af[mi][0] = tc_f2tf32(tc_lds32<4>(sa, r, k));\n"
                           "        af[mi][%d] = tc_f2tf32(tc_lds32<4>(sa, r + 8, k));\n"
                           "        af[mi][%d] = tc_f2tf32(tc_lds32<4>(sa, r, k + 4));\n"
                           "        af[mi][3] = tc_f2tf32(tc_lds32<4>(sa, r + 8, k + 4));\n      }\n"
                           "      for (int ni = 0; ni < 4; ni++) {\n        const int n = wn + ni * 8 + g;\n",
                        tc__cu_plant_frag == 1 ? 2 : 1, tc__cu_plant_frag == 1 ? 1 : 2);
        if (bt)
            tc__text_printf(o, "        bf[ni][0] = tc_f2tf32(tc_lds32<4>(sb, n, k)); bf[ni][1] = tc_f2tf32(tc_lds32<4>(sb, n, k + 4));\n");
        else
            tc__text_printf(o, "        bf[ni][0] = tc_f2tf32(tc_lds32<16>(sb, k, n)); bf[ni][1] = tc_f2tf32(tc_lds32<16>(sb, k + 4, n));\n");
        tc__text_printf(o, "      }\n      for (int mi = 0; mi < 2; mi++) for (int ni = 0; ni < 4; ni++) tc_mma_m16n8k8_tf32(acc[mi][ni], af[mi], bf[ni]);\n");
    }
    tc__text_printf(o, "    }\n  }\n  tc_cp_async_wait<0>();\n#undef TC_LD_\n");
    /* the accumulators (c_i: row groupID, + 8 for i >= 2; column 2 t + i %% 2) */
    tc__text_printf(o, "  for (int mi = 0; mi < 2; mi++) for (int ni = 0; ni < 4; ni++) for (int i = 0; i < 4; i++) {\n"
                       "    const i64 gm = m0 + wm + mi * 16 + g + (i >> 1) * 8, gn = n0 + wn + ni * 8 + t * 2 + (i & 1);\n"
                       "    if (gm >= p.M || gn >= p.N) continue;\n"
                       "    float v = acc[mi][ni][i];\n");
    if (bias) tc__text_printf(o, "    v += %s(((const %s *)p.bias)[gn * p.nb_bias]);\n", cv[dbias], tc__cu_ctype(dbias));
    tc__text_printf(o, "    C[gm * p.scm + gn * p.scn] = %s(v)%s;\n  }\n}\n", tc__cu_fromf(dc), tc__cu_fromf_end(dc));
}

/* Launch l's GEMM: kind 0 the SIMT template (any float dtypes), else the
 * tensor-core one (tc__cu_gemm_mma; bt: B's layout in shared memory). */
TC__FN void tc__cuda_emit_gemm(tc__text *o, const char *name, tc_dtype da, tc_dtype db, tc_dtype dc, int bias, tc_dtype dbias,
                               int kind, int bt) {
    if (kind) tc__cu_gemm_mma(o, name, kind, bt, dc, bias, dbias);
    else tc__cu_gemm_simt(o, name, da, db, dc, bias, dbias);
}

/* ---- the ops the fuser leaves alone: one kernel per launch ----------------- */

/* Element k's address expression of input `in` at index variables
 * <var>0..<var>n (row-major over its own dims, its own strides), baked. */
TC__FN void tc__cu_elem(tc__text *o, const tc_tensor *t, int k, const char *var) {
    int d;
    tc__text_printf(o, "((const %s *)p.in[%d])[0", tc__cu_ctype(t->dtype), k);
    for (d = 0; d < t->ndim; d++) tc__text_printf(o, " + (i64)%s%d * %lld", var, d, (long long)t->strides[d]);
    tc__text_printf(o, "]");
}


/* "out[e] = <value of the element expression printed by fn>" with the
 * conversion the dtypes need (the bits as they are when they agree). */
TC__FN void tc__cu_assign_begin(tc__text *o, tc_dtype from, tc_dtype to) {
    if (from == to) tc__text_printf(o, "      out[e] = ");
    else
        tc__text_printf(o, "      out[e] = %s(%s(", tc__cu_fromf(to), tc__cu_tof(from));
}
TC__FN void tc__cu_assign_end(tc__text *o, tc_dtype from, tc_dtype to) {
    if (from == to) tc__text_printf(o, ";\n");
    else tc__text_printf(o, ")%s)%s;\n", tc__cu_tof_end(from), tc__cu_fromf_end(to));
}

/* The grid-stride loop over the output's elements, e and its index o<d>. */
TC__FN void tc__cu_out_loop(tc__text *o, const char *name, const tc_tensor *out, int nin) {
    int d;
    tc__text_printf(o, "\nstruct P_%s { u64 in[%d]; u64 out; u64 flag; };\n", name, nin > 0 ? nin : 1);
    tc__text_printf(o, "extern \"C\" __global__ void __launch_bounds__(%d) %s(const P_%s p) {\n", TC__CU_BLOCK, name, name);
    tc__text_printf(o, "  %s *out = (%s *)p.out;\n  int *flag = (int *)p.flag; (void)flag;\n  const i64 n = %lldLL;\n",
                    tc__cu_ctype(out->dtype), tc__cu_ctype(out->dtype), (long long)tc__numel(out));
    tc__text_printf(o, "  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (i64)gridDim.x * blockDim.x) {\n"
                       "    i64 t_ = e;\n");
    for (d = out->ndim - 1; d >= 0; d--)
        tc__text_printf(o, "    const i64 o%d = t_ %% %lldLL; t_ /= %lldLL; (void)o%d;\n", d, (long long)out->shape[d],
                        (long long)(out->shape[d] > 0 ? out->shape[d] : 1), d);
}

/* The index variable idx<d> of input `idx` read at s<..>, checked against
 * [0, n): out of range raises the flag and reads index 0 (the call then
 * fails with TC_ERR_INDEX, as on the CPU). */
TC__FN void tc__cu_index(tc__text *o, const tc_tensor *idx, int k, const char *var, int64_t n) {
    tc__text_printf(o, "      i64 ix = ");
    tc__cu_elem(o, idx, k, var);
    tc__text_printf(o, ";\n      if (ix < 0 || ix >= %lldLL) { atomicExch(flag, 1); ix = 0; }\n", (long long)n);
}

/* out[e] = input k at s<0..>, converted. */
TC__FN void tc__cu_copy_from(tc__text *o, const tc_tensor *t, int k, const tc_tensor *out) {
    tc__cu_assign_begin(o, t->dtype, out->dtype);
    tc__cu_elem(o, t, k, "s");
    tc__cu_assign_end(o, t->dtype, out->dtype);
}

/* A window over the image of x at output (o_{n-2}, o_{n-1}) of channel c:
 * max or average pooling, or a direct convolution summed over the group's
 * input channels (part 1's: part 2's is an implicit GEMM on tensor cores). */
TC__FN void tc__cu_window(tc__text *o, const tc__call *c, const tc_tensor *x, const tc_tensor *out, int conv) {
    int nd = out->ndim, three = x->ndim == 3;
    int64_t C = x->shape[x->ndim - 3], H = x->shape[x->ndim - 2], W = x->shape[x->ndim - 1];
    int64_t kh = c->a.i[0], kw = c->a.i[1], sh = c->a.i[2], sw = c->a.i[3], ph = c->a.i[4], pw = c->a.i[5];
    int64_t dh = c->a.i[6], dw = c->a.i[7];
    const tc_tensor *w = conv ? c->ins[1] : NULL, *b = conv ? c->ins[2] : NULL;
    int64_t groups = conv ? c->a.i[8] : 1, cg = conv ? C / groups : 1, og = conv ? out->shape[nd - 3] / groups : 1;
    tc__text_printf(o, "    const i64 n_ = %s, ch = o%d, oh = o%d, ow = o%d;\n    float acc = %s;\n", three ? "0" : "o0",
                    nd - 3, nd - 2, nd - 1, conv || c->op == TC__OP_AVG_POOL2D ? "0.f" : "-TC_INF");
    tc__text_printf(o, "    (void)n_;\n");
    if (conv) tc__text_printf(o, "    for (i64 ci = (ch / %lldLL) * %lldLL; ci < (ch / %lldLL + 1) * %lldLL; ci++)\n", (long long)og,
                              (long long)cg, (long long)og, (long long)cg);
    else tc__text_printf(o, "    { const i64 ci = ch;\n");
    tc__text_printf(o, "    for (i64 ki = 0; ki < %lldLL; ki++) for (i64 kj = 0; kj < %lldLL; kj++) {\n"
                       "      const i64 ih = oh * %lldLL - %lldLL + ki * %lldLL, iw = ow * %lldLL - %lldLL + kj * %lldLL;\n"
                       "      if (ih < 0 || ih >= %lldLL || iw < 0 || iw >= %lldLL) continue;\n",
                    (long long)kh, (long long)kw, (long long)sh, (long long)ph, (long long)dh, (long long)sw, (long long)pw,
                    (long long)dw, (long long)H, (long long)W);
    tc__text_printf(o, "      const float v = %s(((const %s *)p.in[0])[n_ * %lldLL + ci * %lldLL + ih * %lldLL + iw * %lldLL])%s;\n",
                    tc__cu_tof(x->dtype), tc__cu_ctype(x->dtype), (long long)(three ? 0 : x->strides[0]),
                    (long long)x->strides[x->ndim - 3], (long long)x->strides[x->ndim - 2], (long long)x->strides[x->ndim - 1],
                    tc__cu_tof_end(x->dtype));
    if (conv)
        tc__text_printf(o, "      acc = fmaf(v, %s(((const %s *)p.in[1])[ch * %lldLL + (ci %% %lldLL) * %lldLL + ki * %lldLL + kj * %lldLL])%s, acc);\n",
                        tc__cu_tof(w->dtype), tc__cu_ctype(w->dtype), (long long)w->strides[0], (long long)cg,
                        (long long)w->strides[1], (long long)w->strides[2], (long long)w->strides[3], tc__cu_tof_end(w->dtype));
    else if (c->op == TC__OP_MAX_POOL2D) tc__text_printf(o, "      acc = (v > acc || v != v) ? v : acc;\n");
    else tc__text_printf(o, "      acc += v;\n");
    tc__text_printf(o, "    }\n%s", conv ? "" : "    }\n");
    if (c->op == TC__OP_AVG_POOL2D) { /* PyTorch's divisor: the window clipped to the padded image, or to the image */
        tc__text_printf(o, "    {\n      i64 h0 = oh * %lldLL - %lldLL, w0 = ow * %lldLL - %lldLL;\n"
                           "      i64 h1 = h0 + %lldLL < %lldLL ? h0 + %lldLL : %lldLL, w1 = w0 + %lldLL < %lldLL ? w0 + %lldLL : %lldLL;\n"
                           "      i64 cnt = (h1 - h0) * (w1 - w0);\n",
                        (long long)sh, (long long)ph, (long long)sw, (long long)pw, (long long)kh, (long long)(H + ph),
                        (long long)kh, (long long)(H + ph), (long long)kw, (long long)(W + pw), (long long)kw, (long long)(W + pw));
        if (c->a.i[10]) /* exclude_pad */
            tc__text_printf(o, "      h0 = h0 < 0 ? 0 : h0; w0 = w0 < 0 ? 0 : w0; h1 = h1 > %lldLL ? %lldLL : h1; w1 = w1 > %lldLL ? %lldLL : w1;\n"
                               "      cnt = (h1 - h0) * (w1 - w0);\n",
                            (long long)H, (long long)H, (long long)W, (long long)W);
        tc__text_printf(o, "      acc = cnt > 0 ? acc / (float)cnt : 0.f;\n    }\n");
    }
    if (b) tc__text_printf(o, "    acc += %s(((const %s *)p.in[2])[ch * %lldLL])%s;\n", tc__cu_tof(b->dtype), tc__cu_ctype(b->dtype),
                           (long long)b->strides[0], tc__cu_tof_end(b->dtype));
    tc__text_printf(o, "    out[e] = %s(acc)%s;\n", tc__cu_fromf(out->dtype), tc__cu_fromf_end(out->dtype));
}

/* A reduction the fuser leaves alone (argmax, var, integer sums, empty
 * ones): each output element's thread walks its reduced elements in
 * row-major order, in double (integers in 64 bits), as the eager kernels
 * define them.  Part 1's; part 2 splits long ones across a block. */
TC__FN void tc__cu_reduce(tc__text *o, const tc__call *c, const tc_tensor *x, const tc_tensor *out) {
    int d, od = 0, keep = (int)c->a.i[TC_MAX_DIMS], ints = !tc__is_float(x->dtype) && c->op != TC__OP_MEAN && c->op != TC__OP_VAR;
    int64_t rn = 1;
    for (d = 0; d < x->ndim; d++) { /* kept dims read the output's index, reduced ones loop */
        if (c->a.i[d]) {
            rn *= x->shape[d];
            if (keep) od++;
        } else tc__text_printf(o, "    const i64 s%d = o%d;\n", d, od++);
    }
    tc__text_printf(o, "    %s acc = %s; i64 best = -1, cnt = 0; (void)best; (void)cnt;\n    %s sq = 0; (void)sq;\n",
                    ints ? "long long" : "double",
                    c->op == TC__OP_MAX || c->op == TC__OP_ARGMAX ? (ints ? "-9223372036854775807LL - 1" : "-(double)TC_INF")
                    : c->op == TC__OP_MIN ? (ints ? "9223372036854775807LL" : "(double)TC_INF") : "0",
                    ints ? "long long" : "double");
    for (d = 0; d < x->ndim; d++)
        if (c->a.i[d]) tc__text_printf(o, "    for (i64 s%d = 0; s%d < %lldLL; s%d++)\n", d, d, (long long)x->shape[d], d);
    if (ints) { /* 64-bit integers, never through float (i32 past 2^24) */
        tc__text_printf(o, "    {\n      const long long v = (long long)%s", x->dtype == TC_BOOL ? "(0 != " : "(");
        tc__cu_elem(o, x, 0, "s");
        tc__text_printf(o, ");\n");
    } else {
        tc__text_printf(o, "    {\n      const double v = (double)%s(", tc__cu_tof(x->dtype));
        tc__cu_elem(o, x, 0, "s");
        tc__text_printf(o, ")%s;\n", tc__cu_tof_end(x->dtype));
    }
    switch (c->op) {
    case TC__OP_MAX: tc__text_printf(o, "      acc = (v > acc || v != v) ? v : acc;\n"); break;
    case TC__OP_MIN: tc__text_printf(o, "      acc = (v < acc || v != v) ? v : acc;\n"); break;
    case TC__OP_ARGMAX: /* the first NaN, else the first maximum */
        tc__text_printf(o, "      if (best < 0 || ((v > acc || v != v) && acc == acc)) { acc = v; best = cnt; }\n      cnt++;\n");
        break;
    case TC__OP_VAR: tc__text_printf(o, "      acc += v; sq += v * v; cnt++;\n"); break;
    default: tc__text_printf(o, "      acc += v;\n"); break;
    }
    tc__text_printf(o, "    }\n");
    if (c->op == TC__OP_MEAN) tc__text_printf(o, "    acc = acc / (double)%lldLL;\n", (long long)rn);
    if (c->op == TC__OP_VAR) /* sum of squared deviations from the mean, in double */
        tc__text_printf(o, "    { double m = acc / (double)%lldLL; double dev = sq - acc * m; if (dev < 0) dev = 0;"
                           " const double dof = (double)(%lldLL - %lldLL); acc = dev / (dof > 0 ? dof : 0.0); }\n",
                        (long long)rn, (long long)rn, (long long)c->a.i[TC_MAX_DIMS + 1]);
    if (c->op == TC__OP_ARGMAX) tc__text_printf(o, "    out[e] = (int)(best < 0 ? 0 : best);\n");
    else if (out->dtype == TC_I32) tc__text_printf(o, "    out[e] = (int)acc;\n");
    else tc__text_printf(o, "    out[e] = %s((float)acc)%s;\n", tc__cu_fromf(out->dtype), tc__cu_fromf_end(out->dtype));
}

/* A pointwise op's integer form (the op table's int column), as text over
 * int32_t x or a, b; NULL when it has none. */
#define TC__CU_STR_(x) #x
#define TC__CU_STR(x) TC__CU_STR_(x)
TC__FN const char *tc__cu_int_expr(int op) {
    switch (op) {
#define TC__CU_INT_(ID, name, cost, i, f, v)                                                                   \
    case TC__OP_##ID: return TC__HAS_INT(i) ? TC__CU_STR(TC__INT_EXPR(i)) : NULL;
        TC__UNARY_OPS(TC__CU_INT_) TC__BINARY_OPS(TC__CU_INT_) TC__COMPARE_OPS(TC__CU_INT_)
#undef TC__CU_INT_
    default: return NULL;
    }
}

/* An i32 pointwise op (the fuser computes in f32, which rounds past 2^24):
 * its integer form per element, the operands broadcast by their shapes. */
TC__FN void tc__cu_int_pointwise(tc__text *o, const tc__call *c, const tc_tensor *out, const char *expr) {
    int k, d, nd = out->ndim;
    static const char *const names[] = {"a", "b"};
    for (k = 0; k < c->nin; k++) {
        const tc_tensor *t = c->ins[k];
        int lead = nd - t->ndim;
        tc__text_printf(o, "    const int32_t %s = ((const int *)p.in[%d])[0", c->nin == 1 ? "x" : names[k], k);
        for (d = 0; d < t->ndim; d++)
            if (t->shape[d] != 1) tc__text_printf(o, " + o%d * %lldLL", lead + d, (long long)t->strides[d]);
        tc__text_printf(o, "];\n");
    }
    tc__text_printf(o, "    out[e] = %s(%s);\n", out->dtype == TC_BOOL ? "(unsigned char)" : "(int)", expr);
}

/* Appends launch c's op (output out) as kernel `name`; 0 when the op has
 * no CUDA kernel yet.  Shapes, strides and attributes are baked in: these
 * programs are built per signature. */
TC__FN int tc__cuda_emit_op(tc__text *o, const char *name, const tc__call *c, const tc_tensor *out) {
    const tc_tensor *x = c->nin > 0 ? c->ins[0] : NULL;
    int d, k, nd = out->ndim;
    TC__OTHER_OPS_CHECK(41);
    switch (c->op) {
    case TC__OP_CONCAT: {
        int dim = (int)c->a.i[1];
        int64_t at = 0;
        if (c->nin > TC__MAX_IN) return 0;
        tc__cu_out_loop(o, name, out, c->nin);
        for (k = 0; k < c->nin; k++) {
            const tc_tensor *xi = c->ins[k];
            tc__text_printf(o, "    %sif (o%d < %lldLL) {\n", k ? "else " : "", dim, (long long)(at + xi->shape[dim]));
            for (d = 0; d < nd; d++)
                tc__text_printf(o, "      const i64 s%d = o%d - %lldLL;\n", d, d, (long long)(d == dim ? at : 0));
            tc__cu_copy_from(o, xi, k, out);
            tc__text_printf(o, "    }\n");
            at += xi->shape[dim];
        }
        break;
    }
    case TC__OP_PAD:
        tc__cu_out_loop(o, name, out, 1);
        tc__text_printf(o, "    int inside = 1;\n");
        for (d = 0; d < nd; d++)
            tc__text_printf(o, "    const i64 s%d = o%d - %lldLL; inside &= s%d >= 0 && s%d < %lldLL;\n", d, d,
                            (long long)c->a.i[2 * d], d, d, (long long)x->shape[d]);
        tc__text_printf(o, "    if (inside) {\n");
        tc__cu_copy_from(o, x, 0, out);
        tc__text_printf(o, "    } else out[e] = %s(__uint_as_float(0x%08xu))%s;\n", tc__cu_fromf(out->dtype),
                        (unsigned)tc__f32_to_bits((float)c->a.f[0]), tc__cu_fromf_end(out->dtype));
        break;
    case TC__OP_EMBEDDING: { /* out[i.., j] = w[idx[i..], j] */
        const tc_tensor *idx = c->ins[1];
        tc__cu_out_loop(o, name, out, 2);
        tc__text_printf(o, "    {\n");
        tc__cu_index(o, idx, 1, "o", x->shape[0]);
        tc__text_printf(o, "      const i64 s0 = ix, s1 = o%d;\n", nd - 1);
        tc__cu_copy_from(o, x, 0, out);
        tc__text_printf(o, "    }\n");
        break;
    }
    case TC__OP_INDEX_SELECT:
    case TC__OP_GATHER: { /* s_dim = idx[o_dim] (index_select) or idx[o..] (gather); s_d = o_d elsewhere */
        const tc_tensor *idx = c->ins[1];
        int dim = (int)c->a.i[1];
        tc__cu_out_loop(o, name, out, 2);
        tc__text_printf(o, "    {\n");
        if (c->op == TC__OP_INDEX_SELECT) { /* idx is 0-d or 1-D: read at the output's dim */
            if (x->ndim > 0 && idx->ndim > 0) tc__text_printf(o, "      const i64 q0 = o%d;\n", dim);
            else tc__text_printf(o, "      const i64 q0 = 0; (void)q0;\n");
            tc__cu_index(o, idx, 1, "q", x->ndim > 0 ? x->shape[dim] : 1);
        } else tc__cu_index(o, idx, 1, "o", x->ndim > 0 ? x->shape[dim] : 1);
        for (d = 0; d < x->ndim; d++)
            if (d == dim) tc__text_printf(o, "      const i64 s%d = ix;\n", d);
            else tc__text_printf(o, "      const i64 s%d = o%d;\n", d, d);
        if (x->ndim == 0) tc__text_printf(o, "      (void)ix;\n");
        tc__cu_copy_from(o, x, 0, out);
        tc__text_printf(o, "    }\n");
        break;
    }
    case TC__OP_CONV2D:
    case TC__OP_MAX_POOL2D:
    case TC__OP_AVG_POOL2D:
        tc__cu_out_loop(o, name, out, c->op == TC__OP_CONV2D ? 3 : 1);
        tc__cu_window(o, c, x, out, c->op == TC__OP_CONV2D);
        break;
    case TC__OP_ADAPTIVE_AVG_POOL2D: { /* the window [floor(o H / OH), ceil((o + 1) H / OH)) */
        int64_t H = x->shape[x->ndim - 2], W = x->shape[x->ndim - 1], OH = out->shape[nd - 2], OW = out->shape[nd - 1];
        tc__cu_out_loop(o, name, out, 1);
        tc__text_printf(o, "    const i64 h0 = o%d * %lldLL / %lldLL, h1 = ((o%d + 1) * %lldLL + %lldLL - 1) / %lldLL;\n"
                           "    const i64 w0 = o%d * %lldLL / %lldLL, w1 = ((o%d + 1) * %lldLL + %lldLL - 1) / %lldLL;\n"
                           "    double acc = 0;\n    for (i64 ih = h0; ih < h1; ih++) for (i64 iw = w0; iw < w1; iw++) {\n",
                        nd - 2, (long long)H, (long long)OH, nd - 2, (long long)H, (long long)OH, (long long)OH, nd - 1,
                        (long long)W, (long long)OW, nd - 1, (long long)W, (long long)OW, (long long)OW);
        for (d = 0; d < x->ndim - 2; d++) tc__text_printf(o, "      const i64 s%d = o%d;\n", d, d);
        tc__text_printf(o, "      const i64 s%d = ih, s%d = iw;\n      acc += (double)%s(", x->ndim - 2, x->ndim - 1, tc__cu_tof(x->dtype));
        tc__cu_elem(o, x, 0, "s");
        tc__text_printf(o, ")%s;\n    }\n    out[e] = %s((float)(acc / (double)((h1 - h0) * (w1 - w0))))%s;\n", tc__cu_tof_end(x->dtype),
                        tc__cu_fromf(out->dtype), tc__cu_fromf_end(out->dtype));
        break;
    }
    case TC__OP_FULL: /* the value as eager stores it (double, converted once) */
    case TC__OP_ARANGE:
        tc__cu_out_loop(o, name, out, 0);
        if (c->op == TC__OP_FULL) tc__text_printf(o, "    const double v = __longlong_as_double(0x%016llxLL);\n", (unsigned long long)tc__f64_bits(c->a.f[0]));
        else
            tc__text_printf(o, "    const double v = __longlong_as_double(0x%016llxLL) + (double)e * __longlong_as_double(0x%016llxLL);\n",
                            (unsigned long long)tc__f64_bits(c->a.f[0]), (unsigned long long)tc__f64_bits(c->a.f[2]));
        if (out->dtype == TC_I32)
            tc__text_printf(o, "    out[e] = v != v ? 0 : v >= 2147483647.0 ? 2147483647 : v <= -2147483648.0 ? (-2147483647 - 1) : (int)v;\n");
        else tc__text_printf(o, "    out[e] = %s((float)v)%s;\n", tc__cu_fromf(out->dtype), tc__cu_fromf_end(out->dtype));
        break;
    case TC__OP_SUM:
    case TC__OP_MEAN:
    case TC__OP_MAX:
    case TC__OP_MIN:
    case TC__OP_ARGMAX:
    case TC__OP_VAR:
        tc__cu_out_loop(o, name, out, 1);
        tc__cu_reduce(o, c, x, out);
        break;
    case TC__OP_WHERE: { /* any dtype: the selected operand's bits (converted when its dtype differs) */
        tc__cu_out_loop(o, name, out, 3);
        for (k = 0; k < 3; k++) {
            const tc_tensor *t = c->ins[k];
            int lead = nd - t->ndim;
            tc__text_printf(o, "    const i64 w%d = 0", k);
            for (d = 0; d < t->ndim; d++)
                if (t->shape[d] != 1) tc__text_printf(o, " + o%d * %lldLL", lead + d, (long long)t->strides[d]);
            tc__text_printf(o, ";\n");
        }
        tc__text_printf(o, "    if (((const unsigned char *)p.in[0])[w0]) {\n");
        for (k = 1; k < 3; k++) {
            const tc_tensor *t = c->ins[k];
            if (k == 2) tc__text_printf(o, "    } else {\n");
            tc__cu_assign_begin(o, t->dtype, out->dtype);
            tc__text_printf(o, "((const %s *)p.in[%d])[w%d]", tc__cu_ctype(t->dtype), k, k);
            tc__cu_assign_end(o, t->dtype, out->dtype);
        }
        tc__text_printf(o, "    }\n");
        break;
    }
    default: {
        const char *expr = tc__cu_int_expr(c->op);
        int k2, ints = c->nin >= 1 && c->nin <= 2;
        for (k2 = 0; k2 < c->nin && ints; k2++) ints = c->ins[k2] && c->ins[k2]->dtype == TC_I32;
        if (!expr || !ints || (out->dtype != TC_I32 && out->dtype != TC_BOOL)) return 0;
        tc__cu_out_loop(o, name, out, c->nin);
        tc__cu_int_pointwise(o, c, out, expr);
        break;
    }
    }
    tc__text_printf(o, "  }\n}\n");
    return 1;
}

/* Appends the prelude. */
TC__FN void tc__cuda_emit_prelude(tc__text *o) {
    int i;
    for (i = 0; tc__cu_prelude[i]; i++) tc__text_printf(o, "%s", tc__cu_prelude[i]);
}

#endif /* TC_NO_CUDA */
