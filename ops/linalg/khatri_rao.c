/* khatri_rao.c: the column-wise Kronecker (Khatri-Rao) product of two or three matrices with
 * the same number of columns K: out[(i*J + j)*L + l][k] = a[i][k] b[j][k] c[l][k], shape
 * (I*J*L, K), and its gradients. Memory-bound: the forward writes the output once in threaded
 * vectorised rows (flat blocks when rows are narrow), streaming past the cache when large; the
 * backward reads G once and accumulates every input's gradient in one pass (per-thread partial
 * sums, reduced at the end). */
#include "linalg/linalg.h"

enum { KR_A = 0, KR_B = 1, KR_C = 2 };

typedef struct {
  opf_dtype dt;
  int m;                 /* inputs: 2 or 3 */
  int64_t NI, NJ, NL, K; /* rows of a, b, c (NL = 1 without c), columns */
  int64_t R;             /* output rows NI*NJ*NL */
} kr_geom;

static kr_geom kr_of(const opf_case *c) {
  kr_geom g = {c->dtype, c->present[KR_C] ? 3 : 2, c->in[KR_A].shape[0], c->in[KR_B].shape[0],
               c->present[KR_C] ? c->in[KR_C].shape[0] : 1, c->in[KR_A].shape[1], 0};
  g.R = g.NI * g.NJ * g.NL;
  return g;
}

/* Rows [lo, hi) of the product, walking (i, j, l) without a division per row; also the
 * accumulation of the gradients over the same rows into da, db, dc (dc NULL without c). */
#define KR_KERNELS(T, sfx)                                                                     \
  OPF_VEC static void kr_fwd_##sfx(const kr_geom *g, int64_t r0, int64_t r1, int64_t k0,       \
                                   int64_t k1, const T *restrict a, const T *restrict b,       \
                                   const T *restrict cc, T *restrict dst) {                    \
    const int64_t K = g->K, w = k1 - k0;                                                       \
    int64_t l = r0 % g->NL, j = r0 / g->NL % g->NJ, i = r0 / (g->NL * g->NJ);                  \
    for (int64_t r = r0; r < r1; r++) {                                                        \
      const T *ar = a + i * K + k0, *br = b + j * K + k0;                                      \
      T *o = dst + (r - r0) * w;                                                               \
      if (cc) {                                                                                \
        const T *cr = cc + l * K + k0;                                                         \
        for (int64_t k = 0; k < w; k++) o[k] = ar[k] * br[k] * cr[k];                          \
      } else {                                                                                 \
        for (int64_t k = 0; k < w; k++) o[k] = ar[k] * br[k];                                  \
      }                                                                                        \
      if (++l == g->NL && (l = 0, ++j == g->NJ)) j = 0, i++;                                   \
    }                                                                                          \
  }                                                                                            \
  OPF_VEC static void kr_bwd_##sfx(const kr_geom *g, int64_t lo, int64_t hi, const T *restrict a, \
                                   const T *restrict b, const T *restrict cc,                  \
                                   const T *restrict gr0, T *restrict da, T *restrict db,      \
                                   T *restrict dc) {                                           \
    const int64_t K = g->K;                                                                    \
    int64_t l = lo % g->NL, j = lo / g->NL % g->NJ, i = lo / (g->NL * g->NJ);                  \
    for (int64_t r = lo; r < hi; r++) {                                                        \
      const T *ar = a + i * K, *br = b + j * K, *gr = gr0 + r * K;                             \
      T *dar = da + i * K, *dbr = db + j * K;                                                  \
      if (cc) {                                                                                \
        const T *cr = cc + l * K;                                                              \
        T *dcr = dc + l * K;                                                                   \
        for (int64_t k = 0; k < K; k++) {                                                      \
          const T gc = gr[k] * cr[k];                                                          \
          dar[k] += gc * br[k];                                                                \
          dbr[k] += gc * ar[k];                                                                \
          dcr[k] += gr[k] * ar[k] * br[k];                                                     \
        }                                                                                      \
      } else {                                                                                 \
        for (int64_t k = 0; k < K; k++) {                                                      \
          dar[k] += gr[k] * br[k];                                                             \
          dbr[k] += gr[k] * ar[k];                                                             \
        }                                                                                      \
      }                                                                                        \
      if (++l == g->NL && (l = 0, ++j == g->NJ)) j = 0, i++;                                   \
    }                                                                                          \
  }
KR_KERNELS(float, f32)
KR_KERNELS(double, f64)

