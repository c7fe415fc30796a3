/* softmax_drv.h: template of the softmax / log_softmax kernels for one float dtype, included
 * by ops/activation/softmax_kernels.c with RT and RSUF defined (undefined at the end); the
 * entry points opf_sm_{rows,cols}_{fwd,bwd}_RSUF are declared in softmax_common.h. Contiguous
 * rows (inner 1) use the row log-sum-exp of reduce_lanes.h; outer axes stream rows through
 * L1-resident column vectors, with the wide-row view for short inner extents. */

#define RCAT2_(a, b) a##_##b
#define RCAT_(a, b) RCAT2_(a, b)
#define RFN(name) RCAT_(name, RSUF)

/* ---- contiguous rows ---- */

/* y[r, k] = x[r, k] - c[r] (log_softmax from the row log-sum-exp). */
OPF_RED_INLINE void RFN(sm_sub_rows)(const RT *restrict x, RT *restrict y, int64_t nrows,
                                     const int64_t n, const RT *restrict c) {
  if (n >= OPF_RED_SHORT) {
    for (int64_t r = 0; r < nrows; r++)
      for (int64_t k = 0; k < n; k++) y[r * n + k] = x[r * n + k] - c[r];
    return;
  }
  RT e[OPF_RED_SBLK];
  const int64_t rb = OPF_RED_SBLK / n;
  for (int64_t r0 = 0; r0 < nrows; r0 += rb) {
    const int64_t nr = nrows - r0 < rb ? nrows - r0 : rb;
    RFN(opf_red_expand)(c + r0, nr, n, e);
    for (int64_t i = 0; i < nr * n; i++) y[r0 * n + i] = x[r0 * n + i] - e[i];
  }
}

OPF_RED_INLINE void RFN(sm_rows_fwd_n)(const RT *restrict x, RT *restrict y, int64_t nrows,
                                       const int64_t n, int lg) {
  RT lse[OPF_RED_SBLK];
  for (int64_t r0 = 0; r0 < nrows; r0 += OPF_RED_SBLK) {
    const int64_t nr = nrows - r0 < OPF_RED_SBLK ? nrows - r0 : OPF_RED_SBLK;
    RFN(opf_red_lse_rows)(x + r0 * n, lg ? NULL : y + r0 * n, nr, n, lse);
    if (lg) RFN(sm_sub_rows)(x + r0 * n, y + r0 * n, nr, n, lse);
  }
}

/* softmax: dx = y * (dy - sum(dy * y)); log_softmax: dx = dy - exp(y) * sum(dy), per row. */
OPF_RED_INLINE void RFN(sm_rows_bwd_n)(const RT *restrict y, const RT *restrict dy,
                                       RT *restrict dx, int64_t nrows, const int64_t n, int lg) {
  if (n >= OPF_RED_SHORT) {
    for (int64_t r = 0; r < nrows; r++) {
      const RT *yr = y + r * n, *gr = dy + r * n;
      RT *xr = dx + r * n;
      const RT s = (RT)(lg ? RFN(opf_red_sum_row)(gr, n) : RFN(opf_red_dot_row)(gr, yr, n));
      if (lg)
        for (int64_t k = 0; k < n; k++) xr[k] = gr[k] - RFN(opf_red_exp)(yr[k]) * s;
      else
        for (int64_t k = 0; k < n; k++) xr[k] = yr[k] * (gr[k] - s);
    }
    return;
  }
  RT t[OPF_RED_SBLK], s[OPF_RED_SBLK];
  const int64_t rb = OPF_RED_SBLK / n;
  for (int64_t r0 = 0; r0 < nrows; r0 += rb) {
    const int64_t nr = nrows - r0 < rb ? nrows - r0 : rb, cnt = nr * n, o = r0 * n;
    if (lg) {
      RFN(opf_red_short_sum)(dy + o, nr, n, s);
    } else {
      for (int64_t i = 0; i < cnt; i++) t[i] = dy[o + i] * y[o + i];
      RFN(opf_red_short_sum)(t, nr, n, s);
    }
    RFN(opf_red_expand)(s, nr, n, t);
    if (lg)
      for (int64_t i = 0; i < cnt; i++) dx[o + i] = dy[o + i] - RFN(opf_red_exp)(y[o + i]) * t[i];
    else
      for (int64_t i = 0; i < cnt; i++) dx[o + i] = y[o + i] * (dy[o + i] - t[i]);
  }
}

OPF_VEC void RFN(opf_sm_rows_fwd)(const RT *restrict x, RT *restrict y, int64_t nrows,
                                     int64_t n, int lg) {
#define SM_CASE(N)                                                                            \
  case N: RFN(sm_rows_fwd_n)(x, y, nrows, N, lg); return;
  switch (n) { OPF_RED_SHORT_LENGTHS(SM_CASE) default: break; }
#undef SM_CASE
  RFN(sm_rows_fwd_n)(x, y, nrows, n, lg);
}

OPF_VEC void RFN(opf_sm_rows_bwd)(const RT *restrict y, const RT *restrict dy, RT *restrict dx,
                                     int64_t nrows, int64_t n, int lg) {
#define SM_CASE(N)                                                                            \
  case N: RFN(sm_rows_bwd_n)(y, dy, dx, nrows, N, lg); return;
  switch (n) { OPF_RED_SHORT_LENGTHS(SM_CASE) default: break; }
#undef SM_CASE
  RFN(sm_rows_bwd_n)(y, dy, dx, nrows, n, lg);
}

