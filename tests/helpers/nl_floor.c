/* SPDX-License-Identifier: Apache-2.0 */
/* The kernel's floor for a pod's macvlans' ADD+DEL (make bench, tools/bench-cni.sh): exactly
 * the netlink requests rdmak-cni makes for each (tests/cmd/cni_nlcount.sh counts those), in one
 * process with two sockets opened once, no exec, no IPAM file, no JSON: what is left is the
 * kernel's own work. Run in the host namespace:
 *   nl_floor MASTER[,MASTER...] NETNS-PATH COUNT [PAUSE-US]
 * prints {"add": {"median_ms": A}, "del": {"median_ms": D}, "cycle": {"median_ms": A+D},
 * "paused_ms": P}, the pod's whole ADD (every rail's, in order) and whole DEL. With PAUSE-US,
 * each DEL comes after a random pause of 0 to PAUSE-US microseconds, not timed, as the driver's
 * --pause-random-us (docs/cni.md: a DEL waits for the kernel's RCU cadence, which back-to-back
 * cycles lock onto). For rail k (from 0), a macvlan of the
 * k-th MASTER: ADD: GETROUTE dump (is table 101+k free), GETLINK master, NEWLINK macvlan
 * net<k+1> into the pod, up, echoed (the pod's socket holds the host socket's port id, so it
 * hears the echo: its index), NEWADDR 172.16.<11+k>.2/24, NEWROUTE subnet and default in table
 * 101+k, NEWRULE from the address lookup 101+k, GETADDR dump. DEL: GETLINK net<k+1>, DELLINK,
 * GETRULE dump, DELRULE.
 * With CNI_COMMAND in its environment it is instead a static CNI plugin that makes the same
 * requests for one rail per exec (rail k from CNI_IFNAME net<k+1>, master rdma<k>, the pod
 * from CNI_NETNS): exec'd by the same runtime as rdmak-cni, it is the floor of a whole plugin
 * exec, the kernel's work included as it runs then. It answers ADD with an empty result and
 * reads nothing but its environment and stdin (to end, as a runtime expects). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fib_rules.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../../tools/floor_time.h"

#define TABLE 101

struct req {
	struct nlmsghdr h;
	char body[1024];
};

static unsigned seq;

static void *put(struct req *m, size_t len)
{
	void *p = (char *)m + NLMSG_ALIGN(m->h.nlmsg_len);

	memset(p, 0, NLMSG_ALIGN(len));
	m->h.nlmsg_len = NLMSG_ALIGN(m->h.nlmsg_len) + (unsigned)NLMSG_ALIGN(len);
	return p;
}

static struct rtattr *attr(struct req *m, unsigned short type, const void *data, size_t len)
{
	struct rtattr *a = put(m, RTA_LENGTH(len));

	a->rta_type = type;
	a->rta_len = (unsigned short)RTA_LENGTH(len);
	if (data)
		memcpy(RTA_DATA(a), data, len);
	m->h.nlmsg_len -= (unsigned)(NLMSG_ALIGN(RTA_LENGTH(len)) - RTA_ALIGN(RTA_LENGTH(len)));
	return a;
}

static void nest_end(struct req *m, struct rtattr *a)
{
	a->rta_len = (unsigned short)((char *)m + m->h.nlmsg_len - (char *)a);
}

static void start(struct req *m, unsigned short type, unsigned short flags)
{
	memset(m, 0, sizeof(*m));
	m->h.nlmsg_len = NLMSG_HDRLEN;
	m->h.nlmsg_type = type;
	m->h.nlmsg_flags = (unsigned short)(NLM_F_REQUEST | flags);
	m->h.nlmsg_seq = ++seq;
}

/* Send one request, read to its ACK or the dump's end; 0 or the kernel's -errno. *ifindex
 * (when not NULL) gets the index of a NEWLINK answer. */
