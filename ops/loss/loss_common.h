/* loss_common.h: shared by the loss family (ops/loss/): the reduction param (mean|sum|none,
 * plus batchmean for kl_div), deterministic threaded sums, per-row loss write-out, the +-1
 * label fill hook and the driver of pointwise losses loss_i = f(a_i, b_i) (mse, l1, smooth_l1,
 * huber, bce, kl_div, hinge, logistic, poisson_nll): one table row per loss variant. */
#ifndef OPPERF_LOSS_COMMON_H
#define OPPERF_LOSS_COMMON_H

#include <math.h>
#include <string.h>

#include "opf_kernel.h"
#include "unary/vlibm.h"
#include "unary/vmath.h"

/* Reductions, in the order of the "reduction" enum of every loss (softmax_cross_entropy uses
 * the same first three). batchmean (kl_div only) divides the sum by
 * the size of the first dimension, as PyTorch's kl_div does. */
enum { LS_MEAN, LS_SUM, LS_NONE, LS_BATCHMEAN };
#define LS_REDUCTION                                                                          \
  {.name = "reduction", .type = OPF_P_ENUM, .def = LS_MEAN, .choices = "mean|sum|none",        \
   .help = "mean or sum: a scalar loss; none: the unreduced losses"}

#define LS_KI static inline __attribute__((always_inline))
/* Type-generic vector math (float32 / float64 through _Generic on the argument). */
#define LS_EXP(v) _Generic((v), float: vm_expf, double: vm_exp)(v)
/* log: glibc's vector logf is about 1.6x as fast as vmath.h's (kl_div forward 250 vs 390 us
 * per 1M float32) */
#define LS_LOG(v) VL(log, v)
#define LS_ABS(v) _Generic((v), float: __builtin_fabsf, double: __builtin_fabs)(v)
#define LS_SEL(c, a, b) _Generic((a), float: vm_self_if, double: vm_seld_if)(c, a, b)
#define LS_MAX(a, b) LS_SEL((a) > (b), a, b)
/* log1p(e) for e in [0, 1], float32, without a divide or exponent extraction: 1 + e = 2^k (1 + f)
 * with f = e (k = 0) or f = (e - 1) / 2 (k = 1, e > sqrt(2) - 1), both exact, so f lies in
 * [sqrt(1/2) - 1, sqrt(2) - 1] and Cephes' logf polynomial (vmath.h) gives log(1 + f) with
 * full relative precision for tiny e. */
static inline __attribute__((always_inline)) float ls_log1p01f(float e) {
  const int big = e > 0.41421356f;
  const float f = vm_self_if(big, (e - 1.0f) * 0.5f, e), k = vm_self_if(big, 1.0f, 0.0f);
  const float z = f * f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  const float y = f * z * p + k * -2.12194440e-4f - 0.5f * z;
  return (f + y) + k * 0.693359375f;
}
/* float64: glibc's vector log1p */
#define LS_LOG1P01(e) _Generic((e), float: ls_log1p01f, double: vl_log1p)(e)
/* softplus(z) = log(1 + exp(z)) = max(z, 0) + log1p(exp(-|z|)): exp never overflows and
 * log1p keeps the tail exp(-|z|) accurate when it is tiny. bce forward per 1M float32, one
 * thread: 0.65 ms with ls_log1p01f, 0.72 ms with glibc's vector log1pf, 1.0 ms with
 * log(1 + e) corrected by ((1 + e) - 1 - e) / (1 + e) (the divide). */
#define LS_SOFTPLUS(z) (LS_MAX(z, (__typeof__(z))0) + LS_LOG1P01(LS_EXP(-LS_ABS(z))))
/* sigmoid(z) = 1 / (1 + e) for z >= 0, e / (1 + e) otherwise, e = exp(-|z|); the numerator is
 * a bit-mask select (a ?: here becomes a branch, see activation/sigmoid.c). */
#define LS_SIGMOID(z)                                                                         \
  ({                                                                                          \
    __typeof__(z) e_ = LS_EXP(-LS_ABS(z));                                                    \
    LS_SEL((z) < 0, e_, (__typeof__(z))1) / (1 + e_);                                         \
  })

/* Threads pay off above this many elements of cheap work (compare, multiply-add); a loss with
 * an exp or log per element pays off 8 times sooner (as unary_map.h's UM_PAR_MATH). */
