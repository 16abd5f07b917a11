/* SPDX-License-Identifier: Apache-2.0 */
/* src/nl's requests over a stand-in kernel: the test build links -Wl,--wrap=nl_connect,
 * nl_send_auto and nl_recvmsgs (Makefile), so that the socket connects nowhere, each request
 * is recorded instead of sent, and libnl's own receive loop reads the answer the test scripted
 * for it (nl_cb_overwrite_recv), flags and all. What it checks is what no kernel here can be
 * made to do on demand: a dump the kernel marks interrupted (NLM_F_DUMP_INTR: the set changed
 * while it was read) is asked again, RDMA netlink's as rtnetlink's, and no RDMA netlink (no
 * kernel here has one) for the answers of devices and counters. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/socket.h>
#include <rdma/rdma_netlink.h>

#include "nl/nl-internal.h"
#include "unit/nldev_replies.h"

#define MAX_REQ 8

/* The requests sent, and per request the answer scripted for it (its messages' bytes). */
static struct {
	struct nl_msg *req[MAX_REQ];
	unsigned n_req;
	struct nl_msg **answer[MAX_REQ];
	unsigned n_answer[MAX_REQ];
} k;

#include "unit/nl_standin.h"

/* Request i recorded, and answered with what was scripted for it, once. */
static void standin_request(const struct nlmsghdr *h)
{
	unsigned i = k.n_req;

	assert_true(i < MAX_REQ);
	k.req[i] = nlmsg_convert((struct nlmsghdr *)h);
	assert_non_null(k.req[i]);
	k.n_req++;
	for (unsigned j = 0; j < k.n_answer[i]; j++)
		standin_put(k.answer[i][j]);
	free(k.answer[i]);
	k.answer[i] = NULL;
	k.n_answer[i] = 0;
}

/* The answer to request i: these messages, back to back in one datagram. */
static void answer(unsigned i, struct nl_msg **msgs, unsigned n)
{
	k.answer[i] = malloc(n * sizeof(*msgs));
	assert_non_null(k.answer[i]);
	memcpy(k.answer[i], msgs, n * sizeof(*msgs));
	k.n_answer[i] = n;
}

#define ANSWER(i, ...)                                                                             \
	do {                                                                                       \
		struct nl_msg *msgs_[] = { __VA_ARGS__ };                                          \
		answer(i, msgs_, sizeof(msgs_) / sizeof(msgs_[0]));                                \
	} while (0)

static struct nl_msg *newlink(uint16_t flags, int ifindex, const char *name)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_index = ifindex };
	struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWLINK, flags);

	assert_non_null(m);
	assert_int_equal(nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO), 0);
	assert_int_equal(nla_put_string(m, IFLA_IFNAME, name), 0);
	return m;
}

static int setup(void **st)
{
	standin.on = true;
	return 0;
}

static int teardown(void **st)
{
	for (unsigned i = 0; i < MAX_REQ; i++) {
		nlmsg_free(k.req[i]);
		for (unsigned j = 0; j < k.n_answer[i]; j++)
			nlmsg_free(k.answer[i][j]);
		free(k.answer[i]);
	}
	memset(&k, 0, sizeof(k));
	standin_reset();
	return 0;
}

/* Every request so far the same bytes as the first. */
static void assert_same_requests(void)
{
	const struct nlmsghdr *first = nlmsg_hdr(k.req[0]);

	for (unsigned i = 1; i < k.n_req; i++) {
		const struct nlmsghdr *h = nlmsg_hdr(k.req[i]);

		assert_int_equal(h->nlmsg_len, first->nlmsg_len);
		assert_memory_equal(h, first, first->nlmsg_len);
	}
}

static const uint16_t intr = NLM_F_MULTI | NLM_F_DUMP_INTR;

/* The device list changed while it was dumped: asked again, and only the second answer kept
 * (nothing of the first twice). */
