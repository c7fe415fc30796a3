/* boolean_mask.c: y = x[mask], the rows (along axis 0) of x whose bool mask entry is true, in
 * order. The output size depends on the data, so y is sized for the worst case (every row
 * kept) and the second output `count` (int64 scalar) says how many leading rows of y are
 * valid; rows of y from count on are left unwritten (unspecified). Forward-only. Threads
 * count their chunk's true entries, take prefix offsets, then compact their rows. */
#include "indexing.h"

#ifdef OPF_X86
#include <immintrin.h>
#endif

enum { IN_X = 0, IN_M = 1 };
#define BM_MAXT 256 /* threads whose counts fit the on-stack prefix table */

/* Branch-free compaction of single elements: write every element at the current slot and
 * advance the slot only on a true one. Only [0, last true] is walked so the speculative writes
 * stay inside this chunk's own output range. */
#define BM_COMPACT(T, sfx)                                                                     \
  static void bm_compact_##sfx(T *restrict y, const T *restrict x, const uint8_t *restrict m, \
                               int64_t n) {                                                    \
    while (n > 0 && !m[n - 1]) n--;                                                            \
    int64_t k = 0;                                                                             \
    for (int64_t i = 0; i < n; i++) {                                                          \
      y[k] = x[i];                                                                             \
      k += m[i] != 0;                                                                          \
    }                                                                                          \
  }
BM_COMPACT(uint32_t, 4)
BM_COMPACT(uint64_t, 8)

/* AVX-512 compaction, 16 (8) elements per step: compress in a register, then a masked store
 * of just the kept elements (a compress straight to memory is microcoded and slow on Zen 4/5,
 * and a full store would spill into the next thread's rows). About 6x the scalar loop. */
#ifdef OPF_X86
#define BM_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))
BM_TARGET static void bm_compress_4(uint32_t *restrict y, const uint32_t *restrict x,
                                    const uint8_t *restrict m, int64_t n) {
  int64_t k = 0, i = 0;
  for (; i + 16 <= n; i += 16) {
    __m128i mb = _mm_loadu_si128((const __m128i *)(m + i));
    __mmask16 mk = _mm_test_epi8_mask(mb, mb);
    __m512i v = _mm512_maskz_compress_epi32(mk, _mm512_loadu_si512(x + i));
    int cnt = __builtin_popcount(mk);
    _mm512_mask_storeu_epi32(y + k, (__mmask16)((1u << cnt) - 1), v);
    k += cnt;
  }
  for (; i < n; i++)
    if (m[i]) y[k++] = x[i];
}
BM_TARGET static void bm_compress_8(uint64_t *restrict y, const uint64_t *restrict x,
                                    const uint8_t *restrict m, int64_t n) {
  int64_t k = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i mb = _mm_loadl_epi64((const __m128i *)(m + i));
    __mmask8 mk = (__mmask8)_mm_test_epi8_mask(mb, mb);
    __m512i v = _mm512_maskz_compress_epi64(mk, _mm512_loadu_si512(x + i));
    int cnt = __builtin_popcount(mk);
    _mm512_mask_storeu_epi64(y + k, (__mmask8)((1u << cnt) - 1), v);
    k += cnt;
  }
  for (; i < n; i++)
    if (m[i]) y[k++] = x[i];
}

static int bm_have_avx512(void) {
  static int have = -1; /* benign race: every thread computes the same value */
  if (have < 0)
    have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
  return have;
}
#else
/* Other architectures (arm64): the branch-free scalar compaction above. A NEON compress would
 * be a tbl byte shuffle per 4 elements from a 16-entry table indexed by the mask nibble. */
static int bm_have_avx512(void) { return 0; }
#define bm_compress_4 bm_compact_4
#define bm_compress_8 bm_compact_8
#endif

OPF_VEC static int64_t bm_count(const uint8_t *restrict m, int64_t n) {
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++) k += m[i] != 0;
  return k;
}

/* Rows [lo, hi) of x into y starting at row k. */
static void bm_rows(const opf_case *c, int64_t lo, int64_t hi, int64_t k) {
  const opf_tensor *x = &c->in[IN_X];
  const uint8_t *m = c->in[IN_M].data;
  const size_t es = opf_dtype_size(c->dtype);
  const int64_t inner = x->shape[0] ? opf_numel(x) / x->shape[0] : 0;
  const size_t row = (size_t)inner * es;
  char *y = c->out[0].data;
  const char *xs = x->data;
  if (inner == 1 && es == 4 && bm_have_avx512())
    bm_compress_4((uint32_t *)y + k, (const uint32_t *)xs + lo, m + lo, hi - lo);
  else if (inner == 1 && es == 8 && bm_have_avx512())
    bm_compress_8((uint64_t *)y + k, (const uint64_t *)xs + lo, m + lo, hi - lo);
  else if (inner == 1 && es == 4)
    bm_compact_4((uint32_t *)y + k, (const uint32_t *)xs + lo, m + lo, hi - lo);
  else if (inner == 1 && es == 8)
    bm_compact_8((uint64_t *)y + k, (const uint64_t *)xs + lo, m + lo, hi - lo);
  else
    for (int64_t i = lo; i < hi; i++)
      if (m[i]) lin_copy(y + (size_t)(k++) * row, xs + (size_t)i * row, row);
}

