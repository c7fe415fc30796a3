/* report.c: emitter dispatch, atomic output files, and formatting helpers shared by the
 * table, JSON, CSV and Markdown back-ends. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report_impl.h"

static const struct {
  const char *name, *ext;
  const emitter_ops *ops;
} formats[OPF_NFORMATS] = {
    [OPF_FMT_TABLE] = {"table", ".txt", &opf_emit_table},
    [OPF_FMT_JSON] = {"json", ".json", &opf_emit_json},
    [OPF_FMT_CSV] = {"csv", ".csv", &opf_emit_csv},
    [OPF_FMT_MD] = {"md", ".md", &opf_emit_md},
    [OPF_FMT_JSONL] = {"jsonl", ".jsonl", &opf_emit_jsonl},
    [OPF_FMT_GBENCH] = {"gbench", ".gbench.json", &opf_emit_gbench},
    [OPF_FMT_TRACE] = {"trace", ".trace.json", &opf_emit_trace},
};

int opf_format_parse(const char *s) {
  for (int i = 0; i < OPF_NFORMATS; i++)
    if (!strcmp(s, formats[i].name)) return i;
  if (!strcmp(s, "markdown")) return OPF_FMT_MD;
  return -1;
}
const char *opf_format_name(opf_format f) { return formats[f].name; }
const char *opf_format_ext(opf_format f) { return formats[f].ext; }

char *opf_fmt_time(double s, char *buf, size_t n) {
  if (s < 1e-6) snprintf(buf, n, "%.1f ns", s * 1e9);
  else if (s < 1e-3) snprintf(buf, n, "%.2f us", s * 1e6);
  else if (s < 1) snprintf(buf, n, "%.2f ms", s * 1e3);
  else snprintf(buf, n, "%.3f s", s);
  return buf;
}

char *opf_fmt_bytes(double b, char *buf, size_t n) {
  if (b < 1024) snprintf(buf, n, "%.0f B", b);
  else if (b < 1024.0 * 1024) snprintf(buf, n, "%.1f KiB", b / 1024);
  else if (b < 1024.0 * 1024 * 1024) snprintf(buf, n, "%.1f MiB", b / (1024.0 * 1024));
  else snprintf(buf, n, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  return buf;
}

void opf_result_inputs(const opf_result *r, char *buf, size_t n) {
  size_t off = 0;
  buf[0] = '\0';
  for (int i = 0; i < r->n_tensors && off < n; i++)
    if (!strcmp(r->tensors[i].role, "in"))
      off += snprintf(buf + off, n - off, "%s%s", off ? ", " : "", r->tensors[i].shape);
}

char *opf_read_text(const char *path, opf_err *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    opf_err_set(err, OPF_EINVAL, "cannot read '%s'", path);
    return NULL;
  }
  char *buf = NULL;
  size_t len = 0, cap = 0;
  int bad = 0;
  for (;;) {
    if (len + 65536 + 1 > cap) {
      cap = cap ? cap * 2 : 1 << 20;
      char *t = realloc(buf, cap);
      if (!t) {
        bad = 1;
        break;
      }
      buf = t;
    }
    size_t r = fread(buf + len, 1, cap - len - 1, f);
    len += r;
    if (!r) break;
  }
  if (ferror(f)) bad = 2;
  fclose(f);
  if (bad) {
    free(buf);
    opf_err_set(err, bad == 1 ? OPF_ENOMEM : OPF_EINVAL, "%s '%s'",
                bad == 1 ? "out of memory reading" : "cannot read", path);
    return NULL;
  }
  buf[len] = '\0';
  return buf;
}

int opf_write_atomic(const char *path, const void *data, size_t n, opf_err *err) {
  return opf_write_atomic_parts(path, &data, &n, 1, err);
}

/* Write the parts to fd; returns the bytes not written (0 on success), errno set. */
static size_t write_parts(int fd, const void *const *parts, const size_t *lens, int nparts) {
  size_t left = 0;
  errno = 0;
  for (int i = 0; i < nparts && !left; i++) {
    const char *p = parts[i];
    left = lens[i];
    while (left) {
      ssize_t w = write(fd, p, left);
      if (w < 0) {
        if (errno == EINTR) continue;
        break;
      }
      p += w;
      left -= (size_t)w;
    }
  }
  return left;
}

