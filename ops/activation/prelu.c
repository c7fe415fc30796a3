/* prelu.c: parametric ReLU, y = x for x > 0 and alpha[c] x otherwise, with a learnable slope
 * per channel (axis 1 of x, as PyTorch's PReLU) or one slope for every element; gradients
 * dx = dy (x > 0) + alpha dy (x <= 0) and dalpha[c] = sum over channel c of dy x (x <= 0).
 * Two layouts: rows of C channels (x (N, C), a slope per column: the slope gradient is a
 * column sum, act_common.h's channel view and blocked driver) and lines of one channel
 * (x (N, C, S...) with S > 1, or a single slope: per-line partial sums). Both are one pass. */
#include "activation/act_common.h"

enum { IN_X = 0, IN_A = 1 };
/* A single slope splits x into lines of this many elements, so its gradient sum still runs
 * on every thread (and the partition, hence the result, does not depend on their number). */
#define PRELU_LINE 4096
/* Lanes of a line's gradient sum (independent double accumulators, vectorised). */
#define PRELU_LANES 32

typedef struct prelu_geom {
  int64_t n, C, S; /* elements, slopes, elements per (row, channel) */
  int rows;        /* rows of C elements, one slope per column (S == 1, C > 1) */
  int64_t L, nl;   /* lines mode: line length and count; line l uses slope l % C */
} prelu_geom;

static prelu_geom prelu_geometry(const opf_case *c) {
  const opf_tensor *x = &c->in[IN_X];
  prelu_geom g = {.n = opf_numel(x), .C = opf_numel(&c->in[IN_A]), .S = 1};
  for (int d = 2; d < x->ndim; d++) g.S *= x->shape[d];
  g.rows = g.S == 1 && g.C > 1;
  if (g.C > 1) g.L = g.S > 0 ? g.S : 1;
  else g.L = g.n < PRELU_LINE ? (g.n > 0 ? g.n : 1) : PRELU_LINE;
  g.nl = (g.n + g.L - 1) / g.L;
  return g;
}

static int prelu_infer(opf_case *c) {
  opf_tensor *x = &c->in[IN_X], *a = &c->in[IN_A];
  char sx[96], sa[96];
  if (x->ndim < 0) return opf_case_error(c, OPF_EINVAL, "input 'x' needs a shape");
  const int64_t C = x->ndim >= 2 ? x->shape[1] : 1;
  if (a->ndim < 0) opf_tensor_set_shape(a, a->dtype, 1, &C);
  if (a->ndim != 1 || (a->shape[0] != 1 && a->shape[0] != C))
    return opf_case_error(c, OPF_EINVAL,
                          "alpha=%s must be (%lld), one slope per channel (axis 1 of x=%s), or (1)",
                          opf_shape_str(a, sa, sizeof sa), (long long)C,
                          opf_shape_str(x, sx, sizeof sx));
  opf_set_out(c, 0, c->dtype, x->ndim, x->shape);
  const prelu_geom g = prelu_geometry(c);
  c->ws_bytes = g.rows ? act_cview_ws(g.n, g.C) : (size_t)(g.nl + g.C) * sizeof(double);
  return OPF_OK;
}

/* ---- kernels ---- */
#define PRELU_KERNELS(T, S)                                                                   \
  /* `rows` rows (stride ld) of w columns */                                                  \
  OPF_VEC static void prelu_rows_fwd_##S(const T *restrict x, const T *restrict a,           \
                                         T *restrict y, int64_t rows, int64_t ld, int64_t w) { \
    for (int64_t r = 0; r < rows; r++)                                                        \
      for (int64_t j = 0; j < w; j++) {                                                       \
        const T v = x[r * ld + j];                                                            \
        y[r * ld + j] = v > 0 ? v : a[j] * v;                                                 \
      }                                                                                       \
  }                                                                                           \
  OPF_VEC static void prelu_line_fwd_##S(const T *restrict x, const T a, T *restrict y,      \
                                         int64_t n) {                                         \
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : a * x[i];                        \
  }                                                                                           \
  /* the same with acc[j] += dy x over x <= 0 */                                             \
  OPF_VEC static void prelu_rows_bwd_##S(const T *restrict x, const T *restrict dy,          \
                                         const T *restrict a, T *restrict dx,                 \
                                         double *restrict acc, int64_t rows, int64_t ld,      \
                                         int64_t w) {                                         \
    ACT_COLSUM_ROWS(T, rows, w, acc, const T v = x[r * ld + j], g = dy[r * ld + j];        \
                    dx[r * ld + j] = v > 0 ? g : a[j] * g;                                    \
                    part[j] += g * VM_SEL(v > 0, (T)0, v););                                  \
  }                                                                                           \
  /* a line's dx; returns its sum of dy x over x <= 0 (PRELU_LANES double lanes) */           \
  OPF_VEC static double prelu_line_bwd_##S(const T *restrict x, const T *restrict dy,        \
                                           const T a, T *restrict dx, int64_t n) {            \
    double lane[PRELU_LANES] = {0};                                                           \
    int64_t i = 0;                                                                            \
    for (; i + PRELU_LANES <= n; i += PRELU_LANES)                                            \
      for (int j = 0; j < PRELU_LANES; j++) {                                                 \
        const T v = x[i + j], g = dy[i + j];                                                  \
        dx[i + j] = v > 0 ? g : a * g;                                                        \
        lane[j] += (double)(g * VM_SEL(v > 0, (T)0, v));                                      \
      }                                                                                       \
    double s = 0;                                                                             \
    for (; i < n; i++) {                                                                      \
      const T v = x[i], g = dy[i];                                                            \
      dx[i] = v > 0 ? g : a * g;                                                              \
      s += (double)(g * VM_SEL(v > 0, (T)0, v));                                              \
    }                                                                                         \
    for (int j = 0; j < PRELU_LANES; j++) s += lane[j];                                       \
    return s;                                                                                 \
  }
