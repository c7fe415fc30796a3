/* resize.c: 2-D resizing, NCHW or NHWC: adaptive_avg_pool2d, upsample_nearest and
 * upsample_bilinear (PyTorch F.interpolate / F.adaptive_avg_pool2d semantics). All three are
 * separable linear maps y = A_h x A_w^T, so one engine runs them: per plane, every output
 * row is a weighted sum of a few input rows (vertical taps) passed through a horizontal map
 * (gather tables, or their periodic form for integer ratios, or box sums), in whichever order
 * is cheaper; backward runs the same engine on the transposed maps (dx = A_h^T g A_w).
 * Threads take contiguous ranges of (plane, block of rows). */
#include <math.h>
#include <string.h>

#include "resize_common.h"

enum { RS_ADAPTIVE, RS_NEAREST, RS_BILINEAR };
enum { PA_SIZE, PA_LAYOUT };                     /* adaptive_avg_pool2d */
enum { PU_SCALE, PU_SIZE, PU_LAYOUT, PU_ALIGN }; /* upsample_nearest / upsample_bilinear */

/* Horizontal kinds: gather tables, box sums (adaptive), and the box sums' adjoint. */
enum { RS_HG, RS_HB, RS_HBT };

#define RS_CACHE_MAX 8 /* horizontal-first caches at most this many mapped rows */
#define RS_POLY_MAX 32 /* taps of a periodic horizontal pattern (phases x taps) */
#define RS_PIXEL_U 16  /* pixels of at least this many elements are mapped as whole vectors */

/* ---- one axis: the taps (source index, weight) of every output index ---- */
typedef struct rs_axis {
  int kind;
  int64_t in, out;
  double scale; /* > 0: the scale factor was given (coordinates are o / scale) */
  int align;    /* bilinear align_corners */
} rs_axis;

/* Adaptive bins: [floor(o*in/out), ceil((o+1)*in/out)), in exact integer arithmetic. */
static inline int64_t rs_bin_lo(const rs_axis *a, int64_t o) { return o * a->in / a->out; }
static inline int64_t rs_bin_hi(const rs_axis *a, int64_t o) {
  return ((o + 1) * a->in + a->out - 1) / a->out;
}

/* Bilinear source coordinate of output o (PyTorch area_pixel_compute_source_index). */
static double rs_coord(const rs_axis *a, int64_t o) {
  if (a->align) return a->out > 1 ? (double)o * (double)(a->in - 1) / (double)(a->out - 1) : 0;
  double s = a->scale > 0 ? ((double)o + 0.5) / a->scale - 0.5
                          : ((double)o + 0.5) * (double)a->in / (double)a->out - 0.5;
  return s < 0 ? 0 : s;
}

static int64_t rs_tap_n(const rs_axis *a, int64_t o) {
  if (a->kind == RS_ADAPTIVE) return rs_bin_hi(a, o) - rs_bin_lo(a, o);
  return a->kind == RS_NEAREST ? 1 : 2;
}

/* Tap k of output o. nearest: floor(o / scale) or floor(o * in / out), clamped to in - 1;
 * bilinear: i0 = floor(src), i1 = i0 + 1 (i0 at the last index), weights 1 - l and l. */
static void rs_tap(const rs_axis *a, int64_t o, int64_t k, int64_t *src, double *w) {
  if (a->kind == RS_ADAPTIVE) {
    int64_t lo = rs_bin_lo(a, o);
    *src = lo + k;
    *w = 1.0 / (double)(rs_bin_hi(a, o) - lo);
  } else if (a->kind == RS_NEAREST) {
    int64_t s = a->scale > 0 ? (int64_t)floor((double)o / a->scale) : o * a->in / a->out;
    *src = s < a->in - 1 ? s : a->in - 1;
    *w = 1;
  } else {
    double s = rs_coord(a, o);
    int64_t i0 = (int64_t)s;
    if (i0 > a->in - 1) i0 = a->in - 1;
    double l = s - (double)i0;
    l = l < 0 ? 0 : l > 1 ? 1 : l;
    *src = i0 + (k && i0 < a->in - 1);
    *w = k ? l : 1 - l;
  }
}

/* Where the taps go: CSR (ptr/src/w over the rows) or padded gather tables (idx/w over the
 * elements, entry m of pixel i at m * stride + (i*u + c)); NULL pointers: count only. */
typedef struct rs_sink {
  int64_t *ptr, *src;   /* CSR */
  int32_t *idx;         /* gather table */
  void *w;
  int64_t stride, u, su; /* table width in elements; elements per pixel written; source pitch */
  opf_dtype dt;
} rs_sink;

static inline void rs_emit(const rs_sink *k, int64_t i, int64_t m, int64_t j, int64_t s, double w) {
  if (k->src) {
    k->src[j] = s;
    nn_st(k->w, k->dt, j, w);
  }
  if (k->idx)
    for (int64_t c = 0; c < k->u; c++) {
      k->idx[m * k->stride + i * k->u + c] = (int32_t)(s * k->su + c);
      nn_st(k->w, k->dt, m * k->stride + i * k->u + c, w);
    }
}

/* Forward taps of every output index into the sink; returns the most taps of one output. */
static int64_t rs_fill_fwd(const rs_axis *a, const rs_sink *k) {
  int64_t j = 0, most = 0;
  for (int64_t o = 0; o < a->out; o++) {
    int64_t n = rs_tap_n(a, o);
    if (k->ptr) k->ptr[o] = j;
    for (int64_t t = 0; t < n; t++, j++) {
      int64_t s;
      double w;
      rs_tap(a, o, t, &s, &w);
      rs_emit(k, o, t, j, s, w);
    }
    most = n > most ? n : most;
  }
  if (k->ptr) k->ptr[a->out] = j;
  return most;
}

/* Transposed taps: for every input index i, the (output, weight) pairs that read it. Adaptive
 * bins reading i are o in [floor(i*out/in), ceil((i+1)*out/in)); nearest and bilinear taps
 * are monotone in o per tap slot, so one sweep with a pointer per slot finds them. Returns
 * the most pairs of one input (the gather tables' padded width). */
static int64_t rs_fill_bwd(const rs_axis *a, const rs_sink *k) {
  int64_t j = 0, most = 0, p[2] = {0, 0}, K = a->kind == RS_ADAPTIVE ? 0 : rs_tap_n(a, 0);
  for (int64_t i = 0; i < a->in; i++) {
    int64_t cnt = 0;
    if (k->ptr) k->ptr[i] = j;
    if (a->kind == RS_ADAPTIVE) {
      for (int64_t o = i * a->out / a->in; o < ((i + 1) * a->out + a->in - 1) / a->in; o++)
        rs_emit(k, i, cnt++, j++, o, 1.0 / (double)rs_tap_n(a, o));
    }
    for (int64_t t = 0; t < K; t++) {
      int64_t s;
      double w;
      for (; p[t] < a->out; p[t]++) {
        rs_tap(a, p[t], t, &s, &w);
        if (s >= i) break;
      }
      for (int64_t q = p[t]; q < a->out; q++) {
        rs_tap(a, q, t, &s, &w);
        if (s != i) break;
        if (w != 0) rs_emit(k, i, cnt++, j++, q, w); /* a clamped tap's zero weight: skip */
      }
    }
    most = cnt > most ? cnt : most;
  }
  if (k->ptr) k->ptr[a->in] = j;
  return most;
}

/* ---- geometry of a case ---- */
typedef struct rs_geom {
  int kind;
  rs_image m;
  int64_t OH, OW;
  rs_axis ah, aw; /* H -> OH and W -> OW */
} rs_geom;

static int rs_kind(const opf_case *c) {
  const char *n = c->op->name;
  return !strcmp(n, "upsample_nearest") ? RS_NEAREST
         : !strcmp(n, "upsample_bilinear") ? RS_BILINEAR : RS_ADAPTIVE;
}

