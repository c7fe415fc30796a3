/* classify.c: isnan, isinf and isfinite for every numeric dtype (integers are always finite),
 * producing bool. Generated inputs plant NaN, +inf and -inf at about 2% of positions each, so
 * that every class occurs. */
#include "logic/logic.h"

/* Float tests from bits-free compares: x != x, |x| == inf, |x| < inf (false for NaN). */
#define LG_ISNAN(x) ((x) != (x))
#define LG_ISINF_F32(x) (__builtin_fabsf(x) == __builtin_inff())
#define LG_ISINF_F64(x) (__builtin_fabs(x) == __builtin_inf())
#define LG_FINITE_F32(x) (__builtin_fabsf(x) < __builtin_inff())
#define LG_FINITE_F64(x) (__builtin_fabs(x) < __builtin_inf())
#define LG_NEVER(x) ((void)(x), 0)
#define LG_ALWAYS(x) ((void)(x), 1)
#define LG_CLASSIFY(NAME, ELF, ELD, ELI, REF)                                                 \
  LG_UNARY(fwd_##NAME##_f32, float, ELF)                                                      \
  LG_UNARY(fwd_##NAME##_f64, double, ELD)                                                     \
  LG_UNARY(fwd_##NAME##_i32, int32_t, ELI)                                                    \
  LG_UNARY(fwd_##NAME##_i64, int64_t, ELI)                                                    \
  static int ref_##NAME(double x) { return REF(x) != 0; }                                     \
  static int ref_##NAME##_i(int64_t x) { return ELI(x); }                                     \
  static const lg_unary NAME##_impl = {.fwd = BO_BY_DTYPE(fwd_##NAME), .ref_f = ref_##NAME,   \
                                       .ref_i = ref_##NAME##_i};                              \
  LG_UNARY_ENTRIES(NAME, NAME##_impl)
LG_CLASSIFY(isnan, LG_ISNAN, LG_ISNAN, LG_NEVER, isnan)
LG_CLASSIFY(isinf, LG_ISINF_F32, LG_ISINF_F64, LG_NEVER, isinf)
LG_CLASSIFY(isfinite, LG_FINITE_F32, LG_FINITE_F64, LG_ALWAYS, isfinite)

/* Uniform values in [-10, 10), then (floats) NaN, +inf and -inf each at about 2% of the
 * positions, drawn from the fill's own stream. */
static int fill_specials(opf_case *c, int i, opf_rng *r) {
  opf_tensor *t = &c->in[i];
  opf_fill_uniform(t, c->seed, (uint64_t)i, -10, 10);
  if (!opf_dtype_is_float(t->dtype)) return OPF_OK;
  const int64_t n = opf_numel(t);
  for (int64_t k = 0; k < n; k++) {
    double u = opf_rng_uniform(r);
    if (u < 0.06) bo_setf(t, k, u < 0.02 ? NAN : u < 0.04 ? INFINITY : -INFINITY);
  }
  return OPF_OK;
}

#define CLS_INPUT                                                                             \
  {.name = "x", .dtype = OPF_DT_CASE, .fill = fill_specials,                                  \
   .help = "any shape; floats generated with ~2% each of NaN, +inf and -inf"}

OPPERF_OP(isnan) = {LG_UNARY_OP(isnan, OPF_DT_ALL, CLS_INPUT, "elementwise x is NaN, bool output")};
OPPERF_OP(isinf) = {
    LG_UNARY_OP(isinf, OPF_DT_ALL, CLS_INPUT, "elementwise x is +-inf, bool output")};
OPPERF_OP(isfinite) = {LG_UNARY_OP(isfinite, OPF_DT_ALL, CLS_INPUT,
                                   "elementwise x is neither NaN nor +-inf, bool output")};
