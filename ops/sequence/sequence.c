/* sequence.c: MXNet's SequenceMask, SequenceLast and SequenceReverse on data (T, B, ...)
 * (axis=0) or (B, T, ...) (axis=1) with per-sequence lengths (B,): mask the steps past each
 * length with a value, take each sequence's last valid step, reverse each valid prefix. All
 * are data movement in rows of C = prod(trailing dims) elements, so every pass is one threaded
 * loop over rows, each a row copy or a fill, with streaming stores for outputs beyond the LLC. */
#include <math.h>

#include "creation/create_common.h" /* cr_stream_copy, cr_large: streaming stores */

enum { IN_DATA, IN_LEN };
enum { P_USE_LEN, P_AXIS, P_LEN_DTYPE, P_VALUE };
enum { LEN_INT64, LEN_FLOAT };

/* Sequence geometry: row (t, b) of C elements starts at row index t * st + b * sb. */
typedef struct seq_geom {
  int64_t T, B, C, st, sb;
  int axis;
} seq_geom;

static seq_geom seq_geom_of(const opf_case *c) {
  const opf_tensor *x = &c->in[IN_DATA];
  const int axis = (int)c->p[P_AXIS];
  seq_geom g = {.T = x->shape[axis], .B = x->shape[1 - axis], .C = 1, .axis = axis};
  for (int k = 2; k < x->ndim; k++) g.C *= x->shape[k];
  g.st = axis == 0 ? g.B : 1;
  g.sb = axis == 0 ? 1 : g.T;
  return g;
}

/* Length of sequence b as stored (T when use_sequence_length is off). */
static double seq_len_value(const opf_case *c, const seq_geom *g, int64_t b) {
  if (!c->p[P_USE_LEN]) return (double)g->T;
  const opf_tensor *l = &c->in[IN_LEN];
  switch (l->dtype) {
  case OPF_I64: return (double)((const int64_t *)l->data)[b];
  case OPF_F32: return ((const float *)l->data)[b];
  default: return ((const double *)l->data)[b];
  }
}

/* Lengths uniform over the integers [1, T], in the input's dtype (int64 or the case's float). */
static int seq_fill_len(opf_case *c, int i, opf_rng *r) {
  const seq_geom g = seq_geom_of(c);
  opf_tensor *l = &c->in[i];
  for (int64_t b = 0; b < g.B; b++) {
    const int64_t v = 1 + (int64_t)(opf_rng_u64(r) % (uint64_t)g.T);
    if (l->dtype == OPF_I64) ((int64_t *)l->data)[b] = v;
    else if (l->dtype == OPF_F32) ((float *)l->data)[b] = (float)v;
    else ((double *)l->data)[b] = (double)v;
  }
  return OPF_OK;
}

/* ---- infer ---- */

/* kind: SEQ_MASK, SEQ_LAST or SEQ_REVERSE; sets the output and the workspace (lengths as
 * int64, checked once per call). */
enum { SEQ_MASK, SEQ_LAST, SEQ_REVERSE };

static int seq_infer(opf_case *c, int kind) {
  const opf_tensor *x = &c->in[IN_DATA];
  char sx[96], sl[96];
  if (x->ndim < 0) return OPF_OK; /* opf_case_init reports the missing shape */
  if (x->ndim < 2)
    return opf_case_error(c, OPF_EINVAL, "'data' %s must have at least 2 dims (T, B, ...)",
                          opf_shape_str(x, sx, sizeof sx));
  const seq_geom g = seq_geom_of(c);
  if (g.T < 1)
    return opf_case_error(c, OPF_EINVAL, "'data' %s has no time steps on axis %d",
                          opf_shape_str(x, sx, sizeof sx), (int)c->p[P_AXIS]);
  opf_tensor *l = &c->in[IN_LEN];
  l->dtype = c->p[P_LEN_DTYPE] == LEN_INT64 ? OPF_I64 : c->dtype;
  if (c->present[IN_LEN]) {
    if (l->ndim < 0) opf_tensor_set_shape(l, l->dtype, 1, &g.B);
    if (l->ndim != 1 || l->shape[0] != g.B)
      return opf_case_error(c, OPF_EINVAL,
                            "'sequence_length' %s must be (B,) = (%lld) for 'data' %s with axis=%d",
                            opf_shape_str(l, sl, sizeof sl), (long long)g.B,
                            opf_shape_str(x, sx, sizeof sx), (int)c->p[P_AXIS]);
  } else if (c->p[P_USE_LEN]) {
    return opf_case_error(c, OPF_EINVAL,
                          "use_sequence_length=true needs the 'sequence_length' input");
  }
  if (kind == SEQ_LAST) { /* data without its time axis: (B, ...) either way */
    int64_t shape[OPF_MAX_DIMS];
    shape[0] = g.B;
    for (int k = 2; k < x->ndim; k++) shape[k - 1] = x->shape[k];
    opf_set_out(c, 0, c->dtype, x->ndim - 1, shape);
  } else {
    opf_set_out(c, 0, c->dtype, x->ndim, x->shape);
  }
  c->ws_bytes = (size_t)g.B * sizeof(int64_t);
  return OPF_OK;
}

