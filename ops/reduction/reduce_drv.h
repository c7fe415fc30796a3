/* reduce_drv.h: template of the reduction drivers for one dtype, included by reduce.c with
 * RT/RL/RA/RX/RFLOAT/RSUF defined (RX: an index lane as wide as RT): the vectorised task kernels (rows and column blocks), the
 * combine of per-segment partials, and the backward kernels. Undefines them at the end. */

#define RCAT2_(a, b) a##_##b
#define RCAT_(a, b) RCAT2_(a, b)
#define RFN(name) RCAT_(name, RSUF)

/* Final value of a sum: integers wrap to the output width; floats are scaled (1 or 1/n). */
#if RFLOAT
#define RED_OUT(a, scale) ((RT)((a) * (scale)))
#else
#define RED_OUT(a, scale) ((RT)(RL)(a))
#endif

/* Short rows of a length known at compile time (each case of OPF_RED_SHORT_LENGTHS): the row
 * is unrolled and GCC vectorises across rows, instead of one short dependent chain per row.
 * Writes final outputs (short rows are never split into segments). */
OPF_RED_INLINE void RFN(red_short_rows)(const red_plan *p, const RT *restrict x, int64_t nrows,
                                        const int64_t len, RT *restrict y, int64_t *restrict yi) {
  switch (p->kind) {
  case RED_SUM:
  case RED_MEAN: {
    RL s[OPF_RED_SBLK];
    for (int64_t r0 = 0; r0 < nrows; r0 += OPF_RED_SBLK) {
      const int64_t nr = nrows - r0 < OPF_RED_SBLK ? nrows - r0 : OPF_RED_SBLK;
      RFN(opf_red_short_sum)(x + r0 * len, nr, len, s);
      for (int64_t r = 0; r < nr; r++) y[r0 + r] = RED_OUT((RA)s[r], p->scale);
    }
    break;
  }
  case RED_MAX:
    RFN(opf_red_short_max)(x, nrows, len, y);
    break;
  default: /* RED_ARGMAX: the max, then its first position by a reverse select (no branches
            * on the data, which random rows would mispredict) */
    for (int64_t r = 0; r < nrows; r++) {
      const RT *xr = x + r * len;
      RT m = xr[0];
      for (int64_t k = 1; k < len; k++) m = xr[k] > m ? xr[k] : m;
      int64_t b = len - 1;
      for (int64_t k = len - 2; k >= 0; k--) b = xr[k] >= m ? k : b; /* >= m is == m */
      yi[r] = b;
    }
    break;
  }
}

/* Contiguous rows: reduce nrows rows (stride p->g.n) of len elements starting at x (segment
 * offset k0). fin: write the operator's output (dv values, or di indices for argmax);
 * otherwise partials (dv as RA for sums or RT for max/argmax, di indices). */
OPF_VEC static void RFN(red_rows)(const red_plan *p, const RT *restrict x, int64_t nrows,
                                  int64_t len, int64_t k0, void *dv, int64_t *di, int fin) {
  const int64_t ld = p->g.n;
  if (fin && len == ld) {
#define RED_SHORT_CASE(N)                                                                     \
  case N: RFN(red_short_rows)(p, x, nrows, N, dv, di); return;
    switch (len) { OPF_RED_SHORT_LENGTHS(RED_SHORT_CASE) default: break; }
#undef RED_SHORT_CASE
  }
  switch (p->kind) {
  case RED_SUM:
  case RED_MEAN:
    for (int64_t r = 0; r < nrows; r++) {
      RA a = RFN(opf_red_sum_row)(x + r * ld, len);
      if (fin) ((RT *)dv)[r] = RED_OUT(a, p->scale);
      else ((RA *)dv)[r] = a;
    }
    break;
  case RED_MAX:
    for (int64_t r = 0; r < nrows; r++) ((RT *)dv)[r] = RFN(opf_red_max_row)(x + r * ld, len);
    break;
  default: /* RED_ARGMAX */
    for (int64_t r = 0; r < nrows; r++) {
      RT v;
      di[r] = RFN(opf_red_argmax_row)(x + r * ld, len, &v) + k0;
      if (!fin) ((RT *)dv)[r] = v;
    }
    break;
  }
}

/* One column block: reduce len rows (stride inner) of w columns starting at x. With p->m > 1
 * (then w == inner), groups of m rows are reduced as one wide row of m*w elements, the m
 * partials per column folded afterwards, and the len % m remaining rows added last. */
