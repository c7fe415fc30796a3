/* wire.c: the wire format of opf_result (include/opperf/wire.h). A message is a 12-byte header
 * ("OPFW", u16 version, u16 flags = 0, u32 payload length) and a payload of fields, each
 * u16 tag, u32 length, bytes (host byte order: both ends are processes of one run on one
 * machine). Which member a tag is, and how it is sent, comes from one table per struct:
 * strings are sent up to their NUL, numbers as their bytes, owned arrays (samples, counter
 * samples, folded stacks) as their elements with their counts checked, arrays of structs
 * (tensors, counters, profile functions) one element a field: u32 index, then its own fields.
 * A receiver skips tags it does not know, so a field can be added without breaking an older
 * reader; a tag's meaning never changes (add a new tag instead). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/wire.h"

enum kind {
  K_STR,    /* char array: sent up to the NUL, received truncated to the array */
  K_NUM,    /* numbers (or an array of them): exactly their bytes */
  K_STRUCT, /* array of structs (or one): one field per element, index first */
  K_DBL,    /* owned double *, count in an int member */
  K_TEXT,   /* owned char *, length in a size_t member */
  K_SKIP,   /* a member never sent (a pointer into the sender's memory, or set by the parent) */
};

typedef struct wtable wtable;
typedef struct wfield {
  uint16_t tag;
  uint8_t kind;
  size_t off, size;
  const wtable *sub; /* K_STRUCT: the element's table */
  long count_off;    /* K_STRUCT / K_DBL / K_TEXT: offset of the count member; -1: one element */
} wfield;
struct wtable {
  const wfield *f;
  int n;
  size_t size;
};

#define MEM(T, m) offsetof(T, m), sizeof(((T *)0)->m)
#define STR(tag, T, m) {tag, K_STR, MEM(T, m), NULL, -1}
#define NUM(tag, T, m) {tag, K_NUM, MEM(T, m), NULL, -1}
#define SUB(tag, T, m, tab, cnt) {tag, K_STRUCT, MEM(T, m), &tab, cnt}
#define DBL(tag, T, m, cnt) {tag, K_DBL, MEM(T, m), NULL, (long)offsetof(T, cnt)}
#define TXT(tag, T, m, cnt) {tag, K_TEXT, MEM(T, m), NULL, (long)offsetof(T, cnt)}
#define SKIP(T, m) {0, K_SKIP, MEM(T, m), NULL, -1}
#define TABLE(name, T, fields) static const wtable name = {fields, (int)(sizeof fields / sizeof fields[0]), sizeof(T)}

static const wfield stats_f[] = {
    NUM(1, opf_stats, n),      NUM(2, opf_stats, min),    NUM(3, opf_stats, median),
    NUM(4, opf_stats, mean),   NUM(5, opf_stats, p90),    NUM(6, opf_stats, p99),
    NUM(7, opf_stats, max),    NUM(8, opf_stats, stddev), NUM(9, opf_stats, cv),
    NUM(10, opf_stats, mad),   NUM(11, opf_stats, outliers),
};
TABLE(stats_t, opf_stats, stats_f);

static const wfield tensor_f[] = {
    STR(1, opf_tensor_info, name),  STR(2, opf_tensor_info, role), STR(3, opf_tensor_info, shape),
    NUM(4, opf_tensor_info, dtype), NUM(5, opf_tensor_info, bytes),
};
TABLE(tensor_t, opf_tensor_info, tensor_f);

static const wfield event_f[] = {
    STR(1, opf_event_result, name),           STR(2, opf_event_result, kind),
    NUM(3, opf_event_result, status),         NUM(4, opf_event_result, group),
    NUM(5, opf_event_result, err),            STR(6, opf_event_result, reason),
    NUM(7, opf_event_result, has_value),      NUM(8, opf_event_result, per_call),
    NUM(9, opf_event_result, mean_per_call),  NUM(10, opf_event_result, running_pct),
    NUM(11, opf_event_result, n_raw),         NUM(12, opf_event_result, main_per_call),
    NUM(13, opf_event_result, residual),      NUM(14, opf_event_result, n_partial),
    STR(15, opf_event_result, plm),           DBL(16, opf_event_result, raw, n_raw),
};
TABLE(event_t, opf_event_result, event_f);

static const wfield pfunc_f[] = {
    STR(1, opf_profile_func, name), STR(2, opf_profile_func, module), NUM(3, opf_profile_func, self),
    NUM(4, opf_profile_func, total), NUM(5, opf_profile_func, resolved), NUM(6, opf_profile_func, in_lib),
};
TABLE(pfunc_t, opf_profile_func, pfunc_f);

