/* remap.c: flip, roll and pad: outputs whose index along each axis comes from one input index
 * through a per-axis map (reversed, rotated, or shifted with constant / edge / reflect borders).
 * One engine runs all three: output rows (innermost axis) in parallel, each filled by at most
 * three runs (memcpy, reversed copy, per-element border) from the source row its outer indices
 * map to. Backward: flip is its own inverse, roll rolls back, pad gathers the cropped interior
 * plus, for edge/reflect, the border pads summed into the elements they replicate. */
#include "shape/shape.h"

enum { MAP_ID, MAP_FLIP, MAP_ROLL, MAP_PAD };
enum { PAD_CONSTANT, PAD_EDGE, PAD_REFLECT };

typedef struct {
  int kind, mode;
  int64_t n, m; /* source and output extents */
  int64_t a;    /* ROLL: shift in [0, n); PAD: elements before */
} rm_dim;

/* Source index of output index j along one axis; -1 for a constant pad. Reflect pads are
 * shorter than the axis (infer checks), so one reflection suffices. */
static inline int64_t rm_src(const rm_dim *d, int64_t j) {
  int64_t s;
  switch (d->kind) {
  case MAP_ID: return j;
  case MAP_FLIP: return d->n - 1 - j;
  case MAP_ROLL: s = j - d->a; return s < 0 ? s + d->n : s;
  default:
    s = j - d->a;
    if (s >= 0 && s < d->n) return s;
    if (d->mode == PAD_CONSTANT) return -1;
    if (d->mode == PAD_EDGE) return s < 0 ? 0 : d->n - 1;
    return s < 0 ? -s : 2 * (d->n - 1) - s;
  }
}

typedef struct {
  int nd;
  rm_dim d[OPF_MAX_DIMS];
  int64_t ss[OPF_MAX_DIMS]; /* source strides (elements) */
  int64_t os[OPF_MAX_DIMS]; /* output strides */
  size_t es;
} rm_plan;

/* Drop identity unit axes and merge neighbours that move together (identity next to identity,
 * flip next to flip: reversing both axes reverses the flattened index), so flipping axis 0
 * of (1024,1024) is 1024 row memcpys and a pad of (32,64,56,56) on H, W is rows of (58). */
static void rm_plan_make(rm_plan *pl, int nd, const rm_dim *dims, size_t es) {
  memset(pl, 0, sizeof *pl);
  pl->es = es;
  for (int k = 0; k < nd; k++) {
    rm_dim d = dims[k];
    if ((d.kind == MAP_ROLL && d.a == 0) || (d.kind == MAP_PAD && d.a == 0 && d.m == d.n) ||
        (d.kind == MAP_FLIP && d.n <= 1))
      d.kind = MAP_ID;
    if (d.kind == MAP_ID && d.n == 1) continue;
    rm_dim *p = pl->nd ? &pl->d[pl->nd - 1] : NULL;
    if (p && p->kind == d.kind && (d.kind == MAP_ID || d.kind == MAP_FLIP)) {
      p->n *= d.n, p->m *= d.m;
      continue;
    }
    pl->d[pl->nd++] = d;
  }
  if (!pl->nd) pl->d[pl->nd++] = (rm_dim){.kind = MAP_ID, .n = 1, .m = 1};
  int64_t s = 1, o = 1;
  for (int k = pl->nd - 1; k >= 0; k--) {
    pl->ss[k] = s, pl->os[k] = o;
    s *= pl->d[k].n, o *= pl->d[k].m;
  }
}

/* ---- forward engine ---- */
enum { SEG_COPY, SEG_REV, SEG_ELEM };
typedef struct {
  int64_t o0, o1, s0; /* output range; COPY: source of o0 (ascending), REV: (descending) */
  int type;
} rm_seg;

/* Runs of the innermost axis's map. */
static int rm_segments(const rm_dim *d, rm_seg *seg) {
  int n = 0;
  switch (d->kind) {
  case MAP_ID: seg[n++] = (rm_seg){0, d->m, 0, SEG_COPY}; break;
  case MAP_FLIP: seg[n++] = (rm_seg){0, d->m, d->n - 1, SEG_REV}; break;
  case MAP_ROLL:
    seg[n++] = (rm_seg){0, d->a, d->n - d->a, SEG_COPY};
    seg[n++] = (rm_seg){d->a, d->m, 0, SEG_COPY};
    break;
  default:
    seg[n++] = (rm_seg){0, d->a, 0, SEG_ELEM};
    seg[n++] = (rm_seg){d->a, d->a + d->n, 0, SEG_COPY};
    seg[n++] = (rm_seg){d->a + d->n, d->m, 0, SEG_ELEM};
  }
  return n;
}

/* out[t] = in[n-1-t]: the compiler vectorises it with a lane-reversing permute. */
OPF_VEC static void rev4(const uint32_t *restrict in, uint32_t *restrict out, int64_t n) {
  for (int64_t t = 0; t < n; t++) out[t] = in[n - 1 - t];
}
OPF_VEC static void rev8(const uint64_t *restrict in, uint64_t *restrict out, int64_t n) {
  for (int64_t t = 0; t < n; t++) out[t] = in[n - 1 - t];
}

/* rev4 / rev8 with streaming stores (see shp_streams), lanes reversed by one permute. The
 * output is written from its end so that the source streams forward, which the hardware
 * prefetcher follows; read backwards an 8192x8192 flip ran at ~26 GB/s. */
