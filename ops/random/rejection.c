/* rejection.c: random_gamma (Marsaglia-Tsang), poisson (inversion below lam 10, PTRS above) and
 * negative_binomial (poisson of a gamma-distributed rate, as NumPy does). Rejection sampling
 * does not vectorise as such, so a block of elements goes through stages (rj_run): each runs,
 * branch-free in vector lanes, the part of the rejection loop that settles most of the
 * elements the stages before it left (the squeeze of the first attempt for all elements, then
 * its full test with the logarithms for the rest, then further attempts), over a compacted
 * list of those elements; the scalar sampler from rand_common.h that the references use takes
 * the few left at the end. The same counters, so the same samples (up to last-bit differences
 * of the vector math, which could flip an accept decision with probability around 1e-15).
 * Small-lam poisson is a vectorised count over the CDF table instead. 1M samples at 1 thread,
 * CPU time on AMD Zen 5, before the stages -> after: random_gamma alpha=2 7.6 -> 5.0 ms,
 * poisson lam=100 11.4 -> 5.0, negative_binomial n=5 p=0.5 14.4 -> 10.5, n=50 p=0.1 23.0 ->
 * 9.7. */
#include "random/rand_common.h"

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
                            int64_t m, int j0, double *v, int64_t *ok);
typedef double (*rj_scalar_fn)(const void *ctx, const double *lam, opf_rng *r, int64_t k, int j0);

/* The samples v[t] of the m <= RJ_BLOCK elements k[t] through n_stage stages and the scalar
 * sampler. Between stages the unsettled positions are compacted branch-free (a rejection is
 * an unpredictable branch) and their lists padded (rj_pad): k, lam and v need room for
 * RJ_BUF entries. */
static void rj_run(const rj_stage_fn *stage, int n_stage, rj_scalar_fn scalar, const void *ctx,
                   double *lam, uint64_t key, opf_rng *r, int64_t *k, int64_t m, int j0, double *v) {
  int64_t ok[RJ_BUF], pos[RJ_BUF], kb[RJ_BUF], c = 0;
  double lb[RJ_BUF], vb[RJ_BUF];
  const int64_t m8 = rj_pad(m, k, lam);
  stage[0](ctx, lam, key, k, m8, j0, v, ok);
  for (int64_t i = 0; i < m; i++) pos[c] = i, c += !ok[i];
  for (int s = 1; s < n_stage && c; s++) {
    for (int64_t t = 0; t < c; t++) kb[t] = k[pos[t]];
    if (lam)
      for (int64_t t = 0; t < c; t++) lb[t] = lam[pos[t]];
    stage[s](ctx, lam ? lb : NULL, key, kb, rj_pad(c, kb, lam ? lb : NULL), j0, vb, ok);
    int64_t c2 = 0;
    for (int64_t t = 0; t < c; t++) v[pos[t]] = vb[t], pos[c2] = pos[t], c2 += !ok[t];
    c = c2;
  }
  for (int64_t t = 0; t < c; t++) v[pos[t]] = scalar(ctx, lam ? &lam[pos[t]] : NULL, r, k[pos[t]], j0);
}

/* ---- gamma(alpha, scale): stage 0, the squeeze u < 1 - 0.0331 z^4 of attempt 0 (draws
 * j0..j0+2) alone, without the two logarithms of the full test (alpha=2: about 90% of the
 * elements); 1, its full test (98.5%); 2, attempts 1 and 2; then rc_gamma_draw (about 1e-4
 * of the elements). alpha < 1 (boost) multiplies by u^(1/alpha) from draw j0 + RC_GAMMA_BOOST.
 * ---- */
