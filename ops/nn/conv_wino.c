/* conv_wino.c: Winograd F(4x4, 3x3) convolution for 2-D channels-first float32 convolutions
 * with a 3x3 window, stride 1, dilation 1 and one group (conv_core.h: nn_wino_*). Each 4x4
 * output tile costs 36 multiplies per channel pair instead of 144: the input tiles (6x6,
 * overlapping by 2) are transformed to V = B^T d B, the weights to U = G g G^T, the 36
 * element-wise products summed over channels are 36 GEMMs through OpenBLAS
 * (M[xi] = U[xi] V[xi], F x C times C x tiles), and Y = A^T M A gives the outputs. Work items
 * are blocks of tile rows of one image, sized so V and M stay in L2; threads take whole items
 * with single-threaded GEMMs, as in the im2col core. The data gradient of such a convolution
 * is the same convolution of the output gradient with the flipped, transposed weight and
 * padding 2 - pad, so one driver serves both. The transforms are written for the compiler to
 * vectorise across tiles (16 at a time) with the runtime ISA clones of opf_kernel.h. */
#include <string.h>

#include "conv_core.h"
#include "linalg/linalg.h"

#define WINO_M 4      /* output tile */
#define WINO_A 6      /* input tile (alpha) */
#define WINO_XI 36    /* transform points */
#define WINO_VL 16    /* tiles per vector step of the transforms */
/* Bytes of V plus M per work item: both stay in the core's L2 (1 MB on Zen 5) between the
 * input transform, the GEMMs and the output transform. */
#define WINO_BLOCK_BYTES ((int64_t)768 << 10)

int nn_wino_fits(const nn_conv_geom *g, opf_dtype dt) {
  return dt == OPF_F32 && g->nd == 2 && !g->nhwc && g->groups == 1 && g->k[1] == 3 &&
         g->k[2] == 3 && g->s[1] == 1 && g->s[2] == 1 && g->d[1] == 1 && g->d[2] == 1 &&
         g->p[1] <= 2 && g->p[2] <= 2;
}

/* The plan of one Winograd convolution: src (N, Ci, Hi, Wi) to dst (N, Co, Ho, Wo), pads. */
typedef struct wino_plan {
  int64_t N, Ci, Co, Hi, Wi, Ho, Wo, ph, pw;
  int64_t TH, TW, rb; /* tiles down and across, tile rows per item */
  int64_t Tb;         /* tiles per item (rb * TW) */
  int64_t rowlen;     /* padded input row of an item: TW * 4 + 2 */
} wino_plan;

static void plan_of(wino_plan *p, int64_t N, int64_t Ci, int64_t Co, int64_t Hi, int64_t Wi,
                    int64_t ph, int64_t pw) {
  p->N = N, p->Ci = Ci, p->Co = Co, p->Hi = Hi, p->Wi = Wi, p->ph = ph, p->pw = pw;
  p->Ho = Hi + 2 * ph - 2, p->Wo = Wi + 2 * pw - 2;
  p->TH = (p->Ho + WINO_M - 1) / WINO_M, p->TW = (p->Wo + WINO_M - 1) / WINO_M;
  int64_t per_tile = WINO_XI * (Ci + Co) * (int64_t)sizeof(float);
  int64_t tiles = WINO_BLOCK_BYTES / per_tile;
  p->rb = tiles / p->TW;
  if (p->rb < 1) p->rb = 1;
  if (p->rb > p->TH) p->rb = p->TH;
  p->Tb = p->rb * p->TW;
  p->rowlen = p->TW * WINO_M + 2;
}

