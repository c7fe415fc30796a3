/* conv2d.c: 2-D convolution, NCHW, with stride, padding, dilation and groups. Forward is
 * im2col + OpenBLAS GEMM in L2-sized blocks of output rows (1x1 convolutions use the image
 * directly); backward dw = g col(x)^T, dx = col2im(w^T g), db = sums of g. Threads take
 * whole images or equal row ranges of them, with single-threaded GEMMs. */
#include <string.h>

#include "conv_common.h"
#include "linalg/linalg.h" /* lin_gemm: the project's dtype-dispatching GEMM */

enum { IN_X, IN_W, IN_B };
enum { P_FILTERS, P_KERNEL, P_KH, P_KW, P_STRIDE, P_PAD, P_DILATION, P_GROUPS };

/* Bytes of col rows plus output rows per block of output rows: the block stays in the
 * core's L2 between im2col and the GEMM. On Zen5 (1 MB L2) 256 KB - 2 MB measured alike for
 * the standard shape; 1 MB keeps the blocks of skinny-K convolutions (C = 3) wide. */
#define CONV_BLOCK_BYTES ((int64_t)1 << 20)

/* Resolved geometry of a case and its work split. */
typedef struct conv_ctx {
  opf_case *c;
  nn_geom g;
  int64_t F, groups, Cg, Fg;
  int64_t KK, Kc, Kall, P; /* taps, col rows per group / in all, output plane size */
  int64_t rows;            /* output rows per block */
  int64_t R;               /* work items (row ranges) per image */
  int nt;                  /* threads */
  int fast;                /* 1x1, stride 1, no padding: the image is its own col matrix */
  size_t esz;
} conv_ctx;

#define CONV_LANES 32

/* ---- dtype kernels: one template, instantiated for float and double. They take untyped
 * pointers (so one table of function pointers serves both) and name them typed inside. ---- */
