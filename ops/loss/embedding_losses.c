/* embedding_losses.c: losses on pairs and triplets of embedding rows (N, D), reduced over the
 * rows by mean, sum or none: triplet_loss max(d(a, p) - d(a, n) + margin, 0) with the PyTorch
 * p-norm distance ||x - y + eps||_p (optional swap), and cosine_embedding_loss (1 - cos for
 * label +1, max(0, cos - margin) for -1). One vectorised pass per row forward (all the row's
 * sums at once); the forward keeps the per-row distances / dot products in the workspace,
 * so the backward is one pass writing every gradient. Threaded over rows. */
#include "loss/loss_common.h"

/* ================= triplet_loss ================= */
enum { TR_A, TR_P, TR_N };
enum { TR_RED, TR_MARGIN, TR_PNORM, TR_EPS, TR_SWAP };
enum { PK_1, PK_2, PK_G }; /* p = 1, p = 2, any other p >= 1 */

/* Per row, in the workspace: the two distances the loss uses and whether swap replaced
 * d(a, n) by d(p, n); then the rows' losses (float64, reduced in row order). */
typedef struct tr_row {
  double d1, d2, swapped;
} tr_row;
static double *tr_losses(const opf_case *c) {
  return (double *)((char *)c->ws + ls_align((size_t)c->in[0].shape[0] * sizeof(tr_row)));
}

static int tr_pk(double p) { return p == 1 ? PK_1 : p == 2 ? PK_2 : PK_G; }

/* |v|^p summed for the norm, and its derivative's shape sign(v) |v|^(p - 1); for general p
 * through exp(p log |v|) (log 0 = -inf gives exactly 0). */
#define TR_POW(v, pk, pw) ((pk) == PK_1 ? LS_ABS(v) : (pk) == PK_2 ? (v) * (v) : LS_EXP((pw)*LS_LOG(LS_ABS(v))))
#define TR_DPOW(v, pk, pw)                                                                    \
  ((pk) == PK_1 ? LS_SEL((v) > 0, (__typeof__(v))1, (__typeof__(v))0) -                        \
                      LS_SEL((v) < 0, (__typeof__(v))1, (__typeof__(v))0)                      \
   : (pk) == PK_2 ? (v)                                                                       \
                  : LS_SEL((v) < 0, (__typeof__(v))-1, (__typeof__(v))1) *                     \
                        LS_EXP(((pw)-1) * LS_LOG(LS_ABS(v))))

/* Rows shorter than this are summed by plain scalar loops, a chunk of rows per call: the
 * vector loop of a row this short is all prologue and remainder (measured at (1024, 10):
 * 23 us per forward row by row). */
#define EMB_SHORT 32

