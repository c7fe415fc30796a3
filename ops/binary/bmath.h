/* bmath.h: vectorisable element functions of the binary operators beyond + - * /: floor
 * modulo (NumPy/Python semantics), pow (float, and integers by squaring), hypot and atan2.
 * Branch-free arithmetic, compares and mask selects only: no libm calls, which GCC does not
 * vectorise (sqrt included: see below; trunc and floor come from vmath.h, built on rint), and
 * no ?: over float arithmetic, which GCC only vectorises where AVX-512 masks it (the AVX2
 * clone would stay scalar). */
#ifndef OPPERF_BMATH_H
#define OPPERF_BMATH_H

#include <float.h>
#include <math.h>
#include <stdint.h>

#include "binary/binop.h"
#include "unary/vmath.h"

/* cond ? a : b as mask arithmetic, both arms evaluated: GCC turns ?: with constant arms into
 * branches (see vmath.h), and under -ftrapping-math does not speculate an arm's arithmetic
 * without AVX-512 masking. a and b must have the element type. */
#define BM_SEL(c, a, b) _Generic((a), float: vm_self_if, double: vm_seld_if)(c, a, b)

/* ---- floor modulo: r = a - floor(a / b) b, with the sign of b (NumPy's remainder) ----
 * Fast form: q = trunc(a / b) is the truncated quotient or one off it (a / b is rounded), and
 * r = fma(-q, b, a) is then exact: |r| <= |b| on b's grid, or, for |a| < |b|, Sterbenz. The
 * off-by-one shows as r == b (the true remainder is 0) or as r of the wrong sign (the true
 * one is r + b). Then the floor step adds b to a remainder whose sign differs from b's (one
 * rounding, as NumPy does). Valid while |a / b| < 2^22 (float32) / 2^51 (float64), q exactly
 * an integer with rounding error below 1/2; the guard sends other blocks (and zero, infinite
 * or NaN operands) to the fmod form. */
#define BM_MOD_DEF(T, SUF, FMA, FABS, COPYSIGN, LIM, MAXV)                                    \
  BO_KI T bm_mod_##SUF(T a, T b) {                                                            \
    T r = FMA(-vm_trunc_##SUF(a / b), b, a);                                                  \
    r = BM_SEL(r == b, (T)0, r);                                                              \
    r = BM_SEL((r != 0) & ((r < 0) != (b < 0)), r + b, r);                                    \
    return BM_SEL(r == 0, COPYSIGN((T)0, b), r);                                              \
  }                                                                                           \
  BO_KI int bm_mod_guard_##SUF(T a, T b) {                                                    \
    return !(FABS(a) < (LIM) * FABS(b)) | !(FABS(b) <= (MAXV));                               \
  }
BM_MOD_DEF(float, f32, __builtin_fmaf, __builtin_fabsf, __builtin_copysignf, 0x1p22f, FLT_MAX)
BM_MOD_DEF(double, f64, __builtin_fma, __builtin_fabs, __builtin_copysign, 0x1p51, DBL_MAX)

/* NumPy's npy_divmod remainder: fmod (exact), moved into b's sign; fmod(a, 0) is NaN. */
static inline double bm_pymod(double a, double b) {
  double m = fmod(a, b);
  if (m != 0) return (b < 0) != (m < 0) ? m + b : m;
  return copysign(0.0, b);
}
static inline float bm_pymod_f32(float a, float b) {
  float m = fmodf(a, b);
  if (m != 0) return (b < 0) != (m < 0) ? m + b : m;
  return copysignf(0.0f, b);
}
/* Integers: the remainder of C's truncated division moved into b's sign; by zero 0 (NumPy's
 * result), MIN % -1 is 0. */
static inline int64_t bm_pymod_int(int64_t a, int64_t b) {
  if (b == 0 || b == -1) return 0;
  int64_t r = a % b;
  return r + ((r != 0 && (r ^ b) < 0) ? b : 0);
}
BO_KI float bm_mod_slow_f32(float a, float b) { return bm_pymod_f32(a, b); }
BO_KI double bm_mod_slow_f64(double a, double b) { return bm_pymod(a, b); }
BO_KI int32_t bm_mod_slow_i32(int32_t a, int32_t b) { return (int32_t)bm_pymod_int(a, b); }
BO_KI int64_t bm_mod_slow_i64(int64_t a, int64_t b) { return bm_pymod_int(a, b); }

