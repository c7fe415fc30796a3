/* create_common.h: helpers shared by the creation, conversion and random families: the output
 * shape from a `shape` list param, one-element stores by dtype, and the threaded writers (a
 * constant fill, a copy, and a range generator) that go around the cache with streaming
 * (non-temporal) stores when the output is far larger than the last-level cache. */
#ifndef OPPERF_CREATE_COMMON_H
#define OPPERF_CREATE_COMMON_H

#include <math.h>

#include "opf_kernel.h"

#ifdef OPF_X86
#include <emmintrin.h>
#define cr_sfence() _mm_sfence()
#else
/* Other architectures (arm64) write the streamed outputs with plain stores (see cr_stream_copy);
 * the fence only publishes them before the OpenMP barrier (which orders them too). */
#define cr_sfence() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif

/* Outputs of at least this many bytes are written with streaming stores. Below it they fit in
 * the 32 MB L3 and the next call (or consumer) finds them in cache, which beats DRAM; above it,
 * ordinary stores cost a read-for-ownership of every line (double the DRAM traffic). */
#define CR_STREAM_MIN ((size_t)32 << 20)
/* Streaming generators write this many bytes into an L1-resident block, then stream it out. */
#define CR_BLOCK 8192

/* Writes elements [lo, hi) of an output to dst (dst[0] is element lo). */
typedef void (*cr_gen_fn)(const void *ctx, int64_t lo, int64_t hi, void *dst);

/* Copy n bytes to dst with 16-byte non-temporal stores (SSE2: every x86-64 has them, and 16
 * bytes per store already outruns DRAM); the unaligned head and tail go through memcpy. */
#ifdef OPF_X86
static inline void cr_stream_copy(void *restrict dst, const void *restrict src, size_t n) {
  char *d = dst;
  const char *s = src;
  size_t head = (16 - ((uintptr_t)d & 15)) & 15, i;
  if (head > n) head = n;
  memcpy(d, s, head);
  for (i = head; i + 64 <= n; i += 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)(s + i)), b = _mm_loadu_si128((const __m128i *)(s + i + 16));
    __m128i e = _mm_loadu_si128((const __m128i *)(s + i + 32)), f = _mm_loadu_si128((const __m128i *)(s + i + 48));
    _mm_stream_si128((__m128i *)(d + i), a);
    _mm_stream_si128((__m128i *)(d + i + 16), b);
    _mm_stream_si128((__m128i *)(d + i + 32), e);
    _mm_stream_si128((__m128i *)(d + i + 48), f);
  }
  for (; i + 16 <= n; i += 16)
    _mm_stream_si128((__m128i *)(d + i), _mm_loadu_si128((const __m128i *)(s + i)));
  memcpy(d + i, s + i, n - i);
}
#else
/* arm64 and others: memcpy. Arm cores detect runs of whole-line writes and stop allocating
 * them in the cache (write-streaming mode: Cortex-A7x, Neoverse), which is what the SSE2
 * non-temporal stores buy on x86; an STNP path would be the next step if a measurement on
 * real hardware shows otherwise (qemu-user cannot: it has no cache model). */
static inline void cr_stream_copy(void *restrict dst, const void *restrict src, size_t n) {
  memcpy(dst, src, n);
}
#endif

typedef struct {
  char *out;
  size_t es;
  int stream;
  cr_gen_fn gen;
  const void *ctx;
} cr_writer;

static inline void cr_write_range(int64_t lo, int64_t hi, void *p) {
  const cr_writer *w = p;
  if (!w->stream) {
    w->gen(w->ctx, lo, hi, w->out + (size_t)lo * w->es);
    return;
  }
  _Alignas(64) unsigned char buf[CR_BLOCK];
  const int64_t per = CR_BLOCK / (int64_t)w->es;
  for (int64_t a = lo; a < hi; a += per) {
    int64_t b = hi - a < per ? hi : a + per;
    w->gen(w->ctx, a, b, buf);
    cr_stream_copy(w->out + (size_t)a * w->es, buf, (size_t)(b - a) * w->es);
  }
  cr_sfence(); /* streaming stores are weakly ordered: publish them before the barrier */
}

/* ---- constant fills: the streaming form stores one 16-byte register directly. (Generating into
 * the L1 block first and streaming that out measured 3-5x slower for fills: the block's
 * memset, a rep stosb, drains the write-combining buffers of the streaming stores around it.) */
