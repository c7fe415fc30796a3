/* test_random_stats.c: the sampling operators draw from the right distributions and are
 * reproducible. At a fixed seed and 2^18 to 10^6 samples: sample mean and variance within five
 * standard errors of the distribution's (the errors estimated from the sample's own second and
 * fourth moments), value ranges, multinomial frequencies against the probabilities, shuffle
 * giving a permutation of intact rows, dropout_mask's zero fraction and exact scale; and the
 * output bit-identical at 1 and 2 threads, different for another seed. */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"

/* Resolve, fill and run op's forward on spec at dtype dt with the given thread count. */
static void run(opf_case *c, const char *name, opf_dtype dt, const char *spec, int threads) {
  int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  ts_case_ready(c, ts_op(name), dt, spec, 0, 42);
  if (c->op->forward(c)) fail_msg("%s [%s]: forward failed: %s", name, spec, c->err.msg);
  omp_set_num_threads(saved);
}

typedef struct {
  double n, mean, var, m4; /* count, mean, variance and fourth central moment of the sample */
} moments;

static moments sample_moments(const opf_tensor *t, int64_t start, int64_t stride) {
  moments m = {0, 0, 0, 0};
  int64_t n = opf_numel(t);
  for (int64_t k = start; k < n; k += stride) m.mean += ts_get(t, k), m.n++;
  m.mean /= m.n;
  for (int64_t k = start; k < n; k += stride) {
    double d = ts_get(t, k) - m.mean, d2 = d * d;
    m.var += d2, m.m4 += d2 * d2;
  }
  m.var /= m.n - 1;
  m.m4 /= m.n;
  return m;
}

/* |observed - expected| within 5 standard errors (plus a relative 1e-9 for exact cases). */
static void near(const char *what, const char *name, const char *spec, double got, double want,
                 double se) {
  if (!(fabs(got - want) <= 5 * se + 1e-9 * fabs(want)))
    fail_msg("%s [%s]: %s %.6g, expected %.6g (5 standard errors: %.3g)", name, spec, what, got,
             want, 5 * se);
}

/* The sample's mean and variance against the distribution's. */
static void check_moments(const char *name, opf_dtype dt, const char *spec, double mean, double var) {
  opf_case c;
  run(&c, name, dt, spec, 2);
  moments m = sample_moments(&c.out[0], 0, 1);
  near("mean", name, spec, m.mean, mean, sqrt(var / m.n));
  near("variance", name, spec, m.var, var, sqrt(fmax(m.m4 - m.var * m.var, 0) / m.n));
  opf_case_release(&c);
}

/* Every element in [lo, hi] and integral when asked. */
static void check_range(const char *name, opf_dtype dt, const char *spec, double lo, double hi,
                        int integral) {
  opf_case c;
  run(&c, name, dt, spec, 2);
  for (int64_t k = 0; k < opf_numel(&c.out[0]); k++) {
    double v = ts_get(&c.out[0], k);
    if (!(v >= lo && v <= hi) || (integral && v != floor(v)))
      fail_msg("%s [%s]: element %lld is %.17g, outside [%g, %g]%s", name, spec, (long long)k, v,
               lo, hi, integral ? " or not an integer" : "");
  }
  opf_case_release(&c);
}

static void test_continuous(void **state) {
  (void)state;
  check_moments("uniform", OPF_F32, "shape=1000x1000 low=-2 high=3", 0.5, 25.0 / 12);
  check_moments("uniform", OPF_F64, "shape=1000x1000 low=-2 high=3 seed=5", 0.5, 25.0 / 12);
  check_range("uniform", OPF_F64, "shape=1000x1000 low=-2 high=3", -2, 3, 0);
  check_moments("normal", OPF_F32, "shape=1000x1000 mean=1.5 std=2", 1.5, 4);
  check_moments("normal", OPF_F64, "shape=1000x1001 mean=-1 std=0.5 seed=9", -1, 0.25);
  check_moments("exponential", OPF_F32, "shape=1000x1000 rate=2", 0.5, 0.25);
  check_moments("exponential", OPF_F64, "shape=1000x1000 rate=0.1 seed=3", 10, 100);
  check_range("exponential", OPF_F32, "shape=1000x1000 rate=2", 0, INFINITY, 0);
}

