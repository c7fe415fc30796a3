/* rand_common.h: shared pieces of the sampling operators: the counter-based generator (an
 * inlined copy of the library's splitmix mixer, so loops over elements vectorise), bit-exact
 * uniform conversions, a vectorisable sin/cos of 2*pi*u for Box-Muller, the scalar rejection
 * samplers (gamma: Marsaglia-Tsang; poisson: inversion or PTRS) that references and kernel
 * fall-backs share, and the params and shape sets every sampler has.
 *
 * Counters: draw j of output element k is bits(key, k << 8 | j), key from (seed, RC_STREAM);
 * so element k depends only on (seed, k) and any thread split gives the same bytes. References
 * draw the same counters through the public opf_rng API, which checks the inlined copy. */
#ifndef OPPERF_RAND_COMMON_H
#define OPPERF_RAND_COMMON_H

#include <math.h>

#include "creation/create_common.h"
#include "unary/vlibm.h"
#include "unary/vmath.h"

#define RC_STREAM 0x72616e64ull /* "rand": the opf_rng stream of every sampler */
#define RC_PAR_MIN 4096         /* sampling costs tens of cycles per element: thread earlier */

/* ---- the generator ---- */
VM_INLINE uint64_t rc_mix(uint64_t z) { /* splitmix64's finaliser, as in src/rng.c */
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
VM_INLINE uint64_t rc_ctr(int64_t k, int j) { return (uint64_t)k << 8 | (uint64_t)j; }
VM_INLINE uint64_t rc_bits(uint64_t key, int64_t k, int j) {
  return rc_mix(key ^ rc_mix(rc_ctr(k, j) + 0x9e3779b97f4a7c15ull));
}
static inline uint64_t rc_key(double seed) {
  opf_rng r;
  opf_rng_init(&r, (uint64_t)seed, RC_STREAM);
  return r.key;
}
/* The same draw through the library (references and scalar fall-backs). */
static inline uint64_t rc_draw(opf_rng *r, int64_t k, int j) {
  r->ctr = rc_ctr(k, j);
  return opf_rng_u64(r);
}

/* ---- uniforms from 64 random bits, by exponent bit tricks (exact, and vectorisable at
 * every ISA level, unlike uint64 -> double conversion before AVX-512) ---- */
VM_INLINE double rc_u01(uint64_t x) { return vm_u2d(0x3ff0000000000000ull | x >> 12) - 1.0; } /* [0,1), 2^-52 grid */
VM_INLINE double rc_u01o(uint64_t x) { return rc_u01(x) + 0x1p-53; }                         /* (0,1) */
VM_INLINE float rc_u01f(uint64_t x) { return vm_u2f(0x3f800000u | (uint32_t)(x >> 41)) - 1.0f; } /* [0,1), 2^-23 */
VM_INLINE float rc_u01fo(uint64_t x) { return rc_u01f(x) + 0x1p-24f; }                          /* (0,1) */

/* ---- square roots for vectorised loops: libm's sqrt keeps errno for negative arguments,
 * which leaves a branch (and a call) in the loop and stops vectorisation; vlibm.h declares it
 * errno-free, so these are vsqrtpd/vsqrtps (correctly rounded; the earlier bit-trick estimate
 * with four Newton steps was a long dependency chain: random_gamma 7.6 -> 6.6 ms, 1M samples
 * at 1 thread). ---- */
VM_INLINE double rc_sqrt(double v) { return VM_SQRT(v); }
VM_INLINE float rc_sqrtf(float v) { return VM_SQRT(v); }

/* floor(x) by the 2^52 shifter (round to nearest, then step down where that went up): libm's
 * floor only vectorises without trapping math. |x| >= 2^52 is already an integer. */
VM_INLINE double rc_floor(double x) {
  double t = (x + 0x1.8p52) - 0x1.8p52;
  t = t - vm_seld(vm_mask64(t > x), 1.0, 0.0);
  return vm_seld(vm_mask64(fabs(x) < 0x1p52), t, x);
}

/* ---- sin and cos of 2*pi*u, u in [0, 1) ----
 * The quarter-turn reduction r = u - q/4 is exact; sin and cos of 2*pi*r in [-pi/4, pi/4] are
 * fdlibm's kernel polynomials (float: Taylor to degree 9 and 10, error below 2e-9), and the
 * quadrant q rotates them by selects and sign flips: no branches, so loops vectorise. */
VM_INLINE void rc_sincos2pi(double u, double *s, double *c) {
  double t = u * 4.0 + 0x1.8p52;
  uint64_t q = vm_d2u(t);
  double r = (u - (t - 0x1.8p52) * 0.25) * 6.28318530717958647692, z = r * r;
  double sn = r + r * z * (-1.66666666666666324348e-01 + z * (8.33333333332248946124e-03 +
              z * (-1.98412698298579493134e-04 + z * (2.75573137070700676789e-06 +
              z * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10)))));
  double cs = 1.0 - 0.5 * z + z * z * (4.16666666666666019037e-02 + z * (-1.38888888888741095749e-03 +
              z * (2.48015872894767294178e-05 + z * (-2.75573143513906633035e-07 +
              z * (2.08757232129817482790e-09 + z * -1.13596475577881948265e-11)))));
  uint64_t swap = vm_mask64(q & 1);
  *s = vm_u2d(vm_d2u(vm_seld(swap, cs, sn)) ^ (q & 2) << 62);
  *c = vm_u2d(vm_d2u(vm_seld(swap, sn, cs)) ^ ((q + 1) & 2) << 62);
}
VM_INLINE void rc_sincos2pif(float u, float *s, float *c) {
  float t = u * 4.0f + 0x1.8p23f;
  uint32_t q = vm_f2u(t);
  float r = (u - (t - 0x1.8p23f) * 0.25f) * 6.28318530717958647692f, z = r * r;
  float sn = r + r * z * (-1.6666667e-1f + z * (8.3333333e-3f + z * (-1.9841270e-4f + z * 2.7557319e-6f)));
  float cs = 1.0f - 0.5f * z + z * z * (4.1666667e-2f + z * (-1.3888889e-3f + z * (2.4801587e-5f + z * -2.7557319e-7f)));
  uint32_t swap = vm_mask32(q & 1);
  *s = vm_u2f(vm_f2u(vm_self(swap, cs, sn)) ^ (q & 2) << 30);
  *c = vm_u2f(vm_f2u(vm_self(swap, sn, cs)) ^ ((q + 1) & 2) << 30);
}

