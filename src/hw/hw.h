/* SPDX-License-Identifier: Apache-2.0 */
/* The node's RDMA hardware model, read from a sysfs root and a devfs root.
 *
 * hw_load() reads everything once into plain structs that the other roles (list, doctor,
 * plugin) share. Cross references are non-owning pointers into the node's own arrays and
 * stay valid until hw_node_free(). Nothing here prints; every failure comes back as -errno
 * with the offending path in struct hw_error.
 */
#ifndef RDMAK_HW_H
#define RDMAK_HW_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/fileio.h"

#define HW_NAME_MAX   64 /* RDMA device names are IB_DEVICE_NAME_MAX (64) */
#define HW_IFNAME_MAX 16 /* IFNAMSIZ */
#define HW_BDF_MAX    16 /* "0000:37:00.0" */

struct hw_ctx;

/* ---- context: where to read from ---------------------------------------------------- */

/* The roots a role reads. Only these are read, and every path is resolved inside its root
 * (util/inroot.h): an absolute or climbing symlink in a --root tree stays in the tree. */
enum hw_root { HW_ROOT_SYSFS, HW_ROOT_DEVFS, HW_ROOT_PROCFS, HW_ROOT_IMAGE, HW_ROOT_N };

/* The roots as every role's options give them: --root DIR stands for DIR/sys, DIR/dev,
 * DIR/proc and DIR itself (the image root); --sysfs, --devfs, --procfs and --image each win
 * over it. NULL: this machine's /sys, /dev, /proc and /. */
struct hw_roots {
	const char *root;
	const char *dir[HW_ROOT_N];
};
/* The options, for each role's getopt_long table (the values are outside any short
 * option's): HW_ROOT_LONGOPTS for list, snapshot, plugin, bench; HW_ROOT_LONGOPTS_POD adds
 * --procfs and --image (doctor). hw_roots_option() takes getopt_long's answer: true when it
 * was one of them, recorded in *r. */
enum { HW_OPT_ROOT = 0x4000, HW_OPT_SYSFS, HW_OPT_DEVFS, HW_OPT_PROCFS, HW_OPT_IMAGE };
/* lists of initializers, which clang-format 14 cannot lay out in a macro */
/* clang-format off */
#define HW_ROOT_LONGOPTS                                                                          \
	{ "root", required_argument, NULL, HW_OPT_ROOT }, { "sysfs", required_argument, NULL, HW_OPT_SYSFS }, \
	{ "devfs", required_argument, NULL, HW_OPT_DEVFS }
#define HW_ROOT_LONGOPTS_POD \
	HW_ROOT_LONGOPTS, { "procfs", required_argument, NULL, HW_OPT_PROCFS }, { "image", required_argument, NULL, HW_OPT_IMAGE }
/* clang-format on */
#define HW_ROOT_USAGE                                                                              \
	"  --root DIR      read DIR/sys and DIR/dev (a snapshot unpacked, a test tree)\n"          \
	"  --sysfs DIR     sysfs root (default /sys; wins over --root)\n"                          \
	"  --devfs DIR     devfs root (default /dev; wins over --root)\n"
bool hw_roots_option(struct hw_roots *r, int c, const char *arg);

/* Open the roots. The sysfs root must be there: -errno otherwise, with the path that is
 * really missing in `missing` (DIR itself when --root DIR does not exist, else DIR/sys or the
 * --sysfs directory). The others may be absent (no device nodes, no /proc: each read of them
 * is then -ENOENT, a finding for the doctor). */
int hw_ctx_new_roots(const struct hw_roots *r, struct hw_ctx **ret, char *missing,
		     size_t missing_len);
