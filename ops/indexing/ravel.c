/* ravel.c: ravel_multi_index, flat[n] = row-major position of coords (K, N...) in a shape
 * (list param), and its inverse unravel_index. Both int64 and forward-only; invalid coords
 * or positions are errors, as in NumPy. Ravel is the family's threaded Horner flatten;
 * unravel divides with a double-precision reciprocal and one exact integer correction, which
 * vectorises where a 64-bit integer division does not. */
#include "indexing.h"

enum { IN_A = 0 };
enum { P_SHAPE = 0 };

#define UR_BLK 512        /* positions whose running quotients stay in L1 */
#define UR_MAX_TOTAL (1LL << 50) /* shape size limit for the reciprocal quotient */

static int rv_unravel(const opf_case *c) { return !strcmp(c->op->name, "unravel_index"); }

static int rv_infer(opf_case *c) {
  opf_tensor *a = &c->in[IN_A];
  const opf_list *s = &c->list[P_SHAPE];
  char sa[96];
  if (s->n < 1)
    return opf_case_error(c, OPF_EINVAL, "%s needs shape=... (e.g. shape=1024x1024)", c->op->name);
  int64_t total = 1;
  for (int k = 0; k < s->n; k++) {
    if (s->v[k] < 1) return opf_case_error(c, OPF_EINVAL, "shape dim %d is %lld: dims must be >= 1", k, (long long)s->v[k]);
    if (total > UR_MAX_TOTAL / s->v[k])
      return opf_case_error(c, OPF_EINVAL, "shape has more than 2^50 elements");
    total *= s->v[k];
  }
  int64_t shape[OPF_MAX_DIMS];
  if (rv_unravel(c)) { /* flat (N...) -> coords (K, N...) */
    if (a->ndim < 0) return opf_case_error(c, OPF_EINVAL, "input 'indices' needs a shape (e.g. indices=1048576)");
    if (a->ndim + 1 > OPF_MAX_DIMS)
      return opf_case_error(c, OPF_EINVAL, "indices=%s gives coords of rank above %d",
                            opf_shape_str(a, sa, sizeof sa), OPF_MAX_DIMS);
    shape[0] = s->n;
    memcpy(shape + 1, a->shape, sizeof(int64_t) * (size_t)a->ndim);
    opf_set_out(c, 0, OPF_I64, a->ndim + 1, shape);
    return OPF_OK;
  }
  if (a->ndim < 0) return opf_case_error(c, OPF_EINVAL, "input 'coords' needs a shape (e.g. coords=2x1048576)");
  if (a->ndim < 1 || a->shape[0] != s->n)
    return opf_case_error(c, OPF_EINVAL, "coords=%s must be (K, N...) with K = %d, the length of shape",
                          opf_shape_str(a, sa, sizeof sa), s->n);
  opf_set_out(c, 0, OPF_I64, a->ndim - 1, a->shape + 1);
  return OPF_OK;
}

static int fill_coords(opf_case *c, int i, opf_rng *r) {
  (void)r;
  ix_fill_coords(c, i, c->list[P_SHAPE].v);
  return OPF_OK;
}

static int fill_flat(opf_case *c, int i, opf_rng *r) {
  (void)r;
  ix_fill(c, i, opf_shape_numel(c->list[P_SHAPE].n, c->list[P_SHAPE].v));
  return OPF_OK;
}

static int ravel_forward(opf_case *c) {
  return ix_flatten(c, c->in[IN_A].data, c->list[P_SHAPE].n, opf_numel(&c->out[0]),
                    c->list[P_SHAPE].v, c->out[0].data, "coords");
}

/* ---- unravel ---- */
/* Positions [lo, hi): peel coordinates from the last dim: q = v / d by the reciprocal, then
 * the remainder fixes q by one (for v < 2^50 the rounded quotient is off by at most one). */
OPF_VEC static int64_t ur_kernel(const int64_t *restrict flat, int64_t N, int K,
                                 const int64_t *restrict dims, const double *restrict inv,
                                 int64_t total, int64_t *restrict out, int64_t lo, int64_t hi) {
  int64_t v[UR_BLK], bad = 0;
  for (int64_t b0 = lo; b0 < hi; b0 += UR_BLK) {
    const int64_t nb = hi - b0 < UR_BLK ? hi - b0 : UR_BLK;
    for (int64_t j = 0; j < nb; j++) {
      int64_t f = flat[b0 + j];
      int ok = (uint64_t)f < (uint64_t)total;
      bad += !ok;
      v[j] = ok ? f : 0; /* a bad position is reported; keep the arithmetic defined */
    }
    for (int k = K - 1; k >= 0; k--) {
      const int64_t d = dims[k];
      const double di = inv[k];
      int64_t *restrict row = out + k * N + b0;
      for (int64_t j = 0; j < nb; j++) {
        int64_t q = (int64_t)((double)v[j] * di), r = v[j] - q * d;
        q += (r >= d) - (r < 0);
        row[j] = v[j] - q * d;
        v[j] = q;
      }
    }
  }
  return bad;
}

typedef struct {
  const opf_case *c;
  double inv[OPF_MAX_DIMS];
  int64_t total, bad;
} ur_ctx;

static void ur_range(int64_t lo, int64_t hi, void *p) {
  ur_ctx *t = p;
  const opf_case *c = t->c;
  int64_t bad = ur_kernel(c->in[IN_A].data, opf_numel(&c->in[IN_A]), c->list[P_SHAPE].n,
                          c->list[P_SHAPE].v, t->inv, t->total, c->out[0].data, lo, hi);
  if (bad) __atomic_fetch_add(&t->bad, bad, __ATOMIC_RELAXED);
}

