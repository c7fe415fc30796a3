/* sort.c: sort and argsort along an axis (or the flattened input), ascending or descending,
 * and sort's backward (the gradient permuted back through the permutation the forward keeps in
 * the workspace). Lines are sorted as order-preserving unsigned keys (sort_common.h): AVX-512
 * networks and quicksort (all lengths for 8-byte dtypes and 4-byte values, up to SRT_VEC64 for
 * key << 32 | index words), LSD radix with skipped constant digits beyond and without AVX-512
 * (argsort of 4-byte dtypes sorts key << 32 | index words, so indices travel free and equal
 * keys stay in index order whatever the sort); lines go to threads whole, each with its own
 * workspace slot. A forward without an input gradient keeps no permutation: values-only
 * sorts of 4-byte keys (the key-only vector quicksort, threaded on long lines; column units
 * transposed in registers, short rows a register each). */
#include "sort/sort_common.h"

/* alg: SORT_NATIVE (the default), SORT_RADIX (values-only lines of 4-byte dtypes by the
 * radix sorts at every length, as they ran before the vector sorts), SORT_PAIRS (sort of a
 * float dtype keeps the permutation even when no backward follows, as before). save: the
 * forward keeps the permutation for the backward (a float dtype with an input gradient). */
enum { SORT_NATIVE, SORT_RADIX, SORT_PAIRS };
typedef struct sort_ctx {
  int desc, arg, save, alg;
} sort_ctx;

/* 1 when the es-byte float at p is +0.0 (all bits clear). */
static inline int srt_zero_bits(const void *p, size_t es) {
  uint64_t u = 0;
  memcpy(&u, p, es);
  return u == 0;
}

/* Values only of a float dtype: a zero's key is +0.0's (srt_keys), so the run of zeros in the
 * sorted line y (all +0.0) takes the zeros of x, signs and all, in index order (what a stable
 * sort gives; their order is free otherwise). */
static void sort_zero_signs(const opf_case *c, const opf_rgeom *g, int64_t l) {
  const size_t es = opf_dtype_size(c->dtype);
  const int64_t n = g->n, base = srt_at(g, l, 0), st = g->inner;
  const char *x = c->in[0].data;
  char *y = c->out[0].data;
  const uint64_t sign = es == 4 ? 0x80000000u : 0x8000000000000000ull;
  int64_t i = 0;
  for (int64_t k = 0; k < n; k++) {
    char *yk = y + (size_t)(base + k * st) * es;
    if (!srt_zero_bits(yk, es)) continue;
    uint64_t u = 0;
    for (;; i++) { /* the next zero of x (as many as y has) */
      memcpy(&u, x + (size_t)(base + i * st) * es, es);
      if ((u & ~sign) == 0) break;
    }
    memcpy(yk, &u, es);
    i++;
  }
}

/* Values only: keys without indices (half the bytes moved), stored back through the inverse
 * key transform. 4-byte dtypes: the key-only vector quicksort at every length (lines longer
 * than SRT_VMT_MIN threaded), the radix sorts without AVX-512 or with SORT_RADIX (long lines
 * then as key << 32 words by the threaded MSD + LSD sort). */
