/* opperf.h: umbrella header of the opperf library (tensors, operators, harness, counters,
 * reports). Programs that embed the harness include this one file. */
#ifndef OPPERF_OPPERF_H
#define OPPERF_OPPERF_H
#include "opperf/error.h"
#include "opperf/tensor.h"
#include "opperf/op.h"
#include "opperf/pmu.h"
#include "opperf/harness.h"
#include "opperf/machine.h"
#include "opperf/metrics.h"
#include "opperf/report.h"
#include "opperf/session.h"
#endif
