/* broadcast.c: broadcast_to, tile and repeat: outputs that read the input through a strided
 * view with zero strides on the replicated axes. Forward writes the view out (row copies,
 * fills, replicated short rows or per-element expansion as innermost moves, rows in
 * parallel); backward sums the gradient over the zero-stride axes, each thread owning a
 * slice of dx (or, when dx is too small to share out, a partial sum combined at the end). */
#include "shape/shape.h"

#define BC_MAXV (2 * OPF_MAX_DIMS) /* a tile view interleaves reps and input axes */
#define BC_BLOCK 16384 /* output elements a work unit covers (64 KiB of float32: in L2) */

/* ---- the view ---- */
typedef struct {
  int nd;
  int64_t D[BC_MAXV];  /* output extents */
  int64_t s[BC_MAXV];  /* input (and dx) strides in elements, 0 on replicated axes */
  int64_t os[BC_MAXV]; /* output (and g) strides */
  int leaf;            /* first axis of the innermost move: nd-1, or nd-2 for an expansion */
  int expand;          /* leaf axes (n, stride 1)(r, stride 0): each element r times, r < 16 */
  int p;               /* work units: an index over axes [0, p) and a piece of axis p */
  int64_t q, npieces;  /* piece length along axis p, pieces per index */
  size_t es;
} bc_view;

/* Units of about BC_BLOCK output elements: the trailing axes whose block fits stay whole,
 * and the axis above them (or the leaf itself, when even it is longer) is cut in pieces. */
static void bc_blocks(bc_view *v) {
  const int64_t per = v->expand ? v->D[v->nd - 1] : 1; /* output elements per leaf step */
  int64_t blk = per;
  int b = v->leaf + 1;
  while (b > 0 && blk * v->D[b - 1] <= BC_BLOCK) blk *= v->D[--b];
  v->p = b > 0 ? b - 1 : 0;
  v->q = b > 0 ? BC_BLOCK / blk : v->D[0];
  if (v->q < 1) v->q = 1;
  v->npieces = v->D[v->p] ? (v->D[v->p] + v->q - 1) / v->q : 0;
}

/* From unmerged (extent, stride) pairs: drop unit axes and merge neighbours whose strides
 * chain (zero with zero too). */
static void bc_view_make(bc_view *v, int n, const int64_t *D, const int64_t *s, size_t es) {
  memset(v, 0, sizeof *v);
  v->es = es;
  for (int k = 0; k < n; k++) {
    if (D[k] == 1) continue;
    if (v->nd && v->s[v->nd - 1] == s[k] * D[k]) {
      v->D[v->nd - 1] *= D[k], v->s[v->nd - 1] = s[k];
      continue;
    }
    v->D[v->nd] = D[k], v->s[v->nd] = s[k], v->nd++;
  }
  if (!v->nd) v->D[0] = 1, v->s[0] = 1, v->nd = 1;
  int64_t o = 1;
  for (int k = v->nd - 1; k >= 0; k--) v->os[k] = o, o *= v->D[k];
  /* x is contiguous, so after merging the innermost axis has stride 1 (a run) or 0 (a fill);
   * a short fill after a run is one expansion */
  const int l = v->nd - 1;
  v->expand = l > 0 && !v->s[l] && v->s[l - 1] == 1 && v->D[l] < 16;
  v->leaf = v->expand ? l - 1 : l;
  bc_blocks(v);
}

static int64_t bc_numel(const bc_view *v) {
  int64_t n = 1;
  for (int k = 0; k < v->nd; k++) n *= v->D[k];
  return n;
}

/* ---- forward ---- */
/* out[j*r + k] = in[j]: compile-time r of 2, 3, 4 vectorise as interleaving permutes. */
#define BC_EXPAND(T, sfx)                                                                      \
  __attribute__((always_inline)) static inline void bc_ex_##sfx(                              \
      const T *restrict in, T *restrict out, int64_t n, int64_t r) {                          \
    for (int64_t j = 0; j < n; j++)                                                            \
      for (int64_t k = 0; k < r; k++) out[j * r + k] = in[j];                                  \
  }                                                                                            \
  OPF_VEC static void bc_expand_##sfx(const T *restrict in, T *restrict out, int64_t n,       \
                                      int64_t r) {                                             \
    switch (r) {                                                                               \
    case 2: bc_ex_##sfx(in, out, n, 2); break;                                                 \
    case 3: bc_ex_##sfx(in, out, n, 3); break;                                                 \
    case 4: bc_ex_##sfx(in, out, n, 4); break;                                                 \
    default: bc_ex_##sfx(in, out, n, r);                                                       \
    }                                                                                          \
  }
BC_EXPAND(uint32_t, 4)
BC_EXPAND(uint64_t, 8)

typedef struct {
  const bc_view *v;
  const char *src;
  char *dst;
  int avx512;
  int nt; /* streaming stores, no copies from the output (see bc_streams) */
  int rep; /* short replicated rows from registers (bc_rep_ok): lanes of the pattern below */
  int32_t rep_ix[64]; /* element j of a row written r times: the row's element j % L */
} bc_fctx;

