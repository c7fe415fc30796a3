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

/* One freed large block is kept for the next large allocation it can hold (a one-entry
 * cache, as a framework's caching allocator keeps blocks): glibc serves a 2 MiB-aligned
 * request of several MiB by mmap every time (its dynamic mmap threshold rises to the freed
 * chunk's size, and the next request of that same size is not below it), so each
 * allocation paid mmap, a huge-page fault and munmap: `empty` of 1024x1024 float32 took 17 us
 * against NumPy's 1 us, and any operator that allocates a large scratch per call paid the
 * same. Blocks up to SPARE_MAX are kept; never under AddressSanitizer (it would hide a use
 * after free of the kept block). */
#define SPARE_MAX ((size_t)64 << 20)
#if defined(__SANITIZE_ADDRESS__)
#define SPARE_ON 0
#else
#define SPARE_ON 1
#endif
static _Atomic(unsigned char *) g_spare; /* payload of the kept block, or NULL */

/* Bytes of the block behind a payload of `bytes` (huge: 2 MiB-aligned, header inside). */
static size_t block_total(size_t bytes, int huge) {
  size_t total = (bytes + (huge ? HUGE_ALIGN : HDR) + OPF_ALIGN - 1) / OPF_ALIGN * OPF_ALIGN;
  return huge ? (total + HUGE_ALIGN - 1) / HUGE_ALIGN * HUGE_ALIGN : total;
}

/* Header: requested bytes, then the block's start. */
void *opf_alloc(size_t bytes) {
  if (bytes > SIZE_MAX - 2 * HUGE_ALIGN) return NULL;
  int huge = bytes >= HUGE_MIN && !huge_off();
  size_t lead = huge ? HUGE_ALIGN : HDR;
  size_t total = block_total(bytes, huge);
  unsigned char *base = NULL, *p = NULL;
  if (huge && SPARE_ON) {
    unsigned char *k = atomic_exchange(&g_spare, NULL);
    if (k) {
      size_t kb;
      memcpy(&kb, k - HDR, sizeof kb);
      memcpy(&base, k - HDR + sizeof kb, sizeof base);
      if (block_total(kb, 1) >= total) p = k; /* (its huge-page advice stands) */
      else free(base), base = NULL;
    }
  }
  if (!p) {
    base = aligned_alloc(huge ? HUGE_ALIGN : OPF_ALIGN, total);
    if (!base) return NULL;
    p = base + lead;
    if (huge) madvise(p, total - lead, MADV_HUGEPAGE);
  }
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
  if (SPARE_ON && bytes >= HUGE_MIN && (size_t)((unsigned char *)p - base) == HUGE_ALIGN &&
      block_total(bytes, 1) <= SPARE_MAX) {
    unsigned char *old = atomic_exchange(&g_spare, (unsigned char *)p);
    if (!old) return;
    memcpy(&base, old - HDR + sizeof bytes, sizeof base);
  }
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
