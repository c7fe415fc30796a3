/* region.c (CLI): the hooks around each measured sample for one run: the back-end's (callgrind
 * client requests) and perf record control (--perf-control, $OPPERF_PERF_CONTROL), chained so
 * further consumers (the sampling profiler) can be added. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_region_setup(cli_region *r, opf_settings *s, const char *perf_spec) {
  memset(r, 0, sizeof *r);
  r->perf.ctl_fd = r->perf.ack_fd = -1;
  if (s->hooks) opf_hook_chain_add(&r->chain, s->hooks);
  if (!perf_spec) perf_spec = getenv("OPPERF_PERF_CONTROL");
  if (!perf_spec || !*perf_spec) return 0;
  opf_err e;
  if (opf_perfctl_open(&r->perf, perf_spec, &e)) return cli_usage_error("--perf-control: %s", e.msg);
  r->perf_on = 1;
  opf_region_hooks h = opf_perfctl_hooks(&r->perf);
  opf_hook_chain_add(&r->chain, &h);
  return 0;
}

void cli_region_install(cli_region *r, opf_settings *s) {
  r->combined = opf_hook_chain_hooks(&r->chain);
  s->hooks = r->chain.n ? &r->combined : NULL;
}

void cli_region_finish(cli_region *r) {
  if (!r->perf_on) return;
  opf_perfctl_close(&r->perf);
  if (r->perf.err.code)
    fprintf(stderr, "opperf: warning: perf record control failed, the profile may be incomplete: %s\n",
            r->perf.err.msg);
  r->perf_on = 0;
}
