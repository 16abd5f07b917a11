/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak ipam list | release | gc: the operator's view of the same store and configuration
 * the plugin uses (--config: the network configuration, as in the NetworkAttachmentDefinition
 * or /etc/cni/net.d). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipam/ipam.h"
#include "ipam/cni.h"
#include "doc/doc.h"
#include "nodeconf/nodeconf.h"
#include "util/cleanup.h"
#include "util/fileio.h"

#define CONFIG_MAX (4u << 20)
#define VALID_MAX  (256u << 20) /* a million attachments fit */

enum { EXIT_OK = 0, EXIT_STORE = 1, EXIT_USAGE = 2, EXIT_NOTHING = 3, EXIT_REFUSED = 4 };

static void usage(FILE *f)
{
	fputs("Usage: rdmak ipam list    --config FILE [--json]\n"
	      "       rdmak ipam release --config FILE --container ID [--ifname IF]\n"
	      "       rdmak ipam gc      --config FILE --valid FILE [--repair] [--json]\n"
	      "       rdmak ipam reclaim --config FILE --node NAME [--force] [--json]\n"
	      "\n"
	      "The operator's side of rdmak-ipam, the CNI IPAM plugin (run as rdmak-ipam from CNI_PATH).\n"
	      "FILE is the network configuration the plugin gets (a NetworkAttachmentDefinition's config,\n"
	      "or a .conflist whose plugin delegates to rdmak-ipam): the same ranges, the same store.\n"
	      "\n"
	      "  list         each range: size, used, free, and every reservation with its pod\n"
	      "  release      free the addresses of a container (of one interface with --ifname), as\n"
	      "               the plugin's DEL would; for a pod whose DEL never came\n"
	      "  gc           free every reservation of the network whose attachment is not in the\n"
	      "               --valid file: a JSON array of {\"containerID\", \"ifname\"} (or an object\n"
	      "               with \"cni.dev/valid-attachments\"), as CNI GC does. Run it while no ADD\n"
	      "               or DEL of the network runs (the runtime guarantees that for CNI GC).\n"
	      "               A file store entry rdmak-ipam did not write (a regular file or a\n"
	      "               directory where a claim or record should be) is skipped and named;\n"
	      "               with --repair it is removed (a directory only when empty).\n"
	      "               With perNodeBlockSize it also gives back this node's blocks that have\n"
	      "               been empty for blockReleaseAfter seconds.\n"
	      "  reclaim      give back every block (perNodeBlockSize) node NAME owns, once its lease\n"
	      "               in etcd (which its ADD, DEL and GC renew) has expired: refused while\n"
	      "               it is live, --force or not; refused without --force when the node\n"
	      "               never held one, when its last renewal said it held claims, or while\n"
	      "               this store shows claims in those blocks (--force names each)\n"
	      "\n"
	      "  -c, --config FILE   the network configuration\n"
	      "      --cni-config F  the node's CNI settings (default $RDMAK_CNI_CONFIG, else\n"
	      "                      /etc/rdmak/cni.json): the etcd stores a network names, the\n"
	      "                      folders its dataDir may lie beneath (docs/ipam.md)\n"
	      "  -j, --json          machine-readable output (shapes: docs/ipam.md)\n"
	      "      --container ID  release: the container ID the runtime used (CNI_CONTAINERID)\n"
	      "      --ifname IF     release: only this interface\n"
	      "      --valid FILE    gc: the attachments that still exist\n"
	      "      --repair        gc: remove what the store holds that rdmak-ipam did not write\n"
	      "      --node NAME     reclaim: the node whose blocks to give back\n"
	      "      --force         reclaim: a node with no lease, or with claims, on your word\n"
	      "  -h, --help          this text\n"
	      "\n"
	      "Exit: 0 done, 1 the store failed or cannot be reached, 2 usage or a bad configuration,\n"
	      "3 release found nothing to release, 4 reclaim refused (the node is alive, or may hold\n"
	      "claims).\n",
	      f);
}

/* The network's configuration, with what it names of the node's (the node's CNI settings at
 * node_path, NULL: the plugins' own). Of the shape before stores were the node's too: the
 * operator cleans up what such networks left (IPAMCONF_LEGACY). */
