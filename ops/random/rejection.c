/* rejection.c: random_gamma (Marsaglia-Tsang), poisson (inversion below lam 10, PTRS above) and
 * negative_binomial (poisson of a gamma-distributed rate, as NumPy does). Rejection sampling
 * does not vectorise as such, so a block of elements goes through stages (rj_run): each runs,
 * branch-free in vector lanes, the part of the rejection loop that settles most of the
 * elements the stages before it left (the squeeze of the first attempt for all elements, then
 * its full test with the logarithms for the rest, reusing the values the squeeze carried on,
 * then further attempts), over a list of those elements compacted by AVX-512 compress
 * (rj_keep); the scalar sampler from rand_common.h that the references use takes the few left
 * at the end. The same counters, so the same samples (up to last-bit differences of the
 * vector math, which could flip an accept decision with probability around 1e-15).
 * Small-lam poisson is a vectorised count over the CDF table instead. 1M samples at 1 thread,
 * AMD Zen 5, before the stages -> scalar-compacted stages -> compress, carried values and
 * one attempt a stage (median of 3 interleaved runs): random_gamma alpha=2 7.6 -> 4.85 ->
 * 4.02 ms, alpha=0.5 8.24 -> 7.54, poisson lam=100 11.4 -> 4.91 -> 4.23, negative_binomial n=5
 * p=0.5 14.4 -> 10.4 -> 8.4, n=50 p=0.1 23.0 -> 9.5 -> 8.3. Most of what is left is the first
 * stage's arithmetic: three draws of the generator (four 64-bit multiplies each), a logarithm,
 * a square root and a cosine per gamma sample. */
#include "random/rand_common.h"

#ifdef OPF_X86
#include <immintrin.h>
#endif

#define RJ_BLOCK 512 /* elements per block: the per-block buffers stay in L1 */
/* Buffer length: a few entries more, so that equal indices of the buffers on the stack are not
 * 4 KiB apart (loads from one after stores to another would wait on the false aliasing: the
 * copy-out of negative_binomial's samples took 15% of its time). */
#define RJ_BUF (RJ_BLOCK + 24)

/* The length m > 0 of a list of elements k (and x, when given) rounded up to RJ_LANES by
 * repeating its last entry (k and x need room for it), for the vector loops over gathered
 * elements: a scalar remainder costs about as much per element as a whole vector iteration,
 * and the lists of rejected elements are short. The extra lanes' results go unused. */
#define RJ_LANES 8
static inline int64_t rj_pad(int64_t m, int64_t *k, double *x) {
  const int64_t m8 = (m + RJ_LANES - 1) & -(int64_t)RJ_LANES;
  for (int64_t t = m; t < m8; t++) {
    k[t] = k[m - 1];
    if (x) x[t] = x[m - 1];
  }
  return m8;
}

/* Samples of elements [k0, k0 + n) into v (n <= RJ_BLOCK); r draws for the scalar rest. */
typedef void (*rj_fill_fn)(const rc_ctx *g, opf_rng *r, int64_t k0, int64_t n, double *v);

/* Elements [lo, hi) block by block, stored to the output dtype times scale. */
static void rj_gen(const rc_ctx *g, rj_fill_fn fill, double scale, int64_t lo, int64_t hi, void *dst) {
  double v[RJ_BUF];
  opf_rng r = {.key = g->key};
  const size_t es = opf_dtype_size(g->dt);
  for (int64_t b = lo; b < hi; b += RJ_BLOCK) {
    int64_t n = hi - b < RJ_BLOCK ? hi - b : RJ_BLOCK;
    fill(g, &r, b, n, v);
    rc_put((char *)dst + (size_t)(b - lo) * es, g->dt, v, n, scale);
  }
}
#define RJ_GEN(NAME, SCALE)                                                                   \
  static void NAME##_gen(const void *p, int64_t lo, int64_t hi, void *dst) {                  \
    const rc_ctx *g = p;                                                                      \
    rj_gen(g, NAME##_fill, SCALE, lo, hi, dst);                                               \
  }

/* ---- staged rejection: stage s of a sampler runs, in vector lanes, the part of the rejection
 * loop that settles most of the elements the stages before it left (e.g. the squeeze of the
 * first attempt for all, then its full test, then further attempts), and a scalar sampler
 * takes the few left after the last stage. A stage fills candidates v[t] and flags ok[t] for
 * the m elements k[t] (rates lam[t], when the sampler has per-element ones; ctx: its
 * constants; j0: its first draw); the first accepted attempt wins at every stage, so the
 * samples are the scalar sampler's. ---- */
