/* buildids.c: the context block's build-ids (issue 9, reproducibility): the GNU build-id of the
 * opperf executable, of the libopenblas it loaded and of every plugin, read from the files with
 * libelf, so a result names the exact binaries that produced it. */
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "opperf/elfinfo.h"
#include "opperf/report.h"
#include "plugin_loader.h"

static void add(opf_context *ctx, const char *path) {
  int max = (int)(sizeof ctx->build_ids / sizeof ctx->build_ids[0]);
  if (ctx->n_build_ids == max || !path || !path[0]) return;
  for (int i = 0; i < ctx->n_build_ids; i++)
    if (!strcmp(ctx->build_ids[i].path, path)) return;
  int k = ctx->n_build_ids++;
  snprintf(ctx->build_ids[k].path, sizeof ctx->build_ids[k].path, "%s", path);
  opf_err e;
  /* No note (or an unreadable file): the entry stays, with an empty id (null in JSON). */
  if (opf_elf_build_id(path, ctx->build_ids[k].build_id, sizeof ctx->build_ids[k].build_id, &e))
    ctx->build_ids[k].build_id[0] = '\0';
}

static int add_openblas(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  if (strstr(info->dlpi_name, "libopenblas")) add(data, info->dlpi_name);
  return 0;
}

void opf_context_build_ids(opf_context *ctx) {
  char exe[256];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    add(ctx, exe);
  }
  dl_iterate_phdr(add_openblas, ctx);
  for (int i = 0; i < opf_plugin_count(); i++) add(ctx, opf_plugin_path(i));
}
