/* vsort.h: vectorised in-place sorts of unsigned keys for the sorting family (ops/sort/):
 * AVX-512 bitonic networks in registers for short arrays and a quicksort whose partition
 * compresses each vector into its two sides (the x86-simd-sort scheme NumPy ships), with a
 * radix-sort fall-back when the recursion runs too deep. Chosen at run time: on CPUs without
 * AVX-512 (and on other architectures) the functions return 0 and the callers keep their
 * portable radix and insertion sorts. srt_vsort64/32 are not stable: callers use them where
 * equal keys are equal bit patterns (values) or where every word is distinct (key << 32 |
 * index pairs); srt_vsort_kv puts equal keys in index order. */
#ifndef OPPERF_OPS_VSORT_H
#define OPPERF_OPS_VSORT_H

#include <stdint.h>

/* 1 when the vector sorts run on this CPU (AVX-512F). */
int srt_vsort_ok(void);

/* Sort a[0..n) ascending in place; tmp (n words) is scratch for the deep-recursion fall-back.
 * Return 1 when sorted, 0 when the CPU lacks the ISA (a is then untouched). */
int srt_vsort64(uint64_t *a, uint64_t *tmp, int64_t n);
int srt_vsort32(uint32_t *a, uint32_t *tmp, int64_t n);
/* srt_vsort32 on nt threads (call outside parallel regions): lines of SRT_VMT_MIN keys and
 * more are split across them (the first partition threaded by chunks, then ranges a thread);
 * shorter ones, or nt < 2, sort on the calling thread. */
#define SRT_VMT_MIN 131072
int srt_vsort32_mt(uint32_t *a, uint32_t *tmp, int64_t n, int nt);

/* The key transforms of sort_common.h (srt_keys, srt_unkey32 with the key xor f) on n
 * contiguous 4-byte words: fl 1 for float32, 0 for int32; *zeros 1 when a key is a zero's.
 * Return 0 without AVX-512F (nothing done). */
int srt_vkeys32(const uint32_t *x, uint32_t *k, int64_t n, uint32_t f, int fl);
int srt_vunkeys32(const uint32_t *k, uint32_t *y, int64_t n, uint32_t f, int fl, int *zeros);
/* The same for w <= 16 columns: x[r * ld + q] (rows r < n, columns q < w) to w lines of keys
 * k[q * lp + r] (lp >= n: the lines' pitch), and back to y[r * ld + q]; bit q of *zeros set
 * when line q has a zero's key. */
int srt_vcols_keys32(const uint32_t *x, int64_t ld, int64_t n, int w, uint32_t *k, int64_t lp,
                     uint32_t f, int fl);
int srt_vcols_unkeys32(const uint32_t *k, int64_t lp, int64_t n, int w, uint32_t *y, int64_t ld,
                       uint32_t f, int fl, uint32_t *zeros);
/* Sort rows (at most 64) of n <= 16 contiguous 4-byte words from x into y, keyed as above
 * (AVX-512F only: callers check srt_vsort_ok); bit r of the result set when row r has a
 * zero's key. */
uint64_t srt_vrows32(const uint32_t *x, uint32_t *y, int64_t rows, int n, uint32_t f, int fl);
/* The same for float32 rows with the permutation: perm[r * n + k] the position in row r of
 * y[r * n + k], equal keys in position order (a stable sort); y takes x's bits (NaN as
 * 0x7fffffff). */
void srt_vrows32_perm(const uint32_t *x, uint32_t *y, uint32_t *perm, int64_t rows, int n,
                      uint32_t f);

/* Sort pairs (k[i], v[i]) by key, equal keys by v ascending (with v[i] = i: a stable sort),
 * in place; tk, tv (n words each) are scratch. Return 1 when sorted, 0 when the CPU lacks
 * AVX-512F/VL (k and v are then untouched). */
int srt_vsort_kv(uint64_t *k, uint32_t *v, uint64_t *tk, uint32_t *tv, int64_t n);
/* 1 when srt_vsort_kv and srt_vsort_kv32 run on this CPU (AVX-512F and VL). */
int srt_vsort_kv_ok(void);
/* The same for 32-bit keys (16 pairs a vector step). */
int srt_vsort_kv32(uint32_t *k, uint32_t *v, uint32_t *tk, uint32_t *tv, int64_t n);

#endif