/* Integers: the truncated quotient through float64 (bo_div_i32: exact below 2^53), the
 * remainder a - q b, then into b's sign. The guards of division apply (zero divisors,
 * MIN / -1, int64 beyond 2^53); the arithmetic is unsigned so that the discarded results of
 * guarded inputs wrap instead of overflowing. */
#define BM_MOD_INT_DEF(T, U, SUF)                                                             \
  BO_KI T bm_mod_##SUF(T a, T b) {                                                            \
    const T r = (T)((U)a - (U)bo_div_##SUF(a, b) * (U)b);                                     \
    return (T)((U)r + ((r != 0) & ((r ^ b) < 0) ? (U)b : 0));                                 \
  }
BM_MOD_INT_DEF(int32_t, uint32_t, i32)
BM_MOD_INT_DEF(int64_t, uint64_t, i64)
#define bm_mod_guard_i32 bo_div_guard_i32
#define bm_mod_guard_i64 bo_div_guard_i64

/* ---- pow: exp(b log|a|) with C's special cases ----
 * Negative bases take the sign of odd integer exponents and give NaN for non-integers; b == 0
 * and a == 1 give 1 (even with NaN), |a| == 1 with infinite b gives 1; zero and infinite
 * bases follow from log(0) = -inf and log(inf) = inf. float32 forms b log|a| and its exp in
 * float64 (W), rounded once at the end: in float32 the exponent carried about |b log a| ulp
 * (1e-5 relative at |b log a| = 88) and exp saturated early (FLT_MAX^1 gave inf); this is the
 * path of CPUs without AVX-512 and of arm64 (ops/unary/vmath512.h has the AVX-512 kernel).
 * float64: about |b log a| ulp. bm_pow_fix applies the special cases to e = exp(b log|a|). */
#define BM_POW_DEF(T, W, SUF, EXP, LOG, RINT, FABS, TOBITS, SHIFT)                            \
  BO_KI T bm_pow_fix_##SUF(T e, T a, T b) {                                                   \
    const T ax = FABS(a), half = b * (T)0.5;                                                  \
    const int integral = RINT(b) == b, odd = integral & (RINT(half) != half);                 \
    T y = BM_SEL((int)(TOBITS(a) >> SHIFT) & odd, -e, e); /* negative (or -0) base, odd b */  \
    y = BM_SEL((a < 0) & (a > -(T)INFINITY) & !integral, (T)NAN, y); /* (-inf)^b: +-inf, 0 */ \
    return BM_SEL((b == 0) | (a == 1) | ((ax == 1) & (FABS(b) == (T)INFINITY)), (T)1, y);     \
  }                                                                                           \
  /* Rows in two passes per block: t = b log|a| into L1, then exp(t) and the special cases.   \
   * One pass chains the logarithm's and the exponential's polynomials (some 35 dependent     \
   * operations per vector), more than the out-of-order window overlaps across iterations:    \
   * 1.39 -> 0.61 ns per float32 element measured in L1 on Zen5. */                           \
  BO_KI void bm_pow_row_##SUF(T *restrict y, const T *restrict a, const T *restrict b,        \
                              int64_t n, const int sa, const int sb) {                        \
    W t[BM_POW_BLOCK];                                                                        \
    for (int64_t k0 = 0; k0 < n; k0 += BM_POW_BLOCK) {                                        \
      const int64_t m = n - k0 < BM_POW_BLOCK ? n - k0 : BM_POW_BLOCK;                        \
      const T *restrict ab = a + (sa ? k0 : 0), *restrict bb = b + (sb ? k0 : 0);             \
      for (int64_t k = 0; k < m; k++)                                                         \
        t[k] = (W)BO_AT(bb, sb, k) * LOG((W)FABS(BO_AT(ab, sa, k)));                          \
      for (int64_t k = 0; k < m; k++)                                                         \
        y[k0 + k] = bm_pow_fix_##SUF((T)EXP(t[k]), BO_AT(ab, sa, k), BO_AT(bb, sb, k));       \
    }                                                                                         \
  }
