/* SPDX-License-Identifier: Apache-2.0 */
/* Netlink for the CNI plugin: rtnetlink through libnl-route-3 (links, addresses, routes, rules,
 * per-interface IPv4 settings, SR-IOV VF GUIDs) and RDMA netlink over the same libnl-3 socket
 * (the RDMA subsystem's netns mode, moving an RDMA device between namespaces), plus the network
 * namespace helpers both need.
 *
 * Conventions: every function returns >= 0 on success or -errno; lookups return 1 (found),
 * 0 (absent) or -errno; out-parameters are written only on success. Nothing here prints: when
 * the kernel explains a refusal (extended ACK, NETLINK_EXT_ACK) the text is kept in the handle
 * and nl_rt_errmsg() / nl_rdma_errmsg() return it until the next request.
 *
 * A handle is bound to the network namespace it was opened in, for its whole life: a netlink
 * socket keeps the namespace of its creation. So the plugin opens one handle in the host
 * namespace and one in the pod's and never has to switch its own namespace to talk to either.
 */
#ifndef RDMAK_NL_H
#define RDMAK_NL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NL_IFNAMSIZ    16 /* IFNAMSIZ, NUL included */
#define NL_RDMA_NAMSIZ 64 /* IB_DEVICE_NAME_MAX */

/* ---- network namespaces --------------------------------------------------------------- */

/* Open a namespace file (a bind mount under /var/run/netns, /proc/PID/ns/net) read-only and
 * check that it is a network namespace: -EINVAL when it is another file, -ENOENT when gone.
 * Never blocks: a FIFO is opened without waiting for a writer, and refused. */
int nl_netns_open(const char *path, int *ret_fd);
/* What path is when it is not a network namespace, for messages: 1 and *ret_what ("a regular
 * file", "a FIFO", "a directory", "a namespace of another kind", ...), 0 when it is one,
 * -errno when it cannot be looked at (-ENOENT: gone). */
int nl_netns_describe(const char *path, const char **ret_what);
/* The calling thread's own network namespace. */
int nl_netns_open_self(int *ret_fd);
/* 1 when both fds name the same namespace, 0 when not. */
int nl_netns_same(int a, int b);
/* Enter a namespace; *ret_saved is the one left, for nl_netns_leave() (which closes it).
 * Only for what netlink cannot do from outside (none of the functions below need it). */
int nl_netns_enter(int netns_fd, int *ret_saved);
int nl_netns_leave(int saved_fd);
/* A sysfs of the namespace netns_fd as it sees it (its own class/net, class/infiniband in the RDMA
 * exclusive mode): mounted read-only, detached (fsopen/fsmount: in no mount table, gone when the
 * fd is closed), entered from the calling thread, which is back in its own namespace on return.
 * *ret_fd is the mount's root, O_PATH; "/proc/self/fd/N" names it as a path. It holds the
 * namespace alive while open: close it soon. Needs CAP_SYS_ADMIN (setns, mounting sysfs);
 * -ENOSYS on a kernel before 5.2. */
int nl_netns_sysfs(int netns_fd, int *ret_fd);

/* ---- rtnetlink -------------------------------------------------------------------------- */

struct nl_rt;

/* A route netlink socket in the namespace netns_fd (-1: the caller's own). */
int nl_rt_open(int netns_fd, struct nl_rt **ret);
/* The same in netns_fd, bound to peer's netlink port id where that id is free there (each
 * namespace has its own port ids): what the kernel unicasts to peer's requests in that
 * namespace (the echo of a link peer made there) then reaches this handle. */
int nl_rt_open_peer(int netns_fd, const struct nl_rt *peer, struct nl_rt **ret);
void nl_rt_free(struct nl_rt *rt);
/* The kernel's explanation of the last failed request ("" when it gave none). */
const char *nl_rt_errmsg(const struct nl_rt *rt);

struct nl_link {
	int ifindex;
	char name[NL_IFNAMSIZ];
	char kind[16]; /* IFLA_INFO_KIND: "macvlan", "ipoib", "veth"; "" for a device without one */
	int link_ifindex; /* IFLA_LINK: a macvlan's master, an IPoIB child's parent; 0 when none */
	int link_netnsid; /* IFLA_LINK_NETNSID: the master lives in another namespace; -1 when not */
	unsigned type;	  /* ARPHRD_*: 1 Ethernet, 32 InfiniBand */
	unsigned mtu;
	unsigned flags;	  /* IFF_* */
	uint8_t addr[32]; /* hardware address: 6 bytes on Ethernet, 20 on IPoIB */
	unsigned addr_len;
	uint32_t macvlan_mode; /* MACVLAN_MODE_* for kind "macvlan", else 0 */
	int ipoib_pkey;	       /* IFLA_IPOIB_PKEY for kind "ipoib", else -1 */
	char parent_dev
		[32]; /* IFLA_PARENT_DEV_NAME: "0000:1b:00.2" for a PCI function; "" when none */
	char parent_bus[16]; /* IFLA_PARENT_DEV_BUS_NAME: "pci" */
};