/* Short rows replicated (the last two axes (r, stride 0)(L, stride 1), L elements within one
 * vector, r L within four: tile (10000, 10) by (1, 4)): each row is one load, its copies
 * vpermd/vpermq of it with a fixed pattern, one store a vector; the general path (the row
 * moved, then copied over itself doubling) made three calls of 40-80 bytes a row: 124 us
 * for that tile against NumPy's 73. */
#define BC_REP_MAX 64 /* bytes: L es <= 64, r L es <= 4 * 64 */
static int bc_rep_ok(const bc_view *v) {
  const int l = v->nd - 1;
  return shp_have_avx512() && !v->expand && l >= 1 && v->leaf == l && v->s[l] == 1 &&
         !v->s[l - 1] && (v->es == 4 || v->es == 8) && v->D[l] * (int64_t)v->es <= BC_REP_MAX &&
         v->D[l] * v->D[l - 1] * (int64_t)v->es <= 4 * BC_REP_MAX;
}
#ifdef OPF_X86
/* n copies of the L-element row in at out (n L elements). */
__attribute__((target("avx512f"))) static void bc_rep_rows(const bc_fctx *x, const char *in,
                                                           char *out, int64_t L, int64_t n) {
  const size_t es = x->v->es;
  const int64_t tot = n * L * (int64_t)es; /* bytes */
  const __m512i row =
      _mm512_maskz_loadu_epi32((__mmask16)((1u << (L * (int64_t)es / 4)) - 1), in);
  for (int64_t b = 0, k = 0; b < tot; b += 64, k++) {
    const __m512i ix = _mm512_loadu_si512(x->rep_ix + 16 * k);
    const __m512i y =
        es == 4 ? _mm512_permutexvar_epi32(ix, row) : _mm512_permutexvar_epi64(ix, row);
    if (tot - b >= 64) _mm512_storeu_si512(out + b, y);
    else _mm512_mask_storeu_epi32(out + b, (__mmask16)((1u << ((tot - b) / 4)) - 1), y);
  }
}
#else
static void bc_rep_rows(const bc_fctx *x, const char *in, char *out, int64_t L, int64_t n) {
  (void)x, (void)in, (void)out, (void)L, (void)n; /* bc_rep_ok is 0 here */
}
#endif

/* Write indices [i0, i1) of axis k (the leaf: its elements) and everything below. A
 * replicated axis writes its first slice and copies it over the others, doubling (the slice
 * is hot in cache, and the copies grow long): a (28,28) plane tiled 2x2 is one pass of row
 * expansions and a few block copies, not 112 short moves. */
static inline void bc_leaf_fwd(const bc_fctx *x, int64_t so, int64_t oo, int64_t i0, int64_t i1) {
  const bc_view *v = x->v;
  const int64_t es = (int64_t)v->es;
  const char *in = x->src + so * es;
  char *out = x->dst + oo * es;
  if (v->expand) {
    const int64_t r = v->D[v->nd - 1];
    if (es == 4) bc_expand_4((const uint32_t *)in + i0, (uint32_t *)out + i0 * r, i1 - i0, r);
    else bc_expand_8((const uint64_t *)in + i0, (uint64_t *)out + i0 * r, i1 - i0, r);
  } else if (!v->s[v->leaf]) {
    if (x->nt) shp_fill_stream(out + i0 * es, in, v->es, i1 - i0);
    else shp_fill(out + i0 * es, in, v->es, i1 - i0);
  } else if (x->nt) {
    shp_stream_avx512(out + i0 * es, in + i0 * es, (size_t)((i1 - i0) * es));
  } else {
    shp_run(x->avx512, out + i0 * es, in + i0 * es, (size_t)((i1 - i0) * es));
  }
}

/* Copy the n-slice block at first (slices of `slice` elements) over the next slices,
 * doubling the copied length each time. */
static inline void bc_dup(const bc_fctx *x, char *first, int64_t n, int64_t slice) {
  const int64_t sb = slice * (int64_t)x->v->es;
  for (int64_t done = 1; done < n;) {
    int64_t c = done < n - done ? done : n - done;
    shp_run(x->avx512, first + done * sb, first, (size_t)(c * sb));
    done += c;
  }
}

/* Axis k = leaf - 1, indices [i0, i1): leaf moves in a plain loop (rows of 28 in a 4-D tile
 * are too short to pay a call each). */
static inline void bc_above_fwd(const bc_fctx *x, int k, int64_t so, int64_t oo, int64_t i0,
                                int64_t i1) {
  const bc_view *v = x->v;
  if (x->rep && !x->nt) {
    const int64_t es = (int64_t)v->es;
    bc_rep_rows(x, x->src + so * es, x->dst + (oo + i0 * v->os[k]) * es, v->D[v->leaf], i1 - i0);
    return;
  }
  if (!v->s[k] && !x->nt) {
    bc_leaf_fwd(x, so, oo + i0 * v->os[k], 0, v->D[v->leaf]);
    bc_dup(x, x->dst + (oo + i0 * v->os[k]) * (int64_t)v->es, i1 - i0, v->os[k]);
    return;
  }
  for (int64_t i = i0; i < i1; i++) bc_leaf_fwd(x, so + i * v->s[k], oo + i * v->os[k], 0, v->D[v->leaf]);
}

