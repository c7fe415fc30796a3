/* vmath512.h: float32 AVX-512 kernels of pow, atan2, arccosh and rint/floor/ceil/trunc
 * (x86-64 with AVX-512F/DQ, chosen at run time by VM512_OK(); elsewhere, and on arm64, the
 * generic loops of bmath.h, trig.c and rounding.c run). pow: log2|a| as a double-float
 * (32-entry tables, relative error about 2^-35) times b, then 2^(hi + lo), all on 16 float32
 * lanes: within one ulp of the rounded a^b even at |b log2 a| = 150 (the generic path forms
 * it in float64); vectors with zero, subnormal, infinite or NaN operands or saturating
 * results take a float64 path (16-entry log2 and exp2 tables) that handles every case.
 * arccosh: ln(x + sqrt(x^2 - 1)) with compensated square root and logarithm (1 ulp).
 * atan2: bmath.h's formula (Cephes' atanf core, one division) in intrinsics. Rounding: one
 * vroundscaleps. Loops: two vectors per step, unmasked main loops and one masked tail (masked
 * stores cost more on AMD cores); a broadcast operand is a register, and pow's broadcast base
 * takes its logarithm once per row. */
#ifndef OPPERF_VMATH512_H
#define OPPERF_VMATH512_H

#include <stdint.h>

#include "opf_kernel.h"

#ifdef OPF_X86
#include <immintrin.h>

#define VM512_T __attribute__((target("avx512f,avx512dq")))
#define VM512_KI VM512_T static inline __attribute__((always_inline))
#define VM512_OK() (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq"))

/* log2 table: x = 2^k z with z in [0x1.6955p-1, 0x1.6955p+0) (the bits of x minus OFF, as in
 * glibc's powf), split by the top 4 bits of z's mantissa offset; r = z invc - 1 (|r| < 0.037;
 * invc = 1 exactly in the interval holding 1, so log2 is exact there at x = 1) and
 * log2 z = logc + log2(1 + r) with logc = -log2(invc). */
#define VM512_LOG2_OFF 0x3fe6955500000000ll
static const double vm512_invc[16] = {
    0x1.62e35ec55cdcfp+0, 0x1.5426fe81de518p+0, 0x1.469767d930285p+0, 0x1.3a120260bdc80p+0,
    0x1.2e7951b44c9fcp+0, 0x1.23b40c93fd1c6p+0, 0x1.19ac640db653cp+0, 0x1.104f6f8412415p+0,
    0x1.078cb545748f8p+0, 0x1.0000000000000p+0, 0x1.df882753d3cfbp-1, 0x1.c5039260cd9c5p-1,
    0x1.ad46750d87134p-1, 0x1.97e6885d0df2bp-1, 0x1.848daf1f957cfp-1, 0x1.72f5653cb3477p-1};
static const double vm512_logc[16] = {
    -0x1.e287aaafc9e9cp-2, -0x1.a3e0c5842b3bap-2, -0x1.67c67d6c3a310p-2, -0x1.2e05c86de3032p-2,
    -0x1.ece2bfa818ed5p-3, -0x1.81c1d43cdc173p-3, -0x1.1a6094d3c9209p-3, -0x1.6cfc36d931a61p-4,
    -0x1.577f81673133dp-5, 0x0.0p+0,              0x1.83246f6d39fc6p-4,  0x1.69a723e61e34fp-3,
    0x1.0457ba2c47e34p-2,  0x1.4fcbf4e2e3222p-2,  0x1.97955ddaacfafp-2,  0x1.dc0b00520cffdp-2};
/* log2(1 + r) = r (c1 + r (c2 + ... r c7)), c_k = (-1)^(k+1) / (k ln 2): truncation error
 * r^7 / 8 relative, 2^-36 at |r| = 0.037 */
static const double vm512_log2_c[7] = {0x1.71547652b82fep+0,  -0x1.71547652b82fep-1,
                                       0x1.ec709dc3a03fdp-2,  -0x1.71547652b82fep-2,
                                       0x1.2776c50ef9bfep-2,  -0x1.ec709dc3a03fdp-3,
                                       0x1.a61762a7aded9p-3};
/* 2^(j/16), j = 0..15 */
static const double vm512_exp2_t[16] = {
    0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
    0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0,
    0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
    0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0};
/* 2^(g/16) = 1 + g (e1 + g (e2 + g (e3 + g e4))), e_k = (ln 2 / 16)^k / k!, |g| <= 1/2:
 * truncation error 4e-11 relative */
static const double vm512_exp2_c[4] = {0x1.62e42fefa39efp-5, 0x1.ebfbdff82c58fp-11,
                                       0x1.c6b08d704a0c0p-17, 0x1.3b2ab6fba4e77p-23};