/* The same for just a sysfs and a devfs root (NULL: /sys, /dev), as rdmak-cni's "sysfs" key. */
int hw_ctx_new(const char *sysfs, const char *devfs, struct hw_ctx **ret);
void hw_ctx_free(struct hw_ctx *ctx);
/* A root's path as given (for messages), and its O_PATH directory fd (or -errno). */
const char *hw_ctx_root(const struct hw_ctx *ctx, enum hw_root root);
int hw_ctx_root_fd(const struct hw_ctx *ctx, enum hw_root root);
static inline const char *hw_ctx_sysfs(const struct hw_ctx *ctx)
{
	return hw_ctx_root(ctx, HW_ROOT_SYSFS);
}
static inline const char *hw_ctx_devfs(const struct hw_ctx *ctx)
{
	return hw_ctx_root(ctx, HW_ROOT_DEVFS);
}

/* Open a file of a root (`relpath` relative to it, an absolute one taken from it), resolved
 * inside the root, e.g. O_RDONLY | O_NONBLOCK or O_PATH. The fd or -errno. Not recorded. */
int hw_ctx_open(struct hw_ctx *ctx, enum hw_root root, const char *relpath, int flags);
/* Read up to len bytes of a regular file of a root (binary-safe: PCI config space), without
 * blocking; sysfs and devfs reads go through the recorder (so that a snapshot holds them).
 * The byte count, or -errno (-HW_ENOTREG: a FIFO, device or socket). */
ssize_t hw_ctx_read(struct hw_ctx *ctx, enum hw_root root, const char *relpath, void *buf,
		    size_t len);
/* The whole of a regular file of a root, up to `max` bytes (-EFBIG past it), NUL-terminated
 * and malloc'd. ret_len may be NULL. */
int hw_ctx_read_alloc(struct hw_ctx *ctx, enum hw_root root, const char *relpath, size_t max,
		      char **ret, size_t *ret_len);

/* Every path the model reads, lists, readlinks or stats in the sysfs and devfs roots,
 * relative to its root (for `snapshot`, which must capture exactly these). */
enum hw_access { HW_ACCESS_READ, HW_ACCESS_LIST, HW_ACCESS_READLINK, HW_ACCESS_STAT };
typedef void (*hw_recorder_fn)(enum hw_root root, enum hw_access how, const char *relpath,
			       void *userdata);
void hw_ctx_set_recorder(struct hw_ctx *ctx, hw_recorder_fn fn, void *userdata);

/* A file of a root that should be a regular file (a sysfs attribute) is a FIFO, a device or a
 * socket, which sysfs never holds: it is refused rather than read, since reading a FIFO would
 * block forever. hw_strerror() says so; for any other errno it is strerror(). */
#define HW_ENOTREG FILEIO_ENOTREG
const char *hw_strerror(int err);

/* The path and errno of the first fatal failure, for the message the caller prints. */
struct hw_error {
	char path[PATH_MAX];
	int err; /* positive errno */
};

/* ---- the model ----------------------------------------------------------------------- */

enum hw_link_layer { HW_LINK_UNKNOWN = 0, HW_LINK_IB, HW_LINK_ETH };

/* PCIe relation between two functions, as `nvidia-smi topo -m` names it (best first). */
enum hw_topo {
	HW_TOPO_UNKNOWN = 0,
	HW_TOPO_PIX,
	HW_TOPO_PXB,
	HW_TOPO_PHB,
	HW_TOPO_NODE,
	HW_TOPO_SYS
};

enum hw_chardev_kind { HW_CHR_UVERBS, HW_CHR_UMAD, HW_CHR_ISSM, HW_CHR_RDMA_CM };

enum hw_netdev_kind { HW_NETDEV_OTHER = 0, HW_NETDEV_ETHER, HW_NETDEV_IPOIB, HW_NETDEV_BOND };

/* How a port's netdev was found (the same three rules as ibdev2netdev). */
enum hw_ndev_via { HW_NDEV_NONE = 0, HW_NDEV_IPOIB_GUID, HW_NDEV_GID_NDEV, HW_NDEV_PCI_FUNCTION };

enum hw_module_state { HW_MOD_ABSENT = 0, HW_MOD_LOADED, HW_MOD_BUILTIN };

