/* wire.h: the wire format of a measured result between processes (isolated case processes
 * send their results to the run's process this way): versioned, length-prefixed, one tagged
 * field at a time, so no struct bytes or pointers cross a process boundary. See src/wire.c. */
#ifndef OPPERF_WIRE_H
#define OPPERF_WIRE_H

#include <stddef.h>

#include "opperf/harness.h"

#define OPF_WIRE_VERSION 1
#define OPF_WIRE_HEADER 12 /* "OPFW", u16 version, u16 flags, u32 payload length */

/* Encode r into a new buffer (*buf, malloc'd; *len bytes): the header, then every field. The
 * peer join (r->peer) is not sent: it belongs to the receiving process. OPF_ENOMEM on failure. */
int opf_wire_encode(const opf_result *r, char **buf, size_t *len, opf_err *err);
/* Decode one message at buf (at most len bytes) into r (initialised here; release it with
 * opf_result_release). *used = the message's length. Unknown fields are skipped (a newer
 * sender); a field of the wrong size, a count that disagrees with its array, a bad magic or
 * version, or a short buffer is OPF_EINVAL with the reason in err. */
int opf_wire_decode(const char *buf, size_t len, opf_result *r, size_t *used, opf_err *err);

/* For the tests: the fields the tables do not cover in each encoded struct, as a count of
 * bytes that are neither a field nor alignment padding (0 when every member is listed). */
int opf_wire_unlisted_bytes(void);

#endif
