/* SPDX-License-Identifier: Apache-2.0 */
/* rdmak vf plan and apply: SriovNetworkNodePolicy objects in, this node's steps out or done (docs/vf.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "doc/doc.h"
#include "hw/hw.h"
#include "kubelet/kubelet.h"
#include "log/log.h"
#include "roles.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/opt.h"
#include "util/strutil.h"
#include "vf/vf.h"

/* Exit codes: --help's "Exit:" sentence and docs/vf.md name the same (tests/cmd/exit_codes.sh). */
enum {
	VF_EXIT_OK = 0,
	VF_EXIT_ERROR = 1,
	VF_EXIT_USAGE = 2,
	VF_EXIT_LIVE = 3,
	VF_EXIT_REBOOT = 4,
	VF_EXIT_REFUSED = 5,
	VF_EXIT_UNSELECTED = 6
};

#define CHECKPOINT "var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
#define POLICY_MAX (4u << 20)

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: rdmak vf plan  --policy FILE... [--node-labels k=v,...] [--root DIR] [--checkpoint FILE]\n"
		"                      [--pod-resources SOCKET] [--json]\n"
		"       rdmak vf apply --policy FILE... [--node-labels k=v,...] [--root DIR] [--checkpoint FILE]\n"
		"                      [--pod-resources SOCKET] [--force] [--timeout MS]\n"
		"                      [--interval S --ready-file FILE [--alive-file FILE]]\n"
		"\n"
		"plan reads sriov-network-operator's SriovNetworkNodePolicy objects (YAML or JSON,\n"
		"unchanged) and prints what this node needs, PF by PF, step by step: each step live (sysfs\n"
		"or rtnetlink, no reboot) or reboot (a firmware setting: the mlxconfig command to run;\n"
		"rdmak never runs it), and the pods that hold VFs a live step would remove (from the\n"
		"kubelet's PodResources API when it answers, else its device-manager checkpoint). apply does the live steps in the kernel's order\n"
		"(sriov_numvfs 0 then N, waiting for each VF; link up; MTU; InfiniBand VF GUIDs; the VFs'\n"
		"driver; their MTU), undoing them in reverse if one fails; it refuses to remove or change a\n"
		"VF a pod holds unless --force. One apply of a node runs at a time: another waits.\n"
		"\n"
		"  --policy FILE        a policy file (repeatable; `---` separated documents, Lists)\n"
		"  --node-labels LIST   this node's labels, for the policies' nodeSelector\n"
		"  --pod-resources SOCKET  the kubelet's PodResources socket (default\n"
		"                       ROOT/var/lib/kubelet/pod-resources/kubelet.sock)\n"
		"  --checkpoint FILE    the kubelet checkpoint (default ROOT/" CHECKPOINT
		"); named, it\n"
		"                       is read instead of asking the kubelet\n"
		"  --json               plan: the plan as JSON (docs/vf.md)\n"
		"  --force              apply: remove or change VFs that pods hold\n"
		"  --timeout MS         apply: wait this long for each PF's VFs (default 10000)\n"
		"  --interval S         apply as a daemon (the chart's vf DaemonSet): at once and whenever\n"
		"                       the policies change (looked at every S seconds, and when a watched\n"
		"                       ConfigMap swaps them) until SIGTERM (exit 0); exit 0 or 4 writes\n"
		"  --ready-file FILE    the marker the plugin waits for (--wait-for), else it is tried again\n"
		"  --alive-file FILE    touched every second (`rdmak probe FILE`)\n" HW_ROOT_USAGE
		"\n"
		"Exit: 0 nothing to do (plan) or done (apply), 1 error (a policy refused, the node\n"
		"unreadable, a step failed and was undone), 2 usage, 3 live steps to do (plan), 4 a reboot\n"
		"step is needed, 5 refused (apply: a pod holds a VF a step would remove or change), 6 the\n"
		"policies select no PF of this node.\n");
}