/* log2(x) for positive normal finite x (other lanes: unspecified). */
VM512_KI __m512d vm512_log2_pd(__m512d x) {
  const __m512i ix = _mm512_castpd_si512(x);
  const __m512i tmp = _mm512_sub_epi64(ix, _mm512_set1_epi64(VM512_LOG2_OFF));
  const __m512i idx = _mm512_srli_epi64(tmp, 48); /* vpermt2pd reads the low 4 bits */
  const __m512i top = _mm512_and_si512(tmp, _mm512_set1_epi64((long long)0xfff0000000000000ull));
  const __m512d z = _mm512_castsi512_pd(_mm512_sub_epi64(ix, top));
  const __m512d k = _mm512_cvtepi64_pd(_mm512_srai_epi64(top, 52));
  const __m512d invc = _mm512_permutex2var_pd(_mm512_loadu_pd(vm512_invc), idx,
                                              _mm512_loadu_pd(vm512_invc + 8));
  const __m512d logc = _mm512_permutex2var_pd(_mm512_loadu_pd(vm512_logc), idx,
                                              _mm512_loadu_pd(vm512_logc + 8));
  const __m512d r = _mm512_fmsub_pd(z, invc, _mm512_set1_pd(1.0));
  __m512d p = _mm512_set1_pd(vm512_log2_c[6]);
  for (int j = 5; j >= 0; j--) p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(vm512_log2_c[j]));
  return _mm512_fmadd_pd(p, r, _mm512_add_pd(k, logc));
}

/* 2^t: t = (kz + g) / 16 with kz = round(16 t) (its low bits from the 1.5 2^52 shifter pick
 * 2^(j/16)), |g| <= 1/2; vscalefpd multiplies by 2^floor(kz / 16), exact and saturating. t is
 * clamped to +-2000 (beyond float32's range either way); NaN propagates. */
VM512_KI __m512d vm512_exp2_pd(__m512d t) {
  const __m512d shift = _mm512_set1_pd(0x1.8p52);
  t = _mm512_max_pd(_mm512_set1_pd(-2000.0), _mm512_min_pd(_mm512_set1_pd(2000.0), t));
  const __m512d z = _mm512_mul_pd(t, _mm512_set1_pd(16.0));
  const __m512d zs = _mm512_add_pd(z, shift);
  const __m512d kz = _mm512_sub_pd(zs, shift);
  const __m512d g = _mm512_sub_pd(z, kz);
  const __m512d tj = _mm512_permutex2var_pd(_mm512_loadu_pd(vm512_exp2_t), _mm512_castpd_si512(zs),
                                            _mm512_loadu_pd(vm512_exp2_t + 8));
  __m512d p = _mm512_set1_pd(vm512_exp2_c[3]);
  for (int j = 2; j >= 0; j--) p = _mm512_fmadd_pd(p, g, _mm512_set1_pd(vm512_exp2_c[j]));
  p = _mm512_mul_pd(p, g);
  return _mm512_scalef_pd(_mm512_fmadd_pd(tj, p, tj), _mm512_mul_pd(kz, _mm512_set1_pd(0.0625)));
}

/* The two float64 halves of a float32 vector, and back. */
VM512_KI __m512d vm512_lo_pd(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
VM512_KI __m512d vm512_hi_pd(__m512 v) { return _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)); }
VM512_KI __m512 vm512_join_ps(__m512d lo, __m512d hi) {
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
}
/* Lanes whose sign bit is set (negative, -0, negative NaN). */
VM512_KI __mmask16 vm512_signbit(__m512 v) {
  return _mm512_test_epi32_mask(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN));
}

/* log2 of the 16 lanes of x >= +0 (float32 |a|) as two float64 halves: +0 gives -inf, +inf
 * +inf, NaN NaN. */
VM512_KI void vm512_log2_16(__m512 x, __m512d *lo, __m512d *hi) {
  const __m512d xl = vm512_lo_pd(x), xh = vm512_hi_pd(x);
  __m512d ll = vm512_log2_pd(xl), lh = vm512_log2_pd(xh);
  const __mmask16 sp = _mm512_fpclass_ps_mask(x, 0x01 | 0x02 | 0x08 | 0x80); /* NaN, +0, +inf */
  if (sp) {
    const __mmask16 zero = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_EQ_OQ);
    const __mmask16 other = sp & (__mmask16)~zero; /* inf, NaN: log2 is x itself */
    const __m512d ninf = _mm512_set1_pd(-(double)INFINITY);
    ll = _mm512_mask_mov_pd(_mm512_mask_mov_pd(ll, (__mmask8)zero, ninf), (__mmask8)other, xl);
    lh = _mm512_mask_mov_pd(_mm512_mask_mov_pd(lh, (__mmask8)(zero >> 8), ninf),
                            (__mmask8)(other >> 8), xh);
  }
  *lo = ll;
  *hi = lh;
}

/* C's special cases of pow on e = 2^(b log2|a|), as bmath.h's bm_pow_fix: odd integer b
 * keeps a negative base's sign, other finite negative bases give NaN, b == 0, a == 1 and
 * |a| == 1 with infinite b give 1. */
