/* arith.c: add, sub, mul and div with NumPy broadcasting (same shape, row/column broadcast,
 * tensor-scalar) for float32/float64 and int32/int64, and their gradients reduced over the
 * broadcast dims. One broadcast iterator (bcast.h) drives every operator; each operator is an
 * element function inlined into per-stride-pattern inner loops that the compiler vectorises. */
#include "binary/bcast.h"

enum { BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_NOPS };
/* Per-element gradient terms: dX = sum over broadcast dims of term(g, a, b). */
enum { GR_G, GR_NEG_G, GR_G_B, GR_G_A, GR_G_DIV_B, GR_NEG_G_A_DIV_B2, GR_NTERMS };

#define KI static inline __attribute__((always_inline))

/* ---- element functions: op and term are compile-time constants after inlining ---- */
/* Integer division through float64 is exact for |a|, |b| < 2^53: the rounding error of a/b,
 * at most |a/b| 2^-53 < 1/|b|, is smaller than the distance (at least 1/|b|) from a
 * non-integer quotient to the next integer, so truncation gives the C quotient. It vectorises
 * (there is no SIMD integer divide): always for int32, per checked block for int64. */
#define I64_EXACT_DIV_LIMIT (1ull << 53)
#define BIN_ELEMENT(T, SUF, DIV)                                                              \
  KI T bin_el_##SUF(const int op, T a, T b) {                                                 \
    switch (op) {                                                                             \
    case BIN_ADD: return a + b;                                                               \
    case BIN_SUB: return a - b;                                                               \
    case BIN_MUL: return a * b;                                                               \
    default: return DIV;                                                                      \
    }                                                                                         \
  }
BIN_ELEMENT(float, f32, a / b)
BIN_ELEMENT(double, f64, a / b)
BIN_ELEMENT(int32_t, i32, (int32_t)((double)a / (double)b))
BIN_ELEMENT(int64_t, i64_fp, (int64_t)((double)a / (double)b)) /* for |a|, |b| < 2^53 */

#define GRAD_TERM(T, SUF)                                                                     \
  KI T gr_el_##SUF(const int term, T g, T a, T b) {                                           \
    switch (term) {                                                                           \
    case GR_G: return g;                                                                      \
    case GR_NEG_G: return -g;                                                                 \
    case GR_G_B: return g * b;                                                                \
    case GR_G_A: return g * a;                                                                \
    case GR_G_DIV_B: return g / b;                                                            \
    default: return -(g * a) / (b * b);                                                       \
    }                                                                                         \
  }
GRAD_TERM(float, f32)
GRAD_TERM(double, f64)

/* ---- inner rows; sa/sb (operand strides, 0 or 1) are constants after inlining, so a
 * broadcast operand becomes a hoisted scalar and every variant vectorises ---- */
#define FWD_ROW(T, SUF)                                                                       \
  KI void fwd_row_##SUF(T *restrict y, const T *restrict a, const T *restrict b, int64_t n,   \
                        const int sa, const int sb, const int op) {                           \
    for (int64_t k = 0; k < n; k++) y[k] = bin_el_##SUF(op, a[sa ? k : 0], b[sb ? k : 0]);   \
  }
FWD_ROW(float, f32)
FWD_ROW(double, f64)
FWD_ROW(int32_t, i32)
FWD_ROW(int64_t, i64_fp)

/* int64: division goes block by block, through float64 when every operand of the block is
 * below 2^53 in magnitude (one vectorised OR over the block), else with the scalar divide. */
KI void fwd_row_i64(int64_t *restrict y, const int64_t *restrict a, const int64_t *restrict b,
                    int64_t n, const int sa, const int sb, const int op) {
  if (op != BIN_DIV) {
    fwd_row_i64_fp(y, a, b, n, sa, sb, op);
    return;
  }
  for (int64_t k0 = 0; k0 < n; k0 += 1024) {
    const int64_t m = n - k0 < 1024 ? n - k0 : 1024;
    const int64_t *ab = a + (sa ? k0 : 0), *bb = b + (sb ? k0 : 0);
    uint64_t span = 0; /* v + 2^53 is below 2^54 exactly when |v| < 2^53 (or v = -2^53) */
    for (int64_t k = 0; k < m; k++)
      span |= ((uint64_t)ab[sa ? k : 0] + I64_EXACT_DIV_LIMIT) |
              ((uint64_t)bb[sb ? k : 0] + I64_EXACT_DIV_LIMIT);
    if (span < 2 * I64_EXACT_DIV_LIMIT) fwd_row_i64_fp(y + k0, ab, bb, m, sa, sb, BIN_DIV);
    else
      for (int64_t k = 0; k < m; k++) y[k0 + k] = ab[sa ? k : 0] / bb[sb ? k : 0];
  }
}

