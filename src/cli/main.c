/* main.c: the `opperf` executable: a git-style table of subcommands, --version and help.
 * Each subcommand lives in its own cmd_*.c file; adding one means one row here. */
#include <stdio.h>
#include <string.h>

#include "build_info.h"
#include "git_hash.h"
#include "cli.h"

static const struct {
  const char *name;
  cli_cmd_fn fn;
  const char *summary;
} commands[] = {
    {"list", cmd_list, "list operators (by category)"},
    {"describe", cmd_describe, "show an operator's inputs, params, shape sets and passes"},
    {"run", cmd_run, "benchmark operators: time, counters, memory; table/JSON/CSV/Markdown"},
    {"events", cmd_events, "which performance counters work here (PMUs, presets, statuses)"},
    {"machine", cmd_machine, "measure peak FLOP/s and memory bandwidth (roofline ceilings)"},
    {"compare", cmd_compare, "compare two JSON reports: regressions with a significance test"},
    {"sweep", cmd_sweep, "vary one operator's shapes: time, cycles and misses per element, SVG plot"},
    {"flamegraph", cmd_flamegraph, "fold perf script stacks into an interactive SVG flame graph"},
    {"history", cmd_history, "a results store's runs, one case's trend, change points (--changes)"},
    {"merge", cmd_merge, "join the JSON reports of a run's shards into one report"},
    {"report", cmd_report, "one self-contained HTML page from run/sweep JSON: table, rooflines, trends"},
};

static void usage(FILE *f) {
  fprintf(f, "usage: opperf [--version] [-h] <command> [<args>]\n\n"
             "opperf measures tensor operators one at a time: wall-clock time, perf_event\n"
             "counters and allocator statistics, per shape, dtype and pass.\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\n'opperf <command> -h' shows a command's options; see also opperf(1).\n");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
    printf("opperf %s (git %s, %s, %s)\n", OPPERF_VERSION_STR, OPPERF_GIT_HASH, OPPERF_BUILD_TYPE,
           OPPERF_COMPILER);
    return EXIT_OK;
  }
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    usage(stdout);
    return EXIT_OK;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(cmd, commands[i].name)) return commands[i].fn(argc - 1, argv + 1);
  return cli_usage_error("unknown command '%s' (commands: list, describe, run, sweep, flamegraph, machine, events, compare, history, merge, report; see opperf -h)", cmd);
}
