/* search.c: searchsorted: int64 insertion positions of values in a sorted 1-D sequence
 * (side left: first position with a[i] >= v; right: first with a[i] > v). Blocks of 64 values
 * descend the sequence together with a branch-free binary search, so the compiler turns each
 * step into one gather and one compare for 8-16 values at a time; blocks go to threads. */
#include "sort/sort_common.h"

#define SS_BLOCK 64

/* The block kernel for one dtype: out[i] = number of a[] elements before v[i]'s position, for
 * exactly SS_BLOCK values (the caller pads the last block). Fixed trip counts and int32
 * positions let GCC turn every step into whole-vector gathers and compares. */
#define SS_DEF(T, SUF)                                                                        \
  OPF_VEC static void ss_block_##SUF(const T *restrict a, int64_t n, const T *restrict v,      \
                                     int right, int64_t *restrict out) {                       \
    int32_t b[SS_BLOCK];                                                                      \
    for (int i = 0; i < SS_BLOCK; i++) b[i] = 0;                                              \
    for (int64_t len = n; len > 1;) {                                                         \
      const int32_t h = (int32_t)(len / 2);                                                   \
      if (right)                                                                              \
        for (int i = 0; i < SS_BLOCK; i++) b[i] += a[b[i] + h] <= v[i] ? h : 0;               \
      else                                                                                    \
        for (int i = 0; i < SS_BLOCK; i++) b[i] += a[b[i] + h] < v[i] ? h : 0;                \
      len -= h;                                                                               \
    }                                                                                         \
    if (right)                                                                                \
      for (int i = 0; i < SS_BLOCK; i++) out[i] = b[i] + (a[b[i]] <= v[i]);                   \
    else                                                                                      \
      for (int i = 0; i < SS_BLOCK; i++) out[i] = b[i] + (a[b[i]] < v[i]);                    \
  }
SS_DEF(float, f32)
SS_DEF(double, f64)
SS_DEF(int32_t, i32)
SS_DEF(int64_t, i64)

static void ss_range(int64_t lo, int64_t hi, void *p) {
  opf_case *c = p;
  const int64_t n = opf_numel(&c->in[0]), nv = opf_numel(&c->in[1]);
  const int right = c->p[0] != 0;
  const size_t es = opf_dtype_size(c->dtype);
  int64_t *out = c->out[0].data;
  _Alignas(64) char vpad[SS_BLOCK * 8];
  int64_t opad[SS_BLOCK];
  for (int64_t b0 = lo * SS_BLOCK; b0 < hi * SS_BLOCK && b0 < nv; b0 += SS_BLOCK) {
    const int64_t cnt = nv - b0 < SS_BLOCK ? nv - b0 : SS_BLOCK;
    if (n == 0) {
      memset(out + b0, 0, (size_t)cnt * sizeof *out);
      continue;
    }
    const void *v = (const char *)c->in[1].data + (size_t)b0 * es;
    int64_t *o = out + b0;
    if (cnt < SS_BLOCK) { /* the last block, padded with copies of its first value */
      for (int64_t i = 0; i < SS_BLOCK; i++)
        memcpy(vpad + i * es, (const char *)v + (size_t)(i < cnt ? i : 0) * es, es);
      v = vpad, o = opad;
    }
    switch (c->dtype) {
    case OPF_F32: ss_block_f32(c->in[0].data, n, v, right, o); break;
    case OPF_F64: ss_block_f64(c->in[0].data, n, v, right, o); break;
    case OPF_I32: ss_block_i32(c->in[0].data, n, v, right, o); break;
    default: ss_block_i64(c->in[0].data, n, v, right, o); break;
    }
    if (o == opad) memcpy(out + b0, opad, (size_t)cnt * sizeof *out);
  }
}

