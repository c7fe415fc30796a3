/* session.c: the run pipeline (include/opperf/session.h): plan, set up, measure with
 * post-processing, emit, end. `opperf run` drives it, and so can any program that links
 * libopperf; the CLI only adds what is its own (isolation, peers, progress, the gate). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/machine.h"
#include "opperf/session.h"

struct opf_session {
  opf_settings s;
  opf_pmu *pmu;
  opf_context *ctx;
  opf_machine mach;
  int have_machine;
  int n_out;
  opf_format fmt[OPF_SESSION_MAX_OUTPUTS];
  char *path[OPF_SESSION_MAX_OUTPUTS];
  opf_emitter *em[OPF_SESSION_MAX_OUTPUTS];
  char command[512];
};

int opf_session_new(opf_session **out, const opf_settings *settings, const char *command, opf_err *err) {
  *out = NULL;
  opf_session *s = calloc(1, sizeof *s);
  if (!s) return opf_err_set(err, OPF_ENOMEM, "out of memory");
  s->s = *settings;
  snprintf(s->command, sizeof s->command, "%s", command ? command : "");
  int rc = opf_pmu_create(&s->pmu, s->s.events, NULL, err);
  if (rc) {
    free(s);
    return rc;
  }
  *out = s;
  return OPF_OK;
}

int opf_session_add_output(opf_session *s, opf_format f, const char *path, opf_err *err) {
  if (s->n_out == OPF_SESSION_MAX_OUTPUTS) return opf_err_set(err, OPF_EINVAL, "too many outputs (at most %d)", OPF_SESSION_MAX_OUTPUTS);
  if ((int)f < 0 || f >= OPF_NFORMATS) return opf_err_set(err, OPF_EINVAL, "unknown output format %d", (int)f);
  char *p = path ? strdup(path) : NULL;
  if (path && !p) return opf_err_set(err, OPF_ENOMEM, "out of memory");
  s->fmt[s->n_out] = f;
  s->path[s->n_out++] = p;
  return OPF_OK;
}

int opf_session_start(opf_session *s, opf_err *err) {
  int rc = opf_runtime_setup(&s->s, err);
  if (!rc) rc = opf_pmu_open(s->pmu, err);
  if (rc) return rc;
  s->ctx = malloc(sizeof *s->ctx);
  if (!s->ctx) return opf_err_set(err, OPF_ENOMEM, "out of memory");
  opf_context_collect(s->ctx, &s->s, s->pmu, s->command);
  /* The harness's own cost per sample, on an empty operator: timer only, and with the run's
   * counters (absent when none of them opens: never a made-up figure). */
  const char *what[2] = {"timer", s->s.events};
  int nw = s->s.events[0] ? 2 : 1;
  double per[2];
  opf_err oe;
  if (opf_overhead_measure(what, nw, per, &oe) == OPF_OK)
    for (int i = 0; i < nw; i++)
      if (per[i] >= 0) {
        snprintf(s->ctx->overhead[s->ctx->n_overhead].what, sizeof s->ctx->overhead[0].what, "%s",
                 i ? "timer+counters" : "timer");
        s->ctx->overhead[s->ctx->n_overhead++].per_sample_s = per[i];
      }
  /* Roofline: from the figures `opperf machine` cached; absent (no % column) otherwise. */
  char mpath[512];
  s->have_machine = opf_machine_load(&s->mach, opf_machine_path(mpath, sizeof mpath), &oe) == OPF_OK;
  s->ctx->have_machine = s->have_machine;
  return OPF_OK;
}

int opf_session_begin(opf_session *s, opf_err *err) {
  if (!s->ctx) return opf_err_set(err, OPF_EINVAL, "opf_session_begin before opf_session_start");
  for (int i = 0; i < s->n_out; i++) {
    int rc = opf_emitter_begin(&s->em[i], s->fmt[i], s->path[i], s->ctx, err);
    if (rc) return rc;
  }
  return OPF_OK;
}

void opf_session_finish_result(const opf_session *s, opf_result *r) {
  if (s->have_machine) opf_roofline_apply(&s->mach, &s->s, r); /* cache-aware (src/roofline.c) */
}

const opf_machine *opf_session_machine(const opf_session *s) { return s && s->have_machine ? &s->mach : NULL; }

int opf_session_measure(opf_session *s, opf_case *c, const char *set, opf_pass pass, opf_result *r) {
  int rc = opf_measure(&s->s, c, set, pass, s->pmu, r);
  opf_session_finish_result(s, r);
  return rc;
}

int opf_session_record(opf_session *s, const opf_result *r) {
  int rc = OPF_OK;
  for (int i = 0; i < s->n_out; i++)
    if (s->em[i] && opf_emitter_record(s->em[i], r)) rc = OPF_EIO;
  return rc;
}

int opf_session_end(opf_session *s, int commit, opf_err *err) {
  int rc = OPF_OK;
  if (s->ctx) opf_context_finish(s->ctx);
  for (int i = 0; i < s->n_out; i++) {
    if (s->em[i] && opf_emitter_end(s->em[i], commit, err) && !rc) rc = OPF_EIO;
    s->em[i] = NULL;
    /* a table on stdout followed by another report on stdout: keep them apart */
    if (s->n_out > 1 && s->fmt[i] == OPF_FMT_TABLE && i + 1 < s->n_out && !s->path[i]) fputc('\n', stdout);
  }
  return rc;
}

void opf_session_free(opf_session *s) {
  if (!s) return;
  for (int i = 0; i < s->n_out; i++) {
    if (s->em[i]) opf_emitter_end(s->em[i], 0, NULL);
    free(s->path[i]);
  }
  opf_pmu_free(s->pmu);
  free(s->ctx);
  free(s);
}

opf_settings *opf_session_settings(opf_session *s) { return &s->s; }
opf_context *opf_session_context(opf_session *s) { return s->ctx; }
opf_pmu *opf_session_pmu(opf_session *s) { return s->pmu; }
opf_emitter **opf_session_emitters(opf_session *s, int *n) {
  *n = s->n_out;
  return s->em;
}