/* Sum of term over a row in L independent lanes folded as a tree: the reduction vectorises
 * without reassociation flags and does not end in a serial chain of L adds. */
#define ROW_SUM(SUF, L, OUT)                                                                  \
  do {                                                                                        \
    __typeof__(OUT) acc_[L] = {0};                                                            \
    int64_t k = 0;                                                                            \
    for (; k + (L) <= n; k += (L))                                                            \
      for (int j = 0; j < (L); j++)                                                           \
        acc_[j] += gr_el_##SUF(term, g[k + j], a[sa ? k + j : 0], b[sb ? k + j : 0]);         \
    for (; k < n; k++) OUT += gr_el_##SUF(term, g[k], a[sa ? k : 0], b[sb ? k : 0]);          \
    for (int w = (L) / 2; w > 0; w /= 2)                                                      \
      for (int j = 0; j < w; j++) acc_[j] += acc_[j + w];                                     \
    OUT += acc_[0];                                                                           \
  } while (0)

/* Gradient row: dx (stride sx = 1: one gradient per element; 0: the row sums into dx[0]).
 * Long rows sum in two vectors' worth of lanes (latency-bound adds need two chains); short
 * rows (10x, 100x) in half a vector, where the fold and the scalar tail dominate (row sums
 * measured 3.8x faster at 100000 rows of 10, 2x at 10000 rows of 100, 15% slower at 1024). */
#define SUM_LANES_LONG(T) (128 / (int)sizeof(T))
#define BWD_ROW(T, SUF)                                                                       \
  KI void bwd_row_##SUF(T *restrict dx, const T *restrict g, const T *restrict a,             \
                        const T *restrict b, int64_t n, const int sx, const int sa,           \
                        const int sb, int first, const int term) {                            \
    if (sx) {                                                                                 \
      if (first)                                                                              \
        for (int64_t k = 0; k < n; k++)                                                       \
          dx[k] = gr_el_##SUF(term, g[k], a[sa ? k : 0], b[sb ? k : 0]);                      \
      else                                                                                    \
        for (int64_t k = 0; k < n; k++)                                                       \
          dx[k] += gr_el_##SUF(term, g[k], a[sa ? k : 0], b[sb ? k : 0]);                     \
      return;                                                                                 \
    }                                                                                         \
    T sum = 0;                                                                                \
    if (n >= 8 * SUM_LANES_LONG(T)) ROW_SUM(SUF, SUM_LANES_LONG(T), sum);                     \
    else ROW_SUM(SUF, SUM_LANES_LONG(T) / 4, sum);                                            \
    dx[0] = first ? sum : dx[0] + sum;                                                        \
  }
BWD_ROW(float, f32)
BWD_ROW(double, f64)

/* ---- the bc_kernel entry points: one dispatch on the stride pattern per block ---- */
#define FWD_ROWS(T, SUF, SA, SB, OP)                                                          \
  for (int64_t r = 0; r < rows; r++)                                                          \
    fwd_row_##SUF((T *)p[0] + r * os[0], (const T *)p[1] + r * os[1],                         \
                  (const T *)p[2] + r * os[2], n, SA, SB, OP)
#define FWD_KERNEL(NAME, OP, T, SUF)                                                          \
  OPF_VEC static void fwd_##NAME##_##SUF(void *const *p, const int64_t *s, const int64_t *os, \
                                         int64_t rows, int64_t n, int first) {                \
    (void)first;                                                                              \
    if (s[1] && s[2]) FWD_ROWS(T, SUF, 1, 1, OP);                                             \
    else if (s[1]) FWD_ROWS(T, SUF, 1, 0, OP);                                                \
    else if (s[2]) FWD_ROWS(T, SUF, 0, 1, OP);                                                \
    else FWD_ROWS(T, SUF, 0, 0, OP);                                                          \
  }
