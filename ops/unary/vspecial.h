/* vspecial.h: vectorisable special functions with no libm SIMD variant: erfinv, gamma,
 * lgamma and digamma (float64; the float32 gamma, lgamma and digamma evaluate the float64
 * ones and round once), and sin(pi x). Branch-free like vmath.h: every region is computed and
 * the result selected per lane, so the loops that inline these vectorise. */
#ifndef OPPERF_VSPECIAL_H
#define OPPERF_VSPECIAL_H

#include "unary/vlibm.h"
#include "unary/vmath.h"

/* Masks combine with & and ~, never &&: a short-circuit is control flow, which stops the
 * vectoriser in loops that also call the vector libm. */

/* ---- polynomials ----
 * p(t) = sum c[k] t^k (c lowest first) as four Horner chains in t^4 over c[j], c[j+4], ...:
 * a single chain of 25 dependent FMAs is latency-bound (measured 5.7 ns per float64 erfinv
 * element against 2.4 with four chains). n is a constant at every call, so each chain loop
 * (at most 7 steps) unrolls completely before vectorisation and the loads fold to constants.
 * VM_POLY_SEL takes coefficient k from ca or cb per lane (mask m set: ca), so two
 * polynomials of the same degree share the chains. */
#define VM_POLY(T, S, SEL, MASK)                                                              \
  VM_INLINE T vm_chain_##S(T t4, MASK m, const T *ca, const T *cb, int j, int n) {             \
    T s = 0;                                                                                  \
    for (int k = j + (n - 1 - j) / 4 * 4; k >= j; k -= 4) s = s * t4 + SEL(m, ca[k], cb[k]);  \
    return s;                                                                                 \
  }                                                                                           \
  VM_INLINE T vm_poly_sel_##S(T t, MASK m, const T *ca, const T *cb, int n) {                  \
    T t2 = t * t, t4 = t2 * t2;                                                               \
    T p0 = vm_chain_##S(t4, m, ca, cb, 0, n), p1 = vm_chain_##S(t4, m, ca, cb, 1, n);         \
    T p2 = vm_chain_##S(t4, m, ca, cb, 2, n), p3 = vm_chain_##S(t4, m, ca, cb, 3, n);         \
    return (p0 + t * p1) + t2 * (p2 + t * p3);                                                \
  }                                                                                           \
  VM_INLINE T vm_poly_##S(T t, const T *c, int n) { return vm_poly_sel_##S(t, 0, c, c, n); }
VM_POLY(double, f64, vm_seld, uint64_t)
VM_POLY(float, f32, vm_self, uint32_t)
#undef VM_POLY

#define VM_PI 3.14159265358979323846

/* ---- erfinv ----
 * erfinv(x) = x P(w), w = -log((1-x)(1+x)) (Giles' variable, "Approximating the erfinv
 * function", 2010), with polynomials from our own Chebyshev fits to erfinv(x)/x (mpmath, 60
 * digits). (1-x)(1+x) rather than 1-x^2 keeps w accurate near |x| = 1. float64: for w < 6.25
 * (|x| < 0.998) degree 24 in w - 3.125, fit error 7e-18; beyond, degree 20 in s - 3.25 for
 * s = sqrt(w) in [2.5, 4) and in s - 5.025 for s in [4, 6.05] (to 1 - x = 2^-53), fit
 * errors 4e-18 and 5e-19. Measured worst relative error 3e-16 for |x| < 0.998, 1e-14 beyond
 * (the conditioning of erfinv near 1). */
