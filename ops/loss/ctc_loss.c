/* ctc_loss.c: connectionist temporal classification loss (PyTorch ctc_loss) of padded int64
 * targets (N, S) under log-probabilities (T, N, C), with per-sample input and target lengths,
 * reduced by mean (each loss divided by its target length, then averaged), sum or none.
 * Forward: the alpha recursion in log space over the extended labels (blank, l1, blank, ...),
 * vectorised across the 2L+1 states of a time step, threaded over samples; the alphas stay in
 * the workspace. Backward: the beta recursion, and at each step the state posteriors
 * alpha beta / (p y) scattered into the gradient w.r.t. the log-probabilities. */
#include "loss/loss_common.h"

enum { CT_LP, CT_TG, CT_IL, CT_TL };
enum { CT_RED, CT_BLANK, CT_ZINF };

/* The state loops run over whole multiples of CT_V elements (every vector width of every
 * clone): at speech-like widths (40 states) a remainder loop of scalar exp and log calls
 * took 60% of the time. The states past the band this adds are harmless (see ct_band), and
 * past 2L+1 they see an emission of -inf, so they stay -inf. */
#define CT_V 16
static inline int64_t ct_vhi(int64_t lo, int64_t hi) { return lo + (hi - lo + CT_V - 1) / CT_V * CT_V; }

/* Geometry. States s in [0, 2L+1) of a row live at [s + 2]: two -inf pads in front give the
 * s-1 and s-2 transitions of alpha without tests, two behind the s+1 and s+2 of beta. */
typedef struct ct_geom {
  int64_t t, n, c, s; /* time steps, batch, classes, padded target length */
  int64_t r;          /* row stride: 2S+1 states, 4 pads and CT_V of overrun, rounded to CT_V */
} ct_geom;

static ct_geom ct_geom_of(const opf_case *c) {
  const opf_tensor *lp = &c->in[CT_LP];
  ct_geom g = {lp->shape[0], lp->shape[1], lp->shape[2], c->in[CT_TG].shape[1], 0};
  g.r = (2 * g.s + 1 + 4 + 2 * CT_V - 1) / CT_V * CT_V;
  return g;
}

/* Workspace, per sample: alpha ((T+1) rows: a virtual row for t = -1, then t = 0..T-1), beta
 * (2 rows, swapped), scratch (3 rows: the posteriors of a step and the emissions y_t(l'_s) of
 * two steps), the skip transition (0 or -inf, by state), the class of each state, and the
 * sample's -log p. */
typedef struct ct_ws {
  void *alpha, *beta, *scr, *skip; /* case dtype */
  int32_t *ext; /* int32: GCC vectorises float gathers with 32-bit indices only */
  double *nll;
} ct_ws;

static ct_ws ct_ws_get(const opf_case *c, size_t *total) {
  const ct_geom g = ct_geom_of(c);
  const size_t es = opf_dtype_size(c->dtype), row = (size_t)g.r * es, n = (size_t)g.n;
  const size_t sz[6] = {ls_align(n * (size_t)(g.t + 1) * row), ls_align(n * 2 * row),
                        ls_align(n * 3 * row), ls_align(n * row),
                        ls_align(n * (size_t)g.r * sizeof(int32_t)), ls_align(n * sizeof(double))};
  char *p = c->ws;
  ct_ws w;
  w.alpha = p, p += sz[0];
  w.beta = p, p += sz[1];
  w.scr = p, p += sz[2];
  w.skip = p, p += sz[3];
  w.ext = (int32_t *)p, p += sz[4];
  w.nll = (double *)p;
  if (total) *total = sz[0] + sz[1] + sz[2] + sz[3] + sz[4] + sz[5];
  return w;
}

/* exp(x) for x <= 0, with x below CT_XMIN treated as CT_XMIN: exp(-80) = 2e-35 is far below
 * half an ulp of the 1 it is added to (the max's term), so the sums are unchanged, and no
 * subnormal results appear (a subnormal costs a microcode assist: measured 10x slower). A
 * NaN x (-inf - -inf) becomes CT_XMIN too. */