/* Sizes and axes from x's shape and the params (the shape is already validated). */
static void rs_geom_of(const opf_case *c, rs_geom *g) {
  memset(g, 0, sizeof *g);
  g->kind = rs_kind(c);
  int ad = g->kind == RS_ADAPTIVE;
  const opf_tensor *x = &c->in[0];
  int nhwc = (int)c->p[ad ? PA_LAYOUT : PU_LAYOUT] == RS_NHWC;
  rs_image *m = &g->m;
  m->nhwc = nhwc;
  m->N = x->shape[0];
  m->C = x->shape[nhwc ? 3 : 1], m->H = x->shape[nhwc ? 1 : 2], m->W = x->shape[nhwc ? 2 : 3];
  const opf_list *sz = &c->list[ad ? PA_SIZE : PU_SIZE];
  double scale = ad ? 0 : c->p[PU_SCALE];
  if (sz->n >= 1) {
    g->OH = sz->v[0];
    g->OW = sz->v[sz->n >= 2 ? 1 : 0];
    scale = 0;
  } else {
    g->OH = (int64_t)floor((double)m->H * scale);
    g->OW = (int64_t)floor((double)m->W * scale);
  }
  int align = g->kind == RS_BILINEAR && c->p[PU_ALIGN] != 0;
  g->ah = (rs_axis){g->kind, m->H, g->OH, scale, align};
  g->aw = (rs_axis){g->kind, m->W, g->OW, scale, align};
}

/* ---- the engine's plan for one direction ----
 * Planes of Ri rows of Li elements in, Ro rows of Lo elements out. Output row r is
 * H(sum of vw * input row vsrc) over its CSR taps; H maps Li elements to Lo. Work goes in
 * blocks of output rows sized so their scratch stays in L2: vertical-first combines the
 * block's rows into scratch and maps them; horizontal-first maps the input rows the block
 * reads into scratch once and combines them into the output. */
#define RS_BLOCK_BYTES (96 << 10)

typedef struct rs_plan {
  opf_dtype dt;
  int64_t P, Ri, Ro, Li, Lo, u;
  int64_t *vptr, *vsrc;
  void *vw;
  int64_t vmax, nnz;
  int ident; /* the vertical map is the identity: planes merge into one of P*Ri rows */
  int hk, flat, unit, disjoint;
  int64_t K; /* gather taps per output */
  int32_t *hidx;
  void *hw;
  int64_t hn;       /* gather table width: Lo elements (flat) or Lo / u pixels */
  int64_t *ba, *bb; /* box bins of the nb (output) pixels of H, or of H's input for RS_HBT */
  void *bs;
  int64_t nb;
  int vf;           /* vertical taps first (else horizontal first) */
  size_t slot;      /* per-thread scratch bytes */
  int64_t *blk, nblk, brows; /* blocks: rows [blk[b], blk[b+1]); identity: brows rows each */
  /* Periodic gathers (u = 1, integer ratio P = 2..4): between blocks kb and ke, "expand"
   * outputs k*P + f read x[k + pd[f*K + t]] with weights pw[f*K + t]; "reduce" output k
   * reads x[P*k + pd[t]]. Contiguous or strided loads instead of gathers; the few outputs
   * outside [kb, ke) (the borders) use the gather tables. */
  int poly, expand;
  int64_t kb, ke;
  int64_t pd[RS_POLY_MAX];
  _Alignas(64) char pw[RS_POLY_MAX * sizeof(double)];
} rs_plan;

/* Tap t of block k of a periodic pattern as read from the gather tables: (offset from the
 * block's base, weight); weight-0 padding entries read offset 0. */
static void rs_poly_entry(const rs_plan *pl, int64_t k, int64_t f, int64_t t, int64_t *d,
                          double *w) {
  int64_t o = pl->expand ? k * pl->poly + f : k, base = pl->expand ? k : k * pl->poly;
  int64_t e = t * pl->hn + o;
  *w = nn_ld(pl->hw, pl->dt, e);
  *d = *w != 0 ? pl->hidx[e] - base : 0;
}

static int rs_poly_match(const rs_plan *pl, int64_t k) {
  int64_t nf = pl->expand ? pl->poly : 1;
  for (int64_t f = 0; f < nf; f++)
    for (int64_t t = 0; t < pl->K; t++) {
      int64_t d;
      double w;
      rs_poly_entry(pl, k, f, t, &d, &w);
      if (d != pl->pd[f * pl->K + t] || w != nn_ld(pl->pw, pl->dt, f * pl->K + t)) return 0;
    }
  return 1;
}

/* Finds the periodic stretch of a flat gather map around its middle block, if any. */
static void rs_poly_detect(rs_plan *pl) {
  int64_t no = pl->Lo, ni = pl->Li;
  pl->poly = 0;
  pl->expand = no >= ni;
  int64_t P = pl->expand ? no / ni : ni / no, nblk = pl->expand ? ni : no, nf = pl->expand ? P : 1;
  if (pl->hk != RS_HG || pl->u != 1 || P < 2 || P > 4 || (pl->expand ? no % ni : ni % no) ||
      nf * pl->K > RS_POLY_MAX || nblk < 4)
    return;
  pl->poly = (int)P;
  int64_t mid = nblk / 2;
  for (int64_t f = 0; f < nf; f++)
    for (int64_t t = 0; t < pl->K; t++) {
      double w;
      rs_poly_entry(pl, mid, f, t, &pl->pd[f * pl->K + t], &w);
      nn_st(pl->pw, pl->dt, f * pl->K + t, w);
    }
  pl->kb = mid, pl->ke = mid + 1;
  while (pl->kb > 0 && rs_poly_match(pl, pl->kb - 1)) pl->kb--;
  while (pl->ke < nblk && rs_poly_match(pl, pl->ke)) pl->ke++;
  if (pl->ke - pl->kb < 2) pl->poly = 0;
}

/* Input rows [*s0, *s1) that output rows [r0, r1) read. */
static void rs_span(const rs_plan *pl, int64_t r0, int64_t r1, int64_t *s0, int64_t *s1) {
  int64_t lo = INT64_MAX, hi = -1;
  for (int64_t j = pl->vptr[r0]; j < pl->vptr[r1]; j++) {
    lo = pl->vsrc[j] < lo ? pl->vsrc[j] : lo;
    hi = pl->vsrc[j] > hi ? pl->vsrc[j] : hi;
  }
  *s0 = hi < 0 ? 0 : lo, *s1 = hi + 1;
}

/* Row blocks: as many output rows as keep the block's scratch (vertical-first: its rows of Li;
 * horizontal-first: the input rows it reads, mapped to Lo) within the slot. */
static void rs_blocks(rs_plan *pl) {
  int64_t cap = (int64_t)(pl->slot / opf_dtype_size(pl->dt)), n = 0;
  for (int64_t r0 = 0, r1; r0 < pl->Ro; r0 = r1) {
    int64_t lo = INT64_MAX, hi = -1; /* input rows read so far: [lo, hi] */
    for (r1 = r0; r1 < pl->Ro; r1++) {
      int64_t a = lo, b = hi;
      for (int64_t j = pl->vptr[r1]; j < pl->vptr[r1 + 1]; j++) {
        a = pl->vsrc[j] < a ? pl->vsrc[j] : a;
        b = pl->vsrc[j] > b ? pl->vsrc[j] : b;
      }
      int64_t need = pl->vf ? (r1 + 1 - r0) * pl->Li : (b < 0 ? 0 : b - a + 1) * pl->Lo;
      if (r1 > r0 && need > cap) break;
      lo = a, hi = b;
    }
    pl->blk[n++] = r0;
  }
  pl->blk[n] = pl->Ro;
  pl->nblk = n;
}

