/* scan.c: cumsum and cumprod along an axis (or over the flattened input, keeping its shape),
 * and their backwards: cumsum's is the reverse cumulative sum of dy; cumprod's is
 * revcumsum(dy * y) / x, with lines that hold a zero fixed up exactly. Kernels in scan_drv.h;
 * rows go to threads whole, a few long rows are cut into segments scanned in two passes. */
#include "reduction/reduce.h"

enum { SCAN_SUM, SCAN_PROD, SCAN_RSUM, SCAN_RSUMW, SCAN_RSUMWD };

#define ST float
#define SVL 16
#define SSUF f32
#include "reduction/scan_drv.h"
#define ST double
#define SVL 8
#define SSUF f64
#include "reduction/scan_drv.h"
#define ST uint32_t
#define SVL 16
#define SSUF u32
#include "reduction/scan_drv.h"
#define ST uint64_t
#define SVL 8
#define SSUF u64
#include "reduction/scan_drv.h"

/* A row is cut into segments when there are fewer rows than this many tasks want... */
#define SCAN_MIN_ROWS 8
/* ...and into segments of at least this many elements (at most SCAN_MAX_SEG of them). */
#define SCAN_SEG_MIN 16384
#define SCAN_MAX_SEG 16
/* Rows on the inner axis shorter than this are scanned many at a time (scan_seg). */
#define SCAN_SHORT_ROW 64
/* Column block of outer-axis scans (the running row stays in L1). */
#define SCAN_CB 512

typedef struct scan_run {
  opf_case *c;
  opf_rgeom g;
  int mode, mul, rev;
  const void *a, *w, *d; /* scanned input, weights, divisor (NULL when unused) */
  void *y;
  int64_t S, seg, ncb;   /* segments per row and their length; column blocks */
  double *tot;           /* segment totals (as double: exact for every dtype's carry bits) */
} scan_run;

static size_t scan_es(const scan_run *s) { return opf_dtype_size(s->c->dtype); }
#define SCAN_PTR(p, off) ((p) ? (const char *)(p) + (size_t)(off) * scan_es(s) : NULL)

/* Scan row part [k0, k0 + len) of row o with carry identity; returns its total. */
static uint64_t scan_row_part(const scan_run *s, int mode, int64_t o, int64_t k0, int64_t len) {
  const int64_t off = o * s->g.n + k0;
  const void *a = SCAN_PTR(s->a, off), *w = SCAN_PTR(s->w, off), *d = SCAN_PTR(s->d, off);
  void *y = (char *)s->y + (size_t)off * scan_es(s);
  switch (s->c->dtype) {
  case OPF_F32: {
    float t = scan_row_f32(mode, a, w, d, y, len, s->mul ? 1.f : 0.f);
    uint64_t b = 0;
    memcpy(&b, &t, sizeof t);
    return b;
  }
  case OPF_F64: {
    double t = scan_row_f64(mode, a, w, d, y, len, s->mul ? 1. : 0.);
    uint64_t b;
    memcpy(&b, &t, sizeof t);
    return b;
  }
  case OPF_I32: return scan_row_u32(mode, a, w, d, y, len, s->mul ? 1u : 0u);
  default: return scan_row_u64(mode, a, w, d, y, len, s->mul ? 1u : 0u);
  }
}

/* Rows [lo, hi), short: one segmented flat scan (scan_seg in scan_drv.h). */
static void scan_short_rows_range(int64_t lo, int64_t hi, void *p) {
  const scan_run *s = p;
  const int64_t off = lo * s->g.n;
  const void *a = SCAN_PTR(s->a, off), *w = SCAN_PTR(s->w, off), *d = SCAN_PTR(s->d, off);
  void *y = (char *)s->y + (size_t)off * scan_es(s);
  switch (s->c->dtype) {
  case OPF_F32: scan_seg_f32(s->mode, a, w, d, y, s->g.n, hi - lo); break;
  case OPF_F64: scan_seg_f64(s->mode, a, w, d, y, s->g.n, hi - lo); break;
  case OPF_I32: scan_seg_u32(s->mode, a, w, d, y, s->g.n, hi - lo); break;
  default: scan_seg_u64(s->mode, a, w, d, y, s->g.n, hi - lo); break;
  }
}

static void scan_rows_range(int64_t lo, int64_t hi, void *p) {
  const scan_run *s = p;
  for (int64_t o = lo; o < hi; o++) scan_row_part(s, s->mode, o, 0, s->g.n);
}