/* Write indices [i0, i1) of axis k (the leaf: its elements) and everything below. A
 * replicated axis writes its first slice and copies it over the others, doubling (the slice
 * is hot in cache, and the copies grow long): a (28,28) plane tiled 2x2 is one pass of row
 * expansions and a few block copies, not 112 short moves. */
static void bc_gen(const bc_fctx *x, int k, int64_t so, int64_t oo, int64_t i0, int64_t i1) {
  const bc_view *v = x->v;
  if (k == v->leaf) {
    bc_leaf_fwd(x, so, oo, i0, i1);
    return;
  }
  if (k == v->leaf - 1) {
    bc_above_fwd(x, k, so, oo, i0, i1);
    return;
  }
  const int64_t sub = v->D[k + 1];
  const int last = k + 1 == v->leaf - 1;
  if (!v->s[k] && !x->nt) {
    if (last) bc_above_fwd(x, k + 1, so, oo + i0 * v->os[k], 0, sub);
    else bc_gen(x, k + 1, so, oo + i0 * v->os[k], 0, sub);
    bc_dup(x, x->dst + (oo + i0 * v->os[k]) * (int64_t)v->es, i1 - i0, v->os[k]);
    return;
  }
  for (int64_t i = i0; i < i1; i++) {
    if (last) bc_above_fwd(x, k + 1, so + i * v->s[k], oo + i * v->os[k], 0, sub);
    else bc_gen(x, k + 1, so + i * v->s[k], oo + i * v->os[k], 0, sub);
  }
}

#ifdef OPF_X86
__attribute__((target("avx512f"))) static void bc_sfence(void) { _mm_sfence(); }
#else
static void bc_sfence(void) { shp_sfence(); }
#endif

/* Units [lo, hi): (index over axes [0, p), piece of axis p). */
static void bc_units(int64_t lo, int64_t hi, void *p) {
  const bc_fctx *x = p;
  const bc_view *v = x->v;
  for (int64_t u = lo; u < hi; u++) {
    int64_t row = u / v->npieces, pc = u % v->npieces, so = 0, oo = 0;
    for (int k = v->p - 1; k >= 0; k--) {
      int64_t i = row % v->D[k];
      row /= v->D[k];
      so += i * v->s[k], oo += i * v->os[k];
    }
    int64_t i0 = pc * v->q, i1 = i0 + v->q < v->D[v->p] ? i0 + v->q : v->D[v->p];
    bc_gen(x, v->p, so, oo, i0, i1);
  }
  if (x->nt) bc_sfence();
}

/* Streaming stores when x and y together reach the last-level cache: y would not stay
 * cached between calls (and would push x out), so skipping the read-for-ownership of every
 * output line is pure gain: 8192x8192 broadcast from a row 15 -> 9 ms, (32,64,28,28) tiled
 * 2x2 2.3 -> 1.6 ms. A y that fits with x stays cached and normal stores win (a (64,1,1)
 * bias broadcast to (32,64,56,56), 25.7 MB: 0.61 ms against 0.88). "Reach" is 7/8 of the
 * LLC: the cache holds other lines too (page tables, the other core's data, the harness), so a
 * 31.5 MB working set does not stay either: (32,3,128,128) tiled 2x2 (6.3 MB in, 25.2 MB out)
 * 1.50 -> 0.64 ms streamed, (32,64,28,28) 2x2 (32.1 MB) 1.87 -> 1.22 ms (1 thread, load 12,
 * medians of 3 interleaved rounds); the 25.7 MB broadcast above stays below. */
#define BC_STREAM_BYTES (SHP_LLC_BYTES / 8 * 7)
static int bc_streams(const bc_view *v, int64_t x_n) {
  return shp_streams_from((double)((bc_numel(v) + x_n) * (int64_t)v->es), (double)BC_STREAM_BYTES);
}

static void bc_forward(const bc_view *v, const void *src, void *dst, int64_t x_n) {
  bc_fctx x = {v, src, dst, shp_have_avx512(), bc_streams(v, x_n), bc_rep_ok(v), {0}};
  if (x.rep) { /* in lanes of the permute: 32-bit or 64-bit elements */
    const int64_t L = v->D[v->nd - 1];
    int64_t q[32];
    int64_t c = 0; /* j % L, without a division per element (built on every call) */
    if (v->es == 4)
      for (int j = 0; j < 64; j++, c = c + 1 == L ? 0 : c + 1) x.rep_ix[j] = (int32_t)c;
    else { /* vpermq: 64-bit indices, qword j of the output row reads qword j % L */
      for (int j = 0; j < 32; j++, c = c + 1 == L ? 0 : c + 1) q[j] = c;
      memcpy(x.rep_ix, q, sizeof q);
    }
  }
  int64_t units = v->npieces;
  for (int k = 0; k < v->p; k++) units *= v->D[k];
  if (units && bc_numel(v))
    opf_parallel_range(units, bc_numel(v) >= OPF_PAR_MIN ? 2 : units + 1, bc_units, &x);
}

