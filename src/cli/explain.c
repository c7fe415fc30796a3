/* explain.c: `opperf events --explain topdown [--pmu MODEL]`: for any model of the top-down
 * table (pmu/topdown.c), whether or not this machine is one, the events `run --events topdown`
 * would open there, their libpfm4 encodings (LIBPFM_ENCODE_INACTIVE semantics: cmd_events sets
 * it before libpfm4 initialises), the formulas, the source and the verdict rule, so a user can
 * plan a run for a CPU they are not on. Unknown model: one line listing the supported ones,
 * exit 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opperf/topdown.h"

/* The model of this machine: the first core PMU libpfm4 detects with a row, else CPUID. */
static const opf_td_model *detected_model(char *why, size_t n) {
  opf_pfm_pmu_desc d[32];
  int np = opf_pfm_pmus(d, 32);
  char cores[128] = "";
  for (int i = 0; i < np && i < 32; i++) {
    if (!d[i].is_core) continue;
    const opf_td_model *m = opf_td_model_find(d[i].name);
    if (m) return m;
    size_t l = strlen(cores);
    if (l + 40 < sizeof cores) snprintf(cores + l, sizeof cores - l, "%s%.36s", l ? "," : "", d[i].name);
  }
  const opf_td_model *m = cores[0] ? NULL : opf_td_model_find(opf_td_cpuid_model());
  if (m) return m;
  if (cores[0]) snprintf(why, n, "core PMU %s is not in the top-down table", cores);
  else snprintf(why, n, "libpfm4 detects no core PMU for this CPU and CPUID names no model");
  return NULL;
}

int cli_explain_topdown(const char *what, const char *pmu) {
  char list[512];
  opf_td_model_list(list, sizeof list);
  if (strcmp(what, "topdown") != 0)
    return cli_usage_error("events --explain: only 'topdown' can be explained, not '%s'", what);
  const opf_td_model *m = NULL;
  if (pmu) {
    m = opf_td_model_find(pmu);
    if (!m)
      return cli_usage_error("events --explain topdown: no top-down model '%s' (supported: %s)",
                             pmu, list);
  } else {
    char why[256];
    m = detected_model(why, sizeof why);
    if (!m) {
      printf("top-down not available on this machine: %s\n(supported: %s; --pmu MODEL explains "
             "one of them)\n", why, list);
      return EXIT_OK;
    }
  }
  printf("top-down on %s (%s)%s\n", m->pmu, m->cpu, pmu ? "" : ", detected here");
  printf("slots per cycle: ");
  if (m->width > 0) printf("%d\n", m->width);
  else printf("the kernel's caps/slots of the core PMU (PMMIR_EL1.SLOTS), read at run time\n");
  printf("level 1 (%d events, all in ONE group, one privilege level):\n  %s\n", m->n1, m->formula);
  if (m->formula2)
    printf("level 2 (%d more events, in the same group as level 1):\n  %s\n", m->n - m->n1,
           m->formula2);
  if (m->no_level2) printf("  %s\n", m->no_level2);
  printf("source: %s\n", m->source);
  printf("verdict: %s\n\n", opf_td_verdict_rule());
  printf("events (as `opperf run --events topdown` opens them on this model; encodings by "
         "libpfm4%s):\n",
         m->method == OPF_TD_ARM_SLOTS ? " (arm64 build) or the common event number" : "");
  printf("  %-5s %-46s %-58s %s\n", "level", "event", "libpfm4 name", "type:config");
  for (int j = 0; j < m->n; j++) {
    char name[128], enc[128];
    opf_td_event_name(m, j, name, sizeof name);
    opf_td_event_enc(m, j, enc, sizeof enc);
    opf_pmu *p = NULL;
    opf_err err;
    const char *lvl = j < m->n1 ? "1" : "2";
    if (opf_pmu_create(&p, enc, NULL, &err) == OPF_OK && opf_pmu_count(p) == 1) {
      const opf_pmu_event *e = opf_pmu_event_at(p, 0);
      printf("  %-5s %-46s %-58s %u:%#llx\n", lvl, name, e->fstr, (unsigned)e->type,
             (unsigned long long)e->config);
    } else if (m->raw[j]) {
      /* libpfm4 cannot encode it in this build (Arm tables exist only in its arm64 build) */
      printf("  %-5s %-46s %-58s raw %s (libpfm4 here: %s)\n", lvl, name, enc, m->raw[j], err.msg);
    } else {
      printf("  %-5s %-46s %-58s not encoded: %s\n", lvl, name, enc, err.msg);
    }
    opf_pmu_free(p);
  }
  return EXIT_OK;
}
