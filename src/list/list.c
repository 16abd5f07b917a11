/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak list: the node's RDMA hardware as a table (default), as the standard tools print it
 * (ibdev2netdev, ibstat, rdma link: for side-by-side checks and scripts that parse them), or
 * as the whole model in JSON. */
#include <errno.h>
#include <limits.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hw/hw-json.h"
#include "hw/hw.h"
#include "doc/doc.h"
#include "roles.h"
#include "util/cleanup.h"
#include "util/strutil.h"

/* Exit codes (usage text and README). */
enum { LIST_EXIT_OK = 0, LIST_EXIT_READ = 1, LIST_EXIT_USAGE = 2 };

enum list_format { FMT_TABLE, FMT_JSON, FMT_IBDEV2NETDEV, FMT_IBSTAT, FMT_RDMA_LINK };

static const struct {
	const char *name;
	enum list_format fmt;
} formats[] = {
	{ "table", FMT_TABLE },
	{ "json", FMT_JSON },
	{ "ibdev2netdev", FMT_IBDEV2NETDEV },
	{ "ibstat", FMT_IBSTAT },
	{ "rdma-link", FMT_RDMA_LINK },
};

static void usage(FILE *f)
{
	fputs("Usage: rdmak list [--root DIR | --sysfs DIR --devfs DIR] [--json | --format FMT]\n"
	      "\n"
	      "Show this node's RDMA hardware: one row per port with its state, rate, link layer, netdev,\n"
	      "PCI function, NUMA node and nearest GPU.\n"
	      "\n" HW_ROOT_USAGE
	      "  --json         the whole model as JSON (shape: docs/list-json.md)\n"
	      "  --pkeys        with --json, also read every port's pkey table (128 reads per IB port);\n"
	      "                 refused without --json\n"
	      "  --format FMT   table | json | ibdev2netdev | ibstat | rdma-link (with --json: refused\n"
	      "                 unless json)\n"
	      "                 (the last three print what those tools print, from sysfs alone)\n"
	      "  -h, --help     this text\n"
	      "\n"
	      "Exit: 0 ok (also when the node has no RDMA), 1 a root unreadable, or a port's state, phys_state\n"
	      "or link_layer unreadable or unparsable (the rest is printed, that field unknown, the file named\n"
	      "on stderr), 2 usage.\n",
	      f);
}

/* ---- table --------------------------------------------------------------------------- */

static const char *carrier_word(const struct hw_netdev *n)
{
	return n->carrier == 1 ? "Up" : "Down";
}

/* The GPUs with the best relation to this device: "GPU0,GPU1 (PIX)". */
static json_t *nearest_gpus(const struct hw_node *node, const struct hw_rdma_dev *d)
{
	enum hw_topo best = HW_TOPO_UNKNOWN;
	_cleanup_free_ char *list = NULL;

	if (!d->pci || !node->n_gpus)
		return json_null();
	for (size_t i = 0; i < node->n_gpus; i++) {
		enum hw_topo t = hw_topo_relation(node->gpus[i].pci, d->pci);
		if (best == HW_TOPO_UNKNOWN || t < best)
			best = t;
	}
	for (size_t i = 0; i < node->n_gpus; i++)
		if (hw_topo_relation(node->gpus[i].pci, d->pci) == best &&
		    str_append_sep(&list, ",", "GPU%u", node->gpus[i].index) < 0)
			return NULL;
	if (str_append_sep(&list, " ", "(%s)", hw_topo_name(best)) < 0)
		return NULL;
	return doc_string(list);
}

