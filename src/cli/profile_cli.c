/* profile_cli.c (CLI): the --profile options of `opperf run` and the glue between the command,
 * the sampling profiler (src/profile.c) and the --profile-folded file. In an isolated run each
 * case's process profiles itself and its results carry the profile back through the pipe. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_cli.h"

int cli_profile_arg(cli_profile *cp, int which, const char *arg) {
  long long v;
  cp->on = 1;
  switch (which) {
  case 0: break;
  case 1:
    if (!*arg) return cli_usage_error("--profile-folded needs a file name");
    cp->folded_path = arg;
    cp->o.folded = 1;
    break;
  case 2:
    if (!cli_parse_int(arg, &v) || v < 1 || v > OPF_PROFILE_MAX_FUNCS)
      return cli_usage_error("--profile-top needs a count between 1 and %d, not '%s'", OPF_PROFILE_MAX_FUNCS, arg);
    cp->o.top = (int)v;
    break;
  case 3:
    if (!cli_parse_int(arg, &v) || v < 1 || v > 100000)
      return cli_usage_error("--profile-freq needs a rate between 1 and 100000 Hz, not '%s'", arg);
    cp->o.hz = (int)v;
    break;
  default:
    if (strcmp(arg, "cpu-clock") && strcmp(arg, "cycles"))
      return cli_usage_error("--profile-event must be cpu-clock or cycles, not '%s'", arg);
    cp->o.event = arg;
    break;
  }
  return 0;
}

int cli_profile_setup(cli_profile *cp, cli_region *reg) {
  if (!cp->on) return 0;
  opf_err e;
  if (opf_profile_open(&cp->p, &cp->o, &e)) return cli_usage_error("--profile: %s", e.msg);
  opf_region_hooks h = opf_profile_hooks(cp->p);
  if (opf_hook_chain_add(&reg->chain, &h)) {
    opf_profile_close(cp->p);
    cp->p = NULL;
    return cli_usage_error("--profile: too many measured-region consumers at once");
  }
  return 0;
}

void cli_profile_attach(cli_profile *cp, opf_result *r) {
  opf_err e;
  if (cp->p && opf_profile_attach(cp->p, r, &e))
    fprintf(stderr, "opperf: warning: --profile: %s\n", e.msg);
}

void cli_profile_collect(cli_profile *cp, const opf_result *r) {
  if (!cp->folded_path || !r->folded) return;
  size_t n = cp->folded_len + r->folded_len + 1;
  char *b = realloc(cp->folded, n);
  if (!b) {
    cp->lost_folded = 1;
    return;
  }
  memcpy(b + cp->folded_len, r->folded, r->folded_len);
  cp->folded = b;
  cp->folded_len += r->folded_len;
  b[cp->folded_len] = '\0';
}

int cli_profile_finish(cli_profile *cp, int commit) {
  int rc = 0;
  if (commit && cp->folded_path) {
    opf_err e;
    if (cp->lost_folded) rc = cli_usage_error("--profile-folded: out of memory collecting the stacks");
    else if (opf_write_atomic(cp->folded_path, cp->folded ? cp->folded : "", cp->folded_len, &e))
      rc = cli_usage_error("--profile-folded: %s", e.msg);
  }
  free(cp->folded);
  cp->folded = NULL;
  opf_profile_close(cp->p);
  cp->p = NULL;
  return rc;
}