#define CT_XMIN (-80)
#define CT_EXPC(x) LS_EXP(LS_SEL((x) > CT_XMIN, x, (__typeof__(x))CT_XMIN))
/* log(exp(a) + exp(b) + exp(c)) by the max; all -inf gives -inf. */
#define CT_LSE3(a, b, c)                                                                      \
  ({                                                                                          \
    __typeof__(a) m_ = LS_MAX(LS_MAX(a, b), c);                                               \
    __typeof__(a) r_ = m_ + LS_LOG(CT_EXPC((a)-m_) + CT_EXPC((b)-m_) + CT_EXPC((c)-m_));      \
    LS_SEL(m_ == -(__typeof__(a))INFINITY, m_, r_);                                           \
  })

/* The band of live states at frame t: s >= sp - 2 (Tn - t) can still reach the end, s <= 2t+1
 * is reachable from the start. States outside only feed states outside (a dead state's
 * successors are dead, an unreachable state's predecessors unreachable), so each step computes
 * the band and writes -inf elsewhere: the same result with about a quarter less work at
 * speech-like lengths (2L+1 close to T). */
static inline void ct_band(int64_t t, int64_t tn, int64_t sp, int64_t *lo, int64_t *hi) {
  const int64_t a = sp - 2 * (tn - t), b = 2 * t + 2;
  *lo = a > 0 ? a : 0;
  *hi = b < sp ? b : sp;
}

/* A thread's samples advance in lockstep, frame by frame: consecutive steps are independent
 * (one sample's frames form a serial chain), and a frame's rows of all samples are adjacent in
 * memory (measured: forward equal to sample by sample, backward about 8% faster). */
