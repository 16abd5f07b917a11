/* Resource pools: the configuration applied to one load of the hardware model. Everything the
 * kubelet will ask for (device lists, Allocate answers) is computed here, at start-up, reload
 * or health change, so that the transport's callbacks only copy prepared data. */
#ifndef RDMAK_PLUGIN_POOL_H
#define RDMAK_PLUGIN_POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "hw/hw.h"
#include "kubelet/kubelet.h"
#include "plugin/config.h"

/* One live fact a member's health depends on, shared between members (a PF's carrier is an
 * input of each of its VFs) and re-read by the health poll. */
enum health_kind { HEALTH_PORT, HEALTH_CARRIER };
struct health_input {
	enum health_kind kind;
	char name[HW_NAME_MAX]; /* RDMA device or netdev */
	unsigned port;
	int value;              /* port: enum hw_port_state; carrier: 1, 0, -1 unreadable */
	bool gone;              /* the last read said ENOENT */
	int fd;                 /* health.c's held sysfs attribute, -1 when not open */
};
bool health_input_ok(const struct health_input *in);
/* "mlx5_0 port 1 DOWN", "ens1f0 no carrier", "mlx5_3 gone" */
void health_input_describe(const struct health_input *in, char *buf, size_t n);

struct pool_member {
	char id[HW_NAME_MAX];  /* shared: the RDMA device; exclusive: the PCI address (the kubelet id) */
	char *rdma;            /* RDMA devices, comma-separated ("mlx5_3"); never NULL once built */
	char *netdevs;         /* netdevs, comma-separated; never NULL once built */
	char pf[HW_BDF_MAX];   /* exclusive: the PF (itself for a PF) */
	int vf_index;          /* exclusive: -1 for a PF */
	int numa;
	bool healthy;
	bool in_pod;           /* exclusive netns: its RDMA device is in a pod (select_vf_in_pod) */
	/* Why not healthy: the static fault, else inputs[bad_input]'s state (pool_member_reason).
	 * Strings are allocated to size: a 1016-VF pool's members are most of the idle memory. */
	char *static_fault;    /* a fault found at load time (no uverbs node): never healthy; NULL none */
	size_t bad_input;      /* unhealthy without a static fault: index in m->inputs */
	size_t *inputs;
	size_t n_inputs;
	struct kl_device_spec *specs; /* its char devices (and vhost-net/tun), host == container path */
	size_t n_specs;
	char *rdma_info;       /* exclusive: _INFO's "rdma" object, compact JSON */
	char *info;            /* exclusive: its "<id>":{...} entry of _INFO (compact, keys sorted),
				* prepared at build time so that Allocate builds no JSON */
};

struct pool {
	const struct plugin_resource *res;
	char socket_name[128];  /* "rdmak-rdma_rdma_a100.sock" */
	char env_key[160];      /* exclusive: PCIDEVICE_<PREFIX>_<NAME> */
	struct pool_member *m;  /* sorted by id */
	size_t n_m;
	struct kl_device *devs; /* what ListAndWatch sends */
	size_t n_devs;
	size_t n_healthy_members;
	struct kl_container_alloc shared; /* shared pools: the answer for every container */
	bool shared_ok;
	bool cdi;               /* answer with cdi_devices instead of device specs */
	char shared_refusal[512];
};

struct pool_opts {
	bool cdi;                  /* answer with cdi_devices instead of device specs */
	const struct pool_set *prev; /* the set this one replaces: in-pod VFs keep their answers */
};

struct pool_set {
	struct pool *pools;
	size_t n;
	struct health_input *inputs;
	size_t n_inputs;
	struct pool_opts opts;
	bool exclusive_netns;      /* RDMA netns mode exclusive: an in-use VF vanishes from the host */
};

/* Build the pools of cfg over node. cfg must outlive the set. */
int pool_set_build(const struct plugin_config *cfg, const struct hw_node *node, const struct pool_opts *opts,
		   struct pool_set **ret);
void pool_set_free(struct pool_set *ps);

/* Recompute every member's health from the inputs, then the device lists and prepared
 * answers. changed[i] (may be NULL) says whether pool i's device list changed. */
int pool_set_refresh(struct pool_set *ps, bool *changed);

/* The transport's callbacks (ud = struct pool *). Hot path: no I/O, no sysfs. */
int pool_allocate(const struct pool *p, const char *const *ids, size_t n, struct kl_container_alloc *out, char **msg);
int pool_preferred(const struct pool *p, const char *const *available, size_t n_available,
		   const char *const *must_include, size_t n_must, size_t size, char ***out, size_t *n_out);
const struct pool_member *pool_member_find(const struct pool *p, const char *id);
/* Why m is not healthy ("mlx5_0 port 1 DOWN"); "" when it is. */
void pool_member_reason(const struct pool_set *ps, const struct pool_member *m, char *buf, size_t n);


/* The Multus device-info file name for one device: "<prefix>-<name>-<id>-device.json". */
int pool_devinfo_name(const struct pool *p, const char *id, char *buf, size_t n);
/* Its content (spec 1.1.0, with rdma-device); malloc'd. */
char *pool_devinfo_json(const struct pool *p, const struct pool_member *m);

#endif
