/* cmd_events.c: `opperf events [--all] [EVENT|PRESET ...]`: which performance counters work on
 * this machine: the PMUs libpfm4 detects, the presets and their events, and for each preset or
 * event whether it opens and counts here (errno and plain reason when not), ending with a
 * one-line verdict on hardware counters. --all lists every event libpfm4 knows here. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "textable.h"

enum { TYPE_SOFTWARE = 1 }; /* perf_event_attr.type of software events (kernel ABI) */
#define PROBE_MS 2                /* busy time each set is counted over */
#define PROBE_S (PROBE_MS / 1e3)
#define STR_(x) #x
#define STR(x) STR_(x)

/* Work for the probe: strided loads over 4 MiB and data-dependent branches, so cache, TLB
 * and branch-miss events have something to count. */
static void busy(double seconds) {
  size_t n = (size_t)4 << 20;
  unsigned char *buf = malloc(n);
  volatile unsigned long sink = 0;
  unsigned long x = 88172645463325252UL, acc = 0;
  double t0 = opf_now();
  do {
    for (size_t i = 0; buf && i < n; i += 64) {
      buf[i] = (unsigned char)(buf[i] + x);
      acc += buf[(i * 7) % n];
    }
    for (int i = 0; i < 4096; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      if (x & 1) acc += x;
      else acc ^= x >> 3;
    }
  } while (opf_now() - t0 < seconds);
  sink = acc;
  (void)sink;
  free(buf);
}

static int print_event_line(const opf_pfm_event_desc *ev, void *ctx) {
  (void)ctx;
  char desc[160];
  snprintf(desc, sizeof desc, "%s", ev->desc);
  char *nl = strchr(desc, '\n');
  if (nl) *nl = '\0';
  char name[160];
  snprintf(name, sizeof name, "%s::%s", ev->pmu, ev->name);
  printf("  %-48s %s\n", name, desc);
  return 0;
}

static int print_pmus(int all) {
  opf_pfm_pmu_desc d[32];
  int n = opf_pfm_pmus(d, 32);
  if (n < 0) {
    printf("libpfm4: not usable here (%s)\n\n", opf_strerror(n));
    return 0;
  }
  printf("PMUs detected by libpfm4 (%d):\n", n);
  for (int i = 0; i < n && i < 32; i++)
    printf("  %-20s %-40s %4d event%s%s\n", d[i].name, d[i].desc, d[i].n_events,
           d[i].n_events == 1 ? "" : "s", d[i].is_core ? "  (core PMU)" : "");
  printf("\n");
  if (all) {
    printf("events libpfm4 knows for these PMUs (write them as PMU::EVENT[:UMASK]):\n");
    int total = opf_pfm_foreach_event(NULL, print_event_line, NULL);
    printf("%d events\n\n", total > 0 ? total : 0);
  }
  return n;
}

static void print_presets(void) {
  printf("presets:\n");
  for (int k = 0; k < opf_pmu_preset_count(); k++) {
    opf_pmu_preset_info pi;
    if (opf_pmu_preset_at(k, &pi) != OPF_OK) continue;
    printf("  %-8s ", pi.name);
    if (pi.n == 0) {
      printf("%s\n", pi.note);
      continue;
    }
    for (int j = 0; j < pi.n; j++) printf("%s%s", j ? ", " : "", pi.member[j]);
    if (pi.note[0]) printf("  (%s)", pi.note);
    printf("\n");
  }
  printf("\n");
}

/* Distinct events seen, by encoding, for the verdict. */
typedef struct seen {
  int n;
  char key[256][256];
} seen;

static int seen_add(seen *s, const char *key) {
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->key[i], key)) return 0;
  if (s->n < 256) snprintf(s->key[s->n++], sizeof s->key[0], "%s", key);
  return 1;
}

typedef struct tally {
  seen hw;
  int hw_total, hw_open;
  int n_notes;
  char notes[64][200]; /* how each set's hardware counters are read (rdpmc or read()) */
} tally;

static void errno_str(int e, char *buf, size_t n) {
  const char *name = e ? strerrorname_np(e) : NULL;
  if (name)
    snprintf(buf, n, "errno %d %s: ", e, name);
  else if (e)
    snprintf(buf, n, "errno %d: ", e);
  else
    buf[0] = '\0';
}

