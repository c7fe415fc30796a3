/* act_common.h: shared by the activation family (ops/activation) and the fused activation
 * operators (ops/fused/act_fused.c): elementwise maps with float params (AM_MAP: leaky_relu,
 * elu, softplus, hard_sigmoid), the GELU formulas, the float32 AVX-512 kernels of the GELU
 * forward and of the GELU and log_sigmoid gradients, and a deterministic blocked column-sum
 * driver for the gradients of per-channel parameters (prelu's alpha, bias_gelu's bias). */
#ifndef OPPERF_ACT_COMMON_H
#define OPPERF_ACT_COMMON_H

#include <math.h>

#include "unary/unary_map.h"
#include "unary/vlibm.h"
#include "unary/vmath512.h" /* VM512_T, VM512_OK(): the AVX-512 target and run-time check */
#ifdef OPF_X86
#include <immintrin.h>
#endif

/* ---- GELU ----
 * gelu(x) = x cdf(x), gelu'(x) = cdf(x) + x pdf(x), with the normal cdf(x) = 0.5 erfc(-z),
 * z = x / sqrt 2, and pdf(x) = exp(-z^2) / sqrt(2 pi). erfc keeps full relative precision
 * for x << 0, where 1 + erf(z) cancels.
 * float32 (the backward, and the forward where the AVX-512 kernel below cannot run):
 * erfc(|z|) = exp(-z^2) t S(t), t = 1 / (1 + 0.45 |z|), S a degree-9 polynomial
 * (Chebyshev fit of erfcx(z) / t on t in [0, 1], relative error 8e-8), erfc(-|z|) =
 * 2 - erfc(|z|); the one exp is shared with the gradient's pdf. Measured per element: 0.42 ns
 * forward or backward, where libmvec's erfcf takes 0.8 ns and Numerical Recipes' erfcc (a
 * second exp in the gradient) 0.68; Abramowitz-Stegun 7.1.26 (oneDNN's) is cheaper but only
 * accurate to 1.5e-7 absolute, 50% relative at x = -5.
 * float64: libmvec's erfc (vlibm.h declares erf only). */
VL_ATTR double act_erfcd(double) __asm__("erfc");
VM_INLINE float act_gelu_cdf_f(float x, float *e) {
  const float z = __builtin_fabsf(x) * (float)M_SQRT1_2, t = 1 / (1 + 0.45f * z);
  float p = -0.0430253624303f;
  p = p * t + 0.197983647862f;
  p = p * t - 0.314170764386f;
  p = p * t + 0.15606879608f;
  p = p * t - 0.0303837571398f;
  p = p * t + 0.122723846145f;
  p = p * t + 0.174712777978f;
  p = p * t + 0.228324267269f;
  p = p * t + 0.253881184437f;
  p = p * t + 0.253885332978f;
  *e = vm_expf(-z * z);
  const float h = 0.5f * *e * t * p; /* erfc(|z|) / 2 */
  return vm_self_if(x < 0, h, 1 - h);
}
VM_INLINE float act_gelu_f(float x) {
  float e;
  return x * act_gelu_cdf_f(x, &e);
}
VM_INLINE float act_gelu_grad_f(float x) {
  float e;
  const float cdf = act_gelu_cdf_f(x, &e);
  /* x pdf(x) is 0 where the exp is (|x| > 14.5, and x = +-inf, where inf * 0 gave NaN) */
  return cdf + vm_self_if(e > 0, x, 0.0f) * (float)(0.5 * M_2_SQRTPI * M_SQRT1_2) * e;
}
VM_INLINE double act_gelu_d(double x) { return x * 0.5 * act_erfcd(-x * M_SQRT1_2); }
VM_INLINE double act_gelu_grad_d(double x) {
  const double e = vm_exp(-0.5 * x * x);
  return 0.5 * act_erfcd(-x * M_SQRT1_2) +
         vm_seld_if(e > 0, x, 0.0) * (0.5 * M_2_SQRTPI * M_SQRT1_2) * e;
}
#define ACT_GELU(x) _Generic((x), float: act_gelu_f, double: act_gelu_d)(x)
#define ACT_GELU_GRAD(x) _Generic((x), float: act_gelu_grad_f, double: act_gelu_grad_d)(x)
static inline double act_gelu_ref(double x) { return 0.5 * x * erfc(-x * M_SQRT1_2); }

