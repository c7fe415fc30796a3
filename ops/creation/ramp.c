/* ramp.c: index-valued creation: arange (start + k*step over the flat index k), linspace
 * (evenly spaced from start to stop) and eye (ones on diagonal k of an N x M matrix). Store-bound
 * like the fills: vectorised generators driven by create_common.h's threaded, streaming writer. */
#include "creation/create_common.h"

/* ---- arange / linspace: y[k] = start + k * step, computed in double (float32 too, so large
 * k stay exact) and rounded once; integers in int64 arithmetic ---- */
typedef struct {
  double start, step, stop;
  int64_t istart, istep;
  int64_t last; /* linspace: index that is set to stop exactly (-1: none) */
  opf_dtype dt;
} ramp_ctx;

/* The index enters as (double)lo + (double)i with an int32 i: both conversions are exact and
 * the int32 one vectorises at every ISA level (int64 -> double needs AVX-512DQ). Blocks from the
 * writer are far below 2^31 elements; the threaded direct path may pass larger ranges (huge
 * shapes), which ramp_gen splits. */
#define RAMP_FLOAT(T)                                                                         \
  OPF_VEC static void ramp_##T(T *restrict y, int32_t n, double base, double start,           \
                               double step) {                                                 \
    for (int32_t i = 0; i < n; i++) y[i] = (T)(start + (base + (double)i) * step);             \
  }
#define RAMP_INT(T)                                                                           \
  OPF_VEC static void ramp_##T(T *restrict y, int64_t n, int64_t k0, int64_t start,           \
                               int64_t step) {                                                \
    for (int64_t i = 0; i < n; i++) y[i] = (T)(start + (k0 + i) * step);                      \
  }
RAMP_FLOAT(float)
RAMP_FLOAT(double)
RAMP_INT(int32_t)
RAMP_INT(int64_t)

static void ramp_gen(const void *p, int64_t lo, int64_t hi, void *dst) {
  const ramp_ctx *g = p;
  const int64_t span = (int64_t)1 << 30;
  for (int64_t a = lo; a < hi; a += span) {
    int64_t n = hi - a < span ? hi - a : span;
    char *d = (char *)dst + (size_t)(a - lo) * opf_dtype_size(g->dt);
    switch (g->dt) {
    case OPF_F32: ramp_float((float *)d, (int32_t)n, (double)a, g->start, g->step); break;
    case OPF_F64: ramp_double((double *)d, (int32_t)n, (double)a, g->start, g->step); break;
    case OPF_I32: ramp_int32_t((int32_t *)d, n, a, g->istart, g->istep); break;
    default: ramp_int64_t((int64_t *)d, n, a, g->istart, g->istep); break;
    }
  }
  if (g->last >= lo && g->last < hi) cr_store(dst, g->dt, g->last - lo, g->stop);
}

static int ramp_ref(opf_case *c, const ramp_ctx *g) {
  for (int64_t k = 0; k < opf_numel(&c->out[0]); k++) {
    if (!opf_dtype_is_float(c->dtype)) cr_store(c->out[0].data, c->dtype, k, (double)(g->istart + k * g->istep));
    else cr_store(c->out[0].data, c->dtype, k, k == g->last ? g->stop : g->start + (double)k * g->step);
  }
  return OPF_OK;
}

/* params: shape, start, step */
static ramp_ctx arange_ctx(const opf_case *c) {
  return (ramp_ctx){.start = c->p[1], .step = c->p[2], .istart = (int64_t)c->p[1],
                    .istep = (int64_t)c->p[2], .last = -1, .dt = c->dtype};
}

/* params: shape, start, stop, endpoint (NumPy: step = (stop-start)/(n-1 or n), last = stop) */
static ramp_ctx linspace_ctx(const opf_case *c) {
  int64_t n = opf_numel(&c->out[0]);
  int64_t div = c->p[3] ? n - 1 : n;
  return (ramp_ctx){.start = c->p[1], .stop = c->p[2],
                    .step = div > 0 ? (c->p[2] - c->p[1]) / (double)div : 0,
                    .last = c->p[3] && n > 1 ? n - 1 : -1, .dt = c->dtype};
}

