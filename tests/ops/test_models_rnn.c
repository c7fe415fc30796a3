/* test_models_rnn.c: the recurrent family (ops/rnn): golden flops and bytes, derived shapes,
 * the infer error paths, and what the generic driver cannot see: the params packing (a
 * one-step layer equals the cell), the reverse direction's semantics, and 1 vs 2 threads. */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"

/* Model (rnn_core.c), per layer direction with TN = T*N, GH = G*H, s = T steps with h0:
 *   fwd 2 TN GH I_l + 2 s N H GH + ew_fwd TN H,
 *   bwd 4 TN GH I_l + 4 s N H GH + ew_bwd TN H + (1 or, gru, 2) TN GH (bias sums),
 * ew_fwd relu 2, tanh 4, lstm 23, gru 23; ew_bwd relu 2, tanh 4, lstm 26, gru 17.
 * Bytes: the default model, float32: fwd inputs + outputs, bwd output grads + inputs + input
 * grads (every input is differentiable). */
static void test_golden_layers(void **state) {
  (void)state;
  /* lstm T=N=I=H=32/32/512/512: TN 1024, GH 2048.
   * fwd 2*1024*2048*512 = 2147483648 (input GEMM) + 2*32*32*512*2048 = 2147483648 (32
   *     recurrent GEMMs) + 23*1024*512 = 12058624: 4307025920;
   * bwd 2*2147483648 + 2*2147483648 + 26*524288 = 13631488 + 1024*2048 = 2097152: 8605663232.
   * bytes: x 524288, params 2048*(512+512+2) = 2101248, h0 and c0 16384 each: inputs
   * 2658304 elements = 10633216 B; y 524288 + hy + cy 16384 each = 557056 el = 2228224 B.
   * fwd 12861440, bwd 2228224 + 2*10633216 = 23494656. */
  ts_expect_models("lstm", OPF_F32, "x=32x32x512 hidden=512", 4307025920.0, 8605663232.0, 12861440.0, 23494656.0);
  /* without h0 the first step's recurrent GEMM is skipped (s = 31): fwd and bwd lose
   * 2*32*512*2048 = 67108864 and twice that; c0 stays. */
  ts_expect_models("lstm", OPF_F32, "x=32x32x512 hidden=512 h0=none", 4239917056.0, 8471445504.0, 12795904.0,
         23363584.0);
  /* gru, GH 1536: fwd 1610612736*2 + 23*524288 = 3233284096; bwd 4*1610612736 + 17*524288
   * (8912896) + 2*1024*1536 (3145728) = 6454509568. bytes: params 1536*1026 = 1575936, inputs
   * 524288 + 1575936 + 16384 = 2116608 el = 8466432 B; outputs 540672 el = 2162688 B. */
  ts_expect_models("gru", OPF_F32, "x=32x32x512 hidden=512", 3233284096.0, 6454509568.0, 10629120.0, 19095552.0);
  /* rnn_tanh, 2 layers, bidirectional: GH 512, D 2; layer 0 (I 512) per direction fwd
   * 536870912 + 536870912 + 4*524288 = 1075838976, layer 1 (I_1 = 1024) 1073741824 +
   * 536870912 + 2097152 = 1612709888; times 2 directions: 5377097728. bwd per direction
   * 2147483648 + 2097152 + 524288 = 2150105088 (layer 0), 3221225472 + 2621440 = 3223846912
   * (layer 1): 10747904000. bytes: params 2*512*1026 + 2*512*1538 = 2625536, h0 4*32*512 =
   * 65536, x 524288: 12861440 B in; y 32*32*1024 + hy 65536 = 1114112 el = 4456448 B. */
  ts_expect_models("rnn_tanh", OPF_F32, "x=32x32x512 hidden=512 num_layers=2 bidirectional=true", 5377097728.0,
         10747904000.0, 17317888.0, 30179328.0);
  /* rnn_relu: as rnn_tanh with ew 2/2 instead of 4/4: 1075838976 - 2*524288 = 1074790400,
   * bwd 2150105088 - 1048576 = 2149056512; params 512*1026: in 524288 + 525312 + 16384 =
   * 1065984 el = 4263936 B, out 540672 el. */
  ts_expect_models("rnn_relu", OPF_F32, "x=32x32x512 hidden=512", 1074790400.0, 2149056512.0, 6426624.0, 10690560.0);
}

