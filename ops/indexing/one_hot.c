/* one_hot.c: y[..., k] = (k == idx[...]) ? on_value : off_value, y of shape idx.shape + (depth,)
 * in the case dtype. An index outside [0, depth) gives an all-off row (TensorFlow and MXNet
 * semantics), so there is nothing to reject. Forward-only; memory-bound on the writes: blocks
 * of rows are filled with off_value by a vectorised loop, then the on elements are set while
 * the block is still in L1. */
#include "indexing.h"

enum { IN_IDX = 0 };
enum { P_DEPTH = 0, P_ON = 1, P_OFF = 2 };

#define OH_BLOCK 2048 /* elements filled before their on values are set (8-16 KiB) */

/* y rows [lo, hi) of depth elements. */
#define OH_KERNEL(T, sfx)                                                                      \
  OPF_VEC static void oh_fill_##sfx(T *restrict y, int64_t n, T v) {                           \
    for (int64_t i = 0; i < n; i++) y[i] = v;                                                  \
  }                                                                                            \
  static void oh_rows_##sfx(T *restrict y, const int64_t *restrict idx, int64_t lo,           \
                            int64_t hi, int64_t depth, T on, T off) {                          \
    int64_t rb = OH_BLOCK / depth > 0 ? OH_BLOCK / depth : 1;                                  \
    for (int64_t r0 = lo; r0 < hi; r0 += rb) {                                                 \
      int64_t r1 = r0 + rb < hi ? r0 + rb : hi;                                                \
      oh_fill_##sfx(y + r0 * depth, (r1 - r0) * depth, off);                                   \
      for (int64_t r = r0; r < r1; r++)                                                        \
        if ((uint64_t)idx[r] < (uint64_t)depth) y[r * depth + idx[r]] = on;                    \
    }                                                                                          \
  }
OH_KERNEL(float, f32)
OH_KERNEL(double, f64)
OH_KERNEL(int32_t, i32)
OH_KERNEL(int64_t, i64)

typedef struct {
  const opf_case *c;
} oh_ctx;

static void oh_range(int64_t lo, int64_t hi, void *p) {
  const opf_case *c = ((const oh_ctx *)p)->c;
  const int64_t *idx = c->in[IN_IDX].data, depth = (int64_t)c->p[P_DEPTH];
  const double on = c->p[P_ON], off = c->p[P_OFF];
  void *y = c->out[0].data;
  switch (c->dtype) {
  case OPF_F32: oh_rows_f32(y, idx, lo, hi, depth, (float)on, (float)off); break;
  case OPF_F64: oh_rows_f64(y, idx, lo, hi, depth, on, off); break;
  case OPF_I32: oh_rows_i32(y, idx, lo, hi, depth, (int32_t)on, (int32_t)off); break;
  default: oh_rows_i64(y, idx, lo, hi, depth, (int64_t)on, (int64_t)off); break;
  }
}

static int oh_forward(opf_case *c) {
  oh_ctx t = {c};
  int64_t rows = opf_numel(&c->in[IN_IDX]), depth = (int64_t)c->p[P_DEPTH];
  opf_parallel_range(rows, OPF_PAR_MIN / depth + 1, oh_range, &t);
  return OPF_OK;
}

/* By the definition, element by element. */
static int oh_reference(opf_case *c) {
  const int64_t *idx = c->in[IN_IDX].data, depth = (int64_t)c->p[P_DEPTH];
  const int64_t rows = opf_numel(&c->in[IN_IDX]);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t k = 0; k < depth; k++) {
      double v = idx[r] == k ? c->p[P_ON] : c->p[P_OFF];
      int64_t e = r * depth + k;
      switch (c->dtype) {
      case OPF_F32: ((float *)c->out[0].data)[e] = (float)v; break;
      case OPF_F64: ((double *)c->out[0].data)[e] = v; break;
      case OPF_I32: ((int32_t *)c->out[0].data)[e] = (int32_t)v; break;
      default: ((int64_t *)c->out[0].data)[e] = (int64_t)v; break;
      }
    }
  return OPF_OK;
}

