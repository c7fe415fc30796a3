/* mod.c: floor modulo with NumPy/Python semantics (the result takes the divisor's sign),
 * broadcasting, for float32/float64 and int32/int64, with its gradient. The vectorised form
 * (bmath.h) is exact; blocks it cannot handle exactly (huge quotients, zero or non-finite
 * divisors, int64 beyond 2^53) take the fmod / integer-remainder form. */
#include "binary/bmath.h"

BO_GUARDED(fwd_mod_f32, float, bm_mod_f32, bm_mod_guard_f32, bm_mod_slow_f32)
BO_GUARDED(fwd_mod_f64, double, bm_mod_f64, bm_mod_guard_f64, bm_mod_slow_f64)
BO_GUARDED(fwd_mod_i32, int32_t, bm_mod_i32, bm_mod_guard_i32, bm_mod_slow_i32)
BO_GUARDED(fwd_mod_i64, int64_t, bm_mod_i64, bm_mod_guard_i64, bm_mod_slow_i64)

/* a mod b = a - floor(a / b) b: da = g, db = -g floor(a / b) (PyTorch's remainder gradient;
 * the jumps where a / b crosses an integer have measure zero). */
#define MOD_DB(g, a, b, y) (-(g) * BMG_FLOOR((a) / (b)))
BO_GRAD_KERNELS_(mod, BO_TERM_G, MOD_DB, BO_TERM_G, MOD_DB, 0, 1) /* db's term staged */

/* Models: one remainder per output element (as div counts one divide); db's term is a
 * divide, a floor and a multiply (the negation folds), and reads a and b. */
static const bo_impl mod_impl = {.fwd = BO_BY_DTYPE(fwd_mod), BO_GRADS(mod), .ref_f = bm_pymod,
                                 .ref_i = bm_pymod_int, .fwd_ops = 1, .grad_ops = {0, 3},
                                 .grad_reads_ab = 1};
BO_ENTRIES(mod, mod_impl)

OPPERF_OP(mod) = {
    .abi = OPF_OP_ABI,
    .name = "mod",
    .category = "binary",
    .summary = "elementwise floor modulo a - floor(a/b) b (sign of b, as NumPy) with broadcasting",
    .dtypes = OPF_DT_ALL,
    .n_in = 2,
    .in = {BO_INPUT("a", -20, 20),
           {.name = "b", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .fill = bo_fill_divisor,
            .help = "divisor, generated away from zero: |b| in [0.5, 2), integers 1..9"}},
    .n_out = 1,
    .out = {"y"},
    .shapes = BO_SHAPES,
    .infer = bo_infer,
    BO_HOOKS(mod),
};
