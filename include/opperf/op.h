/* op.h: the operator descriptor and the case a kernel runs on.
 * Adding an operator touches one file in ops/<category>/: kernels plus one OPPERF_OP(name)
 * descriptor; cmake/gen_registry.cmake finds it, and tests/ops checks it against its reference
 * and its gradient against finite differences with no further registration. */
#ifndef OPPERF_OP_H
#define OPPERF_OP_H

#include <stdint.h>

#include "opperf/error.h"
#include "opperf/tensor.h"

#define OPF_MAX_IN 6
#define OPF_MAX_OUT 4
#define OPF_MAX_PARAMS 12
#define OPF_MAX_SETS 32     /* shape-set entries per operator */

typedef enum opf_pass {
  OPF_PASS_FWD = 0,  /* forward (inference) */
  OPF_PASS_BWD = 1,  /* backward, given output gradients; forward outputs already computed */
  OPF_PASS_BOTH = 2, /* forward then backward: one training step of this operator */
  OPF_NPASSES
} opf_pass;
const char *opf_pass_name(opf_pass p); /* "fwd", "bwd", "both" */

typedef struct opf_case opf_case;
typedef struct opf_rng opf_rng;

/* ---- gradient views ----
 * A backward may hand an input's gradient back as a view of an output gradient instead of
 * writing it: the incoming gradient itself (add's da), a broadcast of it (stride 0: sum's dx),
 * a narrowed or strided view (concat's pieces, stack's slices, transpose's inverse
 * permutation). A view's shape is the input's; it moves no data (a scaled gradient, mean's
 * dy / n, is not a view: it is computed). The harness builds the view tensor (c->gin[i], not
 * owned, data at the offset, these strides) once per case, and the backward leaves such an
 * input alone (opf_grad_is_view). Implementation "materialize" ignores the declaration: the
 * backward then writes every gradient into its own contiguous memory, as before. */
typedef struct opf_view {
  int of;                        /* 1 + the index of the output gradient viewed; 0: no view */
  int64_t offset;                /* elements from that gradient's first element */
  int64_t strides[OPF_MAX_DIMS]; /* per axis of the input's shape, in elements (0: broadcast) */
} opf_view;
typedef int (*opf_kernel_fn)(opf_case *c);

/* ---- inputs ---- */
#define OPF_DT_CASE (-1) /* input dtype follows the case dtype */

enum {
  OPF_IN_DIFF = 1u << 0,     /* backward produces a gradient for this input */
  OPF_IN_OPTIONAL = 1u << 1  /* may be absent (e.g. bias); "NAME=none" in a spec drops it */
};

typedef struct opf_input_desc {
  const char *name;
  int dtype;          /* OPF_DT_CASE or a fixed opf_dtype (e.g. OPF_I64 for indices) */
  unsigned flags;     /* OPF_IN_* */
  double lo, hi;      /* generated values are uniform in [lo, hi) (integers: [lo, hi)) */
  /* Optional generator for inputs with constraints (valid indices, labels, SPD matrices):
   * fill c->in[i] (already allocated) using r; may read other inputs' shapes and params. */
  int (*fill)(opf_case *c, int i, opf_rng *r);
  const char *help;
} opf_input_desc;

/* ---- params ---- */
typedef enum opf_param_type {
  OPF_P_INT,   /* integer in [min, max] */
  OPF_P_FLOAT, /* real in [min, max] */
  OPF_P_BOOL,  /* 0/1, also "true"/"false" */
  OPF_P_ENUM,  /* one of choices "a|b|c"; value is the index */
  OPF_P_AXIS,  /* integer axis in [min, max] (negative counts from the end) or "all" */
  OPF_P_LIST   /* up to OPF_MAX_DIMS integers, each in [min, max], written "2x3", "2,3" or
                * "-1,512" ("none": empty); default from .defs; value in c->list[i], and
                * c->p[i] holds the count (target shapes, reps, pads, begin/end/step) */
} opf_param_type;

typedef struct opf_list {
  int n;
  int64_t v[OPF_MAX_DIMS];
} opf_list;

#define OPF_AXIS_ALL 1000.0 /* value of an OPF_P_AXIS param set to "all" */

