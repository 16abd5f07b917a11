/* Files the plugin leaves on the host for others: Multus device-info files and CDI specs.
 * Both are written with write_file_atomic_at() (util/fileio.h) and removed on exit. */
#ifndef RDMAK_PLUGIN_FILES_H
#define RDMAK_PLUGIN_FILES_H

#include <jansson.h>

#include "plugin/pool.h"

/* The CDI spec of one pool (cdiVersion 0.6.0, kind = the resource name). */
json_t *cdi_spec_build(const struct pool *p);
/* "rdmak-<prefix>_<name>.json" */
int cdi_spec_name(const struct pool *p, char *buf, size_t n);

#endif
