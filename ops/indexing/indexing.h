/* indexing.h: helpers shared by the indexing operators (take, gather_nd, scatter_nd, index_add,
 * pick, slices, where, ...): index validation, the threaded row gather and the race-free
 * scatter-add (threads own destination rows), and a strided N-d row walker with merged dims
 * that moves long rows as pieces so a few big rows still spread over the threads. */
#ifndef OPPERF_OPS_INDEXING_H
#define OPPERF_OPS_INDEXING_H

#include <stdint.h>
#include <string.h>

#include "linalg/linalg.h" /* lin_copy: short-row copies */
#include "opf_kernel.h"

/* ---- index validation ---- */

OPF_VEC static int64_t ix_count_bad(const int64_t *restrict idx, int64_t n, int64_t bound) {
  int64_t bad = 0;
  for (int64_t j = 0; j < n; j++) bad += (uint64_t)idx[j] >= (uint64_t)bound;
  return bad;
}

/* Indices come from the user's data in general: a bad one is an error, never a stray access. */
static inline int ix_check(opf_case *c, const int64_t *idx, int64_t n, int64_t bound,
                           const char *what) {
  if (!ix_count_bad(idx, n, bound)) return OPF_OK;
  int64_t j = 0;
  while ((uint64_t)idx[j] < (uint64_t)bound) j++;
  return opf_case_error(c, OPF_EINVAL, "%s %lld at position %lld is outside [0, %lld)", what,
                        (long long)idx[j], (long long)j, (long long)bound);
}

/* The axis param p for x: "all" is rejected (the operator works along one axis, as `what`
 * says), and so is an axis outside x's rank. */
static inline int ix_axis_param(opf_case *c, double p, const opf_tensor *x, const char *what,
                                int *axis) {
  char sx[96];
  if (p == OPF_AXIS_ALL) return opf_case_error(c, OPF_EINVAL, "axis=all is not allowed: %s", what);
  *axis = opf_axis(p, x->ndim);
  if (*axis < 0)
    return opf_case_error(c, OPF_EINVAL, "axis=%d is out of range for x=%s (rank %d)", (int)p,
                          opf_shape_str(x, sx, sizeof sx), x->ndim);
  return OPF_OK;
}

/* Fill input i with int64 indices uniform in [0, bound): n draws over a range of about n give
 * the realistic duplicates a scatter must accumulate. */
static inline void ix_fill(opf_case *c, int i, int64_t bound) {
  opf_fill_index(&c->in[i], c->seed, (uint64_t)i, bound);
}

/* Fill input i, of shape (K, ...), with int64 coordinates: row k uniform in [0, dims[k]). */
static inline void ix_fill_coords(opf_case *c, int i, const int64_t *dims) {
  opf_tensor *t = &c->in[i];
  const int64_t K = t->ndim > 0 ? t->shape[0] : 1, per = K ? opf_numel(t) / K : 0;
  for (int64_t k = 0; k < K; k++) {
    opf_tensor row;
    opf_tensor_set_shape(&row, OPF_I64, 1, &per);
    row.data = (int64_t *)t->data + k * per;
    opf_fill_index(&row, c->seed, (uint64_t)i * 64 + (uint64_t)k, dims[k]);
  }
}

/* ---- coordinates to flat positions (gather_nd, scatter_nd, ravel_multi_index) ---- */
OPF_VEC static int64_t ix_flat_kernel(const int64_t *restrict idx, int64_t M, int K,
                                      const int64_t *restrict dims, int64_t *restrict flat,
                                      int64_t lo, int64_t hi) {
  int64_t bad = 0;
  for (int64_t m = lo; m < hi; m++) flat[m] = 0;
  for (int k = 0; k < K; k++) { /* Horner over the coordinates, one pass per row of idx */
    const int64_t *restrict row = idx + k * M;
    const int64_t dk = dims[k];
    for (int64_t m = lo; m < hi; m++) {
      bad += (uint64_t)row[m] >= (uint64_t)dk;
      flat[m] = (int64_t)((uint64_t)flat[m] * (uint64_t)dk + (uint64_t)row[m]); /* bad ones wrap */
    }
  }
  return bad;
}

typedef struct {
  const int64_t *idx, *dims;
  int64_t *flat, M, bad;
  int K;
} ix_flat_ctx;

static void ix_flat_range(int64_t lo, int64_t hi, void *p) {
  ix_flat_ctx *t = p;
  int64_t bad = ix_flat_kernel(t->idx, t->M, t->K, t->dims, t->flat, lo, hi);
  if (bad) __atomic_fetch_add(&t->bad, bad, __ATOMIC_RELAXED);
}

