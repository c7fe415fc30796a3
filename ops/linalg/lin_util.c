/* lin_util.c: helpers of the linalg family declared in linalg.h: blocked transposes and
 * triangle operations on square matrices, the triangle-only GEMM, the outer-product kernel,
 * the fill hooks for structured inputs (SPD, triangular, well-conditioned general) and the
 * naive LU the references share. */
#include <math.h>

#include "creation/create_common.h" /* cr_write: threaded writer with streaming stores */
#include "linalg/linalg.h"

/* Tile edge of the blocked transposes: two 64x64 double tiles (64 KiB) stay in L1/L2 while one
 * is read along columns. */
#define LIN_TB 64

/* ---- tile kernels: d (bi,bj) from x^T (x is (bj,bi)) ----
 * set: d = alpha x^T + beta y (y NULL: beta ignored); acc: d = d + x^T; copy: d = x^T. */
#define LIN_TILES(T, sfx)                                                                      \
  OPF_VEC static void tile_set_##sfx(int64_t bi, int64_t bj, T alpha, const T *restrict x,     \
                                     int64_t ldx, T beta, const T *restrict y, int64_t ldy,    \
                                     T *restrict d, int64_t ldd) {                             \
    if (y)                                                                                     \
      for (int64_t i = 0; i < bi; i++)                                                         \
        for (int64_t j = 0; j < bj; j++)                                                       \
          d[i * ldd + j] = alpha * x[j * ldx + i] + beta * y[i * ldy + j];                     \
    else                                                                                       \
      for (int64_t i = 0; i < bi; i++)                                                         \
        for (int64_t j = 0; j < bj; j++) d[i * ldd + j] = alpha * x[j * ldx + i];              \
  }                                                                                            \
  OPF_VEC static void tile_acc_##sfx(int64_t bi, int64_t bj, const T *restrict x, int64_t ldx, \
                                     T *restrict d, int64_t ldd) {                             \
    for (int64_t i = 0; i < bi; i++)                                                           \
      for (int64_t j = 0; j < bj; j++) d[i * ldd + j] += x[j * ldx + i];                       \
  }                                                                                            \
  OPF_VEC static void row_scale_##sfx(T *restrict a, int64_t n, T s) {                         \
    for (int64_t j = 0; j < n; j++) a[j] *= s;                                                 \
  }                                                                                            \
  /* no restrict: y may be x (the compiler checks the overlap once) */                         \
  OPF_VEC static void scale_##sfx(int64_t n, T s, const T *x, T *y) {                          \
    for (int64_t j = 0; j < n; j++) y[j] = s * x[j];                                           \
  }                                                                                            \
  OPF_VEC static void outer_rows_##sfx(int64_t r0, int64_t r1, int64_t c0, int64_t c1, T alpha, \
                                       const T *restrict x, int64_t incx, const T *restrict y, \
                                       T *restrict dst) {                                      \
    const int64_t w = c1 - c0;                                                                 \
    if (w == 1) { /* one column (a (M, 1) outer): down the rows, vectorised */                 \
      const T yc = y[c0];                                                                      \
      for (int64_t i = r0; i < r1; i++) dst[i - r0] = alpha * x[i * incx] * yc;                \
      return;                                                                                  \
    }                                                                                          \
    for (int64_t i = r0; i < r1; i++) {                                                        \
      const T s = alpha * x[i * incx];                                                         \
      T *restrict o = dst + (i - r0) * w;                                                      \
      for (int64_t j = 0; j < w; j++) o[j] = s * y[c0 + j];                                    \
    }                                                                                          \
  }                                                                                            \
  /* rows [lo, hi) of G (M,N): dx[i] = G[i] . y (16 independent lanes: vectorised without      \
   * reassociation flags), dy += x[i] G[i] */                                                  \
  OPF_VEC static void outer_bwd_rows_##sfx(int64_t lo, int64_t hi, int64_t N,                  \
                                           const T *restrict G, const T *restrict x,           \
                                           const T *restrict y, T *restrict dx, T *restrict dy) { \
    for (int64_t i = lo; i < hi; i++) {                                                        \
      const T *restrict g = G + i * N;                                                         \
      const T xi = x[i];                                                                       \
      T lane[16] = {0};                                                                        \
      int64_t j = 0;                                                                           \
      for (; j + 16 <= N; j += 16)                                                             \
        for (int l = 0; l < 16; l++) {                                                         \
          lane[l] += g[j + l] * y[j + l];                                                      \
          dy[j + l] += xi * g[j + l];                                                          \
        }                                                                                      \
      T s = 0;                                                                                 \
      for (; j < N; j++) s += g[j] * y[j], dy[j] += xi * g[j];                                 \
      for (int l = 0; l < 16; l++) s += lane[l];                                               \
      dx[i] = s;                                                                               \
    }                                                                                          \
  }                                                                                            \
  OPF_VEC static void add_to_##sfx(T *restrict dst, const T *restrict src, int64_t n) {        \
    for (int64_t k = 0; k < n; k++) dst[k] += src[k];                                          \
  }