#ifdef OPF_X86
__attribute__((target("avx512f"))) static void rev_stream(const char *in, char *out, int64_t n,
                                                           size_t es) {
  const int64_t per = 64 / (int64_t)es, e = (int64_t)es;
  int64_t t0 = 0; /* whole aligned output blocks cover [t0, t1) */
  while (t0 < n && ((uintptr_t)(out + t0 * e) & 63)) t0++;
  const int64_t t1 = t0 + (n - t0) / per * per;
  for (int64_t t = 0; t < t0; t++) memcpy(out + t * e, in + (n - 1 - t) * e, es);
  for (int64_t t = t1; t < n; t++) memcpy(out + t * e, in + (n - 1 - t) * e, es);
  const __m512i i4 = _mm512_set_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i i8 = _mm512_set_epi64(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t t = t1 - per; t >= t0; t -= per) {
    __m512i v = _mm512_loadu_si512(in + (n - t - per) * e);
    v = es == 4 ? _mm512_permutexvar_epi32(i4, v) : _mm512_permutexvar_epi64(i8, v);
    _mm512_stream_si512((void *)(out + t * e), v);
  }
}
#else
/* Other architectures never stream (shp_streams is 0): the plain reversal, correct if called. */
static void rev_stream(const char *in, char *out, int64_t n, size_t es) {
  if (es == 4) rev4((const uint32_t *)in, (uint32_t *)out, n);
  else rev8((const uint64_t *)in, (uint64_t *)out, n);
}
#endif

#define RM_CHUNK 16384   /* output elements per work unit along the innermost axis */
#define RM_TINY 32       /* rows up to this long go through a gather table */
#define RM_PF_BYTES 4096 /* prefetch distance of out-of-order short rows (~DRAM latency x bandwidth) */

typedef struct {
  const rm_plan *pl;
  const char *src;
  char *dst;
  unsigned char fill[8];
  rm_seg seg[3];
  int nseg, avx512, nt; /* nt: stream the copies (in + out beyond the LLC) */
  int64_t nchunk;
  int64_t pfd, in_row; /* short rows read out of order: prefetch pfd rows ahead, in_row bytes */
  int tiny;             /* rows of at most RM_TINY elements: gathered through tab */
  int32_t tab[RM_TINY]; /* tiny rows: source index of each output element, -1 to fill */
} rm_ctx;

/* A tiny row (10 elements in a (10000,10) flip) as a gather through the precomputed table:
 * segment logic per row cost ~150 instructions there, this ~3 per element. */
static inline void rm_tiny_row(const rm_ctx *x, const char *srow, char *orow, int64_t m) {
  if (x->pl->es == 4) {
    uint32_t *o = (uint32_t *)orow, f;
    const uint32_t *in = (const uint32_t *)srow;
    memcpy(&f, x->fill, 4);
    for (int64_t j = 0; j < m; j++) o[j] = !in || x->tab[j] < 0 ? f : in[x->tab[j]];
  } else {
    uint64_t *o = (uint64_t *)orow, f;
    const uint64_t *in = (const uint64_t *)srow;
    memcpy(&f, x->fill, 8);
    for (int64_t j = 0; j < m; j++) o[j] = !in || x->tab[j] < 0 ? f : in[x->tab[j]];
  }
}

/* Output row window [j0, j1) from source row srow (NULL: a constant-pad row). */
static inline void rm_row(const rm_ctx *x, const char *srow, char *orow, int64_t j0, int64_t j1) {
  const size_t es = x->pl->es;
  const rm_dim *d = &x->pl->d[x->pl->nd - 1];
  if (!srow) {
    if (x->nt && j1 - j0 >= 64) shp_fill_stream(orow + j0 * es, x->fill, es, j1 - j0);
    else shp_fill(orow + j0 * es, x->fill, es, j1 - j0);
    return;
  }
  for (int k = 0; k < x->nseg; k++) {
    const rm_seg *s = &x->seg[k];
    int64_t a = s->o0 > j0 ? s->o0 : j0, b = s->o1 < j1 ? s->o1 : j1;
    if (a >= b) continue;
    if (s->type == SEG_COPY) {
      shp_move(x->nt, x->avx512, orow + a * es, srow + (s->s0 + a - s->o0) * es, (size_t)(b - a) * es);
    } else if (s->type == SEG_REV) {
      const char *lo = srow + (s->s0 - (b - 1 - s->o0)) * es;
      if (x->nt && b - a >= 64) rev_stream(lo, orow + a * es, b - a, es);
      else if (es == 4) rev4((const uint32_t *)lo, (uint32_t *)(orow + a * es), b - a);
      else rev8((const uint64_t *)lo, (uint64_t *)(orow + a * es), b - a);
    } else {
      for (int64_t j = a; j < b; j++) {
        int64_t i = rm_src(d, j);
        const char *from = i < 0 ? (const char *)x->fill : srow + i * es;
        if (es == 4) memcpy(orow + j * 4, from, 4);
        else memcpy(orow + j * 8, from, 8);
      }
    }
  }
}

/* Source offset of the row at outer index idx over axes [k0, k1); -1 for a constant-pad row. */
static inline int64_t rm_row_src(const rm_plan *pl, const int64_t *idx, int k0, int k1) {
  int64_t so = 0;
  for (int k = k0; k < k1; k++) {
    int64_t i = rm_src(&pl->d[k], idx[k]);
    if (i < 0) return -1;
    so += i * pl->ss[k];
  }
  return so;
}

static inline void rm_next(const rm_plan *pl, int64_t *idx, int last) {
  for (int k = last; k >= 0; k--) {
    if (++idx[k] < pl->d[k].m) break;
    idx[k] = 0;
  }
}

/* Work units [lo, hi): (output row, chunk of that row), for rows longer than a chunk. */
static void rm_units(int64_t lo, int64_t hi, void *p) {
  const rm_ctx *x = p;
  const rm_plan *pl = x->pl;
  const int nd = pl->nd;
  const int64_t es = (int64_t)pl->es, m = pl->d[nd - 1].m;
  int64_t idx[OPF_MAX_DIMS], r = lo / x->nchunk, ch = lo % x->nchunk, rest = r;
  for (int k = nd - 2; k >= 0; k--) idx[k] = rest % pl->d[k].m, rest /= pl->d[k].m;
  for (int64_t u = lo; u < hi; r++, ch = 0) {
    /* this row's chunks in the range as one window: a thread's share of one long row (a
     * flattened roll) is one run per segment (rep movsb past SHP_LONG_RUN, see shp_run) */
    int64_t so = rm_row_src(pl, idx, 0, nd - 1), ce = ch + (hi - u);
    ce = ce < x->nchunk ? ce : x->nchunk;
    int64_t j0 = ch * RM_CHUNK, j1 = ce * RM_CHUNK < m ? ce * RM_CHUNK : m;
    rm_row(x, so < 0 ? NULL : x->src + so * es, x->dst + r * m * es, j0, j1);
    u += ce - ch;
    rm_next(pl, idx, nd - 2);
  }
  if (x->nt) shp_sfence();
}