static const double vm_erfinv_a[25] = {
    1.6536545626831027,     0.24015818242558834,    -0.006033670871426851,
    -0.0007407025341546431, 0.00018673420801981186, -1.3882523393957483e-05,
    -1.3654691758785656e-06, 4.23478816822246e-07,  -2.907039127564132e-08,
    -4.1126604371632185e-09, 1.051223377050429e-09, -5.414303283919504e-11,
    -1.2978805369932565e-11, 2.6305268312595183e-12, -8.07192593899004e-14,
    -4.0020031087558496e-14, 6.521333511502239e-15, -3.94018812230432e-17,
    -1.2215637192404172e-16, 1.5510787009902526e-17, 6.075050702072414e-19,
    -3.4734793888538036e-19, 1.999259988861535e-20, 3.194015548136271e-21,
    -3.5932028927020693e-22,
};
static const double vm_erfinv_b[21] = {
    3.0838856104922208,     1.0052589676941655,     0.005370914553555033,
    -0.0037512085082247342, 0.00249144209795696,    -0.0016882755354488555,
    0.0009532893415794137,  -0.0003550378137852452, 2.4031512865758357e-05,
    6.828711739251955e-05,  -4.732068066544697e-05, 1.2465028224217455e-05,
    2.93257845538535e-06,   -3.985705945648173e-06, 1.4815977874022539e-06,
    -2.761716223816241e-08, -2.4549818963339823e-07, 1.3158663683192966e-07,
    -2.091453334773126e-08, -1.5305397964152548e-08, 7.680200479077053e-09,
};
static const double vm_erfinv_c[21] = {
    4.875163823000273,      1.0102931304286786,     -0.0001545646440308408,
    -0.0002075522021218392, 7.357695154813591e-05,  -1.9015699590864924e-05,
    4.356195263041318e-06,  -9.486829814187624e-07, 2.1462640939767083e-07,
    -6.081434087497039e-08, 2.5145637180704112e-08, -1.3034346932865202e-08,
    6.73743109768909e-09,   -3.0944336771497923e-09, 1.189201625110384e-09,
    -3.553749221805019e-10, 6.483647999357704e-11,  8.030345016721887e-12,
    -1.3220943544249264e-11, 5.462157404217924e-12, -8.977601536307838e-13,
};

/* erfinv for |x| < 0.998 only (w < 5.53): the central polynomial; vm_erfinv computes the
 * same value there with the same operations. */
VM_INLINE double vm_erfinv_central(double x) {
  return x * vm_poly_f64(-vl_log((1.0 - x) * (1.0 + x)) - 3.125, vm_erfinv_a, 25);
}

VM_INLINE double vm_erfinv(double x) {
  double w = -vl_log((1.0 - x) * (1.0 + x)), s = VM_SQRT(w);
  uint64_t c = vm_mask64(s >= 4.0);
  double pa = vm_poly_f64(w - 3.125, vm_erfinv_a, 25);
  double pt = vm_poly_sel_f64(s - vm_seld(c, 5.025, 3.25), c, vm_erfinv_c, vm_erfinv_b, 21);
  double a = __builtin_fabs(x), y = x * vm_seld(vm_mask64(w < 6.25), pa, pt);
  y = vm_seld(vm_mask64(a == 1.0), __builtin_copysign(__builtin_inf(), x), y);
  return vm_seld(vm_mask64(!(a <= 1.0)), __builtin_nan(""), y); /* |x| > 1 or NaN */
}

/* float32: degree 9 in w - 2.5 for w < 5 (|x| < 0.9966), else degree 9 in sqrt(w) - 3.2 (to
 * 1 - x = 2^-24); fit errors 1e-8 and 6e-8 absolute on values in [0.88, 3.2], below half a
 * float32 ulp. Measured worst relative error 1.9e-7. */
static const float vm_erfinvf_a[10] = {
    1.50140941f,     0.24664028f,   -0.00417739293f, -0.00125272642f, 0.000218349393f,
    -4.9724199e-06f, -3.46398519e-06f, 4.68131361e-07f, 2.33359678e-08f, -8.93192631e-09f,
};
static const float vm_erfinvf_b[10] = {
    3.03363657f,     1.00469232f,    0.00597618474f,  -0.0042923782f,   0.00292522204f,
    -0.00200058264f, 0.00115644676f, -0.000347579335f, -0.000114060895f, 9.43182749e-05f,
};