static int arange_infer(opf_case *c) {
  int rc = cr_shape_out(c, 0, c->dtype);
  if (rc) return rc;
  int64_t n = opf_numel(&c->out[0]);
  if ((rc = cr_check_int(c, c->dtype, "start", c->p[1])) ||
      (rc = cr_check_int(c, c->dtype, "step", c->p[2])))
    return rc;
  /* The last value must fit the dtype too (checked in double: exact enough for the bound). */
  return n > 0 ? cr_check_int(c, c->dtype, "last value start+(n-1)*step",
                              c->p[1] + (double)(n - 1) * c->p[2])
               : OPF_OK;
}

static int linspace_infer(opf_case *c) { return cr_shape_out(c, 0, c->dtype); }

static int arange_forward(opf_case *c) {
  ramp_ctx g = arange_ctx(c);
  cr_write(&c->out[0], ramp_gen, &g, OPF_PAR_MIN, cr_large(&c->out[0]));
  return OPF_OK;
}
static int arange_reference(opf_case *c) {
  ramp_ctx g = arange_ctx(c);
  return ramp_ref(c, &g);
}
static int linspace_forward(opf_case *c) {
  ramp_ctx g = linspace_ctx(c);
  cr_write(&c->out[0], ramp_gen, &g, OPF_PAR_MIN, cr_large(&c->out[0]));
  return OPF_OK;
}
static int linspace_reference(opf_case *c) {
  ramp_ctx g = linspace_ctx(c);
  return ramp_ref(c, &g);
}

/* ---- eye: zero the range, then set the diagonal elements that fall in it (after the streaming
 * stores are fenced: one line in M*es/64 is then read back, a small price for wide matrices).
 * Diagonal element of row r sits at flat index r*(M+1) + k, so the walk steps by M+1. ---- */
typedef struct {
  cr_filler zero;
  int64_t M, k;
  uint64_t one; /* the bit pattern of 1 in the dtype */
} eye_ctx;

static void eye_range(int64_t lo, int64_t hi, void *p) {
  const eye_ctx *g = p;
  if (hi <= lo) return;
  cr_fill_range(lo, hi, (void *)&g->zero); /* streamed (and fenced) when large */
  int64_t r = lo / g->M, idx = r * (g->M + 1) + g->k;
  if (g->k < 0) { /* rows before -k have no diagonal element */
    int64_t r0 = -g->k > r ? -g->k : r;
    idx += (r0 - r) * (g->M + 1), r = r0;
  }
  for (; idx < hi && r + g->k < g->M; r++, idx += g->M + 1) {
    if (idx < lo) continue;
    if (g->zero.es == 4) ((uint32_t *)g->zero.out)[idx] = (uint32_t)g->one;
    else ((uint64_t *)g->zero.out)[idx] = g->one;
  }
}

/* params: N, M (-1: N), k */
static int eye_infer(opf_case *c) {
  int64_t shape[2] = {(int64_t)c->p[0], c->p[1] < 0 ? (int64_t)c->p[0] : (int64_t)c->p[1]};
  opf_set_out(c, 0, c->dtype, 2, shape);
  return OPF_OK;
}

static int eye_forward(opf_case *c) {
  eye_ctx g = {{c->out[0].data, opf_dtype_size(c->dtype), 0, cr_large(&c->out[0])},
               c->out[0].shape[1], (int64_t)c->p[2], 0};
  cr_store(&g.one, c->dtype, 0, 1.0); /* low bytes on little-endian x86 */
  opf_parallel_range(opf_numel(&c->out[0]), OPF_PAR_MIN, eye_range, &g);
  return OPF_OK;
}

static int eye_reference(opf_case *c) {
  int64_t N = c->out[0].shape[0], M = c->out[0].shape[1], k = (int64_t)c->p[2];
  for (int64_t i = 0; i < N; i++)
    for (int64_t j = 0; j < M; j++) cr_store(c->out[0].data, c->dtype, i * M + j, j - i == k);
  return OPF_OK;
}

