/* test_support.h: helpers shared by the cmocka tests: tensor comparison with dtype-aware
 * tolerances, building a ready case for an operator, counter snapshots. */
#ifndef OPPERF_TEST_SUPPORT_H
#define OPPERF_TEST_SUPPORT_H
#include <stddef.h>
#include "opperf/harness.h"

/* Compare got against want elementwise. Floats: |g-w| <= rtol * (|w| + mean|want|) and NaN
 * only where want is NaN; integers: exact. Returns 0 when equal within tolerance, else fills
 * msg with the first offending element. */
int ts_compare(const opf_tensor *got, const opf_tensor *want, double rtol, char *msg, size_t n);
/* Output 0 of a case that has run forward against the operator's reference on the same inputs
 * (computed into a tensor of its own): 0 when they agree within rtol, else msg says where. */
int ts_compare_reference(const opf_case *c, double rtol, char *msg, size_t n);
/* Measures relu on x=64x64 float32, forward, in this process with settings s into r (no
 * counters); fails the current test unless the result is ok. */
void ts_measure_small(const opf_settings *s, opf_result *r);
/* Element k of a float or integer tensor as a double (contiguous). */
double ts_get(const opf_tensor *t, int64_t k);
void ts_set(opf_tensor *t, int64_t k, double v);
/* Resolve, allocate and fill a case; fails the current test on error. */
void ts_case_ready(opf_case *c, const opf_op *op, opf_dtype dt, const char *spec, int with_grad,
                   uint64_t seed);
/* Forward and backward of name on spec in float32 against float64 on the same generated
 * inputs (the float32-only kernels the float64 checks cannot reach): the output and every
 * input gradient within rtol; fails the current test otherwise. */
void ts_check_f32(const char *name, const char *spec, double rtol);
/* The same with the float32 side run by run32 (non-zero: failed), e.g. a forced algorithm. */
void ts_check_f32_by(const char *name, const char *spec, double rtol,
                     int (*run32)(const opf_op *, opf_case *));
/* The registered operator called name; fails the current test when there is none. */
const opf_op *ts_op(const char *name);
/* opf_case_init(name, float32, spec) must fail with OPF_EINVAL and a message containing want. */
void ts_expect_einval(const char *name, const char *spec, const char *want);
/* Golden work and traffic models: flops and bytes of op name on spec for fwd and bwd must be
 * exactly these (and both the sums); fails the current test otherwise. */
void ts_expect_models(const char *name, opf_dtype dt, const char *spec, double f_fwd, double f_bwd,
                      double b_fwd, double b_bwd);
/* Shape of input idx (in != 0) or output idx of name resolved on spec (float32) must be want
 * ("AxB"). */
void ts_expect_shape(const char *name, const char *spec, int in, int idx, const char *want);
/* A counter snapshot that lives until the test process exits (freed then: no leak reports). */
opf_pmu_snap *ts_snap(void);
/* Event i's raw value (what 0), enabled (1) or running (2), summed over threads. */
uint64_t ts_raw(const opf_pmu_snap *s, size_t i, int what);
/* Threads of this process that it did not create: /proc/self/task entries minus one, when
 * called before the process starts any thread (first thing in main). qemu-user shows its own
 * RCU thread there, which per-thread counter opening then counts as one of ours. */
int ts_foreign_threads(void);
#endif