/* GELU forward, float32, AVX-512 (with DQ): cdf(-a) = erfc(a / sqrt 2) / 2 for a = |x| as
 * 2^s, s = log2 cdf(-a) = -a^2 log2(e) / 2 + log2(erfcx(a / sqrt 2) / 2), s a degree-4
 * polynomial in a on 16 intervals of [0, 15) (quarters of [0, 1), halves of [1, 3), units of
 * [3, 7), twos of [7, 15)), the interval the low 4 bits of bits(a + 1) >> 21 (interval j sits
 * at lane (j + 12) & 15 of the tables), its coefficients picked by vpermps from one register
 * per degree; then 2^s = 2^floor(s) 2^f, f = s - floor(s)
 * by vreduceps, 2^f = 1 + f q(f) (q degree 5, relative error 1.2e-8) and vscalefps (exact,
 * subnormals included). No division, no separate exp: 23 vector operations per 16 elements
 * where the previous kernel (a degree-9 polynomial in 1 / (1 + 0.45 |z|) by vrcp14ps and a
 * Newton step, times vm_expf's exp(-z^2)) took 37; measured 0.33 -> 0.19 ns per element on
 * L1-resident data. The -a^2 log2(e) / 2 term sits inside the polynomials, so s carries one
 * rounding of a value of size 0.72 a^2 + |log2(erfcx / 2)|: the relative error of the result
 * grows like 4e-8 a^2, under the 1.5e-7 x^2 that the rounding of x itself already costs. The
 * fit (scripts/gelu_fit.py, mpmath; its float coefficients) is within 1e-7 of log2 cdf for
 * a < 1, 2.6e-7 for a < 3 (the rounding of s at |s| ~ 8), 7e-6 at worst (a near 15, where
 * the result is below 1e-45 anyway: an error of d in s is a relative ln(2) d); measured against erfc in double
 * over [-15, 6] in steps of 5e-6: relative error at most 2.8e-7 for |x| <= 1, 5.5e-7 for
 * |x| <= 2, 1.4e-6 for |x| <= 4 (the previous kernel: 5.5e-7, 6e-7, 1.5e-6), everywhere
 * within 0.62 of test_gelu_accuracy's bound (the previous kernel reached 1.16 times it at
 * x = -0.6378). a is clamped at 14.5, where 2^s is below half the smallest subnormal
 * (h = 0: +inf -> +inf, -inf -> NaN as x * cdf(x) gives); NaN stays NaN; -0 -> -0.
 * y = x (1 - h) for x >= +0, x h for sign bit set (h = cdf(-|x|)).
 * y[i] = gelu(x[i] + b[i]), b NULL for none. */
#ifdef OPF_X86
/* max |error| in log2 units, float coefficients: 6.9e-06 */
static const float act_gelu_lt[5][16] = {
    {-1.00165045f, -1.00777507f, -1.02171206f, -1.04515338f,
     -1.09617424f, -1.19169617f, -1.30473125f, -1.42511177f,
     -1.60159969f, -1.83163571f, -2.0406723f, -2.22894049f,
     -1.0f, -1.00000238f, -1.00004625f, -1.00028574f},
    {-1.14437914f, -1.12821209f, -1.10041916f, -1.06292295f,
     -0.997125685f, -0.901126742f, -0.810273707f, -0.729699314f,
     -0.631195486f, -0.528000057f, -0.451476365f, -0.393257767f,
     -1.15110409f, -1.15107179f, -1.15073609f, -1.14948165f},
    {-0.470034271f, -0.486128747f, -0.506980658f, -0.529519498f,
     -0.561426342f, -0.597725451f, -0.625167131f, -0.64542073f,
     -0.666080832f, -0.683486164f, -0.694009483f, -0.700768948f,
     -0.459225446f, -0.459394306f, -0.460367322f, -0.462843984f},
    {-0.0440215208f, -0.0368592776f, -0.0298834704f, -0.0238495097f,
     -0.0169532951f, -0.0108331246f, -0.00714161806f, -0.00487566832f,
     -0.00294563896f, -0.00163758057f, -0.000993312919f, -0.000644079701f,
     -0.0524081215f, -0.0520040058f, -0.0507356711f, -0.0485500656f},
    {0.00405263295f, 0.00285045779f, 0.00197246997f, 0.00136544323f,
     0.000804851647f, 0.000416654017f, 0.000230051141f, 0.000134848393f,
     6.70877562e-05f, 3.01323798e-05f, 1.53161127e-05f, 8.54169139e-06f,
     0.00686114887f, 0.0064839297f, 0.00585618522f, 0.00512874965f},
};
/* 2^f = 1 + f q(f), q from the highest degree down; relative error 1.2e-08 */
static const float act_gelu_q[6] = {0.000208179146f, 0.00126921665f, 0.0096521955f,
                                    0.0554960221f, 0.240227208f, 0.693147182f};
/* h = cdf(-a), a = min(|x|, 14.5) (+0 for -0), as described above; a NaN x gives a number:
 * callers keep NaN themselves. */