static int read_policies(char **files, size_t n, struct vf_policies *set)
{
	char err[768];
	for (size_t i = 0; i < n; i++) {
		char *buf = NULL;
		size_t len = 0;
		int r = fileio_read_at(AT_FDCWD, files[i], POLICY_MAX, &buf, &len);
		if (r < 0) {
			fprintf(stderr, "rdmak vf: %s: %s\n", files[i], strerror(-r));
			return r;
		}
		r = vf_policies_parse(set, files[i], buf, len, err, sizeof(err));
		free(buf);
		if (r < 0) {
			fprintf(stderr, "rdmak vf: %s\n", err);
			return r;
		}
	}
	return 0;
}

/* Who holds what, from the kubelet's PodResources API: 1 it answered, 0 it did not (said on
 * stderr when the socket was named or is there: the checkpoint is read instead). */
static int pod_resources_holders(const struct hw_roots *roots, const char *socket,
				 struct vf_holders *h)
{
	struct kubelet_pod_resources *c = NULL;
	struct kubelet_pod_devices d = {};
	char path[PATH_MAX], why[512] = "";
	if (socket)
		snprintf(path, sizeof(path), "%s", socket);
	else
		snprintf(path, sizeof(path), "%s%s", roots->root ? roots->root : "",
			 KUBELET_POD_RESOURCES_SOCKET);
	int r = kubelet_pod_resources_new(path, &c);
	if (r >= 0)
		r = kubelet_pod_resources_list(c, KUBELET_POD_RESOURCES_TIMEOUT_MS, &d, why,
					       sizeof(why));
	kubelet_pod_resources_free(c);
	if (r >= 0) {
		r = vf_holders_from_pod_resources(&d, h);
		kubelet_pod_devices_clear(&d);
		return r < 0 ? r : 1;
	}
	if (socket || r != -ENOENT)
		fprintf(stderr,
			"rdmak vf: the kubelet's PodResources API: %s; reading its checkpoint instead\n",
			why[0] ? why : strerror(-r));
	return 0;
}

/* 1 read, 0 no checkpoint there, <0 error */
static int read_holders(const struct hw_roots *roots, const char *file, struct vf_holders *h)
{
	char path[PATH_MAX], err[512];
	char *buf = NULL;
	size_t len = 0;
	if (file)
		snprintf(path, sizeof(path), "%s", file);
	else
		snprintf(path, sizeof(path), "%s/%s", roots->root ? roots->root : "", CHECKPOINT);
	int r = fileio_read_at(AT_FDCWD, path, 16u << 20, &buf, &len);
	if (r == -ENOENT && !file)
		return 0;
	if (r < 0) {
		fprintf(stderr, "rdmak vf: %s: %s\n", path, strerror(-r));
		return r;
	}
	r = vf_holders_parse(buf, len, h, err, sizeof(err));
	free(buf);
	if (r < 0) {
		fprintf(stderr, "rdmak vf: %s: %s\n", path, err);
		return r;
	}
	return 1;
}

/* A step's VF indices as "0-3,7" (cut with "..." where long). */
static const char *ranges(const json_t *indices, char *buf, size_t len)
{
	size_t n = json_array_size(indices), o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n;) {
		long long a = json_integer_value(json_array_get(indices, i)), b = a;
		while (i + 1 < n && json_integer_value(json_array_get(indices, i + 1)) == b + 1)
			b = json_integer_value(json_array_get(indices, ++i));
		i++;
		int w = a == b ? snprintf(buf + o, len - o, "%s%lld", o ? "," : "", a)
			       : snprintf(buf + o, len - o, "%s%lld-%lld", o ? "," : "", a, b);
		if (w < 0 || (size_t)w >= len - o) {
			snprintf(buf + (len > 4 ? len - 4 : 0), len > 4 ? 4 : len, "...");
			break;
		}
		o += (size_t)w;
	}
	return buf;
}

/* The policies for this node that select none of its PFs; then, if no PF at all, that. */
static void print_unselected(const json_t *plan)
{
	size_t i;
	json_t *p;

	json_array_foreach(json_object_get(plan, "unselected"), i, p)
		printf("policy %s selects no PF of this node\n", json_string_value(p));
	if (!json_array_size(json_object_get(plan, "pfs")))
		printf("no PF of this node is selected by the policies\n");
}

