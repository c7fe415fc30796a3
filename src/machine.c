/* machine.c: the machine's ceilings for rooflines: peak FLOP/s (an FMA throughput kernel per
 * vector ISA, chosen at run time) and the bandwidth of each memory level (L1, L2, L3 from sysfs,
 * DRAM: a read-only and a STREAM-triad kernel on working sets of half of each cache, and the
 * triad far beyond the last-level cache), on 1 thread and on all threads; the JSON cache file
 * (save / load, refused when measured on another CPU or by an older schema); the single-ceiling
 * roofline bound (the cache-aware placement is src/roofline.c).
 * Library code: no printing, errors go to opf_err. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <pwd.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define OPF_MACHINE_X86 1
#endif

#include "opperf/harness.h"
#include "opperf/machine.h"
#include "opperf/report.h"

/* 2: per-level bandwidths ("levels"); a schema-1 file (DRAM triad only) is refused. */
#define MACHINE_SCHEMA 2
#define TRIAD_WINDOWS 8

/* ------------------------------------------------------------------------------------------
 * FMA throughput kernels.
 * Each iteration updates NACC independent vector accumulators acc = acc * m + c. An FMA has a
 * latency of 4-5 cycles and 2 pipes issue one each per cycle, so at least ~10 chains must be
 * in flight to keep both pipes busy; 16 (AVX-512: 32 registers) and 12 (AVX2 / SSE2: 16
 * registers, 2 kept for m and c) hide it with margin. m < 1 makes the accumulators converge to
 * c / (1 - m): no overflow, no denormals whatever the iteration count. Intrinsics rather than
 * auto-vectorisation so the instruction is certain (vfmadd...ps/pd on zmm / ymm); each function
 * carries its own target attribute and is only called after __builtin_cpu_supports said yes,
 * so valgrind (no AVX-512 in its CPUID) gets the AVX2 kernel.
 * ------------------------------------------------------------------------------------------ */

typedef double (*fma_fn)(long iters);   /* returns a value depending on every accumulator */

typedef struct fma_kernel {
  const char *isa;
  int lanes[2];   /* [f32, f64] elements per vector */
  int nacc;       /* vector accumulators per iteration; 2 FLOP per lane each (an FMA, or
                   * SSE2's mul + add) */
  fma_fn fn[2];
} fma_kernel;

#define FMA_M 0.99999f
#define FMA_C 1e-5f

#ifdef OPF_MACHINE_X86

#define DEF_FMA(name, attr, vec, set1, op, add, store_t, NACC, scal)                          \
  __attribute__((target(attr), noinline)) static double name(long iters) {                   \
    vec acc[NACC];                                                                           \
    const vec m = set1((scal)FMA_M), c = set1((scal)FMA_C);                                  \
    for (int k = 0; k < NACC; k++) acc[k] = set1((scal)k * (scal)1e-3);                      \
    for (long i = 0; i < iters; i++) {                                                       \
      _Pragma("GCC unroll 16") for (int k = 0; k < NACC; k++) acc[k] = op(acc[k], m, c);     \
    }                                                                                        \
    vec s = acc[0];                                                                          \
    for (int k = 1; k < NACC; k++) s = add(s, acc[k]);                                       \
    scal out[sizeof(vec) / sizeof(scal)];                                                    \
    store_t(out, s);                                                                         \
    double r = 0;                                                                            \
    for (size_t k = 0; k < sizeof(vec) / sizeof(scal); k++) r += (double)out[k];            \
    return r;                                                                                \
  }

#define SSE_MULADD_PS(a, b, c) _mm_add_ps(_mm_mul_ps(a, b), c)
#define SSE_MULADD_PD(a, b, c) _mm_add_pd(_mm_mul_pd(a, b), c)

DEF_FMA(fma_f32_avx512, "avx512f", __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps,
        _mm512_storeu_ps, 16, float)
DEF_FMA(fma_f64_avx512, "avx512f", __m512d, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_add_pd,
        _mm512_storeu_pd, 16, double)
DEF_FMA(fma_f32_avx2, "avx2,fma", __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps,
        _mm256_storeu_ps, 12, float)
DEF_FMA(fma_f64_avx2, "avx2,fma", __m256d, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_add_pd,
        _mm256_storeu_pd, 12, double)
DEF_FMA(fma_f32_sse2, "sse2", __m128, _mm_set1_ps, SSE_MULADD_PS, _mm_add_ps, _mm_storeu_ps, 12,
        float)
DEF_FMA(fma_f64_sse2, "sse2", __m128d, _mm_set1_pd, SSE_MULADD_PD, _mm_add_pd, _mm_storeu_pd,
        12, double)

static fma_kernel pick_fma(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return (fma_kernel){"avx512", {16, 8}, 16, {fma_f32_avx512, fma_f64_avx512}};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return (fma_kernel){"avx2", {8, 4}, 12, {fma_f32_avx2, fma_f64_avx2}};
  return (fma_kernel){"sse2", {4, 2}, 12, {fma_f32_sse2, fma_f64_sse2}};
}

#elif defined(__aarch64__)

/* arm64: NEON FMLA on 128-bit registers (4 float / 2 double lanes). 32 vector registers, two
 * kept for m and c: 24 accumulators cover a 4-cycle FMA latency on up to 4 pipes (Neoverse
 * V1/V2 have 4 x 128-bit, N1/N2 and Cortex-A7x 2). Intrinsics make the instruction certain. */