static void test_golden_cells(void **state) {
  (void)state;
  /* lstm_cell N=32, I=H=512 (T = 1, h given): fwd 2*32*2048*512 = 67108864 twice + 23*16384
   * = 134594560; bwd 4*67108864 + 26*16384 + 32*2048 = 268926976. bytes: x, h, c 16384 el
   * each, w_ih, w_hh 1048576 each, b 4096: 2150400 el = 8601600 B; h', c' 131072 B. */
  ts_expect_models("lstm_cell", OPF_F32, "x=32x512 hidden=512", 134594560.0, 268926976.0, 8732672.0, 17334272.0);
  /* gru_cell: GH 1536: 2*50331648 + 23*16384 = 101040128; 4*50331648 + 17*16384 +
   * 2*32*1536 = 201703424. bytes: 16384*2 + 786432*2 + 3072 = 1625088 el in, 16384 out. */
  ts_expect_models("gru_cell", OPF_F32, "x=32x512 hidden=512", 101040128.0, 201703424.0, 6500352.0, 12935168.0);
  /* rnn_tanh_cell: GH 512: 2*16777216 + 4*16384 = 33619968; 4*16777216 + 4*16384 + 16384
   * = 67190784. bytes: 16384*2 + 262144*2 + 1024 = 557056 el in, 16384 out. */
  ts_expect_models("rnn_tanh_cell", OPF_F32, "x=32x512 hidden=512", 33619968.0, 67190784.0, 2297856.0, 4530176.0);
  /* rnn_relu_cell without bias: ew 2: 33554432 + 32768 = 33587200; bwd 67108864 + 32768 (no
   * bias sum) = 67141632; bytes without b's 1024 elements. */
  ts_expect_models("rnn_relu_cell", OPF_F32, "x=32x512 hidden=512 b=none", 33587200.0, 67141632.0, 2293760.0,
         4521984.0);
}

static void test_derived_shapes(void **state) {
  (void)state;
  /* params: layer 0 2*24*(4+6+2) = 576, layer 1 2*24*(12+6+2) = 960 */
  const char *s = "x=5x3x4 hidden=6 num_layers=2 bidirectional=true";
  ts_expect_shape("lstm", s, 1, 1, "1536");
  ts_expect_shape("lstm", s, 1, 2, "4x3x6");
  ts_expect_shape("lstm", s, 1, 3, "4x3x6");
  ts_expect_shape("lstm", s, 0, 0, "5x3x12");
  ts_expect_shape("lstm", s, 0, 2, "4x3x6");
  ts_expect_shape("gru", "x=5x3x4 h0=1x3x7", 1, 1, "273"); /* 21*(4+7+2); hidden from h0 */
  ts_expect_shape("gru", "x=5x3x4 h0=1x3x7", 0, 0, "5x3x7");
  ts_expect_shape("lstm_cell", "x=3x4 hidden=5", 1, 3, "20x4");
  ts_expect_shape("lstm_cell", "x=3x4 hidden=5", 1, 4, "20x5");
  ts_expect_shape("lstm_cell", "x=3x4 hidden=5", 1, 5, "2x20");
  ts_expect_shape("gru_cell", "x=3x4 w_hh=9x3", 1, 2, "9x4"); /* hidden 3 from w_hh */
  ts_expect_shape("rnn_tanh_cell", "x=3x4 h=3x6", 0, 0, "3x6");
}

static void test_layer_errors(void **state) {
  (void)state;
  ts_expect_einval("lstm", "x=32x32", "x=32x32 must be time-major (T, N, input)");
  ts_expect_einval("gru", "x=4x0x3 hidden=2", "every size >= 1");
  ts_expect_einval("lstm", "x=4x2x3 hidden=5 num_layers=0", "num_layers=0: needs at least one layer");
  ts_expect_einval("rnn_tanh", "x=4x2x3", "needs hidden=H");
  ts_expect_einval("lstm", "x=4x2x3 hidden=5 h0=1x2x4",
                   "'h0' 1x2x4 must be (num_layers*directions, N, hidden) = (1, 2, 5)");
  ts_expect_einval("gru", "x=4x2x3 hidden=5 bidirectional=true h0=1x2x5", "= (2, 2, 5)");
  ts_expect_einval("lstm", "x=4x2x3 hidden=5 num_layers=2 c0=2x3x5", "'c0' 2x3x5 must be");
  ts_expect_einval("lstm", "x=4x2x3 hidden=5 params=100",
                   "'params' 100 must be (200): the packed weights and biases of input=3 hidden=5 "
                   "num_layers=1 bidirectional=false");
  ts_expect_einval("rnn_relu", "x=4x2x3 hidden=5 params=2x20", "'params' 2x20 must be (50)");
  ts_expect_einval("lstm", "x=4x2x3 h0=1x2x0", "hidden size 0");
}