#define LS_PAR_CHEAP OPF_PAR_MIN
#define LS_PAR_MATH (OPF_PAR_MIN / 8)
/* Sums are taken per block of LS_BLOCK elements (vector lanes in the element type, then one
 * float64 value per block, so float32 partials never sum more than LS_BLOCK / lanes terms);
 * block sums are added in block order, so the result does not depend on the thread count. */
#define LS_BLOCK 4096

static inline size_t ls_align(size_t b) { return (b + OPF_ALIGN - 1) / OPF_ALIGN * OPF_ALIGN; }
static inline int64_t ls_nblocks(int64_t n) { return (n + LS_BLOCK - 1) / LS_BLOCK; }

static inline void ls_set_scalar(opf_tensor *t, double v) {
  if (t->dtype == OPF_F32) *(float *)t->data = (float)v;
  else *(double *)t->data = v;
}
static inline double ls_get(const opf_tensor *t, int64_t i) {
  return t->dtype == OPF_F32 ? (double)((const float *)t->data)[i] : ((const double *)t->data)[i];
}
static inline void ls_put(opf_tensor *t, int64_t i, double v) {
  if (t->dtype == OPF_F32) ((float *)t->data)[i] = (float)v;
  else ((double *)t->data)[i] = v;
}
/* Offset view of a tensor's data (dtype-generic through char pointers). */
#define LS_AT(t, i) ((char *)(t).data + (size_t)(i) * opf_dtype_size((t).dtype))

/* Sum of n per-item losses in item order, reduced: mean divides by `count`. */
static inline double ls_reduce(const double *v, int64_t n, int red, double count) {
  double t = 0;
  for (int64_t i = 0; i < n; i++) t += v[i];
  return red == LS_SUM ? t : t / count;
}

/* Output 0 of a loss over `items` items (rows, samples): (items) for none, a scalar else. */
static inline void ls_set_loss_out(opf_case *c, int red, int64_t items) {
  if (red == LS_NONE) opf_set_out(c, 0, c->dtype, 1, &items);
  else opf_set_out(c, 0, c->dtype, 0, NULL);
}

/* Write a row loss from per-row float64 losses: each row (none) or their reduction (mean
 * over `count`, which is the row count or another normaliser). */
static inline void ls_write_rows(opf_case *c, const double *loss, int64_t n, int red,
                                 double count) {
  if (red == LS_NONE)
    for (int64_t i = 0; i < n; i++) ls_put(&c->out[0], i, loss[i]);
  else ls_set_scalar(&c->out[0], ls_reduce(loss, n, red, count));
}

/* Reference write-out, item by item: item i's loss goes to output i (none) or into *total;
 * ls_ref_done writes the sum or the mean over `count` (mean, batchmean). */
static inline void ls_ref_item(opf_case *c, int red, int64_t i, double l, double *total) {
  if (red == LS_NONE) ls_put(&c->out[0], i, l);
  else *total += l;
}
static inline void ls_ref_done(opf_case *c, int red, double total, double count) {
  if (red != LS_NONE) ls_set_scalar(&c->out[0], red == LS_SUM ? total : total / count);
}

/* Upstream gradient of row i and the mean scale folded in: g[i] for none, g[0] / count for
 * mean, g[0] for sum. */
static inline double ls_row_grad(const opf_case *c, int64_t i, int red, double count) {
  if (red == LS_NONE) return ls_get(&c->gout[0], i);
  return red == LS_SUM ? ls_get(&c->gout[0], 0) : ls_get(&c->gout[0], 0) / count;
}

/* Three sums over i_ in [0, n) of the element-type expressions E1, E2, E3 (of i_) into the
 * doubles S1, S2, S3, for row kernels (norms, dot products): an OpenMP simd reduction (vector
 * lanes in the element type T; the explicit lane arrays of the pointwise sums made GCC spill
 * three accumulator arrays to the stack here, 8x slower) per block of LS_BLOCK, folded into
 * float64 per block. A sum of a constant 0 costs nothing. */