/* Box-Muller pairs: the r*cos and r*sin halves must each be N(0, 1) and uncorrelated. */
static void test_normal_pairs(void **state) {
  (void)state;
  const char *spec = "shape=1000x1000 seed=11";
  opf_case c;
  run(&c, "normal", OPF_F64, spec, 2);
  for (int half = 0; half < 2; half++) {
    moments m = sample_moments(&c.out[0], half, 2);
    near(half ? "odd-element mean" : "even-element mean", "normal", spec, m.mean, 0, sqrt(1 / m.n));
    near(half ? "odd-element variance" : "even-element variance", "normal", spec, m.var, 1,
         sqrt(2 / m.n));
  }
  double cov = 0, n = (double)opf_numel(&c.out[0]) / 2;
  for (int64_t k = 0; k + 1 < opf_numel(&c.out[0]); k += 2)
    cov += ts_get(&c.out[0], k) * ts_get(&c.out[0], k + 1);
  near("pair correlation", "normal", spec, cov / n, 0, sqrt(1 / n));
  opf_case_release(&c);
}

static void test_discrete(void **state) {
  (void)state;
  check_moments("randint", OPF_I32, "shape=1000x1000 low=-5 high=7", 0.5, (144.0 - 1) / 12);
  check_moments("randint", OPF_I64, "shape=1000x1000 low=1000000 high=1000003 seed=4", 1000001, 2.0 / 3);
  check_range("randint", OPF_I64, "shape=1000x1000 low=-5 high=7", -5, 6, 1);
  check_moments("bernoulli", OPF_F32, "shape=1000x1000 p=0.3", 0.3, 0.21);
  check_moments("bernoulli", OPF_I64, "shape=1000x1000 p=0.999 seed=2", 0.999, 0.999 * 0.001);
  check_range("bernoulli", OPF_I32, "shape=1000x1000 p=0.3", 0, 1, 1);
  /* p = 0 and 1 are exact */
  check_moments("bernoulli", OPF_F64, "shape=100x100 p=0", 0, 0);
  check_moments("bernoulli", OPF_F64, "shape=100x100 p=1", 1, 0);
  /* every value of a small range appears about equally often */
  opf_case c;
  run(&c, "randint", OPF_I32, "shape=600000 low=0 high=6", 2);
  double cnt[6] = {0}, n = (double)opf_numel(&c.out[0]);
  for (int64_t k = 0; k < opf_numel(&c.out[0]); k++) cnt[((int32_t *)c.out[0].data)[k]]++;
  for (int v = 0; v < 6; v++) near("frequency of a value", "randint", "low=0 high=6", cnt[v] / n, 1.0 / 6, sqrt(5.0 / 36 / n));
  opf_case_release(&c);
}

static void test_dropout_mask(void **state) {
  (void)state;
  const double ps[] = {0.3, 0.5, 0.9};
  for (int i = 0; i < 3; i++)
    for (int d = OPF_F32; d <= OPF_F64; d++) {
      char spec[96];
      snprintf(spec, sizeof spec, "shape=1000x1000 p=%g seed=%d", ps[i], i);
      opf_case c;
      run(&c, "dropout_mask", (opf_dtype)d, spec, 2);
      double scale = d == OPF_F32 ? (double)(float)(1 / (1 - ps[i])) : 1 / (1 - ps[i]), zeros = 0;
      int64_t n = opf_numel(&c.out[0]);
      for (int64_t k = 0; k < n; k++) {
        double v = ts_get(&c.out[0], k);
        if (v == 0) zeros++;
        else if (v != scale)
          fail_msg("dropout_mask [%s]: element %lld is %.17g, neither 0 nor the scale %.17g", spec,
                   (long long)k, v, scale);
      }
      near("zero fraction", "dropout_mask", spec, zeros / (double)n, ps[i], sqrt(ps[i] * (1 - ps[i]) / (double)n));
      opf_case_release(&c);
    }
}

