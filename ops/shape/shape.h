/* shape.h: helpers shared by the layout (ops/shape) and join (ops/join) operator families:
 * a threaded memcpy, element-size generic fills (float32/int32 move as 4-byte words,
 * float64/int64 as 8-byte words), axis and shape checks with messages, and the traffic model
 * of a pure data movement. */
#ifndef OPPERF_OPS_SHAPE_H
#define OPPERF_OPS_SHAPE_H

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "linalg/linalg.h"

/* Runs this long go through rep movsb on x86 (see shp_movsb below); memcpy elsewhere. */
#define SHP_LONG_RUN ((size_t)1 << 20)

#ifdef OPF_X86

/* Copy a run of n bytes (a multiple of 4), for the many short runs of layout operators (rows
 * of 56 elements): with AVX-512, 64-byte moves and one masked tail move, ~10 instructions for
 * a 200-byte row where a libc memcpy call costs ~60 and GCC turns a plain loop back into
 * that call. Longer runs go to memcpy, and from SHP_LONG_RUN to rep movsb (shp_run). */
__attribute__((target("avx512f"), unused)) static void shp_run_avx512(char *restrict d,
                                                                       const char *restrict s,
                                                                       size_t n) {
  size_t k = 0;
  for (; k + 64 <= n; k += 64) _mm512_storeu_si512(d + k, _mm512_loadu_si512(s + k));
  if (k < n) lin_copy(d + k, s + k, n - k); /* overlapping moves: masked stores were slower */
}
static inline int shp_have_avx512(void) { return __builtin_cpu_supports("avx512f"); }
/* Runs of SHP_LONG_RUN bytes and more move by rep movsb. On Zen 5 it beat both ordinary and
 * streaming stores on long runs, as if its microcode wrote whole lines without the
 * read-for-ownership yet kept them cached (no PMU here to confirm); glibc's
 * memcpy takes its vector loop there (rep movsb only up to the 1 MiB L2; streaming only past
 * 288 MiB, sized from the package's 384 MiB L3). Standalone copies on 2 threads (a contiguous
 * share each, each method's third consecutive call timed, methods rotated, medians of 2
 * rounds of 30-40, load 8): 25.7 MB 291 / 371 us against memcpy 477 / 443 and streaming
 * 424 / 386; 16.8 MB in runs of 1, 2 or 4 MiB 129-150 us against memcpy 142-163; runs of
 * 256 KiB equal (134-141 / 137-142), of 64 KiB slower (159-178 / 134-139), of 4 KiB much
 * slower (208 / 161). Every AVX-512 x86 has fast strings (ERMS). */
static inline void shp_movsb(void *d, const void *s, size_t n) {
  __asm__ volatile("rep movsb" : "+D"(d), "+S"(s), "+c"(n) : : "memory");
}
static inline void shp_run(int avx512, void *d, const void *s, size_t n) {
  if (avx512 && n >= SHP_LONG_RUN) { /* rep movsb from a line of the destination */
    size_t head = (64 - ((uintptr_t)d & 63)) & 63;
    shp_run_avx512(d, s, head);
    shp_movsb((char *)d + head, (const char *)s + head, n - head);
  } else if (n >= 2048) memcpy(d, s, n);
  else if (avx512) shp_run_avx512(d, s, n);
  else lin_copy(d, s, n);
}

/* Non-temporal variants, for outputs far beyond the LLC written without being read: streaming
 * stores skip the read-for-ownership a normal store pays, so a pure write moves half the
 * DRAM traffic. The destination is only ever written, never re-read by the caller while hot.
 * Both need a trailing _mm_sfence() before other threads read the data. */
__attribute__((target("avx512f"), unused)) static void shp_stream_avx512(char *restrict d,
                                                                          const char *restrict s,
                                                                          size_t n) {
  size_t head = (64 - ((uintptr_t)d & 63)) & 63, k;
  head = head < n ? head : n;
  shp_run_avx512(d, s, head);
  for (k = head; k + 64 <= n; k += 64) _mm512_stream_si512((void *)(d + k), _mm512_loadu_si512(s + k));
  shp_run_avx512(d + k, s + k, n - k);
}
#else
/* Other architectures (arm64). Short runs: 64-byte fixed-size moves (GCC inlines each as four
 * 16-byte NEON load/store pairs, ldp/stp q) and an overlapping tail, the same shape as the
 * AVX-512 loop above; long runs: memcpy. shp_have_avx512() is 0, so nothing streams
 * (shp_streams) and shp_stream_avx512 / shp_fill_stream below are never selected; they are
 * plain stores, correct if called. Streaming stores are left out on arm64: its cores detect a
 * run of whole-line writes and stop allocating (write-streaming mode), which is what x86 needs
 * non-temporal stores for (not measured here: qemu-user has no cache model). */
