/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA netlink answers, built attribute by attribute the way the kernel's
 * drivers/infiniband/core/nldev.c writes them, for a kernel without RDMA (this one):
 *   - a device of a RDMA_NLDEV_CMD_GET dump: fill_dev_info (fill_nldev_handle, the last port,
 *     the capability flags, firmware version, node and system image GUIDs, node type);
 *   - a port's default counters (RDMA_NLDEV_CMD_STAT_GET): stat_get_doit_default_counter
 *     (fill_nldev_handle, the port, then RDMA_NLDEV_ATTR_STAT_HWCOUNTERS of
 *     rdma_nl_stat_hwcounter_entry);
 *   - a dump of counter objects: res_get_common_dumpit (fill_nldev_handle, then the table
 *     RDMA_NLDEV_ATTR_STAT_COUNTER and its entries opened with nla_nest_start_noflag: no
 *     NLA_F_NESTED on those two, unlike the others) around fill_res_counter_entry (port,
 *     counter id, fill_stat_counter_mode, fill_stat_counter_qps, fill_stat_counter_hwcounters).
 * nla_put_u64_64bit puts a RDMA_NLDEV_ATTR_PAD before a u64 whose payload would be misaligned
 * on architectures without efficient unaligned access; with_pad writes one as they do. The
 * kernel keeps a nest that stays empty (a counter without QPs), so these do too.
 * Each returns a libnl message (nlmsg_hdr() for its bytes; nlmsg_free() it); a failure to
 * build one, which only a test's own mistake can cause, aborts. */
#ifndef RDMAK_TESTS_NLDEV_REPLIES_H
#define RDMAK_TESTS_NLDEV_REPLIES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <rdma/rdma_netlink.h>

/* The kernel's answers are at most a page; some room for a test's own additions. */
#define NLDEV_MSG_MAX 16384

struct nldev_hw {
	const char *name;
	uint64_t value;
};

struct nldev_counter {
	uint32_t port, id, mode;
	int qp_type;	  /* -1: not put */
	int64_t pid;	  /* -1: not put */
	const char *kern; /* NULL: not put */
	const uint32_t *qpns;
	unsigned n_qpns;
	const struct nldev_hw *hw;
	unsigned n_hw;
};

static inline void nldev_ok(int r)
{
	if (r < 0)
		abort();
}

static inline struct nl_msg *nldev_msg(int cmd, uint32_t seq, uint16_t flags)
{
	struct nl_msg *m = nlmsg_alloc_size(NLDEV_MSG_MAX);

	if (!m || !nlmsg_put(m, 0, seq, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd), 0, flags))
		abort();
	return m;
}

static inline struct nl_msg *nldev_stat_header(uint32_t seq, uint16_t flags)
{
	return nldev_msg(RDMA_NLDEV_CMD_STAT_GET, seq, flags);
}

static inline void nldev_handle(struct nl_msg *m, uint32_t index, const char *name)
{
	nldev_ok(nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, index));
	nldev_ok(nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, name));
}

static inline struct nlattr *nldev_nest(struct nl_msg *m, int type)
{
	struct nlattr *a = nla_nest_start(m, type);

	if (!a)
		abort();
	return a;
}

/* nla_nest_start_noflag */
static inline struct nlattr *nldev_nest_noflag(struct nl_msg *m, int type)
{
	struct nlattr *a = nldev_nest(m, type);

	a->nla_type = (uint16_t)type;
	return a;
}

static inline void nldev_nest_end(struct nl_msg *m, struct nlattr *a)
{
	nldev_ok(nla_nest_end_keep_empty(m, a));
}