#define TR_KERNELS(T, SUF)                                                                    \
  /* per row of nr: the sums of |a - p + eps|^p, |a - n + eps|^p and (swap) |p - n + eps|^p */ \
  LS_KI void tr_sums_##SUF(const T *restrict a, const T *restrict p, const T *restrict n,     \
                           int64_t nr, int64_t d, T eps, T pw, const int pk, const int swap,  \
                           double *restrict s) {                                              \
    for (int64_t r = 0; r < nr; r++, a += d, p += d, n += d, s += 3) {                        \
      if (d < EMB_SHORT) {                                                                    \
        T s1 = 0, s2 = 0, s3 = 0;                                                             \
        for (int64_t i = 0; i < d; i++) {                                                     \
          s1 += TR_POW(a[i] - p[i] + eps, pk, pw);                                            \
          s2 += TR_POW(a[i] - n[i] + eps, pk, pw);                                            \
          if (swap) s3 += TR_POW(p[i] - n[i] + eps, pk, pw);                                  \
        }                                                                                     \
        s[0] = s1, s[1] = s2, s[2] = s3;                                                      \
      } else {                                                                                \
        LS_SUM3(T, d, TR_POW(a[i_] - p[i_] + eps, pk, pw), TR_POW(a[i_] - n[i_] + eps, pk, pw), \
                swap ? TR_POW(p[i_] - n[i_] + eps, pk, pw) : (T)0, s[0], s[1], s[2]);          \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  OPF_VEC static void tr_row_sums_##SUF(const T *restrict a, const T *restrict p,             \
                                        const T *restrict n, int64_t nr, int64_t d, T eps,    \
                                        T pw, int pk, int swap, double *s) {                  \
    if (pk == PK_2) {                                                                         \
      if (swap) tr_sums_##SUF(a, p, n, nr, d, eps, pw, PK_2, 1, s);                           \
      else tr_sums_##SUF(a, p, n, nr, d, eps, pw, PK_2, 0, s);                                \
    } else if (pk == PK_1) {                                                                  \
      if (swap) tr_sums_##SUF(a, p, n, nr, d, eps, pw, PK_1, 1, s);                           \
      else tr_sums_##SUF(a, p, n, nr, d, eps, pw, PK_1, 0, s);                                \
    } else {                                                                                  \
      if (swap) tr_sums_##SUF(a, p, n, nr, d, eps, pw, PK_G, 1, s);                           \
      else tr_sums_##SUF(a, p, n, nr, d, eps, pw, PK_G, 0, s);                                \
    }                                                                                         \
  }                                                                                           \
  /* gradients of one active row: c1 dpow(v1) for d1 = d(a, p), c2 dpow(v2) for d2, where v2  \
   * is a - n + eps (sw = 0) or p - n + eps (sw = 1, swap chose d(p, n)) */                   \
  LS_KI void tr_grad_##SUF(const T *restrict a, const T *restrict p, const T *restrict n,     \
                           T *restrict ga, T *restrict gp, T *restrict gn, int64_t d, T eps,  \
                           T pw, T c1, T c2, const int pk, const int sw) {                    \
    for (int64_t i = 0; i < d; i++) {                                                         \
      const T u = c1 * TR_DPOW(a[i] - p[i] + eps, pk, pw);                                    \
      const T w = c2 * TR_DPOW((sw ? p[i] : a[i]) - n[i] + eps, pk, pw);                      \
      ga[i] = sw ? u : u - w;                                                                 \
      gp[i] = sw ? -u - w : -u;                                                               \
      gn[i] = w;                                                                              \
    }                                                                                         \
  }                                                                                           \
  /* the gradients of nr rows, row coefficients c1, c2 and swap flags given (0 and 0 for an   \
   * inactive row): one call per chunk of rows */                                             \
  LS_KI void tr_grads_##SUF(const T *restrict a, const T *restrict p, const T *restrict n,    \
                            T *restrict ga, T *restrict gp, T *restrict gn, int64_t nr,       \
                            int64_t d, T eps, T pw, const double *c1, const double *c2,       \
                            const unsigned char *sw, const int pk) {                          \
    for (int64_t r = 0; r < nr; r++) {                                                        \
      const int64_t o = r * d;                                                                \
      if (sw[r])                                                                              \
        tr_grad_##SUF(a + o, p + o, n + o, ga + o, gp + o, gn + o, d, eps, pw, (T)c1[r],      \
                      (T)c2[r], pk, 1);                                                       \
      else                                                                                    \
        tr_grad_##SUF(a + o, p + o, n + o, ga + o, gp + o, gn + o, d, eps, pw, (T)c1[r],      \
                      (T)c2[r], pk, 0);                                                       \
    }                                                                                         \
  }                                                                                           \
  OPF_VEC static void tr_row_grads_##SUF(const T *restrict a, const T *restrict p,            \
                                         const T *restrict n, T *restrict ga, T *restrict gp, \
                                         T *restrict gn, int64_t nr, int64_t d, T eps, T pw,  \
                                         const double *c1, const double *c2,                  \
                                         const unsigned char *sw, int pk) {                   \
    if (pk == PK_2) tr_grads_##SUF(a, p, n, ga, gp, gn, nr, d, eps, pw, c1, c2, sw, PK_2);    \
    else if (pk == PK_1) tr_grads_##SUF(a, p, n, ga, gp, gn, nr, d, eps, pw, c1, c2, sw, PK_1); \
    else tr_grads_##SUF(a, p, n, ga, gp, gn, nr, d, eps, pw, c1, c2, sw, PK_G);               \
  }
TR_KERNELS(float, f32)
TR_KERNELS(double, f64)

