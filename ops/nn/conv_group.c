/* conv_group.c: direct grouped 2-D convolution for small groups (conv_core.h: nn_group_*),
 * float32 on AVX-512 CPUs, either layout, any stride, padding and dilation. With 4..16
 * channels per group the im2col core's per-group GEMMs are tiny (M = 4, K = 36: ResNeXt's
 * 32x4d blocks ran 2-2.5x slower than oneDNN); here a 16-float vector holds 16 output
 * channels, i.e. 16/Fg whole groups at once, and each tap of each input channel of the group
 * is one FMA per output pixel: the input pixel's channel vector, permuted so that every lane
 * sees its own group's channel c (vpermps; a broadcast when the groups span whole vectors),
 * times a packed weight vector. Work items are bands of output rows of one image: the input
 * rows a band reads are first copied once into zero-padded channels-last rows (from NCHW
 * this is the transpose), so the kernels need no bounds tests; channels-first outputs are
 * written through a row buffer. The data gradient of a stride-1 convolution is the same
 * kernel on the output gradient with the flipped, group-transposed weight (pad d*(k-1) - p);
 * the weight gradient accumulates the same products with the output gradient in place of the
 * weight, per thread, reduced at the end. One-group dilated windows of any channel counts can
 * instead run each output row as an implicit GEMM on conv_gemm.c's 14x32 register tile
 * (nn_gemm_taps: K = taps x channels, each tap's A the band row's pixels read in place at
 * its offset, the taps of the window rows outside the input skipped), forward and stride-1
 * data gradient; the weight gradient stays the direct kernel's.
 * The default blocks keep their accumulators in registers through all the taps (14 output
 * pixels a block with broadcasts, 12 with permutes; the 8-pixel blocks they replaced, whose
 * accumulators went through memory at every tap, remain as NN_GROUP_BLOCK8). Channels-first
 * stride-1 passes (groups of 4k filters) run on planar rows instead: each channel's band
 * rows zero-padded in a plane, output (r, w) the plane's flat position r*Wp + w, so a tap
 * is a constant offset and a block is 8 (or 4) filters x 32 (64) consecutive positions, a
 * plain load times a broadcast weight per FMA, no transposes (the columns past Wo computed
 * and dropped). A strided data gradient runs there too, by phases: dx's pixels
 * (qh + s*a, qw + s*b) are a stride-1 correlation of gy with the taps that land on them. */
#include <string.h>

#include "conv_core.h"

#define GC_V 16                             /* floats per vector: output channels per block */
#define GC_PX 8                             /* output pixels a block of NN_GROUP_BLOCK8 */
#define GC_BAND_BYTES ((int64_t)384 << 10) /* row buffers per item, within L2 */
/* The implicit GEMM's depth per product: taps of Cin channels summed in the registers (a
 * 14 x 32 tile, its weight strip of GC_GEMM_K x 32 floats in L1) before the output tile is
 * stored (and reloaded by the next taps). */
#define GC_GEMM_K 256
#define GC_GEMM_TAPS 64 /* the implicit GEMM's windows: at most this many taps */
/* The direct path from this many channels per group down (both Cg and Fg, which are also the
 * data gradient's Fg and Cg): beyond, K = Cg*taps is large enough for the GEMMs. */
#define GC_MAX_CG 16
/* The internal kind of the weight gradient's channels-last pass (no planar rows). */
#define GC_KIND_CL 3
/* Planar register blocks: 8 filters x 2 vectors of 16 flat pixels, or (4 filters a group)
 * 4 x 4; GC_PCH the longest chunk of flat pixels. */
#define GC_PCH 64

/* One direct convolution src (N, Ci*G, Hi, Wi) -> dst (N, Fo*G, Ho, Wo), either layout, as
 * the kernels see it: the forward (src x, dst y) or a data gradient (src gy, dst dx). */
typedef struct gc_conv {
  int nhwc, bcast;          /* layout; Fo a multiple of 16 (broadcast, no permute) */
  int wide;                 /* Fo a multiple of 64, ci of 4: 4 vectors of outputs per block */
  int gemm;                 /* one group by the implicit GEMM (nn_gemm_taps), any channels */
  int old;                  /* the 8-pixel blocks (before the register blocks) */
  int planar;               /* channels-first stride 1: planar rows (gc_plan_*) */
  int pf;                   /* planar: filters per register block (8 or 4) */
  int64_t tk;               /* gemm: taps per product (K = tk * Cin at most GC_GEMM_K) */
  int64_t N, Cin, Cout, ci, fo;
  int64_t Hi, Wi, Ho, Wo, KH, KW, KK, sh, sw, ph, pw, dh, dw;
  int64_t Wp, band, rows;   /* padded row pixels, output rows per item, input rows per item */
  int64_t items_per_img;
  int64_t PI, PO;           /* planar: input and output plane pitch (floats) */
  /* a phase of a strided data gradient: output (a, b) is dx's (qh + osh*a, qw + osw*b) of
   * an (oH, oW) image (osh = 0: not a phase) */
  int64_t osh, osw, qh, qw, oH, oW;
} gc_conv;

static size_t al64(size_t b) { return (b + 63) & ~(size_t)63; }

/* The wide blocks: 4 output vectors (64 channels of one group) x 6 pixels, any ci (a
 * multiple of 4): a dense direct convolution, for dilated windows (whose im2col GEMM has
 * K = 9C of scattered taps) and groups of 64 filters and more. */
#define GC_NV 4
#define GC_WPX 6
static int gc_wide(int64_t ci, int64_t fo) { return fo % (GC_NV * GC_V) == 0 && ci % 4 == 0; }

/* Does the direct kernel take ci input and fo output channels per group, cout in all? */
static inline int gc_shape_ok(int64_t ci, int64_t fo, int64_t cout) {
  if (cout % GC_V) return 0;
  if (gc_wide(ci, fo)) return 1;
  if (ci > GC_MAX_CG || (ci & (ci - 1))) return 0;
  if (fo % GC_V == 0) return 1;                          /* whole vectors of one group */
  return GC_V % fo == 0 && ci * (GC_V / fo) <= GC_V;     /* groups side by side */
}

static void gc_conv_of(gc_conv *p, const nn_conv_geom *g, int dx, int kind) {
  memset(p, 0, sizeof *p);
  p->gemm = kind == NN_GROUP_GEMM, p->old = kind == NN_GROUP_BLOCK8;
  p->nhwc = g->nhwc, p->N = g->N;
  p->KH = g->k[1], p->KW = g->k[2], p->KK = p->KH * p->KW, p->dh = g->d[1], p->dw = g->d[2];
  if (!dx) {
    p->Cin = g->C, p->Cout = g->F, p->ci = g->Cg, p->fo = g->Fg;
    p->Hi = g->in[1], p->Wi = g->in[2], p->Ho = g->out[1], p->Wo = g->out[2];
    p->sh = g->s[1], p->sw = g->s[2], p->ph = g->p[1], p->pw = g->p[2];
  } else { /* stride 1: correlation of gy with the flipped weight, pad d*(k-1) - p */
    p->Cin = g->F, p->Cout = g->C, p->ci = g->Fg, p->fo = g->Cg;
    p->Hi = g->out[1], p->Wi = g->out[2], p->Ho = g->in[1], p->Wo = g->in[2];
    p->sh = p->sw = 1;
    p->ph = p->dh * (p->KH - 1) - g->p[1], p->pw = p->dw * (p->KW - 1) - g->p[2];
  }
  p->bcast = p->fo % GC_V == 0;
  p->wide = gc_wide(p->ci, p->fo);
  /* channels first, stride 1, groups of whole 4-filter blocks: planar rows (no transposes) */
  p->planar = kind == NN_GROUP_DIRECT && !p->nhwc && p->sh == 1 && p->sw == 1 && !p->wide &&
              p->fo % 4 == 0 && p->KK <= GC_GEMM_TAPS;
  p->pf = p->fo % 8 ? 4 : 8;
  p->tk = GC_GEMM_K / p->Cin > 1 ? GC_GEMM_K / p->Cin : 1;
  /* the padded row holds every pixel the outputs read: [-pw, (Wo-1)*sw - pw + (KW-1)*dw] */
  int64_t last = (p->Wo - 1) * p->sw - p->pw + (p->KW - 1) * p->dw;
  p->Wp = p->pw + (last + 1 > p->Wi ? last + 1 : p->Wi);
  int64_t row_in = p->Wp * p->Cin * 4, row_out = p->nhwc ? 0 : p->Wo * p->Cout * 4;
  if (p->planar) row_out = p->Wp * p->Cout * 4;
  int64_t band = GC_BAND_BYTES / (row_in * p->sh + row_out);
  if (band < (p->KH - 1) * p->dh) band = (p->KH - 1) * p->dh; /* halo rows at most doubled */
  if (band < 1) band = 1;
  if (band > p->Ho) band = p->Ho;
  p->band = band;
  p->rows = (band - 1) * p->sh + (p->KH - 1) * p->dh + 1;
  p->items_per_img = (p->Ho + band - 1) / band;
  /* planar: a band's flat outputs (row r, column w at r*Wp + w, w >= Wo discarded) in whole
   * chunks of GC_PCH, each reading its taps' inputs at most rows*Wp + GC_PCH - 1 */
  p->PI = p->rows * p->Wp + GC_PCH, p->PO = band * p->Wp + GC_PCH;
}