/* |x| <= 0.996 (w < 4.9): the central polynomial alone, as in vm_erfinv_central. */
VM_INLINE float vm_erfinvf_central(float x) {
  return x * vm_poly_f32(-vl_logf((1.0f - x) * (1.0f + x)) - 2.5f, vm_erfinvf_a, 10);
}

VM_INLINE float vm_erfinvf(float x) {
  float w = -vl_logf((1.0f - x) * (1.0f + x));
  uint32_t c = vm_mask32(w < 5.0f);
  float p = vm_poly_sel_f32(vm_self(c, w - 2.5f, VM_SQRT(w) - 3.2f), c, vm_erfinvf_a,
                            vm_erfinvf_b, 10);
  float a = __builtin_fabsf(x), y = x * p;
  y = vm_self(vm_mask32(a == 1.0f), __builtin_copysignf(__builtin_inff(), x), y);
  return vm_self(vm_mask32(!(a <= 1.0f)), __builtin_nanf(""), y);
}

/* ---- sin(pi x) ----
 * x = k + r with k = rint(x) and r in [-1/2, 1/2] exactly, sin(pi x) = (-1)^k sin(pi r): pi r
 * is within an ulp, so the result stays accurate next to every integer (where sin(pi * x)
 * does not). The parity of k comes from k/2, which is exact. */
VM_INLINE double vm_sinpi(double x) {
  double k = __builtin_rint(x), s = vl_sin(VM_PI * (x - k)), h = 0.5 * k;
  return vm_seld(vm_mask64(h != __builtin_rint(h)), -s, s);
}

/* ---- gamma, lgamma ----
 * A Lanczos-type form for z >= 1/2: Gamma(z) = sqrt(2 pi) A(z) t^(z - 1/2) e^-t, t = z + 5.5,
 * where A(z) = c0 + sum_k c_k / (z + k), k = 0..9, is our own least-squares fit (mpmath, 60
 * digits; relative error 9e-18 on [1/2, 1e15]) written as one rational N(z)/D(z) whose
 * coefficients are all positive: no cancellation for z > 0 and one division. z is capped at
 * 1e10, where A is constant to 1e-9 relative, so D(z) stays finite. */
static const double vm_lanczos_n[11] = {
    83075716.17530586, 136070844.3345474,  100013274.90739712, 43434632.23502901,
    12341011.972024683, 2396673.1971798637, 322132.2690430907, 29584.110057388218,
    1776.355034722221, 62.958333333333336, 1.0,
};
static const double vm_lanczos_d[11] = {
    0.0,     362880.0, 1026576.0, 1172700.0, 723680.0, 269325.0,
    63273.0, 9450.0,   870.0,     45.0,      1.0,
};

VM_INLINE double vm_lanczos(double z) {
  z = vm_seld(vm_mask64(z > 1e10), 1e10, z);
  return vm_poly_f64(z, vm_lanczos_n, 11) / vm_poly_f64(z, vm_lanczos_d, 11);
}

/* Gamma(z) for z >= 1/2: t^(z - 1/2) goes through pow (precise), accurate to an ulp, where
 * exp((z - 1/2) log t) would lose |(z - 1/2) log t| ulps (1e-13 near the overflow at 171.6),
 * split in two halves so that no intermediate overflows; without precise (the float32
 * forms, where 1e-13 does not matter and overflow starts at 35) one exp and one log, twice
 * as fast as pow. */
VM_INLINE double vm_gamma_pos(double z, int precise) {
  double t = z + 5.5, g;
  if (precise) {
    double h = vl_pow(t, 0.5 * (z - 0.5));
    g = 2.5066282746310002 * vm_lanczos(z) * h * vl_exp(-t) * h;
  } else {
    g = 2.5066282746310002 * vm_lanczos(z) * vl_exp((z - 0.5) * vl_log(t) - t);
  }
  return vm_seld(vm_mask64(z > 171.7), __builtin_inf(), g);
}