static int ss_forward(opf_case *c) {
  const int64_t nb = (opf_numel(&c->in[1]) + SS_BLOCK - 1) / SS_BLOCK;
  /* a search costs about log2(n) element steps: parallel above OPF_PAR_MIN such steps */
  const int64_t steps = 1 + (int64_t)log2((double)opf_numel(&c->in[0]) + 1);
  opf_parallel_range(nb, OPF_PAR_MIN / (SS_BLOCK * steps) + 1, ss_range, c);
  return OPF_OK;
}

static int ss_infer(opf_case *c) {
  const opf_tensor *a = &c->in[0], *v = &c->in[1];
  char s[96];
  if (a->ndim >= 0 && a->ndim != 1)
    return opf_case_error(c, OPF_EINVAL, "input 'sorted' must be 1-D, not %s (%d dims)",
                          opf_shape_str(a, s, sizeof s), a->ndim);
  if (a->ndim == 1 && a->shape[0] > INT32_MAX)
    return opf_case_error(c, OPF_EINVAL, "input 'sorted' of %lld elements: at most 2^31 - 1 are supported",
                          (long long)a->shape[0]);
  if (v->ndim < 0) return OPF_OK;
  opf_set_out(c, 0, OPF_I64, v->ndim, v->shape);
  return OPF_OK;
}

/* Reference: a textbook lo/hi binary search per value. */
static int ss_reference(opf_case *c) {
  const int64_t n = opf_numel(&c->in[0]), nv = opf_numel(&c->in[1]);
  const int right = c->p[0] != 0;
  for (int64_t i = 0; i < nv; i++) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      int go_right;
      switch (c->dtype) {
      case OPF_F32: {
        const float a = ((const float *)c->in[0].data)[mid], v = ((const float *)c->in[1].data)[i];
        go_right = right ? a <= v : a < v;
        break;
      }
      case OPF_F64: {
        const double a = ((const double *)c->in[0].data)[mid], v = ((const double *)c->in[1].data)[i];
        go_right = right ? a <= v : a < v;
        break;
      }
      case OPF_I32: {
        const int32_t a = ((const int32_t *)c->in[0].data)[mid], v = ((const int32_t *)c->in[1].data)[i];
        go_right = right ? a <= v : a < v;
        break;
      }
      default: {
        const int64_t a = ((const int64_t *)c->in[0].data)[mid], v = ((const int64_t *)c->in[1].data)[i];
        go_right = right ? a <= v : a < v;
        break;
      }
      }
      if (go_right) lo = mid + 1;
      else hi = mid;
    }
    ((int64_t *)c->out[0].data)[i] = lo;
  }
  return OPF_OK;
}

/* The sequence: g(k) = floor(7k/8) (non-decreasing, with runs of equal elements) scaled into
 * the input's range for floats, or g(k) - n/2 for integers. */
static double ss_seq(int64_t k, int64_t n, double lo, double hi, int isf) {
  const double g = (double)((k * 7) / 8);
  return isf ? lo + (hi - lo) * g / (double)(n > 0 ? n : 1) : g - (double)(n / 2);
}

static int fill_sorted(opf_case *c, int i, opf_rng *r) {
  (void)r;
  opf_tensor *t = &c->in[i];
  const int64_t n = opf_numel(t);
  const int isf = opf_dtype_is_float(t->dtype);
  for (int64_t k = 0; k < n; k++) {
    const double v = ss_seq(k, n, c->op->in[i].lo, c->op->in[i].hi, isf);
    switch (t->dtype) {
    case OPF_F32: ((float *)t->data)[k] = (float)v; break;
    case OPF_F64: ((double *)t->data)[k] = v; break;
    case OPF_I32: ((int32_t *)t->data)[k] = (int32_t)v; break;
    default: ((int64_t *)t->data)[k] = (int64_t)v; break;
    }
  }
  return OPF_OK;
}

/* Values: a quarter are exact copies of sequence elements (ties, where left and right
 * differ), the rest uniform over the sequence's range widened by 10% on each side. */
