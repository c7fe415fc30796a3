/* im2col.c: im2col and col2im as operators (MXNet semantics, channels first, 1-3 spatial dims
 * from the length of `kernel`): im2col (N, C, spatial...) -> (N, C*prod(kernel), L), L the
 * number of window positions; col2im is its adjoint (sums overlapping windows back into
 * (N, C, output_size...)). Each is the other's backward. Both run the N-d convolution core's
 * unfold/fold: threaded over images and position ranges, fold without write conflicts. */
#include "conv_core.h"

/* The LIST param called name, or NULL when the operator has none. */
static const opf_list *lparam(const opf_case *c, const char *name) {
  for (int i = 0; i < c->op->n_params; i++)
    if (!strcmp(c->op->params[i].name, name)) return &c->list[i];
  return NULL;
}

/* Value of a stride/dilate/pad list for spatial dim i of nd: empty = def, one value = every
 * dim, else per dim (checked by im_geom). */
static int64_t lval(const opf_list *l, int i, int64_t def) {
  return l->n == 0 ? def : l->n == 1 ? l->v[0] : l->v[i];
}

/* Geometry from the params and the spatial extents sp (nd of them). col2im names its big side
 * by output_size; both use F = 1 (no GEMM). */
static int im_geom(opf_case *c, const int64_t *sp, int nd, nn_conv_geom *g, int check) {
  const opf_list *k = lparam(c, "kernel"), *s = lparam(c, "stride"), *d = lparam(c, "dilate"),
                 *p = lparam(c, "pad");
  const char *names[3] = {"stride", "dilate", "pad"};
  const opf_list *ls[3] = {s, d, p};
  if (check)
    for (int i = 0; i < 3; i++)
      if (ls[i]->n > 1 && ls[i]->n != nd)
        return opf_case_error(c, OPF_EINVAL, "%s: %s has %d values, kernel has %d dims (give "
                              "one value or one per dim)", c->op->name, names[i], ls[i]->n, nd);
  memset(g, 0, sizeof *g);
  g->nd = nd, g->groups = 1, g->F = 1;
  for (int a = 0; a < 3; a++) g->in[a] = g->out[a] = g->k[a] = g->s[a] = g->d[a] = 1;
  for (int i = 0; i < nd; i++) {
    int a = 3 - nd + i;
    g->k[a] = k->v[i], g->s[a] = lval(s, i, 1), g->d[a] = lval(d, i, 1), g->p[a] = lval(p, i, 0);
    g->in[a] = sp[i];
    g->out[a] = nn_out_len(sp[i], g->k[a], g->s[a], g->p[a], g->d[a]);
    if (check && (g->k[a] < 1 || g->s[a] < 1 || g->d[a] < 1 || g->p[a] < 0))
      return opf_case_error(c, OPF_EINVAL, "%s: kernel, stride and dilate must be positive and "
                            "pad non-negative in dim %d (kernel %lld, stride %lld, dilate %lld, "
                            "pad %lld)", c->op->name, i, (long long)g->k[a], (long long)g->s[a],
                            (long long)g->d[a], (long long)g->p[a]);
    if (check && g->out[a] <= 0)
      return opf_case_error(c, OPF_EINVAL, "%s: window %lld (dilate %lld) is larger than the "
                            "padded input %lld in dim %d", c->op->name, (long long)g->k[a],
                            (long long)g->d[a], (long long)(sp[i] + 2 * g->p[a]), i);
  }
  return OPF_OK;
}