static size_t al64(size_t b) { return (b + 63) & ~(size_t)63; }
static size_t u_bytes(const wino_plan *p) { return al64((size_t)(WINO_XI * p->Ci * p->Co) * 4); }
/* Per thread: V (36, Ci, Tb), M (36, Co, Tb), 6 input rows and 6 vertical transforms. */
static size_t slot_bytes(const wino_plan *p) {
  return al64((size_t)(WINO_XI * p->Ci * p->Tb) * 4) + al64((size_t)(WINO_XI * p->Co * p->Tb) * 4) +
         al64((size_t)(2 * WINO_A * p->rowlen) * 4 + WINO_VL * 4 * 4 * 4);
}
static size_t plan_bytes(const wino_plan *p) {
  return u_bytes(p) + (size_t)omp_get_max_threads() * slot_bytes(p);
}

/* Forward plan (x to y) and data-gradient plan (gy to dx) of a geometry nn_wino_fits. */
static void fwd_plan(const nn_conv_geom *g, wino_plan *p) {
  plan_of(p, g->N, g->C, g->F, g->in[1], g->in[2], g->p[1], g->p[2]);
}
static void bwd_plan(const nn_conv_geom *g, wino_plan *p) {
  plan_of(p, g->N, g->F, g->C, g->out[1], g->out[2], 2 - g->p[1], 2 - g->p[2]);
}

size_t nn_wino_ws_bytes(const nn_conv_geom *g) {
  wino_plan a, b;
  fwd_plan(g, &a);
  bwd_plan(g, &b);
  size_t x = plan_bytes(&a), y = plan_bytes(&b);
  return x > y ? x : y;
}

/* U[xi][co][ci] = G w G^T of the 3x3 window of output channel co and input channel ci:
 * w[co][ci] (flip = 0) or, for the data gradient, the flipped w[ci][co] (flip = 1). */
static void weight_transform(float *U, const float *w, const wino_plan *p, int flip) {
  static const float G[6][3] = {{1.0f / 4, 0, 0},
                                {-1.0f / 6, -1.0f / 6, -1.0f / 6},
                                {-1.0f / 6, 1.0f / 6, -1.0f / 6},
                                {1.0f / 24, 1.0f / 12, 1.0f / 6},
                                {1.0f / 24, -1.0f / 12, 1.0f / 6},
                                {0, 0, 1}};
  const int64_t Ci = p->Ci, Co = p->Co;
#pragma omp parallel for schedule(static) if (Ci * Co > 4096)
  for (int64_t k = 0; k < Co * Ci; k++) {
    int64_t co = k / Ci, ci = k % Ci;
    float gg[3][3], t[6][3];
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++)
        gg[a][b] = flip ? w[(ci * Co + co) * 9 + (2 - a) * 3 + (2 - b)] : w[(co * Ci + ci) * 9 + a * 3 + b];
    for (int i = 0; i < 6; i++)
      for (int b = 0; b < 3; b++) t[i][b] = G[i][0] * gg[0][b] + G[i][1] * gg[1][b] + G[i][2] * gg[2][b];
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 6; j++)
        U[((int64_t)(i * 6 + j) * Co + co) * Ci + ci] = t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2];
  }
}

/* B^T applied to 6 values (a vector step of VL lanes each): out[i] = sum_k BT[i][k] in[k]. */
#define WINO_BT(o0, o1, o2, o3, o4, o5, d0, d1, d2, d3, d4, d5)                                  \
  do {                                                                                         \
    o0 = 4 * (d0) - 5 * (d2) + (d4);                                                           \
    o1 = -4 * ((d1) + (d2)) + (d3) + (d4);                                                     \
    o2 = 4 * ((d1) - (d2)) - (d3) + (d4);                                                      \
    o3 = -2 * ((d1) - (d3)) - (d2) + (d4);                                                     \
    o4 = 2 * ((d1) - (d3)) - (d2) + (d4);                                                      \
    o5 = 4 * (d1) - 5 * (d3) + (d5);                                                           \
  } while (0)

/* Input transform of tile row ty of one channel into V (xi stride vs, tiles from t0): the 6
 * input rows (zero outside the image) go through B^T down the columns, then B^T along each
 * tile's 6 columns. */
