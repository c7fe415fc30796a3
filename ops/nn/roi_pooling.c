/* roi_pooling.c: region-of-interest max pooling (MXNet ROIPooling / Caffe ROIPoolingLayer):
 * data (N, C, H, W), rois (R, 5) rows [batch_index, x1, y1, x2, y2] in image coordinates;
 * each roi is scaled by spatial_scale, rounded, split into pooled_size bins and max-pooled per
 * channel into y (R, C, PH, PW). Forward keeps each output's arg-max for backward, which
 * routes the gradient there (data only; the boxes get none). Threads take (roi, channel
 * block) items forward and channel ranges backward (no two threads add into one plane). */
#include <math.h>
#include <string.h>

#include "resize_common.h"

enum { IN_DATA, IN_ROIS };
enum { P_POOLED, P_SCALE };

/* Geometry of a case. */
typedef struct roi_geom {
  int64_t N, C, H, W, R, PH, PW;
  double scale;
} roi_geom;

static void roi_geom_of(const opf_case *c, roi_geom *g) {
  const opf_tensor *d = &c->in[IN_DATA];
  const opf_list *ps = &c->list[P_POOLED];
  g->N = d->shape[0], g->C = d->shape[1], g->H = d->shape[2], g->W = d->shape[3];
  g->R = c->in[IN_ROIS].shape[0];
  g->PH = ps->n ? ps->v[0] : 1;
  g->PW = ps->n > 1 ? ps->v[1] : g->PH;
  g->scale = c->p[P_SCALE];
}

/* Bins of one roi, as Caffe computes them but in exact integer arithmetic: the box's corners
 * scaled and rounded, its size at least 1x1, bin i spanning rows floor(i*h/PH) ..
 * ceil((i+1)*h/PH) from its top, clipped to the image (possibly empty). Returns the batch
 * index, or -1 when it is not an integer in [0, N). */
typedef struct roi_bins {
  int64_t b;
  int32_t *hs, *he, *ws, *we; /* PH and PW entries */
} roi_bins;

static int64_t roi_box(const roi_geom *g, const void *rois, opf_dtype dt, int64_t r,
                       const roi_bins *bn) {
  double bi = nn_ld(rois, dt, r * 5);
  if (!(bi >= 0 && bi < (double)g->N && bi == floor(bi))) return -1;
  int64_t x1 = (int64_t)round(nn_ld(rois, dt, r * 5 + 1) * g->scale);
  int64_t y1 = (int64_t)round(nn_ld(rois, dt, r * 5 + 2) * g->scale);
  int64_t x2 = (int64_t)round(nn_ld(rois, dt, r * 5 + 3) * g->scale);
  int64_t y2 = (int64_t)round(nn_ld(rois, dt, r * 5 + 4) * g->scale);
  int64_t rw = x2 - x1 + 1 > 1 ? x2 - x1 + 1 : 1, rh = y2 - y1 + 1 > 1 ? y2 - y1 + 1 : 1;
#define ROI_CLIP(v, hi) ((v) < 0 ? 0 : (v) > (hi) ? (hi) : (v))
  for (int64_t i = 0; i < g->PH; i++) {
    bn->hs[i] = (int32_t)ROI_CLIP(i * rh / g->PH + y1, g->H);
    bn->he[i] = (int32_t)ROI_CLIP(((i + 1) * rh + g->PH - 1) / g->PH + y1, g->H);
  }
  for (int64_t j = 0; j < g->PW; j++) {
    bn->ws[j] = (int32_t)ROI_CLIP(j * rw / g->PW + x1, g->W);
    bn->we[j] = (int32_t)ROI_CLIP(((j + 1) * rw + g->PW - 1) / g->PW + x1, g->W);
  }
#undef ROI_CLIP
  return (int64_t)bi;
}

/* Rejects a batch index that is not an integer in [0, N) (forward and reference). */
static int roi_check(opf_case *c, const roi_geom *g) {
  for (int64_t r = 0; r < g->R; r++) {
    double bi = nn_ld(c->in[IN_ROIS].data, c->dtype, r * 5);
    if (!(bi >= 0 && bi < (double)g->N && bi == floor(bi)))
      return opf_case_error(c, OPF_EINVAL, "roi_pooling: roi %lld has batch index %g, not an "
                            "integer in [0, %lld)", (long long)r, bi, (long long)g->N);
  }
  return OPF_OK;
}