/* The geometry of a case: im2col's big side is x, col2im's is its output. */
static int im_case_geom(opf_case *c, nn_conv_geom *g, int fold, int check) {
  const opf_list *k = lparam(c, "kernel");
  int nd = k->n;
  char s1[96];
  if (check && (nd < 1 || nd > 3))
    return opf_case_error(c, OPF_EINVAL, "%s: kernel must have 1 to 3 values, got %d",
                          c->op->name, nd);
  const opf_tensor *x = &c->in[0];
  int64_t sp[3], N = x->shape[0], C;
  if (!fold) {
    if (check && x->ndim != nd + 2)
      return opf_case_error(c, OPF_EINVAL, "im2col: x %s must be (N, C) plus %d spatial dims "
                            "for a %d-D kernel", opf_shape_str(x, s1, sizeof s1), nd, nd);
    for (int i = 0; i < nd; i++) sp[i] = x->shape[2 + i];
    C = x->shape[1];
  } else {
    const opf_list *os = lparam(c, "output_size");
    if (check && os->n != nd)
      return opf_case_error(c, OPF_EINVAL, "col2im: output_size has %d values, kernel has %d",
                            os->n, nd);
    if (check && x->ndim != 3)
      return opf_case_error(c, OPF_EINVAL, "col2im: x %s must be (N, C*prod(kernel), L)",
                            opf_shape_str(x, s1, sizeof s1));
    for (int i = 0; i < nd; i++) sp[i] = os->v[i];
    int64_t kk = 1;
    for (int i = 0; i < nd; i++) kk *= k->v[i] > 0 ? k->v[i] : 1;
    C = x->shape[1] / kk;
    if (check && x->shape[1] % kk)
      return opf_case_error(c, OPF_EINVAL, "col2im: x %s: dim 1 (%lld) is not a multiple of "
                            "prod(kernel) = %lld", opf_shape_str(x, s1, sizeof s1),
                            (long long)x->shape[1], (long long)kk);
  }
  for (int i = 0; check && i < x->ndim; i++)
    if (x->shape[i] <= 0)
      return opf_case_error(c, OPF_EINVAL, "%s: x %s has an empty dimension", c->op->name,
                            opf_shape_str(x, s1, sizeof s1));
  int rc = im_geom(c, sp, nd, g, check);
  if (rc) return rc;
  g->N = N, g->C = C;
  nn_conv_geom_finish(g, c->dtype);
  if (check && fold && x->shape[2] != g->P)
    return opf_case_error(c, OPF_EINVAL, "col2im: x %s has L = %lld columns, but output_size "
                          "and the window give %lld positions", opf_shape_str(x, s1, sizeof s1),
                          (long long)x->shape[2], (long long)g->P);
  return OPF_OK;
}

static int im2col_infer(opf_case *c) {
  nn_conv_geom g;
  int rc = im_case_geom(c, &g, 0, 1);
  if (rc) return rc;
  int64_t shape[3] = {g.N, g.Kall, g.P};
  opf_set_out(c, 0, c->dtype, 3, shape);
  return OPF_OK;
}

static int col2im_infer(opf_case *c) {
  nn_conv_geom g;
  int rc = im_case_geom(c, &g, 1, 1);
  if (rc) return rc;
  int64_t shape[5] = {g.N, g.C};
  for (int i = 0; i < g.nd; i++) shape[2 + i] = g.in[3 - g.nd + i];
  opf_set_out(c, 0, c->dtype, g.nd + 2, shape);
  return OPF_OK;
}

/* Every hook of both operators: which = 0 forward, 1 backward, 2 reference. im2col unfolds
 * forward and folds backward; col2im the other way round. */
static int im_run(opf_case *c, int col2im, int which) {
  nn_conv_geom g;
  im_case_geom(c, &g, col2im, 0);
  int fold = col2im ^ (which == 1);
  void *dst = which == 1 ? c->gin[0].data : c->out[0].data;
  const void *src = which == 1 ? c->gout[0].data : c->in[0].data;
  if (which == 2) /* (big, col): the image and the columns, whichever is the output */
    nn_conv_ref_cols(&g, c->dtype, fold ? dst : (void *)src, fold ? (void *)src : dst, fold);
  else if (fold) nn_conv_fold(&g, c->dtype, dst, src);
  else nn_conv_unfold(&g, c->dtype, dst, src);
  return OPF_OK;
}
static int im2col_forward(opf_case *c) { return im_run(c, 0, 0); }
static int im2col_backward(opf_case *c) { return im_run(c, 0, 1); }
static int im2col_reference(opf_case *c) { return im_run(c, 0, 2); }
static int col2im_forward(opf_case *c) { return im_run(c, 1, 0); }
static int col2im_backward(opf_case *c) { return im_run(c, 1, 1); }
static int col2im_reference(opf_case *c) { return im_run(c, 1, 2); }

/* Pure data movement one way (0 flops), one add per col element the other way (the fold
 * sums overlapping windows): N*C*prod(kernel)*L. */
static double im_adds(const opf_case *c, int fold) {
  nn_conv_geom g;
  im_case_geom((opf_case *)c, &g, fold, 0);
  return (double)g.N * (double)g.Kall * (double)g.P;
}
static double im2col_flops(const opf_case *c, opf_pass p) {
  return opf_pass_sum(p, 0, im_adds(c, 0));
}
static double col2im_flops(const opf_case *c, opf_pass p) {
  return opf_pass_sum(p, im_adds(c, 1), 0);
}

