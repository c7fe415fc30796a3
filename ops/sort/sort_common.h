/* sort_common.h: shared by the sorting and searching family (ops/sort/): order-preserving
 * unsigned keys for every dtype (the float bit flip), LSD radix sorts of keys and of
 * (key, index) pairs with skipped constant digits, insertion sort for short lines, the
 * (outer, n, inner) line walk with per-thread buffers, and a stable merge sort for references. */
#ifndef OPPERF_OPS_SORT_COMMON_H
#define OPPERF_OPS_SORT_COMMON_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "reduction/reduce.h"
#include "sort/vsort.h"

/* Lines at most this long are insertion-sorted (radix histograms cost more there). */
#define SRT_SMALL 48

/* ---- keys: unsigned integers ordered like the values (NaN after +inf, as NumPy sorts) ----
 * 4-byte dtypes give uint32 keys, 8-byte ones uint64; desc complements them. A float's key is
 * the sign bit plus its signed magnitude (-|x| for negatives), so -0.0 and +0.0 get the same
 * key: they are equal values (as NumPy and torch compare them), and a stable sort keeps them
 * in index order (callers that give values back take a zero's sign from the input; a key
 * comes back as +0.0). srt_keys maps every NaN (either sign, any payload) to the largest key
 * first: NaNs sort last, and come back as the NaN 0x7fffffff (0x7fff...f for float64). */
static inline uint32_t srt_fkey32(uint32_t w) { /* w: a float's bits, not a negative NaN */
  const uint32_t m = (uint32_t)((int32_t)w >> 31);
  return (w ^ (m | 0x80000000u)) - m;
}
static inline uint32_t srt_funkey32(uint32_t k) {
  const uint32_t m = (uint32_t)((int32_t)~k >> 31); /* all ones: a negative's key */
  return (k ^ (m | 0x80000000u)) - m;
}
static inline uint64_t srt_fkey64(uint64_t w) {
  const uint64_t m = (uint64_t)((int64_t)w >> 63);
  return (w ^ (m | 0x8000000000000000ull)) - m;
}
static inline uint64_t srt_funkey64(uint64_t k) {
  const uint64_t m = (uint64_t)((int64_t)~k >> 63);
  return (k ^ (m | 0x8000000000000000ull)) - m;
}
static inline uint32_t srt_key32(const void *p, int64_t i, opf_dtype dt) {
  uint32_t u;
  memcpy(&u, (const char *)p + (size_t)i * 4, 4);
  return dt == OPF_F32 ? srt_fkey32(u) : u ^ 0x80000000u;
}
static inline void srt_unkey32(uint32_t k, void *p, int64_t i, opf_dtype dt) {
  const uint32_t u = dt == OPF_F32 ? srt_funkey32(k) : k ^ 0x80000000u;
  memcpy((char *)p + (size_t)i * 4, &u, 4);
}
static inline uint64_t srt_key64(const void *p, int64_t i, opf_dtype dt) {
  uint64_t u;
  memcpy(&u, (const char *)p + (size_t)i * 8, 8);
  return dt == OPF_F64 ? srt_fkey64(u) : u ^ 0x8000000000000000ull;
}
static inline void srt_unkey64(uint64_t k, void *p, int64_t i, opf_dtype dt) {
  const uint64_t u = dt == OPF_F64 ? srt_funkey64(k) : k ^ 0x8000000000000000ull;
  memcpy((char *)p + (size_t)i * 8, &u, 8);
}
static inline int srt_wide(opf_dtype dt) { return dt == OPF_F64 || dt == OPF_I64; }

/* Keys of n elements from x[base + k*st] (desc: complemented), the dtype switch outside the
 * loops: k32[k] (4-byte dtypes) or k64[k] (8-byte dtypes); with pack, k64[k] = key32 << 32 | k
 * for the 4-byte dtypes instead. */