typedef void (*rj_stage_fn)(const void *ctx, const double *lam, uint64_t key, const int64_t *k,
                            int64_t m, int j0, double *v, int64_t *ok, double *ca, double *cb);
typedef double (*rj_scalar_fn)(const void *ctx, const double *lam, opf_rng *r, int64_t k, int j0);

/* ---- compaction of the lists between stages: the entries t < m whose flag[t] is zero (want
 * 0) or non-zero (want 1), of up to RJ_LISTS 64-bit lists at once, dst[a][c] = src[a][t] in
 * order (dst[a] NULL: that list unused; dst may be src). Every list needs room for RJ_LANES
 * entries past m (RJ_BUF). A rejection is an unpredictable branch, so this is branch-free:
 * with AVX-512 a register compress per 8 entries and a full store (the slack absorbs it; a
 * compress straight to memory is microcoded on Zen 4/5), else the store-always,
 * advance-on-keep scalar loop. A compress costs about what a draw of the generator does for
 * the survivors, so stages carry only values that are dearer to recompute. ---- */
#define RJ_LISTS 4
typedef struct {
  void *d[RJ_LISTS];
  const void *s[RJ_LISTS];
} rj_lists;

static int64_t rj_keep_scalar(const int64_t *flag, int want, int64_t m, const rj_lists *l) {
  int64_t c = 0;
  for (int64_t t = 0; t < m; t++) {
    for (int a = 0; a < RJ_LISTS; a++)
      if (l->d[a]) memcpy((int64_t *)l->d[a] + c, (const int64_t *)l->s[a] + t, sizeof(int64_t));
    c += (flag[t] != 0) == want;
  }
  return c;
}

#ifdef OPF_X86
__attribute__((target("avx512f"))) static int64_t rj_keep_avx512(const int64_t *flag, int want,
                                                                  int64_t m, const rj_lists *l) {
  const rj_lists lv = *l; /* in registers: the stores below may alias anything */
  int64_t c = 0;
  for (int64_t t = 0; t < m; t += 8) {
    const __mmask8 live = m - t >= 8 ? 0xff : (__mmask8)((1u << (m - t)) - 1);
    const __m512i f = _mm512_loadu_si512(flag + t);
    const __mmask8 k = want ? _mm512_mask_test_epi64_mask(live, f, f) : _mm512_mask_testn_epi64_mask(live, f, f);
    for (int a = 0; a < RJ_LISTS; a++)
      if (lv.d[a])
        _mm512_storeu_si512((int64_t *)lv.d[a] + c,
                            _mm512_maskz_compress_epi64(k, _mm512_loadu_si512((const int64_t *)lv.s[a] + t)));
    c += __builtin_popcount(k);
  }
  return c;
}
static int64_t rj_keep(const int64_t *flag, int want, int64_t m, const rj_lists *l) {
  static int have = -1; /* benign race: every thread computes the same value */
  if (have < 0) have = __builtin_cpu_supports("avx512f");
  return have ? rj_keep_avx512(flag, want, m, l) : rj_keep_scalar(flag, want, m, l);
}
#else
#define rj_keep rj_keep_scalar
#endif

/* The samples v[k[t] - k0] of the m <= RJ_BLOCK elements k[t] (ascending) through the stages
 * and the scalar sampler. Between stages the unsettled elements, with their rates and carried
 * values (ca, cb: what a stage leaves to the next, e.g. the normal of an attempt whose squeeze
 * failed, for its full test), are compacted (rj_keep) and their lists padded (rj_pad): k, lam
 * and v need room for RJ_BUF entries. iota: k[t] = k0 + t, and v past m is scratch (stage 0
 * writes v in place). */
