/* conv_core.h: the N-d convolution core (conv_core.c) shared by every convolution operator:
 * conv1d/2d/3d and their grouped/dilated registrations (conv.c), the transposed convolutions
 * (conv_transpose.c), im2col/col2im (im2col.c) and the fused conv + bias/relu/batch-norm
 * operators (fused/conv_fused.c). One geometry for 1-3 spatial dims and both layouts; three
 * GEMM products on L2-sized blocks of output positions; a per-channel epilogue hook. */
#ifndef OPPERF_NN_CONV_CORE_H
#define OPPERF_NN_CONV_CORE_H

#include "conv_common.h"

/* Geometry of a convolution seen from its im2col side. The "big" tensor is what im2col reads
 * (x of a convolution, y of a transposed one), the "small" one is the GEMM side (y of a
 * convolution, x of a transposed one). The weight is (F, C/groups, k...) both ways: small
 * channels first. Spatial dims are padded to 3 with leading 1s (conv1d uses axis 2 only,
 * conv2d axes 1-2), so one set of loops serves 1-D, 2-D and 3-D. */
typedef struct nn_conv_geom {
  int nd;                /* spatial dims of the operator, 1..3 */
  int nhwc;              /* channels last (NWC, NHWC, NDHWC) */
  int oax;               /* outer spatial axis (3 - nd): threads split it */
  int fast;              /* 1x1, stride 1, no padding: the big tensor is its own col matrix */
  int small;             /* groups small enough for the hand-written products (not BLAS) */
  int dwise;             /* one channel per group (depthwise): direct products, no col */
  int openblas;          /* every GEMM by OpenBLAS, not nn_gemm's own kernel (set by the caller
                          * after nn_conv_geom_finish: the built-in "im2col"/"col2im" impls) */
  int64_t N, C, F;       /* images, big channels, small channels */
  int64_t groups, Cg, Fg;
  int64_t in[3], out[3]; /* big and small spatial extents */
  int64_t k[3], s[3], p[3], d[3];
  int64_t S, P;          /* big and small plane sizes (positions per image) */
  int64_t Sin, Pin;      /* positions per slab of the outer axis (big, small) */
  int64_t KK, Kc, Kall;  /* taps, col rows per group (Cg*KK), col rows in all (C*KK) */
  int64_t cols;          /* output positions per block */
  size_t esz;
} nn_conv_geom;

/* Completes g from its N, C, F, groups, nd, nhwc, in, out, k, s, p, d fields (the caller
 * sets those; unused leading axes must be in = out = k = s = d = 1, p = 0). */
void nn_conv_geom_finish(nn_conv_geom *g, opf_dtype dt);

/* ---- the work: one job, two drivers ----
 * nn_conv_forward: for every block of small positions, col = im2col(big), then
 *   small = epilogue(W col)            (when small != NULL)
 *   dw   += gsmall col^T               (when dw != NULL; gsmall read unmasked)
 * and, per channel, dbig_sum = sums of big (when set).
 * nn_conv_backward: with g' = gsmall where mask > 0 (all of gsmall when mask is NULL),
 *   dw = g' col(big)^T, dsmall_sum = sums of g' per small channel,
 *   dbig = col2im(W'^T g') + bigshift, W' = diag(gscale) W (W when gscale is NULL).
 * Outputs are overwritten (never accumulated into). Every per-channel vector has the case
 * dtype. The epilogue runs on each block right after its GEMM, while it is in L2:
 *   small = relu?(small * scale[f] + shift[f])   (scale/shift NULL: 1/0). */
typedef struct nn_conv_job {
  const nn_conv_geom *g;
  opf_dtype dt;
  void *ws;                /* nn_conv_ws_bytes(g) bytes, 64-byte aligned */
  size_t ws_bytes;
  const void *w;           /* (F, Cg, k...) */
  const void *big;         /* im2col source */
  void *small;             /* forward product */
  const void *scale, *shift;
  int relu;
  const void *gsmall;      /* small-side gradient (the x of a transposed convolution) */
  const void *mask;        /* small-side tensor: gsmall counts where mask > 0 (backward) */
  const void *gscale;      /* per small channel, scales W in the data product (backward) */
  void *dbig;              /* col2im result (backward) */
  const void *bigshift;    /* per big channel, added to dbig (transposed bias) */
  void *dw;                /* (F, Cg, k...) */
  void *dsmall_sum;        /* (F) */
  void *dbig_sum;          /* (C) */
} nn_conv_job;