static inline void srt_keys(const void *x, opf_dtype dt, int64_t base, int64_t st, int64_t n,
                            int desc, int pack, uint32_t *restrict k32, uint64_t *restrict k64) {
  const uint32_t f32 = desc ? 0xffffffffu : 0;
  const uint64_t f64 = desc ? ~(uint64_t)0 : 0;
  switch (dt) {
  case OPF_F32:
  case OPF_I32: {
    const uint32_t *u = (const uint32_t *)x + base;
    const uint32_t sign = 0x80000000u;
    for (int64_t k = 0; k < n; k++) {
      uint32_t w = u[k * st];
      if (dt == OPF_F32) w = (w & 0x7fffffffu) > 0x7f800000u ? 0x7fffffffu : w; /* any NaN */
      const uint32_t key = (dt == OPF_F32 ? srt_fkey32(w) : w ^ sign) ^ f32;
      if (pack) k64[k] = (uint64_t)key << 32 | (uint64_t)k;
      else k32[k] = key;
    }
    break;
  }
  default: {
    const uint64_t *u = (const uint64_t *)x + base;
    const uint64_t sign = 0x8000000000000000ull;
    for (int64_t k = 0; k < n; k++) {
      uint64_t w = u[k * st];
      if (dt == OPF_F64) w = (w & ~sign) > 0x7ff0000000000000ull ? ~sign : w; /* any NaN */
      k64[k] = (dt == OPF_F64 ? srt_fkey64(w) : w ^ sign) ^ f64;
    }
    break;
  }
  }
}

/* ---- LSD radix sort of words of type T on bits [bit0, bits of T), 8 bits per pass ----
 * One pass builds every digit's histogram; a digit that is the same for all n words is
 * skipped (small integer ranges, shared float exponents). Ping-pongs between a and tmp and
 * returns the buffer holding the sorted words. Stable. srt_radix64 sorts 64-bit keys (bit0 0)
 * and (32-bit key << 32 | index) pairs (bit0 32: the index only carries along); srt_radix32
 * sorts 32-bit keys (values-only sorts of 4-byte dtypes). */
#define SRT_RADIX_DEF(T, name)                                                                \
  static inline T *name(T *restrict a, T *restrict tmp, int64_t n, int bit0) {                \
    enum { NB = (int)sizeof(T) };                                                             \
    const int np = (8 * NB - bit0) / 8;                                                       \
    uint32_t cnt[NB][256];                                                                    \
    memset(cnt, 0, sizeof cnt);                                                               \
    for (int64_t i = 0; i < n; i++) {                                                         \
      const T w = a[i] >> bit0;                                                               \
      for (int p = 0; p < np; p++) cnt[p][(w >> (8 * p)) & 255]++;                           \
    }                                                                                         \
    T *src = a, *dst = tmp;                                                                   \
    for (int p = 0; p < np; p++) {                                                            \
      const int sh = bit0 + 8 * p;                                                            \
      if (cnt[p][(src[0] >> sh) & 255] == (uint32_t)n) continue; /* constant digit */         \
      uint32_t off[256], s = 0;                                                               \
      for (int d = 0; d < 256; d++) off[d] = s, s += cnt[p][d];                               \
      for (int64_t i = 0; i < n; i++) {                                                       \
        const T w = src[i];                                                                   \
        dst[off[(w >> sh) & 255]++] = w;                                                      \
      }                                                                                       \
      T *t = src;                                                                             \
      src = dst, dst = t;                                                                     \
    }                                                                                         \
    return src;                                                                               \
  }
SRT_RADIX_DEF(uint64_t, srt_radix64)
SRT_RADIX_DEF(uint32_t, srt_radix32b)
#undef SRT_RADIX_DEF
static inline uint32_t *srt_radix32(uint32_t *restrict a, uint32_t *restrict tmp, int64_t n) {
  return srt_radix32b(a, tmp, n, 0);
}

/* Lines longer than this are sorted by srt_radix64_big (threaded, cache-friendly). */
#define SRT_BIG 65536

/* One long line of uint64 words (bits [bit0, 64) the key): a first MSD pass on the top byte
 * (threaded histograms and scatter) cuts the line into 256 buckets that fit in cache, which
 * threads then sort independently with srt_radix64 (whose constant top digit is skipped).
 * The sorted words end in a; tmp is scratch of n words. Stable, and the same result for any
 * thread count. Call outside parallel regions. */
