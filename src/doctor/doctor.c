/* SPDX-License-Identifier: Apache-2.0 */
/* `rdmak doctor`: the check table, the finding builder and the role's main. */
#include "doctor/internal.h"

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
#include "doc/doc.h"
#include "log/log.h"
#include "plugin/pluginconf.h"
#include "roles.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/opt.h"
#include "util/strutil.h"

extern char **environ;

/* Exit codes: the worst status decides; usage and unreadable inputs get their own. */
enum { EXIT_ALL_OK = 0, EXIT_WORST_WARN = 1, EXIT_SOME_FAIL = 2, EXIT_USAGE = 3 };

const struct doctor_check doctor_checks[] = {
	/* node: hardware, kernel, fabric */
	{ "rdma.devices", DOCTOR_BOTH, doctor_check_rdma_devices, DOCTOR_CAUSE_NO_DEVICE,
	  "RDMA devices present and their PCI functions bound to a driver" },
	{ "kernel.modules", DOCTOR_NODE, doctor_check_kernel_modules, DOCTOR_CAUSE_KERNEL_MODULE,
	  "ib_uverbs, ib_umad, rdma_ucm and the HCA's RDMA driver (mlx5_ib) loaded" },
	{ "port.state", DOCTOR_BOTH, doctor_check_port_state, DOCTOR_CAUSE_PORT_DOWN,
	  "each port ACTIVE / LinkUp, else the likely cause" },
	{ "port.sm", DOCTOR_BOTH, doctor_check_port_sm, DOCTOR_CAUSE_SUBNET_MANAGER,
	  "InfiniBand ports have a subnet manager (sm_lid, lid)" },
	{ "port.ipoib", DOCTOR_NODE, doctor_check_port_ipoib, DOCTOR_CAUSE_IPOIB,
	  "IPoIB netdev carrier vs the IB port state (what ibdev2netdev's Up/Down means)" },
	{ "roce.gids", DOCTOR_NODE, doctor_check_roce_gids, DOCTOR_CAUSE_GID,
	  "RoCE ports have a RoCE v2 IPv4 GID" },
	{ "bond.lag", DOCTOR_NODE, doctor_check_bond_lag, DOCTOR_CAUSE_BOND,
	  "bonds: mode, slaves up, RoCE LAG device present" },
	{ "netdev.mtu", DOCTOR_NODE, doctor_check_netdev_mtu, DOCTOR_CAUSE_MTU,
	  "IPoIB MTU 2044/4092/65520, RoCE MTU 1500/9000, bond and rail MTUs consistent" },
	{ "sriov.vfs", DOCTOR_NODE, doctor_check_sriov, DOCTOR_CAUSE_SRIOV,
	  "SR-IOV numvfs vs totalvfs, VFs created and bound" },
	{ "chardev.nodes", DOCTOR_NODE, doctor_check_chardevs, DOCTOR_CAUSE_DEVICE_NODE,
	  "/dev/infiniband nodes present, matching sysfs, sane permissions" },
	{ "gpudirect.driver", DOCTOR_BOTH, doctor_check_gpudirect_driver, DOCTOR_CAUSE_GPU_MEMORY,
	  "GPU memory registration possible: nvidia_peermem loaded or dma-buf capable" },
	{ "gpudirect.topology", DOCTOR_NODE, doctor_check_gpudirect_topology,
	  DOCTOR_CAUSE_GPU_TOPOLOGY, "each GPU has an HCA behind the same PCIe switch (PIX/PXB)" },
	{ "gpudirect.acs", DOCTOR_NODE, doctor_check_gpudirect_acs, DOCTOR_CAUSE_PCIE_ACS,
	  "no ACS peer-to-peer redirect on the bridges between a GPU and its HCA" },
	{ "netns.mode", DOCTOR_NODE, doctor_check_netns_mode, DOCTOR_CAUSE_RDMA_NETNS,
	  "RDMA netns mode vs what the device plugin configuration expects" },
	/* pod: what the container was given */
	{ "pod.devnodes", DOCTOR_POD, doctor_check_pod_devnodes, DOCTOR_CAUSE_DEVICE_NODE,
	  "a /dev/infiniband/uverbsN node, openable, for each HCA visible in /sys" },
	{ "pod.netns", DOCTOR_POD, doctor_check_pod_netns, DOCTOR_CAUSE_RDMA_NETNS,
	  "exclusive RDMA netns mode: an RDMA device was moved into this pod" },
	{ "pod.memlock", DOCTOR_POD, doctor_check_pod_memlock, DOCTOR_CAUSE_MEMLOCK,
	  "RLIMIT_MEMLOCK vs what memory registration needs" },
	{ "pod.ipc_lock", DOCTOR_POD, doctor_check_pod_ipc_lock, DOCTOR_CAUSE_IPC_LOCK,
	  "CAP_IPC_LOCK effective (not for a non-root user)" },
	{ "pod.memory", DOCTOR_POD, doctor_check_pod_memory, DOCTOR_CAUSE_CGROUP_MEMORY,
	  "cgroup memory limit leaves room for pinned memory" },
	{ "pod.shm", DOCTOR_POD, doctor_check_pod_shm, DOCTOR_CAUSE_SHM,
	  "/dev/shm large enough for NCCL" },
	{ "pod.gids", DOCTOR_POD, doctor_check_pod_gids, DOCTOR_CAUSE_GID,
	  "RoCE GIDs visible in the pod and owned by one of its netdevs" },
	{ "pod.provider", DOCTOR_POD, doctor_check_pod_provider, DOCTOR_CAUSE_PROVIDER,
	  "libibverbs and the HCA's provider library installed in the image" },
	{ "nccl.ib_hca", DOCTOR_POD, doctor_check_nccl_ib_hca, DOCTOR_CAUSE_NCCL_ENV,
	  "NCCL_IB_HCA names usable HCAs and ports, prefix-match pitfall" },
	{ "nccl.socket_ifname", DOCTOR_POD, doctor_check_nccl_socket_ifname, DOCTOR_CAUSE_NCCL_ENV,
	  "NCCL_SOCKET_IFNAME matches an interface of the pod" },
	{ "nccl.env", DOCTOR_POD, doctor_check_nccl_misc, DOCTOR_CAUSE_NCCL_ENV,
	  "NCCL_IB_DISABLE, NCCL_IB_GID_INDEX and NCCL_NET_GDR_LEVEL sane" },
};
const size_t doctor_n_checks = ELEMENTSOF(doctor_checks);