/* flat[m] = row-major position of (idx[0, m], ..., idx[K-1, m]) in dims, threaded; a
 * coordinate outside its dim is an error naming it (what: the input's name). */
static inline int ix_flatten(opf_case *c, const int64_t *idx, int K, int64_t M,
                             const int64_t *dims, int64_t *flat, const char *what) {
  ix_flat_ctx t = {idx, dims, flat, M, 0, K};
  opf_parallel_range(M, OPF_PAR_MIN / (K + 1), ix_flat_range, &t);
  if (!t.bad) return OPF_OK;
  for (int64_t m = 0; m < M; m++)
    for (int k = 0; k < K; k++) {
      int64_t v = idx[k * M + m];
      if (v < 0 || v >= dims[k])
        return opf_case_error(c, OPF_EINVAL, "%s[%d, %lld] = %lld is outside [0, %lld)", what, k,
                              (long long)m, (long long)v, (long long)dims[k]);
    }
  return OPF_EINVAL;
}

/* dst += src for one element of dtype dt (the references' scatter-adds). */
static inline void ix_add_elem(opf_dtype dt, void *dst, const void *src) {
  switch (dt) {
  case OPF_F32: *(float *)dst += *(const float *)src; break;
  case OPF_F64: *(double *)dst += *(const double *)src; break;
  case OPF_I32: *(int32_t *)dst += *(const int32_t *)src; break;
  default: *(int64_t *)dst += *(const int64_t *)src; break;
  }
}

/* ---- gather and scatter-add of rows along one axis ----
 * The data is seen as (outer, A, inner) around the indexed axis, n indices: gather reads
 * x[o, idx[j], :] into y[o, j, :]; scatter-add is its adjoint, dst[o, idx[j], :] += src[o, j, :]
 * with repeated indices accumulating. */
typedef struct ix_dims {
  int64_t outer, A, inner, n;
  size_t es;
} ix_dims;

/* x (ndim, shape) split around axis, n indices, elements of es bytes. */
static inline ix_dims ix_dims_at(int ndim, const int64_t *shape, int axis, int64_t n, size_t es) {
  ix_dims d = {opf_shape_numel(axis, shape), shape[axis],
               opf_shape_numel(ndim - axis - 1, shape + axis + 1), n, es};
  return d;
}

/* inner == 1: a pure element gather, vectorised with gather instructions. */
#define IX_GATHER(T, sfx)                                                                      \
  OPF_VEC static void ix_gather_##sfx(const T *restrict x, const int64_t *restrict idx,       \
                                      T *restrict y, int64_t n) {                              \
    for (int64_t j = 0; j < n; j++) y[j] = x[idx[j]];                                          \
  }
IX_GATHER(uint32_t, 4)
IX_GATHER(uint64_t, 8)
/* ... with 32-bit indices: 16 elements a gather instruction instead of 8 (int64 indices) */
OPF_VEC static void ix_gather_4i(const uint32_t *restrict x, const int32_t *restrict idx,
                                 uint32_t *restrict y, int64_t n) {
  for (int64_t j = 0; j < n; j++) y[j] = x[idx[j]];
}
/* Indices narrowed once for ix_gather's element gathers of 4-byte data: at most this many. */
#define IX_IDX32_MAX 16384

typedef struct {
  ix_dims d;
  const int64_t *idx;
  const int32_t *idx32; /* idx narrowed (inner == 1, 4-byte data, a short index list), or NULL */
  const char *x;
  char *y;
} ix_gather_ctx;

