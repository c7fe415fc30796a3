/* tensor.c: dtype facts, shapes and contiguous tensor storage (through the tracked allocator). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/tensor.h"

static const struct {
  const char *name, *alias;
  size_t size;
} dtypes[OPF_NDTYPES] = {
    [OPF_F32] = {"float32", "f32", 4},
    [OPF_F64] = {"float64", "f64", 8},
    [OPF_I32] = {"int32", "i32", 4},
    [OPF_I64] = {"int64", "i64", 8},
    [OPF_BOOL] = {"bool", "b8", 1},
};

size_t opf_dtype_size(opf_dtype d) { return (unsigned)d < OPF_NDTYPES ? dtypes[d].size : 0; }
const char *opf_dtype_name(opf_dtype d) {
  return (unsigned)d < OPF_NDTYPES ? dtypes[d].name : "?";
}
int opf_dtype_parse(const char *s) {
  for (int i = 0; i < OPF_NDTYPES; i++)
    if (!strcmp(s, dtypes[i].name) || !strcmp(s, dtypes[i].alias)) return i;
  if (!strcmp(s, "float")) return OPF_F32;
  if (!strcmp(s, "double")) return OPF_F64;
  return -1;
}

/* Saturating product: absurd user shapes must give a huge number, not undefined behaviour;
 * the allocation checks (opf_tensor_bytes) then reject them. */
static int64_t mul_sat(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

int64_t opf_shape_numel(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n = mul_sat(n, shape[i]);
  return n;
}
int64_t opf_numel(const opf_tensor *t) { return opf_shape_numel(t->ndim, t->shape); }

void opf_tensor_set_shape(opf_tensor *t, opf_dtype d, int ndim, const int64_t *shape) {
  t->dtype = d;
  t->ndim = ndim;
  int64_t s = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    t->shape[i] = shape[i];
    t->strides[i] = s;
    s = mul_sat(s, shape[i]);
  }
}

int opf_tensor_is_contiguous(const opf_tensor *t) {
  int64_t s = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->shape[i] != 1 && t->strides[i] != s) return 0;
    s = mul_sat(s, t->shape[i]);
  }
  return 1;
}

int64_t opf_tensor_offset(const opf_tensor *t, int64_t k) {
  int64_t off = 0;
  for (int i = t->ndim - 1; i >= 0 && k > 0; i--) {
    off += (k % t->shape[i]) * t->strides[i];
    k /= t->shape[i];
  }
  return off;
}

void opf_tensor_gather(const opf_tensor *t, void *dst) {
  const size_t es = opf_dtype_size(t->dtype);
  const int64_t n = opf_numel(t);
  if (opf_tensor_is_contiguous(t)) {
    if (n > 0) memcpy(dst, t->data, (size_t)n * es);
    return;
  }
  for (int64_t k = 0; k < n; k++)
    memcpy((char *)dst + (size_t)k * es, (const char *)t->data + opf_tensor_offset(t, k) * (int64_t)es, es);
}

size_t opf_tensor_bytes(const opf_tensor *t, int *overflow) {
  unsigned __int128 n = opf_dtype_size(t->dtype);
  for (int i = 0; i < t->ndim; i++) {
    n *= (uint64_t)t->shape[i];
    if (n > (unsigned __int128)(SIZE_MAX / 4)) {
      if (overflow) *overflow = 1;
      return 0;
    }
  }
  if (overflow) *overflow = 0;
  return (size_t)n;
}

int opf_tensor_alloc(opf_tensor *t, opf_err *err) {
  int ovf;
  size_t b = opf_tensor_bytes(t, &ovf);
  char sb[128];
  if (ovf)
    return opf_err_set(err, OPF_ENOMEM, "tensor of shape %s is too large to address",
                       opf_shape_str(t, sb, sizeof sb));
  t->data = opf_alloc(b);
  if (!t->data)
    return opf_err_set(err, OPF_ENOMEM, "cannot allocate %zu bytes for a tensor of shape %s", b,
                       opf_shape_str(t, sb, sizeof sb));
  t->nbytes = b;
  t->owned = 1;
  return OPF_OK;
}

void opf_tensor_free(opf_tensor *t) {
  if (t->owned) opf_free(t->data); /* also zero-byte tensors: opf_alloc(0) is a real block */
  t->data = NULL;
  t->nbytes = 0;
  t->owned = 0;
}

char *opf_shape_str(const opf_tensor *t, char *buf, size_t n) {
  size_t off = 0;
  buf[0] = '\0';
  if (t->ndim == 0) {
    snprintf(buf, n, "()");
    return buf;
  }
  for (int i = 0; i < t->ndim && off < n; i++)
    off += snprintf(buf + off, n - off, i ? "x%lld" : "%lld", (long long)t->shape[i]);
  return buf;
}

int opf_shape_parse(const char *s, int *ndim, int64_t *shape, opf_err *err) {
  const char *p = s;
  while (isspace((unsigned char)*p)) p++;
  if (*p == '(') p++;
  int nd = 0;
  if (!strcmp(s, "scalar") || !strcmp(s, "()")) {
    *ndim = 0;
    return OPF_OK;
  }
  for (;;) {
    while (isspace((unsigned char)*p)) p++;
    if (!isdigit((unsigned char)*p))
      return opf_err_set(err, OPF_EINVAL, "malformed shape '%s': expected a size like 1024x1024",
                         s);
    errno = 0;
    char *end;
    long long v = strtoll(p, &end, 10);
    if (errno == ERANGE || v > (1LL << 48))
      return opf_err_set(err, OPF_EINVAL, "shape '%s': dimension %lld is absurdly large", s, v);
    if (nd == OPF_MAX_DIMS)
      return opf_err_set(err, OPF_EINVAL, "shape '%s' has more than %d dimensions", s,
                         OPF_MAX_DIMS);
    shape[nd++] = v;
    p = end;
    while (isspace((unsigned char)*p)) p++;
    if (*p == 'x' || *p == 'X' || *p == ',' || *p == '*') {
      p++;
      continue;
    }
    if (*p == ')') p++;
    while (isspace((unsigned char)*p)) p++;
    if (*p)
      return opf_err_set(err, OPF_EINVAL, "malformed shape '%s': unexpected '%c'", s, *p);
    break;
  }
  /* Bound the element count so operators' index arithmetic (products of dims, strides, sizes
   * of derived tensors) cannot overflow int64: 2^56 elements is far beyond any memory. */
  int64_t numel = 1;
  for (int i = 0; i < nd; i++)
    if (shape[i] && numel > ((int64_t)1 << 56) / shape[i])
      return opf_err_set(err, OPF_EINVAL, "shape '%s' has more than 2^56 elements", s);
    else numel *= shape[i];
  *ndim = nd;
  return OPF_OK;
}
