/* test_models_shape.c: the layout (shape) and join operators: golden flops and bytes at one
 * standard shape each (derived by hand below), output shapes from infer, the error paths the
 * generic driver cannot see, and the threaded / blocked / partial-sum kernel paths at shapes
 * beyond the "test" set: forward against the reference, and backward as the exact adjoint of
 * forward (<F x, g> = <x, F^T g>) on 1 to 3 threads; and the shared copy kernel (shp_move,
 * shp_copy) byte for byte across its paths. */
#include <math.h>
#include <omp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "shape/shape.h"
#include "test_support.h"

static double model(const opf_op *op, const opf_case *c, int flops, opf_pass p) {
  return flops ? (op->flops ? op->flops : opf_default_flops)(c, p)
               : (op->bytes ? op->bytes : opf_default_bytes)(c, p);
}

/* Exact flops and bytes of one case for the three passes. */
static void golden(const char *name, opf_dtype dt, const char *spec, double f_fwd, double f_bwd,
                   double b_fwd, double b_bwd) {
  const opf_op *op = ts_op(name);
  opf_case c;
  opf_err e;
  if (opf_case_init(&c, op, dt, spec, &e)) fail_msg("%s [%s]: %s", name, spec, e.msg);
  const double got[6] = {model(op, &c, 1, OPF_PASS_FWD), model(op, &c, 1, OPF_PASS_BWD),
                         model(op, &c, 1, OPF_PASS_BOTH), model(op, &c, 0, OPF_PASS_FWD),
                         model(op, &c, 0, OPF_PASS_BWD), model(op, &c, 0, OPF_PASS_BOTH)};
  const double want[6] = {f_fwd, f_bwd, f_fwd + f_bwd, b_fwd, b_bwd, b_fwd + b_bwd};
  for (int k = 0; k < 6; k++)
    if (got[k] != want[k])
      fail_msg("%s [%s]: %s %s is %.17g, want %.17g", name, spec, k < 3 ? "flops" : "bytes",
               opf_pass_name((opf_pass)(k % 3)), got[k], want[k]);
}

