/* pool_common.h: what the pooling family (pool.c: max/avg/sum pooling 1-D..3-D; pool_global.c:
 * global max/avg pooling) shares: the operator's kind from its name, the N-d geometry in
 * either layout (1-D and 2-D embed into 3-D with unit leading axes), validation with clear
 * messages, the naive reference, the flops/bytes models, the max-pool gradient scatter, the
 * vector types and the "items over threads, one scratch slot per thread" runner. */
#ifndef OPPERF_NN_POOL_COMMON_H
#define OPPERF_NN_POOL_COMMON_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conv_common.h"

#define POOL_INLINE static inline __attribute__((always_inline))

enum { PK_MAX, PK_AVG, PK_SUM };
/* Param indices: window pools (count_include_pad only for avg); global pools have layout only. */
enum { P_KERNEL, P_STRIDE, P_PAD, P_LAYOUT, P_COUNT_PAD };
enum { PG_LAYOUT };

/* Geometry of a pooling case. Spatial axes are always (D, H, W): a 1-D or 2-D case has unit
 * leading axes with kernel 1, stride 1, pad 0, so one code path serves every rank. */
typedef struct pool_geom {
  int nd, cl, kind, global, count_pad; /* spatial rank, channels-last, PK_*, global, avg flag */
  int64_t N, C;
  int64_t in[3], out[3], k[3], s[3], p[3];
  int64_t S, OS; /* spatial elements of an input / output plane */
} pool_geom;

/* "max_pool2d", "global_avg_pool3d", ...: kind, global flag and rank from the name. */
static inline void pool_kind(const opf_op *op, pool_geom *g) {
  const char *n = op->name;
  g->global = !strncmp(n, "global_", 7);
  if (g->global) n += 7;
  g->kind = n[0] == 'm' ? PK_MAX : n[0] == 'a' ? PK_AVG : PK_SUM;
  size_t l = strlen(n);
  g->nd = l >= 2 ? n[l - 2] - '0' : 2;
  if (g->nd < 1 || g->nd > 3) g->nd = 2;
}

static inline const char *pool_layout_name(int nd, int cl) {
  static const char *names[2][3] = {{"NCW", "NCHW", "NCDHW"}, {"NWC", "NHWC", "NDHWC"}};
  return names[cl != 0][nd - 1];
}

static inline int pool_layout_param(const opf_case *c, const pool_geom *g) {
  return c->p[g->global ? PG_LAYOUT : P_LAYOUT] != 0;
}

/* Value of a per-axis list param for spatial axis j of nd: one value for all, or one each. */
static inline int64_t pool_list_at(const opf_case *c, int i, int j) {
  const opf_list *l = &c->list[i];
  return l->n == 1 ? l->v[0] : l->v[j];
}

/* Resolve the geometry of a case whose shapes and params infer has accepted. */
static inline void pool_resolve(const opf_case *c, pool_geom *g) {
  memset(g, 0, sizeof *g);
  pool_kind(c->op, g);
  g->cl = pool_layout_param(c, g);
  g->count_pad = g->kind == PK_AVG && !g->global && c->p[P_COUNT_PAD] != 0;
  const opf_tensor *x = &c->in[0];
  g->N = x->shape[0];
  g->C = g->cl ? x->shape[g->nd + 1] : x->shape[1];
  g->S = g->OS = 1;
  for (int a = 0; a < 3; a++) {
    int j = a - (3 - g->nd); /* spatial axis of the tensor, < 0 for the unit axes */
    int64_t in = 1, k = 1, s = 1, p = 0;
    if (j >= 0) {
      in = x->shape[(g->cl ? 1 : 2) + j];
      if (g->global) {
        k = in;
      } else {
        k = pool_list_at(c, P_KERNEL, j);
        s = pool_list_at(c, P_STRIDE, j);
        p = pool_list_at(c, P_PAD, j);
        if (s == 0) s = k;
      }
    }
    g->in[a] = in, g->k[a] = k, g->s[a] = s, g->p[a] = p;
    g->out[a] = nn_out_len(in, k, s, p, 1);
    g->S *= in;
    g->OS *= g->out[a];
  }
}

/* "AxBxC" of the spatial values v[3 - nd .. 2]. */
static inline const char *pool_dims_str(const pool_geom *g, const int64_t *v, int64_t add,
                                        char *buf, size_t n) {
  size_t off = 0;
  buf[0] = '\0';
  for (int a = 3 - g->nd; a < 3 && off < n; a++)
    off += (size_t)snprintf(buf + off, n - off, "%s%lld", a > 3 - g->nd ? "x" : "",
                            (long long)(v[a] + add * g->p[a]));
  return buf;
}