static void sort_values_line(const sort_ctx *s, const opf_case *c, const opf_rgeom *g,
                             int64_t l, void *slot) {
  const opf_dtype dt = c->dtype;
  void *y = c->out[0].data;
  const int64_t n = g->n, base = srt_at(g, l, 0), st = g->inner;
  const int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  int zeros = 0;
  if (!srt_wide(dt)) {
    uint32_t *a = slot, *t = a + n;
    const uint32_t f = s->desc ? 0xffffffffu : 0;
    const int fl = dt == OPF_F32;
    if (st != 1 || !srt_vkeys32((const uint32_t *)c->in[0].data + base, a, n, f, fl))
      srt_keys(c->in[0].data, dt, base, st, n, s->desc, 0, a, NULL);
    const int vec = s->alg != SORT_RADIX && srt_vsort32_mt(a, t, n, nt);
    if (!vec && n > SRT_BIG && nt > 1) { /* key << 32 words, threaded MSD + LSD */
      uint64_t *w = slot, *wt = w + n; /* (the slot holds 4 words of 8 bytes an element) */
      srt_keys(c->in[0].data, dt, base, st, n, s->desc, 1, NULL, w);
      srt_radix64_big(w, wt, n, 32);
      for (int64_t k = 0; k < n; k++) {
        const uint32_t key = (uint32_t)(w[k] >> 32) ^ f;
        zeros |= key == 0x80000000u;
        srt_unkey32(key, y, base + k * st, dt);
      }
    } else {
      if (!vec && n <= SRT_SMALL) srt_ins32(a, n);
      else if (!vec) a = srt_radix32(a, t, n);
      if (st != 1 || !srt_vunkeys32(a, (uint32_t *)y + base, n, f, fl, &zeros))
        for (int64_t k = 0; k < n; k++) {
          const uint32_t key = a[k] ^ f;
          zeros |= key == 0x80000000u;
          srt_unkey32(key, y, base + k * st, dt);
        }
    }
  } else {
    uint64_t *a = slot, *t = a + n;
    srt_keys(c->in[0].data, dt, base, st, n, s->desc, 0, NULL, a);
    a = srt_sort64(a, t, n, 0);
    const uint64_t f = s->desc ? ~(uint64_t)0 : 0;
    for (int64_t k = 0; k < n; k++) {
      zeros |= (a[k] ^ f) == 0x8000000000000000ull;
      srt_unkey64(a[k] ^ f, y, base + k * st, dt);
    }
  }
  if (zeros && opf_dtype_is_float(dt)) sort_zero_signs(c, g, l);
}

/* Pitch of the key lines of a column unit: from 512 keys on an odd number of 64-byte pieces,
 * so the 16 lines' stores of a transposed block land in 16 L1 sets (1024 keys a line put them
 * all 4 KiB apart: one set). The slot has room for 16 pitches + 3 n words (n >= 512). */
static int64_t sort_pitch(int64_t n) { return n < 512 ? n : ((n + 15) / 16 * 16) | 16; }

/* Values only of 4-byte lines along an outer axis (inner > 1): unit u, sg->gw adjacent
 * columns (16, fewer when the units would leave a thread idle; the row's last unit may be
 * narrower) of one outer index, goes from x straight to contiguous lines of keys (16x16
 * register transposes, masked to the unit's width: no group buffer, no strided key loop,
 * which took half the time of 1024x1024 axis=0), is sorted, and goes back to y the same way.
 * The slot holds 16 pitches + n keys (it has 56 n words and more). */
static void sort_cols_unit(const sort_ctx *s, const opf_case *c, const srt_geom *sg, int64_t u,
                           void *slot) {
  const opf_rgeom *g = &sg->g;
  const int64_t gpo = (g->inner + sg->gw - 1) / sg->gw, o = u / gpo, j0 = (u % gpo) * sg->gw, n = g->n;
  const int w = (int)(g->inner - j0 < sg->gw ? g->inner - j0 : sg->gw);
  const int64_t lp = sort_pitch(n);
  uint32_t *k = slot, *t = k + 16 * lp, zeros = 0;
  const uint32_t f = s->desc ? 0xffffffffu : 0;
  const int fl = c->dtype == OPF_F32;
  const int64_t at = o * n * g->inner + j0;
  const int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
  srt_vcols_keys32((const uint32_t *)c->in[0].data + at, g->inner, n, w, k, lp, f, fl);
  for (int q = 0; q < w; q++) srt_vsort32_mt(k + q * lp, t, n, nt);
  srt_vcols_unkeys32(k, lp, n, w, (uint32_t *)c->out[0].data + at, g->inner, f, fl, &zeros);
  for (int q = 0; q < w; q++)
    if (zeros >> q & 1) sort_zero_signs(c, g, o * g->inner + j0 + q);
}
static void sort_values_cols(const sort_ctx *s, opf_case *c, const srt_geom *sg) {
  const int64_t nu = sg->g.outer * ((sg->g.inner + sg->gw - 1) / sg->gw);
  const int nt = omp_get_max_threads() < sg->slots ? omp_get_max_threads() : sg->slots;
  if (sg->nlines * sg->g.n < OPF_PAR_MIN || nt < 2 || nu < 2) {
    for (int64_t u = 0; u < nu; u++) sort_cols_unit(s, c, sg, u, c->ws);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    void *slot = (char *)c->ws + (size_t)omp_get_thread_num() * sg->slot;
#pragma omp for schedule(dynamic, 1)
    for (int64_t u = 0; u < nu; u++) sort_cols_unit(s, c, sg, u, slot);
  }
}

