/* timer.h: the harness's clock (src/timer.c): CLOCK_MONOTONIC_RAW, its resolution and the
 * cost of one reading. */
#ifndef OPPERF_TIMER_H
#define OPPERF_TIMER_H

double opf_now(void);                /* CLOCK_MONOTONIC_RAW seconds */
double opf_timer_resolution(void);   /* clock_getres */
double opf_timer_overhead(void);     /* measured cost of one opf_now() call */

#endif
