/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak fabric gc|list|check --config FILE`: the node's partition ledger (the attachment
 * records and the journal in rdmak-cni's state dir) for the network FILE configures, and what
 * the fabric manager holds. gc removes from the pkey every GUID of this node that no live
 * attachment holds (a record whose pod namespace is gone, a journaled removal); list shows the
 * ledger; check compares it with the pkey's members at the fabric manager. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cni/cni.h"
#include "ufm/ufm.h"
#include "nl/nl.h"
#include "roles.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strv.h"

/* Exit codes: --help's "Exit:" sentence and docs/fabric.md name the same (tests/cmd/exit_codes.sh). */
enum { FABRIC_EXIT_OK = 0, FABRIC_EXIT_ERROR = 1, FABRIC_EXIT_USAGE = 2, FABRIC_EXIT_DIFFERS = 3 };

#define CONFIG_MAX (1u << 20)

static void usage(FILE *f)
{
	fputs("Usage: rdmak fabric gc|list|check --config FILE [--json]\n\n"
	      "InfiniBand partitions of the VFs rdmak-cni gives pods (docs/fabric.md). FILE is the CNI network\n"
	      "config (.conf, or a .conflist whose rdmak-cni plugin has \"fabric\" and \"pkey\"); the ledger is\n"
	      "its stateDir: the attachment records and the journal of removals the fabric manager could\n"
	      "not take yet.\n"
	      "  gc     remove from the pkey every GUID of this node that no live attachment holds (records\n"
	      "         whose pod namespace is gone, journaled removals)\n"
	      "  list   the ledger: each GUID, its pkey, and the attachment holding it (live or dead) or\n"
	      "         the journal\n"
	      "  check  the ledger against the pkey's members at the fabric manager\n"
	      "Options: --config FILE, --json (list and check), -h/--help.\n"
	      "Exit: 0 done (gc), listed (list) or consistent (check), 1 error (the fabric manager unreachable\n"
	      "or refusing, the ledger unreadable; gc left something in the journal), 2 usage (a bad option\n"
	      "or config), 3 check found a difference.\n",
	      f);
}

struct entry {
	char *network, *id, *ifname; /* NULL for a journal entry */
	struct attach_record st;
	uint16_t pkey;
	uint64_t guid;
	bool live;
};

struct ledger {
	struct entry *v;
	size_t n;
};

static void ledger_clear(struct ledger *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].network);
		free(l->v[i].id);
		free(l->v[i].ifname);
	}
	free(l->v);
	*l = (struct ledger){ 0 };
}

static int ledger_push(struct ledger *l, const struct entry *e)
{
	struct entry *nv = realloc(l->v, (l->n + 1) * sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	l->v = nv;
	l->v[l->n++] = *e;
	return 0;
}

/* A pod's namespace is live while its path is one (the runtime removes it with the pod). */
static bool netns_live(const char *path)
{
	const char *what = NULL;

	return path[0] && nl_netns_describe(path, &what) == 0;
}

static int ledger_add(void *userdata, const char *network, const char *id, const char *ifname,
		      const struct attach_record *rec)
{
	struct ledger *l = userdata;
	struct entry e = { .st = *rec };

	if (!rec->fabric)
		return 0;
	e.pkey = rec->pkey & 0x7fff;
	e.guid = rec->fabric_guid;
	e.live = netns_live(rec->netns);
	e.network = strdup(network);
	e.id = strdup(id);
	e.ifname = strdup(ifname);
	if (!e.network || !e.id || !e.ifname || ledger_push(l, &e) < 0) {
		free(e.network), free(e.id), free(e.ifname);
		return -ENOMEM;
	}
	return 0;
}

/* Every record of every network under state_dir that names a fabric GUID, and the journal. */
static int ledger_load(const char *state_dir, struct ledger *ret)
{
	_cleanup_free_ struct ufm_journal_entry *j = NULL;
	struct ledger l = { 0 };
	size_t nj = 0;
	int r;

	r = attach_walk(state_dir, ledger_add, &l);
	if (r == 0)
		r = ufm_journal_list(state_dir, &j, &nj);
	for (size_t i = 0; i < nj && r == 0; i++)
		r = ledger_push(&l, &(struct entry){ .pkey = j[i].pkey, .guid = j[i].guid });
	if (r < 0) {
		ledger_clear(&l);
		return r;
	}
	*ret = l;
	return 0;
}

static bool held_live(const struct ledger *l, uint16_t pkey, uint64_t guid)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].live && l->v[i].pkey == pkey && l->v[i].guid == guid)
			return true;
	return false;
}

/* The rdmak-cni plugin's config out of a .conf or .conflist, parsed as rdmak-cni parses it. */
static int load_config(const char *file, struct cni_config *ret)
{
	_cleanup_free_ char *buf = NULL, *one = NULL;
	struct cnispec_conf *conf = NULL;
	struct cnispec_error err = { 0 };
	json_t *doc, *plugins, *pick = NULL;
	size_t len;
	int r;

	if ((r = fileio_read_at(AT_FDCWD, file, CONFIG_MAX, &buf, &len)) < 0) {
		fprintf(stderr, "rdmak fabric: %s: %s\n", file, strerror(-r));
		return r;
	}
	if (!(doc = json_loadb(buf, len, 0, NULL)) || !json_is_object(doc)) {
		json_decref(doc);
		fprintf(stderr, "rdmak fabric: %s: not a JSON object\n", file);
		return -EINVAL;
	}
	plugins = json_object_get(doc, "plugins");
	if (json_is_array(plugins)) {
		size_t i;
		json_t *p;
		json_array_foreach(plugins, i, p) if (json_is_object(p) &&
						      json_object_get(p, "fabric") && !pick) pick =
			json_deep_copy(p);
		if (pick) {
			json_object_set(pick, "name", json_object_get(doc, "name"));
			json_object_set(pick, "cniVersion", json_object_get(doc, "cniVersion"));
		}
	} else {
		pick = json_incref(doc);
	}
	json_decref(doc);
	if (!pick) {
		fprintf(stderr,
			"rdmak fabric: %s: no plugin with a \"fabric\" object in its plugins\n",
			file);
		return -EINVAL;
	}
	one = json_dumps(pick, JSON_COMPACT);
	json_decref(pick);
	if (!one)
		return -ENOMEM;
	r = cnispec_conf_parse(one, strlen(one), CNISPEC_CMD_DEL, &conf, &err);
	if (r == 0)
		r = cni_config_parse(conf, ret, &err);
	cnispec_conf_free(conf);
	if (r < 0) {
		fprintf(stderr, "rdmak fabric: %s: %s%s%s\n", file, err.msg,
			err.details[0] ? ": " : "", err.details);
		return r;
	}
	if (!cni_partition_wanted(ret)) {
		fprintf(stderr,
			"rdmak fabric: %s: no partition to manage (needs link hostdev, a pkey and a fabric)\n",
			file);
		cni_config_clear(ret);
		return -EINVAL;
	}
	return 0;
}

static void print_entry(const struct entry *e, const char *verdict, json_t *arr)
{
	char g[17];

	ufm_guid_format(e->guid, g);
	if (arr) {
		json_t *o = json_pack("{s:s, s:s, s:s}", "pkey", "", "guid", g, "state", verdict);
		char pk[8];
		snprintf(pk, sizeof(pk), "0x%04x", e->pkey);
		json_object_set_new(o, "pkey", json_string(pk));
		if (e->network) {
			char att[600];
			snprintf(att, sizeof(att), "%s/%s:%s", e->network, e->id, e->ifname);
			json_object_set_new(o, "attachment", json_string(att));
			json_object_set_new(o, "live", json_boolean(e->live));
		}
		json_array_append_new(arr, o);
		return;
	}
	if (e->network)
		printf("0x%04x\t%s\t%s\t%s/%s:%s (%s)\n", e->pkey, g, verdict, e->network, e->id,
		       e->ifname, e->live ? "live" : "pod gone");
	else
		printf("0x%04x\t%s\t%s\tjournal\n", e->pkey, g, verdict);
}

static int cmd_gc(const struct cni_config *cfg, struct ufm_client *fc, const struct ledger *l)
{
	size_t removed = 0, left = 0;
	int ret = FABRIC_EXIT_OK;

	for (size_t i = 0; i < l->n; i++) {
		const struct entry *e = &l->v[i];
		int r = 0;

		if (e->live)
			continue;
		if (!held_live(l, e->pkey, e->guid)) {
			r = ufm_remove(fc, e->pkey, &e->guid, 1);
			if (r < 0) {
				fprintf(stderr, "rdmak fabric gc: %s\n", ufm_client_error(fc));
				left++;
				ret = FABRIC_EXIT_ERROR;
				continue;
			}
			removed++;
			print_entry(e, "removed", NULL);
		}
		if (e->network) {
			struct attach_record st = e->st;
			st.fabric =
				false; /* the device itself is CNI GC's (or DEL's) to give back */
			(void)attach_record_save(cfg->state_dir, e->network, e->id, e->ifname, &st);
		} else {
			(void)ufm_journal_remove(cfg->state_dir, e->pkey, e->guid);
		}
	}
	fprintf(stderr, "rdmak fabric gc: %zu GUID(s) removed, %zu left for the next gc\n", removed,
		left);
	return ret;
}

static int cmd_list(const struct ledger *l, bool json)
{
	json_t *arr = json ? json_array() : NULL;

	for (size_t i = 0; i < l->n; i++)
		print_entry(&l->v[i],
			    l->v[i].live			       ? "held"
			    : held_live(l, l->v[i].pkey, l->v[i].guid) ? "held elsewhere"
								       : "to remove",
			    arr);
	if (arr) {
		json_dumpf(arr, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(arr);
	}
	return fflush(stdout) == 0 ? FABRIC_EXIT_OK : FABRIC_EXIT_ERROR;
}

static int cmd_check(const struct cni_config *cfg, struct ufm_client *fc, const struct ledger *l,
		     bool json)
{
	_cleanup_free_ struct ufm_member *m = NULL;
	uint16_t pkey = cfg->pkey & 0x7fff;
	json_t *arr = json ? json_array() : NULL;
	char version[64] = "";
	size_t n = 0, differ = 0, ok = 0;
	int r;

	if ((r = ufm_version(fc, version, sizeof(version))) < 0 ||
	    (r = ufm_members(fc, pkey, &m, &n)) < 0) {
		fprintf(stderr, "rdmak fabric check: %s\n", ufm_client_error(fc));
		json_decref(arr);
		return FABRIC_EXIT_ERROR;
	}
	for (size_t i = 0; i < l->n; i++) {
		const struct entry *e = &l->v[i];
		bool in = false;

		if (e->pkey != pkey)
			continue;
		for (size_t k = 0; k < n; k++)
			in |= m[k].guid == e->guid;
		if (e->live && !in) {
			print_entry(e, "missing", arr);
			differ++;
		} else if (!e->live && in && !held_live(l, e->pkey, e->guid)) {
			print_entry(e, "leaked", arr);
			differ++;
		} else if (e->live) {
			ok++;
		}
	}
	if (arr) {
		json_t *o = json_pack("{s:s, s:I, s:I, s:o}", "ufmVersion", version, "members",
				      (json_int_t)n, "present", (json_int_t)ok, "differences", arr);
		json_dumpf(o, stdout, JSON_INDENT(2));
		putchar('\n');
		json_decref(o);
	} else {
		printf("UFM %s: pkey 0x%04x has %zu member(s); %zu live attachment(s) of this node present, %zu "
		       "difference(s)%s\n",
		       version, pkey, n, ok, differ, differ ? " (gc removes leaked ones)" : "");
	}
	return differ ? FABRIC_EXIT_DIFFERS : FABRIC_EXIT_OK;
}

int fabric_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct cni_config cfg = { 0 };
	struct ufm_client *fc = NULL;
	struct ledger l = { 0 };
	const char *config = NULL, *cmd;
	char why[UFM_ERR_MAX];
	_cleanup_close_ int lock = -1;
	bool json = false;
	int c, r, ret = FABRIC_EXIT_ERROR;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config = optarg; break;
		case 'j': json = true; break;
		case 'h': usage(stdout); return FABRIC_EXIT_OK;
		default: usage(stderr); return FABRIC_EXIT_USAGE;
		}
	}
	if (optind + 1 != argc || (strcmp(argv[optind], "gc") && strcmp(argv[optind], "list") &&
				   strcmp(argv[optind], "check"))) {
		if (optind < argc)
			fprintf(stderr, "rdmak fabric: unknown command '%s'\n\n", argv[optind]);
		usage(stderr);
		return FABRIC_EXIT_USAGE;
	}
	cmd = argv[optind];
	if (!config) {
		fprintf(stderr, "rdmak fabric %s: --config FILE is required\n", cmd);
		return FABRIC_EXIT_USAGE;
	}
	if (json && !strcmp(cmd, "gc")) {
		fprintf(stderr, "rdmak fabric gc: --json is for list and check\n");
		return FABRIC_EXIT_USAGE;
	}
	if (load_config(config, &cfg) < 0)
		return FABRIC_EXIT_USAGE;
	if (strcmp(cmd, "list") && (r = ufm_client_new(&cfg.fabric, &fc, why, sizeof(why))) < 0) {
		fprintf(stderr, "rdmak fabric %s: %s\n", cmd, why);
		goto out;
	}
	/* gc changes the ledger: under the lock every rdmak-cni of this node takes */
	if (!strcmp(cmd, "gc") && (lock = ufm_lock(cfg.state_dir)) < 0) {
		fprintf(stderr, "rdmak fabric gc: %s/fabric.lock: %s\n", cfg.state_dir,
			strerror(-lock));
		goto out;
	}
	if ((r = ledger_load(cfg.state_dir, &l)) < 0) {
		fprintf(stderr, "rdmak fabric %s: reading %s: %s\n", cmd, cfg.state_dir,
			strerror(-r));
		goto out;
	}
	ret = !strcmp(cmd, "gc")     ? cmd_gc(&cfg, fc, &l)
	      : !strcmp(cmd, "list") ? cmd_list(&l, json)
				     : cmd_check(&cfg, fc, &l, json);
out:
	ledger_clear(&l);
	ufm_client_free(fc);
	cni_config_clear(&cfg);
	return ret;
}