#include <arm_neon.h>
#define DEF_NEON_FMA(name, vec, dup, fma, add, get, lanes, NACC, scal)                        \
  __attribute__((noinline)) static double name(long iters) {                                  \
    vec acc[NACC];                                                                           \
    const vec m = dup((scal)FMA_M), c = dup((scal)FMA_C);                                    \
    for (int k = 0; k < NACC; k++) acc[k] = dup((scal)k * (scal)1e-3);                       \
    for (long i = 0; i < iters; i++) {                                                       \
      _Pragma("GCC unroll 24") for (int k = 0; k < NACC; k++) acc[k] = fma(c, acc[k], m);    \
    }                                                                                        \
    vec s = acc[0];                                                                          \
    for (int k = 1; k < NACC; k++) s = add(s, acc[k]);                                       \
    scal out[lanes];                                                                         \
    get(out, s);                                                                             \
    double r = 0;                                                                            \
    for (int k = 0; k < lanes; k++) r += (double)out[k];                                     \
    return r;                                                                                \
  }
DEF_NEON_FMA(fma_f32_neon, float32x4_t, vdupq_n_f32, vfmaq_f32, vaddq_f32, vst1q_f32, 4, 24,
             float)
DEF_NEON_FMA(fma_f64_neon, float64x2_t, vdupq_n_f64, vfmaq_f64, vaddq_f64, vst1q_f64, 2, 24,
             double)

static fma_kernel pick_fma(void) {
  return (fma_kernel){"neon", {4, 2}, 24, {fma_f32_neon, fma_f64_neon}};
}

#else /* neither x86 nor arm64: GCC vector extensions, whatever the compiler makes of them */

typedef float v4f __attribute__((vector_size(16)));
typedef double v2d __attribute__((vector_size(16)));
#define GEN_FMA(name, vec, scal, NACC)                                                        \
  __attribute__((noinline)) static double name(long iters) {                                  \
    vec acc[NACC];                                                                           \
    const vec m = (vec){0} + (scal)FMA_M, c = (vec){0} + (scal)FMA_C;                        \
    for (int k = 0; k < NACC; k++) acc[k] = (vec){0} + (scal)k * (scal)1e-3;                 \
    for (long i = 0; i < iters; i++)                                                         \
      for (int k = 0; k < NACC; k++) acc[k] = acc[k] * m + c;                                \
    double r = 0;                                                                            \
    for (int k = 0; k < NACC; k++)                                                           \
      for (size_t l = 0; l < sizeof(vec) / sizeof(scal); l++) r += (double)acc[k][l];        \
    return r;                                                                                \
  }
GEN_FMA(fma_f32_generic, v4f, float, 12)
GEN_FMA(fma_f64_generic, v2d, double, 12)

static fma_kernel pick_fma(void) {
  return (fma_kernel){"generic128", {4, 2}, 12, {fma_f32_generic, fma_f64_generic}};
}

#endif

/* ------------------------------------------------------------------------------------------
 * STREAM triad a[i] = b[i] + s * c[i] on double arrays. Traffic is counted STREAM's way: 3
 * arrays x 8 bytes per element (2 reads, 1 write); the write-allocate read of a, which plain
 * stores also cause, is not counted, so the figure is comparable to published STREAM results
 * and to the bytes models of the operators (which count minimum traffic the same way).
 * ------------------------------------------------------------------------------------------ */