size_t nn_conv_ws_bytes(const nn_conv_geom *g);
void nn_conv_forward(const nn_conv_job *j);
void nn_conv_backward(const nn_conv_job *j);

/* Whole-tensor im2col (N, C*KK, P) of an NCHW big tensor, and its adjoint (overwrites big),
 * threaded over images and position ranges: the im2col and col2im operators. */
void nn_conv_unfold(const nn_conv_geom *g, opf_dtype dt, void *col, const void *big);
void nn_conv_fold(const nn_conv_geom *g, opf_dtype dt, void *big, const void *col);

/* ---- Winograd F(4x4, 3x3) (conv_wino.c): 2-D float32 (either layout), 3x3 window, stride
 * 1, dilation 1, one group, pad <= 2 (the data gradient pads by 2 - pad) ---- */
int nn_wino_fits(const nn_conv_geom *g, opf_dtype dt);
/* A dilated 3x3 stride-1 window (one group, float32, pad <= 2 * dilation): each of the dh*dw
 * output phases (every dh-th row from a, every dw-th column from b) is a dense 3x3 convolution
 * of the input's phase (pad <= 2), and nn_wino_forward and nn_wino_data_grad run those (the
 * data gradient: the same with pad 2*d - p); not the weight gradient nor the fused forms. */
int nn_wino_dil_fits(const nn_conv_geom *g, opf_dtype dt);
#define NN_WINO_MIN_CH 16 /* the default picks Winograd from this many channels (C and F) */
size_t nn_wino_ws_bytes(const nn_conv_geom *g);
/* y = conv(x, w) + b (b may be NULL); dx = the data gradient of gy, plus a per-channel bias
 * when not NULL (a transposed convolution's forward). ws: nn_wino_ws_bytes. */
void nn_wino_forward(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *x,
                     const void *w, const void *b, void *y);
void nn_wino_data_grad(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *gy,
                       const void *w, const void *bias, void *dx);
/* dw = the weight gradient of gy for input x (G^T [(A gy A^T) . (B^T x B)] G over the tiles). */
void nn_wino_weight_grad(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *x,
                         const void *gy, void *dw);
/* The same for the fused operators (conv2d_bias_relu, conv2d_batch_norm(_relu)), float32
 * pointers. Forward: y = relu?(conv(x, diag(wscale) w) + b); data gradient: dx from gy where
 * mask > 0 (mask: gy's shape) through diag(wscale) w; weight gradient: dw from gy where
 * mask > 0 (wscale not applied), and gsum (F) = the channel sums of that gy. */
typedef struct nn_wino_fuse {
  const void *wscale; /* per filter f (F), or NULL */
  const void *mask;   /* gradients: gy counts where mask > 0, or NULL */
  int relu;           /* forward */
  void *gsum;         /* weight gradient: (F), or NULL */
} nn_wino_fuse;
void nn_wino_forward_fused(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *x,
                           const void *w, const void *b, const nn_wino_fuse *fu, void *y);
void nn_wino_data_grad_fused(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *gy,
                             const void *w, const void *bias, const nn_wino_fuse *fu, void *dx);
void nn_wino_weight_grad_fused(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *x,
                               const void *gy, const nn_wino_fuse *fu, void *dw);
/* The automatic choice: Winograd fits and both channel counts reach NN_WINO_MIN_CH (a first
 * layer with C = 3 keeps im2col, whose hand-written small products serve it better). */
static inline int nn_wino_auto(const nn_conv_geom *g, opf_dtype dt) {
  return nn_wino_fits(g, dt) && g->C >= NN_WINO_MIN_CH && g->F >= NN_WINO_MIN_CH;
}

