/* transpose.c: axis permutation of a tensor: 2-D transpose / full axis reversal, and the 4-D
 * layout changes NCHW->NHWC and NHWC->NCHW, with the inverse permutation as gradient.
 * Every case reduces (after merging axes that stay adjacent) to a batch of strided 2-D
 * transposes, done in cache tiles with AVX-512 register micro-kernels (AVX2 / scalar
 * fallbacks), threaded over tiles; see the notes on aliasing strides and thin strips below. */
#include <immintrin.h>

#include "linalg/linalg.h"

enum { PERM_REVERSE = 0, PERM_NCHW2NHWC = 1, PERM_NHWC2NCHW = 2 };

/* out axis k is input axis perm[k]; returns the rank the perm needs (0: any rank >= 2). */
static int perm_of(int kind, int ndim, int *perm) {
  static const int to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};
  for (int k = 0; k < ndim; k++)
    perm[k] = kind == PERM_REVERSE ? ndim - 1 - k : kind == PERM_NCHW2NHWC ? to_nhwc[k] : to_nchw[k];
  return kind == PERM_REVERSE ? 0 : 4;
}

/* ---- the plan: batch of (R, C) transposes, in[r*lda + c] -> out[c*ldb + r] ---- */
typedef struct {
  int nb;                              /* batch axes (outermost first) */
  int64_t bn[OPF_MAX_DIMS];            /* their sizes */
  int64_t bin[OPF_MAX_DIMS], bout[OPF_MAX_DIMS]; /* their input and output strides */
  int64_t nbatch;
  int64_t R, C, lda, ldb;
  int rows;                            /* innermost axis unmoved: copy rows of C elements */
  size_t es;
} tr_plan;

/* Drop unit axes, merge input axes that stay adjacent and in order in the output, then pick
 * the 2-D tile axes: the input's innermost axis (columns) and the output's innermost (rows). */
static void tr_plan_make(tr_plan *pl, int ndim, const int64_t *shape, const int *perm, size_t es) {
  int newidx[OPF_MAX_DIMS], n = 0;
  for (int i = 0; i < ndim; i++) newidx[i] = shape[i] != 1 ? n++ : -1;
  int q[OPF_MAX_DIMS], m = 0; /* output order over kept axes, in new indices */
  for (int k = 0; k < ndim; k++)
    if (newidx[perm[k]] >= 0) q[m++] = newidx[perm[k]];
  int64_t d[OPF_MAX_DIMS];
  for (int i = 0; i < ndim; i++)
    if (newidx[i] >= 0) d[newidx[i]] = shape[i];
  /* groups: runs of output positions whose input axes are consecutive */
  int gstart[OPF_MAX_DIMS], ng = 0;
  for (int k = 0; k < m; k++)
    if (k == 0 || q[k] != q[k - 1] + 1) gstart[ng++] = k;
  /* group g covers input axes q[gstart[g]] .. + len - 1; order groups by their first input axis */
  int64_t gsize[OPF_MAX_DIMS];
  int gfirst[OPF_MAX_DIMS];
  for (int g = 0; g < ng; g++) {
    int end = g + 1 < ng ? gstart[g + 1] : m;
    gsize[g] = 1;
    gfirst[g] = q[gstart[g]];
    for (int k = gstart[g]; k < end; k++) gsize[g] *= d[q[k]];
  }
  int inpos[OPF_MAX_DIMS]; /* input position of output group g */
  for (int g = 0; g < ng; g++) {
    inpos[g] = 0;
    for (int h = 0; h < ng; h++) inpos[g] += gfirst[h] < gfirst[g];
  }
  int64_t ins[OPF_MAX_DIMS], ind[OPF_MAX_DIMS], outs[OPF_MAX_DIMS];
  for (int g = 0; g < ng; g++) ind[inpos[g]] = gsize[g];
  int64_t s = 1;
  for (int i = ng - 1; i >= 0; i--) ins[i] = s, s *= ind[i];
  s = 1;
  for (int g = ng - 1; g >= 0; g--) outs[inpos[g]] = s, s *= gsize[g];

  memset(pl, 0, sizeof *pl);
  pl->es = es;
  pl->nbatch = 1;
  int last = ng - 1, orow = ng ? inpos[ng - 1] : -1;
  if (ng == 0 || orow == last) { /* innermost axis stays innermost (identity after merging) */
    pl->rows = 1;
    pl->R = 1;
    pl->C = ng ? ind[last] : 1;
    pl->lda = pl->ldb = pl->C;
    for (int i = 0; i < last; i++) {
      pl->bn[pl->nb] = ind[i], pl->bin[pl->nb] = ins[i], pl->bout[pl->nb] = outs[i];
      pl->nbatch *= ind[i], pl->nb++;
    }
    return;
  }
  pl->R = ind[orow], pl->lda = ins[orow];
  pl->C = ind[last], pl->ldb = outs[last];
  for (int i = 0; i < ng; i++) {
    if (i == orow || i == last) continue;
    pl->bn[pl->nb] = ind[i], pl->bin[pl->nb] = ins[i], pl->bout[pl->nb] = outs[i];
    pl->nbatch *= ind[i], pl->nb++;
  }
}

