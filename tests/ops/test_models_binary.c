/* test_models_binary.c: what the generic operator driver cannot see for the binary (mod, pow,
 * maximum, minimum, hypot, atan2), in-place (iadd ... imod) and logic (comparisons, logical_*,
 * isnan/isinf/isfinite) operators: golden flops/bytes models, the error paths of bad shapes
 * and dtypes, special values and exact-fallback paths of the vectorised element functions,
 * threaded gradient reductions above the parallel threshold, and in-place stability. */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "binary/binop.h" /* bo_ref_offset: an output index mapped into a broadcast input */
#include "test_support.h"

/* ---- golden models ---- */
/* flops and bytes of pass p at spec must equal the hand-derived values (fwd, bwd; both is
 * their sum). Forward-only operators pass bwd flops 0 and their bwd bytes are not checked. */
static void check_model(const char *name, opf_dtype dt, const char *spec, double ffwd,
                        double fbwd, double bfwd, double bbwd) {
  const opf_op *op = ts_op(name);
  opf_case c;
  opf_err e;
  if (opf_case_init(&c, op, dt, spec, &e)) fail_msg("%s [%s]: %s", name, spec, e.msg);
  double f[OPF_NPASSES], b[OPF_NPASSES];
  for (int p = 0; p < OPF_NPASSES; p++)
    f[p] = op->flops(&c, (opf_pass)p), b[p] = op->bytes(&c, (opf_pass)p);
  const int fwd_only = !op->backward;
  if (f[0] != ffwd || f[1] != fbwd || f[2] != ffwd + fbwd || b[0] != bfwd ||
      (!fwd_only && (b[1] != bbwd || b[2] != bfwd + bbwd)))
    fail_msg("%s [%s]: flops %.0f/%.0f/%.0f bytes %.0f/%.0f/%.0f, want %.0f/%.0f and %.0f/%.0f",
             name, spec, f[0], f[1], f[2], b[0], b[1], b[2], ffwd, fbwd, bfwd, bbwd);
}

static void test_models(void **state) {
  (void)state;
  const double N = 1048576; /* 1024 x 1024 */
  /* mod, column broadcast, float32: fwd one remainder per output. bwd: da = g (0 ops, no
   * reduction); db = -g floor(a/b), 3 ops per output, summed over 1024 columns into 1024:
   * 3N + (N - 1024). Bytes fwd a + b + y = (2N + 1024) 4; bwd g + da + db and (db's term
   * reads them) a + b: (N + N + 1024 + N + 1024) 4. */
  check_model("mod", OPF_F32, "a=1024x1024 b=1024x1", N, 4 * N - 1024, (2 * N + 1024) * 4,
              (3 * N + 2048) * 4);
  /* pow, same shape, float64: fwd N powers; bwd 3 + 3 ops per element, nothing to reduce;
   * bytes fwd 3N, bwd g, a, b and the forward output y read, da, db written: 6N doubles. */
  check_model("pow", OPF_F64, "a=1024x1024 b=1024x1024", N, 6 * N, 3 * N * 8, 6 * N * 8);
  /* maximum, row broadcast: fwd N selects; bwd da N selects, db N selects + N - 1024 adds. */
  check_model("maximum", OPF_F32, "a=1024x1024 b=1x1024", N, 3 * N - 1024, (2 * N + 1024) * 4,
              (3 * N + 2048) * 4);
  /* minimum with a scalar: db sums all N terms into one (N - 1 adds). */
  check_model("minimum", OPF_F32, "a=1024x1024 b=()", N, 3 * N - 1, (2 * N + 1) * 4,
              (3 * N + 2) * 4);
  /* hypot: 2 squares, an add and a sqrt forward (4N); each term a multiply and a divide by
   * y, which backward reads with g, a and b (6N floats with da, db). */
  check_model("hypot", OPF_F32, "a=1024x1024 b=1024x1024", 4 * N, 4 * N, 3 * N * 4, 6 * N * 4);
  /* atan2, both broadcast (10000x1, 1x100 -> 1e6): fwd 1e6; bwd 5 ops per output and term,
   * sums into 1e4 and 100: 10e6 + (1e6 - 1e4) + (1e6 - 100). Bytes fwd (1e4 + 100 + 1e6) 8;
   * bwd g (1e6) + da, db written + a, b read: (1e6 + 2 (1e4 + 100)) 8. */
  check_model("atan2", OPF_F64, "a=10000x1 b=1x100", 1e6, 12e6 - 10100, (1e6 + 10100) * 8,
              (1e6 + 20200) * 8);
  /* In place: one operation per element of a; a read and written, b read. */
  check_model("iadd", OPF_F32, "a=1024x1024 b=1x1024", N, 0, (2 * N + 1024) * 4, 0);
  check_model("isub", OPF_I32, "a=1024x1024 b=1024x1024", N, 0, 3 * N * 4, 0);
  check_model("imul", OPF_F64, "a=1024x1024 b=1024x1", N, 0, (2 * N + 1024) * 8, 0);
  check_model("idiv", OPF_I64, "a=1024x1024 b=()", N, 0, (2 * N + 1) * 8, 0);
  check_model("imod", OPF_F32, "a=1024x1024 b=1024x1024", N, 0, 3 * N * 4, 0);
  /* Logic: one operation per output; inputs read at their width, one byte written. */
  check_model("equal", OPF_F32, "a=1024x1024 b=1024x1024", N, 0, 2 * N * 4 + N, 0);
  check_model("less", OPF_I64, "a=1024x1024 b=()", N, 0, N * 8 + 8 + N, 0);
  check_model("greater_equal", OPF_I32, "a=1024x1024 b=1x1024", N, 0, (N + 1024) * 4 + N, 0);
  check_model("logical_xor", OPF_BOOL, "a=1024x1024 b=1024x1024", N, 0, 3 * N, 0);
  check_model("logical_not", OPF_F64, "x=1024x1024", N, 0, N * 8 + N, 0);
  check_model("isnan", OPF_F32, "x=1024x1024", N, 0, N * 4 + N, 0);
}

