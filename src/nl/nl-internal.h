/* SPDX-License-Identifier: Apache-2.0 */
/* Internals shared by the files of src/nl, and the message builders the unit tests read back
 * (tests/unit/test_nl.c checks the requests this kernel cannot answer: IPoIB, VF GUIDs, RDMA). */
#ifndef RDMAK_NL_INTERNAL_H
#define RDMAK_NL_INTERNAL_H

#include <netlink/msg.h>
#include <netlink/netlink.h>

#include "nl/nl.h"

#define NL_ERRMSG_MAX 256

struct nl_rt {
	struct nl_sock *sk;
	char errmsg[NL_ERRMSG_MAX];
};

/* A netlink socket of another protocol (NETLINK_RDMA) opened as nl_rt_open() opens rtnetlink's,
 * for the same nl_rt_talk(): -EPROTONOSUPPORT when the kernel has no such subsystem. */
int nl_rt_open_protocol(int netns_fd, int protocol, struct nl_rt **ret);

/* One request: send msg (consumed) and read the answer until its ACK, its error or the end
 * of a dump; each data message goes to parse (may be NULL). Returns 0 or the kernel's -errno,
 * with its extended-ack text in rt->errmsg. A dump the kernel marked interrupted (the set
 * changed while it was read: NLM_F_DUMP_INTR) returns -EINTR after the whole answer is read. */
int nl_rt_talk(struct nl_rt *rt, struct nl_msg *msg, int (*parse)(struct nlmsghdr *h, void *ud),
	       void *ud);
/* nl_rt_talk() for the requests about a PF's VF table (src/nl/vf.c): its own symbol, so that a
 * test build links -Wl,--wrap=nl_rt_talk_vf and answers them as an SR-IOV PF would (no kernel
 * here has one; tests/seams/vf_standin.c). The shipped programs send them to the kernel. */
int nl_rt_talk_vf(struct nl_rt *rt, struct nl_msg *msg, int (*parse)(struct nlmsghdr *h, void *ud),
		  void *ud);
/* A request: its type, flags and family header (hdr_len bytes, 0: none); NULL out of memory. */
struct nl_msg *nl_rt_msg(int type, int flags, const void *hdr, size_t hdr_len);
/* nl_rt_talk() for dumps, of any netlink protocol: req (consumed; sent with NLM_F_DUMP; NULL,
 * a failed nl_rt_msg(), is -ENOMEM) is sent again while the kernel reports the dump interrupted
 * (3 tries; the last one's partial answer is kept, as a set that keeps changing cannot be read
 * whole: never -EINTR). reset is called before each retry to drop what the last try collected. */
int nl_rt_dump(struct nl_rt *rt, struct nl_msg *req, int (*parse)(struct nlmsghdr *h, void *ud),
	       void (*reset)(void *ud), void *ud);

/* Grow a malloc'd array by one zeroed element; returns it or NULL. */
void *nl_array_add(void **array, size_t *n, size_t size);

/* Builders (the message is the caller's; nlmsg_free() it). */
int nl_build_ipoib_add(const char *name, int parent_ifindex, uint16_t pkey, int netns_fd,
		       const struct nl_link_new *set, struct nl_msg **ret);
int nl_build_vf_guid(int pf_ifindex, int type, uint32_t vf, uint64_t guid, struct nl_msg **ret);
/* src/nl/vf.c: one RTM_SETLINK on the PF per VF setting; the VF table's GETLINK and its parser
 * (1: *ret is VF vf, 0: the answer has no such VF, -EBADMSG). type: IFLA_VF_SPOOFCHK, IFLA_VF_TRUST. */
int nl_build_vf_mac(int pf_ifindex, uint32_t vf, const uint8_t *mac, struct nl_msg **ret);
int nl_build_vf_vlan(int pf_ifindex, uint32_t vf, uint32_t vlan, uint32_t qos, uint16_t proto,
		     struct nl_msg **ret);
int nl_build_vf_rate(int pf_ifindex, uint32_t vf, uint32_t min_tx_rate, uint32_t max_tx_rate,
		     struct nl_msg **ret);
int nl_build_vf_flag(int pf_ifindex, int type, uint32_t vf, bool on, struct nl_msg **ret);
int nl_build_vf_link_state(int pf_ifindex, uint32_t vf, uint32_t state, struct nl_msg **ret);
int nl_build_vf_get(int pf_ifindex, struct nl_msg **ret);
int nl_parse_vf_info(const struct nlmsghdr *h, uint32_t vf, struct nl_vf_info *ret);
/* The one reader of a PF's VF table (IFLA_VFINFO_LIST of an RTM_NEWLINK): each VF in turn to
 * each(), which returns 0 to go on, > 0 to stop (returned), < 0 an error (returned). 0 when the
 * message is no RTM_NEWLINK or lists no VF; -EBADMSG for a malformed list. */
int nl_parse_vf_table(const struct nlmsghdr *h, int (*each)(const struct nl_vf_info *v, void *ud),
		      void *ud);

/* RDMA netlink requests (the message is the caller's; 0 or -ENOMEM). */
int nl_rdma_build_set_netns(uint32_t index, int netns_fd, struct nl_msg **ret);
int nl_rdma_build_sys_get(struct nl_msg **ret);
int nl_rdma_build_dev_dump(struct nl_msg **ret);
/* `rdma statistic show link DEV/PORT`: the port's default counters. */
int nl_rdma_build_stat_get(uint32_t dev_index, uint32_t port, struct nl_msg **ret);
/* `rdma statistic qp show`: a dump of the device's counter objects; port 0: every port. */
int nl_rdma_build_stat_qp_dump(uint32_t dev_index, uint32_t port, struct nl_msg **ret);

/* The parsers of the answers, over one message's bytes (len: what is left of the buffer). A
 * message of another command, one with an attribute of the wrong size or an unterminated
 * string, or one that breaks the layout nldev.c writes (a counter entry without its name or
 * value, a counter without its id), is -EBADMSG and nothing is written. */
int nl_rdma_stat_parse(const void *buf, size_t len, struct nl_rdma_stat *ret);
/* Appends the counters of one dump message to *v (*n of them). */
int nl_rdma_counters_parse(const void *buf, size_t len, struct nl_rdma_counter **v, size_t *n);

/* The NLMSGERR_ATTR_MSG text of an error or ACK message, "" when it carries none. */
void nl_extack_msg(const struct nlmsghdr *h, char *buf, size_t len);
/* The error an NLMSG_DONE carries when the kernel could not finish the dump (a dump callback's
 * -errno, e.g. an unknown device index), 0 when it finished. */
int nl_done_error(const struct nlmsghdr *h);

#endif
