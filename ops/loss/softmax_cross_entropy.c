/* softmax_cross_entropy.c: cross entropy of softmax(logits) against integer labels,
 * loss_i = logsumexp(logits_i) - logits_i[label_i], reduced by mean, sum or none; backward
 * dlogits = (softmax - onehot) * g (/N for mean). The forward keeps each row's log-sum-exp in
 * the workspace, so the backward is a single exp pass over the logits. */
#include "reduction/reduce.h"

enum { SCE_MEAN, SCE_SUM, SCE_NONE };
enum { IN_LOGITS, IN_LABELS };

/* Threads pay off sooner than for OPF_PAR_MIN plain elements: each logit costs an exp. */
#define SCE_PAR_MIN (OPF_PAR_MIN / 4)

/* Row kernels: the row log-sum-exp and exp(x - lse) * g of reduce_lanes.h, with the class count
 * as a compile-time constant for the short rows of OPF_RED_SHORT_LENGTHS. */
#define SCE_KERNELS(RT, SUF)                                                                  \
  OPF_VEC static void sce_lse_##SUF(const RT *restrict x, int64_t nrows, int64_t n,           \
                                    RT *restrict lse) {                                       \
    switch (n) { OPF_RED_SHORT_LENGTHS(SCE_LSE_CASE_##SUF) default: break; }                 \
    opf_red_lse_rows_##SUF(x, NULL, nrows, n, lse);                                           \
  }                                                                                           \
  OPF_VEC static void sce_grad_##SUF(const RT *restrict x, RT *restrict dx, int64_t nrows,    \
                                     int64_t n, const RT *restrict lse, const RT *restrict g) {\
    switch (n) { OPF_RED_SHORT_LENGTHS(SCE_GRAD_CASE_##SUF) default: break; }                 \
    opf_red_exp_shift_rows_##SUF(x, dx, nrows, n, lse, g);                                    \
  }
#define SCE_LSE_CASE_f32(N) case N: opf_red_lse_rows_f32(x, NULL, nrows, N, lse); return;
#define SCE_LSE_CASE_f64(N) case N: opf_red_lse_rows_f64(x, NULL, nrows, N, lse); return;
#define SCE_GRAD_CASE_f32(N) case N: opf_red_exp_shift_rows_f32(x, dx, nrows, N, lse, g); return;
#define SCE_GRAD_CASE_f64(N) case N: opf_red_exp_shift_rows_f64(x, dx, nrows, N, lse, g); return;
SCE_KERNELS(float, f32)
SCE_KERNELS(double, f64)

/* Workspace: per-row log-sum-exp (case dtype), per-row gradient scale (case dtype) and per-row
 * loss (double, summed in row order so the result does not depend on the thread count). */
typedef struct sce_ws {
  void *lse, *g;
  double *loss;
} sce_ws;

static size_t sce_align(size_t b) { return (b + OPF_ALIGN - 1) / OPF_ALIGN * OPF_ALIGN; }

static sce_ws sce_ws_get(const opf_case *c, size_t *total) {
  const size_t n = (size_t)c->in[IN_LOGITS].shape[0], es = opf_dtype_size(c->dtype);
  const size_t a = sce_align(n * es), b = sce_align(n * es), l = sce_align(n * sizeof(double));
  sce_ws w = {c->ws, (char *)c->ws + a, (double *)((char *)c->ws + a + b)};
  if (total) *total = a + b + l;
  return w;
}

static int sce_fill_labels(opf_case *c, int i, opf_rng *r) {
  (void)r;
  opf_fill_index(&c->in[i], c->seed, (uint64_t)i, c->in[IN_LOGITS].shape[1]);
  return OPF_OK;
}

static int sce_infer(opf_case *c) {
  opf_tensor *x = &c->in[IN_LOGITS], *lab = &c->in[IN_LABELS];
  if (x->ndim < 0) return OPF_OK;
  char s1[96], s2[96];
  if (x->ndim != 2)
    return opf_case_error(c, OPF_EINVAL, "'logits' must be 2-D (N, C), not %s",
                          opf_shape_str(x, s1, sizeof s1));
  if (x->shape[1] < 1)
    return opf_case_error(c, OPF_EINVAL, "'logits' %s needs at least one class",
                          opf_shape_str(x, s1, sizeof s1));
  if (lab->ndim < 0) {
    opf_tensor_set_shape(lab, OPF_I64, 1, x->shape);
  } else if (lab->ndim != 1 || lab->shape[0] != x->shape[0]) {
    return opf_case_error(c, OPF_EINVAL, "'labels' %s must be 1-D with one label per row of 'logits' %s",
                          opf_shape_str(lab, s2, sizeof s2), opf_shape_str(x, s1, sizeof s1));
  }
  if ((int)c->p[0] == SCE_NONE) opf_set_out(c, 0, c->dtype, 1, x->shape);
  else opf_set_out(c, 0, c->dtype, 0, NULL);
  sce_ws_get(c, &c->ws_bytes);
  return OPF_OK;
}

/* Labels outside [0, C) are reported, not read out of bounds (they can come from a user). */
static int sce_check_labels(opf_case *c) {
  const int64_t n = c->in[IN_LOGITS].shape[0], k = c->in[IN_LOGITS].shape[1];
  const int64_t *lab = c->in[IN_LABELS].data;
  for (int64_t i = 0; i < n; i++)
    if (lab[i] < 0 || lab[i] >= k)
      return opf_case_error(c, OPF_EINVAL, "label %lld of row %lld is outside [0, %lld)",
                            (long long)lab[i], (long long)i, (long long)k);
  return OPF_OK;
}

static void sce_fwd_range(int64_t lo, int64_t hi, void *v) {
  opf_case *c = v;
  const int64_t n = c->in[IN_LOGITS].shape[1];
  const int64_t *lab = c->in[IN_LABELS].data;
  sce_ws w = sce_ws_get(c, NULL);
  if (c->dtype == OPF_F32) {
    const float *x = c->in[IN_LOGITS].data;
    float *lse = w.lse;
    sce_lse_f32(x + lo * n, hi - lo, n, lse + lo);
    for (int64_t i = lo; i < hi; i++) w.loss[i] = (double)lse[i] - x[i * n + lab[i]];
  } else {
    const double *x = c->in[IN_LOGITS].data;
    double *lse = w.lse;
    sce_lse_f64(x + lo * n, hi - lo, n, lse + lo);
    for (int64_t i = lo; i < hi; i++) w.loss[i] = lse[i] - x[i * n + lab[i]];
  }
}

/* Write the loss from per-row losses: each row (none), their sum, or their mean. */
static void sce_write_loss(opf_case *c, const double *loss) {
  const int64_t n = c->in[IN_LOGITS].shape[0];
  const int red = (int)c->p[0];
  if (red == SCE_NONE) {
    for (int64_t i = 0; i < n; i++) {
      if (c->dtype == OPF_F32) ((float *)c->out[0].data)[i] = (float)loss[i];
      else ((double *)c->out[0].data)[i] = loss[i];
    }
    return;
  }
  double t = 0;
  for (int64_t i = 0; i < n; i++) t += loss[i];
  if (red == SCE_MEAN) t /= (double)n;
  if (c->dtype == OPF_F32) *(float *)c->out[0].data = (float)t;
  else *(double *)c->out[0].data = t;
}

static int sce_forward(opf_case *c) {
  int rc = sce_check_labels(c);
  if (rc) return rc;
  const int64_t n = c->in[IN_LOGITS].shape[0], k = c->in[IN_LOGITS].shape[1];
  opf_parallel_range(n, (SCE_PAR_MIN + k - 1) / k, sce_fwd_range, c);
  sce_write_loss(c, sce_ws_get(c, NULL).loss);
  return OPF_OK;
}

static void sce_bwd_range(int64_t lo, int64_t hi, void *v) {
  opf_case *c = v;
  const int64_t n = c->in[IN_LOGITS].shape[0], k = c->in[IN_LOGITS].shape[1];
  const int64_t *lab = c->in[IN_LABELS].data;
  const int red = (int)c->p[0];
  sce_ws w = sce_ws_get(c, NULL);
  const double scale = red == SCE_MEAN ? 1.0 / (double)n : 1.0;
  if (c->dtype == OPF_F32) {
    const float *gy = c->gout[0].data;
    float *g = w.g, *dx = c->gin[IN_LOGITS].data;
    for (int64_t i = lo; i < hi; i++) g[i] = (float)((red == SCE_NONE ? gy[i] : gy[0]) * scale);
    sce_grad_f32((const float *)c->in[IN_LOGITS].data + lo * k, dx + lo * k, hi - lo, k,
                 (const float *)w.lse + lo, g + lo);
    for (int64_t i = lo; i < hi; i++) dx[i * k + lab[i]] -= g[i];
  } else {
    const double *gy = c->gout[0].data;
    double *g = w.g, *dx = c->gin[IN_LOGITS].data;
    for (int64_t i = lo; i < hi; i++) g[i] = (red == SCE_NONE ? gy[i] : gy[0]) * scale;
    sce_grad_f64((const double *)c->in[IN_LOGITS].data + lo * k, dx + lo * k, hi - lo, k,
                 (const double *)w.lse + lo, g + lo);
    for (int64_t i = lo; i < hi; i++) dx[i * k + lab[i]] -= g[i];
  }
}

static int sce_backward(opf_case *c) {
  if (!c->gin[IN_LOGITS].data) return OPF_OK;
  const int64_t n = c->in[IN_LOGITS].shape[0], k = c->in[IN_LOGITS].shape[1];
  opf_parallel_range(n, (SCE_PAR_MIN + k - 1) / k, sce_bwd_range, c);
  return OPF_OK;
}

/* Reference: each row in double with libm exp/log; the per-row losses reduced in row order. */
static int sce_reference(opf_case *c) {
  int rc = sce_check_labels(c);
  if (rc) return rc;
  const int64_t n = c->in[IN_LOGITS].shape[0], k = c->in[IN_LOGITS].shape[1];
  const int64_t *lab = c->in[IN_LABELS].data;
  const int red = (int)c->p[0];
  double total = 0;
  for (int64_t i = 0; i < n; i++) {
#define SCE_X(j) (c->dtype == OPF_F32 ? (double)((const float *)c->in[IN_LOGITS].data)[i * k + (j)] \
                                      : ((const double *)c->in[IN_LOGITS].data)[i * k + (j)])
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < k; j++) m = SCE_X(j) > m ? SCE_X(j) : m;
    for (int64_t j = 0; j < k; j++) s += exp(SCE_X(j) - m);
    const double loss = m + log(s) - SCE_X(lab[i]);
#undef SCE_X
    total += loss;
    if (red != SCE_NONE) continue;
    if (c->dtype == OPF_F32) ((float *)c->out[0].data)[i] = (float)loss;
    else ((double *)c->out[0].data)[i] = loss;
  }
  if (red == SCE_NONE) return OPF_OK;
  if (red == SCE_MEAN) total /= (double)n;
  if (c->dtype == OPF_F32) *(float *)c->out[0].data = (float)total;
  else *(double *)c->out[0].data = total;
  return OPF_OK;
}

/* fwd per element: max, subtract, exp, add (4); per row: log, add, subtract, and the add of
 * the reduction (4). bwd per element: subtract, exp, multiply (3); per row the one-hot
 * subtract (1). */
static double sce_flops(const opf_case *c, opf_pass p) {
  const double n = (double)c->in[IN_LOGITS].shape[0], k = (double)c->in[IN_LOGITS].shape[1];
  return opf_pass_sum(p, 4 * n * k + 4 * n, 3 * n * k + n);
}

/* fwd: read logits and labels, write the loss; bwd: read logits, labels and the loss
 * gradient, write dlogits (the per-row log-sum-exp kept by the forward is not counted). */
static double sce_bytes(const opf_case *c, opf_pass p) {
  const double es = (double)opf_dtype_size(c->dtype), n = (double)c->in[IN_LOGITS].shape[0];
  const double x = (double)opf_numel(&c->in[IN_LOGITS]) * es, lab = n * 8,
               y = (double)opf_numel(&c->out[0]) * es;
  return opf_pass_sum(p, x + lab + y, 2 * x + lab + y);
}

OPPERF_OP(softmax_cross_entropy) = {
    .abi = OPF_OP_ABI,
    .name = "softmax_cross_entropy",
    .category = "nn.loss",
    .summary = "cross entropy of softmax(logits) with int64 class labels (mean, sum or none)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = {{.name = "logits", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -4, .hi = 4,
            .help = "(N, C) unnormalised class scores"},
           {.name = "labels", .dtype = OPF_I64, .fill = sce_fill_labels,
            .help = "(N) class indices in [0, C); derived from logits when omitted"}},
    .n_out = 1,
    .out = {"loss"},
    .n_params = 1,
    .params = {{.name = "reduction", .type = OPF_P_ENUM, .def = SCE_MEAN, .choices = "mean|sum|none",
                .help = "mean or sum over the rows (a scalar), or none (one loss per row)"}},
    .shapes = {{"standard", "logits=32x1000"},
               {"skewed", "logits=1024x10"},
               {"skewed", "logits=10x100000"},
               {"skewed", "logits=1x1000"},
               {"small", "logits=16x10"},
               {"small", "logits=4x7 reduction=sum"},
               {"small", "logits=5x3 reduction=none"},
               {"small", "logits=1x5"},
               {"small", "logits=3x70 reduction=none"},
               {"test", "logits=300x517"},
               {"test", "logits=7x100003 reduction=none"},
               {"test", "logits=5000x10 reduction=sum"},
               {"large", "logits=65536x1000"}},
    .infer = sce_infer,
    .forward = sce_forward,
    .backward = sce_backward,
    .reference = sce_reference,
    .flops = sce_flops,
    .bytes = sce_bytes,
};
