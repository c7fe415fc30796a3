/* plugin_cli.c: --plugin PATH for run, sweep, list and describe (loads the library through
 * src/plugin.c and prints its one-line error), and --impl LIST over every implementation
 * name: native, unfused (fused operators), materialize (operators with gradient views), the
 * built-in alternatives (OPPERF_IMPL) and those plugins register. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "plugin_loader.h"

int cli_plugin_load(const char *path) {
  opf_err e;
  if (opf_plugin_load(path, &e)) return cli_usage_error("%s", e.msg);
  return 0;
}

int cli_impls_parse(const char *list, unsigned *mask) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", list);
  *mask = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int id = opf_impl_find(t);
    if (!strcmp(t, "all")) {
      *mask |= CLI_IMPLS_ALL;
    } else if (id >= 0) {
      *mask |= 1u << id;
    } else {
      char names[512] = "native, unfused, materialize";
      for (int i = OPF_IMPL_ALT, off = (int)strlen(names); i < opf_impl_count() && off < (int)sizeof names; i++)
        off += snprintf(names + off, sizeof names - (size_t)off, ", %s", opf_impl_name(i));
      return cli_usage_error("unknown implementation '%s' in --impl (use %s or all%s)", t, names,
                             opf_impl_count() > OPF_IMPL_ALT ? "" : "; plugins add theirs with --plugin");
    }
  }
  return 0;
}

unsigned cli_impls_default(void) {
  unsigned m = CLI_IMPLS_DEFAULT; /* not materialize */
  for (int i = OPF_IMPL_ALT; i < opf_impl_count(); i++)
    if (opf_impl_builtin(i)) m &= ~(1u << i);
  return m;
}

unsigned cli_impls_for(const opf_op *op, unsigned mask) {
  unsigned sel = 0;
  for (int i = 0; i < opf_impl_count(); i++)
    if ((mask >> i & 1) && opf_op_has_impl(op, i)) sel |= 1u << i;
  /* None of the requested implementations is one of op's: op's own kernels run. */
  return sel ? sel : 1u << OPF_IMPL_NATIVE;
}
