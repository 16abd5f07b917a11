#include "plugin/files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/cleanup.h"

int cdi_spec_name(const struct pool *p, char *buf, size_t n)
{
	int l = snprintf(buf, n, "rdmak-%s_%s.json", p->res->prefix, p->res->name);

	return l < 0 || (size_t)l >= n ? -ENAMETOOLONG : 0;
}

static json_t *device_nodes(const struct kl_device_spec *s, size_t n, bool rdma_cm)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++) {
		bool is_cm = strcmp(s[i].host_path, "/dev/infiniband/rdma_cm") == 0;

		if (is_cm != rdma_cm)
			continue;
		json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "path", s[i].container_path, "hostPath",
						   s[i].host_path, "permissions", s[i].permissions));
	}
	return a;
}

json_t *cdi_spec_build(const struct pool *p)
{
	json_t *spec, *devs, *common = NULL;

	spec = json_pack("{s:s, s:s}", "cdiVersion", "0.6.0", "kind", p->res->full_name);
	devs = json_array();
	if (!spec || !devs) {
		json_decref(spec);
		json_decref(devs);
		return NULL;
	}
	for (size_t i = 0; i < p->n_m; i++) {
		const struct pool_member *m = &p->m[i];

		json_array_append_new(devs, json_pack("{s:s, s:{s:o}}", "name", m->id, "containerEdits", "deviceNodes",
						      device_nodes(m->specs, m->n_specs, false)));
		/* rdma_cm is one node for the whole host: spec-wide edits add it once */
		if (!common) {
			json_t *cm = device_nodes(m->specs, m->n_specs, true);

			if (json_array_size(cm))
				common = cm;
			else
				json_decref(cm);
		}
	}
	json_object_set_new(spec, "devices", devs);
	if (common)
		json_object_set_new(spec, "containerEdits", json_pack("{s:o}", "deviceNodes", common));
	return spec;
}