/* One device of nldev_get_dumpit's answer (flags: NLM_F_MULTI, NLM_F_DUMP_INTR ...). */
static inline struct nl_msg *nldev_dev(uint32_t seq, uint16_t flags, uint32_t index,
				       const char *name, uint32_t ports, uint64_t node_guid)
{
	struct nl_msg *m = nldev_msg(RDMA_NLDEV_CMD_GET, seq, flags);

	nldev_handle(m, index, name);
	nldev_ok(nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, ports));
	nldev_ok(nla_put_u64(m, RDMA_NLDEV_ATTR_CAP_FLAGS, 0x1c4ull));
	nldev_ok(nla_put_string(m, RDMA_NLDEV_ATTR_FW_VERSION, "16.35.2000"));
	nldev_ok(nla_put_u64(m, RDMA_NLDEV_ATTR_NODE_GUID, node_guid));
	nldev_ok(nla_put_u64(m, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, node_guid));
	nldev_ok(nla_put_u8(m, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, 1));
	return m;
}

static inline void nldev_hwcounters(struct nl_msg *m, const struct nldev_hw *hw, unsigned n,
				    bool with_pad)
{
	struct nlattr *table = nldev_nest(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);

	for (unsigned i = 0; i < n; i++) {
		struct nlattr *entry = nldev_nest(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY);

		nldev_ok(nla_put_string(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, hw[i].name));
		if (with_pad)
			nldev_ok(nla_put(m, RDMA_NLDEV_ATTR_PAD, 0, NULL));
		nldev_ok(nla_put_u64(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, hw[i].value));
		nldev_nest_end(m, entry);
	}
	nldev_nest_end(m, table);
}

/* stat_get_doit_default_counter's answer. */
static inline struct nl_msg *nldev_port_stat(uint32_t seq, uint32_t index, const char *name,
					     uint32_t port, const struct nldev_hw *hw, unsigned n,
					     bool with_pad)
{
	struct nl_msg *m = nldev_stat_header(seq, 0);

	nldev_handle(m, index, name);
	nldev_ok(nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, port));
	nldev_hwcounters(m, hw, n, with_pad);
	return m;
}

/* One message of nldev_res_get_counter_dumpit (flags: NLM_F_MULTI, NLM_F_DUMP_INTR ...). */
static inline struct nl_msg *nldev_counter_dump(uint32_t seq, uint16_t flags, uint32_t index,
						const char *name, const struct nldev_counter *c,
						unsigned n)
{
	struct nl_msg *m = nldev_stat_header(seq, flags);
	struct nlattr *table;

	nldev_handle(m, index, name);
	table = nldev_nest_noflag(m, RDMA_NLDEV_ATTR_STAT_COUNTER);
	for (unsigned i = 0; i < n; i++) {
		struct nlattr *entry = nldev_nest_noflag(m, RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY),
			      *qps;

		nldev_ok(nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, c[i].port));
		nldev_ok(nla_put_u32(m, RDMA_NLDEV_ATTR_STAT_COUNTER_ID, c[i].id));
		nldev_ok(nla_put_u32(m, RDMA_NLDEV_ATTR_STAT_MODE, c[i].mode));
		if (c[i].qp_type >= 0)
			nldev_ok(nla_put_u8(m, RDMA_NLDEV_ATTR_RES_TYPE, (uint8_t)c[i].qp_type));
		if (c[i].kern)
			nldev_ok(nla_put_string(m, RDMA_NLDEV_ATTR_RES_KERN_NAME, c[i].kern));
		else if (c[i].pid >= 0)
			nldev_ok(nla_put_u32(m, RDMA_NLDEV_ATTR_RES_PID, (uint32_t)c[i].pid));
		qps = nldev_nest(m, RDMA_NLDEV_ATTR_RES_QP);
		for (unsigned q = 0; q < c[i].n_qpns; q++) {
			struct nlattr *qe = nldev_nest(m, RDMA_NLDEV_ATTR_RES_QP_ENTRY);

			nldev_ok(nla_put_u32(m, RDMA_NLDEV_ATTR_RES_LQPN, c[i].qpns[q]));
			nldev_nest_end(m, qe);
		}
		nldev_nest_end(m, qps);
		nldev_hwcounters(m, c[i].hw, c[i].n_hw, false);
		nldev_nest_end(m, entry);
	}
	nldev_nest_end(m, table);
	return m;
}

#endif
