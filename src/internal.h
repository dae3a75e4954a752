/* The stages' interfaces: every tc__ function one stage calls in another,
 * declared here, grouped by the file that defines it, in the amalgamation's
 * order (tools/amalgamate.sh).  Each file calls only what an earlier file
 * defines (tools/layers.py checks it, and that no other file declares
 * another's functions), so this list is also the map of who offers what:
 * the compiler is reached from the earlier stages only through the
 * context's tracing hooks (tc__trace_hooks), a device from the plan only
 * through its backend table (tc__backend).  The one registration point is
 * the op table (ops/optable.h), which declares every op's shape rule and
 * kernel ahead, wherever in ops/ or cpu/ they are defined.  Types a later
 * stage defines appear as `struct tc__x`, the tag of its typedef.
 *
 * runtime/platform.c, the OS layer, precedes this header and defines each
 * of its functions per platform under its own #if (some only where threads
 * or atomics exist), so its definitions are its declarations:
 * tc__now_sec, tc__mkdirs, tc__file_replace, tc__read_small_file, tc__pid,
 * tc__cpu_count, tc__cpu_features, tc__isa_resolve, tc__isa_env_cap,
 * tc__dl_open, tc__dl_sym, tc__dl_close, tc__map_file, tc__unmap_file, tc__atomic_load_u64,
 * tc__atomic_store_u64, tc__atomic_cas_u64, tc__atomic_load_int, tc__atomic_store_int,
 * tc__atomic_inc_int, tc__atomic_fetch_add_int, tc__cpu_relax, tc__try_enter, tc__flag_raise, tc__next_ticket,
 * tc__leave, tc__thread_start, tc__thread_join, tc__mutex_init,
 * tc__mutex_destroy, tc__mutex_lock, tc__mutex_unlock, tc__cond_init,
 * tc__cond_destroy, tc__cond_wait, tc__cond_broadcast.
 */

/* The later stages' types, by tag. */
struct tc__backend;
struct tc__entry;
struct tc__fusion;
struct tc__gemm;
struct tc__gemm_impl;
struct tc__gemm_prepack;
struct tc__graph;
struct tc__isa_impl;
struct tc__kernel;
struct tc__krun;
struct tc__launch;
struct tc__node;
struct tc__program;
struct tc__sbuf;
struct tc__segcache;
struct tc__sym;
struct tc__tune_mem;
struct tc__vins;
struct tc__vst;

/* ---- runtime/util.c */
TC__FN int tc__dtype_valid(tc_dtype dt);
TC__FN int tc__is_float(tc_dtype dt);
TC__FN void *tc__alloc_aligned(size_t bytes, void **raw);
TC__FN void tc__scratch_put(void *p);
TC__FN void *tc__malloc(size_t bytes);
TC__FN void *tc__scratch_get(tc_ctx *ctx, size_t bytes);
TC__FN tc__scratch_cache *tc__cache_new(void);
TC__FN void tc__cache_free(tc__scratch_cache *c);
TC__FN char *tc__strdup(const char *s);
TC__FN int tc__mul_ov(int64_t a, int64_t b, int64_t *out);
TC__FN int64_t tc__numel_of(int ndim, const int64_t *shape);
TC__FN void tc__fmt(char *dst, size_t cap, const char *fmt, ...) TC__PRINTF(3, 4);
TC__FN void tc__text_printf(tc__text *sb, const char *fmt, ...) TC__PRINTF(2, 3);
TC__FN const char *tc__device_name(tc_device d);
TC__FN uint32_t tc__f32_to_bits(float f);
TC__FN void tc__ctx_note(tc_ctx *ctx, tc_result r, const char *text);
TC__FN tc_result tc__ctx_fail(tc_ctx *ctx, tc_result r, const char *fmt, ...) TC__PRINTF(3, 4);
TC__FN void tc__log(const tc_ctx *ctx, tc_log_level level, const char *fmt, ...) TC__PRINTF(3, 4);
TC__FN float tc__f16_to_f32(uint16_t h);
TC__FN uint16_t tc__f32_to_f16(float f);
TC__FN float tc__bf16_to_f32(uint16_t h);
TC__FN uint16_t tc__f32_to_bf16(float f);
TC__FN int32_t tc__f32_to_i32(float v);
TC__FN double tc__load(const void *base, tc_dtype dt, int64_t i);
TC__FN void tc__store(void *base, tc_dtype dt, int64_t i, double v);

