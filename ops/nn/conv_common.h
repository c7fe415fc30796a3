/* conv_common.h: helpers shared by the NCHW nn operators (conv2d.c, pool2d.c, batch_norm.c):
 * window geometry (output sizes, the output range whose window tap lands inside the input),
 * shape validation with clear messages, the scalar accessors the references use, and the
 * lane sums of a set of vectors (global pooling in pool_global.c and resize.c). */
#ifndef OPPERF_NN_CONV_COMMON_H
#define OPPERF_NN_CONV_COMMON_H

#include <stdint.h>

#include "opf_kernel.h"

/* Geometry of a 2-D sliding window over an NCHW tensor. */
typedef struct nn_geom {
  int64_t N, C, H, W;    /* input */
  int64_t OH, OW;        /* output plane */
  int64_t KH, KW;        /* window */
  int64_t sh, sw;        /* stride */
  int64_t ph, pw;        /* zero / ignored padding on each side */
  int64_t dh, dw;        /* dilation */
} nn_geom;

/* Output length along one axis; <= 0 when the (dilated) window exceeds the padded input. */
static inline int64_t nn_out_len(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  int64_t span = d * (k - 1) + 1, padded = in + 2 * p;
  return padded < span ? 0 : (padded - span) / s + 1;
}

/* Output positions o in [*lo, *hi) for which the tap at offset off (= k * dilation) reads
 * input index o*s - p + off inside [0, in); *lo == *hi when there is none. Lets the kernels
 * split every output row into a zero/ignored head, a dense body and a tail without a
 * bounds test in the inner loop. */
static inline void nn_tap_range(int64_t in, int64_t out, int64_t s, int64_t p, int64_t off,
                                int64_t *lo, int64_t *hi) {
  int64_t a = p - off, b = in - 1 + p - off; /* need a <= o*s <= b */
  int64_t l = a <= 0 ? 0 : (a + s - 1) / s;
  int64_t h = b < 0 ? 0 : b / s + 1;
  if (h > out) h = out;
  if (l > h) l = h;
  *lo = l;
  *hi = h;
}

/* Checks an NCHW input and fills g->N..W; OPF_EINVAL naming the input otherwise. */
static inline int nn_check_nchw(opf_case *c, int i, const char *what, nn_geom *g) {
  const opf_tensor *x = &c->in[i];
  char s[96];
  if (x->ndim != 4)
    return opf_case_error(c, OPF_EINVAL, "%s input '%s' must be 4-D NCHW, got %s (%d-D)", what,
                          c->op->in[i].name, opf_shape_str(x, s, sizeof s), x->ndim);
  for (int k = 0; k < 4; k++)
    if (x->shape[k] <= 0)
      return opf_case_error(c, OPF_EINVAL, "%s input '%s' %s has an empty dimension", what,
                            c->op->in[i].name, opf_shape_str(x, s, sizeof s));
  g->N = x->shape[0], g->C = x->shape[1], g->H = x->shape[2], g->W = x->shape[3];
  return OPF_OK;
}

/* Fills g->OH/OW from the window fields, or OPF_EINVAL when the window does not fit. */
static inline int nn_check_window(opf_case *c, const char *what, nn_geom *g) {
  g->OH = nn_out_len(g->H, g->KH, g->sh, g->ph, g->dh);
  g->OW = nn_out_len(g->W, g->KW, g->sw, g->pw, g->dw);
  if (g->OH > 0 && g->OW > 0) return OPF_OK;
  return opf_case_error(c, OPF_EINVAL,
                        "%s: window %lldx%lld (dilation %lldx%lld) is larger than the padded "
                        "input %lldx%lld (input %lldx%lld, pad %lldx%lld)",
                        what, (long long)g->KH, (long long)g->KW, (long long)g->dh,
                        (long long)g->dw, (long long)(g->H + 2 * g->ph),
                        (long long)(g->W + 2 * g->pw), (long long)g->H, (long long)g->W,
                        (long long)g->ph, (long long)g->pw);
}

/* Element i of a float tensor's data as a double, and the converse: for the references,
 * which favour obviously correct over fast. */
static inline double nn_ld(const void *p, opf_dtype dt, int64_t i) {
  return dt == OPF_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}
static inline void nn_st(void *p, opf_dtype dt, int64_t i, double v) {
  if (dt == OPF_F32) ((float *)p)[i] = (float)v;
  else ((double *)p)[i] = v;
}

/* ---- lane sums of V vectors at once ----
 * m[0, V) are 64-byte GCC vectors of V lanes (16 floats or 8 doubles). On return m[0] holds
 * in lane p the sum of m[p]'s lanes, added in the order of a fold by halves (lane i plus lane
 * i + V/2, then the same on the lower half, down to one lane), so bit for bit what folding
 * each vector alone gives. A transpose-reduce: each step merges two vectors (one two-source
 * shuffle of each's lower and upper halves) into one holding twice the vectors at half the
 * lanes, so V vectors cost V - 1 merges instead of V log2 V rotations. m is overwritten. */
#define NN_LANESUMS(T, IT, S, V)                                                               \
  typedef T nn_vec_##S __attribute__((vector_size(64)));                                      \
  typedef IT nn_ivec_##S __attribute__((vector_size(64)));                                    \
  static inline __attribute__((always_inline)) void nn_lanesums_##S(nn_vec_##S *m) {          \
    const nn_ivec_##S lm = NN_LANE_IDX_##S;                                                   \
    for (int w = V / 2, cnt = V; w >= 1; w /= 2, cnt /= 2) {                                  \
      /* result lane i: lane i % w of the lower (lo) or upper (lo + w) half of vector group  \
       * i / w of the two sources concatenated (groups of 2w lanes, the first source's first) */ \
      const nn_ivec_##S lo = lm / w * 2 * w + lm % w;                                         \
      for (int q = 0; q < cnt / 2; q++)                                                       \
        m[q] = __builtin_shuffle(m[2 * q], m[2 * q + 1], lo) +                                \
               __builtin_shuffle(m[2 * q], m[2 * q + 1], lo + w);                             \
    }                                                                                         \
  }
#define NN_LANE_IDX_f32 {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
#define NN_LANE_IDX_f64 {0, 1, 2, 3, 4, 5, 6, 7}
NN_LANESUMS(float, int32_t, f32, 16)
NN_LANESUMS(double, int64_t, f64, 8)

#endif