VM_INLINE double gamma_lane(const rc_gamma *gm, uint64_t key, int64_t k, int j0, int stage,
                            int boost, int64_t *ok) {
  double res;
  if (stage == 0) {
    double s, cs, u1 = rc_u01o(rc_bits(key, k, j0)), u2 = rc_u01(rc_bits(key, k, j0 + 1));
    rc_sincos2pi(u2, &s, &cs);
    const double z = rc_sqrt(-2.0 * vm_log(u1)) * cs, t = 1.0 + gm->c * z;
    const double u = rc_u01o(rc_bits(key, k, j0 + 2));
    *ok = (t > 0) & (u < 1.0 - 0.0331 * (z * z) * (z * z));
    res = gm->d * (t * t * t);
  } else if (stage == 1) {
    res = rc_gamma_attempt(gm, key, k, j0, ok);
  } else {
    int64_t a1, a2;
    const double x1 = rc_gamma_attempt(gm, key, k, j0 + 3, &a1), x2 = rc_gamma_attempt(gm, key, k, j0 + 6, &a2);
    res = vm_seld(vm_mask64(a1), x1, x2);
    *ok = a1 | a2;
  }
  if (boost) res *= vm_exp(vm_log(rc_u01o(rc_bits(key, k, j0 + RC_GAMMA_BOOST))) * gm->ialpha);
  return res;
}
#define GAMMA_STAGE(STAGE)                                                                    \
  OPF_VEC static void gamma_stage##STAGE(const void *ctx, const double *lam, uint64_t key,    \
                                         const int64_t *restrict k, int64_t m, int j0,         \
                                         double *restrict v, int64_t *restrict ok) {          \
    const rc_gamma gm = *(const rc_gamma *)ctx; /* constants in registers */                \
    (void)lam;                                                                                \
    if (gm.alpha < 1)                                                                         \
      for (int64_t t = 0; t < m; t++) v[t] = gamma_lane(&gm, key, k[t], j0, STAGE, 1, &ok[t]); \
    else                                                                                      \
      for (int64_t t = 0; t < m; t++) v[t] = gamma_lane(&gm, key, k[t], j0, STAGE, 0, &ok[t]); \
  }
GAMMA_STAGE(0)
GAMMA_STAGE(1)
GAMMA_STAGE(2)
static const rj_stage_fn gamma_stages[] = {gamma_stage0, gamma_stage1, gamma_stage2};
static double gamma_scalar(const void *ctx, const double *lam, opf_rng *r, int64_t k, int j0) {
  (void)lam;
  return rc_gamma_draw(ctx, r, k, j0);
}

/* Elements [k0, k0 + n) in ascending order, and on to fill the buffer (lanes past n are
 * computed and dropped: element indices are only counters). */
static void rj_iota(int64_t *k, int64_t k0) {
  for (int64_t i = 0; i < RJ_BUF; i++) k[i] = k0 + i;
}

/* Standard gamma samples (aux: the rc_gamma). */
static void gamma_fill(const rc_ctx *g, opf_rng *r, int64_t k0, int64_t n, double *v) {
  int64_t k[RJ_BUF];
  rj_iota(k, k0);
  rj_run(gamma_stages, 3, gamma_scalar, g->aux, NULL, g->key, r, k, n, 0, v);
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
 * of elements accepted by then); 2 and 3, the same for attempt 1 (98%); 4, attempts 2 and 3;
 * the scalar sampler for what remains. The rate is p's (one for all: poisson) or lam[t] per
 * element (negative_binomial: the constants built per lane). The first accepted attempt wins,
 * so the samples are those of rc_poisson_draw. ---- */
#define PTRS_STAGES 5
VM_INLINE double ptrs_lane(const rc_ptrs *p, uint64_t key, int64_t k, int j0, int stage, int64_t *ok) {
  const int j = j0 + 2 * (stage / 2); /* the attempt's first draw */
  if (stage == 4) return rc_ptrs_try(p, key, k, j, ok);
  if (!(stage & 1)) return rc_ptrs_squeeze(p, key, k, j, ok);
  const double U = rc_u01o(rc_bits(key, k, j)) - 0.5, V = rc_u01(rc_bits(key, k, j + 1));
  return RC_PTRS_ATTEMPT(p, U, V, ok, rc_floor, vm_log, rc_logfact);
}
#define PTRS_BLOCK(STAGE)                                                                     \
  OPF_VEC static void ptrs_block##STAGE(const void *ctx, const double *restrict lam,            \
                                        uint64_t key, const int64_t *restrict k, int64_t m,      \
                                        int j0, double *restrict v, int64_t *restrict ok) {      \
    if (lam)                                                                                  \
      for (int64_t t = 0; t < m; t++) {                                                       \
        const rc_ptrs q = RC_PTRS_MAKE(lam[t], rc_sqrt, vm_log);                              \
        v[t] = ptrs_lane(&q, key, k[t], j0, STAGE, &ok[t]);                                   \
      }                                                                                       \
    else {                                                                                    \
      const rc_ptrs pv = *(const rc_ptrs *)ctx; /* constants in registers */                 \
      for (int64_t t = 0; t < m; t++) v[t] = ptrs_lane(&pv, key, k[t], j0, STAGE, &ok[t]);    \
    }                                                                                         \
  }
