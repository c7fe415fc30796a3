/* unique.c: the sorted distinct values of the flattened input, optionally with their counts.
 * The output size depends on the data, so the outputs are sized to the input: 'values' (and
 * 'counts' when return_counts is set, else empty) hold the result in their first 'count'
 * entries and zeros after it; 'count' is an int64 scalar. The input is radix-sorted as
 * order-preserving keys (sort_common.h), then one pass keeps each run's first key. */
#include "sort/sort_common.h"

/* The runs of sorted words a[0..n) (key KEY(a[k])): each run's key to vals[m] through
 * UNKEY and its first position to pos[m] (when pos), branch-free: every word writes slot m and
 * only a run's first word moves m on (runs of a few equal words made the branch a coin toss:
 * x=1024x1024 int64, values in 2^18 levels, 1 thread). Slot m is never past the word's
 * index, so nothing lands beyond n. Returns the run count. */
#define UNIQ_RUNS_DEF(T, name, KEY, UNKEY)                                                    \
  static int64_t name(const T *restrict a, int64_t n, void *vals, opf_dtype dt,                \
                      int64_t *restrict pos) {                                                 \
    int64_t m = 0;                                                                             \
    for (int64_t k = 0; k < n; k++) {                                                          \
      UNKEY(KEY(a[k]), vals, m, dt);                                                           \
      if (pos) pos[m] = k;                                                                     \
      m += k == 0 || KEY(a[k]) != KEY(a[k - 1]);                                               \
    }                                                                                          \
    return m;                                                                                  \
  }
#define UNIQ_HI(w) ((uint32_t)((w) >> 32))
#define UNIQ_ID(w) (w)
UNIQ_RUNS_DEF(uint64_t, uniq_runs_packed, UNIQ_HI, srt_unkey32)
UNIQ_RUNS_DEF(uint32_t, uniq_runs32, UNIQ_ID, srt_unkey32)
UNIQ_RUNS_DEF(uint64_t, uniq_runs64, UNIQ_ID, srt_unkey64)
#undef UNIQ_HI
#undef UNIQ_ID
#undef UNIQ_RUNS_DEF

static int unique_forward(opf_case *c) {
  const opf_dtype dt = c->dtype;
  const int64_t n = opf_numel(&c->in[0]);
  const void *x = c->in[0].data;
  void *vals = c->out[0].data;
  int64_t *counts = c->p[0] ? c->out[2].data : NULL, m = 0;
  if (!srt_wide(dt) && n > SRT_BIG && !srt_long_vec()) { /* long: key << 32 words, threaded MSD + LSD */
    uint64_t *a = c->ws, *t = a + n;
    srt_keys(x, dt, 0, 1, n, 0, 1, NULL, a);
    srt_radix64_big(a, t, n, 32);
    m = uniq_runs_packed(a, n, vals, dt, counts);
  } else if (!srt_wide(dt)) {
    uint32_t *a = c->ws, *t = a + n;
    srt_keys(x, dt, 0, 1, n, 0, 0, a, NULL);
    a = srt_sort32(a, t, n);
    m = uniq_runs32(a, n, vals, dt, counts);
  } else {
    uint64_t *a = c->ws, *t = a + n;
    srt_keys(x, dt, 0, 1, n, 0, 0, NULL, a);
    a = srt_sort64(a, t, n, 0);
    m = uniq_runs64(a, n, vals, dt, counts);
  }
  if (counts) { /* first positions to run lengths */
    for (int64_t j = 0; j < m; j++) counts[j] = (j + 1 < m ? counts[j + 1] : n) - counts[j];
  }
  const size_t es = opf_dtype_size(dt);
  memset((char *)vals + (size_t)m * es, 0, (size_t)(n - m) * es);
  if (counts) memset(counts + m, 0, (size_t)(n - m) * sizeof *counts);
  *(int64_t *)c->out[1].data = m;
  return OPF_OK;
}

static int unique_infer(opf_case *c) {
  if (c->in[0].ndim < 0) return OPF_OK;
  const int64_t n = opf_numel(&c->in[0]), none = 0;
  opf_set_out(c, 0, c->dtype, 1, &n);
  opf_set_out(c, 1, OPF_I64, 0, NULL);
  opf_set_out(c, 2, OPF_I64, 1, c->p[0] ? &n : &none);
  c->ws_bytes = (size_t)n * 16; /* two arrays of 8-byte words */
  return OPF_OK;
}

