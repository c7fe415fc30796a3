/* norm.c: layer_norm, instance_norm and group_norm, one core for all three. Each normalises
 * R contiguous rows of L = K*S elements (its own mean and variance per row) and applies a
 * learnable scale and shift that is constant over runs of S elements: row r, segment k uses
 * gamma[(r % G)*K + k]. layer_norm: rows of the trailing dims, K = L, S = 1 (per-element
 * gamma); instance_norm: rows (n, c), K = 1; group_norm: rows (n, g), K = C/groups. */
#include <limits.h>

#include "norm_common.h"

enum { IN_X, IN_GAMMA, IN_BETA };
enum { KIND_LAYER, KIND_INSTANCE, KIND_GROUP };

extern const opf_op opf_op_layer_norm, opf_op_instance_norm, opf_op_group_norm;

/* Elements below which a pass stays on one thread. Every pass here is a light streaming
 * sweep, so waking the second thread pays later than OPF_PAR_MIN (as in batch_norm.c). */
#define NORM_PAR_MIN (4 * OPF_PAR_MIN)
/* Row chunks of the per-element (S = 1) gamma/beta gradient: each chunk sums its rows into
 * its own partial arrays, then the chunks are added in order. A fixed count (not one per
 * thread) makes the result independent of the thread count. */
#define NORM_CHUNKS 16

typedef struct norm_plan {
  int kind;
  int64_t R, K, S, G; /* rows, segments per row, elements per segment, rows per gamma cycle */
  int64_t L;          /* K * S */
  double eps;
} norm_plan;

static int norm_kind(const opf_case *c) {
  return c->op == &opf_op_layer_norm ? KIND_LAYER
         : c->op == &opf_op_instance_norm ? KIND_INSTANCE : KIND_GROUP;
}

/* Params: layer_norm (axes, eps), instance_norm (eps), group_norm (groups, eps). */
static void norm_plan_of(const opf_case *c, norm_plan *pl) {
  const opf_tensor *x = &c->in[IN_X];
  int kind = norm_kind(c);
  pl->kind = kind;
  if (kind == KIND_LAYER) {
    int axes = (int)c->p[0];
    pl->R = opf_shape_numel(x->ndim - axes, x->shape);
    pl->K = opf_shape_numel(axes, x->shape + x->ndim - axes);
    pl->S = 1, pl->G = 1;
    pl->eps = c->p[1];
  } else {
    int64_t N = x->shape[0], C = x->shape[1];
    int64_t G = kind == KIND_INSTANCE ? C : (int64_t)c->p[0];
    pl->S = opf_shape_numel(x->ndim - 2, x->shape + 2);
    pl->G = G, pl->R = N * G, pl->K = C / G;
    pl->eps = c->p[kind == KIND_INSTANCE ? 0 : 1];
  }
  pl->L = pl->K * pl->S;
}

/* Doubles of workspace: mean and rstd per row (kept from forward for backward), then the
 * backward partials: sum g and sum g(x - mean) per (row, segment) when S > 1, or
 * NORM_CHUNKS partial dgamma/dbeta arrays of G*K when S = 1. */
static size_t norm_ws_doubles(const norm_plan *pl) {
  int64_t part = pl->S > 1 ? 2 * pl->R * pl->K : 2 * NORM_CHUNKS * pl->G * pl->K;
  return (size_t)(2 * pl->R + part);
}

