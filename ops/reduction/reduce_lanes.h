/* reduce_lanes.h: template of the reduction lane kernels for one dtype, included by reduce.h
 * with RT/RL/RA/RFLOAT/RF32/RSUF defined (see there); it undefines them at the end.
 * Every function is always_inline and ISA-neutral: the OPF_VEC entry points that call them
 * get an AVX-512, AVX2 and baseline copy each, with no call per row. */

#define RCAT2_(a, b) a##_##b
#define RCAT_(a, b) RCAT2_(a, b)
#define RFN(name) RCAT_(name, RSUF)

/* NaN test of the dtype (integers have none). */
OPF_RED_INLINE int RFN(opf_red_isnan)(RT v) {
#if RFLOAT
  return isnan(v);
#else
  (void)v;
  return 0;
#endif
}

/* Map of an element into the lane type of a fold (op is a compile-time OPF_FOLD_*). */
OPF_RED_INLINE RL RFN(opf_red_map)(const int op, RT v) {
  switch (op) {
  case OPF_FOLD_NANADD: return RFN(opf_red_isnan)(v) ? (RL)0 : (RL)v;
  case OPF_FOLD_NANMUL: return RFN(opf_red_isnan)(v) ? (RL)1 : (RL)v;
#if RFLOAT
  case OPF_FOLD_ABSADD: return fabs(v);
#endif
  case OPF_FOLD_SQADD: return (RL)v * (RL)v;
  default: return (RL)v;
  }
}

/* Fold of x[0..n) by an add or multiply op: 64 independent RL lanes, folded into RA totals
 * every OPF_RED_BLK elements (a float32 lane never combines more than ~64 terms). */
OPF_RED_INLINE RA RFN(opf_red_fold_row)(const int op, const RT *restrict x, int64_t n) {
  const RL id = (RL)opf_fold_id(op);
  RA s = (RA)id;
  int64_t i = 0;
  if (n >= OPF_RED_LANES) {
    RA tot[OPF_RED_LANES];
    for (int j = 0; j < OPF_RED_LANES; j++) tot[j] = (RA)id;
    while (i + OPF_RED_LANES <= n) {
      int64_t e = i + OPF_RED_BLK < n ? i + OPF_RED_BLK : n;
      RL acc[OPF_RED_LANES];
      for (int j = 0; j < OPF_RED_LANES; j++) acc[j] = id;
      for (; i + OPF_RED_LANES <= e; i += OPF_RED_LANES)
        for (int j = 0; j < OPF_RED_LANES; j++)
          acc[j] = RED_COMB(op, acc[j], RFN(opf_red_map)(op, x[i + j]));
      for (int j = 0; j < OPF_RED_LANES; j++) tot[j] = RED_COMB(op, tot[j], (RA)acc[j]);
    }
    for (int h = OPF_RED_LANES / 2; h; h /= 2) /* pairwise fold of the lanes */
      for (int j = 0; j < h; j++) tot[j] = RED_COMB(op, tot[j], tot[j + h]);
    s = tot[0];
  }
  for (; i < n; i++) s = RED_COMB(op, s, (RA)RFN(opf_red_map)(op, x[i]));
  return s;
}

/* Sum of x[0..n) (integers: RL wrap-around, exact modulo 2^bits). */
OPF_RED_INLINE RA RFN(opf_red_sum_row)(const RT *restrict x, int64_t n) {
  return RFN(opf_red_fold_row)(OPF_FOLD_ADD, x, n);
}

/* Extreme ops: max, min, and any / all as the max / min of (x != 0). ext_map maps an element,
 * ext_step folds one element into an accumulator with a single select (GCC 12 fails on nested
 * selects of double for any / all). */
OPF_RED_INLINE RT RFN(opf_red_ext_map)(const int op, RT v) {
  if (op == OPF_FOLD_ANY || op == OPF_FOLD_ALL) return v != 0 ? (RT)1 : (RT)0;
  return v;
}
OPF_RED_INLINE RT RFN(opf_red_ext_step)(const int op, RT acc, RT v) {
  switch (op) {
  case OPF_FOLD_ANY: return v != 0 ? (RT)1 : acc;
  case OPF_FOLD_ALL: return v == 0 ? (RT)0 : acc;
  default: return RED_PICK(op, v, acc);
  }
}

