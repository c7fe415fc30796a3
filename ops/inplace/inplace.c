/* inplace.c: in-place arithmetic a op= b (iadd, isub, imul, idiv, imod) where b broadcasts
 * to a's shape, for float32/float64 and int32/int64. Output 0 is input 0: the kernels are the
 * binary family's element functions (binop.h, bmath.h) in x = op(x, b) rows, and their inputs
 * are generated so that millions of repeated calls on the same buffer stay finite and normal. */
#include "binary/bmath.h"

BO_IP_ALL(ip_add, BO_ADD)
BO_IP_ALL(ip_sub, BO_SUB)
BO_IP_ALL(ip_mul, BO_MUL)
BO_IP(ip_div_f32, float, BO_DIV)
BO_IP(ip_div_f64, double, BO_DIV)
BO_GUARDED_IP(ip_div_i32, int32_t, bo_div_i32, bo_div_guard_i32, bo_div_slow_i32)
BO_GUARDED_IP(ip_div_i64, int64_t, bo_div_i64, bo_div_guard_i64, bo_div_slow_i64)
BO_GUARDED_IP(ip_mod_f32, float, bm_mod_f32, bm_mod_guard_f32, bm_mod_slow_f32)
BO_GUARDED_IP(ip_mod_f64, double, bm_mod_f64, bm_mod_guard_f64, bm_mod_slow_f64)
BO_GUARDED_IP(ip_mod_i32, int32_t, bm_mod_i32, bm_mod_guard_i32, bm_mod_slow_i32)
BO_GUARDED_IP(ip_mod_i64, int64_t, bm_mod_i64, bm_mod_guard_i64, bm_mod_slow_i64)

/* Models (bo_flops, bo_bytes): one operation per element of a; a read and written once, b
 * read once. Forward only: the backward figures are never measured. */
static const bo_impl iadd_impl = {.fwd = BO_BY_DTYPE(ip_add), .ref_f = bo_ref_add,
                                  .ref_i = bo_ref_add_i, .fwd_ops = 1};
static const bo_impl isub_impl = {.fwd = BO_BY_DTYPE(ip_sub), .ref_f = bo_ref_sub,
                                  .ref_i = bo_ref_sub_i, .fwd_ops = 1};
static const bo_impl imul_impl = {.fwd = BO_BY_DTYPE(ip_mul), .ref_f = bo_ref_mul,
                                  .ref_i = bo_ref_mul_i, .fwd_ops = 1};
static const bo_impl idiv_impl = {.fwd = BO_BY_DTYPE(ip_div), .ref_f = bo_ref_div,
                                  .ref_i = bo_ref_div_i, .fwd_ops = 1};
static const bo_impl imod_impl = {.fwd = BO_BY_DTYPE(ip_mod), .ref_f = bm_pymod,
                                  .ref_i = bm_pymod_int, .fwd_ops = 1};
BO_FWD_ENTRIES(iadd, iadd_impl, bo_forward_inplace)
BO_FWD_ENTRIES(isub, isub_impl, bo_forward_inplace)
BO_FWD_ENTRIES(imul, imul_impl, bo_forward_inplace)
BO_FWD_ENTRIES(idiv, idiv_impl, bo_forward_inplace)
BO_FWD_ENTRIES(imod, imod_impl, bo_forward_inplace)

/* Factors and divisors close to +-1: +-(1 + d) with |d| <= 2^-22 for floats, so that N calls
 * scale an element by at most e^(N 2^-22): 3e8 calls before float32 leaves its normal range
 * from |a| in [1e-7, 10] (the harness makes a few million at most); +-1 for integers, whose
 * other factors overflow or reach 0 within a few dozen calls. */
static int fill_unit(opf_case *c, int i, opf_rng *r) {
  (void)r;
  opf_tensor *t = &c->in[i];
  const int64_t n = opf_numel(t);
  opf_fill_uniform(t, c->seed, (uint64_t)i, -1, 1);
  for (int64_t k = 0; k < n; k++) {
    if (opf_dtype_is_float(t->dtype)) {
      double u = bo_getf(t, k), sign = u < 0 ? -1 : 1; /* |u| in [0, 1): d = (2|u| - 1) 2^-22 */
      bo_setf(t, k, sign * (1 + (2 * fabs(u) - 1) * 0x1p-22));
    } else {
      bo_seti(t, k, bo_geti(t, k) < 0 ? -1 : 1); /* the draw is -1 or 0 */
    }
  }
  return OPF_OK;
}

