/* minmax.c: elementwise maximum and minimum with broadcasting for float32/float64 and
 * int32/int64; NaN propagates (NumPy's maximum/minimum, not fmax/fmin). The gradient goes to
 * the selected input, split evenly at ties (PyTorch's rule). */
#include "binary/bmath.h"

/* a wins when it compares greater (smaller) or is NaN; otherwise b, NaN or not. Integers skip
 * the NaN test. Bitwise | keeps the select branch-free for the vectoriser. */
#define MM_MAX_F(a, b) (((a) > (b)) | ((a) != (a)) ? (a) : (b))
#define MM_MIN_F(a, b) (((a) < (b)) | ((a) != (a)) ? (a) : (b))
#define MM_MAX_I(a, b) ((a) > (b) ? (a) : (b))
#define MM_MIN_I(a, b) ((a) < (b) ? (a) : (b))
BO_MAP(fwd_max_f32, float, float, MM_MAX_F)
BO_MAP(fwd_max_f64, double, double, MM_MAX_F)
BO_MAP(fwd_max_i32, int32_t, int32_t, MM_MAX_I)
BO_MAP(fwd_max_i64, int64_t, int64_t, MM_MAX_I)
BO_MAP(fwd_min_f32, float, float, MM_MIN_F)
BO_MAP(fwd_min_f64, double, double, MM_MIN_F)
BO_MAP(fwd_min_i32, int32_t, int32_t, MM_MIN_I)
BO_MAP(fwd_min_i64, int64_t, int64_t, MM_MIN_I)

/* Gradient to x when x wins against o under the order CMP, half of it at a tie. */
#define MM_WIN(CMP, g, x, o)                                                                  \
  BM_SEL((x) CMP (o), g, BM_SEL((x) == (o), (g) * (__typeof__(g))0.5, (__typeof__(g))0))
#define MAX_DA(g, a, b, y) MM_WIN(>, g, a, b)
#define MAX_DB(g, a, b, y) MM_WIN(>, g, b, a)
#define MIN_DA(g, a, b, y) MM_WIN(<, g, a, b)
#define MIN_DB(g, a, b, y) MM_WIN(<, g, b, a)
BO_GRAD_KERNELS(maximum, MAX_DA, MAX_DB, MAX_DA, MAX_DB)
BO_GRAD_KERNELS(minimum, MIN_DA, MIN_DB, MIN_DA, MIN_DB)

static double ref_max(double a, double b) { return a > b || isnan(a) ? a : b; }
static double ref_min(double a, double b) { return a < b || isnan(a) ? a : b; }
static int64_t ref_max_i(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t ref_min_i(int64_t a, int64_t b) { return a < b ? a : b; }

/* Models: one compare-select per output element forward and per gradient term. */
static const bo_impl max_impl = {.fwd = BO_BY_DTYPE(fwd_max), BO_GRADS(maximum),
                                 .ref_f = ref_max, .ref_i = ref_max_i, .fwd_ops = 1,
                                 .grad_ops = {1, 1}, .grad_reads_ab = 1};
static const bo_impl min_impl = {.fwd = BO_BY_DTYPE(fwd_min), BO_GRADS(minimum),
                                 .ref_f = ref_min, .ref_i = ref_min_i, .fwd_ops = 1,
                                 .grad_ops = {1, 1}, .grad_reads_ab = 1};
BO_ENTRIES(maximum, max_impl)
BO_ENTRIES(minimum, min_impl)

#define MM_COMMON                                                                             \
  .abi = OPF_OP_ABI, .category = "binary", .dtypes = OPF_DT_ALL, .n_in = 2,                   \
  .in = {BO_INPUT("a", -10, 10), BO_INPUT("b", -10, 10)}, .n_out = 1, .out = {"y"},           \
  .shapes = BO_SHAPES, .infer = bo_infer

OPPERF_OP(maximum) = {
    MM_COMMON,
    BO_HOOKS(maximum),
    .name = "maximum",
    .summary = "elementwise maximum of a and b with broadcasting (NaN propagates)",
};

OPPERF_OP(minimum) = {
    MM_COMMON,
    BO_HOOKS(minimum),
    .name = "minimum",
    .summary = "elementwise minimum of a and b with broadcasting (NaN propagates)",
};