/* ---- error paths ---- */
static void check_rejected(const char *name, opf_dtype dt, const char *spec, int code,
                           const char *want) {
  opf_case c;
  opf_err e;
  int rc = opf_case_init(&c, ts_op(name), dt, spec, &e);
  if (rc != code || !strstr(e.msg, want))
    fail_msg("%s %s [%s]: returned %d (%s), want %d mentioning '%s'", name,
             opf_dtype_name(dt), spec, rc, e.msg, code, want);
}

static void test_errors(void **state) {
  (void)state;
  static const char *const binary[] = {"mod",     "pow",   "maximum", "minimum", "hypot",
                                       "atan2",   "equal", "less",    "logical_and",
                                       "logical_or", NULL};
  for (const char *const *n = binary; *n; n++) {
    ts_expect_einval(*n, "a=1024x1024 b=1023x1024", "1024x1024 and 1023x1024");
    ts_expect_einval(*n, "a=2x3x4 b=3x1x5", "cannot be broadcast");
    ts_expect_einval(*n, "a=16x16", "'b' needs a shape");
  }
  /* In place: b may broadcast into a, never enlarge it (nor be incompatible). */
  static const char *const inplace[] = {"iadd", "isub", "imul", "idiv", "imod", NULL};
  for (const char *const *n = inplace; *n; n++) {
    ts_expect_einval(*n, "a=1x1024 b=1024x1024", "must broadcast to a's shape");
    ts_expect_einval(*n, "a=1024 b=3x1024", "must broadcast to a's shape");
    ts_expect_einval(*n, "a=10000x1 b=1x100", "'b' 1x100 must broadcast");
    ts_expect_einval(*n, "a=16x16 b=15", "cannot be broadcast");
    ts_expect_einval(*n, "b=16", "'a' needs a shape");
  }
  ts_expect_einval("isnan", "", "'x' needs a shape");
  check_rejected("hypot", OPF_I32, "a=4 b=4", OPF_EUNSUPPORTED, "does not support dtype");
  check_rejected("atan2", OPF_I64, "a=4 b=4", OPF_EUNSUPPORTED, "does not support dtype");
  check_rejected("isnan", OPF_BOOL, "x=4", OPF_EUNSUPPORTED, "does not support dtype");
  check_rejected("mod", OPF_BOOL, "a=4 b=4", OPF_EUNSUPPORTED, "does not support dtype");
  check_rejected("logical_not", OPF_F32, "y=16", OPF_ENOTFOUND, "no input or param 'y'");
  /* bool is a case dtype of the logical operators and comparisons */
  opf_case c;
  opf_err e;
  if (opf_case_init(&c, ts_op("logical_and"), OPF_BOOL, "a=4x4 b=4", &e)) fail_msg("%s", e.msg);
  assert_int_equal(c.out[0].dtype, OPF_BOOL);
  if (opf_case_init(&c, ts_op("less"), OPF_BOOL, "a=4x4 b=()", &e)) fail_msg("%s", e.msg);
  assert_int_equal(c.out[0].dtype, OPF_BOOL);
}

