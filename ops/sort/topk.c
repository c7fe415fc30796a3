/* topk.c: the k largest (or smallest) elements along an axis, sorted, with their int64
 * positions; ties go to the lower position. Small k: the k-th largest of 64-element chunk
 * maxima bounds the answer from below, a branch-free pass keeps the few keys above it, and a
 * min-heap picks the best k of those; large k (or short lines): the line's radix argsort.
 * Backward scatters dy to the positions. */
#include "sort/sort_common.h"

/* Chunk of the heap pass: its keys' max is compared with the heap's worst first. */
#define TOPK_CHUNK 64

typedef struct topk_ctx {
  int64_t k;
  int largest;
} topk_ctx;

/* (key, index) with "better" = larger key, then lower index. */
static inline int topk_better(uint64_t ka, int64_t ia, uint64_t kb, int64_t ib) {
  return ka > kb || (ka == kb && ia < ib);
}

/* Min-heap (worst at the root) of k pairs: restore from position i downwards. */
static void topk_sift(uint64_t *hk, int64_t *hi, int64_t k, int64_t i) {
  for (;;) {
    int64_t w = i, a = 2 * i + 1, b = a + 1;
    if (a < k && topk_better(hk[w], hi[w], hk[a], hi[a])) w = a;
    if (b < k && topk_better(hk[w], hi[w], hk[b], hi[b])) w = b;
    if (w == i) return;
    uint64_t tk = hk[i];
    int64_t ti = hi[i];
    hk[i] = hk[w], hi[i] = hi[w], hk[w] = tk, hi[w] = ti;
    i = w;
  }
}

/* The k best of keys kb[0..c) (at positions pos[i], or i without pos) into (hk, hi), sorted
 * best first: a min-heap of the best so far, which a key must beat strictly (ties keep the
 * earlier position); then popped worst-first into the tail. */
static void topk_heap(const uint64_t *restrict kb, const int64_t *restrict pos, int64_t c,
                      int64_t k, uint64_t *restrict hk, int64_t *restrict hi) {
  for (int64_t i = 0; i < k; i++) hk[i] = kb[i], hi[i] = pos ? pos[i] : i;
  for (int64_t i = k / 2 - 1; i >= 0; i--) topk_sift(hk, hi, k, i);
  for (int64_t i = k; i < c; i++)
    if (kb[i] > hk[0]) hk[0] = kb[i], hi[0] = pos ? pos[i] : i, topk_sift(hk, hi, k, 0);
  for (int64_t m = k - 1; m > 0; m--) {
    uint64_t tk = hk[0];
    int64_t ti = hi[0];
    hk[0] = hk[m], hi[0] = hi[m], hk[m] = tk, hi[m] = ti;
    topk_sift(hk, hi, m, 0);
  }
}

/* The k best of kb[0..n) (keys of type T: 32-bit keys of the 4-byte dtypes stay 32-bit, twice
 * the keys a vector and no widening pass): a lower bound tau of the k-th best key is the k-th
 * largest of the chunk maxima (k chunks each hold an element >= tau), so one vector pass for
 * the maxima and one branch-free compaction of the keys >= tau (widened to 64 bits there) leave
 * a few candidates for the heap. Scratch: ck, cp (n each), cm (n / TOPK_CHUNK). */