/* ---- backward: sums over the zero-stride axes (float32 / float64) ---- */
#define BC_SUMS(T, sfx)                                                                        \
  /* 64 running sums: four float32 vector accumulators without reassociating flags (one    \
   * was bound by the add latency: (32,3,256,256) summed to 3 values at 61 GB/s) */          \
  OPF_VEC static T bc_sum_##sfx(const T *restrict s, int64_t n) {                             \
    T acc[64] = {0};                                                                           \
    int64_t i = 0;                                                                             \
    for (; i + 64 <= n; i += 64)                                                               \
      for (int k = 0; k < 64; k++) acc[k] += s[i + k];                                         \
    T t = 0;                                                                                   \
    for (; i < n; i++) t += s[i];                                                              \
    for (int k = 0; k < 64; k++) t += acc[k];                                                  \
    return t;                                                                                  \
  }                                                                                            \
  __attribute__((always_inline)) static inline void bc_co_##sfx(                              \
      T *restrict d, const T *restrict s, int64_t n, int64_t r, int first) {                  \
    for (int64_t j = 0; j < n; j++) {                                                          \
      T t = first ? 0 : d[j];                                                                  \
      for (int64_t k = 0; k < r; k++) t += s[j * r + k];                                       \
      d[j] = t;                                                                                \
    }                                                                                          \
  }                                                                                            \
  /* d[j] (=, or += unless first) the sum of s[j*r .. j*r + r) */                             \
  OPF_VEC static void bc_contract_##sfx(T *restrict d, const T *restrict s, int64_t n,        \
                                        int64_t r, int first) {                                \
    switch (r) {                                                                               \
    case 2: bc_co_##sfx(d, s, n, 2, first); break;                                             \
    case 3: bc_co_##sfx(d, s, n, 3, first); break;                                             \
    case 4: bc_co_##sfx(d, s, n, 4, first); break;                                             \
    default: bc_co_##sfx(d, s, n, r, first);                                                   \
    }                                                                                          \
  }
BC_SUMS(float, f32)
BC_SUMS(double, f64)

typedef struct {
  const bc_view *v;
  const char *g;
  char *dx;
  opf_dtype dt;
  int avx512;
  int nk, nz;                   /* kept and reduced axes above axis p */
  int kk[BC_MAXV], kz[BC_MAXV]; /* which */
  int64_t nkept, nred;          /* products of their extents */
  int64_t npc;                  /* pieces of axis p per unit: 1 when p is replicated (sums) */
} bc_bctx;

static inline void bc_leaf_bwd(const bc_bctx *x, int64_t so, int64_t go, int64_t i0, int64_t i1,
                               int first) {
  const bc_view *v = x->v;
  const int64_t es = (int64_t)v->es;
  char *d = x->dx + so * es;
  const char *g = x->g + go * es;
  const int f32 = x->dt == OPF_F32;
  if (v->expand) {
    const int64_t r = v->D[v->nd - 1];
    if (f32) bc_contract_f32((float *)d + i0, (const float *)g + i0 * r, i1 - i0, r, first);
    else bc_contract_f64((double *)d + i0, (const double *)g + i0 * r, i1 - i0, r, first);
  } else if (!v->s[v->leaf]) {
    double t = f32 ? bc_sum_f32((const float *)g + i0, i1 - i0)
                   : bc_sum_f64((const double *)g + i0, i1 - i0);
    if (f32) *(float *)d = first ? (float)t : *(float *)d + (float)t;
    else *(double *)d = first ? t : *(double *)d + t;
  } else if (first) {
    shp_run(x->avx512, d + i0 * es, g + i0 * es, (size_t)((i1 - i0) * es));
  } else {
    shp_add(x->dt, d + i0 * es, g + i0 * es, i1 - i0);
  }
}

/* Axis k = leaf - 1: leaf folds in a plain loop. A replicated axis k is always whole here
 * (i0 = 0), so its index 0 comes first. */
static inline void bc_above_bwd(const bc_bctx *x, int k, int64_t so, int64_t go, int64_t i0,
                                int64_t i1, int first) {
  const bc_view *v = x->v;
  for (int64_t i = i0; i < i1; i++)
    bc_leaf_bwd(x, so + i * v->s[k], go + i * v->os[k], 0, v->D[v->leaf], first && (v->s[k] || !i));
}

/* dx below indices [i0, i1) of axis k (=, or += unless first) g folded over the zero
 * strides. */
static void bc_gacc(const bc_bctx *x, int k, int64_t so, int64_t go, int64_t i0, int64_t i1,
                    int first) {
  const bc_view *v = x->v;
  if (k == v->leaf) {
    bc_leaf_bwd(x, so, go, i0, i1, first);
    return;
  }
  if (k == v->leaf - 1) {
    bc_above_bwd(x, k, so, go, i0, i1, first);
    return;
  }
  const int64_t sub = v->D[k + 1];
  for (int64_t i = i0; i < i1; i++) {
    int f = first && (v->s[k] || !i);
    if (k + 1 == v->leaf - 1) bc_above_bwd(x, k + 1, so + i * v->s[k], go + i * v->os[k], 0, sub, f);
    else bc_gacc(x, k + 1, so + i * v->s[k], go + i * v->os[k], 0, sub, f);
  }
}

/* Units [lo, hi): (kept index above axis p, piece of p); each sums over every reduced index
 * above p too, so a unit owns its dx elements and needs no atomics. */