/* ---- kernels, one template for float and double ----
 * Every channel of a roi pools the same bins, so a work item is one roi and a block of V
 * channels (one 64-byte vector: 16 floats or 8 doubles): the roi's rows are transposed, V x V
 * tiles in registers, into a channel-minor buffer, and every bin's maximum and arg-max are
 * then vector compares and selects, V channels at once. Elements are visited in row-major
 * order with a strict >, so ties keep Caffe's first maximum. Empty bins give 0 and -1. */
typedef float roi_v_f32 __attribute__((vector_size(64)));
typedef int32_t roi_m_f32 __attribute__((vector_size(64)));
typedef double roi_v_f64 __attribute__((vector_size(64)));
typedef int64_t roi_m_f64 __attribute__((vector_size(64)));
#define ROI_V_f32 16
#define ROI_V_f64 8
#define ROI_LOGV_f32 4
#define ROI_LOGV_f64 3
#define ROI_BUF_BYTES ((int64_t)4 << 20) /* transposed rows per thread, at most */

/* Per-thread scratch of a forward item. */
typedef struct roi_scr {
  roi_bins bn;
  void *buf;   /* rows x W vectors of the transposed roi */
  int64_t rows;
  void *m, *a; /* running maximum and arg-max of every bin: PH*PW vectors each */
} roi_scr;

#define ALWAYS_INLINE static inline __attribute__((always_inline))

