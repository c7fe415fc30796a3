/* check.c: the reference check (`opperf run --check`, the tests): run a case's implementation
 * (native, unfused or a plugin's) forward once and the operator's own reference on the same
 * generated inputs, and compare every output with the tolerances the operator tests use; and
 * gradients handed back as views against the materialised ones. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "opperf/case.h"

double opf_tensor_get(const opf_tensor *t, int64_t k) {
  if (!t->owned && !opf_tensor_is_contiguous(t)) k = opf_tensor_offset(t, k); /* a view */
  switch (t->dtype) {
  case OPF_F32: return ((const float *)t->data)[k];
  case OPF_F64: return ((const double *)t->data)[k];
  case OPF_I32: return ((const int32_t *)t->data)[k];
  case OPF_I64: return (double)((const int64_t *)t->data)[k];
  case OPF_BOOL: return ((const uint8_t *)t->data)[k];
  default: return NAN;
  }
}

int opf_tensor_compare(const opf_tensor *got, const opf_tensor *want, double rtol, char *msg, size_t n) {
  int64_t ne = opf_numel(want);
  if (opf_numel(got) != ne || got->dtype != want->dtype) {
    snprintf(msg, n, "size or dtype differs (%lld vs %lld elements)", (long long)opf_numel(got),
             (long long)ne);
    return 1;
  }
  /* Relative to each element's magnitude plus the mean magnitude, so values near zero after
   * cancellation do not need an absurd relative accuracy. */
  double scale = 0;
  for (int64_t k = 0; k < ne; k++) {
    double w = opf_tensor_get(want, k);
    if (isfinite(w)) scale += fabs(w);
  }
  scale = ne ? scale / (double)ne : 0;
  for (int64_t k = 0; k < ne; k++) {
    double g = opf_tensor_get(got, k), w = opf_tensor_get(want, k);
    int bad;
    if (!opf_dtype_is_float(want->dtype)) bad = g != w;
    else if (isnan(w)) bad = !isnan(g);
    else if (isinf(w)) bad = g != w;
    else bad = !(fabs(g - w) <= rtol * (fabs(w) + scale));
    if (bad) {
      snprintf(msg, n, "element %lld: got %.9g, want %.9g (rtol %g, mean |want| %.3g)",
               (long long)k, g, w, rtol, scale);
      return 1;
    }
  }
  return 0;
}

double opf_case_tolerance(const opf_case *c) {
  return c->dtype == OPF_F64 ? 1e-9 : (c->op->tol > 0 ? c->op->tol : 1e-4);
}

/* Two copies a (implementation ia) and b (ib) of the unallocated case c, allocated (with
 * gradients when with_grad) and filled from seed. On failure nothing stays allocated and err
 * says what failed. */
static int two_copies(const opf_case *c, opf_case *a, int ia, opf_case *b, int ib, int with_grad,
                      uint64_t seed, const char *what, opf_err *err) {
  *a = *c, *b = *c;
  a->chain = b->chain = NULL;
  a->impl = ia, b->impl = ib;
  opf_err e;
  int rc = opf_case_alloc(a, with_grad, &e);
  if (!rc && (rc = opf_case_alloc(b, with_grad, &e)) != 0) opf_case_release(a);
  if (rc) return opf_err_set(err, rc, "%s: %s", what, e.msg);
  if (!(rc = opf_case_fill(a, seed, &e))) rc = opf_case_fill(b, seed, &e);
  if (rc) {
    opf_case_release(a);
    opf_case_release(b);
    return opf_err_set(err, rc, "%s: %s", what, e.msg);
  }
  return OPF_OK;
}

int opf_case_check_reference(const opf_case *c, uint64_t seed, opf_err *err) {
  /* Two copies of the unallocated case: one runs the implementation, one the reference, each
   * on its own freshly generated (identical) inputs, so an in-place kernel cannot spoil the
   * reference's inputs. */
  opf_case run, ref;
  int rc = two_copies(c, &run, c->impl, &ref, OPF_IMPL_NATIVE, 0, seed, "reference check", err);
  if (rc) return rc;
  if ((rc = opf_case_call(&run, OPF_PASS_FWD)) != 0) {
    opf_err_set(err, OPF_EKERNEL, "reference check: forward failed: %s", run.err.msg);
  } else if ((rc = c->op->reference(&ref)) != 0) {
    opf_err_set(err, OPF_EKERNEL, "reference check: the reference failed: %s", ref.err.msg);
  } else {
    char msg[256];
    for (int i = 0; i < c->op->n_out && !rc; i++)
      if (opf_tensor_compare(&run.out[i], &ref.out[i], opf_case_tolerance(c), msg, sizeof msg))
        rc = opf_err_set(err, OPF_EKERNEL, "output '%s' differs from the reference: %s",
                         c->op->out[i], msg);
  }
  opf_case_release(&run);
  opf_case_release(&ref);
  return rc;
}

int opf_case_check_grad_views(const opf_case *c, uint64_t seed, opf_err *err) {
  /* The native case hands some gradients back as views of an output gradient; materialize
   * runs the same kernels writing every gradient. Both run forward and backward on the same
   * generated inputs and output gradients, and each view is compared element by element
   * through its strides (opf_tensor_get) with the written gradient. */
  opf_case nat, mat;
  int rc = two_copies(c, &nat, OPF_IMPL_NATIVE, &mat, OPF_IMPL_MATERIALIZE, 1, seed,
                      "gradient view check", err);
  if (rc) return rc;
  if (opf_case_call(&nat, OPF_PASS_BOTH) || opf_case_call(&mat, OPF_PASS_BOTH)) {
    rc = opf_err_set(err, OPF_EKERNEL, "gradient view check: a pass failed: %s%s", nat.err.msg,
                     mat.err.msg);
  } else {
    char msg[256];
    for (int i = 0; i < c->op->n_in && !rc; i++)
      if (opf_grad_is_view(&nat, i) &&
          opf_tensor_compare(&nat.gin[i], &mat.gin[i], opf_case_tolerance(c), msg, sizeof msg))
        rc = opf_err_set(err, OPF_EKERNEL, "gradient of '%s' (a view) differs from the "
                         "materialised one: %s", c->op->in[i].name, msg);
  }
  opf_case_release(&nat);
  opf_case_release(&mat);
  return rc;
}
