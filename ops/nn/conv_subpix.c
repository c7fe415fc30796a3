/* conv_subpix.c: the forward of channels-first transposed convolutions (1-3 spatial dims,
 * dilation 1, one group) as stride-1 convolutions, one per output phase (conv_core.h:
 * nn_subpix_*).
 * Output position i = s*q + r (phase r < s along each axis) receives only the taps
 * t = t0 + s*a with t0 = (r + pad) mod s, from input position q + off + a' (a' = A-1-a), so
 * each phase is an ordinary convolution of the input with a sub-kernel of A = ceil((k-t0)/s)
 * taps per axis: im2col of the input (rows (f, a0, a1, a2), no zeros inserted), one GEMM with
 * K = F*A0*A1*A2 (the weight's sub-kernel: all of them gathered in one pass over the weight
 * and packed for the own GEMM once per call), and a strided store of the phase's outputs plus
 * the bias. This replaces the col2im path (GEMM with K = F then a scatter
 * of every col row into the output), whose thin GEMM and read-modify-write of the output
 * limited it to a quarter of conv2d's throughput. In the core's geometry the transposed
 * output is the "big" side (C channels, extents in[]), the input the "small" one (F, out[]). */
#include <string.h>

#include "conv_core.h"
#include "linalg/linalg.h"

/* Bytes of col rows plus output rows per block of input positions (the block stays in L2). */
#define SP_BLOCK_BYTES ((int64_t)1 << 20)
#define SP_MIN_COLS 64
#define SP_MAX_PHASES 64

int nn_subpix_fits(const nn_conv_geom *g) {
  return !g->nhwc && g->groups == 1 && g->d[0] == 1 && g->d[1] == 1 && g->d[2] == 1 &&
         g->s[0] * g->s[1] * g->s[2] <= SP_MAX_PHASES;
}

/* One axis of a phase: taps A, input offset off, output positions Q. */
typedef struct sp_axis {
  int64_t t0, A, off, Q;
} sp_axis;

static sp_axis axis_of(const nn_conv_geom *g, int a, int64_t r) {
  sp_axis x;
  int64_t s = g->s[a], p = g->p[a], k = g->k[a];
  x.t0 = (r + p) % s;
  x.A = x.t0 < k ? (k - x.t0 + s - 1) / s : 0;
  x.off = (r + p - x.t0) / s - x.A + 1;
  x.Q = r < g->in[a] ? (g->in[a] - r + s - 1) / s : 0;
  return x;
}

/* The three axes of phase ph (r2 fastest). */
static void phase_axes(const nn_conv_geom *g, int64_t ph, sp_axis *x) {
  x[2] = axis_of(g, 2, ph % g->s[2]);
  x[1] = axis_of(g, 1, ph / g->s[2] % g->s[1]);
  x[0] = axis_of(g, 0, ph / (g->s[1] * g->s[2]));
}

/* Block width in input positions, and the largest col rows of a phase. */
static void sizes(const nn_conv_geom *g, int64_t *cols, int64_t *kmax) {
  int64_t q = 1;
  *kmax = g->F;
  for (int a = 0; a < 3; a++) {
    *kmax *= (g->k[a] + g->s[a] - 1) / g->s[a];
    q *= (g->in[a] + g->s[a] - 1) / g->s[a];
  }
  int64_t c = SP_BLOCK_BYTES / ((*kmax + g->C) * (int64_t)g->esz);
  if (c < SP_MIN_COLS) c = SP_MIN_COLS;
  *cols = c < g->N * q ? c : g->N * q;
}

static size_t al64(size_t b) { return (b + 63) & ~(size_t)63; }
/* The phases' sub-kernels, then (float32) each one packed for the own GEMM's A side. */
static size_t pk_bytes(const nn_conv_geom *g, int64_t ph) {
  sp_axis xa[3];
  phase_axes(g, ph, xa);
  return g->esz == 4 ? al64(nn_gemm_pack_bytes(g->C, g->F * xa[0].A * xa[1].A * xa[2].A)) : 0;
}
static size_t wp_bytes(const nn_conv_geom *g) {
  size_t b = al64((size_t)(g->C * g->F * g->KK) * g->esz) + al64((size_t)(3 * g->KK) * 8);
  for (int64_t ph = 0; ph < g->s[0] * g->s[1] * g->s[2]; ph++) b += pk_bytes(g, ph);
  return b;
}
/* A run of a block's positions: row (q0, q1) of image n, positions q2 in [b, e) of the
 * phase's Q2-wide rows, at column dst of the block. */
typedef struct sp_run {
  int64_t dst, n, q0, q1, b, e;
} sp_run;

