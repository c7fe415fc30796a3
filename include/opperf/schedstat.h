/* schedstat.h: the kernel's scheduler statistics of every thread of this process
 * (/proc/self/task/<tid>/schedstat: ns on CPU, ns waiting on a run queue, timeslices), summed;
 * the harness reads them around a case's sampling loop to tell a measurement disturbed by CPU
 * contention (src/schedstat.c). */
#ifndef OPPERF_SCHEDSTAT_H
#define OPPERF_SCHEDSTAT_H

#include <stdint.h>

#include "opperf/error.h"

typedef struct opf_sched_totals {
  double oncpu_s;   /* summed over the process's threads */
  double runq_s;    /* time runnable but waiting for a CPU, summed over the threads */
  uint64_t slices;  /* timeslices run */
  int tasks;        /* threads read */
} opf_sched_totals;

/* Sum the schedstat lines of every thread of this process. OPF_ESYS with the reason in err
 * when the kernel gives none (no CONFIG_SCHED_INFO / CONFIG_SCHEDSTATS: the file is missing,
 * or no thread could be read): the caller reports "not available", never a 0. */
int opf_sched_read(opf_sched_totals *t, opf_err *err);
/* The directory of per-thread entries read (default "/proc/self/task"; NULL restores it): a
 * seam for the tests, which point it at a directory without schedstat files. */
void opf_sched_set_root(const char *dir);

#endif
