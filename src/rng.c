/* rng.c: counter-based random inputs. Element k of stream s under seed S is a pure function of
 * (S, s, k), so inputs are bit-identical for a seed whatever the thread count or fill order. */
#include <math.h>

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

void opf_fill_uniform(opf_tensor *t, uint64_t seed, uint64_t stream, double lo, double hi) {
  const uint64_t key = stream_key(seed, stream);
  const int64_t n = opf_numel(t);
  const double w = hi - lo;
  switch (t->dtype) {
  case OPF_F32: {
    float *d = t->data;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t k = 0; k < n; k++) d[k] = (float)(lo + w * u01(at(key, (uint64_t)k)));
    break;
  }
  case OPF_F64: {
    double *d = t->data;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t k = 0; k < n; k++) d[k] = lo + w * u01(at(key, (uint64_t)k));
    break;
  }
  case OPF_I32: {
    int32_t *d = t->data;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t k = 0; k < n; k++) d[k] = (int32_t)floor(lo + w * u01(at(key, (uint64_t)k)));
    break;
  }
  case OPF_I64: {
    int64_t *d = t->data;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t k = 0; k < n; k++) d[k] = (int64_t)floor(lo + w * u01(at(key, (uint64_t)k)));
    break;
  }
  case OPF_BOOL: { /* 1 where the draw in [lo, hi) is positive; [0, 0) means a fair coin */
    uint8_t *d = t->data;
    double l = lo, h = hi;
    if (l == 0 && h == 0) l = -1, h = 1;
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t k = 0; k < n; k++) d[k] = l + (h - l) * u01(at(key, (uint64_t)k)) > 0;
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
