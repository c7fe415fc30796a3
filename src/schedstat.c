/* schedstat.c: summing /proc/self/task/<tid>/schedstat over the threads of this process
 * (include/opperf/schedstat.h). One read of all tasks costs a directory scan and an
 * open/read/close per thread (measured on the 2-CPU VM, 3 tasks: see the README); the harness
 * reads twice per measurement attempt, never per sample. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opperf/schedstat.h"

static char root[256] = "/proc/self/task";

void opf_sched_set_root(const char *dir) {
  snprintf(root, sizeof root, "%s", dir ? dir : "/proc/self/task");
}

int opf_sched_read(opf_sched_totals *t, opf_err *err) {
  memset(t, 0, sizeof *t);
  DIR *d = opendir(root);
  if (!d) return opf_err_set(err, OPF_ESYS, "cannot list %s: %s", root, strerror(errno));
  int dfd = dirfd(d), missing = 0, saved = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char path[300], buf[128];
    snprintf(path, sizeof path, "%s/schedstat", e->d_name);
    int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) { /* a thread that just exited, or a kernel without schedstat */
      missing++;
      saved = errno;
      continue;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    unsigned long long run, wait, slices;
    if (n <= 0) continue;
    buf[n] = '\0';
    if (sscanf(buf, "%llu %llu %llu", &run, &wait, &slices) != 3) continue;
    t->oncpu_s += 1e-9 * (double)run;
    t->runq_s += 1e-9 * (double)wait;
    t->slices += slices;
    t->tasks++;
  }
  closedir(d);
  if (!t->tasks)
    return opf_err_set(err, OPF_ESYS, "no per-thread schedstat in %s (%s; kernel without CONFIG_SCHED_INFO?)",
                       root, missing ? strerror(saved) : "no readable thread");
  return OPF_OK;
}