static inline int shp_have_avx512(void) { return 0; }
__attribute__((unused)) static void shp_run_vec(char *restrict d, const char *restrict s,
                                                 size_t n) {
  size_t k = 0;
  for (; k + 64 <= n; k += 64) memcpy(d + k, s + k, 64);
  if (k < n) lin_copy(d + k, s + k, n - k);
}
static inline void shp_run(int avx512, void *d, const void *s, size_t n) {
  (void)avx512;
  if (n >= 2048) memcpy(d, s, n);
  else shp_run_vec(d, s, n);
}
__attribute__((unused)) static void shp_stream_avx512(char *restrict d, const char *restrict s,
                                                       size_t n) {
  memcpy(d, s, n);
}
#endif

/* The last-level cache an operator's working set competes for: the 32 MiB L3 of one Zen CCD.
 * (sysconf reports the whole package's 384 MiB here, which no single core can use.) */
#define SHP_LLC_BYTES ((int64_t)32 << 20)

/* Streaming stores pay when what an operator reads and writes together reaches the LLC: the
 * output would not stay cached between calls anyway (and would push the input out), and
 * skipping the read-for-ownership of every output line cuts a copy's traffic from three
 * passes to two: reshape of 8192x8192 float32 16.9 -> 12.4 ms (43 GB/s on one core), of
 * (32,64,56,56) 1.15 -> 0.95 ms, concat of four (1024,1024) on axis 1 (32 MiB moved)
 * 0.9 -> 0.7 ms. (glibc's memcpy would switch by itself, but it sizes its threshold from the
 * package's 384 MiB L3 and never does here.) */
/* With two threads or more, outputs up to the LLC are written faster through it: both cores
 * fill it (the working set stays cached between calls), where one core alone fills it at
 * about half the rate of streaming. Measured at 2 threads (medians of 3 alternated, load
 * 12): stack of four (1024,1024) (32 MiB moved) 204 -> 145 us unstreamed, (32,3,128,128)
 * tiled 2x2 (31.5 MB) 300 -> 210 us; but swapaxes of (32,3,256,256) (50 MB) 1.20 ms
 * unstreamed against 0.73. At 1 thread streaming still wins there (tile 1.00 -> 0.58 ms). So
 * from two threads, streaming starts at 5/4 of the LLC. from: the one-thread threshold. */
#define SHP_STREAM_PAR_BYTES (SHP_LLC_BYTES / 4 * 5)
static inline int shp_streams_from(double bytes_moved, double from) {
  if (omp_get_max_threads() > 1 && from < (double)SHP_STREAM_PAR_BYTES)
    from = (double)SHP_STREAM_PAR_BYTES;
  return shp_have_avx512() && bytes_moved >= from;
}
static inline int shp_streams(double bytes_moved) {
  return shp_streams_from(bytes_moved, (double)SHP_LLC_BYTES);
}
/* A plain copy (shp_copy) stays unstreamed longer from two threads: ordinary stores of one
 * contiguous run per thread keep part of the working set in the L3 (and the L2s it backs)
 * between calls, as torch's clone does. Copies at 2 threads (a standalone loop, medians of
 * 200 calls, load 2-6): 25 MB (50 MB moved) 593 us unstreamed against 619 streamed (minima
 * 494-568 against 575-587), 32 MB equal (907 / 894 us), 40 MB 1.36 ms against 1.15. So from
 * two threads, a copy streams from twice the LLC moved; one thread keeps shp_streams. Row
 * reversals (flip, rm_run) measured slower unstreamed at 50 MB (652 against 600 us) and keep
 * shp_streams; rolls (plain row copies) follow shp_copy. Why twice the LLC: the VM's two
 * vCPUs answer a cache-line ping-pong in 1.0-1.3 us per round trip, as cores of different
 * CCDs do, so each thread likely has a 32 MiB L3 of its own and a copy's two halves stay
 * cached up to twice its size. That is also why these times swing 2-3x run to run: other
 * processes on the VM (or host) take either L3 (a 25.7 MB copy at 2 threads: 280-320 us on
 * a quiet machine, 740-900 us at load 4-5), and at load above 2 a 2-thread call waits out a
 * scheduler slice now and then (medians of 7.97 ms). */
