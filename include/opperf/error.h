/* error.h: error codes and the error context of the opperf library.
 * Library code (src/, pmu/, ops/) never prints or exits: it returns one of these codes and
 * leaves a one-line message in an opf_err; only the CLI prints it and picks the exit status. */
#ifndef OPPERF_ERROR_H
#define OPPERF_ERROR_H

#include <stdarg.h>

enum {
  OPF_OK = 0,
  OPF_EINVAL = -1,     /* bad input: shape, param, spec, file contents (CLI exit 2) */
  OPF_ENOMEM = -2,     /* allocation failed or would not fit in available memory */
  OPF_ENOTFOUND = -3,  /* unknown operator, input, param or event name */
  OPF_EIO = -4,        /* file could not be read or written */
  OPF_ECONFIG = -5,    /* malformed configuration (config file, event list) */
  OPF_EUNSUPPORTED = -6, /* valid request this build or machine cannot do (dtype, pass) */
  OPF_EKERNEL = -7,    /* a kernel reported a failure at run time */
  OPF_ESYS = -8        /* a system call failed unexpectedly */
};

#define OPF_ERR_MSG_MAX 512

typedef struct opf_err {
  int code;
  char msg[OPF_ERR_MSG_MAX];
} opf_err;

/* Store a formatted message and return code (so callers can `return opf_err_set(...)`).
 * err may be NULL. */
int opf_err_set(opf_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int opf_err_vset(opf_err *err, int code, const char *fmt, va_list ap);
void opf_err_clear(opf_err *err);
/* Short name of a code: "invalid input", "out of memory", ... */
const char *opf_strerror(int code);

#endif