static void bc_bunits(int64_t lo, int64_t hi, void *p) {
  const bc_bctx *x = p;
  const bc_view *v = x->v;
  for (int64_t u = lo; u < hi; u++) {
    int64_t row = u / x->npc, pc = u % x->npc, so = 0, go = 0;
    for (int t = x->nk - 1; t >= 0; t--) {
      int k = x->kk[t];
      int64_t i = row % v->D[k];
      row /= v->D[k];
      so += i * v->s[k], go += i * v->os[k];
    }
    const int64_t len = v->D[v->p], q = x->npc > 1 ? v->q : len;
    int64_t i0 = pc * q, i1 = i0 + q < len ? i0 + q : len;
    int64_t z[BC_MAXV] = {0}, zo = 0;
    for (int64_t r = 0; r < x->nred; r++) {
      bc_gacc(x, v->p, so, go + zo, i0, i1, r == 0);
      for (int t = x->nz - 1; t >= 0; t--) { /* odometer over the reduced axes */
        int k = x->kz[t];
        zo += v->os[k];
        if (++z[t] < v->D[k]) break;
        zo -= z[t] * v->os[k], z[t] = 0;
      }
    }
  }
}

static void bc_bplan(bc_bctx *x, const bc_view *v) {
  x->v = v;
  x->nk = x->nz = 0;
  x->nkept = x->nred = 1;
  for (int k = 0; k < v->p; k++) {
    if (v->s[k]) x->kk[x->nk++] = k, x->nkept *= v->D[k];
    else x->kz[x->nz++] = k, x->nred *= v->D[k];
  }
  /* pieces of a replicated axis would add into the same dx elements from two units */
  x->npc = v->s[v->p] ? v->npieces : 1;
}

/* When dx offers fewer units than threads, threads split a replicated axis instead, each
 * summing into its own dx-sized buffer: the outermost replicated axis at or above p.
 * Returns that axis, or -1 when the plain split is used. */
static int bc_split_axis(const bc_view *v, int nt) {
  bc_bctx x;
  bc_bplan(&x, v);
  if (nt < 2 || bc_numel(v) < OPF_PAR_MIN || x.nkept * x.npc >= nt) return -1;
  if (x.nz) return x.kz[0];
  return v->s[v->p] ? -1 : v->p;
}

typedef struct {
  const bc_view *v;
  const char *g;
  char *dx, *ws;
  size_t dx_bytes;
  opf_dtype dt;
  int axis;
} bc_pctx;

/* Thread t sums slice [lo, hi) of the split axis into dx (t = 0) or its slice of ws. */
static void bc_partial(const bc_pctx *y, int t, int64_t lo, int64_t hi) {
  bc_view sub = *y->v;
  sub.D[y->axis] = hi - lo;
  bc_blocks(&sub);
  bc_bctx x = {.g = y->g + lo * y->v->os[y->axis] * (int64_t)sub.es,
               .dx = t ? y->ws + (size_t)(t - 1) * y->dx_bytes : y->dx, .dt = y->dt,
               .avx512 = shp_have_avx512()};
  bc_bplan(&x, &sub);
  bc_bunits(0, x.nkept * x.npc, &x);
}

static void bc_backward(const bc_view *v, const void *g, void *dx, int64_t dx_n, opf_dtype dt,
                        void *ws, size_t ws_bytes) {
  const int nt = omp_get_max_threads();
  const size_t dx_bytes = (size_t)dx_n * v->es;
  if (!bc_numel(v)) { /* nothing replicated into an empty output: the gradient is zero */
    memset(dx, 0, dx_bytes);
    return;
  }
  const int axis = bc_split_axis(v, nt);
  if (axis >= 0 && ws && ws_bytes >= (size_t)(nt - 1) * dx_bytes) {
    bc_pctx y = {v, g, dx, ws, dx_bytes, dt, axis};
    const int64_t len = v->D[axis];
    int used = 1;
#pragma omp parallel num_threads(nt)
    {
      int T = omp_get_num_threads(), t = omp_get_thread_num();
      int64_t chunk = (len + T - 1) / T, lo = t * chunk, hi = lo + chunk < len ? lo + chunk : len;
      if (lo < hi) bc_partial(&y, t, lo, hi);
#pragma omp master
      used = (int)((len + chunk - 1) / chunk);
    }
    for (int t = 1; t < used; t++) {
      const char *part = (const char *)ws + (size_t)(t - 1) * dx_bytes;
      shp_add(dt, dx, part, dx_n);
    }
    return;
  }
  bc_bctx x = {.g = g, .dx = dx, .dt = dt, .avx512 = shp_have_avx512()};
  bc_bplan(&x, v);
  int64_t units = x.nkept * x.npc;
  opf_parallel_range(units, bc_numel(v) >= OPF_PAR_MIN ? 2 : units + 1, bc_bunits, &x);
}

/* Workspace for the partial sums of a view at the current thread count. */
static size_t bc_ws_bytes(const bc_view *v, int64_t dx_n) {
  int nt = omp_get_max_threads();
  return bc_split_axis(v, nt) >= 0 ? (size_t)(nt - 1) * (size_t)dx_n * v->es : 0;
}

/* ---- the three views ---- */
enum { P_BT_SHAPE = 0 };
enum { P_TILE_REPS = 0 };
enum { P_REP_REPEATS = 0, P_REP_AXIS = 1 };

/* broadcast_to: target axes aligned to x's from the right; x's unit (or missing) axes get
 * stride 0. A -1 in the target keeps x's extent. */