/* ---- special values: run forward on given inputs and compare with C / NumPy ---- */
/* A case of op over n pairs (a[i], b[i]) in dtype dt, run forward; the caller reads c->out. */
static void run_pairs(opf_case *c, const char *name, opf_dtype dt, const double *a,
                      const double *b, int n) {
  char spec[64];
  snprintf(spec, sizeof spec, "a=%d b=%d", n, n);
  ts_case_ready(c, ts_op(name), dt, spec, 0, 1);
  for (int i = 0; i < n; i++) ts_set(&c->in[0], i, a[i]), ts_set(&c->in[1], i, b[i]);
  if (c->op->forward(c)) fail_msg("%s: %s", name, c->err.msg);
}

/* got equals want (NaN matches NaN; zeros must agree in sign) within rtol. */
static int same(double got, double want, double rtol) {
  if (isnan(want)) return isnan(got);
  if (want == 0) return got == 0 && signbit(got) == signbit(want);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= rtol * fabs(want);
}

static const double specials[] = {0.0, -0.0, 1.0,  -1.0,     0.5,       -2.0,   3.0,
                                  -3.0, 7.5, 1e-40, 1e-310,  1e30,      -1e30,  INFINITY,
                                  -INFINITY, NAN, 2.5e-39, 1e300, -1e-300, 4.0};
#define NSPEC ((int)(sizeof specials / sizeof *specials))

/* Every ordered pair of specials through op (float32 and float64) against ref in float64 on
 * the inputs as rounded to the dtype; rtol per dtype. */
static void check_special_pairs(const char *name, double (*ref)(double, double), double rtol32,
                                double rtol64) {
  double a[NSPEC * NSPEC], b[NSPEC * NSPEC];
  for (int i = 0; i < NSPEC; i++)
    for (int j = 0; j < NSPEC; j++) a[i * NSPEC + j] = specials[i], b[i * NSPEC + j] = specials[j];
  for (int d = OPF_F32; d <= OPF_F64; d++) {
    opf_case c;
    run_pairs(&c, name, (opf_dtype)d, a, b, NSPEC * NSPEC);
    for (int k = 0; k < NSPEC * NSPEC; k++) {
      double x = ts_get(&c.in[0], k), y = ts_get(&c.in[1], k), got = ts_get(&c.out[0], k);
      double want = d == OPF_F32 ? (double)(float)ref(x, y) : ref(x, y);
      /* float32 results in the subnormal range carry fewer bits */
      int ok = same(got, want, d == OPF_F32 ? rtol32 : rtol64) ||
               (d == OPF_F32 && fabs(want) < FLT_MIN && fabs(got - want) <= 2e-45);
      if (!ok)
        fail_msg("%s %s(%.9g, %.9g) = %.17g, want %.17g", name, opf_dtype_name((opf_dtype)d), x,
                 y, got, want);
    }
    opf_case_release(&c);
  }
}

/* NumPy's remainder: fmod moved into b's sign, zero takes b's sign. */
static double py_mod(double a, double b) {
  double m = fmod(a, b);
  if (m == 0) return copysign(0.0, b);
  return (m < 0) != (b < 0) ? m + b : m;
}
static double np_maximum(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static double np_minimum(double a, double b) { return isnan(a) || isnan(b) ? NAN : a < b ? a : b; }

static void test_special_values(void **state) {
  (void)state;
  check_special_pairs("mod", py_mod, 0, 0); /* exact */
  /* pow: exp(b log a) loses |b log a| ulp for results far from 1 (1e300^4 overflows either
   * way); 1e-4 and 1e-12 cover the specials' range of |b log a| < 700 */
  check_special_pairs("pow", pow, 1e-5, 1e-12);
  check_special_pairs("hypot", hypot, 2.5e-7, 3e-16);
  check_special_pairs("atan2", atan2, 2.5e-7, 5e-16);
  check_special_pairs("maximum", np_maximum, 0, 0);
  check_special_pairs("minimum", np_minimum, 0, 0);
}

/* ---- float32 accuracy over dense grids (pow, atan2) ----
 * Distance of got from want (the float64 reference rounded to float32) in float32 ulps of
 * want (subnormal: 2^-149); NaN matches NaN, infinities and zeros must match exactly (zeros
 * with their sign); any other mismatch is huge. */
static double ulps32(double got, double want) {
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got) ? 0 : 1e30;
  if (isinf(want) || isinf(got)) return got == want ? 0 : 1e30;
  if (want == 0 && got == 0) return signbit(got) == signbit(want) ? 0 : 1e30;
  return fabs(got - want) / (fabs(want) < FLT_MIN ? 0x1p-149 : ldexp(1, ilogb(want) - 23));
}
/* op over every pair of na bases and nb exponents, float32, both ways round: a as a column
 * (na x 1 by 1 x nb: a broadcast along rows) and as a row (1 x na by nb x 1: b broadcast),
 * so both stride patterns and the masked row tails run. Each result must be within
 * bound(a, b) ulps of (float)ref(a, b); returns the worst ratio error / bound. */