static void print_plan(const json_t *plan, bool have_checkpoint)
{
	size_t i, k;
	json_t *pf, *s, *h;
	json_array_foreach(json_object_get(plan, "pfs"), i, pf)
	{
		printf("PF %s (%s, %s), policy %s: %lld VFs wanted, %lld now, the firmware allows %lld\n",
		       json_string_value(json_object_get(pf, "pf")),
		       json_string_value(json_object_get(pf, "netdev")),
		       json_string_value(json_object_get(pf, "device")),
		       json_string_value(json_object_get(pf, "policy")),
		       json_integer_value(json_object_get(pf, "want_numvfs")),
		       json_integer_value(json_object_get(pf, "numvfs")),
		       json_integer_value(json_object_get(pf, "totalvfs")));
		json_array_foreach(json_object_get(pf, "overridden"), k, h) printf(
			"  overrides policy %s (same resource or overlapping VFs: the operator drops it)\n",
			json_string_value(h));
		json_t *steps = json_object_get(pf, "steps");
		if (!json_array_size(steps))
			printf("  nothing to do\n");
		json_array_foreach(steps, k, s)
		{
			const char *action = json_string_value(json_object_get(s, "action"));
			char what[256], list[160];
			if (!strcmp(action, "firmware"))
				snprintf(what, sizeof(what), "%s",
					 json_string_value(json_object_get(
						 s, json_object_get(s, "command") ? "command"
										  : "note")));
			else if (!strcmp(action, "sriov_numvfs"))
				snprintf(what, sizeof(what), "sriov_numvfs %lld -> %lld",
					 json_integer_value(json_object_get(s, "from")),
					 json_integer_value(json_object_get(s, "to")));
			else if (!strcmp(action, "mtu"))
				snprintf(what, sizeof(what), "mtu %s %lld -> %lld",
					 json_string_value(json_object_get(s, "netdev")),
					 json_integer_value(json_object_get(s, "from")),
					 json_integer_value(json_object_get(s, "to")));
			else if (!strcmp(action, "vf-bind"))
				snprintf(what, sizeof(what), "bind %lld VFs to their driver (%s)",
					 json_integer_value(json_object_get(s, "vfs")),
					 ranges(json_object_get(s, "vf_indices"), list,
						sizeof(list)));
			else if (!strcmp(action, "vf-mtu"))
				snprintf(what, sizeof(what), "mtu %lld on %lld VF netdevs (%s)",
					 json_integer_value(json_object_get(s, "to")),
					 json_integer_value(json_object_get(s, "vfs")),
					 ranges(json_object_get(s, "vf_indices"), list,
						sizeof(list)));
			else if (!strcmp(action, "link-up"))
				snprintf(what, sizeof(what), "link %s up",
					 json_string_value(json_object_get(s, "netdev")));
			else
				snprintf(what, sizeof(what), "node and port GUIDs of %lld VFs (%s)",
					 json_integer_value(json_object_get(s, "vfs")),
					 ranges(json_object_get(s, "vf_indices"), list,
						sizeof(list)));
			printf("  %zu. %-12s %s\n     (%s)\n", k + 1,
			       json_string_value(json_object_get(s, "when")), what,
			       json_string_value(json_object_get(s, "reason")));
		}
		json_t *held = json_object_get(pf, "holders");
		json_array_foreach(held, k, h)
		{
			const char *pod = json_string_value(json_object_get(h, "pod"));
			printf("  held: VF %lld (%s) by pod %s%s%s container %s (%s)\n",
			       json_integer_value(json_object_get(h, "vf_index")),
			       json_string_value(json_object_get(h, "vf")),
			       pod ? json_string_value(json_object_get(h, "namespace")) : "",
			       pod ? "/" : "",
			       pod ? pod : json_string_value(json_object_get(h, "pod_uid")),
			       json_string_value(json_object_get(h, "container")),
			       json_string_value(json_object_get(h, "resource")));
		}
		if (!have_checkpoint)
			printf("  held: unknown (no PodResources answer, no kubelet checkpoint)\n");
	}
	print_unselected(plan);
}