PRELU_KERNELS(float, f32)
PRELU_KERNELS(double, f64)

typedef struct prelu_ctx {
  const opf_case *c;
  prelu_geom g;
  act_cview v; /* rows mode */
  int bwd;
} prelu_ctx;

static void prelu_ctx_init(prelu_ctx *p, const opf_case *c) {
  p->c = c;
  p->g = prelu_geometry(c);
  p->bwd = 0;
  if (p->g.rows) act_cview_init(&p->v, p->g.n, p->g.C, c->dtype, c->in[IN_A].data);
}

#define PRELU_PTR(t, T, off) ((T *)(t).data + (off))

/* rows mode: a block of the channel view, forward (acc NULL) or backward */
static void prelu_block(void *v, int64_t o, int64_t rows, int64_t w, int64_t c0,
                        double *restrict acc) {
  const prelu_ctx *p = v;
  const opf_case *c = p->c;
  const int64_t ld = p->v.P;
  if (c->dtype == OPF_F32) {
    const float *x = PRELU_PTR(c->in[IN_X], const float, o), *a = (const float *)p->v.a + c0;
    if (acc)
      prelu_rows_bwd_f32(x, PRELU_PTR(c->gout[0], const float, o), a,
                         PRELU_PTR(c->gin[IN_X], float, o), acc, rows, ld, w);
    else
      prelu_rows_fwd_f32(x, a, PRELU_PTR(c->out[0], float, o), rows, ld, w);
  } else {
    const double *x = PRELU_PTR(c->in[IN_X], const double, o), *a = (const double *)p->v.a + c0;
    if (acc)
      prelu_rows_bwd_f64(x, PRELU_PTR(c->gout[0], const double, o), a,
                         PRELU_PTR(c->gin[IN_X], double, o), acc, rows, ld, w);
    else
      prelu_rows_fwd_f64(x, a, PRELU_PTR(c->out[0], double, o), rows, ld, w);
  }
}

/* lines mode: lines [lo, hi), forward, or backward with each line's partial sum in ws */
static void prelu_lines(int64_t lo, int64_t hi, void *v) {
  const prelu_ctx *p = v;
  const opf_case *c = p->c;
  const prelu_geom *g = &p->g;
  double *part = c->ws;
  for (int64_t l = lo; l < hi; l++) {
    const int64_t o = l * g->L, len = g->n - o < g->L ? g->n - o : g->L, ch = l % g->C;
    if (c->dtype == OPF_F32) {
      const float *x = PRELU_PTR(c->in[IN_X], const float, o);
      const float a = PRELU_PTR(c->in[IN_A], const float, 0)[ch];
      if (p->bwd)
        part[l] = prelu_line_bwd_f32(x, PRELU_PTR(c->gout[0], const float, o), a,
                                     PRELU_PTR(c->gin[IN_X], float, o), len);
      else
        prelu_line_fwd_f32(x, a, PRELU_PTR(c->out[0], float, o), len);
    } else {
      const double *x = PRELU_PTR(c->in[IN_X], const double, o);
      const double a = PRELU_PTR(c->in[IN_A], const double, 0)[ch];
      if (p->bwd)
        part[l] = prelu_line_bwd_f64(x, PRELU_PTR(c->gout[0], const double, o), a,
                                     PRELU_PTR(c->gin[IN_X], double, o), len);
      else
        prelu_line_fwd_f64(x, a, PRELU_PTR(c->out[0], double, o), len);
    }
  }
}