#define CT_KERNELS(T, SUF)                                                                    \
  /* -inf at states [a, b) of a row (offset 2) */                                             \
  static inline void ct_ninf_##SUF(T *row, int64_t a, int64_t b) {                            \
    for (int64_t s = a; s < b; s++) row[s + 2] = -(T)INFINITY;                                \
  }                                                                                           \
  /* emissions y_t(l'_s) of states [lo, vhi) gathered into e (-inf from state sp on): a plain \
   * copy loop, so the step loops read contiguous arrays (GCC emulates a vector gather there, \
   * element by element) */                                                                   \
  static inline void ct_emit_##SUF(const T *restrict lp, const int32_t *restrict ext,         \
                                   T *restrict e, int64_t lo, int64_t hi, int64_t sp) {       \
    const int64_t vh = ct_vhi(lo, hi), m = vh < sp ? vh : sp;                                 \
    int64_t s = lo;                                                                           \
    for (; s < m; s++) e[s] = lp[ext[s]];                                                     \
    for (; s < vh; s++) e[s] = -(T)INFINITY;                                                  \
  }                                                                                           \
  /* alpha_t(s) = y_t(l'_s) + lse(alpha_{t-1}(s), alpha_{t-1}(s-1), alpha_{t-1}(s-2) + skip) */ \
  OPF_VEC static void ct_alpha_step_##SUF(const T *restrict prev, T *restrict cur,            \
                                          const T *restrict e, const T *restrict skip,        \
                                          int64_t lo, int64_t hi) {                           \
    for (int64_t s = lo; s < hi; s++)                                                         \
      cur[s + 2] = e[s] + CT_LSE3(prev[s + 2], prev[s + 1], prev[s] + skip[s]);               \
  }                                                                                           \
  /* beta_t(s) = y_t(l'_s) + lse(beta_{t+1}(s), beta_{t+1}(s+1), beta_{t+1}(s+2) + skip(s+2)) */ \
  OPF_VEC static void ct_beta_step_##SUF(const T *restrict next, T *restrict cur,             \
                                         const T *restrict e, const T *restrict skip,         \
                                         int64_t lo, int64_t hi) {                            \
    for (int64_t s = lo; s < hi; s++)                                                         \
      cur[s + 2] = e[s] + CT_LSE3(next[s + 2], next[s + 3], next[s + 4] + skip[s + 2]);       \
  }                                                                                           \
  /* posteriors exp(alpha + beta - y + nll) of states [lo, hi) at t (alpha and beta both      \
   * count y; 0 below exp(CT_XMIN), no subnormals) */                                         \
  OPF_VEC static void ct_post_##SUF(const T *restrict al, const T *restrict be,               \
                                    const T *restrict e, T *restrict gam, int64_t lo,         \
                                    int64_t hi, T nll) {                                      \
    for (int64_t s = lo; s < hi; s++) {                                                       \
      const T x = al[s + 2] + be[s + 2] - e[s] + nll;                                         \
      gam[s] = LS_SEL(x > CT_XMIN, LS_EXP(x), (T)0);                                          \
    }                                                                                         \
  }                                                                                           \
  /* sum of the blank (even) states' posteriors in [lo, hi): four independent chains */       \
  static inline T ct_blank_sum_##SUF(const T *gam, int64_t lo, int64_t hi) {                  \
    T b0 = 0, b1 = 0, b2 = 0, b3 = 0;                                                         \
    int64_t s = lo + (lo & 1);                                                                \
    for (; s + 6 < hi; s += 8) b0 += gam[s], b1 += gam[s + 2], b2 += gam[s + 4], b3 += gam[s + 6]; \
    for (; s < hi; s += 2) b0 += gam[s];                                                      \
    return (b0 + b1) + (b2 + b3);                                                             \
  }                                                                                           \
  /* forward of samples [lo, hi): extended labels and the virtual row t = -1, the frames in   \
   * lockstep, then each -log p */                                                            \
  static void ct_fwd_chunk_##SUF(opf_case *c, int64_t lo, int64_t hi) {                       \
    const ct_geom g = ct_geom_of(c);                                                          \
    const ct_ws w = ct_ws_get(c, NULL);                                                       \
    const int64_t *tg = c->in[CT_TG].data, *il = c->in[CT_IL].data, *tl = c->in[CT_TL].data;  \
    const int64_t blank = (int64_t)c->p[CT_BLANK], r = g.r;                                   \
    const T *lp = c->in[CT_LP].data;                                                          \
    int64_t tmax = 0;                                                                         \
    for (int64_t n = lo; n < hi; n++) {                                                       \
      const int64_t sp = 2 * tl[n] + 1, *lab = tg + n * g.s;                                  \
      int32_t *ext = w.ext + n * r;                                                           \
      T *skip = (T *)w.skip + n * r, *alpha = (T *)w.alpha + n * (g.t + 1) * r;               \
      for (int64_t s = 0; s < r; s++) {                                                       \
        ext[s] = (int32_t)(s < sp && (s & 1) ? lab[s / 2] : blank);                           \
        skip[s] = s < sp && (s & 1) && s >= 2 && ext[s] != ext[s - 2] ? 0 : -(T)INFINITY;     \
      }                                                                                       \
      ct_ninf_##SUF(alpha, -2, r - 2);                                                        \
      alpha[2] = 0; /* t = -1: the empty prefix */                                            \
      tmax = il[n] > tmax ? il[n] : tmax;                                                     \
    }                                                                                         \
    for (int64_t t = 0; t < tmax; t++)                                                        \
      for (int64_t n = lo; n < hi; n++) {                                                     \
        if (t >= il[n]) continue;                                                             \
        const int64_t sp = 2 * tl[n] + 1;                                                     \
        T *cur = (T *)w.alpha + (n * (g.t + 1) + t + 1) * r, *e = (T *)w.scr + n * 3 * r;     \
        int64_t a, b;                                                                         \
        ct_band(t, il[n], sp, &a, &b);                                                        \
        ct_ninf_##SUF(cur, -2, a);                                                            \
        ct_ninf_##SUF(cur, ct_vhi(a, b), r - 2);                                              \
        ct_emit_##SUF(lp + (t * g.n + n) * g.c, w.ext + n * r, e, a, b, sp);                  \
        ct_alpha_step_##SUF(cur - r, cur, e, (T *)w.skip + n * r, a, ct_vhi(a, b));           \
      }                                                                                       \
    for (int64_t n = lo; n < hi; n++) {                                                       \
      const int64_t sp = 2 * tl[n] + 1;                                                       \
      const T *last = (T *)w.alpha + (n * (g.t + 1) + il[n]) * r;                             \
      const double a = last[sp + 1], b = sp >= 2 ? last[sp] : -INFINITY;                      \
      const double m = a > b ? a : b;                                                         \
      w.nll[n] = m == -INFINITY ? INFINITY : -(m + log(exp(a - m) + exp(b - m)));             \
    }                                                                                         \
  }                                                                                           \
  /* backward of samples [lo, hi) into the (zeroed) gradient: per frame, from each sample's   \
   * last down to 0, the posteriors, -g times each scattered to its class (the blanks' summed \
   * first: no chain of read-modify-writes to one element), then the beta step to t-1. Per    \
   * sample: beta rows and emission rows alternate (2 each), one row of posteriors. */        \
  static void ct_bwd_chunk_##SUF(opf_case *c, int64_t lo, int64_t hi) {                       \
    const ct_geom g = ct_geom_of(c);                                                          \
    const ct_ws w = ct_ws_get(c, NULL);                                                       \
    const int64_t *il = c->in[CT_IL].data, *tl = c->in[CT_TL].data, r = g.r;                  \
    const int64_t blank = (int64_t)c->p[CT_BLANK];                                            \
    const int red = (int)c->p[CT_RED];                                                        \
    const T *lp = c->in[CT_LP].data;                                                          \
    T *gr = c->gin[CT_LP].data;                                                               \
    int64_t tmax = 0;                                                                         \
    for (int64_t n = lo; n < hi; n++) {                                                       \
      const int64_t tn = il[n], sp = 2 * tl[n] + 1;                                           \
      if (tn == 0) continue;                                                                  \
      T *be = (T *)w.beta + n * 2 * r, *e = (T *)w.scr + n * 3 * r + r;                       \
      ct_ninf_##SUF(be, -2, r - 2);                                                           \
      ct_ninf_##SUF(be + r, -2, r - 2);                                                       \
      int64_t a, b;                                                                           \
      ct_band(tn - 1, tn, sp, &a, &b);                                                        \
      ct_emit_##SUF(lp + ((tn - 1) * g.n + n) * g.c, w.ext + n * r, e, a, b, sp);             \
      be[sp + 1] = e[sp - 1];                                                                 \
      if (sp >= 2) be[sp] = e[sp - 2];                                                        \
      tmax = tn > tmax ? tn : tmax;                                                           \
    }                                                                                         \
    for (int64_t t = tmax - 1; t >= 0; t--)                                                   \
      for (int64_t n = lo; n < hi; n++) {                                                     \
        const int64_t tn = il[n], sp = 2 * tl[n] + 1;                                         \
        if (t >= tn || (c->p[CT_ZINF] && isinf(w.nll[n]))) continue; /* stays 0 */            \
        double gs = ls_row_grad(c, n, red, (double)g.n);                                      \
        if (red == LS_MEAN) gs /= (double)(tl[n] > 1 ? tl[n] : 1);                            \
        const int64_t k = (tn - 1 - t) & 1; /* which of the alternating rows is frame t's */  \
        T *be = (T *)w.beta + n * 2 * r, *scr = (T *)w.scr + n * 3 * r;                       \
        T *cur = be + k * r, *next = be + (1 - k) * r, *e = scr + (1 + k) * r;                \
        const int32_t *ext = w.ext + n * r;                                                   \
        int64_t a, b;                                                                         \
        ct_band(t, tn, sp, &a, &b);                                                           \
        T *row = gr + (t * g.n + n) * g.c;                                                    \
        ct_post_##SUF((T *)w.alpha + (n * (g.t + 1) + t + 1) * r, cur, e, scr, a, ct_vhi(a, b), \
                      (T)w.nll[n]);                                                           \
        row[blank] -= (T)gs * ct_blank_sum_##SUF(scr, a, b);                                  \
        for (int64_t s = a | 1; s < b; s += 2) row[ext[s]] -= (T)gs * scr[s];                 \
        if (t == 0) continue;                                                                 \
        T *en = scr + (2 - k) * r; /* frame t-1 goes to the other rows */                     \
        ct_band(t - 1, tn, sp, &a, &b);                                                       \
        ct_ninf_##SUF(next, -2, a);                                                           \
        ct_ninf_##SUF(next, b, sp);                                                           \
        ct_emit_##SUF(lp + ((t - 1) * g.n + n) * g.c, ext, en, a, b, sp);                     \
        ct_beta_step_##SUF(cur, next, en, (T *)w.skip + n * r, a, ct_vhi(a, b));              \
      }                                                                                       \
  }
