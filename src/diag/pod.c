/* SPDX-License-Identifier: Apache-2.0 */
/* Pod checks: what the container was given. Everything is read from files under the roots
 * (procfs for limits/status/mounts/cgroup, sysfs for cgroup files, devfs for nodes, the image
 * root for libraries), so each failure is a fixture, not a privileged test. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag/internal.h"
#include "util/cleanup.h"
#include "util/strutil.h"
#include "util/strv.h"

/* libibverbs (init.c, check_memlock_limit) warns when a non-root RLIMIT_MEMLOCK is this or less. */
#define VERBS_MEMLOCK_WARN    (32u * 1024)
#define NCCL_BUFFSIZE_DEFAULT (4u << 20)

/* What NCCL pins at least without GPUDirect: each IB connection registers its Simple buffer
 * (NCCL_BUFFSIZE, 4 MiB) and an LL128 buffer of about the same size, for send and receive,
 * towards two ring neighbours, on at least two channels: 2 * 2 * 2 * 2 = 16 buffers. More
 * channels, peers (trees, all-to-all) or ib_write_bw -a (2 x 8 MiB per QP) need more. */
uint64_t diag_nccl_pinned_min(const struct diag *d)
{
	const char *s = diag_env_get(&d->env, "NCCL_BUFFSIZE");
	unsigned long long v;

	if (!s || str_to_u64(s, 0, &v) < 0 || v == 0 || v > (1ull << 34))
		v = NCCL_BUFFSIZE_DEFAULT;
	return 16 * v;
}

static void pod_load(struct diag *d)
{
	struct diag_pod *p = &d->pod;
	_cleanup_free_ char *buf = NULL;
	ssize_t l;

	if (p->limits_path[0])
		return;
	diag_proc(d, p->limits_path, sizeof(p->limits_path), "/%s/limits", d->pid);
	l = diag_read_alloc(d, HW_ROOT_PROCFS, p->limits_path, &buf);
	if (l >= 0 && diag_limits_parse(buf, (size_t)l, "Max locked memory", &p->memlock_soft,
					&p->memlock_hard) > 0)
		p->memlock_known = true;
	free(TAKE_PTR(buf));
	diag_proc(d, p->status_path, sizeof(p->status_path), "/%s/status", d->pid);
	l = diag_read_alloc(d, HW_ROOT_PROCFS, p->status_path, &buf);
	if (l >= 0 && diag_proc_status_parse(buf, (size_t)l, &p->status) > 0 &&
	    p->status.has_caps && p->status.has_uid)
		p->status_known = true;
}

static bool cap_ipc_lock(const struct diag_proc_status *st)
{
	return st->cap_eff & (1ull << CAP_IPC_LOCK_BIT);
}

/* ---- pod.devnodes ----------------------------------------------------------------------------- */

static bool node_openable(const struct hw_devnode *n, const struct diag_pod *p)
{
	unsigned uid;

	if (!p->status_known)
		return (n->mode & 0006) == 0006;
	uid = p->status.uid[1];
	if (uid == 0)
		return true; /* root in the container: DAC does not stop it (the device cgroup may) */
	if (n->uid == uid)
		return (n->mode & 0600) == 0600;
	return (n->mode & 0006) == 0006 ||
	       (n->mode & 0060) == 0060; /* group: assumed member; supplementary groups aside */
}

/* cgroup v1 only: the container's own devices.list (Docker and containerd mount the
 * container's group at /sys/fs/cgroup/devices). Unknown (no file) is not a denial. */
static bool devcg_denies(struct diag *d, const struct hw_devnode *n)
{
	ssize_t l;

	if (!d->pod.devcg_path[0])
		diag_sys(d, d->pod.devcg_path, sizeof(d->pod.devcg_path),
			 "/fs/cgroup/devices/devices.list");
	{
		char list[65536];

		l = diag_sys_read(d, d->pod.devcg_path, list, sizeof(list));
		return l >= 0 && diag_devices_list_allows(list, (size_t)l, n->major, n->minor) == 0;
	}
}

