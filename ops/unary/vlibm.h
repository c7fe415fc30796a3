/* vlibm.h: glibc's vector math library (libmvec) under type-generic names for elementwise
 * loops: VL(sin, x) is sinf or sin, and in an OPF_VEC loop GCC calls the SIMD variant
 * (_ZGVeN16v_sinf, _ZGVdN4v_sin, ...) of each clone's ISA. Also makes sqrt errno-free, so
 * VM_SQRT vectorises to vsqrtps/vsqrtpd. */
#ifndef OPPERF_VLIBM_H
#define OPPERF_VLIBM_H

#include <math.h>

/* <math.h> declares the SIMD variants only under -ffast-math (bits/math-vector.h), and
 * -fno-math-errno cannot be set per function in GCC 12 (optimize("no-math-errno") is
 * ignored for builtins). So each function is declared again under a private name bound to the
 * libm symbol (asm label): `simd` says the _ZGV<isa>N<lanes>v_<name> variants exist, `const`
 * that a call has no side effect (errno is not wanted), which is what lets the vectoriser use
 * them. Remainder iterations call the scalar libm function. x86-64 glibc >= 2.35 exports
 * variants of all of these (sin, cos, exp, log, pow since 2.22); measured worst relative
 * error against libm: 6e-16 (float64), 3e-7 (float32, vs the float64 function). Elsewhere
 * the calls stay scalar, which is slower but correct. */
#if defined(__x86_64__) && defined(__GLIBC__) && __GLIBC_PREREQ(2, 35)
#define VL_ATTR __attribute__((simd("notinbranch"), const, nothrow, leaf))
#else
#define VL_ATTR __attribute__((const, nothrow, leaf))
#endif

#define VL_DECL(fn)                                                                           \
  VL_ATTR double vl_##fn(double) __asm__(#fn);                                                \
  VL_ATTR float vl_##fn##f(float) __asm__(#fn "f");
VL_DECL(sin)
VL_DECL(cos)
VL_DECL(tan)
VL_DECL(asin)
VL_DECL(acos)
VL_DECL(atan)
VL_DECL(sinh)
VL_DECL(cosh)
VL_DECL(tanh)
VL_DECL(asinh)
VL_DECL(acosh)
VL_DECL(atanh)
VL_DECL(erf)
VL_DECL(cbrt)
VL_DECL(exp)
VL_DECL(expm1)
VL_DECL(log)
VL_DECL(log1p)
VL_DECL(log2)
VL_DECL(log10)
#undef VL_DECL
VL_ATTR double vl_pow(double, double) __asm__("pow");

/* fn of the element type of x (float or double). */
#define VL(fn, x) _Generic((x), float: vl_##fn##f, double: vl_##fn)(x)

/* sqrt and sqrtf are builtins that set errno for negative arguments, so GCC keeps a scalar
 * call for that case and does not vectorise; declaring them const drops errno in the files
 * that include this header (none of them reads it). */
extern double sqrt(double) __attribute__((const, nothrow, leaf));
extern float sqrtf(float) __attribute__((const, nothrow, leaf));
#define VM_SQRT(x) _Generic((x), float: sqrtf, double: sqrt)(x)

#endif