static inline void srt_radix64_big(uint64_t *restrict a, uint64_t *restrict tmp, int64_t n,
                                   int bit0) {
  enum { T = 16 }; /* histogram slots: at most this many threads */
  uint64_t h[T][256];
  int64_t bstart[257];
  int nt = omp_get_max_threads() < T ? omp_get_max_threads() : T;
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num(), tn = omp_get_num_threads();
    const int64_t lo = n * t / tn, hi = n * (t + 1) / tn;
    uint64_t *c = h[t];
    memset(c, 0, 256 * sizeof *c);
    for (int64_t i = lo; i < hi; i++) c[a[i] >> 56]++;
#pragma omp barrier
#pragma omp single
    {
      uint64_t off = 0;
      for (int d = 0; d < 256; d++) {
        bstart[d] = (int64_t)off;
        for (int u = 0; u < tn; u++) {
          const uint64_t v = h[u][d];
          h[u][d] = off, off += v;
        }
      }
      bstart[256] = n;
    }
    for (int64_t i = lo; i < hi; i++) tmp[c[a[i] >> 56]++] = a[i];
#pragma omp barrier
#pragma omp for schedule(dynamic, 1)
    for (int d = 0; d < 256; d++) {
      const int64_t b0 = bstart[d], len = bstart[d + 1] - b0;
      if (len == 0) continue;
      const uint64_t *r = srt_radix64(tmp + b0, a + b0, len, bit0);
      if (r != a + b0) memcpy(a + b0, r, (size_t)len * sizeof *a);
    }
  }
}

/* Keys of type TK with 32-bit indices in a parallel array (argsort of 8-byte dtypes: 64-bit
 * keys; the vector key-index sort's fall-back for 4-byte dtypes: 32-bit keys). Stable. */
#define SRT_RADIX_KV_DEF(TK, name)                                                            \
  static inline void name(TK **k, uint32_t **v, TK *restrict tk, uint32_t *restrict tv,       \
                          int64_t n) {                                                        \
    enum { NB = (int)sizeof(TK) };                                                            \
    uint32_t cnt[NB][256];                                                                    \
    memset(cnt, 0, sizeof cnt);                                                               \
    TK *sk = *k, *dk = tk;                                                                    \
    uint32_t *sv = *v, *dv = tv;                                                              \
    for (int64_t i = 0; i < n; i++)                                                           \
      for (int p = 0; p < NB; p++) cnt[p][(sk[i] >> (8 * p)) & 255]++;                       \
    for (int p = 0; p < NB; p++) {                                                            \
      const int sh = 8 * p;                                                                   \
      if (cnt[p][(sk[0] >> sh) & 255] == (uint32_t)n) continue;                               \
      uint32_t off[256], s = 0;                                                               \
      for (int d = 0; d < 256; d++) off[d] = s, s += cnt[p][d];                               \
      for (int64_t i = 0; i < n; i++) {                                                       \
        const uint32_t o = off[(sk[i] >> sh) & 255]++;                                        \
        dk[o] = sk[i], dv[o] = sv[i];                                                         \
      }                                                                                       \
      TK *t = sk;                                                                             \
      sk = dk, dk = t;                                                                        \
      uint32_t *u = sv;                                                                       \
      sv = dv, dv = u;                                                                        \
    }                                                                                         \
    *k = sk, *v = sv;                                                                         \
  }
SRT_RADIX_KV_DEF(uint64_t, srt_radix_kv)
SRT_RADIX_KV_DEF(uint32_t, srt_radix_kv32)
#undef SRT_RADIX_KV_DEF

/* Short lines: up to SRT_TINY elements a branch-free rank sort (each element's rank is the
 * count of smaller ones, equal ones before it counting as smaller: stable, and no
 * mispredicted branches on random data); up to SRT_SMALL an insertion sort (stable). */
#define SRT_TINY 16
#define SRT_RANKS(a, n, r)                                                                    \
  for (int64_t i = 0; i < (n); i++) {                                                         \
    int c = 0;                                                                                \
    for (int64_t j = 0; j < (n); j++) c += ((a)[j] < (a)[i]) | (((a)[j] == (a)[i]) & (j < i));  \
    (r)[i] = c;                                                                               \
  }
