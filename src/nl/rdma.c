/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA netlink (NETLINK_RDMA, the nldev client): the subsystem's netns mode, the devices a
 * namespace sees, moving a device to another namespace, and the counters of `rdma statistic`.
 * The requests are the ones iproute2's `rdma system`, `rdma dev set DEV netns NS`, `rdma
 * statistic show` and `rdma statistic qp show` send. The socket, the exchange and the retry of
 * an interrupted dump are rtnetlink's (src/nl/rt.c, libnl-3) with another protocol, and the
 * answers are read with libnl's nla_parse against the attribute types the kernel declares: one
 * netlink library in rdmak, and the per-pod binary, which links it statically, needs no shared
 * object for it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <rdma/rdma_netlink.h>

#include "nl/nl-internal.h"
#include "util/cleanup.h"

struct nl_rdma {
	struct nl_rt *rt;
};

int nl_rdma_open(int netns_fd, struct nl_rdma **ret)
{
	_cleanup_free_ struct nl_rdma *r = calloc(1, sizeof(*r));
	int e;

	if (!r)
		return -ENOMEM;
	/* -EPROTONOSUPPORT: no RDMA subsystem in this kernel */
	e = nl_rt_open_protocol(netns_fd, NETLINK_RDMA, &r->rt);
	if (e < 0)
		return e;
	*ret = TAKE_PTR(r);
	return 0;
}

void nl_rdma_free(struct nl_rdma *r)
{
	if (!r)
		return;
	nl_rt_free(r->rt);
	free(r);
}

const char *nl_rdma_errmsg(const struct nl_rdma *r)
{
	return nl_rt_errmsg(r->rt);
}

/* An nldev request: the command, no family header (nldev has none). */
static struct nl_msg *nldev_msg(int cmd, int flags)
{
	return nl_rt_msg(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd), NLM_F_REQUEST | flags, NULL, 0);
}

/* *ret = msg if it was built whole (ok); otherwise it is freed: -ENOMEM. */
static int built(struct nl_msg *msg, bool ok, struct nl_msg **ret)
{
	if (!msg || !ok) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	*ret = msg;
	return 0;
}

int nl_rdma_build_set_netns(uint32_t index, int netns_fd, struct nl_msg **ret)
{
	struct nl_msg *msg = nldev_msg(RDMA_NLDEV_CMD_SET, NLM_F_ACK);

	return built(msg,
		     msg && nla_put_u32(msg, RDMA_NLDEV_ATTR_DEV_INDEX, index) == 0 &&
			     nla_put_u32(msg, RDMA_NLDEV_NET_NS_FD, (uint32_t)netns_fd) == 0,
		     ret);
}

int nl_rdma_build_sys_get(struct nl_msg **ret)
{
	return built(nldev_msg(RDMA_NLDEV_CMD_SYS_GET, NLM_F_ACK), true, ret);
}

int nl_rdma_build_dev_dump(struct nl_msg **ret)
{
	return built(nldev_msg(RDMA_NLDEV_CMD_GET, NLM_F_DUMP), true, ret);
}

/* The attributes read here, typed as the kernel's nldev_policy types them: a number of exactly
 * its size, a string NUL-terminated within its attribute. An answer that breaks one is refused
 * whole by nla_parse; no read goes past an attribute. */
static const struct nla_policy nldev_policy[RDMA_NLDEV_ATTR_MAX + 1] = {
	[RDMA_NLDEV_ATTR_DEV_INDEX] = { .type = NLA_U32, .maxlen = sizeof(uint32_t) },
	[RDMA_NLDEV_ATTR_DEV_NAME] = { .type = NLA_STRING },
	[RDMA_NLDEV_ATTR_PORT_INDEX] = { .type = NLA_U32, .maxlen = sizeof(uint32_t) },
	[RDMA_NLDEV_ATTR_NODE_GUID] = { .type = NLA_U64, .maxlen = sizeof(uint64_t) },
	[RDMA_NLDEV_SYS_ATTR_NETNS_MODE] = { .type = NLA_U8, .maxlen = sizeof(uint8_t) },
	[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS] = { .type = NLA_NESTED },
	[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY] = { .type = NLA_NESTED },
	[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME] = { .type = NLA_STRING },
	[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE] = { .type = NLA_U64,
							 .maxlen = sizeof(uint64_t) },
	[RDMA_NLDEV_ATTR_STAT_COUNTER] = { .type = NLA_NESTED },
	[RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY] = { .type = NLA_NESTED },
	[RDMA_NLDEV_ATTR_STAT_COUNTER_ID] = { .type = NLA_U32, .maxlen = sizeof(uint32_t) },
	[RDMA_NLDEV_ATTR_STAT_MODE] = { .type = NLA_U32, .maxlen = sizeof(uint32_t) },
	[RDMA_NLDEV_ATTR_RES_TYPE] = { .type = NLA_U8, .maxlen = sizeof(uint8_t) },
	[RDMA_NLDEV_ATTR_RES_PID] = { .type = NLA_U32, .maxlen = sizeof(uint32_t) },
	[RDMA_NLDEV_ATTR_RES_KERN_NAME] = { .type = NLA_STRING },
	[RDMA_NLDEV_ATTR_RES_QP] = { .type = NLA_NESTED },
	[RDMA_NLDEV_ATTR_RES_QP_ENTRY] = { .type = NLA_NESTED },
	[RDMA_NLDEV_ATTR_RES_LQPN] = { .type = NLA_U32, .maxlen = sizeof(uint32_t) },
};

/* The attributes of a message (the nldev family has no header) or of a nested one, by type;
 * -EBADMSG for one that breaks nldev_policy. */
static int parse_msg(const struct nlmsghdr *h, struct nlattr *tb[])
{
	return nlmsg_parse((struct nlmsghdr *)h, 0, tb, RDMA_NLDEV_ATTR_MAX, nldev_policy) < 0
		       ? -EBADMSG
		       : 0;
}

static int parse_nested(const struct nlattr *a, struct nlattr *tb[])
{
	return nla_parse_nested(tb, RDMA_NLDEV_ATTR_MAX, (struct nlattr *)a, nldev_policy) < 0
		       ? -EBADMSG
		       : 0;
}

/* A string attribute (NUL-terminated: nldev_policy) copied into buf, truncated to fit. */
static void copy_str(const struct nlattr *a, char *buf, size_t len)
{
	snprintf(buf, len, "%s", (const char *)nla_data(a));
}

/* Each attribute of a nested table, e.g. a dump's entries, which repeat one type. */
#define each_nested(a, parent, rem) nla_for_each_nested(a, (struct nlattr *)(parent), rem)

static int parse_sys(struct nlmsghdr *h, void *data)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX + 1];
	int *mode = data;

	if (parse_msg(h, tb) < 0)
		return -EBADMSG;
	if (tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE])
		*mode = nla_get_u8(tb[RDMA_NLDEV_SYS_ATTR_NETNS_MODE]);
	return 0;
}

int nl_rdma_netns_shared(struct nl_rdma *r, bool *ret_shared)
{
	struct nl_msg *msg;
	int mode = -1, e;

	e = nl_rdma_build_sys_get(&msg);
	if (e < 0)
		return e;
	e = nl_rt_talk(r->rt, msg, parse_sys, &mode);
	if (e < 0)
		return e;
	if (mode < 0)
		return -ENODATA; /* a kernel before 5.2 does not know namespaces for RDMA */
	*ret_shared = mode != 0;
	return 0;
}

struct dev_list {
	struct nl_rdma_dev *v;
	size_t n;
};

static int parse_dev(struct nlmsghdr *h, void *data)
{
	struct dev_list *dl = data;
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX + 1];
	struct nl_rdma_dev *slot;

	if (parse_msg(h, tb) < 0)
		return -EBADMSG;
	if (!tb[RDMA_NLDEV_ATTR_DEV_INDEX] || !tb[RDMA_NLDEV_ATTR_DEV_NAME])
		return 0;
	slot = nl_array_add((void **)&dl->v, &dl->n, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	slot->index = nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	copy_str(tb[RDMA_NLDEV_ATTR_DEV_NAME], slot->name, sizeof(slot->name));
	if (tb[RDMA_NLDEV_ATTR_PORT_INDEX]) /* fill_dev_info: rdma_end_port() */
		slot->ports = nla_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
	if (tb[RDMA_NLDEV_ATTR_NODE_GUID])
		slot->node_guid = nla_get_u64(tb[RDMA_NLDEV_ATTR_NODE_GUID]);
	return 0;
}

static void reset_dev(void *data)
{
	struct dev_list *dl = data;

	free(dl->v);
	*dl = (struct dev_list){ 0 };
}

int nl_rdma_dev_list(struct nl_rdma *r, struct nl_rdma_dev **ret, size_t *ret_n)
{
	struct dev_list dl = { 0 };
	struct nl_msg *msg;
	int e;

	e = nl_rdma_build_dev_dump(&msg);
	if (e < 0)
		return e;
	e = nl_rt_dump(r->rt, msg, parse_dev, reset_dev, &dl);
	if (e < 0) {
		free(dl.v);
		return e;
	}
	*ret = dl.v;
	*ret_n = dl.n;
	return 0;
}

int nl_rdma_dev_get(struct nl_rdma *r, const char *name, struct nl_rdma_dev *ret)
{
	struct nl_rdma_dev *v = NULL;
	size_t n = 0;
	int e;

	/* The kernel's RDMA_NLDEV_CMD_GET takes an index, never a name: find it in the dump. */
	e = nl_rdma_dev_list(r, &v, &n);
	if (e < 0)
		return e;
	e = 0;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].name, name)) {
			*ret = v[i];
			e = 1;
			break;
		}
	free(v);
	return e;
}

int nl_rdma_dev_set_netns(struct nl_rdma *r, uint32_t index, int netns_fd)
{
	struct nl_msg *msg;
	int e;

	if (netns_fd < 0)
		return -EBADF;
	e = nl_rdma_build_set_netns(index, netns_fd, &msg);
	return e < 0 ? e : nl_rt_talk(r->rt, msg, NULL, NULL);
}

/* ---- counters ------------------------------------------------------------------------------ */

int nl_rdma_build_stat_get(uint32_t dev_index, uint32_t port, struct nl_msg **ret)
{
	struct nl_msg *msg = nldev_msg(RDMA_NLDEV_CMD_STAT_GET, NLM_F_ACK);

	/* no RDMA_NLDEV_ATTR_STAT_RES: nldev_stat_get_doit answers the port's default counters */
	return built(msg,
		     msg && nla_put_u32(msg, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index) == 0 &&
			     nla_put_u32(msg, RDMA_NLDEV_ATTR_PORT_INDEX, port) == 0,
		     ret);
}

int nl_rdma_build_stat_qp_dump(uint32_t dev_index, uint32_t port, struct nl_msg **ret)
{
	struct nl_msg *msg = nldev_msg(RDMA_NLDEV_CMD_STAT_GET, NLM_F_DUMP);

	/* res_get_common_dumpit refuses a dump without the device; without a port it gives the
	 * counters of every port */
	return built(msg,
		     msg && nla_put_u32(msg, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index) == 0 &&
			     (!port || nla_put_u32(msg, RDMA_NLDEV_ATTR_PORT_INDEX, port) == 0) &&
			     nla_put_u32(msg, RDMA_NLDEV_ATTR_STAT_RES, RDMA_NLDEV_ATTR_RES_QP) ==
				     0,
		     ret);
}

/* RDMA_NLDEV_ATTR_STAT_HWCOUNTERS: entries of a name and a u64 (rdma_nl_stat_hwcounter_entry;
 * nla_put_u64_64bit may put a RDMA_NLDEV_ATTR_PAD before the value, which nla_parse skips). */
static int parse_hwcounters(const struct nlattr *table, struct nl_rdma_hwcounter **v, size_t *n)
{
	struct nlattr *entry;
	int rem;

	each_nested(entry, table, rem)
	{
		struct nlattr *tb[RDMA_NLDEV_ATTR_MAX + 1];
		struct nlattr *name, *value;
		struct nl_rdma_hwcounter *slot;

		if (nla_type(entry) != RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
			continue;
		if (parse_nested(entry, tb) < 0)
			return -EBADMSG;
		name = tb[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME];
		value = tb[RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE];
		/* iproute2's res_get_hwcounters refuses an entry without either too */
		if (!name || !*(const char *)nla_data(name) || !value)
			return -EBADMSG;
		slot = nl_array_add((void **)v, n, sizeof(*slot));
		if (!slot)
			return -ENOMEM;
		copy_str(name, slot->name, sizeof(slot->name));
		slot->value = nla_get_u64(value);
	}
	return 0;
}

void nl_rdma_stat_clear(struct nl_rdma_stat *s)
{
	if (!s)
		return;
	free(s->hw);
	s->hw = NULL;
	s->n_hw = 0;
}

/* The header of a STAT_GET answer of len bytes, or NULL. */
static const struct nlmsghdr *stat_msg(const void *buf, size_t len)
{
	const struct nlmsghdr *h = buf;

	if (!nlmsg_ok(h, (int)(len > INT32_MAX ? INT32_MAX : len)) ||
	    h->nlmsg_type != RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_STAT_GET))
		return NULL;
	return h;
}

int nl_rdma_stat_parse(const void *buf, size_t len, struct nl_rdma_stat *ret)
{
	const struct nlmsghdr *h = stat_msg(buf, len);
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX + 1];
	struct nl_rdma_stat s = { 0 };
	int e;

	if (!h || parse_msg(h, tb) < 0 || !tb[RDMA_NLDEV_ATTR_DEV_INDEX] ||
	    !tb[RDMA_NLDEV_ATTR_PORT_INDEX])
		return -EBADMSG;
	s.dev_index = nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	s.port = nla_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
	if (tb[RDMA_NLDEV_ATTR_DEV_NAME])
		copy_str(tb[RDMA_NLDEV_ATTR_DEV_NAME], s.dev, sizeof(s.dev));
	if (tb[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS]) {
		e = parse_hwcounters(tb[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS], &s.hw, &s.n_hw);
		if (e < 0) {
			nl_rdma_stat_clear(&s);
			return e;
		}
	}
	*ret = s;
	return 0;
}

static void counter_clear(struct nl_rdma_counter *c)
{
	free(c->qpns);
	free(c->hw);
}

void nl_rdma_counters_free(struct nl_rdma_counter *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		counter_clear(&v[i]);
	free(v);
}

/* RDMA_NLDEV_ATTR_RES_QP of a counter: entries of one RDMA_NLDEV_ATTR_RES_LQPN each
 * (fill_stat_counter_qp_entry). */
static int parse_counter_qps(const struct nlattr *table, struct nl_rdma_counter *c)
{
	struct nlattr *entry;
	int rem;

	each_nested(entry, table, rem)
	{
		struct nlattr *tb[RDMA_NLDEV_ATTR_MAX + 1];
		uint32_t *slot;

		if (nla_type(entry) != RDMA_NLDEV_ATTR_RES_QP_ENTRY)
			continue;
		if (parse_nested(entry, tb) < 0)
			return -EBADMSG;
		if (!tb[RDMA_NLDEV_ATTR_RES_LQPN])
			continue;
		slot = nl_array_add((void **)&c->qpns, &c->n_qpns, sizeof(*slot));
		if (!slot)
			return -ENOMEM;
		*slot = nla_get_u32(tb[RDMA_NLDEV_ATTR_RES_LQPN]);
	}
	return 0;
}

/* One RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY (fill_res_counter_entry): port, id, mode (then, in
 * auto mode, the QP type and the process it binds), its QPs, its counters. */
static int parse_counter(const struct nlattr *entry, struct nl_rdma_counter *c)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX + 1];
	int e;

	c->qp_type = -1;
	c->pid = -1;
	if (parse_nested(entry, tb) < 0 || !tb[RDMA_NLDEV_ATTR_STAT_COUNTER_ID])
		return -EBADMSG;
	c->id = nla_get_u32(tb[RDMA_NLDEV_ATTR_STAT_COUNTER_ID]);
	if (tb[RDMA_NLDEV_ATTR_PORT_INDEX])
		c->port = nla_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
	if (tb[RDMA_NLDEV_ATTR_STAT_MODE])
		c->mode = nla_get_u32(tb[RDMA_NLDEV_ATTR_STAT_MODE]);
	if (tb[RDMA_NLDEV_ATTR_RES_TYPE])
		c->qp_type = nla_get_u8(tb[RDMA_NLDEV_ATTR_RES_TYPE]);
	if (tb[RDMA_NLDEV_ATTR_RES_PID])
		c->pid = (int)nla_get_u32(tb[RDMA_NLDEV_ATTR_RES_PID]);
	if (tb[RDMA_NLDEV_ATTR_RES_KERN_NAME])
		copy_str(tb[RDMA_NLDEV_ATTR_RES_KERN_NAME], c->comm, sizeof(c->comm));
	if (tb[RDMA_NLDEV_ATTR_RES_QP]) {
		e = parse_counter_qps(tb[RDMA_NLDEV_ATTR_RES_QP], c);
		if (e < 0)
			return e;
	}
	if (tb[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS])
		return parse_hwcounters(tb[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS], &c->hw, &c->n_hw);
	return 0;
}

int nl_rdma_counters_parse(const void *buf, size_t len, struct nl_rdma_counter **v, size_t *n)
{
	const struct nlmsghdr *h = stat_msg(buf, len);
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX + 1], *entry;
	struct nl_rdma_counter *got = NULL, *all;
	size_t n_got = 0;
	int e = 0, rem;

	if (!h || parse_msg(h, tb) < 0)
		return -EBADMSG;
	/* res_get_common_dumpit: the device's handle, then one table of counters */
	if (!tb[RDMA_NLDEV_ATTR_STAT_COUNTER])
		return 0;
	each_nested(entry, tb[RDMA_NLDEV_ATTR_STAT_COUNTER], rem)
	{
		struct nl_rdma_counter *c;

		if (nla_type(entry) != RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY)
			continue;
		c = nl_array_add((void **)&got, &n_got, sizeof(*c));
		if (!c) {
			e = -ENOMEM;
			goto out;
		}
		e = parse_counter(entry, c);
		if (e < 0)
			goto out;
	}
	if (!n_got)
		return 0;
	all = realloc(*v, (*n + n_got) * sizeof(*all));
	if (!all) {
		e = -ENOMEM;
		goto out;
	}
	memcpy(all + *n, got, n_got * sizeof(*got));
	*v = all;
	*n += n_got;
	free(got);
	return 0;
out:
	nl_rdma_counters_free(got, n_got);
	return e;
}

struct stat_reply {
	struct nl_rdma_stat *stat;
	struct nl_rdma_counter *v;
	size_t n;
	bool got;
};

static int on_stat(struct nlmsghdr *h, void *data)
{
	struct stat_reply *sr = data;
	int e;

	if (sr->got)
		return 0; /* one answer to a request; a second is not ours to merge */
	e = nl_rdma_stat_parse(h, h->nlmsg_len, sr->stat);
	sr->got = e == 0;
	return e;
}

int nl_rdma_port_stat(struct nl_rdma *r, uint32_t dev_index, uint32_t port,
		      struct nl_rdma_stat *ret)
{
	struct nl_rdma_stat s = { 0 };
	struct stat_reply sr = { .stat = &s };
	struct nl_msg *msg;
	int e;

	e = nl_rdma_build_stat_get(dev_index, port, &msg);
	if (e < 0)
		return e;
	e = nl_rt_talk(r->rt, msg, on_stat, &sr);
	if (e == 0 && !sr.got)
		e = -ENODATA;
	if (e < 0) {
		nl_rdma_stat_clear(&s);
		return e;
	}
	*ret = s;
	return 0;
}

static int on_counters(struct nlmsghdr *h, void *data)
{
	struct stat_reply *sr = data;

	return nl_rdma_counters_parse(h, h->nlmsg_len, &sr->v, &sr->n);
}

static void reset_counters(void *data)
{
	struct stat_reply *sr = data;

	nl_rdma_counters_free(sr->v, sr->n);
	sr->v = NULL;
	sr->n = 0;
}

int nl_rdma_counters(struct nl_rdma *r, uint32_t dev_index, struct nl_rdma_counter **ret,
		     size_t *ret_n)
{
	struct stat_reply sr = { 0 };
	struct nl_msg *msg;
	int e;

	e = nl_rdma_build_stat_qp_dump(dev_index, 0, &msg);
	if (e < 0)
		return e;
	e = nl_rt_dump(r->rt, msg, on_counters, reset_counters, &sr);
	if (e < 0) {
		nl_rdma_counters_free(sr.v, sr.n);
		return e;
	}
	*ret = sr.v;
	*ret_n = sr.n;
	return 0;
}

const char *nl_rdma_qp_type_name(int qp_type)
{
	/* enum ib_qp_type, named as iproute2's qp_types_to_str */
	static const char *const names[] = {
		[0] = "SMI",
		[1] = "GSI",
		[2] = "RC",
		[3] = "UC",
		[4] = "UD",
		[5] = "RAW_IPV6",
		[6] = "RAW_ETHERTYPE",
		[8] = "RAW_PACKET",
		[9] = "XRC_INI",
		[10] = "XRC_TGT",
	};

	if (qp_type == 0xff)
		return "DRIVER";
	if (qp_type < 0 || (size_t)qp_type >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[qp_type];
}