/* Per thread: col rows, the GEMM's output, the own GEMM's packing space, the block's runs. */
static size_t slot_part(const nn_conv_geom *g, int64_t cols, int64_t kmax, int part) {
  size_t o = al64((size_t)(kmax * cols) * g->esz);
  if (part == 1) return o;
  o += al64((size_t)(g->C * cols) * g->esz);
  if (part == 2) return o;
  o += g->esz == 4 ? al64(nn_gemm_ws_bytes()) : 0;
  if (part == 3) return o;
  return o + al64((size_t)cols * sizeof(sp_run));
}
static size_t slot_bytes(const nn_conv_geom *g) {
  int64_t cols, kmax;
  sizes(g, &cols, &kmax);
  return slot_part(g, cols, kmax, 4);
}

#define SP_NO_LIBCALLS __attribute__((optimize("no-tree-loop-distribute-patterns")))

size_t nn_subpix_ws_bytes(const nn_conv_geom *g) {
  return wp_bytes(g) + (size_t)omp_get_max_threads() * slot_bytes(g);
}

#define SP_KERNELS(T, SFX)                                                                     \
  /* Every phase's sub-kernel in one pass over w (read once, in order): tap t of w[f][c] goes \
   * to wp[dst[t] + c*cs[t] + f*fs[t]], its place wp[c][(f, a0, a1, a2)] in its phase's      \
   * sub-kernel (taps t0 + s*(A-1-a) per axis). */                                           \
  static void wprep_##SFX(T *restrict wp, const T *restrict w, const nn_conv_geom *g,       \
                          const int64_t *dst, const int64_t *cs, const int64_t *fs) {         \
    for (int64_t c = 0; c < g->C; c++)                                                        \
      for (int64_t f = 0; f < g->F; f++) {                                                    \
        const T *restrict src = w + (f * g->C + c) * g->KK;                                   \
        for (int64_t t = 0; t < g->KK; t++) wp[dst[t] + c * cs[t] + f * fs[t]] = src[t];      \
      }                                                                                       \
  }                                                                                           \
  /* col[(f, a0, a1, a2)*ld + u.dst + q2 - u.b] = x[u.n][f][q0 + off0 + a0][q1 + off1 + a1]    \
   * [q2 + off2 + a2] (0 outside) for each run u of the block (positions q2 in [u.b, u.e) of \
   * row (u.q0, u.q1) of image u.n): the runs are as short as the phase's rows (7 positions  \
   * for a 14-wide output and stride 2), so they are found once per block, not per col row, \
   * and copied by plain loops, not library calls. */                                        \
  SP_NO_LIBCALLS OPF_VEC static void im2col_##SFX(T *restrict col, int64_t ld,               \
                                                  const T *restrict x, const nn_conv_geom *g, \
                                                  const sp_axis *xa, const sp_run *run,       \
                                                  int64_t nr) {                               \
    const int64_t D = g->out[0], H = g->out[1], W = g->out[2], Q2 = xa[2].Q;                  \
    int64_t r = 0;                                                                            \
    for (int64_t f = 0; f < g->F; f++)                                                        \
      for (int64_t a0 = 0; a0 < xa[0].A; a0++)                                                \
        for (int64_t a1 = 0; a1 < xa[1].A; a1++)                                              \
          for (int64_t a2 = 0; a2 < xa[2].A; a2++, r++) {                                     \
            T *restrict d = col + r * ld;                                                     \
            const int64_t o2 = xa[2].off + a2, d0 = xa[0].off + a0, d1 = xa[1].off + a1;      \
            /* q2 with 0 <= q2 + o2 < W */                                                    \
            int64_t lo = o2 < 0 ? -o2 : 0, hi = W - o2 < Q2 ? W - o2 : Q2;                    \
            if (hi < lo) hi = lo;                                                             \
            for (int64_t k = 0; k < nr; k++) {                                                \
              const sp_run u = run[k];                                                        \
              int64_t i0 = u.q0 + d0, i1 = u.q1 + d1;                                         \
              T *restrict o = d + u.dst - u.b; /* o[q2] for q2 in [b, e) */                   \
              if (i0 < 0 || i0 >= D || i1 < 0 || i1 >= H) {                                   \
                for (int64_t j = u.b; j < u.e; j++) o[j] = 0;                                 \
                continue;                                                                     \
              }                                                                               \
              const T *restrict xr = x + (((u.n * g->F + f) * D + i0) * H + i1) * W + o2;     \
              int64_t l = lo > u.b ? lo : u.b, h = hi < u.e ? hi : u.e;                       \
              if (h < l) h = l;                                                               \
              for (int64_t j = u.b; j < l; j++) o[j] = 0;                                     \
              for (int64_t j = l; j < h; j++) o[j] = xr[j];                                   \
              for (int64_t j = h; j < u.e; j++) o[j] = 0;                                     \
            }                                                                                 \
          }                                                                                   \
  }                                                                                           \
  /* y[c][s0*q0 + r0][s1*q1 + r1][s2*q2 + r2] = Y[c*ldy + q - qa] + b[c] (Y NULL: the bias   \
   * alone). */                                                                               \
  OPF_VEC static void store_##SFX(T *restrict y, const T *restrict Y, int64_t ldy,            \
                                  const T *restrict bias, const nn_conv_geom *g,              \
                                  const int64_t *rr, const sp_axis *xa, int64_t qa,           \
                                  int64_t qe) {                                                \
    const int64_t D = g->in[0], H = g->in[1], W = g->in[2], s2 = g->s[2];                     \
    const int64_t Q1 = xa[1].Q, Q2 = xa[2].Q;                                                 \
    for (int64_t c = 0; c < g->C; c++) {                                                      \
      const T bc = bias ? bias[c] : 0;                                                        \
      const T *restrict src = Y ? Y + c * ldy - qa : NULL;                                    \
      for (int64_t q = qa; q < qe;) {                                                         \
        int64_t row = q / Q2, b = q % Q2, e = Q2 - b < qe - q ? Q2 : b + qe - q;              \
        int64_t i0 = g->s[0] * (row / Q1) + rr[0], i1 = g->s[1] * (row % Q1) + rr[1];         \
        T *restrict yr = y + ((c * D + i0) * H + i1) * W + rr[2];                             \
        const T *restrict sr = src ? src + q - b : NULL;                                      \
        if (!sr)                                                                              \
          for (int64_t j = b; j < e; j++) yr[j * s2] = bc;                                    \
        else if (s2 == 1)                                                                     \
          for (int64_t j = b; j < e; j++) yr[j] = sr[j] + bc;                                 \
        else                                                                                  \
          for (int64_t j = b; j < e; j++) yr[j * s2] = sr[j] + bc;                            \
        q += e - b;                                                                           \
      }                                                                                       \
    }                                                                                         \
  }