/* A port's logical state: the kernel's enum ib_port_state, the leading number of ports/N/state
 * ("4: ACTIVE"). ACTIVE_DEFER (5) is ACTIVE with the link temporarily unable to send (the
 * kernel's ib_port_state comment); verbs traffic goes on, so it counts as active everywhere. */
enum hw_port_state {
	HW_PORT_STATE_UNKNOWN = -1, /* unreadable or unparsable */
	HW_PORT_NOP = 0,
	HW_PORT_DOWN = 1,
	HW_PORT_INIT = 2,
	HW_PORT_ARMED = 3,
	HW_PORT_ACTIVE = 4,
	HW_PORT_ACTIVE_DEFER = 5,
};

/* A port's physical state (ports/N/phys_state "5: LinkUp"), as the IBTA PortPhysicalState. */
enum hw_phys_state {
	HW_PHYS_UNKNOWN = -1, /* unreadable or unparsable */
	HW_PHYS_NOP = 0,
	HW_PHYS_SLEEP = 1,
	HW_PHYS_POLLING = 2,
	HW_PHYS_DISABLED = 3,
	HW_PHYS_TRAINING = 4, /* PortConfigurationTraining */
	HW_PHYS_LINK_UP = 5,
	HW_PHYS_LINK_ERROR_RECOVERY = 6,
	HW_PHYS_PHY_TEST = 7,
};

struct hw_rdma_dev;
struct hw_netdev;
struct hw_pci;

/* What the devfs root holds at a char device's path. */
struct hw_devnode {
	char path[48];	       /* relative to the devfs root: "infiniband/uverbs0" */
	bool present;	       /* something exists at the path */
	bool is_char;	       /* ... and it is a character device */
	unsigned major, minor; /* of the node found (valid when is_char) */
	unsigned mode;	       /* permission bits of the node found */
	uid_t uid;
	gid_t gid;
};

struct hw_chardev {
	enum hw_chardev_kind kind;
	char name[32];		 /* "uverbs0", "umad1", "issm1", "rdma_cm" */
	struct hw_rdma_dev *dev; /* NULL for rdma_cm */
	unsigned port;		 /* umad/issm: the port; 0 otherwise */
	unsigned major, minor;	 /* from sysfs `dev` */
	struct hw_devnode node;
	bool matches; /* node present, a char device, with sysfs' major:minor */
};

struct hw_rate {
	char raw[48];	/* "200 Gb/sec (4X HDR)" as the kernel prints it */
	double gbps;	/* 200, 2.5, ... (0 if unparsable) */
	unsigned width; /* 1, 2, 4, 8, 12 (the "4X"); 0 if unknown */
	char speed[8];	/* "HDR", "EDR", "FDR10", ...; also printed on RoCE ports */
};

struct hw_gid {
	unsigned index;
	char gid[40];		  /* "fe80:0000:...:1415" as the kernel prints it */
	char type[16];		  /* "IB/RoCE v1", "RoCE v2"; "" when unreadable */
	char ndev[HW_IFNAME_MAX]; /* owning netdev; "" when none or unreadable */
	bool ipv4;		  /* ::ffff:a.b.c.d (RoCE v2 over IPv4 when type is v2) */
};

struct hw_pkey {
	unsigned index;
	uint16_t pkey;
};

/* A required port attribute (state, phys_state, link_layer) that could not be read or did not
 * parse. The load goes on with the field unknown, so that one broken file neither hides the
 * rest of the node nor stops a snapshot of it; every role reports it (hw_attr_error_str). */
struct hw_attr_error {
	char name[12];	  /* "state" */
	int err;	  /* positive errno; 0 with content set: unexpected content */
	char content[40]; /* what the file held, printable ("\xHH" escapes), cut short */
};