static int seq_mask_infer(opf_case *c) { return seq_infer(c, SEQ_MASK); }
static int seq_last_infer(opf_case *c) { return seq_infer(c, SEQ_LAST); }
static int seq_reverse_infer(opf_case *c) { return seq_infer(c, SEQ_REVERSE); }

/* Lengths into ws as int64, each checked to lie in [lo, T] (MXNet truncates float lengths to
 * an integer; a value outside the range would index outside the data). */
static int seq_lengths(opf_case *c, const seq_geom *g, int64_t lo, int64_t *len) {
  for (int64_t b = 0; b < g->B; b++) {
    const double v = seq_len_value(c, g, b);
    if (!(v >= (double)lo && v <= (double)g->T))
      return opf_case_error(c, OPF_EINVAL, "sequence_length[%lld] = %g is outside [%lld, %lld]",
                            (long long)b, v, (long long)lo, (long long)g->T);
    len[b] = (int64_t)v;
  }
  return OPF_OK;
}

/* ---- the row kernels ---- */

/* Which source row each output row copies (or -1: fill with the value):
 *   ROW_MASK:     row (t, b) <- itself when t < len[b]          (mask fwd, and its bwd on g)
 *   ROW_REVERSE:  row (t, b) <- (len[b]-1-t, b) when t < len[b], else itself  (fwd and bwd)
 *   ROW_GATHER:   output row b <- (len[b]-1, b)                 (last fwd)
 *   ROW_SCATTER:  row (t, b) <- g row b when t == len[b]-1      (last bwd) */
enum { ROW_MASK, ROW_REVERSE, ROW_GATHER, ROW_SCATTER };

typedef struct seq_job {
  seq_geom g;
  int kind;
  const int64_t *len;
  const char *src;
  char *dst;
  size_t es;     /* element size */
  opf_dtype dt;
  double value;  /* fill value */
  int stream;    /* output far larger than the LLC: non-temporal stores */
} seq_job;

/* The partner row of row r = (t, b) (see above; for ROW_GATHER r is b). */
static inline int64_t seq_src_row(const seq_job *j, int64_t r, int64_t t, int64_t b) {
  const seq_geom *g = &j->g;
  const int64_t L = j->len[b];
  switch (j->kind) {
  case ROW_MASK: return t < L ? r : -1;
  case ROW_REVERSE: return t < L ? (L - 1 - t) * g->st + b * g->sb : r;
  case ROW_GATHER: return (L - 1) * g->st + b * g->sb;
  default: return t == L - 1 ? b : -1;
  }
}

OPF_VEC static void seq_fill_f32(float *restrict d, float v, int64_t n) {
  for (int64_t k = 0; k < n; k++) d[k] = v;
}
OPF_VEC static void seq_fill_f64(double *restrict d, double v, int64_t n) {
  for (int64_t k = 0; k < n; k++) d[k] = v;
}

/* Fill n elements at d with the value. */
static void seq_fill(const seq_job *j, void *d, int64_t n) {
  if (j->value == 0) memset(d, 0, (size_t)n * j->es);
  else if (j->dt == OPF_F32) seq_fill_f32(d, (float)j->value, n);
  else seq_fill_f64(d, j->value, n);
}

/* Outputs larger than the LLC (cr_large) are written with streaming stores, which skip the
 * read-for-ownership of every line: best of 4 alternating runs, large float32, 1 thread,
 * sequence_last bwd (nearly all fill) 2.5 ms instead of 6.1, sequence_mask fwd 11.1 instead
 * of 15.5. Streaming fills copy from an L1-resident block holding the value. */
enum { SEQ_PAT = 4096 };

