/* A compiled function's state, shared by the compiler's last stages
 * (explain.c, trace.c, dynamic.c, compile.c): the cache entries the traces
 * left, one per input signature (guards, graph, program, the template for
 * dynamic shapes), the segments of a trace with graph breaks, and the trace
 * in progress. */

typedef struct tc__break {
    char reason[160];
    const char *file;
    int line;
} tc__break;

/* What a cached graph was traced for: one record per input. */
typedef struct tc__in_guard {
    tc_dtype dt;
    int ndim;
    int64_t shape[TC_MAX_DIMS], strides[TC_MAX_DIMS];
} tc__in_guard;

typedef struct tc__segcache tc__segcache;
typedef struct tc__entry {
    tc__in_guard *ins;
    tc__segcache *segs;        /* a trace with breaks: its segments       */
    tc__graph *g;              /* NULL when the trace had breaks (eager)  */
    tc__program *prog;         /* built on first use                      */
    int nparams;
    tc__graph *raw;            /* the trace before passes (dynamic template) */
    int dyn_in, dyn_dim;       /* automatic dynamic: the symbolic dim, -1 none */
    int64_t cur;               /* the size g and prog are for              */
    tc__sym *sym;              /* slots affine in the dynamic size         */
    int nsym, verified;        /* verified: a trace at a third size agreed */
    int64_t fit_a, fit_b;      /* the two sizes the fit was made from      */
} tc__entry;

struct tc_fn {
    tc_ctx *ctx;
    const tc__backend *be;     /* the device its programs run on          */
    tc_model_fn fn;
    void *user;
    tc_mode mode;
    int fullgraph, nin, nout, limit, decompose, dynamic, fuse, freeze;
    const char *file;          /* where tc_compile was called            */
    int line;
    tc__entry *entries;
    int nentries;
    int recompiles, calls, cached_calls, eager_calls, recorded_calls, dyn_traces, dyn_instances;
    int traces;                /* runs of the user's function to trace it */
    int compiles;              /* programs built (graphs fused and planned) */
    uint64_t dyn_failed;       /* bit 8*input+dim: a fit failed, stay static */
    uint64_t dyn_marked;       /* bit 8*input+dim: tc_mark_dynamic          */
    tc__break *breaks;
    int nbreaks;
    int busy;                  /* set while a call runs (atomic)          */
    unsigned logs;             /* TC_LOGS flags                           */
    char tune_dir[512];        /* max-autotune's cache; "" none            */
    tc__tune_mem tune;         /* max-autotune's choices and counts        */
    tc_tensor **up_src, **up_dev; /* CUDA: host parameters' device copies,
                                  uploaded once per function (by identity) */
    int nup, capup;
    char err[TC__MSG_CAP];
};

/* The compiled segments of a signature whose trace has graph breaks: later
 * calls record the function again (cheap) and each recorded segment that
 * equals a cached one runs that segment's program. */
typedef struct tc__segment {
    tc__graph *raw;            /* as recorded: the lookup key            */
    tc__graph *g;              /* after the passes                       */
    tc__program *prog;
} tc__segment;

#define TC__MAX_SEGMENTS 64 /* distinct segments cached per signature */

struct tc__segcache {
    tc__segment *s;
    int n, hits, misses;
};

struct tc__trace {
    tc_fn *f;
    tc__graph *g;              /* the segment being recorded              */
    tc_tensor *const *inputs;  /* the call's concrete inputs              */
    tc_tensor **allin;         /* inputs, then values made concrete by breaks */
    int nall, capall;
    unsigned gen;              /* this trace's stamp for segment values   */
    tc__segcache *cache;       /* where segments are looked up            */
    int breaks;                /* in this trace                           */
    int failed;                /* a break under fullgraph, or OOM         */
    tc_result status;
};

enum {
    TC__LOG_BREAKS = 1, TC__LOG_RECOMPILES = 2, TC__LOG_GUARDS = 4, TC__LOG_GRAPH = 8, TC__LOG_FUSION = 16,
    TC__LOG_CODE = 32
};
