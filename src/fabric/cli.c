/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak fabric gc|list|check`: the node's partition ledger (the attachment records and each
 * fabric's journal in the node's state dir, the fabrics file's stateDir) and what each fabric's
 * manager holds. gc removes from the pkeys every GUID this node added that no live attachment
 * holds (a record whose pod namespace is gone, a journaled removal), each against its own
 * fabric; list shows the ledger; check compares it with the pkeys' members at each fabric's
 * manager, pending removals included. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>

#include "attach/attach.h"
#include "daemon/daemon.h"
#include "doc/doc.h"
#include "log/log.h"
#include "roles.h"
#include "ufm/ufm.h"
#include "util/cleanup.h"
#include "util/opt.h"

/* Exit codes: --help's "Exit:" sentence and docs/fabric.md name the same (tests/cmd/exit_codes.sh). */
enum { FABRIC_EXIT_OK = 0, FABRIC_EXIT_ERROR = 1, FABRIC_EXIT_USAGE = 2, FABRIC_EXIT_DIFFERS = 3 };

static void usage(FILE *f)
{
	fputs("Usage: rdmak fabric gc|list|check [--fabric NAME] [--fabrics FILE] [--json]\n"
	      "       rdmak fabric gc --interval SECONDS [--alive-file FILE] [--fabric NAME] [--fabrics FILE]\n\n"
	      "InfiniBand partitions of the VFs rdmak-cni gives pods (docs/fabric.md). FILE is the node's\n"
	      "fabrics file (default $" UFM_FABRICS_ENV ", else " UFM_FABRICS_FILE
	      "): the fabric managers by\n"
	      "name and the state dir whose ledger this reads: the attachment records and each fabric's\n"
	      "journal of removals its manager could not take yet.\n"
	      "  gc     remove from the pkeys every GUID this node added that no live attachment holds\n"
	      "         (records whose pod namespace is gone, journaled removals), each at its own fabric;\n"
	      "         a pod whose liveness cannot be told here (its netns folder missing) is never\n"
	      "         taken for gone\n"
	      "  list   the ledger: each GUID, its fabric and pkey, and the attachment holding it (live or\n"
	      "         not) or the journal\n"
	      "  check  the ledger against the pkeys' members at each fabric's manager, pending removals\n"
	      "         included\n"
	      "Options: --fabric NAME (one fabric; default every fabric of the file), --fabrics FILE,\n"
	      "--json (list and check), -h/--help; gc --interval SECONDS (1 to 86400): again every\n"
	      "SECONDS, reading the fabrics file each time, until SIGTERM (exit 0; a round's failure is\n"
	      "logged and tried again), --alive-file FILE: touched every second (`rdmak probe FILE`).\n"
	      "Exit: 0 done (gc), listed (list) or consistent (check), 1 error (a fabric manager unreachable\n"
	      "or refusing, the ledger unreadable, a pod's liveness unknown; gc left something in the\n"
	      "journal), 2 usage (a bad option, or the fabrics file missing or refused), 3 check found a\n"
	      "difference.\n",
	      f);
}

enum live { LIVE_GONE, LIVE_YES, LIVE_UNKNOWN };

struct entry {
	char *network, *id, *ifname; /* NULL for a journal entry */
	struct attach_record st;
	char fabric[UFM_NAME_MAX + 1]; /* "": written before fabrics were named */
	char url[UFM_URL_MAX + 1];     /* a journal entry's */
	uint16_t pkey;
	uint64_t guid;
	bool added; /* a record's: this node put the GUID there */
	enum live live;
	char why[300]; /* LIVE_UNKNOWN: what this process lacks to tell */
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

static int ledger_add(void *userdata, const char *network, const char *id, const char *ifname,
		      const struct attach_record *rec)
{
	struct ledger *l = userdata;
	struct entry e = { .st = *rec };
	int r;

	if (!rec->fabric)
		return 0;
	snprintf(e.fabric, sizeof(e.fabric), "%s", rec->fabric_name);
	e.pkey = rec->pkey & 0x7fff;
	e.guid = rec->fabric_guid;
	e.added = rec->fabric_added;
	r = attach_netns_alive(rec->netns, e.why, sizeof(e.why));
	e.live = r > 0 ? LIVE_YES : r == 0 ? LIVE_GONE : LIVE_UNKNOWN;
	e.network = strdup(network);
	e.id = strdup(id);
	e.ifname = strdup(ifname);
	if (!e.network || !e.id || !e.ifname || ledger_push(l, &e) < 0) {
		free(e.network), free(e.id), free(e.ifname);
		return -ENOMEM;
	}
	return 0;
}

/* Every record of the state dir that names a fabric GUID, and every journal entry. */
static int ledger_load(const char *state_dir, struct ledger *ret)
{
	_cleanup_free_ struct ufm_journal_entry *j = NULL;
	struct ledger l = { 0 };
	size_t nj = 0;
	int r;

	r = attach_walk(state_dir, ledger_add, &l);
	if (r == 0)
		r = ufm_journal_list(state_dir, NULL, &j, &nj);
	for (size_t i = 0; i < nj && r == 0; i++) {
		struct entry e = { .pkey = j[i].pkey, .guid = j[i].guid, .added = true };

		snprintf(e.fabric, sizeof(e.fabric), "%s", j[i].fabric);
		snprintf(e.url, sizeof(e.url), "%s", j[i].url);
		r = ledger_push(&l, &e);
	}
	if (r < 0) {
		ledger_clear(&l);
		return r;
	}
	*ret = l;
	return 0;
}

/* A record of fabric (or of none named, which may be of any) that holds guid in pkey and whose
 * pod is live (want LIVE_YES) or may be (LIVE_UNKNOWN). */
static bool held(const struct ledger *l, const char *fabric, uint16_t pkey, uint64_t guid,
		 enum live want)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct entry *e = &l->v[i];

		if (e->network && e->live == want && e->pkey == pkey && e->guid == guid &&
		    (!e->fabric[0] || !strcmp(e->fabric, fabric)))
			return true;
	}
	return false;
}

static const char *verdict(const struct ledger *l, const struct entry *e)
{
	if (!e->network)
		return e->fabric[0] ? "to remove" : "to remove (fabric unknown)";
	if (!e->added)
		return "not this node's";
	if (e->live == LIVE_YES)
		return "held";
	if (e->live == LIVE_UNKNOWN)
		return "liveness unknown";
	return held(l, e->fabric, e->pkey, e->guid, LIVE_YES) ? "held elsewhere" : "to remove";
}

static void print_entry(const struct entry *e, const char *state, json_t *arr)
{
	char g[17], pk[8], att[600] = "";

	ufm_guid_format(e->guid, g);
	snprintf(pk, sizeof(pk), "0x%04x", e->pkey);
	if (e->network)
		snprintf(att, sizeof(att), "%s/%s:%s", e->network, e->id, e->ifname);
	if (arr) {
		json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "fabric", e->fabric, "pkey", pk,
				      "guid", g, "state", state);

		if (e->network) {
			json_object_set_new(o, "attachment", json_string(att));
			json_object_set_new(o, "live",
					    e->live == LIVE_UNKNOWN
						    ? json_null()
						    : json_boolean(e->live == LIVE_YES));
			json_object_set_new(o, "added", json_boolean(e->added));
		} else {
			json_object_set_new(o, "journal", json_string(e->url));
		}
		json_array_append_new(arr, o);
		return;
	}
	if (e->network)
		printf("%s\t%s\t%s\t%s\t%s (%s)\n", e->fabric[0] ? e->fabric : "-", pk, g, state,
		       att,
		       e->live == LIVE_YES    ? "live"
		       : e->live == LIVE_GONE ? "pod gone"
					      : e->why);
	else
		printf("%s\t%s\t%s\t%s\tjournal%s%s\n", e->fabric[0] ? e->fabric : "-", pk, g,
		       state, e->url[0] ? " for " : "", e->url);
}

static bool selected(const struct entry *e, const char *fabric)
{
	return !fabric || !strcmp(e->fabric, fabric);
}

static int cmd_list(const struct ledger *l, const char *fabric, bool json)
{
	json_t *arr = json ? json_array() : NULL;
	int r = 0;

	/* out of memory for --json: never the text table on stdout in its place */
	if (json && !arr)
		return FABRIC_EXIT_ERROR;
	for (size_t i = 0; i < l->n; i++)
		if (selected(&l->v[i], fabric))
			print_entry(&l->v[i], verdict(l, &l->v[i]), arr);
	if (arr) {
		r = doc_json(stdout, arr);
		json_decref(arr);
	}
	return r == 0 && fflush(stdout) == 0 ? FABRIC_EXIT_OK : FABRIC_EXIT_ERROR;
}

/* gc of one fabric, with its lock held. */
static int gc_fabric(const struct ufm_fabrics *fs, const struct ufm_fabric *f,
		     struct ufm_client *fc, const struct ledger *l, size_t *removed, size_t *left)
{
	int ret = FABRIC_EXIT_OK;

	for (size_t i = 0; i < l->n; i++) {
		const struct entry *e = &l->v[i];
		char g[17];

		if (strcmp(e->fabric, f->name) || e->live == LIVE_YES)
			continue;
		ufm_guid_format(e->guid, g);
		if (e->live == LIVE_UNKNOWN) {
			fprintf(stderr,
				"rdmak fabric gc: %s/%s:%s (GUID %s): cannot tell whether its pod is "
				"alive (%s): left\n",
				e->network, e->id, e->ifname, g, e->why);
			(*left)++;
			ret = FABRIC_EXIT_ERROR;
			continue;
		}
		if (e->network && !e->added) {
			struct attach_record st = e->st;

			/* a member before this node's attachment: never this node's to remove */
			st.fabric = false;
			(void)attach_record_save(fs->state_dir, e->network, e->id, e->ifname, &st);
			continue;
		}
		if (held(l, f->name, e->pkey, e->guid, LIVE_UNKNOWN)) {
			fprintf(stderr,
				"rdmak fabric gc: GUID %s, pkey 0x%04x: an attachment holding it may "
				"be alive: left\n",
				g, e->pkey);
			(*left)++;
			ret = FABRIC_EXIT_ERROR;
			continue;
		}
		if (!e->network && e->url[0] && strcmp(e->url, f->ufm)) {
			fprintf(stderr,
				"rdmak fabric gc: GUID %s, pkey 0x%04x: journaled for %s, fabric %s is "
				"%s now: left\n",
				g, e->pkey, e->url, f->name, f->ufm);
			(*left)++;
			ret = FABRIC_EXIT_ERROR;
			continue;
		}
		if (!held(l, f->name, e->pkey, e->guid, LIVE_YES)) {
			if (ufm_remove(fc, e->pkey, &e->guid, 1) < 0) {
				fprintf(stderr, "rdmak fabric gc: %s\n", ufm_client_error(fc));
				(*left)++;
				ret = FABRIC_EXIT_ERROR;
				continue;
			}
			(*removed)++;
			print_entry(e, "removed", NULL);
		}
		if (e->network) {
			struct attach_record st = e->st;

			/* the device itself is CNI GC's (or DEL's) to give back */
			st.fabric = false;
			(void)attach_record_save(fs->state_dir, e->network, e->id, e->ifname, &st);
		} else {
			(void)ufm_journal_remove(fs->state_dir, f->name, e->pkey, e->guid);
		}
	}
	return ret;
}

static int cmd_gc(const struct ufm_fabrics *fs, const char *only)
{
	size_t removed = 0, left = 0, unnamed = 0;
	int ret = FABRIC_EXIT_OK;

	for (size_t k = 0; k < fs->n; k++) {
		const struct ufm_fabric *f = &fs->v[k];
		struct ufm_client *fc = NULL;
		struct ledger l = { 0 };
		char why[UFM_ERR_MAX];
		_cleanup_close_ int lock = -1;
		int r;

		if (only && strcmp(only, f->name))
			continue;
		if (ufm_client_new(f, &fc, why, sizeof(why)) < 0) {
			fprintf(stderr, "rdmak fabric gc: fabric %s: %s\n", f->name, why);
			ret = FABRIC_EXIT_ERROR;
			continue;
		}
		/* gc changes the ledger: under the lock every rdmak-cni of this fabric takes, the
		 * ledger read under it */
		if ((lock = ufm_lock(fs->state_dir, f->name)) < 0) {
			fprintf(stderr, "rdmak fabric gc: %s/.fabric/%s/lock: %s\n", fs->state_dir,
				f->name, strerror(-lock));
			ret = FABRIC_EXIT_ERROR;
		} else if ((r = ledger_load(fs->state_dir, &l)) < 0) {
			fprintf(stderr, "rdmak fabric gc: reading %s: %s\n", fs->state_dir,
				strerror(-r));
			ret = FABRIC_EXIT_ERROR;
		} else {
			r = gc_fabric(fs, f, fc, &l, &removed, &left);
			if (r != FABRIC_EXIT_OK)
				ret = r;
			for (size_t i = 0; i < l.n && !unnamed; i++)
				unnamed += !l.v[i].fabric[0];
		}
		ledger_clear(&l);
		ufm_client_free(fc);
	}
	if (unnamed)
		fprintf(stderr,
			"rdmak fabric gc: the ledger has entries of no named fabric (from before "
			"fabrics were the node's): their DEL or CNI GC removes a record's GUID; a "
			"journaled one is listed by rdmak fabric list (docs/fabric.md)\n");
	fprintf(stderr, "rdmak fabric gc: %zu GUID(s) removed, %zu left for the next gc\n", removed,
		left);
	return ret;
}

static bool member(const struct ufm_member *m, size_t n, uint64_t guid)
{
	for (size_t k = 0; k < n; k++)
		if (m[k].guid == guid)
			return true;
	return false;
}

/* check of one fabric: each pkey its entries name against its members. */
static int check_fabric(const struct ufm_fabric *f, const struct ledger *l, json_t *out,
			size_t *ret_differ)
{
	struct ufm_client *fc = NULL;
	json_t *diffs = out ? json_array() : NULL;
	char version[64] = "", why[UFM_ERR_MAX];
	size_t differ = 0, ok = 0, members = 0;
	int r = ufm_client_new(f, &fc, why, sizeof(why));

	if (r < 0) {
		fprintf(stderr, "rdmak fabric check: fabric %s: %s\n", f->name, why);
		json_decref(diffs);
		return FABRIC_EXIT_ERROR;
	}
	if (ufm_version(fc, version, sizeof(version)) < 0)
		goto fail;
	for (size_t i = 0; i < l->n; i++) {
		_cleanup_free_ struct ufm_member *m = NULL;
		uint16_t pkey = l->v[i].pkey;
		bool first = true;
		size_t n = 0;

		if (strcmp(l->v[i].fabric, f->name))
			continue;
		/* each pkey once: at its first entry */
		for (size_t k = 0; k < i && first; k++)
			first = !(l->v[k].pkey == pkey && !strcmp(l->v[k].fabric, f->name));
		if (!first)
			continue;
		if (ufm_members(fc, pkey, &m, &n) < 0)
			goto fail;
		members += n;
		for (size_t k = i; k < l->n; k++) {
			const struct entry *e = &l->v[k];
			bool in = member(m, n, e->guid);

			if (e->pkey != pkey || strcmp(e->fabric, f->name))
				continue;
			if (!e->network) {
				print_entry(e, in ? "pending (still a member)" : "pending (gone)",
					    diffs);
				differ++;
			} else if (e->live == LIVE_UNKNOWN) {
				print_entry(e, "liveness unknown", diffs);
				differ++;
			} else if (e->live == LIVE_YES && !in) {
				print_entry(e, "missing", diffs);
				differ++;
			} else if (e->live == LIVE_GONE && e->added && in &&
				   !held(l, f->name, pkey, e->guid, LIVE_YES)) {
				print_entry(e, "leaked", diffs);
				differ++;
			} else if (e->live == LIVE_YES) {
				ok++;
			}
		}
	}
	if (out) {
		json_array_append_new(out, json_pack("{s:s, s:s, s:I, s:I, s:o}", "fabric", f->name,
						     "ufmVersion", version, "members",
						     (json_int_t)members, "present", (json_int_t)ok,
						     "differences", diffs));
	} else {
		printf("fabric %s (UFM %s): %zu member(s) in this node's pkeys; %zu live attachment(s) "
		       "of this node present, %zu difference(s)%s\n",
		       f->name, version, members, ok, differ,
		       differ ? " (gc removes leaked and pending ones)" : "");
	}
	ufm_client_free(fc);
	*ret_differ += differ;
	return FABRIC_EXIT_OK;
fail:
	fprintf(stderr, "rdmak fabric check: fabric %s: %s\n", f->name, ufm_client_error(fc));
	json_decref(diffs);
	ufm_client_free(fc);
	return FABRIC_EXIT_ERROR;
}

static int cmd_check(const struct ufm_fabrics *fs, const char *only, const struct ledger *l,
		     bool json)
{
	json_t *arr = json ? json_array() : NULL;
	size_t differ = 0;
	int ret = FABRIC_EXIT_OK;

	for (size_t k = 0; k < fs->n; k++)
		if ((!only || !strcmp(only, fs->v[k].name)) &&
		    check_fabric(&fs->v[k], l, arr, &differ) != FABRIC_EXIT_OK)
			ret = FABRIC_EXIT_ERROR;
	if (arr) {
		json_t *o = json_pack("{s:o}", "fabrics", arr);

		if (doc_json(stdout, o) < 0)
			ret = FABRIC_EXIT_ERROR;
		json_decref(o);
	}
	return ret != FABRIC_EXIT_OK ? ret : differ ? FABRIC_EXIT_DIFFERS : FABRIC_EXIT_OK;
}

/* gc every interval: the fabrics file read again each round (a fabric added, a Secret rotated). */
struct gc_daemon {
	const char *file, *only, *alive_file;
	unsigned interval;
};

static void gc_again(void *ud)
{
	struct gc_daemon *gd = ud;
	struct ufm_fabrics fs = { 0 };
	char why[UFM_ERR_MAX];

	if (ufm_fabrics_load(gd->file, &fs, why, sizeof(why)) < 0)
		log_error("the fabrics file: %s; again in %u s", why, gd->interval);
	else if (cmd_gc(&fs, gd->only) != FABRIC_EXIT_OK)
		log_warning("this gc left something (said above); again in %u s", gd->interval);
	ufm_fabrics_clear(&fs);
}

static int gc_every(struct gc_daemon *gd)
{
	const char *what = NULL;
	int r;

	log_set_program("fabric gc");
	log_set_time(true);
	log_info("gc every %u s", gd->interval);
	r = daemon_run_rounds(gd->interval, gd->alive_file, NULL, 0, gc_again, gd, &what);
	if (r < 0) {
		log_error_errno(r, "%s: %m", what);
		return strcmp(what, "--alive-file") ? FABRIC_EXIT_ERROR : FABRIC_EXIT_USAGE;
	}
	log_info("stopping on %s", strsignal(r));
	return FABRIC_EXIT_OK;
}

int fabric_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "fabric", required_argument, NULL, 'f' },
		{ "fabrics", required_argument, NULL, 'F' },
		{ "config", required_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "interval", required_argument, NULL, 'i' },
		{ "alive-file", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct gc_daemon gd = { 0 };
	unsigned long long v;
	struct ufm_fabrics fs = { 0 };
	struct ledger l = { 0 };
	const char *file = NULL, *only = NULL, *cmd;
	char why[UFM_ERR_MAX], names[256];
	bool json = false;
	int c, r, ret = FABRIC_EXIT_ERROR;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'f': only = optarg; break;
		case 'F': file = optarg; break;
		case 'c':
			fprintf(stderr,
				"rdmak fabric: --config is gone: a fabric's manager, credentials and "
				"state dir are the node's, in its fabrics file (--fabrics FILE, default "
				"$" UFM_FABRICS_ENV " or " UFM_FABRICS_FILE
				"); name one fabric with --fabric NAME, or none for all (docs/fabric.md)\n");
			return FABRIC_EXIT_USAGE;
		case 'j': json = true; break;
		case 'i':
			if (opt_uint("fabric", "--interval", optarg, 1, 86400, "s", &v) < 0)
				return FABRIC_EXIT_USAGE;
			gd.interval = (unsigned)v;
			break;
		case 'a': gd.alive_file = optarg; break;
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
	if (json && !strcmp(cmd, "gc")) {
		fprintf(stderr, "rdmak fabric gc: --json is for list and check\n");
		return FABRIC_EXIT_USAGE;
	}
	if ((gd.interval || gd.alive_file) && strcmp(cmd, "gc")) {
		fprintf(stderr, "rdmak fabric %s: --interval and --alive-file are for gc\n", cmd);
		return FABRIC_EXIT_USAGE;
	}
	if (gd.alive_file && !gd.interval) {
		fprintf(stderr, "rdmak fabric gc: --alive-file goes with --interval\n");
		return FABRIC_EXIT_USAGE;
	}
	if (gd.interval) {
		gd.file = file;
		gd.only = only;
		return gc_every(&gd);
	}
	if ((r = ufm_fabrics_load(file, &fs, why, sizeof(why))) < 0) {
		fprintf(stderr, "rdmak fabric %s: %s%s\n", cmd, why,
			r == -ENOENT ? " (the node's fabrics file: docs/fabric.md)" : "");
		return FABRIC_EXIT_USAGE;
	}
	if (only && !ufm_fabrics_find(&fs, only) && strcmp(cmd, "list")) {
		ufm_fabrics_names(&fs, names, sizeof(names));
		fprintf(stderr, "rdmak fabric %s: --fabric %s: not a fabric of %s (it names: %s)\n",
			cmd, only, fs.path, names);
		ret = FABRIC_EXIT_USAGE;
		goto out;
	}
	if (!strcmp(cmd, "gc")) {
		ret = cmd_gc(&fs, only);
		goto out;
	}
	if ((r = ledger_load(fs.state_dir, &l)) < 0) {
		fprintf(stderr, "rdmak fabric %s: reading %s: %s\n", cmd, fs.state_dir,
			strerror(-r));
		goto out;
	}
	ret = !strcmp(cmd, "list") ? cmd_list(&l, only, json) : cmd_check(&fs, only, &l, json);
out:
	ledger_clear(&l);
	ufm_fabrics_clear(&fs);
	return ret;
}
