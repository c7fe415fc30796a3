/* reduce_drv.h: template of the reduction drivers for one dtype, included by reduce.c with
 * RT/RL/RA/RX/RFLOAT/RBOOL/RSUF defined (RX: an index lane as wide as RT; RBOOL: bool input,
 * all / any only): the vectorised task kernels (rows and column blocks) for every kind
 * class (fold, extreme, arg, variance, log-sum-exp), the combine of per-segment partials, and the backward kernels. A kind only
 * names its fold op (reduce.h) and its final value here. Undefines the macros at the end. */

#define RCAT2_(a, b) a##_##b
#define RCAT_(a, b) RCAT2_(a, b)
#define RFN(name) RCAT_(name, RSUF)

/* Fold ops of each class this dtype compiles, X(op): one instantiation per op (sum and mean
 * share theirs; the kind only changes the final value). Bool inputs only have all / any. */
#if RFLOAT
#define RED_FOLD_OPS(X)                                                                        \
  X(OPF_FOLD_ADD) X(OPF_FOLD_NANADD) X(OPF_FOLD_ABSADD) X(OPF_FOLD_SQADD) X(OPF_FOLD_MUL)      \
  X(OPF_FOLD_NANMUL)
#elif RBOOL
#define RED_FOLD_OPS(X)
#else
#define RED_FOLD_OPS(X) X(OPF_FOLD_ADD) X(OPF_FOLD_MUL)
#endif
#if RBOOL
#define RED_EXT_OPS(X) X(OPF_FOLD_ANY) X(OPF_FOLD_ALL)
#define RED_ARG_OPS(X)
#else
#define RED_EXT_OPS(X) X(OPF_FOLD_MAX) X(OPF_FOLD_MIN) X(OPF_FOLD_ANY) X(OPF_FOLD_ALL)
#define RED_ARG_OPS(X) X(OPF_FOLD_MAX) X(OPF_FOLD_MIN)
#endif

/* ---- final values, one output element e ---- */
OPF_RED_INLINE void RFN(red_put_fold)(const red_run *r, int64_t e, RA a) {
#if RFLOAT
  ((RT *)r->out)[e] = r->p->kind == RED_L2 ? (RT)sqrt((double)a) : (RT)(a * r->p->scale);
#else
  ((RT *)r->out)[e] = (RT)(RL)a; /* integers wrap to the output width */
#endif
}

OPF_RED_INLINE void RFN(red_put_ext)(const red_run *r, const int op, int64_t e, RT v) {
  if (op == OPF_FOLD_ANY || op == OPF_FOLD_ALL) ((uint8_t *)r->out)[e] = (uint8_t)v; /* 0/1 */
  else ((RT *)r->out)[e] = v;
}

/* var / std from the shifted sums s1, s2 (shift k); the mean goes to aux for the backward. */
OPF_RED_INLINE void RFN(red_put_var)(const red_run *r, int64_t e, RA s1, RA s2, RT k) {
  const double n = (double)r->p->g.n, d1 = (double)s1 / n;
  double v = ((double)s2 - (double)s1 * d1) / (n - r->p->ddof);
  v = v > 0 ? v : 0;
  ((RT *)r->aux)[e] = (RT)((double)k + d1);
  ((RT *)r->out)[e] = (RT)(r->p->kind == RED_STD ? sqrt(v) : v);
}

OPF_RED_INLINE void RFN(red_put_lse)(const red_run *r, int64_t e, double m, double s) {
  ((RT *)r->out)[e] = (RT)(m + log(s));
}

/* ---- emit cnt results from output element e of segment s: final values when the axis is
 * not split (S == 1), else partials (pa: RA for folds, variance and lse, RT for extremes and
 * args; pb: the second value of variance and lse; pi: arg indices) ---- */
