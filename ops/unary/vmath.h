/* vmath.h: vectorisable exp and log for float32 and float64 (Cephes / fdlibm style range
 * reduction and polynomials), shared by the unary and activation operators. GCC does not
 * vectorise calls into libm, so these are branch-free inline functions that it can. */
#ifndef OPPERF_VMATH_H
#define OPPERF_VMATH_H

#include <stdint.h>
#include <string.h>

/* Everything here is plain arithmetic, compares, selects and bit casts: no calls, no
 * float<->int conversions of unbounded values (no UB on NaN), so the loops that inline these
 * vectorise at every ISA level of OPF_VEC. */
#define VM_INLINE static inline __attribute__((always_inline))

VM_INLINE uint32_t vm_f2u(float x) { uint32_t u; memcpy(&u, &x, sizeof u); return u; }
VM_INLINE float vm_u2f(uint32_t u) { float x; memcpy(&x, &u, sizeof x); return x; }
VM_INLINE uint64_t vm_d2u(double x) { uint64_t u; memcpy(&u, &x, sizeof u); return u; }
VM_INLINE double vm_u2d(uint64_t u) { double x; memcpy(&x, &u, sizeof x); return x; }

/* Selects by bit masks rather than ?: with constant arms. With ?: GCC threads the branches
 * (exp(88.8) folds to a constant on one path), leaving control flow that stops
 * vectorisation; a mask from a comparison is plain data flow. m is all ones or zero. */
VM_INLINE uint32_t vm_mask32(int cond) { return -(uint32_t)(cond != 0); }
VM_INLINE uint64_t vm_mask64(int cond) { return -(uint64_t)(cond != 0); }
VM_INLINE float vm_self(uint32_t m, float a, float b) {
  return vm_u2f((vm_f2u(a) & m) | (vm_f2u(b) & ~m));
}
VM_INLINE double vm_seld(uint64_t m, double a, double b) {
  return vm_u2d((vm_d2u(a) & m) | (vm_d2u(b) & ~m));
}
/* cond ? a : b without a branch, for callers (see sigmoid.c). */
VM_INLINE float vm_self_if(int cond, float a, float b) { return vm_self(vm_mask32(cond), a, b); }
VM_INLINE double vm_seld_if(int cond, double a, double b) {
  return vm_seld(vm_mask64(cond), a, b);
}

/* exp(x), float32: n = round(x / ln2) via the 1.5*2^23 shifter (its low mantissa bits are n),
 * r = x - n ln2 in two parts (Cody-Waite), Cephes degree-6 polynomial (about 1 ulp), then
 * 2^n applied as two factors 2^n1 * 2^n2, so results near overflow and in the subnormal range
 * round correctly. The arithmetic is valid for x in [-104, 88.8]; outside, the result is
 * replaced by inf or 0 at the end (the garbage computed there is discarded). NaN propagates
 * through p. */
/* The shared core of vm_expf and vm_expf_nonpos: x = n ln2 + r (n in *n, mod 2^32), and the
 * polynomial's exp(r). */
VM_INLINE float vm_expf_reduced(float x, uint32_t *n) {
  const float shifter = 0x1.8p23f;
  float t = x * 1.44269504088896341f + shifter;
  *n = vm_f2u(t) - vm_f2u(shifter);
  float fn = t - shifter;
  float r = x - fn * 0.693359375f;
  r = r - fn * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * (r * r) + r + 1.0f;
}
VM_INLINE float vm_expf(float x) {
  uint32_t un;
  float y = vm_expf_reduced(x, &un);
  int32_t n = (int32_t)un; /* in [-150, 128] where valid */
  /* n1 = floor(n / 2) with a logical shift of a biased value (wraps harmlessly off range) */
  uint32_t n1 = ((uint32_t)n + 256u) >> 1, n2 = (uint32_t)n + 128u - n1;
  y = y * vm_u2f((n1 - 1u) << 23) * vm_u2f((n2 + 127u) << 23);
  y = vm_self(vm_mask32(x > 88.8f), __builtin_inff(), y);
  return vm_self(vm_mask32(x < -104.0f), 0.0f, y);
}

/* exp(x) for x <= 0 only (callers pass -|v|), float32: vm_expf's reduction and polynomial,
 * with 2^n applied as one factor, exact for n >= -126 (x >= -87.33, every normal result);
 * below, the result (under 2^-126) is flushed to 0, an absolute error under 1.2e-38. Five
 * integer and float operations fewer per element than vm_expf, which matters where an exp is
 * most of an elementwise map's work (log_sigmoid of 1024x1024 at 1 thread, medians of 3
 * alternated at load 6: forward 352 -> 305 us, backward 202 -> 191 us).
 * -inf gives 0, NaN propagates (through p; its compare is false). */