/* Row embeddings: inputs 0..k-1 all (N, D) (derived from input 0 when omitted). */
static int emb_check_rows(opf_case *c, int k) {
  opf_tensor *x = &c->in[0];
  char s1[96], s2[96];
  if (x->ndim != 2)
    return opf_case_error(c, OPF_EINVAL, "'%s' must be 2-D (N, D), not %s", c->op->in[0].name,
                          opf_shape_str(x, s1, sizeof s1));
  for (int i = 1; i < k; i++) {
    if (c->in[i].ndim < 0) opf_tensor_set_shape(&c->in[i], c->in[i].dtype, 2, x->shape);
    if (c->in[i].ndim != 2 || c->in[i].shape[0] != x->shape[0] || c->in[i].shape[1] != x->shape[1])
      return opf_case_error(c, OPF_EINVAL, "'%s' %s must have the shape of '%s' %s",
                            c->op->in[i].name, opf_shape_str(&c->in[i], s2, sizeof s2),
                            c->op->in[0].name, opf_shape_str(x, s1, sizeof s1));
  }
  return OPF_OK;
}

static int tr_infer(opf_case *c) {
  if (c->in[TR_A].ndim < 0) return OPF_OK;
  int rc = emb_check_rows(c, 3);
  if (rc) return rc;
  const int64_t n = c->in[TR_A].shape[0];
  ls_set_loss_out(c, (int)c->p[TR_RED], n);
  c->ws_bytes = ls_align((size_t)n * sizeof(tr_row)) + ls_align((size_t)n * sizeof(double));
  return OPF_OK;
}

/* Rows per call of the row-sum kernels (their sums go to a stack buffer). */
#define EMB_CHUNK 256

static void tr_fwd_range(int64_t lo, int64_t hi, void *v) {
  opf_case *c = v;
  const int64_t d = c->in[TR_A].shape[1];
  const double pw = c->p[TR_PNORM], eps = c->p[TR_EPS], margin = c->p[TR_MARGIN];
  const int pk = tr_pk(pw), swap = c->p[TR_SWAP] != 0;
  tr_row *rows = c->ws;
  double *loss = tr_losses(c);
  double s[3 * EMB_CHUNK];
  for (int64_t r0 = lo; r0 < hi; r0 += EMB_CHUNK) {
    const int64_t nr = hi - r0 < EMB_CHUNK ? hi - r0 : EMB_CHUNK;
    if (c->dtype == OPF_F32)
      tr_row_sums_f32((const float *)c->in[TR_A].data + r0 * d, (const float *)c->in[TR_P].data + r0 * d,
                      (const float *)c->in[TR_N].data + r0 * d, nr, d, (float)eps, (float)pw, pk, swap, s);
    else
      tr_row_sums_f64((const double *)c->in[TR_A].data + r0 * d, (const double *)c->in[TR_P].data + r0 * d,
                      (const double *)c->in[TR_N].data + r0 * d, nr, d, eps, pw, pk, swap, s);
    for (int64_t k = 0; k < nr; k++) {
      const double *sk = s + 3 * k, ip = 1 / pw;
      const double d1 = pk == PK_2 ? sqrt(sk[0]) : pk == PK_1 ? sk[0] : pow(sk[0], ip);
      double d2 = pk == PK_2 ? sqrt(sk[1]) : pk == PK_1 ? sk[1] : pow(sk[1], ip);
      const double d3 = !swap ? 0 : pk == PK_2 ? sqrt(sk[2]) : pk == PK_1 ? sk[2] : pow(sk[2], ip);
      const int sw = swap && d3 < d2;
      if (sw) d2 = d3;
      const double l = d1 - d2 + margin;
      rows[r0 + k] = (tr_row){d1, d2, sw};
      loss[r0 + k] = l > 0 ? l : 0;
    }
  }
}

/* Rows per thread chunk: p = 1, 2 are a few flops per element of three streams (threads pay
 * off from OPF_PAR_MIN elements: measured no gain at (32, 1000) with half that), other p an
 * exp and a log per element and distance. */
