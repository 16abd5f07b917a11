/* SPDX-License-Identifier: Apache-2.0 */
/* The model as JSON: the one place where each field of the model gets its output name.
 * `rdmak list --json` prints it; the table, ibstat and doctor views read from it or from the
 * model. Shape: docs/list-json.md and docs/list.schema.json. */
#ifndef RDMAK_HW_JSON_H
#define RDMAK_HW_JSON_H

#include <jansson.h>

#include "hw/hw.h"

#define HW_JSON_SCHEMA "rdmak.node/v1"

/* New reference, or NULL on allocation failure. */
json_t *hw_node_to_json(const struct hw_node *node, const struct hw_ctx *ctx);
json_t *hw_port_to_json(const struct hw_port *p);
json_t *hw_chardev_to_json(const struct hw_chardev *c);

#endif