VM512_T static inline __m512 vm512_pow_fix16(__m512 e, __m512 a, __m512 b) {
  const __m512 one = _mm512_set1_ps(1.0f), inf = _mm512_set1_ps(INFINITY);
  const __m512 half = _mm512_mul_ps(b, _mm512_set1_ps(0.5f));
  const __mmask16 integral =
      _mm512_cmp_ps_mask(_mm512_roundscale_ps(b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                         b, _CMP_EQ_OQ);
  const __mmask16 odd =
      integral &
      _mm512_cmp_ps_mask(_mm512_roundscale_ps(half, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                         half, _CMP_NEQ_OQ);
  __m512 y = _mm512_mask_xor_ps(e, vm512_signbit(a) & odd, e, _mm512_set1_ps(-0.0f));
  const __mmask16 nan = _mm512_cmp_ps_mask(a, _mm512_setzero_ps(), _CMP_LT_OQ) &
                        _mm512_cmp_ps_mask(a, _mm512_set1_ps(-INFINITY), _CMP_GT_OQ) & ~integral;
  y = _mm512_mask_mov_ps(y, nan, _mm512_set1_ps(NAN));
  const __mmask16 unit = _mm512_cmp_ps_mask(b, _mm512_setzero_ps(), _CMP_EQ_OQ) |
                         _mm512_cmp_ps_mask(a, one, _CMP_EQ_OQ) |
                         (_mm512_cmp_ps_mask(_mm512_abs_ps(a), one, _CMP_EQ_OQ) &
                          _mm512_cmp_ps_mask(_mm512_abs_ps(b), inf, _CMP_EQ_OQ));
  return _mm512_mask_mov_ps(y, unit, one);
}

/* a^b from the halves of log2|a| (vm512_log2_16): the special cases only run for blocks with
 * a sign bit in a or a NaN result (b == 0 or a == 1 give 1 on the main path already, unless
 * the other operand is infinite or NaN, which makes t NaN). */
VM512_KI __m512 vm512_pow16(__m512 a, __m512 b, __m512d ll, __m512d lh) {
  const __m512d el = vm512_exp2_pd(_mm512_mul_pd(vm512_lo_pd(b), ll));
  const __m512d eh = vm512_exp2_pd(_mm512_mul_pd(vm512_hi_pd(b), lh));
  const __m512 e = vm512_join_ps(el, eh);
  if (vm512_signbit(a) | _mm512_cmp_ps_mask(e, e, _CMP_UNORD_Q)) return vm512_pow_fix16(e, a, b);
  return e;
}
VM512_KI __m512 vm512_pow16_full(__m512 a, __m512 b) {
  __m512d ll, lh;
  vm512_log2_16(_mm512_abs_ps(a), &ll, &lh);
  return vm512_pow16(a, b, ll, lh);
}

/* atan2(a, b), bmath.h's bm_atan2_f32 lane by lane (same operations, same results). */
VM512_KI __m512 vm512_atan2_16(__m512 a, __m512 b) {
  const __m512 zero = _mm512_setzero_ps(), inf = _mm512_set1_ps(INFINITY);
  const __m512 ay = _mm512_abs_ps(a), bx = _mm512_abs_ps(b);
  const __m512 mx = _mm512_max_ps(bx, ay), mn = _mm512_min_ps(bx, ay);
  const __mmask16 both_inf =
      _mm512_cmp_ps_mask(ay, inf, _CMP_EQ_OQ) & _mm512_cmp_ps_mask(bx, inf, _CMP_EQ_OQ);
  const __mmask16 big =
      _mm512_cmp_ps_mask(mn, _mm512_mul_ps(_mm512_set1_ps(0.41421356237309504880f), mx), _CMP_GT_OQ);
  __m512 z = _mm512_div_ps(_mm512_mask_sub_ps(mn, big, mn, mx), _mm512_mask_add_ps(mx, big, mn, mx));
  z = _mm512_mask_mov_ps(z, _mm512_cmp_ps_mask(mx, zero, _CMP_EQ_OQ) | both_inf, zero);
  const __m512 z2 = _mm512_mul_ps(z, z);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(8.05374449538e-2f), z2, _mm512_set1_ps(-1.38776856032e-1f));
  p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(1.99777106478e-1f));
  p = _mm512_fmadd_ps(p, z2, _mm512_set1_ps(-3.33329491539e-1f));
  __m512 r = _mm512_fmadd_ps(_mm512_mul_ps(p, z2), z, z);
  r = _mm512_mask_add_ps(r, big | both_inf, r, _mm512_set1_ps(0.78539816339744830962f));
  r = _mm512_mask_sub_ps(r, _mm512_cmp_ps_mask(ay, bx, _CMP_GT_OQ),
                         _mm512_set1_ps(1.57079632679489661923f), r);
  r = _mm512_mask_sub_ps(r, vm512_signbit(b), _mm512_set1_ps(3.14159265358979323846f), r);
  r = _mm512_mask_xor_ps(r, vm512_signbit(a), r, _mm512_set1_ps(-0.0f));
  return _mm512_mask_add_ps(r, _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q), a, b);
}

/* acosh(x) = ln(x + s), s = sqrt((x - 1)(x + 1)) in float32 (x - 1 exact; s within about an
 * ulp, and the result's error is s's: d acosh / ds = 1 / (x + s) <= 1 while acosh >= s / 2
 * near 1), x + s exact in float64 and its logarithm from vm512_log2_pd. s overflows beyond
 * 1.8e19: min(x, s) then gives ln(2x). x < 1 and NaN give NaN, +inf +inf (sqrt(x - 1)). */
VM512_KI __m512 vm512_acosh16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f), xm1 = _mm512_sub_ps(x, one);
  const __m512 s = _mm512_min_ps(x, _mm512_sqrt_ps(_mm512_mul_ps(xm1, _mm512_add_ps(x, one))));
  const __m512d ln2 = _mm512_set1_pd(0x1.62e42fefa39efp-1);
  const __m512d wl = _mm512_add_pd(vm512_lo_pd(x), vm512_lo_pd(s));
  const __m512d wh = _mm512_add_pd(vm512_hi_pd(x), vm512_hi_pd(s));
  const __m512 y = vm512_join_ps(_mm512_mul_pd(vm512_log2_pd(wl), ln2),
                                 _mm512_mul_pd(vm512_log2_pd(wh), ln2));
  const __mmask16 sp = _mm512_cmp_ps_mask(x, one, _CMP_NGE_UQ) |
                       _mm512_cmp_ps_mask(x, _mm512_set1_ps(INFINITY), _CMP_EQ_OQ);
  return sp ? _mm512_mask_sqrt_ps(y, sp, xm1) : y;
}