#define FWD_KERNELS(T, SUF)                                                                   \
  FWD_KERNEL(add, BIN_ADD, T, SUF)                                                            \
  FWD_KERNEL(sub, BIN_SUB, T, SUF)                                                            \
  FWD_KERNEL(mul, BIN_MUL, T, SUF) FWD_KERNEL(div, BIN_DIV, T, SUF)
FWD_KERNELS(float, f32)
FWD_KERNELS(double, f64)
FWD_KERNELS(int32_t, i32)
FWD_KERNELS(int64_t, i64)

/* Four rows summed into one destination row (row-broadcast gradients): a quarter of the
 * loads and stores of dx, and a quarter of the store-to-load chains through it. */
#define ROW4_TERMS(SUF)                                                                       \
  ((gr_el_##SUF(term, g[k], a[sa ? k : 0], b[sb ? k : 0]) +                                   \
    gr_el_##SUF(term, g1[k], a1[sa ? k : 0], b1[sb ? k : 0])) +                               \
   (gr_el_##SUF(term, g2[k], a2[sa ? k : 0], b2[sb ? k : 0]) +                                \
    gr_el_##SUF(term, g3[k], a3[sa ? k : 0], b3[sb ? k : 0])))
#define BWD_ROW4(T, SUF)                                                                      \
  KI void bwd_row4_##SUF(T *restrict dx, const T *restrict g, const T *restrict a,            \
                         const T *restrict b, const int64_t *os, int64_t n, const int sa,     \
                         const int sb, int first, const int term) {                           \
    const T *restrict g1 = g + os[1], *restrict g2 = g1 + os[1], *restrict g3 = g2 + os[1];   \
    const T *restrict a1 = a + os[2], *restrict a2 = a1 + os[2], *restrict a3 = a2 + os[2];   \
    const T *restrict b1 = b + os[3], *restrict b2 = b1 + os[3], *restrict b3 = b2 + os[3];   \
    if (first)                                                                                \
      for (int64_t k = 0; k < n; k++) dx[k] = ROW4_TERMS(SUF);                                  \
    else                                                                                      \
      for (int64_t k = 0; k < n; k++) dx[k] += ROW4_TERMS(SUF);                                 \
  }
BWD_ROW4(float, f32)
BWD_ROW4(double, f64)

/* Rows after the first accumulate when the destination does not move with the row (os[0] is
 * 0); such rows go four at a time when each row has its own gradients (SX). */
#define BWD_ROWS(T, SUF, SX, SA, SB, TERM)                                                    \
  do {                                                                                        \
    int64_t r = 0;                                                                            \
    if (SX && !os[0])                                                                         \
      for (; r + 4 <= rows; r += 4)                                                           \
        bwd_row4_##SUF((T *)p[0], (const T *)p[1] + r * os[1], (const T *)p[2] + r * os[2],   \
                       (const T *)p[3] + r * os[3], os, n, SA, SB, first && r == 0, TERM);    \
    for (; r < rows; r++)                                                                     \
      bwd_row_##SUF((T *)p[0] + r * os[0], (const T *)p[1] + r * os[1],                       \
                    (const T *)p[2] + r * os[2], (const T *)p[3] + r * os[3], n, SX, SA, SB,  \
                    first && (r == 0 || os[0]), TERM);                                        \
  } while (0)
#define BWD_KERNEL(NAME, TERM, T, SUF)                                                        \
  OPF_VEC static void bwd_##NAME##_##SUF(void *const *p, const int64_t *s, const int64_t *os, \
                                         int64_t rows, int64_t n, int first) {                \
    switch ((s[0] ? 4 : 0) | (s[2] ? 2 : 0) | (s[3] ? 1 : 0)) {                               \
    case 0: BWD_ROWS(T, SUF, 0, 0, 0, TERM); break;                                           \
    case 1: BWD_ROWS(T, SUF, 0, 0, 1, TERM); break;                                           \
    case 2: BWD_ROWS(T, SUF, 0, 1, 0, TERM); break;                                           \
    case 3: BWD_ROWS(T, SUF, 0, 1, 1, TERM); break;                                           \
    case 4: BWD_ROWS(T, SUF, 1, 0, 0, TERM); break;                                           \
    case 5: BWD_ROWS(T, SUF, 1, 0, 1, TERM); break;                                           \
    case 6: BWD_ROWS(T, SUF, 1, 1, 0, TERM); break;                                           \
    default: BWD_ROWS(T, SUF, 1, 1, 1, TERM); break;                                          \
    }                                                                                         \
  }