typedef struct opf_param_desc {
  const char *name;
  opf_param_type type;
  double def;
  double min, max;     /* inclusive range for INT/FLOAT/AXIS */
  const char *choices; /* ENUM: "name0|name1|..." */
  const char *help;
  const char *defs;    /* LIST: default list, e.g. "1,1" (NULL or "": empty) */
} opf_param_desc;

/* ---- default shapes ----
 * A shape-set entry is a spec string: space-separated NAME=VALUE items, where NAME is an input
 * ("x=1024x1024", "bias=none") or a param ("axis=0", "mode=edge"). Inputs the entry omits take
 * their shape from infer() when the descriptor allows it; params it omits take defaults.
 * Standard set names: "standard", "skewed", "small" (also what the tests run; include tiny
 * skewed and broadcast variants), "large", "huge" (opt-in, > 2^31 elements). */
typedef struct opf_shape_entry {
  const char *set;
  const char *spec;
} opf_shape_entry;

/* ---- the descriptor ---- */
typedef struct opf_op {
  unsigned abi;            /* OPF_OP_ABI */
  const char *name;
  const char *category;    /* e.g. "binary", "reduction", "nn.conv" */
  const char *summary;     /* one line */
  unsigned dtypes;         /* case dtypes supported: OPF_DT_* mask */
  int n_in;
  opf_input_desc in[OPF_MAX_IN];
  int n_out;
  const char *out[OPF_MAX_OUT];
  int n_params;
  opf_param_desc params[OPF_MAX_PARAMS];
  opf_shape_entry shapes[OPF_MAX_SETS]; /* terminated by an entry with set == NULL */

  /* Validate inputs/params and set every c->out[i] shape and dtype; may set c->ws_bytes.
   * Returns OPF_EINVAL with opf_case_error() for incompatible shapes or params. */
  int (*infer)(opf_case *c);
  opf_kernel_fn forward;   /* required. c->gin[i].data is non-NULL exactly when the case was
                            * allocated for a backward (passes bwd and both; the fwd pass has
                            * none): a forward may skip state only its backward reads (sort's
                            * permutation, global max pooling's argmax in c->ws) when the
                            * gradients it would serve are NULL */
  opf_kernel_fn backward;  /* NULL when not differentiable: fill c->gin[i] for OPF_IN_DIFF
                            * inputs from c->gout (c->in and c->out hold the forward pass) */
  opf_kernel_fn reference; /* required: naive, obviously correct forward into c->out */
  /* Work and minimum traffic models for one call of the pass (NULL: the defaults below). */
  double (*flops)(const opf_case *c, opf_pass p);
  double (*bytes)(const opf_case *c, opf_pass p);
  double tol;              /* relative tolerance vs reference for float32 (0: 1e-4) */
  /* In-place operators: inplace[j] = 1 + the index of the input that output j overwrites
   * (0: a separate output). The harness does not allocate such an output: it shares the
   * input's storage (same shape and dtype, set by infer), so repeated calls keep updating
   * it. Forward-only; the tests run the reference on a pristine copy of the inputs. */
  int inplace[OPF_MAX_OUT];
  /* Fused operators: the same computation as a chain of registered operators, e.g.
   * "conv2d x=x w=w b=b | relu x=_". Stages are separated by '|'; each names an operator and
   * binds every input it uses to an input of this operator by name, or to "_" (output 0 of
   * the previous stage); "NAME=none" drops an optional input. Other NAME=VALUE items are
   * literal params of the stage; params not given take this operator's param of the same
   * name when there is one, else the stage's default. Each input of this operator feeds at
   * most one stage, each "_" is used once, and the last stage's outputs are this operator's
   * (same shapes and dtypes). opperf runs such an operator twice, impl "native" (this
   * descriptor's kernels) and impl "unfused" (the chain, each stage its own registered
   * kernels, intermediates in separate tensors), so the fusion gain is measured on the same
   * inputs; the tests check that both give the same outputs and gradients. NULL: not fused. */
  const char *unfused;
  /* Plugins (opperf/plugin.h): the name of a registered operator this descriptor is another
   * implementation of; .name is then the implementation's name (the "impl" column, --impl),
   * and only .summary, .forward and .backward may be set: inputs, params, shapes, infer
   * (so the workspace), reference and models are the operator's. NULL: an operator. */
  const char *implements;
  /* Gradient views (see opf_view): for a differentiable input i of a resolved case (shapes and
   * params set, tensors not yet allocated; output gradients contiguous), return 1 and fill v
   * when its gradient is a view of an output gradient, else 0. Shapes and params only: the
   * same case always gets the same answer. NULL: every gradient is written. */
  int (*grad_view)(const opf_case *c, int i, opf_view *v);
} opf_op;

