/* SPDX-License-Identifier: Apache-2.0 */
/* When perftest fails: the cause and its fix. perftest's messages name a symptom ("Couldn't
 * allocate MR", "ethernet_read_keys: Couldn't read remote address"); the cause is in the pod
 * (memlock, IPC_LOCK, a memory limit, a missing device node or provider library) or on the
 * node (a Down port, GPU memory without nvidia_peermem). Each symptom runs the doctor's checks
 * that bear on it through its API (diag_new, diag_run_check), on the spot (the roots this
 * run reads), and the worst finding becomes the reason, its code chosen by the finding's typed
 * cause. Without doctor roots (judging a capture from elsewhere) the reason says what the
 * message means and what to check. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "diag/diag.h"
#include "util/cleanup.h"

extern char **environ;

struct diagnosis {
	const struct bench_perftest_out *o;
	const struct hw_node *node;
	const struct bench_ceiling *c;
	struct bench_verdict *v;
	struct diag *d; /* NULL: no doctor (the hardware model is not the one this run read) */
	int err;
};

/* ---- the doctor, through its API ------------------------------------------------------------- */

/* Run the doctor's check `id` on the spot: true and *f its worst finding (about `object` when
 * given) when that is at least `min`. */
static bool doctor_says(struct diagnosis *g, const char *id, const char *object,
			enum diag_status min, struct diag_finding *f)
{
	int r;

	if (!g->d)
		return false;
	r = diag_run_check(g->d, id, object, f);
	if (r < 0)
		g->err = 1;
	return r > 0 && f->status >= min;
}

/* A reason from a doctor finding: perftest's line, then what the doctor found. */
static void from_finding(struct diagnosis *g, const char *code,
			 const struct bench_perftest_event *e, const struct diag_finding *f)
{
	g->err |= bench_verdict_add(g->v, BENCH_FAIL, code, f->fix, "perftest: \"%s\"; %s: %s",
				    e->text, f->id, f->title);
}

static void plain(struct diagnosis *g, const char *code, const struct bench_perftest_event *e,
		  const char *fix, const char *cause)
{
	g->err |= bench_verdict_add(g->v, BENCH_FAIL, code, fix, "perftest: \"%s\"; %s", e->text,
				    cause);
}

/* ---- one symptom each ---------------------------------------------------------------------- */

static void no_device(struct diagnosis *g, const struct bench_perftest_event *e)
{
	static const char *const ids[] = { "pod.devnodes", "pod.provider", "pod.netns",
					   "rdma.devices" };

	struct diag_finding f;

	for (size_t i = 0; i < ELEMENTSOF(ids); i++)
		if (doctor_says(g, ids[i], NULL, DIAG_FAIL, &f)) {
			from_finding(g, "no_device", e, &f);
			return;
		}
	plain(g, "no_device", e,
	      "Request the RDMA resource in the pod (resources.limits) so the device plugin passes /dev/infiniband/uverbsN "
	      "in; install the provider (ibverbs-providers) in the image; rdmak doctor --pod says which is missing.",
	      "libibverbs listed no device: no /dev/infiniband/uverbsN in this container, no provider library for the HCA "
	      "in the image, or the device is in another RDMA network namespace");
}

