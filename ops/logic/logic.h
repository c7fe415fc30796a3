/* logic.h: shared pieces of the comparison and logic operators (bool outputs): the binary
 * operators' kernels and descriptors over binop.h, the unary driver for logical_not, isnan,
 * isinf and isfinite (kernels, infer, reference, models), and the input generators that make
 * the results non-trivial. */
#ifndef OPPERF_LOGIC_H
#define OPPERF_LOGIC_H

#include "binary/binop.h"

/* y[k] = EL(x[k]) as a bool, over the two-operand plan {y, x} (contiguous and same-shaped,
 * so bcast.h merges it into one dim split across threads). The compare-to-mask-to-byte loops
 * vectorise (AVX-512: vcmp into a mask, masked byte store of ones). */
#define LG_UNARY(NAME, TX, EL)                                                                \
  OPF_VEC static void NAME(void *const *p, const int64_t *s, const int64_t *os, int64_t rows, \
                           int64_t n, int first) {                                            \
    (void)s, (void)first;                                                                     \
    for (int64_t r = 0; r < rows; r++) {                                                      \
      uint8_t *restrict y = (uint8_t *)p[0] + r * os[0];                                      \
      const TX *restrict x = (const TX *)p[1] + r * os[1];                                    \
      for (int64_t k = 0; k < n; k++) y[k] = EL(x[k]);                                        \
    }                                                                                         \
  }

/* A bool-output binary operator NAME from a type-generic element function EL (a macro):
 * kernels for the numeric dtypes and bool, its references, bo_impl and entry points. Models:
 * one operation per output element; a and b read, one byte written. */
#define LG_BINARY(NAME, EL)                                                                   \
  BO_MAP_NUMERIC(fwd_##NAME, uint8_t, uint8_t, uint8_t, uint8_t, EL)                          \
  BO_MAP(fwd_##NAME##_b8, uint8_t, uint8_t, EL)                                               \
  static double ref_##NAME(double a, double b) { return EL(a, b); }                           \
  static int64_t ref_##NAME##_i(int64_t a, int64_t b) { return EL(a, b); }                    \
  static const bo_impl NAME##_impl = {                                                        \
      .fwd = {fwd_##NAME##_f32, fwd_##NAME##_f64, fwd_##NAME##_i32, fwd_##NAME##_i64,         \
              fwd_##NAME##_b8},                                                               \
      .ref_f = ref_##NAME, .ref_i = ref_##NAME##_i, .fwd_ops = 1};                            \
  BO_FWD_ENTRIES(NAME, NAME##_impl, bo_forward)
#define LG_BINARY_OP(NAME, INPUT_A, INPUT_B, SUMMARY)                                         \
  .abi = OPF_OP_ABI, .name = #NAME, .category = "logic", .summary = SUMMARY,                  \
  .dtypes = OPF_DT_ALL | OPF_DT_BOOL, .n_in = 2, .in = {INPUT_A, INPUT_B}, .n_out = 1,        \
  .out = {"y"}, .shapes = BO_SHAPES, .infer = bo_infer_bool, BO_FWD_HOOKS(NAME)

typedef struct lg_unary {
  bc_kernel fwd[OPF_NDTYPES];     /* by input dtype */
  int (*ref_f)(double x);         /* reference for float inputs */
  int (*ref_i)(int64_t x);        /* reference for integer and bool inputs */
} lg_unary;

static inline int lg_unary_infer(opf_case *c) {
  if (c->in[0].ndim >= 0) opf_set_out(c, 0, OPF_BOOL, c->in[0].ndim, c->in[0].shape);
  return OPF_OK;
}

static inline int lg_unary_forward(opf_case *c, const lg_unary *u) {
  const opf_tensor *t[2] = {&c->out[0], &c->in[0]};
  bc_plan p;
  bc_plan_init(&p, c->out[0].ndim, c->out[0].shape, 2, t);
  void *base[2] = {c->out[0].data, c->in[0].data};
  bc_run(&p, u->fwd[c->dtype], base, NULL);
  return OPF_OK;
}

static inline int lg_unary_reference(opf_case *c, const lg_unary *u) {
  const opf_tensor *x = &c->in[0];
  const int64_t n = opf_numel(x);
  uint8_t *y = c->out[0].data;
  for (int64_t i = 0; i < n; i++)
    y[i] = (uint8_t)(opf_dtype_is_float(x->dtype) ? u->ref_f(bo_getf(x, i))
                                                  : u->ref_i(bo_geti(x, i)));
  return OPF_OK;
}

/* One test per element; x read, one byte written. Forward only (no backward). */
static inline double lg_unary_flops(const opf_case *c, opf_pass p) {
  return opf_pass_sum(p, (double)opf_numel(&c->in[0]), 0);
}
static inline double lg_unary_bytes(const opf_case *c, opf_pass p) {
  const double n = (double)opf_numel(&c->in[0]);
  return opf_pass_sum(p, n * ((double)opf_dtype_size(c->in[0].dtype) + 1), n);
}

#define LG_UNARY_ENTRIES(NAME, IMPL)                                                          \
  static int NAME##_forward(opf_case *c) { return lg_unary_forward(c, &IMPL); }               \
  static int NAME##_reference(opf_case *c) { return lg_unary_reference(c, &IMPL); }
#define LG_UNARY_OP(NAME, DTYPES, INPUT, SUMMARY)                                             \
  .abi = OPF_OP_ABI, .name = #NAME, .category = "logic", .summary = SUMMARY,                  \
  .dtypes = DTYPES, .n_in = 1, .in = {INPUT}, .n_out = 1, .out = {"y"},                       \
  .shapes = LG_UNARY_SHAPES, .infer = lg_unary_infer, .forward = NAME##_forward,              \
  .reference = NAME##_reference, .flops = lg_unary_flops, .bytes = lg_unary_bytes

/* OPERATORS.md's elementwise inputs. */
#define LG_UNARY_SHAPES                                                                       \
  {{"standard", "x=1024x1024"},                                                               \
   {"skewed", "x=10000x10"},                                                                  \
   {"skewed", "x=10x10000"},                                                                  \
   {"skewed", "x=10000x1"},                                                                   \
   {"skewed", "x=100000x10"},                                                                 \
   {"small", "x=16x16"},                                                                      \
   {"small", "x=1x1024"},                                                                     \
   {"small", "x=37x3"},                                                                       \
   {"small", "x=()"},                                                                         \
   {"test", "x=301x517"},                                                                     \
   {"large", "x=8192x8192"},                                                                  \
   {"huge", "x=46341x46341"}}

/* Values -1, 0, 1 (integer-valued in every dtype; bool: a third false): truth values that
 * are really mixed, where a uniform float draw would be nonzero everywhere. */
static inline int lg_fill_truth(opf_case *c, int i, opf_rng *r) {
  (void)r;
  bo_fill_int_valued(c, i, -1, 2);
  return OPF_OK;
}

#endif
