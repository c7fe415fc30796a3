/* reduce.h: shared by the reduction family (ops/reduction/reduce.c) and the softmax-shaped
 * operators (ops/activation/softmax.c, ops/loss/softmax_cross_entropy.c): the (outer, n, inner)
 * view of a reduction, axis/keepdims output inference, and the per-dtype lane kernels of
 * reduce_lanes.h (sum, max, argmax and search over rows, short rows and columns; for the float
 * dtypes also exp-sums, dot products and the row log-sum-exp, with exp/log from vmath.h). */
#ifndef OPPERF_OPS_REDUCE_H
#define OPPERF_OPS_REDUCE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "opf_kernel.h"
#include "unary/vmath.h"

/* Independent accumulator lanes for contiguous reductions: 4 AVX-512 registers of float32, so
 * the add latency is hidden and every lane sums only 1/64 of a row. */
#define OPF_RED_LANES 64
/* Contiguous float sums fold their lanes into double totals every OPF_RED_BLK elements, and
 * column sums fold into double accumulators every OPF_RED_RB rows: a float32 partial never
 * sums more than ~64 terms, so the error stays near that of a float64 reference. */
#define OPF_RED_BLK 4096
#define OPF_RED_RB 64
/* Column block of outer-axis reductions: the accumulator row (<= 8 KiB of double) and the
 * float partial row stay in L1 while input rows stream past. */
#define OPF_RED_CB 1024
/* An inner extent below this is processed as "wide rows" of m = ceil(OPF_RED_WIDE / inner)
 * original rows (m * inner contiguous elements), so short rows still fill whole vectors; the m
 * partial results per column are folded at the end. */
#define OPF_RED_WIDE 256
/* argmax over a row works in chunks of this many elements (16 KiB of float32, in L1). */
#define OPF_RED_ACH 4096
/* Contiguous rows shorter than OPF_RED_SHORT are processed OPF_RED_SBLK elements (whole rows)
 * at a time, with per-row values expanded to per-element arrays so every pass is a plain
 * vector loop. Row lengths in OPF_RED_SHORT_LENGTHS get a compile-time specialisation (the
 * caller switches on the length), so the per-row loops are unrolled and vectorised across
 * rows: the catalogue's skewed (N, 10) and (N, 1) shapes and other small widths. Float32
 * rows of 2..16 under add and multiply folds skip all this where the CPU has AVX-512: reduce.c's
 * red_rows16_f32 folds 16 whole rows per step in registers. */
#define OPF_RED_SHORT 64
#define OPF_RED_SBLK 1024
#define OPF_RED_SHORT_LENGTHS(F) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(10) F(16)

#define OPF_RED_INLINE static inline __attribute__((always_inline))

/* Fold operations of the generic lane kernels (always compile-time constants, so every use
 * compiles to its own straight vector loop). Add/multiply folds combine mapped elements in
 * lanes of RL; extreme folds (max, min; any / all as the max / min of x != 0) keep RT lanes. */
enum {
  OPF_FOLD_ADD,    /* x */
  OPF_FOLD_NANADD, /* NaN counts as 0 */
  OPF_FOLD_ABSADD, /* |x| */
  OPF_FOLD_SQADD,  /* x^2 */
  OPF_FOLD_MUL,    /* x */
  OPF_FOLD_NANMUL, /* NaN counts as 1 */
  OPF_FOLD_MAX,
  OPF_FOLD_MIN,
  OPF_FOLD_ANY, /* max of (x != 0) */
  OPF_FOLD_ALL  /* min of (x != 0) */
};
static inline int opf_fold_mul(int op) { return op == OPF_FOLD_MUL || op == OPF_FOLD_NANMUL; }
static inline int opf_fold_id(int op) { return opf_fold_mul(op) ? 1 : 0; }
static inline int opf_fold_min(int op) { return op == OPF_FOLD_MIN || op == OPF_FOLD_ALL; }
/* Combine two values of an add/multiply fold; extreme folds: a strictly better than b (ties
 * keep b, the earlier one), and the better of the two. */
#define RED_COMB(op, a, b) (opf_fold_mul(op) ? (a) * (b) : (a) + (b))
#define RED_BETTER(op, a, b) (opf_fold_min(op) ? (a) < (b) : (a) > (b))
#define RED_PICK(op, a, b) (RED_BETTER(op, a, b) ? (a) : (b))

/* A reduction (or softmax) over one axis of a contiguous tensor, as x[outer][n][inner];
 * axis "all" is (1, numel, 1). */
typedef struct opf_rgeom {
  int64_t outer, n, inner;
} opf_rgeom;