SP_KERNELS(float, f32)
SP_KERNELS(double, f64)

typedef struct sp_job {
  const nn_conv_geom *g;
  opf_dtype dt;
  const char *x, *bias;
  char *y, *wp, *slots;
  size_t slot_bytes;
  int64_t cols, kmax, nb; /* block width, largest col rows, blocks per phase (the most) */
  int64_t woff[SP_MAX_PHASES];
  const char *apk[SP_MAX_PHASES]; /* phase sub-kernels packed for the own GEMM, or NULL */
} sp_job;

/* Item (phase ph, block bk): the phase's positions [ga, ge) of all images in a row (n*Q + q),
 * so that small planes still give the GEMM a wide N. */
static void sp_item(const sp_job *j, int64_t ph, int64_t bk, char *slot) {
  const nn_conv_geom *g = j->g;
  size_t e = g->esz;
  sp_axis xa[3];
  phase_axes(g, ph, xa);
  int64_t rr[3] = {ph / (g->s[1] * g->s[2]), ph / g->s[2] % g->s[1], ph % g->s[2]};
  int64_t Q = xa[0].Q * xa[1].Q * xa[2].Q, ga = bk * j->cols;
  int64_t ge = ga + j->cols < g->N * Q ? ga + j->cols : g->N * Q, ld = ge - ga;
  if (ga >= ge) return;
  int64_t Kp = g->F * xa[0].A * xa[1].A * xa[2].A;
  char *col = slot, *Y = slot + slot_part(g, j->cols, j->kmax, 1);
  char *pk = e == 4 && !g->openblas ? slot + slot_part(g, j->cols, j->kmax, 2) : NULL;
  sp_run *run = (sp_run *)(slot + slot_part(g, j->cols, j->kmax, 3));
  if (Kp) { /* the block's runs, its col rows, Y = W_phase col */
    int64_t nr = 0, Q1 = xa[1].Q, Q2 = xa[2].Q;
    for (int64_t at = ga; at < ge; nr++) {
      int64_t n = at / Q, q = at % Q, row = q / Q2, b = q % Q2;
      int64_t end = Q2 - b < ge - at ? Q2 : b + ge - at;
      run[nr] = (sp_run){at - ga, n, row / Q1, row % Q1, b, end};
      at += end - b;
    }
    if (j->dt == OPF_F32) im2col_f32((float *)col, ld, (const float *)j->x, g, xa, run, nr);
    else im2col_f64((double *)col, ld, (const double *)j->x, g, xa, run, nr);
    if (j->apk[ph] && nn_gemm_own(j->dt, g->C, ld, Kp))
      nn_gemm_pre(0, 0, g->C, ld, Kp, NULL, 0, col, ld, 0.0, Y, ld, pk, j->apk[ph], NULL);
    else
      nn_gemm(j->dt, 0, 0, g->C, ld, Kp, j->wp + (size_t)j->woff[ph] * e, Kp, col, ld, 0.0, Y, ld,
              pk);
  }
  for (int64_t at = ga; at < ge;) { /* the outputs, one image's part of the block at a time */
    int64_t n = at / Q, qa = at % Q, qe = Q < qa + ge - at ? Q : qa + ge - at;
    char *yn = j->y + (size_t)(n * g->C * g->S) * e;
    char *yb = Kp ? Y + (size_t)(at - ga) * e : NULL;
    if (j->dt == OPF_F32)
      store_f32((float *)yn, (const float *)yb, ld, (const float *)j->bias, g, rr, xa, qa, qe);
    else store_f64((double *)yn, (const double *)yb, ld, (const double *)j->bias, g, rr, xa, qa, qe);
    at += qe - qa;
  }
}

