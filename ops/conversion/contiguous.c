/* contiguous.c: materialise a strided view of x as a contiguous tensor. The view is
 * x[::step[0], ::step[1], ...] with its axes then permuted by perm (y axis d is view axis
 * perm[d]), so "perm=1,0" is a transposed view, "step=1,2" an every-other-column view, and
 * "perm=0,2,3,1" NCHW seen as NHWC; y is the view written in row-major order.
 * The copy plan drops unit axes and merges axes that stay adjacent, then takes one of three
 * paths: contiguous rows (memcpy), a tiled transpose when some y axis other than the innermost
 * walks x with unit stride, or a strided gather along the innermost axis. */
#include "creation/create_common.h"

#ifdef OPF_X86
#include <immintrin.h>
#else
#include "opf_vec128.h"
#endif

enum { CT_PERM = 0, CT_STEP = 1 };
enum { CT_ROWS, CT_TILES, CT_GATHER };
#define CT_TILE_BYTES 65536 /* transposed tile buffer (see the tiles section) */

typedef struct {
  int nd, kind, t;            /* t: the unit-stride axis of the tiled path */
  int64_t n[OPF_MAX_DIMS];    /* sizes of y's merged axes */
  int64_t xs[OPF_MAX_DIMS];   /* their strides in x (elements) */
  int64_t ys[OPF_MAX_DIMS];   /* their strides in y */
  int64_t nunits;             /* rows, or (outer index, a-tile, b-tile), shared over threads */
  int64_t ta, tb, nta, ntb;   /* transposed tiles: extents along a (axis t) and b (innermost),
                               * and tile counts */
  int avx2, stream;
  const char *x;
  char *y;
  size_t es;
} ct_plan;

/* y axis d of the view: x axis perm[d], sampled every step[perm[d]]. */
static int ct_axis(const opf_case *c, int d) { return c->list[CT_PERM].n ? (int)c->list[CT_PERM].v[d] : d; }
static int64_t ct_step(const opf_case *c, int a) { return c->list[CT_STEP].n ? c->list[CT_STEP].v[a] : 1; }

static int ct_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  int rc = cr_need_input(c, 0);
  if (rc) return rc;
  char sx[96];
  const opf_list *perm = &c->list[CT_PERM], *step = &c->list[CT_STEP];
  if (perm->n && perm->n != x->ndim)
    return opf_case_error(c, OPF_EINVAL, "perm has %d axes but x %s has %d", perm->n,
                          opf_shape_str(x, sx, sizeof sx), x->ndim);
  if (step->n && step->n != x->ndim)
    return opf_case_error(c, OPF_EINVAL, "step has %d values but x %s has %d axes", step->n,
                          opf_shape_str(x, sx, sizeof sx), x->ndim);
  unsigned seen = 0;
  for (int d = 0; d < perm->n; d++) {
    int64_t a = perm->v[d];
    if (a < 0 || a >= x->ndim || (seen >> a & 1u))
      return opf_case_error(c, OPF_EINVAL, "perm is not a permutation of the %d axes of x %s "
                            "(entry %d is %lld)", x->ndim, opf_shape_str(x, sx, sizeof sx), d, (long long)a);
    seen |= 1u << a;
  }
  for (int d = 0; d < step->n; d++)
    if (step->v[d] < 1)
      return opf_case_error(c, OPF_EINVAL, "step[%d] is %lld, must be >= 1", d, (long long)step->v[d]);
  int64_t shape[OPF_MAX_DIMS];
  for (int d = 0; d < x->ndim; d++) {
    int a = ct_axis(c, d);
    int64_t s = ct_step(c, a);
    shape[d] = (x->shape[a] + s - 1) / s;
  }
  opf_set_out(c, 0, c->dtype, x->ndim, shape);
  return OPF_OK;
}

/* Offset in x of y's element with outer linear index r over merged axes [0, nd) minus the
 * skipped ones (bit set in skip), and the matching offset in y. */
static void ct_offsets(const ct_plan *p, int64_t r, unsigned skip, int64_t *xo, int64_t *yo) {
  int64_t ox = 0, oy = 0;
  for (int d = p->nd - 1; d >= 0; d--) {
    if (skip >> d & 1u) continue;
    int64_t i = r % p->n[d];
    r /= p->n[d];
    ox += i * p->xs[d];
    oy += i * p->ys[d];
  }
  *xo = ox, *yo = oy;
}