static int load_config(const char *path, const char *node_path, struct ipamconf **ret)
{
	_cleanup_free_ char *buf = NULL;
	struct cnispec_error err = { 0 };
	struct nodeconf node = { 0 };
	char why[NODECONF_ERR_MAX];
	size_t len = 0;
	int r = fileio_read_at(AT_FDCWD, path, CONFIG_MAX, &buf, &len);

	if (r < 0) {
		fprintf(stderr, "rdmak ipam: %s: %s\n", path, strerror(-r));
		return -EXIT_USAGE;
	}
	if (ipamconf_load(buf, len, IPAMCONF_LEGACY, ret, &err) < 0) {
		fprintf(stderr, "rdmak ipam: %s: %s: %s\n", path, err.msg, err.details);
		return -EXIT_USAGE;
	}
	if (nodeconf_load(node_path, &node, why, sizeof(why)) < 0) {
		fprintf(stderr, "rdmak ipam: the node's CNI settings: %s\n", why);
		ipamconf_free(*ret);
		*ret = NULL;
		return -EXIT_USAGE;
	}
	r = ipamconf_resolve(*ret, &node, IPAMCONF_LEGACY, &err);
	nodeconf_clear(&node);
	if (r < 0) {
		fprintf(stderr, "rdmak ipam: %s: %s: %s\n", path, err.msg, err.details);
		ipamconf_free(*ret);
		*ret = NULL;
		return -EXIT_USAGE;
	}
	for (size_t i = 0; i < (*ret)->n_warnings; i++)
		fprintf(stderr, "rdmak ipam: warning: %s\n", (*ret)->warnings[i]);
	return 0;
}

static int open_store(const struct ipamconf *c, struct ipam_store **ret)
{
	char why[600];

	if (ipam_store_open(&c->store, ret, why, sizeof(why)) < 0) {
		fprintf(stderr, "rdmak ipam: %s\n", why);
		return -EXIT_STORE;
	}
	return 0;
}

/* Every listing names the junk it skips (store.h), whatever the command. */
static void print_junk(void *ud, const char *path, const char *what, int removed)
{
	if (removed == 1)
		fprintf(stderr, "rdmak ipam: removed %s: %s, not written by rdmak-ipam\n", path,
			what);
	else if (removed < 0)
		fprintf(stderr,
			"rdmak ipam: %s: %s, not written by rdmak-ipam: cannot remove it: %s\n",
			path, what, strerror(-removed));
	else
		fprintf(stderr,
			"rdmak ipam: warning: skipped %s: %s, not written by rdmak-ipam "
			"(`rdmak ipam gc --repair` removes it)\n",
			path, what);
}

static int fail(const struct cnispec_error *err)
{
	fprintf(stderr, "rdmak ipam: %s: %s\n", err->msg, err->details);
	return err->code == CNISPEC_E_CONFIG ? EXIT_USAGE : EXIT_STORE;
}

/* ---- list ------------------------------------------------------------------------------------ */

static void add_pod_column(json_t *rows)
{
	json_t *row;
	size_t i;

	json_array_foreach(rows, i, row)
	{
		const char *ns = json_string_value(json_object_get(row, "podNamespace"));
		const char *name = json_string_value(json_object_get(row, "podName"));
		char pod[400];

		snprintf(pod, sizeof(pod), "%s/%s", ns ? ns : "-", name ? name : "-");
		json_object_set_new(row, "pod", json_string(pod));
	}
}

static int cmd_list(struct ipam_store *s, const struct ipamconf *c, bool json)
{
	static const struct doc_column range_cols[] = {
		{ "RANGE", "range" }, { "POOL", "pool" }, { "SIZE", "size" },
		{ "USED", "used" },   { "FREE", "free" }, { "GATEWAY", "gateway" },
	};
	static const struct doc_column res_cols[] = {
		{ "ADDRESS", "address" }, { "CONTAINER", "containerID" }, { "IFNAME", "ifname" },
		{ "POD", "pod" },	  { "NETWORK", "network" },	  { "SINCE", "created" },
	};
	struct cnispec_error err = { 0 };
	json_t *doc = NULL, *rows, *r;
	size_t i;

	if (ipam_list_json(s, c, &doc, &err) < 0)
		return fail(&err);
	json_array_foreach(json_object_get(doc, "ranges"), i, r)
		add_pod_column(json_object_get(r, "reservations"));
	if (json) {
		doc_json(stdout, doc);
		json_decref(doc);
		return EXIT_OK;
	}
	printf("network %s, %s store\n\n", c->network, s->driver->name);
	doc_table(stdout, json_object_get(doc, "ranges"), range_cols, ELEMENTSOF(range_cols));
	rows = json_array();
	json_array_foreach(json_object_get(doc, "ranges"), i, r)
		json_array_extend(rows, json_object_get(r, "blocks"));
	if (json_array_size(rows)) {
		static const struct doc_column block_cols[] = {
			{ "BLOCK", "first" },
			{ "LAST", "last" },
			{ "NODE", "node" },
			{ "SINCE", "created" },
		};

		printf("\nblocks of %lld addresses (this node: %s)\n",
		       (long long)json_integer_value(json_object_get(doc, "perNodeBlockSize")),
		       json_string_value(json_object_get(doc, "node")));
		doc_table(stdout, rows, block_cols, ELEMENTSOF(block_cols));
	}
	json_array_clear(rows);
	json_array_foreach(json_object_get(doc, "ranges"), i, r)
		json_array_extend(rows, json_object_get(r, "reservations"));
	if (json_array_size(rows)) {
		printf("\n");
		doc_table(stdout, rows, res_cols, ELEMENTSOF(res_cols));
	}
	json_decref(rows);
	json_decref(doc);
	return EXIT_OK;
}