struct hw_port {
	struct hw_rdma_dev *dev;
	unsigned num;
	struct hw_attr_error errors[3]; /* n_errors of them */
	size_t n_errors;
	enum hw_port_state state; /* HW_PORT_STATE_UNKNOWN when unreadable */
	char state_name[16];	  /* "ACTIVE": the kernel's text after the number */
	enum hw_phys_state phys_state;
	char phys_state_name[32]; /* "LinkUp" */
	struct hw_rate rate;
	enum hw_link_layer link_layer;
	uint32_t lid, sm_lid, lmc, sm_sl;
	uint32_t cap_mask;
	char port_guid[20]; /* lower 64 bits of GID 0, "%04x:%04x:%04x:%04x"; all zero when empty */
	struct hw_gid *gids; /* non-empty GIDs by index (only GID 0 without HW_LOAD_GIDS) */
	size_t n_gids;
	size_t gid_tbl_len;    /* entries the kernel exposes (gids/<i>); 0 if not listed */
	struct hw_pkey *pkeys; /* non-zero pkeys (NULL unless HW_LOAD_PKEYS) */
	size_t n_pkeys;
	size_t pkey_tbl_len;	  /* 0 unless HW_LOAD_PKEYS */
	struct hw_netdev *netdev; /* ibdev2netdev's answer; NULL if none */
	enum hw_ndev_via netdev_via;
	struct hw_chardev *umad, *issm;
};

struct hw_rdma_dev {
	char name[HW_NAME_MAX];
	int node_type;		 /* 1 CA, 2 switch, 3 router, 4 RNIC */
	char node_type_name[16]; /* "CA" */
	char node_guid[20], sys_image_guid[20];
	char fw_ver[64], hca_type[32], hw_rev[16], board_id[64], node_desc[72];
	struct hw_pci *pci; /* parent PCI function; NULL for virtual devices (rxe, siw) */
	struct hw_port *ports;
	size_t n_ports;
	struct hw_chardev *uverbs; /* NULL: no user verbs (the device is invisible to libibverbs) */
	struct hw_netdev *lag;	   /* RoCE LAG: the bond master that owns this device's GIDs */
};

struct hw_bond {
	char mode[32]; /* "active-backup", "802.3ad", ... */
	int mode_id;   /* 1, 4, ... */
	struct hw_netdev **slaves;
	size_t n_slaves;
	struct hw_netdev *active; /* active-backup: the active slave; NULL otherwise */
};

struct hw_netdev {
	char name[HW_IFNAME_MAX];
	int ifindex;
	unsigned type; /* ARPHRD_*: 1 Ethernet, 32 InfiniBand */
	enum hw_netdev_kind kind;
	char operstate[16]; /* "up", "down", "lowerlayerdown", ... */
	int carrier;	    /* 1, 0, -1 unreadable (an admin-down link returns EINVAL) */
	unsigned mtu;
	char address[64];
	unsigned addr_len;
	int dev_port, dev_id;	  /* -1 when absent */
	struct hw_pci *pci;	  /* NULL for virtual netdevs (bond, lo, veth) */
	struct hw_netdev *master; /* bond this netdev is enslaved to */
	struct hw_bond *bond;	  /* non-NULL for a bond master */
};

struct hw_pci {
	char bdf[HW_BDF_MAX];
	uint16_t vendor, device, sub_vendor, sub_device;
	uint32_t class_code; /* 0x020700 */
	char driver[32];     /* "" when unbound */
	int numa_node;	     /* -1 when the platform does not say */
	char local_cpulist[128];
	char root[24]; /* host bridge: "pci0000:36" */
	/* The root complex as k8s.io/dynamic-resource-allocation's deviceattribute derives the
	 * standard attribute resource.kubernetes.io/pcieRoot: the first component of the
	 * function's path under devices/, when that path starts with devices/pci and ends with
	 * the BDF; "" otherwise (deviceattribute then publishes no attribute). */
	char pcie_root[24];
	char (*path)[HW_BDF_MAX]; /* bridges from the root port down, excluding this function */
	size_t path_len;
	int sriov_totalvfs, sriov_numvfs; /* -1: not SR-IOV capable */
	struct hw_pci **vfs;		  /* PF: its VFs, by index */
	size_t n_vfs;
	struct hw_pci *physfn; /* VF: its PF */
	int vf_index;	       /* VF: N of the PF's virtfnN; -1 otherwise */
	bool is_gpu;
	struct hw_netdev **netdevs;
	size_t n_netdevs;
	struct hw_rdma_dev **rdma;
	size_t n_rdma;
};

