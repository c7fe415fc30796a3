/* scan_drv.h: template of the cumulative-sum / cumulative-product kernels for one dtype,
 * included by scan.c with ST (element type; unsigned for integers, so overflow wraps as a
 * defined modulo-2^bits result), SVL (elements per 64-byte vector: 16 or 8) and SSUF defined
 * (undefined at the end).
 * Contiguous rows scan 64 bytes at a time: an in-register log-step scan of the vector, plus a
 * broadcast carry whose dependency chain is one add per vector; outer axes scan row by row. */

#define SCAT2_(a, b) a##_##b
#define SCAT_(a, b) SCAT2_(a, b)
#define SFN(name) SCAT_(name, SSUF)

typedef ST SFN(scan_vec) __attribute__((vector_size(64)));
#if SVL == 16
typedef int32_t SFN(scan_mask) __attribute__((vector_size(64)));
#define SCAN_UP(s) {0 - (s) < 0 ? 16 : 0, 1 - (s) < 0 ? 17 : 1 - (s), 2 - (s) < 0 ? 18 : 2 - (s), \
  3 - (s) < 0 ? 19 : 3 - (s), 4 - (s) < 0 ? 20 : 4 - (s), 5 - (s) < 0 ? 21 : 5 - (s),            \
  6 - (s) < 0 ? 22 : 6 - (s), 7 - (s) < 0 ? 23 : 7 - (s), 8 - (s) < 0 ? 24 : 8 - (s),            \
  9 - (s) < 0 ? 25 : 9 - (s), 10 - (s) < 0 ? 26 : 10 - (s), 11 - (s) < 0 ? 27 : 11 - (s),        \
  12 - (s) < 0 ? 28 : 12 - (s), 13 - (s) < 0 ? 29 : 13 - (s), 14 - (s) < 0 ? 30 : 14 - (s),      \
  15 - (s) < 0 ? 31 : 15 - (s)}
#else
typedef int64_t SFN(scan_mask) __attribute__((vector_size(64)));
#define SCAN_UP(s) {0 - (s) < 0 ? 8 : 0, 1 - (s) < 0 ? 9 : 1 - (s), 2 - (s) < 0 ? 10 : 2 - (s),  \
  3 - (s) < 0 ? 11 : 3 - (s), 4 - (s) < 0 ? 12 : 4 - (s), 5 - (s) < 0 ? 13 : 5 - (s),            \
  6 - (s) < 0 ? 14 : 6 - (s), 7 - (s) < 0 ? 15 : 7 - (s)}
#endif
/* reversal of a vector (for suffix scans) */
#if SVL == 16
#define SCAN_REV {15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}
#else
#define SCAN_REV {7, 6, 5, 4, 3, 2, 1, 0}
#endif

#define SOP(mul, a, b) ((mul) ? (a) * (b) : (a) + (b))

/* Inclusive scan inside one vector; id is the identity broadcast (vectors by pointer: no
 * vector-ABI dependence between the ISA clones). */
static inline __attribute__((always_inline)) void SFN(scan_in_vec)(const int mul,
                                                                   SFN(scan_vec) *pv,
                                                                   const SFN(scan_vec) *id) {
  const SFN(scan_mask) m1 = SCAN_UP(1), m2 = SCAN_UP(2), m4 = SCAN_UP(4);
  SFN(scan_vec) v = *pv;
  v = SOP(mul, v, __builtin_shuffle(v, *id, m1));
  v = SOP(mul, v, __builtin_shuffle(v, *id, m2));
  v = SOP(mul, v, __builtin_shuffle(v, *id, m4));
#if SVL == 16
  const SFN(scan_mask) m8 = SCAN_UP(8);
  v = SOP(mul, v, __builtin_shuffle(v, *id, m8));
#endif
  *pv = v;
}

/* The vector at o of a scan in scan order: a (times w when given), reversed for a suffix scan;
 * and its store: back in memory order, divided by d when given. Vectors by pointer, as above. */
static inline __attribute__((always_inline)) void SFN(scan_load)(const ST *restrict a,
                                                                 const ST *restrict w, int64_t o,
                                                                 int rev, SFN(scan_vec) *pv) {
  const SFN(scan_mask) rv = SCAN_REV;
  SFN(scan_vec) v;
  memcpy(&v, a + o, sizeof v);
  if (w) {
    SFN(scan_vec) t;
    memcpy(&t, w + o, sizeof t);
    v *= t;
  }
  *pv = rev ? __builtin_shuffle(v, rv) : v;
}
static inline __attribute__((always_inline)) void SFN(scan_store)(const SFN(scan_vec) *pv,
                                                                  const ST *restrict d, int64_t o,
                                                                  int rev, ST *restrict y) {
  const SFN(scan_mask) rv = SCAN_REV;
  SFN(scan_vec) v = rev ? __builtin_shuffle(*pv, rv) : *pv;
  if (d) {
    SFN(scan_vec) t;
    memcpy(&t, d + o, sizeof t);
    v /= t;
  }
  memcpy(y + o, &v, sizeof v);
}