VM512_T static inline __m512 act_gelu_h16_avx512(__m512 x, const __m512 *lt, __m512 *a_out) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 a = _mm512_range_ps(x, _mm512_set1_ps(14.5f), 0xA); /* min(|x|, 14.5), +0 */
  const __m512i j = _mm512_srli_epi32(_mm512_castps_si512(_mm512_add_ps(a, one)), 21);
  __m512 s = _mm512_permutexvar_ps(j, lt[4]);
  s = _mm512_fmadd_ps(s, a, _mm512_permutexvar_ps(j, lt[3]));
  s = _mm512_fmadd_ps(s, a, _mm512_permutexvar_ps(j, lt[2]));
  s = _mm512_fmadd_ps(s, a, _mm512_permutexvar_ps(j, lt[1]));
  s = _mm512_fmadd_ps(s, a, _mm512_permutexvar_ps(j, lt[0]));
  const __m512 f = _mm512_reduce_ps(s, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 q = _mm512_set1_ps(act_gelu_q[0]);
  for (int k = 1; k < 6; k++) q = _mm512_fmadd_ps(q, f, _mm512_set1_ps(act_gelu_q[k]));
  *a_out = a;
  return _mm512_scalef_ps(_mm512_fmadd_ps(q, f, one), s);
}
/* Lanes whose sign bit is clear (x >= +0). */
VM512_T static inline __mmask16 act_nonneg16(__m512 x) {
  return _mm512_testn_epi32_mask(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN));
}
VM512_T static inline __m512 act_gelu16_avx512(__m512 x, const __m512 *lt) {
  __m512 a;
  const __m512 h = act_gelu_h16_avx512(x, lt, &a); /* cdf(-|x|) */
  return _mm512_mul_ps(x, _mm512_mask_sub_ps(h, act_nonneg16(x), _mm512_set1_ps(1.0f), h));
}
VM512_T __attribute__((unused)) static void act_gelu_f32_avx512(
    const float *restrict x, const float *restrict b, float *restrict y, int64_t n) {
  __m512 lt[5];
  for (int k = 0; k < 5; k++) lt[k] = _mm512_loadu_ps(act_gelu_lt[k]);
  int64_t i = 0;
  /* two vectors per step: two independent chains of ~20 dependent operations */
  for (; i + 32 <= n; i += 32) {
    __m512 u = _mm512_loadu_ps(x + i), v = _mm512_loadu_ps(x + i + 16);
    if (b) {
      u = _mm512_add_ps(u, _mm512_loadu_ps(b + i));
      v = _mm512_add_ps(v, _mm512_loadu_ps(b + i + 16));
    }
    u = act_gelu16_avx512(u, lt);
    v = act_gelu16_avx512(v, lt);
    _mm512_storeu_ps(y + i, u);
    _mm512_storeu_ps(y + i + 16, v);
  }
  for (; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    if (b) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, b + i));
    _mm512_mask_storeu_ps(y + i, m, act_gelu16_avx512(v, lt));
  }
}
/* exp(v + lo) for v <= 0 with |lo| <= ulp(v) / 2 (lo carries what v's rounding lost), float32,
 * AVX-512F: vm_expf's reduction (v = n ln2 + r, ln2 in two parts, so a large |v| loses no
 * relative precision), exp(r) = 1 + r + r^2 P(r) with P of degree 4 (a relative-error fit on
 * |r| <= ln2 / 2: 3.1e-9, 1.2e-7 evaluated in float32, as vm_expf's degree-5 P), 2^n by
 * vscalefps (exact, gradual underflow: results below 2^-126 are subnormal, not flushed). v
 * below -120 is taken as -120 (exp under 2^-173: 0; -inf gives 0); NaN propagates. */
VM512_T static inline __m512 act_exp_nonpos16_avx512(__m512 v, __m512 lo) {
  v = _mm512_max_ps(_mm512_set1_ps(-120.0f), v); /* NaN in v is kept (second operand) */
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(v, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), v);
  r = _mm512_add_ps(_mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r), lo);
  __m512 p = _mm512_set1_ps(0.00138146f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.00836871f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.04166839f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.16666521f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.49999994f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}
/* gelu'(x) = cdf(x) + x pdf(x): h = cdf(-a) as the forward, pdf(a) = exp(-a^2 / 2) / sqrt(2 pi)
 * with a^2 split exactly into hi + lo (an FMA gives lo), so the exponent carries no rounding of
 * a^2 (the generic float32 path loses 6e-8 a^2 relative there); x >= +0: 1 - h + a pdf,
 * else h - a pdf. a is clamped at 14.5 as in the forward: beyond, a pdf(a) < 1.5e-45 and the
 * result is 1 or -0 give or take a few subnormals; NaN stays NaN. */
