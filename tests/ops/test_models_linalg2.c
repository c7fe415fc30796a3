/* test_models_linalg2.c: the BLAS-2/3 and LAPACK operators of the linalg family (gemv, outer,
 * khatri_rao, linalg_gemm, syrk, trsm, trmm, potrf, potri, inverse, det, slogdet, extractdiag,
 * makediag): golden flops and bytes at one standard shape each (derived by hand below), output
 * shapes and derived inputs, the error paths the generic driver cannot see (bad shapes and
 * params, singular and indefinite data), and gradients at sizes past the small set (blocked,
 * panelled and threaded paths) by a random directional derivative of the reference. */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"

/* One pass's flops (which 1) or bytes (0), by the operator's model or the default. */
static double model_of(const opf_case *c, int which, opf_pass p) {
  const opf_op *op = c->op;
  if (which) return (op->flops ? op->flops : opf_default_flops)(c, p);
  return (op->bytes ? op->bytes : opf_default_bytes)(c, p);
}

/* Models of a float32 case: flops fwd/bwd and bytes fwd/bwd, equal to the hand derivation up
 * to rounding of the non-integer counts (n^3/3); both equals fwd + bwd. */
static void expect_models(const char *name, const char *spec, double ff, double fb, double bf,
                          double bb) {
  opf_case c;
  opf_err e;
  if (opf_case_init(&c, ts_op(name), OPF_F32, spec, &e)) fail_msg("%s [%s]: %s", name, spec, e.msg);
  const double want[2][3] = {{bf, bb, bf + bb}, {ff, fb, ff + fb}};
  for (int which = 0; which < 2; which++)
    for (int p = 0; p < OPF_NPASSES; p++) {
      double got = model_of(&c, which, (opf_pass)p), w = want[which][p];
      if (!(fabs(got - w) <= 1e-12 * fabs(w)))
        fail_msg("%s [%s]: %s %s model %.17g, want %.17g", name, spec, which ? "flops" : "bytes",
                 opf_pass_name((opf_pass)p), got, w);
    }
}

