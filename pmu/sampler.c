/* sampler.c: perf_event sampling for the profiler (declared in include/opperf/pmu.h): one disabled
 * sampling event per thread with its own mmap ring buffer, enabled around measured samples,
 * and a reader of PERF_RECORD_SAMPLE / LOST / THROTTLE records (data_head / data_tail with
 * acquire / release ordering, records that wrap around the buffer end copied out).
 *
 * Why one buffer per thread: `inherit` only follows threads created after the open (the
 * OpenMP pool already exists) and the kernel refuses mmap on an inherited per-thread event;
 * PERF_EVENT_IOC_SET_OUTPUT into one buffer is refused between per-thread (cpu = -1) events
 * of different threads. So, as `perf record --per-thread` does, every thread gets its own. */
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "opperf/pmu.h"

#define MAX_THREADS 256
#define MAX_CHAIN 256 /* deeper chains are cut (perf_event_max_stack is 127 by default) */

typedef struct ring {
  int fd, tid;
  void *base;       /* metadata page + data pages */
  size_t data_size; /* power of two */
} ring;

struct opf_sampler {
  struct perf_event_attr attr;
  ring r[MAX_THREADS];
  int n;
  size_t data_pages;
  uint64_t lost, throttled;
  unsigned char *scratch; /* a record that wraps around the end of a buffer */
  size_t scratch_n;
};

static int tid_known(const opf_sampler *s, int tid) {
  for (int i = 0; i < s->n; i++)
    if (s->r[i].tid == tid) return 1;
  return 0;
}

/* Why the kernel refused: what a user can change. */
static int refused(int e, const struct perf_event_attr *a, opf_err *err) {
  int par = -99;
  FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
  if (f) {
    if (fscanf(f, "%d", &par) != 1) par = -99;
    fclose(f);
  }
  const char *ev = a->type == PERF_TYPE_SOFTWARE ? "cpu-clock" : "cycles";
  if (e == EACCES || e == EPERM)
    return opf_err_set(err, OPF_EUNSUPPORTED,
                       "cannot sample %s: not permitted (perf_event_paranoid=%d; user-space "
                       "sampling of one's own process needs perf_event_paranoid <= 2 or CAP_PERFMON)",
                       ev, par);
  if ((e == ENOENT || e == EOPNOTSUPP || e == ENODEV) && a->type == PERF_TYPE_HARDWARE)
    return opf_err_set(err, OPF_EUNSUPPORTED,
                       "cannot sample cycles: no hardware PMU here (use --profile-event cpu-clock)");
  if (e == EINVAL)
    return opf_err_set(err, OPF_EUNSUPPORTED,
                       "cannot sample %s at this rate (above /proc/sys/kernel/perf_event_max_sample_rate?)", ev);
  return opf_err_set(err, OPF_EUNSUPPORTED, "cannot sample %s: perf_event_open: %s", ev, strerror(e));
}