#ifdef OPF_MACHINE_X86
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static void
triad_range(double *restrict a, const double *restrict b, const double *restrict c, double s,
            size_t n) {
  for (size_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

/* Read-only: the sum of three arrays of n doubles, read side by side as the triad reads its
 * two (one stream alone leaves the prefetchers' parallelism unused: measured here, a single
 * stream read L2 and DRAM at about half the triad's rate). Six independent 64-byte vector sums
 * (zmm on x86-64-v4, pairs of ymm on v3) keep the adds' latency off the loads; GCC's own
 * vectorisation of the scalar form scalarised part of it. Counted as 3 x 8 bytes per element. */
typedef double v8d __attribute__((vector_size(64)));
static inline v8d load8(const double *p) {
  v8d v;
  memcpy(&v, p, sizeof v);
  return v;
}

#ifdef OPF_MACHINE_X86
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
static double
read_range(const double *restrict a, const double *restrict b, const double *restrict c, size_t n) {
  v8d s[6] = {{0}};
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s[0] += load8(a + i), s[1] += load8(a + i + 8);
    s[2] += load8(b + i), s[3] += load8(b + i + 8);
    s[4] += load8(c + i), s[5] += load8(c + i + 8);
  }
  double r = 0;
  for (; i < n; i++) r += a[i] + b[i] + c[i];
  for (int k = 0; k < 6; k++)
    for (int l = 0; l < 8; l++) r += s[k][l];
  return r;
}

/* Thread `id` of `nt` owns [lo, hi): contiguous chunks rounded to whole 4 KiB pages, the same
 * split for the first touch and for the timed runs so each thread writes pages it placed. */
static void chunk_of(size_t n, int nt, int id, size_t *lo, size_t *hi) {
  size_t per = (n + (size_t)nt - 1) / (size_t)nt;
  per = (per + 511) & ~(size_t)511;
  *lo = per * (size_t)id;
  if (*lo > n) *lo = n;
  *hi = *lo + per > n ? n : *lo + per;
}

/* ------------------------------------------------------------------------------------------
 * Timing: best of many repetitions inside one parallel region.
 * Each rep starts right after a barrier, so every thread of the team is awake and on a CPU;
 * its time runs from the earliest thread's start to the latest thread's end. Waking a sleeping
 * OpenMP worker on a loaded machine can take a whole scheduler time slice (measured here: a
 * 2-thread region of 1 us of work took 16 ms at load average 6), which is latency of the
 * scheduler, not throughput of the FMA units or of memory, so it stays out of the ceilings.
 * Preemption during a rep still counts; the best rep is the one that had the CPUs.
 * ------------------------------------------------------------------------------------------ */

typedef enum rep_kind {
  K_FMA,          /* FMA kernel: iters calls' worth per thread */
  K_DRAM_TRIAD,   /* triad over one window of the big arrays, split among the team */
  K_DRAM_READ,    /* read-only over one window of a, b and c, split among the team */
  K_CACHE_TRIAD,  /* each thread: iters passes of the triad over its own 3 x n elements */
  K_CACHE_READ    /* each thread: iters passes of the read over its own 3 arrays */
} rep_kind;

typedef struct rep_work {
  rep_kind kind;
  fma_fn fn;             /* FMA: kernel, iterations per thread and FLOP per iteration */
  long iters;            /* FMA: iterations; cache kernels: passes per rep */
  double flop_per_iter;
  double *a;             /* DRAM: arrays of nwin windows of `win` elements; rep r */
  const double *b, *c;   /* streams window r % nwin */
  size_t win;
  int nwin, next;
  double *buf;           /* cache kernels: thread id's arrays start at buf + id * stride */
  size_t n, stride;      /* elements per array (3 arrays back to back), stride in doubles */
} rep_work;

/* Keeps every kernel's result alive so the compiler cannot drop the work. */
static volatile double machine_sink;

static double rep_do(const rep_work *w, int nt, int id) {
  double r = 0;
  if (w->kind == K_FMA) return w->fn(w->iters);
  if (w->kind == K_CACHE_TRIAD || w->kind == K_CACHE_READ) {
    double *x = w->buf + (size_t)id * w->stride;
    for (long p = 0; p < w->iters; p++) {
      if (w->kind == K_CACHE_READ) r += read_range(x, x + w->n, x + 2 * w->n, w->n);
      else triad_range(x, x + w->n, x + 2 * w->n, 3.0, w->n);
    }
    return r;
  }
  size_t lo, hi, off = w->win * (size_t)w->next;
  chunk_of(w->win, nt, id, &lo, &hi);
  if (lo >= hi) return 0;
  if (w->kind == K_DRAM_READ) return read_range(w->a + off + lo, w->b + off + lo, w->c + off + lo, hi - lo);
  triad_range(w->a + off + lo, w->b + off + lo, w->c + off + lo, 3.0, hi - lo);
  return 0;
}

/* FLOP or bytes of one rep of the whole team. */
static double rep_units(const rep_work *w, int nt) {
  const double d = sizeof(double);
  switch (w->kind) {
  case K_DRAM_TRIAD:
  case K_DRAM_READ: return 3 * d * (double)w->win;
  case K_CACHE_TRIAD:
  case K_CACHE_READ: return 3 * d * (double)w->n * (double)w->iters * nt;
  default: return w->flop_per_iter * (double)w->iters * nt;
  }
}

static int rep_windowed(const rep_work *w) { return w->kind == K_DRAM_TRIAD || w->kind == K_DRAM_READ; }

/* One FMA repetition's target length. Short: on a shared machine a team only has its CPUs to
 * itself between preemptions (a time slice is a few ms) and the best of many short reps finds
 * those windows; long enough that clock reads and the barrier (about a microsecond) do not
 * count. */
static double rep_target(double seconds) {
  double r = seconds / 100;
  return r < 2.5e-4 ? 2.5e-4 : r > 2e-3 ? 2e-3 : r;
}

/* A spinning sense-reversing barrier. OpenMP's barrier lets a waiting thread sleep in the
 * kernel after a short spin; on a loaded machine waking it again costs a time slice, so the
 * rep would start with one thread only. Spinning threads stay runnable: a rep starts when the
 * whole team is on CPUs. */
typedef struct spin_barrier {
  atomic_int count, sense;
  int n;
} spin_barrier;

static void spin_barrier_wait(spin_barrier *b, int *local_sense) {
  int s = *local_sense = !*local_sense;
  if (atomic_fetch_add(&b->count, 1) == b->n - 1) {
    atomic_store(&b->count, 0);
    atomic_store(&b->sense, s);
  } else {
    while (atomic_load(&b->sense) != s) {
#ifdef OPF_MACHINE_X86
      _mm_pause();
#elif defined(__aarch64__)
      __asm__ __volatile__("yield");
#endif
    }
  }
}

/* Pin the calling thread (team member id) to one CPU of those it may use, for the time of a
 * measurement: left to itself the scheduler may stack two threads of the team on one CPU of a
 * busy machine (measured here at load 6 on 2 CPUs: the second thread started each rep a whole
 * time slice, 8 ms, late, so the team never ran together), and the "all threads" figure would
 * be that of one CPU. A thread that is already on one CPU (the user's pinning) stays there.
 * Returns 1 when pinned; pin_end restores the previous mask. */
static int pin_begin(int id, cpu_set_t *old) {
  if (sched_getaffinity(0, sizeof *old, old) || CPU_COUNT(old) < 2) return 0;
  int want = id % CPU_COUNT(old), seen = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (!CPU_ISSET(cpu, old)) continue;
    if (seen++ == want) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      return sched_setaffinity(0, sizeof one, &one) == 0;   /* 0: this thread (Linux) */
    }
  }
  return 0;
}

static void pin_end(int pinned, const cpu_set_t *old) {
  if (pinned) sched_setaffinity(0, sizeof *old, old);
}