static void ct_plan_make(ct_plan *p, const opf_case *c) {
  const opf_tensor *x = &c->in[0];
  int nd = 0;
  for (int d = 0; d < x->ndim; d++) {
    int a = ct_axis(c, d);
    int64_t n = c->out[0].shape[d], s = x->strides[a] * ct_step(c, a);
    if (n == 1) continue;
    if (nd && p->xs[nd - 1] == s * n) { /* adjacent in x too: one axis */
      p->n[nd - 1] *= n;
      p->xs[nd - 1] = s;
    } else {
      p->n[nd] = n, p->xs[nd] = s, nd++;
    }
  }
  if (!nd) p->n[0] = 1, p->xs[0] = 1, nd = 1;
  p->nd = nd;
  p->ys[nd - 1] = 1;
  for (int d = nd - 2; d >= 0; d--) p->ys[d] = p->ys[d + 1] * p->n[d + 1];
  p->t = -1;
  for (int d = 0; d < nd - 1; d++)
    if (p->xs[d] == 1) p->t = d;
  p->kind = p->xs[nd - 1] == 1 ? CT_ROWS : p->t >= 0 ? CT_TILES : CT_GATHER;
  int64_t total = opf_numel(&c->out[0]);
  p->x = x->data;
  p->y = c->out[0].data;
  p->es = opf_dtype_size(c->dtype);
#ifdef OPF_X86
  p->avx2 = __builtin_cpu_supports("avx2");
#else
  p->avx2 = 1; /* the 128-bit register tiles (opf_vec128.h) stand in for AVX2's */
#endif
  p->stream = cr_large(&c->out[0]);
  p->nunits = total / p->n[nd - 1];
  if (p->kind == CT_TILES) {
    /* Square tiles, unless one side is thin: then the other side takes the whole buffer. */
    int64_t cap = CT_TILE_BYTES / (int64_t)p->es, sq = (int64_t)sqrt((double)cap);
    int64_t na = p->n[p->t], nb = p->n[nd - 1];
    p->ta = nb < sq ? (na < cap / nb ? na : cap / nb) : na < sq ? na : sq;
    p->tb = nb < sq ? nb : (nb < cap / p->ta ? nb : cap / p->ta);
    p->nta = (na + p->ta - 1) / p->ta;
    p->ntb = (nb + p->tb - 1) / p->tb;
    p->nunits = total / (p->n[nd - 1] * p->n[p->t]) * p->nta * p->ntb;
  }
}

/* ---- transposed tiles: y[a*ysa + b] = x[a + b*xsb] ----
 * Power-of-two strides make a direct tiled transpose slow: the rows of a tile in x and in y
 * all fall into the same cache sets and DRAM banks, so half-used lines are evicted before their
 * other half is touched. Each tile is therefore transposed into an L1/L2-resident buffer (from
 * x rows read in full lines) and then written to y in whole rows (streaming stores when y is
 * large): every line of x and y is touched once, completely. The buffer fill uses AVX2 register
 * transposes (8x8 of 4 bytes, 4x4 of 8 bytes: shuffles move bits, so every dtype goes through
 * the float forms) with scalar edges; 128x128 four-byte tiles measured best (64x64 eight-byte,
 * the same 64 KB), and thin sides (NCHW->NHWC with 3 channels) get long tiles instead. */
#ifdef OPF_X86
#define CT_AVX2 __attribute__((target("avx2")))

CT_AVX2 static inline void ct_t8x8(uint32_t *y, const uint32_t *x, int64_t ysa, int64_t xsb) {
  __m256 r[8], t[8], s[8];
  for (int j = 0; j < 8; j++) r[j] = _mm256_loadu_ps((const float *)(x + j * xsb));
  for (int j = 0; j < 8; j += 2) {
    t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
    t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
  }
  for (int j = 0; j < 8; j += 4) {
    s[j] = _mm256_shuffle_ps(t[j], t[j + 2], 0x44);
    s[j + 1] = _mm256_shuffle_ps(t[j], t[j + 2], 0xee);
    s[j + 2] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0x44);
    s[j + 3] = _mm256_shuffle_ps(t[j + 1], t[j + 3], 0xee);
  }
  for (int i = 0; i < 4; i++) {
    _mm256_storeu_ps((float *)(y + i * ysa), _mm256_permute2f128_ps(s[i], s[i + 4], 0x20));
    _mm256_storeu_ps((float *)(y + (i + 4) * ysa), _mm256_permute2f128_ps(s[i], s[i + 4], 0x31));
  }
}

