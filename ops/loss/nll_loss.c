/* nll_loss.c: negative log-likelihood of int64 class labels under log-probabilities x (N, C),
 * loss_i = -x[i, label_i] (0 for label == ignore_index), reduced by mean (over the labels not
 * ignored, as PyTorch), sum or none. The second stage of the unfused softmax cross entropy
 * ("log_softmax x=logits | nll_loss x=_ labels=labels"), hence the input names. The forward
 * gathers N values; the backward is a threaded zero fill of dx with one write per row. */
#include "loss/loss_common.h"

enum { NL_X, NL_LABELS };
enum { NL_RED, NL_IGNORE };

static int nl_fill_labels(opf_case *c, int i, opf_rng *r) {
  (void)r;
  opf_fill_index(&c->in[i], c->seed, (uint64_t)i, c->in[NL_X].shape[1]);
  return OPF_OK;
}

static int nl_infer(opf_case *c) {
  opf_tensor *x = &c->in[NL_X], *lab = &c->in[NL_LABELS];
  if (x->ndim < 0) return OPF_OK;
  char s1[96], s2[96];
  if (x->ndim != 2)
    return opf_case_error(c, OPF_EINVAL, "'x' must be 2-D (N, C) log-probabilities, not %s",
                          opf_shape_str(x, s1, sizeof s1));
  if (x->shape[1] < 1)
    return opf_case_error(c, OPF_EINVAL, "'x' %s needs at least one class", opf_shape_str(x, s1, sizeof s1));
  if (lab->ndim < 0) opf_tensor_set_shape(lab, OPF_I64, 1, x->shape);
  if (lab->ndim != 1 || lab->shape[0] != x->shape[0])
    return opf_case_error(c, OPF_EINVAL, "'labels' %s must be 1-D with one label per row of 'x' %s",
                          opf_shape_str(lab, s2, sizeof s2), opf_shape_str(x, s1, sizeof s1));
  ls_set_loss_out(c, (int)c->p[NL_RED], x->shape[0]);
  return OPF_OK;
}

/* Labels outside [0, C) other than ignore_index are reported, not read out of bounds (they can
 * come from a user's file). Returns the number of labels that count (not ignored) in *kept. */
static int nl_check_labels(opf_case *c, int64_t *kept) {
  const int64_t n = c->in[NL_X].shape[0], k = c->in[NL_X].shape[1], ign = (int64_t)c->p[NL_IGNORE];
  const int64_t *lab = c->in[NL_LABELS].data;
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++) {
    if (lab[i] == ign) continue;
    if (lab[i] < 0 || lab[i] >= k)
      return opf_case_error(c, OPF_EINVAL, "label %lld of row %lld is outside [0, %lld) (ignore_index %lld)",
                            (long long)lab[i], (long long)i, (long long)k, (long long)ign);
    m++;
  }
  *kept = m;
  return OPF_OK;
}

/* Forward and reference: N gathers, summed in row order (nothing here is worth a thread). */
static int nl_forward(opf_case *c) {
  int64_t kept = 0;
  int rc = nl_check_labels(c, &kept);
  if (rc) return rc;
  const int64_t n = c->in[NL_X].shape[0], k = c->in[NL_X].shape[1], ign = (int64_t)c->p[NL_IGNORE];
  const int64_t *lab = c->in[NL_LABELS].data;
  const int red = (int)c->p[NL_RED];
  double total = 0;
  for (int64_t i = 0; i < n; i++)
    ls_ref_item(c, red, i, lab[i] == ign ? 0 : -ls_get(&c->in[NL_X], i * k + lab[i]), &total);
  ls_ref_done(c, red, total, (double)kept);
  return OPF_OK;
}

static int nl_reference(opf_case *c) {
  int64_t kept = 0;
  int rc = nl_check_labels(c, &kept);
  if (rc) return rc;
  const int64_t n = c->in[NL_X].shape[0], k = c->in[NL_X].shape[1];
  const int64_t *lab = c->in[NL_LABELS].data, ign = (int64_t)c->p[NL_IGNORE];
  double total = 0;
  for (int64_t i = 0; i < n; i++) {
    double l = 0;
    for (int64_t j = 0; j < k; j++) /* the one-hot dot product, literally */
      if (j == lab[i] && lab[i] != ign) l -= ls_get(&c->in[NL_X], i * k + j);
    ls_ref_item(c, (int)c->p[NL_RED], i, l, &total);
  }
  ls_ref_done(c, (int)c->p[NL_RED], total, (double)kept);
  return OPF_OK;
}