static int64_t tr_par_min(const opf_case *c) {
  return ls_row_par(tr_pk(c->p[TR_PNORM]) == PK_G ? OPF_PAR_MIN / 16 : OPF_PAR_MIN, c->in[TR_A].shape[1]);
}

static int tr_forward(opf_case *c) {
  const int64_t n = c->in[TR_A].shape[0];
  opf_parallel_range(n, tr_par_min(c), tr_fwd_range, c);
  ls_write_rows(c, tr_losses(c), n, (int)c->p[TR_RED], (double)n);
  return OPF_OK;
}

/* d ||v||_p / d v = sign(v) |v|^(p-1) / ||v||^(p-1): the row factor g / d^(p-1) (0 for d = 0,
 * as PyTorch's norm gradient at 0). */
static double tr_coef(double g, double dist, double pw) {
  if (!(dist > 0)) return 0;
  return pw == 1 ? g : pw == 2 ? g / dist : g / pow(dist, pw - 1);
}

static void tr_bwd_range(int64_t lo, int64_t hi, void *v) {
  opf_case *c = v;
  const int64_t n = c->in[TR_A].shape[0], d = c->in[TR_A].shape[1];
  const double pw = c->p[TR_PNORM], eps = c->p[TR_EPS];
  const int pk = tr_pk(pw), red = (int)c->p[TR_RED];
  const tr_row *rows = c->ws;
  const double *loss = tr_losses(c);
  double c1[EMB_CHUNK], c2[EMB_CHUNK];
  unsigned char sw[EMB_CHUNK];
  for (int64_t r0 = lo; r0 < hi; r0 += EMB_CHUNK) {
    const int64_t nr = hi - r0 < EMB_CHUNK ? hi - r0 : EMB_CHUNK;
    for (int64_t k = 0; k < nr; k++) { /* an inactive row (or the hinge's kink): no gradient */
      const int64_t r = r0 + k;
      const double g = loss[r] > 0 ? ls_row_grad(c, r, red, (double)n) : 0;
      c1[k] = tr_coef(g, rows[r].d1, pw), c2[k] = tr_coef(g, rows[r].d2, pw);
      sw[k] = rows[r].swapped != 0;
    }
    const int64_t o = r0 * d;
    if (c->dtype == OPF_F32)
      tr_row_grads_f32((const float *)c->in[TR_A].data + o, (const float *)c->in[TR_P].data + o,
                       (const float *)c->in[TR_N].data + o, (float *)c->gin[TR_A].data + o,
                       (float *)c->gin[TR_P].data + o, (float *)c->gin[TR_N].data + o, nr, d,
                       (float)eps, (float)pw, c1, c2, sw, pk);
    else
      tr_row_grads_f64((const double *)c->in[TR_A].data + o, (const double *)c->in[TR_P].data + o,
                       (const double *)c->in[TR_N].data + o, (double *)c->gin[TR_A].data + o,
                       (double *)c->gin[TR_P].data + o, (double *)c->gin[TR_N].data + o, nr, d, eps,
                       pw, c1, c2, sw, pk);
  }
}

/* The harness allocates the gradients of all three inputs (each is differentiable and
 * floating); they are present together or not at all. */
static int tr_backward(opf_case *c) {
  if (!c->gin[TR_A].data || !c->gin[TR_P].data || !c->gin[TR_N].data) return OPF_OK;
  const int64_t n = c->in[TR_A].shape[0];
  opf_parallel_range(n, tr_par_min(c), tr_bwd_range, c);
  return OPF_OK;
}

/* Reference: the distances with libm pow, row by row. */
static int tr_reference(opf_case *c) {
  const int64_t n = c->in[TR_A].shape[0], d = c->in[TR_A].shape[1];
  const double pw = c->p[TR_PNORM], eps = c->p[TR_EPS], margin = c->p[TR_MARGIN];
  const int red = (int)c->p[TR_RED];
  double total = 0;
  for (int64_t r = 0; r < n; r++) {
    double s1 = 0, s2 = 0, s3 = 0;
    for (int64_t i = 0; i < d; i++) {
      const double a = ls_get(&c->in[TR_A], r * d + i), p = ls_get(&c->in[TR_P], r * d + i),
                   m = ls_get(&c->in[TR_N], r * d + i);
      s1 += pow(fabs(a - p + eps), pw);
      s2 += pow(fabs(a - m + eps), pw);
      s3 += pow(fabs(p - m + eps), pw);
    }
    double dap = pow(s1, 1 / pw), dan = pow(s2, 1 / pw), dpn = pow(s3, 1 / pw);
    if (c->p[TR_SWAP] && dpn < dan) dan = dpn;
    ls_ref_item(c, red, r, fmax(dap - dan + margin, 0), &total);
  }
  ls_ref_done(c, red, total, (double)n);
  return OPF_OK;
}

