/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA netlink (NETLINK_RDMA, the nldev client) through libmnl: the subsystem's netns mode,
 * the devices a namespace sees, moving a device to another namespace, and the counters of
 * `rdma statistic`. The requests are the ones iproute2's `rdma system`, `rdma dev set DEV netns
 * NS`, `rdma statistic show` and `rdma statistic qp show` send. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <libmnl/libmnl.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include "nl/nl-internal.h"
#include "util/cleanup.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

struct nl_rdma {
	struct mnl_socket *nl;
	unsigned portid;
	uint32_t seq;
	char errmsg[NL_ERRMSG_MAX];
};

int nl_rdma_open(int netns_fd, struct nl_rdma **ret)
{
	_cleanup_free_ struct nl_rdma *r = calloc(1, sizeof(*r));
	int saved = -1, e = 0, one = 1;

	if (!r)
		return -ENOMEM;
	if (netns_fd >= 0) {
		e = nl_netns_enter(netns_fd, &saved);
		if (e < 0)
			return e;
	}
	r->nl = mnl_socket_open2(NETLINK_RDMA, SOCK_CLOEXEC);
	if (!r->nl)
		e = -errno; /* EPROTONOSUPPORT: no RDMA subsystem in this kernel */
	if (saved >= 0) {
		int l = nl_netns_leave(saved);
		if (l < 0 && e == 0)
			e = l;
	}
	if (e == 0 && mnl_socket_bind(r->nl, 0, MNL_SOCKET_AUTOPID) < 0)
		e = -errno;
	if (e < 0) {
		if (r->nl)
			mnl_socket_close(r->nl);
		return e;
	}
	(void)mnl_socket_setsockopt(r->nl, NETLINK_EXT_ACK, &one, sizeof(one));
	(void)mnl_socket_setsockopt(r->nl, NETLINK_CAP_ACK, &one, sizeof(one));
	r->portid = mnl_socket_get_portid(r->nl);
	r->seq = (uint32_t)time(NULL);
	*ret = TAKE_PTR(r);
	return 0;
}

void nl_rdma_free(struct nl_rdma *r)
{
	if (!r)
		return;
	mnl_socket_close(r->nl);
	free(r);
}

const char *nl_rdma_errmsg(const struct nl_rdma *r)
{
	return r->errmsg;
}

static struct nlmsghdr *put_header(void *buf, uint32_t seq, int cmd, uint16_t flags)
{
	struct nlmsghdr *h = mnl_nlmsg_put_header(buf);

	h->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd);
	h->nlmsg_flags = NLM_F_REQUEST | flags;
	h->nlmsg_seq = seq;
	return h;
}

struct nlmsghdr *nl_rdma_build_set_netns(void *buf, uint32_t seq, uint32_t index, int netns_fd)
{
	struct nlmsghdr *h = put_header(buf, seq, RDMA_NLDEV_CMD_SET, NLM_F_ACK);

	mnl_attr_put_u32(h, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	mnl_attr_put_u32(h, RDMA_NLDEV_NET_NS_FD, (uint32_t)netns_fd);
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

struct rdma_talk {
	struct nl_rdma *r;
	int err;
	mnl_cb_t parse;
	void *ud;
};

static int cb_error(const struct nlmsghdr *h, void *data)
{
	struct rdma_talk *t = data;
	const struct nlmsgerr *e = mnl_nlmsg_get_payload(h);

	if (mnl_nlmsg_get_payload_len(h) < sizeof(*e)) {
		t->err = -EBADMSG;
		return MNL_CB_ERROR;
	}
	if (e->error == 0)
		return MNL_CB_STOP; /* the ACK */
	t->err = e->error;
	nl_extack_msg(h, t->r->errmsg, sizeof(t->r->errmsg));
	return MNL_CB_ERROR;
}

static int cb_done(const struct nlmsghdr *h, void *data)
{
	struct rdma_talk *t = data;
	int e = nl_done_error(h);

	/* a dump the kernel could not do (an unknown device index: res_get_common_dumpit's
	 * -EINVAL) ends in an NLMSG_DONE carrying the error, not in an NLMSG_ERROR */
	if (e < 0) {
		t->err = e;
		nl_extack_msg(h, t->r->errmsg, sizeof(t->r->errmsg));
		return MNL_CB_ERROR;
	}
	return MNL_CB_STOP;
}

static int cb_data(const struct nlmsghdr *h, void *data)
{
	struct rdma_talk *t = data;

	return t->parse ? t->parse(h, t->ud) : MNL_CB_OK;
}

static int rdma_talk(struct nl_rdma *r, struct nlmsghdr *req, mnl_cb_t parse, void *ud)
{
	/* libmnl takes the table as non-const */
	static mnl_cb_t ctl[NLMSG_MIN_TYPE] = {
		[NLMSG_ERROR] = cb_error,
		[NLMSG_DONE] = cb_done,
	};
	struct rdma_talk t = { .r = r, .parse = parse, .ud = ud };
	_cleanup_free_ char *buf = malloc(MNL_SOCKET_BUFFER_SIZE);
	int n, ret;

	if (!buf)
		return -ENOMEM;
	r->errmsg[0] = '\0';
	if (mnl_socket_sendto(r->nl, req, req->nlmsg_len) < 0)
		return -errno;
	do {
		n = (int)mnl_socket_recvfrom(r->nl, buf, MNL_SOCKET_BUFFER_SIZE);
		if (n < 0)
			return -errno;
		ret = mnl_cb_run2(buf, (size_t)n, req->nlmsg_seq, r->portid, cb_data, &t, ctl,
				  NLMSG_MIN_TYPE);
	} while (ret > 0);
	if (ret < 0)
		return t.err < 0 ? t.err : (errno ? -errno : -EIO);
	return 0;
}

static int parse_sys(const struct nlmsghdr *h, void *data)
{
	struct nlattr *a;
	int *mode = data;

	mnl_attr_for_each(a, h, 0) if (mnl_attr_get_type(a) == RDMA_NLDEV_SYS_ATTR_NETNS_MODE &&
				       mnl_attr_validate(a, MNL_TYPE_U8) == 0) *mode =
		mnl_attr_get_u8(a);
	return MNL_CB_OK;
}

int nl_rdma_netns_shared(struct nl_rdma *r, bool *ret_shared)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	int mode = -1, e;

	e = rdma_talk(r, nl_rdma_build_sys_get(buf, ++r->seq), parse_sys, &mode);
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
	int err;
};

static int parse_dev(const struct nlmsghdr *h, void *data)
{
	struct dev_list *dl = data;
	struct nl_rdma_dev d = { 0 }, *slot;
	bool has_index = false, has_name = false;
	struct nlattr *a;

	mnl_attr_for_each(a, h, 0)
	{
		int type = mnl_attr_get_type(a);
		if (type == RDMA_NLDEV_ATTR_DEV_INDEX && mnl_attr_validate(a, MNL_TYPE_U32) == 0) {
			d.index = mnl_attr_get_u32(a);
			has_index = true;
		} else if (type == RDMA_NLDEV_ATTR_DEV_NAME &&
			   mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0) {
			snprintf(d.name, sizeof(d.name), "%s", mnl_attr_get_str(a));
			has_name = true;
		} else if (type == RDMA_NLDEV_ATTR_PORT_INDEX &&
			   mnl_attr_validate(a, MNL_TYPE_U32) == 0) {
			d.ports = mnl_attr_get_u32(a); /* fill_dev_info: rdma_end_port() */
		}
	}
	if (!has_index || !has_name)
		return MNL_CB_OK;
	slot = nl_array_add((void **)&dl->v, &dl->n, sizeof(*slot));
	if (!slot) {
		dl->err = -ENOMEM;
		return MNL_CB_ERROR;
	}
	*slot = d;
	return MNL_CB_OK;
}

int nl_rdma_dev_list(struct nl_rdma *r, struct nl_rdma_dev **ret, size_t *ret_n)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct dev_list dl = { 0 };
	int e;

	e = rdma_talk(r, nl_rdma_build_dev_dump(buf, ++r->seq), parse_dev, &dl);
	if (dl.err < 0)
		e = dl.err;
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
	char buf[MNL_SOCKET_BUFFER_SIZE];

	if (netns_fd < 0)
		return -EBADF;
	return rdma_talk(r, nl_rdma_build_set_netns(buf, ++r->seq, index, netns_fd), NULL, NULL);
}

/* ---- counters ------------------------------------------------------------------------------ */

struct nlmsghdr *nl_rdma_build_stat_get(void *buf, uint32_t seq, uint32_t dev_index, uint32_t port)
{
	struct nlmsghdr *h = put_header(buf, seq, RDMA_NLDEV_CMD_STAT_GET, NLM_F_ACK);

	/* no RDMA_NLDEV_ATTR_STAT_RES: nldev_stat_get_doit answers the port's default counters */
	mnl_attr_put_u32(h, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index);
	mnl_attr_put_u32(h, RDMA_NLDEV_ATTR_PORT_INDEX, port);
	return h;
}

struct nlmsghdr *nl_rdma_build_stat_qp_dump(void *buf, uint32_t seq, uint32_t dev_index,
					    uint32_t port)
{
	struct nlmsghdr *h = put_header(buf, seq, RDMA_NLDEV_CMD_STAT_GET, NLM_F_DUMP);

	/* res_get_common_dumpit refuses a dump without the device; without a port it gives the
	 * counters of every port */
	mnl_attr_put_u32(h, RDMA_NLDEV_ATTR_DEV_INDEX, dev_index);
	if (port)
		mnl_attr_put_u32(h, RDMA_NLDEV_ATTR_PORT_INDEX, port);
	mnl_attr_put_u32(h, RDMA_NLDEV_ATTR_STAT_RES, RDMA_NLDEV_ATTR_RES_QP);
	return h;
}

/* The header of a STAT_GET answer and its attributes, or NULL. */
static const struct nlmsghdr *stat_msg(const void *buf, size_t len)
{
	const struct nlmsghdr *h = buf;

	if (!mnl_nlmsg_ok(h, (int)(len > INT32_MAX ? INT32_MAX : len)) ||
	    h->nlmsg_type != RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_STAT_GET))
		return NULL;
	return h;
}

/* RDMA_NLDEV_ATTR_STAT_HWCOUNTERS: entries of a name and a u64 (rdma_nl_stat_hwcounter_entry;
 * nla_put_u64_64bit may put a RDMA_NLDEV_ATTR_PAD before the value, which is skipped). */
static int parse_hwcounters(const struct nlattr *table, struct nl_rdma_hwcounter **v, size_t *n)
{
	const struct nlattr *entry;

	mnl_attr_for_each_nested(entry, table)
	{
		struct nl_rdma_hwcounter c = { 0 }, *slot;
		bool has_name = false, has_value = false;
		const struct nlattr *a;

		if (mnl_attr_get_type(entry) != RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY)
			continue;
		mnl_attr_for_each_nested(a, entry)
		{
			int type = mnl_attr_get_type(a);

			if (type == RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME) {
				if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) < 0)
					return -EBADMSG;
				snprintf(c.name, sizeof(c.name), "%s", mnl_attr_get_str(a));
				has_name = c.name[0] != '\0';
			} else if (type == RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE) {
				if (mnl_attr_validate(a, MNL_TYPE_U64) < 0)
					return -EBADMSG;
				c.value = mnl_attr_get_u64(a);
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
	const struct nlattr *a;
	int e;

	if (!h)
		return -EBADMSG;
	mnl_attr_for_each(a, h, 0)
	{
		int type = mnl_attr_get_type(a);

		if (type == RDMA_NLDEV_ATTR_DEV_INDEX && mnl_attr_validate(a, MNL_TYPE_U32) == 0) {
			s.dev_index = mnl_attr_get_u32(a);
			has_dev = true;
		} else if (type == RDMA_NLDEV_ATTR_DEV_NAME &&
			   mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0) {
			snprintf(s.dev, sizeof(s.dev), "%s", mnl_attr_get_str(a));
		} else if (type == RDMA_NLDEV_ATTR_PORT_INDEX &&
			   mnl_attr_validate(a, MNL_TYPE_U32) == 0) {
			s.port = mnl_attr_get_u32(a);
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
	const struct nlattr *entry, *a;

	mnl_attr_for_each_nested(entry, table)
	{
		if (mnl_attr_get_type(entry) != RDMA_NLDEV_ATTR_RES_QP_ENTRY)
			continue;
		mnl_attr_for_each_nested(a, entry)
		{
			uint32_t *slot;

			if (mnl_attr_get_type(a) != RDMA_NLDEV_ATTR_RES_LQPN)
				continue;
			if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
				return -EBADMSG;
			slot = nl_array_add((void **)&c->qpns, &c->n_qpns, sizeof(*slot));
			if (!slot)
				return -ENOMEM;
			*slot = mnl_attr_get_u32(a);
		}
	}
	return 0;
}

/* One RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY (fill_res_counter_entry): port, id, mode (then, in
 * auto mode, the QP type and the process it binds), its QPs, its counters. */
static int parse_counter(const struct nlattr *entry, struct nl_rdma_counter *c)
{
	bool has_id = false;
	const struct nlattr *a;
	int e = 0;

	c->qp_type = -1;
	c->pid = -1;
	mnl_attr_for_each_nested(a, entry)
	{
		switch (mnl_attr_get_type(a)) {
		case RDMA_NLDEV_ATTR_PORT_INDEX:
			if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
				return -EBADMSG;
			c->port = mnl_attr_get_u32(a);
			break;
		case RDMA_NLDEV_ATTR_STAT_COUNTER_ID:
			if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
				return -EBADMSG;
			c->id = mnl_attr_get_u32(a);
			has_id = true;
			break;
		case RDMA_NLDEV_ATTR_STAT_MODE:
			if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
				return -EBADMSG;
			c->mode = mnl_attr_get_u32(a);
			break;
		case RDMA_NLDEV_ATTR_RES_TYPE:
			if (mnl_attr_validate(a, MNL_TYPE_U8) < 0)
				return -EBADMSG;
			c->qp_type = mnl_attr_get_u8(a);
			break;
		case RDMA_NLDEV_ATTR_RES_PID:
			if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
				return -EBADMSG;
			c->pid = mnl_attr_get_u32(a);
			break;
		case RDMA_NLDEV_ATTR_RES_KERN_NAME:
			if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) < 0)
				return -EBADMSG;
			snprintf(c->comm, sizeof(c->comm), "%s", mnl_attr_get_str(a));
			break;
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
	const struct nlattr *a, *entry;
	int e = 0;

	if (!h)
		return -EBADMSG;
	mnl_attr_for_each(a, h, 0)
	{
		/* res_get_common_dumpit: the device's handle, then one table of counters */
		if (mnl_attr_get_type(a) != RDMA_NLDEV_ATTR_STAT_COUNTER)
			continue;
		mnl_attr_for_each_nested(entry, a)
		{
			struct nl_rdma_counter *c;

			if (mnl_attr_get_type(entry) != RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY)
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
	int err;
};

static int on_stat(const struct nlmsghdr *h, void *data)
{
	struct stat_reply *sr = data;

	if (sr->got)
		return MNL_CB_OK; /* one answer to a request; a second is not ours to merge */
	sr->err = nl_rdma_stat_parse(h, h->nlmsg_len, sr->stat);
	sr->got = sr->err == 0;
	return sr->err < 0 ? MNL_CB_ERROR : MNL_CB_OK;
}

int nl_rdma_port_stat(struct nl_rdma *r, uint32_t dev_index, uint32_t port,
		      struct nl_rdma_stat *ret)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nl_rdma_stat s = { 0 };
	struct stat_reply sr = { .stat = &s };
	int e;

	e = rdma_talk(r, nl_rdma_build_stat_get(buf, ++r->seq, dev_index, port), on_stat, &sr);
	if (sr.err < 0)
		e = sr.err;
	if (e == 0 && !sr.got)
		e = -ENODATA;
	if (e < 0) {
		nl_rdma_stat_clear(&s);
		return e;
	}
	*ret = s;
	return 0;
}

static int on_counters(const struct nlmsghdr *h, void *data)
{
	struct stat_reply *sr = data;

	sr->err = nl_rdma_counters_parse(h, h->nlmsg_len, &sr->v, &sr->n);
	return sr->err < 0 ? MNL_CB_ERROR : MNL_CB_OK;
}

int nl_rdma_counters(struct nl_rdma *r, uint32_t dev_index, struct nl_rdma_counter **ret,
		     size_t *ret_n)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct stat_reply sr = { 0 };
	int e;

	e = rdma_talk(r, nl_rdma_build_stat_qp_dump(buf, ++r->seq, dev_index, 0), on_counters, &sr);
	if (sr.err < 0)
		e = sr.err;
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