/* Column task t = (outer index, column block). */
static void scan_cols_task(const scan_run *s, int64_t t) {
  const int64_t o = t / s->ncb, j0 = (t % s->ncb) * SCAN_CB, inner = s->g.inner;
  const int64_t wd = inner - j0 < SCAN_CB ? inner - j0 : SCAN_CB, off = o * s->g.n * inner + j0;
  const void *a = SCAN_PTR(s->a, off), *w = SCAN_PTR(s->w, off), *d = SCAN_PTR(s->d, off);
  void *y = (char *)s->y + (size_t)off * scan_es(s);
  _Alignas(64) char acc[SCAN_CB * 8];
  switch (s->c->dtype) {
  case OPF_F32: scan_cols_f32(s->mode, a, w, d, y, s->g.n, inner, wd, (float *)acc); break;
  case OPF_F64: scan_cols_f64(s->mode, a, w, d, y, s->g.n, inner, wd, (double *)acc); break;
  case OPF_I32: scan_cols_u32(s->mode, a, w, d, y, s->g.n, inner, wd, (uint32_t *)acc); break;
  default: scan_cols_u64(s->mode, a, w, d, y, s->g.n, inner, wd, (uint64_t *)acc); break;
  }
}

/* Segmented rows, pass 2: segment q of row o gets the combined total of the segments before
 * it in scan order (after it for reverse scans), and the division when there is one. */
static void scan_offset_task(const scan_run *s, int64_t t) {
  const int64_t o = t / s->S, q = t % s->S, k0 = q * s->seg;
  const int64_t len = s->g.n - k0 < s->seg ? s->g.n - k0 : s->seg, off = o * s->g.n + k0;
  uint64_t acc = 0;
  int first = 1;
  for (int64_t u = 0; u < s->S; u++) {
    if (s->rev ? u <= q : u >= q) continue;
    uint64_t b;
    memcpy(&b, &s->tot[o * s->S + u], sizeof b);
    if (first) acc = b, first = 0;
    else {
      switch (s->c->dtype) {
      case OPF_F32: {
        float x, y;
        memcpy(&x, &acc, sizeof x), memcpy(&y, &b, sizeof y);
        x = s->mul ? x * y : x + y;
        memcpy(&acc, &x, sizeof x);
        break;
      }
      case OPF_F64: {
        double x, y;
        memcpy(&x, &acc, sizeof x), memcpy(&y, &b, sizeof y);
        x = s->mul ? x * y : x + y;
        memcpy(&acc, &x, sizeof x);
        break;
      }
      case OPF_I32:
        acc = s->mul ? (uint32_t)((uint32_t)acc * (uint32_t)b) : (uint32_t)((uint32_t)acc + (uint32_t)b);
        break;
      default: acc = s->mul ? acc * b : acc + b; break;
      }
    }
  }
  if (first && !s->d) return; /* the first segment in scan order: nothing to add */
  /* first with a divisor: acc is 0, the bit pattern of +0 too */
  const void *d = SCAN_PTR(s->d, off);
  void *y = (char *)s->y + (size_t)off * scan_es(s);
  switch (s->c->dtype) {
  case OPF_F32: {
    float v;
    memcpy(&v, &acc, sizeof v);
    scan_offset_f32(s->mul, v, d, y, len);
    break;
  }
  case OPF_F64: {
    double v;
    memcpy(&v, &acc, sizeof v);
    scan_offset_f64(s->mul, v, d, y, len);
    break;
  }
  case OPF_I32: scan_offset_u32(s->mul, (uint32_t)acc, d, y, len); break;
  default: scan_offset_u64(s->mul, acc, d, y, len); break;
  }
}

static void scan_plan(scan_run *s, opf_case *c) {
  const int all = c->p[0] == OPF_AXIS_ALL;
  s->c = c;
  s->g = opf_red_geom(&c->in[0], all ? 0 : opf_axis(c->p[0], c->in[0].ndim), all);
  s->S = 1, s->seg = s->g.n, s->ncb = (s->g.inner + SCAN_CB - 1) / SCAN_CB;
  if (s->g.inner == 1 && s->g.outer < SCAN_MIN_ROWS && s->g.n >= 2 * SCAN_SEG_MIN) {
    s->S = s->g.n / SCAN_SEG_MIN < SCAN_MAX_SEG ? s->g.n / SCAN_SEG_MIN : SCAN_MAX_SEG;
    s->seg = (s->g.n + s->S - 1) / s->S;
    s->S = (s->g.n + s->seg - 1) / s->seg;
  }
}