/* Per element and distance, fwd: subtract, add eps, then p = 2: multiply-add (4); p = 1: abs
 * and add (4); other p: abs, log, multiply, exp, add (7). Two distances (three with swap);
 * per row: two roots, subtract, add margin, max and the reduction's add (6). bwd per element:
 * the two differences (4), the derivative shape (p = 2: 0, p = 1: 2, other: 5) each, the two
 * scalings (2) and the three combinations (3). */
static double tr_flops(const opf_case *c, opf_pass p) {
  const double n = (double)c->in[TR_A].shape[0], d = (double)c->in[TR_A].shape[1];
  const int pk = tr_pk(c->p[TR_PNORM]);
  const double per = pk == PK_G ? 7 : 4, dp = pk == PK_2 ? 0 : pk == PK_1 ? 2 : 5;
  const double nd = c->p[TR_SWAP] ? 3 : 2;
  return opf_pass_sum(p, n * d * per * nd + 6 * n, n * d * (9 + 2 * dp));
}

/* fwd reads the three (N, D) inputs and writes the loss; bwd reads them and the loss gradient
 * and writes their three gradients. */
static double tr_bytes(const opf_case *c, opf_pass p) {
  const double es = (double)opf_dtype_size(c->dtype), x = (double)opf_numel(&c->in[TR_A]) * es;
  const double y = (double)opf_numel(&c->out[0]) * es;
  return opf_pass_sum(p, 3 * x + y, 6 * x + y);
}

OPPERF_OP(triplet_loss) = {
    .abi = OPF_OP_ABI,
    .name = "triplet_loss",
    .category = "nn.loss",
    .summary = "triplet margin loss: max(||a - p + eps||_p - ||a - n + eps||_p + margin, 0) per row",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 3,
    .in = {{.name = "anchor", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "(N, D) embeddings"},
           {.name = "positive", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "(N, D), as anchor (derived when omitted)"},
           {.name = "negative", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "(N, D), as anchor (derived when omitted)"}},
    .n_out = 1,
    .out = {"loss"},
    .n_params = 5,
    .params = {LS_REDUCTION,
               {.name = "margin", .type = OPF_P_FLOAT, .def = 1, .min = -1e30, .max = 1e30,
                .help = "required gap between the positive and negative distances"},
               {.name = "p", .type = OPF_P_FLOAT, .def = 2, .min = 1, .max = 100,
                .help = "norm degree of the distance"},
               {.name = "eps", .type = OPF_P_FLOAT, .def = 1e-6, .min = 0, .max = 1,
                .help = "added to the differences (PyTorch's pairwise_distance)"},
               {.name = "swap", .type = OPF_P_BOOL, .def = 0,
                .help = "use min(d(a, n), d(p, n)) as the negative distance"}},
    .shapes = {{"standard", "anchor=1024x1024"},
               {"standard", "anchor=32x1000"},
               {"skewed", "anchor=1024x10"},
               {"skewed", "anchor=10x100000"},
               {"small", "anchor=16x8"},
               {"small", "anchor=5x16 reduction=sum margin=0.3"},
               {"small", "anchor=6x7 reduction=none swap=1"},
               {"small", "anchor=4x9 p=1"},
               {"small", "anchor=3x70 reduction=none p=3 margin=0.2"},
               {"small", "anchor=1x64 reduction=sum p=1.5 swap=1 margin=0.5"},
               {"small", "anchor=5x12 p=2.5 swap=1 margin=0.4"},
               {"test", "anchor=300x517"},
               {"test", "anchor=7x100003 reduction=none swap=1"},
               {"test", "anchor=301x33 p=3 reduction=sum"},
               {"test", "anchor=5000x7 swap=1"},
               {"large", "anchor=8192x4096"}},
    .infer = tr_infer,
    .forward = tr_forward,
    .backward = tr_backward,
    .reference = tr_reference,
    .flops = tr_flops,
    .bytes = tr_bytes,
};

