/* conv_fused.c: conv2d fused with its epilogue: conv2d_bias_relu, conv2d_batch_norm and
 * conv2d_batch_norm_relu (batch norm in inference mode folded into a per-channel scale/shift).
 * Where conv2d itself takes Winograd (3x3, stride 1, float32, 16+ channels: conv_wino.c), the
 * scale goes into the transformed weight and the shift and relu into the output transform,
 * while each tile is in cache; backward masks the output gradient where the gradient
 * transforms read it, scales the weight of the data gradient and sums the masked gradient in
 * the weight-gradient pass. Elsewhere the N-d convolution core applies the epilogue to each
 * block of output rows right after its GEMM, while the block is in L2; backward masks the
 * output gradient with the relu on the same blocks and folds the scale into the data
 * product. Both ways dgamma comes from the unscaled weight gradient (sum g (z - mean) =
 * w . (g col^T) + (b - mean) sum g, z the conv output), so neither pass stores or recomputes
 * the pre-activation. --impl im2col keeps the core for every case. */
#include <math.h>
#include <string.h>

#include "nn/conv_core.h"

/* ---- conv2d_bias_relu: y = relu(conv2d(x, w) + b); conv2d's inputs, params and infer ---- */
enum { BR_X, BR_W, BR_B };

static const void *br_bias(const opf_case *c) {
  return c->present[BR_B] ? c->in[BR_B].data : NULL;
}

/* Winograd (conv_wino.c) where the plain conv2d's automatic choice takes it, with the
 * epilogue in its output transform and the mask in its gradient transforms; the N-d core
 * otherwise, or always with core = 1 (the "im2col" implementation). Winograd's gradients need
 * both dx and dw. */
static int fused_wino(const opf_case *c, const nn_conv_geom *g, int core, int bwd, int dx_in,
                      int dw_in) {
  return !core && nn_wino_auto(g, c->dtype) &&
         (!bwd || (c->gin[dx_in].data && c->gin[dw_in].data));
}

static int br_fwd(opf_case *c, int core) {
  nn_conv_geom g;
  nn_conv_op_geom(c, &g);
  if (fused_wino(c, &g, core, 0, BR_X, BR_W)) {
    nn_wino_fuse fu = {.relu = 1};
    nn_wino_forward_fused(&g, c->ws, c->ws_bytes, c->in[BR_X].data, c->in[BR_W].data,
                          br_bias(c), &fu, c->out[0].data);
    return OPF_OK;
  }
  nn_conv_job j = {.g = &g, .dt = c->dtype, .ws = c->ws, .ws_bytes = c->ws_bytes,
                   .w = c->in[BR_W].data, .big = c->in[BR_X].data, .small = c->out[0].data,
                   .shift = br_bias(c), .relu = 1};
  nn_conv_forward(&j);
  return OPF_OK;
}

/* The relu mask is y > 0: the core masks each block of gy as it goes, Winograd each tile. */
static int br_bwd(opf_case *c, int core) {
  nn_conv_geom g;
  nn_conv_op_geom(c, &g);
  if (fused_wino(c, &g, core, 1, BR_X, BR_W)) {
    nn_wino_fuse fu = {.mask = c->out[0].data};
    nn_wino_data_grad_fused(&g, c->ws, c->ws_bytes, c->gout[0].data, c->in[BR_W].data, NULL,
                            &fu, c->gin[BR_X].data);
    fu.gsum = c->present[BR_B] ? c->gin[BR_B].data : NULL;
    nn_wino_weight_grad_fused(&g, c->ws, c->ws_bytes, c->in[BR_X].data, c->gout[0].data, &fu,
                              c->gin[BR_W].data);
    return OPF_OK;
  }
  nn_conv_job j = {.g = &g, .dt = c->dtype, .ws = c->ws, .ws_bytes = c->ws_bytes,
                   .w = c->in[BR_W].data, .big = c->in[BR_X].data, .gsmall = c->gout[0].data,
                   .mask = c->out[0].data, .dbig = c->gin[BR_X].data, .dw = c->gin[BR_W].data,
                   .dsmall_sum = c->present[BR_B] ? c->gin[BR_B].data : NULL};
  nn_conv_backward(&j);
  return OPF_OK;
}

