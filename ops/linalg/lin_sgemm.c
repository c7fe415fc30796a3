/* lin_sgemm.c: the GEMM-shaped operators' own float32 products on AVX-512 CPUs (linalg.h:
 * lin_own_sgemm), threaded by us around single-threaded kernels. OpenBLAS as installed runs its
 * AVX2 Haswell kernels (the environment's OPENBLAS_CORETYPE) and splits skinny products
 * poorly across threads; on 2 Zen 5 cores torch (same OpenBLAS, its own threading) was
 * 1.1-1.6x faster on dense, dense_relu, dot and gru_cell for these shapes:
 *  - M = 1 or N = 1 (a batch of one): GEMV, rows split across threads, as row dot products
 *    when the vector runs along the matrix rows, else as column blocks accumulated over rows;
 *  - K = 1 (the weight gradient of a batch of one): an outer product, rows across threads;
 *  - both operands K-contiguous (op(A) = A, op(B) = B^T: dense's x w^T) with a small side
 *    (M or N <= LIN_DOT_SMALL): 4 x 4 tiles of row dot products, no packing (conv_gemm.c's
 *    kernel transposes op(B) element by element while packing, as costly as the product here);
 *  - everything else: conv_gemm.c's packed 14 x 32 kernel (nn_gemm) per thread block, the
 *    output split along M or N, or along K with a reduction when M N is small against K
 *    (64 x 4096 x 64: OpenBLAS leaves one thread idle).
 * Returns 0 (the caller then runs OpenBLAS) off x86, without AVX-512, and for shapes none of
 * these cover (alpha != 1 outside GEMV, strided vectors, products too small). */
#include <stdlib.h>

#include "linalg/linalg.h"
#include "nn/conv_core.h" /* nn_gemm, nn_gemm_own, nn_gemm_ws_bytes */
#include "opf_fold16.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define AVX512 __attribute__((target("avx512f")))

/* Products below this many multiply-adds stay on one thread (waking the pool costs more). */
#define LIN_PAR_MACS (1 << 18)
/* The packed kernel's register tile is 14 rows (conv_gemm.c GM_MR): row splits are multiples. */
#define LIN_MR 14
/* The dot-product kernel: a side at most this long, and K at least LIN_DOT_MIN_K. */
#define LIN_DOT_SMALL 64
#define LIN_DOT_MIN_K 128
/* Column block of the column GEMV: its sums (4 KiB) stay in L1. */
#define LIN_GV_CB 1024
#define LIN_MAX_T 64

static int have_avx512(void) {
  static int have = -1;
  if (have < 0) have = __builtin_cpu_supports("avx512f") ? 1 : 0;
  return have;
}

/* This thread's scratch, kept between calls (OpenMP's pool threads live as long as the
 * process): nn_gemm's packing buffers and K-split partial sums. NULL when allocation fails. */
static _Thread_local void *tl_buf;
static _Thread_local size_t tl_cap;
static void *scratch(size_t bytes) {
  bytes = (bytes + 63) & ~(size_t)63;
  if (bytes > tl_cap) {
    free(tl_buf);
    tl_buf = aligned_alloc(64, bytes);
    tl_cap = tl_buf ? bytes : 0;
  }
  return tl_buf;
}

static int threads_for(double macs) {
  if (omp_in_parallel() || macs < LIN_PAR_MACS) return 1;
  int nt = omp_get_max_threads();
  return nt > LIN_MAX_T ? LIN_MAX_T : nt;
}

static __mmask16 tail_mask(int64_t n) { return n >= 16 ? 0xFFFF : (__mmask16)((1u << n) - 1); }

static inline void put(float *y, float alpha, float beta, float s) {
  *y = beta == 0 ? alpha * s : alpha * s + beta * *y;
}