/* ================= cosine_embedding_loss ================= */
enum { CE_X1, CE_X2, CE_Y };
enum { CE_RED, CE_MARGIN };
#define CE_EPS 1e-12 /* added to each squared magnitude (PyTorch's EPSILON) */

/* Per row, in the workspace: the dot product and the two squared magnitudes (+ eps); then the
 * rows' losses. */
typedef struct ce_row {
  double dot, m1, m2;
} ce_row;
static double *ce_losses(const opf_case *c) {
  return (double *)((char *)c->ws + ls_align((size_t)c->in[0].shape[0] * sizeof(ce_row)));
}

#define CE_KERNELS(T, SUF)                                                                    \
  /* per row of nr: x1 . x2, |x1|^2, |x2|^2 (short rows: scalar loops, as triplet_loss) */   \
  OPF_VEC static void ce_row_sums_##SUF(const T *restrict x1, const T *restrict x2,           \
                                        int64_t nr, int64_t d, double *restrict s) {          \
    for (int64_t r = 0; r < nr; r++, x1 += d, x2 += d, s += 3) {                              \
      if (d < EMB_SHORT) {                                                                    \
        T s0 = 0, s1 = 0, s2 = 0;                                                             \
        for (int64_t i = 0; i < d; i++) s0 += x1[i] * x2[i], s1 += x1[i] * x1[i], s2 += x2[i] * x2[i]; \
        s[0] = s0, s[1] = s1, s[2] = s2;                                                      \
      } else {                                                                                \
        LS_SUM3(T, d, x1[i_] * x2[i_], x1[i_] * x1[i_], x2[i_] * x2[i_], s[0], s[1], s[2]);   \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  /* g1 = a x2 - b1 x1, g2 = a x1 - b2 x2 for one row (a = g' / sqrt(m1 m2), b = g' cos / m) */ \
  LS_KI void ce_grad_##SUF(const T *restrict x1, const T *restrict x2, T *restrict g1,         \
                           T *restrict g2, int64_t d, T a, T b1, T b2) {                      \
    for (int64_t i = 0; i < d; i++) {                                                         \
      g1[i] = a * x2[i] - b1 * x1[i];                                                         \
      g2[i] = a * x1[i] - b2 * x2[i];                                                         \
    }                                                                                         \
  }                                                                                           \
  /* nr rows, one call per chunk */                                                           \
  OPF_VEC static void ce_row_grads_##SUF(const T *x1, const T *x2, T *g1, T *g2, int64_t nr,  \
                                         int64_t d, const double *ca, const double *cb1,      \
                                         const double *cb2) {                                 \
    for (int64_t r = 0; r < nr; r++)                                                          \
      ce_grad_##SUF(x1 + r * d, x2 + r * d, g1 + r * d, g2 + r * d, d, (T)ca[r], (T)cb1[r],   \
                    (T)cb2[r]);                                                               \
  }
CE_KERNELS(float, f32)
CE_KERNELS(double, f64)

static int ce_infer(opf_case *c) {
  if (c->in[CE_X1].ndim < 0) return OPF_OK;
  int rc = emb_check_rows(c, 2);
  if (rc) return rc;
  const int64_t n = c->in[CE_X1].shape[0];
  opf_tensor *y = &c->in[CE_Y];
  if (y->ndim < 0) opf_tensor_set_shape(y, y->dtype, 1, &n);
  if (y->ndim != 1 || y->shape[0] != n) {
    char s1[96], s2[96];
    return opf_case_error(c, OPF_EINVAL, "'labels' %s must be 1-D with one label per row of 'x1' %s",
                          opf_shape_str(y, s2, sizeof s2), opf_shape_str(&c->in[CE_X1], s1, sizeof s1));
  }
  ls_set_loss_out(c, (int)c->p[CE_RED], n);
  c->ws_bytes = ls_align((size_t)n * sizeof(ce_row)) + ls_align((size_t)n * sizeof(double));
  return OPF_OK;
}