static int norm_infer(opf_case *c) {
  opf_tensor *x = &c->in[IN_X];
  const char *nm = c->op->name;
  int kind = norm_kind(c);
  char s1[96], s2[96], s3[96];
  if (x->ndim < 0) return opf_case_error(c, OPF_EINVAL, "%s: input 'x' needs a shape", nm);
  for (int k = 0; k < x->ndim; k++)
    if (x->shape[k] <= 0)
      return opf_case_error(c, OPF_EINVAL, "%s: x %s has an empty dimension", nm,
                            opf_shape_str(x, s1, sizeof s1));
  int nd = 1;            /* dims of gamma and beta */
  int64_t cshape[OPF_MAX_DIMS];
  if (kind == KIND_LAYER) {
    int axes = (int)c->p[0];
    if (x->ndim < axes)
      return opf_case_error(c, OPF_EINVAL, "layer_norm: axes=%d normalises more dims than x "
                            "%s has (%d)", axes, opf_shape_str(x, s1, sizeof s1), x->ndim);
    nd = axes;
    memcpy(cshape, x->shape + x->ndim - axes, sizeof(int64_t) * (size_t)axes);
  } else {
    int need = kind == KIND_INSTANCE ? 3 : 2;
    if (x->ndim < need)
      return opf_case_error(c, OPF_EINVAL, "%s: x must be (N, C%s), got %s (%d-D)", nm,
                            kind == KIND_INSTANCE ? ", spatial..." : ", ...",
                            opf_shape_str(x, s1, sizeof s1), x->ndim);
    cshape[0] = x->shape[1];
    if (kind == KIND_GROUP && x->shape[1] % (int64_t)c->p[0])
      return opf_case_error(c, OPF_EINVAL, "group_norm: channels %lld of x %s are not "
                            "divisible by groups=%lld", (long long)x->shape[1],
                            opf_shape_str(x, s1, sizeof s1), (long long)c->p[0]);
  }
  for (int i = IN_GAMMA; i <= IN_BETA; i++) {
    opf_tensor *v = &c->in[i];
    if (v->ndim < 0) opf_tensor_set_shape(v, c->dtype, nd, cshape);
    int ok = v->ndim == nd;
    for (int k = 0; ok && k < nd; k++) ok = v->shape[k] == cshape[k];
    if (!ok) {
      opf_tensor want;
      opf_tensor_set_shape(&want, c->dtype, nd, cshape);
      return opf_case_error(c, OPF_EINVAL, "%s: '%s' %s must have shape %s (%s of x %s)", nm,
                            c->op->in[i].name, opf_shape_str(v, s1, sizeof s1),
                            opf_shape_str(&want, s2, sizeof s2),
                            kind == KIND_LAYER ? "the normalised dims" : "the channels",
                            opf_shape_str(x, s3, sizeof s3));
    }
  }
  norm_plan pl;
  norm_plan_of(c, &pl);
  opf_set_out(c, 0, c->dtype, x->ndim, x->shape);
  c->ws_bytes = norm_ws_doubles(&pl) * sizeof(double);
  return OPF_OK;
}

/* With xhat = (x - m) rstd, gy = g gamma, and means over the row's L elements:
 *   dx = rstd (gy - mean(gy) - xhat mean(gy xhat))
 *      = (rstd gamma) g + b (x - m) + d,  b = -rstd^3 mean(gy (x - m)),  d = -rstd mean(gy)
 *   dgamma = sum g xhat, dbeta = sum g  (over every element that uses the coefficient). */
static inline void bwd_coefs(double rs, double L, double sgy, double sgyd, double *b, double *d) {
  *b = -rs * rs * rs * sgyd / L;
  *d = -rs * sgy / L;
}

/* ---- per-element gamma (S = 1): vectorised along the row with the gamma/beta vectors ---- */
#define LN_GY(i) (g[i] * gm[i])
#define LN_GYD(i) (dg[i] += (double)(g[i] * (x[i] - tm)) * rs, db[i] += (double)g[i], \
                   g[i] * gm[i] * (x[i] - tm))
/* Whole rows [r0, r1) of L elements per call (rows of 64 are too short for a call per pass):
 * forward stores each row's mean and rstd; backward adds into the dgamma/dbeta partials dg,
 * db (G*L doubles) and writes dx when it is wanted. Row r uses gamma[(r % G) * L ...]. */