static void bt_view(const opf_case *c, bc_view *v, int64_t *shape) {
  const opf_tensor *x = &c->in[0];
  const opf_list *t = &c->list[P_BT_SHAPE];
  int64_t D[BC_MAXV], s[BC_MAXV], st[OPF_MAX_DIMS];
  shp_strides(x->ndim, x->shape, st);
  for (int k = 0; k < t->n; k++) {
    int kx = k - (t->n - x->ndim);
    int64_t xd = kx >= 0 ? x->shape[kx] : 1;
    D[k] = t->v[k] == -1 ? xd : t->v[k];
    s[k] = kx >= 0 && xd != 1 ? st[kx] : 0;
    if (shape) shape[k] = D[k];
  }
  bc_view_make(v, t->n, D, s, opf_dtype_size(c->dtype));
}

/* tile: x and reps padded with leading 1s to one rank; per axis (rep, stride 0) then
 * (x's extent, x's stride). */
static int tile_view(const opf_case *c, bc_view *v, int64_t *shape) {
  const opf_tensor *x = &c->in[0];
  const opf_list *r = &c->list[P_TILE_REPS];
  int m = r->n > x->ndim ? r->n : x->ndim;
  int64_t D[BC_MAXV], s[BC_MAXV], st[OPF_MAX_DIMS];
  shp_strides(x->ndim, x->shape, st);
  for (int k = 0; k < m; k++) {
    int kx = k - (m - x->ndim), kr = k - (m - r->n);
    int64_t n = kx >= 0 ? x->shape[kx] : 1, rep = kr >= 0 ? r->v[kr] : 1;
    D[2 * k] = rep, s[2 * k] = 0;
    D[2 * k + 1] = n, s[2 * k + 1] = kx >= 0 ? st[kx] : 0;
    if (shape) shape[k] = rep * n;
  }
  bc_view_make(v, 2 * m, D, s, opf_dtype_size(c->dtype));
  return m;
}

/* repeat: (outer, n, repeats, inner) with the repeats axis of stride 0; axis=all repeats
 * the flattened tensor's elements. */
static int rep_view(const opf_case *c, bc_view *v, int64_t *shape) {
  const opf_tensor *x = &c->in[0];
  const int64_t r = (int64_t)c->p[P_REP_REPEATS];
  int64_t D[4], s[4];
  int nd = x->ndim;
  if (c->p[P_REP_AXIS] == OPF_AXIS_ALL) {
    int64_t n = opf_numel(x);
    D[0] = 1, D[1] = n, D[2] = r, D[3] = 1;
    if (shape) shape[0] = n * r;
    nd = 1;
  } else {
    int a = opf_axis(c->p[P_REP_AXIS], x->ndim);
    D[0] = opf_shape_numel(a, x->shape), D[1] = x->shape[a], D[2] = r;
    D[3] = opf_shape_numel(x->ndim - a - 1, x->shape + a + 1);
    for (int k = 0; shape && k < x->ndim; k++) shape[k] = x->shape[k] * (k == a ? r : 1);
  }
  s[3] = 1, s[2] = 0, s[1] = D[3], s[0] = D[1] * D[3];
  bc_view_make(v, 4, D, s, opf_dtype_size(c->dtype));
  return nd;
}

/* ---- infer ---- */
static int bt_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  const opf_list *t = &c->list[P_BT_SHAPE];
  char sx[96];
  int rc = shp_need(c, 0, "x=1x1024 shape=1024x1024");
  if (rc) return rc;
  if (t->n < x->ndim)
    return opf_case_error(c, OPF_EINVAL, "shape has rank %d, below the rank %d of x=%s", t->n,
                          x->ndim, opf_shape_str(x, sx, sizeof sx));
  for (int k = 0; k < t->n; k++) {
    int kx = k - (t->n - x->ndim);
    int64_t xd = kx >= 0 ? x->shape[kx] : 1, want = t->v[k];
    if (want < -1 || (want == -1 && kx < 0))
      return opf_case_error(c, OPF_EINVAL, "shape entry %d is %lld: extents are >= 0 (-1 keeps "
                            "x's extent, for x's axes only)", k, (long long)want);
    if (want != -1 && xd != want && xd != 1)
      return opf_case_error(c, OPF_EINVAL, "x=%s cannot be broadcast to shape entry %d = %lld: "
                            "x's axis %d has %lld, not 1", opf_shape_str(x, sx, sizeof sx), k,
                            (long long)want, kx, (long long)xd);
  }
  bc_view v;
  int64_t shape[OPF_MAX_DIMS];
  bt_view(c, &v, shape);
  opf_set_out(c, 0, c->dtype, t->n, shape);
  c->ws_bytes = bc_ws_bytes(&v, opf_numel(x));
  return OPF_OK;
}

static int tile_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  int rc = shp_need(c, 0, "x=512x512 reps=2,2");
  if (rc) return rc;
  if (!c->list[P_TILE_REPS].n)
    return opf_case_error(c, OPF_EINVAL, "reps needs at least one value (e.g. reps=2,2)");
  bc_view v;
  int64_t shape[OPF_MAX_DIMS];
  int m = tile_view(c, &v, shape); /* reps and x both have at most OPF_MAX_DIMS entries */
  opf_set_out(c, 0, c->dtype, m, shape);
  c->ws_bytes = bc_ws_bytes(&v, opf_numel(x));
  return OPF_OK;
}