/* Builds the plan of the forward (bwd = 0) or backward pass; tables go to k (sizes only when
 * k->base is NULL: then only the fields that size the workspace are meaningful). Global
 * adaptive pooling treats NCHW planes as one row of H*W and NHWC images as H*W rows of one
 * pixel, so it runs as one contiguous sum per plane. */
static void rs_plan_build(const opf_case *c, int bwd, rs_plan *pl, rs_carve *k) {
  rs_geom g;
  rs_geom_of(c, &g);
  const rs_image *m = &g.m;
  memset(pl, 0, sizeof *pl);
  opf_dtype dt = pl->dt = c->dtype;
  size_t es = opf_dtype_size(dt);
  rs_axis ah = g.ah, aw = g.aw;
  if (g.kind == RS_ADAPTIVE && g.OH == 1 && g.OW == 1) {
    int64_t hw = m->H * m->W;
    ah.in = m->nhwc ? hw : 1;
    aw.in = m->nhwc ? 1 : hw;
  }
  int64_t u = m->nhwc ? m->C : 1;
  pl->P = m->nhwc ? m->N : m->N * m->C;
  pl->u = u;
  /* forward sizes; the backward plan swaps in and out */
  int64_t Ri = ah.in, Ro = ah.out, Li = aw.in * u, Lo = aw.out * u;
  pl->Ri = bwd ? Ro : Ri, pl->Ro = bwd ? Ri : Ro;
  pl->Li = bwd ? Lo : Li, pl->Lo = bwd ? Li : Lo;
  int64_t lmax = pl->Li > pl->Lo ? pl->Li : pl->Lo, blk = RS_BLOCK_BYTES / (int64_t)es;
  pl->slot =
      ((size_t)(blk > RS_CACHE_MAX * lmax ? blk : RS_CACHE_MAX * lmax) * es + 63) & ~(size_t)63;
  /* vertical: the identity, or CSR taps */
  pl->ident = Ri == Ro;
  for (int64_t r = 0; r < Ro && pl->ident; r++) {
    int64_t s;
    double w;
    rs_tap(&ah, r, 0, &s, &w);
    pl->ident = rs_tap_n(&ah, r) == 1 && s == r && w == 1;
  }
  if (pl->ident) {
    pl->Ri = pl->Ro = pl->P * Ri;
    pl->P = 1;
    pl->brows = blk / lmax > 1 ? blk / lmax : 1;
    if (!bwd && g.kind == RS_ADAPTIVE && Lo == 1 && pl->brows >= 64) /* groups for rs_sumv */
      pl->brows &= ~(int64_t)15;
    pl->nblk = (pl->Ro + pl->brows - 1) / pl->brows;
  } else {
    rs_sink vs = {0};
    vs.dt = dt;
    pl->vmax = bwd ? rs_fill_bwd(&ah, &vs) : rs_fill_fwd(&ah, &vs);
    for (int64_t r = 0; r < ah.out; r++) pl->nnz += rs_tap_n(&ah, r);
    pl->vptr = rs_take(k, (size_t)(pl->Ro + 1) * sizeof(int64_t));
    pl->vsrc = rs_take(k, (size_t)pl->nnz * sizeof(int64_t));
    pl->vw = rs_take(k, (size_t)pl->nnz * es);
    pl->blk = rs_take(k, (size_t)(pl->Ro + 1) * sizeof(int64_t));
    if (k->base) {
      vs.ptr = pl->vptr, vs.src = pl->vsrc, vs.w = pl->vw;
      if (bwd) rs_fill_bwd(&ah, &vs);
      else rs_fill_fwd(&ah, &vs);
    }
  }
  /* horizontal */
  if (g.kind == RS_ADAPTIVE) {
    pl->hk = bwd ? RS_HBT : RS_HB;
    pl->nb = aw.out;
    pl->ba = rs_take(k, (size_t)pl->nb * sizeof(int64_t));
    pl->bb = rs_take(k, (size_t)pl->nb * sizeof(int64_t));
    pl->bs = rs_take(k, (size_t)pl->nb * es);
    pl->disjoint = aw.out <= aw.in && aw.in % aw.out == 0;
    if (k->base)
      for (int64_t o = 0; o < pl->nb; o++) {
        pl->ba[o] = rs_bin_lo(&aw, o), pl->bb[o] = rs_bin_hi(&aw, o);
        nn_st(pl->bs, dt, o, 1.0 / (double)(pl->bb[o] - pl->ba[o]));
      }
  } else {
    pl->hk = RS_HG;
    pl->flat = u < RS_PIXEL_U;
    int64_t pix = bwd ? aw.in : aw.out; /* pixels of H's output */
    rs_sink hs = {0};
    hs.dt = dt;
    pl->K = bwd ? rs_fill_bwd(&aw, &hs) : rs_fill_fwd(&aw, &hs);
    pl->unit = g.kind == RS_NEAREST && !bwd;
    pl->hn = pl->flat ? pix * u : pix;
    pl->hidx = rs_take(k, (size_t)(pl->K * pl->hn) * sizeof(int32_t));
    pl->hw = rs_take(k, (size_t)(pl->K * pl->hn) * es);
    if (k->base) {
      /* padding entries (inputs read by fewer than K outputs): weight 0 of element 0 */
      memset(pl->hidx, 0, (size_t)(pl->K * pl->hn) * sizeof(int32_t));
      memset(pl->hw, 0, (size_t)(pl->K * pl->hn) * es);
      hs.idx = pl->hidx, hs.w = pl->hw, hs.stride = pl->hn;
      hs.u = pl->flat ? u : 1, hs.su = pl->flat ? u : 1;
      if (bwd) rs_fill_bwd(&aw, &hs);
      else rs_fill_fwd(&aw, &hs);
      rs_poly_detect(pl);
    }
  }
  if (!k->base || pl->ident) return;
  /* Order: vertical-first costs a pass over Li per tap and the horizontal map of every
   * output row; horizontal-first maps every input row once and combines Lo-long rows.
   * Gathers count triple. Horizontal-first needs each row's inputs to fit the slot. */
  double border = pl->poly ? (double)(pl->hn - (pl->ke - pl->kb) * (pl->expand ? pl->poly : 1)) : 0;
  double hc = pl->hk == RS_HG ? ((double)pl->Lo * (pl->unit || pl->poly ? 1.0 : 3.0) + 8 * border) *
                                    (double)pl->K
              : pl->hk == RS_HB ? (double)(pl->Li + pl->Lo)
                                : (double)(pl->Lo * (pl->disjoint ? 1 : 2) + pl->Li);
  double vf = (double)pl->nnz * (double)pl->Li + (double)pl->Ro * hc;
  double hf = (double)pl->Ri * hc + (double)pl->nnz * (double)pl->Lo;
  pl->vf = vf <= hf;
  for (int64_t r = 0; r < pl->Ro && !pl->vf; r++) {
    int64_t s0, s1;
    rs_span(pl, r, r + 1, &s0, &s1);
    pl->vf = s1 - s0 > RS_CACHE_MAX;
  }
  rs_blocks(pl);
}

/* ---- kernels, one template for float and double; each maps `rows` rows (pitches ldy and
 * ldx) so short rows cost no call each ---- */
typedef float rs_vec_f32 __attribute__((vector_size(64)));
typedef double rs_vec_f64 __attribute__((vector_size(64)));
typedef int32_t rs_idx_f32 __attribute__((vector_size(64)));
typedef int64_t rs_idx_f64 __attribute__((vector_size(64)));
#define RS_LANES_f32 16
#define RS_LANES_f64 8
/* Prefetch distance of rs_sumv's streams. 100 MB of 7x7 planes on one core (a standalone loop,
 * best of 7, two rounds): 16 KiB 44.7-47.1 GB/s, 12 KiB 44.6-46.2, 8 KiB 44.2-45.8, none
 * 26.7; a plain read of the same bytes 43.6-47.2. */
