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

/* Large tensors (4 MiB and more) start on a 2 MiB boundary and are advised onto transparent
 * huge pages (Debian's THP mode is "madvise"): 4 KiB pages make big transposes and gathers
 * stall on TLB misses. The alignment gives every process the same page layout: at a random
 * 4 KiB offset a 4 MiB tensor gets one or two huge pages depending on where mmap put it. (It
 * did not remove the run-to-run time shifts seen by `opperf compare` on the shared VM: those
 * have other causes.) The block begins 2 MiB before the payload (the header at its end; the
 * space before it is never touched, so costs no memory).
 * OPPERF_NO_HUGEPAGES=1 turns both off (to measure the effect). */
#define HUGE_MIN ((size_t)4 << 20)
#define HUGE_ALIGN ((size_t)2 << 20)

static int huge_off(void) {
  static int off = -1;
  if (off < 0) off = getenv("OPPERF_NO_HUGEPAGES") && *getenv("OPPERF_NO_HUGEPAGES") == '1';
  return off;
}

/* Header: requested bytes, then the block's start. */
void *opf_alloc(size_t bytes) {
  if (bytes > SIZE_MAX - 2 * HUGE_ALIGN) return NULL;
  int huge = bytes >= HUGE_MIN && !huge_off();
  size_t lead = huge ? HUGE_ALIGN : HDR;
  size_t total = (bytes + lead + OPF_ALIGN - 1) / OPF_ALIGN * OPF_ALIGN;
  if (huge) total = (total + HUGE_ALIGN - 1) / HUGE_ALIGN * HUGE_ALIGN;
  unsigned char *base = aligned_alloc(huge ? HUGE_ALIGN : OPF_ALIGN, total);
  if (!base) return NULL;
  unsigned char *p = base + lead;
  if (huge) madvise(p, total - lead, MADV_HUGEPAGE);
  memcpy(p - HDR, &bytes, sizeof bytes);
  memcpy(p - HDR + sizeof bytes, &base, sizeof base);
  atomic_fetch_add_explicit(&g_bytes, bytes, memory_order_relaxed);
  atomic_fetch_add_explicit(&g_allocs, 1, memory_order_relaxed);
  uint64_t live = atomic_fetch_add_explicit(&g_live, bytes, memory_order_relaxed) + bytes;
  peak_update(live);
  return p;
}

void *opf_calloc(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) return NULL;
  void *p = opf_alloc(n * size);
  if (p) memset(p, 0, n * size);
  return p;
}

void opf_free(void *p) {
  if (!p) return;
  unsigned char *hdr = (unsigned char *)p - HDR, *base;
  size_t bytes;
  memcpy(&bytes, hdr, sizeof bytes);
  memcpy(&base, hdr + sizeof bytes, sizeof base);
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