static int br_forward(opf_case *c) { return br_fwd(c, 0); }
static int br_backward(opf_case *c) { return br_bwd(c, 0); }

static int br_reference(opf_case *c) {
  nn_conv_geom g;
  nn_conv_op_geom(c, &g);
  nn_conv_ref_fwd(&g, c->dtype, c->in[BR_X].data, c->in[BR_W].data, br_bias(c), c->out[0].data);
  for (int64_t i = 0; i < opf_numel(&c->out[0]); i++)
    if (!(nn_ld(c->out[0].data, c->dtype, i) > 0)) nn_st(c->out[0].data, c->dtype, i, 0);
  return OPF_OK;
}

/* conv2d's work plus one compare per output: fwd 2*N*F*P*Kc + (bias) N*F*P + N*F*P; bwd
 * 4*N*F*P*Kc + N*F*P (mask) + (db) N*F*P. */
static double br_flops(const opf_case *c, opf_pass p) {
  nn_conv_geom g;
  nn_conv_op_geom(c, &g);
  double mm = 2 * nn_conv_macs(&g), outs = nn_conv_small_elems(&g);
  double bias = c->present[BR_B] ? outs : 0;
  return opf_pass_sum(p, mm + bias + outs, 2 * mm + outs + bias);
}

#define FUSED_IN_X NN_CONV_IN_X("input (N, C, H, W)")
#define FUSED_IN_W NN_CONV_IN_W("filters (F, C/groups, KH, KW)")

OPPERF_OP(conv2d_bias_relu) = {
    .abi = OPF_OP_ABI,
    .name = "conv2d_bias_relu",
    .category = "nn.fused",
    .summary = "conv2d + bias + relu, the bias and relu applied per GEMM block while in L2",
    .dtypes = OPF_DT_FLOAT,
    NN_CONV2D_INPUTS,
    NN_CONV2D_PARAMS(64, 0, 1, 1),
    .shapes = {{"standard", "x=32x64x56x56 filters=64 kernel=3 pad=1"},
               {"skewed", "x=32x56x56x64 filters=64 kernel=3 pad=1 layout=NHWC"},
               {"skewed", "x=32x3x224x224 filters=64 kernel=7 stride=2 pad=3"},
               {"skewed", "x=32x256x14x14 filters=1024 kernel=1"},
               {"skewed", "x=32x128x56x56 filters=128 kernel=3 pad=1 groups=32"},
               {"small", "x=2x3x5x5 filters=4 kernel=3 pad=1"},
               {"small", "x=2x3x5x5 filters=4 kernel=3 b=none"},
               {"small", "x=1x4x7x6 filters=4 kernel=3 stride=2 pad=1 dilation=2 groups=2"},
               {"small", "x=2x4x3x5 filters=6 kernel=1"},
               {"small", "x=1x4x6x5 filters=8 kernel=3 pad=1 groups=4"},
               {"small", "x=2x5x5x3 filters=4 kernel=3 pad=1 layout=NHWC"},
               {"small", "x=1x4x5x4 filters=6 kernel=1 groups=2 layout=NHWC"},
               {"test", "x=3x7x37x41 filters=12 kernel=3 pad=1"},
               {"test", "x=2x33x35x8 filters=16 kernel=3 stride=2 pad=1 layout=NHWC"},
               {"large", "x=64x128x112x112 filters=128 kernel=3 pad=1"}},
    .infer = nn_conv_op_infer,
    .forward = br_forward,
    .backward = br_backward,
    .reference = br_reference,
    .flops = br_flops,
    .bytes = opf_default_bytes,
    .unfused = "conv2d x=x w=w b=b | relu x=_",
};

