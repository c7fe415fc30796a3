/* plugin.h: everything an opperf plugin needs. A plugin is a shared library whose exported
 * descriptors (OPPERF_PLUGIN_OP below) opperf finds by scanning its dynamic symbol table for
 * the prefix "opperf_plugin_op_"; `opperf run --plugin ./libmine.so ...` loads it. See
 * examples/plugin/README.md for a worked example and the build line. */
#ifndef OPPERF_PLUGIN_H
#define OPPERF_PLUGIN_H

/* The descriptor and case types (op.h), tensors and the tracked allocator (tensor.h), errors
 * (error.h). Plugins may call the functions these headers declare (opf_case_error,
 * opf_case_param, opf_numel, opf_tensor_set_shape, opf_fill_uniform, opf_alloc, ...): the
 * opperf executable exports them. ops/opf_kernel.h (OPF_VEC, opf_parallel_range) is internal:
 * a plugin uses OpenMP or target attributes directly. */
#include "opperf/error.h"
#include "opperf/op.h"
#include "opperf/tensor.h"

/* The documented prefix: every defined dynamic symbol starting with it must be an opf_op. */
#define OPPERF_PLUGIN_PREFIX "opperf_plugin_op_"

/* Define an exported descriptor: `OPPERF_PLUGIN_OP(myop) = { .abi = OPF_OP_ABI, ... };`.
 * Two kinds (op.h):
 *  - a new operator: like a built-in descriptor. Required: abi = OPF_OP_ABI, name (new,
 *    [a-z0-9_]), category, summary, dtypes, inputs/outputs, infer, forward, reference, and
 *    "standard" and "small" shape sets; optional backward, flops, bytes, params, tol.
 *  - another implementation of a registered operator: .implements = "relu", .name = the
 *    implementation's name ("example": the impl column, `--impl native,example`), forward
 *    (required) and backward (optional; only where the operator has one), nothing else. It
 *    runs on the operator's cases: same inputs, params, outputs, workspace (c->ws of the
 *    operator's ws_bytes) and reference, so `opperf run --check` verifies it against
 *    opperf's own reference.
 * opperf rejects the whole plugin (exit 2) when a descriptor has another ABI version, misses a
 * required hook or fails the registry's self-check, or when the library has no descriptor.
 * Kernels must not print, exit or keep global state between calls (they may run in a child
 * process per case); allocate through opf_alloc so memory figures stay true. */
#define OPPERF_PLUGIN_OP(id) \
  extern __attribute__((visibility("default"))) const opf_op opperf_plugin_op_##id; \
  __attribute__((visibility("default"))) const opf_op opperf_plugin_op_##id

#endif