/* A float32 sort that keeps its permutation, lines along an outer axis of SRT_KV32_MIN + 1 ..
 * SRT_BIG: the unit's columns to key lines as above, each line through the key-index sort
 * (srt_vsort_kv32, positions beside the keys: stable), the keys back to y and the positions
 * to the permutation by the same transposing stores (on an int32 line with the key xor
 * 0x80000000 the transform is the identity); a line's zeros then take their signs from x
 * through the permutation (as sort_saved_line). The slot holds 32 pitches + 2 n words (of 56 n). */
static void sort_saved_cols_unit(const sort_ctx *s, const opf_case *c, const srt_geom *sg,
                                 int64_t u, uint32_t *perm, void *slot) {
  const opf_rgeom *g = &sg->g;
  const int64_t gpo = (g->inner + sg->gw - 1) / sg->gw, o = u / gpo, j0 = (u % gpo) * sg->gw, n = g->n;
  const int w = (int)(g->inner - j0 < sg->gw ? g->inner - j0 : sg->gw);
  const int64_t lp = sort_pitch(n);
  uint32_t *k = slot, *v = k + 16 * lp, *tk = v + 16 * lp, *tv = tk + n, zeros = 0, none;
  const uint32_t f = s->desc ? 0xffffffffu : 0;
  const int64_t at = o * n * g->inner + j0, in = g->inner;
  const uint32_t *x = (const uint32_t *)c->in[0].data + at;
  uint32_t *y = (uint32_t *)c->out[0].data + at;
  srt_vcols_keys32(x, in, n, w, k, lp, f, 1);
  for (int q = 0; q < w; q++) {
    uint32_t *vq = v + q * lp;
    for (int64_t i = 0; i < n; i++) vq[i] = (uint32_t)i;
    srt_vsort_kv32(k + q * lp, vq, tk, tv, n);
  }
  srt_vcols_unkeys32(k, lp, n, w, y, in, f, 1, &zeros);
  srt_vcols_unkeys32(v, lp, n, w, perm + at, in, 0x80000000u, 0, &none);
  for (int q = 0; q < w; q++) {
    if (!(zeros >> q & 1)) continue;
    const uint32_t *vq = v + q * lp;
    for (int64_t r = 0; r < n; r++)
      if (y[r * in + q] == 0) y[r * in + q] = x[(int64_t)vq[r] * in + q];
  }
}
static void sort_saved_cols(const sort_ctx *s, opf_case *c, const srt_geom *sg, uint32_t *perm) {
  const int64_t nu = sg->g.outer * ((sg->g.inner + sg->gw - 1) / sg->gw);
  const int nt = omp_get_max_threads() < sg->slots ? omp_get_max_threads() : sg->slots;
  if (sg->nlines * sg->g.n < OPF_PAR_MIN || nt < 2 || nu < 2) {
    for (int64_t u = 0; u < nu; u++) sort_saved_cols_unit(s, c, sg, u, perm, c->ws);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    void *slot = (char *)c->ws + (size_t)omp_get_thread_num() * sg->slot;
#pragma omp for schedule(dynamic, 1)
    for (int64_t u = 0; u < nu; u++) sort_saved_cols_unit(s, c, sg, u, perm, slot);
  }
}

/* Values only of short contiguous lines (inner 1, n <= 16): srt_vrows32 on batches of 64
 * lines, the batches in contiguous ranges a thread (100000x10 axis=1 sorted a line at a time
 * through the line walk: a call chain and a buffer per 10 elements). */
