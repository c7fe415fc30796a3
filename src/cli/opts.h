/* opts.h: one declarative option table per command (src/cli/opts.c). A row names an option,
 * its argument, its help text and how it is applied: a generic kind (a flag, a string, a
 * checked list, seconds, a share, an integer in a range) written into a member of the
 * command's options struct, or CLI_O_CUSTOM, handed back to the command's own code by key.
 * The same table gives getopt_long its option array and prints the usage text (-h), so an
 * option cannot be parsed without being documented. */
#ifndef OPPERF_CLI_OPTS_H
#define OPPERF_CLI_OPTS_H

#include <stddef.h>
#include <stdio.h>

typedef enum cli_okind {
  CLI_O_TEXT,     /* not an option: help is a line of the usage text (a heading, a note) */
  CLI_O_CUSTOM,   /* the command applies it (cli_opts_next returns its key) */
  CLI_O_FLAG,     /* int member = lo */
  CLI_O_STR,      /* const char * member = the argument */
  CLI_O_LIST,     /* like STR, after rejecting empty items ("a,,b", "a,") */
  CLI_O_SECONDS,  /* double member: a non-negative number of seconds (at most 1e6) */
  CLI_O_FRACTION, /* double member: a share, "5%" or 0.05 */
  CLI_O_INT,      /* int member in [lo, hi] */
  CLI_O_HELP,     /* -h / --help: print the usage text */
} cli_okind;

typedef struct cli_opt {
  const char *name; /* long name without "--" (NULL for CLI_O_TEXT) */
  int key;          /* a short option character, or an id >= 256; unique in the table */
  const char *arg;  /* the argument's name in the usage ("SEC"); NULL: takes none */
  cli_okind kind;
  size_t off;       /* the member (generic kinds) */
  long lo, hi;      /* CLI_O_INT: the range; CLI_O_FLAG: the value set */
  const char *help; /* "\n" separates continuation lines */
} cli_opt;

typedef struct cli_cmd_opts {
  const char *cmd;       /* "run" (error messages: "run: unknown option ...") */
  const char *synopsis;  /* the "usage: ..." line(s) */
  const char *intro;     /* paragraph after the synopsis ("" for none) */
  const cli_opt *opts;
  int n;
  const char *outro;     /* text after the options ("" for none) */
} cli_cmd_opts;

#define CLI_OPT_USAGE 2      /* cli_opts_next: a usage error, already printed */
#define CLI_OPT_HELP_DONE -3 /* cli_opts_next: -h printed the usage */

/* The next option for the command's own code: its key (CLI_O_CUSTOM rows; *arg = its
 * argument), 0 when the options are done (optind is at the first operand), -CLI_OPT_USAGE on
 * a usage error (printed: unknown option, missing or bad value), CLI_OPT_HELP_DONE after -h.
 * Generic rows are applied to target and not returned. Start with optind = 0 reset by the
 * first call (argv[0] is the command's name). */
int cli_opts_next(const cli_cmd_opts *c, int argc, char **argv, void *target, const char **arg);
/* The usage text: synopsis, intro, the rows (options as "  --name ARG   help", aligned), outro. */
void cli_opts_usage(const cli_cmd_opts *c, FILE *f);

#endif