static void test_rejection(void **state) {
  (void)state;
  /* gamma: mean alpha*scale, variance alpha*scale^2 (alpha < 1 takes the boosted path) */
  check_moments("random_gamma", OPF_F64, "shape=1000x1000 alpha=2.5 scale=1.5", 3.75, 5.625);
  check_moments("random_gamma", OPF_F32, "shape=1000x1000 alpha=0.5 scale=2 seed=1", 1, 2);
  check_moments("random_gamma", OPF_F64, "shape=512x512 alpha=30 scale=0.1 seed=2", 3, 0.3);
  check_moments("random_gamma", OPF_F64, "shape=512x512 alpha=1 seed=3", 1, 1);
  check_moments("random_gamma", OPF_F32, "shape=1000x1000 alpha=5 seed=4", 5, 5);
  check_range("random_gamma", OPF_F64, "shape=512x512 alpha=0.2", 0, INFINITY, 0);
  /* poisson: inversion (lam < 10) and PTRS (lam >= 10) */
  check_moments("poisson", OPF_I64, "shape=1000x1000 lam=4", 4, 4);
  check_moments("poisson", OPF_F64, "shape=1000x1000 lam=0.5 seed=1", 0.5, 0.5);
  check_moments("poisson", OPF_I32, "shape=1000x1000 lam=100 seed=2", 100, 100);
  check_moments("poisson", OPF_F32, "shape=512x512 lam=10 seed=3", 10, 10);
  check_moments("poisson", OPF_I64, "shape=512x512 lam=15.5 seed=4", 15.5, 15.5);
  check_moments("poisson", OPF_F64, "shape=512x512 lam=1e6 seed=5", 1e6, 1e6);
  check_moments("poisson", OPF_I64, "shape=100x100 lam=0", 0, 0);
  check_range("poisson", OPF_F64, "shape=512x512 lam=30", 0, INFINITY, 1);
  /* negative binomial: mean n(1-p)/p, variance n(1-p)/p^2 */
  check_moments("negative_binomial", OPF_I64, "shape=1000x1000 n=5 p=0.4", 7.5, 18.75);
  check_moments("negative_binomial", OPF_F64, "shape=512x512 n=50 p=0.1 seed=1", 450, 4500);
  check_moments("negative_binomial", OPF_I32, "shape=512x512 n=0.5 p=0.7 seed=2", 0.5 * 0.3 / 0.7,
                0.5 * 0.3 / 0.49);
  check_moments("negative_binomial", OPF_I32, "shape=100x100 n=3 p=1", 0, 0);
  check_range("negative_binomial", OPF_F32, "shape=512x512 n=5 p=0.4", 0, INFINITY, 1);
}

/* Each row's sample frequencies match its normalised weights; zero weights never come up. */
/* Pearson's chi-square of an integer sample against pmf(k, a, b): bins from 0 up, the upper
 * tail (and any bin) with an expected count below 20 pooled with its neighbour so every pooled
 * bin expects at least 20; fails above df + 6 sqrt(2 df) (the normal approximation's six
 * standard deviations: at a fixed seed a right sampler passes, a wrong one at 10^6 samples
 * lands far above). */
typedef double (*pmf_fn)(double k, double a, double b);
static void check_pmf(const char *name, opf_dtype dt, const char *spec, pmf_fn pmf, double a,
                      double b) {
  enum { KMAX = 20000 };
  opf_case c;
  run(&c, name, dt, spec, 2);
  const int64_t n = opf_numel(&c.out[0]);
  double *cnt = calloc(KMAX + 1, sizeof *cnt);
  for (int64_t k = 0; k < n; k++) {
    double v = ts_get(&c.out[0], k);
    if (!(v >= 0 && v == floor(v))) fail_msg("%s [%s]: element %lld is %.17g", name, spec, (long long)k, v);
    cnt[v < KMAX ? (int)v : KMAX]++;
  }
  double chi2 = 0, obs = 0, exp_ = 0, cum = 0;
  int df = -1;
  for (int k = 0; k < KMAX; k++) {
    double e = pmf(k, a, b) * (double)n;
    obs += cnt[k], exp_ += e, cum += e;
    if (exp_ >= 20 && (double)n - cum >= 20) { /* close the bin while the tail still holds 20 */
      chi2 += (obs - exp_) * (obs - exp_) / exp_, df++;
      obs = exp_ = 0;
    }
  }
  obs += cnt[KMAX], exp_ = (double)n - cum + exp_; /* the tail: everything not yet binned */
  chi2 += (obs - exp_) * (obs - exp_) / exp_, df++;
  free(cnt);
  opf_case_release(&c);
  if (df < 1 || !(chi2 <= df + 6 * sqrt(2.0 * df)))
    fail_msg("%s [%s]: chi-square %.1f with %d degrees of freedom (limit %.1f)", name, spec, chi2,
             df, df + 6 * sqrt(2.0 * df));
}
static double poisson_pmf(double k, double lam, double unused) {
  (void)unused;
  return lam == 0 ? (k == 0) : exp(-lam + k * log(lam) - lgamma(k + 1));
}
static double nbinom_pmf(double k, double n, double p) {
  return exp(lgamma(k + n) - lgamma(n) - lgamma(k + 1) + n * log(p) + k * log1p(-p));
}