static void test_golden_models(void **state) {
  (void)state;
  const double n = 1024, nn = n * n, n3 = nn * n, tri = n * (n + 1) / 2;
  /* gemv a=(1024,1024): fwd 2MN = 2097152, bwd dA MN + dx 2MN = 3145728. Bytes (x4): fwd
   * A + x + y = 1048576 + 2048; bwd A + x + g + dA + dx = 2*1048576 + 3072. */
  expect_models("gemv", "a=1024x1024", 2097152, 3145728, 4202496, 8400896);
  /* outer x=1024 y=1024: fwd MN, bwd two GEMVs 4MN. Bytes (x4): fwd C + x + y; bwd G + x + y
   * + dx + dy = 1048576 + 4096. */
  expect_models("outer", "x=1024 y=1024", 1048576, 4194304, 4202496, 4210688);
  /* khatri_rao a=(32,1024) b=(32,1024): R = 1024 rows of K = 1024; fwd (m-1)RK = 1048576, bwd
   * m^2 RK = 4194304. Inputs 65536 elements: fwd (65536 + RK)*4, bwd (RK + 2*65536)*4. */
  expect_models("khatri_rao", "a=32x1024 b=32x1024", 1048576, 4194304, 4456448, 4718592);
  /* three inputs a=(16,1024) b=(8,1024) c=(8,1024): R = 1024; fwd 2RK, bwd 9RK; inputs 32768
   * elements: fwd (32768 + RK)*4, bwd (RK + 65536)*4. */
  expect_models("khatri_rao", "a=16x1024 b=8x1024 c=8x1024", 2097152, 9437184, 4325376, 4456448);
  /* linalg_gemm 1024^3: fwd 2MNK + 2MN, bwd 4MNK + MN. Bytes (x4): fwd A + B + C + out =
   * 4 MiB elements; bwd G + A + B + dA + dB + dC = 6 MiB elements. */
  expect_models("linalg_gemm", "a=1024x1024 b=1024x1024", 2 * n3 + 2 * nn, 4 * n3 + nn,
                16777216, 25165824);
  /* syrk a=(1024,1024): fwd n(n+1)k = 1074790400, bwd n^2 + 2n^2 k. Bytes (x4): fwd A + out;
   * bwd G + A + dA. */
  expect_models("syrk", "a=1024x1024", 1074790400, nn + 2 * n3, 8388608, 12582912);
  /* syrk a=(4096,64) transposed: n = 64, k = 4096: fwd 64*65*4096, bwd 4096 + 2*4096*4096;
   * bytes fwd (262144 + 4096)*4, bwd (4096 + 2*262144)*4. */
  expect_models("syrk", "a=4096x64 transpose=true", 17039360, 33558528, 1064960, 2113536);
  /* trsm and trmm a=(1024,1024) b=(1024,1024): fwd na^2 k = 2^30; bwd dB 2^30 + dA's triangle
   * na(na+1)k = 1074790400. Bytes (x4): fwd A's triangle (524800) + b + out; bwd A's triangle
   * + G + b + dB + all of dA. */
  expect_models("trsm", "a=1024x1024 b=1024x1024", n3, n3 + 1074790400, (tri + 2 * nn) * 4,
                (tri + 4 * nn) * 4);
  expect_models("trmm", "a=1024x1024 b=1024x1024 transpose=true lower=false", n3,
                n3 + 1074790400, (tri + 2 * nn) * 4, (tri + 4 * nn) * 4);
  /* trmm from the right, a=(64,64) b=(4096,64): na = 64, k = 4096: fwd 64^2 4096 = 16777216,
   * bwd that + 64*65*4096. */
  expect_models("trmm", "a=64x64 b=4096x64 rightside=true", 16777216, 16777216 + 17039360,
                (2080 + 2 * 262144) * 4, (2080 + 3 * 262144 + 4096) * 4);
  /* potrf 1024: fwd n^3/3, bwd TRMM + 2 TRSM = 3n^3. Bytes (x4): fwd lower triangle + L; bwd
   * L's triangle + G + dA. */
  expect_models("potrf", "a=1024x1024", n3 / 3, 3 * n3, (tri + nn) * 4, (tri + 2 * nn) * 4);
  /* potri 1024: fwd 2n^3/3; bwd G + G^T n^2, GEMM 2n^3, TRSM n^3. Bytes (x4): fwd triangle +
   * C; bwd triangle + G + C + dL. */
  expect_models("potri", "a=1024x1024", 2 * n3 / 3, 3 * n3 + nn, (tri + nn) * 4, (tri + 3 * nn) * 4);
  /* inverse 1024: fwd 2n^3, bwd two GEMMs 4n^3. Bytes (x4): fwd A + A^-1 = 2 MiB elements;
   * bwd G + A^-1 + dA. */
  expect_models("inverse", "a=1024x1024", 2 * n3, 4 * n3, 8388608, 12582912);
  /* det 1024: fwd LU 2n^3/3 + n, bwd getri 4n^3/3 + n^2. Bytes (x4): fwd A + det; bwd LU + dA
   * + g. slogdet: the same flops, two scalars. */
  expect_models("det", "a=1024x1024", 2 * n3 / 3 + n, 4 * n3 / 3 + nn, (nn + 1) * 4, (2 * nn + 1) * 4);
  expect_models("slogdet", "a=1024x1024", 2 * n3 / 3 + n, 4 * n3 / 3 + nn, (nn + 2) * 4,
                (2 * nn + 2) * 4);
  /* extractdiag a=(1024,1024): no flops; fwd reads and writes 1024 elements; bwd reads g and
   * writes all of dA. makediag v=1024: the mirror image. */
  expect_models("extractdiag", "a=1024x1024", 0, 0, 8192, (1024 + nn) * 4);
  expect_models("makediag", "v=1024", 0, 0, (1024 + nn) * 4, 8192);
}

