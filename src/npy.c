/* npy.c: reading and writing NumPy .npy files (see npy.h). Only what opperf's tensors are:
 * little-endian float32/float64/int32/int64/bool, C order, up to OPF_MAX_DIMS dimensions. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opperf/npy.h"
#include "opperf/report.h"

static const char magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

static const struct {
  const char *descr;
  opf_dtype dt;
} descrs[] = {{"<f4", OPF_F32}, {"<f8", OPF_F64}, {"<i4", OPF_I32}, {"<i8", OPF_I64},
              {"|b1", OPF_BOOL}, {"|u1", OPF_BOOL}};

/* The value text after 'key': in the header dict, or NULL. */
static const char *dict_value(const char *h, const char *key) {
  char pat[32];
  snprintf(pat, sizeof pat, "'%s'", key);
  const char *p = strstr(h, pat);
  if (!p) {
    snprintf(pat, sizeof pat, "\"%s\"", key);
    p = strstr(h, pat);
  }
  if (!p) return NULL;
  p += strlen(pat);
  while (isspace((unsigned char)*p)) p++;
  if (*p != ':') return NULL;
  p++;
  while (isspace((unsigned char)*p)) p++;
  return p;
}

/* Parse the header; *data_off is where the data starts. */
static int read_header(FILE *f, const char *path, opf_dtype *dt, int *ndim, int64_t *shape,
                       long *data_off, opf_err *err) {
  unsigned char pre[12];
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, magic, 6))
    return opf_err_set(err, OPF_EINVAL, "'%s' is not a .npy file (no \\x93NUMPY magic)", path);
  int major = pre[6];
  size_t hlen;
  long off;
  if (major == 1) {
    hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    off = 10;
  } else if (major == 2 || major == 3) {
    if (fread(pre + 10, 1, 2, f) != 2)
      return opf_err_set(err, OPF_EINVAL, "'%s': truncated .npy header", path);
    hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    off = 12;
  } else {
    return opf_err_set(err, OPF_EINVAL, "'%s': unsupported .npy format version %d", path, major);
  }
  if (hlen > (1u << 20)) return opf_err_set(err, OPF_EINVAL, "'%s': .npy header too large", path);
  char *h = malloc(hlen + 1);
  if (!h) return opf_err_set(err, OPF_ENOMEM, "out of memory");
  int rc = OPF_OK;
  if (fread(h, 1, hlen, f) != hlen) {
    rc = opf_err_set(err, OPF_EINVAL, "'%s': truncated .npy header", path);
    goto out;
  }
  h[hlen] = '\0';
  const char *d = dict_value(h, "descr"), *fo = dict_value(h, "fortran_order"),
             *sh = dict_value(h, "shape");
  if (!d || !fo || !sh || (*d != '\'' && *d != '"')) {
    rc = opf_err_set(err, OPF_EINVAL, "'%s': malformed .npy header (needs descr, fortran_order, shape)", path);
    goto out;
  }
  char descr[16] = "";
  size_t dl = strcspn(d + 1, "'\"");
  if (dl >= sizeof descr) dl = sizeof descr - 1;
  memcpy(descr, d + 1, dl);
  descr[dl] = '\0';
  int found = 0;
  for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
    if (!strcmp(descr, descrs[i].descr) || (descr[0] == '=' && !strcmp(descr + 1, descrs[i].descr + 1)))
      *dt = descrs[i].dt, found = 1;
  if (!found) {
    rc = opf_err_set(err, OPF_EINVAL, "'%s': dtype '%s' is not supported (use little-endian "
                     "float32, float64, int32, int64 or bool)", path, descr);
    goto out;
  }
  if (!strncmp(fo, "True", 4)) {
    rc = opf_err_set(err, OPF_EINVAL, "'%s': Fortran-ordered arrays are not supported (save "
                     "np.ascontiguousarray(a))", path);
    goto out;
  }
  if (*sh != '(') {
    rc = opf_err_set(err, OPF_EINVAL, "'%s': malformed shape in the .npy header", path);
    goto out;
  }
  const char *p = sh + 1;
  int nd = 0;
  for (;;) {
    while (isspace((unsigned char)*p) || *p == ',') p++;
    if (*p == ')') break;
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || errno || v < 0 || v > (1LL << 48)) {
      rc = opf_err_set(err, OPF_EINVAL, "'%s': malformed shape in the .npy header", path);
      goto out;
    }
    if (nd == OPF_MAX_DIMS) {
      rc = opf_err_set(err, OPF_EINVAL, "'%s': more than %d dimensions", path, OPF_MAX_DIMS);
      goto out;
    }
    shape[nd++] = v;
    p = end;
  }
  *ndim = nd;
  *data_off = off + (long)hlen;
out:
  free(h);
  return rc;
}

