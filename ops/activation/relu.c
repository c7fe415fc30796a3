/* relu.c: rectified linear unit, y = max(x, 0), and its gradient dx = dy * (x > 0).
 * Memory-bound elementwise: one vectorised pass (ISA chosen at load time), split across
 * OpenMP threads for large tensors. Also the worked example of an operator file. */
#include "opf_kernel.h"

typedef struct {
  opf_case *c;
} relu_ctx;

OPF_VEC static void relu_f32(const float *restrict x, float *restrict y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
OPF_VEC static void relu_f64(const double *restrict x, double *restrict y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0. ? x[i] : 0.;
}
OPF_VEC static void relu_bwd_f32(const float *restrict x, const float *restrict dy,
                                 float *restrict dx, int64_t n) {
  for (int64_t i = 0; i < n; i++) dx[i] = x[i] > 0.f ? dy[i] : 0.f;
}
OPF_VEC static void relu_bwd_f64(const double *restrict x, const double *restrict dy,
                                 double *restrict dx, int64_t n) {
  for (int64_t i = 0; i < n; i++) dx[i] = x[i] > 0. ? dy[i] : 0.;
}

static void fwd_range(int64_t lo, int64_t hi, void *p) {
  opf_case *c = ((relu_ctx *)p)->c;
  if (c->dtype == OPF_F32)
    relu_f32((const float *)c->in[0].data + lo, (float *)c->out[0].data + lo, hi - lo);
  else
    relu_f64((const double *)c->in[0].data + lo, (double *)c->out[0].data + lo, hi - lo);
}

static void bwd_range(int64_t lo, int64_t hi, void *p) {
  opf_case *c = ((relu_ctx *)p)->c;
  if (c->dtype == OPF_F32)
    relu_bwd_f32((const float *)c->in[0].data + lo, (const float *)c->gout[0].data + lo,
                 (float *)c->gin[0].data + lo, hi - lo);
  else
    relu_bwd_f64((const double *)c->in[0].data + lo, (const double *)c->gout[0].data + lo,
                 (double *)c->gin[0].data + lo, hi - lo);
}

static int relu_infer(opf_case *c) {
  opf_set_out(c, 0, c->dtype, c->in[0].ndim, c->in[0].shape);
  return OPF_OK;
}

static int relu_forward(opf_case *c) {
  relu_ctx ctx = {c};
  opf_parallel_range(opf_numel(&c->in[0]), OPF_PAR_MIN, fwd_range, &ctx);
  return OPF_OK;
}

static int relu_backward(opf_case *c) {
  relu_ctx ctx = {c};
  opf_parallel_range(opf_numel(&c->in[0]), OPF_PAR_MIN, bwd_range, &ctx);
  return OPF_OK;
}

static int relu_reference(opf_case *c) {
  int64_t n = opf_numel(&c->in[0]);
  for (int64_t i = 0; i < n; i++) {
    if (c->dtype == OPF_F32) {
      float x = ((const float *)c->in[0].data)[i];
      ((float *)c->out[0].data)[i] = x > 0 ? x : 0;
    } else {
      double x = ((const double *)c->in[0].data)[i];
      ((double *)c->out[0].data)[i] = x > 0 ? x : 0;
    }
  }
  return OPF_OK;
}

static double relu_flops(const opf_case *c, opf_pass p) {
  double n = (double)opf_numel(&c->in[0]);
  return p == OPF_PASS_BOTH ? 2 * n : n; /* one compare-select per element and pass */
}

OPPERF_OP(relu) = {
    .abi = OPF_OP_ABI,
    .name = "relu",
    .category = "nn.activation",
    .summary = "rectified linear unit: y = max(x, 0)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1}},
    .n_out = 1,
    .out = {"y"},
    .shapes = {{"standard", "x=1024x1024"},
               {"skewed", "x=10000x10"},
               {"skewed", "x=10x10000"},
               {"skewed", "x=10000x1"},
               {"skewed", "x=100000x10"},
               {"small", "x=16x16"},
               {"small", "x=1x1024"},
               {"small", "x=37x3"},
               {"test", "x=301x517"},
               {"large", "x=8192x8192"}},
    .infer = relu_infer,
    .forward = relu_forward,
    .backward = relu_backward,
    .reference = relu_reference,
    .flops = relu_flops,
    .bytes = opf_default_bytes,
};
