/* cmd_machine.c: `opperf machine [--refresh] [--time SEC] [--format table|json]`: the machine's
 * roofline ceilings (peak FLOP/s per float dtype, read and triad bandwidth of L1, L2, L3 and
 * DRAM, 1 thread and all threads), read from the cache file when it is valid for this CPU and
 * this opperf, else measured and saved. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opts.h"
#include "opperf/machine.h"
#include "textable.h"

#define MACHINE_DEFAULT_TIME 0.5
#define MACHINE_MAX_TIME 60.0

typedef struct machine_opts {
  int refresh;
} machine_opts;

static const cli_opt machine_table[] = {
    {"refresh", 'r', NULL, CLI_O_FLAG, offsetof(machine_opts, refresh), 1, 0, "measure again even when the cached figures are valid"},
    {"time", 't', "SEC", CLI_O_CUSTOM, 0, 0, 0, "seconds per measurement (8, and 12 cache ones of half that),\ndefault 0.5, at most 60"},
    {"format", 'f', "F", CLI_O_CUSTOM, 0, 0, 0, "table (default) or json"},
    {"help", 'h', NULL, CLI_O_HELP, 0, 0, 0, "this text"},
};

static const cli_cmd_opts machine_cmd = {
    "machine", "usage: opperf machine [--refresh] [--time SEC] [--format table|json]",
    "Shows this machine's roofline ceilings: peak FLOP/s for float32 and float64 (an FMA\n"
    "kernel on the widest vector ISA the CPU has) and the bandwidth of each memory level\n"
    "(the cache-aware roofline): L1, L2 and L3 (as sysfs lists them; each thread streams\n"
    "half of its share of one instance) and DRAM (arrays of at least 4x the last-level\n"
    "cache and 256 MiB), each with a read-only kernel (8 bytes per element) and the STREAM\n"
    "triad (3 x 8 bytes per element), on 1 thread and on all threads, plus the ridge points\n"
    "(FLOP/byte where compute meets DRAM bandwidth). `opperf run` places each case against\n"
    "the level its working set fits in. The figures are cached in $OPPERF_MACHINE_FILE,\n"
    "else $XDG_CACHE_HOME/opperf/machine.json (~/.cache/opperf/machine.json) and measured\n"
    "again when that file is missing, malformed, from another CPU or from an older opperf.",
    machine_table, (int)(sizeof machine_table / sizeof machine_table[0]), ""};

static double ridge(const opf_machine *m, int dt, int t) {
  return m->bandwidth[t] > 0 ? m->peak_flops[dt][t] / m->bandwidth[t] : 0;
}

static void print_table(const opf_machine *m, const char *path, const char *source) {
  opf_textable *t = opf_textable_new(3);
  if (!t) return;
  char all[32];
  snprintf(all, sizeof all, "%d threads", m->threads_all);
  opf_textable_header(t, 0, "ceiling", 0);
  opf_textable_header(t, 1, "1 thread", 1);
  opf_textable_header(t, 2, all, 1);
  static const char *names[2] = {"float32", "float64"};
  for (int dt = 0; dt < 2; dt++) {
    opf_textable_row(t);
    opf_textable_cell(t, 0, "%s peak", names[dt]);
    for (int k = 0; k < 2; k++) opf_textable_cell(t, 1 + k, "%.1f GFLOP/s", m->peak_flops[dt][k] / 1e9);
  }
  for (int l = 0; l < m->n_levels; l++) {
    const opf_mem_level *lv = &m->levels[l];
    char size[32] = "";
    if (lv->size) snprintf(size, sizeof size, " (%llu KiB)", (unsigned long long)(lv->size >> 10));
    for (int kind = 0; kind < 2; kind++) {
      const double *bw = kind ? lv->triad_bw : lv->read_bw;
      opf_textable_row(t);
      opf_textable_cell(t, 0, "%s%s %s", lv->name, size, kind ? "triad" : "read");
      for (int k = 0; k < 2; k++) opf_textable_cell(t, 1 + k, "%.1f GB/s", bw[k] / 1e9);
    }
  }
  for (int dt = 0; dt < 2; dt++) {
    opf_textable_row(t);
    opf_textable_cell(t, 0, "%s ridge point", names[dt]);
    for (int k = 0; k < 2; k++) opf_textable_cell(t, 1 + k, "%.2f FLOP/B", ridge(m, dt, k));
  }
  opf_textable_print(t, stdout, 0);
  opf_textable_free(t);
  printf("\nCPU:      %s (%d CPUs online)\n"
         "ISA:      %s (FMA kernel)\n"
         "measured: %s (%s)\n"
         "file:     %s\n"
         "GB = 1e9 bytes; triad traffic = 3 x 8 bytes per element (STREAM; write-allocate not "
         "counted); read = 8 bytes per element;\n"
         "caches: each thread streams half of its share of one instance; ridge points use DRAM triad.\n",
         m->cpu_model, m->cpus, m->isa, m->timestamp, source, path);
  cli_blas_mismatch_print(stdout); /* OpenBLAS below this CPU's kernels (src/cli/blas.c) */
}