typedef struct nl_ctx {
  opf_case *c;
  double kept;
} nl_ctx;

/* Rows [lo, hi): one memset of the block, then -g (/ kept for mean) at each label. */
static void nl_bwd_range(int64_t lo, int64_t hi, void *v) {
  const nl_ctx *x = v;
  opf_case *c = x->c;
  const int64_t k = c->in[NL_X].shape[1], ign = (int64_t)c->p[NL_IGNORE];
  const int64_t *lab = c->in[NL_LABELS].data;
  memset(LS_AT(c->gin[NL_X], lo * k), 0, (size_t)((hi - lo) * k) * opf_dtype_size(c->dtype));
  for (int64_t i = lo; i < hi; i++)
    if (lab[i] != ign) ls_put(&c->gin[NL_X], i * k + lab[i], -ls_row_grad(c, i, (int)c->p[NL_RED], x->kept));
}

static int nl_backward(opf_case *c) {
  if (!c->gin[NL_X].data) return OPF_OK;
  int64_t kept = 0;
  int rc = nl_check_labels(c, &kept);
  if (rc) return rc;
  nl_ctx x = {c, (double)kept};
  const int64_t n = c->in[NL_X].shape[0], k = c->in[NL_X].shape[1];
  opf_parallel_range(n, ls_row_par(OPF_PAR_MIN, k), nl_bwd_range, &x);
  return OPF_OK;
}

/* fwd: one negate-and-add per row (2); bwd: one scaled write per row (1) (the zero fill is
 * traffic, not arithmetic). */
static double nl_flops(const opf_case *c, opf_pass p) {
  const double n = (double)c->in[NL_X].shape[0];
  return opf_pass_sum(p, 2 * n, n);
}

/* fwd reads the N labelled log-probabilities and the labels, writes the loss; bwd reads the
 * labels and the loss gradient and writes all of dx. */
static double nl_bytes(const opf_case *c, opf_pass p) {
  const double es = (double)opf_dtype_size(c->dtype), n = (double)c->in[NL_X].shape[0];
  const double y = (double)opf_numel(&c->out[0]) * es;
  return opf_pass_sum(p, n * es + 8 * n + y, (double)opf_numel(&c->in[NL_X]) * es + 8 * n + y);
}

OPPERF_OP(nll_loss) = {
    .abi = OPF_OP_ABI,
    .name = "nll_loss",
    .category = "nn.loss",
    .summary = "negative log-likelihood of int64 labels under log-probabilities: -x[i, label_i]",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -5, .hi = 0,
            .help = "(N, C) log-probabilities (log_softmax output)"},
           {.name = "labels", .dtype = OPF_I64, .fill = nl_fill_labels,
            .help = "(N) class indices in [0, C) or ignore_index; derived from x when omitted"}},
    .n_out = 1,
    .out = {"loss"},
    .n_params = 2,
    .params = {{.name = "reduction", .type = OPF_P_ENUM, .def = LS_MEAN, .choices = "mean|sum|none",
                .help = "mean (over the labels not ignored) or sum: a scalar; none: one loss per row"},
               {.name = "ignore_index", .type = OPF_P_INT, .def = -100, .min = -1e9, .max = 1e9,
                .help = "rows with this label cost nothing and get no gradient"}},
    .shapes = {{"standard", "x=32x1000"},
               {"skewed", "x=1024x10"},
               {"skewed", "x=10x100000"},
               {"skewed", "x=1x1000"},
               {"small", "x=16x10"},
               {"small", "x=4x7 reduction=sum"},
               {"small", "x=5x3 reduction=none"},
               {"small", "x=1x5"},
               {"small", "x=16x5 ignore_index=2"},
               {"small", "x=16x4 reduction=none ignore_index=0"},
               {"test", "x=300x517"},
               {"test", "x=7x100003 reduction=none"},
               {"test", "x=5000x10 reduction=sum ignore_index=3"},
               {"large", "x=65536x1000"}},
    .infer = nl_infer,
    .forward = nl_forward,
    .backward = nl_backward,
    .reference = nl_reference,
    .flops = nl_flops,
    .bytes = nl_bytes,
};