/* ---- conv2d_batch_norm(_relu): y = relu?((conv2d(x, w) + b - mean) * gamma / sqrt(var +
 * eps) + beta) with the running statistics (inference mode). Inputs named as batch_norm's.
 * The conv bias b is the 7th input when the descriptor has room for one (OPF_MAX_IN >= 7);
 * conv+BN layers normally have none (beta does its job). ---- */
enum { BN_X, BN_W, BN_GAMMA, BN_BETA, BN_MEAN, BN_VAR, BN_B };
enum { BN_P_EPS = 8 };

#if OPF_MAX_IN > 6 /* room for b, input 6 */
#define BN_N_IN 7
#define BN_UNFUSED_CONV "conv2d x=x w=w b=b"
#else
#define BN_N_IN 6
#define BN_UNFUSED_CONV "conv2d x=x w=w b=none"
#endif

static const nn_conv_spec bn_spec = {"conv2d_batch_norm", 2, 0, BN_X, BN_W,
                                     BN_N_IN > BN_B ? BN_B : -1};

static const void *bn_bias(const opf_case *c) {
#if OPF_MAX_IN > 6 /* room for b, input 6 */
  return c->present[BN_B] ? c->in[BN_B].data : NULL;
#else
  (void)c;
  return NULL;
#endif
}

static void *bn_dbias(const opf_case *c) {
#if OPF_MAX_IN > 6 /* room for b, input 6 */
  return c->present[BN_B] ? c->gin[BN_B].data : NULL;
#else
  (void)c;
  return NULL;
#endif
}

static int bn_has_bias(const opf_case *c) {
#if OPF_MAX_IN > 6 /* room for b, input 6 */
  return c->present[BN_B];
#else
  (void)c;
  return 0;
#endif
}

/* By name: a built-in implementation's checks run the operator through a copy of its
 * descriptor (tests/ops/test_ops.c), not the registered one. */
static int bn_relu(const opf_case *c) { return !strcmp(c->op->name, "conv2d_batch_norm_relu"); }

/* Our part of the workspace, before the core's: scale, shift, invstd (F each), the unscaled
 * weight-gradient sums dW' (F*Kc) and channel sums db' (F). */
static size_t al64(size_t b) { return (b + 63) & ~(size_t)63; }
static size_t bn_ws_own(const nn_conv_geom *g) {
  return 4 * al64((size_t)g->F * g->esz) + al64((size_t)(g->F * g->Kc) * g->esz);
}
typedef struct bn_area {
  void *scale, *shift, *invstd, *dbs, *dws;
} bn_area;
static bn_area bn_areas(const opf_case *c, const nn_conv_geom *g) {
  size_t v = al64((size_t)g->F * g->esz);
  char *p = c->ws;
  return (bn_area){p, p + v, p + 2 * v, p + 3 * v, p + 4 * v};
}

static int bn_infer(opf_case *c) {
  nn_conv_geom g;
  int rc = nn_conv_infer(c, &bn_spec, &g);
  if (rc) return rc;
  char s1[96];
  for (int i = BN_GAMMA; i <= BN_VAR; i++) {
    opf_tensor *v = &c->in[i];
    if (v->ndim < 0) opf_tensor_set_shape(v, c->dtype, 1, &g.F);
    else if (v->ndim != 1 || v->shape[0] != g.F)
      return opf_case_error(c, OPF_EINVAL, "'%s' %s must have shape (%lld), one per filter",
                            c->op->in[i].name, opf_shape_str(v, s1, sizeof s1), (long long)g.F);
  }
  c->ws_bytes += bn_ws_own(&g);
  return OPF_OK;
}

/* Per filter: invstd = 1/sqrt(var + eps), scale = gamma invstd,
 * shift = beta + (b - mean) scale, in the case dtype. */
