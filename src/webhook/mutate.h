/* SPDX-License-Identifier: Apache-2.0 */
/* What the webhook does to one pod: the merge rules of docs/webhook.md. Pure (no I/O, no
 * logging): a pod and a config in, the pod as it should be plus what was done and why out. */
#ifndef RDMAK_WEBHOOK_MUTATE_H
#define RDMAK_WEBHOOK_MUTATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "webhook/webhookconf.h"

#define ANNOTATION_GROUPS	     "rdmak.io/rdma-networks"
#define ANNOTATION_GROUPS_SPIDERPOOL "cni.spidernet.io/rdma-resource-inject"
#define ANNOTATION_CONTAINER	     "rdmak.io/rdma-container"
#define SHM_VOLUME		     "rdmak-shm"

struct webhook_mutate_result {
	json_t *pod; /* the pod as the webhook leaves it (a new reference; the input when denied) */
	char **changes; /* strv: one line per change ("network spiderpool/gpu1-sriov") */
	size_t n_changes;
	char **warnings; /* strv: for the API server's `warnings` (short: it may cut past 120 chars) */
	size_t n_warnings;
	char *denied; /* NULL, or why the pod cannot be mutated correctly, naming the group or field;
			      * it may come before the groups are read (then groups is NULL): a pod
			      * with denied set is refused or, allow_anyway, admitted with a warning,
			      * never taken for one that did not opt in */
	bool allow_anyway; /* onError: allow; admit it unchanged and say `denied` as a warning */
	char *groups;	   /* the groups the pod asked for, NULL when it did not opt in or they
			      * could not be read (see denied) */
	char *container;   /* the container that got the resources and settings */
};

/* 0 with *ret filled (see denied), -ENOMEM. pod_ns: the pod's namespace (the AdmissionReview's
 * request.namespace; networks without a namespace resolve to it). */
int webhook_mutate_pod(const struct webhook_config *cfg, const json_t *pod, const char *pod_ns,
		       struct webhook_mutate_result *ret);
void webhook_mutate_result_clear(struct webhook_mutate_result *r);

/* An extended resource's count as a pod writes it (1, "1", "2k"); -EINVAL unless a whole number. */
int webhook_mutate_quantity_count(const json_t *v, unsigned long long *ret);

#endif