/* ---- narrow rows (K < KR_WIDE): flat blocks instead of rows ----
 * The rows sharing a prefix (i, or (i, j) with c) form one contiguous block of the output (and
 * of G), the last input X (b, or c) times the prefix vector v (a[i], or a[i] b[j]) repeated
 * every K elements. Rows of 16 elements cost a loop set-up each; a flat loop against v tiled
 * to TL >= KR_WIDE elements (a multiple of K) runs at memory speed. */
#define KR_WIDE 256
#define KR_TILE_MAX (2 * KR_WIDE)

/* Tile length: whole copies of v, at least KR_WIDE elements, at most the block (nx rows). */
static int64_t kr_tl(int64_t K, int64_t nx) {
  int64_t reps = (KR_WIDE + K - 1) / K;
  return K * (reps < nx ? reps : nx);
}

#define KR_NARROW(T, sfx)                                                                      \
  /* out[e] = x[e] tile[e % tl] */                                                             \
  OPF_VEC static void kr_tmul_##sfx(const T *restrict x, const T *restrict tile, int64_t tl,   \
                                    int64_t n, T *restrict out) {                              \
    for (int64_t e0 = 0; e0 < n; e0 += tl) {                                                   \
      const int64_t len = n - e0 < tl ? n - e0 : tl;                                           \
      for (int64_t e = 0; e < len; e++) out[e0 + e] = x[e0 + e] * tile[e];                     \
    }                                                                                          \
  }                                                                                            \
  /* dx[e] += g[e] tile[e % tl]; acc[e % tl] += g[e] x[e] */                                   \
  OPF_VEC static void kr_tbwd_##sfx(const T *restrict g, const T *restrict x,                  \
                                    const T *restrict tile, int64_t tl, int64_t n,             \
                                    T *restrict dx, T *restrict acc) {                         \
    for (int64_t e0 = 0; e0 < n; e0 += tl) {                                                   \
      const int64_t len = n - e0 < tl ? n - e0 : tl;                                           \
      for (int64_t e = 0; e < len; e++) {                                                      \
        dx[e0 + e] += g[e0 + e] * tile[e];                                                     \
        acc[e] += g[e0 + e] * x[e0 + e];                                                       \
      }                                                                                        \
    }                                                                                          \
  }                                                                                            \
  /* the prefix vector of block p, tiled to tl; returns the block's (i, j) */                  \
  static void kr_prefix_##sfx(const kr_geom *g, int64_t p, const T *a, const T *b, int64_t tl, \
                              T *tile, int64_t *i, int64_t *j) {                               \
    const int64_t K = g->K;                                                                    \
    *i = g->m == 3 ? p / g->NJ : p, *j = g->m == 3 ? p % g->NJ : 0;                            \
    for (int64_t k = 0; k < K; k++) tile[k] = a[*i * K + k] * (g->m == 3 ? b[*j * K + k] : 1); \
    for (int64_t e0 = K; e0 < tl; e0 += K) memcpy(tile + e0, tile, (size_t)K * sizeof(T));     \
  }                                                                                            \
  /* whole rows [r0, r1) into dst */                                                           \
  static void kr_fwd_narrow_##sfx(const kr_geom *g, int64_t r0, int64_t r1, const T *a,        \
                                  const T *b, const T *cc, T *dst) {                           \
    const int64_t K = g->K, nx = g->m == 3 ? g->NL : g->NJ;                                    \
    const T *x = g->m == 3 ? cc : b;                                                           \
    T tile[KR_TILE_MAX];                                                                       \
    for (int64_t r = r0; r < r1;) {                                                            \
      const int64_t p = r / nx, l0 = r % nx, l1 = nx < l0 + (r1 - r) ? nx : l0 + (r1 - r);     \
      const int64_t tl = kr_tl(K, l1 - l0);                                                    \
      int64_t i, j;                                                                            \
      kr_prefix_##sfx(g, p, a, b, tl, tile, &i, &j);                                           \
      kr_tmul_##sfx(x + l0 * K, tile, tl, (l1 - l0) * K, dst + (r - r0) * K);                  \
      r += l1 - l0;                                                                            \
    }                                                                                          \
  }                                                                                            \
  /* rows [lo, hi) of G into the accumulators da, db (, dc) */                                 \
  static void kr_bwd_narrow_##sfx(const kr_geom *g, int64_t lo, int64_t hi, const T *a,        \
                                  const T *b, const T *cc, const T *G, T *da, T *db, T *dc) {  \
    const int64_t K = g->K, nx = g->m == 3 ? g->NL : g->NJ;                                    \
    const T *x = g->m == 3 ? cc : b;                                                           \
    T *dx = g->m == 3 ? dc : db;                                                               \
    T tile[KR_TILE_MAX], acc[KR_TILE_MAX];                                                     \
    for (int64_t r = lo; r < hi;) {                                                            \
      const int64_t p = r / nx, l0 = r % nx, l1 = nx < l0 + (hi - r) ? nx : l0 + (hi - r);     \
      const int64_t tl = kr_tl(K, l1 - l0);                                                    \
      int64_t i, j;                                                                            \
      kr_prefix_##sfx(g, p, a, b, tl, tile, &i, &j);                                           \
      memset(acc, 0, (size_t)tl * sizeof(T));                                                  \
      kr_tbwd_##sfx(G + r * K, x + l0 * K, tile, tl, (l1 - l0) * K, dx + l0 * K, acc);         \
      for (int64_t e0 = K; e0 < tl; e0 += K) /* dv: acc folded onto its first K */             \
        for (int64_t k = 0; k < K; k++) acc[k] += acc[e0 + k];                                 \
      for (int64_t k = 0; k < K; k++) {                                                        \
        if (g->m == 3) {                                                                       \
          da[i * K + k] += acc[k] * b[j * K + k];                                              \
          db[j * K + k] += acc[k] * a[i * K + k];                                              \
        } else {                                                                               \
          da[i * K + k] += acc[k];                                                             \
        }                                                                                      \
      }                                                                                        \
      r += l1 - l0;                                                                            \
    }                                                                                          \
  }
