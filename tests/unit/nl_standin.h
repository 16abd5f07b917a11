/* SPDX-License-Identifier: Apache-2.0 */
/* A stand-in kernel for src/nl's sockets, for the unit tests linked with -Wl,--wrap=nl_connect,
 * nl_send_auto and nl_recvmsgs (Makefile). While standin.on, a socket connects nowhere, each
 * request is handed to the test's standin_request(), which queues its answer with
 * standin_put(), and libnl's own receive loop reads that answer, flags and all, as one
 * datagram and once (nl_cb_overwrite_recv): a read with none queued fails as a socket error
 * would, rather than waiting for ever. While it is off the calls go to the kernel.
 * A test includes this once, after cmocka, and defines standin_request(). */
#ifndef RDMAK_TESTS_NL_STANDIN_H
#define RDMAK_TESTS_NL_STANDIN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/netlink.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/socket.h>

static struct {
	bool on;
	unsigned opens;	 /* sockets connected */
	uint8_t *answer; /* the last request's answer, not read yet (NULL: none) */
	size_t answer_len;
} standin;

/* The test's kernel: the answer to req, queued with standin_put() (none: the read fails). */
static void standin_request(const struct nlmsghdr *req);

/* m's bytes after what is queued, as the kernel packs a dump's messages into one datagram; m
 * is freed. */
static inline void standin_put(struct nl_msg *m)
{
	struct nlmsghdr *h = nlmsg_hdr(m);
	uint8_t *p = realloc(standin.answer, standin.answer_len + NLMSG_ALIGN(h->nlmsg_len));

	assert_non_null(p);
	memset(p + standin.answer_len, 0, NLMSG_ALIGN(h->nlmsg_len));
	memcpy(p + standin.answer_len, h, h->nlmsg_len);
	standin.answer = p;
	standin.answer_len += NLMSG_ALIGN(h->nlmsg_len);
	nlmsg_free(m);
}

/* A dump's end: NLMSG_DONE (NLM_F_MULTI | flags) and its error (0: finished). */
static inline struct nl_msg *standin_done(uint16_t flags, int error)
{
	struct nl_msg *m = nlmsg_alloc_simple(NLMSG_DONE, NLM_F_MULTI | flags);

	assert_non_null(m);
	assert_int_equal(nlmsg_append(m, &error, sizeof(error), NLMSG_ALIGNTO), 0);
	return m;
}

/* NLMSG_ERROR with error (0: the ACK of a request that asked for one; NLM_F_CAPPED: its
 * header only, as NETLINK_CAP_ACK asks). */
static inline struct nl_msg *standin_error(uint16_t flags, int error)
{
	struct nlmsgerr e = { .error = error };
	struct nl_msg *m = nlmsg_alloc_simple(NLMSG_ERROR, flags);

	assert_non_null(m);
	assert_int_equal(nlmsg_append(m, &e, sizeof(e), NLMSG_ALIGNTO), 0);
	return m;
}

/* Off, and nothing queued. */
static inline void standin_reset(void)
{
	free(standin.answer);
	memset(&standin, 0, sizeof(standin));
}

int __wrap_nl_connect(struct nl_sock *sk, int protocol);
int __real_nl_connect(struct nl_sock *sk, int protocol);
int __wrap_nl_send_auto(struct nl_sock *sk, struct nl_msg *msg);
int __real_nl_send_auto(struct nl_sock *sk, struct nl_msg *msg);
int __wrap_nl_recvmsgs(struct nl_sock *sk, struct nl_cb *cb);
int __real_nl_recvmsgs(struct nl_sock *sk, struct nl_cb *cb);

int __wrap_nl_connect(struct nl_sock *sk, int protocol)
{
	if (!standin.on)
		return __real_nl_connect(sk, protocol);
	standin.opens++;
	return 0;
}

int __wrap_nl_send_auto(struct nl_sock *sk, struct nl_msg *msg)
{
	struct nlmsghdr *h = nlmsg_hdr(msg);

	if (!standin.on)
		return __real_nl_send_auto(sk, msg);
	assert_null(standin.answer); /* the last answer was read whole */
	standin_request(h);
	return (int)h->nlmsg_len;
}

static int standin_recv(struct nl_sock *sk, struct sockaddr_nl *nla, unsigned char **buf,
			struct ucred **creds)
{
	int n = (int)standin.answer_len;

	if (!standin.answer)
		return -NLE_AGAIN;
	*buf = standin.answer;
	standin.answer = NULL;
	standin.answer_len = 0;
	memset(nla, 0, sizeof(*nla));
	nla->nl_family = AF_NETLINK; /* from the kernel: port 0 */
	return n;
}

int __wrap_nl_recvmsgs(struct nl_sock *sk, struct nl_cb *cb)
{
	if (standin.on)
		nl_cb_overwrite_recv(cb, standin_recv);
	return __real_nl_recvmsgs(sk, cb);
}

#endif