static void test_cell_errors(void **state) {
  (void)state;
  ts_expect_einval("lstm_cell", "x=32", "x=32 must be (N, input)");
  ts_expect_einval("gru_cell", "x=4x3", "needs hidden=H");
  ts_expect_einval("lstm_cell", "x=4x3 hidden=5 w_ih=20x4",
                   "'w_ih' 20x4 must be (gates*hidden, input) = (20, 3)");
  ts_expect_einval("gru_cell", "x=4x3 hidden=5 w_hh=15x4",
                   "'w_hh' 15x4 must be (gates*hidden, hidden) = (15, 5)");
  ts_expect_einval("lstm_cell", "x=4x3 w_hh=20x5 hidden=6", "'w_hh' 20x5 must be (gates*hidden, hidden) = (24, 6)");
  ts_expect_einval("rnn_tanh_cell", "x=4x3 hidden=5 h=3x5", "'h' 3x5 must be (N, hidden) = (4, 5)");
  ts_expect_einval("lstm_cell", "x=4x3 hidden=5 c=4x6", "'c' 4x6 must be (N, hidden) = (4, 5)");
  ts_expect_einval("rnn_relu_cell", "x=4x3 hidden=5 b=10", "'b' 10 must be (2, gates*hidden)");
  ts_expect_einval("lstm_cell", "x=4x3 h=4x0", "hidden size 0");
}

/* Element k of a tensor (float64 cases). */
static double at(const opf_tensor *t, int64_t k) { return ((const double *)t->data)[k]; }

static void expect_same(const char *what, const opf_tensor *a, int64_t ao, const opf_tensor *b,
                        int64_t bo, int64_t n, double tol) {
  for (int64_t k = 0; k < n; k++)
    if (!(fabs(at(a, ao + k) - at(b, bo + k)) <= tol * (1 + fabs(at(b, bo + k)))))
      fail_msg("%s[%lld]: %.15g vs %.15g", what, (long long)k, at(a, ao + k), at(b, bo + k));
}

/* A one-step, one-layer lstm and gru equal their cells given W_ih, W_hh, b_ih, b_hh taken
 * from the packed params in the documented order. */
static void test_layer_matches_cell(void **state) {
  (void)state;
  const char *layers[] = {"lstm", "gru"}, *cells[] = {"lstm_cell", "gru_cell"};
  for (int k = 0; k < 2; k++) {
    const int lstm = k == 0, G = lstm ? 4 : 3, N = 3, I = 4, H = 5;
    opf_case L, C;
    ts_case_ready(&L, ts_op(layers[k]), OPF_F64, "x=1x3x4 hidden=5", 0, 5);
    ts_case_ready(&C, ts_op(cells[k]), OPF_F64, "x=3x4 hidden=5", 0, 5);
    const int wi = lstm ? 3 : 2;
    /* x and states, then params -> w_ih, w_hh, b */
    memcpy(C.in[0].data, L.in[0].data, sizeof(double) * N * I);
    memcpy(C.in[1].data, L.in[2].data, sizeof(double) * N * H);
    if (lstm) memcpy(C.in[2].data, L.in[3].data, sizeof(double) * N * H);
    const double *p = L.in[1].data;
    memcpy(C.in[wi].data, p, sizeof(double) * G * H * I);
    memcpy(C.in[wi + 1].data, p + G * H * I, sizeof(double) * G * H * H);
    memcpy(C.in[wi + 2].data, p + G * H * (I + H), sizeof(double) * 2 * G * H);
    assert_int_equal(L.op->forward(&L), OPF_OK);
    assert_int_equal(C.op->forward(&C), OPF_OK);
    expect_same("y vs h'", &L.out[0], 0, &C.out[0], 0, N * H, 1e-13);
    expect_same("hy vs h'", &L.out[1], 0, &C.out[0], 0, N * H, 1e-13);
    if (lstm) expect_same("cy vs c'", &L.out[2], 0, &C.out[1], 0, N * H, 1e-13);
    opf_case_release(&L);
    opf_case_release(&C);
  }
}

