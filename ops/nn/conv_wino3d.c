/* conv_wino3d.c: 3-D float32 convolutions with a KDx3x3 window (stride 1, dilation 1, one
 * group, channels first: NDHWC stays on im2col) by Winograd F(4x4, 3x3) in (h, w)
 * (conv_core.h: nn_wino3d_*). A 3-D
 * convolution is the sum over its KD depth taps of 2-D 3x3 convolutions of input slice
 * od - pd + kd with weight slice kd; the sum runs in the transformed domain: each input depth
 * slice is transformed once (V = B^T d B, conv_wino.c's transforms through conv_wino.h) and
 * serves the KD output slices that read it, and for each output slice and transform point
 * one GEMM with K = KD*Ci over the KD consecutive transformed slices (stored one after
 * another, so they form one K x tiles matrix) against U[xi] (Co, KD*Ci) = the KD transformed
 * weight slices side by side, prepacked once for the own GEMM. 36 multiplies per 4x4 output
 * tile and channel pair instead of 144 per depth tap. Work items: (image, block of tile rows,
 * chunk of output slices), the chunk's input slices transformed first (the chunk's KD - 1
 * extra slices are the only repeated transforms); threads take whole items. The data
 * gradient is the same convolution of the output gradient with the flipped, transposed
 * weight and pads (KD-1-pd, 2-ph, 2-pw); the weight gradient sums G_od[xi] V_od[xi]^T
 * (G = A dY A^T) per thread into dU (36, Co, KD*Ci) and untransforms it per depth tap. */
#include <string.h>

#include "conv_wino.h"

/* Bytes of the transformed input slices of one item: a chunk's KD slices at least. */
#define W3_SLAB_BYTES ((int64_t)3 << 20)
#define W3_MAX_KD 7

int nn_wino3d_fits(const nn_conv_geom *g, opf_dtype dt) {
  return dt == OPF_F32 && g->nd == 3 && !g->nhwc && g->groups == 1 && g->k[0] <= W3_MAX_KD &&
         g->k[1] == 3 && g->k[2] == 3 && g->s[0] == 1 && g->s[1] == 1 && g->s[2] == 1 &&
         g->d[0] == 1 && g->d[1] == 1 && g->d[2] == 1 && g->p[0] < g->k[0] && g->p[1] <= 2 &&
         g->p[2] <= 2;
}

/* One 3-D Winograd pass: src (N, Ci, Di, Hi, Wi) to dst (N, Co, Do, Ho, Wo), depth taps K0
 * and pad pd; p the plan of one depth slice (channel strides of the 3-D tensors). */
typedef struct w3_plan {
  wino_plan p;
  int64_t Di, Do, K0, pd, KC; /* KC = K0 * Ci, the GEMMs' K */
  int64_t Dc, nch, nsl;       /* output slices per chunk, chunks, input slices per chunk */
  int64_t per;                /* blocks of tile rows per image */
  int64_t ics, ocs;           /* channel strides of src and dst (channels first) */
  int openblas, nhwc;
} w3_plan;

static int64_t pad32(int64_t n) { return (n + 31) / 32 * 32; }

