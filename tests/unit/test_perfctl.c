/* test_perfctl.c: perf record's control protocol against a fake perf: a thread that holds the
 * control and ack fifos as perf does, logs each command with its arrival time and acknowledges
 * it. A real measurement with the hooks must send exactly one enable/disable pair per measured
 * sample, enable before the sample starts and disable after it ends, nothing during warm-up or
 * calibration; plus the error paths (bad specs, no reader, no ack). */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "opperf/perfctl.h"
#include "test_support.h"

#define MAX_CMDS 20000

typedef struct fake_perf {
  char ctl[256], ack[256];
  int ctl_fd, ack_fd;
  int answer;            /* 0: never acknowledge (timeout test) */
  volatile int stop;
  int n;
  char cmd[MAX_CMDS];    /* 'e' enable, 'd' disable, '?' anything else */
  double at[MAX_CMDS];   /* opf_now() when the command arrived */
  pthread_t th;
} fake_perf;

static void *fake_main(void *arg) {
  fake_perf *p = arg;
  char line[64];
  size_t n = 0;
  while (!p->stop) {
    struct pollfd pf = {p->ctl_fd, POLLIN, 0};
    if (poll(&pf, 1, 20) <= 0) continue;
    char ch;
    while (read(p->ctl_fd, &ch, 1) == 1) {
      if (ch != '\n') {
        if (n < sizeof line - 1) line[n++] = ch;
        continue;
      }
      line[n] = '\0';
      n = 0;
      if (p->n < MAX_CMDS) {
        p->at[p->n] = opf_now();
        p->cmd[p->n++] = !strcmp(line, "enable") ? 'e' : !strcmp(line, "disable") ? 'd' : '?';
      }
      if (p->answer && write(p->ack_fd, "ack\n", 5) != 5) return NULL; /* with perf's NUL */
    }
  }
  return NULL;
}

static void fake_start(fake_perf *p, int answer) {
  memset(p, 0, sizeof *p);
  snprintf(p->ctl, sizeof p->ctl, "/tmp/opperf-perfctl-%d-ctl", (int)getpid());
  snprintf(p->ack, sizeof p->ack, "/tmp/opperf-perfctl-%d-ack", (int)getpid());
  unlink(p->ctl);
  unlink(p->ack);
  assert_int_equal(mkfifo(p->ctl, 0600), 0);
  assert_int_equal(mkfifo(p->ack, 0600), 0);
  /* As perf does: both ends open read-write and non-blocking. */
  p->ctl_fd = open(p->ctl, O_RDWR | O_NONBLOCK);
  p->ack_fd = open(p->ack, O_RDWR | O_NONBLOCK);
  assert_true(p->ctl_fd >= 0 && p->ack_fd >= 0);
  p->answer = answer;
  assert_int_equal(pthread_create(&p->th, NULL, fake_main, p), 0);
}

static void fake_stop(fake_perf *p) {
  p->stop = 1;
  pthread_join(p->th, NULL);
  close(p->ctl_fd);
  close(p->ack_fd);
  unlink(p->ctl);
  unlink(p->ack);
}

static void test_commands_bracket_samples(void **state) {
  (void)state;
  fake_perf fp;
  fake_start(&fp, 1);
  char spec[600];
  snprintf(spec, sizeof spec, "fifo:%s,%s", fp.ctl, fp.ack);
  opf_perfctl pc;
  opf_err e;
  assert_int_equal(opf_perfctl_open(&pc, spec, &e), OPF_OK);
  opf_hook_chain chain = {0};
  opf_region_hooks h = opf_perfctl_hooks(&pc);
  assert_int_equal(opf_hook_chain_add(&chain, &h), OPF_OK);
  opf_region_hooks all = opf_hook_chain_hooks(&chain);

  opf_settings s;
  opf_settings_default(&s);
  s.warmup = 0.01;
  s.min_time = 0.02;
  s.max_time = 0.2;
  s.threads = 1;
  s.hooks = &all;
  opf_case c;
  assert_int_equal(opf_case_init(&c, ts_op("relu"), OPF_F32, "x=4096", &e), OPF_OK);
  opf_result r;
  double before = opf_now();
  assert_int_equal(opf_measure(&s, &c, "small", OPF_PASS_FWD, NULL, &r), OPF_OK);
  assert_int_equal(r.status, OPF_ST_OK);
  assert_int_equal(pc.err.code, 0);
  opf_perfctl_close(&pc);
  fake_stop(&fp);

  /* Exactly one enable/disable pair per measured sample: warm-up and calibration ran too
   * (thousands of calls) but sent nothing. */
  assert_true(r.n_samples >= 5);
  assert_int_equal(fp.n, 2 * r.n_samples);
  assert_int_equal(pc.commands, 2 * r.n_samples);
  assert_true(fp.at[0] > before);
  for (int i = 0; i < r.n_samples; i++) {
    double start = r.sample_start[i], end = start + r.samples[i] * (double)r.batch;
    assert_int_equal(fp.cmd[2 * i], 'e');
    assert_int_equal(fp.cmd[2 * i + 1], 'd');
    /* Acknowledged before the sample's clock started; sent after it stopped. */
    if (!(fp.at[2 * i] <= start)) fail_msg("sample %d: enable at %.9f after the start %.9f", i, fp.at[2 * i], start);
    if (!(fp.at[2 * i + 1] >= end)) fail_msg("sample %d: disable at %.9f before the end %.9f", i, fp.at[2 * i + 1], end);
    if (i + 1 < r.n_samples) assert_true(fp.at[2 * i + 1] <= r.sample_start[i + 1]);
  }
  opf_result_release(&r);
}