/* ---- GEMV, rows: y[r*incy] = alpha X[r,:] . v + beta y, rows [r0, r1), n columns ---- */
AVX512 static void gemv_rows(const float *X, int64_t ldx, int64_t r0, int64_t r1, int64_t n,
                             const float *v, float alpha, float beta, float *y, int64_t incy) {
  const __mmask16 mt = tail_mask(n % 16);
  const int64_t n16 = n / 16 * 16;
  for (int64_t r = r0; r < r1; r += 4) {
    const float *x[4];
    for (int i = 0; i < 4; i++) x[i] = X + (r + i < r1 ? r + i : r) * ldx;
    __m512 s0[4], s1[4];
    for (int i = 0; i < 4; i++) s0[i] = s1[i] = _mm512_setzero_ps();
    int64_t k = 0;
    for (; k + 32 <= n; k += 32) {
      const __m512 v0 = _mm512_loadu_ps(v + k), v1 = _mm512_loadu_ps(v + k + 16);
      for (int i = 0; i < 4; i++) {
        s0[i] = _mm512_fmadd_ps(_mm512_loadu_ps(x[i] + k), v0, s0[i]);
        s1[i] = _mm512_fmadd_ps(_mm512_loadu_ps(x[i] + k + 16), v1, s1[i]);
      }
    }
    if (k < n16) {
      const __m512 v0 = _mm512_loadu_ps(v + k);
      for (int i = 0; i < 4; i++) s0[i] = _mm512_fmadd_ps(_mm512_loadu_ps(x[i] + k), v0, s0[i]);
      k += 16;
    }
    if (k < n) {
      const __m512 v0 = _mm512_maskz_loadu_ps(mt, v + k);
      for (int i = 0; i < 4; i++)
        s1[i] = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mt, x[i] + k), v0, s1[i]);
    }
    for (int i = 0; i < 4 && r + i < r1; i++)
      put(y + (r + i) * incy, alpha, beta, _mm512_reduce_add_ps(_mm512_add_ps(s0[i], s1[i])));
  }
}

/* ---- GEMV, rows of at most 16 columns (a tall, narrow matrix: 100000 x 10): 16 rows at a
 * time, one masked load and multiply per row, and the 16 products summed together by
 * opf_fold16.h's transposing tree instead of a horizontal reduction per row. ---- */
AVX512 static void gemv_rows_narrow(const float *X, int64_t ldx, int64_t r0, int64_t r1, int64_t n,
                                    const float *v, float alpha, float beta, float *y,
                                    int64_t incy) {
  const __mmask16 mt = tail_mask(n);
  const __m512 vv = _mm512_maskz_loadu_ps(mt, v), va = _mm512_set1_ps(alpha);
  for (int64_t r = r0; r < r1; r += 16) {
    const int64_t m = r1 - r < 16 ? r1 - r : 16;
    __m512 p[16];
    for (int i = 0; i < 16; i++)
      p[i] = _mm512_mul_ps(_mm512_maskz_loadu_ps(mt, X + (r + (i < m ? i : 0)) * ldx), vv);
    __m512 s = _mm512_mul_ps(opf_fold16(0, p), va);
    if (incy == 1 && beta == 0) {
      _mm512_mask_storeu_ps(y + r, tail_mask(m), s);
      continue;
    }
    float t[16];
    _mm512_storeu_ps(t, s);
    for (int64_t i = 0; i < m; i++) put(y + (r + i) * incy, 1.0f, beta, t[i]);
  }
}

/* ---- GEMV, columns: y[c*incy] = alpha sum_r X[r,c] v[r*incv] + beta y, columns [c0, c1) of
 * `rows` rows: blocks of up to LIN_GV_CB columns, their sums in L1 while the rows stream by
 * four at a time (contiguous runs of X, the sums loaded and stored once per four rows) ---- */