/* Extreme of x[0..n), n >= 1. */
OPF_RED_INLINE RT RFN(opf_red_ext_row)(const int op, const RT *restrict x, int64_t n) {
  RT m = RFN(opf_red_ext_map)(op, x[0]);
  int64_t i = 1;
  if (n >= 2 * OPF_RED_LANES) {
    RT acc[OPF_RED_LANES];
    for (int j = 0; j < OPF_RED_LANES; j++) acc[j] = RFN(opf_red_ext_map)(op, x[j]);
    for (i = OPF_RED_LANES; i + OPF_RED_LANES <= n; i += OPF_RED_LANES)
      for (int j = 0; j < OPF_RED_LANES; j++) acc[j] = RFN(opf_red_ext_step)(op, acc[j], x[i + j]);
    for (int h = OPF_RED_LANES / 2; h; h /= 2)
      for (int j = 0; j < h; j++) acc[j] = RED_PICK(op, acc[j + h], acc[j]);
    m = acc[0];
  }
  for (; i < n; i++) m = RFN(opf_red_ext_step)(op, m, x[i]);
  return m;
}

/* Largest element of x[0..n), n >= 1. */
OPF_RED_INLINE RT RFN(opf_red_max_row)(const RT *restrict x, int64_t n) {
  return RFN(opf_red_ext_row)(OPF_FOLD_MAX, x, n);
}

/* Shifted sums of a row for the variance: s1 = sum (x - k), s2 = sum (x - k)^2, with k the
 * line's first element (so the one-pass formula does not cancel catastrophically). Lanes as in
 * opf_red_fold_row. */
OPF_RED_INLINE void RFN(opf_red_var_row)(const RT *restrict x, int64_t n, RT k, RA *s1, RA *s2) {
  RA a = 0, b = 0;
  int64_t i = 0;
  if (n >= OPF_RED_LANES) {
    RA ta[OPF_RED_LANES] = {0}, tb[OPF_RED_LANES] = {0};
    while (i + OPF_RED_LANES <= n) {
      int64_t e = i + OPF_RED_BLK < n ? i + OPF_RED_BLK : n;
      RL aa[OPF_RED_LANES] = {0}, ab[OPF_RED_LANES] = {0};
      for (; i + OPF_RED_LANES <= e; i += OPF_RED_LANES)
        for (int j = 0; j < OPF_RED_LANES; j++) {
          const RL d = (RL)(x[i + j] - k);
          aa[j] += d;
          ab[j] += d * d;
        }
      for (int j = 0; j < OPF_RED_LANES; j++) ta[j] += (RA)aa[j], tb[j] += (RA)ab[j];
    }
    for (int h = OPF_RED_LANES / 2; h; h /= 2)
      for (int j = 0; j < h; j++) ta[j] += ta[j + h], tb[j] += tb[j + h];
    a = ta[0], b = tb[0];
  }
  for (; i < n; i++) {
    const RA d = (RA)(x[i] - k);
    a += d, b += d * d;
  }
  *s1 = a, *s2 = b;
}

/* First i in [0, n) with x[i] == v, v known to occur: vector compares 64 at a time, then a
 * scalar look inside the block that hit. */
OPF_RED_INLINE int64_t RFN(opf_red_find)(const RT *restrict x, int64_t n, RT v) {
  int64_t i = 0;
  for (; i + OPF_RED_LANES <= n; i += OPF_RED_LANES) {
    int hit = 0;
    for (int j = 0; j < OPF_RED_LANES; j++) hit |= x[i + j] == v;
    if (hit) break;
  }
  for (; i < n; i++)
    if (x[i] == v) return i;
  return 0;
}

/* Index of the first extreme (op OPF_FOLD_MAX or MIN) of x[0..n), n >= 1. Chunks of
 * OPF_RED_ACH elements (L1) are reduced at full vector speed; only a chunk whose extreme beats
 * the best so far (strictly, so ties keep the earlier chunk) is searched for its first
 * position. */
