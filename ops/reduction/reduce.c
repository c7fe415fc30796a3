/* reduce.c: reductions over one axis (or all) with keepdims: sum, mean, prod, max, min, argmax,
 * argmin, nansum, nanprod, norm (L1/L2), var, std, logsumexp, all, any, and their backwards.
 * Every shape is an (outer, n, inner) triple: contiguous rows (inner 1) reduce in 64 vector
 * lanes, outer axes stream rows into an L1-resident accumulator row, and the work is split into
 * shape-determined tasks so results do not depend on the thread count. A kind is its fold op
 * (reduce.h), its final value and partial combine (reduce_drv.h) and a descriptor here. */
#include "opf_fold16.h"
#include "reduction/reduce.h"
#include "unary/vmath512.h" /* VM512_OK() */
#ifdef OPF_X86
#include <immintrin.h>
#endif

enum {
  RED_SUM, RED_MEAN, RED_MAX, RED_ARGMAX, RED_PROD, RED_MIN, RED_ARGMIN, RED_NANSUM,
  RED_NANPROD, RED_L1, RED_L2, RED_VAR, RED_STD, RED_LSE, RED_ALL, RED_ANY
};

/* Backward maps, dx = f(x, a, b) with per-output coefficients a, b (reduce_drv.h). */
enum {
  RED_BK_CONST,  /* a: sum, mean */
  RED_BK_MUL,    /* a * x: L2 (a = dy / y) */
  RED_BK_LIN,    /* a * (x - b): var, std (b = mean) */
  RED_BK_SIGN,   /* a * sign(x): L1 */
  RED_BK_EXP,    /* a * exp(x - b): logsumexp (a = dy, b = y) */
  RED_BK_DIV,    /* a / x: prod (a = dy * y) */
  RED_BK_NAN,    /* NaN ? 0 : a: nansum */
  RED_BK_NANDIV  /* NaN ? 0 : a / x: nanprod */
};
#define RED_BK_LIST(X)                                                                        \
  X(RED_BK_CONST) X(RED_BK_MUL) X(RED_BK_LIN) X(RED_BK_SIGN) X(RED_BK_EXP) X(RED_BK_DIV)       \
  X(RED_BK_NAN) X(RED_BK_NANDIV)

/* Task sizing: a task covers at least RED_TASK_WORK elements when the shape allows; when there
 * are fewer than RED_MIN_TASKS (outer block, column block) pairs, the reduced axis is cut into
 * at most RED_MAX_SEG segments whose partials are combined afterwards. */
#define RED_TASK_WORK 16384
#define RED_MIN_TASKS 16
#define RED_MAX_SEG 16

typedef struct red_plan {
  int kind;
  opf_rgeom g;
  double scale;        /* 1, or 1/n for mean */
  double ddof;         /* var, std */
  int64_t m;           /* wide-row factor (inner > 1 only), else 1 */
  int64_t ncb, cbw;    /* column blocks of the inner extent and their width */
  int64_t ochunk, nob; /* outer rows per task and outer blocks */
  int64_t S, seg;      /* segments of the reduced axis and rows per segment */
  int64_t ntask, nout;
} red_plan;

typedef struct red_run {
  const red_plan *p;
  const void *x;
  void *out;   /* values, int64 indices (args) or bool (any, all) */
  void *pa;    /* segment partials (S > 1): S x nout of RA (folds, var, lse) or RT */
  void *pb;    /* second partial of var (RA) and lse (double) */
  int64_t *pi; /* segment partial indices (args) */
  void *aux;   /* var, std: the mean per output, for the backward */
} red_run;

static int red_is_arg(int kind) { return kind == RED_ARGMAX || kind == RED_ARGMIN; }
static int red_is_ext(int kind) { return kind == RED_MAX || kind == RED_MIN; }
static int red_two(int kind) { return kind == RED_VAR || kind == RED_STD || kind == RED_LSE; }

/* Instantiation code of a kind in the drivers: its class and fold op. */
#define RED_CODE_FOLD(op) (op)
#define RED_CODE_EXT(op) (16 + (op))
#define RED_CODE_ARG(op) (32 + (op))
#define RED_CODE_VAR 48
#define RED_CODE_LSE 49
static inline int red_code(int kind) {
  switch (kind) {
  case RED_SUM: case RED_MEAN: return RED_CODE_FOLD(OPF_FOLD_ADD);
  case RED_PROD: return RED_CODE_FOLD(OPF_FOLD_MUL);
  case RED_NANSUM: return RED_CODE_FOLD(OPF_FOLD_NANADD);
  case RED_NANPROD: return RED_CODE_FOLD(OPF_FOLD_NANMUL);
  case RED_L1: return RED_CODE_FOLD(OPF_FOLD_ABSADD);
  case RED_L2: return RED_CODE_FOLD(OPF_FOLD_SQADD);
  case RED_MAX: return RED_CODE_EXT(OPF_FOLD_MAX);
  case RED_MIN: return RED_CODE_EXT(OPF_FOLD_MIN);
  case RED_ANY: return RED_CODE_EXT(OPF_FOLD_ANY);
  case RED_ALL: return RED_CODE_EXT(OPF_FOLD_ALL);
  case RED_ARGMAX: return RED_CODE_ARG(OPF_FOLD_MAX);
  case RED_ARGMIN: return RED_CODE_ARG(OPF_FOLD_MIN);
  case RED_VAR: case RED_STD: return RED_CODE_VAR;
  default: return RED_CODE_LSE;
  }
}

static red_plan red_make_plan(const opf_case *c, int kind) {
  red_plan p = {.kind = kind, .scale = 1, .m = 1, .ncb = 1, .cbw = 1, .S = 1};
  const int all = c->p[0] == OPF_AXIS_ALL;
  p.g = opf_red_geom(&c->in[0], all ? 0 : opf_axis(c->p[0], c->in[0].ndim), all);
  const int64_t outer = p.g.outer, n = p.g.n, inner = p.g.inner;
  p.nout = outer * inner;
  if (kind == RED_MEAN && n > 0) p.scale = 1.0 / (double)n;
  if (kind == RED_VAR || kind == RED_STD) p.ddof = c->p[2];
  if (inner > 1) {
    p.m = opf_red_wide_m(inner);
    /* args and logsumexp re-read a chunk of rows per column block from L1: narrower blocks
     * let a chunk hold more rows, amortising the per-chunk merge */
    p.cbw = p.m > 1 ? inner : red_is_arg(kind) || kind == RED_LSE ? OPF_RED_CB / 4 : OPF_RED_CB;
    p.ncb = (inner + p.cbw - 1) / p.cbw;
  }
  const int64_t per_o = n * inner, work = outer * per_o;
  p.ochunk = per_o > 0 ? RED_TASK_WORK / per_o : outer;
  if (p.ochunk > (outer + RED_MIN_TASKS - 1) / RED_MIN_TASKS)
    p.ochunk = (outer + RED_MIN_TASKS - 1) / RED_MIN_TASKS;
  if (p.ochunk < 1) p.ochunk = 1;
  p.nob = outer > 0 ? (outer + p.ochunk - 1) / p.ochunk : 0;
  const int64_t base = p.nob * p.ncb;
  if (base > 0 && base < RED_MIN_TASKS) {
    int64_t s = work / (base * RED_TASK_WORK), want = (RED_MIN_TASKS + base - 1) / base;
    p.S = s < want ? s : want;
  }
  if (p.S > RED_MAX_SEG) p.S = RED_MAX_SEG;
  if (p.S < 1) p.S = 1;
  p.seg = (n + p.S - 1) / p.S;
  if (p.seg > 0) p.S = (n + p.seg - 1) / p.seg; /* no empty segment */
  else p.S = 1;
  p.ntask = base * p.S;
  return p;
}