static int oh_infer(opf_case *c) {
  opf_tensor *idx = &c->in[IN_IDX];
  char si[96];
  if (idx->ndim < 0)
    return opf_case_error(c, OPF_EINVAL, "input 'indices' needs a shape (e.g. indices=1024 depth=1024)");
  if (idx->ndim + 1 > OPF_MAX_DIMS)
    return opf_case_error(c, OPF_EINVAL, "indices=%s plus the depth axis exceeds rank %d",
                          opf_shape_str(idx, si, sizeof si), OPF_MAX_DIMS);
  if (!opf_dtype_is_float(c->dtype) && (c->p[P_ON] != (double)(int64_t)c->p[P_ON] ||
                                        c->p[P_OFF] != (double)(int64_t)c->p[P_OFF]))
    return opf_case_error(c, OPF_EINVAL, "on_value=%g / off_value=%g must be integers for dtype %s",
                          c->p[P_ON], c->p[P_OFF], opf_dtype_name(c->dtype));
  int64_t shape[OPF_MAX_DIMS];
  memcpy(shape, idx->shape, sizeof(int64_t) * (size_t)idx->ndim);
  shape[idx->ndim] = (int64_t)c->p[P_DEPTH];
  opf_set_out(c, 0, c->dtype, idx->ndim + 1, shape);
  return OPF_OK;
}

static int fill_indices(opf_case *c, int i, opf_rng *r) {
  (void)r;
  ix_fill(c, i, (int64_t)c->p[P_DEPTH]);
  return OPF_OK;
}

/* No arithmetic; reads the indices once and writes y once. */
static double oh_flops(const opf_case *c, opf_pass p) {
  (void)c, (void)p;
  return 0;
}
static double oh_bytes(const opf_case *c, opf_pass p) {
  (void)p; /* forward-only: every pass is the forward */
  return 8.0 * (double)opf_numel(&c->in[IN_IDX]) +
         (double)opf_numel(&c->out[0]) * (double)opf_dtype_size(c->dtype);
}

OPPERF_OP(one_hot) = {
    .abi = OPF_OP_ABI,
    .name = "one_hot",
    .category = "indexing",
    .summary = "one-hot rows: y[..., k] = k == idx[...] ? on_value : off_value",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {{.name = "indices", .dtype = OPF_I64, .fill = fill_indices,
            .help = "int64 classes, valid in [0, depth) (others give all-off rows)"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 3,
    .params = {{.name = "depth", .type = OPF_P_INT, .def = 1024, .min = 1, .max = 1e12,
                .help = "number of classes (the new last axis)"},
               {.name = "on_value", .type = OPF_P_FLOAT, .def = 1, .min = -1e30, .max = 1e30,
                .help = "value at the index"},
               {.name = "off_value", .type = OPF_P_FLOAT, .def = 0, .min = -1e30, .max = 1e30,
                .help = "value elsewhere"}},
    .shapes = {{"standard", "indices=1024 depth=1024"},
               {"skewed", "indices=10000 depth=10"},
               {"skewed", "indices=10 depth=10000"},
               {"skewed", "indices=100000 depth=16"},
               {"skewed", "indices=32x128 depth=1000"},
               {"small", "indices=16 depth=16"},
               {"small", "indices=1 depth=64"},
               {"small", "indices=37 depth=3"},
               {"small", "indices=3x4 depth=5 on_value=2 off_value=-1"},
               {"small", "indices=() depth=7"},
               {"test", "indices=301 depth=517"},
               {"test", "indices=50001 depth=3"},
               {"large", "indices=65536 depth=8192"}},
    .infer = oh_infer,
    .forward = oh_forward,
    .reference = oh_reference,
    .flops = oh_flops,
    .bytes = oh_bytes,
};