OPF_VEC static inline void cr_fill32(uint32_t *restrict y, int64_t n, uint32_t v) {
  for (int64_t i = 0; i < n; i++) y[i] = v;
}
OPF_VEC static inline void cr_fill64(uint64_t *restrict y, int64_t n, uint64_t v) {
  for (int64_t i = 0; i < n; i++) y[i] = v;
}

/* n elements of es bytes at dst (element aligned) set to the pattern in the low es bytes of
 * bits; streaming callers fence afterwards. */
static inline void cr_fill(void *dst, int64_t n, size_t es, uint64_t bits, int stream) {
  const size_t bytes = (size_t)n * es;
  if (!stream) {
    if (!bits) memset(dst, 0, bytes);
    else if (es == 4) cr_fill32(dst, n, (uint32_t)bits);
    else cr_fill64(dst, n, bits);
    return;
  }
  const uint64_t b = es == 4 ? (bits & 0xffffffffu) * 0x100000001ull : bits;
  const uint64_t pat[2] = {b, b}; /* dst - base is a multiple of es, so the phase is 0 */
#ifndef OPF_X86
  /* other architectures: plain stores (see cr_stream_copy) */
  (void)pat;
  if (es == 4) cr_fill32(dst, n, (uint32_t)bits);
  else cr_fill64(dst, n, bits);
#else
  const __m128i v = _mm_set1_epi64x((long long)b);
  char *d = dst;
  size_t i = (16 - ((uintptr_t)d & 15)) & 15;
  if (i > bytes) i = bytes;
  memcpy(d, pat, i);
  for (; i + 64 <= bytes; i += 64) {
    _mm_stream_si128((__m128i *)(d + i), v);
    _mm_stream_si128((__m128i *)(d + i + 16), v);
    _mm_stream_si128((__m128i *)(d + i + 32), v);
    _mm_stream_si128((__m128i *)(d + i + 48), v);
  }
  for (; i + 16 <= bytes; i += 16) _mm_stream_si128((__m128i *)(d + i), v);
  memcpy(d + i, pat, bytes - i);
#endif
}

typedef struct {
  char *out;
  size_t es;
  uint64_t bits;
  int stream;
} cr_filler;

/* Elements [lo, hi) of a fill (an opf_parallel_range body). */
static inline void cr_fill_range(int64_t lo, int64_t hi, void *p) {
  const cr_filler *f = p;
  cr_fill(f->out + (size_t)lo * f->es, hi - lo, f->es, f->bits, f->stream);
  if (f->stream) cr_sfence();
}

/* Whether an output is large enough to go around the cache. */
static inline int cr_large(const opf_tensor *out) { return out->nbytes >= CR_STREAM_MIN; }

/* Produce all of out through gen, threaded when it has at least min_par elements, streaming
 * when asked (pure generators; for copies that read a large input through the L1 block, the
 * alternation of read and write phases costs more than the read-for-ownership it saves). The
 * value of each element must depend only on its index, so any split gives the same bytes. */
static inline void cr_write(opf_tensor *out, cr_gen_fn gen, const void *ctx, int64_t min_par,
                            int stream) {
  cr_writer w = {out->data, opf_dtype_size(out->dtype), stream, gen, ctx};
  opf_parallel_range(opf_numel(out), min_par, cr_write_range, &w);
}

typedef struct {
  char *y;
  const char *x;
  size_t es;
  int stream;
} cr_copier;

static inline void cr_copy_range(int64_t lo, int64_t hi, void *p) {
  const cr_copier *k = p;
  size_t off = (size_t)lo * k->es, n = (size_t)(hi - lo) * k->es;
  if (!k->stream) {
    memcpy(k->y + off, k->x + off, n);
    return;
  }
  cr_stream_copy(k->y + off, k->x + off, n);
  cr_sfence();
}

/* y = x (same size and dtype), threaded; streaming stores straight from x when y is large. */
static inline void cr_copy(opf_tensor *y, const opf_tensor *x) {
  cr_copier k = {y->data, x->data, opf_dtype_size(x->dtype), cr_large(y)};
  opf_parallel_range(opf_numel(x), OPF_PAR_MIN, cr_copy_range, &k);
}

/* Bytes of a tensor from its shape (models run before allocation: nbytes is not set yet). */
static inline double cr_tbytes(const opf_tensor *t) {
  return (double)opf_numel(t) * (double)opf_dtype_size(t->dtype);
}