#define SRT_INS_DEF(T, name)                                                                  \
  static inline void name(T *a, int64_t n) {                                                  \
    if (n <= SRT_TINY) {                                                                      \
      T t[SRT_TINY];                                                                          \
      int r[SRT_TINY];                                                                        \
      SRT_RANKS(a, n, r)                                                                      \
      for (int64_t i = 0; i < n; i++) t[r[i]] = a[i];                                         \
      memcpy(a, t, (size_t)n * sizeof *a);                                                    \
      return;                                                                                 \
    }                                                                                         \
    for (int64_t i = 1; i < n; i++) {                                                         \
      const T w = a[i];                                                                       \
      int64_t j = i;                                                                          \
      for (; j > 0 && a[j - 1] > w; j--) a[j] = a[j - 1];                                     \
      a[j] = w;                                                                               \
    }                                                                                         \
  }
SRT_INS_DEF(uint64_t, srt_ins64)
SRT_INS_DEF(uint32_t, srt_ins32)
#undef SRT_INS_DEF
static inline void srt_ins_kv(uint64_t *k, uint32_t *v, int64_t n) {
  if (n <= SRT_TINY) {
    uint64_t t[SRT_TINY];
    uint32_t u[SRT_TINY];
    int r[SRT_TINY];
    SRT_RANKS(k, n, r)
    for (int64_t i = 0; i < n; i++) t[r[i]] = k[i], u[r[i]] = v[i];
    memcpy(k, t, (size_t)n * sizeof *k);
    memcpy(v, u, (size_t)n * sizeof *v);
    return;
  }
  for (int64_t i = 1; i < n; i++) {
    const uint64_t w = k[i];
    const uint32_t x = v[i];
    int64_t j = i;
    for (; j > 0 && k[j - 1] > w; j--) k[j] = k[j - 1], v[j] = v[j - 1];
    k[j] = w, v[j] = x;
  }
}

/* ---- one line of keys, ascending: the vector sorts (vsort.h) where they beat the radix
 * sorts, else the radix sorts (insertion sort for short lines, the threaded MSD + LSD sort
 * beyond SRT_BIG). Measured on AMD Zen 5 (AVX-512, 1 thread; the quicksort with 4-vector
 * partition steps and a sorted-sample pivot): 64-bit keys and 32-bit keys are faster with the
 * vector sort at every length (the radix sort of 64-bit keys takes up to 8 passes); packed
 * key << 32 | index words (4 radix passes, the index digits skipped) only up to SRT_VEC64.
 * Beyond SRT_BIG the threaded radix sort is kept when threads are available (srt_long_vec).
 * bit0: 32 for packed words, 0 for 64-bit keys. Returns the buffer holding the sorted words
 * (a or t). ---- */
#define SRT_VEC64 16384 /* packed words (interleaved 1-thread runs, ns a word, vector/radix:
                          * 2048: 4.5-5.5/7.9-9.0, 8192: 6.2-7.0/7.4-8.0, 32768: 8.1-8.4/7.3-8.2,
                          * 262144: 9.8-11.6/7.0-8.2, under load 15 on the 2-core VM) */

/* 1 when a line longer than SRT_BIG goes to the (one-thread) vector sort rather than the
 * threaded radix sort: AVX-512 and one thread. */
static inline int srt_long_vec(void) { return omp_get_max_threads() == 1 && srt_vsort_ok(); }

static inline uint64_t *srt_sort64(uint64_t *restrict a, uint64_t *restrict t, int64_t n, int bit0) {
  if (n <= (bit0 ? SRT_VEC64 : SRT_BIG) && srt_vsort64(a, t, n)) return a;
  if (n <= SRT_SMALL) {
    srt_ins64(a, n);
    return a;
  }
  if (n > SRT_BIG) {
    if (!bit0 && srt_long_vec() && srt_vsort64(a, t, n)) return a;
    srt_radix64_big(a, t, n, bit0);
    return a;
  }
  return srt_radix64(a, t, n, bit0);
}
static inline uint32_t *srt_sort32(uint32_t *restrict a, uint32_t *restrict t, int64_t n) {
  if (srt_vsort32(a, t, n)) return a;
  if (n <= SRT_SMALL) {
    srt_ins32(a, n);
    return a;
  }
  return srt_radix32(a, t, n);
}

