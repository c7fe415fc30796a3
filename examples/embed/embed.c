/* embed.c: a program that embeds opperf (README.md here). It registers an operator of its own,
 * my_scale (out = 3*x, with a reference), and measures it with opperf's harness, counters and
 * report writers through the run pipeline (opperf/session.h): the same figures and JSON
 * schema as `opperf run`. Build against an installed opperf:
 *   cc embed.c $(pkg-config --cflags --libs opperf) -o embed
 * Usage: embed [OUT.json] (default: the table on stdout). */
#include <stdio.h>
#include <string.h>

#include "opperf/opperf.h"

static int scale_infer(opf_case *c) {
  opf_tensor_set_shape(&c->out[0], c->dtype, c->in[0].ndim, c->in[0].shape);
  return OPF_OK;
}

static int scale_forward(opf_case *c) {
  const float *x = c->in[0].data;
  float *y = c->out[0].data;
  int64_t n = opf_numel(&c->in[0]);
  for (int64_t i = 0; i < n; i++) y[i] = 3.0f * x[i];
  return OPF_OK;
}

static double scale_bytes(const opf_case *c, opf_pass p) {
  (void)p;
  return 2.0 * (double)opf_numel(&c->in[0]) * sizeof(float);
}

static double scale_flops(const opf_case *c, opf_pass p) {
  (void)p;
  return (double)opf_numel(&c->in[0]);
}

static const opf_op my_scale = {
    .abi = OPF_OP_ABI,
    .name = "my_scale",
    .category = "example",
    .summary = "embedding example: out = 3*x",
    .dtypes = OPF_DT_BIT(OPF_F32),
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .lo = -1, .hi = 1}},
    .n_out = 1,
    .out = {"out"},
    .shapes = {{"standard", "x=65536"}, {"small", "x=1000"}},
    .infer = scale_infer,
    .forward = scale_forward,
    .reference = scale_forward, /* so trivial that the kernel is its own reference */
    .flops = scale_flops,
    .bytes = scale_bytes,
};

int main(int argc, char **argv) {
  opf_err err;
  if (opf_op_register(&my_scale, &err)) {
    fprintf(stderr, "embed: %s\n", err.msg);
    return 2;
  }
  opf_settings s;
  opf_settings_default(&s);
  s.min_time = 0.02;
  s.threads = 1;
  opf_session *ses;
  int rc = opf_session_new(&ses, &s, "embed", &err);
  if (!rc) rc = opf_session_add_output(ses, argc > 1 ? OPF_FMT_JSON : OPF_FMT_TABLE, argc > 1 ? argv[1] : NULL, &err);
  if (!rc) rc = opf_session_start(ses, &err);
  if (!rc) rc = opf_session_begin(ses, &err);
  const char *shapes[2] = {"x=65536", "x=1000"};
  for (int i = 0; i < 2 && !rc; i++) {
    opf_case c;
    opf_result r;
    rc = opf_case_init(&c, opf_op_find("my_scale"), OPF_F32, shapes[i], &err);
    if (rc) break;
    opf_session_measure(ses, &c, "custom", OPF_PASS_FWD, &r);
    rc = opf_session_record(ses, &r);
    opf_result_release(&r);
  }
  int end = ses ? opf_session_end(ses, !rc, &err) : rc;
  opf_session_free(ses);
  if (rc || end) {
    fprintf(stderr, "embed: %s\n", err.msg);
    return 1;
  }
  return 0;
}