static int prelu_forward(opf_case *c) {
  prelu_ctx p;
  prelu_ctx_init(&p, c);
  if (p.g.rows) act_cview_map(&p.v, prelu_block, &p);
  else opf_parallel_range(p.g.nl, OPF_PAR_MIN / p.g.L + 1, prelu_lines, &p);
  return OPF_OK;
}

/* Both gradients come from one pass; dalpha is optional (NULL: not stored). */
static int prelu_backward(opf_case *c) {
  if (!c->gin[IN_X].data) return OPF_OK;
  prelu_ctx p;
  prelu_ctx_init(&p, c);
  const prelu_geom *g = &p.g;
  double *part = c->ws;
  if (g->rows) {
    act_cview_colsum(&p.v, prelu_block, &p, part);
    act_store_sums(c->dtype, c->gin[IN_A].data, part, g->C);
    return OPF_OK;
  }
  p.bwd = 1;
  opf_parallel_range(g->nl, OPF_PAR_MIN / g->L + 1, prelu_lines, &p);
  for (int64_t ch = 0; ch < g->C; ch++) {
    double s = 0;
    for (int64_t l = ch; l < g->nl; l += g->C) s += part[l];
    part[g->nl + ch] = s;
  }
  act_store_sums(c->dtype, c->gin[IN_A].data, part + g->nl, g->C);
  return OPF_OK;
}

/* Reference: element i of x belongs to channel (i / S) % C (0 for a single slope). */
static int prelu_reference(opf_case *c) {
  const prelu_geom g = prelu_geometry(c);
  for (int64_t i = 0; i < g.n; i++) {
    const int64_t ch = g.C == 1 ? 0 : (i / g.S) % g.C;
    if (c->dtype == OPF_F32) {
      const float x = ((const float *)c->in[IN_X].data)[i];
      ((float *)c->out[0].data)[i] = x > 0 ? x : ((const float *)c->in[IN_A].data)[ch] * x;
    } else {
      const double x = ((const double *)c->in[IN_X].data)[i];
      ((double *)c->out[0].data)[i] = x > 0 ? x : ((const double *)c->in[IN_A].data)[ch] * x;
    }
  }
  return OPF_OK;
}

/* Forward: compare and multiply per element (2n); backward: select and multiply for dx, and
 * multiply and add for dalpha (4n). */
static double prelu_flops(const opf_case *c, opf_pass p) {
  const double n = (double)opf_numel(&c->in[IN_X]);
  return opf_pass_sum(p, 2 * n, 4 * n);
}

/* Forward reads x and alpha, writes y; backward reads x, dy and alpha, writes dx and dalpha. */
static double prelu_bytes(const opf_case *c, opf_pass p) {
  const double es = (double)opf_dtype_size(c->dtype), n = (double)opf_numel(&c->in[IN_X]);
  const double C = (double)opf_numel(&c->in[IN_A]);
  return opf_pass_sum(p, es * (2 * n + C), es * (3 * n + 2 * C));
}

OPPERF_OP(prelu) = {
    .abi = OPF_OP_ABI,
    .name = "prelu",
    .category = "nn.activation",
    .summary = "parametric ReLU: y = x for x > 0, alpha[c] x otherwise (c: axis 1, or one slope)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -4, .hi = 4,
            .help = "input (N, C, ...); C channels on axis 1"},
           {.name = "alpha", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = 0.05, .hi = 0.5,
            .help = "slopes (C), one per channel (derived), or (1) for all of x"}},
    .n_out = 1,
    .out = {"y"},
    .shapes = {{"standard", "x=1024x1024"},
               {"standard", "x=32x64x56x56"},
               {"skewed", "x=10000x10"},
               {"skewed", "x=10x10000"},
               {"skewed", "x=10000x1"},
               {"skewed", "x=100000x10"},
               {"skewed", "x=1024x1024 alpha=1"},
               {"small", "x=16x16"},
               {"small", "x=37x3"},
               {"small", "x=1x64"},
               {"small", "x=2x3x1"},
               {"small", "x=4x5x6"},
               {"small", "x=3x4x5 alpha=1"},
               {"small", "x=16x16 alpha=1"},
               {"small", "x=33"},
               {"test", "x=301x517"},
               {"test", "x=7x33x41x3"},
               {"test", "x=100003"},
               {"test", "x=301x517 alpha=1"},
               {"test", "x=3x2000x5"},
               {"large", "x=8192x8192"},
               {"large", "x=64x64x112x112"},
               {"huge", "x=46341x46341"}},
    .infer = prelu_infer,
    .forward = prelu_forward,
    .backward = prelu_backward,
    .reference = prelu_reference,
    .flops = prelu_flops,
    .bytes = prelu_bytes,
};