VM_INLINE float vm_expf_nonpos(float x) {
  uint32_t n; /* n mod 2^32, in [-126, 0] where kept */
  float y = vm_expf_reduced(x, &n);
  y = y * vm_u2f((n + 127u) << 23);
  return vm_self(vm_mask32(x < -87.33f), 0.0f, y);
}

/* exp(x), float64: same reduction with fdlibm's ln2 split (ln2_hi has 32 trailing zero
 * bits, so n*ln2_hi is exact), |r| <= ln2/2, and the Taylor series to degree 13 (truncation
 * below 1e-17 relative): within about 1 ulp of libm. Valid for x in [-746, 710]. */
VM_INLINE double vm_exp(double x) {
  const double shifter = 0x1.8p52;
  double t = x * 1.44269504088896338700e+00 + shifter;
  int64_t n = (int64_t)(vm_d2u(t) - vm_d2u(shifter)); /* in [-1076, 1025] where valid */
  double fn = t - shifter;
  double r = x - fn * 6.93147180369123816490e-01;
  r = r - fn * 1.90821492927058770002e-10;
  double p = 1.0 / 6227020800.0; /* 1/13! */
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  double y = p * (r * r) + r + 1.0;
  uint64_t n1 = ((uint64_t)n + 2048u) >> 1, n2 = (uint64_t)n + 1024u - n1;
  y = y * vm_u2d((n1 - 1u) << 52) * vm_u2d((n2 + 1023u) << 52);
  y = vm_seld(vm_mask64(x > 710.0), __builtin_inf(), y);
  return vm_seld(vm_mask64(x < -746.0), 0.0, y);
}

/* log(x), float32 (Cephes logf): x = m 2^e with m in [sqrt(1/2), sqrt(2)), f = m - 1,
 * log(1+f) = f - f^2/2 + f^3 P(f), plus e ln2 in two parts. Subnormals are scaled by 2^23
 * first; x < 0 and NaN give NaN, 0 gives -inf, inf gives inf. */
VM_INLINE float vm_logf(float x) {
  uint32_t sub = vm_mask32(x < 0x1p-126f);
  float xs = x * vm_u2f(0x3f800000u + (sub & (23u << 23))); /* x * 2^23 when subnormal */
  uint32_t u = vm_f2u(xs);
  int32_t e = (int32_t)((u >> 23) & 0xff) - 127 - (int32_t)(sub & 23u);
  float m = vm_u2f((u & 0x007fffffu) | 0x3f800000u); /* [1, 2) */
  uint32_t big = vm_mask32(m > 1.41421356237f);
  m = m * vm_u2f(0x3f800000u - (big & (1u << 23))); /* halved when above sqrt(2) */
  e += (int32_t)(big & 1u);
  float f = m - 1.0f, fe = (float)e;
  float z = f * f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  float y = f * z * p + fe * -2.12194440e-4f - 0.5f * z;
  float r = (f + y) + fe * 0.693359375f;
  r = vm_self(vm_mask32(x == __builtin_inff()), x, r);
  r = vm_self(vm_mask32(x == 0.0f), -__builtin_inff(), r);
  return vm_self(vm_mask32(!(x >= 0.0f)), __builtin_nanf(""), r); /* x < 0 or NaN */
}

/* log(x), float64 (fdlibm e_log.c): same decomposition, s = f/(2+f),
 * log(1+f) = f - (hfsq - s (hfsq + R(s^2))) with fdlibm's degree-14 minimax R (error below
 * 2^-58), and k ln2 in two parts. The exponent becomes a double through the 2^52 shifter, so
 * no 64-bit integer conversion instruction is needed (AVX2 has none). */
VM_INLINE double vm_log(double x) {
  const double Lg1 = 6.666666666666735130e-01, Lg2 = 3.999999999940941908e-01,
               Lg3 = 2.857142874366239149e-01, Lg4 = 2.222219843214978396e-01,
               Lg5 = 1.818357216161805012e-01, Lg6 = 1.531383769920937332e-01,
               Lg7 = 1.479819860511658591e-01;
  uint64_t sub = vm_mask64(x < 0x1p-1022);
  double xs = x * vm_u2d(0x3ff0000000000000ull + (sub & (54ull << 52))); /* x * 2^54 */
  uint64_t u = vm_d2u(xs);
  double k = (vm_u2d(0x4330000000000000ull | ((u >> 52) & 0x7ff)) - 0x1p52) - 1023.0;
  k = k - vm_u2d(sub & vm_d2u(54.0));
  double m = vm_u2d((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull); /* [1, 2) */
  uint64_t big = vm_mask64(m > 1.41421356237309504880);
  m = m * vm_u2d(0x3ff0000000000000ull - (big & (1ull << 52))); /* halved above sqrt(2) */
  k = k + vm_u2d(big & 0x3ff0000000000000ull);                  /* + 1.0 when halved */
  double f = m - 1.0;
  double s = f / (2.0 + f), z = s * s, w = z * z;
  double t1 = w * (Lg2 + w * (Lg4 + w * Lg6));
  double t2 = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7)));
  double R = t2 + t1, hfsq = 0.5 * f * f;
  double r = k * 6.93147180369123816490e-01 -
             ((hfsq - (s * (hfsq + R) + k * 1.90821492927058770002e-10)) - f);
  r = vm_seld(vm_mask64(x == __builtin_inf()), x, r);
  r = vm_seld(vm_mask64(x == 0.0), -__builtin_inf(), r);
  return vm_seld(vm_mask64(!(x >= 0.0)), __builtin_nan(""), r); /* x < 0 or NaN */
}