/* Run the scan of s (mode, inputs and output set) over the whole tensor. */
static void scan_copy_range(int64_t lo, int64_t hi, void *p) {
  const scan_run *s = p;
  const size_t es = scan_es(s);
  memcpy((char *)s->y + (size_t)lo * es, (const char *)s->a + (size_t)lo * es, (size_t)(hi - lo) * es);
}

static void scan_run_all(scan_run *s) {
  const int64_t numel = s->g.outer * s->g.n * s->g.inner;
  const int par = numel > OPF_PAR_MIN && omp_get_max_threads() > 1;
  if (numel == 0) return;
  if (s->g.n == 1) {
    /* Lines of one element (10000x1 axis=1): every scan here is the identity, y = a (cumsum,
     * cumprod, and both backwards: dy * y / x = dy): a copy instead of a line walk per element
     * (50 us -> about 1 us at 10000x1). */
    opf_parallel_range(numel, OPF_PAR_MIN, scan_copy_range, s);
    return;
  }
  if (s->g.inner > 1) {
    const int64_t nt = s->g.outer * s->ncb;
#pragma omp parallel for schedule(static) if (par && nt > 1)
    for (int64_t t = 0; t < nt; t++) scan_cols_task(s, t);
  } else if (s->S == 1 && s->g.n < SCAN_SHORT_ROW) {
    opf_parallel_range(s->g.outer, (OPF_PAR_MIN + s->g.n - 1) / s->g.n, scan_short_rows_range, s);
  } else if (s->S == 1) {
    opf_parallel_range(s->g.outer, (OPF_PAR_MIN + s->g.n - 1) / s->g.n, scan_rows_range, s);
  } else {
    /* pass 1 scans each segment from the identity (weighted, undivided); pass 2 offsets */
    const int64_t nt = s->g.outer * s->S;
    const int mode1 = s->mode == SCAN_RSUMWD ? SCAN_RSUMW : s->mode;
#pragma omp parallel for schedule(static) if (par)
    for (int64_t t = 0; t < nt; t++) {
      const int64_t o = t / s->S, k0 = (t % s->S) * s->seg;
      const int64_t len = s->g.n - k0 < s->seg ? s->g.n - k0 : s->seg;
      const uint64_t b = scan_row_part(s, mode1, o, k0, len);
      memcpy(&s->tot[t], &b, sizeof b);
    }
#pragma omp parallel for schedule(static) if (par)
    for (int64_t t = 0; t < nt; t++) scan_offset_task(s, t);
  }
}

static int cumsum_forward(opf_case *c) {
  scan_run s = {.mode = SCAN_SUM, .a = c->in[0].data, .y = c->out[0].data, .tot = c->ws};
  scan_plan(&s, c);
  scan_run_all(&s);
  return OPF_OK;
}

static int cumprod_forward(opf_case *c) {
  scan_run s = {.mode = SCAN_PROD, .mul = 1, .a = c->in[0].data, .y = c->out[0].data,
                .tot = c->ws};
  scan_plan(&s, c);
  scan_run_all(&s);
  return OPF_OK;
}

static int cumsum_backward(opf_case *c) {
  if (!c->gin[0].data) return OPF_OK;
  scan_run s = {.mode = SCAN_RSUM, .rev = 1, .a = c->gout[0].data, .y = c->gin[0].data,
                .tot = c->ws};
  scan_plan(&s, c);
  scan_run_all(&s);
  return OPF_OK;
}

/* cumprod backward on a line holding a zero (its last y is 0): with z the first zero, the
 * elements before z keep revcumsum(dy * y) / x (the terms from z on are 0), x[z] gets
 * sum_{k >= z} dy[k] * y[z-1] * prod_{z < j <= k} x[j], and everything after z gets 0. */
static void cumprod_fix_line(opf_case *c, const opf_rgeom *g, int64_t o, int64_t j) {
  const opf_tensor *x = &c->in[0], *dy = &c->gout[0], *y = &c->out[0];
  opf_tensor *dx = &c->gin[0];
  const int f32 = c->dtype == OPF_F32;
#define AT(t, k) (f32 ? (double)((const float *)(t)->data)[(o * g->n + (k)) * g->inner + j] \
                      : ((const double *)(t)->data)[(o * g->n + (k)) * g->inner + j])