CT_AVX2 static inline void ct_t4x4(uint64_t *y, const uint64_t *x, int64_t ysa, int64_t xsb) {
  __m256d r[4], t[4];
  for (int j = 0; j < 4; j++) r[j] = _mm256_loadu_pd((const double *)(x + j * xsb));
  for (int j = 0; j < 4; j += 2) {
    t[j] = _mm256_unpacklo_pd(r[j], r[j + 1]);
    t[j + 1] = _mm256_unpackhi_pd(r[j], r[j + 1]);
  }
  for (int i = 0; i < 2; i++) {
    _mm256_storeu_pd((double *)(y + i * ysa), _mm256_permute2f128_pd(t[i], t[i + 2], 0x20));
    _mm256_storeu_pd((double *)(y + (i + 2) * ysa), _mm256_permute2f128_pd(t[i], t[i + 2], 0x31));
  }
}
#endif

#ifndef OPF_X86
#define opf_t4x4_u32_ct(y, x, ysa, xsb) opf_t4x4_u32(x, xsb, y, ysa)
#define opf_t2x2_u64_ct(y, x, ysa, xsb) opf_t2x2_u64(x, xsb, y, ysa)
#endif

/* One tile into buf (row length tb): K x K register blocks, scalar edges. MICRO(y, x, ysa, xsb)
 * does one block. */
#define CT_STRIP(NAME, T, K, ATTR, MICRO)                                                     \
  ATTR static void NAME(T *restrict buf, const T *restrict x, int64_t ta, int64_t tb,         \
                        int64_t xsb) {                                                        \
    int64_t b = 0;                                                                            \
    for (; b + K <= tb; b += K) {                                                             \
      int64_t a = 0;                                                                          \
      for (; a + K <= ta; a += K) MICRO(buf + a * tb + b, x + a + b * xsb, tb, xsb);          \
      for (; a < ta; a++)                                                                     \
        for (int64_t j = b; j < b + K; j++) buf[a * tb + j] = x[a + j * xsb];                 \
    }                                                                                         \
    for (; b < tb; b++)                                                                       \
      for (int64_t a = 0; a < ta; a++) buf[a * tb + b] = x[a + b * xsb];                      \
  }
#define CT_NO_MICRO(y, x, ysa, xsb) (void)0 /* K = 1: the edge loops do everything */
#ifdef OPF_X86
CT_STRIP(ct_tile32_avx2, uint32_t, 8, CT_AVX2, ct_t8x8)
CT_STRIP(ct_tile64_avx2, uint64_t, 4, CT_AVX2, ct_t4x4)
#else
/* arm64: 4x4 (4-byte) and 2x2 (8-byte) blocks in NEON registers, under the AVX2 names so the
 * dispatch below stays one line; y row i = x column i, as opf_t4x4_u32 does it. */
CT_STRIP(ct_tile32_avx2, uint32_t, 4, , opf_t4x4_u32_ct)
CT_STRIP(ct_tile64_avx2, uint64_t, 2, , opf_t2x2_u64_ct)
#endif
CT_STRIP(ct_tile32, uint32_t, 1, , CT_NO_MICRO)
CT_STRIP(ct_tile64, uint64_t, 1, , CT_NO_MICRO)

/* Thin tiles (2 to 4 b's, e.g. NCHW->NHWC with 3 channels) interleave that many planes: with
 * the count a constant, the compiler vectorises the interleave with shuffles. */
#define CT_PLANES(T, K)                                                                       \
  OPF_VEC static void ct_planes##K##_##T(T *restrict buf, const T *restrict x, int64_t ta,    \
                                         int64_t xsb) {                                       \
    for (int64_t a = 0; a < ta; a++)                                                          \
      for (int j = 0; j < K; j++) buf[a * K + j] = x[a + j * xsb];                            \
  }