#define BWD_KERNELS(T, SUF)                                                                   \
  BWD_KERNEL(g, GR_G, T, SUF)                                                                 \
  BWD_KERNEL(neg_g, GR_NEG_G, T, SUF)                                                         \
  BWD_KERNEL(g_b, GR_G_B, T, SUF)                                                             \
  BWD_KERNEL(g_a, GR_G_A, T, SUF)                                                             \
  BWD_KERNEL(g_div_b, GR_G_DIV_B, T, SUF)                                                     \
  BWD_KERNEL(neg_g_a_div_b2, GR_NEG_G_A_DIV_B2, T, SUF)
BWD_KERNELS(float, f32)
BWD_KERNELS(double, f64)

/* Indexed by opf_dtype (F32, F64, I32, I64). */
static const bc_kernel fwd_tab[BIN_NOPS][OPF_NDTYPES] = {
    {fwd_add_f32, fwd_add_f64, fwd_add_i32, fwd_add_i64},
    {fwd_sub_f32, fwd_sub_f64, fwd_sub_i32, fwd_sub_i64},
    {fwd_mul_f32, fwd_mul_f64, fwd_mul_i32, fwd_mul_i64},
    {fwd_div_f32, fwd_div_f64, fwd_div_i32, fwd_div_i64}};
static const bc_kernel bwd_tab[GR_NTERMS][2] = {
    {bwd_g_f32, bwd_g_f64},           {bwd_neg_g_f32, bwd_neg_g_f64},
    {bwd_g_b_f32, bwd_g_b_f64},       {bwd_g_a_f32, bwd_g_a_f64},
    {bwd_g_div_b_f32, bwd_g_div_b_f64}, {bwd_neg_g_a_div_b2_f32, bwd_neg_g_a_div_b2_f64}};
/* Gradient term of (a, b) per operator. */
static const int grad_terms[BIN_NOPS][2] = {
    {GR_G, GR_G}, {GR_G, GR_NEG_G}, {GR_G_B, GR_G_A}, {GR_G_DIV_B, GR_NEG_G_A_DIV_B2}};

/* Same-shape operands: both gradients in one pass over g (add: 3 streams instead of 4). */
#define BWD_BOTH(NAME, OP, T, SUF)                                                            \
  OPF_VEC static void bwd_both_##NAME##_##SUF(const void *gv, const void *av, const void *bv, \
                                              void *dav, void *dbv, int64_t n) {              \
    const T *restrict g = gv, *restrict a = av, *restrict b = bv;                             \
    T *restrict da = dav, *restrict db = dbv;                                                 \
    for (int64_t k = 0; k < n; k++) {                                                         \
      da[k] = gr_el_##SUF(grad_terms[OP][0], g[k], a[k], b[k]);                               \
      db[k] = gr_el_##SUF(grad_terms[OP][1], g[k], a[k], b[k]);                               \
    }                                                                                         \
  }
#define BWD_BOTH_KERNELS(T, SUF)                                                              \
  BWD_BOTH(add, BIN_ADD, T, SUF)                                                              \
  BWD_BOTH(sub, BIN_SUB, T, SUF) BWD_BOTH(mul, BIN_MUL, T, SUF) BWD_BOTH(div, BIN_DIV, T, SUF)
BWD_BOTH_KERNELS(float, f32)
BWD_BOTH_KERNELS(double, f64)
typedef void (*bwd_both_fn)(const void *g, const void *a, const void *b, void *da, void *db,
                            int64_t n);
static const bwd_both_fn bwd_both_tab[BIN_NOPS][2] = {
    {bwd_both_add_f32, bwd_both_add_f64}, {bwd_both_sub_f32, bwd_both_sub_f64},
    {bwd_both_mul_f32, bwd_both_mul_f64}, {bwd_both_div_f32, bwd_both_div_f64}};

typedef struct {
  opf_case *c;
  bwd_both_fn fn;
} both_ctx;

