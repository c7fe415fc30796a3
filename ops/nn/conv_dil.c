/* conv_dil.c: dilated 3x3 stride-1 2-D convolutions by phases (conv_core.h: nn_dil_*),
 * float32, either layout, one group. With dilation d, output row i*d + a reads only input
 * rows of one residue r = (a - p) mod d, at (i + kh + q)*d + r (q = floor((a - p) / d)): each
 * of the dh*dw output phases is a dense 3x3 convolution of one phase sub-image of the input
 * (every d-th row and column, zero where it leaves the input), so the im2col core's dilated
 * GEMM (K = 9C) becomes Winograd F(4x4, 3x3) (conv_wino.c) on dh*dw times as many images a
 * d-th the size. The sub-images of a chunk of images are gathered into the workspace, the
 * chunk convolved (its phases as the batch), the phase outputs scattered back; chunks keep
 * the copies in L3. Backward: dx = the gather adjoint of the Winograd data gradient of the
 * phase gradients, dw = the Winograd weight gradient summed over the chunks. */
#include <string.h>

#include "conv_core.h"

#define DIL_CHUNK_BYTES ((int64_t)8 << 20) /* sub-images plus phase outputs per chunk */
#define DIL_MAX_PHASES 64

int nn_dil_fits(const nn_conv_geom *g, opf_dtype dt) {
  return dt == OPF_F32 && g->nd == 2 && g->groups == 1 && g->k[1] == 3 && g->k[2] == 3 &&
         g->s[1] == 1 && g->s[2] == 1 && (g->d[1] > 1 || g->d[2] > 1) &&
         g->d[1] * g->d[2] <= DIL_MAX_PHASES && g->C >= NN_WINO_MIN_CH &&
         g->F >= NN_WINO_MIN_CH;
}

/* The plan: phase extents (Mh x Mw outputs, sub-images (Mh + 2) x (Mw + 2)), images per chunk
 * and the Winograd geometry of a whole chunk. */
typedef struct dil_plan {
  int64_t dh, dw, ph, pw, Mh, Mw, Hs, Ws, nb;
  size_t xs_bytes, ys_bytes;
  nn_conv_geom sg;
} dil_plan;

static size_t al64(size_t b) { return (b + 63) & ~(size_t)63; }

static void dil_chunk_geom(const nn_conv_geom *g, const dil_plan *p, int64_t nb, nn_conv_geom *sg) {
  memset(sg, 0, sizeof *sg);
  sg->nd = 2, sg->nhwc = g->nhwc, sg->openblas = 0;
  sg->N = nb * p->dh * p->dw, sg->C = g->C, sg->F = g->F, sg->groups = 1;
  sg->in[0] = sg->out[0] = sg->k[0] = sg->s[0] = sg->d[0] = 1;
  sg->in[1] = p->Hs, sg->in[2] = p->Ws, sg->out[1] = p->Mh, sg->out[2] = p->Mw;
  sg->k[1] = sg->k[2] = 3, sg->s[1] = sg->s[2] = sg->d[1] = sg->d[2] = 1;
  nn_conv_geom_finish(sg, OPF_F32);
  sg->openblas = g->openblas;
}

static void dil_plan_of(const nn_conv_geom *g, dil_plan *p) {
  p->dh = g->d[1], p->dw = g->d[2], p->ph = g->p[1], p->pw = g->p[2];
  p->Mh = (g->out[1] + p->dh - 1) / p->dh, p->Mw = (g->out[2] + p->dw - 1) / p->dw;
  p->Hs = p->Mh + 2, p->Ws = p->Mw + 2;
  int64_t per = p->dh * p->dw * (g->C * p->Hs * p->Ws + g->F * p->Mh * p->Mw) * 4;
  p->nb = DIL_CHUNK_BYTES / per;
  if (p->nb < 1) p->nb = 1;
  if (p->nb > g->N) p->nb = g->N;
  int64_t chunks = (g->N + p->nb - 1) / p->nb;
  p->nb = (g->N + chunks - 1) / chunks; /* equal chunks */
  p->xs_bytes = al64((size_t)(p->nb * p->dh * p->dw * g->C * p->Hs * p->Ws) * 4);
  p->ys_bytes = al64((size_t)(p->nb * p->dh * p->dw * g->F * p->Mh * p->Mw) * 4);
  dil_chunk_geom(g, p, p->nb, &p->sg);
}

/* Scratch: sub-images, phase outputs (or gradients), a weight-gradient partial, Winograd's. */
size_t nn_dil_ws_bytes(const nn_conv_geom *g) {
  dil_plan p;
  dil_plan_of(g, &p);
  return p.xs_bytes + p.ys_bytes + al64((size_t)(g->F * g->C * 9) * 4) + nn_wino_ws_bytes(&p.sg);
}