LIN_TILES(float, f32)
LIN_TILES(double, f64)

/* One destination tile of opf_lin_transpose_add. */
static void tadd_tile(opf_dtype dt, int64_t bi, int64_t bj, double alpha, const void *x,
                      int64_t ldx, double beta, const void *y, int64_t ldy, void *d, int64_t ldd) {
  if (dt == OPF_F32)
    tile_set_f32(bi, bj, (float)alpha, x, ldx, (float)beta, y, ldy, d, ldd);
  else
    tile_set_f64(bi, bj, alpha, x, ldx, beta, y, ldy, d, ldd);
}

void opf_lin_transpose_add(opf_dtype dt, int64_t n, int64_t m, double alpha, const void *X,
                           int64_t ldx, double beta, const void *Y, int64_t ldy, void *D,
                           int64_t ldd) {
  const size_t es = opf_dtype_size(dt);
  const int64_t nbi = (n + LIN_TB - 1) / LIN_TB, nbj = (m + LIN_TB - 1) / LIN_TB;
#pragma omp parallel for collapse(2) schedule(static) if (n * m > OPF_PAR_MIN)
  for (int64_t bI = 0; bI < nbi; bI++)
    for (int64_t bJ = 0; bJ < nbj; bJ++) {
      const int64_t i0 = bI * LIN_TB, j0 = bJ * LIN_TB;
      const int64_t bi = n - i0 < LIN_TB ? n - i0 : LIN_TB, bj = m - j0 < LIN_TB ? m - j0 : LIN_TB;
      tadd_tile(dt, bi, bj, alpha, (const char *)X + (size_t)(j0 * ldx + i0) * es, ldx, beta,
                Y ? (const char *)Y + (size_t)(i0 * ldy + j0) * es : NULL, ldy,
                (char *)D + (size_t)(i0 * ldd + j0) * es, ldd);
    }
}

/* ---- matmul-shaped cases (dot, batch_dot, linalg_gemm) ---- */

void opf_lin_mm_of(const opf_case *c, lin_mm *m, int64_t *batch) {
  const opf_tensor *a = &c->in[0], *b = &c->in[1];
  int r = a->ndim, ta = c->p[0] != 0, tb = c->p[1] != 0;
  m->dt = c->dtype;
  m->ta = ta, m->tb = tb;
  m->M = a->shape[r - (ta ? 1 : 2)];
  m->K = a->shape[r - (ta ? 2 : 1)];
  m->N = b->shape[r - (tb ? 2 : 1)];
  *batch = r == 3 ? a->shape[0] : 1;
}

