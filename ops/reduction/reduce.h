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
 * rows: the catalogue's skewed (N, 10) and (N, 1) shapes and other small widths. */
#define OPF_RED_SHORT 64
#define OPF_RED_SBLK 1024
#define OPF_RED_SHORT_LENGTHS(F) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(10) F(16)

#define OPF_RED_INLINE static inline __attribute__((always_inline))

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
