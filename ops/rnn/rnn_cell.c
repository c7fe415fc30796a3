/* rnn_cell.c: one time step of the recurrent cells rnn_relu_cell, rnn_tanh_cell, lstm_cell and
 * gru_cell (PyTorch's RNNCell, LSTMCell, GRUCell: same gate order and formulas, rnn.h), with
 * gradients for x, the states, both weights and the biases; runs on the layer engine, T = 1. */

/* The biases are one input b (2, G*H), b_ih stacked on b_hh: lstm_cell's seven tensors would
 * not fit OPF_MAX_IN = 6, and one layout for all four cells is simpler to generate. */
#include "rnn/rnn.h"

enum { IN_X = 0, IN_H = 1, IN_C = 2 };
enum { P_HIDDEN = 0 };

/* w_ih, w_hh and b follow h, or lstm's c. */
static int in_wih(rnn_kind k) { return k == RNN_LSTM ? 3 : 2; }

static void cell_geom(const opf_case *c, rnn_kind k, rnn_geom *g) {
  const int lstm = k == RNN_LSTM;
  *g = (rnn_geom){.kind = k, .dt = c->dtype, .T = 1, .N = c->in[IN_X].shape[0],
                  .In = c->in[IN_X].shape[1], .H = c->out[0].shape[1], .L = 1, .D = 1,
                  .has_h0 = c->present[IN_H], .has_c0 = lstm && c->present[IN_C],
                  .has_bias = c->present[in_wih(k) + 2]};
}

/* Input i must be (r, cols) when present; a missing shape is derived. */
static int cell_matrix(opf_case *c, int i, int64_t r, int64_t cols, const char *what) {
  opf_tensor *t = &c->in[i];
  if (!c->present[i]) return OPF_OK;
  int64_t want[2] = {r, cols};
  if (t->ndim < 0) opf_tensor_set_shape(t, t->dtype, 2, want);
  if (t->ndim == 2 && t->shape[0] == r && t->shape[1] == cols) return OPF_OK;
  char s[96];
  return opf_case_error(c, OPF_EINVAL, "'%s' %s must be %s = (%lld, %lld)", c->op->in[i].name,
                        opf_shape_str(t, s, sizeof s), what, (long long)r, (long long)cols);
}

static int cell_infer(opf_case *c, rnn_kind k) {
  const int G = rnn_ngates(k), wi = in_wih(k), lstm = k == RNN_LSTM;
  const opf_tensor *x = &c->in[IN_X], *whh = &c->in[wi + 1], *h = &c->in[IN_H];
  char s[96];
  if (x->ndim < 0)
    return opf_case_error(c, OPF_EINVAL, "input 'x' needs a shape (N, input), e.g. x=32x512 hidden=512");
  if (x->ndim != 2 || x->shape[0] < 1 || x->shape[1] < 1)
    return opf_case_error(c, OPF_EINVAL, "x=%s must be (N, input) with N, input >= 1",
                          opf_shape_str(x, s, sizeof s));
  const int64_t N = x->shape[0], In = x->shape[1];
  int64_t H = (int64_t)c->p[P_HIDDEN];
  if (H == 0) { /* from the tensors that carry it */
    if (whh->ndim == 2) H = whh->shape[1];
    else if (c->present[IN_H] && h->ndim == 2) H = h->shape[1];
    else return opf_case_error(c, OPF_EINVAL, "needs hidden=H (or a w_hh or h shape)");
    if (H < 1) return opf_case_error(c, OPF_EINVAL, "hidden size 0 (from w_hh or h): needs >= 1");
  }
  const int64_t GH = G * H;
  int rc;
  if ((rc = cell_matrix(c, IN_H, N, H, "(N, hidden)")) ||
      (lstm && (rc = cell_matrix(c, IN_C, N, H, "(N, hidden)"))) ||
      (rc = cell_matrix(c, wi, GH, In, G > 1 ? "(gates*hidden, input)" : "(hidden, input)")) ||
      (rc = cell_matrix(c, wi + 1, GH, H, G > 1 ? "(gates*hidden, hidden)" : "(hidden, hidden)")) ||
      (rc = cell_matrix(c, wi + 2, 2, GH, "(2, gates*hidden): b_ih stacked on b_hh")))
    return rc;
  if ((rc = lin_check_int(c, "N", N)) || (rc = lin_check_int(c, "input", In)) ||
      (rc = lin_check_int(c, "gates*hidden", GH)))
    return rc;
  int64_t shape[2] = {N, H};
  opf_set_out(c, 0, c->dtype, 2, shape);
  if (lstm) opf_set_out(c, 1, c->dtype, 2, shape);
  rnn_geom g;
  cell_geom(c, k, &g);
  c->ws_bytes = rnn_ws_bytes(&g);
  return OPF_OK;
}

