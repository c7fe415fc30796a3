/* machine.h: the machine's measured ceilings for rooflines: peak FLOP/s per floating dtype
 * (an FMA kernel) and the bandwidth of each memory level (L1, L2, L3, DRAM; a read-only and a
 * STREAM-like triad kernel on working sets sized from the caches), on 1 thread and on all
 * threads, cached in a JSON file; and the cache-aware roofline (src/roofline.c) that places a
 * case against the level its working set fits in, so `run` can show % of the attainable. */
#ifndef OPPERF_MACHINE_H
#define OPPERF_MACHINE_H

#include <stddef.h>
#include <stdint.h>

#include "opperf/error.h"
#include "opperf/tensor.h"

/* Memory levels of the cache-aware roofline: the data caches the kernel reports (sysfs, cpu0),
 * then DRAM. */
#define OPF_MEM_LEVELS 4
typedef struct opf_mem_level {
  char name[8];          /* "L1", "L2", "L3", "DRAM" */
  uint64_t size;         /* bytes per instance (0 for DRAM) */
  int sharing;           /* CPUs sharing one instance (0 for DRAM) */
  double ws[2];          /* bytes the kernels streamed over, per thread, [1 thread | all threads] */
  double read_bw[2];     /* read-only kernel, bytes/s, [1 thread | all threads] */
  double triad_bw[2];    /* triad a = b + s*c (3 x 8 bytes per element), bytes/s */
} opf_mem_level;

typedef struct opf_machine {
  char cpu_model[128];
  int cpus;                 /* online CPUs when measured */
  int threads_all;          /* thread count of the "all threads" figures */
  char isa[32];             /* vector ISA the FMA kernel used ("avx512", "avx2", "sse2") */
  char timestamp[32];
  double peak_flops[2][2];  /* [0 float32 | 1 float64][0: 1 thread | 1: all threads], FLOP/s */
  double bandwidth[2];      /* DRAM triad bytes/s, [0: 1 thread | 1: all threads] (= the DRAM
                             level's triad_bw) */
  int n_levels;             /* levels[0..n_levels-1]: the caches, innermost first, DRAM last */
  opf_mem_level levels[OPF_MEM_LEVELS];
} opf_machine;

/* Measure everything; each kernel runs about `seconds` (best of several repetitions). */
int opf_machine_measure(opf_machine *m, double seconds, opf_err *err);
/* Default cache file: $OPPERF_MACHINE_FILE, else $XDG_CACHE_HOME (or ~/.cache)/opperf/machine.json */
char *opf_machine_path(char *buf, size_t n);
int opf_machine_save(const opf_machine *m, const char *path, opf_err *err);
/* OPF_ENOTFOUND when the file does not exist; OPF_EINVAL when it is malformed, was measured
 * on another CPU model or by an older opperf (no level ceilings; the message says which). */
int opf_machine_load(opf_machine *m, const char *path, opf_err *err);
/* The single-ceiling (DRAM triad) roofline, as before the cache-aware one:
 * the roofline bound (FLOP/s) of work with this intensity on `threads` threads (1 -> the
 * 1-thread figures, more -> the all-threads figures): min(peak, intensity * bandwidth).
 * Returns 0 when dtype is not floating or the inputs are missing. */
double opf_roofline_bound(const opf_machine *m, opf_dtype dt, int threads, double flops, double bytes);
/* The roofline's shortest time per call: max(flops / peak, bytes / bandwidth), also for
 * zero-flop (data movement) and integer operators, where only the memory side applies.
 * 0 when unknown. roofline % = this / the measured time. */
double opf_roofline_time(const opf_machine *m, opf_dtype dt, int threads, double flops, double bytes);

/* ---- the cache-aware roofline (src/roofline.c) ---- */

/* What placing a case needs. */
typedef struct opf_roofline_in {
  opf_dtype dtype;
  int threads;          /* threads the case ran on (>= 1) */
  double flops, bytes;  /* models, per call */
  double working_set;   /* bytes the call touches (0: use bytes) */
  double out_share;     /* share of the working set that is written (0..1; < 0: unknown) */
  int cold;             /* caches flushed before every call: the data come from DRAM */
} opf_roofline_in;

typedef struct opf_roofline {
  char level_name[8];   /* memory level whose bandwidth bounds the memory side: "L1".."DRAM";
                         * "" when the case was not placed */
  int level;            /* its index in the machine's levels */
  int read_only;        /* the read-only kernel's bandwidth was used (few writes) */
  int compute_bound;    /* flops / peak > bytes / bandwidth: the peak bounds it */
  double bandwidth;     /* bytes/s of that level for this thread count */
  double peak;          /* FLOP/s of the dtype (0: integer or no flops) */
  double working_set;   /* bytes per call placed against the levels (all threads together) */
  double per_thread_ws; /* working set per thread, bytes, as compared with the levels */
  double bound;         /* attainable FLOP/s (0 without flops or for integer dtypes) */
  double time;          /* attainable (shortest) time per call, s */
} opf_roofline;

/* The level a working set of `per_thread` bytes on `threads` threads fits in: the innermost
 * cache whose capacity per thread (its size, divided among the threads that share one
 * instance) holds it, else DRAM. -1 without levels. */
int opf_roofline_level(const opf_machine *m, int threads, double per_thread);
/* Place a case: level, ceiling, attainable FLOP/s and time. OPF_EINVAL (out zeroed, level -1)
 * when the machine has no levels or the inputs cannot be placed. */
int opf_roofline_place(const opf_machine *m, const opf_roofline_in *in, opf_roofline *out);
/* The ceilings of a roofline chart (src/svg.c) in GFLOP/s over FLOP/byte: one line per level
 * (its triad bandwidth), capped at the dtype's peak (no cap for integer dtypes), labelled in
 * labels[] and cap_label. Returns how many (0 without levels). */
struct opf_svg_roof;
int opf_roofline_chart(const opf_machine *m, opf_dtype dt, int threads, struct opf_svg_roof *roofs,
                       char (*labels)[48], char *cap_label, size_t cap_n);
/* What bounds a placed case: "compute", else its memory level ("L1".."DRAM"). */
const char *opf_roofline_label(const opf_roofline *r);
/* The run's hook: place a measured result (its models, its tensors as the working set, the
 * settings' threads and cache mode) and set r->roofline, r->roofline_time and r->roof. A case
 * that cannot be placed keeps them 0 / "". */
struct opf_result;
struct opf_settings;
void opf_roofline_apply(const opf_machine *m, const struct opf_settings *s, struct opf_result *r);

#endif