AVX512 static void gemv_cols(const float *X, int64_t ldx, int64_t rows, int64_t c0, int64_t c1,
                             const float *v, int64_t incv, float alpha, float beta, float *y,
                             int64_t incy) {
  float acc[LIN_GV_CB] __attribute__((aligned(64)));
  for (int64_t cb = c0; cb < c1; cb += LIN_GV_CB) {
    const int64_t w = c1 - cb < LIN_GV_CB ? c1 - cb : LIN_GV_CB;
    const __mmask16 mt = tail_mask(w % 16);
    memset(acc, 0, sizeof(float) * (size_t)((w + 15) / 16 * 16));
    const float *xb = X + cb;
    int64_t r = 0;
    for (; r < rows; r += 4) {
      const int64_t nr = rows - r < 4 ? rows - r : 4;
      __m512 a[4];
      const float *x[4];
      for (int i = 0; i < 4; i++) { /* rows past the end: weight 0 on the last row */
        a[i] = _mm512_set1_ps(i < nr ? v[(r + i) * incv] : 0.0f);
        x[i] = xb + (r + (i < nr ? i : 0)) * ldx;
      }
      for (int64_t j = 0; j < w; j += 16) {
        const __mmask16 m = j + 16 <= w ? 0xFFFF : mt;
        __m512 s = _mm512_load_ps(acc + j);
        s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x[0] + j), a[0], s);
        s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x[1] + j), a[1], s);
        s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x[2] + j), a[2], s);
        s = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x[3] + j), a[3], s);
        _mm512_store_ps(acc + j, s);
      }
    }
    for (int64_t j = 0; j < w; j++) put(y + (cb + j) * incy, alpha, beta, acc[j]);
  }
}

/* ---- outer product: C[i,:] = alpha a[i*inca] b + beta C[i,:], rows [r0, r1) ---- */
AVX512 static void outer_rows(const float *a, int64_t inca, const float *b, int64_t n,
                              float alpha, float beta, float *C, int64_t ldc, int64_t r0,
                              int64_t r1) {
  const __mmask16 mt = tail_mask(n % 16);
  const __m512 vb = _mm512_set1_ps(beta);
  for (int64_t i = r0; i < r1; i++) {
    const __m512 s = _mm512_set1_ps(alpha * a[i * inca]);
    float *c = C + i * ldc;
    for (int64_t j = 0; j < n; j += 16) {
      const __mmask16 m = j + 16 <= n ? 0xFFFF : mt;
      __m512 r = _mm512_mul_ps(s, _mm512_maskz_loadu_ps(m, b + j));
      if (beta != 0) r = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m, c + j), r);
      _mm512_mask_storeu_ps(c + j, m, r);
    }
  }
}

/* ---- dot-product kernel: C (+)= A B^T over k in [p0, p1), A (M, K) and B (N, K) both
 * K-contiguous; 4 x 4 tiles of zmm accumulators over K chunks sized so the small side's chunk
 * stays in L2 while the large side streams through; a row past the end repeats the last row
 * (computed, not stored). C points at element (i0, j0); the first chunk stores beta C + sum,
 * the others add. ---- */
AVX512 static void dot_tile(const float *const a[4], const float *const b[4], int64_t len,
                            float out[16]) {
  __m512 s[16];
  for (int i = 0; i < 16; i++) s[i] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= len; k += 16) {
    const __m512 b0 = _mm512_loadu_ps(b[0] + k), b1 = _mm512_loadu_ps(b[1] + k),
                 b2 = _mm512_loadu_ps(b[2] + k), b3 = _mm512_loadu_ps(b[3] + k);
    for (int i = 0; i < 4; i++) {
      const __m512 ai = _mm512_loadu_ps(a[i] + k);
      s[4 * i + 0] = _mm512_fmadd_ps(ai, b0, s[4 * i + 0]);
      s[4 * i + 1] = _mm512_fmadd_ps(ai, b1, s[4 * i + 1]);
      s[4 * i + 2] = _mm512_fmadd_ps(ai, b2, s[4 * i + 2]);
      s[4 * i + 3] = _mm512_fmadd_ps(ai, b3, s[4 * i + 3]);
    }
  }
  if (k < len) {
    const __mmask16 m = tail_mask(len - k);
    __m512 bv[4];
    for (int j = 0; j < 4; j++) bv[j] = _mm512_maskz_loadu_ps(m, b[j] + k);
    for (int i = 0; i < 4; i++) {
      const __m512 ai = _mm512_maskz_loadu_ps(m, a[i] + k);
      for (int j = 0; j < 4; j++) s[4 * i + j] = _mm512_fmadd_ps(ai, bv[j], s[4 * i + j]);
    }
  }
  for (int i = 0; i < 16; i++) out[i] = _mm512_reduce_add_ps(s[i]);
}

