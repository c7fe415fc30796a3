/* validate.c: the descriptor self-check (opf_op_validate): ABI, names, required hooks, dtype
 * mask, input/output/param descriptions and defaults, and that every default shape entry
 * resolves for every dtype (and for the unfused chain of a fused operator). The registry
 * runs it on every built-in and registered operator; plugins are rejected when it fails. */
#include <stdio.h>
#include <string.h>

#include "opperf/case.h"

int opf_op_validate(const opf_op *op, opf_err *err) {
  const char *n = op->name ? op->name : "(null)";
  if (op->abi != OPF_OP_ABI)
    return opf_err_set(err, OPF_EINVAL, "%s: ABI version %u, expected %u", n, op->abi, OPF_OP_ABI);
  if (!op->name || !op->name[0] || strspn(op->name, "abcdefghijklmnopqrstuvwxyz0123456789_") !=
                                       strlen(op->name))
    return opf_err_set(err, OPF_EINVAL, "%s: name must be lower-case [a-z0-9_]", n);
  if (!op->category || !op->summary || !op->summary[0])
    return opf_err_set(err, OPF_EINVAL, "%s: category and summary are required", n);
  if (!op->forward || !op->reference || !op->infer)
    return opf_err_set(err, OPF_EINVAL, "%s: forward, reference and infer are required", n);
  if (!op->dtypes || (op->dtypes & ~(OPF_DT_ALL | OPF_DT_BOOL)))
    return opf_err_set(err, OPF_EINVAL, "%s: bad dtype mask", n);
  if (op->n_in < 0 || op->n_in > OPF_MAX_IN || op->n_out < 1 || op->n_out > OPF_MAX_OUT ||
      op->n_params < 0 || op->n_params > OPF_MAX_PARAMS)
    return opf_err_set(err, OPF_EINVAL, "%s: bad input/output/param counts", n);
  int ndiff = 0;
  for (int i = 0; i < op->n_in; i++) {
    if (!op->in[i].name) return opf_err_set(err, OPF_EINVAL, "%s: input %d has no name", n, i);
    if (op->in[i].flags & OPF_IN_DIFF) ndiff++;
  }
  if (op->backward && !ndiff)
    return opf_err_set(err, OPF_EINVAL, "%s: backward but no differentiable input", n);
  if (!op->backward && ndiff)
    return opf_err_set(err, OPF_EINVAL, "%s: differentiable inputs but no backward", n);
  if (op->grad_view && !op->backward)
    return opf_err_set(err, OPF_EINVAL, "%s: gradient views (grad_view) but no backward", n);
  for (int i = 0; i < op->n_out; i++) {
    if (!op->out[i]) return opf_err_set(err, OPF_EINVAL, "%s: output %d has no name", n, i);
    if (op->inplace[i] && (op->inplace[i] < 0 || op->inplace[i] > op->n_in || op->backward))
      return opf_err_set(err, OPF_EINVAL, "%s: in-place output '%s' needs a valid input and no backward",
                         n, op->out[i]);
  }
  for (int i = 0; i < op->n_params; i++) {
    const opf_param_desc *p = &op->params[i];
    if (!p->name || !p->help)
      return opf_err_set(err, OPF_EINVAL, "%s: param %d needs a name and help", n, i);
    if (p->type == OPF_P_ENUM) {
      int k = 1;
      for (const char *c = p->choices ? p->choices : ""; *c; c++) k += *c == '|';
      if (!p->choices || p->def < 0 || p->def >= k)
        return opf_err_set(err, OPF_EINVAL, "%s: enum param '%s' default outside its choices", n,
                           p->name);
    } else if (p->type == OPF_P_LIST) {
      opf_list l;
      opf_err e;
      if (opf_list_parse(p->defs, &l, &e))
        return opf_err_set(err, OPF_EINVAL, "%s: list param '%s' default: %s", n, p->name, e.msg);
      for (int k = 0; k < l.n; k++)
        if (l.v[k] < p->min || l.v[k] > p->max)
          return opf_err_set(err, OPF_EINVAL, "%s: list param '%s' default outside [%g, %g]", n,
                             p->name, p->min, p->max);
    } else if (p->type == OPF_P_BOOL) {
      if (p->def != 0 && p->def != 1)
        return opf_err_set(err, OPF_EINVAL, "%s: bool param '%s' default not 0/1", n, p->name);
    } else if (!(p->type == OPF_P_AXIS && p->def == OPF_AXIS_ALL) &&
               (p->def < p->min || p->def > p->max)) {
      return opf_err_set(err, OPF_EINVAL, "%s: param '%s' default %g outside [%g, %g]", n,
                         p->name, p->def, p->min, p->max);
    }
  }
  /* Every default shape entry must resolve, and the standard and small sets must exist. */
  int has_std = 0, has_small = 0;
  for (int k = 0; k < OPF_MAX_SETS && op->shapes[k].set; k++) {
    has_std |= !strcmp(op->shapes[k].set, "standard");
    has_small |= !strcmp(op->shapes[k].set, "small");
    for (int d = 0; d < OPF_NDTYPES; d++) {
      if (!(op->dtypes & OPF_DT_BIT(d))) continue;
      opf_case c;
      opf_err e;
      if (opf_case_init(&c, op, (opf_dtype)d, op->shapes[k].spec, &e))
        return opf_err_set(err, OPF_EINVAL, "%s: default %s entry '%s' (%s) is invalid: %s", n,
                           op->shapes[k].set, op->shapes[k].spec, opf_dtype_name(d), e.msg);
      if (op->unfused && opf_case_set_impl(&c, OPF_IMPL_UNFUSED, &e))
        return opf_err_set(err, OPF_EINVAL, "%s: default %s entry '%s' (%s): %s", n,
                           op->shapes[k].set, op->shapes[k].spec, opf_dtype_name(d), e.msg);
    }
  }
  if (!has_std || !has_small)
    return opf_err_set(err, OPF_EINVAL, "%s: needs 'standard' and 'small' shape sets", n);
  return OPF_OK;
}