/* infer's checks: x's rank and sizes in the chosen layout, the list params' lengths, pad at
 * most half the kernel, the window inside the padded input, int32 argmax indices; then the
 * output (N, C, out...) in the same layout. */
static inline int pool_check(opf_case *c, pool_geom *g) {
  const opf_tensor *x = &c->in[0];
  char s[96], b1[64], b2[64], b3[64], b4[64];
  pool_kind(c->op, g);
  int cl = pool_layout_param(c, g), nd = g->nd;
  const char *lay = pool_layout_name(nd, cl);
  if (x->ndim != nd + 2)
    return opf_case_error(c, OPF_EINVAL, "input 'x' must be %d-D %s, got %s (%d-D)",
                          nd + 2, lay, opf_shape_str(x, s, sizeof s), x->ndim);
  for (int k = 0; k < x->ndim; k++)
    if (x->shape[k] <= 0)
      return opf_case_error(c, OPF_EINVAL, "input 'x' %s has an empty dimension",
                            opf_shape_str(x, s, sizeof s));
  if (!g->global) {
    static const char *lists[3] = {"kernel", "stride", "pad"};
    for (int i = P_KERNEL; i <= P_PAD; i++)
      if (c->list[i].n != 1 && c->list[i].n != nd)
        return opf_case_error(c, OPF_EINVAL,
                              "%s has %d values; give 1 (every axis) or %d (one per "
                              "spatial axis)", lists[i], c->list[i].n, nd);
  }
  pool_resolve(c, g);
  static const char axis[3] = {'D', 'H', 'W'};
  for (int a = 3 - nd; a < 3; a++)
    if (g->p[a] > g->k[a] / 2) {
      if (nd == 1)
        return opf_case_error(c, OPF_EINVAL, "pad %lld must be at most half the kernel %lld",
                              (long long)g->p[a], (long long)g->k[a]);
      return opf_case_error(c, OPF_EINVAL,
                            "pad %lld must be at most half the kernel %lld (axis %c)",
                            (long long)g->p[a], (long long)g->k[a], axis[a]);
    }
  for (int a = 3 - nd; a < 3; a++)
    if (g->out[a] <= 0)
      return opf_case_error(c, OPF_EINVAL,
                            "window %s is larger than the padded input %s (input %s, pad %s)",
                            pool_dims_str(g, g->k, 0, b1, sizeof b1),
                            pool_dims_str(g, g->in, 2, b2, sizeof b2),
                            pool_dims_str(g, g->in, 0, b3, sizeof b3),
                            pool_dims_str(g, g->p, 0, b4, sizeof b4));
  /* max pooling keeps an int32 argmax: the index of a plane (NC..) or an image (N..C) */
  int64_t unit = g->cl ? g->S * g->C : g->S;
  if (g->kind == PK_MAX && unit > INT32_MAX)
    return opf_case_error(c, OPF_EINVAL, "%s of x %s exceed 2^31 elements (int32 argmax)",
                          g->cl ? "images" : "planes", opf_shape_str(x, s, sizeof s));
  int64_t shape[5];
  shape[0] = g->N;
  shape[cl ? nd + 1 : 1] = g->C;
  for (int j = 0; j < nd; j++) shape[(cl ? 1 : 2) + j] = g->out[3 - nd + j];
  opf_set_out(c, 0, c->dtype, nd + 2, shape);
  return OPF_OK;
}

/* Element offset of (n, c, d, h, w) in a tensor of spatial dims sp in the case's layout. */
static inline int64_t pool_at(const pool_geom *g, const int64_t *sp, int64_t n, int64_t ch,
                              int64_t d, int64_t h, int64_t w) {
  int64_t s = (d * sp[1] + h) * sp[2] + w, S = sp[0] * sp[1] * sp[2];
  return g->cl ? (n * S + s) * g->C + ch : (n * g->C + ch) * S + s;
}

/* Reference: each output is the max / sum / mean of its window's real elements (average with
 * count_include_pad divides by the full window volume instead); a global pool's window is
 * the whole input. */