/* Open one token's set on this thread, count it over the probe, add its rows. */
static void probe_set(opf_textable *t, const char *token, opf_pmu *p, tally *ty) {
  opf_err err;
  int orc = opf_pmu_open(p, &err);
  opf_pmu_snap *a = opf_pmu_snap_new(), *b = opf_pmu_snap_new();
  int live = a && b && orc == OPF_OK && opf_pmu_n_open(p) > 0 && opf_pmu_read(p, a) == OPF_OK;
  const char *note = opf_pmu_rdpmc_note(p);
  if (live && !strstr(note, "no hardware events") && ty->n_notes < 64)
    snprintf(ty->notes[ty->n_notes++], sizeof ty->notes[0], "  %-8.40s %s", token, note + 7);
  if (live && !strstr(note, "no hardware events") && strstr(opf_pmu_group_note(p), "at most") &&
      ty->n_notes < 64)
    snprintf(ty->notes[ty->n_notes++], sizeof ty->notes[0], "  %-8.40s %s", token,
             opf_pmu_group_note(p));
  if (live) {
    busy(PROBE_S);
    live = opf_pmu_read(p, b) == OPF_OK;
  }
  for (size_t i = 0; i < opf_pmu_count(p); i++) {
    const opf_pmu_event *e = opf_pmu_event_at(p, i);
    double v = 0, frac = 0;
    int has = live && opf_pmu_delta(p, i, a, b, &v, &frac);
    char status[48], count[32] = "", tc[48] = "", why[320] = "";
    if (e->status != OPF_EV_COUNTED) {
      snprintf(status, sizeof status, "%s", opf_ev_status_name(e->status));
    } else if (!has) {
      snprintf(status, sizeof status, "%s", opf_ev_status_name(OPF_EV_NOT_COUNTED));
    } else if (frac < 0.999) {
      snprintf(status, sizeof status, "scaled (%.0f%%)", 100.0 * frac);
      snprintf(count, sizeof count, "%.0f", v);
    } else {
      snprintf(status, sizeof status, "counted");
      snprintf(count, sizeof count, "%.0f", v);
    }
    if (e->fstr[0]) snprintf(tc, sizeof tc, "%u:0x%llx", e->type, (unsigned long long)e->config);
    if (e->reason[0]) {
      char en[64];
      errno_str(e->err, en, sizeof en);
      snprintf(why, sizeof why, "%s%s", e->status == OPF_EV_COUNTED ? "" : en, e->reason);
    } else if (orc != OPF_OK) {
      snprintf(why, sizeof why, "%.*s", (int)sizeof why - 1, err.msg);
    }
    opf_textable_row(t);
    opf_textable_cell(t, 0, "%s", token);
    opf_textable_cell(t, 1, "%s", e->name);
    opf_textable_cell(t, 2, "%s", status);
    opf_textable_cell(t, 3, "%s", count);
    opf_textable_cell(t, 4, "%s", tc);
    opf_textable_cell(t, 5, "%s", why);
    opf_textable_cell(t, 6, "%s", e->fstr[0] ? e->fstr : "-");
    opf_textable_cell(t, 7, "%s", e->plm[0] && e->status != OPF_EV_NOT_SUPPORTED ? e->plm : "");
    const char *kn = opf_pmu_kind_note(opf_pmu_kind(e->type, e->config), NULL);
    opf_textable_cell(t, 8, "%s", e->fstr[0] && kn ? kn : "");
    if (e->fstr[0] && e->type != TYPE_SOFTWARE && seen_add(&ty->hw, e->fstr)) {
      ty->hw_total++;
      ty->hw_open += e->status == OPF_EV_COUNTED;
    }
  }
  opf_pmu_snap_free(a);
  opf_pmu_snap_free(b);
  opf_pmu_close(p);
}

/* Opens one event alone on this thread: its status, errno and reason. */
static int probe_one(const char *name, opf_pmu_event *out) {
  opf_pmu *p = NULL;
  opf_err err;
  memset(out, 0, sizeof *out);
  if (opf_pmu_create(&p, name, NULL, &err) != OPF_OK) {
    out->status = OPF_EV_CONFIG_ERROR;
    snprintf(out->reason, sizeof out->reason, "%.*s", (int)sizeof out->reason - 1, err.msg);
    return 0;
  }
  opf_pmu_open(p, &err);
  *out = *opf_pmu_event_at(p, 0);
  opf_pmu_free(p);
  return out->status == OPF_EV_COUNTED;
}

