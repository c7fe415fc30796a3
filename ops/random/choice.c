/* choice.c: multinomial (sampled category indices per row of probabilities) and shuffle (a
 * random permutation of x's rows). multinomial inverts each row's CDF: with many samples per
 * row a guide table (Chen and Asau) starts the search at the right bucket, so a sample costs
 * O(1) and no mispredicted branch; otherwise a branch-free count or bisection. Each finds
 * exactly the index the reference's linear scan finds. shuffle is Fisher-Yates on
 * counter-based draws (vectorised), then a threaded gather of whole rows. */
#include "random/rand_common.h"

/* Uniforms of elements [k0, k0 + n), draw 0, into u. */
OPF_VEC static void ch_uniforms(uint64_t key, int64_t k0, int64_t n, double *restrict u) {
  for (int64_t i = 0; i < n; i++) u[i] = rc_u01(rc_bits(key, k0 + i, 0));
}

static double ch_get(const opf_tensor *t, int64_t i) {
  return t->dtype == OPF_F32 ? (double)((const float *)t->data)[i] : ((const double *)t->data)[i];
}

/* ---- multinomial: params num_samples, seed ---- */
enum { MN_P_N = 0 };

/* How a row's CDF is searched: a branch-free count for a handful of categories, a guide table
 * when the row has many samples to amortise it over, branch-free bisection otherwise. */
enum { MN_SCAN, MN_GUIDE, MN_BISECT };
#define MN_SCAN_MAX 16

typedef struct {
  int64_t K, ns;
  int mode;
  double *cdf;    /* running sums of the row, in order (exactly the reference's sums) */
  int64_t *guide; /* MN_GUIDE: guide[g] = first j with cdf[j] > g * total / K (g < K; one
                   * more entry for the histogram that builds it) */
} mn_table;

static void mn_build(mn_table *t, opf_dtype dt, const void *row) {
  const int64_t K = t->K;
  double s = 0;
  if (dt == OPF_F32)
    for (int64_t j = 0; j < K; j++) t->cdf[j] = s += ((const float *)row)[j];
  else
    for (int64_t j = 0; j < K; j++) t->cdf[j] = s += ((const double *)row)[j];
  if (t->mode != MN_GUIDE) return;
  /* guide[g] = #{j < K-1 : cdf[j]*K/total <= g}, the first j above bucket g's start, as the
   * prefix sum of a histogram of ceil(cdf[j]*K/total): no data-dependent branches */
  int64_t *h = t->guide;
  memset(h, 0, (size_t)(K + 1) * sizeof *h);
  if (!(s > 0)) { /* all-zero row: every sample is the last index */
    for (int64_t g = 0; g < K; g++) h[g] = K - 1;
    return;
  }
  const double scale = (double)K / s;
  for (int64_t j = 0; j < K - 1; j++) {
    double lim = t->cdf[j] * scale, c = (double)(int64_t)lim;
    int64_t e = (int64_t)c + (lim > c);
    h[e < K ? e : K]++;
  }
  for (int64_t g = 1; g < K; g++) h[g] += h[g - 1];
}

/* The sample for uniform u: the first j with u*total < cdf[j] (the last index if none). */
static inline int64_t mn_find(const mn_table *t, double u) {
  const double *cdf = t->cdf, x = u * cdf[t->K - 1];
  const int64_t last = t->K - 1;
  int64_t j = 0;
  if (t->mode == MN_SCAN) {
    for (int64_t i = 0; i < last; i++) j += x >= cdf[i];
  } else if (t->mode == MN_GUIDE) {
    /* the bucket's start is at or just before the answer: two branch-free steps settle almost
     * every sample; the loops catch the rest, and rounding of the bucket in either direction */
    j = t->guide[(int64_t)(u * (double)t->K)];
    j += (j < last) & (x >= cdf[j]);
    j += (j < last) & (x >= cdf[j]);
    while (j < last && x >= cdf[j]) j++;
    while (j > 0 && x < cdf[j - 1]) j--;
  } else {
    int64_t step = 1;
    while (step * 2 <= last) step *= 2;
    for (; step; step >>= 1) { /* j = how many of cdf[0..last) are <= x */
      int64_t p = j + step <= last ? j + step - 1 : last - 1;
      j += (j + step <= last && cdf[p] <= x) ? step : 0;
    }
  }
  return j;
}

static void mn_sample(const mn_table *t, uint64_t key, int64_t k0, int64_t n, int64_t *out) {
  double u[256];
  for (int64_t b = 0; b < n; b += 256) {
    int64_t m = n - b < 256 ? n - b : 256;
    ch_uniforms(key, k0 + b, m, u);
    for (int64_t i = 0; i < m; i++) out[b + i] = mn_find(t, u[i]);
  }
}

