/* rnn.h: the recurrent family (category nn.rnn): rnn_relu/rnn_tanh/lstm/gru cells (one step)
 * and sequence layers (T steps, multi-layer, bidirectional) share one engine, rnn_core.c. */

/* cuDNN's structure: a layer direction is one GEMM for the input projection of all T steps,
 * then per step one GEMM h W_hh^T and a fused vectorised gate kernel; backward through time
 * runs the gate kernels and one GEMM dG W_hh per step, then the weight gradients as big GEMMs
 * over all steps. */
#ifndef OPPERF_OPS_RNN_H
#define OPPERF_OPS_RNN_H

#include "linalg/linalg.h"

/* Gate formulas as PyTorch (and MXNet/cuDNN), gate blocks in PyTorch's order:
 *   rnn:  h' = act(W_ih x + b_ih + W_hh h + b_hh)                       (G = 1)
 *   lstm: [i f g o] = W_ih x + b_ih + W_hh h + b_hh; i,f,o sigmoid, g tanh;
 *         c' = f c + i g, h' = o tanh(c')                                (G = 4)
 *   gru:  [r z n]: r,z = sigmoid(W_i{r,z} x + b_i{r,z} + W_h{r,z} h + b_h{r,z}),
 *         n = tanh(W_in x + b_in + r (W_hn h + b_hn)), h' = (1 - z) n + z h   (G = 3) */
typedef enum rnn_kind { RNN_RELU = 0, RNN_TANH = 1, RNN_LSTM = 2, RNN_GRU = 3 } rnn_kind;

static inline int rnn_ngates(rnn_kind k) { return k == RNN_LSTM ? 4 : k == RNN_GRU ? 3 : 1; }

#define RNN_MAX_LAYERS 16
#define RNN_MAX_LD (2 * RNN_MAX_LAYERS)

/* Geometry of a case: T steps of a batch of N, input size In, hidden size H, L layers, D
 * directions (a cell is T = L = D = 1). */
typedef struct rnn_geom {
  rnn_kind kind;
  opf_dtype dt;
  int64_t T, N, In, H;
  int L, D;
  int has_h0, has_c0, has_bias;
  int blas; /* every product by OpenBLAS (the "openblas" --impl), not linalg.h's own kernels */
} rnn_geom;

/* Input size of layer l: In, then the D*H concatenated directions of the layer below. */
static inline int64_t rnn_in_size(const rnn_geom *g, int l) { return l == 0 ? g->In : g->D * g->H; }

/* One layer direction's weights (W_ih (G*H, I_l), W_hh (G*H, H), b_ih, b_hh (G*H), a bias
 * NULL when absent) and where their gradients go (NULL: not wanted). */
typedef struct rnn_wts {
  const void *wih, *whh, *bih, *bhh;
  void *dwih, *dwhh, *dbih, *dbhh;
} rnn_wts;

/* What a case binds to the engine. States h0, c0 are (L*D, N, H) (NULL: zeros); y is
 * (T, N, D*H); hy, cy (L*D, N, H) (NULL: not produced). Backward: dy, dhy, dcy are output
 * gradients (NULL: zero); dx, dh0, dc0 input gradients (NULL: not wanted). */
typedef struct rnn_bind {
  const void *x, *h0, *c0;
  void *y, *hy, *cy;
  const void *dy, *dhy, *dcy;
  void *dx, *dh0, *dc0;
  rnn_wts w[RNN_MAX_LD]; /* layer l, direction d at l*D + d */
} rnn_bind;

/* Workspace bytes of a case (forward state kept for backward, and backward scratch). */
size_t rnn_ws_bytes(const rnn_geom *g);
int rnn_forward(const rnn_geom *g, const rnn_bind *b, void *ws);
int rnn_backward(const rnn_geom *g, const rnn_bind *b, void *ws);
/* Naive double-precision forward into b->y, hy, cy; its scratch comes from opf_alloc. */
int rnn_reference(opf_case *c, const rnn_geom *g, const rnn_bind *b);
/* Flops of one pass (GEMMs 2*M*N*K plus the gate elementwise work; see rnn_core.c). */
double rnn_flops(const rnn_geom *g, opf_pass p);
/* Fill hook for weights and biases: uniform in +-1/sqrt(H) (PyTorch's initialisation), H the
 * last dimension of the case's last output (h' / c' of a cell, hy / cy of a layer). */
int rnn_fill_weights(opf_case *c, int i, opf_rng *r);
/* Elements of a layer stack's packed params (see rnn_layer.c for the layout). */
int64_t rnn_param_count(const rnn_geom *g);

/* ---- descriptor pieces shared by the cell and layer operators ----
 * Each operator file provides PRE_infer(c, kind), PRE_run(c, kind, mode) (mode 0 forward,
 * 1 backward, 2 reference; | RNN_BLAS: every product by OpenBLAS) and PRE_flops(c, kind,
 * pass); RNN_HOOKS binds them to one kind, OPPERF_IMPL(id_openblas) = RNN_BLAS_IMPL(id) registers
 * the "openblas" --impl of operator id. */
#define RNN_BLAS 4
#define RNN_HOOKS(id, KIND, PRE)                                                               \
  static int id##_infer(opf_case *c) { return PRE##_infer(c, KIND); }                          \
  static int id##_forward(opf_case *c) { return PRE##_run(c, KIND, 0); }                       \
  static int id##_backward(opf_case *c) { return PRE##_run(c, KIND, 1); }                      \
  static int id##_blas_forward(opf_case *c) { return PRE##_run(c, KIND, RNN_BLAS); }           \
  static int id##_blas_backward(opf_case *c) { return PRE##_run(c, KIND, 1 | RNN_BLAS); }      \
  static int id##_reference(opf_case *c) { return PRE##_run(c, KIND, 2); }                     \
  static double id##_flops(const opf_case *c, opf_pass p) { return PRE##_flops(c, KIND, p); }
#define RNN_BLAS_IMPL(id)                                                                      \
  {.abi = OPF_OP_ABI, .name = "openblas", .implements = #id,                                   \
   .summary = "every product by OpenBLAS GEMM/GEMV", .forward = id##_blas_forward,            \
   .backward = id##_blas_backward}
#define RNN_COMMON(id)                                                                         \
  .abi = OPF_OP_ABI, .category = "nn.rnn", .dtypes = OPF_DT_FLOAT, .infer = id##_infer,        \
  .forward = id##_forward, .backward = id##_backward, .reference = id##_reference,             \
  .flops = id##_flops, .bytes = opf_default_bytes
/* Input descriptors: data x, an optional state (zeros when dropped), a weight tensor. */
#define RNN_IN_X(text)                                                                         \
  {.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1, .help = text}
#define RNN_IN_STATE(nm, what)                                                                 \
  {.name = nm, .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF | OPF_IN_OPTIONAL, .lo = -1, .hi = 1, \
   .help = what "; " nm "=none: zeros"}
#define RNN_IN_W(nm, flags_, what)                                                             \
  {.name = nm, .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF | (flags_), .fill = rnn_fill_weights, \
   .help = what}

#endif