static int talk(int fd, struct req *m, int *ifindex)
{
	static char buf[65536];
	/* a GET with both dump bits (NLM_F_EXCL is NLM_F_MATCH's bit in a NEW request) */
	bool dump = (m->h.nlmsg_type & 3) == 2 && (m->h.nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;

	if (!dump)
		m->h.nlmsg_flags |= NLM_F_ACK;
	if (send(fd, m, m->h.nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *h;

		if (n < 0)
			return -errno;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR)
				return ((struct nlmsgerr *)NLMSG_DATA(h))->error;
			if (h->nlmsg_type == RTM_NEWLINK && ifindex)
				*ifindex = ((struct ifinfomsg *)NLMSG_DATA(h))->ifi_index;
		}
	}
}

/* The kernel's echo of the new link, queued on the pod's socket before the host's ACK. */
static int echoed(int fd, int *ifindex)
{
	static char buf[65536];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n < 0)
		return -errno;
	for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
	     h = NLMSG_NEXT(h, n))
		if (h->nlmsg_type == RTM_NEWLINK) {
			*ifindex = ((struct ifinfomsg *)NLMSG_DATA(h))->ifi_index;
			return 0;
		}
	return -ENOMSG;
}

static int getlink(int fd, const char *name, int *ifindex)
{
	struct req m;
	struct ifinfomsg *ifi;

	start(&m, RTM_GETLINK, 0);
	ifi = put(&m, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	attr(&m, IFLA_IFNAME, name, strlen(name) + 1);
	return talk(fd, &m, ifindex);
}

static int dump(int fd, unsigned short type, unsigned char family)
{
	struct req m;
	struct rtmsg *rt;

	start(&m, type, NLM_F_DUMP);
	rt = put(&m, sizeof(*rt)); /* rtmsg, ifaddrmsg and fib_rule_hdr all start with the family */
	rt->rtm_family = family;
	return talk(fd, &m, NULL);
}

#define RAILS_MAX 16

static int route(int fd, int k, unsigned short type, int ifindex, const struct in_addr *dst,
		 int plen, const struct in_addr *gw, const struct in_addr *src)
{
	struct req m;
	struct rtmsg *rt;
	unsigned table = TABLE + (unsigned)k;

	start(&m, type, type == RTM_NEWROUTE ? NLM_F_CREATE | NLM_F_EXCL : 0);
	rt = put(&m, sizeof(*rt));
	*rt = (struct rtmsg){ .rtm_family = AF_INET,
			      .rtm_dst_len = (unsigned char)plen,
			      .rtm_table = RT_TABLE_UNSPEC,
			      .rtm_protocol = gw ? RTPROT_STATIC : RTPROT_KERNEL,
			      .rtm_scope = gw ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK,
			      .rtm_type = RTN_UNICAST };
	attr(&m, RTA_TABLE, &table, sizeof(table));
	if (plen)
		attr(&m, RTA_DST, dst, sizeof(*dst));
	if (gw)
		attr(&m, RTA_GATEWAY, gw, sizeof(*gw));
	if (src)
		attr(&m, RTA_PREFSRC, src, sizeof(*src));
	attr(&m, RTA_OIF, &ifindex, sizeof(ifindex));
	return talk(fd, &m, NULL);
}

static int rule(int fd, int k, unsigned short type, const struct in_addr *from)
{
	struct req m;
	struct fib_rule_hdr *f;
	unsigned table = TABLE + (unsigned)k, prio = 30000;

	start(&m, type, type == RTM_NEWRULE ? NLM_F_CREATE | NLM_F_EXCL : 0);
	f = put(&m, sizeof(*f));
	*f = (struct fib_rule_hdr){ .family = AF_INET, .src_len = 32, .action = FR_ACT_TO_TBL };
	attr(&m, FRA_SRC, from, sizeof(*from));
	attr(&m, FRA_TABLE, &table, sizeof(table));
	attr(&m, FRA_PRIORITY, &prio, sizeof(prio));
	return talk(fd, &m, NULL);
}

/* rail k's addresses: 172.16.<11+k>.2, .0 and .254 */
static void rail_addr(int k, int host_part, struct in_addr *ret)
{
	ret->s_addr = htonl((172u << 24) | (16u << 16) | ((11u + (unsigned)k) << 8) |
			    (unsigned)host_part);
}

static int add(int host, int pod, int podns, int k, const char *master)
{
	struct in_addr a, net, gw;
	char ifname[IFNAMSIZ];
	struct ifinfomsg *ifi;
	struct ifaddrmsg *ifa;
	struct rtattr *info, *data;
	struct req m;
	unsigned mode = MACVLAN_MODE_BRIDGE;
	int mi = 0, li = 0, r;

	rail_addr(k, 2, &a);
	rail_addr(k, 0, &net);
	rail_addr(k, 254, &gw);
	snprintf(ifname, sizeof(ifname), "net%d", k + 1);
	if ((r = dump(pod, RTM_GETROUTE, AF_UNSPEC)) < 0 || (r = getlink(host, master, &mi)) < 0)
		return r;
	start(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL | NLM_F_ECHO);
	ifi = put(&m, sizeof(*ifi));
	*ifi = (struct ifinfomsg){ .ifi_family = AF_UNSPEC,
				   .ifi_flags = IFF_UP,
				   .ifi_change = IFF_UP };
	attr(&m, IFLA_IFNAME, ifname, strlen(ifname) + 1);
	attr(&m, IFLA_LINK, &mi, sizeof(mi));
	attr(&m, IFLA_NET_NS_FD, &podns, sizeof(podns));
	info = attr(&m, IFLA_LINKINFO, NULL, 0);
	attr(&m, IFLA_INFO_KIND, "macvlan", 8);
	data = attr(&m, IFLA_INFO_DATA, NULL, 0);
	attr(&m, IFLA_MACVLAN_MODE, &mode, sizeof(mode));
	nest_end(&m, data);
	nest_end(&m, info);
	if ((r = talk(host, &m, NULL)) < 0 || (r = echoed(pod, &li)) < 0)
		return r;
	start(&m, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
	ifa = put(&m, sizeof(*ifa));
	*ifa = (struct ifaddrmsg){ .ifa_family = AF_INET,
				   .ifa_prefixlen = 24,
				   .ifa_index = (unsigned)li };
	attr(&m, IFA_LOCAL, &a, sizeof(a));
	attr(&m, IFA_ADDRESS, &a, sizeof(a));
	if ((r = talk(pod, &m, NULL)) < 0 ||
	    (r = route(pod, k, RTM_NEWROUTE, li, &net, 24, NULL, &a)) < 0 ||
	    (r = route(pod, k, RTM_NEWROUTE, li, NULL, 0, &gw, NULL)) < 0 ||
	    (r = rule(pod, k, RTM_NEWRULE, &a)) < 0)
		return r;
	return dump(pod, RTM_GETADDR, AF_INET);
}

static int del(int pod, int k)
{
	struct in_addr a;
	struct ifinfomsg *ifi;
	struct req m;
	char ifname[IFNAMSIZ];
	int li = 0, r;

	rail_addr(k, 2, &a);
	snprintf(ifname, sizeof(ifname), "net%d", k + 1);
	if ((r = getlink(pod, ifname, &li)) < 0)
		return r;
	start(&m, RTM_DELLINK, 0);
	ifi = put(&m, sizeof(*ifi));
	*ifi = (struct ifinfomsg){ .ifi_family = AF_UNSPEC, .ifi_index = li };
	if ((r = talk(pod, &m, NULL)) < 0 || (r = dump(pod, RTM_GETRULE, AF_UNSPEC)) < 0)
		return r;
	return rule(pod, k, RTM_DELRULE, &a);
}

/* The host's socket and the pod's, bound to one port id (the NEWLINK echo goes to the pod's);
 * 0, or -1 with errno set. */
static int sockets(const char *netns, int *host, int *pod, int *podns)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	socklen_t salen = sizeof(sa);
	int self;

	*podns = open(netns, O_RDONLY | O_CLOEXEC);
	self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	*host = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (*podns < 0 || self < 0 || *host < 0 || setns(*podns, CLONE_NEWNET) < 0)
		return -1;
	*pod = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (*pod < 0 || setns(self, CLONE_NEWNET) < 0 ||
	    bind(*host, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    getsockname(*host, (struct sockaddr *)&sa, &salen) < 0 ||
	    bind(*pod, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	return close(self);
}

/* One CNI command for one rail, as a plugin exec'd by a runtime. */
static int plugin(const char *cmd)
{
	const char *ifname = getenv("CNI_IFNAME"), *netns = getenv("CNI_NETNS");
	char buf[65536], master[IFNAMSIZ];
	int host, pod, podns, k, r;

	while (read(0, buf, sizeof(buf)) > 0)
		;
	if (!strcmp(cmd, "VERSION") || !strcmp(cmd, "GC") || !strcmp(cmd, "STATUS"))
		return 0;
	if (!ifname || sscanf(ifname, "net%d", &k) != 1 || k < 1 || k > RAILS_MAX || !netns) {
		fprintf(stderr, "nl_floor: CNI_IFNAME net1..net%d and CNI_NETNS are required\n",
			RAILS_MAX);
		return 1;
	}
	k--;
	snprintf(master, sizeof(master), "rdma%d", k);
	if (sockets(netns, &host, &pod, &podns) < 0)
		return perror("nl_floor"), 1;
	if (!strcmp(cmd, "ADD"))
		r = add(host, pod, podns, k, master);
	else if (!strcmp(cmd, "DEL"))
		r = del(pod, k);
	else
		r = 0;
	if (r < 0) {
		fprintf(stderr, "nl_floor: %s %s: %s\n", cmd, ifname, strerror(-r));
		return 1;
	}
	if (!strcmp(cmd, "ADD"))
		fputs("{\"cniVersion\":\"1.0.0\",\"interfaces\":[],\"ips\":[]}\n", stdout);
	return 0;
}

int main(int argc, char **argv)
{
	int host, pod, podns, n, r, rails = 0, pause = 0;
	/* the same pauses each run: they need only spread over the cadence */
	unsigned int seed = 1;
	double paused = 0;
	char *masters[RAILS_MAX], *tok, *save = NULL;
	const char *cmd = getenv("CNI_COMMAND");
	double *ta, *td;

	if (cmd)
		return plugin(cmd);
	if (argc < 4 || argc > 5 || (n = atoi(argv[3])) <= 0 ||
	    (argc == 5 && (pause = atoi(argv[4])) < 0)) {
		fprintf(stderr, "usage: nl_floor MASTER[,MASTER...] NETNS-PATH COUNT [PAUSE-US]\n");
		return 2;
	}
	for (tok = strtok_r(argv[1], ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (rails == RAILS_MAX) {
			fprintf(stderr, "nl_floor: at most %d masters\n", RAILS_MAX);
			return 2;
		}
		masters[rails++] = tok;
	}
	if (sockets(argv[2], &host, &pod, &podns) < 0)
		return perror("nl_floor"), 1;
	ta = calloc((size_t)n, sizeof(*ta));
	td = calloc((size_t)n, sizeof(*td));
	if (!ta || !td)
		return 1;
	for (int i = 0; i < n; i++) {
		double t0 = floor_now_ms(), t1, t2;

		for (int k = 0; k < rails; k++)
			if ((r = add(host, pod, podns, k, masters[k])) < 0) {
				fprintf(stderr, "nl_floor: ADD %s: %s\n", masters[k], strerror(-r));
				return 1;
			}
		t1 = floor_now_ms();
		if (pause) {
			long us = (long)((double)rand_r(&seed) / RAND_MAX * pause);
			struct timespec ts = { us / 1000000, us % 1000000 * 1000 };

			while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
				;
		}
		t2 = floor_now_ms(); /* the DEL's start: the pause is not timed */
		paused += t2 - t1;
		for (int k = 0; k < rails; k++)
			if ((r = del(pod, k)) < 0) {
				fprintf(stderr, "nl_floor: DEL %s: %s\n", masters[k], strerror(-r));
				return 1;
			}
		ta[i] = t1 - t0;
		td[i] = floor_now_ms() - t2;
	}
	{
		double a = floor_median(ta, n), d = floor_median(td, n);

		printf("{\"add\": {\"median_ms\": %.3f}, \"del\": "
		       "{\"median_ms\": %.3f}, \"cycle\": {\"median_ms\": "
		       "%.3f}, \"paused_ms\": %.3f}\n",
		       a, d, a + d, paused);
	}
	free(ta);
	free(td);
	return 0;
}