static int rep_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  int rc = shp_need(c, 0, "x=1024x512 repeats=2 axis=1"), a;
  if (rc) return rc;
  if (c->p[P_REP_AXIS] != OPF_AXIS_ALL && (rc = shp_axis(c, "axis", c->p[P_REP_AXIS], x, x->ndim, &a)))
    return rc;
  bc_view v;
  int64_t shape[OPF_MAX_DIMS];
  int nd = rep_view(c, &v, shape);
  opf_set_out(c, 0, c->dtype, nd, shape);
  c->ws_bytes = bc_ws_bytes(&v, opf_numel(x));
  return OPF_OK;
}

/* ---- passes ---- */
typedef void (*bc_view_fn)(const opf_case *c, bc_view *v);
static void bt_v(const opf_case *c, bc_view *v) { bt_view(c, v, NULL); }
static void tile_v(const opf_case *c, bc_view *v) { tile_view(c, v, NULL); }
static void rep_v(const opf_case *c, bc_view *v) { rep_view(c, v, NULL); }

static int bc_fwd(opf_case *c, bc_view_fn view) {
  bc_view v;
  view(c, &v);
  bc_forward(&v, c->in[0].data, c->out[0].data, opf_numel(&c->in[0]));
  return OPF_OK;
}
static int bc_bwd(opf_case *c, bc_view_fn view) {
  bc_view v;
  view(c, &v);
  bc_backward(&v, c->gout[0].data, c->gin[0].data, opf_numel(&c->in[0]), c->dtype, c->ws,
              c->ws_bytes);
  return OPF_OK;
}
static int bt_forward(opf_case *c) { return bc_fwd(c, bt_v); }
static int bt_backward(opf_case *c) { return bc_bwd(c, bt_v); }
static int tile_forward(opf_case *c) { return bc_fwd(c, tile_v); }
static int tile_backward(opf_case *c) { return bc_bwd(c, tile_v); }
static int rep_forward(opf_case *c) { return bc_fwd(c, rep_v); }
static int rep_backward(opf_case *c) { return bc_bwd(c, rep_v); }

/* ---- references: each output element's source by the definitions ---- */
/* broadcast_to and tile: x's axes align with y's trailing axes; a unit axis of x reads index
 * 0 (broadcast), a tiled axis reads the index modulo x's extent. */
static int64_t bt_src(const opf_case *c, const int64_t *yi) {
  const opf_tensor *x = &c->in[0];
  int off = c->out[0].ndim - x->ndim;
  int64_t f = 0;
  for (int k = 0; k < x->ndim; k++) f = f * x->shape[k] + (x->shape[k] == 1 ? 0 : yi[off + k]);
  return f;
}
static int64_t tile_src(const opf_case *c, const int64_t *yi) {
  const opf_tensor *x = &c->in[0];
  int off = c->out[0].ndim - x->ndim;
  int64_t f = 0;
  for (int k = 0; k < x->ndim; k++) f = f * x->shape[k] + yi[off + k] % x->shape[k];
  return f;
}
/* repeat: the repeated axis reads index / repeats (flattened: the flat index / repeats). */
static int64_t rep_src(const opf_case *c, const int64_t *yi) {
  const opf_tensor *x = &c->in[0];
  const int64_t r = (int64_t)c->p[P_REP_REPEATS];
  if (c->p[P_REP_AXIS] == OPF_AXIS_ALL) return yi[0] / r;
  int a = opf_axis(c->p[P_REP_AXIS], x->ndim);
  int64_t f = 0;
  for (int k = 0; k < x->ndim; k++) f = f * x->shape[k] + (k == a ? yi[k] / r : yi[k]);
  return f;
}
static int bt_reference(opf_case *c) {
  shp_ref_gather(c, bt_src, NULL);
  return OPF_OK;
}
static int tile_reference(opf_case *c) {
  shp_ref_gather(c, tile_src, NULL);
  return OPF_OK;
}
static int rep_reference(opf_case *c) {
  shp_ref_gather(c, rep_src, NULL);
  return OPF_OK;
}

/* ---- models ---- */
/* Forward reads x and writes y; backward reads g (y-sized) and writes dx. */
static double bc_bytes(const opf_case *c, opf_pass p) {
  return shp_move_bytes(c, p, (double)opf_numel(&c->in[0]), (double)opf_numel(&c->out[0]));
}
/* Backward folds y-sized g into x-sized dx: one add per element beyond the first copy. */
static double bc_flops(const opf_case *c, opf_pass p) {
  double adds = (double)(opf_numel(&c->out[0]) - opf_numel(&c->in[0]));
  return opf_pass_sum(p, 0, adds > 0 ? adds : 0);
}

#define BC_X(h) {.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1, .help = h}

