/* diag.c: the k-th diagonal of a matrix (2-D -> 1-D), or a matrix with a vector on its k-th
 * diagonal and zeros elsewhere (1-D -> 2-D), as numpy.diag. Both directions are built from
 * two moves, each the other's gradient: "take" gathers a diagonal with stride cols+1, "place"
 * writes zero rows with one element set, rows in parallel at memset speed. */
#include "shape/shape.h"

enum { P_K = 0 };

/* The diagonal k of an (R, C) matrix: length and first element (row r0, column c0). */
typedef struct {
  int64_t R, C, len, r0, c0;
} dg_geom;

static dg_geom dg_of(int64_t R, int64_t C, int64_t k) {
  dg_geom g = {R, C, 0, k < 0 ? -k : 0, k > 0 ? k : 0};
  int64_t a = R - g.r0, b = C - g.c0;
  g.len = a < b ? a : b;
  if (g.len < 0) g.len = 0;
  return g;
}

/* Geometry of this case's matrix: x's for 2-D input, y's for 1-D input. */
static dg_geom dg_case(const opf_case *c) {
  const opf_tensor *m = c->in[0].ndim == 2 ? &c->in[0] : &c->out[0];
  return dg_of(m->shape[0], m->shape[1], (int64_t)c->p[P_K]);
}

typedef struct {
  dg_geom g;
  const char *src;
  char *dst;
  size_t es;
} dg_ctx;

/* take: v[i] = m[(r0 + i) * C + c0 + i] for i in [lo, hi). */
static void dg_take(int64_t lo, int64_t hi, void *p) {
  const dg_ctx *x = p;
  const int64_t step = x->g.C + 1, at = x->g.r0 * x->g.C + x->g.c0;
  if (x->es == 4)
    for (int64_t i = lo; i < hi; i++) ((uint32_t *)x->dst)[i] = ((const uint32_t *)x->src)[at + i * step];
  else
    for (int64_t i = lo; i < hi; i++) ((uint64_t *)x->dst)[i] = ((const uint64_t *)x->src)[at + i * step];
}

/* place: rows [lo, hi) of m zeroed, with m[r0 + i][c0 + i] = v[i]. */
static void dg_place(int64_t lo, int64_t hi, void *p) {
  const dg_ctx *x = p;
  const int64_t C = x->g.C, es = (int64_t)x->es;
  memset(x->dst + lo * C * es, 0, (size_t)((hi - lo) * C * es));
  for (int64_t r = lo; r < hi; r++) {
    int64_t i = r - x->g.r0;
    if (i >= 0 && i < x->g.len) memcpy(x->dst + (r * C + x->g.c0 + i) * es, x->src + i * es, x->es);
  }
}

static void dg_run(const opf_case *c, int take, const void *src, void *dst) {
  dg_ctx x = {dg_case(c), src, dst, opf_dtype_size(c->dtype)};
  if (take) opf_parallel_range(x.g.len, OPF_PAR_MIN, dg_take, &x);
  else opf_parallel_range(x.g.R, x.g.R * x.g.C >= OPF_PAR_MIN ? 2 : x.g.R + 1, dg_place, &x);
}

static int diag_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  char s[96];
  int rc = shp_need(c, 0, "x=1024x1024 or x=1024");
  if (rc) return rc;
  const int64_t k = (int64_t)c->p[P_K];
  if (x->ndim == 2) {
    dg_geom g = dg_of(x->shape[0], x->shape[1], k);
    opf_set_out(c, 0, c->dtype, 1, &g.len);
  } else if (x->ndim == 1) {
    int64_t n = x->shape[0] + (k < 0 ? -k : k), shape[2] = {n, n};
    opf_set_out(c, 0, c->dtype, 2, shape);
  } else {
    return opf_case_error(c, OPF_EINVAL, "diag needs a 1-D vector or a 2-D matrix, got x=%s "
                          "(rank %d)", opf_shape_str(x, s, sizeof s), x->ndim);
  }
  return OPF_OK;
}