struct hw_gpu {
	unsigned index; /* GPU<index>, in PCI bus order as nvidia-smi numbers them */
	struct hw_pci *pci;
	struct hw_rdma_dev *nearest; /* the RDMA device with the best relation; NULL if none */
	enum hw_topo nearest_rel;
};

struct hw_module {
	const char *name; /* static: one of the modules rdmak cares about */
	enum hw_module_state state;
};

struct hw_kernel {
	int netns_mode; /* 1 shared, 0 exclusive, -1 unknown (no ib_core) */
	struct hw_module *modules;
	size_t n_modules;
	int uverbs_abi; /* class/infiniband_verbs/abi_version, -1 when absent */
};

struct hw_node {
	struct hw_rdma_dev *rdma; /* sorted by name (strcmp, as the standard tools list them) */
	size_t n_rdma;
	struct hw_pci *pci; /* RDMA functions, their PFs/VFs, netdev owners, GPUs; by BDF */
	size_t n_pci;
	struct hw_netdev *netdevs; /* every netdev under sys/class/net, by name */
	size_t n_netdevs;
	struct hw_chardev *chardevs; /* uverbs, umad, issm, then rdma_cm */
	size_t n_chardevs;
	struct hw_gpu *gpus;
	size_t n_gpus;
	struct hw_kernel kernel;
	bool has_rdma_class; /* sys/class/infiniband exists */
	/* HW_LOAD_PARTIAL: what was left out because it could not be read, each by the path that
	 * failed (relative to the sysfs root) and its errno, devices and netdevs in name order */
	struct hw_error *skipped;
	size_t n_skipped;
};

/* What to read beyond the always-read core (devices, ports with GID 0, netdevs, PCI, char
 * devices, kernel). GID tables cost gid_tbl_len reads per port (8 on IB, 255 on RoCE), pkey
 * tables 128 per IB port: on 1016 VFs the pkeys alone are 130 000 reads. */
enum {
	HW_LOAD_GIDS = 1u << 0,
	HW_LOAD_PKEYS = 1u << 1,
	HW_LOAD_ALL = HW_LOAD_GIDS | HW_LOAD_PKEYS,
	/* One network namespace's view (a sysfs mounted in it, nl_netns_sysfs): its RDMA devices
	 * and netdevs, and of the PCI tree (which every namespace sees whole) only their functions
	 * and a VF's PF; no char devices, kernel modules or GPUs (the host's, already known). */
	HW_LOAD_NETNS = 1u << 2,
	/* A device or netdev of class/infiniband or class/net that cannot be read (its folder a
	 * symbolic link loop, an attribute a FIFO: nothing a kernel makes, but a tree someone could
	 * hand over), or one port of a device, is left out and listed in node->skipped, rather than
	 * failing the load: a role that serves what it can (the exporter). Out of memory still
	 * fails it. */
	HW_LOAD_PARTIAL = 1u << 3,
	/* The GID tables of Ethernet (RoCE) ports only: what the doctor's node checks read
	 * (roce.gids, bond.lag) without an IB node's VFs' tables. */
	HW_LOAD_ROCE_GIDS = 1u << 4,
};

int hw_load(struct hw_ctx *ctx, unsigned flags, struct hw_node **ret, struct hw_error *err);
void hw_node_free(struct hw_node *node);

/* Lookups: NULL when absent. */
struct hw_rdma_dev *hw_node_rdma(const struct hw_node *node, const char *name);
struct hw_netdev *hw_node_netdev(const struct hw_node *node, const char *name);
struct hw_pci *hw_node_pci(const struct hw_node *node, const char *bdf);
struct hw_port *hw_rdma_port(const struct hw_rdma_dev *dev, unsigned num);
/* The module entry by name, or NULL if rdmak does not track it. */
const struct hw_module *hw_node_module(const struct hw_node *node, const char *name);