/* ---- rounding, sign and integer helpers (unary and rounding operators) ----
 * floor, ceil, trunc and round are built on rint (round to nearest even in the default
 * rounding mode), the one rounding builtin GCC vectorises without -fno-trapping-math
 * (vroundps/vrndscaleps); the correction r -/+ 1 is exact and copysign restores the sign
 * of zero results (ceil(-0.5) = -0.0). rint(x) - x is exact, and so is |x| - trunc(|x|). */
#define VM_ROUNDING(T, S, RINT, COPYSIGN, ABS, SEL)                                            \
  VM_INLINE T vm_rint_##S(T x) { return RINT(x); }                                            \
  VM_INLINE T vm_floor_##S(T x) { T r = RINT(x); return r - SEL(r > x, (T)1, (T)0); }      \
  VM_INLINE T vm_ceil_##S(T x) {                                                              \
    T r = RINT(x);                                                                            \
    return COPYSIGN(r + SEL(r < x, (T)1, (T)0), x);                                           \
  }                                                                                           \
  VM_INLINE T vm_trunc_##S(T x) { return COPYSIGN(vm_floor_##S(ABS(x)), x); }                 \
  /* half away from zero, as C round: t = trunc(|x|), plus 1 when the rest is >= 1/2 (no     \
   * x + 0.5, which rounds 0.49999999999999994 up) */                                          \
  VM_INLINE T vm_round_##S(T x) {                                                             \
    T a = ABS(x), t = vm_floor_##S(a);                                                        \
    return COPYSIGN(t + SEL(a - t >= (T)0.5, (T)1, (T)0), x);                                 \
  }                                                                                           \
  /* NumPy's sign: -1, 0 or 1 (+0 for either zero), NaN for NaN */                            \
  VM_INLINE T vm_sign_##S(T x) {                                                              \
    return SEL(x != x, x, SEL(x > 0, (T)1, (T)0) - SEL(x < 0, (T)1, (T)0));                  \
  }                                                                                           \
  VM_INLINE T vm_neg_##S(T x) { return -x; }                                                  \
  VM_INLINE T vm_sqr_##S(T x) { return x * x; }
VM_ROUNDING(float, f32, __builtin_rintf, __builtin_copysignf, __builtin_fabsf, vm_self_if)
VM_ROUNDING(double, f64, __builtin_rint, __builtin_copysign, __builtin_fabs, vm_seld_if)
#undef VM_ROUNDING

/* Integers wrap like NumPy's (two's complement): the arithmetic is done unsigned, so
 * -INT_MIN and overflowing squares are defined; conversion back is modulo 2^N in GCC. */
#define VM_INTEGER(T, U, S)                                                                   \
  VM_INLINE T vm_abs_##S(T x) { return x < 0 ? (T)((U)0 - (U)x) : x; }                       \
  VM_INLINE T vm_neg_##S(T x) { return (T)((U)0 - (U)x); }                                    \
  VM_INLINE T vm_sqr_##S(T x) { return (T)((U)x * (U)x); }                                    \
  VM_INLINE T vm_sign_##S(T x) { return (T)((x > 0) - (x < 0)); }
VM_INTEGER(int32_t, uint32_t, i32)
VM_INTEGER(int64_t, uint64_t, i64)
#undef VM_INTEGER

/* Type-generic forms: over float and double (VM_FP), also int32 and int64 (VM_TG). */
#define VM_FP(fn, x) _Generic((x), float: vm_##fn##_f32, double: vm_##fn##_f64)(x)
#define VM_TG(fn, x)                                                                          \
  _Generic((x), float: vm_##fn##_f32, double: vm_##fn##_f64, int32_t: vm_##fn##_i32,          \
           int64_t: vm_##fn##_i64)(x)
VM_INLINE float vm_abs_f32(float x) { return __builtin_fabsf(x); }
VM_INLINE double vm_abs_f64(double x) { return __builtin_fabs(x); }

#endif