#define LS_SUM3(T, n, E1, E2, E3, S1, S2, S3)                                                 \
  do {                                                                                        \
    double t1_ = 0, t2_ = 0, t3_ = 0;                                                         \
    for (int64_t b0_ = 0; b0_ < (n); b0_ += LS_BLOCK) {                                       \
      const int64_t e_ = (n) - b0_ < LS_BLOCK ? (n) : b0_ + LS_BLOCK;                         \
      T r1_ = 0, r2_ = 0, r3_ = 0;                                                            \
      _Pragma("omp simd reduction(+ : r1_, r2_, r3_)")                                        \
      for (int64_t i_ = b0_; i_ < e_; i_++) {                                                 \
        r1_ += (E1);                                                                          \
        r2_ += (E2);                                                                          \
        r3_ += (E3);                                                                          \
      }                                                                                       \
      t1_ += (double)r1_, t2_ += (double)r2_, t3_ += (double)r3_;                             \
    }                                                                                         \
    S1 = t1_, S2 = t2_, S3 = t3_;                                                             \
  } while (0)

/* Rows per thread chunk of a row kernel: threads pay off once a chunk holds `min` elements. */
static inline int64_t ls_row_par(int64_t min, int64_t row_len) {
  return (min + row_len - 1) / (row_len > 0 ? row_len : 1);
}

/* Fill hook for labels in {-1, +1} (hinge, logistic, cosine_embedding): the sign of a fair
 * uniform draw, in the case dtype. */
static inline int ls_fill_sign(opf_case *c, int i, opf_rng *r) {
  (void)r;
  opf_tensor *t = &c->in[i];
  opf_fill_uniform(t, c->seed, (uint64_t)i, -1, 1);
  const int64_t n = opf_numel(t);
  for (int64_t k = 0; k < n; k++) ls_put(t, k, ls_get(t, k) < 0 ? -1.0 : 1.0);
  return OPF_OK;
}

/* opf_parallel_range with chunk boundaries on multiples of LS_BLOCK elements: every element
 * goes through the same code path (vector body or remainder; glibc's vector and scalar log1p
 * may differ in the last bit) whatever the thread count, so results are reproducible. */
static inline void ls_parallel(int64_t n, int64_t min_par, opf_range_fn fn, void *ctx) {
  if (n < min_par || omp_get_max_threads() == 1) {
    fn(0, n, ctx);
    return;
  }
#pragma omp parallel
  {
    int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    int64_t chunk = ((n + nt - 1) / nt + LS_BLOCK - 1) / LS_BLOCK * LS_BLOCK;
    int64_t lo = t * chunk, hi = lo + chunk < n ? lo + chunk : n;
    if (lo < hi) fn(lo, hi, ctx);
  }
}

/* ================= pointwise losses: loss_i = f(a_i, b_i) =================
 * a is the prediction (pred, logits, log-probabilities), b the target or the +-1 label.
 * Per variant: FWD (the loss), DA and DB (its partial derivatives) are expressions in the
 * element values a and b (of the element type; LS_T names it, LS_C(v) is a constant of it)
 * and the constants k0, k1, k2 from ls_par (margin, delta, eps ...). GNU statement
 * expressions give them local variables. */
typedef struct ls_par {
  double k[3];
} ls_par;
#define LS_T __typeof__(a)
#define LS_C(v) ((LS_T)(v))

typedef struct ls_pw {
  void (*y32)(const float *restrict a, const float *restrict b, float *restrict y, int64_t n,
              ls_par p);
  void (*y64)(const double *restrict a, const double *restrict b, double *restrict y,
              int64_t n, ls_par p);
  double (*s32)(const float *restrict a, const float *restrict b, int64_t n, ls_par p);
  double (*s64)(const double *restrict a, const double *restrict b, int64_t n, ls_par p);
  /* da = scale g DA, db = scale g DB; g one value (gs = 0) or one per element; da or db NULL
   * when not wanted */
  void (*g32)(const float *restrict a, const float *restrict b, const float *restrict g,
              int gs, float scale, float *restrict da, float *restrict db, int64_t n, ls_par p);
  void (*g64)(const double *restrict a, const double *restrict b, const double *restrict g,
              int gs, double scale, double *restrict da, double *restrict db, int64_t n,
              ls_par p);
  double (*ref)(double a, double b, ls_par p); /* the loss in float64 with libm */
  double fwd_flops, bwd_flops;                 /* per element (bwd: both partials) */
  int64_t par_min;                             /* LS_PAR_CHEAP or LS_PAR_MATH */
} ls_pw;