int opf_lin_mm_infer(opf_case *c, int rank) {
  const opf_tensor *a = &c->in[0], *b = &c->in[1];
  char sa[96], sb[96];
  const char *what = rank == 2 ? "a (M,K) and b (K,N) matrices" : "a (B,M,K) and b (B,K,N)";
  if (a->ndim < 0 || b->ndim < 0)
    return opf_case_error(c, OPF_EINVAL, "needs both inputs: %s (e.g. a=%s b=%s)", what,
                          rank == 2 ? "1024x1024" : "32x128x64", rank == 2 ? "1024x1024" : "32x64x128");
  if (a->ndim != rank || b->ndim != rank)
    return opf_case_error(c, OPF_EINVAL, "needs %s, got a=%s b=%s", what,
                          opf_shape_str(a, sa, sizeof sa), opf_shape_str(b, sb, sizeof sb));
  if (rank == 3 && a->shape[0] != b->shape[0])
    return opf_case_error(c, OPF_EINVAL, "batch sizes differ: a=%s b=%s",
                          opf_shape_str(a, sa, sizeof sa), opf_shape_str(b, sb, sizeof sb));
  int ta = c->p[0] != 0, tb = c->p[1] != 0;
  int64_t kb = b->shape[rank - (tb ? 1 : 2)];
  lin_mm m;
  int64_t batch;
  opf_lin_mm_of(c, &m, &batch);
  if (m.K != kb)
    return opf_case_error(c, OPF_EINVAL,
                          "inner dimensions differ: a=%s%s has K=%lld, b=%s%s has K=%lld",
                          opf_shape_str(a, sa, sizeof sa), ta ? " (transpose_a)" : "",
                          (long long)m.K, opf_shape_str(b, sb, sizeof sb),
                          tb ? " (transpose_b)" : "", (long long)kb);
  int rc;
  if ((rc = lin_check_int(c, "M", m.M)) || (rc = lin_check_int(c, "N", m.N)) ||
      (rc = lin_check_int(c, "K", m.K)))
    return rc;
  int64_t shape[3] = {batch, m.M, m.N};
  opf_set_out(c, 0, c->dtype, rank, shape + (3 - rank));
  return OPF_OK;
}

int opf_lin_square(opf_case *c, int i, int64_t *n) {
  const opf_tensor *a = &c->in[i];
  char s[96];
  if (a->ndim != 2 || a->shape[0] != a->shape[1])
    return opf_case_error(c, OPF_EINVAL, "needs a square matrix %s (N,N), got %s=%s",
                          c->op->in[i].name, c->op->in[i].name,
                          a->ndim < 0 ? "none" : opf_shape_str(a, s, sizeof s));
  *n = a->shape[0];
  return lin_check_int(c, "N", *n);
}

/* Diagonal tile (b,b) at a (leading dimension n) for MIRROR and FOLD, element by element. */
static void tri_diag_tile(opf_dtype dt, lin_tri_op op, int64_t b, void *a, int64_t n) {
  for (int64_t i = 0; i < b; i++)
    for (int64_t j = i + 1; j < b; j++) {
      const int64_t lo = j * n + i, up = i * n + j; /* (j,i) below, (i,j) above */
      if (op == LIN_TRI_MIRROR) {
        lin_set(dt, a, up, lin_get(dt, a, lo));
      } else {
        lin_set(dt, a, lo, lin_get(dt, a, lo) + lin_get(dt, a, up));
        lin_set(dt, a, up, 0);
      }
    }
}

/* Rows [lo, hi) of LIN_TRI_KEEP. */
static void tri_keep_rows(opf_dtype dt, int64_t lo, int64_t hi, int64_t n, void *a, int lower,
                          double s, double sd) {
  const size_t es = opf_dtype_size(dt);
  for (int64_t i = lo; i < hi; i++) {
    char *row = (char *)a + (size_t)(i * n) * es;
    const int64_t k0 = lower ? 0 : i + 1, k1 = lower ? i : n; /* the kept strict part */
    if (s != 1) {
      if (dt == OPF_F32) row_scale_f32((float *)row + k0, k1 - k0, (float)s);
      else row_scale_f64((double *)row + k0, k1 - k0, s);
    }
    if (sd != 1) lin_set(dt, row, i, sd * lin_get(dt, row, i));
    if (lower) memset(row + (size_t)(i + 1) * es, 0, (size_t)(n - i - 1) * es);
    else memset(row, 0, (size_t)i * es);
  }
}