/* Workspace: [first-extreme indices for max/min backward][segment partials a][partials b]
 * [partial indices][aux: the mean of var/std][backward coefficients]. */
typedef struct red_ws {
  size_t idx, pa, pb, pi, aux, coef, total;
} red_ws;

static size_t red_round(size_t b) { return (b + OPF_ALIGN - 1) / OPF_ALIGN * OPF_ALIGN; }

static red_ws red_ws_layout(const red_plan *p, int kind) {
  red_ws w = {0, 0, 0, 0, 0, 0, 0};
  const size_t no = (size_t)p->nout, part = p->S > 1 ? red_round((size_t)p->S * no * 8) : 0;
  w.pa = red_is_ext(kind) ? red_round(no * 8) : 0;
  w.pb = w.pa + part;
  w.pi = w.pb + (red_two(kind) ? part : 0);
  w.aux = w.pi + (red_is_ext(kind) || red_is_arg(kind) ? part : 0);
  w.coef = w.aux + (kind == RED_VAR || kind == RED_STD ? red_round(no * 8) : 0);
  w.total = w.coef + red_round(no * 8);
  return w;
}

/* Whole float32 rows of 2..16 elements (the skewed (N, 10) shapes), add and multiply folds,
 * AVX-512: 16 rows per step, each row one masked load (lanes past the row read as the fold's
 * identity), the 16 vectors folded into one vector of the 16 row results (opf_fold16.h: 45
 * vector operations per 16 rows), where transposing the block in L1 (red_tr) and folding its
 * columns took about two scalar moves and a vector op per element. A row's terms combine as a
 * pairwise tree in float32 (the column path: sequentially in float32, then double); L2 takes
 * the float32 square root of the float32 sum, mean the sum times (float)(1 / n). A last block of
 * fewer than 16 rows reads identity vectors past the end and stores with a mask. Returns 0
 * (nothing done) when the CPU, the dtype, the kind or the length do not fit. */
#ifdef OPF_X86
VM512_T static void red_rows16_f32(const float *restrict x, int64_t nrows, int64_t n, int kind,
                                     float scale, float *restrict y) {
  const int op = red_code(kind), mul = opf_fold_mul(op);
  const __m512 id = _mm512_set1_ps(mul ? 1.0f : 0.0f);
  const __mmask16 lm = (__mmask16)((1u << n) - 1);
  for (int64_t r0 = 0; r0 < nrows; r0 += 16) {
    const int64_t nr = nrows - r0 < 16 ? nrows - r0 : 16;
    __m512 v[16];
    for (int i = 0; i < 16; i++) {
      __m512 t = i < nr ? _mm512_mask_loadu_ps(id, lm, x + (r0 + i) * n) : id;
      if (op == OPF_FOLD_SQADD) t = _mm512_mul_ps(t, t);
      else if (op == OPF_FOLD_ABSADD) t = _mm512_abs_ps(t);
      else if (op == OPF_FOLD_NANADD || op == OPF_FOLD_NANMUL)
        t = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask(t, t, _CMP_UNORD_Q), id);
      v[i] = t;
    }
    __m512 res = opf_fold16(mul, v);
    if (kind == RED_L2) res = _mm512_sqrt_ps(res);
    else if (kind == RED_MEAN) res = _mm512_mul_ps(res, _mm512_set1_ps(scale));
    _mm512_mask_storeu_ps(y + r0, (__mmask16)((1u << nr) - 1), res);
  }
}
#endif
/* opf_red_arg_f32_fast (reduce.h): four independent (value, index) accumulators of 16 lanes
 * (64 elements a step: one compare and two blends a vector, the compare chains of four
 * vectors overlapping), a strict compare so a lane keeps its first extreme, then the lanes
 * merged: the extreme value, and the smallest index among the lanes that hold it. One pass,
 * where the lane kernel's reduce-then-find read each 4 KiB chunk twice (1024x1024 argmax
 * along axis 1 at 1 thread: 96 us, NumPy 80). A NaN anywhere (kept in a mask) hands the row
 * back to the lane kernel, which gives NaNs its own treatment. */
#ifdef OPF_X86
#define RED_ARG_CMP(a, b) (min ? _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ) : _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ))
#define RED_ARG_MCMP(t, a, b)                                                                  \
  (min ? _mm512_mask_cmp_ps_mask(t, a, b, _CMP_LT_OQ) : _mm512_mask_cmp_ps_mask(t, a, b, _CMP_GT_OQ))
__attribute__((target("avx512f"), always_inline)) static inline int red_arg_f32_avx512(
    const int min, const float *x, int64_t n, float *best, int64_t *at) {
  const __m512i iota = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  __m512 bv[4];
  __m512i bi[4], cur = iota;
  __mmask16 nan = 0;
  for (int k = 0; k < 4; k++) {
    bv[k] = _mm512_loadu_ps(x + 16 * k);
    bi[k] = _mm512_add_epi32(iota, _mm512_set1_epi32(16 * k));
    nan |= _mm512_cmp_ps_mask(bv[k], bv[k], _CMP_UNORD_Q);
  }
  int64_t i = 64;
  for (; i + 64 <= n; i += 64) {
    cur = _mm512_add_epi32(iota, _mm512_set1_epi32((int)i));
    for (int k = 0; k < 4; k++) {
      const __m512 v = _mm512_loadu_ps(x + i + 16 * k);
      const __mmask16 m = RED_ARG_CMP(v, bv[k]);
      bv[k] = _mm512_mask_mov_ps(bv[k], m, v);
      bi[k] = _mm512_mask_mov_epi32(bi[k], m, _mm512_add_epi32(cur, _mm512_set1_epi32(16 * k)));
      nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    }
  }
  for (; i < n; i += 16) { /* the last 1..63 elements into accumulator 0, masked */
    const __mmask16 t = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(t, x + i);
    const __mmask16 m = RED_ARG_MCMP(t, v, bv[0]);
    bv[0] = _mm512_mask_mov_ps(bv[0], m, v);
    bi[0] = _mm512_mask_mov_epi32(bi[0], m, _mm512_add_epi32(iota, _mm512_set1_epi32((int)i)));
    nan |= _mm512_mask_cmp_ps_mask(t, v, v, _CMP_UNORD_Q);
  }
  if (nan) return 0;
  for (int k = 1; k < 4; k++) { /* into accumulator 0: the better value, on a tie the earlier */
    const __mmask16 m = RED_ARG_CMP(bv[k], bv[0]) |
                        (_mm512_cmp_ps_mask(bv[k], bv[0], _CMP_EQ_OQ) &
                         _mm512_cmplt_epi32_mask(bi[k], bi[0]));
    bv[0] = _mm512_mask_mov_ps(bv[0], m, bv[k]);
    bi[0] = _mm512_mask_mov_epi32(bi[0], m, bi[k]);
  }
  const float b = min ? _mm512_reduce_min_ps(bv[0]) : _mm512_reduce_max_ps(bv[0]);
  const __mmask16 eq = _mm512_cmp_ps_mask(bv[0], _mm512_set1_ps(b), _CMP_EQ_OQ);
  *at = _mm512_mask_reduce_min_epi32(eq, bi[0]);
  *best = x[*at]; /* its own bits: -0 or +0 as the element is */
  return 1;
}
#undef RED_ARG_CMP
#undef RED_ARG_MCMP
__attribute__((target("avx512f"))) static int red_arg_f32_max(const float *x, int64_t n,
                                                              float *best, int64_t *at) {
  return red_arg_f32_avx512(0, x, n, best, at);
}
__attribute__((target("avx512f"))) static int red_arg_f32_min(const float *x, int64_t n,
                                                              float *best, int64_t *at) {
  return red_arg_f32_avx512(1, x, n, best, at);
}
#endif
int opf_red_arg_f32_fast(int min, const float *x, int64_t n, float *best, int64_t *at) {
#ifdef OPF_X86
  if (n >= 64 && n <= INT32_MAX - 64 && __builtin_cpu_supports("avx512f"))
    return min ? red_arg_f32_min(x, n, best, at) : red_arg_f32_max(x, n, best, at);
#else
  (void)min, (void)x, (void)n, (void)best, (void)at;
#endif
  return 0;
}