OPF_RED_INLINE void RFN(red_emit_fold)(const red_run *r, const RA *a, int64_t cnt, int64_t e,
                                       int64_t s) {
  if (r->p->S == 1) { /* hoisted: per-element addressing through r makes GCC scatter */
    RT *restrict y = (RT *)r->out + e;
#if RFLOAT
    const double sc = r->p->scale;
    if (r->p->kind == RED_L2)
      for (int64_t i = 0; i < cnt; i++) y[i] = (RT)sqrt((double)a[i]);
    else
      for (int64_t i = 0; i < cnt; i++) y[i] = (RT)(a[i] * sc);
#else
    for (int64_t i = 0; i < cnt; i++) y[i] = (RT)(RL)a[i];
#endif
  } else
    memcpy((RA *)r->pa + s * r->p->nout + e, a, (size_t)cnt * sizeof(RA));
}

OPF_RED_INLINE void RFN(red_emit_ext)(const red_run *r, const int op, const RT *v, int64_t cnt,
                                      int64_t e, int64_t s) {
  if (r->p->S == 1) {
    if (op == OPF_FOLD_ANY || op == OPF_FOLD_ALL) {
      uint8_t *restrict y = (uint8_t *)r->out + e;
      for (int64_t i = 0; i < cnt; i++) y[i] = (uint8_t)v[i]; /* 0 or 1 */
    } else {
      memcpy((RT *)r->out + e, v, (size_t)cnt * sizeof(RT));
    }
  } else
    memcpy((RT *)r->pa + s * r->p->nout + e, v, (size_t)cnt * sizeof(RT));
}

OPF_RED_INLINE void RFN(red_emit_arg)(const red_run *r, const RT *v, const int64_t *idx,
                                      int64_t cnt, int64_t e, int64_t s) {
  if (r->p->S == 1) {
    memcpy((int64_t *)r->out + e, idx, (size_t)cnt * sizeof(int64_t));
  } else {
    memcpy((RT *)r->pa + s * r->p->nout + e, v, (size_t)cnt * sizeof(RT));
    memcpy(r->pi + s * r->p->nout + e, idx, (size_t)cnt * sizeof(int64_t));
  }
}

OPF_RED_INLINE void RFN(red_emit_var)(const red_run *r, const RA *a, const RA *b, const RT *k,
                                      int64_t cnt, int64_t e, int64_t s) {
  if (r->p->S == 1) { /* red_put_var with the pointers and constants hoisted */
    RT *restrict y = (RT *)r->out + e, *restrict mu = (RT *)r->aux + e;
    const double in = 1.0 / (double)r->p->g.n, idn = 1.0 / ((double)r->p->g.n - r->p->ddof);
    for (int64_t i = 0; i < cnt; i++) {
      const double d1 = (double)a[i] * in, v = ((double)b[i] - (double)a[i] * d1) * idn;
      mu[i] = (RT)((double)k[i] + d1);
      y[i] = (RT)(v > 0 ? v : 0);
    }
    if (r->p->kind == RED_STD)
      for (int64_t i = 0; i < cnt; i++) y[i] = (RT)sqrt((double)y[i]);
  } else {
    memcpy((RA *)r->pa + s * r->p->nout + e, a, (size_t)cnt * sizeof(RA));
    memcpy((RA *)r->pb + s * r->p->nout + e, b, (size_t)cnt * sizeof(RA));
  }
}

OPF_RED_INLINE void RFN(red_emit_lse)(const red_run *r, const RT *m, const double *sm,
                                      int64_t cnt, int64_t e, int64_t s) {
  if (r->p->S == 1) {
    for (int64_t i = 0; i < cnt; i++) RFN(red_put_lse)(r, e + i, (double)m[i], sm[i]);
  } else {
    for (int64_t i = 0; i < cnt; i++) {
      ((double *)r->pa)[s * r->p->nout + e + i] = (double)m[i];
      ((double *)r->pb)[s * r->p->nout + e + i] = sm[i];
    }
  }
}

/* t[k*R + i] = x[i*n + k] for i < nr: nr short rows of n transposed into n rows of stride
 * R = RED_TR_R(n), so the column kernels reduce them with whole vectors across rows. In the
 * listed lengths n and R are compile-time constants: unrolled, no index arithmetic. */