static int print_json(const opf_machine *m, const char *path, const char *source) {
  cJSON *root = cJSON_CreateObject();
  if (!root) return -1;
  cJSON_AddStringToObject(root, "cpu_model", m->cpu_model);
  cJSON_AddNumberToObject(root, "cpus", m->cpus);
  cJSON_AddNumberToObject(root, "threads_all", m->threads_all);
  cJSON_AddStringToObject(root, "isa", m->isa);
  cJSON_AddStringToObject(root, "timestamp", m->timestamp);
  cJSON_AddStringToObject(root, "source", source);
  cJSON_AddStringToObject(root, "path", path);
  cJSON *pf = cJSON_AddObjectToObject(root, "peak_flops");
  cJSON *rp = cJSON_AddObjectToObject(root, "ridge_points");
  static const char *names[2] = {"float32", "float64"};
  for (int dt = 0; dt < 2; dt++) {
    double r[2] = {ridge(m, dt, 0), ridge(m, dt, 1)};
    cJSON_AddItemToObject(pf, names[dt], cJSON_CreateDoubleArray(m->peak_flops[dt], 2));
    cJSON_AddItemToObject(rp, names[dt], cJSON_CreateDoubleArray(r, 2));
  }
  cJSON_AddItemToObject(root, "bandwidth", cJSON_CreateDoubleArray(m->bandwidth, 2));
  cJSON *lv = cJSON_AddArrayToObject(root, "levels");
  for (int l = 0; l < m->n_levels; l++) {
    const opf_mem_level *v = &m->levels[l];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", v->name);
    cJSON_AddNumberToObject(o, "size_bytes", (double)v->size);
    cJSON_AddNumberToObject(o, "shared_by_cpus", v->sharing);
    cJSON_AddItemToObject(o, "working_set_bytes", cJSON_CreateDoubleArray(v->ws, 2));
    cJSON_AddItemToObject(o, "read", cJSON_CreateDoubleArray(v->read_bw, 2));
    cJSON_AddItemToObject(o, "triad", cJSON_CreateDoubleArray(v->triad_bw, 2));
    cJSON_AddItemToArray(lv, o);
  }
  cJSON_AddStringToObject(root, "units",
                          "FLOP/s, bytes/s, FLOP/byte; arrays are [1 thread, all threads]");
  char *s = cJSON_Print(root);
  cJSON_Delete(root);
  if (!s) return -1;
  puts(s);
  cJSON_free(s);
  return 0;
}

int cmd_machine(int argc, char **argv) {
  machine_opts mo = {0};
  int json = 0, ch;
  double seconds = MACHINE_DEFAULT_TIME;
  const char *arg;
  optind = 1;
  while ((ch = cli_opts_next(&machine_cmd, argc, argv, &mo, &arg)) > 0) {
    if (ch == 't') {
      if (!cli_parse_double(arg, &seconds) || !isfinite(seconds) || seconds <= 0 || seconds > MACHINE_MAX_TIME)
        return cli_usage_error("machine: --time takes seconds in (0, %.0f], not '%s'", MACHINE_MAX_TIME, arg);
    } else if (!strcmp(arg, "table")) {
      json = 0;
    } else if (!strcmp(arg, "json")) {
      json = 1;
    } else {
      return cli_usage_error("machine: unknown format '%s' (table or json)", arg);
    }
  }
  if (ch == CLI_OPT_HELP_DONE) return EXIT_OK;
  if (ch < 0) return EXIT_USAGE;
  int refresh = mo.refresh;
  if (optind < argc) return cli_usage_error("machine: unexpected argument '%s'", argv[optind]);

  char path[4096];
  if (!opf_machine_path(path, sizeof path))
    return cli_usage_error("machine: no place for the cache file (set OPPERF_MACHINE_FILE or HOME)");
  opf_machine m;
  opf_err err = {0};
  const char *source = "cached";
  int rc = refresh ? OPF_ENOTFOUND : opf_machine_load(&m, path, &err);
  int save_rc = OPF_OK;
  opf_err save_err = {0};
  if (rc != OPF_OK) {
    if (!refresh && rc != OPF_ENOTFOUND) {
      /* We are about to do what the message advises: drop the advice. */
      char *advice = strstr(err.msg, "; run opperf machine");
      if (advice) *advice = '\0';
      fprintf(stderr, "opperf: ignoring the cached figures: %s\n", err.msg);
    }
    if (isatty(STDERR_FILENO))
      fprintf(stderr, "measuring this machine (about %.0f s)...\n", ceil(14 * seconds + 0.5));
    rc = opf_machine_measure(&m, seconds, &err);
    if (rc != OPF_OK) return cli_usage_error("%s", err.msg), cli_status(rc);
    source = "measured now";
    save_rc = opf_machine_save(&m, path, &save_err);
  }
  if (json ? print_json(&m, path, source) : (print_table(&m, path, source), 0))
    return cli_usage_error("out of memory"), EXIT_FAILED;
  fflush(stdout);
  if (save_rc != OPF_OK) return cli_usage_error("%s", save_err.msg), cli_status(save_rc);
  return EXIT_OK;
}