/* Best rate (FLOP/s or bytes/s) over about `seconds` and at least 3 timed reps after one
 * untimed warm-up rep (pool, TLB, clone resolution). Until 3 reps have both run with the
 * whole team together and come within 10% of the best (a loaded machine), it goes on for up
 * to 3 x `seconds` (at least 0.2 s) more: a best-of that never saw the team run together is
 * a figure of the scheduler, and one that was never reproduced may be a fluke. FMA reps much
 * shorter than the target (calibrated during a hiccup) are lengthened on the way. 0 when out
 * of memory. */
static double team_best(rep_work *w, int threads, double seconds, int *team) {
  double *t0s = calloc((size_t)threads, sizeof *t0s), *t1s = calloc((size_t)threads, sizeof *t1s);
  if (!t0s || !t1s) {
    free(t0s), free(t1s);
    return 0;
  }
  double target = rep_target(seconds), best = 0, t_end = 0, sink = 0;
  double grace = 3 * seconds > 0.2 ? 3 * seconds : 0.2;
  int stop = 0, got = 1, good = 0;
  spin_barrier bar;
  atomic_init(&bar.count, 0);
  atomic_init(&bar.sense, 0);
#pragma omp parallel num_threads(threads) reduction(+ : sink)
  {
    int id = omp_get_thread_num(), nt = omp_get_num_threads(), sense = 0;
    cpu_set_t old;
    int pinned = nt > 1 ? pin_begin(id, &old) : 0;
#pragma omp single
    {
      got = bar.n = nt;
      t_end = opf_now() + seconds;
    }
    for (int rep = 0;; rep++) {
      spin_barrier_wait(&bar, &sense);
      if (stop) break;
      double t0 = opf_now();
      sink += rep_do(w, nt, id);
      double t1 = opf_now();
      t0s[id] = t0;
      t1s[id] = t1;
      spin_barrier_wait(&bar, &sense);
      if (id == 0) {   /* the others wait at the next barrier, which publishes stop / iters */
        double lo = t0s[0], hi = t1s[0], last_start = t0s[0], first_end = t1s[0];
        for (int k = 1; k < nt; k++) {
          if (t0s[k] < lo) lo = t0s[k];
          if (t0s[k] > last_start) last_start = t0s[k];
          if (t1s[k] > hi) hi = t1s[k];
          if (t1s[k] < first_end) first_end = t1s[k];
        }
        double el = hi - lo, rate = el > 0 ? rep_units(w, nt) / el : 0;
        /* Good: the whole team started and ended together (equal work: a thread left waiting
         * or preempted shows as a late start or a late end) and the rate is within 10% of the
         * best; a new best more than 10% higher starts the count again. */
        int clean = last_start - lo <= 0.05 * el && hi - first_end <= 0.05 * el;
        if (rep > 0) {
          if (rate > 1.1 * best) good = 0;
          if (rate > best) best = rate;
          good += clean && rate >= 0.9 * best;
        }
        if (!rep_windowed(w) && el < target / 2 && w->iters < (1L << 40)) w->iters *= 2;
        if (rep_windowed(w)) w->next = (w->next + 1) % w->nwin;
        double t = opf_now();
        if (rep >= 3 && t >= t_end && (good >= 3 || t >= t_end + grace)) stop = 1;
      }
    }
    pin_end(pinned, &old);
  }
  machine_sink = sink;
  free(t0s), free(t1s);
  if (team) *team = got;
  return best;
}

/* The per-thread work of a rep (iters), calibrated on one thread by direct calls (no team, no
 * wake-up latency) to about the rep target. */
static void calibrate(rep_work *w, double seconds) {
  double target = rep_target(seconds), el;
  machine_sink = rep_do(w, 1, 0);
  for (;;) {
    double t0 = opf_now();
    machine_sink = rep_do(w, 1, 0);
    el = opf_now() - t0;
    if (el >= target / 4 || w->iters > (1L << 40)) break;
    w->iters *= 2;
  }
  if (el > 0 && el < target) {
    double scaled = (double)w->iters * target / el;
    if (scaled > (double)w->iters) w->iters = (long)scaled;
  }
}

/* Peak FLOP/s of one dtype on 1 thread and on `threads`; one calibration shared by both. */
static void measure_flops(const fma_kernel *k, int dt, int threads, double seconds, double out[2],
                          int *team) {
  rep_work w = {.kind = K_FMA, .fn = k->fn[dt], .iters = 256,
                .flop_per_iter = 2.0 * k->lanes[dt] * k->nacc};
  calibrate(&w, seconds);
  out[0] = team_best(&w, 1, seconds, NULL);
  out[1] = team_best(&w, threads, seconds, team);
}

/* Read-only and triad bandwidth of a cache level on `threads` threads, each streaming its own
 * `per_thread` bytes (3 arrays of equal length, placed by the thread that streams them) over
 * and over. Returns 0, or -1 when out of memory or the triad gave wrong values. */
static int measure_cache(double per_thread, int threads, double seconds, double *read_bw,
                         double *triad_bw, int *team) {
  size_t n = (size_t)(per_thread / (3 * sizeof(double))) & ~(size_t)63;
  if (n < 64) n = 64;
  size_t stride = (3 * n + 511) & ~(size_t)511;   /* whole 4 KiB pages per thread */
  double *buf = aligned_alloc(4096, (size_t)threads * stride * sizeof(double));
  if (!buf) return -1;
#pragma omp parallel num_threads(threads)
  {
    int id = omp_get_thread_num(), nt = omp_get_num_threads();
    cpu_set_t old;
    int pinned = nt > 1 ? pin_begin(id, &old) : 0;
    double *x = buf + (size_t)id * stride;
    for (size_t i = 0; i < n; i++) x[i] = 0.0, x[n + i] = 1.0, x[2 * n + i] = 2.0;
    pin_end(pinned, &old);
  }
  rep_work w = {.kind = K_CACHE_READ, .iters = 1, .buf = buf, .n = n, .stride = stride};
  calibrate(&w, seconds);
  *read_bw = team_best(&w, threads, seconds, team);
  w.kind = K_CACHE_TRIAD;
  w.iters = 1;
  calibrate(&w, seconds);
  *triad_bw = team_best(&w, threads, seconds, team);
  int ok = buf[0] == 7.0 && buf[n - 1] == 7.0;   /* 1 + 3 * 2: the triad really ran */
  free(buf);
  return ok ? 0 : -1;
}