VM512_T static inline __m512 act_gelu_grad16_avx512(__m512 x, const __m512 *lt) {
  __m512 a;
  const __m512 h = act_gelu_h16_avx512(x, lt, &a);
  const __m512 hi = _mm512_mul_ps(a, a), lo = _mm512_fmsub_ps(a, a, hi);
  const __m512 mh = _mm512_set1_ps(-0.5f);
  const __m512 e = act_exp_nonpos16_avx512(_mm512_mul_ps(hi, mh), _mm512_mul_ps(lo, mh));
  const __m512 t = _mm512_mul_ps(_mm512_mul_ps(a, _mm512_set1_ps(0.398942280401432678f)), e);
  const __mmask16 pos = act_nonneg16(x);
  const __m512 cdf = _mm512_mask_sub_ps(h, pos, _mm512_set1_ps(1.0f), h);
  const __m512 g = _mm512_mask_add_ps(_mm512_sub_ps(cdf, t), pos, cdf, t);
  return _mm512_mask_mov_ps(g, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x); /* vrangeps drops NaN */
}
/* expm1(v) for v <= 0, float32, AVX-512F: v = n ln2 + r as act_exp_nonpos16_avx512 reduces
 * it, expm1(r) = r + r^2 P(r) (P of degree 4, a relative-error fit on |r| <= ln2 / 2: 1.3e-8,
 * 9.1e-8 evaluated in float32), expm1(v) = 2^n expm1(r) + (2^n - 1) by one FMA (exactly
 * expm1(r) when n = 0, so small |v| keeps its relative precision). v below -30 is taken as
 * -30 (expm1 = -1 in float32); -inf gives -1, -0 gives +0, NaN NaN. */
VM512_T static inline __m512 act_expm1_nonpos16_avx512(__m512 v) {
  v = _mm512_max_ps(_mm512_set1_ps(-30.0f), v); /* NaN in v is kept (second operand) */
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(v, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), v);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(0.0013882522471249104f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.00836651399731636f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.04166720062494278f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.1666654348373413f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.4999999701976776f));
  p = _mm512_fmadd_ps(_mm512_mul_ps(r, r), p, r);
  const __m512 t = _mm512_scalef_ps(_mm512_set1_ps(1.0f), n);
  return _mm512_fmadd_ps(t, p, _mm512_sub_ps(t, _mm512_set1_ps(1.0f)));
}
/* log_sigmoid's gradient from its output y = log_sigmoid(x) <= 0: 1 / (1 + exp(x)) =
 * 1 - sigmoid(x) = 1 - exp(y) = -expm1(y), one expm1 and no division (torch keeps exp(-|x|)
 * from its forward and divides; computing exp(-|x|) again and dividing took ~22 vector
 * operations per 16 elements, this 15). Relative precision where the gradient is tiny (x >> 0,
 * y = -exp(-x) to first order) is y's own, the forward's; x = +inf (y = -0) gives 0, -inf
 * (y = -inf) 1, NaN NaN. */
VM512_T static inline __m512 act_log_sigmoid_grad16_avx512(__m512 y, const __m512 *unused) {
  (void)unused;
  const __m512 m = act_expm1_nonpos16_avx512(y);
  return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(m), _mm512_set1_epi32(INT32_MIN)));
}
/* dx[i] = dy[i] G(x[i] + b[i]) (b NULL: none) for a gradient G(v, lt) of the above: two vectors
 * per step (two independent chains), unmasked but for the tail (masked stores cost more on
 * AMD cores). */
#define ACT_GRAD_LOOP(G, lt)                                                                  \
  do {                                                                                        \
    int64_t i = 0;                                                                            \
    for (; i + 32 <= n; i += 32) {                                                            \
      __m512 u = _mm512_loadu_ps(x + i), v = _mm512_loadu_ps(x + i + 16);                     \
      if (b) {                                                                                \
        u = _mm512_add_ps(u, _mm512_loadu_ps(b + i));                                         \
        v = _mm512_add_ps(v, _mm512_loadu_ps(b + i + 16));                                    \
      }                                                                                       \
      u = G(u, lt), v = G(v, lt);                                                             \
      _mm512_storeu_ps(dx + i, _mm512_mul_ps(_mm512_loadu_ps(dy + i), u));                    \
      _mm512_storeu_ps(dx + i + 16, _mm512_mul_ps(_mm512_loadu_ps(dy + i + 16), v));          \
    }                                                                                         \
    for (; i < n; i += 16) {                                                                  \
      const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1); \
      __m512 v = _mm512_maskz_loadu_ps(m, x + i);                                             \
      if (b) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, b + i));                           \
      _mm512_mask_storeu_ps(dx + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, dy + i), G(v, lt))); \
    }                                                                                         \
  } while (0)
