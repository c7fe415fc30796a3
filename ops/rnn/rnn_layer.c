/* rnn_layer.c: recurrent sequence layers lstm, gru, rnn_tanh and rnn_relu (MXNet's RNN op,
 * cuDNN's layout): T steps, num_layers stacked, optionally bidirectional, with backward
 * through time for x, the initial states and every weight and bias (rnn.h, rnn_core.c). */

/* Layout. x is time-major (T, N, input), y (T, N, D*hidden) with D = 2 when bidirectional (the
 * forward direction's h_t in columns [0, H), the reverse one's, which reads x from t = T-1 down
 * to 0 but is stored at its own t, in [H, 2H)); h0, c0, hy, cy are (num_layers*D, N, hidden),
 * index layer*D + direction. Weights and biases are one flat input `params`, packed as MXNet's
 * RNN op (and cuDNN's canonical order): first every weight matrix, for each layer and then
 * each direction W_ih (G*H, I_l) followed by W_hh (G*H, H), row-major; then every bias, in the
 * same order b_ih (G*H) followed by b_hh (G*H). I_l is input for layer 0, D*hidden above; G is
 * 4 (lstm: gates i f g o), 3 (gru: r z n) or 1; gate blocks in PyTorch's order. */
#include "rnn/rnn.h"

enum { IN_X = 0, IN_P = 1, IN_H0 = 2, IN_C0 = 3 };
enum { P_HIDDEN = 0, P_LAYERS = 1, P_BIDIR = 2 };

static void layer_geom(const opf_case *c, rnn_kind k, rnn_geom *g) {
  const opf_tensor *x = &c->in[IN_X];
  *g = (rnn_geom){.kind = k, .dt = c->dtype, .T = x->shape[0], .N = x->shape[1],
                  .In = x->shape[2], .H = c->out[1].shape[2], .L = (int)c->p[P_LAYERS],
                  .D = c->p[P_BIDIR] != 0 ? 2 : 1, .has_h0 = c->present[IN_H0],
                  .has_c0 = k == RNN_LSTM && c->present[IN_C0], .has_bias = 1};
}

/* State input i must be (L*D, N, H) when present; a missing shape is derived. */
static int layer_state(opf_case *c, int i, int64_t LD, int64_t N, int64_t H) {
  opf_tensor *t = &c->in[i];
  if (!c->present[i]) return OPF_OK;
  int64_t want[3] = {LD, N, H};
  if (t->ndim < 0) opf_tensor_set_shape(t, t->dtype, 3, want);
  if (t->ndim == 3 && t->shape[0] == LD && t->shape[1] == N && t->shape[2] == H) return OPF_OK;
  char s[96];
  return opf_case_error(c, OPF_EINVAL,
                        "'%s' %s must be (num_layers*directions, N, hidden) = (%lld, %lld, %lld)",
                        c->op->in[i].name, opf_shape_str(t, s, sizeof s), (long long)LD,
                        (long long)N, (long long)H);
}

static int layer_infer(opf_case *c, rnn_kind k) {
  const int lstm = k == RNN_LSTM;
  opf_tensor *x = &c->in[IN_X], *p = &c->in[IN_P];
  char s[96];
  if (x->ndim < 0)
    return opf_case_error(c, OPF_EINVAL, "input 'x' needs a shape (T, N, input), e.g. x=32x32x512 hidden=512");
  if (x->ndim != 3 || x->shape[0] < 1 || x->shape[1] < 1 || x->shape[2] < 1)
    return opf_case_error(c, OPF_EINVAL, "x=%s must be time-major (T, N, input) with every size >= 1",
                          opf_shape_str(x, s, sizeof s));
  const int L = (int)c->p[P_LAYERS], D = c->p[P_BIDIR] != 0 ? 2 : 1;
  if (L < 1) return opf_case_error(c, OPF_EINVAL, "num_layers=%d: needs at least one layer", L);
  const int64_t T = x->shape[0], N = x->shape[1], In = x->shape[2];
  int64_t H = (int64_t)c->p[P_HIDDEN];
  if (H == 0) { /* from a given state shape */
    const opf_tensor *h0 = &c->in[IN_H0], *c0 = &c->in[IN_C0];
    if (c->present[IN_H0] && h0->ndim == 3) H = h0->shape[2];
    else if (lstm && c->present[IN_C0] && c0->ndim == 3) H = c0->shape[2];
    else return opf_case_error(c, OPF_EINVAL, "needs hidden=H (or an h0 shape)");
    if (H < 1) return opf_case_error(c, OPF_EINVAL, "hidden size 0 (from h0 or c0): needs >= 1");
  }
  int rc;
  if ((rc = layer_state(c, IN_H0, (int64_t)L * D, N, H)) ||
      (lstm && (rc = layer_state(c, IN_C0, (int64_t)L * D, N, H))))
    return rc;
  const int64_t GH = rnn_ngates(k) * H;
  rnn_geom g = {.kind = k, .dt = c->dtype, .T = T, .N = N, .In = In, .H = H, .L = L, .D = D};
  const int64_t P = rnn_param_count(&g);
  if (p->ndim < 0) opf_tensor_set_shape(p, p->dtype, 1, &P);
  if (p->ndim != 1 || p->shape[0] != P)
    return opf_case_error(c, OPF_EINVAL,
                          "'params' %s must be (%lld): the packed weights and biases of input=%lld "
                          "hidden=%lld num_layers=%d bidirectional=%s",
                          opf_shape_str(p, s, sizeof s), (long long)P, (long long)In, (long long)H,
                          L, D == 2 ? "true" : "false");
  if ((rc = lin_check_int(c, "T*N", T * N)) || (rc = lin_check_int(c, "input", In)) ||
      (rc = lin_check_int(c, "gates*hidden", GH)) || (rc = lin_check_int(c, "directions*hidden", D * H)))
    return rc;
  int64_t ys[3] = {T, N, D * H}, hs[3] = {(int64_t)L * D, N, H};
  opf_set_out(c, 0, c->dtype, 3, ys);
  opf_set_out(c, 1, c->dtype, 3, hs);
  if (lstm) opf_set_out(c, 2, c->dtype, 3, hs);
  layer_geom(c, k, &g);
  c->ws_bytes = rnn_ws_bytes(&g);
  return OPF_OK;
}