/* Row r of the pass: a copy (or fill) into output row r from seq_src_row, except for a
 * reversal beyond the LLC, which walks the *source* rows in memory order and writes each to its
 * partner row (the map is its own inverse). From DRAM, reading rows in a scattered order
 * leaves every row (4 KB at C = 1024 float32, one page) to a cold start of the prefetchers,
 * while scattered streaming writes cost nothing like that: 8-9 ms instead of 18-30 ms for the
 * large float32 reversal. In cache the scattered writes are the slower side at 2 threads
 * (standard float32: 50 us instead of 21), so there the output is written in order. */
static void seq_rows(int64_t lo, int64_t hi, void *p) {
  const seq_job *j = p;
  const seq_geom *g = &j->g;
  const int64_t C = g->C;
  const size_t rowb = (size_t)C * j->es;
  const int scatter = j->kind == ROW_REVERSE && j->stream, gather = j->kind == ROW_GATHER;
  if (lo >= hi) return; /* also B = 0: no rows, and no division by B below */
  _Alignas(64) unsigned char pat[SEQ_PAT];
  if (j->stream) seq_fill(j, pat, SEQ_PAT / (int64_t)j->es);
  /* (t, b) of row lo, then stepped along with r: rows are in memory order, r = t B + b
   * (axis 0) or b T + t (axis 1); no division per row (C = 1 rows cost little else). */
  int64_t t = gather ? 0 : g->axis ? lo % g->T : lo / g->B;
  int64_t b = gather ? lo : g->axis ? lo / g->T : lo % g->B;
  for (int64_t r = lo; r < hi; r++) {
    const int64_t m = seq_src_row(j, r, t, b), s = scatter ? r : m;
    char *d = j->dst + (size_t)(scatter ? m : r) * rowb;
    if (s >= 0) {
      if (j->stream) cr_stream_copy(d, j->src + (size_t)s * rowb, rowb);
      else memcpy(d, j->src + (size_t)s * rowb, rowb);
    } else if (j->stream) {
      for (size_t off = 0; off < rowb; off += SEQ_PAT)
        cr_stream_copy(d + off, pat, rowb - off < SEQ_PAT ? rowb - off : SEQ_PAT);
    } else {
      seq_fill(j, d, C);
    }
    if (gather) b++;
    else if (g->axis == 0 && ++b == g->B) b = 0, t++;
    else if (g->axis == 1 && ++t == g->T) t = 0, b++;
  }
  if (j->stream) cr_sfence(); /* streaming stores are weakly ordered: publish them */
}

/* Run kind over the output rows: src and dst are the moved tensors, lengths checked to lie in
 * [lo_len, T]. */
static int seq_run(opf_case *c, int kind, const opf_tensor *src, opf_tensor *dst,
                   int64_t lo_len, double value) {
  seq_job j = {.g = seq_geom_of(c), .kind = kind, .len = c->ws, .src = src->data,
               .dst = dst->data, .es = opf_dtype_size(c->dtype), .dt = c->dtype, .value = value,
               .stream = cr_large(dst)};
  int rc = seq_lengths(c, &j.g, lo_len, c->ws);
  if (rc) return rc;
  const int64_t rows = kind == ROW_GATHER ? j.g.B : j.g.T * j.g.B;
  const int64_t min_rows = j.g.C >= OPF_PAR_MIN ? 1 : OPF_PAR_MIN / (j.g.C > 0 ? j.g.C : 1);
  opf_parallel_range(rows, min_rows, seq_rows, &j);
  return OPF_OK;
}

/* ---- references: the definitions, element by element ---- */

static double seq_get(const opf_tensor *t, int64_t i) {
  return t->dtype == OPF_F32 ? ((const float *)t->data)[i] : ((const double *)t->data)[i];
}
static void seq_put(opf_tensor *t, int64_t i, double v) {
  if (t->dtype == OPF_F32) ((float *)t->data)[i] = (float)v;
  else ((double *)t->data)[i] = v;
}

/* out (same shape as data, or (B, C) for last) from the formula of kind at every element. */
static int seq_reference(opf_case *c, int kind) {
  const seq_geom g = seq_geom_of(c);
  for (int64_t b = 0; b < g.B; b++) {
    const int64_t L = (int64_t)seq_len_value(c, &g, b);
    if (L < (kind == SEQ_LAST) || L > g.T)
      return opf_case_error(c, OPF_EINVAL, "sequence_length[%lld] = %lld is out of range",
                            (long long)b, (long long)L);
    for (int64_t t = 0; t < g.T; t++)
      for (int64_t k = 0; k < g.C; k++) {
        const int64_t at = (t * g.st + b * g.sb) * g.C + k;
        if (kind == SEQ_MASK)
          seq_put(&c->out[0], at, t < L ? seq_get(&c->in[IN_DATA], at) : c->p[P_VALUE]);
        else if (kind == SEQ_REVERSE)
          seq_put(&c->out[0], at,
                  seq_get(&c->in[IN_DATA], t < L ? ((L - 1 - t) * g.st + b * g.sb) * g.C + k : at));
        else if (t == L - 1)
          seq_put(&c->out[0], b * g.C + k, seq_get(&c->in[IN_DATA], at));
      }
  }
  return OPF_OK;
}