/* ---- release ------------------------------------------------------------------------------------ */

static int cmd_release(struct ipam_store *s, const struct ipamconf *c, const char *cid,
		       const char *ifname)
{
	struct cnispec_error err = { 0 };
	size_t n = 0;

	if (ipam_release(s, c, cid, ifname, &n, &err) < 0)
		return fail(&err);
	if (n == 0) {
		fprintf(stderr, "rdmak ipam: %s: container %s%s%s holds no address\n", c->network,
			cid, ifname ? " interface " : "", ifname ? ifname : "");
		return EXIT_NOTHING;
	}
	printf("%s: released %zu reservation%s of container %s%s%s\n", c->network, n,
	       n == 1 ? "" : "s", cid, ifname ? " interface " : "", ifname ? ifname : "");
	return EXIT_OK;
}

/* ---- gc --------------------------------------------------------------------------------------- */

static bool valid_attachment(void *ud, const char *container_id, const char *ifname)
{
	return cnispec_conf_attachment_valid(ud, container_id, ifname);
}

/* The --valid file through the request parser, so its entries are checked the same way. */
static int load_valid(const char *path, struct cnispec_conf **ret)
{
	_cleanup_free_ char *buf = NULL, *wrapped = NULL;
	struct cnispec_error err = { 0 };
	json_t *doc, *list, *wrap;
	size_t len;
	int r = fileio_read_at(AT_FDCWD, path, VALID_MAX, &buf, &len);

	if (r < 0) {
		fprintf(stderr, "rdmak ipam: %s: %s\n", path, strerror(-r));
		return -EXIT_USAGE;
	}
	doc = json_loadb(buf, len, 0, NULL);
	list = json_is_array(doc) ? doc : json_object_get(doc, "cni.dev/valid-attachments");
	if (!json_is_array(list)) {
		fprintf(stderr,
			"rdmak ipam: %s: expected a JSON array of {\"containerID\", \"ifname\"}\n",
			path);
		json_decref(doc);
		return -EXIT_USAGE;
	}
	wrap = json_pack("{s:s, s:s, s:s, s:O}", "cniVersion", "1.1.0", "name", "gc", "type",
			 "rdmak-ipam", "cni.dev/valid-attachments", list);
	json_decref(doc);
	wrapped = wrap ? json_dumps(wrap, JSON_COMPACT) : NULL;
	json_decref(wrap);
	if (!wrapped)
		return -EXIT_STORE;
	r = cnispec_conf_parse(wrapped, strlen(wrapped), CNISPEC_CMD_GC, ret, &err);
	if (r < 0) {
		fprintf(stderr, "rdmak ipam: %s: %s\n", path, err.details);
		return -EXIT_USAGE;
	}
	return 0;
}