void diag_check_pod_devnodes(struct diag *d)
{
	const struct hw_node *n = d->node;
	size_t usable = 0, missing = 0;
	char path[PATH_MAX], first[128] = "";
	json_t *f;

	pod_load(d);
	if (n->n_rdma == 0)
		return;
	for (size_t i = 0; i < n->n_rdma; i++) {
		const struct hw_rdma_dev *dev = &n->rdma[i];
		const struct hw_chardev *u = dev->uverbs;

		if (!u) {
			f = diag_add(d, DIAG_FAIL, dev->name,
				     "%s has no uverbs device in sysfs: libibverbs cannot list it",
				     dev->name);
			diag_evidence(f,
				      diag_sys(d, path, sizeof(path),
					       "/class/infiniband/%s/device/infiniband_verbs",
					       dev->name),
				      "(absent)");
			diag_fix(
				f,
				"The node lacks ib_uverbs or the driver did not register user verbs: run rdmak doctor on the node.");
			continue;
		}
		diag_dev(d, path, sizeof(path), "/%s", u->node.path);
		if (diag_dev_usable(dev)) {
			if (!node_openable(&u->node, &d->pod)) {
				f = diag_add(d, DIAG_FAIL, dev->name,
					     "%s mode %04o: not openable by uid %u", u->node.path,
					     u->node.mode, d->pod.status.uid[1]);
				diag_evidence(f, path, "mode %04o uid %u gid %u", u->node.mode,
					      (unsigned)u->node.uid, (unsigned)u->node.gid);
				diag_evidence(f, d->pod.status_path, "Uid %u",
					      d->pod.status.uid[1]);
				diag_fix(
					f,
					"Make the node 0666 on the host (rdma-core udev rules) or run the container as root; the "
					"device plugin passes the host node's permissions through.");
				continue;
			}
			if (devcg_denies(d, &u->node)) {
				f = diag_add(
					d, DIAG_FAIL, dev->name,
					"the device cgroup denies %s (c %u:%u): open() fails with "
					"EPERM, libibverbs lists 0 devices",
					u->node.path, u->node.major, u->node.minor);
				diag_evidence(f, d->pod.devcg_path, "no \"c %u:%u rw\" rule",
					      u->node.major, u->node.minor);
				diag_fix(
					f,
					"Get the node through the device plugin (request its resource) instead of a hostPath "
					"mount of /dev/infiniband: only allocated devices are added to the container's cgroup.");
				continue;
			}
			usable++;
			f = diag_add(d, DIAG_OK, dev->name, "%s present (%u:%u, mode %04o)",
				     u->node.path, u->node.major, u->node.minor, u->node.mode);
			diag_evidence(f, path, "char %u:%u", u->node.major, u->node.minor);
			continue;
		}
		/* A RoCE LAG device left out is the seed-003 case: "IB device mlx5_bond_0 not found". */
		if (dev->lag) {
			f = diag_add(
				d, DIAG_WARN, dev->name,
				"RoCE LAG device %s (bond %s) is visible in /sys but %s is not in "
				"this pod: `ib_write_bw -d %s` says \"IB device %s not found\"",
				dev->name, dev->lag->name, u->node.path, dev->name, dev->name);
			diag_evidence(f,
				      diag_sys(d, path, sizeof(path),
					       "/class/infiniband_verbs/%s/ibdev", u->name),
				      "%s", dev->name);
			diag_evidence(f, diag_dev(d, path, sizeof(path), "/%s", u->node.path),
				      "(absent)");
			diag_fix(
				f,
				"Select the LAG device in the device plugin (rdmak/rdma-shared-dev-plugin: ifNames [\"%s\"]; "
				"the PF names select the per-port devices, which no longer exist for bonded ports) and request "
				"that resource in the pod spec.",
				dev->lag->name);
			continue;
		}
		if (!missing++)
			snprintf(first, sizeof(first), "%s (%s)", dev->name, u->node.path);
	}
	if (usable == 0) {
		f = diag_add(
			d, DIAG_FAIL, NULL,
			"no /dev/infiniband/uverbsN node for any of the %zu HCAs in /sys: libibverbs "
			"lists 0 devices (perftest \"Did not detect devices\", NCCL \"NET/IB : No device found.\")",
			n->n_rdma);
		diag_evidence(f, diag_dev(d, path, sizeof(path), "/infiniband"),
			      "no uverbs node (first missing: %s)", first);
		diag_fix(
			f,
			"Request the RDMA resource in the container (resources.limits: rdma/<resource>: 1, or the "
			"SR-IOV resource), so the device plugin passes the uverbs nodes in; a hostPath /dev/infiniband "
			"mount without privileged is blocked by the device cgroup.");
	} else if (missing) {
		f = diag_add(
			d, DIAG_OK, NULL,
			"%zu other HCA%s in /sys not passed into this pod (normal: the device plugin "
			"passes only the allocated ones), e.g. %s",
			missing, missing == 1 ? "" : "s", first);
		diag_evidence(f, diag_dev(d, path, sizeof(path), "/infiniband"),
			      "%zu usable uverbs nodes", usable);
	}
}