static int fill_values(opf_case *c, int i, opf_rng *r) {
  opf_tensor *t = &c->in[i];
  const int64_t n = opf_numel(&c->in[0]), nv = opf_numel(t);
  const int isf = opf_dtype_is_float(t->dtype);
  const double lo = ss_seq(0, n, c->op->in[0].lo, c->op->in[0].hi, isf),
               hi = ss_seq(n > 0 ? n - 1 : 0, n, c->op->in[0].lo, c->op->in[0].hi, isf),
               w = hi - lo + 1;
  const uint64_t key = r->key;
#pragma omp parallel for schedule(static) if (nv > 65536)
  for (int64_t k = 0; k < nv; k++) {
    opf_rng d = {key, (uint64_t)k};
    const double u = opf_rng_uniform(&d), u2 = opf_rng_uniform(&d);
    double v = lo - 0.1 * w + 1.2 * w * u2;
    if (u < 0.25 && n > 0) v = ss_seq((int64_t)(u2 * (double)n), n, c->op->in[0].lo, c->op->in[0].hi, isf);
    if (!isf) v = floor(v);
    switch (t->dtype) {
    case OPF_F32: ((float *)t->data)[k] = (float)v; break;
    case OPF_F64: ((double *)t->data)[k] = v; break;
    case OPF_I32: ((int32_t *)t->data)[k] = (int32_t)v; break;
    default: ((int64_t *)t->data)[k] = (int64_t)v; break;
    }
  }
  return OPF_OK;
}

/* Models: log2(n) + 1 compares per value; bytes: read the values and the sequence once, write
 * the int64 positions. */
static double ss_flops(const opf_case *c, opf_pass p) {
  const double n = (double)opf_numel(&c->in[0]);
  return opf_pass_sum(p, (double)opf_numel(&c->in[1]) * (floor(log2(n + 1)) + 1), 0);
}
static double ss_bytes(const opf_case *c, opf_pass p) {
  const double es = (double)opf_dtype_size(c->dtype);
  const double b = (double)opf_numel(&c->in[0]) * es + (double)opf_numel(&c->in[1]) * (es + 8);
  return opf_pass_sum(p, b, b);
}

OPPERF_OP(searchsorted) = {
    .abi = OPF_OP_ABI,
    .name = "searchsorted",
    .category = "sort",
    .summary = "int64 positions inserting values into a sorted 1-D sequence keep it sorted",
    .dtypes = OPF_DT_ALL,
    .n_in = 2,
    .in = {{.name = "sorted", .dtype = OPF_DT_CASE, .lo = -4, .hi = 4, .fill = fill_sorted,
            .help = "non-decreasing 1-D sequence (generated with runs of equal elements)"},
           {.name = "values", .dtype = OPF_DT_CASE, .fill = fill_values,
            .help = "values to place, any shape (a quarter equal sequence elements)"}},
    .n_out = 1,
    .out = {"indices"},
    .n_params = 1,
    .params = {{.name = "side", .type = OPF_P_ENUM, .def = 0, .choices = "left|right",
                .help = "left: first position with sorted[i] >= v; right: first with > v"}},
    .shapes = {{"standard", "sorted=1024 values=1024x1024"},
               {"standard", "sorted=1048576 values=1024x1024"},
               {"standard", "sorted=1024 values=1024x1024 side=right"},
               {"skewed", "sorted=10 values=10000x10"},
               {"skewed", "sorted=10000 values=10x10000"},
               {"skewed", "sorted=1 values=10000x1"},
               {"skewed", "sorted=100000 values=100000x10"},
               {"small", "sorted=16 values=16x16"},
               {"small", "sorted=5 values=1x64 side=right"},
               {"small", "sorted=1 values=37x3"},
               {"small", "sorted=0 values=4x4"},
               {"small", "sorted=100 values=7 side=right"},
               {"test", "sorted=1000 values=301x517 side=right"},
               {"test", "sorted=70001 values=1000"},
               {"large", "sorted=1024 values=8192x8192"},
               {"large", "sorted=16777216 values=8192x8192"}},
    .infer = ss_infer,
    .forward = ss_forward,
    .reference = ss_reference,
    .flops = ss_flops,
    .bytes = ss_bytes,
};