static int red_rows16_f32_ok(const void *x, int64_t nrows, int64_t n, const red_plan *p, void *y) {
#ifdef OPF_X86
  const int c = red_code(p->kind);
  if (!VM512_OK() || n < 2 || n > 16 || c > RED_CODE_FOLD(OPF_FOLD_NANMUL))
    return 0;
  red_rows16_f32(x, nrows, n, p->kind, (float)p->scale, y);
  return 1;
#else
  (void)x, (void)nrows, (void)n, (void)p, (void)y;
  return 0;
#endif
}
static int red_rows16_no(const void *x, int64_t nrows, int64_t n, const red_plan *p, void *y) {
  (void)x, (void)nrows, (void)n, (void)p, (void)y;
  return 0;
}
#define RED_ROWS16(x, nrows, n, p, y)                                                          \
  _Generic((x), const float *: red_rows16_f32_ok, default: red_rows16_no)(x, nrows, n, p, y)

#define RT float
#define RL float
#define RA double
#define RX int32_t
#define RFLOAT 1
#define RBOOL 0
#define RSUF f32
#include "reduction/reduce_drv.h"
#define RT double
#define RL double
#define RA double
#define RX int64_t
#define RFLOAT 1
#define RBOOL 0
#define RSUF f64
#include "reduction/reduce_drv.h"
#define RT int32_t
#define RL uint32_t
#define RA uint64_t
#define RX int32_t
#define RFLOAT 0
#define RBOOL 0
#define RSUF i32
#include "reduction/reduce_drv.h"
#define RT int64_t
#define RL uint64_t
#define RA uint64_t
#define RX int64_t
#define RFLOAT 0
#define RBOOL 0
#define RSUF i64
#include "reduction/reduce_drv.h"
/* bool inputs (all, any): the lane kernels and drivers for one-byte elements */
#define RT uint8_t
#define RL uint32_t
#define RA uint64_t
#define RFLOAT 0
#define RF32 0
#define RSUF u8
#include "reduction/reduce_lanes.h"
#define RT uint8_t
#define RL uint32_t
#define RA uint64_t
#define RX int32_t
#define RFLOAT 0
#define RBOOL 1
#define RSUF u8
#include "reduction/reduce_drv.h"

typedef void (*red_task_fn)(const red_run *, int64_t);
typedef void (*red_finish_fn)(const red_run *);
static const red_task_fn red_tasks[OPF_NDTYPES] = {red_task_f32, red_task_f64, red_task_i32,
                                                   red_task_i64, red_task_u8};
static const red_finish_fn red_finishes[OPF_NDTYPES] = {red_finish_f32, red_finish_f64,
                                                        red_finish_i32, red_finish_i64,
                                                        red_finish_u8};

/* Run a plan on x into out, partials in the workspace laid out for the operator ws_kind (max's
 * and min's backward run an arg plan in their own workspace). */
static void red_run_plan(opf_case *c, const red_plan *p, int ws_kind, void *out) {
  const red_ws w = red_ws_layout(p, ws_kind);
  char *ws = c->ws;
  red_run r = {p, c->in[0].data, out, ws + w.pa, ws + w.pb, (int64_t *)(ws + w.pi), ws + w.aux};
  const red_task_fn task = red_tasks[c->in[0].dtype];
  const int64_t work = p->g.outer * p->g.n * p->g.inner;
  if (work > OPF_PAR_MIN && p->ntask > 1 && omp_get_max_threads() > 1) {
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < p->ntask; t++) task(&r, t);
  } else {
    for (int64_t t = 0; t < p->ntask; t++) task(&r, t);
  }
  if (p->S > 1) red_finishes[c->in[0].dtype](&r);
}

/* Value of an empty reduction: the fold's identity (sum 0, prod 1; any false, all true),
 * NaN for mean (the others were refused by infer). */
static void red_fill_empty(opf_case *c, int kind, int64_t nout) {
  const int one = kind == RED_PROD || kind == RED_NANPROD || kind == RED_ALL;
  const double v = kind == RED_MEAN ? NAN : one ? 1 : 0;
  for (int64_t e = 0; e < nout; e++) {
    switch (c->out[0].dtype) {
    case OPF_F32: ((float *)c->out[0].data)[e] = (float)v; break;
    case OPF_F64: ((double *)c->out[0].data)[e] = v; break;
    case OPF_I32: ((int32_t *)c->out[0].data)[e] = (int32_t)v; break;
    case OPF_I64: ((int64_t *)c->out[0].data)[e] = (int64_t)v; break;
    default: ((uint8_t *)c->out[0].data)[e] = (uint8_t)v; break;
    }
  }
}

static int red_forward_kind(opf_case *c, int kind) {
  const red_plan p = red_make_plan(c, kind);
  if (p.nout == 0) return OPF_OK;
  if (p.g.n == 0) {
    red_fill_empty(c, kind, p.nout);
    return OPF_OK;
  }
  red_run_plan(c, &p, kind, c->out[0].data);
  return OPF_OK;
}

static int red_norm_kind(const opf_case *c) { return c->p[2] ? RED_L2 : RED_L1; }

#define RED_FWD(name, kind)                                                                   \
  static int name##_forward(opf_case *c) { return red_forward_kind(c, kind); }
RED_FWD(sum, RED_SUM)
RED_FWD(mean, RED_MEAN)
RED_FWD(max, RED_MAX)
RED_FWD(argmax, RED_ARGMAX)
RED_FWD(prod, RED_PROD)
RED_FWD(min, RED_MIN)
RED_FWD(argmin, RED_ARGMIN)
RED_FWD(nansum, RED_NANSUM)
RED_FWD(nanprod, RED_NANPROD)
RED_FWD(var, RED_VAR)
RED_FWD(std, RED_STD)
RED_FWD(logsumexp, RED_LSE)
RED_FWD(all, RED_ALL)
RED_FWD(any, RED_ANY)
static int norm_forward(opf_case *c) { return red_forward_kind(c, red_norm_kind(c)); }