OPF_VEC static void RFN(red_cols)(const red_plan *p, const RT *restrict x, int64_t len, int64_t w,
                                  int64_t k0, void *dv, int64_t *di, int fin) {
  const int64_t inner = p->g.inner;
  int64_t m = p->m, ng = len / m;
  if (ng == 0) m = 1, ng = len; /* fewer rows than one wide row */
  const int64_t L = m * w, ld = m * inner, rem = len - ng * m;
  const RT *xr = x + ng * ld; /* the remaining rows */
  switch (p->kind) {
  case RED_SUM:
  case RED_MEAN: {
    RA acc[OPF_RED_CB];
    for (int64_t t = 0; t < L; t++) acc[t] = 0;
    RFN(opf_red_sum_cols)(x, ld, ng, L, acc);
    RFN(opf_red_sum_cols)(xr, inner, rem, w, acc);
    for (int64_t g = 1; g < m; g++)
      for (int64_t j = 0; j < w; j++) acc[j] += acc[g * w + j];
    if (fin)
      for (int64_t j = 0; j < w; j++) ((RT *)dv)[j] = RED_OUT(acc[j], p->scale);
    else
      memcpy(dv, acc, (size_t)w * sizeof(RA));
    break;
  }
  case RED_MAX: {
    RT acc[OPF_RED_CB];
    memcpy(acc, x, (size_t)L * sizeof(RT));
    RFN(opf_red_max_cols)(x + ld, ld, ng - 1, L, acc);
    RFN(opf_red_max_cols)(xr, inner, rem, w, acc);
    for (int64_t g = 1; g < m; g++)
      for (int64_t j = 0; j < w; j++) acc[j] = acc[g * w + j] > acc[j] ? acc[g * w + j] : acc[j];
    memcpy(dv, acc, (size_t)w * sizeof(RT));
    break;
  }
  default: { /* RED_ARGMAX */
    RT bv[OPF_RED_CB];
    int64_t bi[OPF_RED_CB];
    RFN(opf_red_argmax_cols)(x, ld, ng, L, bv, bi, 0, 1);
    /* wide row q, sub-row g is row q*m + g: merge by value, then by the lowest row */
    if (m > 1)
      for (int64_t j = 0; j < w; j++) bi[j] *= m;
    for (int64_t g = 1; g < m; g++)
      for (int64_t j = 0; j < w; j++) {
        const int64_t row = bi[g * w + j] * m + g;
        if (bv[g * w + j] > bv[j] || (bv[g * w + j] == bv[j] && row < bi[j]))
          bv[j] = bv[g * w + j], bi[j] = row;
      }
    RFN(opf_red_argmax_cols)(xr, inner, rem, w, bv, bi, ng * m, 0);
    for (int64_t j = 0; j < w; j++) di[j] = bi[j] + k0;
    if (!fin) memcpy(dv, bv, (size_t)w * sizeof(RT));
    break;
  }
  }
}

/* Task t of the plan: outer block x column block x segment (segment fastest). */
static void RFN(red_task)(const red_run *r, int64_t t) {
  const red_plan *p = r->p;
  const int64_t n = p->g.n, inner = p->g.inner, outer = p->g.outer;
  const int64_t s = t % p->S, rest = t / p->S, cb = rest % p->ncb, ob = rest / p->ncb;
  const int64_t o0 = ob * p->ochunk, o1 = o0 + p->ochunk < outer ? o0 + p->ochunk : outer;
  const int64_t k0 = s * p->seg, len = (k0 + p->seg < n ? k0 + p->seg : n) - k0;
  const int fin = p->S == 1, sums = p->kind == RED_SUM || p->kind == RED_MEAN;
  const int64_t j0 = cb * p->cbw, w = inner - j0 < p->cbw ? inner - j0 : p->cbw;
  const RT *x = r->x;
  for (int64_t o = o0; o < (inner == 1 ? o0 + 1 : o1); o++) {
    /* output element of (o, j0), and where its value / index goes */
    const int64_t e = o * inner + j0, pe = (int64_t)s * p->nout + e;
    void *dv = NULL;
    int64_t *di = NULL;
    if (fin) {
      if (p->kind == RED_ARGMAX) di = (int64_t *)r->out + e;
      else dv = (RT *)r->out + e;
    } else {
      dv = (char *)r->pv + (size_t)pe * (sums ? sizeof(RA) : sizeof(RT));
      if (r->pi) di = r->pi + pe;
    }
    if (inner == 1)
      RFN(red_rows)(p, x + o * n + k0, o1 - o0, len, k0, dv, di, fin);
    else
      RFN(red_cols)(p, x + (o * n + k0) * inner + j0, len, w, k0, dv, di, fin);
  }
}

