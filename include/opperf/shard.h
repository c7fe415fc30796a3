/* shard.h: splitting a suite across machines or jobs (`opperf run --shard K/N`; also from
 * GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS, or Kubernetes' JOB_COMPLETION_INDEX with a total) and
 * joining the shards' JSON reports again (`opperf merge`). A case belongs to shard
 * hash(case key) mod N: the split depends on the case, not its position in the list, so it is
 * stable when cases are added or removed elsewhere, and every shard computes it alone. */
#ifndef OPPERF_SHARD_H
#define OPPERF_SHARD_H

#include <stdint.h>

#include "opperf/error.h"

typedef struct opf_shard {
  int index, count; /* 0 <= index < count; count 0: not sharded */
} opf_shard;

/* "K/N" with 0 <= K < N <= 100000 (K counts from 0, as GTEST_SHARD_INDEX and
 * JOB_COMPLETION_INDEX do). */
int opf_shard_parse(const char *s, opf_shard *sh, opf_err *err);

/* Resolve the shard from, in this order: opt ("K/N", --shard); gtest_index and gtest_total
 * (GTEST_SHARD_INDEX, GTEST_TOTAL_SHARDS: both or neither); job_index (JOB_COMPLETION_INDEX)
 * with total (--shards N or OPPERF_SHARDS; without a total JOB_COMPLETION_INDEX is ignored:
 * an Indexed Job need not be sharding opperf). total alone needs an index from one of them.
 * Any argument may be NULL. sh->count 0 when nothing asks for shards. */
int opf_shard_resolve(const char *opt, const char *gtest_index, const char *gtest_total,
                      const char *job_index, const char *total, opf_shard *sh, opf_err *err);

/* 64-bit FNV-1a of the key, and whether shard sh owns the case with that key (always, when
 * sh->count is 0). */
uint64_t opf_shard_hash(const char *key);
int opf_shard_owns(const opf_shard *sh, const char *case_key);

/* Join n opperf JSON reports (texts[i], named names[i] in messages) of the shards of one suite
 * into one report (*out, malloc'd JSON text). Refused (OPF_EINVAL, one-line reason naming the
 * file and the field) when their tool build, CPU model, settings, counters or environment
 * differ, or when a case appears in two of them. The merged context is the first report's,
 * with the earliest timestamp, "interrupted" when any shard was, and a "shards" list (file,
 * hostname, timestamp, command, records) of where each part came from. */
int opf_reports_merge(const char *const *texts, const char *const *names, int n, char **out,
                      opf_err *err);

#endif
