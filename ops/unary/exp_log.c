/* exp_log.c: the exponential and logarithm family: exp, expm1, log, log1p, log2, log10, with
 * their gradients. exp uses vmath.h's inline kernel (shared with the activations and
 * reductions; faster than glibc's vector expf), the others glibc's vector libm (vlibm.h: its
 * logf is 2x vmath.h's); unary_map.h threads the loops. */
#include <math.h>

#include "unary/unary_map.h"
#include "unary/vlibm.h"

/* Per element: one transcendental forward (counted as one flop, the usual convention);
 * backward the arithmetic of the derivative (exp: dy*y; expm1: dy*(y+1); log: dy/x;
 * log1p: dy/(1+x); log2, log10: dy/(x ln b)). Backward reads dy and one of x, y. */
/*     name   forward           backward                     reference  flops bwd reads */
UM_MAP(exp,   VM_EXP(x),        dy * y,                      exp,       1, 1, UM_R_ONE, UM_PAR_MATH)
UM_MAP(expm1, VL(expm1, x),     dy * (y + 1),                expm1,     1, 2, UM_R_ONE, UM_PAR_MATH)
UM_MAP(log,   VL(log, x),       dy / x,                      log,       1, 1, UM_R_ONE, UM_PAR_MATH)
UM_MAP(log1p, VL(log1p, x),     dy / (1 + x),                log1p,     1, 2, UM_R_ONE, UM_PAR_MATH)
UM_MAP(log2,  VL(log2, x),      dy / (x * UM_C(M_LN2)),      log2,      1, 2, UM_R_ONE, UM_PAR_MATH)
UM_MAP(log10, VL(log10, x),     dy / (x * UM_C(M_LN10)),     log10,     1, 2, UM_R_ONE, UM_PAR_MATH)

#define POSITIVE "x > 0: generated in [0.1, 10)"
OPPERF_OP(exp) = {UM_UNARY(exp), .name = "exp", UM_X(-5, 5, NULL),
                  .summary = "elementwise exponential: y = exp(x)"};
OPPERF_OP(expm1) = {UM_UNARY(expm1), .name = "expm1", UM_X(-5, 5, NULL),
                    .summary = "exp(x) - 1, accurate near 0: y = expm1(x)"};
OPPERF_OP(log) = {UM_UNARY(log), .name = "log", UM_X(0.1, 10, POSITIVE),
                  .summary = "elementwise natural logarithm: y = log(x), x > 0"};
OPPERF_OP(log1p) = {UM_UNARY(log1p), .name = "log1p",
                    UM_X(-0.9, 10, "x > -1: generated in [-0.9, 10)"),
                    .summary = "log(1 + x), accurate near 0: y = log1p(x), x > -1"};
OPPERF_OP(log2) = {UM_UNARY(log2), .name = "log2", UM_X(0.1, 10, POSITIVE),
                   .summary = "base-2 logarithm: y = log2(x), x > 0"};
OPPERF_OP(log10) = {UM_UNARY(log10), .name = "log10", UM_X(0.1, 10, POSITIVE),
                    .summary = "base-10 logarithm: y = log10(x), x > 0"};
