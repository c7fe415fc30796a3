/* compare.c: elementwise comparisons equal, not_equal, greater, greater_equal, less and
 * less_equal with broadcasting (same shape, row/column, tensor-scalar) for every numeric
 * dtype, producing bool. Inputs are small integers in every dtype, so equality occurs (about
 * one pair in eight) and every outcome is exercised. */
#include "logic/logic.h"

#define LG_EQ(a, b) ((a) == (b))
#define LG_NE(a, b) ((a) != (b))
#define LG_GT(a, b) ((a) > (b))
#define LG_GE(a, b) ((a) >= (b))
#define LG_LT(a, b) ((a) < (b))
#define LG_LE(a, b) ((a) <= (b))
#define LG_CMP(NAME, EL)                                                                      \
  BO_MAP_NUMERIC(fwd_##NAME, uint8_t, uint8_t, uint8_t, uint8_t, EL)                          \
  static double ref_##NAME(double a, double b) { return EL(a, b); }                           \
  static int64_t ref_##NAME##_i(int64_t a, int64_t b) { return EL(a, b); }                    \
  /* one compare per output element; a and b read, one byte written */                        \
  static const bo_impl NAME##_impl = {.fwd = BO_BY_DTYPE(fwd_##NAME), .ref_f = ref_##NAME,    \
                                      .ref_i = ref_##NAME##_i, .fwd_ops = 1};                 \
  BO_FWD_ENTRIES(NAME, NAME##_impl, bo_forward)
LG_CMP(equal, LG_EQ)
LG_CMP(not_equal, LG_NE)
LG_CMP(greater, LG_GT)
LG_CMP(greater_equal, LG_GE)
LG_CMP(less, LG_LT)
LG_CMP(less_equal, LG_LE)

/* Integers in [-4, 4) in every dtype. */
static int fill_small_int(opf_case *c, int i, opf_rng *r) {
  (void)r;
  bo_fill_int_valued(c, i, -4, 4);
  return OPF_OK;
}

#define CMP_INPUT(NAME)                                                                       \
  {.name = NAME, .dtype = OPF_DT_CASE, .fill = fill_small_int,                                \
   .help = "any shape broadcastable with the other input; generated as integers -4..3"}
#define CMP_OP(NAME, SUMMARY)                                                                 \
  .abi = OPF_OP_ABI, .name = #NAME, .category = "logic", .summary = SUMMARY,                  \
  .dtypes = OPF_DT_ALL, .n_in = 2, .in = {CMP_INPUT("a"), CMP_INPUT("b")}, .n_out = 1,        \
  .out = {"y"}, .shapes = BO_SHAPES, .infer = bo_infer_bool, BO_FWD_HOOKS(NAME)

OPPERF_OP(equal) = {CMP_OP(equal, "elementwise a == b with broadcasting, bool output")};
OPPERF_OP(not_equal) = {CMP_OP(not_equal, "elementwise a != b with broadcasting, bool output")};
OPPERF_OP(greater) = {CMP_OP(greater, "elementwise a > b with broadcasting, bool output")};
OPPERF_OP(greater_equal) = {
    CMP_OP(greater_equal, "elementwise a >= b with broadcasting, bool output")};
OPPERF_OP(less) = {CMP_OP(less, "elementwise a < b with broadcasting, bool output")};
OPPERF_OP(less_equal) = {CMP_OP(less_equal, "elementwise a <= b with broadcasting, bool output")};