/* ---- gamma(alpha, 1): Marsaglia and Tsang (2000). Attempt i draws j0 + 3i (normal's radius),
 * j0 + 3i + 1 (its angle) and j0 + 3i + 2 (the acceptance uniform); alpha < 1 samples
 * gamma(alpha + 1) and multiplies by u^(1/alpha) with u from draw j0 + RC_GAMMA_BOOST. The
 * acceptance rate is above 95%, so RC_GAMMA_TRIES attempts never run out in practice (if they
 * did, the result would be the mode d). ---- */
#define RC_GAMMA_TRIES 42
#define RC_GAMMA_BOOST 127

typedef struct {
  double alpha, d, c; /* d = a - 1/3, c = 1/sqrt(9d) with a = alpha (+1 when alpha < 1) */
  double ialpha;      /* 1/alpha: the boost's exponent */
} rc_gamma;

static inline rc_gamma rc_gamma_make(double alpha) {
  double a = alpha < 1 ? alpha + 1 : alpha, d = a - 1.0 / 3.0;
  return (rc_gamma){alpha, d, 1.0 / sqrt(9.0 * d), 1.0 / alpha};
}

/* The whole sampler, scalar and with libm: references and the kernels' rejected elements. */
static inline double rc_gamma_draw(const rc_gamma *g, opf_rng *r, int64_t k, int j0) {
  double res = g->d;
  for (int i = 0; i < RC_GAMMA_TRIES; i++) {
    double u1 = rc_u01o(rc_draw(r, k, j0 + 3 * i)), u2 = rc_u01(rc_draw(r, k, j0 + 3 * i + 1));
    double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2), t = 1.0 + g->c * z;
    if (t <= 0) continue;
    double v = t * t * t, u = rc_u01o(rc_draw(r, k, j0 + 3 * i + 2));
    if (u < 1.0 - 0.0331 * (z * z) * (z * z) || log(u) < 0.5 * z * z + g->d * (1.0 - v + log(v))) {
      res = g->d * v;
      break;
    }
  }
  if (g->alpha < 1) res *= pow(rc_u01o(rc_draw(r, k, j0 + RC_GAMMA_BOOST)), g->ialpha);
  return res;
}