/* ---- the same for 3-D (conv_wino3d.c): float32 (channels first), KDx3x3 window (KD <= 7),
 * stride 1, dilation 1, one group, pad <= 2 in (h, w) and < KD in depth; Winograd in (h, w),
 * the depth taps summed in the transformed domain. Same contracts as nn_wino_*. ---- */
int nn_wino3d_fits(const nn_conv_geom *g, opf_dtype dt);
#define NN_WINO3D_MIN_TILES 16 /* the default also needs this many 4x4 tiles per plane */
size_t nn_wino3d_ws_bytes(const nn_conv_geom *g);
void nn_wino3d_forward(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *x,
                       const void *w, const void *b, void *y);
void nn_wino3d_data_grad(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *gy,
                         const void *w, const void *bias, void *dx);
void nn_wino3d_weight_grad(const nn_conv_geom *g, void *ws, size_t ws_bytes, const void *x,
                           const void *gy, void *dw);

/* ---- phase decomposition of a transposed convolution's forward, which is also a strided
 * convolution's data gradient (conv_subpix.c): 1-3 spatial dims, channels-first, dilation 1,
 * one group, at most 64 phases (stride product) ---- */
int nn_subpix_fits(const nn_conv_geom *g);
/* A stride above 1 along some axis (a convolution whose data gradient the phases serve). */
static inline int nn_conv_strided(const nn_conv_geom *g) {
  return g->s[0] * g->s[1] * g->s[2] > 1;
}
#define NN_SUBPIX_MIN_CH 16 /* the default picks it from this many output channels */
size_t nn_subpix_ws_bytes(const nn_conv_geom *g);
/* big = conv^T(small = x, w) + b per big channel (b may be NULL); ws: nn_subpix_ws_bytes. */
void nn_subpix_forward(const nn_conv_geom *g, opf_dtype dt, void *ws, size_t ws_bytes,
                       const void *x, const void *w, const void *b, void *y);

/* ---- direct grouped convolution (conv_group.c): 2-D float32 on AVX-512 CPUs, either layout,
 * at most 16 channels per group (a power of two in), output channels in whole vectors ----
 * nn_group_fits(g, dt, 0): forward and weight gradient; (g, dt, 1): also the data gradient
 * (stride 1, pad <= dilation * (k - 1); strided: by phases, channels first, 4k channels a
 * group; not for NN_GROUP_BLOCK8). ws: nn_group_ws_bytes. */
int nn_group_fits(const nn_conv_geom *g, opf_dtype dt, int dx);
/* The same bands of rows by an implicit GEMM instead (gemm = 1 below): one group, a dilated
 * window of at most 64 taps, any channel counts, each output row the sum over the taps of
 * the row's input pixels (read in place from the zero-padded band) times the tap's weight
 * (nn_gemm_taps). nn_group_gemm_fits(g, dt, dx) as nn_group_fits; the weight gradient stays
 * the direct kernel's (nn_group_fits(g, dt, 0)). */
int nn_group_gemm_fits(const nn_conv_geom *g, opf_dtype dt, int dx);
size_t nn_group_ws_bytes(const nn_conv_geom *g);
/* The kernels (`kind` below): the default (register blocks, planar rows for channels-first
 * stride 1), the implicit GEMM, the 8-pixel channels-last blocks (NN_ALGO_GROUP8). */
enum { NN_GROUP_DIRECT, NN_GROUP_GEMM, NN_GROUP_BLOCK8 };
/* y = conv(x, w) + b (b may be NULL), by the kernels `kind` */
void nn_group_forward(const nn_conv_geom *g, int kind, void *ws, size_t ws_bytes, const void *x,
                      const void *w, const void *b, void *y);
/* dx (needs nn_group_fits(g, dt, 1), or with NN_GROUP_GEMM nn_group_gemm_fits(g, dt, 1): by
 * the implicit GEMM), dw and db (need nn_group_fits(g, dt, 0)), each skipped when NULL */
void nn_group_backward(const nn_conv_geom *g, int kind, void *ws, size_t ws_bytes, const void *x,
                       const void *w, const void *gy, void *dx, void *dw, void *db);