static int cmd_gc(struct ipam_store *s, const struct ipamconf *c, const char *valid_path, bool json)
{
	struct cnispec_conf *valid = NULL;
	struct cnispec_error err = { 0 };
	struct ipam_gc_stats st = { 0 };
	int r = load_valid(valid_path, &valid);

	if (r < 0)
		return -r;
	r = ipam_gc(s, c, valid_attachment, valid, &st, &err);
	cnispec_conf_free(valid);
	if (json) {
		json_t *o =
			json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "network", c->network,
				  "kept", (json_int_t)st.kept, "released", (json_int_t)st.released,
				  "orphans", (json_int_t)st.orphans, "tidied",
				  (json_int_t)st.tidied, "junk", (json_int_t)st.junk, "repaired",
				  (json_int_t)st.repaired, "errors", (json_int_t)st.errors);

		if (o && ipam_store_blocks(s))
			json_object_set_new(o, "blocks",
					    json_pack("{s:s, s:I, s:I, s:I, s:I}", "node",
						      ipam_blocks_node(s), "kept",
						      (json_int_t)st.blocks_kept, "freed",
						      (json_int_t)st.blocks_freed, "adopted",
						      (json_int_t)st.blocks_adopted, "dropped",
						      (json_int_t)st.blocks_dropped));

		doc_json(stdout, o);
		json_decref(o);
	} else {
		printf("%s: kept %zu attachments, released %zu, freed %zu orphan claims, removed %zu leftover files",
		       c->network, st.kept, st.released, st.orphans, st.tidied);
		if (st.junk || st.repaired)
			printf(", skipped %zu and removed %zu entries not written by rdmak-ipam",
			       st.junk, st.repaired);
		if (ipam_store_blocks(s))
			printf("; node %s: kept %zu blocks, gave back %zu, adopted %zu, dropped %zu",
			       ipam_blocks_node(s), st.blocks_kept, st.blocks_freed,
			       st.blocks_adopted, st.blocks_dropped);
		printf("\n");
	}
	return r < 0 ? fail(&err) : EXIT_OK;
}

/* ---- reclaim ------------------------------------------------------------------------------------ */

/* What reclaim checked, on stderr (stdout carries the result): the node's lease, and what this
 * store shows. */
static void print_checked(const json_t *report, bool json)
{
	const json_t *l = json_object_get(json_object_get(report, "checked"), "lease");
	const json_t *local = json_object_get(json_object_get(report, "checked"), "localClaims");
	const char *state = json_string_value(json_object_get(l, "state"));

	if (json || !state)
		return;
	if (!strcmp(state, "never"))
		fprintf(stderr, "rdmak ipam reclaim: checked %s: no lease, never renewed\n",
			json_string_value(json_object_get(l, "key")));
	else
		fprintf(stderr,
			"rdmak ipam reclaim: checked %s: %s (last renewed %s, TTL %lld s, %lld claims "
			"then%s)\n",
			json_string_value(json_object_get(l, "key")), state,
			json_string_value(json_object_get(l, "renewed")),
			(long long)json_integer_value(json_object_get(l, "ttl")),
			(long long)json_integer_value(json_object_get(l, "claims")),
			!strcmp(state, "live") ? "; expires unless renewed" : "");
	if (local)
		fprintf(stderr, "rdmak ipam reclaim: checked %s (%s): %lld claims in its blocks\n",
			json_string_value(json_object_get(local, "dataDir")),
			json_is_true(json_object_get(local, "thisNode")) ? "this is that node"
									 : "another node's store",
			(long long)json_integer_value(json_object_get(local, "found")));
}

static int cmd_reclaim(struct ipam_store *s, const struct ipamconf *c, const char *node, bool force,
		       bool json)
{
	struct cnispec_error err = { 0 };
	json_t *report = NULL, *row;
	size_t i;
	int r;

	if (!ipam_store_blocks(s)) {
		fprintf(stderr,
			"rdmak ipam reclaim: %s has no perNodeBlockSize: there are no blocks to give back\n",
			c->network);
		return EXIT_USAGE;
	}
	r = ipam_reclaim(s, c, node, force, &report, &err);
	print_checked(report, json);
	json_array_foreach(json_object_get(report, "overridden"), i, row) if (force) fprintf(
		stderr,
		"rdmak ipam reclaim: --force overrides %s %s of %s:%s in node %s's blocks\n",
		json_string_value(json_object_get(row, "pool")),
		json_string_value(json_object_get(row, "address")),
		json_string_value(json_object_get(row, "containerID")),
		json_string_value(json_object_get(row, "ifname")), node);
	if (r < 0) {
		if (r == -EBUSY && json && report) {
			json_object_set_new(
				report, "refused",
				json_pack("{s:s, s:s}", "msg", err.msg, "details", err.details));
			doc_json(stdout, report);
		}
		json_decref(report);
		if (r == -EBUSY) {
			fprintf(stderr, "rdmak ipam reclaim: %s: %s\n", err.msg, err.details);
			return EXIT_REFUSED;
		}
		return fail(&err);
	}
	if (json) {
		doc_json(stdout, report);
	} else {
		json_array_foreach(json_object_get(report, "blocks"), i, row)
			printf("%s: gave back block %s-%s of node %s\n",
			       json_string_value(json_object_get(row, "pool")),
			       json_string_value(json_object_get(row, "first")),
			       json_string_value(json_object_get(row, "last")), node);
		printf("%s: node %s: %zu blocks given back\n", c->network, node,
		       json_array_size(json_object_get(report, "blocks")));
	}
	json_decref(report);
	return EXIT_OK;
}