/* What the command line asked for. */
struct vf_cli {
	bool apply, json;
	struct vf_apply_opts aopts;
	struct hw_roots roots;
	char **files, *checkpoint, *pod_resources;
	const char *labels_arg, *ready_file, *alive_file;
	size_t n_files;
	unsigned interval; /* apply --interval: seconds between looks at the policies; 0 once */
};

/* 0 to go on, -1 for --help (exit 0), else the exit code. */
static int vf_parse(int argc, char **argv, struct vf_cli *o)
{
	static const struct option opts[] = {
		HW_ROOT_LONGOPTS,
		{ "json", no_argument, NULL, 'j' },
		{ "policy", required_argument, NULL, 'p' },
		{ "node-labels", required_argument, NULL, 'l' },
		{ "checkpoint", required_argument, NULL, 'c' },
		{ "pod-resources", required_argument, NULL, 'r' },
		{ "force", no_argument, NULL, 'f' },
		{ "timeout", required_argument, NULL, 't' },
		{ "interval", required_argument, NULL, 'i' },
		{ "ready-file", required_argument, NULL, 'R' },
		{ "alive-file", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{},
	};
	const char *cmd = o->apply ? "apply" : "plan";
	unsigned long long v;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "jh", opts, NULL)) != -1) {
		if (hw_roots_option(&o->roots, c, optarg))
			continue;
		switch (c) {
		case 'j': o->json = true; break;
		case 'l': o->labels_arg = optarg; break;
		case 'c': o->checkpoint = optarg; break;
		case 'r': o->pod_resources = optarg; break;
		case 'f': o->aopts.force = true; break;
		case 't':
			if (opt_uint("vf", "--timeout", optarg, 0, 3600000, "ms", &v) < 0)
				return VF_EXIT_USAGE;
			o->aopts.timeout_ms = (int)v;
			break;
		case 'i':
			if (opt_uint("vf", "--interval", optarg, 1, 86400, "s", &v) < 0)
				return VF_EXIT_USAGE;
			o->interval = (unsigned)v;
			break;
		case 'R': o->ready_file = optarg; break;
		case 'a': o->alive_file = optarg; break;
		case 'p': {
			char **g = realloc(o->files, (o->n_files + 1) * sizeof(*o->files));
			if (!g)
				return VF_EXIT_ERROR;
			o->files = g;
			o->files[o->n_files++] = optarg;
			break;
		}
		case 'h': usage(stdout); return -1;
		default: usage(stderr); return VF_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "rdmak vf %s: unexpected argument '%s'\n", cmd, argv[optind]);
		return VF_EXIT_USAGE;
	}
	if (!o->n_files) {
		fprintf(stderr, "rdmak vf %s: --policy is required\n", cmd);
		return VF_EXIT_USAGE;
	}
	if (o->apply && o->json) {
		fprintf(stderr, "rdmak vf apply: --json is not an option of apply\n");
		return VF_EXIT_USAGE;
	}
	if (!o->apply && (o->aopts.force || o->aopts.timeout_ms != 10000 || o->interval ||
			  o->ready_file || o->alive_file)) {
		fprintf(stderr, "rdmak vf plan: --force, --timeout, --interval, --ready-file and "
				"--alive-file are options of apply\n");
		return VF_EXIT_USAGE;
	}
	if ((o->ready_file || o->alive_file) && !o->interval) {
		fprintf(stderr,
			"rdmak vf apply: --ready-file and --alive-file go with --interval\n");
		return VF_EXIT_USAGE;
	}
	return 0;
}