/* b may broadcast into a (rows, columns, scalars) but not enlarge it. */
#define IP_SHAPES                                                                             \
  {{"standard", "a=1024x1024 b=1024x1024"},                                                   \
   {"skewed", "a=1024x1024 b=1x1024"},                                                        \
   {"skewed", "a=1024x1024 b=1024x1"},                                                        \
   {"skewed", "a=10000x100 b=10000x1"},                                                       \
   {"skewed", "a=10000x10 b=10000x10"},                                                       \
   {"skewed", "a=1024x1024 b=()"},                                                            \
   {"small", "a=16x16 b=16x16"},                                                              \
   {"small", "a=16x16 b=1x16"},                                                               \
   {"small", "a=16x16 b=16x1"},                                                               \
   {"small", "a=1x64 b=64"},                                                                  \
   {"small", "a=37x3 b=()"},                                                                  \
   {"small", "a=() b=()"},                                                                    \
   {"small", "a=2x4x3 b=2x1x3"},                                                              \
   {"small", "a=3x4x5 b=4x1"},                                                                \
   {"small", "a=100x3 b=3"},                                                                  \
   {"test", "a=301x517 b=301x517"},                                                           \
   {"test", "a=301x517 b=301x1"},                                                             \
   {"test", "a=3x600x333 b=600x1"},                                                           \
   {"large", "a=8192x8192 b=8192x8192"},                                                      \
   {"huge", "a=46341x46341 b=46341x1"}}

#define IP_A(LO, HI)                                                                          \
  {.name = "a", .dtype = OPF_DT_CASE, .lo = LO, .hi = HI,                                     \
   .help = "the tensor updated in place (output y is a)"}
#define IP_B(LO, HI, FILL, HELP)                                                              \
  {.name = "b", .dtype = OPF_DT_CASE, .lo = LO, .hi = HI, .fill = FILL, .help = HELP}
#define IP_COMMON                                                                             \
  .abi = OPF_OP_ABI, .category = "inplace", .dtypes = OPF_DT_ALL, .n_in = 2, .n_out = 1,      \
  .out = {"y"}, .inplace = {1}, .shapes = IP_SHAPES, .infer = bo_infer_inplace

OPPERF_OP(iadd) = {
    IP_COMMON,
    BO_FWD_HOOKS(iadd),
    .name = "iadd",
    .summary = "in-place a += b (b broadcasts to a's shape)",
    .in = {IP_A(-10, 10), IP_B(-1, 2, NULL, "increment in [-1, 2) (integers -1..1)")},
};

OPPERF_OP(isub) = {
    IP_COMMON,
    BO_FWD_HOOKS(isub),
    .name = "isub",
    .summary = "in-place a -= b (b broadcasts to a's shape)",
    .in = {IP_A(-10, 10), IP_B(-1, 2, NULL, "decrement in [-1, 2) (integers -1..1)")},
};

OPPERF_OP(imul) = {
    IP_COMMON,
    BO_FWD_HOOKS(imul),
    .name = "imul",
    .summary = "in-place a *= b (b broadcasts to a's shape)",
    .in = {IP_A(-10, 10), IP_B(0, 0, fill_unit, "factor +-(1 + d), |d| <= 2^-22 (integers +-1)")},
};

OPPERF_OP(idiv) = {
    IP_COMMON,
    BO_FWD_HOOKS(idiv),
    .name = "idiv",
    .summary = "in-place a /= b (b broadcasts to a's shape; integers truncate toward zero)",
    .in = {IP_A(-10, 10), IP_B(0, 0, fill_unit, "divisor +-(1 + d), |d| <= 2^-22 (integers +-1)")},
};

OPPERF_OP(imod) = {
    IP_COMMON,
    BO_FWD_HOOKS(imod),
    .name = "imod",
    .summary = "in-place a = a mod b, floor modulo as NumPy (b broadcasts to a's shape)",
    .in = {IP_A(-20, 20), IP_B(0, 0, bo_fill_divisor, "divisor: |b| in [0.5, 2), integers 1..9")},
};