/* Pointers of the case for the engine; with grads, the gradient tensors too. */
static void cell_bind(opf_case *c, rnn_kind k, rnn_bind *b, int grads) {
  const int wi = in_wih(k), ib = wi + 2, lstm = k == RNN_LSTM;
  const size_t half = (size_t)(rnn_ngates(k) * c->out[0].shape[1]) * opf_dtype_size(c->dtype);
  memset(b, 0, sizeof *b);
  b->x = c->in[IN_X].data;
  b->h0 = c->present[IN_H] ? c->in[IN_H].data : NULL;
  b->c0 = lstm && c->present[IN_C] ? c->in[IN_C].data : NULL;
  b->y = c->out[0].data;
  b->cy = lstm ? c->out[1].data : NULL;
  rnn_wts *w = &b->w[0];
  w->wih = c->in[wi].data, w->whh = c->in[wi + 1].data;
  if (c->present[ib]) w->bih = c->in[ib].data, w->bhh = (const char *)c->in[ib].data + half;
  if (!grads) return;
  b->dy = c->gout[0].data;
  b->dcy = lstm ? c->gout[1].data : NULL;
  b->dx = c->gin[IN_X].data;
  b->dh0 = c->present[IN_H] ? c->gin[IN_H].data : NULL;
  b->dc0 = lstm && c->present[IN_C] ? c->gin[IN_C].data : NULL;
  w->dwih = c->gin[wi].data, w->dwhh = c->gin[wi + 1].data;
  if (c->present[ib] && c->gin[ib].data) w->dbih = c->gin[ib].data, w->dbhh = (char *)c->gin[ib].data + half;
}

/* mode 0 forward, 1 backward, 2 reference (| RNN_BLAS: OpenBLAS products) */
static int cell_run(opf_case *c, rnn_kind k, int mode) {
  rnn_geom g;
  rnn_bind b;
  cell_geom(c, k, &g);
  g.blas = (mode & RNN_BLAS) != 0;
  mode &= ~RNN_BLAS;
  cell_bind(c, k, &b, mode == 1);
  if (mode == 2) return rnn_reference(c, &g, &b);
  return mode ? rnn_backward(&g, &b, c->ws) : rnn_forward(&g, &b, c->ws);
}

static double cell_flops(const opf_case *c, rnn_kind k, opf_pass p) {
  rnn_geom g;
  cell_geom(c, k, &g);
  return rnn_flops(&g, p);
}

RNN_HOOKS(rnn_relu_cell, RNN_RELU, cell)
RNN_HOOKS(rnn_tanh_cell, RNN_TANH, cell)
RNN_HOOKS(lstm_cell, RNN_LSTM, cell)
RNN_HOOKS(gru_cell, RNN_GRU, cell)

#define RNN_CELL_COMMON(id)                                                                    \
  RNN_COMMON(id), .n_params = 1,                                                               \
  .params = {{.name = "hidden", .type = OPF_P_INT, .def = 0, .min = 0, .max = INT_MAX,         \
              .help = "hidden size H (0: from w_hh's or h's shape)"}}

#define RNN_X RNN_IN_X("input (N, input)")
#define RNN_STATE(nm, what) RNN_IN_STATE(nm, what " (N, hidden)")
#define RNN_WEIGHTS(G)                                                                         \
  RNN_IN_W("w_ih", 0, "input weights (" G "*hidden, input), uniform in +-1/sqrt(hidden)"),     \
  RNN_IN_W("w_hh", 0, "hidden weights (" G "*hidden, hidden)"),                                \
  RNN_IN_W("b", OPF_IN_OPTIONAL, "biases (2, " G "*hidden): b_ih stacked on b_hh; b=none drops both")