/* Reference: merge-sort the positions by value, keep the first of each run of equal values. */
static int unique_reference(opf_case *c) {
  const int64_t n = opf_numel(&c->in[0]);
  const size_t es = opf_dtype_size(c->dtype);
  int64_t *idx = opf_alloc((size_t)(2 * n + 1) * sizeof(int64_t)), m = 0;
  if (!idx) return opf_case_error(c, OPF_ENOMEM, "unique reference: out of memory");
  for (int64_t k = 0; k < n; k++) idx[k] = k;
  srt_ref_msort(&c->in[0], idx, idx + n, n, 0);
  memset(c->out[0].data, 0, c->out[0].nbytes);
  if (c->p[0]) memset(c->out[2].data, 0, c->out[2].nbytes);
  for (int64_t k = 0; k < n; k++) {
    const int same = k > 0 && !srt_ref_less(&c->in[0], idx[k - 1], idx[k]);
    if (!same)
      memcpy((char *)c->out[0].data + (size_t)m++ * es,
             (const char *)c->in[0].data + (size_t)idx[k] * es, es);
    if (c->p[0]) ((int64_t *)c->out[2].data)[m - 1]++;
  }
  *(int64_t *)c->out[1].data = m;
  opf_free(idx);
  return OPF_OK;
}

/* Values on a grid of max(2, n/4) levels over the range (integers: that many consecutive
 * values from 0), so there are many duplicates and many distinct values. */
static int fill_grid(opf_case *c, int i, opf_rng *r) {
  opf_tensor *t = &c->in[i];
  const int64_t n = opf_numel(t), levels = n / 4 > 2 ? n / 4 : 2;
  const double lo = c->op->in[i].lo, hi = c->op->in[i].hi;
  const uint64_t key = r->key;
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t k = 0; k < n; k++) {
    opf_rng d = {key, (uint64_t)k};
    const double q = floor(opf_rng_uniform(&d) * (double)levels);
    switch (t->dtype) {
    case OPF_F32: ((float *)t->data)[k] = (float)(lo + (hi - lo) * q / (double)levels); break;
    case OPF_F64: ((double *)t->data)[k] = lo + (hi - lo) * q / (double)levels; break;
    case OPF_I32: ((int32_t *)t->data)[k] = (int32_t)q; break;
    default: ((int64_t *)t->data)[k] = (int64_t)q; break;
    }
  }
  return OPF_OK;
}

/* Models: n log2 n comparisons (the sort) + n for the run pass; bytes: read x, write the
 * values, the count and the counts. */
static double unique_flops(const opf_case *c, opf_pass p) {
  const double n = (double)opf_numel(&c->in[0]);
  return opf_pass_sum(p, n > 1 ? n * log2(n) + n : n, 0);
}
static double unique_bytes(const opf_case *c, opf_pass p) {
  const double es = (double)opf_dtype_size(c->dtype), n = (double)opf_numel(&c->in[0]);
  const double b = 2 * n * es + 8 + (double)opf_numel(&c->out[2]) * 8;
  return opf_pass_sum(p, b, b);
}

OPPERF_OP(unique) = {
    .abi = OPF_OP_ABI,
    .name = "unique",
    .category = "sort",
    .summary = "sorted distinct values (outputs sized to the input; 'count' says how many)",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .lo = -4, .hi = 4, .fill = fill_grid,
            .help = "any shape, flattened (generated on a grid of numel/4 levels)"}},
    .n_out = 3,
    .out = {"values", "count", "counts"},
    .n_params = 1,
    .params = {{.name = "return_counts", .type = OPF_P_BOOL, .def = 0,
                .help = "also fill 'counts' (int64 occurrences of each value; empty otherwise)"}},
    .shapes = {{"standard", "x=1024x1024"},
               {"standard", "x=1024x1024 return_counts=true"},
               {"skewed", "x=10000x10"},
               {"skewed", "x=10x10000 return_counts=true"},
               {"skewed", "x=10000x1"},
               {"skewed", "x=100000x10"},
               {"small", "x=16x16 return_counts=true"},
               {"small", "x=1x64"},
               {"small", "x=37x3 return_counts=true"},
               {"small", "x=5"},
               {"test", "x=301x517 return_counts=true"},
               {"test", "x=100003"},
               {"large", "x=8192x8192"}},
    .infer = unique_infer,
    .forward = unique_forward,
    .reference = unique_reference,
    .flops = unique_flops,
    .bytes = unique_bytes,
};