/* ---- backward ---- */
typedef struct red_bwd_ctx {
  opf_case *c;
  const red_plan *p;
  int bk;
  double s;
  const void *a, *b; /* per-output coefficients of the map */
  void *coef;        /* coefficient array to fill (nout) */
  const int64_t *idx;
} red_bwd_ctx;

static void bmap_range(int64_t lo, int64_t hi, void *v) {
  const red_bwd_ctx *b = v;
  opf_case *c = b->c;
  if (c->dtype == OPF_F32)
    red_bmap_f32(b->bk, &b->p->g, c->in[0].data, b->a, b->b, (float)b->s, c->gin[0].data, lo, hi);
  else
    red_bmap_f64(b->bk, &b->p->g, c->in[0].data, b->a, b->b, b->s, c->gin[0].data, lo, hi);
}

static void bmap_rows_range(int64_t lo, int64_t hi, void *v) {
  const red_bwd_ctx *b = v;
  bmap_range(lo * b->p->g.n, hi * b->p->g.n, v);
}

static void coef_range(int64_t lo, int64_t hi, void *v) {
  const red_bwd_ctx *b = v;
  opf_case *c = b->c;
  if (c->dtype == OPF_F32)
    red_bwd_coef_f32(b->p, c->gout[0].data, c->out[0].data, b->coef, lo, hi);
  else
    red_bwd_coef_f64(b->p, c->gout[0].data, c->out[0].data, b->coef, lo, hi);
}

static void prod_fix_range(int64_t lo, int64_t hi, void *v) {
  const red_bwd_ctx *b = v;
  opf_case *c = b->c;
  const int nan = b->p->kind == RED_NANPROD;
  if (c->dtype == OPF_F32)
    red_prod_fix_f32(&b->p->g, nan, c->in[0].data, c->out[0].data, c->gout[0].data,
                     c->gin[0].data, lo, hi);
  else
    red_prod_fix_f64(&b->p->g, nan, c->in[0].data, c->out[0].data, c->gout[0].data,
                     c->gin[0].data, lo, hi);
}

/* dx = f(x, a, b) over the input: many contiguous rows (inner 1) are split between threads by
 * whole rows (short rows then take the unrolled path), everything else by flat ranges. */
static void red_bmap_run(red_bwd_ctx *b) {
  const opf_rgeom *g = &b->p->g;
  if (g->inner == 1 && g->n > 0 && g->outer >= 64)
    opf_parallel_range(g->outer, (OPF_PAR_MIN + g->n - 1) / g->n, bmap_rows_range, b);
  else
    opf_parallel_range(opf_numel(&b->c->in[0]), OPF_PAR_MIN, bmap_range, b);
}

/* The map and its coefficients per kind: a = dy (scaled by s) or a coefficient array computed
 * from dy, y (and the forward's mean for var/std); b = y, the mean, or unused. */
static int red_map_backward(opf_case *c, int kind) {
  if (!c->gin[0].data || opf_grad_is_view(c, 0)) return OPF_OK; /* sum: dy broadcast, a view */
  const red_plan p = red_make_plan(c, kind);
  if (p.nout == 0 || p.g.n == 0) {
    memset(c->gin[0].data, 0, c->gin[0].nbytes);
    return OPF_OK;
  }
  const red_ws w = red_ws_layout(&p, kind);
  void *coef = (char *)c->ws + w.coef, *mean = (char *)c->ws + w.aux;
  red_bwd_ctx b = {c, &p, RED_BK_CONST, p.scale, c->gout[0].data, c->gout[0].data, coef, NULL};
  switch (kind) {
  case RED_NANSUM: b.bk = RED_BK_NAN; break;
  case RED_L1: b.bk = RED_BK_SIGN; break;
  case RED_LSE: b.bk = RED_BK_EXP, b.b = c->out[0].data; break;
  case RED_PROD: b.bk = RED_BK_DIV, b.a = coef; break;
  case RED_NANPROD: b.bk = RED_BK_NANDIV, b.a = coef; break;
  case RED_L2: b.bk = RED_BK_MUL, b.a = coef; break;
  case RED_VAR:
  case RED_STD: b.bk = RED_BK_LIN, b.a = coef, b.b = mean; break;
  default: break;
  }
  if (b.a == coef) opf_parallel_range(p.nout, OPF_PAR_MIN, coef_range, &b);
  red_bmap_run(&b);
  if (kind == RED_PROD || kind == RED_NANPROD)
    opf_parallel_range(p.nout, (OPF_PAR_MIN + p.g.n - 1) / p.g.n, prod_fix_range, &b);
  return OPF_OK;
}

/* sum's dx is dy broadcast over the reduced axes: a view of dy with stride 0 there and, on
 * the kept axes, dy's own strides (dy is outer x inner, keepdims or not). mean's dx = dy / n
 * is scaled, not a view: it stays one fused fill (RED_BK_CONST with the scale), written. */
static int sum_grad_view(const opf_case *c, int i, opf_view *v) {
  const opf_tensor *x = &c->in[i];
  const int all = c->p[0] == OPF_AXIS_ALL, ax = all ? -1 : opf_axis(c->p[0], x->ndim);
  memset(v, 0, sizeof *v);
  v->of = 1;
  int64_t s = 1;
  for (int k = x->ndim - 1; k >= 0; k--) {
    if (all || k == ax) continue; /* stride 0 */
    v->strides[k] = s;
    s *= x->shape[k];
  }
  return 1;
}

#define RED_BWD(name, kind)                                                                   \
  static int name##_backward(opf_case *c) { return red_map_backward(c, kind); }
RED_BWD(sum, RED_SUM)
RED_BWD(mean, RED_MEAN)
RED_BWD(prod, RED_PROD)
RED_BWD(nansum, RED_NANSUM)
RED_BWD(nanprod, RED_NANPROD)
RED_BWD(var, RED_VAR)
RED_BWD(std, RED_STD)
RED_BWD(logsumexp, RED_LSE)
static int norm_backward(opf_case *c) { return red_map_backward(c, red_norm_kind(c)); }

static void ext_rows_range(int64_t lo, int64_t hi, void *v) {
  const red_bwd_ctx *b = v;
  opf_case *c = b->c;
  if (c->dtype == OPF_F32)
    red_max_bwd_rows_f32(&b->p->g, c->in[0].data, c->out[0].data, c->gout[0].data,
                         c->gin[0].data, lo, hi);
  else
    red_max_bwd_rows_f64(&b->p->g, c->in[0].data, c->out[0].data, c->gout[0].data,
                         c->gin[0].data, lo, hi);
}

static void zero_range(int64_t lo, int64_t hi, void *v) {
  opf_case *c = ((const red_bwd_ctx *)v)->c;
  size_t es = opf_dtype_size(c->dtype);
  memset((char *)c->gin[0].data + (size_t)lo * es, 0, (size_t)(hi - lo) * es);
}

