/* where.c: out = condition ? x : y with NumPy broadcasting of all three (condition bool), and
 * its gradient: dx = g where the condition holds, dy = g where it does not, each summed over the
 * dims its input was broadcast along. Both passes run the family's row walker: the select is
 * vectorised per broadcast pattern of the innermost dim; a gradient whose input is broadcast
 * accumulates into a zeroed dx, threaded only when threads' rows land on distinct dx rows. */
#include "indexing.h"

enum { IN_C = 0, IN_X = 1, IN_Y = 2 };

static int wh_infer(opf_case *c) {
  const opf_tensor *cd = &c->in[IN_C], *x = &c->in[IN_X], *y = &c->in[IN_Y];
  int nd1 = 0, nd = 0;
  int64_t s1[OPF_MAX_DIMS], shape[OPF_MAX_DIMS];
  if (cd->ndim < 0 || x->ndim < 0 || y->ndim < 0)
    return opf_case_error(c, OPF_EINVAL, "condition, x and y need shapes (e.g. condition=1024x1024 "
                          "x=1024x1024 y=1024x1024)");
  int rc = opf_broadcast_shape(c, cd, x, &nd1, s1);
  if (rc) return rc;
  opf_tensor cx;
  opf_tensor_set_shape(&cx, c->dtype, nd1, s1);
  rc = opf_broadcast_shape(c, &cx, y, &nd, shape);
  if (rc) return rc;
  opf_set_out(c, 0, c->dtype, nd, shape);
  return OPF_OK;
}

/* ---- forward ---- */
/* The select with x and y either contiguous (xv, yv) or one value along the row, on the bit
 * patterns with a mask: GCC turns `c ? x : y` into a branch in short rows and remainders, and a
 * random condition mispredicts half the time (rows of 10 ran 30x slower). */
#define WH_SEL(T, sfx)                                                                         \
  OPF_VEC static void wh_sel_##sfx(T *restrict o, const uint8_t *restrict c, const T *restrict x, \
                                   int xv, const T *restrict y, int yv, int64_t n) {           \
    const T a = x[0], b = y[0];                                                                \
    if (xv && yv) {                                                                            \
      for (int64_t i = 0; i < n; i++) {                                                        \
        const T m = (T)0 - (T)(c[i] != 0);                                                     \
        o[i] = (x[i] & m) | (y[i] & ~m);                                                       \
      }                                                                                        \
    } else if (xv) {                                                                           \
      for (int64_t i = 0; i < n; i++) {                                                        \
        const T m = (T)0 - (T)(c[i] != 0);                                                     \
        o[i] = (x[i] & m) | (b & ~m);                                                          \
      }                                                                                        \
    } else if (yv) {                                                                           \
      for (int64_t i = 0; i < n; i++) {                                                        \
        const T m = (T)0 - (T)(c[i] != 0);                                                     \
        o[i] = (a & m) | (y[i] & ~m);                                                          \
      }                                                                                        \
    } else {                                                                                   \
      for (int64_t i = 0; i < n; i++) {                                                        \
        const T m = (T)0 - (T)(c[i] != 0);                                                     \
        o[i] = (a & m) | (b & ~m);                                                             \
      }                                                                                        \
    }                                                                                          \
  }
WH_SEL(uint32_t, 4)
WH_SEL(uint64_t, 8)

static void wh_fwd_row(char *const *p, const int64_t *is, const int64_t *os, int64_t rows,
                       int64_t n, void *ctx) {
  const size_t es = *(const size_t *)ctx;
  for (int64_t r = 0; r < rows; r++) {
    char *o = p[0] + r * os[0];
    const char *c = p[1] + r * os[1], *x = p[2] + r * os[2], *y = p[3] + r * os[3];
    if (!is[1]) /* one condition for the whole row: a copy (or fill) of x or y */
      ix_copy_row(o, (int64_t)es, *c ? x : y, *c ? is[2] : is[3], n, es);
    else if (es == 4)
      wh_sel_4((uint32_t *)o, (const uint8_t *)c, (const uint32_t *)x, is[2] != 0,
               (const uint32_t *)y, is[3] != 0, n);
    else
      wh_sel_8((uint64_t *)o, (const uint8_t *)c, (const uint64_t *)x, is[2] != 0,
               (const uint64_t *)y, is[3] != 0, n);
  }
}

static int wh_forward(opf_case *c) {
  const opf_tensor *out = &c->out[0];
  size_t es = opf_dtype_size(c->dtype);
  int64_t st[4][OPF_MAX_DIMS];
  ix_bcast_strides(out, out->ndim, es, st[0]);
  ix_bcast_strides(&c->in[IN_C], out->ndim, 1, st[1]);
  ix_bcast_strides(&c->in[IN_X], out->ndim, es, st[2]);
  ix_bcast_strides(&c->in[IN_Y], out->ndim, es, st[3]);
  ix_walk w;
  ix_walk_init(&w, out->ndim, out->shape, 4, st);
  char *base[4] = {out->data, c->in[IN_C].data, c->in[IN_X].data, c->in[IN_Y].data};
  ix_walk_run(&w, base, wh_fwd_row, &es, 1);
  return OPF_OK;
}