/* How many bridges two functions' PCIe paths share from the root port down (0 when they meet
 * only at a host bridge or not at all): the bridges past it are the ones between them. */
size_t hw_pci_common_path(const struct hw_pci *a, const struct hw_pci *b);
/* PCIe relation between two functions of the same node. */
enum hw_topo hw_topo_relation(const struct hw_pci *a, const struct hw_pci *b);

/* The PCIe link a function (or bridge) reports: current_link_speed/width and the maximum it
 * could train at. For an endpoint or a switch upstream port it is the link above it, for a root
 * or downstream port the link below it. Values are 0 where the file is absent (VFs report
 * none) or says "Unknown". Read on demand: only `bench` needs them, for a few functions. */
struct hw_pci_link {
	double cur_gts, max_gts;       /* 16.0 = "16.0 GT/s PCIe" */
	unsigned cur_width, max_width; /* 16 = x16 */
};
int hw_pci_read_link(struct hw_ctx *ctx, const char *bdf, struct hw_pci_link *ret);

/* The device node of GPU<index> (`nvidia<index>` under the devfs root): whether this container
 * was given that GPU. 0 with ret->present false when absent. */
int hw_gpu_read_devnode(struct hw_ctx *ctx, const struct hw_gpu *gpu, struct hw_devnode *ret);

/* One PCI function read on demand, without loading the node (the CNI plugin's deviceID):
 * its netdevs (bus/pci/devices/<bdf>/net/) and RDMA devices (.../infiniband/) as the sysfs root
 * shows them now, its driver, and for a VF its PF, the PF's netdevs and its index among the
 * PF's virtfnN. -ENOENT: no such function; -EINVAL: not a BDF. Clear with
 * hw_pci_function_clear(). */
struct hw_pci_function {
	char bdf[HW_BDF_MAX];
	char driver[32]; /* "" when unbound */
	char **netdevs;	 /* sorted names */
	size_t n_netdevs;
	char **rdma;
	size_t n_rdma;
	char physfn[HW_BDF_MAX]; /* "" when not a VF */
	int vf_index;		 /* -1 when not a VF (or not listed by its PF) */
	char **pf_netdevs;
	size_t n_pf_netdevs;
};
int hw_pci_read_function(struct hw_ctx *ctx, const char *bdf, struct hw_pci_function *ret);
void hw_pci_function_clear(struct hw_pci_function *f);
/* The PCI function behind a netdev (class/net/<ifname>/device): 1 and bdf, 0 for a virtual
 * netdev, -ENOENT when there is no such netdev under the sysfs root. */
int hw_netdev_read_pci(struct hw_ctx *ctx, const char *ifname, char bdf[HW_BDF_MAX]);
/* The software RDMA device (rxe, siw) made on a netdev: the one whose class/infiniband/<dev>/parent
 * names it. 1 and name, 0 none, -errno. */
int hw_netdev_read_soft_rdma(struct hw_ctx *ctx, const char *ifname, char name[HW_NAME_MAX]);

/* Re-read the live state of one port / netdev (for health polling without a full reload).
 * Return 0, or -errno (-ENOENT: the device or port is gone). */
int hw_port_read_state(struct hw_ctx *ctx, const char *ibdev, unsigned port,
		       enum hw_port_state *state, enum hw_phys_state *phys_state);
int hw_netdev_read_carrier(struct hw_ctx *ctx, const char *ifname, int *carrier);

/* What went wrong with a port attribute, its path under root (NULL or "": relative to the sysfs
 * root): "unexpected content \"xyz\" in ROOT/class/infiniband/mlx5_0/ports/1/state", "empty
 * ROOT/...", or "ROOT/...: Is a directory". Returns buf. */
const char *hw_attr_error_str(const struct hw_port *p, const struct hw_attr_error *e,
			      const char *root, char *buf, size_t n);

/* ACTIVE or ACTIVE_DEFER: the port passes traffic. The one test every role uses. */
bool hw_port_state_is_active(enum hw_port_state s);