void nn_subpix_forward(const nn_conv_geom *g, opf_dtype dt, void *ws, size_t ws_bytes,
                       const void *x, const void *w, const void *b, void *y) {
  sp_job j = {.g = g, .dt = dt, .x = x, .bias = b, .y = y, .wp = ws};
  int64_t nph = g->s[0] * g->s[1] * g->s[2], off = 0, qmax = 0;
  int64_t *dst = (int64_t *)((char *)ws + al64((size_t)(g->C * g->F * g->KK) * g->esz));
  int64_t *cs = dst + g->KK, *fs = cs + g->KK;
  char *pkd = (char *)dst + al64((size_t)(3 * g->KK) * 8);
  sizes(g, &j.cols, &j.kmax);
  for (int64_t ph = 0; ph < nph; ph++) { /* where each tap goes */
    sp_axis xa[3];
    phase_axes(g, ph, xa);
    int64_t Ap = xa[0].A * xa[1].A * xa[2].A, r = 0;
    j.woff[ph] = off;
    for (int64_t a0 = 0; a0 < xa[0].A; a0++)
      for (int64_t a1 = 0; a1 < xa[1].A; a1++)
        for (int64_t a2 = 0; a2 < xa[2].A; a2++, r++) {
          int64_t kd = xa[0].t0 + g->s[0] * (xa[0].A - 1 - a0);
          int64_t kh = xa[1].t0 + g->s[1] * (xa[1].A - 1 - a1);
          int64_t kw = xa[2].t0 + g->s[2] * (xa[2].A - 1 - a2);
          int64_t t = (kd * g->k[1] + kh) * g->k[2] + kw;
          dst[t] = off + r, cs[t] = g->F * Ap, fs[t] = Ap;
        }
    off += g->C * g->F * Ap;
    if (xa[0].Q * xa[1].Q * xa[2].Q > qmax) qmax = xa[0].Q * xa[1].Q * xa[2].Q;
  }
  if (dt == OPF_F32) wprep_f32(ws, w, g, dst, cs, fs);
  else wprep_f64(ws, w, g, dst, cs, fs);
  for (int64_t ph = 0; ph < nph; ph++) { /* each packed for the own GEMM */
    sp_axis xa[3];
    phase_axes(g, ph, xa);
    int64_t Kp = g->F * xa[0].A * xa[1].A * xa[2].A;
    j.apk[ph] = NULL;
    if (dt == OPF_F32 && !g->openblas && Kp && nn_gemm_own(dt, g->C, j.cols, Kp)) {
      nn_gemm_pack(0, 0, g->C, Kp, (float *)ws + j.woff[ph], Kp, pkd);
      j.apk[ph] = pkd;
    }
    pkd += pk_bytes(g, ph);
  }
  j.nb = (g->N * qmax + j.cols - 1) / j.cols;
  j.slot_bytes = slot_bytes(g);
  j.slots = (char *)ws + wp_bytes(g);
  int64_t items = nph * j.nb, nt = (int64_t)((ws_bytes - wp_bytes(g)) / j.slot_bytes);
  if (nt > omp_get_max_threads()) nt = omp_get_max_threads();
  if (nt > items) nt = items;
  if (nt < 1 || nn_conv_macs(g) < OPF_PAR_MIN) nt = 1;
#pragma omp parallel num_threads((int)nt) if (nt > 1)
  {
    int k = omp_get_thread_num(), m = omp_get_num_threads();
    for (int64_t it = items * k / m; it < items * (k + 1) / m; it++)
      sp_item(&j, it / j.nb, it % j.nb, j.slots + (size_t)k * j.slot_bytes);
  }
}