/* The data caches of cpu0 (sysfs), innermost first, at most 3, then DRAM. */
static void find_levels(opf_machine *m) {
  opf_cache_info ci[8];
  int nc = opf_cache_list(ci, 8);
  m->n_levels = 0;
  for (int lvl = 1; lvl <= 3; lvl++)
    for (int i = 0; i < nc; i++) {
      if (ci[i].level != lvl || !strcmp(ci[i].type, "Instruction") || !ci[i].size) continue;
      opf_mem_level *l = &m->levels[m->n_levels++];
      snprintf(l->name, sizeof l->name, "L%c", '0' + lvl);   /* lvl is 1..3 */
      l->size = ci[i].size;
      l->sharing = ci[i].num_sharing > 0 ? ci[i].num_sharing : 1;
      break;
    }
  snprintf(m->levels[m->n_levels++].name, sizeof m->levels[0].name, "DRAM");
}

/* Bytes each of `threads` threads streams to measure cache level l: half of the share of one
 * instance that falls to it (threads share an instance up to its `sharing` CPUs), so the data
 * stay in that level and do not fit the one inside; a quarter for the last level, which other
 * cores (and, in a VM, other guests) also fill: at half of it, part of the stream came from
 * DRAM on the development VM (a 4 MiB sum read faster than the 16 MiB read kernel). */
static double cache_ws(const opf_mem_level *l, int threads, int last) {
  int share = threads < l->sharing ? threads : l->sharing;
  double w = (double)l->size / (last ? 4 : 2) / (share > 0 ? share : 1);
  return last && w < 2.0 * (double)l[-1].size ? (double)l->size / 2 / (share > 0 ? share : 1) : w;
}

/* ------------------------------------------------------------------------------------------
 * Identification
 * ------------------------------------------------------------------------------------------ */