#define CT_PLANES_T(T) CT_PLANES(T, 2) CT_PLANES(T, 3) CT_PLANES(T, 4)
CT_PLANES_T(uint32_t)
CT_PLANES_T(uint64_t)

#define CT_FILL_TILE(T, BITS)                                                                 \
  switch (tb) {                                                                               \
  case 2: ct_planes2_##T((T *)buf, (const T *)x, ta, p->xs[in]); break;                      \
  case 3: ct_planes3_##T((T *)buf, (const T *)x, ta, p->xs[in]); break;                      \
  case 4: ct_planes4_##T((T *)buf, (const T *)x, ta, p->xs[in]); break;                      \
  default:                                                                                    \
    (p->avx2 ? ct_tile##BITS##_avx2 : ct_tile##BITS)((T *)buf, (const T *)x, ta, tb, p->xs[in]); \
  }

/* Tile u of the plan: outer index, then a-tile, then b-tile (fastest: consecutive tiles share
 * their y rows' pages). */
static void ct_do_tile(const ct_plan *p, int64_t u) {
  _Alignas(64) unsigned char buf[CT_TILE_BYTES];
  const int in = p->nd - 1;
  const size_t es = p->es;
  int64_t per = p->nta * p->ntb, xo, yo;
  int64_t a0 = u % per / p->ntb * p->ta, b0 = u % p->ntb * p->tb;
  int64_t ta = p->n[p->t] - a0 < p->ta ? p->n[p->t] - a0 : p->ta;
  int64_t tb = p->n[in] - b0 < p->tb ? p->n[in] - b0 : p->tb;
  ct_offsets(p, u / per, 1u << p->t | 1u << in, &xo, &yo);
  const char *x = p->x + (size_t)(xo + a0 + b0 * p->xs[in]) * es;
  char *y = p->y + (size_t)(yo + a0 * p->ys[p->t] + b0) * es;
  if (es == 4) CT_FILL_TILE(uint32_t, 32)
  else CT_FILL_TILE(uint64_t, 64)
  /* When the tile spans whole y rows, it is one contiguous block of y. */
  int64_t rows = p->ys[p->t] == tb ? 1 : ta, len = p->ys[p->t] == tb ? ta * tb : tb;
  for (int64_t a = 0; a < rows; a++) {
    char *dst = y + (size_t)(a * p->ys[p->t]) * es;
    const unsigned char *src = buf + (size_t)(a * tb) * es;
    if (p->stream) cr_stream_copy(dst, src, (size_t)len * es);
    else memcpy(dst, src, (size_t)len * es);
  }
}

/* A strided row: y[i] = x[i*s] (other gathers), and the every-other-element case. */
#define CT_ROW(T)                                                                             \
  OPF_VEC static void ct_row_##T(T *restrict y, const T *restrict x, int64_t n, int64_t s) {  \
    for (int64_t i = 0; i < n; i++) y[i] = x[i * s];                                          \
  }                                                                                           \
  OPF_VEC static void ct_row2_##T(T *restrict y, const T *restrict x, int64_t n) {            \
    for (int64_t i = 0; i < n; i++) y[i] = x[2 * i]; /* constant stride: shuffles */          \
  }
CT_ROW(uint32_t)
CT_ROW(uint64_t)

static void ct_range(int64_t lo, int64_t hi, void *ctx) {
  const ct_plan *p = ctx;
  const int in = p->nd - 1;
  const size_t es = p->es;
  for (int64_t r = lo; r < hi; r++) {
    int64_t xo, yo;
    if (p->kind == CT_TILES) {
      ct_do_tile(p, r);
      continue;
    }
    ct_offsets(p, r, 1u << in, &xo, &yo);
    if (p->kind == CT_ROWS) memcpy(p->y + (size_t)yo * es, p->x + (size_t)xo * es, (size_t)p->n[in] * es);
    else if (es == 4 && p->xs[in] == 2) ct_row2_uint32_t((uint32_t *)p->y + yo, (const uint32_t *)p->x + xo, p->n[in]);
    else if (es == 8 && p->xs[in] == 2) ct_row2_uint64_t((uint64_t *)p->y + yo, (const uint64_t *)p->x + xo, p->n[in]);
    else if (es == 4) ct_row_uint32_t((uint32_t *)p->y + yo, (const uint32_t *)p->x + xo, p->n[in], p->xs[in]);
    else ct_row_uint64_t((uint64_t *)p->y + yo, (const uint64_t *)p->x + xo, p->n[in], p->xs[in]);
  }
}