#define CONV_KERNELS(T, S)                                                                     \
  /* The col block of one image for output rows [oh0, oh1): row (c, kh, kw) holds           \
   * x[c, oh*sh-ph+kh*dh, ow*sw-pw+kw*dw] (0 in the padding); ld = block width. */           \
  OPF_VEC static void im2col_##S(void *col_, const void *x_, const nn_geom *g, int64_t oh0,   \
                                 int64_t oh1) {                                               \
    T *restrict col = col_;                                                                   \
    const T *restrict x = x_;                                                                 \
    int64_t KK = g->KH * g->KW, OW = g->OW, ld = (oh1 - oh0) * OW;                            \
    for (int64_t r = 0; r < g->C * KK; r++) {                                                 \
      int64_t ch = r / KK, kh = r % KK / g->KW, kw = r % g->KW, lo, hi;                       \
      int64_t off = kw * g->dw - g->pw, sw = g->sw;                                           \
      nn_tap_range(g->W, OW, sw, g->pw, kw * g->dw, &lo, &hi);                                \
      const T *xc = x + ch * g->H * g->W;                                                     \
      for (int64_t oh = oh0; oh < oh1; oh++) {                                                \
        T *restrict d = col + r * ld + (oh - oh0) * OW;                                       \
        int64_t ih = oh * g->sh - g->ph + kh * g->dh;                                         \
        if (ih < 0 || ih >= g->H) {                                                           \
          for (int64_t ow = 0; ow < OW; ow++) d[ow] = 0;                                      \
          continue;                                                                           \
        }                                                                                     \
        const T *restrict xr = xc + ih * g->W;                                                \
        for (int64_t ow = 0; ow < lo; ow++) d[ow] = 0;                                        \
        if (sw == 1)                                                                          \
          for (int64_t ow = lo; ow < hi; ow++) d[ow] = xr[ow + off];                          \
        else                                                                                  \
          for (int64_t ow = lo; ow < hi; ow++) d[ow] = xr[ow * sw + off];                     \
        for (int64_t ow = hi; ow < OW; ow++) d[ow] = 0;                                       \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  /* Adds the col block of output rows [oh0, oh1) into rows [ih0, ih1) of dx (every         \
   * channel), gathering per dx row the (kh, kw) rows of col that land on it. */              \
  OPF_VEC static void col2im_##S(void *dx_, const void *col_, const nn_geom *g, int64_t ih0,  \
                                 int64_t ih1, int64_t oh0, int64_t oh1) {                     \
    T *restrict dx = dx_;                                                                     \
    const T *restrict col = col_;                                                             \
    int64_t OW = g->OW, ld = (oh1 - oh0) * OW, sw = g->sw;                                    \
    for (int64_t ch = 0; ch < g->C; ch++)                                                     \
      for (int64_t ih = ih0; ih < ih1; ih++) {                                                \
        T *restrict dr = dx + (ch * g->H + ih) * g->W;                                        \
        for (int64_t kh = 0; kh < g->KH; kh++) {                                              \
          int64_t t = ih + g->ph - kh * g->dh;                                                \
          if (t < 0 || t % g->sh) continue;                                                   \
          int64_t oh = t / g->sh;                                                             \
          if (oh < oh0 || oh >= oh1) continue;                                                \
          for (int64_t kw = 0; kw < g->KW; kw++) {                                            \
            int64_t lo, hi, off = kw * g->dw - g->pw;                                         \
            nn_tap_range(g->W, OW, sw, g->pw, kw * g->dw, &lo, &hi);                          \
            const T *restrict s =                                                             \
                col + ((ch * g->KH + kh) * g->KW + kw) * ld + (oh - oh0) * OW;                \
            if (sw == 1)                                                                      \
              for (int64_t ow = lo; ow < hi; ow++) dr[ow + off] += s[ow];                     \
            else                                                                              \
              for (int64_t ow = lo; ow < hi; ow++) dr[ow * sw + off] += s[ow];                \
          }                                                                                   \
        }                                                                                     \
      }                                                                                       \
  }                                                                                           \
  /* y[f, 0:n] = b[f] for rows of stride ld: the GEMM then accumulates onto the bias with   \
   * beta = 1, which costs no more than the zeroing OpenBLAS does itself for beta = 0. */     \
  OPF_VEC static void bias_fill_##S(void *y_, const void *b_, int64_t F, int64_t n,           \
                                    int64_t ld) {                                             \
    T *restrict y = y_;                                                                       \
    const T *restrict b = b_;                                                                 \
    for (int64_t f = 0; f < F; f++) {                                                         \
      T v = b[f];                                                                             \
      T *restrict r = y + f * ld;                                                             \
      for (int64_t j = 0; j < n; j++) r[j] = v;                                               \
    }                                                                                         \
  }                                                                                           \
  /* db[f] += sum_j g[f, 0:n]; CONV_LANES independent partial sums let the compiler        \
   * vectorise what would otherwise be one serial chain of adds. */                           \
  OPF_VEC static void row_sums_##S(void *db_, const void *g_, int64_t F, int64_t n,           \
                                   int64_t ld) {                                              \
    T *restrict db = db_;                                                                     \
    const T *restrict gr = g_;                                                                \
    for (int64_t f = 0; f < F; f++) {                                                         \
      const T *restrict r = gr + f * ld;                                                      \
      T acc[CONV_LANES] = {0}, s = 0;                                                         \
      int64_t j = 0;                                                                          \
      for (; j + CONV_LANES <= n; j += CONV_LANES)                                            \
        for (int l = 0; l < CONV_LANES; l++) acc[l] += r[j + l];                              \
      for (; j < n; j++) s += r[j];                                                           \
      for (int l = 0; l < CONV_LANES; l++) s += acc[l];                                       \
      db[f] += s;                                                                             \
    }                                                                                         \
  }                                                                                           \
  /* a[i] += b[i] (reduction of the per-thread weight-gradient partials) */                   \
  OPF_VEC static void vadd_##S(void *a_, const void *b_, int64_t n) {                         \
    T *restrict a = a_;                                                                       \
    const T *restrict b = b_;                                                                 \
    for (int64_t i = 0; i < n; i++) a[i] += b[i];                                             \
  }

CONV_KERNELS(float, f32)
CONV_KERNELS(double, f64)

typedef struct conv_kern {
  void (*im2col)(void *col, const void *x, const nn_geom *g, int64_t oh0, int64_t oh1);
  void (*col2im)(void *dx, const void *col, const nn_geom *g, int64_t ih0, int64_t ih1,
                 int64_t oh0, int64_t oh1);
  void (*bias_fill)(void *y, const void *b, int64_t F, int64_t n, int64_t ld);
  void (*row_sums)(void *db, const void *g, int64_t F, int64_t n, int64_t ld);
  void (*vadd)(void *a, const void *b, int64_t n);
} conv_kern;