VM512_T __attribute__((unused)) static void act_gelu_grad_f32_avx512(
    const float *restrict x, const float *restrict b, const float *restrict dy,
    float *restrict dx, int64_t n) {
  __m512 lt[5];
  for (int k = 0; k < 5; k++) lt[k] = _mm512_loadu_ps(act_gelu_lt[k]);
  ACT_GRAD_LOOP(act_gelu_grad16_avx512, lt);
}
/* dx[i] = dy[i] (-expm1(y[i])), y = log_sigmoid(x) */
VM512_T __attribute__((unused)) static void act_log_sigmoid_grad_f32_avx512(
    const float *restrict y, const float *restrict dy, float *restrict dx, int64_t n) {
  const float *b = NULL, *x = y;
  ACT_GRAD_LOOP(act_log_sigmoid_grad16_avx512, NULL);
}
#undef ACT_GRAD_LOOP
#else
static inline void act_gelu_f32_avx512(const float *restrict x, const float *restrict b,
                                       float *restrict y, int64_t n) {
  (void)x, (void)b, (void)y, (void)n;
}
static inline void act_gelu_grad_f32_avx512(const float *restrict x, const float *restrict b,
                                            const float *restrict dy, float *restrict dx,
                                            int64_t n) {
  (void)x, (void)b, (void)dy, (void)dx, (void)n;
}
static inline void act_log_sigmoid_grad_f32_avx512(const float *restrict y,
                                                   const float *restrict dy, float *restrict dx,
                                                   int64_t n) {
  (void)y, (void)dy, (void)dx, (void)n;
}
#endif

/* log1p(e) for e in [0, 1] (softplus and log_sigmoid take log1p(exp(-|x|))): 2 atanh(s) with
 * s = e / (2 + e) <= 1/3, by its odd series in s, truncated where (1/9)^k / (2k + 1) is below
 * the dtype's rounding: one divide and 7 (float32) or 16 (float64) multiply-adds. vmath.h's
 * log with a rounding correction measured 2.3x slower, libmvec's log1pf 1.7x. */
#define ACT_L1P_STEP(k) p = p * z + 1 / (__typeof__(p))(2 * (k) + 1);
#define ACT_LOG1P01_FN(T, S, TOP, STEPS)                                                      \
  VM_INLINE T act_log1p01_##S(T e) {                                                          \
    const T s = e / (2 + e), z = s * s;                                                       \
    T p = (T)1 / (2 * (TOP) + 1);                                                             \
    STEPS                                                                                     \
    return 2 * s * p;                                                                         \
  }
#define ACT_L1P_LOW                                                                           \
  ACT_L1P_STEP(6) ACT_L1P_STEP(5) ACT_L1P_STEP(4) ACT_L1P_STEP(3) ACT_L1P_STEP(2)             \
  ACT_L1P_STEP(1) ACT_L1P_STEP(0)
ACT_LOG1P01_FN(float, f, 7, ACT_L1P_LOW)
ACT_LOG1P01_FN(double, d, 16,
               ACT_L1P_STEP(15) ACT_L1P_STEP(14) ACT_L1P_STEP(13) ACT_L1P_STEP(12)
                   ACT_L1P_STEP(11) ACT_L1P_STEP(10) ACT_L1P_STEP(9) ACT_L1P_STEP(8)
                       ACT_L1P_STEP(7) ACT_L1P_LOW)
#undef ACT_LOG1P01_FN
#undef ACT_L1P_LOW
#undef ACT_L1P_STEP
#define ACT_LOG1P01(e) _Generic((e), float: act_log1p01_f, double: act_log1p01_d)(e)

/* ---- elementwise maps with params ----
 * As unary_map.h's UM_MAP, with the operator's first two params (c->p[0], c->p[1], converted
 * to the element type) visible as p0 and p1 in the FWD and BWD expressions, and a float64
 * reference double(double x, const double *p) given the params. Both passes are one loop
 * template, out = EXPR(x, y, dy): forward passes x for all three (the loads it does not use
 * are dropped), backward x, y and dy. */
#define AM_LOOP(fn, T, EXPR)                                                                  \
  OPF_VEC static void fn(const T *restrict xp, const T *restrict yp, const T *restrict dyp,   \
                         T *restrict out, int64_t n, const T p0, const T p1) {                \
    (void)p0, (void)p1;                                                                       \
    for (int64_t i = 0; i < n; i++) {                                                         \
      const T x = xp[i], y = yp[i], dy = dyp[i];                                              \
      (void)x, (void)y, (void)dy;                                                             \
      out[i] = (EXPR);                                                                        \
    }                                                                                         \
  }
