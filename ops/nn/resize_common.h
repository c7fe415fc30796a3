/* resize_common.h: helpers shared by the resizing family (resize.c: adaptive_avg_pool2d,
 * upsample_nearest, upsample_bilinear), roi_pooling.c and depthwise_conv2d.c: NCHW / NHWC
 * image geometry with clear messages, element offsets for the references, workspace carving
 * and the "items over threads, one scratch slot per thread" runner. */
#ifndef OPPERF_NN_RESIZE_COMMON_H
#define OPPERF_NN_RESIZE_COMMON_H

#include <stdint.h>
#include <string.h>

#include "conv_common.h"

enum { RS_NCHW = 0, RS_NHWC = 1 };
#define RS_LAYOUTS "NCHW|NHWC"

/* A 4-D image batch in either layout: logical sizes plus the layout. */
typedef struct rs_image {
  int64_t N, C, H, W;
  int nhwc;
} rs_image;

/* Offset of element (n, c, h, w). */
static inline int64_t rs_at(const rs_image *m, int64_t n, int64_t c, int64_t h, int64_t w) {
  return m->nhwc ? ((n * m->H + h) * m->W + w) * m->C + c : ((n * m->C + c) * m->H + h) * m->W + w;
}

/* Shape of an image in its layout. */
static inline void rs_shape(const rs_image *m, int64_t *shape) {
  shape[0] = m->N;
  if (m->nhwc) shape[1] = m->H, shape[2] = m->W, shape[3] = m->C;
  else shape[1] = m->C, shape[2] = m->H, shape[3] = m->W;
}

/* Checks input i is a 4-D image with positive sizes in the given layout; fills m. */
static inline int rs_check_image(opf_case *c, int i, int nhwc, const char *what, rs_image *m) {
  const opf_tensor *x = &c->in[i];
  char s[96];
  const char *lay = nhwc ? "NHWC" : "NCHW";
  if (x->ndim != 4)
    return opf_case_error(c, OPF_EINVAL, "%s input '%s' must be 4-D %s, got %s (%d-D)", what,
                          c->op->in[i].name, lay, opf_shape_str(x, s, sizeof s), x->ndim);
  for (int k = 0; k < 4; k++)
    if (x->shape[k] <= 0)
      return opf_case_error(c, OPF_EINVAL, "%s input '%s' %s has an empty dimension", what,
                            c->op->in[i].name, opf_shape_str(x, s, sizeof s));
  m->nhwc = nhwc;
  m->N = x->shape[0];
  if (nhwc) m->H = x->shape[1], m->W = x->shape[2], m->C = x->shape[3];
  else m->C = x->shape[1], m->H = x->shape[2], m->W = x->shape[3];
  return OPF_OK;
}

/* Workspace carving: a cursor over c->ws (or over nothing, in infer, to size it). */
typedef struct rs_carve {
  char *base;
  size_t off;
} rs_carve;

static inline void *rs_take(rs_carve *k, size_t bytes) {
  void *p = k->base ? k->base + k->off : NULL;
  k->off += (bytes + 63) & ~(size_t)63;
  return p;
}

/* Runs fn(ctx, lo, hi, slot) over items [0, n) in contiguous equal chunks, one per thread
 * (slot = thread number, for per-thread scratch), with at most max_threads threads; on one
 * thread when the whole job is below OPF_PAR_MIN elements of work. */
typedef void (*rs_items_fn)(void *ctx, int64_t lo, int64_t hi, int slot);
static inline void rs_run_items(int64_t n, double work, int max_threads, rs_items_fn fn,
                                void *ctx) {
  int nt = omp_get_max_threads();
  if (nt > max_threads) nt = max_threads;
  if ((int64_t)nt > n) nt = (int)n;
  if (work < OPF_PAR_MIN || nt < 1) nt = 1;
  if (nt == 1) {
    if (n > 0) fn(ctx, 0, n, 0);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num(), m = omp_get_num_threads();
    int64_t lo = n * t / m, hi = n * (t + 1) / m;
    if (lo < hi) fn(ctx, lo, hi, t);
  }
}

#endif