OPF_RED_INLINE int64_t RFN(opf_red_arg_row)(const int op, const RT *restrict x, int64_t n,
                                            RT *best) {
#if RF32
  int64_t at;
  if (n >= 64 && (op == OPF_FOLD_MAX || op == OPF_FOLD_MIN) &&
      opf_red_arg_f32_fast(op == OPF_FOLD_MIN, x, n, best, &at))
    return at;
#endif
  RT bv = x[0];
  int64_t bi = 0;
  for (int64_t c0 = 0; c0 < n; c0 += OPF_RED_ACH) {
    const int64_t len = n - c0 < OPF_RED_ACH ? n - c0 : OPF_RED_ACH;
    const RT cm = RFN(opf_red_ext_row)(op, x + c0, len);
    if (c0 == 0 || RED_BETTER(op, cm, bv)) bv = cm, bi = c0 + RFN(opf_red_find)(x + c0, len, cm);
  }
  *best = bv;
  return bi;
}

OPF_RED_INLINE int64_t RFN(opf_red_argmax_row)(const RT *restrict x, int64_t n, RT *best) {
  return RFN(opf_red_arg_row)(OPF_FOLD_MAX, x, n, best);
}

/* Short rows (n < OPF_RED_SHORT, usually a compile-time constant): per-row fold (RL) or
 * extreme of nrows rows of n, and the expansion e[r*n + k] = v[r] of per-row values. */
OPF_RED_INLINE void RFN(opf_red_short_fold)(const int op, const RT *restrict x, int64_t nrows,
                                            const int64_t n, RL *restrict s) {
  for (int64_t r = 0; r < nrows; r++) {
    RL v = RFN(opf_red_map)(op, x[r * n]);
    for (int64_t k = 1; k < n; k++) v = RED_COMB(op, v, RFN(opf_red_map)(op, x[r * n + k]));
    s[r] = v;
  }
}

OPF_RED_INLINE void RFN(opf_red_short_ext)(const int op, const RT *restrict x, int64_t nrows,
                                           const int64_t n, RT *restrict m) {
  for (int64_t r = 0; r < nrows; r++) {
    RT v = RFN(opf_red_ext_map)(op, x[r * n]);
    for (int64_t k = 1; k < n; k++) v = RFN(opf_red_ext_step)(op, v, x[r * n + k]);
    m[r] = v;
  }
}

OPF_RED_INLINE void RFN(opf_red_short_max)(const RT *restrict x, int64_t nrows, const int64_t n,
                                           RT *restrict m) {
  RFN(opf_red_short_ext)(OPF_FOLD_MAX, x, nrows, n, m);
}

OPF_RED_INLINE void RFN(opf_red_short_sum)(const RT *restrict x, int64_t nrows, const int64_t n,
                                           RL *restrict s) {
  RFN(opf_red_short_fold)(OPF_FOLD_ADD, x, nrows, n, s);
}

OPF_RED_INLINE void RFN(opf_red_expand)(const RT *restrict v, int64_t nrows, const int64_t n,
                                        RT *restrict e) {
  for (int64_t r = 0; r < nrows; r++)
    for (int64_t k = 0; k < n; k++) e[r * n + k] = v[r];
}

/* acc[j] = op(acc[j], fold over k < nr of x[k*ld + j]), j < w <= OPF_RED_CB. Four rows per
 * step; an RL partial row is folded into acc every OPF_RED_RB rows. */
OPF_RED_INLINE void RFN(opf_red_fold_cols)(const int op, const RT *restrict x, int64_t ld,
                                           int64_t nr, int64_t w, RA *restrict acc) {
  RL t[OPF_RED_CB];
  const RL id = (RL)opf_fold_id(op);
  for (int64_t k0 = 0; k0 < nr; k0 += OPF_RED_RB) {
    int64_t k1 = k0 + OPF_RED_RB < nr ? k0 + OPF_RED_RB : nr, k = k0;
    for (int64_t j = 0; j < w; j++) t[j] = id;
    for (; k + 4 <= k1; k += 4) {
      const RT *a = x + k * ld, *b = a + ld, *c = b + ld, *d = c + ld;
      for (int64_t j = 0; j < w; j++)
        t[j] = RED_COMB(op, t[j],
                        RED_COMB(op, RED_COMB(op, RFN(opf_red_map)(op, a[j]), RFN(opf_red_map)(op, b[j])),
                                 RED_COMB(op, RFN(opf_red_map)(op, c[j]), RFN(opf_red_map)(op, d[j]))));
    }
    for (; k < k1; k++)
      for (int64_t j = 0; j < w; j++) t[j] = RED_COMB(op, t[j], RFN(opf_red_map)(op, x[k * ld + j]));
    for (int64_t j = 0; j < w; j++) acc[j] = RED_COMB(op, acc[j], (RA)t[j]);
  }
}