static void both_range(int64_t lo, int64_t hi, void *p) {
  const both_ctx *x = p;
  const opf_case *c = x->c;
  const size_t es = opf_dtype_size(c->dtype), off = (size_t)lo * es;
  x->fn((const char *)c->gout[0].data + off, (const char *)c->in[0].data + off,
        (const char *)c->in[1].data + off, (char *)c->gin[0].data + off,
        (char *)c->gin[1].data + off, hi - lo);
}

/* Plan of an input's gradient: destination dst (shaped like the input), then g, a, b. */
static void grad_plan(const opf_case *c, const opf_tensor *dst, bc_plan *p) {
  const opf_tensor *t[4] = {dst, &c->out[0], &c->in[0], &c->in[1]};
  bc_plan_init(p, c->out[0].ndim, c->out[0].shape, 4, t);
}

static int bin_infer(opf_case *c) {
  if (c->in[0].ndim < 0 || c->in[1].ndim < 0) return OPF_OK; /* the driver names the input */
  int nd = 0;
  int64_t shape[OPF_MAX_DIMS];
  int rc = opf_broadcast_shape(c, &c->in[0], &c->in[1], &nd, shape);
  if (rc) return rc;
  opf_set_out(c, 0, c->dtype, nd, shape);
  /* Workspace: partial sums of the larger gradient reduction (they run one after another). */
  if (opf_dtype_is_float(c->dtype))
    for (int i = 0; i < 2; i++) {
      bc_plan p;
      grad_plan(c, &c->in[i], &p);
      size_t ws = bc_ws_bytes(&p, opf_dtype_size(c->dtype));
      if (ws > c->ws_bytes) c->ws_bytes = ws;
    }
  return OPF_OK;
}

static int bin_forward(opf_case *c, int op) {
  const opf_tensor *t[3] = {&c->out[0], &c->in[0], &c->in[1]};
  bc_plan p;
  bc_plan_init(&p, c->out[0].ndim, c->out[0].shape, 3, t);
  void *base[3] = {c->out[0].data, c->in[0].data, c->in[1].data};
  bc_run(&p, fwd_tab[op][c->dtype], base, c->dtype, NULL);
  return OPF_OK;
}

static int bin_backward(opf_case *c, int op) {
  const int64_t n = opf_numel(&c->out[0]);
  if (c->gin[0].data && c->gin[1].data && opf_numel(&c->in[0]) == n &&
      opf_numel(&c->in[1]) == n) { /* same shape: no reduction, one fused pass */
    both_ctx x = {c, bwd_both_tab[op][c->dtype == OPF_F64]};
    opf_parallel_range(n, OPF_PAR_MIN, both_range, &x);
    return OPF_OK;
  }
  for (int i = 0; i < 2; i++) {
    if (!c->gin[i].data) continue;
    bc_plan p;
    grad_plan(c, &c->gin[i], &p);
    void *base[4] = {c->gin[i].data, c->gout[0].data, c->in[0].data, c->in[1].data};
    bc_run(&p, bwd_tab[grad_terms[op][i]][c->dtype == OPF_F64], base, c->dtype, c->ws);
  }
  return OPF_OK;
}

/* ---- reference: unravel every output index, map it into a and b by their own shapes ---- */
static int64_t ref_offset(const opf_tensor *t, const opf_tensor *y, int64_t i) {
  int64_t off = 0, stride = 1;
  for (int k = y->ndim - 1; k >= 0; k--) {
    int64_t ik = i % y->shape[k];
    i /= y->shape[k];
    int kt = t->ndim - y->ndim + k;
    if (kt < 0) break;
    if (t->shape[kt] != 1) off += ik * stride;
    stride *= t->shape[kt];
  }
  return off;
}

static double ref_getf(const opf_tensor *t, int64_t i) {
  return t->dtype == OPF_F32 ? ((const float *)t->data)[i] : ((const double *)t->data)[i];
}
static int64_t ref_geti(const opf_tensor *t, int64_t i) {
  return t->dtype == OPF_I32 ? ((const int32_t *)t->data)[i] : ((const int64_t *)t->data)[i];
}
#define REF_APPLY(op, x, y)                                                                   \
  ((op) == BIN_ADD   ? (x) + (y)                                                              \
   : (op) == BIN_SUB ? (x) - (y)                                                              \
   : (op) == BIN_MUL ? (x) * (y)                                                              \
                     : (x) / (y))