static void dot_block(const float *A, int64_t lda, const float *B, int64_t ldb, int64_t i0,
                      int64_t i1, int64_t j0, int64_t j1, int64_t p0, int64_t p1, float beta,
                      float *C, int64_t ldc) {
  const int64_t small = i1 - i0 < j1 - j0 ? i1 - i0 : j1 - j0;
  /* the small side's chunk about 192 KiB, 256..4096 elements long */
  int64_t kc = (192 * 1024 / 4) / (small > 0 ? small : 1) / 16 * 16;
  kc = kc < 256 ? 256 : kc > 4096 ? 4096 : kc;
  const int m_outer = i1 - i0 >= j1 - j0; /* the large side outside */
  for (int64_t p = p0; p < p1; p += kc) {
    const int64_t len = p1 - p < kc ? p1 - p : kc;
    const int first = p == p0;
    const int64_t o0 = m_outer ? i0 : j0, o1 = m_outer ? i1 : j1;
    const int64_t n0 = m_outer ? j0 : i0, n1 = m_outer ? j1 : i1;
    for (int64_t o = o0; o < o1; o += 4)
      for (int64_t q = n0; q < n1; q += 4) {
        const int64_t i = m_outer ? o : q, j = m_outer ? q : o;
        const float *a[4], *b[4];
        for (int t = 0; t < 4; t++) {
          a[t] = A + (i + t < i1 ? i + t : i) * lda + p;
          b[t] = B + (j + t < j1 ? j + t : j) * ldb + p;
        }
        float s[16];
        dot_tile(a, b, len, s);
        for (int r = 0; r < 4 && i + r < i1; r++)
          for (int t = 0; t < 4 && j + t < j1; t++) {
            float *c = C + (i + r - i0) * ldc + (j + t - j0);
            *c = first ? (beta == 0 ? s[4 * r + t] : s[4 * r + t] + beta * *c) : *c + s[4 * r + t];
          }
      }
  }
}

/* ---- threaded driver over blocks of the output (or of K) ---- */
typedef struct {
  int ta, tb, dot;
  int64_t M, N, K;
  const float *A, *B;
  int64_t lda, ldb, ldc;
  float beta;
  float *C;
} lin_sg;

/* One block: rows [i0,i1), columns [j0,j1), K range [p0,p1) into C (ldc) with beta; C points
 * at the block's first element. */
static void sg_block(const lin_sg *g, int64_t i0, int64_t i1, int64_t j0, int64_t j1, int64_t p0,
                     int64_t p1, float beta, float *C, int64_t ldc, void *ws) {
  if (i0 >= i1 || j0 >= j1) return;
  if (g->dot) {
    dot_block(g->A, g->lda, g->B, g->ldb, i0, i1, j0, j1, p0, p1, beta, C, ldc);
    return;
  }
  const float *A = g->ta ? g->A + p0 * g->lda + i0 : g->A + i0 * g->lda + p0;
  const float *B = g->tb ? g->B + j0 * g->ldb + p0 : g->B + p0 * g->ldb + j0;
  nn_gemm(OPF_F32, g->ta, g->tb, i1 - i0, j1 - j0, p1 - p0, A, g->lda, B, g->ldb, beta, C, ldc,
          ws);
}