/* perm: a float32 sort's kept permutation (srt_vrows32_perm), else NULL. */
static void sort_values_rows(const sort_ctx *s, opf_case *c, const srt_geom *sg, uint32_t *perm) {
  const int64_t n = sg->g.n, nl = sg->nlines, nb = (nl + 63) / 64;
  const uint32_t f = s->desc ? 0xffffffffu : 0, *x = c->in[0].data;
  const int fl = c->dtype == OPF_F32;
  uint32_t *y = c->out[0].data;
  const int nt = nl * n >= OPF_PAR_MIN && nb > 1 ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(nt) schedule(static) if (nt > 1)
  for (int64_t b = 0; b < nb; b++) {
    const int64_t r0 = b * 64, rows = nl - r0 < 64 ? nl - r0 : 64;
    if (perm) {
      srt_vrows32_perm(x + r0 * n, y + r0 * n, perm + r0 * n, rows, (int)n, f);
      continue;
    }
    uint64_t z = srt_vrows32(x + r0 * n, y + r0 * n, rows, (int)n, f, fl);
    for (; fl && z; z &= z - 1) sort_zero_signs(c, &sg->g, r0 + __builtin_ctzll(z));
  }
}

/* argsort: the line's int64 positions in sorted order. */
static void sort_arg_line(const sort_ctx *s, const opf_case *c, const opf_rgeom *g, int64_t l,
                          void *slot) {
  const srt_pairs p = srt_line_pairs(c, g, s->desc, l, slot);
  const int64_t base = srt_at(g, l, 0), st = g->inner;
  for (int64_t k = 0; k < g->n; k++) ((int64_t *)c->out[0].data)[base + k * st] = srt_pair_ix(&p, k);
}

/* sort of a float dtype: the values and the permutation (perm[k]: the line position of y[k],
 * uint32, in the walk case's out[1]: the workspace) that the backward scatters through, as
 * PyTorch keeps the indices its sort returns. */
static void sort_saved_line(const sort_ctx *s, const opf_case *c, const opf_rgeom *g,
                            int64_t l, void *slot) {
  const srt_pairs p = srt_line_pairs(c, g, s->desc, l, slot);
  const int64_t base = srt_at(g, l, 0), st = g->inner;
  uint32_t *perm = c->out[1].data;
  void *y = c->out[0].data;
  /* a zero's key is +0.0's (srt_keys): when the line has zeros, their signs come from x
   * (a second pass: a test per element in the first cost 35% on lines of 10) */
  int zeros = 0;
  if (p.k4 && st == 1 && c->dtype == OPF_F32 &&
      srt_vunkeys32(p.k4, (uint32_t *)y + base, g->n, s->desc ? 0xffffffffu : 0, 1, &zeros)) {
    memcpy(perm + base, p.v, (size_t)g->n * 4); /* contiguous: vector unkeys, copied positions */
  } else if (!p.k8) {
    const uint32_t f = s->desc ? 0xffffffffu : 0;
    for (int64_t k = 0; k < g->n; k++) {
      const uint32_t key = srt_pair_key32(&p, k) ^ f;
      zeros |= key == 0x80000000u;
      srt_unkey32(key, y, base + k * st, c->dtype);
      perm[base + k * st] = srt_pair_ix(&p, k);
    }
  } else {
    const uint64_t f = s->desc ? ~(uint64_t)0 : 0;
    for (int64_t k = 0; k < g->n; k++) {
      zeros |= (p.k8[k] ^ f) == 0x8000000000000000ull;
      srt_unkey64(p.k8[k] ^ f, y, base + k * st, c->dtype);
      perm[base + k * st] = p.v[k];
    }
  }
  if (zeros) {
    const void *x = c->in[0].data;
    const size_t es = opf_dtype_size(c->dtype);
    for (int64_t k = 0; k < g->n; k++) {
      const int64_t at = base + k * st;
      if (srt_zero_bits((const char *)y + (size_t)at * es, es))
        memcpy((char *)y + (size_t)at * es, (const char *)x + (size_t)(base + (int64_t)perm[at] * st) * es, es);
    }
  }
}

