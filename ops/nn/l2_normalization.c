/* l2_normalization.c: y = x / sqrt(sum x^2 + eps) with MXNet's modes: instance (each sample
 * over all its elements), spatial (each (n, c) over the spatial dims) and channel (each
 * (n, spatial position) across the channels). Instance and spatial normalise contiguous rows;
 * channel mode runs over blocks of spatial positions with per-position sums, vectorised along
 * the positions and sweeping the channels (stride H*W) while the block stays in cache. */
#include "norm_common.h"

enum { P_MODE, P_EPS };
enum { MODE_INSTANCE, MODE_CHANNEL, MODE_SPATIAL };

#define L2_PAR_MIN (4 * OPF_PAR_MIN) /* light streaming passes: as norm.c */

/* The reduction groups: rows of L contiguous elements (R of them), or for channel mode with
 * spatial positions, N samples of C channels by S positions. */
typedef struct l2_plan {
  int cols;          /* channel mode with S > 1 */
  int64_t R, L;      /* rows */
  int64_t N, C, S;   /* channel mode */
  double eps;
} l2_plan;

static void l2_plan_of(const opf_case *c, l2_plan *pl) {
  const opf_tensor *x = &c->in[0];
  int mode = (int)c->p[P_MODE];
  memset(pl, 0, sizeof *pl);
  pl->eps = c->p[P_EPS];
  pl->N = x->shape[0], pl->C = x->shape[1];
  pl->S = opf_shape_numel(x->ndim - 2, x->shape + 2);
  if (mode == MODE_CHANNEL && pl->S > 1) pl->cols = 1;
  else if (mode == MODE_SPATIAL) pl->R = pl->N * pl->C, pl->L = pl->S;
  else pl->R = pl->N, pl->L = pl->C * pl->S; /* instance, or channel mode of (N, C) */
}

static int64_t l2_blk(const l2_plan *pl, size_t e);
static size_t l2_slot(int64_t blk, size_t e);

static int l2_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  int mode = (int)c->p[P_MODE];
  char s[96];
  int need = mode == MODE_SPATIAL ? 3 : 2;
  if (x->ndim < need)
    return opf_case_error(c, OPF_EINVAL, "l2_normalization: mode=%s needs x (N, C%s), got %s "
                          "(%d-D)", mode == MODE_SPATIAL ? "spatial" : mode == MODE_CHANNEL
                          ? "channel" : "instance", need == 3 ? ", spatial..." : ", ...",
                          opf_shape_str(x, s, sizeof s), x->ndim);
  for (int k = 0; k < x->ndim; k++)
    if (x->shape[k] <= 0)
      return opf_case_error(c, OPF_EINVAL, "l2_normalization: x %s has an empty dimension",
                            opf_shape_str(x, s, sizeof s));
  l2_plan pl;
  l2_plan_of(c, &pl);
  opf_set_out(c, 0, c->dtype, x->ndim, x->shape);
  if (pl.cols) { /* a slot of per-position sums and coefficients per thread */
    size_t e = opf_dtype_size(c->dtype);
    c->ws_bytes = (size_t)omp_get_max_threads() * l2_slot(l2_blk(&pl, e), e);
  }
  return OPF_OK;
}

/* ---- channel mode: per-position sums across channels, block by block (nc_plane_block):
 * sweep 1 adds each channel's run into per-position sums, sweep 2 writes the block while it
 * is still in cache. The sums run in the element type and are flushed into double every
 * L2_FLUSH channels (a float32 sum then adds at most 64 terms, relative error < 4e-6): with
 * double sums throughout (converting every element), whose 50 KB per plane of
 * (32, 64, 56, 56) did not fit L1 beside the data, the backward took 3.85 ms, not 3.0. ---- */
