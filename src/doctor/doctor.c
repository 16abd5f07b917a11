/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak doctor`: the command line over the doctor's checks (src/diag), printed as a table or
 * JSON, once or every --interval, with a Node Feature Discovery file beside. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "diag/diag.h"
#include "doc/doc.h"
#include "doctor/nfd.h"
#include "log/log.h"
#include "pool/config.h"
#include "pool/pool.h"
#include "roles.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/opt.h"
#include "util/strutil.h"

extern char **environ;

/* Exit codes: the worst status decides; usage and unreadable inputs get their own. */
enum { EXIT_ALL_OK = 0, EXIT_WORST_WARN = 1, EXIT_SOME_FAIL = 2, EXIT_USAGE = 3 };

/* A file the user named (--env): a pipe is fine (`--env <(...)`). */
static ssize_t user_file_read(const char *path, char **ret)
{
	size_t len;
	int r = fileio_read_at(AT_FDCWD, path, 1u << 20, ret, &len);

	return r < 0 ? r : (ssize_t)len;
}

/* ---- the node and the plugin configuration: which RDMA netns mode it expects ------------- */

/* The node as the checks read it, said on stderr when it cannot be read. GID tables for
 * roce.gids and pod.gids; no check reads pkeys, which are most of the files of a node with many
 * VFs. */
static int node_load(struct hw_ctx *ctx, struct hw_node **ret)
{
	struct hw_error herr = { 0 };
	int r = hw_load(ctx, HW_LOAD_GIDS, ret, &herr);

	if (r < 0)
		fprintf(stderr, "rdmak doctor: reading %s: %s\n",
			herr.path[0] ? herr.path : hw_ctx_sysfs(ctx),
			hw_strerror(herr.err ? herr.err : -r));
	return r;
}

static bool gives_dra(const struct pool_config *cfg)
{
	for (size_t i = 0; i < cfg->n_res; i++)
		if (cfg->res[i].served_by == POOL_BY_DRA)
			return true;
	return false;
}

/* A device that the config gives to both the device plugin and the DRA driver, refused as both
 * refuse it (pool_set_build), on the node the first round then checks. */
static int split_check(const struct pool_config *cfg, const struct hw_node *node, char *err,
		       size_t errlen)
{
	struct pool_opts po = { .served = POOL_BY_ANY, .err = err, .errlen = errlen };
	struct pool_set *ps = NULL;
	int r = pool_set_build(cfg, node, &po, &ps);

	pool_set_free(ps);
	return r;
}

/* The plugin's own reader and parser (src/pool/config.h), so that the doctor refuses exactly
 * the configs the plugin refuses, with the same JSON path; read once, so a pipe too
 * (`--plugin-config <(kubectl get cm ...)`). k8s-rdma-shared-dev-plugin (configList) refuses to
 * start in exclusive mode; the per-VF sriov-network-device-plugin format (resourceList) works
 * in both, and needs exclusive only with RDMA CNI, which the config does not say. rdmak's own
 * "rdmaNetnsMode" decides when set. Where the config gives the DRA driver a resource, the node
 * is needed to judge it: *node is loaded then, for the first round to check too (when it cannot
 * be, that is said on stderr and err left empty). -EINVAL: refused; "<path>: <why>" in err. */
static int plugin_config_load(struct diag *d, struct hw_ctx *ctx, const char *path,
			      struct hw_node **node, char *err, size_t errlen)
{
	struct pool_config *cfg = NULL;
	bool shared = false;
	int r;

	r = pool_config_load(path, POOL_CONFIG_ONCE, &cfg, NULL, err, errlen);
	if (r < 0)
		return r;
	if (gives_dra(cfg)) {
		char why[512] = "";

		err[0] = '\0'; /* a node that cannot be read is said by node_load */
		if (!*node && (r = node_load(ctx, node)) < 0)
			goto out;
		r = split_check(cfg, *node, why, sizeof(why));
		if (r < 0) {
			snprintf(err, errlen, "%s: %s", path,
				 r == -EINVAL && why[0] ? why : strerror(-r));
			goto out;
		}
	}
	for (size_t i = 0; i < cfg->n_res; i++)
		shared |= cfg->res[i].kind == POOL_SHARED;
	if (cfg->rdma_netns_mode >= 0)
		diag_set_plugin_netns(d, path, cfg->rdma_netns_mode,
				      cfg->rdma_netns_mode ? "rdmaNetnsMode \"shared\""
							   : "rdmaNetnsMode \"exclusive\"");
	else if (shared)
		diag_set_plugin_netns(
			d, path, 1, "configList (k8s-rdma-shared-dev-plugin format: shared HCAs)");
	else
		diag_set_plugin_netns(
			d, path, -1,
			"resourceList (sriov-network-device-plugin format: works in either mode; exclusive only with RDMA CNI)");
	r = 0;
out:
	pool_config_free(cfg);
	return r;
}

/* ---- output ------------------------------------------------------------------------------ */

static int print_text(FILE *f, const json_t *findings)
{
	static const struct doc_column cols[] = {
		{ "STATUS", "status" },
		{ "CHECK", "id" },
		{ "OBJECT", "object" },
		{ "FINDING", "title" },
	};
	unsigned count[4] = { 0 };
	size_t i, j;
	const json_t *x, *ev;
	int r = doc_table(f, findings, cols, ELEMENTSOF(cols));

	if (r < 0)
		return r;
	json_array_foreach(findings, i, x)
	{
		enum diag_status st = diag_status_of(x);

		count[st]++;
		if (st < DIAG_WARN)
			continue;
		fprintf(f, "\n%s %s%s%s: %s\n", diag_status_name(st),
			json_string_value(json_object_get(x, "id")),
			json_is_string(json_object_get(x, "object")) ? " " : "",
			json_is_string(json_object_get(x, "object"))
				? json_string_value(json_object_get(x, "object"))
				: "",
			json_string_value(json_object_get(x, "title")));
		json_array_foreach(json_object_get(x, "evidence"), j, ev) fprintf(
			f, "  evidence: %s: %s\n", json_string_value(json_object_get(ev, "path")),
			json_string_value(json_object_get(ev, "value")));
		if (json_is_string(json_object_get(x, "fix")))
			fprintf(f, "  fix: %s\n", json_string_value(json_object_get(x, "fix")));
	}
	fprintf(f, "\n%u ok, %u warn, %u fail, %u skip\n", count[DIAG_OK], count[DIAG_WARN],
		count[DIAG_FAIL], count[DIAG_SKIP]);
	return ferror(f) ? -EIO : 0;
}

/* ---- main ---------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rdmak doctor [--pod] [options]\n"
		"Say why RDMA does not work on this node (default) or in this container (--pod), and how to fix it.\n\n"
		"  --pod                 check the container this runs in (limits, caps, /dev, image, NCCL_*)\n"
		"  --root DIR            read DIR/sys, DIR/dev, DIR/proc; DIR is also the image root\n"
		"  --sysfs DIR           sysfs root (default /sys)\n"
		"  --devfs DIR           devfs root (default /dev)\n"
		"  --procfs DIR          procfs root (default /proc)\n"
		"  --image DIR           root of the image that holds the verbs libraries (default /)\n"
		"  --pid PID             read /proc/PID instead of /proc/self (a sidecar checking its app)\n"
		"  --env FILE            NCCL_* variables from FILE: KEY=VALUE lines as a shell's `set -a; . FILE`\n"
		"                        reads the simple ones (else refused by line), or /proc/PID/environ\n"
		"  --plugin-config FILE  the device plugin config: which RDMA netns mode it expects\n"
		"  --nfd FILE            also write a Node Feature Discovery local feature file\n"
		"  --check ID            run only the checks whose id starts with ID (repeatable)\n"
		"  --list-checks         print the check table and exit\n"
		"  -j, --json            print the findings as a JSON array (docs/doctor.md)\n"
		"  --warnings-ok         exit 0 when the worst finding is a warning (a gate that only fails)\n"
		"  --interval SECONDS    node mode: check again every SECONDS (1 to 86400) until SIGTERM,\n"
		"                        each round's findings (and --nfd file) as one output; exit 0\n"
		"  --alive-file FILE     with --interval: touch FILE every second (for `rdmak probe FILE`)\n"
		"  -h, --help\n\n"
		"Exit: 0 all ok, 1 the worst is a warning, 2 something fails, 3 usage or unreadable input.\n");
}

/* What the command line asked for. */
struct doctor_opts {
	struct hw_roots roots;
	enum diag_scope scope;
	const char *pid; /* NULL: self */
	const char *env_file, *nfd, *plugin_config;
	char *only[16];
	size_t n_only;
	bool json, list, warnings_ok;
	unsigned interval; /* seconds between rounds; 0: one round */
	const char *alive_file;
};

/* 0 to go on, or the exit code to leave with (-1: --help, exit 0). */
static int parse_args(int argc, char **argv, struct doctor_opts *o)
{
	static const struct option opts[] = { { "pod", no_argument, NULL, 'P' },
					      HW_ROOT_LONGOPTS_POD,
					      { "pid", required_argument, NULL, 'I' },
					      { "env", required_argument, NULL, 'e' },
					      { "plugin-config", required_argument, NULL, 'c' },
					      { "nfd", required_argument, NULL, 'n' },
					      { "check", required_argument, NULL, 'C' },
					      { "list-checks", no_argument, NULL, 'L' },
					      { "json", no_argument, NULL, 'j' },
					      { "warnings-ok", no_argument, NULL, 'W' },
					      { "interval", required_argument, NULL, 'i' },
					      { "alive-file", required_argument, NULL, 'a' },
					      { "help", no_argument, NULL, 'h' },
					      {} };
	unsigned long long v;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		if (hw_roots_option(&o->roots, c, optarg))
			continue;
		switch (c) {
		case 'P': o->scope = DIAG_POD; break;
		case 'I': o->pid = optarg; break;
		case 'e': o->env_file = optarg; break;
		case 'c': o->plugin_config = optarg; break;
		case 'n': o->nfd = optarg; break;
		case 'C':
			if (o->n_only == ELEMENTSOF(o->only)) {
				fprintf(stderr, "rdmak doctor: too many --check\n");
				return EXIT_USAGE;
			}
			o->only[o->n_only++] = optarg;
			break;
		case 'L': o->list = true; break;
		case 'j': o->json = true; break;
		case 'W': o->warnings_ok = true; break;
		case 'i':
			if (opt_uint("doctor", "--interval", optarg, 1, 86400, "s", &v) < 0)
				return EXIT_USAGE;
			o->interval = (unsigned)v;
			break;
		case 'a': o->alive_file = optarg; break;
		case 'h': usage(stdout); return -1;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rdmak doctor: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return EXIT_USAGE;
	}
	if (o->interval && o->scope == DIAG_POD) {
		fprintf(stderr,
			"rdmak doctor: --interval is for node mode: a pod is checked once, when it starts\n");
		return EXIT_USAGE;
	}
	if (o->alive_file && !o->interval) {
		fprintf(stderr,
			"rdmak doctor: --alive-file goes with --interval (one round has no loop to prove alive)\n");
		return EXIT_USAGE;
	}
	return 0;
}

/* A --check that selects nothing would print an empty table and exit 0: a typo in a CI gate
 * would pass. Each ID must start some check's id, and one that runs in this scope. */
static int validate_checks(const struct doctor_opts *o)
{
	for (size_t k = 0; k < o->n_only; k++) {
		enum diag_scope scope;
		unsigned scopes = 0;
		const char *id;

		for (size_t i = 0; (id = diag_check_id(i, &scope)); i++)
			if (str_startswith(id, o->only[k]))
				scopes |= scope;
		if (!scopes) {
			fprintf(stderr,
				"rdmak doctor: --check %s: no such check (rdmak doctor --list-checks lists them)\n",
				o->only[k]);
			return -EINVAL;
		}
		if (!(scopes & o->scope)) {
			fprintf(stderr, "rdmak doctor: --check %s: %s\n", o->only[k],
				o->scope == DIAG_POD ? "a node check, not run with --pod"
						     : "a pod check, run only with --pod");
			return -EINVAL;
		}
	}
	return 0;
}

/* Inputs that must exist before any check runs: without them every pod check would read
 * something else (the doctor's own /proc/self for a dead --pid) or blame the image. */
static int validate_inputs(struct diag *d, struct hw_ctx *ctx, const struct doctor_opts *o)
{
	char path[PATH_MAX] = "";
	int r;

	if (o->pid && (r = diag_set_pid(d, o->pid, path, sizeof(path))) < 0) {
		if (r == -EINVAL)
			fprintf(stderr, "rdmak doctor: --pid wants a process id, got '%s'\n",
				o->pid);
		else
			fprintf(stderr, "rdmak doctor: --pid %s: %s (%s)\n", o->pid,
				r == -ENOENT ? "no such process" : strerror(-r), path);
		return r;
	}
	if (o->roots.dir[HW_ROOT_IMAGE] && hw_ctx_root_fd(ctx, HW_ROOT_IMAGE) < 0) {
		fprintf(stderr, "rdmak doctor: --image %s: no such image root (%s)\n",
			o->roots.dir[HW_ROOT_IMAGE], strerror(-hw_ctx_root_fd(ctx, HW_ROOT_IMAGE)));
		return hw_ctx_root_fd(ctx, HW_ROOT_IMAGE);
	}
	return 0;
}

static void list_checks(void)
{
	enum diag_scope scope;
	const char *id;

	for (size_t i = 0; (id = diag_check_id(i, &scope)); i++)
		printf("%-20s %-4s %s\n", id,
		       scope == DIAG_BOTH  ? "both"
		       : scope == DIAG_POD ? "pod"
					   : "node",
		       diag_check_summary(i));
}

static int load_env(struct diag *d, const char *env_file)
{
	_cleanup_free_ char *buf = NULL;
	char why[256] = "";
	bool environ_fmt = false;
	ssize_t l = user_file_read(env_file, &buf);
	int r;

	if (l >= 0) {
		const char *base = strrchr(env_file, '/');

		/* /proc/PID/environ by its name or its NUL-terminated last record; never by a NUL
		 * byte somewhere in a text file */
		base = base ? base + 1 : env_file;
		environ_fmt = !strcmp(base, "environ") || (l > 0 && buf[l - 1] == '\0');
	}
	r = l < 0 ? (int)l
		  : diag_set_env(d, buf, (size_t)l, environ_fmt, env_file, why, sizeof(why));
	if (r < 0) {
		fprintf(stderr, "rdmak doctor: --env %s: %s\n", env_file,
			r == -EINVAL && why[0] ? why : strerror(-r));
		return r;
	}
	return 0;
}

/* One round: read the node (or take *loaded, read for --plugin-config just before), run the
 * checks, print them (and the NFD file). The exit code. */
static int doctor_round(struct diag *d, struct hw_ctx *ctx, const struct doctor_opts *o,
			struct hw_node **loaded)
{
	struct hw_node *node = TAKE_PTR(*loaded);
	enum diag_status worst;
	int r, ret = EXIT_USAGE;

	if (!node && node_load(ctx, &node) < 0)
		return EXIT_USAGE;
	r = diag_run_all(d, node, o->only, o->n_only, &worst);
	if (r < 0) {
		fprintf(stderr, "rdmak doctor: %s\n", strerror(-r));
		goto out;
	}
	r = o->json ? doc_json(stdout, diag_findings(d)) : print_text(stdout, diag_findings(d));
	if (r == 0 && fflush(stdout) == EOF)
		r = -errno;
	if (r < 0) {
		fprintf(stderr, "rdmak doctor: writing the result: %s\n", strerror(-r));
		goto out;
	}
	if (o->nfd && (r = doctor_nfd_write(node, diag_findings(d), o->nfd)) < 0) {
		fprintf(stderr, "rdmak doctor: --nfd %s: %s\n", o->nfd, strerror(-r));
		goto out;
	}
	ret = worst == DIAG_FAIL		      ? EXIT_SOME_FAIL
	      : worst == DIAG_WARN && !o->warnings_ok ? EXIT_WORST_WARN
						      : EXIT_ALL_OK;
out:
	diag_reset(d);
	hw_node_free(node);
	return ret;
}

struct doctor_daemon {
	struct diag *d;
	struct hw_ctx *ctx;
	const struct doctor_opts *o;
	struct hw_node *node; /* read for --plugin-config: the first round's */
};

/* A round of --interval: a failure is said on stderr and tried again at the next interval, as
 * a node's state changes. */
static void doctor_again(void *ud)
{
	struct doctor_daemon *dd = ud;

	if (doctor_round(dd->d, dd->ctx, dd->o, &dd->node) == EXIT_USAGE)
		log_warning("this round failed (said above); again in %u s", dd->o->interval);
}

static int doctor_every(struct diag *d, struct hw_ctx *ctx, const struct doctor_opts *o,
			struct hw_node **node)
{
	struct doctor_daemon dd = { .d = d, .ctx = ctx, .o = o, .node = TAKE_PTR(*node) };
	const char *what = NULL;
	int r;

	log_set_program("doctor");
	log_set_time(true);
	log_info("checking the node every %u s", o->interval);
	r = daemon_run_rounds(o->interval, o->alive_file, NULL, 0, doctor_again, &dd, &what);
	hw_node_free(dd.node); /* no round ran */
	if (r < 0) {
		log_error("%s%s%s: %s", what,
			  o->alive_file && !strcmp(what, "--alive-file") ? " " : "",
			  o->alive_file && !strcmp(what, "--alive-file") ? o->alive_file : "",
			  r == -FILEIO_ENOTREG ? "not a regular file" : strerror(-r));
		return EXIT_USAGE;
	}
	log_info("stopping on %s", strsignal(r));
	return EXIT_ALL_OK;
}

int doctor_main(int argc, char **argv)
{
	struct doctor_opts o = { .scope = DIAG_NODE };
	struct hw_ctx *ctx = NULL;
	struct hw_node *node = NULL; /* read once per round; --plugin-config may read the first */
	struct diag *d = NULL;
	char cfg_err[768] = "", missing[PATH_MAX];
	int r, ret = EXIT_USAGE;

	r = parse_args(argc, argv, &o);
	if (r)
		return r < 0 ? 0 : r;
	if (o.list) {
		list_checks();
		return 0;
	}
	if (validate_checks(&o) < 0)
		goto out;
	r = hw_ctx_new_roots(&o.roots, &ctx, missing, sizeof(missing));
	if (r < 0) {
		fprintf(stderr, "rdmak doctor: cannot open sysfs root %s: %s\n", missing,
			strerror(-r));
		goto out;
	}
	r = diag_new(ctx, NULL, o.scope, environ, &d);
	if (r < 0) {
		fprintf(stderr, "rdmak doctor: %s\n", strerror(-r));
		goto out;
	}
	if (validate_inputs(d, ctx, &o) < 0 || (o.env_file && load_env(d, o.env_file) < 0))
		goto out;
	if (o.plugin_config &&
	    plugin_config_load(d, ctx, o.plugin_config, &node, cfg_err, sizeof(cfg_err)) < 0) {
		/* the plugin's words: "rdmak doctor: --plugin-config FILE: configList[0].selectors: ..." */
		if (cfg_err[0])
			fprintf(stderr, "rdmak doctor: --plugin-config %s\n", cfg_err);
		goto out;
	}
	ret = o.interval ? doctor_every(d, ctx, &o, &node) : doctor_round(d, ctx, &o, &node);
out:
	hw_node_free(node);
	diag_free(d);
	hw_ctx_free(ctx);
	return ret;
}
