/* machine.h: the machine's measured ceilings for rooflines: peak FLOP/s per floating dtype
 * (an FMA kernel) and memory bandwidth (a STREAM-like triad far beyond the last-level cache),
 * on 1 thread and on all threads, cached in a JSON file so `run` can show % of roofline. */
#ifndef OPPERF_MACHINE_H
#define OPPERF_MACHINE_H

#include <stddef.h>

#include "opperf/error.h"
#include "opperf/tensor.h"

typedef struct opf_machine {
  char cpu_model[128];
  int cpus;                 /* online CPUs when measured */
  int threads_all;          /* thread count of the "all threads" figures */
  char isa[32];             /* vector ISA the FMA kernel used ("avx512", "avx2", "sse2") */
  char timestamp[32];
  double peak_flops[2][2];  /* [0 float32 | 1 float64][0: 1 thread | 1: all threads], FLOP/s */
  double bandwidth[2];      /* triad bytes/s, [0: 1 thread | 1: all threads] */
} opf_machine;

/* Measure everything; each kernel runs about `seconds` (best of several repetitions). */
int opf_machine_measure(opf_machine *m, double seconds, opf_err *err);
/* Default cache file: $OPPERF_MACHINE_FILE, else $XDG_CACHE_HOME (or ~/.cache)/opperf/machine.json */
char *opf_machine_path(char *buf, size_t n);
int opf_machine_save(const opf_machine *m, const char *path, opf_err *err);
/* OPF_ENOTFOUND when the file does not exist; OPF_EINVAL when it is malformed or was measured
 * on another CPU model (the message says which). */
int opf_machine_load(opf_machine *m, const char *path, opf_err *err);
/* The roofline bound (FLOP/s) of work with this intensity on `threads` threads (1 -> the
 * 1-thread figures, more -> the all-threads figures): min(peak, intensity * bandwidth).
 * Returns 0 when dtype is not floating or the inputs are missing. */
double opf_roofline_bound(const opf_machine *m, opf_dtype dt, int threads, double flops, double bytes);
/* The roofline's shortest time per call: max(flops / peak, bytes / bandwidth), also for
 * zero-flop (data movement) and integer operators, where only the memory side applies.
 * 0 when unknown. roofline % = this / the measured time. */
double opf_roofline_time(const opf_machine *m, opf_dtype dt, int threads, double flops, double bytes);

#endif
