/* SPDX-License-Identifier: Apache-2.0 */
/* The doctor's check table, the finding builder, the reads through the roots, and the API
 * (diag.h) that `rdmak doctor`, bench and the exporter use. */
#include "diag/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "doc/doc.h"
#include "util/cleanup.h"
#include "util/fileio.h"
#include "util/strutil.h"

const struct diag_check diag_checks[] = {
	/* node: hardware, kernel, fabric */
	{ "rdma.devices", DIAG_BOTH, diag_check_rdma_devices, DIAG_CAUSE_NO_DEVICE,
	  "RDMA devices present and their PCI functions bound to a driver" },
	{ "kernel.modules", DIAG_NODE, diag_check_kernel_modules, DIAG_CAUSE_KERNEL_MODULE,
	  "ib_uverbs, ib_umad, rdma_ucm and the HCA's RDMA driver (mlx5_ib) loaded" },
	{ "port.state", DIAG_BOTH, diag_check_port_state, DIAG_CAUSE_PORT_DOWN,
	  "each port ACTIVE / LinkUp, else the likely cause" },
	{ "port.sm", DIAG_BOTH, diag_check_port_sm, DIAG_CAUSE_SUBNET_MANAGER,
	  "InfiniBand ports have a subnet manager (sm_lid, lid)" },
	{ "port.ipoib", DIAG_NODE, diag_check_port_ipoib, DIAG_CAUSE_IPOIB,
	  "IPoIB netdev carrier vs the IB port state (what ibdev2netdev's Up/Down means)" },
	{ "roce.gids", DIAG_NODE, diag_check_roce_gids, DIAG_CAUSE_GID,
	  "RoCE ports have a RoCE v2 IPv4 GID" },
	{ "bond.lag", DIAG_NODE, diag_check_bond_lag, DIAG_CAUSE_BOND,
	  "bonds: mode, slaves up, RoCE LAG device present" },
	{ "netdev.mtu", DIAG_NODE, diag_check_netdev_mtu, DIAG_CAUSE_MTU,
	  "IPoIB MTU 2044/4092/65520, RoCE MTU 1500/9000, bond and rail MTUs consistent" },
	{ "sriov.vfs", DIAG_NODE, diag_check_sriov, DIAG_CAUSE_SRIOV,
	  "SR-IOV numvfs vs totalvfs, VFs created and bound" },
	{ "chardev.nodes", DIAG_NODE, diag_check_chardevs, DIAG_CAUSE_DEVICE_NODE,
	  "/dev/infiniband nodes present, matching sysfs, sane permissions" },
	{ "gpudirect.driver", DIAG_BOTH, diag_check_gpudirect_driver, DIAG_CAUSE_GPU_MEMORY,
	  "GPU memory registration possible: nvidia_peermem loaded or dma-buf capable" },
	{ "gpudirect.topology", DIAG_NODE, diag_check_gpudirect_topology, DIAG_CAUSE_GPU_TOPOLOGY,
	  "each GPU has an HCA behind the same PCIe switch (PIX/PXB)" },
	{ "gpudirect.acs", DIAG_NODE, diag_check_gpudirect_acs, DIAG_CAUSE_PCIE_ACS,
	  "no ACS peer-to-peer redirect on the bridges between a GPU and its HCA" },
	{ "netns.mode", DIAG_NODE, diag_check_netns_mode, DIAG_CAUSE_RDMA_NETNS,
	  "RDMA netns mode vs what the device plugin configuration expects" },
	/* pod: what the container was given */
	{ "pod.devnodes", DIAG_POD, diag_check_pod_devnodes, DIAG_CAUSE_DEVICE_NODE,
	  "a /dev/infiniband/uverbsN node, openable, for each HCA visible in /sys" },
	{ "pod.netns", DIAG_POD, diag_check_pod_netns, DIAG_CAUSE_RDMA_NETNS,
	  "exclusive RDMA netns mode: an RDMA device was moved into this pod" },
	{ "pod.memlock", DIAG_POD, diag_check_pod_memlock, DIAG_CAUSE_MEMLOCK,
	  "RLIMIT_MEMLOCK vs what memory registration needs" },
	{ "pod.ipc_lock", DIAG_POD, diag_check_pod_ipc_lock, DIAG_CAUSE_IPC_LOCK,
	  "CAP_IPC_LOCK effective (not for a non-root user)" },
	{ "pod.memory", DIAG_POD, diag_check_pod_memory, DIAG_CAUSE_CGROUP_MEMORY,
	  "cgroup memory limit leaves room for pinned memory" },
	{ "pod.shm", DIAG_POD, diag_check_pod_shm, DIAG_CAUSE_SHM,
	  "/dev/shm large enough for NCCL" },
	{ "pod.gids", DIAG_POD, diag_check_pod_gids, DIAG_CAUSE_GID,
	  "RoCE GIDs visible in the pod and owned by one of its netdevs" },
	{ "pod.provider", DIAG_POD, diag_check_pod_provider, DIAG_CAUSE_PROVIDER,
	  "libibverbs and the HCA's provider library installed in the image" },
	{ "nccl.ib_hca", DIAG_POD, diag_check_nccl_ib_hca, DIAG_CAUSE_NCCL_ENV,
	  "NCCL_IB_HCA names usable HCAs and ports, prefix-match pitfall" },
	{ "nccl.socket_ifname", DIAG_POD, diag_check_nccl_socket_ifname, DIAG_CAUSE_NCCL_ENV,
	  "NCCL_SOCKET_IFNAME matches an interface of the pod" },
	{ "nccl.env", DIAG_POD, diag_check_nccl_misc, DIAG_CAUSE_NCCL_ENV,
	  "NCCL_IB_DISABLE, NCCL_IB_GID_INDEX and NCCL_NET_GDR_LEVEL sane" },
};
const size_t diag_n_checks = ELEMENTSOF(diag_checks);