#define BM_POW_BLOCK 256
BM_POW_DEF(float, double, f32, vm_exp, vm_log, __builtin_rintf, __builtin_fabsf, vm_f2u, 31)
BM_POW_DEF(double, double, f64, vm_exp, vm_log, __builtin_rint, __builtin_fabs, vm_d2u, 63)

/* pow's gradient terms from the forward output y = a^b: da = g b y / a, zero where b == 0;
 * at a == 0 (y / a undefined) b 0^(b-1) is taken directly: 0 for b > 1, 1 for b == 1, and
 * +-inf (the sign of b) below. db = g y ln a, zero where a == 0 and b >= 0 (the limits
 * PyTorch's pow backward masks in); NaN for negative bases, as there. */
#define BM_POW_GRAD_DEF(T, SUF, LOG)                                                          \
  BO_KI T bm_pow_da_##SUF(T g, T a, T b, T y) {                                               \
    const T at0 = BM_SEL(b > 1, (T)0, BM_SEL(b == 1, (T)1, b * (T)INFINITY));                 \
    return BM_SEL(b == 0, (T)0, g * BM_SEL(a == 0, at0, b * (y / a)));                        \
  }                                                                                           \
  BO_KI T bm_pow_db_##SUF(T g, T a, T b, T y) {                                               \
    return BM_SEL((a == 0) & (b >= 0), (T)0, g * y * LOG(a));                                 \
  }
BM_POW_GRAD_DEF(float, f32, vm_logf)
BM_POW_GRAD_DEF(double, f64, vm_log)

/* Integer pow by squaring, wrapping like NumPy's integer power. Negative exponents (NumPy
 * raises) give the truncated value: 1 for a == 1, +-1 for a == -1, otherwise 0. */
static inline int64_t bm_ipow_ref(int64_t a, int64_t e) {
  if (e < 0) return a == 1 ? 1 : a == -1 ? ((e & 1) ? -1 : 1) : 0;
  uint64_t r = 1, x = (uint64_t)a;
  for (; e; e >>= 1, x *= x)
    if (e & 1) r *= x;
  return (int64_t)r;
}
/* Rows: blocks of BM_IPOW_BLOCK elements square all bases once per exponent bit, up to the
 * highest bit any exponent of the block sets, so the loops vectorise with a trip count shared
 * by the block (one multiply per bit and element instead of a data-dependent loop each). */
#define BM_IPOW_BLOCK 256
#define BM_IPOW_ROW(NAME, T, U)                                                               \
  BO_KI void NAME(T *restrict y, const T *restrict a, const T *restrict b, int64_t n,         \
                  const int sa, const int sb) {                                               \
    U acc[BM_IPOW_BLOCK], sq[BM_IPOW_BLOCK];                                                  \
    for (int64_t k0 = 0; k0 < n; k0 += BM_IPOW_BLOCK) {                                       \
      const int64_t m = n - k0 < BM_IPOW_BLOCK ? n - k0 : BM_IPOW_BLOCK;                      \
      const T *restrict ab = a + (sa ? k0 : 0), *restrict bb = b + (sb ? k0 : 0);             \
      U bits = 0;                                                                             \
      for (int64_t k = 0; k < m; k++) {                                                       \
        const T e = BO_AT(bb, sb, k);                                                         \
        bits |= e > 0 ? (U)e : 0;                                                             \
        acc[k] = 1;                                                                           \
        sq[k] = (U)BO_AT(ab, sa, k);                                                          \
      }                                                                                       \
      for (int j = 0; bits >> j; j++)                                                         \
        for (int64_t k = 0; k < m; k++) {                                                     \
          acc[k] = ((U)BO_AT(bb, sb, k) >> j) & 1 ? acc[k] * sq[k] : acc[k];                  \
          sq[k] *= sq[k];                                                                     \
        }                                                                                     \
      for (int64_t k = 0; k < m; k++) {                                                       \
        const T e = BO_AT(bb, sb, k), x = BO_AT(ab, sa, k);                                   \
        y[k0 + k] = e >= 0 ? (T)acc[k] : x == 1 ? 1 : x == -1 ? ((e & 1) ? -1 : 1) : 0;       \
      }                                                                                       \
    }                                                                                         \
  }