static json_t *table_rows(const struct hw_node *node)
{
	_cleanup_(json_decrefp) json_t *rows = json_array();

	for (size_t i = 0; i < node->n_rdma; i++) {
		const struct hw_rdma_dev *d = &node->rdma[i];
		json_t *gpu = nearest_gpus(node, d);

		HW_DEV_FOREACH_PORT(d, p)
		{
			char rate[64], nd[48];

			if (p->rate.gbps > 0)
				snprintf(rate, sizeof(rate), "%g Gb/s %uX %s", p->rate.gbps,
					 p->rate.width, p->rate.speed);
			else
				snprintf(rate, sizeof(rate), "%s",
					 p->rate.raw[0] ? p->rate.raw : "-");
			if (p->netdev)
				snprintf(nd, sizeof(nd), "%s (%s)", p->netdev->name,
					 carrier_word(p->netdev));
			else
				snprintf(nd, sizeof(nd), "-");
			/* every string from sysfs through doc_string(): a name that is not UTF-8 is
			 * escaped, and a row that cannot be built fails the table instead of vanishing */
			if (!gpu ||
			    doc_append(
				    rows,
				    json_pack(
					    "{s:o, s:I, s:o, s:o, s:o, s:s, s:o, s:o, s:o, s:O, s:o}",
					    "ibdev", doc_string(d->name), "port",
					    (json_int_t)p->num, "state", doc_string(p->state_name),
					    "phys", doc_string(p->phys_state_name), "rate",
					    doc_string(rate), "link",
					    hw_link_layer_name(p->link_layer), "netdev",
					    doc_string(nd), "pci",
					    d->pci ? doc_string(d->pci->bdf) : json_null(), "numa",
					    d->pci && d->pci->numa_node >= 0
						    ? json_integer(d->pci->numa_node)
						    : json_null(),
					    "gpu", gpu, "kind",
					    d->lag		       ? json_string("LAG")
					    : d->pci && d->pci->physfn ? json_string("VF")
								       : json_null())) < 0) {
				json_decref(gpu);
				return NULL;
			}
		}
		json_decref(gpu);
	}
	return TAKE_PTR(rows);
}

static const struct doc_column table_cols[] = {
	{ "IBDEV", "ibdev" }, { "PORT", "port" },	{ "STATE", "state" },	{ "PHYS", "phys" },
	{ "RATE", "rate" },   { "LINK", "link" },	{ "NETDEV", "netdev" }, { "PCI", "pci" },
	{ "NUMA", "numa" },   { "NEAREST GPU", "gpu" }, { "KIND", "kind" },
};

static int print_table(FILE *f, const struct hw_node *node, const struct hw_ctx *ctx)
{
	_cleanup_(json_decrefp) json_t *rows = NULL;

	if (!node->n_rdma) {
		fprintf(f, "no RDMA devices on this node (%s/class/infiniband %s)\n",
			hw_ctx_sysfs(ctx),
			node->has_rdma_class ? "is empty"
					     : "does not exist: no RDMA driver is loaded");
		return 0;
	}
	rows = table_rows(node);
	return rows ? doc_table(f, rows, table_cols, ELEMENTSOF(table_cols)) : -ENOMEM;
}

/* ---- the standard tools' formats ------------------------------------------------------ */

static int print_ibdev2netdev(FILE *f, const struct hw_node *node)
{
	HW_NODE_FOREACH_PORT(node, p)
	{
		/* mlnx-tools' ibdev2netdev ("new style") prints nothing for a port whose netdev it
		 * did not find, and scripts that parse it count on that: the table and JSON say "-"
		 * and null instead. */
		if (p->netdev)
			fprintf(f, "%s port %u ==> %s (%s)\n", p->dev->name, p->num,
				p->netdev->name, carrier_word(p->netdev));
	}
	return ferror(f) ? -EIO : 0;
}

static void hex64(const char *guid, char out[19])
{
	size_t o = 0;

	out[o++] = '0';
	out[o++] = 'x';
	for (const char *p = guid; *p && o < 18; p++)
		if (*p != ':')
			out[o++] = *p;
	while (o < 18)
		out[o++] = '0';
	out[o] = '\0';
}

static const char *ibstat_state(enum hw_port_state s)
{
	/* ibstat's own names (libibumad); it prints ACTIVE_DEFER as "???" */
	static const char *const n[] = { "???", "Down", "Initializing", "Armed", "Active" };
	return s >= 0 && s < (int)ELEMENTSOF(n) ? n[s] : "???";
}

static const char *ibstat_phys(enum hw_phys_state s)
{
	static const char *const n[] = {
		"No state change",	     "Sleep",  "Polling",	    "Disabled",
		"PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "PhyTest"
	};
	return s >= 0 && s < (int)ELEMENTSOF(n) ? n[s] : "???";
}