static void test_golden_models(void **state) {
  (void)state;
  const double MiB = 1024.0 * 1024.0;
  /* Pure copies and permutations: no flops; each pass reads and writes the tensor once.
   * (1024,1024) float32 is 4 MiB: 8 MiB a pass; float64 16 MiB. (32,64,56,56) has 6422528
   * elements: 51380224 bytes a pass in float32, 102760448 in float64. The backward of the
   * reshape family and swapaxes hands dx back as a view of g: 0 bytes (depth_to_space's is a
   * 6-D permutation, written). */
  golden("reshape", OPF_F32, "x=1024x1024 shape=512,-1", 0, 0, 8 * MiB, 0);
  golden("flatten", OPF_F32, "x=32x64x56x56", 0, 0, 51380224.0, 0);
  golden("expand_dims", OPF_F64, "x=1024x1024 axis=0", 0, 0, 16 * MiB, 0);
  golden("squeeze", OPF_F32, "x=1024x1x1024", 0, 0, 8 * MiB, 0);
  golden("swapaxes", OPF_F32, "x=32x64x56x56 axis1=2 axis2=3", 0, 0, 51380224.0, 0);
  golden("depth_to_space", OPF_F32, "x=32x64x56x56", 0, 0, 51380224.0, 51380224.0);
  golden("space_to_depth", OPF_F64, "x=32x64x56x56 mode=crd", 0, 0, 102760448.0, 102760448.0);
  golden("flip", OPF_F32, "x=1024x1024 axis=0", 0, 0, 8 * MiB, 8 * MiB);
  golden("roll", OPF_F32, "x=1024x1024 shift=100 axis=1", 0, 0, 8 * MiB, 8 * MiB);
  /* pad (32,64,56,56) by 1 on H and W, float32: x 6422528 elements, y 32*64*58*58 = 6889472;
   * the forward moves x + y = 13312000 elements = 53248000 bytes; a constant pad's backward
   * hands dx back as a view of dy (0 bytes, no adds). Reflect by 2: y = 32*64*60*60 = 7372800,
   * and backward adds each of the y - x = 950272 pad elements into the element it mirrors;
   * (x + y) * 4 = 55181312. */
  golden("pad", OPF_F32, "x=32x64x56x56 pad_width=1,1,1,1", 0, 0, 53248000.0, 0.0);
  golden("pad", OPF_F32, "x=32x64x56x56 pad_width=2,2,2,2 mode=reflect", 0, 950272.0,
         55181312.0, 55181312.0);
  /* diag of (1024,1024) float32: taking 1024 elements 4100 bytes apart costs a 64-byte line
   * each plus 4 bytes written: 1024 * 68 = 69632; backward writes the whole 4 MiB dx and
   * reads 1024 elements: 4194304 + 4096 = 4198400. A 1024 vector placed on a diagonal swaps
   * the two passes. */
  golden("diag", OPF_F32, "x=1024x1024", 0, 0, 69632.0, 4198400.0);
  golden("diag", OPF_F32, "x=1024", 0, 0, 4198400.0, 69632.0);
  /* broadcast_to (1,1024) -> (1024,1024) float32: reads 1024 and writes 1048576 elements,
   * (1024 + 1048576) * 4 = 4198400 bytes; backward reads g and writes dx (the same bytes) and
   * folds 1048576 values into 1024 sums: 1047552 adds. */
  golden("broadcast_to", OPF_F32, "x=1x1024 shape=1024x1024", 0, 1047552.0, 4198400.0, 4198400.0);
  /* tile (512,512) 2x2 float32: x 262144, y 1048576: (x + y) * 4 = 5242880; 786432 adds.
   * repeat (1024,512) twice on axis 1: x 524288, y 1048576: 6291456 bytes, 524288 adds. */
  golden("tile", OPF_F32, "x=512x512 reps=2,2", 0, 786432.0, 5242880.0, 5242880.0);
  golden("repeat", OPF_F32, "x=1024x512 repeats=2 axis=1", 0, 524288.0, 6291456.0, 6291456.0);
  /* stack of two (1024,1024) float32 on the last axis: the output is 8 MiB, read or written
   * once per side: 16 MiB forward; the backward's pieces are views of g: 0. split and split_sections move x (4 or 8 MiB) both ways. */
  golden("stack", OPF_F32, "a=1024x1024 b=1024x1024 axis=-1", 0, 0, 16 * MiB, 0);
  golden("split", OPF_F32, "x=1024x1024 sections=4 axis=1", 0, 0, 8 * MiB, 8 * MiB);
  golden("split_sections", OPF_F64, "x=1024x1024 sections=256,768", 0, 0, 16 * MiB, 16 * MiB);
}

/* Output k of a spec as "AxB". */
static void expect_out(const char *name, const char *spec, int k, const char *want) {
  opf_case c;
  opf_err e;
  char s[96];
  if (opf_case_init(&c, ts_op(name), OPF_F32, spec, &e)) fail_msg("%s [%s]: %s", name, spec, e.msg);
  opf_shape_str(&c.out[k], s, sizeof s);
  if (strcmp(s, want)) fail_msg("%s [%s]: output %d is %s, want %s", name, spec, k, s, want);
}
static void expect_shape(const char *name, const char *spec, const char *want) {
  expect_out(name, spec, 0, want);
}