int opf_machine_measure(opf_machine *m, double seconds, opf_err *err) {
  if (!m) return opf_err_set(err, OPF_EINVAL, "machine: no output structure");
  if (!(seconds > 0) || !isfinite(seconds))
    return opf_err_set(err, OPF_EINVAL, "machine: measurement time must be positive, not %g", seconds);
  memset(m, 0, sizeof *m);
  opf_cpu_model(m->cpu_model, sizeof m->cpu_model);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  m->cpus = cpus > 0 ? (int)cpus : 1;
  int nthreads = omp_get_num_procs();
  if (nthreads < 1) nthreads = 1;

  /* Bandwidth arrays first: if they do not fit, fail before spending time on the rest. */
  /* The triad streams one window (1/TRIAD_WINDOWS of the arrays) per rep, in turn: since a
   * window was last touched, (TRIAD_WINDOWS-1)/TRIAD_WINDOWS of the total, at least 3x the
   * last-level cache, went through, so it comes from memory again; short reps (about 1 ms)
   * are what the best-of needs on a shared machine. */
  uint64_t llc = opf_llc_bytes(), total = 4 * llc;
  if (total < (256ull << 20)) total = 256ull << 20;
  size_t win = (size_t)(total / (3 * sizeof(double) * TRIAD_WINDOWS));
  win = (win + 511) & ~(size_t)511;
  size_t n = win * TRIAD_WINDOWS;
  size_t bytes = n * sizeof(double);
  uint64_t avail = opf_mem_available();
  if (avail && 3 * (uint64_t)bytes > avail - avail / 8)
    return opf_err_set(err, OPF_ENOMEM,
                       "machine: the bandwidth test needs %llu MiB, only %llu MiB available",
                       (unsigned long long)(3 * (uint64_t)bytes >> 20),
                       (unsigned long long)(avail >> 20));
  /* Harness memory, not an operator's: plain aligned_alloc keeps it out of the tracked
   * allocator's statistics. */
  double *a = aligned_alloc(64, bytes), *b = aligned_alloc(64, bytes), *c = aligned_alloc(64, bytes);
  if (!a || !b || !c) {
    free(a), free(b), free(c);
    return opf_err_set(err, OPF_ENOMEM, "machine: cannot allocate 3 x %llu MiB for the bandwidth test",
                       (unsigned long long)(bytes >> 20));
  }

  find_levels(m);
  int team = 1;
  fma_kernel k = pick_fma();
  snprintf(m->isa, sizeof m->isa, "%s", k.isa);
  for (int dt = 0; dt < 2; dt++) measure_flops(&k, dt, nthreads, seconds, m->peak_flops[dt], &team);
  m->threads_all = team;

  /* First touch in parallel, with the split of the timed runs, outside any timing: a fresh
   * page's fault costs more than the triad on it (DESIGN.md section 4). */
#pragma omp parallel num_threads(nthreads)
  {
    size_t lo, hi;
    int id = omp_get_thread_num(), nt = omp_get_num_threads();
    cpu_set_t old;
    int pinned = nt > 1 ? pin_begin(id, &old) : 0;   /* on the CPU that will stream it */
    chunk_of(win, nt, id, &lo, &hi);
    for (size_t off = 0; off < n; off += win)
      for (size_t i = off + lo; i < off + hi; i++) a[i] = 0.0, b[i] = 1.0, c[i] = 2.0;
    pin_end(pinned, &old);
  }
  rep_work w = {.kind = K_DRAM_TRIAD, .a = a, .b = b, .c = c, .win = win, .nwin = TRIAD_WINDOWS};
  m->bandwidth[0] = team_best(&w, 1, seconds, NULL);
  m->bandwidth[1] = team_best(&w, nthreads, seconds, &team);
  if (team < m->threads_all) m->threads_all = team;
  opf_mem_level *dram = &m->levels[m->n_levels - 1];
  w.kind = K_DRAM_READ;
  dram->read_bw[0] = team_best(&w, 1, seconds, NULL);
  dram->read_bw[1] = team_best(&w, nthreads, seconds, &team);
  if (team < m->threads_all) m->threads_all = team;
  for (int t = 0; t < 2; t++) {
    dram->triad_bw[t] = m->bandwidth[t];
    dram->ws[t] = 3.0 * (double)bytes / (t ? nthreads : 1);
  }
  int ok = a[0] == 7.0 && a[win - 1] == 7.0;   /* 1 + 3 * 2: the triad really ran */
  free(a), free(b), free(c);
  if (!ok) return opf_err_set(err, OPF_EKERNEL, "machine: the triad kernel produced wrong values");

  /* The caches: shorter measurements (the kernels settle fast; there are 3 x 2 x 2 of them). */
  for (int l = 0; l < m->n_levels - 1; l++) {
    opf_mem_level *lv = &m->levels[l];
    for (int t = 0; t < 2; t++) {
      int nt = t ? nthreads : 1;
      lv->ws[t] = cache_ws(lv, nt, l == m->n_levels - 2 && l > 0);
      if (measure_cache(lv->ws[t], nt, seconds / 2, &lv->read_bw[t], &lv->triad_bw[t], t ? &team : NULL))
        return opf_err_set(err, OPF_EKERNEL, "machine: the %s bandwidth test failed (out of memory "
                           "or wrong values)", lv->name);
      if (t && team < m->threads_all) m->threads_all = team;
    }
  }

  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(m->timestamp, sizeof m->timestamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
  for (int dt = 0; dt < 2; dt++)
    for (int t = 0; t < 2; t++)
      if (!(m->peak_flops[dt][t] > 0) || !isfinite(m->peak_flops[dt][t]))
        return opf_err_set(err, OPF_EKERNEL, "machine: the FMA kernel gave no usable figure");
  for (int l = 0; l < m->n_levels; l++)
    for (int t = 0; t < 2; t++) {
      const opf_mem_level *lv = &m->levels[l];
      if (!(lv->read_bw[t] > 0 && lv->triad_bw[t] > 0 && isfinite(lv->read_bw[t]) && isfinite(lv->triad_bw[t])))
        return opf_err_set(err, OPF_EKERNEL, "machine: the %s bandwidth kernels gave no usable figure", lv->name);
    }
  return OPF_OK;
}

/* ------------------------------------------------------------------------------------------
 * Cache file
 * ------------------------------------------------------------------------------------------ */

char *opf_machine_path(char *buf, size_t n) {
  if (!buf || !n) return NULL;
  const char *f = getenv("OPPERF_MACHINE_FILE");
  int w;
  if (f && *f) {
    w = snprintf(buf, n, "%s", f);
  } else {
    const char *x = getenv("XDG_CACHE_HOME");
    if (x && *x == '/') {   /* the XDG spec ignores relative values */
      w = snprintf(buf, n, "%s/opperf/machine.json", x);
    } else {
      const char *home = getenv("HOME");
      if (!home || !*home) {
        struct passwd *pw = getpwuid(getuid());
        home = pw ? pw->pw_dir : NULL;
      }
      if (!home || !*home) return NULL;
      w = snprintf(buf, n, "%s/.cache/opperf/machine.json", home);
    }
  }
  return w < 0 || (size_t)w >= n ? NULL : buf;
}

/* mkdir -p of the directory part of path. */
static int make_parent_dirs(const char *path, opf_err *err) {
  char dir[4096];
  if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
    return opf_err_set(err, OPF_EINVAL, "path too long: '%s'", path);
  char *slash = strrchr(dir, '/');
  if (!slash || slash == dir) return OPF_OK;
  *slash = '\0';
  for (char *p = dir + 1; ; p++) {
    if (*p == '/' || *p == '\0') {
      char save = *p;
      *p = '\0';
      if (mkdir(dir, 0777) && errno != EEXIST)
        return opf_err_set(err, OPF_EIO, "cannot create directory '%s': %s", dir, strerror(errno));
      *p = save;
      if (!save) break;
    }
  }
  return OPF_OK;
}

/* [x, y] written with 17 significant digits: cJSON's own printing keeps 15 when they read back
 * within a relative epsilon, so a saved figure would not always load back bit for bit. */
static cJSON *exact_pair(const double v[2]) {
  char buf[64];
  snprintf(buf, sizeof buf, "[%.17g, %.17g]", v[0], v[1]);
  return cJSON_CreateRaw(buf);
}

int opf_machine_save(const opf_machine *m, const char *path, opf_err *err) {
  if (!m || !path || !*path) return opf_err_set(err, OPF_EINVAL, "machine: nothing to save or no path");
  cJSON *root = cJSON_CreateObject();
  cJSON *pf = cJSON_CreateObject();
  cJSON *bw = exact_pair(m->bandwidth);
  cJSON *f32 = exact_pair(m->peak_flops[OPF_F32]);
  cJSON *f64 = exact_pair(m->peak_flops[OPF_F64]);
  if (!root || !pf || !bw || !f32 || !f64) {
    cJSON_Delete(root), cJSON_Delete(pf), cJSON_Delete(bw), cJSON_Delete(f32), cJSON_Delete(f64);
    return opf_err_set(err, OPF_ENOMEM, "out of memory");
  }
  cJSON_AddNumberToObject(root, "schema_version", MACHINE_SCHEMA);
  cJSON_AddStringToObject(root, "cpu_model", m->cpu_model);
  cJSON_AddNumberToObject(root, "cpus", m->cpus);
  cJSON_AddNumberToObject(root, "threads_all", m->threads_all);
  cJSON_AddStringToObject(root, "isa", m->isa);
  cJSON_AddStringToObject(root, "timestamp", m->timestamp);
  cJSON_AddItemToObject(pf, "float32", f32);
  cJSON_AddItemToObject(pf, "float64", f64);
  cJSON_AddItemToObject(root, "peak_flops", pf);
  cJSON_AddItemToObject(root, "bandwidth", bw);
  cJSON *lv = cJSON_AddArrayToObject(root, "levels");
  for (int i = 0; lv && i < m->n_levels; i++) {
    const opf_mem_level *l = &m->levels[i];
    cJSON *o = cJSON_CreateObject();
    if (!o) break;
    cJSON_AddStringToObject(o, "name", l->name);
    cJSON_AddNumberToObject(o, "size_bytes", (double)l->size);
    cJSON_AddNumberToObject(o, "shared_by_cpus", l->sharing);
    cJSON_AddItemToObject(o, "working_set_bytes", exact_pair(l->ws));
    cJSON_AddItemToObject(o, "read", exact_pair(l->read_bw));
    cJSON_AddItemToObject(o, "triad", exact_pair(l->triad_bw));
    cJSON_AddItemToArray(lv, o);
  }
  cJSON_AddStringToObject(root, "units", "FLOP/s and bytes/s; arrays are [1 thread, all threads]");
  cJSON_AddStringToObject(root, "bandwidth_method",
                          "STREAM triad a=b+s*c, float64, 3 x 8 bytes per element "
                          "(write-allocate not counted), best of repetitions");
  cJSON_AddStringToObject(root, "levels_method",
                          "per level: read = sum of float64 (8 bytes per element), triad as above; "
                          "caches: each thread streams its own working_set_bytes (half of its "
                          "share of one instance) over and over; DRAM: windows of arrays of at "
                          "least 4x the last-level cache");
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  if (!text) return opf_err_set(err, OPF_ENOMEM, "out of memory");
  int rc = make_parent_dirs(path, err);
  if (rc == OPF_OK) {
    size_t len = strlen(text);
    text[len] = '\n';   /* end the file with a newline (over the terminator: the length is explicit) */
    rc = opf_write_atomic(path, text, len + 1, err);
  }
  cJSON_free(text);
  return rc;
}

static int get_str(const cJSON *o, const char *key, char *out, size_t n) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsString(v) || !v->valuestring) return -1;
  snprintf(out, n, "%s", v->valuestring);
  return 0;
}