/* The reverse direction of a bidirectional gru reads x from t = T-1 down to 0 and stores h_t
 * at t: the same as a unidirectional gru on time-reversed x with that direction's weights,
 * its outputs reversed in time. Weights: direction 1's W_ih, W_hh follow direction 0's, its
 * biases follow direction 0's biases. */
static void test_reverse_direction(void **state) {
  (void)state;
  const int64_t T = 4, N = 2, I = 3, H = 2, GH = 6, W = GH * (I + H);
  opf_case B, U;
  ts_case_ready(&B, ts_op("gru"), OPF_F64, "x=4x2x3 hidden=2 bidirectional=true", 0, 9);
  ts_case_ready(&U, ts_op("gru"), OPF_F64, "x=4x2x3 hidden=2", 0, 9);
  const double *xb = B.in[0].data, *pb = B.in[1].data, *hb = B.in[2].data;
  double *xu = U.in[0].data, *pu = U.in[1].data;
  for (int64_t t = 0; t < T; t++) memcpy(xu + t * N * I, xb + (T - 1 - t) * N * I, sizeof(double) * N * I);
  memcpy(pu, pb + W, sizeof(double) * W);                       /* direction 1's weights */
  memcpy(pu + W, pb + 2 * W + 2 * GH, sizeof(double) * 2 * GH); /* and its biases */
  memcpy(U.in[2].data, hb + N * H, sizeof(double) * N * H);     /* h0[1] */
  assert_int_equal(B.op->forward(&B), OPF_OK);
  assert_int_equal(U.op->forward(&U), OPF_OK);
  for (int64_t t = 0; t < T; t++)
    for (int64_t n = 0; n < N; n++)
      expect_same("reverse y", &B.out[0], (t * N + n) * 2 * H + H, &U.out[0],
                  ((T - 1 - t) * N + n) * H, H, 1e-13);
  expect_same("reverse hy", &B.out[1], N * H, &U.out[1], 0, N * H, 1e-13);
  opf_case_release(&B);
  opf_case_release(&U);
}

/* Gradients on 1 and 2 threads: the gate passes split N*H units between threads (rows cut
 * mid-way for N = 1), BLAS may sum in another order. */
static void test_threads(void **state) {
  (void)state;
  const char *cases[][2] = {{"lstm", "x=6x40x37 hidden=131 num_layers=2 bidirectional=true"},
                            {"gru", "x=7x1x33 hidden=4099"},
                            {"rnn_tanh", "x=5x70x21 hidden=129"},
                            {"gru_cell", "x=67x33 hidden=129"}};
  const int saved = omp_get_max_threads();
  for (int k = 0; k < 4; k++) {
    const opf_op *op = ts_op(cases[k][0]);
    opf_case c[2];
    for (int t = 0; t < 2; t++) {
      omp_set_num_threads(t + 1);
      ts_case_ready(&c[t], op, OPF_F64, cases[k][1], 1, 3);
      assert_int_equal(op->forward(&c[t]), OPF_OK);
      assert_int_equal(op->backward(&c[t]), OPF_OK);
    }
    for (int i = 0; i < op->n_out; i++)
      expect_same(op->out[i], &c[0].out[i], 0, &c[1].out[i], 0, opf_numel(&c[0].out[i]), 1e-12);
    for (int i = 0; i < op->n_in; i++)
      if (c[0].gin[i].data)
        expect_same(op->in[i].name, &c[0].gin[i], 0, &c[1].gin[i], 0, opf_numel(&c[0].gin[i]), 1e-10);
    opf_case_release(&c[0]);
    opf_case_release(&c[1]);
  }
  omp_set_num_threads(saved);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_layers),   cmocka_unit_test(test_golden_cells),
      cmocka_unit_test(test_derived_shapes),  cmocka_unit_test(test_layer_errors),
      cmocka_unit_test(test_cell_errors),     cmocka_unit_test(test_layer_matches_cell),
      cmocka_unit_test(test_reverse_direction), cmocka_unit_test(test_threads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