static void plan3(w3_plan *q, const nn_conv_geom *g, int bwd) {
  const int64_t Ci = bwd ? g->F : g->C, Co = bwd ? g->C : g->F;
  const int64_t *si = bwd ? g->out : g->in;
  wino_plan *p = &q->p;
  nn_wino_plan(p, g->N, Ci, Co, si[1], si[2], bwd ? 2 - g->p[1] : g->p[1],
               bwd ? 2 - g->p[2] : g->p[2], !g->openblas);
  q->K0 = g->k[0], q->pd = bwd ? g->k[0] - 1 - g->p[0] : g->p[0], q->KC = q->K0 * Ci;
  q->Di = si[0], q->Do = bwd ? g->in[0] : g->out[0];
  q->openblas = g->openblas, q->nhwc = g->nhwc;
  q->ics = q->Di * p->Hi * p->Wi, q->ocs = q->Do * p->Ho * p->Wo;
  /* tile rows per item: the best use of the GEMM's 32-wide column strips (ties: more rows),
   * with K0 transformed slices within the slab */
  const int64_t slice_tile = WINO_XI * Ci * (int64_t)sizeof(float);
  double best = -1;
  p->rb = 1;
  for (int64_t rb = 1; rb <= p->TH; rb++) {
    if (rb > 1 && q->K0 * slice_tile * rb * p->TW > W3_SLAB_BYTES) break;
    int64_t full = p->TH / rb, rem = p->TH % rb;
    double used = (double)(p->TH * p->TW) /
                  (double)(full * pad32(rb * p->TW) + (rem ? pad32(rem * p->TW) : 0));
    if (used >= best - 1e-9) best = used, p->rb = rb;
  }
  p->Tb = p->rb * p->TW;
  q->per = (p->TH + p->rb - 1) / p->rb;
  int64_t nsl = W3_SLAB_BYTES / (slice_tile * p->Tb);
  if (nsl < q->K0) nsl = q->K0;
  q->Dc = nsl - q->K0 + 1;
  if (q->Dc > q->Do) q->Dc = q->Do;
  q->nch = (q->Do + q->Dc - 1) / q->Dc;
  q->Dc = (q->Do + q->nch - 1) / q->nch;
  q->nsl = q->Dc + q->K0 - 1;
}

static size_t al64(size_t b) { return (b + 63) & ~(size_t)63; }

/* Output channels per call of the 2-D weight transforms: their 36 outputs per channel pair
 * are CC floats apart, which for a whole 128x128 weight (64 KB apart) made every store a
 * cache-set conflict (18 ms of a 0.5 ms convolution); a chunk of ~256 pairs keeps the 36 rows
 * in L1, then each row goes to its place. */
#define W3_PAIRS 256
static int64_t chunk_of(int64_t Ci) { return Ci >= W3_PAIRS ? 1 : W3_PAIRS / Ci; }

/* Shared: U (36, Co, KC), its packed copy (36 operands for the own GEMM), the weight
 * transform's scratch (a 2-D weight slice, its tap-major copy, its transform). */
typedef struct w3_shared {
  float *U, *Upk, *tmp;
  size_t pk_stride; /* floats between packed operands */
  int packed;       /* Upk holds them (the own GEMM serves items of Tb tiles) */
} w3_shared;

static size_t shared_layout(const w3_plan *q, char *base, w3_shared *s) {
  size_t u = al64((size_t)(WINO_XI * q->p.Co * q->KC) * 4);
  size_t pks = al64(nn_gemm_pack_bytes(q->p.Co, q->KC)), pk = WINO_XI * pks;
  size_t tmp = al64((size_t)((9 + 9 + WINO_XI) * chunk_of(q->p.Ci) * q->p.Ci) * 4);
  if (s) s->U = (float *)base, s->Upk = (float *)(base + u), s->tmp = (float *)(base + u + pk),
         s->pk_stride = pks / 4;
  return u + pk + tmp;
}

/* Per thread: V (36, nsl, Ci, Tb), M (36, Co, Tb) (G of the weight gradient), the
 * transforms' scratch, dU (36, Co, KC) of the weight gradient and the GEMM's packing space. */
typedef struct w3_slot {
  float *V, *M, *scratch, *dU;
  void *pk;
} w3_slot;

static size_t slot_layout(const w3_plan *q, char *base, w3_slot *s) {
  const wino_plan *p = &q->p;
  size_t v = al64((size_t)(WINO_XI * q->nsl * p->Ci * p->Tb) * 4);
  size_t m = al64((size_t)(WINO_XI * p->Co * p->Tb) * 4);
  size_t sc = al64((size_t)nn_wino_scratch_floats(p) * 4);
  size_t du = al64((size_t)(WINO_XI * p->Co * q->KC) * 4);
  if (s) s->V = (float *)base, s->M = (float *)(base + v), s->scratch = (float *)(base + v + m),
         s->dU = (float *)(base + v + m + sc), s->pk = base + v + m + sc + du;
  return v + m + sc + du + al64(nn_gemm_ws_bytes());
}

static size_t plan_bytes(const w3_plan *q) {
  return shared_layout(q, NULL, NULL) + (size_t)omp_get_max_threads() * slot_layout(q, NULL, NULL);
}