static void scatter_range(int64_t lo, int64_t hi, void *v) {
  const red_bwd_ctx *b = v;
  opf_case *c = b->c;
  if (c->dtype == OPF_F32)
    red_max_scatter_f32(&b->p->g, b->idx, c->gout[0].data, c->gin[0].data, lo, hi);
  else
    red_max_scatter_f64(&b->p->g, b->idx, c->gout[0].data, c->gin[0].data, lo, hi);
}

static void ext_find_task(opf_case *c, const red_plan *p, int64_t *idx, int64_t t) {
  const int64_t o = t / p->ncb, j0 = (t % p->ncb) * p->cbw;
  const int64_t w = p->g.inner - j0 < p->cbw ? p->g.inner - j0 : p->cbw;
  const int64_t xo = o * p->g.n * p->g.inner + j0, e = o * p->g.inner + j0;
  if (c->dtype == OPF_F32)
    red_max_find_cols_f32(p, (const float *)c->in[0].data + xo, (const float *)c->out[0].data + e,
                          w, idx + e);
  else
    red_max_find_cols_f64(p, (const double *)c->in[0].data + xo,
                          (const double *)c->out[0].data + e, w, idx + e);
}

/* max / min: the gradient goes to the first extreme element of each reduced line (the
 * forward's tie rule); everything else is 0. The forward's y is exactly each line's extreme,
 * so only its first position is searched: along contiguous rows, or down the columns of each
 * (outer, column block) into the workspace, after which dx is zeroed in parallel and dy
 * scattered. */
static int red_ext_backward(opf_case *c, int kind) {
  if (!c->gin[0].data) return OPF_OK;
  const red_plan p = red_make_plan(c, kind == RED_MAX ? RED_ARGMAX : RED_ARGMIN);
  if (p.nout == 0 || p.g.n == 0) return OPF_OK;
  int64_t *idx = c->ws; /* layout offset 0 */
  red_bwd_ctx b = {c, &p, 0, 1, NULL, NULL, NULL, idx};
  if (p.g.inner == 1 || p.g.n >= INT32_MAX) {
    if (p.g.inner == 1 && p.g.outer >= 64) {
      opf_parallel_range(p.g.outer, (OPF_PAR_MIN + p.g.n - 1) / p.g.n, ext_rows_range, &b);
      return OPF_OK;
    }
    red_run_plan(c, &p, kind, idx); /* few long rows (parallel by segments), or huge n */
  } else {
    /* the column search streams whole rows of its block: blocks of 512 keep each row read one
     * or half a page long (argmax's 256 restart the prefetcher too often) and still give a
     * (1024, 1024) axis 0 two tasks */
    red_plan pf = red_make_plan(c, kind);
    if (pf.m == 1) {
      pf.cbw = OPF_RED_CB / 2;
      pf.ncb = (pf.g.inner + pf.cbw - 1) / pf.cbw;
    }
    const int64_t ntask = p.g.outer * pf.ncb;
    if (opf_numel(&c->in[0]) > OPF_PAR_MIN && ntask > 1 && omp_get_max_threads() > 1) {
#pragma omp parallel for schedule(static)
      for (int64_t t = 0; t < ntask; t++) ext_find_task(c, &pf, idx, t);
    } else {
      for (int64_t t = 0; t < ntask; t++) ext_find_task(c, &pf, idx, t);
    }
  }
  opf_parallel_range(opf_numel(&c->in[0]), OPF_PAR_MIN, zero_range, &b);
  opf_parallel_range(p.nout, OPF_PAR_MIN, scatter_range, &b);
  return OPF_OK;
}

static int max_backward(opf_case *c) { return red_ext_backward(c, RED_MAX); }
static int min_backward(opf_case *c) { return red_ext_backward(c, RED_MIN); }

/* ---- infer ---- */
static int red_out_dtype(const opf_case *c, int kind) {
  return red_is_arg(kind) ? OPF_I64 : kind == RED_ALL || kind == RED_ANY ? OPF_BOOL : c->dtype;
}

static int red_infer_kind(opf_case *c, int kind) {
  if (c->in[0].ndim < 0) return OPF_OK; /* "needs a shape" is reported by the caller */
  int axis, all;
  int rc = opf_red_axis(c, c->p[0], 1, &axis, &all);
  if (rc) return rc;
  const red_plan p = red_make_plan(c, kind);
  char s[96];
  if ((red_is_ext(kind) || red_is_arg(kind) || kind == RED_LSE || red_two(kind)) && p.g.n == 0)
    return opf_case_error(c, OPF_EINVAL, "%s of an empty axis: input 'x' %s has size 0 on the reduced axis",
                          c->op->name, opf_shape_str(&c->in[0], s, sizeof s));
  if ((kind == RED_VAR || kind == RED_STD) && (double)p.g.n - p.ddof <= 0)
    return opf_case_error(c, OPF_EINVAL, "%s: ddof %g must be less than the reduced size %lld of input 'x' %s",
                          c->op->name, p.ddof, (long long)p.g.n, opf_shape_str(&c->in[0], s, sizeof s));
  opf_red_set_out(c, (opf_dtype)red_out_dtype(c, kind), axis, all, c->p[1] != 0);
  c->ws_bytes = red_ws_layout(&p, kind).total;
  if (red_is_ext(kind)) { /* the backward may run an arg plan (other segments) in this space */
    const red_plan pa = red_make_plan(c, kind == RED_MAX ? RED_ARGMAX : RED_ARGMIN);
    const size_t b = red_ws_layout(&pa, kind).total;
    if (b > c->ws_bytes) c->ws_bytes = b;
  }
  return OPF_OK;
}

#define RED_INFER(name, kind)                                                                 \
  static int name##_infer(opf_case *c) { return red_infer_kind(c, kind); }
RED_INFER(sum, RED_SUM)
RED_INFER(mean, RED_MEAN)
RED_INFER(max, RED_MAX)
RED_INFER(argmax, RED_ARGMAX)
RED_INFER(prod, RED_PROD)
RED_INFER(min, RED_MIN)
RED_INFER(argmin, RED_ARGMIN)
RED_INFER(nansum, RED_NANSUM)
RED_INFER(nanprod, RED_NANPROD)
RED_INFER(var, RED_VAR)
RED_INFER(std, RED_STD)
RED_INFER(logsumexp, RED_LSE)
RED_INFER(all, RED_ALL)
RED_INFER(any, RED_ANY)
static int norm_infer(opf_case *c) { return red_infer_kind(c, red_norm_kind(c)); }

/* ---- reference: one output element at a time, the reduced line walked in order, in double
 * (integers in uint64, wrapping like the kernels) ---- */
static double red_get(const opf_tensor *t, int64_t i) {
  switch (t->dtype) {
  case OPF_F32: return ((const float *)t->data)[i];
  case OPF_F64: return ((const double *)t->data)[i];
  case OPF_I32: return ((const int32_t *)t->data)[i];
  case OPF_I64: return (double)((const int64_t *)t->data)[i];
  default: return ((const uint8_t *)t->data)[i];
  }
}

static int64_t red_geti(const opf_tensor *t, int64_t i) {
  return t->dtype == OPF_I32 ? ((const int32_t *)t->data)[i] : ((const int64_t *)t->data)[i];
}