static inline int pool_reference(opf_case *c) {
  pool_geom g;
  pool_resolve(c, &g);
  opf_dtype dt = c->dtype;
  for (int64_t n = 0; n < g.N; n++)
    for (int64_t ch = 0; ch < g.C; ch++)
      for (int64_t od = 0; od < g.out[0]; od++)
        for (int64_t oh = 0; oh < g.out[1]; oh++)
          for (int64_t ow = 0; ow < g.out[2]; ow++) {
            double acc = g.kind == PK_MAX ? -INFINITY : 0;
            int64_t cnt = 0;
            for (int64_t kd = 0; kd < g.k[0]; kd++)
              for (int64_t kh = 0; kh < g.k[1]; kh++)
                for (int64_t kw = 0; kw < g.k[2]; kw++) {
                  int64_t id = od * g.s[0] - g.p[0] + kd, ih = oh * g.s[1] - g.p[1] + kh,
                          iw = ow * g.s[2] - g.p[2] + kw;
                  if (id < 0 || id >= g.in[0] || ih < 0 || ih >= g.in[1] || iw < 0 ||
                      iw >= g.in[2])
                    continue;
                  double v = nn_ld(c->in[0].data, dt, pool_at(&g, g.in, n, ch, id, ih, iw));
                  acc = g.kind == PK_MAX ? (v > acc ? v : acc) : acc + v;
                  cnt++;
                }
            if (g.kind == PK_AVG) acc /= (double)(g.count_pad ? g.k[0] * g.k[1] * g.k[2] : cnt);
            nn_st(c->out[0].data, dt, pool_at(&g, g.out, n, ch, od, oh, ow), acc);
          }
  return OPF_OK;
}

/* Window pools: one compare (max) or add per window tap forward, plus one scale per output
 * for avg; backward max is one add per output (the scatter to the argmax), avg the same as
 * its forward, sum one add per tap. Global pools: the window is the input, and the backward
 * of avg is one scaled copy per input element. */
static inline double pool_flops(const opf_case *c, opf_pass p) {
  pool_geom g;
  pool_resolve(c, &g);
  double outs = (double)(g.N * g.C * g.OS), taps = outs * (double)(g.k[0] * g.k[1] * g.k[2]);
  double fwd = g.kind == PK_AVG ? taps + outs : taps;
  double bwd = g.kind == PK_MAX ? outs : g.global ? taps : fwd;
  return opf_pass_sum(p, fwd, bwd);
}

/* fwd: x read, y written; bwd: g read, dx written. Max pooling also moves its int32 argmax
 * (written forward, read backward) instead of re-reading x. */
static inline double pool_bytes(const opf_case *c, opf_pass p) {
  double e = (double)opf_dtype_size(c->dtype);
  double xin = (double)opf_numel(&c->in[0]), outs = (double)opf_numel(&c->out[0]);
  pool_geom g;
  pool_kind(c->op, &g);
  double idx = g.kind == PK_MAX ? 4 * outs : 0;
  double one = (xin + outs) * e + idx;
  return opf_pass_sum(p, one, one);
}

/* ---- vectors ----
 * A chunk is one 64-byte vector (16 floats or 8 doubles), written with GCC vector extensions
 * so every ISA clone gets whole-register code. vi_S holds a chunk's int32 argmax, vm_S the
 * comparison masks; MASK_IDX_S / IDX_MASK_S convert masks between the two widths. */
typedef float vf_f32 __attribute__((vector_size(64)));
typedef int32_t vm_f32 __attribute__((vector_size(64)));
typedef int32_t vi_f32 __attribute__((vector_size(64)));
typedef double vf_f64 __attribute__((vector_size(64)));
typedef int64_t vm_f64 __attribute__((vector_size(64)));
typedef int32_t vi_f64 __attribute__((vector_size(32)));
#define LANES_f32 16
#define LANES_f64 8
#define LANE_IDX_f32 {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}
#define LANE_IDX_f64 {0, 1, 2, 3, 4, 5, 6, 7}
#define MASK_IDX_f32(m) (m)
#define MASK_IDX_f64(m) __builtin_convertvector(m, vi_f64)
#define IDX_MASK_f32(m) (m)
#define IDX_MASK_f64(m) __builtin_convertvector(m, vm_f64)

/* Max accumulation of one tap: the strictly greater value wins, so the first maximum in scan
 * order keeps the argmax; with tie, an equal value with a smaller index wins too (scans whose
 * order is not the index order: transposed planes). */