int opf_write_atomic_parts(const char *path, const void *const *parts, const size_t *lens,
                           int nparts, opf_err *err) {
  /* A device or FIFO (-o /dev/null, -o /dev/stdout, a named pipe) is written in place: renaming
   * a temporary file over it would replace the device node with a regular file (as root, a
   * /dev/null that every later redirection then writes into). */
  struct stat sb;
  if (!stat(path, &sb) && !S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode)) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return opf_err_set(err, OPF_EIO, "cannot write '%s': %s", path, strerror(errno));
    size_t left = write_parts(fd, parts, lens, nparts);
    int e = errno;
    if (close(fd) && !left) left = 1, e = errno;
    return left ? opf_err_set(err, OPF_EIO, "cannot write '%s': %s", path, strerror(e ? e : EIO)) : OPF_OK;
  }
  char *tmp = NULL;
  if (asprintf(&tmp, "%s.tmp.XXXXXX", path) < 0) return opf_err_set(err, OPF_ENOMEM, "out of memory");
  int fd = mkstemp(tmp);
  if (fd < 0) {
    int e = errno;
    free(tmp);
    return opf_err_set(err, OPF_EIO, "cannot write '%s': %s", path, strerror(e));
  }
  size_t left = write_parts(fd, parts, lens, nparts);
  int e = errno;
  if (left || fsync(fd) || close(fd)) {
    close(fd);
    unlink(tmp);
    free(tmp);
    return opf_err_set(err, OPF_EIO, "cannot write '%s': %s", path, strerror(e ? e : EIO));
  }
  /* mkstemp creates 0600; give the report the permissions a plain fopen would. */
  mode_t m = umask(0);
  umask(m);
  chmod(tmp, 0666 & ~m);
  if (rename(tmp, path)) {
    e = errno;
    unlink(tmp);
    free(tmp);
    return opf_err_set(err, OPF_EIO, "cannot write '%s': %s", path, strerror(e));
  }
  free(tmp);
  return OPF_OK;
}

int opf_emitter_begin(opf_emitter **out, opf_format f, const char *path, const opf_context *ctx,
                      opf_err *err) {
  if ((unsigned)f >= OPF_NFORMATS) return opf_err_set(err, OPF_EINVAL, "unknown format");
  opf_emitter *e = calloc(1, sizeof *e);
  if (!e) return opf_err_set(err, OPF_ENOMEM, "out of memory");
  e->ops = formats[f].ops;
  e->fmt = f;
  e->ctx = ctx;
  e->path = path && strcmp(path, "-") ? strdup(path) : NULL;
  if (e->ops->stream) e->out = e->path ? fopen(e->path, "w") : stdout;
  else e->out = open_memstream(&e->buf, &e->len);
  if (!e->out && e->ops->stream) {
    int en = errno;
    opf_emitter_end(e, 0, NULL);
    return opf_err_set(err, OPF_EIO, "cannot write '%s': %s", path, strerror(en));
  }
  if (!e->out || e->ops->begin(e)) {
    opf_emitter_end(e, 0, NULL);
    return opf_err_set(err, OPF_ENOMEM, "cannot start the %s report", formats[f].name);
  }
  *out = e;
  return OPF_OK;
}

int opf_emitter_record(opf_emitter *e, const opf_result *r) { return e->ops->record(e, r); }

int opf_emitter_end(opf_emitter *e, int commit, opf_err *err) {
  int rc = OPF_OK;
  if (commit && e->ops->end(e)) rc = opf_err_set(err, OPF_ENOMEM, "cannot render the report");
  if (e->ops->stream) { /* already written as it went */
    if (e->out && e->out != stdout && fclose(e->out) && !rc) rc = opf_err_set(err, OPF_EIO, "cannot write '%s'", e->path);
    if (e->out == stdout) fflush(stdout);
    e->out = NULL;
    commit = 0;
  }
  if (e->out) fclose(e->out);
  e->out = NULL;
  if (commit && !rc) {
    if (e->path) {
      rc = opf_write_atomic(e->path, e->buf, e->len, err);
    } else if (e->len && fwrite(e->buf, 1, e->len, stdout) != e->len) {
      rc = opf_err_set(err, OPF_EIO, "cannot write to standard output");
    }
    fflush(stdout);
  }
  if (e->ops->release) e->ops->release(e);
  free(e->buf);
  free(e->path);
  free(e);
  return rc;
}