BM_IPOW_ROW(bm_ipow_row_i32, int32_t, uint32_t)
BM_IPOW_ROW(bm_ipow_row_i64, int64_t, uint64_t)

/* ---- sqrt without libm: GCC keeps sqrt() a call (for errno on negative input) unless the
 * whole build has -fno-math-errno, and a call does not vectorise. For x zero or normal:
 * 1/sqrt(x) from the exponent-halving bit trick (3.5%), Newton steps y(3/2 - x y^2/2) (2 for
 * float32: 5e-6; 3 for float64: 4e-11), then s = x y refined by one Newton step on the
 * square root itself, s + y (x - s^2)/2 (error ~d^2, below an ulp); NaN propagates. x = 0
 * gives 0: (x/2 y) y is 0 before y y could overflow. */
#define BM_SQRT_DEF(T, SUF, TOBITS, FROMBITS, MAGIC, STEPS)                                   \
  BO_KI T bm_sqrt_##SUF(T x) {                                                                \
    const T hx = (T)0.5 * x;                                                                  \
    T y = FROMBITS((MAGIC) - (TOBITS(x) >> 1));                                               \
    for (int i = 0; i < (STEPS); i++) y = y * ((T)1.5 - (hx * y) * y);                        \
    const T s = x * y;                                                                        \
    return s + ((T)0.5 * y) * (x - s * s);                                                    \
  }
BM_SQRT_DEF(float, f32, vm_f2u, vm_u2f, 0x5f3759dfu, 2)
BM_SQRT_DEF(double, f64, vm_d2u, vm_u2d, 0x5fe6eb50c7b537a9ull, 3)

/* ---- hypot: sqrt(a^2 + b^2) without spurious overflow or underflow ----
 * Both operands are scaled by a power of two (exact) when the larger is beyond BIG (by SB) or
 * below SMALL (by SS), so that the sum of squares is zero or normal, instead of dividing by
 * the larger as the classic form does; infinities win over NaN, as C specifies. float32:
 * above 2^60 scale by 2^-70, below 2^-60 by 2^90 (the smallest subnormal, 2^-149, becomes
 * 2^-59); float64: 2^500 by 2^-600, 2^-500 by 2^600. atan2's gradient, x / (a^2 + b^2),
 * uses the same scale: x s^2 / ((a s)^2 + (b s)^2), no square root. */
#define BM_HYPOT_DEF(T, SUF, FABS, BIG, SB, SMALL, SS)                                        \
  BO_KI T bm_hypot_scale_##SUF(T mx, T big, T small) {                                        \
    return BM_SEL(mx > (BIG), big, BM_SEL(mx < (SMALL), small, (T)1));                        \
  }                                                                                           \
  BO_KI T bm_hypot_##SUF(T a, T b) {                                                          \
    const T ax = FABS(a), bx = FABS(b), mx = ax > bx ? ax : bx;                               \
    const T s = bm_hypot_scale_##SUF(mx, (SB), (SS));                                         \
    const T inv = bm_hypot_scale_##SUF(mx, 1 / (T)(SB), 1 / (T)(SS));                         \
    const T xs = ax * s, ys = bx * s, h = bm_sqrt_##SUF(xs * xs + ys * ys) * inv;             \
    return BM_SEL((ax == (T)INFINITY) | (bx == (T)INFINITY), (T)INFINITY, h);                 \
  }                                                                                           \
  BO_KI T bm_over_sumsq_##SUF(T x, T a, T b) { /* x / (a^2 + b^2) */                          \
    const T ax = FABS(a), bx = FABS(b), mx = ax > bx ? ax : bx;                               \
    const T s = bm_hypot_scale_##SUF(mx, (SB), (SS)), as = a * s, bs = b * s;                 \
    return ((x * s) * s) / (as * as + bs * bs);                                               \
  }
