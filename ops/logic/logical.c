/* logical.c: logical_and, logical_or, logical_xor (with broadcasting) and logical_not on any
 * numeric or bool input (nonzero is true; NaN is true, -0 false, as in NumPy), producing
 * bool. Inputs are -1, 0 and 1 so that both truth values are common. */
#include "logic/logic.h"

#define LG_TRUE(x) ((x) != 0)
#define LG_AND(a, b) (LG_TRUE(a) & LG_TRUE(b))
#define LG_OR(a, b) (LG_TRUE(a) | LG_TRUE(b))
#define LG_XOR(a, b) (LG_TRUE(a) ^ LG_TRUE(b))
#define LG_NOT(x) (!LG_TRUE(x))
LG_BINARY(logical_and, LG_AND)
LG_BINARY(logical_or, LG_OR)
LG_BINARY(logical_xor, LG_XOR)

LG_UNARY(fwd_not_f32, float, LG_NOT)
LG_UNARY(fwd_not_f64, double, LG_NOT)
LG_UNARY(fwd_not_i32, int32_t, LG_NOT)
LG_UNARY(fwd_not_i64, int64_t, LG_NOT)
LG_UNARY(fwd_not_b8, uint8_t, LG_NOT)
static int ref_not(double x) { return LG_NOT(x); }
static int ref_not_i(int64_t x) { return LG_NOT(x); }
static const lg_unary not_impl = {
    .fwd = {fwd_not_f32, fwd_not_f64, fwd_not_i32, fwd_not_i64, fwd_not_b8},
    .ref_f = ref_not, .ref_i = ref_not_i};
LG_UNARY_ENTRIES(logical_not, not_impl)

#define LG_INPUT(NAME, HELP)                                                                  \
  {.name = NAME, .dtype = OPF_DT_CASE, .fill = lg_fill_truth, .help = HELP}
#define LG_HELP(OTHER)                                                                        \
  "any shape broadcastable with " OTHER "; nonzero is true (generated -1, 0, 1)"
#define LOGICAL_OP(NAME, SUMMARY)                                                             \
  LG_BINARY_OP(NAME, LG_INPUT("a", LG_HELP("b")), LG_INPUT("b", LG_HELP("a")), SUMMARY)

OPPERF_OP(logical_and) = {LOGICAL_OP(logical_and, "elementwise a AND b (nonzero is true)")};
OPPERF_OP(logical_or) = {LOGICAL_OP(logical_or, "elementwise a OR b (nonzero is true)")};
OPPERF_OP(logical_xor) = {LOGICAL_OP(logical_xor, "elementwise a XOR b (nonzero is true)")};
OPPERF_OP(logical_not) = {
    LG_UNARY_OP(logical_not, OPF_DT_ALL | OPF_DT_BOOL,
                LG_INPUT("x", "any shape; nonzero is true (generated -1, 0, 1)"),
                "elementwise NOT x (nonzero is true), bool output")};