/* Forward-only operators: every pass is the forward (the driver wants a model for each). */
static inline double cr_fwd_only(opf_pass p, double fwd) {
  (void)p;
  return fwd;
}

/* Input i must have a shape by now (infer derives none of this family's inputs). */
static inline int cr_need_input(opf_case *c, int i) {
  if (c->in[i].ndim >= 0) return OPF_OK;
  const char *n = c->op->in[i].name;
  return opf_case_error(c, OPF_EINVAL, "input '%s' needs a shape (e.g. %s=1024x1024)", n, n);
}

/* Output 0 of dtype dt shaped by list param pi (creation and sampling operators). */
static inline int cr_shape_out(opf_case *c, int pi, opf_dtype dt) {
  const opf_list *l = &c->list[pi];
  for (int d = 0; d < l->n; d++)
    if (l->v[d] < 0)
      return opf_case_error(c, OPF_EINVAL, "shape: dim %d is %lld, must be >= 0", d,
                            (long long)l->v[d]);
  opf_set_out(c, 0, dt, l->n, l->v);
  return OPF_OK;
}

/* Element i of t set to v converted to t's dtype (C conversion: floats to integers truncate). */
static inline void cr_store(void *data, opf_dtype dt, int64_t i, double v) {
  switch (dt) {
  case OPF_F32: ((float *)data)[i] = (float)v; break;
  case OPF_F64: ((double *)data)[i] = v; break;
  case OPF_I32: ((int32_t *)data)[i] = (int32_t)v; break;
  case OPF_I64: ((int64_t *)data)[i] = (int64_t)v; break;
  default: ((uint8_t *)data)[i] = v != 0; break;
  }
}

/* Reject a value that an integer dtype cannot hold exactly (fill values, arange ends). */
static inline int cr_check_int(opf_case *c, opf_dtype dt, const char *what, double v) {
  if (opf_dtype_is_float(dt)) return OPF_OK;
  double lim = dt == OPF_I32 ? 2147483648.0 : 9223372036854775808.0;
  if (v != floor(v) || v < -lim || v >= lim)
    return opf_case_error(c, OPF_EINVAL, "%s %.17g is not representable in %s", what, v,
                          opf_dtype_name(dt));
  return OPF_OK;
}

/* The `shape` param of operators without inputs, and its shape sets (OPERATORS.md's
 * elementwise table; small adds a rank-0 output). HUGE is the huge entry's spec. */
#define CR_SHAPE_PARAM                                                                        \
  {.name = "shape", .type = OPF_P_LIST, .defs = "1024,1024", .min = 0, .max = 1e12,           \
   .help = "output shape, e.g. 1024x1024"}
#define CR_SHAPE_SETS_H(HUGE)                                                                 \
  {{"standard", "shape=1024x1024"},                                                           \
   {"skewed", "shape=10000x10"},                                                              \
   {"skewed", "shape=10x10000"},                                                              \
   {"skewed", "shape=10000x1"},                                                               \
   {"skewed", "shape=100000x10"},                                                             \
   {"small", "shape=16x16"},                                                                  \
   {"small", "shape=1x1024"},                                                                 \
   {"small", "shape=37x3"},                                                                   \
   {"small", "shape=none"},                                                                   \
   {"test", "shape=301x517"},                                                                 \
   {"test", "shape=3x5x7x11x13"},                                                             \
   {"large", "shape=8192x8192"},                                                              \
   {"huge", HUGE}}
#define CR_SHAPE_SETS CR_SHAPE_SETS_H("shape=46341x46341")
/* The same sets for operators shaped by an input x. */
#define CR_X_SETS                                                                             \
  {{"standard", "x=1024x1024"},                                                               \
   {"skewed", "x=10000x10"},                                                                  \
   {"skewed", "x=10x10000"},                                                                  \
   {"skewed", "x=10000x1"},                                                                   \
   {"skewed", "x=100000x10"},                                                                 \
   {"small", "x=16x16"},                                                                      \
   {"small", "x=1x1024"},                                                                     \
   {"small", "x=37x3"},                                                                       \
   {"small", "x=()"},                                                                         \
   {"test", "x=301x517"},                                                                     \
   {"large", "x=8192x8192"},                                                                  \
   {"huge", "x=46341x46341"}}

#endif
