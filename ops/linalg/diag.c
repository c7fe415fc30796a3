/* diag.c: extractdiag (the k-th diagonal of a matrix as a vector) and makediag (a square
 * matrix holding a vector on its k-th diagonal, zeros elsewhere), adjoints of each other: each
 * one's backward is the other's forward. Pure data movement; the matrix side is written in
 * threaded contiguous row blocks (the zeros are the traffic), the vector side is a strided
 * gather of L elements. */
#include "linalg/linalg.h"

/* Diagonal k of an (R,C) matrix: element t at (t + r0, t + c0), t < len. */
typedef struct {
  int64_t R, C, r0, c0, len;
} dg_geom;

static dg_geom dg_of(int64_t R, int64_t C, int64_t k) {
  dg_geom g = {R, C, k < 0 ? -k : 0, k > 0 ? k : 0, 0};
  const int64_t a = R - g.r0, b = C - g.c0;
  g.len = a < b ? a : b;
  if (g.len < 0) g.len = 0;
  return g;
}

/* v (len) <- the diagonal of m. */
static void dg_gather(opf_dtype dt, const dg_geom *g, const void *m, void *v) {
  const int64_t step = g->C + 1, at = g->r0 * g->C + g->c0;
  if (dt == OPF_F32)
    for (int64_t t = 0; t < g->len; t++) ((float *)v)[t] = ((const float *)m)[at + t * step];
  else
    for (int64_t t = 0; t < g->len; t++) ((double *)v)[t] = ((const double *)m)[at + t * step];
}

typedef struct {
  opf_dtype dt;
  dg_geom g;
  const void *v;
  void *m;
} dg_ctx;

/* Rows [lo, hi) of m: zeros (one memset of the whole block, so glibc streams large ones past
 * the cache), then the diagonal elements that fall in them. */
static void dg_scatter_rows(int64_t lo, int64_t hi, void *p) {
  const dg_ctx *x = p;
  const dg_geom *g = &x->g;
  const size_t es = opf_dtype_size(x->dt);
  memset((char *)x->m + (size_t)(lo * g->C) * es, 0, (size_t)((hi - lo) * g->C) * es);
  int64_t t0 = lo - g->r0, t1 = hi - g->r0;
  t0 = t0 < 0 ? 0 : t0, t1 = t1 > g->len ? g->len : t1;
  for (int64_t t = t0; t < t1; t++)
    lin_set(x->dt, x->m, (t + g->r0) * g->C + t + g->c0, lin_get(x->dt, x->v, t));
}

/* m (R,C) <- zeros with v on the diagonal. */
static void dg_scatter(opf_dtype dt, const dg_geom *g, const void *v, void *m) {
  dg_ctx x = {dt, *g, v, m};
  opf_parallel_range(g->R, g->C > 0 ? OPF_PAR_MIN / g->C + 1 : g->R + 1, dg_scatter_rows, &x);
}

/* Reference of both: element by element over the whole matrix. */
static void dg_reference(opf_dtype dt, const dg_geom *g, const void *src, void *dst, int to_matrix) {
  for (int64_t i = 0; i < g->R; i++)
    for (int64_t j = 0; j < g->C; j++) {
      const int64_t t = i - g->r0;
      const int on = t >= 0 && t < g->len && j == t + g->c0;
      if (to_matrix) lin_set(dt, dst, i * g->C + j, on ? lin_get(dt, src, t) : 0);
      else if (on) lin_set(dt, dst, t, lin_get(dt, src, i * g->C + j));
    }
}

#define DG_K                                                                                   \
  {{.name = "k", .type = OPF_P_INT, .def = 0, .min = -(1 << 30), .max = 1 << 30,              \
    .help = "diagonal offset: 0 main, > 0 above, < 0 below"}}

/* ---- extractdiag ---- */

static dg_geom ex_geom(const opf_case *c) {
  return dg_of(c->in[0].shape[0], c->in[0].shape[1], (int64_t)c->p[0]);
}

static int ex_infer(opf_case *c) {
  const opf_tensor *a = &c->in[0];
  char s[96];
  if (a->ndim != 2)
    return opf_case_error(c, OPF_EINVAL, "needs a matrix a (M,N), got a=%s",
                          a->ndim < 0 ? "none" : opf_shape_str(a, s, sizeof s));
  const dg_geom g = ex_geom(c);
  if (g.len == 0)
    return opf_case_error(c, OPF_EINVAL, "k=%lld leaves no diagonal in a=%s", (long long)c->p[0],
                          opf_shape_str(a, s, sizeof s));
  opf_set_out(c, 0, c->dtype, 1, &g.len);
  return OPF_OK;
}

static int ex_forward(opf_case *c) {
  const dg_geom g = ex_geom(c);
  dg_gather(c->dtype, &g, c->in[0].data, c->out[0].data);
  return OPF_OK;
}