static int red_reference_kind(opf_case *c, int kind) {
  const int all = c->p[0] == OPF_AXIS_ALL;
  const opf_rgeom g = opf_red_geom(&c->in[0], all ? 0 : opf_axis(c->p[0], c->in[0].ndim), all);
  const opf_tensor *x = &c->in[0];
  const int isf = opf_dtype_is_float(x->dtype), isi = x->dtype == OPF_I32 || x->dtype == OPF_I64;
  for (int64_t o = 0; o < g.outer; o++)
    for (int64_t j = 0; j < g.inner; j++) {
      const int64_t e = o * g.inner + j;
#define X_AT(k) ((o * g.n + (k)) * g.inner + j)
      double fs = 0, fp = 1, fa = 0, fq = 0, mean = 0;
      uint64_t is = 0, ip = 1;
      int64_t arg = 0, nz = 0;
      for (int64_t k = 0; k < g.n; k++) {
        const double v = red_get(x, X_AT(k));
        if (isi) {
          const int64_t iv = red_geti(x, X_AT(k)), ib = red_geti(x, X_AT(arg));
          is += (uint64_t)iv, ip *= (uint64_t)iv;
          if ((kind == RED_MAX || kind == RED_ARGMAX) ? iv > ib : iv < ib) arg = k;
        } else {
          const double b = red_get(x, X_AT(arg));
          if ((kind == RED_MAX || kind == RED_ARGMAX) ? v > b : v < b) arg = k;
        }
        nz += v != 0;
        mean += v / (double)g.n;
        if (isf && isnan(v) && (kind == RED_NANSUM || kind == RED_NANPROD)) continue;
        fs += v, fp *= v, fa += fabs(v), fq += v * v;
      }
      double lm = -INFINITY, ls = 0, sq = 0;
      for (int64_t k = 0; k < g.n; k++) lm = fmax(lm, red_get(x, X_AT(k)));
      for (int64_t k = 0; k < g.n; k++) {
        const double d = red_get(x, X_AT(k));
        ls += exp(d - lm), sq += (d - mean) * (d - mean);
      }
      const double var = sq / ((double)g.n - (kind == RED_VAR || kind == RED_STD ? c->p[2] : 0));
      double r = 0;
      switch (kind) {
      case RED_SUM: case RED_NANSUM: r = fs; break;
      case RED_MEAN: r = fs / (double)g.n; break;
      case RED_PROD: case RED_NANPROD: r = fp; break;
      case RED_MAX: case RED_MIN: r = red_get(x, X_AT(arg)); break;
      case RED_L1: r = fa; break;
      case RED_L2: r = sqrt(fq); break;
      case RED_VAR: r = var; break;
      case RED_STD: r = sqrt(var); break;
      case RED_LSE: r = lm + log(ls); break;
      default: break;
      }
#undef X_AT
      void *yv = c->out[0].data;
      switch (c->out[0].dtype) {
      case OPF_F32: ((float *)yv)[e] = (float)r; break;
      case OPF_F64: ((double *)yv)[e] = r; break;
      case OPF_BOOL: ((uint8_t *)yv)[e] = kind == RED_ANY ? nz > 0 : nz == g.n; break;
      case OPF_I64:
        ((int64_t *)yv)[e] = red_is_arg(kind) ? arg
                             : kind == RED_SUM ? (int64_t)is
                             : kind == RED_PROD ? (int64_t)ip
                                                : red_geti(x, (o * g.n + arg) * g.inner + j);
        break;
      default:
        ((int32_t *)yv)[e] = kind == RED_SUM ? (int32_t)(uint32_t)is
                             : kind == RED_PROD ? (int32_t)(uint32_t)ip
                                                : (int32_t)red_geti(x, (o * g.n + arg) * g.inner + j);
        break;
      }
    }
  return OPF_OK;
}

#define RED_REF(name, kind)                                                                   \
  static int name##_reference(opf_case *c) { return red_reference_kind(c, kind); }
RED_REF(sum, RED_SUM)
RED_REF(mean, RED_MEAN)
RED_REF(max, RED_MAX)
RED_REF(argmax, RED_ARGMAX)
RED_REF(prod, RED_PROD)
RED_REF(min, RED_MIN)
RED_REF(argmin, RED_ARGMIN)
RED_REF(nansum, RED_NANSUM)
RED_REF(nanprod, RED_NANPROD)
RED_REF(var, RED_VAR)
RED_REF(std, RED_STD)
RED_REF(logsumexp, RED_LSE)
RED_REF(all, RED_ALL)
RED_REF(any, RED_ANY)
static int norm_reference(opf_case *c) { return red_reference_kind(c, red_norm_kind(c)); }

/* ---- models ----
 * Per kind: flops = fe per input element + fo per output (fwd), be per input element + bo per
 * output (bwd), counting arithmetic operations (a compare-select is one):
 *   sum 1 add; mean 1 add + 1 scale per output, bwd the scale per output (then a broadcast);
 *   max / min / all / any 1 compare, max/min bwd 1 compare to find the extreme again;
 *   prod 1 mul, bwd 1 divide + 1 mul per output (dy * y); nansum 1 add, bwd 1 select;
 *   nanprod 1 mul, bwd as prod; norm L1 abs + add = 2, bwd 1 (sign select); L2 square + add
 *   = 2 + 1 sqrt per output, bwd 1 mul + 1 divide per output; var: subtract the shift, add,
 *   square, add = 4 + 5 per output (mean, square, subtract, divide, mean again), std + 1 sqrt,
 *   bwd subtract + mul = 2 + 2 per output; logsumexp compare (max), subtract, exp, add = 4 +
 *   2 per output (log, add), bwd subtract, exp, mul = 3.
 * Bytes: fwd reads x and writes y (in the output dtype). bwd reads dy, the input x when the map
 * needs it and the per-output arrays it uses (y, the mean), and writes dx. */
typedef struct red_model {
  double fe, fo, be, bo;
  int reads_x, arrays; /* bwd: reads x; per-output arrays read besides dy */
} red_model;

static red_model red_model_of(int kind) {
  switch (kind) {
  case RED_SUM: return (red_model){1, 0, 0, 0, 0, 0};
  case RED_MEAN: return (red_model){1, 1, 0, 1, 0, 0};
  case RED_MAX: case RED_MIN: return (red_model){1, 0, 1, 0, 1, 0};
  case RED_PROD: case RED_NANPROD: return (red_model){1, 0, 1, 1, 1, 1};
  case RED_NANSUM: return (red_model){1, 0, 1, 0, 1, 0};
  case RED_L1: return (red_model){2, 0, 1, 0, 1, 0};
  case RED_L2: return (red_model){2, 1, 1, 1, 1, 1};
  case RED_VAR: return (red_model){4, 5, 2, 2, 1, 1};
  case RED_STD: return (red_model){4, 6, 2, 2, 1, 2};
  case RED_LSE: return (red_model){4, 2, 3, 0, 1, 1};
  default: return (red_model){1, 0, 0, 0, 0, 0}; /* args, all, any: forward only */
  }
}

static double red_numel_x(const opf_case *c) { return (double)opf_numel(&c->in[0]); }
static double red_numel_y(const opf_case *c) { return (double)opf_numel(&c->out[0]); }