/* The normal z and the acceptance uniform u of an attempt (draws j, j+1, j+2), branch-free. */
VM_INLINE double rc_gamma_normal(uint64_t key, int64_t k, int j, double *u) {
  double s, cs, u1 = rc_u01o(rc_bits(key, k, j)), u2 = rc_u01(rc_bits(key, k, j + 1));
  rc_sincos2pi(u2, &s, &cs);
  *u = rc_u01o(rc_bits(key, k, j + 2));
  return rc_sqrt(-2.0 * vm_log(u1)) * cs;
}

/* The test of an attempt from its z and u (squeeze or full), branch-free for vectorised loops:
 * the candidate d*v, *ok when accepted. */
VM_INLINE double rc_gamma_test(const rc_gamma *g, double z, double u, int64_t *ok) {
  const double t = 1.0 + g->c * z, v = t * t * t;
  /* t <= 0: v <= 0 and log(v) is NaN, so only the squeeze could pass: it is masked by t > 0 */
  *ok = (t > 0) & ((u < 1.0 - 0.0331 * (z * z) * (z * z)) |
                   (vm_log(u) < 0.5 * z * z + g->d * (1.0 - v + vm_log(v))));
  return g->d * v;
}

/* A whole attempt (draws j, j+1, j+2). */
VM_INLINE double rc_gamma_attempt(const rc_gamma *g, uint64_t key, int64_t k, int j, int64_t *ok) {
  double u, z = rc_gamma_normal(key, k, j, &u);
  return rc_gamma_test(g, z, u, ok);
}

/* ---- poisson(lam): inversion by sequential search below RC_PTRS_MIN (one uniform, draw j0;
 * capped at RC_POIS_KMAX, beyond any double-precision tail for lam < 10), PTRS (Hoermann 1993,
 * as in NumPy) above it: attempt i draws j0 + 2i and j0 + 2i + 1. ---- */
#define RC_PTRS_MIN 10.0
#define RC_POIS_KMAX 64
#define RC_PTRS_TRIES 63

typedef struct {
  double lam, loglam, a, b, invalpha, vr;
} rc_ptrs;

/* The PTRS constants of lam, with libm (SQRT and LOG as given) or the vectorisable forms. */
#define RC_PTRS_MAKE(lam, SQRT, LOG)                                                          \
  ({                                                                                          \
    double b_ = 0.931 + 2.53 * SQRT(lam);                                                     \
    (rc_ptrs){(lam), LOG(lam), -0.059 + 0.02483 * b_, b_, 1.1239 + 1.1328 / (b_ - 3.4),       \
              0.9277 - 3.6224 / (b_ - 2)};                                                    \
  })
static inline rc_ptrs rc_ptrs_make(double lam) { return RC_PTRS_MAKE(lam, sqrt, log); }