CT_KERNELS(float, f32)
CT_KERNELS(double, f64)

/* ---- inputs ---- */
/* GCC 12 for aarch64 (Debian 12's cross and native compiler) crashes vectorising the fmax
 * reduction below (internal compiler error in vect_transform_reduction); this input set-up is
 * outside the timed region, so it is compiled without the vectoriser there. */
#if defined(__aarch64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
__attribute__((optimize("no-tree-vectorize")))
#endif
static int ct_fill_lp(opf_case *c, int i, opf_rng *r) {
  (void)r;
  opf_tensor *t = &c->in[i];
  opf_fill_uniform(t, c->seed, (uint64_t)i, -3, 3);
  const int64_t rows = t->shape[0] * t->shape[1], k = t->shape[2];
#pragma omp parallel for schedule(static) if (rows * k > OPF_PAR_MIN)
  for (int64_t q = 0; q < rows; q++) { /* log_softmax of each (t, n) row, as a network emits */
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < k; j++) m = fmax(m, ls_get(t, q * k + j));
    for (int64_t j = 0; j < k; j++) s += exp(ls_get(t, q * k + j) - m);
    const double lse = m + log(s);
    for (int64_t j = 0; j < k; j++) ls_put(t, q * k + j, ls_get(t, q * k + j) - lse);
  }
  return OPF_OK;
}

