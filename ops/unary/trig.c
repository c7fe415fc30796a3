/* trig.c: circular and hyperbolic functions and their inverses: sin, cos, tan, arcsin,
 * arccos, arctan, sinh, cosh, tanh, arcsinh, arccosh, arctanh, with their gradients.
 * Compute-bound: glibc's vector libm (vlibm.h) evaluates them 8 (float64) or 16 (float32)
 * lanes at a time under AVX-512, 10-70x the scalar libm loop. */
#include <math.h>

#include "unary/unary_map.h"
#include "unary/vlibm.h"
#include "unary/vmath512.h"

/* Gradients from whichever of x and y is cheaper and accurate: tan 1 + y^2, tanh 1 - y^2;
 * arcsinh 1 / cosh(y) (no overflow of 1 + x^2); arccosh 1 / (sqrt(x - 1) sqrt(x + 1)) (exact
 * x - 1 near 1, no overflow); arcsin, arccos, arctanh through (1 - x)(1 + x), exact near
 * |x| = 1 where 1 - x^2 is not. sin, cos, sinh, cosh need the other function of x.
 * Flops per element: one per function call and per arithmetic operation. */
/*     name     forward          backward (x, y, dy)                              reference */
UM_MAP(sin,     VL(sin, x),      dy * VL(cos, x),                                 sin,
       1, 2, UM_R_ONE, UM_PAR_MATH)
UM_MAP(cos,     VL(cos, x),      -dy * VL(sin, x),                                cos,
       1, 2, UM_R_ONE, UM_PAR_MATH)
UM_MAP(tan,     VL(tan, x),      dy * (1 + y * y),                                tan,
       1, 3, UM_R_ONE, UM_PAR_MATH)
UM_MAP(arcsin,  VL(asin, x),     dy / VM_SQRT((1 - x) * (1 + x)),                 asin,
       1, 5, UM_R_ONE, UM_PAR_MATH)
UM_MAP(arccos,  VL(acos, x),     -dy / VM_SQRT((1 - x) * (1 + x)),                acos,
       1, 5, UM_R_ONE, UM_PAR_MATH)
UM_MAP(arctan,  VL(atan, x),     dy / (1 + x * x),                                atan,
       1, 3, UM_R_ONE, UM_PAR_MATH)
UM_MAP(sinh,    VL(sinh, x),     dy * VL(cosh, x),                                sinh,
       1, 2, UM_R_ONE, UM_PAR_MATH)
UM_MAP(cosh,    VL(cosh, x),     dy * VL(sinh, x),                                cosh,
       1, 2, UM_R_ONE, UM_PAR_MATH)
UM_MAP(tanh,    VL(tanh, x),     dy * (1 - y * y),                                tanh,
       1, 3, UM_R_ONE, UM_PAR_MATH)
UM_MAP(arcsinh, VL(asinh, x),    dy / VL(cosh, y),                                asinh,
       1, 2, UM_R_ONE, UM_PAR_MATH)
/* arccosh: float32 forward by vmath512.h's kernel where the CPU has AVX-512 (libmvec's
 * acoshf measured 1.5x slower than NumPy's SVML there) */
UM_FWD_LOOP(arccosh_vec, float, f32, VL(acosh, x))
UM_FWD_LOOP(arccosh, double, f64, VL(acosh, x))
UM_BWD_LOOP(arccosh, float, f32, dy / (VM_SQRT(x - 1) * VM_SQRT(x + 1)))
UM_BWD_LOOP(arccosh, double, f64, dy / (VM_SQRT(x - 1) * VM_SQRT(x + 1)))
static void arccosh_fwd_f32(const float *restrict x, float *restrict y, int64_t n) {
  if (VM512_OK()) vm512_acosh_f32(x, y, n);
  else arccosh_vec_fwd_f32(x, y, n);
}
UM_DIFF_HOOKS(arccosh, acosh, NULL, 1, 6, UM_R_ONE, UM_PAR_MATH)
UM_MAP(arctanh, VL(atanh, x),    dy / ((1 - x) * (1 + x)),                        atanh,
       1, 4, UM_R_ONE, UM_PAR_MATH)

#define UNIT "|x| < 1: generated in [-0.95, 0.95)"
OPPERF_OP(sin) = {UM_UNARY(sin), .name = "sin", UM_X(-10, 10, NULL),
                  .summary = "sine: y = sin(x)"};
OPPERF_OP(cos) = {UM_UNARY(cos), .name = "cos", UM_X(-10, 10, NULL),
                  .summary = "cosine: y = cos(x)"};
OPPERF_OP(tan) = {UM_UNARY(tan), .name = "tan",
                  UM_X(-1.2, 1.2, "away from the poles at +-pi/2: generated in [-1.2, 1.2)"),
                  .summary = "tangent: y = tan(x)"};
OPPERF_OP(arcsin) = {UM_UNARY(arcsin), .name = "arcsin", UM_X(-0.95, 0.95, UNIT),
                     .summary = "inverse sine: y = asin(x), |x| <= 1"};
OPPERF_OP(arccos) = {UM_UNARY(arccos), .name = "arccos", UM_X(-0.95, 0.95, UNIT),
                     .summary = "inverse cosine: y = acos(x), |x| <= 1"};
OPPERF_OP(arctan) = {UM_UNARY(arctan), .name = "arctan", UM_X(-10, 10, NULL),
                     .summary = "inverse tangent: y = atan(x)"};
OPPERF_OP(sinh) = {UM_UNARY(sinh), .name = "sinh", UM_X(-5, 5, NULL),
                   .summary = "hyperbolic sine: y = sinh(x)"};
OPPERF_OP(cosh) = {UM_UNARY(cosh), .name = "cosh", UM_X(-5, 5, NULL),
                   .summary = "hyperbolic cosine: y = cosh(x)"};
OPPERF_OP(tanh) = {UM_UNARY(tanh), .name = "tanh", UM_X(-5, 5, NULL),
                   .summary = "hyperbolic tangent: y = tanh(x)"};
OPPERF_OP(arcsinh) = {UM_UNARY(arcsinh), .name = "arcsinh", UM_X(-10, 10, NULL),
                      .summary = "inverse hyperbolic sine: y = asinh(x)"};
OPPERF_OP(arccosh) = {UM_UNARY(arccosh), .name = "arccosh",
                      UM_X(1.1, 10, "x > 1: generated in [1.1, 10)"),
                      .summary = "inverse hyperbolic cosine: y = acosh(x), x >= 1"};
OPPERF_OP(arctanh) = {UM_UNARY(arctanh), .name = "arctanh", UM_X(-0.95, 0.95, UNIT),
                      .summary = "inverse hyperbolic tangent: y = atanh(x), |x| < 1"};
