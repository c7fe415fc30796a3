/* transpose.c: the axis permutations: transpose (2-D / full axis reversal, 4-D NCHW<->NHWC),
 * swapaxes, and depth_to_space / space_to_depth (a 6-D permutation of a reshaped NCHW tensor),
 * each with the inverse permutation as gradient. Every case reduces (after merging axes that
 * stay adjacent) to a batch of strided 2-D transposes, done in cache tiles with AVX-512
 * register micro-kernels (AVX2 / scalar fallbacks), threaded over tiles; see the notes on
 * aliasing strides and thin strips below. */
#include "shape/shape.h"

#ifdef OPF_X86
#include <immintrin.h>
#else
#include "opf_vec128.h"
#endif

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
  /* n strips, the k-th at in + k*si and out + k*so: a batch of strips in one call */         \
  OPF_VEC static void tr_interleave_##sfx(const T *restrict in, int64_t lda, T *restrict out, \
                                          int64_t R, int64_t C, int64_t n, int64_t si,         \
                                          int64_t so) {                                        \
    for (int64_t k = 0; k < n; k++, in += si, out += so) switch (R) {                         \
      case 2: tr_il_##sfx(in, lda, out, 2, C); break;                                          \
      case 3: tr_il_##sfx(in, lda, out, 3, C); break;                                          \
      case 4: tr_il_##sfx(in, lda, out, 4, C); break;                                          \
      default: tr_il_##sfx(in, lda, out, R, C);                                                \
      }                                                                                        \
  }                                                                                            \
  OPF_VEC static void tr_deinterleave_##sfx(const T *restrict in, T *restrict out, int64_t ldb, \
                                            int64_t R, int64_t C, int64_t n, int64_t si,       \
                                            int64_t so) {                                      \
    for (int64_t k = 0; k < n; k++, in += si, out += so) switch (C) {                         \
      case 2: tr_dl_##sfx(in, out, ldb, R, 2); break;                                          \
      case 3: tr_dl_##sfx(in, out, ldb, R, 3); break;                                          \
      case 4: tr_dl_##sfx(in, out, ldb, R, 4); break;                                          \
      default: tr_dl_##sfx(in, out, ldb, R, C);                                                \
      }                                                                                        \
  }
TR_THIN(uint32_t, 4)
TR_THIN(uint64_t, 8)

static int tr_thin(int64_t lda, int64_t ldb, int64_t R, int64_t C) {
  return (R < 16 && ldb == R) || (C < 8 && lda == C);
}

/* n thin strips (tr_thin), the k-th at in + k*si and out + k*so (elements). */
static void tr_strips(const void *in, int64_t lda, void *out, int64_t ldb, int64_t R, int64_t C,
                      size_t es, int64_t n, int64_t si, int64_t so) {
  if (R < 16 && ldb == R) {
    if (es == 4) tr_interleave_4(in, lda, out, R, C, n, si, so);
    else tr_interleave_8(in, lda, out, R, C, n, si, so);
  } else if (es == 4) {
    tr_deinterleave_4(in, out, ldb, R, C, n, si, so);
  } else {
    tr_deinterleave_8(in, out, ldb, R, C, n, si, so);
  }
}

static void tr_plain(const void *in, int64_t lda, void *out, int64_t ldb, int64_t R, int64_t C,
                     size_t es) {
  if (tr_thin(lda, ldb, R, C)) {
    tr_strips(in, lda, out, ldb, R, C, es, 1, 0, 0);
  } else if (es == 4) {
    tr_plain_4(in, lda, out, ldb, R, C);
  } else {
    tr_plain_8(in, lda, out, ldb, R, C);
  }
}

/* The ragged edges of a block whose first rw rows and cw columns went through registers. */
static inline void tr_edges(const void *vin, int64_t lda, void *vout, int64_t ldb, int64_t R,
                            int64_t C, size_t es, int64_t rw, int64_t cw) {
  const char *in = vin;
  char *out = vout;
  tr_plain(in + (size_t)(rw * lda) * es, lda, out + (size_t)rw * es, ldb, R - rw, C, es);
  tr_plain(in + (size_t)cw * es, lda, out + (size_t)(cw * ldb) * es, ldb, rw, C - cw, es);
}

#ifdef OPF_X86
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
  tr_edges(vin, lda, vout, ldb, R, C, es, rw, cw);
}

/* AVX-512, 4-byte words: 16 input rows x 8 columns (half-line loads, paired into zmm as rows
 * i | i+4 and 8+i | 12+i so the last shuffle lands in order) -> 8 output rows of 16 (one full
 * cache line each). Writing whole lines, and only eight per block, is what keeps the stores
 * fast: at 1008x1008 this runs at ~100 GB/s in L3 against ~75 for a 16x16 block. */
/* Input row i of a block: in + i*lda, or in + off[i] for gathered rows (tr_gather); always
 * inlined with off a literal NULL on the direct path, so the choice folds away. Stores: nt
 * streams the whole-line rows (aligned destinations only). */
