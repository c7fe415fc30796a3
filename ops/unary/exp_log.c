/* exp_log.c: exp and log, the elementwise exponential and natural logarithm, forward and
 * backward (exp: dx = dy * y; log: dx = dy / x). The vectorised vm_exp/vm_log (vmath.h) stand
 * in for libm, which GCC cannot vectorise; unary_map.h threads the loops. */
#include <math.h>

#include "unary/unary_map.h"

UM_DEFINE(exp, VM_EXP(x), dy * y, exp)
UM_DEFINE(log, VM_LOG(x), dy / x, log)

/* One transcendental per element forward (counted as one flop, the usual convention), one
 * multiply (exp) or divide (log) per element backward. */
static double unary_flops(const opf_case *c, opf_pass p) { return um_flops(c, p, 1, 1); }

OPPERF_OP(exp) = {
    UM_COMMON,
    UM_HOOKS(exp),
    .name = "exp",
    .category = "unary",
    .summary = "elementwise exponential: y = exp(x)",
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -5, .hi = 5}},
    .flops = unary_flops,
};

OPPERF_OP(log) = {
    UM_COMMON,
    UM_HOOKS(log),
    .name = "log",
    .category = "unary",
    .summary = "elementwise natural logarithm: y = log(x), x > 0",
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = 0.1, .hi = 10,
            .help = "positive: generated in [0.1, 10)"}},
    .flops = unary_flops,
};