/* ---- the line walk: a line is x[o, 0..n, j] (stride inner); lines go to threads, each with
 * its own slot of workspace (4 words of 8 bytes per element of the line). Lines along an outer
 * axis (inner > 1) go in groups of SRT_G adjacent columns, copied into a buffer first
 * (srt_group_copy) and their results copied back: one pass over each cache line serves
 * SRT_G lines, where a line-by-line walk with a power-of-two stride would thrash the cache
 * sets. ---- */
#define SRT_G 16

/* A tensor whose lines the walk gathers (inputs) or scatters (outputs) for column groups:
 * t points into the case; len is its line length, the same stride (inner) as the input. */
typedef struct srt_lt {
  opf_tensor *t;
  int64_t len;
  int out;
} srt_lt;

typedef struct srt_geom {
  opf_rgeom g;
  int64_t nlines;
  size_t slot; /* bytes of one thread's slot */
  int slots;   /* thread slots the workspace holds */
  int64_t gw;  /* columns of a group (inner > 1): SRT_G, fewer when the groups would not
                * give every thread one (x=100000x10 axis=0: one group of 10 columns ran on
                * one thread; two of 5 split it) */
} srt_geom;

/* lts: the line tensors of the operator's walk (bpl = their bytes per line, for the group
 * buffers when inner > 1). */
static inline srt_geom srt_geom_make(const opf_case *c, int input, int axis, size_t bpl) {
  srt_geom s;
  s.g = opf_red_geom(&c->in[input], axis, 0);
  s.nlines = s.g.outer * s.g.inner;
  s.slot = ((size_t)s.g.n * 32 + (s.g.inner > 1 ? SRT_G * bpl : 0) + 63) / 64 * 64;
  s.slots = omp_get_max_threads() > 0 ? omp_get_max_threads() : 1;
  if ((int64_t)s.slots > s.nlines) s.slots = s.nlines > 0 ? (int)s.nlines : 1;
  s.gw = SRT_G;
  const int64_t gpo = (s.g.inner + SRT_G - 1) / SRT_G;
  if (s.g.inner > 1 && s.g.outer > 0 && s.g.outer * gpo < s.slots) {
    const int64_t need = (s.slots + s.g.outer - 1) / s.g.outer; /* groups per outer index */
    s.gw = (s.g.inner + need - 1) / need;
  }
  return s;
}

/* Offset of element k of line l. */
static inline int64_t srt_at(const opf_rgeom *g, int64_t l, int64_t k) {
  const int64_t o = l / g->inner, j = l - o * g->inner;
  return (o * g->n + k) * g->inner + j;
}

/* fn(ctx, c, g, l, slot): line l of geometry g, data in case c (the operator's case, or a
 * copy pointing at a gathered group). */
typedef void (*srt_line_fn)(void *ctx, const opf_case *c, const opf_rgeom *g, int64_t line,
                            void *slot);

/* Copy columns j0 .. j0 + gw of outer index o of a tensor (line length len, stride inner)
 * to or from a buffer: compact (full groups), len rows of gw elements, copied in 64-byte row
 * pieces, the lines then strided by gw inside a block that stays in cache; else (narrow
 * groups, inner < SRT_G) transposed into gw contiguous lines. The transpose writes each row
 * to gw lines len elements apart, which thrashes one L1 set when that is 4 KiB (1024x1024
 * axis=0: sort forward 8.1 -> 7.0 ms, backward 4.8 -> 2.8, topk 3.6 -> 1.9 with the compact
 * copy on AMD Zen 5); on 10-column inputs the transpose is the faster. */