/* Plugins are checked against it (opperf/plugin.h): bump it whenever the layout of opf_op,
 * opf_case or opf_tensor changes, or a function plugins may call changes its meaning. */
#define OPF_OP_ABI 2u
/* Define a descriptor: `OPPERF_OP(add) = { .name = "add", ... };` (at the start of a line:
 * the registry generator looks for it there). */
#define OPPERF_OP(id) const opf_op opf_op_##id
/* A built-in alternative implementation of a built-in operator (same rules as a plugin's
 * .implements descriptor), e.g. the im2col convolution beside the default Winograd one:
 * `OPPERF_IMPL(conv2d_im2col) = { .name = "im2col", .implements = "conv2d", ... };` at the
 * start of a line; registered before any plugin's, ids from OPF_IMPL_ALT. */
#define OPPERF_IMPL(id) const opf_op opf_impl_##id

/* ---- the case: one resolved instance of an operator ---- */
struct opf_case {
  const opf_op *op;
  opf_dtype dtype;
  int present[OPF_MAX_IN];     /* 0 for an optional input that was dropped */
  opf_tensor in[OPF_MAX_IN];
  opf_tensor out[OPF_MAX_OUT];
  opf_tensor gout[OPF_MAX_OUT]; /* gradients w.r.t. outputs (backward input) */
  opf_tensor gin[OPF_MAX_IN];   /* gradients w.r.t. inputs (backward output) */
  double p[OPF_MAX_PARAMS];     /* resolved params, in descriptor order (LIST: its count) */
  opf_list list[OPF_MAX_PARAMS]; /* values of OPF_P_LIST params, in descriptor order */
  void *ws;                     /* workspace of ws_bytes, 64-byte aligned, tracked */
  size_t ws_bytes;
  void *state;                  /* free for the operator's kernels */
  uint64_t seed;
  char in_file[OPF_MAX_IN][256]; /* "NAME=@FILE.npy": the input's data comes from this file */
  opf_err err;
  /* Which kernels run: OPF_IMPL_NATIVE (the descriptor's), OPF_IMPL_UNFUSED for an operator
   * with .unfused (its chain of registered operators, built by opf_case_alloc in `chain`), or
   * an id >= OPF_IMPL_ALT from opf_impl_register (another implementation's kernels). */
  int impl;
  struct opf_chain *chain;
  /* Input gradients that are views (set by opf_case_alloc from op->grad_view; .of 0: written
   * by the backward). */
  opf_view gview[OPF_MAX_IN];
};

/* OPF_IMPL_MATERIALIZE: the native kernels with every gradient written to its own memory
 * (operators with .grad_view), to compare with the views the native implementation hands back. */
enum { OPF_IMPL_NATIVE = 0, OPF_IMPL_UNFUSED = 1, OPF_IMPL_MATERIALIZE = 2, OPF_IMPL_ALT = 3 };
#define OPF_MAX_IMPLS 32 /* implementation ids, OPF_IMPL_NATIVE .. OPF_MAX_IMPLS - 1 */
const char *opf_impl_name(int impl); /* "native", "unfused", "materialize", a registered one's */

/* Is input i's gradient a view in this (allocated) case? Backward kernels skip such inputs. */
static inline int opf_grad_is_view(const opf_case *c, int i) { return c->gview[i].of != 0; }
/* Would input i's gradient be a view in this resolved case (implementation native, the
 * operator declares it)? For the models (bytes moved) before allocation; fills v when given. */
