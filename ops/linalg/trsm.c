/* trsm.c: triangular solve trsm, out = alpha op(A)^-1 B (or alpha B op(A)^-1 with rightside),
 * and triangular product trmm, out = alpha op(A) B (or alpha B op(A)), A lower or upper
 * triangular, with their gradients, through OpenBLAS TRSM/TRMM. The two share everything but
 * the BLAS call and where the gradient of op(A) comes from; the triangle of A the operator
 * does not read gets a zero gradient. */
#include "linalg/linalg.h"

enum { T_TRANS = 0, T_RIGHT = 1, T_LOWER = 2, T_ALPHA = 3 };

typedef struct {
  int trans, right, lower;
  double alpha;
  int64_t M, N;  /* b and out */
  int64_t na, k; /* A is (na,na); the other dimension of b */
} tr_geom;

static tr_geom tr_of(const opf_case *c) {
  tr_geom g = {c->p[T_TRANS] != 0, c->p[T_RIGHT] != 0, c->p[T_LOWER] != 0, c->p[T_ALPHA],
               c->in[1].shape[0], c->in[1].shape[1], 0, 0};
  g.na = g.right ? g.N : g.M;
  g.k = g.right ? g.M : g.N;
  return g;
}

static int tr_infer(opf_case *c) {
  const opf_tensor *a = &c->in[0], *b = &c->in[1];
  char sa[96], sb[96];
  if (a->ndim < 0 || b->ndim < 0)
    return opf_case_error(c, OPF_EINVAL,
                          "needs a triangular a (M,M) and b (M,N), e.g. a=1024x1024 b=1024x1024");
  if (a->ndim != 2 || a->shape[0] != a->shape[1] || b->ndim != 2)
    return opf_case_error(c, OPF_EINVAL, "needs a square matrix a and a matrix b, got a=%s b=%s",
                          opf_shape_str(a, sa, sizeof sa), opf_shape_str(b, sb, sizeof sb));
  const int right = c->p[T_RIGHT] != 0;
  const int64_t side = b->shape[right ? 1 : 0];
  if (a->shape[0] != side)
    return opf_case_error(c, OPF_EINVAL, "a=%s must be %lldx%lld, the %s of b=%s (%s)",
                          opf_shape_str(a, sa, sizeof sa), (long long)side, (long long)side,
                          right ? "columns" : "rows", opf_shape_str(b, sb, sizeof sb),
                          right ? "rightside: b op(a)" : "op(a) b");
  int rc;
  if ((rc = lin_check_int(c, "rows of b", b->shape[0])) ||
      (rc = lin_check_int(c, "columns of b", b->shape[1])))
    return rc;
  opf_set_out(c, 0, c->dtype, 2, b->shape);
  return OPF_OK;
}

static int tr_forward(opf_case *c, int solve) {
  const tr_geom g = tr_of(c);
  memcpy(c->out[0].data, c->in[1].data, c->out[0].nbytes);
  lin_trxm(c->dtype, solve, g.right, g.lower, g.trans, g.M, g.N, g.alpha, c->in[0].data, g.na,
           c->out[0].data, g.N);
  return OPF_OK;
}

/* d op(A), as s P Q^T (left) or s P^T Q (right):
 *   trmm: left alpha G B^T, right alpha B^T G;
 *   trsm: X = out, op(A) X = alpha B gives d op(A) = -op(A)^-T G X^T = -(1/alpha) dB X^T
 *         (right: -(1/alpha) X^T dB).
 * dA is its triangle, of d op(A)^T when transposed (which swaps P and Q). */
static void tr_grad_a(const opf_case *c, const tr_geom *g, int solve, const void *dB, void *dA) {
  const void *P, *Q, *G = c->gout[0].data, *B = c->in[1].data, *X = c->out[0].data;
  double s;
  if (solve) P = g->right ? X : dB, Q = g->right ? dB : X, s = -1 / g->alpha;
  else P = g->right ? B : G, Q = g->right ? G : B, s = g->alpha;
  if (g->trans) {
    const void *t = P;
    P = Q, Q = t;
  }
  opf_lin_gemm_tri(c->dtype, g->lower, g->right, !g->right, g->na, g->k, s, P, g->N, Q, g->N, dA);
}