static void test_shapes(void **state) {
  (void)state;
  static const struct {
    const char *op, *spec, *out0, *out1;
  } cases[] = {
      {"gemv", "a=3x4", "3", NULL},
      {"outer", "x=3 y=5", "3x5", NULL},
      {"outer", "x=4", "4x4", NULL},
      {"khatri_rao", "a=2x3 b=4x3", "8x3", NULL},
      {"khatri_rao", "a=2x3 b=4x3 c=5x3", "40x3", NULL},
      {"linalg_gemm", "a=4x3 b=5x4 transpose_a=true transpose_b=true", "3x5", NULL},
      {"syrk", "a=3x5", "3x3", NULL},
      {"syrk", "a=3x5 transpose=true", "5x5", NULL},
      {"trsm", "a=4x4 b=4x6", "4x6", NULL},
      {"trmm", "a=6x6 b=4x6 rightside=true", "4x6", NULL},
      {"potrf", "a=5x5", "5x5", NULL},
      {"potri", "a=5x5", "5x5", NULL},
      {"inverse", "a=5x5", "5x5", NULL},
      {"det", "a=5x5", "()", NULL},
      {"slogdet", "a=5x5", "()", "()"},
      {"extractdiag", "a=3x5 k=1", "3", NULL},
      {"extractdiag", "a=3x5 k=3", "2", NULL},
      {"extractdiag", "a=3x5 k=-2", "1", NULL},
      {"makediag", "v=3 k=-2", "5x5", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    opf_case c;
    opf_err e;
    char s[96];
    if (opf_case_init(&c, ts_op(cases[i].op), OPF_F32, cases[i].spec, &e))
      fail_msg("%s [%s]: %s", cases[i].op, cases[i].spec, e.msg);
    const char *want[2] = {cases[i].out0, cases[i].out1};
    for (int o = 0; o < 2 && want[o]; o++)
      if (strcmp(opf_shape_str(&c.out[o], s, sizeof s), want[o]))
        fail_msg("%s [%s]: output %d is '%s', want '%s'", cases[i].op, cases[i].spec, o, s, want[o]);
  }

  /* derived inputs: gemv's x, outer's y, linalg_gemm's c; khatri_rao without c has two */
  opf_case c;
  opf_err e;
  char s[96];
  assert_int_equal(opf_case_init(&c, ts_op("gemv"), OPF_F32, "a=3x7", &e), OPF_OK);
  assert_string_equal(opf_shape_str(&c.in[1], s, sizeof s), "7");
  assert_int_equal(opf_case_init(&c, ts_op("outer"), OPF_F64, "x=9", &e), OPF_OK);
  assert_string_equal(opf_shape_str(&c.in[1], s, sizeof s), "9");
  assert_int_equal(opf_case_init(&c, ts_op("linalg_gemm"), OPF_F32, "a=3x4 b=4x6", &e), OPF_OK);
  assert_string_equal(opf_shape_str(&c.in[2], s, sizeof s), "3x6");
  assert_int_equal(opf_case_init(&c, ts_op("khatri_rao"), OPF_F32, "a=2x3 b=4x3", &e), OPF_OK);
  assert_int_equal(c.present[2], 0);
  assert_int_equal(opf_case_init(&c, ts_op("khatri_rao"), OPF_F32, "a=2x3 b=4x3 c=none", &e), OPF_OK);
  assert_int_equal(c.present[2], 0);
}

static void test_errors(void **state) {
  (void)state;
  ts_expect_einval("gemv", "a=3x4 x=5", "x=5 must be a vector of 4 elements (the columns of a)");
  ts_expect_einval("gemv", "a=3", "needs a matrix a (M,N), got a=3");
  ts_expect_einval("gemv", "x=3", "needs a matrix a (M,N), got a=none");
  ts_expect_einval("outer", "x=3x2", "needs a vector x (M,), got x=3x2");
  ts_expect_einval("outer", "x=3 y=2x2", "needs a vector y (N,), got y=2x2");
  ts_expect_einval("khatri_rao", "a=2x3 b=4x5", "column counts differ: a=2x3, b=4x5");
  ts_expect_einval("khatri_rao", "a=2x3 b=4x3 c=5x4", "column counts differ: a=2x3, c=5x4");
  ts_expect_einval("khatri_rao", "a=2x3 b=3", "needs matrices with the same column count, got b=3");
  ts_expect_einval("khatri_rao", "a=2x3", "got b=none");
  ts_expect_einval("linalg_gemm", "a=3x4 b=5x6",
                   "inner dimensions differ: a=3x4 has K=4, b=5x6 has K=5");
  ts_expect_einval("linalg_gemm", "a=3x4 b=4x5 c=3x4", "c=3x4 must have the shape of op(a) op(b), 3x5");
  ts_expect_einval("linalg_gemm", "a=3x4 b=4x5 alpha=two",
                   "param 'alpha' of 'linalg_gemm' must be a number");
  ts_expect_einval("linalg_gemm", "a=3x4 b=4x5 beta=1e9", "outside its range");
  ts_expect_einval("syrk", "a=3x4x5", "needs a matrix a (N,K), got a=3x4x5");
  ts_expect_einval("trsm", "b=4x4", "needs a triangular a (M,M) and b (M,N)");
  ts_expect_einval("trsm", "a=3x4 b=3x3", "needs a square matrix a and a matrix b, got a=3x4 b=3x3");
  ts_expect_einval("trsm", "a=4x4 b=3x4", "a=4x4 must be 3x3, the rows of b=3x4 (op(a) b)");
  ts_expect_einval("trmm", "a=4x4 b=4x3 rightside=true",
                   "a=4x4 must be 3x3, the columns of b=4x3 (rightside: b op(a))");
  ts_expect_einval("trmm", "a=4x4 b=4x3 lower=maybe", "must be true or false");
  ts_expect_einval("potrf", "a=3x4", "needs a square matrix a (N,N), got a=3x4");
  ts_expect_einval("potri", "a=3", "needs a square matrix a (N,N), got a=3");
  ts_expect_einval("inverse", "a=2x3x3", "got a=2x3x3");
  ts_expect_einval("det", "a=4x5", "got a=4x5");
  ts_expect_einval("slogdet", "", "got a=none");
  ts_expect_einval("extractdiag", "a=3x5 k=5", "k=5 leaves no diagonal in a=3x5");
  ts_expect_einval("extractdiag", "a=3x5 k=-3", "k=-3 leaves no diagonal in a=3x5");
  ts_expect_einval("extractdiag", "a=4", "needs a matrix a (M,N), got a=4");
  ts_expect_einval("makediag", "v=3x3", "needs a vector v (L,), got v=3x3");
  ts_expect_einval("makediag", "v=3 k=2000000000", "outside its range");
}

/* Overwrite a square input with diag(d) (rows permuted by swapping rows 0 and 1 when swap). */
static void set_diag(opf_tensor *t, const double *d, int swap) {
  const int64_t n = t->shape[0];
  for (int64_t k = 0; k < n * n; k++) ts_set(t, k, 0);
  for (int64_t i = 0; i < n; i++) {
    int64_t r = swap && i < 2 ? 1 - i : i;
    ts_set(t, r * n + i, d[i]);
  }
}

/* Data the kernels must reject or handle: indefinite and singular matrices, and a known
 * determinant whose sign comes from a row swap. */
static void test_data(void **state) {
  (void)state;
  const double d3[3] = {2, 3, 4}, z3[3] = {2, 0, 4}, neg[3] = {1, -1, 1};
  for (int dt = 0; dt < 2; dt++) {
    opf_case c;
    /* det of diag(2,3,4) with rows 0 and 1 swapped: -24; slogdet: sign -1, log 24;
     * inverse: the transpose of the permuted inverse diagonal */
    ts_case_ready(&c, ts_op("det"), (opf_dtype)dt, "a=3x3", 1, 1);
    set_diag(&c.in[0], d3, 1);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    assert_float_equal(ts_get(&c.out[0], 0), -24, 1e-5);
    /* g det A^-T: entry (0,1) is g * -24 * A^-1[1][0] = -8 g, the cofactor of a[0][1] */
    assert_int_equal(c.op->backward(&c), OPF_OK);
    assert_float_equal(ts_get(&c.gin[0], 1), ts_get(&c.gout[0], 0) * -8, 1e-4);
    set_diag(&c.in[0], z3, 0); /* singular: det 0, and no gradient */
    assert_int_equal(c.op->forward(&c), OPF_OK);
    assert_float_equal(ts_get(&c.out[0], 0), 0, 0);
    assert_int_equal(c.op->backward(&c), OPF_EINVAL);
    assert_non_null(strstr(c.err.msg, "a is singular"));
    opf_case_release(&c);

    ts_case_ready(&c, ts_op("slogdet"), (opf_dtype)dt, "a=3x3", 1, 1);
    set_diag(&c.in[0], d3, 1);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    assert_float_equal(ts_get(&c.out[0], 0), -1, 0);
    assert_float_equal(ts_get(&c.out[1], 0), log(24.0), 1e-6);
    set_diag(&c.in[0], z3, 0);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    assert_float_equal(ts_get(&c.out[0], 0), 0, 0);
    assert_true(isinf(ts_get(&c.out[1], 0)) && ts_get(&c.out[1], 0) < 0);
    opf_case_release(&c);

    ts_case_ready(&c, ts_op("inverse"), (opf_dtype)dt, "a=3x3", 0, 1);
    set_diag(&c.in[0], d3, 1); /* A = P D, A^-1 = D^-1 P: (0,1) = 1/2, (1,0) = 1/3 */
    assert_int_equal(c.op->forward(&c), OPF_OK);
    assert_float_equal(ts_get(&c.out[0], 1), 0.5, 1e-6);
    assert_float_equal(ts_get(&c.out[0], 3), 1.0 / 3, 1e-6);
    assert_float_equal(ts_get(&c.out[0], 8), 0.25, 1e-6);
    set_diag(&c.in[0], z3, 0);
    assert_int_equal(c.op->forward(&c), OPF_EINVAL);
    assert_non_null(strstr(c.err.msg, "a is singular"));
    opf_case_release(&c);

    ts_case_ready(&c, ts_op("potrf"), (opf_dtype)dt, "a=3x3", 0, 1);
    set_diag(&c.in[0], neg, 0);
    assert_int_equal(c.op->forward(&c), OPF_EINVAL);
    assert_non_null(strstr(c.err.msg, "a is not positive definite: its leading minor of order 2"));
    set_diag(&c.in[0], d3, 0); /* chol(diag(2,3,4)) = diag(sqrt) */
    assert_int_equal(c.op->forward(&c), OPF_OK);
    assert_float_equal(ts_get(&c.out[0], 4), sqrt(3.0), 1e-6);
    opf_case_release(&c);

    ts_case_ready(&c, ts_op("potri"), (opf_dtype)dt, "a=3x3", 0, 1);
    set_diag(&c.in[0], z3, 0);
    assert_int_equal(c.op->forward(&c), OPF_EINVAL);
    assert_non_null(strstr(c.err.msg, "the factor a is singular: a[1][1] is zero"));
    opf_case_release(&c);
  }
}

/* sum over float outputs of <reference(inputs), gout> */
static double ref_loss(opf_case *r, const opf_case *c) {
  if (r->op->reference(r)) fail_msg("%s: reference: %s", r->op->name, r->err.msg);
  double L = 0;
  for (int i = 0; i < r->op->n_out; i++)
    if (c->gout[i].data)
      for (int64_t k = 0; k < opf_numel(&r->out[i]); k++)
        L += ts_get(&r->out[i], k) * ts_get(&c->gout[i], k);
  return L;
}

/* Gradient of every input along one random direction E (float64, nt threads): <dX, E> from
 * backward against the central difference of the reference's loss along E. One direction
 * tests every element of the gradient at once, at sizes where per-element probes cannot. */
static void dir_check(const char *name, const char *spec, int nt) {
  const opf_op *op = ts_op(name);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(nt);
  opf_case c, r;
  ts_case_ready(&c, op, OPF_F64, spec, 1, 21);
  if (op->forward(&c) || op->backward(&c)) fail_msg("%s [%s]: %s", name, spec, c.err.msg);
  r = c;
  r.ws = NULL, r.ws_bytes = 0, r.state = NULL;
  opf_err e;
  for (int i = 0; i < op->n_out; i++) {
    opf_tensor_set_shape(&r.out[i], c.out[i].dtype, c.out[i].ndim, c.out[i].shape);
    if (opf_tensor_alloc(&r.out[i], &e)) fail_msg("%s", e.msg);
  }
  for (int i = 0; i < op->n_in; i++) {
    if (!c.gin[i].data) continue;
    opf_tensor E, x0;
    opf_tensor_set_shape(&E, OPF_F64, c.in[i].ndim, c.in[i].shape);
    opf_tensor_set_shape(&x0, OPF_F64, c.in[i].ndim, c.in[i].shape);
    if (opf_tensor_alloc(&E, &e) || opf_tensor_alloc(&x0, &e)) fail_msg("%s", e.msg);
    opf_fill_uniform(&E, 77, (uint64_t)i, -1, 1);
    memcpy(x0.data, c.in[i].data, x0.nbytes);
    const int64_t n = opf_numel(&E);
    double ana = 0, xmax = 1;
    for (int64_t k = 0; k < n; k++) {
      ana += ts_get(&c.gin[i], k) * ts_get(&E, k);
      xmax = fmax(xmax, fabs(ts_get(&x0, k)));
    }
    const double h = 1e-6 * xmax;
    double L[2];
    for (int s = 0; s < 2; s++) {
      for (int64_t k = 0; k < n; k++)
        ts_set(&c.in[i], k, ts_get(&x0, k) + (s ? -h : h) * ts_get(&E, k));
      L[s] = ref_loss(&r, &c);
    }
    memcpy(c.in[i].data, x0.data, x0.nbytes);
    const double num = (L[0] - L[1]) / (2 * h), scale = fmax(1, fmax(fabs(num), fabs(ana)));
    if (!(fabs(num - ana) <= 1e-6 * scale + 1e-12 * (fabs(L[0]) + fabs(L[1])) / h))
      fail_msg("%s [%s] on %d threads: <d%s, E> = %.12g from backward, %.12g by finite differences",
               name, spec, nt, op->in[i].name, ana, num);
    opf_tensor_free(&E);
    opf_tensor_free(&x0);
  }
  for (int i = 0; i < op->n_out; i++) opf_tensor_free(&r.out[i]);
  opf_case_release(&c);
  omp_set_num_threads(saved);
}

static void test_gradients_large(void **state) {
  (void)state;
  for (int nt = 1; nt <= 2; nt++) {
    /* several panels of the triangle-only GEMM (128 rows each), every side/triangle/transpose */
    dir_check("trsm", "a=300x300 b=300x40 alpha=1.5", nt);
    dir_check("trsm", "a=300x300 b=40x300 rightside=true transpose=true", nt);
    dir_check("trsm", "a=300x300 b=300x40 lower=false transpose=true alpha=-2", nt);
    dir_check("trmm", "a=300x300 b=40x300 rightside=true lower=false", nt);
    dir_check("trmm", "a=300x300 b=300x40 transpose=true", nt);
    /* blocked LAPACK paths and the tile fold / mirror / transpose with partial tiles */
    dir_check("potrf", "a=300x300", nt);
    dir_check("potri", "a=200x200", nt);
    dir_check("syrk", "a=200x70 transpose=true alpha=0.5", nt);
    dir_check("inverse", "a=150x150", nt);
    dir_check("det", "a=150x150", nt);
    dir_check("slogdet", "a=150x150", nt);
    dir_check("linalg_gemm",
              "a=130x70 b=90x130 transpose_a=true transpose_b=true alpha=0.5 beta=3", nt);
    /* threaded memory-bound kernels: partial sums of khatri_rao, row blocks of the others */
    dir_check("khatri_rao", "a=50x300 b=40x300", nt);
    dir_check("khatri_rao", "a=9x200 b=7x200 c=11x200", nt);
    dir_check("gemv", "a=400x300", nt);
    dir_check("outer", "x=400 y=300", nt);
    dir_check("extractdiag", "a=300x400 k=-20", nt);
    dir_check("makediag", "v=300 k=20", nt);
  }
}

/* Forward against the reference on 1 and 2 threads, for the streaming-store paths: outputs
 * past 32 MB (creation/create_common.h's CR_STREAM_MIN), narrow and wide rows. */
static void test_streaming_writers(void **state) {
  (void)state;
  static const char *const specs[][2] = {
      {"outer", "x=3001 y=3003"},
      {"khatri_rao", "a=101x3001 b=30x3001"},
      {"khatri_rao", "a=3001x16 b=201x16"},
      {"khatri_rao", "a=301x10 b=43x10 c=71x10"},
      {"gemv", "a=3001x3003"}, /* its backward's dA */
  };
  const int saved = omp_get_max_threads();
  for (int nt = 1; nt <= 2; nt++)
    for (size_t k = 0; k < sizeof specs / sizeof specs[0]; k++) {
      const opf_op *op = ts_op(specs[k][0]);
      const int bwd = !strcmp(specs[k][0], "gemv");
      omp_set_num_threads(nt);
      opf_case c;
      ts_case_ready(&c, op, OPF_F32, specs[k][1], bwd, 3);
      if (op->forward(&c) || (bwd && op->backward(&c))) fail_msg("%s: %s", specs[k][1], c.err.msg);
      const opf_tensor *got = bwd ? &c.gin[0] : &c.out[0];
      opf_tensor want;
      opf_err e;
      opf_tensor_set_shape(&want, OPF_F32, got->ndim, got->shape);
      if (opf_tensor_alloc(&want, &e)) fail_msg("%s", e.msg);
      if (bwd) { /* dA = g x^T */
        const int64_t M = c.in[0].shape[0], N = c.in[0].shape[1];
        for (int64_t i = 0; i < M; i++)
          for (int64_t j = 0; j < N; j++)
            ts_set(&want, i * N + j, ts_get(&c.gout[0], i) * ts_get(&c.in[1], j));
      } else {
        opf_case r = c;
        r.ws = NULL, r.out[0] = want;
        if (op->reference(&r)) fail_msg("reference: %s", r.err.msg);
      }
      char msg[256];
      if (ts_compare(got, &want, 1e-6, msg, sizeof msg))
        fail_msg("%s [%s] on %d threads: %s", specs[k][0], specs[k][1], nt, msg);
      opf_tensor_free(&want);
      opf_case_release(&c);
    }
  omp_set_num_threads(saved);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_models),
      cmocka_unit_test(test_shapes),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_data),
      cmocka_unit_test(test_gradients_large),
      cmocka_unit_test(test_streaming_writers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