/* Open and map the event of one thread. ESRCH (the thread ended meanwhile) is not an error. */
static int open_thread(opf_sampler *s, int tid, opf_err *err) {
  if (s->n == MAX_THREADS) return OPF_OK; /* further threads are not sampled */
  long fd = syscall(SYS_perf_event_open, &s->attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return errno == ESRCH ? OPF_OK : refused(errno, &s->attr, err);
  long page = sysconf(_SC_PAGESIZE);
  void *base = MAP_FAILED;
  /* Without CAP_IPC_LOCK the buffers count against perf_event_mlock_kb: halve until one fits. */
  for (; s->data_pages >= 4; s->data_pages /= 2) {
    base = mmap(NULL, (s->data_pages + 1) * (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd, 0);
    if (base != MAP_FAILED || (errno != EPERM && errno != ENOMEM)) break;
  }
  if (base == MAP_FAILED) {
    int e = errno;
    close((int)fd);
    return opf_err_set(err, OPF_EUNSUPPORTED, "cannot map the sampling ring buffer: %s "
                       "(raise /proc/sys/kernel/perf_event_mlock_kb)", strerror(e));
  }
  ring *r = &s->r[s->n++];
  r->fd = (int)fd;
  r->tid = tid;
  r->base = base;
  r->data_size = s->data_pages * (size_t)page;
  return OPF_OK;
}

int opf_sampler_refresh(opf_sampler *s, opf_err *err) {
  DIR *d = opendir("/proc/self/task");
  if (!d) return opf_err_set(err, OPF_ESYS, "cannot list /proc/self/task: %s", strerror(errno));
  int rc = OPF_OK;
  for (struct dirent *de; rc == OPF_OK && (de = readdir(d));) {
    int tid = atoi(de->d_name);
    if (tid > 0 && !tid_known(s, tid)) rc = open_thread(s, tid, err);
  }
  closedir(d);
  return rc;
}

int opf_sampler_open(opf_sampler **out, const char *event, int hz, opf_err *err) {
  *out = NULL;
  if (hz < 1 || hz > 100000)
    return opf_err_set(err, OPF_EINVAL, "sampling rate must be 1 to 100000 Hz, not %d", hz);
  opf_sampler *s = calloc(1, sizeof *s);
  if (!s) return opf_err_set(err, OPF_ENOMEM, "out of memory");
  struct perf_event_attr *a = &s->attr;
  a->size = sizeof *a;
  if (!event || !strcmp(event, "cpu-clock")) {
    a->type = PERF_TYPE_SOFTWARE;
    a->config = PERF_COUNT_SW_CPU_CLOCK;
    a->sample_period = 1000000000ull / (unsigned)hz; /* cpu-clock counts nanoseconds */
  } else if (!strcmp(event, "cycles")) {
    a->type = PERF_TYPE_HARDWARE;
    a->config = PERF_COUNT_HW_CPU_CYCLES;
    a->freq = 1; /* the kernel adapts the period to reach hz */
    a->sample_freq = (unsigned)hz;
  } else {
    free(s);
    return opf_err_set(err, OPF_EINVAL, "unknown sampling event '%s' (use cpu-clock or cycles)", event);
  }
  a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN;
  a->disabled = 1;
  /* User space only: allowed at perf_event_paranoid 2 without privileges, and the kernel
   * reports a sample taken in the kernel at the user instruction that entered it. */
  a->exclude_kernel = 1;
  a->exclude_hv = 1;
  a->exclude_callchain_kernel = 1;
  s->data_pages = 64;
  int rc = opf_sampler_refresh(s, err);
  if (!rc && !s->n) rc = opf_err_set(err, OPF_ESYS, "no thread to sample");
  if (rc) {
    opf_sampler_close(s);
    return rc;
  }
  *out = s;
  return OPF_OK;
}

void opf_sampler_enable(opf_sampler *s) {
  for (int i = 0; i < s->n; i++) ioctl(s->r[i].fd, PERF_EVENT_IOC_ENABLE, 0);
}

void opf_sampler_disable(opf_sampler *s) {
  for (int i = 0; i < s->n; i++) ioctl(s->r[i].fd, PERF_EVENT_IOC_DISABLE, 0);
}

/* A PERF_RECORD_SAMPLE of sample_type IP | TID | CALLCHAIN: ip, pid/tid, nr, ips[nr]. */
static void parse_sample(const unsigned char *rec, size_t size, opf_sample_fn fn, void *ctx) {
  const size_t hdr = sizeof(struct perf_event_header);
  if (size < hdr + 3 * sizeof(uint64_t)) return;
  uint64_t ip, nr;
  memcpy(&ip, rec + hdr, sizeof ip);
  memcpy(&nr, rec + hdr + 16, sizeof nr);
  const unsigned char *p = rec + hdr + 24;
  if (nr > (size - hdr - 24) / sizeof(uint64_t)) nr = (size - hdr - 24) / sizeof(uint64_t);
  uint64_t chain[MAX_CHAIN];
  int n = 0;
  for (uint64_t i = 0; i < nr && n < MAX_CHAIN; i++) {
    uint64_t a;
    memcpy(&a, p + i * sizeof a, sizeof a);
    if (a >= (uint64_t)PERF_CONTEXT_MAX) continue; /* PERF_CONTEXT_USER and the like */
    chain[n++] = a;
  }
  if (!n) chain[n++] = ip; /* no chain could be read: the sampled instruction alone */
  fn(ctx, chain, n);
}

static void drain_ring(opf_sampler *s, ring *r, int half_full, opf_sample_fn fn, void *ctx) {
  struct perf_event_mmap_page *meta = r->base;
  const unsigned char *data = (const unsigned char *)r->base + sysconf(_SC_PAGESIZE);
  uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;
  if (half_full && head - tail < r->data_size / 2) return;
  const size_t mask = r->data_size - 1;
  while (tail < head) {
    struct perf_event_header h;
    size_t off = (size_t)(tail & mask);
    /* Headers are 8-byte aligned and the buffer size is a multiple of 8: never split. */
    memcpy(&h, data + off, sizeof h);
    if (h.size < sizeof h || tail + h.size > head) break;
    const unsigned char *rec = data + off;
    if (off + h.size > r->data_size) { /* wraps around the end: copy it out */
      if (s->scratch_n < h.size) {
        unsigned char *b = realloc(s->scratch, h.size);
        if (!b) break;
        s->scratch = b;
        s->scratch_n = h.size;
      }
      size_t first = r->data_size - off;
      memcpy(s->scratch, data + off, first);
      memcpy(s->scratch + first, data, h.size - first);
      rec = s->scratch;
    }
    if (h.type == PERF_RECORD_SAMPLE) {
      parse_sample(rec, h.size, fn, ctx);
    } else if (h.type == PERF_RECORD_LOST && h.size >= sizeof h + 16) {
      uint64_t lost;
      memcpy(&lost, rec + sizeof h + 8, sizeof lost);
      s->lost += lost;
    } else if (h.type == PERF_RECORD_THROTTLE) {
      s->throttled++;
    }
    tail += h.size;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
}

void opf_sampler_drain(opf_sampler *s, int half_full, opf_sample_fn fn, void *ctx) {
  for (int i = 0; i < s->n; i++) drain_ring(s, &s->r[i], half_full, fn, ctx);
}

void opf_sampler_counts(const opf_sampler *s, uint64_t *lost, uint64_t *throttled) {
  *lost = s->lost;
  *throttled = s->throttled;
}

int opf_sampler_threads(const opf_sampler *s) { return s->n; }

void opf_sampler_close(opf_sampler *s) {
  if (!s) return;
  long page = sysconf(_SC_PAGESIZE);
  for (int i = 0; i < s->n; i++) {
    munmap(s->r[i].base, s->r[i].data_size + (size_t)page);
    close(s->r[i].fd);
  }
  free(s->scratch);
  free(s);
}