int opf_case_grad_view(const opf_case *c, int i, opf_view *v);
/* View builders for .grad_view hooks (of output gradient `out`, contiguous; they return 1):
 * alias: the whole gradient read in input i's shape (same element count: add's same-shape
 * input, reshape); narrow: the slice of the gradient starting at index `start` of `axis`,
 * input i's extent long (concat), or with keep_axis 0 the index `start` of an axis the input
 * does not have (stack). A broadcast (sum) sets strides 0 itself. */
int opf_view_alias(const opf_case *c, int i, int out, opf_view *v);
int opf_view_narrow(const opf_case *c, int i, int out, int axis, int64_t start, int keep_axis,
                    opf_view *v);
/* "alias" (the output gradient itself), "broadcast" (some stride 0) or "strided" (narrowed,
 * permuted): what kind of view v of input i is. */
const char *opf_view_kind(const opf_case *c, int i, const opf_view *v);

int opf_case_error(opf_case *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Param by name (for infer/setup; kernels index c->p directly). */
double opf_case_param(const opf_case *c, const char *name);
/* Parse a LIST value ("2x3", "2,-1", "none") into l; OPF_EINVAL with a message when malformed. */
int opf_list_parse(const char *s, opf_list *l, opf_err *err);
/* Normalize an axis param against ndim: -1 -> ndim-1; returns -1 when out of range. */
int opf_axis(double axis, int ndim);

/* A pass's share of a model: fwd, bwd, or both (fwd + bwd). */
static inline double opf_pass_sum(opf_pass p, double fwd, double bwd) {
  return p == OPF_PASS_FWD ? fwd : p == OPF_PASS_BWD ? bwd : fwd + bwd;
}

/* Default models: one flop per output element (fwd) / per input-gradient element (bwd); bytes
 * of all inputs read and outputs written (bwd: gout + inputs + out read, gin written). */
double opf_default_flops(const opf_case *c, opf_pass p);
double opf_default_bytes(const opf_case *c, opf_pass p);

/* ---- random inputs (counter-based: value k of input i depends only on seed, i, k) ---- */
struct opf_rng {
  uint64_t key;
  uint64_t ctr;
};
void opf_rng_init(opf_rng *r, uint64_t seed, uint64_t stream);
uint64_t opf_rng_u64(opf_rng *r);
double opf_rng_uniform(opf_rng *r); /* [0, 1) */
/* Fill helpers usable from an input's fill hook (threaded, deterministic per element). */
void opf_fill_uniform(opf_tensor *t, uint64_t seed, uint64_t stream, double lo, double hi);
void opf_fill_index(opf_tensor *t, uint64_t seed, uint64_t stream, int64_t bound);

/* ---- registry ---- */
const opf_op *opf_op_find(const char *name);
int opf_op_count(void);
const opf_op *opf_op_at(int i);
/* Closest registered name by edit distance (for "did you mean"), NULL if none is close. */
const char *opf_op_suggest(const char *name);
/* Self-check of one descriptor (unique names are checked by opf_registry_check). */
int opf_op_validate(const opf_op *op, opf_err *err);
int opf_registry_check(opf_err *err);
/* Add an operator at run time (test builds, plugins): validated, name must be new. */
int opf_op_register(const opf_op *op, opf_err *err);
/* Another implementation of a registered operator (plugins; .implements above): validated
 * against the operator (kernels only, backward only where the operator has one, a name the
 * operator does not have yet); *id gets the id of its name (>= OPF_IMPL_ALT; one name may
 * implement several operators) for opf_case_set_impl. */
int opf_impl_register(const opf_op *impl, int *id, opf_err *err);
/* Implementation ids in use: OPF_IMPL_ALT + the registered ones. */
int opf_impl_count(void);
/* Is impl native, unfused or a built-in implementation (OPPERF_IMPL in ops/, not a plugin's)?
 * Built-in alternatives run only when --impl names them (or says all). */
int opf_impl_builtin(int impl);
/* The id of "native", "unfused" or a registered implementation's name; -1 when unknown. */
int opf_impl_find(const char *name);
/* The kernels (descriptor) of op's registered implementation impl, else NULL. */
const opf_op *opf_impl_kernels(const opf_op *op, int impl);
/* Does op have implementation impl (native: always; unfused: fused operators)? */
int opf_op_has_impl(const opf_op *op, int impl);

#endif
