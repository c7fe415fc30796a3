/* peer.h: side-by-side comparison with a peer library (PyTorch, NumPy) run by
 * scripts/opperf-peer.py: the request describing the cases, the answer's parsing, the join
 * (ours/peer ratio), the --check comparison of outputs with dtype tolerances and the
 * per-category geometric means. Library code: nothing here prints or spawns processes. */
#ifndef OPPERF_PEER_H
#define OPPERF_PEER_H

#include <stddef.h>
#include <stdint.h>

#include "opperf/harness.h"

/* "torch" or "numpy": the peers the script knows; -1 when unknown. */
typedef enum opf_peer_lib { OPF_PEER_TORCH = 0, OPF_PEER_NUMPY = 1 } opf_peer_lib;
int opf_peer_lib_parse(const char *s);
const char *opf_peer_lib_name(opf_peer_lib l);

/* --check: outputs (and input gradients of bwd/both passes) of both sides on the same inputs. */
typedef struct opf_peer_check {
  int done;          /* 1: compared (agree holds the verdict); 0: not checked (why in what) */
  int agree;
  int n_tensors;     /* tensors compared */
  double max_abs;    /* largest |ours - peer| over the compared tensors */
  double max_rel;    /* largest |ours - peer| / max(|peer|, 1e-3 x the tensor's largest |peer|) */
  double atol, rtol; /* tolerances used (the tensor's dtype) */
  char what[160];    /* first mismatching tensor and why, or why the check did not run */
} opf_peer_check;

/* The peer's answer for one case pass, joined to our result. */
typedef struct opf_peer_result {
  char status[192];  /* "ok", "no-equivalent: why", "error: message" */
  char name[96];     /* the peer's callable, e.g. "torch.nn.functional.conv2d" */
  char library[48];  /* "torch 1.13.0a0" */
  double median;     /* seconds per call (0: unknown) */
  int n_samples;
  int64_t batch;     /* calls per sample */
  double ratio;      /* ours / peer median: > 1 means opperf is slower (0: unknown) */
  int checked;       /* --check was asked for this case */
  opf_peer_check check;
} opf_peer_result;

/* Is the answer a measurement (status "ok" and a positive median)? */
int opf_peer_ok(const opf_peer_result *p);
/* Does the status say the peer has no equivalent? */
int opf_peer_no_equivalent(const opf_peer_result *p);

/* ---- request ---- */
typedef struct opf_peer_req_case {
  const opf_case *c;  /* resolved (initialised) case */
  opf_pass pass;
  const char *files;  /* prefix of the case's .npy files (opf_peer_file), NULL: none */
  int check;          /* ask the peer to write its outputs (and input gradients) */
} opf_peer_req_case;

/* Path of one exchanged tensor: PREFIX + kind + "_" + name + ".npy". Kinds: "in" (our input,
 * after our fill), "gout" (output gradient), "out"/"gin" (ours), "peer_out"/"peer_gin" (the
 * peer's, written by the script). Returns 0, or -1 when it does not fit in n. */
int opf_peer_file(char *buf, size_t n, const char *prefix, const char *kind, const char *name);

/* The request document (JSON text, caller frees): library, settings (threads, warm-up and
 * timing limits of s) and one entry per case with its op, category, dtype, pass, inputs
 * (name, shape, dtype, present, differentiable, file), outputs (name, shape, dtype, files)
 * and params as text ("stride": "1,1"). */
int opf_peer_request(opf_peer_lib lib, const opf_settings *s, const opf_peer_req_case *cases,
                     int n, char **json, opf_err *err);

/* Parse the script's answer into res[0..n-1] (by case id; cases it does not mention get an
 * "error: no answer" status). The answer's top-level "fatal" (e.g. torch not importable) gives
 * OPF_EUNSUPPORTED with that text in err; malformed JSON gives OPF_EINVAL. library receives
 * the peer's name and version. The ratio is filled from ours[i] (seconds per call; <= 0:
 * unknown). */
int opf_peer_answer(const char *json, const double *ours, opf_peer_result *res, int n,
                    opf_err *err);

/* ---- --check ---- */
/* Tolerances for a dtype: float32 rtol max(op_tol, 1e-4) and atol = rtol scaled by the
 * tensor's largest magnitude (see opf_peer_compare); float64 1e-9; integers and bool exact. */
void opf_peer_tolerance(opf_dtype d, double op_tol, double *atol, double *rtol);
/* Compare a tensor of ours with the peer's (same shape up to unit axes, else a mismatch;
 * dtypes may differ in width, e.g. an
 * int64 index answer for our int32). Accumulates into chk (call with chk zeroed first and
 * done = 1, agree = 1): an element agrees when |a - b| <= atol + rtol * |b|, where atol is
 * the dtype's rtol times the largest |b| (a sum of many terms rounds relative to its scale).
 * NaN agrees with NaN. name labels a mismatch in chk->what. */
void opf_peer_compare(const opf_tensor *ours, const opf_tensor *peer, double op_tol,
                      const char *name, opf_peer_check *chk);

/* ---- summaries ---- */
typedef struct opf_peer_geomean {
  char category[32];
  int n;           /* ratios in the mean */
  double geomean;  /* geometric mean of ours/peer */
  double min, max;
} opf_peer_geomean;
/* Per-category geometric means of the ratios of rows[0..n-1] with a peer measurement (native
 * implementation only), categories in first-seen order, then an "all" row. Returns the number
 * of rows written to out (at most max). */
int opf_peer_geomeans(const opf_result *rows, int n, opf_peer_geomean *out, int max);
/* Indices of the rows with the largest ratios, largest first (at most k): worst for opperf. */
int opf_peer_worst(const opf_result *rows, int n, int *idx, int k);

#endif