#define RS_PREFETCH 16384
/* Fold a vector into lane 0: add the upper half of every span onto its lower half. */
#define RS_HSUM_f32(a)                                                                         \
  (a += __builtin_shuffle(a, (rs_idx_f32){8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7}), \
   a += __builtin_shuffle(a, (rs_idx_f32){4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3}),     \
   a += __builtin_shuffle(a, (rs_idx_f32){2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1}),     \
   a += __builtin_shuffle(a, (rs_idx_f32){1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0}))
#define RS_HSUM_f64(a)                                                                         \
  (a += __builtin_shuffle(a, (rs_idx_f64){4, 5, 6, 7, 0, 1, 2, 3}),                             \
   a += __builtin_shuffle(a, (rs_idx_f64){2, 3, 0, 1, 2, 3, 0, 1}),                             \
   a += __builtin_shuffle(a, (rs_idx_f64){1, 0, 1, 0, 1, 0, 1, 0}))

#define RS_ROWS for (int64_t r = 0; r < rows; r++)
#define RS_ROW_PTRS(T)                                                                          \
  T *restrict y = Y + r * ldy;                                                                 \
  const T *restrict x = X + r * ldx

#define RS_KERNELS(T, S)                                                                       \
  /* Output rows [r0, r1): y row r - r0 = sum of w * base row (src - s0) over its CSR taps,   \
   * two taps a pass; a row without taps is zero. */                                          \
  OPF_VEC static void rs_vrows_##S(T *restrict Y, int64_t ldy, const T *restrict base,        \
                                   int64_t ldb, const int64_t *vptr, const int64_t *vsrc,     \
                                   const T *vw, int64_t r0, int64_t r1, int64_t s0,           \
                                   int64_t L) {                                               \
    for (int64_t r = r0, run; r < r1; r += run) {                                             \
      T *restrict y = Y + (r - r0) * ldy;                                                     \
      int64_t a = vptr[r], K = vptr[r + 1] - a;                                               \
      const int64_t *src = vsrc + a;                                                          \
      const T *w = vw + a;                                                                    \
      if (K == 0) {                                                                           \
        memset(y, 0, (size_t)L * sizeof(T));                                                  \
      } else if (K == 1 && w[0] == 1) {                                                       \
        memcpy(y, base + (src[0] - s0) * ldb, (size_t)L * sizeof(T));                         \
      } else { /* up to four taps a pass; absent taps read row 0 with weight 0 */             \
        for (int64_t k = 0; k < K; k += 4) {                                                  \
          const T *restrict q[4];                                                             \
          T c[4];                                                                             \
          for (int t = 0; t < 4; t++) {                                                       \
            q[t] = base + (k + t < K ? src[k + t] - s0 : src[0] - s0) * ldb;                  \
            c[t] = k + t < K ? w[k + t] : 0;                                                  \
          }                                                                                   \
          const T *restrict q0 = q[0], *restrict q1 = q[1], *restrict q2 = q[2];              \
          const T *restrict q3 = q[3];                                                        \
          T c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];                                       \
          if (k == 0 && K <= 2)                                                               \
            for (int64_t i = 0; i < L; i++) y[i] = c0 * q0[i] + c1 * q1[i];                   \
          else if (k == 0)                                                                    \
            for (int64_t i = 0; i < L; i++)                                                   \
              y[i] = c0 * q0[i] + c1 * q1[i] + c2 * q2[i] + c3 * q3[i];                       \
          else                                                                                \
            for (int64_t i = 0; i < L; i++)                                                   \
              y[i] += c0 * q0[i] + c1 * q1[i] + c2 * q2[i] + c3 * q3[i];                      \
        }                                                                                     \
      }                                                                                       \
      /* the following rows with the same taps (nearest copies, one adaptive bin backward)   \
       * are copies of this one, made in doubling blocks when rows are back to back */        \
      for (run = 1; r + run < r1 && vptr[r + run + 1] - vptr[r + run] == K; run++) {          \
        int64_t b = vptr[r + run], t = 0;                                                     \
        while (t < K && vsrc[b + t] == src[t] && vw[b + t] == w[t]) t++;                      \
        if (t < K) break;                                                                     \
      }                                                                                       \
      for (int64_t done = 1; done < run;) {                                                   \
        int64_t n = ldy == L && done < run - done ? done : 1;                                 \
        memcpy(y + done * ldy, y, (size_t)((n - 1) * ldy + L) * sizeof(T));                   \
        done += n;                                                                            \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  /* Gather map: y[o] = sum_k w[k][o] * x[idx[k][o]] over n table entries (flat), or whole   \
   * pixels of u elements (y[o*u + c] from x[idx*u + c]); entry k of o at k * ld + o; unit:   \
   * one tap of weight 1. */                                                                  \
  OPF_VEC static void rs_gather_##S(T *restrict Y, int64_t ldy, const T *restrict X,          \
                                    int64_t ldx, int64_t rows, const int32_t *restrict idx,   \
                                    const T *restrict w, int64_t K, int64_t n, int64_t ld,    \
                                    int64_t u, int flat, int unit) {                          \
    RS_ROWS {                                                                                 \
      RS_ROW_PTRS(T);                                                                            \
      if (flat) {                                                                             \
        if (unit) {                                                                           \
          for (int64_t o = 0; o < n; o++) y[o] = x[idx[o]];                                   \
          continue;                                                                           \
        }                                                                                     \
        if (K >= 2)                                                                           \
          for (int64_t o = 0; o < n; o++)                                                     \
            y[o] = w[o] * x[idx[o]] + w[ld + o] * x[idx[ld + o]];                             \
        else                                                                                  \
          for (int64_t o = 0; o < n; o++) y[o] = w[o] * x[idx[o]];                            \
        for (int64_t k = 2; k < K; k++)                                                       \
          for (int64_t o = 0; o < n; o++) y[o] += w[k * ld + o] * x[idx[k * ld + o]];        \
        continue;                                                                             \
      }                                                                                       \
      for (int64_t o = 0; o < n; o++) {                                                       \
        T *restrict yo = y + o * u;                                                           \
        const T *restrict x0 = x + (int64_t)idx[o] * u;                                       \
        if (unit) {                                                                           \
          memcpy(yo, x0, (size_t)u * sizeof(T));                                              \
          continue;                                                                           \
        }                                                                                     \
        T w0 = w[o];                                                                          \
        if (K == 2) { /* bilinear: both taps in one pass */                                   \
          const T *restrict x1 = x + (int64_t)idx[ld + o] * u;                                \
          T w1 = w[ld + o];                                                                   \
          for (int64_t c = 0; c < u; c++) yo[c] = w0 * x0[c] + w1 * x1[c];                    \
          continue;                                                                           \
        }                                                                                     \
        for (int64_t c = 0; c < u; c++) yo[c] = w0 * x0[c];                                   \
        for (int64_t k = 1; k < K; k++) {                                                     \
          const T *restrict xk = x + (int64_t)idx[k * ld + o] * u;                            \
          T wk = w[k * ld + o];                                                               \
          for (int64_t c = 0; c < u; c++) yo[c] += wk * xk[c];                                \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  /* Sum of x[0:n]: one vector accumulator folded by halves, plus the scalar tail (inlined  \
   * into each ISA clone). */                                                                 \
  static inline __attribute__((always_inline)) T rs_sum_##S(const T *restrict x, int64_t n) { \
    rs_vec_##S a = {0}, v;                                                                    \
    int64_t i = 0;                                                                            \
    for (; i + RS_LANES_##S <= n; i += RS_LANES_##S) {                                        \
      memcpy(&v, x + i, sizeof v);                                                            \
      a += v;                                                                                 \
    }                                                                                         \
    T s = 0;                                                                                  \
    for (int64_t j = i; j < n; j++) s += x[j];                                                \
    if (i) RS_HSUM_##S(a), s += a[0];                                                         \
    return s;                                                                                 \
  }                                                                                           \
  /* s * rs_sum of each of V rows (pitch ldx) of n >= V elements, into y[0, V): bit for bit \
   * rs_sum's lane sums, fold and tail, but the folds of the V rows together (nn_lanesums:  \
   * V - 1 merges instead of 4 V shuffles and adds), and the lines RS_PREFETCH bytes ahead   \
   * requested (global average pooling of 7x7 planes reads 196-byte rows: without the       \
   * prefetches it reached 32 GB/s from DRAM on one core, where a plain read does 45-50). */ \
  static inline __attribute__((always_inline)) void rs_sumv_##S(                              \
      T *restrict y, const T *restrict x, int64_t ldx, int64_t n, T s) {                      \
    enum { V = RS_LANES_##S };                                                                \
    rs_vec_##S m[V], t;                                                                       \
    const int64_t nv = n / V * V;                                                             \
    for (int p = 0; p < V; p++) {                                                             \
      const T *restrict xp = x + p * ldx;                                                     \
      for (int64_t q = 0; q < n; q += 64 / (int64_t)sizeof(T))                                \
        __builtin_prefetch((const void *)((uintptr_t)(xp + q) + RS_PREFETCH));                \
      rs_vec_##S acc = {0}, v;                                                                \
      for (int64_t i = 0; i < nv; i += V) {                                                   \
        memcpy(&v, xp + i, sizeof v);                                                         \
        acc += v;                                                                             \
      }                                                                                       \
      T tail = 0;                                                                             \
      for (int64_t j = nv; j < n; j++) tail += xp[j];                                         \
      m[p] = acc, t[p] = tail;                                                                \
    }                                                                                         \
    nn_lanesums_##S(m);                                                                       \
    t = s * (t + m[0]);                                                                       \
    memcpy(y, &t, sizeof t);                                                                  \
  }                                                                                           \
  /* Box map: y[o*u + c] = s[o] * sum over pixels [a[o], b[o]) of x[p*u + c]. One bin of    \
   * single elements over whole output rows of one (global average pooling, NCHW): V rows at \
   * a time by rs_sumv, the rest (and every other map) row by row. */                        \
  OPF_VEC static void rs_box_##S(T *restrict Y, int64_t ldy, const T *restrict X, int64_t ldx, \
                                 int64_t rows, const int64_t *a, const int64_t *b,            \
                                 const T *s, int64_t nb, int64_t u) {                         \
    int64_t r0 = 0;                                                                           \
    if (u == 1 && nb == 1 && ldy == 1 && b[0] - a[0] >= RS_LANES_##S)                        \
      for (; r0 + RS_LANES_##S <= rows; r0 += RS_LANES_##S)                                   \
        rs_sumv_##S(Y + r0, X + r0 * ldx + a[0], ldx, b[0] - a[0], s[0]);                     \
    for (int64_t r = r0; r < rows; r++) {                                                     \
      RS_ROW_PTRS(T);                                                                            \
      for (int64_t o = 0; o < nb; o++) {                                                      \
        if (u == 1) {                                                                         \
          y[o] = s[o] * rs_sum_##S(x + a[o], b[o] - a[o]);                                    \
          continue;                                                                           \
        }                                                                                     \
        T *restrict yo = y + o * u, so = s[o];                                                \
        const T *restrict x0 = x + a[o] * u;                                                  \
        for (int64_t c = 0; c < u; c++) yo[c] = x0[c];                                        \
        for (int64_t p = a[o] + 1; p < b[o]; p++) {                                           \
          const T *restrict xp = x + p * u;                                                   \
          for (int64_t c = 0; c < u; c++) yo[c] += xp[c];                                     \
        }                                                                                     \
        for (int64_t c = 0; c < u; c++) yo[c] *= so;                                          \
      }                                                                                       \
    }                                                                                         \
  }                                                                                           \
  /* Adjoint of the box map: dx[p*u + c] = sum over bins o holding p of s[o] * g[o*u + c]    \
   * (n pixels of dx). Disjoint bins are written directly, overlapping ones accumulated. */   \
  OPF_VEC static void rs_boxt_##S(T *restrict Y, int64_t ldy, const T *restrict X,            \
                                  int64_t ldx, int64_t rows, const int64_t *a,                \
                                  const int64_t *b, const T *s, int64_t nb, int64_t n,        \
                                  int64_t u, int disjoint) {                                  \
    RS_ROWS {                                                                                 \
      RS_ROW_PTRS(T);                                                                            \
      if (!disjoint) memset(y, 0, (size_t)(n * u) * sizeof(T));                               \
      for (int64_t o = 0; o < nb; o++) {                                                      \
        T so = s[o];                                                                          \
        if (u == 1) { /* a run of one value */                                                \
          T v = so * x[o];                                                                    \
          T *restrict d = y + a[o];                                                           \
          if (disjoint)                                                                       \
            for (int64_t p = 0; p < b[o] - a[o]; p++) d[p] = v;                               \
          else                                                                                \
            for (int64_t p = 0; p < b[o] - a[o]; p++) d[p] += v;                              \
          continue;                                                                           \
        }                                                                                     \
        const T *restrict go = x + o * u;                                                     \
        for (int64_t p = a[o]; p < b[o]; p++) {                                               \
          T *restrict d = y + p * u;                                                          \
          if (disjoint)                                                                       \
            for (int64_t c = 0; c < u; c++) d[c] = so * go[c];                                \
          else                                                                                \
            for (int64_t c = 0; c < u; c++) d[c] += so * go[c];                               \
        }                                                                                     \
      }                                                                                       \
    }                                                                                         \
  }

RS_KERNELS(float, f32)
RS_KERNELS(double, f64)

/* Periodic maps for a fixed ratio P over blocks [k0, k1) of one long row (consecutive rows
 * of a block concatenated: the pattern carries across them, and the garbage it leaves at row
 * borders is overwritten by rs_border): expand writes P interleaved outputs per input
 * element, reduce reads P-strided inputs; one pass per tap (the first assigns). */
#define RS_POLY_KERNELS(T, S, P)                                                               \
  OPF_VEC static void rs_expand##P##_##S(T *restrict y, const T *restrict x, const int64_t *d, \
                                         const T *w, int64_t K, int64_t k0, int64_t k1) {     \
    if (K == 2) { /* bilinear: both taps in one pass */                                       \
      int64_t d0[P], d1[P];                                                                   \
      T w0[P], w1[P];                                                                         \
      for (int f = 0; f < P; f++)                                                             \
        d0[f] = d[2 * f], d1[f] = d[2 * f + 1], w0[f] = w[2 * f], w1[f] = w[2 * f + 1];       \
      for (int64_t k = k0; k < k1; k++) {                                                     \
        _Pragma("GCC unroll 4") for (int f = 0; f < P; f++)                                   \
            y[k * P + f] = w0[f] * x[k + d0[f]] + w1[f] * x[k + d1[f]];                       \
      }                                                                                       \
      return;                                                                                 \
    }                                                                                         \
    for (int64_t t = 0; t < K; t++) {                                                         \
      int64_t dd[P];                                                                          \
      T ww[P];                                                                                \
      for (int f = 0; f < P; f++) dd[f] = d[f * K + t], ww[f] = w[f * K + t];                 \
      if (t == 0)                                                                             \
        for (int64_t k = k0; k < k1; k++) {                                                   \
          _Pragma("GCC unroll 4") for (int f = 0; f < P; f++)                                 \
              y[k * P + f] = ww[f] * x[k + dd[f]];                                            \
        }                                                                                     \
      else                                                                                    \
        for (int64_t k = k0; k < k1; k++) {                                                   \
          _Pragma("GCC unroll 4") for (int f = 0; f < P; f++)                                 \
              y[k * P + f] += ww[f] * x[k + dd[f]];                                           \
        }                                                                                     \
    }                                                                                         \
  }                                                                                           \
  OPF_VEC static void rs_reduce##P##_##S(T *restrict y, const T *restrict x, const int64_t *d, \
                                         const T *w, int64_t K, int64_t k0, int64_t k1) {     \
    if (K <= 4) { /* nearest and bilinear adjoints: every tap in one pass */                  \
      int64_t e[4];                                                                           \
      T c[4];                                                                                 \
      for (int t = 0; t < 4; t++) e[t] = t < K ? d[t] : 0, c[t] = t < K ? w[t] : 0;           \
      for (int64_t k = k0; k < k1; k++)                                                       \
        y[k] = c[0] * x[P * k + e[0]] + c[1] * x[P * k + e[1]] + c[2] * x[P * k + e[2]] +     \
               c[3] * x[P * k + e[3]];                                                        \
      return;                                                                                 \
    }                                                                                         \
    for (int64_t t = 0; t < K; t++) {                                                         \
      int64_t e = d[t];                                                                       \
      T wt = w[t];                                                                            \
      if (t == 0)                                                                             \
        for (int64_t k = k0; k < k1; k++) y[k] = wt * x[P * k + e];                           \
      else                                                                                    \
        for (int64_t k = k0; k < k1; k++) y[k] += wt * x[P * k + e];                          \
    }                                                                                         \
  }

/* Outputs [o0, o1) of every row from the flat gather tables, scalar: a few border outputs
 * per row, where a vector loop's set-up would cost more than the work; each output's taps
 * are loaded once for all the rows. */
#define RS_BORDER(T, S)                                                                        \
  __attribute__((optimize("no-tree-vectorize"))) static void rs_border_##S(                   \
      T *Y, int64_t ldy, const T *X, int64_t ldx, int64_t rows, const int32_t *idx,           \
      const T *w, int64_t K, int64_t ld, int64_t o0, int64_t o1) {                            \
    for (int64_t o = o0; o < o1; o++) {                                                       \
      int64_t i0 = idx[o], i1 = K > 1 ? idx[ld + o] : 0;                                      \
      T w0 = w[o], w1 = K > 1 ? w[ld + o] : 0;                                                \
      for (int64_t r = 0; r < rows; r++) {                                                    \
        const T *x = X + r * ldx;                                                             \
        T acc = w0 * x[i0] + w1 * x[i1];                                                      \
        for (int64_t k = 2; k < K; k++) acc += w[k * ld + o] * x[idx[k * ld + o]];            \
        Y[r * ldy + o] = acc;                                                                 \
      }                                                                                       \
    }                                                                                         \
  }
RS_BORDER(float, f32)
RS_BORDER(double, f64)

RS_POLY_KERNELS(float, f32, 2)
RS_POLY_KERNELS(float, f32, 3)
RS_POLY_KERNELS(float, f32, 4)
RS_POLY_KERNELS(double, f64, 2)
RS_POLY_KERNELS(double, f64, 3)
RS_POLY_KERNELS(double, f64, 4)

typedef void (*rs_poly_fn)(void *y, const void *x, const int64_t *d, const void *w, int64_t K,
                           int64_t k0, int64_t k1);
static const rs_poly_fn rs_poly_fns[2][2][3] = { /* [dtype][expand][P - 2] */
    {{(rs_poly_fn)rs_reduce2_f32, (rs_poly_fn)rs_reduce3_f32, (rs_poly_fn)rs_reduce4_f32},
     {(rs_poly_fn)rs_expand2_f32, (rs_poly_fn)rs_expand3_f32, (rs_poly_fn)rs_expand4_f32}},
    {{(rs_poly_fn)rs_reduce2_f64, (rs_poly_fn)rs_reduce3_f64, (rs_poly_fn)rs_reduce4_f64},
     {(rs_poly_fn)rs_expand2_f64, (rs_poly_fn)rs_expand3_f64, (rs_poly_fn)rs_expand4_f64}}};

/* A row-block operand: rows of pitch ld from p. */
typedef struct rs_rows_at {
  void *p;
  int64_t ld;
} rs_rows_at;

/* Gather entries [o0, o1) of every row. */
static void rs_gather(const rs_plan *pl, rs_rows_at y, const void *x, int64_t ldx, int64_t rows,
                      int64_t o0, int64_t o1) {
  if (o0 >= o1) return;
  size_t off = (size_t)(pl->flat ? o0 : o0 * pl->u) * opf_dtype_size(pl->dt);
  if (pl->dt == OPF_F32)
    rs_gather_f32((float *)((char *)y.p + off), y.ld, x, ldx, rows, pl->hidx + o0,
                  (const float *)pl->hw + o0, pl->K, o1 - o0, pl->hn, pl->u, pl->flat, pl->unit);
  else
    rs_gather_f64((double *)((char *)y.p + off), y.ld, x, ldx, rows, pl->hidx + o0,
                  (const double *)pl->hw + o0, pl->K, o1 - o0, pl->hn, pl->u, pl->flat, pl->unit);
}

/* H of `rows` rows: Li elements of each x row into Lo elements of each y row. */
static void rs_hmap(const rs_plan *pl, rs_rows_at y, const void *x, int64_t ldx, int64_t rows) {
  int f = pl->dt == OPF_F32;
  switch (pl->hk) {
  case RS_HG:
    if (pl->poly) { /* the periodic stretch by its kernel, then the borders by the tables */
      int64_t P = pl->poly, o0 = pl->expand ? pl->kb * P : pl->kb;
      int64_t o1 = pl->expand ? pl->ke * P : pl->ke, nk = pl->expand ? pl->Li : pl->Lo;
      rs_poly_fn fn = rs_poly_fns[pl->dt][pl->expand][P - 2];
      if (y.ld == pl->Lo && ldx == pl->Li) { /* rows back to back: one long row */
        fn(y.p, x, pl->pd, pl->pw, pl->K, pl->kb, (rows - 1) * nk + pl->ke);
      } else {
        size_t es = opf_dtype_size(pl->dt);
        for (int64_t r = 0; r < rows; r++)
          fn((char *)y.p + (size_t)(r * y.ld) * es, (const char *)x + (size_t)(r * ldx) * es,
             pl->pd, pl->pw, pl->K, pl->kb, pl->ke);
      }
      if (f) {
        rs_border_f32(y.p, y.ld, x, ldx, rows, pl->hidx, pl->hw, pl->K, pl->hn, 0, o0);
        rs_border_f32(y.p, y.ld, x, ldx, rows, pl->hidx, pl->hw, pl->K, pl->hn, o1, pl->hn);
      } else {
        rs_border_f64(y.p, y.ld, x, ldx, rows, pl->hidx, pl->hw, pl->K, pl->hn, 0, o0);
        rs_border_f64(y.p, y.ld, x, ldx, rows, pl->hidx, pl->hw, pl->K, pl->hn, o1, pl->hn);
      }
    } else {
      rs_gather(pl, y, x, ldx, rows, 0, pl->hn);
    }
    break;
  case RS_HB:
    if (f) rs_box_f32(y.p, y.ld, x, ldx, rows, pl->ba, pl->bb, pl->bs, pl->nb, pl->u);
    else rs_box_f64(y.p, y.ld, x, ldx, rows, pl->ba, pl->bb, pl->bs, pl->nb, pl->u);
    break;
  default:
    if (f)
      rs_boxt_f32(y.p, y.ld, x, ldx, rows, pl->ba, pl->bb, pl->bs, pl->nb, pl->Lo / pl->u, pl->u,
                  pl->disjoint);
    else
      rs_boxt_f64(y.p, y.ld, x, ldx, rows, pl->ba, pl->bb, pl->bs, pl->nb, pl->Lo / pl->u, pl->u,
                  pl->disjoint);
  }
}

/* Output rows [r0, r1) from the input rows starting at s0 (pitch ldb). */
static void rs_vrows(const rs_plan *pl, rs_rows_at y, const void *base, int64_t ldb, int64_t r0,
                     int64_t r1, int64_t s0, int64_t L) {
  if (pl->dt == OPF_F32)
    rs_vrows_f32(y.p, y.ld, base, ldb, pl->vptr, pl->vsrc, pl->vw, r0, r1, s0, L);
  else
    rs_vrows_f64(y.p, y.ld, base, ldb, pl->vptr, pl->vsrc, pl->vw, r0, r1, s0, L);
}

typedef struct rs_exec {
  const rs_plan *pl;
  const char *x; /* planes in */
  char *y;       /* planes out */
  char *slots;
} rs_exec;

/* Items [lo, hi) of the flattened (plane, row block) index. */
static void rs_items(void *ctx, int64_t lo, int64_t hi, int slot) {
  const rs_exec *e = ctx;
  const rs_plan *pl = e->pl;
  size_t es = opf_dtype_size(pl->dt);
  char *scr = e->slots + (size_t)slot * pl->slot;
  for (int64_t it = lo; it < hi; it++) {
    int64_t p = it / pl->nblk, b = it % pl->nblk, r0, r1;
    if (pl->ident) {
      r0 = b * pl->brows, r1 = r0 + pl->brows < pl->Ro ? r0 + pl->brows : pl->Ro;
    } else {
      r0 = pl->blk[b], r1 = pl->blk[b + 1];
    }
    const char *xp = e->x + (size_t)(p * pl->Ri * pl->Li) * es;
    rs_rows_at yb = {e->y + (size_t)((p * pl->Ro + r0) * pl->Lo) * es, pl->Lo};
    if (pl->ident) {
      rs_hmap(pl, yb, xp + (size_t)(r0 * pl->Li) * es, pl->Li, r1 - r0);
    } else if (pl->vf) {
      rs_vrows(pl, (rs_rows_at){scr, pl->Li}, xp, pl->Li, r0, r1, 0, pl->Li);
      rs_hmap(pl, yb, scr, pl->Li, r1 - r0);
    } else {
      int64_t s0, s1;
      rs_span(pl, r0, r1, &s0, &s1);
      if (s1 > s0)
        rs_hmap(pl, (rs_rows_at){scr, pl->Lo}, xp + (size_t)(s0 * pl->Li) * es, pl->Li, s1 - s0);
      rs_vrows(pl, yb, scr, pl->Lo, r0, r1, s0, pl->Lo);
    }
  }
}

/* ---- infer, passes ---- */
static int rs_infer(opf_case *c) {
  int kind = rs_kind(c), ad = kind == RS_ADAPTIVE;
  int nhwc = (int)c->p[ad ? PA_LAYOUT : PU_LAYOUT] == RS_NHWC;
  rs_image m = {0};
  int rc = rs_check_image(c, 0, nhwc, c->op->name, &m);
  if (rc) return rc;
  const opf_list *sz = &c->list[ad ? PA_SIZE : PU_SIZE];
  const char *pn = ad ? "output_size" : "size";
  char s[96];
  opf_shape_str(&c->in[0], s, sizeof s);
  if (sz->n > 2 || (ad && sz->n == 0))
    return opf_case_error(c, OPF_EINVAL, "%s needs 1 or 2 values (oh[,ow]), got %d", pn,
                          sz->n);
  if (!ad && sz->n == 0 && !(c->p[PU_SCALE] > 0))
    return opf_case_error(c, OPF_EINVAL, "scale=%g must be positive (or give size=OH,OW)",
                          c->p[PU_SCALE]);
  rs_geom g;
  rs_geom_of(c, &g);
  if (g.OH <= 0 || g.OW <= 0) {
    if (sz->n)
      return opf_case_error(c, OPF_EINVAL, "output size %lldx%lld for x %s has a zero side",
                            (long long)g.OH, (long long)g.OW, s);
    return opf_case_error(c, OPF_EINVAL, "output size %lldx%lld for x %s with scale=%g has a zero "
                          "side", (long long)g.OH, (long long)g.OW, s, c->p[PU_SCALE]);
  }
  /* int32 gather indices and exact o*in products */
  int64_t big = m.W * m.C > g.OW * m.C ? m.W * m.C : g.OW * m.C;
  if (big > INT32_MAX || m.H * m.W > INT32_MAX || g.OH > INT32_MAX || g.OW > INT32_MAX)
    return opf_case_error(c, OPF_EINVAL, "rows of x %s or of the %lldx%lld output exceed 2^31 "
                          "elements", s, (long long)g.OH, (long long)g.OW);
  rs_image o = m;
  o.H = g.OH, o.W = g.OW;
  int64_t shape[4];
  rs_shape(&o, shape);
  opf_set_out(c, 0, c->dtype, 4, shape);
  /* workspace: one scratch slot per thread, then the larger direction's tables */
  size_t tab = 0, slot = 0;
  for (int bwd = 0; bwd < 2; bwd++) {
    rs_plan pl;
    rs_carve k = {NULL, 0};
    rs_plan_build(c, bwd, &pl, &k);
    tab = k.off > tab ? k.off : tab;
    slot = pl.slot; /* the same both ways: Li and Lo swap */
  }
  c->ws_bytes = (size_t)omp_get_max_threads() * slot + tab;
  return OPF_OK;
}

/* Runs one direction: its tables at the end of the workspace, the slots from the start. */
static void rs_run(opf_case *c, int bwd) {
  rs_plan pl;
  rs_carve k = {NULL, 0};
  rs_plan_build(c, bwd, &pl, &k); /* sizes only */
  size_t tab = k.off;
  k = (rs_carve){(char *)c->ws + (c->ws_bytes - tab), 0};
  rs_plan_build(c, bwd, &pl, &k);
  rs_exec e = {&pl, bwd ? c->gout[0].data : c->in[0].data, bwd ? c->gin[0].data : c->out[0].data,
               c->ws};
  double work = (double)pl.P * (double)(pl.Ri * pl.Li + pl.Ro * pl.Lo);
  rs_run_items(pl.P * pl.nblk, work, (int)((c->ws_bytes - tab) / pl.slot), rs_items, &e);
}

static int rs_forward(opf_case *c) {
  rs_run(c, 0);
  return OPF_OK;
}

static int rs_backward(opf_case *c) {
  if (c->gin[0].data) rs_run(c, 1);
  return OPF_OK;
}

/* Reference: every output element as the sum over its taps along H and W, straight from the
 * axis definitions. */
static int rs_reference(opf_case *c) {
  rs_geom g;
  rs_geom_of(c, &g);
  const rs_image *m = &g.m;
  rs_image o = *m;
  o.H = g.OH, o.W = g.OW;
  opf_dtype dt = c->dtype;
  for (int64_t n = 0; n < m->N; n++)
    for (int64_t ch = 0; ch < m->C; ch++)
      for (int64_t oh = 0; oh < g.OH; oh++)
        for (int64_t ow = 0; ow < g.OW; ow++) {
          double acc = 0;
          for (int64_t a = 0; a < rs_tap_n(&g.ah, oh); a++)
            for (int64_t b = 0; b < rs_tap_n(&g.aw, ow); b++) {
              int64_t sh, sw;
              double wh, ww;
              rs_tap(&g.ah, oh, a, &sh, &wh);
              rs_tap(&g.aw, ow, b, &sw, &ww);
              acc += wh * ww * nn_ld(c->in[0].data, dt, rs_at(m, n, ch, sh, sw));
            }
          nn_st(c->out[0].data, dt, rs_at(&o, n, ch, oh, ow), acc);
        }
  return OPF_OK;
}

/* Work: nearest moves data (no flops forward; one add per gradient element backward);
 * bilinear weighs 4 taps per output (4 multiplies + 3 adds) both ways; adaptive adds every
 * element of every bin (the bins' row extents times their column extents) and scales each
 * output, both ways. */
static double rs_flops(const opf_case *c, opf_pass p) {
  rs_geom g;
  rs_geom_of(c, &g);
  double planes = (double)g.m.N * (double)g.m.C, outs = planes * (double)g.OH * (double)g.OW;
  double fwd, bwd;
  if (g.kind == RS_NEAREST) {
    fwd = 0, bwd = outs;
  } else if (g.kind == RS_BILINEAR) {
    fwd = bwd = 7 * outs;
  } else {
    double sh = 0, sw = 0;
    for (int64_t o = 0; o < g.OH; o++) sh += (double)rs_tap_n(&g.ah, o);
    for (int64_t o = 0; o < g.OW; o++) sw += (double)rs_tap_n(&g.aw, o);
    fwd = bwd = planes * sh * sw + outs;
  }
  return opf_pass_sum(p, fwd, bwd);
}

/* fwd: x read, y written; bwd: g read, dx written. */
static double rs_bytes(const opf_case *c, opf_pass p) {
  double e = (double)opf_dtype_size(c->dtype);
  double t = ((double)opf_numel(&c->in[0]) + (double)opf_numel(&c->out[0])) * e;
  return opf_pass_sum(p, t, t);
}

#define RS_LAYOUT_PARAM                                                                        \
  {"layout", OPF_P_ENUM, RS_NCHW, 0, 0, RS_LAYOUTS, "NCHW (N, C, H, W) or NHWC (N, H, W, C)"}
#define RS_X_INPUT                                                                             \
  {.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,                \
   .help = "input (N, C, H, W), or (N, H, W, C) with layout=NHWC"}
#define RS_UP_PARAMS                                                                           \
  {"scale", OPF_P_FLOAT, 2, 0, 1 << 20, NULL,                                                  \
   "scale factor (output floor(H*scale) x floor(W*scale)); ignored with size"},                \
      {.name = "size", .type = OPF_P_LIST, .defs = "none", .min = 0, .max = 1 << 30,           \
       .help = "output size OH,OW (or one value for both); none: use scale"},                   \
      RS_LAYOUT_PARAM
#define RS_UP_SHAPES                                                                           \
  {"standard", "x=32x64x56x56 scale=2"}, {"standard", "x=32x56x56x64 scale=2 layout=NHWC"},     \
      {"skewed", "x=1x3x512x512 scale=2"}, {"skewed", "x=1x3x512x512 scale=4"},                \
      {"skewed", "x=1x512x512x3 scale=2 layout=NHWC"},                                         \
      {"small", "x=2x3x4x5 scale=2"}, {"small", "x=1x2x3x4 scale=3 layout=NHWC"},               \
      {"small", "x=1x2x5x4 size=7,9"}, {"small", "x=2x1x6x7 size=4,3"},                        \
      {"small", "x=1x2x3x5 scale=1.5"}, {"small", "x=1x3x4x17 size=5,9 layout=NHWC"},           \
      {"small", "x=1x2x2x20 size=3,7 layout=NHWC"}, {"small", "x=1x1x1x6 size=3"},             \
      {"small", "x=1x1x3x6 scale=3"}, {"small", "x=1x2x4x12 size=2,4"},                        \
      {"small", "x=1x1x2x5 scale=4"},                                                          \
      {"test", "x=3x5x37x41 scale=2"}, {"test", "x=2x29x31x7 size=67,45 layout=NHWC"},          \
      {"test", "x=2x19x23x35 scale=3 layout=NHWC"}, {"test", "x=2x3x97x83 size=50,121"},       \
      {"test", "x=2x3x33x29 scale=4"}, {"test", "x=2x3x60x84 size=20,28"},                     \
      {"large", "x=32x64x112x112 scale=2"}

OPPERF_OP(upsample_nearest) = {
    .abi = OPF_OP_ABI,
    .name = "upsample_nearest",
    .category = "nn.pool",
    .summary =
        "2-D nearest-neighbour resize (PyTorch 'nearest'; MXNet UpSampling for integer scales)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {RS_X_INPUT},
    .n_out = 1,
    .out = {"y"},
    .n_params = 3,
    .params = {RS_UP_PARAMS},
    .shapes = {RS_UP_SHAPES},
    .infer = rs_infer,
    .forward = rs_forward,
    .backward = rs_backward,
    .reference = rs_reference,
    .flops = rs_flops,
    .bytes = rs_bytes,
};

OPPERF_OP(upsample_bilinear) = {
    .abi = OPF_OP_ABI,
    .name = "upsample_bilinear",
    .category = "nn.pool",
    .summary = "2-D bilinear resize (PyTorch F.interpolate 'bilinear', align_corners as PyTorch)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {RS_X_INPUT},
    .n_out = 1,
    .out = {"y"},
    .n_params = 4,
    .params = {RS_UP_PARAMS,
               {"align_corners", OPF_P_BOOL, 0, 0, 1, NULL,
                "true: corner pixels' centres align, src = o*(in-1)/(out-1); false: "
                "src = (o+0.5)/scale - 0.5, clamped at 0"}},
    .shapes = {RS_UP_SHAPES, {"small", "x=1x2x4x5 scale=2 align_corners=true"},
               {"small", "x=1x3x5x4 size=9,2 align_corners=true layout=NHWC"},
               {"small", "x=1x1x4x6 size=1,3 align_corners=true"},
               {"test", "x=2x5x37x41 size=80,71 align_corners=true"}},
    .infer = rs_infer,
    .forward = rs_forward,
    .backward = rs_backward,
    .reference = rs_reference,
    .flops = rs_flops,
    .bytes = rs_bytes,
};

OPPERF_OP(adaptive_avg_pool2d) = {
    .abi = OPF_OP_ABI,
    .name = "adaptive_avg_pool2d",
    .category = "nn.pool",
    .summary = "2-D adaptive average pooling to a fixed output size (PyTorch bins)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {RS_X_INPUT},
    .n_out = 1,
    .out = {"y"},
    .n_params = 2,
    .params = {{.name = "output_size", .type = OPF_P_LIST, .defs = "1,1", .min = 0, .max = 1 << 30,
                .help = "output size OH,OW (or one value for both); bin i covers rows "
                        "floor(i*H/OH) .. ceil((i+1)*H/OH)"},
               RS_LAYOUT_PARAM},
    .shapes = {{"standard", "x=32x512x7x7 output_size=1"},
               {"standard", "x=32x64x56x56 output_size=7"},
               {"standard", "x=32x7x7x512 output_size=1 layout=NHWC"},
               {"standard", "x=32x56x56x64 output_size=7 layout=NHWC"},
               {"skewed", "x=32x3x256x256 output_size=7"},
               {"skewed", "x=1x3x1024x1024 output_size=7"},
               {"skewed", "x=32x3x10000x10 output_size=7,5"},
               {"skewed", "x=256x2048x7x7 output_size=1"},
               {"small", "x=2x3x5x5 output_size=1"},
               {"small", "x=2x3x6x8 output_size=3,4"},
               {"small", "x=1x2x7x5 output_size=3,2"},
               {"small", "x=1x2x4x3 output_size=6,5"},
               {"small", "x=2x5x4x3 output_size=1 layout=NHWC"},
               {"small", "x=1x7x5x3 output_size=3,2 layout=NHWC"},
               {"small", "x=1x3x4x20 output_size=2,3 layout=NHWC"},
               {"small", "x=1x1x13x1 output_size=4,1"},
               {"test", "x=3x5x37x41 output_size=7"},
               {"test", "x=3x5x37x41 output_size=1"},
               {"test", "x=2x37x41x35 output_size=5,6 layout=NHWC"},
               {"test", "x=4x9x11x19 output_size=1 layout=NHWC"},
               {"test", "x=2x3x20x30 output_size=45,50"},
               {"large", "x=128x256x56x56 output_size=7"}},
    .infer = rs_infer,
    .forward = rs_forward,
    .backward = rs_backward,
    .reference = rs_reference,
    .flops = rs_flops,
    .bytes = rs_bytes,
};