#define TR_ROW(in, i) ((in) + (off ? off[i] : (i) * lda))
TR_AVX512 void tr_st512(void *p, __m512i v, int nt) {
  if (nt) _mm512_stream_si512(p, v);
  else _mm512_storeu_si512(p, v);
}
TR_AVX512 void tr16x8_4(const uint32_t *in, int64_t lda, const int64_t *off, uint32_t *out,
                        int64_t ldb, int nt) {
  __m512i z[8], t[8];
  for (int i = 0; i < 4; i++) {
    z[i] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const void *)TR_ROW(in, i))),
                              _mm256_loadu_si256((const void *)TR_ROW(in, i + 4)), 1);
    z[4 + i] = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_loadu_si256((const void *)TR_ROW(in, 8 + i))),
        _mm256_loadu_si256((const void *)TR_ROW(in, 12 + i)), 1);
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
    tr_st512(out + k * ldb, _mm512_shuffle_i32x4(z[k], z[4 + k], 0x88), nt);
    tr_st512(out + (k + 4) * ldb, _mm512_shuffle_i32x4(z[k], z[4 + k], 0xDD), nt);
  }
}

/* AVX-512, 8-byte words: 8x8, one full line per row in and out. */
TR_AVX512 void tr8x8_8(const uint64_t *in, int64_t lda, const int64_t *off, uint64_t *out,
                       int64_t ldb, int nt) {
  __m512i r[8], t[8];
  for (int i = 0; i < 8; i++) r[i] = _mm512_loadu_si512(TR_ROW(in, i));
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
    tr_st512(out + k * ldb, _mm512_shuffle_i64x2(r[k], r[4 + k], 0x88), nt);
    tr_st512(out + (4 + k) * ldb, _mm512_shuffle_i64x2(r[k], r[4 + k], 0xDD), nt);
    tr_st512(out + (2 + k) * ldb, _mm512_shuffle_i64x2(r[2 + k], r[6 + k], 0x88), nt);
    tr_st512(out + (6 + k) * ldb, _mm512_shuffle_i64x2(r[2 + k], r[6 + k], 0xDD), nt);
  }
}