#define LN_KERNELS(T, S)                                                                       \
  OPF_VEC static void ln_fwd_##S(const T *restrict xp, T *restrict yp, const T *restrict gmp, \
                                 const T *restrict btp, int64_t r0, int64_t r1, int64_t L,    \
                                 int64_t G, double eps, double *restrict mean,                \
                                 double *restrict rstd) {                                     \
    for (int64_t r = r0; r < r1; r += 2) { /* rows in pairs: see nc_moments2_body */          \
      int two = r + 1 < r1;                                                                   \
      if (two) nc_moments2_body_##S(xp + r * L, xp + (r + 1) * L, L, eps, mean + r, rstd + r); \
      else nc_moments_body_##S(xp + r * L, L, eps, mean + r, rstd + r);                       \
      for (int64_t q = r; q <= r + two; q++) {                                                \
        const T *restrict x = xp + q * L, *restrict gm = gmp + (q % G) * L;                   \
        const T *restrict bt = btp + (q % G) * L;                                             \
        T *restrict y = yp + q * L;                                                           \
        const T tm = (T)mean[q], tr = (T)rstd[q];                                             \
        for (int64_t i = 0; i < L; i++) y[i] = (x[i] - tm) * tr * gm[i] + bt[i];              \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  /* per row: sgy = sum g gamma, sgyd = sum g gamma (x - m) (one sweep that also adds the    \
   * dgamma and dbeta partials), then dx = rs gamma g + b (x - m) + d */                      \
  OPF_VEC static void ln_bwd_##S(const T *restrict gp, const T *restrict xp,                  \
                                 const T *restrict gmp, T *restrict dxp, int64_t r0,          \
                                 int64_t r1, int64_t L, int64_t G, const double *mean,        \
                                 const double *rstd, double *restrict dgp,                    \
                                 double *restrict dbp) {                                      \
    for (int64_t r = r0; r < r1; r++) {                                                       \
      const T *restrict g = gp + r * L, *restrict x = xp + r * L;                             \
      const T *restrict gm = gmp + (r % G) * L;                                               \
      double *restrict dg = dgp + (r % G) * L, *restrict db = dbp + (r % G) * L;              \
      const double m = mean[r], rs = rstd[r];                                                 \
      const T tm = (T)m;                                                                      \
      double sgy, sgyd, b, d;                                                                 \
      NC_SUM2(T, L, LN_GY, LN_GYD, sgy, sgyd);                                                \
      sgyd -= (m - (double)tm) * sgy; /* deviations were from the rounded mean */             \
      if (!dxp) continue;                                                                     \
      bwd_coefs(rs, (double)L, sgy, sgyd, &b, &d);                                            \
      T *restrict dx = dxp + r * L;                                                           \
      const T tr = (T)rs, tb = (T)b, td = (T)d;                                               \
      for (int64_t i = 0; i < L; i++) dx[i] = tr * gm[i] * g[i] + tb * (x[i] - tm) + td;      \
    }                                                                                         \
  }
LN_KERNELS(float, f32)
LN_KERNELS(double, f64)

/* Short rows of NV vectors (L = 16 NV floats or 8 NV doubles, NV <= 8): a row is held in
 * registers and its sums folded once, about 70 instructions per row of 64 floats where the
 * general kernels' block and tail machinery took 235; (4096, 64) ran 2.x faster. */
#define LNS_KERNELS(T, S, V, NV)                                                               \
  OPF_VEC static void lns_fwd_##S##_##NV(const void *xv, void *yv, const void *gmv,           \
                                         const void *btv, int64_t r0, int64_t r1, int64_t G,  \
                                         double eps, double *restrict mean,                   \
                                         double *restrict rstd) {                             \
    enum { L = (int)(64 / sizeof(T)) * NV };                                                  \
    const T *restrict xp = xv, *restrict gmp = gmv, *restrict btp = btv;                      \
    T *restrict yp = yv;                                                                      \
    for (int64_t r = r0; r < r1; r++) {                                                       \
      V v[NV], gm[NV], bt[NV], s = {0}, q = {0};                                              \
      memcpy(v, xp + r * L, sizeof v);                                                        \
      for (int j = 0; j < NV; j++) s += v[j];                                                 \
      const double m = nc_vsum_##S(s) * (1.0 / L);                                            \
      const T tm = (T)m;                                                                      \
      for (int j = 0; j < NV; j++) q += (v[j] - tm) * (v[j] - tm);                            \
      double var = nc_vsum_##S(q) * (1.0 / L) - (m - (double)tm) * (m - (double)tm);          \
      const double rs = 1 / sqrt((var > 0 ? var : 0) + eps);                                  \
      mean[r] = m, rstd[r] = rs;                                                              \
      memcpy(gm, gmp + (r % G) * L, sizeof gm);                                               \
      memcpy(bt, btp + (r % G) * L, sizeof bt);                                               \
      const T tr = (T)rs;                                                                     \
      for (int j = 0; j < NV; j++) v[j] = (v[j] - tm) * tr * gm[j] + bt[j];                   \
      memcpy(yp + r * L, v, sizeof v);                                                        \
    }                                                                                         \
  }                                                                                           \
  OPF_VEC static void lns_bwd_##S##_##NV(const void *gv, const void *xv, const void *gmv,     \
                                         void *dxv, int64_t r0, int64_t r1, int64_t G,        \
                                         const double *mean, const double *rstd,              \
                                         double *restrict dgp, double *restrict dbp) {        \
    enum { L = (int)(64 / sizeof(T)) * NV };                                                  \
    const T *restrict gp = gv, *restrict xp = xv, *restrict gmp = gmv;                        \
    T *restrict dxp = dxv;                                                                    \
    for (int64_t r = r0; r < r1; r++) {                                                       \
      const T *restrict gr = gp + r * L, *restrict xr = xp + r * L;                           \
      double *restrict dg = dgp + (r % G) * L, *restrict db = dbp + (r % G) * L;              \
      V g[NV], x[NV], gm[NV], sy = {0}, syd = {0};                                            \
      memcpy(g, gr, sizeof g);                                                                \
      memcpy(x, xr, sizeof x);                                                                \
      memcpy(gm, gmp + (r % G) * L, sizeof gm);                                               \
      const double m = mean[r], rs = rstd[r];                                                 \
      const T tm = (T)m;                                                                      \
      for (int j = 0; j < NV; j++) sy += g[j] * gm[j], syd += g[j] * gm[j] * (x[j] - tm);     \
      for (int k = 0; k < L; k++) {                                                           \
        dg[k] += (double)(gr[k] * (xr[k] - tm)) * rs;                                         \
        db[k] += (double)gr[k];                                                               \
      }                                                                                       \
      if (!dxp) continue;                                                                     \
      const double sgy = nc_vsum_##S(sy), sgyd = nc_vsum_##S(syd) - (m - (double)tm) * sgy;   \
      double b, d;                                                                            \
      bwd_coefs(rs, (double)L, sgy, sgyd, &b, &d);                                            \
      const T tr = (T)rs, tb = (T)b, td = (T)d;                                               \
      for (int j = 0; j < NV; j++) x[j] = tr * gm[j] * g[j] + tb * (x[j] - tm) + td;          \
      memcpy(dxp + r * L, x, sizeof x);                                                       \
    }                                                                                         \
  }