/* The distributions of poisson and negative_binomial over whole pmfs, on both sides of the
 * switch from inversion to PTRS at lam 10 and with rates that put a block's elements on both
 * sides (negative_binomial's rates vary per element). */
static void test_discrete_pmf(void **state) {
  (void)state;
  static const double lams[] = {0.3, 4, 9.99, 10, 10.5, 17, 100, 3000};
  char spec[128];
  for (size_t i = 0; i < sizeof lams / sizeof *lams; i++) {
    snprintf(spec, sizeof spec, "shape=1000x1000 lam=%g seed=%zu", lams[i], i);
    check_pmf("poisson", i & 1 ? OPF_F64 : OPF_I64, spec, poisson_pmf, lams[i], 0);
  }
  /* r below and above 1; p near 0 (large, widely spread rates: mostly PTRS) and near 1 (rates
   * near 0: the inversion) */
  static const double nb[][2] = {{5, 0.5}, {50, 0.1}, {0.5, 0.7}, {2, 0.05}, {200, 0.9},
                                 {30, 0.75}, {0.3, 0.02}, {3, 0.98}, {20, 0.01}, {0.05, 0.5}};
  for (size_t i = 0; i < sizeof nb / sizeof *nb; i++) {
    snprintf(spec, sizeof spec, "shape=1000x1000 n=%g p=%g seed=%zu", nb[i][0], nb[i][1], i);
    check_pmf("negative_binomial", i & 1 ? OPF_I32 : OPF_F32, spec, nbinom_pmf, nb[i][0], nb[i][1]);
  }
}

/* The regularised lower incomplete gamma P(a, x): the series below a + 1, the continued
 * fraction (modified Lentz) above (Numerical Recipes' gser and gcf), to 1e-14. */
static double gamma_p(double a, double x) {
  if (x <= 0) return 0;
  const double lg = a * log(x) - x - lgamma(a);
  if (x < a + 1) {
    double ap = a, del = 1 / a, sum = del;
    for (int n = 0; n < 100000 && fabs(del) > fabs(sum) * 1e-15; n++) ap++, del *= x / ap, sum += del;
    return sum * exp(lg);
  }
  double b = x + 1 - a, c = 1 / 1e-300, d = 1 / b, h = d;
  for (int i = 1; i < 100000; i++) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b, c = b + an / c;
    d = fabs(d) < 1e-300 ? 1e-300 : d, c = fabs(c) < 1e-300 ? 1e-300 : c;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (fabs(del - 1) < 1e-15) break;
  }
  return 1 - exp(lg) * h;
}

/* random_gamma's whole distribution: Pearson's chi-square over NB bins of equal width in
 * x^(1/3) (about normal for the gamma: Wilson-Hilferty) across the central 1 - 1e-4 of the
 * mass, plus the two tails, against P(alpha, x/scale); limit as in check_pmf. Each stage of
 * the staged sampler (squeeze, full test, later attempts, the boost for alpha < 1) settles a
 * different part of the distribution, so a bias in one of them shows here. */