const char *diag_status_name(enum diag_status s)
{
	switch (s) {
	case DIAG_OK: return "ok";
	case DIAG_WARN: return "warn";
	case DIAG_FAIL: return "fail";
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
static int record_cause(struct diag *d, enum diag_cause cause)
{
	size_t i = json_array_size(d->findings);

	if (i >= d->causes_cap) {
		size_t cap = d->causes_cap ? 2 * d->causes_cap : 32;
		enum diag_cause *v = reallocarray(d->causes, cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		d->causes = v;
		d->causes_cap = cap;
	}
	d->causes[i] = cause;
	return 0;
}

json_t *diag_add(struct diag *d, enum diag_status st, const char *object, const char *title_fmt,
		 ...)
{
	json_t *f, *title;
	va_list ap;

	va_start(ap, title_fmt);
	title = vstr(title_fmt, ap);
	va_end(ap);
	/* the key order is the documented one; setters below replace values in place */
	f = json_pack("{s:s, s:s, s:o?, s:o, s:[], s:n}", "id", d->check->id, "status",
		      diag_status_name(st), "object", object ? doc_string(object) : NULL, "title",
		      title ? title : json_string(""), "evidence", "fix");
	if (!f || record_cause(d, st >= DIAG_WARN ? d->check->cause : DIAG_CAUSE_NONE) < 0) {
		json_decref(f);
		return NULL;
	}
	if (json_array_append_new(d->findings, f) < 0)
		return NULL;
	return f;
}

void diag_cause(struct diag *d, const json_t *f, enum diag_cause cause)
{
	/* the finding is nearly always the last one added */
	for (size_t i = json_array_size(d->findings); f && i-- > 0;)
		if (json_array_get(d->findings, i) == f) {
			d->causes[i] = cause;
			return;
		}
}

void diag_evidence(json_t *f, const char *path, const char *value_fmt, ...)
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

void diag_fix(json_t *f, const char *fmt, ...)
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
static const char *root_prefix(const struct diag *d, enum hw_root root)
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
	const char *fn(const struct diag *d, char *buf, size_t n, const char *fmt, ...)            \
	{                                                                                          \
		va_list ap;                                                                        \
		va_start(ap, fmt);                                                                 \
		vpath(buf, n, root_prefix(d, root), fmt, ap);                                      \
		va_end(ap);                                                                        \
		return buf;                                                                        \
	}
DEFINE_PATH(diag_sys, HW_ROOT_SYSFS)
DEFINE_PATH(diag_dev, HW_ROOT_DEVFS)
DEFINE_PATH(diag_proc, HW_ROOT_PROCFS)
DEFINE_PATH(diag_img, HW_ROOT_IMAGE)

/* "ROOT/sys/class/net/x" -> "class/net/x": the doctor's evidence names full paths, the
 * context reads relative ones */
static const char *root_rel(const struct diag *d, enum hw_root root, const char *path)
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

int diag_open(const struct diag *d, enum hw_root root, const char *path, int flags)
{
	const char *rel = root_rel(d, root, path);

	return rel ? hw_ctx_open(d->ctx, root, rel, flags) : -EINVAL;
}

ssize_t diag_read(const struct diag *d, enum hw_root root, const char *path, char *buf, size_t n)
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

ssize_t diag_read_alloc(const struct diag *d, enum hw_root root, const char *path, char **ret)
{
	const char *rel = root_rel(d, root, path);
	size_t len;
	int r;

	if (!rel)
		return -EINVAL;
	r = hw_ctx_read_alloc(d->ctx, root, rel, 1u << 20, ret, &len);
	return r < 0 ? r : (ssize_t)len;
}

ssize_t diag_sys_read(const struct diag *d, const char *syspath, char *buf, size_t n)
{
	return diag_read(d, HW_ROOT_SYSFS, syspath, buf, n);
}

bool diag_exists(const struct diag *d, enum hw_root root, const char *path)
{
	int fd = diag_open(d, root, path, O_PATH);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

bool diag_sys_exists(const struct diag *d, const char *syspath)
{
	return diag_exists(d, HW_ROOT_SYSFS, syspath);
}

int diag_list(const struct diag *d, enum hw_root root, const char *path, char ***ret, size_t *ret_n)
{
	_cleanup_close_ int fd = diag_open(d, root, path, O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		return fd;
	return fileio_list_dir(fd, 0, ret, ret_n);
}

enum diag_status diag_status_of(const json_t *finding)
{
	const char *s = json_string_value(json_object_get(finding, "status"));

	if (!s)
		return DIAG_SKIP;
	return !strcmp(s, "fail")   ? DIAG_FAIL
	       : !strcmp(s, "warn") ? DIAG_WARN
	       : !strcmp(s, "ok")   ? DIAG_OK
				    : DIAG_SKIP;
}

/* ---- a doctor, its checks run one by one ------------------------------------------------------ */

void diag_reset(struct diag *d)
{
	json_array_clear(d->findings);
}

int diag_new(struct hw_ctx *ctx, const struct hw_node *node, enum diag_scope scope,
	     char *const *envp, struct diag **ret)
{
	struct diag *d = calloc(1, sizeof(*d));
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
	if (!d->findings || diag_env_from_environ(envp, &d->env) < 0) {
		diag_free(d);
		return -ENOMEM;
	}
	fd = hw_ctx_open(ctx, HW_ROOT_PROCFS, "self/status", O_PATH);
	d->pod_files = fd >= 0;
	if (fd >= 0)
		close(fd);
	*ret = d;
	return 0;
}

void diag_free(struct diag *d)
{
	if (!d)
		return;
	json_decref(d->findings);
	free(d->causes);
	diag_env_clear(&d->env);
	free(d);
}

static void finding_view(const struct diag *d, size_t i, struct diag_finding *ret)
{
	const json_t *f = json_array_get(d->findings, i);

	*ret = (struct diag_finding){
		.id = json_string_value(json_object_get(f, "id")),
		.status = diag_status_of(f),
		.cause = d->causes[i],
		.object = json_string_value(json_object_get(f, "object")),
		.title = json_string_value(json_object_get(f, "title")),
		.fix = json_string_value(json_object_get(f, "fix")),
	};
}

int diag_run_check(struct diag *d, const char *id, const char *object, struct diag_finding *ret)
{
	const struct diag_check *c = NULL;
	size_t before, worst = SIZE_MAX;

	for (size_t i = 0; i < diag_n_checks && !c; i++)
		if (!strcmp(diag_checks[i].id, id))
			c = &diag_checks[i];
	if (!c)
		return -ENOENT;
	/* a pod's check without the pod's files would judge the files of whoever runs it */
	if (c->scope == DIAG_POD && !d->pod_files)
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
		    diag_status_of(f) > diag_status_of(json_array_get(d->findings, worst)))
			worst = i;
	}
	if (worst == SIZE_MAX)
		return 0;
	finding_view(d, worst, ret);
	return 1;
}

int diag_run_check_each(struct diag *d, const char *id,
			void (*fn)(void *ud, const struct diag_finding *f), void *ud)
{
	const struct diag_check *c = NULL;
	size_t before;

	for (size_t i = 0; i < diag_n_checks && !c; i++)
		if (!strcmp(diag_checks[i].id, id))
			c = &diag_checks[i];
	if (!c)
		return -ENOENT;
	if (c->scope == DIAG_POD && !d->pod_files)
		return 0;
	before = json_array_size(d->findings);
	d->check = c;
	c->run(d);
	for (size_t i = before; i < json_array_size(d->findings); i++) {
		struct diag_finding f;

		finding_view(d, i, &f);
		fn(ud, &f);
	}
	return (int)(json_array_size(d->findings) - before);
}

const char *diag_check_id(size_t i, enum diag_scope *ret_scope)
{
	if (i >= diag_n_checks)
		return NULL;
	if (ret_scope)
		*ret_scope = (enum diag_scope)diag_checks[i].scope;
	return diag_checks[i].id;
}

const char *diag_check_summary(size_t i)
{
	return i < diag_n_checks ? diag_checks[i].summary : NULL;
}

/* ---- the settings of `rdmak doctor`'s command line -------------------------------------------- */

int diag_set_pid(struct diag *d, const char *pid, char *where, size_t wherelen)
{
	int fd;

	/* it becomes a path component under procfs */
	if (!*pid || strlen(pid) >= sizeof(d->pid) || strspn(pid, "0123456789") != strlen(pid))
		return -EINVAL;
	fd = diag_open(d, HW_ROOT_PROCFS, diag_proc(d, where, wherelen, "/%s", pid),
		       O_PATH | O_DIRECTORY);
	if (fd < 0)
		return fd;
	close(fd);
	str_copy(d->pid, sizeof(d->pid), pid);
	return 0;
}

int diag_set_env(struct diag *d, const char *buf, size_t len, bool environ_fmt, const char *source,
		 char *why, size_t whylen)
{
	struct diag_env env = { 0 };
	int r = diag_env_parse(buf, len, environ_fmt, &env, why, whylen);

	if (r < 0)
		return r;
	diag_env_clear(&d->env);
	d->env = env;
	d->env_source = source;
	return 0;
}

void diag_set_plugin_netns(struct diag *d, const char *source, int mode, const char *why)
{
	d->plugin_config = source;
	d->plugin_netns = mode;
	str_copy(d->plugin_why, sizeof(d->plugin_why), why);
}

int diag_run_all(struct diag *d, const struct hw_node *node, char *const *only, size_t n_only,
		 enum diag_status *ret_worst)
{
	enum diag_status worst = DIAG_SKIP;
	size_t i;
	json_t *x;

	d->node = node;
	for (i = 0; i < diag_n_checks; i++) {
		size_t before = json_array_size(d->findings);
		bool selected = n_only == 0;

		for (size_t k = 0; k < n_only && !selected; k++)
			selected = str_startswith(diag_checks[i].id, only[k]);
		if (!(diag_checks[i].scope & d->scope) || !selected)
			continue;
		d->check = &diag_checks[i];
		d->check->run(d);
		if (json_array_size(d->findings) == before &&
		    !diag_add(d, DIAG_SKIP, NULL, "not applicable here"))
			return -ENOMEM;
	}
	json_array_foreach(d->findings, i, x) if (diag_status_of(x) > worst) worst =
		diag_status_of(x);
	*ret_worst = worst;
	return 0;
}

const json_t *diag_findings(const struct diag *d)
{
	return d->findings;
}
