/* SPDX-License-Identifier: Apache-2.0 */
/* The JSON model of a pool set that `--dry-run` prints (docs/plugin.md documents its shape):
 * each resource, its members with their health, and the AllocateResponse one container
 * would get now. */
#ifndef RDMAK_PLUGIN_REPORT_H
#define RDMAK_PLUGIN_REPORT_H

#include <jansson.h>
#include <stdio.h>

#include "pool/pool.h"

json_t *plugin_report_build(const struct pool_set *ps);
/* The AllocateResponse for one container, with the proto's field names. */
json_t *plugin_report_container_response(const struct kubelet_container_alloc *a);
int plugin_report_print_text(FILE *f, const json_t *doc);

#endif
