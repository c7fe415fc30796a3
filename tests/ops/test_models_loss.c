/* test_models_loss.c: the loss family (ops/loss/): golden flops and bytes (derived by hand
 * below), the infer and data error paths, and what the generic driver cannot see: a CTC loss
 * and gradient computed by hand, zero_infinity, PyTorch's CTC mean, nll_loss's ignore_index,
 * nll_loss(log_softmax) equal to softmax_cross_entropy (the fused chain), and reductions that
 * do not depend on the thread count. */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "test_support.h"

static void test_golden_pointwise(void **state) {
  (void)state;
  /* Pointwise losses, float32, n elements: flops fwd = n (per-element cost + 1 for the
   * reduction's add; none: no add), bwd = n * per-element cost. Bytes fwd = 2n*4 (a, b) + the
   * loss (4 or 4n); bwd = 2n*4 + the loss gradient + 4n per differentiable input.
   * (1024,1024): n = 1048576, 4n = 4194304. l1: 2 + 1 and 3 per element: 3145728 both;
   * bytes 8388608 + 4 = 8388612 and 8388608 + 4 + 8388608 = 16777220. */
  ts_expect_models("l1_loss", OPF_F32, "pred=1024x1024", 3145728, 3145728, 8388612, 16777220);
  /* smooth_l1 (beta 1) runs the huber kernel: 5 + 1, 4 per element */
  ts_expect_models("smooth_l1_loss", OPF_F32, "pred=1024x1024", 6291456, 4194304, 8388612, 16777220);
  /* beta 0 is plain l1 */
  ts_expect_models("smooth_l1_loss", OPF_F32, "pred=1024x1024 beta=0", 3145728, 3145728, 8388612, 16777220);
  /* huber, none: 5 and 4 per element; the loss is 4n bytes: fwd 3 * 4194304 = 12582912,
   * bwd 2*4194304 + 4194304 + 2*4194304 = 20971520 */
  ts_expect_models("huber_loss", OPF_F32, "pred=1024x1024 reduction=none", 5242880, 4194304, 12582912, 20971520);
  /* (32,1000): n = 32000, 4n = 128000. bce: 7 + 1 and 6; bytes 256004 and 512004 */
  ts_expect_models("sigmoid_binary_cross_entropy", OPF_F32, "logits=32x1000", 256000, 192000, 256004, 512004);
  /* kl_div batchmean: 4 + 1 and 4; log_target: 3 + 1 and 5 */
  ts_expect_models("kl_div", OPF_F32, "x=32x1000 reduction=batchmean", 160000, 128000, 256004, 512004);
  ts_expect_models("kl_div", OPF_F32, "x=32x1000 log_target=1", 128000, 160000, 256004, 512004);
  /* poisson_nll log input: 3 + 1 and 3 per element; rate input: 4 + 1 and 5 */
  ts_expect_models("poisson_nll_loss", OPF_F32, "pred=1024x1024", 4194304, 3145728, 8388612, 16777220);
  ts_expect_models("poisson_nll_loss", OPF_F32, "pred=1024x1024 log_input=0", 5242880, 5242880, 8388612, 16777220);
  /* margin losses: only pred is differentiable, bwd writes 4n once: 256000 + 4 + 128000 =
   * 384004. hinge 3 + 1 and 3; squared 4 + 1 and 4; logistic 7 + 1 and 7 */
  ts_expect_models("hinge_loss", OPF_F32, "pred=32x1000", 128000, 96000, 256004, 384004);
  ts_expect_models("squared_hinge_loss", OPF_F32, "pred=32x1000", 160000, 128000, 256004, 384004);
  ts_expect_models("logistic_loss", OPF_F32, "pred=32x1000", 256000, 224000, 256004, 384004);
}