#define TOPK_SELECT_DEF(T, name)                                                              \
  OPF_VEC static void name(const T *restrict kb, int64_t n, int64_t k, uint64_t *restrict ck,  \
                           int64_t *restrict cp, uint64_t *restrict cm, uint64_t *restrict hk, \
                           int64_t *restrict hi) {                                            \
    const int64_t nch = n / TOPK_CHUNK;                                                       \
    T tau = 0;                                                                                \
    if (k == 1) { /* the largest key and its first position: a vector max, then a search */   \
      T m = 0;                                                                                \
      for (int64_t i = 0; i < n; i++) m = kb[i] > m ? kb[i] : m;                              \
      int64_t i = 0;                                                                          \
      while (kb[i] != m) i++;                                                                 \
      hi[0] = i; /* (hk is not written: with n == 1 it may lie past the slot's 4n words) */   \
      return;                                                                                 \
    }                                                                                         \
    if (nch >= k) {                                                                           \
      for (int64_t c = 0; c < nch; c++) {                                                     \
        T m = 0;                                                                              \
        for (int j = 0; j < TOPK_CHUNK; j++) {                                                \
          const T v = kb[c * TOPK_CHUNK + j];                                                 \
          m = v > m ? v : m;                                                                  \
        }                                                                                     \
        cm[c] = m;                                                                            \
      }                                                                                       \
      topk_heap(cm, NULL, nch, k, hk, hi);                                                    \
      tau = (T)hk[k - 1]; /* sorted best first: the k-th largest maximum */                   \
    }                                                                                         \
    int64_t c = 0;                                                                            \
    for (int64_t i = 0; i < n; i++) {                                                         \
      ck[c] = kb[i], cp[c] = i;                                                               \
      c += kb[i] >= tau;                                                                      \
    }                                                                                         \
    topk_heap(ck, cp, c, k, hk, hi);                                                          \
  }
TOPK_SELECT_DEF(uint32_t, topk_select32)
TOPK_SELECT_DEF(uint64_t, topk_select64)
#undef TOPK_SELECT_DEF

static void topk_line(void *ctx, const opf_case *c, const opf_rgeom *g, int64_t l, void *slot) {
  const topk_ctx *t = ctx;
  const int64_t n = g->n, k = t->k;
  const size_t es = opf_dtype_size(c->dtype);
  const opf_rgeom go = {g->outer, k, g->inner}; /* output lines */
  /* slot: 4n words: keys | candidate keys | candidate positions | idx (k), heap (k), chunk
   * maxima (n / TOPK_CHUNK): the heap path has 4k < n */
  int64_t *idx = (int64_t *)slot + 3 * n;
  if (k > 1 && (k * 4 >= n || n <= SRT_SMALL)) {
    const srt_pairs p = srt_line_pairs(c, g, t->largest, l, slot);
    for (int64_t j = 0; j < k; j++) idx[j] = srt_pair_ix(&p, j);
  } else {
    uint64_t *kb = slot, *hk = (uint64_t *)idx + k;
    /* keys (largest: the key; smallest: its complement), 32 or 64 bits as the dtype's */
    if (srt_wide(c->dtype)) {
      srt_keys(c->in[0].data, c->dtype, srt_at(g, l, 0), g->inner, n, !t->largest, 0, NULL, kb);
      topk_select64(kb, n, k, kb + n, (int64_t *)(kb + 2 * n), hk + k, hk, idx);
    } else {
      uint32_t *k32 = (uint32_t *)kb;
      srt_keys(c->in[0].data, c->dtype, srt_at(g, l, 0), g->inner, n, !t->largest, 0, k32, NULL);
      topk_select32(k32, n, k, kb + n, (int64_t *)(kb + 2 * n), hk + k, hk, idx);
    }
  }
  const int64_t ob = srt_at(&go, l, 0), ib = srt_at(g, l, 0), st = g->inner;
  for (int64_t j = 0; j < k; j++) {
    const int64_t at = ob + j * st;
    ((int64_t *)c->out[1].data)[at] = idx[j];
    memcpy((char *)c->out[0].data + (size_t)at * es,
           (const char *)c->in[0].data + (size_t)(ib + idx[j] * st) * es, es);
  }
}

/* The walk: x in, values and int64 indices out (bytes per line size the group buffers). */
static srt_geom topk_geom(const opf_case *c) {
  const int axis = opf_axis(c->p[1], c->in[0].ndim); /* checked by infer */
  const size_t es = opf_dtype_size(c->dtype);
  const size_t bpl = (size_t)c->in[0].shape[axis] * es + (size_t)c->p[0] * (es + 8);
  return srt_geom_make(c, 0, axis, bpl);
}

