/* Eager ops on CUDA tensors, and moving tensors between devices.
 *
 * An op whose inputs are on the GPU runs as a one-op compiled function on
 * the CUDA backend: the same trace, passes, fuser and code generator as a
 * compiled model, so each op is one generated kernel (softmax and the
 * norms one row kernel), and eager CUDA is an honest baseline for the
 * compiled one.  The functions are cached per op and attributes; a later
 * call with the same shapes replays its program (no trace, no NVRTC), a
 * new shape traces again and finds its binary in NVRTC's disk cache when
 * only sizes changed (shapes are kernel parameters).  An op with no CUDA
 * kernel yet (contractions and the data-movement ops: part 2) fails with
 * TC_ERR_UNSUPPORTED naming it. */

#ifndef TC_NO_CUDA

#define TC__EAGER_SLOTS 64
#define TC__EAGER_SHAPES 32 /* signatures one op keeps; then it starts afresh (NVRTC's disk cache keeps the binaries) */

typedef struct tc__eager_fn {
    tc__call key;              /* op, name, attributes, which inputs exist  */
    tc_compile_options f_opts; /* f's options (to start afresh)             */
    int tf32;                  /* ctx's allow_tf32 when f was made          */
    tc_fn *f;
} tc__eager_fn;

typedef struct tc__eager_cache {
    tc__eager_fn e[TC__EAGER_SLOTS];
    int n, next;               /* next: the slot replaced when full         */
} tc__eager_cache;

/* The recorded op: the key's call over the traced inputs (NULL where the
 * op's optional input was absent). */
TC__FN void tc__eager_model(tc_ctx *ctx, void *user, tc_tensor *const *inputs, tc_tensor **outputs) {
    const tc__call *key = (const tc__call *)user;
    tc__call c = *key;
    int i, k = 0;
    c.ctx = ctx;
    c.ins = c.in;
    for (i = 0; i < c.nin; i++) c.in[i] = key->in[i] ? inputs[k++] : NULL;
    outputs[0] = tc__run(&c);
}

TC__FN int tc__eager_same(const tc__call *a, const tc__call *b) {
    int i;
    if (a->op != b->op || a->nin != b->nin || a->name != b->name || a->optional != b->optional ||
        memcmp(&a->a, &b->a, sizeof a->a) != 0)
        return 0;
    for (i = 0; i < a->nin; i++)
        if (!a->in[i] != !b->in[i]) return 0;
    return 1;
}

TC__FN void tc__eager_free(tc_ctx *ctx) {
    tc__eager_cache *ec = (tc__eager_cache *)ctx->cuda->eager;
    int i;
    if (!ec) return;
    for (i = 0; i < ec->n; i++) tc_fn_free(ec->e[i].f);
    TC_FREE(ec);
    ctx->cuda->eager = NULL;
}

/* The cached function for call c, made on first use; NULL out of memory. */
TC__FN tc__eager_fn *tc__eager_get(tc__call *c) {
    tc_ctx *ctx = c->ctx;
    tc__eager_cache *ec = (tc__eager_cache *)ctx->cuda->eager;
    tc__eager_fn *e;
    tc_compile_options o;
    int i;
    if (!ec) {
        if (!(ec = (tc__eager_cache *)TC_MALLOC(sizeof *ec))) return NULL;
        memset(ec, 0, sizeof *ec);
        ctx->cuda->eager = ec;
        ctx->cuda->eager_free = tc__eager_free;
    }
    for (i = 0; i < ec->n; i++)
        if (tc__eager_same(&ec->e[i].key, c) && ec->e[i].tf32 == (ctx->opts.allow_tf32 != 0)) return &ec->e[i];
    if (ec->n < TC__EAGER_SLOTS) e = &ec->e[ec->n++];
    else { /* full: the oldest goes */
        e = &ec->e[ec->next];
        ec->next = (ec->next + 1) % TC__EAGER_SLOTS;
        tc_fn_free(e->f);
    }
    memset(&e->key, 0, sizeof e->key);
    e->key.op = c->op;
    e->key.name = c->name;
    e->key.nin = c->nin;
    e->key.optional = c->optional;
    e->key.a = c->a;
    e->key.file = c->file;
    e->key.line = c->line;
    for (i = 0; i < c->nin; i++) e->key.in[i] = c->ins[i] ? c->ins[i] : NULL; /* presence only, for the model */
    memset(&o, 0, sizeof o);
    for (i = 0; i < c->nin; i++) o.num_inputs += c->ins[i] != NULL;
    o.num_outputs = 1;
    o.dynamic = -1;          /* each shape its own entry: sizes are kernel parameters */
    o.recompile_limit = TC__EAGER_SHAPES + 1; /* never reached: tc__cuda_eager_run starts afresh at TC__EAGER_SHAPES */
    o.cache_dir = NULL;
    e->f_opts = o;
    e->tf32 = ctx->opts.allow_tf32 != 0;
    e->f = tc__compile(ctx, tc__eager_model, &e->key, &o, TC_MODE_DEFAULT, 0, 0, c->file, c->line);
    if (!e->f) {
        e->key.op = (tc__op)-1; /* never matches */
        return NULL;
    }
    return e;
}