#define RED_TR_R(n) (OPF_RED_SBLK * 4 / (n) < OPF_RED_CB ? OPF_RED_SBLK * 4 / (n) : OPF_RED_CB)
OPF_RED_INLINE void RFN(red_tr_n)(const RT *restrict x, int64_t nr, const int64_t n,
                                  RT *restrict t) {
  const int64_t R = RED_TR_R(n);
  for (int64_t i = 0; i < nr; i++)
    for (int64_t k = 0; k < n; k++) t[k * R + i] = x[i * n + k];
}

OPF_RED_INLINE void RFN(red_tr)(const RT *restrict x, int64_t nr, int64_t n, RT *restrict t) {
#define RED_SHORT_CASE(N)                                                                     \
  case N: RFN(red_tr_n)(x, nr, N, t); return;
  switch (n) { OPF_RED_SHORT_LENGTHS(RED_SHORT_CASE) default: break; }
#undef RED_SHORT_CASE
  RFN(red_tr_n)(x, nr, n, t);
}

OPF_VEC static void RFN(red_cols)(const red_run *r, const RT *restrict x, int64_t inner, int64_t m,
                                  int64_t len, int64_t w, int64_t k0, int64_t e, int64_t s);

/* Contiguous rows: reduce nrows rows (stride p->g.n) of len elements starting at x (segment s
 * at offset k0 of the axis), results for output elements from e. */
#define RED_RCH 256 /* rows per batch of results */
OPF_VEC static void RFN(red_rows)(const red_run *r, const RT *restrict x, int64_t nrows,
                                  int64_t len, int64_t k0, int64_t e, int64_t s) {
  const red_plan *p = r->p;
  const int64_t ld = p->g.n;
  if (p->S == 1 && len == ld && len < OPF_RED_SHORT) {
    /* short whole rows: 16 at a time in registers where reduce.c's kernel takes them, else
     * blocks transposed in L1, then reduced as columns (rows of one element already are one
     * such row) */
    if (RED_ROWS16(x, nrows, len, p, (RT *)r->out + e)) return;
    RT t[OPF_RED_SBLK * 4];
    const int64_t R = RED_TR_R(len);
    for (int64_t r0 = 0; r0 < nrows; r0 += R) {
      const int64_t nr = nrows - r0 < R ? nrows - r0 : R;
      if (len == 1) {
        RFN(red_cols)(r, x + r0, 1, 1, 1, nr, 0, e + r0, 0);
        continue;
      }
      RFN(red_tr)(x + r0 * len, nr, len, t);
      RFN(red_cols)(r, t, R, 1, len, nr, 0, e + r0, 0);
    }
    return;
  }
  RA a[RED_RCH], b[RED_RCH];
  RT v[RED_RCH];
  int64_t idx[RED_RCH];
  (void)a, (void)b, (void)v, (void)idx, (void)k0;
  for (int64_t r0 = 0; r0 < nrows; r0 += RED_RCH) {
    const int64_t nr = nrows - r0 < RED_RCH ? nrows - r0 : RED_RCH;
    const RT *xb = x + r0 * ld;
    switch (red_code(p->kind)) {
#define RED_CASE(OP)                                                                           \
  case RED_CODE_FOLD(OP):                                                                      \
    for (int64_t i = 0; i < nr; i++) a[i] = RFN(opf_red_fold_row)(OP, xb + i * ld, len);       \
    RFN(red_emit_fold)(r, a, nr, e + r0, s);                                                   \
    break;
      RED_FOLD_OPS(RED_CASE)
#undef RED_CASE
#define RED_CASE(OP)                                                                           \
  case RED_CODE_EXT(OP):                                                                       \
    for (int64_t i = 0; i < nr; i++) v[i] = RFN(opf_red_ext_row)(OP, xb + i * ld, len);        \
    RFN(red_emit_ext)(r, OP, v, nr, e + r0, s);                                                \
    break;
      RED_EXT_OPS(RED_CASE)
#undef RED_CASE
#define RED_CASE(OP)                                                                           \
  case RED_CODE_ARG(OP):                                                                       \
    for (int64_t i = 0; i < nr; i++)                                                           \
      idx[i] = RFN(opf_red_arg_row)(OP, xb + i * ld, len, &v[i]) + k0;                         \
    RFN(red_emit_arg)(r, v, idx, nr, e + r0, s);                                               \
    break;
      RED_ARG_OPS(RED_CASE)
#undef RED_CASE
#if RFLOAT
    case RED_CODE_VAR: /* shift: the line's first element (the same for every segment) */
      for (int64_t i = 0; i < nr; i++) {
        v[i] = xb[i * ld - k0];
        RFN(opf_red_var_row)(xb + i * ld, len, v[i], &a[i], &b[i]);
      }
      RFN(red_emit_var)(r, a, b, v, nr, e + r0, s);
      break;
    case RED_CODE_LSE:
      for (int64_t i = 0; i < nr; i++) {
        v[i] = RFN(opf_red_max_row)(xb + i * ld, len);
        a[i] = RFN(opf_red_exp_sum_row)(xb + i * ld, NULL, len, v[i]);
      }
      RFN(red_emit_lse)(r, v, a, nr, e + r0, s);
      break;
#endif
    default: break;
    }
  }
}