/* ---- models: data movement, no arithmetic ---- */

static double seq_flops(const opf_case *c, opf_pass p) {
  (void)c, (void)p;
  return 0;
}

/* Bytes of the lengths when they are read. */
static double seq_len_bytes(const opf_case *c) {
  if (!c->p[P_USE_LEN]) return 0;
  return (double)seq_geom_of(c).B * (double)opf_dtype_size(c->in[IN_LEN].dtype);
}

/* ---- sequence_mask ---- */

static int seq_mask_forward(opf_case *c) {
  return seq_run(c, ROW_MASK, &c->in[IN_DATA], &c->out[0], 0, c->p[P_VALUE]);
}
/* d data = g where the step is valid, 0 where it was masked. */
static int seq_mask_backward(opf_case *c) {
  return seq_run(c, ROW_MASK, &c->gout[0], &c->gin[IN_DATA], 0, 0);
}
static int seq_mask_reference(opf_case *c) { return seq_reference(c, SEQ_MASK); }

/* Each pass writes all N elements and reads only the valid rows of its source: with lengths
 * uniform over [1, T] (the generated ones) that is (T + 1) / (2T) of N on average; all of it
 * without sequence lengths. Plus the lengths. */
static double seq_mask_bytes(const opf_case *c, opf_pass p) {
  const seq_geom g = seq_geom_of(c);
  const double n = (double)(g.T * g.B * g.C) * (double)opf_dtype_size(c->dtype);
  const double valid = c->p[P_USE_LEN] ? (double)(g.T + 1) / (2.0 * (double)g.T) : 1;
  const double pass = n + valid * n + seq_len_bytes(c);
  return opf_pass_sum(p, pass, pass);
}

#define SEQ_INPUTS                                                                             \
  {.name = "data", .dtype = OPF_DT_CASE, .flags = OPF_IN_DIFF, .lo = -1, .hi = 1,              \
   .help = "(T, B, ...) with axis=0, (B, T, ...) with axis=1"},                                \
      {.name = "sequence_length", .dtype = OPF_DT_CASE, .flags = OPF_IN_OPTIONAL,              \
       .fill = seq_fill_len,                                                                   \
       .help = "(B,) lengths in [1, T] (int64, or the case dtype with length_dtype=float)"}
#define SEQ_PARAMS                                                                             \
  {.name = "use_sequence_length", .type = OPF_P_BOOL, .def = 1,                                \
   .help = "use the lengths (MXNet's default is false: every sequence has length T)"},         \
      {.name = "axis", .type = OPF_P_INT, .def = 0, .min = 0, .max = 1,                        \
       .help = "time axis: 0 (T, B, ...) or 1 (B, T, ...); MXNet's SequenceReverse has only 0"}, \
      {.name = "length_dtype", .type = OPF_P_ENUM, .def = LEN_INT64, .choices = "int64|float", \
       .help = "dtype of sequence_length: int64, or float (the case dtype, as MXNet passes it)"}
/* Shape sets shared by the three (T=32 B=32 C=512 standard; long and wide batches skewed):
 * an operator lists SEQ_SHAPES_HEAD, its own "small" entries, SEQ_SHAPES_TAIL, then its own. */
#define SEQ_SHAPES_HEAD                                                                        \
  {"standard", "data=32x32x512"}, {"skewed", "data=256x1x512"}, {"skewed", "data=4x256x512"},  \
      {"skewed", "data=32x32x512 axis=1"}, {"small", "data=5x3x4"}, {"small", "data=7x2"},     \
      {"small", "data=4x3x2x3 length_dtype=float"}, {"small", "data=3x5x2 axis=1"},            \
      {"small", "data=1x4x3"}, {"small", "data=4x3x2 use_sequence_length=false"}
#define SEQ_SHAPES_TAIL                                                                        \
  {"test", "data=37x29x67"}, {"test", "data=33x41x37 axis=1 length_dtype=float"},              \
      {"test", "data=3000x40x1"}, {"large", "data=256x128x1024"}

