/* fused.h: library-internal interface of src/fused.c, the "unfused" implementation of a fused
 * operator: its descriptor's .unfused chain of registered operators, resolved into sub-cases
 * that share the fused case's inputs, outputs and gradients (see op.h, .unfused). */
#ifndef OPPERF_SRC_FUSED_H
#define OPPERF_SRC_FUSED_H

#include <stdint.h>

#include "opperf/op.h"

/* Parse c->op->unfused and resolve every stage on c's shapes and params (infer only, nothing
 * allocated). OPF_EINVAL / OPF_ENOTFOUND with a message when the chain does not fit c. */
int opf_chain_plan(const opf_case *c, struct opf_chain **out, opf_err *err);
/* Bytes the chain allocates besides the fused case's own tensors (intermediates, the stages'
 * workspaces and, with with_grad, their gradients). */
uint64_t opf_chain_footprint(const struct opf_chain *ch, int with_grad);
/* Allocate the chain's tensors and bind the stages to c's (allocated) tensors. */
int opf_chain_alloc(struct opf_chain *ch, opf_case *c, int with_grad, opf_err *err);
/* Run a pass through the stages (forward in order, backward in reverse). */
int opf_chain_call(opf_case *c, opf_pass p);
void opf_chain_free(struct opf_chain *ch);

#endif