typedef struct {
  rj_stage_fn stage[6];
  int n_stage, carry; /* carry: how many of ca, cb the stages use */
  rj_scalar_fn scalar;
} rj_sampler;
static void rj_run(const rj_sampler *sm, const void *ctx, double *lam, uint64_t key, opf_rng *r,
                   int64_t *k, int64_t m, int j0, int64_t k0, int iota, double *v) {
  int64_t ok[RJ_BUF], kb[RJ_BUF];
  double lb[RJ_BUF], vb[RJ_BUF], ca[RJ_BUF], cb[RJ_BUF];
  double *const lp = lam ? lb : NULL, *const cap = sm->carry > 0 ? ca : NULL, *const cbp = sm->carry > 1 ? cb : NULL;
  const int64_t m8 = rj_pad(m, k, lam);
  sm->stage[0](ctx, lam, key, k, m8, j0, iota ? v : vb, ok, ca, cb);
  if (!iota)
    for (int64_t t = 0; t < m; t++) v[k[t] - k0] = vb[t];
  rj_lists l = {{kb, lp, cap, cbp}, {k, lam, ca, cb}};
  int64_t c = rj_keep(ok, 0, m, &l);
  l = (rj_lists){{kb, lp, cap, cbp}, {kb, lp, ca, cb}};
  for (int s = 1; s < sm->n_stage && c; s++) {
    sm->stage[s](ctx, lp, key, kb, rj_pad(c, kb, lp), j0, vb, ok, ca, cb); /* carries: lanes past c unused */
    for (int64_t t = 0; t < c; t++) v[kb[t] - k0] = vb[t];
    c = rj_keep(ok, 0, c, &l);
  }
  for (int64_t t = 0; t < c; t++) v[kb[t] - k0] = sm->scalar(ctx, lam ? &lb[t] : NULL, r, kb[t], j0);
}

/* ---- gamma(alpha, scale): stage 0, the squeeze u < 1 - 0.0331 z^4 of attempt 0 (draws
 * j0..j0+2) alone, without the two logarithms of the full test (alpha=2: about 90% of the
 * elements; z carried on), its full test (98.5%); 2 and 3, the whole attempts 1 and 2, one a
 * stage (the last rarely has an element to run); then rc_gamma_draw (about 1e-4 of the
 * elements). alpha < 1 (boost) multiplies by u^(1/alpha) from draw j0 + RC_GAMMA_BOOST.
 * ---- */
VM_INLINE double gamma_lane(const rc_gamma *gm, uint64_t key, int64_t k, int j0, int stage,
                            int boost, int64_t *ok, double *ca, double *cb) {
  double res;
  (void)cb;
  if (stage == 0) { /* the squeeze; z carried to stage 1 (u is cheaper to draw again) */
    double u, z = rc_gamma_normal(key, k, j0, &u);
    const double t = 1.0 + gm->c * z;
    *ok = (t > 0) & (u < 1.0 - 0.0331 * (z * z) * (z * z));
    *ca = z;
    res = gm->d * (t * t * t);
  } else if (stage == 1) {
    res = rc_gamma_test(gm, *ca, rc_u01o(rc_bits(key, k, j0 + 2)), ok);
  } else { /* the whole attempt stage - 1 */
    res = rc_gamma_attempt(gm, key, k, j0 + 3 * (stage - 1), ok);
  }
  if (boost) res *= vm_exp(vm_log(rc_u01o(rc_bits(key, k, j0 + RC_GAMMA_BOOST))) * gm->ialpha);
  return res;
}
#define GAMMA_STAGE(STAGE)                                                                    \
  OPF_VEC static void gamma_stage##STAGE(const void *ctx, const double *lam, uint64_t key,    \
                                         const int64_t *restrict k, int64_t m, int j0,         \
                                         double *restrict v, int64_t *restrict ok,            \
                                         double *restrict ca, double *restrict cb) {          \
    const rc_gamma gm = *(const rc_gamma *)ctx; /* constants in registers */                \
    (void)lam;                                                                                \
    if (gm.alpha < 1)                                                                         \
      for (int64_t t = 0; t < m; t++)                                                         \
        v[t] = gamma_lane(&gm, key, k[t], j0, STAGE, 1, &ok[t], &ca[t], &cb[t]);             \
    else                                                                                      \
      for (int64_t t = 0; t < m; t++)                                                         \
        v[t] = gamma_lane(&gm, key, k[t], j0, STAGE, 0, &ok[t], &ca[t], &cb[t]);             \
  }
GAMMA_STAGE(0)
GAMMA_STAGE(1)
GAMMA_STAGE(2)
GAMMA_STAGE(3)
static double gamma_scalar(const void *ctx, const double *lam, opf_rng *r, int64_t k, int j0) {
  (void)lam;
  return rc_gamma_draw(ctx, r, k, j0);
}
static const rj_sampler gamma_sampler = {{gamma_stage0, gamma_stage1, gamma_stage2, gamma_stage3}, 4, 1, gamma_scalar};