static void test_shapes(void **state) {
  (void)state;
  expect_shape("reshape", "x=1024x1024 shape=512,-1", "512x2048");
  expect_shape("reshape", "x=2x3x4 shape=4,1,-1", "4x1x6");
  expect_shape("reshape", "x=() shape=1,1", "1x1");
  expect_shape("flatten", "x=32x64x56x56", "32x200704");
  expect_shape("flatten", "x=2x3x4 axis=0", "1x24");
  expect_shape("flatten", "x=2x3x4 axis=-1", "6x4");
  expect_shape("expand_dims", "x=2x3 axis=-1", "2x3x1");
  expect_shape("expand_dims", "x=2x3 axis=1", "2x1x3");
  expect_shape("squeeze", "x=1x2x1x3", "2x3");
  expect_shape("squeeze", "x=1x2x1x3 axis=2", "1x2x3");
  expect_shape("swapaxes", "x=2x3x4x5 axis1=1 axis2=-1", "2x5x4x3");
  expect_shape("depth_to_space", "x=2x36x5x7 block=3", "2x4x15x21");
  expect_shape("space_to_depth", "x=2x4x15x21 block=3", "2x36x5x7");
  expect_shape("flip", "x=3x4 axis=all", "3x4");
  expect_shape("roll", "x=3x4 shift=-7", "3x4");
  expect_shape("pad", "x=32x64x56x56 pad_width=1,2,3,4", "32x64x59x63");
  expect_shape("pad", "x=5x6 pad_width=2,3,0,0 mode=edge", "10x6");
  expect_shape("diag", "x=3x5 k=1", "3");
  expect_shape("diag", "x=3x5 k=-2", "1");
  expect_shape("diag", "x=3x5 k=9", "0");
  expect_shape("diag", "x=4 k=-2", "6x6");
  expect_shape("broadcast_to", "x=1x3 shape=2,4,3", "2x4x3");
  expect_shape("broadcast_to", "x=5x1 shape=-1,7", "5x7");
  expect_shape("broadcast_to", "x=() shape=2,2", "2x2");
  expect_shape("tile", "x=2x3 reps=2", "2x6");
  expect_shape("tile", "x=2x3 reps=2,1,3", "2x2x9");
  expect_shape("repeat", "x=2x3 repeats=3", "18");
  expect_shape("repeat", "x=2x3 repeats=3 axis=0", "6x3");
  expect_shape("stack", "a=2x3 b=2x3 c=2x3", "3x2x3");
  expect_shape("stack", "a=2x3 b=2x3 axis=-1", "2x3x2");
  expect_shape("stack", "a=2x3 b=2x3 d=2x3 axis=1", "2x3x3");
  expect_out("split", "x=6x8 sections=4 axis=1", 3, "6x2");
  expect_out("split", "x=6x8 sections=3", 2, "2x8");
  expect_out("split", "x=6x8 sections=3", 3, "0x8"); /* past the sections: empty */
  expect_out("split_sections", "x=10x4 sections=2,-1,3", 1, "5x4");
  expect_out("split_sections", "x=10x4 sections=2,-1,3", 3, "0x4");
  expect_out("split_sections", "x=10x4 sections=4,0 axis=1", 1, "10x0");
}