/* 2-D input: forward takes, backward places g into a zero dx; 1-D input: the reverse. */
static int diag_forward(opf_case *c) {
  dg_run(c, c->in[0].ndim == 2, c->in[0].data, c->out[0].data);
  return OPF_OK;
}
static int diag_backward(opf_case *c) {
  dg_run(c, c->in[0].ndim == 1, c->gout[0].data, c->gin[0].data);
  return OPF_OK;
}

/* By the definition: y[i] = x[i, i + k] (2-D), y[i, j] = j - i == k ? x[min(i, j)] : 0 (1-D). */
static int diag_reference(opf_case *c) {
  const opf_tensor *x = &c->in[0], *y = &c->out[0];
  const int64_t k = (int64_t)c->p[P_K];
  const size_t es = opf_dtype_size(c->dtype);
  char *out = y->data;
  const char *in = x->data;
  if (x->ndim == 2) {
    for (int64_t i = 0; i < y->shape[0]; i++) {
      int64_t r = k >= 0 ? i : i - k, col = k >= 0 ? i + k : i;
      memcpy(out + i * (int64_t)es, in + (r * x->shape[1] + col) * (int64_t)es, es);
    }
    return OPF_OK;
  }
  for (int64_t i = 0; i < y->shape[0]; i++)
    for (int64_t j = 0; j < y->shape[1]; j++) {
      char *at = out + (i * y->shape[1] + j) * (int64_t)es;
      if (j - i == k) memcpy(at, in + (i < j ? i : j) * (int64_t)es, es);
      else memset(at, 0, es);
    }
  return OPF_OK;
}

/* take reads len elements each on its own cache line once rows exceed a line (the stride is
 * a row plus one), so a line per element is the minimum traffic; it writes len elements.
 * place writes the whole matrix and reads len elements. Forward and backward swap roles. */
static double diag_bytes(const opf_case *c, opf_pass p) {
  const dg_geom g = dg_case(c);
  const double es = (double)opf_dtype_size(c->dtype), len = (double)g.len;
  const double stride = (double)(g.C + 1) * es;
  const double take = len * (stride < 64 ? stride : 64) + len * es;
  const double place = (double)g.R * (double)g.C * es + len * es;
  return c->in[0].ndim == 2 ? opf_pass_sum(p, take, place) : opf_pass_sum(p, place, take);
}

OPPERF_OP(diag) = {
    .abi = OPF_OP_ABI,
    .name = "diag",
    .category = "shape",
    .summary = "k-th diagonal of a matrix, or a vector placed on the k-th diagonal of a matrix",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "2-D matrix (its diagonal is taken) or 1-D vector (placed on a diagonal)"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 1,
    .params = {{.name = "k", .type = OPF_P_INT, .def = 0, .min = -1e9, .max = 1e9,
                .help = "diagonal offset: > 0 above the main diagonal, < 0 below"}},
    .shapes = {{"standard", "x=1024x1024"},
               {"standard", "x=1024"},
               {"standard", "x=1024x1024 k=1"},
               {"skewed", "x=10000x10"},
               {"skewed", "x=10x10000 k=-3"},
               {"skewed", "x=10 k=1000"},
               {"small", "x=16x16"},
               {"small", "x=16x16 k=3"},
               {"small", "x=16x16 k=-5"},
               {"small", "x=37x3"},
               {"small", "x=3x37 k=2"},
               {"small", "x=1x64 k=10"},
               {"small", "x=5"},
               {"small", "x=4 k=2"},
               {"small", "x=3 k=-1"},
               {"test", "x=301x517 k=7"},
               {"test", "x=517 k=-3"},
               {"test", "x=40001x3 k=-2"},
               {"large", "x=8192x8192"},
               {"large", "x=8192"},
               {"huge", "x=46341"}},
    .infer = diag_infer,
    .forward = diag_forward,
    .backward = diag_backward,
    .reference = diag_reference,
    .flops = lin_move_flops,
    .bytes = diag_bytes,
};