/* Hooks in a chain: begin in order, end in reverse (the first added brackets the others). */
static char order[16];
static int n_order;
static void b1(void *c) { (void)c; order[n_order++] = 'A'; }
static void e1(void *c) { (void)c; order[n_order++] = 'a'; }
static void b2(void *c) { (void)c; order[n_order++] = 'B'; }
static void e2(void *c) { (void)c; order[n_order++] = 'b'; }

static void test_chain_order(void **state) {
  (void)state;
  opf_hook_chain ch = {0};
  opf_region_hooks h1 = {b1, e1, NULL, NULL}, h2 = {b2, e2, NULL, NULL};
  assert_int_equal(opf_hook_chain_add(&ch, &h1), OPF_OK);
  assert_int_equal(opf_hook_chain_add(&ch, &h2), OPF_OK);
  opf_region_hooks all = opf_hook_chain_hooks(&ch);
  all.sample_begin(all.ctx);
  all.sample_end(all.ctx);
  all.case_end(all.ctx, NULL); /* members without case_end are skipped */
  assert_int_equal(n_order, 4);
  assert_memory_equal(order, "ABba", 4);
  for (int i = 2; i < OPF_MAX_HOOKS; i++) assert_int_equal(opf_hook_chain_add(&ch, &h1), OPF_OK);
  assert_int_equal(opf_hook_chain_add(&ch, &h1), OPF_EINVAL); /* full */
}

static void test_bad_specs(void **state) {
  (void)state;
  opf_perfctl pc;
  opf_err e;
  const char *bad[] = {"", "fifo", "pipe:a,b", "fifo:", "fifo:a,", "fd:x,1", "fd:3,-1", "fd:", NULL};
  for (int i = 0; bad[i]; i++) {
    if (opf_perfctl_open(&pc, bad[i], &e) != OPF_EINVAL) fail_msg("spec '%s' accepted", bad[i]);
    assert_true(strlen(e.msg) > 10);
  }
  /* Well-formed, but nothing there. */
  assert_int_equal(opf_perfctl_open(&pc, "fd:987,988", &e), OPF_EIO);
  assert_non_null(strstr(e.msg, "not open"));
  assert_int_equal(opf_perfctl_open(&pc, "fifo:/nonexistent/opperf-ctl,/nonexistent/ack", &e), OPF_EIO);
  /* A fifo nobody reads: perf is not running with it. */
  char path[] = "/tmp/opperf-perfctl-noreader";
  unlink(path);
  assert_int_equal(mkfifo(path, 0600), 0);
  char spec[64];
  snprintf(spec, sizeof spec, "fifo:%s", path);
  assert_int_equal(opf_perfctl_open(&pc, spec, &e), OPF_EIO);
  assert_non_null(strstr(e.msg, "no reader"));
  unlink(path);
}

static void test_no_ack(void **state) {
  (void)state;
  fake_perf fp;
  fake_start(&fp, 0);
  char spec[600];
  snprintf(spec, sizeof spec, "fifo:%s,%s", fp.ctl, fp.ack);
  opf_perfctl pc;
  opf_err e;
  assert_int_equal(opf_perfctl_open(&pc, spec, &e), OPF_OK);
  pc.ack_timeout = 0.2;
  assert_int_equal(opf_perfctl_send(&pc, "enable", &e), OPF_EIO);
  assert_non_null(strstr(e.msg, "no ack"));
  /* Through the hooks: the first failure is kept and nothing more is sent. */
  opf_region_hooks h = opf_perfctl_hooks(&pc);
  h.sample_begin(h.ctx);
  h.sample_end(h.ctx);
  assert_int_equal(pc.err.code, OPF_EIO);
  opf_perfctl_close(&pc);
  fake_stop(&fp);
  assert_int_equal(fp.n, 2); /* the direct send and the first hook's; the second was not sent */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_commands_bracket_samples),
      cmocka_unit_test(test_chain_order),
      cmocka_unit_test(test_bad_specs),
      cmocka_unit_test(test_no_ack),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
