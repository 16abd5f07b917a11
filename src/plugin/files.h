/* Files the plugin leaves on the host for others: Multus device-info files and CDI specs.
 * Both are written atomically (temporary file + rename) and removed on exit. */
#ifndef RDMAK_PLUGIN_FILES_H
#define RDMAK_PLUGIN_FILES_H

#include <jansson.h>

#include "plugin/pool.h"

/* The CDI spec of one pool (cdiVersion 0.6.0, kind = the resource name). */
json_t *cdi_spec_build(const struct pool *p);
/* "rdmak-<prefix>_<name>.json" */
int cdi_spec_name(const struct pool *p, char *buf, size_t n);

/* Write content to dir/name atomically with the given mode. */
int file_write_atomic(const char *dir, const char *name, const char *content, unsigned mode);
/* mkdir -p */
int dir_create(const char *path, unsigned mode);

#endif