/* ---- kernels (element-size generic: float32/int32 move as 4-byte words, float64/int64 as
 * 8-byte words; only loads, stores and shuffles, so integer bit patterns pass unchanged) ---- */

/* Portable block: the compiler turns the strided side into scalar inserts, so this serves for
 * ragged edges and CPUs without AVX2 only. */
#define TR_PLAIN(T, sfx)                                                                       \
  static void tr_plain_##sfx(const T *restrict in, int64_t lda, T *restrict out, int64_t ldb, \
                             int64_t R, int64_t C) {                                           \
    for (int64_t c = 0; c < C; c++)                                                            \
      for (int64_t r = 0; r < R; r++) out[c * ldb + r] = in[r * lda + c];                     \
  }
TR_PLAIN(uint32_t, 4)
TR_PLAIN(uint64_t, 8)

/* Thin strips (NCHW<->NHWC with 3 channels): fewer than 16 rows whose output rows are exactly
 * R long interleave R input rows into one contiguous run; fewer than 8 columns of contiguous
 * input rows de-interleave into C output rows. With R (or C) a compile-time 2, 3 or 4 the
 * compiler vectorises the loop with permutes and it streams at memcpy speed (~60 GB/s at
 * (32,3,65536)); other widths fall back to a scalar loop (~15 GB/s), as do 64-wide tiles
 * (~25 GB/s). */
#define TR_THIN(T, sfx)                                                                        \
  __attribute__((always_inline)) static inline void tr_il_##sfx(                              \
      const T *restrict in, int64_t lda, T *restrict out, int64_t R, int64_t C) {             \
    for (int64_t c = 0; c < C; c++)                                                            \
      for (int64_t r = 0; r < R; r++) out[c * R + r] = in[r * lda + c];                       \
  }                                                                                            \
  __attribute__((always_inline)) static inline void tr_dl_##sfx(                              \
      const T *restrict in, T *restrict out, int64_t ldb, int64_t R, int64_t C) {             \
    for (int64_t r = 0; r < R; r++)                                                            \
      for (int64_t c = 0; c < C; c++) out[c * ldb + r] = in[r * C + c];                       \
  }                                                                                            \
  OPF_VEC static void tr_interleave_##sfx(const T *restrict in, int64_t lda, T *restrict out, \
                                          int64_t R, int64_t C) {                              \
    switch (R) {                                                                               \
    case 2: tr_il_##sfx(in, lda, out, 2, C); break;                                            \
    case 3: tr_il_##sfx(in, lda, out, 3, C); break;                                            \
    case 4: tr_il_##sfx(in, lda, out, 4, C); break;                                            \
    default: tr_il_##sfx(in, lda, out, R, C);                                                  \
    }                                                                                          \
  }                                                                                            \
  OPF_VEC static void tr_deinterleave_##sfx(const T *restrict in, T *restrict out, int64_t ldb, \
                                            int64_t R, int64_t C) {                            \
    switch (C) {                                                                               \
    case 2: tr_dl_##sfx(in, out, ldb, R, 2); break;                                            \
    case 3: tr_dl_##sfx(in, out, ldb, R, 3); break;                                            \
    case 4: tr_dl_##sfx(in, out, ldb, R, 4); break;                                            \
    default: tr_dl_##sfx(in, out, ldb, R, C);                                                  \
    }                                                                                          \
  }
TR_THIN(uint32_t, 4)
TR_THIN(uint64_t, 8)

