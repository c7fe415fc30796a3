/* discrete.c: randint, bernoulli and dropout_mask from the counter-based generator. One draw
 * per element and integer arithmetic only, so the loops vectorise and the kernels agree with
 * their references exactly: randint maps 32 random bits onto the range by multiply-shift
 * (Lemire, without the rejection step: bias below range/2^32); bernoulli and dropout_mask
 * compare 53 random bits with p * 2^53. */
#include "random/rand_common.h"

/* ---- randint(low, high): i0 = low, t = high - low (at most 2^32) ---- */
#define RANDINT_EXPR g->i0 + (int64_t)(((x >> 32) * g->t) >> 32)
RC_MAP(randint, i32, int32_t, RANDINT_EXPR)
RC_MAP(randint, i64, int64_t, RANDINT_EXPR)

static void randint_gen(const void *p, int64_t lo, int64_t hi, void *dst) {
  const rc_ctx *g = p;
  if (g->dt == OPF_I32) randint_i32(g, lo, hi - lo, dst);
  else randint_i64(g, lo, hi - lo, dst);
}

static double randint_ref1(const rc_ctx *g, opf_rng *r, int64_t k) {
  unsigned __int128 bits32 = rc_draw(r, k, 0) >> 32; /* a uniform integer in [0, 2^32) */
  return (double)(g->i0 + (int64_t)(bits32 * g->t / 4294967296u)); /* floor(u * range) */
}

static int randint_infer(opf_case *c) {
  double lo = c->p[RC_P_A], hi = c->p[RC_P_B];
  if (!(hi > lo) || hi - lo > 4294967296.0)
    return opf_case_error(c, OPF_EINVAL, "randint needs low < high with high - low <= 2^32 "
                          "(low=%.17g, high=%.17g)", lo, hi);
  int rc = cr_check_int(c, c->dtype, "low", lo);
  if (!rc) rc = cr_check_int(c, c->dtype, "high - 1", hi - 1);
  return rc ? rc : rc_infer(c);
}
static rc_ctx randint_ctx(const opf_case *c, void *s) {
  (void)s;
  rc_ctx g = rc_ctx_make(c, 0, 0);
  g.i0 = (int64_t)c->p[RC_P_A];
  g.t = (uint64_t)(c->p[RC_P_B] - c->p[RC_P_A]);
  return g;
}
RC_ENTRIES(randint, char)

/* ---- bernoulli(p) and dropout_mask(p): t = ceil(p * 2^53); a draw's top 53 bits n below t
 * is a success (for an integer n, n < t exactly when n < p * 2^53, so the probability is
 * p up to 2^-53). dropout keeps an element (value 1/(1-p), in a) when it is not a success, so
 * its zero fraction is p. ---- */
#define BERN_EXPR ((x >> 11) < g->t)
RC_MAP(bernoulli, f32, float, BERN_EXPR)
RC_MAP(bernoulli, f64, double, BERN_EXPR)
RC_MAP(bernoulli, i32, int32_t, BERN_EXPR)
RC_MAP(bernoulli, i64, int64_t, BERN_EXPR)
RC_DISPATCH_ALL(bernoulli)

#define DROP_EXPR SCALE * ((x >> 11) >= g->t)
#define SCALE g->fa
RC_MAP(dropout_mask, f32, float, DROP_EXPR)
#undef SCALE
#define SCALE g->a
RC_MAP(dropout_mask, f64, double, DROP_EXPR)
#undef SCALE
RC_DISPATCH_FLOAT(dropout_mask)

static double bernoulli_ref1(const rc_ctx *g, opf_rng *r, int64_t k) {
  /* exact: n < 2^53 converts exactly, and scaling p by 2^53 is exact */
  return (double)(rc_draw(r, k, 0) >> 11) < g->b * 0x1p53;
}
static double dropout_mask_ref1(const rc_ctx *g, opf_rng *r, int64_t k) {
  return bernoulli_ref1(g, r, k) ? 0 : g->dt == OPF_F32 ? (double)(float)g->a : g->a;
}

static int bernoulli_infer(opf_case *c) { return rc_infer(c); }
static int dropout_mask_infer(opf_case *c) {
  if (!(c->p[RC_P_A] < 1))
    return opf_case_error(c, OPF_EINVAL, "dropout_mask needs p < 1 (p=%g): p = 1 drops "
                          "everything and the scale 1/(1-p) is infinite", c->p[RC_P_A]);
  return rc_infer(c);
}
/* a = 1/(1-p) (dropout's scale), b = p, t = ceil(p * 2^53) */
static rc_ctx bernoulli_ctx(const opf_case *c, void *s) {
  (void)s;
  double p = c->p[RC_P_A];
  rc_ctx g = rc_ctx_make(c, p < 1 ? 1.0 / (1.0 - p) : 0, p);
  g.t = (uint64_t)ceil(p * 0x1p53);
  return g;
}
#define dropout_mask_ctx bernoulli_ctx
RC_ENTRIES(bernoulli, char)
RC_ENTRIES(dropout_mask, char)

#define DISC_OP(NAME)                                                                         \
  RC_COMMON, .name = #NAME, .shapes = CR_SHAPE_SETS, .infer = NAME##_infer,                   \
  .forward = NAME##_forward, .reference = NAME##_reference

OPPERF_OP(randint) = {
    DISC_OP(randint),
    .summary = "uniform integers in [low, high) (multiply-shift of 32 random bits)",
    .dtypes = OPF_DT_INT,
    .n_params = 4,
    .params = {CR_SHAPE_PARAM, RC_SEED_PARAM,
               {.name = "low", .type = OPF_P_INT, .def = 0, .min = -9007199254740992.0,
                .max = 9007199254740992.0, .help = "lowest value (included)"},
               {.name = "high", .type = OPF_P_INT, .def = 100, .min = -9007199254740992.0,
                .max = 9007199254740992.0, .help = "bound (excluded); high - low <= 2^32"}},
};

OPPERF_OP(bernoulli) = {
    DISC_OP(bernoulli),
    .summary = "1 with probability p, else 0",
    .dtypes = OPF_DT_ALL,
    .n_params = 3,
    .params = {CR_SHAPE_PARAM, RC_SEED_PARAM,
               {.name = "p", .type = OPF_P_FLOAT, .def = 0.5, .min = 0, .max = 1,
                .help = "success probability"}},
};

OPPERF_OP(dropout_mask) = {
    DISC_OP(dropout_mask),
    .summary = "dropout's scaled mask: 0 with probability p, else 1/(1-p)",
    .dtypes = OPF_DT_FLOAT,
    .n_params = 3,
    .params = {CR_SHAPE_PARAM, RC_SEED_PARAM,
               {.name = "p", .type = OPF_P_FLOAT, .def = 0.5, .min = 0, .max = 1,
                .help = "drop probability, in [0, 1)"}},
};