/* One plan or apply: the exit code. */
static int vf_once(const struct vf_cli *o)
{
	const bool apply = o->apply, json = o->json;
	json_t *labels = NULL, *plan = NULL;
	struct vf_policies set = {};
	struct vf_holders holders = {};
	struct vf_resolved res = {};
	struct hw_ctx *ctx = NULL;
	struct hw_node *node = NULL;
	struct hw_error herr = { 0 };
	char missing[PATH_MAX], why[512];
	int lock = -1, r, ret = VF_EXIT_ERROR;

	if (vf_labels_parse(o->labels_arg, &labels) < 0) {
		fprintf(stderr, "rdmak vf plan: --node-labels: expected k=v,k2=v2\n");
		return VF_EXIT_USAGE;
	}
	if (read_policies(o->files, o->n_files, &set) < 0)
		goto out;
	if ((r = hw_ctx_new_roots(&o->roots, &ctx, missing, sizeof(missing))) < 0) {
		fprintf(stderr, "rdmak vf: %s: %s\n", missing, strerror(-r));
		goto out;
	}
	/* from the first read of the node to the last write or undo: what apply plans from is
	 * what it changes, and its undo goes back to what it found */
	if (apply && (lock = vf_lock(ctx, false)) == -EWOULDBLOCK) {
		fprintf(stderr,
			"rdmak vf apply: another apply of this node holds %s/bus/pci/devices; waiting "
			"for it\n",
			hw_ctx_sysfs(ctx));
		lock = vf_lock(ctx, true);
	}
	if (lock < 0 && apply) {
		fprintf(stderr, "rdmak vf apply: locking %s/bus/pci/devices: %s\n",
			hw_ctx_sysfs(ctx), strerror(-lock));
		goto out;
	}
	if ((r = hw_load(ctx, 0, &node, &herr)) < 0) {
		fprintf(stderr, "rdmak vf: %s: %s\n", herr.path,
			strerror(herr.err ? herr.err : -r));
		goto out;
	}
	/* a checkpoint named on the command line wins; else the kubelet's answer when it gives one */
	int have = o->checkpoint ? 0 : pod_resources_holders(&o->roots, o->pod_resources, &holders);
	if (have == 0)
		have = read_holders(&o->roots, o->checkpoint, &holders);
	if (have < 0)
		goto out;
	if ((r = vf_resolve(node, &set, labels, &res, why, sizeof(why))) == -EINVAL) {
		fprintf(stderr, "rdmak vf: %s\n", why);
		goto out;
	}
	if (r < 0 || vf_observe(ctx, &res) < 0 ||
	    vf_plan_build(node, &res, have ? &holders : NULL, &plan) < 0) {
		fprintf(stderr, "rdmak vf: out of memory\n");
		goto out;
	}
	/* nothing selected is not "nothing to do": a policy that names no PF here (a typo, another
	 * node's PCI address) must not let the node look ready */
	if (!json_array_size(json_object_get(plan, "pfs"))) {
		if (json)
			doc_json(stdout, plan); /* its write error is ferror's below */
		else
			print_unselected(plan);
		ret = fflush(stdout) || ferror(stdout) ? VF_EXIT_ERROR : VF_EXIT_UNSELECTED;
		goto out;
	}
	if (apply) {
		struct vf_apply_report rep;
		r = vf_apply(ctx, plan, &o->aopts, &rep);
		print_unselected(plan);
		for (size_t i = 0; i < rep.n_lines; i++)
			printf("%s\n", rep.lines[i]);
		if (r < 0) {
			fprintf(stderr,
				"rdmak vf apply: a step failed (%s); the steps done were undone\n",
				strerror(-r));
			vf_apply_report_clear(&rep);
			goto out;
		}
		ret = rep.result == VF_APPLY_REFUSED ? VF_EXIT_REFUSED
		      : rep.reboot		     ? VF_EXIT_REBOOT
						     : VF_EXIT_OK;
		if (rep.result == VF_APPLY_REFUSED)
			fprintf(stderr,
				"rdmak vf apply: refused: pods hold VFs that these steps would remove or change (--force to do them anyway)\n");
		vf_apply_report_clear(&rep);
		if (fflush(stdout) || ferror(stdout))
			ret = VF_EXIT_ERROR;
		goto out;
	}
	if (json)
		doc_json(stdout, plan); /* its write error is ferror's below */
	else
		print_plan(plan, have > 0);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "rdmak vf: writing the plan: %s\n", strerror(errno));
		goto out;
	}
	ret = json_integer_value(json_object_get(plan, "reboot")) ? VF_EXIT_REBOOT
	      : json_integer_value(json_object_get(plan, "live")) ? VF_EXIT_LIVE
								  : VF_EXIT_OK;