/* ---- float32 arithmetic with a double-float logarithm ----
 * The reductions above on 16 float32 lanes (vpermt2ps: 32-entry tables): log2 x as hi + lo
 * (relative error about 2^-35) and 2^(hi + lo), so b log2 a needs no float64 conversion.
 * x = 2^k z, z in [0x1.66p-1, 0x1.66p+0) (OFF 0x3f330000 as in glibc's logf), 32 intervals;
 * z invc = p + plo exactly (an FMA gives plo), r = p - 1 exact; log2 z = logc + log2(1 + r)
 * + plo / ((1 + r) ln 2). logc = hi + lo with hi on a 2^-15 grid, so that k + hi is exact;
 * invc = 1 in the interval holding 1 (log2 1 = 0 exactly). r / ln 2 is split with 1 / ln 2 in
 * two parts, the rest r^2 (c2 + ... c6 r^4) (truncation r^7 / 7, 2^-35 relative at |r| =
 * 0.0234). Products and sums whose rounding the next steps take apart go through the explicit
 * rounding forms (VM512_MULR, VM512_ADDR): GCC contracts a plain multiply and a following add
 * into an FMA, which would change p, r / ln 2's high part, and their errors. */
static const float vm512_invcf[32] = {
    0x1.6a13cep+0f, 0x1.623fa8p+0f, 0x1.5ac056p+0f, 0x1.539094p+0f,
    0x1.4cab88p+0f, 0x1.460cbcp+0f, 0x1.3fb014p+0f, 0x1.3991c2p+0f,
    0x1.33ae46p+0f, 0x1.2e025cp+0f, 0x1.288b02p+0f, 0x1.234568p+0f,
    0x1.1e2ef4p+0f, 0x1.194538p+0f, 0x1.1485fp+0f, 0x1.0fef02p+0f,
    0x1.0b7e6ep+0f, 0x1.07326p+0f, 0x1.03091cp+0f, 0x1p+0f,
    0x1.ecc07cp-1f, 0x1.de5d6ep-1f, 0x1.d0cb58p-1f, 0x1.c3f8fp-1f,
    0x1.b7d6c4p-1f, 0x1.ac5702p-1f, 0x1.a16d4p-1f, 0x1.970e5p-1f,
    0x1.8d3018p-1f, 0x1.83c978p-1f, 0x1.7ad22p-1f, 0x1.724288p-1f,
};
static const float vm512_logcf_hi[32] = {
    -0x1.0014p-1f, -0x1.dfep-2f, -0x1.c04p-2f, -0x1.a15p-2f,
    -0x1.8308p-2f, -0x1.655p-2f, -0x1.4838p-2f, -0x1.2ba8p-2f,
    -0x1.0fa8p-2f, -0x1.e85p-3f, -0x1.b26p-3f, -0x1.7d6p-3f,
    -0x1.495p-3f, -0x1.162p-3f, -0x1.c7cp-4f, -0x1.64cp-4f,
    -0x1.038p-4f, -0x1.47cp-5f, -0x1.168p-6f, 0.0f,
    0x1.c4cp-5f, 0x1.918p-4f, 0x1.1ddp-3f, 0x1.707p-3f,
    0x1.c0ep-3f, 0x1.079p-2f, 0x1.2dbp-2f, 0x1.52d8p-2f,
    0x1.772p-2f, 0x1.9a8p-2f, 0x1.bd1p-2f, 0x1.dedp-2f,
};
static const float vm512_logcf_lo[32] = {
    -0x1.a856ccp-20f, 0x1.39e928p-17f, -0x1.c157fep-17f, -0x1.7769acp-17f,
    0x1.9477e2p-17f, -0x1.592c3ap-17f, 0x1.a17f8ep-18f, -0x1.04527ap-17f,
    -0x1.25a854p-20f, -0x1.f4e94ep-17f, -0x1.67d482p-22f, -0x1.387538p-21f,
    0x1.dace7ap-21f, -0x1.64af06p-17f, 0x1.5d4148p-17f, -0x1.c76426p-17f,
    -0x1.f7bdccp-18f, 0x1.615a52p-17f, -0x1.12e14ep-17f, 0.0f,
    0x1.f9816cp-17f, 0x1.433ea6p-17f, -0x1.703484p-18f, 0x1.0b81e6p-17f,
    -0x1.25025p-17f, 0x1.5934f2p-19f, 0x1.0e5386p-18f, 0x1.eefb9p-17f,
    -0x1.68a39ep-17f, 0x1.1275c2p-21f, -0x1.9e6f1p-19f, 0x1.fe8afcp-17f,
};
static const float vm512_exp2f_hi[32] = {
    0x1p+0f, 0x1.059b0ep+0f, 0x1.0b5586p+0f, 0x1.11301ep+0f,
    0x1.172b84p+0f, 0x1.1d4874p+0f, 0x1.2387a6p+0f, 0x1.29e9ep+0f,
    0x1.306fep+0f, 0x1.371a74p+0f, 0x1.3dea64p+0f, 0x1.44e086p+0f,
    0x1.4bfdaep+0f, 0x1.5342b6p+0f, 0x1.5ab07ep+0f, 0x1.6247ecp+0f,
    0x1.6a09e6p+0f, 0x1.71f75ep+0f, 0x1.7a1148p+0f, 0x1.82589ap+0f,
    0x1.8ace54p+0f, 0x1.93737cp+0f, 0x1.9c4918p+0f, 0x1.a5503cp+0f,
    0x1.ae89fap+0f, 0x1.b7f77p+0f, 0x1.c199bep+0f, 0x1.cb720ep+0f,
    0x1.d5818ep+0f, 0x1.dfc974p+0f, 0x1.ea4afap+0f, 0x1.f50766p+0f,
};
static const float vm512_exp2f_lo[32] = {
    0.0f, -0x1.9d4f52p-25f, 0x1.9f3122p-25f, -0x1.fdb496p-25f,
    -0x1.c15742p-27f, -0x1.d2e8cap-25f, 0x1.ceac48p-25f, -0x1.5c0424p-25f,
    0x1.4636e2p-25f, -0x1.18aac6p-25f, 0x1.824684p-25f, 0x1.8624b4p-30f,
    -0x1.593abcp-25f, -0x1.2c561p-25f, -0x1.5bd5ecp-27f, -0x1.f8b55p-25f,
    0x1.9fcef4p-26f, 0x1.1d8beep-25f, -0x1.829fdp-25f, -0x1.accc7cp-26f,
    0x1.15506ep-27f, -0x1.e64744p-25f, 0x1.51f848p-27f, -0x1.b83b54p-25f,
    -0x1.a94b14p-26f, -0x1.a09438p-25f, -0x1.3d56b2p-27f, -0x1.8837ccp-27f,
    -0x1.822dbcp-27f, -0x1.908c94p-25f, 0x1.52486cp-27f, -0x1.246ebp-26f,
};
/* log2(1 + r) - r / ln 2 = r^2 (c2 + c3 r + ... + c6 r^4), c_k = (-1)^(k+1) / (k ln 2) */
static const float vm512_log2f_c[5] = {-0x1.715476p-1f, 0x1.ec709ep-2f, -0x1.715476p-2f,
                                       0x1.2776c6p-2f, -0x1.ec709ep-3f};