/* ---- runtime/threads.c */
TC__FN void tc__pool_destroy(tc__pool *p);
TC__FN tc__pool *tc__pool_create(int nthreads);
TC__FN void tc__parallel_for(tc_ctx *ctx, int64_t n, int64_t work, tc__range_fn fn, void *arg);
TC__FN int tc__parallel_parts(const tc_ctx *ctx, int64_t n, int64_t work);

/* ---- cuda/driver.c (only without TC_NO_CUDA) */
#ifndef TC_NO_CUDA
TC__FN const char *tc__cu_errname(tc__CUresult r);
TC__FN tc_result tc__cu_result(tc__CUresult r);
TC__FN int tc__cuda_load(const char *cuda_lib, const char *nvrtc_lib);
TC__FN int tc__cu_open_nvrtc(const char *nvrtc_lib);
#endif

/* ---- cuda/memory.c (stubs under TC_NO_CUDA) */
TC__FN tc__CUdeviceptr tc__cuda_alloc(tc_ctx *ctx, size_t bytes, size_t *cap, const char *what);
TC__FN void tc__cuda_free(tc_ctx *ctx, tc__CUdeviceptr p, size_t cap);
TC__FN tc_result tc__cuda_copy(tc_ctx *ctx, void *host, tc__CUdeviceptr dev, size_t bytes, int to_host, const char *what);
TC__FN void tc__cuda_trim(tc_ctx *ctx);
#ifndef TC_NO_CUDA
TC__FN tc__cuda_ctx *tc__cuda_ctx_get(tc_ctx *ctx, const char *what);
#endif
TC__FN void tc__cuda_ctx_destroy(tc_ctx *ctx);

/* ---- runtime/tensor.c */
TC__FN void tc__block_put(tc_ctx *ctx, void *raw, void *data, size_t cap);
TC__FN void *tc__block_get(tc_ctx *ctx, size_t bytes, void **raw, size_t *cap);
TC__FN tc__storage *tc__storage_new(tc_ctx *ctx, size_t bytes);
TC__FN tc__storage *tc__storage_new_device(tc_ctx *ctx, size_t bytes, const char *what);
TC__FN tc_result tc__read(const tc_tensor *t, tc_dtype dtype, void *dst, size_t dst_bytes, const char *file, int line);
TC__FN tc_tensor *tc__to_device(tc_ctx *ctx, const tc_tensor *x);
TC__FN tc__storage *tc__storage_wrap(void *data);
TC__FN tc_tensor *tc__tensor_new(tc_ctx *ctx);
TC__FN void tc__scope_close(tc_ctx *ctx, int floor);
TC__FN int tc__scope_open(tc_ctx *ctx);
TC__FN tc_tensor *tc__move_to(tc_tensor *t, int depth);
TC__FN void tc__contig_strides(int ndim, const int64_t *shape, int64_t *strides);
TC__FN int tc__contig(const tc_tensor *t);
TC__FN int64_t tc__numel(const tc_tensor *t);
TC__FN char *tc__base(const tc_tensor *t);

