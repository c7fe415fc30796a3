/* plugin.c: loading user plugins (opperf/plugin.h): the descriptors are found by name in the
 * library's dynamic symbol table (libelf, src/elfinfo.c) rather than by a registration
 * function, so a plugin is plain data and a library without descriptors is caught before any
 * of its code runs; each is validated by the registry's own self-check. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opperf/elfinfo.h"
#include "opperf/plugin.h"
#include "plugin_loader.h"

#define MAX_PLUGINS 16
static char *loaded[MAX_PLUGINS];
static int n_loaded;

int opf_plugin_count(void) { return n_loaded; }
const char *opf_plugin_path(int i) { return i >= 0 && i < n_loaded ? loaded[i] : NULL; }

/* Checks the descriptors of one library before any is registered; returns their count. */
static int check_all(const char *path, void *dl, char **names, int n, const opf_op **ds,
                     opf_err *err) {
  for (int i = 0; i < n; i++) {
    ds[i] = dlsym(dl, names[i]);
    if (!ds[i]) return opf_err_set(err, OPF_EINVAL, "plugin '%s': %s: no address", path, names[i]);
    const opf_op *d = ds[i];
    /* The ABI first: with another version nothing else in the struct can be trusted. */
    if (d->abi != OPF_OP_ABI)
      return opf_err_set(err, OPF_EINVAL, "plugin '%s': %s: ABI version %u, this opperf needs %u "
                         "(rebuild the plugin against this opperf's headers)", path, names[i], d->abi, OPF_OP_ABI);
    if (!d->forward)
      return opf_err_set(err, OPF_EINVAL, "plugin '%s': %s (%s): no forward hook", path, names[i],
                         d->name ? d->name : "unnamed");
    opf_err e;
    /* New operators get the registry's full self-check now; implementations are checked when
     * registered, once the operator they implement (maybe from this plugin) exists. */
    if (!d->implements && opf_op_validate(d, &e))
      return opf_err_set(err, OPF_EINVAL, "plugin '%s': %s", path, e.msg);
  }
  return n;
}

static int register_all(const char *path, const opf_op **ds, int n, opf_err *err) {
  opf_err e;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < n; i++) {
      if ((ds[i]->implements != NULL) != pass) continue;
      int rc = pass ? opf_impl_register(ds[i], NULL, &e) : opf_op_register(ds[i], &e);
      if (rc) return opf_err_set(err, OPF_EINVAL, "plugin '%s': %s", path, e.msg);
    }
  return OPF_OK;
}

int opf_plugin_load(const char *path, opf_err *err) {
  char real[PATH_MAX];
  if (!realpath(path, real))
    return opf_err_set(err, OPF_EIO, "plugin '%s': %s", path, strerror(errno));
  for (int i = 0; i < n_loaded; i++)
    if (!strcmp(loaded[i], real)) return OPF_OK;
  if (n_loaded == MAX_PLUGINS)
    return opf_err_set(err, OPF_EINVAL, "plugin '%s': too many plugins (at most %d)", path, MAX_PLUGINS);
  char **names = NULL;
  int n = 0;
  opf_err e;
  if (opf_elf_dynsyms_with_prefix(path, OPPERF_PLUGIN_PREFIX, &names, &n, &e))
    return e.code == OPF_EIO ? opf_err_set(err, OPF_EIO, "plugin '%s': %s", path, e.msg)
                             : opf_err_set(err, OPF_EINVAL, "plugin '%s': not an ELF shared library", path);
  if (n == 0)
    return opf_err_set(err, OPF_EINVAL, "plugin '%s': no operator descriptors (no exported symbol "
                       "starts with " OPPERF_PLUGIN_PREFIX ")", path);
  /* RTLD_NOW: a kernel calling a function opperf does not export fails here, not mid-run. */
  void *dl = dlopen(real, RTLD_NOW | RTLD_LOCAL);
  if (!dl) {
    free(names);
    return opf_err_set(err, OPF_EINVAL, "plugin '%s': %s", path, dlerror());
  }
  const opf_op **ds = calloc((size_t)n, sizeof *ds);
  loaded[n_loaded] = strdup(real);
  int rc = ds && loaded[n_loaded] ? check_all(path, dl, names, n, ds, err)
                                  : opf_err_set(err, OPF_ENOMEM, "out of memory");
  free(names);
  if (rc < 0) { /* nothing registered: the library can go */
    free(ds);
    free(loaded[n_loaded]);
    dlclose(dl);
    return rc;
  }
  /* From here a registered descriptor points into the library: it stays loaded, even when a
   * later descriptor is refused. */
  n_loaded++;
  rc = register_all(path, ds, n, err);
  free(ds);
  return rc;
}