#define VM512_RN (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VM512_MULR(a, b) _mm512_mul_round_ps(a, b, VM512_RN)
#define VM512_ADDR(a, b) _mm512_add_round_ps(a, b, VM512_RN)
#define VM512_SUBR(a, b) _mm512_sub_round_ps(a, b, VM512_RN)
#define VM512_PERM32(t, idx) _mm512_permutex2var_ps(_mm512_loadu_ps(t), idx, _mm512_loadu_ps((t) + 16))

/* log2 x = hi + lo for positive normal finite x (other lanes: unspecified). */
/* The reduction shared by vm512_log2f_hl and vm512_lnf_hl: x = 2^k z, the table index of z,
 * and r + plo = z invc - 1 exactly. */
VM512_KI __m512 vm512_logf_reduce(__m512 x, __m512i *idx, __m512 *k, __m512 *plo) {
  const __m512i ix = _mm512_castps_si512(x);
  const __m512i tmp = _mm512_sub_epi32(ix, _mm512_set1_epi32(0x3f330000));
  const __m512i top = _mm512_and_si512(tmp, _mm512_set1_epi32((int)0xff800000u));
  const __m512 z = _mm512_castsi512_ps(_mm512_sub_epi32(ix, top));
  *idx = _mm512_srli_epi32(tmp, 18); /* vpermt2ps reads the low 5 bits */
  *k = _mm512_cvtepi32_ps(_mm512_srai_epi32(top, 23));
  const __m512 invc = VM512_PERM32(vm512_invcf, *idx);
  const __m512 p = VM512_MULR(z, invc);
  *plo = _mm512_fmsub_ps(z, invc, p);
  return VM512_SUBR(p, _mm512_set1_ps(1.0f));
}
VM512_KI __m512 vm512_log2f_hl(__m512 x, __m512 *lo) {
  const __m512 ih = _mm512_set1_ps(0x1.715476p+0f);
  __m512i idx;
  __m512 k, plo;
  const __m512 r = vm512_logf_reduce(x, &idx, &k, &plo);
  const __m512 rh = VM512_MULR(r, ih);
  const __m512 rl = _mm512_fmadd_ps(r, _mm512_set1_ps(0x1.4ae0cp-26f), _mm512_fmsub_ps(r, ih, rh));
  __m512 q = _mm512_set1_ps(vm512_log2f_c[4]);
  for (int j = 3; j >= 0; j--) q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(vm512_log2f_c[j]));
  __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(r, r), q, rl);
  small = _mm512_fmadd_ps(_mm512_fnmadd_ps(r, plo, plo), ih, small); /* plo (1 - r) / ln 2 */
  small = _mm512_add_ps(small, VM512_PERM32(vm512_logcf_lo, idx));
  const __m512 s = VM512_ADDR(k, VM512_PERM32(vm512_logcf_hi, idx)); /* exact */
  const __m512 hi = VM512_ADDR(s, rh), bb = VM512_SUBR(hi, s); /* TwoSum(s, rh) */
  const __m512 err = VM512_ADDR(VM512_SUBR(s, VM512_SUBR(hi, bb)), VM512_SUBR(rh, bb));
  *lo = _mm512_add_ps(err, small);
  return hi;
}