/* Output rows [lo, hi) of the (outer * n) rows of `inner` elements. */
static void ix_gather_rows(int64_t lo, int64_t hi, void *p) {
  const ix_gather_ctx *t = p;
  const ix_dims *d = &t->d;
  const int64_t *idx = t->idx;
  const size_t es = d->es, row = (size_t)d->inner * es;
  int64_t o = lo / d->n, j0 = lo % d->n; /* one division per range, not per row */
  for (int64_t r = lo; r < hi; o++, j0 = 0) {
    int64_t j1 = d->n < j0 + (hi - r) ? d->n : j0 + (hi - r);
    const char *xo = t->x + (size_t)(o * d->A) * row;
    char *yo = t->y + (size_t)(o * d->n) * row;
    if (d->inner == 1 && j1 - j0 < 16 && es == 4) /* a few elements: inline, no call */
      for (int64_t j = j0; j < j1; j++) ((uint32_t *)yo)[j] = ((const uint32_t *)xo)[idx[j]];
    else if (d->inner == 1 && j1 - j0 < 16)
      for (int64_t j = j0; j < j1; j++) ((uint64_t *)yo)[j] = ((const uint64_t *)xo)[idx[j]];
    else if (d->inner == 1 && es == 4 && t->idx32)
      ix_gather_4i((const uint32_t *)xo, t->idx32 + j0, (uint32_t *)yo + j0, j1 - j0);
    else if (d->inner == 1 && es == 4)
      ix_gather_4((const uint32_t *)xo, idx + j0, (uint32_t *)yo + j0, j1 - j0);
    else if (d->inner == 1)
      ix_gather_8((const uint64_t *)xo, idx + j0, (uint64_t *)yo + j0, j1 - j0);
    else
      for (int64_t j = j0; j < j1; j++) lin_copy(yo + (size_t)j * row, xo + (size_t)idx[j] * row, row);
    r += j1 - j0;
  }
}

/* y[o, j, :] = x[o, idx[j], :], threaded over output rows (indices already checked). */
static inline void ix_gather(const ix_dims *d, const int64_t *idx, const void *x, void *y) {
  ix_gather_ctx t = {*d, idx, NULL, x, y};
  int64_t rows = d->outer * d->n;
  if (rows == 0 || d->inner == 0) return;
  int32_t idx32[d->inner == 1 && d->es == 4 && d->n <= IX_IDX32_MAX && d->A <= INT32_MAX ? d->n : 1];
  if (d->inner == 1 && d->es == 4 && d->n <= IX_IDX32_MAX && d->A <= INT32_MAX && d->outer > 1) {
    for (int64_t j = 0; j < d->n; j++) idx32[j] = (int32_t)idx[j];
    t.idx32 = idx32;
  }
  opf_parallel_range(rows, OPF_PAR_MIN / d->inner + 1, ix_gather_rows, &t);
}

/* For one outer row: add src rows whose index is in [alo, ahi) into dst's rows (the row adds
 * vectorised). inner == 1 adds single elements inline (a call per element cost 3x the add);
 * `own` says the thread owns the whole outer row, so no range test is needed. */
#define IX_SCATTER(T, sfx)                                                                     \
  OPF_VEC static void ix_scatter_##sfx(T *restrict dst, const T *restrict src,                \
                                       const int64_t *restrict idx, int64_t n, int64_t inner,  \
                                       int64_t alo, int64_t ahi) {                             \
    for (int64_t j = 0; j < n; j++) {                                                          \
      int64_t a = idx[j];                                                                      \
      if (a < alo || a >= ahi) continue;                                                       \
      T *restrict dr = dst + a * inner;                                                        \
      const T *restrict sr = src + j * inner;                                                  \
      for (int64_t i = 0; i < inner; i++) dr[i] += sr[i];                                      \
    }                                                                                          \
  }                                                                                            \
  static void ix_scatter1_##sfx(T *restrict dst, const T *restrict src,                       \
                                const int64_t *restrict idx, int64_t n, int own, int64_t alo,  \
                                int64_t ahi) {                                                 \
    if (own)                                                                                   \
      for (int64_t j = 0; j < n; j++) dst[idx[j]] += src[j];                                   \
    else                                                                                       \
      for (int64_t j = 0; j < n; j++)                                                          \
        if (idx[j] >= alo && idx[j] < ahi) dst[idx[j]] += src[j];                              \
  }
IX_SCATTER(float, f32)
IX_SCATTER(double, f64)
IX_SCATTER(int32_t, i32)
IX_SCATTER(int64_t, i64)

typedef struct {
  ix_dims d;
  opf_dtype dt;
  const int64_t *idx;
  const char *src, *init;
  char *dst;
} ix_scatter_ctx;

