/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak dra`: the role. Options, --dry-run (the ResourceSlices it would publish, as YAML). */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doc/doc.h"
#include "doc/yaml.h"
#include "dra/dra.h"
#include "hw/hw.h"
#include "log/log.h"
#include "roles.h"
#include "util/cleanup.h"

/* Exit codes, as --help and docs/dra.md name them. */
enum { DRA_EXIT_OK = 0, DRA_EXIT_RUNTIME = 1, DRA_EXIT_USAGE = 2 };

struct opts {
	struct hw_roots roots;
	const char *node_name, *driver;
	bool dry_run, json;
	int verbose;
	char hostname[HOST_NAME_MAX + 1];
};

static void usage(FILE *f)
{
	fputs("Usage: rdmak dra --dry-run [--node-name NAME] [--driver-name NAME] [--json] "
	      "[--root DIR]\n"
	      "A kubelet DRA plugin: this node's RDMA devices as ResourceSlices "
	      "(resource.k8s.io/v1), with the\n"
	      "PCIe root each one shares with a GPU. See docs/dra.md.\n\n"
	      "      --node-name NAME   the Node's name (default: this host's name)\n"
	      "      --driver-name NAME the DRA driver's name (default " DRA_DRIVER_DEFAULT ")\n"
	      "      --dry-run          print the ResourceSlices it would publish, as a YAML "
	      "stream, and exit\n"
	      "      --json             with --dry-run: one JSON List instead\n" HW_ROOT_USAGE
	      "  -v, --verbose          log debug lines too\n"
	      "  -h, --help             this text\n\n"
	      "Exit: 0 done, 1 runtime failure (the sysfs root missing, stdout unwritable), 2 bad "
	      "usage or a node or\n"
	      "driver name that makes no valid object name.\n",
	      f);
}

/* 1: --help printed; 0: go on; -EINVAL: usage printed. */
static int parse_args(int argc, char **argv, struct opts *o)
{
	enum { O_NODE = 256, O_DRIVER, O_DRY_RUN, O_JSON };
	static const struct option longopts[] = {
		HW_ROOT_LONGOPTS,
		{ "node-name", required_argument, NULL, O_NODE },
		{ "driver-name", required_argument, NULL, O_DRIVER },
		{ "dry-run", no_argument, NULL, O_DRY_RUN },
		{ "json", no_argument, NULL, O_JSON },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", longopts, NULL)) != -1) {
		if (hw_roots_option(&o->roots, c, optarg))
			continue;
		switch (c) {
		case O_NODE: o->node_name = optarg; break;
		case O_DRIVER: o->driver = optarg; break;
		case O_DRY_RUN: o->dry_run = true; break;
		case O_JSON: o->json = true; break;
		case 'v': o->verbose++; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rdmak dra: unexpected argument '%s'\n\n", argv[optind]);
		usage(stderr);
		return -EINVAL;
	}
	if (o->json && !o->dry_run) {
		fprintf(stderr, "rdmak dra: --json goes with --dry-run\n");
		return -EINVAL;
	}
	if (!o->dry_run) {
		fprintf(stderr, "rdmak dra: only --dry-run is served by this build\n");
		return -EINVAL;
	}
	if (!o->node_name) {
		if (gethostname(o->hostname, sizeof(o->hostname) - 1) < 0) {
			fprintf(stderr, "rdmak dra: no --node-name, and no host name: %s\n",
				strerror(errno));
			return -EINVAL;
		}
		o->node_name = o->hostname;
	}
	return 0;
}

static int load(const struct opts *o, struct hw_node **ret)
{
	struct hw_ctx *ctx = NULL;
	struct hw_error herr = { 0 };
	char missing[PATH_MAX];
	int r;

	r = hw_ctx_new_roots(&o->roots, &ctx, missing, sizeof(missing));
	if (r < 0) {
		fprintf(stderr, "rdmak dra: cannot open sysfs root %s: %s\n", missing,
			strerror(-r));
		return r;
	}
	r = hw_load(ctx, HW_LOAD_PKEYS, ret, &herr);
	if (r < 0)
		fprintf(stderr, "rdmak dra: reading the node: %s: %s\n", herr.path,
			hw_strerror(herr.err ? herr.err : -r));
	hw_ctx_free(ctx);
	return r;
}

static int dry_run(const struct opts *o)
{
	struct hw_node *node = NULL;
	struct dra_inventory inv = { 0 };
	struct dra_slice_meta m = { .driver = o->driver, .node_name = o->node_name };
	json_t *pools = NULL, *items = NULL;
	char err[512];
	int r, ret = DRA_EXIT_RUNTIME;

	if (load(o, &node) < 0)
		return DRA_EXIT_RUNTIME;
	r = dra_inventory_build(node, &inv);
	if (r < 0) {
		fprintf(stderr, "rdmak dra: %s\n", strerror(-r));
		goto out;
	}
	for (size_t i = 0; i < inv.n_notes; i++)
		log_warning("%s", inv.notes[i]);
	r = dra_slices_build(&inv, &m, NULL, NULL, &pools, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "rdmak dra: %s\n", r == -EINVAL ? err : strerror(-r));
		ret = r == -EINVAL ? DRA_EXIT_USAGE : DRA_EXIT_RUNTIME;
		goto out;
	}
	items = json_array();
	for (size_t i = 0; items && i < json_array_size(pools); i++)
		json_array_extend(items, json_object_get(json_array_get(pools, i), "slices"));
	if (!items) {
		fprintf(stderr, "rdmak dra: %s\n", strerror(ENOMEM));
		goto out;
	}
	if (o->json) {
		json_t *list = json_pack("{s:s, s:s, s:O}", "apiVersion", "v1", "kind", "List",
					 "items", items);

		r = list ? doc_json(stdout, list) : -ENOMEM;
		json_decref(list);
	} else {
		r = 0;
		for (size_t i = 0; r >= 0 && i < json_array_size(items); i++) {
			fputs("---\n", stdout);
			r = doc_write_yaml(stdout, json_array_get(items, i));
		}
	}
	if (r < 0 || fflush(stdout) != 0) {
		fprintf(stderr, "rdmak dra: writing the slices: %s\n",
			strerror(r < 0 ? -r : errno));
		goto out;
	}
	ret = DRA_EXIT_OK;
out:
	json_decref(items);
	json_decref(pools);
	dra_inventory_clear(&inv);
	hw_node_free(node);
	return ret;
}

int dra_main(int argc, char **argv)
{
	struct opts o = { .driver = DRA_DRIVER_DEFAULT };
	int r;

	r = parse_args(argc, argv, &o);
	if (r != 0)
		return r > 0 ? DRA_EXIT_OK : DRA_EXIT_USAGE;
	log_set_program("dra");
	log_set_max_level(o.verbose ? LOG_LEVEL_DEBUG : LOG_LEVEL_INFO);
	return dry_run(&o);
}