/* sort's backward: dx[perm[e]] = dy[e] along each line, in the tensors' own layout (no line
 * walk: element e of dy and of the permutation streams in memory order, each write lands in
 * its line), over elements [e0, e1) of an (outer, n, inner) geometry; T the element's word.
 * One division finds where e0 lies, rows of inner elements follow. */
#define SORT_BWD_DEF(T, name)                                                                 \
  static void name(const T *restrict dy, const uint32_t *restrict perm, T *restrict dx,       \
                   int64_t e0, int64_t e1, int64_t n, int64_t inner) {                         \
    if (e0 >= e1) return;                                                                      \
    if (inner == 1) {                                                                          \
      int64_t ob = e0 / n * n, e = e0;                                                         \
      for (; e < e1; ob += n) {                                                                \
        const int64_t end = ob + n < e1 ? ob + n : e1;                                         \
        T *restrict d = dx + ob;                                                               \
        for (; e < end; e++) d[perm[e]] = dy[e];                                               \
      }                                                                                        \
      return;                                                                                  \
    }                                                                                          \
    const int64_t ni = n * inner, row = e0 / inner;                                            \
    int64_t ob = row / n * ni, e = e0, j = e0 - row * inner, k = row % n;                      \
    while (e < e1) {                                                                           \
      const int64_t m = inner - j < e1 - e ? inner - j : e1 - e;                               \
      T *restrict d = dx + ob + j;                                                             \
      const T *restrict s = dy + e;                                                            \
      const uint32_t *restrict p = perm + e;                                                   \
      for (int64_t q = 0; q < m; q++) d[(int64_t)p[q] * inner + q] = s[q];                     \
      e += m, j = 0;                                                                           \
      if (++k == n) k = 0, ob += ni;                                                           \
    }                                                                                          \
  }
SORT_BWD_DEF(uint32_t, sort_bwd32)
SORT_BWD_DEF(uint64_t, sort_bwd64)
#undef SORT_BWD_DEF
/* The same over columns [j0, j1) of every line (inner > 1): a thread's writes stay in its
 * columns, where element ranges had both threads write into every row of dx (10x10000 axis=0:
 * 296 us at 2 threads against 40 at 1, the cache lines shared). */
#define SORT_BWD_COLS_DEF(T, name)                                                            \
  static void name(const T *restrict dy, const uint32_t *restrict perm, T *restrict dx,       \
                   int64_t j0, int64_t j1, int64_t outer, int64_t n, int64_t inner) {          \
    for (int64_t o = 0; o < outer; o++) {                                                      \
      T *restrict d = dx + o * n * inner;                                                      \
      for (int64_t k = 0; k < n; k++) {                                                        \
        const int64_t e = (o * n + k) * inner;                                                 \
        for (int64_t j = j0; j < j1; j++) d[(int64_t)perm[e + j] * inner + j] = dy[e + j];     \
      }                                                                                        \
    }                                                                                          \
  }
SORT_BWD_COLS_DEF(uint32_t, sort_bwd_cols32)
SORT_BWD_COLS_DEF(uint64_t, sort_bwd_cols64)
#undef SORT_BWD_COLS_DEF

/* Lines at least this many columns wide a thread (inner) go to threads by columns. */
#define SORT_BWD_COLS 256

/* The backward's elements in equal contiguous ranges, one a thread (a permutation: no two
 * writes meet). */
static void sort_bwd(opf_case *c, const srt_geom *sg, const uint32_t *perm) {
  const int64_t numel = opf_numel(&c->gout[0]);
  const int nt = numel >= OPF_PAR_MIN ? omp_get_max_threads() : 1;
#pragma omp parallel num_threads(nt) if (nt > 1)
  {
    const int t = omp_get_thread_num(), tn = omp_get_num_threads();
    const int64_t in = sg->g.inner;
    if (tn > 1 && in >= SORT_BWD_COLS * tn) { /* columns a thread, cut at 16-element lines */
      const int64_t j0 = in * t / tn / 16 * 16, j1 = t + 1 == tn ? in : in * (t + 1) / tn / 16 * 16;
      if (c->dtype == OPF_F32) sort_bwd_cols32(c->gout[0].data, perm, c->gin[0].data, j0, j1, sg->g.outer, sg->g.n, in);
      else sort_bwd_cols64(c->gout[0].data, perm, c->gin[0].data, j0, j1, sg->g.outer, sg->g.n, in);
    } else {
      const int64_t lo = numel * t / tn, hi = numel * (t + 1) / tn;
      if (c->dtype == OPF_F32) sort_bwd32(c->gout[0].data, perm, c->gin[0].data, lo, hi, sg->g.n, in);
      else sort_bwd64(c->gout[0].data, perm, c->gin[0].data, lo, hi, sg->g.n, in);
    }
  }
}