int ipam_cli_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "container", required_argument, NULL, 'C' },
		{ "ifname", required_argument, NULL, 'i' },
		{ "valid", required_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "repair", no_argument, NULL, 'R' },
		{ "node", required_argument, NULL, 'N' },
		{ "force", no_argument, NULL, 'F' },
		{ "cni-config", required_argument, NULL, 'n' },
		{},
	};
	const char *config = NULL, *node_config = NULL, *cid = NULL, *ifname = NULL, *valid = NULL,
		   *node = NULL, *cmd, *why;
	struct ipamconf *c = NULL;
	struct ipam_store *s = NULL;
	bool json = false, repair = false, force = false;
	int ch, r;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "c:jh", opts, NULL)) != -1) {
		switch (ch) {
		case 'c': config = optarg; break;
		case 'j': json = true; break;
		case 'C': cid = optarg; break;
		case 'i': ifname = optarg; break;
		case 'v': valid = optarg; break;
		case 'R': repair = true; break;
		case 'N': node = optarg; break;
		case 'F': force = true; break;
		case 'n': node_config = optarg; break;
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "rdmak ipam: %s\n\n",
			optind >= argc ? "which command: list, release, gc or reclaim?"
				       : "one command at a time");
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[optind];
	if (strcmp(cmd, "list") && strcmp(cmd, "release") && strcmp(cmd, "gc") &&
	    strcmp(cmd, "reclaim")) {
		fprintf(stderr, "rdmak ipam: unknown command '%s' (list, release, gc, reclaim)\n",
			cmd);
		return EXIT_USAGE;
	}
	if (!strcmp(cmd, "reclaim") != !!node || (force && strcmp(cmd, "reclaim"))) {
		fprintf(stderr, "rdmak ipam %s: %s\n", cmd,
			!strcmp(cmd, "reclaim") ? "--node NAME is required"
						: "--node and --force go with reclaim");
		return EXIT_USAGE;
	}
	if (node && !ipamconf_node_name_valid(node)) {
		fprintf(stderr, "rdmak ipam reclaim: --node \"%s\" is not a node name\n", node);
		return EXIT_USAGE;
	}
	if (!config) {
		fprintf(stderr,
			"rdmak ipam %s: --config FILE is required (the network configuration)\n",
			cmd);
		return EXIT_USAGE;
	}
	if (!strcmp(cmd, "release")) {
		if (!cid || !cnispec_container_id_valid(cid, &why)) {
			fprintf(stderr, "rdmak ipam release: --container: %s\n",
				cid ? why : "required");
			return EXIT_USAGE;
		}
		if (ifname && !cnispec_ifname_valid(ifname, &why)) {
			fprintf(stderr, "rdmak ipam release: --ifname \"%s\" %s\n", ifname, why);
			return EXIT_USAGE;
		}
	} else if (cid || ifname) {
		fprintf(stderr, "rdmak ipam %s: --container and --ifname go with release\n", cmd);
		return EXIT_USAGE;
	}
	if (!strcmp(cmd, "gc") != !!valid) {
		fprintf(stderr, "rdmak ipam %s: %s\n", cmd,
			valid ? "--valid goes with gc" : "--valid FILE is required");
		return EXIT_USAGE;
	}
	if (repair && strcmp(cmd, "gc")) {
		fprintf(stderr, "rdmak ipam %s: --repair goes with gc\n", cmd);
		return EXIT_USAGE;
	}
	if ((r = load_config(config, node_config, &c)) < 0 || (r = open_store(c, &s)) < 0) {
		ipamconf_free(c);
		return -r;
	}
	s->junk = print_junk;
	s->repair = repair;
	if (!strcmp(cmd, "list"))
		r = cmd_list(s, c, json);
	else if (!strcmp(cmd, "release"))
		r = cmd_release(s, c, cid, ifname);
	else if (!strcmp(cmd, "reclaim"))
		r = cmd_reclaim(s, c, node, force, json);
	else
		r = cmd_gc(s, c, valid, json);
	ipam_store_close(s);
	ipamconf_free(c);
	return r;
}