static double check_grid(const char *name, double (*ref)(double, double), const float *a,
                         int na, const float *b, int nb, double (*bound)(double, double)) {
  double worst = 0;
  for (int way = 0; way < 2; way++) {
    char spec[96];
    if (way == 0) snprintf(spec, sizeof spec, "a=%dx1 b=1x%d", na, nb);
    else snprintf(spec, sizeof spec, "a=1x%d b=%dx1", na, nb);
    opf_case c;
    ts_case_ready(&c, ts_op(name), OPF_F32, spec, 0, 1);
    for (int i = 0; i < na; i++) ts_set(&c.in[0], i, a[i]);
    for (int j = 0; j < nb; j++) ts_set(&c.in[1], j, b[j]);
    if (c.op->forward(&c)) fail_msg("%s: %s", name, c.err.msg);
    for (int i = 0; i < na; i++)
      for (int j = 0; j < nb; j++) {
        const double x = a[i], y = b[j];
        const double got = ts_get(&c.out[0], way == 0 ? (int64_t)i * nb + j : (int64_t)j * na + i);
        const double want = (double)(float)ref(x, y), e = ulps32(got, want) / bound(x, y);
        if (e > 1)
          fail_msg("%s float32 (%s): %s(%.9g, %.9g) = %.9g, want %.9g (%.3g ulp, bound %.3g)", name,
                   spec, name, x, y, got, want, ulps32(got, want), bound(x, y));
        if (e > worst) worst = e;
      }
    opf_case_release(&c);
  }
  return worst;
}
/* pow: within one ulp of the rounded result on both paths: AVX-512 carries b log2 a to
 * 2^-35, the generic float32 path forms exp(b log a) in float64 (it lost about |b ln a| ulp in
 * float32 and saturated early: FLT_MAX^1 gave inf, 2 ulp at pow(1e-40, 0.5)). */
static double pow_bound(double a, double b) {
  (void)a, (void)b;
  return 1;
}
static double atan2_bound(double a, double b) {
  (void)a, (void)b;
  return 2; /* Cephes' atanf core (1.3 ulp) and the quadrant steps, on both paths */
}
/* Bases: C99's special values, subnormals, FLT_MAX, 1 +- a few ulps, and both signs of
 * m 2^e for e in [-40, 40] and 12 mantissas; exponents: zeros, infinities, NaN, small and huge
 * integers (odd and even, 2^24 + 2 even, 2^23 + 1 odd), halves, subnormal, and values that put
 * b log2 a near the overflow and underflow thresholds for bases of a few magnitudes. */
