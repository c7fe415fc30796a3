/* special.c: the error function and its inverse, gamma and log-gamma, with their gradients:
 * erf (glibc's vector erf), erfinv, gamma and gammaln (vspecial.h: our own vectorised
 * approximations; their backward passes need digamma). Compute-bound. */
#include <math.h>

#include "unary/unary_map.h"
#include "unary/vspecial.h"

/* libm has no erfinv: bisection on erf to the last bit, then two Newton steps (which make
 * the result a smooth function of y, as the finite-difference gradient check needs). */
static double ref_erfinv(double y) {
  if (!(fabs(y) < 1)) return fabs(y) == 1 ? copysign(INFINITY, y) : NAN;
  double lo = -6, hi = 6; /* erf(6) rounds to 1 */
  for (int i = 0; i < 200; i++) {
    double m = 0.5 * (lo + hi);
    if (m <= lo || m >= hi) break;
    *(erf(m) < y ? &lo : &hi) = m;
  }
  double x = 0.5 * (lo + hi);
  for (int i = 0; i < 2; i++) x -= (erf(x) - y) / (M_2_SQRTPI * exp(-x * x));
  return x;
}

/* Gradients: erf 2/sqrt(pi) exp(-x^2); erfinv sqrt(pi)/2 exp(y^2); gamma y psi(x);
 * gammaln psi(x) (psi = digamma). Flops per element: one per function and operation.
 * erfinv, gamma and gammaln have branch-free kernels for their whole domain; blocks whose
 * inputs all lie in the common region (erfinv: away from +-1; gamma, gammaln and digamma
 * for the backward: x > 0, no reflection) skip the other regions (UM_MAP_SPLIT). */
#define ERFINV_CENTRAL_IF VM_ABS(x) <= UM_C(sizeof(x) == 4 ? 0.996 : 0.998)
/*     name     forward          backward (x, y, dy)                        reference */
UM_MAP(erf,     VL(erf, x),      dy * UM_C(M_2_SQRTPI) * VM_EXP(-x * x),    erf,
       1, 4, UM_R_ONE, UM_PAR_MATH)
UM_MAP_SPLIT(erfinv, ERFINV_CENTRAL_IF, VM_ERFINV_CENTRAL(x), VM_ERFINV(x),
             dy * UM_C(1 / M_2_SQRTPI) * VM_EXP(y * y), ref_erfinv,
             1, 4, UM_R_ONE, UM_PAR_SPECIAL)
UM_MAP_SPLIT2(gamma, x > 0, VM_GAMMA_POS(x), VM_GAMMA(x),
              dy * y * VM_DIGAMMA_POS(x), dy * y * VM_DIGAMMA(x), tgamma,
              1, 3, UM_R_BOTH, UM_PAR_SPECIAL)
UM_MAP_SPLIT2(gammaln, x > 0, VM_LGAMMA_POS(x), VM_LGAMMA(x),
              dy * VM_DIGAMMA_POS(x), dy * VM_DIGAMMA(x), lgamma,
              1, 2, UM_R_ONE, UM_PAR_SPECIAL)

OPPERF_OP(erf) = {UM_UNARY(erf), .name = "erf", UM_X(-3, 3, NULL),
                  .summary = "error function: y = erf(x)"};
OPPERF_OP(erfinv) = {UM_UNARY(erfinv), .name = "erfinv",
                     UM_X(-0.95, 0.95, "|x| < 1: generated in [-0.95, 0.95)"),
                     .summary = "inverse error function: y = erfinv(x), |x| < 1"};
OPPERF_OP(gamma) = {UM_UNARY(gamma), .name = "gamma",
                    UM_X(0.1, 5, "away from the poles at 0, -1, ...: generated in [0.1, 5)"),
                    .summary = "gamma function: y = tgamma(x)"};
OPPERF_OP(gammaln) = {UM_UNARY(gammaln), .name = "gammaln",
                      UM_X(0.1, 10, "x > 0: generated in [0.1, 10)"),
                      .summary = "log of the absolute gamma function: y = lgamma(x)"};