/* Rows [lo, hi) of short rows (one chunk each): the per-row cost is what matters (114688 rows
 * of 56 in a (32,64,56,56) pad), so the outer offset is kept across the last outer axis and
 * only that axis's map is evaluated per row. */
static void rm_rows(int64_t lo, int64_t hi, void *p) {
  const rm_ctx *x = p;
  const rm_plan *pl = x->pl;
  const int nd = pl->nd, kl = nd - 2;
  const int64_t es = (int64_t)pl->es, m = pl->d[nd - 1].m;
  const rm_dim *dl = &pl->d[kl];
  int64_t idx[OPF_MAX_DIMS], rest = lo;
  for (int k = kl; k >= 0; k--) idx[k] = rest % pl->d[k].m, rest /= pl->d[k].m;
  char *orow = x->dst + lo * m * es;
  for (int64_t r = lo; r < hi;) {
    int64_t base = rm_row_src(pl, idx, 0, kl), nbase = -1;
    if (x->pfd) { /* the next run's base, for prefetches that cross into it */
      int64_t nidx[OPF_MAX_DIMS];
      memcpy(nidx, idx, sizeof nidx);
      nidx[kl] = 0;
      rm_next(pl, nidx, kl - 1);
      int more = 0;
      for (int k = 0; k < kl; k++) more |= nidx[k] != 0;
      nbase = more ? rm_row_src(pl, nidx, 0, kl) : -1;
    }
    int64_t j = idx[kl], jn = dl->m - j < hi - r ? dl->m : j + (hi - r);
    for (; j < jn; j++, r++, orow += m * es) {
      int64_t i = base < 0 ? -1 : rm_src(dl, j);
      if (x->pfd) {
        int64_t jp = j + x->pfd, bp = jp < dl->m ? base : nbase;
        jp = jp < dl->m ? jp : jp - dl->m;
        int64_t ip = bp < 0 || jp >= dl->m ? -1 : rm_src(dl, jp);
        if (ip >= 0) {
          const char *q = x->src + (bp + ip * pl->ss[kl]) * es;
          for (int64_t b = 0; b < x->in_row; b += 64) __builtin_prefetch(q + b);
        }
      }
      const char *srow = i < 0 ? NULL : x->src + (base + i * pl->ss[kl]) * es;
      if (x->tiny) rm_tiny_row(x, srow, orow, m);
      else rm_row(x, srow, orow, 0, m);
    }
    idx[kl] = 0;
    rm_next(pl, idx, kl - 1);
  }
  if (x->nt) shp_sfence();
}

/* ---- tiny rows of 32-bit elements many at a time: a (10000, 10) flip ----
 * Rows of m <= 16 elements, every output element from its own row (flip, roll; no pad), the
 * rows contiguous on both sides: the row permutation repeats every P = lcm(m, 16) elements,
 * so output vector k of each period is one vpermt2ps of two unaligned source vectors at a
 * fixed offset (when its sources span under 32 elements, as m = 10 gives). 3 instructions
 * per 16 elements where the gather table takes ~3 per element: (10000, 10) flipped on
 * axis 1, 1 thread: 40 us, torch 25. */
#define RM_VMAX 16
typedef struct {
  int nv;                       /* vectors per period */
  int64_t P;                    /* elements per period */
  int32_t off[RM_VMAX];         /* vector k's first source, from the period's start */
  int32_t ix[RM_VMAX][16];      /* its lanes' sources within off[k] .. off[k] + 31 */
} rm_vtab;
typedef struct {
  const rm_vtab *t;
  const float *src;
  float *dst;
} rm_vctx;

static int rm_vtab_make(rm_vtab *t, const int32_t *tab, int64_t m) {
  int64_t g = 16, r = m;
  while (r) { const int64_t q = g % r; g = r, r = q; } /* gcd(16, m) */
  t->P = m / g * 16, t->nv = (int)(t->P / 16);
  if (t->nv > RM_VMAX) return 0;
  int64_t row = 0, col = 0; /* of element 16 k + j (no divisions: built on every call) */
  for (int k = 0; k < t->nv; k++) {
    int64_t src[16], lo = INT64_MAX, hi = -1;
    for (int j = 0; j < 16; j++) {
      src[j] = row + tab[col];
      if (++col == m) col = 0, row += m;
      lo = src[j] < lo ? src[j] : lo, hi = src[j] > hi ? src[j] : hi;
    }
    if (hi - lo >= 32) return 0;
    t->off[k] = (int32_t)lo;
    for (int j = 0; j < 16; j++) t->ix[k][j] = (int32_t)(src[j] - lo);
  }
  return 1;
}
#ifdef OPF_X86
__attribute__((target("avx512f"))) static void rm_vperiods(int64_t lo, int64_t hi, void *p) {
  const rm_vctx *c = p;
  const rm_vtab *t = c->t;
  for (int64_t q = lo; q < hi; q++) {
    const float *s = c->src + q * t->P;
    float *d = c->dst + q * t->P;
    for (int k = 0; k < t->nv; k++) {
      const __m512 a = _mm512_loadu_ps(s + t->off[k]), b = _mm512_loadu_ps(s + t->off[k] + 16);
      _mm512_storeu_ps(d + 16 * k,
                       _mm512_permutex2var_ps(a, _mm512_loadu_si512(t->ix[k]), b));
    }
  }
}
#else
static void rm_vperiods(int64_t lo, int64_t hi, void *p) { (void)lo, (void)hi, (void)p; }
#endif

