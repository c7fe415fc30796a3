/* roofline.c: the cache-aware roofline (Ilic, Pratas and Sousa, "Cache-aware Roofline model",
 * IEEE CAL 2014; the chart Intel Advisor draws). `opperf machine` measures a bandwidth per memory
 * level (src/machine.c); a case is placed against the level its working set fits in, per thread
 * share when threaded, and its attainable time is max(flops / peak, bytes / that level's
 * bandwidth). So "% of the attainable" compares a case in L1 with L1's ceiling, not DRAM's, and
 * stays at or below about 100%. No counters are used: where a PMU counts each level's traffic
 * the placement could follow it, but this is the working-set model only.
 * Library code: no printing. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "opperf/harness.h"
#include "opperf/machine.h"
#include "opperf/svg.h"

/* Below this share of written bytes the read-only kernel's bandwidth is the ceiling
 * (reductions, norms' statistics); above it the triad's (2 reads per write). */
#define READ_ONLY_OUT_SHARE 0.1

static int usable(double v) { return v > 0 && isfinite(v); }

int opf_roofline_level(const opf_machine *m, int threads, double per_thread) {
  if (!m || m->n_levels < 1 || m->n_levels > OPF_MEM_LEVELS) return -1;
  if (threads < 1) threads = 1;
  for (int l = 0; l < m->n_levels - 1; l++) {
    const opf_mem_level *lv = &m->levels[l];
    int share = lv->sharing < 1 ? 1 : threads < lv->sharing ? threads : lv->sharing;
    if (lv->size > 0 && per_thread <= (double)lv->size / share) return l;
  }
  return m->n_levels - 1;
}

int opf_roofline_place(const opf_machine *m, const opf_roofline_in *in, opf_roofline *out) {
  if (!out) return OPF_EINVAL;
  memset(out, 0, sizeof *out);
  out->level = -1;
  if (!m || !in || !usable(in->bytes) || !(in->flops >= 0) || !isfinite(in->flops)) return OPF_EINVAL;
  int threads = in->threads < 1 ? 1 : in->threads, t = threads > 1;
  double ws = usable(in->working_set) ? in->working_set : in->bytes;
  int l = in->cold ? m->n_levels - 1 : opf_roofline_level(m, threads, ws / threads);
  if (l < 0) return OPF_EINVAL;
  const opf_mem_level *lv = &m->levels[l];
  int ro = in->out_share >= 0 && in->out_share < READ_ONLY_OUT_SHARE;
  double bw = ro ? lv->read_bw[t] : lv->triad_bw[t];
  if (!usable(bw)) return OPF_EINVAL;
  double peak = 0, tc = 0, tm = in->bytes / bw;
  if (in->flops > 0 && opf_dtype_is_float(in->dtype)) {
    peak = m->peak_flops[in->dtype][t];
    if (!usable(peak)) return OPF_EINVAL;
    tc = in->flops / peak;
  }
  snprintf(out->level_name, sizeof out->level_name, "%s", lv->name);
  out->level = l;
  out->read_only = ro;
  out->compute_bound = tc > tm;
  out->bandwidth = bw;
  out->peak = peak;
  out->working_set = ws;
  out->per_thread_ws = ws / threads;
  out->time = tc > tm ? tc : tm; /* integer work: the memory side only (no integer peak) */
  out->bound = peak > 0 ? in->flops / out->time : 0;
  return OPF_OK;
}

int opf_roofline_chart(const opf_machine *m, opf_dtype dt, int threads, opf_svg_roof *roofs,
                       char (*labels)[48], char *cap_label, size_t cap_n) {
  if (!m || !roofs || !labels || m->n_levels < 1 || m->n_levels > OPF_MEM_LEVELS) return 0;
  int t = threads > 1, n = 0;
  double peak = opf_dtype_is_float(dt) ? m->peak_flops[dt][t] : 0;
  if (!usable(peak)) peak = 0;
  for (int l = 0; l < m->n_levels; l++) {
    double bw = m->levels[l].triad_bw[t];
    if (!usable(bw)) continue;
    snprintf(labels[n], sizeof labels[n], "%s %.0f GB/s", m->levels[l].name, bw / 1e9);
    roofs[n] = (opf_svg_roof){.label = labels[n], .slope = bw / 1e9, .cap = peak / 1e9};
    n++;
  }
  if (cap_label && cap_n)
    snprintf(cap_label, cap_n, peak > 0 ? "%s peak %.0f GFLOP/s (%s)" : "%s: no compute peak",
             opf_dtype_name(dt), peak / 1e9, t ? "all threads" : "1 thread");
  return n;
}

const char *opf_roofline_label(const opf_roofline *r) {
  return !r || !r->level_name[0] ? "" : r->compute_bound ? "compute" : r->level_name;
}

void opf_roofline_apply(const opf_machine *m, const opf_settings *s, opf_result *r) {
  if (!m || !s || !r) return;
  /* The working set: the bytes model (minimum traffic: every byte the call must touch, once;
   * a getitem or a diag touches a sliver of its input), at most the tensors (an in-place update
   * counts its buffer as read and written, but it is one buffer); a backward pass, whose
   * gradients are not among the tensors, by the model alone. Written: outputs and buffers
   * updated in place; "inplace" entries alias an input and are not counted twice. */
  double in = 0, wr = 0, outb = 0;
  for (int i = 0; i < r->n_tensors; i++) {
    double b = (double)r->tensors[i].bytes;
    if (!strcmp(r->tensors[i].role, "out")) outb += b, wr += b;
    else if (!strcmp(r->tensors[i].role, "inplace")) wr += b;
    else in += b;
  }
  double tens = in + outb;
  int fwd = r->pass == OPF_PASS_FWD && tens > 0;
  opf_roofline_in q = {.dtype = r->dtype, .threads = s->threads, .flops = r->flops, .bytes = r->bytes,
                       .working_set = fwd && tens < r->bytes ? tens : r->bytes,
                       /* other passes write gradients the size of the inputs: triad-like */
                       .out_share = fwd ? wr / tens : -1,
                       .cold = s->cache == OPF_CACHE_COLD};
  if (opf_roofline_place(m, &q, &r->roof) != OPF_OK) return;
  r->roofline_time = r->roof.time;
  r->roofline = r->roof.bound;
}