static void test_pow_accuracy(void **state) {
  (void)state;
  enum { NA = 2 * 81 * 12 + 24, NB = 64 };
  static float a[NA], b[NB];
  int na = 0, nb = 0;
  const float sa[] = {0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f,
                      0x1p-149f, FLT_MIN, -FLT_MIN, FLT_MAX, -FLT_MAX, 1 + 0x1p-23f,
                      1 - 0x1p-24f, 1 + 0x1p-20f, 1 - 0x1p-20f, -1 - 0x1p-23f, 2.0f, -2.0f,
                      0.5f, 10.0f, -3.0f};
  for (size_t i = 0; i < sizeof sa / sizeof *sa; i++) a[na++] = sa[i];
  for (int e = -40; e <= 40; e++)
    for (int m = 0; m < 12; m++) {
      const float v = ldexpf(1 + m / 12.0f + (float)(e & 7) / 4096, e);
      a[na++] = v, a[na++] = -v;
    }
  const float sb[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 3.0f, -3.0f, 0.5f, -0.5f, 1.5f,
                      -2.5f, INFINITY, -INFINITY, NAN, 1e-40f, 0x1p24f + 2, 0x1p23f + 1,
                      -(0x1p23f + 1), 1e10f, -1e10f, 7.0f, 0.1f, -0.3f, 1.0f / 3};
  for (size_t i = 0; i < sizeof sb / sizeof *sb; i++) b[nb++] = sb[i];
  /* b = c / log2(m) for m of a few magnitudes: results near 2^c, c up to the thresholds */
  const float cs[] = {-149.5f, -140, -126.2f, -100, -30, 30, 100, 127.9f, 128.1f};
  const float ms[] = {1.001f, 1.5f, 3.0f, 1000.0f};
  for (size_t i = 0; i < sizeof cs / sizeof *cs; i++)
    for (size_t j = 0; j < sizeof ms / sizeof *ms; j++) b[nb++] = cs[i] / log2f(ms[j]);
  assert_true(na <= NA && nb <= NB);
  check_grid("pow", pow, a, na, b, nb, pow_bound);
  /* dense: a in [1/64, 64), b in [-20, 20) (every result in range), 1537 x 77 */
  enum { DA = 1537, DB = 77 };
  static float da[DA], db[DB];
  for (int i = 0; i < DA; i++) da[i] = exp2f(-6 + 12.0f * (float)i / DA);
  for (int j = 0; j < DB; j++) db[j] = -20 + 40.0f * (float)j / DB + 0.0137f;
  check_grid("pow", pow, da, DA, db, DB, pow_bound);
}
/* atan2 over both signs of zero, infinities, NaN, subnormals and m 2^e for e in [-30, 30]. */
static void test_atan2_accuracy(void **state) {
  (void)state;
  enum { N = 2 * 61 * 5 + 10 };
  static float v[N];
  int n = 0;
  const float sv[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f, 0x1p-149f,
                      FLT_MAX, -FLT_MAX};
  for (size_t i = 0; i < sizeof sv / sizeof *sv; i++) v[n++] = sv[i];
  for (int e = -30; e <= 30; e++)
    for (int m = 0; m < 5; m++) {
      const float x = ldexpf(1 + m / 5.0f + 0.013f * (float)(e & 3), e);
      v[n++] = x, v[n++] = -x;
    }
  check_grid("atan2", atan2, v, n, v, n, atan2_bound);
}

/* mod near integer quotients (a = k b +- 1 ulp) and with quotients beyond the fast path
 * (|a / b| >= 2^22 / 2^51, taking the fmod fallback): exact against NumPy's formula. */
static void test_mod_exact(void **state) {
  (void)state;
  enum { N = 4000 };
  static double a[N], b[N];
  opf_rng r;
  opf_rng_init(&r, 5, 0);
  for (int d = OPF_F32; d <= OPF_F64; d++) {
    for (int i = 0; i < N; i++) {
      double bb = (0.1 + 10 * opf_rng_uniform(&r)) * (i & 1 ? -1 : 1);
      double k = floor(2000 * opf_rng_uniform(&r)) - 1000;
      if (d == OPF_F32) {
        float kb = (float)(k * bb);
        a[i] = nextafterf(kb, i & 2 ? INFINITY : -INFINITY), b[i] = (float)bb;
      } else {
        a[i] = nextafter(k * bb, i & 2 ? INFINITY : -INFINITY), b[i] = bb;
      }
      if (i >= N - 8) a[i] = (i & 1 ? 1e30 : -3e25) * (i & 2 ? 1 : -1); /* fallback block */
    }
    opf_case c;
    run_pairs(&c, "mod", (opf_dtype)d, a, b, N);
    for (int i = 0; i < N; i++) {
      double x = ts_get(&c.in[0], i), y = ts_get(&c.in[1], i), got = ts_get(&c.out[0], i);
      double want = d == OPF_F32 ? (double)(float)py_mod(x, y) : py_mod(x, y);
      if (!same(got, want, 0))
        fail_msg("mod %s: %.17g mod %.17g = %.17g, want %.17g", opf_dtype_name((opf_dtype)d),
                 x, y, got, want);
    }
    opf_case_release(&c);
  }
}