int nl_link_get(struct nl_rt *rt, const char *name, struct nl_link *ret);
int nl_link_get_by_index(struct nl_rt *rt, int ifindex, struct nl_link *ret);
/* Every link of the namespace (malloc'd array). */
int nl_link_list(struct nl_rt *rt, struct nl_link **ret, size_t *ret_n);

/* What the request that creates a child link also does, so that no second request changes
 * the new link and no GETLINK reads it back (each field's zero value: the kernel's default). */
struct nl_link_new {
	unsigned mtu;	     /* 0: the master's */
	const uint8_t *addr; /* hardware address, addr_len bytes; NULL: the kernel picks one */
	unsigned addr_len;
	bool up;
	/* ask for the kernel's echo of the new link (NLM_F_ECHO, kernel 6.3 and later); made in
	 * another namespace, it is heard by this handle there, opened by nl_rt_open_peer() */
	struct nl_rt *echo;
};

/* Create a macvlan child of master_ifindex (a link of rt's namespace) named `name`, directly in
 * the namespace netns_fd (-1: rt's own), so it never exists under that name on the host.
 * mode: MACVLAN_MODE_BRIDGE, _PRIVATE, _VEPA, _PASSTHRU. set may be NULL. -EEXIST when the name
 * is taken there. 1 with *ret (may be NULL) the new link as the kernel echoed it, 0 when
 * created but not echoed (set->echo NULL, or an older kernel). */
int nl_link_add_macvlan(struct nl_rt *rt, const char *name, int master_ifindex, uint32_t mode,
			int netns_fd, const struct nl_link_new *set, struct nl_link *ret);
/* Create an IPoIB child of parent_ifindex with a partition key (0: the parent's default) the
 * same way. libnl-route 3.7 has no ipoib kind, so the IFLA_INFO_DATA is written here. */
int nl_link_add_ipoib(struct nl_rt *rt, const char *name, int parent_ifindex, uint16_t pkey,
		      int netns_fd, const struct nl_link_new *set, struct nl_link *ret);
int nl_link_del(struct nl_rt *rt, int ifindex);

/* What nl_link_change() changes; the zero value of each field (after nl_link_change_init)
 * means "leave as is". */
struct nl_link_change {
	const char *name; /* rename (in the target namespace when moving) */
	int netns_fd;	  /* move to this namespace; -1: stay */
	unsigned mtu;
	const uint8_t *addr; /* hardware address, addr_len bytes */
	unsigned addr_len;
	int up; /* 1 up, 0 down, -1 keep */
};
void nl_link_change_init(struct nl_link_change *c);
int nl_link_change(struct nl_rt *rt, int ifindex, const struct nl_link_change *c);

/* Per-interface IPv4 settings (IPV4_DEVCONF_* ids: ARP_IGNORE, ARP_ANNOUNCE, RP_FILTER, ...),
 * set over rtnetlink (IFLA_AF_SPEC/AF_INET/IFLA_INET_CONF), so no /proc of the other namespace
 * is needed. */
int nl_link_set_ipv4_conf(struct nl_rt *rt, int ifindex, const int *ids, const uint32_t *values,
			  size_t n);
int nl_link_get_ipv4_conf(struct nl_rt *rt, int ifindex, int id, uint32_t *ret);

/* Set an InfiniBand VF's node and port GUIDs through its PF: two RTM_SETLINK on pf_ifindex,
 * IFLA_VF_IB_NODE_GUID then IFLA_VF_IB_PORT_GUID, each in IFLA_VFINFO_LIST/IFLA_VF_INFO.
 * -EOPNOTSUPP from a PF whose driver cannot (every non-IB device). */
int nl_link_set_vf_guid(struct nl_rt *rt, int pf_ifindex, uint32_t vf, uint64_t node_guid,
			uint64_t port_guid);

/* The VFs' GUIDs as the PF reports them (RTM_GETLINK with RTEXT_FILTER_VF: IFLA_VF_IB_NODE_GUID
 * and IFLA_VF_IB_PORT_GUID in IFLA_VFINFO_LIST, filled by the PF driver's ndo_get_vf_guid). A VF
 * whose GUIDs the driver does not report is not in the array (malloc'd; may be empty). */
struct nl_vf_guid {
	uint32_t vf;
	uint64_t node_guid, port_guid;
};
int nl_link_get_vf_guids(struct nl_rt *rt, int pf_ifindex, struct nl_vf_guid **ret, size_t *ret_n);