KR_NARROW(float, f32)
KR_NARROW(double, f64)

/* The gradients as opf_lin_accumulate's accumulators (dst NULL before backward). */
static lin_accs kr_accs(const opf_case *c, const kr_geom *g) {
  lin_accs a = {g->m, {c->gin[KR_A].data, c->gin[KR_B].data, g->m == 3 ? c->gin[KR_C].data : NULL},
                {g->NI * g->K, g->NJ * g->K, g->NL * g->K}};
  return a;
}

static int kr_infer(opf_case *c) {
  char sa[96], sb[96];
  if (c->present[KR_C] && c->in[KR_C].ndim < 0) c->present[KR_C] = 0; /* omitted: two inputs */
  const opf_tensor *a = &c->in[KR_A];
  for (int i = 0; i < 3; i++) {
    const opf_tensor *t = &c->in[i];
    if (!c->present[i]) continue;
    if (t->ndim != 2)
      return opf_case_error(c, OPF_EINVAL, "needs matrices with the same column count, got %s=%s",
                            c->op->in[i].name, t->ndim < 0 ? "none" : opf_shape_str(t, sa, sizeof sa));
    if (t->shape[1] != a->shape[1])
      return opf_case_error(c, OPF_EINVAL, "column counts differ: a=%s, %s=%s",
                            opf_shape_str(a, sa, sizeof sa), c->op->in[i].name,
                            opf_shape_str(t, sb, sizeof sb));
  }
  const kr_geom g = kr_of(c);
  int64_t shape[2] = {g.R, g.K};
  opf_set_out(c, 0, c->dtype, 2, shape);
  const lin_accs acc = kr_accs(c, &g);
  c->ws_bytes = opf_lin_acc_ws(c->dtype, &acc);
  return OPF_OK;
}

typedef struct {
  const opf_case *c;
  kr_geom g;
} kr_ctx;

/* Rows [r0, r1), columns [k0, k1): whole narrow rows as flat blocks, the rest row by row. */
static void kr_fwd_block(const void *p, int64_t r0, int64_t r1, int64_t k0, int64_t k1, void *dst) {
  const kr_ctx *x = p;
  const opf_case *c = x->c;
  const void *a = c->in[KR_A].data, *b = c->in[KR_B].data;
  const void *cc = x->g.m == 3 ? c->in[KR_C].data : NULL;
  const int narrow = x->g.K < KR_WIDE && k0 == 0 && k1 == x->g.K;
  if (x->g.dt == OPF_F32) {
    if (narrow) kr_fwd_narrow_f32(&x->g, r0, r1, a, b, cc, dst);
    else kr_fwd_f32(&x->g, r0, r1, k0, k1, a, b, cc, dst);
  } else {
    if (narrow) kr_fwd_narrow_f64(&x->g, r0, r1, a, b, cc, dst);
    else kr_fwd_f64(&x->g, r0, r1, k0, k1, a, b, cc, dst);
  }
}

static int kr_forward(opf_case *c) {
  const kr_ctx x = {c, kr_of(c)};
  opf_lin_write_rows(c->dtype, x.g.R, x.g.K, c->out[0].data, kr_fwd_block, &x);
  return OPF_OK;
}