static const wfield profile_f[] = {
    STR(1, opf_profile_summary, event),    NUM(2, opf_profile_summary, hz),
    NUM(3, opf_profile_summary, threads),  NUM(4, opf_profile_summary, samples),
    NUM(5, opf_profile_summary, lost),     NUM(6, opf_profile_summary, throttled),
    NUM(7, opf_profile_summary, unresolved), NUM(8, opf_profile_summary, n_funcs),
    SUB(9, opf_profile_summary, funcs, pfunc_t, offsetof(opf_profile_summary, n_funcs)),
};
TABLE(profile_t, opf_profile_summary, profile_f);

/* Scalars first: a count arrives before the array it counts. */
static const wfield result_f[] = {
    STR(1, opf_result, op),          STR(2, opf_result, category),   STR(3, opf_result, impl),
    STR(4, opf_result, set),         STR(55, opf_result, grad_views),         STR(5, opf_result, spec),       STR(6, opf_result, params),
    NUM(7, opf_result, dtype),       NUM(8, opf_result, pass),       NUM(9, opf_result, status),
    STR(10, opf_result, message),    STR(11, opf_result, saved),     STR(12, opf_result, check),
    NUM(13, opf_result, n_tensors),  NUM(14, opf_result, batch),     NUM(15, opf_result, n_samples),
    NUM(16, opf_result, ci_lo),      NUM(17, opf_result, ci_hi),     STR(18, opf_result, stop),
    NUM(19, opf_result, n_reps),     NUM(20, opf_result, rep_median), NUM(21, opf_result, total_time),
    NUM(22, opf_result, flops),      NUM(23, opf_result, bytes),     NUM(24, opf_result, roofline),
    NUM(25, opf_result, roofline_time), NUM(26, opf_result, setup_bytes), NUM(27, opf_result, setup_allocs),
    NUM(28, opf_result, call_alloc_bytes), NUM(29, opf_result, call_allocs),
    NUM(30, opf_result, peak_live_bytes), NUM(31, opf_result, max_rss_bytes),
    NUM(32, opf_result, minor_faults), NUM(33, opf_result, major_faults),
    NUM(45, opf_result, warmup_s),   NUM(46, opf_result, warmup_calls),
    STR(47, opf_result, ab_vs),      NUM(48, opf_result, ab_rounds),  NUM(49, opf_result, ab_ratio),
    NUM(50, opf_result, ab_lo),      NUM(51, opf_result, ab_hi),      NUM(52, opf_result, ab_round),
    NUM(56, opf_result, sched_ok),   STR(57, opf_result, sched_reason), NUM(58, opf_result, runq_wait_s),
    NUM(59, opf_result, oncpu_s),    NUM(60, opf_result, contention), NUM(61, opf_result, contention_threads),
    NUM(62, opf_result, contended),  NUM(63, opf_result, attempts),   NUM(64, opf_result, attempt_kept),
    NUM(65, opf_result, attempt_contention), NUM(66, opf_result, attempt_median),
    NUM(34, opf_result, n_events),   NUM(35, opf_result, simulated), NUM(36, opf_result, folded_len),
    SUB(37, opf_result, time, stats_t, -1),
    SUB(38, opf_result, tensors, tensor_t, (long)offsetof(opf_result, n_tensors)),
    SUB(39, opf_result, events, event_t, (long)offsetof(opf_result, n_events)),
    SUB(40, opf_result, profile, profile_t, -1),
    DBL(41, opf_result, samples, n_samples), DBL(42, opf_result, cpu_samples, n_samples),
    DBL(43, opf_result, sample_start, n_samples), TXT(44, opf_result, folded, folded_len),
    SKIP(opf_result, peer),
    SKIP(opf_result, roof), /* the roofline placement: the parent's (opf_session_finish_result) */
};
TABLE(result_t, opf_result, result_f);

/* ---- encoding ---- */
typedef struct obuf {
  char *p;
  size_t len, cap;
  int oom;
} obuf;

static void put(obuf *b, const void *src, size_t n) {
  if (b->oom) return;
  if (b->len + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + n) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, src, n);
  b->len += n;
}

/* Start a field: tag and a length patched by field_end. */
static size_t field_begin(obuf *b, uint16_t tag) {
  uint32_t zero = 0;
  put(b, &tag, sizeof tag);
  size_t at = b->len;
  put(b, &zero, sizeof zero);
  return at;
}

static void field_end(obuf *b, size_t at) {
  if (b->oom) return;
  uint32_t l = (uint32_t)(b->len - at - sizeof(uint32_t));
  memcpy(b->p + at, &l, sizeof l);
}

