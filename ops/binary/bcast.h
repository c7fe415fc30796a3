/* bcast.h: the NumPy-broadcast iterator of the binary, in-place and logic operators: operand
 * strides in the broadcast shape (0 where broadcast), dims merged where contiguous for all
 * operands, a walk over blocks of the two innermost dims with one dim split across threads.
 * Operand 0 is the destination; where its strides are 0 the walk is a reduction (gradients).
 * Operands may differ in element size (comparisons write one-byte bools from wider inputs). */
#ifndef OPPERF_BCAST_H
#define OPPERF_BCAST_H

#include <stdint.h>
#include <string.h>

#include "opf_kernel.h"

#define BC_MAXOP 6 /* gradients: dX, g, a, b, y and a fused second gradient */
/* A dim the threads split needs this many indices to balance up to 8 threads. */
#define BC_SPLIT_MIN 64
/* Reductions over a split dim use this many partial destinations, independent of the thread
 * count so results (and the workspace size computed in infer) do not depend on it. */
#define BC_PARTS 16

/* A block kernel: rows x n elements, the two innermost merged dims. p[o] points at operand
 * o's first element, s[o] is its stride along a row (0 or 1: operands are contiguous, so the
 * innermost merged dim of an operand is either broadcast or unit stride), os[o] its stride
 * from row to row (may be 0). first: the destination elements of row 0 are visited for the
 * first time (write, don't accumulate); later rows are first too unless os[0] == 0. One call
 * per block rather than per row keeps narrow rows (10000x1 + 1x100) cheap. */
typedef void (*bc_kernel)(void *const *p, const int64_t *s, const int64_t *os, int64_t rows,
                          int64_t n, int first);

typedef struct bc_plan {
  int m;                               /* merged dims (>= 1) */
  int nop;                             /* operands */
  int64_t shape[OPF_MAX_DIMS];
  int64_t st[BC_MAXOP][OPF_MAX_DIMS];  /* element strides, 0 where the operand broadcasts */
  size_t es[BC_MAXOP];                 /* element sizes in bytes */
  int64_t n;                           /* elements of the iteration space */
  int64_t nx;                          /* elements of the destination */
  int split;                           /* the dim the threads divide */
  int parts;                           /* > 0: split is reduced into the destination: use
                                          parts partial destinations (parts - 1 in ws) */
} bc_plan;

/* Plan the iteration of the broadcast shape (nd, shape) over nop contiguous operands t[]
 * (t[0] the destination), each broadcastable to it. */
static inline void bc_plan_init(bc_plan *p, int nd, const int64_t *shape, int nop,
                                const opf_tensor *const *t) {
  int64_t full[BC_MAXOP][OPF_MAX_DIMS];
  for (int o = 0; o < nop; o++) {
    int64_t s = 1;
    for (int k = nd - 1; k >= 0; k--) {
      int j = t[o]->ndim - nd + k;
      int64_t d = j >= 0 ? t[o]->shape[j] : 1;
      full[o][k] = d == 1 ? 0 : s;
      s *= d;
    }
  }
  p->nop = nop;
  for (int o = 0; o < nop; o++) p->es[o] = opf_dtype_size(t[o]->dtype);
  p->m = 0;
  p->n = 1;
  for (int k = 0; k < nd; k++) {
    p->n *= shape[k];
    if (shape[k] == 1) continue; /* size-1 dims carry no iteration */
    int merge = p->m > 0;        /* outer dim m-1 and dim k are one strided dim for all? */
    for (int o = 0; merge && o < nop; o++) merge = p->st[o][p->m - 1] == full[o][k] * shape[k];
    if (merge) {
      p->shape[p->m - 1] *= shape[k];
    } else {
      p->shape[p->m] = shape[k];
      p->m++;
    }
    for (int o = 0; o < nop; o++) p->st[o][p->m - 1] = full[o][k];
  }
  if (p->m == 0) { /* one element */
    p->m = 1;
    p->shape[0] = 1;
    for (int o = 0; o < nop; o++) p->st[o][0] = 0;
  }
  p->nx = opf_numel(t[0]);

  /* Split choice. Splitting a dim the destination keeps (nonzero stride) gives the threads
   * disjoint destinations: the outermost such dim first (column-broadcast gradients: rows
   * split, each thread sums whole rows). Splitting a reduced dim needs partial destinations:
   * preferred when the only kept dim is the inner one (row-broadcast gradients: row blocks
   * accumulate into private copies of a small destination) and the copies are cheap. */
  int kd = -1, rd = -1, kmax = -1;
  for (int d = 0; d < p->m; d++) {
    if (p->st[0][d]) {
      if (kd < 0 && p->shape[d] >= BC_SPLIT_MIN) kd = d;
      if (kmax < 0 || p->shape[d] > p->shape[kmax]) kmax = d;
    } else if (rd < 0 && p->shape[d] >= BC_SPLIT_MIN) {
      rd = d;
    }
  }
  int parts_ok = rd >= 0 && p->nx * BC_PARTS * 4 <= p->n;
  p->parts = 0;
  if (kd >= 0 && (kd < p->m - 1 || !parts_ok)) {
    p->split = kd;
  } else if (parts_ok) {
    p->split = rd;
    p->parts = BC_PARTS;
  } else {
    p->split = kd >= 0 ? kd : kmax >= 0 ? kmax : 0;
  }
}