void opf_lin_tri(opf_dtype dt, lin_tri_op op, int64_t n, void *a, int lower, double s, double sd) {
  const size_t es = opf_dtype_size(dt);
  if (op == LIN_TRI_KEEP) {
#pragma omp parallel if (n * n > OPF_PAR_MIN)
    {
      /* rows of a triangle carry unequal work: interleave chunks of 16 rows */
      const int nt = omp_get_num_threads(), t = omp_get_thread_num();
      for (int64_t r = (int64_t)t * 16; r < n; r += (int64_t)nt * 16)
        tri_keep_rows(dt, r, r + 16 < n ? r + 16 : n, n, a, lower, s, sd);
    }
    return;
  }
  const int64_t nb = (n + LIN_TB - 1) / LIN_TB;
  /* Tile pairs (I,J), I > J: the lower tile (I,J) and the upper tile (J,I). */
#pragma omp parallel for schedule(dynamic, 1) if (n * n > OPF_PAR_MIN)
  for (int64_t bI = 0; bI < nb; bI++) {
    const int64_t i0 = bI * LIN_TB, bi = n - i0 < LIN_TB ? n - i0 : LIN_TB;
    char *diag = (char *)a + (size_t)(i0 * n + i0) * es;
    tri_diag_tile(dt, op, bi, diag, n);
    for (int64_t bJ = 0; bJ < bI; bJ++) {
      const int64_t j0 = bJ * LIN_TB;
      char *low = (char *)a + (size_t)(i0 * n + j0) * es; /* (bi, LIN_TB) */
      char *up = (char *)a + (size_t)(j0 * n + i0) * es;  /* (LIN_TB, bi) */
      if (op == LIN_TRI_MIRROR) {
        tadd_tile(dt, LIN_TB, bi, 1.0, low, n, 0.0, NULL, 0, up, n);
        continue;
      }
      if (dt == OPF_F32) tile_acc_f32(bi, LIN_TB, (const float *)up, n, (float *)low, n);
      else tile_acc_f64(bi, LIN_TB, (const double *)up, n, (double *)low, n);
      for (int64_t r = 0; r < LIN_TB; r++) memset(up + (size_t)(r * n) * es, 0, (size_t)bi * es);
    }
  }
}

/* Panel height of opf_lin_gemm_tri: about n/8 rows (computing (P+1)/2P of the full product,
 * 56% for 8 panels) but at least 128, below which OpenBLAS's GEMM loses efficiency. */
static int64_t tri_panel(int64_t n) {
  int64_t p = (n / 8 + 63) / 64 * 64;
  return p < 128 ? 128 : p;
}

void opf_lin_gemm_tri(opf_dtype dt, int lower, int ta, int tb, int64_t n, int64_t k, double alpha,
                      const void *A, int64_t lda, const void *B, int64_t ldb, void *C) {
  const size_t es = opf_dtype_size(dt);
  const int64_t nb = tri_panel(n);
  for (int64_t r0 = 0; r0 < n; r0 += nb) {
    const int64_t r1 = r0 + nb < n ? r0 + nb : n;
    /* rows [r0, r1) of op(A); columns [c0, c1) of op(B) */
    const int64_t c0 = lower ? 0 : r0, c1 = lower ? r1 : n;
    const char *a = (const char *)A + (size_t)(ta ? r0 : r0 * lda) * es;
    const char *b = (const char *)B + (size_t)(tb ? c0 * ldb : c0) * es;
    lin_gemm_ab(dt, ta, tb, r1 - r0, c1 - c0, k, alpha, a, lda, b, ldb, 0.0,
                (char *)C + (size_t)(r0 * n + c0) * es, n);
  }
  opf_lin_tri(dt, LIN_TRI_KEEP, n, C, lower, 1.0, 1.0);
}