#define POOL_ACC(T, S)                                                                         \
  POOL_INLINE void pool_acc_##S(vf_##S *m, vi_##S *a, vf_##S v, vi_##S idx, int tie) {         \
    vm_##S take = v > *m;                                                                     \
    if (tie) /* idx < *a as the sign of the difference (indices are in [0, 2^31)): GCC      \
              * scalarises the AND of a float and an int comparison after inlining */         \
      take |= (v == *m) & IDX_MASK_##S((idx - *a) >> 31);                                     \
    vi_##S ti = MASK_IDX_##S(take);                                                           \
    *m = (vf_##S)(((vm_##S)v & take) | ((vm_##S)*m & ~take));                                 \
    *a = (idx & ti) | (*a & ~ti);                                                             \
  }                                                                                           \
  /* The running max alone (no argmax): v where v > *m, as the argmax path's strict rule (a   \
   * NaN never enters, the first of equal zeros stays); one vmaxps where the ISA has it. */  \
  POOL_INLINE vf_##S pool_vmax_##S(vf_##S m, vf_##S v) {                                       \
    vm_##S take = v > m;                                                                      \
    return (vf_##S)(((vm_##S)v & take) | ((vm_##S)m & ~take));                               \
  }                                                                                           \
  POOL_INLINE void pool_acc1_##S(T *m, int64_t *a, T v, int64_t idx, int tie) {                \
    int take = v > *m || (tie && v == *m && idx < *a); /* branch-free: random data */        \
    *a = take ? idx : *a;                                                                     \
    *m = take ? v : *m;                                                                       \
  }                                                                                           \
  /* One window tap over a channels-last run of C channels: m, a are the running max and    \
   * argmax (index base + c); a loop the compiler vectorises with masked blends. */          \
  POOL_INLINE void pool_tap_max_##S(const T *restrict xv, T *restrict m, int32_t *restrict a,  \
                                    int64_t C, int32_t base) {                                \
    for (int64_t c = 0; c < C; c++) {                                                         \
      T v = xv[c];                                                                            \
      int take = v > m[c];                                                                    \
      a[c] = take ? base + (int32_t)c : a[c];                                                 \
      m[c] = take ? v : m[c];                                                                 \
    }                                                                                         \
  }
POOL_ACC(float, f32)
POOL_ACC(double, f64)

/* Max backward of units [u0, u1) (a unit: a plane, or an image for channels-last): each
 * output gradient goes to its window's argmax, an index within the unit; the rest is 0. */
#define POOL_SCATTER(T, S)                                                                     \
  static void pool_scatter_##S(const T *restrict gy, T *restrict dx, const int32_t *restrict am, \
                               int64_t in, int64_t out, int64_t u0, int64_t u1) {             \
    for (int64_t u = u0; u < u1; u++) {                                                       \
      T *restrict dp = dx + u * in;                                                           \
      const T *restrict gp = gy + u * out;                                                    \
      const int32_t *restrict ap = am + u * out;                                              \
      memset(dp, 0, (size_t)in * sizeof(T));                                                  \
      for (int64_t o = 0; o < out; o++) dp[ap[o]] += gp[o];                                   \
    }                                                                                         \
  }
POOL_SCATTER(float, f32)
POOL_SCATTER(double, f64)

static inline void pool_scatter(opf_dtype dt, const void *gy, void *dx, const int32_t *am,
                                int64_t in, int64_t out, int64_t u0, int64_t u1) {
  if (dt == OPF_F32) pool_scatter_f32(gy, dx, am, in, out, u0, u1);
  else pool_scatter_f64(gy, dx, am, in, out, u0, u1);
}

static inline size_t pool_align(size_t b) { return (b + 63) & ~(size_t)63; }

/* Runs fn(ctx, lo, hi, slot) over items [0, n) in contiguous equal chunks, one per thread
 * (slot = thread number, for per-thread scratch), on at most slots threads; one thread when
 * the job moves fewer than 2 * OPF_PAR_MIN elements. */
typedef void (*pool_items_fn)(void *ctx, int64_t lo, int64_t hi, int slot);
static inline void pool_run_items(int64_t n, int64_t elems, int64_t slots, pool_items_fn fn,
                                  void *ctx) {
  int64_t nt = omp_get_max_threads();
  if (nt > slots) nt = slots;
  if (nt > n) nt = n;
  if (elems < 2 * OPF_PAR_MIN) nt = 1;
  if (nt <= 1) {
    if (n > 0) fn(ctx, 0, n, 0);
    return;
  }
#pragma omp parallel num_threads((int)nt)
  {
    int k = omp_get_thread_num(), m = omp_get_num_threads();
    int64_t lo = n * k / m, hi = n * (k + 1) / m;
    if (lo < hi) fn(ctx, lo, hi, k);
  }
}

/* Parameters shared by the descriptors. */
#define POOL_LAYOUT_PARAM(CHOICES)                                                             \
  {"layout", OPF_P_ENUM, 0, 0, 0, CHOICES, "channels first (default) or channels last"}

#endif