static long count_of(const char *base, const wfield *f) {
  if (f->count_off < 0) return 1;
  if (f->kind == K_TEXT) return (long)*(const size_t *)(base + f->count_off);
  return *(const int *)(base + f->count_off);
}

static void encode(obuf *b, const wtable *t, const char *base) {
  for (int i = 0; i < t->n; i++) {
    const wfield *f = &t->f[i];
    const char *m = base + f->off;
    size_t at;
    switch (f->kind) {
    case K_STR:
      at = field_begin(b, f->tag);
      put(b, m, strnlen(m, f->size));
      field_end(b, at);
      break;
    case K_NUM:
      at = field_begin(b, f->tag);
      put(b, m, f->size);
      field_end(b, at);
      break;
    case K_STRUCT: {
      long n = count_of(base, f), cap = (long)(f->size / f->sub->size);
      for (long k = 0; k < n && k < cap; k++) {
        uint32_t idx = (uint32_t)k;
        at = field_begin(b, f->tag);
        put(b, &idx, sizeof idx);
        encode(b, f->sub, m + (size_t)k * f->sub->size);
        field_end(b, at);
      }
      break;
    }
    case K_DBL:
    case K_TEXT: {
      const void *p = *(const void *const *)m;
      long n = count_of(base, f);
      if (!p || n <= 0) break;
      at = field_begin(b, f->tag);
      put(b, p, (size_t)n * (f->kind == K_DBL ? sizeof(double) : 1));
      field_end(b, at);
      break;
    }
    default: break;
    }
  }
}

int opf_wire_encode(const opf_result *r, char **buf, size_t *len, opf_err *err) {
  obuf b = {0};
  uint16_t version = OPF_WIRE_VERSION, flags = 0;
  uint32_t zero = 0;
  put(&b, "OPFW", 4);
  put(&b, &version, sizeof version);
  put(&b, &flags, sizeof flags);
  put(&b, &zero, sizeof zero);
  encode(&b, &result_t, (const char *)r);
  if (b.oom) {
    free(b.p);
    return opf_err_set(err, OPF_ENOMEM, "out of memory encoding a result");
  }
  uint32_t payload = (uint32_t)(b.len - OPF_WIRE_HEADER);
  memcpy(b.p + 8, &payload, sizeof payload);
  *buf = b.p;
  *len = b.len;
  return OPF_OK;
}

/* ---- decoding ---- */
static const wfield *find(const wtable *t, uint16_t tag) {
  for (int i = 0; i < t->n; i++)
    if (t->f[i].tag == tag && t->f[i].kind != K_SKIP) return &t->f[i];
  return NULL;
}

static int decode(const char *p, size_t len, const wtable *t, char *base, opf_err *err) {
  size_t pos = 0;
  unsigned char seen[128] = {0}; /* tags met so far: a field twice (but an array's elements) is damage */
  while (pos < len) {
    uint16_t tag;
    uint32_t l;
    if (len - pos < sizeof tag + sizeof l) return opf_err_set(err, OPF_EINVAL, "result message: truncated field header");
    memcpy(&tag, p + pos, sizeof tag);
    memcpy(&l, p + pos + sizeof tag, sizeof l);
    pos += sizeof tag + sizeof l;
    if (l > len - pos) return opf_err_set(err, OPF_EINVAL, "result message: field %u runs past the message", tag);
    const char *v = p + pos;
    pos += l;
    const wfield *f = find(t, tag);
    if (!f) continue; /* a newer sender's field */
    if (f->kind != K_STRUCT && tag < 8 * sizeof seen) {
      if (seen[tag / 8] >> (tag % 8) & 1) return opf_err_set(err, OPF_EINVAL, "result message: field %u twice", tag);
      seen[tag / 8] |= (unsigned char)(1u << (tag % 8));
    }
    char *m = base + f->off;
    switch (f->kind) {
    case K_STR: {
      size_t n = l < f->size ? l : f->size - 1;
      memcpy(m, v, n);
      m[n] = '\0';
      break;
    }
    case K_NUM:
      if (l != f->size) return opf_err_set(err, OPF_EINVAL, "result message: field %u has %u bytes, not %zu", tag, l, f->size);
      memcpy(m, v, l);
      break;
    case K_STRUCT: {
      uint32_t idx;
      if (l < sizeof idx) return opf_err_set(err, OPF_EINVAL, "result message: field %u has no index", tag);
      memcpy(&idx, v, sizeof idx);
      long cap = (long)(f->size / f->sub->size);
      if ((long)idx >= cap || (long)idx >= count_of(base, f))
        return opf_err_set(err, OPF_EINVAL, "result message: element %u of field %u is beyond its count", idx, tag);
      int rc = decode(v + sizeof idx, l - sizeof idx, f->sub, m + (size_t)idx * f->sub->size, err);
      if (rc) return rc;
      break;
    }
    case K_DBL:
    case K_TEXT: {
      size_t el = f->kind == K_DBL ? sizeof(double) : 1;
      long n = count_of(base, f);
      if (n <= 0 || (size_t)n * el != l || *(void **)m)
        return opf_err_set(err, OPF_EINVAL, "result message: field %u has %u bytes for a count of %ld", tag, l, n);
      char *a = malloc(l + (f->kind == K_TEXT)); /* text gets its NUL */
      if (!a) return opf_err_set(err, OPF_ENOMEM, "out of memory decoding a result");
      memcpy(a, v, l);
      if (f->kind == K_TEXT) a[l] = '\0';
      *(void **)m = a;
      break;
    }
    default: break;
    }
  }
  return OPF_OK;
}