static void bn_fold(const opf_case *c, const nn_conv_geom *g, const bn_area *a) {
  opf_dtype dt = c->dtype;
  const void *b = bn_bias(c);
  for (int64_t f = 0; f < g->F; f++) {
    double is = 1 / sqrt(nn_ld(c->in[BN_VAR].data, dt, f) + c->p[BN_P_EPS]);
    double s = nn_ld(c->in[BN_GAMMA].data, dt, f) * is;
    double z0 = (b ? nn_ld(b, dt, f) : 0) - nn_ld(c->in[BN_MEAN].data, dt, f);
    nn_st(a->invstd, dt, f, is);
    nn_st(a->scale, dt, f, s);
    nn_st(a->shift, dt, f, nn_ld(c->in[BN_BETA].data, dt, f) + z0 * s);
  }
}

static size_t bn_core(const opf_case *c, const nn_conv_geom *g, void **ws) {
  size_t own = bn_ws_own(g);
  *ws = (char *)c->ws + own;
  return c->ws_bytes - own;
}

static int bn_fwd(opf_case *c, int core) {
  nn_conv_geom g;
  nn_conv_geom_of(c, &bn_spec, &g);
  bn_area a = bn_areas(c, &g);
  bn_fold(c, &g, &a);
  if (fused_wino(c, &g, core, 0, BN_X, BN_W)) { /* y = relu?(conv(x, diag(scale) w) + shift) */
    void *ws;
    size_t wsb = bn_core(c, &g, &ws);
    nn_wino_fuse fu = {.wscale = a.scale, .relu = bn_relu(c)};
    nn_wino_forward_fused(&g, ws, wsb, c->in[BN_X].data, c->in[BN_W].data, a.shift, &fu,
                          c->out[0].data);
    return OPF_OK;
  }
  nn_conv_job j = {.g = &g, .dt = c->dtype, .w = c->in[BN_W].data, .big = c->in[BN_X].data,
                   .small = c->out[0].data, .scale = a.scale, .shift = a.shift,
                   .relu = bn_relu(c)};
  j.ws_bytes = bn_core(c, &g, &j.ws);
  nn_conv_forward(&j);
  return OPF_OK;
}

/* With g' = gy (masked by y > 0 after a relu), z = conv(x, w) + b and s = gamma invstd:
 * dz = s g', so dx = col2im((s W)^T g'), dw = s dW', db = s db', where dW' = g' col(x)^T and
 * db' = sum g' come from the core; dbeta = db'; dgamma = invstd sum g' (z - mean)
 * = invstd (w . dW' + (b - mean) db') per filter. */
static int bn_bwd(opf_case *c, int core) {
  nn_conv_geom g;
  nn_conv_geom_of(c, &bn_spec, &g);
  bn_area a = bn_areas(c, &g);
  bn_fold(c, &g, &a);
  opf_dtype dt = c->dtype;
  void *dw = c->gin[BN_W].data ? c->gin[BN_W].data : a.dws;
  const void *mask = bn_relu(c) ? c->out[0].data : NULL;
  if (fused_wino(c, &g, core, 1, BN_X, BN_W)) { /* dx through diag(scale) w, dW' and db' */
    void *ws;
    size_t wsb = bn_core(c, &g, &ws);
    nn_wino_fuse fu = {.wscale = a.scale, .mask = mask};
    nn_wino_data_grad_fused(&g, ws, wsb, c->gout[0].data, c->in[BN_W].data, NULL, &fu,
                            c->gin[BN_X].data);
    fu.gsum = a.dbs;
    nn_wino_weight_grad_fused(&g, ws, wsb, c->in[BN_X].data, c->gout[0].data, &fu, dw);
  } else {
    nn_conv_job j = {.g = &g, .dt = dt, .w = c->in[BN_W].data, .big = c->in[BN_X].data,
                     .gsmall = c->gout[0].data, .mask = mask, .gscale = a.scale,
                     .dbig = c->gin[BN_X].data, .dw = dw, .dsmall_sum = a.dbs};
    j.ws_bytes = bn_core(c, &g, &j.ws);
    nn_conv_backward(&j);
  }
  const void *b = bn_bias(c), *w = c->in[BN_W].data;
  void *db = bn_dbias(c), *dgamma = c->gin[BN_GAMMA].data, *dbeta = c->gin[BN_BETA].data;
  for (int64_t f = 0; f < g.F; f++) {
    double s = nn_ld(a.scale, dt, f), sg = nn_ld(a.dbs, dt, f), dot = 0;
    for (int64_t k = f * g.Kc; k < (f + 1) * g.Kc; k++) {
      double v = nn_ld(dw, dt, k);
      dot += nn_ld(w, dt, k) * v;
      nn_st(dw, dt, k, s * v);
    }
    double z0 = (b ? nn_ld(b, dt, f) : 0) - nn_ld(c->in[BN_MEAN].data, dt, f);
    if (dgamma) nn_st(dgamma, dt, f, nn_ld(a.invstd, dt, f) * (dot + z0 * sg));
    if (dbeta) nn_st(dbeta, dt, f, sg);
    if (db) nn_st(db, dt, f, s * sg);
  }
  return OPF_OK;
}