/* Per layer direction, pointers into the packed params (and into their gradient). */
static void layer_weights(const rnn_geom *g, const char *p, char *dp, rnn_wts *w) {
  const size_t es = opf_dtype_size(g->dt);
  const int64_t GH = rnn_ngates(g->kind) * g->H;
  int64_t wo = 0, bo = 0;
  for (int l = 0; l < g->L; l++) bo += g->D * GH * (rnn_in_size(g, l) + g->H);
  for (int l = 0; l < g->L; l++)
    for (int d = 0; d < g->D; d++, w++) {
      const size_t oih = (size_t)wo * es, ohh = (size_t)(wo + GH * rnn_in_size(g, l)) * es;
      const size_t obi = (size_t)bo * es, obh = (size_t)(bo + GH) * es;
      wo += GH * (rnn_in_size(g, l) + g->H), bo += 2 * GH;
      w->wih = p + oih, w->whh = p + ohh, w->bih = p + obi, w->bhh = p + obh;
      if (dp) w->dwih = dp + oih, w->dwhh = dp + ohh, w->dbih = dp + obi, w->dbhh = dp + obh;
    }
}

static void layer_bind(opf_case *c, rnn_kind k, const rnn_geom *g, rnn_bind *b, int grads) {
  const int lstm = k == RNN_LSTM;
  memset(b, 0, sizeof *b);
  b->x = c->in[IN_X].data;
  b->h0 = c->present[IN_H0] ? c->in[IN_H0].data : NULL;
  b->c0 = lstm && c->present[IN_C0] ? c->in[IN_C0].data : NULL;
  b->y = c->out[0].data, b->hy = c->out[1].data;
  b->cy = lstm ? c->out[2].data : NULL;
  layer_weights(g, c->in[IN_P].data, grads ? c->gin[IN_P].data : NULL, b->w);
  if (!grads) return;
  b->dy = c->gout[0].data, b->dhy = c->gout[1].data;
  b->dcy = lstm ? c->gout[2].data : NULL;
  b->dx = c->gin[IN_X].data;
  b->dh0 = c->present[IN_H0] ? c->gin[IN_H0].data : NULL;
  b->dc0 = lstm && c->present[IN_C0] ? c->gin[IN_C0].data : NULL;
}

static int layer_run(opf_case *c, rnn_kind k, int mode) {
  rnn_geom g;
  rnn_bind b;
  layer_geom(c, k, &g);
  g.blas = (mode & RNN_BLAS) != 0;
  mode &= ~RNN_BLAS;
  layer_bind(c, k, &g, &b, mode == 1);
  if (mode == 2) return rnn_reference(c, &g, &b);
  return mode ? rnn_backward(&g, &b, c->ws) : rnn_forward(&g, &b, c->ws);
}

static double layer_flops(const opf_case *c, rnn_kind k, opf_pass p) {
  rnn_geom g;
  layer_geom(c, k, &g);
  return rnn_flops(&g, p);
}

RNN_HOOKS(rnn_relu, RNN_RELU, layer)
RNN_HOOKS(rnn_tanh, RNN_TANH, layer)
RNN_HOOKS(lstm, RNN_LSTM, layer)
RNN_HOOKS(gru, RNN_GRU, layer)

#define RNN_LAYER_COMMON(id)                                                                   \
  RNN_COMMON(id), .n_params = 3,                                                               \
  .params = {{.name = "hidden", .type = OPF_P_INT, .def = 0, .min = 0, .max = INT_MAX,         \
              .help = "hidden size H (0: from h0's shape)"},                                   \
             {.name = "num_layers", .type = OPF_P_INT, .def = 1, .min = 0,                     \
              .max = RNN_MAX_LAYERS, .help = "stacked layers (>= 1)"},                         \
             {.name = "bidirectional", .type = OPF_P_BOOL, .def = 0, .min = 0, .max = 1,       \
              .help = "also run each layer backwards in time (y gets 2*hidden columns)"}}