static void ix_scatter_outer(const ix_scatter_ctx *t, char *dst, const char *src, int own,
                             int64_t alo, int64_t ahi) {
  const ix_dims *d = &t->d;
  if (d->inner == 1) {
    switch (t->dt) {
    case OPF_F32: ix_scatter1_f32((float *)dst, (const float *)src, t->idx, d->n, own, alo, ahi); break;
    case OPF_F64: ix_scatter1_f64((double *)dst, (const double *)src, t->idx, d->n, own, alo, ahi); break;
    case OPF_I32: ix_scatter1_i32((int32_t *)dst, (const int32_t *)src, t->idx, d->n, own, alo, ahi); break;
    default: ix_scatter1_i64((int64_t *)dst, (const int64_t *)src, t->idx, d->n, own, alo, ahi); break;
    }
    return;
  }
  switch (t->dt) {
  case OPF_F32: ix_scatter_f32((float *)dst, (const float *)src, t->idx, d->n, d->inner, alo, ahi); break;
  case OPF_F64: ix_scatter_f64((double *)dst, (const double *)src, t->idx, d->n, d->inner, alo, ahi); break;
  case OPF_I32: ix_scatter_i32((int32_t *)dst, (const int32_t *)src, t->idx, d->n, d->inner, alo, ahi); break;
  default: ix_scatter_i64((int64_t *)dst, (const int64_t *)src, t->idx, d->n, d->inner, alo, ahi); break;
  }
}

/* Destination rows [lo, hi) of the (outer * A) rows: this thread initialises them (zero or a
 * copy of init) and adds every src row whose index lands in them, so no two threads write the
 * same row and no atomics are needed. Each thread scans the indices of the outer rows it
 * covers (n checks per outer row, cheap next to the rows it adds). */
static void ix_scatter_block(const ix_scatter_ctx *t, int64_t lo, int64_t hi) {
  const ix_dims *d = &t->d;
  const size_t row = (size_t)d->inner * d->es;
  if (t->init) memcpy(t->dst + (size_t)lo * row, t->init + (size_t)lo * row, (size_t)(hi - lo) * row);
  else memset(t->dst + (size_t)lo * row, 0, (size_t)(hi - lo) * row);
  for (int64_t o = lo / d->A; o * d->A < hi; o++) {
    int64_t alo = lo - o * d->A, ahi = hi - o * d->A; /* rows of this o we own: [alo, ahi) */
    ix_scatter_outer(t, t->dst + (size_t)(o * d->A) * row, t->src + (size_t)(o * d->n) * row,
                     alo <= 0 && ahi >= d->A, alo, ahi);
  }
}

/* A destination that fits the L3 is done in blocks of IX_SCATTER_BLOCK bytes, each
 * initialised and then added into while it is still in L2 (measured 10-15% faster than
 * initialising all of it first at 1024x1024), as long as rescanning the indices once per block
 * stays cheap next to the block's own traffic. Beyond the L3 one bulk initialisation (glibc's
 * non-temporal stores) measured faster than blocks (take backward at 8192x8192: 91 vs 118 ms). */
#define IX_SCATTER_BLOCK (512 * 1024)
#define IX_SCATTER_BLOCKED_MAX ((int64_t)32 << 20)
static void ix_scatter_rows(int64_t lo, int64_t hi, void *p) {
  const ix_scatter_ctx *t = p;
  const ix_dims *d = &t->d;
  const int64_t row = d->inner * (int64_t)d->es;
  int64_t blk = IX_SCATTER_BLOCK / row > 1 ? IX_SCATTER_BLOCK / row : 1; /* rows per block */
  int64_t scan = d->outer > 1 ? d->n * ((blk + d->A - 1) / d->A) : d->n; /* index checks per block */
  if (scan * 8 > blk * d->inner || d->outer * d->A * row > IX_SCATTER_BLOCKED_MAX) blk = hi - lo;
  for (int64_t b = lo; b < hi; b += blk) ix_scatter_block(t, b, b + blk < hi ? b + blk : hi);
}

/* dst = init (NULL: zero); dst[o, idx[j], :] += src[o, j, :] (indices already checked). */
static inline void ix_scatter_add(const ix_dims *d, opf_dtype dt, const int64_t *idx,
                                  const void *src, void *dst, const void *init) {
  ix_scatter_ctx t = {*d, dt, idx, src, init, dst};
  int64_t rows = d->outer * d->A, work = rows * d->inner + d->outer * d->n * d->inner;
  if (rows == 0 || d->inner == 0) return; /* dst is empty */
  opf_parallel_range(rows, work < OPF_PAR_MIN ? rows + 1 : 2, ix_scatter_rows, &t);
}

/* ---- threaded bulk copy / zero ---- */
typedef struct {
  char *dst;
  const char *src;
} ix_bulk_ctx;

static void ix_bulk_range(int64_t lo, int64_t hi, void *p) {
  const ix_bulk_ctx *t = p;
  if (t->src) memcpy(t->dst + lo, t->src + lo, (size_t)(hi - lo));
  else memset(t->dst + lo, 0, (size_t)(hi - lo));
}