/* ---- backward ---- */
/* v where on, else +0, on the bits: branch-free even where GCC would branch on `on ? v : 0`. */
static inline float wh_pick_f32(int on, float v) {
  uint32_t b;
  memcpy(&b, &v, sizeof b);
  b &= (uint32_t)0 - (uint32_t)on;
  memcpy(&v, &b, sizeof v);
  return v;
}
static inline double wh_pick_f64(int on, double v) {
  uint64_t b;
  memcpy(&b, &v, sizeof b);
  b &= (uint64_t)0 - (uint64_t)on;
  memcpy(&v, &b, sizeof v);
  return v;
}

/* d (contiguous, or one accumulator when !dv) gets g where (c != 0) == want; c contiguous or
 * one value along the row (cv); acc adds instead of writing. The selects are bit masks
 * (wh_pick): as a `?:` GCC branched on the random condition (12 ms instead of 0.2 for a
 * 1024x1024 sum), and a row summed into one accumulator runs in WH_LANES independent lanes so
 * it vectorises without reassociating the adds (the fixed lane order keeps results identical at
 * any thread count). */
#define WH_LANES 16
#define WH_GRAD(T, sfx)                                                                        \
  OPF_VEC static void wh_grad_##sfx(T *restrict d, int dv, const uint8_t *restrict c, int cv,  \
                                    const T *restrict g, int64_t n, int want, int acc) {       \
    const int on0 = (c[0] != 0) == want;                                                       \
    T lane[WH_LANES] = {0}, s = 0;                                                             \
    int64_t i = 0;                                                                             \
    if (!dv && !cv) { /* one condition for the row: a plain sum, or nothing */                 \
      for (; on0 && i + WH_LANES <= n; i += WH_LANES)                                          \
        for (int l = 0; l < WH_LANES; l++) lane[l] += g[i + l];                                \
      for (; on0 && i < n; i++) s += g[i];                                                     \
    } else if (!dv) { /* the row sums into one accumulator */                                  \
      for (; i + WH_LANES <= n; i += WH_LANES)                                                 \
        for (int l = 0; l < WH_LANES; l++) lane[l] += wh_pick_##sfx((c[i + l] != 0) == want, g[i + l]); \
      for (; i < n; i++) s += wh_pick_##sfx((c[i] != 0) == want, g[i]);                        \
    } else if (!cv && acc) {                                                                   \
      for (; on0 && i < n; i++) d[i] += g[i];                                                  \
    } else if (!cv) {                                                                          \
      for (; i < n; i++) d[i] = wh_pick_##sfx(on0, g[i]);                                      \
    } else if (acc) {                                                                          \
      for (; i < n; i++) d[i] += wh_pick_##sfx((c[i] != 0) == want, g[i]);                     \
    } else {                                                                                   \
      for (; i < n; i++) d[i] = wh_pick_##sfx((c[i] != 0) == want, g[i]);                      \
    }                                                                                          \
    if (!dv) {                                                                                 \
      for (int l = 0; l < WH_LANES; l++) s += lane[l];                                         \
      d[0] += s;                                                                               \
    }                                                                                          \
  }
WH_GRAD(float, f32)
WH_GRAD(double, f64)

typedef struct {
  opf_dtype dt;
  int want, acc;
} wh_grad_ctx;

static void wh_bwd_row(char *const *p, const int64_t *is, const int64_t *os, int64_t rows,
                       int64_t n, void *ctx) {
  const wh_grad_ctx *t = ctx;
  for (int64_t r = 0; r < rows; r++) {
    char *d = p[0] + r * os[0];
    const uint8_t *c = (const uint8_t *)(p[1] + r * os[1]);
    const char *g = p[2] + r * os[2];
    if (t->dt == OPF_F32)
      wh_grad_f32((float *)d, is[0] != 0, c, is[1] != 0, (const float *)g, n, t->want, t->acc);
    else
      wh_grad_f64((double *)d, is[0] != 0, c, is[1] != 0, (const double *)g, n, t->want, t->acc);
  }
}

