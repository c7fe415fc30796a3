/* flamegraph.h: stack folding and flame graphs without external scripts. Folds `perf script`
 * output (or reads folded stacks: "root;caller;leaf COUNT" lines, the format every flame-graph
 * tool shares) and renders a self-contained interactive SVG flame graph (hover for counts,
 * click to zoom, search). Used by `opperf flamegraph` and scripts/opperf-flamegraph. */
#ifndef OPPERF_FLAMEGRAPH_H
#define OPPERF_FLAMEGRAPH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "opperf/error.h"

typedef struct opf_folded {
  char **stack;    /* "root;...;leaf", one per distinct stack (owned) */
  int64_t *count;  /* samples of each stack */
  size_t n, cap;
  int64_t total;   /* sum of count */
  int64_t skipped; /* perf script samples without a usable stack (no frames) */
  void *index;     /* hash index while folding (internal) */
} opf_folded;

/* Fold `perf script` output (default fields, or -F comm,tid,time,period,event,ip,sym,dso; with
 * call graphs): one stack per sample, root first, the thread's command as the root frame.
 * Frames are "function" for the main executable, "function (libname)" for a shared library
 * ("libopenblas.so.0" -> libopenblas), "function_[k]" in the kernel, "[libname]" where perf
 * could not name the function. OPF_EINVAL when the text is not perf script output. */
int opf_fold_perf_script(FILE *in, opf_folded *f, opf_err *err);
/* Read folded stacks; OPF_EINVAL (line number in the message) on a malformed line. */
int opf_folded_read(FILE *in, opf_folded *f, opf_err *err);
/* Add count samples of one stack (merged with an equal stack). */
int opf_folded_add(opf_folded *f, const char *stack, int64_t count, opf_err *err);
/* Sort stacks by name (what renderers expect) and write them, one "stack count" per line. */
int opf_folded_write(opf_folded *f, FILE *out);
void opf_folded_free(opf_folded *f);

/* The interactive SVG flame graph of f (width in pixels, 0: 1200) into a malloc'd buffer.
 * Frames narrower than 0.1 pixel are merged away, as flamegraph.pl does. */
int opf_flamegraph_svg(opf_folded *f, const char *title, int width, char **out, size_t *len, opf_err *err);
/* Number of frames (rectangles) in an SVG opf_flamegraph_svg wrote; for tests. */
size_t opf_flamegraph_frames(const char *svg);

#endif