#define LNS_ALL(T, S, V) LNS_KERNELS(T, S, V, 1) LNS_KERNELS(T, S, V, 2) \
  LNS_KERNELS(T, S, V, 4) LNS_KERNELS(T, S, V, 8)
LNS_ALL(float, f32, nc_vf)
LNS_ALL(double, f64, nc_vd)

typedef void (*lns_fwd_fn)(const void *, void *, const void *, const void *, int64_t, int64_t,
                           int64_t, double, double *, double *);
typedef void (*lns_bwd_fn)(const void *, const void *, const void *, void *, int64_t, int64_t,
                           int64_t, const double *, const double *, double *, double *);
#define LNS_F(S) {lns_fwd_##S##_1, lns_fwd_##S##_2, lns_fwd_##S##_4, lns_fwd_##S##_8}
#define LNS_B(S) {lns_bwd_##S##_1, lns_bwd_##S##_2, lns_bwd_##S##_4, lns_bwd_##S##_8}
static const lns_fwd_fn lns_fwd[2][4] = {LNS_F(f32), LNS_F(f64)};
static const lns_bwd_fn lns_bwd[2][4] = {LNS_B(f32), LNS_B(f64)};
/* Index of the short-row kernel for rows of L elements (-1: none). */
static int lns_index(int64_t L, size_t e) {
  int64_t w = 64 / (int64_t)e;
  for (int i = 0; i < 4; i++)
    if (L == w << i) return i;
  return -1;
}