/* Gamma(x) for all x, in three regions: x >= 1/2 directly; 0 <= x < 1/2 as Gamma(x + 1) / x
 * (x + 1 rounds by at most 1.1e-16 where |psi| < 0.6: harmless); x < 0 by the reflection
 * Gamma(x) = pi / (sin(pi x) Gamma(1 - x)), with Gamma(1 - x) = -x Gamma(-x) for x < -1/2: -x
 * is exact where 1 - x is not (its rounding would cost psi(1 - x) ulp(x) relative, 5e-15 near
 * -16). Poles: +-0 give +-inf, negative integers NaN (as C tgamma). Measured worst relative
 * error 2e-15 on [-20, 171.6]. For x > 0 (UM_MAP_SPLIT's fast path) vm_gamma_pos0 does the
 * same operations without the reflection. */
#define VM_GAMMA_REGIONS(x)                                                                   \
  uint64_t refl = vm_mask64(x < 0), far = vm_mask64(x < -0.5);                                 \
  uint64_t small = ~refl & vm_mask64(x < 0.5);                                                \
  double z = vm_seld(far, -x, vm_seld(refl, 1.0 - x, vm_seld(small, x + 1.0, x)))
VM_INLINE double vm_gamma_(double x, int precise) {
  VM_GAMMA_REGIONS(x);
  double g = vm_gamma_pos(z, precise);
  double y = vm_seld(refl, VM_PI / (vm_sinpi(x) * vm_seld(far, z, 1.0) * g),
                     vm_seld(small, g / x, g));
  return vm_seld(refl & vm_mask64(x == __builtin_rint(x)), __builtin_nan(""), y);
}
VM_INLINE double vm_gamma(double x) { return vm_gamma_(x, 1); }
VM_INLINE double vm_gamma_pos0_(double x, int precise) {
  uint64_t small = ~vm_mask64(x < 0) & vm_mask64(x < 0.5);
  double g = vm_gamma_pos(vm_seld(small, x + 1.0, x), precise);
  return vm_seld(small, g / x, g);
}

/* log Gamma(z) for z >= 1/2: (z - 1/2)(log t - 1) - 6 + log(sqrt(2 pi) A(z) / d) (t = z + 5.5 =
 * (z - 1/2) + 6; d = 1, or |x| for lgamma(x) = lgamma(x + 1) - log|x|, in the same log),
 * finite up to 2.5e305. Measured: relative error 3e-16 above 10, absolute error 4e-15 below
 * (so the relative error grows next to the zeros at 1 and 2). */
VM_INLINE double vm_lgamma_pos(double z, double d) {
  double t = z + 5.5;
  return (z - 0.5) * (vl_log(t) - 1.0) - 6.0 + vl_log(2.5066282746310002 * vm_lanczos(z) / d);
}

/* log|Gamma(x)| in the regions of vm_gamma: x < 0 by log(pi) - log|sin(pi x)| - lgamma(1 - x),
 * with lgamma(1 - x) = log(-x) + lgamma(-x) below -1/2 (one log of the product); poles give
 * +inf. vm_lgamma_pos0: x > 0 only, the same operations. */
VM_INLINE double vm_lgamma(double x) {
  VM_GAMMA_REGIONS(x);
  double l = vm_lgamma_pos(z, vm_seld(small, __builtin_fabs(x), 1.0));
  double s = __builtin_fabs(vm_sinpi(x)) * vm_seld(far, z, 1.0);
  double r = 1.1447298858494002 - vl_log(s) - l;
  return vm_seld(vm_mask64(x == -__builtin_inf()), __builtin_inf(), vm_seld(refl, r, l));
}
VM_INLINE double vm_lgamma_pos0(double x) {
  uint64_t small = ~vm_mask64(x < 0) & vm_mask64(x < 0.5);
  return vm_lgamma_pos(vm_seld(small, x + 1.0, x), vm_seld(small, __builtin_fabs(x), 1.0));
}

