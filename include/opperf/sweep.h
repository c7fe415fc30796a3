/* sweep.h: shape generation for `opperf sweep`: parsing --vary ranges ("x.dim0=16:65536:x2",
 * "dim1=8:64:+8") and --aspect element counts ("2^20"), and the lists of shapes they produce.
 * Pure functions (no allocation beyond the caller's arrays, no printing): unit-tested. */
#ifndef OPPERF_SWEEP_H
#define OPPERF_SWEEP_H

#include <stdint.h>

#include "opperf/error.h"

#define OPF_SWEEP_MAX_POINTS 256

typedef struct opf_sweep_vary {
  char input[32];   /* input name; "" for the operator's first input */
  int dim;          /* dimension index (>= 0) */
  int64_t start, stop, step;
  int geometric;    /* 1: multiply by step ("x2"); 0: add step ("+8") */
} opf_sweep_vary;

/* "[NAME.]dimK=START:STOP:xF" or "...:+N". START >= 1, STOP >= START, F >= 2 or N >= 1.
 * OPF_EINVAL with a message naming the problem when malformed. */
int opf_sweep_parse_vary(const char *s, opf_sweep_vary *v, opf_err *err);
/* The values of the range, START first, none past STOP: stores up to max, returns how many
 * there are (more than max means the range is too long), or a negative code. */
int opf_sweep_vary_values(const opf_sweep_vary *v, int64_t *out, int max);
/* An element count: "1048576", "2^20" or "2**20"; must be a power of two between 2 and 2^40. */
int opf_sweep_parse_count(const char *s, int64_t *n, opf_err *err);
/* The aspect sweep of n = 2^k elements: rows[i] = 2^i, cols[i] = n / 2^i for i = 0..k;
 * returns k + 1 (or -1 when max is too small). */
int opf_sweep_aspect(int64_t n, int64_t *rows, int64_t *cols, int max);

#endif