static void verdict(const tally *ty) {
  opf_pmu_event cy, tc;
  int hw = probe_one("cycles", &cy);
  int sw = probe_one("task-clock", &tc);
  if (ty->n_notes) {
    printf("reading the hardware counters of this thread (rdpmc or read()):\n");
    for (int i = 0; i < ty->n_notes; i++) printf("%s\n", ty->notes[i]);
    printf("\n");
  }
  if (hw) {
    if (ty->hw_total)
      printf("hardware counters: available (%d of %d events open)\n", ty->hw_open, ty->hw_total);
    else
      printf("hardware counters: available (cycles opens)\n");
    return;
  }
  char why[256];
  if (cy.err == ENOENT || cy.err == EOPNOTSUPP || cy.err == ENODEV) {
    snprintf(why, sizeof why, "%s", strstr(cy.reason, "no hardware PMU driver")
                                        ? "no hardware PMU driver"
                                        : cy.reason);
  } else {
    snprintf(why, sizeof why, "%s", cy.reason[0] ? cy.reason : "cycles does not open");
  }
  if (sw)
    printf("hardware counters: unavailable here (%s); software events and --backend callgrind "
           "still work\n", why);
  else
    printf("hardware counters: unavailable here (%s); software events too (%s); --backend "
           "callgrind still works\n", why, tc.reason);
}

typedef struct events_opts {
  int all;
  const char *run_set, *explain, *explain_pmu;
} events_opts;

#define M(f) offsetof(events_opts, f)
static const cli_opt events_table[] = {
    {"all", 'a', NULL, CLI_O_FLAG, M(all), 1, 0, "also list every event libpfm4 knows for the detected PMUs"},
    {"events", 'e', "LIST", CLI_O_LIST, M(run_set), 0, 0, "probe LIST as ONE set, exactly as `opperf run --events LIST` opens it\n(same groups, splits and statuses); names given without -e are\nprobed one set each"},
    {NULL, 0, NULL, CLI_O_TEXT, 0, 0, 0, "  EVENT                a libpfm4 or perf(1) name: cycles, perf::PERF_COUNT_HW_CACHE_MISSES,\n                       L1-dcache-load-misses, r003c, skx::UOPS_ISSUED:ANY\n  PRESET               sw, core, cache, tlb, branch, topdown"},
    {"explain", 256, "topdown", CLI_O_STR, M(explain), 0, 0, "the top-down events, encodings and formulas for MODEL (--pmu)\nwhether or not this machine is one"},
    {"pmu", 257, "MODEL", CLI_O_STR, M(explain_pmu), 0, 0, "with --explain: a libpfm4 core PMU name: skl, skx, clx, icl, icx,\nspr, amd64_fam19h_zen4, amd64_fam1ah_zen5, arm_v1, ... (default:\nthis machine's)"},
    {"help", 'h', NULL, CLI_O_HELP, 0, 0, 0, "this text"},
};
#undef M

static const cli_cmd_opts events_cmd = {
    "events",
    "usage: opperf events [--all] [-e LIST] [EVENT|PRESET ...]\n"
    "       opperf events --explain topdown [--pmu MODEL]",
    "Shows which performance counters work on this machine: the PMUs libpfm4 detects,\n"
    "the presets with their events, and for each preset or event (default: every\n"
    "preset) whether it opens and counts here, over a " STR(PROBE_MS) " ms busy loop on this thread,\n"
    "with errno and the plain reason when it does not (no PMU driver, paranoid level,\n"
    "seccomp, fd limit, not supported by this CPU), libpfm4's fully qualified name and\n"
    "perf_event_attr type:config. The last line is the verdict on hardware counters.",
    events_table, (int)(sizeof events_table / sizeof events_table[0]),
    "\nEnvironment: OPPERF_NO_RDPMC=1 never reads counters with rdpmc; OPPERF_RDPMC=1 uses\n"
    "it wherever the kernel allows (default: only where it is faster than read()).\n"};

