/* test_wire.c: the result wire format (src/wire.c): a full result survives encode/decode
 * exactly (owned arrays, counters, tensors, profile), every member of opf_result is in the
 * tables, unknown fields are skipped, and damaged messages are refused without leaks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "opperf/wire.h"

static double *dup_d(const double *v, int n) {
  double *d = malloc(sizeof *d * (size_t)n);
  memcpy(d, v, sizeof *d * (size_t)n);
  return d;
}

static void fill(opf_result *r) {
  memset(r, 0, sizeof *r);
  snprintf(r->op, sizeof r->op, "conv2d");
  snprintf(r->category, sizeof r->category, "nn.conv");
  snprintf(r->impl, sizeof r->impl, "native");
  snprintf(r->set, sizeof r->set, "standard");
  snprintf(r->spec, sizeof r->spec, "x=32x64x56x56 w=64x64x3x3");
  snprintf(r->message, sizeof r->message, "a message with \"quotes\"");
  snprintf(r->stop, sizeof r->stop, "ci");
  r->dtype = OPF_F64;
  r->pass = OPF_PASS_BWD;
  r->status = OPF_ST_OK;
  r->n_tensors = 2;
  snprintf(r->tensors[1].name, sizeof r->tensors[1].name, "w");
  snprintf(r->tensors[1].shape, sizeof r->tensors[1].shape, "64x64x3x3");
  r->tensors[1].bytes = 294912;
  r->batch = 7;
  r->n_samples = 3;
  double s[3] = {1.5e-3, 1.25e-3, 1.75e-3};
  r->samples = dup_d(s, 3);
  r->cpu_samples = dup_d(s, 3);
  r->ci_lo = 1.2e-3;
  r->ci_hi = 1.8e-3;
  r->time.n = 3;
  r->time.median = 1.5e-3;
  r->time.outliers = 1;
  r->n_reps = 2;
  r->rep_median[1] = 0.5;
  r->flops = 1e9;
  r->peak_live_bytes = UINT64_MAX - 5;
  r->n_events = 2;
  snprintf(r->events[1].name, sizeof r->events[1].name, "cycles");
  snprintf(r->events[1].reason, sizeof r->events[1].reason, "not counted: no counter free");
  r->events[1].status = OPF_EV_NOT_COUNTED;
  r->events[1].n_raw = 2;
  double raw[2] = {100.5, 200.25};
  r->events[1].raw = dup_d(raw, 2);
  r->events[1].residual = 245;
  snprintf(r->profile.event, sizeof r->profile.event, "cpu-clock");
  r->profile.n_funcs = 1;
  snprintf(r->profile.funcs[0].name, sizeof r->profile.funcs[0].name, "sgemm_kernel");
  r->profile.funcs[0].self = 0.75;
  r->folded = strdup("main;run;sgemm 12\n");
  r->folded_len = strlen(r->folded);
}

/* a filled result and its message (the set-up of most tests here) */
static void encode_filled(opf_result *a, char **buf, size_t *len) {
  opf_err e;
  fill(a);
  assert_int_equal(opf_wire_encode(a, buf, len, &e), OPF_OK);
}

static void test_round_trip(void **state) {
  (void)state;
  opf_result a, b;
  fill(&a);
  char *buf;
  size_t len, used = 0;
  opf_err e;
  assert_int_equal(opf_wire_encode(&a, &buf, &len, &e), OPF_OK);
  assert_int_equal(opf_wire_decode(buf, len, &b, &used, &e), OPF_OK);
  assert_int_equal(used, len);
  assert_string_equal(b.op, "conv2d");
  assert_string_equal(b.message, a.message);
  assert_int_equal(b.dtype, OPF_F64);
  assert_int_equal(b.pass, OPF_PASS_BWD);
  assert_int_equal(b.n_samples, 3);
  assert_memory_equal(b.samples, a.samples, 3 * sizeof(double));
  assert_memory_equal(b.cpu_samples, a.cpu_samples, 3 * sizeof(double));
  assert_null(b.sample_start);
  assert_true(b.time.median == a.time.median && b.time.outliers == 1);
  assert_true(b.rep_median[1] == 0.5 && b.n_reps == 2);
  assert_true(b.peak_live_bytes == UINT64_MAX - 5);
  assert_string_equal(b.tensors[1].shape, "64x64x3x3");
  assert_true(b.tensors[1].bytes == 294912);
  assert_int_equal(b.n_events, 2);
  assert_int_equal(b.events[1].status, OPF_EV_NOT_COUNTED);
  assert_string_equal(b.events[1].reason, "not counted: no counter free");
  assert_non_null(b.events[1].raw);
  assert_memory_equal(b.events[1].raw, a.events[1].raw, 2 * sizeof(double));
  assert_null(b.events[0].raw);
  assert_true(b.events[1].residual == 245);
  assert_string_equal(b.profile.funcs[0].name, "sgemm_kernel");
  assert_string_equal(b.folded, a.folded);
  assert_int_equal(b.folded_len, a.folded_len);
  assert_null(b.peer);
  /* Two messages back to back (a case's passes down one pipe): the first says its length. */
  char *two = malloc(2 * len);
  memcpy(two, buf, len);
  memcpy(two + len, buf, len);
  opf_result c;
  assert_int_equal(opf_wire_decode(two + used, 2 * len - used, &c, &used, &e), OPF_OK);
  assert_string_equal(c.spec, a.spec);
  opf_result_release(&c);
  free(two);
  free(buf);
  opf_result_release(&a);
  opf_result_release(&b);
}