OPF_VEC static void input_row(float *restrict V, int64_t vs, int64_t t0, const float *restrict xc,
                              const wino_plan *p, int64_t ty, float *restrict rows,
                              float *restrict u) {
  const int64_t L = p->rowlen, W = p->Wi, pw = p->pw;
  for (int r = 0; r < WINO_A; r++) {
    int64_t iy = ty * WINO_M - p->ph + r;
    float *d = rows + r * L;
    if (iy < 0 || iy >= p->Hi) {
      memset(d, 0, (size_t)L * sizeof *d);
      continue;
    }
    const float *s = xc + iy * W;
    int64_t a = pw < L ? pw : L, b = W + pw < L ? W + pw : L;
    for (int64_t i = 0; i < a; i++) d[i] = 0;
    memcpy(d + a, s, (size_t)(b - a) * sizeof *d);
    for (int64_t i = b; i < L; i++) d[i] = 0;
  }
  const float *r0 = rows, *r1 = rows + L, *r2 = rows + 2 * L, *r3 = rows + 3 * L, *r4 = rows + 4 * L,
              *r5 = rows + 5 * L;
  float *u0 = u, *u1 = u + L, *u2 = u + 2 * L, *u3 = u + 3 * L, *u4 = u + 4 * L, *u5 = u + 5 * L;
  for (int64_t i = 0; i < L; i++)
    WINO_BT(u0[i], u1[i], u2[i], u3[i], u4[i], u5[i], r0[i], r1[i], r2[i], r3[i], r4[i], r5[i]);
  for (int y = 0; y < WINO_A; y++) {
    const float *ur = u + y * L;
    float *v = V + (int64_t)(y * 6) * vs + t0;
    for (int64_t tx = 0; tx < p->TW; tx++) {
      const float *q = ur + tx * WINO_M;
      WINO_BT(v[tx], v[vs + tx], v[2 * vs + tx], v[3 * vs + tx], v[4 * vs + tx], v[5 * vs + tx],
              q[0], q[1], q[2], q[3], q[4], q[5]);
    }
  }
}

/* Output transform of the tiles [0, Tb) of channel co (M rows xi stride ms): Y = A^T M A,
 * plus the bias, stored into the output plane yc where inside it. */
OPF_VEC static void output_tiles(float *restrict yc, const float *restrict M, int64_t ms,
                                 const wino_plan *p, int64_t ty0, int64_t Tb, float bias,
                                 float *restrict tmp) {
  for (int64_t t0 = 0; t0 < Tb; t0 += WINO_VL) {
    int n = Tb - t0 < WINO_VL ? (int)(Tb - t0) : WINO_VL;
    float s[4][6][WINO_VL], (*y)[4][WINO_VL] = (float (*)[4][WINO_VL])tmp;
    for (int x = 0; x < 6; x++) {
      const float *m0 = M + (0 * 6 + x) * ms + t0, *m1 = M + (1 * 6 + x) * ms + t0,
                  *m2 = M + (2 * 6 + x) * ms + t0, *m3 = M + (3 * 6 + x) * ms + t0,
                  *m4 = M + (4 * 6 + x) * ms + t0, *m5 = M + (5 * 6 + x) * ms + t0;
      for (int l = 0; l < WINO_VL; l++) {
        int k = l < n ? l : 0;
        float a = m1[k] + m2[k], b = m1[k] - m2[k], c = m3[k] + m4[k], d = m3[k] - m4[k];
        s[0][x][l] = m0[k] + a + c;
        s[1][x][l] = b + 2 * d;
        s[2][x][l] = a + 4 * c;
        s[3][x][l] = b + 8 * d + m5[k];
      }
    }
    for (int i = 0; i < 4; i++)
      for (int l = 0; l < WINO_VL; l++) {
        float a = s[i][1][l] + s[i][2][l], b = s[i][1][l] - s[i][2][l];
        float c = s[i][3][l] + s[i][4][l], d = s[i][3][l] - s[i][4][l];
        y[i][0][l] = s[i][0][l] + a + c + bias;
        y[i][1][l] = b + 2 * d + bias;
        y[i][2][l] = a + 4 * c + bias;
        y[i][3][l] = b + 8 * d + s[i][5][l] + bias;
      }
    for (int l = 0; l < n; l++) {
      int64_t t = t0 + l, oy = (ty0 + t / p->TW) * WINO_M, ox = t % p->TW * WINO_M;
      int mi = p->Ho - oy < WINO_M ? (int)(p->Ho - oy) : WINO_M;
      int mj = p->Wo - ox < WINO_M ? (int)(p->Wo - ox) : WINO_M;
      for (int i = 0; i < mi; i++)
        for (int j = 0; j < mj; j++) yc[(oy + i) * p->Wo + ox + j] = y[i][j][l];
    }
  }
}

