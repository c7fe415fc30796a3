/* fault_ops.c: test-only operators for the isolation tests, linked into the `opperf_faults`
 * test executable (never into `opperf`): they crash (SIGSEGV, SIGFPE, abort) or hang in
 * forward, so `--isolate` and `--timeout` can be checked end to end on the real CLI. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "opperf/harness.h"

static int f_infer(opf_case *c) {
  opf_tensor_set_shape(&c->out[0], c->dtype, c->in[0].ndim, c->in[0].shape);
  return OPF_OK;
}
static int f_ref(opf_case *c) {
  (void)c;
  return OPF_OK;
}
static int f_segv(opf_case *c) {
  (void)c;
  raise(SIGSEGV);
  return OPF_OK;
}
static int f_fpe(opf_case *c) {
  (void)c;
  raise(SIGFPE);
  return OPF_OK;
}
static int f_abort(opf_case *c) {
  (void)c;
  abort();
  return OPF_OK;
}
static int f_hang(opf_case *c) {
  (void)c;
  for (;;) pause();
  return OPF_OK;
}

#define FAULT_OP(id, fn, what)                                                                  \
  static const opf_op id = {                                                                    \
      .abi = OPF_OP_ABI, .name = #id, .category = "test.fault", .summary = what,               \
      .dtypes = OPF_DT_FLOAT, .n_in = 1, .in = {{.name = "x", .dtype = OPF_DT_CASE}},           \
      .n_out = 1, .out = {"y"},                                                                 \
      .shapes = {{"standard", "x=16x16"}, {"small", "x=4"}},                                    \
      .infer = f_infer, .forward = fn, .reference = f_ref}

FAULT_OP(fault_segv, f_segv, "raises SIGSEGV in forward");
FAULT_OP(fault_fpe, f_fpe, "raises SIGFPE in forward");
FAULT_OP(fault_abort, f_abort, "calls abort() in forward");
FAULT_OP(fault_hang, f_hang, "never returns from forward");

__attribute__((constructor)) static void register_faults(void) {
  const opf_op *ops[] = {&fault_segv, &fault_fpe, &fault_abort, &fault_hang};
  opf_err e;
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (opf_op_register(ops[i], &e)) _exit(99); /* a broken test build: fail loudly */
}