OPPERF_OP(broadcast_to) = {
    .abi = OPF_OP_ABI,
    .name = "broadcast_to",
    .category = "shape",
    .summary = "replicate unit axes (and new leading axes) to a target shape",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {BC_X("tensor whose unit axes are replicated")},
    .n_out = 1,
    .out = {"y"},
    .n_params = 1,
    .params = {{.name = "shape", .type = OPF_P_LIST, .defs = "1024,1024", .min = -1, .max = 1e12,
                .help = "target shape, aligned to x's axes from the right (-1: keep x's extent)"}},
    .shapes = {{"standard", "x=1x1024 shape=1024x1024"},
               {"standard", "x=1024x1 shape=1024x1024"},
               {"standard", "x=64x1x1 shape=32x64x56x56"},
               {"skewed", "x=1x10 shape=10000x10"},
               {"skewed", "x=10x1 shape=10x10000"},
               {"skewed", "x=1x3x1x1 shape=32x3x256x256"},
               {"small", "x=1x16 shape=16x16"},
               {"small", "x=16x1 shape=16x16"},
               {"small", "x=1 shape=37x3"},
               {"small", "x=() shape=4x5"},
               {"small", "x=3x1 shape=2x3x5"},
               {"small", "x=5 shape=3x-1"},
               {"small", "x=2x1x3 shape=2x4x3"},
               {"test", "x=1x517 shape=301x517"},
               {"test", "x=301x1 shape=301x517"},
               {"test", "x=1 shape=70001"},
               {"test", "x=1x1 shape=300x301"},
               {"test", "x=7x1x13 shape=7x4001x13"},
               {"test", "x=1x3x1 shape=5000x3x7"},
               {"large", "x=1x8192 shape=8192x8192"},
               {"huge", "x=1x46341 shape=46341x46341"}},
    .infer = bt_infer,
    .forward = bt_forward,
    .backward = bt_backward,
    .reference = bt_reference,
    .flops = bc_flops,
    .bytes = bc_bytes,
};

OPPERF_OP(tile) = {
    .abi = OPF_OP_ABI,
    .name = "tile",
    .category = "shape",
    .summary = "repeat the whole tensor reps times along each axis",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {BC_X("tensor to tile")},
    .n_out = 1,
    .out = {"y"},
    .n_params = 1,
    .params = {{.name = "reps", .type = OPF_P_LIST, .defs = "2,2", .min = 0, .max = 1e9,
                .help = "repetitions per axis, aligned to x's axes from the right"}},
    .shapes = {{"standard", "x=512x512 reps=2,2"},
               {"standard", "x=32x64x28x28 reps=1,1,2,2"},
               {"skewed", "x=10000x10 reps=1,4"},
               {"skewed", "x=10x10000 reps=4,1"},
               {"skewed", "x=32x3x128x128 reps=1,1,2,2"},
               {"small", "x=16x16 reps=2,3"},
               {"small", "x=1x16 reps=16,1"},
               {"small", "x=37x3 reps=3"},
               {"small", "x=3x4 reps=2,1,2"},
               {"small", "x=2x3x4 reps=2"},
               {"small", "x=5 reps=0"},
               {"test", "x=301x517 reps=2,1"},
               {"test", "x=37x13 reps=50,3"},
               {"test", "x=3x5x7 reps=2,300,2"},
               {"large", "x=4096x4096 reps=2,2"},
               {"huge", "x=23171x23171 reps=2,2"}},
    .infer = tile_infer,
    .forward = tile_forward,
    .backward = tile_backward,
    .reference = tile_reference,
    .flops = bc_flops,
    .bytes = bc_bytes,
};

OPPERF_OP(repeat) = {
    .abi = OPF_OP_ABI,
    .name = "repeat",
    .category = "shape",
    .summary = "repeat each element repeats times along an axis (flattened: axis=all)",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {BC_X("tensor whose elements are repeated")},
    .n_out = 1,
    .out = {"y"},
    .n_params = 2,
    .params = {{.name = "repeats", .type = OPF_P_INT, .def = 2, .min = 0, .max = 1e9,
                .help = "copies of each element"},
               {.name = "axis", .type = OPF_P_AXIS, .def = OPF_AXIS_ALL, .min = -OPF_MAX_DIMS,
                .max = OPF_MAX_DIMS - 1, .help = "axis to repeat along; all: the flattened tensor"}},
    .shapes = {{"standard", "x=1024x512 repeats=2 axis=1"},
               {"standard", "x=512x1024 repeats=2 axis=0"},
               {"standard", "x=32x64x28x28 repeats=2 axis=3"},
               {"skewed", "x=10000x10 repeats=3 axis=1"},
               {"skewed", "x=10x10000 repeats=3 axis=0"},
               {"small", "x=16x16 repeats=2 axis=1"},
               {"small", "x=16x16 repeats=3 axis=0"},
               {"small", "x=37x3 repeats=5"},
               {"small", "x=1x64 repeats=20 axis=1"},
               {"small", "x=2x3x4 repeats=3 axis=-2"},
               {"small", "x=4x5 repeats=0 axis=0"},
               {"test", "x=301x517 repeats=3 axis=1"},
               {"test", "x=3x40001 repeats=2 axis=0"},
               {"test", "x=70001 repeats=17"},
               {"test", "x=5x3001x7 repeats=4 axis=2"},
               {"large", "x=8192x4096 repeats=2 axis=1"},
               {"huge", "x=46341x23171 repeats=2 axis=1"}},
    .infer = rep_infer,
    .forward = rep_forward,
    .backward = rep_backward,
    .reference = rep_reference,
    .flops = bc_flops,
    .bytes = bc_bytes,
};
