/* rounding.c: rounding to integers (forward only): round (half away from zero, as C round),
 * rint (half to even), fix and trunc (toward zero), floor, ceil. Memory-bound; the kernels
 * are vmath.h's rint-based forms, which GCC vectorises (vrndscaleps/pd). */
#include <math.h>

#include "unary/unary_map.h"

/* One rounding per element (counted as one flop). */
/*         name   forward               reference */
UM_MAP_FWD(round, VM_FP(round, x),      round, 1, UM_PAR_CHEAP)
UM_MAP_FWD(rint,  VM_FP(rint, x),       rint,  1, UM_PAR_CHEAP)
UM_MAP_FWD(trunc, VM_FP(trunc, x),      trunc, 1, UM_PAR_CHEAP)
UM_MAP_FWD(floor, VM_FP(floor, x),      floor, 1, UM_PAR_CHEAP)
UM_MAP_FWD(ceil,  VM_FP(ceil, x),       ceil,  1, UM_PAR_CHEAP)

/* Half of the elements snapped to the quarter grid, so exact ties (where round and rint
 * differ), integers and signed zeros are exercised, not only generic values. */
static int fill_quarter(opf_case *c, int i, opf_rng *r) {
  (void)r;
  opf_tensor *t = &c->in[i];
  opf_fill_uniform(t, c->seed, (uint64_t)i, c->op->in[i].lo, c->op->in[i].hi);
  int64_t n = opf_numel(t);
  if (t->dtype == OPF_F32) {
    float *v = t->data;
#pragma omp parallel for if (n > OPF_PAR_MIN)
    for (int64_t k = 0; k < n; k += 2) v[k] = rintf(4 * v[k]) / 4;
  } else {
    double *v = t->data;
#pragma omp parallel for if (n > OPF_PAR_MIN)
    for (int64_t k = 0; k < n; k += 2) v[k] = rint(4 * v[k]) / 4;
  }
  return OPF_OK;
}

#define ROUNDING(id)                                                                        \
  UM_DESC(id, "rounding", OPF_DT_FLOAT),                                                    \
      .in = {{.name = "x", .dtype = OPF_DT_CASE, .lo = -10, .hi = 10, .fill = fill_quarter,    \
              .help = "[-10, 10), every other element on the quarter grid (ties)"}}
OPPERF_OP(round) = {ROUNDING(round), .name = "round",
                    .summary = "round to nearest, halves away from zero (C round)"};
OPPERF_OP(rint) = {ROUNDING(rint), .name = "rint",
                   .summary = "round to nearest, halves to even (C rint, NumPy rint/around)"};
OPPERF_OP(fix) = {ROUNDING(trunc), .name = "fix",
                  .summary = "round toward zero (NumPy fix; the same kernel as trunc)"};
OPPERF_OP(trunc) = {ROUNDING(trunc), .name = "trunc", .summary = "round toward zero"};
OPPERF_OP(floor) = {ROUNDING(floor), .name = "floor", .summary = "round toward -infinity"};
OPPERF_OP(ceil) = {ROUNDING(ceil), .name = "ceil", .summary = "round toward +infinity"};