/* ---- driver ---- */
typedef struct norm_ctx {
  opf_case *c;
  norm_plan pl;
  size_t e;                 /* element size */
  double *mean, *rstd, *p1, *p2;
  int64_t chunks, crows;    /* S = 1 backward: chunk count and rows per chunk */
} norm_ctx;

static void norm_setup(opf_case *c, norm_ctx *t) {
  memset(t, 0, sizeof *t);
  t->c = c;
  norm_plan_of(c, &t->pl);
  t->e = opf_dtype_size(c->dtype);
  double *w = c->ws;
  const norm_plan *pl = &t->pl;
  t->mean = w, t->rstd = w + pl->R;
  int64_t half = pl->S > 1 ? pl->R * pl->K : NORM_CHUNKS * pl->G * pl->K;
  t->p1 = w + 2 * pl->R, t->p2 = t->p1 + half;
}

/* Rows of work for opf_parallel_range: threaded above NORM_PAR_MIN elements in all. */
static int64_t norm_min_rows(const norm_plan *pl) { return (NORM_PAR_MIN + pl->L - 1) / pl->L; }

static const void *norm_gamma(const norm_ctx *t, int i, int64_t r) {
  return (const char *)t->c->in[i].data + (size_t)((r % t->pl.G) * t->pl.K) * t->e;
}

static void fwd_rows(int64_t lo, int64_t hi, void *p) {
  norm_ctx *t = p;
  opf_case *c = t->c;
  opf_dtype dt = c->dtype;
  const norm_plan *pl = &t->pl;
  const void *X = c->in[IN_X].data, *GM = c->in[IN_GAMMA].data, *BT = c->in[IN_BETA].data;
  if (pl->S == 1) {
    int k = lns_index(pl->L, t->e);
    if (k >= 0)
      lns_fwd[dt == OPF_F64][k](X, c->out[0].data, GM, BT, lo, hi, pl->G, pl->eps, t->mean,
                                t->rstd);
    else if (dt == OPF_F32)
      ln_fwd_f32(X, c->out[0].data, GM, BT, lo, hi, pl->L, pl->G, pl->eps, t->mean, t->rstd);
    else
      ln_fwd_f64(X, c->out[0].data, GM, BT, lo, hi, pl->L, pl->G, pl->eps, t->mean, t->rstd);
    return;
  }
  for (int64_t r = lo; r < hi; r++) {
    size_t off = (size_t)(r * pl->L) * t->e;
    const char *x = (const char *)X + off;
    char *y = (char *)c->out[0].data + off;
    double m, rs;
    nc_moments(dt, x, pl->L, pl->eps, &m, &rs);
    t->mean[r] = m, t->rstd[r] = rs;
    const void *gm = norm_gamma(t, IN_GAMMA, r), *bt = norm_gamma(t, IN_BETA, r);
    for (int64_t k = 0; k < pl->K; k++) { /* y = gamma_k rstd (x - m) + beta_k */
      size_t so = (size_t)(k * pl->S) * t->e;
      nc_affine(dt, NULL, x + so, y + so, pl->S, 0, rs * nn_ld(gm, dt, k), m, nn_ld(bt, dt, k));
    }
  }
}

static int norm_forward(opf_case *c) {
  norm_ctx t;
  norm_setup(c, &t);
  opf_parallel_range(t.pl.R, norm_min_rows(&t.pl), fwd_rows, &t);
  return OPF_OK;
}