static const conv_kern conv_kerns[2] = {
    {im2col_f32, col2im_f32, bias_fill_f32, row_sums_f32, vadd_f32},
    {im2col_f64, col2im_f64, bias_fill_f64, row_sums_f64, vadd_f64}};

/* ---- geometry and plan ---- */
static void conv_resolve(opf_case *c, conv_ctx *t) {
  memset(t, 0, sizeof *t);
  const opf_tensor *x = &c->in[IN_X], *w = &c->in[IN_W];
  t->c = c;
  nn_geom *g = &t->g;
  g->N = x->shape[0], g->C = x->shape[1], g->H = x->shape[2], g->W = x->shape[3];
  t->F = w->shape[0], g->KH = w->shape[2], g->KW = w->shape[3];
  g->sh = g->sw = (int64_t)c->p[P_STRIDE];
  g->ph = g->pw = (int64_t)c->p[P_PAD];
  g->dh = g->dw = (int64_t)c->p[P_DILATION];
  g->OH = nn_out_len(g->H, g->KH, g->sh, g->ph, g->dh);
  g->OW = nn_out_len(g->W, g->KW, g->sw, g->pw, g->dw);
  t->groups = (int64_t)c->p[P_GROUPS];
  t->Cg = g->C / t->groups, t->Fg = t->F / t->groups;
  t->KK = g->KH * g->KW, t->Kc = t->Cg * t->KK, t->Kall = g->C * t->KK;
  t->P = g->OH * g->OW;
  t->fast = t->KK == 1 && g->sh == 1 && g->ph == 0;
  t->esz = opf_dtype_size(c->dtype);
  /* Output rows per block: the block's col rows and output rows together stay within
   * CONV_BLOCK_BYTES (at least one row). */
  int64_t row = (t->Kall + t->F) * g->OW * (int64_t)t->esz, r = CONV_BLOCK_BYTES / row;
  t->rows = t->fast ? g->OH : r < 1 ? 1 : r > g->OH ? g->OH : r;
}

static size_t conv_align(size_t b) { return (b + 63) & ~(size_t)63; }

/* Workspace of one thread: a col block, a dw partial and a db partial. */
static size_t conv_slot_bytes(const conv_ctx *t) {
  size_t col = t->fast ? 0 : (size_t)(t->Kall * t->rows * t->g.OW) * t->esz;
  return conv_align(col) + conv_align((size_t)(t->F * t->Kc) * t->esz) +
         conv_align((size_t)t->F * t->esz);
}

static void conv_slot(const conv_ctx *t, int k, void **col, void **dw, void **db) {
  size_t colb = conv_align(t->fast ? 0 : (size_t)(t->Kall * t->rows * t->g.OW) * t->esz);
  char *base = (char *)t->c->ws + (size_t)k * conv_slot_bytes(t);
  *col = base;
  *dw = base + colb;
  *db = base + colb + conv_align((size_t)(t->F * t->Kc) * t->esz);
}

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t r = a % b;
    a = b, b = r;
  }
  return a;
}

/* Threads and work items. Each thread runs whole items with its own col block and
 * single-threaded GEMMs (OpenBLAS's OpenMP build runs serially inside an active parallel
 * region): one fork per call, where threaded GEMMs on one block at a time synchronise the
 * pool on every call and measured 1.5-2x slower. An item is one of R equal row ranges of
 * an image, R = nt / gcd(N, nt), so the N*R items split evenly over the threads even for
 * N = 1 or odd N. */
static void conv_plan(conv_ctx *t) {
  int64_t nt = omp_get_max_threads(), cap = (int64_t)(t->c->ws_bytes / conv_slot_bytes(t));
  double macs = (double)t->g.N * (double)t->F * (double)t->P * (double)t->Kc;
  if (nt > cap) nt = cap;
  if (nt < 1 || macs < OPF_PAR_MIN) nt = 1;
  t->nt = (int)nt;
  t->R = nt / gcd64(t->g.N, nt);
}