/* A VF's settings as its PF holds them (src/nl/vf.c), read from the PF's VF table. */
struct nl_vf_info {
	uint32_t vf;
	uint8_t mac[6]; /* administrative MAC (IFLA_VF_MAC); zeros: none set */
	uint32_t vlan, qos;
	uint16_t vlan_proto;		   /* ETH_P_8021Q or ETH_P_8021AD, host byte order */
	uint32_t min_tx_rate, max_tx_rate; /* Mb/s; 0: no limit */
	int spoofchk, trust;		   /* 1 on, 0 off, -1 the driver does not say */
	uint32_t link_state;		   /* IFLA_VF_LINK_STATE_AUTO, _ENABLE, _DISABLE */
	/* IFLA_VF_IB_NODE_GUID and _PORT_GUID: the kernel puts both only when the PF's driver has
	 * ndo_get_vf_guid (IPoIB's since 5.2) */
	bool has_ib_guids;
	uint64_t node_guid, port_guid;
};

/* VF number vf of the PF pf_ifindex: 1 and *ret, or 0 when the PF lists no such VF (a netdev
 * without SR-IOV lists none). */
int nl_link_get_vf(struct nl_rt *rt, int pf_ifindex, uint32_t vf, struct nl_vf_info *ret);
/* One setting of VF vf through its PF each (`ip link set PF vf N mac|vlan|...`). A PF whose
 * driver lacks the setting answers -EOPNOTSUPP. proto: ETH_P_8021Q or ETH_P_8021AD; rates in
 * Mb/s, set together; state: IFLA_VF_LINK_STATE_*. */
int nl_link_set_vf_mac(struct nl_rt *rt, int pf_ifindex, uint32_t vf, const uint8_t *mac);
int nl_link_set_vf_vlan(struct nl_rt *rt, int pf_ifindex, uint32_t vf, uint32_t vlan, uint32_t qos,
			uint16_t proto);
int nl_link_set_vf_rate(struct nl_rt *rt, int pf_ifindex, uint32_t vf, uint32_t min_tx_rate,
			uint32_t max_tx_rate);
int nl_link_set_vf_spoofchk(struct nl_rt *rt, int pf_ifindex, uint32_t vf, bool on);
int nl_link_set_vf_trust(struct nl_rt *rt, int pf_ifindex, uint32_t vf, bool on);
int nl_link_set_vf_link_state(struct nl_rt *rt, int pf_ifindex, uint32_t vf, uint32_t state);

struct nl_ipaddr {
	int family; /* AF_INET, AF_INET6 */
	uint8_t addr[16];
	unsigned prefixlen;
	int ifindex;
	unsigned flags; /* IFA_F_* */
	unsigned char scope;
};

/* Add an address (IFA_F_NODAD and the like in flags). -EEXIST when present. */
int nl_ipaddr_add(struct nl_rt *rt, const struct nl_ipaddr *a);
int nl_ipaddr_del(struct nl_rt *rt, const struct nl_ipaddr *a);
/* Addresses of one link (ifindex 0: all) of one family (AF_UNSPEC: both). */
int nl_ipaddr_list(struct nl_rt *rt, int ifindex, int family, struct nl_ipaddr **ret,
		   size_t *ret_n);

struct nl_route {
	int family;
	uint8_t dst[16];
	unsigned dst_len; /* 0: default route */
	uint8_t gw[16];
	bool has_gw;
	uint8_t src[16]; /* preferred source (RTA_PREFSRC) */
	bool has_src;
	int ifindex;		/* output device; 0: none */
	uint32_t table;		/* RT_TABLE_MAIN (254) when 0 at creation */
	unsigned char scope;	/* RT_SCOPE_UNIVERSE, RT_SCOPE_LINK */
	unsigned char protocol; /* RTPROT_*; RTPROT_STATIC when 0 at creation */
	unsigned char type;	/* RTN_UNICAST when 0 at creation */
	uint32_t priority;	/* metric */
	unsigned mtu;		/* RTAX_MTU; 0: none */
};

/* -EEXIST when an identical route is there. */
int nl_route_add(struct nl_rt *rt, const struct nl_route *r);
int nl_route_del(struct nl_rt *rt, const struct nl_route *r);
/* Routes of one family (AF_UNSPEC: both) in one table (0: every table). */
int nl_route_list(struct nl_rt *rt, int family, uint32_t table, struct nl_route **ret,
		  size_t *ret_n);

struct nl_rule {
	int family;
	uint32_t priority;
	uint32_t table;
	uint8_t src[16];
	unsigned src_len; /* 0: from all */
};