const char *doctor_status_name(enum doctor_status s)
{
	switch (s) {
	case DOCTOR_OK: return "ok";
	case DOCTOR_WARN: return "warn";
	case DOCTOR_FAIL: return "fail";
	default: return "skip";
	}
}

static json_t *vstr(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static json_t *vstr(const char *fmt, va_list ap)
{
	_cleanup_free_ char *s = NULL;

	if (vasprintf(&s, fmt, ap) < 0)
		return NULL;
	/* names and values come from sysfs and the pod's files: escape what is not UTF-8 rather
	 * than lose the title or the evidence */
	return doc_string(s);
}

/* The cause of the finding about to be appended, at index json_array_size(d->findings). */
static int record_cause(struct doctor *d, enum doctor_cause cause)
{
	size_t i = json_array_size(d->findings);

	if (i >= d->causes_cap) {
		size_t cap = d->causes_cap ? 2 * d->causes_cap : 32;
		enum doctor_cause *v = reallocarray(d->causes, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->causes = v;
		d->causes_cap = cap;
	}
	d->causes[i] = cause;
	return 0;
}

json_t *doctor_add(struct doctor *d, enum doctor_status st, const char *object,
		   const char *title_fmt, ...)
{
	json_t *f, *title;
	va_list ap;

	va_start(ap, title_fmt);
	title = vstr(title_fmt, ap);
	va_end(ap);
	/* the key order is the documented one; setters below replace values in place */
	f = json_pack("{s:s, s:s, s:o?, s:o, s:[], s:n}", "id", d->check->id, "status",
		      doctor_status_name(st), "object", object ? doc_string(object) : NULL, "title",
		      title ? title : json_string(""), "evidence", "fix");
	if (!f || record_cause(d, st >= DOCTOR_WARN ? d->check->cause : DOCTOR_CAUSE_NONE) < 0) {
		json_decref(f);
		return NULL;
	}
	if (json_array_append_new(d->findings, f) < 0)
		return NULL;
	return f;
}

void doctor_cause(struct doctor *d, const json_t *f, enum doctor_cause cause)
{
	/* the finding is nearly always the last one added */
	for (size_t i = json_array_size(d->findings); f && i-- > 0;)
		if (json_array_get(d->findings, i) == f) {
			d->causes[i] = cause;
			return;
		}
}

void doctor_evidence(json_t *f, const char *path, const char *value_fmt, ...)
{
	json_t *v;
	va_list ap;

	if (!f)
		return;
	va_start(ap, value_fmt);
	v = vstr(value_fmt, ap);
	va_end(ap);
	if (v)
		json_array_append_new(
			json_object_get(f, "evidence"),
			json_pack("{s:o, s:o}", "path", doc_string(path), "value", v));
}

void doctor_fix(json_t *f, const char *fmt, ...)
{
	json_t *v;
	va_list ap;

	if (!f)
		return;
	va_start(ap, fmt);
	v = vstr(fmt, ap);
	va_end(ap);
	if (v)
		json_object_set_new(f, "fix", v);
}

/* A root's path as the prefix of the paths shown: "" for "/" (so "/usr/lib", not "//usr/lib") */
static const char *root_prefix(const struct doctor *d, enum hw_root root)
{
	const char *p = d->ctx ? hw_ctx_root(d->ctx, root) : NULL;

	return !p || !strcmp(p, "/") ? "" : p;
}

static const char *vpath(char *buf, size_t n, const char *root, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));
static const char *vpath(char *buf, size_t n, const char *root, const char *fmt, va_list ap)
{
	int l = snprintf(buf, n, "%s", root);

	if (l < 0 || (size_t)l >= n)
		return buf;
	vsnprintf(buf + l, n - (size_t)l, fmt, ap);
	return buf;
}

#define DEFINE_PATH(fn, root)                                                                      \
	const char *fn(const struct doctor *d, char *buf, size_t n, const char *fmt, ...)          \
	{                                                                                          \
		va_list ap;                                                                        \
		va_start(ap, fmt);                                                                 \
		vpath(buf, n, root_prefix(d, root), fmt, ap);                                      \
		va_end(ap);                                                                        \
		return buf;                                                                        \
	}
DEFINE_PATH(doctor_sys, HW_ROOT_SYSFS)
DEFINE_PATH(doctor_dev, HW_ROOT_DEVFS)
DEFINE_PATH(doctor_proc, HW_ROOT_PROCFS)
DEFINE_PATH(doctor_img, HW_ROOT_IMAGE)

/* "ROOT/sys/class/net/x" -> "class/net/x": the doctor's evidence names full paths, the
 * context reads relative ones */
static const char *root_rel(const struct doctor *d, enum hw_root root, const char *path)
{
	const char *pre = root_prefix(d, root);
	size_t l = strlen(pre);

	if (!d->ctx || strncmp(path, pre, l) || (path[l] && path[l] != '/'))
		return NULL;
	path += l;
	while (*path == '/')
		path++;
	return *path ? path : ".";
}

int doctor_open(const struct doctor *d, enum hw_root root, const char *path, int flags)
{
	const char *rel = root_rel(d, root, path);

	return rel ? hw_ctx_open(d->ctx, root, rel, flags) : -EINVAL;
}

ssize_t doctor_read(const struct doctor *d, enum hw_root root, const char *path, char *buf,
		    size_t n)
{
	const char *rel = root_rel(d, root, path);
	ssize_t l;

	if (!rel || n == 0)
		return -EINVAL;
	l = hw_ctx_read(d->ctx, root, rel, buf, n - 1);
	if (l >= 0)
		buf[l] = '\0';
	return l;
}

ssize_t doctor_read_alloc(const struct doctor *d, enum hw_root root, const char *path, char **ret)
{
	const char *rel = root_rel(d, root, path);
	size_t len;
	int r;

	if (!rel)
		return -EINVAL;
	r = hw_ctx_read_alloc(d->ctx, root, rel, 1u << 20, ret, &len);
	return r < 0 ? r : (ssize_t)len;
}

ssize_t doctor_sys_read(const struct doctor *d, const char *syspath, char *buf, size_t n)
{
	return doctor_read(d, HW_ROOT_SYSFS, syspath, buf, n);
}

bool doctor_exists(const struct doctor *d, enum hw_root root, const char *path)
{
	int fd = doctor_open(d, root, path, O_PATH);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

bool doctor_sys_exists(const struct doctor *d, const char *syspath)
{
	return doctor_exists(d, HW_ROOT_SYSFS, syspath);
}

DIR *doctor_opendir(const struct doctor *d, enum hw_root root, const char *path)
{
	int fd = doctor_open(d, root, path, O_RDONLY | O_DIRECTORY);
	DIR *dir;

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	if (!(dir = fdopendir(fd)))
		close(fd);
	return dir;
}

/* A file the user named (--plugin-config, --env): a pipe is fine (`--env <(...)`). */
static ssize_t user_file_read(const char *path, char **ret)
{
	size_t len;
	int r = fileio_read_at(AT_FDCWD, path, 1u << 20, ret, &len);

	return r < 0 ? r : (ssize_t)len;
}

/* ---- the plugin configuration: which RDMA netns mode it expects ------------------------ */

/* The plugin's own parser (src/plugin/pluginconf.h), so that the doctor refuses exactly the configs
 * the plugin refuses, with the same JSON path. k8s-rdma-shared-dev-plugin (configList) refuses
 * to start in exclusive mode; the per-VF sriov-network-device-plugin format (resourceList) works
 * in both, and needs exclusive only with RDMA CNI, which the config does not say. rdmak's own
 * "rdmaNetnsMode" decides when set. -EINVAL: refused, the reason in err. */
static int plugin_config_load(struct doctor *d, const char *path, char *err, size_t errlen)
{
	_cleanup_free_ char *buf = NULL;
	struct plugin_config *cfg = NULL;
	bool shared = false;
	ssize_t l = user_file_read(path, &buf);
	int r;

	if (l < 0)
		return (int)l;
	r = plugin_config_parse(buf, (size_t)l, &cfg, err, errlen);
	if (r < 0)
		return r;
	for (size_t i = 0; i < cfg->n_res; i++)
		shared |= cfg->res[i].kind == PLUGIN_SHARED;
	if (cfg->rdma_netns_mode >= 0) {
		d->plugin_netns = cfg->rdma_netns_mode;
		snprintf(d->plugin_why, sizeof(d->plugin_why), "rdmaNetnsMode \"%s\"",
			 cfg->rdma_netns_mode ? "shared" : "exclusive");
	} else if (shared) {
		d->plugin_netns = 1;
		snprintf(d->plugin_why, sizeof(d->plugin_why),
			 "configList (k8s-rdma-shared-dev-plugin format: shared HCAs)");
	} else {
		d->plugin_netns = -1;
		snprintf(
			d->plugin_why, sizeof(d->plugin_why),
			"resourceList (sriov-network-device-plugin format: works in either mode; exclusive only with RDMA CNI)");
	}
	plugin_config_free(cfg);
	return 0;
}

/* ---- output ------------------------------------------------------------------------------ */

static enum doctor_status status_of(const json_t *f)
{
	const char *s = json_string_value(json_object_get(f, "status"));

	if (!s)
		return DOCTOR_SKIP;
	return !strcmp(s, "fail")   ? DOCTOR_FAIL
	       : !strcmp(s, "warn") ? DOCTOR_WARN
	       : !strcmp(s, "ok")   ? DOCTOR_OK
				    : DOCTOR_SKIP;
}

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
		enum doctor_status st = status_of(x);

		count[st]++;
		if (st < DOCTOR_WARN)
			continue;
		fprintf(f, "\n%s %s%s%s: %s\n", doctor_status_name(st),
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
	fprintf(f, "\n%u ok, %u warn, %u fail, %u skip\n", count[DOCTOR_OK], count[DOCTOR_WARN],
		count[DOCTOR_FAIL], count[DOCTOR_SKIP]);
	return ferror(f) ? -EIO : 0;
}

/* ---- the doctor for other roles -------------------------------------------------------------- */

static void doctor_clear(struct doctor *d)
{
	json_decref(d->findings);
	free(d->causes);
	doctor_env_clear(&d->env);
	d->findings = NULL;
	d->causes = NULL;
	d->causes_cap = 0;
}

int doctor_new(struct hw_ctx *ctx, const struct hw_node *node, enum doctor_scope scope,
	       char *const *envp, struct doctor **ret)
{
	struct doctor *d = calloc(1, sizeof(*d));
	int fd;

	if (!d)
		return -ENOMEM;
	d->scope = scope;
	d->node = node;
	d->ctx = ctx;
	d->plugin_netns = -1;
	str_copy(d->pid, sizeof(d->pid), "self");
	d->env_source = "environment";
	d->findings = json_array();
	if (!d->findings || doctor_env_from_environ(envp, &d->env) < 0) {
		doctor_free(d);
		return -ENOMEM;
	}
	fd = hw_ctx_open(ctx, HW_ROOT_PROCFS, "self/status", O_PATH);
	d->pod_files = fd >= 0;
	if (fd >= 0)
		close(fd);
	*ret = d;
	return 0;
}

void doctor_free(struct doctor *d)
{
	if (!d)
		return;
	doctor_clear(d);
	free(d);
}

static enum doctor_status status_of(const json_t *f);

static void finding_view(const struct doctor *d, size_t i, struct doctor_finding *ret)
{
	const json_t *f = json_array_get(d->findings, i);

	*ret = (struct doctor_finding){
		.id = json_string_value(json_object_get(f, "id")),
		.status = status_of(f),
		.cause = d->causes[i],
		.object = json_string_value(json_object_get(f, "object")),
		.title = json_string_value(json_object_get(f, "title")),
		.fix = json_string_value(json_object_get(f, "fix")),
	};
}

int doctor_run_check(struct doctor *d, const char *id, const char *object,
		     struct doctor_finding *ret)
{
	const struct doctor_check *c = NULL;
	size_t before, worst = SIZE_MAX;

	for (size_t i = 0; i < doctor_n_checks && !c; i++)
		if (!strcmp(doctor_checks[i].id, id))
			c = &doctor_checks[i];
	if (!c)
		return -ENOENT;
	/* a pod's check without the pod's files would judge the files of whoever runs it */
	if (c->scope == DOCTOR_POD && !d->pod_files)
		return 0;
	before = json_array_size(d->findings);
	d->check = c;
	c->run(d);
	for (size_t i = before; i < json_array_size(d->findings); i++) {
		const json_t *f = json_array_get(d->findings, i);
		const char *obj = json_string_value(json_object_get(f, "object"));

		if (object && obj && strcmp(obj, object))
			continue;
		if (worst == SIZE_MAX ||
		    status_of(f) > status_of(json_array_get(d->findings, worst)))
			worst = i;
	}
	if (worst == SIZE_MAX)
		return 0;
	finding_view(d, worst, ret);
	return 1;
}

int doctor_run_check_each(struct doctor *d, const char *id,
			  void (*fn)(void *ud, const struct doctor_finding *f), void *ud)
{
	const struct doctor_check *c = NULL;
	size_t before;

	for (size_t i = 0; i < doctor_n_checks && !c; i++)
		if (!strcmp(doctor_checks[i].id, id))
			c = &doctor_checks[i];
	if (!c)
		return -ENOENT;
	if (c->scope == DOCTOR_POD && !d->pod_files)
		return 0;
	before = json_array_size(d->findings);
	d->check = c;
	c->run(d);
	for (size_t i = before; i < json_array_size(d->findings); i++) {
		struct doctor_finding f;

		finding_view(d, i, &f);
		fn(ud, &f);
	}
	return (int)(json_array_size(d->findings) - before);
}

const char *doctor_check_id(size_t i, enum doctor_scope *ret_scope)
{
	if (i >= doctor_n_checks)
		return NULL;
	if (ret_scope)
		*ret_scope = (enum doctor_scope)doctor_checks[i].scope;
	return doctor_checks[i].id;
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

static bool check_selected(const struct doctor_check *c, char *const *only, size_t n_only)
{
	if (n_only == 0)
		return true;
	for (size_t i = 0; i < n_only; i++)
		if (str_startswith(c->id, only[i]))
			return true;
	return false;
}

/* What the command line asked for. */
struct doctor_opts {
	struct hw_roots roots;
	const char *env_file, *nfd;
	char *only[16];
	size_t n_only;
	bool json, list, warnings_ok;
	unsigned interval; /* seconds between rounds; 0: one round */
	const char *alive_file;
};

/* 0 to go on, or the exit code to leave with (-1: --help, exit 0). */
static int parse_args(int argc, char **argv, struct doctor *d, struct doctor_opts *o)
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
		case 'P': d->scope = DOCTOR_POD; break;
		case 'I':
			/* it becomes a path component under procfs */
			if (!*optarg || strlen(optarg) >= sizeof(d->pid) ||
			    strspn(optarg, "0123456789") != strlen(optarg)) {
				fprintf(stderr,
					"rdmak doctor: --pid wants a process id, got '%s'\n",
					optarg);
				return EXIT_USAGE;
			}
			str_copy(d->pid, sizeof(d->pid), optarg);
			break;
		case 'e': o->env_file = optarg; break;
		case 'c': d->plugin_config = optarg; break;
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
	if (o->interval && d->scope == DOCTOR_POD) {
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
static int validate_checks(const struct doctor *d, const struct doctor_opts *o)
{
	for (size_t k = 0; k < o->n_only; k++) {
		unsigned scopes = 0;

		for (size_t i = 0; i < doctor_n_checks; i++)
			if (str_startswith(doctor_checks[i].id, o->only[k]))
				scopes |= doctor_checks[i].scope;
		if (!scopes) {
			fprintf(stderr,
				"rdmak doctor: --check %s: no such check (rdmak doctor --list-checks lists them)\n",
				o->only[k]);
			return -EINVAL;
		}
		if (!(scopes & d->scope)) {
			fprintf(stderr, "rdmak doctor: --check %s: %s\n", o->only[k],
				d->scope == DOCTOR_POD ? "a node check, not run with --pod"
						       : "a pod check, run only with --pod");
			return -EINVAL;
		}
	}
	return 0;
}

/* Inputs that must exist before any check runs: without them every pod check would read
 * something else (the doctor's own /proc/self for a dead --pid) or blame the image. */
static int validate_inputs(const struct doctor *d, const struct doctor_opts *o)
{
	char path[PATH_MAX];

	if (strcmp(d->pid, "self")) {
		int fd = doctor_open(d, HW_ROOT_PROCFS,
				     doctor_proc(d, path, sizeof(path), "/%s", d->pid),
				     O_PATH | O_DIRECTORY);

		if (fd < 0) {
			fprintf(stderr, "rdmak doctor: --pid %s: %s (%s)\n", d->pid,
				fd == -ENOENT ? "no such process" : strerror(-fd), path);
			return fd;
		}
		close(fd);
	}
	if (o->roots.dir[HW_ROOT_IMAGE] && hw_ctx_root_fd(d->ctx, HW_ROOT_IMAGE) < 0) {
		fprintf(stderr, "rdmak doctor: --image %s: no such image root (%s)\n",
			o->roots.dir[HW_ROOT_IMAGE],
			strerror(-hw_ctx_root_fd(d->ctx, HW_ROOT_IMAGE)));
		return hw_ctx_root_fd(d->ctx, HW_ROOT_IMAGE);
	}
	return 0;
}

static void list_checks(void)
{
	for (size_t i = 0; i < doctor_n_checks; i++)
		printf("%-20s %-4s %s\n", doctor_checks[i].id,
		       doctor_checks[i].scope == DOCTOR_BOTH  ? "both"
		       : doctor_checks[i].scope == DOCTOR_POD ? "pod"
							      : "node",
		       doctor_checks[i].summary);
}

static int load_env(struct doctor *d, const char *env_file)
{
	_cleanup_free_ char *buf = NULL;
	char why[256] = "";
	bool environ_fmt = false;
	ssize_t l;
	int r;

	if (!env_file) {
		d->env_source = "environment";
		return doctor_env_from_environ(environ, &d->env);
	}
	l = user_file_read(env_file, &buf);
	if (l >= 0) {
		const char *base = strrchr(env_file, '/');

		/* /proc/PID/environ by its name or its NUL-terminated last record; never by a NUL
		 * byte somewhere in a text file */
		base = base ? base + 1 : env_file;
		environ_fmt = !strcmp(base, "environ") || (l > 0 && buf[l - 1] == '\0');
	}
	r = l < 0 ? (int)l
		  : doctor_env_parse(buf, (size_t)l, environ_fmt, &d->env, why, sizeof(why));
	if (r < 0) {
		fprintf(stderr, "rdmak doctor: --env %s: %s\n", env_file,
			r == -EINVAL && why[0] ? why : strerror(-r));
		return r;
	}
	d->env_source = env_file;
	return 0;
}

/* Run the table's rows for this scope; a row that found nothing to look at says so. */
static enum doctor_status run_checks(struct doctor *d, const struct doctor_opts *o)
{
	enum doctor_status worst = DOCTOR_SKIP;
	size_t i;
	json_t *x;

	for (i = 0; i < doctor_n_checks; i++) {
		size_t before = json_array_size(d->findings);

		if (!(doctor_checks[i].scope & d->scope) ||
		    !check_selected(&doctor_checks[i], o->only, o->n_only))
			continue;
		d->check = &doctor_checks[i];
		d->check->run(d);
		if (json_array_size(d->findings) == before)
			doctor_add(d, DOCTOR_SKIP, NULL, "not applicable here");
	}
	json_array_foreach(d->findings, i, x) if (status_of(x) > worst) worst = status_of(x);
	return worst;
}

/* One round: read the node, run the checks, print them (and the NFD file). The exit code. */
static int doctor_round(struct doctor *d, const struct doctor_opts *o)
{
	struct hw_node *node = NULL;
	struct hw_error herr = { 0 };
	enum doctor_status worst;
	int r, ret = EXIT_USAGE;

	/* GID tables for roce.gids and pod.gids; no check reads pkeys (130 000 reads on 1016 VFs) */
	r = hw_load(d->ctx, HW_LOAD_GIDS, &node, &herr);
	if (r < 0) {
		fprintf(stderr, "rdmak doctor: reading %s: %s\n",
			herr.path[0] ? herr.path : hw_ctx_sysfs(d->ctx),
			hw_strerror(herr.err ? herr.err : -r));
		return EXIT_USAGE;
	}
	d->node = node;
	d->findings = json_array();
	if (!d->findings)
		goto out;
	worst = run_checks(d, o);
	r = o->json ? doc_json(stdout, d->findings) : print_text(stdout, d->findings);
	if (r == 0 && fflush(stdout) == EOF)
		r = -errno;
	if (r < 0) {
		fprintf(stderr, "rdmak doctor: writing the result: %s\n", strerror(-r));
		goto out;
	}
	if (o->nfd && (r = doctor_write_nfd(d, o->nfd)) < 0) {
		fprintf(stderr, "rdmak doctor: --nfd %s: %s\n", o->nfd, strerror(-r));
		goto out;
	}
	ret = worst == DOCTOR_FAIL			? EXIT_SOME_FAIL
	      : worst == DOCTOR_WARN && !o->warnings_ok ? EXIT_WORST_WARN
							: EXIT_ALL_OK;
out:
	json_decref(d->findings);
	d->findings = NULL;
	free(d->causes);
	d->causes = NULL;
	d->causes_cap = 0;
	d->node = NULL;
	hw_node_free(node);
	return ret;
}

struct doctor_daemon {
	struct doctor *d;
	const struct doctor_opts *o;
};

/* A round of --interval: a failure is said on stderr and tried again at the next interval, as
 * a node's state changes. */
static void doctor_again(void *ud)
{
	struct doctor_daemon *dd = ud;

	if (doctor_round(dd->d, dd->o) == EXIT_USAGE)
		log_warning("this round failed (said above); again in %u s", dd->o->interval);
}

static int doctor_every(struct doctor *d, const struct doctor_opts *o)
{
	struct doctor_daemon dd = { .d = d, .o = o };
	const char *what = NULL;
	int r;

	log_set_program("doctor");
	log_set_time(true);
	log_info("checking the node every %u s", o->interval);
	r = daemon_run_rounds(o->interval, o->alive_file, NULL, 0, doctor_again, &dd, &what);
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
	struct doctor d = { .scope = DOCTOR_NODE, .plugin_netns = -1, .pid = "self" };
	struct doctor_opts o = { 0 };
	struct hw_ctx *ctx = NULL;
	char cfg_err[512] = "", missing[PATH_MAX];
	int r, ret = EXIT_USAGE;

	r = parse_args(argc, argv, &d, &o);
	if (r)
		return r < 0 ? 0 : r;
	if (o.list) {
		list_checks();
		return 0;
	}
	if (validate_checks(&d, &o) < 0)
		goto out;
	r = hw_ctx_new_roots(&o.roots, &ctx, missing, sizeof(missing));
	if (r < 0) {
		fprintf(stderr, "rdmak doctor: cannot open sysfs root %s: %s\n", missing,
			strerror(-r));
		goto out;
	}
	d.ctx = ctx;
	if (validate_inputs(&d, &o) < 0 || load_env(&d, o.env_file) < 0)
		goto out;
	if (d.plugin_config &&
	    (r = plugin_config_load(&d, d.plugin_config, cfg_err, sizeof(cfg_err))) < 0) {
		/* the plugin's words: "rdmak doctor: --plugin-config FILE: configList[0].selectors: ..." */
		fprintf(stderr, "rdmak doctor: --plugin-config %s: %s\n", d.plugin_config,
			r == -EINVAL && cfg_err[0] ? cfg_err : strerror(-r));
		goto out;
	}
	ret = o.interval ? doctor_every(&d, &o) : doctor_round(&d, &o);
out:
	doctor_clear(&d);
	hw_ctx_free(ctx);
	return ret;
}