/* Per-thread slot: input rows (+ one vector of slack: the permuting loads read up to 16
 * channels from a group's first; + NN_GEMM_MR pixels: the implicit GEMM's last tile of a row
 * reads whole 14-pixel strips), output rows (channels-first), gy rows (weight gradient,
 * channels-first), the weight-gradient partial and the bias-gradient partial. */
typedef struct gc_slot {
  float *in, *out, *gy, *dw, *db;
} gc_slot;

static int64_t gc_slack(const gc_conv *p) { return NN_GEMM_MR * p->sw * p->Cin; }

static size_t gc_slot_layout(const gc_conv *p, char *base, gc_slot *s) {
  size_t in = al64((size_t)(p->rows * p->Wp * p->Cin + GC_V + gc_slack(p)) * 4);
  size_t out = al64((size_t)(p->band * p->Wo * p->Cout) * 4);
  if (p->planar) in = al64((size_t)(p->PI * p->Cin) * 4), out = al64((size_t)(p->PO * p->Cout) * 4);
  size_t gy = al64((size_t)(p->band * p->Wo * p->Cout) * 4);
  size_t dw = al64((size_t)(p->Cout * p->ci * p->KK) * 4), db = al64((size_t)p->Cout * 4);
  if (s) {
    s->in = (float *)base, s->out = (float *)(base + in), s->gy = (float *)(base + in + out);
    s->dw = (float *)(base + in + out + gy), s->db = (float *)(base + in + out + gy + dw);
  }
  return in + out + gy + dw + db;
}

/* the packed weights (forward and data gradient): (Cout/16, KK, ci, 16) each, or for the
 * implicit GEMM (Cout/32 rounded up, KK, ci, 32) */
static size_t gc_wpk_bytes(const nn_conv_geom *g) {
  int64_t co = (g->F > g->C ? g->F : g->C) + NN_GEMM_NR, ci = g->Cg > g->Fg ? g->Cg : g->Fg;
  return al64((size_t)(co * ci * g->k[1] * g->k[2]) * 4);
}


#define GC_MAX_PH 16 /* phases: sh * sw at most */

/* Phase (qh, qw) of the data gradient of a strided convolution (channels first): dx's
 * pixels (qh + s*a, qw + s*b) are a stride-1 correlation of gy with the taps (kh, kw) for
 * which qh + ph - kh*dh (and qw + pw - kw*dw) are multiples of the stride, tap (kh, kw)
 * reading gy (a + eh, b + ew), eh = (qh + ph - kh*dh) / sh: the planar rows with those taps'
 * offsets (toff), their weight indices (tk), the window's rows from min eh on (ph = -min eh,
 * of either sign). Returns 0 for a phase without pixels. */
static int gc_phase_of(const nn_conv_geom *g, int64_t qh, int64_t qw, gc_conv *p, int64_t *tk,
                       int64_t *toff) {
  const int64_t sh = g->s[1], sw = g->s[2], KH = g->k[1], KW = g->k[2];
  memset(p, 0, sizeof *p);
  p->planar = 1, p->N = g->N, p->Cin = g->F, p->Cout = g->C, p->ci = g->Fg, p->fo = g->Cg;
  p->bcast = p->fo % GC_V == 0, p->pf = p->fo % 8 ? 4 : 8;
  p->Hi = g->out[1], p->Wi = g->out[2];
  p->Ho = (g->in[1] - qh + sh - 1) / sh, p->Wo = (g->in[2] - qw + sw - 1) / sw;
  p->osh = sh, p->osw = sw, p->qh = qh, p->qw = qw, p->oH = g->in[1], p->oW = g->in[2];
  p->sh = p->sw = p->dh = p->dw = 1;
  if (p->Ho <= 0 || p->Wo <= 0) return 0;
  int64_t eh[GC_GEMM_TAPS], ew[GC_GEMM_TAPS], n = 0, h0 = 0, h1 = 0, w0 = 0, w1 = 0;
  for (int64_t kh = 0; kh < KH; kh++) {
    int64_t a = qh + g->p[1] - kh * g->d[1];
    if (((a % sh) + sh) % sh) continue;
    for (int64_t kw = 0; kw < KW; kw++) {
      int64_t b = qw + g->p[2] - kw * g->d[2];
      if (((b % sw) + sw) % sw) continue;
      eh[n] = a / sh, ew[n] = b / sw, tk[n] = kh * KW + kw;
      if (!n || eh[n] < h0) h0 = eh[n];
      if (!n || eh[n] > h1) h1 = eh[n];
      if (!n || ew[n] < w0) w0 = ew[n];
      if (!n || ew[n] > w1) w1 = ew[n];
      n++;
    }
  }
  p->KK = n, p->KH = h1 - h0 + 1, p->KW = w1 - w0 + 1, p->ph = -h0, p->pw = -w0;
  p->Wp = p->Wo + p->KW - 1;
  int64_t band = GC_BAND_BYTES / ((p->Cin + p->Cout) * p->Wp * 4);
  if (band < p->KH - 1) band = p->KH - 1;
  if (band < 1) band = 1;
  if (band > p->Ho) band = p->Ho;
  p->band = band, p->rows = band + p->KH - 1, p->items_per_img = (p->Ho + band - 1) / band;
  p->PI = p->rows * p->Wp + GC_PCH, p->PO = band * p->Wp + GC_PCH;
  for (int64_t t = 0; t < n; t++) toff[t] = (eh[t] - h0) * p->Wp + (ew[t] - w0);
  return 1;
}

/* Does the data gradient of a strided convolution run by phases? (channels first, groups of
 * whole 4-filter blocks in dx's channels, any filters per group) */
static int gc_phases_fit(const nn_conv_geom *g) {
  return !g->nhwc && g->Cg % 4 == 0 && g->k[1] * g->k[2] <= GC_GEMM_TAPS && g->groups > 1 &&
         g->s[1] * g->s[2] <= GC_MAX_PH;
}

int nn_group_fits(const nn_conv_geom *g, opf_dtype dt, int dx) {
#if defined(__x86_64__) && defined(__GNUC__)
  /* one group: dilated windows only (dense 3x3 windows have Winograd) */
  int one = g->groups == 1 && (g->d[1] > 1 || g->d[2] > 1);
  if (dt != OPF_F32 || g->nd != 2 || (g->groups < 2 && !one) || !__builtin_cpu_supports("avx512f"))
    return 0;
  if (one && !(gc_wide(g->Cg, g->Fg) && (!dx || gc_wide(g->Fg, g->Cg)))) return 0;
  if (!dx) return gc_shape_ok(g->Cg, g->Fg, g->F);
  /* the data gradient: by phases if strided, else a padding the flipped window covers */
  if (g->s[1] > 1 || g->s[2] > 1) return gc_phases_fit(g) && gc_shape_ok(g->Cg, g->Fg, g->F);
  return g->s[1] == 1 && g->s[2] == 1 && g->p[1] <= g->d[1] * (g->k[1] - 1) &&
         g->p[2] <= g->d[2] * (g->k[2] - 1) && gc_shape_ok(g->Fg, g->Cg, g->C) &&
         gc_shape_ok(g->Cg, g->Fg, g->F);
#else
  (void)g, (void)dt, (void)dx;
  return 0;
#endif
}