typedef struct {
  const opf_case *c;
  uint64_t key;
  int64_t K, ns;
  mn_table *one; /* few rows: the current row's table, shared by the threads */
  int64_t row;
  int nomem;
} mn_ctx;

static int mn_alloc(mn_table *t, int64_t K, int64_t ns) {
  t->K = K;
  t->mode = K <= MN_SCAN_MAX ? MN_SCAN : ns * 4 >= K ? MN_GUIDE : MN_BISECT;
  t->cdf = opf_alloc((size_t)K * sizeof(double) + (t->mode == MN_GUIDE ? (size_t)(K + 1) * sizeof(int64_t) : 0));
  t->guide = t->cdf ? (int64_t *)(t->cdf + K) : NULL;
  return t->cdf ? OPF_OK : OPF_ENOMEM;
}

/* Many rows: each thread builds its rows' tables in a private buffer and samples them. */
static void mn_rows(int64_t lo, int64_t hi, void *p) {
  mn_ctx *m = p;
  mn_table t;
  if (mn_alloc(&t, m->K, m->ns)) {
    m->nomem = 1;
    return;
  }
  const size_t es = opf_dtype_size(m->c->dtype);
  for (int64_t r = lo; r < hi; r++) {
    mn_build(&t, m->c->dtype, (const char *)m->c->in[0].data + (size_t)(r * m->K) * es);
    mn_sample(&t, m->key, r * m->ns, m->ns, (int64_t *)m->c->out[0].data + r * m->ns);
  }
  opf_free(t.cdf);
}

/* Few rows: one table per row, its samples shared over the threads. */
static void mn_cols(int64_t lo, int64_t hi, void *p) {
  mn_ctx *m = p;
  int64_t k0 = m->row * m->ns + lo;
  mn_sample(m->one, m->key, k0, hi - lo, (int64_t *)m->c->out[0].data + k0);
}

static int mn_infer(opf_case *c) {
  const opf_tensor *pr = &c->in[0];
  char s[96];
  int rc = cr_need_input(c, 0);
  if (rc) return rc;
  if (pr->ndim < 1 || pr->ndim > 2 || pr->shape[pr->ndim - 1] < 1)
    return opf_case_error(c, OPF_EINVAL, "probs %s must be 1-D or 2-D (rows x categories) with "
                          "at least one category", opf_shape_str(pr, s, sizeof s));
  int64_t shape[2] = {pr->shape[0], (int64_t)c->p[MN_P_N]};
  if (pr->ndim == 1) shape[0] = shape[1];
  opf_set_out(c, 0, OPF_I64, pr->ndim, shape);
  return OPF_OK;
}

static int mn_forward(opf_case *c) {
  const opf_tensor *pr = &c->in[0];
  mn_ctx m = {c, rc_key(c->p[RC_P_SEED]), pr->shape[pr->ndim - 1], (int64_t)c->p[MN_P_N], NULL, 0, 0};
  int64_t rows = pr->ndim == 2 ? pr->shape[0] : 1;
  if (rows >= 4 * (int64_t)omp_get_max_threads()) {
    int64_t per = m.K + m.ns;
    opf_parallel_range(rows, OPF_PAR_MIN / (per ? per : 1) + 1, mn_rows, &m);
  } else {
    mn_table t;
    if (mn_alloc(&t, m.K, m.ns)) m.nomem = 1;
    m.one = &t;
    const size_t es = opf_dtype_size(c->dtype);
    for (m.row = 0; m.row < rows && !m.nomem; m.row++) {
      mn_build(&t, c->dtype, (const char *)pr->data + (size_t)(m.row * m.K) * es);
      opf_parallel_range(m.ns, RC_PAR_MIN, mn_cols, &m);
    }
    opf_free(t.cdf);
  }
  if (m.nomem) return opf_case_error(c, OPF_ENOMEM, "multinomial: cannot allocate the CDF of %lld categories",
                                     (long long)m.K);
  return OPF_OK;
}