static void test_golden_rows(void **state) {
  (void)state;
  /* triplet (1024,1024) p = 2: fwd 4 per element and distance, 2 distances: 8 * 1048576 =
   * 8388608, + 6 per row (6144) = 8394752; bwd 9 per element = 9437184. Bytes: an input is
   * 4194304; fwd 3 inputs + loss 4 = 12582916; bwd 3 inputs read, 3 gradients written, + 4 =
   * 25165828. */
  ts_expect_models("triplet_loss", OPF_F32, "anchor=1024x1024", 8394752, 9437184, 12582916, 25165828);
  /* swap: 3 distances (12 per element: 12582912 + 6144); other p: 7 per element and distance
   * fwd, 9 + 2 * 5 bwd (19922944) */
  ts_expect_models("triplet_loss", OPF_F32, "anchor=1024x1024 swap=1", 12589056, 9437184, 12582916, 25165828);
  ts_expect_models("triplet_loss", OPF_F32, "anchor=1024x1024 p=3", 14686208, 19922944, 12582916, 25165828);
  /* cosine (1024,1024): fwd 6 per element + 8 per row = 6291456 + 8192 = 6299648; bwd 6 per
   * element. Bytes: x1, x2 (4194304 each), labels 4096, loss 4: fwd 8392708; bwd 4 * 4194304 +
   * 4100 = 16781316. */
  ts_expect_models("cosine_embedding_loss", OPF_F32, "x1=1024x1024", 6299648, 6291456, 8392708, 16781316);
  /* nll (32,1000): fwd 2 per row (64), bwd 1 (32). Bytes fwd: 32 picked values (128) +
   * labels (256) + loss (4) = 388; bwd: dx 128000 + 256 + 4 = 128260. */
  ts_expect_models("nll_loss", OPF_F32, "x=32x1000", 64, 32, 388, 128260);
  /* ctc T=50, N=32, C=28, S=20: 50 * 32 * 41 = 65600 states: fwd 13 each = 852800, bwd 19 =
   * 1246400. Bytes: log-probabilities read min(41, 28) per frame: 1600 * 28 * 4 = 179200;
   * alphas 1600 * 41 * 4 = 262400; targets 32*20*8 + lengths 16*32 = 5632; loss 4. fwd
   * 447236; bwd + the gradient 179200 = 626436. */
  ts_expect_models("ctc_loss", OPF_F32, "log_probs=50x32x28 targets=32x20", 852800, 1246400, 447236, 626436);
}

static void test_infer_errors(void **state) {
  (void)state;
  ts_expect_einval("l1_loss", "pred=4x5 target=4x6", "same shape");
  ts_expect_einval("smooth_l1_loss", "pred=4x5 target=5x4", "same shape");
  ts_expect_einval("huber_loss", "pred=4x5 delta=0", "delta must be > 0");
  ts_expect_einval("sigmoid_binary_cross_entropy", "logits=4x5 target=20", "same shape");
  ts_expect_einval("kl_div", "x=() reduction=batchmean", "batchmean");
  ts_expect_einval("poisson_nll_loss", "pred=3 target=4", "same shape");
  ts_expect_einval("hinge_loss", "pred=8 labels=9", "same shape");
  ts_expect_einval("logistic_loss", "pred=8x2 labels=2x8", "same shape");
  ts_expect_einval("triplet_loss", "anchor=10", "2-D");
  ts_expect_einval("triplet_loss", "anchor=4x5 positive=4x6", "must have the shape");
  ts_expect_einval("triplet_loss", "anchor=4x5 negative=3x5", "must have the shape");
  ts_expect_einval("cosine_embedding_loss", "x1=4x3 x2=4x4", "must have the shape");
  ts_expect_einval("cosine_embedding_loss", "x1=4x3 labels=5", "one label per row");
  ts_expect_einval("nll_loss", "x=4", "2-D");
  ts_expect_einval("nll_loss", "x=4x5 labels=3", "one label per row");
  ts_expect_einval("nll_loss", "x=4x0", "at least one class");
  ts_expect_einval("ctc_loss", "log_probs=50x32", "3-D");
  ts_expect_einval("ctc_loss", "log_probs=50x4x1", "2 to 2^31-1 classes");
  ts_expect_einval("ctc_loss", "log_probs=50x4x28 blank=28", "blank 28");
  ts_expect_einval("ctc_loss", "log_probs=50x4x28 targets=3x10", "N = 4");
  ts_expect_einval("ctc_loss", "log_probs=50x4x28 targets=4x51", "exceeds the input length T = 50");
  ts_expect_einval("ctc_loss", "log_probs=50x4x28 input_lengths=5", "one length per sample");
  ts_expect_einval("ctc_loss", "log_probs=50x4x28 target_lengths=4x1", "one length per sample");
}

