/* arith.c: add, sub, mul and div with NumPy broadcasting (same shape, row/column broadcast,
 * tensor-scalar) for float32/float64 and int32/int64, and their gradients reduced over the
 * broadcast dims. The family machinery (binop.h over the bcast.h iterator) turns each element
 * formula into per-stride-pattern loops that the compiler vectorises. */
#include "binary/binop.h"

/* ---- forward: integer division goes through float64 (vectorised), with C's divide for
 * the blocks the guard flags (zero divisors, MIN / -1, int64 beyond 2^53) ---- */
BO_MAP_ALL(fwd_add, BO_ADD)
BO_MAP_ALL(fwd_sub, BO_SUB)
BO_MAP_ALL(fwd_mul, BO_MUL)
BO_MAP(fwd_div_f32, float, float, BO_DIV)
BO_MAP(fwd_div_f64, double, double, BO_DIV)
BO_GUARDED(fwd_div_i32, int32_t, bo_div_i32, bo_div_guard_i32, bo_div_slow_i32)
BO_GUARDED(fwd_div_i64, int64_t, bo_div_i64, bo_div_guard_i64, bo_div_slow_i64)

/* ---- gradient terms: da, db = sum over broadcast dims of term(g, a, b, y) ---- */
#define GT_NEG_G(g, a, b, y) (-(g))
#define GT_G_B(g, a, b, y) ((g) * (b))
#define GT_G_A(g, a, b, y) ((g) * (a))
#define GT_G_DIV_B(g, a, b, y) ((g) / (b))
#define GT_DIV_DB(g, a, b, y) (-((g) * (a)) / ((b) * (b)))
BO_GRAD_KERNELS(add, BO_TERM_G, BO_TERM_G, BO_TERM_G, BO_TERM_G)
BO_GRAD_KERNELS(sub, BO_TERM_G, GT_NEG_G, BO_TERM_G, GT_NEG_G)
BO_GRAD_KERNELS(mul, GT_G_B, GT_G_A, GT_G_B, GT_G_A)
BO_GRAD_KERNELS(div, GT_G_DIV_B, GT_DIV_DB, GT_G_DIV_B, GT_DIV_DB)

/* Models: one operation per output element forward. Gradient terms: add 0, 0; sub 0, 1
 * (negate); mul 1, 1 (multiply); div 1 (divide) and 3 for -(g a)/(b b); mul and div read a
 * and b. */
static const bo_impl add_impl = {.fwd = BO_BY_DTYPE(fwd_add), BO_GRADS(add),
                                 .ref_f = bo_ref_add, .ref_i = bo_ref_add_i, .fwd_ops = 1};
static const bo_impl sub_impl = {.fwd = BO_BY_DTYPE(fwd_sub), BO_GRADS(sub),
                                 .ref_f = bo_ref_sub, .ref_i = bo_ref_sub_i, .fwd_ops = 1,
                                 .grad_ops = {0, 1}};
static const bo_impl mul_impl = {.fwd = BO_BY_DTYPE(fwd_mul), BO_GRADS(mul),
                                 .ref_f = bo_ref_mul, .ref_i = bo_ref_mul_i, .fwd_ops = 1,
                                 .grad_ops = {1, 1}, .grad_reads_ab = 1};
static const bo_impl div_impl = {.fwd = BO_BY_DTYPE(fwd_div), BO_GRADS(div),
                                 .ref_f = bo_ref_div, .ref_i = bo_ref_div_i, .fwd_ops = 1,
                                 .grad_ops = {1, 3}, .grad_reads_ab = 1};
BO_ENTRIES(add, add_impl)
BO_ENTRIES(sub, sub_impl)
BO_ENTRIES(mul, mul_impl)
BO_ENTRIES(div, div_impl)

/* Gradient views: the gradient of an input of the output's shape is g itself for add, and
 * for sub's a (sub's db = -g is computed: a scaled gradient is not a view). */
static int add_grad_view(const opf_case *c, int i, opf_view *v) { return opf_view_alias(c, i, 0, v); }
static int sub_grad_view(const opf_case *c, int i, opf_view *v) {
  return i == 0 && opf_view_alias(c, i, 0, v);
}

#define ARITH_COMMON                                                                          \
  .abi = OPF_OP_ABI, .category = "binary", .n_in = 2, .n_out = 1, .out = {"y"},               \
  .shapes = BO_SHAPES, .infer = bo_infer, .dtypes = OPF_DT_ALL

OPPERF_OP(add) = {
    ARITH_COMMON,
    BO_HOOKS(add),
    .grad_view = add_grad_view,
    .name = "add",
    .summary = "elementwise a + b with broadcasting",
    .in = {BO_INPUT("a", -10, 10), BO_INPUT("b", -10, 10)},
};

OPPERF_OP(sub) = {
    ARITH_COMMON,
    BO_HOOKS(sub),
    .grad_view = sub_grad_view,
    .name = "sub",
    .summary = "elementwise a - b with broadcasting",
    .in = {BO_INPUT("a", -10, 10), BO_INPUT("b", -10, 10)},
};

OPPERF_OP(mul) = {
    ARITH_COMMON,
    BO_HOOKS(mul),
    .name = "mul",
    .summary = "elementwise a * b with broadcasting",
    .in = {BO_INPUT("a", -10, 10), BO_INPUT("b", -10, 10)},
};

OPPERF_OP(div) = {
    ARITH_COMMON,
    BO_HOOKS(div),
    .name = "div",
    .summary = "elementwise a / b with broadcasting (integers truncate toward zero)",
    .in = {BO_INPUT("a", -100, 100),
           {.name = "b", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .fill = bo_fill_divisor,
            .help = "divisor, generated away from zero: |b| in [0.5, 2), integers 1..9"}},
};