/* Reference: the row's total, then a linear scan of the running sum. */
static int mn_reference(opf_case *c) {
  const opf_tensor *pr = &c->in[0];
  int64_t K = pr->shape[pr->ndim - 1], ns = (int64_t)c->p[MN_P_N];
  int64_t rows = pr->ndim == 2 ? pr->shape[0] : 1;
  opf_rng r;
  opf_rng_init(&r, (uint64_t)c->p[RC_P_SEED], RC_STREAM);
  for (int64_t row = 0; row < rows; row++) {
    double total = 0;
    for (int64_t j = 0; j < K; j++) total += ch_get(pr, row * K + j);
    for (int64_t s = 0; s < ns; s++) {
      double x = rc_u01(rc_draw(&r, row * ns + s, 0)) * total, run = 0;
      int64_t j = 0;
      for (; j < K - 1; j++) {
        run += ch_get(pr, row * K + j);
        if (x < run) break;
      }
      ((int64_t *)c->out[0].data)[row * ns + s] = j;
    }
  }
  return OPF_OK;
}

/* Models: a prefix sum over the probabilities plus one "flop" per sample; traffic: probs read,
 * indices written. */
static double mn_flops(const opf_case *c, opf_pass p) {
  return cr_fwd_only(p, (double)opf_numel(&c->in[0]) + (double)opf_numel(&c->out[0]));
}
static double mn_bytes(const opf_case *c, opf_pass p) {
  return cr_fwd_only(p, cr_tbytes(&c->in[0]) + cr_tbytes(&c->out[0]));
}

OPPERF_OP(multinomial) = {
    .abi = OPF_OP_ABI,
    .name = "multinomial",
    .category = "random",
    .summary = "num_samples category indices per row of (unnormalised) probabilities, with "
               "replacement (int64 output)",
    .dtypes = OPF_DT_FLOAT,
    .n_in = 1,
    .in = {{.name = "probs", .dtype = OPF_DT_CASE, .lo = 0, .hi = 1,
            .help = "rows x categories of non-negative weights"}},
    .n_out = 1,
    .out = {"idx"},
    .n_params = 2,
    .params = {{.name = "num_samples", .type = OPF_P_INT, .def = 1024, .min = 0, .max = 1e12,
                .help = "samples per row"},
               RC_SEED_PARAM},
    .shapes = {{"standard", "probs=1024x1024 num_samples=1024"},
               {"skewed", "probs=1x100000 num_samples=100000"},
               {"skewed", "probs=100000x10 num_samples=10"},
               {"skewed", "probs=10x100000 num_samples=10"},
               {"small", "probs=16x16 num_samples=16"},
               {"small", "probs=1x64 num_samples=100"},
               {"small", "probs=37x3 num_samples=5"},
               {"small", "probs=5 num_samples=7"},
               {"small", "probs=3x1 num_samples=4"},
               {"test", "probs=301x517 num_samples=301"},
               {"test", "probs=3x70001 num_samples=20000"},
               {"large", "probs=8192x8192 num_samples=8192"}},
    .infer = mn_infer,
    .forward = mn_forward,
    .reference = mn_reference,
    .flops = mn_flops,
    .bytes = mn_bytes,
};

/* ---- shuffle: param seed. Row i (from the last down) swaps with row j_i = floor(u_i * (i+1)),
 * u_i from 32 bits of element i's draw (multiply-shift), so R must stay below 2^32. ---- */
enum { SH_P_SEED = 0 };

OPF_VEC static void sh_draws(uint64_t key, int64_t n, int64_t *restrict j) {
  for (int64_t i = 0; i < n; i++) j[i] = (int64_t)(((rc_bits(key, i, 0) >> 32) * (uint64_t)(i + 1)) >> 32);
}

static int64_t sh_rows(const opf_tensor *x) { return x->ndim ? x->shape[0] : 1; }

typedef struct {
  const char *x;
  char *y;
  const int64_t *perm;
  size_t rowb; /* bytes per row */
} sh_ctx;

#define SH_GATHER(T)                                                                          \
  OPF_VEC static void sh_gather_##T(T *restrict y, const T *restrict x,                       \
                                    const int64_t *restrict perm, int64_t n) {                \
    for (int64_t i = 0; i < n; i++) y[i] = x[perm[i]];                                        \
  }
SH_GATHER(uint32_t)
SH_GATHER(uint64_t)

static void sh_range(int64_t lo, int64_t hi, void *p) {
  const sh_ctx *s = p;
  if (s->rowb == 4) sh_gather_uint32_t((uint32_t *)s->y + lo, (const uint32_t *)s->x, s->perm + lo, hi - lo);
  else if (s->rowb == 8) sh_gather_uint64_t((uint64_t *)s->y + lo, (const uint64_t *)s->x, s->perm + lo, hi - lo);
  else
    for (int64_t r = lo; r < hi; r++) memcpy(s->y + (size_t)r * s->rowb, s->x + (size_t)s->perm[r] * s->rowb, s->rowb);
}