/* log(k!) = lgamma(x), x = k+1, for integer-valued k >= 0, branch-free and with one log:
 * Stirling's series to x^-13 from x = 8 (first omitted term below 1e-15), below it
 * log(7!) - log(x * (x+1) * ... * 7), the product of selected factors. (A table would be a
 * gather, which GCC does not emit for generic tuning: the whole loop would stay scalar.) */
VM_INLINE double rc_logfact(double k) {
  const double x = k + 1.0, r = 1.0 / x, r2 = r * r;
  const uint64_t big = vm_mask64(x >= 8.0);
  double f = 1.0;
#pragma GCC unroll 8
  for (int j = 2; j < 8; j++) f *= vm_seld(vm_mask64(j >= x), (double)j, 1.0);
  const double L = vm_log(vm_seld(big, x, f));
  double st = (x - 0.5) * L - x + 0.91893853320467274178 +
              r * (1.0 / 12 + r2 * (-1.0 / 360 + r2 * (1.0 / 1260 + r2 * (-1.0 / 1680 +
              r2 * (1.0 / 1188 + r2 * (-691.0 / 360360 + r2 * (1.0 / 156)))))));
  return vm_seld(big, st, 8.52516136106541430017 - L);
}

/* One PTRS attempt from its two uniforms (U in (-1/2, 1/2), V in [0, 1)): the candidate (a
 * double: rejected ones may be huge), and *ok when accepted, by the squeeze or the full test
 * (NumPy's log(V) + log(invalpha) - log(a/us^2 + b) taken as one log of V invalpha us^2 /
 * (a + b us^2): one division). With
 * libm or the branch-free vmath forms. */
#define RC_PTRS_ATTEMPT(p, U, V, ok, FLOOR, LOG, LOGFACT)                                     \
  ({                                                                                          \
    double us_ = 0.5 - fabs(U), us2_ = us_ * us_;                                             \
    double kd_ = FLOOR((2.0 * (p)->a / us_ + (p)->b) * (U) + (p)->lam + 0.43);                \
    int64_t valid_ = !(kd_ < 0) & !((us_ < 0.013) & ((V) > us_));                            \
    *(ok) = ((us_ >= 0.07) & ((V) <= (p)->vr)) |                                              \
            (valid_ & (LOG((V) * (p)->invalpha * us2_ / ((p)->a + (p)->b * us2_)) <=             \
                       -(p)->lam + kd_ * (p)->loglam - LOGFACT(kd_)));                        \
    kd_;                                                                                      \
  })
#define RC_LGAMMA1(k) lgamma((k) + 1)

/* The squeeze of one PTRS attempt alone (its uniforms U and V as in RC_PTRS_ATTEMPT), without
 * logarithms: the candidate, and *ok when the squeeze accepts it (about 2/3 of attempts at lam 100). RC_PTRS_ATTEMPT decides
 * the same for those and runs the full test for the others. */
VM_INLINE double rc_ptrs_squeeze(const rc_ptrs *p, double U, double V, int64_t *ok) {
  const double us = 0.5 - fabs(U);
  *ok = (us >= 0.07) & (V <= p->vr);
  return rc_floor((2.0 * p->a / us + p->b) * U + p->lam + 0.43);
}

static inline double rc_poisson_draw(double lam, opf_rng *r, int64_t k, int j0) {
  if (lam < RC_PTRS_MIN) {
    double u = rc_u01(rc_draw(r, k, j0)), pk = exp(-lam), s = pk;
    int n = 0;
    while (u > s && n < RC_POIS_KMAX) {
      n++;
      pk *= lam / n;
      s += pk;
    }
    return n;
  }
  rc_ptrs p = rc_ptrs_make(lam);
  for (int i = 0; i < RC_PTRS_TRIES; i++) {
    double U = rc_u01o(rc_draw(r, k, j0 + 2 * i)) - 0.5, V = rc_u01(rc_draw(r, k, j0 + 2 * i + 1));
    int64_t ok;
    double c = RC_PTRS_ATTEMPT(&p, U, V, &ok, floor, log, RC_LGAMMA1);
    if (ok) return c;
  }
  return floor(lam); /* only if every attempt were rejected */
}