/* 2^(th + tl) for |th| <= 150, |tl| <= ulp(th): th = (kz + g) / 32 with kz = round(32 th)
 * (its low 5 bits from the 1.5 2^23 shifter select 2^(j/32) = Th + Tl), f = g / 32 + tl,
 * 2^f = 1 + f (e1 + f (e2 + f e3)) (2^-30.7 relative at |f| = 1/64), vscalefps by
 * 2^floor(kz / 32) (gradual underflow, overflow to inf). */
VM512_KI __m512 vm512_exp2f_hl(__m512 th, __m512 tl) {
  const __m512 shift = _mm512_set1_ps(0x1.8p23f), n32 = _mm512_set1_ps(32.0f);
  const __m512 zs = _mm512_fmadd_ps(th, n32, shift);
  const __m512 kz = VM512_SUBR(zs, shift);
  const __m512 g = _mm512_fmsub_ps(th, n32, kz); /* exact */
  const __m512 f = _mm512_fmadd_ps(g, _mm512_set1_ps(0x1p-5f), tl);
  __m512 q = _mm512_fmadd_ps(_mm512_set1_ps(0x1.c6b08ep-5f), f, _mm512_set1_ps(0x1.ebfbep-3f));
  q = _mm512_fmadd_ps(q, f, _mm512_set1_ps(0x1.62e43p-1f));
  const __m512i j = _mm512_castps_si512(zs);
  const __m512 t_hi = VM512_PERM32(vm512_exp2f_hi, j), t_lo = VM512_PERM32(vm512_exp2f_lo, j);
  const __m512 y = _mm512_add_ps(t_hi, _mm512_fmadd_ps(t_hi, _mm512_mul_ps(f, q), t_lo));
  return _mm512_scalef_ps(y, _mm512_mul_ps(kz, _mm512_set1_ps(0x1p-5f)));
}

/* a^b from log2|a| = lhi + llo: float32 all the way for finite normal a (either sign), finite
 * b and |b log2 a| <= 150; otherwise (zeros, subnormal, infinite or NaN operands, results
 * that saturate) the whole vector takes the float64 path, vm512_pow16_full. */
VM512_KI __m512 vm512_powf16_l(__m512 a, __m512 b, __m512 lhi, __m512 llo) {
  const __m512 th = VM512_MULR(b, lhi);
  const __m512 tl = _mm512_fmadd_ps(b, llo, _mm512_fmsub_ps(b, lhi, th));
  const __mmask16 slow =
      _mm512_fpclass_ps_mask(a, 0xBF) | _mm512_fpclass_ps_mask(b, 0x99) |
      _mm512_cmp_ps_mask(_mm512_abs_ps(th), _mm512_set1_ps(150.0f), _CMP_NLE_UQ);
  if (slow) return vm512_pow16_full(a, b);
  const __m512 e = vm512_exp2f_hl(th, tl);
  return vm512_signbit(a) ? vm512_pow_fix16(e, a, b) : e;
}
VM512_KI __m512 vm512_powf16(__m512 a, __m512 b) {
  __m512 llo;
  const __m512 lhi = vm512_log2f_hl(_mm512_abs_ps(a), &llo);
  return vm512_powf16_l(a, b, lhi, llo);
}

/* ln(wh + wl) for wh >= 1 (normal, finite) and |wl| <= ulp(wh), to float32 accuracy (about
 * 0.6 ulp): vm512_log2f_hl's reduction with natural-log tables (ln c = hi + lo, hi on a
 * 2^-16 grid so that k ln2_hi + hi, with ln 2's first 16 bits, is exact), ln(1 + r) = r + r^2
 * (c2 + c3 r + c4 r^2 + c5 r^3) (2^-29.6 relative at |r| = 0.0234), and the first-order terms
 * of plo and wl; no double-float sum (the result only needs float32's precision). */
