/* dropout.c: inverted dropout. Train: y = x * keep / (1 - p), keep drawn per element from the
 * counter-based generator keyed by the case seed (element k's draw depends only on the seed
 * and k: the same mask for forward, backward and reference, whatever the thread split);
 * inference: y = x. Forward also stores the mask as bytes for backward (see DROP_STORE). */
#include "conv_common.h"
#include "random/rand_common.h"

enum { P_P, P_MODE };
enum { MODE_TRAIN, MODE_INFERENCE };

/* Elements below which a pass stays on one thread: the copy and mask passes are as cheap as
 * a copy (OPF_PAR_MIN); generating the mask costs about 1 cycle per element, ~8 times a
 * copied element, so it threads 8 times earlier (as the unary maps' libm-class functions). */
#define DROP_PAR_MIN OPF_PAR_MIN
#define DROP_GEN_PAR_MIN (OPF_PAR_MIN / 8)

typedef struct drop_ctx {
  const void *src; /* x (forward) or dy (backward) */
  void *dst;
  opf_dtype dt;
  uint64_t key;    /* generator key */
  uint32_t t;      /* drop when the element's 32 random bits are below t */
  double scale;    /* 1 / (1 - p) */
  uint8_t *mask;   /* DROP_STORE: keep flags written by forward */
  int from_mask;   /* DROP_STORE backward: apply the stored mask */
} drop_ctx;

/* 1: forward also stores the keep flags (a byte per element, in the workspace) and backward
 * applies them; 0: backward regenerates the mask from the seed. Measured (float32, 1 thread):
 * at 1024x1024 the forward takes 214 us either way and the backward 82 us from the stored
 * mask against 213 us regenerating it; at 8192x8192, 72 against 102 ms. Generating is
 * compute-bound (~1 cycle per element), the extra byte per element of traffic is not. */
#ifndef DROP_STORE
#define DROP_STORE 1
#endif

/* One 64-bit draw decides two elements: element k uses 32-bit half (k & 1) of draw k >> 1
 * and is kept when that half is >= t = min(ceil(p * 2^32), 2^32 - 1) (a drop probability of
 * p to within 2^-32). Halving the draws made the forward 1.5x faster (330 -> 214 us at
 * 1024x1024): the generator (four 64-bit multiplies per draw) bounds it, not memory. Per
 * block, one loop writes the draws and a second reads them as 32-bit halves (little-endian:
 * half 0 is the low word), both plainly vectorisable. */
#define DROP_BLK 512 /* draws per block: 1024 elements, a 4 KiB buffer */
typedef uint32_t drop_u32 __attribute__((may_alias));
#define DROP_KERNEL(T, S)                                                                      \
  OPF_VEC static void drop_##S(const T *restrict x, T *restrict y, uint8_t *restrict m,       \
                               int64_t k0, int64_t n, uint64_t key, uint32_t t, T scale) {    \
    uint64_t bb[DROP_BLK];                                                                    \
    const drop_u32 *u = (const drop_u32 *)bb;                                                 \
    for (int64_t i = 0; i < n;) {                                                             \
      const int64_t k = k0 + i, j0 = k >> 1, h = k & 1; /* u[h] is element k's half */        \
      const int64_t len = n - i < 2 * DROP_BLK - h ? n - i : 2 * DROP_BLK - h;                \
      const int64_t nd = (h + len + 1) >> 1;                                                  \
      for (int64_t j = 0; j < nd; j++) bb[j] = rc_bits(key, j0 + j, 0);                       \
      const T *restrict xs = x + i;                                                           \
      T *restrict ys = y + i;                                                                 \
      const drop_u32 *us = u + h;                                                             \
      if (m) {                                                                                \
        uint8_t *restrict ms = m + i;                                                         \
        for (int64_t e = 0; e < len; e++) {                                                   \
          int keep = us[e] >= t;                                                              \
          ys[e] = keep ? xs[e] * scale : (T)0;                                                \
          ms[e] = (uint8_t)keep;                                                              \
        }                                                                                     \
      } else {                                                                                \
        for (int64_t e = 0; e < len; e++) ys[e] = us[e] >= t ? xs[e] * scale : (T)0;          \
      }                                                                                       \
      i += len;                                                                               \
    }                                                                                         \
  }                                                                                           \
  /* backward from a stored mask */                                                           \
  OPF_VEC static void drop_mask_##S(const T *restrict g, T *restrict dx,                      \
                                    const uint8_t *restrict m, int64_t n, T scale) {          \
    for (int64_t i = 0; i < n; i++) dx[i] = m[i] ? g[i] * scale : (T)0;                       \
  }
DROP_KERNEL(float, f32)
DROP_KERNEL(double, f64)

static void drop_range(int64_t lo, int64_t hi, void *p) {
  const drop_ctx *d = p;
  uint8_t *m = d->mask ? d->mask + lo : NULL;
  if (d->dt == OPF_F32) {
    const float *x = (const float *)d->src + lo;
    float *y = (float *)d->dst + lo;
    if (d->from_mask) drop_mask_f32(x, y, m, hi - lo, (float)d->scale);
    else drop_f32(x, y, m, lo, hi - lo, d->key, d->t, (float)d->scale);
  } else {
    const double *x = (const double *)d->src + lo;
    double *y = (double *)d->dst + lo;
    if (d->from_mask) drop_mask_f64(x, y, m, hi - lo, d->scale);
    else drop_f64(x, y, m, lo, hi - lo, d->key, d->t, d->scale);
  }
}