static void test_errors(void **state) {
  (void)state;
  ts_expect_einval("reshape", "x=4x6 shape=5,-1", "cannot reshape x=4x6 (24 elements) to shape with -1");
  ts_expect_einval("reshape", "x=4x6 shape=-1,-1", "more than one -1 (entries 0 and 1)");
  ts_expect_einval("reshape", "x=4x6 shape=5,5", "cannot reshape x=4x6 (24 elements) to a shape of 25");
  ts_expect_einval("reshape", "x=4x6 shape=-2,12", "value -2 outside its range");
  ts_expect_einval("reshape", "x=4x6 shape=2,3y4", "malformed list");
  ts_expect_einval("reshape", "shape=2,3", "input 'x' needs a shape");
  ts_expect_einval("flatten", "x=2x3 axis=3", "axis=3 is out of range for x=2x3 (-2..2)");
  ts_expect_einval("flatten", "x=2x3 axis=all", "axis=all is not allowed");
  ts_expect_einval("expand_dims", "x=2x3 axis=3", "axis=3 is out of range for x=2x3: the new axis goes at -3..2");
  ts_expect_einval("expand_dims", "x=1x1x1x1x1x1x1x2", "already has the maximum rank 8");
  ts_expect_einval("squeeze", "x=2x3 axis=0", "cannot squeeze axis 0 of x=2x3: it has 2 elements, not 1");
  ts_expect_einval("squeeze", "x=2x1 axis=2", "axis=2 is out of range for x=2x1");
  ts_expect_einval("swapaxes", "x=2x3 axis1=0 axis2=2", "axis2=2 is out of range for x=2x3");
  ts_expect_einval("depth_to_space", "x=2x6x3x3", "block=2 needs channels divisible by 4, got x=2x6x3x3");
  ts_expect_einval("depth_to_space", "x=2x8x3", "needs a 4-D NCHW tensor, got x=2x8x3");
  ts_expect_einval("depth_to_space", "x=2x8x3x3 block=0", "outside its range");
  ts_expect_einval("depth_to_space", "x=2x8x3x3 mode=rdc", "must be one of dcr|crd");
  ts_expect_einval("space_to_depth", "x=1x2x5x4", "needs height and width divisible by it, got x=1x2x5x4");
  ts_expect_einval("flip", "x=2x3 axis=2", "axis=2 is out of range for x=2x3");
  ts_expect_einval("roll", "x=2x3 shift=1,2", "without axis, roll takes one shift");
  ts_expect_einval("roll", "x=2x3 shift=1,2,3 axis=0,1", "shift has 3 values but axis has 2");
  ts_expect_einval("roll", "x=2x3 shift=1 axis=2", "axis 2 is out of range for x=2x3");
  ts_expect_einval("roll", "x=2x3 shift=none", "roll needs at least one shift");
  ts_expect_einval("pad", "x=2x3 pad_width=1,1,1", "(before, after) pairs for the trailing axes, got 3 values");
  ts_expect_einval("pad", "x=3 pad_width=1,1,1,1", "pad_width has 2 pairs but x=3 has rank 1");
  ts_expect_einval("pad", "x=2x3 pad_width=0,0,3,1 mode=reflect",
                   "mode=reflect needs pads shorter than the axis: axis 1 of x=2x3 has 3, pads 3,1");
  ts_expect_einval("pad", "x=2x0 pad_width=1,1 mode=edge", "mode=edge cannot pad axis 1 of x=2x0: it is empty");
  ts_expect_einval("pad", "x=2x3 pad_width=-1,1", "value -1 outside its range");
  ts_expect_einval("pad", "x=2x3 mode=wrap", "must be one of constant|edge|reflect");
  ts_expect_einval("diag", "x=2x3x4", "diag needs a 1-D vector or a 2-D matrix, got x=2x3x4 (rank 3)");
  ts_expect_einval("broadcast_to", "x=2x3 shape=4,3",
                   "x=2x3 cannot be broadcast to shape entry 0 = 4: x's axis 0 has 2, not 1");
  ts_expect_einval("broadcast_to", "x=2x3 shape=3", "shape has rank 1, below the rank 2 of x=2x3");
  ts_expect_einval("broadcast_to", "x=3 shape=-1,3", "shape entry 0 is -1");
  ts_expect_einval("tile", "x=2x3 reps=none", "reps needs at least one value");
  ts_expect_einval("tile", "x=2x3 reps=2,-1", "value -1 outside its range");
  ts_expect_einval("repeat", "x=2x3 axis=2", "axis=2 is out of range for x=2x3");
  ts_expect_einval("repeat", "x=2x3 repeats=-1", "outside its range");
  ts_expect_einval("stack", "a=2x3 b=3x2", "stack needs equal shapes: 'b' is 3x2, 'a' is 2x3");
  ts_expect_einval("stack", "a=2x3 b=2x3 axis=3", "axis=3 is out of range for stacking a=2x3");
  ts_expect_einval("stack", "a=2x3 b=2x3 axis=all", "axis=all is not allowed");
  ts_expect_einval("stack", "a=2x3", "input 'b' needs a shape");
  ts_expect_einval("split", "x=5x4 sections=2", "axis 0 of x=5x4 has 5 elements, not divisible into 2 equal sections");
  ts_expect_einval("split", "x=8x4 sections=5", "outside its range");
  ts_expect_einval("split", "x=4 axis=1", "axis=1 is out of range for x=4");
  ts_expect_einval("split_sections", "x=10x4 sections=3,3", "sections do not add up to axis 0 of x=10x4 (10 elements)");
  ts_expect_einval("split_sections", "x=10 sections=11,-1", "sections do not add up");
  ts_expect_einval("split_sections", "x=10 sections=-1,-1", "sections has more than one -1");
  ts_expect_einval("split_sections", "x=10 sections=1,2,3,-1,4", "sections lists 5 sizes: give 1 to 4");
}

/* Sum over all elements of a[i] * b[i] for the tensors of one side, and of |a[i] * b[i]|. */
static void dot_side(const opf_tensor *a, const opf_tensor *b, int n, double *s, double *abs_s) {
  for (int i = 0; i < n; i++) {
    if (!a[i].data || !b[i].data) continue;
    for (int64_t k = 0; k < opf_numel(&a[i]); k++) {
      double t = ts_get(&a[i], k) * ts_get(&b[i], k);
      *s += t, *abs_s += fabs(t);
    }
  }
}

/* r: c's inputs with fresh outputs (no workspace) holding the reference's result. */
static void run_reference(const opf_op *op, const opf_case *c, opf_case *r, const char *spec) {
  opf_err e;
  *r = *c;
  r->ws = NULL;
  r->ws_bytes = 0;
  for (int k = 0; k < op->n_out; k++) {
    opf_tensor_set_shape(&r->out[k], c->out[k].dtype, c->out[k].ndim, c->out[k].shape);
    if (opf_tensor_alloc(&r->out[k], &e)) fail_msg("%s", e.msg);
  }
  if (op->reference(r)) fail_msg("%s [%s]: reference: %s", op->name, spec, r->err.msg);
}