/* ---- the convolutions' GEMM (conv_gemm.c): row-major C = op(A) op(B) + beta C, single
 * threaded; float32 on AVX-512 CPUs by its own packed kernel (scratch: nn_gemm_ws_bytes()
 * bytes, any alignment), everything else (or scratch NULL) by lin_gemm (OpenBLAS) ---- */
size_t nn_gemm_ws_bytes(void);
int nn_gemm_own(opf_dtype dt, int64_t M, int64_t N, int64_t K); /* would nn_gemm use its own */
void nn_gemm(opf_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A,
             int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc,
             void *ws);
/* An operand used by many products (a convolution's weight) packed once: side 0 is op(A)
 * (MN = M rows), side 1 op(B) (MN = N columns), trans its ta/tb, ld its leading dimension;
 * dst nn_gemm_pack_bytes(MN, K) bytes, 64-byte aligned. Only where nn_gemm_own says so. */
size_t nn_gemm_pack_bytes(int64_t MN, int64_t K);
void nn_gemm_pack(int side, int trans, int64_t MN, int64_t K, const void *X, int64_t ld,
                  void *dst);
/* The same packing split in strips (register-tile rows of side 0, columns of side 1): strips
 * [s0, s1) of the nn_gemm_pack_strips(side, MN) strips, so threads can share one packing. */
int64_t nn_gemm_pack_strips(int side, int64_t MN);
void nn_gemm_pack_part(int side, int trans, int64_t MN, int64_t K, const void *X, int64_t ld,
                       void *dst, int64_t s0, int64_t s1);
/* nn_gemm by its own kernel (float32, nn_gemm_own) with op(A) and/or op(B) prepacked
 * (apk / bpk not NULL: A / B and its transpose flag are then not read). */
void nn_gemm_pre(int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A, int64_t lda,
                 const void *B, int64_t ldb, double beta, void *C, int64_t ldc, void *ws,
                 const void *apk, const void *bpk);
/* ... and a bias added in the kernel's stores (no second pass over C): C = op(A) op(B) +
 * beta C + bias, bias[j] per column (brow 0: N entries) or bias[i] per row (brow 1: M). */
void nn_gemm_pre_bias(int ta, int tb, int64_t M, int64_t N, int64_t K, const void *A,
                      int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc,
                      void *ws, const void *apk, const void *bpk, const float *bias, int brow);

/* The kernel's register tile: MR rows of op(A) by NR columns of op(B). */
#define NN_GEMM_MR 14
#define NN_GEMM_NR 32
/* The implicit GEMM of a direct convolution (conv_group.c), by the same register tile: C (M x
 * N, ldc apart) = sum over the ntap taps t of A_t (M x kt) B_t (kt x N), plus bias[j] (NULL:
 * none) when first, else added to C. Row i of A_t starts at A + toff[t] + i*lda and is read
 * whole for every i below M rounded up to NN_GEMM_MR (the caller leaves that slack readable;
 * what it holds is never stored). B_t prepacked in NN_GEMM_NR-wide strips, bs floats apart:
 * element (k, j) of B_t at bpk[j / NR * bs + (t*kt + k) * NR + j % NR], zero past N. Float32,
 * single threaded, only where nn_gemm_taps_ok() (AVX-512). */
int nn_gemm_taps_ok(void);
void nn_gemm_taps(int64_t M, int64_t N, int64_t ntap, int64_t kt, const float *A, int64_t lda,
                  const int64_t *toff, const float *bpk, int64_t bs, float *C, int64_t ldc,
                  int first, const float *bias);

/* ---- naive references (double accumulation, one element at a time) ---- */
/* small[n, f, o] = b[f] + sum_{c, t} big[n, c, o*s - p + t*d] w[f, c, t] */
void nn_conv_ref_fwd(const nn_conv_geom *g, opf_dtype dt, const void *big, const void *w,
                     const void *b, void *small);
/* big = b + the transpose of the above applied to small (a scatter) */
void nn_conv_ref_tfwd(const nn_conv_geom *g, opf_dtype dt, const void *small, const void *w,
                      const void *b, void *big);