#define LS_PW_CONSTS(T)                                                                       \
  const T k0 = (T)par.k[0], k1 = (T)par.k[1], k2 = (T)par.k[2];                               \
  (void)k0, (void)k1, (void)k2

#define LS_PW_LOOPS(name, T, SUF, FWD, DA, DB)                                                \
  OPF_VEC static void name##_y_##SUF(const T *restrict ap, const T *restrict bp,              \
                                     T *restrict yp, int64_t n, ls_par par) {                 \
    LS_PW_CONSTS(T);                                                                          \
    for (int64_t i = 0; i < n; i++) {                                                         \
      const T a = ap[i], b = bp[i];                                                           \
      yp[i] = (FWD);                                                                          \
    }                                                                                         \
  }                                                                                           \
  /* sum of FWD: L independent lanes per block (a tree fold, no serial chain), then float64 */ \
  OPF_VEC static double name##_s_##SUF(const T *restrict ap, const T *restrict bp, int64_t n, \
                                       ls_par par) {                                          \
    enum { L = 128 / sizeof(T) };                                                             \
    LS_PW_CONSTS(T);                                                                          \
    double total = 0;                                                                         \
    for (int64_t b0 = 0; b0 < n; b0 += LS_BLOCK) {                                            \
      const int64_t m = n - b0 < LS_BLOCK ? n - b0 : LS_BLOCK;                                \
      const T *restrict ab = ap + b0, *restrict bb = bp + b0;                                 \
      T acc[L] = {0}, s = 0;                                                                  \
      int64_t k = 0;                                                                          \
      for (; k + L <= m; k += L)                                                              \
        for (int j = 0; j < L; j++) {                                                         \
          const T a = ab[k + j], b = bb[k + j];                                               \
          acc[j] += (FWD);                                                                    \
        }                                                                                     \
      for (; k < m; k++) {                                                                    \
        const T a = ab[k], b = bb[k];                                                         \
        s += (FWD);                                                                           \
      }                                                                                       \
      for (int w = L / 2; w > 0; w /= 2)                                                      \
        for (int j = 0; j < w; j++) acc[j] += acc[j + w];                                     \
      total += (double)(s + acc[0]);                                                          \
    }                                                                                         \
    return total;                                                                             \
  }                                                                                           \
  LS_KI void name##_gr_##SUF(const T *restrict ap, const T *restrict bp, const T *restrict gp, \
                             const int gs, T scale, T *restrict da, T *restrict db, int64_t n, \
                             ls_par par, const int wa, const int wb) {                        \
    LS_PW_CONSTS(T);                                                                          \
    for (int64_t i = 0; i < n; i++) {                                                         \
      const T a = ap[i], b = bp[i], g = scale * gp[gs ? i : 0];                               \
      if (wa) da[i] = g * (DA);                                                               \
      if (wb) db[i] = g * (DB);                                                               \
    }                                                                                         \
  }                                                                                           \
  /* gs and the wanted gradients are constants in each call: six straight loops */            \
  OPF_VEC static void name##_g_##SUF(const T *restrict a, const T *restrict b,                \
                                     const T *restrict g, int gs, T scale, T *restrict da,    \
                                     T *restrict db, int64_t n, ls_par par) {                 \
    if (gs) {                                                                                 \
      if (da && db) name##_gr_##SUF(a, b, g, 1, scale, da, db, n, par, 1, 1);                 \
      else if (da) name##_gr_##SUF(a, b, g, 1, scale, da, db, n, par, 1, 0);                  \
      else if (db) name##_gr_##SUF(a, b, g, 1, scale, da, db, n, par, 0, 1);                  \
    } else {                                                                                  \
      if (da && db) name##_gr_##SUF(a, b, g, 0, scale, da, db, n, par, 1, 1);                 \
      else if (da) name##_gr_##SUF(a, b, g, 0, scale, da, db, n, par, 1, 0);                  \
      else if (db) name##_gr_##SUF(a, b, g, 0, scale, da, db, n, par, 0, 1);                  \
    }                                                                                         \
  }

/* One pointwise loss variant: kernels for float32 and float64 and its table `name##_pw`.
 * REF: double(double a, double b, ls_par p); FF, BF: flops per element fwd and bwd; PAR:
 * LS_PAR_CHEAP or LS_PAR_MATH. */