/* On nt threads: forward against the reference, then backward as forward's adjoint:
 * <y, g> = <x, dx> for these linear operators (float64 to rounding; float32 looser). Operators
 * whose dx is a view of g run twice: the view (read through its strides) and implementation
 * materialize, whose kernels write dx. */
static void check_paths_impl(const char *name, const char *spec, int nt, opf_dtype dt, int impl) {
  const opf_op *op = ts_op(name);
  omp_set_num_threads(nt);
  opf_case c, r;
  opf_err e0;
  if (opf_case_init(&c, op, dt, spec, &e0) || opf_case_set_impl(&c, impl, &e0) ||
      opf_case_alloc(&c, 1, &e0) || opf_case_fill(&c, 23, &e0))
    fail_msg("%s [%s]: %s", name, spec, e0.msg);
  if (op->forward(&c) || op->backward(&c)) fail_msg("%s [%s]: %s", name, spec, c.err.msg);
  run_reference(op, &c, &r, spec);
  char msg[256];
  for (int k = 0; k < op->n_out; k++) {
    if (ts_compare(&c.out[k], &r.out[k], 0, msg, sizeof msg))
      fail_msg("%s %s [%s] on %d threads: output %d: %s", name, opf_dtype_name(dt), spec, nt, k, msg);
    opf_tensor_free(&r.out[k]);
  }
  double yg = 0, yg_abs = 0, xd = 0, xd_abs = 0;
  dot_side(c.out, c.gout, op->n_out, &yg, &yg_abs);
  dot_side(c.in, c.gin, op->n_in, &xd, &xd_abs);
  double tol = (dt == OPF_F64 ? 1e-12 : 1e-5) * (yg_abs > xd_abs ? yg_abs : xd_abs);
  if (!(fabs(yg - xd) <= tol))
    fail_msg("%s %s [%s] on %d threads: <y, g> = %.17g but <x, dx> = %.17g", name,
             opf_dtype_name(dt), spec, nt, yg, xd);
  opf_case_release(&c);
}

static void check_paths(const char *name, const char *spec, int nt, opf_dtype dt) {
  check_paths_impl(name, spec, nt, dt, OPF_IMPL_NATIVE);
  if (opf_op_has_impl(ts_op(name), OPF_IMPL_MATERIALIZE))
    check_paths_impl(name, spec, nt, dt, OPF_IMPL_MATERIALIZE);
}