/* Workspace bytes the plan's partial destinations need. */
static inline size_t bc_ws_bytes(const bc_plan *p) {
  return p->parts ? (size_t)(p->parts - 1) * (size_t)p->nx * p->es[0] : 0;
}

/* Walk the plan with the split dim restricted to [lo, hi), one kernel call per block of the
 * two innermost dims. */
static inline void bc_walk(const bc_plan *p, int64_t lo, int64_t hi, bc_kernel k,
                           void *const *base) {
  const int m = p->m, in = m - 1, ro = m - 2, nop = p->nop; /* ro: the row dim, -1 if none */
  int64_t idx[OPF_MAX_DIMS] = {0}, start[OPF_MAX_DIMS] = {0}, end[OPF_MAX_DIMS] = {0};
  int64_t off[BC_MAXOP] = {0};
  int64_t is[BC_MAXOP], os[BC_MAXOP];
  void *ptr[BC_MAXOP];
  if (lo >= hi) return;
  for (int d = 0; d < m; d++) {
    start[d] = d == p->split ? lo : 0;
    end[d] = d == p->split ? hi : p->shape[d];
    idx[d] = start[d];
    for (int o = 0; o < nop; o++) off[o] += start[d] * p->st[o][d];
  }
  for (int o = 0; o < nop; o++) {
    is[o] = p->st[o][in];
    os[o] = ro >= 0 ? p->st[o][ro] : 0;
  }
  const int64_t n = end[in] - start[in], rows = ro >= 0 ? end[ro] - start[ro] : 1;
  for (;;) {
    /* The destination block is new when every outer dim it is reduced over is at its start. */
    int first = 1;
    for (int d = 0; d < ro; d++)
      if (!p->st[0][d] && idx[d] != start[d]) first = 0;
    for (int o = 0; o < nop; o++) ptr[o] = (char *)base[o] + off[o] * (int64_t)p->es[o];
    k(ptr, is, os, rows, n, first);
    int d = ro - 1;
    for (; d >= 0; d--) {
      idx[d]++;
      for (int o = 0; o < nop; o++) off[o] += p->st[o][d];
      if (idx[d] < end[d]) break;
      for (int o = 0; o < nop; o++) off[o] -= p->st[o][d] * (end[d] - start[d]);
      idx[d] = start[d];
    }
    if (d < 0) return;
  }
}

typedef struct {
  const bc_plan *p;
  bc_kernel k;
  void *const *base;
} bc_job;

static inline void bc_range(int64_t lo, int64_t hi, void *ctx) {
  const bc_job *j = ctx;
  bc_walk(j->p, lo, hi, j->k, j->base);
}

OPF_VEC static void bc_add_parts_f32(float *restrict dst, const float *restrict parts,
                                     int np, int64_t n) {
  for (int q = 0; q < np; q++)
    for (int64_t i = 0; i < n; i++) dst[i] += parts[q * n + i];
}
OPF_VEC static void bc_add_parts_f64(double *restrict dst, const double *restrict parts,
                                     int np, int64_t n) {
  for (int q = 0; q < np; q++)
    for (int64_t i = 0; i < n; i++) dst[i] += parts[q * n + i];
}

/* Run kernel k over the plan: base[o] is operand o's data, ws the workspace of
 * bc_ws_bytes(p) (partial sums are float32 or float64: reductions are gradients). */
static inline void bc_run(const bc_plan *p, bc_kernel k, void *const *base, void *ws) {
  const size_t esize = p->es[0];
  if (p->n == 0) { /* an empty reduction is zero; an empty map has nothing to do */
    memset(base[0], 0, (size_t)p->nx * esize);
    return;
  }
  const int64_t ext = p->shape[p->split];
  /* threads may only split a dim the destination keeps, unless each has its own partials */
  const int par = p->n >= OPF_PAR_MIN && (p->parts || p->st[0][p->split]);
  if (!p->parts) {
    bc_job j = {p, k, base};
    opf_parallel_range(ext, par ? 0 : ext + 1, bc_range, &j);
    return;
  }
  const int np = p->parts;
#pragma omp parallel for schedule(static) if (par)
  for (int q = 0; q < np; q++) {
    void *b[BC_MAXOP];
    memcpy(b, base, sizeof(void *) * (size_t)p->nop);
    if (q) b[0] = (char *)ws + (size_t)(q - 1) * (size_t)p->nx * esize;
    bc_walk(p, ext * q / np, ext * (q + 1) / np, k, b);
  }
  if (esize == sizeof(float)) bc_add_parts_f32(base[0], ws, np - 1, p->nx);
  else bc_add_parts_f64(base[0], ws, np - 1, p->nx);
}

#endif