#define L2_FLUSH 64
#define L2_COL_KERNELS(T, S)                                                                   \
  /* xt[s] += x[s]^2 (and, with g, gt[s] += g[s] x[s]) */                                     \
  OPF_VEC static void col_dot_##S(const T *restrict g, const T *restrict x, T *restrict xt,   \
                                  T *restrict gt, int64_t n) {                                \
    if (g)                                                                                    \
      for (int64_t s = 0; s < n; s++) xt[s] += x[s] * x[s], gt[s] += g[s] * x[s];             \
    else                                                                                      \
      for (int64_t s = 0; s < n; s++) xt[s] += x[s] * x[s];                                   \
  }                                                                                           \
  /* Coefficients from the sums, inv = 1/sqrt(xx + eps): forward a = 0, b = inv; backward    \
   * a = inv, b = -inv^3 gx. The root and division are in the element type: with few         \
   * channels they are much of the work, and float32 ones do twice the lanes of double       \
   * ((32, 3, 10000, 10): forward 19.7M -> 15.8M cycles). */                                  \
  OPF_VEC static void col_coefs_##S(const double *restrict xx, const double *restrict gx,     \
                                    T *restrict a, T *restrict b, int64_t n, double eps) {    \
    if (gx)                                                                                   \
      for (int64_t s = 0; s < n; s++) {                                                       \
        T inv = (T)1 / VM_SQRT((T)(xx[s] + eps));                                             \
        a[s] = inv, b[s] = -inv * inv * inv * (T)gx[s];                                       \
      }                                                                                       \
    else                                                                                      \
      for (int64_t s = 0; s < n; s++) a[s] = 0, b[s] = (T)1 / VM_SQRT((T)(xx[s] + eps));      \
  }                                                                                           \
  /* out[s] = a[s] g[s] + b[s] x[s], or b[s] x[s] */                                          \
  OPF_VEC static void col_affine_##S(const T *restrict g, const T *restrict x,                \
                                     T *restrict out, const T *restrict a,                    \
                                     const T *restrict b, int64_t n) {                        \
    if (g)                                                                                    \
      for (int64_t s = 0; s < n; s++) out[s] = a[s] * g[s] + b[s] * x[s];                     \
    else                                                                                      \
      for (int64_t s = 0; s < n; s++) out[s] = b[s] * x[s];                                   \
  }                                                                                           \
  /* rows: *xx = sum x^2, *gx = sum g x in one sweep */                                       \
  OPF_VEC static void row_dots_##S(const T *restrict g, const T *restrict x, int64_t n,       \
                                   double *xx, double *gx) {                                  \
    NC_SUM2(T, n, L2_XX, L2_GX, *xx, *gx);                                                    \
  }
#define L2_XX(i) (x[i] * x[i])
#define L2_GX(i) (g[i] * x[i])
L2_COL_KERNELS(float, f32)
L2_COL_KERNELS(double, f64)

/* float32 only (float64 sums go straight into xx, gx): xx += xt, gx += gt (gt may be NULL;
 * first: xx = xt, gx = gt), and xt, gt restart from 0. Assigning first saves zeroing xx and
 * gx: with C = 3 that memset was a tenth of the time. */
OPF_VEC static void col_flush_f32(float *restrict xt, float *restrict gt, double *restrict xx,
                                  double *restrict gx, int64_t n, int first) {
  if (first)
    for (int64_t s = 0; s < n; s++) xx[s] = (double)xt[s], xt[s] = 0;
  else
    for (int64_t s = 0; s < n; s++) xx[s] += (double)xt[s], xt[s] = 0;
  if (gt && first)
    for (int64_t s = 0; s < n; s++) gx[s] = (double)gt[s], gt[s] = 0;
  else if (gt)
    for (int64_t s = 0; s < n; s++) gx[s] += (double)gt[s], gt[s] = 0;
}

/* Positions per block and bytes of a thread's slot: double sums xx, gx; element-type sums
 * xt, gt; coefficients a, b. */
static int64_t l2_blk(const l2_plan *pl, size_t e) { return nc_plane_block(pl->C, pl->S, e); }
static size_t l2_slot(int64_t blk, size_t e) {
  return ((size_t)blk * (2 * sizeof(double) + 4 * e) + 63) / 64 * 64; /* slots 64-byte aligned */
}

typedef struct l2_ctx {
  opf_case *c;
  l2_plan pl;
  int64_t blk, nb; /* channel mode: positions per block, blocks per sample */
  size_t slot;
  const void *g;   /* NULL in forward */
  void *out;
} l2_ctx;