static void device_not_found(struct diagnosis *g, const struct bench_perftest_event *e)
{
	const struct hw_rdma_dev *d = g->node ? hw_node_rdma(g->node, e->what) : NULL;
	char list[256] = "";
	struct diag_finding f;

	if (d) {
		if (doctor_says(g, "pod.devnodes", d->name, DIAG_WARN, &f)) {
			from_finding(g, "device_not_in_pod", e, &f);
			return;
		}
		if (!d->uverbs || !d->uverbs->node.present) {
			g->err |= bench_verdict_add(
				g->v, BENCH_FAIL, "device_not_in_pod",
				"Request the resource that holds this device in the pod spec, or choose one that is here "
				"(rdmak bench picks one without --device).",
				"perftest: \"%s\"; %s is in /sys but its uverbs node is not in /dev/infiniband: the device "
				"was not passed into this container",
				e->text, d->name);
			return;
		}
		if (doctor_says(g, "pod.provider", NULL, DIAG_WARN, &f) ||
		    doctor_says(g, "pod.netns", NULL, DIAG_WARN, &f)) {
			from_finding(g, "device_not_found", e, &f);
			return;
		}
		g->err |= bench_verdict_add(
			g->v, BENCH_FAIL, "device_not_found",
			"Check that the image has the provider library for this HCA (ibverbs-providers) and that "
			"the device is in this RDMA network namespace (rdma system; rdma dev).",
			"perftest: \"%s\"; %s is in /sys with %s, yet libibverbs did not list it",
			e->text, d->name, d->uverbs->node.path);
		return;
	}
	for (size_t i = 0; g->node && i < g->node->n_rdma; i++) {
		const struct hw_rdma_dev *x = &g->node->rdma[i];
		bool ok = x->uverbs && x->uverbs->node.present;

		HW_DEV_FOREACH_PORT(x, p)
		if (ok && hw_port_state_is_active(p->state)) {
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
				 list[0] ? ", " : "", x->name);
			break;
		}
	}
	g->err |= bench_verdict_add(
		g->v, BENCH_FAIL, "device_not_found",
		"Name a device that exists here (rdmak list shows them), or let rdmak bench choose one.",
		"perftest: \"%s\"; there is no RDMA device %s here%s%s", e->text, e->what,
		list[0] ? "; usable ones: " : "", list);
}

static void port_state(struct diagnosis *g, const struct bench_perftest_event *e)
{
	const char *dev = g->o->device[0] ? g->o->device : g->c ? g->c->device : "";
	char obj[HW_NAME_MAX + 16];
	_cleanup_free_ char *alt = NULL;
	struct diag_finding f;

	snprintf(obj, sizeof(obj), "%s/%d", dev, e->arg > 0 ? e->arg : 1);
	if (dev[0] && doctor_says(g, "port.state", obj, DIAG_WARN, &f)) {
		from_finding(g, "port_down", e, &f);
		return;
	}
	if (g->node) {
		const struct hw_rdma_dev *d = hw_node_rdma(g->node, dev);
		enum hw_link_layer ll = d && d->n_ports ? d->ports[0].link_layer : HW_LINK_IB;

		alt = diag_active_hcas(g->node, ll);
	}
	g->err |= bench_verdict_add(
		g->v, BENCH_FAIL, "port_down",
		"Bring the link up (cable, switch port, subnet manager for InfiniBand, the netdev for RoCE) or "
		"test another HCA; rdmak bench chooses an ACTIVE one without --device.",
		"perftest: \"%s\"; perftest only runs on an ACTIVE port%s%s", e->text,
		alt && alt[0] != '<' ? "; ACTIVE here: " : "", alt && alt[0] != '<' ? alt : "");
}

/* The reason code of a registration failure the doctor explained. */
static const char *mr_code(enum diag_cause cause)
{
	switch (cause) {
	case DIAG_CAUSE_GPU_MEMORY: return "mr_gpu";
	case DIAG_CAUSE_CGROUP_MEMORY: return "mr_memory_limit";
	case DIAG_CAUSE_IPC_LOCK:
	case DIAG_CAUSE_IPC_LOCK_NON_ROOT: return "mr_ipc_lock";
	default: return "mr_memlock";
	}
}