#define LS_PW_DEFINE(name, FWD, DA, DB, REF, FF, BF, PAR)                                     \
  LS_PW_LOOPS(name, float, f32, FWD, DA, DB)                                                  \
  LS_PW_LOOPS(name, double, f64, FWD, DA, DB)                                                 \
  static const ls_pw name##_pw = {name##_y_f32, name##_y_f64, name##_s_f32, name##_s_f64,     \
                                  name##_g_f32, name##_g_f64, REF, FF, BF, PAR};

/* Inputs 0 (a) and 1 (b) of the same shape; b derived from a when omitted. Output: a's shape
 * for none, else a scalar; the workspace holds one float64 per block of the reduction. */
static inline int ls_pw_infer(opf_case *c, int red) {
  opf_tensor *a = &c->in[0], *b = &c->in[1];
  if (a->ndim < 0) return OPF_OK; /* the driver names the missing input */
  if (b->ndim < 0) opf_tensor_set_shape(b, b->dtype, a->ndim, a->shape);
  int rc = opf_same_shape(c, a, b, c->op->in[0].name, c->op->in[1].name);
  if (rc) return rc;
  if (red == LS_BATCHMEAN && a->ndim == 0)
    return opf_case_error(c, OPF_EINVAL, "reduction 'batchmean' needs a batch dimension; '%s' is a scalar",
                          c->op->in[0].name);
  if (red == LS_NONE) opf_set_out(c, 0, c->dtype, a->ndim, a->shape);
  else opf_set_out(c, 0, c->dtype, 0, NULL);
  c->ws_bytes = red == LS_NONE ? 0 : ls_align((size_t)ls_nblocks(opf_numel(a)) * sizeof(double));
  return OPF_OK;
}

/* The mean's divisor: every element, or the first dimension for batchmean. */
static inline double ls_pw_count(const opf_case *c, int red) {
  return red == LS_BATCHMEAN ? (double)c->in[0].shape[0] : (double)opf_numel(&c->in[0]);
}

typedef struct ls_pw_ctx {
  opf_case *c;
  const ls_pw *k;
  ls_par p;
  int red;
} ls_pw_ctx;

static inline void ls_pw_y_range(int64_t lo, int64_t hi, void *v) {
  const ls_pw_ctx *x = v;
  opf_case *c = x->c;
  if (c->dtype == OPF_F32)
    x->k->y32((const float *)LS_AT(c->in[0], lo), (const float *)LS_AT(c->in[1], lo),
              (float *)LS_AT(c->out[0], lo), hi - lo, x->p);
  else
    x->k->y64((const double *)LS_AT(c->in[0], lo), (const double *)LS_AT(c->in[1], lo),
              (double *)LS_AT(c->out[0], lo), hi - lo, x->p);
}

/* Block sums of [lo, hi) (block-aligned lo) into part[lo / LS_BLOCK ...]. */
static inline void ls_pw_s_range(int64_t lo, int64_t hi, void *v) {
  const ls_pw_ctx *x = v;
  const opf_case *c = x->c;
  double *part = c->ws;
  for (int64_t b0 = lo; b0 < hi; b0 += LS_BLOCK) {
    const int64_t m = hi - b0 < LS_BLOCK ? hi - b0 : LS_BLOCK;
    part[b0 / LS_BLOCK] =
        c->dtype == OPF_F32
            ? x->k->s32((const float *)LS_AT(c->in[0], b0), (const float *)LS_AT(c->in[1], b0), m, x->p)
            : x->k->s64((const double *)LS_AT(c->in[0], b0), (const double *)LS_AT(c->in[1], b0), m,
                        x->p);
  }
}

static inline int ls_pw_forward(opf_case *c, const ls_pw *k, ls_par p, int red) {
  const int64_t n = opf_numel(&c->in[0]);
  ls_pw_ctx x = {c, k, p, red};
  if (red == LS_NONE) {
    ls_parallel(n, k->par_min, ls_pw_y_range, &x);
    return OPF_OK;
  }
  ls_parallel(n, k->par_min, ls_pw_s_range, &x);
  ls_set_scalar(&c->out[0], ls_reduce(c->ws, ls_nblocks(n), red, ls_pw_count(c, red)));
  return OPF_OK;
}