/* digamma psi(z) = d lgamma / dz for z > 0, which the gamma and gammaln backward passes
 * need: psi(z) = psi(z + 10) - sum_{j<10} 1/(z + j), the sum as one fraction (one division;
 * above 1e20 it is 10/z), then the asymptotic series at z + 10 >= 10 to the z^-14 term
 * (truncation 5e-17). Measured: absolute error 9e-15 on (0.1, 10), relative 3e-16 above. */
VM_INLINE double vm_digamma_pos(double z) {
  double zc = vm_seld(vm_mask64(z > 1e20), 1e20, z), num = 0.0, den = 1.0;
  for (int j = 0; j < 10; j++) { /* num/den += 1/(zc + j) */
    double q = zc + (double)j;
    num = num * q + den;
    den = den * q;
  }
  double sum = vm_seld(vm_mask64(z > 1e20), 10.0 / z, num / den);
  double X = z + 10.0, inv = 1.0 / X, i2 = inv * inv;
  double ser = 1.0 / 12 - i2 * (1.0 / 120 - i2 * (1.0 / 252 - i2 * (1.0 / 240 - i2 * (1.0 / 132 -
               i2 * (691.0 / 32760 - i2 * (1.0 / 12))))));
  return vl_log(X) - 0.5 * inv - i2 * ser - sum;
}

/* psi(x) for all x: x < 0 by the reflection psi(x) = psi(1 - x) - pi / tan(pi x), with tan of
 * the exact remainder x - rint(x) (tan has period pi). */
VM_INLINE double vm_digamma(double x) {
  uint64_t refl = vm_mask64(x < 0);
  double psi = vm_digamma_pos(vm_seld(refl, 1.0 - x, x));
  return vm_seld(refl, psi - VM_PI / vl_tan(VM_PI * (x - __builtin_rint(x))), psi);
}

/* float32 forms: evaluated in float64 (gamma without pow) and rounded once. */
VM_INLINE float vm_gammaf(float x) { return (float)vm_gamma_(x, 0); }
VM_INLINE float vm_lgammaf(float x) { return (float)vm_lgamma(x); }
VM_INLINE float vm_digammaf(float x) { return (float)vm_digamma(x); }
VM_INLINE double vm_gamma_pos0(double x) { return vm_gamma_pos0_(x, 1); }
VM_INLINE float vm_gamma_pos0f(float x) { return (float)vm_gamma_pos0_(x, 0); }
VM_INLINE float vm_lgamma_pos0f(float x) { return (float)vm_lgamma_pos0(x); }
VM_INLINE float vm_digamma_posf(float x) { return (float)vm_digamma_pos(x); }

#define VM_ERFINV(x) _Generic((x), float: vm_erfinvf, double: vm_erfinv)(x)
#define VM_GAMMA(x) _Generic((x), float: vm_gammaf, double: vm_gamma)(x)
#define VM_LGAMMA(x) _Generic((x), float: vm_lgammaf, double: vm_lgamma)(x)
#define VM_DIGAMMA(x) _Generic((x), float: vm_digammaf, double: vm_digamma)(x)
/* The same functions on the common part of their domain (see UM_MAP_SPLIT): erfinv for
 * |x| <= 0.996 (float32) or 0.998, gamma, lgamma and digamma for x > 0. */
#define VM_ERFINV_CENTRAL(x) _Generic((x), float: vm_erfinvf_central, double: vm_erfinv_central)(x)
#define VM_GAMMA_POS(x) _Generic((x), float: vm_gamma_pos0f, double: vm_gamma_pos0)(x)
#define VM_LGAMMA_POS(x) _Generic((x), float: vm_lgamma_pos0f, double: vm_lgamma_pos0)(x)
#define VM_DIGAMMA_POS(x) _Generic((x), float: vm_digamma_posf, double: vm_digamma_pos)(x)

#endif