/* One row of n: y[i] = carry op v[0] op ... op v[i] in scan order, where v = a, or a * w when
 * w is given; rev scans from the end (suffix scan). With d, the stored value is divided by
 * d[i] (the running value itself is not). Returns the final carry. */
static inline __attribute__((always_inline)) ST SFN(scan_row_k)(const int mul, const int rev,
                                                                 const ST *restrict a,
                                                                 const ST *restrict w,
                                                                 const ST *restrict d,
                                                                 ST *restrict y, int64_t n,
                                                                 ST carry) {
  const ST idv = (ST)(mul ? 1 : 0);
  SFN(scan_vec) id, c;
  for (int l = 0; l < SVL; l++) id[l] = idv, c[l] = carry;
  const SFN(scan_mask) last = {SVL - 1, SVL - 1, SVL - 1, SVL - 1, SVL - 1, SVL - 1, SVL - 1,
                               SVL - 1
#if SVL == 16
                               , 15, 15, 15, 15, 15, 15, 15, 15
#endif
  };
  int64_t i = 0;
  for (; i + SVL <= n; i += SVL) {
    const int64_t o = rev ? n - i - SVL : i;
    SFN(scan_vec) v;
    SFN(scan_load)(a, w, o, rev, &v);
    SFN(scan_in_vec)(mul, &v, &id);
    const SFN(scan_vec) tot = __builtin_shuffle(v, last);
    v = SOP(mul, c, v);
    c = SOP(mul, c, tot);
    SFN(scan_store)(&v, d, o, rev, y);
  }
  ST cs = c[0];
  for (; i < n; i++) {
    const int64_t o = rev ? n - 1 - i : i;
    const ST v = w ? a[o] * w[o] : a[o];
    cs = SOP(mul, cs, v);
    y[o] = d ? cs / d[o] : cs;
  }
  return cs;
}

/* Many short rows (inner axis, n below a few vectors: 100000x10 axis=1): the rows of [a, a +
 * rows * n) are scanned as one flat array, 64 bytes at a time, with the row boundaries as
 * segment marks: lane l holds the position k of its element in its row (k = (i0 + l) mod n,
 * advanced per vector by SVL mod n), the log-step scan adds the lane s below only where k >= s,
 * and the carry of the previous vector only where the row began before this vector (k > l).
 * A walk per row of 10 elements costs a call and a serial chain per row; this is a few vector
 * operations per 64 bytes. rev scans from the end: lanes reversed, k counted from the row's end.
 * Flags as scan_row_k. */
static inline __attribute__((always_inline)) void SFN(scan_seg_k)(const int mul, const int rev,
                                                                 const ST *restrict a,
                                                                 const ST *restrict w,
                                                                 const ST *restrict d,
                                                                 ST *restrict y, int64_t n,
                                                                 int64_t rows) {
  typedef SFN(scan_mask) msk;
  const ST idv = (ST)(mul ? 1 : 0);
  const int64_t numel = rows * n, nv = numel / SVL;
  SFN(scan_vec) id, c;
  msk kv, lane;
  for (int l = 0; l < SVL; l++) id[l] = idv, c[l] = idv, kv[l] = l % n, lane[l] = l;
  const msk m1 = SCAN_UP(1), m2 = SCAN_UP(2), m4 = SCAN_UP(4);
#if SVL == 16
  const msk m8 = SCAN_UP(8);
#endif
  const msk last = {SVL - 1, SVL - 1, SVL - 1, SVL - 1, SVL - 1, SVL - 1, SVL - 1, SVL - 1
#if SVL == 16
                    , 15, 15, 15, 15, 15, 15, 15, 15
#endif
  };
  const int step = (int)(SVL % n), ni = (int)n;
  const msk idb = (msk)id;
#define SEG_STEP(s, ms)                                                                       \
  do {                                                                                        \
    const msk on = kv >= (s);                                                                 \
    const msk sh = (msk)__builtin_shuffle(v, id, ms);                                         \
    v = SOP(mul, v, (SFN(scan_vec))((sh & on) | (idb & ~on)));                                \
  } while (0)
  for (int64_t q = 0; q < nv; q++) {
    const int64_t o = rev ? numel - (q + 1) * SVL : q * SVL;
    SFN(scan_vec) v;
    SFN(scan_load)(a, w, o, rev, &v);
    SEG_STEP(1, m1);
    SEG_STEP(2, m2);
    SEG_STEP(4, m4);
#if SVL == 16
    SEG_STEP(8, m8);
#endif
    const msk on = kv > lane;
    v = SOP(mul, v, (SFN(scan_vec))(((msk)c & on) | (idb & ~on)));
    c = __builtin_shuffle(v, last);
    SFN(scan_store)(&v, d, o, rev, y);
    kv += step;
    kv -= (kv >= ni) & ni;
  }
#undef SEG_STEP
  /* the rest (under one vector), element by element with the same carry */
  ST cs = c[0];
  for (int64_t q = nv * SVL; q < numel; q++) {
    const int64_t o = rev ? numel - 1 - q : q;
    if ((rev ? n - 1 - o % n : o % n) == 0) cs = idv;
    const ST v = w ? a[o] * w[o] : a[o];
    cs = SOP(mul, cs, v);
    y[o] = d ? cs / d[o] : cs;
  }
}