static void sort_line(void *ctx, const opf_case *c, const opf_rgeom *g, int64_t l, void *slot) {
  const sort_ctx *s = ctx;
  if (s->arg) sort_arg_line(s, c, g, l, slot);
  else if (opf_dtype_is_float(c->dtype) && s->save) sort_saved_line(s, c, g, l, slot);
  else sort_values_line(s, c, g, l, slot);
}

/* Line tensors of the forward's walk: x, y and (sort of a float dtype) the 4-byte
 * permutation, or argsort's x and int64 indices; the larger bytes per line size the group
 * buffers. */
static srt_geom sort_geom(const opf_case *c) {
  const int all = c->p[0] == OPF_AXIS_ALL;
  const int64_t n = all ? opf_numel(&c->in[0]) : c->in[0].shape[opf_axis(c->p[0], c->in[0].ndim)];
  const size_t es = opf_dtype_size(c->dtype), bpl = (size_t)n * (2 * es + 4 > es + 8 ? 2 * es + 4 : es + 8);
  srt_geom s = srt_geom_make(c, 0, all ? 0 : opf_axis(c->p[0], c->in[0].ndim), bpl);
  if (all) { /* the flattened input: one line */
    s.g = opf_red_geom(&c->in[0], 0, 1);
    s.nlines = 1, s.slots = 1;
    s.slot = ((size_t)s.g.n * 32 + 63) / 64 * 64;
  }
  return s;
}

/* The permutation's place: after the thread slots of the workspace (sort of a float dtype). */
static size_t sort_perm_at(const srt_geom *s) { return (s->slot * (size_t)s->slots + 63) / 64 * 64; }

static int sort_run(opf_case *c, int arg, int bwd, int alg) {
  /* the permutation is kept when a backward will scatter through it (an input gradient) */
  const int fl = !arg && opf_dtype_is_float(c->dtype);
  const sort_ctx s = {c->p[1] != 0, arg, fl && (alg == SORT_PAIRS || c->gin[0].data), alg};
  const srt_geom sg = sort_geom(c);
  if (sg.g.n == 0) return OPF_OK;
  const int64_t n = sg.g.n;
  uint32_t *perm = (uint32_t *)((char *)c->ws + sort_perm_at(&sg));
  if (bwd) {
    sort_bwd(c, &sg, perm);
    return OPF_OK;
  }
  if (!s.save && !arg && !srt_wide(c->dtype) && alg == SORT_NATIVE && srt_vsort_ok()) {
    if (sg.g.inner > 1) {
      sort_values_cols(&s, c, &sg);
      return OPF_OK;
    }
    if (sg.g.inner == 1 && n <= 16) {
      sort_values_rows(&s, c, &sg, NULL);
      return OPF_OK;
    }
  }
  if (s.save && c->dtype == OPF_F32 && sg.g.inner == 1 && n <= 16 && alg == SORT_NATIVE &&
      srt_vsort_ok()) { /* (the permutation's words: the layout of y) */
    sort_values_rows(&s, c, &sg, perm);
    return OPF_OK;
  }
  if (s.save && c->dtype == OPF_F32 && sg.g.inner > 1 && n > SRT_KV32_MIN && n <= SRT_BIG &&
      alg == SORT_NATIVE && srt_vsort_kv_ok()) {
    sort_saved_cols(&s, c, &sg, perm);
    return OPF_OK;
  }
  /* the walk's case: out[1] views the saved permutation (int32-sized words) */
  opf_case w = *c;
  if (s.save) {
    w.out[1] = c->out[0];
    w.out[1].dtype = OPF_I32;
    w.out[1].nbytes = (size_t)opf_numel(&c->out[0]) * 4;
    w.out[1].data = perm;
    w.out[1].owned = 0;
  }
  const srt_lt lt[3] = {{&w.in[0], n, 0}, {&w.out[0], n, 1}, {&w.out[1], n, 1}};
  srt_for_lines(&sg, &w, sort_line, (void *)&s, lt, s.save ? 3 : 2);
  return OPF_OK;
}