size_t nn_wino3d_ws_bytes(const nn_conv_geom *g) {
  w3_plan a, b;
  plan3(&a, g, 0);
  plan3(&b, g, 1);
  size_t x = plan_bytes(&a), y = plan_bytes(&b);
  return x > y ? x : y;
}

/* U[xi][co][kd*Ci + ci] = the transform of depth tap kd of w (flip: the data gradient's
 * flipped, transposed weight, tap K0-1-kd of w[ci][co] mirrored in (h, w)), and its packed
 * copy. */
static void weights(const w3_plan *q, w3_shared *s, const float *w, int flip) {
  const wino_plan *p = &q->p;
  const int64_t Ci = p->Ci, Co = p->Co, K0 = q->K0, cb = chunk_of(Ci);
  float *w2 = s->tmp, *wt = w2 + 9 * cb * Ci, *Ut = wt + 9 * cb * Ci;
  for (int64_t kd = 0; kd < K0; kd++)
    for (int64_t c0 = 0; c0 < Co; c0 += cb) {
      wino_plan pc = *p;
      pc.Co = Co - c0 < cb ? Co - c0 : cb;
      for (int64_t co = 0; co < pc.Co; co++)
        for (int64_t ci = 0; ci < Ci; ci++)
          for (int t = 0; t < 9; t++)
            w2[(co * Ci + ci) * 9 + t] =
                flip ? w[((ci * Co + c0 + co) * K0 + K0 - 1 - kd) * 9 + 8 - t]
                     : w[(((c0 + co) * Ci + ci) * K0 + kd) * 9 + t];
      nn_wino_weights(Ut, wt, w2, &pc, 0);
      for (int xi = 0; xi < WINO_XI; xi++)
        for (int64_t co = 0; co < pc.Co; co++)
          memcpy(s->U + ((int64_t)xi * Co + c0 + co) * q->KC + kd * Ci,
                 Ut + ((int64_t)xi * pc.Co + co) * Ci, (size_t)Ci * sizeof *Ut);
    }
  s->packed = !q->openblas && nn_gemm_own(OPF_F32, Co, p->Tb, q->KC);
  if (s->packed)
    for (int xi = 0; xi < WINO_XI; xi++)
      nn_gemm_pack(0, 0, Co, q->KC, s->U + (int64_t)xi * Co * q->KC, q->KC,
                   s->Upk + (size_t)xi * s->pk_stride);
}

/* An item's geometry: image n, tile rows [ty0, ty0 + rb) (Tb tiles), output slices
 * [od0, od1), input slices [od0 - pd, od0 - pd + ns). */
typedef struct w3_item {
  int64_t n, ty0, rb, Tb, od0, od1, ns;
} w3_item;

static w3_item item_of(const w3_plan *q, int64_t it) {
  w3_item m;
  int64_t ch = it % q->nch, tb = it / q->nch % q->per;
  m.n = it / q->nch / q->per;
  m.ty0 = tb * q->p.rb;
  m.rb = q->p.TH - m.ty0 < q->p.rb ? q->p.TH - m.ty0 : q->p.rb;
  m.Tb = m.rb * q->p.TW;
  m.od0 = ch * q->Dc;
  m.od1 = m.od0 + q->Dc < q->Do ? m.od0 + q->Dc : q->Do;
  m.ns = m.od1 - m.od0 + q->K0 - 1;
  return m;
}

/* Offset of the plane (n, d) of an (N, C, D, H, W) or (N, D, H, W, C) tensor: the same
 * n*C*D*HW + d*HW*(C if channels last). */
static int64_t plane_of(const w3_plan *q, int64_t n, int64_t d, int64_t C, int64_t D, int64_t HW) {
  return n * C * D * HW + d * HW * (q->nhwc ? C : 1);
}

/* The depth taps [*lo, *hi) of output slice od whose input slice is inside [0, Di). */
static void taps_of(const w3_plan *q, int64_t od, int64_t *lo, int64_t *hi) {
  int64_t a = q->pd - od, b = q->Di + q->pd - od;
  *lo = a > 0 ? a : 0;
  *hi = b < q->K0 ? b : q->K0;
}

/* The item's input slices inside the tensor, transformed into V (xi stride vs, slice stride
 * Ci*Tb). */