/* Units u = n * nb + b: positions [b * blk, ...) of sample n. */
static void col_units(int64_t lo, int64_t hi, int tid, void *p) {
  l2_ctx *t = p;
  const l2_plan *pl = &t->pl;
  opf_dtype dt = t->c->dtype;
  size_t e = opf_dtype_size(dt);
  double *xx = (double *)((char *)t->c->ws + (size_t)tid * t->slot), *gx = xx + t->blk;
  char *xt = (char *)(gx + t->blk), *gt = xt + (size_t)t->blk * e;
  char *a = gt + (size_t)t->blk * e, *b = a + (size_t)t->blk * e;
  const int f32 = dt == OPF_F32;
  memset(xt, 0, 2 * (size_t)t->blk * e);
  for (int64_t u = lo; u < hi; u++) {
    int64_t n = u / t->nb, s0 = (u % t->nb) * t->blk;
    int64_t len = pl->S - s0 < t->blk ? pl->S - s0 : t->blk;
    if (!f32) { /* float64 sums go straight into xx and gx: nothing to flush */
      memset(xx, 0, sizeof(double) * (size_t)len);
      memset(gx, 0, sizeof(double) * (size_t)len);
    }
    for (int64_t ch = 0; ch < pl->C; ch++) { /* sweep 1: the sums */
      size_t off = (size_t)((n * pl->C + ch) * pl->S + s0) * e;
      const char *x = (const char *)t->c->in[0].data + off;
      const char *g = t->g ? (const char *)t->g + off : NULL;
      if (!f32) {
        col_dot_f64((const double *)g, (const double *)x, xx, t->g ? gx : NULL, len);
        continue;
      }
      float *gts = t->g ? (float *)gt : NULL;
      col_dot_f32((const float *)g, (const float *)x, (float *)xt, gts, len);
      if ((ch + 1) % L2_FLUSH && ch + 1 < pl->C) continue;
      col_flush_f32((float *)xt, gts, xx, gx, len, ch < L2_FLUSH);
    }
    if (f32) col_coefs_f32(xx, t->g ? gx : NULL, (float *)a, (float *)b, len, pl->eps);
    else col_coefs_f64(xx, t->g ? gx : NULL, (double *)a, (double *)b, len, pl->eps);
    for (int64_t ch = 0; ch < pl->C; ch++) { /* sweep 2: the output */
      size_t off = (size_t)((n * pl->C + ch) * pl->S + s0) * e;
      const char *x = (const char *)t->c->in[0].data + off;
      const char *g = t->g ? (const char *)t->g + off : NULL;
      char *o = (char *)t->out + off;
      if (f32) col_affine_f32((const float *)g, (const float *)x, (float *)o, (float *)a,
                              (float *)b, len);
      else col_affine_f64((const double *)g, (const double *)x, (double *)o, (double *)a,
                          (double *)b, len);
    }
  }
}

/* ---- instance / spatial: rows. The backward recomputes the norm (x is read anyway). ---- */
static void row_units(int64_t lo, int64_t hi, void *p) {
  l2_ctx *t = p;
  const l2_plan *pl = &t->pl;
  opf_dtype dt = t->c->dtype;
  size_t e = opf_dtype_size(dt);
  for (int64_t r = lo; r < hi; r++) {
    size_t off = (size_t)(r * pl->L) * e;
    const char *x = (const char *)t->c->in[0].data + off;
    char *o = (char *)t->out + off;
    if (!t->g) { /* y = x / norm */
      nc_affine(dt, NULL, x, o, pl->L, 0, 1 / sqrt(nc_sumsq(dt, x, pl->L) + pl->eps), 0, 0);
    } else { /* dx = g / norm - x sum(g x) / norm^3 */
      const char *g = (const char *)t->g + off;
      double xx, gx;
      if (dt == OPF_F32) row_dots_f32((const float *)g, (const float *)x, pl->L, &xx, &gx);
      else row_dots_f64((const double *)g, (const double *)x, pl->L, &xx, &gx);
      double iv = 1 / sqrt(xx + pl->eps);
      nc_affine(dt, g, x, o, pl->L, iv, -iv * iv * iv * gx, 0, 0);
    }
  }
}

static void l2_run(opf_case *c, const void *g, void *out) {
  l2_ctx t = {.c = c, .g = g, .out = out};
  l2_plan_of(c, &t.pl);
  const l2_plan *pl = &t.pl;
  if (pl->cols) {
    size_t e = opf_dtype_size(c->dtype);
    t.blk = l2_blk(pl, e), t.nb = (pl->S + t.blk - 1) / t.blk, t.slot = l2_slot(t.blk, e);
    int64_t per = pl->C * t.blk;
    nc_parallel_slots(pl->N * t.nb, (L2_PAR_MIN + per - 1) / per,
                      nc_slots_threads(c, 0, t.slot), col_units, &t);
  } else {
    opf_parallel_range(pl->R, (L2_PAR_MIN + pl->L - 1) / pl->L, row_units, &t);
  }
}

static int l2_forward(opf_case *c) {
  l2_run(c, NULL, c->out[0].data);
  return OPF_OK;
}