__attribute__((target("avx512f"))) static void tr_block_avx512(const void *vin, int64_t lda,
                                                                void *vout, int64_t ldb,
                                                                int64_t R, int64_t C, size_t es) {
  const int64_t h = es == 4 ? 16 : 8, rw = R / h * h, cw = C / 8 * 8;
  for (int64_t r = 0; r < rw; r += h)
    for (int64_t c = 0; c < cw; c += 8) {
      if (es == 4)
        tr16x8_4((const uint32_t *)vin + r * lda + c, lda, NULL, (uint32_t *)vout + c * ldb + r, ldb, 0);
      else
        tr8x8_8((const uint64_t *)vin + r * lda + c, lda, NULL, (uint64_t *)vout + c * ldb + r, ldb, 0);
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
#else
/* Other architectures (arm64): 4x4 blocks of 4-byte words and 2x2 of 8-byte words in 128-bit
 * registers (NEON zips, opf_vec128.h), the ragged edges plain; the block of tr_block_avx2 with
 * half its width. */
static void tr_block_vec(const void *vin, int64_t lda, void *vout, int64_t ldb, int64_t R,
                         int64_t C, size_t es) {
  const int64_t w = es == 4 ? 4 : 2, rw = R / w * w, cw = C / w * w;
  for (int64_t r = 0; r < rw; r += w)
    for (int64_t c = 0; c < cw; c += w) {
      if (es == 4)
        opf_t4x4_u32((const uint32_t *)vin + r * lda + c, lda, (uint32_t *)vout + c * ldb + r, ldb);
      else
        opf_t2x2_u64((const uint64_t *)vin + r * lda + c, lda, (uint64_t *)vout + c * ldb + r, ldb);
    }
  tr_edges(vin, lda, vout, ldb, R, C, es, rw, cw);
}

typedef void (*tr_block_fn)(const void *in, int64_t lda, void *out, int64_t ldb, int64_t R,
                            int64_t C, size_t es);

static tr_block_fn tr_block_pick(void) { return tr_block_vec; }
#endif

/* ---- gathered rows ----
 * Output rows shorter than a register block (R < 16: swapaxes of (32,3,256,256) on axes 1
 * and 3 puts the 3 channels innermost) whose next output axis continues them contiguously
 * (that batch axis has output stride R) form one transpose of R*G rows, row j = (g, r) read
 * at r*lda + g*gin: 16 such rows fill a whole output line, where the 3-row blocks went
 * through the scalar edge loop (9.2 ms at 1 thread). off[i] is input row i's offset. */
typedef void (*tr_gblock_fn)(const void *in, const int64_t *off, void *out, int64_t ldb,
                             int64_t R, int64_t C, size_t es, int nt);

static void tr_gplain(const void *vin, const int64_t *off, void *vout, int64_t ldb, int64_t R,
                      int64_t C, size_t es, int nt) {
  (void)nt;
  for (int64_t r = 0; r < R; r++) {
    if (es == 4) {
      const uint32_t *in = (const uint32_t *)vin + off[r];
      uint32_t *out = (uint32_t *)vout + r;
      for (int64_t c = 0; c < C; c++) out[c * ldb] = in[c];
    } else {
      const uint64_t *in = (const uint64_t *)vin + off[r];
      uint64_t *out = (uint64_t *)vout + r;
      for (int64_t c = 0; c < C; c++) out[c * ldb] = in[c];
    }
  }
}

#ifdef OPF_X86
/* Register blocks over gathered rows; nt: stream the output lines (the caller checks that
 * out and ldb keep them aligned). */
__attribute__((target("avx512f"))) static void tr_gblock_avx512(const void *vin,
                                                                 const int64_t *off, void *vout,
                                                                 int64_t ldb, int64_t R,
                                                                 int64_t C, size_t es, int nt) {
  const int64_t h = es == 4 ? 16 : 8, rw = R / h * h, cw = C / 8 * 8;
  for (int64_t r = 0; r < rw; r += h)
    for (int64_t c = 0; c < cw; c += 8) {
      if (es == 4)
        tr16x8_4((const uint32_t *)vin + c, 0, off + r, (uint32_t *)vout + c * ldb + r, ldb, nt);
      else
        tr8x8_8((const uint64_t *)vin + c, 0, off + r, (uint64_t *)vout + c * ldb + r, ldb, nt);
    }
  char *out = vout;
  tr_gplain(vin, off + rw, out + (size_t)rw * es, ldb, R - rw, C, es, 0);
  tr_gplain((const char *)vin + (size_t)cw * es, off, out + (size_t)(cw * ldb) * es, ldb, rw,
            C - cw, es, 0);
}
static tr_gblock_fn tr_gblock_pick(void) {
  return __builtin_cpu_supports("avx512f") ? tr_gblock_avx512 : tr_gplain;
}
#else
static tr_gblock_fn tr_gblock_pick(void) { return tr_gplain; }
#endif

/* Copy n runs of `bytes` (a multiple of 4) from src (ls apart) to dst (ld apart). The buffered
 * path's copy-out: glibc's memcpy did not scale to two threads on these 2 KiB runs into 4 KiB
 * strided rows (1024x1024 float32: 160 us on one thread, 190 on two), plain vector moves do
 * (158 -> 87 us). */
typedef void (*tr_copy_fn)(char *dst, int64_t ld, const char *src, int64_t ls, int64_t n,
                           size_t bytes);

#ifdef OPF_X86
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
#endif

/* The same with streaming stores, for transposes beyond the LLC (see shp_streams). */
static void tr_copy_stream(char *dst, int64_t ld, const char *src, int64_t ls, int64_t n,
                           size_t bytes) {
  for (int64_t j = 0; j < n; j++) shp_move(1, 1, dst + j * ld, src + j * ls, bytes);
}

#ifdef OPF_X86
static void tr_copy_memcpy(char *dst, int64_t ld, const char *src, int64_t ls, int64_t n,
                           size_t bytes) {
  for (int64_t j = 0; j < n; j++) memcpy(dst + j * ld, src + j * ls, bytes);
}

#define TR_COPY_PICK() (__builtin_cpu_supports("avx512f") ? tr_copy_avx512 : tr_copy_memcpy)
#else
/* arm64: the runs are whole 16-byte multiples of short rows; shp_run's fixed 64-byte moves. */
static void tr_copy_vec(char *dst, int64_t ld, const char *src, int64_t ls, int64_t n,
                        size_t bytes) {
  for (int64_t j = 0; j < n; j++) shp_run(0, dst + j * ld, src + j * ls, bytes);
}
#define TR_COPY_PICK() tr_copy_vec
#endif

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
  int pf; /* prefetch the next tile's input rows */
  /* gathered rows (tr_gblock): the plan's R is R0 * G, row j at (j % R0)*lda + (j / R0)*gin */
  tr_gblock_fn gblock; /* NULL: not gathering */
  int64_t R0, gin;
  int nt; /* gathering: stream the output lines */
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
    char *dst = x->out + (size_t)(oo + c0 * pl->ldb + r0) * es;
    if (x->gblock) {
      int64_t off[TR_TILE];
      for (int64_t i = 0; i < R; i++) off[i] = (r0 + i) % x->R0 * pl->lda + (r0 + i) / x->R0 * x->gin;
      x->gblock(x->in + (size_t)(io + c0) * es, off, dst, pl->ldb, R, C, es,
                x->nt && !((uintptr_t)dst & 63));
      continue;
    }
    const char *src = x->in + (size_t)(io + r0 * pl->lda + c0) * es;
    /* The next tile's rows, one line-run per row: tiles read short runs from rows far apart,
     * which the hardware prefetcher does not follow (8192x8192 float32: 12 -> ? GB/s). */
    if (x->pf && u + 1 < hi && (t + 1) % x->tr) {
      const char *nsrc = src + (size_t)(x->tiler * pl->lda) * es;
      int64_t nr = pl->R - r0 - x->tiler < x->tiler ? pl->R - r0 - x->tiler : x->tiler;
      for (int64_t i = 0; i < nr; i++)
        for (int64_t b = 0; b < C * (int64_t)es; b += 64) __builtin_prefetch(nsrc + (size_t)(i * pl->lda) * es + b);
    }
    if (!x->scratch) {
      x->block(src, pl->lda, dst, pl->ldb, R, C, es);
      continue;
    }
    char *buf = x->scratch + (size_t)omp_get_thread_num() * tr_buf_bytes(es);
    int64_t ld = tr_buf_ld(es);
    x->block(src, pl->lda, buf, ld, R, C, es);
    x->copy(dst, pl->ldb * (int64_t)es, buf, ld * (int64_t)es, C, (size_t)R * es);
  }
  if (x->copy == tr_copy_stream || x->nt) shp_sfence();
}

