/* npy.h: NumPy .npy files (format 1.0-3.0, little-endian, C order), the format NumPy and
 * PyTorch read and write: --save-tensors writes each case's tensors, --input NAME=@FILE.npy
 * benchmarks on real data. */
#ifndef OPPERF_NPY_H
#define OPPERF_NPY_H

#include "opperf/tensor.h"

/* Shape and dtype of an .npy file, from its header (the data is not read). Errors: OPF_EIO for
 * an unreadable file, OPF_EINVAL for a malformed header, an unsupported dtype or byte order,
 * Fortran order, or a file shorter than its header says. */
int opf_npy_header(const char *path, opf_dtype *dtype, int *ndim, int64_t *shape, opf_err *err);
/* Read the file's data into t, which must already be allocated with the file's shape and dtype. */
int opf_npy_load(const char *path, opf_tensor *t, opf_err *err);
/* Write t (contiguous) to path atomically (temporary file, then rename). */
int opf_npy_save(const char *path, const opf_tensor *t, opf_err *err);

#endif