static int64_t split_at(int64_t n, int t, int nt, int64_t unit) {
  int64_t chunk = ((n + nt - 1) / nt + unit - 1) / unit * unit;
  int64_t v = chunk * t;
  return v < n ? v : n;
}

static int sg_run(const lin_sg *g) {
  const int64_t M = g->M, N = g->N, K = g->K;
  const int nt = threads_for((double)M * (double)N * (double)K);
  const size_t wsb = g->dot ? 0 : nn_gemm_ws_bytes();
  /* K split: the output small against K (a thread's share of K at least 256) */
  const int ksplit = nt > 1 && K >= 8 * (M > N ? M : N) && K / nt >= 256;
  if (nt == 1) {
    void *ws = wsb ? scratch(wsb) : NULL; /* the dot kernel needs none */
    if (wsb && !ws) return 0;
    sg_block(g, 0, M, 0, N, 0, K, g->beta, g->C, g->ldc, ws);
    return 1;
  }
  /* N split in 32-column units (conv_gemm.c's tile width, whole cache lines), else M split
   * in whole register tiles: the larger side, unless its blocks would be narrower than one
   * tile of the kernel (then the other) */
  const int64_t unit_n = g->dot ? 16 : 32, unit_m = g->dot ? 4 : LIN_MR;
  const int nsplit = !ksplit && (N >= M ? N / nt >= unit_n : M / nt < 2 * unit_m);
  float *parts[LIN_MAX_T];
  int ok[LIN_MAX_T], failed = 0;
  const size_t pb = ksplit ? (size_t)(M * N) * sizeof(float) : 0;
#pragma omp parallel num_threads(nt) reduction(| : failed)
  {
    const int t = omp_get_thread_num(), n = omp_get_num_threads();
    char *buf = wsb + pb ? scratch(wsb + pb) : NULL; /* the dot kernel outside a K split: none */
    ok[t] = wsb + pb == 0 || buf;
    failed = !ok[t];
    parts[t] = buf ? (float *)(buf + wsb) : NULL;
#pragma omp barrier
    int bad = 0;
    for (int u = 0; u < n; u++) bad |= !ok[u];
    if (!bad) {
      if (ksplit) {
        const int64_t p0 = split_at(K, t, n, 16), p1 = split_at(K, t + 1, n, 16);
        if (t == 0) sg_block(g, 0, M, 0, N, p0, p1, g->beta, g->C, g->ldc, buf);
        else if (p0 < p1) sg_block(g, 0, M, 0, N, p0, p1, 0.0f, parts[t], N, buf);
        else memset(parts[t], 0, pb);
#pragma omp barrier
        const int64_t r0 = split_at(M, t, n, 1), r1 = split_at(M, t + 1, n, 1);
        for (int u = 1; u < n; u++)
          for (int64_t i = r0; i < r1; i++) {
            float *c = g->C + i * g->ldc;
            const float *s = parts[u] + i * N;
#pragma omp simd
            for (int64_t j = 0; j < N; j++) c[j] += s[j];
          }
      } else if (nsplit) {
        const int64_t j0 = split_at(N, t, n, unit_n), j1 = split_at(N, t + 1, n, unit_n);
        sg_block(g, 0, M, j0, j1, 0, K, g->beta, g->C + j0, g->ldc, buf);
      } else {
        const int64_t i0 = split_at(M, t, n, unit_m), i1 = split_at(M, t + 1, n, unit_m);
        sg_block(g, i0, i1, 0, N, 0, K, g->beta, g->C + i0 * g->ldc, g->ldc, buf);
      }
    }
  }
  if (failed) return 0; /* nothing written: every thread checked every buffer first */
  return 1;
}

/* GEMV or outer product threaded over its output: fn(lo, hi) on [0, n) in unit-sized pieces. */
typedef struct {
  int kind; /* 0 rows, 1 cols, 2 outer */
  const float *X, *v;
  int64_t ldx, rows, cols, incv, incy;
  float alpha, beta;
  float *y;
} lin_gv;