/* Elements [k0, k0 + n) in ascending order, and on to fill the buffer (lanes past n are
 * computed and dropped: element indices are only counters). */
static void rj_iota(int64_t *k, int64_t k0) {
  for (int64_t i = 0; i < RJ_BUF; i++) k[i] = k0 + i;
}

/* Standard gamma samples (aux: the rc_gamma). */
static void gamma_fill(const rc_ctx *g, opf_rng *r, int64_t k0, int64_t n, double *v) {
  int64_t k[RJ_BUF];
  rj_iota(k, k0);
  rj_run(&gamma_sampler, g->aux, NULL, g->key, r, k, n, 0, k0, 1, v);
}
RJ_GEN(gamma, g->b)

static double gamma_ref1(const rc_ctx *g, opf_rng *r, int64_t k) {
  return rc_gamma_draw(g->aux, r, k, 0) * g->b;
}

/* params: alpha, scale */
static int gamma_infer(opf_case *c) {
  if (!(c->p[RC_P_A] > 0) || !(c->p[RC_P_B] > 0))
    return opf_case_error(c, OPF_EINVAL, "random_gamma needs alpha > 0 and scale > 0 (alpha=%g, scale=%g)",
                          c->p[RC_P_A], c->p[RC_P_B]);
  return rc_infer(c);
}
/* a = alpha, b = the scale applied to standard gamma samples, aux = the gamma's constants
 * (negative_binomial: b = (1-p)/p, which makes the gamma the poisson's rate). */
static rc_ctx gamma_ctx(const opf_case *c, rc_gamma *gm) {
  const int nb = !strcmp(c->op->name, "negative_binomial");
  *gm = rc_gamma_make(c->p[RC_P_A]);
  rc_ctx g = rc_ctx_make(c, c->p[RC_P_A], nb ? (1.0 - c->p[RC_P_B]) / c->p[RC_P_B] : c->p[RC_P_B]);
  g.aux = gm;
  return g;
}
RC_ENTRIES(gamma, rc_gamma)

/* ---- poisson(lam) ---- */
typedef struct {
  double cdf[RC_POIS_KMAX]; /* cdf[j] = P(X <= j), summed exactly as rc_poisson_draw does */
  int J;                    /* cdf[j] stops changing from here on (plateau at 1 - eps) */
  rc_ptrs ptrs;
} pois_tab;

static void pois_tab_make(pois_tab *t, double lam) {
  double pk = exp(-lam), s = pk;
  t->cdf[0] = s;
  t->J = RC_POIS_KMAX;
  for (int n = 1; n < RC_POIS_KMAX; n++) {
    pk *= lam / n;
    s += pk;
    t->cdf[n] = s;
    if (t->J == RC_POIS_KMAX && n > lam && s == t->cdf[n - 1]) t->J = n;
  }
  if (lam >= RC_PTRS_MIN) t->ptrs = rc_ptrs_make(lam);
}

#define POIS_INV_BLOCK 128
/* Inversion for a block: X = #{j < KMAX : u > cdf[j]} (the CDF is non-decreasing, so this is
 * where the sequential search stops), counted table entry by table entry across the block. */
OPF_VEC static void pois_invert_block(const pois_tab *restrict t, uint64_t key, int64_t k0,
                                      int64_t n, double *restrict v) {
  double u[POIS_INV_BLOCK];
  for (int64_t i = 0; i < n; i++) {
    u[i] = rc_u01(rc_bits(key, k0 + i, 0));
    v[i] = (u[i] > t->cdf[t->J - 1]) * (double)(RC_POIS_KMAX - t->J);
  }
  for (int j = 0; j < t->J; j++) {
    const double cj = t->cdf[j];
    for (int64_t i = 0; i < n; i++) v[i] += u[i] > cj;
  }
}

/* ---- PTRS in stages over a list of m elements k[t] (draws from j0), each stage in vector
 * lanes over the elements the previous ones left: 0, the squeeze of attempt 0 alone (no
 * logarithm: at lam 100 it settles 2/3 of the elements); 1, the full test of attempt 0 (85%
 * of elements accepted by then); 2 and 3, the same for attempt 1 (98%); 4 and 5, the whole
 * attempts 2 and 3, one a stage (the last rarely has an element to run); the scalar sampler
 * for what remains. The rate is p's (one for all: poisson) or lam[t] per
 * element (negative_binomial: the constants built per lane). The first accepted attempt wins,
 * so the samples are those of rc_poisson_draw. ---- */