/* A ready case (inputs generated) whose forward must fail with OPF_EINVAL naming want. */
static void expect_forward_einval(opf_case *c, const char *want) {
  int rc = c->op->forward(c);
  if (rc != OPF_EINVAL) fail_msg("%s: forward returned %d, expected OPF_EINVAL", c->op->name, rc);
  if (!strstr(c->err.msg, want)) fail_msg("%s: message '%s' does not mention '%s'", c->op->name, c->err.msg, want);
  opf_case_release(c);
}

static void test_data_errors(void **state) {
  (void)state;
  opf_case c;
  ts_case_ready(&c, ts_op("nll_loss"), OPF_F32, "x=4x5", 0, 1);
  ((int64_t *)c.in[1].data)[2] = 5;
  expect_forward_einval(&c, "label 5 of row 2 is outside [0, 5)");
  ts_case_ready(&c, ts_op("ctc_loss"), OPF_F32, "log_probs=10x3x6 targets=3x4", 0, 1);
  ((int64_t *)c.in[2].data)[1] = 2, ((int64_t *)c.in[3].data)[1] = 3;
  expect_forward_einval(&c, "target_lengths[1] = 3 exceeds input_lengths[1] = 2");
  ts_case_ready(&c, ts_op("ctc_loss"), OPF_F32, "log_probs=10x3x6 targets=3x4", 0, 1);
  ((int64_t *)c.in[2].data)[0] = 11;
  expect_forward_einval(&c, "input_lengths[0] = 11 is outside [0, T = 10]");
  ts_case_ready(&c, ts_op("ctc_loss"), OPF_F32, "log_probs=10x3x6 targets=3x4 blank=2", 0, 1);
  ((int64_t *)c.in[3].data)[0] = 2, ((int64_t *)c.in[1].data)[1] = 2;
  expect_forward_einval(&c, "targets[0][1] = 2 is not a label");
}

/* CTC by hand: T = 2, one sample, C = 2 (blank 0), target [1]. Paths (1,1), (0,1), (1,0):
 * p = .4 * .7 + .6 * .7 + .4 * .3 = .82. Posteriors: label at t = 0: (.28 + .12) / .82,
 * blank at 0: .42 / .82, label at 1: .70 / .82, blank at 1: .12 / .82; with reduction sum and
 * an upstream gradient of 1 the gradient w.r.t. each log-probability is minus its posterior. */
static void test_ctc_by_hand(void **state) {
  (void)state;
  for (int d = 0; d < 2; d++) {
    opf_case c;
    ts_case_ready(&c, ts_op("ctc_loss"), d ? OPF_F64 : OPF_F32, "log_probs=2x1x2 targets=1x1 reduction=sum", 1, 1);
    const double y[4] = {.6, .4, .3, .7};
    for (int k = 0; k < 4; k++) ts_set(&c.in[0], k, log(y[k]));
    ((int64_t *)c.in[1].data)[0] = 1, ((int64_t *)c.in[2].data)[0] = 2, ((int64_t *)c.in[3].data)[0] = 1;
    ts_set(&c.gout[0], 0, 1.0);
    assert_int_equal(c.op->forward(&c), OPF_OK);
    assert_int_equal(c.op->backward(&c), OPF_OK);
    const double tol = d ? 1e-12 : 1e-5;
    assert_float_equal(ts_get(&c.out[0], 0), -log(.82), tol);
    const double post[4] = {.42 / .82, .40 / .82, .12 / .82, .70 / .82};
    for (int k = 0; k < 4; k++) assert_float_equal(ts_get(&c.gin[0], k), -post[k], tol);
    opf_case_release(&c);
  }
}