/* Units [lo, hi) when each batch entry is one small transpose (the 2 x 56 strips of a
 * depth_to_space): the batch offsets follow an odometer instead of divisions, and runs of
 * thin strips along the innermost batch axis go to their kernel in one call. Per-unit
 * overhead was most of the time there (~400 cycles for a 112-element strip). */
static void tr_batch_units(int64_t lo, int64_t hi, void *p) {
  const tr_ctx *x = p;
  const tr_plan *pl = x->pl;
  const size_t es = pl->es;
  const int thin = tr_thin(pl->lda, pl->ldb, pl->R, pl->C), l = pl->nb - 1;
  int64_t idx[OPF_MAX_DIMS], io, oo, rest = lo;
  tr_batch_off(pl, lo, &io, &oo);
  for (int k = l; k >= 0; k--) idx[k] = rest % pl->bn[k], rest /= pl->bn[k];
  for (int64_t u = lo; u < hi;) {
    const char *in = x->in + (size_t)io * es;
    char *out = x->out + (size_t)oo * es;
    int64_t n = 1;
    if (thin && l >= 0) {
      n = pl->bn[l] - idx[l] < hi - u ? pl->bn[l] - idx[l] : hi - u;
      tr_strips(in, pl->lda, out, pl->ldb, pl->R, pl->C, es, n, pl->bin[l], pl->bout[l]);
    } else {
      x->block(in, pl->lda, out, pl->ldb, pl->R, pl->C, es);
    }
    u += n;
    for (int k = l; k >= 0; k--) { /* advance the odometer by n (only the last axis moves > 1) */
      int64_t step = k == l ? n : 1;
      io += step * pl->bin[k], oo += step * pl->bout[k], idx[k] += step;
      if (idx[k] < pl->bn[k]) break;
      io -= pl->bn[k] * pl->bin[k], oo -= pl->bn[k] * pl->bout[k], idx[k] = 0;
    }
  }
}

/* Gathered rows (see tr_gblock): take the batch axis with output stride R out of the batch
 * into the rows. Returns 0 when there is none. */
static int tr_gather(tr_plan *pl, tr_ctx *x) {
  for (int k = 0; k < pl->nb; k++) {
    if (pl->bout[k] != pl->R) continue;
    x->gblock = tr_gblock_pick();
    x->R0 = pl->R, x->gin = pl->bin[k];
    pl->R *= pl->bn[k], pl->nbatch /= pl->bn[k];
    for (int i = k; i < pl->nb - 1; i++)
      pl->bn[i] = pl->bn[i + 1], pl->bin[i] = pl->bin[i + 1], pl->bout[i] = pl->bout[i + 1];
    pl->nb--;
    return 1;
  }
  return 0;
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
              TR_COPY_PICK(), 0, NULL, 0, 0, 0};
  /* The buffered path needs a scratch slice for every thread that may run. Thin strips write
   * at most 7 rows at a time, which L1 holds whatever their stride: they skip it (the 28 x 2
   * strips of a space_to_depth ran 4x slower through the buffer). */
  const int thin = tr_thin(pl.lda, pl.ldb, pl.R, pl.C);
  if (!thin && !pl.rows && pl.R < 16 && tr_gather(&pl, &x)) {
    /* whole lines: streamed past the LLC when they stay aligned (x.nt) */
    x.nt = shp_streams(2.0 * (double)n * (double)es) && (pl.ldb * (int64_t)es) % 64 == 0;
    int64_t units = pl.nbatch * (x.tr = (pl.R + TR_TILE - 1) / TR_TILE) *
                    (x.tc = (pl.C + TR_TILE - 1) / TR_TILE);
    opf_parallel_range(units, par ? 2 : units + 1, tr_units, &x);
    return;
  }
  if (!thin && tr_aliased(&pl) && scratch && scratch_threads >= (par ? omp_get_max_threads() : 1)) {
    x.scratch = scratch;
    x.tiler = TR_BUF_ROWS, x.tilec = TR_BUF_COLS_BYTES / (int64_t)es;
  }
  /* thin strips: long runs, whole cache lines per unit (ragged 5461-column units of a 3-row
   * strip ran at half the speed of 4096-column ones) */
  if (!x.scratch && pl.R < 16) x.tiler = pl.R, x.tilec = TR_CHUNK / pl.R / 64 * 64;
  if (!x.scratch && pl.C < 8) x.tilec = pl.C, x.tiler = TR_CHUNK / pl.C / 64 * 64;
  if (pl.rows) x.tr = 1, x.tc = (pl.C + TR_CHUNK - 1) / TR_CHUNK;
  else x.tr = (pl.R + x.tiler - 1) / x.tiler, x.tc = (pl.C + x.tilec - 1) / x.tilec;
  /* Runs of thin strips are called along the innermost batch axis: make that the longest
   * axis whose strips start at most 4 KiB apart, so calls are long and reads stay streams
   * (space_to_depth's (N, C*H', b) batch runs along C*H', 1792 strips, instead of b, 2). */
  if (thin && x.tr * x.tc == 1 && !pl.rows && pl.nb > 1) {
    int best = pl.nb - 1;
    for (int k = 0; k < pl.nb; k++)
      if (pl.bn[k] > pl.bn[best] && pl.bin[k] * (int64_t)es <= 4096) best = k;
    int64_t n = pl.bn[best], bi = pl.bin[best], bo = pl.bout[best];
    for (int k = best; k < pl.nb - 1; k++)
      pl.bn[k] = pl.bn[k + 1], pl.bin[k] = pl.bin[k + 1], pl.bout[k] = pl.bout[k + 1];
    pl.bn[pl.nb - 1] = n, pl.bin[pl.nb - 1] = bi, pl.bout[pl.nb - 1] = bo;
  }
  x.pf = !pl.rows && pl.lda * (int64_t)es >= 4096 && n * (int64_t)es >= (64 << 20);
  if (x.scratch && shp_streams(2.0 * (double)n * (double)es)) x.copy = tr_copy_stream;
  int64_t units = pl.nbatch * x.tr * x.tc;
  opf_parallel_range(units, par ? 2 : units + 1,
                     x.tr * x.tc == 1 && !x.scratch && !pl.rows ? tr_batch_units : tr_units, &x);
}

