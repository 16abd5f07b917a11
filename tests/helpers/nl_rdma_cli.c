/* SPDX-License-Identifier: Apache-2.0 */
/* nl_rdma_cli CMD [ARGS]: src/nl/rdma.c's requests, one per run, with the answer as JSON on
 * stdout, for tests/vm/nl.sh to compare with what iproute2's rdma(8) reads from the same kernel.
 *   mode                    {"shared": true|false}
 *   devs                    [{"index": N, "name": "...", "ports": N}, ...]
 *   dev NAME                {"index": N, "name": "...", "ports": N}
 *   stat NAME PORT          {"dev": "...", "port": N, "counters": {"name": value, ...}}
 *   counters NAME           [{"port": N, "id": N, "mode": N, "qp_type": N, "pid": N, "qpns": [...],
 *                             "counters": {...}}, ...]
 *   set-netns NAME NSPATH   moves NAME into the namespace file NSPATH
 * NAME may be #INDEX: that device index, sent as it is (what the kernel answers for an index it
 * does not know). A NAME the dump does not list is ENODEV here, without a request.
 * Exit 0; or 1 with "ERRNO-NAME (-N): extack" on stderr, the kernel's extended ack when it sent
 * one; 2 usage. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nl/nl.h"

/* run()'s answer to a command it does not know: no errno means that */
#define USAGE (-100000)

/* The device index of NAME or #INDEX: 0 with *ret, or -ENODEV when no device has that name. */
static int dev_index(struct nl_rdma *r, const char *name, uint32_t *ret)
{
	struct nl_rdma_dev d;
	int e;

	if (name[0] == '#') {
		*ret = (uint32_t)strtoul(name + 1, NULL, 10);
		return 0;
	}
	e = nl_rdma_dev_get(r, name, &d);
	if (e < 0)
		return e;
	if (e == 0)
		return -ENODEV;
	*ret = d.index;
	return 0;
}

static json_t *hw_json(const struct nl_rdma_hwcounter *hw, size_t n)
{
	json_t *o = json_object();

	for (size_t i = 0; i < n; i++)
		json_object_set_new(o, hw[i].name, json_integer((json_int_t)hw[i].value));
	return o;
}

static json_t *dev_json(const struct nl_rdma_dev *d)
{
	char guid[20];

	snprintf(guid, sizeof(guid), "%04x:%04x:%04x:%04x", (unsigned)(d->node_guid >> 48) & 0xffff,
		 (unsigned)(d->node_guid >> 32) & 0xffff, (unsigned)(d->node_guid >> 16) & 0xffff,
		 (unsigned)d->node_guid & 0xffff);
	return json_pack("{s:I, s:s, s:I, s:s}", "index", (json_int_t)d->index, "name", d->name,
			 "ports", (json_int_t)d->ports, "node_guid", guid);
}

static int cmd_devs(struct nl_rdma *r, json_t **ret)
{
	struct nl_rdma_dev *v = NULL;
	size_t n = 0;
	int e = nl_rdma_dev_list(r, &v, &n);

	if (e < 0)
		return e;
	*ret = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(*ret, dev_json(&v[i]));
	free(v);
	return 0;
}

static int cmd_stat(struct nl_rdma *r, const char *name, uint32_t port, json_t **ret)
{
	struct nl_rdma_stat s = { 0 };
	uint32_t index;
	int e = dev_index(r, name, &index);

	if (e < 0)
		return e;
	e = nl_rdma_port_stat(r, index, port, &s);
	if (e < 0)
		return e;
	*ret = json_pack("{s:s, s:I, s:o}", "dev", s.dev, "port", (json_int_t)s.port, "counters",
			 hw_json(s.hw, s.n_hw));
	nl_rdma_stat_clear(&s);
	return 0;
}

static int cmd_counters(struct nl_rdma *r, const char *name, json_t **ret)
{
	struct nl_rdma_counter *v = NULL;
	size_t n = 0;
	uint32_t index;
	int e = dev_index(r, name, &index);

	if (e < 0)
		return e;
	e = nl_rdma_counters(r, index, &v, &n);
	if (e < 0)
		return e;
	*ret = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *q = json_array();

		for (size_t j = 0; j < v[i].n_qpns; j++)
			json_array_append_new(q, json_integer(v[i].qpns[j]));
		json_array_append_new(*ret,
				      json_pack("{s:I, s:I, s:I, s:i, s:I, s:o, s:o}", "port",
						(json_int_t)v[i].port, "id", (json_int_t)v[i].id,
						"mode", (json_int_t)v[i].mode, "qp_type",
						v[i].qp_type, "pid", (json_int_t)v[i].pid, "qpns",
						q, "counters", hw_json(v[i].hw, v[i].n_hw)));
	}
	nl_rdma_counters_free(v, n);
	return 0;
}

static int cmd_set_netns(struct nl_rdma *r, const char *name, const char *path)
{
	uint32_t index;
	int fd, e = dev_index(r, name, &index);

	if (e < 0)
		return e;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = nl_rdma_dev_set_netns(r, index, fd);
	close(fd);
	return e;
}

static int run(struct nl_rdma *r, int argc, char **argv, json_t **ret)
{
	const char *c = argv[1];
	struct nl_rdma_dev d;
	bool shared;
	int e;

	if (strcmp(c, "mode") == 0 && argc == 2) {
		e = nl_rdma_netns_shared(r, &shared);
		if (e >= 0)
			*ret = json_pack("{s:b}", "shared", shared);
		return e;
	}
	if (strcmp(c, "devs") == 0 && argc == 2)
		return cmd_devs(r, ret);
	if (strcmp(c, "dev") == 0 && argc == 3) {
		e = nl_rdma_dev_get(r, argv[2], &d);
		if (e == 0)
			return -ENODEV;
		if (e > 0)
			*ret = dev_json(&d);
		return e;
	}
	if (strcmp(c, "stat") == 0 && argc == 4)
		return cmd_stat(r, argv[2], (uint32_t)strtoul(argv[3], NULL, 10), ret);
	if (strcmp(c, "counters") == 0 && argc == 3)
		return cmd_counters(r, argv[2], ret);
	if (strcmp(c, "set-netns") == 0 && argc == 4) {
		e = cmd_set_netns(r, argv[2], argv[3]);
		if (e >= 0)
			*ret = json_object();
		return e;
	}
	return USAGE;
}

int main(int argc, char **argv)
{
	struct nl_rdma *r = NULL;
	json_t *j = NULL;
	int e;

	if (argc < 2) {
		fprintf(stderr,
			"usage: nl_rdma_cli mode|devs|dev NAME|stat NAME PORT|counters NAME|"
			"set-netns NAME NSPATH\n");
		return 2;
	}
	e = nl_rdma_open(-1, &r);
	if (e >= 0)
		e = run(r, argc, argv, &j);
	if (e == USAGE) {
		fprintf(stderr, "nl_rdma_cli: unknown command or arguments\n");
		nl_rdma_free(r);
		return 2;
	}
	if (e < 0) {
		const char *m = r ? nl_rdma_errmsg(r) : "";
		fprintf(stderr, "%s (%d)%s%s\n", strerrorname_np(-e) ? strerrorname_np(-e) : "?", e,
			m[0] ? ": " : "", m);
		nl_rdma_free(r);
		return 1;
	}
	json_dumpf(j, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(j);
	nl_rdma_free(r);
	return 0;
}