#define SHP_STREAM_RUNS_PAR_BYTES (SHP_LLC_BYTES * 2)
static inline int shp_streams_runs(double bytes_moved) {
  return shp_streams_from(bytes_moved, omp_get_max_threads() > 1
                                           ? (double)SHP_STREAM_RUNS_PAR_BYTES
                                           : (double)SHP_LLC_BYTES);
}
#ifdef OPF_X86
__attribute__((target("avx512f"), unused)) static void shp_sfence(void) { _mm_sfence(); }
#else
/* Publishes the stores of a thread before the OpenMP barrier (which also orders them). */
__attribute__((unused)) static void shp_sfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#endif

/* A run of n bytes: streamed when nt (and long enough to fill lines), else shp_run. */
static inline void shp_move(int nt, int avx512, void *d, const void *s, size_t n) {
  if (nt && n >= 256) shp_stream_avx512(d, s, n);
  else shp_run(avx512, d, s, n);
}

/* Below this many bytes a copy stays on one thread: waking the pool costs more than the
 * second core saves (a 256 KiB copy from L2 takes ~5 us). */
#define SHP_PAR_BYTES (256 * 1024)

typedef struct {
  char *dst;
  const char *src;
  size_t n;
  int nt, avx512;
} shp_copy_ctx;

/* 64-byte lines [lo, hi) of the copy (the last one partial). */
static inline void shp_copy_range(int64_t lo, int64_t hi, void *p) {
  const shp_copy_ctx *x = p;
  size_t a = (size_t)lo * 64, b = (size_t)hi * 64 < x->n ? (size_t)hi * 64 : x->n;
  shp_move(x->nt, x->avx512, x->dst + a, x->src + a, b - a);
  if (x->nt) shp_sfence();
}

/* memcpy of n bytes, one contiguous piece per thread for large copies (split on whole 64-byte
 * lines: each piece starts on a line of the destination, tensors being line aligned), streamed
 * past the LLC (shp_streams_runs). */
static inline void shp_copy(void *dst, const void *src, size_t n) {
  shp_copy_ctx x = {dst, src, n, shp_streams_runs(2.0 * (double)n), shp_have_avx512()};
  opf_parallel_range((int64_t)((n + 63) / 64), SHP_PAR_BYTES / 64, shp_copy_range, &x);
}

/* Fill n words with the pattern at val (es bytes); vectorised stores. */
OPF_VEC __attribute__((unused)) static void shp_fill4(uint32_t *restrict d, uint32_t v, int64_t n) {
  for (int64_t i = 0; i < n; i++) d[i] = v;
}
OPF_VEC __attribute__((unused)) static void shp_fill8(uint64_t *restrict d, uint64_t v, int64_t n) {
  for (int64_t i = 0; i < n; i++) d[i] = v;
}
static inline void shp_fill(void *d, const void *val, size_t es, int64_t n) {
  if (es == 4) {
    uint32_t v;
    memcpy(&v, val, 4);
    shp_fill4(d, v, n);
  } else {
    uint64_t v;
    memcpy(&v, val, 8);
    shp_fill8(d, v, n);
  }
}

/* shp_fill with streaming stores (AVX-512 only; see shp_stream_avx512). */
#ifdef OPF_X86
__attribute__((target("avx512f"), unused)) static void shp_fill_stream(void *d, const void *val,
                                                                        size_t es, int64_t n) {
  char *p = d;
  int64_t head = (int64_t)(((64 - ((uintptr_t)p & 63)) & 63) / es), k;
  head = head < n ? head : n;
  shp_fill(p, val, es, head);
  uint64_t v8 = 0;
  uint32_t v4 = 0;
  if (es == 4) memcpy(&v4, val, 4);
  else memcpy(&v8, val, 8);
  const __m512i z = es == 4 ? _mm512_set1_epi32((int)v4) : _mm512_set1_epi64((long long)v8);
  const int64_t per = 64 / (int64_t)es;
  for (k = head; k + per <= n; k += per) _mm512_stream_si512((void *)(p + k * (int64_t)es), z);
  shp_fill(p + k * (int64_t)es, val, es, n - k);
}
#else
/* Not selected on other architectures (shp_streams is 0 there): the plain fill. */
__attribute__((unused)) static void shp_fill_stream(void *d, const void *val, size_t es,
                                                     int64_t n) {
  shp_fill(d, val, es, n);
}
#endif