/* Models: arange and linspace one multiply-add (2 flops) per element, eye none; the output
 * written once. */
static double ramp_flops(const opf_case *c, opf_pass p) {
  return cr_fwd_only(p, 2.0 * (double)opf_numel(&c->out[0]));
}
static double eye_flops(const opf_case *c, opf_pass p) {
  (void)c, (void)p;
  return 0;
}
static double ramp_bytes(const opf_case *c, opf_pass p) {
  return cr_fwd_only(p, cr_tbytes(&c->out[0]));
}

#define RAMP_COMMON                                                                           \
  .abi = OPF_OP_ABI, .category = "creation", .n_out = 1, .out = {"y"}, .bytes = ramp_bytes

OPPERF_OP(arange) = {
    RAMP_COMMON,
    .name = "arange",
    .summary = "y[k] = start + k*step over the flat index k of the output shape",
    .dtypes = OPF_DT_ALL,
    .n_params = 3,
    .params = {CR_SHAPE_PARAM,
               {.name = "start", .type = OPF_P_FLOAT, .def = 0, .min = -1e300, .max = 1e300,
                .help = "first value (integer dtypes: an integer)"},
               {.name = "step", .type = OPF_P_FLOAT, .def = 1, .min = -1e300, .max = 1e300,
                .help = "increment (integer dtypes: an integer)"}},
    .shapes = CR_SHAPE_SETS_H("shape=46341x46341 start=-1073741824"),
    .infer = arange_infer,
    .forward = arange_forward,
    .reference = arange_reference,
    .flops = ramp_flops,
};

OPPERF_OP(linspace) = {
    RAMP_COMMON,
    .name = "linspace",
    .summary = "numel(shape) evenly spaced values from start to stop (stop included when "
               "endpoint), in flat order",
    .dtypes = OPF_DT_FLOAT,
    .n_params = 4,
    .params = {CR_SHAPE_PARAM,
               {.name = "start", .type = OPF_P_FLOAT, .def = 0, .min = -1e300, .max = 1e300,
                .help = "first value"},
               {.name = "stop", .type = OPF_P_FLOAT, .def = 1, .min = -1e300, .max = 1e300,
                .help = "last value (endpoint) or the bound after it"},
               {.name = "endpoint", .type = OPF_P_BOOL, .def = 1, .min = 0, .max = 1,
                .help = "include stop as the last value"}},
    .shapes = CR_SHAPE_SETS,
    .infer = linspace_infer,
    .forward = linspace_forward,
    .reference = linspace_reference,
    .flops = ramp_flops,
};

OPPERF_OP(eye) = {
    RAMP_COMMON,
    .name = "eye",
    .summary = "N x M matrix with ones on diagonal k (k > 0 above the main one), zeros elsewhere",
    .dtypes = OPF_DT_ALL,
    .n_params = 3,
    .params = {{.name = "N", .type = OPF_P_INT, .def = 1024, .min = 0, .max = 1e9, .help = "rows"},
               {.name = "M", .type = OPF_P_INT, .def = -1, .min = -1, .max = 1e9,
                .help = "columns (-1: N)"},
               {.name = "k", .type = OPF_P_INT, .def = 0, .min = -1e9, .max = 1e9,
                .help = "diagonal offset: column - row"}},
    .shapes = {{"standard", "N=1024"},
               {"skewed", "N=10000 M=10"},
               {"skewed", "N=10 M=10000"},
               {"skewed", "N=100000 M=10 k=-5"},
               {"small", "N=16"},
               {"small", "N=1 M=64"},
               {"small", "N=37 M=3 k=-2"},
               {"small", "N=5 M=7 k=9"},
               {"test", "N=301 M=517 k=3"},
               {"large", "N=8192"},
               {"huge", "N=46341"}},
    .infer = eye_infer,
    .forward = eye_forward,
    .reference = eye_reference,
    .flops = eye_flops,
};