/* ---- row writer: threaded, streaming past the cache when large ---- */

typedef struct {
  lin_rows_fn fn;
  const void *ctx;
  int64_t C;
  size_t es;
} rows_gen;

/* cr_gen_fn over elements [lo, hi) of an (R,C) matrix: a partial first row, the whole rows,
 * a partial last row, so the row function sees long runs even when C is small. */
static void rows_gen_fn(const void *p, int64_t lo, int64_t hi, void *dst) {
  const rows_gen *g = p;
  char *d = dst;
  int64_t r = lo / g->C, c = lo % g->C;
  if (c) {
    const int64_t c1 = g->C < c + (hi - lo) ? g->C : c + (hi - lo);
    g->fn(g->ctx, r, r + 1, c, c1, d);
    d += (size_t)(c1 - c) * g->es, lo += c1 - c, r++;
  }
  const int64_t full = (hi - lo) / g->C;
  if (full) {
    g->fn(g->ctx, r, r + full, 0, g->C, d);
    d += (size_t)(full * g->C) * g->es, lo += full * g->C, r += full;
  }
  if (lo < hi) g->fn(g->ctx, r, r + 1, 0, hi - lo, d);
}

void opf_lin_write_rows(opf_dtype dt, int64_t R, int64_t C, void *out, lin_rows_fn fn,
                        const void *ctx) {
  if (R == 0 || C == 0) return;
  opf_tensor t;
  const int64_t n = R * C;
  opf_tensor_set_shape(&t, dt, 1, &n);
  t.data = out;
  t.nbytes = (size_t)n * opf_dtype_size(dt);
  rows_gen g = {fn, ctx, C, opf_dtype_size(dt)};
  cr_write(&t, rows_gen_fn, &g, OPF_PAR_MIN, cr_large(&t));
}

/* ---- per-thread partial sums ---- */

int opf_lin_acc_slots(void) { return omp_get_max_threads(); }

size_t opf_lin_acc_ws(opf_dtype dt, const lin_accs *a) {
  int64_t per = 0;
  for (int i = 0; i < a->n; i++) per += a->len[i];
  return (size_t)(opf_lin_acc_slots() - 1) * (size_t)per * opf_dtype_size(dt);
}

void opf_lin_accumulate(opf_dtype dt, int64_t rows, int64_t row_elems, const lin_accs *a,
                        void *ws, lin_acc_fn fn, const void *ctx) {
  const size_t es = opf_dtype_size(dt);
  int64_t per = 0;
  for (int i = 0; i < a->n; i++) per += a->len[i];
  int nt = omp_get_max_threads();
  if (nt > opf_lin_acc_slots()) nt = opf_lin_acc_slots(); /* the workspace's slots */
  if (rows * row_elems < OPF_PAR_MIN || nt > rows) nt = 1;
  for (int i = 0; i < a->n; i++) memset(a->dst[i], 0, (size_t)a->len[i] * es);
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    void *acc[LIN_MAX_ACC];
    char *slot = t ? (char *)ws + (size_t)((t - 1) * per) * es : NULL;
    for (int i = 0; i < a->n; i++) {
      acc[i] = t ? slot : a->dst[i];
      if (t) slot += (size_t)a->len[i] * es;
    }
    if (t) memset((char *)ws + (size_t)((t - 1) * per) * es, 0, (size_t)per * es);
    fn(ctx, rows * t / n, rows * (t + 1) / n, acc);
#pragma omp barrier
    /* thread t adds every slot into its share of each accumulator */
    int64_t off = 0;
    for (int i = 0; i < a->n; i++) {
      const int64_t k0 = a->len[i] * t / n, k1 = a->len[i] * (t + 1) / n;
      for (int s = 1; s < n; s++) {
        const char *src = (const char *)ws + (size_t)((s - 1) * per + off + k0) * es;
        char *dst = (char *)a->dst[i] + (size_t)k0 * es;
        if (dt == OPF_F32) add_to_f32((float *)dst, (const float *)src, k1 - k0);
        else add_to_f64((double *)dst, (const double *)src, k1 - k0);
      }
      off += a->len[i];
    }
  }
}

