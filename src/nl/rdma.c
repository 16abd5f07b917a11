/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA netlink (NETLINK_RDMA, the nldev client): the subsystem's netns mode, the devices a
 * namespace sees, moving a device to another namespace, and the counters of `rdma statistic`.
 * The requests are the ones iproute2's `rdma system`, `rdma dev set DEV netns NS`, `rdma
 * statistic show` and `rdma statistic qp show` send. The socket and the exchange are
 * rtnetlink's (src/nl/rt.c, libnl-3) with another protocol: one netlink library in rdmak, and
 * the per-pod binary, which links it statically, needs no shared object for it. */
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

static struct nlmsghdr *put_header(void *buf, uint32_t seq, int cmd, uint16_t flags)
{
	struct nlmsghdr *h = buf;

	memset(h, 0, NLMSG_HDRLEN);
	h->nlmsg_len = NLMSG_HDRLEN;
	h->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
	h->nlmsg_flags = NLM_F_REQUEST | flags;
	h->nlmsg_seq = seq;
	return h;
}

static void put_u32(struct nlmsghdr *h, uint16_t type, uint32_t v)
{
	struct nlattr *a = (struct nlattr *)((char *)h + NLMSG_ALIGN(h->nlmsg_len));

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + sizeof(v);
	memcpy((char *)a + NLA_HDRLEN, &v, sizeof(v));
	h->nlmsg_len = NLMSG_ALIGN(h->nlmsg_len) + NLA_ALIGN(a->nla_len);
}

struct nlmsghdr *nl_rdma_build_set_netns(void *buf, uint32_t seq, uint32_t index, int netns_fd)
{
	struct nlmsghdr *h = put_header(buf, seq, RDMA_NLDEV_CMD_SET, NLM_F_ACK);

	put_u32(h, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	put_u32(h, RDMA_NLDEV_NET_NS_FD, (uint32_t)netns_fd);
	return h;
}

struct nlmsghdr *nl_rdma_build_sys_get(void *buf, uint32_t seq)
{
	return put_header(buf, seq, RDMA_NLDEV_CMD_SYS_GET, NLM_F_ACK);
}

struct nlmsghdr *nl_rdma_build_dev_dump(void *buf, uint32_t seq)
{
	return put_header(buf, seq, RDMA_NLDEV_CMD_GET, NLM_F_DUMP);
}

/* The attributes of an answer, each checked for the exact size of its type (as iproute2's
 * mnl_attr_validate and the kernel's nla_policy do): 0 and the value, or -EBADMSG. */
static int get_u8(const struct nlattr *a, uint8_t *ret)
{
	if (nla_len(a) != sizeof(*ret))
		return -EBADMSG;
	*ret = nla_get_u8((struct nlattr *)a);
	return 0;
}

static int get_u32(const struct nlattr *a, uint32_t *ret)
{
	if (nla_len(a) != sizeof(*ret))
		return -EBADMSG;
	*ret = nla_get_u32((struct nlattr *)a);
	return 0;
}

static int get_u64(const struct nlattr *a, uint64_t *ret)
{
	if (nla_len(a) != sizeof(*ret))
		return -EBADMSG;
	memcpy(ret, nla_data(a), sizeof(*ret));
	return 0;
}

/* A NUL-terminated string attribute copied into buf (truncated to fit). */
static int get_str(const struct nlattr *a, char *buf, size_t len)
{
	const char *s = nla_data(a);
	int n = nla_len(a);

	if (n <= 0 || s[n - 1] != '\0')
		return -EBADMSG;
	snprintf(buf, len, "%s", s);
	return 0;
}

/* Each attribute of a message (no family header: nldev has none) or of a nested one. */
#define each_attr(a, h, rem)	    nlmsg_for_each_attr(a, (struct nlmsghdr *)(h), 0, rem)
#define each_nested(a, parent, rem) nla_for_each_nested(a, (struct nlattr *)(parent), rem)

/* One request, answered as rtnetlink's are (nl_rt_talk): 0 or the kernel's -errno. A dump
 * the kernel marked interrupted keeps what it gave, as these device and counter lists change
 * with the node and a retry would race the same change. */
static int rdma_talk(struct nl_rdma *r, struct nlmsghdr *req,
		     int (*parse)(struct nlmsghdr *h, void *ud), void *ud)
{
	struct nl_msg *msg = nlmsg_convert(req);
	int e;

	if (!msg)
		return -ENOMEM;
	e = nl_rt_talk(r->rt, msg, parse, ud);
	return e == -EINTR ? 0 : e;
}

static int parse_sys(struct nlmsghdr *h, void *data)
{
	struct nlattr *a;
	int *mode = data, rem;
	uint8_t m;

	each_attr(a, h, rem)
	{
		if (nla_type(a) == RDMA_NLDEV_SYS_ATTR_NETNS_MODE && get_u8(a, &m) == 0)
			*mode = m;
	}
	return 0;
}

int nl_rdma_netns_shared(struct nl_rdma *r, bool *ret_shared)
{
	char buf[NL_RDMA_REQ_MAX] __attribute__((aligned(NLMSG_ALIGNTO)));
	int mode = -1, e;

	e = rdma_talk(r, nl_rdma_build_sys_get(buf, NL_AUTO_SEQ), parse_sys, &mode);
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
	struct nl_rdma_dev d = { 0 }, *slot;
	bool has_index = false, has_name = false;
	struct nlattr *a;
	int rem;

	each_attr(a, h, rem)
	{
		int type = nla_type(a);

		if (type == RDMA_NLDEV_ATTR_DEV_INDEX && get_u32(a, &d.index) == 0)
			has_index = true;
		else if (type == RDMA_NLDEV_ATTR_DEV_NAME &&
			 get_str(a, d.name, sizeof(d.name)) == 0)
			has_name = true;
		else if (type == RDMA_NLDEV_ATTR_PORT_INDEX)
			(void)get_u32(a, &d.ports); /* fill_dev_info: rdma_end_port() */
		else if (type == RDMA_NLDEV_ATTR_NODE_GUID)
			(void)get_u64(a, &d.node_guid);
	}
	if (!has_index || !has_name)
		return 0;
	slot = nl_array_add((void **)&dl->v, &dl->n, sizeof(*slot));
	if (!slot)
		return -ENOMEM;
	*slot = d;
	return 0;
}

int nl_rdma_dev_list(struct nl_rdma *r, struct nl_rdma_dev **ret, size_t *ret_n)
{
	char buf[NL_RDMA_REQ_MAX] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct dev_list dl = { 0 };
	int e;

	e = rdma_talk(r, nl_rdma_build_dev_dump(buf, NL_AUTO_SEQ), parse_dev, &dl);
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
	char buf[NL_RDMA_REQ_MAX] __attribute__((aligned(NLMSG_ALIGNTO)));

	if (netns_fd < 0)
		return -EBADF;
	return rdma_talk(r, nl_rdma_build_set_netns(buf, NL_AUTO_SEQ, index, netns_fd), NULL, NULL);
}

/* ---- counters ------------------------------------------------------------------------------ */

struct nlmsghdr *nl_rdma_build_stat_get(void *buf, uint32_t seq, uint32_t dev_index, uint32_t port)
{
	struct nlmsghdr *h = put_header(buf, seq, RDMA_NLDEV_CMD_STAT_GET, NLM_F_ACK);

	/* no RDMA_NLDEV_ATTR_STAT_RES: nldev_stat_get_doit answers the port's default counters */
	put_u32(h, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index);
	put_u32(h, RDMA_NLDEV_ATTR_PORT_INDEX, port);
	return h;
}

struct nlmsghdr *nl_rdma_build_stat_qp_dump(void *buf, uint32_t seq, uint32_t dev_index,
					    uint32_t port)
{
	struct nlmsghdr *h = put_header(buf, seq, RDMA_NLDEV_CMD_STAT_GET, NLM_F_DUMP);

	/* res_get_common_dumpit refuses a dump without the device; without a port it gives the
	 * counters of every port */
	put_u32(h, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index);
	if (port)
		put_u32(h, RDMA_NLDEV_ATTR_PORT_INDEX, port);
	put_u32(h, RDMA_NLDEV_ATTR_STAT_RES, RDMA_NLDEV_ATTR_RES_QP);
	return h;
}

/* The header of a STAT_GET answer and its attributes, or NULL. */
static const struct nlmsghdr *stat_msg(const void *buf, size_t len)
{
	const struct nlmsghdr *h = buf;

	if (!nlmsg_ok(h, (int)(len > INT32_MAX ? INT32_MAX : len)) ||
	    h->nlmsg_type != RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_STAT_GET))
		return NULL;
	return h;
}

/* RDMA_NLDEV_ATTR_STAT_HWCOUNTERS: entries of a name and a u64 (rdma_nl_stat_hwcounter_entry;
 * nla_put_u64_64bit may put a RDMA_NLDEV_ATTR_PAD before the value, which is skipped). */
static int parse_hwcounters(const struct nlattr *table, struct nl_rdma_hwcounter **v, size_t *n)
{
	struct nlattr *entry;
	int rem;

	each_nested(entry, table, rem)
	{
		struct nl_rdma_hwcounter c = { 0 }, *slot;
		bool has_name = false, has_value = false;
		struct nlattr *a;
		int rem2;

		if (nla_type(entry) != RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
			continue;
		each_nested(a, entry, rem2)
		{
			int type = nla_type(a);

			if (type == RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME) {
				if (get_str(a, c.name, sizeof(c.name)) < 0)
					return -EBADMSG;
				has_name = c.name[0] != '\0';
			} else if (type == RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE) {
				if (get_u64(a, &c.value) < 0)
					return -EBADMSG;
				has_value = true;
			}
		}
		if (!has_name || !has_value)
			return -EBADMSG; /* iproute2's res_get_hwcounters refuses it too */
		slot = nl_array_add((void **)v, n, sizeof(*slot));
		if (!slot)
			return -ENOMEM;
		*slot = c;
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

int nl_rdma_stat_parse(const void *buf, size_t len, struct nl_rdma_stat *ret)
{
	const struct nlmsghdr *h = stat_msg(buf, len);
	struct nl_rdma_stat s = { 0 };
	bool has_dev = false, has_port = false;
	struct nlattr *a;
	int e, rem;

	if (!h)
		return -EBADMSG;
	each_attr(a, h, rem)
	{
		int type = nla_type(a);

		if (type == RDMA_NLDEV_ATTR_DEV_INDEX && get_u32(a, &s.dev_index) == 0) {
			has_dev = true;
		} else if (type == RDMA_NLDEV_ATTR_DEV_NAME) {
			(void)get_str(a, s.dev, sizeof(s.dev));
		} else if (type == RDMA_NLDEV_ATTR_PORT_INDEX && get_u32(a, &s.port) == 0) {
			has_port = true;
		} else if (type == RDMA_NLDEV_ATTR_STAT_HWCOUNTERS) {
			e = parse_hwcounters(a, &s.hw, &s.n_hw);
			if (e < 0) {
				nl_rdma_stat_clear(&s);
				return e;
			}
		}
	}
	if (!has_dev || !has_port) {
		nl_rdma_stat_clear(&s);
		return -EBADMSG;
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
	struct nlattr *entry, *a;
	int rem, rem2;

	each_nested(entry, table, rem)
	{
		if (nla_type(entry) != RDMA_NLDEV_ATTR_RES_QP_ENTRY)
			continue;
		each_nested(a, entry, rem2)
		{
			uint32_t *slot, qpn;

			if (nla_type(a) != RDMA_NLDEV_ATTR_RES_LQPN)
				continue;
			if (get_u32(a, &qpn) < 0)
				return -EBADMSG;
			slot = nl_array_add((void **)&c->qpns, &c->n_qpns, sizeof(*slot));
			if (!slot)
				return -ENOMEM;
			*slot = qpn;
		}
	}
	return 0;
}

/* One RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY (fill_res_counter_entry): port, id, mode (then, in
 * auto mode, the QP type and the process it binds), its QPs, its counters. */
static int parse_counter(const struct nlattr *entry, struct nl_rdma_counter *c)
{
	bool has_id = false;
	struct nlattr *a;
	uint32_t u32;
	uint8_t u8;
	int e = 0, rem;

	c->qp_type = -1;
	c->pid = -1;
	each_nested(a, entry, rem)
	{
		switch (nla_type(a)) {
		case RDMA_NLDEV_ATTR_PORT_INDEX: e = get_u32(a, &c->port); break;
		case RDMA_NLDEV_ATTR_STAT_COUNTER_ID:
			e = get_u32(a, &c->id);
			has_id = e == 0;
			break;
		case RDMA_NLDEV_ATTR_STAT_MODE: e = get_u32(a, &c->mode); break;
		case RDMA_NLDEV_ATTR_RES_TYPE:
			e = get_u8(a, &u8);
			if (e == 0)
				c->qp_type = u8;
			break;
		case RDMA_NLDEV_ATTR_RES_PID:
			e = get_u32(a, &u32);
			if (e == 0)
				c->pid = (int)u32;
			break;
		case RDMA_NLDEV_ATTR_RES_KERN_NAME: e = get_str(a, c->comm, sizeof(c->comm)); break;
		case RDMA_NLDEV_ATTR_RES_QP: e = parse_counter_qps(a, c); break;
		case RDMA_NLDEV_ATTR_STAT_HWCOUNTERS:
			e = parse_hwcounters(a, &c->hw, &c->n_hw);
			break;
		default: break;
		}
		if (e < 0)
			return e;
	}
	return has_id ? 0 : -EBADMSG;
}

int nl_rdma_counters_parse(const void *buf, size_t len, struct nl_rdma_counter **v, size_t *n)
{
	const struct nlmsghdr *h = stat_msg(buf, len);
	struct nl_rdma_counter *got = NULL;
	size_t n_got = 0;
	struct nlattr *a, *entry;
	int e = 0, rem, rem2;

	if (!h)
		return -EBADMSG;
	each_attr(a, h, rem)
	{
		/* res_get_common_dumpit: the device's handle, then one table of counters */
		if (nla_type(a) != RDMA_NLDEV_ATTR_STAT_COUNTER)
			continue;
		each_nested(entry, a, rem2)
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
	}
	if (n_got) {
		struct nl_rdma_counter *all = realloc(*v, (*n + n_got) * sizeof(*all));

		if (!all) {
			e = -ENOMEM;
			goto out;
		}
		memcpy(all + *n, got, n_got * sizeof(*got));
		*v = all;
		*n += n_got;
		free(got);
		return 0;
	}
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
	char buf[NL_RDMA_REQ_MAX] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct nl_rdma_stat s = { 0 };
	struct stat_reply sr = { .stat = &s };
	int e;

	e = rdma_talk(r, nl_rdma_build_stat_get(buf, NL_AUTO_SEQ, dev_index, port), on_stat, &sr);
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

int nl_rdma_counters(struct nl_rdma *r, uint32_t dev_index, struct nl_rdma_counter **ret,
		     size_t *ret_n)
{
	char buf[NL_RDMA_REQ_MAX] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct stat_reply sr = { 0 };
	int e;

	e = rdma_talk(r, nl_rdma_build_stat_qp_dump(buf, NL_AUTO_SEQ, dev_index, 0), on_counters,
		      &sr);
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