static void test_kernel_paths(void **state) {
  (void)state;
  static const char *const cases[][2] = {
      /* broadcast: row copies, fills, the partial sums of a dx smaller than the threads */
      {"broadcast_to", "x=1x517 shape=301x517"},
      {"broadcast_to", "x=301x1 shape=301x517"},
      {"broadcast_to", "x=1 shape=70001"},
      {"broadcast_to", "x=1x1 shape=300x301"},
      {"broadcast_to", "x=7x1x13 shape=7x4001x13"},
      {"broadcast_to", "x=1x3x1 shape=5000x3x7"},
      {"broadcast_to", "x=1x64x1x1 shape=8x64x9x9"},
      {"broadcast_to", "x=1x40000 shape=3x40000"},
      /* tile and repeat: replicated blocks, expansions (r < 16) and long fills */
      {"tile", "x=301x517 reps=2,1"},
      {"tile", "x=37x13 reps=50,3"},
      {"tile", "x=3x5x7 reps=2,300,2"},
      {"tile", "x=20000 reps=3"},
      {"tile", "x=8x16x14x14 reps=1,1,2,2"},
      /* short rows replicated from registers (bc_rep_rows): a masked last vector, whole
       * vectors only (16 x 4 float32, 8 x 4 float64), a replicated axis above, 64-bit rows */
      {"tile", "x=10000x10 reps=1,4"},
      {"tile", "x=3001x3 reps=1,5"},
      {"tile", "x=777x16 reps=2,4"},
      {"tile", "x=501x8 reps=1,4"},
      {"tile", "x=4x9x6 reps=3,1,2"},
      /* x + y = 31.5 MB: above 7/8 of the LLC, streamed (bc_streams) */
      {"tile", "x=32x3x128x128 reps=1,1,2,2"},
      {"repeat", "x=301x517 repeats=3 axis=1"},
      {"repeat", "x=3x40001 repeats=2 axis=0"},
      {"repeat", "x=70001 repeats=17"},
      {"repeat", "x=5x3001x7 repeats=4 axis=2"},
      {"repeat", "x=8x16x14x14 repeats=2 axis=3"},
      /* the row engine: short rows with prefetch, chunked long rows, pad gathers */
      {"pad", "x=301x517 pad_width=3,4,5,6 mode=reflect"},
      {"pad", "x=8x16x30x30 pad_width=1,1,1,1 mode=edge"},
      {"pad", "x=8x16x30x30 pad_width=2,2,2,2"},
      {"pad", "x=2x30001 pad_width=1,2,17,3 mode=edge"},
      {"flip", "x=8x16x30x30 axis=2"},
      {"flip", "x=301x517 axis=all"},
      {"flip", "x=2x40001 axis=1"},
      /* tiny rows many at a time (rm_vperiods: periods of lcm(m, 16), the rows after the last
       * whole period one at a time; m = 13 has vectors spanning 32+ sources: not taken) */
      {"flip", "x=10000x10 axis=1"},
      {"flip", "x=777x3 axis=1"},
      {"flip", "x=301x16 axis=-1"},
      {"flip", "x=5x33x13 axis=2"},
      {"roll", "x=999x7 shift=3 axis=1"},
      {"roll", "x=4001x12 shift=-5 axis=1"},
      {"roll", "x=8x16x30x30 shift=3,5 axis=2,3"},
      {"roll", "x=3x40001 shift=-30001 axis=1"},
      {"roll", "x=7x9x11x13 shift=1000"},
      {"diag", "x=517 k=-3"},
      {"diag", "x=301x517 k=7"},
      {"reshape", "x=301x517 shape=-1"},
      {"swapaxes", "x=5x67x3x45 axis1=1 axis2=3"},
      /* gathered rows (3 or 5 channels innermost): full 16-row blocks and ragged edges */
      {"swapaxes", "x=3x3x64x200 axis1=1 axis2=3"},
      {"swapaxes", "x=2x5x37x45 axis1=1 axis2=-1"},
      {"swapaxes", "x=3x7x11x13x2 axis1=1 axis2=3"},
      {"depth_to_space", "x=2x16x61x67 block=4 mode=crd"},
      {"space_to_depth", "x=4x64x66x80"},
      {"concat", "a=301x517 b=301x517 c=301x3 axis=1"},
      {"stack", "a=70001 b=70001 c=70001 axis=1"},
      {"stack", "a=40001x2 b=40001x2 axis=1"},
      {"split", "x=40001x3 sections=3 axis=1"},
      {"split_sections", "x=301x517 sections=100,-1,17 axis=1"},
  };
  int saved = omp_get_max_threads();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int nt = 1; nt <= 3; nt++) {
      check_paths(cases[i][0], cases[i][1], nt, OPF_F64);
      check_paths(cases[i][0], cases[i][1], nt, OPF_F32);
    }
  omp_set_num_threads(saved);
}

