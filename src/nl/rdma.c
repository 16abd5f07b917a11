/* SPDX-License-Identifier: Apache-2.0 */
/* RDMA netlink (NETLINK_RDMA, the nldev client) through libmnl: the subsystem's netns mode,
 * the devices a namespace sees, and moving a device to another namespace. The requests are
 * the ones iproute2's `rdma system` and `rdma dev set DEV netns NS` send. */
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
		ret = mnl_cb_run2(buf, (size_t)n, req->nlmsg_seq, r->portid, cb_data, &t, ctl, NLMSG_MIN_TYPE);
	} while (ret > 0);
	if (ret < 0)
		return t.err < 0 ? t.err : (errno ? -errno : -EIO);
	return 0;
}

static int parse_sys(const struct nlmsghdr *h, void *data)
{
	struct nlattr *a;
	int *mode = data;

	mnl_attr_for_each(a, h, 0)
		if (mnl_attr_get_type(a) == RDMA_NLDEV_SYS_ATTR_NETNS_MODE && mnl_attr_validate(a, MNL_TYPE_U8) == 0)
			*mode = mnl_attr_get_u8(a);
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

	mnl_attr_for_each(a, h, 0) {
		int type = mnl_attr_get_type(a);
		if (type == RDMA_NLDEV_ATTR_DEV_INDEX && mnl_attr_validate(a, MNL_TYPE_U32) == 0) {
			d.index = mnl_attr_get_u32(a);
			has_index = true;
		} else if (type == RDMA_NLDEV_ATTR_DEV_NAME && mnl_attr_validate(a, MNL_TYPE_NUL_STRING) == 0) {
			snprintf(d.name, sizeof(d.name), "%s", mnl_attr_get_str(a));
			has_name = true;
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