/* ---- infer ---- */
static int conv_infer(opf_case *c) {
  nn_geom g = {0};
  int rc = nn_check_nchw(c, IN_X, "conv2d", &g);
  if (rc) return rc;
  int64_t groups = (int64_t)c->p[P_GROUPS];
  opf_tensor *w = &c->in[IN_W], *b = &c->in[IN_B];
  char s1[96], s2[96];
  if (g.C % groups)
    return opf_case_error(c, OPF_EINVAL, "input channels %lld of x %s are not divisible by "
                          "groups=%lld", (long long)g.C, opf_shape_str(&c->in[IN_X], s1, sizeof s1),
                          (long long)groups);
  if (w->ndim < 0) {
    int64_t k = (int64_t)c->p[P_KERNEL];
    int64_t shape[4] = {(int64_t)c->p[P_FILTERS], g.C / groups,
                        c->p[P_KH] > 0 ? (int64_t)c->p[P_KH] : k,
                        c->p[P_KW] > 0 ? (int64_t)c->p[P_KW] : k};
    opf_tensor_set_shape(w, c->dtype, 4, shape);
  } else if (w->ndim != 4 || w->shape[0] <= 0 || w->shape[2] <= 0 || w->shape[3] <= 0) {
    return opf_case_error(c, OPF_EINVAL, "weight 'w' must be 4-D (filters, C/groups, kh, kw) "
                          "with positive sizes, got %s", opf_shape_str(w, s1, sizeof s1));
  } else if (w->shape[1] * groups != g.C) {
    return opf_case_error(c, OPF_EINVAL, "weight 'w' %s needs C/groups = %lld input channels "
                          "per filter for x %s and groups=%lld, not %lld",
                          opf_shape_str(w, s1, sizeof s1), (long long)(g.C / groups),
                          opf_shape_str(&c->in[IN_X], s2, sizeof s2), (long long)groups,
                          (long long)w->shape[1]);
  }
  int64_t F = w->shape[0];
  if (F % groups)
    return opf_case_error(c, OPF_EINVAL, "filters %lld are not divisible by groups=%lld",
                          (long long)F, (long long)groups);
  if (c->present[IN_B]) {
    if (b->ndim < 0) opf_tensor_set_shape(b, c->dtype, 1, &F);
    else if (b->ndim != 1 || b->shape[0] != F)
      return opf_case_error(c, OPF_EINVAL, "bias 'b' %s must have shape (%lld), one per filter",
                            opf_shape_str(b, s1, sizeof s1), (long long)F);
  }
  g.KH = w->shape[2], g.KW = w->shape[3];
  g.sh = g.sw = (int64_t)c->p[P_STRIDE];
  g.ph = g.pw = (int64_t)c->p[P_PAD];
  g.dh = g.dw = (int64_t)c->p[P_DILATION];
  if ((rc = nn_check_window(c, "conv2d", &g))) return rc;
  /* cblas takes int sizes: the col matrix dimensions and leading dimensions must fit. */
  int64_t kall = g.C * g.KH * g.KW, plane = g.OH * g.OW;
  if (kall > INT32_MAX || plane > INT32_MAX || F > INT32_MAX || g.H * g.W > INT32_MAX)
    return opf_case_error(c, OPF_EINVAL, "conv2d: x %s with w %s exceeds the 2^31 GEMM "
                          "dimension limit", opf_shape_str(&c->in[IN_X], s1, sizeof s1),
                          opf_shape_str(w, s2, sizeof s2));
  int64_t yshape[4] = {g.N, F, g.OH, g.OW};
  opf_set_out(c, 0, c->dtype, 4, yshape);
  conv_ctx t;
  conv_resolve(c, &t);
  c->ws_bytes = (size_t)omp_get_max_threads() * conv_slot_bytes(&t); /* one slot per thread */
  return OPF_OK;
}