/* Outer axes: rows k of a column block of width wd (stride inner), the running value kept in
 * acc (L1); the same flags as above. */
static inline __attribute__((always_inline)) void SFN(scan_cols_k)(
    const int mul, const int rev, const ST *restrict a, const ST *restrict w,
    const ST *restrict d, ST *restrict y, int64_t n, int64_t inner, int64_t wd,
    ST *restrict acc) {
  for (int64_t j = 0; j < wd; j++) acc[j] = (ST)(mul ? 1 : 0);
  for (int64_t q = 0; q < n; q++) {
    const int64_t o = (rev ? n - 1 - q : q) * inner;
    if (w)
      for (int64_t j = 0; j < wd; j++) acc[j] = SOP(mul, acc[j], a[o + j] * w[o + j]);
    else
      for (int64_t j = 0; j < wd; j++) acc[j] = SOP(mul, acc[j], a[o + j]);
    if (d)
      for (int64_t j = 0; j < wd; j++) y[o + j] = acc[j] / d[o + j];
    else
      for (int64_t j = 0; j < wd; j++) y[o + j] = acc[j];
  }
}

/* Entry points, one clone set per dtype: the mode selects (mul, rev, weighted, divided). */
#define SCAN_MODES(X)                                                                         \
  X(SCAN_SUM, 0, 0, 0, 0) X(SCAN_PROD, 1, 0, 0, 0) X(SCAN_RSUM, 0, 1, 0, 0)                     \
  X(SCAN_RSUMW, 0, 1, 1, 0) X(SCAN_RSUMWD, 0, 1, 1, 1)
OPF_VEC static ST SFN(scan_row)(int mode, const ST *restrict a, const ST *restrict w,
                                const ST *restrict d, ST *restrict y, int64_t n, ST carry) {
  switch (mode) {
#define SCAN_CASE(M, MUL, REV, W, D)                                                          \
  case M: return SFN(scan_row_k)(MUL, REV, a, W ? w : NULL, D ? d : NULL, y, n, carry);
    SCAN_MODES(SCAN_CASE)
#undef SCAN_CASE
  default: return carry;
  }
}

OPF_VEC static void SFN(scan_seg)(int mode, const ST *restrict a, const ST *restrict w,
                                  const ST *restrict d, ST *restrict y, int64_t n, int64_t rows) {
  switch (mode) {
#define SCAN_CASE(M, MUL, REV, W, D)                                                          \
  case M: SFN(scan_seg_k)(MUL, REV, a, W ? w : NULL, D ? d : NULL, y, n, rows); break;
    SCAN_MODES(SCAN_CASE)
#undef SCAN_CASE
  default: break;
  }
}

OPF_VEC static void SFN(scan_cols)(int mode, const ST *restrict a, const ST *restrict w,
                                   const ST *restrict d, ST *restrict y, int64_t n,
                                   int64_t inner, int64_t wd, ST *restrict acc) {
  switch (mode) {
#define SCAN_CASE(M, MUL, REV, W, D)                                                          \
  case M: SFN(scan_cols_k)(MUL, REV, a, W ? w : NULL, D ? d : NULL, y, n, inner, wd, acc); break;
    SCAN_MODES(SCAN_CASE)
#undef SCAN_CASE
  default: break;
  }
}

/* Second pass of a segmented row: y[i] = (off op y[i]) (/ d[i]). */
OPF_VEC static void SFN(scan_offset)(int mul, ST off, const ST *restrict d, ST *restrict y,
                                     int64_t n) {
  if (mul)
    for (int64_t i = 0; i < n; i++) y[i] = off * y[i];
  else if (d)
    for (int64_t i = 0; i < n; i++) y[i] = (off + y[i]) / d[i];
  else
    for (int64_t i = 0; i < n; i++) y[i] = off + y[i];
}

#undef SOP
#undef SCAN_MODES
#undef SCAN_UP
#undef SCAN_REV
#undef SVL
#undef SFN
#undef SCAT_
#undef SCAT2_
#undef ST
#undef SSUF