OPF_RED_INLINE void RFN(opf_red_sum_cols)(const RT *restrict x, int64_t ld, int64_t nr, int64_t w,
                                          RA *restrict acc) {
  RFN(opf_red_fold_cols)(OPF_FOLD_ADD, x, ld, nr, w, acc);
}

/* Shifted column sums for the variance: a1[j] += sum (x - k[j]), a2[j] += sum (x - k[j])^2. */
OPF_RED_INLINE void RFN(opf_red_var_cols)(const RT *restrict x, int64_t ld, int64_t nr, int64_t w,
                                          const RT *restrict kv, RA *restrict a1,
                                          RA *restrict a2) {
  RL t1[OPF_RED_CB], t2[OPF_RED_CB];
  for (int64_t k0 = 0; k0 < nr; k0 += OPF_RED_RB) {
    int64_t k1 = k0 + OPF_RED_RB < nr ? k0 + OPF_RED_RB : nr;
    int64_t k = k0;
    for (int64_t j = 0; j < w; j++) t1[j] = 0, t2[j] = 0;
    for (; k + 4 <= k1; k += 4) { /* four rows per pass over the partial rows */
      const RT *a = x + k * ld, *b = a + ld, *c = b + ld, *d = c + ld;
      for (int64_t j = 0; j < w; j++) {
        const RL da = (RL)(a[j] - kv[j]), db = (RL)(b[j] - kv[j]), dc = (RL)(c[j] - kv[j]),
                 dd = (RL)(d[j] - kv[j]);
        t1[j] += (da + db) + (dc + dd);
        t2[j] += (da * da + db * db) + (dc * dc + dd * dd);
      }
    }
    for (; k < k1; k++) {
      const RT *r = x + k * ld;
      for (int64_t j = 0; j < w; j++) {
        const RL d = (RL)(r[j] - kv[j]);
        t1[j] += d;
        t2[j] += d * d;
      }
    }
    for (int64_t j = 0; j < w; j++) a1[j] += (RA)t1[j], a2[j] += (RA)t2[j];
  }
}

/* acc[j] = extreme(acc[j], x[k*ld + j]) over k < nr, j < w. */
OPF_RED_INLINE void RFN(opf_red_ext_cols)(const int op, const RT *restrict x, int64_t ld,
                                          int64_t nr, int64_t w, RT *restrict acc) {
  int64_t k = 0;
  if (op == OPF_FOLD_ANY || op == OPF_FOLD_ALL) {
    for (; k < nr; k++)
      for (int64_t j = 0; j < w; j++) acc[j] = RFN(opf_red_ext_step)(op, acc[j], x[k * ld + j]);
    return;
  }
  for (; k + 4 <= nr; k += 4) {
    const RT *a = x + k * ld, *b = a + ld, *c = b + ld, *d = c + ld;
    for (int64_t j = 0; j < w; j++) {
      RT p = RED_PICK(op, a[j], b[j]), q = RED_PICK(op, c[j], d[j]);
      RT m = RED_PICK(op, p, q);
      acc[j] = RED_PICK(op, m, acc[j]);
    }
  }
  for (; k < nr; k++)
    for (int64_t j = 0; j < w; j++) acc[j] = RED_PICK(op, x[k * ld + j], acc[j]);
}

OPF_RED_INLINE void RFN(opf_red_max_cols)(const RT *restrict x, int64_t ld, int64_t nr, int64_t w,
                                          RT *restrict acc) {
  RFN(opf_red_ext_cols)(OPF_FOLD_MAX, x, ld, nr, w, acc);
}

/* Column arg-extreme (op MAX or MIN) over rows k < nr (row index kbase + k), keeping the first
 * extreme of each column; init: start from these rows instead of the values already in bv/bi.
 * Rows go in chunks of about 16 KiB: the chunk's column extreme (vectorised ext_cols); when
 * some column beats its best so far, a reverse scan of the chunk finds the first row holding
 * each chunk extreme (the last write wins) and the improved columns take it. All selects, no
 * data-dependent branches inside the loops. */
