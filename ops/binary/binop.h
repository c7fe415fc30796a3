/* binop.h: the shared machinery of the binary, in-place and logic operator families on top of
 * bcast.h: row and block kernels generated from element functions (plain, or guarded with an
 * exact scalar fallback; out of place, in place, or with bool output), gradient kernels reduced
 * over the broadcast dims, and the drivers (infer, forward, backward, reference, models). An
 * operator file states its element formulas, instantiates the kernels and fills a bo_impl. */
#ifndef OPPERF_BINOP_H
#define OPPERF_BINOP_H

#include <math.h>
#include <stdint.h>

#include "binary/bcast.h"

#define BO_KI static inline __attribute__((always_inline))
/* Element k of a row operand whose stride s is 0 (broadcast: a hoisted scalar) or 1. s is a
 * compile-time constant after inlining, so each stride pattern is its own vectorised loop. */
#define BO_AT(p, s, k) ((p)[(s) ? (k) : 0])

/* ---- forward rows ----
 * EL(a, b) is the vectorisable element function. Guarded operators also give GUARD(a, b),
 * nonzero where EL is not exact (huge quotients, zero divisors, values beyond 2^53), and
 * SLOW(a, b), the exact scalar form. EL must be defined (if wrong) for every input. Per block
 * of BO_BLOCK elements one pass computes EL and ORs the guard, and a block with a flagged
 * element is redone with SLOW: a separate guard pass would read memory while the compute
 * pass stalls on division, serialising the two (int32 div measured at 55% of bandwidth that
 * way). In place (IP), the block goes to a buffer in L1 first, as SLOW needs the old x. */
#define BO_BLOCK 1024
#define BO_NO_GUARD(a, b) 0
#define BO_ROW_BODY(Y, A, SA, EL, GUARD, SLOW, GUARDED, IP, T)                                \
  if (!(GUARDED)) {                                                                           \
    for (int64_t k = 0; k < n; k++) Y[k] = EL(BO_AT(A, SA, k), BO_AT(b, sb, k));              \
    return;                                                                                   \
  }                                                                                           \
  T t_[(IP) ? BO_BLOCK : 1];                                                                  \
  for (int64_t k0 = 0; k0 < n; k0 += BO_BLOCK) {                                              \
    const int64_t k1 = n - k0 < BO_BLOCK ? n : k0 + BO_BLOCK;                                 \
    int bad = 0;                                                                              \
    for (int64_t k = k0; k < k1; k++) {                                                       \
      const T v_ = EL(BO_AT(A, SA, k), BO_AT(b, sb, k));                                      \
      if (IP) t_[k - k0] = v_;                                                                \
      else Y[k] = v_;                                                                         \
      bad |= GUARD(BO_AT(A, SA, k), BO_AT(b, sb, k));                                         \
    }                                                                                         \
    if (bad)                                                                                  \
      for (int64_t k = k0; k < k1; k++) Y[k] = SLOW(BO_AT(A, SA, k), BO_AT(b, sb, k));        \
    else if (IP)                                                                              \
      for (int64_t k = k0; k < k1; k++) Y[k] = t_[k - k0];                                    \
  }

/* NAME(y, a, b, n, sa, sb): y = op(a, b); NAME_ip(x, b, n, sb): x = op(x, b). */
#define BO_ROW(NAME, TY, TA, EL, GUARD, SLOW, GUARDED)                                        \
  BO_KI void NAME(TY *restrict y, const TA *restrict a, const TA *restrict b, int64_t n,      \
                  const int sa, const int sb) {                                               \
    BO_ROW_BODY(y, a, sa, EL, GUARD, SLOW, GUARDED, 0, TY)                                    \
  }                                                                                           \
  BO_KI void NAME##_ip(TA *restrict x, const TA *restrict b, int64_t n, const int sb) {       \
    BO_ROW_BODY(x, x, 1, EL, GUARD, SLOW, GUARDED, 1, TA)                                     \
  }
#define BO_MAP_ROW(NAME, TY, TA, EL) BO_ROW(NAME, TY, TA, EL, BO_NO_GUARD, EL, 0)

/* ---- block kernels (bc_kernel): one dispatch on the operands' stride pattern per block ---- */
#define BO_FWD_ROWS(TY, TA, ROW, SA, SB)                                                      \
  for (int64_t r = 0; r < rows; r++)                                                          \
  ROW((TY *)p[0] + r * os[0], (const TA *)p[1] + r * os[1], (const TA *)p[2] + r * os[2], n,  \
      SA, SB)
#define BO_FWD_KERNEL(NAME, TY, TA, ROW)                                                      \
  OPF_VEC static void NAME(void *const *p, const int64_t *s, const int64_t *os, int64_t rows, \
                           int64_t n, int first) {                                            \
    (void)first;                                                                              \
    if (s[1] && s[2]) BO_FWD_ROWS(TY, TA, ROW, 1, 1);                                         \
    else if (s[1]) BO_FWD_ROWS(TY, TA, ROW, 1, 0);                                            \
    else if (s[2]) BO_FWD_ROWS(TY, TA, ROW, 0, 1);                                            \
    else BO_FWD_ROWS(TY, TA, ROW, 0, 0);                                                      \
  }