VM_INLINE double ptrs_lane(const rc_ptrs *p, uint64_t key, int64_t k, int j0, int stage, int64_t *ok,
                           double *ca, double *cb) {
  const int j = j0 + 2 * (stage < 4 ? stage / 2 : stage - 2); /* the attempt's first draw */
  if (stage >= 4) {
    const double U = rc_u01o(rc_bits(key, k, j)) - 0.5, V = rc_u01(rc_bits(key, k, j + 1));
    return RC_PTRS_ATTEMPT(p, U, V, ok, rc_floor, vm_log, rc_logfact);
  }
  if (!(stage & 1)) { /* the squeeze; U and V carried to the full test */
    *ca = rc_u01o(rc_bits(key, k, j)) - 0.5, *cb = rc_u01(rc_bits(key, k, j + 1));
    return rc_ptrs_squeeze(p, *ca, *cb, ok);
  }
  const double U = *ca, V = *cb;
  return RC_PTRS_ATTEMPT(p, U, V, ok, rc_floor, vm_log, rc_logfact);
}
#define PTRS_BLOCK(STAGE)                                                                     \
  OPF_VEC static void ptrs_block##STAGE(const void *ctx, const double *restrict lam,            \
                                        uint64_t key, const int64_t *restrict k, int64_t m,      \
                                        int j0, double *restrict v, int64_t *restrict ok,        \
                                        double *restrict ca, double *restrict cb) {              \
    if (lam)                                                                                  \
      for (int64_t t = 0; t < m; t++) {                                                       \
        const rc_ptrs q = RC_PTRS_MAKE(lam[t], rc_sqrt, vm_log);                              \
        v[t] = ptrs_lane(&q, key, k[t], j0, STAGE, &ok[t], &ca[t], &cb[t]);                   \
      }                                                                                       \
    else {                                                                                    \
      const rc_ptrs pv = *(const rc_ptrs *)ctx; /* constants in registers */                 \
      for (int64_t t = 0; t < m; t++) v[t] = ptrs_lane(&pv, key, k[t], j0, STAGE, &ok[t], &ca[t], &cb[t]); \
    }                                                                                         \
  }
PTRS_BLOCK(0)
PTRS_BLOCK(1)
PTRS_BLOCK(2)
PTRS_BLOCK(3)
PTRS_BLOCK(4)
PTRS_BLOCK(5)
static double ptrs_scalar(const void *ctx, const double *lam, opf_rng *r, int64_t k, int j0) {
  return rc_poisson_draw(lam ? *lam : ((const rc_ptrs *)ctx)->lam, r, k, j0);
}
static const rj_sampler ptrs_sampler = {
    {ptrs_block0, ptrs_block1, ptrs_block2, ptrs_block3, ptrs_block4, ptrs_block5}, 6, 2, ptrs_scalar};

/* a = lam, aux = the pois_tab: the table inversion below RC_PTRS_MIN, PTRS in stages above. */
static void poisson_fill(const rc_ctx *g, opf_rng *r, int64_t k0, int64_t n, double *v) {
  const pois_tab *t = g->aux;
  if (g->a < RC_PTRS_MIN) {
    for (int64_t i = 0; i < n; i += POIS_INV_BLOCK) /* u and v of a pass stay in L1 */
      pois_invert_block(t, g->key, k0 + i, n - i < POIS_INV_BLOCK ? n - i : POIS_INV_BLOCK, v + i);
    return;
  }
  int64_t k[RJ_BUF];
  rj_iota(k, k0);
  rj_run(&ptrs_sampler, &t->ptrs, NULL, g->key, r, k, n, 0, k0, 1, v);
}
RJ_GEN(poisson, 1.0)

static double poisson_ref1(const rc_ctx *g, opf_rng *r, int64_t k) {
  return rc_poisson_draw(g->a, r, k, 0);
}

static int poisson_infer(opf_case *c) { return rc_infer(c); }
static rc_ctx poisson_ctx(const opf_case *c, pois_tab *t) {
  pois_tab_make(t, c->p[RC_P_A]);
  rc_ctx g = rc_ctx_make(c, c->p[RC_P_A], 0);
  g.aux = t;
  return g;
}
RC_ENTRIES(poisson, pois_tab)