BM_HYPOT_DEF(float, f32, __builtin_fabsf, 0x1p60f, 0x1p-70f, 0x1p-60f, 0x1p90f)
BM_HYPOT_DEF(double, f64, __builtin_fabs, 0x1p500, 0x1p-600, 0x1p-500, 0x1p600)

/* ---- atan2(a, b): the angle of (b, a), in [-pi, pi] ----
 * t = min/max of |a|, |b| in [0, 1]; above tan(pi/8) the identity atan t = pi/4 +
 * atan((t-1)/(t+1)) is taken in one division, (min-max)/(min+max); the core approximation
 * then covers |z| <= tan(pi/8): Cephes' atanf polynomial (float32, 1.3 ulp) and Hart & Cheney
 * 5077 (float64, 19.6 digits; 4 ulp after rounding). Then the octant and quadrant: pi/2 - r
 * when |a| > |b|, pi - r for negative (or -0) b, the sign of a. Both zero or both infinite
 * operands give C's values (0 or pi, and odd multiples of pi/4); NaN propagates. */
BO_KI float bm_atan_core_f32(float z) {
  const float z2 = z * z;
  return (((8.05374449538e-2f * z2 - 1.38776856032e-1f) * z2 + 1.99777106478e-1f) * z2 -
          3.33329491539e-1f) * z2 * z + z;
}
BO_KI double bm_atan_core_f64(double z) {
  const double s = z * z;
  const double p = (((1.61536412982230228262e1 * s + 2.6842548195503973794141e2) * s +
                     1.1530293515404850115428136e3) * s + 1.78040631643319697105464587e3) * s +
                   8.9678597403663861959987488e2;
  const double q = ((((s + 5.895697050844462222791e1) * s + 5.36265374031215315104235e2) * s +
                     1.6667838148816337184521798e3) * s + 2.07933497444540981287275926e3) * s +
                   8.9678597403663861962481162e2;
  return p / q * z;
}
#define BM_ATAN2_DEF(T, SUF, FABS, TOBITS, SHIFT)                                             \
  BO_KI T bm_atan2_##SUF(T a, T b) {                                                          \
    const T ay = FABS(a), bx = FABS(b);                                                       \
    const T mx = bx > ay ? bx : ay, mn = bx > ay ? ay : bx;                                   \
    const int both_inf = (ay == (T)INFINITY) & (bx == (T)INFINITY);                           \
    const int big = mn > (T)0.41421356237309504880 * mx;                                      \
    T z = BM_SEL(big, mn - mx, mn) / BM_SEL(big, mn + mx, mx);                                \
    z = BM_SEL((mx == 0) | both_inf, (T)0, z);                                                \
    T r = BM_SEL(big | both_inf, (T)0.78539816339744830962, (T)0) + bm_atan_core_##SUF(z);    \
    r = BM_SEL(ay > bx, (T)1.57079632679489661923 - r, r);                                    \
    r = BM_SEL((int)(TOBITS(b) >> SHIFT), (T)3.14159265358979323846 - r, r);                  \
    r = BM_SEL((int)(TOBITS(a) >> SHIFT), -r, r);                                             \
    return BM_SEL((a != a) | (b != b), a + b, r);                                             \
  }
BM_ATAN2_DEF(float, f32, __builtin_fabsf, vm_f2u, 31)
BM_ATAN2_DEF(double, f64, __builtin_fabs, vm_d2u, 63)

/* Type-generic names for the gradient terms, so one formula serves float32 and float64. */
#define BMG_FLOOR(x) VM_FP(floor, x)
#define BMG_OVER_SUMSQ(x, a, b)                                                               \
  _Generic((a), float: bm_over_sumsq_f32, double: bm_over_sumsq_f64)(x, a, b)

#endif