int cmd_events(int argc, char **argv) {
  events_opts eo = {0};
  const char *arg;
  optind = 1;
  int ch = cli_opts_next(&events_cmd, argc, argv, &eo, &arg);
  if (ch == CLI_OPT_HELP_DONE) return EXIT_OK;
  if (ch != 0) return EXIT_USAGE; /* no custom rows: anything else is an error, printed */
  int all = eo.all;
  const char *run_set = eo.run_set, *explain = eo.explain, *explain_pmu = eo.explain_pmu;
  if (explain_pmu && !explain) return cli_usage_error("events: --pmu goes with --explain topdown");
  if (explain) {
    if (optind < argc || run_set || all)
      return cli_usage_error("events: --explain takes no other names or options");
    /* Encodings of PMUs this CPU lacks: libpfm4 reads this once, at its initialisation, which
     * has not happened yet in this process (nothing above touches the counters). */
    setenv("LIBPFM_ENCODE_INACTIVE", "1", 1);
    return cli_explain_topdown(explain, explain_pmu);
  }
  /* The sets to probe: the tokens given, or every preset. */
  enum { MAX_SETS = 64 };
  const char *tokens[MAX_SETS];
  static char words[MAX_SETS][256];
  int n_tok = 0;
  if (run_set) {
    if (optind < argc) return cli_usage_error("events: give names either with -e or as arguments");
    tokens[n_tok++] = run_set;
  } else if (optind < argc) { /* "sw core" and "sw,core" alike, as --events takes them */
    for (int i = optind; i < argc; i++) {
      const char *a = argv[i];
      while (*a) {
        size_t l = strcspn(a, ",");
        if (l) {
          if (n_tok == MAX_SETS) return cli_usage_error("events: at most %d names", MAX_SETS);
          if (l >= sizeof words[0])
            return cli_usage_error("events: name too long: '%.40s...'", a);
          memcpy(words[n_tok], a, l);
          words[n_tok][l] = '\0';
          tokens[n_tok] = words[n_tok];
          n_tok++;
        }
        a += l + (a[l] == ',');
      }
    }
    if (!n_tok) return cli_usage_error("events: no event or preset name given");
  } else {
    static opf_pmu_preset_info pi[MAX_SETS];
    for (int k = 0; k < opf_pmu_preset_count() && n_tok < MAX_SETS; k++) {
      opf_pmu_preset_at(k, &pi[k]);
      tokens[n_tok++] = pi[k].name;
    }
  }
  opf_pmu *sets[MAX_SETS];
  for (int i = 0; i < n_tok; i++) {
    opf_err err;
    if (opf_pmu_create(&sets[i], tokens[i], NULL, &err) != OPF_OK) {
      for (int j = 0; j < i; j++) opf_pmu_free(sets[j]);
      return cli_usage_error("%s", err.msg); /* "unknown event 'X': <libpfm4 reason>" */
    }
  }

  print_pmus(all);
  print_presets();

  FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
  int par = -99;
  if (f) {
    if (fscanf(f, "%d", &par) != 1) par = -99;
    fclose(f);
  }
  if (par == -99)
    printf("events (perf_event_paranoid unreadable; ");
  else
    printf("events (perf_event_paranoid=%d; ", par);
  printf("opened on this thread, counted over a %.0f ms busy loop):\n", PROBE_S * 1e3);
  opf_textable *t = opf_textable_new(9);
  if (!t) {
    for (int i = 0; i < n_tok; i++) opf_pmu_free(sets[i]);
    return cli_usage_error("out of memory");
  }
  opf_textable_header(t, 0, "set", 0);
  opf_textable_header(t, 1, "event", 0);
  opf_textable_header(t, 2, "status", 0);
  opf_textable_header(t, 3, "count", 1);
  opf_textable_header(t, 4, "type:config", 0);
  opf_textable_header(t, 5, "reason", 0);
  opf_textable_header(t, 6, "libpfm4 name", 0);
  opf_textable_header(t, 7, "privilege", 0);
  opf_textable_header(t, 8, "what it counts here", 0);
  static tally ty;
  memset(&ty, 0, sizeof ty);
  for (int i = 0; i < n_tok; i++) {
    probe_set(t, tokens[i], sets[i], &ty);
    opf_pmu_free(sets[i]);
  }
  opf_textable_print(t, stdout, 0);
  opf_textable_free(t);
  printf("\n");
  verdict(&ty);
  cli_blas_mismatch_print(stdout); /* OpenBLAS below this CPU's kernels (src/cli/blas.c) */
  return EXIT_OK;
}