/* Rows [0, done) of the plan by rm_vperiods when it applies (see above), else done = 0. */
static int64_t rm_vrows(const rm_ctx *x, int64_t rows) {
  const rm_plan *pl = x->pl;
  const rm_dim *in = &pl->d[pl->nd - 1];
  if (!x->avx512 || x->nt || pl->es != 4 || in->n != in->m || in->m > 16 || in->m < 2)
    return 0;
  for (int k = 0; k < pl->nd - 1; k++)
    if (pl->d[k].kind != MAP_ID) return 0;
  for (int64_t j = 0; j < in->m; j++)
    if (x->tab[j] < 0) return 0;
  rm_vtab t;
  if (!rm_vtab_make(&t, x->tab, in->m)) return 0;
  const int64_t n = rows * in->m; /* elements; a period reads at most 32 past its start */
  const int64_t np = n >= 32 + t.P ? (n - 32) / t.P : 0;
  if (!np) return 0;
  rm_vctx c = {&t, (const float *)(const void *)x->src, (float *)(void *)x->dst};
  opf_parallel_range(np, np * t.P >= OPF_PAR_MIN ? 1 : np + 1, rm_vperiods, &c);
  return np * t.P / in->m;
}

static void rm_run(const rm_plan *pl, const void *src, void *dst, const void *fill) {
  rm_ctx x = {.pl = pl, .src = src, .dst = dst, .avx512 = shp_have_avx512()};
  int64_t nin = 1, nout = 1;
  for (int k = 0; k < pl->nd; k++) nin *= pl->d[k].n, nout *= pl->d[k].m;
  /* Plans of plain copies (rolls) stream as shp_copy does (shp_streams_runs: from two
   * threads, unstreamed up to twice the LLC); reversals and pads keep shp_streams. */
  int copies = 1;
  for (int k = 0; k < pl->nd; k++) copies &= pl->d[k].kind == MAP_ID || pl->d[k].kind == MAP_ROLL;
  const double moved = (double)(nin + nout) * (double)pl->es;
  x.nt = copies ? shp_streams_runs(moved) : shp_streams(moved);
  if (fill) memcpy(x.fill, fill, pl->es);
  const rm_dim *in = &pl->d[pl->nd - 1];
  int64_t rows = 1;
  for (int k = 0; k < pl->nd - 1; k++) rows *= pl->d[k].m;
  if (rows == 0 || in->m == 0) return;
  x.nseg = rm_segments(in, x.seg);
  x.tiny = in->m <= RM_TINY;
  for (int64_t j = 0; x.tiny && j < in->m; j++) x.tab[j] = (int32_t)rm_src(in, j);
  x.nchunk = (in->m + RM_CHUNK - 1) / RM_CHUNK;
  /* Source rows read backwards or with jumps (flip or roll of the axis above short rows)
   * defeat the hardware prefetcher: (32,64,56,56) flipped on H ran at 6 GB/s, not 50. */
  const rm_dim *dl = pl->nd >= 2 ? &pl->d[pl->nd - 2] : NULL;
  x.in_row = in->n * (int64_t)pl->es;
  if (dl && (dl->kind == MAP_FLIP || dl->kind == MAP_ROLL) && x.nchunk == 1 && x.in_row < 4096)
    x.pfd = RM_PF_BYTES / x.in_row + 1;
  const int64_t done = x.tiny && pl->nd >= 2 ? rm_vrows(&x, rows) : 0;
  if (done) { /* the last rows (under a period and 32 elements) one at a time */
    if (done < rows) rm_rows(done, rows, &x);
    return;
  }
  int64_t units = rows * x.nchunk;
  opf_parallel_range(units, rows * in->m >= OPF_PAR_MIN ? 2 : units + 1,
                     x.nchunk == 1 && pl->nd >= 2 ? rm_rows : rm_units, &x);
}

/* ---- pad backward: gather ----
 * dx[i] = g[i + before] plus, along each edge/reflect axis, g at every pad position whose
 * source is i (products of those sets over the axes). Each dx row is owned by one thread, so
 * the sums need no atomics or partial buffers. */

typedef struct {
  const rm_plan *pl;
  const char *g;
  char *dx;
  opf_dtype dt;
  int64_t nchunk;
  int64_t pf; /* bytes of a g row to prefetch ahead (short rows), or 0 */
  int avx512;
  int nt; /* stream dx rows: constant pads only, where each dx row is written once */
} pad_bctx;

/* dx row window [i0, i1) (=, or += unless first) the gradient row grow folded back. */
static void pad_fold(const pad_bctx *x, const char *grow, char *drow, int64_t i0, int64_t i1,
                     int first) {
  const rm_dim *d = &x->pl->d[x->pl->nd - 1];
  const size_t es = x->pl->es;
  const int64_t a = d->kind == MAP_PAD ? d->a : 0;
  if (first) shp_move(x->nt, x->avx512, drow + i0 * es, grow + (i0 + a) * es, (size_t)(i1 - i0) * es);
  else shp_add(x->dt, drow + i0 * es, grow + (i0 + a) * es, i1 - i0);
  if (d->kind != MAP_PAD || d->mode == PAD_CONSTANT) return;
  for (int64_t j = 0; j < d->m; j++) {
    if (j == d->a) j = d->a + d->n; /* skip the interior */
    if (j >= d->m) break;
    int64_t i = rm_src(d, j);
    if (i < i0 || i >= i1) continue;
    if (x->dt == OPF_F32) ((float *)drow)[i] += ((const float *)grow)[j];
    else ((double *)drow)[i] += ((const double *)grow)[j];
  }
}

