/* SPDX-License-Identifier: Apache-2.0 */
/* The route netlink socket (and RDMA netlink's, the same exchange): opened in a namespace, one
 * request at a time, errors as -errno with the kernel's extended-ack text kept for the caller's
 * message; a dump retried while the kernel says it was interrupted. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/socket.h>

#include "nl/nl-internal.h"
#include "util/cleanup.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

static int rt_open(int netns_fd, int protocol, uint32_t port, struct nl_rt **ret)
{
	_cleanup_free_ struct nl_rt *rt = calloc(1, sizeof(*rt));
	int saved = -1, r, one = 1;

	if (!rt)
		return -ENOMEM;
	rt->sk = nl_socket_alloc();
	if (!rt->sk)
		return -ENOMEM;
	/* A netlink socket belongs to the namespace it is created in, for good: enter the
	 * target only for the socket() call. */
	if (netns_fd >= 0) {
		r = nl_netns_enter(netns_fd, &saved);
		if (r < 0)
			goto fail;
	}
	if (port)
		nl_socket_set_local_port(rt->sk, port);
	r = nl_connect(rt->sk, protocol);
	if (r < 0 && port) {
		/* taken in that namespace by someone else: any port, and no echo heard here */
		nl_socket_set_local_port(rt->sk, 0);
		r = nl_connect(rt->sk, protocol);
	}
	if (saved >= 0) {
		int l = nl_netns_leave(saved);
		if (l < 0 && r >= 0) {
			r = l;
			goto fail;
		}
	}
	if (r < 0) {
		r = -EPROTONOSUPPORT;
		goto fail;
	}
	/* Requests ask for their ACK themselves (dumps do not want one). */
	nl_socket_disable_auto_ack(rt->sk);
	/* The kernel's reason in text, and errors without our request echoed back. Both are
	 * best effort: kernels before 4.12 have no extended ACK, and the numbers still work. */
	(void)setsockopt(nl_socket_get_fd(rt->sk), SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	(void)setsockopt(nl_socket_get_fd(rt->sk), SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	*ret = TAKE_PTR(rt);
	return 0;
fail:
	nl_socket_free(rt->sk);
	return r;
}

int nl_rt_open(int netns_fd, struct nl_rt **ret)
{
	return rt_open(netns_fd, NETLINK_ROUTE, 0, ret);
}

int nl_rt_open_protocol(int netns_fd, int protocol, struct nl_rt **ret)
{
	return rt_open(netns_fd, protocol, 0, ret);
}

int nl_rt_open_peer(int netns_fd, const struct nl_rt *peer, struct nl_rt **ret)
{
	return rt_open(netns_fd, NETLINK_ROUTE, nl_socket_get_local_port(peer->sk), ret);
}

void nl_rt_free(struct nl_rt *rt)
{
	if (!rt)
		return;
	nl_socket_free(rt->sk);
	free(rt);
}

const char *nl_rt_errmsg(const struct nl_rt *rt)
{
	return rt->errmsg;
}

int nl_done_error(const struct nlmsghdr *h)
{
	int e = 0;

	if (h->nlmsg_len >= NLMSG_HDRLEN + sizeof(int))
		memcpy(&e, (const char *)h + NLMSG_HDRLEN, sizeof(e));
	return e < 0 ? e : 0;
}

void nl_extack_msg(const struct nlmsghdr *h, char *buf, size_t len)
{
	const struct nlmsgerr *e;
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	size_t off;

	buf[0] = '\0';
	if (!(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (h->nlmsg_type == NLMSG_DONE) {
		/* a dump's end: the TLVs follow its int error */
		off = NLMSG_HDRLEN + sizeof(int);
	} else {
		if (h->nlmsg_len < NLMSG_HDRLEN + sizeof(*e))
			return;
		e = (const struct nlmsgerr *)((const char *)h + NLMSG_HDRLEN);
		/* The TLVs follow the echoed request: its header only when capped
		 * (NETLINK_CAP_ACK, or any ACK of a success), the whole request otherwise. */
		off = NLMSG_HDRLEN + sizeof(*e);
		if (!(h->nlmsg_flags & NLM_F_CAPPED) && e->error != 0)
			off += NLMSG_ALIGN(e->msg.nlmsg_len) - NLMSG_HDRLEN;
	}
	if (off >= h->nlmsg_len)
		return;
	if (nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)h + off),
		      (int)(h->nlmsg_len - off), NULL) < 0)
		return;
	if (tb[NLMSGERR_ATTR_MSG]) {
		const char *s = nla_data(tb[NLMSGERR_ATTR_MSG]);
		snprintf(buf, len, "%.*s", (int)strnlen(s, (size_t)nla_len(tb[NLMSGERR_ATTR_MSG])),
			 s);
	}
}

