/* sigmoid.c: logistic sigmoid y = 1 / (1 + exp(-x)) and its gradient dx = dy * y * (1 - y).
 * Evaluated as e = exp(-|x|), y = 1/(1+e) for x >= 0 and e/(1+e) otherwise, so exp never
 * overflows and small results keep full relative precision; vectorised with vmath.h's exp. */
#include <math.h>

#include "unary/unary_map.h"

/* T-generic, one exp per element. The numerator (e or 1) is picked by a bit-mask select: a
 * ?: here gets jump-threaded into a data-dependent branch that is neither vectorised nor
 * predictable (measured 25x slower). */
#define SIGMOID(x) sigmoid_of(x, VM_EXP(-VM_ABS(x)))
#define sigmoid_of(x, e) (VM_SEL((x) < 0, e, (__typeof__(e))1) / (1 + (e)))

static double sigmoid_ref(double x) {
  return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x));
}

UM_DEFINE(sigmoid, SIGMOID(x), dy * y * (1 - y), sigmoid_ref)

/* fwd: exp, add, divide (3 per element); bwd: 1 - y and two multiplies (3 per element). */
static double sigmoid_flops(const opf_case *c, opf_pass p) { return um_flops(c, p, 3, 3); }

OPPERF_OP(sigmoid) = {
    UM_COMMON,
    UM_HOOKS(sigmoid),
    .name = "sigmoid",
    .category = "nn.activation",
    .summary = "logistic sigmoid: y = 1 / (1 + exp(-x))",
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -6, .hi = 6}},
    .flops = sigmoid_flops,
};