/* "from src/src_len lookup table" at an explicit priority. -EEXIST when an identical rule is there. */
int nl_rule_add(struct nl_rt *rt, const struct nl_rule *r);
int nl_rule_del(struct nl_rt *rt, const struct nl_rule *r);
int nl_rule_list(struct nl_rt *rt, int family, struct nl_rule **ret, size_t *ret_n);

/* ---- RDMA netlink --------------------------------------------------------------------- */

struct nl_rdma;

/* An RDMA netlink socket in the namespace netns_fd (-1: the caller's own). -EPROTONOSUPPORT:
 * the kernel has no RDMA subsystem (ib_core not built or not loaded). */
int nl_rdma_open(int netns_fd, struct nl_rdma **ret);
void nl_rdma_free(struct nl_rdma *r);
const char *nl_rdma_errmsg(const struct nl_rdma *r);

/* The subsystem's netns mode (RDMA_NLDEV_CMD_SYS_GET): 1 shared (every namespace sees every
 * device; the kernel's default), 0 exclusive (a device belongs to one namespace). */
int nl_rdma_netns_shared(struct nl_rdma *r, bool *ret_shared);

struct nl_rdma_dev {
	uint32_t index;
	char name[NL_RDMA_NAMSIZ];
	uint32_t
		ports; /* its last port's number (RDMA_NLDEV_ATTR_PORT_INDEX of the dump); ports start at 1 */
	uint64_t
		node_guid; /* RDMA_NLDEV_ATTR_NODE_GUID: the number sysfs node_guid prints; 0 none */
};

/* The devices visible from the socket's namespace (RDMA_NLDEV_CMD_GET dump). */
int nl_rdma_dev_list(struct nl_rdma *r, struct nl_rdma_dev **ret, size_t *ret_n);
int nl_rdma_dev_get(struct nl_rdma *r, const char *name, struct nl_rdma_dev *ret);
/* Move a device to another namespace (RDMA_NLDEV_CMD_SET with RDMA_NLDEV_NET_NS_FD); sent
 * from the namespace the device is in. Exclusive mode only: -EOPNOTSUPP in shared mode. */
int nl_rdma_dev_set_netns(struct nl_rdma *r, uint32_t index, int netns_fd);

/* ---- RDMA counters (RDMA_NLDEV_CMD_STAT_GET: what `rdma statistic` reads) -------------------- */

#define NL_RDMA_STAT_NAMSIZ                                                                        \
	64 /* a hardware counter's name: "out_of_sequence", "rx_write_requests" */

struct nl_rdma_hwcounter {
	char name[NL_RDMA_STAT_NAMSIZ];
	uint64_t value;
};

/* A port's default counters, as `rdma statistic show link DEV/PORT` reads them: the kernel's
 * values include what counters bound to QPs (below) have counted. */
struct nl_rdma_stat {
	uint32_t dev_index;
	char dev[NL_RDMA_NAMSIZ];
	uint32_t port;
	struct nl_rdma_hwcounter *hw;
	size_t n_hw;
};

/* One counter object (`rdma statistic qp show`): QPs bound to it by hand (manual mode) or by
 * the port's auto mode, which gives each QP type and/or each process its own counter. */
struct nl_rdma_counter {
	uint32_t port;
	uint32_t id;	/* the counter's number on its device (RDMA_NLDEV_ATTR_STAT_COUNTER_ID) */
	uint32_t mode;	/* enum rdma_nl_counter_mode: RDMA_COUNTER_MODE_AUTO or _MANUAL */
	int qp_type;	/* auto mode by QP type: the IB_QPT_* it binds (2 RC, 4 UD...); -1 none */
	int64_t pid;	/* auto mode per process: its pid in the reader's pid namespace; -1 none */
	char comm[32];	/* auto mode per process, for a kernel consumer: its name; "" none */
	uint32_t *qpns; /* the local QP numbers bound to it */
	size_t n_qpns;
	struct nl_rdma_hwcounter *hw;
	size_t n_hw;
};

/* The default counters of one port (a request per port: the kernel's answer is not a dump).
 * -EINVAL from a device or port the kernel does not know, or whose driver has no counters. */
int nl_rdma_port_stat(struct nl_rdma *r, uint32_t dev_index, uint32_t port,
		      struct nl_rdma_stat *ret);
void nl_rdma_stat_clear(struct nl_rdma_stat *s);
/* Every counter object of every port of one device (a dump: the kernel wants the device). */
int nl_rdma_counters(struct nl_rdma *r, uint32_t dev_index, struct nl_rdma_counter **ret,
		     size_t *ret_n);
void nl_rdma_counters_free(struct nl_rdma_counter *v, size_t n);
/* "RC", "UD", ... as rdma(8) names an IB_QPT_* number; NULL for one it does not name. */
const char *nl_rdma_qp_type_name(int qp_type);

#endif