/* Integer mod and div: Python's floor modulo, by zero 0, MIN % -1 = 0, and int64 beyond 2^53
 * through the exact fallback. */
static void test_int_mod(void **state) {
  (void)state;
  const int64_t big = INT64_C(1) << 53, huge = INT64_C(4611686018427387905); /* 2^62 + 1 */
  static const int64_t a[] = {7, -7, 7, -7, 0, 5, INT32_MIN, 2147483647, 13, -13, 0, 9};
  static const int64_t b[] = {3, 3, -3, -3, 5, 0, -1, 10, 1, -1, -4, 9};
  static const int64_t want[] = {1, 2, -2, -1, 0, 0, 0, 7, 0, 0, 0, 0};
  const int n = (int)(sizeof a / sizeof *a);
  double da[16], db[16];
  for (int d = OPF_I32; d <= OPF_I64; d++) {
    for (int i = 0; i < n; i++) da[i] = (double)a[i], db[i] = (double)b[i];
    opf_case c;
    run_pairs(&c, "mod", (opf_dtype)d, da, db, n);
    for (int i = 0; i < n; i++)
      if (ts_get(&c.out[0], i) != (double)want[i])
        fail_msg("mod %s: %lld mod %lld = %.0f, want %lld", opf_dtype_name((opf_dtype)d),
                 (long long)a[i], (long long)b[i], ts_get(&c.out[0], i), (long long)want[i]);
    opf_case_release(&c);
  }
  /* int64 operands at and beyond 2^53: exact (fallback block) */
  const int64_t la[] = {big - 1, -(big - 1), huge, -huge, huge, 7, big + 1, -5};
  const int64_t lb[] = {3, big - 2, 3, 7, -(huge - 2), -7, -2, big};
  opf_case c;
  ts_case_ready(&c, ts_op("mod"), OPF_I64, "a=8 b=8", 0, 1);
  memcpy(c.in[0].data, la, sizeof la);
  memcpy(c.in[1].data, lb, sizeof lb);
  if (c.op->forward(&c)) fail_msg("mod: %s", c.err.msg);
  for (int i = 0; i < 8; i++) {
    int64_t r = la[i] % lb[i], w = r != 0 && (r < 0) != (lb[i] < 0) ? r + lb[i] : r;
    int64_t got = ((const int64_t *)c.out[0].data)[i];
    if (got != w) fail_msg("mod int64: %lld mod %lld = %lld, want %lld", (long long)la[i],
                           (long long)lb[i], (long long)got, (long long)w);
  }
  opf_case_release(&c);
  /* div by zero gives 0 and INT_MIN / -1 wraps (the guarded fallback), not a trap */
  static const double qa[] = {5, INT32_MIN, -9}, qb[] = {0, -1, 2}, qw[] = {0, INT32_MIN, -4};
  run_pairs(&c, "div", OPF_I32, qa, qb, 3);
  for (int i = 0; i < 3; i++) assert_true(ts_get(&c.out[0], i) == qw[i]);
  opf_case_release(&c);
}

/* Integer pow: wraps like NumPy (two's complement products), negative exponents give the
 * truncated power. */
static void test_int_pow(void **state) {
  (void)state;
  static const double a[] = {3, -2, 2, 2, 1, -1, -1, 5, 0, 0, -3, 7};
  static const double b[] = {4, 3, 31, 40, -5, -3, -4, -1, 0, 3, 0, 1};
  for (int d = OPF_I32; d <= OPF_I64; d++) {
    const int n = (int)(sizeof a / sizeof *a);
    opf_case c;
    run_pairs(&c, "pow", (opf_dtype)d, a, b, n);
    for (int i = 0; i < n; i++) {
      int64_t want;
      if (b[i] < 0) {
        want = a[i] == 1 ? 1 : a[i] == -1 ? ((int64_t)b[i] & 1 ? -1 : 1) : 0;
      } else {
        uint64_t p = 1;
        for (int k = 0; k < (int)b[i]; k++) p *= (uint64_t)(int64_t)a[i];
        want = d == OPF_I32 ? (int64_t)(int32_t)(uint32_t)p : (int64_t)p;
      }
      if (ts_get(&c.out[0], i) != (double)want)
        fail_msg("pow %s: %g^%g = %.0f, want %lld", opf_dtype_name((opf_dtype)d), a[i], b[i],
                 ts_get(&c.out[0], i), (long long)want);
    }
    opf_case_release(&c);
  }
}