/* ---- ops/dispatch.c */
TC__FN tc_tensor *tc__run(tc__call *c);
TC__FN int tc__call_device(const tc__call *c);
TC__FN void tc__call_init(tc__call *c, tc_ctx *ctx, tc__op op, const char *file, int line);
TC__FN tc_result tc__msg(tc__call *c, tc_result r, const char *fmt, ...) TC__PRINTF(3, 4);
TC__FN const char *tc__shape_str(int ndim, const int64_t *shape, char *buf, size_t cap);
TC__FN struct tc__sbuf tc__shp(const tc_tensor *t);
TC__FN tc_tensor *tc__error_tensor(tc_ctx *ctx, tc_result r, const char *text);
TC__FN tc_tensor *tc__fail(tc__call *c, tc_result r);
TC__FN int tc__axis(int axis, int ndim);
TC__FN tc_result tc__bad_axis(tc__call *c, int axis, int ndim);
TC__FN tc_tensor *tc__alloc_out(tc__call *c, tc_result *r);
TC__FN tc_tensor *tc__check_inputs(tc__call *c);
TC__FN tc_tensor *tc__full(tc_ctx *ctx, tc_dtype dt, int ndim, const int64_t *shape, double value, const char *name, const char *file, int line);
TC__FN tc_result tc__run_full(tc__call *c, tc_tensor *out);
TC__FN void tc__unary_call(tc_ctx *ctx, tc__op op, tc_tensor *x, const char *file, int line, tc__call *c);
TC__FN tc_tensor *tc__clone(tc_ctx *ctx, tc_tensor *x, const char *name, const char *file, int line);
TC__FN tc_tensor *tc__slice(tc_ctx *ctx, tc_tensor *x, int dim, int64_t start, int64_t end, int64_t step, const char *file, int line);

/* ---- ops/pointwise.c */
TC__FN tc_dtype tc__promote(tc_tensor *const *ts, int n);
TC__FN void tc__copy_into(tc_ctx *ctx, char *dbase, tc_dtype dd, int ndim, const int64_t *shape, const int64_t *dstrides, const char *sbase, tc_dtype sd, int sndim, const int64_t *sshape, const int64_t *sstrides);
TC__FN char *tc__as_dtype(tc_ctx *ctx, const tc_tensor *t, tc_dtype dt, int64_t *st, void **owned);
TC__FN char *tc__contig_as(tc_ctx *ctx, const tc_tensor *t, tc_dtype dt, void **owned);
TC__FN tc_result tc__shape_same(tc__call *c);

/* ---- cpu/gemm.c */
TC__FN void tc__pack_b(const struct tc__gemm *g, int nr_, int64_t pc, int64_t kc, int64_t jc, int64_t nc, int64_t js0, int64_t js1, float *bp);
TC__FN int tc__gemm_run(tc_ctx *ctx, const struct tc__gemm *g, int serial);
TC__FN int tc__gemm_small(const struct tc__gemm *g);
TC__FN void tc__gemm_prepack_free(struct tc__gemm_prepack *pp);
TC__FN struct tc__gemm_impl tc__gemm_impl_of(const tc_ctx *ctx);
TC__FN struct tc__gemm_impl tc__gemm_impl_for(const tc_ctx *ctx, const struct tc__gemm *g);
TC__FN void tc__pack_a(const struct tc__gemm *g, int mr_, int64_t ic, int64_t mc, int64_t pc, int64_t kc, float *ap);
TC__FN int tc__gemm_batched(tc_ctx *ctx, const struct tc__gemm *g, int64_t nbatch, const int64_t *aoff, const int64_t *boff, const int64_t *coff);

/* ---- ops/linalg.c */
TC__FN void tc__batch_offsets(const int64_t *shape, const int64_t *st, int tnb, int nb, const int64_t *bshape, int64_t nbatch, int64_t *off);
TC__FN int tc__batch_shape(tc__call *c, tc_tensor *const *ts, const int *core, int n);
TC__FN tc_result tc__float_inputs(tc__call *c, int n);
TC__FN float *tc__out_f32(tc_tensor *out, void **owned);
TC__FN void tc__out_f32_done(tc_ctx *ctx, tc_tensor *out, void *owned);