/* dB: the same operation with op(A) transposed, applied to G (the adjoint of B -> out). */
static int tr_backward(opf_case *c, int solve) {
  const tr_geom g = tr_of(c);
  /* dB is needed for dA too: scratch when b gets no gradient (never, in the harness) */
  void *dB = c->gin[1].data ? c->gin[1].data : opf_alloc(c->out[0].nbytes);
  if (!dB) return opf_case_error(c, OPF_ENOMEM, "no memory for the gradient of b");
  memcpy(dB, c->gout[0].data, c->out[0].nbytes);
  lin_trxm(c->dtype, solve, g.right, g.lower, !g.trans, g.M, g.N, g.alpha, c->in[0].data, g.na,
           dB, g.N);
  void *dA = c->gin[0].data;
  if (dA && solve && g.alpha == 0) /* X = 0: no dependence on A */
    memset(dA, 0, c->gin[0].nbytes);
  else if (dA)
    tr_grad_a(c, &g, solve, dB, dA);
  if (dB != c->gin[1].data) opf_free(dB);
  return OPF_OK;
}

static int trsm_forward(opf_case *c) { return tr_forward(c, 1); }
static int trmm_forward(opf_case *c) { return tr_forward(c, 0); }
static int trsm_backward(opf_case *c) { return tr_backward(c, 1); }
static int trmm_backward(opf_case *c) { return tr_backward(c, 0); }

/* op(A)[i][j] from the triangle the operator reads (the other one counts as zero). */
static double op_a(const opf_case *c, const tr_geom *g, int64_t i, int64_t j) {
  if (g->trans) {
    int64_t t = i;
    i = j, j = t;
  }
  if (g->lower ? j > i : j < i) return 0;
  return lin_get(c->dtype, c->in[0].data, i * g->na + j);
}

static int trmm_reference(opf_case *c) {
  const tr_geom g = tr_of(c);
  const opf_dtype dt = c->dtype;
  const void *B = c->in[1].data;
  for (int64_t i = 0; i < g.M; i++)
    for (int64_t j = 0; j < g.N; j++) {
      double s = 0;
      for (int64_t l = 0; l < g.na; l++)
        s += g.right ? lin_get(dt, B, i * g.N + l) * op_a(c, &g, l, j)
                     : op_a(c, &g, i, l) * lin_get(dt, B, l * g.N + j);
      lin_set(dt, c->out[0].data, i * g.N + j, g.alpha * s);
    }
  return OPF_OK;
}

/* Substitution, one right-hand side at a time: left, column j of X solves op(A) x = alpha b;
 * right, row i of X solves x op(A) = alpha b. op(A) is upper triangular when lower == trans:
 * then the left solve runs bottom-up and the right one left to right. */
static int trsm_reference(opf_case *c) {
  const tr_geom g = tr_of(c);
  const opf_dtype dt = c->dtype;
  const int upper = g.lower == g.trans, forward = g.right ? upper : !upper;
  double *x = opf_alloc((size_t)(g.na > 0 ? g.na : 1) * sizeof *x);
  if (!x)
    return opf_case_error(c, OPF_ENOMEM, "reference: no memory for %lld elements", (long long)g.na);
  for (int64_t r = 0; r < g.k; r++) { /* one right-hand side of na elements */
    for (int64_t t = 0; t < g.na; t++) {
      const int64_t p = forward ? t : g.na - 1 - t;
      double s = g.alpha * lin_get(dt, c->in[1].data, g.right ? r * g.N + p : p * g.N + r);
      for (int64_t q = forward ? 0 : p + 1; q < (forward ? p : g.na); q++)
        s -= (g.right ? op_a(c, &g, q, p) : op_a(c, &g, p, q)) * x[q];
      x[p] = s / op_a(c, &g, p, p);
    }
    for (int64_t p = 0; p < g.na; p++)
      lin_set(dt, c->out[0].data, g.right ? r * g.N + p : p * g.N + r, x[p]);
  }
  opf_free(x);
  return OPF_OK;
}

/* fwd: na^2 k (one multiply-add per nonzero of A per right-hand side); bwd: dB the same again,
 * and dA the triangle (diagonal included) of a product with inner dimension k, na(na+1)k. */
static double tr_flops(const opf_case *c, opf_pass p) {
  const tr_geom g = tr_of(c);
  const double na = (double)g.na, k = (double)g.k;
  return opf_pass_sum(p, na * na * k, na * na * k + na * (na + 1) * k);
}

