/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak doctor --nfd FILE`: a Node Feature Discovery local feature file
 * (/etc/kubernetes/node-feature-discovery/features.d/rdmak), one "name=value" per line. NFD
 * turns each line into a node label; names with a prefix are used as they are (the rdmak.io
 * namespace must be allowed with -extra-label-ns or the NodeFeatureRule path). Values must be
 * valid label values: [A-Za-z0-9._-], at most 63 characters. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diag/diag.h"
#include "doctor/nfd.h"
#include "util/cleanup.h"
#include "util/fileio.h"

static bool gpudirect_ready(const struct hw_node *n, const json_t *findings)
{
	size_t i;
	json_t *f;

	if (n->n_gpus == 0 || n->n_rdma == 0)
		return false;
	/* the verdict of gpudirect.driver, so the label and the report never disagree */
	json_array_foreach(findings, i, f)
	{
		if (!strcmp(json_string_value(json_object_get(f, "id")), "gpudirect.driver") &&
		    diag_status_of(f) != DIAG_OK)
			return false;
	}
	for (i = 0; i < n->n_gpus; i++)
		if (n->gpus[i].nearest)
			return true;
	return false;
}

static const char *worst_status(const json_t *findings)
{
	enum diag_status w = DIAG_OK;
	size_t i;
	json_t *f;

	json_array_foreach(findings, i, f) if (diag_status_of(f) > w) w = diag_status_of(f);
	return diag_status_name(w);
}

int doctor_nfd_write(const struct hw_node *n, const json_t *findings, const char *path)
{
	_cleanup_free_ char *text = NULL;
	size_t active = 0, ib = 0, eth = 0, vfs = 0, len = 0;
	bool lag = false;
	FILE *f;

	for (size_t i = 0; i < n->n_rdma; i++) {
		vfs += n->rdma[i].pci && n->rdma[i].pci->physfn;
		lag |= n->rdma[i].lag != NULL;
	}
	HW_NODE_FOREACH_PORT(n, p)
	{
		ib += p->link_layer == HW_LINK_IB;
		eth += p->link_layer == HW_LINK_ETH;
		active += hw_port_state_is_active(p->state);
	}
	f = open_memstream(&text, &len);
	if (!f)
		return -ENOMEM;
	fprintf(f, "# written by rdmak doctor --nfd; NFD re-reads this file, do not edit\n");
	fprintf(f, "rdmak.io/rdma.capable=%s\n", n->n_rdma && active ? "true" : "false");
	fprintf(f, "rdmak.io/rdma.devices=%zu\n", n->n_rdma);
	fprintf(f, "rdmak.io/rdma.active-ports=%zu\n", active);
	fprintf(f, "rdmak.io/rdma.ib=%s\n", ib ? "true" : "false");
	fprintf(f, "rdmak.io/rdma.roce=%s\n", eth ? "true" : "false");
	fprintf(f, "rdmak.io/rdma.sriov-vfs=%zu\n", vfs);
	if (n->kernel.netns_mode >= 0)
		fprintf(f, "rdmak.io/rdma.netns-mode=%s\n",
			n->kernel.netns_mode ? "shared" : "exclusive");
	if (lag)
		fprintf(f, "rdmak.io/rdma.roce-lag=true\n");
	fprintf(f, "rdmak.io/gpu.count=%zu\n", n->n_gpus);
	fprintf(f, "rdmak.io/gpudirect.ready=%s\n",
		gpudirect_ready(n, findings) ? "true" : "false");
	fprintf(f, "rdmak.io/doctor.status=%s\n", worst_status(findings));
	if (fclose(f) != 0)
		return -ENOMEM;
	/* NFD may read at any moment: never let it see half a file */
	return fileio_write_atomic_at(AT_FDCWD, path, text, len, 0644);
}
