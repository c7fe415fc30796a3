/* logical.c: logical_and, logical_or, logical_xor (with broadcasting) and logical_not on any
 * numeric or bool input (nonzero is true; NaN is true, -0 false, as in NumPy), producing
 * bool. Inputs are -1, 0 and 1 so that both truth values are common. */
#include "logic/logic.h"

#define LG_TRUE(x) ((x) != 0)
#define LG_AND(a, b) (LG_TRUE(a) & LG_TRUE(b))
#define LG_OR(a, b) (LG_TRUE(a) | LG_TRUE(b))
#define LG_XOR(a, b) (LG_TRUE(a) ^ LG_TRUE(b))
#define LG_NOT(x) (!LG_TRUE(x))
/* Kernels for the numeric dtypes and bool, listed by dtype. */
#define LG_LOGICAL(NAME, EL)                                                                  \
  BO_MAP_NUMERIC(fwd_##NAME, uint8_t, uint8_t, uint8_t, uint8_t, EL)                          \
  BO_MAP(fwd_##NAME##_b8, uint8_t, uint8_t, EL)                                               \
  static double ref_##NAME(double a, double b) { return EL(a, b); }                           \
  static int64_t ref_##NAME##_i(int64_t a, int64_t b) { return EL(a, b); }                    \
  /* one operation per output element; a and b read, one byte written */                      \
  static const bo_impl NAME##_impl = {                                                        \
      .fwd = {fwd_##NAME##_f32, fwd_##NAME##_f64, fwd_##NAME##_i32, fwd_##NAME##_i64,         \
              fwd_##NAME##_b8},                                                               \
      .ref_f = ref_##NAME, .ref_i = ref_##NAME##_i, .fwd_ops = 1};                            \
  BO_FWD_ENTRIES(NAME, NAME##_impl, bo_forward)
LG_LOGICAL(logical_and, LG_AND)
LG_LOGICAL(logical_or, LG_OR)
LG_LOGICAL(logical_xor, LG_XOR)

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
#define LG_BINARY_OP(NAME, SUMMARY)                                                           \
  .abi = OPF_OP_ABI, .name = #NAME, .category = "logic", .summary = SUMMARY,                  \
  .dtypes = OPF_DT_ALL | OPF_DT_BOOL, .n_in = 2,                                              \
  .in = {LG_INPUT("a", "any shape broadcastable with b; nonzero is true (generated -1, 0, 1)"), \
         LG_INPUT("b", "any shape broadcastable with a; nonzero is true (generated -1, 0, 1)")}, \
  .n_out = 1, .out = {"y"}, .shapes = BO_SHAPES, .infer = bo_infer_bool, BO_FWD_HOOKS(NAME)

OPPERF_OP(logical_and) = {LG_BINARY_OP(logical_and, "elementwise a AND b (nonzero is true)")};
OPPERF_OP(logical_or) = {LG_BINARY_OP(logical_or, "elementwise a OR b (nonzero is true)")};
OPPERF_OP(logical_xor) = {LG_BINARY_OP(logical_xor, "elementwise a XOR b (nonzero is true)")};
OPPERF_OP(logical_not) = {
    LG_UNARY_OP(logical_not, OPF_DT_ALL | OPF_DT_BOOL,
                LG_INPUT("x", "any shape; nonzero is true (generated -1, 0, 1)"),
                "elementwise NOT x (nonzero is true), bool output")};