OPF_RED_INLINE void RFN(opf_red_arg_cols)(const int op, const RT *restrict x, int64_t ld,
                                          int64_t nr, int64_t w, RT *restrict bv,
                                          int64_t *restrict bi, int64_t kbase, int init) {
  RT cm[OPF_RED_CB];
  int64_t ci[OPF_RED_CB];
  int64_t rows = (16384 / (int64_t)sizeof(RT)) / (w > 0 ? w : 1);
  rows = rows < 2 ? 2 : rows > 64 ? 64 : rows;
  for (int64_t k0 = 0; k0 < nr; k0 += rows) {
    const int64_t k1 = k0 + rows < nr ? k0 + rows : nr;
    const int first = init && k0 == 0;
    memcpy(cm, x + k0 * ld, (size_t)w * sizeof(RT));
    RFN(opf_red_ext_cols)(op, x + (k0 + 1) * ld, ld, k1 - k0 - 1, w, cm);
    int any = first;
    for (int64_t j = 0; j < w; j++) any |= RED_BETTER(op, cm[j], bv[j]);
    if (!any) continue;
    for (int64_t j = 0; j < w; j++) ci[j] = kbase + k1 - 1;
    for (int64_t k = k1 - 2; k >= k0; k--) {
      const RT *r = x + k * ld;
      const int64_t kk = kbase + k;
      for (int64_t j = 0; j < w; j++) ci[j] = r[j] == cm[j] ? kk : ci[j];
    }
    if (first) {
      memcpy(bv, cm, (size_t)w * sizeof(RT));
      memcpy(bi, ci, (size_t)w * sizeof(int64_t));
    } else {
      for (int64_t j = 0; j < w; j++) bi[j] = RED_BETTER(op, cm[j], bv[j]) ? ci[j] : bi[j];
      for (int64_t j = 0; j < w; j++) bv[j] = RED_PICK(op, cm[j], bv[j]);
    }
  }
}

#if RFLOAT
/* exp of the dtype, from the shared vectorisable ops/unary/vmath.h. */
OPF_RED_INLINE RT RFN(opf_red_exp)(RT x) {
#if RF32
  return vm_expf(x);
#else
  return vm_exp(x);
#endif
}

OPF_RED_INLINE RT RFN(opf_red_log)(RT x) {
#if RF32
  return vm_logf(x);
#else
  return vm_log(x);
#endif
}

/* Pairwise sum of the OPF_RED_LANES lanes of acc (which it overwrites). */
OPF_RED_INLINE RT RFN(opf_red_fold)(RT *restrict acc) {
  for (int h = OPF_RED_LANES / 2; h; h /= 2)
    for (int j = 0; j < h; j++) acc[j] += acc[j + h];
  return acc[0];
}

/* sum of exp(x[i] - m) over a row; when y is not NULL, y[i] = exp(x[i] - m) too. Lanes of RT
 * (one block at most OPF_RED_BLK long) folded into a double total. */
OPF_RED_INLINE double RFN(opf_red_exp_sum_row)(const RT *restrict x, RT *restrict y, int64_t n,
                                               RT m) {
  double s = 0;
  int64_t i = 0;
  while (i + OPF_RED_LANES <= n) {
    int64_t e = i + OPF_RED_BLK < n ? i + OPF_RED_BLK : n;
    RT acc[OPF_RED_LANES] = {0};
    if (y) {
      for (; i + OPF_RED_LANES <= e; i += OPF_RED_LANES)
        for (int j = 0; j < OPF_RED_LANES; j++) {
          RT v = RFN(opf_red_exp)(x[i + j] - m);
          y[i + j] = v;
          acc[j] += v;
        }
    } else {
      for (; i + OPF_RED_LANES <= e; i += OPF_RED_LANES)
        for (int j = 0; j < OPF_RED_LANES; j++) acc[j] += RFN(opf_red_exp)(x[i + j] - m);
    }
    s += RFN(opf_red_fold)(acc);
  }
  for (; i < n; i++) {
    RT v = RFN(opf_red_exp)(x[i] - m);
    if (y) y[i] = v;
    s += v;
  }
  return s;
}