/* S > 1: per (row, segment) sums into p1/p2, then dx run by run. */
static void bwd_rows(int64_t lo, int64_t hi, void *p) {
  norm_ctx *t = p;
  opf_case *c = t->c;
  opf_dtype dt = c->dtype;
  const norm_plan *pl = &t->pl;
  for (int64_t r = lo; r < hi; r++) {
    size_t off = (size_t)(r * pl->L) * t->e;
    const char *x = (const char *)c->in[IN_X].data + off, *g = (const char *)c->gout[0].data + off;
    const void *gm = norm_gamma(t, IN_GAMMA, r);
    double m = t->mean[r], rs = t->rstd[r], sgy = 0, sgyd = 0;
    for (int64_t k = 0; k < pl->K; k++) {
      size_t so = (size_t)(k * pl->S) * t->e;
      double *sg = &t->p1[r * pl->K + k], *sgd = &t->p2[r * pl->K + k];
      nc_gsums(dt, g + so, x + so, pl->S, m, sg, sgd);
      double gam = nn_ld(gm, dt, k);
      sgy += gam * *sg, sgyd += gam * *sgd;
    }
    if (!c->gin[IN_X].data) continue;
    double b, d;
    bwd_coefs(rs, (double)pl->L, sgy, sgyd, &b, &d);
    char *dx = (char *)c->gin[IN_X].data + off;
    for (int64_t k = 0; k < pl->K; k++) {
      size_t so = (size_t)(k * pl->S) * t->e;
      nc_affine(dt, g + so, x + so, dx + so, pl->S, rs * nn_ld(gm, dt, k), b, m, d);
    }
  }
}

/* S = 1: chunks [lo, hi) of t->crows rows, each with its own dgamma/dbeta partials. */
static void bwd_chunks(int64_t lo, int64_t hi, void *p) {
  norm_ctx *t = p;
  opf_case *c = t->c;
  opf_dtype dt = c->dtype;
  const norm_plan *pl = &t->pl;
  int64_t GK = pl->G * pl->K;
  for (int64_t ch = lo; ch < hi; ch++) {
    double *dg = t->p1 + ch * GK, *db = t->p2 + ch * GK;
    memset(dg, 0, sizeof(double) * (size_t)GK);
    memset(db, 0, sizeof(double) * (size_t)GK);
    int64_t r0 = ch * t->crows, r1 = r0 + t->crows < pl->R ? r0 + t->crows : pl->R;
    const void *G = c->gout[0].data, *X = c->in[IN_X].data, *GM = c->in[IN_GAMMA].data;
    int k = lns_index(pl->L, t->e);
    if (k >= 0)
      lns_bwd[dt == OPF_F64][k](G, X, GM, c->gin[IN_X].data, r0, r1, pl->G, t->mean, t->rstd, dg,
                                db);
    else if (dt == OPF_F32)
      ln_bwd_f32(G, X, GM, c->gin[IN_X].data, r0, r1, pl->L, pl->G, t->mean, t->rstd, dg, db);
    else
      ln_bwd_f64(G, X, GM, c->gin[IN_X].data, r0, r1, pl->L, pl->G, t->mean, t->rstd, dg, db);
  }
}

