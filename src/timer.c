/* timer.c: the measurement clock (CLOCK_MONOTONIC_RAW: not slewed by NTP), its resolution and
 * the measured cost of reading it, reported in every context block. */
#include <time.h>

#include "opperf/timer.h"

double opf_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double opf_timer_resolution(void) {
  struct timespec ts;
  clock_getres(CLOCK_MONOTONIC_RAW, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double opf_timer_overhead(void) {
  /* Best of 5 batches of 1000 reads: the floor is the cost, the rest is noise. */
  double best = 1;
  for (int r = 0; r < 5; r++) {
    double t0 = opf_now(), t = t0;
    for (int i = 0; i < 1000; i++) t = opf_now();
    double per = (t - t0) / 1000;
    if (per < best) best = per;
  }
  return best;
}