/* labels in [0, C) without the blank */
static int ct_fill_targets(opf_case *c, int i, opf_rng *r) {
  (void)r;
  const int64_t blank = (int64_t)c->p[CT_BLANK], k = c->in[CT_LP].shape[2];
  opf_tensor *t = &c->in[i];
  opf_fill_uniform(t, c->seed, (uint64_t)i, 0, (double)(k - 1));
  int64_t *v = t->data;
  for (int64_t q = 0; q < opf_numel(t); q++) v[q] += v[q] >= blank;
  return OPF_OK;
}

/* input lengths in [T - 2T/5, T], the first sample T (a padded batch's longest) */
static int ct_fill_input_lengths(opf_case *c, int i, opf_rng *r) {
  (void)r;
  const int64_t tt = c->in[CT_LP].shape[0];
  opf_tensor *t = &c->in[i];
  opf_fill_uniform(t, c->seed, (uint64_t)i, (double)(tt - 2 * tt / 5), (double)(tt + 1));
  if (opf_numel(t) > 0) ((int64_t *)t->data)[0] = tt;
  return OPF_OK;
}

/* Length L needs L + (repeated neighbours) frames: a blank must separate equal labels. */
static int64_t ct_frames_needed(const int64_t *tg, int64_t l) {
  int64_t need = l;
  for (int64_t j = 1; j < l; j++) need += tg[j] == tg[j - 1];
  return need;
}

/* target lengths in [S/2, S], shortened until the sample's frames can hold them */
static int ct_fill_target_lengths(opf_case *c, int i, opf_rng *r) {
  (void)r;
  const int64_t s = c->in[CT_TG].shape[1];
  opf_tensor *t = &c->in[i];
  opf_fill_uniform(t, c->seed, (uint64_t)i, (double)((s + 1) / 2), (double)(s + 1));
  int64_t *tl = t->data;
  const int64_t *tg = c->in[CT_TG].data, *il = c->in[CT_IL].data;
  for (int64_t q = 0; q < opf_numel(t); q++)
    while (tl[q] > 0 && ct_frames_needed(tg + q * s, tl[q]) > il[q]) tl[q]--;
  return OPF_OK;
}