static int norm_backward(opf_case *c) {
  norm_ctx t;
  norm_setup(c, &t);
  const norm_plan *pl = &t.pl;
  opf_dtype dt = c->dtype;
  void *dgam = c->gin[IN_GAMMA].data, *dbet = c->gin[IN_BETA].data;
  int64_t GK = pl->G * pl->K;
  if (pl->S > 1) {
    opf_parallel_range(pl->R, norm_min_rows(pl), bwd_rows, &t);
    for (int64_t j = 0; j < GK; j++) { /* coefficient j: rows j/K, j/K + G, ... segment j%K */
      double sg = 0, sgx = 0;
      for (int64_t r = j / pl->K; r < pl->R; r += pl->G) {
        int64_t u = r * pl->K + j % pl->K;
        sg += t.p1[u], sgx += t.p2[u] * t.rstd[r];
      }
      if (dgam) nn_st(dgam, dt, j, sgx);
      if (dbet) nn_st(dbet, dt, j, sg);
    }
    return OPF_OK;
  }
  int par = pl->R * pl->L >= NORM_PAR_MIN;
  t.chunks = par ? (pl->R < NORM_CHUNKS ? pl->R : NORM_CHUNKS) : 1;
  t.crows = (pl->R + t.chunks - 1) / t.chunks;
  t.chunks = (pl->R + t.crows - 1) / t.crows;
  opf_parallel_range(t.chunks, 2, bwd_chunks, &t);
  for (int64_t j = 0; j < GK; j++) {
    double sg = 0, sgx = 0;
    for (int64_t ch = 0; ch < t.chunks; ch++) sgx += t.p1[ch * GK + j], sg += t.p2[ch * GK + j];
    if (dgam) nn_st(dgam, dt, j, sgx);
    if (dbet) nn_st(dbet, dt, j, sg);
  }
  return OPF_OK;
}

/* Reference: per row the textbook two-pass mean and variance, then normalise element by
 * element with the coefficient of its segment. */
static int norm_reference(opf_case *c) {
  norm_plan pl;
  norm_plan_of(c, &pl);
  opf_dtype dt = c->dtype;
  const void *x = c->in[IN_X].data;
  for (int64_t r = 0; r < pl.R; r++) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < pl.L; i++) mean += nn_ld(x, dt, r * pl.L + i);
    mean /= (double)pl.L;
    for (int64_t i = 0; i < pl.L; i++) {
      double dv = nn_ld(x, dt, r * pl.L + i) - mean;
      var += dv * dv;
    }
    var /= (double)pl.L;
    for (int64_t k = 0; k < pl.K; k++) {
      int64_t j = (r % pl.G) * pl.K + k;
      double gamma = nn_ld(c->in[IN_GAMMA].data, dt, j), beta = nn_ld(c->in[IN_BETA].data, dt, j);
      for (int64_t s = 0; s < pl.S; s++) {
        int64_t i = r * pl.L + k * pl.S + s;
        nn_st(c->out[0].data, dt, i, (nn_ld(x, dt, i) - mean) / sqrt(var + pl.eps) * gamma + beta);
      }
    }
  }
  return OPF_OK;
}

/* Per element of x, forward 7: mean (add), variance (sub, mul, add), normalise (sub, mul,
 * add with the per-segment coefficients rstd*gamma and beta). Backward 9: sum g (add),
 * sum g (x - m) (sub, mul, add), dx = a g + b (x - m) + d (mul, sub, mul, add, add); with a
 * per-element gamma (layer_norm, S = 1) the sums are of g gamma (+1 mul) and each element also
 * adds into its dgamma (mul by rstd, mul, add) and dbeta (add): 14. O(rows + coefficients)
 * work is left out. */
static double norm_flops(const opf_case *c, opf_pass p) {
  norm_plan pl;
  norm_plan_of(c, &pl);
  double n = (double)opf_numel(&c->in[IN_X]);
  return opf_pass_sum(p, 7 * n, (pl.S == 1 ? 14 : 9) * n);
}

/* Forward: x read, y written, gamma and beta read. Backward: g and x read, dx written, gamma
 * read, dgamma and dbeta written. */
static double norm_bytes(const opf_case *c, opf_pass p) {
  double e = (double)opf_dtype_size(c->dtype), n = (double)opf_numel(&c->in[IN_X]);
  double C = (double)opf_numel(&c->in[IN_GAMMA]);
  return opf_pass_sum(p, (2 * n + 2 * C) * e, (3 * n + 3 * C) * e);
}