/* One column block: reduce len rows (stride inner) of w columns starting at x (segment s at
 * offset k0 of the axis), results for output elements e .. e + w. With m > 1 (then
 * w == inner), groups of m rows are reduced as one wide row of m*w elements, the m partials
 * per column folded afterwards, and the len % m remaining rows added last. */
OPF_VEC static void RFN(red_cols)(const red_run *r, const RT *restrict x, int64_t inner,
                                  int64_t m, int64_t len, int64_t w, int64_t k0, int64_t e,
                                  int64_t s) {
  const red_plan *p = r->p;
  int64_t ng = len / m;
  if (ng == 0) m = 1, ng = len; /* fewer rows than one wide row */
  const int64_t L = m * w, ld = m * inner, rem = len - ng * m;
  const RT *xr = x + ng * ld; /* the remaining rows */
  (void)k0;
  switch (red_code(p->kind)) {
#define RED_CASE(OP)                                                                           \
  case RED_CODE_FOLD(OP): {                                                                    \
    RA acc[OPF_RED_CB];                                                                        \
    for (int64_t t = 0; t < L; t++) acc[t] = (RA)opf_fold_id(OP);                              \
    RFN(opf_red_fold_cols)(OP, x, ld, ng, L, acc);                                             \
    RFN(opf_red_fold_cols)(OP, xr, inner, rem, w, acc);                                        \
    for (int64_t g = 1; g < m; g++)                                                            \
      for (int64_t j = 0; j < w; j++) acc[j] = RED_COMB(OP, acc[j], acc[g * w + j]);           \
    RFN(red_emit_fold)(r, acc, w, e, s);                                                       \
    break;                                                                                     \
  }
    RED_FOLD_OPS(RED_CASE)
#undef RED_CASE
#define RED_CASE(OP)                                                                           \
  case RED_CODE_EXT(OP): {                                                                     \
    RT acc[OPF_RED_CB];                                                                        \
    for (int64_t t = 0; t < L; t++) acc[t] = RFN(opf_red_ext_map)(OP, x[t]);                   \
    RFN(opf_red_ext_cols)(OP, x + ld, ld, ng - 1, L, acc);                                     \
    RFN(opf_red_ext_cols)(OP, xr, inner, rem, w, acc);                                         \
    for (int64_t g = 1; g < m; g++)                                                            \
      for (int64_t j = 0; j < w; j++) acc[j] = RED_PICK(OP, acc[g * w + j], acc[j]);           \
    RFN(red_emit_ext)(r, OP, acc, w, e, s);                                                    \
    break;                                                                                     \
  }
    RED_EXT_OPS(RED_CASE)
#undef RED_CASE
    /* wide row q, sub-row g is row q*m + g: merge by value, then by the lowest row */
#define RED_CASE(OP)                                                                           \
  case RED_CODE_ARG(OP): {                                                                     \
    RT bv[OPF_RED_CB];                                                                         \
    int64_t bi[OPF_RED_CB];                                                                    \
    RFN(opf_red_arg_cols)(OP, x, ld, ng, L, bv, bi, 0, 1);                                     \
    if (m > 1)                                                                                 \
      for (int64_t j = 0; j < w; j++) bi[j] *= m;                                              \
    for (int64_t g = 1; g < m; g++)                                                            \
      for (int64_t j = 0; j < w; j++) {                                                        \
        const int64_t row = bi[g * w + j] * m + g;                                             \
        if (RED_BETTER(OP, bv[g * w + j], bv[j]) || (bv[g * w + j] == bv[j] && row < bi[j]))   \
          bv[j] = bv[g * w + j], bi[j] = row;                                                  \
      }                                                                                        \
    RFN(opf_red_arg_cols)(OP, xr, inner, rem, w, bv, bi, ng * m, 0);                           \
    for (int64_t j = 0; j < w; j++) bi[j] += k0;                                               \
    RFN(red_emit_arg)(r, bv, bi, w, e, s);                                                     \
    break;                                                                                     \
  }
    RED_ARG_OPS(RED_CASE)
#undef RED_CASE
#if RFLOAT
  case RED_CODE_VAR: { /* shift: the line's first row, repeated over the wide row */
    RT kv[OPF_RED_CB];
    RA a1[OPF_RED_CB], a2[OPF_RED_CB];
    const RT *first = x - k0 * inner;
    for (int64_t g = 0; g < m; g++) memcpy(kv + g * w, first, (size_t)w * sizeof(RT));
    for (int64_t t = 0; t < L; t++) a1[t] = 0, a2[t] = 0;
    RFN(opf_red_var_cols)(x, ld, ng, L, kv, a1, a2);
    RFN(opf_red_var_cols)(xr, inner, rem, w, kv, a1, a2);
    for (int64_t g = 1; g < m; g++)
      for (int64_t j = 0; j < w; j++) a1[j] += a1[g * w + j], a2[j] += a2[g * w + j];
    RFN(red_emit_var)(r, a1, a2, kv, w, e, s);
    break;
  }
  case RED_CODE_LSE: { /* the m sub-columns' (max, sum) pairs merge before the remaining rows */
    RT mm[OPF_RED_CB];
    double ss[OPF_RED_CB];
    RFN(opf_red_lse_cols)(x, ld, ng, L, mm, ss, 1);
    for (int64_t g = 1; g < m; g++)
      for (int64_t j = 0; j < w; j++) {
        const RT a = mm[j], b = mm[g * w + j], c = a > b ? a : b;
        ss[j] = ss[j] * (double)RFN(opf_red_exp)(a - c) +
                ss[g * w + j] * (double)RFN(opf_red_exp)(b - c);
        mm[j] = c;
      }
    RFN(opf_red_lse_cols)(xr, inner, rem, w, mm, ss, 0);
    RFN(red_emit_lse)(r, mm, ss, w, e, s);
    break;
  }
#endif
  default: break;
  }
}

