/* tensor.h: dtypes, tensors (int64 shapes and element strides) and the tracked allocator.
 * All tensor and workspace memory goes through opf_alloc so the harness can report true
 * per-case allocation figures (bytes, count, peak live bytes). */
#ifndef OPPERF_TENSOR_H
#define OPPERF_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "opperf/error.h"

#define OPF_MAX_DIMS 8
#define OPF_ALIGN 64

typedef enum opf_dtype {
  OPF_F32 = 0,
  OPF_F64 = 1,
  OPF_I32 = 2,
  OPF_I64 = 3,
  OPF_BOOL = 4, /* one byte, 0 or 1 (uint8_t): comparison and logic results, masks */
  OPF_NDTYPES
} opf_dtype;

#define OPF_DT_BIT(d) (1u << (d))
#define OPF_DT_FLOAT (OPF_DT_BIT(OPF_F32) | OPF_DT_BIT(OPF_F64))
#define OPF_DT_INT (OPF_DT_BIT(OPF_I32) | OPF_DT_BIT(OPF_I64))
#define OPF_DT_ALL (OPF_DT_FLOAT | OPF_DT_INT) /* every numeric dtype */
#define OPF_DT_BOOL OPF_DT_BIT(OPF_BOOL)

size_t opf_dtype_size(opf_dtype d);
const char *opf_dtype_name(opf_dtype d);
/* Parses "float32"/"f32"/"float64"/"f64"/"int32"/"i32"/"int64"/"i64"/"bool"; -1 when unknown. */
int opf_dtype_parse(const char *s);
static inline int opf_dtype_is_float(opf_dtype d) { return d == OPF_F32 || d == OPF_F64; }

typedef struct opf_tensor {
  opf_dtype dtype;
  int ndim;
  int64_t shape[OPF_MAX_DIMS];
  int64_t strides[OPF_MAX_DIMS]; /* in elements; contiguous row-major unless a view */
  void *data;
  size_t nbytes;                 /* bytes of data (0 for a strided view: it owns none) */
  int owned;                     /* data came from opf_tensor_alloc (0 for views) */
} opf_tensor;

int64_t opf_numel(const opf_tensor *t);
int64_t opf_shape_numel(int ndim, const int64_t *shape);
/* Set shape and contiguous strides (no allocation). ndim 0 is a scalar. */
void opf_tensor_set_shape(opf_tensor *t, opf_dtype d, int ndim, const int64_t *shape);
/* Are the strides the contiguous row-major ones (size-1 axes ignored)? */
int opf_tensor_is_contiguous(const opf_tensor *t);
/* Element offset (from data) of row-major element k, through the strides. */
int64_t opf_tensor_offset(const opf_tensor *t, int64_t k);
/* Copy the elements of t (any strides, stride 0 too) in row-major order into dst, which holds
 * numel * dtype size bytes. */
void opf_tensor_gather(const opf_tensor *t, void *dst);
/* Bytes a contiguous tensor of this shape needs; returns 0 on overflow (and sets *overflow). */
size_t opf_tensor_bytes(const opf_tensor *t, int *overflow);
/* Allocate contiguous storage through the tracked allocator. OPF_ENOMEM on failure. */
int opf_tensor_alloc(opf_tensor *t, opf_err *err);
void opf_tensor_free(opf_tensor *t);
/* "1024x1024" / "32x3x256x256" / "" for a scalar; writes at most n bytes. */
char *opf_shape_str(const opf_tensor *t, char *buf, size_t n);
/* Parses "AxBxC" (also accepts ',' and '*' as separators, and "()" or "scalar" for rank 0). */
int opf_shape_parse(const char *s, int *ndim, int64_t *shape, opf_err *err);

/* ---- tracked allocator: 64-byte aligned, thread-safe counters ---- */
typedef struct opf_alloc_stats {
  uint64_t bytes_allocated; /* total bytes requested since reset */
  uint64_t n_allocs;        /* number of allocations since reset */
  uint64_t n_frees;
  uint64_t live_bytes;      /* bytes currently allocated */
  uint64_t peak_live_bytes; /* high-water mark of live_bytes since reset */
} opf_alloc_stats;

void *opf_alloc(size_t bytes); /* NULL on failure; zero bytes gives a valid unique pointer */
void *opf_calloc(size_t n, size_t size);
void opf_free(void *p);
void opf_alloc_stats_get(opf_alloc_stats *s);
/* Reset cumulative counters; the peak restarts at the current live bytes. */
void opf_alloc_stats_reset(void);

#endif
