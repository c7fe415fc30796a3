/* opf_vec128.h: portable 128-bit register transposes (GCC vector extensions) for the layout
 * kernels on architectures without their x86 intrinsic paths: on arm64 each shuffle below is one
 * NEON zip1/zip2 (.4s or .2d), each 16-byte memcpy one ldr/str q. Internal to the library. */
#ifndef OPPERF_OPF_VEC128_H
#define OPPERF_OPF_VEC128_H

#include <stdint.h>
#include <string.h>

typedef uint32_t opf_v4u32 __attribute__((vector_size(16)));
typedef uint64_t opf_v2u64 __attribute__((vector_size(16)));

/* out row i (ldb apart) = column i of the 4x4 block of 4-byte words at in (rows lda apart):
 * four loads, eight zips, four stores where the scalar loop does 16 loads and 16 stores. */
__attribute__((always_inline, unused)) static inline void opf_t4x4_u32(const uint32_t *in,
                                                                        int64_t lda,
                                                                        uint32_t *out,
                                                                        int64_t ldb) {
  opf_v4u32 r0, r1, r2, r3;
  memcpy(&r0, in, 16);
  memcpy(&r1, in + lda, 16);
  memcpy(&r2, in + 2 * lda, 16);
  memcpy(&r3, in + 3 * lda, 16);
  const opf_v4u32 lo = {0, 4, 1, 5}, hi = {2, 6, 3, 7}, l2 = {0, 1, 4, 5}, h2 = {2, 3, 6, 7};
  opf_v4u32 t0 = __builtin_shuffle(r0, r1, lo), t1 = __builtin_shuffle(r0, r1, hi);
  opf_v4u32 t2 = __builtin_shuffle(r2, r3, lo), t3 = __builtin_shuffle(r2, r3, hi);
  r0 = __builtin_shuffle(t0, t2, l2);
  r1 = __builtin_shuffle(t0, t2, h2);
  r2 = __builtin_shuffle(t1, t3, l2);
  r3 = __builtin_shuffle(t1, t3, h2);
  memcpy(out, &r0, 16);
  memcpy(out + ldb, &r1, 16);
  memcpy(out + 2 * ldb, &r2, 16);
  memcpy(out + 3 * ldb, &r3, 16);
}

/* The same for a 2x2 block of 8-byte words: two loads, two zips, two stores. */
__attribute__((always_inline, unused)) static inline void opf_t2x2_u64(const uint64_t *in,
                                                                        int64_t lda,
                                                                        uint64_t *out,
                                                                        int64_t ldb) {
  opf_v2u64 r0, r1;
  memcpy(&r0, in, 16);
  memcpy(&r1, in + lda, 16);
  const opf_v2u64 lo = {0, 2}, hi = {1, 3};
  opf_v2u64 a = __builtin_shuffle(r0, r1, lo), b = __builtin_shuffle(r0, r1, hi);
  memcpy(out, &a, 16);
  memcpy(out + ldb, &b, 16);
}

#endif
