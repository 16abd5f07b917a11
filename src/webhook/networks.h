/* SPDX-License-Identifier: Apache-2.0 */
/* The pod annotation k8s.v1.cni.cncf.io/networks, which Multus reads in two forms (multi-net-spec
 * v1 §4.1): a comma list of "[namespace/]name[@interface]", or a JSON list of
 * NetworkSelectionElement objects. Spiderpool's webhook overwrote it (§2.5 of the anchors);
 * rdmak reads both forms, keeps every entry the user wrote, and adds its own after them. */
#ifndef RDMAK_WEBHOOK_NETWORKS_H
#define RDMAK_WEBHOOK_NETWORKS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define NETWORKS_ANNOTATION "k8s.v1.cni.cncf.io/networks"
#define NETWORKS_MAX	    256

/* Parse the annotation's value into a JSON array of objects with at least "name" (and, when given,
 * "namespace", "interface"): JSON-form elements are kept as they are, with every field the user
 * gave. -EINVAL with the reason in err. */
int webhook_networks_parse(const char *value, json_t **ret, char *err, size_t errlen);

/* Whether list already attaches namespace/name. A missing namespace is the pod's (pod_ns), as
 * Multus resolves it. */
bool webhook_networks_contains(const json_t *list, const char *pod_ns, const char *ns,
			       const char *name);

/* Append {"name", "namespace", "interface"} (namespace and interface left out when empty/NULL). */
int webhook_networks_append(json_t *list, const char *ns, const char *name, const char *interface);

/* The compact JSON list, as the annotation is written. malloc'd. */
char *webhook_networks_format(const json_t *list);

#endif