/* ---- shared descriptor pieces: params 0 and 1 of every sampler are shape and seed ---- */
#define RC_SEED_PARAM                                                                         \
  {.name = "seed", .type = OPF_P_INT, .def = 0, .min = 0, .max = 9007199254740992.0,          \
   .help = "generator seed: element k depends only on (seed, k)"}
#define RC_P_SHAPE 0
#define RC_P_SEED 1
#define RC_P_A 2 /* first distribution param */
#define RC_P_B 3

/* Models: one "flop" per sample (so GFLOP/s reads as Gsamples/s); the output written once. */
static inline double rc_flops(const opf_case *c, opf_pass p) {
  return cr_fwd_only(p, (double)opf_numel(&c->out[0]));
}
static inline double rc_bytes(const opf_case *c, opf_pass p) {
  return cr_fwd_only(p, cr_tbytes(&c->out[0]));
}

/* ---- kernels: a context with the resolved params, typed loops per dtype, the dispatcher that
 * cr_write calls, and the reference's loop ---- */
typedef struct {
  uint64_t key;
  opf_dtype dt;
  double a, b;   /* distribution params, resolved (e.g. low and high - low) */
  float fa, fb;  /* the same in float, for float32 loops */
  uint64_t t;    /* an integer threshold or range */
  int64_t i0;    /* an integer offset */
  const void *aux; /* operator-specific tables */
} rc_ctx;

static inline rc_ctx rc_ctx_make(const opf_case *c, double a, double b) {
  return (rc_ctx){.key = rc_key(c->p[RC_P_SEED]), .dt = c->out[0].dtype, .a = a, .b = b,
                  .fa = (float)a, .fb = (float)b};
}

/* One draw per element: y[i] = EXPR with x the 64 bits of element lo + i. */
#define RC_MAP(NAME, SUF, T, EXPR)                                                            \
  OPF_VEC static void NAME##_##SUF(const rc_ctx *restrict gp, int64_t lo, int64_t n,          \
                                   T *restrict y) {                                           \
    const rc_ctx gv = *gp, *const g = &gv; /* params in registers: no loads in the arms */   \
    for (int64_t i = 0; i < n; i++) {                                                         \
      const uint64_t x = rc_bits(g->key, lo + i, 0);                                          \
      y[i] = (T)(EXPR);                                                                       \
    }                                                                                         \
  }

/* Elements [lo, hi) through the typed loop of the output dtype: NAME##_f32 (float), _f64 and,
 * with RC_DISPATCH_ALL, _i32 and _i64. */
#define RC_DISPATCH_CASES(NAME)                                                               \
  case OPF_F32: NAME##_f32(g, lo, hi - lo, dst); break;                                       \
  case OPF_F64: NAME##_f64(g, lo, hi - lo, dst); break;
#define RC_DISPATCH_FLOAT(NAME)                                                               \
  static void NAME##_gen(const void *p, int64_t lo, int64_t hi, void *dst) {                  \
    const rc_ctx *g = p;                                                                      \
    switch (g->dt) {                                                                          \
      RC_DISPATCH_CASES(NAME)                                                                 \
    default: break;                                                                           \
    }                                                                                         \
  }
#define RC_DISPATCH_ALL(NAME)                                                                 \
  static void NAME##_gen(const void *p, int64_t lo, int64_t hi, void *dst) {                  \
    const rc_ctx *g = p;                                                                      \
    switch (g->dt) {                                                                          \
      RC_DISPATCH_CASES(NAME)                                                                 \
    case OPF_I32: NAME##_i32(g, lo, hi - lo, dst); break;                                     \
    default: NAME##_i64(g, lo, hi - lo, dst); break;                                          \
    }                                                                                         \
  }