static int bin_reference(opf_case *c, int op) {
  const opf_tensor *y = &c->out[0], *a = &c->in[0], *b = &c->in[1];
  int64_t n = opf_numel(y);
  for (int64_t i = 0; i < n; i++) {
    int64_t ia = ref_offset(a, y, i), ib = ref_offset(b, y, i);
    /* float64 arithmetic rounded once to float32 equals float32 arithmetic for + - * /;
     * integers: C's division truncates toward zero */
    switch (c->dtype) {
    case OPF_F32:
      ((float *)y->data)[i] = (float)REF_APPLY(op, ref_getf(a, ia), ref_getf(b, ib));
      break;
    case OPF_F64: ((double *)y->data)[i] = REF_APPLY(op, ref_getf(a, ia), ref_getf(b, ib)); break;
    case OPF_I32:
      ((int32_t *)y->data)[i] = (int32_t)REF_APPLY(op, ref_geti(a, ia), ref_geti(b, ib));
      break;
    default: ((int64_t *)y->data)[i] = REF_APPLY(op, ref_geti(a, ia), ref_geti(b, ib)); break;
    }
  }
  return OPF_OK;
}

/* ---- models. fwd: one operation per output element. bwd, per input X: the term's
 * operations per output element (add 0, 0; sub 0, 1 negate; mul 1, 1 multiply; div 1 divide,
 * 3 for -(g a)/(b b)) plus the sum over broadcast dims, numel(y) - numel(X) adds. Bytes: fwd
 * reads a and b once and writes y; bwd reads g (and a, b when the terms use them: mul, div)
 * and writes da, db. ---- */
static double bin_flops(const opf_case *c, opf_pass p, int op) {
  static const double term_ops[BIN_NOPS][2] = {{0, 0}, {0, 1}, {1, 1}, {1, 3}};
  double ny = (double)opf_numel(&c->out[0]), bwd = 0;
  for (int i = 0; i < 2; i++) {
    double nx = (double)opf_numel(&c->in[i]);
    bwd += term_ops[op][i] * ny + (ny > nx ? ny - nx : 0);
  }
  return opf_pass_sum(p, ny, bwd);
}

static double bin_bytes(const opf_case *c, opf_pass p, int op) {
  double es = (double)opf_dtype_size(c->dtype);
  double ny = (double)opf_numel(&c->out[0]) * es, na = (double)opf_numel(&c->in[0]) * es,
         nb = (double)opf_numel(&c->in[1]) * es;
  double fwd = na + nb + ny, bwd = ny + na + nb + (op == BIN_MUL || op == BIN_DIV ? na + nb : 0);
  return opf_pass_sum(p, fwd, bwd);
}

/* ---- div's divisor: |b| in [0.5, 2) (floats) or [1, 9] (integers), either sign ---- */
static int div_fill_b(opf_case *c, int i, opf_rng *r) {
  (void)r;
  opf_tensor *t = &c->in[i];
  int64_t n = opf_numel(t);
  if (opf_dtype_is_float(t->dtype)) {
    opf_fill_uniform(t, c->seed, (uint64_t)i, -1.5, 1.5); /* then shift away from zero */
    for (int64_t k = 0; k < n; k++) {
      if (t->dtype == OPF_F32) {
        float *v = (float *)t->data + k;
        *v += *v < 0 ? -0.5f : 0.5f;
      } else {
        double *v = (double *)t->data + k;
        *v += *v < 0 ? -0.5 : 0.5;
      }
    }
  } else {
    opf_fill_uniform(t, c->seed, (uint64_t)i, -9, 9); /* -9..8, then 0..8 -> 1..9 */
    for (int64_t k = 0; k < n; k++) {
      if (t->dtype == OPF_I32) ((int32_t *)t->data)[k] += ((int32_t *)t->data)[k] >= 0;
      else ((int64_t *)t->data)[k] += ((int64_t *)t->data)[k] >= 0;
    }
  }
  return OPF_OK;
}

/* Per-operator entry points. */
#define BIN_ENTRIES(NAME, OP)                                                                 \
  static int NAME##_forward(opf_case *c) { return bin_forward(c, OP); }                       \
  static int NAME##_backward(opf_case *c) { return bin_backward(c, OP); }                     \
  static int NAME##_reference(opf_case *c) { return bin_reference(c, OP); }                   \
  static double NAME##_flops(const opf_case *c, opf_pass p) { return bin_flops(c, p, OP); }   \
  static double NAME##_bytes(const opf_case *c, opf_pass p) { return bin_bytes(c, p, OP); }