static void tr_plain(const void *in, int64_t lda, void *out, int64_t ldb, int64_t R, int64_t C,
                     size_t es) {
  if (R < 16 && ldb == R) {
    if (es == 4) tr_interleave_4(in, lda, out, R, C);
    else tr_interleave_8(in, lda, out, R, C);
  } else if (C < 8 && lda == C) {
    if (es == 4) tr_deinterleave_4(in, out, ldb, R, C);
    else tr_deinterleave_8(in, out, ldb, R, C);
  } else if (es == 4) {
    tr_plain_4(in, lda, out, ldb, R, C);
  } else {
    tr_plain_8(in, lda, out, ldb, R, C);
  }
}

#define TR_AVX2 __attribute__((target("avx2"), always_inline)) static inline
#define TR_AVX512 __attribute__((target("avx512f"), always_inline)) static inline

/* 8x8 of 4-byte words in AVX2 registers: eight row loads, 24 shuffles, eight row stores. */
TR_AVX2 void tr8x8_4(const uint32_t *in, int64_t lda, uint32_t *out, int64_t ldb) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps((const float *)(in + i * lda));
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; i++) {
    _mm256_storeu_ps((float *)(out + i * ldb), _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps((float *)(out + (i + 4) * ldb), _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}

/* 4x4 of 8-byte words: four row loads, eight shuffles, four row stores. */
TR_AVX2 void tr4x4_8(const uint64_t *in, int64_t lda, uint64_t *out, int64_t ldb) {
  __m256d r[4];
  for (int i = 0; i < 4; i++) r[i] = _mm256_loadu_pd((const double *)(in + i * lda));
  __m256d t0 = _mm256_unpacklo_pd(r[0], r[1]), t1 = _mm256_unpackhi_pd(r[0], r[1]);
  __m256d t2 = _mm256_unpacklo_pd(r[2], r[3]), t3 = _mm256_unpackhi_pd(r[2], r[3]);
  _mm256_storeu_pd((double *)out, _mm256_permute2f128_pd(t0, t2, 0x20));
  _mm256_storeu_pd((double *)(out + ldb), _mm256_permute2f128_pd(t1, t3, 0x20));
  _mm256_storeu_pd((double *)(out + 2 * ldb), _mm256_permute2f128_pd(t0, t2, 0x31));
  _mm256_storeu_pd((double *)(out + 3 * ldb), _mm256_permute2f128_pd(t1, t3, 0x31));
}

/* One block of at most a tile: full sub-blocks in registers, the ragged edges plain. */
__attribute__((target("avx2"))) static void tr_block_avx2(const void *vin, int64_t lda,
                                                           void *vout, int64_t ldb, int64_t R,
                                                           int64_t C, size_t es) {
  const int64_t w = es == 4 ? 8 : 4, rw = R / w * w, cw = C / w * w;
  for (int64_t r = 0; r < rw; r += w)
    for (int64_t c = 0; c < cw; c += w) {
      if (es == 4)
        tr8x8_4((const uint32_t *)vin + r * lda + c, lda, (uint32_t *)vout + c * ldb + r, ldb);
      else
        tr4x4_8((const uint64_t *)vin + r * lda + c, lda, (uint64_t *)vout + c * ldb + r, ldb);
    }
  const char *in = vin;
  char *out = vout;
  tr_plain(in + (size_t)(rw * lda) * es, lda, out + (size_t)rw * es, ldb, R - rw, C, es);
  tr_plain(in + (size_t)cw * es, lda, out + (size_t)(cw * ldb) * es, ldb, rw, C - cw, es);
}

/* AVX-512, 4-byte words: 16 input rows x 8 columns (half-line loads, paired into zmm as rows
 * i | i+4 and 8+i | 12+i so the last shuffle lands in order) -> 8 output rows of 16 (one full
 * cache line each). Writing whole lines, and only eight per block, is what keeps the stores
 * fast: at 1008x1008 this runs at ~100 GB/s in L3 against ~75 for a 16x16 block. */
TR_AVX512 void tr16x8_4(const uint32_t *in, int64_t lda, uint32_t *out, int64_t ldb) {
  __m512i z[8], t[8];
  for (int i = 0; i < 4; i++) {
    z[i] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const void *)(in + i * lda))),
                              _mm256_loadu_si256((const void *)(in + (i + 4) * lda)), 1);
    z[4 + i] = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_loadu_si256((const void *)(in + (8 + i) * lda))),
        _mm256_loadu_si256((const void *)(in + (12 + i) * lda)), 1);
  }
  for (int i = 0; i < 8; i += 2) { /* 32-bit interleave of row pairs, per 128-bit lane */
    t[i] = _mm512_unpacklo_epi32(z[i], z[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(z[i], z[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) { /* z[k] lanes: column k, k+4 of the low and high row groups */
    z[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    z[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    z[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    z[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int k = 0; k < 4; k++) {
    _mm512_storeu_si512(out + k * ldb, _mm512_shuffle_i32x4(z[k], z[4 + k], 0x88));
    _mm512_storeu_si512(out + (k + 4) * ldb, _mm512_shuffle_i32x4(z[k], z[4 + k], 0xDD));
  }
}

/* AVX-512, 8-byte words: 8x8, one full line per row in and out. */
TR_AVX512 void tr8x8_8(const uint64_t *in, int64_t lda, uint64_t *out, int64_t ldb) {
  __m512i r[8], t[8];
  for (int i = 0; i < 8; i++) r[i] = _mm512_loadu_si512(in + i * lda);
  for (int i = 0; i < 8; i += 2) { /* t[2p+k] lane L = column 2L+k of rows 2p, 2p+1 */
    t[i] = _mm512_unpacklo_epi64(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi64(r[i], r[i + 1]);
  }
  for (int k = 0; k < 2; k++) {
    r[k] = _mm512_shuffle_i64x2(t[k], t[2 + k], 0x88);
    r[2 + k] = _mm512_shuffle_i64x2(t[k], t[2 + k], 0xDD);
    r[4 + k] = _mm512_shuffle_i64x2(t[4 + k], t[6 + k], 0x88);
    r[6 + k] = _mm512_shuffle_i64x2(t[4 + k], t[6 + k], 0xDD);
  }
  for (int k = 0; k < 2; k++) {
    _mm512_storeu_si512(out + k * ldb, _mm512_shuffle_i64x2(r[k], r[4 + k], 0x88));
    _mm512_storeu_si512(out + (4 + k) * ldb, _mm512_shuffle_i64x2(r[k], r[4 + k], 0xDD));
    _mm512_storeu_si512(out + (2 + k) * ldb, _mm512_shuffle_i64x2(r[2 + k], r[6 + k], 0x88));
    _mm512_storeu_si512(out + (6 + k) * ldb, _mm512_shuffle_i64x2(r[2 + k], r[6 + k], 0xDD));
  }
}

__attribute__((target("avx512f"))) static void tr_block_avx512(const void *vin, int64_t lda,
                                                                void *vout, int64_t ldb,
                                                                int64_t R, int64_t C, size_t es) {
  const int64_t h = es == 4 ? 16 : 8, rw = R / h * h, cw = C / 8 * 8;
  for (int64_t r = 0; r < rw; r += h)
    for (int64_t c = 0; c < cw; c += 8) {
      if (es == 4)
        tr16x8_4((const uint32_t *)vin + r * lda + c, lda, (uint32_t *)vout + c * ldb + r, ldb);
      else
        tr8x8_8((const uint64_t *)vin + r * lda + c, lda, (uint64_t *)vout + c * ldb + r, ldb);
    }
  const char *in = vin;
  char *out = vout;
  tr_block_avx2(in + (size_t)(rw * lda) * es, lda, out + (size_t)rw * es, ldb, R - rw, C, es);
  tr_block_avx2(in + (size_t)cw * es, lda, out + (size_t)(cw * ldb) * es, ldb, rw, C - cw, es);
}

typedef void (*tr_block_fn)(const void *in, int64_t lda, void *out, int64_t ldb, int64_t R,
                            int64_t C, size_t es);

static tr_block_fn tr_block_pick(void) {
  if (__builtin_cpu_supports("avx512f")) return tr_block_avx512;
  if (__builtin_cpu_supports("avx2")) return tr_block_avx2;
  return tr_plain;
}

/* Copy n runs of `bytes` (a multiple of 4) from src (ls apart) to dst (ld apart). The buffered
 * path's copy-out: glibc's memcpy did not scale to two threads on these 2 KiB runs into 4 KiB
 * strided rows (1024x1024 float32: 160 us on one thread, 190 on two), plain vector moves do
 * (158 -> 87 us). */
typedef void (*tr_copy_fn)(char *dst, int64_t ld, const char *src, int64_t ls, int64_t n,
                           size_t bytes);

__attribute__((target("avx512f"))) static void tr_copy_avx512(char *dst, int64_t ld,
                                                               const char *src, int64_t ls,
                                                               int64_t n, size_t bytes) {
  const size_t full = bytes / 64 * 64;
  const __mmask16 tail = (__mmask16)((1u << ((bytes - full) / 4)) - 1);
  for (int64_t j = 0; j < n; j++, dst += ld, src += ls) {
    for (size_t k = 0; k < full; k += 64)
      _mm512_storeu_si512(dst + k, _mm512_loadu_si512(src + k));
    if (tail) _mm512_mask_storeu_epi32(dst + full, tail, _mm512_maskz_loadu_epi32(tail, src + full));
  }
}

static void tr_copy_memcpy(char *dst, int64_t ld, const char *src, int64_t ls, int64_t n,
                           size_t bytes) {
  for (int64_t j = 0; j < n; j++) memcpy(dst + j * ld, src + j * ls, bytes);
}

/* ---- tiles and threads ----
 * Direct tiles are 64x64. When the output row stride is a multiple of 1 KiB, the lines a block
 * stores all map to one or a few L1 sets and the stores run several times slower (1024x1024
 * float32: ~25 GB/s against ~100 for 1008x1008, whatever the block shape or tile order). Such
 * tiles, 512 input rows by 256 bytes of columns, are transposed into a per-thread scratch whose
 * row stride is an odd number of cache lines, then copied out as contiguous runs: ~52 GB/s on
 * one thread and ~90 on two at 1024x1024. */
#define TR_TILE 64
#define TR_BUF_ROWS 512
#define TR_BUF_COLS_BYTES 256
#define TR_CHUNK 16384 /* elements per work unit in rows mode and in thin strips */

static int tr_aliased(const tr_plan *pl) { return !pl->rows && (pl->ldb * (int64_t)pl->es) % 1024 == 0; }
static int64_t tr_buf_ld(size_t es) {
  int64_t ld = TR_BUF_ROWS;
  while (((ld * (int64_t)es / 64) & 1) == 0) ld += 64 / (int64_t)es;
  return ld;
}
/* Scratch bytes one thread needs for the buffered path. */
static size_t tr_buf_bytes(size_t es) {
  return (size_t)(TR_BUF_COLS_BYTES / es) * (size_t)tr_buf_ld(es) * es;
}

typedef struct {
  const tr_plan *pl;
  const char *in;
  char *out;
  int64_t tiler, tilec; /* tile size along R and C */
  int64_t tr, tc;       /* tiles along R and C (rows mode: 1 and chunks per row) */
  char *scratch;        /* buffered path: one tr_buf_bytes() slice per thread, else NULL */
  tr_block_fn block;
  tr_copy_fn copy;
} tr_ctx;

/* Element offsets of batch entry b in the input and the output. */
static void tr_batch_off(const tr_plan *pl, int64_t b, int64_t *io, int64_t *oo) {
  *io = *oo = 0;
  for (int k = pl->nb - 1; k >= 0; k--) {
    int64_t i = b % pl->bn[k];
    b /= pl->bn[k];
    *io += i * pl->bin[k], *oo += i * pl->bout[k];
  }
}

static void tr_units(int64_t lo, int64_t hi, void *p) {
  const tr_ctx *x = p;
  const tr_plan *pl = x->pl;
  const size_t es = pl->es;
  const int64_t per = x->tr * x->tc;
  for (int64_t u = lo; u < hi; u++) {
    int64_t io, oo, t = u % per;
    tr_batch_off(pl, u / per, &io, &oo);
    if (pl->rows) {
      int64_t c0 = t * TR_CHUNK, n = pl->C - c0 < TR_CHUNK ? pl->C - c0 : TR_CHUNK;
      memcpy(x->out + (size_t)(oo + c0) * es, x->in + (size_t)(io + c0) * es, (size_t)n * es);
      continue;
    }
    int64_t r0 = (t % x->tr) * x->tiler, c0 = (t / x->tr) * x->tilec;
    int64_t R = pl->R - r0 < x->tiler ? pl->R - r0 : x->tiler;
    int64_t C = pl->C - c0 < x->tilec ? pl->C - c0 : x->tilec;
    const char *src = x->in + (size_t)(io + r0 * pl->lda + c0) * es;
    char *dst = x->out + (size_t)(oo + c0 * pl->ldb + r0) * es;
    if (!x->scratch) {
      x->block(src, pl->lda, dst, pl->ldb, R, C, es);
      continue;
    }
    char *buf = x->scratch + (size_t)omp_get_thread_num() * tr_buf_bytes(es);
    int64_t ld = tr_buf_ld(es);
    x->block(src, pl->lda, buf, ld, R, C, es);
    x->copy(dst, pl->ldb * (int64_t)es, buf, ld * (int64_t)es, C, (size_t)R * es);
  }
}

/* Permute src (ndim, shape) into dst: out axis k = input axis perm[k]. scratch holds
 * scratch_threads slices of tr_buf_bytes() (or is NULL). */
static void tr_run(const void *src, void *dst, int ndim, const int64_t *shape, const int *perm,
                   size_t es, void *scratch, int scratch_threads) {
  tr_plan pl;
  tr_plan_make(&pl, ndim, shape, perm, es);
  int64_t n = pl.nbatch * pl.R * pl.C;
  if (n == 0) return;
  int par = n >= OPF_PAR_MIN && omp_get_max_threads() > 1;
  tr_ctx x = {&pl, src, dst, TR_TILE, TR_TILE, 0, 0, NULL, tr_block_pick(),
              __builtin_cpu_supports("avx512f") ? tr_copy_avx512 : tr_copy_memcpy};
  /* The buffered path needs a scratch slice for every thread that may run. */
  if (tr_aliased(&pl) && scratch && scratch_threads >= (par ? omp_get_max_threads() : 1)) {
    x.scratch = scratch;
    x.tiler = TR_BUF_ROWS, x.tilec = TR_BUF_COLS_BYTES / (int64_t)es;
  }
  /* thin strips: long runs, whole cache lines per unit (ragged 5461-column units of a 3-row
   * strip ran at half the speed of 4096-column ones) */
  if (!x.scratch && pl.R < 16) x.tiler = pl.R, x.tilec = TR_CHUNK / pl.R / 64 * 64;
  if (!x.scratch && pl.C < 8) x.tilec = pl.C, x.tiler = TR_CHUNK / pl.C / 64 * 64;
  if (pl.rows) x.tr = 1, x.tc = (pl.C + TR_CHUNK - 1) / TR_CHUNK;
  else x.tr = (pl.R + x.tiler - 1) / x.tiler, x.tc = (pl.C + x.tilec - 1) / x.tilec;
  int64_t units = pl.nbatch * x.tr * x.tc;
  opf_parallel_range(units, par ? 2 : units + 1, tr_units, &x);
}

/* ---- the operator ---- */
static int tr_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  static const char *names[] = {"reverse", "nchw2nhwc", "nhwc2nchw"};
  int kind = (int)c->p[0], perm[OPF_MAX_DIMS];
  char sx[96];
  if (x->ndim < 0)
    return opf_case_error(c, OPF_EINVAL, "input 'x' needs a shape (e.g. x=1024x1024)");
  int need = perm_of(kind, x->ndim < 4 ? x->ndim : 4, perm);
  if ((need && x->ndim != need) || (!need && x->ndim < 2))
    return opf_case_error(c, OPF_EINVAL, "perm=%s needs a %s tensor, got x=%s (rank %d)",
                          names[kind], need ? "4-D" : "rank >= 2", opf_shape_str(x, sx, sizeof sx),
                          x->ndim);
  perm_of(kind, x->ndim, perm);
  int64_t shape[OPF_MAX_DIMS];
  int inv[OPF_MAX_DIMS];
  for (int k = 0; k < x->ndim; k++) shape[k] = x->shape[perm[k]], inv[perm[k]] = k;
  opf_set_out(c, 0, c->dtype, x->ndim, shape);
  /* scratch for the buffered path, when the forward or the backward plan needs it */
  size_t es = opf_dtype_size(c->dtype);
  tr_plan fwd, bwd;
  tr_plan_make(&fwd, x->ndim, x->shape, perm, es);
  tr_plan_make(&bwd, x->ndim, shape, inv, es);
  if (tr_aliased(&fwd) || tr_aliased(&bwd))
    c->ws_bytes = (size_t)omp_get_max_threads() * tr_buf_bytes(es);
  return OPF_OK;
}

static int tr_scratch_threads(const opf_case *c) {
  return c->ws ? (int)(c->ws_bytes / tr_buf_bytes(opf_dtype_size(c->dtype))) : 0;
}

static int tr_forward(opf_case *c) {
  int perm[OPF_MAX_DIMS];
  perm_of((int)c->p[0], c->in[0].ndim, perm);
  tr_run(c->in[0].data, c->out[0].data, c->in[0].ndim, c->in[0].shape, perm,
         opf_dtype_size(c->dtype), c->ws, tr_scratch_threads(c));
  return OPF_OK;
}

/* dx = g permuted back: the inverse permutation applied to g (shaped like the output). */
static int tr_backward(opf_case *c) {
  int perm[OPF_MAX_DIMS], inv[OPF_MAX_DIMS];
  int nd = c->in[0].ndim;
  perm_of((int)c->p[0], nd, perm);
  for (int k = 0; k < nd; k++) inv[perm[k]] = k;
  tr_run(c->gout[0].data, c->gin[0].data, nd, c->out[0].shape, inv, opf_dtype_size(c->dtype),
         c->ws, tr_scratch_threads(c));
  return OPF_OK;
}

/* By the definition: every output element's multi-index, mapped through perm. */
static int tr_reference(opf_case *c) {
  const opf_tensor *x = &c->in[0], *y = &c->out[0];
  int perm[OPF_MAX_DIMS], nd = x->ndim;
  perm_of((int)c->p[0], nd, perm);
  size_t es = opf_dtype_size(c->dtype);
  int64_t n = opf_numel(y);
  for (int64_t o = 0; o < n; o++) {
    int64_t rem = o, src = 0;
    for (int k = nd - 1; k >= 0; k--) {
      int64_t i = rem % y->shape[k];
      rem /= y->shape[k];
      src += i * x->strides[perm[k]];
    }
    memcpy((char *)y->data + (size_t)o * es, (const char *)x->data + (size_t)src * es, es);
  }
  return OPF_OK;
}

/* Each pass reads the tensor once and writes it permuted. */
static double tr_bytes(const opf_case *c, opf_pass p) {
  return lin_move_bytes(c, opf_numel(&c->in[0]), p);
}

OPPERF_OP(transpose) = {
    .abi = OPF_OP_ABI,
    .name = "transpose",
    .category = "shape",
    .summary = "axis permutation: 2-D transpose / axis reversal, NCHW<->NHWC",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "tensor to permute"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 1,
    .params = {{.name = "perm", .type = OPF_P_ENUM, .def = PERM_REVERSE,
                .choices = "reverse|nchw2nhwc|nhwc2nchw",
                .help = "reverse: 2-D transpose or full axis reversal; nchw2nhwc: 4-D (0,2,3,1); "
                        "nhwc2nchw: 4-D (0,3,1,2)"}},
    .shapes = {{"standard", "x=1024x1024"},
               {"standard", "x=32x64x56x56 perm=nchw2nhwc"},
               {"skewed", "x=10000x10"},
               {"skewed", "x=10x10000"},
               {"skewed", "x=32x3x256x256 perm=nchw2nhwc"},
               {"skewed", "x=32x256x256x3 perm=nhwc2nchw"},
               {"small", "x=16x16"},
               {"small", "x=1x64"},
               {"small", "x=37x3"},
               {"small", "x=3x4x5"},
               {"small", "x=2x5x3x3 perm=nchw2nhwc"},
               {"small", "x=2x3x3x5 perm=nhwc2nchw"},
               {"small", "x=2x1x3x1 perm=nchw2nhwc"},
               {"small", "x=9x1x11"},
               {"test", "x=301x517"},
               {"test", "x=3x67x45x37 perm=nchw2nhwc"},
               {"test", "x=9x61x67x4 perm=nhwc2nchw"},
               {"test", "x=7x2x97x101 perm=nchw2nhwc"},
               {"test", "x=23x17x19x13"},
               {"test", "x=1x70001"},
               {"test", "x=1024x1024"},
               {"test", "x=4x32x32x33 perm=nhwc2nchw"},
               {"large", "x=8192x8192"}},
    .infer = tr_infer,
    .forward = tr_forward,
    .backward = tr_backward,
    .reference = tr_reference,
    .flops = lin_move_flops,
    .bytes = tr_bytes,
};