/* ---- gradients reduced over broadcast dims, at sizes above the parallel threshold, with 1
 * and 2 threads, against direct float64 sums of the analytic terms ---- */
/* d/da (i = 0) or d/db (i = 1) of op at (a, b), times g. */
static double term(const char *op, int i, double g, double a, double b) {
  if (!strcmp(op, "mod")) return i ? -g * floor(a / b) : g;
  if (!strcmp(op, "pow")) return i ? g * pow(a, b) * log(a) : g * b * pow(a, b - 1);
  if (!strcmp(op, "hypot")) return g * (i ? b : a) / hypot(a, b);
  if (!strcmp(op, "atan2")) return (i ? -g * a : g * b) / (a * a + b * b);
  if (!strcmp(op, "maximum")) return (i ? b > a : a > b) ? g : a == b ? g / 2 : 0;
  return (i ? b < a : a < b) ? g : a == b ? g / 2 : 0; /* minimum */
}

/* want = the gradient of input i of case c (float64, after forward) summed term by term. */
static void direct_gradient(const opf_case *c, int i, opf_tensor *want) {
  const opf_tensor *y = &c->out[0];
  const double *g = c->gout[0].data, *a = c->in[0].data, *b = c->in[1].data;
  opf_err e;
  opf_tensor_set_shape(want, OPF_F64, c->in[i].ndim, c->in[i].shape);
  if (opf_tensor_alloc(want, &e)) fail_msg("%s", e.msg);
  memset(want->data, 0, want->nbytes);
  for (int64_t k = 0; k < opf_numel(y); k++) {
    double t = term(c->op->name, i, g[k], a[bo_ref_offset(&c->in[0], y, k)],
                    b[bo_ref_offset(&c->in[1], y, k)]);
    ((double *)want->data)[bo_ref_offset(&c->in[i], y, k)] += t;
  }
}

static void check_reduction(const char *name, const char *spec, int threads) {
  opf_case c;
  omp_set_num_threads(threads);
  ts_case_ready(&c, ts_op(name), OPF_F64, spec, 1, 5);
  if (c.op->forward(&c) || c.op->backward(&c)) fail_msg("%s [%s]: %s", name, spec, c.err.msg);
  for (int i = 0; i < 2; i++) {
    opf_tensor want;
    char msg[256];
    direct_gradient(&c, i, &want);
    if (ts_compare(&c.gin[i], &want, 1e-9, msg, sizeof msg))
      fail_msg("%s [%s] %d threads: d%c %s", name, spec, threads, "ab"[i], msg);
    opf_tensor_free(&want);
  }
  opf_case_release(&c);
}

static void test_threaded_reductions(void **state) {
  (void)state;
  /* row, column, scalar, both-broadcast and 3-D patterns; staged row sums longer than their
   * buffer (3x40000 + 3x1), partial sums over reduced rows (600x1000 + 1x1000) */
  static const char *specs[] = {"a=301x517 b=1x517", "a=301x517 b=301x1", "a=301x517 b=()",
                                "a=600x1 b=1x333",   "a=5x1x7001 b=5x9x1", "a=3x40000 b=3x1",
                                "a=600x1000 b=1x1000", "a=70000 b=70000"};
  static const char *ops[] = {"mod", "pow", "hypot", "atan2", "maximum", "minimum"};
  int maxt = omp_get_max_threads();
  for (size_t s = 0; s < sizeof specs / sizeof *specs; s++)
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
      for (int t = 1; t <= 2; t++) check_reduction(ops[o], specs[s], t);
  omp_set_num_threads(maxt);
}

/* Ties split the gradient evenly between a and b (maximum and minimum). */
static void test_tie_gradient(void **state) {
  (void)state;
  for (int m = 0; m < 2; m++) {
    opf_case c;
    ts_case_ready(&c, ts_op(m ? "minimum" : "maximum"), OPF_F64, "a=3 b=3", 1, 1);
    const double a[] = {1, 2, 3}, b[] = {2, 2, 1};
    for (int i = 0; i < 3; i++) {
      ts_set(&c.in[0], i, a[i]), ts_set(&c.in[1], i, b[i]), ts_set(&c.gout[0], i, 1);
    }
    if (c.op->forward(&c) || c.op->backward(&c)) fail_msg("%s", c.err.msg);
    const double wa[2][3] = {{0, 0.5, 1}, {1, 0.5, 0}};
    for (int i = 0; i < 3; i++) {
      assert_true(ts_get(&c.gin[0], i) == wa[m][i]);
      assert_true(ts_get(&c.gin[1], i) == 1 - wa[m][i]);
    }
    opf_case_release(&c);
  }
}