/* col[n, c*KK + t, o] = big[n, c, o*s - p + t*d] (0 in the padding); with fold, the adjoint
 * big[n, c, i] = sum of the col entries that read it. NCHW. */
void nn_conv_ref_cols(const nn_conv_geom *g, opf_dtype dt, void *big, void *col, int fold);

/* ---- operator side: descriptor conventions and infer ----
 * Every convolution descriptor has inputs x, w, b (w derived from the params when omitted)
 * at the indices given here and some of the params filters, kernel, kd, kh, kw, stride, pad,
 * output_padding, dilation, groups, layout (looked up by name). */
typedef struct nn_conv_spec {
  const char *name;       /* for messages */
  int nd;                 /* 1, 2 or 3 */
  int transpose;          /* x is the small side, y = conv^T(x) */
  int in_x, in_w, in_b;   /* input indices (in_b < 0: no bias input) */
} nn_conv_spec;

/* Validates x, w, b and the params, derives the omitted w and b, sets out[0] and fills g. */
int nn_conv_infer(opf_case *c, const nn_conv_spec *sp, nn_conv_geom *g);
/* The geometry of a case infer accepted (kernels, references, models). */
void nn_conv_geom_of(const opf_case *c, const nn_conv_spec *sp, nn_conv_geom *g);
/* Multiply-adds of the GEMM product, N*F*P*Kc, and the element count of the big side. */
static inline double nn_conv_macs(const nn_conv_geom *g) {
  return (double)g->N * (double)g->F * (double)g->P * (double)g->Kc;
}
static inline double nn_conv_big_elems(const nn_conv_geom *g) {
  return (double)g->N * (double)g->C * (double)g->S;
}
static inline double nn_conv_small_elems(const nn_conv_geom *g) {
  return (double)g->N * (double)g->F * (double)g->P;
}

/* Param descriptors shared by the convolution operators (ranges as conv2d always had). */
#define NN_CONV_P_FILTERS(def)                                                                 \
  {"filters", OPF_P_INT, def, 1, 1 << 20, NULL, "output channels F (when w is omitted)"}
#define NN_CONV_P_KERNEL                                                                       \
  {"kernel", OPF_P_INT, 3, 1, 1 << 16, NULL, "kernel size in every dimension (when w is omitted)"}
#define NN_CONV_P_K(name, what)                                                                \
  {name, OPF_P_INT, 0, 0, 1 << 16, NULL, "kernel " what ", 0 = kernel (when w is omitted)"}
#define NN_CONV_P_STRIDE {"stride", OPF_P_INT, 1, 1, 1 << 16, NULL, "stride in every dimension"}
#define NN_CONV_P_PAD(def)                                                                     \
  {"pad", OPF_P_INT, def, 0, 1 << 16, NULL, "zero padding on each side"}
#define NN_CONV_P_OUTPAD                                                                       \
  {"output_padding", OPF_P_INT, 0, 0, 1 << 16, NULL,                                           \
   "extra output rows/cols at the end (< stride or dilation)"}
#define NN_CONV_P_DILATION(def)                                                                \
  {"dilation", OPF_P_INT, def, 1, 1 << 16, NULL, "spacing between kernel taps"}
#define NN_CONV_P_GROUPS(def)                                                                  \
  {"groups", OPF_P_INT, def, 1, 1 << 20, NULL, "channel groups (C and F divisible)"}
#define NN_CONV_P_LAYOUT(choices)                                                              \
  {"layout", OPF_P_ENUM, 0, 0, 0, choices,                                                     \
   "channels first or last (the weight stays (F, C/groups, k...))"}

/* ---- hooks of the plain and transposed convolution descriptors (conv.c, conv_transpose.c):
 * inputs x, w, b (indices 0-2), a `layout` param whose choices give the rank, transposed when
 * the descriptor has an `output_padding` param. ---- */