static int ct_infer(opf_case *c) {
  opf_tensor *lp = &c->in[CT_LP], *tg = &c->in[CT_TG];
  if (lp->ndim < 0) return OPF_OK;
  char s1[96], s2[96];
  if (lp->ndim != 3)
    return opf_case_error(c, OPF_EINVAL, "'log_probs' must be 3-D (T, N, C), not %s",
                          opf_shape_str(lp, s1, sizeof s1));
  const int64_t t = lp->shape[0], n = lp->shape[1], k = lp->shape[2];
  if (t < 1 || k < 2 || k > INT32_MAX)
    return opf_case_error(c, OPF_EINVAL, "'log_probs' %s needs at least 1 time step and 2 to 2^31-1 classes (blank and labels)",
                          opf_shape_str(lp, s1, sizeof s1));
  if (c->p[CT_BLANK] >= (double)k)
    return opf_case_error(c, OPF_EINVAL, "blank %d is not a class of 'log_probs' %s (C = %lld)",
                          (int)c->p[CT_BLANK], opf_shape_str(lp, s1, sizeof s1), (long long)k);
  if (tg->ndim < 0) {
    const int64_t sh[2] = {n, t / 4 > 0 ? t / 4 : 1};
    opf_tensor_set_shape(tg, OPF_I64, 2, sh);
  }
  if (tg->ndim != 2 || tg->shape[0] != n)
    return opf_case_error(c, OPF_EINVAL, "'targets' %s must be 2-D (N, S) with N = %lld as in 'log_probs' %s",
                          opf_shape_str(tg, s2, sizeof s2), (long long)n, opf_shape_str(lp, s1, sizeof s1));
  if (tg->shape[1] > t)
    return opf_case_error(c, OPF_EINVAL, "target length S = %lld of 'targets' %s exceeds the input length T = %lld of 'log_probs' %s",
                          (long long)tg->shape[1], opf_shape_str(tg, s2, sizeof s2), (long long)t,
                          opf_shape_str(lp, s1, sizeof s1));
  for (int i = CT_IL; i <= CT_TL; i++) {
    opf_tensor *len = &c->in[i];
    if (len->ndim < 0) opf_tensor_set_shape(len, OPF_I64, 1, &n);
    if (len->ndim != 1 || len->shape[0] != n)
      return opf_case_error(c, OPF_EINVAL, "'%s' %s must be 1-D with one length per sample (N = %lld)",
                            c->op->in[i].name, opf_shape_str(len, s2, sizeof s2), (long long)n);
  }
  ls_set_loss_out(c, (int)c->p[CT_RED], n);
  ct_ws_get(c, &c->ws_bytes);
  return OPF_OK;
}

/* Data checks (lengths and labels can come from a user's files). */
static int ct_check(opf_case *c) {
  const ct_geom g = ct_geom_of(c);
  const int64_t *tg = c->in[CT_TG].data, *il = c->in[CT_IL].data, *tl = c->in[CT_TL].data;
  const int64_t blank = (int64_t)c->p[CT_BLANK];
  for (int64_t n = 0; n < g.n; n++) {
    if (il[n] < 0 || il[n] > g.t)
      return opf_case_error(c, OPF_EINVAL, "input_lengths[%lld] = %lld is outside [0, T = %lld]",
                            (long long)n, (long long)il[n], (long long)g.t);
    if (tl[n] < 0 || tl[n] > g.s)
      return opf_case_error(c, OPF_EINVAL, "target_lengths[%lld] = %lld is outside [0, S = %lld]",
                            (long long)n, (long long)tl[n], (long long)g.s);
    if (tl[n] > il[n])
      return opf_case_error(c, OPF_EINVAL, "target_lengths[%lld] = %lld exceeds input_lengths[%lld] = %lld",
                            (long long)n, (long long)tl[n], (long long)n, (long long)il[n]);
    for (int64_t j = 0; j < tl[n]; j++) {
      const int64_t v = tg[n * g.s + j];
      if (v < 0 || v >= g.c || v == blank)
        return opf_case_error(c, OPF_EINVAL, "targets[%lld][%lld] = %lld is not a label in [0, %lld) other than the blank %lld",
                              (long long)n, (long long)j, (long long)v, (long long)g.c, (long long)blank);
    }
  }
  return OPF_OK;
}

/* Loss of sample n from its -log p: zero_infinity turns an impossible alignment into 0. */
static double ct_sample_loss(const opf_case *c, double nll) {
  return c->p[CT_ZINF] && isinf(nll) ? 0 : nll;
}

/* Mean divides each loss by its target length (at least 1) and by N. */
static void ct_write_loss(opf_case *c, const double *nll) {
  const ct_geom g = ct_geom_of(c);
  const int red = (int)c->p[CT_RED];
  const int64_t *tl = c->in[CT_TL].data;
  double total = 0;
  for (int64_t n = 0; n < g.n; n++) {
    const double l = ct_sample_loss(c, nll[n]);
    if (red == LS_NONE) ls_put(&c->out[0], n, l);
    total += red == LS_MEAN ? l / (double)(tl[n] > 1 ? tl[n] : 1) : l;
  }
  if (red != LS_NONE) ls_set_scalar(&c->out[0], red == LS_MEAN ? total / (double)g.n : total);
}

static void ct_fwd_range(int64_t lo, int64_t hi, void *v) {
  opf_case *c = v;
  if (c->dtype == OPF_F32) ct_fwd_chunk_f32(c, lo, hi);
  else ct_fwd_chunk_f64(c, lo, hi);
}