static void check_gamma_cdf(opf_dtype dt, const char *spec, double alpha, double scale) {
  enum { NB = 60 };
  opf_case c;
  run(&c, "random_gamma", dt, spec, 2);
  const int64_t n = opf_numel(&c.out[0]);
  /* bin edges: the 5e-5 and 1 - 5e-5 quantiles by bisection on P, then equal steps of x^(1/3) */
  double q[2], pr[2] = {5e-5, 1 - 5e-5};
  for (int e = 0; e < 2; e++) {
    double lo = 0, hi = alpha + 50 * sqrt(alpha) + 50;
    for (int it = 0; it < 200; it++) {
      const double mid = 0.5 * (lo + hi);
      *(gamma_p(alpha, mid) < pr[e] ? &lo : &hi) = mid;
    }
    q[e] = cbrt(0.5 * (lo + hi));
  }
  double edge[NB + 1], cnt[NB + 2] = {0};
  for (int b = 0; b <= NB; b++) edge[b] = pow(q[0] + (q[1] - q[0]) * b / NB, 3);
  for (int64_t k = 0; k < n; k++) {
    const double v = ts_get(&c.out[0], k) / scale;
    if (!(v >= 0)) fail_msg("random_gamma [%s]: element %lld is %.17g", spec, (long long)k, v);
    int lo = 0, hi = NB + 2; /* bin i + 1 holds [edge[i], edge[i + 1]); 0 and NB + 1 the tails */
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      *(v >= edge[mid - 1] ? &lo : &hi) = mid;
    }
    cnt[lo]++;
  }
  double chi2 = 0, prev = 0;
  for (int b = 0; b <= NB + 1; b++) {
    const double P = b <= NB ? gamma_p(alpha, edge[b]) : 1, e = (P - prev) * (double)n;
    chi2 += (cnt[b] - e) * (cnt[b] - e) / e;
    prev = P;
  }
  opf_case_release(&c);
  const int df = NB + 1;
  if (!(chi2 <= df + 6 * sqrt(2.0 * df)))
    fail_msg("random_gamma [%s]: chi-square %.1f with %d degrees of freedom (limit %.1f)", spec, chi2,
             df, df + 6 * sqrt(2.0 * df));
}

/* random_gamma over its shape regimes: alpha < 1 (boosted), 1, the default 2, moderate and
 * large (the squeeze accepts ever more), float32 and float64. */
static void test_gamma_cdf(void **state) {
  (void)state;
  static const double alphas[] = {0.05, 0.3, 0.999, 1, 2, 7.5, 100, 5000};
  char spec[128];
  for (size_t i = 0; i < sizeof alphas / sizeof *alphas; i++) {
    const double scale = i & 1 ? 0.5 : 3;
    snprintf(spec, sizeof spec, "shape=1000x1000 alpha=%g scale=%g seed=%zu", alphas[i], scale, i);
    check_gamma_cdf(i & 1 ? OPF_F32 : OPF_F64, spec, alphas[i], scale); /* float32 at alpha 0.05
                                                                         would flush 1% to 0 */
  }
}

/* The staged samplers give the scalar reference's samples (the same draws, up to last-bit
 * differences of the vector math: float64 within 1e-9) in every regime, at 1 and 2 threads:
 * gamma below and above alpha 1; poisson on both sides of the PTRS switch; negative_binomial
 * with blocks of small rates only (n=3 p=0.9), a few rates from 10 (inversion over the whole
 * block first: n=5 p=0.5), many (the block split by rate first: n=2 p=0.2, n=30 p=0.75), and
 * all (n=50 p=0.1). test_ops checks the default cases on small shapes only. */