static void mr(struct diagnosis *g, const struct bench_perftest_event *e)
{
	static const char *const pod_ids[] = { "pod.memlock", "pod.ipc_lock", "pod.memory" };
	struct diag_finding f, fi, limit = { 0 };
	bool pod_checked = false;

	/* error=14 (EFAULT) is a GPU pointer no peer-memory client took */
	if (g->o->cuda || e->arg == 14) {
		if (doctor_says(g, "gpudirect.driver", NULL, DIAG_WARN, &f)) {
			from_finding(g, mr_code(f.cause), e, &f);
			return;
		}
		if (e->arg == 14 || !g->d) {
			plain(g, "mr_gpu", e,
			      "Load nvidia_peermem on the node (GPU Operator driver.rdma.enabled=true) or use --use_cuda_dmabuf "
			      "with the NVIDIA open kernel modules >= 515 and CUDA >= 11.7.",
			      "the HCA could not pin GPU memory: no peer-memory client (nvidia_peermem) and no DMA-BUF registration");
			return;
		}
	}
	for (size_t i = 0; i < ELEMENTSOF(pod_ids); i++) {
		if (!doctor_says(g, pod_ids[i], NULL, DIAG_SKIP, &f))
			continue;
		pod_checked = true;
		/* a memory limit, even one with room today: pinned pages are charged to it, and
		 * "Couldn't allocate MR" goes away with the limit */
		if (f.cause == DIAG_CAUSE_CGROUP_MEMORY && f.status != DIAG_FAIL)
			limit = f;
		if (f.status != DIAG_FAIL)
			continue;
		/* The memlock limit is what bites, but a user who added IPC_LOCK to a container that
		 * runs as another user than root (nvidia-container-toolkit#2037) has to hear why the
		 * capability did nothing, or they will raise the wrong thing. */
		if (f.cause == DIAG_CAUSE_MEMLOCK &&
		    doctor_says(g, "pod.ipc_lock", NULL, DIAG_FAIL, &fi) &&
		    fi.cause == DIAG_CAUSE_IPC_LOCK_NON_ROOT)
			f = fi;
		from_finding(g, mr_code(f.cause), e, &f);
		return;
	}
	if (limit.title) {
		g->err |= bench_verdict_add(
			g->v, BENCH_FAIL, "mr_memory_limit",
			"Remove resources.limits.memory from the RDMA container (pinned pages are charged to "
			"it), or raise it well above what the application and its pinned buffers use.",
			"perftest: \"%s\"; the pod has a %s, and registered memory is pinned and charged to it",
			e->text, limit.title);
		return;
	}
	plain(g, "mr_memlock", e,
	      "Run the container as root with capabilities.add [\"IPC_LOCK\"] and no memory limit, or raise "
	      "LimitMEMLOCK for the container runtime; fewer QPs (-q) or smaller messages pin less.",
	      pod_checked
		      ? "memory registration failed although memlock, IPC_LOCK and the memory limit look sufficient: "
			"this run pins more (QPs x 2 buffers of the message size)"
		      : "memory registration (ibv_reg_mr) failed: usually RLIMIT_MEMLOCK without an effective "
			"IPC_LOCK, or a pod memory limit");
}

static void read_keys(struct diagnosis *g, const struct bench_perftest_event *e,
		      const struct bench_perftest_out *peer)
{
	if (peer && bench_perftest_failed(peer)) {
		const struct bench_perftest_event *pe = NULL;

		for (size_t i = 0; i < peer->n_events && !pe; i++)
			if (BENCH_PT_EV_IS_FAILURE(peer->events[i].kind) &&
			    peer->events[i].kind != BENCH_PT_EV_READ_KEYS)
				pe = &peer->events[i];
		g->err |= bench_verdict_add(g->v, BENCH_FAIL, "peer_failed",
					    "Fix the peer's failure (its reason follows).",
					    "perftest: \"%s\"; the other side failed first: \"%s\"",
					    e->text, pe ? pe->text : peer->events[0].text);
		return;
	}
	plain(g, "peer_failed", e,
	      "Read the other side's output (rdmak bench judge FILE PEER_FILE diagnoses both); run both sides through "
	      "rdmak bench so their options match.",
	      "the other side hung up during the key exchange: it failed (memory registration, a Down port, no device), "
	      "or the two sides disagree on options (a GID index on one side only, -a on one side, another perftest version)");
}

/* The GID a RoCE port should use, for fix texts. */
static void good_gid(const struct diagnosis *g, char *buf, size_t n)
{
	const struct hw_rdma_dev *d =
		g->node && g->o->device[0] ? hw_node_rdma(g->node, g->o->device) : NULL;
	char nd[HW_IFNAME_MAX] = "";
	int idx;

	buf[0] = '\0';
	for (size_t i = 0; d && i < d->n_ports; i++) {
		if (d->ports[i].link_layer != HW_LINK_ETH)
			continue;
		idx = bench_runner_roce_gid(&d->ports[i], g->node, NULL, nd);
		if (idx >= 0) {
			snprintf(buf, n, "; the RoCE v2 IPv4 GID of %s is index %d (-x %d)", nd,
				 idx, idx);
			return;
		}
	}
}