static int topk_forward(opf_case *c) {
  const topk_ctx t = {(int64_t)c->p[0], c->p[2] != 0};
  const srt_geom sg = topk_geom(c);
  if (t.k == 0) return OPF_OK;
  if (sg.g.n == 1) { /* lines of one element (10000x1 axis=1): values = x, indices 0 */
    memcpy(c->out[0].data, c->in[0].data, c->in[0].nbytes);
    memset(c->out[1].data, 0, c->out[1].nbytes);
    return OPF_OK;
  }
  const srt_lt lt[3] = {{&c->in[0], sg.g.n, 0}, {&c->out[0], t.k, 1}, {&c->out[1], t.k, 1}};
  srt_for_lines(&sg, c, topk_line, (void *)&t, lt, 3);
  return OPF_OK;
}

/* dx = 0 (unless k = n: the selection is a permutation and writes every position), then dx at
 * each selected position = dy of that output, in dy's order: per line when the axis is the
 * innermost (one division per line), else per output row of `inner` contiguous elements (one
 * division per row), not three divisions per element as before (10000x10 k=10 axis=1: 318 ->
 * 26 us; 100000x10: 3.2 -> 0.27 ms). */
#define TOPK_SCATTER(T)                                                                       \
  do {                                                                                        \
    const T *dy = c->gout[0].data;                                                            \
    T *dx = c->gin[0].data;                                                                   \
    if (in == 1) {                                                                            \
      _Pragma("omp parallel for schedule(static) if (g.outer * k > OPF_PAR_MIN)")             \
      for (int64_t o = 0; o < g.outer; o++)                                                   \
        for (int64_t j = 0; j < k; j++) dx[o * n + idx[o * k + j]] = dy[o * k + j];           \
    } else {                                                                                  \
      _Pragma("omp parallel for schedule(static) if (g.outer * k * in > OPF_PAR_MIN)")        \
      for (int64_t r = 0; r < g.outer * k; r++) {                                             \
        const int64_t o = r / k, e0 = r * in, t0 = o * n * in;                                \
        for (int64_t i = 0; i < in; i++) dx[t0 + idx[e0 + i] * in + i] = dy[e0 + i];          \
      }                                                                                       \
    }                                                                                         \
  } while (0)

static int topk_backward(opf_case *c) {
  if (!c->gin[0].data) return OPF_OK;
  const int axis = opf_axis(c->p[1], c->in[0].ndim);
  const opf_rgeom g = opf_red_geom(&c->in[0], axis, 0);
  const int64_t k = (int64_t)c->p[0], n = g.n, in = g.inner;
  const int64_t *idx = c->out[1].data;
  if (k < n) memset(c->gin[0].data, 0, c->gin[0].nbytes);
  if (c->dtype == OPF_F32) TOPK_SCATTER(float);
  else TOPK_SCATTER(double);
  return OPF_OK;
}
#undef TOPK_SCATTER

static int topk_infer(opf_case *c) {
  if (c->in[0].ndim < 0) return OPF_OK;
  int axis = 0;
  int rc = srt_axis(c, 0, c->p[1], &axis);
  if (rc) return rc;
  const int64_t k = (int64_t)c->p[0], n = c->in[0].shape[axis];
  char s[96];
  if (k > n)
    return opf_case_error(c, OPF_EINVAL, "k %lld is larger than the size %lld of axis %d of input 'x' %s",
                          (long long)k, (long long)n, axis, opf_shape_str(&c->in[0], s, sizeof s));
  if (n > UINT32_MAX)
    return opf_case_error(c, OPF_EINVAL, "topk: a line of %lld elements exceeds 2^32", (long long)n);
  int64_t shape[OPF_MAX_DIMS];
  memcpy(shape, c->in[0].shape, sizeof shape);
  shape[axis] = k;
  opf_set_out(c, 0, c->dtype, c->in[0].ndim, shape);
  opf_set_out(c, 1, OPF_I64, c->in[0].ndim, shape);
  const srt_geom sg = topk_geom(c);
  c->ws_bytes = sg.slot * (size_t)sg.slots;
  return OPF_OK;
}