/* dst = src (NULL: zeros) over n bytes, split between the threads when large. */
static inline void ix_bulk(void *dst, const void *src, size_t n) {
  ix_bulk_ctx t = {dst, src};
  opf_parallel_range((int64_t)n, 4 * OPF_PAR_MIN, ix_bulk_range, &t);
}

/* ---- strided N-d row walker ----
 * Operands share an iteration shape; each has byte strides per dim (0: broadcast; negative:
 * reversed). Dims are merged where every operand allows it, and the innermost dim is cut into
 * pieces of IX_PIECE elements, so the work items (row, piece) balance over the threads even
 * when the whole walk is one long contiguous row. */
#define IX_MAXOP 4
#define IX_PIECE 16384

typedef struct ix_walk {
  int m, nop;                          /* merged dims (>= 1), operands */
  int64_t shape[OPF_MAX_DIMS];
  int64_t st[IX_MAXOP][OPF_MAX_DIMS];  /* byte strides */
  int64_t rows, n, pieces;             /* rows of n elements, each cut into `pieces` */
} ix_walk;

/* A row kernel: `rows` consecutive rows of n elements; p[o] is operand o's first element,
 * is[o] its byte stride along a row and os[o] from row to row. Handing over runs of rows
 * rather than single ones keeps narrow rows (10000x10 sliced to 6 columns) cheap. */
typedef void (*ix_row_fn)(char *const *p, const int64_t *is, const int64_t *os, int64_t rows,
                          int64_t n, void *ctx);

static inline void ix_walk_init(ix_walk *w, int nd, const int64_t *shape, int nop,
                                int64_t st[][OPF_MAX_DIMS]) {
  w->nop = nop;
  w->m = 0;
  for (int k = 0; k < nd; k++) {
    if (shape[k] == 1) continue; /* size-1 dims carry no iteration */
    int merge = w->m > 0;
    for (int o = 0; merge && o < nop; o++) merge = w->st[o][w->m - 1] == st[o][k] * shape[k];
    if (merge) {
      w->shape[w->m - 1] *= shape[k];
    } else {
      w->shape[w->m] = shape[k];
      w->m++;
    }
    for (int o = 0; o < nop; o++) w->st[o][w->m - 1] = st[o][k];
  }
  if (w->m == 0) { /* one element */
    w->m = 1;
    w->shape[0] = 1;
    for (int o = 0; o < nop; o++) w->st[o][0] = 0;
  }
  for (int k = 0; k < nd; k++)
    if (shape[k] == 0) w->shape[0] = 0; /* empty */
  w->n = w->shape[w->m - 1];
  w->rows = opf_shape_numel(w->m - 1, w->shape);
  w->pieces = (w->n + IX_PIECE - 1) / IX_PIECE;
}

typedef struct {
  const ix_walk *w;
  char *const *base;
  ix_row_fn fn;
  void *ctx;
} ix_walk_job;

/* Work items [lo, hi) of rows * pieces: whole rows go out in runs along the row dim. */
static void ix_walk_range(int64_t lo, int64_t hi, void *p) {
  const ix_walk_job *j = p;
  const ix_walk *w = j->w;
  const int m = w->m, nop = w->nop, rd = m - 2; /* rd: the row dim, -1 if none */
  const int64_t P = w->pieces;
  int64_t idx[OPF_MAX_DIMS], off[IX_MAXOP] = {0}, is[IX_MAXOP], os[IX_MAXOP];
  char *ptr[IX_MAXOP];
  int64_t row = lo / P, pc = lo % P, r = row;
  for (int d = rd; d >= 0; d--) { /* decompose the first row once; then an odometer */
    idx[d] = r % w->shape[d];
    r /= w->shape[d];
    for (int o = 0; o < nop; o++) off[o] += idx[d] * w->st[o][d];
  }
  for (int o = 0; o < nop; o++) is[o] = w->st[o][m - 1], os[o] = rd >= 0 ? w->st[o][rd] : 0;
  for (int64_t it = lo; it < hi;) {
    int64_t rows = 1, e0 = 0, e1 = w->n;
    if (P == 1 && rd >= 0) {
      rows = w->shape[rd] - idx[rd] < hi - it ? w->shape[rd] - idx[rd] : hi - it;
      it += rows;
    } else if (P > 1) {
      int64_t pe = P < pc + (hi - it) ? P : pc + (hi - it); /* pieces [pc, pe) of this row */
      e0 = pc * IX_PIECE, e1 = pe * IX_PIECE < w->n ? pe * IX_PIECE : w->n;
      it += pe - pc;
      pc = 0;
    } else {
      it++;
    }
    for (int o = 0; o < nop; o++) ptr[o] = j->base[o] + off[o] + e0 * is[o];
    j->fn(ptr, is, os, rows, e1 - e0, j->ctx);
    if (rd >= 0) { /* past the run's last row, then one odometer step */
      idx[rd] += rows - 1;
      for (int o = 0; o < nop; o++) off[o] += (rows - 1) * os[o];
    }
    for (int d = rd; d >= 0; d--) {
      idx[d]++;
      for (int o = 0; o < nop; o++) off[o] += w->st[o][d];
      if (idx[d] < w->shape[d]) break;
      for (int o = 0; o < nop; o++) off[o] -= w->st[o][d] * w->shape[d];
      idx[d] = 0;
    }
  }
}