static int print_ibstat(FILE *f, const struct hw_node *node)
{
	char g1[19], g2[19];

	for (size_t i = 0; i < node->n_rdma; i++) {
		const struct hw_rdma_dev *d = &node->rdma[i];

		hex64(d->node_guid, g1);
		hex64(d->sys_image_guid, g2);
		fprintf(f,
			"CA '%s'\n\tCA type: %s\n\tNumber of ports: %zu\n\tFirmware version: %s\n"
			"\tHardware version: %s\n\tNode GUID: %s\n\tSystem image GUID: %s\n",
			d->name, d->hca_type, d->n_ports, d->fw_ver, d->hw_rev, g1, g2);
		HW_DEV_FOREACH_PORT(d, p)
		{
			char rate[32];

			/* libibumad keeps the integer part; 2.5 (1X SDR) and FDR10 are special-cased */
			if (strstr(p->rate.raw, ".5 "))
				snprintf(rate, sizeof(rate), "%.1f", p->rate.gbps);
			else
				snprintf(rate, sizeof(rate), "%d%s", (int)p->rate.gbps,
					 !strcmp(p->rate.speed, "FDR10") ? " (FDR10)" : "");
			hex64(p->port_guid, g1);
			fprintf(f,
				"\tPort %u:\n\t\tState: %s\n\t\tPhysical state: %s\n\t\tRate: %s\n\t\tBase lid: %u\n"
				"\t\tLMC: %u\n\t\tSM lid: %u\n\t\tCapability mask: 0x%08x\n\t\tPort GUID: %s\n\t\tLink layer: %s\n",
				p->num, ibstat_state(p->state), ibstat_phys(p->phys_state), rate,
				p->lid, p->lmc, p->sm_lid, p->cap_mask, g1,
				hw_link_layer_name(p->link_layer));
		}
	}
	return ferror(f) ? -EIO : 0;
}

static const char *rdma_phys(enum hw_phys_state s)
{
	/* iproute2 names phys_state 4 "ARMED" where the kernel says PortConfigurationTraining */
	static const char *const n[] = {
		"NOP",	   "SLEEP", "POLLING", "DISABLED", "ARMED", "LINK_UP", "LINK_ERROR_RECOVER",
		"PHY_TEST"
	};
	return s >= 0 && s < (int)ELEMENTSOF(n) ? n[s] : "UNKNOWN";
}

/* The netdev `rdma link` shows (RDMA_NLDEV_ATTR_NDEV_NAME): for RoCE LAG the driver reports
 * a slave (the active one in active-backup, else PF0's), not the bond ibdev2netdev names. */
static const struct hw_netdev *nldev_netdev(const struct hw_port *p)
{
	const struct hw_netdev *lag = p->dev->lag;

	if (p->link_layer != HW_LINK_ETH)
		return NULL;
	if (!lag)
		return p->netdev;
	if (lag->bond->active)
		return lag->bond->active;
	for (size_t i = 0; i < lag->bond->n_slaves; i++)
		if (lag->bond->slaves[i]->pci && lag->bond->slaves[i]->pci == p->dev->pci)
			return lag->bond->slaves[i];
	return lag->bond->n_slaves ? lag->bond->slaves[0] : p->netdev;
}

static int print_rdma_link(FILE *f, const struct hw_node *node)
{
	HW_NODE_FOREACH_PORT(node, p)
	{
		const struct hw_netdev *n = nldev_netdev(p);

		fprintf(f, "link %s/%u ", p->dev->name, p->num);
		if (p->link_layer == HW_LINK_IB && p->n_gids && p->gids[0].index == 0)
			fprintf(f, "subnet_prefix %.19s lid %u sm_lid %u lmc %u ", p->gids[0].gid,
				p->lid, p->sm_lid, p->lmc);
		fprintf(f, "state %s physical_state %s ", hw_port_state_name(p->state),
			rdma_phys(p->phys_state));
		if (n)
			fprintf(f, "netdev %s ", n->name);
		fputc('\n', f);
	}
	return ferror(f) ? -EIO : 0;
}

/* ---- role ---------------------------------------------------------------------------- */

/* The port attributes that could not be read or parsed (the output shows them UNKNOWN): each
 * named on stderr. Returns how many. */