#define SET(k, v)                                                                             \
  (f32 ? (void)(((float *)dx->data)[(o * g->n + (k)) * g->inner + j] = (float)(v))           \
       : (void)(((double *)dx->data)[(o * g->n + (k)) * g->inner + j] = (v)))
  int64_t z = 0;
  while (z < g->n && AT(x, z) != 0) z++;
  if (z == g->n) return; /* underflow, no zero: the map's values stand */
  double run = z > 0 ? AT(y, z - 1) : 1, sum = 0;
  for (int64_t k = z; k < g->n; k++) {
    if (k > z) run *= AT(x, k);
    sum += AT(dy, k) * run;
    if (k > z) SET(k, 0);
  }
  SET(z, sum);
#undef AT
#undef SET
}

static int cumprod_backward(opf_case *c) {
  if (!c->gin[0].data) return OPF_OK;
  scan_run s = {.mode = SCAN_RSUMWD, .rev = 1, .a = c->gout[0].data, .w = c->out[0].data,
                .d = c->in[0].data, .y = c->gin[0].data, .tot = c->ws};
  scan_plan(&s, c);
  scan_run_all(&s);
  const opf_rgeom *g = &s.g;
  const int64_t nl = g->outer * g->inner;
  if (g->n <= 1) return OPF_OK; /* one-element lines: dx = dy exactly, zeros included */
#pragma omp parallel for schedule(static) if (nl * g->n > OPF_PAR_MIN)
  for (int64_t e = 0; e < nl; e++) {
    const int64_t o = e / g->inner, j = e - o * g->inner, last = (o * g->n + g->n - 1) * g->inner + j;
    const double yl = c->dtype == OPF_F32 ? ((const float *)c->out[0].data)[last]
                                          : ((const double *)c->out[0].data)[last];
    if (yl == 0) cumprod_fix_line(c, g, o, j);
  }
  return OPF_OK;
}

static int scan_infer(opf_case *c) {
  if (c->in[0].ndim < 0) return OPF_OK;
  int axis, all;
  int rc = opf_red_axis(c, c->p[0], 1, &axis, &all);
  if (rc) return rc;
  opf_set_out(c, 0, c->dtype, c->in[0].ndim, c->in[0].shape);
  scan_run s;
  scan_plan(&s, c);
  c->ws_bytes = (size_t)(s.g.outer * s.S) * sizeof(double);
  return OPF_OK;
}

/* Reference: each line in order, floats in double, integers in uint64 (wrapping, cast). */
static int scan_reference(opf_case *c, int mul) {
  const int all = c->p[0] == OPF_AXIS_ALL;
  const opf_rgeom g = opf_red_geom(&c->in[0], all ? 0 : opf_axis(c->p[0], c->in[0].ndim), all);
  const opf_dtype dt = c->dtype;
  const void *xv = c->in[0].data;
  void *yv = c->out[0].data;
  for (int64_t o = 0; o < g.outer; o++)
    for (int64_t j = 0; j < g.inner; j++) {
      double f = mul ? 1 : 0;
      uint64_t u = mul ? 1 : 0;
      for (int64_t k = 0; k < g.n; k++) {
        const int64_t i = (o * g.n + k) * g.inner + j;
        switch (dt) {
        case OPF_F32:
          f = mul ? f * ((const float *)xv)[i] : f + ((const float *)xv)[i];
          ((float *)yv)[i] = (float)f;
          break;
        case OPF_F64:
          f = mul ? f * ((const double *)xv)[i] : f + ((const double *)xv)[i];
          ((double *)yv)[i] = f;
          break;
        case OPF_I32: {
          const uint64_t v = (uint64_t)(int64_t)((const int32_t *)xv)[i];
          u = mul ? u * v : u + v;
          ((int32_t *)yv)[i] = (int32_t)(uint32_t)u;
          break;
        }
        default: {
          const uint64_t v = (uint64_t)((const int64_t *)xv)[i];
          u = mul ? u * v : u + v;
          ((int64_t *)yv)[i] = (int64_t)u;
          break;
        }
        }
      }
    }
  return OPF_OK;
}

static int cumsum_reference(opf_case *c) { return scan_reference(c, 0); }
static int cumprod_reference(opf_case *c) { return scan_reference(c, 1); }