/* Integer dtypes move as 4- or 8-byte words through the same kernels: bit-exact copies. */
static void test_integer_words(void **state) {
  (void)state;
  static const char *const cases[][2] = {
      {"pad", "x=8x16x30x30 pad_width=1,1,1,1 value=-7"},
      {"tile", "x=8x16x14x14 reps=1,1,2,2"},
      /* short rows replicated from registers (bc_rep_rows): a masked last vector, whole
       * vectors only (16 x 4 float32, 8 x 4 float64), a replicated axis above, 64-bit rows */
      {"tile", "x=10000x10 reps=1,4"},
      {"tile", "x=3001x3 reps=1,5"},
      {"tile", "x=777x16 reps=2,4"},
      {"tile", "x=501x8 reps=1,4"},
      {"tile", "x=4x9x6 reps=3,1,2"},
      /* x + y = 31.5 MB: above 7/8 of the LLC, streamed (bc_streams) */
      {"tile", "x=32x3x128x128 reps=1,1,2,2"},
      {"repeat", "x=301x517 repeats=3 axis=1"},
      {"stack", "a=40001 b=40001 c=40001 d=40001 axis=-1"},
      {"split", "x=40001x4 sections=4 axis=1"},
      {"depth_to_space", "x=2x16x61x67 block=4"},
  };
  int saved = omp_get_max_threads();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int dt = OPF_I32; dt <= OPF_I64; dt++) {
      const opf_op *op = ts_op(cases[i][0]);
      omp_set_num_threads(2);
      opf_case c, r;
      ts_case_ready(&c, op, (opf_dtype)dt, cases[i][1], 0, 29);
      if (op->forward(&c)) fail_msg("%s: %s", cases[i][0], c.err.msg);
      run_reference(op, &c, &r, cases[i][1]);
      for (int k = 0; k < op->n_out; k++) {
        if (memcmp(c.out[k].data, r.out[k].data, c.out[k].nbytes))
          fail_msg("%s %s [%s]: output %d differs", cases[i][0], opf_dtype_name((opf_dtype)dt),
                   cases[i][1], k);
        opf_tensor_free(&r.out[k]);
      }
      opf_case_release(&c);
    }
  omp_set_num_threads(saved);
}

/* Inputs and outputs together beyond the 32 MiB LLC take the streaming-store paths: rows
 * copied (and filled) without the read-for-ownership. broadcast_to and tile are checked row
 * by row against x, the others against their references and as adjoints. */
static void test_streaming_outputs(void **state) {
  (void)state;
  static const char *const specs[] = {"x=1x4099 shape=4099x4099", "x=4099x1 shape=4099x4099"};
  for (int s = 0; s < 2; s++) {
    opf_case c;
    ts_case_ready(&c, ts_op("broadcast_to"), OPF_F32, specs[s], 0, 31);
    assert_int_equal(ts_op("broadcast_to")->forward(&c), OPF_OK);
    const float *x = c.in[0].data, *y = c.out[0].data;
    for (int64_t i = 0; i < 4099; i++)
      for (int64_t j = 0; j < 4099; j++)
        if (y[i * 4099 + j] != x[s ? i : j])
          fail_msg("broadcast_to [%s]: y[%lld, %lld] = %g, want %g", specs[s], (long long)i,
                   (long long)j, y[i * 4099 + j], x[s ? i : j]);
    opf_case_release(&c);
  }
  /* the copies of the other engines stream too once input + output exceed 32 MiB */
  static const char *const big[][2] = {
      {"reshape", "x=2100x2100 shape=-1"},
      {"flip", "x=2100x2100 axis=0"},
      {"flip", "x=2100x2100 axis=1"},
      {"flip", "x=2100x2101 axis=all"},
      {"roll", "x=2100x2100 shift=700 axis=1"},
      {"pad", "x=2100x2100 pad_width=1,2,3,4"},
      {"concat", "a=2100x1050 b=2100x1050 axis=1"},
      {"split", "x=2100x2100 sections=2 axis=1"},
      /* gathered-row transpose with streamed whole lines */
      {"swapaxes", "x=6x3x640x720 axis1=1 axis2=3"},
  };
  int saved = omp_get_max_threads();
  /* one thread streams from the LLC's size, two from 5/4 of it (shp_streams_from): the
   * 2100x2100 cases (35 MB moved) stream on one thread only */
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
    for (int nt = 1; nt <= 2; nt++) check_paths(big[i][0], big[i][1], nt, OPF_F32);
  omp_set_num_threads(saved);
  opf_case c;
  ts_case_ready(&c, ts_op("tile"), OPF_I64, "x=1031x1029 reps=4,2", 0, 37);
  assert_int_equal(ts_op("tile")->forward(&c), OPF_OK);
  const int64_t *x = c.in[0].data, *y = c.out[0].data;
  for (int64_t i = 0; i < 4 * 1031; i++)
    for (int h = 0; h < 2; h++)
      if (memcmp(y + (i * 2 + h) * 1029, x + (i % 1031) * 1029, 1029 * sizeof *x))
        fail_msg("tile: output row %lld half %d differs from x row %lld", (long long)i, h,
                 (long long)(i % 1031));
  opf_case_release(&c);
}


/* The copy kernel of the layout and join families, byte for byte: every path of shp_move
 * (short AVX-512 runs, memcpy, rep movsb from SHP_LONG_RUN, streaming) at lengths around each
 * switch and the vector width, unaligned source and destination; then shp_copy on 1 and 2
 * threads at sizes around its threading, rep movsb and streaming thresholds. Guard bytes on
 * both sides of the destination must stay untouched. */
