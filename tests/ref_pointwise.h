/* The pointwise ops' references, shared by test_ops_pointwise.c (eager) and
 * test_vexec.c (compiled, on every ISA level): one entry per op of the
 * lists the library declares them from (TC__UNARY_API, TC__BINARY_API in
 * api.h), so an op without a reference here does not compile.  Doubles;
 * the tests round to the result's dtype. */
#ifndef TC_REF_POINTWISE_H
#define TC_REF_POINTWISE_H
#include <math.h>

typedef tc_tensor *(*unary_fn)(tc_ctx *, tc_tensor *, const char *, int);
typedef struct unop {
    const char *name;
    unary_fn fn;
    double (*ref)(double);
    double lo, hi;
    int keeps_int;   /* i32 in -> i32 out */
    int special_inf; /* test +-inf as inputs */
} unop;

/* Every op of TC__UNARY_API (api.h), the list the library declares them
 * from: r_NAME is its reference and U_NAME its test: the range sampled,
 * whether it keeps i32, whether +-inf are inputs.  (A new op without them
 * does not compile here.) */
static double r_neg(double x) { return -x; }
#define U_neg -5, 5, 1, 1
static double r_abs(double x) { return fabs(x); }
#define U_abs -5, 5, 1, 1
static double r_exp(double x) { return exp(x); }
#define U_exp -20, 20, 0, 1
static double r_log(double x) { return log(x); }
#define U_log 0.01, 50, 0, 1
static double r_sqrt(double x) { return sqrt(x); }
#define U_sqrt 0, 50, 0, 1
static double r_rsqrt(double x) { return 1.0 / sqrt(x); }
#define U_rsqrt 0.01, 50, 0, 1
static double r_reciprocal(double x) { return 1.0 / x; }
#define U_reciprocal 0.1, 10, 0, 1
static double r_square(double x) { return x * x; }
#define U_square -30, 30, 1, 1
static double r_sin(double x) { return sin(x); }
#define U_sin -10, 10, 0, 1
static double r_cos(double x) { return cos(x); }
#define U_cos -10, 10, 0, 1
static double r_tanh(double x) { return tanh(x); }
#define U_tanh -8, 8, 0, 1
static double r_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
#define U_sigmoid -20, 20, 0, 1
static double r_relu(double x) { return x != x ? x : x > 0 ? x : 0.0; }
#define U_relu -5, 5, 1, 1
static double r_gelu(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }
#define U_gelu -8, 8, 0, 0
static double r_gelu_tanh(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}
#define U_gelu_tanh -8, 8, 0, 0
static double r_silu(double x) { return x / (1.0 + exp(-x)); }
#define U_silu -20, 20, 0, 0
static double r_floor(double x) { return floor(x); }
#define U_floor -5, 5, 1, 1
static double r_ceil(double x) { return ceil(x); }
#define U_ceil -5, 5, 1, 1
static double r_erf(double x) { return erf(x); }
#define U_erf -4, 4, 0, 1
static double r_hardswish(double x) { return x * fmin(fmax(x + 3.0, 0.0), 6.0) / 6.0; }
#define U_hardswish -6, 6, 0, 1

#define UNOP_(name) {#name, tc_##name##_at, r_##name, U_##name},
static const unop unops[] = {TC__UNARY_API(UNOP_)};
#undef UNOP_
#define N_UNOPS ((int)(sizeof unops / sizeof unops[0]))

typedef tc_tensor *(*binary_fn)(tc_ctx *, tc_tensor *, tc_tensor *, const char *, int);
typedef tc_tensor *(*bscalar_fn)(tc_ctx *, tc_tensor *, double, const char *, int);
enum { K_ARITH, K_DIV, K_POW, K_CMP };
typedef struct binop {
    const char *name;
    binary_fn fn;
    bscalar_fn sfn;
    double (*ref)(double, double);
    int kind;
} binop;

/* Every op of TC__BINARY_API (api.h): r_NAME its reference, B_NAME the
 * values it is tested on (K_DIV: no divisor near 0, K_POW: a positive
 * base, K_CMP: ties and a bool result). */
static double r_add(double a, double b) { return a + b; }
#define B_add K_ARITH
static double r_sub(double a, double b) { return a - b; }
#define B_sub K_ARITH
static double r_mul(double a, double b) { return a * b; }
#define B_mul K_ARITH
static double r_div(double a, double b) { return a / b; }
#define B_div K_DIV
static double r_pow(double a, double b) { return pow(a, b); }
#define B_pow K_POW
static double r_maximum(double a, double b) { return a != a || b != b ? NAN : a > b ? a : b; }
#define B_maximum K_ARITH
static double r_minimum(double a, double b) { return a != a || b != b ? NAN : a < b ? a : b; }
#define B_minimum K_ARITH
static double r_eq(double a, double b) { return a == b; }
#define B_eq K_CMP
static double r_ne(double a, double b) { return a != b; }
#define B_ne K_CMP
static double r_lt(double a, double b) { return a < b; }
#define B_lt K_CMP
static double r_le(double a, double b) { return a <= b; }
#define B_le K_CMP
static double r_gt(double a, double b) { return a > b; }
#define B_gt K_CMP
static double r_ge(double a, double b) { return a >= b; }
#define B_ge K_CMP

#define BINOP_(name) {#name, tc_##name##_at, tc_##name##_scalar_at, r_##name, B_##name},
static const binop binops[] = {TC__BINARY_API(BINOP_)};
#undef BINOP_
#define N_BINOPS ((int)(sizeof binops / sizeof binops[0]))

#endif