/* Iterate over every port of a node, device by device: for (p = NULL; (p = hw_node_next_port(node, p));).
 * HW_NODE_FOREACH_PORT and HW_DEV_FOREACH_PORT declare the loop variable. */
struct hw_port *hw_node_next_port(const struct hw_node *node, const struct hw_port *prev);
#define HW_NODE_FOREACH_PORT(node, p)                                                              \
	for (struct hw_port *p = hw_node_next_port((node), NULL); p;                               \
	     p = hw_node_next_port((node), p))
#define HW_DEV_FOREACH_PORT(dev, p)                                                                \
	for (struct hw_port *p = (dev)->ports; p && p < (dev)->ports + (dev)->n_ports; p++)

/* Names. */
const char *
hw_port_state_name(enum hw_port_state s); /* "DOWN", ..., "ACTIVE_DEFER" (the kernel's and
							     `rdma link`'s names), "UNKNOWN" */
const char *
hw_phys_state_name(enum hw_phys_state s); /* "Sleep", ..., "LinkUp" (the kernel's), "<unknown>" */
const char *hw_link_layer_name(enum hw_link_layer ll);	  /* "InfiniBand", "Ethernet", "Unknown" */
const char *hw_topo_name(enum hw_topo t);		  /* "PIX", ..., "SYS", "?" */
const char *hw_chardev_kind_name(enum hw_chardev_kind k); /* "uverbs", "umad", "issm", "rdma_cm" */
const char *hw_netdev_kind_name(enum hw_netdev_kind k);	  /* "ether", "ipoib", "bond", "other" */
const char *hw_ndev_via_name(enum hw_ndev_via v); /* "ipoib-guid", "gid-ndev", "pci-function" */
const char *hw_module_state_name(enum hw_module_state s); /* "absent", "loaded", "builtin" */

/* ---- parsers of sysfs strings (buffer in, value out; each has a fuzz target) ---------- */

/* "4: ACTIVE" -> 4 and "ACTIVE" (also phys_state: "5: LinkUp"). name may be NULL. */
int hw_parse_state(const char *s, int *num, char *name, size_t name_len);
/* "200 Gb/sec (4X HDR)" / "2.5 Gb/sec (1X SDR)" / "100 Gb/sec (2X HDR)" */
int hw_parse_rate(const char *s, struct hw_rate *ret);
/* "1: CA" */
int hw_parse_node_type(const char *s, int *num, char *name, size_t name_len);
/* "fe80:0000:0000:0000:e8eb:d303:0072:1415" -> 16 bytes */
int hw_parse_gid(const char *s, uint8_t gid[16]);
/* "active-backup 1" -> "active-backup", 1 */
int hw_parse_bond_mode(const char *s, char *name, size_t name_len, int *id);
/* "231:192" */
int hw_parse_devnum(const char *s, unsigned *major, unsigned *minor);
/* "16.0 GT/s PCIe" (pci_speed_string), also the older "8 GT/s" / "2.5 GT/s" -> 16.0, 8, 2.5;
 * "Unknown" and anything else -> -EINVAL. */
int hw_parse_link_speed(const char *s, double *gts);
/* The ACS Control register from a PCI config space dump (sysfs `config`: 4096 bytes for root,
 * the first 64 for anyone else), by a walk of the PCIe extended capability list from 0x100.
 * Returns the register (0..0xffff), -1 when there is no ACS capability, -2 when the dump does
 * not reach the extended space. */
int hw_pci_acs_control(const uint8_t *cfg, size_t len);
#define HW_PCI_ACS_P2P_REQUEST_REDIRECT	   (1u << 2)
#define HW_PCI_ACS_P2P_COMPLETION_REDIRECT (1u << 3)
/* The leading decimal number of an attribute the health poll re-reads ("4: ACTIVE" -> 4,
 * carrier "1" -> 1), 0..255; -1 when it does not start with one (an empty file). */
int hw_parse_attr_num(const char *s);
/* "0000:37:00.0" validity */
bool hw_is_bdf(const char *s);

#endif