struct talk {
	struct nl_rt *rt;
	int (*parse)(struct nlmsghdr *h, void *ud);
	void *ud;
	int err; /* the kernel's -errno, or the parser's */
	bool done;
	bool intr;
};

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct talk *t = arg;
	struct nlmsghdr *h = nlmsg_hdr(msg);
	int r;

	if (h->nlmsg_flags & NLM_F_DUMP_INTR)
		t->intr = true;
	if (!t->parse || t->err < 0)
		return NL_OK;
	r = t->parse(h, t->ud);
	if (r < 0)
		t->err = r; /* keep reading to the end of the answer, so the socket stays usable */
	return NL_OK;
}

static int on_finish(struct nl_msg *msg, void *arg)
{
	struct talk *t = arg;
	struct nlmsghdr *h = nlmsg_hdr(msg);

	int e = nl_done_error(h);

	if (e < 0 && t->err == 0) {
		t->err = e;
		nl_extack_msg(h, t->rt->errmsg, sizeof(t->rt->errmsg));
	}
	if (h->nlmsg_flags & NLM_F_DUMP_INTR)
		t->intr = true;
	t->done = true;
	return NL_STOP;
}

static int on_ack(struct nl_msg *msg, void *arg)
{
	struct talk *t = arg;

	t->done = true;
	return NL_STOP;
}

static int on_error(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct talk *t = arg;
	const struct nlmsghdr *h = (const struct nlmsghdr *)((const char *)e - NLMSG_HDRLEN);

	if (t->err == 0)
		t->err = e->error;
	nl_extack_msg(h, t->rt->errmsg, sizeof(t->rt->errmsg));
	t->done = true;
	return NL_STOP;
}

static int on_intr(struct nl_msg *msg, void *arg)
{
	struct talk *t = arg;

	t->intr = true;
	return NL_OK; /* read on: the rest of the dump still has to be drained */
}

int nl_rt_talk(struct nl_rt *rt, struct nl_msg *msg, int (*parse)(struct nlmsghdr *h, void *ud),
	       void *ud)
{
	struct talk t = { .rt = rt, .parse = parse, .ud = ud };
	struct nl_cb *cb;
	int r;

	rt->errmsg[0] = '\0';
	/* Every request but a dump asks for its ACK: a GET is answered by its data alone
	 * otherwise, and the ACK is what says the answer is complete. */
	if (!(nlmsg_hdr(msg)->nlmsg_flags & NLM_F_DUMP))
		nlmsg_hdr(msg)->nlmsg_flags |= NLM_F_ACK;
	r = nl_send_auto(rt->sk, msg);
	nlmsg_free(msg);
	if (r < 0)
		return -EIO;
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb)
		return -ENOMEM;
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &t);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_finish, &t);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, &t);
	nl_cb_set(cb, NL_CB_DUMP_INTR, NL_CB_CUSTOM, on_intr, &t);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, &t);
	while (!t.done) {
		r = nl_recvmsgs(rt->sk, cb);
		if (r < 0 && !t.done) {
			/* a failure of the socket itself, not an answer of the kernel's */
			t.err = t.err ? t.err : -EIO;
			break;
		}
	}
	nl_cb_put(cb);
	if (t.err < 0)
		return t.err;
	return t.intr ? -EINTR : 0;
}

int nl_rt_talk_vf(struct nl_rt *rt, struct nl_msg *msg, int (*parse)(struct nlmsghdr *h, void *ud),
		  void *ud)
{
	return nl_rt_talk(rt, msg, parse, ud);
}

struct nl_msg *nl_rt_msg(int type, int flags, const void *hdr, size_t hdr_len)
{
	struct nl_msg *msg = nlmsg_alloc_simple(type, flags);

	if (msg && hdr_len && nlmsg_append(msg, (void *)hdr, hdr_len, NLMSG_ALIGNTO) < 0) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

int nl_rt_dump(struct nl_rt *rt, struct nl_msg *req, int (*parse)(struct nlmsghdr *h, void *ud),
	       void (*reset)(void *ud), void *ud)
{
	int r = -EINTR;

	if (!req)
		return -ENOMEM;
	nlmsg_hdr(req)->nlmsg_flags |= NLM_F_DUMP;
	for (int attempt = 0; attempt < 3 && r == -EINTR; attempt++) {
		/* a copy per try: sending one fills in its sequence number */
		struct nl_msg *msg = nlmsg_convert(nlmsg_hdr(req));

		if (!msg) {
			r = -ENOMEM;
			break;
		}
		if (attempt > 0 && reset)
			reset(ud);
		r = nl_rt_talk(rt, msg, parse, ud);
	}
	nlmsg_free(req);
	/* Interrupted three times: the set keeps changing under us (pods come and go on a busy
	 * node). Work with the partial answer rather than retrying without end. */
	return r == -EINTR ? 0 : r;
}

void *nl_array_add(void **array, size_t *n, size_t size)
{
	char *a = realloc(*array, (*n + 1) * size);

	if (!a)
		return NULL;
	*array = a;
	memset(a + *n * size, 0, size);
	return a + (*n)++ * size;
}