/* Task t of the plan: outer block x column block x segment (segment fastest). */
static void RFN(red_task)(const red_run *r, int64_t t) {
  const red_plan *p = r->p;
  const int64_t n = p->g.n, inner = p->g.inner, outer = p->g.outer;
  const int64_t s = t % p->S, rest = t / p->S, cb = rest % p->ncb, ob = rest / p->ncb;
  const int64_t o0 = ob * p->ochunk, o1 = o0 + p->ochunk < outer ? o0 + p->ochunk : outer;
  const int64_t k0 = s * p->seg, len = (k0 + p->seg < n ? k0 + p->seg : n) - k0;
  const int64_t j0 = cb * p->cbw, w = inner - j0 < p->cbw ? inner - j0 : p->cbw;
  const RT *x = r->x;
  if (inner == 1) {
    RFN(red_rows)(r, x + o0 * n + k0, o1 - o0, len, k0, o0, s);
    return;
  }
  for (int64_t o = o0; o < o1; o++)
    RFN(red_cols)(r, x + (o * n + k0) * inner + j0, inner, p->m, len, w, k0, o * inner + j0, s);
}

/* Combine the S segment partials of every output element, in segment order (so the args
 * keep the first extreme). */
static void RFN(red_finish)(const red_run *r) {
  const red_plan *p = r->p;
  const int64_t no = p->nout, S = p->S;
  switch (red_code(p->kind)) {
#define RED_CASE(OP)                                                                           \
  case RED_CODE_FOLD(OP):                                                                      \
    for (int64_t e = 0; e < no; e++) {                                                         \
      const RA *pa = r->pa;                                                                    \
      RA a = pa[e];                                                                            \
      for (int64_t s = 1; s < S; s++) a = RED_COMB(OP, a, pa[s * no + e]);                     \
      RFN(red_put_fold)(r, e, a);                                                              \
    }                                                                                          \
    break;
    RED_FOLD_OPS(RED_CASE)
#undef RED_CASE
#define RED_CASE(OP)                                                                           \
  case RED_CODE_EXT(OP):                                                                       \
    for (int64_t e = 0; e < no; e++) {                                                         \
      const RT *pa = r->pa;                                                                    \
      RT v = pa[e];                                                                            \
      for (int64_t s = 1; s < S; s++) v = RED_PICK(OP, pa[s * no + e], v);                     \
      RFN(red_put_ext)(r, OP, e, v);                                                           \
    }                                                                                          \
    break;
    RED_EXT_OPS(RED_CASE)
#undef RED_CASE
#define RED_CASE(OP)                                                                           \
  case RED_CODE_ARG(OP):                                                                       \
    for (int64_t e = 0; e < no; e++) {                                                         \
      const RT *pa = r->pa;                                                                    \
      RT v = pa[e];                                                                            \
      int64_t i = r->pi[e];                                                                    \
      for (int64_t s = 1; s < S; s++)                                                          \
        if (RED_BETTER(OP, pa[s * no + e], v)) v = pa[s * no + e], i = r->pi[s * no + e];      \
      ((int64_t *)r->out)[e] = i;                                                              \
    }                                                                                          \
    break;
    RED_ARG_OPS(RED_CASE)
#undef RED_CASE
#if RFLOAT
  case RED_CODE_VAR:
    for (int64_t e = 0; e < no; e++) {
      const RA *pa = r->pa, *pb = r->pb;
      RA a = pa[e], b = pb[e];
      for (int64_t s = 1; s < S; s++) a += pa[s * no + e], b += pb[s * no + e];
      const int64_t o = e / p->g.inner, j = e - o * p->g.inner;
      RFN(red_put_var)(r, e, a, b, ((const RT *)r->x)[o * p->g.n * p->g.inner + j]);
    }
    break;
  case RED_CODE_LSE:
    for (int64_t e = 0; e < no; e++) {
      const double *pa = r->pa, *pb = r->pb;
      double m = pa[e];
      for (int64_t s = 1; s < S; s++) m = pa[s * no + e] > m ? pa[s * no + e] : m;
      double sm = 0;
      for (int64_t s = 0; s < S; s++) sm += pb[s * no + e] * exp(pa[s * no + e] - m);
      RFN(red_put_lse)(r, e, m, sm);
    }
    break;
#endif
  default: break;
  }
}