#define RNN_X RNN_IN_X("input (T, N, input), time-major")
#define RNN_PARAMS(G)                                                                          \
  RNN_IN_W("params", 0, "packed weights then biases (MXNet/cuDNN order, " G " gates); derived")
#define RNN_STATE(nm, what) RNN_IN_STATE(nm, what " (num_layers*directions, N, hidden)")

/* OPERATORS.md: batch 32, input 512, hidden 512, T = 32, also 2 layers and bidirectional;
 * skewed batch 1 over T = 256 and batch 256 over T = 4. small: tiny (a few hundred params)
 * for the gradient check, covering 1-3 layers (3 alternates the gradient buffers), both
 * directions, T = 1 and N = 1; test: odd sizes whose gate pass splits between threads. */
#define RNN_LAYER_SHAPES                                                                       \
  {"standard", "x=32x32x512 hidden=512"},                                                      \
  {"standard", "x=32x32x512 hidden=512 num_layers=2"},                                         \
  {"standard", "x=32x32x512 hidden=512 bidirectional=true"},                                   \
  {"skewed", "x=256x1x512 hidden=512"},                                                        \
  {"skewed", "x=4x256x512 hidden=512"},                                                        \
  {"small", "x=3x2x3 hidden=2"},                                                               \
  {"small", "x=3x2x3 hidden=2 num_layers=2 bidirectional=true"},                               \
  {"small", "x=4x1x2 hidden=3 bidirectional=true"},                                            \
  {"small", "x=2x3x2 hidden=2 num_layers=3"},                                                  \
  {"small", "x=1x2x3 hidden=2 num_layers=2"},                                                  \
  {"small", "x=3x2x2 hidden=2 h0=none"},                                                       \
  {"small", "x=3x1x2 h0=2x1x3 bidirectional=true"},                                            \
  {"test", "x=5x33x67 hidden=129 num_layers=2 bidirectional=true"},                            \
  {"test", "x=9x70x37 hidden=131"},                                                            \
  {"large", "x=16x128x1024 hidden=1024"}

OPPERF_OP(rnn_relu) = {
    RNN_LAYER_COMMON(rnn_relu),
    .name = "rnn_relu",
    .summary = "Elman RNN layer over T steps with relu (multi-layer, bidirectional)",
    .n_in = 3,
    .in = {RNN_X, RNN_PARAMS("1"), RNN_STATE("h0", "initial hidden state")},
    .n_out = 2,
    .out = {"y", "hy"},
    .shapes = {RNN_LAYER_SHAPES},
};

OPPERF_OP(rnn_tanh) = {
    RNN_LAYER_COMMON(rnn_tanh),
    .name = "rnn_tanh",
    .summary = "Elman RNN layer over T steps with tanh (multi-layer, bidirectional)",
    .n_in = 3,
    .in = {RNN_X, RNN_PARAMS("1"), RNN_STATE("h0", "initial hidden state")},
    .n_out = 2,
    .out = {"y", "hy"},
    .shapes = {RNN_LAYER_SHAPES},
};

OPPERF_OP(lstm) = {
    RNN_LAYER_COMMON(lstm),
    .name = "lstm",
    .summary = "LSTM layer over T steps (multi-layer, bidirectional), cuDNN-style",
    .n_in = 4,
    .in = {RNN_X, RNN_PARAMS("4"), RNN_STATE("h0", "initial hidden state"),
           RNN_STATE("c0", "initial cell state")},
    .n_out = 3,
    .out = {"y", "hy", "cy"},
    .shapes = {RNN_LAYER_SHAPES, {"small", "x=3x2x2 hidden=2 c0=none"},
               {"small", "x=2x2x3 hidden=2 h0=none c0=none bidirectional=true"}},
};

OPPERF_OP(gru) = {
    RNN_LAYER_COMMON(gru),
    .name = "gru",
    .summary = "GRU layer over T steps (multi-layer, bidirectional), cuDNN-style",
    .n_in = 3,
    .in = {RNN_X, RNN_PARAMS("3"), RNN_STATE("h0", "initial hidden state")},
    .n_out = 2,
    .out = {"y", "hy"},
    .shapes = {RNN_LAYER_SHAPES},
};

OPPERF_IMPL(rnn_relu_openblas) = RNN_BLAS_IMPL(rnn_relu);
OPPERF_IMPL(rnn_tanh_openblas) = RNN_BLAS_IMPL(rnn_tanh);
OPPERF_IMPL(lstm_openblas) = RNN_BLAS_IMPL(lstm);
OPPERF_IMPL(gru_openblas) = RNN_BLAS_IMPL(gru);