static int l2_backward(opf_case *c) {
  if (c->gin[0].data) l2_run(c, c->gout[0].data, c->gin[0].data);
  return OPF_OK;
}

/* Reference: each element's group (instance: n; channel: (n, s); spatial: (n, c)), the sum
 * of squares per group in one pass over x, then y = x / sqrt(sum + eps). */
static int64_t l2_group(int mode, int64_t n, int64_t ch, int64_t s, int64_t C, int64_t S) {
  return mode == MODE_INSTANCE ? n : mode == MODE_CHANNEL ? n * S + s : n * C + ch;
}

static int l2_reference(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  opf_dtype dt = c->dtype;
  int mode = (int)c->p[P_MODE];
  int64_t N = x->shape[0], C = x->shape[1], S = opf_shape_numel(x->ndim - 2, x->shape + 2);
  double *ss = opf_calloc((size_t)(N * C * S), sizeof(double)); /* enough for every mode */
  if (!ss) return opf_case_error(c, OPF_ENOMEM, "l2_normalization: reference sums");
  for (int pass = 0; pass < 2; pass++)
    for (int64_t n = 0; n < N; n++)
      for (int64_t ch = 0; ch < C; ch++)
        for (int64_t s = 0; s < S; s++) {
          int64_t i = (n * C + ch) * S + s, grp = l2_group(mode, n, ch, s, C, S);
          double v = nn_ld(x->data, dt, i);
          if (pass == 0) ss[grp] += v * v;
          else nn_st(c->out[0].data, dt, i, v / sqrt(ss[grp] + c->p[P_EPS]));
        }
  opf_free(ss);
  return OPF_OK;
}

/* Per element: forward 3 (square, add, scale by 1/norm), backward 5 (g x: mul, add; dx =
 * a g + b x: mul, mul, add); the per-group square roots are left out. */
static double l2_flops(const opf_case *c, opf_pass p) {
  double n = (double)opf_numel(&c->in[0]);
  return opf_pass_sum(p, 3 * n, 5 * n);
}

/* Forward reads x and writes y; backward reads g and x and writes dx. */
static double l2_bytes(const opf_case *c, opf_pass p) {
  double b = (double)opf_numel(&c->in[0]) * (double)opf_dtype_size(c->dtype);
  return opf_pass_sum(p, 2 * b, 3 * b);
}

OPPERF_OP(l2_normalization) = {
    .abi = OPF_OP_ABI,
    .name = "l2_normalization",
    .category = "nn.basic",
    .summary = "x / sqrt(sum x^2 + eps) per sample, per (n, c) or across channels (MXNet)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "input (N, C, spatial...) or (N, C)"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 2,
    .params = {{"mode", OPF_P_ENUM, MODE_INSTANCE, 0, 0, "instance|channel|spatial",
                "instance: over each sample; channel: across C at each position; spatial: "
                "over the positions of each (n, c)"},
               {"eps", OPF_P_FLOAT, 1e-10, 0, 1, NULL, "added to the sum of squares"}},
    .shapes = {{"standard", "x=32x64x56x56 mode=instance"},
               {"standard", "x=32x64x56x56 mode=channel"},
               {"standard", "x=32x64x56x56 mode=spatial"},
               {"skewed", "x=32x3x10000x10 mode=instance"},
               {"skewed", "x=32x3x10000x10 mode=channel"},
               {"skewed", "x=32x3x10000x10 mode=spatial"},
               {"skewed", "x=4096x64 mode=instance"},
               {"small", "x=2x3x4x5 mode=instance"},
               {"small", "x=2x3x4x5 mode=channel"},
               {"small", "x=2x3x4x5 mode=spatial"},
               {"small", "x=4x7 mode=instance"},
               {"small", "x=4x7 mode=channel"},
               {"small", "x=2x3x41 mode=spatial"},
               {"small", "x=1x5x70 mode=channel"},
               {"test", "x=5x7x61x67 mode=instance"},
               {"test", "x=5x7x61x67 mode=channel"},
               {"test", "x=5x7x61x67 mode=spatial"},
               {"test", "x=3x5x2003x3 mode=channel"},
               {"large", "x=32x128x112x112 mode=instance"},
               {"large", "x=32x128x112x112 mode=channel"},
               {"huge", "x=64x128x512x513 mode=instance"},
               {"huge", "x=64x128x512x513 mode=channel"}},
    .infer = l2_infer,
    .forward = l2_forward,
    .backward = l2_backward,
    .reference = l2_reference,
    .flops = l2_flops,
    .bytes = l2_bytes,
};
