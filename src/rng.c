/* rng.c: counter-based random inputs. Element k of stream s under seed S is a pure function of
 * (S, s, k), so inputs are bit-identical for a seed whatever the thread count or fill order. */
#include <math.h>
#include <omp.h>

#include "opperf/op.h"

/* splitmix64's finaliser: a bijective 64-bit mixer with good avalanche. */
static inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static inline uint64_t stream_key(uint64_t seed, uint64_t stream) {
  return mix64(seed * 0x9e3779b97f4a7c15ULL + mix64(stream + 0x632be59bd9b4e019ULL));
}

static inline uint64_t at(uint64_t key, uint64_t k) {
  return mix64(key ^ mix64(k + 0x9e3779b97f4a7c15ULL));
}

static inline double u01(uint64_t x) { return (double)(x >> 11) * 0x1.0p-53; }

void opf_rng_init(opf_rng *r, uint64_t seed, uint64_t stream) {
  r->key = stream_key(seed, stream);
  r->ctr = 0;
}
uint64_t opf_rng_u64(opf_rng *r) { return at(r->key, r->ctr++); }
double opf_rng_uniform(opf_rng *r) { return u01(opf_rng_u64(r)); }

/* The fill loops, cloned per x86-64 level like the operators' kernels: with AVX-512DQ the
 * 64-bit multiplies and the u64 -> double conversions vectorise (one element costs about 10 ns
 * scalar; the default suite fills some 4 G elements). Same values on every path: no FMA. */
/* fp-contract=off: an FMA would round lo + w * u once instead of twice and change the values
 * (GNU C contracts by default, and every arm64 core has FMA): same inputs on x86 and arm64. */
#if defined(__GNUC__) && !defined(__clang__)
#define FILL_EXACT __attribute__((optimize("fp-contract=off")))
#else
#define FILL_EXACT
#endif
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define FILL_VEC __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) FILL_EXACT
#else
#define FILL_VEC FILL_EXACT
#endif
#define FILL_FN(name, T, EXPR)                                                                   \
  FILL_VEC static void name(T *d, int64_t a, int64_t b, uint64_t key, double lo, double w) {     \
    for (int64_t k = a; k < b; k++) {                                                            \
      const double v = lo + w * u01(at(key, (uint64_t)k));                                       \
      d[k] = EXPR;                                                                               \
    }                                                                                            \
  }
FILL_FN(fill_f32, float, (float)v)
FILL_FN(fill_f64, double, v)
FILL_FN(fill_i32, int32_t, (int32_t)floor(v))
FILL_FN(fill_i64, int64_t, (int64_t)floor(v))
FILL_FN(fill_bool, uint8_t, v > 0)

/* Calls fn on [0, n) split into one contiguous range per thread (serial below 65536). */
#define FILL_RANGES(fn, d, n, key, lo, w)                                                        \
  do {                                                                                           \
    _Pragma("omp parallel if (n > 65536)") {                                                     \
      int64_t nt = omp_get_num_threads(), id = omp_get_thread_num();                             \
      fn(d, n * id / nt, n * (id + 1) / nt, key, lo, w);                                          \
    }                                                                                            \
  } while (0)

void opf_fill_uniform(opf_tensor *t, uint64_t seed, uint64_t stream, double lo, double hi) {
  const uint64_t key = stream_key(seed, stream);
  const int64_t n = opf_numel(t);
  const double w = hi - lo;
  switch (t->dtype) {
  case OPF_F32: FILL_RANGES(fill_f32, (float *)t->data, n, key, lo, w); break;
  case OPF_F64: FILL_RANGES(fill_f64, (double *)t->data, n, key, lo, w); break;
  case OPF_I32: FILL_RANGES(fill_i32, (int32_t *)t->data, n, key, lo, w); break;
  case OPF_I64: FILL_RANGES(fill_i64, (int64_t *)t->data, n, key, lo, w); break;
  case OPF_BOOL: { /* 1 where the draw in [lo, hi) is positive; [0, 0) means a fair coin */
    double l = lo, h = hi;
    if (l == 0 && h == 0) l = -1, h = 1;
    FILL_RANGES(fill_bool, (uint8_t *)t->data, n, key, l, h - l);
    break;
  }
  default: break;
  }
}

void opf_fill_index(opf_tensor *t, uint64_t seed, uint64_t stream, int64_t bound) {
  const uint64_t key = stream_key(seed, stream);
  const int64_t n = opf_numel(t);
  if (bound < 1) bound = 1;
  if (t->dtype == OPF_I32) {
    int32_t *d = t->data;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t k = 0; k < n; k++) d[k] = (int32_t)(at(key, (uint64_t)k) % (uint64_t)bound);
  } else if (t->dtype == OPF_I64) {
    int64_t *d = t->data;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t k = 0; k < n; k++) d[k] = (int64_t)(at(key, (uint64_t)k) % (uint64_t)bound);
  } else {
    opf_fill_uniform(t, seed, stream, 0, (double)bound);
  }
}