static void pad_gather(const pad_bctx *x, int k, const int64_t *ix, int64_t goff, char *drow,
                       int64_t i0, int64_t i1, int *first) {
  const rm_plan *pl = x->pl;
  if (k == pl->nd - 1) {
    const char *grow = x->g + goff * (int64_t)pl->es;
    /* g is read ascending but with gaps (the dropped pad rows) that stop the hardware
     * prefetcher: (32,64,56,56) with 1-wide constant pads ran 4x slower than edge pads. */
    if (x->pf && *first)
      for (int64_t b = 0; b < x->pf; b += 64) __builtin_prefetch(grow + RM_PF_BYTES + b);
    pad_fold(x, grow, drow, i0, i1, *first);
    *first = 0;
    return;
  }
  const rm_dim *d = &pl->d[k];
  const int64_t i = ix[k];
  pad_gather(x, k + 1, ix, goff + (d->kind == MAP_PAD ? i + d->a : i) * pl->os[k], drow, i0, i1,
             first);
  if (d->kind != MAP_PAD || d->mode == PAD_CONSTANT) return;
  for (int64_t j = 0; j < d->m; j++) {
    if (j == d->a) j = d->a + d->n;
    if (j >= d->m) break;
    if (rm_src(d, j) == i) pad_gather(x, k + 1, ix, goff + j * pl->os[k], drow, i0, i1, first);
  }
}

static void pad_bunits(int64_t lo, int64_t hi, void *p) {
  const pad_bctx *x = p;
  const rm_plan *pl = x->pl;
  const int nd = pl->nd;
  const int64_t n = pl->d[nd - 1].n;
  int64_t ix[OPF_MAX_DIMS], r = lo / x->nchunk, ch = lo % x->nchunk, rest = r;
  for (int k = nd - 2; k >= 0; k--) ix[k] = rest % pl->d[k].n, rest /= pl->d[k].n;
  for (int64_t u = lo; u < hi; r++, ch = 0) {
    for (; ch < x->nchunk && u < hi; ch++, u++) {
      int64_t i0 = ch * RM_CHUNK, i1 = i0 + RM_CHUNK < n ? i0 + RM_CHUNK : n;
      int first = 1;
      pad_gather(x, 0, ix, 0, x->dx + r * n * (int64_t)pl->es, i0, i1, &first);
    }
    for (int k = nd - 2; k >= 0; k--) { /* next dx row */
      if (++ix[k] < pl->d[k].n) break;
      ix[k] = 0;
    }
  }
  if (x->nt) shp_sfence();
}

/* ---- params and plans of the three operators ---- */
enum { P_FLIP_AXIS = 0 };
enum { P_ROLL_SHIFT = 0, P_ROLL_AXIS = 1 };
enum { P_PAD_WIDTH = 0, P_PAD_MODE = 1, P_PAD_VALUE = 2 };

static void identity_dims(const opf_tensor *x, rm_dim *d) {
  for (int k = 0; k < x->ndim; k++) d[k] = (rm_dim){.kind = MAP_ID, .n = x->shape[k], .m = x->shape[k]};
}

static void flip_dims(const opf_case *c, rm_dim *d) {
  const opf_tensor *x = &c->in[0];
  identity_dims(x, d);
  int ax = c->p[P_FLIP_AXIS] == OPF_AXIS_ALL ? -1 : opf_axis(c->p[P_FLIP_AXIS], x->ndim);
  for (int k = 0; k < x->ndim; k++)
    if (ax < 0 || k == ax) d[k].kind = MAP_FLIP;
}

/* Roll dims: the flattened tensor as one axis when no axis is given. back rolls the other way. */
static int roll_dims(const opf_case *c, rm_dim *d, int back) {
  const opf_tensor *x = &c->in[0];
  const opf_list *sh = &c->list[P_ROLL_SHIFT], *ax = &c->list[P_ROLL_AXIS];
  if (!ax->n) {
    int64_t n = opf_numel(x), s = n ? sh->v[0] % n : 0;
    s = back ? -s : s;
    d[0] = (rm_dim){.kind = MAP_ROLL, .n = n, .m = n, .a = s < 0 ? s + n : s};
    return 1;
  }
  identity_dims(x, d);
  for (int t = 0; t < ax->n; t++) {
    int k = opf_axis((double)ax->v[t], x->ndim);
    int64_t n = x->shape[k], s = n ? (sh->v[sh->n == 1 ? 0 : t] % n) : 0;
    s = back ? -s : s;
    d[k].kind = MAP_ROLL;
    d[k].a = n ? ((d[k].a + s) % n + n) % n : 0; /* a repeated axis adds its shifts */
  }
  return x->ndim;
}

/* pad_width pairs apply to the trailing axes. */
static void pad_dims(const opf_case *c, rm_dim *d) {
  const opf_tensor *x = &c->in[0];
  const opf_list *w = &c->list[P_PAD_WIDTH];
  identity_dims(x, d);
  int np = w->n / 2, first = x->ndim - np;
  for (int t = 0; t < np; t++) {
    rm_dim *e = &d[first + t];
    e->kind = MAP_PAD, e->mode = (int)c->p[P_PAD_MODE], e->a = w->v[2 * t];
    e->m = e->n + w->v[2 * t] + w->v[2 * t + 1];
  }
}

/* ---- infer ---- */
static int flip_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  int rc = shp_need(c, 0, "x=1024x1024 axis=0"), ax;
  if (rc) return rc;
  if (c->p[P_FLIP_AXIS] != OPF_AXIS_ALL && (rc = shp_axis(c, "axis", c->p[P_FLIP_AXIS], x, x->ndim, &ax)))
    return rc;
  opf_set_out(c, 0, c->dtype, x->ndim, x->shape);
  return OPF_OK;
}