/* d += s over n elements of a floating dtype (gradients that sum contributions). Short runs
 * stay inline: a dispatched call cost more than the adds on rows of 28. */
#define SHP_ADD(T, sfx)                                                                        \
  OPF_VEC __attribute__((unused)) static void shp_add_##sfx(T *restrict d, const T *restrict s, \
                                                             int64_t n) {                      \
    for (int64_t i = 0; i < n; i++) d[i] += s[i];                                              \
  }
SHP_ADD(float, f32)
SHP_ADD(double, f64)
static inline void shp_add(opf_dtype dt, void *d, const void *s, int64_t n) {
  if (n >= 64) {
    if (dt == OPF_F32) shp_add_f32(d, s, n);
    else shp_add_f64(d, s, n);
  } else if (dt == OPF_F32) {
    for (int64_t i = 0; i < n; i++) ((float *)d)[i] += ((const float *)s)[i];
  } else {
    for (int64_t i = 0; i < n; i++) ((double *)d)[i] += ((const double *)s)[i];
  }
}

/* A double as one element of dtype dt, stored at out (es bytes): fill values and pads. */
static inline void shp_scalar(opf_dtype dt, double v, void *out) {
  switch (dt) {
  case OPF_F32: *(float *)out = (float)v; break;
  case OPF_F64: *(double *)out = v; break;
  case OPF_I32: *(int32_t *)out = (int32_t)v; break;
  default: *(int64_t *)out = (int64_t)v; break;
  }
}

/* For references: y's element at multi-index yi is x's flat element src(c, yi), or the
 * element at fill when src returns -1. Naive on purpose: every element by the definition. */
typedef int64_t (*shp_src_fn)(const opf_case *c, const int64_t *yi);
static inline void shp_ref_gather(opf_case *c, shp_src_fn src, const void *fill) {
  const opf_tensor *x = &c->in[0], *y = &c->out[0];
  const int64_t es = (int64_t)opf_dtype_size(c->dtype);
  int64_t yi[OPF_MAX_DIMS];
  for (int64_t o = 0; o < opf_numel(y); o++) {
    int64_t rem = o;
    for (int k = y->ndim - 1; k >= 0; k--) yi[k] = rem % y->shape[k], rem /= y->shape[k];
    int64_t i = src(c, yi);
    memcpy((char *)y->data + o * es, i < 0 ? fill : (const char *)x->data + i * es, (size_t)es);
  }
}

/* Input i must have a shape (inputs the spec omits arrive with ndim -1). */
static inline int shp_need(opf_case *c, int i, const char *example) {
  if (c->present[i] && c->in[i].ndim >= 0) return OPF_OK;
  return opf_case_error(c, OPF_EINVAL, "input '%s' needs a shape (e.g. %s)", c->op->in[i].name,
                        example);
}

/* Normalise an axis param of x (rank ndim; negative counts from the end), with a message
 * naming the param and the shape when it is out of range or "all" where one axis is needed. */
static inline int shp_axis(opf_case *c, const char *pname, double v, const opf_tensor *x, int ndim,
                           int *axis) {
  char s[96];
  if (v == OPF_AXIS_ALL)
    return opf_case_error(c, OPF_EINVAL, "%s=all is not allowed: %s needs one axis", pname,
                          c->op->name);
  *axis = opf_axis(v, ndim);
  if (*axis < 0)
    return opf_case_error(c, OPF_EINVAL, "%s=%d is out of range for x=%s (axes %d..%d)", pname,
                          (int)v, opf_shape_str(x, s, sizeof s), -ndim, ndim - 1);
  return OPF_OK;
}

/* Traffic of a data movement that reads rd and writes wr elements going forward, and reads
 * wr (the output gradient) and writes rd (the input gradient) going backward. */
static inline double shp_move_bytes(const opf_case *c, opf_pass p, double rd, double wr) {
  double b = (rd + wr) * (double)opf_dtype_size(c->dtype);
  return opf_pass_sum(p, b, b);
}

/* Contiguous strides (elements) of a shape. */
static inline void shp_strides(int nd, const int64_t *shape, int64_t *st) {
  int64_t s = 1;
  for (int k = nd - 1; k >= 0; k--) st[k] = s, s *= shape[k];
}

#endif