/* floor(a / d) for d > 0 */
static int64_t fdiv(int64_t a, int64_t d) { return a >= 0 ? a / d : -((-a + d - 1) / d); }

/* Big (channels C, H x W) <-> sub-images of images [n0, n0 + nb): sub-image (n, a, b) row u
 * is big row (u + q_a)*dh + r_a (q, r of a - ph), column v likewise. dir 0: gather (zeros
 * outside big); dir 1: the scatter of the adjoint where every big element has exactly one
 * source (big elements no sub-image holds get 0). */
static void dil_move(const nn_conv_geom *g, const dil_plan *p, float *big, float *sub, int64_t n0,
                     int64_t nb, int dir) {
  const int64_t C = g->C, H = g->in[1], W = g->in[2], Hs = p->Hs, Ws = p->Ws;
  const int64_t ph_n = p->dh * p->dw, nsub = nb * ph_n;
  if (dir) memset(big + n0 * C * H * W, 0, (size_t)(nb * C * H * W) * 4);
  /* one work unit: a row u of sub-image s (all channels) */
#pragma omp parallel for schedule(static) if (nsub * Hs * Ws * C > OPF_PAR_MIN)
  for (int64_t it = 0; it < nsub * Hs; it++) {
    int64_t s = it / Hs, u = it % Hs, n = n0 + s / ph_n, a = s % ph_n / p->dw, b = s % p->dw;
    int64_t qa = fdiv(a - p->ph, p->dh), ra = a - p->ph - qa * p->dh;
    int64_t qb = fdiv(b - p->pw, p->dw), rb = b - p->pw - qb * p->dw;
    int64_t ih = (u + qa) * p->dh + ra;
    /* columns v with iw = (v + qb)*dw + rb inside [0, W) */
    int64_t v0 = -qb > 0 ? -qb : 0, v1 = fdiv(W - 1 - rb, p->dw) - qb + 1;
    if (v1 > Ws) v1 = Ws;
    if (v1 < v0) v1 = v0;
    int inside = ih >= 0 && ih < H;
    if (!inside) v0 = v1 = Ws;
    if (g->nhwc) {
      float *srow = sub + (s * Hs + u) * Ws * C;
      const float *brow = big + ((n * H + ih) * W) * C;
      if (!dir) {
        memset(srow, 0, (size_t)(v0 * C) * 4);
        memset(srow + v1 * C, 0, (size_t)((Ws - v1) * C) * 4);
      }
      for (int64_t v = v0; v < v1; v++) {
        int64_t iw = (v + qb) * p->dw + rb;
        if (!dir) memcpy(srow + v * C, brow + iw * C, (size_t)C * 4);
        else memcpy((float *)brow + iw * C, srow + v * C, (size_t)C * 4);
      }
      continue;
    }
    for (int64_t c = 0; c < C; c++) {
      float *srow = sub + ((s * C + c) * Hs + u) * Ws;
      float *brow = big + ((n * C + c) * H + (inside ? ih : 0)) * W + qb * p->dw + rb;
      if (!dir) {
        for (int64_t v = 0; v < v0; v++) srow[v] = 0;
        for (int64_t v = v1; v < Ws; v++) srow[v] = 0;
      }
      if (p->dw == 2) { /* the common case: a constant stride the compiler can see */
        if (!dir)
          for (int64_t v = v0; v < v1; v++) srow[v] = brow[2 * v];
        else
          for (int64_t v = v0; v < v1; v++) brow[2 * v] = srow[v];
      } else if (!dir)
        for (int64_t v = v0; v < v1; v++) srow[v] = brow[v * p->dw];
      else
        for (int64_t v = v0; v < v1; v++) brow[v * p->dw] = srow[v];
    }
  }
}

/* Small (F channels, OH x OW) <-> phase outputs of images [n0, n0 + nb): phase (a, b) element
 * (i, j) is small (i*dh + a, j*dw + b). dir 0: phases -> small (where inside); dir 1: small ->
 * phases (0 past the small tensor's edge). */