static double red_flops_kind(const opf_case *c, opf_pass p, int kind) {
  const red_model m = red_model_of(kind);
  const double nx = red_numel_x(c), ny = red_numel_y(c);
  return opf_pass_sum(p, m.fe * nx + m.fo * ny, m.be * nx + m.bo * ny);
}

static double red_bytes_kind(const opf_case *c, opf_pass p, int kind) {
  const red_model m = red_model_of(kind);
  const double es = (double)opf_dtype_size(c->dtype), x = red_numel_x(c) * es,
               y = red_numel_y(c) * (double)opf_dtype_size(c->out[0].dtype);
  if (opf_case_grad_view(c, 0, NULL)) return opf_pass_sum(p, x + y, 0); /* sum: dx a view of dy */
  return opf_pass_sum(p, x + y, (m.reads_x ? x : 0) + y * (1 + m.arrays) + x);
}

#define RED_MODELS(name, kind)                                                                \
  static double name##_flops(const opf_case *c, opf_pass p) { return red_flops_kind(c, p, kind); } \
  static double name##_bytes(const opf_case *c, opf_pass p) { return red_bytes_kind(c, p, kind); }
RED_MODELS(sum, RED_SUM)
RED_MODELS(mean, RED_MEAN)
RED_MODELS(max, RED_MAX)
RED_MODELS(min, RED_MIN)
RED_MODELS(prod, RED_PROD)
RED_MODELS(nansum, RED_NANSUM)
RED_MODELS(nanprod, RED_NANPROD)
RED_MODELS(var, RED_VAR)
RED_MODELS(std, RED_STD)
RED_MODELS(logsumexp, RED_LSE)
RED_MODELS(all, RED_ALL)
RED_MODELS(any, RED_ANY)
static double arg_flops(const opf_case *c, opf_pass p) { return opf_pass_sum(p, red_numel_x(c), 0); }
static double norm_flops(const opf_case *c, opf_pass p) {
  return red_flops_kind(c, p, red_norm_kind(c));
}
static double norm_bytes(const opf_case *c, opf_pass p) {
  return red_bytes_kind(c, p, red_norm_kind(c));
}

/* ---- input generators ---- */
/* nansum, nanprod: uniform values (the descriptor's range) with NaN at about 5% of the
 * positions, each position decided by its own counter draw (so the fill is threaded and the
 * same for every thread count). */
static int fill_nan(opf_case *c, int i, opf_rng *r) {
  opf_tensor *t = &c->in[i];
  opf_fill_uniform(t, c->seed, (uint64_t)i, c->op->in[i].lo, c->op->in[i].hi);
  const int64_t n = opf_numel(t);
  const uint64_t key = r->key;
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t k = 0; k < n; k++) {
    opf_rng d = {key, (uint64_t)k};
    if (opf_rng_uniform(&d) >= 0.05) continue;
    if (t->dtype == OPF_F32) ((float *)t->data)[k] = NAN;
    else ((double *)t->data)[k] = NAN;
  }
  return OPF_OK;
}

/* prod, nanprod: floats near 1 (reduce.h); nanprod adds NaNs to its range. */
static int fill_near_one(opf_case *c, int i, opf_rng *r) {
  if (c->op->in[i].lo != 0) return fill_nan(c, i, r); /* nanprod: its range, plus NaNs */
  opf_red_fill_near_one(c, i);
  return OPF_OK;
}

/* all / any: with uniform values every long line would hold a zero (all false) and a nonzero
 * (any true). all: zero with probability 1/(2n) (n the reduced size), so about 60% of lines
 * are all-true; any: nonzero with probability 1/(2n). Nonzero values are in [1, 4) (bool 1). */
static int fill_logic(opf_case *c, int i, opf_rng *r) {
  opf_tensor *t = &c->in[i];
  const red_plan p = red_make_plan(c, RED_ALL);
  const double q = 0.5 / (double)(p.g.n > 0 ? p.g.n : 1);
  const int any = !strcmp(c->op->name, "any");
  const int64_t n = opf_numel(t);
  const uint64_t key = r->key;
#pragma omp parallel for schedule(static) if (n > 65536)
  for (int64_t k = 0; k < n; k++) {
    opf_rng d = {key, (uint64_t)k};
    const double u = opf_rng_uniform(&d);
    const int nz = any ? u < q : u >= q;
    const double v = nz ? 1 + 3 * opf_rng_uniform(&d) : 0;
    switch (t->dtype) {
    case OPF_F32: ((float *)t->data)[k] = (float)v; break;
    case OPF_F64: ((double *)t->data)[k] = v; break;
    case OPF_I32: ((int32_t *)t->data)[k] = (int32_t)v; break;
    case OPF_I64: ((int64_t *)t->data)[k] = (int64_t)v; break;
    default: ((uint8_t *)t->data)[k] = (uint8_t)nz; break;
    }
  }
  return OPF_OK;
}

#define RED_AXIS_PARAM                                                                        \
  {.name = "axis", .type = OPF_P_AXIS, .def = OPF_AXIS_ALL, .min = -8, .max = 7,               \
   .help = "axis to reduce (negative counts from the end) or 'all' (the default, as in NumPy)"}
#define RED_KEEPDIMS_PARAM                                                                    \
  {.name = "keepdims", .type = OPF_P_BOOL, .def = 0,                                          \
   .help = "keep the reduced axes as size-1 dimensions"}
#define RED_PARAMS .n_params = 2, .params = {RED_AXIS_PARAM, RED_KEEPDIMS_PARAM}

#define RED_SHAPES                                                                            \
  .shapes = {{"standard", "x=1024x1024 axis=0"},  {"standard", "x=1024x1024 axis=1"},         \
             {"standard", "x=1024x1024 axis=all"}, {"skewed", "x=10000x10 axis=0"},            \
             {"skewed", "x=10000x10 axis=1"},      {"skewed", "x=10x10000 axis=0"},            \
             {"skewed", "x=10x10000 axis=1"},      {"skewed", "x=10000x1 axis=0"},             \
             {"skewed", "x=10000x1 axis=1"},       {"skewed", "x=100000x10 axis=0"},           \
             {"skewed", "x=100000x10 axis=1"},     {"small", "x=16x16 axis=0"},                \
             {"small", "x=16x16 axis=1 keepdims=true"}, {"small", "x=1x64 axis=-1"},           \
             {"small", "x=400x3 axis=0"},          {"small", "x=4x5x6 axis=1"},                \
             {"small", "x=4x5x6 axis=all"},        {"test", "x=301x517 axis=0"},               \
             {"test", "x=301x517 axis=1"},         {"test", "x=301x517 axis=all"},             \
             {"test", "x=3x1000x7 axis=1 keepdims=true"}, {"test", "x=200000x3 axis=0"},       \
             {"large", "x=8192x8192 axis=0"},      {"large", "x=8192x8192 axis=1"}}

/* Values in [-4, 4): integers get many ties, which exercises the args' first-occurrence rule. */
#define RED_INPUT(diff)                                                                       \
  .n_in = 1, .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = (diff), .lo = -4, .hi = 4}}
#define RED_INPUT_FILL(diff, l, h, f)                                                         \
  .n_in = 1, .in = {{.name = "x", .dtype = OPF_DT_CASE, .flags = (diff), .lo = l, .hi = h,     \
                     .fill = f}}

