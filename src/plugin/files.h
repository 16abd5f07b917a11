/* SPDX-License-Identifier: Apache-2.0 */
/* Files the plugin leaves on the host for others: Multus device-info files and CDI specs.
 * Both are written with fileio_write_atomic_at() (util/fileio.h) and removed on exit. */
#ifndef RDMAK_PLUGIN_FILES_H
#define RDMAK_PLUGIN_FILES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "pool/pool.h"

/* The files one writer left in a folder, so that it replaces or removes exactly those (never
 * another plugin's files of the same names). */
struct plugin_files_written {
	char **names; /* strv, names in the folder */
	size_t n;
};
/* A file that could not be written or removed: its path and -errno. */
typedef void (*plugin_files_fail_fn)(void *ud, const char *path, int err);
/* Which pools get files (the plugin: those it serves). */
typedef bool (*plugin_files_keep_fn)(void *ud, const struct pool *p);

/* Remove w's files from dir (a missing one is fine; others go to fail) and forget them. */
void plugin_files_remove(const char *dir, struct plugin_files_written *w, plugin_files_fail_fn fail,
			 void *ud);
/* Add to w one device-info file (mode 0444) per member of each exclusive pool of ps that keep()
 * accepts, made in dir (created if need be). Multus reads them after Allocate: writing them per
 * load keeps Allocate free of I/O. A file that fails goes to fail. Returns how many were
 * written, or -errno when dir cannot be made (nothing written). */
int plugin_files_devinfo_write(const struct pool_set *ps, plugin_files_keep_fn keep,
			       const char *dir, struct plugin_files_written *w,
			       plugin_files_fail_fn fail, void *ud);
/* The same for the CDI specs, one per pool keep() accepts (mode 0644). */
int plugin_files_cdi_write(const struct pool_set *ps, plugin_files_keep_fn keep, const char *dir,
			   struct plugin_files_written *w, plugin_files_fail_fn fail, void *ud);

/* What a load does: write the files of ps as the two functions above do, then remove those of
 * *w (the previous load's) that were not written again, and make *w the new list. A file that
 * stays is replaced by rename, never removed first: Multus reads a device-info file whenever a
 * pod starts, and every rescan (periodicUpdateInterval, 60 s) rewrites them all. Write failures
 * go to fail, removal failures to fail_rm. Returns what the write function returned. */
int plugin_files_devinfo_update(const struct pool_set *ps, plugin_files_keep_fn keep,
				const char *dir, struct plugin_files_written *w,
				plugin_files_fail_fn fail, plugin_files_fail_fn fail_rm, void *ud);
int plugin_files_cdi_update(const struct pool_set *ps, plugin_files_keep_fn keep, const char *dir,
			    struct plugin_files_written *w, plugin_files_fail_fn fail,
			    plugin_files_fail_fn fail_rm, void *ud);

/* The CDI spec of one pool (cdiVersion 0.6.0, kind = the resource name). */
json_t *plugin_files_cdi_spec(const struct pool *p);
/* "rdmak-<prefix>_<name>.json" */
int plugin_files_cdi_name(const struct pool *p, char *buf, size_t n);

/* The Multus device-info file name for one device: "<prefix>-<name>-<id>-device.json". */
int plugin_files_devinfo_name(const struct pool *p, const char *id, char *buf, size_t n);
/* Its content (spec 1.1.0, with rdma-device); malloc'd. */
char *plugin_files_devinfo_json(const struct pool *p, const struct pool_member *m);

#endif