/* ---- in place: the generated inputs keep many repeated updates finite and normal ---- */
static void test_inplace_stability(void **state) {
  (void)state;
  static const char *ops[] = {"iadd", "isub", "imul", "idiv", "imod"};
  for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
    for (int d = OPF_F32; d <= OPF_I64; d++) {
      opf_case c;
      ts_case_ready(&c, ts_op(ops[o]), (opf_dtype)d, "a=4x64 b=1x64", 0, 9);
      assert_ptr_equal(c.out[0].data, c.in[0].data);
      for (int k = 0; k < 200000; k++)
        if (c.op->forward(&c)) fail_msg("%s: %s", ops[o], c.err.msg);
      for (int64_t k = 0; k < opf_numel(&c.out[0]); k++) {
        double v = ts_get(&c.out[0], k);
        double tiny = d == OPF_F32 ? FLT_MIN : DBL_MIN;
        if (!isfinite(v) || (opf_dtype_is_float((opf_dtype)d) && v != 0 && fabs(v) < tiny))
          fail_msg("%s %s: element %lld is %g after 200000 updates", ops[o],
                   opf_dtype_name((opf_dtype)d), (long long)k, v);
      }
      opf_case_release(&c);
    }
}

/* ---- logic: every outcome occurs on the generated inputs, and classes are exact ---- */
static void test_logic_outcomes(void **state) {
  (void)state;
  static const char *ops[] = {"equal", "not_equal",   "greater",    "greater_equal",
                              "less",  "less_equal",  "logical_and", "logical_or",
                              "logical_xor", "logical_not", "isnan", "isinf", "isfinite"};
  for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
    for (int d = 0; d < OPF_NDTYPES; d++) {
      const opf_op *op = ts_op(ops[o]);
      if (!(op->dtypes & OPF_DT_BIT(d))) continue;
      /* isnan and isinf are constant on integers */
      if (!opf_dtype_is_float((opf_dtype)d) && ops[o][0] == 'i') continue;
      opf_case c;
      ts_case_ready(&c, op, (opf_dtype)d, op->n_in == 1 ? "x=4096" : "a=4096 b=4096", 0, 3);
      if (op->forward(&c)) fail_msg("%s: %s", ops[o], c.err.msg);
      int64_t ones = 0;
      for (int k = 0; k < 4096; k++) {
        double v = ts_get(&c.out[0], k);
        if (v != 0 && v != 1) fail_msg("%s: output %g is not a bool", ops[o], v);
        ones += v == 1;
      }
      if (ones < 40 || ones > 4096 - 40)
        fail_msg("%s %s: %lld of 4096 true: the inputs do not exercise both outcomes", ops[o],
                 opf_dtype_name((opf_dtype)d), (long long)ones);
      opf_case_release(&c);
    }
  /* NaN is true and -0 false for the logical operators; NaN compares unequal */
  static const double a[] = {NAN, -0.0, NAN, 1e-300}, b[] = {0.0, 1.0, NAN, -0.0};
  static const int want_and[] = {0, 0, 1, 0}, want_eq[] = {0, 0, 0, 0};
  opf_case c;
  run_pairs(&c, "logical_and", OPF_F64, a, b, 4);
  for (int i = 0; i < 4; i++) assert_int_equal((int)ts_get(&c.out[0], i), want_and[i]);
  opf_case_release(&c);
  run_pairs(&c, "equal", OPF_F64, a, b, 4);
  for (int i = 0; i < 4; i++) assert_int_equal((int)ts_get(&c.out[0], i), want_eq[i]);
  opf_case_release(&c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_models),          cmocka_unit_test(test_errors),
      cmocka_unit_test(test_special_values),  cmocka_unit_test(test_mod_exact),
      cmocka_unit_test(test_pow_accuracy),    cmocka_unit_test(test_atan2_accuracy),
      cmocka_unit_test(test_int_mod),         cmocka_unit_test(test_int_pow),
      cmocka_unit_test(test_threaded_reductions), cmocka_unit_test(test_tie_gradient),
      cmocka_unit_test(test_inplace_stability), cmocka_unit_test(test_logic_outcomes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