static inline opf_rgeom opf_red_geom(const opf_tensor *x, int axis, int all) {
  opf_rgeom g = {1, 1, 1};
  if (all) {
    g.n = opf_numel(x);
    return g;
  }
  for (int d = 0; d < x->ndim; d++) {
    if (d < axis) g.outer *= x->shape[d];
    else if (d == axis) g.n = x->shape[d];
    else g.inner *= x->shape[d];
  }
  return g;
}

/* Wide-row factor for an inner extent: rows grouped per wide row (1 when inner is large). */
static inline int64_t opf_red_wide_m(int64_t inner) {
  return inner >= OPF_RED_WIDE ? 1 : (OPF_RED_WIDE + inner - 1) / inner;
}

/* Resolve the axis param `axis_p` (OPF_AXIS_ALL allowed when allow_all) of input 0 into
 * *axis / *all, with an error naming the shape when it is out of range. */
static inline int opf_red_axis(opf_case *c, double axis_p, int allow_all, int *axis, int *all) {
  const opf_tensor *x = &c->in[0];
  *all = axis_p == OPF_AXIS_ALL;
  *axis = 0;
  if (*all) {
    if (!allow_all) return opf_case_error(c, OPF_EINVAL, "axis 'all' is not supported here");
    return OPF_OK;
  }
  *axis = opf_axis(axis_p, x->ndim);
  if (*axis < 0) {
    char s[96];
    return opf_case_error(c, OPF_EINVAL, "axis %d is out of range for input '%s' of shape %s (%d dims)",
                          (int)axis_p, c->op->in[0].name, opf_shape_str(x, s, sizeof s), x->ndim);
  }
  return OPF_OK;
}

/* Set output 0 as input 0 reduced over axis (or all axes), keeping size-1 dims if keepdims. */
static inline void opf_red_set_out(opf_case *c, opf_dtype dt, int axis, int all, int keepdims) {
  const opf_tensor *x = &c->in[0];
  int64_t shape[OPF_MAX_DIMS];
  int nd = 0;
  for (int d = 0; d < x->ndim; d++) {
    if (all || d == axis) {
      if (keepdims) shape[nd++] = 1;
    } else {
      shape[nd++] = x->shape[d];
    }
  }
  opf_set_out(c, 0, dt, nd, shape);
}

/* Inputs of products (prod, nanprod, cumprod): floats in [0.99, 1.01) shifted by +1.67e-5 so
 * that E[log x] = 0 and products of a million elements stay normal; integers odd in
 * {-3, -1, 1, 3}, so products never collapse to 0 and wrap around instead. */
#define OPF_RED_NEAR_ONE_LO 0.9900167
#define OPF_RED_NEAR_ONE_HI 1.0100167
static inline void opf_red_fill_near_one(opf_case *c, int i) {
  opf_tensor *t = &c->in[i];
  if (opf_dtype_is_float(t->dtype)) {
    opf_fill_uniform(t, c->seed, (uint64_t)i, OPF_RED_NEAR_ONE_LO, OPF_RED_NEAR_ONE_HI);
    return;
  }
  opf_fill_index(t, c->seed, (uint64_t)i, 4);
  const int64_t n = opf_numel(t);
  for (int64_t k = 0; k < n; k++) {
    if (t->dtype == OPF_I32) ((int32_t *)t->data)[k] = 2 * ((int32_t *)t->data)[k] - 3;
    else ((int64_t *)t->data)[k] = 2 * ((int64_t *)t->data)[k] - 3;
  }
}

/* The first extreme (min != 0: minimum, else maximum) of a float32 row of n >= 64 elements
 * by AVX-512 (reduce.c): its value in *best and its index in *at. Returns 0, doing nothing,
 * without AVX-512, for rows of 2^31 elements or more and for rows that hold a NaN (the lane
 * kernel below decides those, as before). */
int opf_red_arg_f32_fast(int min, const float *x, int64_t n, float *best, int64_t *at);

/* ---- per-dtype lane kernels (reduce_lanes.h is a template included once per dtype) ----
 * RT element, RL lane type of sums (unsigned for integers: wrap-around is defined behaviour
 * and gives the exact sum modulo 2^bits), RA accumulator of sums,
 * RFLOAT whether the float-only kernels (exp, softmax) exist,
 * RF32 float32 (selects the exp polynomial). */
#define RT float
#define RL float
#define RA double
#define RFLOAT 1
#define RF32 1
#define RSUF f32
#include "reduction/reduce_lanes.h"

#define RT double
#define RL double
#define RA double
#define RFLOAT 1
#define RF32 0
#define RSUF f64
#include "reduction/reduce_lanes.h"

#define RT int32_t
#define RL uint32_t
#define RA uint64_t
#define RFLOAT 0
#define RF32 0
#define RSUF i32
#include "reduction/reduce_lanes.h"

#define RT int64_t
#define RL uint64_t
#define RA uint64_t
#define RFLOAT 0
#define RF32 0
#define RSUF i64
#include "reduction/reduce_lanes.h"

#endif