/* Open, parse the header and check the file holds all of the data. */
static FILE *open_npy(const char *path, opf_dtype *dt, int *ndim, int64_t *shape, long *off,
                      opf_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    opf_err_set(err, OPF_EIO, "cannot read '%s': %s", path, strerror(errno));
    return NULL;
  }
  if (read_header(f, path, dt, ndim, shape, off, err)) {
    fclose(f);
    return NULL;
  }
  opf_tensor t;
  opf_tensor_set_shape(&t, *dt, *ndim, shape);
  int ovf = 0;
  size_t need = opf_tensor_bytes(&t, &ovf);
  if (fseek(f, 0, SEEK_END) == 0) {
    long size = ftell(f);
    if (ovf || size < 0 || (unsigned long)(size - *off) < need) {
      opf_err_set(err, OPF_EINVAL, "'%s' is truncated: its header promises %zu bytes of data", path, need);
      fclose(f);
      return NULL;
    }
  }
  return f;
}

int opf_npy_header(const char *path, opf_dtype *dtype, int *ndim, int64_t *shape, opf_err *err) {
  long off;
  FILE *f = open_npy(path, dtype, ndim, shape, &off, err);
  if (!f) return err->code;
  fclose(f);
  return OPF_OK;
}

int opf_npy_load(const char *path, opf_tensor *t, opf_err *err) {
  opf_dtype dt;
  int nd;
  int64_t shape[OPF_MAX_DIMS];
  long off;
  FILE *f = open_npy(path, &dt, &nd, shape, &off, err);
  if (!f) return err->code;
  int same = dt == t->dtype && nd == t->ndim;
  for (int k = 0; same && k < nd; k++) same = shape[k] == t->shape[k];
  int rc = OPF_OK;
  if (!same) {
    opf_tensor ft;
    opf_tensor_set_shape(&ft, dt, nd, shape);
    char a[96], b[96];
    rc = opf_err_set(err, OPF_EINVAL, "'%s' holds %s %s, expected %s %s", path,
                     opf_dtype_name(dt), opf_shape_str(&ft, a, sizeof a),
                     opf_dtype_name(t->dtype), opf_shape_str(t, b, sizeof b));
  } else if (fseek(f, off, SEEK_SET) || fread(t->data, 1, t->nbytes, f) != t->nbytes) {
    rc = opf_err_set(err, OPF_EIO, "cannot read the data of '%s'", path);
  } else if (dt == OPF_BOOL) {
    uint8_t *b = t->data; /* |u1 masks: any nonzero byte is true */
    for (size_t i = 0; i < t->nbytes; i++) b[i] = b[i] != 0;
  }
  fclose(f);
  return rc;
}

int opf_npy_save(const char *path, const opf_tensor *t, opf_err *err) {
  static const char *names[OPF_NDTYPES] = {[OPF_F32] = "<f4", [OPF_F64] = "<f8", [OPF_I32] = "<i4",
                                           [OPF_I64] = "<i8", [OPF_BOOL] = "|b1"};
  if ((unsigned)t->dtype >= OPF_NDTYPES || !names[t->dtype])
    return opf_err_set(err, OPF_EINVAL, "cannot save dtype %d as .npy", (int)t->dtype);
  char shape[300];
  size_t off = 0;
  shape[0] = '\0';
  for (int k = 0; k < t->ndim; k++)
    off += (size_t)snprintf(shape + off, sizeof shape - off, "%lld,%s", (long long)t->shape[k],
                            k + 1 < t->ndim ? " " : "");
  if (t->ndim > 1) shape[off - 1] = '\0'; /* NumPy writes (3,) for 1-D and (2, 3) otherwise */
  char hdr[512];
  int n = snprintf(hdr + 10, sizeof hdr - 10, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }",
                   names[t->dtype], shape);
  /* Pad with spaces so that the data starts on a 64-byte boundary, ending in a newline. */
  int total = 10 + n + 1;
  int pad = (64 - total % 64) % 64;
  memset(hdr + 10 + n, ' ', (size_t)pad);
  hdr[10 + n + pad] = '\n';
  int hlen = n + pad + 1;
  memcpy(hdr, magic, 6);
  hdr[6] = 1;
  hdr[7] = 0;
  hdr[8] = (char)(hlen & 0xff);
  hdr[9] = (char)(hlen >> 8);
  size_t nb = (size_t)opf_numel(t) * opf_dtype_size(t->dtype);
  void *dense = NULL; /* a strided view (a gradient handed back as a view) is written row-major */
  if (!opf_tensor_is_contiguous(t)) {
    if (!(dense = malloc(nb ? nb : 1)))
      return opf_err_set(err, OPF_ENOMEM, "cannot allocate %zu bytes to save '%s'", nb, path);
    opf_tensor_gather(t, dense);
  }
  const void *parts[2] = {hdr, dense ? dense : t->data};
  size_t lens[2] = {(size_t)(10 + hlen), nb};
  int rc = opf_write_atomic_parts(path, parts, lens, 2, err);
  free(dense);
  return rc;
}