/* Combine the S segment partials of every output element, in segment order (so argmax keeps
 * the first maximum). */
static void RFN(red_finish)(const red_run *r) {
  const red_plan *p = r->p;
  const int64_t no = p->nout, S = p->S;
  switch (p->kind) {
  case RED_SUM:
  case RED_MEAN: {
    const RA *pv = r->pv;
    for (int64_t e = 0; e < no; e++) {
      RA a = pv[e];
      for (int64_t s = 1; s < S; s++) a += pv[s * no + e];
      ((RT *)r->out)[e] = RED_OUT(a, p->scale);
    }
    break;
  }
  case RED_MAX: {
    const RT *pv = r->pv;
    for (int64_t e = 0; e < no; e++) {
      RT v = pv[e];
      for (int64_t s = 1; s < S; s++) v = pv[s * no + e] > v ? pv[s * no + e] : v;
      ((RT *)r->out)[e] = v;
    }
    break;
  }
  default: { /* RED_ARGMAX */
    const RT *pv = r->pv;
    for (int64_t e = 0; e < no; e++) {
      RT v = pv[e];
      int64_t i = r->pi[e];
      for (int64_t s = 1; s < S; s++)
        if (pv[s * no + e] > v) v = pv[s * no + e], i = r->pi[s * no + e];
      ((int64_t *)r->out)[e] = i;
    }
    break;
  }
  }
}

#if RFLOAT
/* dx[o*n + k] = s * dy[o] for whole rows [o0, o1) of a listed short length n. */
OPF_RED_INLINE void RFN(red_bcast_short)(const RT *restrict dy, RT *restrict dx, RT s,
                                         const int64_t n, int64_t o0, int64_t o1) {
  for (int64_t o = o0; o < o1; o++)
    for (int64_t k = 0; k < n; k++) dx[o * n + k] = s * dy[o];
}

/* Backward of sum and mean over flat dx elements [lo, hi): dx[o, k, j] = s * dy[o, j]. The
 * period-inner pattern of short inner extents is expanded once per outer block so the copy
 * runs in whole vectors; whole short rows (inner 1) go through red_bcast_short. */
OPF_VEC static void RFN(red_bcast)(const opf_rgeom *g, const RT *restrict dy, RT *restrict dx,
                                   RT s, int64_t lo, int64_t hi) {
  const int64_t inner = g->inner, blk = g->n * inner;
  if (inner == 1 && blk > 0 && lo % blk == 0 && hi % blk == 0) {
#define RED_SHORT_CASE(N)                                                                     \
  case N: RFN(red_bcast_short)(dy, dx, s, N, lo / N, hi / N); return;
    switch (blk) { OPF_RED_SHORT_LENGTHS(RED_SHORT_CASE) default: break; }
#undef RED_SHORT_CASE
  }
  RT pat[2 * OPF_RED_WIDE];
  for (int64_t e = lo; e < hi;) {
    const int64_t o = e / blk, off = e - o * blk;
    const int64_t end = hi - o * blk < blk ? hi - o * blk : blk;
    RT *restrict d = dx + o * blk;
    const RT *restrict v = dy + o * inner;
    if (inner == 1) {
      const RT c = s * v[0];
      for (int64_t i = off; i < end; i++) d[i] = c;
    } else {
      const RT *src = v;
      int64_t period = inner;
      int scale_now = 1;
      if (inner < OPF_RED_WIDE && end - off >= 4 * OPF_RED_WIDE) {
        period = opf_red_wide_m(inner) * inner;
        for (int64_t t = 0; t < period; t++) pat[t] = s * v[t % inner];
        src = pat;
        scale_now = 0;
      }
      for (int64_t i = off, j = off % inner; i < end; j = 0) {
        const int64_t cnt = end - i < period - j ? end - i : period - j;
        if (scale_now)
          for (int64_t q = 0; q < cnt; q++) d[i + q] = s * src[j + q];
        else
          for (int64_t q = 0; q < cnt; q++) d[i + q] = src[j + q];
        i += cnt;
      }
    }
    e = o * blk + end;
  }
}

/* Backward of max, rows [o0, o1) of dx when inner == 1: the forward's y[o] is exactly the
 * row's largest element, so only its first position is searched (early exit, vectorised; short
 * rows by a branch-free reverse select); blocks of about 8192 elements are zeroed and get dy
 * at those positions while still in L1. */
