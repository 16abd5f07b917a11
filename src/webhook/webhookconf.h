/* SPDX-License-Identifier: Apache-2.0 */
/* The webhook's config: groups of RDMA networks a pod opts into with one annotation, and the
 * options that make such a pod able to use RDMA. docs/webhook.md describes the format; the
 * shape {"groups": {"<g>": {"networks": [{"namespace", "name", "resource", "count"}]}}} is fixed
 * (docs/webhook.md says by whom), the rest is rdmak's. JSON or YAML, parsed from a buffer (fuzzed); every refusal
 * names the path of the offending field. */
#ifndef RDMAK_WEBHOOK_WEBHOOKCONF_H
#define RDMAK_WEBHOOK_WEBHOOKCONF_H

#include <stdbool.h>
#include <stddef.h>

/* Limits that keep a config (and what one pod can ask for) small. */
#define WEBHOOK_MAX_GROUPS   256
#define WEBHOOK_MAX_NETWORKS 64	  /* per group */
#define WEBHOOK_MAX_COUNT    1024 /* of one resource */

struct webhook_network {
	char *namespace; /* NetworkAttachmentDefinition's namespace ("" in the config: the pod's) */
	char *name;
	char *interface; /* NULL: Multus names it (net1, net2, ...) */
	char *resource;	 /* extended resource the network needs; NULL: none */
	unsigned count;
};

struct webhook_resource {
	char *name;
	unsigned count;
};

enum webhook_on_error {
	WEBHOOK_ON_ERROR_UNSET,
	WEBHOOK_ON_ERROR_DENY,	/* allowed: false, with the reason */
	WEBHOOK_ON_ERROR_ALLOW, /* allowed unchanged, the reason as a warning */
};

struct webhook_group {
	char *name;
	struct webhook_network *networks;
	size_t n_networks;
	struct webhook_resource *resources; /* needed without a network (a shared HCA) */
	size_t n_resources;
	bool ipc_lock; /* add IPC_LOCK to the container (default true) */
	bool shm; /* mount a memory emptyDir at /dev/shm unless one is mounted (default true) */
	char *shm_size_limit; /* its sizeLimit (a quantity), NULL: none */
	bool memory_warning;  /* warn when the container has a memory limit (default true) */
	enum webhook_on_error on_error;
};

struct webhook_config {
	struct webhook_group *groups;
	size_t n_groups;
	char **gpu_resources; /* strv: resources that mark the GPU container; nvidia.com/gpu first */
	enum webhook_on_error on_error; /* never UNSET here: DENY by default */
};

int webhook_config_parse(const char *buf, size_t len, struct webhook_config **ret, char *err,
			 size_t errlen);
void webhook_config_free(struct webhook_config *cfg);

/* The group of that name, or NULL. */
const struct webhook_group *webhook_config_group(const struct webhook_config *cfg,
						 const char *name);
bool webhook_config_is_gpu(const struct webhook_config *cfg, const char *resource);

#endif