/* ---- the operators ----
 * Each operator is a view: x reshaped to (nd, shape) and a permutation of those axes; the
 * output is the permuted view, reshaped to the operator's output shape. */
typedef void (*pm_view_fn)(const opf_case *c, int *nd, int64_t *shape, int *perm);

enum { P_PERM = 0 };                  /* transpose */
enum { P_AXIS1 = 0, P_AXIS2 = 1 };    /* swapaxes */
enum { P_BLOCK = 0, P_MODE = 1 };     /* depth_to_space, space_to_depth */
enum { MODE_DCR = 0, MODE_CRD = 1 };

static void tr_view(const opf_case *c, int *nd, int64_t *shape, int *perm) {
  *nd = c->in[0].ndim;
  memcpy(shape, c->in[0].shape, sizeof(int64_t) * (size_t)*nd);
  perm_of((int)c->p[P_PERM], *nd, perm);
}

static void swap_view(const opf_case *c, int *nd, int64_t *shape, int *perm) {
  const int n = c->in[0].ndim, a = opf_axis(c->p[P_AXIS1], n), b = opf_axis(c->p[P_AXIS2], n);
  *nd = n;
  memcpy(shape, c->in[0].shape, sizeof(int64_t) * (size_t)n);
  for (int k = 0; k < n; k++) perm[k] = k == a ? b : k == b ? a : k;
}

/* depth_to_space (ONNX): DCR views x as (N, b, b, C', H, W) -> (N, C', H, b, W, b); CRD as
 * (N, C', b, b, H, W) -> (N, C', H, b, W, b). */
static void d2s_view(const opf_case *c, int *nd, int64_t *shape, int *perm) {
  const int64_t *x = c->in[0].shape, b = (int64_t)c->p[P_BLOCK], cc = x[1] / (b * b);
  static const int dcr[6] = {0, 3, 4, 1, 5, 2}, crd[6] = {0, 1, 4, 2, 5, 3};
  const int isd = (int)c->p[P_MODE] == MODE_DCR;
  int64_t v[6] = {x[0], isd ? b : cc, b, isd ? cc : b, x[2], x[3]};
  *nd = 6;
  memcpy(shape, v, sizeof v);
  memcpy(perm, isd ? dcr : crd, sizeof dcr);
}

/* space_to_depth, the inverse: x as (N, C, H', b, W', b) -> DCR (N, b, b, C, H', W') or
 * CRD (N, C, b, b, H', W'). */
static void s2d_view(const opf_case *c, int *nd, int64_t *shape, int *perm) {
  const int64_t *x = c->in[0].shape, b = (int64_t)c->p[P_BLOCK];
  static const int dcr[6] = {0, 3, 5, 1, 2, 4}, crd[6] = {0, 1, 3, 5, 2, 4};
  int64_t v[6] = {x[0], x[1], x[2] / b, b, x[3] / b, b};
  *nd = 6;
  memcpy(shape, v, sizeof v);
  memcpy(perm, (int)c->p[P_MODE] == MODE_DCR ? dcr : crd, sizeof dcr);
}

/* Scratch for the buffered path, when the forward or the backward plan needs it. */
static size_t pm_ws_bytes(const opf_case *c, pm_view_fn view) {
  int nd, perm[OPF_MAX_DIMS], inv[OPF_MAX_DIMS];
  int64_t shape[OPF_MAX_DIMS], pshape[OPF_MAX_DIMS];
  view(c, &nd, shape, perm);
  for (int k = 0; k < nd; k++) pshape[k] = shape[perm[k]], inv[perm[k]] = k;
  size_t es = opf_dtype_size(c->dtype);
  tr_plan fwd, bwd;
  tr_plan_make(&fwd, nd, shape, perm, es);
  tr_plan_make(&bwd, nd, pshape, inv, es);
  return tr_aliased(&fwd) || tr_aliased(&bwd) ? (size_t)omp_get_max_threads() * tr_buf_bytes(es) : 0;
}