static int ct_forward(opf_case *c) {
  if (!opf_numel(&c->out[0])) return OPF_OK; /* an empty view: nothing to copy */
  ct_plan p;
  ct_plan_make(&p, c);
  /* Units of work are rows or tiles: thread once there is enough data behind them. */
  int64_t per = opf_numel(&c->out[0]) / (p.nunits ? p.nunits : 1);
  opf_parallel_range(p.nunits, per ? OPF_PAR_MIN / per + 1 : OPF_PAR_MIN, ct_range, &p);
  return OPF_OK;
}

/* Reference: walk y in row-major order with a multi-index, reading x through the view. */
static int ct_reference(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  opf_tensor *y = &c->out[0];
  const size_t es = opf_dtype_size(c->dtype);
  int64_t idx[OPF_MAX_DIMS] = {0};
  for (int64_t k = 0; k < opf_numel(y); k++) {
    int64_t off = 0;
    for (int d = 0; d < y->ndim; d++) {
      int a = ct_axis(c, d);
      off += idx[d] * ct_step(c, a) * x->strides[a];
    }
    memcpy((char *)y->data + (size_t)k * es, (const char *)x->data + (size_t)off * es, es);
    for (int d = y->ndim - 1; d >= 0 && ++idx[d] == y->shape[d]; d--) idx[d] = 0;
  }
  return OPF_OK;
}

/* Models: no arithmetic; the view's elements read once and y written once (an every-other
 * column view touches the skipped elements' lines too: that is the view's cost, not work). */
static double ct_flops(const opf_case *c, opf_pass p) {
  (void)c, (void)p;
  return 0;
}
static double ct_bytes(const opf_case *c, opf_pass p) {
  return cr_fwd_only(p, 2 * cr_tbytes(&c->out[0]));
}

OPPERF_OP(contiguous) = {
    .abi = OPF_OP_ABI,
    .name = "contiguous",
    .category = "conversion",
    .summary = "contiguous copy of the view x[::step...] with axes permuted by perm "
               "(transposed, every-other-column, NCHW-as-NHWC views)",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .lo = -100, .hi = 100,
            .help = "the tensor the view looks into"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 2,
    .params = {{.name = "perm", .type = OPF_P_LIST, .defs = "none", .min = 0, .max = 7,
                .help = "y axis d is view axis perm[d] (none: identity)"},
               {.name = "step", .type = OPF_P_LIST, .defs = "none", .min = 1, .max = 1e12,
                .help = "sampling step per x axis (none: all 1)"}},
    .shapes = {{"standard", "x=1024x1024 perm=1,0"},
               {"standard", "x=1024x2048 step=1,2"},
               {"skewed", "x=10000x10 perm=1,0"},
               {"skewed", "x=10x10000 perm=1,0"},
               {"skewed", "x=32x64x56x56 perm=0,2,3,1"},
               {"skewed", "x=32x3x256x256 perm=0,2,3,1"},
               {"skewed", "x=2048x1024 step=2,1"},
               {"small", "x=16x16 perm=1,0"},
               {"small", "x=37x3 perm=1,0"},
               {"small", "x=1x64 perm=1,0"},
               {"small", "x=16x32 step=1,2"},
               {"small", "x=37x3 step=2,1"},
               {"small", "x=2x3x4 perm=2,0,1"},
               {"small", "x=2x3x4x5 perm=0,2,3,1 step=1,2,1,2"},
               {"small", "x=5x7"},
               {"test", "x=301x517 perm=1,0"},
               {"test", "x=33x65x17 perm=2,1,0 step=1,2,1"},
               {"test", "x=7x130x131 perm=0,2,1 step=1,1,3"},
               {"large", "x=8192x8192 perm=1,0"},
               {"large", "x=8192x16384 step=1,2"},
               {"huge", "x=46341x46341 perm=1,0"}},
    .infer = ct_infer,
    .forward = ct_forward,
    .reference = ct_reference,
    .flops = ct_flops,
    .bytes = ct_bytes,
};