#if RFLOAT
/* ---- backward ----
 * Broadcast maps: dx[o, k, j] = f(x[o, k, j], s * a[o, j], b[o, j]) with per-output
 * coefficients a, b (b is any valid array when f does not read it) and a scalar s. */
OPF_RED_INLINE RT RFN(red_bf)(const int bk, RT x, RT a, RT b) {
  switch (bk) {
  case RED_BK_CONST: return a;
  case RED_BK_MUL: return a * x;
  case RED_BK_LIN: return a * (x - b);
  case RED_BK_SIGN: return x > 0 ? a : x < 0 ? -a : (RT)0;
  case RED_BK_EXP: return a * RFN(opf_red_exp)(x - b);
  case RED_BK_DIV: return a / x;
  case RED_BK_NAN: return isnan(x) ? (RT)0 : a;
  default: return isnan(x) ? (RT)0 : a / x; /* RED_BK_NANDIV */
  }
}

/* Flat dx elements [lo, hi). The period-inner pattern of short inner extents is expanded once
 * per outer block so the map runs in whole vectors. */
OPF_RED_INLINE void RFN(red_bmap_k)(const int bk, const opf_rgeom *g, const RT *restrict x,
                                    const RT *restrict a, const RT *restrict b, RT s,
                                    RT *restrict dx, int64_t lo, int64_t hi) {
  const int64_t inner = g->inner, blk = g->n * inner;
  RT pa[2 * OPF_RED_WIDE], pb[2 * OPF_RED_WIDE];
  for (int64_t e = lo; e < hi;) {
    const int64_t o = e / blk, off = e - o * blk;
    const int64_t end = hi - o * blk < blk ? hi - o * blk : blk;
    RT *restrict d = dx + o * blk;
    const RT *restrict xo = x + o * blk;
    const RT *av = a + o * inner, *bv = b + o * inner;
    if (inner == 1) {
      const RT c = s * av[0], bb = bv[0];
      for (int64_t i = off; i < end; i++) d[i] = RFN(red_bf)(bk, xo[i], c, bb);
    } else {
      const RT *sa = av, *sb = bv;
      int64_t period = inner;
      RT sc = s;
      if (inner < OPF_RED_WIDE && end - off >= 4 * OPF_RED_WIDE) {
        period = opf_red_wide_m(inner) * inner;
        for (int64_t t = 0; t < period; t++) pa[t] = s * av[t % inner], pb[t] = bv[t % inner];
        sa = pa, sb = pb, sc = 1;
      }
      for (int64_t i = off, j = off % inner; i < end; j = 0) {
        const int64_t cnt = end - i < period - j ? end - i : period - j;
        for (int64_t q = 0; q < cnt; q++)
          d[i + q] = RFN(red_bf)(bk, xo[i + q], sc * sa[j + q], sb[j + q]);
        i += cnt;
      }
    }
    e = o * blk + end;
  }
}

