/* hypot_atan2.c: elementwise hypot(a, b) = sqrt(a^2 + b^2) and atan2(a, b) (the angle of the
 * point (b, a)) with broadcasting, float32/float64, and their gradients. Both are vectorised
 * (bmath.h): hypot scales by powers of two instead of dividing, atan2 uses one division and
 * a polynomial (float32) or rational (float64) core. */
#include "binary/bmath.h"
#include "unary/vmath512.h"

BO_MAP(fwd_hypot_f32, float, float, bm_hypot_f32)
BO_MAP(fwd_hypot_f64, double, double, bm_hypot_f64)
/* float32 atan2: the same formula in AVX-512 intrinsics (vmath512.h) where the CPU has it:
 * short broadcast rows (10000x1 by 1x100) take one masked tail instead of scalar remainders */
BO_MAP(fwd_atan2_f32_vec, float, float, bm_atan2_f32)
static void fwd_atan2_f32(void *const *p, const int64_t *s, const int64_t *os, int64_t rows,
                          int64_t n, int first) {
  if (VM512_OK()) vm512_atan2_rows(p, s, os, rows, n);
  else fwd_atan2_f32_vec(p, s, os, rows, n, first);
}
BO_MAP(fwd_atan2_f64, double, double, bm_atan2_f64)

/* hypot: da = g a / y, db = g b / y with y = hypot(a, b), the forward output. atan2: da =
 * g b / (a^2 + b^2), db = -g a / (a^2 + b^2), scaled as hypot scales (no overflow); its
 * terms are staged out of the row sums. */
#define HY_DA(g, a, b, y) ((g) * (a) / (y))
#define HY_DB(g, a, b, y) ((g) * (b) / (y))
#define AT_DA(g, a, b, y) ((g) * BMG_OVER_SUMSQ(b, a, b))
#define AT_DB(g, a, b, y) (-(g) * BMG_OVER_SUMSQ(a, a, b))
BO_GRAD_KERNELS(hypot, HY_DA, HY_DB, HY_DA, HY_DB)
BO_GRAD_KERNELS_STAGED(atan2, AT_DA, AT_DB, AT_DA, AT_DB)

/* Models. hypot: two squares, an add and a square root per output element; each gradient
 * term a multiply and a divide by the output (read: y). atan2: one transcendental (as exp or
 * log counts one); each term two squares, an add, a multiply and a divide. Terms read a and
 * b. */
static const bo_impl hypot_impl = {.fwd = {fwd_hypot_f32, fwd_hypot_f64}, BO_GRADS(hypot),
                                   .ref_f = hypot, .fwd_ops = 4, .grad_ops = {2, 2},
                                   .grad_reads_ab = 1, .grad_reads_y = 1};
static const bo_impl atan2_impl = {.fwd = {fwd_atan2_f32, fwd_atan2_f64}, BO_GRADS(atan2),
                                   .ref_f = atan2, .fwd_ops = 1, .grad_ops = {5, 5},
                                   .grad_reads_ab = 1};
BO_ENTRIES(hypot, hypot_impl)
BO_ENTRIES(atan2, atan2_impl)

OPPERF_OP(hypot) = {
    .abi = OPF_OP_ABI,
    .name = "hypot",
    .category = "binary",
    .summary = "elementwise sqrt(a^2 + b^2) with broadcasting, without overflow",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = {BO_INPUT("a", -10, 10), BO_INPUT("b", -10, 10)},
    .n_out = 1,
    .out = {"y"},
    .shapes = BO_SHAPES,
    .infer = bo_infer,
    BO_HOOKS(hypot),
};

OPPERF_OP(atan2) = {
    .abi = OPF_OP_ABI,
    .name = "atan2",
    .category = "binary",
    .summary = "elementwise atan2(a, b), the angle of (b, a) in [-pi, pi], with broadcasting",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = {{.name = "a", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -10, .hi = 10,
            .help = "y coordinate (numerator), broadcastable with b"},
           {.name = "b", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -10, .hi = 10,
            .help = "x coordinate (denominator), broadcastable with a"}},
    .n_out = 1,
    .out = {"y"},
    .shapes = BO_SHAPES,
    .infer = bo_infer,
    BO_HOOKS(atan2),
};