/* fwd reads A's triangle and b, writes out; bwd reads A's triangle, G and b (trsm: out),
 * writes dB and the whole of dA. */
static double tr_bytes(const opf_case *c, opf_pass p) {
  const tr_geom g = tr_of(c);
  const double na = (double)g.na, bk = na * (double)g.k, tri = na * (na + 1) / 2;
  const double es = (double)opf_dtype_size(c->dtype);
  return opf_pass_sum(p, (tri + 2 * bk) * es, (tri + 3 * bk + na * na) * es);
}

#define TR_INPUTS                                                                              \
  {{.name = "a", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .fill = opf_lin_fill_tri,         \
    .help = "triangular matrix (M,M), (N,N) with rightside; only the triangle 'lower' selects " \
            "is read (diagonal in [1,2), off-diagonal small: well conditioned)"},              \
   {.name = "b", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,                \
    .help = "matrix (M,N)"}}
#define TR_PARAMS                                                                              \
  {{.name = "transpose", .type = OPF_P_BOOL, .def = 0, .min = 0, .max = 1,                     \
    .help = "use a^T instead of a"},                                                           \
   {.name = "rightside", .type = OPF_P_BOOL, .def = 0, .min = 0, .max = 1,                     \
    .help = "a multiplies b from the right"},                                                  \
   {.name = "lower", .type = OPF_P_BOOL, .def = 1, .min = 0, .max = 1,                         \
    .help = "a is lower triangular (false: upper)"},                                           \
   {.name = "alpha", .type = OPF_P_FLOAT, .def = 1, .min = -1e6, .max = 1e6,                   \
    .help = "scale of the result"}}
#define TR_SHAPES                                                                              \
  {{"standard", "a=1024x1024 b=1024x1024"},                                                    \
   {"skewed", "a=1024x1024 b=1024x1"},                                                         \
   {"skewed", "a=64x64 b=64x4096"},                                                            \
   {"skewed", "a=4096x4096 b=4096x64"},                                                        \
   {"skewed", "a=64x64 b=4096x64 rightside=true"},                                             \
   {"skewed", "a=1024x1024 b=1024x1024 transpose=true lower=false"},                           \
   {"small", "a=4x4 b=4x4"},                                                                   \
   {"small", "a=5x5 b=5x3 transpose=true"},                                                    \
   {"small", "a=3x3 b=6x3 rightside=true alpha=-0.5"},                                         \
   {"small", "a=4x4 b=2x4 rightside=true transpose=true lower=false"},                         \
   {"small", "a=6x6 b=6x1 lower=false alpha=2"},                                               \
   {"small", "a=5x5 b=1x5 rightside=true lower=false"},                                        \
   {"small", "a=1x1 b=1x5"},                                                                   \
   {"test", "a=301x301 b=301x129 alpha=1.5"},                                                  \
   {"test", "a=517x517 b=67x517 rightside=true transpose=true lower=false"},                   \
   {"large", "a=4096x4096 b=4096x4096"}}

OPPERF_OP(trsm) = {
    .abi = OPF_OP_ABI,
    .name = "trsm",
    .category = "linalg",
    .summary = "triangular solve alpha op(a)^-1 b (or alpha b op(a)^-1) through OpenBLAS TRSM",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = TR_INPUTS,
    .n_out = 1,
    .out = {"out"},
    .n_params = 4,
    .params = TR_PARAMS,
    .shapes = TR_SHAPES,
    .infer = tr_infer,
    .forward = trsm_forward,
    .backward = trsm_backward,
    .reference = trsm_reference,
    .flops = tr_flops,
    .bytes = tr_bytes,
};

OPPERF_OP(trmm) = {
    .abi = OPF_OP_ABI,
    .name = "trmm",
    .category = "linalg",
    .summary = "triangular product alpha op(a) b (or alpha b op(a)) through OpenBLAS TRMM",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = TR_INPUTS,
    .n_out = 1,
    .out = {"out"},
    .n_params = 4,
    .params = TR_PARAMS,
    .shapes = TR_SHAPES,
    .infer = tr_infer,
    .forward = trmm_forward,
    .backward = trmm_backward,
    .reference = trmm_reference,
    .flops = tr_flops,
    .bytes = tr_bytes,
};
