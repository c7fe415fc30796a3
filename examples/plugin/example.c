/* example.c: the documented example plugin (README.md here): a new operator, example_saxpy
 * (out = a*x + y, with backward, reference, models and shape sets), and a second
 * implementation of the built-in relu named "example" (a bit-mask kernel instead of a compare),
 * which opperf checks against its own relu reference. Build: see CMakeLists.txt / README.md. */
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "opperf/plugin.h"

/* ---- example_saxpy: out = a*x + y ---- */

static int saxpy_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0], *y = &c->in[1];
  if (x->ndim != y->ndim || opf_numel(x) != opf_numel(y) ||
      memcmp(x->shape, y->shape, sizeof x->shape[0] * (size_t)x->ndim) != 0) {
    char sx[96], sy[96];
    return opf_case_error(c, OPF_EINVAL, "x (%s) and y (%s) must have the same shape",
                          opf_shape_str(x, sx, sizeof sx), opf_shape_str(y, sy, sizeof sy));
  }
  opf_tensor_set_shape(&c->out[0], c->dtype, x->ndim, x->shape);
  return OPF_OK;
}

/* Runs fn over [0, n) split across the OpenMP threads when n is large, else in this thread:
 * entering a parallel region costs microseconds even when an if() clause makes it serial. */
typedef void (*range_fn)(opf_case *c, int64_t lo, int64_t hi);
static void split(opf_case *c, int64_t n, range_fn fn) {
  if (n < 65536) {
    fn(c, 0, n);
    return;
  }
#pragma omp parallel
  {
    int nt = omp_get_num_threads(), t = omp_get_thread_num();
    int64_t chunk = (n + nt - 1) / nt, lo = t * chunk, hi = lo + chunk < n ? lo + chunk : n;
    if (lo < hi) fn(c, lo, hi);
  }
}

/* Kernels index params by position: p[0] is "a" (opf_case_param(c, "a") in infer/setup). */
static void saxpy_range(opf_case *c, int64_t lo, int64_t hi) {
  if (c->dtype == OPF_F32) {
    const float *x = c->in[0].data, *y = c->in[1].data;
    float *out = c->out[0].data, a = (float)c->p[0];
    for (int64_t i = lo; i < hi; i++) out[i] = a * x[i] + y[i];
  } else {
    const double *x = c->in[0].data, *y = c->in[1].data;
    double *out = c->out[0].data, a = c->p[0];
    for (int64_t i = lo; i < hi; i++) out[i] = a * x[i] + y[i];
  }
}

static int saxpy_forward(opf_case *c) {
  split(c, opf_numel(&c->in[0]), saxpy_range);
  return OPF_OK;
}

/* dx = a * dout, dy = dout. */
static int saxpy_backward(opf_case *c) {
  int64_t n = opf_numel(&c->in[0]);
  for (int64_t i = 0; i < n; i++) {
    if (c->dtype == OPF_F32) {
      float g = ((const float *)c->gout[0].data)[i];
      ((float *)c->gin[0].data)[i] = (float)c->p[0] * g;
      ((float *)c->gin[1].data)[i] = g;
    } else {
      double g = ((const double *)c->gout[0].data)[i];
      ((double *)c->gin[0].data)[i] = c->p[0] * g;
      ((double *)c->gin[1].data)[i] = g;
    }
  }
  return OPF_OK;
}

/* The reference: one element at a time in double, obviously correct. */
static int saxpy_reference(opf_case *c) {
  int64_t n = opf_numel(&c->in[0]);
  for (int64_t i = 0; i < n; i++) {
    int f32 = c->dtype == OPF_F32;
    double x = f32 ? ((const float *)c->in[0].data)[i] : ((const double *)c->in[0].data)[i];
    double y = f32 ? ((const float *)c->in[1].data)[i] : ((const double *)c->in[1].data)[i];
    if (f32) ((float *)c->out[0].data)[i] = (float)(c->p[0] * x + y);
    else ((double *)c->out[0].data)[i] = c->p[0] * x + y;
  }
  return OPF_OK;
}

static double saxpy_flops(const opf_case *c, opf_pass p) {
  double n = (double)opf_numel(&c->in[0]);
  return opf_pass_sum(p, 2 * n, n); /* fwd: a multiply and an add; bwd: a multiply */
}

static double saxpy_bytes(const opf_case *c, opf_pass p) {
  double b = (double)opf_numel(&c->in[0]) * (double)opf_dtype_size(c->dtype);
  return opf_pass_sum(p, 3 * b, 3 * b); /* fwd: x, y in, out; bwd: dout in, dx, dy out */
}

OPPERF_PLUGIN_OP(example_saxpy) = {
    .abi = OPF_OP_ABI,
    .name = "example_saxpy",
    .category = "example",
    .summary = "plugin example: out = a*x + y",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1},
           {.name = "y", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1}},
    .n_out = 1,
    .out = {"out"},
    .n_params = 1,
    .params = {{.name = "a", .type = OPF_P_FLOAT, .def = 2.0, .min = -1e6, .max = 1e6,
                .help = "the scale of x"}},
    .shapes = {{"standard", "x=1048576 y=1048576"},
               {"skewed", "x=100000x10 y=100000x10"},
               {"small", "x=1000 y=1000"},
               {"small", "x=7x3 y=7x3 a=-0.5"}},
    .infer = saxpy_infer,
    .forward = saxpy_forward,
    .backward = saxpy_backward,
    .reference = saxpy_reference,
    .flops = saxpy_flops,
    .bytes = saxpy_bytes,
};

/* ---- relu, implementation "example" ----
 * Deliberately different from the built-in (a compare-and-select): the sign bit, spread over
 * the whole word by an arithmetic shift, masks negative values (and -0) to +0 in integer
 * arithmetic. Same results as max(x, 0) for every non-NaN input. */
static void relu_mask_range(opf_case *c, int64_t lo, int64_t hi) {
  if (c->dtype == OPF_F32) {
    const int32_t *x = c->in[0].data;
    int32_t *y = c->out[0].data;
    for (int64_t i = lo; i < hi; i++) y[i] = x[i] & ~(x[i] >> 31);
  } else {
    const int64_t *x = c->in[0].data;
    int64_t *y = c->out[0].data;
    for (int64_t i = lo; i < hi; i++) y[i] = x[i] & ~(x[i] >> 63);
  }
}

static int relu_mask_forward(opf_case *c) {
  split(c, opf_numel(&c->in[0]), relu_mask_range);
  return OPF_OK;
}

/* dx = dy where x > 0, else 0: the same mask taken from x, applied to dy's bits (a positive
 * x's mask is all ones, a negative x's or a zero's all zeros). */
static int relu_mask_backward(opf_case *c) {
  int64_t n = opf_numel(&c->in[0]);
  if (c->dtype == OPF_F32) {
    const int32_t *x = c->in[0].data, *dy = c->gout[0].data;
    int32_t *dx = c->gin[0].data;
    for (int64_t i = 0; i < n; i++) dx[i] = dy[i] & -(int32_t)(x[i] > 0);
  } else {
    const int64_t *x = c->in[0].data, *dy = c->gout[0].data;
    int64_t *dx = c->gin[0].data;
    for (int64_t i = 0; i < n; i++) dx[i] = dy[i] & -(int64_t)(x[i] > 0);
  }
  return OPF_OK;
}

OPPERF_PLUGIN_OP(example_relu) = {
    .abi = OPF_OP_ABI,
    .name = "example",
    .implements = "relu",
    .summary = "relu by sign-bit masking (plugin example)",
    .forward = relu_mask_forward,
    .backward = relu_mask_backward,
};