/* sum of a[i] * b[i], lanes folded into a double total per block. */
OPF_RED_INLINE double RFN(opf_red_dot_row)(const RT *restrict a, const RT *restrict b, int64_t n) {
  double s = 0;
  int64_t i = 0;
  while (i + OPF_RED_LANES <= n) {
    int64_t e = i + OPF_RED_BLK < n ? i + OPF_RED_BLK : n;
    RT acc[OPF_RED_LANES] = {0};
    for (; i + OPF_RED_LANES <= e; i += OPF_RED_LANES)
      for (int j = 0; j < OPF_RED_LANES; j++) acc[j] += a[i + j] * b[i + j];
    s += RFN(opf_red_fold)(acc);
  }
  for (; i < n; i++) s += a[i] * b[i];
  return s;
}

/* Column forms of the two above over rows k < nr (stride ld) and columns j < w <= OPF_RED_CB:
 * exp_sum_cols: acc[j] += sum_k exp(x[k,j] - sub[j]), also stored in y when y is not NULL;
 * dot_cols: acc[j] += sum_k a[k,j] * b[k,j]. RT partials fold into acc every OPF_RED_RB rows. */
OPF_RED_INLINE void RFN(opf_red_exp_sum_cols)(const RT *restrict x, RT *restrict y, int64_t ld,
                                              int64_t nr, int64_t w, const RT *restrict sub,
                                              double *restrict acc) {
  RT t[OPF_RED_CB];
  for (int64_t k0 = 0; k0 < nr; k0 += OPF_RED_RB) {
    int64_t k1 = k0 + OPF_RED_RB < nr ? k0 + OPF_RED_RB : nr;
    for (int64_t j = 0; j < w; j++) t[j] = 0;
    for (int64_t k = k0; k < k1; k++) {
      const RT *xr = x + k * ld;
      if (y) {
        RT *yr = y + k * ld;
        for (int64_t j = 0; j < w; j++) {
          RT v = RFN(opf_red_exp)(xr[j] - sub[j]);
          yr[j] = v;
          t[j] += v;
        }
      } else {
        for (int64_t j = 0; j < w; j++) t[j] += RFN(opf_red_exp)(xr[j] - sub[j]);
      }
    }
    for (int64_t j = 0; j < w; j++) acc[j] += t[j];
  }
}

OPF_RED_INLINE void RFN(opf_red_dot_cols)(const RT *restrict a, const RT *restrict b, int64_t ld,
                                          int64_t nr, int64_t w, double *restrict acc) {
  RT t[OPF_RED_CB];
  for (int64_t k0 = 0; k0 < nr; k0 += OPF_RED_RB) {
    int64_t k1 = k0 + OPF_RED_RB < nr ? k0 + OPF_RED_RB : nr;
    for (int64_t j = 0; j < w; j++) t[j] = 0;
    for (int64_t k = k0; k < k1; k++)
      for (int64_t j = 0; j < w; j++) t[j] += a[k * ld + j] * b[k * ld + j];
    for (int64_t j = 0; j < w; j++) acc[j] += t[j];
  }
}

/* Online column log-sum-exp over rows k < nr: m[j] is the running max and s[j] the sum of
 * exp(x - m[j]) so far (init: start from these rows). Chunks of about 16 KiB (in L1) get their
 * column max first, the sums are rescaled by exp(old max - new max), and the chunk is summed
 * from L1: one pass over memory with one exp per element. */
OPF_RED_INLINE void RFN(opf_red_lse_cols)(const RT *restrict x, int64_t ld, int64_t nr,
                                          int64_t w, RT *restrict m, double *restrict s,
                                          int init) {
  RT cm[OPF_RED_CB];
  int64_t rows = (16384 / (int64_t)sizeof(RT)) / (w > 0 ? w : 1);
  rows = rows < 2 ? 2 : rows > 64 ? 64 : rows;
  for (int64_t k0 = 0; k0 < nr; k0 += rows) {
    const int64_t k1 = k0 + rows < nr ? k0 + rows : nr;
    const int first = init && k0 == 0;
    memcpy(cm, first ? x + k0 * ld : m, (size_t)w * sizeof(RT));
    RFN(opf_red_ext_cols)(OPF_FOLD_MAX, x + k0 * ld, ld, k1 - k0, w, cm);
    if (first)
      for (int64_t j = 0; j < w; j++) s[j] = 0;
    else
      for (int64_t j = 0; j < w; j++) s[j] *= (double)RFN(opf_red_exp)(m[j] - cm[j]);
    memcpy(m, cm, (size_t)w * sizeof(RT));
    RFN(opf_red_exp_sum_cols)(x + k0 * ld, NULL, ld, k1 - k0, w, m, s);
  }
}