/* dst = winograd(src, U) + bias over work item (n, tile rows [ty0, ty0 + rb)). */
static void run_item(const wino_plan *p, const float *U, const float *src, const float *bias,
                     float *dst, int64_t n, int64_t ty0, char *slot) {
  int64_t rb = p->TH - ty0 < p->rb ? p->TH - ty0 : p->rb, Tb = rb * p->TW;
  float *V = (float *)slot;
  float *M = (float *)(slot + al64((size_t)(WINO_XI * p->Ci * p->Tb) * 4));
  float *rows = (float *)((char *)M + al64((size_t)(WINO_XI * p->Co * p->Tb) * 4));
  float *u = rows + WINO_A * p->rowlen, *tmp = u + WINO_A * p->rowlen;
  int64_t vs = p->Ci * Tb, ms = p->Co * Tb; /* xi strides */
  const float *sn = src + n * p->Ci * p->Hi * p->Wi;
  for (int64_t ci = 0; ci < p->Ci; ci++)
    for (int64_t r = 0; r < rb; r++)
      input_row(V + ci * Tb, vs, r * p->TW, sn + ci * p->Hi * p->Wi, p, ty0 + r, rows, u);
  for (int xi = 0; xi < WINO_XI; xi++)
    lin_gemm(OPF_F32, 0, 0, p->Co, Tb, p->Ci, U + (int64_t)xi * p->Co * p->Ci, p->Ci,
             V + xi * vs, Tb, 0.0, M + xi * ms, Tb);
  float *dn = dst + n * p->Co * p->Ho * p->Wo;
  for (int64_t co = 0; co < p->Co; co++)
    output_tiles(dn + co * p->Ho * p->Wo, M + co * Tb, ms, p, ty0, Tb, bias ? bias[co] : 0, tmp);
}

static void run(const wino_plan *p, void *ws, size_t ws_bytes, const float *w, int flip,
                const float *src, const float *bias, float *dst) {
  float *U = ws;
  weight_transform(U, w, p, flip);
  char *slots = (char *)ws + u_bytes(p);
  size_t sb = slot_bytes(p);
  int64_t nt = (int64_t)((ws_bytes - u_bytes(p)) / sb), per = (p->TH + p->rb - 1) / p->rb;
  int64_t items = p->N * per;
  if (nt > omp_get_max_threads()) nt = omp_get_max_threads();
  if (nt > items) nt = items;
  if (nt < 1) nt = 1;
#pragma omp parallel num_threads((int)nt) if (nt > 1)
  {
    int k = omp_get_thread_num(), m = omp_get_num_threads();
    for (int64_t it = items * k / m; it < items * (k + 1) / m; it++)
      run_item(p, U, src, bias, dst, it / per, it % per * p->rb, slots + (size_t)k * sb);
  }
}

void nn_wino_forward(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *x,
                     const void *w, const void *b, void *y) {
  wino_plan p;
  fwd_plan(g, &p);
  run(&p, ws, ws_bytes, w, 0, x, b, y);
}

void nn_wino_data_grad(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *gy,
                       const void *w, void *dx) {
  wino_plan p;
  bwd_plan(g, &p);
  run(&p, ws, ws_bytes, w, 1, gy, NULL, dx);
}