/* Reference: each line merge-sorted (stable; descending for largest), the first k taken. */
static int topk_reference(opf_case *c) {
  const opf_rgeom g = opf_red_geom(&c->in[0], opf_axis(c->p[1], c->in[0].ndim), 0);
  return srt_ref_lines(c, &g, c->p[2] != 0, (int64_t)c->p[0], c->out[0].data, c->out[1].data);
}

/* Models: one compare per input element (the selection pass) plus k log2 k for ordering the
 * result per line; backward none (a scatter). Bytes: read x, write k values and k int64
 * indices per line; backward read dy and the indices, write dx. */
static double topk_flops(const opf_case *c, opf_pass p) {
  const double k = c->p[0], lines = (double)opf_numel(&c->out[0]) / (k > 0 ? k : 1);
  return opf_pass_sum(p, (double)opf_numel(&c->in[0]) + (k > 1 ? lines * k * log2(k) : 0), 0);
}
static double topk_bytes(const opf_case *c, opf_pass p) {
  const double es = (double)opf_dtype_size(c->dtype), x = (double)opf_numel(&c->in[0]) * es,
               no = (double)opf_numel(&c->out[0]);
  return opf_pass_sum(p, x + no * (es + 8), no * (es + 8) + x);
}

OPPERF_OP(topk) = {
    .abi = OPF_OP_ABI,
    .name = "topk",
    .category = "sort",
    .summary = "k largest (or smallest) values along an axis, sorted, with int64 positions",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -4, .hi = 4}},
    .n_out = 2,
    .out = {"values", "indices"},
    .n_params = 3,
    .params = {{.name = "k", .type = OPF_P_INT, .def = 1, .min = 0, .max = 1e12,
                .help = "how many elements per line (at most the axis size)"},
               {.name = "axis", .type = OPF_P_AXIS, .def = -1, .min = -8, .max = 7,
                .help = "axis to select along (default -1, the last)"},
               {.name = "largest", .type = OPF_P_BOOL, .def = 1,
                .help = "the largest (default) or the smallest elements"}},
    .shapes = {{"standard", "x=1024x1024 k=1 axis=1"}, {"standard", "x=1024x1024 k=10 axis=1"},
               {"standard", "x=1024x1024 k=10 axis=0"}, {"skewed", "x=10000x10 k=1 axis=1"},
               {"skewed", "x=10000x10 k=10 axis=1"}, {"skewed", "x=10000x10 k=10 axis=0"},
               {"skewed", "x=10x10000 k=10 axis=1"}, {"skewed", "x=10x10000 k=1 axis=0"},
               {"skewed", "x=10000x1 k=10 axis=0"}, {"skewed", "x=10000x1 k=1 axis=1"},
               {"skewed", "x=100000x10 k=10 axis=0"}, {"skewed", "x=100000x10 k=10 axis=1"},
               {"small", "x=16x16 k=3"},            {"small", "x=16x16 k=1 axis=0"},
               {"small", "x=1x64 k=10"},            {"small", "x=300x3 k=10 axis=0 largest=false"},
               {"small", "x=4x5x6 k=2 axis=1"},     {"small", "x=16x1 k=1 axis=1"},
               {"small", "x=1x64 k=1 axis=0"},      {"test", "x=301x517 k=10"},
               {"test", "x=301x517 k=1 axis=0 largest=false"}, {"test", "x=3x1000x7 k=100 axis=1"},
               {"test", "x=7x5000 k=2000"},         {"large", "x=8192x8192 k=10 axis=1"},
               {"large", "x=8192x8192 k=10 axis=0"}, {"huge", "x=46341x46341 k=10 axis=1"}},
    .infer = topk_infer,
    .forward = topk_forward,
    .backward = topk_backward,
    .reference = topk_reference,
    .flops = topk_flops,
    .bytes = topk_bytes,
};