/* ---- compiler/graph.c */
TC__FN void tc__graph_free(struct tc__graph *g);
TC__FN struct tc__graph *tc__graph_new(void);
TC__FN int tc__graph_reserve(struct tc__graph *g, int cap);
TC__FN int tc__graph_add(struct tc__graph *g, const struct tc__node *proto, int *fresh);
TC__FN int tc__graph_own(struct tc__graph *g, void *buf);
TC__FN int tc__pass_dce(struct tc__graph *g);
TC__FN size_t tc__graph_dot(const struct tc__graph *g, const int *group, char *buf, size_t cap);
TC__FN size_t tc__graph_print(const struct tc__graph *g, char *buf, size_t cap);
TC__FN int tc__graph_equal(const struct tc__graph *x, const struct tc__graph *y);
TC__FN int tc__graph_fit(const struct tc__graph *g1, const struct tc__graph *g2, int64_t s1, int64_t s2, struct tc__sym **out);
TC__FN struct tc__graph *tc__graph_copy(const struct tc__graph *g);
TC__FN struct tc__graph *tc__graph_instantiate(const struct tc__graph *tmpl, const struct tc__sym *sym, int nsym, int64_t s);

/* ---- compiler/passes.c */
TC__FN tc_result tc__passes_run(tc_ctx *ctx, int freeze, int decompose, struct tc__graph **g);

/* ---- compiler/kernel.c */
TC__FN int tc__kernel_tile(const struct tc__kernel *k);
TC__FN int tc__kernel_tile_choice(const struct tc__kernel *k, int tile);
TC__FN int tc__kernel_simplify(struct tc__kernel *k, int begin, int *nvreg);
TC__FN double tc__comb_identity(int comb);
TC__FN double tc__comb_apply(double a, double v, int comb);
TC__FN int tc__sumsq_pair(const struct tc__vins *code, int begin, int i);
TC__FN void tc__kernel_mark_fusions(struct tc__vins *code, int begin, int end);
TC__FN const char *tc__vop_name(int op);
TC__FN int tc__kernel_emit(struct tc__kernel *k, int op, int dst, int a, int b, int c, float f0, float f1);
TC__FN int tc__vins_srcs(struct tc__vins *v, int16_t **src);
TC__FN void tc__kernel_free(struct tc__kernel *k);
TC__FN void tc__kernel_share_locals(struct tc__kernel *k);
TC__FN void tc__kernel_print(const struct tc__kernel *k, int index, tc__text *sb);

/* ---- compiler/fuse.c */
TC__FN void tc__fusion_free(struct tc__fusion *fu);
TC__FN int tc__fuse_graph(tc_ctx *ctx, const struct tc__graph *g, const tc_tensor *hdr, int logs, struct tc__fusion *out);

/* ---- cpu/vstate.h */
TC__FN void tc__vst_pf_upto(struct tc__vst *s, int end);

/* ---- cpu/vexec.c */
TC__FN const struct tc__isa_impl *tc__isa_impl_of(tc_isa isa);
TC__FN size_t tc__kernel_ws_bytes(const struct tc__kernel *k);
TC__FN void tc__kernel_run(tc_ctx *ctx, const struct tc__kernel *k, tc_tensor *const *ref, char *ws, size_t ws_bytes, int ws_slots, int tile);
TC__FN void tc__krun_prepare(struct tc__krun *kr_, tc_ctx *ctx, const struct tc__kernel *k, tc_tensor *const *ref);
TC__FN void tc__epilogue_tile(void *arg, int64_t row, int64_t m, int64_t col, int64_t n, int64_t ldc);