/* ---- outer products ---- */

typedef struct {
  opf_dtype dt;
  int64_t incx;
  double alpha;
  const void *x, *y;
} outer_ctx;

static void outer_block(const void *p, int64_t r0, int64_t r1, int64_t c0, int64_t c1, void *dst) {
  const outer_ctx *t = p;
  if (t->dt == OPF_F32) outer_rows_f32(r0, r1, c0, c1, (float)t->alpha, t->x, t->incx, t->y, dst);
  else outer_rows_f64(r0, r1, c0, c1, t->alpha, t->x, t->incx, t->y, dst);
}

void opf_lin_outer(opf_dtype dt, int64_t M, int64_t N, double alpha, const void *x, int64_t incx,
                   const void *y, void *out) {
  outer_ctx t = {dt, incx, alpha, x, y};
  opf_lin_write_rows(dt, M, N, out, outer_block, &t);
}

typedef struct {
  opf_dtype dt;
  int64_t N;
  const void *G, *x, *y;
  void *dx;
} outer_bwd_ctx;

static void outer_bwd_range(const void *p, int64_t lo, int64_t hi, void *const *acc) {
  const outer_bwd_ctx *t = p;
  if (t->dt == OPF_F32) outer_bwd_rows_f32(lo, hi, t->N, t->G, t->x, t->y, t->dx, acc[0]);
  else outer_bwd_rows_f64(lo, hi, t->N, t->G, t->x, t->y, t->dx, acc[0]);
}

void opf_lin_outer_backward(opf_dtype dt, int64_t M, int64_t N, const void *G, const void *x,
                            const void *y, void *dx, void *dy, void *ws) {
  if (N < 16) { /* rows shorter than a vector: OpenBLAS's two GEMVs walk G faster */
    lin_gemv(dt, 0, M, N, 1.0, G, N, y, 1, 0.0, dx, 1);
    lin_gemv(dt, 1, M, N, 1.0, G, N, x, 1, 0.0, dy, 1);
    return;
  }
  outer_bwd_ctx t = {dt, N, G, x, y, dx};
  lin_accs a = {1, {dy}, {N}};
  opf_lin_accumulate(dt, M, N, &a, ws, outer_bwd_range, &t);
}

typedef struct {
  opf_dtype dt;
  double s;
  const void *x;
  void *y;
} scale_ctx;

static void scale_range(int64_t lo, int64_t hi, void *p) {
  const scale_ctx *t = p;
  if (t->dt == OPF_F32) scale_f32(hi - lo, (float)t->s, (const float *)t->x + lo, (float *)t->y + lo);
  else scale_f64(hi - lo, t->s, (const double *)t->x + lo, (double *)t->y + lo);
}

void opf_lin_scale(opf_dtype dt, int64_t n, double s, const void *x, void *y) {
  scale_ctx t = {dt, s, x, y};
  opf_parallel_range(n, OPF_PAR_MIN, scale_range, &t);
}

/* ---- fill hooks ---- */

static int64_t fill_n(const opf_case *c, int i) { return c->in[i].shape[c->in[i].ndim - 1]; }

int opf_lin_fill_spd(opf_case *c, int i, opf_rng *r) {
  (void)r;
  opf_tensor *t = &c->in[i];
  const int64_t n = fill_n(c, i);
  opf_fill_uniform(t, c->seed, (uint64_t)i, -1, 1);
  opf_lin_tri(t->dtype, LIN_TRI_MIRROR, n, t->data, 1, 1, 1);
  for (int64_t k = 0; k < n; k++)
    lin_set(t->dtype, t->data, k * n + k, (double)n + lin_get(t->dtype, t->data, k * n + k));
  return OPF_OK;
}