typedef void (*am_f32_fn)(const float *restrict, const float *restrict, const float *restrict,
                          float *restrict, int64_t, float, float);
typedef void (*am_f64_fn)(const double *restrict, const double *restrict,
                          const double *restrict, double *restrict, int64_t, double, double);
typedef struct am_kernels {
  am_f32_fn f32[2]; /* [bwd] */
  am_f64_fn f64[2];
  int64_t par_min;
} am_kernels;

typedef struct {
  const opf_case *c;
  const am_kernels *k;
  int bwd;
} am_ctx;

static inline void am_range(int64_t lo, int64_t hi, void *v) {
  const am_ctx *u = v;
  const opf_case *c = u->c;
  const opf_tensor *y = u->bwd ? &c->out[0] : &c->in[0], *dy = u->bwd ? &c->gout[0] : &c->in[0];
  const opf_tensor *out = u->bwd ? &c->gin[0] : &c->out[0];
  if (c->dtype == OPF_F32)
    u->k->f32[u->bwd]((const float *)c->in[0].data + lo, (const float *)y->data + lo,
                      (const float *)dy->data + lo, (float *)out->data + lo, hi - lo,
                      (float)c->p[0], (float)c->p[1]);
  else
    u->k->f64[u->bwd]((const double *)c->in[0].data + lo, (const double *)y->data + lo,
                      (const double *)dy->data + lo, (double *)out->data + lo, hi - lo,
                      c->p[0], c->p[1]);
}

/* Threaded like unary_map.h's maps (cache-line aligned chunks, so results do not depend on
 * the thread count). */
static inline int am_run(opf_case *c, const am_kernels *k, int bwd) {
  if (bwd && !c->gin[0].data) return OPF_OK;
  const um_kernels uk = {.par_min = k->par_min};
  am_ctx u = {c, k, bwd};
  um_parallel(opf_numel(&c->in[0]), &uk, am_range, &u);
  return OPF_OK;
}

static inline int am_reference(opf_case *c, double (*f)(double, const double *)) {
  const int64_t n = opf_numel(&c->in[0]);
  for (int64_t i = 0; i < n; i++) {
    if (c->dtype == OPF_F32)
      ((float *)c->out[0].data)[i] = (float)f(((const float *)c->in[0].data)[i], c->p);
    else
      ((double *)c->out[0].data)[i] = f(((const double *)c->in[0].data)[i], c->p);
  }
  return OPF_OK;
}

/* One table row per operator: name, forward expression in x (and p0, p1), backward
 * expression in x, y, dy (and p0, p1), reference, flops per element fwd and bwd, backward
 * reads (UM_R_*), parallel threshold (UM_PAR_*). */