static void test_dev_list_retried(void **st)
{
	struct nl_rdma *r;
	struct nl_rdma_dev *v = NULL;
	size_t n = 0;

	ANSWER(0, nldev_dev(0, intr, 0, "mlx5_0", 1, 0x0002c90300a1b2c3ull), standin_done(intr, 0));
	ANSWER(1, nldev_dev(0, NLM_F_MULTI, 0, "mlx5_0", 1, 0x0002c90300a1b2c3ull),
	       nldev_dev(0, NLM_F_MULTI, 1, "rxe0", 1, 0x0200000000000001ull),
	       standin_done(NLM_F_MULTI, 0));
	assert_int_equal(nl_rdma_open(-1, &r), 0);
	assert_int_equal(nl_rdma_dev_list(r, &v, &n), 0);
	assert_int_equal(k.n_req, 2);
	assert_same_requests();
	assert_int_equal(nlmsg_hdr(k.req[0])->nlmsg_type,
			 RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET));
	assert_true(nlmsg_hdr(k.req[0])->nlmsg_flags & NLM_F_DUMP);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].name, "mlx5_0");
	assert_int_equal(v[0].index, 0);
	assert_int_equal(v[0].ports, 1);
	assert_true(v[0].node_guid == 0x0002c90300a1b2c3ull);
	assert_string_equal(v[1].name, "rxe0");
	assert_int_equal(v[1].index, 1);
	free(v);
	nl_rdma_free(r);
}

/* Interrupted on every try: three tries, then the last one's partial answer, as rtnetlink's
 * dumps do (never -EINTR). */
static void test_dev_list_interrupted_thrice(void **st)
{
	struct nl_rdma *r;
	struct nl_rdma_dev *v = NULL;
	size_t n = 0;

	ANSWER(0, nldev_dev(0, intr, 0, "mlx5_0", 1, 1), standin_done(intr, 0));
	ANSWER(1, nldev_dev(0, intr, 1, "mlx5_1", 1, 2), standin_done(intr, 0));
	ANSWER(2, nldev_dev(0, intr, 2, "mlx5_2", 2, 3), nldev_dev(0, intr, 3, "mlx5_3", 2, 4),
	       standin_done(intr, 0));
	ANSWER(3, nldev_dev(0, NLM_F_MULTI, 9, "never-asked", 1, 9), standin_done(NLM_F_MULTI, 0));
	assert_int_equal(nl_rdma_open(-1, &r), 0);
	assert_int_equal(nl_rdma_dev_list(r, &v, &n), 0);
	assert_int_equal(k.n_req, 3);
	assert_same_requests();
	assert_int_equal(n, 2);
	assert_string_equal(v[0].name, "mlx5_2");
	assert_string_equal(v[1].name, "mlx5_3");
	assert_int_equal(v[1].ports, 2);
	free(v);
	nl_rdma_free(r);
}

/* The counter objects: the first try's (with their QPs and counters) dropped, not leaked. */
static void test_counters_retried(void **st)
{
	static const uint32_t qps[] = { 178, 179 };
	static const struct nldev_hw hw[] = { { "rx_write_requests", 7 } };
	static const struct nldev_counter c[] = {
		{ .port = 1,
		  .id = 3,
		  .mode = RDMA_COUNTER_MODE_AUTO,
		  .qp_type = 2,
		  .pid = 4242,
		  .qpns = qps,
		  .n_qpns = 2,
		  .hw = hw,
		  .n_hw = 1 },
		{ .port = 1,
		  .id = 4,
		  .mode = RDMA_COUNTER_MODE_MANUAL,
		  .qp_type = -1,
		  .pid = -1,
		  .qpns = qps + 1,
		  .n_qpns = 1,
		  .hw = hw,
		  .n_hw = 1 },
	};
	struct nl_rdma *r;
	struct nl_rdma_counter *v = NULL;
	size_t n = 0;

	ANSWER(0, nldev_counter_dump(0, intr, 5, "mlx5_0", c, 1), standin_done(intr, 0));
	ANSWER(1, nldev_counter_dump(0, NLM_F_MULTI, 5, "mlx5_0", c, 1),
	       nldev_counter_dump(0, NLM_F_MULTI, 5, "mlx5_0", c + 1, 1),
	       standin_done(NLM_F_MULTI, 0));
	assert_int_equal(nl_rdma_open(-1, &r), 0);
	assert_int_equal(nl_rdma_counters(r, 5, &v, &n), 0);
	assert_int_equal(k.n_req, 2);
	assert_same_requests();
	assert_int_equal(nlmsg_hdr(k.req[0])->nlmsg_type,
			 RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_STAT_GET));
	assert_int_equal(n, 2);
	assert_int_equal(v[0].id, 3);
	assert_int_equal(v[0].n_qpns, 2);
	assert_int_equal(v[1].id, 4);
	assert_int_equal(v[1].qpns[0], 179);
	nl_rdma_counters_free(v, n);
	nl_rdma_free(r);
}

/* The device went away between the tries: the kernel's error for the second one, and nothing
 * of the first (LeakSanitizer checks in the sanitizer build). */