/* Threads once a chunk of samples holds OPF_PAR_MIN / 8 state updates (each a few exps). */
static int64_t ct_par_min(const ct_geom *g, int64_t extra) {
  return ls_row_par(OPF_PAR_MIN / 8, g->t * (2 * g->s + 1) + extra);
}

static int ct_forward(opf_case *c) {
  int rc = ct_check(c);
  if (rc) return rc;
  const ct_geom g = ct_geom_of(c);
  opf_parallel_range(g.n, ct_par_min(&g, 0), ct_fwd_range, c);
  ct_write_loss(c, ct_ws_get(c, NULL).nll);
  return OPF_OK;
}

static void ct_bwd_range(int64_t lo, int64_t hi, void *v) {
  opf_case *c = v;
  if (c->dtype == OPF_F32) ct_bwd_chunk_f32(c, lo, hi);
  else ct_bwd_chunk_f64(c, lo, hi);
}

static void ct_zero_range(int64_t lo, int64_t hi, void *v) {
  opf_case *c = v;
  memset(LS_AT(c->gin[CT_LP], lo), 0, (size_t)(hi - lo) * opf_dtype_size(c->dtype));
}

/* The gradient is zero outside the frames and classes of each sample's states: one large
 * threaded fill of the whole tensor first (long memsets stream; a row at a time they would
 * read every line before writing it), then each sample's scatter. */
static int ct_backward(opf_case *c) {
  if (!c->gin[CT_LP].data) return OPF_OK;
  const ct_geom g = ct_geom_of(c);
  opf_parallel_range(opf_numel(&c->gin[CT_LP]), OPF_PAR_MIN, ct_zero_range, c);
  opf_parallel_range(g.n, ct_par_min(&g, 0), ct_bwd_range, c);
  return OPF_OK;
}

/* Reference: the textbook recursion in float64 with libm, two rows of states per sample. */
static double ct_lae(double a, double b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  return fmax(a, b) + log1p(exp(-fabs(a - b)));
}

static int ct_reference(opf_case *c) {
  int rc = ct_check(c);
  if (rc) return rc;
  const ct_geom g = ct_geom_of(c);
  const int64_t *tg = c->in[CT_TG].data, *il = c->in[CT_IL].data, *tl = c->in[CT_TL].data;
  const int64_t blank = (int64_t)c->p[CT_BLANK];
  double *buf = opf_alloc((size_t)(2 * (2 * g.s + 1) + g.n) * sizeof(double));
  if (!buf) return opf_case_error(c, OPF_ENOMEM, "ctc reference: out of memory");
  double *prev = buf, *cur = buf + 2 * g.s + 1, *nll = cur + 2 * g.s + 1;
  for (int64_t n = 0; n < g.n; n++) {
    const int64_t l = tl[n], sp = 2 * l + 1, *lab = tg + n * g.s;
#define CT_LABEL(s) ((s) % 2 ? lab[(s) / 2] : blank)
#define CT_Y(t, s) ls_get(&c->in[CT_LP], ((t) * g.n + n) * g.c + CT_LABEL(s))
    if (il[n] == 0) { /* no frames: only the empty target has a path */
      nll[n] = l == 0 ? 0 : INFINITY;
      continue;
    }
    for (int64_t s = 0; s < sp; s++) prev[s] = s < 2 ? CT_Y(0, s) : -INFINITY;
    for (int64_t t = 1; t < il[n]; t++) {
      for (int64_t s = 0; s < sp; s++) {
        double a = prev[s];
        if (s >= 1) a = ct_lae(a, prev[s - 1]);
        if (s >= 2 && CT_LABEL(s) != blank && CT_LABEL(s) != CT_LABEL(s - 2)) a = ct_lae(a, prev[s - 2]);
        cur[s] = a == -INFINITY ? a : a + CT_Y(t, s);
      }
      double *tmp = prev;
      prev = cur, cur = tmp;
    }
    nll[n] = -ct_lae(prev[sp - 1], sp >= 2 ? prev[sp - 2] : -INFINITY);
#undef CT_Y
#undef CT_LABEL
  }
  ct_write_loss(c, nll);
  opf_free(buf);
  return OPF_OK;
}