/* ---- work items ---- */
/* y[n] rows [oa, ob) of item r: w * col(x[n]) (+ b), block by block. */
static void conv_fwd_item(const conv_ctx *t, int64_t n, int64_t r, void *col) {
  opf_case *c = t->c;
  const nn_geom *g = &t->g;
  const conv_kern *k = &conv_kerns[c->dtype];
  size_t e = t->esz;
  const char *xn = (const char *)c->in[IN_X].data + (size_t)(n * g->C * g->H * g->W) * e;
  const char *w = c->in[IN_W].data;
  char *yn = (char *)c->out[0].data + (size_t)(n * t->F * t->P) * e;
  int bias = c->present[IN_B];
  int64_t oa = g->OH * r / t->R, ob = g->OH * (r + 1) / t->R;
  for (int64_t b0 = oa; b0 < ob; b0 += t->rows) {
    int64_t b1 = b0 + t->rows < ob ? b0 + t->rows : ob, pb = (b1 - b0) * g->OW, j0 = b0 * g->OW;
    if (!t->fast) k->im2col(col, xn, g, b0, b1);
    if (bias) k->bias_fill(yn + (size_t)j0 * e, c->in[IN_B].data, t->F, pb, t->P);
    for (int64_t gi = 0; gi < t->groups; gi++) {
      const char *B = t->fast ? xn + (size_t)(gi * t->Cg * t->P + j0) * e
                              : (const char *)col + (size_t)(gi * t->Kc * pb) * e;
      lin_gemm(c->dtype, 0, 0, t->Fg, pb, t->Kc, w + (size_t)(gi * t->Fg * t->Kc) * e, t->Kc, B,
              t->fast ? t->P : pb, bias ? 1.0 : 0.0, yn + (size_t)(gi * t->Fg * t->P + j0) * e,
              t->P);
    }
  }
}

/* Gradients of item r of image n. dw_acc += g col^T and db_acc += row sums of g over the
 * item's output rows [oa, ob); dx over the input rows [ia, ib) it owns, from every output
 * row whose windows reach them ([xa, xb), a few rows beyond [oa, ob) at the edges of the
 * range), so no two items write the same dx row. */
static void conv_bwd_item(const conv_ctx *t, int64_t n, int64_t r, void *col, void *dw_acc,
                          void *db_acc) {
  opf_case *c = t->c;
  const nn_geom *g = &t->g;
  const conv_kern *k = &conv_kerns[c->dtype];
  opf_dtype dt = c->dtype;
  size_t e = t->esz;
  const char *xn = (const char *)c->in[IN_X].data + (size_t)(n * g->C * g->H * g->W) * e;
  const char *w = c->in[IN_W].data;
  const char *gn = (const char *)c->gout[0].data + (size_t)(n * t->F * t->P) * e;
  char *dxn = c->gin[IN_X].data ? (char *)c->gin[IN_X].data + (size_t)(n * g->C * g->H * g->W) * e
                                : NULL;
  int64_t oa = g->OH * r / t->R, ob = g->OH * (r + 1) / t->R;
  int64_t ia = g->H * r / t->R, ib = g->H * (r + 1) / t->R, xa = oa, xb = oa;
  if (dxn && ia < ib) {
    int64_t lo = ia + g->ph - (g->KH - 1) * g->dh, hi = ib - 1 + g->ph;
    xa = lo <= 0 ? 0 : (lo + g->sh - 1) / g->sh;
    xb = hi < 0 ? 0 : hi / g->sh + 1;
    if (xb > g->OH) xb = g->OH;
    if (xa > xb) xa = xb;
    if (!t->fast) /* col2im accumulates into the owned rows */
      for (int64_t ch = 0; ch < g->C; ch++)
        memset(dxn + (size_t)((ch * g->H + ia) * g->W) * e, 0, (size_t)((ib - ia) * g->W) * e);
  }
  int64_t lo = oa < xa ? oa : xa, hi = ob > xb ? ob : xb;
  for (int64_t b0 = lo; b0 < hi; b0 += t->rows) {
    int64_t b1 = b0 + t->rows < hi ? b0 + t->rows : hi;
    int64_t w0 = b0 > oa ? b0 : oa, w1 = b1 < ob ? b1 : ob; /* dw/db rows of this block */
    if (w0 < w1) {
      int64_t pb = (w1 - w0) * g->OW, j0 = w0 * g->OW;
      if (dw_acc) {
        if (!t->fast) k->im2col(col, xn, g, w0, w1);
        for (int64_t gi = 0; gi < t->groups; gi++) {
          const char *B = t->fast ? xn + (size_t)(gi * t->Cg * t->P + j0) * e
                                  : (const char *)col + (size_t)(gi * t->Kc * pb) * e;
          lin_gemm(dt, 0, 1, t->Fg, t->Kc, pb, gn + (size_t)(gi * t->Fg * t->P + j0) * e, t->P,
                  B, t->fast ? t->P : pb, 1.0, (char *)dw_acc + (size_t)(gi * t->Fg * t->Kc) * e,
                  t->Kc);
        }
      }
      if (db_acc) k->row_sums(db_acc, gn + (size_t)j0 * e, t->F, pb, t->P);
    }
    int64_t x0 = b0 > xa ? b0 : xa, x1 = b1 < xb ? b1 : xb; /* dx rows of this block */
    if (x0 >= x1) continue;
    int64_t pb = (x1 - x0) * g->OW, j0 = x0 * g->OW;
    for (int64_t gi = 0; gi < t->groups; gi++) {
      char *C = t->fast ? dxn + (size_t)(gi * t->Cg * t->P + j0) * e
                        : (char *)col + (size_t)(gi * t->Kc * pb) * e;
      lin_gemm(dt, 1, 0, t->Kc, pb, t->Fg, w + (size_t)(gi * t->Fg * t->Kc) * e, t->Kc,
              gn + (size_t)(gi * t->Fg * t->P + j0) * e, t->P, 0.0, C, t->fast ? t->P : pb);
    }
    if (t->fast) continue;
    /* input rows the block reaches, clipped to the owned range */
    int64_t r0 = x0 * g->sh - g->ph, r1 = (x1 - 1) * g->sh - g->ph + (g->KH - 1) * g->dh + 1;
    if (r0 < ia) r0 = ia;
    if (r1 > ib) r1 = ib;
    if (r0 < r1) k->col2im(dxn, col, g, r0, r1, x0, x1);
  }
}

