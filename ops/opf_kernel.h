/* opf_kernel.h: shared helpers for operator files in ops/: runtime ISA dispatch, OpenMP
 * chunking, broadcasting shapes and output set-up. Internal to the library (not installed). */
#ifndef OPPERF_OPF_KERNEL_H
#define OPPERF_OPF_KERNEL_H

#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "opperf/op.h"

/* Runtime ISA dispatch: GCC builds AVX-512, AVX2+FMA and baseline clones and picks one at load
 * time. Put it on serial inner-loop functions (not on functions containing `omp parallel`);
 * valgrind (no AVX-512) transparently gets the AVX2 clone. Other architectures (arm64) compile
 * one version for the baseline ISA: NEON is part of every arm64 CPU, so -O3's auto-vectoriser
 * already uses it, and GCC 12 has no target_clones on aarch64 (SVE clones would need GCC 14). */
#if defined(__x86_64__) || defined(__i386__)
#define OPF_X86 1
#endif
/* OPF_NO_ISA_CLONES (CMake OPPERF_ISA_CLONES=OFF, the default of sanitizer builds): one
 * baseline version of each kernel, the same source the clones compile. */
#if defined(OPF_X86) && !defined(OPF_NO_ISA_CLONES)
#define OPF_VEC __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define OPF_VEC
#endif

/* Below this many elements of work a kernel stays on one thread: waking the pool costs more. */
#define OPF_PAR_MIN 32768

/* Run fn over [0, n) in contiguous chunks, one per OpenMP thread (serial when n < min_par). */
typedef void (*opf_range_fn)(int64_t lo, int64_t hi, void *ctx);
static inline void opf_parallel_range(int64_t n, int64_t min_par, opf_range_fn fn, void *ctx) {
  if (n < min_par || omp_get_max_threads() == 1) {
    fn(0, n, ctx);
    return;
  }
#pragma omp parallel
  {
    int nt = omp_get_num_threads(), t = omp_get_thread_num();
    int64_t chunk = (n + nt - 1) / nt;
    int64_t lo = (int64_t)t * chunk, hi = lo + chunk < n ? lo + chunk : n;
    if (lo < hi) fn(lo, hi, ctx);
  }
}

/* Set output i of a case to a contiguous shape. */
static inline void opf_set_out(opf_case *c, int i, opf_dtype dt, int ndim, const int64_t *shape) {
  opf_tensor_set_shape(&c->out[i], dt, ndim, shape);
}

/* NumPy broadcasting of a and b into (ndim, shape); OPF_EINVAL with a message naming both
 * shapes when they are incompatible. */
static inline int opf_broadcast_shape(opf_case *c, const opf_tensor *a, const opf_tensor *b,
                                      int *ndim, int64_t *shape) {
  int nd = a->ndim > b->ndim ? a->ndim : b->ndim;
  for (int k = 0; k < nd; k++) {
    int ia = a->ndim - nd + k, ib = b->ndim - nd + k;
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      char sa[96], sb[96];
      return opf_case_error(c, OPF_EINVAL, "shapes %s and %s cannot be broadcast (dim %d: %lld vs %lld)",
                            opf_shape_str(a, sa, sizeof sa), opf_shape_str(b, sb, sizeof sb), k,
                            (long long)da, (long long)db);
    }
    shape[k] = da == 1 ? db : da;
  }
  *ndim = nd;
  return OPF_OK;
}

/* Same shape check with a clear message. */
static inline int opf_same_shape(opf_case *c, const opf_tensor *a, const opf_tensor *b,
                                 const char *an, const char *bn) {
  int same = a->ndim == b->ndim;
  for (int k = 0; same && k < a->ndim; k++) same = a->shape[k] == b->shape[k];
  if (same) return OPF_OK;
  char sa[96], sb[96];
  return opf_case_error(c, OPF_EINVAL, "'%s' %s and '%s' %s must have the same shape", an,
                        opf_shape_str(a, sa, sizeof sa), bn, opf_shape_str(b, sb, sizeof sb));
}

#endif