/* loss of one row from its sums, as PyTorch: 1 - cos where y = 1, max(0, cos - margin) where
 * y = -1, 0 for any other label */
static double ce_loss(double dot, double m1, double m2, double y, double margin) {
  const double cs = dot / sqrt(m1 * m2);
  return y == 1 ? 1 - cs : y == -1 ? fmax(cs - margin, 0) : 0;
}

static void ce_fwd_range(int64_t lo, int64_t hi, void *v) {
  opf_case *c = v;
  const int64_t d = c->in[CE_X1].shape[1];
  ce_row *rows = c->ws;
  double *loss = ce_losses(c);
  double s[3 * EMB_CHUNK];
  for (int64_t r0 = lo; r0 < hi; r0 += EMB_CHUNK) {
    const int64_t nr = hi - r0 < EMB_CHUNK ? hi - r0 : EMB_CHUNK;
    if (c->dtype == OPF_F32)
      ce_row_sums_f32((const float *)c->in[CE_X1].data + r0 * d, (const float *)c->in[CE_X2].data + r0 * d, nr, d, s);
    else
      ce_row_sums_f64((const double *)c->in[CE_X1].data + r0 * d, (const double *)c->in[CE_X2].data + r0 * d, nr, d, s);
    for (int64_t k = 0; k < nr; k++) {
      const double m1 = s[3 * k + 1] + CE_EPS, m2 = s[3 * k + 2] + CE_EPS;
      rows[r0 + k] = (ce_row){s[3 * k], m1, m2};
      loss[r0 + k] = ce_loss(s[3 * k], m1, m2, ls_get(&c->in[CE_Y], r0 + k), c->p[CE_MARGIN]);
    }
  }
}

static int ce_forward(opf_case *c) {
  const int64_t n = c->in[CE_X1].shape[0], d = c->in[CE_X1].shape[1];
  opf_parallel_range(n, ls_row_par(OPF_PAR_MIN, d), ce_fwd_range, c);
  ls_write_rows(c, ce_losses(c), n, (int)c->p[CE_RED], (double)n);
  return OPF_OK;
}

static void ce_bwd_range(int64_t lo, int64_t hi, void *v) {
  opf_case *c = v;
  const int64_t n = c->in[CE_X1].shape[0], d = c->in[CE_X1].shape[1];
  const int red = (int)c->p[CE_RED];
  const ce_row *rows = c->ws;
  double a[EMB_CHUNK], b1[EMB_CHUNK], b2[EMB_CHUNK];
  for (int64_t r0 = lo; r0 < hi; r0 += EMB_CHUNK) {
    const int64_t nr = hi - r0 < EMB_CHUNK ? hi - r0 : EMB_CHUNK;
    for (int64_t k = 0; k < nr; k++) {
      const int64_t r = r0 + k;
      const double y = ls_get(&c->in[CE_Y], r), rs = 1 / sqrt(rows[r].m1 * rows[r].m2);
      const double cs = rows[r].dot * rs;
      /* d loss / d cos: -1 (y = 1), 1 where the y = -1 hinge is active, else 0 */
      const double dl = y == 1 ? -1 : y == -1 && cs - c->p[CE_MARGIN] > 0 ? 1 : 0;
      const double g = dl * ls_row_grad(c, r, red, (double)n);
      a[k] = g * rs, b1[k] = g * cs / rows[r].m1, b2[k] = g * cs / rows[r].m2;
    }
    const int64_t o = r0 * d;
    if (c->dtype == OPF_F32)
      ce_row_grads_f32((const float *)c->in[CE_X1].data + o, (const float *)c->in[CE_X2].data + o,
                       (float *)c->gin[CE_X1].data + o, (float *)c->gin[CE_X2].data + o, nr, d, a, b1, b2);
    else
      ce_row_grads_f64((const double *)c->in[CE_X1].data + o, (const double *)c->in[CE_X2].data + o,
                       (double *)c->gin[CE_X1].data + o, (double *)c->gin[CE_X2].data + o, nr, d, a, b1, b2);
  }
}