/* Runs every item (forward, or backward with per-thread dw/db partials summed at the end). */
static void conv_run(opf_case *c, int bwd) {
  conv_ctx t;
  conv_resolve(c, &t);
  conv_plan(&t);
  int64_t items = t.g.N * t.R;
  void *dw = bwd ? c->gin[IN_W].data : NULL;
  void *db = bwd && c->present[IN_B] ? c->gin[IN_B].data : NULL;
  int used = 1;
#pragma omp parallel num_threads(t.nt) if (t.nt > 1)
  {
    int k = omp_get_thread_num(), m = omp_get_num_threads();
    void *col, *pdw, *pdb;
    conv_slot(&t, k, &col, &pdw, &pdb);
    if (k == 0) used = m, pdw = dw, pdb = db; /* thread 0 accumulates in place */
    if (dw) memset(pdw, 0, (size_t)(t.F * t.Kc) * t.esz);
    if (db) memset(pdb, 0, (size_t)t.F * t.esz);
    for (int64_t it = items * k / m; it < items * (k + 1) / m; it++) {
      if (bwd) conv_bwd_item(&t, it / t.R, it % t.R, col, dw ? pdw : NULL, db ? pdb : NULL);
      else conv_fwd_item(&t, it / t.R, it % t.R, col);
    }
  }
  for (int k = 1; k < used; k++) {
    void *col, *pdw, *pdb;
    conv_slot(&t, k, &col, &pdw, &pdb);
    if (dw) conv_kerns[c->dtype].vadd(dw, pdw, t.F * t.Kc);
    if (db) conv_kerns[c->dtype].vadd(db, pdb, t.F);
  }
}

static int conv_forward(opf_case *c) {
  conv_run(c, 0);
  return OPF_OK;
}

static int conv_backward(opf_case *c) {
  conv_run(c, 1);
  return OPF_OK;
}

/* ---- reference: the definition, one output element at a time ---- */
static int conv_reference(opf_case *c) {
  conv_ctx t;
  conv_resolve(c, &t);
  const nn_geom *g = &t.g;
  opf_dtype dt = c->dtype;
  const void *x = c->in[IN_X].data, *w = c->in[IN_W].data;
  for (int64_t n = 0; n < g->N; n++)
    for (int64_t f = 0; f < t.F; f++)
      for (int64_t oh = 0; oh < g->OH; oh++)
        for (int64_t ow = 0; ow < g->OW; ow++) {
          double acc = c->present[IN_B] ? nn_ld(c->in[IN_B].data, dt, f) : 0;
          int64_t c0 = f / t.Fg * t.Cg;
          for (int64_t cl = 0; cl < t.Cg; cl++)
            for (int64_t kh = 0; kh < g->KH; kh++)
              for (int64_t kw = 0; kw < g->KW; kw++) {
                int64_t ih = oh * g->sh - g->ph + kh * g->dh, iw = ow * g->sw - g->pw + kw * g->dw;
                if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                acc += nn_ld(x, dt, ((n * g->C + c0 + cl) * g->H + ih) * g->W + iw) *
                       nn_ld(w, dt, ((f * t.Cg + cl) * g->KH + kh) * g->KW + kw);
              }
          nn_st(c->out[0].data, dt, ((n * t.F + f) * g->OH + oh) * g->OW + ow, acc);
        }
  return OPF_OK;
}