static int sort_forward(opf_case *c) { return sort_run(c, 0, 0, SORT_NATIVE); }
static int argsort_forward(opf_case *c) { return sort_run(c, 1, 0, SORT_NATIVE); }
/* The backward scatters dy through the permutation the forward kept. */
static int sort_backward(opf_case *c) {
  if (!c->gin[0].data) return OPF_OK;
  return sort_run(c, 0, 1, SORT_NATIVE);
}

static int sort_infer_kind(opf_case *c, int arg) {
  if (c->in[0].ndim < 0) return OPF_OK;
  int axis, all;
  int rc = opf_red_axis(c, c->p[0], 1, &axis, &all);
  if (rc) return rc;
  const srt_geom s = sort_geom(c);
  if (s.g.n > UINT32_MAX) {
    char b[96];
    return opf_case_error(c, OPF_EINVAL,
                          "%s: a line of %lld elements (input 'x' %s) exceeds the 2^32 indices a sort supports",
                          c->op->name, (long long)s.g.n, opf_shape_str(&c->in[0], b, sizeof b));
  }
  const int64_t numel = opf_numel(&c->in[0]);
  if (all) opf_set_out(c, 0, arg ? OPF_I64 : c->dtype, 1, &numel);
  else opf_set_out(c, 0, arg ? OPF_I64 : c->dtype, c->in[0].ndim, c->in[0].shape);
  c->ws_bytes = s.slot * (size_t)s.slots;
  if (!arg && opf_dtype_is_float(c->dtype)) c->ws_bytes = sort_perm_at(&s) + (size_t)numel * 4;
  return OPF_OK;
}
static int sort_infer(opf_case *c) { return sort_infer_kind(c, 0); }
static int argsort_infer(opf_case *c) { return sort_infer_kind(c, 1); }

/* Reference: each line's offsets merge-sorted by value (stable), values or positions out. */
static int sort_reference_kind(opf_case *c, int arg) {
  const srt_geom s = sort_geom(c);
  return srt_ref_lines(c, &s.g, c->p[1] != 0, s.g.n, arg ? NULL : c->out[0].data,
                       arg ? (int64_t *)c->out[0].data : NULL);
}
static int sort_reference(opf_case *c) { return sort_reference_kind(c, 0); }
static int argsort_reference(opf_case *c) { return sort_reference_kind(c, 1); }

/* Models: the comparison-sort work n log2 n per line (the radix sort does a few passes, but
 * this is the figure sorts are compared by); the backward is a scatter (no flops). Bytes: read
 * x, write y (int64 for argsort); backward reads dy and the kept permutation (4 bytes an
 * element) and writes dx. */
static double sort_flops(const opf_case *c, opf_pass p) {
  const srt_geom s = sort_geom(c);
  const double n = (double)s.g.n, w = n > 1 ? (double)s.nlines * n * log2(n) : 0;
  return opf_pass_sum(p, w, 0);
}
static double sort_bytes(const opf_case *c, opf_pass p) {
  const double x = (double)opf_numel(&c->in[0]) * (double)opf_dtype_size(c->dtype);
  const double y = (double)opf_numel(&c->out[0]) * (double)opf_dtype_size(c->out[0].dtype);
  return opf_pass_sum(p, x + y, 2 * x + 4.0 * (double)opf_numel(&c->in[0]));
}