/* ---- pod.netns ------------------------------------------------------------------------------- */

void diag_check_pod_netns(struct diag *d)
{
	int mode = d->node->kernel.netns_mode;
	char path[PATH_MAX], dpath[PATH_MAX];
	_cleanup_strv_free_ char **names = NULL;
	size_t nodes = 0, n_names = 0;
	json_t *f;

	diag_sys(d, path, sizeof(path), "/module/ib_core/parameters/netns_mode");
	if (mode < 0)
		return;
	if (mode == 1) {
		f = diag_add(
			d, DIAG_OK, NULL,
			"shared RDMA netns mode: every HCA is visible in /sys, isolation is by "
			"/dev/infiniband nodes only");
		diag_evidence(f, path, "Y");
		return;
	}
	if (d->node->n_rdma) {
		f = diag_add(d, DIAG_OK, NULL,
			     "exclusive RDMA netns mode: %zu device%s moved into this pod",
			     d->node->n_rdma, d->node->n_rdma == 1 ? "" : "s");
		diag_evidence(f, path, "N");
		return;
	}
	if (diag_list(d, HW_ROOT_DEVFS, diag_dev(d, dpath, sizeof(dpath), "/infiniband"), &names,
		      &n_names) >= 0)
		for (size_t i = 0; i < n_names; i++)
			nodes += str_startswith(names[i], "uverbs");
	f = diag_add(d, DIAG_FAIL, NULL,
		     "exclusive RDMA netns mode but no RDMA device in this pod's namespace%s: the "
		     "isolation step (RDMA CNI) did not run",
		     nodes ? " although uverbs nodes were passed in" : "");
	diag_evidence(f, path, "N");
	diag_evidence(f, diag_sys(d, dpath, sizeof(dpath), "/class/infiniband"), "(empty)");
	diag_fix(
		f,
		"Chain the rdma CNI after sriov/ib-sriov in the NetworkAttachmentDefinition ({\"type\": \"rdma\"}) so the "
		"VF's RDMA device is moved in (rdma dev set <dev> netns <pod>), or switch the node to shared mode if "
		"pods share HCAs.");
}

/* ---- pod.memlock ----------------------------------------------------------------------------- */

void diag_check_pod_memlock(struct diag *d)
{
	struct diag_pod *p = &d->pod;
	uint64_t need = diag_nccl_pinned_min(d);
	char a[32], b[32], c[32];
	json_t *f;

	pod_load(d);
	if (!p->memlock_known) {
		f = diag_add(d, DIAG_WARN, "RLIMIT_MEMLOCK", "cannot read the memlock limit");
		diag_evidence(f, p->limits_path, "(unreadable or no \"Max locked memory\" row)");
		diag_fix(
			f,
			"Run doctor inside the container, or point it at the container's /proc (--procfs, --pid).");
		return;
	}
	if (p->memlock_soft == DIAG_UNLIMITED) {
		f = diag_add(d, DIAG_OK, "RLIMIT_MEMLOCK", "unlimited");
		diag_evidence(f, p->limits_path, "Max locked memory unlimited %s",
			      diag_bytes(p->memlock_hard, a, sizeof(a)));
		return;
	}
	if (p->status_known && cap_ipc_lock(&p->status)) {
		f = diag_add(d, DIAG_OK, "RLIMIT_MEMLOCK",
			     "%s, but CAP_IPC_LOCK is effective so registration ignores it",
			     diag_bytes(p->memlock_soft, a, sizeof(a)));
		diag_evidence(f, p->limits_path, "Max locked memory %" PRIu64 " %" PRIu64 " bytes",
			      p->memlock_soft, p->memlock_hard);
		diag_evidence(f, p->status_path, "CapEff %016" PRIx64, p->status.cap_eff);
		return;
	}
	diag_bytes(p->memlock_soft, a, sizeof(a));
	diag_bytes(need, b, sizeof(b));
	if (p->memlock_soft <= VERBS_MEMLOCK_WARN || p->memlock_soft < need)
		f = diag_add(
			d, DIAG_FAIL, "RLIMIT_MEMLOCK",
			"%s%s: ibv_reg_mr fails with ENOMEM (\"Couldn't allocate MR\"), "
			"NCCL needs at least %s pinned",
			a,
			p->memlock_soft <= VERBS_MEMLOCK_WARN
				? " (libibverbs warns \"RLIMIT_MEMLOCK is ... bytes. This will "
				  "severely limit memory registrations.\")"
				: "",
			b);
	else
		f = diag_add(d, DIAG_WARN, "RLIMIT_MEMLOCK",
			     "%s: enough for a minimal NCCL ring (%s) but not for more "
			     "channels/peers or ib_write_bw -a",
			     a, b);
	diag_evidence(f, p->limits_path, "Max locked memory %" PRIu64 " %" PRIu64 " bytes",
		      p->memlock_soft, p->memlock_hard);
	if (p->status_known)
		diag_evidence(f, p->status_path,
			      "CapEff %016" PRIx64 " (CAP_IPC_LOCK not effective)",
			      p->status.cap_eff);
	diag_fix(
		f,
		"Kubernetes has no rlimit field: raise it in the runtime (LimitMEMLOCK=infinity in containerd.service "
		"or docker --ulimit memlock=-1, then restart it) or run the container as root with "
		"capabilities.add [\"IPC_LOCK\"] (hard limit now %s).",
		diag_bytes(p->memlock_hard, c, sizeof(c)));
}

