/* power.c: sign and power-like maps: abs, negative, sign, square (also int32/int64, wrapping
 * like NumPy), sqrt, rsqrt, cbrt, rcbrt, reciprocal, and the angle conversions degrees and
 * radians, with their gradients. Memory-bound except cbrt and rcbrt (glibc's vector cbrt). */
#include <math.h>

#include "unary/unary_map.h"
#include "unary/vlibm.h"

/* References: float64 libm or plain C; integers in int64, wrapping through uint64. */
static double ref_neg(double x) { return -x; }
static double ref_sign(double x) { return x > 0 ? 1 : x < 0 ? -1 : x == 0 ? 0 : x; }
static double ref_square(double x) { return x * x; }
static double ref_rsqrt(double x) { return 1 / sqrt(x); }
static double ref_rcbrt(double x) { return 1 / cbrt(x); }
static double ref_reciprocal(double x) { return 1 / x; }
static double ref_degrees(double x) { return x * (180 / M_PI); }
static double ref_radians(double x) { return x * (M_PI / 180); }
static int64_t iref_abs(int64_t x) { return x < 0 ? (int64_t)(0 - (uint64_t)x) : x; }
static int64_t iref_neg(int64_t x) { return (int64_t)(0 - (uint64_t)x); }
static int64_t iref_sign(int64_t x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }
static int64_t iref_square(int64_t x) { return (int64_t)((uint64_t)x * (uint64_t)x); }

/* Flops per element, fwd / bwd: abs 1 / 1 (dy * sign x), negative 1 / 1, sign 1 / 0 (the
 * gradient is zero: backward only writes), square 1 / 2, sqrt 1 / 2 (dy * 0.5 / y),
 * rsqrt 2 / 4 (-0.5 y^3 dy), cbrt 1 / 3 (dy / (3 y^2)), rcbrt 2 / 5 (-y^4 dy / 3),
 * reciprocal 1 / 3 (-y^2 dy), degrees and radians 1 / 1. */
/*         name        forward               backward (x, y, dy)          reference */
UM_MAP_INT(abs,        VM_TG(abs, x),        dy * VM_FP(sign, x),         fabs,      iref_abs,
           1, 1, UM_R_ONE, UM_PAR_CHEAP)
UM_MAP_INT(negative,   VM_TG(neg, x),        -dy,                         ref_neg,   iref_neg,
           1, 1, UM_R_DY, UM_PAR_CHEAP)
UM_MAP_INT(sign,       VM_TG(sign, x),       UM_C(0),                     ref_sign,  iref_sign,
           1, 0, UM_R_NONE, UM_PAR_CHEAP)
UM_MAP_INT(square,     VM_TG(sqr, x),        (x + x) * dy,                ref_square, iref_square,
           1, 2, UM_R_ONE, UM_PAR_CHEAP)
UM_MAP(sqrt,           VM_SQRT(x),           dy * 0.5f / y,               sqrt,
           1, 2, UM_R_ONE, UM_PAR_CHEAP)
UM_MAP(rsqrt,          1 / VM_SQRT(x),       -0.5f * (y * y) * (y * dy),  ref_rsqrt,
           2, 4, UM_R_ONE, UM_PAR_CHEAP)
UM_MAP(cbrt,           VL(cbrt, x),          dy / (3 * y * y),            cbrt,
           1, 3, UM_R_ONE, UM_PAR_MATH)
UM_MAP(rcbrt,          1 / VL(cbrt, x),      -(y * y) * (y * y) * dy / 3, ref_rcbrt,
           2, 5, UM_R_ONE, UM_PAR_MATH)
UM_MAP(reciprocal,     1 / x,                -(y * y) * dy,               ref_reciprocal,
           1, 3, UM_R_ONE, UM_PAR_CHEAP)
UM_MAP(degrees,        x * UM_C(180 / M_PI), dy * UM_C(180 / M_PI),       ref_degrees,
           1, 1, UM_R_DY, UM_PAR_CHEAP)
UM_MAP(radians,        x * UM_C(M_PI / 180), dy * UM_C(M_PI / 180),       ref_radians,
           1, 1, UM_R_DY, UM_PAR_CHEAP)

/* Integer dtypes draw integers in [-10, 10); the away-from-zero maps draw magnitudes in
 * [0.1, 10) with random signs. */
/* (Help strings with a '[' stay off the OPPERF_OP lines: cmake/gen_registry.cmake reads
 * those lines as a CMake list, where an unbalanced '[' merges the lines that follow.) */
#define SIGNED "|x| in [0.1, 10) with random signs (away from the singularity at 0)"
#define POSITIVE "x > 0: generated in [0.1, 10)"
OPPERF_OP(abs) = {UM_UNARY_INT(abs), .name = "abs", UM_X(-10, 10, NULL),
                  .summary = "absolute value: y = |x| (integers wrap: abs(INT_MIN) = INT_MIN)"};
OPPERF_OP(negative) = {UM_UNARY_INT(negative), .name = "negative", UM_X(-10, 10, NULL),
                       .summary = "negation: y = -x"};
OPPERF_OP(sign) = {UM_UNARY_INT(sign), .name = "sign", UM_X(-10, 10, NULL),
                   .summary = "sign: y = -1, 0 or 1 (NaN for NaN); gradient 0"};
OPPERF_OP(square) = {UM_UNARY_INT(square), .name = "square", UM_X(-10, 10, NULL),
                     .summary = "square: y = x * x (integers wrap on overflow)"};
OPPERF_OP(sqrt) = {UM_UNARY(sqrt), .name = "sqrt", UM_X(0.1, 10, POSITIVE),
                   .summary = "square root: y = sqrt(x)"};
OPPERF_OP(rsqrt) = {UM_UNARY(rsqrt), .name = "rsqrt",
                    UM_X(0.1, 10, POSITIVE),
                    .summary = "reciprocal square root: y = 1 / sqrt(x)"};
OPPERF_OP(cbrt) = {UM_UNARY(cbrt), .name = "cbrt", UM_X_FILL(0.1, 10, um_fill_signed, SIGNED),
                   .summary = "cube root: y = cbrt(x)"};
OPPERF_OP(rcbrt) = {UM_UNARY(rcbrt), .name = "rcbrt",
                    UM_X_FILL(0.1, 10, um_fill_signed, SIGNED),
                    .summary = "reciprocal cube root: y = 1 / cbrt(x)"};
OPPERF_OP(reciprocal) = {UM_UNARY(reciprocal), .name = "reciprocal",
                         UM_X_FILL(0.1, 10, um_fill_signed, SIGNED),
                         .summary = "reciprocal: y = 1 / x"};
OPPERF_OP(degrees) = {UM_UNARY(degrees), .name = "degrees", UM_X(-10, 10, NULL),
                      .summary = "radians to degrees: y = x * 180 / pi"};
OPPERF_OP(radians) = {UM_UNARY(radians), .name = "radians", UM_X(-10, 10, NULL),
                      .summary = "degrees to radians: y = x * pi / 180"};