static int tr_scratch_threads(const opf_case *c) {
  return c->ws ? (int)(c->ws_bytes / tr_buf_bytes(opf_dtype_size(c->dtype))) : 0;
}

/* Forward permutes x's view into y; backward applies the inverse permutation to g, whose view
 * is the permuted shape. */
static int pm_run(opf_case *c, pm_view_fn view, int bwd) {
  int nd, perm[OPF_MAX_DIMS], inv[OPF_MAX_DIMS];
  int64_t shape[OPF_MAX_DIMS], pshape[OPF_MAX_DIMS];
  view(c, &nd, shape, perm);
  for (int k = 0; k < nd; k++) pshape[k] = shape[perm[k]], inv[perm[k]] = k;
  if (!bwd)
    tr_run(c->in[0].data, c->out[0].data, nd, shape, perm, opf_dtype_size(c->dtype), c->ws,
           tr_scratch_threads(c));
  else if (!opf_grad_is_view(c, 0))
    tr_run(c->gout[0].data, c->gin[0].data, nd, pshape, inv, opf_dtype_size(c->dtype), c->ws,
           tr_scratch_threads(c));
  return OPF_OK;
}

/* transpose, swapaxes: dx is g read through the inverse permutation, a strided view of g:
 * x's axis perm[k] has y's stride k. (depth_to_space, space_to_depth permute a 6-D reshape of
 * x, which no strides over x's own 4 axes describe: they copy.) */
static int pm_grad_view(const opf_case *c, int i, opf_view *v, pm_view_fn view) {
  int nd, perm[OPF_MAX_DIMS];
  int64_t shape[OPF_MAX_DIMS], s = 1;
  view(c, &nd, shape, perm);
  memset(v, 0, sizeof *v);
  if (i != 0 || nd != c->in[0].ndim) return 0;
  v->of = 1;
  for (int k = nd - 1; k >= 0; k--) v->strides[perm[k]] = s, s *= shape[perm[k]];
  return 1;
}
static int tr_grad_view(const opf_case *c, int i, opf_view *v) { return pm_grad_view(c, i, v, tr_view); }
static int swap_grad_view(const opf_case *c, int i, opf_view *v) { return pm_grad_view(c, i, v, swap_view); }

/* Output shape: the permuted view (transpose, swapaxes), with ws for the buffered path. */
static int pm_set_out(opf_case *c, pm_view_fn view) {
  int nd, perm[OPF_MAX_DIMS];
  int64_t shape[OPF_MAX_DIMS], pshape[OPF_MAX_DIMS];
  view(c, &nd, shape, perm);
  for (int k = 0; k < nd; k++) pshape[k] = shape[perm[k]];
  opf_set_out(c, 0, c->dtype, nd, pshape);
  c->ws_bytes = pm_ws_bytes(c, view);
  return OPF_OK;
}

static int tr_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  static const char *names[] = {"reverse", "nchw2nhwc", "nhwc2nchw"};
  int kind = (int)c->p[P_PERM], perm[OPF_MAX_DIMS];
  char sx[96];
  if (x->ndim < 0)
    return opf_case_error(c, OPF_EINVAL, "input 'x' needs a shape (e.g. x=1024x1024)");
  int need = perm_of(kind, x->ndim < 4 ? x->ndim : 4, perm);
  if ((need && x->ndim != need) || (!need && x->ndim < 2))
    return opf_case_error(c, OPF_EINVAL, "perm=%s needs a %s tensor, got x=%s (rank %d)",
                          names[kind], need ? "4-D" : "rank >= 2", opf_shape_str(x, sx, sizeof sx),
                          x->ndim);
  return pm_set_out(c, tr_view);
}

static int swap_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  int rc = shp_need(c, 0, "x=1024x1024 axis1=0 axis2=1"), a;
  if (rc || (rc = shp_axis(c, "axis1", c->p[P_AXIS1], x, x->ndim, &a)) ||
      (rc = shp_axis(c, "axis2", c->p[P_AXIS2], x, x->ndim, &a)))
    return rc;
  return pm_set_out(c, swap_view);
}

static int nchw_need(opf_case *c) {
  char s[96];
  int rc = shp_need(c, 0, "x=32x64x56x56 block=2");
  if (rc) return rc;
  if (c->in[0].ndim != 4)
    return opf_case_error(c, OPF_EINVAL, "%s needs a 4-D NCHW tensor, got x=%s (rank %d)",
                          c->op->name, opf_shape_str(&c->in[0], s, sizeof s), c->in[0].ndim);
  return OPF_OK;
}

static int d2s_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  const int64_t b = (int64_t)c->p[P_BLOCK];
  char s[96];
  int rc = nchw_need(c);
  if (rc) return rc;
  if (x->shape[1] % (b * b))
    return opf_case_error(c, OPF_EINVAL, "depth_to_space with block=%lld needs channels divisible "
                          "by %lld, got x=%s", (long long)b, (long long)(b * b),
                          opf_shape_str(x, s, sizeof s));
  int64_t shape[4] = {x->shape[0], x->shape[1] / (b * b), x->shape[2] * b, x->shape[3] * b};
  opf_set_out(c, 0, c->dtype, 4, shape);
  c->ws_bytes = pm_ws_bytes(c, d2s_view);
  return OPF_OK;
}

