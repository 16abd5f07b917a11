/* SPDX-License-Identifier: Apache-2.0 */
/* The model as JSON: the one place where each field of the model gets its output name.
 * `rdmak list --json` prints it; the table, ibstat and doctor views read from it or from the
 * model. Shape: docs/list-json.md and docs/list.schema.json. */
#ifndef RDMAK_HW_JSON_H
#define RDMAK_HW_JSON_H

#include "doc/doc.h"
#include "hw/hw.h"

#define HW_JSON_SCHEMA "rdmak.node/v1"

/* The node as one JSON document, written as it is walked: no tree, whose building, dumping
 * and freeing grows with every VF while the reads it reports are the work the user asked
 * for. Failures are the writer's (doc_writer_print returns them). */
void hw_node_write_json(struct doc_writer *w, const struct hw_node *node, const struct hw_ctx *ctx);

#endif