static int roll_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  const opf_list *sh = &c->list[P_ROLL_SHIFT], *ax = &c->list[P_ROLL_AXIS];
  char s[96];
  int rc = shp_need(c, 0, "x=1024x1024 shift=1 axis=0");
  if (rc) return rc;
  if (!sh->n) return opf_case_error(c, OPF_EINVAL, "roll needs at least one shift");
  if (!ax->n && sh->n != 1)
    return opf_case_error(c, OPF_EINVAL, "without axis, roll takes one shift (of the flattened "
                          "tensor), got %d", sh->n);
  if (ax->n && sh->n != 1 && sh->n != ax->n)
    return opf_case_error(c, OPF_EINVAL, "shift has %d values but axis has %d: give one shift "
                          "per axis, or one for all", sh->n, ax->n);
  for (int t = 0; t < ax->n; t++)
    if (opf_axis((double)ax->v[t], x->ndim) < 0)
      return opf_case_error(c, OPF_EINVAL, "axis %lld is out of range for x=%s (axes %d..%d)",
                            (long long)ax->v[t], opf_shape_str(x, s, sizeof s), -x->ndim, x->ndim - 1);
  opf_set_out(c, 0, c->dtype, x->ndim, x->shape);
  return OPF_OK;
}

static int pad_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  const opf_list *w = &c->list[P_PAD_WIDTH];
  const int mode = (int)c->p[P_PAD_MODE];
  char s[96];
  int rc = shp_need(c, 0, "x=1024x1024 pad_width=1,1,1,1");
  if (rc) return rc;
  if (w->n % 2 || !w->n)
    return opf_case_error(c, OPF_EINVAL, "pad_width needs (before, after) pairs for the "
                          "trailing axes, got %d values", w->n);
  if (w->n / 2 > x->ndim)
    return opf_case_error(c, OPF_EINVAL, "pad_width has %d pairs but x=%s has rank %d",
                          w->n / 2, opf_shape_str(x, s, sizeof s), x->ndim);
  rm_dim d[OPF_MAX_DIMS];
  pad_dims(c, d);
  int64_t shape[OPF_MAX_DIMS];
  for (int k = 0; k < x->ndim; k++) {
    const rm_dim *e = &d[k];
    shape[k] = e->m;
    if (e->kind != MAP_PAD || e->m == e->n || mode == PAD_CONSTANT) continue;
    int64_t before = e->a, after = e->m - e->n - e->a;
    if (mode == PAD_EDGE && e->n == 0)
      return opf_case_error(c, OPF_EINVAL, "mode=edge cannot pad axis %d of x=%s: it is empty",
                            k, opf_shape_str(x, s, sizeof s));
    if (mode == PAD_REFLECT && (before >= e->n || after >= e->n))
      return opf_case_error(c, OPF_EINVAL, "mode=reflect needs pads shorter than the axis: axis %d "
                            "of x=%s has %lld, pads %lld,%lld", k, opf_shape_str(x, s, sizeof s),
                            (long long)e->n, (long long)before, (long long)after);
  }
  opf_set_out(c, 0, c->dtype, x->ndim, shape);
  return OPF_OK;
}

/* ---- passes ---- */
static void rm_go(const opf_case *c, int nd, const rm_dim *d, const void *src, void *dst,
                  const void *fill) {
  rm_plan pl;
  rm_plan_make(&pl, nd, d, opf_dtype_size(c->dtype));
  rm_run(&pl, src, dst, fill);
}

static int flip_forward(opf_case *c) {
  rm_dim d[OPF_MAX_DIMS];
  flip_dims(c, d);
  rm_go(c, c->in[0].ndim, d, c->in[0].data, c->out[0].data, NULL);
  return OPF_OK;
}
/* Flipping is its own inverse. */
static int flip_backward(opf_case *c) {
  rm_dim d[OPF_MAX_DIMS];
  flip_dims(c, d);
  rm_go(c, c->in[0].ndim, d, c->gout[0].data, c->gin[0].data, NULL);
  return OPF_OK;
}

static int roll_forward(opf_case *c) {
  rm_dim d[OPF_MAX_DIMS];
  int nd = roll_dims(c, d, 0);
  rm_go(c, nd, d, c->in[0].data, c->out[0].data, NULL);
  return OPF_OK;
}
static int roll_backward(opf_case *c) {
  rm_dim d[OPF_MAX_DIMS];
  int nd = roll_dims(c, d, 1);
  rm_go(c, nd, d, c->gout[0].data, c->gin[0].data, NULL);
  return OPF_OK;
}

static int pad_forward(opf_case *c) {
  rm_dim d[OPF_MAX_DIMS];
  unsigned char v[8];
  pad_dims(c, d);
  shp_scalar(c->dtype, c->p[P_PAD_VALUE], v);
  rm_go(c, c->in[0].ndim, d, c->in[0].data, c->out[0].data, v);
  return OPF_OK;
}

/* mode=constant: dx is y's gradient without its border, handed back as a strided view of it
 * (no data moves; torch's autograd copies it out). edge and reflect add the border's gradient
 * onto x's edge elements: written. */
static int pad_grad_view(const opf_case *c, int i, opf_view *v) {
  if ((int)c->p[P_PAD_MODE] != PAD_CONSTANT) return 0;
  const opf_tensor *x = &c->in[i], *y = &c->out[0];
  const opf_list *w = &c->list[P_PAD_WIDTH];
  const int first = x->ndim - w->n / 2;
  if (v) {
    memset(v, 0, sizeof *v);
    v->of = 1;
    shp_strides(y->ndim, y->shape, v->strides);
    for (int k = first; k < x->ndim; k++) v->offset += w->v[2 * (k - first)] * v->strides[k];
  }
  return 1;
}