PTRS_BLOCK(0)
PTRS_BLOCK(1)
PTRS_BLOCK(2)
PTRS_BLOCK(3)
PTRS_BLOCK(4)
static const rj_stage_fn ptrs_stages[PTRS_STAGES] = {ptrs_block0, ptrs_block1, ptrs_block2,
                                                     ptrs_block3, ptrs_block4};
static double ptrs_scalar(const void *ctx, const double *lam, opf_rng *r, int64_t k, int j0) {
  return rc_poisson_draw(lam ? *lam : ((const rc_ptrs *)ctx)->lam, r, k, j0);
}

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
  rj_run(ptrs_stages, PTRS_STAGES, ptrs_scalar, &t->ptrs, NULL, g->key, r, k, n, 0, v);
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
 * an element, the poisson draws 128..255. Each element has its own rate, so the elements are
 * split by rate and each list goes through its own stages: rates below 10 the inversion
 * search, run to a fixed depth in vector lanes (NB_STEPS0 steps for all, NB_STEPS1 for the
 * few that went further), rates from 10 PTRS with per-element constants; the scalar sampler
 * for what neither settles. Before the stages (one inversion to depth 24 over every element,
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
                                         int j0, double *restrict v, int64_t *restrict ok) {  \
    (void)ctx;                                                                                \
    for (int64_t t = 0; t < m; t++)                                                           \
      v[t] = nb_invert(lam[t], rc_u01(rc_bits(key, k[t], j0)), NB_STEPS##S, &ok[t]);          \
  }
NB_INVERT_STAGE(0)
NB_INVERT_STAGE(1)
static const rj_stage_fn nb_invert_stages[] = {nb_invert_stage0, nb_invert_stage1};

/* The rates lam[i] = gamma sample times b, and how many are at least RC_PTRS_MIN. */
OPF_VEC static int64_t nb_rates(double *restrict lam, int64_t n, double b) {
  int64_t big = 0;
  for (int64_t i = 0; i < n; i++) lam[i] *= b, big += lam[i] >= RC_PTRS_MIN;
  return big;
}

/* a = n, b = (1-p)/p, aux = the gamma's constants (see gamma_ctx). A block whose rates are
 * all on one side runs in place; otherwise the two lists are gathered branch-free, run, and
 * their samples scattered back. */
static void negative_binomial_fill(const rc_ctx *g, opf_rng *r, int64_t k0, int64_t n, double *v) {
  double lam[RJ_BUF], lb[2][RJ_BUF], vb[RJ_BUF];
  int64_t kb[2][RJ_BUF], at[2][RJ_BUF], m[2], m0 = 0, m1 = 0; /* counters in registers */
  gamma_fill(g, r, k0, n, lam);
  const int64_t nbig = nb_rates(lam, n, g->b);
  if (nbig == 0 || nbig == n) {
    rj_iota(kb[0], k0);
    if (nbig)
      rj_run(ptrs_stages, PTRS_STAGES, ptrs_scalar, NULL, lam, g->key, r, kb[0], n, 128, v);
    else
      rj_run(nb_invert_stages, 2, ptrs_scalar, NULL, lam, g->key, r, kb[0], n, 128, v);
    return;
  }
  for (int64_t i = 0; i < n; i++) { /* written to both lists, kept in one */
    const double l = lam[i];
    const int64_t big = l >= RC_PTRS_MIN;
    lb[0][m0] = lb[1][m1] = l, kb[0][m0] = kb[1][m1] = k0 + i, at[0][m0] = at[1][m1] = i;
    m0 += !big, m1 += big;
  }
  m[0] = m0, m[1] = m1;
  for (int big = 0; big < 2; big++) {
    if (big)
      rj_run(ptrs_stages, PTRS_STAGES, ptrs_scalar, NULL, lb[1], g->key, r, kb[1], m[1], 128, vb);
    else
      rj_run(nb_invert_stages, 2, ptrs_scalar, NULL, lb[0], g->key, r, kb[0], m[0], 128, vb);
    for (int64_t t = 0; t < m[big]; t++) v[at[big][t]] = vb[t];
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
