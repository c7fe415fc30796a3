/* conv_wino.h: the plan and the per-channel transforms of the 2-D Winograd F(4x4, 3x3)
 * convolution (conv_wino.c), shared with the 3-D driver (conv_wino3d.c), which runs them on
 * each depth slice and sums the depth taps in the transformed domain. Float32 only. */
#ifndef OPPERF_NN_CONV_WINO_H
#define OPPERF_NN_CONV_WINO_H

#include "conv_core.h"

#define WINO_M 4      /* output tile */
#define WINO_A 6      /* input tile (alpha) */
#define WINO_XI 36    /* transform points */

/* The plan of one Winograd convolution: src (N, Ci, Hi, Wi) to dst (N, Co, Ho, Wo), pads. */
typedef struct wino_plan {
  int64_t N, Ci, Co, Hi, Wi, Ho, Wo, ph, pw;
  int nhwc;           /* channels last: each item's rows go through planar copies (slot T) */
  int64_t TH, TW, rb; /* tiles down and across, tile rows per item */
  int64_t Tb;         /* tiles per item (rb * TW) */
  int own;            /* GEMMs by nn_gemm's own kernel (else OpenBLAS) */
  /* the fused operators' additions (nn_wino_fuse): */
  const float *wsc;   /* per weight row f of w (F, C, 3, 3): w[f] scaled by it, or NULL */
  const float *mask;  /* the gy side counts only where mask > 0 (gy's layout), or NULL */
  int relu;           /* output transform: max(y, 0) after the bias */
  float *gsum;        /* weight gradient: per gy channel sums of the (masked) gy, or NULL */
  /* a dilated convolution (dh*dw > 1, conv_wino.c: its phases are the dense convolutions):
   * the whole tensors' input and output extents and pads; the fields above then describe the
   * first row phase, TW the tiles of all column phases side by side (items and scratch sized
   * for them) */
  int64_t dh, dw, HA, WA, HoA, WoA, phA, pwA;
} wino_plan;
/* Fills p for a 3x3 stride-1 convolution of (N, Ci, Hi, Wi) channel planes (each channel's
 * plane contiguous, rows Wi apart) padded by ph, pw, and its 2-D work items (rb tile rows, Tb
 * tiles); own: the GEMMs may use nn_gemm's own kernel. */
void nn_wino_plan(wino_plan *p, int64_t N, int64_t Ci, int64_t Co, int64_t Hi, int64_t Wi,
                  int64_t ph, int64_t pw, int own);
/* Floats of transform scratch for items of up to p->Tb tiles. */
static inline int64_t nn_wino_scratch_floats(const wino_plan *p) {
  return 72 * p->Tb + 4 * p->TW + 8;
}
/* U[xi][co][ci] (36, Co, Ci) = G w G^T of the 3x3 windows w[co][ci] (flip: the flipped
 * w[ci][co] of a data gradient); wt: 9 * Ci * Co floats of scratch. */
void nn_wino_weights(float *U, float *wt, const float *w, const wino_plan *p, int flip);
/* dw[co][ci] (3x3 windows) = G^T dU[.][co][ci] G, the adjoint of nn_wino_weights (flip 0). */
void nn_wino_unweights(float *dw, const float *dU, const wino_plan *p);
/* One channel's plane xc over tile rows [ty0, ty0 + rb): V[xi*vs + t] = B^T d B per tile. */
void nn_wino_input(float *V, int64_t vs, const float *xc, const wino_plan *p, int64_t ty0,
                   int64_t rb, float *scratch);
/* One output channel's plane yc over those tiles: A^T M A + bias (M[xi*ms + t]). */
void nn_wino_output(float *yc, const float *M, int64_t ms, const wino_plan *p, int64_t ty0,
                    int64_t rb, float bias, float *scratch);
/* The adjoint of nn_wino_output for one output-gradient plane gc: G[xi*ms + t] = A dY A^T. */
void nn_wino_grad(float *G, int64_t ms, const float *gc, const wino_plan *p, int64_t ty0,
                  int64_t rb, float *scratch);

#endif