/* Counted at full lengths (T frames, S labels; the models see shapes, not lengths), per state
 * and frame: fwd the three-way log-sum-exp (max 2, subtract 3, exp 3, add 2, log 1, add 1) and
 * the emission add: 13; bwd the same for beta (13), the posterior (add, subtract, add, exp: 4)
 * and its scaled scatter (2): 19. */
static double ct_flops(const opf_case *c, opf_pass p) {
  const ct_geom g = ct_geom_of(c);
  const double states = (double)g.t * (double)g.n * (double)(2 * g.s + 1);
  return opf_pass_sum(p, 13 * states, 19 * states);
}

/* fwd reads one log-probability per state and frame (at most C per frame), the targets and
 * lengths, writes the alphas (workspace, read back by bwd) and the loss; bwd also writes the
 * whole gradient (T, N, C). */
static double ct_bytes(const opf_case *c, opf_pass p) {
  const ct_geom g = ct_geom_of(c);
  const double es = (double)opf_dtype_size(c->dtype), sp = (double)(2 * g.s + 1);
  const double frames = (double)g.t * (double)g.n;
  const double lp = frames * (sp < (double)g.c ? sp : (double)g.c) * es, al = frames * sp * es;
  const double meta = (double)g.n * (double)g.s * 8 + 16 * (double)g.n;
  const double y = (double)opf_numel(&c->out[0]) * es, grad = frames * (double)g.c * es;
  return opf_pass_sum(p, lp + meta + al + y, lp + meta + al + y + grad);
}

OPPERF_OP(ctc_loss) = {
    .abi = OPF_OP_ABI,
    .name = "ctc_loss",
    .category = "nn.loss",
    .summary = "connectionist temporal classification loss of padded targets (PyTorch ctc_loss)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 4,
    .in = {{.name = "log_probs", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .fill = ct_fill_lp,
            .help = "(T, N, C) log-probabilities (generated as log_softmax of uniform logits)"},
           {.name = "targets", .dtype = OPF_I64, .fill = ct_fill_targets,
            .help = "(N, S) labels in [0, C) other than blank, padded; S <= T (default S = T/4)"},
           {.name = "input_lengths", .dtype = OPF_I64, .fill = ct_fill_input_lengths,
            .help = "(N) frames per sample, <= T"},
           {.name = "target_lengths", .dtype = OPF_I64, .fill = ct_fill_target_lengths,
            .help = "(N) labels per sample, <= S and <= input length (generated so that repeated "
                    "labels still fit)"}},
    .n_out = 1,
    .out = {"loss"},
    .n_params = 3,
    .params = {{.name = "reduction", .type = OPF_P_ENUM, .def = LS_MEAN, .choices = "mean|sum|none",
                .help = "mean (each loss / its target length, averaged), sum, or none (per sample)"},
               {.name = "blank", .type = OPF_P_INT, .def = 0, .min = 0, .max = 1e9,
                .help = "class index of the blank"},
               {.name = "zero_infinity", .type = OPF_P_BOOL, .def = 0,
                .help = "impossible alignments (infinite loss) give 0 and no gradient"}},
    .shapes = {{"standard", "log_probs=50x32x28 targets=32x20"},
               {"skewed", "log_probs=200x16x5000 targets=16x50"},
               {"skewed", "log_probs=1000x1x28 targets=1x200"},
               {"small", "log_probs=6x3x5 targets=3x2"},
               {"small", "log_probs=12x2x4 targets=2x5 reduction=sum"},
               {"small", "log_probs=5x4x3 targets=4x3 reduction=none"},
               {"small", "log_probs=7x2x6 targets=2x3 blank=3"},
               {"small", "log_probs=1x1x2 targets=1x1 reduction=sum"},
               {"small", "log_probs=9x3x2 targets=3x4 reduction=none zero_infinity=1"},
               {"test", "log_probs=77x9x33 targets=9x30"},
               {"test", "log_probs=120x5x700 targets=5x40 reduction=none"},
               {"test", "log_probs=64x40x29 targets=40x16 reduction=sum"},
               {"large", "log_probs=500x64x1000 targets=64x150"}},
    .infer = ct_infer,
    .forward = ct_forward,
    .backward = ct_backward,
    .reference = ct_reference,
    .flops = ct_flops,
    .bytes = ct_bytes,
};
