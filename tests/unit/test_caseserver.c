/* test_caseserver.c: the isolated-case server (src/caseserver.c): a child's output arrives
 * whole, a crash is reported with its signal, an exit code with its code, a hang is killed at
 * the timeout, a second Ctrl-C kills at once, and the server serves case after case from the
 * state it was forked in (a change the parent makes later is not seen by the children). */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "opperf/caseserver.h"

static int g_value = 7; /* the children see the value at the server's fork */

static int job(void *ctx, int index, int fd) {
  (void)ctx;
  char msg[64];
  switch (index) {
  case 1: signal(SIGSEGV, SIG_DFL); raise(SIGSEGV); break; /* cmocka catches it otherwise */
  case 2: for (;;) pause();
  case 3: return 3;
  case 4: { /* more than a pipe's buffer: the reader must keep reading while it writes */
    static char big[1 << 20];
    memset(big, 'x', sizeof big);
    for (size_t off = 0; off < sizeof big;) {
      ssize_t w = write(fd, big + off, sizeof big - off);
      if (w <= 0) return 1;
      off += (size_t)w;
    }
    return 0;
  }
  default: break;
  }
  int n = snprintf(msg, sizeof msg, "case %d value %d", index, g_value);
  return write(fd, msg, (size_t)n) == n ? 0 : 1;
}

static void test_server(void **state) {
  (void)state;
  opf_case_server *s;
  opf_err e;
  assert_int_equal(opf_case_server_start(&s, job, NULL, &e), OPF_OK);
  g_value = 8; /* after the fork: not the children's */
  char *out;
  size_t len;
  opf_case_exit how;
  volatile sig_atomic_t stop = 0;
  for (int round = 0; round < 3; round++) { /* the server goes on after every kind of end */
    assert_int_equal(opf_case_server_run(s, 0, 0, &stop, &out, &len, &how, &e), OPF_OK);
    assert_true(how.exited && how.code == 0);
    assert_int_equal(len, strlen("case 0 value 7"));
    assert_memory_equal(out, "case 0 value 7", len);
    free(out);

    assert_int_equal(opf_case_server_run(s, 1, 0, &stop, &out, &len, &how, &e), OPF_OK);
    assert_true(how.signaled && how.sig == SIGSEGV);
    assert_int_equal(len, 0);
    free(out);

    assert_int_equal(opf_case_server_run(s, 3, 0, &stop, &out, &len, &how, &e), OPF_OK);
    assert_true(how.exited && how.code == 3);
    free(out);

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(opf_case_server_run(s, 2, 0.3, &stop, &out, &len, &how, &e), OPF_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true(how.timed_out && how.signaled && how.sig == SIGKILL);
    assert_true((double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec) >= 0.29);
    free(out);

    assert_int_equal(opf_case_server_run(s, 4, 0, &stop, &out, &len, &how, &e), OPF_OK);
    assert_true(how.exited && how.code == 0);
    assert_int_equal(len, 1 << 20);
    free(out);
  }
  stop = 2; /* a second Ctrl-C: the hanging case is killed without a timeout */
  assert_int_equal(opf_case_server_run(s, 2, 0, &stop, &out, &len, &how, &e), OPF_OK);
  assert_true(how.interrupted && how.signaled);
  free(out);
  opf_case_server_stop(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_server)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
