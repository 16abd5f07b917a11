/* SPDX-License-Identifier: Apache-2.0 */
/* attach: the record a hostdev attachment of rdmak-cni leaves in its state dir, and the one walk
 * over every record of a state dir. rdmak-cni writes them (what the device was called on the
 * host, its MAC and MTU, its PCI function and RDMA device, the GUID it had and the one it may
 * have put into a partition), before its first change, so that a plugin killed half-way still
 * tells DEL and GC what to give back; `rdmak fabric` reads them as the node's partition ledger.
 * One small JSON file per attachment, <dir>/<network>/<id>:<ifname>, replaced atomically. */
#ifndef RDMAK_ATTACH_H
#define RDMAK_ATTACH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cnispec/cnispec.h"
#include "hw/hw.h"
#include "nl/nl.h"

/* Where a network that names none keeps its records. */
#define ATTACH_DEFAULT_DIR "/var/lib/cni/rdmak-cni"
/* The bits a record's vf_set may hold: cni.h's CNICONF_VF_* (the settings rdmak-cni sets through a
 * VF's PF), of which the record is only the store. */
#define ATTACH_VF_BITS	       ((1u << 6) - 1)
#define ATTACH_FABRIC_NAME_MAX 63
/* The addresses a record keeps of what the pod got: KEP-4817's limit on a device's networkData.ips,
 * where `rdmak dra` publishes them. */
#define ATTACH_POD_IPS_MAX 16

struct attach_record {
	char netns[4096];
	char host_name[NL_IFNAMSIZ]; /* the device's name on the host before ADD */
	int host_ifindex;
	uint8_t host_mac[32];
	unsigned host_mac_len;
	unsigned host_mtu;
	bool host_up;		       /* administratively up before ADD: up again after DEL */
	char pci[HW_BDF_MAX];	       /* "" for a netdev without a PCI function */
	char rdma_dev[NL_RDMA_NAMSIZ]; /* "" when none */
	bool rdma_moved;
	char pf[NL_IFNAMSIZ]; /* GUID set through this PF */
	int vf_index;
	bool guid_set;
	uint64_t guid_orig;
	bool has_pkey;
	uint16_t pkey;
	bool fabric; /* fabric_guid may be in pkey at the fabric manager */
	uint64_t fabric_guid;
	/* the node's fabric (a DNS-1123 label) it was added through; "": a record written before
	 * fabrics were named */
	char fabric_name[ATTACH_FABRIC_NAME_MAX + 1];
	/* this attachment (or another of this node before it) put fabric_guid into pkey: false
	 * for a GUID that was a member already, which is never this node's to remove */
	bool fabric_added;
	unsigned
		vf_set; /* the cni role's CNICONF_VF_* bits set through the PF: put back from vf_orig */
	struct nl_vf_info vf_orig; /* the VF's settings before ADD */
	/* what the pod got, once ADD is done ("" and none before): the interface's hardware
	 * address and its addresses as "addr/len", for a DRA driver's claim status */
	char pod_mac[3 * 32 + 1];
	char pod_ips[ATTACH_POD_IPS_MAX][CNISPEC_PREFIX_STRLEN];
	size_t n_pod_ips;
};

/* The record of (network, container ID, ifname) under dir: <dir>/<network>/<id>:<ifname>.
 * load: 1 found, 0 none. save is atomic (fileio_write_atomic_at). */
int attach_record_save(const char *dir, const char *network, const char *id, const char *ifname,
		       const struct attach_record *st);
int attach_record_load(const char *dir, const char *network, const char *id, const char *ifname,
		       struct attach_record *ret);
int attach_record_remove(const char *dir, const char *network, const char *id, const char *ifname);
/* Remove the temp files that writers killed in attach_record_save() left (of one attachment, or
 * with id NULL of the whole network), never one a live writer holds. *ret_removed may be NULL. */
int attach_record_tidy(const char *dir, const char *network, const char *id, const char *ifname,
		       size_t *ret_removed);
/* The records of a network: parallel arrays of container IDs and ifnames (strv). */
int attach_record_list(const char *dir, const char *network, char ***ret_ids, char ***ret_ifnames,
		       size_t *ret_n);
/* The same for the rdma link's records, beside hostdev's under another name
 * (<id>:<ifname>:rdma, which attach_record_list skips): a chain of hostdev then rdma keeps both. */
int attach_record_save_rdma(const char *dir, const char *network, const char *id,
			    const char *ifname, const struct attach_record *st);
int attach_record_load_rdma(const char *dir, const char *network, const char *id,
			    const char *ifname, struct attach_record *ret);
int attach_record_remove_rdma(const char *dir, const char *network, const char *id,
			      const char *ifname);
int attach_record_list_rdma(const char *dir, const char *network, char ***ret_ids,
			    char ***ret_ifnames, size_t *ret_n);
/* Parse a record's text (the fuzzer's other entry). */
int attach_record_parse(const char *buf, size_t len, struct attach_record *ret);

/* Whether the pod of a record is still there, by its network namespace's path: 1 while the path
 * is a network namespace (the runtime removes it with the pod), 0 when it is gone from a folder
 * this process can see, <0 when this process cannot tell (why, at most n bytes, names what it
 * lacks): the path's folder missing or unreadable here (a container without the host's
 * /run/netns), or a /proc/PID path outside the host's PID namespace. A caller that removes
 * something for a gone pod must refuse to decide on <0, never take it for gone. */
int attach_netns_alive(const char *netns, char *why, size_t n);

/* Every hostdev record of every network under dir, in no particular order:
 * fn(userdata, network, id, ifname, record) for each one that reads (an unreadable record is
 * skipped: it names nothing the walk could use). A non-zero return of fn stops the walk and is
 * returned; else 0, or -errno when dir cannot be listed (a missing dir has no records). */
typedef int (*attach_walk_fn)(void *userdata, const char *network, const char *id,
			      const char *ifname, const struct attach_record *rec);
int attach_walk(const char *dir, attach_walk_fn fn, void *userdata);

#endif