static int bn_forward(opf_case *c) { return bn_fwd(c, 0); }
static int bn_backward(opf_case *c) { return bn_bwd(c, 0); }

/* conv2d, then batch_norm's inference formula and the relu, element by element in double */
static int bn_reference(opf_case *c) {
  nn_conv_geom g;
  nn_conv_geom_of(c, &bn_spec, &g);
  opf_dtype dt = c->dtype;
  nn_conv_ref_fwd(&g, dt, c->in[BN_X].data, c->in[BN_W].data, bn_bias(c), c->out[0].data);
  for (int64_t i = 0; i < opf_numel(&c->out[0]); i++) {
    int64_t f = i / g.P % g.F;
    double m = nn_ld(c->in[BN_MEAN].data, dt, f), v = nn_ld(c->in[BN_VAR].data, dt, f);
    double y = (nn_ld(c->out[0].data, dt, i) - m) / sqrt(v + c->p[BN_P_EPS]) *
                   nn_ld(c->in[BN_GAMMA].data, dt, f) + nn_ld(c->in[BN_BETA].data, dt, f);
    nn_st(c->out[0].data, dt, i, bn_relu(c) && !(y > 0) ? 0 : y);
  }
  return OPF_OK;
}

/* fwd: conv2d's 2*N*F*P*Kc (+ N*F*P with a bias), 2 per output for the scale and shift, 1
 * for the relu; bwd: 4*N*F*P*Kc, 1 per output for the channel sums (+1 for the relu mask),
 * and 3*F*Kc for dgamma's dot products and the weight-gradient scaling. */
static double bn_flops(const opf_case *c, opf_pass p) {
  nn_conv_geom g;
  nn_conv_geom_of(c, &bn_spec, &g);
  double mm = 2 * nn_conv_macs(&g), outs = nn_conv_small_elems(&g), relu = bn_relu(c) ? outs : 0;
  double bias = bn_has_bias(c) ? outs : 0;
  return opf_pass_sum(p, mm + bias + 2 * outs + relu,
                      2 * mm + outs + relu + 3 * (double)g.F * (double)g.Kc);
}

#define BN_INPUTS                                                                              \
  .n_in = BN_N_IN,                                                                             \
  .in = {FUSED_IN_X, FUSED_IN_W,                                                              \
         {.name = "gamma", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = 0.5, .hi = 1.5,   \
          .help = "scale (F)"},                                                                \
         {.name = "beta", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -0.5, .hi = 0.5,   \
          .help = "shift (F)"},                                                                \
         {.name = "running_mean", .dtype = OPF_DT_CASE, .lo = -0.5, .hi = 0.5,                 \
          .help = "running mean (F)"},                                                         \
         {.name = "running_var", .dtype = OPF_DT_CASE, .lo = 0.5, .hi = 1.5,                   \
          .help = "running variance (F)"} BN_IN_B},                                            \
  .n_out = 1, .out = {"y"}, .n_params = 9,                                                     \
  .params = {NN_CONV2D_P(64, 0, 1, 1),                                                        \
             {"eps", OPF_P_FLOAT, 1e-5, 0, 1, NULL, "added to the variance"}}