/* ---- pod.ipc_lock ---------------------------------------------------------------------------- */

void diag_check_pod_ipc_lock(struct diag *d)
{
	struct diag_pod *p = &d->pod;
	const struct diag_proc_status *st = &p->status;
	bool limited;
	json_t *f;

	pod_load(d);
	if (!p->status_known) {
		f = diag_add(d, DIAG_WARN, "CAP_IPC_LOCK", "cannot read Uid/CapEff");
		diag_evidence(f, p->status_path, "(unreadable)");
		diag_fix(
			f,
			"Run doctor inside the container, or point it at the container's /proc (--procfs, --pid).");
		return;
	}
	if (cap_ipc_lock(st)) {
		f = diag_add(d, DIAG_OK, "CAP_IPC_LOCK", "effective (uid %u)", st->uid[1]);
		diag_evidence(f, p->status_path, "CapEff %016" PRIx64, st->cap_eff);
		return;
	}
	limited = !(p->memlock_known && p->memlock_soft == DIAG_UNLIMITED);
	if (st->uid[1] != 0 && (st->cap_bnd & (1ull << CAP_IPC_LOCK_BIT))) {
		f = diag_add(
			d, limited ? DIAG_FAIL : DIAG_WARN, "CAP_IPC_LOCK",
			"IPC_LOCK was added but is not effective: the container runs as uid %u, and Kubernetes "
			"capabilities only become effective for uid 0%s",
			st->uid[1],
			limited ? "; registrations are bound by RLIMIT_MEMLOCK"
				: " (harmless while RLIMIT_MEMLOCK is unlimited)");
		diag_cause(d, f, DIAG_CAUSE_IPC_LOCK_NON_ROOT);
		diag_evidence(f, p->status_path, "Uid %u %u %u %u", st->uid[0], st->uid[1],
			      st->uid[2], st->uid[3]);
		diag_evidence(f, p->status_path,
			      "CapBnd %016" PRIx64 " (has IPC_LOCK), CapEff %016" PRIx64,
			      st->cap_bnd, st->cap_eff);
		diag_fix(
			f,
			"Run the container as root (securityContext.runAsUser: 0) with capabilities.add [\"IPC_LOCK\"], or "
			"make the capability unnecessary: LimitMEMLOCK=infinity for containerd/docker on the node.");
		return;
	}
	if (!limited) {
		f = diag_add(d, DIAG_OK, "CAP_IPC_LOCK",
			     "not effective, not needed: RLIMIT_MEMLOCK is unlimited");
		diag_evidence(f, p->status_path, "CapEff %016" PRIx64, st->cap_eff);
		return;
	}
	f = diag_add(
		d, DIAG_FAIL, "CAP_IPC_LOCK",
		"not granted and RLIMIT_MEMLOCK is finite: registrations beyond the "
		"limit fail, and NCCL has been seen to crash (SIGSEGV in ncclProxyServiceUDS) without it");
	diag_evidence(f, p->status_path,
		      "CapEff %016" PRIx64 ", CapBnd %016" PRIx64 " (no IPC_LOCK)", st->cap_eff,
		      st->cap_bnd);
	diag_fix(
		f, "Add securityContext.capabilities.add: [\"IPC_LOCK\"] to the container%s.",
		st->uid[1]
			? " and run it as root (runAsUser: 0): the capability is dropped for non-root users"
			: "");
}

/* ---- pod.memory ------------------------------------------------------------------------------- */