static int get_pos(const cJSON *v, double *out) {
  if (!cJSON_IsNumber(v) || !(v->valuedouble > 0) || !isfinite(v->valuedouble)) return -1;
  *out = v->valuedouble;
  return 0;
}

static int get_pair(const cJSON *o, const char *key, double out[2]) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2) return -1;
  return get_pos(cJSON_GetArrayItem(v, 0), &out[0]) || get_pos(cJSON_GetArrayItem(v, 1), &out[1]);
}

/* The "levels" array: 1 to OPF_MEM_LEVELS entries, caches L1.. innermost first, DRAM last.
 * NULL when good, else what is wrong. */
static const char *get_levels(const cJSON *root, opf_machine *t) {
  const cJSON *lv = cJSON_GetObjectItemCaseSensitive(root, "levels");
  int n = cJSON_IsArray(lv) ? cJSON_GetArraySize(lv) : 0;
  if (n < 1 || n > OPF_MEM_LEVELS) return "levels needs 1 to 4 entries (the caches, then DRAM)";
  for (int i = 0; i < n; i++) {
    const cJSON *o = cJSON_GetArrayItem(lv, i);
    opf_mem_level *l = &t->levels[i];
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(o, "size_bytes");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(o, "shared_by_cpus");
    char want[8];
    snprintf(want, sizeof want, i == n - 1 ? "DRAM" : "L%c", '1' + i);   /* i < 4 */
    if (get_str(o, "name", l->name, sizeof l->name) || strcmp(l->name, want))
      return "levels must be named L1, L2, L3 innermost first, then DRAM";
    if (!cJSON_IsNumber(size) || size->valuedouble < 0 || size->valuedouble > 1e15 ||
        !cJSON_IsNumber(sh) || sh->valuedouble < 0 || sh->valuedouble > 1 << 20 ||
        ((i < n - 1) && (size->valuedouble < 1 || sh->valuedouble < 1)))
      return "a level needs size_bytes and shared_by_cpus (positive for a cache)";
    l->size = (uint64_t)size->valuedouble;
    l->sharing = sh->valueint;
    if (get_pair(o, "working_set_bytes", l->ws) || get_pair(o, "read", l->read_bw) ||
        get_pair(o, "triad", l->triad_bw))
      return "a level needs working_set_bytes, read and triad, each [1 thread, all threads] of positive numbers";
  }
  t->n_levels = n;
  return NULL;
}