int nn_group_gemm_fits(const nn_conv_geom *g, opf_dtype dt, int dx) {
  if (dt != OPF_F32 || g->nd != 2 || g->groups != 1 || (g->d[1] == 1 && g->d[2] == 1) ||
      g->k[1] * g->k[2] > GC_GEMM_TAPS || !nn_gemm_taps_ok())
    return 0;
  return !dx || (g->s[1] == 1 && g->s[2] == 1 && g->p[1] <= g->d[1] * (g->k[1] - 1) &&
                 g->p[2] <= g->d[2] * (g->k[2] - 1));
}

size_t nn_group_ws_bytes(const nn_conv_geom *g) {
  gc_conv a, b, c;
  gc_conv_of(&a, g, 0, NN_GROUP_DIRECT);
  gc_conv_of(&b, g, 1, NN_GROUP_DIRECT);
  gc_conv_of(&c, g, 0, GC_KIND_CL); /* the weight gradient's */
  size_t sa = gc_slot_layout(&a, NULL, NULL), sb = gc_slot_layout(&b, NULL, NULL),
         sc = gc_slot_layout(&c, NULL, NULL);
  size_t m = sa > sb ? sa : sb;
  if (m < sc) m = sc;
  if ((g->s[1] > 1 || g->s[2] > 1) && gc_phases_fit(g)) { /* the phases' slots */
    int64_t tk[GC_GEMM_TAPS], toff[GC_GEMM_TAPS];
    for (int64_t qh = 0; qh < g->s[1]; qh++)
      for (int64_t qw = 0; qw < g->s[2]; qw++)
        if (gc_phase_of(g, qh, qw, &a, tk, toff) && gc_slot_layout(&a, NULL, NULL) > m)
          m = gc_slot_layout(&a, NULL, NULL);
  }
  return 2 * gc_wpk_bytes(g) + (size_t)omp_get_max_threads() * m;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* dst[i*ldd + j] = src[j*lds + i] for i < ni, j < 16: a 16x16 block transposed in registers
 * (ni < 16: the block's first ni columns, by masked loads). */
__attribute__((target("avx512f"))) static void gc_t16(const float *src, int64_t lds, float *dst,
                                                      int64_t ldd, int ni) {
  __m512 r[16], t[16];
  __mmask16 m = (__mmask16)((1u << ni) - 1);
  for (int i = 0; i < 16; i++)
    r[i] = ni == 16 ? _mm512_loadu_ps(src + i * lds) : _mm512_maskz_loadu_ps(m, src + i * lds);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; i++) { /* 128-bit lanes: rows i, i+4, i+8, i+12 */
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xDD);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xDD);
  }
  for (int i = 0; i < 4; i++) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xDD);
    r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
    r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xDD);
  }
  for (int i = 0; i < ni; i++) _mm512_storeu_ps(dst + i * ldd, r[i]);
}

/* dst[j*ldd + c] = src[c*lds + j] for c < nc, j < n: 16x16 blocks (the last of each 16
 * channels narrower), scalar channels past the last 16. */
static void gc_transpose(const float *src, int64_t lds, int64_t nc, int64_t n, float *dst,
                         int64_t ldd) {
  int64_t c0 = 0, j0;
  for (; c0 + 16 <= nc; c0 += 16) {
    for (j0 = 0; j0 + 16 <= n; j0 += 16)
      gc_t16(src + c0 * lds + j0, lds, dst + j0 * ldd + c0, ldd, 16);
    if (j0 < n) gc_t16(src + c0 * lds + j0, lds, dst + j0 * ldd + c0, ldd, (int)(n - j0));
  }
  for (; c0 < nc; c0++)
    for (j0 = 0; j0 < n; j0++) dst[j0 * ldd + c0] = src[c0 * lds + j0];
}

/* Input rows [r0, r0 + p->rows) of image src (rows outside the input zero) into the slot as
 * channels-last rows of Wp pixels, pixel 0 being input column -pw. */
static void gc_fill_rows(const gc_conv *p, const float *src, int64_t r0, float *buf) {
  const int64_t C = p->Cin, S = p->Hi * p->Wi, pitch = p->Wp * C;
  for (int64_t r = 0; r < p->rows; r++) {
    float *d = buf + r * pitch;
    int64_t ih = r0 + r;
    if (ih < 0 || ih >= p->Hi) {
      memset(d, 0, (size_t)pitch * 4);
      continue;
    }
    memset(d, 0, (size_t)(p->pw * C) * 4);
    memset(d + (p->pw + p->Wi) * C, 0, (size_t)((p->Wp - p->pw - p->Wi) * C) * 4);
    if (p->nhwc) {
      memcpy(d + p->pw * C, src + ih * p->Wi * C, (size_t)(p->Wi * C) * 4);
      continue;
    }
    gc_transpose(src + ih * p->Wi, S, C, p->Wi, d + p->pw * C, C); /* (C, Wi) -> (Wi, C) */
  }
  if (p->gemm) memset(buf + p->rows * pitch, 0, (size_t)gc_slack(p) * 4);
}

/* (rows, Wo, Cout) channels-last rows -> rows [oh0, oh0 + rows) of a channels-first image. */
static void gc_store_cf(const gc_conv *p, const float *buf, int64_t oh0, int64_t rows, float *dst) {
  gc_transpose(buf, p->Cout, rows * p->Wo, p->Cout, dst + oh0 * p->Wo, p->Ho * p->Wo);
}

/* (rows, Wo, C) channels-last copy of rows [oh0, oh0 + rows) of a channels-first image. */
static void gc_load_cf(const gc_conv *p, const float *src, int64_t oh0, int64_t rows, float *buf) {
  gc_transpose(src + oh0 * p->Wo, p->Ho * p->Wo, p->Cout, rows * p->Wo, buf, p->Cout);
}

/* The permutation that gives lane l its group's channel c: (l / fo) * ci + c. */
__attribute__((target("avx512f"))) static inline __m512i gc_idx(const gc_conv *p, int64_t c) {
  int32_t v[GC_V];
  for (int l = 0; l < GC_V; l++) v[l] = (int32_t)(p->bcast ? c : l / p->fo * p->ci + c);
  return _mm512_loadu_si512(v);
}

/* NP output pixels from ow of one output row, channel block cb: rb points at the band's
 * input row of the row's first tap, pixel 0; wv the block's packed weight. */