static void input_slices(const w3_plan *q, const w3_item *m, const float *src, float *V,
                         float *scratch) {
  const wino_plan *p = &q->p;
  const int64_t HW = p->Hi * p->Wi, ss = p->Ci * m->Tb, vs = m->ns * ss;
  for (int64_t sl = 0; sl < m->ns; sl++) {
    int64_t id = m->od0 - q->pd + sl;
    if (id < 0 || id >= q->Di) continue; /* never read: taps_of leaves it out */
    const float *xs = src + plane_of(q, m->n, id, p->Ci, q->Di, HW);
    for (int64_t ci = 0; ci < p->Ci; ci++)
      nn_wino_input(V + sl * ss + ci * m->Tb, vs, xs + ci * q->ics, p, m->ty0, m->rb, scratch);
  }
}

/* dst = winograd3d(src) + bias over one item. */
static void fwd_item(const w3_plan *q, const w3_shared *s, const float *src, const float *bias,
                     float *dst, const w3_item *m, char *slot) {
  const wino_plan *p = &q->p;
  w3_slot sl;
  slot_layout(q, slot, &sl);
  const int64_t Ci = p->Ci, Co = p->Co, Tb = m->Tb, ss = Ci * Tb, vs = m->ns * ss, ms = Co * Tb;
  input_slices(q, m, src, sl.V, sl.scratch);
  const int pre = s->packed && nn_gemm_own(OPF_F32, Co, Tb, q->KC);
  for (int64_t od = m->od0; od < m->od1; od++) {
    int64_t lo, hi;
    taps_of(q, od, &lo, &hi);
    const float *B = sl.V + (od - m->od0 + lo) * ss;
    for (int xi = 0; xi < WINO_XI; xi++) {
      const float *A = s->U + (int64_t)xi * Co * q->KC;
      if (pre && lo == 0 && hi == q->K0)
        nn_gemm_pre(0, 0, Co, Tb, q->KC, NULL, 0, B + xi * vs, Tb, 0.0, sl.M + xi * ms, Tb,
                    sl.pk, s->Upk + (size_t)xi * s->pk_stride, NULL);
      else
        nn_gemm(OPF_F32, 0, 0, Co, Tb, (hi - lo) * Ci, A + lo * Ci, q->KC, B + xi * vs, Tb, 0.0,
                sl.M + xi * ms, Tb, q->openblas ? NULL : sl.pk);
    }
    float *ds = dst + plane_of(q, m->n, od, Co, q->Do, p->Ho * p->Wo);
    for (int64_t co = 0; co < Co; co++)
      nn_wino_output(ds + co * q->ocs, sl.M + co * Tb, ms, p, m->ty0, m->rb, bias ? bias[co] : 0,
                     sl.scratch);
  }
}

/* Threads: whole items each, as many as the workspace has slots for. */
static int threads_for(const w3_plan *q, size_t ws_bytes, int64_t items) {
  int64_t nt = (int64_t)((ws_bytes - shared_layout(q, NULL, NULL)) / slot_layout(q, NULL, NULL));
  if (nt > omp_get_max_threads()) nt = omp_get_max_threads();
  if (nt > items) nt = items;
  return nt < 1 ? 1 : (int)nt;
}

static void run(const w3_plan *q, void *ws, size_t ws_bytes, const float *w, int flip,
                const float *src, const float *bias, float *dst) {
  w3_shared s;
  char *slots = (char *)ws + shared_layout(q, ws, &s);
  weights(q, &s, w, flip);
  size_t sb = slot_layout(q, NULL, NULL);
  int64_t items = q->p.N * q->per * q->nch;
  int nt = threads_for(q, ws_bytes, items);
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    int k = omp_get_thread_num(), mt = omp_get_num_threads();
    for (int64_t it = items * k / mt; it < items * (k + 1) / mt; it++) {
      w3_item m = item_of(q, it);
      fwd_item(q, &s, src, bias, dst, &m, slots + (size_t)k * sb);
    }
  }
}

void nn_wino3d_forward(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *x,
                       const void *w, const void *b, void *y) {
  w3_plan q;
  plan3(&q, g, 0);
  run(&q, ws, ws_bytes, w, 0, x, b, y);
}