#if OPF_MAX_IN > 6 /* room for b, input 6 */
#define BN_IN_B , NN_CONV_IN_B
#define BN_SMALL_NOB {"small", "x=2x3x5x4 filters=4 kernel=3 pad=1 b=none"},
#else
#define BN_IN_B
#define BN_SMALL_NOB
#endif
#define BN_SHAPES                                                                              \
  .shapes = {{"standard", "x=32x64x56x56 filters=64 kernel=3 pad=1"},                          \
             {"skewed", "x=32x3x224x224 filters=64 kernel=7 stride=2 pad=3"},                  \
             {"skewed", "x=32x256x14x14 filters=1024 kernel=1"},                               \
             {"skewed", "x=32x128x56x56 filters=128 kernel=3 pad=1 groups=32"},                \
             {"small", "x=2x3x5x5 filters=4 kernel=3 pad=1"},                                  \
             {"small", "x=1x4x7x6 filters=4 kernel=3 stride=2 pad=1 dilation=2 groups=2"},     \
             {"small", "x=2x4x3x5 filters=6 kernel=1 eps=0.1"},                                \
             {"small", "x=1x4x6x5 filters=4 kernel=3 stride=2 pad=1 groups=4"},                \
             BN_SMALL_NOB                                                                      \
             {"test", "x=3x7x37x41 filters=12 kernel=3 pad=1"},                                \
             {"test", "x=2x8x35x33 filters=16 kernel=3 stride=2 pad=1 groups=4"},              \
             {"large", "x=64x128x112x112 filters=128 kernel=3 pad=1"}}

#define BN_UNFUSED                                                                             \
  BN_UNFUSED_CONV " | batch_norm x=_ gamma=gamma beta=beta running_mean=running_mean "           \
                  "running_var=running_var mode=inference"
#define BN_DESC(op, what, chain)                                                               \
  .abi = OPF_OP_ABI, .name = #op, .category = "nn.fused", .summary = what,                     \
  .dtypes = OPF_DT_FLOAT, BN_INPUTS, BN_SHAPES, .infer = bn_infer, .forward = bn_forward,      \
  .backward = bn_backward, .reference = bn_reference, .flops = bn_flops,                       \
  .bytes = opf_default_bytes, .unfused = chain

OPPERF_OP(conv2d_batch_norm) = {
    BN_DESC(conv2d_batch_norm,
            "conv2d + inference batch norm, folded into a per-channel scale/shift epilogue",
            BN_UNFUSED),
};

OPPERF_OP(conv2d_batch_norm_relu) = {
    BN_DESC(conv2d_batch_norm_relu,
            "conv2d + inference batch norm + relu, one epilogue per GEMM block",
            BN_UNFUSED " | relu x=_"),
};

/* ---- the N-d core always (--impl im2col): the algorithm these operators had before
 * Winograd served them ---- */
static int br_core_fwd(opf_case *c) { return br_fwd(c, 1); }
static int br_core_bwd(opf_case *c) { return br_bwd(c, 1); }
static int bn_core_fwd(opf_case *c) { return bn_fwd(c, 1); }
static int bn_core_bwd(opf_case *c) { return bn_bwd(c, 1); }
#define FUSED_CORE_IMPL(op, f, b)                                                              \
  {.abi = OPF_OP_ABI, .name = "im2col", .implements = op,                                      \
   .summary = "the im2col core with the epilogue per GEMM block, never Winograd", .forward = f, \
   .backward = b}
OPPERF_IMPL(conv2d_bias_relu_im2col) = FUSED_CORE_IMPL("conv2d_bias_relu", br_core_fwd, br_core_bwd);
OPPERF_IMPL(conv2d_batch_norm_im2col) = FUSED_CORE_IMPL("conv2d_batch_norm", bn_core_fwd, bn_core_bwd);
OPPERF_IMPL(conv2d_batch_norm_relu_im2col) =
    FUSED_CORE_IMPL("conv2d_batch_norm_relu", bn_core_fwd, bn_core_bwd);