static size_t report_attr_errors(const struct hw_node *node, const struct hw_ctx *ctx)
{
	char msg[PATH_MAX + 128];
	size_t n = 0;

	HW_NODE_FOREACH_PORT(node, p)
	for (size_t i = 0; i < p->n_errors; i++, n++)
		fprintf(stderr, "rdmak list: %s (shown as unknown)\n",
			hw_attr_error_str(p, &p->errors[i], hw_ctx_sysfs(ctx), msg, sizeof(msg)));
	return n;
}

int list_main(int argc, char **argv)
{
	static const struct option opts[] = {
		HW_ROOT_LONGOPTS,
		{ "json", no_argument, NULL, 'j' },
		{ "format", required_argument, NULL, 'f' },
		{ "pkeys", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	struct hw_roots roots = { 0 };
	enum list_format fmt = FMT_TABLE;
	bool pkeys = false, json = false, format = false;
	struct hw_ctx *ctx = NULL;
	struct hw_node *node = NULL;
	struct hw_error err = { 0 };
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		if (hw_roots_option(&roots, c, optarg))
			continue;
		switch (c) {
		case 'j': json = true; break;
		case 'p': pkeys = true; break;
		case 'f': {
			size_t i;
			for (i = 0; i < ELEMENTSOF(formats) && strcmp(formats[i].name, optarg); i++)
				;
			if (i == ELEMENTSOF(formats)) {
				fprintf(stderr,
					"rdmak list: --format: unknown format '%s' (table, json, ibdev2netdev, ibstat, rdma-link)\n",
					optarg);
				return LIST_EXIT_USAGE;
			}
			fmt = formats[i].fmt;
			format = true;
			break;
		}
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return LIST_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rdmak list: unexpected argument '%s'\n", argv[optind]);
		return LIST_EXIT_USAGE;
	}
	/* options that would be ignored are refused: a script asking for two outputs, or for
	 * pkeys that only the JSON shows, gets told instead of silently getting something else */
	if (json && format && fmt != FMT_JSON) {
		fprintf(stderr, "rdmak list: --json and --format %s: choose one\n",
			formats[fmt].name);
		return LIST_EXIT_USAGE;
	}
	if (json)
		fmt = FMT_JSON;
	if (pkeys && fmt != FMT_JSON) {
		fprintf(stderr, "rdmak list: --pkeys: pkey tables are shown only with --json\n");
		return LIST_EXIT_USAGE;
	}
	char missing[PATH_MAX];

	r = hw_ctx_new_roots(&roots, &ctx, missing, sizeof(missing));
	if (r < 0) {
		fprintf(stderr, "rdmak list: cannot open sysfs root %s: %s\n", missing,
			strerror(-r));
		return LIST_EXIT_READ;
	}
	r = hw_load(ctx, fmt == FMT_JSON ? HW_LOAD_GIDS | (pkeys ? HW_LOAD_PKEYS : 0) : 0, &node,
		    &err);
	if (r < 0) {
		fprintf(stderr, "rdmak list: cannot read %s/%s: %s\n", hw_ctx_sysfs(ctx), err.path,
			hw_strerror(err.err ? err.err : -r));
		hw_ctx_free(ctx);
		return LIST_EXIT_READ;
	}
	switch (fmt) {
	case FMT_JSON: {
		_cleanup_(doc_writer_freep) struct doc_writer *w = doc_writer_new();

		if (w)
			hw_node_write_json(w, node, ctx);
		r = w ? doc_writer_print(w, stdout) : -ENOMEM;
		break;
	}
	case FMT_IBDEV2NETDEV: r = print_ibdev2netdev(stdout, node); break;
	case FMT_IBSTAT: r = print_ibstat(stdout, node); break;
	case FMT_RDMA_LINK: r = print_rdma_link(stdout, node); break;
	default: r = print_table(stdout, node, ctx); break;
	}
	if (fflush(stdout) != 0 || r < 0) {
		fprintf(stderr, "rdmak list: writing output: %s\n", strerror(r < 0 ? -r : EIO));
		r = LIST_EXIT_READ;
	} else {
		/* the rest of the node is printed; the exit says it is incomplete */
		r = report_attr_errors(node, ctx) ? LIST_EXIT_READ : LIST_EXIT_OK;
	}
	hw_node_free(node);
	hw_ctx_free(ctx);
	return r;
}