/* The map over cnt elements with per-element coefficients (expanded short rows). */
OPF_RED_INLINE void RFN(red_bmap_flat)(const int bk, const RT *restrict x, const RT *restrict a,
                                       const RT *restrict b, RT *restrict dx, int64_t cnt) {
  for (int64_t i = 0; i < cnt; i++) dx[i] = RFN(red_bf)(bk, x[i], a[i], b[i]);
}

/* Map kinds: one instantiation each. Whole short rows (inner 1, n < OPF_RED_SHORT) expand
 * their per-row coefficients over blocks of OPF_RED_SBLK elements (unrolled per listed
 * length), then map the block as a flat vector loop. */
OPF_VEC static void RFN(red_bmap)(int bk, const opf_rgeom *g, const RT *restrict x,
                                  const RT *restrict a, const RT *restrict b, RT s,
                                  RT *restrict dx, int64_t lo, int64_t hi) {
  const int64_t n = g->n;
  if (g->inner == 1 && n > 0 && n < OPF_RED_SHORT && lo % n == 0 && hi % n == 0) {
    RT sa[OPF_RED_SBLK], ea[OPF_RED_SBLK], eb[OPF_RED_SBLK];
    const int64_t rb = OPF_RED_SBLK / n;
    for (int64_t o0 = lo / n; o0 < hi / n; o0 += rb) {
      const int64_t nr = hi / n - o0 < rb ? hi / n - o0 : rb, cnt = nr * n;
      for (int64_t i = 0; i < nr; i++) sa[i] = s * a[o0 + i];
      switch (n) {
#define RED_SHORT_CASE(N)                                                                     \
  case N:                                                                                     \
    RFN(opf_red_expand)(sa, nr, N, ea);                                                       \
    RFN(opf_red_expand)(b + o0, nr, N, eb);                                                   \
    break;
        OPF_RED_SHORT_LENGTHS(RED_SHORT_CASE)
#undef RED_SHORT_CASE
      default:
        RFN(opf_red_expand)(sa, nr, n, ea);
        RFN(opf_red_expand)(b + o0, nr, n, eb);
        break;
      }
      switch (bk) {
#define RED_BK_CASE(B)                                                                        \
  case B: RFN(red_bmap_flat)(B, x + o0 * n, ea, eb, dx + o0 * n, cnt); break;
        RED_BK_LIST(RED_BK_CASE)
#undef RED_BK_CASE
      default: break;
      }
    }
    return;
  }
  switch (bk) {
#define RED_BK_CASE(B)                                                                        \
  case B: RFN(red_bmap_k)(B, g, x, a, b, s, dx, lo, hi); break;
    RED_BK_LIST(RED_BK_CASE)
#undef RED_BK_CASE
  default: break;
  }
}