int opf_machine_load(opf_machine *m, const char *path, opf_err *err) {
  if (!m || !path || !*path) return opf_err_set(err, OPF_EINVAL, "machine: nothing to load or no path");
  FILE *f = fopen(path, "rb");
  if (!f) {
    int e = errno;
    if (e == ENOENT)
      return opf_err_set(err, OPF_ENOTFOUND, "no machine figures in '%s' (run opperf machine)", path);
    return opf_err_set(err, OPF_EIO, "cannot read '%s': %s", path, strerror(e));
  }
  char buf[16384];   /* a machine file is under 4 KiB */
  size_t len = fread(buf, 1, sizeof buf - 1, f);
  int rerr = ferror(f), big = !feof(f);
  fclose(f);
  if (rerr) return opf_err_set(err, OPF_EIO, "cannot read '%s'", path);
  if (big) return opf_err_set(err, OPF_EINVAL, "'%s' is not a machine file (too large)", path);
  buf[len] = '\0';

  cJSON *root = cJSON_Parse(buf);
  if (!root) {
    return opf_err_set(err, OPF_EINVAL,
                       "'%s' is malformed (not JSON); run opperf machine --refresh", path);
  }
  opf_machine t;
  memset(&t, 0, sizeof t);
  const char *bad = NULL;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "schema_version");
  const cJSON *pf = cJSON_GetObjectItemCaseSensitive(root, "peak_flops");
  const cJSON *cpus = cJSON_GetObjectItemCaseSensitive(root, "cpus");
  const cJSON *thr = cJSON_GetObjectItemCaseSensitive(root, "threads_all");
  if (!cJSON_IsObject(root)) bad = "not a JSON object";
  else if (cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble < MACHINE_SCHEMA) {
    int old = v->valueint;   /* before the tree goes */
    cJSON_Delete(root);
    return opf_err_set(err, OPF_EINVAL, "'%s' holds the ceilings of an older opperf (schema %d: DRAM "
                       "bandwidth only; this one measures each cache level); run opperf machine --refresh",
                       path, old);
  } else if (!cJSON_IsNumber(v) || v->valuedouble != MACHINE_SCHEMA) bad = "missing or unknown schema_version";
  else if (get_str(root, "cpu_model", t.cpu_model, sizeof t.cpu_model)) bad = "missing cpu_model";
  else if (get_str(root, "isa", t.isa, sizeof t.isa)) bad = "missing isa";
  else if (get_str(root, "timestamp", t.timestamp, sizeof t.timestamp)) bad = "missing timestamp";
  else if (!cJSON_IsNumber(cpus) || cpus->valuedouble < 1 || cpus->valuedouble > 1 << 20) bad = "missing or bad cpus";
  else if (!cJSON_IsNumber(thr) || thr->valuedouble < 1 || thr->valuedouble > 1 << 20) bad = "missing or bad threads_all";
  else if (!cJSON_IsObject(pf) || get_pair(pf, "float32", t.peak_flops[OPF_F32]) ||
           get_pair(pf, "float64", t.peak_flops[OPF_F64]))
    bad = "peak_flops needs float32 and float64, each [1 thread, all threads] of positive numbers";
  else if (get_pair(root, "bandwidth", t.bandwidth))
    bad = "bandwidth needs [1 thread, all threads] of positive numbers";
  else bad = get_levels(root, &t);
  if (!bad) {
    t.cpus = cpus->valueint;
    t.threads_all = thr->valueint;
  }
  cJSON_Delete(root);
  if (bad) return opf_err_set(err, OPF_EINVAL, "'%s' is malformed: %s; run opperf machine --refresh", path, bad);

  char here[128];
  opf_cpu_model(here, sizeof here);
  if (strcmp(here, t.cpu_model))
    return opf_err_set(err, OPF_EINVAL, "'%s' was measured on '%s', this is '%s'; run opperf machine --refresh",
                       path, t.cpu_model, here);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  /* Same model, other size (a resized VM): the all-threads figures would be wrong. */
  if (online > 0 && online != t.cpus)
    return opf_err_set(err, OPF_EINVAL, "'%s' was measured with %d CPUs online, this machine has %ld; "
                       "run opperf machine --refresh", path, t.cpus, online);
  *m = t;
  return OPF_OK;
}

/* ------------------------------------------------------------------------------------------
 * Roofline
 * ------------------------------------------------------------------------------------------ */

double opf_roofline_bound(const opf_machine *m, opf_dtype dt, int threads, double flops, double bytes) {
  if (!m || (dt != OPF_F32 && dt != OPF_F64)) return 0;
  if (!(flops > 0) || !(bytes > 0) || !isfinite(flops) || !isfinite(bytes)) return 0;
  int t = threads > 1;
  double peak = m->peak_flops[dt][t], bw = m->bandwidth[t];
  if (!(peak > 0) || !(bw > 0) || !isfinite(peak) || !isfinite(bw)) return 0;
  double mem = flops / bytes * bw;
  return mem < peak ? mem : peak;
}

double opf_roofline_time(const opf_machine *m, opf_dtype dt, int threads, double flops, double bytes) {
  if (!m || !(bytes > 0) || !isfinite(bytes) || !(flops >= 0) || !isfinite(flops)) return 0;
  int t = threads > 1;
  double bw = m->bandwidth[t];
  if (!(bw > 0) || !isfinite(bw)) return 0;
  double tm = bytes / bw, tc = 0;
  if (flops > 0 && (dt == OPF_F32 || dt == OPF_F64)) {
    double peak = m->peak_flops[dt][t];
    if (!(peak > 0) || !isfinite(peak)) return 0;
    tc = flops / peak;
  }
  return tm > tc ? tm : tc; /* integer work: the memory side only (no integer peak measured) */
}