static void kr_bwd_range(const void *p, int64_t lo, int64_t hi, void *const *acc) {
  const kr_ctx *x = p;
  const opf_case *c = x->c;
  const void *a = c->in[KR_A].data, *b = c->in[KR_B].data, *g = c->gout[0].data;
  const void *cc = x->g.m == 3 ? c->in[KR_C].data : NULL;
  void *dc = x->g.m == 3 ? acc[2] : NULL;
  if (x->g.K < KR_WIDE) {
    if (x->g.dt == OPF_F32) kr_bwd_narrow_f32(&x->g, lo, hi, a, b, cc, g, acc[0], acc[1], dc);
    else kr_bwd_narrow_f64(&x->g, lo, hi, a, b, cc, g, acc[0], acc[1], dc);
  } else {
    if (x->g.dt == OPF_F32) kr_bwd_f32(&x->g, lo, hi, a, b, cc, g, acc[0], acc[1], dc);
    else kr_bwd_f64(&x->g, lo, hi, a, b, cc, g, acc[0], acc[1], dc);
  }
}

/* One pass over G accumulating all the gradients (per-thread partial sums). */
static int kr_backward(opf_case *c) {
  const kr_ctx x = {c, kr_of(c)};
  const lin_accs acc = kr_accs(c, &x.g);
  for (int i = 0; i < acc.n; i++)
    if (!acc.dst[i])
      return opf_case_error(c, OPF_EKERNEL, "khatri_rao backward needs the gradients of all inputs");
  opf_lin_accumulate(c->dtype, x.g.R, x.g.K, &acc, c->ws, kr_bwd_range, &x);
  return OPF_OK;
}

static int kr_reference(opf_case *c) {
  const kr_geom g = kr_of(c);
  for (int64_t r = 0; r < g.R; r++) {
    const int64_t i = r / (g.NJ * g.NL), j = r / g.NL % g.NJ, l = r % g.NL;
    for (int64_t k = 0; k < g.K; k++) {
      double v = lin_get(g.dt, c->in[KR_A].data, i * g.K + k) *
                 lin_get(g.dt, c->in[KR_B].data, j * g.K + k);
      if (g.m == 3) v *= lin_get(g.dt, c->in[KR_C].data, l * g.K + k);
      lin_set(g.dt, c->out[0].data, r * g.K + k, v);
    }
  }
  return OPF_OK;
}

/* fwd: m-1 multiplies per output element; bwd: per element of G and input, m-1 multiplies and
 * an add: m^2 RK. */
static double kr_flops(const opf_case *c, opf_pass p) {
  const kr_geom g = kr_of(c);
  const double rk = (double)g.R * (double)g.K;
  return opf_pass_sum(p, (g.m - 1) * rk, g.m * g.m * rk);
}

/* fwd reads the inputs and writes the output; bwd reads G and the inputs, writes their
 * gradients. */
static double kr_bytes(const opf_case *c, opf_pass p) {
  const kr_geom g = kr_of(c);
  const double es = (double)opf_dtype_size(g.dt), rk = (double)g.R * (double)g.K;
  const double ins = (double)(g.NI + g.NJ + (g.m == 3 ? g.NL : 0)) * (double)g.K;
  return opf_pass_sum(p, (ins + rk) * es, (rk + 2 * ins) * es);
}

OPPERF_OP(khatri_rao) = {
    .abi = OPF_OP_ABI,
    .name = "khatri_rao",
    .category = "linalg",
    .summary = "column-wise Kronecker product of 2 or 3 matrices with equal column counts",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 3,
    .in = {{.name = "a", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "matrix (I,K)"},
           {.name = "b", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "matrix (J,K)"},
           {.name = "c", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF | OPF_IN_OPTIONAL, .lo = -1,
            .hi = 1, .help = "optional third matrix (L,K); omitted: the product of a and b"}},
    .n_out = 1,
    .out = {"out"},
    .shapes = {{"standard", "a=32x1024 b=32x1024"},
               {"skewed", "a=16x1024 b=8x1024 c=8x1024"},
               {"skewed", "a=1024x16 b=1024x16"},
               {"skewed", "a=1x1024 b=1024x1024"},
               {"skewed", "a=1000x10 b=10x10"},
               {"small", "a=2x3 b=4x3"},
               {"small", "a=3x2 b=2x2 c=2x2"},
               {"small", "a=1x5 b=3x5"},
               {"small", "a=4x1 b=1x1 c=3x1"},
               {"test", "a=37x67 b=29x67"},
               {"test", "a=7x129 b=13x129 c=11x129"},
               {"test", "a=11x257 b=13x257"},
               {"large", "a=256x1024 b=256x1024"},
               {"huge", "a=2048x1024 b=1024x1024"}},
    .infer = kr_infer,
    .forward = kr_forward,
    .backward = kr_backward,
    .reference = kr_reference,
    .flops = kr_flops,
    .bytes = kr_bytes,
};
