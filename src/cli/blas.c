/* blas.c: applies the OpenBLAS kernel decision (opperf/blaskernel.h) for `run` and `sweep`.
 * OpenBLAS reads OPENBLAS_CORETYPE once, in a constructor when the library loads, so a
 * different core needs a new process image: the command re-executes itself once
 * (/proc/self/exe, same arguments) with OPENBLAS_CORETYPE set and OPPERF_BLAS_REEXEC saying
 * why; a process that finds OPPERF_BLAS_REEXEC never decides again (no loop). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "opperf/blaskernel.h"

extern char *openblas_get_corename(void);

#define REEXEC_ENV "OPPERF_BLAS_REEXEC" /* "SOURCE:CORE": who chose, and what OpenBLAS had */

static char **saved;
static int n_saved;
static opf_blas_decision status;
static int have_status;
static char ran_instead[32]; /* OpenBLAS did not take the requested core: the one it ran */

void cli_blas_save_args(int argc, char **argv) {
  free(saved);
  n_saved = 0;
  saved = calloc((size_t)argc + 2, sizeof *saved);
  if (!saved) return;
  saved[0] = "opperf";
  for (int i = 0; i < argc; i++) /* copies: option parsing may tokenise the originals */
    if (!(saved[i + 1] = strdup(argv[i]))) return;
  n_saved = argc + 1;
}

static const char *current_core(void) {
  const char *c = openblas_get_corename();
  return c && *c ? c : "unknown";
}

static const char *request_or_env(const char *request) {
  if (request) return request;
  const char *e = getenv("OPPERF_BLAS_KERNEL");
  return e && *e ? e : "auto";
}

/* After the re-execution: what was decided, rebuilt from the marker and checked against the
 * core OpenBLAS actually loaded. */
static void restore(const char *marker) {
  opf_cpu_desc cpu;
  opf_cpu_desc_detect(&cpu);
  char src[16] = "", before[32] = "";
  const char *colon = strchr(marker, ':');
  if (colon) {
    snprintf(src, sizeof src, "%.*s", (int)(colon - marker), marker);
    snprintf(before, sizeof before, "%s", colon + 1);
  }
  const char *now = current_core(), *env = getenv("OPENBLAS_CORETYPE");
  opf_err e;
  const int rc = opf_blas_decide(&cpu, before[0] ? before : now, NULL,
                                 !strcmp(src, "opperf") ? "auto" : env, &status, &e);
  if (rc || !status.set) /* a marker opperf did not write: report what is loaded */
    opf_blas_decide(&cpu, now, env, "native", &status, &e);
  else if (strcasecmp(status.kernel, now)) {
    snprintf(ran_instead, sizeof ran_instead, "%s", now);
    snprintf(status.kernel, sizeof status.kernel, "%s", now);
  }
  have_status = 1;
}

int cli_blas_setup(const char *request, int exec_ok) {
  const char *marker = getenv(REEXEC_ENV);
  if (marker) {
    restore(marker);
    return EXIT_OK;
  }
  opf_cpu_desc cpu;
  opf_cpu_desc_detect(&cpu);
  opf_err e;
  const char *req = request_or_env(request), *env = getenv("OPENBLAS_CORETYPE");
  if (opf_blas_decide(&cpu, current_core(), env, req, &status, &e))
    return cli_usage_error("%s%s", request ? "--blas-kernel: " : "OPPERF_BLAS_KERNEL: ", e.msg);
  have_status = 1;
  if (!status.set) return EXIT_OK;
  /* Under --backend callgrind valgrind runs the command and hides AVX-512: OpenBLAS's own
   * choice there is the right one. */
  if (!exec_ok || !saved || !n_saved) {
    opf_blas_decide(&cpu, current_core(), env, "native", &status, &e);
    return EXIT_OK;
  }
  char mark[64];
  snprintf(mark, sizeof mark, "%s:%s", opf_blas_source_name(status.source), status.openblas);
  setenv("OPENBLAS_CORETYPE", status.kernel, 1);
  setenv(REEXEC_ENV, mark, 1);
  fflush(NULL);
  execv("/proc/self/exe", saved);
  const int err = errno;
  /* Still this process, with OpenBLAS's original core: say so and go on with it. */
  if (env) setenv("OPENBLAS_CORETYPE", env, 1);
  else unsetenv("OPENBLAS_CORETYPE");
  unsetenv(REEXEC_ENV);
  fprintf(stderr, "opperf: cannot re-execute to load OpenBLAS's %s kernels (%s); keeping %s\n",
          status.kernel, strerror(err), status.openblas);
  opf_blas_decide(&cpu, current_core(), env, "native", &status, &e);
  return EXIT_OK;
}

void cli_blas_context(opf_context *ctx) {
  if (!have_status) return;
  snprintf(ctx->blas_core, sizeof ctx->blas_core, "%s", status.kernel);
  snprintf(ctx->blas_core_source, sizeof ctx->blas_core_source, "%s",
           opf_blas_source_name(status.source));
  snprintf(ctx->blas_core_openblas, sizeof ctx->blas_core_openblas, "%s", status.openblas);
  snprintf(ctx->blas_cpu_family, sizeof ctx->blas_cpu_family, "%s", status.cpu_family);
  opf_blas_note(&status, ctx->blas_core_note, sizeof ctx->blas_core_note);
  if (ran_instead[0]) {
    size_t l = strlen(ctx->blas_core_note);
    snprintf(ctx->blas_core_note + l, sizeof ctx->blas_core_note - l,
             "; OpenBLAS did not take it and ran %s", ran_instead);
  }
}

void cli_blas_mismatch_print(FILE *f) {
  opf_cpu_desc cpu;
  opf_cpu_desc_detect(&cpu);
  opf_blas_decision d;
  opf_err e;
  char line[320];
  if (opf_blas_decide(&cpu, current_core(), getenv("OPENBLAS_CORETYPE"), request_or_env(NULL), &d,
                      &e))
    opf_blas_decide(&cpu, current_core(), getenv("OPENBLAS_CORETYPE"), "native", &d, &e);
  if (opf_blas_mismatch_line(&d, line, sizeof line)) fprintf(f, "%s\n", line);
}
