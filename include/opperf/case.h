/* case.h: cases, an operator resolved on shapes, params and dtype (src/case.c, src/fused.c):
 * parsing and inference, allocation and inputs, calling a pass, the reference check
 * (src/check.c), random specs (src/random_shapes.c) and tensor comparison. */
#ifndef OPPERF_CASE_H
#define OPPERF_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "opperf/op.h"

/* Parse spec ("x=1024x1024 axis=0 bias=none"), apply param defaults, call infer. No allocation. */
int opf_case_init(opf_case *c, const opf_op *op, opf_dtype dt, const char *spec, opf_err *err);
/* Run the case's OPF_IMPL_UNFUSED chain instead of its kernels (operators with .unfused);
 * checks the chain resolves on the case's shapes (OPF_EINVAL / OPF_EUNSUPPORTED otherwise).
 * An id from opf_impl_register runs that implementation's kernels (OPF_EUNSUPPORTED when it
 * is not one of c->op's). */
int opf_case_set_impl(opf_case *c, int impl, opf_err *err);
/* Bytes the case will allocate: inputs, outputs, workspace; with_grad adds gout and gin. */
uint64_t opf_case_footprint(const opf_case *c, int with_grad);
int opf_case_alloc(opf_case *c, int with_grad, opf_err *err);
/* Generate inputs (and output gradients when allocated) from the seed. */
int opf_case_fill(opf_case *c, uint64_t seed, opf_err *err);
void opf_case_release(opf_case *c);
/* Canonical spec of the resolved case: every present input's shape, then every param. */
char *opf_case_spec_str(const opf_case *c, char *buf, size_t n);
/* "name=value" of param i of a resolved case, as a user would write it; returns its length. */
int opf_case_param_str(const opf_case *c, int i, char *buf, size_t n);
/* Only the params that differ from the operator's defaults ("axis=0 keepdims=true"). */
char *opf_case_params_str(const opf_case *c, char *buf, size_t n);
/* Does the case have a backward pass (a backward kernel and at least one float output)? */
int opf_case_has_backward(const opf_case *c);
/* Does input i get a gradient in this case (differentiable, present, floating point)? */
int opf_case_wants_grad(const opf_case *c, int i);
/* Gradient views (src/gradview.c; op.h, opf_view): with output gradients allocated, make
 * c->gin[i] the view of every input whose gradient is one (opf_case_grad_view) and record it
 * in c->gview; returns how many. opf_case_alloc calls it. */
int opf_case_grad_views_bind(opf_case *c);
/* "a:alias b:alias", "x:broadcast": the inputs whose gradients are views in this case and of
 * which kind; returns their count ("" and 0: none). */
int opf_case_grad_views(const opf_case *c, char *buf, size_t n);
/* Run one pass once (used by the harness and the tests). */
int opf_case_call(opf_case *c, opf_pass p);
/* A valid random spec for op (--random-shapes): draw `index` of the stream under seed, made
 * by rescaling one of the operator's standard/skewed/small entries and checked with infer.
 * Same seed and index, same spec. OPF_EUNSUPPORTED when no draw is valid. */
int opf_random_spec(const opf_op *op, opf_dtype dt, uint64_t seed, int index, char *spec,
                    size_t n, opf_err *err);
/* The reference check (src/check.c): c (initialised, not allocated) runs its implementation's
 * forward once on inputs from seed, the operator's reference runs on the same inputs, and
 * every output is compared within opf_case_tolerance. OPF_OK when they agree; OPF_EKERNEL
 * with the first differing element (or a failing kernel) in err. */
int opf_case_check_reference(const opf_case *c, uint64_t seed, opf_err *err);
/* --check for bwd and both: when the native case hands gradients back as views (op.h,
 * opf_view), run it and implementation materialize forward and backward on inputs from seed,
 * and compare each view, element by element through its strides, with the written gradient.
 * OPF_OK when they agree (or no gradient is a view); OPF_EKERNEL with the first differing
 * element otherwise. */
int opf_case_check_grad_views(const opf_case *c, uint64_t seed, opf_err *err);
/* Relative tolerance against the reference: float64 1e-9, float32 op->tol (default 1e-4). */
double opf_case_tolerance(const opf_case *c);
/* Row-major element k of a tensor as a double (a view: through its strides). */
double opf_tensor_get(const opf_tensor *t, int64_t k);
/* 0 when got matches want within rtol (relative to each element plus the mean magnitude;
 * integers exact, NaN matches NaN); else 1 and a message naming the first bad element. */
int opf_tensor_compare(const opf_tensor *got, const opf_tensor *want, double rtol, char *msg, size_t n);
/* Bytes of memory available for new allocations (MemAvailable), 0 when unknown. */
uint64_t opf_mem_available(void);

#endif