int nn_conv_op_infer(opf_case *c);
void nn_conv_op_geom(const opf_case *c, nn_conv_geom *g);
int nn_conv_op_forward(opf_case *c);
int nn_conv_op_backward(opf_case *c);
/* The same passes with the algorithm chosen (the built-in implementations, conv_impls.c):
 * NN_ALGO_AUTO the default (the fastest that fits), NN_ALGO_GEMM the im2col/col2im core
 * always, NN_ALGO_FAST Winograd (3x3 stride 1, plain or transposed) or else the phase
 * decomposition (transposed) wherever they fit, the core elsewhere; NN_ALGO_BLAS the default's
 * choices with every GEMM by OpenBLAS (NN_ALGO_GEMM uses OpenBLAS too), not nn_gemm's kernel;
 * NN_ALGO_CORE the im2col core with nn_gemm's kernel always (grouped and dilated convolutions
 * before the direct kernel of conv_group.c); NN_ALGO_NOWINO the default's choices without
 * Winograd (conv3d as it was before it); NN_ALGO_DIRECT the default's choices with the direct
 * kernels of conv_group.c and no Winograd (dilated convolutions before both); NN_ALGO_TAPS
 * the same with conv_group.c's implicit GEMM wherever it fits; NN_ALGO_GROUP8 the default's
 * choices with conv_group.c's 8-pixel channels-last blocks (before its register blocks and
 * planar kernels). */
enum {
  NN_ALGO_AUTO,
  NN_ALGO_GEMM,
  NN_ALGO_FAST,
  NN_ALGO_BLAS,
  NN_ALGO_CORE,
  NN_ALGO_NOWINO,
  NN_ALGO_DIRECT,
  NN_ALGO_TAPS,
  NN_ALGO_GROUP8
};
int nn_conv_op_run_fwd(opf_case *c, int algo);
int nn_conv_op_run_bwd(opf_case *c, int algo);
int nn_conv_op_reference(opf_case *c);
double nn_conv_op_flops(const opf_case *c, opf_pass p);
#define NN_CONV_OP_HOOKS                                                                       \
  .infer = nn_conv_op_infer, .forward = nn_conv_op_forward, .backward = nn_conv_op_backward,  \
  .reference = nn_conv_op_reference, .flops = nn_conv_op_flops, .bytes = opf_default_bytes

/* Input descriptors shared by the convolution operators. */
#define NN_CONV_IN_X(xhelp)                                                                    \
  {.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1, .help = xhelp}
#define NN_CONV_IN_W(whelp)                                                                    \
  {.name = "w", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -0.5, .hi = 0.5,             \
   .help = whelp "; derived from filters/kernel when omitted"}
#define NN_CONV_IN_B                                                                           \
  {.name = "b", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF | OPF_IN_OPTIONAL, .lo = -1,        \
   .hi = 1, .help = "bias (F); b=none drops it"}
#define NN_CONV_INPUTS(xhelp, whelp)                                                           \
  .n_in = 3, .in = {NN_CONV_IN_X(xhelp), NN_CONV_IN_W(whelp), NN_CONV_IN_B}, .n_out = 1,       \
  .out = {"y"}

/* conv2d's inputs and params (also grouped/dilated_conv2d and conv2d_bias_relu). */
#define NN_CONV2D_P(filters, pad, dilation, groups)                                           \
  NN_CONV_P_FILTERS(filters), NN_CONV_P_KERNEL, NN_CONV_P_K("kh", "height"),                   \
      NN_CONV_P_K("kw", "width"), NN_CONV_P_STRIDE, NN_CONV_P_PAD(pad),                        \
      NN_CONV_P_DILATION(dilation), NN_CONV_P_GROUPS(groups)
#define NN_CONV2D_PARAMS(filters, pad, dilation, groups)                                      \
  .n_params = 9,                                                                               \
  .params = {NN_CONV2D_P(filters, pad, dilation, groups), NN_CONV_P_LAYOUT("NCHW|NHWC")}
#define NN_CONV2D_INPUTS                                                                          \
  NN_CONV_INPUTS("input (N, C, H, W), or (N, H, W, C) with layout=NHWC",                      \
                 "filters (F, C/groups, KH, KW)")

/* Layout param choices per spatial rank (index 0: channels first). */
static inline const char *nn_conv_layouts(int nd) {
  return nd == 1 ? "NCW|NWC" : nd == 2 ? "NCHW|NHWC" : "NCDHW|NDHWC";
}

#endif