static int read_value(const struct diag *d, const char *path, uint64_t *v)
{
	char buf[64];
	ssize_t l = diag_sys_read(d, path, buf, sizeof(buf));

	return l < 0 ? (int)l : diag_cgroup_value_parse(buf, (size_t)l, v);
}

/* The memory cgroup files of this process: v2 memory.max/current, else v1. With a cgroup
 * namespace (the default on cgroup v2) /proc/self/cgroup says "0::/" and the files are at the
 * top of the mount. */
static bool find_memcg(struct diag *d, char *limit, char *usage, size_t n, bool *v2)
{
	char cg[PATH_MAX], rel[PATH_MAX] = "", p[PATH_MAX];
	_cleanup_free_ char *buf = NULL;
	ssize_t l = diag_read_alloc(d, HW_ROOT_PROCFS,
				    diag_proc(d, cg, sizeof(cg), "/%s/cgroup", d->pid), &buf);

	for (int pass = 0; pass < 2; pass++) {
		bool is_v2 = pass == 0;

		rel[0] = '\0';
		if (l >= 0 && diag_cgroup_path_parse(buf, (size_t)l, is_v2, rel, sizeof(rel)) > 0 &&
		    strcmp(rel, "/") == 0)
			rel[0] = '\0';
		for (int try = 0; try < 2; try++) {
			const char *sub = try == 0 ? rel : "";

			if (try == 1 && !rel[0])
				break;
			diag_sys(d, p, sizeof(p), "/fs/cgroup%s%s/%s", is_v2 ? "" : "/memory", sub,
				 is_v2 ? "memory.max" : "memory.limit_in_bytes");
			/* `sub` comes from the process's cgroup file ("0::/../x" outside its cgroup
			 * namespace): resolved inside the root like every sysfs path */
			if (diag_sys_exists(d, p)) {
				snprintf(limit, n, "%s", p);
				diag_sys(d, usage, n, "/fs/cgroup%s%s/%s", is_v2 ? "" : "/memory",
					 sub, is_v2 ? "memory.current" : "memory.usage_in_bytes");
				*v2 = is_v2;
				return true;
			}
		}
	}
	return false;
}

void diag_check_pod_memory(struct diag *d)
{
	char lpath[PATH_MAX], upath[PATH_MAX], a[32], b[32], c[32];
	uint64_t limit, usage = 0, room, need = diag_nccl_pinned_min(d);
	bool v2 = true, have_usage;
	json_t *f;

	if (!find_memcg(d, lpath, upath, sizeof(lpath), &v2))
		return;
	if (read_value(d, lpath, &limit) < 0) {
		f = diag_add(d, DIAG_WARN, "memory.cgroup", "cannot parse the memory limit");
		diag_evidence(f, lpath, "(unparsable)");
		diag_fix(
			f,
			"Check the file by hand: cgroup v2 memory.max holds \"max\" or a byte count.");
		return;
	}
	if (limit == DIAG_UNLIMITED) {
		f = diag_add(d, DIAG_OK, "memory.cgroup", "no memory limit (cgroup %s)",
			     v2 ? "v2" : "v1");
		diag_evidence(f, lpath, v2 ? "max" : "no limit");
		return;
	}
	have_usage = read_value(d, upath, &usage) == 0 && usage != DIAG_UNLIMITED;
	room = have_usage && usage < limit ? limit - usage : have_usage ? 0 : limit;
	diag_bytes(limit, a, sizeof(a));
	snprintf(b, sizeof(b), "%.1f MiB", room / 1048576.0);
	diag_bytes(need, c, sizeof(c));
	if (room < need)
		f = diag_add(
			d, DIAG_FAIL, "memory.cgroup",
			"memory limit %s leaves %s: pinned (registered) pages are charged "
			"to the pod and cannot be reclaimed, so registration fails (\"Couldn't allocate MR\") or the pod is "
			"OOM-killed; NCCL needs about %s",
			a, b, c);
	else if (room < 4 * need)
		f = diag_add(d, DIAG_WARN, "memory.cgroup",
			     "memory limit %s leaves %s: tight for registered buffers "
			     "(NCCL needs about %s, more with more channels)",
			     a, b, c);
	else {
		/* room today, but the limit is there: pinned pages are charged to it, and bench
		 * names it when registration fails ("Couldn't allocate MR") */
		f = diag_add(d, DIAG_OK, "memory.cgroup",
			     "memory limit %s, %s free for the application and pinned buffers", a,
			     b);
		diag_cause(d, f, DIAG_CAUSE_CGROUP_MEMORY);
	}
	diag_evidence(f, lpath, "%" PRIu64, limit);
	if (have_usage)
		diag_evidence(f, upath, "%" PRIu64, usage);
	if (room < 4 * need)
		diag_fix(
			f,
			"Raise or remove resources.limits.memory for this container (registered buffers count against it "
			"on top of the application's own memory).");
}

