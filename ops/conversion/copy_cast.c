/* copy_cast.c: copy (y = x, same dtype) and cast (y = x converted to dtype `to`). Memory-bound
 * streams through create_common.h's threaded writer: cached stores while the output fits the
 * L3, streaming stores beyond it; every source/destination pair is its own vectorised loop. */
#include "creation/create_common.h"

typedef struct {
  const char *x;
  opf_dtype from, to;
} cc_ctx;

/* One loop per (source, destination) pair; C conversions (floats to integers truncate toward
 * zero, like NumPy's astype; out-of-range values are the caller's business: the generated
 * inputs are in [-1000, 1000)). */
#define CC_FN(S, D)                                                                           \
  OPF_VEC static void cc_##S##_##D(const S *restrict x, D *restrict y, int64_t n) {           \
    for (int64_t i = 0; i < n; i++) y[i] = (D)x[i];                                           \
  }
#define CC_FROM(S) CC_FN(S, float) CC_FN(S, double) CC_FN(S, int32_t) CC_FN(S, int64_t)
CC_FROM(float)
CC_FROM(double)
CC_FROM(int32_t)
CC_FROM(int64_t)

#define CC_TO(S, xs, y, n, to)                                                                \
  switch (to) {                                                                               \
  case OPF_F32: cc_##S##_float(xs, y, n); break;                                              \
  case OPF_F64: cc_##S##_double(xs, y, n); break;                                             \
  case OPF_I32: cc_##S##_int32_t(xs, y, n); break;                                            \
  default: cc_##S##_int64_t(xs, y, n); break;                                                 \
  }

static void cc_gen(const void *p, int64_t lo, int64_t hi, void *dst) {
  const cc_ctx *g = p;
  const char *x = g->x + (size_t)lo * opf_dtype_size(g->from);
  int64_t n = hi - lo;
  switch (g->from) {
  case OPF_F32: CC_TO(float, (const float *)x, dst, n, g->to); break;
  case OPF_F64: CC_TO(double, (const double *)x, dst, n, g->to); break;
  case OPF_I32: CC_TO(int32_t, (const int32_t *)x, dst, n, g->to); break;
  default: CC_TO(int64_t, (const int64_t *)x, dst, n, g->to); break;
  }
}

/* The output dtype: the case dtype for copy, param 0 (`to`, in opf_dtype order) for cast. */
static opf_dtype cc_to(const opf_case *c) {
  return strcmp(c->op->name, "cast") ? c->dtype : (opf_dtype)c->p[0];
}

static int cc_infer(opf_case *c) {
  int rc = cr_need_input(c, 0);
  if (rc) return rc;
  opf_set_out(c, 0, cc_to(c), c->in[0].ndim, c->in[0].shape);
  return OPF_OK;
}

static int cc_forward(opf_case *c) {
  if (c->dtype == c->out[0].dtype) {
    cr_copy(&c->out[0], &c->in[0]);
    return OPF_OK;
  }
  cc_ctx g = {c->in[0].data, c->dtype, c->out[0].dtype};
  /* conversions stream through the L1 block: their compute hides the phase alternation that
   * makes a plain copy faster with direct streaming (cr_copy) */
  cr_write(&c->out[0], cc_gen, &g, OPF_PAR_MIN, cr_large(&c->out[0]));
  return OPF_OK;
}

/* Reference: element by element through double, except int64 sources (exact above 2^53) which
 * go straight to the destination type. */
static int cc_reference(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  opf_tensor *y = &c->out[0];
  for (int64_t i = 0; i < opf_numel(x); i++) {
    if (x->dtype == OPF_I64 && y->dtype == OPF_I64) ((int64_t *)y->data)[i] = ((const int64_t *)x->data)[i];
    else if (x->dtype == OPF_I64 && y->dtype == OPF_F32) ((float *)y->data)[i] = (float)((const int64_t *)x->data)[i];
    else if (x->dtype == OPF_I64) cr_store(y->data, y->dtype, i, (double)((const int64_t *)x->data)[i]);
    else if (x->dtype == OPF_I32) cr_store(y->data, y->dtype, i, ((const int32_t *)x->data)[i]);
    else if (x->dtype == OPF_F32) cr_store(y->data, y->dtype, i, ((const float *)x->data)[i]);
    else cr_store(y->data, y->dtype, i, ((const double *)x->data)[i]);
  }
  return OPF_OK;
}

/* Models: copy moves bytes (no flops); cast is one conversion per element. Traffic: x read
 * and y written once each. */
static double cc_flops(const opf_case *c, opf_pass p) {
  return cr_fwd_only(p, strcmp(c->op->name, "cast") ? 0 : (double)opf_numel(&c->in[0]));
}
static double cc_bytes(const opf_case *c, opf_pass p) {
  return cr_fwd_only(p, cr_tbytes(&c->in[0]) + cr_tbytes(&c->out[0]));
}

#define CC_COMMON                                                                             \
  .abi = OPF_OP_ABI, .category = "conversion", .dtypes = OPF_DT_ALL, .n_in = 1,              \
  .in = {{.name = "x", .dtype = OPF_DT_CASE, .lo = -1000, .hi = 1000, .help = "source tensor"}}, \
  .n_out = 1, .out = {"y"}, .infer = cc_infer, .forward = cc_forward,                         \
  .reference = cc_reference, .flops = cc_flops, .bytes = cc_bytes

OPPERF_OP(copy) = {
    CC_COMMON,
    .name = "copy",
    .summary = "y = x: a new tensor with x's contents (memcpy bandwidth)",
    .shapes = CR_X_SETS,
};

/* The sets convert the case dtype to each destination: with the default float32 that is
 * f32->f64, f32->i32 and f32->f32 (a copy); --dtype float64 / int64 give f64->f32, i64->f32. */
OPPERF_OP(cast) = {
    CC_COMMON,
    .name = "cast",
    .summary = "y = x converted to dtype `to` (floats to integers truncate toward zero)",
    .n_params = 1,
    .params = {{.name = "to", .type = OPF_P_ENUM, .def = 1, .choices = "float32|float64|int32|int64",
                .help = "destination dtype (the case dtype is the source)"}},
    .shapes = {{"standard", "x=1024x1024 to=float64"},
               {"standard", "x=1024x1024 to=float32"},
               {"standard", "x=1024x1024 to=int32"},
               {"skewed", "x=10000x10 to=float64"},
               {"skewed", "x=10x10000 to=int32"},
               {"skewed", "x=100000x10 to=float32"},
               {"small", "x=16x16 to=float64"},
               {"small", "x=37x3 to=float32"},
               {"small", "x=1x1024 to=int32"},
               {"small", "x=() to=int64"},
               {"test", "x=301x517 to=float64"},
               {"test", "x=301x517 to=float32"},
               {"test", "x=301x517 to=int32"},
               {"test", "x=301x517 to=int64"},
               {"large", "x=8192x8192 to=float64"},
               {"large", "x=8192x8192 to=float32"},
               {"huge", "x=46341x46341 to=float64"}},
};