static int ex_backward(opf_case *c) {
  const dg_geom g = ex_geom(c);
  if (c->gin[0].data) dg_scatter(c->dtype, &g, c->gout[0].data, c->gin[0].data);
  return OPF_OK;
}

static int ex_reference(opf_case *c) {
  const dg_geom g = ex_geom(c);
  dg_reference(c->dtype, &g, c->in[0].data, c->out[0].data, 0);
  return OPF_OK;
}

/* fwd reads and writes the L diagonal elements; bwd reads g (L) and writes all of dA. */
static double ex_bytes(const opf_case *c, opf_pass p) {
  const dg_geom g = ex_geom(c);
  const double es = (double)opf_dtype_size(c->dtype), L = (double)g.len;
  return opf_pass_sum(p, 2 * L * es, (L + (double)g.R * (double)g.C) * es);
}

OPPERF_OP(extractdiag) = {
    .abi = OPF_OP_ABI,
    .name = "extractdiag",
    .category = "linalg",
    .summary = "the k-th diagonal of a matrix as a vector",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {{.name = "a", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "matrix (M,N)"}},
    .n_out = 1,
    .out = {"d"},
    .n_params = 1,
    .params = DG_K,
    .shapes = {{"standard", "a=1024x1024"},
               {"skewed", "a=10000x10"},
               {"skewed", "a=10x10000"},
               {"skewed", "a=1024x1024 k=5"},
               {"skewed", "a=1024x1024 k=-100"},
               {"small", "a=4x4"},
               {"small", "a=4x4 k=1"},
               {"small", "a=3x5 k=-1"},
               {"small", "a=5x3 k=2"},
               {"small", "a=1x1"},
               {"test", "a=301x517 k=-7"},
               {"large", "a=8192x8192"},
               {"huge", "a=46341x46341"}},
    .infer = ex_infer,
    .forward = ex_forward,
    .backward = ex_backward,
    .reference = ex_reference,
    .flops = lin_move_flops,
    .bytes = ex_bytes,
};

/* ---- makediag ---- */

static dg_geom mk_geom(const opf_case *c) {
  const int64_t k = (int64_t)c->p[0], n = c->in[0].shape[0] + (k < 0 ? -k : k);
  return dg_of(n, n, k);
}

static int mk_infer(opf_case *c) {
  const opf_tensor *v = &c->in[0];
  char s[96];
  if (v->ndim != 1)
    return opf_case_error(c, OPF_EINVAL, "needs a vector v (L,), got v=%s",
                          v->ndim < 0 ? "none" : opf_shape_str(v, s, sizeof s));
  const dg_geom g = mk_geom(c);
  int64_t shape[2] = {g.R, g.C};
  opf_set_out(c, 0, c->dtype, 2, shape);
  return OPF_OK;
}

static int mk_forward(opf_case *c) {
  const dg_geom g = mk_geom(c);
  dg_scatter(c->dtype, &g, c->in[0].data, c->out[0].data);
  return OPF_OK;
}

static int mk_backward(opf_case *c) {
  const dg_geom g = mk_geom(c);
  if (c->gin[0].data) dg_gather(c->dtype, &g, c->gout[0].data, c->gin[0].data);
  return OPF_OK;
}

static int mk_reference(opf_case *c) {
  const dg_geom g = mk_geom(c);
  dg_reference(c->dtype, &g, c->in[0].data, c->out[0].data, 1);
  return OPF_OK;
}

/* fwd reads v (L) and writes the whole matrix; bwd reads and writes L elements. */
static double mk_bytes(const opf_case *c, opf_pass p) {
  const dg_geom g = mk_geom(c);
  const double es = (double)opf_dtype_size(c->dtype), L = (double)g.len;
  return opf_pass_sum(p, (L + (double)g.R * (double)g.C) * es, 2 * L * es);
}

OPPERF_OP(makediag) = {
    .abi = OPF_OP_ABI,
    .name = "makediag",
    .category = "linalg",
    .summary = "square matrix with a vector on its k-th diagonal, zeros elsewhere",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {{.name = "v", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "vector (L,): the output is (L+|k|, L+|k|)"}},
    .n_out = 1,
    .out = {"a"},
    .n_params = 1,
    .params = DG_K,
    .shapes = {{"standard", "v=1024"},
               {"skewed", "v=1024 k=7"},
               {"skewed", "v=1024 k=-7"},
               {"skewed", "v=10"},
               {"skewed", "v=10000"},
               {"small", "v=4"},
               {"small", "v=3 k=1"},
               {"small", "v=2 k=-2"},
               {"small", "v=1"},
               {"test", "v=301 k=3"},
               {"large", "v=8192"},
               {"huge", "v=46341"}},
    .infer = mk_infer,
    .forward = mk_forward,
    .backward = mk_backward,
    .reference = mk_reference,
    .flops = lin_move_flops,
    .bytes = mk_bytes,
};
