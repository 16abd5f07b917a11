/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA netlink answers to RDMA_NLDEV_CMD_STAT_GET, built attribute by attribute the way the
 * kernel's drivers/infiniband/core/nldev.c writes them, for a kernel without RDMA (this one):
 *   - a port's default counters: stat_get_doit_default_counter (fill_nldev_handle, the port,
 *     then RDMA_NLDEV_ATTR_STAT_HWCOUNTERS of rdma_nl_stat_hwcounter_entry);
 *   - a dump of counter objects: res_get_common_dumpit (fill_nldev_handle, then the table
 *     RDMA_NLDEV_ATTR_STAT_COUNTER and its entries opened with nla_nest_start_noflag: no
 *     NLA_F_NESTED on those two, unlike the others) around fill_res_counter_entry (port,
 *     counter id, fill_stat_counter_mode, fill_stat_counter_qps, fill_stat_counter_hwcounters).
 * nla_put_u64_64bit puts a RDMA_NLDEV_ATTR_PAD before a u64 whose payload would be misaligned
 * on architectures without efficient unaligned access; with_pad writes one as they do. */
#ifndef RDMAK_TESTS_NLDEV_REPLIES_H
#define RDMAK_TESTS_NLDEV_REPLIES_H

#include <libmnl/libmnl.h>
#include <rdma/rdma_netlink.h>
#include <stdbool.h>
#include <stdint.h>

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

static inline struct nlmsghdr *nldev_stat_header(void *buf, uint32_t seq, uint16_t flags)
{
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);

	h->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_STAT_GET);
	h->nlmsg_flags = flags;
	h->nlmsg_seq = seq;
	return h;
}

static inline void nldev_handle(struct nlmsghdr *h, uint32_t index, const char *name)
{
	mnl_attr_put_u32(h, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	mnl_attr_put_strz(h, RDMA_NLDEV_ATTR_DEV_NAME, name);
}

static inline void nldev_hwcounters(struct nlmsghdr *h, const struct nldev_hw *hw, unsigned n,
				    bool with_pad)
{
	struct nlattr *table = mnl_attr_nest_start(h, RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);

	for (unsigned i = 0; i < n; i++) {
		struct nlattr *entry = mnl_attr_nest_start(h, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY);

		mnl_attr_put_strz(h, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME, hw[i].name);
		if (with_pad)
			mnl_attr_put(h, RDMA_NLDEV_ATTR_PAD, 0, NULL);
		mnl_attr_put_u64(h, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE, hw[i].value);
		mnl_attr_nest_end(h, entry);
	}
	mnl_attr_nest_end(h, table);
}

/* stat_get_doit_default_counter's answer. */
static inline struct nlmsghdr *nldev_port_stat(void *buf, uint32_t seq, uint32_t index,
					       const char *name, uint32_t port,
					       const struct nldev_hw *hw, unsigned n, bool with_pad)
{
	struct nlmsghdr *h = nldev_stat_header(buf, seq, 0);

	nldev_handle(h, index, name);
	mnl_attr_put_u32(h, RDMA_NLDEV_ATTR_PORT_INDEX, port);
	nldev_hwcounters(h, hw, n, with_pad);
	return h;
}

/* nla_nest_start_noflag */
static inline struct nlattr *nldev_nest_noflag(struct nlmsghdr *h, uint16_t type)
{
	struct nlattr *a = mnl_attr_nest_start(h, type);

	a->nla_type = type;
	return a;
}

/* One message of nldev_res_get_counter_dumpit. */
static inline struct nlmsghdr *nldev_counter_dump(void *buf, uint32_t seq, uint32_t index,
						  const char *name, const struct nldev_counter *c,
						  unsigned n)
{
	struct nlmsghdr *h = nldev_stat_header(buf, seq, NLM_F_MULTI);
	struct nlattr *table;

	nldev_handle(h, index, name);
	table = nldev_nest_noflag(h, RDMA_NLDEV_ATTR_STAT_COUNTER);
	for (unsigned i = 0; i < n; i++) {
		struct nlattr *entry = nldev_nest_noflag(h, RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY),
			      *qps;

		mnl_attr_put_u32(h, RDMA_NLDEV_ATTR_PORT_INDEX, c[i].port);
		mnl_attr_put_u32(h, RDMA_NLDEV_ATTR_STAT_COUNTER_ID, c[i].id);
		mnl_attr_put_u32(h, RDMA_NLDEV_ATTR_STAT_MODE, c[i].mode);
		if (c[i].qp_type >= 0)
			mnl_attr_put_u8(h, RDMA_NLDEV_ATTR_RES_TYPE, (uint8_t)c[i].qp_type);
		if (c[i].kern)
			mnl_attr_put_strz(h, RDMA_NLDEV_ATTR_RES_KERN_NAME, c[i].kern);
		else if (c[i].pid >= 0)
			mnl_attr_put_u32(h, RDMA_NLDEV_ATTR_RES_PID, (uint32_t)c[i].pid);
		qps = mnl_attr_nest_start(h, RDMA_NLDEV_ATTR_RES_QP);
		for (unsigned q = 0; q < c[i].n_qpns; q++) {
			struct nlattr *qe = mnl_attr_nest_start(h, RDMA_NLDEV_ATTR_RES_QP_ENTRY);

			mnl_attr_put_u32(h, RDMA_NLDEV_ATTR_RES_LQPN, c[i].qpns[q]);
			mnl_attr_nest_end(h, qe);
		}
		mnl_attr_nest_end(h, qps);
		nldev_hwcounters(h, c[i].hw, c[i].n_hw, false);
		mnl_attr_nest_end(h, entry);
	}
	mnl_attr_nest_end(h, table);
	return h;
}

#endif