static const float vm512_lncf_hi[32] = {
    -0x1.63p-2f, -0x1.4cap-2f, -0x1.36b8p-2f, -0x1.2144p-2f,
    -0x1.0c44p-2f, -0x1.ef58p-3f, -0x1.c7p-3f, -0x1.9f7p-3f,
    -0x1.7898p-3f, -0x1.528p-3f, -0x1.2d18p-3f, -0x1.0858p-3f,
    -0x1.c88p-4f, -0x1.819p-4f, -0x1.3bep-4f, -0x1.eeap-5f,
    -0x1.67cp-5f, -0x1.c64p-6f, -0x1.828p-7f, 0.0f,
    0x1.39ep-5f, 0x1.165p-4f, 0x1.8c3p-4f, 0x1.fedp-4f,
    0x1.372p-3f, 0x1.6d6p-3f, 0x1.a238p-3f, 0x1.d5cp-3f,
    0x1.0404p-2f, 0x1.1c88p-2f, 0x1.347cp-2f, 0x1.4be4p-2f,
};
static const float vm512_lncf_lo[32] = {
    -0x1.9a5d56p-21f, 0x1.f47e8ep-18f, 0x1.8a9c1ep-18f, -0x1.5483aep-20f,
    0x1.2ae9eap-18f, -0x1.6d96e8p-18f, 0x1.0dc3fcp-21f, 0x1.e23fbcp-18f,
    -0x1.b4888ap-20f, 0x1.a1d5e4p-19f, 0x1.e96798p-19f, -0x1.8e99e4p-19f,
    -0x1.6116f2p-18f, -0x1.f89d04p-18f, 0x1.6505c2p-21f, -0x1.9c2036p-20f,
    -0x1.26fdaap-18f, 0x1.7c9f5ap-21f, 0x1.d8fe3cp-18f, 0.0f,
    0x1.0dc3fep-18f, 0x1.b8851cp-19f, 0x1.1978c6p-18f, -0x1.baf89p-18f,
    -0x1.f4f0b8p-22f, 0x1.f9c33ap-20f, 0x1.dfff16p-18f, 0x1.0a1a7ep-18f,
    -0x1.a494b2p-18f, 0x1.8b369ap-18f, 0x1.db2988p-18f, 0x1.f93778p-18f,
};
VM512_KI __m512 vm512_lnf_hl(__m512 wh, __m512 wl) {
  __m512i idx;
  __m512 k, plo;
  const __m512 r = vm512_logf_reduce(wh, &idx, &k, &plo);
  const __m512 hi = _mm512_fmadd_ps(k, _mm512_set1_ps(0x1.62e4p-1f), VM512_PERM32(vm512_lncf_hi, idx));
  __m512 q = _mm512_fmadd_ps(_mm512_set1_ps(0x1.99999ap-3f), r, _mm512_set1_ps(-0.25f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(0x1.555556p-2f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(-0.5f));
  __m512 small = _mm512_fmadd_ps(k, _mm512_set1_ps(0x1.7f7d1cp-20f), VM512_PERM32(vm512_lncf_lo, idx));
  small = _mm512_add_ps(small, _mm512_fnmadd_ps(r, plo, plo)); /* plo / (1 + r) */
  small = _mm512_fmadd_ps(wl, _mm512_rcp14_ps(wh), small);      /* wl / wh */
  small = _mm512_fmadd_ps(_mm512_mul_ps(r, r), q, small);
  return _mm512_add_ps(hi, _mm512_add_ps(r, small));
}

/* acosh, float32 path for 1 <= x <= 2^60: s = sqrt(x^2 - 1) (x^2 - 1 rounded once by an FMA)
 * plus its first-order correction (v - s^2) / 2s, x + s = wh + wl (Fast2Sum, s <= x), and
 * vm512_lnf_hl. Other vectors: vm512_acosh16 (float64). */
VM512_KI __m512 vm512_acoshf16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __mmask16 fast = _mm512_cmp_ps_mask(x, one, _CMP_GE_OQ) &
                         _mm512_cmp_ps_mask(x, _mm512_set1_ps(0x1p60f), _CMP_LE_OQ);
  if (__builtin_expect(fast != 0xFFFF, 0)) return vm512_acosh16(x);
  const __m512 xm1 = _mm512_sub_ps(x, one), v = _mm512_fmadd_ps(xm1, x, xm1);
  const __m512 s = _mm512_min_ps(x, _mm512_sqrt_ps(v));
  const __m512 rs = _mm512_min_ps(_mm512_rcp14_ps(s), _mm512_set1_ps(0x1p30f)); /* s = 0: 0 */
  const __m512 slo = _mm512_mul_ps(_mm512_fnmadd_ps(s, s, v), _mm512_mul_ps(rs, _mm512_set1_ps(0.5f)));
  const __m512 wh = VM512_ADDR(x, s), wl = _mm512_add_ps(VM512_SUBR(s, VM512_SUBR(wh, x)), slo);
  return vm512_lnf_hl(wh, wl);
}

/* ---- loops ---- */
/* Mask of the first n - i lanes (at most 16). */
VM512_KI __mmask16 vm512_tail(int64_t n, int64_t i) {
  return n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
}
/* y = F(x) over n elements: two vectors per step, a masked tail. */
#define VM512_UNARY_LOOP(F)                                                                   \
  do {                                                                                        \
    int64_t i = 0;                                                                            \
    for (; i + 32 <= n; i += 32) {                                                            \
      const __m512 u = F(_mm512_loadu_ps(x + i)), v = F(_mm512_loadu_ps(x + i + 16));         \
      _mm512_storeu_ps(y + i, u);                                                             \
      _mm512_storeu_ps(y + i + 16, v);                                                        \
    }                                                                                         \
    for (; i < n; i += 16) {                                                                  \
      const __mmask16 m = vm512_tail(n, i);                                                   \
      _mm512_mask_storeu_ps(y + i, m, F(_mm512_maskz_loadu_ps(m, x + i)));                    \
    }                                                                                         \
  } while (0)
VM512_T __attribute__((unused)) static void vm512_acosh_f32(const float *restrict x,
                                                            float *restrict y, int64_t n) {
  VM512_UNARY_LOOP(vm512_acoshf16);
}

/* Rounding to integers by vroundscaleps alone (the generic rint-based forms take 3-6 operations
 * per element: GCC expands floor, ceil and trunc to it only without -ftrapping-math). mode:
 * VM512_RINT, VM512_FLOOR, VM512_CEIL, VM512_TRUNC (roundscale's immediate, inexact
 * suppressed); an immediate per loop. */
#define VM512_RINT (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
#define VM512_FLOOR (_MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC)
#define VM512_CEIL (_MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC)
#define VM512_TRUNC (_MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC)
#define VM512_RS_RINT(v) _mm512_roundscale_ps(v, VM512_RINT)
#define VM512_RS_FLOOR(v) _mm512_roundscale_ps(v, VM512_FLOOR)
#define VM512_RS_CEIL(v) _mm512_roundscale_ps(v, VM512_CEIL)
#define VM512_RS_TRUNC(v) _mm512_roundscale_ps(v, VM512_TRUNC)
VM512_T __attribute__((unused)) static void vm512_round_f32(const float *restrict x,
                                                            float *restrict y, int64_t n,
                                                            int mode) {
  switch (mode) {
  case VM512_RINT: VM512_UNARY_LOOP(VM512_RS_RINT); break;
  case VM512_FLOOR: VM512_UNARY_LOOP(VM512_RS_FLOOR); break;
  case VM512_CEIL: VM512_UNARY_LOOP(VM512_RS_CEIL); break;
  default: VM512_UNARY_LOOP(VM512_RS_TRUNC); break;
  }
}

/* Operand k of a row whose stride s is 1 or 0 (broadcast: R, a register). */
#define VM512_LD(p, s, R, k) ((s) ? _mm512_loadu_ps((p) + (k)) : (R))
#define VM512_LDM(m, p, s, R, k) ((s) ? _mm512_maskz_loadu_ps(m, (p) + (k)) : (R))
/* y[k] = F(a[k], b[k]) over a row of n with strides sa, sb (compile-time after inlining). */
#define VM512_BINARY_ROW(F)                                                                   \
  do {                                                                                        \
    if (n <= 0) break;                                                                        \
    const __m512 ra = _mm512_set1_ps(a[0]), rb = _mm512_set1_ps(b[0]);                        \
    int64_t k = 0;                                                                            \
    for (; k + 32 <= n; k += 32) {                                                            \
      const __m512 u = F(VM512_LD(a, sa, ra, k), VM512_LD(b, sb, rb, k));                     \
      const __m512 v = F(VM512_LD(a, sa, ra, k + 16), VM512_LD(b, sb, rb, k + 16));           \
      _mm512_storeu_ps(y + k, u);                                                             \
      _mm512_storeu_ps(y + k + 16, v);                                                        \
    }                                                                                         \
    for (; k < n; k += 16) {                                                                  \
      const __mmask16 m = vm512_tail(n, k);                                                   \
      _mm512_mask_storeu_ps(y + k, m, F(VM512_LDM(m, a, sa, ra, k), VM512_LDM(m, b, sb, rb, k))); \
    }                                                                                         \
  } while (0)
VM512_KI void vm512_atan2_row(float *restrict y, const float *restrict a,
                              const float *restrict b, int64_t n, const int sa, const int sb) {
  VM512_BINARY_ROW(vm512_atan2_16);
}
/* pow: a broadcast base (sa == 0) takes its logarithm once per row. */
VM512_KI void vm512_pow_row(float *restrict y, const float *restrict a, const float *restrict b,
                            int64_t n, const int sa, const int sb) {
  if (sa) {
    VM512_BINARY_ROW(vm512_powf16);
    return;
  }
  __m512 llo;
  const __m512 lhi = vm512_log2f_hl(_mm512_abs_ps(_mm512_set1_ps(a[0])), &llo);
#define VM512_POW_L(u, v) vm512_powf16_l(u, v, lhi, llo)
  VM512_BINARY_ROW(VM512_POW_L);
#undef VM512_POW_L
}
/* Block kernels (bc_kernel's operands 0 y, 1 a, 2 b): one loop per stride pattern. */
#define VM512_ROWS(ROW, SA, SB)                                                               \
  for (int64_t r = 0; r < rows; r++)                                                          \
  ROW((float *)p[0] + r * os[0], (const float *)p[1] + r * os[1],                             \
      (const float *)p[2] + r * os[2], n, SA, SB)
#define VM512_BINARY_KERNEL(NAME, ROW)                                                        \
  VM512_T __attribute__((unused)) static void NAME(void *const *p, const int64_t *s,          \
                                                   const int64_t *os, int64_t rows, int64_t n) { \
    if (s[1] && s[2]) VM512_ROWS(ROW, 1, 1);                                                  \
    else if (s[1]) VM512_ROWS(ROW, 1, 0);                                                     \
    else if (s[2]) VM512_ROWS(ROW, 0, 1);                                                     \
    else VM512_ROWS(ROW, 0, 0);                                                               \
  }
VM512_BINARY_KERNEL(vm512_atan2_rows, vm512_atan2_row)
VM512_BINARY_KERNEL(vm512_pow_rows, vm512_pow_row)

#else /* not x86: the generic loops only */
#define VM512_OK() 0
#define VM512_RINT 0
#define VM512_FLOOR 1
#define VM512_CEIL 2
#define VM512_TRUNC 3
static inline void vm512_round_f32(const float *restrict x, float *restrict y, int64_t n,
                                   int mode) {
  (void)x, (void)y, (void)n, (void)mode;
}
static inline void vm512_acosh_f32(const float *restrict x, float *restrict y, int64_t n) {
  (void)x, (void)y, (void)n;
}
static inline void vm512_atan2_rows(void *const *p, const int64_t *s, const int64_t *os,
                                    int64_t rows, int64_t n) {
  (void)p, (void)s, (void)os, (void)rows, (void)n;
}
static inline void vm512_pow_rows(void *const *p, const int64_t *s, const int64_t *os,
                                  int64_t rows, int64_t n) {
  (void)p, (void)s, (void)os, (void)rows, (void)n;
}
#endif

#endif