static int bm_forward(opf_case *c) {
  const opf_tensor *x = &c->in[IN_X];
  const int64_t N = x->shape[0], n = opf_numel(x);
  const uint8_t *m = c->in[IN_M].data;
  int64_t cnt[BM_MAXT + 1];
  int nt = omp_get_max_threads();
  if (nt > BM_MAXT) nt = BM_MAXT;
  if (n < OPF_PAR_MIN || N < 2 * nt) nt = 1;
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    const int t = omp_get_thread_num(), T = omp_get_num_threads();
    const int64_t lo = N * t / T, hi = N * (t + 1) / T;
    cnt[t] = bm_count(m + lo, hi - lo);
#pragma omp barrier
    int64_t k = 0;
    for (int s = 0; s < t; s++) k += cnt[s];
    bm_rows(c, lo, hi, k);
    if (t == T - 1) *(int64_t *)c->out[1].data = k + cnt[t];
  }
  return OPF_OK;
}

/* By the definition: keep rows in order, count them. */
static int bm_reference(opf_case *c) {
  const opf_tensor *x = &c->in[IN_X];
  const uint8_t *m = c->in[IN_M].data;
  const size_t row = x->shape[0] ? x->nbytes / (size_t)x->shape[0] : 0;
  int64_t k = 0;
  for (int64_t i = 0; i < x->shape[0]; i++)
    if (m[i]) memcpy((char *)c->out[0].data + (size_t)(k++) * row, (const char *)x->data + (size_t)i * row, row);
  *(int64_t *)c->out[1].data = k;
  return OPF_OK;
}

static int bm_infer(opf_case *c) {
  opf_tensor *x = &c->in[IN_X], *m = &c->in[IN_M];
  char sx[96], sm[96];
  if (x->ndim < 1)
    return opf_case_error(c, OPF_EINVAL, "x needs a shape of rank >= 1 (e.g. x=1024x1024)");
  if (m->ndim < 0) opf_tensor_set_shape(m, OPF_BOOL, 1, x->shape);
  if (m->ndim != 1 || m->shape[0] != x->shape[0])
    return opf_case_error(c, OPF_EINVAL, "mask=%s must be 1-D with x=%s's first dim (%lld)",
                          opf_shape_str(m, sm, sizeof sm), opf_shape_str(x, sx, sizeof sx),
                          (long long)x->shape[0]);
  opf_set_out(c, 0, c->dtype, x->ndim, x->shape); /* the worst case: every row kept */
  opf_set_out(c, 1, OPF_I64, 0, NULL);
  return OPF_OK;
}

static double bm_flops(const opf_case *c, opf_pass p) {
  (void)c, (void)p;
  return 0;
}
/* Worst-case traffic (the kept count is data-dependent): read the mask and x, write every row
 * of y and the count. Forward-only: every pass is the forward. */
static double bm_bytes(const opf_case *c, opf_pass p) {
  (void)p;
  double x = (double)opf_numel(&c->in[IN_X]) * (double)opf_dtype_size(c->dtype);
  return (double)opf_numel(&c->in[IN_M]) + 2 * x + 8;
}

OPPERF_OP(boolean_mask) = {
    .abi = OPF_OP_ABI,
    .name = "boolean_mask",
    .category = "indexing",
    .summary = "rows of x where mask is true; y sized for all rows, count says how many are valid",
    .dtypes = OPF_DT_ALL,
    .n_in = 2,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .lo = -100, .hi = 100, .help = "rows to select from"},
           {.name = "mask", .dtype = OPF_BOOL,
            .help = "bool per row of x (default (x.shape[0],), a fair coin)"}},
    .n_out = 2,
    .out = {"y", "count"},
    .shapes = {{"standard", "x=1024x1024"},
               {"standard", "x=1048576"},
               {"skewed", "x=10000x10"},
               {"skewed", "x=10x10000"},
               {"skewed", "x=100000x16"},
               {"small", "x=16x16"},
               {"small", "x=1x64"},
               {"small", "x=37x3"},
               {"small", "x=64"},
               {"small", "x=3x4x5"},
               {"test", "x=301x517"},
               {"test", "x=100003"},
               {"test", "x=50001x3"},
               {"large", "x=8192x8192"},
               {"large", "x=67108864"}},
    .infer = bm_infer,
    .forward = bm_forward,
    .reference = bm_reference,
    .flops = bm_flops,
    .bytes = bm_bytes,
};