int opf_lin_fill_tri(opf_case *c, int i, opf_rng *r) {
  (void)r;
  opf_tensor *t = &c->in[i];
  const int64_t n = fill_n(c, i);
  const double a = 0.5 / sqrt(n > 0 ? (double)n : 1.0);
  opf_fill_uniform(t, c->seed, (uint64_t)i, -a, a);
  for (int64_t k = 0; k < n; k++) /* [-a, a) onto [1, 2) */
    lin_set(t->dtype, t->data, k * n + k, 1.5 + 0.5 * lin_get(t->dtype, t->data, k * n + k) / a);
  return OPF_OK;
}

int opf_lin_fill_factor(opf_case *c, int i, opf_rng *r) {
  opf_lin_fill_tri(c, i, r);
  opf_lin_tri(c->in[i].dtype, LIN_TRI_KEEP, fill_n(c, i), c->in[i].data, 1, 1, 1);
  return OPF_OK;
}

/* scale (P + E): P a random permutation (Fisher-Yates on r), E uniform in [-a, a). */
static int fill_perm_noise(opf_case *c, int i, opf_rng *r, double scale) {
  opf_tensor *t = &c->in[i];
  const int64_t n = fill_n(c, i);
  const double a = 0.5 / sqrt(n > 0 ? (double)n : 1.0);
  opf_fill_uniform(t, c->seed, (uint64_t)i, -a * scale, a * scale);
  int64_t *perm = opf_alloc((size_t)(n > 0 ? n : 1) * sizeof *perm);
  if (!perm) return opf_case_error(c, OPF_ENOMEM, "no memory for a permutation of %lld", (long long)n);
  for (int64_t k = 0; k < n; k++) perm[k] = k;
  for (int64_t k = n - 1; k > 0; k--) {
    int64_t j = (int64_t)(opf_rng_u64(r) % (uint64_t)(k + 1)), v = perm[k];
    perm[k] = perm[j], perm[j] = v;
  }
  for (int64_t k = 0; k < n; k++) {
    const int64_t e = k * n + perm[k];
    lin_set(t->dtype, t->data, e, scale + lin_get(t->dtype, t->data, e));
  }
  opf_free(perm);
  return OPF_OK;
}

int opf_lin_fill_general(opf_case *c, int i, opf_rng *r) { return fill_perm_noise(c, i, r, 1.0); }
int opf_lin_fill_logdet(opf_case *c, int i, opf_rng *r) { return fill_perm_noise(c, i, r, 2.0); }

/* ---- reference helpers ---- */

int opf_lin_ref_nomem(opf_case *c, int64_t n) {
  return opf_case_error(c, OPF_ENOMEM, "reference: no memory for a %lldx%lld matrix",
                        (long long)n, (long long)n);
}

double *opf_lin_ref_load(const opf_tensor *t) {
  const int64_t n = opf_numel(t);
  double *a = opf_alloc((size_t)(n > 0 ? n : 1) * sizeof *a);
  if (a)
    for (int64_t k = 0; k < n; k++) a[k] = lin_get(t->dtype, t->data, k);
  return a;
}

double opf_lin_ref_lu(double *a, int64_t n, int64_t *piv) {
  double sign = 1;
  for (int64_t k = 0; k < n; k++) {
    int64_t p = k; /* partial pivoting: the largest magnitude in column k at or below row k */
    for (int64_t i = k + 1; i < n; i++)
      if (fabs(a[i * n + k]) > fabs(a[p * n + k])) p = i;
    piv[k] = p;
    if (p != k) {
      sign = -sign;
      for (int64_t j = 0; j < n; j++) {
        double v = a[k * n + j];
        a[k * n + j] = a[p * n + j], a[p * n + j] = v;
      }
    }
    if (a[k * n + k] == 0) continue; /* singular: U has a zero pivot */
    for (int64_t i = k + 1; i < n; i++) {
      double l = a[i * n + k] /= a[k * n + k];
      for (int64_t j = k + 1; j < n; j++) a[i * n + j] -= l * a[k * n + j];
    }
  }
  return sign;
}