static int sh_infer(opf_case *c) {
  const opf_tensor *x = &c->in[0];
  char s[96];
  int rc = cr_need_input(c, 0);
  if (rc) return rc;
  if (x->ndim < 1 || x->shape[0] >= ((int64_t)1 << 32))
    return opf_case_error(c, OPF_EINVAL, "shuffle permutes the rows (dim 0) of x %s: it needs "
                          "1 to 2^32-1 rows", opf_shape_str(x, s, sizeof s));
  opf_set_out(c, 0, c->dtype, x->ndim, x->shape);
  c->ws_bytes = (size_t)x->shape[0] * sizeof(int64_t) * 2; /* draws and the permutation */
  return OPF_OK;
}

static int sh_forward(opf_case *c) {
  const int64_t R = sh_rows(&c->in[0]);
  int64_t *j = c->ws, *perm = j + R;
  sh_draws(rc_key(c->p[SH_P_SEED]), R, j);
  for (int64_t i = 0; i < R; i++) perm[i] = i;
  for (int64_t i = R - 1; i > 0; i--) { /* the serial part: R swaps in cache */
    int64_t t = perm[i];
    perm[i] = perm[j[i]];
    perm[j[i]] = t;
  }
  sh_ctx s = {c->in[0].data, c->out[0].data, perm,
              R ? (size_t)opf_numel(&c->in[0]) / (size_t)R * opf_dtype_size(c->dtype) : 0};
  opf_parallel_range(R, (int64_t)(OPF_PAR_MIN * opf_dtype_size(c->dtype) / (s.rowb ? s.rowb : 1)) + 1,
                     sh_range, &s);
  return OPF_OK;
}

/* Reference: textbook Fisher-Yates on an index array, then a row-by-row copy. */
static int sh_reference(opf_case *c) {
  const int64_t R = sh_rows(&c->in[0]);
  int64_t *perm = opf_alloc((size_t)R * sizeof *perm);
  if (!perm) return opf_case_error(c, OPF_ENOMEM, "shuffle: no memory for %lld rows", (long long)R);
  opf_rng r;
  opf_rng_init(&r, (uint64_t)c->p[SH_P_SEED], RC_STREAM);
  for (int64_t i = 0; i < R; i++) perm[i] = i;
  for (int64_t i = R - 1; i > 0; i--) {
    unsigned __int128 u32 = rc_draw(&r, i, 0) >> 32; /* floor(u * (i+1)), u = u32 / 2^32 */
    int64_t j = (int64_t)(u32 * (uint64_t)(i + 1) / 4294967296u);
    int64_t t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  size_t rowb = R ? (size_t)opf_numel(&c->in[0]) / (size_t)R * opf_dtype_size(c->dtype) : 0;
  for (int64_t i = 0; i < R; i++)
    memcpy((char *)c->out[0].data + (size_t)i * rowb, (const char *)c->in[0].data + (size_t)perm[i] * rowb, rowb);
  opf_free(perm);
  return OPF_OK;
}

/* Models: one draw per row; x read and y written once. */
static double sh_flops(const opf_case *c, opf_pass p) {
  return cr_fwd_only(p, (double)sh_rows(&c->in[0]));
}
static double sh_bytes(const opf_case *c, opf_pass p) {
  return cr_fwd_only(p, 2 * cr_tbytes(&c->in[0]));
}

OPPERF_OP(shuffle) = {
    .abi = OPF_OP_ABI,
    .name = "shuffle",
    .category = "random",
    .summary = "random permutation of the rows (dim 0) of x: Fisher-Yates on counter-based draws",
    .dtypes = OPF_DT_ALL,
    .n_in = 1,
    .in = {{.name = "x", .dtype = OPF_DT_CASE, .lo = -100, .hi = 100, .help = "rows to permute"}},
    .n_out = 1,
    .out = {"y"},
    .n_params = 1,
    .params = {RC_SEED_PARAM},
    .shapes = {{"standard", "x=1024x1024"},
               {"skewed", "x=10000x10"},
               {"skewed", "x=10x10000"},
               {"skewed", "x=10000x1"},
               {"skewed", "x=100000x10"},
               {"small", "x=16x16"},
               {"small", "x=1x64"},
               {"small", "x=37x3"},
               {"small", "x=64"},
               {"small", "x=2x3x4"},
               {"test", "x=301x517"},
               {"test", "x=100003"},
               {"large", "x=8192x8192"},
               {"huge", "x=46341x46341"}},
    .infer = sh_infer,
    .forward = sh_forward,
    .reference = sh_reference,
    .flops = sh_flops,
    .bytes = sh_bytes,
};