/* A member added to opf_result (or to a struct inside it) without a wire table entry would be
 * silently lost by isolated runs: this fails until the table names it. */
static void test_every_member_listed(void **state) {
  (void)state;
  assert_int_equal(opf_wire_unlisted_bytes(), 0);
}

/* A copy of message m (len bytes) with one more field (tag, n bytes of v) at its end and the
 * header's payload length updated; *out_len its length. */
static char *with_field(const char *m, size_t len, uint16_t tag, const void *v, uint32_t n, size_t *out_len) {
  char *d = malloc(len + 6 + n);
  memcpy(d, m, len);
  memcpy(d + len, &tag, 2);
  memcpy(d + len + 2, &n, 4);
  memcpy(d + len + 6, v, n);
  uint32_t payload = (uint32_t)(len + 6 + n - OPF_WIRE_HEADER);
  memcpy(d + 8, &payload, 4);
  *out_len = len + 6 + n;
  return d;
}

/* A field of a newer sender (an unknown tag) is skipped; the rest still decodes. */
static void test_unknown_field_skipped(void **state) {
  (void)state;
  opf_result a, b;
  char *buf;
  size_t len;
  opf_err e;
  encode_filled(&a, &buf, &len);
  int zero = 0;
  size_t ml;
  char *m = with_field(buf, len, 999, &zero, sizeof zero, &ml);
  assert_int_equal(opf_wire_decode(m, ml, &b, NULL, &e), OPF_OK);
  assert_string_equal(b.op, "conv2d");
  opf_result_release(&b);
  free(m);
  free(buf);
  opf_result_release(&a);
}

/* Damage of every kind is refused with a reason, never a crash or a leak (ASan checks). */
static void test_damaged(void **state) {
  (void)state;
  opf_result a, b;
  char *buf;
  size_t len;
  opf_err e;
  encode_filled(&a, &buf, &len);
  /* every truncation */
  for (size_t cut = 0; cut < len; cut++) {
    int rc = opf_wire_decode(buf, cut, &b, NULL, &e);
    assert_int_equal(rc, OPF_EINVAL);
  }
  char *m = malloc(len);
  memcpy(m, buf, len);
  m[0] = 'X';
  assert_int_equal(opf_wire_decode(m, len, &b, NULL, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "magic"));
  memcpy(m, buf, len);
  m[4] = 9; /* version 9 */
  assert_int_equal(opf_wire_decode(m, len, &b, NULL, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "version"));
  /* flip every byte of the payload in turn: decoded or refused, never a crash */
  for (size_t i = OPF_WIRE_HEADER; i < len; i++) {
    memcpy(m, buf, len);
    m[i] ^= 0x5a;
    if (opf_wire_decode(m, len, &b, NULL, &e) == OPF_OK) opf_result_release(&b);
  }
  /* a count sent twice (the second larger, after its array): refused, the array not overrun */
  opf_result c;
  memset(&c, 0, sizeof c);
  c.n_samples = 1;
  double one = 1.0;
  c.samples = &one;
  char *cb;
  size_t cl;
  assert_int_equal(opf_wire_encode(&c, &cb, &cl, &e), OPF_OK);
  int big = 1000;
  size_t dl;
  char *d = with_field(cb, cl, 15 /* n_samples */, &big, sizeof big, &dl);
  assert_int_equal(opf_wire_decode(d, dl, &b, NULL, &e), OPF_EINVAL);
  assert_non_null(strstr(e.msg, "twice"));
  free(d);
  free(cb);
  free(m);
  free(buf);
  opf_result_release(&a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_every_member_listed),
      cmocka_unit_test(test_unknown_field_skipped),
      cmocka_unit_test(test_damaged),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