/* ---- pod.shm ---------------------------------------------------------------------------------- */

#define SHM_FAIL (64ull << 20) /* Docker's and containerd's default */
#define SHM_OK	 (1ull << 30)  /* NCCL's documentation: --shm-size=1g */

void diag_check_pod_shm(struct diag *d)
{
	char path[PATH_MAX], a[32];
	_cleanup_free_ char *buf = NULL;
	struct diag_mount_entry m;
	uint64_t size = 0;
	int r = 0, has_size;
	ssize_t l;
	json_t *f;

	l = diag_read_alloc(d, HW_ROOT_PROCFS,
			    diag_proc(d, path, sizeof(path), "/%s/mountinfo", d->pid), &buf);
	if (l >= 0)
		r = diag_mountinfo_find(buf, (size_t)l, "/dev/shm", &m);
	else {
		l = diag_read_alloc(d, HW_ROOT_PROCFS,
				    diag_proc(d, path, sizeof(path), "/%s/mounts", d->pid), &buf);
		if (l < 0)
			l = diag_read_alloc(d, HW_ROOT_PROCFS,
					    diag_proc(d, path, sizeof(path), "/mounts"), &buf);
		if (l >= 0)
			r = diag_mounts_find(buf, (size_t)l, "/dev/shm", &m);
	}
	if (l < 0) {
		f = diag_add(d, DIAG_WARN, "/dev/shm", "cannot read the mount table");
		diag_evidence(f, path, "(unreadable)");
		diag_fix(
			f,
			"Run doctor inside the container, or point it at the container's /proc (--procfs, --pid).");
		return;
	}
	if (r < 0) {
		f = diag_add(d, DIAG_WARN, "/dev/shm", "cannot parse the mount table");
		diag_evidence(f, path, "(malformed)");
		diag_fix(f, "Check the mount table by hand: grep /dev/shm %s.", path);
		return;
	}
	if (r == 0) {
		f = diag_add(d, DIAG_WARN, "/dev/shm",
			     "nothing mounted on /dev/shm: NCCL's shared-memory transport and "
			     "proxy need it");
		diag_evidence(f, path, "no /dev/shm entry");
		diag_fix(f, "Mount an emptyDir {medium: Memory, sizeLimit: 1Gi} at /dev/shm.");
		return;
	}
	has_size = diag_mount_option_size(m.options, &size);
	if (has_size <= 0) {
		f = diag_add(d, DIAG_OK, "/dev/shm",
			     "%s without an absolute size (tmpfs default: half of RAM)", m.fstype);
		diag_evidence(f, path, "/dev/shm %s %s", m.fstype, m.options);
		return;
	}
	diag_bytes(size, a, sizeof(a));
	if (size <= SHM_FAIL)
		f = diag_add(
			d, DIAG_FAIL, "/dev/shm",
			"/dev/shm is %s: NCCL fails with \"failed to extend /dev/shm/nccl-XXXXXX "
			"to 4194660 bytes\" (or a bus error) as soon as a few peers share the node",
			a);
	else if (size < SHM_OK)
		f = diag_add(d, DIAG_WARN, "/dev/shm",
			     "/dev/shm is %s: NCCL recommends at least 1 GiB", a);
	else
		f = diag_add(d, DIAG_OK, "/dev/shm", "/dev/shm is %s", a);
	diag_evidence(f, path, "/dev/shm %s %s", m.fstype, m.options);
	if (size < SHM_OK)
		diag_fix(
			f,
			"Mount an emptyDir {medium: Memory, sizeLimit: 1Gi} at /dev/shm in the pod spec (docker: --shm-size=1g).");
}

/* ---- pod.gids --------------------------------------------------------------------------------- */