static void qp_state(struct diagnosis *g, const struct bench_perftest_event *e)
{
	char gid[128];
	struct diag_finding f;
	bool found;

	good_gid(g, gid, sizeof(gid));
	if (g->o->link == BENCH_PT_LINK_ETH || g->o->zero_gid ||
	    (g->c && g->c->link == HW_LINK_ETH)) {
		found = doctor_says(g, "pod.gids", NULL, DIAG_WARN, &f) ||
			doctor_says(g, "roce.gids", NULL, DIAG_WARN, &f);
		if (g->o->zero_gid) {
			g->err |= bench_verdict_add(
				g->v, BENCH_FAIL, "zero_gid",
				"Use the GID of the pod's RDMA interface (rdmak bench chooses it), and make sure that "
				"interface is in the pod.",
				"perftest: \"%s\"; the GID it used (index %d) is all zero: the netdev that owns it is not in "
				"this pod%s",
				e->text, g->o->gid_index, gid);
			return;
		}
		if (found) {
			from_finding(g, "gid_index", e, &f);
			return;
		}
		g->err |= bench_verdict_add(
			g->v, BENCH_FAIL, "gid_index",
			"Use the RoCE v2 GID of the interface's IPv4 address on both sides (rdmak bench does), the "
			"same MTU on both interfaces, and check the route between the two addresses.",
			"perftest: \"%s\"; the QPs could not be connected: on RoCE usually a wrong GID index "
			"(GID %d%s)",
			e->text, g->o->gid_index, gid);
		return;
	}
	if (doctor_says(g, "port.sm", NULL, DIAG_WARN, &f)) {
		from_finding(g, "qp_connect", e, &f);
		return;
	}
	plain(g, "qp_connect", e,
	      "Check both ports' LIDs and the subnet manager (rdmak doctor), and that both sides use the same -x (or none).",
	      "the QPs could not be moved to RTR/RTS: on InfiniBand a missing path (no SM, LID 0xffff) or a GID index "
	      "given on one side only");
}

static void completion(struct diagnosis *g, const struct bench_perftest_event *e)
{
	if (e->arg == 12)
		plain(g, "retry_exceeded", e,
		      "Check that both sides use the RoCE v2 GID of addresses that reach each other (ping over the RDMA "
		      "interface), the switch's PFC/ECN and ACLs, and that the peer is still running.",
		      "transport retry counter exceeded: the peer never acknowledged, so packets were dropped or went "
		      "nowhere (wrong remote GID or route, lossy RoCE without PFC, an ACL, or the peer died)");
	else
		plain(g, "completion_error", e,
		      "Look up the status in ibv_wc_status_str(); run rdmak doctor on both nodes.",
		      "a work request completed with an error");
}

static void arguments(struct diagnosis *g, const struct bench_perftest_event *e)
{
	if (strstr(e->what, "DMA-BUF cannot be used without CUDA"))
		g->err |= bench_verdict_add(
			g->v, BENCH_FAIL, "arguments",
			"Put --use_cuda before --use_cuda_dmabuf (perftest#336), or let rdmak bench build the "
			"command line.",
			"perftest rejected its arguments: \"%s\": its parser reads --use_cuda_dmabuf before "
			"--use_cuda has been seen (perftest#336)",
			e->what);
	else
		g->err |= bench_verdict_add(g->v, BENCH_FAIL, "arguments",
					    "Check the options against this perftest's --help.",
					    "perftest rejected its arguments%s%s%s",
					    e->what[0] ? ": \"" : "", e->what,
					    e->what[0] ? "\"" : "");
}