/* Run fn over the walk; threaded (over whole items) when par and the walk is big enough. */
static inline void ix_walk_run(const ix_walk *w, char *const *base, ix_row_fn fn, void *ctx,
                               int par) {
  ix_walk_job j = {w, base, fn, ctx};
  int64_t items = w->rows * w->pieces;
  if (items == 0) return;
  int big = par && w->rows * w->n >= OPF_PAR_MIN;
  opf_parallel_range(items, big ? 2 : items + 1, ix_walk_range, &j);
}

/* Byte strides of a contiguous tensor of (ndim, shape) seen in an iteration space of nd dims
 * (right-aligned, NumPy broadcasting): 0 where it has size 1 or lacks the dim. */
static inline void ix_bcast_strides(const opf_tensor *t, int nd, size_t es, int64_t *st) {
  int64_t s = (int64_t)es;
  for (int k = nd - 1; k >= 0; k--) {
    int j = t->ndim - nd + k;
    int64_t d = j >= 0 ? t->shape[j] : 1;
    st[k] = d == 1 ? 0 : s;
    s *= d;
  }
}

/* Copy n elements between rows with byte strides ds and ss (either may be negative): long
 * contiguous rows by memcpy, short ones inline, reversed and strided ones vectorised (gathers
 * and scatters; the reversed cases as permutes). */
#define IX_SCOPY(T, sfx)                                                                       \
  OPF_VEC static void ix_scopy_##sfx(T *restrict d, int64_t ds, const T *restrict s,          \
                                     int64_t ss, int64_t n) {                                  \
    if (ds == 1 && ss == -1)                                                                   \
      for (int64_t i = 0; i < n; i++) d[i] = s[-i];                                            \
    else if (ds == -1 && ss == 1)                                                              \
      for (int64_t i = 0; i < n; i++) d[-i] = s[i];                                            \
    else if (ds == 1 && ss == 2) /* constant strides: shuffles instead of gathers */           \
      for (int64_t i = 0; i < n; i++) d[i] = s[2 * i];                                         \
    else if (ds == 2 && ss == 1)                                                               \
      for (int64_t i = 0; i < n; i++) d[2 * i] = s[i];                                         \
    else                                                                                       \
      for (int64_t i = 0; i < n; i++) d[i * ds] = s[i * ss];                                   \
  }
IX_SCOPY(uint32_t, 4)
IX_SCOPY(uint64_t, 8)

static inline void ix_copy_row(char *dst, int64_t ds, const char *src, int64_t ss, int64_t n,
                               size_t es) {
  const int64_t e = (int64_t)es;
  if (ds == e && ss == e) lin_copy(dst, src, (size_t)n * es);
  else if (n < 16 && es == 4) /* short strided rows: inline, no dispatched call */
    for (int64_t i = 0; i < n; i++) *(uint32_t *)(dst + i * ds) = *(const uint32_t *)(src + i * ss);
  else if (n < 16 && es == 8)
    for (int64_t i = 0; i < n; i++) *(uint64_t *)(dst + i * ds) = *(const uint64_t *)(src + i * ss);
  else if (es == 4) ix_scopy_4((uint32_t *)dst, ds / e, (const uint32_t *)src, ss / e, n);
  else if (es == 8) ix_scopy_8((uint64_t *)dst, ds / e, (const uint64_t *)src, ss / e, n);
  else
    for (int64_t i = 0; i < n; i++) memcpy(dst + i * ds, src + i * ss, es);
}

#endif