/* The dispatcher's hook for an op whose inputs are on the GPU. */
TC__FN tc_tensor *tc__cuda_eager_run(tc__call *c) {
    tc_tensor *ins[TC__MAX_IN], *out = NULL;
    int owned[TC__MAX_IN];
    tc__eager_fn *e;
    tc_result r;
    int i, n = 0;
    if (c->nin > TC__MAX_IN) {
        tc__msg(c, TC_ERR_UNSUPPORTED, "no CUDA kernel for %s with %d inputs yet", tc__optable[c->op].name, c->nin);
        return tc__fail(c, TC_ERR_UNSUPPORTED);
    }
    if (c->out_into) {
        tc__msg(c, TC_ERR_UNSUPPORTED, "writing into a GPU tensor (tc_copy) is not supported yet");
        return tc__fail(c, TC_ERR_UNSUPPORTED);
    }
    if (!tc__cuda_ctx_get(c->ctx, "an eager op") || !(e = tc__eager_get(c))) {
        tc__msg(c, c->ctx->first_status ? c->ctx->first_status : TC_ERR_OOM, "%s",
                c->ctx->first_err[0] ? c->ctx->first_err : "out of memory");
        return tc__fail(c, c->ctx->first_status ? c->ctx->first_status : TC_ERR_OOM);
    }
    if (e->f->nentries >= TC__EAGER_SHAPES) { /* many shapes seen: start afresh rather than grow */
        tc_fn_free(e->f);
        e->f = tc__compile(c->ctx, tc__eager_model, &e->key, &e->f_opts, TC_MODE_DEFAULT, 0, 0, c->file, c->line);
        if (!e->f) {
            e->key.op = (tc__op)-1;
            tc__msg(c, TC_ERR_OOM, "out of memory");
            return tc__fail(c, TC_ERR_OOM);
        }
    }
    for (i = 0; i < c->nin; i++) {
        if (!c->ins[i]) continue;
        owned[n] = 0;
        if (c->ins[i]->device != TC_CUDA) { /* a scalar argument: its value goes up */
            tc_tensor *d = tc__to_device(c->ctx, c->ins[i]);
            if (!d || d->status != TC_OK) {
                for (i = 0; i < n; i++)
                    if (owned[i]) tc_free(ins[i]);
                tc__msg(c, d ? d->status : TC_ERR_OOM, "%s", d ? tc_error(d) : "out of memory");
                tc_free(d);
                return tc__fail(c, c->ctx->first_status ? c->ctx->first_status : TC_ERR_OOM);
            }
            d->is_wrapped = c->ins[i]->is_wrapped;
            owned[n] = 1;
            ins[n++] = d;
        } else ins[n++] = c->ins[i];
    }
    r = tc_call(e->f, ins, &out);
    for (i = 0; i < n; i++) /* the scalars' copies */
        if (owned[i]) tc_free(ins[i]);
    if (r != TC_OK) {
        const char *why = tc_fn_error(e->f), *rest = strstr(why, "): ");
        tc_free(out);
        /* the program's message names the site it was first traced at: this call's instead */
        tc__msg(c, r, "%s", strncmp(why, "tc_", 3) == 0 && rest ? rest + 3 : why);
        return tc__fail(c, r);
    }
    return out;
}

#endif /* TC_NO_CUDA */

/* ---- moving between devices ------------------------------------------------ */

TC__FN tc_tensor *tc__to_fail(tc_ctx *ctx, tc_result r, const char *file, int line, const char *why) {
    char text[TC__MSG_CAP];
    snprintf(text, sizeof text, "tc_to (%s:%d): %s", file ? file : "?", line, why);
    return tc__error_tensor(ctx, r, text);
}

TCDEF tc_tensor *tc_to_at(tc_ctx *ctx, tc_tensor *x, tc_device device, const char *file, int line) {
    tc_tensor *t;
    size_t bytes;
    tc_result r;
    if (!ctx) return &tc__sentinel_null_ctx;
    if (!x) return tc__to_fail(ctx, TC_ERR_NULL, file, line, "input is NULL");
    if (x->status != TC_OK) return tc__to_fail(ctx, x->status, file, line, tc_error(x));
    if (x->ctx != ctx) return tc__to_fail(ctx, TC_ERR_INVALID_ARG, file, line, "input belongs to another context");
    if (device != TC_CPU && device != TC_CUDA) return tc__to_fail(ctx, TC_ERR_INVALID_ARG, file, line, "unknown device");
    if (x->device == device) return x;
    if (ctx->trace)
        return tc__to_fail(ctx, TC_ERR_UNSUPPORTED, file, line,
                           "moving a tensor between devices inside a compiled function (move the inputs before the call)");
#ifndef TC_NO_CUDA
    ctx->device_run = tc__cuda_eager_run; /* ops on the tensors it makes run there */
#endif
    if (!(t = tc__tensor_new(ctx))) return &tc__sentinel_oom;
    t->dtype = x->dtype;
    t->ndim = x->ndim;
    memcpy(t->shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    tc__contig_strides(t->ndim, t->shape, t->strides);
    t->device = device;
    bytes = (size_t)tc__numel(x) * tc__dtype_sizes[x->dtype];
    t->storage = device == TC_CUDA ? tc__storage_new_device(ctx, bytes, "tc_to") : tc__storage_new(ctx, bytes);
    if (!t->storage) {
        tc_free(t);
        return tc__to_fail(ctx, ctx->first_status ? ctx->first_status : TC_ERR_OOM, file, line,
                           ctx->first_err[0] ? ctx->first_err : "out of memory");
    }
    if (device == TC_CPU) r = tc__read(x, x->dtype, t->storage->data, bytes, file, line);
    else if (tc__contig(x)) r = tc_write(t, x->dtype, tc__base(x), bytes);
    else { /* gathered on the host first: tc_write takes a contiguous source */
        void *tmp = TC_MALLOC(bytes ? bytes : 1);
        r = tmp ? tc__read(x, x->dtype, tmp, bytes, file, line) : TC_ERR_OOM;
        if (r == TC_OK) r = tc_write(t, x->dtype, tmp, bytes);
        TC_FREE(tmp);
    }
    if (r != TC_OK) {
        tc_free(t);
        return tc__to_fail(ctx, r, file, line, ctx->first_err[0] ? ctx->first_err : "copy failed");
    }
    return t;
}
