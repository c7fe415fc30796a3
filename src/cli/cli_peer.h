/* cli_peer.h: `opperf run --baseline torch|numpy [--check]` (see peer.c): results are kept until
 * the end of the run, then scripts/opperf-peer.py measures the same cases once for the whole
 * run and its answers are joined to ours before the reports are written. */
#ifndef OPPERF_CLI_PEER_H
#define OPPERF_CLI_PEER_H

#include "cli.h"
#include "opperf/peer.h"

typedef struct cli_peer cli_peer;

/* --baseline NAME: the peer library, or a usage error (2) for an unknown name. */
int cli_peer_parse(const char *name, int *lib);
/* A peer run for library lib; check: --check (exchange outputs and compare them). */
cli_peer *cli_peer_new(int lib, int check);
/* Keep result r (ownership of its arrays moves to the peer run) of case c. */
int cli_peer_keep(cli_peer *p, const opf_case *c, opf_result *r);
/* --dry-run: print each case's peer equivalent (or why there is none); returns the exit status. */
int cli_peer_dry_run(int lib, const opf_settings *s, const opf_case *const *cases, int n);
/* After our measurements: write the inputs, run the script, compare (--check), join, record
 * every kept result into the emitters and release it. A missing python3/torch or a failing
 * script prints one line and the results are recorded without a peer; so does skip (an
 * interrupted run). Returns the number of --check mismatches. ctx->peer receives the peer's
 * name and version. */
int cli_peer_finish(cli_peer *p, const opf_settings *s, opf_context *ctx, opf_emitter **em, int n_em,
                    int skip);
void cli_peer_free(cli_peer *p);

#endif