/* Repeated labels need a blank between them: target [1, 1, 1] needs 5 frames. With 4 the loss
 * is infinite, or 0 with no gradient under zero_infinity (as PyTorch); the other sample is
 * unaffected. */
static void test_ctc_zero_infinity(void **state) {
  (void)state;
  for (int z = 0; z < 2; z++) {
    opf_case c;
    ts_case_ready(&c, ts_op("ctc_loss"), OPF_F64, z ? "log_probs=4x2x3 targets=2x3 reduction=none zero_infinity=1"
                                                     : "log_probs=4x2x3 targets=2x3 reduction=none", 1, 3);
    int64_t *tg = c.in[1].data, *il = c.in[2].data, *tl = c.in[3].data;
    for (int k = 0; k < 3; k++) tg[k] = 1, tg[3 + k] = 1 + k % 2; /* [1 1 1], [1 2 1] */
    il[0] = il[1] = 4, tl[0] = tl[1] = 3;
    assert_int_equal(c.op->forward(&c), OPF_OK);
    const double l0 = ts_get(&c.out[0], 0), l1 = ts_get(&c.out[0], 1);
    if (z) assert_float_equal(l0, 0, 0);
    else assert_true(isinf(l0) && l0 > 0);
    assert_true(isfinite(l1) && l1 > 0);
    if (z) {
      assert_int_equal(c.op->backward(&c), OPF_OK);
      double g0 = 0, g1 = 0;
      for (int t = 0; t < 4; t++)
        for (int k = 0; k < 3; k++) {
          g0 += fabs(ts_get(&c.gin[0], (t * 2 + 0) * 3 + k));
          g1 += fabs(ts_get(&c.gin[0], (t * 2 + 1) * 3 + k));
        }
      assert_float_equal(g0, 0, 0);
      assert_true(g1 > 0);
    }
    opf_case_release(&c);
  }
}

/* PyTorch's CTC mean: each sample's loss divided by its target length, then averaged. */
static void test_ctc_mean(void **state) {
  (void)state;
  opf_case m, n;
  ts_case_ready(&m, ts_op("ctc_loss"), OPF_F64, "log_probs=30x5x7 targets=5x9", 0, 5);
  ts_case_ready(&n, ts_op("ctc_loss"), OPF_F64, "log_probs=30x5x7 targets=5x9 reduction=none", 0, 5);
  assert_int_equal(m.op->forward(&m), OPF_OK);
  assert_int_equal(n.op->forward(&n), OPF_OK);
  const int64_t *tl = n.in[3].data;
  double want = 0;
  for (int k = 0; k < 5; k++) want += ts_get(&n.out[0], k) / (double)(tl[k] > 1 ? tl[k] : 1) / 5;
  assert_float_equal(ts_get(&m.out[0], 0), want, 1e-12);
  opf_case_release(&m);
  opf_case_release(&n);
}

/* ignore_index: those rows cost nothing, get no gradient, and the mean is over the others. */
static void test_nll_ignore_index(void **state) {
  (void)state;
  opf_case c;
  ts_case_ready(&c, ts_op("nll_loss"), OPF_F64, "x=4x3 ignore_index=-1", 1, 2);
  int64_t *lab = c.in[1].data;
  lab[0] = 2, lab[1] = -1, lab[2] = 0, lab[3] = -1;
  ts_set(&c.gout[0], 0, 1.0);
  assert_int_equal(c.op->forward(&c), OPF_OK);
  assert_float_equal(ts_get(&c.out[0], 0), -(ts_get(&c.in[0], 2) + ts_get(&c.in[0], 6)) / 2, 1e-15);
  assert_int_equal(c.op->backward(&c), OPF_OK);
  for (int k = 0; k < 12; k++)
    assert_float_equal(ts_get(&c.gin[0], k), k == 2 || k == 6 ? -0.5 : 0, 0);
  opf_case_release(&c);
}

/* nll_loss(log_softmax(logits)) is softmax_cross_entropy(logits): the fused operator's
 * unfused chain. Loss and d logits (through log_softmax's backward) agree. */
