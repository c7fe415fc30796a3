/* plugin_loader.h: library-internal interface of src/plugin.c, which loads user plugins
 * (opperf/plugin.h) and registers their operators and implementations; the CLI calls it for
 * --plugin, the context block lists the loaded files with their build-ids. */
#ifndef OPPERF_SRC_PLUGIN_LOADER_H
#define OPPERF_SRC_PLUGIN_LOADER_H

#include "opperf/error.h"

/* Load the shared library at path (a file path; "libx.so" alone means ./libx.so): read its
 * dynamic symbols with libelf, dlopen it, check every OPPERF_PLUGIN_PREFIX descriptor (ABI,
 * hooks, the registry's self-check) and register them: new operators first, then other
 * implementations (which may implement an operator of the same plugin). Loading the same file
 * twice is a no-op. Errors name the plugin: OPF_EIO missing or unreadable, OPF_EINVAL not an
 * ELF shared library, dlopen failure, no descriptor, a rejected descriptor. A failure after
 * some descriptors were registered leaves them registered (the CLI exits). */
int opf_plugin_load(const char *path, opf_err *err);
/* Loaded plugins, in load order: their absolute paths (for the context block's build-ids). */
int opf_plugin_count(void);
const char *opf_plugin_path(int i);

#endif