static int pad_backward(opf_case *c) {
  if (opf_grad_is_view(c, 0)) return OPF_OK;
  rm_dim d[OPF_MAX_DIMS];
  rm_plan pl;
  pad_dims(c, d);
  rm_plan_make(&pl, c->in[0].ndim, d, opf_dtype_size(c->dtype));
  const int64_t n = pl.d[pl.nd - 1].n, rows = opf_numel(&c->in[0]) / (n ? n : 1);
  if (!n || !rows) return OPF_OK;
  const int64_t gm = pl.d[pl.nd - 1].m * (int64_t)pl.es;
  pad_bctx x = {&pl, c->gout[0].data, c->gin[0].data, c->dtype, (n + RM_CHUNK - 1) / RM_CHUNK,
                gm < 4096 ? gm : 0, shp_have_avx512(), 0};
  x.nt = (int)c->p[P_PAD_MODE] == PAD_CONSTANT &&
         shp_streams((double)(c->in[0].nbytes + c->out[0].nbytes));
  int64_t units = rows * x.nchunk;
  opf_parallel_range(units, opf_numel(&c->out[0]) >= OPF_PAR_MIN ? 2 : units + 1, pad_bunits, &x);
  return OPF_OK;
}

/* ---- references: every output element by its multi-index, straight from the definitions ---- */
/* x's flat index of y's element yi, when each axis k maps on its own (source index or -1). */
typedef int64_t (*ref_map_fn)(const opf_case *c, int k, int64_t j);
static int64_t ref_flat(const opf_case *c, const int64_t *yi, ref_map_fn map) {
  int64_t f = 0;
  for (int k = 0; k < c->in[0].ndim; k++) {
    int64_t i = map(c, k, yi[k]);
    if (i < 0) return -1;
    f += i * c->in[0].strides[k];
  }
  return f;
}

static int64_t flip_ref_map(const opf_case *c, int k, int64_t j) {
  int ax = c->p[P_FLIP_AXIS] == OPF_AXIS_ALL ? -1 : opf_axis(c->p[P_FLIP_AXIS], c->in[0].ndim);
  return ax < 0 || ax == k ? c->in[0].shape[k] - 1 - j : j;
}
static int64_t flip_src(const opf_case *c, const int64_t *yi) { return ref_flat(c, yi, flip_ref_map); }
static int flip_reference(opf_case *c) {
  shp_ref_gather(c, flip_src, NULL);
  return OPF_OK;
}

static int64_t roll_ref_map(const opf_case *c, int k, int64_t j) {
  const opf_list *sh = &c->list[P_ROLL_SHIFT], *ax = &c->list[P_ROLL_AXIS];
  int64_t n = c->in[0].shape[k];
  for (int t = 0; t < ax->n; t++)
    if (opf_axis((double)ax->v[t], c->in[0].ndim) == k)
      j = ((j - sh->v[sh->n == 1 ? 0 : t]) % n + n) % n;
  return j;
}
/* Without axes the flattened tensor rolls: y's flat index o reads x at (o - shift) mod n. */
static int64_t roll_src(const opf_case *c, const int64_t *yi) {
  if (c->list[P_ROLL_AXIS].n) return ref_flat(c, yi, roll_ref_map);
  const opf_tensor *y = &c->out[0];
  int64_t o = 0, n = opf_numel(y), s = c->list[P_ROLL_SHIFT].v[0];
  for (int k = 0; k < y->ndim; k++) o = o * y->shape[k] + yi[k];
  return ((o - s) % n + n) % n;
}
static int roll_reference(opf_case *c) {
  shp_ref_gather(c, roll_src, NULL);
  return OPF_OK;
}

static int64_t pad_ref_map(const opf_case *c, int k, int64_t j) {
  const opf_list *w = &c->list[P_PAD_WIDTH];
  int first = c->in[0].ndim - w->n / 2;
  if (k < first) return j;
  int64_t n = c->in[0].shape[k], s = j - w->v[2 * (k - first)];
  switch ((int)c->p[P_PAD_MODE]) {
  case PAD_CONSTANT: return s >= 0 && s < n ? s : -1;
  case PAD_EDGE: return s < 0 ? 0 : s >= n ? n - 1 : s;
  default: /* reflect about the end elements, without repeating them */
    while (s < 0 || s >= n) s = s < 0 ? -s : 2 * (n - 1) - s;
    return s;
  }
}
static int64_t pad_src(const opf_case *c, const int64_t *yi) { return ref_flat(c, yi, pad_ref_map); }
static int pad_reference(opf_case *c) {
  unsigned char v[8];
  shp_scalar(c->dtype, c->p[P_PAD_VALUE], v);
  shp_ref_gather(c, pad_src, v);
  return OPF_OK;
}

/* ---- models ---- */
/* flip and roll read and write the tensor once per pass. */
static double same_bytes(const opf_case *c, opf_pass p) {
  double n = (double)opf_numel(&c->in[0]);
  return shp_move_bytes(c, p, n, n);
}
/* pad: forward reads x and writes y; backward reads g (y-sized) and writes dx, adding each
 * replicated border element of g once (edge/reflect; constant pads are dropped). */
static double pad_bytes(const opf_case *c, opf_pass p) {
  double b = ((double)opf_numel(&c->in[0]) + (double)opf_numel(&c->out[0])) *
             (double)opf_dtype_size(c->dtype);
  return opf_pass_sum(p, b, opf_case_grad_view(c, 0, NULL) ? 0 : b); /* a view moves nothing */
}
static double pad_flops(const opf_case *c, opf_pass p) {
  double adds = (int)c->p[P_PAD_MODE] == PAD_CONSTANT
                    ? 0 : (double)(opf_numel(&c->out[0]) - opf_numel(&c->in[0]));
  return opf_pass_sum(p, 0, adds);
}

#define RM_X {.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1, \
              .help = "input tensor"}