static int s2d_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  const int64_t b = (int64_t)c->p[P_BLOCK];
  char s[96];
  int rc = nchw_need(c);
  if (rc) return rc;
  if (x->shape[2] % b || x->shape[3] % b)
    return opf_case_error(c, OPF_EINVAL, "space_to_depth with block=%lld needs height and width "
                          "divisible by it, got x=%s", (long long)b, opf_shape_str(x, s, sizeof s));
  int64_t shape[4] = {x->shape[0], x->shape[1] * b * b, x->shape[2] / b, x->shape[3] / b};
  opf_set_out(c, 0, c->dtype, 4, shape);
  c->ws_bytes = pm_ws_bytes(c, s2d_view);
  return OPF_OK;
}

static int tr_forward(opf_case *c) { return pm_run(c, tr_view, 0); }
static int tr_backward(opf_case *c) { return pm_run(c, tr_view, 1); }
static int swap_forward(opf_case *c) { return pm_run(c, swap_view, 0); }
static int swap_backward(opf_case *c) { return pm_run(c, swap_view, 1); }
static int d2s_forward(opf_case *c) { return pm_run(c, d2s_view, 0); }
static int d2s_backward(opf_case *c) { return pm_run(c, d2s_view, 1); }
static int s2d_forward(opf_case *c) { return pm_run(c, s2d_view, 0); }
static int s2d_backward(opf_case *c) { return pm_run(c, s2d_view, 1); }

/* transpose and swapaxes by the definition: y's axis k is x's axis perm[k] (their views are
 * x's own shape). */
static int64_t pm_src(const opf_case *c, const int64_t *yi, pm_view_fn view) {
  int perm[OPF_MAX_DIMS], nd;
  int64_t shape[OPF_MAX_DIMS], f = 0;
  view(c, &nd, shape, perm);
  for (int k = 0; k < nd; k++) f += yi[k] * c->in[0].strides[perm[k]];
  return f;
}
static int64_t tr_src(const opf_case *c, const int64_t *yi) { return pm_src(c, yi, tr_view); }
static int64_t swap_src(const opf_case *c, const int64_t *yi) { return pm_src(c, yi, swap_view); }
static int tr_reference(opf_case *c) {
  shp_ref_gather(c, tr_src, NULL);
  return OPF_OK;
}
static int swap_reference(opf_case *c) {
  shp_ref_gather(c, swap_src, NULL);
  return OPF_OK;
}

/* depth_to_space and space_to_depth by the definition: the depth tensor's element
 * (n, ch, h, w) with ch = (i*b + j)*C' + c (DCR) or c*b*b + i*b + j (CRD) is the space
 * tensor's element (n, c, h*b + i, w*b + j). */
static void ds_reference(opf_case *c, int to_space) {
  const opf_tensor *deep = to_space ? &c->in[0] : &c->out[0];
  const opf_tensor *space = to_space ? &c->out[0] : &c->in[0];
  const int64_t b = (int64_t)c->p[P_BLOCK], N = deep->shape[0], CC = space->shape[1];
  const int64_t H = deep->shape[2], W = deep->shape[3], HS = space->shape[2], WS = space->shape[3];
  const size_t es = opf_dtype_size(c->dtype);
  for (int64_t n = 0; n < N; n++)
    for (int64_t cc = 0; cc < CC; cc++)
      for (int64_t i = 0; i < b; i++)
        for (int64_t j = 0; j < b; j++)
          for (int64_t h = 0; h < H; h++)
            for (int64_t w = 0; w < W; w++) {
              int64_t ch = (int)c->p[P_MODE] == MODE_DCR ? (i * b + j) * CC + cc : cc * b * b + i * b + j;
              int64_t d = ((n * deep->shape[1] + ch) * H + h) * W + w;
              int64_t sp = ((n * CC + cc) * HS + h * b + i) * WS + w * b + j;
              char *dst = (char *)c->out[0].data + (to_space ? sp : d) * (int64_t)es;
              memcpy(dst, (const char *)c->in[0].data + (to_space ? d : sp) * (int64_t)es, es);
            }
}
static int d2s_reference(opf_case *c) {
  ds_reference(c, 1);
  return OPF_OK;
}
static int s2d_reference(opf_case *c) {
  ds_reference(c, 0);
  return OPF_OK;
}

/* Each pass reads the tensor once and writes it permuted. */
static double tr_bytes(const opf_case *c, opf_pass p) {
  return lin_move_bytes(c, opf_numel(&c->in[0]), p);
}

#define PM_X(h) {.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1, .help = h}
#define PM_COMMON                                                                           \
  .abi = OPF_OP_ABI, .category = "shape", .dtypes = OPF_DT_ALL, .n_in = 1, .n_out = 1,      \
  .out = {"y"}, .flops = lin_move_flops, .bytes = tr_bytes