void diag_check_pod_gids(struct diag *d)
{
	char obj[HW_NAME_MAX + 8], path[PATH_MAX];

	HW_NODE_FOREACH_PORT(d->node, p)
	{
		const struct hw_rdma_dev *dev = p->dev;
		const struct hw_gid *own = NULL, *own_v2 = NULL;
		json_t *f;

		if (!diag_dev_usable(dev))
			continue;
		if (p->link_layer != HW_LINK_ETH)
			continue;
		snprintf(obj, sizeof(obj), "%s/%u", dev->name, p->num);
		diag_sys(d, path, sizeof(path), "/class/infiniband/%s/ports/%u/gids", dev->name,
			 p->num);
		if (p->n_gids == 0) {
			f = diag_add(
				d, DIAG_FAIL, obj,
				"RoCE GID table empty in this pod (show_gids: n_gids_found=0): QPs "
				"cannot reach RTR, rdma_cm says \"No such device\"");
			diag_evidence(f, path, "all %zu entries zero", p->gid_tbl_len);
			diag_fix(
				f,
				"The GIDs belong to the netdev of this HCA, which must be in the pod's network namespace "
				"with an IP: attach it with the SR-IOV/macvlan NetworkAttachmentDefinition (net1) and "
				"give it an address (IPAM).");
			continue;
		}
		for (size_t k = 0; k < p->n_gids; k++) {
			const struct hw_gid *g = &p->gids[k];

			if (!g->ndev[0] || !hw_node_netdev(d->node, g->ndev))
				continue;
			if (!own)
				own = g;
			if (!own_v2 && g->ipv4 && !strcmp(g->type, "RoCE v2"))
				own_v2 = g;
		}
		if (!own) {
			f = diag_add(
				d, DIAG_FAIL, obj,
				"none of the %zu GIDs belongs to a netdev of this pod (GID 0 %s): "
				"perftest shows GID 00:00:...:00 and \"Unable to Connect the HCA's through the link\"",
				p->n_gids, p->gids[0].index == 0 ? "owned elsewhere" : "all-zero");
			diag_evidence(
				f, path, "index %u %s on %s", p->gids[0].index, p->gids[0].gid,
				p->gids[0].ndev[0] ? p->gids[0].ndev : "(no netdev readable)");
			diag_evidence(f, diag_sys(d, path, sizeof(path), "/class/net"),
				      "%zu netdevs, none owning a GID", d->node->n_netdevs);
			diag_fix(
				f,
				"Give the pod the HCA's own netdev (SR-IOV VF or macvlan on the PF via a "
				"NetworkAttachmentDefinition) with an IP, and use the GID index of that IP "
				"(NCCL_IB_GID_INDEX=-1 picks it).");
			continue;
		}
		if (!own_v2) {
			f = diag_add(
				d, DIAG_WARN, obj,
				"GIDs on %s but none RoCE v2 IPv4: NCCL's automatic GID choice "
				"finds nothing",
				own->ndev);
			diag_evidence(f, path, "index %u %s %s", own->index, own->gid, own->type);
			diag_fix(
				f,
				"Give %s an IPv4 address, or set NCCL_IB_GID_INDEX to the GID you want.",
				own->ndev);
			continue;
		}
		f = diag_add(d, DIAG_OK, obj, "RoCE v2 IPv4 GID index %u on %s%s", own_v2->index,
			     own_v2->ndev,
			     p->gids[0].index != 0 ? " (GID 0 is empty: pass -x to perftest)" : "");
		diag_evidence(f,
			      diag_sys(d, path, sizeof(path),
				       "/class/infiniband/%s/ports/%u/gids/%u", dev->name, p->num,
				       own_v2->index),
			      "%s", own_v2->gid);
	}
}

/* ---- pod.provider ---------------------------------------------------------------------------- */

const char *diag_provider_name(const struct hw_rdma_dev *dev)
{
	static const struct {
		const char *driver, *provider;
	} map[] = {
		{ "mlx5_core", "mlx5" }, { "mlx4_core", "mlx4" }, { "bnxt_en", "bnxt_re" },
		{ "ice", "irdma" },	 { "i40e", "irdma" },	  { "efa", "efa" },
		{ "qede", "qedr" },	 { "hns3", "hns" },	  { "erdma", "erdma" },
		{ "mana", "mana" },	 { "hfi1", "hfi1verbs" }, { "vmw_pvrdma", "vmw_pvrdma" },
		{ "cxgb4", "cxgb4" },
	};

	if (dev->pci && dev->pci->driver[0]) {
		for (size_t i = 0; i < ELEMENTSOF(map); i++)
			if (!strcmp(dev->pci->driver, map[i].driver))
				return map[i].provider;
		return NULL;
	}
	if (str_startswith(dev->name, "rxe"))
		return "rxe";
	if (str_startswith(dev->name, "siw"))
		return "siw";
	if (str_startswith(dev->name, "mlx5_"))
		return "mlx5";
	return NULL;
}

