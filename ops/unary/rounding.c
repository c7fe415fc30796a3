/* rounding.c: rounding to integers (forward only): round (half away from zero, as C round),
 * rint (half to even), fix and trunc (toward zero), floor, ceil. Memory-bound; the kernels
 * are vmath.h's rint-based forms, which GCC vectorises (vrndscaleps/pd). */
#include <math.h>

#include "unary/unary_map.h"
#include "unary/vmath512.h"

/* One rounding per element (counted as one flop). */
/*         name   forward               reference */
UM_MAP_FWD(round, VM_FP(round, x),      round, 1, UM_PAR_CHEAP)
/* rint, trunc, floor, ceil: float32 by vmath512.h's vroundscaleps loop where the CPU has
 * AVX-512, else the generic loop (the same results: rounding is exact). */
#define ROUND_MAP(name, MODE)                                                                 \
  UM_FWD_LOOP(name##_vec, float, f32, VM_FP(name, x))                                         \
  UM_FWD_LOOP(name, double, f64, VM_FP(name, x))                                              \
  static void name##_fwd_f32(const float *restrict x, float *restrict y, int64_t n) {        \
    if (VM512_OK()) vm512_round_f32(x, y, n, MODE);                                           \
    else name##_vec_fwd_f32(x, y, n);                                                         \
  }                                                                                           \
  UM_HOOK_FNS(name, name, NULL, UM_PAR_CHEAP, NULL, NULL)                                     \
  UM_MODELS(name, 1, 0, UM_R_NONE)
ROUND_MAP(rint, VM512_RINT)
ROUND_MAP(trunc, VM512_TRUNC)
ROUND_MAP(floor, VM512_FLOOR)
ROUND_MAP(ceil, VM512_CEIL)

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