static inline void srt_group_copy(opf_tensor *t, int64_t len, int64_t inner, int64_t o,
                                  int64_t j0, int64_t gw, char *buf, int to_buf) {
  const size_t es = opf_dtype_size(t->dtype), w = (size_t)gw * es;
  char *base = (char *)t->data + (size_t)((o * len) * inner + j0) * es;
  for (int64_t k = 0; k < len; k++) {
    char *row = base + (size_t)(k * inner) * es;
    if (gw == SRT_G) {
      if (to_buf) memcpy(buf + (size_t)k * w, row, w);
      else memcpy(row, buf + (size_t)k * w, w);
    } else if (es == 4) {
      uint32_t *r = (uint32_t *)row, *b = (uint32_t *)buf;
      if (to_buf) for (int64_t q = 0; q < gw; q++) b[q * len + k] = r[q];
      else for (int64_t q = 0; q < gw; q++) r[q] = b[q * len + k];
    } else {
      uint64_t *r = (uint64_t *)row, *b = (uint64_t *)buf;
      if (to_buf) for (int64_t q = 0; q < gw; q++) b[q * len + k] = r[q];
      else for (int64_t q = 0; q < gw; q++) r[q] = b[q * len + k];
    }
  }
}

/* Unit u of the walk: a line (inner 1), or a group of up to SRT_G columns. */
static inline void srt_unit(const srt_geom *s, opf_case *c, srt_line_fn fn, void *ctx,
                            const srt_lt *lt, int nlt, int64_t u, void *slot) {
  if (s->g.inner == 1) {
    fn(ctx, c, &s->g, u, slot);
    return;
  }
  const int64_t gpo = (s->g.inner + s->gw - 1) / s->gw, o = u / gpo, j0 = (u % gpo) * s->gw;
  const int64_t gw = s->g.inner - j0 < s->gw ? s->g.inner - j0 : s->gw;
  opf_case cc = *c;
  char *buf = (char *)slot + (size_t)s->g.n * 32;
  for (int i = 0; i < nlt; i++) { /* the copy's tensor at the same place as lt[i].t */
    opf_tensor *ct = (opf_tensor *)((char *)&cc + ((char *)lt[i].t - (char *)c));
    ct->data = buf;
    if (!lt[i].out) srt_group_copy(lt[i].t, lt[i].len, s->g.inner, o, j0, gw, buf, 1);
    buf += (size_t)(SRT_G * lt[i].len) * opf_dtype_size(lt[i].t->dtype);
  }
  /* the group's gw lines: strided by gw (compact copy) or contiguous (transposed) */
  const opf_rgeom gg = gw == SRT_G ? (opf_rgeom){1, s->g.n, gw} : (opf_rgeom){gw, s->g.n, 1};
  for (int64_t q = 0; q < gw; q++) fn(ctx, &cc, &gg, q, slot);
  buf = (char *)slot + (size_t)s->g.n * 32;
  for (int i = 0; i < nlt; i++) {
    if (lt[i].out) srt_group_copy(lt[i].t, lt[i].len, s->g.inner, o, j0, gw, buf, 0);
    buf += (size_t)(SRT_G * lt[i].len) * opf_dtype_size(lt[i].t->dtype);
  }
}

/* Call fn for every line, threaded over units (dynamic: line costs vary with the data) when
 * the work is large enough; slot t of ws goes to thread t. */
static inline void srt_for_lines(const srt_geom *s, opf_case *c, srt_line_fn fn, void *ctx,
                                 const srt_lt *lt, int nlt) {
  const int64_t nu = s->g.inner == 1 ? s->nlines
                                     : s->g.outer * ((s->g.inner + s->gw - 1) / s->gw);
  const int64_t work = s->nlines * s->g.n;
  int nt = omp_get_max_threads() < s->slots ? omp_get_max_threads() : s->slots;
  if (work < OPF_PAR_MIN || nt < 2 || nu < 2) {
    for (int64_t u = 0; u < nu; u++) srt_unit(s, c, fn, ctx, lt, nlt, u, c->ws);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    void *slot = (char *)c->ws + (size_t)omp_get_thread_num() * s->slot;
    const int ch = s->g.inner == 1 ? 16 : 1; /* lines in chunks, groups one by one */
#pragma omp for schedule(dynamic, ch)
    for (int64_t u = 0; u < nu; u++) srt_unit(s, c, fn, ctx, lt, nlt, u, slot);
  }
}