#define ROI_KERNELS(T, S)                                                                      \
  /* Transposes the V x V tile t (rows: channels; lanes: columns; the bits of either dtype)   \
   * into columns x channels:                                                                 \
   * round k swaps the off-diagonal b x b blocks (b = V/2, V/4, .., 1) of every 2b x 2b      \
   * block, each pair of rows exchanging halves with two two-vector shuffles. */              \
  ALWAYS_INLINE void roi_tile_##S(roi_m_##S *t) {                                             \
    enum { V = ROI_V_##S };                                                                   \
    _Pragma("GCC unroll 4") for (int k = 0; k < ROI_LOGV_##S; k++) {                          \
      int b = V >> (k + 1);                                                                   \
      roi_m_##S lo, hi;                                                                       \
      for (int l = 0; l < V; l++) {                                                           \
        int g = l / (2 * b) * (2 * b), o = l % (2 * b);                                       \
        lo[l] = o < b ? g + o : V + g + o - b;                                                \
        hi[l] = o < b ? g + o + b : V + g + o;                                                \
      }                                                                                       \
      _Pragma("GCC unroll 16") for (int i = 0; i < V; i++) if (!(i & b)) {                    \
        roi_m_##S u = __builtin_shuffle(t[i], t[i + b], lo);                                  \
        roi_m_##S v = __builtin_shuffle(t[i], t[i + b], hi);                                  \
        t[i] = u, t[i + b] = v;                                                               \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  /* Channels c0 .. c0+nc of one roi (their planes at x, HW apart): rows [ha, hb) and columns \
   * [wa, wb) cover its bins; y and am at the roi's first output of channel c0 (channels PP  \
   * = PH*PW apart). */                                                                       \
  OPF_VEC static void roi_block_##S(const T *x, int64_t HW, int64_t W, int64_t nc,           \
                                    const roi_scr *sc, int64_t PH, int64_t PW, int64_t ha,     \
                                    int64_t hb, int64_t wa, int64_t wb, T *y, int32_t *am) {  \
    enum { V = ROI_V_##S };                                                                   \
    typedef roi_v_##S vf;                                                                     \
    typedef roi_m_##S vm;                                                                     \
    vf *restrict buf = sc->buf, *restrict m = sc->m;                                          \
    vm *restrict a = sc->a;                                                                   \
    int64_t rw = wb - wa, PP = PH * PW;                                                       \
    const T *xl[V]; /* lanes past nc repeat channel c0: computed, never stored */             \
    for (int l = 0; l < V; l++) xl[l] = x + (l < nc ? l : 0) * HW;                            \
    for (int64_t k = 0; k < PP; k++) {                                                        \
      vf z = {0};                                                                             \
      vm n = {0};                                                                             \
      m[k] = z - (T)INFINITY, a[k] = n - 1;                                                   \
    }                                                                                         \
    for (int64_t hc = ha; hc < hb; hc += sc->rows) { /* strips of rows that fit the buffer */ \
      int64_t he = hc + sc->rows < hb ? hc + sc->rows : hb;                                   \
      for (int64_t h = hc; h < he; h++) {                                                     \
        vf *restrict bo = buf + (h - hc) * rw;                                                \
        for (int64_t w = 0; w < rw; w += V) {                                                 \
          /* a tile of V columns from column c (the last one shifted left to stay in the     \
           * row; its first `skip` columns were done already) */                             \
          int64_t c = wa + w, skip = 0;                                                       \
          if (c + V > W) skip = c - (W - V), c = W - V;                                       \
          if (c < 0) { /* rows narrower than a tile */                                        \
            for (int64_t q = w; q < rw; q++)                                                  \
              for (int l = 0; l < V; l++) bo[q][l] = xl[l][h * W + wa + q];                   \
            break;                                                                            \
          }                                                                                   \
          vm t[V];                                                                            \
          _Pragma("GCC unroll 16") for (int l = 0; l < V; l++)                                \
              memcpy(&t[l], xl[l] + h * W + c, sizeof t[l]);                                  \
          roi_tile_##S(t);                                                                    \
          for (int64_t q = skip; q < V && w + q - skip < rw; q++) bo[w + q - skip] = (vf)t[q]; \
        }                                                                                     \
      }                                                                                       \
      /* row by row, every bin of the row in turn: the bins' compare-select chains are     \
       * independent, so they overlap instead of waiting on each other */                    \
      for (int64_t i = 0; i < PH; i++) {                                                      \
        int64_t h0 = sc->bn.hs[i] > hc ? sc->bn.hs[i] : hc;                                   \
        int64_t h1 = sc->bn.he[i] < he ? sc->bn.he[i] : he;                                   \
        for (int64_t h = h0; h < h1; h++)                                                     \
          for (int64_t j = 0; j < PW; j++) {                                                  \
            vf mj = m[i * PW + j];                                                            \
            vm aj = a[i * PW + j];                                                            \
            for (int64_t w = sc->bn.ws[j]; w < sc->bn.we[j]; w++) {                           \
              vf v = buf[(h - hc) * rw + (w - wa)];                                           \
              vm take = v > mj, cur = {0};                                                    \
              cur += (int32_t)(h * W + w);                                                    \
              mj = (vf)(((vm)v & take) | ((vm)mj & ~take));                                   \
              aj = (cur & take) | (aj & ~take);                                               \
            }                                                                                 \
            m[i * PW + j] = mj, a[i * PW + j] = aj;                                           \
          }                                                                                   \
      }                                                                                       \
    }                                                                                         \
    for (int64_t k = 0; k < PP; k++) { /* empty bins: 0 (their arg-max stays -1) */          \
      int64_t i = k / PW, j = k % PW;                                                         \
      vf z = {0};                                                                             \
      if (sc->bn.hs[i] >= sc->bn.he[i] || sc->bn.ws[j] >= sc->bn.we[j]) m[k] = z;             \
    }                                                                                         \
    /* outputs: tiles of V bins transposed back to channel-major; the rest one by one */      \
    int64_t k0 = 0;                                                                           \
    for (; k0 + V <= PP; k0 += V) {                                                           \
      vm t[V], u[V];                                                                          \
      for (int q = 0; q < V; q++) t[q] = (vm)m[k0 + q], u[q] = a[k0 + q];                     \
      roi_tile_##S(t);                                                                        \
      roi_tile_##S(u);                                                                        \
      for (int64_t l = 0; l < nc; l++) {                                                      \
        memcpy(y + l * PP + k0, &t[l], sizeof t[l]);                                          \
        for (int q = 0; q < V; q++) am[l * PP + k0 + q] = (int32_t)u[l][q];                   \
      }                                                                                       \
    }                                                                                         \
    for (int64_t k = k0; k < PP; k++)                                                         \
      for (int64_t l = 0; l < nc; l++) y[l * PP + k] = m[k][l], am[l * PP + k] = (int32_t)a[k][l]; \
  }                                                                                           \
  /* dx[am[o]] += g[o] for the n outputs of one (roi, channel). */                            \
  static void roi_scatter_##S(T *restrict dx, const T *restrict g, const int32_t *am,         \
                              int64_t n) {                                                    \
    for (int64_t o = 0; o < n; o++)                                                           \
      if (am[o] >= 0) dx[am[o]] += g[o];                                                      \
  }

ROI_KERNELS(float, f32)
ROI_KERNELS(double, f64)

/* Workspace: the int32 arg-max of every output, then per thread the bins of one roi, the
 * transposed strip and the running maxima. */
typedef struct roi_ws {
  int32_t *am;
  char *slots;
  size_t slot;
} roi_ws;

#define ROI_AL(n) (((size_t)(n) + 63) & ~(size_t)63)

/* Rows of W vectors the transpose buffer holds. */
static int64_t roi_rows(const roi_geom *g) {
  int64_t r = ROI_BUF_BYTES / (g->W * 64);
  return r < 1 ? 1 : r > g->H ? g->H : r;
}

static size_t roi_layout(const opf_case *c, const roi_geom *g, roi_ws *w) {
  rs_carve k = {c->ws, 0};
  int64_t PP = g->PH * g->PW;
  w->am = rs_take(&k, (size_t)(g->R * g->C * PP) * sizeof(int32_t));
  w->slot = ROI_AL(2 * (g->PH + g->PW) * 4) + ROI_AL(roi_rows(g) * g->W * 64) + 2 * ROI_AL(PP * 64);
  w->slots = rs_take(&k, 0);
  return k.off + (size_t)omp_get_max_threads() * w->slot;
}

static void roi_slot(const roi_ws *w, const roi_geom *g, int t, roi_scr *sc) {
  char *p = w->slots + (size_t)t * w->slot;
  roi_bins *bn = &sc->bn;
  bn->hs = (int32_t *)p, bn->he = bn->hs + g->PH, bn->ws = bn->he + g->PH, bn->we = bn->ws + g->PW;
  sc->buf = p + ROI_AL(2 * (g->PH + g->PW) * 4);
  sc->rows = roi_rows(g);
  sc->m = (char *)sc->buf + ROI_AL(sc->rows * g->W * 64);
  sc->a = (char *)sc->m + ROI_AL(g->PH * g->PW * 64);
}

typedef struct roi_ctx {
  opf_case *c;
  roi_geom g;
  roi_ws w;
  int64_t V, nblk; /* channels per block (one vector), blocks per roi */
} roi_ctx;

/* Forward items [lo, hi) of (roi, channel block). */
static void roi_fwd_items(void *p, int64_t lo, int64_t hi, int t) {
  roi_ctx *x = p;
  const roi_geom *g = &x->g;
  opf_case *c = x->c;
  size_t es = opf_dtype_size(c->dtype);
  roi_scr sc;
  roi_slot(&x->w, g, t, &sc);
  int64_t cur = -1, b = 0, ha = 0, hb = 0, wa = 0, wb = 0, PP = g->PH * g->PW, HW = g->H * g->W;
  for (int64_t it = lo; it < hi; it++) {
    int64_t r = it / x->nblk, c0 = it % x->nblk * x->V;
    int64_t nc = c0 + x->V < g->C ? x->V : g->C - c0;
    if (r != cur) { /* the bins of a new roi, and the rows and columns they span */
      cur = r;
      b = roi_box(g, c->in[IN_ROIS].data, c->dtype, r, &sc.bn);
      ha = g->H, hb = 0, wa = g->W, wb = 0;
      for (int64_t i = 0; i < g->PH; i++)
        if (sc.bn.hs[i] < sc.bn.he[i]) {
          ha = sc.bn.hs[i] < ha ? sc.bn.hs[i] : ha;
          hb = sc.bn.he[i] > hb ? sc.bn.he[i] : hb;
        }
      for (int64_t j = 0; j < g->PW; j++)
        if (sc.bn.ws[j] < sc.bn.we[j]) {
          wa = sc.bn.ws[j] < wa ? sc.bn.ws[j] : wa;
          wb = sc.bn.we[j] > wb ? sc.bn.we[j] : wb;
        }
      if (ha >= hb || wa >= wb) ha = hb = wa = wb = 0; /* every bin empty */
    }
    const char *xp = (const char *)c->in[IN_DATA].data + (size_t)((b * g->C + c0) * HW) * es;
    int64_t o = (r * g->C + c0) * PP;
    char *y = (char *)c->out[0].data + (size_t)o * es;
    if (c->dtype == OPF_F32)
      roi_block_f32((const float *)xp, HW, g->W, nc, &sc, g->PH, g->PW, ha, hb, wa, wb, (float *)y,
                    x->w.am + o);
    else
      roi_block_f64((const double *)xp, HW, g->W, nc, &sc, g->PH, g->PW, ha, hb, wa, wb,
                    (double *)y, x->w.am + o);
  }
}

/* Backward channels [lo, hi): zero their dx planes, then route every roi's gradient. */
static void roi_bwd_items(void *p, int64_t lo, int64_t hi, int t) {
  (void)t;
  roi_ctx *x = p;
  const roi_geom *g = &x->g;
  opf_case *c = x->c;
  size_t es = opf_dtype_size(c->dtype), plane = (size_t)(g->H * g->W);
  int64_t PP = g->PH * g->PW;
  for (int64_t n = 0; n < g->N; n++)
    memset((char *)c->gin[IN_DATA].data + (size_t)(n * g->C + lo) * plane * es, 0,
           (size_t)(hi - lo) * plane * es);
  /* blocks of channels whose dx planes (every batch) fit in L2 stay there across the rois,
   * each roi's gradient rows of the block read in order */
  int64_t blk = (int64_t)(512 << 10) / (g->N * (int64_t)plane * (int64_t)es);
  blk = blk < 1 ? 1 : blk;
  for (int64_t c0 = lo; c0 < hi; c0 += blk)
    for (int64_t r = 0; r < g->R; r++)
      for (int64_t ch = c0; ch < (c0 + blk < hi ? c0 + blk : hi); ch++) {
        int64_t b = (int64_t)nn_ld(c->in[IN_ROIS].data, c->dtype, r * 5);
        int64_t o = (r * g->C + ch) * PP;
        char *dx = (char *)c->gin[IN_DATA].data + (size_t)(b * g->C + ch) * plane * es;
        const char *gy = (const char *)c->gout[0].data + (size_t)o * es;
        if (c->dtype == OPF_F32)
          roi_scatter_f32((float *)dx, (const float *)gy, x->w.am + o, PP);
        else
          roi_scatter_f64((double *)dx, (const double *)gy, x->w.am + o, PP);
      }
}

/* ---- infer, passes, reference ---- */
static int roi_infer(opf_case *c) {
  rs_image m = {0};
  int rc = rs_check_image(c, IN_DATA, RS_NCHW, "roi_pooling", &m);
  if (rc) return rc;
  const opf_tensor *rois = &c->in[IN_ROIS];
  const opf_list *ps = &c->list[P_POOLED];
  char s[96];
  if (rois->ndim != 2 || rois->shape[1] != 5 || rois->shape[0] < 1)
    return opf_case_error(c, OPF_EINVAL, "rois must be (R, 5) rows [batch_index, x1, "
                          "y1, x2, y2] with R >= 1, got %s", opf_shape_str(rois, s, sizeof s));
  if (ps->n < 1 || ps->n > 2 || ps->v[0] < 1 || (ps->n > 1 && ps->v[1] < 1))
    return opf_case_error(c, OPF_EINVAL, "pooled_size needs 1 or 2 positive values "
                          "(ph[,pw]), got %d value(s) starting %lld", ps->n,
                          (long long)(ps->n ? ps->v[0] : 0));
  if (!(c->p[P_SCALE] > 0))
    return opf_case_error(c, OPF_EINVAL, "spatial_scale=%g must be positive",
                          c->p[P_SCALE]);
  if (m.H * m.W > INT32_MAX)
    return opf_case_error(c, OPF_EINVAL, "planes of data %s exceed 2^31 elements",
                          opf_shape_str(&c->in[IN_DATA], s, sizeof s));
  roi_geom g;
  roi_geom_of(c, &g);
  int64_t shape[4] = {g.R, g.C, g.PH, g.PW};
  opf_set_out(c, 0, c->dtype, 4, shape);
  roi_ws w;
  c->ws_bytes = roi_layout(c, &g, &w);
  return OPF_OK;
}

static void roi_setup(opf_case *c, roi_ctx *x) {
  memset(x, 0, sizeof *x);
  x->c = c;
  roi_geom_of(c, &x->g);
  roi_layout(c, &x->g, &x->w);
  x->V = c->dtype == OPF_F32 ? ROI_V_f32 : ROI_V_f64;
  x->nblk = (x->g.C + x->V - 1) / x->V;
}

static int roi_forward(opf_case *c) {
  roi_ctx x;
  roi_setup(c, &x);
  int rc = roi_check(c, &x.g);
  if (rc) return rc;
  double work = (double)x.g.R * (double)x.g.C * (double)(x.g.PH * x.g.PW) * 4;
  rs_run_items(x.g.R * x.nblk, work, omp_get_max_threads(), roi_fwd_items, &x);
  return OPF_OK;
}

static int roi_backward(opf_case *c) {
  if (!c->gin[IN_DATA].data) return OPF_OK;
  roi_ctx x;
  roi_setup(c, &x);
  double work = (double)x.g.N * (double)x.g.C * (double)(x.g.H * x.g.W);
  rs_run_items(x.g.C, work, omp_get_max_threads(), roi_bwd_items, &x);
  return OPF_OK;
}

/* Reference: each output as the row-major first maximum over its bin (Caffe's loop). */
static int roi_reference(opf_case *c) {
  roi_geom g;
  roi_geom_of(c, &g);
  int rc = roi_check(c, &g);
  if (rc) return rc;
  opf_dtype dt = c->dtype;
  const void *rois = c->in[IN_ROIS].data;
  for (int64_t r = 0; r < g.R; r++) {
    int64_t b = (int64_t)nn_ld(rois, dt, r * 5);
    double x1 = round(nn_ld(rois, dt, r * 5 + 1) * g.scale),
           y1 = round(nn_ld(rois, dt, r * 5 + 2) * g.scale);
    double x2 = round(nn_ld(rois, dt, r * 5 + 3) * g.scale),
           y2 = round(nn_ld(rois, dt, r * 5 + 4) * g.scale);
    double rw = fmax(x2 - x1 + 1, 1), rh = fmax(y2 - y1 + 1, 1);
    for (int64_t ch = 0; ch < g.C; ch++)
      for (int64_t i = 0; i < g.PH; i++)
        for (int64_t j = 0; j < g.PW; j++) {
          double h0 = fmin(fmax(floor((double)i * rh / (double)g.PH) + y1, 0), (double)g.H);
          double h1 = fmin(fmax(ceil((double)(i + 1) * rh / (double)g.PH) + y1, 0), (double)g.H);
          double w0 = fmin(fmax(floor((double)j * rw / (double)g.PW) + x1, 0), (double)g.W);
          double w1 = fmin(fmax(ceil((double)(j + 1) * rw / (double)g.PW) + x1, 0), (double)g.W);
          double best = 0;
          int any = 0;
          for (int64_t h = (int64_t)h0; h < (int64_t)h1; h++)
            for (int64_t w = (int64_t)w0; w < (int64_t)w1; w++) {
              double v = nn_ld(c->in[IN_DATA].data, dt, ((b * g.C + ch) * g.H + h) * g.W + w);
              if (!any || v > best) best = v, any = 1;
            }
          nn_st(c->out[0].data, dt, ((r * g.C + ch) * g.PH + i) * g.PW + j, best);
        }
  }
  return OPF_OK;
}

/* Valid boxes: batch index uniform in [0, N); corners drawn in image coordinates (the data's
 * extent divided by spatial_scale), a tenth beyond the image on each side so clipped and
 * empty bins occur, sorted, whole pixels (exact in float32, so both dtypes pool the same
 * boxes). */
static int roi_fill(opf_case *c, int i, opf_rng *r) {
  roi_geom g;
  roi_geom_of(c, &g);
  double iw = (double)g.W / g.scale, ih = (double)g.H / g.scale;
  for (int64_t k = 0; k < g.R; k++) {
    double v[5];
    v[0] = floor(opf_rng_uniform(r) * (double)g.N);
    for (int a = 0; a < 2; a++) {
      double ext = a ? ih : iw;
      double p = floor((opf_rng_uniform(r) * 1.2 - 0.1) * ext);
      double q = floor((opf_rng_uniform(r) * 1.2 - 0.1) * ext);
      v[1 + a] = fmin(p, q), v[3 + a] = fmax(p, q);
    }
    for (int a = 0; a < 5; a++) nn_st(c->in[i].data, c->dtype, k * 5 + a, v[a]);
  }
  return OPF_OK;
}

/* Work: one max per output forward (its compares depend on the boxes, so the model does not
 * count them) and one add per output backward. Bytes: forward reads data and rois and writes
 * y and the int32 arg-max; backward reads g, the arg-max and rois and writes dx. */
static double roi_flops(const opf_case *c, opf_pass p) {
  double outs = (double)opf_numel(&c->out[0]);
  return opf_pass_sum(p, outs, outs);
}

static double roi_bytes(const opf_case *c, opf_pass p) {
  double e = (double)opf_dtype_size(c->dtype), outs = (double)opf_numel(&c->out[0]);
  double data = (double)opf_numel(&c->in[IN_DATA]), rois = (double)opf_numel(&c->in[IN_ROIS]);
  double fwd = (data + rois + outs) * e + 4 * outs, bwd = (outs + rois + data) * e + 4 * outs;
  return opf_pass_sum(p, fwd, bwd);
}

OPPERF_OP(roi_pooling) = {
    .abi = OPF_OP_ABI,
    .name = "roi_pooling",
    .category = "nn.pool",
    .summary = "region-of-interest max pooling (MXNet ROIPooling, Caffe), NCHW",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = {{.name = "data", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "feature map (N, C, H, W)"},
           {.name = "rois", .dtype = OPF_DT_CASE, .fill = roi_fill,
            .help = "boxes (R, 5): [batch_index, x1, y1, x2, y2] in image coordinates"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 2,
    .params = {{.name = "pooled_size", .type = OPF_P_LIST, .defs = "7,7", .min = 0, .max = 1 << 20,
                .help = "output bins PH,PW per roi (one value: square)"},
               {"spatial_scale", OPF_P_FLOAT, 0.0625, 0, 1e6, NULL,
                "image-to-feature-map scale of the box coordinates (1/16: stride-16 features)"}},
    .shapes = {{"standard", "data=1x512x38x50 rois=128x5 pooled_size=7 spatial_scale=0.0625"},
               {"skewed", "data=2x256x75x100 rois=300x5 pooled_size=7 spatial_scale=0.125"},
               {"skewed", "data=1x1024x14x14 rois=512x5 pooled_size=7 spatial_scale=0.0625"},
               {"skewed", "data=1x64x150x200 rois=64x5 pooled_size=14 spatial_scale=0.25"},
               {"small", "data=1x2x6x7 rois=3x5 pooled_size=2,3 spatial_scale=1"},
               {"small", "data=2x3x5x5 rois=4x5 pooled_size=3 spatial_scale=0.5"},
               {"small", "data=1x1x4x4 rois=3x5 pooled_size=5 spatial_scale=1"},
               {"small", "data=2x2x9x3 rois=2x5 pooled_size=4,1 spatial_scale=2"},
               {"small", "data=1x3x4x19 rois=3x5 pooled_size=2 spatial_scale=1"},
               {"test", "data=2x37x19x23 rois=41x5 pooled_size=7 spatial_scale=0.25"},
               {"test", "data=3x20x40x33 rois=17x5 pooled_size=3,5 spatial_scale=0.0625"},
               {"large", "data=8x512x76x100 rois=2048x5 pooled_size=7 spatial_scale=0.0625"}},
    .infer = roi_infer,
    .forward = roi_forward,
    .backward = roi_backward,
    .reference = roi_reference,
    .flops = roi_flops,
    .bytes = roi_bytes,
};