static void dil_phase(const nn_conv_geom *g, const dil_plan *p, float *small, float *ph,
                      int64_t n0, int64_t nb, int dir) {
  const int64_t F = g->F, OH = g->out[1], OW = g->out[2], Mh = p->Mh, Mw = p->Mw;
  const int64_t ph_n = p->dh * p->dw, nsub = nb * ph_n;
#pragma omp parallel for schedule(static) if (nsub * Mh * Mw * F > OPF_PAR_MIN)
  for (int64_t it = 0; it < nsub * Mh; it++) {
    int64_t s = it / Mh, i = it % Mh, n = n0 + s / ph_n, a = s % ph_n / p->dw, b = s % p->dw;
    int64_t oh = i * p->dh + a, j1 = oh < OH ? (OW - b + p->dw - 1) / p->dw : 0;
    if (j1 > Mw) j1 = Mw;
    if (g->nhwc) {
      float *prow = ph + (s * Mh + i) * Mw * F;
      float *orow = small + ((n * OH + oh) * OW + b) * F;
      for (int64_t j = 0; j < j1; j++)
        if (!dir) memcpy(orow + j * p->dw * F, prow + j * F, (size_t)F * 4);
        else memcpy(prow + j * F, orow + j * p->dw * F, (size_t)F * 4);
      if (dir) memset(prow + j1 * F, 0, (size_t)((Mw - j1) * F) * 4);
      continue;
    }
    for (int64_t f = 0; f < F; f++) {
      float *prow = ph + ((s * F + f) * Mh + i) * Mw;
      float *orow = small + ((n * F + f) * OH + (oh < OH ? oh : 0)) * OW + b;
      if (p->dw == 2) {
        if (!dir)
          for (int64_t j = 0; j < j1; j++) orow[2 * j] = prow[j];
        else
          for (int64_t j = 0; j < j1; j++) prow[j] = orow[2 * j];
      } else if (!dir)
        for (int64_t j = 0; j < j1; j++) orow[j * p->dw] = prow[j];
      else
        for (int64_t j = 0; j < j1; j++) prow[j] = orow[j * p->dw];
      if (dir)
        for (int64_t j = j1; j < Mw; j++) prow[j] = 0;
    }
  }
}

typedef struct dil_bufs {
  float *xs, *ys, *dwp;
  void *wws;
  size_t wws_bytes;
} dil_bufs;

static void dil_bufs_of(const nn_conv_geom *g, const dil_plan *p, void *ws, size_t ws_bytes,
                        dil_bufs *b) {
  char *c = ws;
  size_t dwb = al64((size_t)(g->F * g->C * 9) * 4);
  b->xs = (float *)c, b->ys = (float *)(c + p->xs_bytes), b->dwp = (float *)(c + p->xs_bytes + p->ys_bytes);
  b->wws = c + p->xs_bytes + p->ys_bytes + dwb;
  b->wws_bytes = ws_bytes - p->xs_bytes - p->ys_bytes - dwb;
}

void nn_dil_forward(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *x,
                    const void *w, const void *bias, void *y) {
  dil_plan p;
  dil_bufs b;
  dil_plan_of(g, &p);
  dil_bufs_of(g, &p, ws, ws_bytes, &b);
  for (int64_t n0 = 0; n0 < g->N; n0 += p.nb) {
    int64_t nb = g->N - n0 < p.nb ? g->N - n0 : p.nb;
    nn_conv_geom sg;
    dil_chunk_geom(g, &p, nb, &sg);
    dil_move(g, &p, (float *)x, b.xs, n0, nb, 0); /* x only read */
    nn_wino_forward(&sg, b.wws, b.wws_bytes, b.xs, w, bias, b.ys);
    dil_phase(g, &p, y, b.ys, n0, nb, 0);
  }
}

void nn_dil_backward(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *x,
                     const void *w, const void *gy, void *dx, void *dw) {
  dil_plan p;
  dil_bufs b;
  dil_plan_of(g, &p);
  dil_bufs_of(g, &p, ws, ws_bytes, &b);
  const int64_t nw = g->F * g->C * 9;
  for (int64_t n0 = 0; n0 < g->N; n0 += p.nb) {
    int64_t nb = g->N - n0 < p.nb ? g->N - n0 : p.nb;
    nn_conv_geom sg;
    dil_chunk_geom(g, &p, nb, &sg);
    dil_phase(g, &p, (float *)gy, b.ys, n0, nb, 1); /* gy only read */
    if (dw) {
      dil_move(g, &p, (float *)x, b.xs, n0, nb, 0);
      nn_wino_weight_grad(&sg, b.wws, b.wws_bytes, b.xs, b.ys, n0 ? b.dwp : dw);
      if (n0)
        for (int64_t i = 0; i < nw; i++) ((float *)dw)[i] += b.dwp[i];
    }
    if (dx) {
      nn_wino_data_grad(&sg, b.wws, b.wws_bytes, b.ys, w, NULL, b.xs);
      dil_move(g, &p, dx, b.xs, n0, nb, 1);
    }
  }
}