/* Lines of 4-byte dtypes longer than this go to the key-index sort with 32-bit keys
 * (srt_vsort_kv32: 16 pairs a partition step); shorter ones, whose cost is the leaves, to
 * packed words (measured on Zen 5, 1 thread, ns a pair, packed/key-index: 128: 0.74/0.91,
 * 256: 2.0/1.8, 1024: 3.0/2.4, 16384: 3.9/3.0, 2^20: 5.3/3.8). */
#define SRT_KV32_MIN 128

/* A line's sorted order (srt_line_pairs): one of packed key32 << 32 | index words, 64-bit
 * keys (8-byte dtypes) or 32-bit keys (4-byte dtypes, the key-index sort) with the indices
 * beside them. */
typedef struct srt_pairs {
  const uint64_t *pk, *k8;
  const uint32_t *k4, *v;
} srt_pairs;
/* Index (line position) and, for 4-byte dtypes, 32-bit key of sorted pair k. */
static inline uint32_t srt_pair_ix(const srt_pairs *p, int64_t k) {
  return p->pk ? (uint32_t)p->pk[k] : p->v[k];
}
static inline uint32_t srt_pair_key32(const srt_pairs *p, int64_t k) {
  return p->pk ? (uint32_t)(p->pk[k] >> 32) : p->k4[k];
}

/* Sorted order of line l of input 0 into the slot (desc: largest first, equal keys in index
 * order). Indices are line positions. 4-byte dtypes: the key-index sort from SRT_KV32_MIN to
 * SRT_BIG, else packed words (beyond SRT_BIG the MSD + LSD radix sort, faster there even on
 * one thread: argsort 1024x1024 axis=all 4.76 ms against 4.96 with the key-index sort);
 * 8-byte dtypes: keys plus indices. */
static srt_pairs srt_line_kv32(const opf_case *c, const opf_rgeom *g, int desc, int64_t l,
                                void *slot) {
  const int64_t n = g->n;
  uint32_t *k4 = slot, *v = k4 + n, *tk = v + n, *tv = tk + n;
  srt_pairs p = {NULL, NULL, NULL, NULL};
  const int64_t base = srt_at(g, l, 0);
  if (g->inner != 1 || !srt_vkeys32((const uint32_t *)c->in[0].data + base, k4, n,
                                    desc ? 0xffffffffu : 0, c->dtype == OPF_F32))
    srt_keys(c->in[0].data, c->dtype, base, g->inner, n, desc, 0, k4, NULL);
  for (int64_t k = 0; k < n; k++) v[k] = (uint32_t)k;
  if (srt_vsort_kv32(k4, v, tk, tv, n)) p.k4 = k4, p.v = v;
  return p;
}
static srt_pairs srt_line_kv64(const opf_case *c, const opf_rgeom *g, int desc, int64_t l,
                               void *slot) {
  const int64_t n = g->n;
  uint64_t *k8 = slot, *t8 = k8 + n;
  uint32_t *v = (uint32_t *)(t8 + n), *tv = v + n;
  srt_keys(c->in[0].data, c->dtype, srt_at(g, l, 0), g->inner, n, desc, 0, NULL, k8);
  for (int64_t k = 0; k < n; k++) v[k] = (uint32_t)k;
  const int vec = n > 1 && srt_vsort_kv(k8, v, t8, tv, n); /* stable: ties by index */
  if (!vec && n <= SRT_SMALL) srt_ins_kv(k8, v, n);
  else if (!vec) srt_radix_kv(&k8, &v, t8, tv, n);
  return (srt_pairs){NULL, k8, NULL, v};
}
/* (inlined: on lines of 10 the call and the struct return cost a third more) */
__attribute__((always_inline, unused)) static inline srt_pairs
srt_line_pairs(const opf_case *c, const opf_rgeom *g, int desc, int64_t l, void *slot) {
  const int64_t n = g->n;
  if (srt_wide(c->dtype)) return srt_line_kv64(c, g, desc, l, slot);
  if (n > SRT_KV32_MIN && n <= SRT_BIG) {
    const srt_pairs p = srt_line_kv32(c, g, desc, l, slot);
    if (p.k4) return p;
  }
  uint64_t *a = slot, *t = a + n;
  srt_keys(c->in[0].data, c->dtype, srt_at(g, l, 0), g->inner, n, desc, 1, NULL, a);
  return (srt_pairs){srt_sort64(a, t, n, 32), NULL, NULL, NULL};
}