#define IM_P_WINDOW                                                                            \
  {.name = "kernel", .type = OPF_P_LIST, .defs = "3,3", .min = 1, .max = 1 << 16,              \
   .help = "window size per spatial dim (1 to 3 values: the rank)"},                           \
  {.name = "stride", .type = OPF_P_LIST, .defs = "1", .min = 1, .max = 1 << 16,                \
   .help = "stride: one value or one per dim"},                                                \
  {.name = "dilate", .type = OPF_P_LIST, .defs = "1", .min = 1, .max = 1 << 16,                \
   .help = "dilation: one value or one per dim"},                                              \
  {.name = "pad", .type = OPF_P_LIST, .defs = "0", .min = 0, .max = 1 << 16,                   \
   .help = "zero padding on each side: one value or one per dim"}

OPPERF_OP(im2col) = {
    .abi = OPF_OP_ABI,
    .name = "im2col",
    .category = "nn.conv",
    .summary = "sliding windows to columns: (N, C, spatial...) -> (N, C*prod(kernel), L)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "input (N, C, spatial...) with as many spatial dims as kernel values"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 4,
    .params = {IM_P_WINDOW},
    .shapes = {{"standard", "x=32x64x56x56 kernel=3,3 pad=1"},
               {"skewed", "x=32x3x224x224 kernel=7,7 stride=2 pad=3"},
               {"skewed", "x=32x256x1024 kernel=3 pad=1"},
               {"skewed", "x=1x64x16x56x56 kernel=3,3,3 pad=1"},
               {"skewed", "x=32x64x56x56 kernel=3,3 pad=2 dilate=2"},
               {"small", "x=2x3x5x5 kernel=3,3"},
               {"small", "x=1x2x6x5 kernel=2,3 stride=2,1 pad=1,0 dilate=1,2"},
               {"small", "x=2x3x9 kernel=3 stride=2 pad=1"},
               {"small", "x=1x2x3x4x4 kernel=2,2,3 pad=1"},
               {"small", "x=2x2x4x4 kernel=1,1"},
               {"test", "x=3x7x37x41 kernel=3,3 pad=1"},
               {"test", "x=2x5x1001 kernel=5 stride=3 pad=2 dilate=2"},
               {"test", "x=1x4x9x23x21 kernel=3,3,3 stride=2 pad=1"},
               {"large", "x=8x128x112x112 kernel=3,3 pad=1"}},
    .infer = im2col_infer,
    .forward = im2col_forward,
    .backward = im2col_backward,
    .reference = im2col_reference,
    .flops = im2col_flops,
    .bytes = opf_default_bytes,
};

OPPERF_OP(col2im) = {
    .abi = OPF_OP_ABI,
    .name = "col2im",
    .category = "nn.conv",
    .summary = "columns back to an image, summing overlapping windows (the adjoint of im2col)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,
            .help = "columns (N, C*prod(kernel), L)"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 5,
    .params = {{.name = "output_size", .type = OPF_P_LIST, .defs = "56,56", .min = 1,
                .max = 1 << 30, .help = "spatial size of the output, one value per kernel dim"},
               IM_P_WINDOW},
    .shapes = {{"standard", "x=32x576x3136 output_size=56,56 kernel=3,3 pad=1"},
               {"skewed", "x=32x147x12544 output_size=224,224 kernel=7,7 stride=2 pad=3"},
               {"skewed", "x=32x768x1024 output_size=1024 kernel=3 pad=1"},
               {"skewed", "x=1x1728x50176 output_size=16,56,56 kernel=3,3,3 pad=1"},
               {"small", "x=2x27x9 output_size=5,5 kernel=3,3"},
               {"small", "x=1x12x4 output_size=6,5 kernel=2,3 stride=2,1 pad=1,0 dilate=1,2"},
               {"small", "x=2x9x5 output_size=9 kernel=3 stride=2 pad=1"},
               {"small", "x=1x24x80 output_size=3,4,4 kernel=2,2,3 pad=1"},
               {"small", "x=2x2x16 output_size=4,4 kernel=1,1"},
               {"test", "x=3x63x1517 output_size=37,41 kernel=3,3 pad=1"},
               {"test", "x=2x25x333 output_size=1001 kernel=5 stride=3 pad=2 dilate=2"},
               {"test", "x=1x108x660 output_size=9,23,21 kernel=3,3,3 stride=2 pad=1"},
               {"large", "x=8x1152x12544 output_size=112,112 kernel=3,3 pad=1"}},
    .infer = col2im_infer,
    .forward = col2im_forward,
    .backward = col2im_backward,
    .reference = col2im_reference,
    .flops = col2im_flops,
    .bytes = opf_default_bytes,
};