/* fwd: 2*N*F*OH*OW*(C/groups)*KH*KW multiply-adds, plus one add per output with a bias;
 * bwd: twice the GEMM work (dw and dx), plus one add per output for db. */
static double conv_flops(const opf_case *c, opf_pass p) {
  conv_ctx t;
  conv_resolve((opf_case *)c, &t);
  double outs = (double)t.g.N * (double)t.F * (double)t.P;
  double mm = 2 * outs * (double)t.Kc, bias = c->present[IN_B] ? outs : 0;
  double fwd = mm + bias, bwd = 2 * mm + bias;
  return opf_pass_sum(p, fwd, bwd);
}

OPPERF_OP(conv2d) = {
    .abi = OPF_OP_ABI,
    .name = "conv2d",
    .category = "nn.conv",
    .summary = "2-D convolution, NCHW, with stride, padding, dilation and groups",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 3,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "input (N, C, H, W)"},
           {.name = "w", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -0.5, .hi = 0.5,
            .help = "filters (F, C/groups, KH, KW); derived from filters/kernel when omitted"},
           {.name = "b", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF | OPF_IN_OPTIONAL, .lo = -1,
            .hi = 1, .help = "bias (F); b=none drops it"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 8,
    .params = {{"filters", OPF_P_INT, 64, 1, 1 << 20, NULL, "output channels F (when w is omitted)"},
               {"kernel", OPF_P_INT, 3, 1, 1 << 16, NULL, "square kernel size (when w is omitted)"},
               {"kh", OPF_P_INT, 0, 0, 1 << 16, NULL, "kernel height, 0 = kernel (when w is omitted)"},
               {"kw", OPF_P_INT, 0, 0, 1 << 16, NULL, "kernel width, 0 = kernel (when w is omitted)"},
               {"stride", OPF_P_INT, 1, 1, 1 << 16, NULL, "stride in both dimensions"},
               {"pad", OPF_P_INT, 0, 0, 1 << 16, NULL, "zero padding on each side"},
               {"dilation", OPF_P_INT, 1, 1, 1 << 16, NULL, "spacing between kernel taps"},
               {"groups", OPF_P_INT, 1, 1, 1 << 20, NULL, "channel groups (C and F divisible)"}},
    .shapes = {{"standard", "x=32x64x56x56 filters=64 kernel=3 pad=1"},
               {"skewed", "x=32x3x256x256 filters=64 kernel=3"},
               {"skewed", "x=1x3x1024x1024 filters=64 kernel=3"},
               {"skewed", "x=256x3x32x32 filters=64 kernel=3"},
               {"skewed", "x=32x256x14x14 filters=1024 kernel=1"},
               {"skewed", "x=32x128x56x56 filters=256 kernel=3 stride=2 pad=1"},
               {"skewed", "x=32x64x56x56 filters=64 kernel=3 pad=2 dilation=2 groups=4"},
               {"small", "x=2x3x5x5 filters=4 kernel=3"},
               {"small", "x=2x3x5x5 filters=4 kernel=3 b=none"},
               {"small", "x=2x3x7x6 filters=4 kernel=3 stride=2 pad=1"},
               {"small", "x=1x4x7x7 filters=4 kernel=3 pad=1 dilation=2 groups=2"},
               {"small", "x=2x4x4x5 filters=6 kernel=1"},
               {"small", "x=2x4x6x5 filters=2 kernel=1 stride=2"},
               {"small", "x=1x2x6x5 filters=3 kh=2 kw=3 pad=1"},
               {"test", "x=4x7x37x41 filters=12 kernel=3 pad=1"},
               {"test", "x=1x5x150x133 filters=8 kernel=5 stride=2 pad=2"},
               {"test", "x=3x24x19x23 filters=36 kernel=1 groups=3"},
               {"test", "x=2x6x61x67 filters=9 kernel=3 stride=3 pad=1 dilation=2 groups=3"},
               {"large", "x=64x128x112x112 filters=128 kernel=3 pad=1"}},
    .infer = conv_infer,
    .forward = conv_forward,
    .backward = conv_backward,
    .reference = conv_reference,
    .flops = conv_flops,
    .bytes = opf_default_bytes,
};
