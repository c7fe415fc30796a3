/* error.c: the error context (opf_err) shared by src/, pmu/ and ops/. */
#include <stdio.h>
#include <string.h>

#include "opperf/error.h"

int opf_err_vset(opf_err *err, int code, const char *fmt, va_list ap) {
  if (err) {
    err->code = code;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  }
  return code;
}

int opf_err_set(opf_err *err, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  opf_err_vset(err, code, fmt, ap);
  va_end(ap);
  return code;
}

void opf_err_clear(opf_err *err) {
  if (err) {
    err->code = OPF_OK;
    err->msg[0] = '\0';
  }
}

const char *opf_strerror(int code) {
  switch (code) {
  case OPF_OK: return "ok";
  case OPF_EINVAL: return "invalid input";
  case OPF_ENOMEM: return "out of memory";
  case OPF_ENOTFOUND: return "not found";
  case OPF_EIO: return "i/o error";
  case OPF_ECONFIG: return "configuration error";
  case OPF_EUNSUPPORTED: return "not supported";
  case OPF_EKERNEL: return "kernel failure";
  case OPF_ESYS: return "system error";
  default: return "unknown error";
  }
}