OPPERF_OP(transpose) = {
    PM_COMMON,
    .name = "transpose",
    .summary = "axis permutation: 2-D transpose / axis reversal, NCHW<->NHWC",
    .in = {PM_X("tensor to permute")},
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
               {"large", "x=8192x8192"},
               {"huge", "x=46341x46341"}},
    .infer = tr_infer,
    .forward = tr_forward,
    .backward = tr_backward,
    .grad_view = tr_grad_view,
    .reference = tr_reference,
};

OPPERF_OP(swapaxes) = {
    PM_COMMON,
    .name = "swapaxes",
    .summary = "exchange two axes",
    .in = {PM_X("tensor whose axes are exchanged")},
    .n_params = 2,
    .params = {{.name = "axis1", .type = OPF_P_AXIS, .def = 0, .min = -OPF_MAX_DIMS,
                .max = OPF_MAX_DIMS - 1, .help = "first axis (negative from the end)"},
               {.name = "axis2", .type = OPF_P_AXIS, .def = 1, .min = -OPF_MAX_DIMS,
                .max = OPF_MAX_DIMS - 1, .help = "second axis (negative from the end)"}},
    .shapes = {{"standard", "x=1024x1024"},
               {"standard", "x=32x64x56x56 axis1=2 axis2=3"},
               {"standard", "x=32x64x56x56 axis1=1 axis2=3"},
               {"skewed", "x=10000x10"},
               {"skewed", "x=10x10000"},
               {"skewed", "x=32x3x256x256 axis1=1 axis2=3"},
               {"small", "x=16x16"},
               {"small", "x=1x64"},
               {"small", "x=37x3 axis1=-1 axis2=0"},
               {"small", "x=2x3x4x5 axis1=1 axis2=3"},
               {"small", "x=2x3x4 axis1=0 axis2=2"},
               {"small", "x=3x4 axis1=1 axis2=1"},
               {"test", "x=301x517"},
               {"test", "x=5x67x3x45 axis1=1 axis2=3"},
               {"test", "x=3x1024x1024 axis1=-1 axis2=-2"},
               {"large", "x=8192x8192"},
               {"huge", "x=46341x46341"}},
    .infer = swap_infer,
    .forward = swap_forward,
    .backward = swap_backward,
    .grad_view = swap_grad_view,
    .reference = swap_reference,
};

#define DS_PARAMS                                                                            \
  .n_params = 2,                                                                             \
  .params = {{.name = "block", .type = OPF_P_INT, .def = 2, .min = 1, .max = 1 << 20,        \
              .help = "block size b: b*b channels per spatial block"},                       \
             {.name = "mode", .type = OPF_P_ENUM, .def = MODE_DCR, .choices = "dcr|crd",    \
              .help = "channel order in a block: dcr (ONNX default, TensorFlow) or crd "    \
                      "(PyTorch pixel_shuffle)"}}

OPPERF_OP(depth_to_space) = {
    PM_COMMON,
    .name = "depth_to_space",
    .summary = "NCHW: move b*b channel groups into b x b spatial blocks (pixel shuffle)",
    .in = {PM_X("NCHW tensor, channels divisible by block^2")},
    DS_PARAMS,
    .shapes = {{"standard", "x=32x64x56x56"},
               {"standard", "x=32x64x56x56 mode=crd"},
               {"skewed", "x=32x12x256x256"},
               {"skewed", "x=1x1024x32x32 block=4"},
               {"small", "x=2x8x3x5"},
               {"small", "x=1x4x2x2 mode=crd"},
               {"small", "x=2x9x2x3 block=3"},
               {"small", "x=1x18x3x1 block=3 mode=crd"},
               {"small", "x=2x3x4x5 block=1"},
               {"test", "x=3x36x17x19 block=3"},
               {"test", "x=2x16x61x67 block=4 mode=crd"},
               {"test", "x=4x64x33x40"},
               {"large", "x=16x64x256x256"},
               {"huge", "x=8x260x1024x1024"}},
    .infer = d2s_infer,
    .forward = d2s_forward,
    .backward = d2s_backward,
    .reference = d2s_reference,
};

OPPERF_OP(space_to_depth) = {
    PM_COMMON,
    .name = "space_to_depth",
    .summary = "NCHW: move b x b spatial blocks into b*b channel groups",
    .in = {PM_X("NCHW tensor, height and width divisible by block")},
    DS_PARAMS,
    .shapes = {{"standard", "x=32x64x56x56"},
               {"standard", "x=32x64x56x56 mode=crd"},
               {"skewed", "x=32x3x256x256 block=4"},
               {"skewed", "x=1x16x128x128 block=8"},
               {"small", "x=2x2x6x4"},
               {"small", "x=1x1x2x2 mode=crd"},
               {"small", "x=2x3x6x3 block=3"},
               {"small", "x=1x2x3x6 block=3 mode=crd"},
               {"test", "x=3x4x51x57 block=3"},
               {"test", "x=2x1x244x268 block=4 mode=crd"},
               {"test", "x=4x64x66x80"},
               {"large", "x=16x64x256x256"},
               {"huge", "x=8x260x1024x1024"}},
    .infer = s2d_infer,
    .forward = s2d_forward,
    .backward = s2d_backward,
    .reference = s2d_reference,
};
