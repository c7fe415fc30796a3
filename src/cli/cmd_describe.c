/* cmd_describe.c: `opperf describe OP`: everything a user needs to write a custom case:
 * inputs (dtype, value range), outputs, params (type, default, range), shape sets, passes. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "opts.h"

static const char *ptype(opf_param_type t) {
  static const char *n[] = {"int", "float", "bool", "enum", "axis", "list"};
  return (unsigned)t <= OPF_P_LIST ? n[t] : "?";
}

static const cli_opt describe_table[] = {
    {"plugin", 256, "LIB.so", CLI_O_CUSTOM, 0, 0, 0, "load a plugin first, so OP may be one of its operators (repeatable)"},
    {"help", 'h', NULL, CLI_O_HELP, 0, 0, 0, "this text"},
};

static const cli_cmd_opts describe_cmd = {
    "describe", "usage: opperf describe [--plugin LIB.so] OP",
    "Shows an operator's inputs, outputs, params, default shape sets, passes and implementations.",
    describe_table, (int)(sizeof describe_table / sizeof describe_table[0]), ""};

int cmd_describe(int argc, char **argv) {
  const char *arg;
  int ch;
  optind = 1;
  while ((ch = cli_opts_next(&describe_cmd, argc, argv, NULL, &arg)) > 0)
    if (cli_plugin_load(arg)) return EXIT_USAGE;
  if (ch == CLI_OPT_HELP_DONE) return EXIT_OK;
  if (ch < 0) return EXIT_USAGE;
  if (argc - optind > 1) return cli_usage_error("describe: expected one operator name (opperf describe OP)");
  const char *name = optind < argc ? argv[optind] : NULL;
  if (!name) return cli_usage_error("describe: expected one operator name (opperf describe OP)");
  const opf_op *op = opf_op_find(name);
  if (!op) return cli_unknown_op(name);
  printf("%s (%s): %s\n\ndtypes:", op->name, op->category, op->summary);
  for (int d = 0; d < OPF_NDTYPES; d++)
    if (op->dtypes & OPF_DT_BIT(d)) printf(" %s", opf_dtype_name((opf_dtype)d));
  printf("\npasses: fwd%s\n\ninputs:\n", op->backward ? ", bwd, both" : " (not differentiable)");
  for (int i = 0; i < op->n_in; i++) {
    const opf_input_desc *in = &op->in[i];
    printf("  %-12s %-8s %s%s", in->name,
           in->dtype == OPF_DT_CASE ? "(dtype)" : opf_dtype_name((opf_dtype)in->dtype),
           in->flags & OPF_IN_DIFF ? "differentiable" : "not differentiable",
           in->flags & OPF_IN_OPTIONAL ? ", optional (NAME=none drops it)" : "");
    if (in->fill) printf(", generated to satisfy its constraints");
    else if (in->lo != in->hi) printf(", values in [%g, %g)", in->lo, in->hi);
    if (in->help) printf("; %s", in->help);
    printf("\n");
  }
  printf("\noutputs:");
  for (int i = 0; i < op->n_out; i++) {
    printf(" %s", op->out[i]);
    if (op->inplace[i]) printf(" (updates %s in place)", op->in[op->inplace[i] - 1].name);
  }
  printf("\n\nparams:%s\n", op->n_params ? "" : " none");
  for (int i = 0; i < op->n_params; i++) {
    const opf_param_desc *p = &op->params[i];
    printf("  %-12s %-5s ", p->name, ptype(p->type));
    if (p->type == OPF_P_ENUM) {
      const char *c = p->choices;
      for (int k = 0; k < (int)p->def && c; k++) {
        c = strchr(c, '|');
        if (c) c++;
      }
      printf("default %.*s, one of %s", c ? (int)strcspn(c, "|") : 0, c ? c : "", p->choices);
    } else if (p->type == OPF_P_BOOL) {
      printf("default %s", p->def ? "true" : "false");
    } else if (p->type == OPF_P_LIST) {
      printf("default %s, values in [%g, %g], e.g. 2,3", p->defs && *p->defs ? p->defs : "none",
             p->min, p->max);
    } else if (p->type == OPF_P_AXIS && p->def == OPF_AXIS_ALL) {
      printf("default all, in [%g, %g] or all", p->min, p->max);
    } else {
      printf("default %g, in [%g, %g]%s", p->def, p->min, p->max,
             p->type == OPF_P_AXIS ? " or all" : "");
    }
    printf("; %s\n", p->help);
  }
  printf("\nshape sets (run with --shapes SET; custom cases with --input NAME=SHAPE --param K=V):\n");
  for (int k = 0; k < OPF_MAX_SETS && op->shapes[k].set; k++)
    printf("  %-9s %s\n", op->shapes[k].set, op->shapes[k].spec);
  printf("\nimplementations (run with --impl LIST):\n  %-11s this operator's kernels\n", "native");
  for (int i = OPF_IMPL_UNFUSED; i < opf_impl_count(); i++) {
    if (!opf_op_has_impl(op, i)) continue;
    const opf_op *k = opf_impl_kernels(op, i);
    printf("  %-11s %s\n", opf_impl_name(i),
           k ? (k->summary ? k->summary : "from a plugin")
           : i == OPF_IMPL_MATERIALIZE ? "the native kernels writing every gradient (native hands views of "
                                         "the output gradient back; bwd and both)"
                                       : "the chain of separate operators");
  }
  return EXIT_OK;
}