/* Sets shared by the cells: OPERATORS.md's batch 32, input 512, hidden 512, batch 1 and 256
 * skewed; tiny small ones (the gradient check), one whose N*H = 8777 hidden units split
 * between threads in the gate pass, and a large one whose weights (16-128 MB) leave the LLC. */
#define RNN_CELL_SHAPES                                                                        \
  {"standard", "x=32x512 hidden=512"}, {"skewed", "x=1x512 hidden=512"},                      \
  {"skewed", "x=256x512 hidden=512"},  {"small", "x=3x4 hidden=5"},                           \
  {"small", "x=1x3 hidden=2"},         {"small", "x=2x3 hidden=4 b=none"},                    \
  {"small", "x=2x3 hidden=3 h=none"},  {"test", "x=67x129 hidden=131"},                      \
  {"large", "x=256x2048 hidden=2048"}

OPPERF_OP(rnn_relu_cell) = {
    RNN_CELL_COMMON(rnn_relu_cell),
    .name = "rnn_relu_cell",
    .summary = "Elman RNN cell, one step: h' = relu(W_ih x + b_ih + W_hh h + b_hh)",
    .n_in = 5,
    .in = {RNN_X, RNN_STATE("h", "hidden state"), RNN_WEIGHTS("1")},
    .n_out = 1,
    .out = {"h_next"},
    .shapes = {RNN_CELL_SHAPES, {"small", "x=4x2 w_hh=3x3"}},
};

OPPERF_OP(rnn_tanh_cell) = {
    RNN_CELL_COMMON(rnn_tanh_cell),
    .name = "rnn_tanh_cell",
    .summary = "Elman RNN cell, one step: h' = tanh(W_ih x + b_ih + W_hh h + b_hh)",
    .n_in = 5,
    .in = {RNN_X, RNN_STATE("h", "hidden state"), RNN_WEIGHTS("1")},
    .n_out = 1,
    .out = {"h_next"},
    .shapes = {RNN_CELL_SHAPES, {"small", "x=4x2 w_hh=3x3"}},
};

OPPERF_OP(lstm_cell) = {
    RNN_CELL_COMMON(lstm_cell),
    .name = "lstm_cell",
    .summary = "LSTM cell, one step (gates i, f, g, o): c' = f c + i g, h' = o tanh(c')",
    .n_in = 6,
    .in = {RNN_X, RNN_STATE("h", "hidden state"), RNN_STATE("c", "cell state"), RNN_WEIGHTS("4")},
    .n_out = 2,
    .out = {"h_next", "c_next"},
    .shapes = {RNN_CELL_SHAPES, {"small", "x=2x3 hidden=2 c=none"},
               {"small", "x=2x3 hidden=2 h=none c=none b=none"},
               {"small", "x=4x2 w_hh=12x3"}},
};

OPPERF_OP(gru_cell) = {
    RNN_CELL_COMMON(gru_cell),
    .name = "gru_cell",
    .summary = "GRU cell, one step (gates r, z, n): n = tanh(W_in x + b_in + r (W_hn h + b_hn))",
    .n_in = 5,
    .in = {RNN_X, RNN_STATE("h", "hidden state"), RNN_WEIGHTS("3")},
    .n_out = 1,
    .out = {"h_next"},
    .shapes = {RNN_CELL_SHAPES, {"small", "x=4x2 w_hh=9x3"}},
};

OPPERF_IMPL(rnn_relu_cell_openblas) = RNN_BLAS_IMPL(rnn_relu_cell);
OPPERF_IMPL(rnn_tanh_cell_openblas) = RNN_BLAS_IMPL(rnn_tanh_cell);
OPPERF_IMPL(lstm_cell_openblas) = RNN_BLAS_IMPL(lstm_cell);
OPPERF_IMPL(gru_cell_openblas) = RNN_BLAS_IMPL(gru_cell);