static void gv_range(const lin_gv *g, int64_t lo, int64_t hi) {
  if (g->kind == 0 && g->cols <= 16)
    gemv_rows_narrow(g->X, g->ldx, lo, hi, g->cols, g->v, g->alpha, g->beta, g->y, g->incy);
  else if (g->kind == 0)
    gemv_rows(g->X, g->ldx, lo, hi, g->cols, g->v, g->alpha, g->beta, g->y, g->incy);
  else if (g->kind == 1)
    gemv_cols(g->X, g->ldx, g->rows, lo, hi, g->v, g->incv, g->alpha, g->beta, g->y, g->incy);
  else outer_rows(g->v, g->incv, g->X, g->cols, g->alpha, g->beta, g->y, g->ldx, lo, hi);
}

static void gv_run(const lin_gv *g) {
  /* kind 1 splits columns (whole 64-byte lines of y when incy is 1), the others rows */
  const int64_t n = g->kind == 1 ? g->cols : g->rows, unit = g->kind == 1 ? 16 : 4;
  int nt = threads_for(4.0 * (double)g->rows * (double)g->cols);
  if (nt > 1 && n < 2 * unit) nt = 1;
  if (nt == 1) {
    gv_range(g, 0, n);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num(), k = omp_get_num_threads();
    const int64_t lo = split_at(n, t, k, unit), hi = split_at(n, t + 1, k, unit);
    if (lo < hi) gv_range(g, lo, hi);
  }
}

int lin_own_sgemm(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                  int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
  if (!have_avx512() || M <= 0 || N <= 0 || K <= 0) return 0;
  if (M == 1 || N == 1) {
    /* the vector a (M = 1, K elements inc apart) against op(B), or b against op(A) */
    const int m1 = M == 1;
    const float *X = m1 ? B : A, *v = m1 ? A : B;
    const int64_t ldx = m1 ? ldb : lda, incv = m1 ? (ta ? lda : 1) : (tb ? 1 : ldb);
    const int64_t out = m1 ? N : M, incy = m1 ? 1 : ldc;
    const int along_rows = m1 ? tb : !ta; /* X's rows are the outputs */
    if (along_rows && incv != 1) return 0;
    lin_gv g = {.kind = along_rows ? 0 : 1, .X = X, .v = v, .ldx = ldx,
                .rows = along_rows ? out : K, .cols = along_rows ? K : out, .incv = incv,
                .incy = incy, .alpha = alpha, .beta = beta, .y = C};
    gv_run(&g);
    return 1;
  }
  if (K == 1) { /* C = alpha a b^T + beta C */
    if (tb && ldb != 1) return 0;
    lin_gv g = {.kind = 2, .X = B, .v = A, .ldx = ldc, .rows = M, .cols = N,
                .incv = ta ? 1 : lda, .alpha = alpha, .beta = beta, .y = C};
    gv_run(&g);
    return 1;
  }
  if (alpha != 1.0f) return 0;
  lin_sg g = {.ta = ta, .tb = tb, .M = M, .N = N, .K = K, .A = A, .B = B, .lda = lda,
              .ldb = ldb, .ldc = ldc, .beta = beta, .C = C};
  g.dot = !ta && tb && K >= LIN_DOT_MIN_K && (M <= LIN_DOT_SMALL || N <= LIN_DOT_SMALL);
  if (!g.dot && !nn_gemm_own(OPF_F32, M, N, K)) return 0;
  return sg_run(&g);
}
#else
int lin_own_sgemm(int ta, int tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                  int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc) {
  (void)ta, (void)tb, (void)M, (void)N, (void)K, (void)alpha, (void)A, (void)lda, (void)B;
  (void)ldb, (void)beta, (void)C, (void)ldc;
  return 0;
}
#endif