void nn_wino3d_data_grad(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *gy,
                         const void *w, const void *bias, void *dx) {
  w3_plan q;
  plan3(&q, g, 1);
  run(&q, ws, ws_bytes, w, 1, gy, bias, dx);
}

/* Weight-gradient item: dU[xi][., lo*Ci..] += G_od[xi] V[xi]^T over its output slices. */
static void dw_item(const w3_plan *q, const float *x, const float *gy, const w3_item *m,
                    char *slot) {
  const wino_plan *p = &q->p;
  w3_slot sl;
  slot_layout(q, slot, &sl);
  const int64_t Ci = p->Ci, Co = p->Co, Tb = m->Tb, ss = Ci * Tb, vs = m->ns * ss, ms = Co * Tb;
  input_slices(q, m, x, sl.V, sl.scratch);
  for (int64_t od = m->od0; od < m->od1; od++) {
    int64_t lo, hi;
    taps_of(q, od, &lo, &hi);
    const float *gs = gy + plane_of(q, m->n, od, Co, q->Do, p->Ho * p->Wo);
    for (int64_t co = 0; co < Co; co++)
      nn_wino_grad(sl.M + co * Tb, ms, gs + co * q->ocs, p, m->ty0, m->rb, sl.scratch);
    const float *B = sl.V + (od - m->od0 + lo) * ss;
    for (int xi = 0; xi < WINO_XI; xi++)
      nn_gemm(OPF_F32, 0, 1, Co, (hi - lo) * Ci, Tb, sl.M + xi * ms, Tb, B + xi * vs, Tb, 1.0,
              sl.dU + (int64_t)xi * Co * q->KC + lo * Ci, q->KC, q->openblas ? NULL : sl.pk);
  }
}

void nn_wino3d_weight_grad(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *x,
                           const void *gy, void *dw) {
  w3_plan q;
  plan3(&q, g, 0);
  w3_shared s;
  char *slots = (char *)ws + shared_layout(&q, ws, &s);
  size_t sb = slot_layout(&q, NULL, NULL), du = (size_t)(WINO_XI * q.p.Co * q.KC);
  w3_slot s0;
  slot_layout(&q, slots, &s0);
  size_t du_off = (size_t)((char *)s0.dU - slots);
  int64_t items = q.p.N * q.per * q.nch;
  int nt = threads_for(&q, ws_bytes, items), used = 1;
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    int k = omp_get_thread_num(), mt = omp_get_num_threads();
    if (k == 0) used = mt;
    memset(slots + (size_t)k * sb + du_off, 0, du * sizeof(float));
    for (int64_t it = items * k / mt; it < items * (k + 1) / mt; it++) {
      w3_item m = item_of(&q, it);
      dw_item(&q, x, gy, &m, slots + (size_t)k * sb);
    }
  }
  float *dU = (float *)(slots + du_off);
  for (int k = 1; k < used; k++) {
    const float *o = (const float *)(slots + (size_t)k * sb + du_off);
    for (size_t i = 0; i < du; i++) dU[i] += o[i];
  }
  /* per depth tap and chunk of output channels: dU[.][co][kd*Ci + ci] gathered to
   * (36, cb, Ci), untransformed to 3x3 windows, scattered into dw[co][ci][kd] */
  const int64_t Ci = q.p.Ci, Co = q.p.Co, K0 = q.K0, cb = chunk_of(Ci);
  float *d2 = s.tmp, *u2 = d2 + 9 * cb * Ci, *dwf = dw;
  for (int64_t kd = 0; kd < K0; kd++)
    for (int64_t c0 = 0; c0 < Co; c0 += cb) {
      wino_plan pc = q.p;
      pc.Co = Co - c0 < cb ? Co - c0 : cb;
      for (int xi = 0; xi < WINO_XI; xi++)
        for (int64_t co = 0; co < pc.Co; co++)
          memcpy(u2 + ((int64_t)xi * pc.Co + co) * Ci,
                 dU + ((int64_t)xi * Co + c0 + co) * q.KC + kd * Ci, (size_t)Ci * sizeof *u2);
      nn_wino_unweights(d2, u2, &pc);
      for (int64_t k = 0; k < pc.Co * Ci; k++)
        memcpy(dwf + ((c0 * Ci + k) * K0 + kd) * 9, d2 + k * 9, 9 * sizeof *d2);
    }
}