int opf_wire_decode(const char *buf, size_t len, opf_result *r, size_t *used, opf_err *err) {
  memset(r, 0, sizeof *r);
  uint16_t version;
  uint32_t payload;
  if (len < OPF_WIRE_HEADER) return opf_err_set(err, OPF_EINVAL, "result message: %zu bytes, shorter than its header", len);
  if (memcmp(buf, "OPFW", 4)) return opf_err_set(err, OPF_EINVAL, "result message: bad magic");
  memcpy(&version, buf + 4, sizeof version);
  memcpy(&payload, buf + 8, sizeof payload);
  if (version != OPF_WIRE_VERSION)
    return opf_err_set(err, OPF_EINVAL, "result message: version %u, this build reads %d", version, OPF_WIRE_VERSION);
  if (payload > len - OPF_WIRE_HEADER)
    return opf_err_set(err, OPF_EINVAL, "result message: %u payload bytes announced, %zu present", payload,
                       len - OPF_WIRE_HEADER);
  int rc = decode(buf + OPF_WIRE_HEADER, payload, &result_t, (char *)r, err);
  /* Counts that arrived without their arrays (or were cut) must not leave dangling lengths. */
  if (!rc && (r->n_tensors < 0 || r->n_tensors > OPF_MAX_IN + OPF_MAX_OUT || r->n_events < 0 ||
              r->n_events > OPF_PMU_MAX_EVENTS || r->n_samples < 0 || r->n_reps < 0 || r->n_reps > OPF_MAX_REPS ||
              r->profile.n_funcs < 0 || r->profile.n_funcs > OPF_PROFILE_MAX_FUNCS))
    rc = opf_err_set(err, OPF_EINVAL, "result message: a count is out of range");
  if (!rc && r->folded_len && !r->folded) r->folded_len = 0;
  for (int i = 0; !rc && i < r->n_events; i++)
    if (!r->events[i].raw) r->events[i].n_raw = 0;
  if (rc) {
    /* every owned array, whatever the (possibly damaged) counts say */
    for (int i = 0; i < OPF_PMU_MAX_EVENTS; i++) free(r->events[i].raw);
    r->n_events = 0;
    opf_result_release(r);
    memset(r, 0, sizeof *r);
    return rc;
  }
  if (used) *used = OPF_WIRE_HEADER + payload;
  return OPF_OK;
}

/* ---- table coverage (tests) ---- */
static size_t align_of(const wfield *f) {
  if (f->kind == K_STR) return 1;
  if (f->kind == K_NUM) return f->size >= 8 ? 8 : f->size;
  return 8; /* pointers, and structs holding 8-byte members */
}

static int unlisted(const wtable *t) {
  int bad = 0;
  size_t end = 0;
  /* Members in declaration order: each gap before a member must be alignment padding. */
  const wfield *order[128];
  if (t->n > 128) return 1 << 20; /* a table this checker cannot sort: grow order[] */
  int n = t->n;
  for (int i = 0; i < n; i++) order[i] = &t->f[i];
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && order[j]->off < order[j - 1]->off; j--) {
      const wfield *x = order[j];
      order[j] = order[j - 1];
      order[j - 1] = x;
    }
  for (int i = 0; i < n; i++) {
    const wfield *f = order[i];
    if (f->off < end) return 1 << 20; /* overlapping entries: a table bug */
    if (f->off - end >= align_of(f)) bad += (int)(f->off - end);
    end = f->off + f->size;
    if (f->kind == K_STRUCT) bad += unlisted(f->sub);
  }
  if (t->size - end >= 8) bad += (int)(t->size - end);
  return bad;
}

int opf_wire_unlisted_bytes(void) { return unlisted(&result_t); }