static int ce_backward(opf_case *c) {
  if (!c->gin[CE_X1].data || !c->gin[CE_X2].data) return OPF_OK; /* allocated together */
  const int64_t n = c->in[CE_X1].shape[0], d = c->in[CE_X1].shape[1];
  opf_parallel_range(n, ls_row_par(OPF_PAR_MIN, d), ce_bwd_range, c);
  return OPF_OK;
}

static int ce_reference(opf_case *c) {
  const int64_t n = c->in[CE_X1].shape[0], d = c->in[CE_X1].shape[1];
  const int red = (int)c->p[CE_RED];
  double total = 0;
  for (int64_t r = 0; r < n; r++) {
    double dot = 0, m1 = CE_EPS, m2 = CE_EPS;
    for (int64_t i = 0; i < d; i++) {
      const double a = ls_get(&c->in[CE_X1], r * d + i), b = ls_get(&c->in[CE_X2], r * d + i);
      dot += a * b, m1 += a * a, m2 += b * b;
    }
    ls_ref_item(c, red, r, ce_loss(dot, m1, m2, ls_get(&c->in[CE_Y], r), c->p[CE_MARGIN]), &total);
  }
  ls_ref_done(c, red, total, (double)n);
  return OPF_OK;
}

/* fwd: three multiply-adds per element (6); per row: two eps adds, multiply, sqrt, divide,
 * the label's branch (subtract or subtract and max: 2) and the reduction's add (8). bwd: two
 * multiplies and a subtract per element and gradient (6). */
static double ce_flops(const opf_case *c, opf_pass p) {
  const double n = (double)c->in[CE_X1].shape[0], d = (double)c->in[CE_X1].shape[1];
  return opf_pass_sum(p, 6 * n * d + 8 * n, 6 * n * d);
}

/* fwd reads x1, x2 and the labels, writes the loss; bwd reads them and the loss gradient and
 * writes d x1 and d x2. */
static double ce_bytes(const opf_case *c, opf_pass p) {
  const double es = (double)opf_dtype_size(c->dtype), x = (double)opf_numel(&c->in[CE_X1]) * es;
  const double lab = (double)c->in[CE_X1].shape[0] * es, y = (double)opf_numel(&c->out[0]) * es;
  return opf_pass_sum(p, 2 * x + lab + y, 4 * x + lab + y);
}

OPPERF_OP(cosine_embedding_loss) = {
    .abi = OPF_OP_ABI,
    .name = "cosine_embedding_loss",
    .category = "nn.loss",
    .summary = "cosine embedding loss: 1 - cos(x1, x2) for label 1, max(0, cos - margin) for -1",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 3,
    .in = {{.name = "x1", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "(N, D) embeddings"},
           {.name = "x2", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "(N, D), as x1 (derived when omitted)"},
           {.name = "labels", .dtype = OPF_DT_CASE, .fill = ls_fill_sign,
            .help = "(N) -1 or +1 (derived when omitted)"}},
    .n_out = 1,
    .out = {"loss"},
    .n_params = 2,
    .params = {LS_REDUCTION,
               {.name = "margin", .type = OPF_P_FLOAT, .def = 0, .min = -1, .max = 1,
                .help = "cosine below which dissimilar pairs (label -1) cost nothing"}},
    .shapes = {{"standard", "x1=1024x1024"},
               {"standard", "x1=32x1000"},
               {"skewed", "x1=1024x10"},
               {"skewed", "x1=10x100000"},
               {"small", "x1=16x8"},
               {"small", "x1=5x16 reduction=sum margin=-0.1"},
               {"small", "x1=6x7 reduction=none"},
               {"small", "x1=3x70 reduction=none margin=0.1"},
               {"small", "x1=1x64 reduction=sum"},
               {"test", "x1=300x517"},
               {"test", "x1=7x100003 reduction=none"},
               {"test", "x1=301x33 reduction=sum margin=0.05"},
               {"test", "x1=5000x7 reduction=none"},
               {"large", "x1=8192x4096"}},
    .infer = ce_infer,
    .forward = ce_forward,
    .backward = ce_backward,
    .reference = ce_reference,
    .flops = ce_flops,
    .bytes = ce_bytes,
};