OPPERF_OP(flip) = {
    .abi = OPF_OP_ABI,
    .name = "flip",
    .category = "shape",
    .summary = "reverse the order of elements along an axis (or all axes)",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {RM_X},
    .n_out = 1,
    .out = {"y"},
    .n_params = 1,
    .params = {{.name = "axis", .type = OPF_P_AXIS, .def = 0, .min = -OPF_MAX_DIMS,
                .max = OPF_MAX_DIMS - 1, .help = "axis to reverse (negative from the end), or all"}},
    .shapes = {{"standard", "x=1024x1024 axis=0"},
               {"standard", "x=1024x1024 axis=1"},
               {"standard", "x=32x64x56x56 axis=3"},
               {"skewed", "x=10000x10 axis=1"},
               {"skewed", "x=10x10000 axis=0"},
               {"skewed", "x=32x3x256x256 axis=2"},
               {"small", "x=16x16"},
               {"small", "x=16x16 axis=1"},
               {"small", "x=1x64 axis=-1"},
               {"small", "x=37x3 axis=all"},
               {"small", "x=2x3x4x5 axis=2"},
               {"small", "x=2x1x3 axis=1"},
               {"small", "x=7"},
               {"test", "x=301x517 axis=1"},
               {"test", "x=3x67x45x37 axis=all"},
               {"test", "x=2x40001 axis=1"},
               {"large", "x=8192x8192 axis=1"},
               {"huge", "x=46341x46341 axis=1"}},
    .infer = flip_infer,
    .forward = flip_forward,
    .backward = flip_backward,
    .reference = flip_reference,
    .flops = lin_move_flops,
    .bytes = same_bytes,
};

OPPERF_OP(roll) = {
    .abi = OPF_OP_ABI,
    .name = "roll",
    .category = "shape",
    .summary = "rotate elements along axes by shifts (flattened when no axis)",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {RM_X},
    .n_out = 1,
    .out = {"y"},
    .n_params = 2,
    .params = {{.name = "shift", .type = OPF_P_LIST, .defs = "1", .min = -1e15, .max = 1e15,
                .help = "shift per axis (one value: for every axis); y[i + shift] = x[i]"},
               {.name = "axis", .type = OPF_P_LIST, .defs = "none", .min = -OPF_MAX_DIMS,
                .max = OPF_MAX_DIMS - 1, .help = "axes to roll; none: the flattened tensor"}},
    .shapes = {{"standard", "x=1024x1024 shift=100 axis=0"},
               {"standard", "x=1024x1024 shift=100 axis=1"},
               {"standard", "x=32x64x56x56 shift=3,5 axis=2,3"},
               {"skewed", "x=10000x10 shift=3 axis=1"},
               {"skewed", "x=10x10000 shift=3 axis=0"},
               {"skewed", "x=32x3x256x256 shift=7"},
               {"small", "x=16x16 shift=3 axis=0"},
               {"small", "x=16x16 shift=-5 axis=1"},
               {"small", "x=1x64 shift=70 axis=1"},
               {"small", "x=37x3 shift=2"},
               {"small", "x=2x3x4x5 shift=1,-2,7 axis=0,2,-1"},
               {"small", "x=4x5 shift=2 axis=1,1"},
               {"test", "x=301x517 shift=123,-45 axis=0,1"},
               {"test", "x=3x40001 shift=-30001 axis=1"},
               {"test", "x=7x9x11x13 shift=1000"},
               {"large", "x=8192x8192 shift=1000 axis=1"},
               {"huge", "x=46341x46341 shift=1000 axis=1"}},
    .infer = roll_infer,
    .forward = roll_forward,
    .backward = roll_backward,
    .reference = roll_reference,
    .flops = lin_move_flops,
    .bytes = same_bytes,
};

OPPERF_OP(pad) = {
    .abi = OPF_OP_ABI,
    .name = "pad",
    .category = "shape",
    .summary = "pad the trailing axes with a constant, the edge values, or a reflection",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {RM_X},
    .n_out = 1,
    .out = {"y"},
    .n_params = 3,
    .params = {{.name = "pad_width", .type = OPF_P_LIST, .defs = "1,1", .min = 0, .max = 1e9,
                .help = "before,after pairs for the trailing axes (first pair: the first of "
                        "them), e.g. 1,1,2,2 pads the last two axes"},
               {.name = "mode", .type = OPF_P_ENUM, .def = PAD_CONSTANT,
                .choices = "constant|edge|reflect",
                .help = "constant: value; edge: repeat the end element; reflect: mirror about it"},
               {.name = "value", .type = OPF_P_FLOAT, .def = 0, .min = -1e9, .max = 1e9,
                .help = "fill value of mode=constant"}},
    .shapes = {{"standard", "x=1024x1024 pad_width=1,1,1,1"},
               {"standard", "x=32x64x56x56 pad_width=1,1,1,1"},
               {"standard", "x=32x64x56x56 pad_width=2,2,2,2 mode=reflect"},
               {"standard", "x=32x64x56x56 pad_width=1,1,1,1 mode=edge"},
               {"skewed", "x=10000x10 pad_width=0,0,3,3 mode=edge"},
               {"skewed", "x=10x10000 pad_width=3,3,0,0"},
               {"skewed", "x=32x3x256x256 pad_width=3,3,3,3 mode=reflect"},
               {"small", "x=16x16 pad_width=1,2,3,4"},
               {"small", "x=16x16 pad_width=2,1,1,3 mode=edge"},
               {"small", "x=16x16 pad_width=2,3,3,1 mode=reflect"},
               {"small", "x=1x64 pad_width=3,2 mode=edge"},
               {"small", "x=37x3 pad_width=5,0,2,1 mode=reflect value=2"},
               {"small", "x=2x3x4x5 pad_width=1,0,2,2,1,1 mode=edge value=-1"},
               {"small", "x=3x4x5 pad_width=1,1,2,2 value=7"},
               {"small", "x=3x1x2 pad_width=0,2,4,3 mode=edge"},
               {"test", "x=301x517 pad_width=3,4,5,6 mode=reflect"},
               {"test", "x=5x7x45x37 pad_width=2,2 mode=edge"},
               {"test", "x=2x30001 pad_width=1,2,17,3 value=1.5"},
               {"large", "x=8192x8192 pad_width=1,1,1,1"},
               {"huge", "x=46341x46341 pad_width=1,1,1,1"}},
    .infer = pad_infer,
    .forward = pad_forward,
    .backward = pad_backward,
    .grad_view = pad_grad_view,
    .reference = pad_reference,
    .flops = pad_flops,
    .bytes = pad_bytes,
};
