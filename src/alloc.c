/* alloc.c: the tracked allocator. Every tensor and workspace byte goes through here so the
 * harness can report allocation bytes, counts and peak live bytes per case. Counters are
 * atomics because kernels may allocate from OpenMP worker threads. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "opperf/tensor.h"

/* A 64-byte header in front of each block keeps the payload 64-byte aligned and remembers
 * the size for the live-bytes accounting on free. */
#define HDR OPF_ALIGN

static atomic_uint_least64_t g_bytes, g_allocs, g_frees, g_live, g_peak;

static void peak_update(uint64_t live) {
  uint64_t cur = atomic_load_explicit(&g_peak, memory_order_relaxed);
  while (live > cur &&
         !atomic_compare_exchange_weak_explicit(&g_peak, &cur, live, memory_order_relaxed,
                                                memory_order_relaxed)) {
  }
}

/* Large tensors on transparent huge pages (when the system's THP mode is "madvise", as on
 * Debian): 4 KiB pages make big transposes and gathers stall on TLB misses. The advice covers
 * the 2 MiB-aligned interior; pages are faulted in later, when the inputs are filled.
 * OPPERF_NO_HUGEPAGES=1 turns it off (to measure the effect). */
static void advise_huge(void *p, size_t n) {
  static int off = -1;
  if (off < 0) off = getenv("OPPERF_NO_HUGEPAGES") && *getenv("OPPERF_NO_HUGEPAGES") == '1';
  if (off || n < (4u << 20)) return;
  uintptr_t lo = ((uintptr_t)p + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1);
  uintptr_t hi = ((uintptr_t)p + n) & ~(uintptr_t)((2u << 20) - 1);
  if (hi > lo) madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

void *opf_alloc(size_t bytes) {
  if (bytes > SIZE_MAX - 2 * HDR) return NULL;
  size_t total = (bytes + HDR + OPF_ALIGN - 1) / OPF_ALIGN * OPF_ALIGN;
  unsigned char *base = aligned_alloc(OPF_ALIGN, total);
  if (!base) return NULL;
  advise_huge(base, total);
  memcpy(base, &bytes, sizeof bytes);
  atomic_fetch_add_explicit(&g_bytes, bytes, memory_order_relaxed);
  atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
  uint64_t live = atomic_fetch_add_explicit(&g_live, bytes, memory_order_relaxed) + bytes;
  peak_update(live);
  return base + HDR;
}

void *opf_calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) return NULL;
  void *p = opf_alloc(n * size);
  if (p) memset(p, 0, n * size);
  return p;
}

void opf_free(void *p) {
  if (!p) return;
  unsigned char *base = (unsigned char *)p - HDR;
  size_t bytes;
  memcpy(&bytes, base, sizeof bytes);
  atomic_fetch_add_explicit(&g_frees, 1, memory_order_relaxed);
  atomic_fetch_sub_explicit(&g_live, bytes, memory_order_relaxed);
  free(base);
}

void opf_alloc_stats_get(opf_alloc_stats *s) {
  s->bytes_allocated = atomic_load(&g_bytes);
  s->n_allocs = atomic_load(&g_allocs);
  s->n_frees = atomic_load(&g_frees);
  s->live_bytes = atomic_load(&g_live);
  s->peak_live_bytes = atomic_load(&g_peak);
}

void opf_alloc_stats_reset(void) {
  atomic_store(&g_bytes, 0);
  atomic_store(&g_allocs, 0);
  atomic_store(&g_frees, 0);
  atomic_store(&g_peak, atomic_load(&g_live));
}