/* ---- compiler/plan.c */
TC__FN void tc__program_free(struct tc__program *p);
TC__FN struct tc__program *tc__program_build(tc_ctx *ctx, const struct tc__backend *be, const struct tc__graph *g, tc_tensor *const *inputs, int persistent, int fuse, int logs, char *err, size_t errcap);
TC__FN tc_result tc__launch_exec(struct tc__program *p, tc_ctx *ctx, struct tc__launch *l, tc_tensor *out);
TC__FN tc_result tc__program_launches(struct tc__program *p, tc_ctx *ctx, char *err, size_t errcap);
TC__FN int tc__program_frozen(const struct tc__program *p);
TC__FN int tc__program_freeze(struct tc__program *p);
TC__FN tc_result tc__program_run(struct tc__program *p, tc_ctx *ctx, tc_tensor *const *inputs, tc_tensor **outputs, char *err, size_t errcap);

/* ---- compiler/tune.c */
TC__FN tc_result tc__tune_launch(struct tc__program *p, tc_ctx *ctx, struct tc__launch *l, tc_tensor *out);
TC__FN void tc__tune_mem_free(struct tc__tune_mem *m);
TC__FN const char *tc__tune_dir(const char *opt, char *buf, size_t cap);
TC__FN uint64_t tc__fnv1a(const char *s);

/* ---- cuda/codegen.c (only without TC_NO_CUDA) */
#ifndef TC_NO_CUDA
TC__FN void tc__cuda_emit_prelude(tc__text *o);
TC__FN void tc__cuda_emit_kernel(tc__text *o, const struct tc__kernel *k, const tc_dtype *dt, const char *name);
TC__FN int tc__cuda_is_rows(const struct tc__kernel *k);
TC__FN void tc__cuda_emit_gemm(tc__text *o, const char *name, tc_dtype da, tc_dtype db, tc_dtype dc, int bias, tc_dtype dbias,
                               int kind, int bt);
TC__FN void tc__cuda_emit_mma_prelude(tc__text *o);
TC__FN int tc__cuda_emit_op(tc__text *o, const char *name, const tc__call *c, const tc_tensor *out);
TC__FN const char *tc__cu_int_expr(int op);
#endif

/* ---- cuda/backend.c (only without TC_NO_CUDA) */
#ifndef TC_NO_CUDA
TC__FN char *tc__cuda_program_source(const struct tc__program *p);
TC__FN int tc__cuda_graph_state(const struct tc__program *p, const char **why);
#endif

/* ---- compiler/explain.c */
TC__FN unsigned tc__logs_from_env(void);
TC__FN int tc__fuse_logs(const tc_fn *f);

/* ---- compiler/trace.c */
TC__FN tc_result tc__trace_call(tc_fn *f, tc_tensor *const *inputs, tc_tensor **outputs, struct tc__graph **gout, struct tc__graph **rawout, struct tc__program **pout, struct tc__segcache **segs);
TC__FN void tc__segcache_free(struct tc__segcache *c);
TC__FN void tc__hand_out(tc_ctx *ctx, tc_tensor **outputs, int n);
TC__FN tc_result tc__fn_fail(tc_fn *f, tc_tensor **outputs, tc_result r);
TC__FN tc_result tc__replay(tc_fn *f, struct tc__entry *e, tc_tensor *const *inputs, tc_tensor **outputs, int persistent);

/* ---- compiler/dynamic.c */
TC__FN int tc__guards_match(const tc_fn *f, const struct tc__entry *e, tc_tensor *const *in, char *why, size_t cap);
TC__FN tc_result tc__dynamic_resize(tc_fn *f, struct tc__entry *e, tc_tensor *const *inputs, tc_tensor **outputs, int *resized);
TC__FN tc_result tc__dynamic_miss(tc_fn *f, tc_tensor *const *inputs, tc_tensor **outputs, const char *why);

/* ---- compiler/compile.c */
TC__FN tc_fn *tc__compile(tc_ctx *ctx, tc_model_fn fn, void *user, const tc_compile_options *opts, tc_mode default_mode, int default_fullgraph, int default_dynamic, const char *file, int line);