static void copy_range(int64_t lo, int64_t hi, void *p) {
  const drop_ctx *d = p;
  size_t e = opf_dtype_size(d->dt);
  memcpy((char *)d->dst + (size_t)lo * e, (const char *)d->src + (size_t)lo * e,
         (size_t)(hi - lo) * e);
}

static drop_ctx drop_make(const opf_case *c, const void *src, void *dst) {
  double p = c->p[P_P];
  opf_rng r;
  opf_rng_init(&r, c->seed, RC_STREAM);
  drop_ctx d = {.src = src, .dst = dst, .dt = c->dtype, .key = r.key,
                .t = (uint32_t)fmin(ceil(p * 0x1p32), 4294967295.0), .scale = 1.0 / (1.0 - p)};
  return d;
}

/* y = mask(x) in train mode, a copy in inference mode; the backward is the same map of dy
 * (the mask and scale are constants of the forward). */
static int drop_apply(opf_case *c, const void *src, void *dst, int bwd) {
  drop_ctx d = drop_make(c, src, dst);
  d.mask = DROP_STORE ? c->ws : NULL;
  d.from_mask = DROP_STORE && bwd;
  int train = (int)c->p[P_MODE] == MODE_TRAIN;
  int64_t par_min = train && !d.from_mask ? DROP_GEN_PAR_MIN : DROP_PAR_MIN;
  opf_parallel_range(opf_numel(&c->in[0]), par_min, train ? drop_range : copy_range, &d);
  return OPF_OK;
}

static int drop_infer(opf_case *c) {
  if (!(c->p[P_P] < 1))
    return opf_case_error(c, OPF_EINVAL, "dropout needs 0 <= p < 1 (p=%g): p = 1 drops every "
                          "element and the scale 1/(1-p) is infinite", c->p[P_P]);
  opf_set_out(c, 0, c->dtype, c->in[0].ndim, c->in[0].shape);
  if (DROP_STORE && (int)c->p[P_MODE] == MODE_TRAIN) c->ws_bytes = (size_t)opf_numel(&c->in[0]);
  return OPF_OK;
}

static int drop_forward(opf_case *c) {
  return drop_apply(c, c->in[0].data, c->out[0].data, 0);
}

static int drop_backward(opf_case *c) {
  return c->gin[0].data ? drop_apply(c, c->gout[0].data, c->gin[0].data, 1) : OPF_OK;
}

/* Reference: the mask through the library generator (opf_rng), element by element. */
static int drop_reference(opf_case *c) {
  drop_ctx d = drop_make(c, c->in[0].data, c->out[0].data);
  int train = (int)c->p[P_MODE] == MODE_TRAIN;
  opf_rng r;
  opf_rng_init(&r, c->seed, RC_STREAM);
  int64_t n = opf_numel(&c->in[0]);
  for (int64_t k = 0; k < n; k++) {
    double x = nn_ld(c->in[0].data, c->dtype, k), y = x;
    if (train) {
      uint64_t b = rc_draw(&r, k >> 1, 0);
      double u = (double)((b >> (32 * (k & 1))) & 0xffffffffu); /* uniform in [0, 2^32) */
      y = u < (double)d.t ? 0 : x * (c->dtype == OPF_F32 ? (double)(float)d.scale : d.scale);
    }
    nn_st(c->out[0].data, c->dtype, k, y);
  }
  return OPF_OK;
}

/* Train: one multiply per element and pass (the mask generation is not counted as floating
 * point work); inference: a copy, no flops. Bytes: one read and one write per element, the
 * minimum (the stored mask's byte per element is an implementation choice, not counted). */
static double drop_flops(const opf_case *c, opf_pass p) {
  double n = (double)opf_numel(&c->in[0]);
  double f = (int)c->p[P_MODE] == MODE_TRAIN ? n : 0;
  return opf_pass_sum(p, f, f);
}

static double drop_bytes(const opf_case *c, opf_pass p) {
  double b = 2.0 * (double)opf_numel(&c->in[0]) * (double)opf_dtype_size(c->dtype);
  return opf_pass_sum(p, b, b);
}

OPPERF_OP(dropout) = {
    .abi = OPF_OP_ABI,
    .name = "dropout",
    .category = "nn.basic",
    .summary = "inverted dropout: y = x * keep / (1 - p), keep ~ Bernoulli(1 - p) from the seed",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 2,
    .params = {{"p", OPF_P_FLOAT, 0.5, 0, 1, NULL, "drop probability, 0 <= p < 1"},
               {"mode", OPF_P_ENUM, MODE_TRAIN, 0, 0, "train|inference",
                "train: drop and rescale; inference: identity"}},
    .shapes = {{"standard", "x=1024x1024 p=0.5 mode=train"},
               {"standard", "x=1024x1024 mode=inference"},
               {"skewed", "x=10000x10"},
               {"skewed", "x=10x10000"},
               {"skewed", "x=10000x1"},
               {"skewed", "x=100000x10"},
               {"small", "x=16x16"},
               {"small", "x=1x1024 p=0.1"},
               {"small", "x=37x3 p=0.9"},
               {"small", "x=5x7 p=0"},
               {"small", "x=16x16 mode=inference"},
               {"test", "x=301x517"},
               {"test", "x=301x517 mode=inference"},
               {"large", "x=8192x4096"},
               {"large", "x=8192x4096 mode=inference"},
               {"huge", "x=46341x46341"}},
    .infer = drop_infer,
    .forward = drop_forward,
    .backward = drop_backward,
    .reference = drop_reference,
    .flops = drop_flops,
    .bytes = drop_bytes,
};