static void one_event(struct diagnosis *g, const struct bench_perftest_event *e,
		      const struct bench_perftest_out *peer)
{
	struct diag_finding f;

	switch (e->kind) {
	case BENCH_PT_EV_NO_DEVICE: no_device(g, e); break;
	case BENCH_PT_EV_NO_PROVIDER:
		if (doctor_says(g, "pod.provider", NULL, DIAG_WARN, &f))
			from_finding(g, "no_provider", e, &f);
		else
			plain(g, "no_provider", e,
			      "Install ibverbs-providers (Debian/Ubuntu) or rdma-core (RHEL) in the image.",
			      "libibverbs has no provider library for this HCA in the image");
		break;
	case BENCH_PT_EV_DEVICE_NOT_FOUND: device_not_found(g, e); break;
	case BENCH_PT_EV_PORT_STATE: port_state(g, e); break;
	case BENCH_PT_EV_MR: mr(g, e); break;
	case BENCH_PT_EV_READ_KEYS: read_keys(g, e, peer); break;
	case BENCH_PT_EV_CONNECT:
		plain(g, "connect", e,
		      "Start the server first (rdmak bench server), give the client the server pod's IP, and allow the TCP "
		      "port (default 18515) between the pods.",
		      "the client could not reach perftest's TCP port on the server");
		break;
	case BENCH_PT_EV_GID_TYPE:
		plain(g, "gid_type", e,
		      "Use RoCE v2 GIDs on both sides (rdmak bench picks the RoCE v2 IPv4 GID).",
		      "one side used a RoCE v1 GID and the other a RoCE v2 one");
		break;
	case BENCH_PT_EV_QP_STATE: qp_state(g, e); break;
	case BENCH_PT_EV_COMPLETION: completion(g, e); break;
	case BENCH_PT_EV_ARGS: arguments(g, e); break;
	case BENCH_PT_EV_VERSION:
		plain(g, "version", e,
		      "Run the same perftest on both sides (the rdmak bench image).",
		      "the two sides run perftest versions that cannot talk to each other");
		break;
	case BENCH_PT_EV_DMABUF:
		if (doctor_says(g, "gpudirect.driver", NULL, DIAG_WARN, &f))
			from_finding(g, "dmabuf", e, &f);
		else
			plain(g, "dmabuf", e,
			      "Use the NVIDIA open kernel modules (>= 515), CUDA >= 11.7 and an rdma-core/kernel with "
			      "ibv_reg_dmabuf_mr, or load nvidia_peermem and drop --use_cuda_dmabuf.",
			      "DMA-BUF registration of GPU memory is not supported here");
		break;
	case BENCH_PT_EV_LIMIT:
		plain(g, "limit", e, "Drop --limit_bw, or find out why with the figure's reasons.",
		      "the result is below the limit perftest was given (--limit_bw/--limit_msgrate)");
		break;
	case BENCH_PT_EV_RESOURCES:
		plain(g, "resources", e,
		      "Run rdmak doctor --pod; fewer QPs (-q) need fewer resources.",
		      "perftest could not create its verbs resources (PD, CQ, QP or MR)");
		break;
	default: break;
	}
}

int bench_diagnose(struct hw_ctx *ctx, const struct bench_perftest_out *o,
		   const struct bench_perftest_out *peer, const struct hw_node *node, bool doctor,
		   const struct bench_ceiling *c, struct bench_verdict *v)
{
	struct diagnosis g = { .o = o, .node = node, .c = c, .v = v };
	bool seen[BENCH_PT_EV__MAX] = { false };
	size_t before = v->n_reasons;

	/* the checks read this run's roots and hardware model, from inside the pod */
	if (ctx && doctor && node && diag_new(ctx, node, DIAG_POD, environ, &g.d) < 0)
		return -ENOMEM;
	/* the first failure of each kind; "If device exists" and its like follow the first */
	for (size_t i = 0; i < o->n_events; i++) {
		const struct bench_perftest_event *e = &o->events[i];

		if (!BENCH_PT_EV_IS_FAILURE(e->kind) || seen[e->kind])
			continue;
		/* setup failures that only follow another one add nothing */
		if (e->kind == BENCH_PT_EV_RESOURCES &&
		    (seen[BENCH_PT_EV_MR] || seen[BENCH_PT_EV_NO_DEVICE] ||
		     seen[BENCH_PT_EV_PORT_STATE]))
			continue;
		if (e->kind == BENCH_PT_EV_NO_DEVICE &&
		    (seen[BENCH_PT_EV_DEVICE_NOT_FOUND] || seen[BENCH_PT_EV_NO_PROVIDER]))
			continue;
		seen[e->kind] = true;
		one_event(&g, e, peer);
	}
	/* GID index 0 all zero without an error line (real-outputs G7: the run hangs) */
	if (!bench_perftest_failed(o) && o->zero_gid && !o->n_rows) {
		struct bench_perftest_event e = { .kind = BENCH_PT_EV_QP_STATE, .arg = -1 };

		snprintf(e.text, sizeof(e.text),
			 "GID: 00:00:00:00:00:00:00:00:00:00:00:00:00:00:00:00");
		qp_state(&g, &e);
	}
	if (bench_perftest_failed(o) && v->n_reasons == before)
		g.err |= bench_verdict_add(v, BENCH_FAIL, "bench_perftest_failed",
					   "Read perftest's output above.", "perftest failed");
	diag_free(g.d);
	return g.err ? -ENOMEM : 0;
}