static void test_staged_equals_reference(void **state) {
  (void)state;
  static const char *const cases[][2] = {
      {"random_gamma", "alpha=2"},      {"random_gamma", "alpha=0.3 scale=2"},
      {"random_gamma", "alpha=1"},      {"random_gamma", "alpha=40"},
      {"poisson", "lam=3"},             {"poisson", "lam=10"},
      {"poisson", "lam=100"},           {"poisson", "lam=5000"},
      {"negative_binomial", "n=3 p=0.9"}, {"negative_binomial", "n=5 p=0.5"},
      {"negative_binomial", "n=2 p=0.2"}, {"negative_binomial", "n=30 p=0.75"},
      {"negative_binomial", "n=50 p=0.1"}, {"negative_binomial", "n=0.3 p=0.02"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    for (int threads = 1; threads <= 2; threads++) {
      char spec[128], msg[256];
      snprintf(spec, sizeof spec, "shape=200003 %s seed=%zu", cases[i][1], i);
      opf_case c;
      run(&c, cases[i][0], OPF_F64, spec, threads);
      if (ts_compare_reference(&c, 1e-9, msg, sizeof msg))
        fail_msg("%s [%s] at %d threads: %s", cases[i][0], spec, threads, msg);
      opf_case_release(&c);
    }
}

static void test_multinomial(void **state) {
  (void)state;
  static const double w[3][8] = {{1, 2, 3, 4, 0, 5, 6, 7},
                                 {0, 0, 1, 0, 0, 0, 0, 3},
                                 {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8}};
  /* 8 categories take the scan path; the 1x1000 case below the guide table and bisection */
  const char *spec = "probs=3x8 num_samples=200000 seed=7";
  for (int d = OPF_F32; d <= OPF_F64; d++) {
    opf_case c;
    ts_case_ready(&c, ts_op("multinomial"), (opf_dtype)d, spec, 0, 42);
    for (int r = 0; r < 3; r++)
      for (int j = 0; j < 8; j++) ts_set(&c.in[0], r * 8 + j, w[r][j]);
    if (c.op->forward(&c)) fail_msg("multinomial: %s", c.err.msg);
    for (int r = 0; r < 3; r++) {
      double cnt[8] = {0}, tot = 0;
      for (int j = 0; j < 8; j++) tot += w[r][j];
      for (int64_t s = 0; s < 200000; s++) {
        int64_t v = ((int64_t *)c.out[0].data)[r * 200000 + s];
        if (v < 0 || v >= 8) fail_msg("multinomial: index %lld out of range", (long long)v);
        cnt[v]++;
      }
      for (int j = 0; j < 8; j++) {
        double p = w[r][j] / tot;
        if (p == 0 && cnt[j]) fail_msg("multinomial: zero-weight category %d sampled", j);
        near("category frequency", "multinomial", spec, cnt[j] / 200000, p, sqrt(p * (1 - p) / 200000));
      }
    }
    opf_case_release(&c);
  }
  for (int64_t ns = 100; ns <= 100000; ns *= 1000) { /* bisection (100 < 1000/4), guide table */
    char s2[96];
    snprintf(s2, sizeof s2, "probs=1x1000 num_samples=%lld", (long long)ns);
    opf_case c;
    ts_case_ready(&c, ts_op("multinomial"), OPF_F64, s2, 0, 42);
    for (int j = 0; j < 1000; j++) ts_set(&c.in[0], j, j % 10 == 3 ? 0 : j + 1);
    if (c.op->forward(&c)) fail_msg("multinomial: %s", c.err.msg);
    moments m = sample_moments(&c.out[0], 0, 1);
    double tot = 0, mu = 0, m2 = 0;
    for (int j = 0; j < 1000; j++) tot += ts_get(&c.in[0], j);
    for (int j = 0; j < 1000; j++) mu += j * ts_get(&c.in[0], j) / tot, m2 += (double)j * j * ts_get(&c.in[0], j) / tot;
    near("mean index", "multinomial", s2, m.mean, mu, sqrt((m2 - mu * mu) / m.n));
    for (int64_t k = 0; k < ns; k++)
      if (((int64_t *)c.out[0].data)[k] % 10 == 3) fail_msg("multinomial [%s]: zero-weight index sampled", s2);
    opf_case_release(&c);
  }
}

/* Rows of y are the rows of x, each exactly once, intact; and actually reordered. */
static void test_shuffle(void **state) {
  (void)state;
  const char *spec = "x=1000x3 seed=3";
  opf_case c;
  ts_case_ready(&c, ts_op("shuffle"), OPF_I32, spec, 0, 42);
  for (int64_t k = 0; k < 3000; k++) ts_set(&c.in[0], k, (double)k);
  if (c.op->forward(&c)) fail_msg("shuffle: %s", c.err.msg);
  char seen[1000] = {0};
  int moved = 0;
  for (int64_t r = 0; r < 1000; r++) {
    int32_t *row = (int32_t *)c.out[0].data + r * 3, src = row[0] / 3;
    if (row[0] % 3 || row[1] != row[0] + 1 || row[2] != row[0] + 2 || src < 0 || src >= 1000 || seen[src]++)
      fail_msg("shuffle [%s]: output row %lld (%d %d %d) is not a fresh row of x", spec,
               (long long)r, row[0], row[1], row[2]);
    moved += src != r;
  }
  if (moved < 900) fail_msg("shuffle [%s]: only %d of 1000 rows moved", spec, moved);
  opf_case_release(&c);
  /* one column (the element-gather path) and 1-D */
  for (int d = OPF_F32; d <= OPF_I64; d++) {
    ts_case_ready(&c, ts_op("shuffle"), (opf_dtype)d, "x=50000", 0, 42);
    for (int64_t k = 0; k < 50000; k++) ts_set(&c.in[0], k, (double)k);
    if (c.op->forward(&c)) fail_msg("shuffle: %s", c.err.msg);
    char *hit = calloc(50000, 1);
    for (int64_t k = 0; k < 50000; k++) {
      double v = ts_get(&c.out[0], k);
      if (v < 0 || v >= 50000 || hit[(int64_t)v]++) fail_msg("shuffle x=50000: not a permutation at %lld", (long long)k);
    }
    free(hit);
    opf_case_release(&c);
  }
}

/* Every sampler: bit-identical at 1 and 2 threads, and another seed changes the output. */
static void check_repro(const char *name, opf_dtype dt, const char *spec) {
  opf_case a, b, s;
  char other[256];
  snprintf(other, sizeof other, "%s seed=12345", spec);
  run(&a, name, dt, spec, 1);
  run(&b, name, dt, spec, 2);
  run(&s, name, dt, other, 2);
  if (memcmp(a.out[0].data, b.out[0].data, a.out[0].nbytes))
    fail_msg("%s %s [%s]: output differs between 1 and 2 threads", name, opf_dtype_name(dt), spec);
  if (!memcmp(a.out[0].data, s.out[0].data, a.out[0].nbytes))
    fail_msg("%s %s [%s]: seed 12345 gives the same output as the default seed", name,
             opf_dtype_name(dt), spec);
  opf_case_release(&a);
  opf_case_release(&b);
  opf_case_release(&s);
}

static void test_reproducible(void **state) {
  (void)state;
  const char *odd = "shape=301x517"; /* odd count: normal's lone last element, thread splits */
  for (int d = OPF_F32; d <= OPF_F64; d++) {
    check_repro("uniform", (opf_dtype)d, odd);
    check_repro("normal", (opf_dtype)d, odd);
    check_repro("exponential", (opf_dtype)d, odd);
    check_repro("dropout_mask", (opf_dtype)d, odd);
    check_repro("random_gamma", (opf_dtype)d, odd);
    check_repro("random_gamma", (opf_dtype)d, "shape=301x517 alpha=0.4");
    check_repro("multinomial", (opf_dtype)d, "probs=301x517 num_samples=301");
    check_repro("multinomial", (opf_dtype)d, "probs=2x5001 num_samples=30001");
  }
  for (int d = OPF_F32; d <= OPF_I64; d++) {
    check_repro("bernoulli", (opf_dtype)d, odd);
    check_repro("poisson", (opf_dtype)d, odd);
    check_repro("poisson", (opf_dtype)d, "shape=301x517 lam=57");
    check_repro("negative_binomial", (opf_dtype)d, odd);
    check_repro("negative_binomial", (opf_dtype)d, "shape=301x517 n=40 p=0.2");
    check_repro("negative_binomial", (opf_dtype)d, "shape=301x517 n=0.3 p=0.02");
    check_repro("shuffle", (opf_dtype)d, "x=100003");
    check_repro("shuffle", (opf_dtype)d, "x=3001x17");
  }
  check_repro("randint", OPF_I32, odd);
  check_repro("randint", OPF_I64, odd);
  /* an output above the streaming threshold (32 MB) takes the streaming-store path */
  check_repro("uniform", OPF_F32, "shape=4096x2049");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_continuous),  cmocka_unit_test(test_normal_pairs),
      cmocka_unit_test(test_discrete),    cmocka_unit_test(test_dropout_mask),
      cmocka_unit_test(test_rejection),   cmocka_unit_test(test_discrete_pmf),
      cmocka_unit_test(test_gamma_cdf),   cmocka_unit_test(test_staged_equals_reference),
      cmocka_unit_test(test_multinomial),
      cmocka_unit_test(test_shuffle),     cmocka_unit_test(test_reproducible),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