/* The common fields of a reduction descriptor. */
#define RED_OP(nm, dts, summ)                                                                 \
  .abi = OPF_OP_ABI, .name = #nm, .category = "reduction", .summary = summ, .dtypes = dts,    \
  .n_out = 1, .infer = nm##_infer, .forward = nm##_forward, .reference = nm##_reference

OPPERF_OP(sum) = {
    RED_OP(sum, OPF_DT_ALL, "sum over an axis or all (integers wrap modulo 2^bits, as the exact sum cast)"),
    RED_INPUT(OPF_IN_DIFF), .out = {"y"}, RED_PARAMS, RED_SHAPES,
    .backward = sum_backward, .flops = sum_flops, .bytes = sum_bytes, .grad_view = sum_grad_view,
};

OPPERF_OP(mean) = {
    RED_OP(mean, OPF_DT_FLOAT, "arithmetic mean over an axis or all"),
    RED_INPUT(OPF_IN_DIFF), .out = {"y"}, RED_PARAMS, RED_SHAPES,
    .backward = mean_backward, .flops = mean_flops, .bytes = mean_bytes,
};

OPPERF_OP(max) = {
    RED_OP(max, OPF_DT_ALL, "maximum over an axis or all (gradient to the first maximal element)"),
    RED_INPUT(OPF_IN_DIFF), .out = {"y"}, RED_PARAMS, RED_SHAPES,
    .backward = max_backward, .flops = max_flops, .bytes = max_bytes,
};

OPPERF_OP(min) = {
    RED_OP(min, OPF_DT_ALL, "minimum over an axis or all (gradient to the first minimal element)"),
    RED_INPUT(OPF_IN_DIFF), .out = {"y"}, RED_PARAMS, RED_SHAPES,
    .backward = min_backward, .flops = min_flops, .bytes = min_bytes,
};

OPPERF_OP(argmax) = {
    RED_OP(argmax, OPF_DT_ALL, "int64 index of the first maximum over an axis (flat index for 'all')"),
    RED_INPUT(0), .out = {"indices"}, RED_PARAMS, RED_SHAPES,
    .flops = arg_flops, .bytes = opf_default_bytes,
};

/* argmin is catalogued with sorting and searching; it shares argmax's kernels and rules. */
OPPERF_OP(argmin) = {
    .abi = OPF_OP_ABI, .name = "argmin", .category = "sort", .dtypes = OPF_DT_ALL, .n_out = 1,
    .summary = "int64 index of the first minimum over an axis (flat index for 'all')",
    .infer = argmin_infer, .forward = argmin_forward, .reference = argmin_reference,
    RED_INPUT(0), .out = {"indices"}, RED_PARAMS, RED_SHAPES,
    .flops = arg_flops, .bytes = opf_default_bytes,
};

OPPERF_OP(prod) = {
    RED_OP(prod, OPF_DT_ALL, "product over an axis or all (integers wrap; gradient exact with zeros)"),
    RED_INPUT_FILL(OPF_IN_DIFF, 0, 0, fill_near_one), .out = {"y"}, RED_PARAMS, RED_SHAPES,
    .backward = prod_backward, .flops = prod_flops, .bytes = prod_bytes,
};

OPPERF_OP(nansum) = {
    RED_OP(nansum, OPF_DT_FLOAT, "sum treating NaN as 0 (inputs hold ~5% NaN)"),
    RED_INPUT_FILL(OPF_IN_DIFF, -4, 4, fill_nan), .out = {"y"}, RED_PARAMS, RED_SHAPES,
    .backward = nansum_backward, .flops = nansum_flops, .bytes = nansum_bytes,
};

OPPERF_OP(nanprod) = {
    RED_OP(nanprod, OPF_DT_FLOAT, "product treating NaN as 1 (inputs near 1 with ~5% NaN)"),
    RED_INPUT_FILL(OPF_IN_DIFF, OPF_RED_NEAR_ONE_LO, OPF_RED_NEAR_ONE_HI, fill_near_one), .out = {"y"},
    RED_PARAMS, RED_SHAPES,
    .backward = nanprod_backward, .flops = nanprod_flops, .bytes = nanprod_bytes,
};

OPPERF_OP(norm) = {
    RED_OP(norm, OPF_DT_FLOAT, "vector norm over an axis or all: L1 sum |x| or L2 sqrt(sum x^2)"),
    RED_INPUT(OPF_IN_DIFF), .out = {"y"},
    .n_params = 3,
    .params = {RED_AXIS_PARAM, RED_KEEPDIMS_PARAM,
               {.name = "ord", .type = OPF_P_ENUM, .def = 1, .choices = "l1|l2",
                .help = "l1: sum of |x|; l2: Euclidean norm (the default)"}},
    RED_SHAPES,
    .backward = norm_backward, .flops = norm_flops, .bytes = norm_bytes,
};

#define RED_DDOF_PARAM                                                                        \
  {.name = "ddof", .type = OPF_P_INT, .def = 0, .min = 0, .max = 1000000,                     \
   .help = "delta degrees of freedom: divide by n - ddof (0: population, 1: sample)"}

OPPERF_OP(var) = {
    RED_OP(var, OPF_DT_FLOAT, "variance over an axis or all: sum (x - mean)^2 / (n - ddof)"),
    RED_INPUT(OPF_IN_DIFF), .out = {"y"},
    .n_params = 3, .params = {RED_AXIS_PARAM, RED_KEEPDIMS_PARAM, RED_DDOF_PARAM},
    RED_SHAPES,
    .backward = var_backward, .flops = var_flops, .bytes = var_bytes,
};

OPPERF_OP(std) = {
    RED_OP(std, OPF_DT_FLOAT, "standard deviation over an axis or all: sqrt(var) with ddof"),
    RED_INPUT(OPF_IN_DIFF), .out = {"y"},
    .n_params = 3, .params = {RED_AXIS_PARAM, RED_KEEPDIMS_PARAM, RED_DDOF_PARAM},
    RED_SHAPES,
    .backward = std_backward, .flops = std_flops, .bytes = std_bytes,
};

OPPERF_OP(logsumexp) = {
    RED_OP(logsumexp, OPF_DT_FLOAT, "log(sum(exp(x))) over an axis or all, computed stably"),
    RED_INPUT(OPF_IN_DIFF), .out = {"y"}, RED_PARAMS, RED_SHAPES,
    .backward = logsumexp_backward, .flops = logsumexp_flops, .bytes = logsumexp_bytes,
};

OPPERF_OP(all) = {
    RED_OP(all, OPF_DT_ALL | OPF_DT_BOOL, "bool: every element nonzero (NaN counts as nonzero)"),
    RED_INPUT_FILL(0, 0, 0, fill_logic), .out = {"y"}, RED_PARAMS, RED_SHAPES,
    .flops = all_flops, .bytes = all_bytes,
};

OPPERF_OP(any) = {
    RED_OP(any, OPF_DT_ALL | OPF_DT_BOOL, "bool: some element nonzero (NaN counts as nonzero)"),
    RED_INPUT_FILL(0, 0, 0, fill_logic), .out = {"y"}, RED_PARAMS, RED_SHAPES,
    .flops = any_flops, .bytes = any_bytes,
};