BIN_ENTRIES(add, BIN_ADD)
BIN_ENTRIES(sub, BIN_SUB)
BIN_ENTRIES(mul, BIN_MUL)
BIN_ENTRIES(div, BIN_DIV)

/* OPERATORS.md's binary inputs: same shape, row and column broadcast, both broadcasting,
 * tensor-scalar. small also reaches every split of the gradient reductions: 100x3+1x3 and
 * 3x70+() use partial sums over a reduced dim, 2x70+2x1 partials along the inner row. */
#define BIN_SHAPES                                                                            \
  {{"standard", "a=1024x1024 b=1024x1024"},                                                   \
   {"skewed", "a=1024x1024 b=1x1024"},                                                        \
   {"skewed", "a=1024x1024 b=1024x1"},                                                        \
   {"skewed", "a=10000x1 b=1x100"},                                                           \
   {"skewed", "a=10000x10 b=10000x10"},                                                       \
   {"skewed", "a=1024x1024 b=()"},                                                            \
   {"small", "a=16x16 b=16x16"},                                                              \
   {"small", "a=16x16 b=1x16"},                                                               \
   {"small", "a=16x16 b=16x1"},                                                               \
   {"small", "a=16x1 b=1x16"},                                                                \
   {"small", "a=1x64 b=64"},                                                                  \
   {"small", "a=37x3 b=()"},                                                                  \
   {"small", "a=() b=5x3"},                                                                   \
   {"small", "a=() b=()"},                                                                    \
   {"small", "a=2x1x3 b=2x4x3"},                                                              \
   {"small", "a=3x1x5 b=4x1"},                                                                \
   {"small", "a=100x3 b=1x3"},                                                                \
   {"small", "a=3x70 b=()"},                                                                  \
   {"small", "a=2x70 b=2x1"},                                                                 \
   {"test", "a=301x517 b=301x517"},                                                           \
   {"test", "a=301x517 b=1x517"},                                                             \
   {"test", "a=600x1 b=3x1x333"},                                                            \
   {"large", "a=8192x8192 b=8192x8192"}}

#define BIN_COMMON                                                                            \
  .abi = OPF_OP_ABI, .category = "binary", .n_in = 2, .n_out = 1, .out = {"y"},               \
  .shapes = BIN_SHAPES, .infer = bin_infer
#define BIN_HOOKS(NAME)                                                                       \
  .forward = NAME##_forward, .backward = NAME##_backward, .reference = NAME##_reference,      \
  .flops = NAME##_flops, .bytes = NAME##_bytes

#define BIN_INPUT(NAME, LO, HI)                                                               \
  {.name = NAME, .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = LO, .hi = HI,              \
   .help = "any shape broadcastable with the other input"}

OPPERF_OP(add) = {
    BIN_COMMON,
    BIN_HOOKS(add),
    .name = "add",
    .summary = "elementwise a + b with broadcasting",
    .dtypes = OPF_DT_ALL,
    .in = {BIN_INPUT("a", -10, 10), BIN_INPUT("b", -10, 10)},
};

OPPERF_OP(sub) = {
    BIN_COMMON,
    BIN_HOOKS(sub),
    .name = "sub",
    .summary = "elementwise a - b with broadcasting",
    .dtypes = OPF_DT_ALL,
    .in = {BIN_INPUT("a", -10, 10), BIN_INPUT("b", -10, 10)},
};

OPPERF_OP(mul) = {
    BIN_COMMON,
    BIN_HOOKS(mul),
    .name = "mul",
    .summary = "elementwise a * b with broadcasting",
    .dtypes = OPF_DT_ALL,
    .in = {BIN_INPUT("a", -10, 10), BIN_INPUT("b", -10, 10)},
};

OPPERF_OP(div) = {
    BIN_COMMON,
    BIN_HOOKS(div),
    .name = "div",
    .summary = "elementwise a / b with broadcasting (integers truncate toward zero)",
    .dtypes = OPF_DT_ALL,
    .in = {BIN_INPUT("a", -100, 100),
           {.name = "b", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .fill = div_fill_b,
            .help = "divisor, generated away from zero: |b| in [0.5, 2), integers 1..9"}},
};