static void test_counters_retry_fails(void **st)
{
	static const struct nldev_hw hw[] = { { "rx_write_requests", 7 } };
	static const struct nldev_counter c[] = {
		{ .port = 1,
		  .id = 3,
		  .mode = RDMA_COUNTER_MODE_MANUAL,
		  .qp_type = -1,
		  .pid = -1,
		  .hw = hw,
		  .n_hw = 1 },
	};
	struct nl_rdma *r;
	struct nl_rdma_counter *v = NULL;
	size_t n = 0;

	ANSWER(0, nldev_counter_dump(0, intr, 5, "mlx5_0", c, 1), standin_done(intr, 0));
	ANSWER(1, standin_done(NLM_F_MULTI, -ENODEV));
	assert_int_equal(nl_rdma_open(-1, &r), 0);
	assert_int_equal(nl_rdma_counters(r, 5, &v, &n), -ENODEV);
	assert_int_equal(k.n_req, 2);
	assert_null(v);
	nl_rdma_free(r);
}

/* A device whose node GUID is not a u64 (nldev_policy): the list is refused, not misread. */
static void test_dev_list_malformed(void **st)
{
	struct nl_rdma *r;
	struct nl_rdma_dev *v = NULL;
	size_t n = 0;
	struct nl_msg *bad = nldev_dev(0, NLM_F_MULTI, 1, "rxe0", 1, 7);
	struct nlattr *guid = nlmsg_find_attr(nlmsg_hdr(bad), 0, RDMA_NLDEV_ATTR_NODE_GUID);

	assert_non_null(guid);
	guid->nla_len = NLA_HDRLEN + 4;
	ANSWER(0, nldev_dev(0, NLM_F_MULTI, 0, "mlx5_0", 1, 1), bad, standin_done(NLM_F_MULTI, 0));
	assert_int_equal(nl_rdma_open(-1, &r), 0);
	assert_int_equal(nl_rdma_dev_list(r, &v, &n), -EBADMSG);
	assert_int_equal(k.n_req, 1);
	assert_null(v);
	nl_rdma_free(r);
}

/* The requests that are no dump: the netns mode and a port's counters, each answered by its
 * data and then the ACK it asked for. */
static void test_rdma_requests_answered(void **st)
{
	static const struct nldev_hw hw[] = { { "rx_write_requests", 12 } };
	struct nl_rdma *r;
	struct nl_rdma_stat s;
	struct nl_msg *sys = nldev_msg(RDMA_NLDEV_CMD_SYS_GET, 0, 0);
	bool shared = true;

	assert_int_equal(nla_put_u8(sys, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 0), 0);
	ANSWER(0, sys, standin_error(NLM_F_CAPPED, 0));
	ANSWER(1, nldev_port_stat(0, 4, "mlx5_3", 1, hw, 1, true), standin_error(NLM_F_CAPPED, 0));
	assert_int_equal(nl_rdma_open(-1, &r), 0);
	assert_int_equal(nl_rdma_netns_shared(r, &shared), 0);
	assert_false(shared);
	assert_int_equal(nlmsg_hdr(k.req[0])->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
	assert_int_equal(nl_rdma_port_stat(r, 4, 1, &s), 0);
	assert_int_equal(s.dev_index, 4);
	assert_int_equal(s.n_hw, 1);
	assert_true(s.hw[0].value == 12);
	nl_rdma_stat_clear(&s);
	assert_int_equal(k.n_req, 2);
	nl_rdma_free(r);
}

/* rtnetlink's dumps through the same loop: the link list asked again. */
static void test_link_list_retried(void **st)
{
	struct nl_rt *rt;
	struct nl_link *v = NULL;
	size_t n = 0;

	ANSWER(0, newlink(intr, 1, "lo"), standin_done(intr, 0));
	ANSWER(1, newlink(NLM_F_MULTI, 1, "lo"), newlink(NLM_F_MULTI, 2, "eth0"),
	       standin_done(NLM_F_MULTI, 0));
	assert_int_equal(nl_rt_open(-1, &rt), 0);
	assert_int_equal(nl_link_list(rt, &v, &n), 0);
	assert_int_equal(k.n_req, 2);
	assert_same_requests();
	assert_int_equal(nlmsg_hdr(k.req[0])->nlmsg_type, RTM_GETLINK);
	assert_int_equal(n, 2);
	assert_string_equal(v[1].name, "eth0");
	free(v);
	nl_rt_free(rt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dev_list_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dev_list_interrupted_thrice, setup, teardown),
		cmocka_unit_test_setup_teardown(test_counters_retried, setup, teardown),
		cmocka_unit_test_setup_teardown(test_counters_retry_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dev_list_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rdma_requests_answered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_list_retried, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