/* ---- references: a stable merge sort of an index array by value (desc reverses the
 * comparison, keeping equal elements in index order) ---- */
static inline int srt_ref_less(const opf_tensor *t, int64_t a, int64_t b) {
  switch (t->dtype) { /* NaN above everything (NumPy's order), equal to NaN */
  case OPF_F32: {
    const float x = ((const float *)t->data)[a], y = ((const float *)t->data)[b];
    return x < y || (isnan(y) && !isnan(x));
  }
  case OPF_F64: {
    const double x = ((const double *)t->data)[a], y = ((const double *)t->data)[b];
    return x < y || (isnan(y) && !isnan(x));
  }
  case OPF_I32: return ((const int32_t *)t->data)[a] < ((const int32_t *)t->data)[b];
  default: return ((const int64_t *)t->data)[a] < ((const int64_t *)t->data)[b];
  }
}

/* Sort idx[0..n) (flat element offsets into t) stably; tmp has room for n. */
static inline void srt_ref_msort(const opf_tensor *t, int64_t *idx, int64_t *tmp, int64_t n,
                                 int desc) {
  for (int64_t w = 1; w < n; w *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * w) {
      int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        const int take_j = desc ? srt_ref_less(t, idx[i], idx[j]) : srt_ref_less(t, idx[j], idx[i]);
        tmp[k++] = take_j ? idx[j++] : idx[i++];
      }
      while (i < mid) tmp[k++] = idx[i++];
      while (j < hi) tmp[k++] = idx[j++];
    }
    memcpy(idx, tmp, (size_t)n * sizeof *idx);
  }
}

/* The references of sort, argsort and topk: each line of g (of input 0) merge-sorted (stable;
 * desc: largest first), its first m entries written with output geometry {outer, m, inner}:
 * values to vals and line positions to pos (either may be NULL). */
static inline int srt_ref_lines(opf_case *c, const opf_rgeom *g, int desc, int64_t m,
                                void *vals, int64_t *pos) {
  const int64_t n = g->n;
  const opf_rgeom go = {g->outer, m, g->inner};
  const size_t es = opf_dtype_size(c->dtype);
  int64_t *idx = opf_alloc((size_t)(2 * n + 1) * sizeof(int64_t));
  if (!idx) return opf_case_error(c, OPF_ENOMEM, "%s reference: out of memory", c->op->name);
  for (int64_t l = 0; l < g->outer * g->inner; l++) {
    for (int64_t k = 0; k < n; k++) idx[k] = srt_at(g, l, k);
    srt_ref_msort(&c->in[0], idx, idx + n, n, desc);
    for (int64_t j = 0; j < m; j++) {
      const int64_t at = srt_at(&go, l, j);
      if (pos) pos[at] = (idx[j] - srt_at(g, l, 0)) / g->inner;
      if (vals)
        memcpy((char *)vals + (size_t)at * es, (const char *)c->in[0].data + (size_t)idx[j] * es, es);
    }
  }
  opf_free(idx);
  return OPF_OK;
}

/* Resolve an axis param of input `input` into an axis index ('all' refused), with messages. */
static inline int srt_axis(opf_case *c, int input, double axis_p, int *axis) {
  if (axis_p == OPF_AXIS_ALL)
    return opf_case_error(c, OPF_EINVAL, "axis 'all' is not supported by %s: give one axis",
                          c->op->name);
  *axis = opf_axis(axis_p, c->in[input].ndim);
  if (*axis < 0) {
    char s[96];
    return opf_case_error(c, OPF_EINVAL, "axis %d is out of range for input '%s' of shape %s (%d dims)",
                          (int)axis_p, c->op->in[input].name,
                          opf_shape_str(&c->in[input], s, sizeof s), c->in[input].ndim);
  }
  return OPF_OK;
}

#endif