static inline void ls_pw_g_range(int64_t lo, int64_t hi, void *v) {
  const ls_pw_ctx *x = v;
  opf_case *c = x->c;
  const int gs = x->red == LS_NONE;
  const double scale = x->red == LS_SUM || gs ? 1.0 : 1.0 / ls_pw_count(c, x->red);
  const int64_t goff = gs ? lo : 0;
  void *da = c->gin[0].data ? LS_AT(c->gin[0], lo) : NULL;
  void *db = c->gin[1].data ? LS_AT(c->gin[1], lo) : NULL;
  if (c->dtype == OPF_F32)
    x->k->g32((const float *)LS_AT(c->in[0], lo), (const float *)LS_AT(c->in[1], lo),
              (const float *)LS_AT(c->gout[0], goff), gs, (float)scale, da, db, hi - lo, x->p);
  else
    x->k->g64((const double *)LS_AT(c->in[0], lo), (const double *)LS_AT(c->in[1], lo),
              (const double *)LS_AT(c->gout[0], goff), gs, scale, da, db, hi - lo, x->p);
}

static inline int ls_pw_backward(opf_case *c, const ls_pw *k, ls_par p, int red) {
  if (!c->gin[0].data && !c->gin[1].data) return OPF_OK;
  ls_pw_ctx x = {c, k, p, red};
  ls_parallel(opf_numel(&c->in[0]), k->par_min, ls_pw_g_range, &x);
  return OPF_OK;
}

/* Reference: the float64 libm loss per element, summed in element order. */
static inline int ls_pw_reference(opf_case *c, const ls_pw *k, ls_par p, int red) {
  const int64_t n = opf_numel(&c->in[0]);
  double total = 0;
  for (int64_t i = 0; i < n; i++)
    ls_ref_item(c, red, i, k->ref(ls_get(&c->in[0], i), ls_get(&c->in[1], i), p), &total);
  ls_ref_done(c, red, total, ls_pw_count(c, red));
  return OPF_OK;
}

/* fwd: FF per element, plus the add of the reduction (mean, sum); bwd: BF per element. */
static inline double ls_pw_flops(const opf_case *c, opf_pass p, const ls_pw *k, int red) {
  const double n = (double)opf_numel(&c->in[0]);
  return opf_pass_sum(p, n * (k->fwd_flops + (red != LS_NONE)), n * k->bwd_flops);
}

/* fwd reads a and b and writes the loss (1 or n elements); bwd reads a, b and the loss
 * gradient and writes the gradient of each differentiable input. */
static inline double ls_pw_bytes(const opf_case *c, opf_pass p) {
  const double es = (double)opf_dtype_size(c->dtype), n = (double)opf_numel(&c->in[0]) * es;
  const double out = (double)opf_numel(&c->out[0]) * es;
  const int ndiff = !!(c->op->in[0].flags & OPF_IN_DIFF) + !!(c->op->in[1].flags & OPF_IN_DIFF);
  return opf_pass_sum(p, 2 * n + out, 2 * n + out + ndiff * n);
}

/* The hooks of a pointwise loss operator `name`, given `static const ls_pw *name##_sel(const
 * opf_case *c, ls_par *p)` (the variant and its constants from the params) and the index of
 * the reduction param RP. */
#define LS_PW_HOOKS(name, RP)                                                                 \
  static int name##_forward(opf_case *c) {                                                    \
    ls_par p;                                                                                 \
    const ls_pw *k = name##_sel(c, &p);                                                       \
    return ls_pw_forward(c, k, p, (int)c->p[RP]);                                             \
  }                                                                                           \
  static int name##_backward(opf_case *c) {                                                   \
    ls_par p;                                                                                 \
    const ls_pw *k = name##_sel(c, &p);                                                       \
    return ls_pw_backward(c, k, p, (int)c->p[RP]);                                            \
  }                                                                                           \
  static int name##_reference(opf_case *c) {                                                  \
    ls_par p;                                                                                 \
    const ls_pw *k = name##_sel(c, &p);                                                       \
    return ls_pw_reference(c, k, p, (int)c->p[RP]);                                           \
  }                                                                                           \
  static double name##_flops(const opf_case *c, opf_pass pass) {                              \
    ls_par p;                                                                                 \
    return ls_pw_flops(c, pass, name##_sel(c, &p), (int)c->p[RP]);                            \
  }
#define LS_PW_OPS(name)                                                                       \
  .forward = name##_forward, .backward = name##_backward, .reference = name##_reference,      \
  .flops = name##_flops, .bytes = ls_pw_bytes

#endif