/* ---- negative_binomial(n, p): poisson(gamma(n) * (1-p)/p); the gamma uses draws 0..127 of
 * an element, the poisson draws 128..255. Each element has its own rate: rates below 10 take
 * the inversion search, run to a fixed depth in vector lanes (NB_STEPS0 steps over the whole
 * block, which leaves the rates from 10 unsettled as well, then NB_STEPS1 for the few that went
 * further), rates from 10 PTRS with per-element constants (a block of those alone runs PTRS
 * from the start); the scalar sampler for what neither settles. Before the stages (one inversion to depth 24 over every element,
 * PTRS's first attempts): 14.0 ns a sample at n=5 p=0.5, 22.6 at n=50 p=0.1, CPU time on AMD
 * Zen 5, the same samples. ---- */
#define NB_STEPS0 12 /* n=5 p=0.5: 3% of the elements go on */
#define NB_STEPS1 32

/* The sequential search of rc_poisson_draw for STEPS steps: the count, ok when it stopped. */
VM_INLINE double nb_invert(double l, double u, int steps, int64_t *ok) {
  double pk = vm_exp(-l), s = pk, cnt = 0;
#pragma GCC unroll 32 /* constant 1/j below */
  for (int j = 1; j <= steps; j++) {
    cnt += u > s;
    pk *= l * (1.0 / j); /* 1/j a constant: no division */
    s += pk;
  }
  *ok = cnt < steps;
  return cnt;
}
#define NB_INVERT_STAGE(S)                                                                    \
  OPF_VEC static void nb_invert_stage##S(const void *ctx, const double *restrict lam,         \
                                         uint64_t key, const int64_t *restrict k, int64_t m,   \
                                         int j0, double *restrict v, int64_t *restrict ok,    \
                                         double *ca, double *cb) {                            \
    (void)ctx, (void)ca, (void)cb;                                                            \
    for (int64_t t = 0; t < m; t++)                                                           \
      v[t] = nb_invert(lam[t], rc_u01(rc_bits(key, k[t], j0)), NB_STEPS##S, &ok[t]);          \
  }
NB_INVERT_STAGE(0)
NB_INVERT_STAGE(1)
static const rj_sampler nb_invert_sampler = {{nb_invert_stage0, nb_invert_stage1}, 2, 0, ptrs_scalar};
static const rj_sampler nb_invert_tail = {{nb_invert_stage1}, 1, 0, ptrs_scalar};

/* The rates lam[i] = gamma sample times b, big[i] when one is at least RC_PTRS_MIN, and how
 * many are. */
OPF_VEC static int64_t nb_rates(double *restrict lam, int64_t *restrict big, int64_t n, double b) {
  int64_t nbig = 0;
  for (int64_t i = 0; i < n; i++) lam[i] *= b, big[i] = lam[i] >= RC_PTRS_MIN, nbig += big[i];
  return nbig;
}
/* ok[i] only for rates below RC_PTRS_MIN (after the inversion over a whole block). */
OPF_VEC static void nb_small_only(int64_t *restrict ok, const int64_t *restrict big, int64_t n) {
  for (int64_t i = 0; i < n; i++) ok[i] &= !big[i];
}

/* a = n, b = (1-p)/p, aux = the gamma's constants (see gamma_ctx). With few rates from 10
 * (below 1/8 of the block) the inversion's first stage runs over the whole block in place,
 * and what it leaves (longer searches and those rates) is compacted and split by rate into
 * the inversion's further steps and PTRS. With more, the block is split by rate first (the
 * inversion's lanes would be wasted on them) and each list runs all its stages. Each list
 * writes its own elements' samples. Split first at every block: 8.8 ns a sample at n=5
 * p=0.5; inversion first there: 8.6 ns (1 thread, CPU time). */
static void negative_binomial_fill(const rc_ctx *g, opf_rng *r, int64_t k0, int64_t n, double *v) {
  double lam[RJ_BUF], lb[RJ_BUF], lc[RJ_BUF];
  int64_t k[RJ_BUF], kb[RJ_BUF], kc[RJ_BUF], big[RJ_BUF], ok[RJ_BUF];
  gamma_fill(g, r, k0, n, lam);
  const int64_t nbig = nb_rates(lam, big, n, g->b);
  rj_iota(k, k0);
  if (nbig == n) {
    rj_run(&ptrs_sampler, NULL, lam, g->key, r, k, n, 128, k0, 1, v);
    return;
  }
  if (nbig * 8 > n) {
    for (int want = 0; want < 2; want++) {
      const rj_lists l = {{kb, lb, NULL, NULL}, {k, lam, NULL, NULL}};
      const int64_t m = rj_keep(big, want, n, &l);
      rj_run(want ? &ptrs_sampler : &nb_invert_sampler, NULL, lb, g->key, r, kb, m, 128, k0, 0, v);
    }
    return;
  }
  nb_invert_stage0(NULL, lam, g->key, k, rj_pad(n, k, lam), 128, v, ok, NULL, NULL);
  if (nbig) nb_small_only(ok, big, n);
  const rj_lists l = {{kb, lb, big, NULL}, {k, lam, big, NULL}};
  const int64_t c = rj_keep(ok, 0, n, &l); /* big now that of the kept elements */
  for (int want = 0; want < 2 && c; want++) {
    const rj_lists lw = {{kc, lc, NULL, NULL}, {kb, lb, NULL, NULL}};
    const int64_t m = rj_keep(big, want, c, &lw);
    if (m) rj_run(want ? &ptrs_sampler : &nb_invert_tail, NULL, lc, g->key, r, kc, m, 128, k0, 0, v);
  }
}

RJ_GEN(negative_binomial, 1.0)

static double negative_binomial_ref1(const rc_ctx *g, opf_rng *r, int64_t k) {
  return rc_poisson_draw(rc_gamma_draw(g->aux, r, k, 0) * g->b, r, k, 128);
}

/* params: n, p; b = (1 - p) / p scales the gamma into the poisson rate */
static int negative_binomial_infer(opf_case *c) {
  if (!(c->p[RC_P_A] > 0) || !(c->p[RC_P_B] > 0))
    return opf_case_error(c, OPF_EINVAL, "negative_binomial needs n > 0 and 0 < p <= 1 (n=%g, p=%g)",
                          c->p[RC_P_A], c->p[RC_P_B]);
  return rc_infer(c);
}
#define negative_binomial_ctx gamma_ctx
RC_ENTRIES(negative_binomial, rc_gamma)

#define RJ_OP(NAME)                                                                           \
  RC_COMMON, .infer = NAME##_infer, .forward = NAME##_forward, .reference = NAME##_reference

OPPERF_OP(random_gamma) = {
    RJ_OP(gamma),
    .name = "random_gamma", /* "gamma" is the unary Gamma function */
    .summary = "gamma samples with shape alpha and the given scale (Marsaglia-Tsang; "
               "alpha < 1 boosted by u^(1/alpha))",
    .dtypes = OPF_DT_FLOAT,
    .n_params = 4,
    .params = {CR_SHAPE_PARAM, RC_SEED_PARAM,
               {.name = "alpha", .type = OPF_P_FLOAT, .def = 2, .min = 0, .max = 1e15,
                .help = "shape (concentration) > 0"},
               {.name = "scale", .type = OPF_P_FLOAT, .def = 1, .min = 0, .max = 1e300,
                .help = "scale > 0 (mean alpha*scale)"}},
    .shapes = RC_SETS("alpha=0.5"),
};

OPPERF_OP(poisson) = {
    RJ_OP(poisson),
    .name = "poisson",
    .summary = "poisson samples with mean lam (table inversion below 10, PTRS above)",
    .dtypes = OPF_DT_ALL,
    .n_params = 3,
    .params = {CR_SHAPE_PARAM, RC_SEED_PARAM,
               {.name = "lam", .type = OPF_P_FLOAT, .def = 4, .min = 0, .max = 1e9,
                .help = "mean (rate) >= 0"}},
    .shapes = RC_SETS("lam=100"),
};

OPPERF_OP(negative_binomial) = {
    RJ_OP(negative_binomial),
    .name = "negative_binomial",
    .summary = "negative binomial samples: failures before n successes of probability p "
               "(poisson of a gamma rate)",
    .dtypes = OPF_DT_ALL,
    .n_params = 4,
    .params = {CR_SHAPE_PARAM, RC_SEED_PARAM,
               {.name = "n", .type = OPF_P_FLOAT, .def = 5, .min = 0, .max = 1e9,
                .help = "number of successes > 0 (real values allowed)"},
               {.name = "p", .type = OPF_P_FLOAT, .def = 0.5, .min = 0, .max = 1,
                .help = "success probability in (0, 1]"}},
    .shapes = RC_SETS("n=50 p=0.1"),
};