/* Models: one add (cumsum) or mul (cumprod) per element forward; backward cumsum one add per
 * element (read dy, write dx), cumprod mul, add and divide = 3 (read dy, y and x, write dx). */
static double scan_numel(const opf_case *c) { return (double)opf_numel(&c->in[0]); }
static double cumsum_flops(const opf_case *c, opf_pass p) {
  return opf_pass_sum(p, scan_numel(c), scan_numel(c));
}
static double cumprod_flops(const opf_case *c, opf_pass p) {
  return opf_pass_sum(p, scan_numel(c), 3 * scan_numel(c));
}
static double scan_bytes(const opf_case *c, opf_pass p, int bwd_arrays) {
  const double b = scan_numel(c) * (double)opf_dtype_size(c->dtype);
  return opf_pass_sum(p, 2 * b, bwd_arrays * b);
}
static double cumsum_bytes(const opf_case *c, opf_pass p) { return scan_bytes(c, p, 2); }
static double cumprod_bytes(const opf_case *c, opf_pass p) { return scan_bytes(c, p, 4); }

static int fill_near_one_scan(opf_case *c, int i, opf_rng *r) {
  (void)r;
  opf_red_fill_near_one(c, i);
  return OPF_OK;
}

#define SCAN_PARAMS                                                                           \
  .n_params = 1,                                                                              \
  .params = {{.name = "axis", .type = OPF_P_AXIS, .def = OPF_AXIS_ALL, .min = -8, .max = 7,    \
              .help = "axis to scan, or 'all' (the default, as in NumPy): the flattened input, "\
                      "output keeping the input's shape"}}

#define SCAN_SHAPES                                                                           \
  .shapes = {{"standard", "x=1024x1024 axis=0"},  {"standard", "x=1024x1024 axis=1"},         \
             {"standard", "x=1024x1024 axis=all"}, {"skewed", "x=10000x10 axis=0"},            \
             {"skewed", "x=10000x10 axis=1"},      {"skewed", "x=10x10000 axis=0"},            \
             {"skewed", "x=10x10000 axis=1"},      {"skewed", "x=10000x1 axis=0"},             \
             {"skewed", "x=10000x1 axis=1"},       {"skewed", "x=100000x10 axis=0"},           \
             {"skewed", "x=100000x10 axis=1"},     {"small", "x=16x16 axis=0"},                \
             {"small", "x=16x16 axis=1"},          {"small", "x=1x64 axis=-1"},                \
             {"small", "x=40x3 axis=0"},           {"small", "x=4x5x6 axis=1"},                \
             {"small", "x=4x5x6 axis=all"},        {"small", "x=16x1 axis=1"},                 \
             {"small", "x=1x64 axis=0"},           {"test", "x=70001x1 axis=1"},               \
             {"test", "x=301x517 axis=0"},                                                      \
             {"test", "x=301x517 axis=1"},         {"test", "x=301x517 axis=all"},             \
             {"test", "x=3x1000x7 axis=1"},        {"test", "x=2x70001 axis=1"},               \
             {"large", "x=8192x8192 axis=0"},      {"large", "x=8192x8192 axis=1"}}

OPPERF_OP(cumsum) = {
    .abi = OPF_OP_ABI,
    .name = "cumsum",
    .category = "reduction",
    .summary = "cumulative sum along an axis (integers wrap); output has the input's shape",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -4, .hi = 4}},
    .n_out = 1,
    .out = {"y"},
    SCAN_PARAMS,
    SCAN_SHAPES,
    .infer = scan_infer,
    .forward = cumsum_forward,
    .backward = cumsum_backward,
    .reference = cumsum_reference,
    .flops = cumsum_flops,
    .bytes = cumsum_bytes,
};

OPPERF_OP(cumprod) = {
    .abi = OPF_OP_ABI,
    .name = "cumprod",
    .category = "reduction",
    .summary = "cumulative product along an axis (inputs near 1; gradient exact with zeros)",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .fill = fill_near_one_scan,
            .help = "floats in [0.99, 1.01), integers odd in [-3, 3]"}},
    .n_out = 1,
    .out = {"y"},
    SCAN_PARAMS,
    SCAN_SHAPES,
    .infer = scan_infer,
    .forward = cumprod_forward,
    .backward = cumprod_backward,
    .reference = cumprod_reference,
    .flops = cumprod_flops,
    .bytes = cumprod_bytes,
};