#define CK_GUARD 64
static void ck_fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)((i * 131u + seed) % 251u);
}
static void ck_expect(const unsigned char *dbuf, size_t doff, const unsigned char *s, size_t n,
                      const char *what, int nt, int threads) {
  const unsigned char *d = dbuf + CK_GUARD + doff;
  if (memcmp(d, s, n)) {
    size_t i = 0;
    while (d[i] == s[i]) i++;
    fail_msg("%s: %zu bytes (destination offset %zu, nt %d, %d threads): byte %zu is %u, want %u",
             what, n, doff, nt, threads, i, d[i], s[i]);
  }
  for (size_t i = 0; i < CK_GUARD + doff; i++)
    if (dbuf[i] != 0xa5) fail_msg("%s: %zu bytes: wrote %zu bytes before the destination", what, n, CK_GUARD + doff - i);
  for (size_t i = 0; i < CK_GUARD; i++)
    if (d[n + i] != 0xa5) fail_msg("%s: %zu bytes (destination offset %zu): wrote past the end (byte %zu)", what, n, doff, i);
}
static void test_copy_kernel(void **state) {
  (void)state;
  const size_t M = (size_t)1 << 20, L = SHP_LONG_RUN, big = 32 * M + 256;
  unsigned char *src = opf_alloc(big + 128), *dst = opf_alloc(big + 2 * CK_GUARD + 128);
  assert_non_null(src);
  assert_non_null(dst);
  ck_fill(src, big + 128, 7);
  const int avx512 = shp_have_avx512() != 0;
  const size_t lens[] = {0, 4, 60, 64, 68, 252, 256, 260, 2044, 2048, 2052, 4100, 65540,
                         L - 4, L, L + 68};
  const size_t soffs[] = {0, 4, 28, 60}, doffs[] = {0, 4, 36};
  for (size_t a = 0; a < sizeof lens / sizeof *lens; a++)
    for (size_t so = 0; so < 4; so++)
      for (size_t o = 0; o < 3; o++)
        for (int nt = 0; nt <= avx512; nt++) {
          const size_t n = lens[a];
          memset(dst, 0xa5, n + doffs[o] + 2 * CK_GUARD);
          shp_move(nt, avx512, dst + CK_GUARD + doffs[o], src + soffs[so], n);
          shp_sfence();
          ck_expect(dst, doffs[o], src + soffs[so], n, "shp_move", nt, 1);
        }
  /* shp_copy: threads from SHP_PAR_BYTES; halves of 2 L and more take rep movsb; streaming
   * from 16 MiB (one thread) and 32 MiB (two: shp_streams_runs) */
  const size_t sizes[] = {SHP_PAR_BYTES - 4, SHP_PAR_BYTES + 68, 2 * L - 4, 2 * L + 4,
                          16 * M - 4, 16 * M + 68, 32 * M - 4, 32 * M + 68};
  int saved = omp_get_max_threads(), streamed[2][2] = {{0}};
  for (int threads = 1; threads <= 2; threads++) {
    omp_set_num_threads(threads);
    for (size_t a = 0; a < sizeof sizes / sizeof *sizes; a++)
      for (size_t o = 0; o < 2; o++) {
        const size_t n = sizes[a], doff = o ? 36 : 0, soff = o ? 28 : 0;
        streamed[threads - 1][shp_streams_runs(2.0 * (double)n)] = 1;
        memset(dst, 0xa5, n + doff + 2 * CK_GUARD);
        shp_copy(dst + CK_GUARD + doff, src + soff, n);
        ck_expect(dst, doff, src + soff, n, "shp_copy", shp_streams_runs(2.0 * (double)n), threads);
      }
  }
  omp_set_num_threads(saved);
  /* both sides of the streaming threshold were taken on each thread count */
  for (int t = 0; t < 2; t++) {
    assert_true(streamed[t][0]);
    assert_int_equal(streamed[t][1], avx512);
  }
  opf_free(src);
  opf_free(dst);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_models),
      cmocka_unit_test(test_shapes),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_kernel_paths),
      cmocka_unit_test(test_integer_words),
      cmocka_unit_test(test_streaming_outputs),
      cmocka_unit_test(test_copy_kernel),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
