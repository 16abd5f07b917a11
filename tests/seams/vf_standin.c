/* SPDX-License-Identifier: Apache-2.0 */
/* A link-time seam of the test build (Makefile: $(BUILD)/tests/seams/, never installed): linked
 * with -Wl,--wrap=nl_rt_talk_vf, it answers the requests about a PF's VF table (src/nl/vf.c) as
 * an SR-IOV PF would, since no kernel here has SR-IOV on a veth (docs/cni.md, "Testing without
 * SR-IOV").
 *
 * With RDMAK_TEST_VF_STANDIN=DIR in the environment, those requests are not sent. Each is
 * appended to DIR/requests as one line of hex (the message as built, sequence number 0); the
 * answer to the VF table's GETLINK is DIR/vfinfo (the bytes of an RTM_NEWLINK, as the kernel
 * would send them); a number N in DIR/fail makes the Nth request (counting the lines of
 * DIR/requests) fail with EOPNOTSUPP, as a driver without that setting answers; N in DIR/hang:
 * the Nth request never returns, so that a test can kill -9 the plugin inside it (a request
 * recorded, its answer not yet read). Without the variable, the request goes to the kernel. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nl/nl-internal.h"
#include "util/cleanup.h"
#include "util/fileio.h"

int __real_nl_rt_talk_vf(struct nl_rt *rt, struct nl_msg *msg,
			 int (*parse)(struct nlmsghdr *h, void *ud), void *ud);
int __wrap_nl_rt_talk_vf(struct nl_rt *rt, struct nl_msg *msg,
			 int (*parse)(struct nlmsghdr *h, void *ud), void *ud);

static int standin_talk(const char *dir, struct nl_msg *msg,
			int (*parse)(struct nlmsghdr *h, void *ud), void *ud)
{
	const struct nlmsghdr *h = nlmsg_hdr(msg);
	_cleanup_close_ int dfd = -1;
	_cleanup_free_ char *line = malloc(2 * (size_t)h->nlmsg_len + 2), *old = NULL, *fail = NULL,
			    *reply = NULL;
	size_t oldlen = 0, faillen = 0, replylen = 0, n = 1;
	int r;

	if (line) {
		for (size_t i = 0; i < h->nlmsg_len; i++)
			sprintf(line + 2 * i, "%02x", ((const uint8_t *)h)[i]);
		strcat(line, "\n");
	}
	nlmsg_free(msg); /* consumed, as nl_rt_talk() does */
	if (!line)
		return -ENOMEM;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	r = fileio_read_at(dfd, "requests", 1 << 24, &old, &oldlen);
	if (r < 0 && r != -ENOENT)
		return r;
	for (size_t i = 0; i < oldlen; i++)
		n += old[i] == '\n';
	{
		_cleanup_close_ int fd =
			openat(dfd, "requests", O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		if ((r = fileio_write_all(fd, line, strlen(line))) < 0)
			return r;
	}
	if (fileio_read_at(dfd, "fail", 64, &fail, &faillen) == 0 && strtoul(fail, NULL, 10) == n)
		return -EOPNOTSUPP;
	free(fail);
	fail = NULL;
	if (fileio_read_at(dfd, "hang", 64, &fail, &faillen) == 0 && strtoul(fail, NULL, 10) == n)
		for (;;)
			pause();
	if (!parse)
		return 0;
	r = fileio_read_at(dfd, "vfinfo", 1 << 20, &reply, &replylen);
	if (r < 0)
		return r == -ENOENT ? 0 : r; /* no table: a PF without SR-IOV */
	if (replylen < NLMSG_HDRLEN || ((struct nlmsghdr *)reply)->nlmsg_len > replylen)
		return -EBADMSG;
	return parse((struct nlmsghdr *)reply, ud);
}

int __wrap_nl_rt_talk_vf(struct nl_rt *rt, struct nl_msg *msg,
			 int (*parse)(struct nlmsghdr *h, void *ud), void *ud)
{
	const char *dir = getenv("RDMAK_TEST_VF_STANDIN");

	if (dir && *dir) {
		rt->errmsg[0] = '\0';
		return standin_talk(dir, msg, parse, ud);
	}
	return __real_nl_rt_talk_vf(rt, msg, parse, ud);
}