#define NORM_COMMON                                                                            \
  .abi = OPF_OP_ABI, .category = "nn.basic", .dtypes = OPF_DT_FLOAT, .n_in = 3, .n_out = 1,   \
  .out = {"y"}, .infer = norm_infer, .forward = norm_forward, .backward = norm_backward,      \
  .reference = norm_reference, .flops = norm_flops, .bytes = norm_bytes
#define NORM_X(h) {.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1, \
                      .help = h}
#define NORM_GB(shape)                                                                         \
  {.name = "gamma", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = 0.5, .hi = 1.5,          \
   .help = "scale " shape},                                                                    \
  {.name = "beta", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -0.5, .hi = 0.5,          \
   .help = "shift " shape}
#define NORM_EPS {"eps", OPF_P_FLOAT, 1e-5, 0, 1, NULL, "added to the variance"}

OPPERF_OP(layer_norm) = {
    NORM_COMMON,
    .name = "layer_norm",
    .summary = "layer normalisation over the trailing `axes` dims, per-element gamma/beta",
    .in = {NORM_X("input (..., normalised dims)"), NORM_GB("(the normalised dims)")},
    .n_params = 2,
    .params = {{"axes", OPF_P_INT, 1, 1, OPF_MAX_DIMS, NULL,
                "number of trailing dims normalised together"},
               NORM_EPS},
    .shapes = {{"standard", "x=32x1024"},
               {"skewed", "x=4096x64"},
               {"skewed", "x=8x8192"},
               {"small", "x=4x16"},
               {"small", "x=5x64"},
               {"small", "x=3x70"},
               {"small", "x=1x7"},
               {"small", "x=2x3x5 axes=2"},
               {"small", "x=2x3x2x3 axes=3"},
               {"test", "x=301x517"},
               {"test", "x=33x7x1001 axes=2"},
               {"test", "x=67x1031"},
               {"test", "x=4099x64"},
               {"large", "x=4096x8192"},
               {"huge", "x=262144x8193"}},
};

OPPERF_OP(instance_norm) = {
    NORM_COMMON,
    .name = "instance_norm",
    .summary = "instance normalisation per (n, c) over the spatial dims, gamma/beta per channel",
    .in = {NORM_X("input (N, C, spatial...)"), NORM_GB("(C)")},
    .n_params = 1,
    .params = {NORM_EPS},
    .shapes = {{"standard", "x=32x64x56x56"},
               {"skewed", "x=32x3x10000x10"},
               {"small", "x=2x3x5x5"},
               {"small", "x=1x2x7"},
               {"small", "x=2x2x41"},
               {"small", "x=2x3x1x2"},
               {"test", "x=5x7x61x67"},
               {"test", "x=3x5x11x1001"},
               {"large", "x=32x128x112x112"},
               {"huge", "x=64x128x512x513"}},
};

OPPERF_OP(group_norm) = {
    NORM_COMMON,
    .name = "group_norm",
    .summary = "group normalisation per (n, group of C/groups channels), gamma/beta per channel",
    .in = {NORM_X("input (N, C, spatial...) or (N, C)"), NORM_GB("(C)")},
    .n_params = 2,
    .params = {{"groups", OPF_P_INT, 32, 1, INT_MAX, NULL,
                "channel groups (must divide C); 1 = layer norm over (C, spatial), C = "
                "instance norm"},
               NORM_EPS},
    .shapes = {{"standard", "x=32x64x56x56 groups=32"},
               {"skewed", "x=32x3x10000x10 groups=1"},
               {"skewed", "x=32x3x10000x10 groups=3"},
               {"small", "x=2x4x3x3 groups=2"},
               {"small", "x=2x6x5 groups=3"},
               {"small", "x=2x4x3x3 groups=1"},
               {"small", "x=3x8 groups=2"},
               {"small", "x=3x32 groups=2"},
               {"small", "x=2x4x17 groups=4"},
               {"test", "x=5x12x61x67 groups=4"},
               {"test", "x=2063x96 groups=6"},
               {"large", "x=32x128x112x112 groups=32"},
               {"huge", "x=64x128x512x513 groups=32"}},
};