static void test_nll_chain(void **state) {
  (void)state;
  static const char *red[3] = {"mean", "sum", "none"};
  for (int k = 0; k < 3; k++) {
    char s1[96], s2[96], s3[96];
    snprintf(s1, sizeof s1, "logits=6x9 reduction=%s", red[k]);
    snprintf(s2, sizeof s2, "x=6x9");
    snprintf(s3, sizeof s3, "x=6x9 reduction=%s", red[k]);
    opf_case f, ls, nl;
    ts_case_ready(&f, ts_op("softmax_cross_entropy"), OPF_F64, s1, 1, 9);
    ts_case_ready(&ls, ts_op("log_softmax"), OPF_F64, s2, 1, 9);
    ts_case_ready(&nl, ts_op("nll_loss"), OPF_F64, s3, 1, 9);
    memcpy(ls.in[0].data, f.in[0].data, f.in[0].nbytes);
    memcpy(nl.in[1].data, f.in[1].data, f.in[1].nbytes);
    memcpy(nl.gout[0].data, f.gout[0].data, f.gout[0].nbytes);
    assert_int_equal(f.op->forward(&f), OPF_OK);
    assert_int_equal(ls.op->forward(&ls), OPF_OK);
    memcpy(nl.in[0].data, ls.out[0].data, ls.out[0].nbytes);
    assert_int_equal(nl.op->forward(&nl), OPF_OK);
    char msg[256];
    if (ts_compare(&nl.out[0], &f.out[0], 1e-12, msg, sizeof msg)) fail_msg("loss (%s): %s", red[k], msg);
    assert_int_equal(f.op->backward(&f), OPF_OK);
    assert_int_equal(nl.op->backward(&nl), OPF_OK);
    memcpy(ls.gout[0].data, nl.gin[0].data, nl.gin[0].nbytes);
    assert_int_equal(ls.op->backward(&ls), OPF_OK);
    if (ts_compare(&ls.gin[0], &f.gin[0], 1e-12, msg, sizeof msg)) fail_msg("d logits (%s): %s", red[k], msg);
    opf_case_release(&f);
    opf_case_release(&ls);
    opf_case_release(&nl);
  }
}

/* The mean and sum reductions combine fixed blocks / rows in a fixed order: bitwise the same
 * result on 1 and 2 threads (the sizes are above every threading threshold). */
static void test_reduction_deterministic(void **state) {
  (void)state;
  static const char *cases[][2] = {{"l1_loss", "pred=300x1000 reduction=sum"},
                                   {"sigmoid_binary_cross_entropy", "logits=300x1000"},
                                   {"kl_div", "x=300x1000 reduction=batchmean"},
                                   {"triplet_loss", "anchor=300x1000 reduction=sum"},
                                   {"cosine_embedding_loss", "x1=300x1000"},
                                   {"ctc_loss", "log_probs=60x16x30 targets=16x20"}};
  const int nt = omp_get_max_threads();
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    double v[2];
    for (int t = 0; t < 2; t++) {
      omp_set_num_threads(t + 1);
      opf_case c;
      ts_case_ready(&c, ts_op(cases[k][0]), OPF_F32, cases[k][1], 0, 4);
      assert_int_equal(c.op->forward(&c), OPF_OK);
      v[t] = ts_get(&c.out[0], 0);
      opf_case_release(&c);
    }
    if (memcmp(&v[0], &v[1], sizeof v[0]))
      fail_msg("%s [%s]: %.17g on 1 thread, %.17g on 2", cases[k][0], cases[k][1], v[0], v[1]);
  }
  omp_set_num_threads(nt);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_pointwise),   cmocka_unit_test(test_golden_rows),
      cmocka_unit_test(test_infer_errors),       cmocka_unit_test(test_data_errors),
      cmocka_unit_test(test_ctc_by_hand),        cmocka_unit_test(test_ctc_zero_infinity),
      cmocka_unit_test(test_ctc_mean),           cmocka_unit_test(test_nll_ignore_index),
      cmocka_unit_test(test_nll_chain),          cmocka_unit_test(test_reduction_deterministic),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
