/* SPDX-License-Identifier: Apache-2.0 */
/* A link-time seam of the test build (Makefile: $(BUILD)/tests/seams/, never installed), linked
 * with -Wl,--wrap=etcd_client_free: with RDMAK_ETCD_CALLS=FILE in the environment, each etcd
 * client appends one line of what it asked etcd when it is freed, "range N put N delete N txn N",
 * and " lease N" when it granted or read leases (etcd_client_calls), so that a test of an exec'd
 * plugin counts the requests an attachment costs. One write() with O_APPEND: lines of concurrent
 * processes do not mix. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "etcd/etcd.h"

void __real_etcd_client_free(struct etcd_client *c);
void __wrap_etcd_client_free(struct etcd_client *c);

void __wrap_etcd_client_free(struct etcd_client *c)
{
	const char *path = getenv("RDMAK_ETCD_CALLS");
	struct etcd_calls n;
	char line[160];
	int fd, len;

	if (c && path && *path) {
		etcd_client_calls(c, &n);
		/* leases only when there were any: the per-address store's lines stay the same */
		len = snprintf(line, sizeof(line), "range %lu put %lu delete %lu txn %lu", n.range,
			       n.put, n.delete_range, n.txn);
		if (n.lease)
			len += snprintf(line + len, sizeof(line) - (size_t)len, " lease %lu",
					n.lease);
		len += snprintf(line + len, sizeof(line) - (size_t)len, "\n");
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd >= 0) {
			/* a short write shows in the test's counts */
			if (write(fd, line, (size_t)len) != len)
				len = -1;
			close(fd);
		}
	}
	__real_etcd_client_free(c);
}