#define GC_FWD_BLOCK(NP, CI)                                                                   \
  __attribute__((target("avx512f"))) static void gc_fwd_##NP##_##CI(                           \
      const gc_conv *p, const float *rb, const float *wv, const __m512i *idx, __m512 bias,     \
      int64_t ow, int64_t ibase, float *out) {                                                 \
    const int64_t C = p->Cin, pitch = p->Wp * C, step = p->sw * C;                             \
    __m512 acc[NP];                                                                            \
    for (int x = 0; x < NP; x++) acc[x] = bias;                                                \
    for (int64_t kh = 0; kh < p->KH; kh++) {                                                   \
      const float *r = rb + kh * p->dh * pitch + ow * step + ibase;                            \
      for (int64_t kw = 0; kw < p->KW; kw++, wv += (CI) * GC_V) {                              \
        const float *xp = r + kw * p->dw * C;                                                  \
        if (p->bcast) {                                                                        \
          for (int c = 0; c < (CI); c++) {                                                     \
            __m512 w = _mm512_load_ps(wv + c * GC_V);                                          \
            for (int x = 0; x < NP; x++)                                                       \
              acc[x] = _mm512_fmadd_ps(_mm512_set1_ps(xp[x * step + c]), w, acc[x]);          \
          }                                                                                    \
          continue;                                                                            \
        }                                                                                      \
        for (int x = 0; x < NP; x++) {                                                         \
          __m512 xv = _mm512_loadu_ps(xp + x * step);                                          \
          for (int c = 0; c < (CI); c++)                                                       \
            acc[x] = _mm512_fmadd_ps(_mm512_permutexvar_ps(idx[c], xv),                        \
                                     _mm512_load_ps(wv + c * GC_V), acc[x]);                   \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
    for (int x = 0; x < NP; x++) _mm512_storeu_ps(out + x * p->Cout, acc[x]);                 \
  }
#define GC_CIS(X, NP) X(NP, 1) X(NP, 2) X(NP, 4) X(NP, 8) X(NP, 16)
GC_CIS(GC_FWD_BLOCK, 8)
GC_CIS(GC_FWD_BLOCK, 1)

/* The register blocks (the default): the same products with each block's accumulators and
 * weights in registers through every tap (the blocks above keep them in memory), NP
 * independent FMA chains. Broadcast (whole vectors of one group): NP = 14 pixels, each FMA a
 * broadcast load times the tap's channel-c weight vector. Permuted (16/fo groups side by
 * side): NP = 12 pixels, each pixel's channel vector loaded once per tap and permuted per
 * channel of the group (INL: by vpermilps within 128-bit lanes when a group's inputs are
 * in its outputs' lane, fo = ci <= 4) against the tap's ci weight vectors held in registers.
 * A row's remainder by blocks of 8, 4, 2 and 1 pixels. */
#define GC_BPX 14
#define GC_PPX 12
#define GC_FWDB(NP, CI)                                                                        \
  __attribute__((target("avx512f"))) static void gc_fwdb_##NP##_##CI(                          \
      const gc_conv *p, const float *rb, const float *wv, const __m512i *idx, __m512 bias,     \
      int64_t ow, int64_t ibase, float *out) {                                                 \
    (void)idx;                                                                                 \
    const int64_t C = p->Cin, pitch = p->Wp * C, step = p->sw * C;                             \
    __m512 acc[NP];                                                                            \
    _Pragma("GCC unroll 16") for (int x = 0; x < NP; x++) acc[x] = bias;                       \
    for (int64_t kh = 0; kh < p->KH; kh++) {                                                   \
      const float *r = rb + kh * p->dh * pitch + ow * step + ibase;                            \
      for (int64_t kw = 0; kw < p->KW; kw++, wv += (CI) * GC_V) {                              \
        const float *xp = r + kw * p->dw * C;                                                  \
        _Pragma("GCC unroll 16") for (int c = 0; c < (CI); c++) {                              \
          __m512 w = _mm512_load_ps(wv + c * GC_V);                                            \
          _Pragma("GCC unroll 16") for (int x = 0; x < NP; x++)                                \
              acc[x] = _mm512_fmadd_ps(_mm512_set1_ps(xp[x * step + c]), w, acc[x]);           \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
    _Pragma("GCC unroll 16") for (int x = 0; x < NP; x++)                                      \
        _mm512_storeu_ps(out + x * p->Cout, acc[x]);                                           \
  }
#define GC_FWDP(NP, CI, INL)                                                                   \
  __attribute__((target("avx512f"))) static void gc_fwdp##INL##_##NP##_##CI(                   \
      const gc_conv *p, const float *rb, const float *wv, const __m512i *idx, __m512 bias,     \
      int64_t ow, int64_t ibase, float *out) {                                                 \
    const int64_t C = p->Cin, pitch = p->Wp * C, step = p->sw * C;                             \
    __m512 acc[NP];                                                                            \
    __m512i ix[CI];                                                                            \
    _Pragma("GCC unroll 16") for (int c = 0; c < (CI); c++) ix[c] = idx[c];                    \
    _Pragma("GCC unroll 16") for (int x = 0; x < NP; x++) acc[x] = bias;                       \
    for (int64_t kh = 0; kh < p->KH; kh++) {                                                   \
      const float *r = rb + kh * p->dh * pitch + ow * step + ibase;                            \
      for (int64_t kw = 0; kw < p->KW; kw++, wv += (CI) * GC_V) {                              \
        const float *xp = r + kw * p->dw * C;                                                  \
        __m512 w[CI];                                                                          \
        _Pragma("GCC unroll 16") for (int c = 0; c < (CI); c++) w[c] =                         \
            _mm512_load_ps(wv + c * GC_V);                                                     \
        _Pragma("GCC unroll 16") for (int x = 0; x < NP; x++) {                                \
          __m512 xv = _mm512_loadu_ps(xp + x * step);                                          \
          _Pragma("GCC unroll 16") for (int c = 0; c < (CI); c++) acc[x] = _mm512_fmadd_ps(    \
              INL ? _mm512_permutevar_ps(xv, ix[c]) : _mm512_permutexvar_ps(ix[c], xv), w[c],  \
              acc[x]);                                                                         \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
    _Pragma("GCC unroll 16") for (int x = 0; x < NP; x++)                                      \
        _mm512_storeu_ps(out + x * p->Cout, acc[x]);                                           \
  }
#define GC_NPS(X, ...) X(__VA_ARGS__, 8) X(__VA_ARGS__, 4) X(__VA_ARGS__, 2) X(__VA_ARGS__, 1)
#define GC_FWDB_CI(CI, NP) GC_FWDB(NP, CI)
#define GC_FWDP0_CI(CI, NP) GC_FWDP(NP, CI, 0)
#define GC_FWDP1_CI(CI, NP) GC_FWDP(NP, CI, 1)
#define GC_FWDB_ALL(CI) GC_FWDB(14, CI) GC_NPS(GC_FWDB_CI, CI)
#define GC_FWDP_ALL(CI) GC_FWDP(12, CI, 0) GC_NPS(GC_FWDP0_CI, CI)
#define GC_FWDPI_ALL(CI) GC_FWDP(12, CI, 1) GC_NPS(GC_FWDP1_CI, CI)
GC_FWDB_ALL(1)
GC_FWDB_ALL(2)
GC_FWDB_ALL(4)
GC_FWDB_ALL(8)
GC_FWDB_ALL(16)
GC_FWDP_ALL(1)
GC_FWDP_ALL(2)
GC_FWDP_ALL(4)
GC_FWDP_ALL(8)
GC_FWDPI_ALL(1)
GC_FWDPI_ALL(2)
GC_FWDPI_ALL(4)

/* The wide block: NP pixels x 4 output vectors (blocks cb..cb+3, weights ws apart). */
#define GC_FWD_WIDE(NP)                                                                        \
  __attribute__((target("avx512f"))) static void gc_fwdw_##NP(                                 \
      const gc_conv *p, const float *rb, const float *wv, int64_t ws, const float *bias,       \
      int64_t ow, int64_t ibase, float *out) {                                                 \
    const int64_t C = p->Cin, pitch = p->Wp * C, step = p->sw * C, ci = p->ci;                 \
    __m512 acc[NP][GC_NV];                                                                     \
    for (int v = 0; v < GC_NV; v++) {                                                          \
      __m512 b = bias ? _mm512_loadu_ps(bias + v * GC_V) : _mm512_setzero_ps();                \
      for (int x = 0; x < NP; x++) acc[x][v] = b;                                              \
    }                                                                                          \
    for (int64_t kh = 0; kh < p->KH; kh++) {                                                   \
      const float *r = rb + kh * p->dh * pitch + ow * step + ibase;                            \
      for (int64_t kw = 0; kw < p->KW; kw++, wv += ci * GC_V) {                                \
        const float *xp = r + kw * p->dw * C;                                                  \
        for (int64_t c = 0; c < ci; c++) {                                                     \
          __m512 w[GC_NV];                                                                     \
          for (int v = 0; v < GC_NV; v++) w[v] = _mm512_load_ps(wv + v * ws + c * GC_V);       \
          for (int x = 0; x < NP; x++) {                                                       \
            __m512 b = _mm512_set1_ps(xp[x * step + c]);                                       \
            for (int v = 0; v < GC_NV; v++) acc[x][v] = _mm512_fmadd_ps(b, w[v], acc[x][v]);   \
          }                                                                                    \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
    for (int x = 0; x < NP; x++)                                                               \
      for (int v = 0; v < GC_NV; v++) _mm512_storeu_ps(out + x * p->Cout + v * GC_V, acc[x][v]); \
  }
GC_FWD_WIDE(1)
GC_FWD_WIDE(2)
GC_FWD_WIDE(3)
GC_FWD_WIDE(4)
GC_FWD_WIDE(5)
GC_FWD_WIDE(6)
typedef void (*gc_fwdw_fn)(const gc_conv *, const float *, const float *, int64_t, const float *,
                           int64_t, int64_t, float *);
static const gc_fwdw_fn gc_fwdw[GC_WPX + 1] = {NULL,      gc_fwdw_1, gc_fwdw_2, gc_fwdw_3,
                                               gc_fwdw_4, gc_fwdw_5, gc_fwdw_6};

typedef void (*gc_fwd_fn)(const gc_conv *, const float *, const float *, const __m512i *, __m512,
                          int64_t, int64_t, float *);
static int gc_log2(int64_t ci) { return ci >= 16 ? 4 : ci >= 8 ? 3 : ci >= 4 ? 2 : ci >= 2 ? 1 : 0; }
static const gc_fwd_fn gc_fwd8[5] = {gc_fwd_8_1, gc_fwd_8_2, gc_fwd_8_4, gc_fwd_8_8, gc_fwd_8_16};
static const gc_fwd_fn gc_fwd1[5] = {gc_fwd_1_1, gc_fwd_1_2, gc_fwd_1_4, gc_fwd_1_8, gc_fwd_1_16};
static const gc_fwd_fn gc_fwdb[5][5] = {
    {gc_fwdb_14_1, gc_fwdb_8_1, gc_fwdb_4_1, gc_fwdb_2_1, gc_fwdb_1_1},
    {gc_fwdb_14_2, gc_fwdb_8_2, gc_fwdb_4_2, gc_fwdb_2_2, gc_fwdb_1_2},
    {gc_fwdb_14_4, gc_fwdb_8_4, gc_fwdb_4_4, gc_fwdb_2_4, gc_fwdb_1_4},
    {gc_fwdb_14_8, gc_fwdb_8_8, gc_fwdb_4_8, gc_fwdb_2_8, gc_fwdb_1_8},
    {gc_fwdb_14_16, gc_fwdb_8_16, gc_fwdb_4_16, gc_fwdb_2_16, gc_fwdb_1_16}};
/* no permuted blocks of 16 channels: a group of 16 inputs fills the vector (fo = 16) */
static const gc_fwd_fn gc_fwdp[5][5] = {
    {gc_fwdp0_12_1, gc_fwdp0_8_1, gc_fwdp0_4_1, gc_fwdp0_2_1, gc_fwdp0_1_1},
    {gc_fwdp0_12_2, gc_fwdp0_8_2, gc_fwdp0_4_2, gc_fwdp0_2_2, gc_fwdp0_1_2},
    {gc_fwdp0_12_4, gc_fwdp0_8_4, gc_fwdp0_4_4, gc_fwdp0_2_4, gc_fwdp0_1_4},
    {gc_fwdp0_12_8, gc_fwdp0_8_8, gc_fwdp0_4_8, gc_fwdp0_2_8, gc_fwdp0_1_8},
    {NULL}};
static const gc_fwd_fn gc_fwdpi[5][5] = {
    {gc_fwdp1_12_1, gc_fwdp1_8_1, gc_fwdp1_4_1, gc_fwdp1_2_1, gc_fwdp1_1_1},
    {gc_fwdp1_12_2, gc_fwdp1_8_2, gc_fwdp1_4_2, gc_fwdp1_2_2, gc_fwdp1_1_2},
    {gc_fwdp1_12_4, gc_fwdp1_8_4, gc_fwdp1_4_4, gc_fwdp1_2_4, gc_fwdp1_1_4},
    {NULL},
    {NULL}};

/* One output row oh (band row j, input rows from rb) into out (Wo x Cout channels-last). */
__attribute__((target("avx512f"))) static void gc_fwd_row(const gc_conv *p, const float *rb,
                                                          const float *wpk, const float *bias,
                                                          float *out) {
  __m512i idx[GC_V];
  for (int64_t c = 0; !p->wide && c < p->ci; c++) idx[c] = gc_idx(p, c);
  if (p->wide) {
    const int64_t ws = p->KK * p->ci * GC_V;
    for (int64_t cb = 0; cb < p->Cout / GC_V; cb += GC_NV) {
      const float *wv = wpk + cb * ws, *b = bias ? bias + cb * GC_V : NULL;
      int64_t ibase = cb * GC_V / p->fo * p->ci, ow = 0;
      float *o = out + cb * GC_V;
      for (; ow + GC_WPX <= p->Wo; ow += GC_WPX)
        gc_fwdw_6(p, rb, wv, ws, b, ow, ibase, o + ow * p->Cout);
      if (ow < p->Wo) /* the remainder, by the block of its width */
        gc_fwdw[p->Wo - ow](p, rb, wv, ws, b, ow, ibase, o + ow * p->Cout);
    }
    return;
  }
  if (!p->old) { /* the register blocks: the main width, then 8, 4, 2, 1 */
    const int l = gc_log2(p->ci), inl = p->fo == p->ci && p->ci <= 4;
    const gc_fwd_fn *fs = p->bcast ? gc_fwdb[l] : inl ? gc_fwdpi[l] : gc_fwdp[l];
    const int64_t main = p->bcast ? GC_BPX : GC_PPX;
    for (int64_t cb = 0; cb < p->Cout / GC_V; cb++) {
      const float *wv = wpk + cb * p->KK * p->ci * GC_V;
      int64_t ibase = cb * GC_V / p->fo * p->ci, ow = 0;
      __m512 b = bias ? _mm512_loadu_ps(bias + cb * GC_V) : _mm512_setzero_ps();
      float *o = out + cb * GC_V;
      for (; ow + main <= p->Wo; ow += main) fs[0](p, rb, wv, idx, b, ow, ibase, o + ow * p->Cout);
      for (int k = 1; k < 5; k++)
        for (; ow + (16 >> k) <= p->Wo; ow += 16 >> k)
          fs[k](p, rb, wv, idx, b, ow, ibase, o + ow * p->Cout);
    }
    return;
  }
  gc_fwd_fn f8 = gc_fwd8[gc_log2(p->ci)], f1 = gc_fwd1[gc_log2(p->ci)];
  for (int64_t cb = 0; cb < p->Cout / GC_V; cb++) {
    const float *wv = wpk + cb * p->KK * p->ci * GC_V;
    int64_t ibase = cb * GC_V / p->fo * p->ci;
    __m512 b = bias ? _mm512_loadu_ps(bias + cb * GC_V) : _mm512_setzero_ps();
    float *o = out + cb * GC_V;
    int64_t ow = 0;
    for (; ow + GC_PX <= p->Wo; ow += GC_PX) f8(p, rb, wv, idx, b, ow, ibase, o + ow * p->Cout);
    if (ow < p->Wo && p->Wo >= GC_PX) /* the last block again, overlapping */
      f8(p, rb, wv, idx, b, p->Wo - GC_PX, ibase, o + (p->Wo - GC_PX) * p->Cout);
    else
      for (; ow < p->Wo; ow++) f1(p, rb, wv, idx, b, ow, ibase, o + ow * p->Cout);
  }
}

/* One output row oh by the implicit GEMM (p->gemm) into out (Wo x Cout channels-last): the
 * taps of the window rows kh in [kh0, kh1) (the others read padding rows), tk at a time,
 * each A_t the band's row pixels in place (rows sw pixels apart, from rb + toff[t]). */
static void gc_gemm_row(const gc_conv *p, const float *rb, const float *wpk, const float *bias,
                        int64_t oh, const int64_t *toff, float *out) {
  const int64_t C = p->Cin, bs = p->KK * C * NN_GEMM_NR;
  int64_t kh0 = 0, kh1 = p->KH;
  while (kh0 < kh1 && oh * p->sh - p->ph + kh0 * p->dh < 0) kh0++;
  while (kh1 > kh0 && oh * p->sh - p->ph + (kh1 - 1) * p->dh >= p->Hi) kh1--;
  const int64_t t0 = kh0 * p->KW, t1 = kh1 * p->KW;
  if (t0 == t1) { /* the window in the padding rows only: the bias */
    for (int64_t ow = 0; ow < p->Wo; ow++)
      for (int64_t o = 0; o < p->Cout; o++) out[ow * p->Cout + o] = bias ? bias[o] : 0.0f;
    return;
  }
  for (int64_t t = t0; t < t1; t += p->tk)
    nn_gemm_taps(p->Wo, p->Cout, t1 - t < p->tk ? t1 - t : p->tk, C, rb, p->sw * C, toff + t,
                 wpk + t * C * NN_GEMM_NR, bs, out, p->Cout, t == t0, bias);
}

/* Weight-gradient partial of one output row: for every tap and channel c of the group,
 * dw[cb][t][c] += sum over the row of gy[ow] * (permuted x of the tap). gy: Wo x Cout. */
#define GC_DW_ROW(CI)                                                                          \
  __attribute__((target("avx512f"))) static void gc_dw_row_##CI(                               \
      const gc_conv *p, const float *rb, const float *gy, const __m512i *idx, float *dw) {     \
    const int64_t C = p->Cin, pitch = p->Wp * C, step = p->sw * C;                             \
    for (int64_t cb = 0; cb < p->Cout / GC_V; cb++) {                                          \
      int64_t ibase = cb * GC_V / p->fo * p->ci;                                               \
      const float *g = gy + cb * GC_V;                                                         \
      for (int64_t t = 0; t < p->KK; t++) {                                                    \
        const float *xp = rb + t / p->KW * p->dh * pitch + t % p->KW * p->dw * C + ibase;      \
        float *d = dw + (cb * p->KK + t) * (CI) * GC_V;                                        \
        __m512 acc[CI];                                                                        \
        for (int c = 0; c < (CI); c++) acc[c] = _mm512_load_ps(d + c * GC_V);                  \
        for (int64_t ow = 0; ow < p->Wo; ow++) {                                               \
          __m512 gv = _mm512_loadu_ps(g + ow * p->Cout);                                       \
          const float *x = xp + ow * step;                                                     \
          if (p->bcast)                                                                        \
            for (int c = 0; c < (CI); c++)                                                     \
              acc[c] = _mm512_fmadd_ps(gv, _mm512_set1_ps(x[c]), acc[c]);                     \
          else {                                                                               \
            __m512 xv = _mm512_loadu_ps(x);                                                    \
            for (int c = 0; c < (CI); c++)                                                     \
              acc[c] = _mm512_fmadd_ps(gv, _mm512_permutexvar_ps(idx[c], xv), acc[c]);         \
          }                                                                                    \
        }                                                                                      \
        for (int c = 0; c < (CI); c++) _mm512_store_ps(d + c * GC_V, acc[c]);                  \
      }                                                                                        \
    }                                                                                          \
  }
GC_DW_ROW(1)
GC_DW_ROW(2)
GC_DW_ROW(4)
GC_DW_ROW(8)
GC_DW_ROW(16)
/* The wide weight gradient of one output row: 4 output vectors x 4 channels at a time. */
__attribute__((target("avx512f"))) static void gc_dw_row_wide(const gc_conv *p, const float *rb,
                                                              const float *gy, const __m512i *idx,
                                                              float *dw) {
  (void)idx;
  const int64_t C = p->Cin, pitch = p->Wp * C, step = p->sw * C, ci = p->ci, KK = p->KK;
  for (int64_t cb = 0; cb < p->Cout / GC_V; cb += GC_NV) {
    int64_t ibase = cb * GC_V / p->fo * ci;
    const float *g = gy + cb * GC_V;
    for (int64_t t = 0; t < KK; t++) {
      const float *xp = rb + t / p->KW * p->dh * pitch + t % p->KW * p->dw * C + ibase;
      for (int64_t c = 0; c < ci; c += 4) {
        __m512 acc[4][GC_NV];
        for (int cc = 0; cc < 4; cc++)
          for (int v = 0; v < GC_NV; v++)
            acc[cc][v] = _mm512_load_ps(dw + (((cb + v) * KK + t) * ci + c + cc) * GC_V);
        for (int64_t ow = 0; ow < p->Wo; ow++) {
          __m512 gv[GC_NV];
          for (int v = 0; v < GC_NV; v++) gv[v] = _mm512_loadu_ps(g + ow * p->Cout + v * GC_V);
          const float *x = xp + ow * step + c;
          for (int cc = 0; cc < 4; cc++) {
            __m512 b = _mm512_set1_ps(x[cc]);
            for (int v = 0; v < GC_NV; v++) acc[cc][v] = _mm512_fmadd_ps(gv[v], b, acc[cc][v]);
          }
        }
        for (int cc = 0; cc < 4; cc++)
          for (int v = 0; v < GC_NV; v++)
            _mm512_store_ps(dw + (((cb + v) * KK + t) * ci + c + cc) * GC_V, acc[cc][v]);
      }
    }
  }
}

typedef void (*gc_dw_fn)(const gc_conv *, const float *, const float *, const __m512i *, float *);
static const gc_dw_fn gc_dw_rows[5] = {gc_dw_row_1, gc_dw_row_2, gc_dw_row_4, gc_dw_row_8,
                                       gc_dw_row_16};

/* Packs w (F, Cg, KK) for the forward (dx = 0) or the data gradient (dx = 1): vector
 * (cb, t, c) holds, in lane l, the weight of output channel o = cb*16 + l of the convolution
 * with its group's input channel c at tap t (the data gradient: o an input channel of the
 * forward, c a filter of its group, the tap flipped); the implicit GEMM's: the same in 32-wide
 * vectors (nn_gemm_taps' strips of B, k = t*ci + c). tk: a phase's taps (indices into the
 * kkw taps of w, not flipped). */
static void gc_pack(const gc_conv *p, const float *w, int dx, const int64_t *tk, int64_t kkw,
                    float *wpk) {
  const int64_t KK = p->KK, V = p->gemm ? NN_GEMM_NR : p->planar ? p->pf : GC_V;
  if (p->gemm) /* the last strip's columns past Cout */
    memset(wpk, 0, (size_t)((p->Cout + V - 1) / V * V * KK * p->ci) * 4);
  for (int64_t o = 0; o < p->Cout; o++)
    for (int64_t t = 0; t < KK; t++)
      for (int64_t c = 0; c < p->ci; c++) {
        float v;
        if (!dx) v = w[(o * p->ci + c) * KK + t];
        else { /* forward weight (f, cl, tap): f = group's filter c, cl = o's place in its group */
          int64_t f = o / p->fo * p->ci + c, cl = o % p->fo;
          v = tk ? w[(f * p->fo + cl) * kkw + tk[t]] : w[(f * p->fo + cl) * KK + (KK - 1 - t)];
        }
        wpk[((o / V * KK + t) * p->ci + c) * V + o % V] = v;
      }
}

typedef struct gc_run {
  const gc_conv *p;
  const int64_t *toff; /* the implicit GEMM's tap offsets into the band rows (KK) */
  const float *src, *wpk, *bias, *x, *gy;
  float *dst;
  char *slots;
  size_t slot_bytes;
  int nt;
} gc_run;

static int gc_threads(const gc_conv *p, size_t avail, size_t slot) {
  int64_t nt = omp_get_max_threads(), cap = (int64_t)(avail / slot);
  int64_t items = p->N * p->items_per_img;
  if (nt > cap) nt = cap;
  if (nt > items) nt = items;
  double work = (double)p->N * p->Ho * p->Wo * p->Cout * p->ci * p->KK;
  if (nt < 1 || work < OPF_PAR_MIN) nt = 1;
  return (int)nt;
}


/* The planar rows (p->planar: channels first, stride 1): a band's input rows are copied per
 * channel into zero-padded planes of Wp-pixel rows (pitch PI), so output (r, w) of the band
 * is flat position j = r*Wp + w of an output plane and tap t reads input j + toff[t] of each
 * channel's plane: every FMA is a plain load of 16 consecutive inputs (shared by PF
 * filters) times a broadcast weight (shared by PN vectors). Columns w >= Wo are computed
 * and discarded. Weights packed (Cout/PF, KK, ci, PF). 8 filters a block where the groups
 * have them: with 4 the vector loads (16 FMAs each, most of them across cache lines) held a
 * Zen 5 core to ~0.9 FMA per cycle in L1, 8 x 2 runs at ~1.9 (a micro-benchmark). */
#define GC_PLAN_BLK(PF, PN)                                                                    \
  __attribute__((target("avx512f"))) static void gc_plan_blk##PF(                              \
      const gc_conv *p, const float *in, const float *wq, const int64_t *toff,                 \
      const float *bias, float *out) {                                                         \
    const int64_t ci = p->ci, PI = p->PI, PO = p->PO;                                          \
    __m512 acc[PF][PN];                                                                        \
    _Pragma("GCC unroll 8") for (int f = 0; f < (PF); f++) {                                   \
      __m512 b = bias ? _mm512_set1_ps(bias[f]) : _mm512_setzero_ps();                         \
      _Pragma("GCC unroll 8") for (int v = 0; v < (PN); v++) acc[f][v] = b;                    \
    }                                                                                          \
    for (int64_t t = 0; t < p->KK; t++) {                                                      \
      const float *xt = in + toff[t], *wt = wq + t * ci * (PF);                                \
      for (int64_t c = 0; c < ci; c++, xt += PI, wt += (PF)) {                                 \
        __m512 xv[PN];                                                                         \
        _Pragma("GCC unroll 8") for (int v = 0; v < (PN); v++) xv[v] =                         \
            _mm512_loadu_ps(xt + v * 16);                                                      \
        _Pragma("GCC unroll 8") for (int f = 0; f < (PF); f++) {                               \
          __m512 w = _mm512_set1_ps(wt[f]);                                                    \
          _Pragma("GCC unroll 8") for (int v = 0; v < (PN); v++) acc[f][v] =                   \
              _mm512_fmadd_ps(xv[v], w, acc[f][v]);                                            \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
    _Pragma("GCC unroll 8") for (int f = 0; f < (PF); f++)                                     \
        _Pragma("GCC unroll 8") for (int v = 0; v < (PN); v++)                                 \
            _mm512_storeu_ps(out + f * PO + v * 16, acc[f][v]);                                \
  }
GC_PLAN_BLK(8, 2)
GC_PLAN_BLK(4, 4)

/* One band of a planar pass: output rows [oh0, oh0 + rows) of image src into dst. */
static void gc_plan_band(const gc_conv *p, const struct gc_run *r, const float *src, int64_t oh0,
                         int64_t rows, const gc_slot *s, float *dst) {
  const int64_t Wp = p->Wp, PI = p->PI, PO = p->PO, S = p->Hi * p->Wi;
  const int64_t nin = rows - 1 + (p->KH - 1) * p->dh + 1, r0 = oh0 - p->ph;
  for (int64_t c = 0; c < p->Cin; c++) {
    float *pl = s->in + c * PI;
    for (int64_t i = 0; i < nin; i++) {
      float *d = pl + i * Wp;
      int64_t ih = r0 + i;
      if (ih < 0 || ih >= p->Hi) {
        memset(d, 0, (size_t)Wp * 4);
        continue;
      }
      /* columns [j0, j1) from the input (pw < 0 or a short Wp: a phase's window) */
      int64_t j0 = p->pw > 0 ? p->pw : 0, j1 = p->pw + p->Wi < Wp ? p->pw + p->Wi : Wp;
      if (j1 < j0) j1 = j0;
      memset(d, 0, (size_t)j0 * 4);
      memcpy(d + j0, src + c * S + ih * p->Wi + (j0 - p->pw), (size_t)(j1 - j0) * 4);
      memset(d + j1, 0, (size_t)(Wp - j1) * 4);
    }
    memset(pl + nin * Wp, 0, (size_t)(PI - nin * Wp) * 4); /* the chunks' overreach */
  }
  const int64_t n = (rows - 1) * Wp + p->Wo, G = p->Cout / p->fo;
  for (int64_t grp = 0; grp < G; grp++) {
    const float *in = s->in + grp * p->ci * PI;
    for (int64_t j0 = 0; j0 < n; j0 += p->pf == 8 ? 32 : 64)
      for (int64_t o = grp * p->fo; o < (grp + 1) * p->fo; o += p->pf)
        (p->pf == 8 ? gc_plan_blk8 : gc_plan_blk4)(p, in + j0, r->wpk + o * p->KK * p->ci, r->toff,
                                                   r->bias ? r->bias + o : NULL,
                                                   s->out + o * PO + j0);
  }
  if (p->osh) { /* a phase: every osw-th column of every osh-th row of dx */
    for (int64_t o = 0; o < p->Cout; o++)
      for (int64_t i = 0; i < rows; i++) {
        float *d = dst + (o * p->oH + p->qh + p->osh * (oh0 + i)) * p->oW + p->qw;
        const float *q = s->out + o * PO + i * Wp;
        for (int64_t j = 0; j < p->Wo; j++) d[j * p->osw] = q[j];
      }
    return;
  }
  for (int64_t o = 0; o < p->Cout; o++)
    for (int64_t i = 0; i < rows; i++)
      memcpy(dst + (o * p->Ho + oh0 + i) * p->Wo, s->out + o * PO + i * Wp, (size_t)p->Wo * 4);
}

/* Forward-shaped pass: dst = conv(src) + bias. */
static void gc_conv_run(const gc_run *r) {
  const gc_conv *p = r->p;
  const int64_t items = p->N * p->items_per_img, isz = p->Cin * p->Hi * p->Wi,
                osz = p->Cout * (p->osh ? p->oH * p->oW : p->Ho * p->Wo);
#pragma omp parallel num_threads(r->nt) if (r->nt > 1)
  {
    int k = omp_get_thread_num(), m = omp_get_num_threads();
    gc_slot s;
    gc_slot_layout(p, r->slots + (size_t)k * r->slot_bytes, &s);
    for (int64_t it = items * k / m; it < items * (k + 1) / m; it++) {
      int64_t n = it / p->items_per_img, oh0 = it % p->items_per_img * p->band;
      int64_t rows = p->Ho - oh0 < p->band ? p->Ho - oh0 : p->band;
      if (p->planar) {
        gc_plan_band(p, r, r->src + n * isz, oh0, rows, &s, r->dst + n * osz);
        continue;
      }
      gc_fill_rows(p, r->src + n * isz, oh0 * p->sh - p->ph, s.in);
      float *dn = r->dst + n * osz;
      for (int64_t j = 0; j < rows; j++) {
        float *o = p->nhwc ? dn + (oh0 + j) * p->Wo * p->Cout : s.out + j * p->Wo * p->Cout;
        const float *rb = s.in + j * p->sh * p->Wp * p->Cin;
        if (p->gemm) gc_gemm_row(p, rb, r->wpk, r->bias, oh0 + j, r->toff, o);
        else gc_fwd_row(p, rb, r->wpk, r->bias, o);
      }
      if (!p->nhwc) gc_store_cf(p, s.out, oh0, rows, dn);
    }
  }
}

/* Weight and bias gradients (either may be NULL) of the forward convolution p. */
__attribute__((target("avx512f"))) static void gc_wgrad_run(const gc_run *r, float *dw, float *db) {
  const gc_conv *p = r->p;
  const int64_t items = p->N * p->items_per_img, isz = p->Cin * p->Hi * p->Wi,
                osz = p->Cout * p->Ho * p->Wo, nw = p->Cout * p->ci * p->KK;
  int used = 1;
#pragma omp parallel num_threads(r->nt) if (r->nt > 1)
  {
    int k = omp_get_thread_num(), m = omp_get_num_threads();
    if (k == 0) used = m;
    gc_slot s;
    gc_slot_layout(p, r->slots + (size_t)k * r->slot_bytes, &s);
    memset(s.dw, 0, (size_t)nw * 4);
    memset(s.db, 0, (size_t)p->Cout * 4);
    __m512i idx[GC_V];
    for (int64_t c = 0; !p->wide && c < p->ci; c++) idx[c] = gc_idx(p, c);
    gc_dw_fn row = p->wide ? gc_dw_row_wide : gc_dw_rows[gc_log2(p->ci)];
    for (int64_t it = items * k / m; it < items * (k + 1) / m; it++) {
      int64_t n = it / p->items_per_img, oh0 = it % p->items_per_img * p->band;
      int64_t rows = p->Ho - oh0 < p->band ? p->Ho - oh0 : p->band;
      const float *gn = r->gy + n * osz, *g = gn + oh0 * p->Wo * p->Cout;
      if (!p->nhwc) gc_load_cf(p, gn, oh0, rows, s.gy), g = s.gy;
      if (db)
        for (int64_t j = 0; j < rows * p->Wo; j++)
          for (int64_t cb = 0; cb < p->Cout; cb += GC_V)
            _mm512_store_ps(s.db + cb, _mm512_add_ps(_mm512_load_ps(s.db + cb),
                                                     _mm512_loadu_ps(g + j * p->Cout + cb)));
      if (!dw) continue;
      gc_fill_rows(p, r->x + n * isz, oh0 * p->sh - p->ph, s.in);
      for (int64_t j = 0; j < rows; j++)
        row(p, s.in + j * p->sh * p->Wp * p->Cin, g + j * p->Wo * p->Cout, idx, s.dw);
    }
  }
  gc_slot s0, sk;
  gc_slot_layout(p, r->slots, &s0);
  for (int k = 1; k < used; k++) {
    gc_slot_layout(p, r->slots + (size_t)k * r->slot_bytes, &sk);
    for (int64_t i = 0; i < nw; i++) s0.dw[i] += sk.dw[i];
    for (int64_t i = 0; i < p->Cout; i++) s0.db[i] += sk.db[i];
  }
  if (db) memcpy(db, s0.db, (size_t)p->Cout * 4);
  if (dw) /* (Cout/16, KK, ci, 16) -> (F, Cg, KK) */
    for (int64_t o = 0; o < p->Cout; o++)
      for (int64_t t = 0; t < p->KK; t++)
        for (int64_t c = 0; c < p->ci; c++)
          dw[(o * p->ci + c) * p->KK + t] = s0.dw[((o / GC_V * p->KK + t) * p->ci + c) * GC_V + o % GC_V];
}

static void gc_setup(gc_run *r, const gc_conv *p, const nn_conv_geom *g, void *ws, size_t ws_bytes) {
  memset(r, 0, sizeof *r);
  r->p = p;
  r->slot_bytes = gc_slot_layout(p, NULL, NULL);
  r->slots = (char *)ws + 2 * gc_wpk_bytes(g);
  r->nt = gc_threads(p, ws_bytes - 2 * gc_wpk_bytes(g), r->slot_bytes);
}

/* The data gradient of a strided convolution by its phases (gc_phase_of), all of them with
 * the same bands of their rows, band by band (each phase writes every sh-th row, every
 * sw-th column of dx: one after the other over the whole image they fetched dx's lines
 * sh*sw times from memory). */
static void gc_phases(const nn_conv_geom *g, const float *w, const float *gy, float *dx, void *ws,
                      size_t ws_bytes) {
  gc_conv ph[GC_MAX_PH];
  gc_run rr[GC_MAX_PH];
  int64_t tk[GC_GEMM_TAPS], toff[GC_MAX_PH][GC_GEMM_TAPS], band = 0, ipi = 0;
  float *wpk = (float *)((char *)ws + gc_wpk_bytes(g));
  int n = 0;
  for (int64_t qh = 0; qh < g->s[1]; qh++)
    for (int64_t qw = 0; qw < g->s[2]; qw++) {
      if (!gc_phase_of(g, qh, qw, &ph[n], tk, toff[n])) continue;
      memset(&rr[n], 0, sizeof rr[n]);
      rr[n].p = &ph[n], rr[n].toff = toff[n], rr[n].wpk = wpk;
      gc_pack(&ph[n], w, 1, tk, g->k[1] * g->k[2], wpk);
      wpk += ph[n].Cout * ph[n].ci * ph[n].KK;
      if (!n || ph[n].band < band) band = ph[n].band;
      n++;
    }
  size_t slot = 0;
  double work = 0;
  for (int k = 0; k < n; k++) {
    gc_conv *p = &ph[k];
    p->band = band, p->rows = band + p->KH - 1, p->items_per_img = (p->Ho + band - 1) / band;
    p->PI = p->rows * p->Wp + GC_PCH, p->PO = band * p->Wp + GC_PCH;
    if (gc_slot_layout(p, NULL, NULL) > slot) slot = gc_slot_layout(p, NULL, NULL);
    if (p->items_per_img > ipi) ipi = p->items_per_img;
    work += (double)p->N * p->Ho * p->Wo * p->Cout * p->ci * p->KK;
  }
  if (!n) return;
  char *slots = (char *)ws + 2 * gc_wpk_bytes(g);
  int64_t nt = omp_get_max_threads(), items = g->N * ipi;
  if (nt > (int64_t)((ws_bytes - 2 * gc_wpk_bytes(g)) / slot))
    nt = (int64_t)((ws_bytes - 2 * gc_wpk_bytes(g)) / slot);
  if (nt > items) nt = items;
  if (nt < 1 || work < OPF_PAR_MIN) nt = 1;
  const int64_t isz = g->F * g->out[1] * g->out[2], osz = g->C * g->in[1] * g->in[2];
#pragma omp parallel num_threads((int)nt) if (nt > 1)
  {
    int k = omp_get_thread_num(), m = omp_get_num_threads();
    for (int64_t it = items * k / m; it < items * (k + 1) / m; it++) {
      int64_t img = it / ipi, oh0 = it % ipi * band;
      for (int q = 0; q < n; q++) {
        const gc_conv *p = &ph[q];
        if (oh0 >= p->Ho) continue;
        gc_slot s;
        gc_slot_layout(p, slots + (size_t)k * slot, &s);
        gc_plan_band(p, &rr[q], gy + img * isz, oh0, p->Ho - oh0 < band ? p->Ho - oh0 : band, &s,
                     dx + img * osz);
      }
    }
  }
}

/* The implicit GEMM's tap offsets: tap t = (kh, kw) of band row j at rb + toff[t]. */
static void gc_taps(const gc_conv *p, int64_t *toff) {
  for (int64_t t = 0; t < p->KK; t++)
    toff[t] = (t / p->KW * p->dh * p->Wp + t % p->KW * p->dw) * (p->planar ? 1 : p->Cin);
}

/* A forward-shaped pass (dx: the data gradient) by the direct kernels or the implicit GEMM. */
static void gc_conv_pass(const nn_conv_geom *g, int dx, int kind, void *ws, size_t ws_bytes,
                         const void *src, const void *w, const void *b, void *dst) {
  gc_conv p;
  gc_run r;
  int64_t toff[GC_GEMM_TAPS];
  gc_conv_of(&p, g, dx, kind);
  gc_setup(&r, &p, g, ws, ws_bytes);
  float *wpk = (float *)((char *)ws + (dx ? gc_wpk_bytes(g) : 0));
  gc_pack(&p, w, dx, NULL, 0, wpk);
  if (p.gemm || p.planar) gc_taps(&p, toff);
  r.src = src, r.wpk = wpk, r.bias = b, r.dst = dst, r.toff = toff;
  gc_conv_run(&r);
}

void nn_group_forward(const nn_conv_geom *g, int kind, void *ws, size_t ws_bytes, const void *x,
                      const void *w, const void *b, void *y) {
  gc_conv_pass(g, 0, kind, ws, ws_bytes, x, w, b, y);
}

void nn_group_backward(const nn_conv_geom *g, int kind, void *ws, size_t ws_bytes, const void *x,
                       const void *w, const void *gy, void *dx, void *dw, void *db) {
  gc_conv p;
  gc_run r;
  if (dx && (g->s[1] > 1 || g->s[2] > 1)) gc_phases(g, w, gy, dx, ws, ws_bytes);
  else if (dx)
    gc_conv_pass(g, 1, kind, ws, ws_bytes, gy, w, NULL, dx);
  if (dw || db) {
    gc_conv_of(&p, g, 0, kind == NN_GROUP_BLOCK8 ? kind : GC_KIND_CL);
    gc_setup(&r, &p, g, ws, ws_bytes);
    r.x = x, r.gy = gy;
    gc_wgrad_run(&r, dw, db);
  }
}
#else
void nn_group_forward(const nn_conv_geom *g, int kind, void *ws, size_t ws_bytes, const void *x,
                      const void *w, const void *b, void *y) {
  (void)g, (void)kind, (void)ws, (void)ws_bytes, (void)x, (void)w, (void)b, (void)y;
}
void nn_group_backward(const nn_conv_geom *g, int kind, void *ws, size_t ws_bytes, const void *x,
                       const void *w, const void *gy, void *dx, void *dw, void *db) {
  (void)g, (void)kind, (void)ws, (void)ws_bytes, (void)x, (void)w, (void)gy, (void)dx, (void)dw;
  (void)db;
}
#endif