/* Row log-sum-exp of nrows contiguous rows of n: lse[r] = m + log(sum exp(x - m)), m the row
 * max (so exp never overflows). With y, also the softmax y = exp(x - m) / sum. Long rows go
 * one at a time (max, exp-and-sum, scale); short rows OPF_RED_SBLK elements at a time: row
 * maxima, expanded, one vector exp over the block, row sums, vector log, expanded scale. */
OPF_RED_INLINE void RFN(opf_red_lse_rows)(const RT *restrict x, RT *restrict y, int64_t nrows,
                                          const int64_t n, RT *restrict lse) {
  if (n >= OPF_RED_SHORT) {
    for (int64_t r = 0; r < nrows; r++) {
      const RT *xr = x + r * n;
      const RT m = RFN(opf_red_max_row)(xr, n);
      const double s = RFN(opf_red_exp_sum_row)(xr, y ? y + r * n : NULL, n, m);
      lse[r] = (RT)(m + log(s));
      if (y) {
        const RT inv = (RT)(1.0 / s);
        for (int64_t i = 0; i < n; i++) y[r * n + i] *= inv;
      }
    }
    return;
  }
  RT e[OPF_RED_SBLK], mr[OPF_RED_SBLK], sr[OPF_RED_SBLK];
  const int64_t rb = OPF_RED_SBLK / n;
  for (int64_t r0 = 0; r0 < nrows; r0 += rb) {
    const int64_t nr = nrows - r0 < rb ? nrows - r0 : rb, cnt = nr * n;
    const RT *xb = x + r0 * n;
    RFN(opf_red_short_max)(xb, nr, n, mr);
    RFN(opf_red_expand)(mr, nr, n, e);
    for (int64_t i = 0; i < cnt; i++) e[i] = RFN(opf_red_exp)(xb[i] - e[i]);
    RFN(opf_red_short_sum)(e, nr, n, sr);
    for (int64_t r = 0; r < nr; r++) lse[r0 + r] = mr[r] + RFN(opf_red_log)(sr[r]);
    if (y) {
      for (int64_t r = 0; r < nr; r++) sr[r] = 1 / sr[r];
      RFN(opf_red_expand)(sr, nr, n, mr);
      for (int64_t i = 0; i < cnt; i++) y[r0 * n + i] = e[i] * mr[i];
    }
  }
}

/* y[r, k] = exp(x[r, k] - c[r]) * g[r] for nrows contiguous rows of n (short rows through an
 * expanded block, as above). */
OPF_RED_INLINE void RFN(opf_red_exp_shift_rows)(const RT *restrict x, RT *restrict y,
                                                int64_t nrows, const int64_t n,
                                                const RT *restrict c, const RT *restrict g) {
  if (n >= OPF_RED_SHORT) {
    for (int64_t r = 0; r < nrows; r++) {
      const RT cr = c[r], gr = g[r];
      for (int64_t i = 0; i < n; i++) y[r * n + i] = RFN(opf_red_exp)(x[r * n + i] - cr) * gr;
    }
    return;
  }
  RT ec[OPF_RED_SBLK], eg[OPF_RED_SBLK];
  const int64_t rb = OPF_RED_SBLK / n;
  for (int64_t r0 = 0; r0 < nrows; r0 += rb) {
    const int64_t nr = nrows - r0 < rb ? nrows - r0 : rb, cnt = nr * n;
    RFN(opf_red_expand)(c + r0, nr, n, ec);
    RFN(opf_red_expand)(g + r0, nr, n, eg);
    for (int64_t i = 0; i < cnt; i++)
      y[r0 * n + i] = RFN(opf_red_exp)(x[r0 * n + i] - ec[i]) * eg[i];
  }
}
#endif

#undef RFN
#undef RCAT_
#undef RCAT2_
#undef RT
#undef RL
#undef RA
#undef RFLOAT
#undef RF32
#undef RSUF
