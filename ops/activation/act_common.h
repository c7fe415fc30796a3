/* act_common.h: shared by the activation family (ops/activation) and the fused activation
 * operators (ops/fused/act_fused.c): elementwise maps with float params (AM_MAP: leaky_relu,
 * elu, softplus, hard_sigmoid), the GELU formulas, and a deterministic blocked column-sum
 * driver for the gradients of per-channel parameters (prelu's alpha, bias_gelu's bias). */
#ifndef OPPERF_ACT_COMMON_H
#define OPPERF_ACT_COMMON_H

#include <math.h>

#include "unary/unary_map.h"
#include "unary/vlibm.h"
#ifdef OPF_X86
#include <immintrin.h>
#endif

/* ---- GELU ----
 * gelu(x) = x cdf(x), gelu'(x) = cdf(x) + x pdf(x), with the normal cdf(x) = 0.5 erfc(-z),
 * z = x / sqrt 2, and pdf(x) = exp(-z^2) / sqrt(2 pi). erfc keeps full relative precision
 * for x << 0, where 1 + erf(z) cancels.
 * float32: erfc(|z|) = exp(-z^2) t S(t), t = 1 / (1 + 0.45 |z|), S a degree-9 polynomial
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
  return cdf + x * (float)(0.5 * M_2_SQRTPI * M_SQRT1_2) * e;
}
VM_INLINE double act_gelu_d(double x) { return x * 0.5 * act_erfcd(-x * M_SQRT1_2); }
VM_INLINE double act_gelu_grad_d(double x) {
  return 0.5 * act_erfcd(-x * M_SQRT1_2) +
         x * (0.5 * M_2_SQRTPI * M_SQRT1_2) * vm_exp(-0.5 * x * x);
}
#define ACT_GELU(x) _Generic((x), float: act_gelu_f, double: act_gelu_d)(x)
#define ACT_GELU_GRAD(x) _Generic((x), float: act_gelu_grad_f, double: act_gelu_grad_d)(x)
static inline double act_gelu_ref(double x) { return 0.5 * x * erfc(-x * M_SQRT1_2); }

/* GELU forward, float32, AVX-512: the formula of act_gelu_cdf_f with the division
 * 1 / (1 + 0.45 |z|) as a reciprocal estimate (vrcp14ps) and one Newton step, the 1/2 folded
 * into the polynomial (exact), and exp(-z^2) scaled by 2^n with vscalefps (exact, subnormals
 * included) instead of two multiplies by built powers of two; |z| is clamped at 11, past which
 * exp(-z^2) underflows to 0 anyway (and the Newton step would see inf * 0). About 45 vector
 * operations per 16 elements against 60, most of them on the two FMA pipes: x=1024x1024
 * 400 -> 340 us, (100000,10) 386 -> 320 us at 1 thread (load 11). Same accuracy: the
 * estimate after one step is within an ulp of the quotient (test_gelu_accuracy).
 * y[i] = gelu(x[i] + b[i]), b NULL for none. */
#ifdef OPF_X86
__attribute__((target("avx512f"))) static inline __m512 act_gelu16_avx512(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  __m512 z = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps((float)M_SQRT1_2));
  z = _mm512_min_ps(z, _mm512_set1_ps(11.0f));
  const __m512 d = _mm512_fmadd_ps(_mm512_set1_ps(0.45f), z, one);
  __m512 t = _mm512_rcp14_ps(d);
  t = _mm512_mul_ps(t, _mm512_fnmadd_ps(d, t, _mm512_set1_ps(2.0f)));
  __m512 p = _mm512_set1_ps(-0.0430253624303f * 0.5f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.197983647862f * 0.5f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.314170764386f * 0.5f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.15606879608f * 0.5f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.0303837571398f * 0.5f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.122723846145f * 0.5f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.174712777978f * 0.5f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.228324267269f * 0.5f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.253881184437f * 0.5f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.253885332978f * 0.5f));
  /* exp(a), a = -z^2 in [-121, 0]: vm_expf's reduction and polynomial */
  const __m512 a = _mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), z), z);
  const __m512 fn = _mm512_roundscale_ps(_mm512_mul_ps(a, _mm512_set1_ps(1.44269504088896341f)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(0.693359375f), a);
  r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 q = _mm512_set1_ps(1.9875691500e-4f);
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.3981999507e-3f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(8.3334519073e-3f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(4.1665795894e-2f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(1.6666665459e-1f));
  q = _mm512_fmadd_ps(q, r, _mm512_set1_ps(5.0000001201e-1f));
  q = _mm512_add_ps(_mm512_fmadd_ps(q, _mm512_mul_ps(r, r), r), one);
  const __m512 e = _mm512_scalef_ps(q, fn);
  const __m512 h = _mm512_mul_ps(_mm512_mul_ps(e, t), p); /* erfc(|z|) / 2 */
  const __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  return _mm512_mul_ps(x, _mm512_mask_blend_ps(neg, _mm512_sub_ps(one, h), h));
}
__attribute__((target("avx512f"), unused)) static void act_gelu_f32_avx512(
    const float *restrict x, const float *restrict b, float *restrict y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i);
    if (b) v = _mm512_add_ps(v, _mm512_loadu_ps(b + i));
    _mm512_storeu_ps(y + i, act_gelu16_avx512(v));
  }
  if (i < n) {
    const __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
    __m512 v = _mm512_maskz_loadu_ps(m, x + i);
    if (b) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, b + i));
    _mm512_mask_storeu_ps(y + i, m, act_gelu16_avx512(v));
  }
}
#define ACT_GELU_AVX512() __builtin_cpu_supports("avx512f")
#else
#define ACT_GELU_AVX512() 0
static inline void act_gelu_f32_avx512(const float *restrict x, const float *restrict b,
                                       float *restrict y, int64_t n) {
  (void)x, (void)b, (void)y, (void)n;
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