#define SORT_PARAMS                                                                           \
  .n_params = 2,                                                                              \
  .params = {{.name = "axis", .type = OPF_P_AXIS, .def = -1, .min = -8, .max = 7,              \
              .help = "axis to sort along (default -1, the last), or 'all': the flattened "    \
                      "input, a 1-D output"},                                                 \
             {.name = "descending", .type = OPF_P_BOOL, .def = 0,                             \
              .help = "sort from largest to smallest (equal elements keep their order)"}}

/* (the operators close the list: sort adds a huge entry) */
#define SORT_SHAPES                                                                           \
  .shapes = {{"standard", "x=1024x1024 axis=0"},  {"standard", "x=1024x1024 axis=1"},         \
             {"standard", "x=1024x1024 axis=all"}, {"skewed", "x=10000x10 axis=0"},            \
             {"skewed", "x=10000x10 axis=1"},      {"skewed", "x=10x10000 axis=0"},            \
             {"skewed", "x=10x10000 axis=1"},      {"skewed", "x=10000x1 axis=0"},             \
             {"skewed", "x=10000x1 axis=1"},       {"skewed", "x=100000x10 axis=0"},           \
             {"skewed", "x=100000x10 axis=1"},     {"small", "x=16x16 axis=0"},                \
             {"small", "x=16x16 axis=1 descending=true"}, {"small", "x=1x64"},                 \
             {"small", "x=60x3 axis=0"},           {"small", "x=4x5x6 axis=1"},                \
             {"small", "x=4x5x6 axis=all descending=true"}, {"test", "x=301x517 axis=0"},      \
             {"test", "x=301x517 axis=1 descending=true"}, {"test", "x=301x517 axis=all"},     \
             {"test", "x=3x1000x7 axis=1"},        {"large", "x=8192x8192 axis=0"},            \
             {"large", "x=8192x8192 axis=1"}

OPPERF_OP(sort) = {
    .abi = OPF_OP_ABI,
    .name = "sort",
    .category = "sort",
    .summary = "sorted values along an axis (vector quicksort or radix sort of order-preserving keys; NaN last)",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -4, .hi = 4}},
    .n_out = 1,
    .out = {"y"},
    SORT_PARAMS,
    SORT_SHAPES, {"huge", "x=46341x46341 axis=1"}},
    .infer = sort_infer,
    .forward = sort_forward,
    .backward = sort_backward,
    .reference = sort_reference,
    .flops = sort_flops,
    .bytes = sort_bytes,
};

OPPERF_OP(argsort) = {
    .abi = OPF_OP_ABI,
    .name = "argsort",
    .category = "sort",
    .summary = "int64 positions that sort each line (stable: equal elements in index order)",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .lo = -4, .hi = 4}},
    .n_out = 1,
    .out = {"indices"},
    SORT_PARAMS,
    SORT_SHAPES}, /* no huge set: 2^31 int64 indices and the input exceed 24 GB */
    .infer = argsort_infer,
    .forward = argsort_forward,
    .reference = argsort_reference,
    .flops = sort_flops,
    .bytes = sort_bytes,
};

/* The alternatives (--impl): "radix" sorts values-only lines of 4-byte dtypes with the radix
 * sorts at every length (the threaded MSD + LSD sort beyond SRT_BIG), "pairs" keeps a float
 * sort's permutation in the forward even when no backward follows (the forward before the
 * key-only path). */
static int sort_radix_forward(opf_case *c) { return sort_run(c, 0, 0, SORT_RADIX); }
static int sort_pairs_forward(opf_case *c) { return sort_run(c, 0, 0, SORT_PAIRS); }
OPPERF_IMPL(sort_radix) = {.abi = OPF_OP_ABI, .name = "radix", .implements = "sort",
                           .summary = "values-only lines of 4-byte dtypes by LSD radix sorts "
                                      "(threaded MSD + LSD beyond 65536)",
                           .forward = sort_radix_forward, .backward = sort_backward};
OPPERF_IMPL(sort_pairs) = {.abi = OPF_OP_ABI, .name = "pairs", .implements = "sort",
                           .summary = "the forward keeps the permutation (key-index sorts) even "
                                      "without a backward",
                           .forward = sort_pairs_forward, .backward = sort_backward};
