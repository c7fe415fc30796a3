/* compare.c: elementwise comparisons equal, not_equal, greater, greater_equal, less and
 * less_equal with broadcasting (same shape, row/column, tensor-scalar) for every numeric
 * dtype and bool, producing bool. Inputs are small integers in every dtype, so equality
 * occurs (about one pair in eight) and every outcome is exercised. */
#include "logic/logic.h"

#define LG_EQ(a, b) ((a) == (b))
#define LG_NE(a, b) ((a) != (b))
#define LG_GT(a, b) ((a) > (b))
#define LG_GE(a, b) ((a) >= (b))
#define LG_LT(a, b) ((a) < (b))
#define LG_LE(a, b) ((a) <= (b))
LG_BINARY(equal, LG_EQ)
LG_BINARY(not_equal, LG_NE)
LG_BINARY(greater, LG_GT)
LG_BINARY(greater_equal, LG_GE)
LG_BINARY(less, LG_LT)
LG_BINARY(less_equal, LG_LE)

/* Integers in [-4, 4) in every dtype (bool: true for 1..3). */
static int fill_small_int(opf_case *c, int i, opf_rng *r) {
  (void)r;
  bo_fill_int_valued(c, i, -4, 4);
  return OPF_OK;
}

#define CMP_INPUT(NAME)                                                                       \
  {.name = NAME, .dtype = OPF_DT_CASE, .fill = fill_small_int,                                \
   .help = "any shape broadcastable with the other input; generated as integers -4..3"}
#define CMP_OP(NAME, SUMMARY) LG_BINARY_OP(NAME, CMP_INPUT("a"), CMP_INPUT("b"), SUMMARY)

OPPERF_OP(equal) = {CMP_OP(equal, "elementwise a == b with broadcasting, bool output")};
OPPERF_OP(not_equal) = {CMP_OP(not_equal, "elementwise a != b with broadcasting, bool output")};
OPPERF_OP(greater) = {CMP_OP(greater, "elementwise a > b with broadcasting, bool output")};
OPPERF_OP(greater_equal) = {
    CMP_OP(greater_equal, "elementwise a >= b with broadcasting, bool output")};
OPPERF_OP(less) = {CMP_OP(less, "elementwise a < b with broadcasting, bool output")};
OPPERF_OP(less_equal) = {CMP_OP(less_equal, "elementwise a <= b with broadcasting, bool output")};