/* Where Debian/Ubuntu (multiarch), Fedora/RHEL (lib64) and source builds put libibverbs. */
static const char *const lib_dirs[] = {
	"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
	"/lib/x86_64-linux-gnu",     "/lib/aarch64-linux-gnu",	   "/lib64",	 "/usr/local/lib",
};

/* 1 and the path when a file in dir (under the image) starts with prefix and ends with suffix. */
static int find_file(const struct diag *d, const char *dir, const char *prefix, const char *suffix,
		     char *found, size_t n)
{
	char p[PATH_MAX];
	_cleanup_strv_free_ char **names = NULL;
	size_t pl = strlen(prefix), sl = strlen(suffix), n_names = 0;

	if (diag_list(d, HW_ROOT_IMAGE, diag_img(d, p, sizeof(p), "%s", dir), &names, &n_names) < 0)
		return 0;
	for (size_t i = 0; i < n_names; i++) {
		size_t l = strlen(names[i]);

		if (l >= pl + sl && !strncmp(names[i], prefix, pl) &&
		    !strcmp(names[i] + l - sl, suffix)) {
			int w = snprintf(found, n, "%s/%s", p, names[i]);

			return w > 0 && (size_t)w < n;
		}
	}
	return 0;
}

void diag_check_pod_provider(struct diag *d)
{
	const char *done[16];
	size_t n_done = 0;
	char verbs[PATH_MAX] = "", lib[PATH_MAX], cfg[PATH_MAX], dir[PATH_MAX], pfx[64];
	bool have_verbs = false;
	json_t *f;

	for (size_t i = 0; i < ELEMENTSOF(lib_dirs) && !have_verbs; i++)
		have_verbs =
			find_file(d, lib_dirs[i], "libibverbs.so.1", "", verbs, sizeof(verbs)) > 0;
	for (size_t i = 0; i < d->node->n_rdma; i++) {
		const struct hw_rdma_dev *dev = &d->node->rdma[i];
		const char *prov = diag_provider_name(dev);
		bool seen = false, have_lib = false, have_cfg;

		if (!diag_dev_usable(dev) || !prov)
			continue;
		for (size_t k = 0; k < n_done; k++)
			seen |= !strcmp(done[k], prov);
		if (seen || n_done == ELEMENTSOF(done))
			continue;
		done[n_done++] = prov;
		if (!have_verbs) {
			f = diag_add(
				d, DIAG_FAIL, prov,
				"libibverbs is not installed in the image: no verbs application can run");
			diag_evidence(f,
				      diag_img(d, dir, sizeof(dir),
					       "/usr/lib/x86_64-linux-gnu/libibverbs.so.1"),
				      "(absent; also "
				      "looked in lib64, lib, aarch64)");
			diag_fix(
				f,
				"Install rdma-core's libraries in the image: apt-get install libibverbs1 ibverbs-providers "
				"(Debian/Ubuntu) or dnf install libibverbs (RHEL/Fedora).");
			continue;
		}
		snprintf(pfx, sizeof(pfx), "lib%s-rdmav", prov);
		for (size_t k = 0; k < ELEMENTSOF(lib_dirs) && !have_lib; k++) {
			snprintf(dir, sizeof(dir), "%s/libibverbs", lib_dirs[k]);
			have_lib = find_file(d, dir, pfx, ".so", lib, sizeof(lib)) > 0;
		}
		diag_img(d, cfg, sizeof(cfg), "/etc/libibverbs.d/%s.driver", prov);
		have_cfg = diag_exists(d, HW_ROOT_IMAGE, cfg);
		if (!have_lib || !have_cfg) {
			f = diag_add(
				d, DIAG_FAIL, prov,
				"verbs provider for %s (%s) missing in the image: libibverbs prints \"no "
				"userspace device-specific driver found for %s/class/infiniband_verbs/%s\" and lists 0 HCAs",
				dev->name, prov, "/sys", dev->uverbs->name);
			if (!have_lib)
				diag_evidence(f,
					      diag_img(d, dir, sizeof(dir), "%s/libibverbs/%s*.so",
						       lib_dirs[0], pfx),
					      "(absent)");
			else
				diag_evidence(f, lib, "present");
			diag_evidence(f, cfg, have_cfg ? "present" : "(absent)");
			diag_fix(
				f,
				"Install the providers in the image: apt-get install ibverbs-providers (Debian/Ubuntu) or dnf "
				"install libibverbs (RHEL), from an rdma-core no older than the node's kernel.");
			continue;
		}
		f = diag_add(d, DIAG_OK, prov, "provider %s installed", prov);
		diag_evidence(f, lib, "present");
		diag_evidence(f, cfg, "present");
	}
}
