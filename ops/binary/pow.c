/* pow.c: elementwise a^b with broadcasting: float32/float64 through the vectorised exp and log
 * with C's special cases, integers (int32/int64) by squaring with NumPy's wrap-around, and
 * the float gradients reduced over broadcast dims. */
#include "binary/bmath.h"
#include "unary/vmath512.h"

/* float32: the AVX-512 kernel (vmath512.h: float64 log2 and exp2, about 1 ulp) where the CPU
 * has it, else the generic rows (bmath.h: exp(b log|a|) in float64, rounded once). */
BO_FWD_KERNEL(fwd_pow_f32_vec, float, float, bm_pow_row_f32)
static void fwd_pow_f32(void *const *p, const int64_t *s, const int64_t *os, int64_t rows,
                        int64_t n, int first) {
  if (VM512_OK()) vm512_pow_rows(p, s, os, rows, n);
  else fwd_pow_f32_vec(p, s, os, rows, n, first);
}
BO_FWD_KERNEL(fwd_pow_f64, double, double, bm_pow_row_f64)
BO_FWD_KERNEL(fwd_pow_i32, int32_t, int32_t, bm_ipow_row_i32)
BO_FWD_KERNEL(fwd_pow_i64, int64_t, int64_t, bm_ipow_row_i64)

/* da = g b a^(b-1) = g b y / a, db = g a^b ln a = g y ln a, from the forward output y (see
 * bm_pow_da for a == 0); db's logarithm is staged out of the row sums. */
BO_GRAD_KERNELS_(pow, bm_pow_da_f32, bm_pow_db_f32, bm_pow_da_f64, bm_pow_db_f64, 0, 1)

/* Bases in [0.5, 2) and exponents in [-2, 2) for floats (results within [0.25, 4]); integers:
 * bases -5..5 and exponents 0..7, whose powers fit int32. */
static int pow_fill(opf_case *c, int i, opf_rng *r) {
  (void)r;
  static const double lo[2][2] = {{0.5, -2}, {-5, 0}}, hi[2][2] = {{2, 2}, {6, 8}};
  const int integer = !opf_dtype_is_float(c->in[i].dtype);
  opf_fill_uniform(&c->in[i], c->seed, (uint64_t)i, lo[integer][i], hi[integer][i]);
  return OPF_OK;
}

/* Models: one power per output element; da's term is two multiplies and a divide, db's a
 * logarithm and two multiplies; they read a, b and y. */
static const bo_impl pow_impl = {.fwd = BO_BY_DTYPE(fwd_pow), BO_GRADS(pow), .ref_f = pow,
                                 .ref_i = bm_ipow_ref, .fwd_ops = 1, .grad_ops = {3, 3},
                                 .grad_reads_ab = 1, .grad_reads_y = 1};
BO_ENTRIES(pow, pow_impl)

OPPERF_OP(pow) = {
    .abi = OPF_OP_ABI,
    .name = "pow",
    .category = "binary",
    .summary = "elementwise a^b with broadcasting (integers: wrapping, exponents >= 0)",
    .dtypes = OPF_DT_ALL,
    .n_in = 2,
    .in = {{.name = "a", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .fill = pow_fill,
            .help = "base, generated in [0.5, 2) (integers -5..5)"},
           {.name = "b", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .fill = pow_fill,
            .help = "exponent, generated in [-2, 2) (integers 0..7; negative ones give the "
                    "truncated power)"}},
    .n_out = 1,
    .out = {"y"},
    .shapes = BO_SHAPES,
    .infer = bo_infer,
    BO_HOOKS(pow),
};