#define AM_MAP(name, FWD, BWD, REF, FF, BF, READS, PAR)                                       \
  AM_LOOP(name##_fwd_f32, float, FWD)                                                         \
  AM_LOOP(name##_bwd_f32, float, BWD)                                                         \
  AM_LOOP(name##_fwd_f64, double, FWD)                                                        \
  AM_LOOP(name##_bwd_f64, double, BWD)                                                        \
  static const am_kernels name##_kernels = {{name##_fwd_f32, name##_bwd_f32},                 \
                                            {name##_fwd_f64, name##_bwd_f64}, PAR};           \
  static int name##_forward(opf_case *c) { return am_run(c, &name##_kernels, 0); }            \
  static int name##_backward(opf_case *c) { return am_run(c, &name##_kernels, 1); }           \
  static int name##_reference(opf_case *c) { return am_reference(c, REF); }                   \
  UM_MODELS(name, FF, BF, READS)

/* Descriptor fields of an activation map (UM_MAP or AM_MAP row); the shapes are unary_map.h's
 * plus the operator's own param variants (ACT_SHAPES). */
#define ACT_DESC(name)                                                                        \
  .abi = OPF_OP_ABI, .category = "nn.activation", .dtypes = OPF_DT_FLOAT, .n_in = 1,          \
  .n_out = 1, .out = {"y"}, .infer = um_infer, .forward = name##_forward,                     \
  .backward = name##_backward, .reference = name##_reference, .flops = name##_flops,          \
  .bytes = name##_bytes
#define ACT_SHAPES(...)                                                                       \
  {{"standard", "x=1024x1024"}, {"skewed", "x=10000x10"},  {"skewed", "x=10x10000"},           \
   {"skewed", "x=10000x1"},     {"skewed", "x=100000x10"}, {"small", "x=16x16"},               \
   {"small", "x=1x1024"},       {"small", "x=37x3"},       {"small", "x=()"},                  \
   {"test", "x=301x517"},       {"test", "x=100003"},      {"large", "x=8192x8192"},           \
   {"huge", "x=46341x46341"},   __VA_ARGS__}

/* ---- per-channel parameter gradients ----
 * Column sums over the rows of a (rows, cols) matrix, computed together with the elementwise
 * gradient: task (row chunk, column block) calls tile(ctx, r0, r1, c0, c1, acc), which writes
 * its tile's input gradient and adds each column's terms into acc[c - c0] (double, zeroed);
 * the partial sums land in part[chunk * cols + c] and are summed in chunk order into
 * part[c] (the first partial row). The chunks depend only on the shape, so results do not
 * change with the thread count. */
typedef void (*act_tile_fn)(void *ctx, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                            double *restrict acc);
#define ACT_CS_CHUNKS 16   /* row chunks at most (16 partial rows to sum) */
#define ACT_CS_CB 4096     /* column block: whole rows up to 4096 wide, so tiles stream */
#define ACT_CS_GRAIN 65536 /* elements per row chunk at least */

static inline int64_t act_colsum_chunks(int64_t rows, int64_t cols) {
  int64_t k = rows * cols / ACT_CS_GRAIN;
  k = k < 1 ? 1 : k > ACT_CS_CHUNKS ? ACT_CS_CHUNKS : k;
  return k < rows ? k : rows > 0 ? rows : 1;
}
/* Workspace of the partial sums. */
static inline size_t act_colsum_ws(int64_t rows, int64_t cols) {
  return (size_t)act_colsum_chunks(rows, cols) * (size_t)cols * sizeof(double);
}

static inline void act_colsum_task(int64_t t, int64_t rows, int64_t cols, int64_t nch,
                                   act_tile_fn tile, void *ctx, double *part) {
  const int64_t ncb = (cols + ACT_CS_CB - 1) / ACT_CS_CB, ch = t / ncb, cb = t % ncb;
  const int64_t r0 = rows * ch / nch, r1 = rows * (ch + 1) / nch;
  const int64_t c0 = cb * ACT_CS_CB, c1 = c0 + ACT_CS_CB < cols ? c0 + ACT_CS_CB : cols;
  double acc[ACT_CS_CB];
  for (int64_t j = 0; j < c1 - c0; j++) acc[j] = 0;
  tile(ctx, r0, r1, c0, c1, acc);
  memcpy(part + ch * cols + c0, acc, (size_t)(c1 - c0) * sizeof(double));
}

static inline void act_colsum_drive(int64_t rows, int64_t cols, act_tile_fn tile, void *ctx,
                                    double *part) {
  const int64_t nch = act_colsum_chunks(rows, cols), ncb = (cols + ACT_CS_CB - 1) / ACT_CS_CB;
  const int64_t ntask = nch * ncb;
  if (ntask > 1 && rows * cols >= OPF_PAR_MIN && omp_get_max_threads() > 1) {
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < ntask; t++) act_colsum_task(t, rows, cols, nch, tile, ctx, part);
  } else {
    for (int64_t t = 0; t < ntask; t++) act_colsum_task(t, rows, cols, nch, tile, ctx, part);
  }
  for (int64_t ch = 1; ch < nch; ch++)
    for (int64_t j = 0; j < cols; j++) part[j] += part[ch * cols + j];
}

/* The row loop of a tile kernel: the statement in ... (using r and j) adds the term of element
 * (r, j) to part[j], an RT partial row folded into the double acc every ACT_RB rows (so a
 * float32 partial sums at most 64 terms). Summing into double per element measured 1.4x
 * slower for bias_gelu's backward. w <= ACT_CS_CB. */
#define ACT_RB 64
#define ACT_COLSUM_ROWS(RT, rows, w, acc, ...)                                                \
  do {                                                                                        \
    RT part[ACT_CS_CB];                                                                       \
    for (int64_t r0 = 0; r0 < (rows); r0 += ACT_RB) {                                         \
      const int64_t r1 = r0 + ACT_RB < (rows) ? r0 + ACT_RB : (rows);                         \
      for (int64_t j = 0; j < (w); j++) part[j] = 0;                                          \
      for (int64_t r = r0; r < r1; r++)                                                       \
        for (int64_t j = 0; j < (w); j++) {                                                   \
          __VA_ARGS__                                                                         \
        }                                                                                     \
      for (int64_t j = 0; j < (w); j++) (acc)[j] += part[j];                                  \
    }                                                                                         \
  } while (0)

/* Store n double sums into a float tensor's data (NULL: nothing to store). */
static inline void act_store_sums(opf_dtype dt, void *out, const double *s, int64_t n) {
  for (int64_t j = 0; j < n && out; j++) {
    if (dt == OPF_F32) ((float *)out)[j] = (float)s[j];
    else ((double *)out)[j] = s[j];
  }
}

/* ---- a (rows, C) matrix with one parameter per column (prelu's alpha, bias_gelu's bias) ----
 * Narrow rows (C < 64) are viewed as rows of P = m C >= ACT_WIDE elements, so the per-column
 * loops stay long and vectorised (measured: prelu's (100000, 10) backward 13 ms one row of
 * 10 at a time, 0.23 ms viewed): vr whole viewed rows, then a tail of n - vr P elements
 * (whole rows of C). A viewed row's P parameters are the C ones repeated. Kernels get blocks:
 * fn(ctx, o, rows, w, c0, acc) processes `rows` rows of w columns from element o (row stride
 * P), whose parameters start at column c0 of the viewed row; backward adds each column's
 * gradient terms into acc[j] (forward: acc is NULL). */
#define ACT_WIDE 256
#define ACT_PMAX 1024
typedef struct act_cview {
  int64_t n, C, P, vr;
  const void *a; /* the P parameters of a viewed row */
  union {
    float f[ACT_PMAX];
    double d[ACT_PMAX];
  } rep;
} act_cview;
typedef void (*act_block_fn)(void *ctx, int64_t o, int64_t rows, int64_t w, int64_t c0,
                             double *restrict acc);

/* P: a multiple of lcm(C, 16) (whole 64-byte vectors of float32, no loop remainders) of at
 * least ACT_WIDE elements when that fits ACT_PMAX, else of C. */
static inline int64_t act_cview_p(int64_t C) {
  if (C >= 64) return C;
  int64_t g = C, b = 16; /* g = gcd(C, 16) */
  while (b) {
    const int64_t t = g % b;
    g = b, b = t;
  }
  const int64_t u = C * 16 / g <= ACT_PMAX / 2 ? C * 16 / g : C;
  return u * ((ACT_WIDE + u - 1) / u);
}
static inline void act_cview_init(act_cview *v, int64_t n, int64_t C, opf_dtype dt,
                                  const void *a) {
  v->n = n, v->C = C > 0 ? C : 1, v->P = act_cview_p(v->C), v->vr = n / v->P, v->a = a;
  if (v->P == v->C) return;
  for (int64_t j = 0; j < v->P; j++) {
    if (dt == OPF_F32) v->rep.f[j] = ((const float *)a)[j % v->C];
    else v->rep.d[j] = ((const double *)a)[j % v->C];
  }
  v->a = &v->rep;
}
/* Workspace of act_cview_colsum. */
static inline size_t act_cview_ws(int64_t n, int64_t C) {
  const int64_t P = act_cview_p(C > 0 ? C : 1);
  return act_colsum_ws(n / P, P);
}

typedef struct {
  const act_cview *v;
  act_block_fn fn;
  void *ctx;
} act_cview_job;

/* forward: viewed rows [lo, hi), where hi == vr + 1 stands for the tail */
static inline void act_cview_range(int64_t lo, int64_t hi, void *p) {
  const act_cview_job *j = p;
  const act_cview *v = j->v;
  const int64_t nr = (hi < v->vr ? hi : v->vr) - lo, tail = v->n - v->vr * v->P;
  if (nr > 0) j->fn(j->ctx, lo * v->P, nr, v->P, 0, NULL);
  if (hi > v->vr && tail > 0) j->fn(j->ctx, v->vr * v->P, 1, tail, 0, NULL);
}
static inline void act_cview_map(const act_cview *v, act_block_fn fn, void *ctx) {
  act_cview_job j = {v, fn, ctx};
  opf_parallel_range(v->vr + 1, OPF_PAR_MIN / v->P + 1, act_cview_range, &j);
}

/* backward: the column sums of the viewed rows, the tail, then the P columns folded into C,
 * left in part[0, C) */
static inline void act_cview_tile(void *p, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                                  double *restrict acc) {
  const act_cview_job *j = p;
  j->fn(j->ctx, r0 * j->v->P + c0, r1 - r0, c1 - c0, c0, acc);
}
static inline void act_cview_colsum(const act_cview *v, act_block_fn fn, void *ctx,
                                    double *part) {
  act_cview_job j = {v, fn, ctx};
  act_colsum_drive(v->vr, v->P, act_cview_tile, &j, part);
  const int64_t tail = v->n - v->vr * v->P;
  if (tail > 0) {
    double t[ACT_PMAX] = {0};
    fn(ctx, v->vr * v->P, 1, tail, 0, t);
    for (int64_t k = 0; k < tail; k++) part[k] += t[k];
  }
  for (int64_t k = v->C; k < v->P; k++) part[k % v->C] += part[k];
}

#endif