static int unravel_forward(opf_case *c) {
  const opf_list *s = &c->list[P_SHAPE];
  ur_ctx t = {.c = c, .total = opf_shape_numel(s->n, s->v)};
  for (int k = 0; k < s->n; k++) t.inv[k] = 1.0 / (double)s->v[k];
  int64_t N = opf_numel(&c->in[IN_A]);
  opf_parallel_range(N, OPF_PAR_MIN / (s->n + 1), ur_range, &t);
  if (!t.bad) return OPF_OK;
  const int64_t *f = c->in[IN_A].data;
  int64_t j = 0;
  while ((uint64_t)f[j] < (uint64_t)t.total) j++;
  return opf_case_error(c, OPF_EINVAL, "index %lld at position %lld is outside [0, %lld) (the size of shape)",
                        (long long)f[j], (long long)j, (long long)t.total);
}

/* By the definition, with integer division and a bounds check per value. */
static int rv_reference(opf_case *c) {
  const opf_list *s = &c->list[P_SHAPE];
  const int64_t *a = c->in[IN_A].data;
  int64_t *o = c->out[0].data;
  const int unr = rv_unravel(c);
  const int64_t N = unr ? opf_numel(&c->in[IN_A]) : opf_numel(&c->out[0]);
  for (int64_t n = 0; n < N; n++) {
    if (unr) {
      int64_t v = a[n];
      if (v < 0 || v >= opf_shape_numel(s->n, s->v)) return opf_case_error(c, OPF_EINVAL, "index out of range");
      for (int k = s->n - 1; k >= 0; k--) o[k * N + n] = v % s->v[k], v /= s->v[k];
    } else {
      int64_t f = 0;
      for (int k = 0; k < s->n; k++) {
        int64_t v = a[k * N + n];
        if (v < 0 || v >= s->v[k]) return opf_case_error(c, OPF_EINVAL, "coordinate out of range");
        f = f * s->v[k] + v;
      }
      o[n] = f;
    }
  }
  return OPF_OK;
}

/* A multiply and an add per coordinate (unravel: a reciprocal multiply and a multiply-subtract);
 * bytes: the K coordinates and the flat position of every element, int64. */
static double rv_flops(const opf_case *c, opf_pass p) {
  (void)p;
  return 2.0 * (double)opf_numel(rv_unravel(c) ? &c->out[0] : &c->in[IN_A]);
}
static double rv_bytes(const opf_case *c, opf_pass p) {
  (void)p;
  return 8.0 * (double)(opf_numel(&c->in[IN_A]) + opf_numel(&c->out[0]));
}

#define RV_SHAPE_PARAM                                                                         \
  {.name = "shape", .type = OPF_P_LIST, .defs = "none", .min = 1, .max = 1e15,                \
   .help = "the shape indexed (required)"}

OPPERF_OP(ravel_multi_index) = {
    .abi = OPF_OP_ABI,
    .name = "ravel_multi_index",
    .category = "indexing",
    .summary = "flat row-major positions of int64 coords (K, N...) in a shape",
    .dtypes = OPF_DT_BIT(OPF_I64),
    .n_in = 1,
    .in = {{.name = "coords", .dtype = OPF_DT_CASE, .fill = fill_coords,
            .help = "int64 (K, N...): row k valid in [0, shape[k])"}},
    .n_out = 1,
    .out = {"flat"},
    .n_params = 1,
    .params = {RV_SHAPE_PARAM},
    .shapes = {{"standard", "coords=2x1048576 shape=1024x1024"},
               {"skewed", "coords=2x100000 shape=10000x10"},
               {"skewed", "coords=2x100000 shape=10x10000"},
               {"skewed", "coords=4x1048576 shape=32x64x56x56"},
               {"small", "coords=2x16 shape=16x16"},
               {"small", "coords=2x64 shape=1x64"},
               {"small", "coords=2x37 shape=37x3"},
               {"small", "coords=3x2x5 shape=3x4x5"},
               {"small", "coords=1 shape=7"},
               {"test", "coords=3x100003 shape=301x517x3"},
               {"large", "coords=2x67108864 shape=8192x8192"}},
    .infer = rv_infer,
    .forward = ravel_forward,
    .reference = rv_reference,
    .flops = rv_flops,
    .bytes = rv_bytes,
};

OPPERF_OP(unravel_index) = {
    .abi = OPF_OP_ABI,
    .name = "unravel_index",
    .category = "indexing",
    .summary = "int64 coords (K, N...) of flat row-major positions in a shape",
    .dtypes = OPF_DT_BIT(OPF_I64),
    .n_in = 1,
    .in = {{.name = "indices", .dtype = OPF_DT_CASE, .fill = fill_flat,
            .help = "int64 flat positions, valid in [0, prod(shape))"}},
    .n_out = 1,
    .out = {"coords"},
    .n_params = 1,
    .params = {RV_SHAPE_PARAM},
    .shapes = {{"standard", "indices=1048576 shape=1024x1024"},
               {"skewed", "indices=100000 shape=10000x10"},
               {"skewed", "indices=100000 shape=10x10000"},
               {"skewed", "indices=1048576 shape=32x64x56x56"},
               {"small", "indices=16 shape=16x16"},
               {"small", "indices=64 shape=1x64"},
               {"small", "indices=37 shape=37x3"},
               {"small", "indices=2x5 shape=3x4x5"},
               {"small", "indices=() shape=7"},
               {"small", "indices=50 shape=1000003x999983"},
               {"test", "indices=100003 shape=301x517x3"},
               {"large", "indices=67108864 shape=8192x8192"}},
    .infer = rv_infer,
    .forward = unravel_forward,
    .reference = rv_reference,
    .flops = rv_flops,
    .bytes = rv_bytes,
};