/* In place: operand 0 is x (full shape, unit stride), operand 1 is b. */
#define BO_IP_KERNEL(NAME, T, ROW)                                                            \
  OPF_VEC static void NAME(void *const *p, const int64_t *s, const int64_t *os, int64_t rows, \
                           int64_t n, int first) {                                            \
    (void)first;                                                                              \
    if (s[1])                                                                                 \
      for (int64_t r = 0; r < rows; r++)                                                      \
        ROW##_ip((T *)p[0] + r * os[0], (const T *)p[1] + r * os[1], n, 1);                   \
    else                                                                                      \
      for (int64_t r = 0; r < rows; r++)                                                      \
        ROW##_ip((T *)p[0] + r * os[0], (const T *)p[1] + r * os[1], n, 0);                   \
  }
/* Row and block kernel NAME of an element function, out of place (BO_MAP, BO_GUARDED) or in
 * place (BO_IP, BO_GUARDED_IP): each operator file instantiates only the kernels it uses. */
#define BO_MAP(NAME, TY, TA, EL)                                                              \
  BO_MAP_ROW(NAME##_row, TY, TA, EL)                                                          \
  BO_FWD_KERNEL(NAME, TY, TA, NAME##_row)
#define BO_GUARDED(NAME, T, EL, GUARD, SLOW)                                                  \
  BO_ROW(NAME##_row, T, T, EL, GUARD, SLOW, 1)                                                \
  BO_FWD_KERNEL(NAME, T, T, NAME##_row)
#define BO_IP(NAME, T, EL)                                                                    \
  BO_MAP_ROW(NAME##_row, T, T, EL)                                                            \
  BO_IP_KERNEL(NAME, T, NAME##_row)
#define BO_GUARDED_IP(NAME, T, EL, GUARD, SLOW)                                               \
  BO_ROW(NAME##_row, T, T, EL, GUARD, SLOW, 1)                                                \
  BO_IP_KERNEL(NAME, T, NAME##_row)
/* A type-generic element function (a macro) for every numeric dtype: kernels NAME_f32,
 * NAME_f64, NAME_i32, NAME_i64, listed in dtype order by BO_BY_DTYPE(NAME). */
#define BO_MAP_NUMERIC(NAME, TY_F32, TY_F64, TY_I32, TY_I64, EL)                              \
  BO_MAP(NAME##_f32, TY_F32, float, EL)                                                       \
  BO_MAP(NAME##_f64, TY_F64, double, EL)                                                      \
  BO_MAP(NAME##_i32, TY_I32, int32_t, EL)                                                     \
  BO_MAP(NAME##_i64, TY_I64, int64_t, EL)
#define BO_MAP_ALL(NAME, EL) BO_MAP_NUMERIC(NAME, float, double, int32_t, int64_t, EL)
#define BO_IP_ALL(NAME, EL)                                                                   \
  BO_IP(NAME##_f32, float, EL)                                                                \
  BO_IP(NAME##_f64, double, EL)                                                               \
  BO_IP(NAME##_i32, int32_t, EL)                                                              \
  BO_IP(NAME##_i64, int64_t, EL)
#define BO_BY_DTYPE(NAME) {NAME##_f32, NAME##_f64, NAME##_i32, NAME##_i64}

/* ---- the arithmetic element functions (shared by the out-of-place and in-place forms) ---- */
#define BO_ADD(a, b) ((a) + (b))
#define BO_SUB(a, b) ((a) - (b))
#define BO_MUL(a, b) ((a) * (b))
#define BO_DIV(a, b) ((a) / (b))
/* References: float64 arithmetic rounded once to float32 equals float32 arithmetic for + - *
 * /; int64 wraps like the kernels (unsigned arithmetic, no signed overflow), and divides as C
 * does (truncating; by zero 0). */
static inline double bo_ref_add(double a, double b) { return a + b; }
static inline double bo_ref_sub(double a, double b) { return a - b; }
static inline double bo_ref_mul(double a, double b) { return a * b; }
static inline double bo_ref_div(double a, double b) { return a / b; }
static inline int64_t bo_ref_add_i(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a + (uint64_t)b);
}
static inline int64_t bo_ref_sub_i(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a - (uint64_t)b);
}
static inline int64_t bo_ref_mul_i(int64_t a, int64_t b) {
  return (int64_t)((uint64_t)a * (uint64_t)b);
}

/* ---- integer division through float64 ----
 * Exact for |a|, |b| < 2^53: the rounding error of a/b, at most |a/b| 2^-53 < 1/|b|, is
 * smaller than the distance (at least 1/|b|) from a non-integer quotient to the next integer,
 * so truncation gives C's quotient; it vectorises (there is no SIMD integer divide). The guards
 * send zero divisors, INT_MIN / -1 and int64 operands beyond 2^53 to C's operators; for those
 * the fast form still runs (its result is then replaced), so it divides by 1 instead of 0 or
 * -1 and drops |a| >= 2^53 to 0, keeping the conversion defined. All in arithmetic: a ?:
 * with constant arms would become a branch and stop the vectoriser. */
#define BO_I64_EXACT (1ull << 53)
BO_KI int bo_i64_inexact(int64_t v) { /* v + 2^53 >= 2^54 exactly when |v| >= 2^53 */
  return (uint64_t)v + BO_I64_EXACT >= 2 * BO_I64_EXACT;
}
BO_KI int32_t bo_div_i32(int32_t a, int32_t b) {
  const int32_t bs = b + (b == 0) + 2 * ((a == INT32_MIN) & (b == -1));
  return (int32_t)((double)a / (double)bs);
}
BO_KI int64_t bo_div_i64(int64_t a, int64_t b) {
  const int64_t as = a & -(int64_t)!bo_i64_inexact(a), bs = b + (b == 0);
  return (int64_t)((double)as / (double)bs);
}
BO_KI int bo_div_guard_i32(int32_t a, int32_t b) {
  return (b == 0) | ((a == INT32_MIN) & (b == -1));
}
BO_KI int bo_div_guard_i64(int64_t a, int64_t b) {
  return bo_i64_inexact(a) | bo_i64_inexact(b) | (b == 0);
}
/* C's quotient; by zero gives 0 (as NumPy does) and MIN / -1 wraps to MIN. */
BO_KI int32_t bo_div_slow_i32(int32_t a, int32_t b) {
  return b == 0 ? 0 : b == -1 ? (int32_t)(0u - (uint32_t)a) : a / b;
}
BO_KI int64_t bo_div_slow_i64(int64_t a, int64_t b) {
  return b == 0 ? 0 : b == -1 ? (int64_t)(0ull - (uint64_t)a) : a / b;
}
static inline int64_t bo_ref_div_i(int64_t a, int64_t b) { return bo_div_slow_i64(a, b); }

/* ---- gradient kernels: dX = sum over X's broadcast dims of TERM(g, a, b, y) ----
 * y is the forward output (backward runs after forward): pow's and hypot's terms read it
 * instead of recomputing the power or the square root; the others ignore it. A fused kernel
 * also writes the other input's gradient, when that input has the output's shape, in the
 * same pass (EXTRA: a statement for element i_), so that g, a, b and y are read once. */
#define BO_TERM_G(g, a, b, y) (g) /* the gradient passes through (add; mod's da) */
#define BO_TERM_AT(TERM, i) TERM(g[i], BO_AT(a, sa, i), BO_AT(b, sb, i), y[i])
#define BO_NO_EXTRA (void)0
/* Sum of TERM over a row in L independent lanes folded as a tree: the reduction vectorises
 * without reassociation flags and does not end in a serial chain of L adds. */
#define BO_ROW_SUM(TERM, L, OUT, EXTRA)                                                       \
  do {                                                                                        \
    __typeof__(OUT) acc_[L] = {0};                                                            \
    int64_t k = 0;                                                                            \
    for (; k + (L) <= n; k += (L))                                                            \
      for (int j = 0; j < (L); j++) {                                                         \
        const int64_t i_ = k + j;                                                             \
        acc_[j] += BO_TERM_AT(TERM, i_);                                                      \
        EXTRA;                                                                                \
      }                                                                                       \
    for (; k < n; k++) {                                                                      \
      const int64_t i_ = k;                                                                   \
      OUT += BO_TERM_AT(TERM, i_);                                                            \
      EXTRA;                                                                                  \
    }                                                                                         \
    for (int w = (L) / 2; w > 0; w /= 2)                                                      \
      for (int j = 0; j < w; j++) acc_[j] += acc_[j + w];                                     \
    OUT += acc_[0];                                                                           \
  } while (0)

/* Gradient row: dx (stride sx = 1: one gradient per element; 0: the row sums into dx[0]).
 * Long rows sum in two vectors' worth of lanes (latency-bound adds need two chains); short
 * rows (10x, 100x) in half a vector, where the fold and the scalar tail dominate (row sums
 * measured 3.8x faster at 100000 rows of 10, 2x at 10000 rows of 100, 15% slower at 1024).
 * STAGED (costly terms: atan2, pow's db): the terms of BO_STAGE elements go to a buffer in L1
 * that is then summed, so the term is not inlined into every lane of the unrolled sum (pow's
 * kernels were 10x larger and took minutes to compile) and the compute stays one loop. */
#define BO_SUM_LANES_LONG(T) (128 / (int)sizeof(T))
#define BO_STAGE 512
#define BO_LANE_SUM_DEF(T, SUF)                                                               \
  BO_KI T bo_lane_sum_##SUF(const T *restrict g, int64_t n) {                                 \
    const T *a = g, *b = g, *y = g; /* BO_TERM_G reads none of them */                        \
    const int sa = 0, sb = 0;                                                                 \
    T sum = 0;                                                                                \
    (void)a, (void)b, (void)y, (void)sa, (void)sb;                                            \
    if (n >= 8 * BO_SUM_LANES_LONG(T))                                                        \
      BO_ROW_SUM(BO_TERM_G, BO_SUM_LANES_LONG(T), sum, BO_NO_EXTRA);                          \
    else                                                                                      \
      BO_ROW_SUM(BO_TERM_G, BO_SUM_LANES_LONG(T) / 4, sum, BO_NO_EXTRA);                      \
    return sum;                                                                               \
  }
BO_LANE_SUM_DEF(float, f32)
BO_LANE_SUM_DEF(double, f64)
#define BO_LANE_SUM(x, n) _Generic((x), float *: bo_lane_sum_f32, double *: bo_lane_sum_f64)(x, n)

/* df: the fused full-shape gradient (unused, NULL, unless EXTRA writes it). */
#define BO_GRAD_ROW(NAME, T, TERM, STAGED, EXTRA)                                             \
  BO_KI void NAME(T *restrict dx, T *restrict df, const T *restrict g, const T *restrict a,   \
                  const T *restrict b, const T *restrict y, int64_t n, const int sx,          \
                  const int sa, const int sb, int first) {                                    \
    (void)df, (void)a, (void)b, (void)y, (void)sa, (void)sb; /* add's terms read none */      \
    if (sx) {                                                                                 \
      if (first)                                                                              \
        for (int64_t i_ = 0; i_ < n; i_++) {                                                  \
          dx[i_] = BO_TERM_AT(TERM, i_);                                                      \
          EXTRA;                                                                              \
        }                                                                                     \
      else                                                                                    \
        for (int64_t i_ = 0; i_ < n; i_++) {                                                  \
          dx[i_] += BO_TERM_AT(TERM, i_);                                                     \
          EXTRA;                                                                              \
        }                                                                                     \
      return;                                                                                 \
    }                                                                                         \
    T sum = 0;                                                                                \
    if (STAGED) {                                                                             \
      T t[BO_STAGE];                                                                          \
      for (int64_t k0 = 0; k0 < n; k0 += BO_STAGE) {                                          \
        const int64_t m = n - k0 < BO_STAGE ? n - k0 : BO_STAGE;                              \
        for (int64_t i_ = k0; i_ < k0 + m; i_++) {                                            \
          t[i_ - k0] = BO_TERM_AT(TERM, i_);                                                  \
          EXTRA;                                                                              \
        }                                                                                     \
        sum += BO_LANE_SUM(t, m);                                                             \
      }                                                                                       \
    } else if (n >= 8 * BO_SUM_LANES_LONG(T)) {                                               \
      BO_ROW_SUM(TERM, BO_SUM_LANES_LONG(T), sum, EXTRA);                                     \
    } else {                                                                                  \
      BO_ROW_SUM(TERM, BO_SUM_LANES_LONG(T) / 4, sum, EXTRA);                                 \
    }                                                                                         \
    dx[0] = first ? sum : dx[0] + sum;                                                        \
  }

/* Four rows summed into one destination row (row-broadcast gradients): a quarter of the
 * loads and stores of dx, and a quarter of the store-to-load chains through it. */
#define BO_ROW4_TERMS(TERM)                                                                   \
  ((TERM(g[k], BO_AT(a, sa, k), BO_AT(b, sb, k), y[k]) +                                      \
    TERM(g1[k], BO_AT(a1, sa, k), BO_AT(b1, sb, k), y1[k])) +                                 \
   (TERM(g2[k], BO_AT(a2, sa, k), BO_AT(b2, sb, k), y2[k]) +                                  \
    TERM(g3[k], BO_AT(a3, sa, k), BO_AT(b3, sb, k), y3[k])))
#define BO_GRAD_ROW4(NAME, T, TERM)                                                           \
  BO_KI void NAME(T *restrict dx, const T *restrict g, const T *restrict a,                   \
                  const T *restrict b, const T *restrict y, const int64_t *os, int64_t n,     \
                  const int sa, const int sb, int first) {                                    \
    const T *restrict g1 = g + os[1], *restrict g2 = g1 + os[1], *restrict g3 = g2 + os[1];   \
    const T *restrict a1 = a + os[2], *restrict a2 = a1 + os[2], *restrict a3 = a2 + os[2];   \
    const T *restrict b1 = b + os[3], *restrict b2 = b1 + os[3], *restrict b3 = b2 + os[3];   \
    const T *restrict y1 = y + os[4], *restrict y2 = y1 + os[4], *restrict y3 = y2 + os[4];   \
    (void)a3, (void)b3, (void)y3, (void)sa, (void)sb;                                         \
    if (first)                                                                                \
      for (int64_t k = 0; k < n; k++) dx[k] = BO_ROW4_TERMS(TERM);                            \
    else                                                                                      \
      for (int64_t k = 0; k < n; k++) dx[k] += BO_ROW4_TERMS(TERM);                           \
  }

/* Rows after the first accumulate when the destination does not move with the row (os[0] is
 * 0); such rows go four at a time when each row has its own gradients (SX; not for STAGED
 * terms, whose cost is the arithmetic, not the traffic through dx, nor FUSED ones, whose
 * fused stores dominate it). */
#define BO_GRAD_ROWS(NAME, T, SX, SA, SB, STAGED, FUSED)                                      \
  do {                                                                                        \
    int64_t r = 0;                                                                            \
    if (SX && !os[0] && !(STAGED) && !(FUSED))                                                \
      for (; r + 4 <= rows; r += 4)                                                           \
        NAME##_row4((T *)p[0], (const T *)p[1] + r * os[1], (const T *)p[2] + r * os[2],      \
                    (const T *)p[3] + r * os[3], (const T *)p[4] + r * os[4], os, n, SA, SB,  \
                    first && r == 0);                                                         \
    for (; r < rows; r++)                                                                     \
      NAME##_row((T *)p[0] + r * os[0], (FUSED) ? (T *)p[5] + r * os[5] : (T *)0,             \
                 (const T *)p[1] + r * os[1], (const T *)p[2] + r * os[2],                    \
                 (const T *)p[3] + r * os[3], (const T *)p[4] + r * os[4], n, SX, SA, SB,     \
                 first && (r == 0 || os[0]));                                                 \
  } while (0)
/* Operands: 0 the gradient dX (shaped like X), 1 g, 2 a, 3 b, 4 y (shaped like g), and for
 * FUSED kernels 5 the other input's gradient (shaped like g). */
#define BO_GRAD_KERNEL(NAME, T, TERM, STAGED, FUSED, EXTRA)                                   \
  BO_GRAD_ROW(NAME##_row, T, TERM, STAGED, EXTRA)                                             \
  BO_GRAD_ROW4(NAME##_row4, T, TERM)                                                          \
  OPF_VEC static void NAME(void *const *p, const int64_t *s, const int64_t *os, int64_t rows, \
                           int64_t n, int first) {                                            \
    switch ((s[0] ? 4 : 0) | (s[2] ? 2 : 0) | (s[3] ? 1 : 0)) {                               \
    case 0: BO_GRAD_ROWS(NAME, T, 0, 0, 0, STAGED, FUSED); break;                             \
    case 1: BO_GRAD_ROWS(NAME, T, 0, 0, 1, STAGED, FUSED); break;                             \
    case 2: BO_GRAD_ROWS(NAME, T, 0, 1, 0, STAGED, FUSED); break;                             \
    case 3: BO_GRAD_ROWS(NAME, T, 0, 1, 1, STAGED, FUSED); break;                             \
    case 4: BO_GRAD_ROWS(NAME, T, 1, 0, 0, STAGED, FUSED); break;                             \
    case 5: BO_GRAD_ROWS(NAME, T, 1, 0, 1, STAGED, FUSED); break;                             \
    case 6: BO_GRAD_ROWS(NAME, T, 1, 1, 0, STAGED, FUSED); break;                             \
    default: BO_GRAD_ROWS(NAME, T, 1, 1, 1, STAGED, FUSED); break;                            \
    }                                                                                         \
  }

/* Same-shape operands: both gradients in one pass over g, a, b (and y) (terms sharing work
 * compute it once after inlining). */
typedef void (*bo_both_fn)(const void *g, const void *a, const void *b, const void *y,
                           void *da, void *db, int64_t n);
#define BO_BOTH_KERNEL(NAME, T, TA, TB)                                                       \
  OPF_VEC static void NAME(const void *gv, const void *av, const void *bv, const void *yv,    \
                           void *dav, void *dbv, int64_t n) {                                 \
    const T *restrict g = gv, *restrict a = av, *restrict b = bv, *restrict y = yv;           \
    T *restrict da = dav, *restrict db = dbv;                                                 \
    (void)a, (void)b, (void)y;                                                                \
    for (int64_t k = 0; k < n; k++) {                                                         \
      da[k] = TA(g[k], a[k], b[k], y[k]);                                                     \
      db[k] = TB(g[k], a[k], b[k], y[k]);                                                     \
    }                                                                                         \
  }
/* Every gradient kernel of an operator from its terms per dtype (TA*: d/da, TB*: d/db):
 * NAME_da_f32 ... NAME_both_f64, and the fused NAME_fa (a full-shape: da written, db
 * reduced) and NAME_fb, gathered by BO_GRADS(NAME) into a bo_impl. STAGED_*: for costly
 * terms (see BO_GRAD_ROW). */
#define BO_GRAD_KERNELS_T(NAME, T, SUF, TA, TB, STAGED_A, STAGED_B)                           \
  BO_GRAD_KERNEL(NAME##_da_##SUF, T, TA, STAGED_A, 0, BO_NO_EXTRA)                            \
  BO_GRAD_KERNEL(NAME##_db_##SUF, T, TB, STAGED_B, 0, BO_NO_EXTRA)                            \
  BO_GRAD_KERNEL(NAME##_fa_##SUF, T, TB, STAGED_B, 1, df[i_] = BO_TERM_AT(TA, i_))            \
  BO_GRAD_KERNEL(NAME##_fb_##SUF, T, TA, STAGED_A, 1, df[i_] = BO_TERM_AT(TB, i_))            \
  BO_BOTH_KERNEL(NAME##_both_##SUF, T, TA, TB)
#define BO_GRAD_KERNELS_(NAME, TAF, TBF, TAD, TBD, STAGED_A, STAGED_B)                        \
  BO_GRAD_KERNELS_T(NAME, float, f32, TAF, TBF, STAGED_A, STAGED_B)                           \
  BO_GRAD_KERNELS_T(NAME, double, f64, TAD, TBD, STAGED_A, STAGED_B)
#define BO_GRAD_KERNELS(NAME, TAF, TBF, TAD, TBD)                                             \
  BO_GRAD_KERNELS_(NAME, TAF, TBF, TAD, TBD, 0, 0)
#define BO_GRAD_KERNELS_STAGED(NAME, TAF, TBF, TAD, TBD)                                      \
  BO_GRAD_KERNELS_(NAME, TAF, TBF, TAD, TBD, 1, 1)
#define BO_GRADS(NAME)                                                                        \
  .grad = {{NAME##_da_f32, NAME##_da_f64}, {NAME##_db_f32, NAME##_db_f64}},                   \
  .fused = {{NAME##_fa_f32, NAME##_fa_f64}, {NAME##_fb_f32, NAME##_fb_f64}},                  \
  .both = {NAME##_both_f32, NAME##_both_f64}

/* ---- the operator's implementation, as the drivers see it ---- */
typedef struct bo_impl {
  bc_kernel fwd[OPF_NDTYPES];        /* forward (in-place operators: the in-place kernels) */
  bc_kernel grad[2][2];              /* [input][0 float32, 1 float64] */
  bc_kernel fused[2][2];             /* [full-shape input][dtype]: both gradients, one pass */
  bo_both_fn both[2];                /* same-shape fused gradients (NULL: per input) */
  double (*ref_f)(double a, double b);   /* reference for float inputs (float32 rounds it) */
  int64_t (*ref_i)(int64_t a, int64_t b); /* reference for integer and bool inputs */
  /* models, per output element: forward operations, and each gradient term's operations
   * (the sum over broadcast dims is added by the model); grad_reads_ab: the terms read a, b */
  double fwd_ops;
  double grad_ops[2];
  int grad_reads_ab, grad_reads_y;
} bo_impl;

/* Plan of an input's gradient: destination dst (shaped like the input), then g, a, b, y. */
static inline void bo_grad_plan(const opf_case *c, const opf_tensor *dst, bc_plan *p) {
  const opf_tensor *t[5] = {dst, &c->out[0], &c->in[0], &c->in[1], &c->out[0]};
  bc_plan_init(p, c->out[0].ndim, c->out[0].shape, 5, t);
}

/* Broadcast a and b into an output of dtype out_dt; float outputs also size the workspace of
 * the larger gradient reduction (the two run one after another). */
static inline int bo_infer_dt(opf_case *c, opf_dtype out_dt) {
  if (c->in[0].ndim < 0 || c->in[1].ndim < 0) return OPF_OK; /* the driver names the input */
  int nd = 0;
  int64_t shape[OPF_MAX_DIMS];
  int rc = opf_broadcast_shape(c, &c->in[0], &c->in[1], &nd, shape);
  if (rc) return rc;
  opf_set_out(c, 0, out_dt, nd, shape);
  if (opf_dtype_is_float(out_dt))
    for (int i = 0; i < 2; i++) {
      bc_plan p;
      bo_grad_plan(c, &c->in[i], &p);
      size_t ws = bc_ws_bytes(&p);
      if (ws > c->ws_bytes) c->ws_bytes = ws;
    }
  return OPF_OK;
}
static inline int bo_infer(opf_case *c) { return bo_infer_dt(c, c->dtype); }
static inline int bo_infer_bool(opf_case *c) { return bo_infer_dt(c, OPF_BOOL); }

/* In place, a op= b: b must broadcast to a's shape without enlarging it. */
static inline int bo_infer_inplace(opf_case *c) {
  if (c->in[0].ndim < 0 || c->in[1].ndim < 0) return OPF_OK;
  int nd = 0;
  int64_t shape[OPF_MAX_DIMS];
  int rc = opf_broadcast_shape(c, &c->in[0], &c->in[1], &nd, shape);
  if (rc) return rc;
  int same = nd == c->in[0].ndim;
  for (int k = 0; same && k < nd; k++) same = shape[k] == c->in[0].shape[k];
  if (!same) {
    char sa[96], sb[96];
    return opf_case_error(c, OPF_EINVAL,
                          "in-place update of 'a' %s: 'b' %s must broadcast to a's shape, not "
                          "enlarge it", opf_shape_str(&c->in[0], sa, sizeof sa),
                          opf_shape_str(&c->in[1], sb, sizeof sb));
  }
  opf_set_out(c, 0, c->dtype, c->in[0].ndim, c->in[0].shape);
  return OPF_OK;
}

static inline int bo_forward(opf_case *c, const bo_impl *im) {
  const opf_tensor *t[3] = {&c->out[0], &c->in[0], &c->in[1]};
  bc_plan p;
  bc_plan_init(&p, c->out[0].ndim, c->out[0].shape, 3, t);
  void *base[3] = {c->out[0].data, c->in[0].data, c->in[1].data};
  bc_run(&p, im->fwd[c->dtype], base, NULL);
  return OPF_OK;
}

/* Output 0 shares input 0's storage: a two-operand plan, x then b. */
static inline int bo_forward_inplace(opf_case *c, const bo_impl *im) {
  const opf_tensor *t[2] = {&c->out[0], &c->in[1]};
  bc_plan p;
  bc_plan_init(&p, c->out[0].ndim, c->out[0].shape, 2, t);
  void *base[2] = {c->out[0].data, c->in[1].data};
  bc_run(&p, im->fwd[c->dtype], base, NULL);
  return OPF_OK;
}

typedef struct {
  const opf_case *c;
  bo_both_fn fn;
} bo_both_ctx;

static inline void bo_both_range(int64_t lo, int64_t hi, void *ctx) {
  const bo_both_ctx *x = ctx;
  const opf_case *c = x->c;
  const size_t es = opf_dtype_size(c->dtype), off = (size_t)lo * es;
  x->fn((const char *)c->gout[0].data + off, (const char *)c->in[0].data + off,
        (const char *)c->in[1].data + off, (const char *)c->out[0].data + off,
        (char *)c->gin[0].data + off, (char *)c->gin[1].data + off, hi - lo);
}

static inline int bo_backward(opf_case *c, const bo_impl *im) {
  const int f64 = c->dtype == OPF_F64;
  const int64_t n = opf_numel(&c->out[0]);
  /* Gradients to write: present, and not handed back as a view of g (add's, sub's da). */
  const int w0 = c->gin[0].data && !opf_grad_is_view(c, 0);
  const int w1 = c->gin[1].data && !opf_grad_is_view(c, 1);
  if (im->both[f64] && w0 && w1 && opf_numel(&c->in[0]) == n &&
      opf_numel(&c->in[1]) == n) { /* same shape: no reduction, one fused pass */
    bo_both_ctx x = {c, im->both[f64]};
    opf_parallel_range(n, OPF_PAR_MIN, bo_both_range, &x);
    return OPF_OK;
  }
  for (int f = 0; f < 2; f++) /* one input full-shape, the other reduced: one fused pass */
    if (im->fused[f][f64] && w0 && w1 &&
        opf_numel(&c->in[f]) == n && opf_numel(&c->in[1 - f]) < n) {
      const opf_tensor *t[6] = {&c->gin[1 - f], &c->out[0], &c->in[0],
                                &c->in[1],      &c->out[0], &c->gin[f]};
      bc_plan p;
      bc_plan_init(&p, c->out[0].ndim, c->out[0].shape, 6, t);
      void *base[6] = {c->gin[1 - f].data, c->gout[0].data, c->in[0].data,
                       c->in[1].data,      c->out[0].data,  c->gin[f].data};
      bc_run(&p, im->fused[f][f64], base, c->ws);
      return OPF_OK;
    }
  for (int i = 0; i < 2; i++) {
    if (!(i ? w1 : w0)) continue;
    bc_plan p;
    bo_grad_plan(c, &c->gin[i], &p);
    void *base[5] = {c->gin[i].data, c->gout[0].data, c->in[0].data, c->in[1].data,
                     c->out[0].data};
    bc_run(&p, im->grad[i][f64], base, c->ws);
  }
  return OPF_OK;
}

/* ---- reference: unravel every output index, map it into a and b by their own shapes ---- */
static inline int64_t bo_ref_offset(const opf_tensor *t, const opf_tensor *y, int64_t i) {
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

static inline double bo_getf(const opf_tensor *t, int64_t i) {
  return t->dtype == OPF_F32 ? ((const float *)t->data)[i] : ((const double *)t->data)[i];
}
static inline int64_t bo_geti(const opf_tensor *t, int64_t i) {
  switch (t->dtype) {
  case OPF_I32: return ((const int32_t *)t->data)[i];
  case OPF_I64: return ((const int64_t *)t->data)[i];
  default: return ((const uint8_t *)t->data)[i]; /* bool */
  }
}
static inline void bo_setf(opf_tensor *t, int64_t i, double v) {
  switch (t->dtype) {
  case OPF_F32: ((float *)t->data)[i] = (float)v; break;
  case OPF_F64: ((double *)t->data)[i] = v; break;
  default: ((uint8_t *)t->data)[i] = v != 0; break;
  }
}
static inline void bo_seti(opf_tensor *t, int64_t i, int64_t v) {
  switch (t->dtype) {
  case OPF_I32: ((int32_t *)t->data)[i] = (int32_t)v; break; /* integer results wrap */
  case OPF_I64: ((int64_t *)t->data)[i] = v; break;
  default: ((uint8_t *)t->data)[i] = v != 0; break;
  }
}

/* Float inputs: the float64 formula, rounded once to float32; integer and bool inputs: the
 * int64 formula, truncated to int32. Per element, reads before writes: in-place operators
 * run it with y sharing a's storage. */
static inline int bo_reference(opf_case *c, const bo_impl *im) {
  const opf_tensor *a = &c->in[0], *b = &c->in[1];
  opf_tensor *y = &c->out[0];
  const int fl = opf_dtype_is_float(a->dtype);
  const int64_t n = opf_numel(y);
  for (int64_t i = 0; i < n; i++) {
    int64_t ia = bo_ref_offset(a, y, i), ib = bo_ref_offset(b, y, i);
    if (fl) bo_setf(y, i, im->ref_f(bo_getf(a, ia), bo_getf(b, ib)));
    else bo_seti(y, i, im->ref_i(bo_geti(a, ia), bo_geti(b, ib)));
  }
  return OPF_OK;
}

/* ---- models. fwd: fwd_ops per output element. bwd, per input X: the term's operations per
 * output element plus the sum over X's broadcast dims, numel(y) - numel(X) adds. Bytes: fwd
 * reads a and b once and writes y; bwd reads g (and a, b, y when the terms use them) and
 * writes da, db. In-place operators fit the same model (y is a: read once, written once). */
static inline double bo_flops(const opf_case *c, opf_pass p, const bo_impl *im) {
  double ny = (double)opf_numel(&c->out[0]), bwd = 0;
  for (int i = 0; i < 2 && im->grad[i][0]; i++) { /* forward-only operators: no backward */
    double nx = (double)opf_numel(&c->in[i]);
    bwd += im->grad_ops[i] * ny + (ny > nx ? ny - nx : 0);
  }
  return opf_pass_sum(p, im->fwd_ops * ny, bwd);
}

static inline double bo_bytes(const opf_case *c, opf_pass p, const bo_impl *im) {
  double es = (double)opf_dtype_size(c->dtype);
  double ny = (double)opf_numel(&c->out[0]), na = (double)opf_numel(&c->in[0]) * es,
         nb = (double)opf_numel(&c->in[1]) * es;
  double fwd = na + nb + ny * (double)opf_dtype_size(c->out[0].dtype);
  /* A gradient handed back as a view of g is neither written nor reads g. */
  const int va = opf_case_grad_view(c, 0, NULL), vb = opf_case_grad_view(c, 1, NULL);
  double bwd = (va && vb ? 0 : ny * es) + (va ? 0 : na) + (vb ? 0 : nb) +
               (im->grad_reads_ab ? na + nb : 0) + (im->grad_reads_y ? ny * es : 0);
  return opf_pass_sum(p, fwd, bwd);
}

/* Per-operator entry points around an implementation IMPL. */
#define BO_FWD_ENTRIES(NAME, IMPL, FORWARD)                                                   \
  static int NAME##_forward(opf_case *c) { return FORWARD(c, &IMPL); }                        \
  static int NAME##_reference(opf_case *c) { return bo_reference(c, &IMPL); }                 \
  static double NAME##_flops(const opf_case *c, opf_pass p) { return bo_flops(c, p, &IMPL); } \
  static double NAME##_bytes(const opf_case *c, opf_pass p) { return bo_bytes(c, p, &IMPL); }
#define BO_ENTRIES(NAME, IMPL)                                                                \
  BO_FWD_ENTRIES(NAME, IMPL, bo_forward)                                                      \
  static int NAME##_backward(opf_case *c) { return bo_backward(c, &IMPL); }
#define BO_FWD_HOOKS(NAME)                                                                    \
  .forward = NAME##_forward, .reference = NAME##_reference, .flops = NAME##_flops,            \
  .bytes = NAME##_bytes
#define BO_HOOKS(NAME) BO_FWD_HOOKS(NAME), .backward = NAME##_backward

/* ---- generated inputs ---- */
/* Divisors away from zero: |b| in [0.5, 2) (floats) or 1..9 (integers), either sign. */
static inline int bo_fill_divisor(opf_case *c, int i, opf_rng *r) {
  (void)r;
  opf_tensor *t = &c->in[i];
  const int64_t n = opf_numel(t);
  if (opf_dtype_is_float(t->dtype)) {
    opf_fill_uniform(t, c->seed, (uint64_t)i, -1.5, 1.5); /* then shift away from zero */
    for (int64_t k = 0; k < n; k++) {
      double v = bo_getf(t, k);
      bo_setf(t, k, v + (v < 0 ? -0.5 : 0.5));
    }
  } else {
    opf_fill_uniform(t, c->seed, (uint64_t)i, -9, 9); /* -9..8, then 0..8 -> 1..9 */
    for (int64_t k = 0; k < n; k++) {
      int64_t v = bo_geti(t, k);
      bo_seti(t, k, v + (v >= 0));
    }
  }
  return OPF_OK;
}

/* Integer values in [lo, hi) for every dtype (floats too, so that comparisons meet equal
 * values); bool: true where the draw is positive. */
static inline void bo_fill_int_valued(opf_case *c, int i, double lo, double hi) {
  opf_tensor *t = &c->in[i];
  opf_fill_uniform(t, c->seed, (uint64_t)i, lo, hi);
  if (!opf_dtype_is_float(t->dtype)) return;
  const int64_t n = opf_numel(t);
  for (int64_t k = 0; k < n; k++) bo_setf(t, k, floor(bo_getf(t, k)));
}

/* OPERATORS.md's binary inputs: same shape, row and column broadcast, both broadcasting,
 * tensor-scalar. small also reaches every split of the gradient reductions: 100x3+1x3 and
 * 3x70+() use partial sums over a reduced dim, 2x70+2x1 partials along the inner row. huge
 * (opt-in) broadcasts a row so that it fits in memory. */
#define BO_SHAPES                                                                             \
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
   {"test", "a=600x1 b=3x1x333"},                                                             \
   {"large", "a=8192x8192 b=8192x8192"},                                                      \
   {"huge", "a=46341x46341 b=1x46341"}}

#define BO_INPUT(NAME, LO, HI)                                                                \
  {.name = NAME, .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = LO, .hi = HI,              \
   .help = "any shape broadcastable with the other input"}

#endif