OPF_VEC static void RFN(red_max_bwd_rows)(const opf_rgeom *g, const RT *restrict x,
                                          const RT *restrict y, const RT *restrict dy,
                                          RT *restrict dx, int64_t o0, int64_t o1) {
  const int64_t n = g->n, blk = n < 8192 ? 8192 / n : 1;
  for (int64_t b0 = o0; b0 < o1; b0 += blk) {
    const int64_t b1 = b0 + blk < o1 ? b0 + blk : o1;
    memset(dx + b0 * n, 0, (size_t)((b1 - b0) * n) * sizeof(RT));
    for (int64_t o = b0; o < b1; o++) {
      const RT *xr = x + o * n;
      int64_t k = n - 1;
      if (n >= OPF_RED_SHORT)
        k = RFN(opf_red_find)(xr, n, y[o]);
      else
        for (int64_t i = n - 2; i >= 0; i--) k = xr[i] >= y[o] ? i : k; /* >= max is == max */
      dx[o * n + k] = dy[o];
    }
  }
}

/* Backward of max, general geometry, one (outer index, column block): idx[j] = the first row
 * k with x[k, j] == y[j] (the forward's exact max). A column that found its row stops
 * changing; without the wide view the scan stops once every column has found it. Wide view:
 * each of the m sub-row lanes of a column finds its own first wide row, the lowest actual row
 * wins, and the n % m remaining rows are searched last. */
OPF_VEC static void RFN(red_max_find_cols)(const red_plan *p, const RT *restrict x,
                                           const RT *restrict y, int64_t w,
                                           int64_t *restrict idx) {
  /* row indices in lanes as wide as RT (n < 2^31 for 4-byte types, checked by the caller) */
  const int64_t n = p->g.n, inner = p->g.inner;
  const RX nf = (RX)(sizeof(RX) == 4 ? INT32_MAX : INT64_MAX); /* not found */
  int64_t m = p->m, ng = n / m;
  if (ng == 0) m = 1, ng = n;
  const int64_t L = m * w, ld = m * inner, rem = n - ng * m;
  RT yp[OPF_RED_CB];
  RX ci[OPF_RED_CB];
  for (int64_t g = 0; g < m; g++) memcpy(yp + g * w, y, (size_t)w * sizeof(RT));
  for (int64_t t = 0; t < L; t++) ci[t] = nf;
  for (int64_t q0 = 0; q0 < ng; q0 += 16) {
    const int64_t q1 = q0 + 16 < ng ? q0 + 16 : ng;
    for (int64_t q = q0; q < q1; q++) {
      const RT *r = x + q * ld;
      const RX qq = (RX)q;
      for (int64_t t = 0; t < L; t++) ci[t] = (ci[t] == nf) & (r[t] == yp[t]) ? qq : ci[t];
    }
    int open = 0;
    for (int64_t t = 0; t < L; t++) open |= ci[t] == nf;
    if (!open) break;
  }
  for (int64_t j = 0; j < w; j++) idx[j] = ci[j] == nf ? INT64_MAX : (int64_t)ci[j] * m;
  for (int64_t g = 1; g < m; g++)
    for (int64_t j = 0; j < w; j++) {
      const int64_t row = ci[g * w + j] == nf ? INT64_MAX : (int64_t)ci[g * w + j] * m + g;
      idx[j] = row < idx[j] ? row : idx[j];
    }
  for (int64_t k = 0; k < rem; k++) {
    const RT *r = x + ng * ld + k * inner;
    for (int64_t j = 0; j < w; j++)
      idx[j] = (idx[j] == INT64_MAX) & (r[j] == y[j]) ? ng * m + k : idx[j];
  }
}

/* ... and the scatter after dx was zeroed as a whole (general geometry), elements [e0, e1). */
static void RFN(red_max_scatter)(const opf_rgeom *g, const int64_t *idx, const RT *dy, RT *dx,
                                 int64_t e0, int64_t e1) {
  int64_t o = e0 / g->inner, j = e0 - o * g->inner;
  for (int64_t e = e0; e < e1; e++) {
    dx[(o * g->n + idx[e]) * g->inner + j] = dy[e];
    if (++j == g->inner) j = 0, o++;
  }
}
#endif

#undef RED_OUT
#undef RFN
#undef RCAT_
#undef RCAT2_
#undef RT
#undef RL
#undef RA
#undef RX
#undef RFLOAT
#undef RSUF