out:
	if (lock >= 0)
		close(lock);
	json_decref(plan);
	json_decref(labels);
	vf_resolved_clear(&res);
	vf_holders_clear(&holders);
	vf_policies_clear(&set);
	hw_node_free(node);
	hw_ctx_free(ctx);
	return ret;
}

/* apply --interval: the chart's vf DaemonSet. At once and whenever the policies' text differs from
 * the last text applied (looked at every interval, and at once when a ConfigMap update swaps
 * them), one apply; done (0) or needing only a reboot step (4), the ready marker is written
 * (the plugin waits for it); anything else is said and tried again at the next interval. */
struct vf_watch {
	const struct vf_cli *o;
	char *applied; /* the policies' text of the last apply that made the node ready */
};

static char *policies_text(const struct vf_cli *o)
{
	char *all = NULL;

	for (size_t i = 0; i < o->n_files; i++) {
		_cleanup_free_ char *buf = NULL;

		if (fileio_read_at(AT_FDCWD, o->files[i], POLICY_MAX, &buf, NULL) < 0 ||
		    str_append_sep(&all, "\n---\n", "%s", buf) < 0) {
			free(all);
			return NULL;
		}
	}
	return all ? all : strdup("");
}

static void watch_round(void *ud)
{
	struct vf_watch *w = ud;
	_cleanup_free_ char *text = policies_text(w->o);
	int r;

	if (text && w->applied && !strcmp(text, w->applied))
		return;
	r = vf_once(w->o);
	fflush(stdout);
	if (r == VF_EXIT_OK || r == VF_EXIT_REBOOT) {
		int k = w->o->ready_file
				? fileio_write_atomic_at(AT_FDCWD, w->o->ready_file, "", 0, 0644)
				: 0;

		if (k < 0) {
			log_error_errno(k, "writing the ready marker %s: %m; again in %u s",
					w->o->ready_file, w->o->interval);
			return;
		}
		log_info("applied; ready marker %s%s",
			 w->o->ready_file ? w->o->ready_file : "(none)",
			 r == VF_EXIT_REBOOT ? " (a reboot step is left: see above)" : "");
		free(w->applied);
		w->applied = TAKE_PTR(text);
	} else {
		log_warning("rdmak vf apply exited %d: not ready; again in %u s", r,
			    w->o->interval);
	}
}

static int vf_watch(const struct vf_cli *o)
{
	struct vf_watch w = { .o = o };
	const char *what = NULL;
	int r;

	log_set_program("vf");
	log_set_time(true);
	log_info("applying %s when it changes, looking every %u s; ready marker %s", o->files[0],
		 o->interval, o->ready_file ? o->ready_file : "(none)");
	r = daemon_run_rounds(o->interval, o->alive_file, o->files, o->n_files, watch_round, &w,
			      &what);
	free(w.applied);
	if (r < 0) {
		log_error_errno(r, "%s: %m", what);
		return strcmp(what, "--alive-file") ? VF_EXIT_ERROR : VF_EXIT_USAGE;
	}
	log_info("stopping on %s", strsignal(r));
	return VF_EXIT_OK;
}

static int vf_run(int argc, char **argv, bool apply)
{
	struct vf_cli o = { .apply = apply, .aopts = { .timeout_ms = 10000 } };
	int r = vf_parse(argc, argv, &o);

	if (r == 0)
		r = o.interval ? vf_watch(&o) : vf_once(&o);
	else if (r < 0)
		r = VF_EXIT_OK;
	free(o.files);
	return r;
}

int vf_main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "plan"))
		return vf_run(argc - 1, argv + 1, false);
	if (argc >= 2 && !strcmp(argv[1], "apply"))
		return vf_run(argc - 1, argv + 1, true);
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return VF_EXIT_OK;
	}
	if (argc >= 2)
		fprintf(stderr, "rdmak vf: unknown command '%s' (plan, apply)\n", argv[1]);
	usage(stderr);
	return VF_EXIT_USAGE;
}