/* Per-output coefficients of the backward maps (see reduce.c): a[e] from dy, y and the
 * forward's aux values, for output elements [e0, e1). */
static void RFN(red_bwd_coef)(const red_plan *p, const RT *dy, const RT *y, RT *a, int64_t e0,
                              int64_t e1) {
  const double dn = (double)p->g.n - p->ddof;
  for (int64_t e = e0; e < e1; e++) {
    switch (p->kind) {
    case RED_PROD:
    case RED_NANPROD: a[e] = dy[e] * y[e]; break;
    case RED_L2: a[e] = y[e] > 0 ? dy[e] / y[e] : 0; break;
    case RED_VAR: a[e] = (RT)(2.0 * dy[e] / dn); break;
    case RED_STD: a[e] = y[e] > 0 ? (RT)(dy[e] / (dn * y[e])) : 0; break;
    default: a[e] = dy[e]; break;
    }
  }
}

/* Product backward on lines whose product is 0 (a zero in the line, or underflow), output
 * elements [e0, e1): with one zero the zero gets dy times the product of the others and
 * everything else 0; with two or more, all 0; with none (underflow) the map's value stands.
 * nan: NaN elements count as 1 and get 0 (nanprod). */
static void RFN(red_prod_fix)(const opf_rgeom *g, int nan, const RT *x, const RT *y,
                              const RT *dy, RT *dx, int64_t e0, int64_t e1) {
  for (int64_t e = e0; e < e1; e++) {
    if (y[e] != 0) continue;
    const int64_t o = e / g->inner, j = e - o * g->inner, base = o * g->n * g->inner + j;
    int64_t zeros = 0, z = 0;
    double others = 1;
    for (int64_t k = 0; k < g->n; k++) {
      const RT v = x[base + k * g->inner];
      if (nan && isnan(v)) continue;
      if (v == 0) zeros++, z = k;
      else others *= v;
    }
    if (zeros == 0) continue;
    for (int64_t k = 0; k < g->n; k++) {
      const int64_t i = base + k * g->inner;
      if (!(nan && isnan(x[i]))) dx[i] = 0;
    }
    if (zeros == 1) dx[base + z * g->inner] = (RT)(dy[e] * others);
  }
}

/* Backward of max and min, rows [o0, o1) of dx when inner == 1: the forward's y[o] is exactly
 * the row's extreme, so only its first position is searched (early exit, vectorised; short
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
        for (int64_t i = n - 2; i >= 0; i--) k = xr[i] == y[o] ? i : k;
      dx[o * n + k] = dy[o];
    }
  }
}

/* Backward of max and min, general geometry, one (outer index, column block): idx[j] = the
 * first row k with x[k, j] == y[j] (the forward's exact extreme). A column that found its row
 * stops changing; without the wide view the scan stops once every column has found it. Wide
 * view: each of the m sub-row lanes of a column finds its own first wide row, the lowest
 * actual row wins, and the n % m remaining rows are searched last. */
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

#undef RED_TR_R
#undef RED_FOLD_OPS
#undef RED_EXT_OPS
#undef RED_ARG_OPS
#undef RBOOL
#undef RFN
#undef RCAT_
#undef RCAT2_
#undef RT
#undef RL
#undef RA
#undef RX
#undef RFLOAT
#undef RSUF