/* ---- outer axes: one column block [j0, j0 + w) of one outer index ----
 * Rows k < n of stride inner. With the wide view (m > 1, then w == inner), groups of m rows are
 * one row of L = m*w elements whose per-column vectors are the w-periodic pattern; the
 * n % m remaining rows use the first w entries. */
typedef struct RFN(sm_view) {
  int64_t m, ng, L, ldw, rem, off; /* off: element offset of the remaining rows */
} RFN(sm_view);

OPF_RED_INLINE RFN(sm_view) RFN(sm_view_make)(int64_t n, int64_t inner, int64_t m, int64_t w) {
  RFN(sm_view) v;
  v.m = m;
  v.ng = n / m;
  if (v.ng == 0) v.m = 1, v.ng = n; /* fewer rows than one wide row */
  v.L = v.m * w;
  v.ldw = v.m * inner;
  v.rem = n - v.ng * v.m;
  v.off = v.ng * v.ldw;
  return v;
}

/* fold the m sub-columns of a wide-view vector into its first w entries, then repeat them */
OPF_RED_INLINE void RFN(sm_fold_sum)(double *restrict a, int64_t m, int64_t w) {
  for (int64_t g = 1; g < m; g++)
    for (int64_t j = 0; j < w; j++) a[j] += a[g * w + j];
}
OPF_RED_INLINE void RFN(sm_repeat)(RT *restrict a, int64_t m, int64_t w) {
  for (int64_t g = 1; g < m; g++) memcpy(a + g * w, a, (size_t)w * sizeof(RT));
}

OPF_VEC void RFN(opf_sm_cols_fwd)(const RT *restrict x, RT *restrict y, int64_t n,
                                     int64_t inner, int64_t m, int64_t w, int lg) {
  const RFN(sm_view) v = RFN(sm_view_make)(n, inner, m, w);
  RT cm[OPF_RED_CB];
  double cs[OPF_RED_CB];
  /* column max */
  memcpy(cm, x, (size_t)v.L * sizeof(RT));
  RFN(opf_red_max_cols)(x + v.ldw, v.ldw, v.ng - 1, v.L, cm);
  RFN(opf_red_max_cols)(x + v.off, inner, v.rem, w, cm);
  for (int64_t g = 1; g < v.m; g++)
    for (int64_t j = 0; j < w; j++) cm[j] = cm[g * w + j] > cm[j] ? cm[g * w + j] : cm[j];
  RFN(sm_repeat)(cm, v.m, w);
  /* column sums of exp(x - max), stored for softmax */
  for (int64_t t = 0; t < v.L; t++) cs[t] = 0;
  RFN(opf_red_exp_sum_cols)(x, lg ? NULL : y, v.ldw, v.ng, v.L, cm, cs);
  RFN(opf_red_exp_sum_cols)(x + v.off, lg ? NULL : y + v.off, inner, v.rem, w, cm, cs);
  RFN(sm_fold_sum)(cs, v.m, w);
  /* softmax: y *= 1 / sum; log_softmax: y = x - (max + log sum) */
  if (lg)
    for (int64_t j = 0; j < w; j++) cm[j] += RFN(opf_red_log)((RT)cs[j]);
  else
    for (int64_t j = 0; j < w; j++) cm[j] = (RT)(1.0 / cs[j]);
  RFN(sm_repeat)(cm, v.m, w);
  for (int64_t k = 0; k < v.ng + v.rem; k++) {
    const int64_t o = k < v.ng ? k * v.ldw : v.off + (k - v.ng) * inner, cnt = k < v.ng ? v.L : w;
    if (lg)
      for (int64_t j = 0; j < cnt; j++) y[o + j] = x[o + j] - cm[j];
    else
      for (int64_t j = 0; j < cnt; j++) y[o + j] *= cm[j];
  }
}

OPF_VEC void RFN(opf_sm_cols_bwd)(const RT *restrict y, const RT *restrict dy,
                                     RT *restrict dx, int64_t n, int64_t inner, int64_t m,
                                     int64_t w, int lg) {
  const RFN(sm_view) v = RFN(sm_view_make)(n, inner, m, w);
  double cs[OPF_RED_CB];
  RT s[OPF_RED_CB];
  for (int64_t t = 0; t < v.L; t++) cs[t] = 0;
  if (lg) {
    RFN(opf_red_sum_cols)(dy, v.ldw, v.ng, v.L, cs);
    RFN(opf_red_sum_cols)(dy + v.off, inner, v.rem, w, cs);
  } else {
    RFN(opf_red_dot_cols)(dy, y, v.ldw, v.ng, v.L, cs);
    RFN(opf_red_dot_cols)(dy + v.off, y + v.off, inner, v.rem, w, cs);
  }
  RFN(sm_fold_sum)(cs, v.m, w);
  for (int64_t j = 0; j < w; j++) s[j] = (RT)cs[j];
  RFN(sm_repeat)(s, v.m, w);
  for (int64_t k = 0; k < v.ng + v.rem; k++) {
    const int64_t o = k < v.ng ? k * v.ldw : v.off + (k - v.ng) * inner, cnt = k < v.ng ? v.L : w;
    if (lg)
      for (int64_t j = 0; j < cnt; j++) dx[o + j] = dy[o + j] - RFN(opf_red_exp)(y[o + j]) * s[j];
    else
      for (int64_t j = 0; j < cnt; j++) dx[o + j] = y[o + j] * (dy[o + j] - s[j]);
  }
}

#undef RFN
#undef RCAT_
#undef RCAT2_
#undef RT
#undef RSUF