/* Store a block of double samples v (times s) into the output dtype. */
#define RC_PUT(SUF, T)                                                                        \
  OPF_VEC static inline void rc_put_##SUF(T *restrict y, const double *restrict v, int64_t n, \
                                          double s) {                                         \
    for (int64_t i = 0; i < n; i++) y[i] = (T)(v[i] * s);                                     \
  }
RC_PUT(f32, float)
RC_PUT(f64, double)
RC_PUT(i32, int32_t)
RC_PUT(i64, int64_t)
static inline void rc_put(void *y, opf_dtype dt, const double *v, int64_t n, double s) {
  switch (dt) {
  case OPF_F32: rc_put_f32(y, v, n, s); break;
  case OPF_F64: rc_put_f64(y, v, n, s); break;
  case OPF_I32: rc_put_i32(y, v, n, s); break;
  default: rc_put_i64(y, v, n, s); break;
  }
}

/* Sets of the samplers with a second parameter regime ALT (e.g. "lam=100"). */
#define RC_SETS(ALT)                                                                          \
  {{"standard", "shape=1024x1024"},                                                           \
   {"standard", "shape=1024x1024 " ALT},                                                      \
   {"skewed", "shape=10000x10"},                                                              \
   {"skewed", "shape=10x10000"},                                                              \
   {"skewed", "shape=10000x1"},                                                               \
   {"skewed", "shape=100000x10"},                                                             \
   {"small", "shape=16x16"},                                                                  \
   {"small", "shape=16x16 " ALT},                                                             \
   {"small", "shape=1x1024"},                                                                 \
   {"small", "shape=37x3 " ALT},                                                              \
   {"small", "shape=none"},                                                                   \
   {"test", "shape=301x517"},                                                                 \
   {"test", "shape=301x517 " ALT},                                                            \
   {"large", "shape=8192x8192"},                                                              \
   {"huge", "shape=46341x46341"}}

/* Run a sampler over the whole output: threaded, streaming when it is large. */
static inline int rc_run(opf_case *c, cr_gen_fn gen, const rc_ctx *g) {
  cr_write(&c->out[0], gen, g, RC_PAR_MIN, cr_large(&c->out[0]));
  return OPF_OK;
}

/* Reference loop: element k = f(g, r, k) with draws through r (the public generator). */
typedef double (*rc_ref_fn)(const rc_ctx *g, opf_rng *r, int64_t k);
static inline int rc_ref_run(opf_case *c, const rc_ctx *g, rc_ref_fn f) {
  opf_rng r;
  opf_rng_init(&r, (uint64_t)c->p[RC_P_SEED], RC_STREAM);
  for (int64_t k = 0; k < opf_numel(&c->out[0]); k++) cr_store(c->out[0].data, g->dt, k, f(g, &r, k));
  return OPF_OK;
}

/* forward and reference of sampler NAME from NAME##_ctx(c, &state) (state: STATE, storage for
 * whatever the context points to), NAME##_gen and NAME##_ref1. */
#define RC_ENTRIES(NAME, STATE)                                                               \
  static int NAME##_forward(opf_case *c) {                                                    \
    STATE s;                                                                                  \
    rc_ctx g = NAME##_ctx(c, &s);                                                             \
    return rc_run(c, NAME##_gen, &g);                                                         \
  }                                                                                           \
  static int NAME##_reference(opf_case *c) {                                                  \
    STATE s;                                                                                  \
    rc_ctx g = NAME##_ctx(c, &s);                                                             \
    return rc_ref_run(c, &g, NAME##_ref1);                                                    \
  }

static inline int rc_infer(opf_case *c) { return cr_shape_out(c, RC_P_SHAPE, c->dtype); }

#define RC_COMMON                                                                             \
  .abi = OPF_OP_ABI, .category = "random", .n_out = 1, .out = {"y"}, .flops = rc_flops,       \
  .bytes = rc_bytes

#endif