/* The gradient of input i (x: want 1, y: want 0). */
static void wh_grad(opf_case *c, int i, int want) {
  opf_tensor *d = &c->gin[i];
  const opf_tensor *out = &c->out[0];
  if (!d->data) return;
  size_t es = opf_dtype_size(c->dtype);
  int64_t st[3][OPF_MAX_DIMS];
  ix_bcast_strides(d, out->ndim, es, st[0]);
  ix_bcast_strides(&c->in[IN_C], out->ndim, 1, st[1]);
  ix_bcast_strides(&c->gout[0], out->ndim, es, st[2]);
  ix_walk w;
  ix_walk_init(&w, out->ndim, out->shape, 3, st);
  wh_grad_ctx t = {c->dtype, want, opf_numel(d) != opf_numel(out)};
  /* Reducing: threads may split the walk only when their rows land on distinct d rows. */
  int par = 1;
  if (t.acc) {
    ix_bulk(d->data, NULL, d->nbytes);
    for (int k = 0; k < w.m - 1; k++) par &= w.st[0][k] != 0;
    if (w.pieces > 1) par &= w.st[0][w.m - 1] != 0;
  }
  char *base[3] = {d->data, c->in[IN_C].data, c->gout[0].data};
  ix_walk_run(&w, base, wh_bwd_row, &t, par);
}

static int wh_backward(opf_case *c) {
  wh_grad(c, IN_X, 1);
  wh_grad(c, IN_Y, 0);
  return OPF_OK;
}

/* Offset in t (contiguous, broadcast to out) of out's element k. */
static int64_t wh_off(const opf_tensor *t, const opf_tensor *out, int64_t k) {
  int64_t off = 0, s = 1;
  for (int d = out->ndim - 1; d >= 0; d--) {
    int64_t coord = k % out->shape[d];
    k /= out->shape[d];
    int j = t->ndim - out->ndim + d;
    if (j < 0) continue;
    if (t->shape[j] != 1) off += coord * s;
    s *= t->shape[j];
  }
  return off;
}

/* By the definition, element by element. */
static int wh_reference(opf_case *c) {
  const opf_tensor *out = &c->out[0];
  const size_t es = opf_dtype_size(c->dtype);
  for (int64_t k = 0; k < opf_numel(out); k++) {
    int cond = ((const uint8_t *)c->in[IN_C].data)[wh_off(&c->in[IN_C], out, k)] != 0;
    const opf_tensor *src = cond ? &c->in[IN_X] : &c->in[IN_Y];
    memcpy((char *)out->data + (size_t)k * es,
           (const char *)src->data + (size_t)wh_off(src, out, k) * es, es);
  }
  return OPF_OK;
}

/* One select per output element forward; one per element and gradient backward. Bytes: the
 * three inputs and the output; backward the condition, g, dx and dy. */
static double wh_flops(const opf_case *c, opf_pass p) {
  double n = (double)opf_numel(&c->out[0]);
  return opf_pass_sum(p, n, 2 * n);
}
static double wh_bytes(const opf_case *c, opf_pass p) {
  double cb = (double)opf_numel(&c->in[IN_C]), es = (double)opf_dtype_size(c->dtype);
  double xy = es * (double)(opf_numel(&c->in[IN_X]) + opf_numel(&c->in[IN_Y]));
  double o = es * (double)opf_numel(&c->out[0]);
  return opf_pass_sum(p, cb + xy + o, cb + o + xy);
}

OPPERF_OP(where) = {
    .abi = OPF_OP_ABI,
    .name = "where",
    .category = "indexing",
    .summary = "out = condition ? x : y, all three broadcast (NumPy rules)",
    .dtypes = OPF_DT_ALL,
    .n_in = 3,
    .in = {{.name = "condition", .dtype = OPF_BOOL, .help = "bool selector (a fair coin)"},
           {.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -100, .hi = 100,
            .help = "taken where condition is true"},
           {.name = "y", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -100, .hi = 100,
            .help = "taken where condition is false"}},
    .n_out = 1,
    .out = {"out"},
    .shapes = {{"standard", "condition=1024x1024 x=1024x1024 y=1024x1024"},
               {"skewed", "condition=10000x10 x=10000x10 y=10000x10"},
               {"skewed", "condition=10x10000 x=10x10000 y=10x10000"},
               {"skewed", "condition=100000x16 x=100000x16 y=100000x16"},
               {"skewed", "condition=1024x1024 x=1024x1024 y=()"},
               {"skewed", "condition=1024x1 x=1x1024 y=1024x1024"},
               {"small", "condition=16x16 x=16x16 y=16x16"},
               {"small", "condition=16x16 x=1x16 y=16x1"},
               {"small", "condition=1x64 x=() y=1x64"},
               {"small", "condition=37x3 x=37x3 y=37x3"},
               {"small", "condition=16x1 x=1x16 y=16x16"},
               {"small", "condition=3x4x5 x=4x1 y=3x1x5"},
               {"small", "condition=() x=5x3 y=3"},
               {"test", "condition=301x517 x=301x517 y=301x517"},
               {"test", "condition=517x1 x=517x301 y=1x301"},
               {"test", "condition=301x517 x=1x517 y=()"},
               {"large", "condition=8192x8192 x=8192x8192 y=8192x8192"}},
    .infer = wh_infer,
    .forward = wh_forward,
    .backward = wh_backward,
    .reference = wh_reference,
    .flops = wh_flops,
    .bytes = wh_bytes,
};