OPPERF_OP(sequence_mask) = {
    .abi = OPF_OP_ABI,
    .name = "sequence_mask",
    .category = "sequence",
    .summary = "MXNet SequenceMask: steps t >= length[b] set to value",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = {SEQ_INPUTS},
    .n_out = 1,
    .out = {"y"},
    .n_params = 4,
    .params = {SEQ_PARAMS,
               {.name = "value", .type = OPF_P_FLOAT, .def = 0, .min = -1e30, .max = 1e30,
                .help = "value of the masked steps"}},
    .shapes = {SEQ_SHAPES_HEAD, {"small", "data=6x2x3 value=-2.5"}, SEQ_SHAPES_TAIL,
               {"test", "data=37x29x67 value=-1e4"}},
    .infer = seq_mask_infer,
    .forward = seq_mask_forward,
    .backward = seq_mask_backward,
    .reference = seq_mask_reference,
    .flops = seq_flops,
    .bytes = seq_mask_bytes,
};

/* ---- sequence_last ---- */

static int seq_last_forward(opf_case *c) {
  return seq_run(c, ROW_GATHER, &c->in[IN_DATA], &c->out[0], 1, 0);
}
/* d data = g at each sequence's last valid step, 0 elsewhere: every row of d data written. */
static int seq_last_backward(opf_case *c) {
  return seq_run(c, ROW_SCATTER, &c->gout[0], &c->gin[IN_DATA], 1, 0);
}
static int seq_last_reference(opf_case *c) { return seq_reference(c, SEQ_LAST); }

/* fwd reads B rows of data and writes the B x C output; bwd reads the B x C gradient and
 * writes all N elements of d data. Plus the lengths, each pass. */
static double seq_last_bytes(const opf_case *c, opf_pass p) {
  const seq_geom g = seq_geom_of(c);
  const double es = (double)opf_dtype_size(c->dtype), bc = (double)(g.B * g.C) * es;
  const double n = (double)(g.T * g.B * g.C) * es, lb = seq_len_bytes(c);
  return opf_pass_sum(p, 2 * bc + lb, bc + n + lb);
}

OPPERF_OP(sequence_last) = {
    .abi = OPF_OP_ABI,
    .name = "sequence_last",
    .category = "sequence",
    .summary = "MXNet SequenceLast: y[b] = data[length[b] - 1, b]",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = {SEQ_INPUTS},
    .n_out = 1,
    .out = {"y"},
    .n_params = 3,
    .params = {SEQ_PARAMS},
    .shapes = {SEQ_SHAPES_HEAD, SEQ_SHAPES_TAIL, {"huge", "data=32x8192x8193"}},
    .infer = seq_last_infer,
    .forward = seq_last_forward,
    .backward = seq_last_backward,
    .reference = seq_last_reference,
    .flops = seq_flops,
    .bytes = seq_last_bytes,
};

/* ---- sequence_reverse ---- */

static int seq_reverse_forward(opf_case *c) {
  return seq_run(c, ROW_REVERSE, &c->in[IN_DATA], &c->out[0], 0, 0);
}
/* The reversal is its own inverse: d data is g reversed the same way. */
static int seq_reverse_backward(opf_case *c) {
  return seq_run(c, ROW_REVERSE, &c->gout[0], &c->gin[IN_DATA], 0, 0);
}
static int seq_reverse_reference(opf_case *c) { return seq_reference(c, SEQ_REVERSE); }

/* Each pass reads and writes all N elements (the padding is copied through), plus lengths. */
static double seq_reverse_bytes(const opf_case *c, opf_pass p) {
  const seq_geom g = seq_geom_of(c);
  const double pass =
      2 * (double)(g.T * g.B * g.C) * (double)opf_dtype_size(c->dtype) + seq_len_bytes(c);
  return opf_pass_sum(p, pass, pass);
}

OPPERF_OP(sequence_reverse) = {
    .abi = OPF_OP_ABI,
    .name = "sequence_reverse",
    .category = "sequence",
    .summary = "MXNet SequenceReverse: the first length[b] steps of each sequence reversed",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 2,
    .in = {SEQ_INPUTS},
    .n_out = 1,
    .out = {"y"},
    .n_params = 3,
    .params = {SEQ_PARAMS},
    .shapes = {SEQ_SHAPES_HEAD, SEQ_SHAPES_TAIL},
    .infer = seq_reverse_infer,
    .forward = seq_reverse_forward,
    .backward = seq_reverse_backward,
    .reference = seq_reverse_reference,
    .flops = seq_flops,
    .bytes = seq_reverse_bytes,
};
